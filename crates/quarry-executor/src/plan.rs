//! Logical/physical plan nodes produced by the binder and run by `exec`.

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::{Collation, SqlType, Value};

use crate::expr::Expr;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    /// The left rows some right row matches (each once; only the left columns come out):
    /// a decorrelated `EXISTS` / `IN (SELECT …)`.
    Semi,
    /// The left rows no right row matches (only the left columns): `NOT EXISTS`.
    Anti,
}

impl JoinKind {
    /// Whether only the left input's columns come out.
    pub fn left_only(self) -> bool {
        matches!(self, JoinKind::Semi | JoinKind::Anti)
    }
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
    /// STDDEV_SAMP and VAR_SAMP: divided by n - 1 (NULL for fewer than two values).
    StdSamp,
    VarSamp,
}

#[derive(Debug, Clone)]
pub struct Agg {
    pub func: AggFunc,
    pub args: Vec<Expr>,
    pub distinct: bool,
    pub separator: String,
    /// GROUP_CONCAT(… ORDER BY …): the last `order.len()` of `args` are the sort keys,
    /// each descending where it says so.
    pub order: Vec<bool>,
    /// Result type (SUM/AVG scale depends on the input).
    pub ty: SqlType,
}

/// A window function: the ranking and value functions, or an aggregate over a frame.
#[derive(Debug, Clone)]
pub enum WinFunc {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    /// NTILE(args[0]).
    Ntile,
    /// LAG(args[0], args[1]) (LEAD: a negative offset).
    Lag,
    Lead,
    FirstValue,
    LastValue,
    /// NTH_VALUE(args[0], args[1]).
    NthValue,
    Agg(Agg),
}

/// One end of a window frame; offsets are constants checked when bound.
#[derive(Debug, Clone, PartialEq)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(Value),
    CurrentRow,
    Following(Value),
    UnboundedFollowing,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// ROWS (true) or RANGE (false).
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Frame {
    /// RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW: the default with an ORDER BY.
    pub fn to_current_row() -> Frame {
        Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::CurrentRow,
        }
    }

    /// The whole partition: the default without ORDER BY.
    pub fn whole() -> Frame {
        Frame {
            rows: false,
            start: FrameBound::UnboundedPreceding,
            end: FrameBound::UnboundedFollowing,
        }
    }
}

#[derive(Debug, Clone)]
pub struct WinCall {
    pub func: WinFunc,
    pub args: Vec<Expr>,
    pub frame: Frame,
    pub ty: SqlType,
}

/// The window functions of one PARTITION BY / ORDER BY: its rows are sorted once for
/// all of them.
#[derive(Debug, Clone)]
pub struct WinSpec {
    /// Partition keys (strings as their sort keys where the collation asks for it).
    pub partition: Vec<Expr>,
    /// Order keys, each descending where it says so.
    pub order: Vec<(Expr, bool)>,
    /// Each function with the output column it fills (after the input's columns).
    pub calls: Vec<(usize, WinCall)>,
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

/// What a scan reads for each row it produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// Whole rows from the table.
    Rows,
    /// Only the index entries: rows carry the key columns, the others are NULL (nothing
    /// above reads them).
    IndexOnly,
    /// Only the count of index entries: rows are empty (nothing above reads a column).
    EntriesOnly,
}

#[derive(Debug)]
pub enum Plan {
    /// One row with no columns (SELECT without FROM).
    Dual,
    Values(Vec<Vec<Expr>>),
    Scan {
        table: Arc<TableEntry>,
        /// The name the query gives the table (EXPLAIN).
        alias: String,
        filter: Option<Expr>,
        /// Conditions on key columns the access index gives back, checked on each index
        /// entry before its row is fetched (index condition pushdown).
        index_filter: Option<Expr>,
        access: Access,
        read: ReadMode,
        /// Rows come in the access index's order (`Some(true)`: read backwards), so a
        /// sort above could be dropped.
        order: Option<bool>,
        /// Conjuncts of the condition the table evaluates itself (filter pushdown);
        /// `filter` holds the rest.
        pushed: Option<Expr>,
        /// Columns read above the scan and by `filter` (None: all); the engine may leave
        /// the others NULL.
        columns: Option<Vec<usize>>,
    },
    /// Index nested-loop join: for each left row, look `keys` up in `index` of `table`
    /// (the right input), keep fetched rows passing `filter` (on the right row) whose
    /// `left_keys`/`right_keys` agree, then `on` over the joined row.
    IndexJoin {
        left: Box<Plan>,
        table: Arc<TableEntry>,
        alias: String,
        index: usize,
        /// Left-row expressions for the first `keys.len()` index columns.
        keys: Vec<Expr>,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        filter: Option<Expr>,
        on: Option<Expr>,
        kind: JoinKind,
        /// Columns of the probed rows read above and by `filter`, `on` and the keys
        /// (None: all); the engine may leave the others NULL.
        columns: Option<Vec<usize>>,
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
        /// GROUP BY … WITH ROLLUP: after each group's rows, its super-aggregate rows
        /// (rolled-up columns NULL), the grand total last, all in group order.
        rollup: bool,
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
    /// Drop duplicate rows, comparing the first `keys` columns (strings under `colls`).
    Distinct {
        input: Box<Plan>,
        keys: usize,
        colls: Vec<Collation>,
    },
    Union {
        inputs: Vec<Plan>,
        all: bool,
        /// Each column's collation (duplicates are dropped under it).
        colls: Vec<Collation>,
    },
    /// A recursive CTE: the anchors' rows, then round after round the steps' rows over
    /// the rows of the round before (read through `WorkTable { id }`), until a round adds
    /// none or `max_recursive_iterations` rounds ran; `distinct`: rows seen before are
    /// dropped (under `colls`); `cycle` (MariaDB's `CYCLE … RESTRICT`), when not empty: rows
    /// whose values in these columns were seen before are dropped.
    Recursive {
        anchors: Vec<Plan>,
        steps: Vec<Plan>,
        distinct: bool,
        colls: Vec<Collation>,
        cycle: Vec<usize>,
        id: usize,
    },
    /// The rows the last round of recursive CTE `id` made.
    WorkTable {
        id: usize,
        width: usize,
    },
    /// A CTE the statement reads more than once (`name`, its rows `input`'s): the first
    /// read that runs it to the end keeps its rows for the others (`cte::run_shared`).
    Shared {
        id: usize,
        name: String,
        input: Box<Plan>,
    },
    /// The input's rows, each with one more column per window function (`calls` in all
    /// of `specs`), computed spec after spec; rows come out in the last spec's order.
    Window {
        input: Box<Plan>,
        specs: Vec<WinSpec>,
        calls: usize,
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
    /// A full scan of `table` reading whole rows.
    pub fn scan(table: Arc<TableEntry>) -> Plan {
        let alias = table.def.name.clone();
        Plan::scan_as(table, alias)
    }

    /// The same node over inputs rewritten by `f` (joins: both sides; set operations and
    /// leaves are returned as they are).
    pub fn map_inputs(self, f: &mut dyn FnMut(Plan) -> Plan) -> Plan {
        let mut m = |p: Box<Plan>| Box::new(f(*p));
        match self {
            Plan::Join {
                left,
                right,
                kind,
                left_keys,
                right_keys,
                on,
                right_width,
            } => Plan::Join {
                left: m(left),
                right: m(right),
                kind,
                left_keys,
                right_keys,
                on,
                right_width,
            },
            Plan::Filter { input, pred } => Plan::Filter {
                input: m(input),
                pred,
            },
            Plan::Project { input, exprs } => Plan::Project {
                input: m(input),
                exprs,
            },
            Plan::Aggregate {
                input,
                group,
                aggs,
                rollup,
            } => Plan::Aggregate {
                input: m(input),
                group,
                aggs,
                rollup,
            },
            Plan::Sort { input, keys } => Plan::Sort {
                input: m(input),
                keys,
            },
            Plan::Limit {
                input,
                limit,
                offset,
            } => Plan::Limit {
                input: m(input),
                limit,
                offset,
            },
            Plan::Distinct { input, keys, colls } => Plan::Distinct {
                input: m(input),
                keys,
                colls,
            },
            Plan::Window {
                input,
                specs,
                calls,
            } => Plan::Window {
                input: m(input),
                specs,
                calls,
            },
            other => other,
        }
    }

    /// A full scan of `table`, called `alias` in the query.
    pub fn scan_as(table: Arc<TableEntry>, alias: String) -> Plan {
        Plan::Scan {
            table,
            alias,
            filter: None,
            index_filter: None,
            access: Access::Full,
            read: ReadMode::Rows,
            order: None,
            pushed: None,
            columns: None,
        }
    }
}

pub fn width(p: &Plan) -> Option<usize> {
    match p {
        Plan::Scan { table, .. } => Some(table.def.columns.len()),
        Plan::Join {
            left,
            right_width,
            kind,
            ..
        } => Some(width(left)? + if kind.left_only() { 0 } else { *right_width }),
        Plan::IndexJoin {
            left, table, kind, ..
        } => Some(
            width(left)?
                + if kind.left_only() {
                    0
                } else {
                    table.def.columns.len()
                },
        ),
        Plan::Dual => Some(0),
        Plan::Project { exprs, .. } => Some(exprs.len()),
        Plan::Aggregate { group, aggs, .. } => Some(group.len() + aggs.len()),
        Plan::Window { input, calls, .. } => width(input).map(|w| w + calls),
        Plan::Filter { input, .. }
        | Plan::Sort { input, .. }
        | Plan::Limit { input, .. }
        | Plan::Distinct { input, .. } => width(input),
        Plan::Values(rows) => rows.first().map(Vec::len),
        Plan::Union { inputs, .. } => inputs.first().and_then(width),
        Plan::SetOp { left, .. } => width(left),
        Plan::Recursive { anchors, .. } => anchors.first().and_then(width),
        Plan::WorkTable { width, .. } => Some(*width),
        Plan::Shared { input, .. } => width(input),
    }
}
