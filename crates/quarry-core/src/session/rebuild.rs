//! Table rebuilds: a new definition applied to a table (in place when only its indexes or
//! FOREIGN KEYs change, else by copying its rows into a new table and switching the two
//! through the catalog's DDL journal), and REPAIR TABLE, which copies what a damaged
//! table's data still holds. Owns the copy and the switch; the definitions are the
//! catalog's, the row reading the engine's.

use std::sync::Arc;

use quarry_catalog::TableDef;
use quarry_common::{Result, Row};
use quarry_executor::ExecCtx;
use quarry_storage_api::Salvaged;

use super::{Session, StmtSink};

impl Session {
    /// Apply a new definition to a table: in place when only its indexes change and the
    /// engine can build them from the rows, else by copying the rows into a new table.
    pub(super) fn change_table(
        &mut self,
        db: &str,
        entry: &Arc<quarry_catalog::TableEntry>,
        new_def: TableDef,
        map: Option<&dyn Fn(Row) -> Row>,
        sink: &StmtSink,
    ) -> Result<()> {
        let (mut a, mut b) = (entry.def.clone(), new_def.clone());
        a.foreign_keys.clear();
        b.foreign_keys.clear();
        if a == b {
            // Only FOREIGN KEYs change: the definition alone.
            return self.db.catalog.replace_def(db, new_def);
        }
        let same_columns = {
            a.indexes.clear();
            b.indexes.clear();
            a == b
        };
        if same_columns {
            self.start_progress("building index", entry);
            let progress = &self.info.progress;
            let r = self
                .db
                .catalog
                .alter_indexes(db, &entry.def.name, new_def.clone(), &|n| {
                    if let Some(g) = progress.lock().as_mut() {
                        g.done = n;
                    }
                });
            *progress.lock() = None;
            if r? {
                return Ok(());
            }
        }
        self.rebuild_table(db, entry, new_def, map, sink)
    }

    pub(super) fn rebuild_table(
        &mut self,
        db: &str,
        entry: &Arc<quarry_catalog::TableEntry>,
        new_def: TableDef,
        map: Option<&dyn Fn(Row) -> Row>,
        sink: &StmtSink,
    ) -> Result<()> {
        self.copy_and_switch(db, entry, new_def, true, sink, |s, tmp_entry, ctx| {
            s.copy_rows(entry, tmp_entry, map, ctx)
        })
    }

    /// Every row of `entry` (through `map`) into `to`. Rows stream a batch at a time, so a
    /// rebuild holds one batch of rows (and the index sorters' bounded memory), not the
    /// table.
    fn copy_rows(
        &self,
        entry: &Arc<quarry_catalog::TableEntry>,
        to: &Arc<quarry_catalog::TableEntry>,
        map: Option<&dyn Fn(Row) -> Row>,
        ctx: &ExecCtx,
    ) -> Result<()> {
        let mut cursor = entry.handle.scan(&quarry_storage_api::ScanRequest {
            batch_rows: quarry_executor::exec::BATCH_ROWS,
            read_buffer: ctx.read_buffer,
            ..Default::default()
        })?;
        let mut batch = Vec::new().into_iter();
        self.start_progress("copy to tmp table", entry);
        let progress = &self.info.progress;
        let rows = std::iter::from_fn(|| loop {
            if let Some(r) = batch.next() {
                return Some(Ok(match map {
                    Some(f) => f(r),
                    None => r,
                }));
            }
            match cursor.next_batch() {
                Ok(Some(b)) => {
                    if let Some(g) = progress.lock().as_mut() {
                        g.done += b.rows.len() as u64;
                    }
                    batch = b.rows.into_iter()
                }
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        });
        let positions: Vec<usize> = (0..to.def.columns.len()).collect();
        let r = quarry_executor::dml::insert_positioned(to, rows, &positions, ctx);
        *progress.lock() = None;
        r.map(|_| ())
    }

    /// REPAIR TABLE: the rows the engine can still read (past damaged records) copied
    /// into a new table, whose indexes are so built from them, and switched in. Returns
    /// what the reading met (None: the engine reads only as its scan does, and the
    /// table is rebuilt from that).
    pub(super) fn repair_table(
        &mut self,
        db: &str,
        entry: &Arc<quarry_catalog::TableEntry>,
        sink: &StmtSink,
    ) -> Result<Option<Salvaged>> {
        let mut salvaged = None;
        self.copy_and_switch(
            db,
            entry,
            entry.def.clone(),
            false,
            sink,
            |s, tmp_entry, ctx| {
                s.start_progress("repair", entry);
                // The engine reads the files themselves: whatever the table buffered goes
                // there first (a table too damaged to open has nothing buffered).
                entry.handle.flush()?;
                let path = entry.path(s.db.datadir());
                let schema = entry.def.schema(entry.row_format);
                let r = quarry_executor::dml::insert_pushed(tmp_entry, ctx, |push| {
                    entry.engine.salvage(&path, &schema, push)
                });
                *s.info.progress.lock() = None;
                salvaged = r?;
                if salvaged.is_none() {
                    s.copy_rows(entry, tmp_entry, None, ctx)?;
                }
                Ok(())
            },
        )?;
        Ok(salvaged)
    }

    /// REPAIR TABLE's messages for one table: what was lost (MyISAM's "Number of rows
    /// changed", the damaged records dropped), then its status.
    pub(super) fn repair(
        &mut self,
        db: &str,
        entry: &Arc<quarry_catalog::TableEntry>,
        sink: &StmtSink,
    ) -> Vec<(&'static str, String)> {
        let before = match entry.handle.stats().rows {
            quarry_storage_api::Stat::Exact(n) => Some(n),
            _ => None,
        };
        match self.repair_table(db, entry, sink) {
            Err(e) => vec![
                ("error", e.message),
                ("status", "Operation failed".to_string()),
            ],
            Ok(salvaged) => {
                let mut out = vec![];
                if let Some(s) = salvaged {
                    if let Some(n) = before.filter(|&n| n != s.rows) {
                        out.push((
                            "warning",
                            format!("Number of rows changed from {n} to {}", s.rows),
                        ));
                    }
                    if s.lost_records > 0 {
                        out.push((
                            "warning",
                            format!(
                                "{} damaged records dropped ({} bytes held no readable record)",
                                s.lost_records, s.skipped_bytes
                            ),
                        ));
                    }
                }
                out.push(("status", "OK".to_string()));
                out
            }
        }
    }

    /// Create a new table of `new_def`, fill it (`copy`), commit it, and switch it in for
    /// `entry` through the catalog's DDL journal; a failed copy drops it. `openable`:
    /// the old table opens (it is renamed aside, then dropped), else it is dropped first.
    fn copy_and_switch(
        &mut self,
        db: &str,
        entry: &Arc<quarry_catalog::TableEntry>,
        new_def: TableDef,
        openable: bool,
        sink: &StmtSink,
        copy: impl FnOnce(&Session, &Arc<quarry_catalog::TableEntry>, &ExecCtx) -> Result<()>,
    ) -> Result<()> {
        let tmp = format!("#sql-alter-{}-{}", std::process::id(), self.info.id);
        let mut tmp_def = new_def.clone();
        tmp_def.name = tmp.clone();
        let _ = self.db.catalog.drop_table(db, &tmp);
        let tmp_entry = self.db.catalog.create_table(db, tmp_def)?;
        let copied = self.exec_ctx(vec![], sink, |ctx| copy(self, &tmp_entry, ctx));
        // Undo records of the copy refer to the temporary table: never replay them.
        *sink.borrow_mut() = None;
        if let Err(mut e) = copied {
            let _ = self.db.catalog.drop_table(db, &tmp);
            // A row the new definition refuses (a CHECK's 4025) names the table, not the
            // copy.
            e.message = e.message.replace(&tmp, &entry.def.name);
            return Err(e);
        }
        if openable {
            self.with_ctx(|ctx| quarry_executor::dml::ensure_auto_inc(entry, ctx))?;
            *tmp_entry.auto_inc.lock() = *entry.auto_inc.lock();
        } else {
            // The old table may not be read: the next value comes from the rows kept,
            // or the counter the old one had if it is known and higher.
            self.with_ctx(|ctx| quarry_executor::dml::ensure_auto_inc(&tmp_entry, ctx))?;
            if entry
                .auto_inc_known
                .load(std::sync::atomic::Ordering::Acquire)
            {
                let old = *entry.auto_inc.lock();
                let mut n = tmp_entry.auto_inc.lock();
                *n = (*n).max(old);
            }
        }
        // The copy is committed before the switch: once the journal names the new table,
        // its rows must survive a crash.
        let lsn = match self.db.wal.commit_no_wait() {
            Ok(lsn) => lsn,
            Err(e) => {
                let _ = self.db.catalog.drop_table(db, &tmp);
                return Err(e);
            }
        };
        self.db.wal.wait_commit(lsn)?;
        self.db.wal.begin();
        let name = entry.def.name.clone();
        let old = format!("#sql-old-{}-{}", std::process::id(), self.info.id);
        let step = |from: &str, to: &str| quarry_catalog::DdlStep::Rename {
            db: db.to_string(),
            from: from.to_string(),
            to_db: db.to_string(),
            to: to.to_string(),
        };
        let drop = |name: String| quarry_catalog::DdlStep::Drop {
            db: db.to_string(),
            name,
        };
        // A table being repaired may not open again under another name: it is dropped
        // where it is. (Either order is finished by the journal after a crash.)
        let steps = if openable {
            vec![step(&name, &old), step(&tmp, &new_def.name), drop(old)]
        } else {
            vec![drop(name), step(&tmp, &new_def.name)]
        };
        self.db.catalog.apply_ddl(&steps)?;
        Ok(())
    }
}
