//! Row-table scans as column vectors ([`Table::scan_columns`], issue 20): each record's
//! cells go straight into the Arrow vectors of the columns asked for, once the scan's
//! condition has passed on the cells it reads — no row of values is made, and no cell
//! after the last one read is walked.
//!
//! Owns that decoding only: record framing is `records`', cell encoding `codec`'s (whose
//! typed readers this shares with `decode`, so a vector holds what a row scan gives).
//! Must not touch: which rows a snapshot sees (the MVCC layer offers vectors only while
//! no change is hidden from it).
//!
//! [`Table::scan_columns`]: quarry_storage_api::Table::scan_columns

use quarry_common::{Result, Value};
use quarry_storage_api::vector::arrow_array::builder::{
    Decimal128Builder, Float64Builder, Int64Builder, StringBuilder,
};
use quarry_storage_api::vector::arrow_array::ArrayRef;
use quarry_storage_api::vector::{decimal_scale, ColumnBatch, ColumnCursor, VectorType};
use quarry_storage_api::{ColumnSchema, HandlerCounters, Pred};
use std::sync::Arc;

use crate::codec;
use crate::records::RecordReader;
use crate::walk::Walk;
use crate::{RowTable, LIVE};

/// Rows per batch handed over.
const BATCH_ROWS: usize = 4096;
/// Records read before a batch is handed over however few rows passed, so a caller
/// checks for KILL as often during a scan that keeps nothing.
const BATCH_RECORDS: u64 = 16 * BATCH_ROWS as u64;

/// A vector being filled.
enum Out {
    Int(Int64Builder),
    Decimal(Decimal128Builder, u8),
    Double(Float64Builder),
    Str(StringBuilder),
}

impl Out {
    fn new(ty: VectorType) -> Out {
        match ty {
            VectorType::Int => Out::Int(Int64Builder::with_capacity(BATCH_ROWS)),
            VectorType::Decimal(s) => Out::Decimal(Decimal128Builder::with_capacity(BATCH_ROWS), s),
            VectorType::Double => Out::Double(Float64Builder::with_capacity(BATCH_ROWS)),
            VectorType::Str => Out::Str(StringBuilder::with_capacity(BATCH_ROWS, BATCH_ROWS * 8)),
        }
    }

    fn null(&mut self) {
        match self {
            Out::Int(b) => b.append_null(),
            Out::Decimal(b, _) => b.append_null(),
            Out::Double(b) => b.append_null(),
            Out::Str(b) => b.append_null(),
        }
    }

    /// The non-NULL cell of `c` at `pos`.
    fn push(&mut self, c: &ColumnSchema, fixed: bool, buf: &[u8], mut pos: usize) -> Result<()> {
        let pos = &mut pos;
        match self {
            Out::Int(b) => b.append_value(codec::int_cell(buf, pos, fixed)?),
            Out::Decimal(b, _) => b.append_value(codec::narrow_decimal_cell(buf, pos, fixed)?),
            Out::Double(b) => b.append_value(codec::double_cell(buf, pos)?),
            Out::Str(b) => b.append_value(codec::text(codec::string_cell(c, fixed, buf, pos)?)?),
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<ArrayRef> {
        Ok(match self {
            Out::Int(b) => Arc::new(b.finish()),
            Out::Decimal(b, s) => Arc::new(decimal_scale(b.finish(), *s)?),
            Out::Double(b) => Arc::new(b.finish()),
            Out::Str(b) => Arc::new(b.finish()),
        })
    }
}

pub(crate) struct VectorCursor<'a> {
    reader: RecordReader<'a>,
    walk: Walk<'a>,
    /// The table column of each output.
    outs: Vec<usize>,
    vectors: Vec<Out>,
    /// The condition's decoded columns of the current record (others stay NULL).
    scratch: Vec<Value>,
    /// Where the outputs' cells start in the current record, by column.
    starts: Vec<Option<usize>>,
}

impl<'a> VectorCursor<'a> {
    /// A cursor over the records `reader` reads, making vectors of `columns` of the rows
    /// `filter` passes; None when a column has no vector type.
    pub(crate) fn new(
        table: &'a RowTable,
        reader: RecordReader<'a>,
        columns: &[usize],
        filter: Option<Pred>,
    ) -> Option<VectorCursor<'a>> {
        let cols = &table.schema.columns[..];
        let types = columns
            .iter()
            .map(|&c| VectorType::of(&cols.get(c)?.ty))
            .collect::<Option<Vec<_>>>()?;
        let filter_cols = filter.as_ref().map(Pred::columns).unwrap_or_default();
        if filter_cols.iter().any(|&c| c >= cols.len()) {
            return None;
        }
        Some(VectorCursor {
            reader,
            walk: Walk::new(cols, table.schema.row_format, filter.as_ref(), &[], columns),
            outs: columns.to_vec(),
            vectors: types.into_iter().map(Out::new).collect(),
            scratch: vec![Value::Null; cols.len()],
            starts: vec![None; cols.len()],
        })
    }
}

impl ColumnCursor for VectorCursor<'_> {
    fn next_columns(&mut self) -> Result<Option<ColumnBatch>> {
        let VectorCursor {
            reader,
            walk,
            outs,
            vectors,
            scratch,
            starts,
        } = self;
        let table = reader.table;
        let mut rows = 0;
        let mut visited = 0u64;
        let mut ended = false;
        while rows < BATCH_ROWS && visited < BATCH_RECORDS {
            let Some((_, status, _, payload)) = reader.next_record()? else {
                ended = true;
                break;
            };
            visited += 1;
            if status != LIVE {
                continue;
            }
            if !walk.run(payload, scratch, starts)? {
                continue;
            }
            for (v, &c) in vectors.iter_mut().zip(outs.iter()) {
                match starts[c] {
                    None => v.null(),
                    Some(at) => v.push(&walk.cols[c], walk.fixed, payload, at)?,
                }
            }
            rows += 1;
        }
        HandlerCounters::add_read(&table.counters.read_rnd_next, visited);
        if rows == 0 && ended {
            return Ok(None);
        }
        Ok(Some(ColumnBatch {
            columns: vectors.iter_mut().map(Out::finish).collect::<Result<_>>()?,
            rows,
        }))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::{RowEngine, HEADER_SIZE};
    use quarry_common::{Date, Decimal, Row, SqlType, TypeKind};
    use quarry_storage_api::vector::value_at;
    use quarry_storage_api::{
        CmpOp, Engine, RowFormat, ScanRequest, Table, TablePath, TableSchema,
    };

    fn col(name: &str, ty: SqlType) -> ColumnSchema {
        ColumnSchema {
            name: name.into(),
            ty,
            nullable: true,
            columnar: false,
        }
    }

    pub(crate) fn schema(format: RowFormat) -> TableSchema {
        let mut unsigned = SqlType::BIGINT;
        unsigned.unsigned = true;
        let mut columns = vec![
            col("id", SqlType::INT),
            col("g", SqlType::varchar(8)),
            col("d", SqlType::decimal(10, 2)),
            col("u", unsigned),
            col("f", SqlType::DOUBLE),
            col("dt", SqlType::DATE),
            col("w", SqlType::decimal(50, 3)),
            col("k", SqlType::BIGINT),
        ];
        if format == RowFormat::Dynamic {
            columns.insert(2, col("t", SqlType::lob(TypeKind::Text, 65535)));
        }
        TableSchema {
            columns,
            indexes: vec![],
            row_format: format,
        }
    }

    /// A new table of [`schema`] in `dir`, opened (again) by [`Fresh::open`].
    pub(crate) struct Fresh {
        engine: RowEngine,
        path: TablePath,
        pub schema: TableSchema,
    }

    impl Fresh {
        pub(crate) fn new(dir: &std::path::Path, format: RowFormat) -> Fresh {
            let schema = schema(format);
            let path = TablePath::new(dir, &format!("t{format:?}"));
            let engine = RowEngine::default();
            engine.create(&path, &schema).unwrap();
            Fresh {
                engine,
                path,
                schema,
            }
        }

        pub(crate) fn open(&self) -> RowTable {
            let pool = self.engine.pool().clone();
            RowTable::open(&self.path, self.schema.clone(), Default::default(), pool).unwrap()
        }
    }

    pub(crate) fn row(i: i64, format: RowFormat) -> Row {
        let null_if = |cond: bool, v: Value| if cond { Value::Null } else { v };
        let mut r = vec![
            Value::Int(i),
            null_if(
                i % 5 == 3,
                Value::Str(["a", "Ä", "bb", ""][i as usize % 4].into()),
            ),
            null_if(
                i % 7 == 0,
                Value::Decimal(Decimal::new((i * 37) % 10_000 - 5000, 2)),
            ),
            Value::UInt(u64::MAX - i as u64),
            null_if(i % 11 == 0, Value::Double(i as f64 * 0.25 - 100.0)),
            Value::Date(Date {
                year: 1990 + (i % 9) as u16,
                month: 1 + (i % 12) as u8,
                day: 1 + (i % 28) as u8,
            }),
            Value::Decimal(Decimal::new(i as i128 * 1_000_003, 3)),
            null_if(i % 13 == 0, Value::Int(i64::MIN + i)),
        ];
        if format == RowFormat::Dynamic {
            r.insert(2, Value::Str("x".repeat(i as usize % 300)));
        }
        r
    }

    /// The rows of a vector scan of `columns`, as values.
    fn vector_rows(
        t: &RowTable,
        columns: &[usize],
        filter: &Option<Pred>,
        parts: usize,
    ) -> Vec<Row> {
        let req = ScanRequest {
            columns: Some(columns.to_vec()),
            filter: filter.clone(),
            ..Default::default()
        };
        let cursors = t.scan_columns(&req, parts).unwrap().expect("vectors");
        let mut out = vec![];
        for mut c in cursors {
            while let Some(b) = c.next_columns().unwrap() {
                assert!(b.columns.iter().all(|a| a.len() == b.rows));
                for i in 0..b.rows {
                    out.push(b.columns.iter().map(|a| value_at(&**a, i)).collect());
                }
            }
        }
        out
    }

    /// The rows a row scan with `filter` (checked on the cells it reads before the rest
    /// are decoded) gives, cut to `columns`; checked against whole rows filtered here.
    fn scanned_rows(t: &RowTable, columns: &[usize], filter: &Option<Pred>) -> Vec<Row> {
        let scan = |req: ScanRequest| {
            let mut c = t.scan(&req).unwrap();
            let mut out = vec![];
            while let Some(b) = c.next_batch().unwrap() {
                out.extend(b.rows);
            }
            out
        };
        let cut = |r: &Row| -> Row { columns.iter().map(|&c| r[c].clone()).collect() };
        let want: Vec<Row> = scan(ScanRequest::default())
            .iter()
            .filter(|r| filter.as_ref().is_none_or(|f| f.eval(r) == Some(true)))
            .map(cut)
            .collect();
        let checked: Vec<Row> = scan(ScanRequest {
            columns: Some(columns.to_vec()),
            filter: filter.clone(),
            batch_rows: 100,
            ..Default::default()
        })
        .iter()
        .map(cut)
        .collect();
        assert_eq!(checked, want, "{filter:?} {columns:?}");
        want
    }

    #[test]
    fn vectors_hold_the_rows_a_row_scan_gives_in_any_split() {
        let dir = quarry_common::test_dir("row-vectors");
        std::fs::create_dir_all(&dir).unwrap();
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            let fresh = Fresh::new(&dir, format);
            let schema = &fresh.schema;
            let open = || fresh.open();
            let mut t = open();
            let at = |name: &str| schema.columns.iter().position(|c| c.name == name).unwrap();
            let (id, g, d, u, f, dt, k) = (
                at("id"),
                at("g"),
                at("d"),
                at("u"),
                at("f"),
                at("dt"),
                at("k"),
            );
            let mut ids = vec![];
            let keys = Arc::new(quarry_storage_api::KeySet::new(
                (0..3000).step_by(3).collect(),
            ));
            for round in 0..2 {
                // Deleted records in between, their slots refilled by later rows.
                for i in 0..1500 {
                    ids.push(t.insert(row(i + round * 10_000, format)).unwrap());
                }
                for (n, &rid) in ids.iter().enumerate() {
                    if n % 9 == 4 && round == 0 {
                        t.delete(rid).unwrap();
                    }
                }
                for i in 0..200 {
                    t.insert(row(50_000 + i, format)).unwrap();
                }
                let filters = [
                    None,
                    Some(Pred::Cmp {
                        col: dt,
                        op: CmpOp::Lt,
                        value: Value::Date(Date {
                            year: 1994,
                            month: 3,
                            day: 1,
                        }),
                    }),
                    Some(Pred::And(vec![
                        Pred::Between {
                            col: d,
                            lo: Value::Decimal(Decimal::new(-1000, 2)),
                            hi: Value::Int(20),
                        },
                        Pred::Not(Box::new(Pred::IsNull { col: g })),
                    ])),
                    Some(Pred::Or(vec![
                        Pred::IsNull { col: f },
                        Pred::Cmp {
                            col: u,
                            op: CmpOp::Gt,
                            value: Value::UInt(u64::MAX - 40),
                        },
                    ])),
                    // A runtime filter beside a condition (the row scan counts it).
                    Some(Pred::And(vec![
                        Pred::InKeys {
                            col: id,
                            keys: keys.clone(),
                        },
                        Pred::Cmp {
                            col: f,
                            op: CmpOp::Ge,
                            value: Value::Int(-90),
                        },
                    ])),
                    // Nothing passes.
                    Some(Pred::Cmp {
                        col: id,
                        op: CmpOp::Lt,
                        value: Value::Int(-1),
                    }),
                ];
                for filter in &filters {
                    for columns in [vec![id, d], vec![g, f, id, k], vec![d, d], vec![k]] {
                        let want = scanned_rows(&t, &columns, filter);
                        for parts in [1, 3] {
                            let got = vector_rows(&t, &columns, filter, parts);
                            assert_eq!(
                                format!("{got:?}"),
                                format!("{want:?}"),
                                "{format:?} {filter:?} {columns:?} {parts} parts"
                            );
                        }
                    }
                }
                let (asked, passed) = keys.counts();
                assert!(asked > passed && passed > 0, "{asked} {passed}");
                // The file is long enough to be split: the runs start at marked records.
                let cursors = t
                    .scan_columns(
                        &ScanRequest {
                            columns: Some(vec![id]),
                            ..Default::default()
                        },
                        3,
                    )
                    .unwrap()
                    .unwrap();
                assert_eq!(cursors.len(), 3, "{format:?}");
                drop(cursors);
                // Marks found by the walk at open split as those made by appends.
                t.sync().unwrap();
                drop(t);
                t = open();
                let marks = t.state.lock().marks.len();
                assert!(marks > 10, "{marks}");
                for filter in &filters {
                    let columns = [g, d, id];
                    let want = scanned_rows(&t, &columns, filter);
                    assert_eq!(
                        vector_rows(&t, &columns, filter, 2),
                        want,
                        "{format:?} reopened"
                    );
                }
                // Columns without vectors are not offered as vectors.
                for no in [u, dt, at("w")] {
                    let req = ScanRequest {
                        columns: Some(vec![id, no]),
                        ..Default::default()
                    };
                    assert!(t.scan_columns(&req, 1).unwrap().is_none());
                }
                // A cut file is marked afresh as it grows again.
                t.truncate().unwrap();
                assert!(t.state.lock().marks.is_empty());
                assert_eq!(t.state.lock().end, HEADER_SIZE);
                ids.clear();
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Random conjunctions of comparisons (ranges on raw cells where they can be, the
    /// rest on values, decided column by column as the walk reads them) pass the rows
    /// that the condition passes on whole rows, in row and vector scans.
    #[test]
    fn random_conditions_pass_what_they_pass_on_whole_rows() {
        let dir = quarry_common::test_dir("row-random-conditions");
        std::fs::create_dir_all(&dir).unwrap();
        let mut rng = quarry_common::fuzz::Rng::new(5);
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            let fresh = Fresh::new(&dir, format);
            let schema = &fresh.schema;
            let t = fresh.open();
            let at = |name: &str| schema.columns.iter().position(|c| c.name == name).unwrap();
            for i in 0..700 {
                t.insert(row(i * 7 % 1000, format)).unwrap();
            }
            // Mostly of the column's kind; now and then NULL or another kind.
            let (dt, g) = (at("dt"), at("g"));
            let constant = |rng: &mut quarry_common::fuzz::Rng, col: usize| match rng.below(10) {
                0 => Value::Null,
                1 => Value::Str(format!("{}", rng.below(50))),
                2 => Value::UInt(rng.below(1000) as u64),
                _ if col == dt => Value::Date(Date {
                    year: 1989 + rng.below(11) as u16,
                    month: rng.below(13) as u8,
                    day: rng.below(30) as u8,
                }),
                _ if col == g => Value::Str(["a", "b", "bb", "Ä"][rng.below(4)].into()),
                3..=5 => Value::Int(rng.below(1200) as i64 - 100),
                _ => Value::Decimal(Decimal::new(
                    rng.below(20_001) as i128 - 10_000,
                    1 + rng.below(3) as u8,
                )),
            };
            let ops = CmpOp::ALL;
            let cols = [at("id"), at("d"), at("dt"), at("k"), at("f"), at("g")];
            let mut some = 0;
            for _ in 0..200 {
                let leaf = |rng: &mut quarry_common::fuzz::Rng| {
                    let col = *rng.pick(&cols);
                    match rng.below(10) {
                        0 | 1 => Pred::Between {
                            col,
                            lo: constant(rng, col),
                            hi: constant(rng, col),
                        },
                        2 => Pred::IsNull { col },
                        3 => Pred::In {
                            col,
                            values: vec![constant(rng, col), constant(rng, col)],
                        },
                        4 => Pred::Not(Box::new(Pred::Like {
                            col: g,
                            pattern: ["a%", "%b", "_", "ä%"][rng.below(4)].into(),
                            escape: '\\',
                        })),
                        _ => Pred::Cmp {
                            col,
                            op: *rng.pick(&ops),
                            value: constant(rng, col),
                        },
                    }
                };
                let mut parts: Vec<Pred> = (0..1 + rng.below(3)).map(|_| leaf(&mut rng)).collect();
                if rng.chance(4) {
                    parts.push(Pred::Or(vec![leaf(&mut rng), leaf(&mut rng)]));
                }
                if rng.chance(4) {
                    // Conditions on one text column, decided on its cells in place.
                    let on_g = |rng: &mut quarry_common::fuzz::Rng| Pred::Cmp {
                        col: g,
                        op: *rng.pick(&ops),
                        value: constant(rng, g),
                    };
                    parts.push(Pred::Or(vec![on_g(&mut rng), on_g(&mut rng)]));
                }
                let filter = Some(Pred::And(parts));
                // Some of the columns with vectors: the walk steps over the others.
                let outs = [at("id"), at("g"), at("d"), at("f"), at("k")];
                let columns: Vec<usize> = (0..1 + rng.below(3)).map(|_| *rng.pick(&outs)).collect();
                let want = scanned_rows(&t, &columns, &filter);
                assert_eq!(
                    vector_rows(&t, &columns, &filter, 2),
                    want,
                    "{format:?} {filter:?}"
                );
                some += usize::from(!want.is_empty() && want.len() < 700);
            }
            assert!(
                some > 25,
                "conditions passing some rows but not all: {some}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
