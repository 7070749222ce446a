//! Eager aggregation: a GROUP BY over an inner or LEFT join, grouped by a key of one
//! input's table, whose aggregates read only the other input's columns (TPC-H Q13:
//! customers and the count of their orders), aggregates that other input by its join key
//! first, joins each keyed row to at most one aggregated row, and needs no grouping after
//! the join — each group is one keyed row. A million orders become a hundred thousand rows
//! before the hash join instead of after it. A LEFT join aggregates its right input; an
//! inner join either one.
//!
//! Owns the rewrite of such a plan and the conditions under which the answer is the
//! same: integer join keys on both sides (grouping the aggregated rows by their key puts
//! together exactly the rows one key matches), a unique key of the keyed table among the
//! GROUP BY columns (no two of its rows share a group), COUNT, SUM, MIN and MAX without
//! DISTINCT. A LEFT join's row that matched nothing gets what the aggregates give over
//! its padded row: COUNT(col) 0, COUNT(*) 1, the others NULL. Must not touch: the join's
//! order or algorithm (the caller's passes choose them, before and after this one).

use quarry_common::{TypeKind, Value};

use crate::bind::columns_read;
use quarry_executor::cardinality::{table_distinct, table_rows};
use quarry_executor::expr::Expr;
use quarry_executor::plan::width;
use quarry_executor::plan::{Agg, AggFunc, JoinKind, Plan};

/// Right rows per join key at which aggregating them first is taken to pay.
const MIN_ROWS_PER_KEY: f64 = 2.0;

/// `plan` with every aggregate that qualifies rewritten (see the module comment).
pub(crate) fn eager_aggregation(plan: Plan) -> Plan {
    match plan {
        Plan::Aggregate {
            input,
            group,
            aggs,
            rollup: false,
        } => {
            let input = eager_aggregation(*input);
            if let Some(side) = qualifies(&input, &group, &aggs) {
                return rewrite(input, group, aggs, side);
            }
            // A join whose inputs the join order swapped sits under a projection that
            // puts the columns back in FROM order: read through it.
            if let Some((group, aggs, side)) = through_projection(&input, &group, &aggs) {
                let Plan::Project { input: join, .. } = input else {
                    unreachable!("through_projection takes projections only")
                };
                return rewrite(*join, group, aggs, side);
            }
            Plan::Aggregate {
                input: Box::new(input),
                group,
                aggs,
                rollup: false,
            }
        }
        other => other.map_inputs(&mut eager_aggregation),
    }
}

/// The grouping and aggregates of a projection of plain columns over a join, read as the
/// join's columns, when the rewrite applies to them there.
fn through_projection(
    input: &Plan,
    group: &[Expr],
    aggs: &[Agg],
) -> Option<(Vec<Expr>, Vec<Agg>, Side)> {
    let Plan::Project { input: join, exprs } = input else {
        return None;
    };
    if !exprs.iter().all(|e| col(e).is_some()) {
        return None;
    }
    let through = |e: &Expr| {
        e.clone().rewrite(&mut |x| match x {
            Expr::Col(c) => exprs.get(*c).cloned(),
            _ => None,
        })
    };
    let group: Vec<Expr> = group.iter().map(through).collect();
    let aggs: Vec<Agg> = aggs
        .iter()
        .map(|a| Agg {
            args: a.args.iter().map(through).collect(),
            ..a.clone()
        })
        .collect();
    let side = qualifies(join, &group, &aggs)?;
    Some((group, aggs, side))
}

fn is_integer(kind: TypeKind) -> bool {
    matches!(
        kind,
        TypeKind::TinyInt
            | TypeKind::SmallInt
            | TypeKind::MediumInt
            | TypeKind::Int
            | TypeKind::BigInt
    )
}

fn col(e: &Expr) -> Option<usize> {
    match e {
        Expr::Col(c) => Some(*c),
        _ => None,
    }
}

/// Which input of a join is aggregated early.
#[derive(Clone, Copy, PartialEq)]
enum Side {
    Left,
    Right,
}

/// The input aggregated early when the rewrite applies: a LEFT join's right input, either
/// input of an inner join (the other one holding the grouped key).
fn qualifies(input: &Plan, group: &[Expr], aggs: &[Agg]) -> Option<Side> {
    let Plan::Join {
        left,
        right,
        kind: kind @ (JoinKind::Inner | JoinKind::Left),
        left_keys,
        right_keys,
        on: None,
        ..
    } = input
    else {
        return None;
    };
    let lw = width(left)?;
    let right_side = Shape {
        keyed: left,
        keyed_keys: left_keys,
        keyed_at: 0,
        agg: right,
        agg_keys: right_keys,
        agg_at: lw,
        padded: *kind == JoinKind::Left,
    };
    if right_side.holds(group, aggs) {
        return Some(Side::Right);
    }
    let left_side = Shape {
        keyed: right,
        keyed_keys: right_keys,
        keyed_at: lw,
        agg: left,
        agg_keys: left_keys,
        agg_at: 0,
        padded: false,
    };
    (*kind == JoinKind::Inner && left_side.holds(group, aggs)).then_some(Side::Left)
}

/// A join seen from the input whose key is grouped (`keyed`) and the one aggregated early
/// (`agg`), each with its keys and where its columns start in the joined row.
struct Shape<'p> {
    keyed: &'p Plan,
    keyed_keys: &'p [Expr],
    keyed_at: usize,
    agg: &'p Plan,
    agg_keys: &'p [Expr],
    agg_at: usize,
    /// A LEFT join's right input: a row that matched nothing meets the aggregates as a
    /// row of NULLs, so they may read its columns only as they are (`COUNT(1)` or
    /// `COUNT(COALESCE(o.x, 0))` count such a row, which the early groups cannot tell).
    padded: bool,
}

impl Shape<'_> {
    fn holds(&self, group: &[Expr], aggs: &[Agg]) -> bool {
        let (Plan::Scan { table: kt, .. }, Plan::Scan { table: at, .. }) = (self.keyed, self.agg)
        else {
            return false;
        };
        let (Some(kw), Some(aw)) = (width(self.keyed), width(self.agg)) else {
            return false;
        };
        let in_keyed = |c: usize| c >= self.keyed_at && c < self.keyed_at + kw;
        let in_agg = |c: usize| c >= self.agg_at && c < self.agg_at + aw;
        // Integer keys compare exactly: the rows one key of the keyed side matches are one
        // group of the aggregated side.
        let keys_ok = !self.keyed_keys.is_empty()
            && self
                .keyed_keys
                .iter()
                .zip(self.agg_keys)
                .all(|(k, a)| match (col(k), col(a)) {
                    (Some(k), Some(a)) => {
                        kt.def.columns.get(k).is_some_and(|c| is_integer(c.ty.kind))
                            && at.def.columns.get(a).is_some_and(|c| is_integer(c.ty.kind))
                    }
                    _ => false,
                });
        if !keys_ok {
            return false;
        }
        // One keyed row per group: the GROUP BY columns hold a key of its table no two of
        // its rows share (a unique index's columns, none of them NULL-able).
        let Some(by) = group
            .iter()
            .map(|g| col(g).filter(|&c| in_keyed(c)).map(|c| c - self.keyed_at))
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        let keyed = kt.def.indexes.iter().any(|ix| {
            (ix.primary || ix.unique)
                && ix.prefix.iter().all(|&p| p == 0)
                && ix
                    .columns
                    .iter()
                    .all(|c| by.contains(c) && !kt.def.columns[*c].nullable)
        });
        if !keyed {
            return false;
        }
        let agg_only = |e: &Expr| {
            if self.padded {
                return match e {
                    Expr::Col(c) => in_agg(*c),
                    Expr::Collate(inner, _) => col(inner).is_some_and(in_agg),
                    _ => false,
                };
            }
            columns_read(e).is_some_and(|cs| cs.iter().all(|&c| in_agg(c)))
        };
        let aggs_ok = aggs.iter().all(|a| {
            !a.distinct
                && matches!(
                    a.func,
                    AggFunc::CountStar
                        | AggFunc::Count
                        | AggFunc::Sum
                        | AggFunc::Min
                        | AggFunc::Max
                )
                && a.args.iter().all(agg_only)
        });
        if !aggs_ok {
            return false;
        }
        // Worth it when the aggregated table has several rows per key (orders per
        // customer); a key with an index tells how many distinct values it has.
        let Some(ak) = col(&self.agg_keys[0]) else {
            return false;
        };
        match table_distinct(at, ak) {
            Some(d) if d > 0.0 => table_rows(at) / d >= MIN_ROWS_PER_KEY,
            _ => false,
        }
    }
}

/// The rewrite of an aggregate [`qualifies`] said yes to, aggregating `side` early.
fn rewrite(input: Plan, group: Vec<Expr>, aggs: Vec<Agg>, side: Side) -> Plan {
    let Plan::Join {
        left,
        right,
        kind,
        left_keys,
        right_keys,
        right_width,
        ..
    } = input
    else {
        unreachable!("qualifies takes joins only")
    };
    let lw = width(&left).expect("a scan's width");
    let k = left_keys.len();
    let m = aggs.len();
    let agg_at = if side == Side::Right { lw } else { 0 };
    let early_aggs: Vec<Agg> = aggs
        .iter()
        .map(|a| Agg {
            args: a
                .args
                .iter()
                .map(|e| {
                    e.clone().rewrite(&mut |x| match x {
                        Expr::Col(c) => Some(Expr::Col(c - agg_at)),
                        _ => None,
                    })
                })
                .collect(),
            ..a.clone()
        })
        .collect();
    let early = |input: Box<Plan>, keys: Vec<Expr>| {
        Box::new(Plan::Aggregate {
            input,
            group: keys,
            aggs: early_aggs,
            rollup: false,
        })
    };
    let new_keys: Vec<Expr> = (0..k).map(Expr::Col).collect();
    // The joined row's layout after the rewrite: where the keyed input's columns start,
    // and where the aggregates are.
    let (join, keyed_from, keyed_to, aggs_at) = match side {
        Side::Right => (
            Plan::Join {
                left,
                right: early(right, right_keys),
                kind,
                left_keys,
                right_keys: new_keys,
                on: None,
                right_width: k + m,
            },
            0,
            0,
            lw + k,
        ),
        Side::Left => (
            Plan::Join {
                left: early(left, left_keys),
                right,
                kind,
                left_keys: new_keys,
                right_keys,
                on: None,
                right_width,
            },
            lw,
            k + m,
            k,
        ),
    };
    let unmatched = |func: AggFunc| match func {
        AggFunc::Count => Some(0),
        AggFunc::CountStar => Some(1),
        _ => None,
    };
    let exprs = group
        .into_iter()
        .map(|g| match g {
            Expr::Col(c) => Expr::Col(c - keyed_from + keyed_to),
            other => other,
        })
        .chain(aggs.iter().enumerate().map(|(i, a)| {
            let v = Expr::Col(aggs_at + i);
            match unmatched(a.func).filter(|_| kind == JoinKind::Left) {
                Some(n) => Expr::Func("COALESCE".into(), vec![v, Expr::Lit(Value::Int(n))]),
                None => v,
            }
        }))
        .collect();
    Plan::Project {
        input: Box::new(join),
        exprs,
    }
}
