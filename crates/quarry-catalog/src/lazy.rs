//! Open tables: a table's files are opened at its first use, not when the datadir opens,
//! and the catalog closes the least recently used idle ones once more than
//! `table_open_cache` are open (MariaDB's name), so a datadir may hold far more tables
//! than the process may open files. A table that cannot be opened (out of descriptors,
//! damaged files) answers with the error and is tried again at its next use.
//!
//! [`LazyTable`] is the handle a [`crate::TableEntry`] holds: the transactional table
//! (`quarry_txn::MvccTable` over the engine's) once opened, never reopened in place. To
//! close a table the catalog replaces its entry with one whose handle is not open yet
//! (keeping its row versions and lock namespace, which belong to the table): only an
//! entry no statement, plan or transaction holds is replaced, so an open handle is
//! never pulled from under a user. Owns the opening; which tables to close is
//! `Catalog::close_idle`'s.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;
use quarry_common::packed::PackedRow;
use quarry_common::{Result, Row, Value};
use quarry_storage_api::{
    Capabilities, Cursor, Engine, HandlerCounters, IndexEntry, IndexScan, IndexSchema, Pred, RowId,
    ScanAgg, ScanRequest, Stat, Support, Table, TablePath, TableSchema, TableStats,
};

/// How many tables are open now (shared by every handle of a catalog).
pub(crate) type OpenCount = Arc<AtomicUsize>;

pub(crate) struct LazyTable {
    engine: Arc<dyn Engine>,
    path: TablePath,
    schema: TableSchema,
    counters: Arc<HandlerCounters>,
    versions: Arc<quarry_txn::Versions>,
    lock_id: u64,
    open: OnceLock<Arc<dyn Table>>,
    /// One opener at a time: two handles on the same files would corrupt them.
    opening: Mutex<()>,
    count: OpenCount,
    /// An open failure was reported (once per handle).
    reported: AtomicBool,
}

fn next_lock_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl LazyTable {
    /// A handle on a table not opened yet, with row versions and a lock namespace of its
    /// own.
    pub(crate) fn closed(
        engine: Arc<dyn Engine>,
        path: TablePath,
        schema: TableSchema,
        counters: Arc<HandlerCounters>,
        count: OpenCount,
    ) -> LazyTable {
        LazyTable {
            engine,
            path,
            schema,
            counters,
            versions: Arc::new(quarry_txn::Versions::default()),
            lock_id: next_lock_id(),
            open: OnceLock::new(),
            opening: Mutex::new(()),
            count,
            reported: AtomicBool::new(false),
        }
    }

    /// A handle over a table the caller just opened.
    pub(crate) fn opened(
        inner: Arc<dyn Table>,
        engine: Arc<dyn Engine>,
        path: TablePath,
        counters: Arc<HandlerCounters>,
        count: OpenCount,
    ) -> LazyTable {
        let t = LazyTable::closed(engine, path, inner.schema().clone(), counters, count);
        t.install(inner);
        t
    }

    /// The same table, not open: what replaces this handle when the table is closed.
    pub(crate) fn closed_copy(&self) -> LazyTable {
        LazyTable {
            engine: self.engine.clone(),
            path: self.path.clone(),
            schema: self.schema.clone(),
            counters: self.counters.clone(),
            versions: self.versions.clone(),
            lock_id: self.lock_id,
            open: OnceLock::new(),
            opening: Mutex::new(()),
            count: self.count.clone(),
            reported: AtomicBool::new(false),
        }
    }

    pub(crate) fn is_open(&self) -> bool {
        self.open.get().is_some()
    }

    fn install(&self, inner: Arc<dyn Table>) {
        let t: Arc<dyn Table> = Arc::new(quarry_txn::MvccTable::new(
            inner,
            self.versions.clone(),
            self.lock_id,
        ));
        if self.open.set(t).is_ok() {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The open table, opening it now if it is not.
    fn table(&self) -> Result<&Arc<dyn Table>> {
        if let Some(t) = self.open.get() {
            return Ok(t);
        }
        let _one = self.opening.lock();
        if let Some(t) = self.open.get() {
            return Ok(t);
        }
        match self
            .engine
            .open(&self.path, &self.schema, self.counters.clone())
        {
            Ok(inner) => {
                self.install(inner);
                Ok(self.open.get().expect("just installed"))
            }
            Err(e) => {
                if !self.reported.swap(true, Ordering::Relaxed) {
                    let db = self
                        .path
                        .dir
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy();
                    eprintln!(
                        "quarry: cannot open table {db}.{}: {}",
                        self.path.name, e.message
                    );
                }
                Err(e)
            }
        }
    }
}

impl Drop for LazyTable {
    fn drop(&mut self) {
        if self.open.get().is_some() {
            self.count.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

impl Table for LazyTable {
    fn schema(&self) -> &TableSchema {
        &self.schema
    }
    fn capabilities(&self) -> Capabilities {
        self.table().map(|t| t.capabilities()).unwrap_or_default()
    }
    fn pushdown(&self, filter: &Pred) -> Support {
        self.table()
            .map(|t| t.pushdown(filter))
            .unwrap_or(Support::Unsupported)
    }
    fn count(&self, req: &ScanRequest) -> Result<Option<u64>> {
        self.table()?.count(req)
    }
    fn estimate(&self, req: &ScanRequest) -> Option<u64> {
        self.table().ok()?.estimate(req)
    }
    fn min_max(&self, col: usize, req: &ScanRequest) -> Result<Option<(Value, Value)>> {
        self.table()?.min_max(col, req)
    }
    fn aggregate(
        &self,
        req: &ScanRequest,
        group: &[usize],
        aggs: &[ScanAgg],
        max_groups: usize,
    ) -> Result<Option<Vec<Row>>> {
        self.table()?.aggregate(req, group, aggs, max_groups)
    }
    fn build_indexes(
        &self,
        indexes: &[IndexSchema],
        kept: &[Option<usize>],
        progress: &dyn Fn(u64),
    ) -> Result<bool> {
        self.table()?.build_indexes(indexes, kept, progress)
    }
    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        self.table()?.scan(req)
    }
    fn scan_columns(
        &self,
        req: &ScanRequest,
        parts: usize,
    ) -> Result<Option<quarry_storage_api::ColumnCursors<'_>>> {
        self.table()?.scan_columns(req, parts)
    }
    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        self.table()?.fetch(ids)
    }
    fn fetch_columns(&self, ids: &[RowId], columns: Option<&[usize]>) -> Result<Vec<Row>> {
        self.table()?.fetch_columns(ids, columns)
    }
    fn index_scan(
        &self,
        scan: &IndexScan,
        each: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        self.table()?.index_scan(scan, each)
    }
    fn index_count(
        &self,
        index: usize,
        lo: std::ops::Bound<&[Value]>,
        hi: std::ops::Bound<&[Value]>,
    ) -> Result<Option<u64>> {
        self.table()?.index_count(index, lo, hi)
    }
    fn index_range(
        &self,
        index: usize,
        lo: std::ops::Bound<&[Value]>,
        hi: std::ops::Bound<&[Value]>,
    ) -> Result<Vec<RowId>> {
        self.table()?.index_range(index, lo, hi)
    }
    fn index_lookups(&self, index: usize, keys: &[Vec<Value>]) -> Result<Vec<Vec<RowId>>> {
        self.table()?.index_lookups(index, keys)
    }
    fn index_key(&self, index: usize, row: &Row, id: RowId) -> Option<Vec<u8>> {
        self.table().ok()?.index_key(index, row, id)
    }
    fn index_key_in(
        &self,
        index: usize,
        entry: &[u8],
        lo: std::ops::Bound<&[Value]>,
        hi: std::ops::Bound<&[Value]>,
    ) -> Option<bool> {
        self.table().ok()?.index_key_in(index, entry, lo, hi)
    }
    fn index_covers(&self, index: usize) -> Vec<bool> {
        match self.table() {
            Ok(t) => t.index_covers(index),
            Err(_) => vec![false; self.schema.indexes[index].columns.len()],
        }
    }
    fn records_in_range(
        &self,
        index: usize,
        lo: std::ops::Bound<&[Value]>,
        hi: std::ops::Bound<&[Value]>,
    ) -> Result<Stat> {
        self.table()?.records_in_range(index, lo, hi)
    }
    fn index_distinct(&self, index: usize) -> Result<Vec<Stat>> {
        self.table()?.index_distinct(index)
    }
    fn optimize(&self) -> Result<()> {
        self.table()?.optimize()
    }
    fn analyze(&self) -> Result<()> {
        self.table()?.analyze()
    }
    fn insert(&self, row: Row) -> Result<RowId> {
        self.table()?.insert(row)
    }
    fn insert_noted(&self, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        self.table()?.insert_noted(row, note)
    }
    fn update_noted(&self, id: RowId, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        self.table()?.update_noted(id, row, note)
    }
    fn restore(&self, id: RowId, row: Row) -> Result<bool> {
        self.table()?.restore(id, row)
    }
    fn lock_row(&self, id: RowId, row: Row, exclusive: bool) -> Result<Option<(RowId, Row)>> {
        self.table()?.lock_row(id, row, exclusive)
    }
    fn lock_table(&self, exclusive: bool) -> Result<()> {
        self.table()?.lock_table(exclusive)
    }
    fn update(&self, id: RowId, row: Row) -> Result<RowId> {
        self.table()?.update(id, row)
    }
    fn delete(&self, id: RowId) -> Result<()> {
        self.table()?.delete(id)
    }
    fn update_known(
        &self,
        id: RowId,
        old: &PackedRow,
        row: Row,
        note: &mut dyn FnMut(RowId),
    ) -> Result<RowId> {
        self.table()?.update_known(id, old, row, note)
    }
    fn delete_known(&self, id: RowId, old: &PackedRow) -> Result<()> {
        self.table()?.delete_known(id, old)
    }
    fn truncate(&self) -> Result<()> {
        self.table()?.truncate()
    }
    fn begin_bulk(&self, write_buffer: usize) {
        if let Ok(t) = self.table() {
            t.begin_bulk(write_buffer)
        }
    }
    fn end_bulk(&self) -> Result<()> {
        self.table()?.end_bulk()
    }
    fn set_keys_disabled(&self, disabled: bool) -> Result<bool> {
        self.table()?.set_keys_disabled(disabled)
    }
    /// A table never opened has nothing to write.
    fn flush(&self) -> Result<()> {
        match self.open.get() {
            Some(t) => t.flush(),
            None => Ok(()),
        }
    }
    fn sync(&self) -> Result<()> {
        match self.open.get() {
            Some(t) => t.sync(),
            None => Ok(()),
        }
    }
    fn stats(&self) -> TableStats {
        match self.table() {
            Ok(t) => t.stats(),
            Err(_) => TableStats {
                rows: Stat::Unknown,
                data_bytes: 0,
                free_bytes: 0,
                avg_row_bytes: 0,
            },
        }
    }
    fn check(&self) -> Result<Vec<String>> {
        match self.table() {
            Ok(t) => t.check(),
            Err(e) => Ok(vec![e.message]),
        }
    }
}
