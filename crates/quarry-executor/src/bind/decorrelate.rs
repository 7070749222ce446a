//! Correlated `EXISTS`, `NOT EXISTS` and `x IN (SELECT …)` conditions of a WHERE clause
//! turned into semi and anti joins: instead of running the subquery once per outer row
//! (a scan each time where no index serves its correlation), its table is joined once —
//! by hash, or by index lookups where the cost says so — and each outer row is kept when
//! some inner row matches (`EXISTS`, `IN`) or none does (`NOT EXISTS`). TPC-H Q4, Q21 and
//! Q22 are of this shape.
//!
//! Only plain subqueries are rewritten: one SELECT over comma-joined tables, without
//! grouping, aggregates, window functions, LIMIT, WITH or subqueries of its own; for `IN`,
//! one column, compared with the operand as `=` compares (its types and collations made
//! to agree as for `=`, so the equality is a join key). `NOT IN` (NULLs make it unknown,
//! not false) and everything else still runs as a subquery. A condition in WHERE is rejected on FALSE and
//! on NULL alike, so a semi join's "no match" stands for both.
//!
//! Owns: choosing the conditions and building the joins. Must not touch: how joins run.

use std::ops::ControlFlow;

use sqlparser::ast::{self, Expr as A};

use quarry_common::Result;

use super::{and_all, conjuncts, push_filter, Binder, Level};
use crate::expr::{BinOp, Expr};
use crate::plan::{JoinKind, Plan};

/// Aggregate names: a subquery using one is not a plain one (`EXISTS (SELECT COUNT(*) …)`
/// is always true).
const AGGREGATES: &[&str] = &[
    "COUNT",
    "SUM",
    "AVG",
    "MIN",
    "MAX",
    "GROUP_CONCAT",
    "BIT_AND",
    "BIT_OR",
    "BIT_XOR",
    "STD",
    "STDDEV",
    "STDDEV_POP",
    "STDDEV_SAMP",
    "VARIANCE",
    "VAR_POP",
    "VAR_SAMP",
    "ANY_VALUE",
    "JSON_ARRAYAGG",
    "JSON_OBJECTAGG",
];

/// A subquery turned into a join with the outer rows.
pub(super) struct SemiJoin {
    plan: Plan,
    kind: JoinKind,
    left_keys: Vec<Expr>,
    right_keys: Vec<Expr>,
    on: Option<Expr>,
}

impl SemiJoin {
    /// `outer` joined with the subquery's rows.
    pub(super) fn apply(self, outer: Plan) -> Plan {
        let right_width = super::width(&self.plan).unwrap_or(0);
        Plan::Join {
            left: Box::new(outer),
            right: Box::new(self.plan),
            kind: self.kind,
            left_keys: self.left_keys,
            right_keys: self.right_keys,
            on: self.on,
            right_width,
        }
    }
}

/// What a WHERE conjunct asks of a subquery.
enum Shape<'q> {
    Exists(&'q ast::Select, bool),
    In(&'q A, &'q ast::Select),
}

/// Whether the WHERE conjunct `c` may become a semi or anti join.
pub(super) fn candidate(c: &A) -> bool {
    shape(c).is_some()
}

fn shape(c: &A) -> Option<Shape<'_>> {
    match c {
        A::Exists { subquery, negated } => Some(Shape::Exists(plain(subquery, false)?, *negated)),
        A::InSubquery {
            expr,
            subquery,
            negated: false,
        } => Some(Shape::In(expr, plain(subquery, true)?)),
        A::Nested(inner) => shape(inner),
        _ => None,
    }
}

/// The SELECT of a subquery simple enough to become a join.
fn plain(q: &ast::Query, one_column: bool) -> Option<&ast::Select> {
    if q.with.is_some() || q.limit_clause.is_some() || q.fetch.is_some() || !q.locks.is_empty() {
        return None;
    }
    let ast::SetExpr::Select(s) = &*q.body else {
        return None;
    };
    let grouped = match &s.group_by {
        ast::GroupByExpr::Expressions(v, m) => !v.is_empty() || !m.is_empty(),
        ast::GroupByExpr::All(_) => true,
    };
    if grouped
        || s.having.is_some()
        || !s.named_window.is_empty()
        || s.into.is_some()
        || s.qualify.is_some()
        || s.from.is_empty()
        || !s.lateral_views.is_empty()
    {
        return None;
    }
    // Comma-joined tables only: an ON condition could read the outer row.
    if !s
        .from
        .iter()
        .all(|t| t.joins.is_empty() && matches!(t.relation, ast::TableFactor::Table { .. }))
    {
        return None;
    }
    if one_column
        && (s.projection.len() != 1
            || !matches!(
                s.projection[0],
                ast::SelectItem::UnnamedExpr(_) | ast::SelectItem::ExprWithAlias { .. }
            ))
    {
        return None;
    }
    let r = ast::visit_expressions(s, |e| match e {
        A::Function(f)
            if f.over.is_some()
                || f.name.0.last().is_some_and(|p| {
                    let n = p.to_string();
                    AGGREGATES.iter().any(|a| n.eq_ignore_ascii_case(a))
                        || super::VOLATILE_FUNCTIONS
                            .iter()
                            .any(|v| n.eq_ignore_ascii_case(v))
                }) =>
        {
            ControlFlow::Break(())
        }
        A::Subquery(_) | A::Exists { .. } | A::InSubquery { .. } => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    });
    r.is_continue().then_some(&**s)
}

/// Whether `e` reads the immediately enclosing query's row.
fn reads_outer(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| f |= matches!(x, Expr::Outer(1, _)));
    f
}

fn reads_own(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| f |= matches!(x, Expr::Col(_)));
    f
}

impl Binder<'_> {
    /// The WHERE conjunct `c` as a semi or anti join with the rows so far (`lw` columns
    /// wide), or None when it is not of a shape that can be.
    pub(super) fn semi_join(&mut self, c: &A, lw: usize) -> Result<Option<SemiJoin>> {
        let Some(shape) = shape(c) else {
            return Ok(None);
        };
        let (select, kind, probe) = match shape {
            Shape::Exists(s, negated) => (
                s,
                if negated {
                    JoinKind::Anti
                } else {
                    JoinKind::Semi
                },
                None,
            ),
            Shape::In(x, s) => (s, JoinKind::Semi, Some(x)),
        };
        // The IN operand belongs to the outer row: seen from the subquery, one level up.
        let probe = match probe {
            Some(x) => Some(self.bind_expr(x)?.rewrite(&mut |e| match e {
                Expr::Col(i) => Some(Expr::Outer(1, *i)),
                Expr::Outer(up, i) => Some(Expr::Outer(up + 1, *i)),
                _ => None,
            })),
            None => None,
        };
        let (inner, inner_cols) = self.bind_from(&select.from)?;
        self.levels.push(Level {
            cols: inner_cols.clone(),
        });
        let wins = self.wins.take();
        let aggs = self.aggs.take();
        let r = (|| -> Result<(Option<Expr>, Option<Expr>)> {
            let pred = select
                .selection
                .as_ref()
                .map(|w| self.in_clause("WHERE", |b| b.bind_expr(w)))
                .transpose()?;
            let items =
                self.in_clause("SELECT", |b| b.bind_items(&select.projection, &inner_cols))?;
            // x IN (SELECT y …) holds where x = y does: compared as `=` compares them
            // (types and collations made to agree here, in the subquery's scope).
            let member = match probe {
                Some(x) => {
                    let y = items[0].0.clone();
                    let eq = self.harmonize(Expr::Bin(BinOp::Eq, Box::new(x), Box::new(y)));
                    Some(self.collate_comparison(eq)?)
                }
                None => None,
            };
            Ok((pred, member))
        })();
        self.wins = wins;
        self.aggs = aggs;
        self.levels.pop();
        let (pred, member) = r?;
        let mut left_keys = vec![];
        let mut right_keys = vec![];
        let mut inner_filters = vec![];
        let mut on = vec![];
        let mut parts = vec![];
        if let Some(p) = pred {
            conjuncts(p, &mut parts);
        }
        parts.extend(member);
        // The subquery's level is merged into the outer one: the outer row's columns are
        // the joined row's first `lw` (`Outer(1, i)` is column i), a grand-outer column is
        // one level nearer, and in a joined row the subquery's columns come after `lw`.
        let merged = |e: Expr, shift: usize| {
            e.rewrite(&mut |x| match x {
                Expr::Outer(1, i) => Some(Expr::Col(*i)),
                Expr::Outer(up, i) => Some(Expr::Outer(up - 1, *i)),
                Expr::Col(j) => Some(Expr::Col(shift + j)),
                _ => None,
            })
        };
        for c in parts {
            if !reads_outer(&c) {
                inner_filters.push(merged(c, 0));
                continue;
            }
            if let Expr::Bin(BinOp::Eq, a, b) = &c {
                let key = [(a, b), (b, a)].into_iter().find(|(o, i)| {
                    reads_outer(o) && !reads_own(o) && reads_own(i) && !reads_outer(i)
                });
                if let Some((o, i)) = key {
                    left_keys.push(merged((**o).clone(), 0));
                    right_keys.push(merged((**i).clone(), 0));
                    continue;
                }
            }
            on.push(merged(c, lw));
        }
        let plan = match and_all(inner_filters) {
            Some(f) => push_filter(inner, f),
            None => super::choose_access(inner),
        };
        Ok(Some(SemiJoin {
            plan,
            kind,
            left_keys,
            right_keys,
            on: and_all(on),
        }))
    }
}
