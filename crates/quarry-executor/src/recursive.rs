//! Running a recursive CTE (`Plan::Recursive`): the anchors' rows, then round after round
//! the steps' rows over the rows the round before made, which `Plan::WorkTable` hands out
//! through the statement's context. Rounds stop when one adds nothing or after
//! `max_recursive_iterations` of them (warning 1931, as MariaDB: the result may be
//! incomplete). UNION DISTINCT drops rows made before; MariaDB's `CYCLE … RESTRICT`
//! drops rows whose values in the cycle columns were made before. Owns: the rounds and
//! the rows seen. Must not touch: how the parts run.

use std::collections::HashSet;
use std::rc::Rc;

use quarry_common::{Error, Result, Row};

use crate::exec::{run, ExecCtx, Sink, BATCH_ROWS};
use crate::plan::Plan;

/// Run `plan`, a `Plan::Recursive`.
pub(crate) fn run_recursive(plan: &Plan, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    let Plan::Recursive {
        anchors,
        steps,
        distinct,
        colls,
        cycle,
        id,
    } = plan
    else {
        return Err(Error::internal("a recursive CTE's run given another plan"));
    };
    let (distinct, id) = (*distinct, *id);
    let limit = ctx
        .session
        .sys_var("max_recursive_iterations")
        .map_or(1000, |v| v.to_i64().max(0) as u64);
    // The keys of the rows made so far (UNION DISTINCT), in memory: COMPAT.md.
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut k = Vec::new();
    // CYCLE's columns are the key where there are some: rows equal in them are equal rows.
    let mut keep = |r: &Row| {
        k.clear();
        if !cycle.is_empty() {
            for &c in cycle {
                r[c].hash_key_in(colls.get(c).copied().unwrap_or_default(), &mut k);
            }
        } else if distinct {
            crate::distinct::row_key(r, colls, &mut k);
        } else {
            return true;
        }
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
