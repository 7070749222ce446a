//! Logical/physical plan nodes produced by the binder and run by `exec`.

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::SqlType;

use crate::expr::Expr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    CountStar,
    Count,
    Sum,
    Avg,
    Min,
    Max,
    /// A non-aggregated column in an aggregate query: MySQL returns a value from the group.
    First,
    GroupConcat,
    BitAnd,
    BitOr,
    BitXor,
    Std,
    Variance,
}

#[derive(Debug, Clone)]
pub struct Agg {
    pub func: AggFunc,
    pub args: Vec<Expr>,
    pub distinct: bool,
    pub separator: String,
    /// Result type (SUM/AVG scale depends on the input).
    pub ty: SqlType,
}

/// How a scan finds its rows.
#[derive(Debug, Clone)]
pub enum Access {
    Full,
    /// Rows whose key on `index` equals one of `keys` (each a prefix of the index columns).
    Keys {
        index: usize,
        keys: Vec<Vec<Expr>>,
    },
    /// Rows whose first-column key lies in any of the ranges (lower, upper bound; each
    /// bound an expression and whether it is inclusive, `None` = open).
    Ranges {
        index: usize,
        #[allow(clippy::type_complexity)]
        ranges: Vec<(Option<(Expr, bool)>, Option<(Expr, bool)>)>,
    },
}

#[derive(Debug)]
pub enum Plan {
    /// One row with no columns (SELECT without FROM).
    Dual,
    Values(Vec<Vec<Expr>>),
    Scan {
        table: Arc<TableEntry>,
        filter: Option<Expr>,
        access: Access,
    },
    Filter {
        input: Box<Plan>,
        pred: Expr,
    },
    Project {
        input: Box<Plan>,
        exprs: Vec<Expr>,
    },
    Join {
        left: Box<Plan>,
        right: Box<Plan>,
        kind: JoinKind,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        on: Option<Expr>,
        right_width: usize,
    },
    Aggregate {
        input: Box<Plan>,
        group: Vec<Expr>,
        aggs: Vec<Agg>,
    },
    Sort {
        input: Box<Plan>,
        keys: Vec<(Expr, bool)>,
    },
    Limit {
        input: Box<Plan>,
        limit: Option<u64>,
        offset: u64,
    },
    /// Drop duplicate rows, comparing the first `keys` columns.
    Distinct {
        input: Box<Plan>,
        keys: usize,
    },
    Union {
        inputs: Vec<Plan>,
        all: bool,
    },
    /// INTERSECT (except = false) or EXCEPT of two inputs, with bag semantics when `all`.
    SetOp {
        left: Box<Plan>,
        right: Box<Plan>,
        except: bool,
        all: bool,
    },
}

/// A result column as the client sees it.
#[derive(Debug, Clone)]
pub struct OutColumn {
    pub name: String,
    pub org_name: String,
    pub table: String,
    pub org_table: String,
    pub db: String,
    pub ty: SqlType,
    pub nullable: bool,
    pub flags: u16,
}

impl OutColumn {
    pub fn expr(name: &str, ty: SqlType, nullable: bool) -> OutColumn {
        OutColumn {
            name: name.to_string(),
            org_name: String::new(),
            table: String::new(),
            org_table: String::new(),
            db: String::new(),
            ty,
            nullable,
            flags: 0,
        }
    }
}

#[derive(Debug)]
pub struct SelectPlan {
    pub plan: Plan,
    pub columns: Vec<OutColumn>,
}

impl Plan {
    /// The plan as an indented tree (EXPLAIN FORMAT=TREE-like).
    pub fn explain(&self, depth: usize, out: &mut Vec<String>) {
        let pad = "    ".repeat(depth);
        let line = match self {
            Plan::Dual => "Rows fetched before execution".to_string(),
            Plan::Values(r) => format!("Values: {} rows", r.len()),
            Plan::Scan {
                table,
                filter,
                access,
            } => {
                let how = match access {
                    Access::Full => "Table scan".to_string(),
                    Access::Keys { index, .. } => {
                        format!("Index lookup using {}", table.def.indexes[*index].name)
                    }
                    Access::Ranges { index, ranges } => format!(
                        "Index range scan ({} range{}) using {}",
                        ranges.len(),
                        if ranges.len() == 1 { "" } else { "s" },
                        table.def.indexes[*index].name
                    ),
                };
                format!(
                    "{how} on {}{}",
                    table.def.name,
                    if filter.is_some() {
                        " (with pushed filter)"
                    } else {
                        ""
                    }
                )
            }
            Plan::Filter { .. } => "Filter".into(),
            Plan::Project { exprs, .. } => format!("Project: {} columns", exprs.len()),
            Plan::Join {
                kind, left_keys, ..
            } => format!(
                "{} {}",
                if left_keys.is_empty() {
                    "Nested loop"
                } else {
                    "Hash"
                },
                if *kind == JoinKind::Left {
                    "left join"
                } else {
                    "inner join"
                }
            ),
            Plan::Aggregate { group, aggs, .. } => format!(
                "Aggregate: {} groups keys, {} aggregates",
                group.len(),
                aggs.len()
            ),
            Plan::Sort { keys, .. } => format!("Sort: {} keys", keys.len()),
            Plan::Limit { limit, offset, .. } => format!(
                "Limit: {} row(s) offset {offset}",
                limit.map(|l| l.to_string()).unwrap_or("all".into())
            ),
            Plan::Distinct { .. } => "Distinct".into(),
            Plan::Union { all, .. } => format!("Union{}", if *all { " all" } else { "" }),
            Plan::SetOp { except, all, .. } => format!(
                "{}{}",
                if *except { "Except" } else { "Intersect" },
                if *all { " all" } else { "" }
            ),
        };
        out.push(format!("{pad}-> {line}"));
        match self {
            Plan::Filter { input, .. }
            | Plan::Project { input, .. }
            | Plan::Aggregate { input, .. }
            | Plan::Sort { input, .. }
            | Plan::Limit { input, .. }
            | Plan::Distinct { input, .. } => input.explain(depth + 1, out),
            Plan::Join { left, right, .. } => {
                left.explain(depth + 1, out);
                right.explain(depth + 1, out);
            }
            Plan::Union { inputs, .. } => inputs.iter().for_each(|p| p.explain(depth + 1, out)),
            Plan::SetOp { left, right, .. } => {
                left.explain(depth + 1, out);
                right.explain(depth + 1, out);
            }
            _ => {}
        }
    }
}
