//! CHECK constraints tested on each row a statement writes (INSERT, REPLACE, UPDATE, LOAD
//! DATA, INSERT … SELECT, table rebuilds), as MariaDB does — a row passes unless a
//! condition is FALSE (NULL passes); error 4025 names the constraint. The conditions are
//! bound by the planner (asked through [`ExecCtx::planner`]); definitions are the
//! catalog's ([`quarry_catalog::CheckDef`]).

use quarry_catalog::TableEntry;
use quarry_common::{Error, Result, Value};

use crate::exec::ExecCtx;
use crate::expr::Expr;

pub struct Checks {
    /// (name 4025 gives, condition over the table's row)
    list: Vec<(String, Expr)>,
    db: String,
    table: String,
}

impl Checks {
    /// The table's conditions for this statement; None when it has none or
    /// `check_constraint_checks` is off.
    pub fn of(entry: &TableEntry, ctx: &ExecCtx) -> Result<Option<Checks>> {
        if entry.def.checks.is_empty() || !ctx.check_constraints {
            return Ok(None);
        }
        Ok(Some(Checks {
            list: ctx.planner.checks(entry, ctx)?,
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
