//! The server's own read-only tables (`information_schema`, and the `performance_schema`
//! and `mysql` tables tools read): rows made by the session for the statement that reads
//! them, held in memory, scanned like any table.
//!
//! The session fills them before a statement that names them ([`with_system_tables`]);
//! [`crate::Catalog::table`] finds them there for that statement's thread. A name in
//! `information_schema` the session did not fill is 1109, as MariaDB answers an unknown
//! one; in the other two it is looked up as any table. Owns: the in-memory table and its
//! lookup. Must not touch: what the rows say (the session's).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use quarry_common::{Error, Result, Row};
use quarry_storage_api::{
    Batch, Cursor, Engine, HandlerCounters, IndexEntry, IndexScan, RowId, ScanRequest, Stat, Table,
    TablePath, TableSchema, TableStats,
};

use crate::lazy::LazyTable;
use crate::{Catalog, TableDef, TableEntry};

/// The database of the server's own tables.
pub const INFORMATION_SCHEMA: &str = "information_schema";
/// The databases whose tables tools read as MariaDB's (monitoring, accounts).
pub const PERFORMANCE_SCHEMA: &str = "performance_schema";
pub const MYSQL_SCHEMA: &str = "mysql";

thread_local! {
    /// The system tables the running statement may read, by `key`.
    static FILLED: RefCell<Option<HashMap<String, Arc<TableEntry>>>> = const { RefCell::new(None) };
}

fn key(db: &str, name: &str) -> String {
    format!("{}.{}", db.to_ascii_lowercase(), name.to_ascii_uppercase())
}

/// Run `f` with `tables` readable as their schemas' on this thread.
pub fn with_system_tables<T>(tables: Vec<Arc<TableEntry>>, f: impl FnOnce() -> T) -> T {
    let map = tables
        .into_iter()
        .map(|t| (key(&t.db, &t.def.name), t))
        .collect();
    let prev = FILLED.with(|c| c.replace(Some(map)));
    let r = f();
    FILLED.with(|c| *c.borrow_mut() = prev);
    r
}

/// `db`.`name` as the running statement's session filled it, if it did.
pub(crate) fn filled(db: &str, name: &str) -> Option<Arc<TableEntry>> {
    FILLED.with(|c| {
        c.borrow()
            .as_ref()
            .and_then(|m| m.get(&key(db, name)).cloned())
    })
}

/// An `information_schema` table the session did not fill.
pub(crate) fn unknown(name: &str) -> Error {
    Error::new(
        1109,
        format!("Unknown table '{name}' in {INFORMATION_SCHEMA}"),
    )
}

impl Catalog {
    /// A system table of `db` with `def`'s columns holding `rows`.
    pub fn system_table(&self, db: &str, def: TableDef, rows: Vec<Row>) -> Arc<TableEntry> {
        let schema = def.schema(quarry_storage_api::RowFormat::Dynamic);
        let db: &'static str = match db {
            PERFORMANCE_SCHEMA => PERFORMANCE_SCHEMA,
            MYSQL_SCHEMA => MYSQL_SCHEMA,
            _ => INFORMATION_SCHEMA,
        };
        let engine: Arc<dyn Engine> = Arc::new(MemEngine { db });
        let path = TablePath::new(&self.datadir.join(db), &def.name);
        let inner: Arc<dyn Table> = Arc::new(MemTable { schema, rows, db });
        let lazy = LazyTable::opened(
            inner,
            engine.clone(),
            path,
            self.counters.clone(),
            self.open_tables.clone(),
        );
        Arc::new(TableEntry::new(
            db,
            def,
            lazy,
            engine,
            quarry_storage_api::RowFormat::Dynamic,
            std::time::SystemTime::now(),
            true,
        ))
    }
}

/// Writes to a system table: MariaDB refuses them as a privilege matter.
fn read_only(db: &str) -> Error {
    Error::new(1044, format!("Access denied to database '{db}'"))
}

struct MemEngine {
    db: &'static str,
}

impl Engine for MemEngine {
    fn name(&self) -> &'static str {
        "MEMORY"
    }
    fn comment(&self) -> &'static str {
        "The server's own tables"
    }
    fn create(&self, _: &TablePath, _: &TableSchema) -> Result<()> {
        Err(read_only(self.db))
    }
    fn open(
        &self,
        _: &TablePath,
        _: &TableSchema,
        _: Arc<HandlerCounters>,
    ) -> Result<Arc<dyn Table>> {
        Err(read_only(self.db))
    }
    fn drop_table(&self, _: &TablePath) -> Result<()> {
        Err(read_only(self.db))
    }
    fn rename(&self, _: &TablePath, _: &TablePath) -> Result<()> {
        Err(read_only(self.db))
    }
}

struct MemTable {
    schema: TableSchema,
    rows: Vec<Row>,
    db: &'static str,
}

struct MemCursor<'a> {
    rows: &'a [Row],
    at: usize,
    batch: usize,
}

impl Cursor for MemCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        if self.at >= self.rows.len() {
            return Ok(None);
        }
        let end = (self.at + self.batch).min(self.rows.len());
        let batch = Batch {
            ids: (self.at as RowId..end as RowId).collect(),
            rows: self.rows[self.at..end].to_vec(),
        };
        self.at = end;
        Ok(Some(batch))
    }
}

impl Table for MemTable {
    fn schema(&self) -> &TableSchema {
        &self.schema
    }
    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        Ok(Box::new(MemCursor {
            rows: &self.rows,
            at: 0,
            batch: req.batch_rows.max(1),
        }))
    }
    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        ids.iter()
            .map(|&id| {
                self.rows
                    .get(id as usize)
                    .cloned()
                    .ok_or_else(|| Error::corrupt("system table row"))
            })
            .collect()
    }
    fn index_scan(
        &self,
        _: &IndexScan,
        _: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        Err(Error::unsupported("an index of a system table"))
    }
    fn insert(&self, _: Row) -> Result<RowId> {
        Err(read_only(self.db))
    }
    fn update(&self, _: RowId, _: Row) -> Result<RowId> {
        Err(read_only(self.db))
    }
    fn delete(&self, _: RowId) -> Result<()> {
        Err(read_only(self.db))
    }
    fn truncate(&self) -> Result<()> {
        Err(read_only(self.db))
    }
    fn flush(&self) -> Result<()> {
        Ok(())
    }
    fn sync(&self) -> Result<()> {
        Ok(())
    }
    fn stats(&self) -> TableStats {
        TableStats {
            rows: Stat::Exact(self.rows.len() as u64),
            data_bytes: 0,
            free_bytes: 0,
            avg_row_bytes: 0,
        }
    }
    fn check(&self) -> Result<Vec<String>> {
        Ok(vec![])
    }
}
