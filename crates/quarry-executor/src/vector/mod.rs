//! Vectorised execution (issue 20, docs/design/vectorised-execution.md), first slice:
//! GROUP BY columns with COUNT, SUM, AVG, MIN and MAX of arithmetic over a table scan whose
//! whole condition went to the engine, evaluated a column vector at a time from the
//! engine's [`Table::scan_columns`] batches.
//!
//! The answer is the row path's by construction, or not given: anything outside the
//! compiled shapes, a table that offers no vectors (a row table; a column table whose
//! snapshot hides rows), a value that would raise an error or a warning, or more groups
//! than the aggregation buffer holds — and [`aggregate`] returns None before sending
//! anything, so the caller aggregates rows instead (from the start: nothing is merged).
//!
//! Must not touch: plans and their choice (the caller tries this first), the row path's
//! states beyond building them at the end.
//!
//! [`Table::scan_columns`]: quarry_storage_api::Table::scan_columns

mod groups;
mod kernel;
mod states;

use quarry_common::{Result, Row};
use quarry_storage_api::{HandlerCounters, ScanRequest, VectorType};

use crate::exec::ExecCtx;
use crate::expr::Expr;
use crate::plan::{Agg, Plan};
use groups::Groups;
use kernel::{Kernel, Ty};
use states::VecAgg;

/// Bytes a group's aggregate state takes, as counted against the aggregation buffer.
const STATE_BYTES: usize = 32;

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
    let Some((table, req)) = crate::exec::fully_pushed(input, ctx)? else {
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
            let c = match g {
                Expr::Col(c) => *c,
                Expr::Collate(inner, _) => match **inner {
                    Expr::Col(c) => c,
                    _ => return None,
                },
                _ => return None,
            };
            Some((slot(c)?.0, g))
        })
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let compile = |e: &Expr| Kernel::compile(e, &slot);
    let Some(mut vaggs) = aggs
        .iter()
        .map(|a| VecAgg::new(a, &compile))
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    if read.is_empty() {
        // COUNT(*) alone reads no column: the engine's count answers it.
        return Ok(None);
    }
    let req = ScanRequest {
        columns: Some(read.clone()),
        ..req
    };
    let Some(mut cursor) = table.handle.scan_columns(&req)? else {
        return Ok(None);
    };
    let mut groups = Groups::new(by);
    let mut gid = Vec::new();
    let mut rows = 0u64;
    while let Some(b) = cursor.next_columns()? {
        ctx.check_killed()?;
        rows += b.rows as u64;
        groups.assign(&b.columns, b.rows, &mut gid);
        if groups.used + groups.len() * STATE_BYTES * aggs.len() > ctx.agg_buffer {
            return Ok(None);
        }
        for v in vaggs.iter_mut() {
            v.grow(groups.len());
            if !v.update(&b.columns, &gid, b.rows) {
                return Ok(None);
            }
        }
    }
    HandlerCounters::add(&ctx.catalog.counters.vector_rows, rows);
    let mut out = Vec::with_capacity(groups.len());
    for (g, mut row) in std::mem::take(&mut groups.values).into_iter().enumerate() {
        for (a, v) in aggs.iter().zip(vaggs.iter_mut()) {
            row.push(v.state_of(g).finish(a, ctx));
        }
        out.push(row);
    }
    Ok(Some(out))
}
