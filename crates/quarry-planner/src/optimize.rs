//! Choices made after binding, with the engine's statistics (the join order is chosen
//! earlier, as each SELECT's FROM clause is bound: [`crate::joinorder`]): index-only reads, index order instead of a sort (`ORDER BY … LIMIT`, `MIN`/`MAX`), index nested-loop joins,
//! and the fall back to a full scan when an index would fetch most of the table. Last,
//! projections of plain columns are read through ([`crate::fuse`]) and joins narrowed to
//! the columns read above them ([`crate::prune`]).
//!
//! Costs are in "row reads": a row-table row read in file order by a scan costs 1, a row
//! fetched through an index costs `FETCH`, an index entry read costs `ENTRY`, an index
//! descent `PROBE`, inserting a row into a hash join's table `BUILD`. `FETCH` and `PROBE`
//! are the row engine's speeds against its scan's in a table that stays in the CPU's
//! caches, and grow with a larger table's size (`uncached`); a column table's scan row
//! costs `COLUMN_SCAN`, its fetch `COLUMN_FETCH` and a descent of its index
//! `COLUMN_PROBE` on the same scale. An inner join is also costed as a hash join that
//! builds on its left rows and filters the table's scan by their keys: a column table
//! checks a key on its chunk (`COLUMN_KEY_CHECK`) and makes a row that passed
//! (`COLUMN_FILTERED_ROW`); a row table's scan walks every record (a scan row each) and
//! decodes the rows that pass (`ROW_FILTERED_ROW`).

use std::collections::BTreeSet;

use quarry_catalog::TableEntry;
use quarry_common::Value;

use crate::bind::{columns_read, columns_used};
use quarry_executor::cardinality::{
    access_estimate, estimate_rows, rows_per_key, scan_rows_known, table_rows,
};
use quarry_executor::expr::and_all;
use quarry_executor::expr::{BinOp, Expr};
use quarry_executor::plan::{Access, AggFunc, JoinKind, Plan, ReadMode};

/// A row-table row fetched by id, against a row its scan reads, when the table is small
/// enough to stay in the CPU's caches (`uncached`).
pub(crate) const FETCH: f64 = 3.0;
/// A row of a column table read by a scan: conditions are evaluated on encoded chunks
/// and only the columns read are decoded (TPC-H's lineitem scans at ~10 M rows/s).
pub(crate) const COLUMN_SCAN: f64 = 0.1;
/// A row fetched by id from a column table: the columns read are taken from their
/// decoded chunks (the chunk cache, once a chunk was read).
pub(crate) const COLUMN_FETCH: f64 = 1.0;
pub(crate) const ENTRY: f64 = 0.2;
/// A descent of a row table's index, as `FETCH`.
pub(crate) const PROBE: f64 = 2.0;
/// Row tables of up to this many rows are costed as cache-resident; `FETCH` and `PROBE`
/// grow with the doublings past it, up to `UNCACHED` times.
const CACHED_ROWS: f64 = 10_000.0;
/// How much more a fetch and a descent cost in a table far larger than the caches
/// (TPC-H SF 0.1, 2 cores, November 2026): a scan of orders checking a condition on each
/// of its 150 000 rows took 15 ms, 0.1 µs a row; 29 850 lineitem rows read through a
/// range of its `l_partkey` index 18 ms, 0.6 µs a row; looking up and fetching their
/// 29 850 orders by primary key 49 ms more, 1.65 µs each: 16 scan rows, where `PROBE +
/// FETCH` is 5.
const UNCACHED: f64 = 3.3;
/// A descent of a column table's key index: a binary search of its packed entries in
/// memory. With `COLUMN_FETCH`, measured on TPC-H SF 1's orders: 320 000 lookups by
/// primary key from lineitem rows in 0.85 s, where building a hash table on all of
/// orders' 1.5 M rows took 1.6 s (so 2.6 µs a lookup and fetch, 1.1 µs a row built).
pub(crate) const COLUMN_PROBE: f64 = 0.5;
/// Cost of inserting one row into a hash join's table.
pub(crate) const BUILD: f64 = 0.5;

/// A value of a column table's key column checked against a runtime filter's keys on its
/// chunk (a bitmap or hash probe, before any row is made).
pub(crate) const COLUMN_KEY_CHECK: f64 = 0.005;
/// A row of a column table that passed a runtime filter: made from its chunks, then
/// probed into the join's table.
pub(crate) const COLUMN_FILTERED_ROW: f64 = 0.3;
/// A row of a row table that passed a runtime filter: the rest of its record decoded,
/// then probed into the join's table (its key was checked by the walk a scan row costs).
pub(crate) const ROW_FILTERED_ROW: f64 = 1.0;
/// How much cheaper than index probes a filtered hash join must be costed to be chosen.
const FILTERED_MARGIN: f64 = 1.5;

/// Cost of reading one row of `table` by a full scan.
pub(crate) fn scan_cost(table: &TableEntry) -> f64 {
    if table.columnar() {
        COLUMN_SCAN
    } else {
        1.0
    }
}

/// Cost of one descent of an index of `table`.
pub(crate) fn probe_cost(table: &TableEntry) -> f64 {
    if table.columnar() {
        COLUMN_PROBE
    } else {
        PROBE * uncached(table)
    }
}

/// Cost of fetching one row of `table` by id.
pub(crate) fn fetch_cost(table: &TableEntry) -> f64 {
    if table.columnar() {
        COLUMN_FETCH
    } else {
        FETCH * uncached(table)
    }
}

/// How much dearer than in a cache-resident table a row table's fetches and descents are:
/// a scan reads in file order whatever the size, where each fetch of a large table misses
/// the caches. 1 up to `CACHED_ROWS` rows, one more per doubling past it, at most
/// `UNCACHED` (MariaDB's plans for small tables, which `tests/slt/explain.slt` holds,
/// are kept).
fn uncached(table: &TableEntry) -> f64 {
    (1.0 + (table_rows(table) / CACHED_ROWS).log2()).clamp(1.0, UNCACHED)
}

/// Plans after each rewrite as `EXPLAIN FORMAT=TREE` lines, with the rewrite's name, in
/// the order made (`Binder::trace`).
pub type Trace = Vec<(&'static str, Vec<String>)>;

/// Add `plan` as it is after `pass` to `trace`, when there is one.
pub(crate) fn record(trace: Option<&mut Trace>, pass: &'static str, plan: &Plan) {
    if let Some(t) = trace {
        t.push((pass, crate::explain::tree(plan, None, false)));
    }
}

/// Run every post-binding choice over one SELECT's plan; with a `trace`, record the plan
/// as bound and after each pass.
pub fn optimize(plan: Plan, mut trace: Option<&mut Trace>) -> Plan {
    let mut step = |pass: &'static str, plan: Plan| {
        record(trace.as_deref_mut(), pass, &plan);
        plan
    };
    let plan = step("bound", plan);
    let plan = step("order_by_index", order_by_index(plan));
    let plan = step(
        "eager_aggregation",
        crate::eager_agg::eager_aggregation(plan),
    );
    let plan = step("index_joins", index_joins(plan));
    let plan = step("fuse_projections", crate::fuse::fuse_projections(plan));
    let mut plan = step("prune_columns", crate::prune::prune_columns(plan));
    need(&mut plan, None);
    step("index_only", plan)
}

/// Columns of a node's output that the nodes above read (`None`: every column).
type Need = Option<BTreeSet<usize>>;

fn add_cols(e: &Expr, need: &mut Need) {
    match (columns_read(e), need.as_mut()) {
        (Some(cols), Some(set)) => set.extend(cols),
        (None, _) => *need = None,
        _ => {}
    }
}

/// In a `Need`: no value is read, but rows must keep their full width.
const WIDTH: usize = usize::MAX;

fn nothing() -> Need {
    Some(BTreeSet::new())
}

/// Walk down from the root telling each node which of its columns are read above, so
/// scans learn whether an index alone can answer them.
fn need(plan: &mut Plan, n: Need) {
    match plan {
        Plan::Scan { .. } => finish_scan(plan, n),
        Plan::Filter { input, pred } => {
            let mut n = n;
            add_cols(pred, &mut n);
            need(input, n)
        }
        // A projection evaluates every expression, read above or not: an unread column
        // reference may see NULL from an index-only row, but the row must have the column.
        Plan::Project { input, exprs } => {
            let mut m = nothing();
            for (i, e) in exprs.iter().enumerate() {
                let read = n.as_ref().is_none_or(|s| s.contains(&i));
                match (read, e, m.as_mut()) {
                    (false, Expr::Col(_) | Expr::Lit(_), Some(set)) => {
                        set.insert(WIDTH);
                    }
                    _ => add_cols(e, &mut m),
                }
            }
            need(input, m)
        }
        Plan::Aggregate {
            input, group, aggs, ..
        } => {
            let mut m = nothing();
            group.iter().for_each(|g| add_cols(g, &mut m));
            aggs.iter()
                .flat_map(|a| a.args.iter())
                .for_each(|e| add_cols(e, &mut m));
            need(input, m)
        }
        Plan::Sort { input, keys } => {
            let mut m = n;
            keys.iter().for_each(|(e, _)| add_cols(e, &mut m));
            need(input, m)
        }
        Plan::Limit { input, .. } => need(input, n),
        // Window calls append their columns after the input's: the input keeps its width.
        Plan::Window { input, specs, .. } => {
            let Some(base) = quarry_executor::plan::width(input) else {
                return need(input, None);
            };
            let mut m = n.map(|s| s.into_iter().filter(|&c| c < base).collect());
            keep_width(&mut m);
            for s in specs.iter() {
                s.partition.iter().for_each(|e| add_cols(e, &mut m));
                s.order.iter().for_each(|(e, _)| add_cols(e, &mut m));
                for (_, c) in &s.calls {
                    c.args.iter().for_each(|e| add_cols(e, &mut m));
                    if let quarry_executor::plan::WinFunc::Agg(a) = &c.func {
                        a.args.iter().for_each(|e| add_cols(e, &mut m));
                    }
                }
            }
            need(input, m)
        }
        Plan::Distinct { input, keys, .. } => {
            let mut m = n;
            if let Some(s) = m.as_mut() {
                s.extend(0..*keys);
            }
            need(input, m)
        }
        Plan::Join {
            left,
            right,
            left_keys,
            right_keys,
            on,
            ..
        } => {
            let Some(lw) = quarry_executor::plan::width(left) else {
                need(left, None);
                need(right, None);
                return;
            };
            let mut all = n;
            if let Some(on) = on {
                add_cols(on, &mut all);
            }
            let (mut l, mut r) = split(&all, lw);
            keep_width(&mut l);
            left_keys.iter().for_each(|e| add_cols(e, &mut l));
            right_keys.iter().for_each(|e| add_cols(e, &mut r));
            need(left, l);
            need(right, r);
        }
        Plan::IndexJoin {
            left,
            table,
            keys,
            left_keys,
            right_keys,
            filter,
            on,
            columns,
            ..
        } => {
            let Some(lw) = quarry_executor::plan::width(left) else {
                return need(left, None);
            };
            let mut all = n;
            if let Some(on) = on {
                add_cols(on, &mut all);
            }
            let (mut l, mut r) = split(&all, lw);
            filter
                .iter()
                .chain(right_keys.iter())
                .for_each(|e| add_cols(e, &mut r));
            let width = table.def.columns.len();
            *columns = r.map(|s| s.into_iter().filter(|&c| c < width).collect());
            keep_width(&mut l);
            keys.iter()
                .chain(left_keys.iter())
                .for_each(|e| add_cols(e, &mut l));
            need(left, l)
        }
        Plan::Union { inputs, .. } => inputs.iter_mut().for_each(|p| need(p, None)),
        Plan::Recursive { anchors, steps, .. } => anchors
            .iter_mut()
            .chain(steps.iter_mut())
            .for_each(|p| need(p, None)),
        Plan::SetOp { left, right, .. } => {
            need(left, None);
            need(right, None);
        }
        // Its plan was made whole when its query was bound: every read gets every column.
        Plan::Shared { .. } => {}
        Plan::Dual | Plan::Values(_) | Plan::WorkTable { .. } => {}
    }
}

/// A join's left input keeps its full width even when nothing reads it: the right
/// input's columns come after it (`SELECT b.pk FROM t a, t b` read past an empty row).
fn keep_width(n: &mut Need) {
    if let Some(s) = n.as_mut() {
        s.insert(WIDTH);
    }
}

fn split(n: &Need, lw: usize) -> (Need, Need) {
    match n {
        None => (None, None),
        Some(s) => {
            let mut l: BTreeSet<usize> = s.iter().copied().filter(|&c| c < lw).collect();
            let mut r: BTreeSet<usize> = s
                .iter()
                .filter(|&&c| c >= lw && c != WIDTH)
                .map(|c| c - lw)
                .collect();
            if s.contains(&WIDTH) {
                l.insert(WIDTH);
                r.insert(WIDTH);
            }
            (Some(l), Some(r))
        }
    }
}

/// Whether index `ii` of `table` gives back every column in `n`.
fn covers(table: &TableEntry, ii: usize, n: &Need) -> bool {
    let Some(cols) = n else { return false };
    let ix = &table.def.indexes[ii];
    let exact = table.handle.index_covers(ii);
    cols.iter().filter(|&&c| c != WIDTH).all(|c| {
        ix.columns
            .iter()
            .position(|x| x == c)
            .is_some_and(|k| exact.get(k).copied().unwrap_or(false))
    })
}

/// A scan learns what is read from it: index-only when its index holds every column read
/// (or a full scan can become a scan of the smallest such index), and a full scan instead
/// of an index path that would fetch most of the table.
fn finish_scan(plan: &mut Plan, n: Need) {
    let Plan::Scan {
        table,
        filter,
        index_filter,
        access,
        read,
        order,
        pushed,
        columns,
        ..
    } = plan
    else {
        return;
    };
    let above = n.clone();
    // A plan optimized before (a view's, a derived table's) is split again from whole:
    // what went to the engine and what was to be checked on index entries come back to
    // the filter first (the index condition was lost here, and a derived table's
    // `b = 22 AND b > 39` returned the rows with b = 22).
    for part in [pushed.take(), index_filter.take()].into_iter().flatten() {
        *filter = quarry_executor::expr::and_all(filter.take().into_iter().chain([part]).collect());
    }
    // With an index path, the rows need checking only against what the key range does
    // not answer; a fall back to a full scan keeps the whole filter.
    let mut reduced = filter.clone();
    drop_consumed(table, access, &mut reduced);
    let mut n = n;
    let full_need = {
        let mut m = n.clone();
        if let Some(f) = filter.as_ref() {
            add_cols(f, &mut m);
        }
        m
    };
    if let Some(f) = &reduced {
        add_cols(f, &mut n);
    }
    let only = |n: &Need| {
        if n.as_ref().is_some_and(BTreeSet::is_empty) {
            ReadMode::EntriesOnly
        } else {
            ReadMode::IndexOnly
        }
    };
    match access {
        Access::Keys { index, .. } | Access::Ranges { index, .. } => {
            let index = *index;
            if covers(table, index, &n) {
                *read = only(&n);
                *filter = reduced;
            } else if order.is_none()
                && access_estimate(table, access).is_some_and(|est| {
                    est * fetch_cost(table) > table_rows(table) * scan_cost(table)
                })
            {
                *access = Access::Full;
            } else {
                (*index_filter, *filter) = split_index_condition(table, index, reduced);
            }
        }
        Access::Full if order.is_none() && table.index_access() && !table.columnar() => {
            let best = (0..table.def.indexes.len())
                .filter(|&ii| covers(table, ii, &full_need))
                .min_by_key(|&ii| key_bytes(table, ii, usize::MAX));
            if let Some(ii) = best {
                *access = Access::Ranges {
                    index: ii,
                    ranges: vec![(None, None)],
                };
                *read = only(&full_need);
            }
        }
        Access::Full => {}
    }
    if matches!(access, Access::Full) {
        // A full scan offers its conditions to the engine.
        (*pushed, *filter) = quarry_executor::pushdown::split(table, filter.take());
    }
    // A scan names the columns it needs — those read above it and by the conditions
    // left to check on its rows — whether it reads them in file order or fetches them
    // through an index.
    if matches!(access, Access::Full) || *read == ReadMode::Rows {
        let mut m = above;
        if let Some(f) = filter.as_ref() {
            add_cols(f, &mut m);
        }
        let width = table.def.columns.len();
        *columns = m.map(|s| s.into_iter().filter(|&c| c < width).collect());
    }
}

/// Index condition pushdown: the conjuncts of `filter` that read only columns index `ii`
/// gives back exactly, to be checked on index entries before rows are fetched, and the
/// rest, checked on the fetched rows.
fn split_index_condition(
    table: &TableEntry,
    ii: usize,
    filter: Option<Expr>,
) -> (Option<Expr>, Option<Expr>) {
    let Some(f) = filter else {
        return (None, None);
    };
    let mut parts = vec![];
    quarry_executor::expr::conjuncts(f, &mut parts);
    let (on_entry, on_row): (Vec<Expr>, Vec<Expr>) = parts.into_iter().partition(|c| {
        columns_used(c).is_some_and(|cols| {
            !cols.is_empty() && covers(table, ii, &Some(cols.into_iter().collect()))
        })
    });
    (and_all(on_entry), and_all(on_row))
}

/// A literal that column `col` holds unchanged, so a key built from it selects exactly
/// the rows the comparison selects (strings compare by the same collation as keys).
fn exact_literal(table: &TableEntry, col: usize, e: &Expr) -> bool {
    use quarry_common::TypeKind;
    let ty = table.def.columns[col].ty;
    // A parameter's range or key on an integer column is exact whatever its value (see
    // `exec::access_ranges`); other types need the value to judge.
    if matches!(e, Expr::Param(_)) {
        return ty.is_integer();
    }
    let Expr::Lit(v) = e else { return false };
    let fits = || {
        quarry_executor::expr::cast_value(v.clone(), &ty)
            .is_ok_and(|c| c.sql_cmp(v) == Some(std::cmp::Ordering::Equal))
    };
    match v {
        Value::Int(_) | Value::UInt(_) => {
            ty.is_integer() || (ty.kind == TypeKind::Decimal && fits())
        }
        Value::Decimal(_) => ty.kind == TypeKind::Decimal && fits(),
        Value::Str(s) => {
            ty.is_string()
                && !ty.is_binary()
                && (ty.len == 0 || s.chars().count() <= ty.len as usize)
        }
        _ => false,
    }
}

/// Remove from a scan's filter the conditions its index access already answers exactly:
/// the lookup's `col = literal` / `col IN (literals)`, the range's comparisons. What is
/// left is checked against each row (MySQL's "Using where").
fn drop_consumed(table: &TableEntry, access: &Access, filter: &mut Option<Expr>) {
    let Some(f) = filter.take() else { return };
    let mut parts = vec![];
    quarry_executor::expr::conjuncts(f, &mut parts);
    let same_bound = |a: &crate::bind::Bound, b: &crate::bind::Bound, col: usize| match (a, b) {
        (None, None) => true,
        (Some((x, xi)), Some((y, yi))) => xi == yi && x.same(y) && exact_literal(table, col, x),
        _ => false,
    };
    let consumed = |c: &Expr| -> bool {
        match access {
            Access::Full => false,
            Access::Keys { index, keys } => {
                let ix = &table.def.indexes[*index];
                let at = |col: usize| ix.columns[..keys[0].len()].iter().position(|&x| x == col);
                let values_at = |i: usize| keys.iter().map(move |k| &k[i]);
                match c {
                    Expr::Bin(BinOp::Eq, a, b) => {
                        let (col, lit) = match (&**a, &**b) {
                            (Expr::Col(col), lit) | (lit, Expr::Col(col)) => (*col, lit),
                            _ => return false,
                        };
                        at(col).is_some_and(|i| {
                            ix.prefix[i] == 0
                                && exact_literal(table, col, lit)
                                && values_at(i).all(|k| k.same(lit))
                        })
                    }
                    Expr::InList {
                        expr,
                        list,
                        negated: false,
                    } => match **expr {
                        Expr::Col(col) => at(col).is_some_and(|i| {
                            ix.prefix[i] == 0
                                && list.iter().all(|l| exact_literal(table, col, l))
                                && list.iter().all(|l| values_at(i).any(|k| k.same(l)))
                                && values_at(i).all(|k| list.iter().any(|l| l.same(k)))
                        }),
                        _ => false,
                    },
                    _ => false,
                }
            }
            Access::Ranges { index, ranges } => {
                let ix = &table.def.indexes[*index];
                if ix.prefix[0] > 0 {
                    return false;
                }
                let col = ix.columns[0];
                let mine = match c {
                    Expr::Bin(BinOp::Or, ..) => {
                        let mut alts = vec![];
                        crate::bind::disjuncts(c, &mut alts);
                        let mut all = vec![];
                        for alt in alts {
                            match crate::bind::ranges_of(alt, &|_| true, &|_| false) {
                                Some((x, rs)) if x == col => all.extend(rs),
                                _ => return false,
                            }
                        }
                        all
                    }
                    other => match crate::bind::ranges_of(other, &|_| true, &|_| false) {
                        Some((x, rs)) if x == col => rs,
                        _ => return false,
                    },
                };
                if ranges.len() == 1 && mine.len() == 1 {
                    // One side of a range may come from each of two conditions.
                    let (lo, hi) = &ranges[0];
                    let (ml, mh) = &mine[0];
                    (ml.is_none() || same_bound(ml, lo, col))
                        && (mh.is_none() || same_bound(mh, hi, col))
                } else {
                    mine.len() == ranges.len()
                        && mine.iter().zip(ranges).all(|((ml, mh), (lo, hi))| {
                            same_bound(ml, lo, col) && same_bound(mh, hi, col)
                        })
                }
            }
        }
    };
    let kept: Vec<Expr> = parts.into_iter().filter(|c| !consumed(c)).collect();
    *filter = kept
        .into_iter()
        .reduce(|a, b| Expr::Bin(BinOp::And, Box::new(a), Box::new(b)));
}

/// MySQL's `key_len`: bytes of the first `parts` key columns as MySQL would store them
/// (strings at 4 bytes per character, +2 for a length, +1 for a NULL flag).
pub fn key_bytes(table: &TableEntry, ii: usize, parts: usize) -> usize {
    use quarry_common::TypeKind::*;
    let ix = &table.def.indexes[ii];
    ix.columns
        .iter()
        .zip(&ix.prefix)
        .take(parts)
        .map(|(&c, &p)| {
            let col = &table.def.columns[c];
            let chars = if p > 0 { p } else { col.ty.len.max(1) } as usize;
            let base = match col.ty.kind {
                TinyInt | Year => 1,
                SmallInt => 2,
                MediumInt | Date => 3,
                Int | Float => 4,
                BigInt | Double => 8,
                Decimal => (col.ty.len as usize).div_ceil(9) * 4,
                DateTime | Timestamp | Time => 5 + (col.ty.scale as usize).div_ceil(2),
                Char | Binary => chars * if col.ty.is_binary() { 1 } else { 4 },
                VarChar | VarBinary => chars * if col.ty.is_binary() { 1 } else { 4 } + 2,
                Text | Blob | Null => chars + 2,
            };
            base + usize::from(col.nullable)
        })
        .sum()
}

/// `… ORDER BY cols LIMIT n` over one table, where an index has those columns first:
/// read in index order (backwards for DESC) and stop after n rows, with no sort. A single
/// `MIN(col)` / `MAX(col)` likewise reads the first / last non-NULL entry.
fn order_by_index(plan: Plan) -> Plan {
    match plan {
        Plan::Project { input, exprs } => Plan::Project {
            input: Box::new(order_by_index(*input)),
            exprs,
        },
        Plan::Limit {
            input,
            limit,
            offset,
        } => {
            let input = match *input {
                Plan::Sort { mut input, keys } => {
                    if sorted_by_index(&mut input, &keys) {
                        input
                    } else {
                        Box::new(Plan::Sort { input, keys })
                    }
                }
                other => Box::new(other),
            };
            Plan::Limit {
                input,
                limit,
                offset,
            }
        }
        Plan::Aggregate {
            mut input,
            group,
            aggs,
            rollup,
        } => {
            if group.is_empty() && aggs.len() == 1 && min_max_by_index(&mut input, &aggs[0]) {
                input = Box::new(Plan::Limit {
                    input,
                    limit: Some(1),
                    offset: 0,
                });
            }
            Plan::Aggregate {
                input,
                group,
                aggs,
                rollup,
            }
        }
        other => other,
    }
}

/// The scan under `plan` (directly or below one filter).
fn scan_below(plan: &mut Plan) -> Option<&mut Plan> {
    match plan {
        Plan::Scan { .. } => Some(plan),
        Plan::Filter { input, .. } => match input.as_mut() {
            s @ Plan::Scan { .. } => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// Make the scan under `plan` produce rows ordered by the table columns `cols` (each
/// descending where `desc` says so), if an index allows it with the scan's access path:
/// its columns must be those, each stored in the wanted direction (read forwards) or each
/// in the opposite one (read backwards).
fn order_scan(plan: &mut Plan, cols: &[usize], desc: &[bool]) -> bool {
    let Some(Plan::Scan {
        table,
        access,
        order,
        ..
    }) = scan_below(plan)
    else {
        return false;
    };
    if !table.index_access() {
        return false;
    }
    // Some(backwards) when index `ii`, after its first `skip` columns, orders by `cols`.
    let direction = |ii: usize, skip: usize| {
        let ix = &table.def.indexes[ii];
        let n = skip + cols.len();
        if ix.columns.len() < n
            || ix.columns[skip..n] != *cols
            || ix.prefix[..n].iter().any(|&p| p != 0)
        {
            return None;
        }
        let mut against = desc.iter().zip(&ix.desc[skip..n]).map(|(w, s)| w != s);
        let first = against.next()?;
        against.all(|a| a == first).then_some(first)
    };
    let fits = |ii: usize, skip: usize| direction(ii, skip).is_some();
    let chosen = match access {
        Access::Full => (0..table.def.indexes.len())
            .find(|&ii| fits(ii, 0))
            .map(|ii| (ii, true)),
        Access::Ranges { index, ranges } if ranges.len() == 1 && fits(*index, 0) => {
            Some((*index, false))
        }
        // `WHERE a = 5 ORDER BY b` with an index on (a, b), even if the lookup had picked
        // another index starting with a.
        Access::Keys { index, keys } if keys.len() == 1 => {
            let m = keys[0].len();
            let lead = table.def.indexes[*index].columns[..m].to_vec();
            let same_lead =
                |ii: usize| table.def.indexes[ii].columns.get(..m) == Some(lead.as_slice());
            let found = std::iter::once(*index)
                .chain(0..table.def.indexes.len())
                .find(|&ii| same_lead(ii) && fits(ii, m));
            if let Some(ii) = found {
                *index = ii;
            }
            found.map(|ii| (ii, false))
        }
        _ => None,
    };
    let Some((ii, from_full)) = chosen else {
        return false;
    };
    let skip = match access {
        Access::Keys { keys, .. } => keys[0].len(),
        _ => 0,
    };
    let backwards = direction(ii, skip).expect("the chosen index fits");
    if from_full {
        *access = Access::Ranges {
            index: ii,
            ranges: vec![(None, None)],
        };
    }
    *order = Some(backwards);
    true
}

/// `Sort(keys)` over `Project(exprs)` over a scan: true (and the scan ordered) when the
/// keys are plain table columns an index orders.
fn sorted_by_index(input: &mut Plan, keys: &[(Expr, bool)]) -> bool {
    let Plan::Project {
        input: below,
        exprs,
    } = input
    else {
        return false;
    };
    let desc: Vec<bool> = keys.iter().map(|(_, d)| *d).collect();
    let mut cols = Vec::with_capacity(keys.len());
    for (k, _) in keys {
        match k {
            Expr::Col(p) => match exprs.get(*p) {
                Some(Expr::Col(c)) => cols.push(*c),
                _ => return false,
            },
            _ => return false,
        }
    }
    order_scan(below, &cols, &desc)
}

fn min_max_by_index(input: &mut Box<Plan>, agg: &quarry_executor::plan::Agg) -> bool {
    let desc = match agg.func {
        AggFunc::Min => false,
        AggFunc::Max => true,
        _ => return false,
    };
    let [Expr::Col(c)] = agg.args.as_slice() else {
        return false;
    };
    let c = *c;
    // MAX of a string read backwards meets the last of values its collation calls equal
    // ('b', 'B'): MariaDB, and this plan's scan, keep the first one met, which a backward
    // read cannot tell — unless a unique key on the column leaves no two such values.
    // (MIN reads forwards: the first is the first.)
    if let Some(Plan::Scan { table, .. }) = scan_below(input) {
        let ty = table.def.columns[c].ty;
        let unique = table
            .def
            .indexes
            .iter()
            .any(|ix| ix.unique && ix.columns == [c] && ix.prefix.iter().all(|&p| p == 0));
        if desc && ty.is_string() && !ty.is_binary() && !unique {
            return false;
        }
    }
    // Only where the scan has no other index path (a selective filter stays cheaper).
    match scan_below(input) {
        Some(Plan::Scan {
            access: Access::Full,
            ..
        }) => {}
        Some(Plan::Scan {
            access: Access::Ranges { index, ranges },
            table,
            ..
        }) if ranges.len() == 1 && table.def.indexes[*index].columns[0] == c => {}
        _ => return false,
    }
    if !order_scan(input, &[c], &[desc]) {
        return false;
    }
    // NULLs sort first and never count as a minimum or maximum.
    let not_null = Expr::IsNull(Box::new(Expr::Col(c)), true);
    if let Some(Plan::Scan { filter, .. }) = scan_below(input) {
        *filter = Some(match filter.take() {
            None => not_null,
            Some(f) => Expr::Bin(BinOp::And, Box::new(f), Box::new(not_null)),
        });
    }
    true
}

/// Replace hash joins whose right input is a table with an index on the join key by index
/// nested-loop joins, when probing once per left row costs less than reading the right
/// input whole.
fn index_joins(plan: Plan) -> Plan {
    match plan {
        Plan::Join {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            on,
            right_width,
        } => {
            let left = Box::new(index_joins(*left));
            let right = index_joins(*right);
            match probe_plan(&left, &right, &left_keys, &right_keys, kind, on.as_ref()) {
                Some((index, keys)) => {
                    let Plan::Scan {
                        table,
                        alias,
                        filter,
                        pushed,
                        ..
                    } = right
                    else {
                        unreachable!("probe_plan takes scans only")
                    };
                    // Probed rows are checked here, pushed conditions included.
                    let filter =
                        quarry_executor::expr::and_all(filter.into_iter().chain(pushed).collect());
                    Plan::IndexJoin {
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
                        columns: None,
                    }
                }
                None => Plan::Join {
                    left,
                    right: Box::new(right),
                    kind,
                    left_keys,
                    right_keys,
                    on,
                    right_width,
                },
            }
        }
        other => other.map_inputs(&mut index_joins),
    }
}

/// The index of `table` best probed by equality on the columns `cols` (None: a key that
/// is not a plain column): the index, which of `cols` give its leading columns in order,
/// and the rows expected per probe.
pub(crate) fn best_probe(
    table: &TableEntry,
    cols: &[Option<usize>],
) -> Option<(usize, Vec<usize>, f64)> {
    if !table.index_access() {
        return None;
    }
    let mut best: Option<(usize, Vec<usize>, f64)> = None;
    for (ii, ix) in table.def.indexes.iter().enumerate() {
        let mut at = vec![];
        for (&c, &p) in ix.columns.iter().zip(&ix.prefix) {
            match cols.iter().position(|k| *k == Some(c)) {
                Some(j) if p == 0 => at.push(j),
                _ => break,
            }
        }
        if at.is_empty() {
            continue;
        }
        let rpk = rows_per_key(table, ii, at.len());
        if best.as_ref().is_none_or(|b| rpk < b.2) {
            best = Some((ii, at, rpk));
        }
    }
    best
}

/// Rows an index nested-loop join fetches per probe of `rpk` entries: all of them, but a
/// semi or anti join stops at its first match — the first entry when nothing but the
/// probed key is checked; with other conditions, half of them for a semi join (most
/// probes find a match), all for an anti join (most find none).
fn fetched_per_probe(kind: JoinKind, rpk: f64, residual: bool) -> f64 {
    match kind {
        JoinKind::Semi | JoinKind::Anti if !residual => rpk.min(1.0),
        JoinKind::Semi => (1.0 + rpk) / 2.0,
        _ => rpk,
    }
}

/// Cost of fetching the `n` rows one probe of index `ii` of `table` finds. A row table's
/// rows of one primary-key prefix were most likely inserted together (an order's lines),
/// so they lie together in its file: past the first, each costs a cache-resident fetch.
pub(crate) fn fetched_cost(table: &TableEntry, ii: usize, n: f64) -> f64 {
    let clustered = !table.columnar() && table.def.indexes[ii].primary;
    match clustered && n > 1.0 {
        true => fetch_cost(table) + (n - 1.0) * FETCH,
        false => n * fetch_cost(table),
    }
}

/// The index of the right scan to probe and the left expressions for its leading
/// columns, if an index nested-loop join is cheaper than the hash join.
fn probe_plan(
    left: &Plan,
    right: &Plan,
    left_keys: &[Expr],
    right_keys: &[Expr],
    kind: JoinKind,
    on: Option<&Expr>,
) -> Option<(usize, Vec<Expr>)> {
    let Plan::Scan {
        table,
        read: ReadMode::Rows,
        order: None,
        filter,
        pushed,
        ..
    } = right
    else {
        return None;
    };
    let cols: Vec<Option<usize>> = right_keys
        .iter()
        .map(|k| match k {
            Expr::Col(c) => Some(*c),
            _ => None,
        })
        .collect();
    let (ii, at, rpk) = best_probe(table, &cols)?;
    // Whether a probed row can fail the join: a condition besides the probed keys.
    let residual =
        on.is_some() || filter.is_some() || pushed.is_some() || at.len() < right_keys.len();
    let keys = at.into_iter().map(|j| left_keys[j].clone()).collect();
    let outer = estimate_rows(left)?;
    let fetch = fetch_cost(table);
    let per_probe = fetched_per_probe(kind, rpk, residual);
    let probe_cost = outer * (probe_cost(table) + fetched_cost(table, ii, per_probe));
    // The hash join reads the right input whole and inserts the rows its conditions keep
    // (all of them, for all it knows, past the conditions whose share is known).
    let kept = scan_rows_known(right).unwrap_or_else(|| table_rows(table));
    let hash_cost = match right {
        Plan::Scan { table, access, .. } => match access_estimate(table, access) {
            Some(n) if !matches!(access, Access::Full) => n * fetch + kept * BUILD,
            _ => table_rows(table) * scan_cost(table) + kept * BUILD,
        },
        _ => return None,
    } + outer * ENTRY;
    // The filtered scan must win by a margin: its cost is mostly fixed (every key of the
    // table checked) where the probes' is per outer row, so an outer estimate too high
    // (TPC-H Q12's lineitem rows: 600 000 expected, 31 000 read) makes it look cheaper
    // than it is, and at a tie the probes read least.
    let filtered_cost = FILTERED_MARGIN
        * filtered_hash_cost(left, right, left_keys, right_keys, kind, outer, rpk)
            .unwrap_or(f64::INFINITY);
    (probe_cost < hash_cost.min(filtered_cost)).then_some((ii, keys))
}

/// The cost of the hash join of `left` (of `outer` rows) and the table scan `right` when
/// it builds on its left rows and hands their keys to the scan as a runtime filter
/// (`quarry_executor::join::runtime_filter`): the scan checks every key and makes only the
/// rows whose key is among the left's — about `outer * rpk` of them, of
/// which its own conditions keep their share. None when the join would not build on its
/// left (`quarry_executor::join::builds_left`, which the executor asks too) or no filter reaches
/// the scan's engine (not a full scan, or no integer key column), and for joins other
/// than inner ones. A column table checks the keys on its chunks; a row table's scan
/// walks every record to its key cells, as it would to check any condition.
fn filtered_hash_cost(
    left: &Plan,
    right: &Plan,
    left_keys: &[Expr],
    right_keys: &[Expr],
    kind: JoinKind,
    outer: f64,
    rpk: f64,
) -> Option<f64> {
    let Plan::Scan {
        table,
        access: Access::Full,
        ..
    } = right
    else {
        return None;
    };
    // Inner joins only: a semi or anti join's probes stop at a key's first match, and a
    // LEFT join's probe side is never filtered.
    if kind != JoinKind::Inner
        || !quarry_executor::join::builds_left(
            kind,
            left,
            right,
            left_keys,
            table.def.columns.len(),
        )
        || quarry_executor::join::filter_targets(right, right_keys, left_keys, kind, false)
            .is_empty()
    {
        return None;
    }
    let rows = table_rows(table);
    let kept = scan_rows_known(right).unwrap_or(rows);
    let passing = (outer * rpk).min(rows) * (kept / rows.max(1.0));
    let (check, made) = match table.columnar() {
        true => (COLUMN_KEY_CHECK, COLUMN_FILTERED_ROW),
        false => (scan_cost(table), ROW_FILTERED_ROW),
    };
    Some(outer * BUILD + rows * check + passing * (made + ENTRY))
}
