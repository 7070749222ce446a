//! FOREIGN KEY constraints enforced as InnoDB does, row by row inside the statement: a
//! child row written must find its parent (1452), and a parent row deleted or updated
//! takes its children along (CASCADE, SET NULL) or refuses (RESTRICT, NO ACTION: 1451).
//! Lookups read the newest rows, committed or not, and lock what they find (a parent
//! shared, children exclusive): a concurrent writer's row is waited for, never missed by
//! a snapshot. Cascaded changes are ordinary row changes of the statement, undone with
//! it; they go 15 levels deep at the most (InnoDB's limit).
//!
//! Owns the per-statement view of a table's keys and the cascades; the definitions are
//! the catalog's ([`quarry_catalog::ForeignKeyDef`]), the row changes `modify`'s.

use std::cell::OnceCell;
use std::rc::Rc;
use std::sync::Arc;

use quarry_catalog::{FkAction, ForeignKeyDef, TableEntry};
use quarry_common::{Error, Result, Row, Value};
use quarry_storage_api::RowId;

use super::modify::{delete_rows, locked_rows, update_rows, Target};
use crate::exec::ExecCtx;
use crate::expr::{BinOp, Expr};

/// InnoDB's FK_MAX_CASCADE_DEL: a cascade this many levels down is refused.
const MAX_CASCADE_DEPTH: usize = 15;

/// A key of this table (the child) and its parent.
struct Parent {
    fk: ForeignKeyDef,
    /// None: the parent table or one of its columns does not exist (the key was made
    /// with `foreign_key_checks` off), so no row with the key set can be written.
    parent: Option<(Arc<TableEntry>, Vec<usize>)>,
    /// The parent is this table.
    own: bool,
    shown: String,
}

/// A key of another table (or this one) naming this table as its parent.
struct Child {
    fk: ForeignKeyDef,
    child: Arc<TableEntry>,
    /// The referenced columns in this table.
    ref_cols: Vec<usize>,
    shown: String,
    /// The child's own keys, found at its first cascade.
    keys: OnceCell<Option<Rc<ForeignKeys>>>,
}

/// One table's foreign keys, as a statement changing its rows enforces them.
pub struct ForeignKeys {
    table: Arc<TableEntry>,
    parents: Vec<Parent>,
    children: Vec<Child>,
}

/// "`db`.`child`, CONSTRAINT `name` FOREIGN KEY (…) REFERENCES `parent` (…) …", as
/// errors 1451 and 1452 describe a key.
fn shown(fk: &ForeignKeyDef, child: &TableEntry) -> String {
    format!(
        "`{}`.`{}`, CONSTRAINT `{}` {}",
        child.db,
        child.def.name,
        fk.name,
        fk.clause(&child.def, None, true)
    )
}

/// `cols[i] = vals[i]` for every i, over the table's row.
fn key_filter(cols: &[usize], vals: &[Value]) -> Expr {
    cols.iter()
        .zip(vals)
        .map(|(&c, v)| {
            Expr::Bin(
                BinOp::Eq,
                Box::new(Expr::Col(c)),
                Box::new(Expr::Lit(v.clone())),
            )
        })
        .reduce(|a, b| Expr::Bin(BinOp::And, Box::new(a), Box::new(b)))
        .expect("a key has columns")
}

/// The rows of `entry` whose `cols` hold `vals`, locked (`exclusive`, else shared) and
/// as they are now; the first only when `one`. Rows are looked for twice, as InnoDB's
/// locking reads meet them: among the newest rows (one another transaction wrote and
/// has not committed is waited for), and among those the statement's snapshot sees
/// (one another transaction deleted or changed and has not committed is waited for too,
/// and kept if that transaction rolls back).
fn find(
    entry: &Arc<TableEntry>,
    cols: &[usize],
    vals: &[Value],
    exclusive: bool,
    one: bool,
    ctx: &ExecCtx,
) -> Result<Vec<Target>> {
    let stop = one.then_some(1);
    let filter = key_filter(cols, vals);
    let mut rows = quarry_txn::newest_reads(|| {
        locked_rows(entry, Some(filter.clone()), exclusive, stop, ctx)
    })?;
    if one && !rows.is_empty() {
        return Ok(rows);
    }
    for r in locked_rows(entry, Some(filter), exclusive, stop, ctx)? {
        if !rows.iter().any(|(id, _)| *id == r.0) {
            rows.push(r);
        }
    }
    Ok(rows)
}

fn key_of(row: &[Value], cols: &[usize]) -> Vec<Value> {
    cols.iter().map(|&c| row[c].clone()).collect()
}

impl ForeignKeys {
    /// The keys a statement changing `entry`'s rows enforces; None when there are none
    /// or `foreign_key_checks` is off.
    pub fn of(entry: &Arc<TableEntry>, ctx: &ExecCtx) -> Result<Option<Rc<ForeignKeys>>> {
        if !ctx.foreign_key_checks {
            return Ok(None);
        }
        let referencing = ctx.catalog.referencing(&entry.db, &entry.def.name);
        if entry.def.foreign_keys.is_empty() && referencing.is_empty() {
            return Ok(None);
        }
        let parents = entry
            .def
            .foreign_keys
            .iter()
            .map(|fk| {
                let pdb = fk.parent_db(&entry.db);
                let own = pdb == entry.db && fk.ref_table == entry.def.name;
                let parent = if own {
                    Some(entry.clone())
                } else {
                    ctx.catalog.table(pdb, &fk.ref_table).ok()
                };
                let parent = parent.and_then(|p| {
                    let cols = fk
                        .ref_columns
                        .iter()
                        .map(|c| p.def.column_index(c))
                        .collect::<Option<Vec<usize>>>()?;
                    Some((p, cols))
                });
                Parent {
                    shown: shown(fk, entry),
                    fk: fk.clone(),
                    parent,
                    own,
                }
            })
            .collect();
        let children = referencing
            .into_iter()
            .filter_map(|(child, i)| {
                let fk = child.def.foreign_keys.get(i)?.clone();
                let ref_cols = fk
                    .ref_columns
                    .iter()
                    .map(|c| entry.def.column_index(c))
                    .collect::<Option<Vec<usize>>>()?;
                // The child read anew when it is this table (its entry is the same).
                let child = if Arc::ptr_eq(&child, entry)
                    || (child.db == entry.db && child.def.name == entry.def.name)
                {
                    entry.clone()
                } else {
                    child
                };
                Some(Child {
                    shown: shown(&fk, &child),
                    fk,
                    child,
                    ref_cols,
                    keys: OnceCell::new(),
                })
            })
            .collect();
        Ok(Some(Rc::new(ForeignKeys {
            table: entry.clone(),
            parents,
            children,
        })))
    }

    /// Whether a change of a row here may change other rows of this same table
    /// (a self-referencing or cyclic CASCADE / SET NULL): the statement's rows are
    /// then read again before each is changed.
    pub fn may_change_own_rows(&self) -> bool {
        !self.children.is_empty()
    }

    /// Whether a change of a row here may change other rows (a CASCADE or SET NULL
    /// naming this table as parent).
    pub fn cascades(&self) -> bool {
        self.children.iter().any(|c| {
            [c.fk.on_delete, c.fk.on_update]
                .iter()
                .any(|a| matches!(a, FkAction::Cascade | FkAction::SetNull))
        })
    }

    /// Error 1452 unless every key of `row` without NULLs finds its parent row (which
    /// is then locked shared until the transaction ends). `old`: the row before an
    /// UPDATE — keys whose columns did not change are not checked again.
    pub fn check_parents(&self, row: &[Value], old: Option<&[Value]>, ctx: &ExecCtx) -> Result<()> {
        for p in &self.parents {
            let vals = key_of(row, &p.fk.columns);
            if vals.iter().any(Value::is_null) {
                continue;
            }
            if old.is_some_and(|o| key_of(o, &p.fk.columns) == vals) {
                continue;
            }
            let Some((parent, cols)) = &p.parent else {
                return Err(Error::fk_no_parent(&p.shown));
            };
            // A row may be its own parent.
            if p.own && key_of(row, cols) == vals {
                continue;
            }
            if find(parent, cols, &vals, false, true, ctx)?.is_empty() {
                return Err(Error::fk_no_parent(&p.shown));
            }
        }
        Ok(())
    }

    /// Before the row `old` at `id` is deleted: its children are deleted (CASCADE),
    /// set to NULL (SET NULL), or the delete is refused (1451).
    pub fn on_delete(&self, old: &[Value], id: RowId, depth: usize, ctx: &ExecCtx) -> Result<()> {
        for c in &self.children {
            self.act(c, c.fk.on_delete, old, None, id, depth, ctx)?;
        }
        Ok(())
    }

    /// Before the row at `id` changes from `old` to `new`: the children of each key
    /// whose columns change follow it (CASCADE), are set to NULL (SET NULL), or the
    /// update is refused (1451).
    pub fn on_update(
        &self,
        old: &[Value],
        new: &[Value],
        id: RowId,
        depth: usize,
        ctx: &ExecCtx,
    ) -> Result<()> {
        for c in &self.children {
            if key_of(old, &c.ref_cols) == key_of(new, &c.ref_cols) {
                continue;
            }
            self.act(c, c.fk.on_update, old, Some(new), id, depth, ctx)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn act(
        &self,
        c: &Child,
        action: FkAction,
        old: &[Value],
        new: Option<&[Value]>,
        id: RowId,
        depth: usize,
        ctx: &ExecCtx,
    ) -> Result<()> {
        let vals = key_of(old, &c.ref_cols);
        if vals.iter().any(Value::is_null) {
            return Ok(());
        }
        let same_table = Arc::ptr_eq(&c.child, &self.table);
        let mut rows = find(&c.child, &c.fk.columns, &vals, true, false, ctx)?;
        if rows.is_empty() {
            return Ok(());
        }
        // A row that is its own child keeps itself under RESTRICT (as InnoDB); a
        // cascade from it leaves it to the change under way.
        if matches!(action, FkAction::Restrict | FkAction::NoAction) {
            return Err(Error::fk_has_children(Some(&c.shown)));
        }
        if same_table {
            // An UPDATE's cascade back into the table it changes acts as RESTRICT (the
            // row itself included, as InnoDB).
            if new.is_some() {
                return Err(Error::fk_has_children(Some(&c.shown)));
            }
            rows.retain(|(rid, _)| *rid != id);
            if rows.is_empty() {
                return Ok(());
            }
        }
        if depth + 1 >= MAX_CASCADE_DEPTH {
            return Err(Error::fk_cascade_too_deep(&c.shown, &c.child.def.engine));
        }
        let keys = match c.keys.get() {
            Some(k) => k.clone(),
            None => {
                let k = ForeignKeys::of(&c.child, ctx)?;
                let _ = c.keys.set(k.clone());
                k
            }
        };
        // What the children's key columns become: the parent's new key (CASCADE on
        // UPDATE) or NULL (SET NULL); a CASCADE on DELETE deletes them.
        let to: Vec<Value> = match (action, new) {
            (FkAction::Cascade, None) => {
                delete_rows(&c.child, rows, keys.as_deref(), None, depth + 1, ctx)?;
                return Ok(());
            }
            (FkAction::Cascade, Some(new)) => key_of(new, &c.ref_cols),
            _ => vec![Value::Null; c.fk.columns.len()],
        };
        let cols = &c.fk.columns;
        update_rows(
            &c.child,
            rows,
            &mut |r, _| {
                let mut n: Row = r.to_vec();
                for (&col, v) in cols.iter().zip(&to) {
                    n[col] = v.clone();
                }
                Ok(Some(n))
            },
            None,
            keys.as_deref(),
            false,
            depth + 1,
            ctx,
        )?;
        Ok(())
    }
}
