//! Running a recursive CTE (`Plan::Recursive`): the anchors' rows, then round after round
//! the steps' rows over the rows the round before made, which `Plan::WorkTable` hands out
//! through the statement's context. Rounds stop when one adds nothing or after
//! `max_recursive_iterations` of them (warning 1931, as MariaDB: the result may be
//! incomplete). Owns: the rounds and the rows seen. Must not touch: how the parts run.

use std::collections::HashSet;
use std::rc::Rc;

use quarry_common::{Collation, Result, Row};

use crate::exec::{run, ExecCtx, Sink, BATCH_ROWS};
use crate::plan::Plan;

pub(crate) fn run_recursive(
    anchors: &[Plan],
    steps: &[Plan],
    distinct: bool,
    colls: &[Collation],
    id: usize,
    ctx: &ExecCtx,
    sink: &mut Sink,
) -> Result<()> {
    let limit = ctx
        .session
        .sys_var("max_recursive_iterations")
        .map_or(1000, |v| v.to_i64().max(0) as u64);
    // The keys of the rows made so far (UNION DISTINCT), in memory: COMPAT.md.
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut k = Vec::new();
    let mut keep = |r: &Row| {
        if !distinct {
            return true;
        }
        k.clear();
        crate::distinct::row_key(r, colls, &mut k);
        !seen.contains(&k) && seen.insert(k.clone())
    };
    let mut round: Vec<Row> = vec![];
    for p in anchors {
        run(p, ctx, &mut |b| {
            round.extend(b.into_iter().filter(|r| keep(r)));
            Ok(true)
        })?;
    }
    let mut rounds = 0u64;
    loop {
        if !emit(&round, sink)? || round.is_empty() {
            break;
        }
        if rounds == limit {
            ctx.warn(
                1931,
                format!(
                    "Query execution was interrupted. The query exceeded \
                     max_recursive_iterations = {limit}. The query result may be incomplete"
                ),
            );
            break;
        }
        rounds += 1;
        ctx.work_tables
            .borrow_mut()
            .insert(id, Rc::new(std::mem::take(&mut round)));
        let mut next = vec![];
        for p in steps {
            run(p, ctx, &mut |b| {
                ctx.tick()?;
                next.extend(b.into_iter().filter(|r| keep(r)));
                Ok(true)
            })?;
        }
        round = next;
    }
    ctx.work_tables.borrow_mut().remove(&id);
    Ok(())
}

/// `rows` to the sink in batches; false when it wants no more.
pub(crate) fn emit(rows: &[Row], sink: &mut Sink) -> Result<bool> {
    for chunk in rows.chunks(BATCH_ROWS) {
        if !sink(chunk.to_vec())? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The rows the last round of recursive CTE `id` made.
pub(crate) fn run_work_table(id: usize, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    let rows = ctx.work_tables.borrow().get(&id).cloned();
    if let Some(rows) = rows {
        emit(&rows, sink)?;
    }
    Ok(())
}
