//! The rows of a CTE the statement reads more than once (`Plan::Shared`). The first read
//! runs the CTE's query to the end and keeps its rows; it and the other reads are handed
//! them, and the query does not run again. Rows past `tmp_table_size` are not kept: that
//! read hands on what it has and then the rest as it comes, and every later read runs
//! the query itself. The planner shares only CTEs whose rows cannot differ between two
//! runs in one statement (no RAND(), no enclosing query's columns), so the answers are
//! those of running each read.
//!
//! Owns: the copies, for the statement. Must not touch: how the query runs.

use std::rc::Rc;

use quarry_common::{Result, Row};

use crate::exec::{run, ExecCtx, Sink, BATCH_ROWS};
use crate::plan::Plan;
use crate::recursive::emit;
use crate::sort::approx_size;

/// What the reads of a shared CTE found so far.
#[derive(Clone)]
pub enum SharedRows {
    /// Its rows, made by a read that ran to the end.
    Rows(Rc<Vec<Row>>),
    /// They took more than `tmp_table_size`: each read runs the query.
    TooBig,
}

pub(crate) fn run_shared(id: usize, input: &Plan, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    let found = ctx.ctes.borrow().get(&id).cloned();
    match found {
        Some(SharedRows::Rows(rows)) => {
            emit(&rows, sink)?;
            return Ok(());
        }
        Some(SharedRows::TooBig) => return run(input, ctx, sink),
        None => {}
    }
    // Every row is made before the first is handed on: what reads the rows may read the
    // CTE again (a subquery in a condition on them), and then finds them made.
    let mut copy = Some(Vec::new());
    let mut bytes = 0usize;
    run(input, ctx, &mut |batch| {
        let Some(rows) = &mut copy else {
            return sink(batch);
        };
        bytes += batch.iter().map(|r| approx_size(r)).sum::<usize>();
        rows.extend(batch);
        if bytes <= ctx.agg_buffer {
            return Ok(true);
        }
        ctx.ctes.borrow_mut().insert(id, SharedRows::TooBig);
        let rows = copy.take().unwrap_or_default();
        let mut rows = rows.into_iter();
        loop {
            let chunk: Vec<Row> = rows.by_ref().take(BATCH_ROWS).collect();
            if chunk.is_empty() {
                return Ok(true);
            }
            if !sink(chunk)? {
                return Ok(false);
            }
        }
    })?;
    if let Some(rows) = copy {
        let rows = Rc::new(rows);
        ctx.ctes
            .borrow_mut()
            .insert(id, SharedRows::Rows(rows.clone()));
        emit(&rows, sink)?;
    }
    Ok(())
}
