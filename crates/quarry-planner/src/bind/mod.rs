//! The binder: SQL AST → plans with resolved columns, types and access paths.
//!
//! Name resolution walks a stack of scopes (one per query level), so a column of an
//! enclosing query becomes [`Expr::Outer`] and marks the subqueries in between as
//! correlated. Aggregate queries are bound against the FROM scope first, then rewritten so
//! GROUP BY expressions and aggregate calls become columns of the aggregate's output.

use std::sync::Arc;

use quarry_catalog::{sql_type, Catalog, TableEntry};
use quarry_common::types::{flags, DOUBLE_FIXED_ZERO};
use quarry_common::{Collation, Decimal, Error, Result, SqlType, TypeKind, Value};
use quarry_sql::ast::{self, BinaryOperator as B, Expr as A, SelectItem, SetExpr, TableFactor};

use quarry_executor::expr::{
    and_all, conjuncts, known_before_scan, negate_int, BinOp, Expr, SubQuery, UnOp,
};
use quarry_executor::func::VOLATILE_FUNCTIONS;
use quarry_executor::plan::{width, Access, Agg, AggFunc, JoinKind, OutColumn, Plan, SelectPlan};

mod collation;
mod cte;
mod decorrelate;
mod from_names;
mod or_derive;
mod or_factor;
mod unordered;
mod using;
mod view;
mod window;

#[derive(Debug, Clone)]
pub struct ScopeCol {
    pub table: String,
    pub col: OutColumn,
    /// Where `*` lists it, among the columns of its scope (ties in scope order); None
    /// when `*` leaves it out and only its qualified name finds it: the column of a
    /// USING or NATURAL join's right side that the left one's (coalesced) stands for.
    pub star: Option<u32>,
}

impl ScopeCol {
    pub fn new(table: String, col: OutColumn) -> ScopeCol {
        ScopeCol {
            table,
            col,
            star: Some(0),
        }
    }
}

struct Level {
    cols: Vec<ScopeCol>,
}

pub struct Binder<'a> {
    pub catalog: &'a Catalog,
    pub db: Option<String>,
    levels: Vec<Level>,
    next_sub: usize,
    pub param_count: usize,
    /// The values of a prepared statement's parameters, where binding needs them: a
    /// `LIMIT ?` is a count in the plan, not an expression.
    pub param_values: Option<Vec<Value>>,
    /// A `LIMIT ?` or `OFFSET ?` was bound (with `param_values`, or with no limit when
    /// they are unknown): the plan holds for these values only.
    pub limit_has_params: bool,
    /// Aggregates collected while binding the current select list (None = not allowed).
    aggs: Option<Vec<Agg>>,
    /// Window functions collected while binding the current select list and ORDER BY
    /// (None = not allowed here: 4015).
    wins: Option<Vec<window::BoundWin>>,
    /// The arguments of a plain aggregate are being bound (a window function there is 4074).
    in_aggregate: bool,
    /// The current SELECT's WINDOW clause.
    named_windows: Vec<ast::NamedWindowDefinition>,
    /// Each outer column reference: the level index it was found at and its position
    /// there (for correlation, and the columns a subquery's results depend on).
    found_refs: Vec<(usize, usize)>,
    /// Calls bound so far whose value may differ between two calls with the same
    /// arguments (RAND, SYSDATE, …): a subquery holding one is not cached.
    volatile_calls: usize,
    /// Expressions and query bodies being bound, one inside another (`MAX_NESTING`).
    depth: usize,
    /// Views being expanded, outermost first (a name seen twice is a cycle).
    views: Vec<(String, String)>,
    /// The view a CREATE VIEW defines: its name is not a view while its SELECT is checked.
    pub defining_view: Option<(String, String)>,
    /// The CTEs visible where binding is (innermost last).
    ctes: Vec<std::rc::Rc<cte::Cte>>,
    /// Recursive CTEs whose steps are being bound (innermost last).
    work_tables: Vec<cte::WorkTable>,
    /// Every table a FROM clause bound so far names (through views and subqueries too).
    pub tables_read: Vec<Arc<TableEntry>>,
    /// The clause being bound, as errors 1054 and 1052 name it ('WHERE', 'ON', …, as
    /// MariaDB 10.11 does).
    pub clause: &'static str,
    /// When set, each SELECT block's plan after each rewrite (its FROM and WHERE after
    /// decorrelation, pushdown and join order; the block after each optimizer pass):
    /// EXPLAIN FORMAT=TREE under `quarry_explain_passes`, and the golden plan tests.
    pub trace: Option<crate::optimize::Trace>,
}

/// Whether a call is of one of the [`VOLATILE_FUNCTIONS`].
pub(super) fn is_volatile_call(f: &ast::Function) -> bool {
    f.name.0.last().is_some_and(|p| {
        let n = p.to_string();
        VOLATILE_FUNCTIONS.iter().any(|v| n.eq_ignore_ascii_case(v))
    })
}

/// How deeply expressions and query bodies (a chain of `UNION`s, a chain of binary
/// operators) may nest: deeper ones are refused with 1436 before anything else walks
/// them. Statements run on a stack sized for this (`quarry_core::STATEMENT_STACK`).
pub const MAX_NESTING: usize = 4000;
/// Tables one FROM clause may join (MariaDB's limit; 1116 past it).
pub const MAX_JOIN_TABLES: usize = 61;

fn ident_name(i: &ast::Ident) -> String {
    i.value.clone()
}

pub fn object_name(n: &ast::ObjectName) -> Vec<String> {
    n.0.iter()
        .map(|p| match p {
            ast::ObjectNamePart::Identifier(i) => i.value.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// Column positions an expression reads from its own row (None if it has correlated
/// subqueries). An enclosing query's column (`Outer`) is none of them: it is fixed while
/// the plan it is in runs, as a constant is; so is an uncorrelated subquery's result (run
/// once per statement), which lets `o_orderkey IN (SELECT …)` filter its table's scan.
pub(crate) fn columns_used(e: &Expr) -> Option<Vec<usize>> {
    columns_in(e, false)
}

/// The columns of its input row `e` reads (None: it cannot tell): as [`columns_used`],
/// and a correlated subquery's references to the row it runs for. That says what to
/// read, not where `e` may be moved: conditions are moved by `columns_used`, which a
/// correlated subquery keeps in place.
pub(crate) fn columns_read(e: &Expr) -> Option<Vec<usize>> {
    columns_in(e, true)
}

fn columns_in(e: &Expr, outer_refs: bool) -> Option<Vec<usize>> {
    let mut cols = vec![];
    let mut ok = true;
    e.walk(&mut |x| match x {
        Expr::Col(i) => cols.push(*i),
        Expr::InSub { sub, .. } | Expr::Exists { sub, .. } | Expr::ScalarSub(sub)
            if sub.correlated =>
        {
            match sub.outer_refs.as_ref().filter(|_| outer_refs) {
                Some(refs) => cols.extend(refs.iter().filter(|r| r.0 == 1).map(|r| r.1)),
                None => ok = false,
            }
        }
        Expr::AggRef(_) | Expr::WinRef(_) => ok = false,
        Expr::Func(n, _) if n == "RAND" => ok = false,
        _ => {}
    });
    ok.then_some(cols)
}

fn shift_cols(e: Expr, by: usize) -> Expr {
    e.rewrite(&mut |x| match x {
        Expr::Col(i) => Some(Expr::Col(i - by)),
        _ => None,
    })
}

impl<'a> Binder<'a> {
    pub fn new(catalog: &'a Catalog, db: Option<String>) -> Binder<'a> {
        Binder {
            catalog,
            db,
            levels: vec![],
            next_sub: 0,
            param_count: 0,
            param_values: None,
            limit_has_params: false,
            aggs: None,
            wins: None,
            in_aggregate: false,
            named_windows: vec![],
            found_refs: vec![],
            volatile_calls: 0,
            depth: 0,
            views: vec![],
            defining_view: None,
            ctes: vec![],
            work_tables: vec![],
            tables_read: vec![],
            clause: "SELECT",
            trace: None,
        }
    }

    /// Record `plan` as it is after `pass`, when tracing.
    fn traced(&mut self, pass: &'static str, plan: &Plan) {
        crate::optimize::record(self.trace.as_mut(), pass, plan);
    }

    /// One level deeper (`leave` when done): an error past `MAX_NESTING`.
    fn enter(&mut self) -> Result<()> {
        if self.depth >= MAX_NESTING {
            return Err(Error::too_deep(MAX_NESTING));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave<T>(&mut self, r: T) -> T {
        self.depth -= 1;
        r
    }

    pub fn push_scope(&mut self, cols: Vec<ScopeCol>) {
        self.levels.push(Level { cols });
    }
    pub fn pop_scope(&mut self) {
        self.levels.pop();
    }

    /// Bind an expression against a given row layout (UPDATE/DELETE/ON DUPLICATE KEY).
    pub fn bind_in_scope(&mut self, cols: Vec<ScopeCol>, e: &ast::Expr) -> Result<Expr> {
        self.push_scope(cols);
        let r = self.bind_expr(e);
        self.pop_scope();
        r
    }

    pub fn resolve_table(&self, name: &ast::ObjectName) -> Result<Arc<TableEntry>> {
        let parts = object_name(name);
        let (db, t) = match parts.as_slice() {
            [t] => (self.db.clone().ok_or_else(Error::no_database)?, t.clone()),
            [d, t] => (d.clone(), t.clone()),
            _ => return Err(Error::syntax_near(&name.to_string())),
        };
        self.catalog.table(&db, &t)
    }

    pub fn table_scope(entry: &TableEntry, alias: &str) -> Vec<ScopeCol> {
        Self::def_scope(&entry.def, &entry.db, alias)
    }

    /// [`Binder::table_scope`] of a definition (a table being created has no entry yet).
    pub fn def_scope(def: &quarry_catalog::TableDef, db: &str, alias: &str) -> Vec<ScopeCol> {
        def.columns
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut f = if c.nullable { 0 } else { flags::NOT_NULL };
                for ix in &def.indexes {
                    if ix.columns.first() == Some(&i) {
                        f |= if ix.primary {
                            flags::PRI_KEY
                        } else if ix.unique && ix.columns.len() == 1 {
                            flags::UNIQUE_KEY
                        } else {
                            flags::MULTIPLE_KEY
                        };
                    }
                }
                if c.auto_increment {
                    f |= flags::AUTO_INCREMENT;
                }
                ScopeCol::new(
                    alias.to_string(),
                    OutColumn {
                        name: c.name.clone(),
                        org_name: c.name.clone(),
                        table: alias.to_string(),
                        org_table: def.name.clone(),
                        db: db.to_string(),
                        ty: c.ty,
                        nullable: c.nullable,
                        flags: f,
                    },
                )
            })
            .collect()
    }

    // ---------------------------------------------------------------- queries

    pub fn bind_query(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        self.enter()?;
        let r = self.bind_query_nested(q);
        self.leave(r)
    }

    fn bind_query_nested(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        if q.with.is_none() {
            return self.bind_query_body(q);
        }
        let saved = self.enter_with(q)?;
        let r = self.bind_query_body(q);
        self.leave_with(saved);
        r
    }

    fn bind_query_body(&mut self, q: &ast::Query) -> Result<SelectPlan> {
        let order: Vec<&ast::OrderByExpr> = match &q.order_by {
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(v) => v.iter().collect(),
                ast::OrderByKind::All(_) => return Err(Error::unsupported("ORDER BY ALL")),
            },
            None => vec![],
        };
        let (limit, offset) = self.bind_limit(q)?;
        match q.body.as_ref() {
            SetExpr::Select(s) => self.bind_select(s, &order, limit, offset),
            SetExpr::Query(inner) if order.is_empty() && limit.is_none() && offset == 0 => {
                self.bind_query(inner)
            }
            _ => {
                let mut sp = self.bind_set_expr(&q.body)?;
                if !order.is_empty() {
                    let mut keys = vec![];
                    for o in order {
                        let idx = match &o.expr {
                            A::Value(v) => v
                                .value
                                .to_string()
                                .parse::<usize>()
                                .ok()
                                .filter(|n| *n >= 1 && *n <= sp.columns.len())
                                .map(|n| n - 1),
                            A::Identifier(i) => sp
                                .columns
                                .iter()
                                .position(|c| c.name.eq_ignore_ascii_case(&i.value)),
                            A::CompoundIdentifier(v) => sp.columns.iter().position(|c| {
                                c.name.eq_ignore_ascii_case(&v.last().unwrap().value)
                            }),
                            _ => None,
                        }
                        .ok_or_else(|| {
                            Error::unknown_column(&o.expr.to_string(), "order clause")
                        })?;
                        // Strings of another collation than the plain one sort by key.
                        let key = match collation::of_type(sp.columns[idx].ty) {
                            Some(c) if !c.is_plain() => Expr::SortKey(Box::new(Expr::Col(idx)), c),
                            _ => Expr::Col(idx),
                        };
                        keys.push((key, matches!(o.options.sort, Some(ast::OrderBySort::Desc))));
                    }
                    sp.plan = Plan::Sort {
                        input: Box::new(sp.plan),
                        keys,
                    };
                }
                if limit.is_some() || offset > 0 {
                    sp.plan = Plan::Limit {
                        input: Box::new(sp.plan),
                        limit,
                        offset,
                    };
                }
                Ok(sp)
            }
        }
    }

    fn bind_limit(&mut self, q: &ast::Query) -> Result<(Option<u64>, u64)> {
        let mut num = |e: &A| -> Result<u64> {
            if let Expr::Param(n) = self.bind_expr(e)? {
                self.limit_has_params = true;
                return Ok(match &self.param_values {
                    Some(v) => limit_param(v.get(n).unwrap_or(&Value::Null)),
                    // Preparing: the count is known at EXECUTE.
                    None => u64::MAX,
                });
            }
            let x = self.bind_const(e)?;
            match x {
                Value::Int(i) if i >= 0 => Ok(i as u64),
                Value::UInt(u) => Ok(u),
                _ => Err(Error::syntax_near(&e.to_string())),
            }
        };
        Ok(match &q.limit_clause {
            None => (None, 0),
            Some(ast::LimitClause::LimitOffset { limit, offset, .. }) => {
                let l = limit.as_ref().map(&mut num).transpose()?;
                let o = offset
                    .as_ref()
                    .map(|o| num(&o.value))
                    .transpose()?
                    .unwrap_or(0);
                (l, o)
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                (Some(num(limit)?), num(offset)?)
            }
        })
    }

    fn bind_const(&mut self, e: &A) -> Result<Value> {
        match e {
            A::Value(v) => literal(&v.value, self),
            _ => Err(Error::syntax_near(&e.to_string())),
        }
    }

    fn bind_set_expr(&mut self, s: &SetExpr) -> Result<SelectPlan> {
        self.enter()?;
        let r = self.bind_set_expr_nested(s);
        self.leave(r)
    }

    fn bind_set_expr_nested(&mut self, s: &SetExpr) -> Result<SelectPlan> {
        match s {
            SetExpr::Select(sel) => self.bind_select(sel, &[], None, 0),
            SetExpr::Query(q) => self.bind_query(q),
            SetExpr::Values(v) => {
                let rows: Vec<Vec<Expr>> = v
                    .rows
                    .iter()
                    .map(|r| r.iter().map(|e| self.bind_expr(e)).collect())
                    .collect::<Result<_>>()?;
                let n = rows.first().map(Vec::len).unwrap_or(0);
                let columns = (0..n)
                    .map(|i| {
                        OutColumn::expr(
                            &format!("column_{i}"),
                            static_type(rows[0][i].clone()),
                            true,
                        )
                    })
                    .collect();
                Ok(SelectPlan {
                    plan: Plan::Values(rows),
                    columns,
                })
            }
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let all = matches!(set_quantifier, ast::SetQuantifier::All);
                if *op == ast::SetOperator::Union {
                    return self.bind_union(left, right, all);
                }
                let l = self.bind_set_expr(left)?;
                let r = self.bind_set_expr(right)?;
                if l.columns.len() != r.columns.len() {
                    return Err(Error::union_column_count());
                }
                let columns = l.columns.clone();
                let except = matches!(op, ast::SetOperator::Except | ast::SetOperator::Minus);
                Ok(SelectPlan {
                    plan: Plan::SetOp {
                        left: Box::new(l.plan),
                        right: Box::new(r.plan),
                        except,
                        all,
                    },
                    columns,
                })
            }
            other => Err(Error::unsupported(other.to_string())),
        }
    }

    /// A chain of UNIONs of one kind is one union: its column types come from every input
    /// at once (an INT beside DECIMAL and then VARCHAR is text, not 20.00).
    fn bind_union(&mut self, left: &SetExpr, right: &SetExpr, all: bool) -> Result<SelectPlan> {
        let mut leaves = vec![];
        self.union_leaves(left, all, &mut leaves)?;
        self.union_leaves(right, all, &mut leaves)?;
        let mut columns: Vec<OutColumn> = leaves[0].columns.clone();
        for leaf in &leaves[1..] {
            if leaf.columns.len() != columns.len() {
                return Err(Error::union_column_count());
            }
            for (c, b) in columns.iter_mut().zip(&leaf.columns) {
                c.ty = unify(c.ty, b.ty);
                c.nullable |= b.nullable;
            }
        }
        let inputs = leaves
            .into_iter()
            .map(|leaf| widen_union_input(leaf.plan, &leaf.columns, &columns))
            .collect();
        let colls = columns
            .iter()
            .map(|c| collation::of_type(c.ty).unwrap_or_default())
            .collect();
        Ok(SelectPlan {
            plan: Plan::Union { inputs, all, colls },
            columns,
        })
    }

    /// The inputs of a chain of UNIONs with the same quantifier, bound.
    fn union_leaves(&mut self, s: &SetExpr, all: bool, out: &mut Vec<SelectPlan>) -> Result<()> {
        // A chain is as deep as it is long: the nesting limit holds here too (1436).
        self.enter()?;
        let r = self.union_leaves_nested(s, all, out);
        self.leave(r)
    }

    fn union_leaves_nested(
        &mut self,
        s: &SetExpr,
        all: bool,
        out: &mut Vec<SelectPlan>,
    ) -> Result<()> {
        if let SetExpr::SetOperation {
            left,
            op: ast::SetOperator::Union,
            set_quantifier,
            right,
        } = s
        {
            if matches!(set_quantifier, ast::SetQuantifier::All) == all {
                self.union_leaves(left, all, out)?;
                return self.union_leaves(right, all, out);
            }
        }
        out.push(self.bind_set_expr(s)?);
        Ok(())
    }

    fn bind_from(&mut self, from: &[ast::TableWithJoins]) -> Result<(Plan, Vec<ScopeCol>)> {
        let tables: usize = from.iter().map(|t| 1 + t.joins.len()).sum();
        if tables > MAX_JOIN_TABLES {
            return Err(Error::too_many_tables(MAX_JOIN_TABLES));
        }
        self.check_unique_names(from)?;
        let mut acc: Option<(Plan, Vec<ScopeCol>)> = None;
        for twj in from {
            let (mut plan, mut cols) = self.bind_factor(&twj.relation)?;
            for j in &twj.joins {
                let (rp, rc) = self.bind_factor(&j.relation)?;
                use ast::JoinOperator as J;
                let (kind, constraint, swap) = match &j.join_operator {
                    J::Join(c) | J::Inner(c) | J::StraightJoin(c) => {
                        (JoinKind::Inner, Some(c), false)
                    }
                    J::CrossJoin(c) => (JoinKind::Inner, Some(c), false),
                    J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, Some(c), false),
                    J::Right(c) | J::RightOuter(c) => (JoinKind::Left, Some(c), true),
                    other => {
                        return Err(Error::unsupported(
                            format!("{other:?}")
                                .split('(')
                                .next()
                                .unwrap_or("join")
                                .to_string(),
                        ))
                    }
                };
                let (p, c) = self.make_join(plan, cols, rp, rc, kind, constraint, swap)?;
                plan = p;
                cols = c;
            }
            acc = Some(match acc {
                None => (plan, cols),
                Some((lp, lc)) => {
                    self.make_join(lp, lc, plan, cols, JoinKind::Inner, None, false)?
                }
            });
        }
        Ok(acc.unwrap_or((Plan::Dual, vec![])))
    }

    #[allow(clippy::too_many_arguments)]
    fn make_join(
        &mut self,
        lp: Plan,
        lc: Vec<ScopeCol>,
        rp: Plan,
        rc: Vec<ScopeCol>,
        kind: JoinKind,
        constraint: Option<&ast::JoinConstraint>,
        swap: bool,
    ) -> Result<(Plan, Vec<ScopeCol>)> {
        // RIGHT JOIN = LEFT JOIN with the sides swapped, then columns put back in order.
        let (lp, lc, rp, rc) = if swap {
            (rp, rc, lp, lc)
        } else {
            (lp, lc, rp, rc)
        };
        let lw = lc.len();
        let rw = rc.len();
        let mut cols: Vec<ScopeCol> = lc.iter().cloned().chain(rc.iter().cloned()).collect();
        if kind == JoinKind::Left {
            for c in cols[lw..].iter_mut() {
                c.col.nullable = true;
            }
        }
        let pairs = using::pairs(&lc, &rc, constraint)?;
        using::star_order(&mut cols, lw, pairs.as_deref().unwrap_or_default());
        let on = match constraint {
            _ if pairs.is_some() => using::condition(pairs.as_deref().unwrap_or_default(), lw),
            Some(ast::JoinConstraint::On(e)) => {
                let factored = or_factor::factor_ors(e);
                let e = factored.as_ref().unwrap_or(e);
                self.levels.push(Level { cols: cols.clone() });
                let r = self.in_clause("ON", |b| b.bind_expr(e));
                self.levels.pop();
                Some(r?)
            }
            _ => None,
        };
        let mut plan = Plan::Join {
            left: Box::new(lp),
            right: Box::new(rp),
            kind,
            left_keys: vec![],
            right_keys: vec![],
            on,
            right_width: rw,
        };
        split_join_condition(&mut plan);
        if swap {
            // The written left table is now on the right (positions lw..lw+rw): put it first.
            let exprs: Vec<Expr> = (0..rw)
                .map(|i| Expr::Col(lw + i))
                .chain((0..lw).map(Expr::Col))
                .collect();
            let reordered: Vec<ScopeCol> = cols[lw..]
                .iter()
                .cloned()
                .chain(cols[..lw].iter().cloned())
                .collect();
            cols = reordered;
            plan = Plan::Project {
                input: Box::new(plan),
                exprs,
            };
        }
        Ok((plan, cols))
    }

    fn bind_factor(&mut self, f: &TableFactor) -> Result<(Plan, Vec<ScopeCol>)> {
        match f {
            TableFactor::Table { name, alias, .. } => {
                let parts = object_name(name);
                if parts.len() == 1 && parts[0].eq_ignore_ascii_case("DUAL") {
                    return Ok((Plan::Dual, vec![]));
                }
                if let Some(bound) = self.bind_work_table(name, alias.as_ref()) {
                    return Ok(bound);
                }
                if let Some(cte) = self.cte(name) {
                    return self.bind_cte(&cte, alias.as_ref());
                }
                let entry = match self.resolve_table(name) {
                    Ok(e) => e,
                    Err(e) if e.code == 1146 => {
                        return self.bind_view(
                            name,
                            alias.as_ref().map(|a| a.name.value.clone()),
                            e,
                        )
                    }
                    Err(e) => return Err(e),
                };
                let alias = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .unwrap_or_else(|| entry.def.name.clone());
                let cols = Self::table_scope(&entry, &alias);
                self.tables_read.push(entry.clone());
                Ok((Plan::scan_as(entry, alias), cols))
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                // MariaDB 10.11 has no column list after a derived table's alias.
                if let Some(a) = alias.as_ref().filter(|a| !a.columns.is_empty()) {
                    let cols: Vec<String> = a.columns.iter().map(|c| c.name.to_string()).collect();
                    return Err(Error::syntax_near(&format!("({})", cols.join(", "))));
                }
                let saved = std::mem::take(&mut self.levels);
                let r = self.bind_query(subquery);
                self.levels = saved;
                let sp = r?;
                let alias = alias
                    .as_ref()
                    .map(|a| a.name.value.clone())
                    .ok_or_else(|| {
                        Error::new(1248, "Every derived table must have its own alias")
                    })?;
                let cols = sp
                    .columns
                    .into_iter()
                    .map(|mut c| {
                        c.table = alias.clone();
                        c.org_table = String::new();
                        ScopeCol::new(alias.clone(), c)
                    })
                    .collect();
                Ok((sp.plan, cols))
            }
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => self.bind_from(std::slice::from_ref(table_with_joins)),
            other => Err(Error::unsupported(other.to_string())),
        }
    }

    fn bind_select(
        &mut self,
        s: &ast::Select,
        order: &[&ast::OrderByExpr],
        limit: Option<u64>,
        offset: u64,
    ) -> Result<SelectPlan> {
        if s.into.is_some() {
            return Err(Error::unsupported("SELECT INTO"));
        }
        let (mut plan, cols) = self.bind_from(&s.from)?;
        self.levels.push(Level { cols: cols.clone() });
        // A SELECT inside another has its own window calls and WINDOW clause.
        let wins = self.wins.take();
        let in_aggregate = std::mem::replace(&mut self.in_aggregate, false);
        let named = std::mem::replace(&mut self.named_windows, s.named_window.clone());
        let r = self
            .check_named_windows()
            .and_then(|()| self.bind_select_body(s, order, limit, offset, &mut plan, &cols));
        self.wins = wins;
        self.in_aggregate = in_aggregate;
        self.named_windows = named;
        self.levels.pop();
        let (plan, columns) = r?;
        Ok(SelectPlan { plan, columns })
    }

    fn bind_select_body(
        &mut self,
        s: &ast::Select,
        order: &[&ast::OrderByExpr],
        limit: Option<u64>,
        offset: u64,
        plan: &mut Plan,
        cols: &[ScopeCol],
    ) -> Result<(Plan, Vec<OutColumn>)> {
        let mut plan = std::mem::replace(plan, Plan::Dual);
        let mut semi_joins = vec![];
        let factored = s
            .selection
            .as_ref()
            .map(|w| or_factor::factor_ors(w).unwrap_or_else(|| w.clone()));
        let pred = factored
            .as_ref()
            .map(|w| self.in_clause("WHERE", |b| b.bind_where(w, &plan, &mut semi_joins)))
            .transpose()?
            .flatten();
        // The joins go first: the rest of WHERE is pushed through them, and what cannot
        // be (a correlated subquery) is checked on the rows they keep.
        semi_joins.sort_by_key(|j| matches!(j, decorrelate::Decorrelated::Grouped(_)));
        for j in semi_joins {
            plan = j.apply(plan);
        }
        self.traced("decorrelate", &plan);
        if let Some(pred) = pred {
            if contains_agg(&pred) {
                return Err(Error::invalid_group());
            }
            // Each column's FROM item, for the single-table conditions an OR implies.
            let mut names: Vec<&str> = vec![];
            let table_ids: Vec<usize> = cols
                .iter()
                .map(|c| match names.iter().position(|n| *n == c.table) {
                    Some(i) => i,
                    None => {
                        names.push(&c.table);
                        names.len() - 1
                    }
                })
                .collect();
            let pred = or_derive::derive(pred, &|c| table_ids.get(c).copied());
            plan = push_filter(plan, pred);
            self.traced("push_filter", &plan);
        }
        plan = crate::joinorder::order_joins(plan);
        self.traced("join_order", &plan);
        // Select list (wildcards expanded).
        self.aggs = Some(vec![]);
        self.wins = Some(vec![]);
        let items = self.in_clause("SELECT", |b| b.bind_items(&s.projection, cols))?;
        // GROUP BY and HAVING may hold no window call (4015); ORDER BY may.
        let wins = self.wins.take();
        let rollup = match &s.group_by {
            ast::GroupByExpr::Expressions(_, mods) => {
                if mods
                    .iter()
                    .any(|m| !matches!(m, ast::GroupByWithModifier::Rollup))
                {
                    return Err(Error::unsupported("GROUP BY … WITH CUBE / TOTALS"));
                }
                !mods.is_empty()
            }
            _ => false,
        };
        if rollup && !order.is_empty() {
            return Err(Error::new(
                1221,
                "Incorrect usage of CUBE/ROLLUP and ORDER BY",
            ));
        }
        let group_exprs: Vec<Expr> = match &s.group_by {
            ast::GroupByExpr::Expressions(v, _) => v
                .iter()
                .map(|e| {
                    // GROUP BY may name a select alias or position.
                    if let A::Value(v) = e {
                        if let Ok(n) = v.value.to_string().parse::<usize>() {
                            if n >= 1 && n <= items.len() {
                                return Ok(items[n - 1].0.clone());
                            }
                        }
                    }
                    if let A::Identifier(i) = e {
                        if self.lookup(std::slice::from_ref(&i.value)).is_err() {
                            if let Some((ex, _)) = items
                                .iter()
                                .find(|(_, c)| c.name.eq_ignore_ascii_case(&i.value))
                            {
                                return Ok(ex.clone());
                            }
                        }
                    }
                    self.in_clause("GROUP BY", |b| b.bind_expr(e))
                })
                .collect::<Result<_>>()?,
            ast::GroupByExpr::All(_) => return Err(Error::unsupported("GROUP BY ALL")),
        };
        let having = s
            .having
            .as_ref()
            .map(|h| self.in_clause("HAVING", |b| b.bind_having(h, &items)))
            .transpose()?;
        if group_exprs.iter().any(window::contains_win)
            || having.as_ref().is_some_and(window::contains_win)
        {
            return Err(Error::window_function_placement());
        }
        self.wins = wins;
        // ORDER BY: select alias, position, or an expression.
        let mut order_keys: Vec<(Expr, bool)> = vec![];
        let mut extra: Vec<Expr> = vec![];
        for o in order {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let by_pos = match &o.expr {
                A::Value(v) => match v.value.to_string().parse::<usize>() {
                    Ok(n) if n >= 1 && n <= items.len() => Some(n - 1),
                    Ok(n) => return Err(Error::unknown_column(&n.to_string(), "ORDER BY")),
                    Err(_) => None,
                },
                A::Identifier(i) => {
                    let alias_hit = items
                        .iter()
                        .position(|(_, c)| c.name.eq_ignore_ascii_case(&i.value));
                    match alias_hit {
                        Some(p)
                            if self.lookup(std::slice::from_ref(&i.value)).is_err()
                                || matches!(items[p].0, Expr::Col(_)) =>
                        {
                            Some(p)
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            // A string of a collation other than the plain one sorts by its sort key.
            let key = |b: &Self, p: usize, src: &Expr| -> Result<Expr> {
                Ok(match b.ordering_collation(src)? {
                    Some(c) => Expr::SortKey(Box::new(Expr::Col(p)), c),
                    None => Expr::Col(p),
                })
            };
            if let Some(p) = by_pos {
                order_keys.push((key(self, p, &items[p].0)?, desc));
                continue;
            }
            let b = self.in_clause("ORDER BY", |b| b.bind_expr(&o.expr))?;
            if let Some(p) = items.iter().position(|(e, _)| e.same(&b)) {
                order_keys.push((key(self, p, &b)?, desc));
            } else {
                order_keys.push((key(self, items.len() + extra.len(), &b)?, desc));
                extra.push(b);
            }
        }
        // DISTINCT compares strings under their collations (the aggregates still known).
        let distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
        let distinct_colls = if distinct {
            items
                .iter()
                .map(|(e, _)| Ok(self.ordering_collation(e)?.unwrap_or_default()))
                .collect::<Result<Vec<_>>>()?
        } else {
            vec![]
        };
        let aggs = self.aggs.take().unwrap_or_default();
        let mut wins = self.wins.take().unwrap_or_default();
        let is_agg = !aggs.is_empty()
            || !group_exprs.is_empty()
            || having.as_ref().is_some_and(contains_agg);
        let mut proj: Vec<Expr> = items
            .iter()
            .map(|(e, _)| e.clone())
            .chain(extra.iter().cloned())
            .collect();
        let mut having = having;
        if is_agg {
            let mut aggs = aggs;
            let ng = group_exprs.len();
            let fix = |e: Expr, aggs: &mut Vec<Agg>| -> Expr {
                rewrite_for_agg(e, &group_exprs, aggs, ng)
            };
            proj = proj.into_iter().map(|e| fix(e, &mut aggs)).collect();
            having = having.map(|h| fix(h, &mut aggs));
            for w in &mut wins {
                w.map_exprs(&mut |e| fix(e, &mut aggs));
            }
            // Aggregates added by rewriting (bare columns) shift nothing: they are appended.
            let agg_tys = aggs.clone();
            // Strings of a collation other than the plain one group under it.
            let colls = group_exprs
                .iter()
                .map(|g| self.ordering_collation(g))
                .collect::<Result<Vec<_>>>()?;
            let group = group_exprs
                .into_iter()
                .zip(&colls)
                .map(|(g, c)| match c {
                    Some(c) => Expr::Collate(Box::new(g), *c),
                    None => g,
                })
                .collect();
            plan = Plan::Aggregate {
                input: Box::new(plan),
                group,
                aggs: agg_tys,
                rollup,
            };
            // MariaDB returns groups sorted by the GROUP BY columns when there is no
            // ORDER BY (`ORDER BY NULL` turns it off), and applications rely on it: the
            // groups are sorted, not the rows going in (ROLLUP sorts its own).
            if ng > 0 && order.is_empty() && !rollup {
                plan = Plan::Sort {
                    input: Box::new(plan),
                    keys: colls
                        .iter()
                        .enumerate()
                        .map(|(i, c)| {
                            let k = match c {
                                Some(c) => Expr::SortKey(Box::new(Expr::Col(i)), *c),
                                None => Expr::Col(i),
                            };
                            (k, false)
                        })
                        .collect(),
                };
            }
        }
        if let Some(h) = having {
            plan = Plan::Filter {
                input: Box::new(plan),
                pred: h,
            };
        }
        if !wins.is_empty() {
            // Window calls see the grouped rows (or the FROM clause's) and add a column
            // each after them.
            let base = width(&plan).unwrap_or(cols.len());
            plan = window::window_plan(plan, wins, base);
            proj = proj
                .into_iter()
                .map(|e| {
                    e.rewrite(&mut |x| match x {
                        Expr::WinRef(j) => Some(Expr::Col(base + j)),
                        _ => None,
                    })
                })
                .collect();
        }
        let visible = items.len();
        plan = Plan::Project {
            input: Box::new(plan),
            exprs: proj,
        };
        if distinct {
            plan = Plan::Distinct {
                input: Box::new(plan),
                keys: visible,
                colls: distinct_colls,
            };
        }
        if !order_keys.is_empty() {
            plan = Plan::Sort {
                input: Box::new(plan),
                keys: order_keys,
            };
        }
        if limit.is_some() || offset > 0 {
            plan = Plan::Limit {
                input: Box::new(plan),
                limit,
                offset,
            };
        }
        if !extra.is_empty() {
            plan = Plan::Project {
                input: Box::new(plan),
                exprs: (0..visible).map(Expr::Col).collect(),
            };
        }
        let columns = items.into_iter().map(|(_, c)| c).collect();
        Ok((
            crate::optimize::optimize(plan, self.trace.as_mut()),
            columns,
        ))
    }

    /// A select list over `cols` (the innermost scope), wildcards expanded.
    fn bind_items(
        &mut self,
        projection: &[SelectItem],
        cols: &[ScopeCol],
    ) -> Result<Vec<(Expr, OutColumn)>> {
        let mut items: Vec<(Expr, OutColumn)> = vec![];
        for item in projection {
            match item {
                SelectItem::Wildcard(_) => {
                    if cols.is_empty() {
                        return Err(Error::new(1096, "No tables used"));
                    }
                    let mut listed: Vec<usize> = (0..cols.len())
                        .filter(|&i| cols[i].star.is_some())
                        .collect();
                    listed.sort_by_key(|&i| cols[i].star);
                    for i in listed {
                        items.push((Expr::Col(i), cols[i].col.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let q = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => {
                            object_name(n).pop().unwrap_or_default()
                        }
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string(),
                    };
                    let mut any = false;
                    for (i, c) in cols.iter().enumerate() {
                        if c.table == q {
                            items.push((Expr::Col(i), c.col.clone()));
                            any = true;
                        }
                    }
                    if !any {
                        return Err(Error::unknown_table(&q));
                    }
                }
                SelectItem::UnnamedExpr(e) => {
                    let b = self.bind_expr(e)?;
                    let oc = self.out_column(&b, e, None, cols);
                    items.push((b, oc));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let b = self.bind_expr(expr)?;
                    let oc = self.out_column(&b, expr, Some(&alias.value), cols);
                    items.push((b, oc));
                }
                other => return Err(Error::unsupported(other.to_string())),
            }
        }
        Ok(items)
    }

    /// The RETURNING list of INSERT / REPLACE / DELETE over the target's row: no
    /// aggregates (1111), unknown names "in 'RETURNING'".
    pub fn bind_returning(
        &mut self,
        items: &[SelectItem],
        entry: &TableEntry,
        alias: &str,
    ) -> Result<(Vec<Expr>, Vec<OutColumn>)> {
        let cols = Self::table_scope(entry, alias);
        self.levels.push(Level { cols: cols.clone() });
        let saved = self.aggs.take();
        let r = self.in_clause("RETURNING", |b| b.bind_items(items, &cols));
        self.aggs = saved;
        self.levels.pop();
        Ok(r?.into_iter().unzip())
    }

    fn bind_having(&mut self, h: &A, items: &[(Expr, OutColumn)]) -> Result<Expr> {
        // HAVING may use select aliases.
        match self.bind_expr(h) {
            Err(e) if e.code == 1054 => bind_with_aliases(self, h, items),
            other => other,
        }
    }

    fn out_column(&self, b: &Expr, e: &A, alias: Option<&str>, cols: &[ScopeCol]) -> OutColumn {
        let name = alias.map(str::to_string).unwrap_or_else(|| match e {
            A::Identifier(i) => i.value.clone(),
            A::CompoundIdentifier(v) if v[0].value.starts_with("@@") => v
                .iter()
                .map(|i| i.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
            A::CompoundIdentifier(v) => v.last().map(|i| i.value.clone()).unwrap_or_default(),
            A::Value(v) => match &v.value {
                ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                    s.chars().take(256).collect()
                }
                other => bounded_text(other),
            },
            other => bounded_text(other),
        });
        // An expression's own text names it up to 255 characters (as MariaDB cuts it).
        let name = if alias.is_none() && name.len() > 255 {
            name.chars().take(255).collect()
        } else {
            name
        };
        match b {
            Expr::Col(i)
                if alias.is_none() || matches!(e, A::Identifier(_) | A::CompoundIdentifier(_)) =>
            {
                let mut c = cols[*i].col.clone();
                c.name = name;
                c
            }
            _ => {
                let (mut ty, nullable) = self.infer(b, cols);
                // A string result has the collation it derives (CONCAT(bin_col, 'x') is
                // utf8mb4_bin): a UNION or a derived table over it compares by it.
                if ty.is_string() && !ty.is_binary() {
                    if let Ok(Some(d)) = self.derivation(b, cols) {
                        if d.coll != quarry_common::Collation::Binary {
                            ty.coll = d.coll;
                        }
                    }
                }
                OutColumn::expr(&name, ty, nullable)
            }
        }
    }

    /// A DOUBLE with fixed decimals becoming text keeps them (CAST(ROUND(2.5e0, 1) AS
    /// CHAR) is '2.5', CAST(ROUND(3e0, 1) AS CHAR) '3.0'), through a DECIMAL of that scale.
    fn fixed_decimals_as_text(&self, x: Expr, to: SqlType) -> Expr {
        if !to.is_string() {
            return x;
        }
        let cols = self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[]);
        let t = self.infer(&x, cols).0;
        if let Some(d) = fixed_decimals(t).filter(|_| is_float(t) && t.scale > 0) {
            Expr::Cast(Box::new(x), SqlType::decimal(65, d))
        } else {
            x
        }
    }

    /// The type of `e` when it is a TIME, DATETIME or TIMESTAMP (with `date`, also DATE).
    fn temporal_type(&self, e: &Expr, date: bool) -> Option<SqlType> {
        // Operators and literals never are: not asking saves inferring each step of a
        // long chain of them again.
        if matches!(e, Expr::Bin(..) | Expr::Unary(..) | Expr::Lit(_)) {
            return None;
        }
        let cols = self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[]);
        let ty = self.infer(e, cols).0;
        match ty.kind {
            TypeKind::Time | TypeKind::DateTime | TypeKind::Timestamp => Some(ty),
            TypeKind::Date if date => Some(ty),
            _ => None,
        }
    }

    /// A TIME, DATETIME or TIMESTAMP as a number is a DECIMAL with its type's fractional
    /// digits, as in MariaDB (`t + 0` of a TIME(3) 10:11:00 is 101100.000: the value alone
    /// does not know its type's digits). With `always` (SUM, AVG) a temporal value without
    /// a fraction is a DECIMAL too, so its average is one.
    fn temporal_as_number(&self, e: Expr, always: bool) -> Expr {
        match self.temporal_type(&e, true) {
            Some(ty) if ty.scale > 0 || always => Expr::Cast(
                Box::new(e),
                SqlType::decimal(21 + ty.scale as u32, ty.scale),
            ),
            _ => e,
        }
    }

    /// `CAST(x AS ty)`; a TIME or DATETIME(n) cast to a string shows its n fractional
    /// digits (carried to the cast in the target's scale), as in MariaDB.
    fn temporal_cast(&self, x: Expr, mut ty: SqlType) -> Expr {
        if ty.is_string() {
            if let Some(from) = self.temporal_type(&x, false) {
                ty.scale = from.scale;
            }
        }
        Expr::Cast(Box::new(x), ty)
    }

    /// An argument of a string function: a TIME or DATETIME(n) as its text with n
    /// fractional digits; anything else as it is.
    fn temporal_text(&self, x: Expr) -> Expr {
        match self.temporal_type(&x, false) {
            Some(from) if from.scale > 0 => Expr::Cast(
                Box::new(x),
                SqlType {
                    scale: from.scale,
                    ..SqlType::new(TypeKind::Text)
                },
            ),
            _ => x,
        }
    }

    /// Static type of a bound expression over `cols`.
    pub fn infer(&self, e: &Expr, cols: &[ScopeCol]) -> (SqlType, bool) {
        let col_ty = |i: usize| {
            cols.get(i)
                .map(|c| (c.col.ty, c.col.nullable))
                .unwrap_or((SqlType::NULL, true))
        };
        match e {
            Expr::Col(i) => col_ty(*i),
            Expr::Lit(v) => (v.type_of(), v.is_null()),
            Expr::WinRef(j) => self.win_type(*j),
            Expr::AggRef(j) => {
                let a = &self.aggs.as_ref().map(|a| a[*j].clone());
                match a {
                    Some(a) => (a.ty, !matches!(a.func, AggFunc::Count | AggFunc::CountStar)),
                    None => (SqlType::BIGINT, true),
                }
            }
            Expr::Bin(op, a, b) => {
                let (ta, na) = self.infer(a, cols);
                let (tb, nb) = self.infer(b, cols);
                let n = na || nb;
                match op {
                    // Of two NULLs, a DOUBLE, as in MariaDB (IF(0, ROUND(NULL % NULL, 2), 5)
                    // shows 5.00); beside a typed operand NULL takes its type.
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Mod
                        if ta.kind == TypeKind::Null && tb.kind == TypeKind::Null =>
                    {
                        (SqlType::DOUBLE, true)
                    }
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Mod => {
                        if is_float(ta) || is_float(tb) {
                            // A double keeps fixed decimals when both operands have them
                            // (pk * ROUND(f, 1) shows -2816.0); one without makes it free.
                            let scale = match (fixed_decimals(ta), fixed_decimals(tb)) {
                                (Some(x), Some(y)) if *op == BinOp::Mul => {
                                    double_scale((x + y).min(30))
                                }
                                (Some(x), Some(y)) => double_scale(x.max(y)),
                                _ => 0,
                            };
                            (
                                SqlType {
                                    scale,
                                    ..SqlType::DOUBLE
                                },
                                n,
                            )
                        } else if ta.kind == TypeKind::Decimal || tb.kind == TypeKind::Decimal {
                            let s = if *op == BinOp::Mul {
                                ta.scale + tb.scale
                            } else {
                                ta.scale.max(tb.scale)
                            };
                            (SqlType::decimal(30, s.min(38)), n)
                        } else {
                            (SqlType::BIGINT, n)
                        }
                    }
                    BinOp::Div => {
                        if is_float(ta) || is_float(tb) {
                            (SqlType::DOUBLE, true)
                        } else {
                            (SqlType::decimal(30, (ta.scale + 4).min(38)), true)
                        }
                    }
                    BinOp::IntDiv => (SqlType::BIGINT, true),
                    BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => (
                        SqlType {
                            unsigned: true,
                            ..SqlType::BIGINT
                        },
                        n,
                    ),
                    BinOp::NullSafeEq => (
                        SqlType {
                            len: 1,
                            ..SqlType::INT
                        },
                        false,
                    ),
                    _ => (
                        SqlType {
                            len: 1,
                            ..SqlType::INT
                        },
                        n,
                    ),
                }
            }
            Expr::Unary(UnOp::Neg, a) => self.infer(a, cols),
            Expr::Unary(_, a) => (
                SqlType {
                    len: 1,
                    ..SqlType::INT
                },
                self.infer(a, cols).1,
            ),
            Expr::IsNull(..) | Expr::IsBool(..) | Expr::Exists { .. } => (
                SqlType {
                    len: 1,
                    ..SqlType::INT
                },
                false,
            ),
            Expr::Like { .. } | Expr::InList { .. } | Expr::InSub { .. } | Expr::Between { .. } => {
                (
                    SqlType {
                        len: 1,
                        ..SqlType::INT
                    },
                    true,
                )
            }
            Expr::Cast(_, t) => (*t, true),
            // COLLATE keeps the type and changes the collation.
            Expr::Collate(a, c) => {
                let (t, n) = self.infer(a, cols);
                let t = if t.is_string() && !t.is_binary() {
                    SqlType { coll: *c, ..t }
                } else {
                    t
                };
                (t, n)
            }
            Expr::SortKey(a, _) => (
                SqlType {
                    kind: TypeKind::VarBinary,
                    ..SqlType::varchar(65535)
                },
                self.infer(a, cols).1,
            ),
            Expr::Case { whens, else_, .. } => {
                let mut t = SqlType::NULL;
                for (_, r) in whens {
                    t = unify(t, self.infer(r, cols).0);
                }
                if let Some(e) = else_ {
                    t = unify(t, self.infer(e, cols).0);
                }
                (t, true)
            }
            Expr::ScalarSub(q) => (q.ty, true),
            Expr::Func(name, args) => {
                let arg = |i: usize| {
                    args.get(i)
                        .map(|a| self.infer(a, cols).0)
                        .unwrap_or(SqlType::NULL)
                };
                let t = match name.as_str() {
                    "IF" => unify(arg(1), arg(2)),
                    "NULLIF" => arg(0),
                    "IFNULL" | "COALESCE" | "GREATEST" | "LEAST" => {
                        let tys: Vec<SqlType> =
                            args.iter().map(|a| self.infer(a, cols).0).collect();
                        let t = tys.iter().fold(SqlType::NULL, |t, a| unify(t, *a));
                        // GREATEST / LEAST with a NULL among integers is a DOUBLE of no
                        // decimals in MariaDB: CASE … ELSE LEAST(NULL, i) is a DOUBLE. (Beside
                        // a DECIMAL it computes as a DECIMAL, though its column says DOUBLE.)
                        let null_arg = tys.iter().any(|t| t.kind == TypeKind::Null);
                        if matches!(name.as_str(), "GREATEST" | "LEAST")
                            && null_arg
                            && t.is_integer()
                        {
                            SqlType {
                                scale: double_scale(0),
                                ..SqlType::DOUBLE
                            }
                        } else {
                            t
                        }
                    }
                    "ABS" | "ROUND" | "TRUNCATE" | "MOD" => {
                        let t = arg(0);
                        let given = match args.get(1) {
                            Some(Expr::Lit(v)) if name != "MOD" => Some(v.to_i64()),
                            _ => None,
                        };
                        let digits = given.map(|d| d.clamp(0, 30));
                        match digits {
                            // ROUND(NULL, 1) is a DOUBLE of 1 decimal; ABS(NULL) NULL of no
                            // type (ABS(NULL) / 3 is a DECIMAL division), as in MariaDB.
                            Some(d) if t.kind == TypeKind::Null => SqlType {
                                scale: if given.is_some_and(|g| g <= 0) {
                                    DOUBLE_FIXED_ZERO
                                } else {
                                    d as u8
                                },
                                ..SqlType::DOUBLE
                            },
                            _ if t.kind == TypeKind::Null => SqlType::NULL,
                            // ROUND(BIGINT, -1) may pass the BIGINT range: a DECIMAL, as in
                            // MariaDB (ROUND(9223372036854775807, -1) is 9223372036854775810).
                            _ if given.is_some_and(|g| g < 0) && t.kind == TypeKind::BigInt => {
                                SqlType::decimal(21, 0)
                            }
                            // ROUND(1.25, 1) is DECIMAL(…,1): IFNULL(1, ROUND(x, 1)) shows 1.0;
                            // ROUND(2.5e0, 2) a DOUBLE shown with 2 decimals.
                            Some(d) if t.kind == TypeKind::Decimal => SqlType {
                                scale: d as u8,
                                ..t
                            },
                            Some(d) if is_float(t) || t.is_string() => SqlType {
                                scale: if given.is_some_and(|g| g <= 0) {
                                    DOUBLE_FIXED_ZERO
                                } else {
                                    d as u8
                                },
                                ..SqlType::DOUBLE
                            },
                            _ if t.is_integer() || t.kind == TypeKind::Decimal || is_float(t) => t,
                            _ => SqlType::DOUBLE,
                        }
                    }
                    "CEIL" | "CEILING" | "FLOOR" => {
                        if is_float(arg(0)) || arg(0).is_string() {
                            SqlType {
                                scale: DOUBLE_FIXED_ZERO,
                                ..SqlType::DOUBLE
                            }
                        } else {
                            SqlType::BIGINT
                        }
                    }
                    "POW" | "POWER" | "SQRT" | "EXP" | "LN" | "LOG" | "LOG10" | "LOG2" | "PI"
                    | "RAND" | "SIN" | "COS" | "TAN" | "ATAN" | "ATAN2" | "ASIN" | "ACOS"
                    | "COT" | "RADIANS" | "DEGREES" => SqlType::DOUBLE,
                    "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "INSTR"
                    | "LOCATE" | "ASCII" | "ORD" | "SIGN" | "YEAR" | "MONTH" | "DAY"
                    | "DAYOFMONTH" | "HOUR" | "MINUTE" | "SECOND" | "DAYOFWEEK" | "WEEKDAY"
                    | "DAYOFYEAR" | "TO_DAYS" | "DATEDIFF" | "TIMESTAMPDIFF" | "UNIX_TIMESTAMP"
                    | "ROW_COUNT" | "FOUND_ROWS" | "STRCMP" | "FIELD" | "BIT_LENGTH" | "ISNULL"
                    | "QUARTER" | "WEEK" | "YEARWEEK" | "WEEKOFYEAR" | "JSON_VALID" => {
                        SqlType::BIGINT
                    }
                    // DATE, TIME or DATETIME as the format's specifiers say (MariaDB
                    // decides the same way, from a constant format).
                    "STR_TO_DATE" => match args.get(1) {
                        Some(Expr::Lit(Value::Str(f))) => {
                            match quarry_executor::strtodate::parts(f) {
                                (true, false) => SqlType::DATE,
                                (false, true) => SqlType {
                                    scale: if f.contains("%f") { 6 } else { 0 },
                                    ..SqlType::TIME
                                },
                                _ => SqlType {
                                    scale: if f.contains("%f") { 6 } else { 0 },
                                    ..SqlType::DATETIME
                                },
                            }
                        }
                        _ => SqlType::DATETIME,
                    },
                    "LAST_INSERT_ID" | "CONNECTION_ID" => SqlType {
                        unsigned: true,
                        ..SqlType::BIGINT
                    },
                    "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" | "SYSDATE"
                    | "UTC_TIMESTAMP" | "FROM_UNIXTIME" => SqlType::DATETIME,
                    "CURDATE" | "CURRENT_DATE" | "UTC_DATE" | "DATE" | "LAST_DAY" | "FROM_DAYS" => {
                        SqlType::DATE
                    }
                    "TIME" | "CURTIME" | "CURRENT_TIME" | "SEC_TO_TIME" | "TIMEDIFF"
                    | "MAKETIME" => SqlType {
                        scale: (0..args.len())
                            .map(|i| arg(i).scale)
                            .max()
                            .unwrap_or(0)
                            .min(6),
                        ..SqlType::TIME
                    },
                    "MICROSECOND" => SqlType::BIGINT,
                    "TIME_TO_SEC" => SqlType::DOUBLE,
                    "ADDTIME" | "SUBTIME" => match arg(0).kind {
                        TypeKind::Time => SqlType {
                            scale: arg(0).scale.max(arg(1).scale).min(6),
                            ..SqlType::TIME
                        },
                        TypeKind::DateTime | TypeKind::Timestamp => SqlType::DATETIME,
                        _ => SqlType::varchar(255),
                    },
                    "DATE_ADD" | "DATE_SUB" => {
                        // A SECOND interval's fraction adds its digits (six from a text
                        // or a double), as MariaDB shows them.
                        let second =
                            matches!(args.get(2), Some(Expr::Lit(Value::Str(u))) if u == "SECOND");
                        let frac = match arg(1).kind {
                            _ if !second => 0,
                            TypeKind::Decimal => arg(1).scale,
                            TypeKind::Float | TypeKind::Double => 6,
                            k if SqlType::new(k).is_string() => 6,
                            _ => 0,
                        };
                        let from = arg(0);
                        let own = match from.kind {
                            TypeKind::Time | TypeKind::DateTime | TypeKind::Timestamp => from.scale,
                            _ => 0,
                        };
                        // A DATE stays one only for whole days (INTERVAL 1 HOUR makes a
                        // DATETIME), as in MariaDB.
                        let whole_days = matches!(
                            args.get(2),
                            Some(Expr::Lit(Value::Str(u))) if matches!(
                                u.as_str(),
                                "DAY" | "WEEK" | "MONTH" | "QUARTER" | "YEAR" | "YEAR_MONTH"
                            )
                        );
                        match from.kind {
                            // NULL + INTERVAL is NULL of no type: it leaves IF(c, DATE,
                            // DATE_ADD(NULL, …)) a DATE.
                            TypeKind::Null => SqlType::NULL,
                            TypeKind::Date if frac == 0 && whole_days => SqlType::DATE,
                            TypeKind::Time => SqlType {
                                scale: own.max(frac).min(6),
                                ..SqlType::TIME
                            },
                            _ => SqlType {
                                scale: own.max(frac).min(6),
                                ..SqlType::DATETIME
                            },
                        }
                    }
                    _ => SqlType::varchar(255),
                };
                (t, true)
            }
            // An enclosing query's column has its column's type (`i_col = o_col` compares
            // as the columns do, and finds the inner rows through an index).
            Expr::Outer(up, i) => self
                .levels
                .len()
                .checked_sub(1 + up)
                .and_then(|l| self.levels[l].cols.get(*i))
                .map(|c| (c.col.ty, c.col.nullable))
                .unwrap_or((SqlType::varchar(255), true)),
            Expr::Param(_) | Expr::UserVar(_) | Expr::InsertValue(_) => {
                (SqlType::varchar(255), true)
            }
            Expr::SysVar(_) => (SqlType::varchar(255), true),
        }
    }

    // ---------------------------------------------------------------- expressions

    fn lookup(&mut self, parts: &[String]) -> Result<Expr> {
        let (tq, name) = match parts {
            [n] => (None, n.as_str()),
            [t, n] => (Some(t.as_str()), n.as_str()),
            [_, t, n] => (Some(t.as_str()), n.as_str()),
            _ => return Err(Error::syntax_near(&parts.join("."))),
        };
        let nlev = self.levels.len();
        for (depth, level) in self.levels.iter().rev().enumerate() {
            let mut hits = level.cols.iter().enumerate().filter(|(_, c)| {
                c.col.name.eq_ignore_ascii_case(name)
                    && tq.map_or(c.star.is_some(), |t| c.table == t)
            });
            let first = hits.next();
            if let Some((i, _)) = first {
                if tq.is_none() && hits.next().is_some() {
                    return Err(Error::ambiguous_column(name, self.clause));
                }
                if depth == 0 {
                    return Ok(Expr::Col(i));
                }
                self.found_refs.push((nlev - 1 - depth, i));
                return Ok(Expr::Outer(depth, i));
            }
        }
        Err(Error::unknown_column(&parts.join("."), self.clause))
    }

    /// `f` with errors naming `clause`; the clause before is back after it (a subquery
    /// in WHERE names its own clauses, then WHERE again).
    pub fn in_clause<T>(&mut self, clause: &'static str, f: impl FnOnce(&mut Self) -> T) -> T {
        let before = std::mem::replace(&mut self.clause, clause);
        let r = f(self);
        self.clause = before;
        r
    }

    /// A subquery; `as_set` when its rows are read as a set (IN, EXISTS): its sorts that
    /// decide no row are then dropped ([`unordered`]).
    fn bind_sub(&mut self, q: &ast::Query, as_set: bool) -> Result<Arc<SubQuery>> {
        let saved_aggs = self.aggs.take();
        let base = self.levels.len();
        let start = self.found_refs.len();
        let volatile_before = self.volatile_calls;
        let r = self.bind_query(q);
        // The enclosing rows' columns it reads, as `Expr::Outer` finds them when it runs
        // (one level up is the row it runs for).
        let mut outer_refs: Vec<(usize, usize)> = self.found_refs[start..]
            .iter()
            .filter(|(level, _)| *level < base)
            .map(|&(level, col)| (base - level, col))
            .collect();
        outer_refs.sort_unstable();
        outer_refs.dedup();
        let correlated = !outer_refs.is_empty();
        let stable = self.volatile_calls == volatile_before;
        self.aggs = saved_aggs;
        let sp = r?;
        self.next_sub += 1;
        Ok(Arc::new(SubQuery {
            ty: sp.columns.first().map(|c| c.ty).unwrap_or(SqlType::NULL),
            plan: if as_set {
                unordered::unordered(sp.plan)
            } else {
                sp.plan
            },
            correlated,
            outer_refs: stable.then_some(outer_refs),
            id: self.next_sub + 1_000_000 * self.levels.len(),
        }))
    }

    /// `e` over the columns of a result (SHOW … WHERE): its names are those columns.
    pub fn bind_expr_over(&mut self, e: &A, cols: &[OutColumn]) -> Result<Expr> {
        let cols = cols
            .iter()
            .map(|c| ScopeCol::new(String::new(), c.clone()))
            .collect();
        self.levels.push(Level { cols });
        let r = self.bind_expr(e);
        self.levels.pop();
        r
    }

    pub fn bind_expr(&mut self, e: &A) -> Result<Expr> {
        self.enter()?;
        let r = self
            .bind_expr_nested(e)
            .map(|x| self.harmonize(x))
            .and_then(|x| self.collate_comparison(x));
        self.leave(r)
    }

    /// IF / IFNULL / COALESCE / CASE (and GREATEST / LEAST over numbers) give every
    /// branch in the type the branches unify to, as MariaDB does: `IF(c, 20, 1/3)` is
    /// 20.0000 and `COALESCE(int_col, 'x')` a string (it gave each branch's own type).
    fn harmonize(&self, e: Expr) -> Expr {
        let cols = self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[]);
        let convert = |branches: Vec<&mut Expr>, numbers_only: bool| {
            let tys: Vec<SqlType> = branches.iter().map(|b| self.infer(b, cols).0).collect();
            if numbers_only
                && !tys
                    .iter()
                    .all(|t| is_number(*t) || t.kind == TypeKind::Null)
            {
                return;
            }
            let to = tys.iter().fold(SqlType::NULL, |t, b| unify(t, *b));
            for (b, from) in branches.into_iter().zip(tys) {
                if let Some(target) = widening(from, to) {
                    let inner = std::mem::replace(b, Expr::Lit(Value::Null));
                    *b = Expr::Cast(Box::new(inner), target);
                }
            }
        };
        match e {
            Expr::Func(name, mut args)
                if matches!(
                    name.as_str(),
                    "IF" | "IFNULL" | "COALESCE" | "GREATEST" | "LEAST"
                ) =>
            {
                let skip = usize::from(name == "IF");
                let numbers_only = name == "GREATEST" || name == "LEAST";
                convert(args.iter_mut().skip(skip).collect(), numbers_only);
                Expr::Func(name, args)
            }
            Expr::Case {
                operand,
                mut whens,
                mut else_,
            } => {
                let branches: Vec<&mut Expr> = whens
                    .iter_mut()
                    .map(|(_, r)| r)
                    .chain(else_.as_deref_mut())
                    .collect();
                convert(branches, false);
                Expr::Case {
                    operand,
                    whens,
                    else_,
                }
            }
            // A string compared with a number compares as a number (MariaDB's rule, which
            // sql_cmp follows row by row); said in the plan, a hash join's keys agree too
            // ('abc' = 0 matched in a filter but not as a join key).
            Expr::Bin(op, a, b)
                if matches!(
                    op,
                    BinOp::Eq
                        | BinOp::NullSafeEq
                        | BinOp::Ne
                        | BinOp::Lt
                        | BinOp::Le
                        | BinOp::Gt
                        | BinOp::Ge
                ) =>
            {
                let (ta, tb) = (self.infer(&a, cols).0, self.infer(&b, cols).0);
                // Only a side typed as text: a literal, a placeholder or a variable has
                // no declared type (`id = ?` stays an index lookup).
                let as_number = |e: Box<Expr>, t: SqlType, other: SqlType| -> Box<Expr> {
                    let typed = !matches!(
                        *e,
                        Expr::Lit(_)
                            | Expr::Param(_)
                            | Expr::UserVar(_)
                            | Expr::SysVar(_)
                            | Expr::InsertValue(_)
                    );
                    if typed && t.is_string() && is_number(other) {
                        Box::new(Expr::Cast(e, SqlType::DOUBLE))
                    } else {
                        e
                    }
                };
                Expr::Bin(op, as_number(a, ta, tb), as_number(b, tb, ta))
            }
            other => other,
        }
    }

    fn bind_expr_nested(&mut self, e: &A) -> Result<Expr> {
        Ok(match e {
            A::Identifier(i) if i.quote_style.is_none() && i.value.starts_with("@@") => {
                Expr::SysVar(i.value.clone())
            }
            A::Identifier(i) if i.quote_style.is_none() && i.value.starts_with('@') => {
                Expr::UserVar(i.value[1..].trim_matches('`').to_ascii_lowercase())
            }
            A::Identifier(i) => {
                if i.quote_style == Some('"') {
                    return Ok(Expr::Lit(Value::Str(i.value.clone())));
                }
                match i.value.to_ascii_uppercase().as_str() {
                    "CURRENT_TIMESTAMP" | "LOCALTIME" | "LOCALTIMESTAMP" | "CURRENT_DATE"
                    | "CURRENT_USER" | "CURRENT_TIME" | "UTC_TIMESTAMP" | "UTC_DATE"
                        if i.quote_style.is_none()
                            && self.lookup(std::slice::from_ref(&i.value)).is_err() =>
                    {
                        Expr::Func(i.value.to_ascii_uppercase(), vec![])
                    }
                    _ => self.lookup(&[ident_name(i)])?,
                }
            }
            A::CompoundIdentifier(v) => {
                let parts: Vec<String> = v.iter().map(ident_name).collect();
                if parts[0].starts_with("@@") {
                    return Ok(Expr::SysVar(parts.join(".")));
                }
                self.lookup(&parts)?
            }
            A::Value(v) => match &v.value {
                // quarry_sql numbers them in the order of the text.
                ast::Value::Placeholder(p) if p.starts_with('?') => {
                    let n = p
                        .strip_prefix(quarry_sql::NUMBERED_PLACEHOLDER)
                        .and_then(|n| n.parse::<usize>().ok())
                        .unwrap_or(self.param_count);
                    self.param_count = self.param_count.max(n + 1);
                    Expr::Param(n)
                }
                other => Expr::Lit(literal(other, self)?),
            },
            A::Nested(e) => self.bind_expr(e)?,
            A::UnaryOp { op, expr } => {
                let x = self.bind_expr(expr)?;
                match op {
                    ast::UnaryOperator::Minus => match x {
                        Expr::Lit(Value::Int(i)) => Expr::Lit(negate_int(i)),
                        Expr::Lit(Value::UInt(u)) if u == i64::MAX as u64 + 1 => {
                            Expr::Lit(Value::Int(i64::MIN))
                        }
                        Expr::Lit(Value::Decimal(d)) => Expr::Lit(Value::Decimal(-d)),
                        x => Expr::Unary(UnOp::Neg, Box::new(self.temporal_as_number(x, false))),
                    },
                    ast::UnaryOperator::Plus => x,
                    ast::UnaryOperator::Not | ast::UnaryOperator::BangNot => {
                        Expr::Unary(UnOp::Not, Box::new(x))
                    }
                    ast::UnaryOperator::BitwiseNot => Expr::Unary(UnOp::BitNot, Box::new(x)),
                    other => return Err(Error::unsupported(other.to_string())),
                }
            }
            // `d + INTERVAL n unit`, `INTERVAL n unit + d`, `d - INTERVAL n unit`: DATE_ADD
            // and DATE_SUB, as MySQL reads them (they were 1064).
            A::BinaryOp {
                left,
                op: op @ (B::Plus | B::Minus),
                right,
            } if matches!(**right, A::Interval(_))
                || (matches!(op, B::Plus) && matches!(**left, A::Interval(_))) =>
            {
                let (date, iv, sub) = match (&**left, &**right) {
                    (_, A::Interval(iv)) => (&**left, iv, matches!(op, B::Minus)),
                    (A::Interval(iv), _) => (&**right, iv, false),
                    _ => unreachable!("one side is an interval"),
                };
                let args = vec![
                    self.bind_expr(date)?,
                    self.bind_expr(&iv.value)?,
                    interval_unit(iv),
                ];
                let name = if sub { "DATE_SUB" } else { "DATE_ADD" };
                Expr::Func(name.into(), args)
            }
            A::BinaryOp { left, op, right } => {
                let op = match op {
                    B::Plus => BinOp::Add,
                    B::Minus => BinOp::Sub,
                    B::Multiply => BinOp::Mul,
                    B::Divide => BinOp::Div,
                    B::Modulo => BinOp::Mod,
                    B::MyIntegerDivide | B::DuckIntegerDivide => BinOp::IntDiv,
                    B::Eq => BinOp::Eq,
                    B::Spaceship => BinOp::NullSafeEq,
                    B::NotEq => BinOp::Ne,
                    B::Lt => BinOp::Lt,
                    B::LtEq => BinOp::Le,
                    B::Gt => BinOp::Gt,
                    B::GtEq => BinOp::Ge,
                    B::And => BinOp::And,
                    B::Or => BinOp::Or,
                    B::Xor => BinOp::Xor,
                    B::BitwiseAnd => BinOp::BitAnd,
                    B::BitwiseOr => BinOp::BitOr,
                    B::BitwiseXor => BinOp::BitXor,
                    B::PGBitwiseShiftLeft => BinOp::Shl,
                    B::PGBitwiseShiftRight => BinOp::Shr,
                    B::StringConcat => BinOp::Or,
                    other => return Err(Error::unsupported(format!("operator {other}"))),
                };
                let mut l = self.bind_expr(left)?;
                let mut r = self.bind_expr(right)?;
                if matches!(
                    op,
                    BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod | BinOp::IntDiv
                ) {
                    l = self.temporal_as_number(l, false);
                    r = self.temporal_as_number(r, false);
                }
                Expr::Bin(op, Box::new(l), Box::new(r))
            }
            A::IsNull(x) => Expr::IsNull(Box::new(self.bind_expr(x)?), false),
            A::IsNotNull(x) => Expr::IsNull(Box::new(self.bind_expr(x)?), true),
            A::IsTrue(x) => Expr::IsBool(Box::new(self.bind_expr(x)?), true, false),
            A::IsNotTrue(x) => Expr::IsBool(Box::new(self.bind_expr(x)?), true, true),
            A::IsFalse(x) => Expr::IsBool(Box::new(self.bind_expr(x)?), false, false),
            A::IsNotFalse(x) => Expr::IsBool(Box::new(self.bind_expr(x)?), false, true),
            A::IsUnknown(x) => Expr::IsNull(Box::new(self.bind_expr(x)?), false),
            A::IsNotUnknown(x) => Expr::IsNull(Box::new(self.bind_expr(x)?), true),
            A::IsDistinctFrom(a, b) => Expr::Unary(
                UnOp::Not,
                Box::new(Expr::Bin(
                    BinOp::NullSafeEq,
                    Box::new(self.bind_expr(a)?),
                    Box::new(self.bind_expr(b)?),
                )),
            ),
            A::IsNotDistinctFrom(a, b) => Expr::Bin(
                BinOp::NullSafeEq,
                Box::new(self.bind_expr(a)?),
                Box::new(self.bind_expr(b)?),
            ),
            A::Between {
                expr,
                negated,
                low,
                high,
            } => Expr::Between {
                expr: Box::new(self.bind_expr(expr)?),
                lo: Box::new(self.bind_expr(low)?),
                hi: Box::new(self.bind_expr(high)?),
                negated: *negated,
            },
            A::InList {
                expr,
                list,
                negated,
            } => Expr::InList {
                expr: Box::new(self.bind_expr(expr)?),
                list: list
                    .iter()
                    .map(|x| self.bind_expr(x))
                    .collect::<Result<_>>()?,
                negated: *negated,
            },
            A::InSubquery {
                expr,
                subquery,
                negated,
            } => {
                // MariaDB refuses a LIMIT on the subquery's own rows (one inside a
                // derived table in it is fine).
                if subquery.limit_clause.is_some() || subquery.fetch.is_some() {
                    return Err(Error::unsupported("LIMIT & IN/ALL/ANY/SOME subquery"));
                }
                let x = self.bind_expr(expr)?;
                Expr::InSub {
                    expr: Box::new(x),
                    sub: self.bind_sub(subquery, true)?,
                    negated: *negated,
                }
            }
            A::Exists { subquery, negated } => Expr::Exists {
                sub: self.bind_sub(subquery, true)?,
                negated: *negated,
            },
            A::Subquery(q) => Expr::ScalarSub(self.bind_sub(q, false)?),
            A::Like {
                negated,
                expr,
                pattern,
                escape_char,
                ..
            }
            | A::ILike {
                negated,
                expr,
                pattern,
                escape_char,
                ..
            } => {
                let escape = match escape_char.as_deref() {
                    Some(A::Value(v)) => match &v.value {
                        ast::Value::SingleQuotedString(s) => s.chars().next().unwrap_or('\\'),
                        _ => '\\',
                    },
                    _ => '\\',
                };
                Expr::Like {
                    expr: Box::new(self.bind_expr(expr)?),
                    pattern: Box::new(self.bind_expr(pattern)?),
                    escape,
                    negated: *negated,
                }
            }
            A::Case {
                operand,
                conditions,
                else_result,
                ..
            } => Expr::Case {
                operand: operand
                    .as_ref()
                    .map(|o| self.bind_expr(o).map(Box::new))
                    .transpose()?,
                whens: conditions
                    .iter()
                    .map(|c| Ok((self.bind_expr(&c.condition)?, self.bind_expr(&c.result)?)))
                    .collect::<Result<_>>()?,
                else_: else_result
                    .as_ref()
                    .map(|o| self.bind_expr(o).map(Box::new))
                    .transpose()?,
            },
            A::Cast {
                expr, data_type, ..
            } => {
                let x = self.bind_expr(expr)?;
                let ty = cast_type(data_type, &expr.to_string())?;
                let x = self.fixed_decimals_as_text(x, ty);
                self.temporal_cast(x, ty)
            }
            A::Convert {
                expr,
                data_type: Some(dt),
                ..
            } => {
                let x = self.bind_expr(expr)?;
                let ty = cast_type(dt, &expr.to_string())?;
                let x = self.fixed_decimals_as_text(x, ty);
                self.temporal_cast(x, ty)
            }
            A::Convert {
                expr,
                data_type: None,
                ..
            } => self.bind_expr(expr)?,
            // The collation must exist (1273) and be one of the expression's character set
            // (1253; a literal's is utf8mb4, the connection's).
            A::Collate { expr, collation } => {
                let name = object_name(collation).join(".");
                let Some(coll) = quarry_common::Collation::named(&name) else {
                    return Err(Error::new(1273, format!("Unknown collation: '{name}'")));
                };
                let x = self.bind_expr(expr)?;
                let cols = self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[]);
                let charset = self
                    .derivation(&x, cols)?
                    .map_or("utf8mb4", |d| d.coll.charset());
                if coll.charset() != charset {
                    return Err(Error::new(
                        1253,
                        format!(
                            "COLLATION '{}' is not valid for CHARACTER SET '{charset}'",
                            coll.name()
                        ),
                    ));
                }
                Expr::Collate(Box::new(x), coll)
            }
            A::TypedString(ts) => {
                let s = match &ts.value.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => {
                        s.clone()
                    }
                    other => other.to_string(),
                };
                let mut ty = sql_type(&ts.data_type, &s)?;
                // TIME '10:11:12.5' keeps the fractional digits it is written with, as
                // its type's (MariaDB); they were cut.
                let temporal = matches!(
                    ty.kind,
                    TypeKind::Time | TypeKind::DateTime | TypeKind::Timestamp
                );
                if temporal {
                    ty.scale = s
                        .rsplit_once('.')
                        .map_or(0, |(_, f)| f.bytes().take_while(u8::is_ascii_digit).count())
                        .min(6) as u8;
                }
                let v = quarry_executor::expr::cast_value(Value::Str(s.clone()), &ty)?;
                if v.is_null() {
                    return Err(Error::new(
                        1525,
                        format!("Incorrect {} value: '{s}'", ts.data_type),
                    ));
                }
                if temporal && ty.scale > 0 {
                    Expr::Cast(Box::new(Expr::Lit(v)), ty)
                } else {
                    Expr::Lit(v)
                }
            }
            A::Ceil { expr, .. } => Expr::Func("CEIL".into(), vec![self.bind_expr(expr)?]),
            A::Floor { expr, .. } => Expr::Func("FLOOR".into(), vec![self.bind_expr(expr)?]),
            A::Position { expr, r#in } => {
                let hay = self.bind_expr(r#in)?;
                Expr::Func(
                    "LOCATE".into(),
                    vec![self.bind_expr(expr)?, self.temporal_text(hay)],
                )
            }
            A::Substring {
                expr,
                substring_from,
                substring_for,
                ..
            } => {
                let x = self.bind_expr(expr)?;
                let mut args = vec![self.temporal_text(x)];
                args.push(match substring_from {
                    Some(f) => self.bind_expr(f)?,
                    None => Expr::Lit(Value::Int(1)),
                });
                if let Some(f) = substring_for {
                    args.push(self.bind_expr(f)?);
                }
                Expr::Func("SUBSTRING".into(), args)
            }
            A::Trim {
                expr,
                trim_where,
                trim_what,
                ..
            } => {
                let x = self.bind_expr(expr)?;
                let x = self.temporal_text(x);
                let mode = match trim_where {
                    Some(ast::TrimWhereField::Leading) => 1,
                    Some(ast::TrimWhereField::Trailing) => 2,
                    _ => 0,
                };
                let what = match trim_what {
                    Some(w) => self.bind_expr(w)?,
                    None => Expr::Lit(Value::Str(" ".into())),
                };
                Expr::Func(
                    "TRIM_CHARS".into(),
                    vec![x, what, Expr::Lit(Value::Int(mode))],
                )
            }
            A::Extract { field, expr, .. } => {
                let f = format!("{field}").to_ascii_uppercase();
                Expr::Func(f, vec![self.bind_expr(expr)?])
            }
            A::Interval(_) => return Err(Error::syntax_near(&e.to_string())),
            A::Function(f) => self.bind_function(f)?,
            A::Tuple(v) if v.len() == 1 => self.bind_expr(&v[0])?,
            A::Tuple(_) => return Err(Error::operand_columns(1)),
            other => return Err(Error::unsupported(other.to_string())),
        })
    }

    /// An aggregate call's arguments, clauses and result type. `window`: it is computed
    /// over a window (its arguments may hold the query's own aggregates); otherwise its
    /// arguments may hold no aggregate (1111) and no window function (4074).
    pub(crate) fn bind_agg(
        &mut self,
        f: &ast::Function,
        mut func: AggFunc,
        args: &[&ast::FunctionArg],
        distinct: bool,
        clauses: &[ast::FunctionArgumentClause],
        window: bool,
    ) -> Result<Agg> {
        let star = args.len() == 1
            && matches!(
                args[0],
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Wildcard)
            );
        if star && func == AggFunc::Count {
            func = AggFunc::CountStar;
        }
        // A plain aggregate's arguments are bound with no aggregates allowed and window
        // functions refused as its arguments.
        let saved = if window {
            None
        } else {
            Some(self.aggs.take().ok_or_else(Error::invalid_group)?)
        };
        let in_aggregate = std::mem::replace(&mut self.in_aggregate, !window);
        let bound: Result<Vec<Expr>> = if star {
            Ok(vec![])
        } else {
            args.iter()
                .map(|a| match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => self.bind_expr(e),
                    other => Err(Error::syntax_near(&other.to_string())),
                })
                .collect()
        };
        self.in_aggregate = in_aggregate;
        if saved.is_some() {
            self.aggs = saved;
        }
        let mut bound = bound?;
        if !window && bound.iter().any(contains_agg) {
            return Err(Error::invalid_group());
        }
        if matches!(func, AggFunc::Sum | AggFunc::Avg) {
            bound = bound
                .into_iter()
                .map(|b| self.temporal_as_number(b, true))
                .collect();
        }
        if !star && bound.is_empty() {
            return Err(Error::syntax_near(&f.to_string()));
        }
        // MIN and MAX of strings compare under their collation (the value is kept);
        // COUNT(DISTINCT s) counts strings distinct under it (by their keys).
        // GROUP_CONCAT(DISTINCT s) drops strings equal under it (keeping the first).
        let keep_value = matches!(func, AggFunc::Min | AggFunc::Max)
            || (distinct && func == AggFunc::GroupConcat);
        if keep_value || (distinct && func == AggFunc::Count) {
            bound = bound
                .into_iter()
                .map(|b| {
                    Ok(match self.ordering_collation(&b)? {
                        Some(c) if keep_value => Expr::Collate(Box::new(b), c),
                        Some(c) => Expr::SortKey(Box::new(b), c),
                        None => b,
                    })
                })
                .collect::<Result<_>>()?;
        }
        let mut separator = ",".to_string();
        let mut order = vec![];
        for c in clauses {
            match c {
                ast::FunctionArgumentClause::Separator(v) => {
                    separator = match &v.value {
                        ast::Value::SingleQuotedString(s) => s.clone(),
                        other => other.to_string(),
                    };
                }
                // GROUP_CONCAT(x ORDER BY k): the keys ride along as trailing args.
                ast::FunctionArgumentClause::OrderBy(keys) if func == AggFunc::GroupConcat => {
                    let saved = self.aggs.take();
                    for k in keys {
                        // A string key of another collation than the plain one sorts
                        // by its sort key.
                        let b = self.bind_expr(&k.expr).and_then(|b| {
                            Ok(match self.ordering_collation(&b)? {
                                Some(c) => Expr::SortKey(Box::new(b), c),
                                None => b,
                            })
                        });
                        let b = match b {
                            Ok(b) => b,
                            Err(e) => {
                                self.aggs = saved;
                                return Err(e);
                            }
                        };
                        bound.push(b);
                        order.push(matches!(k.options.sort, Some(ast::OrderBySort::Desc)));
                    }
                    self.aggs = saved;
                }
                _ => {}
            }
        }
        let cols = self
            .levels
            .last()
            .map(|l| l.cols.clone())
            .unwrap_or_default();
        let arg_ty = bound
            .first()
            .map(|b| self.infer(b, &cols).0)
            .unwrap_or(SqlType::BIGINT);
        let ty = match func {
            AggFunc::Count | AggFunc::CountStar => SqlType::BIGINT,
            AggFunc::Sum => {
                if is_float(arg_ty) || arg_ty.is_string() {
                    SqlType::DOUBLE
                } else {
                    SqlType::decimal(arg_ty.len.max(10) + 22, arg_ty.scale)
                }
            }
            AggFunc::Avg => {
                if is_float(arg_ty) || arg_ty.is_string() {
                    SqlType::DOUBLE
                } else {
                    SqlType::decimal(
                        arg_ty.len.max(10) + 4,
                        quarry_executor::exec::avg_scale(arg_ty.kind, arg_ty.scale),
                    )
                }
            }
            AggFunc::Min | AggFunc::Max | AggFunc::First => arg_ty,
            AggFunc::GroupConcat => SqlType::new(TypeKind::Text),
            // A number's deviation shows 4 more decimals than the number (a DOUBLE's all).
            AggFunc::Std | AggFunc::Variance | AggFunc::StdSamp | AggFunc::VarSamp => {
                if is_float(arg_ty) || !is_number(arg_ty) {
                    SqlType::DOUBLE
                } else {
                    SqlType {
                        scale: (arg_ty.scale + 4).min(DOUBLE_FIXED_ZERO - 1),
                        ..SqlType::DOUBLE
                    }
                }
            }
            _ => SqlType {
                unsigned: true,
                ..SqlType::BIGINT
            },
        };
        Ok(Agg {
            func,
            args: bound,
            distinct,
            separator,
            order,
            ty,
        })
    }

    fn bind_function(&mut self, f: &ast::Function) -> Result<Expr> {
        let name = object_name(&f.name).join(".").to_ascii_uppercase();
        let (args, distinct, clauses): (
            Vec<&ast::FunctionArg>,
            bool,
            Vec<ast::FunctionArgumentClause>,
        ) = match &f.args {
            ast::FunctionArguments::None => (vec![], false, vec![]),
            ast::FunctionArguments::List(l) => (
                l.args.iter().collect(),
                matches!(
                    l.duplicate_treatment,
                    Some(ast::DuplicateTreatment::Distinct)
                ),
                l.clauses.clone(),
            ),
            ast::FunctionArguments::Subquery(_) => {
                return Err(Error::unsupported("function subquery argument"))
            }
        };

        let agg = match name.as_str() {
            "COUNT" => Some(AggFunc::Count),
            "SUM" => Some(AggFunc::Sum),
            "AVG" => Some(AggFunc::Avg),
            "MIN" => Some(AggFunc::Min),
            "MAX" => Some(AggFunc::Max),
            "GROUP_CONCAT" => Some(AggFunc::GroupConcat),
            "BIT_AND" => Some(AggFunc::BitAnd),
            "BIT_OR" => Some(AggFunc::BitOr),
            "BIT_XOR" => Some(AggFunc::BitXor),
            "STD" | "STDDEV" | "STDDEV_POP" => Some(AggFunc::Std),
            "VARIANCE" | "VAR_POP" => Some(AggFunc::Variance),
            "STDDEV_SAMP" => Some(AggFunc::StdSamp),
            "VAR_SAMP" => Some(AggFunc::VarSamp),
            "ANY_VALUE" => Some(AggFunc::First),
            _ => None,
        };
        if let Some(over) = &f.over {
            let call = window::WindowCall {
                f,
                name: &name,
                agg,
                args: &args,
                distinct,
                clauses: &clauses,
            };
            return self.bind_window_call(call, over);
        }
        if let Some(func) = agg {
            let a = self.bind_agg(f, func, &args, distinct, &clauses, false)?;
            let list = self.aggs.as_mut().ok_or_else(Error::invalid_group)?;
            list.push(a);
            return Ok(Expr::AggRef(list.len() - 1));
        }
        let mut bound = vec![];
        let unit_first = matches!(name.as_str(), "TIMESTAMPDIFF" | "TIMESTAMPADD");
        for (i, a) in args.iter().enumerate() {
            match a {
                // TIMESTAMPDIFF(MONTH, …): the unit is a word, not a column (it was 1054).
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(A::Identifier(u)))
                    if unit_first && i == 0 && u.quote_style.is_none() =>
                {
                    bound.push(Expr::Lit(Value::Str(
                        u.value
                            .to_ascii_uppercase()
                            .trim_start_matches("SQL_TSI_")
                            .to_string(),
                    )));
                }
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(A::Interval(iv))) => {
                    bound.push(self.bind_expr(&iv.value)?);
                    bound.push(interval_unit(iv));
                }
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                    bound.push(self.bind_expr(e)?)
                }
                other => return Err(Error::syntax_near(&other.to_string())),
            }
        }
        let name = match name.as_str() {
            "ADDDATE" => "DATE_ADD".to_string(),
            // TIMESTAMPADD(unit, n, d) is DATE_ADD(d, INTERVAL n unit).
            "TIMESTAMPADD" if bound.len() == 3 => {
                bound.swap(0, 2);
                "DATE_ADD".to_string()
            }
            "SUBDATE" => "DATE_SUB".to_string(),
            "CHARSET" | "COLLATION" => {
                return Ok(Expr::Lit(Value::Str(
                    if name == "CHARSET" {
                        "utf8mb4"
                    } else {
                        "utf8mb4_general_ci"
                    }
                    .into(),
                )))
            }
            "INSERT" => "INSERT_STR".to_string(),
            "VALUES" | "VALUE" => {
                if let [Expr::Col(i)] = bound.as_slice() {
                    return Ok(Expr::InsertValue(*i));
                }
                return Err(Error::syntax_near("VALUES"));
            }
            _ => name,
        };
        if matches!(name.as_str(), "DATE_ADD" | "DATE_SUB") && bound.len() == 2 {
            bound.push(Expr::Lit(Value::Str("DAY".into())));
        }
        let Some((min, max)) = quarry_executor::func::arity(&name) else {
            return Err(Error::unknown_function(&name));
        };
        if bound.len() < min || bound.len() > max {
            return Err(Error::wrong_arguments(&name));
        }
        // String functions see a TIME or DATETIME(n) as its text with n digits.
        if matches!(
            name.as_str(),
            "CONCAT"
                | "CONCAT_WS"
                | "LENGTH"
                | "OCTET_LENGTH"
                | "CHAR_LENGTH"
                | "CHARACTER_LENGTH"
                | "UPPER"
                | "UCASE"
                | "LOWER"
                | "LCASE"
                | "REVERSE"
                | "HEX"
                | "LEFT"
                | "RIGHT"
                | "SUBSTRING"
                | "SUBSTR"
                | "MID"
                | "INSTR"
                | "LOCATE"
                | "REPLACE"
                | "LPAD"
                | "RPAD"
                | "REPEAT"
                | "SUBSTRING_INDEX"
        ) {
            bound = bound.into_iter().map(|b| self.temporal_text(b)).collect();
        }
        // The functions that count or show bytes see a latin1 string's latin1 bytes
        // (values are UTF-8 inside): its argument carries the collation it derives.
        if matches!(
            name.as_str(),
            "LENGTH" | "OCTET_LENGTH" | "BIT_LENGTH" | "HEX" | "ASCII" | "ORD"
        ) && bound.len() == 1
        {
            let cols = self.levels.last().map(|l| l.cols.as_slice()).unwrap_or(&[]);
            let derived = self.derivation(&bound[0], cols).ok().flatten();
            if let Some(d) = derived.filter(|d| d.coll.charset() == "latin1") {
                let arg = bound.remove(0);
                bound.push(Expr::Collate(Box::new(arg), d.coll));
            }
        }
        if VOLATILE_FUNCTIONS.contains(&name.as_str()) {
            self.volatile_calls += 1;
        }
        let e = Expr::Func(name, bound);
        Ok(e)
    }
}

/// An interval's unit as DATE_ADD's third argument (`DAY`, `MONTH`, …; SECOND when none;
/// `HOUR TO MINUTE`, MySQL's HOUR_MINUTE as the parser takes it, is `HOUR_MINUTE`).
fn interval_unit(iv: &ast::Interval) -> Expr {
    let name = |f: &ast::DateTimeField| {
        f.to_string()
            .to_ascii_uppercase()
            .trim_end_matches('S')
            .to_string()
    };
    let mut unit = iv.leading_field.as_ref().map_or("SECOND".into(), name);
    if let Some(last) = &iv.last_field {
        unit = format!("{unit}_{}", name(last));
    }
    Expr::Lit(Value::Str(unit))
}

fn is_float(t: SqlType) -> bool {
    matches!(t.kind, TypeKind::Float | TypeKind::Double)
}

/// The common type of two branches (CASE, IF, UNION).
/// A UNION input whose numbers are narrower than the union's column (INT beside DECIMAL,
/// DECIMAL beside DOUBLE, a number beside text) gives them in the union's type, as MariaDB
/// does (a BIGINT beside DECIMAL(10,2) shows 42.00).
fn widen_union_input(plan: Plan, have: &[OutColumn], union: &[OutColumn]) -> Plan {
    if !have
        .iter()
        .zip(union)
        .any(|(h, u)| widening(h.ty, u.ty).is_some())
    {
        return plan;
    }
    let exprs = have
        .iter()
        .zip(union)
        .enumerate()
        .map(|(i, (h, u))| match widening(h.ty, u.ty) {
            Some(t) => Expr::Cast(Box::new(Expr::Col(i)), t),
            None => Expr::Col(i),
        })
        .collect();
    Plan::Project {
        input: Box::new(plan),
        exprs,
    }
}

/// The decimals a number shows fixed: an integer's or DECIMAL's scale, a double's when
/// they are fixed (None: free).
fn fixed_decimals(t: SqlType) -> Option<u8> {
    if is_float(t) {
        match t.scale {
            0 => None,
            DOUBLE_FIXED_ZERO => Some(0),
            s => Some(s),
        }
    } else if is_number(t) {
        Some(t.scale)
    } else {
        None
    }
}

/// A double's scale for `d` fixed decimals.
fn double_scale(d: u8) -> u8 {
    if d == 0 {
        DOUBLE_FIXED_ZERO
    } else {
        d
    }
}

fn is_number(t: SqlType) -> bool {
    t.is_integer() || t.kind == TypeKind::Decimal || is_float(t)
}

/// The type a value of type `from` is cast to as a branch of a result of type `to`: a
/// number beside a wider number or text, a DATE beside DATETIME; None when it keeps its own.
fn widening(from: SqlType, to: SqlType) -> Option<SqlType> {
    if from.kind == TypeKind::Date && matches!(to.kind, TypeKind::DateTime | TypeKind::Timestamp) {
        return Some(SqlType {
            kind: TypeKind::DateTime,
            ..to
        });
    }
    if is_number(from) && from.kind != to.kind && !(from.is_integer() && to.is_integer()) {
        return widened(to);
    }
    // A DECIMAL beside one of more decimals shows them: IFNULL(SUM(x), -0.001) is 14.000.
    if from.kind == TypeKind::Decimal && to.kind == TypeKind::Decimal && from.scale < to.scale {
        return widened(to);
    }
    None
}

/// The type a number becomes as a branch of a wider result (`to`): a DECIMAL wide enough
/// for any BIGINT at `to`'s scale, DOUBLE, or text; None when numbers keep their own.
fn widened(to: SqlType) -> Option<SqlType> {
    if to.kind == TypeKind::Decimal {
        Some(SqlType::decimal(65, to.scale))
    } else if is_float(to) {
        Some(SqlType {
            scale: to.scale,
            ..SqlType::DOUBLE
        })
    } else if to.is_string() {
        Some(SqlType::new(TypeKind::Text))
    } else {
        None
    }
}

pub fn unify(a: SqlType, b: SqlType) -> SqlType {
    if a.kind == TypeKind::Null {
        return b;
    }
    if b.kind == TypeKind::Null {
        return a;
    }
    if a.kind == b.kind {
        // A double's scale 0 means "not fixed": beside one, the result is not fixed either
        // (CASE of ROUND(f, 2) and f shows 0.5, not 0.50).
        let scale = if is_float(a) {
            match (fixed_decimals(a), fixed_decimals(b)) {
                (Some(x), Some(y)) => double_scale(x.max(y)),
                _ => 0,
            }
        } else {
            a.scale.max(b.scale)
        };
        return SqlType {
            len: a.len.max(b.len),
            scale,
            unsigned: a.unsigned && b.unsigned,
            coll: collation::unify(a, b),
            ..a
        };
    }
    // DATE beside DATETIME is DATETIME (COALESCE(d, dt) shows 2000-01-02 00:00:00).
    let date_time = |x: SqlType, y: SqlType| {
        x.kind == TypeKind::Date && matches!(y.kind, TypeKind::DateTime | TypeKind::Timestamp)
    };
    if date_time(a, b) {
        return b;
    }
    if date_time(b, a) {
        return a;
    }
    if a.is_string() || b.is_string() || a.is_temporal() || b.is_temporal() {
        return SqlType {
            coll: collation::unify(a, b),
            ..SqlType::varchar(a.display_length().max(b.display_length()).max(1))
        };
    }
    if is_float(a) || is_float(b) {
        // Fixed decimals survive beside an integer or a DECIMAL (CASE of pk and
        // ROUND(f, 2) shows 1.00); beside a free double they are free.
        return SqlType {
            scale: match (fixed_decimals(a), fixed_decimals(b)) {
                (Some(x), Some(y)) => double_scale(x.max(y)),
                _ => 0,
            },
            ..SqlType::DOUBLE
        };
    }
    if a.kind == TypeKind::Decimal || b.kind == TypeKind::Decimal {
        return SqlType::decimal(a.len.max(b.len).max(20), a.scale.max(b.scale));
    }
    SqlType::BIGINT
}

/// The type of `CAST(… AS dt)`; `what` (the operand's text) names it in errors.
fn cast_type(dt: &ast::DataType, what: &str) -> Result<SqlType> {
    use ast::DataType as D;
    Ok(match dt {
        D::Signed | D::SignedInteger | D::Int(_) | D::Integer(_) | D::BigInt(_) => SqlType::BIGINT,
        D::Unsigned | D::UnsignedInteger | D::IntUnsigned(_) | D::BigIntUnsigned(_) => SqlType {
            unsigned: true,
            ..SqlType::BIGINT
        },
        D::Char(_) | D::Varchar(_) | D::Nvarchar(_) | D::Text => SqlType::new(TypeKind::Text),
        D::Binary(_) => SqlType::new(TypeKind::Blob),
        D::Decimal(ast::ExactNumberInfo::None) => SqlType::decimal(10, 0),
        // MariaDB names the operand in 1425/1426 but not in 1427.
        other => sql_type(other, what).map_err(|e| match e.code {
            1427 => Error::scale_above_precision(""),
            _ => e,
        })?,
    })
}

fn contains_agg(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| {
        if matches!(x, Expr::AggRef(_)) {
            f = true
        }
    });
    f
}

fn rewrite_for_agg(e: Expr, group: &[Expr], aggs: &mut Vec<Agg>, ng: usize) -> Expr {
    e.rewrite(&mut |x| {
        if let Some(g) = group.iter().position(|g| g.same(x)) {
            return Some(Expr::Col(g));
        }
        match x {
            Expr::AggRef(j) => Some(Expr::Col(ng + j)),
            Expr::Col(i) => {
                aggs.push(Agg {
                    func: AggFunc::First,
                    args: vec![Expr::Col(*i)],
                    distinct: false,
                    separator: String::new(),
                    order: vec![],
                    ty: SqlType::NULL,
                });
                Some(Expr::Col(ng + aggs.len() - 1))
            }
            _ => None,
        }
    })
}

/// Bind HAVING where names may be select aliases: aliases are appended to the scope as
/// extra columns and replaced by the aliased expressions afterwards.
fn bind_with_aliases(b: &mut Binder, h: &A, items: &[(Expr, OutColumn)]) -> Result<Expr> {
    let mut lvl = b.levels.pop().unwrap_or(Level { cols: vec![] });
    let base = lvl.cols.len();
    for (_, c) in items {
        lvl.cols.push(ScopeCol::new(String::new(), c.clone()));
    }
    b.levels.push(lvl);
    let r = b.bind_expr(h);
    let mut lvl = b.levels.pop().unwrap();
    lvl.cols.truncate(base);
    b.levels.push(lvl);
    Ok(r?.rewrite(&mut |x| match x {
        Expr::Col(i) if *i >= base => Some(items[*i - base].0.clone()),
        _ => None,
    }))
}

pub fn literal(v: &ast::Value, _b: &mut Binder) -> Result<Value> {
    Ok(match v {
        ast::Value::Number(n, _) => {
            if let Ok(i) = n.parse::<i64>() {
                Value::Int(i)
            } else if let Ok(u) = n.parse::<u64>() {
                Value::UInt(u)
            } else if n.contains(['e', 'E']) {
                Value::Double(n.parse().map_err(|_| Error::syntax_near(n))?)
            } else {
                match Decimal::parse(n) {
                    Some(d) => Value::Decimal(d),
                    None => Value::Double(n.parse().map_err(|_| Error::syntax_near(n))?),
                }
            }
        }
        ast::Value::SingleQuotedString(s)
        | ast::Value::DoubleQuotedString(s)
        | ast::Value::NationalStringLiteral(s) => Value::Str(s.clone()),
        ast::Value::EscapedStringLiteral(s) => Value::Str(s.clone()),
        ast::Value::HexStringLiteral(h) => {
            let h = if h.len() % 2 == 1 {
                format!("0{h}")
            } else {
                h.clone()
            };
            let bytes: Option<Vec<u8>> = (0..h.len() / 2)
                .map(|i| u8::from_str_radix(&h[2 * i..2 * i + 2], 16).ok())
                .collect();
            Value::Bytes(bytes.ok_or_else(|| Error::syntax_near(&h))?)
        }
        ast::Value::SingleQuotedByteStringLiteral(s)
        | ast::Value::DoubleQuotedByteStringLiteral(s) => Value::Bytes(s.as_bytes().to_vec()),
        ast::Value::Boolean(b) => Value::Int(*b as i64),
        ast::Value::Null => Value::Null,
        other => return Err(Error::syntax_near(&other.to_string())),
    })
}

/// A `LIMIT ?` or `OFFSET ?` parameter as MariaDB counts one sent in COM_STMT_EXECUTE:
/// NULL is 0; a DOUBLE rounds half to even, a DECIMAL half away from zero; a string counts
/// by its leading integer ('2.6' and '2x' are 2, 'abc' is 0); a negative count is read as
/// unsigned (no limit), as is one past BIGINT UNSIGNED.
fn limit_param(v: &Value) -> u64 {
    let signed = |n: i128| {
        if n < 0 {
            n.max(i64::MIN as i128) as i64 as u64
        } else {
            n.min(u64::MAX as i128) as u64
        }
    };
    match v {
        Value::Null => 0,
        Value::UInt(u) => *u,
        Value::Double(d) => signed(d.round_ties_even() as i128),
        Value::Decimal(d) => signed(d.to_f64().round() as i128),
        Value::Str(s) => signed(quarry_executor::expr::leading_integer(s).unwrap_or(i128::MAX)),
        Value::Bytes(b) => signed(
            quarry_executor::expr::leading_integer(&String::from_utf8_lossy(b))
                .unwrap_or(i128::MAX),
        ),
        other => signed(other.to_i64() as i128),
    }
}

/// The first 256 characters of `x`'s text (a name is cut at 255): writing the text of a
/// 100 MB expression whole only to cut it would cost its size again.
fn bounded_text(x: &impl std::fmt::Display) -> String {
    struct Capped(String);
    impl std::fmt::Write for Capped {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            // A numbered placeholder is named as the client wrote it.
            let s = if s.starts_with(quarry_sql::NUMBERED_PLACEHOLDER) {
                "?"
            } else {
                s
            };
            let room = 256usize.saturating_sub(self.0.chars().count());
            self.0.extend(s.chars().take(room));
            if self.0.chars().count() >= 256 {
                return Err(std::fmt::Error);
            }
            Ok(())
        }
    }
    let mut c = Capped(String::new());
    let _ = std::fmt::write(&mut c, format_args!("{x}"));
    c.0
}

/// Put a WHERE predicate as deep as it can go: scan filters, join keys, join conditions.
pub fn push_filter(plan: Plan, pred: Expr) -> Plan {
    let mut parts = vec![];
    conjuncts(pred, &mut parts);
    let mut keep = vec![];
    let plan = parts.into_iter().fold(plan, |p, c| match push_one(p, c) {
        (p, None) => p,
        (p, Some(c)) => {
            keep.push(c);
            p
        }
    });
    let plan = choose_access(plan);
    match and_all(keep) {
        Some(k) => Plan::Filter {
            input: Box::new(plan),
            pred: k,
        },
        None => plan,
    }
}

/// `l = r` with one side reading only the join's left input (columns < `lw`) and the other
/// only its right input: (left key, right key re-based to the right input's row).
pub(crate) fn equi_key(c: &Expr, lw: usize) -> Option<(Expr, Expr)> {
    let Expr::Bin(BinOp::Eq, a, b) = c else {
        return None;
    };
    let side = |e: &Expr, left: bool| {
        columns_used(e).is_some_and(|v| !v.is_empty() && v.iter().all(|&i| (i < lw) == left))
    };
    if side(a, true) && side(b, false) {
        Some(((**a).clone(), shift_cols((**b).clone(), lw)))
    } else if side(a, false) && side(b, true) {
        Some(((**b).clone(), shift_cols((**a).clone(), lw)))
    } else {
        None
    }
}

/// Try to push one conjunct into the plan; returns it back if it must stay above.
fn push_one(mut plan: Plan, c: Expr) -> (Plan, Option<Expr>) {
    let Some(cols) = columns_used(&c) else {
        return (plan, Some(c));
    };
    let rest = match &mut plan {
        Plan::Scan { filter, .. } => {
            *filter = Some(match filter.take() {
                None => c,
                Some(f) => Expr::Bin(BinOp::And, Box::new(f), Box::new(c)),
            });
            None
        }
        Plan::Join {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            on,
            ..
        } => match width(left) {
            None => Some(c),
            Some(lw) if cols.iter().all(|&i| i < lw) => {
                let (l, rest) = push_one(std::mem::replace(left.as_mut(), Plan::Dual), c);
                **left = l;
                rest
            }
            // Only conjuncts on the preserved side may move below an outer join.
            Some(_) if *kind == JoinKind::Left => Some(c),
            Some(lw) if !cols.is_empty() && cols.iter().all(|&i| i >= lw) => {
                let (r, rest) = push_one(
                    std::mem::replace(right.as_mut(), Plan::Dual),
                    shift_cols(c, lw),
                );
                **right = match rest {
                    None => r,
                    Some(x) => Plan::Filter {
                        input: Box::new(r),
                        pred: x,
                    },
                };
                None
            }
            Some(lw) => {
                if let Some((l, r)) = equi_key(&c, lw) {
                    left_keys.push(l);
                    right_keys.push(r);
                } else {
                    *on = Some(match on.take() {
                        None => c,
                        Some(o) => Expr::Bin(BinOp::And, Box::new(o), Box::new(c)),
                    });
                }
                None
            }
        },
        _ => Some(c),
    };
    (plan, rest)
}

/// Turn a join's ON condition into hash keys where possible and push single-side parts down.
fn split_join_condition(plan: &mut Plan) {
    let Plan::Join { on, kind, .. } = plan else {
        return;
    };
    let Some(cond) = on.take() else { return };
    let kind = *kind;
    let mut parts = vec![];
    conjuncts(cond, &mut parts);
    let mut p = std::mem::replace(plan, Plan::Dual);
    let mut rest = vec![];
    for c in parts {
        if kind == JoinKind::Left {
            // Only equality keys and right-side filters can move for an outer join.
            let lw = width(match &p {
                Plan::Join { left, .. } => left,
                _ => unreachable!(),
            });
            let used = columns_used(&c);
            if let (Some(lw), Some(cols)) = (lw, used) {
                if let Some((l, r)) = equi_key(&c, lw) {
                    if let Plan::Join {
                        left_keys,
                        right_keys,
                        ..
                    } = &mut p
                    {
                        left_keys.push(l);
                        right_keys.push(r);
                    }
                    continue;
                }
                if !cols.is_empty() && cols.iter().all(|&i| i >= lw) {
                    if let Plan::Join { right, .. } = &mut p {
                        let r = std::mem::replace(right.as_mut(), Plan::Dual);
                        let (r, rest_c) = push_one(r, shift_cols(c, lw));
                        **right = match rest_c {
                            None => r,
                            Some(x) => Plan::Filter {
                                input: Box::new(r),
                                pred: x,
                            },
                        };
                    }
                    continue;
                }
            }
            rest.push(c);
        } else {
            let (np, r) = push_one(p, c);
            p = np;
            if let Some(r) = r {
                rest.push(r);
            }
        }
    }
    if let Plan::Join { on, .. } = &mut p {
        let existing = on.take();
        let mut all = rest;
        if let Some(e) = existing {
            all.insert(0, e);
        }
        *on = and_all(all);
    }
    *plan = p;
}

/// Pick index access for scans whose filter pins a key (equality/IN on a prefix, or a range).
pub fn choose_access(plan: Plan) -> Plan {
    match plan {
        Plan::Scan {
            table,
            alias,
            filter: Some(f),
            index_filter,
            access: Access::Full,
            read,
            order,
            pushed,
            columns,
        } => {
            let access = pick_index(&table, &f);
            Plan::Scan {
                table,
                alias,
                filter: Some(f),
                index_filter,
                access,
                read,
                order,
                pushed,
                columns,
            }
        }
        // Only the FROM part: joins and what push_filter/reorder put around them.
        p @ (Plan::Join { .. } | Plan::Filter { .. } | Plan::Project { .. }) => {
            p.map_inputs(&mut choose_access)
        }
        other => other,
    }
}

fn const_side(a: &Expr, b: &Expr) -> Option<(usize, Expr)> {
    match (a, b) {
        (Expr::Col(i), x) if known_before_scan(x) => Some((*i, x.clone())),
        (x, Expr::Col(i)) if known_before_scan(x) => Some((*i, x.clone())),
        _ => None,
    }
}

/// One side of a range: the bound expression and whether it is inclusive.
pub(crate) type Bound = Option<(Expr, bool)>;

fn pick_index(table: &TableEntry, f: &Expr) -> Access {
    if !table.index_access() {
        return Access::Full;
    }
    index_for(table, f)
}

/// The index access `f` (over the table's row) allows, whether or not the table's engine
/// reads through its indexes (`sql_safe_updates` asks of a column table's keys too).
pub(crate) fn index_for(table: &TableEntry, f: &Expr) -> Access {
    let mut parts = vec![];
    conjuncts(f.clone(), &mut parts);
    // Comparisons under a column's own collation compare sort keys: the index keys the
    // column so, and finds the rows by the values compared with.
    let coll_of = |c: usize| {
        table
            .def
            .columns
            .get(c)
            .and_then(|col| collation::of_type(col.ty))
    };
    let parts: Vec<Expr> = parts
        .iter()
        .map(|p| collation::index_view(p, &coll_of))
        .collect();
    let usable = known_before_scan;
    // LIKE ranges need a column that compares as collated text.
    let text_col = |c: usize| {
        table
            .def
            .columns
            .get(c)
            .is_some_and(|col| col.ty.is_string() && !col.ty.is_binary())
    };
    let mut eq: Vec<(usize, Vec<Expr>)> = vec![];
    let mut ranges: Vec<(usize, Bound, Bound)> = vec![];
    let mut or_ranges: Vec<(usize, Vec<(Bound, Bound)>)> = vec![];
    for p in &parts {
        match p {
            Expr::Bin(BinOp::Eq, a, b) => {
                if let Some((c, v)) = const_side(a, b) {
                    if usable(&v) {
                        eq.push((c, vec![v]));
                    }
                }
            }
            Expr::InList {
                expr,
                list,
                negated: false,
            } => {
                if let Expr::Col(c) = **expr {
                    if list.iter().all(usable) && list.len() <= 1000 {
                        eq.push((c, list.clone()));
                    }
                }
            }
            // `k BETWEEN 1 AND 5 OR k BETWEEN 20 AND 25 OR k = 40`: a union of ranges on
            // one column (sysbench's select_random_ranges).
            Expr::Bin(BinOp::Or, ..) => {
                let mut alts = vec![];
                disjuncts(p, &mut alts);
                let mut col = None;
                let mut union = vec![];
                for alt in alts {
                    match ranges_of(alt, &usable, &text_col) {
                        Some((c, rs)) if col.is_none() || col == Some(c) => {
                            col = Some(c);
                            union.extend(rs);
                        }
                        _ => {
                            col = None;
                            break;
                        }
                    }
                }
                if let Some(c) = col {
                    if union.len() <= 1000 {
                        or_ranges.push((c, union));
                    }
                }
            }
            other => {
                if let Some((c, mut rs)) = ranges_of(other, &usable, &text_col) {
                    if rs.len() == 1 {
                        let (lo, hi) = rs.pop().unwrap();
                        ranges.push((c, lo, hi));
                    }
                }
            }
        }
    }
    // Prefer the index with the longest equality prefix (unique first).
    let mut best: Option<(usize, usize, bool)> = None;
    for (ii, ix) in table.def.indexes.iter().enumerate() {
        if ix.prefix.iter().any(|p| *p > 0) {
            continue;
        }
        let mut n = 0;
        for c in &ix.columns {
            if eq.iter().any(|(ec, _)| ec == c) {
                n += 1;
            } else {
                break;
            }
        }
        if n > 0 {
            let full_unique = ix.unique && n == ix.columns.len();
            let better = match best {
                None => true,
                Some((_, bn, bu)) => (full_unique && !bu) || (full_unique == bu && n > bn),
            };
            if better {
                best = Some((ii, n, full_unique));
            }
        }
    }
    if let Some((ii, n, _)) = best {
        let ix = &table.def.indexes[ii];
        let mut keys: Vec<Vec<Expr>> = vec![vec![]];
        for c in &ix.columns[..n] {
            let vals = &eq.iter().find(|(ec, _)| ec == c).unwrap().1;
            let mut next = vec![];
            for k in &keys {
                for v in vals {
                    let mut k2 = k.clone();
                    k2.push(v.clone());
                    next.push(k2);
                }
            }
            keys = next;
            if keys.len() > 1000 {
                return Access::Full;
            }
        }
        return Access::Keys { index: ii, keys };
    }
    for (ii, ix) in table.def.indexes.iter().enumerate() {
        if ix.prefix[0] > 0 {
            continue;
        }
        let first = ix.columns[0];
        let mut lo = None;
        let mut hi = None;
        for (c, l, h) in &ranges {
            if *c == first {
                if l.is_some() && lo.is_none() {
                    lo = l.clone();
                }
                if h.is_some() && hi.is_none() {
                    hi = h.clone();
                }
            }
        }
        if lo.is_some() || hi.is_some() {
            return Access::Ranges {
                index: ii,
                ranges: vec![(lo, hi)],
            };
        }
    }
    for (ii, ix) in table.def.indexes.iter().enumerate() {
        if ix.prefix[0] > 0 {
            continue;
        }
        if let Some((_, union)) = or_ranges.iter().find(|(c, _)| *c == ix.columns[0]) {
            return Access::Ranges {
                index: ii,
                ranges: union.clone(),
            };
        }
    }
    Access::Full
}

pub(crate) fn disjuncts<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
    match e {
        Expr::Bin(BinOp::Or, a, b) => {
            disjuncts(a, out);
            disjuncts(b, out);
        }
        other => out.push(other),
    }
}

/// The key ranges on one column that a simple predicate selects: `=`, `IN (…)`, `BETWEEN`,
/// `<`, `<=`, `>`, `>=` against values known before the scan (`usable`).
pub(crate) fn ranges_of(
    p: &Expr,
    usable: &dyn Fn(&Expr) -> bool,
    text_col: &dyn Fn(usize) -> bool,
) -> Option<(usize, Vec<(Bound, Bound)>)> {
    let point = |v: &Expr| (Some((v.clone(), true)), Some((v.clone(), true)));
    match p {
        // `c LIKE 'abc%'`: the keys from 'abc' up to the next prefix in collation order
        // ('ABD'); the LIKE itself stays in the filter.
        Expr::Like {
            expr,
            pattern,
            escape,
            negated: false,
        } => match (&**expr, &**pattern) {
            (Expr::Col(c), Expr::Lit(Value::Str(pat))) if text_col(*c) => {
                let (lo, hi) = like_prefix_range(pat, *escape)?;
                Some((
                    *c,
                    vec![(
                        Some((Expr::Lit(Value::Str(lo)), true)),
                        hi.map(|h| (Expr::Lit(Value::Str(h)), false)),
                    )],
                ))
            }
            _ => None,
        },
        Expr::Bin(BinOp::Eq, a, b) => {
            let (c, v) = const_side(a, b)?;
            usable(&v).then(|| (c, vec![point(&v)]))
        }
        Expr::InList {
            expr,
            list,
            negated: false,
        } => match **expr {
            Expr::Col(c) if list.iter().all(usable) => Some((c, list.iter().map(point).collect())),
            _ => None,
        },
        Expr::Between {
            expr,
            lo,
            hi,
            negated: false,
        } => match **expr {
            Expr::Col(c) if usable(lo) && usable(hi) => Some((
                c,
                vec![(Some(((**lo).clone(), true)), Some(((**hi).clone(), true)))],
            )),
            _ => None,
        },
        Expr::Bin(op @ (BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge), a, b) => {
            let (c, v, op) = match (&**a, &**b) {
                (Expr::Col(c), v) if usable(v) => (*c, v.clone(), *op),
                (v, Expr::Col(c)) if usable(v) => (
                    *c,
                    v.clone(),
                    match op {
                        BinOp::Lt => BinOp::Gt,
                        BinOp::Le => BinOp::Ge,
                        BinOp::Gt => BinOp::Lt,
                        _ => BinOp::Le,
                    },
                ),
                _ => return None,
            };
            let range = match op {
                BinOp::Gt | BinOp::Ge => (Some((v, op == BinOp::Ge)), None),
                _ => (None, Some((v, op == BinOp::Le))),
            };
            Some((c, vec![range]))
        }
        _ => None,
    }
}

/// The literal prefix of a LIKE pattern (None if it starts with a wildcard) and the
/// smallest string above every string with that prefix under the plain collation (None
/// when there is none to give): the prefix with its last character replaced by the one
/// of the next weight ('abc' → 'abd', 'Zoë' → 'Zof').
fn like_prefix_range(pat: &str, escape: char) -> Option<(String, Option<String>)> {
    let mut prefix = String::new();
    let mut chars = pat.chars();
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => break,
            c if c == escape => prefix.push(chars.next().unwrap_or(escape)),
            c => prefix.push(c),
        }
    }
    if prefix.is_empty() {
        return None;
    }
    let mut upper: Vec<char> = prefix.chars().collect();
    while let Some(last) = upper.pop() {
        if let Some(next) = Collation::Utf8mb4GeneralCi.successor(last) {
            upper.push(next);
            return Some((prefix, Some(upper.into_iter().collect())));
        }
    }
    Some((prefix, None))
}

/// Type of a constant expression without a scope.
fn static_type(e: Expr) -> SqlType {
    match e {
        Expr::Lit(v) => v.type_of(),
        _ => SqlType::varchar(255),
    }
}
