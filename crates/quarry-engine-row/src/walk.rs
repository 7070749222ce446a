//! One walk over a record's cells for a scan that checks a condition before it builds
//! anything. Each conjunct of the condition is decided right after the last cell it
//! needs, so a record that fails early is walked no further; ranges (`check`) read their
//! cell as a raw number, other conjuncts are checked on the cells they need decoded into
//! a scratch row; the other cells read are only located, and a stretch of varints nothing
//! reads is stepped over a word at a time. The row and vector cursors then build what
//! passed from the located cells.
//!
//! Owns the walk only: cell framing and values are `codec`'s, the split of a condition
//! into conjuncts and ranges `check`'s.

use std::ops::Range;

use quarry_common::{Error, Result, Value};
use quarry_storage_api::{ColumnSchema, Pred, RowFormat};

use crate::check::{self, Conjunct, Number};
use crate::codec::{self, Frame};

/// How a step reads its column's cell.
#[derive(Clone, Copy, PartialEq)]
enum Read {
    Skip,
    /// Into the scratch row.
    Decode,
    /// As a number for the step's ranges.
    Number(Number),
    /// As text for the step's conditions on it alone (`Pred::eval_str`).
    Text,
}

/// What a scan does with one column's cell.
struct Step {
    col: usize,
    frame: Frame,
    null_width: usize,
    read: Read,
    /// Something reads it: where it starts is noted.
    locate: bool,
    /// The ranges on this cell (`Walk::ranges`), and the conditions decided once it is
    /// read (`Walk::conds`).
    ranges: Range<usize>,
    conds: Range<usize>,
}

/// A stretch of the walk.
enum Op {
    /// The cells of columns `first..first + count` (below 128), DYNAMIC varints nothing
    /// reads: stepped over together, a word at a time (`mask` covers `count` bits).
    Varints {
        first: u32,
        count: u32,
        mask: u128,
    },
    Cell(Step),
}

pub(crate) struct Walk<'a> {
    pub(crate) cols: &'a [ColumnSchema],
    pub(crate) fixed: bool,
    /// Over columns `0..upto`: the last is the last one used.
    ops: Vec<Op>,
    /// Per column, whether it is decoded into the scratch row.
    decode: Vec<bool>,
    ranges: Vec<(i128, i128)>,
    conds: Vec<Pred>,
    /// Conditions decided before the first cell (they read none) or after the last (they
    /// read a column the table does not have: never true).
    first: Vec<Pred>,
    last: Vec<Pred>,
}

impl<'a> Walk<'a> {
    /// A walk that passes the records `filter` holds for, decoding the cells of
    /// `decoded` and locating those of `located` (column numbers below `cols.len()`).
    pub(crate) fn new(
        cols: &'a [ColumnSchema],
        format: RowFormat,
        filter: Option<&Pred>,
        decoded: &[usize],
        located: &[usize],
    ) -> Walk<'a> {
        let n = cols.len();
        let conjuncts = filter.map(|f| check::split(f, cols)).unwrap_or_default();
        // A column a condition decodes is checked on its value by every conjunct: a
        // cell is read once.
        let mut decode: Vec<bool> = vec![false; n];
        for &c in decoded {
            decode[c] = true;
        }
        for c in conjuncts
            .iter()
            .filter(|c| c.range.is_none() && c.text.is_none())
        {
            for col in c.pred.columns() {
                if col < n {
                    decode[col] = true;
                }
            }
        }
        let mut first = Vec::new();
        let mut last = Vec::new();
        // Each conjunct at the column after which it is decided.
        let mut placed: Vec<(usize, Conjunct)> = Vec::new();
        for mut c in conjuncts {
            if c.range.is_some_and(|r| decode[r.col]) {
                c.range = None;
            }
            if c.text.is_some_and(|t| decode[t]) {
                c.text = None;
            }
            match c.pred.columns().last().copied() {
                None => first.push(c.pred),
                Some(col) if col >= n => last.push(c.pred),
                Some(col) => placed.push((col, c)),
            }
        }
        placed.sort_by_key(|(c, _)| *c);
        let upto = decoded
            .iter()
            .chain(located)
            .copied()
            .chain(placed.iter().map(|(c, _)| *c))
            .max()
            .map_or(0, |c| c + 1);
        let mut ranges = Vec::new();
        let mut conds = Vec::new();
        let mut ops: Vec<Op> = Vec::with_capacity(upto);
        let mut next = placed.into_iter().peekable();
        for (i, c) in cols[..upto].iter().enumerate() {
            let (r0, c0) = (ranges.len(), conds.len());
            let mut number = None;
            let mut text = false;
            while let Some((_, c)) = next.next_if(|(c, _)| *c == i) {
                match (c.range, c.text) {
                    (Some(r), _) => {
                        number = Some(r.number);
                        ranges.push((r.lo, r.hi));
                    }
                    (None, Some(_)) => {
                        text = true;
                        conds.push(c.pred);
                    }
                    (None, None) => conds.push(c.pred),
                }
            }
            let read = match number {
                _ if decode[i] => Read::Decode,
                Some(k) => Read::Number(k),
                None if text => Read::Text,
                None => Read::Skip,
            };
            let step = Step {
                col: i,
                frame: codec::frame(c, format),
                null_width: codec::null_width(c, format),
                read,
                locate: located.contains(&i),
                ranges: r0..ranges.len(),
                conds: c0..conds.len(),
            };
            let unread = step.read == Read::Skip
                && !step.locate
                && step.conds.is_empty()
                && matches!(step.frame, Frame::Varint)
                && n <= 128;
            match ops.last_mut() {
                Some(Op::Varints { count, mask, .. }) if unread => {
                    *count += 1;
                    *mask = *mask << 1 | 1;
                }
                _ if unread => ops.push(Op::Varints {
                    first: i as u32,
                    count: 1,
                    mask: 1,
                }),
                _ => ops.push(Op::Cell(step)),
            }
        }
        Walk {
            cols,
            fixed: format == RowFormat::Fixed,
            ops,
            decode,
            ranges,
            conds,
            first,
            last,
        }
    }

    /// Whether the walk decodes column `c` into the scratch row.
    pub(crate) fn decodes(&self, c: usize) -> bool {
        self.decode.get(c).copied().unwrap_or(false)
    }

    /// Walk `payload`: whether the filter holds for it. Once it does, `scratch[c]` is the
    /// value of each decoded column `c`, `starts[c]` where each located column's cell
    /// starts (None: NULL). Both are as long as the table's columns; other entries are
    /// left as they are (and a failed walk leaves any of them as it got to them).
    pub(crate) fn run(
        &self,
        payload: &[u8],
        scratch: &mut [Value],
        starts: &mut [Option<usize>],
    ) -> Result<bool> {
        if !all_true(&self.first, scratch) {
            return Ok(false);
        }
        let nb = self.cols.len().div_ceil(8);
        let nulls = payload
            .get(..nb)
            .ok_or_else(|| Error::corrupt("record truncated"))?;
        // The first 128 columns' NULL bits, for the stretches of varints.
        let bits = {
            let mut b = [0u8; 16];
            let k = nb.min(16);
            b[..k].copy_from_slice(&nulls[..k]);
            u128::from_le_bytes(b)
        };
        let mut pos = nb;
        for op in &self.ops {
            let step = match op {
                Op::Varints { first, count, mask } => {
                    let nulls = bits >> first & mask;
                    let present = if nulls == 0 {
                        *count
                    } else {
                        count - nulls.count_ones()
                    };
                    codec::skip_varints(payload, &mut pos, present)?;
                    continue;
                }
                Op::Cell(step) => step,
            };
            let i = step.col;
            if nulls[i / 8] & (1 << (i % 8)) != 0 {
                pos += step.null_width;
                match step.read {
                    Read::Skip => {}
                    Read::Decode => scratch[i] = Value::Null,
                    // A range never holds for NULL.
                    Read::Number(_) => return Ok(false),
                    // Its conditions are decided on the scratch row below.
                    Read::Text => scratch[i] = Value::Null,
                }
                if step.locate {
                    starts[i] = None;
                }
            } else {
                if step.locate {
                    starts[i] = Some(pos);
                }
                match step.read {
                    Read::Skip => codec::skip_cell(payload, &mut pos, step.frame)?,
                    Read::Decode => {
                        scratch[i] =
                            codec::cell_value(&self.cols[i], self.fixed, payload, &mut pos)?
                    }
                    Read::Number(k) => {
                        let x = match k {
                            Number::Int => codec::int_cell(payload, &mut pos, self.fixed)? as i128,
                            Number::Decimal => {
                                codec::narrow_decimal_cell(payload, &mut pos, self.fixed)?
                            }
                            Number::Date => codec::date_number(payload, &mut pos)?,
                        };
                        if !self.ranges[step.ranges.clone()]
                            .iter()
                            .all(|&(lo, hi)| lo <= x && x <= hi)
                        {
                            return Ok(false);
                        }
                    }
                    Read::Text => {
                        let cell =
                            codec::string_cell(&self.cols[i], self.fixed, payload, &mut pos)?;
                        let s = codec::text(cell)?;
                        if !self.conds[step.conds.clone()]
                            .iter()
                            .all(|p| p.eval_str(s) == Some(true))
                        {
                            return Ok(false);
                        }
                        continue;
                    }
                }
            }
            if !all_true(&self.conds[step.conds.clone()], scratch) {
                return Ok(false);
            }
        }
        Ok(all_true(&self.last, scratch))
    }

    /// The value of column `c`'s cell, located at `start` by [`Walk::run`].
    pub(crate) fn value_at(&self, c: usize, payload: &[u8], start: Option<usize>) -> Result<Value> {
        match start {
            None => Ok(Value::Null),
            Some(mut pos) => codec::cell_value(&self.cols[c], self.fixed, payload, &mut pos),
        }
    }
}

fn all_true(conds: &[Pred], row: &[Value]) -> bool {
    conds.iter().all(|p| p.eval(row) == Some(true))
}
