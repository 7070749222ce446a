//! INSERT, REPLACE, UPDATE and DELETE bound over their target table and carried out
//! through the executor's row-change primitives (`quarry_executor::dml`: coercion,
//! auto-increment, keys, CHECK and FOREIGN KEY, undo). This module owns what a statement
//! names — its target, columns, VALUES, SET, WHERE / ORDER BY / LIMIT, RETURNING — bound
//! with the statement's [`Binder`]; it changes no row itself. UPDATE and DELETE are in
//! [`modify`].

mod checks;
mod modify;
mod returning;

pub(crate) use checks::bind_all as bind_checks;
pub use checks::validate as validate_checks;
pub use modify::{delete, update};

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::{Error, Result, Value};
use quarry_executor::dml::{
    column_targets, in_bulk, insert_rows, Checks, DmlResult, DupMode, ForeignKeys, InsertOptions,
    Returning,
};
use quarry_executor::exec::ExecCtx;
use quarry_executor::expr::Expr;
use quarry_executor::plan::OutColumn;
use quarry_sql::ast::{self, Expr as A};

use crate::bind::{object_name, Binder};

pub fn insert(stmt: &ast::Insert, ctx: &ExecCtx, b: &mut Binder) -> Result<DmlResult> {
    let ast::TableObject::TableName(name) = &stmt.table else {
        return Err(Error::unsupported("INSERT INTO TABLE FUNCTION"));
    };
    let entry = b.resolve_table(name)?;
    // A division by zero in what INSERT evaluates is an error in strict mode (not under
    // IGNORE), as in MariaDB.
    ctx.writing.set(!stmt.ignore);
    ctx.ignoring.set(stmt.ignore);
    *ctx.target.borrow_mut() = Some((entry.db.clone(), entry.def.name.clone()));
    let verb = if stmt.replace_into {
        "REPLACE"
    } else {
        "INSERT"
    };
    let returning = returning::bind(stmt.returning.as_deref(), &entry, &entry.def.name, verb, b)?;
    let checks = Checks::of(&entry, ctx)?;
    let fks = ForeignKeys::of(&entry, ctx)?;
    let mut r = insert_into(
        stmt,
        entry,
        returning.as_ref(),
        (checks.as_ref(), fks.as_deref()),
        ctx,
        b,
    )?;
    r.returned = returning.map(Returning::finish);
    Ok(r)
}

/// The result set INSERT / REPLACE / DELETE … RETURNING will send (COM_STMT_PREPARE
/// announces it); empty without RETURNING.
pub fn returning_columns(s: &ast::Statement, b: &mut Binder) -> Result<Vec<OutColumn>> {
    let (items, entry, alias, verb) = match s {
        ast::Statement::Insert(ins) => {
            let (Some(items), ast::TableObject::TableName(name)) = (&ins.returning, &ins.table)
            else {
                return Ok(vec![]);
            };
            let entry = b.resolve_table(name)?;
            let alias = entry.def.name.clone();
            (items, entry, alias, "INSERT")
        }
        ast::Statement::Delete(d) => {
            let Some(items) = &d.returning else {
                return Ok(vec![]);
            };
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &d.from;
            let Some(t) = from.first() else {
                return Ok(vec![]);
            };
            let (entry, alias) = modify::single_table(t, b)?;
            (items, entry, alias, "DELETE")
        }
        _ => return Ok(vec![]),
    };
    let r = returning::bind(Some(items), &entry, &alias, verb, b)?;
    Ok(r.map(|r| r.columns().to_vec()).unwrap_or_default())
}

fn insert_into(
    stmt: &ast::Insert,
    entry: Arc<TableEntry>,
    returning: Option<&Returning>,
    (checks, fks): (Option<&Checks>, Option<&ForeignKeys>),
    ctx: &ExecCtx,
    params_base: &mut Binder,
) -> Result<DmlResult> {
    let names: Vec<String> = stmt
        .columns
        .iter()
        .map(|c| object_name(c).pop().unwrap_or_default())
        .collect();
    let mut targets = column_targets(&entry, &names)?;
    let mode = if stmt.replace_into {
        DupMode::Replace
    } else if stmt.ignore {
        DupMode::Ignore
    } else {
        DupMode::Error
    };
    // ON DUPLICATE KEY UPDATE binds against the existing row; VALUES(c) means the new one.
    let mut on_dup = vec![];
    if let Some(ast::OnInsert::DuplicateKeyUpdate(assigns)) = &stmt.on {
        let cols = Binder::table_scope(&entry, &entry.def.name);
        for a in assigns {
            let ast::AssignmentTarget::ColumnName(cn) = &a.target else {
                return Err(Error::syntax_near("("));
            };
            let cname = object_name(cn).pop().unwrap_or_default();
            let c = entry
                .def
                .column_index(&cname)
                .ok_or_else(|| Error::unknown_column(&cname, "UPDATE"))?;
            let e = params_base.bind_in_scope(cols.clone(), &a.value)?;
            on_dup.push((c, e));
        }
    }
    let width = entry.def.columns.len();
    let opts = InsertOptions {
        mode,
        on_dup: &on_dup,
        returning,
        checks,
        fks,
    };
    let expand = |vals: Vec<Value>, targets: &[usize]| -> Result<Vec<Option<Value>>> {
        if vals.len() != targets.len() {
            return Err(Error::column_count_mismatch(1));
        }
        let mut full = vec![None; width];
        for (t, v) in targets.iter().zip(vals) {
            full[*t] = Some(v);
        }
        Ok(full)
    };
    if !stmt.assignments.is_empty() {
        // INSERT … SET a = 1, b = 2
        targets.clear();
        let mut vals = vec![];
        for a in &stmt.assignments {
            let ast::AssignmentTarget::ColumnName(cn) = &a.target else {
                return Err(Error::syntax_near("("));
            };
            let cname = object_name(cn).pop().unwrap_or_default();
            targets.push(
                entry
                    .def
                    .column_index(&cname)
                    .ok_or_else(|| Error::unknown_column(&cname, "INSERT INTO"))?,
            );
            vals.push(
                params_base
                    .in_clause("VALUES", |b| b.bind_in_scope(vec![], &a.value))?
                    .eval(&[], ctx)?,
            );
        }
        let row = expand(vals, &targets)?;
        return insert_rows(&entry, std::iter::once(Ok(row)), &opts, ctx);
    }
    let source = stmt.source.as_ref().ok_or_else(|| Error::syntax_near(""))?;
    if let ast::SetExpr::Values(values) = source.body.as_ref() {
        let mut bound_rows = Vec::with_capacity(values.rows.len());
        for (ri, r) in values.rows.iter().enumerate() {
            if r.len() != targets.len()
                && !(targets.len() == width && names.is_empty() && r.is_empty())
            {
                return Err(Error::column_count_mismatch(ri + 1));
            }
            let mut row = Vec::with_capacity(r.len());
            for e in r.iter() {
                match e {
                    A::Identifier(i)
                        if i.value.eq_ignore_ascii_case("DEFAULT") && i.quote_style.is_none() =>
                    {
                        row.push(None)
                    }
                    other => row.push(Some(
                        params_base.in_clause("VALUES", |b| b.bind_in_scope(vec![], other))?,
                    )),
                }
            }
            bound_rows.push(row);
        }
        let single = bound_rows.len() == 1;
        let rows = bound_rows.into_iter().map(|r| {
            let mut full = vec![None; width];
            for (t, e) in targets.iter().zip(r) {
                full[*t] = match e {
                    None => None,
                    // Each VALUES row is evaluated once: its literals move (a 100 MB
                    // string is not copied).
                    Some(Expr::Lit(v)) => Some(v),
                    Some(e) => Some(e.eval(&[], ctx)?),
                };
            }
            Ok(full)
        });
        // One row needs no bracket (nor the table to itself, as a bracket does).
        if single {
            return insert_rows(&entry, rows, &opts, ctx);
        }
        return in_bulk(&entry, ctx, || insert_rows(&entry, rows, &opts, ctx));
    }
    // INSERT … SELECT.
    let sp = params_base.bind_query(source)?;
    if sp.columns.len() != targets.len() {
        return Err(Error::column_count_mismatch(1));
    }
    let reads_target = params_base.tables_read.iter().any(|t| {
        t.db.eq_ignore_ascii_case(&entry.db) && t.def.name.eq_ignore_ascii_case(&entry.def.name)
    });
    quarry_executor::dml::insert_select::insert_select(
        &entry,
        &sp,
        reads_target,
        &|r| expand(r, &targets),
        &opts,
        ctx,
    )
}
