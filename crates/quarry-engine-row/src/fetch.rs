//! Rows read by id (index lookups, joins by key): the records at the ids given, in that
//! order, decoded whole or only in the columns asked for (a join through lineitem's
//! `l_suppkey` reads five of its sixteen columns, and its three strings were most of the
//! time decoding took).
//!
//! Owns the reads of records by id only; the record framing is `records`', decoding
//! `codec`'s.

use quarry_common::{Error, Result, Row};
use quarry_storage_api::{HandlerCounters, RowId};

use crate::codec::decode_some;
use crate::records::RecordReader;
use crate::{RowTable, HEADER_SIZE, LIVE};

impl RowTable {
    /// Per column of the table, whether it is among `cols`.
    pub(crate) fn column_mask(&self, cols: impl Iterator<Item = usize>) -> Vec<bool> {
        let mut w = vec![false; self.schema.columns.len()];
        for c in cols {
            if let Some(x) = w.get_mut(c) {
                *x = true;
            }
        }
        w
    }

    /// The rows at `ids`; with `columns`, the others are left NULL.
    pub(crate) fn fetch_rows(&self, ids: &[RowId], columns: Option<&[usize]>) -> Result<Vec<Row>> {
        let end = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            st.end
        };
        HandlerCounters::add(&self.counters.read_rnd, ids.len() as u64);
        let wanted = columns.map(|cols| self.column_mask(cols.iter().copied()));
        // Callers pass ids sorted (rule 5: fetch in file order). Each record is a small
        // read through the block cache, a copy from memory once its block is in, so
        // neighbours share a block instead of a 64 KiB read ahead.
        let mut reader = RecordReader::new(self, HEADER_SIZE, end, 1024);
        ids.iter()
            .map(|&id| {
                if id < HEADER_SIZE || id >= end {
                    return Err(Error::internal(format!(
                        "row {id} of {} is out of range",
                        self.name
                    )));
                }
                reader.pos = id;
                match reader.next_record()? {
                    Some((_, LIVE, _, payload)) => decode_some(
                        &self.schema.columns,
                        self.schema.row_format,
                        payload,
                        wanted.as_deref(),
                    ),
                    _ => Err(Error::internal(format!(
                        "row {id} of {} is not live",
                        self.name
                    ))),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::vectors::tests::{row, Fresh};
    use quarry_common::{Row, Value};
    use quarry_storage_api::{RowFormat, Table};

    /// Rows fetched by id in some columns hold those columns' values and NULL elsewhere,
    /// in both formats, around deleted records and through the block cache.
    #[test]
    fn fetched_columns_are_the_whole_rows_cut() {
        let dir = quarry_common::test_dir("row-fetch");
        std::fs::create_dir_all(&dir).unwrap();
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            let fresh = Fresh::new(&dir, format);
            let (schema, t) = (&fresh.schema, fresh.open());
            let mut ids: Vec<u64> = (0..2000)
                .map(|i| t.insert(row(i, format)).unwrap())
                .collect();
            for (n, &id) in ids.iter().enumerate() {
                if n % 7 == 2 {
                    t.delete(id).unwrap();
                }
            }
            let mut n = 0;
            ids.retain(|_| {
                n += 1;
                (n - 1) % 7 != 2
            });
            let some: Vec<u64> = ids.iter().copied().step_by(3).collect();
            let whole = t.fetch(&some).unwrap();
            assert_eq!(whole[0], row(0, format));
            let width = schema.columns.len();
            for columns in [
                vec![0],
                vec![1, 4],
                vec![width - 1, 2, 0],
                (0..width).collect(),
            ] {
                for _pass in 0..2 {
                    let got = t.fetch_columns(&some, Some(&columns)).unwrap();
                    let want: Vec<Row> = whole
                        .iter()
                        .map(|r| {
                            (0..width)
                                .map(|c| match columns.contains(&c) {
                                    true => r[c].clone(),
                                    false => Value::Null,
                                })
                                .collect()
                        })
                        .collect();
                    assert_eq!(got, want, "{format:?} {columns:?}");
                }
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
