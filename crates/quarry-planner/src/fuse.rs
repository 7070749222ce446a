//! Projections of plain columns folded into the node above them. The join order puts a
//! reordered join's columns back in FROM order with a projection of column references
//! (TPC-H Q09: fifty columns, every one cloned into a new row for each of 320 000 joined
//! rows), and derived tables and views select columns of their inputs the same way. A
//! projection or aggregate over such a projection reads the columns where they are
//! instead, and the row copy is gone.
//!
//! Owns that rewrite and when it keeps the answer: the projection below computes nothing
//! (only column references: no expression of it is skipped, so none of its errors or
//! warnings is lost), and the node above runs no subquery on its input row (a correlated
//! subquery reads that row by position) and refers to no aggregate or window result.
//! Must not touch: which columns the nodes read or the order of joins (`optimize`
//! and `joinorder` choose them).

use quarry_executor::expr::Expr;
use quarry_executor::plan::{Agg, Plan};

/// `plan` with every projection of plain columns that can be read through folded into
/// the projection or aggregate above it.
pub(crate) fn fuse_projections(plan: Plan) -> Plan {
    match plan.map_inputs(&mut fuse_projections) {
        Plan::Project { input, exprs } => match *input {
            Plan::Project {
                input: below,
                exprs: cols,
            } if plain(&cols) && exprs.iter().all(readable) => Plan::Project {
                input: below,
                exprs: exprs.into_iter().map(|e| through(e, &cols)).collect(),
            },
            input => Plan::Project {
                input: Box::new(input),
                exprs,
            },
        },
        Plan::Aggregate {
            input,
            group,
            aggs,
            rollup,
        } => match *input {
            Plan::Project {
                input: below,
                exprs: cols,
            } if plain(&cols)
                && group.iter().all(readable)
                && aggs.iter().flat_map(|a| &a.args).all(readable) =>
            {
                Plan::Aggregate {
                    input: below,
                    group: group.into_iter().map(|e| through(e, &cols)).collect(),
                    aggs: aggs
                        .into_iter()
                        .map(|a| Agg {
                            args: a.args.into_iter().map(|e| through(e, &cols)).collect(),
                            ..a
                        })
                        .collect(),
                    rollup,
                }
            }
            input => Plan::Aggregate {
                input: Box::new(input),
                group,
                aggs,
                rollup,
            },
        },
        other => other,
    }
}

/// Every expression is a column reference.
fn plain(exprs: &[Expr]) -> bool {
    exprs.iter().all(|e| matches!(e, Expr::Col(_)))
}

/// `e` evaluated on another row layout gives the same value: it reads its input row only
/// through column references.
pub(crate) fn readable(e: &Expr) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        if matches!(
            x,
            Expr::InSub { .. }
                | Expr::Exists { .. }
                | Expr::ScalarSub(_)
                | Expr::AggRef(_)
                | Expr::WinRef(_)
        ) {
            ok = false;
        }
    });
    ok
}

/// `e` over the rows under the projection `cols`.
fn through(e: Expr, cols: &[Expr]) -> Expr {
    e.rewrite(&mut |x| match x {
        Expr::Col(i) => Some(cols[*i].clone()),
        _ => None,
    })
}
