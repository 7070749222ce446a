//! A full scan of a big table decoded on every core: the file is cut into runs at the
//! records split scans start at (`State::marks`), and each time its rows run out the
//! cursor reads the next runs at once, one per core, and hands their rows on in file
//! order. Reading and checking records (their checksums, the scan's condition, decoding
//! what passes) was nearly all of what TPC-H's joins over lineitem cost on one core
//! (Q12, Q14: 0.12 s at SF 0.1, the operators above them idle).
//!
//! Owns the cutting and the threads only: a run is read by `RowTable::run_cursor`, the
//! cursor a whole scan uses, bounded to the run.

use std::collections::VecDeque;

use quarry_common::{Error, Result};
use quarry_storage_api::{Batch, Cursor, ScanRequest};

use crate::{split_points, RowTable, HEADER_SIZE};

/// Bytes of the file per run, about (runs start at marked records, `MARK_EVERY` apart).
const RUN: u64 = if cfg!(test) { 16 << 10 } else { 2 << 20 };

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Where a split scan's runs start, or None when there is one core or the table is too
/// small to gain by it: its rows are made a few runs ahead of the operators that take
/// them, which then find them out of cache, and TPC-H's scans of partsupp (13 MiB at SF
/// 0.1, in Q16 and Q20) were slower split (Q20 0.027 → 0.031 s).
pub(crate) fn run_starts(marks: &[u64], end: u64) -> Option<Vec<u64>> {
    let runs = end.saturating_sub(HEADER_SIZE).div_ceil(RUN) as usize;
    if cores() < 2 || runs < 8 * cores() {
        return None;
    }
    let starts = split_points(marks, end, runs);
    (starts.len() > 1).then_some(starts)
}

pub(crate) struct SplitCursor<'a> {
    table: &'a RowTable,
    req: ScanRequest,
    starts: Vec<u64>,
    end: u64,
    /// The next run to read.
    next: usize,
    ready: VecDeque<Batch>,
}

impl<'a> SplitCursor<'a> {
    /// A scan with `req` of the records before `end`, in runs from `starts`.
    pub(crate) fn new(table: &'a RowTable, req: ScanRequest, starts: Vec<u64>, end: u64) -> Self {
        SplitCursor {
            table,
            req,
            starts,
            end,
            next: 0,
            ready: VecDeque::new(),
        }
    }

    fn run(&self, k: usize) -> (u64, u64) {
        let to = self.starts.get(k + 1).copied().unwrap_or(self.end);
        (self.starts[k], to)
    }
}

impl Cursor for SplitCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Ok(Some(b));
            }
            if self.next >= self.starts.len() {
                return Ok(None);
            }
            // The first run alone, on this thread: a scan stopped early (LIMIT) reads no
            // more than before.
            let n = match self.next {
                0 => 1,
                _ => cores().min(self.starts.len() - self.next),
            };
            let runs: Vec<(u64, u64)> = (self.next..self.next + n).map(|k| self.run(k)).collect();
            self.next += n;
            let (table, req) = (self.table, &self.req);
            let made: Vec<Result<Vec<Batch>>> = std::thread::scope(|s| {
                let rest: Vec<_> = runs[1..]
                    .iter()
                    .map(|&run| s.spawn(move || table.read_run(run, req)))
                    .collect();
                let mut made = vec![table.read_run(runs[0], req)];
                made.extend(rest.into_iter().map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("scan worker panicked")))
                }));
                made
            });
            for batches in made {
                self.ready.extend(batches?);
            }
        }
    }
}

impl RowTable {
    /// Every batch of the records in `[from, to)` that a scan with `req` returns.
    fn read_run(&self, (from, to): (u64, u64), req: &ScanRequest) -> Result<Vec<Batch>> {
        let mut cursor = self.run_cursor(req, from, to);
        let mut out = Vec::new();
        while let Some(b) = cursor.next_batch()? {
            out.push(b);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::tests::{row, Fresh};
    use quarry_common::Value;
    use quarry_storage_api::{CmpOp, Pred, RowFormat, Table};

    fn drain(c: &mut dyn Cursor) -> (Vec<u64>, Vec<quarry_common::Row>) {
        let (mut ids, mut rows) = (Vec::new(), Vec::new());
        while let Some(b) = c.next_batch().unwrap() {
            ids.extend(b.ids);
            rows.extend(b.rows);
        }
        (ids, rows)
    }

    /// A scan cut into runs read on several threads returns the rows one cursor over the
    /// whole file returns, in the same order, with and without a condition, past deleted
    /// records; and one stopped after its first batch read only its first run.
    #[test]
    fn runs_read_apart_give_the_rows_of_one_scan_in_order() {
        let dir = quarry_common::test_dir("row-split-scan");
        std::fs::create_dir_all(&dir).unwrap();
        let fresh = Fresh::new(&dir, RowFormat::Dynamic);
        let t = fresh.open();
        let ids: Vec<u64> = (0..20_000)
            .map(|i| t.insert(row(i, RowFormat::Dynamic)).unwrap())
            .collect();
        for id in ids.iter().step_by(7) {
            t.delete(*id).unwrap();
        }
        let (end, marks) = {
            let mut st = t.state.lock();
            t.flush_locked(&mut st).unwrap();
            (st.end, st.marks.clone())
        };
        let runs = end.saturating_sub(HEADER_SIZE).div_ceil(RUN) as usize;
        let starts = split_points(&marks, end, runs);
        assert!(starts.len() > 8, "{} runs", starts.len());
        let filters = [
            None,
            Some(Pred::Cmp {
                col: 0,
                op: CmpOp::Lt,
                value: Value::Int(12_345),
            }),
        ];
        for filter in filters {
            let req = ScanRequest {
                batch_rows: 1000,
                columns: Some(vec![0, 2, 5]),
                filter,
                ..Default::default()
            };
            let whole = drain(&mut t.run_cursor(&req, HEADER_SIZE, end));
            let mut split = SplitCursor::new(&t, req.clone(), starts.clone(), end);
            let got = drain(&mut split);
            assert!(!whole.0.is_empty());
            assert_eq!(got, whole, "{:?}", req.filter);
        }
        let few = ScanRequest {
            batch_rows: 10,
            ..Default::default()
        };
        let mut split = SplitCursor::new(&t, few, starts.clone(), end);
        let first = split.next_batch().unwrap().unwrap();
        assert_eq!(first.ids[0], ids[1]);
        assert_eq!(split.next, 1, "one run read for the first batch");
        // Through the table: the rows of a plain scan, whatever the machine's cores.
        let via_table = drain(&mut *t.scan(&ScanRequest::default()).unwrap());
        assert_eq!(via_table.0.len(), 20_000 - 20_000usize.div_ceil(7));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
