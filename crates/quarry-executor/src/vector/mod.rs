//! Vectorised execution (issue 20, docs/design/vectorised-execution.md), first slice:
//! GROUP BY columns with COUNT, SUM, AVG, MIN and MAX of arithmetic over a table scan,
//! evaluated a column vector at a time: from the engine's [`Table::scan_columns`] batches
//! (over both cores) when the scan's whole condition went to the engine and the engine
//! offers vectors, else from the rows the scan gives, turned into vectors a batch at a
//! time (row tables, conditions the executor checks, snapshots that hide rows).
//!
//! The answer is the row path's by construction, or not given: anything outside the
//! compiled shapes, a value that would raise an error or a warning, or more groups
//! than the aggregation buffer holds open at once (groups.rs closes those of clustered
//! keys as it goes) — and [`aggregate`] returns None before sending
//! anything, so the caller aggregates rows instead (from the start: nothing is merged).
//!
//! Must not touch: plans and their choice (the caller tries this first), the row path's
//! states beyond building them at the end.
//!
//! [`Table::scan_columns`]: quarry_storage_api::Table::scan_columns

mod groups;
mod kernel;
mod states;

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;

use quarry_common::{Error, Result, Row, Value};
use quarry_storage_api::vector::arrow_array::ArrayRef;
use quarry_storage_api::{ColumnCursor, HandlerCounters, ScanRequest, VectorType};

use crate::exec::ExecCtx;
use crate::expr::Expr;
use crate::plan::{Access, Agg, Plan};
use groups::Groups;
use kernel::{Kernel, Ty};
use states::VecAgg;

/// Bytes a group's aggregate state takes, as counted against the aggregation buffer.
const STATE_BYTES: usize = 32;

/// One run of the scan's rows aggregated: its groups, the aggregates' states, its rows.
struct Run {
    groups: Groups,
    aggs: Vec<VecAgg>,
    rows: u64,
}

/// GROUP BY `group` with `aggs` over `input` on vectors: the groups' rows (values, then
/// aggregates, first met first), or None when the row path must answer.
pub(crate) fn aggregate(
    input: &Plan,
    group: &[Expr],
    aggs: &[Agg],
    ctx: &ExecCtx,
) -> Result<Option<Vec<Row>>> {
    if !ctx.vectors {
        return Ok(None);
    }
    // A whole table's rows: a few rows through an index (a correlated subquery's, say) are
    // aggregated faster than vectors are set up for them.
    let Plan::Scan {
        table,
        access: Access::Full,
        ..
    } = input
    else {
        return Ok(None);
    };
    let schema = table.handle.schema();
    // Table columns read, in slot order.
    let mut read: Vec<usize> = Vec::new();
    for e in group.iter().chain(aggs.iter().flat_map(|a| a.args.iter())) {
        e.walk(&mut |x| {
            if let Expr::Col(c) = x {
                read.push(*c);
            }
        });
    }
    read.sort_unstable();
    read.dedup();
    let slot = |c: usize| -> Option<(usize, Ty)> {
        let s = read.binary_search(&c).ok()?;
        let ty = VectorType::of(&schema.columns.get(c)?.ty)?;
        Some((s, Ty::of(ty)))
    };
    let Some(by) = group
        .iter()
        .map(|g| {
            let (c, coll) = match g {
                Expr::Col(c) => (*c, None),
                Expr::Collate(inner, coll) => match **inner {
                    Expr::Col(c) => (c, Some(*coll)),
                    _ => return None,
                },
                _ => return None,
            };
            Some((slot(c)?.0, coll))
        })
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let compile = |e: &Expr| Kernel::compile(e, &slot);
    let states = || {
        aggs.iter()
            .map(|a| VecAgg::new(a, &compile))
            .collect::<Option<Vec<_>>>()
    };
    let Some(first) = states() else {
        return Ok(None);
    };
    if read.is_empty() {
        // COUNT(*) alone reads no column: the engine's count answers it.
        return Ok(None);
    }
    let Some(types) = read
        .iter()
        .map(|&c| VectorType::of(&schema.columns[c].ty))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let parts = if first.iter().any(VecAgg::needs_one_run) {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    };
    // The engine's vectors when its scan can give them; else the rows the plan's scan
    // gives (any engine, access path and condition), turned into vectors batch by batch.
    // (The row engine takes no conditions in plans, so its EXPLAIN reads as MariaDB's,
    // but checks any condition a scan hands it.)
    let cursors = match crate::exec::engine_checked(input, ctx, true)? {
        Some((table, req)) => {
            let req = ScanRequest {
                columns: Some(read.clone()),
                ..req
            };
            table.handle.scan_columns(&req, parts)?
        }
        None => None,
    };
    // One integer column: its vectors are `Int64Array`s, whoever makes them.
    let int_column = matches!(by.as_slice(), [(s, None)] if types[*s] == VectorType::Int);
    let width = group.len() + aggs.len();
    let new_run = |aggs| Run {
        groups: Groups::new(by.clone(), width, int_column),
        aggs,
        rows: 0,
    };
    let done = match cursors {
        Some(cursors) => {
            let mut first = Some(first);
            // Each run may hold the whole buffer: a run's groups are some of the total's,
            // so none passes the buffer unless the total would (checked once merged), and
            // a share of it each gave up on 100 000 scattered keys (TPC-H Q13's orders)
            // that the row path holds without spilling. Memory is up to a buffer a run
            // for that while.
            let budget = ctx.agg_buffer;
            let jobs = cursors
                .into_iter()
                .map(|c| {
                    let aggs = first.take().or_else(states).expect("compiled once already");
                    (c, new_run(aggs))
                })
                .collect();
            in_parallel(jobs, budget, ctx)?
        }
        None => vec![from_rows(input, &read, &types, new_run(first), ctx)?],
    };
    let Some(mut runs) = done.into_iter().collect::<Option<Vec<Run>>>() else {
        return Ok(None);
    };
    let mut total = runs.remove(0);
    for run in runs {
        let Ok(map) = total.groups.absorb(run.groups) else {
            return Ok(None);
        };
        for (t, o) in total.aggs.iter_mut().zip(run.aggs) {
            t.grow(total.groups.len());
            if !t.absorb(o, &map) {
                return Ok(None);
            }
        }
        total.rows += run.rows;
    }
    let over = |g: &Groups| g.used + g.open() * STATE_BYTES * aggs.len() > ctx.agg_buffer;
    // Every row is in: groups met in increasing order are final, as a run closes them
    // when it passes the buffer. Runs that each stayed under it leave theirs open (TPC-H
    // Q18's 150 000 orders at SF 0.1, in two runs), and would otherwise fail here.
    if over(&total.groups) && (!total.groups.close_passed() || over(&total.groups)) {
        return Ok(None);
    }
    HandlerCounters::add(&ctx.catalog.counters.vector_rows, total.rows);
    let mut out = Vec::with_capacity(total.groups.len());
    for (g, mut row) in total.groups.take_values().into_iter().enumerate() {
        for (a, v) in aggs.iter().zip(total.aggs.iter_mut()) {
            row.push(v.state_of(g).finish(a, ctx));
        }
        out.push(row);
    }
    Ok(Some(out))
}

/// Each cursor's run aggregated on a thread of its own (the first on this one, which
/// checks for KILL and timeouts as it goes and stops the others), results in run order.
fn in_parallel(
    jobs: Vec<(Box<dyn ColumnCursor + Send + '_>, Run)>,
    budget: usize,
    ctx: &ExecCtx,
) -> Result<Vec<Option<Run>>> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| -> Result<Vec<Option<Run>>> {
        let mut jobs = jobs.into_iter();
        let (mine, mine_run) = jobs.next().expect("one cursor at least");
        let others: Vec<_> = jobs
            .map(|(c, r)| {
                let stop = &stop;
                s.spawn(move || aggregate_run(c, r, budget, &|| Ok(!stop.load(Relaxed))))
            })
            .collect();
        let check = || match ctx.check_killed() {
            Ok(()) => Ok(!stop.load(Relaxed)),
            Err(e) => {
                stop.store(true, Relaxed);
                Err(e)
            }
        };
        let mine = aggregate_run(mine, mine_run, budget, &check);
        if !matches!(mine, Ok(Some(_))) {
            stop.store(true, Relaxed);
        }
        let mut out = vec![mine?];
        for h in others {
            while !h.is_finished() {
                check()?;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let r = h
                .join()
                .unwrap_or_else(|_| Err(Error::internal("vector aggregation worker panicked")));
            out.push(r?);
        }
        Ok(out)
    })
}

/// Aggregate the batches of one cursor into `run`; None when the row path must answer
/// (or `go` says to stop).
fn aggregate_run(
    mut cursor: Box<dyn ColumnCursor + Send + '_>,
    mut run: Run,
    budget: usize,
    go: &dyn Fn() -> Result<bool>,
) -> Result<Option<Run>> {
    let mut gid = Vec::new();
    while let Some(b) = cursor.next_columns()? {
        if !go()? || !step(&mut run, &b.columns, b.rows, &mut gid, budget) {
            return Ok(None);
        }
    }
    Ok(Some(run))
}

/// Aggregate the rows `input` gives (the columns `read`, as `types`) into `run`, a batch
/// at a time; None when the row path must answer (a value that is no value of its
/// column's vector type included).
fn from_rows(
    input: &Plan,
    read: &[usize],
    types: &[VectorType],
    mut run: Run,
    ctx: &ExecCtx,
) -> Result<Option<Run>> {
    let mut gid = Vec::new();
    let mut gave_up = false;
    // The row path starting over warns again of what the scan's condition warned of.
    let warned = ctx.warnings.borrow().len();
    crate::exec::run(input, ctx, &mut |batch| {
        ctx.check_killed()?;
        let cols = read
            .iter()
            .zip(types)
            .map(|(&c, ty)| ty.array_of(batch.iter().map(|r| r.get(c).unwrap_or(&Value::Null))))
            .collect::<Result<Vec<_>>>();
        let go = match cols {
            Ok(cols) => step(&mut run, &cols, batch.len(), &mut gid, ctx.agg_buffer),
            Err(_) => false,
        };
        gave_up |= !go;
        Ok(go)
    })?;
    if gave_up {
        ctx.warnings.borrow_mut().truncate(warned);
        return Ok(None);
    }
    Ok(Some(run))
}

/// One batch into `run`: false when the row path must answer.
fn step(run: &mut Run, cols: &[ArrayRef], rows: usize, gid: &mut Vec<u32>, budget: usize) -> bool {
    run.rows += rows as u64;
    if run.groups.assign(cols, rows, gid).is_err() {
        return false;
    }
    let over = |g: &Groups| g.used + g.open() * STATE_BYTES * run.aggs.len() > budget;
    // Past the buffer: closing the groups a clustered scan has passed may bring it back.
    if over(&run.groups) && (!run.groups.close_passed() || over(&run.groups)) {
        return false;
    }
    for v in run.aggs.iter_mut() {
        v.grow(run.groups.len());
        if !v.update(cols, gid, rows) {
            return false;
        }
    }
    true
}
