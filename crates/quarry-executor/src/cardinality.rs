//! Cardinality estimates: the rows a plan, a table or an index access path is expected
//! to give, from the engines' statistics (row counts, index distinct counts,
//! `records_in_range`, a column engine's sampled counts). The optimizer and the join
//! order cost their choices with these; EXPLAIN shows them.
//!
//! Must not touch: the choices themselves (`optimize`, `joinorder`).

use std::ops::Bound;

use quarry_catalog::TableEntry;
use quarry_common::Value;
use quarry_storage_api::Stat;

use crate::exec::bound_ref;
use crate::expr::{BinOp, Expr};
use crate::plan::width;
use crate::plan::{Access, JoinKind, Plan};

pub fn table_rows(table: &TableEntry) -> f64 {
    match table.handle.stats().rows {
        Stat::Exact(n) | Stat::Estimated(n) => n as f64,
        Stat::Unknown => 1000.0,
    }
}

fn lit(e: &Expr) -> Option<&Value> {
    match e {
        Expr::Lit(v) if !v.is_null() => Some(v),
        _ => None,
    }
}

/// Rows an index access path reads, from `records_in_range` when its bounds are literals;
/// None when they are not known before execution.
pub fn access_estimate(table: &TableEntry, access: &Access) -> Option<f64> {
    let est = |index: usize, lo: Bound<&[Value]>, hi: Bound<&[Value]>| match table
        .handle
        .records_in_range(index, lo, hi)
        .ok()?
    {
        Stat::Exact(n) | Stat::Estimated(n) => Some(n as f64),
        Stat::Unknown => None,
    };
    match access {
        Access::Full => Some(table_rows(table)),
        Access::Keys { index, keys } => {
            let mut total = 0.0;
            for k in keys {
                let vals: Option<Vec<Value>> = k.iter().map(|e| lit(e).cloned()).collect();
                let vals = crate::exec::key_values(table, *index, vals?)?;
                total += est(*index, Bound::Included(&vals), Bound::Included(&vals))?;
            }
            Some(total)
        }
        Access::Ranges { index, ranges } => {
            let mut total = 0.0;
            for (lo, hi) in ranges {
                let b = |x: &Option<(Expr, bool)>| -> Option<Bound<Vec<Value>>> {
                    Some(match x {
                        None => Bound::Unbounded,
                        Some((e, incl)) => {
                            let v = crate::exec::key_values(table, *index, vec![lit(e)?.clone()])
                                .unwrap_or_else(|| vec![lit(e).unwrap().clone()]);
                            if *incl {
                                Bound::Included(v)
                            } else {
                                Bound::Excluded(v)
                            }
                        }
                    })
                };
                let (lo, hi) = (b(lo)?, b(hi)?);
                let lo = crate::exec::above_nulls(lo, &hi);
                total += est(*index, bound_ref(&lo), bound_ref(&hi))?;
            }
            Some(total)
        }
    }
}

/// Estimated rows a plan produces (None when it cannot tell).
pub fn estimate_rows(plan: &Plan) -> Option<f64> {
    match plan {
        Plan::Dual => Some(1.0),
        Plan::Values(v) => Some(v.len() as f64),
        Plan::Scan {
            table,
            filter,
            pushed,
            access,
            ..
        } => {
            // A column table's engine counts a sample for the conditions it can take.
            if let Some((n, rest)) = engine_counted(table, access, filter, pushed) {
                return Some(if rest { n * UNKNOWN_FILTER } else { n });
            }
            // Conditions the engine checks (`pushed`) filter as much as those left here.
            let filtered = filter.is_some() || pushed.is_some();
            let base = access_estimate(table, access)
                .unwrap_or_else(|| table_rows(table) * if filtered { 0.1 } else { 1.0 });
            let residual = filtered && matches!(access, Access::Full);
            Some(if residual {
                base * UNKNOWN_FILTER
            } else {
                base
            })
        }
        Plan::Filter { input, .. } => Some(estimate_rows(input)? * UNKNOWN_FILTER),
        Plan::Project { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Distinct { input, .. }
        | Plan::Window { input, .. } => estimate_rows(input),
        Plan::Limit { input, limit, .. } => {
            let n = estimate_rows(input)?;
            Some(limit.map_or(n, |l| n.min(l as f64)))
        }
        Plan::Aggregate { input, group, .. } => {
            if group.is_empty() {
                Some(1.0)
            } else {
                Some((estimate_rows(input)? / 10.0).max(1.0))
            }
        }
        // A semi or anti join keeps some of its left rows: half, when nothing tells.
        Plan::Join { left, kind, .. } | Plan::IndexJoin { left, kind, .. } if kind.left_only() => {
            Some((estimate_rows(left)? * 0.5).max(1.0))
        }
        Plan::Join {
            left,
            right,
            left_keys,
            right_keys,
            kind,
            ..
        } => {
            let (l, r) = (estimate_rows(left)?, estimate_rows(right)?);
            if left_keys.is_empty() {
                return Some(l * r);
            }
            let inner = equi_join_rows(left, right, left_keys, right_keys, l, r);
            Some(match kind {
                JoinKind::Inner => inner,
                // Every left row at least once.
                _ => inner.max(l),
            })
        }
        Plan::IndexJoin {
            left,
            table,
            index,
            keys,
            ..
        } => Some(estimate_rows(left)? * rows_per_key(table, *index, keys.len())),
        Plan::Union { inputs, .. } => inputs.iter().map(estimate_rows).sum(),
        Plan::SetOp { left, .. } => estimate_rows(left),
        // Unknown rounds: as if each step ran ten times over the anchors' rows.
        Plan::Recursive { anchors, steps, .. } => {
            let first: f64 = anchors.iter().map(estimate_rows).sum::<Option<f64>>()?;
            Some(first * (1.0 + 10.0 * steps.len() as f64))
        }
        Plan::WorkTable { .. } => None,
        Plan::Shared { input, .. } => estimate_rows(input),
    }
}

/// Rows per distinct value of the first `parts` columns of an index.
pub fn rows_per_key(table: &TableEntry, ii: usize, parts: usize) -> f64 {
    let ix = &table.def.indexes[ii];
    if ix.unique && parts == ix.columns.len() {
        return 1.0;
    }
    let rows = table_rows(table);
    match table.handle.index_distinct(ii) {
        Ok(d) => match d.get(parts.saturating_sub(1)) {
            Some(Stat::Exact(n) | Stat::Estimated(n)) if *n > 0 => (rows / *n as f64).max(1.0),
            _ => 10.0,
        },
        Err(_) => 10.0,
    }
}

/// A full scan with conditions: the rows its engine estimates for the conditions it can
/// (a column table counts a sample of its chunks, a row table checks a sample of its
/// rows), and whether others are left (their share is not known).
fn engine_counted(
    table: &TableEntry,
    access: &Access,
    filter: &Option<Expr>,
    pushed: &Option<Expr>,
) -> Option<(f64, bool)> {
    if !matches!(access, Access::Full) {
        return None;
    }
    let cond = match (filter, pushed) {
        (Some(f), Some(p)) => Expr::Bin(BinOp::And, Box::new(p.clone()), Box::new(f.clone())),
        (f, p) => f.clone().or_else(|| p.clone())?,
    };
    crate::pushdown::engine_estimate(table, &cond)
}

/// Rows a scan keeps by the conditions whose share is known — its index ranges, or what
/// a column table's engine counts — taking the others as keeping every row: the rows a
/// hash join's table built on it would hold, at most.
pub fn scan_rows_known(plan: &Plan) -> Option<f64> {
    let Plan::Scan {
        table,
        access,
        filter,
        pushed,
        ..
    } = plan
    else {
        return None;
    };
    match engine_counted(table, access, filter, pushed) {
        Some((n, _)) => Some(n),
        None => access_estimate(table, access),
    }
}

/// Rows of an equi-join of `l` and `r` estimated rows: each equality keeps
/// `1 / max(distinct values of its sides)` of the pairs (distinct counts from index
/// statistics where an index of the column's table leads with it, else the side's rows:
/// taken as unique). Several equalities between the same two tables (`ps_partkey =
/// l_partkey AND ps_suppkey = l_suppkey`) are seldom independent — together they are
/// usually one side's key — so their product is floored at one match per row of the
/// smaller of the two tables; the join order floors it at the smaller table's rows that
/// pass its own conditions. (Floored at one per row of the smaller input instead, TPC-H
/// Q9's lineitem rows of green parts joined with all of partsupp came out as partsupp's
/// 800 000 rows for 320 000, and the join with orders after it was costed for two and a
/// half times the probes it makes.)
fn equi_join_rows(
    left: &Plan,
    right: &Plan,
    left_keys: &[Expr],
    right_keys: &[Expr],
    l: f64,
    r: f64,
) -> f64 {
    let side = |plan: &Plan, key: &Expr, rows: f64| -> (Option<Origin>, f64) {
        match key {
            Expr::Col(c) => match column_distinct(plan, *c) {
                Some(o) => (Some(o), o.distinct.clamp(1.0, rows.max(1.0))),
                None => (None, rows),
            },
            _ => (None, rows),
        }
    };
    // Per pair of tables: their ids, the product of their equalities' selectivities, how
    // many equalities, the smaller table's rows.
    let mut groups: Vec<((usize, usize), f64, usize, f64)> = Vec::new();
    let mut selectivity = 1.0;
    for (lk, rk) in left_keys.iter().zip(right_keys) {
        let (lo, ld) = side(left, lk, l);
        let (ro, rd) = side(right, rk, r);
        let s = 1.0 / ld.max(rd).max(1.0);
        match lo.zip(ro) {
            Some((lo, ro)) => {
                let pair = (lo.table, ro.table);
                match groups.iter_mut().find(|g| g.0 == pair) {
                    Some(g) => {
                        g.1 *= s;
                        g.2 += 1;
                    }
                    None => groups.push((pair, s, 1, lo.rows.min(ro.rows))),
                }
            }
            None => selectivity *= s,
        }
    }
    for (_, s, n, smaller) in groups {
        selectivity *= if n > 1 {
            s.max(1.0 / smaller.max(1.0))
        } else {
            s
        };
    }
    (l * r * selectivity).max(1.0)
}

/// Where a column of a plan's rows comes from: a table (by identity), with the column's
/// distinct values and the table's rows.
#[derive(Clone, Copy)]
struct Origin {
    table: usize,
    distinct: f64,
    rows: f64,
}

/// The origin of a column of `plan`'s rows, when the column is a table's column with an
/// index leading with it.
fn column_distinct(plan: &Plan, col: usize) -> Option<Origin> {
    match plan {
        Plan::Scan { table, .. } => table_column(table, col),
        Plan::Join { left, kind, .. } | Plan::IndexJoin { left, kind, .. }
            if kind.left_only() || col < width(left)? =>
        {
            column_distinct(left, col)
        }
        Plan::Join { left, right, .. } => column_distinct(right, col - width(left)?),
        Plan::IndexJoin { left, table, .. } => table_column(table, col - width(left)?),
        Plan::Filter { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Shared { input, .. } => column_distinct(input, col),
        Plan::Project { input, exprs } => match exprs.get(col)? {
            Expr::Col(c) => column_distinct(input, *c),
            _ => None,
        },
        _ => None,
    }
}

/// The origin of `table`'s column `col`.
fn table_column(table: &std::sync::Arc<TableEntry>, col: usize) -> Option<Origin> {
    let id = std::sync::Arc::as_ptr(table) as *const () as usize;
    table_distinct(table, col).map(|distinct| Origin {
        table: id,
        distinct,
        rows: table_rows(table),
    })
}

/// Distinct values of a table's column, from an index that leads with it.
pub fn table_distinct(table: &TableEntry, col: usize) -> Option<f64> {
    let rows = table_rows(table);
    table
        .def
        .indexes
        .iter()
        .enumerate()
        .filter(|(_, ix)| ix.columns.first() == Some(&col) && ix.prefix.first() == Some(&0))
        .map(|(ii, _)| rows / rows_per_key(table, ii, 1))
        .reduce(f64::max)
}

/// Share of a table's rows a filter is assumed to keep when nothing better is known.
pub const UNKNOWN_FILTER: f64 = 0.1;
