//! One walk over a record's cells for a scan that checks a condition before it builds
//! anything: the condition's cells are decoded into a scratch row, the other cells read
//! are only located, and no cell past the last one used is walked. The row and vector
//! cursors then build what passed from the located cells.
//!
//! Owns the walk only: cell framing and values are `codec`'s.

use quarry_common::{Error, Result, Value};
use quarry_storage_api::{ColumnSchema, RowFormat};

use crate::codec::{self, Frame};

/// What a scan does with one column's cell.
struct Step {
    frame: Frame,
    null_width: usize,
    /// The condition reads it: decoded into the scratch row.
    decode: bool,
    /// Something reads it: where it starts is noted.
    locate: bool,
}

pub(crate) struct Walk<'a> {
    pub(crate) cols: &'a [ColumnSchema],
    pub(crate) fixed: bool,
    /// Columns `0..steps.len()`: the last is the last one used.
    steps: Vec<Step>,
}

impl<'a> Walk<'a> {
    /// A walk decoding the cells of `decoded` and locating those of `located` (column
    /// numbers below `cols.len()`).
    pub(crate) fn new(
        cols: &'a [ColumnSchema],
        format: RowFormat,
        decoded: &[usize],
        located: &[usize],
    ) -> Walk<'a> {
        let upto = decoded
            .iter()
            .chain(located)
            .copied()
            .max()
            .map_or(0, |c| c + 1);
        let steps = cols[..upto]
            .iter()
            .enumerate()
            .map(|(i, c)| Step {
                frame: codec::frame(c, format),
                null_width: codec::null_width(c, format),
                decode: decoded.contains(&i),
                locate: located.contains(&i),
            })
            .collect();
        Walk {
            cols,
            fixed: format == RowFormat::Fixed,
            steps,
        }
    }

    /// Walk `payload`: `scratch[c]` becomes the value of each decoded column `c`,
    /// `starts[c]` where each located column's cell starts (None: NULL). Both are as
    /// long as the table's columns; other entries are left as they are.
    pub(crate) fn run(
        &self,
        payload: &[u8],
        scratch: &mut [Value],
        starts: &mut [Option<usize>],
    ) -> Result<()> {
        let nb = self.cols.len().div_ceil(8);
        let nulls = payload
            .get(..nb)
            .ok_or_else(|| Error::corrupt("record truncated"))?;
        let mut pos = nb;
        for (i, step) in self.steps.iter().enumerate() {
            if nulls[i / 8] & (1 << (i % 8)) != 0 {
                pos += step.null_width;
                if step.decode {
                    scratch[i] = Value::Null;
                }
                if step.locate {
                    starts[i] = None;
                }
                continue;
            }
            if step.locate {
                starts[i] = Some(pos);
            }
            if step.decode {
                scratch[i] = codec::cell_value(&self.cols[i], self.fixed, payload, &mut pos)?;
            } else {
                codec::skip_cell(payload, &mut pos, step.frame)?;
            }
        }
        Ok(())
    }

    /// The value of column `c`'s cell, located at `start` by [`Walk::run`].
    pub(crate) fn value_at(&self, c: usize, payload: &[u8], start: Option<usize>) -> Result<Value> {
        match start {
            None => Ok(Value::Null),
            Some(mut pos) => codec::cell_value(&self.cols[c], self.fixed, payload, &mut pos),
        }
    }
}
