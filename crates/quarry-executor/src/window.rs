//! Running window functions (`Plan::Window`): for each window specification the rows are
//! sorted by its PARTITION BY and ORDER BY keys (the external sort, so the sort spills as
//! ORDER BY does), then taken one partition at a time; each call of the specification
//! fills its column of the partition's rows, and the rows go on to the next
//! specification's sort or, after the last, to the sink. Memory holds one partition.
//! Owns: partitions, peers, frames and the per-call computations. Must not touch: the
//! binder's checks (bind/window.rs) and the aggregates' arithmetic (`exec::AggState`).

use std::cmp::Ordering;

use quarry_common::{Error, Result, Row, Value};

use crate::exec::{run, AggState, ExecCtx, Sink, BATCH_ROWS};
use crate::expr::{binary, BinOp};
use crate::plan::{Agg, Frame, FrameBound, Plan, WinCall, WinFunc, WinSpec};
use crate::sort::Sorter;

/// Rows on their way into a specification: sorted, or kept in arrival order when the
/// specification has no keys (one partition, no order).
enum Feed<'a> {
    Sort(Sorter<'a>),
    Keep(Vec<Row>),
}

impl<'a> Feed<'a> {
    fn new(spec: &WinSpec, ctx: &'a ExecCtx) -> Feed<'a> {
        if spec.partition.is_empty() && spec.order.is_empty() {
            return Feed::Keep(vec![]);
        }
        let desc = spec
            .partition
            .iter()
            .map(|_| false)
            .chain(spec.order.iter().map(|(_, d)| *d))
            .collect();
        Feed::Sort(Sorter::new(desc, ctx.sort_buffer, &ctx.catalog.counters))
    }

    /// Take `row`, with the specification's keys appended to it (and given to the sort).
    fn push(&mut self, spec: &WinSpec, mut row: Row, ctx: &ExecCtx) -> Result<()> {
        match self {
            Feed::Keep(rows) => rows.push(row),
            Feed::Sort(s) => {
                let mut keys = Vec::with_capacity(spec.partition.len() + spec.order.len());
                for e in spec
                    .partition
                    .iter()
                    .chain(spec.order.iter().map(|(e, _)| e))
                {
                    keys.push(e.eval(&row, ctx)?);
                }
                row.extend(keys.iter().cloned());
                s.push(keys, row)?;
            }
        }
        Ok(())
    }

    fn finish(self, sink: &mut dyn FnMut(Vec<Row>) -> Result<bool>) -> Result<()> {
        match self {
            Feed::Sort(s) => s.finish(BATCH_ROWS, sink),
            Feed::Keep(rows) => {
                let mut it = rows.into_iter().peekable();
                while it.peek().is_some() {
                    if !sink(it.by_ref().take(BATCH_ROWS).collect())? {
                        break;
                    }
                }
                Ok(())
            }
        }
    }
}

pub(crate) fn run_window(
    input: &Plan,
    specs: &[WinSpec],
    calls: usize,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<()> {
    let Some(first) = specs.first() else {
        return run(input, ctx, sink);
    };
    let mut feed = Feed::new(first, ctx);
    run(input, ctx, &mut |b| {
        for mut r in b {
            r.resize(r.len() + calls, Value::Null);
            feed.push(first, r, ctx)?;
        }
        ctx.tick()?;
        Ok(true)
    })?;
    for (i, spec) in specs.iter().enumerate() {
        let next_spec = specs.get(i + 1);
        let mut next = next_spec.map(|s| Feed::new(s, ctx));
        let mut part = Partition::default();
        let nkeys = match feed {
            Feed::Sort(_) => spec.partition.len() + spec.order.len(),
            Feed::Keep(_) => 0,
        };
        let mut stopped = false;
        // The partition's rows, computed, go on to the next specification or out.
        let mut emit = |rows: Vec<Row>, next: &mut Option<Feed>| -> Result<bool> {
            match (next.as_mut(), next_spec) {
                (Some(f), Some(s)) => {
                    for r in rows {
                        f.push(s, r, ctx)?;
                    }
                    Ok(true)
                }
                _ => {
                    let mut it = rows.into_iter().peekable();
                    while it.peek().is_some() {
                        if !sink(it.by_ref().take(BATCH_ROWS).collect())? {
                            return Ok(false);
                        }
                    }
                    Ok(true)
                }
            }
        };
        feed.finish(&mut |batch| {
            for mut r in batch {
                let keys = r.split_off(r.len() - nkeys);
                let (pkey, okey) = keys.split_at(if nkeys == 0 { 0 } else { spec.partition.len() });
                if !part.rows.is_empty() && !same_keys(&part.key, pkey) {
                    let rows = part.compute(spec, ctx)?;
                    if !emit(rows, &mut next)? {
                        stopped = true;
                        return Ok(false);
                    }
                }
                if part.rows.is_empty() {
                    part.key = pkey.to_vec();
                }
                part.rows.push(r);
                part.order.push(okey.to_vec());
            }
            ctx.tick()?;
            Ok(true)
        })?;
        if stopped {
            return Ok(());
        }
        if !part.rows.is_empty() {
            let rows = part.compute(spec, ctx)?;
            if !emit(rows, &mut next)? {
                return Ok(());
            }
        }
        match next {
            Some(f) => feed = f,
            None => break,
        }
    }
    Ok(())
}

fn same_keys(a: &[Value], b: &[Value]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x.total_cmp(y) == Ordering::Equal)
}

#[derive(Default)]
struct Partition {
    key: Vec<Value>,
    rows: Vec<Row>,
    /// Each row's order keys.
    order: Vec<Vec<Value>>,
}

impl Partition {
    /// Fill every call's column of the partition's rows; the rows are taken.
    fn compute(&mut self, spec: &WinSpec, ctx: &ExecCtx) -> Result<Vec<Row>> {
        let m = self.rows.len();
        // Peer groups: rows whose order keys are equal.
        let mut peer_start = vec![0; m];
        let mut peer_end = vec![m; m];
        for i in 1..m {
            peer_start[i] = if same_keys(&self.order[i], &self.order[i - 1]) {
                peer_start[i - 1]
            } else {
                i
            };
        }
        for i in (0..m.saturating_sub(1)).rev() {
            peer_end[i] = if peer_start[i + 1] == peer_start[i] {
                peer_end[i + 1]
            } else {
                i + 1
            };
        }
        let peers = Peers {
            start: &peer_start,
            end: &peer_end,
        };
        for (slot, call) in &spec.calls {
            let vals = self.call_values(call, spec, &peers, ctx)?;
            for (r, v) in self.rows.iter_mut().zip(vals) {
                r[*slot] = v;
            }
        }
        self.order.clear();
        Ok(std::mem::take(&mut self.rows))
    }

    fn call_values(
        &self,
        call: &WinCall,
        spec: &WinSpec,
        peers: &Peers,
        ctx: &ExecCtx,
    ) -> Result<Vec<Value>> {
        let m = self.rows.len();
        let rows = &self.rows;
        let arg = |k: usize, i: usize| -> Result<Value> {
            match call.args.get(k) {
                Some(e) => e.eval(&rows[i], ctx),
                None => Ok(Value::Int(1)),
            }
        };
        let mut out = Vec::with_capacity(m);
        match &call.func {
            WinFunc::RowNumber => out.extend((1..=m as i64).map(Value::Int)),
            WinFunc::Rank => out.extend(peers.start.iter().map(|&s| Value::Int(s as i64 + 1))),
            WinFunc::DenseRank => {
                let mut rank = 0;
                for i in 0..m {
                    if peers.start[i] == i {
                        rank += 1;
                    }
                    out.push(Value::Int(rank));
                }
            }
            WinFunc::PercentRank => out.extend(peers.start.iter().map(|&s| {
                Value::Double(if m > 1 {
                    s as f64 / (m - 1) as f64
                } else {
                    0.0
                })
            })),
            WinFunc::CumeDist => out.extend(
                peers
                    .end
                    .iter()
                    .map(|&e| Value::Double(e as f64 / m as f64)),
            ),
            WinFunc::Ntile => {
                for i in 0..m {
                    let n = arg(0, i)?;
                    if n.is_null() || n.to_i64() <= 0 {
                        return Err(Error::ntile_argument());
                    }
                    out.push(Value::Int(ntile(i, m, n.to_i64() as usize) as i64));
                }
            }
            WinFunc::Lag | WinFunc::Lead => {
                let lead = matches!(call.func, WinFunc::Lead);
                for i in 0..m {
                    let off = arg(1, i)?;
                    if off.is_null() {
                        out.push(Value::Null);
                        continue;
                    }
                    let off = off.to_i64();
                    let at = if lead {
                        (i as i64).checked_add(off)
                    } else {
                        (i as i64).checked_sub(off)
                    };
                    out.push(match at {
                        Some(j) if j >= 0 && (j as usize) < m => arg(0, j as usize)?,
                        _ => Value::Null,
                    });
                }
            }
            WinFunc::FirstValue | WinFunc::LastValue | WinFunc::NthValue => {
                for i in 0..m {
                    let (s, e) = self.frame(&call.frame, spec, i, peers)?;
                    let at = match call.func {
                        WinFunc::FirstValue => (s < e).then_some(s),
                        WinFunc::LastValue => (s < e).then(|| e - 1),
                        _ => {
                            let n = arg(1, i)?;
                            let n = if n.is_null() { 0 } else { n.to_i64() };
                            (n >= 1 && (n as u64) <= (e - s) as u64).then(|| s + n as usize - 1)
                        }
                    };
                    out.push(match at {
                        Some(j) => arg(0, j)?,
                        None => Value::Null,
                    });
                }
            }
            WinFunc::Agg(a) => self.aggregate(a, call, spec, peers, ctx, &mut out)?,
        }
        Ok(out)
    }

    /// An aggregate over each row's frame: added up as the frame grows when it starts at
    /// the partition's first row (or, going backwards, ends at its last); otherwise
    /// recomputed per row (reused while the frame stays the same).
    fn aggregate(
        &self,
        a: &Agg,
        call: &WinCall,
        spec: &WinSpec,
        peers: &Peers,
        ctx: &ExecCtx,
        out: &mut Vec<Value>,
    ) -> Result<()> {
        let m = self.rows.len();
        let frames = (0..m)
            .map(|i| self.frame(&call.frame, spec, i, peers))
            .collect::<Result<Vec<_>>>()?;
        if call.frame.start == FrameBound::UnboundedPreceding {
            let mut st = AggState::new(a);
            let (mut added, mut last) = (0, None);
            for &(_, e) in &frames {
                if last.is_some() && added >= e {
                    out.push(last.clone().unwrap_or(Value::Null));
                    continue;
                }
                while added < e {
                    st.update(a, &self.rows[added], ctx)?;
                    added += 1;
                }
                let v = st.clone().finish(a, ctx);
                last = Some(v.clone());
                out.push(v);
            }
        } else if call.frame.end == FrameBound::UnboundedFollowing {
            let mut st = AggState::new(a);
            let (mut from, mut last) = (m, None);
            let mut back = Vec::with_capacity(m);
            for &(s, _) in frames.iter().rev() {
                if last.is_some() && from <= s {
                    back.push(last.clone().unwrap_or(Value::Null));
                    continue;
                }
                while from > s {
                    from -= 1;
                    st.update(a, &self.rows[from], ctx)?;
                }
                let v = st.clone().finish(a, ctx);
                last = Some(v.clone());
                back.push(v);
            }
            out.extend(back.into_iter().rev());
        } else {
            let mut last: Option<((usize, usize), Value)> = None;
            for &(s, e) in &frames {
                if let Some((f, v)) = &last {
                    if *f == (s, e) {
                        out.push(v.clone());
                        continue;
                    }
                }
                let mut st = AggState::new(a);
                for r in &self.rows[s..e] {
                    st.update(a, r, ctx)?;
                }
                let v = st.finish(a, ctx);
                last = Some(((s, e), v.clone()));
                out.push(v);
            }
        }
        Ok(())
    }

    /// Row `i`'s frame as the half-open range of partition rows it covers.
    fn frame(
        &self,
        frame: &Frame,
        spec: &WinSpec,
        i: usize,
        peers: &Peers,
    ) -> Result<(usize, usize)> {
        let m = self.rows.len();
        let (s, e) = if frame.rows {
            let at = |b: &FrameBound, end: bool| -> i64 {
                let i = i as i64 + end as i64;
                match b {
                    FrameBound::UnboundedPreceding => 0,
                    FrameBound::UnboundedFollowing => m as i64,
                    FrameBound::CurrentRow => i,
                    FrameBound::Preceding(k) => i.saturating_sub(k.to_i64()),
                    FrameBound::Following(k) => i.saturating_add(k.to_i64()),
                }
            };
            let clamp = |x: i64| x.clamp(0, m as i64) as usize;
            (clamp(at(&frame.start, false)), clamp(at(&frame.end, true)))
        } else {
            (
                self.range_bound(&frame.start, false, spec, i, peers)?,
                self.range_bound(&frame.end, true, spec, i, peers)?,
            )
        };
        Ok((s, e.max(s)))
    }

    /// A RANGE frame's start (or, with `end`, its end, exclusive) for row `i`: rows whose
    /// single order key lies within the offset of row `i`'s (a NULL key: its peers).
    fn range_bound(
        &self,
        b: &FrameBound,
        end: bool,
        spec: &WinSpec,
        i: usize,
        peers: &Peers,
    ) -> Result<usize> {
        let m = self.rows.len();
        let (k, following) = match b {
            FrameBound::UnboundedPreceding => return Ok(0),
            FrameBound::UnboundedFollowing => return Ok(m),
            FrameBound::CurrentRow => return Ok(if end { peers.end[i] } else { peers.start[i] }),
            FrameBound::Preceding(k) => (k, false),
            FrameBound::Following(k) => (k, true),
        };
        let v = &self.order[i][0];
        if v.is_null() {
            return Ok(if end { peers.end[i] } else { peers.start[i] });
        }
        let desc = spec.order.first().is_some_and(|(_, d)| *d);
        // Towards the end of the sort order is + for ascending keys, - for descending.
        let op = if following != desc {
            BinOp::Add
        } else {
            BinOp::Sub
        };
        let t = binary(op, v, k)?;
        // NULL keys sort below every value (first ascending, last descending).
        let cmp = |x: &Value| -> Ordering {
            if x.is_null() {
                Ordering::Less
            } else {
                x.total_cmp(&t)
            }
        };
        let keys = &self.order;
        Ok(match (end, desc) {
            // First row at or after t in sort order.
            (false, false) => keys.partition_point(|r| cmp(&r[0]) == Ordering::Less),
            (false, true) => keys.partition_point(|r| cmp(&r[0]) == Ordering::Greater),
            // First row past t in sort order.
            (true, false) => keys.partition_point(|r| cmp(&r[0]) != Ordering::Greater),
            (true, true) => keys.partition_point(|r| cmp(&r[0]) != Ordering::Less),
        })
    }
}

struct Peers<'a> {
    /// Each row's first peer.
    start: &'a [usize],
    /// Each row's last peer + 1.
    end: &'a [usize],
}

/// Row `i`'s bucket (1-based) of `n` over `m` rows: the first `m % n` buckets hold one
/// row more.
fn ntile(i: usize, m: usize, n: usize) -> usize {
    let (q, r) = (m / n, m % n);
    if q == 0 {
        return i + 1;
    }
    let big = r * (q + 1);
    if i < big {
        i / (q + 1) + 1
    } else {
        r + (i - big) / q + 1
    }
}

#[cfg(test)]
mod tests {
    use super::ntile;

    #[test]
    fn ntile_gives_the_first_buckets_the_extra_rows() {
        let buckets: Vec<usize> = (0..7).map(|i| ntile(i, 7, 3)).collect();
        assert_eq!(buckets, [1, 1, 1, 2, 2, 3, 3]);
        let buckets: Vec<usize> = (0..3).map(|i| ntile(i, 3, 5)).collect();
        assert_eq!(buckets, [1, 2, 3]);
    }
}
