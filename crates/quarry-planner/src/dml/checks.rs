//! CHECK constraints bound over their table's row: for each statement that writes the
//! table (through `quarry_executor::dml::Checks`, which tests them on each row) and for
//! CREATE TABLE / ALTER TABLE, which check a new definition (1054 in 'CHECK', 1970 for a
//! subquery). Owns no definitions: they are the catalog's ([`quarry_catalog::CheckDef`]).

use quarry_catalog::TableDef;
use quarry_common::{Error, Result};
use quarry_executor::expr::Expr;
use quarry_sql::ast::{self, Expr as A};
use quarry_sql::Stmt;

use crate::bind::Binder;

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

pub(crate) fn bind_all(def: &TableDef, db: &str, b: &mut Binder) -> Result<Vec<(String, Expr)>> {
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
