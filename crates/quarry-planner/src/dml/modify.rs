//! UPDATE and DELETE of one table: the target and its alias, the SET list, the rows WHERE,
//! ORDER BY and LIMIT select (found and locked by `quarry_executor::dml::locked_rows`),
//! and `sql_safe_updates`' refusal. The change loop is the executor's
//! (`update_rows`, `delete_rows`).

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::{Error, Result, Row, Value};
use quarry_executor::dml::{
    coerce, delete_rows, locked_rows, update_rows, Checks, DmlResult, ForeignKeys, Returning,
    Target,
};
use quarry_executor::exec::ExecCtx;
use quarry_executor::expr::Expr;
use quarry_executor::plan::Access;
use quarry_sql::ast::{self, Expr as A};

use crate::bind::{index_for, object_name, Binder};

/// The rows a single-table WHERE / ORDER BY / LIMIT selects, locked, in order.
fn targets(
    entry: &Arc<TableEntry>,
    alias: &str,
    selection: Option<&A>,
    order_by: &[ast::OrderByExpr],
    limit: Option<&A>,
    b: &mut Binder,
    ctx: &ExecCtx,
) -> Result<Vec<Target>> {
    let cols = Binder::table_scope(entry, alias);
    let filter = selection
        .map(|s| b.in_clause("WHERE", |b| b.bind_in_scope(cols.clone(), s)))
        .transpose()?;
    let keys: Vec<(Expr, bool)> = order_by
        .iter()
        .map(|o| {
            Ok((
                b.in_clause("ORDER BY", |b| b.bind_in_scope(cols.clone(), &o.expr))?,
                matches!(o.options.sort, Some(ast::OrderBySort::Desc)),
            ))
        })
        .collect::<Result<_>>()?;
    let limit = limit
        .map(|l| {
            let n = b.bind_in_scope(vec![], l)?.eval(&[], ctx)?.to_i64();
            Ok::<_, Error>(n.max(0) as usize)
        })
        .transpose()?;
    if ctx.safe_updates && limit.is_none() && !uses_key(entry, filter.as_ref()) {
        return Err(Error::safe_update_without_key());
    }
    let mut out = locked_rows(entry, filter, true, None, ctx)?;
    if !keys.is_empty() {
        let sort_keys: Vec<Row> = out
            .iter()
            .map(|(_, r)| {
                let now = r.unpack();
                keys.iter().map(|(e, _)| e.eval(&now, ctx)).collect()
            })
            .collect::<Result<_>>()?;
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by(|&x, &y| {
            for (i, (_, desc)) in keys.iter().enumerate() {
                let o = sort_keys[x][i].total_cmp(&sort_keys[y][i]);
                let o = if *desc { o.reverse() } else { o };
                if o.is_ne() {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
        drop(sort_keys);
        let mut slots: Vec<Option<Target>> = out.into_iter().map(Some).collect();
        out = order
            .into_iter()
            .map(|i| slots[i].take().expect("each row once"))
            .collect();
    }
    if let Some(n) = limit {
        out.truncate(n);
    }
    Ok(out)
}

/// Whether the rows `filter` selects are found through a key (`sql_safe_updates`).
fn uses_key(entry: &Arc<TableEntry>, filter: Option<&Expr>) -> bool {
    filter.is_some_and(|f| !matches!(index_for(entry, f), Access::Full))
}

pub(super) fn single_table(
    t: &ast::TableWithJoins,
    b: &Binder,
) -> Result<(Arc<TableEntry>, String)> {
    if !t.joins.is_empty() {
        return Err(Error::unsupported("multi-table UPDATE/DELETE"));
    }
    match &t.relation {
        ast::TableFactor::Table { name, alias, .. } => {
            let e = b.resolve_table(name)?;
            let alias = alias
                .as_ref()
                .map(|a| a.name.value.clone())
                .unwrap_or_else(|| e.def.name.clone());
            Ok((e, alias))
        }
        other => Err(Error::unsupported(other.to_string())),
    }
}

pub fn update(stmt: &ast::Update, ctx: &ExecCtx, b: &mut Binder) -> Result<DmlResult> {
    if stmt.from.is_some() {
        return Err(Error::unsupported("UPDATE … FROM"));
    }
    // MariaDB's UPDATE has no RETURNING.
    if let Some(items) = &stmt.returning {
        let list: Vec<String> = items.iter().map(|i| i.to_string()).collect();
        return Err(Error::syntax_near(&format!(
            "RETURNING {}",
            list.join(", ")
        )));
    }
    let (entry, alias) = single_table(&stmt.table, b)?;
    // A division by zero anywhere in an UPDATE (its WHERE too) is an error in strict
    // mode, as in MariaDB; in a DELETE's WHERE it stays a warning.
    let ignore = quarry_sql::update_ignores(stmt);
    ctx.writing.set(!ignore);
    ctx.ignoring.set(ignore);
    *ctx.target.borrow_mut() = Some((entry.db.clone(), entry.def.name.clone()));
    let cols = Binder::table_scope(&entry, &alias);
    let mut sets = vec![];
    for a in &stmt.assignments {
        let ast::AssignmentTarget::ColumnName(cn) = &a.target else {
            return Err(Error::syntax_near("("));
        };
        let parts = object_name(cn);
        let cname = parts.last().cloned().unwrap_or_default();
        let c = entry
            .def
            .column_index(&cname)
            .ok_or_else(|| Error::unknown_column(&parts.join("."), "SET"))?;
        sets.push((
            c,
            b.in_clause("SET", |b| b.bind_in_scope(cols.clone(), &a.value))?,
        ));
    }
    let rows = targets(
        &entry,
        &alias,
        stmt.selection.as_ref(),
        &stmt.order_by,
        stmt.limit.as_ref(),
        b,
        ctx,
    )?;
    let matched = rows.len();
    let checks = Checks::of(&entry, ctx)?;
    let fks = ForeignKeys::of(&entry, ctx)?;
    let changed = update_rows(
        &entry,
        rows,
        &mut |old, i| {
            let mut new = old.to_vec();
            // MySQL evaluates assignments left to right, later ones seeing earlier results.
            for (c, e) in &sets {
                new[*c] = coerce(e.eval(&new, ctx)?, &entry.def.columns[*c], i + 1, ctx)?;
            }
            if new == old {
                return Ok(None);
            }
            for (k, col) in entry.def.columns.iter().enumerate() {
                if col.on_update_now && !sets.iter().any(|(c, _)| *c == k) {
                    new[k] = coerce(Value::DateTime(ctx.now), col, i + 1, ctx)?;
                }
            }
            Ok(Some(new))
        },
        checks.as_ref(),
        fks.as_deref(),
        true,
        0,
        ctx,
    )?;
    let changed = changed as u64;
    Ok(DmlResult {
        affected: changed,
        last_insert_id: None,
        info: Some(format!(
            "Rows matched: {matched}  Changed: {changed}  Warnings: {}",
            ctx.warnings.borrow().len()
        )),
        returned: None,
    })
}

pub fn delete(stmt: &ast::Delete, ctx: &ExecCtx, b: &mut Binder) -> Result<DmlResult> {
    let from = match &stmt.from {
        ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
    };
    if from.len() != 1 || !stmt.tables.is_empty() || stmt.using.is_some() {
        return Err(Error::unsupported("multi-table DELETE"));
    }
    let (entry, alias) = single_table(&from[0], b)?;
    // MariaDB refuses a DELETE without WHERE in safe mode even with a LIMIT.
    if ctx.safe_updates && stmt.selection.is_none() {
        return Err(Error::safe_update_without_key());
    }
    let returning = super::returning::bind(stmt.returning.as_deref(), &entry, &alias, "DELETE", b)?;
    let rows = targets(
        &entry,
        &alias,
        stmt.selection.as_ref(),
        &stmt.order_by,
        stmt.limit.as_ref(),
        b,
        ctx,
    )?;
    let fks = ForeignKeys::of(&entry, ctx)?;
    ctx.ignoring.set(quarry_sql::delete_ignores(stmt));
    let deleted = delete_rows(&entry, rows, fks.as_deref(), returning.as_ref(), 0, ctx)?;
    let n = deleted as u64;
    Ok(DmlResult {
        affected: n,
        returned: returning.map(Returning::finish),
        ..Default::default()
    })
}
