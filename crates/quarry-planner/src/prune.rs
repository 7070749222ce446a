//! Column pruning above joins. A join's row is its inputs' rows side by side: every
//! column of every table joined so far, read or not (TPC-H Q09's lineitem join made rows
//! of forty columns to use six of them), each cell copied again at each join above. Where
//! the nodes above read only some of a join's columns, a projection of those columns is
//! put over the join, and the executor has the join make the narrow rows directly
//! (`exec`: a projection of distinct plain columns over an inner or LEFT join).
//!
//! Owns the walk that tells each node which of its columns are read above, the
//! projections it adds, and the renumbering of the columns the nodes above refer to.
//! Nodes it does not know keep their inputs' layout (their inputs are pruned below their
//! own projections and aggregates only); a condition with a subquery keeps its input's
//! layout too (a correlated subquery reads its row by position). Must not touch: the
//! join order, algorithms or access paths (`optimize` and `joinorder` chose them).

use std::collections::BTreeSet;

use crate::bind::columns_read;
use crate::fuse::readable;
use quarry_executor::expr::Expr;
use quarry_executor::plan::width;
use quarry_executor::plan::{Agg, Plan};

/// Columns of a node's output read above it (None: all of them).
type Need = Option<BTreeSet<usize>>;

/// Where each column of a node's old output is in its new one (None: dropped); a node
/// whose layout did not change gives no map.
type Map = Option<Vec<Option<usize>>>;

/// `plan` (a statement's root: all its columns are read) with its joins' rows narrowed
/// to the columns read above them.
pub(crate) fn prune_columns(plan: Plan) -> Plan {
    prune(plan, None).0
}

fn prune(plan: Plan, need: Need) -> (Plan, Map) {
    match plan {
        Plan::Project { input, exprs } => {
            let (keep, map) = kept(&exprs, &need);
            let exprs: Vec<Expr> = match &keep {
                Some(k) => k.iter().map(|&i| exprs[i].clone()).collect(),
                None => exprs,
            };
            let (input, below) = prune(*input, reads(exprs.iter()));
            let exprs = exprs.into_iter().map(|e| renumber(e, &below)).collect();
            (
                Plan::Project {
                    input: Box::new(input),
                    exprs,
                },
                map,
            )
        }
        Plan::Aggregate {
            input,
            group,
            aggs,
            rollup,
        } => {
            let read = reads(group.iter().chain(aggs.iter().flat_map(|a| &a.args)));
            let (input, below) = prune(*input, read);
            let aggs = aggs
                .into_iter()
                .map(|a| Agg {
                    args: a.args.into_iter().map(|e| renumber(e, &below)).collect(),
                    ..a
                })
                .collect();
            let group = group.into_iter().map(|e| renumber(e, &below)).collect();
            let plan = Plan::Aggregate {
                input: Box::new(input),
                group,
                aggs,
                rollup,
            };
            (plan, None)
        }
        Plan::Filter { input, pred } => {
            let (input, map) = prune(*input, plus(need, std::iter::once(&pred)));
            let pred = renumber(pred, &map);
            (
                Plan::Filter {
                    input: Box::new(input),
                    pred,
                },
                map,
            )
        }
        Plan::Sort { input, keys } => {
            let (input, map) = prune(*input, plus(need, keys.iter().map(|(k, _)| k)));
            let keys = keys
                .into_iter()
                .map(|(k, d)| (renumber(k, &map), d))
                .collect();
            (
                Plan::Sort {
                    input: Box::new(input),
                    keys,
                },
                map,
            )
        }
        Plan::Limit {
            input,
            limit,
            offset,
        } => {
            let (input, map) = prune(*input, need);
            let plan = Plan::Limit {
                input: Box::new(input),
                limit,
                offset,
            };
            (plan, map)
        }
        join @ Plan::Join { .. } => prune_join(join, need),
        join @ Plan::IndexJoin { .. } => prune_index_join(join, need),
        other => (other.map_inputs(&mut |p| prune(p, None).0), None),
    }
}

fn prune_join(plan: Plan, need: Need) -> (Plan, Map) {
    let Plan::Join { left, .. } = &plan else {
        unreachable!("a join")
    };
    let Some(lw) = width(left) else {
        return (plan.map_inputs(&mut |p| prune(p, None).0), None);
    };
    let Plan::Join {
        left,
        right,
        kind,
        left_keys,
        right_keys,
        on,
        right_width,
    } = plan
    else {
        unreachable!("a join")
    };
    let exprs = left_keys.iter().chain(&right_keys).chain(&on);
    let need = if exprs.clone().all(readable) {
        need
    } else {
        None
    };
    // What each side must give: the columns read above, by the keys and by `on`.
    let on_read = reads(on.iter());
    let side = |from: usize, to: usize, keys: &[Expr]| -> Need {
        let mut n: BTreeSet<usize> = need
            .as_ref()
            .map(|n| n.range(from..to).map(|c| c - from).collect())
            .unwrap_or_default();
        if need.is_none() && !(kind.left_only() && from > 0) {
            return None;
        }
        n.extend(reads(keys.iter())?);
        n.extend(on_read.as_ref()?.range(from..to).map(|c| c - from));
        Some(n)
    };
    let (left, lm) = prune(*left, side(0, lw, &left_keys));
    let (right, rm) = prune(*right, side(lw, lw + right_width, &right_keys));
    let (Some(lw2), Some(rw2)) = (width(&left), width(&right)) else {
        unreachable!("a pruned input has a width: it had one")
    };
    let joined = |c: usize| -> Option<usize> {
        if c < lw {
            at(&lm, c)
        } else {
            at(&rm, c - lw).map(|r| r + lw2)
        }
    };
    let on = on.map(|e| renumber_by(e, &joined));
    let plan = Plan::Join {
        left: Box::new(left),
        right: Box::new(right),
        kind,
        left_keys: left_keys.into_iter().map(|e| renumber(e, &lm)).collect(),
        right_keys: right_keys.into_iter().map(|e| renumber(e, &rm)).collect(),
        on,
        right_width: rw2,
    };
    if kind.left_only() {
        return (plan, lm);
    }
    narrowed(plan, need, lw + right_width, lw2 + rw2, joined)
}

fn prune_index_join(plan: Plan, need: Need) -> (Plan, Map) {
    let Plan::IndexJoin {
        left,
        table,
        alias,
        index,
        keys,
        left_keys,
        right_keys,
        filter,
        on,
        kind,
        columns,
    } = plan
    else {
        unreachable!("an index join")
    };
    let tw = table.def.columns.len();
    let lw = width(&left);
    let left_exprs = keys.iter().chain(&left_keys).chain(&on);
    let left_need = match (lw, left_exprs.clone().all(readable)) {
        (Some(lw), true) => need.as_ref().and_then(|n| {
            let mut m: BTreeSet<usize> = n.range(..lw).copied().collect();
            m.extend(reads(keys.iter().chain(&left_keys))?);
            m.extend(reads(on.iter())?.range(..lw));
            Some(m)
        }),
        _ => None,
    };
    let need = if left_need.is_some() { need } else { None };
    let (left, lm) = prune(*left, left_need);
    let lw = lw.unwrap_or(0);
    let lw2 = width(&left).unwrap_or(lw);
    let joined = |c: usize| -> Option<usize> {
        if c < lw {
            at(&lm, c)
        } else {
            Some(c - lw + lw2)
        }
    };
    let plan = Plan::IndexJoin {
        left: Box::new(left),
        table,
        alias,
        index,
        keys: keys.into_iter().map(|e| renumber(e, &lm)).collect(),
        left_keys: left_keys.into_iter().map(|e| renumber(e, &lm)).collect(),
        right_keys,
        filter,
        on: on.map(|e| renumber_by(e, &joined)),
        kind,
        columns,
    };
    if kind.left_only() {
        return (plan, lm);
    }
    narrowed(plan, need, lw + tw, lw2 + tw, joined)
}

/// `join` (its old output `old` columns wide, `now` wide once its inputs were pruned)
/// under a projection of the columns read above, when that drops any.
fn narrowed(
    join: Plan,
    need: Need,
    old: usize,
    now: usize,
    joined: impl Fn(usize) -> Option<usize>,
) -> (Plan, Map) {
    let Some(need) = need else {
        return (join, None);
    };
    // At least one column: a row of none would be a new shape for the nodes above.
    let mut cols: Vec<usize> = need.iter().filter_map(|&c| joined(c)).collect();
    if cols.is_empty() && now > 0 {
        cols.push(0);
    }
    if cols.len() >= now {
        let map = (0..old).map(&joined).collect();
        return (join, Some(map));
    }
    let map = (0..old)
        .map(|c| joined(c).and_then(|n| cols.iter().position(|&k| k == n)))
        .collect();
    let plan = Plan::Project {
        input: Box::new(join),
        exprs: cols.into_iter().map(Expr::Col).collect(),
    };
    (plan, Some(map))
}

/// The expressions of a projection to keep: all, unless some plain column nobody above
/// reads can go (an expression that computes is kept: its errors and warnings stay).
fn kept(exprs: &[Expr], need: &Need) -> (Option<Vec<usize>>, Map) {
    let Some(need) = need else {
        return (None, None);
    };
    let keep: Vec<usize> = (0..exprs.len())
        .filter(|i| need.contains(i) || !matches!(exprs[*i], Expr::Col(_)))
        .collect();
    if keep.len() == exprs.len() || keep.is_empty() {
        return (None, None);
    }
    let map = (0..exprs.len())
        .map(|i| keep.iter().position(|&k| k == i))
        .collect();
    (Some(keep), Some(map))
}

/// The columns `exprs` read, when they can be renumbered (None: keep the layout).
fn reads<'e>(exprs: impl Iterator<Item = &'e Expr>) -> Need {
    let mut n = BTreeSet::new();
    for e in exprs {
        if !readable(e) {
            return None;
        }
        n.extend(columns_read(e)?);
    }
    Some(n)
}

/// `need` and the columns `exprs` read.
fn plus<'e>(need: Need, exprs: impl Iterator<Item = &'e Expr>) -> Need {
    let mut n = need?;
    n.extend(reads(exprs)?);
    Some(n)
}

fn at(map: &Map, c: usize) -> Option<usize> {
    match map {
        Some(m) => m[c],
        None => Some(c),
    }
}

fn renumber(e: Expr, map: &Map) -> Expr {
    if map.is_none() {
        return e;
    }
    renumber_by(e, &|c| at(map, c))
}

fn renumber_by(e: Expr, f: &dyn Fn(usize) -> Option<usize>) -> Expr {
    e.rewrite(&mut |x| match x {
        Expr::Col(c) => Some(Expr::Col(
            f(*c).expect("a column read above was kept by the node below"),
        )),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::{SqlType, TypeKind, Value};
    use quarry_executor::plan::{AggFunc, JoinKind};

    fn values(width: usize) -> Plan {
        Plan::Values(vec![(0..width)
            .map(|i| Expr::Lit(Value::Int(i as i64)))
            .collect()])
    }

    /// a(3) JOIN b(2) ON a0 = b0.
    fn a_join_b() -> Plan {
        Plan::Join {
            left: Box::new(values(3)),
            right: Box::new(values(2)),
            kind: JoinKind::Inner,
            left_keys: vec![Expr::Col(0)],
            right_keys: vec![Expr::Col(0)],
            on: None,
            right_width: 2,
        }
    }

    fn cols(p: &Plan) -> Vec<usize> {
        let Plan::Project { exprs, .. } = p else {
            panic!("a projection: {p:?}")
        };
        exprs
            .iter()
            .map(|e| match e {
                Expr::Col(c) => *c,
                e => panic!("a column: {e:?}"),
            })
            .collect()
    }

    /// `SELECT a1, sum(c0) FROM a(3) JOIN b(2) ON a0 = b0 LEFT JOIN c(2) ON b0 = c0
    /// GROUP BY a1`: each join makes only what is read above it, and the aggregate reads
    /// its columns where they now are.
    #[test]
    fn joins_make_only_the_columns_read_above_them() {
        let inner = a_join_b();
        let outer = Plan::Join {
            left: Box::new(inner),
            right: Box::new(values(2)),
            kind: JoinKind::Left,
            left_keys: vec![Expr::Col(3)],
            right_keys: vec![Expr::Col(0)],
            on: Some(Expr::Bin(
                quarry_executor::expr::BinOp::Gt,
                Box::new(Expr::Col(6)),
                Box::new(Expr::Col(2)),
            )),
            right_width: 2,
        };
        let plan = Plan::Aggregate {
            input: Box::new(outer),
            group: vec![Expr::Col(1)],
            aggs: vec![Agg {
                func: AggFunc::Sum,
                args: vec![Expr::Col(5)],
                distinct: false,
                separator: String::new(),
                order: vec![],
                ty: SqlType::new(TypeKind::Int),
            }],
            rollup: false,
        };
        let Plan::Aggregate {
            input, group, aggs, ..
        } = prune_columns(plan)
        else {
            panic!("an aggregate")
        };
        // The LEFT join's rows are a1 a2 b0 c0 c1; it makes a1 and c0 (its `on` reads c1
        // and a2, inside it).
        assert_eq!(cols(&input), [0, 3]);
        assert!(matches!(group[..], [Expr::Col(0)]), "{group:?}");
        assert!(matches!(aggs[0].args[..], [Expr::Col(1)]), "{aggs:?}");
        let Plan::Project { input: outer, .. } = *input else {
            unreachable!()
        };
        let Plan::Join {
            left,
            left_keys,
            on,
            right_width,
            ..
        } = *outer
        else {
            panic!("the LEFT join")
        };
        assert_eq!(right_width, 2);
        // The inner join's rows: a1, a2 and b0, for the LEFT join's key, `on` and above.
        assert_eq!(cols(&left), [1, 2, 3]);
        assert!(matches!(left_keys[..], [Expr::Col(2)]), "{left_keys:?}");
        let text = format!("{on:?}");
        assert!(text.contains("Col(4)") && text.contains("Col(1)"), "{text}");
    }

    /// A condition with a subquery keeps the layout of its input: nothing below it is
    /// narrowed.
    #[test]
    fn a_subquery_keeps_the_rows_it_reads_whole() {
        let join = a_join_b();
        let sub = std::sync::Arc::new(quarry_executor::expr::SubQuery {
            plan: Plan::Dual,
            correlated: true,
            outer_refs: None,
            id: 0,
            ty: SqlType::new(TypeKind::Int),
        });
        let plan = Plan::Project {
            input: Box::new(Plan::Filter {
                input: Box::new(join),
                pred: Expr::Exists {
                    sub,
                    negated: false,
                },
            }),
            exprs: vec![Expr::Col(1)],
        };
        let Plan::Project { input, exprs } = prune_columns(plan) else {
            panic!("a projection")
        };
        assert!(matches!(exprs[..], [Expr::Col(1)]));
        let Plan::Filter { input, .. } = *input else {
            panic!("the filter")
        };
        assert!(matches!(*input, Plan::Join { .. }), "{input:?}");
    }
}
