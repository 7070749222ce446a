//! UPDATE and DELETE of one table.
//!
//! The rows a statement changes are all found and locked first, then changed: a row an
//! UPDATE moves (to a new id, or to a later place in an index) must not be met again
//! (the Halloween problem), and a row is judged by its newest version once locked
//! (InnoDB's current read). Between the two steps each row waits packed, and the same
//! packed bytes become its undo record and its earlier version for other snapshots: a
//! statement changing millions of rows holds one compact copy of each, not three `Row`s.
//!
//! Owns finding and locking the rows a condition selects and the change loop; the
//! statements' WHERE, ORDER BY, LIMIT and SET are bound by the planner
//! (`quarry_planner::dml`), coercion of assigned values is `dml::coerce`, and rollback of
//! the undo records is the session's.

use std::sync::Arc;

use quarry_catalog::TableEntry;
use quarry_common::packed::{self, PackedRow};
use quarry_common::{Result, Row, Value};
use quarry_storage_api::RowId;

use super::{Checks, ForeignKeys, Returning};
use crate::exec::{ExecCtx, Undo};
use crate::expr::Expr;
use crate::plan::{Access, Plan, ReadMode};

/// A locked row to change: where it is and its newest version. A statement's list of
/// them becomes its undo record as it goes (the rows changed so far, where they are now).
pub type Target = (RowId, PackedRow);

/// What an UPDATE makes of a row (given it and its place; None: it stays as it is).
pub type Assign<'a> = dyn FnMut(&[Value], usize) -> Result<Option<Row>> + 'a;

/// The rows of `entry` that `filter` (over its row) selects, in scan order, each locked
/// as it is met (`exclusive`: for a change, else shared) and then judged by its newest
/// version, as InnoDB's locking reads; `stop_after` rows at the most.
pub fn locked_rows(
    entry: &Arc<TableEntry>,
    filter: Option<Expr>,
    exclusive: bool,
    stop_after: Option<usize>,
    ctx: &ExecCtx,
) -> Result<Vec<Target>> {
    let recheck = filter.clone();
    let plan = ctx
        .planner
        .scan(entry, filter.unwrap_or(Expr::Lit(Value::Int(1))));
    let (filter, access, residual) = match plan {
        Plan::Scan { filter, access, .. } => (filter, access, None),
        Plan::Filter { input, pred } => match *input {
            Plan::Scan { filter, access, .. } => (filter, access, Some(pred)),
            _ => unreachable!("single-table plan"),
        },
        _ => unreachable!("single-table plan"),
    };
    // A whole-table scan offers its conditions to the engine, as a SELECT's would.
    let (pushed, filter) = match access {
        Access::Full => crate::pushdown::split(entry, filter),
        _ => (None, filter),
    };
    let how = crate::exec::ScanHow {
        filter: filter.as_ref(),
        index_filter: None,
        access: &access,
        read: ReadMode::Rows,
        order: None,
        pushed: pushed.as_ref(),
        columns: None,
        node: 0,
    };
    let mut out: Vec<Target> = vec![];
    let mut read = Vec::new();
    crate::exec::scan_with(entry, &how, ctx, &mut |ids, rows| {
        for (id, r) in ids.into_iter().zip(rows) {
            if let Some(p) = &residual {
                if !p.eval_truth(&r, ctx)? {
                    continue;
                }
            }
            // Locked as it is met, as a locking read's rows are; then judged by its
            // newest version: a transaction that changed it meanwhile has ended by now.
            read.clear();
            packed::put_row(&r, &mut read);
            let Some((id, now)) = entry.handle.lock_row(id, r, exclusive)? else {
                continue;
            };
            let row = PackedRow::pack(&now);
            if row.bytes() != read.as_slice() {
                if let Some(f) = &recheck {
                    if !f.eval_truth(&now, ctx)? {
                        continue;
                    }
                }
            }
            out.push((id, row));
            if stop_after.is_some_and(|n| out.len() >= n) {
                return Ok(false);
            }
        }
        Ok(true)
    })?;
    Ok(out)
}

/// Under IGNORE, whether a refused row may just be left: no key of the table cascades
/// (a cascade made before the refusal would stay).
fn ignorable(ctx: &ExecCtx, fks: &ForeignKeys) -> bool {
    ctx.ignoring.get() && !fks.cascades()
}

/// The rows a change goes through, and how it records its undo: in the rows' own list,
/// which becomes the record at the end (a statement changing millions of rows holds one
/// list, not two); or row by row as each is changed, in order with the records of the
/// cascades it makes (`per_row`: a cascade may come back to this table, and each row is
/// then read again before it is changed).
struct Changing<'a> {
    entry: &'a Arc<TableEntry>,
    rows: Vec<Target>,
    deleted: bool,
    per_row: bool,
    /// `rows[..done]`: the rows changed so far, where they are now (batched).
    done: usize,
}

impl<'a> Changing<'a> {
    fn new(
        entry: &'a Arc<TableEntry>,
        rows: Vec<Target>,
        deleted: bool,
        fks: Option<&ForeignKeys>,
    ) -> Changing<'a> {
        Changing {
            entry,
            rows,
            deleted,
            per_row: fks.is_some_and(ForeignKeys::may_change_own_rows),
            done: 0,
        }
    }

    /// Row `i` as it is now and locked; None when a cascade of this statement deleted it.
    fn row(&mut self, i: usize, ctx: &ExecCtx) -> Result<Option<Target>> {
        ctx.tick()?;
        if self.per_row {
            let (id, row) = &self.rows[i];
            let now =
                quarry_txn::newest_reads(|| self.entry.handle.lock_row(*id, row.unpack(), true))?;
            match now {
                Some((id, r)) => self.rows[i] = (id, PackedRow::pack(&r)),
                None => return Ok(None),
            }
        }
        Ok(Some(self.rows[i].clone()))
    }

    /// Row `i` was changed and is now at `id`.
    fn changed(&mut self, i: usize, id: RowId, ctx: &ExecCtx) {
        if self.per_row {
            ctx.undo_change(self.entry, self.deleted, id, self.rows[i].1.clone());
        } else {
            self.rows.swap(self.done, i);
            self.rows[self.done].0 = id;
        }
        self.done += 1;
    }

    /// The batched record, whether the change ended or failed part-way (the session then
    /// undoes it); how many rows changed.
    fn finish(self, ctx: &ExecCtx) -> u64 {
        let n = self.done as u64;
        if !self.per_row {
            let mut rows = self.rows;
            rows.truncate(self.done);
            if !rows.is_empty() {
                let u = if self.deleted {
                    Undo::Deleted(self.entry.clone(), rows)
                } else {
                    Undo::Updated(self.entry.clone(), rows)
                };
                ctx.undo.borrow_mut().push(u);
            }
        }
        n
    }
}

/// Delete `rows` (locked), each after its children's FOREIGN KEY actions (`depth`: how
/// many cascades led here); returns how many went.
pub fn delete_rows(
    entry: &Arc<TableEntry>,
    rows: Vec<Target>,
    fks: Option<&ForeignKeys>,
    returning: Option<&Returning>,
    depth: usize,
    ctx: &ExecCtx,
) -> Result<u64> {
    let mut c = Changing::new(entry, rows, true, fks);
    let r = (|| -> Result<()> {
        for i in 0..c.rows.len() {
            let Some((id, row)) = c.row(i, ctx)? else {
                continue;
            };
            if fks.is_some() || returning.is_some() {
                let old = row.unpack();
                if let Some(f) = fks {
                    match f.on_delete(&old, id, depth, ctx) {
                        // DELETE IGNORE leaves a row its children keep (when nothing has
                        // cascaded from it that the row's staying would leave changed).
                        Err(e) if e.code == 1451 && depth == 0 && ignorable(ctx, f) => {
                            ctx.warn(e.code, e.message);
                            continue;
                        }
                        r => r?,
                    }
                }
                if let Some(r) = returning {
                    r.add(&old, ctx)?;
                }
            }
            entry.handle.delete_known(id, &row)?;
            c.changed(i, id, ctx);
        }
        Ok(())
    })();
    let n = c.finish(ctx);
    r.map(|_| n)
}

/// Update `rows` (locked) to what `assign` makes of each (given the row and its place;
/// None: unchanged), tested against the CHECK constraints and, when `check_parents`,
/// the table's own FOREIGN KEYs; the children of each follow first. Returns how many
/// changed.
#[allow(clippy::too_many_arguments)]
pub fn update_rows(
    entry: &Arc<TableEntry>,
    rows: Vec<Target>,
    assign: &mut Assign,
    checks: Option<&Checks>,
    fks: Option<&ForeignKeys>,
    check_parents: bool,
    depth: usize,
    ctx: &ExecCtx,
) -> Result<u64> {
    let mut c = Changing::new(entry, rows, false, fks);
    let r = (|| -> Result<()> {
        for i in 0..c.rows.len() {
            let Some((id, packed)) = c.row(i, ctx)? else {
                continue;
            };
            let old = packed.unpack();
            let Some(new) = assign(&old, i)? else {
                continue;
            };
            let changed = (|| {
                if let Some(checks) = checks {
                    checks.test(&new, ctx)?;
                }
                if let Some(f) = fks {
                    if check_parents {
                        f.check_parents(&new, Some(&old), ctx)?;
                    }
                    f.on_update(&old, &new, id, depth, ctx)?;
                }
                entry.handle.update_known(id, &packed, new, &mut |_| {})
            })();
            let nid = match changed {
                // UPDATE IGNORE leaves a row a key or constraint refuses (when nothing has
                // cascaded from it that its staying would leave changed); MariaDB warns of
                // a CHECK only.
                Err(e)
                    if matches!(e.code, 1062 | 4025 | 1451 | 1452)
                        && depth == 0
                        && ctx.ignoring.get()
                        && fks.is_none_or(|f| ignorable(ctx, f)) =>
                {
                    if e.code == 4025 {
                        ctx.warn(e.code, e.message);
                    }
                    continue;
                }
                r => r?,
            };
            c.changed(i, nid, ctx);
        }
        Ok(())
    })();
    let n = c.finish(ctx);
    r.map(|_| n)
}
