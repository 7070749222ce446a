//! EXPLAIN: a plan as MySQL's table (one row per table access, with `type`, `key`,
//! `rows`, `Extra`), as MySQL's `FORMAT=TREE`, and with `EXPLAIN ANALYZE`'s actual rows,
//! loops and times per operator (collected by `exec::run` into `ExecCtx::profile`).

use std::collections::HashMap;

use quarry_common::Value;
use quarry_executor::join::{builds_left, filter_targets};
use quarry_executor::profile::{node_key, NodeStat, Profile};

use crate::bind::columns_used;
use crate::optimize::key_bytes;
use quarry_executor::cardinality::{access_estimate, estimate_rows, rows_per_key};
use quarry_executor::exec::ScanHow;
use quarry_executor::expr::{Expr, SubQuery, UnOp};
use quarry_executor::plan::{Access, AggFunc, JoinKind, Plan, ReadMode};

/// Names of the columns a join's condition reads: its left input's, then its right's.
fn joined_layout(plan: &Plan) -> Vec<String> {
    match plan {
        Plan::Join { left, right, .. } => {
            let mut v = layout(left);
            v.extend(layout(right));
            v
        }
        Plan::IndexJoin {
            left, table, alias, ..
        } => {
            let mut v = layout(left);
            v.extend(table_cols(table, alias));
            v
        }
        other => layout(other),
    }
}

/// Names of a plan's output columns, for printing conditions.
fn layout(plan: &Plan) -> Vec<String> {
    match plan {
        Plan::Scan { table, alias, .. } => table_cols(table, alias),
        // A semi or anti join's rows are its left input's; its condition reads both.
        Plan::Join { left, kind, .. } | Plan::IndexJoin { left, kind, .. } if kind.left_only() => {
            layout(left)
        }
        Plan::Join { .. } | Plan::IndexJoin { .. } => joined_layout(plan),
        Plan::Filter { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Distinct { input, .. } => layout(input),
        Plan::Project { input, exprs } => {
            let names = layout(input);
            exprs.iter().map(|e| expr_text(e, &names)).collect()
        }
        Plan::Aggregate {
            input, group, aggs, ..
        } => {
            let names = layout(input);
            group
                .iter()
                .map(|g| expr_text(g, &names))
                .chain(aggs.iter().map(|a| {
                    if a.func == AggFunc::CountStar {
                        return "count(*)".to_string();
                    }
                    let f = agg_name(a.func);
                    let args: Vec<String> = a.args.iter().map(|e| expr_text(e, &names)).collect();
                    format!(
                        "{f}({}{})",
                        if a.distinct { "distinct " } else { "" },
                        args.join(",")
                    )
                }))
                .collect()
        }
        Plan::Window { input, specs, .. } => {
            let mut v = layout(input);
            let mut calls: Vec<(usize, String)> = specs
                .iter()
                .flat_map(|s| s.calls.iter().map(|(slot, c)| (*slot, window_text(c))))
                .collect();
            calls.sort_by_key(|(slot, _)| *slot);
            v.extend(calls.into_iter().map(|(_, t)| t));
            v
        }
        Plan::Union { inputs, .. } => inputs.first().map(layout).unwrap_or_default(),
        Plan::SetOp { left, .. } => layout(left),
        Plan::Recursive { anchors, .. } => anchors.first().map(layout).unwrap_or_default(),
        Plan::Dual | Plan::Values(_) | Plan::WorkTable { .. } => vec![],
        Plan::Shared { input, .. } => layout(input),
    }
}

/// An aggregate's name as MariaDB prints it.
fn agg_name(f: AggFunc) -> &'static str {
    match f {
        AggFunc::CountStar | AggFunc::Count => "count",
        AggFunc::Sum => "sum",
        AggFunc::Avg => "avg",
        AggFunc::Min => "min",
        AggFunc::Max => "max",
        AggFunc::First => "any_value",
        AggFunc::GroupConcat => "group_concat",
        AggFunc::BitAnd => "bit_and",
        AggFunc::BitOr => "bit_or",
        AggFunc::BitXor => "bit_xor",
        AggFunc::Std => "std",
        AggFunc::Variance => "variance",
        AggFunc::StdSamp => "stddev_samp",
        AggFunc::VarSamp => "var_samp",
    }
}

/// A window call as EXPLAIN names it (`rank() over (…)`).
fn window_text(c: &quarry_executor::plan::WinCall) -> String {
    use quarry_executor::plan::WinFunc::*;
    let f = match &c.func {
        RowNumber => "row_number",
        Rank => "rank",
        DenseRank => "dense_rank",
        PercentRank => "percent_rank",
        CumeDist => "cume_dist",
        Ntile => "ntile",
        Lag => "lag",
        Lead => "lead",
        FirstValue => "first_value",
        LastValue => "last_value",
        NthValue => "nth_value",
        Agg(a) => agg_name(a.func),
    };
    format!("{f}() over (…)")
}

fn lit_text(v: &Value) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Str(s) => format!("'{}'", s.replace('\'', "''")),
        other => other.to_string(),
    }
}

/// A condition or value as MySQL prints it in EXPLAIN (`(t.a = 5)`).
pub fn expr_text(e: &Expr, names: &[String]) -> String {
    let t = |x: &Expr| expr_text(x, names);
    match e {
        Expr::Lit(v) => lit_text(v),
        Expr::Col(i) => names.get(*i).cloned().unwrap_or_else(|| format!("#{i}")),
        Expr::Outer(up, i) => format!("<outer {up}>.#{i}"),
        Expr::Param(_) => "?".into(),
        Expr::Unary(op, a) => match op {
            UnOp::Neg => format!("-{}", t(a)),
            UnOp::Not => format!("(not {})", t(a)),
            UnOp::BitNot => format!("~{}", t(a)),
        },
        Expr::Bin(op, a, b) => {
            let o = op.symbol();
            format!("({} {o} {})", t(a), t(b))
        }
        Expr::IsNull(a, neg) => format!("({} is {}null)", t(a), if *neg { "not " } else { "" }),
        Expr::IsBool(a, v, neg) => format!(
            "({} is {}{})",
            t(a),
            if *neg { "not " } else { "" },
            if *v { "true" } else { "false" }
        ),
        Expr::Like {
            expr,
            pattern,
            negated,
            ..
        } => format!(
            "({} {}like {})",
            t(expr),
            if *negated { "not " } else { "" },
            t(pattern)
        ),
        Expr::InList {
            expr,
            list,
            negated,
        } => format!(
            "({} {}in ({}))",
            t(expr),
            if *negated { "not " } else { "" },
            list.iter().map(t).collect::<Vec<_>>().join(",")
        ),
        Expr::InSub { expr, negated, .. } => format!(
            "({} {}in (subquery))",
            t(expr),
            if *negated { "not " } else { "" }
        ),
        Expr::Exists { negated, .. } => {
            format!("{}exists(subquery)", if *negated { "not " } else { "" })
        }
        Expr::ScalarSub(_) => "(subquery)".into(),
        Expr::Between {
            expr,
            lo,
            hi,
            negated,
        } => format!(
            "({} {}between {} and {})",
            t(expr),
            if *negated { "not " } else { "" },
            t(lo),
            t(hi)
        ),
        Expr::Case { .. } => "(case …)".into(),
        Expr::Func(name, args) => format!(
            "{}({})",
            name.to_ascii_lowercase(),
            args.iter().map(t).collect::<Vec<_>>().join(",")
        ),
        Expr::Cast(a, ty) => format!("cast({} as {:?})", t(a), ty.kind).to_ascii_lowercase(),
        Expr::AggRef(i) => format!("<aggregate {i}>"),
        Expr::WinRef(i) => format!("<window {i}>"),
        Expr::SysVar(v) => format!("@@{v}"),
        Expr::UserVar(v) => format!("@{v}"),
        Expr::InsertValue(i) => format!("values(#{i})"),
        // As MariaDB shows a comparison under a collation.
        Expr::Collate(a, c) | Expr::SortKey(a, c) => format!("{} collate {}", t(a), c.name()),
    }
}

fn table_cols(table: &quarry_catalog::TableEntry, alias: &str) -> Vec<String> {
    table
        .def
        .columns
        .iter()
        .map(|c| format!("{alias}.{}", c.name))
        .collect()
}

/// `(lo <= t.a <= hi)` for each range of an access path.
fn ranges_text(table: &quarry_catalog::TableEntry, alias: &str, access: &Access) -> String {
    let names = table_cols(table, alias);
    match access {
        Access::Full => String::new(),
        Access::Keys { index, keys } => {
            let ix = &table.def.indexes[*index];
            keys.iter()
                .map(|k| {
                    let parts: Vec<String> = k
                        .iter()
                        .enumerate()
                        .map(|(i, e)| format!("{} = {}", names[ix.columns[i]], expr_text(e, &[])))
                        .collect();
                    format!("({})", parts.join(" and "))
                })
                .collect::<Vec<_>>()
                .join(" or ")
        }
        Access::Ranges { index, ranges } => {
            let col = &names[table.def.indexes[*index].columns[0]];
            ranges
                .iter()
                .map(|(lo, hi)| {
                    let mut s = String::from("(");
                    if let Some((e, incl)) = lo {
                        s += &format!("{} {} ", expr_text(e, &[]), if *incl { "<=" } else { "<" });
                    }
                    s += col;
                    if let Some((e, incl)) = hi {
                        s += &format!(" {} {}", if *incl { "<=" } else { "<" }, expr_text(e, &[]));
                    }
                    s + ")"
                })
                .collect::<Vec<_>>()
                .join(" or ")
        }
    }
}

fn is_full_range(access: &Access) -> bool {
    matches!(access, Access::Ranges { ranges, .. } if ranges.len() == 1 && ranges[0].0.is_none() && ranges[0].1.is_none())
}

fn rows_text(n: Option<f64>) -> String {
    match n {
        Some(n) => format!("{}", n.round().max(0.0) as u64),
        None => "?".into(),
    }
}

/// What one scan does, as the tree names it.
fn scan_line(
    table: &quarry_catalog::TableEntry,
    alias: &str,
    access: &Access,
    read: ReadMode,
    order: Option<bool>,
) -> String {
    let name = alias;
    let covering = if read == ReadMode::Rows {
        ""
    } else {
        "Covering index "
    };
    let reverse = if order == Some(true) {
        " (reverse)"
    } else {
        ""
    };
    let line = match access {
        Access::Full => format!("Table scan on {name}"),
        _ if is_full_range(access) => {
            let ix = match access {
                Access::Ranges { index, .. } => &table.def.indexes[*index].name,
                _ => unreachable!(),
            };
            format!(
                "{} scan on {name} using {ix}{reverse}",
                if covering.is_empty() {
                    "Index"
                } else {
                    "Covering index"
                }
            )
        }
        Access::Keys { index, keys } => {
            let ix = &table.def.indexes[*index];
            let single = ix.unique && keys[0].len() == ix.columns.len();
            let head = match (keys.len() > 1, covering.is_empty(), single) {
                (true, true, _) => "Index range scan",
                (true, false, _) => "Covering index range scan",
                (false, false, _) => "Covering index lookup",
                (false, true, true) => "Single-row index lookup",
                (false, true, false) => "Index lookup",
            };
            let over = if keys.len() > 1 { " over " } else { " " };
            format!(
                "{head} on {name} using {}{over}{}{reverse}",
                ix.name,
                ranges_text(table, alias, access)
            )
        }
        Access::Ranges { index, .. } => {
            let head = if covering.is_empty() {
                "Index range scan".to_string()
            } else {
                format!("{covering}range scan")
            };
            format!(
                "{head} on {name} using {} over {}{reverse}",
                table.def.indexes[*index].name,
                ranges_text(table, alias, access)
            )
        }
    };
    line
}

/// The Extra note of a table joined as a decorrelated subquery: the first match is
/// enough (EXISTS, IN), or no match keeps the row (NOT EXISTS).
fn semi_note(kind: JoinKind) -> Option<String> {
    match kind {
        JoinKind::Semi => Some("FirstMatch".into()),
        JoinKind::Anti => Some("Not exists".into()),
        _ => None,
    }
}

fn kind_label(kind: JoinKind) -> &'static str {
    match kind {
        JoinKind::Left => "Left",
        JoinKind::Inner => "Inner",
        JoinKind::Semi => "Semi",
        JoinKind::Anti => "Anti",
    }
}

/// The plan as MySQL's `EXPLAIN FORMAT=TREE` (with actual figures when `profile` is given;
/// with `runtime_filters`, the filters hash joins will hand their probe side's scans).
pub fn tree(plan: &Plan, profile: Option<&Profile>, runtime_filters: bool) -> Vec<String> {
    let mut cx = TreeCx {
        profile,
        filters: HashMap::new(),
    };
    if runtime_filters {
        filtered_scans(plan, &mut cx.filters);
    }
    let mut out = vec![];
    tree_node(plan, 0, &cx, &mut out);
    out
}

/// What the tree's lines are made with besides the plan.
struct TreeCx<'p> {
    profile: Option<&'p Profile>,
    /// The scans hash joins hand runtime filters, by node: the columns filtered.
    filters: HashMap<usize, Vec<usize>>,
}

/// The scans each hash join of `plan` will filter by its built keys, as the executor
/// picks them (`quarry_executor::join`): the probe side's, the side it does not build on.
fn filtered_scans(plan: &Plan, out: &mut HashMap<usize, Vec<usize>>) {
    let mut down = |p: &Plan| filtered_scans(p, out);
    match plan {
        Plan::Join {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            right_width,
            ..
        } => {
            if !left_keys.is_empty() {
                let build_left = builds_left(*kind, left, right, left_keys, *right_width);
                let targets = if build_left {
                    filter_targets(right, right_keys, left_keys, *kind, false)
                } else {
                    filter_targets(left, left_keys, right_keys, *kind, true)
                };
                for t in targets {
                    out.entry(t.node()).or_default().push(t.col());
                }
            }
            filtered_scans(left, out);
            filtered_scans(right, out);
        }
        Plan::IndexJoin { left, .. } => down(left),
        Plan::Filter { input, .. }
        | Plan::Project { input, .. }
        | Plan::Aggregate { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Distinct { input, .. }
        | Plan::Window { input, .. }
        | Plan::Shared { input, .. } => down(input),
        Plan::Union { inputs, .. } => inputs.iter().for_each(down),
        Plan::SetOp { left, right, .. } => {
            filtered_scans(left, out);
            filtered_scans(right, out);
        }
        Plan::Recursive { anchors, steps, .. } => anchors.iter().chain(steps).for_each(down),
        Plan::Scan { .. } | Plan::Dual | Plan::Values(_) | Plan::WorkTable { .. } => {}
    }
}

/// A traced plan after each rewrite (`Binder::trace`), each headed by `-- <rewrite>`; a
/// rewrite that changed nothing is one line, `-- <rewrite>: unchanged`. Subqueries are
/// bound, and so traced, before the block holding them.
pub fn passes(trace: &[(&'static str, Vec<String>)]) -> Vec<String> {
    let mut out = vec![];
    let mut last: &[String] = &[];
    for (pass, lines) in trace {
        if lines.as_slice() == last {
            out.push(format!("-- {pass}: unchanged"));
        } else {
            out.push(format!("-- {pass}"));
            out.extend(lines.iter().cloned());
            last = lines;
        }
    }
    out
}

fn push(
    out: &mut Vec<String>,
    depth: usize,
    line: String,
    est: Option<f64>,
    stat: Option<NodeStat>,
) {
    let mut s = format!("{}-> {line}", "    ".repeat(depth));
    if let Some(e) = est {
        s += &format!("  (rows={})", rows_text(Some(e)));
    }
    if let Some(st) = stat {
        s += &format!(
            " (actual time={:.3} ms rows={} loops={})",
            st.nanos as f64 / 1e6,
            st.rows,
            st.loops
        );
    }
    out.push(s);
}

fn tree_node(plan: &Plan, depth: usize, cx: &TreeCx, out: &mut Vec<String>) {
    let stat = cx
        .profile
        .map(|p| p.get(&node_key(plan)).copied().unwrap_or_default());
    let names = layout(plan);
    match plan {
        Plan::Dual => push(
            out,
            depth,
            "Rows fetched before execution".into(),
            None,
            stat,
        ),
        Plan::Values(r) => push(out, depth, format!("Values: {} rows", r.len()), None, stat),
        Plan::WorkTable { .. } => push(out, depth, "Rows of the round before".into(), None, stat),
        Plan::Shared { name, input, .. } => {
            let line = format!("Materialize CTE {name} (read more than once)");
            push(out, depth, line, estimate_rows(plan), stat);
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Recursive {
            anchors,
            steps,
            distinct,
            cycle,
            ..
        } => {
            let dedup = if *distinct { " with deduplication" } else { "" };
            let cycle = if cycle.is_empty() {
                String::new()
            } else {
                let cols: Vec<&str> = cycle.iter().map(|c| names[*c].as_str()).collect();
                format!(", restricting cycles on ({})", cols.join(", "))
            };
            push(
                out,
                depth,
                format!("Recursive union{dedup}{cycle}"),
                None,
                stat,
            );
            anchors
                .iter()
                .chain(steps)
                .for_each(|p| tree_node(p, depth + 1, cx, out));
        }
        Plan::Scan {
            table,
            alias,
            filter,
            index_filter,
            access,
            read,
            order,
            pushed,
            ..
        } => {
            let est = estimate_rows(plan);
            let mut d = depth;
            if let Some(f) = filter {
                push(
                    out,
                    d,
                    format!("Filter: {}", expr_text(f, &names)),
                    est,
                    stat,
                );
                d += 1;
            }
            let base = access_estimate(table, access);
            let mut line = scan_line(table, alias, access, *read, *order);
            if let Some(f) = index_filter {
                line.push_str(&format!(", with index condition: {}", expr_text(f, &names)));
            }
            if let Some(f) = pushed {
                line.push_str(&format!(
                    ", with pushed condition: {}",
                    expr_text(f, &names)
                ));
            }
            if let Some(cols) = cx.filters.get(&node_key(plan)) {
                let cols: Vec<&str> = cols.iter().map(|c| names[*c].as_str()).collect();
                line.push_str(&format!(", with runtime filter on {}", cols.join(", ")));
            }
            push(
                out,
                d,
                line,
                base,
                if filter.is_some() { None } else { stat },
            );
        }
        Plan::Filter { input, pred } => {
            push(
                out,
                depth,
                format!("Filter: {}", expr_text(pred, &names)),
                None,
                stat,
            );
            tree_node(input, depth + 1, cx, out);
        }
        // Projections are not operators in MySQL's tree.
        Plan::Project { input, .. } => tree_node(input, depth, cx, out),
        Plan::Window { input, .. } => {
            let calls: Vec<String> = names[names.len().min(layout(input).len())..].to_vec();
            push(
                out,
                depth,
                format!("Window aggregate: {}", calls.join(", ")),
                None,
                stat,
            );
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Aggregate {
            input, group, aggs, ..
        } => {
            let inner = layout(input);
            let agg_names: Vec<String> = layout(plan).split_off(group.len());
            let line = if group.is_empty() {
                format!("Aggregate: {}", agg_names.join(", "))
            } else {
                format!(
                    "Group aggregate (hash): {}{}{}",
                    group
                        .iter()
                        .map(|g| expr_text(g, &inner))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if aggs.is_empty() { "" } else { ", " },
                    agg_names.join(", ")
                )
            };
            push(out, depth, line, None, stat);
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Sort { input, keys } => {
            let inner = layout(input);
            let ks: Vec<String> = keys
                .iter()
                .map(|(e, d)| format!("{}{}", expr_text(e, &inner), if *d { " DESC" } else { "" }))
                .collect();
            push(out, depth, format!("Sort: {}", ks.join(", ")), None, stat);
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Limit {
            input,
            limit,
            offset,
        } => {
            let mut line = match limit {
                Some(l) => format!("Limit: {l} row(s)"),
                None => "Limit: all rows".into(),
            };
            if *offset > 0 {
                line = format!("{line}, offset {offset}");
            }
            push(out, depth, line, None, stat);
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Distinct { input, .. } => {
            push(out, depth, "Remove duplicates (hash)".into(), None, stat);
            tree_node(input, depth + 1, cx, out);
        }
        Plan::Union { inputs, all, .. } => {
            push(
                out,
                depth,
                if *all {
                    "Union all".into()
                } else {
                    "Union with deduplication (hash)".into()
                },
                None,
                stat,
            );
            inputs.iter().for_each(|p| tree_node(p, depth + 1, cx, out));
        }
        Plan::SetOp {
            left,
            right,
            except,
            all,
        } => {
            push(
                out,
                depth,
                format!(
                    "{}{}",
                    if *except { "Except" } else { "Intersect" },
                    if *all { " all" } else { "" }
                ),
                None,
                stat,
            );
            tree_node(left, depth + 1, cx, out);
            tree_node(right, depth + 1, cx, out);
        }
        Plan::Join {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            on,
            right_width,
            ..
        } => {
            let kind_s = kind_label(*kind);
            let (ln, rn) = (layout(left), layout(right));
            let mut conds: Vec<String> = left_keys
                .iter()
                .zip(right_keys)
                .map(|(l, r)| format!("({} = {})", expr_text(l, &ln), expr_text(r, &rn)))
                .collect();
            if let Some(o) = on {
                conds.push(expr_text(o, &joined_layout(plan)));
            }
            let cond = if conds.is_empty() {
                String::new()
            } else {
                format!(" {}", conds.join(" and "))
            };
            let est = estimate_rows(plan);
            if left_keys.is_empty() {
                push(
                    out,
                    depth,
                    format!("{kind_s} nested loop join{cond}"),
                    est,
                    stat,
                );
                tree_node(left, depth + 1, cx, out);
                tree_node(right, depth + 1, cx, out);
            } else {
                push(out, depth, format!("{kind_s} hash join{cond}"), est, stat);
                // The side the executor builds its table of (`join::builds_left`).
                if builds_left(*kind, left, right, left_keys, *right_width) {
                    push(out, depth + 1, "Hash".into(), None, None);
                    tree_node(left, depth + 2, cx, out);
                    tree_node(right, depth + 1, cx, out);
                } else {
                    tree_node(left, depth + 1, cx, out);
                    push(out, depth + 1, "Hash".into(), None, None);
                    tree_node(right, depth + 2, cx, out);
                }
            }
        }
        Plan::IndexJoin {
            left,
            table,
            alias,
            index,
            keys,
            filter,
            on,
            kind,
            ..
        } => {
            let kind_s = kind_label(*kind);
            let cond = on
                .as_ref()
                .map(|o| format!(" {}", expr_text(o, &joined_layout(plan))))
                .unwrap_or_default();
            push(
                out,
                depth,
                format!("Nested loop {} join{cond}", kind_s.to_ascii_lowercase()),
                estimate_rows(plan),
                stat,
            );
            tree_node(left, depth + 1, cx, out);
            let ln = layout(left);
            let tn = table_cols(table, alias);
            let ix = &table.def.indexes[*index];
            let mut d = depth + 1;
            if let Some(f) = filter {
                push(out, d, format!("Filter: {}", expr_text(f, &tn)), None, None);
                d += 1;
            }
            let parts: Vec<String> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| format!("{} = {}", tn[ix.columns[i]], expr_text(k, &ln)))
                .collect();
            push(
                out,
                d,
                format!(
                    "{} on {} using {} ({})",
                    if ix.unique && keys.len() == ix.columns.len() {
                        "Single-row index lookup"
                    } else {
                        "Index lookup"
                    },
                    alias,
                    ix.name,
                    parts.join(", ")
                ),
                Some(rows_per_key(table, *index, keys.len())),
                None,
            );
        }
    }
}

/// One row of MySQL's tabular EXPLAIN.
#[derive(Default)]
pub struct Row {
    pub id: u64,
    pub select_type: &'static str,
    pub table: Option<String>,
    pub access_type: Option<&'static str>,
    pub possible_keys: Option<String>,
    pub key: Option<String>,
    pub key_len: Option<String>,
    pub reference: Option<String>,
    pub rows: Option<u64>,
    pub filtered: Option<f64>,
    pub extra: Option<String>,
}

pub const COLUMNS: [&str; 11] = [
    "id",
    "select_type",
    "table",
    "type",
    "possible_keys",
    "key",
    "key_len",
    "ref",
    "rows",
    "filtered",
    "Extra",
];

/// The plan as MySQL's tabular EXPLAIN: table accesses in join order, one select per id.
pub fn table(plan: &Plan) -> Vec<Row> {
    let mut t = Tabular {
        rows: vec![],
        next_id: 1,
    };
    t.select(plan, 1, "SIMPLE");
    t.rows
}

struct Tabular {
    rows: Vec<Row>,
    next_id: u64,
}

/// Operators of one SELECT that MySQL reports in the first table's Extra.
#[derive(Default)]
struct Flags {
    temporary: bool,
    filesort: bool,
}

impl Tabular {
    fn select(&mut self, plan: &Plan, id: u64, select_type: &'static str) {
        if let Plan::Union { inputs, .. } = plan {
            for (i, p) in inputs.iter().enumerate() {
                let id = if i == 0 { id } else { self.fresh() };
                self.select(p, id, if i == 0 { "PRIMARY" } else { "UNION" });
            }
            return;
        }
        let first = self.rows.len();
        let mut flags = Flags::default();
        let mut subs = vec![];
        self.walk(plan, id, select_type, &mut flags, &mut subs);
        if self.rows.len() == first {
            self.rows.push(Row {
                id,
                select_type,
                extra: Some("No tables used".into()),
                ..Row::default()
            });
        }
        let mut extra: Vec<String> = vec![];
        if flags.temporary {
            extra.push("Using temporary".into());
        }
        if flags.filesort {
            extra.push("Using filesort".into());
        }
        if !extra.is_empty() {
            let r = &mut self.rows[first];
            if let Some(e) = r.extra.take() {
                extra.insert(0, e);
            }
            r.extra = Some(extra.join("; "));
        }
        for sub in subs {
            let sid = self.fresh();
            let st = if sub.correlated {
                "DEPENDENT SUBQUERY"
            } else {
                "SUBQUERY"
            };
            self.select(&sub.plan, sid, st);
        }
    }

    fn fresh(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn walk(
        &mut self,
        plan: &Plan,
        id: u64,
        st: &'static str,
        flags: &mut Flags,
        subs: &mut Vec<std::sync::Arc<SubQuery>>,
    ) {
        let mut take_subs = |e: &Expr| {
            e.walk(&mut |x| match x {
                Expr::InSub { sub, .. } | Expr::Exists { sub, .. } | Expr::ScalarSub(sub)
                    if !subs.iter().any(|s| s.id == sub.id) =>
                {
                    subs.push(sub.clone())
                }
                _ => {}
            })
        };
        match plan {
            Plan::Scan {
                table,
                alias,
                filter,
                access,
                ..
            } => {
                if let Some(f) = filter {
                    take_subs(f);
                }
                // A key may be an uncorrelated subquery's value.
                match access {
                    Access::Keys { keys, .. } => keys.iter().flatten().for_each(&mut take_subs),
                    Access::Ranges { ranges, .. } => ranges
                        .iter()
                        .flat_map(|(lo, hi)| lo.iter().chain(hi.iter()))
                        .for_each(|(e, _)| take_subs(e)),
                    Access::Full => {}
                }
                let how = ScanHow::of(plan).expect("a scan");
                self.rows.push(scan_row(table, alias, &how, id, st));
            }
            Plan::Filter { input, pred } => {
                take_subs(pred);
                self.walk(input, id, st, flags, subs);
            }
            Plan::Project { input, exprs } => {
                exprs.iter().for_each(&mut take_subs);
                self.walk(input, id, st, flags, subs);
            }
            Plan::Aggregate { input, group, .. } => {
                flags.temporary |= !group.is_empty();
                self.walk(input, id, st, flags, subs);
            }
            Plan::Sort { input, .. } => {
                flags.filesort = true;
                self.walk(input, id, st, flags, subs);
            }
            Plan::Distinct { input, .. } => {
                flags.temporary = true;
                self.walk(input, id, st, flags, subs);
            }
            // MariaDB computes window functions in a temporary table.
            Plan::Window { input, .. } => {
                flags.temporary = true;
                self.walk(input, id, st, flags, subs);
            }
            Plan::Limit { input, .. } => self.walk(input, id, st, flags, subs),
            Plan::Join {
                left,
                right,
                left_keys,
                on,
                kind,
                ..
            } => {
                if let Some(o) = on {
                    take_subs(o);
                }
                self.walk(left, id, st, flags, subs);
                let at = self.rows.len();
                self.walk(right, id, st, flags, subs);
                if let Some(r) = self.rows.get_mut(at) {
                    let buf = if left_keys.is_empty() {
                        "Using join buffer (flat, BNL join)"
                    } else {
                        "Using join buffer (hash join)"
                    };
                    let mut parts: Vec<String> = r.extra.take().into_iter().collect();
                    if on.is_some() && !parts.iter().any(|p| p == "Using where") {
                        parts.insert(0, "Using where".into());
                    }
                    parts.push(buf.into());
                    parts.extend(semi_note(*kind));
                    r.extra = Some(parts.join("; "));
                }
            }
            Plan::IndexJoin {
                left,
                table,
                alias,
                index,
                keys,
                filter,
                on,
                kind,
                ..
            } => {
                self.walk(left, id, st, flags, subs);
                let ix = &table.def.indexes[*index];
                let ln = layout(left);
                let unique = ix.unique && keys.len() == ix.columns.len();
                let mut extra = vec![];
                if filter.is_some() || on.is_some() {
                    extra.push("Using where".to_string());
                }
                extra.extend(semi_note(*kind));
                self.rows.push(Row {
                    id,
                    select_type: st,
                    table: Some(alias.clone()),
                    access_type: Some(if unique { "eq_ref" } else { "ref" }),
                    possible_keys: possible_keys(table, filter.as_ref(), Some(ix.columns[0])),
                    key: Some(ix.name.clone()),
                    key_len: Some(key_bytes(table, *index, keys.len()).to_string()),
                    reference: Some(
                        keys.iter()
                            .map(|k| expr_text(k, &ln))
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                    rows: Some(rows_per_key(table, *index, keys.len()).round() as u64),
                    filtered: Some(if filter.is_some() {
                        quarry_executor::cardinality::UNKNOWN_FILTER * 100.0
                    } else {
                        100.0
                    }),
                    extra: (!extra.is_empty()).then(|| extra.join("; ")),
                });
            }
            Plan::Union { .. } => {
                let sid = self.fresh();
                self.select(plan, sid, "DERIVED");
            }
            Plan::Recursive { anchors, steps, .. } => {
                for (i, p) in anchors.iter().chain(steps).enumerate() {
                    let sid = self.fresh();
                    let kind = match i {
                        0 => "DERIVED",
                        _ if i < anchors.len() => "UNION",
                        _ => "RECURSIVE UNION",
                    };
                    self.select(p, sid, kind);
                }
            }
            Plan::SetOp { left, right, .. } => {
                self.walk(left, id, st, flags, subs);
                let sid = self.fresh();
                self.select(right, sid, "UNION");
            }
            // Read as MariaDB shows a materialised derived table: `<derivedN>` in this
            // select, and select N below.
            Plan::Shared { input, .. } => {
                let sid = self.fresh();
                self.rows.push(Row {
                    id,
                    select_type: st,
                    table: Some(format!("<derived{sid}>")),
                    access_type: Some("ALL"),
                    rows: estimate_rows(plan).map(|r| r.round() as u64),
                    filtered: Some(100.0),
                    ..Row::default()
                });
                self.select(input, sid, "DERIVED");
            }
            Plan::Dual | Plan::Values(_) | Plan::WorkTable { .. } => {}
        }
    }
}

/// Indexes whose first column a condition on the table reads (`extra`: a join column).
fn possible_keys(
    table: &quarry_catalog::TableEntry,
    filter: Option<&Expr>,
    extra: Option<usize>,
) -> Option<String> {
    let mut cols = filter.and_then(columns_used).unwrap_or_default();
    cols.extend(extra);
    let names: Vec<&str> = table
        .def
        .indexes
        .iter()
        .filter(|ix| cols.contains(&ix.columns[0]))
        .map(|ix| ix.name.as_str())
        .collect();
    (!names.is_empty()).then(|| names.join(","))
}

fn scan_row(
    table: &quarry_catalog::TableEntry,
    alias: &str,
    how: &ScanHow,
    id: u64,
    st: &'static str,
) -> Row {
    let ScanHow {
        filter,
        access,
        read,
        ..
    } = *how;
    // Bounds known only at execution (parameters): rows per key, or a tenth of the table.
    let est = access_estimate(table, access).or_else(|| match access {
        Access::Keys { index, keys } => {
            Some(keys.len() as f64 * rows_per_key(table, *index, keys[0].len()))
        }
        _ => Some(quarry_executor::cardinality::table_rows(table) / 10.0),
    });
    let (ty, key, parts, reference) = match access {
        Access::Full => ("ALL", None, 0, None),
        _ if is_full_range(access) => {
            let Access::Ranges { index, .. } = access else {
                unreachable!()
            };
            (
                "index",
                Some(*index),
                table.def.indexes[*index].columns.len(),
                None,
            )
        }
        Access::Keys { index, keys } => {
            let ix = &table.def.indexes[*index];
            let n = keys[0].len();
            if keys.len() > 1 {
                ("range", Some(*index), n, None)
            } else {
                // A key from the enclosing query's row (a correlated subquery) is known
                // per execution, not before it (MariaDB: the column's name or `func`).
                let known = |k: &Expr| {
                    k.is_const()
                        || matches!(k, Expr::Param(_))
                        || matches!(k, Expr::ScalarSub(s) if !s.correlated)
                };
                let per_row = keys[0].iter().any(|k| !known(k));
                let refs = keys[0]
                    .iter()
                    .map(|k| if known(k) { "const" } else { "func" })
                    .collect::<Vec<_>>()
                    .join(",");
                let ty = match (ix.unique && n == ix.columns.len(), per_row) {
                    (true, false) => "const",
                    (true, true) => "eq_ref",
                    _ => "ref",
                };
                (ty, Some(*index), n, Some(refs))
            }
        }
        Access::Ranges { index, .. } => ("range", Some(*index), 1, None),
    };
    // The optimizer already took out what the key range answers; the rest is checked per
    // row.
    let residual = filter.is_some();
    let mut extra = vec![];
    if how.index_filter.is_some() {
        extra.push("Using index condition");
    }
    if how.pushed.is_some() {
        extra.push("Using where with pushed condition");
    }
    if residual {
        extra.push("Using where");
    }
    if read != ReadMode::Rows {
        extra.push("Using index");
    }
    Row {
        id,
        select_type: st,
        table: Some(alias.to_string()),
        access_type: Some(ty),
        possible_keys: possible_keys(table, filter, None)
            .or_else(|| key.map(|k| table.def.indexes[k].name.clone())),
        key: key.map(|k| table.def.indexes[k].name.clone()),
        key_len: key.map(|k| key_bytes(table, k, parts).to_string()),
        reference,
        rows: est.map(|e| e.round() as u64),
        filtered: Some(
            if (residual || how.pushed.is_some()) && matches!(access, Access::Full) {
                quarry_executor::cardinality::UNKNOWN_FILTER * 100.0
            } else {
                100.0
            },
        ),
        extra: (!extra.is_empty()).then(|| extra.join("; ")),
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `EXPLAIN FORMAT=JSON`: the tabular plan in MariaDB's JSON layout — a `query_block`
/// per select with its tables in join order under `nested_loop`, the selects after the
/// first under the first's `subqueries` — with the fields the tabular rows hold:
/// table_name, access_type, possible_keys, key, key_length, ref, rows, filtered and
/// using_index. (MariaDB's used_key_parts and attached_condition are not given.)
pub fn json(plan: &Plan) -> String {
    let rows = table(plan);
    let mut ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
    ids.dedup();
    let block = |id: u64, indent: usize| -> String {
        let pad = " ".repeat(indent);
        let mut of_block = rows.iter().filter(|r| r.id == id);
        if let (Some(only), None) = (of_block.next(), of_block.next()) {
            if only.table.is_none() {
                let message = only.extra.as_deref().unwrap_or("No tables used");
                return format!(
                    "{pad}\"query_block\": {{\n{pad}  \"select_id\": {id},\n{pad}  \"table\": {{\n{pad}    \"message\": {}\n{pad}  }}",
                    json_str(message)
                );
            }
        }
        let mut tables = vec![];
        for r in rows.iter().filter(|r| r.id == id) {
            let mut fields = vec![];
            let list = |s: &str| {
                let items: Vec<String> = s.split(',').map(|x| json_str(x.trim())).collect();
                format!("[{}]", items.join(", "))
            };
            fields.push(format!(
                "\"table_name\": {}",
                json_str(r.table.as_deref().unwrap_or("<none>"))
            ));
            if let Some(a) = r.access_type {
                fields.push(format!("\"access_type\": {}", json_str(a)));
            }
            if let Some(p) = &r.possible_keys {
                fields.push(format!("\"possible_keys\": {}", list(p)));
            }
            if let Some(k) = &r.key {
                fields.push(format!("\"key\": {}", json_str(k)));
            }
            if let Some(l) = &r.key_len {
                fields.push(format!("\"key_length\": {}", json_str(l)));
            }
            if let Some(rf) = &r.reference {
                fields.push(format!("\"ref\": {}", list(rf)));
            }
            if let Some(n) = r.rows {
                fields.push(format!("\"rows\": {n}"));
            }
            if let Some(f) = r.filtered {
                let f = (f * 100.0).round() / 100.0;
                fields.push(format!("\"filtered\": {f}"));
            }
            if r.extra
                .as_deref()
                .is_some_and(|e| e.contains("Using index"))
            {
                fields.push("\"using_index\": true".into());
            }
            let inner = format!("{pad}      ");
            tables.push(format!(
                "{pad}    {{\n{pad}      \"table\": {{\n{}\n{inner}}}\n{pad}    }}",
                fields
                    .iter()
                    .map(|f| format!("{inner}  {f}"))
                    .collect::<Vec<_>>()
                    .join(",\n")
            ));
        }
        format!(
            "{pad}\"query_block\": {{\n{pad}  \"select_id\": {id},\n{pad}  \"nested_loop\": [\n{}\n{pad}  ]",
            tables.join(",\n")
        )
    };
    let Some((&first, rest)) = ids.split_first() else {
        return "{\n  \"query_block\": {\n    \"select_id\": 1,\n    \"table\": {\n      \"message\": \"No tables used\"\n    }\n  }\n}".into();
    };
    let mut out = format!("{{\n{}", block(first, 2));
    if !rest.is_empty() {
        let subs: Vec<String> = rest
            .iter()
            .map(|id| format!("      {{\n{}\n        }}\n      }}", block(*id, 8)))
            .collect();
        out.push_str(&format!(
            ",\n    \"subqueries\": [\n{}\n    ]",
            subs.join(",\n")
        ));
    }
    out.push_str("\n  }\n}");
    out
}
