//! A session's explicit table locks, as MariaDB's: LOCK TABLES / UNLOCK TABLES, FLUSH
//! TABLES [t, …] WITH READ LOCK; the tables each statement uses, checked against the
//! session's own locks (1100 for a table it did not lock under that name, 1099 for a
//! write to one locked READ, 1223 for a write under its global read lock, 1192 for RENAME
//! TABLE) and admitted past other sessions' locks (waiting for them).
//!
//! Owns the session's list; who holds what across sessions is `crate::table_locks`.

use std::time::Duration;

use quarry_catalog::INFORMATION_SCHEMA;
use quarry_common::{Error, Result};
use quarry_sql::ast::{self, Statement as S};
use quarry_sql::{LockItem, Stmt};

use super::access::{collect, TableRef};
use super::Session;
use crate::table_locks::{Admission, TableName};
use crate::Database;

/// One table of the session's LOCK TABLES.
struct Entry {
    db: String,
    table: String,
    alias: Option<String>,
    write: bool,
}

/// What the session holds.
#[derive(Default)]
pub(super) struct Locked {
    /// LOCK TABLES' (or FLUSH TABLES t WITH READ LOCK's) tables: the only ones its
    /// statements may use. None: no such list.
    tables: Option<Vec<Entry>>,
    /// FLUSH TABLES WITH READ LOCK.
    global: bool,
}

impl Locked {
    pub(super) fn any(&self) -> bool {
        self.tables.is_some() || self.global
    }
}

/// The tables a statement uses: read, written, created; and whether it writes at all.
#[derive(Default)]
struct Uses {
    reads: Vec<TableRef>,
    writes: Vec<TableRef>,
    creates: Vec<String>,
    writes_any: bool,
    renames: bool,
}

fn exempt(db: &str) -> bool {
    db.eq_ignore_ascii_case(INFORMATION_SCHEMA) || db.eq_ignore_ascii_case("performance_schema")
}

impl Session {
    fn lock_wait(&self) -> Duration {
        self.settings().lock_wait
    }

    fn table_ref(&self, name: &ast::ObjectName, alias: Option<String>) -> Result<TableRef> {
        let (db, table) = self.split_name(name)?;
        Ok(TableRef { db, table, alias })
    }

    /// `information_schema` is read only, for root too: a statement that writes to one
    /// of its tables (or creates one there) is 1044, as MariaDB refuses it.
    pub(super) fn refuse_system_writes(&self, stmt: &Stmt) -> Result<()> {
        let created_there = match stmt {
            Stmt::Ast(s) => match &**s {
                S::CreateTable(ct) => self
                    .split_name(&ct.name)?
                    .0
                    .eq_ignore_ascii_case(INFORMATION_SCHEMA),
                _ => false,
            },
            _ => false,
        };
        let u = self.uses(stmt)?;
        if created_there
            || u.writes
                .iter()
                .any(|t| t.db.eq_ignore_ascii_case(INFORMATION_SCHEMA))
        {
            return Err(Error::db_access_denied(
                &self.info.user,
                &self.info.host,
                INFORMATION_SCHEMA,
            ));
        }
        Ok(())
    }

    fn uses(&self, stmt: &Stmt) -> Result<Uses> {
        let cur = self.current_db.as_deref();
        let mut u = Uses::default();
        match stmt {
            Stmt::Ast(s) => match &**s {
                S::Query(q) => u.reads = collect(&**q, cur).tables,
                S::Explain { statement, .. } => return self.uses(&Stmt::Ast(statement.clone())),
                S::Insert(ins) => {
                    if let ast::TableObject::TableName(name) = &ins.table {
                        u.writes.push(self.table_ref(name, None)?);
                    }
                    if let Some(src) = &ins.source {
                        u.reads = collect(&**src, cur).tables;
                    }
                }
                S::Update(_) | S::Delete(_) => {
                    let mut refs = collect(&**s, cur).tables.into_iter();
                    u.writes.extend(refs.next());
                    u.reads = refs.collect();
                }
                S::CreateTable(ct) => {
                    u.creates.push(self.split_name(&ct.name)?.1);
                    if let Some(q) = &ct.query {
                        u.reads = collect(&**q, cur).tables;
                    }
                }
                S::AlterTable(at) => u.writes.push(self.table_ref(&at.name, None)?),
                S::CreateIndex(ci) => u.writes.push(self.table_ref(&ci.table_name, None)?),
                S::Truncate(t) => {
                    for tn in &t.table_names {
                        u.writes.push(self.table_ref(&tn.name, None)?);
                    }
                }
                S::Drop {
                    object_type: ast::ObjectType::Table,
                    names,
                    ..
                } => {
                    for n in names {
                        u.writes.push(self.table_ref(n, None)?);
                    }
                }
                S::RenameTable(_) => u.renames = true,
                S::Drop { .. }
                | S::CreateView(_)
                | S::CreateDatabase { .. }
                | S::CreateSchema { .. } => u.writes_any = true,
                _ => {}
            },
            Stmt::SelectInto(q, _) => {
                if let S::Query(q) = &**q {
                    u.reads = collect(&**q, cur).tables;
                }
            }
            Stmt::LoadData(ld) => u.writes.push(TableRef {
                db: self.require_db(ld.db.as_deref())?,
                table: ld.table.clone(),
                alias: None,
            }),
            Stmt::ChecksumTable { tables, .. } => {
                for (db, t) in tables {
                    u.reads.push(TableRef {
                        db: self.require_db(db.as_deref())?,
                        table: t.clone(),
                        alias: None,
                    });
                }
            }
            Stmt::TableMaintenance { op, tables } => {
                for (db, t) in tables {
                    let r = TableRef {
                        db: self.require_db(db.as_deref())?,
                        table: t.clone(),
                        alias: None,
                    };
                    if op == "CHECK" || op == "ANALYZE" {
                        u.reads.push(r);
                    } else {
                        u.writes.push(r);
                    }
                }
            }
            Stmt::AlterEngine { db, table, .. } | Stmt::AlterKeys { db, table, .. } => {
                u.writes.push(TableRef {
                    db: self.require_db(db.as_deref())?,
                    table: table.clone(),
                    alias: None,
                })
            }
            _ => {}
        }
        u.writes_any |= !u.writes.is_empty() || !u.creates.is_empty() || u.renames;
        Ok(u)
    }

    /// Before a statement runs: the session's own locks allow it, and other sessions'
    /// locks have let it in (it waits for them); the returned admission ends with it.
    /// `writes`: the statement may write (it is counted as a writer meanwhile).
    pub(super) fn admit<'a>(
        &self,
        db: &'a Database,
        stmt: &Stmt,
        writes: bool,
    ) -> Result<Admission<'a>> {
        if self.locked.any() {
            self.check_own_locks(&self.uses(stmt)?)?;
        }
        let names = |v: &[TableRef]| -> Vec<TableName> {
            v.iter()
                .filter(|r| !exempt(&r.db))
                .map(|r| (r.db.clone(), r.table.clone()))
                .collect()
        };
        db.table_locks
            .admit(self.info.id, writes, self.lock_wait(), || {
                let u = self.uses(stmt)?;
                Ok((names(&u.reads), names(&u.writes)))
            })
    }

    /// 1223 for a write under the session's global read lock; under LOCK TABLES, 1192 for
    /// RENAME, 1100 for a table not locked under the name it is used by (or created),
    /// 1099 for a write to one locked READ.
    fn check_own_locks(&self, u: &Uses) -> Result<()> {
        if self.locked.global && u.writes_any {
            return Err(Error::read_lock_conflict());
        }
        let Some(list) = &self.locked.tables else {
            return Ok(());
        };
        if u.renames {
            return Err(Error::locked_tables_or_transaction());
        }
        if let Some(name) = u.creates.first() {
            return Err(Error::table_not_locked(name));
        }
        let uses = u.reads.iter().map(|r| (r, false));
        for (r, write) in uses.chain(u.writes.iter().map(|r| (r, true))) {
            if exempt(&r.db) {
                continue;
            }
            let shown = r.alias.as_deref().unwrap_or(&r.table);
            let Some(e) = list
                .iter()
                .find(|e| e.db == r.db && e.table == r.table && e.alias == r.alias)
            else {
                return Err(Error::table_not_locked(shown));
            };
            if write && !e.write {
                return Err(Error::table_locked_for_read(shown));
            }
        }
        Ok(())
    }

    /// LOCK TABLES: an open transaction commits, earlier locks go, then every table is
    /// locked (waiting for other sessions' locks) or none.
    pub(super) fn lock_tables(&mut self, items: &[LockItem]) -> Result<()> {
        if self.in_txn {
            self.commit()?;
        }
        self.unlock_tables();
        let mut entries = vec![];
        for it in items {
            let db = self.require_db(it.db.as_deref())?;
            if !self.db.catalog.table_exists(&db, &it.table)
                && self.db.catalog.view(&db, &it.table).is_none()
            {
                return Err(Error::no_such_table(&db, &it.table));
            }
            entries.push(Entry {
                db,
                table: it.table.clone(),
                alias: it.alias.clone(),
                write: it.write,
            });
        }
        self.take(entries)
    }

    fn take(&mut self, entries: Vec<Entry>) -> Result<()> {
        let wanted: Vec<(TableName, bool)> = entries
            .iter()
            .map(|e| ((e.db.clone(), e.table.clone()), e.write))
            .collect();
        self.db
            .table_locks
            .lock(self.info.id, &wanted, self.lock_wait())?;
        self.locked.tables = Some(entries);
        Ok(())
    }

    /// FLUSH TABLES [t, …] WITH READ LOCK.
    pub(super) fn flush_read_lock(&mut self, tables: &[(Option<String>, String)]) -> Result<()> {
        if self.locked.any() {
            return Err(Error::locked_tables_or_transaction());
        }
        if tables.is_empty() {
            self.db
                .table_locks
                .lock_global(self.info.id, self.lock_wait())?;
            self.locked.global = true;
            return Ok(());
        }
        if self.in_txn {
            self.commit()?;
        }
        let mut entries = vec![];
        for (db, t) in tables {
            let db = self.require_db(db.as_deref())?;
            if !self.db.catalog.table_exists(&db, t) {
                return Err(Error::no_such_table(&db, t));
            }
            entries.push(Entry {
                db,
                table: t.clone(),
                alias: None,
                write: false,
            });
        }
        self.take(entries)
    }

    /// UNLOCK TABLES or the session's end: everything the session holds.
    pub(super) fn unlock_tables(&mut self) {
        if self.locked.any() {
            self.db.table_locks.unlock(self.info.id);
            self.locked = Locked::default();
        }
    }

    /// START TRANSACTION gives up LOCK TABLES' tables (a global read lock stays: it is
    /// never held with them).
    pub(super) fn unlock_tables_for_transaction(&mut self) {
        if self.locked.tables.is_some() {
            self.unlock_tables();
        }
    }
}
