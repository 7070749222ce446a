//! Row estimates for the planner: a condition counted on a few segments spread over the
//! table (on their encoded chunks, as a scan filters) and on the delta, scaled to the
//! table's rows. Kept per condition until a tenth of the rows changed, since the planner
//! asks several times per statement.
//!
//! Must not touch: segments, the delta or the keys (reads a snapshot only).

use quarry_storage_api::Pred;

use crate::ColumnTable;

/// Segments counted for an estimate, at most.
const SAMPLED: usize = 4;
/// Conditions remembered per table before the memory starts over.
const REMEMBERED: usize = 256;

impl ColumnTable {
    pub(crate) fn estimate_rows(&self, filter: &Pred) -> Option<u64> {
        let key = format!("{filter:?}");
        let (changes, live) = {
            let st = self.state.lock();
            (st.changes, st.live)
        };
        if let Some(&(at, n)) = self.estimates.lock().get(&key) {
            if changes.saturating_sub(at) <= live / 10 {
                return Some(n);
            }
        }
        let snap = self.snapshot().ok()?;
        let n = snap.segs.len();
        let mut picks: Vec<usize> = if n <= SAMPLED {
            (0..n).collect()
        } else {
            (0..SAMPLED).map(|k| k * (n - 1) / (SAMPLED - 1)).collect()
        };
        picks.dedup();
        let (mut seen, mut passed) = (0u64, 0u64);
        for s in picks {
            let (seg, del) = (&snap.segs[s], &snap.dels[s]);
            seen += seg.rows as u64 - del.count as u64;
            passed += self.count_segment(seg, del, Some(filter)).ok()?;
        }
        let in_segments: u64 = snap
            .segs
            .iter()
            .zip(&snap.dels)
            .map(|(s, d)| s.rows as u64 - d.count as u64)
            .sum();
        let from_segments =
            (passed as f64 * in_segments as f64 / seen.max(1) as f64).round() as u64;
        let from_delta = snap
            .delta
            .values()
            .filter(|r| filter.eval(r) == Some(true))
            .count() as u64;
        let est = from_segments + from_delta;
        let mut memo = self.estimates.lock();
        if memo.len() >= REMEMBERED {
            memo.clear();
        }
        memo.insert(key, (changes, est));
        Some(est)
    }
}
