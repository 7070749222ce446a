//! CHECK constraints: a table's conditions bound for one statement and tested on each row
//! it writes (INSERT, REPLACE, UPDATE, LOAD DATA, INSERT … SELECT, table rebuilds), as
//! MariaDB does — a row passes unless a condition is FALSE (NULL passes); error 4025
//! names the constraint. Also the checks CREATE TABLE / ALTER TABLE make of a new
//! definition (1054 in 'CHECK', 1970 for a subquery). Owns no definitions: they are the
//! catalog's ([`quarry_catalog::CheckDef`]).

use quarry_catalog::{TableDef, TableEntry};
use quarry_common::{Error, Result, Value};
use quarry_sql::ast::{self, Expr as A};
use quarry_sql::Stmt;

use crate::bind::Binder;
use crate::exec::ExecCtx;
use crate::expr::Expr;

pub struct Checks {
    /// (name 4025 gives, condition over the table's row)
    list: Vec<(String, Expr)>,
    db: String,
    table: String,
}

/// A stored condition's text back as an expression.
fn parse(text: &str) -> Result<A> {
    let stmt = quarry_sql::parse_one(&format!("SELECT {text}"))?;
    if let Stmt::Ast(s) = stmt {
        if let ast::Statement::Query(q) = *s {
            if let ast::SetExpr::Select(sel) = *q.body {
                if let Some(ast::SelectItem::UnnamedExpr(e)) = sel.projection.into_iter().next() {
                    return Ok(e);
                }
            }
        }
    }
    Err(Error::internal("a CHECK condition that is no expression"))
}

fn has_subquery(e: &A) -> bool {
    let mut found = false;
    let _ = ast::visit_expressions(e, |x| {
        if matches!(x, A::Subquery(_) | A::Exists { .. } | A::InSubquery { .. }) {
            found = true;
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    found
}

fn bind_all(def: &TableDef, db: &str, b: &mut Binder) -> Result<Vec<(String, Expr)>> {
    let mut out = vec![];
    for ck in &def.checks {
        let e = parse(&ck.expr)?;
        if has_subquery(&e) {
            return Err(Error::new(
                1970,
                "CHECK does not support subqueries or stored functions",
            ));
        }
        let scope = Binder::def_scope(def, db, &def.name);
        let bound = b.in_clause("CHECK", |b| b.bind_in_scope(scope, &e))?;
        out.push((ck.shown_name(&def.name), bound));
    }
    Ok(out)
}

/// CREATE TABLE / ALTER TABLE: every condition of `def` names its own columns only and
/// reads no other table.
pub fn validate(def: &TableDef, db: &str, b: &mut Binder) -> Result<()> {
    bind_all(def, db, b).map(|_| ())
}

impl Checks {
    /// The table's conditions for this statement; None when it has none or
    /// `check_constraint_checks` is off.
    pub fn of(entry: &TableEntry, ctx: &ExecCtx) -> Result<Option<Checks>> {
        if entry.def.checks.is_empty() || !ctx.check_constraints {
            return Ok(None);
        }
        let mut b = Binder::new(ctx.catalog, Some(entry.db.clone()));
        Ok(Some(Checks {
            list: bind_all(&entry.def, &entry.db, &mut b)?,
            db: entry.db.clone(),
            table: entry.def.name.clone(),
        }))
    }

    /// Error 4025 for the first condition `row` makes FALSE.
    pub fn test(&self, row: &[Value], ctx: &ExecCtx) -> Result<()> {
        for (name, e) in &self.list {
            if e.eval(row, ctx)?.truth() == Some(false) {
                return Err(Error::check_failed(name, &self.db, &self.table));
            }
        }
        Ok(())
    }
}
