//! Scans handed out as column vectors ([`Table::scan_columns`]), by cursors over
//! consecutive runs of segments of one snapshot: a segment's rows that pass the pushed
//! filter become one batch, each asked-for column gathered from its decoded chunk straight
//! into an Arrow array — integers and decimals from their unpacked integers, dictionary
//! strings as dictionary arrays sharing the chunk's entries — and the last cursor ends
//! with the delta's rows as one batch. Chunks in encodings without a direct path go
//! through their values, so every chunk gives the values a row scan gives.
//!
//! Must not touch: which rows pass (`ColumnTable::select`), chunk encodings (`chunk`).
//!
//! [`Table::scan_columns`]: quarry_storage_api::Table::scan_columns

use std::sync::Arc;

use quarry_common::{Error, Result, Value};
use quarry_storage_api::vector::arrow_array::types::UInt16Type;
use quarry_storage_api::vector::arrow_array::{
    ArrayRef, Decimal128Array, DictionaryArray, Float64Array, Int64Array, StringArray, UInt16Array,
};
use quarry_storage_api::vector::arrow_buffer::{OffsetBuffer, ScalarBuffer};
use quarry_storage_api::vector::{decimal_scale, nulls_from};
use quarry_storage_api::{ColumnBatch, ColumnCursor, HandlerCounters, Pred, VectorType};

use crate::chunk::{Chunk, Codes, Data, Phys};
use crate::{ColumnTable, Snapshot};

pub(crate) struct VectorCursor<'a> {
    pub t: &'a ColumnTable,
    pub snap: Snapshot,
    pub filter: Option<Pred>,
    pub columns: Vec<usize>,
    pub types: Vec<VectorType>,
    /// The segments `seg..end` are still to read; then the delta unless `delta_done`.
    pub seg: usize,
    pub end: usize,
    pub delta_done: bool,
}

impl ColumnCursor for VectorCursor<'_> {
    fn next_columns(&mut self) -> Result<Option<ColumnBatch>> {
        let t = self.t;
        while self.seg < self.end {
            let (seg, pos, mut chunks) =
                t.select_segment(&self.snap, self.seg, self.filter.as_ref())?;
            self.seg += 1;
            if pos.is_empty() {
                continue;
            }
            let mut columns = Vec::with_capacity(self.columns.len());
            for (&c, &ty) in self.columns.iter().zip(&self.types) {
                if chunks[c].is_none() {
                    chunks[c] = Some(t.chunk(&seg, c)?);
                }
                columns.push(gather(chunks[c].as_ref().unwrap(), &pos, ty)?);
            }
            return Ok(Some(ColumnBatch {
                columns,
                rows: pos.len(),
            }));
        }
        if self.delta_done {
            return Ok(None);
        }
        self.delta_done = true;
        let rows: Vec<&Vec<Value>> = self
            .snap
            .delta
            .values()
            .filter(|r| self.filter.as_ref().is_none_or(|p| p.eval(r) == Some(true)))
            .collect();
        HandlerCounters::add_read(&t.counters.read_rnd_next, rows.len() as u64);
        if rows.is_empty() {
            return Ok(None);
        }
        let columns = self
            .columns
            .iter()
            .zip(&self.types)
            .map(|(&c, ty)| ty.array_of(rows.iter().map(|r| r.get(c).unwrap_or(&Value::Null))))
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(ColumnBatch {
            columns,
            rows: rows.len(),
        }))
    }
}

/// The rows of `ch` at `pos` as a vector of type `ty`.
fn gather(ch: &Chunk, pos: &[u32], ty: VectorType) -> Result<ArrayRef> {
    let nulls = || {
        ch.nulls.as_ref().and_then(|_| {
            let null: Vec<bool> = pos.iter().map(|&p| ch.is_null(p as usize)).collect();
            nulls_from(&null)
        })
    };
    fn ints<'v>(v: &'v [i64], pos: &'v [u32]) -> impl Iterator<Item = i64> + 'v {
        pos.iter().map(|&p| v[p as usize])
    }
    Ok(match (ty, &ch.data, ch.phys) {
        (VectorType::Int, Data::Ints(v), Phys::Int) => Arc::new(Int64Array::new(
            ScalarBuffer::from(ints(v, pos).collect::<Vec<i64>>()),
            nulls(),
        )),
        (VectorType::Decimal(s), Data::Ints(v), Phys::Decimal(cs)) if s == cs => {
            Arc::new(decimal_scale(
                Decimal128Array::new(
                    ScalarBuffer::from(ints(v, pos).map(i128::from).collect::<Vec<i128>>()),
                    nulls(),
                ),
                s,
            )?)
        }
        (VectorType::Double, Data::F64(v), _) => Arc::new(Float64Array::new(
            ScalarBuffer::from(pos.iter().map(|&p| v[p as usize]).collect::<Vec<f64>>()),
            nulls(),
        )),
        (VectorType::Double, Data::Ints(v), Phys::Double) => Arc::new(Float64Array::new(
            ScalarBuffer::from(
                ints(v, pos)
                    .map(|i| f64::from_bits(i as u64))
                    .collect::<Vec<f64>>(),
            ),
            nulls(),
        )),
        (
            VectorType::Str,
            Data::Dict {
                offsets,
                bytes,
                codes,
            },
            Phys::Str,
        ) => {
            let keys: Vec<u16> = match codes {
                Codes::U8(c) => pos.iter().map(|&p| c[p as usize] as u16).collect(),
                Codes::U16(c) => pos.iter().map(|&p| c[p as usize]).collect(),
            };
            let offs: Vec<i32> = offsets.iter().map(|&o| o as i32).collect();
            let values = StringArray::try_new(
                OffsetBuffer::new(ScalarBuffer::from(offs)),
                bytes.clone().into(),
                None,
            )
            .map_err(|e| Error::corrupt(format!("column chunk dictionary: {e}")))?;
            Arc::new(
                DictionaryArray::<UInt16Type>::try_new(
                    UInt16Array::new(ScalarBuffer::from(keys), nulls()),
                    Arc::new(values),
                )
                .map_err(|e| Error::corrupt(format!("column chunk dictionary: {e}")))?,
            )
        }
        (VectorType::Str, Data::Plain { offsets, data }, Phys::Str) => {
            let mut offs = Vec::with_capacity(pos.len() + 1);
            let mut bytes = Vec::new();
            offs.push(0i32);
            for &p in pos {
                let (a, b) = (offsets[p as usize], offsets[p as usize + 1]);
                bytes.extend_from_slice(&data[a as usize..b as usize]);
                offs.push(bytes.len() as i32);
            }
            Arc::new(
                StringArray::try_new(
                    OffsetBuffer::new(ScalarBuffer::from(offs)),
                    bytes.into(),
                    nulls(),
                )
                .map_err(|e| Error::corrupt(format!("column chunk strings: {e}")))?,
            )
        }
        // Every other encoding (all NULL, wide decimals, digit strings): through values.
        _ => {
            let vals = pos
                .iter()
                .map(|&p| ch.value(p as usize))
                .collect::<Result<Vec<Value>>>()?;
            ty.array_of(vals.iter())?
        }
    })
}
