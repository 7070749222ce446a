//! A sample of a table's rows, and the planner's estimates of conditions from it
//! (`Table::estimate`): how many rows `o_orderstatus = 'F'` or `l_shipdate BETWEEN …`
//! keep, where the planner would otherwise take a tenth of the table for any condition
//! (TPC-H Q21 built a hash table on the half of `orders` it took for a tenth, and
//! probing its primary key from the rows it joined cost less).
//!
//! The sample is read from a few evenly spread runs of the data file, each starting at a
//! record the table marks for split scans (`State::marks`), so taking it reads about
//! [`BUDGET`] bytes whatever the table's size; a small table is read whole. It is taken
//! at the first estimate, again once a tenth of the rows changed (InnoDB's rule for its
//! statistics, as the index statistics here), and by ANALYZE TABLE. It lives in memory
//! only: after a restart the first estimate takes it again.
//!
//! Owns the sample and its estimates only; what a condition means is `Pred::eval`'s.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use quarry_common::{Result, Row};
use quarry_storage_api::Pred;

use crate::codec::decode;
use crate::records::RecordReader;
use crate::{RowTable, HEADER_SIZE, LIVE};

/// Rows the sample holds at most.
const ROWS: usize = 2000;
/// Bytes of the data file read for a sample, about (tests spread it over small files).
const BUDGET: u64 = if cfg!(test) { 64 << 10 } else { 2 << 20 };
/// Runs of the file the sample is read from, at most.
const RUNS: usize = 64;
/// Estimates remembered per sample (by the condition's text).
const REMEMBERED: usize = 256;

pub(crate) struct Sample {
    rows: Vec<Row>,
    /// Live rows and `RowTable::changes` when it was taken.
    live_at: u64,
    changes_at: u64,
    estimates: HashMap<String, u64>,
}

impl RowTable {
    /// Rows of the table for which `filter` is true, estimated from the sample.
    pub(crate) fn estimate_sampled(&self, filter: &Pred) -> Option<u64> {
        let live = self.state.lock().live_rows;
        let changes = self.changes.load(Ordering::Relaxed);
        let mut guard = self.sample.lock();
        let stale = guard
            .as_ref()
            .is_none_or(|s| changes.saturating_sub(s.changes_at) > s.live_at / 10);
        if stale {
            *guard = Some(self.take_sample().ok()?);
        }
        let s = guard.as_mut()?;
        if s.rows.is_empty() {
            return Some(0);
        }
        let key = format!("{filter:?}");
        let share = match s.estimates.get(&key) {
            Some(&n) => n,
            None => {
                let n = s
                    .rows
                    .iter()
                    .filter(|r| filter.eval(r) == Some(true))
                    .count() as u64;
                if s.estimates.len() >= REMEMBERED {
                    s.estimates.clear();
                }
                s.estimates.insert(key, n);
                n
            }
        };
        // No row of the sample passing says the share is below one in its size, not nil:
        // half of that is taken.
        let share = (share as f64).max(0.5) / s.rows.len() as f64;
        Some((share * live as f64).round() as u64)
    }

    /// Take the sample now (ANALYZE TABLE).
    pub(crate) fn resample(&self) -> Result<()> {
        let s = self.take_sample()?;
        *self.sample.lock() = Some(s);
        Ok(())
    }

    fn take_sample(&self) -> Result<Sample> {
        let changes_at = self.changes.load(Ordering::Relaxed);
        let (end, live, starts) = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            let mut starts = vec![HEADER_SIZE];
            starts.extend(&st.marks);
            (st.end, st.live_rows, starts)
        };
        let bytes = end.saturating_sub(HEADER_SIZE);
        // Runs of the file: all of it when small, else up to RUNS marked starts spread
        // over it, each read for an equal share of the budget.
        let runs: Vec<(u64, u64)> = if bytes <= BUDGET || starts.len() < 2 {
            vec![(HEADER_SIZE, end)]
        } else {
            let n = starts.len().min(RUNS);
            let per = BUDGET / n as u64;
            (0..n)
                .map(|k| starts[k * (starts.len() - 1) / (n - 1)])
                .map(|s| (s, (s + per).min(end)))
                .collect()
        };
        let read: u64 = runs.iter().map(|(a, b)| b - a).sum();
        // Records in what is read, about, and every how many one is kept.
        let records = read as f64 * live as f64 / bytes.max(1) as f64;
        let every = ((records / ROWS as f64).ceil() as usize).max(1);
        let mut rows = Vec::new();
        let mut seen = 0usize;
        for (from, to) in runs {
            let mut reader = RecordReader::new(self, from, end, (to - from).min(1 << 20) as usize);
            while reader.pos < to {
                let Some((_, status, _, payload)) = reader.next_record()? else {
                    break;
                };
                if status != LIVE {
                    continue;
                }
                if seen.is_multiple_of(every) {
                    rows.push(decode(
                        &self.schema.columns,
                        self.schema.row_format,
                        payload,
                    )?);
                }
                seen += 1;
            }
        }
        if rows.len() > ROWS {
            let step = rows.len().div_ceil(ROWS);
            rows = rows.into_iter().step_by(step).collect();
        }
        Ok(Sample {
            rows,
            live_at: live,
            changes_at,
            estimates: HashMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::vectors::tests::{row, Fresh};
    use quarry_common::Value;
    use quarry_storage_api::{CmpOp, Pred, RowFormat, ScanRequest, Table};

    fn estimate(t: &dyn Table, filter: Pred) -> u64 {
        t.estimate(&ScanRequest {
            filter: Some(filter),
            ..Default::default()
        })
        .unwrap()
    }

    fn lt(col: usize, v: i64) -> Pred {
        Pred::Cmp {
            col,
            op: CmpOp::Lt,
            value: Value::Int(v),
        }
    }

    /// Estimates follow the rows that pass, read whole from a small table and from runs
    /// spread over a bigger one, and follow the table again once a tenth of it changed.
    #[test]
    fn estimates_follow_the_rows() {
        let dir = quarry_common::test_dir("row-sample");
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = Fresh::new(&dir, RowFormat::Dynamic);
        let t = fresh.open();
        let mut ids = Vec::new();
        for i in 0..200 {
            ids.push(t.insert(row(i, RowFormat::Dynamic)).unwrap());
        }
        // Read whole: exact.
        assert_eq!(estimate(&t, lt(0, 50)), 50);
        let one = Pred::Cmp {
            col: 1,
            op: CmpOp::Eq,
            value: Value::Str("bb".into()),
        };
        let bb = (0..200).filter(|i| i % 4 == 2 && i % 5 != 3).count() as u64;
        assert_eq!(estimate(&t, one), bb);
        // No row passing is taken as half a sampled row, not none.
        assert_eq!(estimate(&t, lt(0, -1)), 1);

        for i in 200..40_000 {
            ids.push(t.insert(row(i, RowFormat::Dynamic)).unwrap());
        }
        let bytes = t.state.lock().end;
        assert!(
            bytes > 4 * super::BUDGET,
            "{bytes} bytes: the sample reads runs"
        );
        for (cut, want) in [(10_000, 10_000.0), (30_000, 30_000.0)] {
            let got = estimate(&t, lt(0, cut)) as f64;
            assert!((got - want).abs() < want * 0.1, "{cut}: {got} for {want}");
        }
        // A tenth of the rows deleted (those under 8 000, among others): the sample is
        // taken again.
        for id in &ids[..8_000] {
            t.delete(*id).unwrap();
        }
        let got = estimate(&t, lt(0, 10_000)) as f64;
        assert!(
            (got - 2_000.0).abs() < 1_000.0,
            "{got} for 2000 after the deletes"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
