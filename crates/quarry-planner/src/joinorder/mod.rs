//! Join order: every maximal group of inner joins (comma joins and `JOIN … ON` alike) is
//! flattened into its tables and conditions, then rebuilt as the left-deep tree of least
//! estimated cost — exhaustively over table subsets up to [`EXHAUSTIVE`] tables, greedily
//! beyond — and the written column order is restored above it.
//!
//! The cost of adding a table to the tables already joined is the cheapest of: probing one
//! of its indexes once per row so far (index nested-loop join), a hash join (the table is
//! read; a hash table is built on whichever of it and the rows so far takes less room, as
//! the executor chooses, and the other streams through it), or a nested loop when no
//! equality connects them. The rows a set of tables gives do not depend on the order: the
//! product of their estimated rows and of the selectivity of each condition among them,
//! `1 / max(distinct values)` for an equality (distinct counts from index statistics where
//! an index leads with the column, otherwise the column is taken as unique in its table).
//! The equalities the written ones imply by transitivity are added first ([`implied`]), so
//! a table can follow one it is equated to only through a third; an equality between
//! columns the counted ones already make equal keeps every row, and is not placed as a
//! join key where the others placed imply it.
//!
//! Outer joins keep their place (they are single inputs of the group they sit in) and
//! their own inputs are ordered independently; groups whose conditions hold subqueries or
//! `RAND()` are left as written.

use crate::bind::{columns_used, equi_key};
use crate::optimize::{best_probe, fetch_cost, fetched_cost, probe_cost, scan_cost, BUILD, ENTRY};
use implied::Classes;
use quarry_executor::cardinality::UNKNOWN_FILTER;
use quarry_executor::cardinality::{access_estimate, estimate_rows, table_distinct, table_rows};
use quarry_executor::expr::{and_all, conjuncts};
use quarry_executor::expr::{BinOp, Expr};
use quarry_executor::plan::width;
use quarry_executor::plan::{Access, JoinKind, Plan, ReadMode};

mod implied;

/// Tables up to which every left-deep order is costed (2^n subsets).
const EXHAUSTIVE: usize = 10;
/// Cost of evaluating one pair of rows in a nested loop without a key.
const PAIR: f64 = 0.05;
/// Cost of producing one joined row (so large intermediate results cost what they do).
const OUTPUT: f64 = 0.1;
/// A hash table built on the rows joined so far costs this many times `BUILD` a row:
/// they are kept whole where a table's rows are kept compact (and where both sides cost
/// the same, the order that builds on the table stays).
const BUILD_WHOLE: f64 = 1.5;

/// Order the joins of one SELECT's FROM clause (with its WHERE conditions pushed in), as
/// the SELECT is bound. A derived table, view or CTE in it was ordered when its own SELECT
/// was bound, and is a leaf here: ordered again as part of a bigger plan, its joins would
/// be costed from cruder estimates of inputs it already joined.
pub fn order_joins(plan: Plan) -> Plan {
    order_from(plan)
}

/// A FROM clause's tree: groups of inner joins reordered, outer joins' inputs each on
/// their own, anything else a leaf left as it is.
fn order_from(plan: Plan) -> Plan {
    let total = width(&plan);
    match (total, &plan) {
        (
            Some(total),
            Plan::Join {
                kind: JoinKind::Inner,
                ..
            },
        ) if movable(&plan) && inputs(&plan) <= 64 => {
            let mut group = Group::default();
            group.flatten(plan, 0, total);
            for leaf in &mut group.leaves {
                let p = std::mem::replace(&mut leaf.plan, Plan::Dual);
                leaf.plan = order_from(p);
            }
            group.rebuild()
        }
        (_, Plan::Join { .. } | Plan::Filter { .. }) => plan.map_inputs(&mut order_from),
        _ => plan,
    }
}

/// Inputs of the group of inner joins under `plan` (bit sets of them must fit a u64).
fn inputs(plan: &Plan) -> usize {
    match plan {
        Plan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            ..
        } => inputs(left) + inputs(right),
        _ => 1,
    }
}

/// Whether every inner join of the group under `plan` has a known left width and
/// conditions that may move to another join.
fn movable(plan: &Plan) -> bool {
    match plan {
        Plan::Join {
            left,
            right,
            kind: JoinKind::Inner,
            on,
            ..
        } => {
            width(left).is_some()
                && on.as_ref().is_none_or(|e| columns_used(e).is_some())
                && movable(left)
                && movable(right)
        }
        _ => true,
    }
}

struct Leaf {
    plan: Plan,
    /// First column of the leaf in the group's written layout.
    offset: usize,
    width: usize,
    rows: f64,
    /// Cost of reading the leaf on its own (for a hash join or as the first input).
    read: f64,
}

struct Cond {
    expr: Expr,
    /// Bit set of the leaves the condition reads.
    leaves: u64,
    selectivity: f64,
    /// For `a = b`: each side as (its column within its leaf when it is a plain column,
    /// the leaves it reads), so a join step can find index keys without walking `expr`.
    sides: Option<[(Option<usize>, u64); 2]>,
    /// For an equality of two columns of different leaves that is transitive
    /// ([`implied`]): the two columns, in the group's written layout.
    cols: Option<(usize, usize)>,
    /// Implied by the others, not written ([`implied`]).
    implied: bool,
}

/// Equalities between the same two leaves, with their combined selectivity.
struct KeyPair {
    leaves: u64,
    conds: Vec<usize>,
    selectivity: f64,
}

#[derive(Default)]
struct Group {
    leaves: Vec<Leaf>,
    /// Conditions over the written layout of the whole group: those written, then those
    /// they imply from `written` on.
    conds: Vec<Expr>,
    written: usize,
}

impl Group {
    /// Collect the inner joins of `plan` (covering columns `offset..offset + width_here`
    /// of the group) into leaves and conditions.
    fn flatten(&mut self, plan: Plan, offset: usize, width_here: usize) {
        match plan {
            Plan::Join {
                left,
                right,
                kind: JoinKind::Inner,
                left_keys,
                right_keys,
                on,
                right_width,
            } => {
                let lw = width(&left).expect("movable() checked the width");
                self.flatten(*left, offset, lw);
                self.flatten(*right, offset + lw, right_width);
                self.take_conditions(offset, lw, left_keys, right_keys, on);
            }
            other => {
                let rows = estimate_rows(&other).unwrap_or(1000.0).max(1.0);
                self.leaves.push(Leaf {
                    read: read_cost(&other, rows),
                    plan: other,
                    offset,
                    width: width_here,
                    rows,
                });
            }
        }
    }

    fn take_conditions(
        &mut self,
        offset: usize,
        lw: usize,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        on: Option<Expr>,
    ) {
        let shift = |e: Expr, by: usize| {
            e.rewrite(&mut |x| match x {
                Expr::Col(i) => Some(Expr::Col(i + by)),
                _ => None,
            })
        };
        for (l, r) in left_keys.into_iter().zip(right_keys) {
            self.conds.push(Expr::Bin(
                BinOp::Eq,
                Box::new(shift(l, offset)),
                Box::new(shift(r, offset + lw)),
            ));
        }
        if let Some(on) = on {
            let mut parts = vec![];
            conjuncts(on, &mut parts);
            self.conds
                .extend(parts.into_iter().map(|c| shift(c, offset)));
        }
    }

    fn leaf_of(&self, col: usize) -> usize {
        self.leaves
            .iter()
            .rposition(|l| l.offset <= col)
            .unwrap_or(0)
    }

    /// Bit set of the leaves an expression reads.
    fn leaves_of(&self, e: &Expr) -> u64 {
        columns_used(e)
            .unwrap_or_default()
            .iter()
            .fold(0u64, |m, &c| m | 1 << self.leaf_of(c))
    }

    /// Columns of the group's rows.
    fn columns(&self) -> usize {
        self.leaves
            .iter()
            .map(|l| l.offset + l.width)
            .max()
            .unwrap_or(0)
    }

    /// The type of a column of the group, when its leaf is a table.
    fn type_of(&self, col: usize) -> Option<quarry_common::SqlType> {
        let leaf = &self.leaves[self.leaf_of(col)];
        match &leaf.plan {
            Plan::Scan { table, .. } => Some(table.def.columns.get(col - leaf.offset)?.ty),
            _ => None,
        }
    }

    /// The two columns of `e` when it equates columns of two different leaves and the
    /// equality is transitive.
    fn equal_columns(&self, e: &Expr) -> Option<(usize, usize)> {
        let Expr::Bin(BinOp::Eq, a, b) = e else {
            return None;
        };
        let (Expr::Col(a), Expr::Col(b)) = (a.as_ref(), b.as_ref()) else {
            return None;
        };
        let (ta, tb) = (self.type_of(*a)?, self.type_of(*b)?);
        (self.leaf_of(*a) != self.leaf_of(*b) && implied::transitive(&ta, &tb)).then_some((*a, *b))
    }

    /// Append the equalities the written ones imply.
    fn add_implied(&mut self) {
        self.written = self.conds.len();
        let eqs: Vec<(usize, usize)> = self
            .conds
            .iter()
            .filter_map(|e| self.equal_columns(e))
            .collect();
        if eqs.len() < 2 {
            return;
        }
        let columns = self.columns();
        let extra = implied::implied(columns, &eqs, |c| self.leaf_of(c), |c| self.type_of(c));
        self.conds.extend(
            extra
                .into_iter()
                .map(|(a, b)| Expr::Bin(BinOp::Eq, Box::new(Expr::Col(a)), Box::new(Expr::Col(b)))),
        );
    }

    fn conditions(&self) -> Vec<Cond> {
        self.conds
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let leaves = self.leaves_of(e);
                let selectivity = if leaves.count_ones() < 2 {
                    1.0
                } else {
                    self.selectivity(e)
                };
                let side = |x: &Expr| {
                    let col = match x {
                        Expr::Col(c) => Some(c - self.leaves[self.leaf_of(*c)].offset),
                        _ => None,
                    };
                    (col, self.leaves_of(x))
                };
                let sides = match e {
                    Expr::Bin(BinOp::Eq, a, b) => Some([side(a), side(b)]),
                    _ => None,
                };
                Cond {
                    expr: e.clone(),
                    leaves,
                    selectivity,
                    sides,
                    cols: self.equal_columns(e),
                    implied: i >= self.written,
                }
            })
            .collect()
    }

    /// Distinct values of a column of the group, from index statistics when an index of
    /// its table leads with it, else as many as the leaf's rows.
    fn distinct(&self, col: usize) -> f64 {
        let leaf = &self.leaves[self.leaf_of(col)];
        let c = col - leaf.offset;
        if let Plan::Scan { table, .. } = &leaf.plan {
            if let Some(d) = table_distinct(table, c) {
                return d.clamp(1.0, leaf.rows);
            }
        }
        leaf.rows
    }

    /// Pairs of leaves joined by more than one equality (`ps_partkey = l_partkey AND
    /// ps_suppkey = l_suppkey`): such columns are seldom independent (together they are
    /// usually one side's key), so their selectivities are not simply multiplied — the
    /// product is floored at one match per row of the smaller side, what a key gives.
    /// Multiplied, TPC-H Q9's partsupp join was estimated at 2 400 rows for 600 000 and
    /// joined first, and a cross join with nation followed.
    fn key_pairs(&self, conds: &[Cond]) -> Vec<KeyPair> {
        let mut pairs: Vec<KeyPair> = Vec::new();
        for (i, c) in conds.iter().enumerate() {
            if c.sides.is_none() || c.leaves.count_ones() != 2 || c.implied {
                continue;
            }
            match pairs.iter_mut().find(|p| p.leaves == c.leaves) {
                Some(p) => {
                    p.conds.push(i);
                    p.selectivity *= c.selectivity;
                }
                None => pairs.push(KeyPair {
                    leaves: c.leaves,
                    conds: vec![i],
                    selectivity: c.selectivity,
                }),
            }
        }
        pairs.retain(|p| p.conds.len() > 1);
        for p in &mut pairs {
            let smaller = (0..self.leaves.len())
                .filter(|i| p.leaves & (1 << i) != 0)
                .map(|i| self.leaves[i].rows)
                .fold(f64::INFINITY, f64::min)
                .max(1.0);
            p.selectivity = p.selectivity.max(1.0 / smaller);
        }
        pairs
    }

    fn selectivity(&self, e: &Expr) -> f64 {
        match e {
            Expr::Bin(BinOp::Eq, a, b) => {
                let side = |x: &Expr| match x {
                    Expr::Col(c) => self.distinct(*c),
                    other => columns_used(other)
                        .and_then(|v| v.first().map(|&c| self.leaves[self.leaf_of(c)].rows))
                        .unwrap_or(1.0),
                };
                1.0 / side(a).max(side(b)).max(1.0)
            }
            _ => UNKNOWN_FILTER,
        }
    }

    fn rebuild(mut self) -> Plan {
        self.add_implied();
        let conds = self.conditions();
        let n = self.leaves.len();
        let columns = self.columns();
        let pairs = self.key_pairs(&conds);
        // An equality between columns the counted ones already made equal keeps every
        // row (`a = b AND b = c` keep what they keep whether `a = c` is said or not).
        let rows_of = |set: u64| -> f64 {
            let mut r: f64 = (0..n)
                .filter(|i| set & (1 << i) != 0)
                .map(|i| self.leaves[i].rows)
                .product();
            let mut equal = Classes::new(columns);
            for p in &pairs {
                if p.leaves & !set == 0 {
                    r *= p.selectivity;
                    for (a, b) in p.conds.iter().filter_map(|&i| conds[i].cols) {
                        equal.union(a, b);
                    }
                }
            }
            for (i, c) in conds.iter().enumerate() {
                if c.leaves & !set != 0 || pairs.iter().any(|p| p.conds.contains(&i)) {
                    continue;
                }
                if c.cols.is_some_and(|(a, b)| !equal.union(a, b)) {
                    continue;
                }
                r *= c.selectivity;
            }
            r.max(1.0)
        };
        let step = |set: u64, j: usize| -> f64 {
            let leaf = &self.leaves[j];
            if set == 0 {
                return leaf.read;
            }
            let outer = rows_of(set);
            let bit = 1u64 << j;
            // Columns of leaf j equated to expressions over `set` alone.
            let keyed: Vec<Option<usize>> = conds
                .iter()
                .filter(|c| c.leaves & bit != 0 && c.leaves & !(set | bit) == 0)
                .filter_map(|c| {
                    let [a, b] = c.sides?;
                    [(a, b), (b, a)].into_iter().find_map(|(x, y)| {
                        let from_set = y.1 != 0 && y.1 & !set == 0;
                        (x.1 == bit && x.0.is_some() && from_set).then_some(x.0)
                    })
                })
                .collect();
            let hash = if keyed.is_empty() {
                leaf.read + outer * leaf.rows * PAIR
            } else {
                // The executor builds on the side expected to take less room (rows ×
                // columns; the rows so far carry every table joined) and streams the
                // other through it.
                let set_width: usize = (0..n)
                    .filter(|i| set & (1 << i) != 0)
                    .map(|i| self.leaves[i].width)
                    .sum();
                if outer * (set_width as f64) < leaf.rows * leaf.width as f64 {
                    leaf.read + outer * BUILD * BUILD_WHOLE + leaf.rows * ENTRY
                } else {
                    leaf.read + leaf.rows * BUILD + outer * ENTRY
                }
            };
            let probe = match &leaf.plan {
                Plan::Scan {
                    table,
                    read: ReadMode::Rows,
                    order: None,
                    ..
                } => best_probe(table, &keyed)
                    .map(|(ii, _, rpk)| outer * (probe_cost(table) + fetched_cost(table, ii, rpk))),
                _ => None,
            };
            probe.map_or(hash, |p| p.min(hash)) + rows_of(set | bit) * OUTPUT
        };
        let connected = |set: u64, j: usize| {
            conds
                .iter()
                .any(|c| c.leaves & (1 << j) != 0 && c.leaves & set != 0)
        };
        let order = if n <= EXHAUSTIVE {
            exhaustive(n, &step)
        } else {
            greedy(n, &step, &rows_of, &connected)
        };
        build(self.leaves, &conds, &order, columns)
    }
}

/// Rows-read cost of producing a leaf's rows on its own.
fn read_cost(plan: &Plan, rows: f64) -> f64 {
    match plan {
        Plan::Scan { table, access, .. } => match access {
            Access::Full => table_rows(table) * scan_cost(table),
            other => access_estimate(table, other).unwrap_or(rows) * fetch_cost(table),
        },
        _ => rows,
    }
}

/// The cheapest left-deep order, by dynamic programming over subsets of the leaves; ties
/// keep the written order.
fn exhaustive(n: usize, step: &dyn Fn(u64, usize) -> f64) -> Vec<usize> {
    let full = (1u64 << n) - 1;
    let mut best: Vec<Option<(f64, usize)>> = vec![None; 1 << n];
    best[0] = Some((0.0, usize::MAX));
    for set in 0..full {
        let Some((cost, _)) = best[set as usize] else {
            continue;
        };
        for j in 0..n {
            if set & (1 << j) != 0 {
                continue;
            }
            let next = (set | 1 << j) as usize;
            let c = cost + step(set, j);
            if best[next].is_none_or(|(b, _)| c < b) {
                best[next] = Some((c, j));
            }
        }
    }
    let mut order = Vec::with_capacity(n);
    let mut set = full;
    while set != 0 {
        let (_, j) = best[set as usize].expect("every subset is reachable");
        order.push(j);
        set &= !(1 << j);
    }
    order.reverse();
    order
}

/// Beyond [`EXHAUSTIVE`] tables: start from the table giving the fewest rows, then add the
/// table cheapest to join next among those a condition connects to the tables so far (a
/// cross product only when none is connected).
fn greedy(
    n: usize,
    step: &dyn Fn(u64, usize) -> f64,
    rows_of: &dyn Fn(u64) -> f64,
    connected: &dyn Fn(u64, usize) -> bool,
) -> Vec<usize> {
    let start = (0..n)
        .min_by(|&a, &b| rows_of(1 << a).total_cmp(&rows_of(1 << b)))
        .unwrap_or(0);
    let mut order = vec![start];
    let mut set = 1u64 << start;
    while order.len() < n {
        let left: Vec<usize> = (0..n).filter(|j| set & (1 << j) == 0).collect();
        let linked: Vec<usize> = left
            .iter()
            .copied()
            .filter(|&j| connected(set, j))
            .collect();
        let cands = if linked.is_empty() { left } else { linked };
        let next = cands
            .into_iter()
            .min_by(|&a, &b| step(set, a).total_cmp(&step(set, b)))
            .expect("a leaf is left");
        order.push(next);
        set |= 1 << next;
    }
    order
}

/// Join the leaves left-deep in `order`, each condition at the first join where all the
/// leaves it reads are present (an implied equality only where the others placed do not
/// already make its columns equal), then put the columns back in their written order.
fn build(leaves: Vec<Leaf>, conds: &[Cond], order: &[usize], columns: usize) -> Plan {
    let total: usize = leaves.iter().map(|l| l.width).sum();
    let mut new_offset = vec![0; leaves.len()];
    let mut pos = 0;
    for &i in order {
        new_offset[i] = pos;
        pos += leaves[i].width;
    }
    let leaf_of = |c: usize| leaves.iter().rposition(|l| l.offset <= c).unwrap_or(0);
    let map: Vec<usize> = (0..total)
        .map(|c| {
            let l = leaf_of(c);
            new_offset[l] + c - leaves[l].offset
        })
        .collect();
    let identity = map.iter().enumerate().all(|(i, &m)| i == m);
    let mut placed = vec![false; conds.len()];
    let mut equal = Classes::new(columns);
    let mut slots: Vec<Option<Leaf>> = leaves.into_iter().map(Some).collect();
    let mut tree: Option<(Plan, usize)> = None;
    let mut set = 0u64;
    for &j in order {
        let leaf = slots[j].take().expect("each leaf once");
        set |= 1 << j;
        tree = Some(match tree {
            None => (leaf.plan, leaf.width),
            Some((left, lw)) => {
                let mut left_keys = vec![];
                let mut right_keys = vec![];
                let mut on = vec![];
                for (c, done) in conds.iter().zip(placed.iter_mut()) {
                    if *done || c.leaves & !set != 0 {
                        continue;
                    }
                    *done = true;
                    if let Some((a, b)) = c.cols {
                        if !equal.union(a, b) && c.implied {
                            continue;
                        }
                    }
                    let e = c.expr.clone().rewrite(&mut |x| match x {
                        Expr::Col(i) => Some(Expr::Col(map[*i])),
                        _ => None,
                    });
                    match equi_key(&e, lw) {
                        Some((l, r)) => {
                            left_keys.push(l);
                            right_keys.push(r);
                        }
                        None => on.push(e),
                    }
                }
                (
                    Plan::Join {
                        left: Box::new(left),
                        right: Box::new(leaf.plan),
                        kind: JoinKind::Inner,
                        left_keys,
                        right_keys,
                        on: and_all(on),
                        right_width: leaf.width,
                    },
                    lw + leaf.width,
                )
            }
        });
    }
    let (plan, _) = tree.expect("a group has leaves");
    if identity {
        plan
    } else {
        Plan::Project {
            input: Box::new(plan),
            exprs: map.iter().map(|&m| Expr::Col(m)).collect(),
        }
    }
}
