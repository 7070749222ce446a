//! The storage-engine API: what the executor may ask of an engine, and nothing else.
//!
//! Two objects, as in MySQL's handler API: an [`Engine`] creates, opens, renames and drops
//! tables; a [`Table`] handle scans, fetches and writes rows. Requests that will grow are
//! structs ([`ScanRequest`]), so new pushdowns add fields rather than signatures.
//!
//! Row ids are opaque to the executor: it gets them from scans and index lookups and hands
//! them back to `fetch`, `update` and `delete`. Statement and transaction rollback are done
//! above the engine by logical undo (the inverse operation through this same API), and
//! snapshots and row locks by `quarry-txn` around every table; an engine stays
//! single-version and honours the few rules that layer needs (see
//! [`Capabilities::row_locks`], [`Table::index_key`], [`Table::restore`]): scan batches
//! come in increasing row-id order.
//!
//! Must not touch: SQL text, sessions, sockets. Holds no implementations.

use std::collections::HashMap;
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use quarry_common::packed::PackedRow;
use quarry_common::{Error, Result, Row, SqlType, Value};

mod keyset;
mod pred;
pub mod vector;
pub use keyset::KeySet;
pub use pred::{CmpOp, Pred, Support};
pub use vector::{ColumnBatch, ColumnCursor, ColumnCursors, VectorType};

pub type RowId = u64;

/// A column as the engine needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSchema {
    pub name: String,
    pub ty: SqlType,
    pub nullable: bool,
    /// Also stored column-wise beside the rows (`COMMENT 'columnar_storage'`), for
    /// engines that keep such side files.
    pub columnar: bool,
}

/// An index as the engine needs to know it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexSchema {
    pub name: String,
    pub columns: Vec<usize>,
    /// Prefix length in characters per column (0 = whole value).
    pub prefix: Vec<u32>,
    /// Per column: stored in descending order.
    pub desc: Vec<bool>,
    pub unique: bool,
    pub primary: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFormat {
    Fixed,
    Dynamic,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TableSchema {
    pub columns: Vec<ColumnSchema>,
    pub indexes: Vec<IndexSchema>,
    pub row_format: RowFormat,
}

/// What the engine is asked to produce from a scan.
#[derive(Debug, Clone, Default)]
pub struct ScanRequest {
    /// Rows per batch the caller wants (the engine may return fewer).
    pub batch_rows: usize,
    /// Read-ahead block size in bytes (`read_buffer_size`).
    pub read_buffer: usize,
    /// Columns the caller reads (None: all). An engine may leave the others NULL.
    pub columns: Option<Vec<usize>>,
    /// A condition the table accepted through [`Table::pushdown`]: rows for which it is
    /// not true may be left out (all of them when the answer was `Exact`).
    pub filter: Option<Pred>,
}

/// An aggregate a scan may compute inside the engine, per group ([`Table::aggregate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanAgg {
    CountStar,
    /// Non-NULL values of a column.
    Count(usize),
    Min(usize),
    Max(usize),
}

/// What the planner may ask of a table beyond scans, fetches and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Its indexes answer lookups, ranges and ordered reads cheaply, so the planner
    /// considers them as access paths. Without it an index only enforces uniqueness
    /// (and `index_range` on a whole unique key still finds the conflicting row).
    pub index_access: bool,
    /// Concurrent transactions may change different rows (the engine's writes to
    /// distinct rows are independent and its undo is exact per row), so writers lock
    /// rows. Without it a writing transaction locks the whole table. Such an engine
    /// must not give a row id a deleted row had to another row while the deleting
    /// transaction is open: earlier versions are kept by row id.
    pub row_locks: bool,
    /// Scans read only the columns asked for, from column-wise storage, and evaluate
    /// pushed conditions on encoded data: a scan row costs far less than in a row store,
    /// and a row fetched by id (through an index) far more — the planner weighs index
    /// access against scans accordingly and never reads a whole index instead of a scan.
    pub columnar: bool,
    /// Scans (of rows and of vectors) return exactly the rows for which any
    /// [`ScanRequest::filter`] is true, whatever `pushdown` answered for it: the executor
    /// hands such an engine the conditions it checks itself too, so rows failing them
    /// need not be decoded.
    pub checks_any_filter: bool,
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities {
            index_access: true,
            row_locks: false,
            columnar: false,
            checks_any_filter: false,
        }
    }
}

/// A batch of rows with the ids they live at.
#[derive(Debug, Default)]
pub struct Batch {
    pub ids: Vec<RowId>,
    pub rows: Vec<Row>,
}

pub trait Cursor {
    /// Next batch, or None at the end.
    fn next_batch(&mut self) -> Result<Option<Batch>>;
}

/// Precision of a statistic; Unknown is never reported as zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    Exact(u64),
    Estimated(u64),
    Unknown,
}

#[derive(Debug, Clone, Copy)]
pub struct TableStats {
    pub rows: Stat,
    pub data_bytes: u64,
    pub free_bytes: u64,
    pub avg_row_bytes: u64,
}

/// Counters exposed through `SHOW STATUS` (MySQL's `Handler_*` and Quarry's I/O counters).
#[derive(Debug, Default)]
pub struct HandlerCounters {
    pub read_rnd_next: std::sync::atomic::AtomicU64,
    pub read_rnd: std::sync::atomic::AtomicU64,
    pub read_key: std::sync::atomic::AtomicU64,
    pub read_next: std::sync::atomic::AtomicU64,
    pub write: std::sync::atomic::AtomicU64,
    pub update: std::sync::atomic::AtomicU64,
    pub delete: std::sync::atomic::AtomicU64,
    pub io_read_calls: std::sync::atomic::AtomicU64,
    pub io_read_bytes: std::sync::atomic::AtomicU64,
    pub io_write_calls: std::sync::atomic::AtomicU64,
    pub io_write_bytes: std::sync::atomic::AtomicU64,
    /// Sort runs written to temporary files (ORDER BY over `quarry_sort_buffer_size`).
    pub sort_spills: std::sync::atomic::AtomicU64,
    /// Rows a hash aggregation, DISTINCT or UNION wrote to partition files (over
    /// `tmp_table_size`).
    pub agg_spilled_rows: std::sync::atomic::AtomicU64,
    /// Source rows an INSERT … SELECT reading its own target wrote to a temporary file
    /// (over `tmp_table_size`).
    pub insert_spilled_rows: std::sync::atomic::AtomicU64,
    /// Rows a hash join wrote to partition files (build side over `join_buffer_size`).
    pub join_spilled_rows: std::sync::atomic::AtomicU64,
    /// Rows aggregates were computed over a column vector at a time (the vectorised
    /// executor), counted when such an aggregate finishes.
    pub vector_rows: std::sync::atomic::AtomicU64,
    /// Rows a hash join's runtime filter left out of the scan feeding its probe side.
    pub runtime_filtered_rows: std::sync::atomic::AtomicU64,
}

thread_local! {
    /// Rows engines read on this thread (`HandlerCounters::add_read`).
    static ROWS_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl HandlerCounters {
    pub fn add(counter: &std::sync::atomic::AtomicU64, n: u64) {
        counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
    /// `n` rows or index entries an engine went through (`read_rnd_next`, `read_next`):
    /// counted for the thread too, so a statement knows the rows it examined (the slow
    /// log's Rows_examined; key lookups and fetches by row id are not rows examined).
    pub fn add_read(counter: &std::sync::atomic::AtomicU64, n: u64) {
        Self::add(counter, n);
        ROWS_READ.with(|c| c.set(c.get() + n));
    }
    /// Rows engines have read on this thread so far.
    pub fn rows_read_by_this_thread() -> u64 {
        ROWS_READ.with(std::cell::Cell::get)
    }
    pub fn snapshot(&self) -> Vec<(&'static str, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        vec![
            ("Handler_delete", self.delete.load(Relaxed)),
            ("Handler_read_key", self.read_key.load(Relaxed)),
            ("Handler_read_next", self.read_next.load(Relaxed)),
            ("Handler_read_rnd", self.read_rnd.load(Relaxed)),
            ("Handler_read_rnd_next", self.read_rnd_next.load(Relaxed)),
            ("Handler_update", self.update.load(Relaxed)),
            ("Handler_write", self.write.load(Relaxed)),
            ("Quarry_data_read_bytes", self.io_read_bytes.load(Relaxed)),
            ("Quarry_data_read_calls", self.io_read_calls.load(Relaxed)),
            ("Quarry_data_write_bytes", self.io_write_bytes.load(Relaxed)),
            ("Quarry_data_write_calls", self.io_write_calls.load(Relaxed)),
            (
                "Quarry_agg_spilled_rows",
                self.agg_spilled_rows.load(Relaxed),
            ),
            (
                "Quarry_join_spilled_rows",
                self.join_spilled_rows.load(Relaxed),
            ),
            (
                "Quarry_insert_spilled_rows",
                self.insert_spilled_rows.load(Relaxed),
            ),
            ("Quarry_sort_spilled_runs", self.sort_spills.load(Relaxed)),
            ("Quarry_vector_rows", self.vector_rows.load(Relaxed)),
            (
                "Quarry_runtime_filtered_rows",
                self.runtime_filtered_rows.load(Relaxed),
            ),
        ]
    }
}

/// One read of an index range, in key order or reversed.
#[derive(Debug, Clone)]
pub struct IndexScan<'a> {
    pub index: usize,
    /// Key bounds: prefixes of the index columns, already converted to the column types.
    pub lo: Bound<&'a [Value]>,
    pub hi: Bound<&'a [Value]>,
    /// Last key first.
    pub reverse: bool,
    /// Hand the key column values to the visitor (index-only reads); else it gets none.
    pub keys: bool,
    /// Resume strictly after this entry (a `pos` an earlier scan of the range handed out).
    pub after: Option<&'a [u8]>,
}

/// One index entry as a scan hands it out.
pub struct IndexEntry<'a> {
    pub id: RowId,
    /// Key column values when asked for: `Some` where the key gives the value back.
    pub keys: &'a [Option<Value>],
    /// Opaque position to resume a scan after this entry.
    pub pos: &'a [u8],
}

/// One open table.
pub trait Table: Send + Sync {
    fn schema(&self) -> &TableSchema;
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    /// Whether scans honour `filter` as [`ScanRequest::filter`] (the planner's offer; the
    /// answer must not depend on the constants, which differ between executions).
    fn pushdown(&self, _filter: &Pred) -> Support {
        Support::Unsupported
    }
    /// The number of rows a scan with `req` would return, when the engine knows it
    /// without producing them (COUNT(*) over a table with an accepted filter).
    fn count(&self, _req: &ScanRequest) -> Result<Option<u64>> {
        Ok(None)
    }
    /// About how many rows a scan with `req` would return, when the engine can tell
    /// cheaply — from a sample of the table, say — better than the planner's fixed guesses
    /// for conditions (the planner asks while choosing a join order).
    fn estimate(&self, _req: &ScanRequest) -> Option<u64> {
        None
    }
    /// The smallest and largest non-NULL value of column `col` among the rows a scan with
    /// `req` would return (NULLs when there are none), when the engine knows them without
    /// producing the rows — from zone maps, say. Values compare as `Value::total_cmp`.
    fn min_max(&self, _col: usize, _req: &ScanRequest) -> Result<Option<(Value, Value)>> {
        Ok(None)
    }
    /// GROUP BY the columns `group` over the rows a scan with `req` would return: one row
    /// per group, its values (the first met of values equal under [`Value::hash_key`]) then
    /// the aggregates (COUNTs as `Value::Int`, MIN/MAX as `Value::total_cmp` orders, NULL
    /// when no value counted), groups in the order a scan meets them. None when the engine
    /// cannot, or when more than `max_groups` groups turn up (the caller then aggregates
    /// the rows itself).
    fn aggregate(
        &self,
        _req: &ScanRequest,
        _group: &[usize],
        _aggs: &[ScanAgg],
        _max_groups: usize,
    ) -> Result<Option<Vec<Row>>> {
        Ok(None)
    }
    /// The rows a scan with `req` would return, as column vectors of the columns
    /// `req.columns` names, in that order (each as [`VectorType`] says): up to `parts`
    /// cursors over consecutive runs of the rows, all reading one state of the table taken
    /// when they are made, so their batches in cursor order are the scan's (in row-id
    /// order). None when the engine cannot (a column without a vector type, say): the
    /// caller then scans rows.
    fn scan_columns(&self, _req: &ScanRequest, _parts: usize) -> Result<Option<ColumnCursors<'_>>> {
        Ok(None)
    }
    /// Build, from the rows, the indexes of `new` that `kept` marks `None` (new index `n`
    /// is old index `kept[n]` otherwise), into files beside the table's for
    /// [`Engine::install_indexes`]; `progress` hears the rows read so far. A duplicate in a
    /// new UNIQUE index is error 1062 and leaves the table as it was. Returns false when
    /// the engine cannot change indexes in place (the caller copies the table instead).
    fn build_indexes(
        &self,
        _new: &[IndexSchema],
        _kept: &[Option<usize>],
        _progress: &dyn Fn(u64),
    ) -> Result<bool> {
        Ok(false)
    }
    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>>;
    /// Rows by id, in the order given (callers sort ids to read in file order).
    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>>;
    /// `fetch`, where only `columns` (None: all) are read: an engine may leave the
    /// others NULL, as a scan with [`ScanRequest::columns`] does. Callers that write a
    /// row back, keep it as a version or lock it fetch whole rows.
    fn fetch_columns(&self, ids: &[RowId], _columns: Option<&[usize]>) -> Result<Vec<Row>> {
        self.fetch(ids)
    }
    /// Visit the entries of an index range in order with their row ids (and, when asked,
    /// the key column values: `Some` where `index_covers` says the key gives the value
    /// back) until `visit` returns false.
    fn index_scan(
        &self,
        scan: &IndexScan,
        visit: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()>;
    /// The exact number of entries of `index` in the range, when the engine can count
    /// them without visiting each (COUNT(*) answered from the index).
    fn index_count(
        &self,
        _index: usize,
        _lo: Bound<&[Value]>,
        _hi: Bound<&[Value]>,
    ) -> Result<Option<u64>> {
        Ok(None)
    }
    /// Row ids whose key on `index` lies in the range, in key order.
    fn index_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Vec<RowId>> {
        let mut ids = Vec::new();
        self.index_scan(
            &IndexScan {
                index,
                lo,
                hi,
                reverse: false,
                keys: false,
                after: None,
            },
            &mut |e| {
                ids.push(e.id);
                Ok(true)
            },
        )?;
        Ok(ids)
    }
    /// The row ids of the entries of `index` whose leading columns equal each of `keys`,
    /// in the order of `keys`: an index join's probes of a batch at once, which an engine
    /// can answer under one lock without a scan's setup per key.
    fn index_lookups(&self, index: usize, keys: &[Vec<Value>]) -> Result<Vec<Vec<RowId>>> {
        lookups_by_range(self, index, keys)
    }
    /// The entry `row` at `id` has (or had) in `index`, as the bytes [`IndexEntry::pos`]
    /// hands out — entries sort by them. None when the engine cannot say.
    fn index_key(&self, _index: usize, _row: &Row, _id: RowId) -> Option<Vec<u8>> {
        None
    }
    /// Whether an entry (as [`Table::index_key`] gives it) lies between the key bounds
    /// `lo` and `hi` of `index`; None when the engine cannot say.
    fn index_key_in(
        &self,
        _index: usize,
        _entry: &[u8],
        _lo: Bound<&[Value]>,
        _hi: Bound<&[Value]>,
    ) -> Option<bool> {
        None
    }
    /// Per column of `index`: whether an index-only read gives its exact value back.
    fn index_covers(&self, index: usize) -> Vec<bool> {
        vec![
            false;
            self.schema()
                .indexes
                .get(index)
                .map_or(0, |i| i.columns.len())
        ]
    }
    /// Estimated entries in a key range (MySQL's `records_in_range`).
    fn records_in_range(
        &self,
        _index: usize,
        _lo: Bound<&[Value]>,
        _hi: Bound<&[Value]>,
    ) -> Result<Stat> {
        Ok(Stat::Unknown)
    }
    /// Distinct values of each key prefix of `index` (first column, first two, …), kept
    /// roughly current as data changes; `Unknown` where the engine cannot tell.
    fn index_distinct(&self, index: usize) -> Result<Vec<Stat>> {
        Ok(vec![
            Stat::Unknown;
            self.schema()
                .indexes
                .get(index)
                .map_or(0, |i| i.columns.len())
        ])
    }
    /// Reorganise for reading (`OPTIMIZE TABLE`); by default just make the data durable.
    fn optimize(&self) -> Result<()> {
        self.sync()
    }
    /// Recompute statistics now (`ANALYZE TABLE`).
    fn analyze(&self) -> Result<()> {
        Ok(())
    }
    fn insert(&self, row: Row) -> Result<RowId>;
    /// `insert`, telling `note` the new row's id before any reader can find the row
    /// (a transaction layer records the row as its own first). The default tells it
    /// afterwards; [`Capabilities::row_locks`] engines must tell it before.
    fn insert_noted(&self, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        let id = self.insert(row)?;
        note(id);
        Ok(id)
    }
    /// `update`, telling `note` the row's new id (when it moves) before any reader can
    /// find it there; as [`Table::insert_noted`].
    fn update_noted(&self, id: RowId, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        let nid = self.update(id, row)?;
        if nid != id {
            note(nid);
        }
        Ok(nid)
    }
    /// Put a deleted row back where it was (rolling back its delete); `Ok(false)` when
    /// the engine cannot, and the caller inserts it anew.
    fn restore(&self, _id: RowId, _row: Row) -> Result<bool> {
        Ok(false)
    }
    /// Lock the row `row` read at `id` for the current transaction (`exclusive`: for a
    /// change) and return its newest version, and where it is now — None when it is gone.
    /// Tables without transactions have nothing to lock and hand the row back.
    fn lock_row(&self, id: RowId, row: Row, _exclusive: bool) -> Result<Option<(RowId, Row)>> {
        Ok(Some((id, row)))
    }
    /// Lock the whole table for the current transaction (a bulk load writes alone);
    /// tables without transactions have nothing to lock.
    fn lock_table(&self, _exclusive: bool) -> Result<()> {
        Ok(())
    }
    /// Replace the row at `id`; returns its (possibly new) id.
    fn update(&self, id: RowId, row: Row) -> Result<RowId>;
    fn delete(&self, id: RowId) -> Result<()>;
    /// `update_noted` of a row the caller locked ([`Table::lock_row`]) and read as
    /// `old`, its newest version: a transaction layer keeps `old` as the row's earlier
    /// version, and an engine may take the old index keys from it, instead of reading
    /// the row again (a column engine decodes a chunk to read one row).
    fn update_known(
        &self,
        id: RowId,
        _old: &PackedRow,
        row: Row,
        note: &mut dyn FnMut(RowId),
    ) -> Result<RowId> {
        self.update_noted(id, row, note)
    }
    /// `delete` of a row locked and read as `old`; as [`Table::update_known`].
    fn delete_known(&self, id: RowId, _old: &PackedRow) -> Result<()> {
        self.delete(id)
    }
    fn truncate(&self) -> Result<()>;
    /// Start/end of a bulk load: writes may be buffered until `end_bulk`, flushed in
    /// blocks of `write_buffer` bytes (the session's `read_buffer_size`, which is also
    /// MyISAM's record write cache size).
    fn begin_bulk(&self, _write_buffer: usize) {}
    fn end_bulk(&self) -> Result<()> {
        self.flush()
    }
    /// ALTER TABLE … DISABLE KEYS (`true`) / ENABLE KEYS: an engine may defer the
    /// non-unique indexes' entries until keys are enabled again (MyISAM's bulk-load
    /// mode), as long as every index read still sees them. False: no such option.
    fn set_keys_disabled(&self, _disabled: bool) -> Result<bool> {
        Ok(false)
    }
    /// Make everything written so far reach the file system (and disk with `sync`).
    fn flush(&self) -> Result<()>;
    fn sync(&self) -> Result<()>;
    fn stats(&self) -> TableStats;
    /// Verify checksums and that every index matches the data; returns problems found.
    fn check(&self) -> Result<Vec<String>>;
}

/// What [`Table::salvage`] met.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Salvaged {
    /// Rows read and given.
    pub rows: u64,
    /// Records that failed their checksum or did not decode (a damaged stretch whose
    /// records cannot be told apart counts once).
    pub lost_records: u64,
    /// Bytes passed over looking for the next readable record (a damaged record
    /// header hides where the next one starts).
    pub skipped_bytes: u64,
}

/// Where a table's files live: `<datadir>/<db>/<table>`.
#[derive(Debug, Clone)]
pub struct TablePath {
    pub dir: PathBuf,
    pub name: String,
}

impl TablePath {
    pub fn new(dir: &Path, name: &str) -> TablePath {
        TablePath {
            dir: dir.to_path_buf(),
            name: name.to_string(),
        }
    }
    pub fn file(&self, ext: &str) -> PathBuf {
        self.dir.join(format!("{}.{ext}", self.name))
    }

    /// `db.table`, as messages name the table.
    pub fn qualified(&self) -> String {
        let db = self.dir.file_name().unwrap_or_default().to_string_lossy();
        format!("{db}.{}", self.name)
    }

    /// What the server prints when a unique index of a table written before the plain
    /// collation folded accents holds `rows` rows whose keys equal another's now.
    pub fn equal_keys_warning(&self, index: &str, rows: u64) -> String {
        format!(
            "table {}: unique index {index} holds {rows} row(s) whose key now equals another \
             row's (utf8mb4_general_ci folds accents since datadir layout 6, as MariaDB's \
             does: 'Koln' = 'Köln'); they stay and new rows with such a key are refused: \
             UPDATE or DELETE them to make the keys unique",
            self.qualified()
        )
    }
}

pub trait Engine: Send + Sync {
    fn name(&self) -> &'static str;
    fn comment(&self) -> &'static str;
    fn create(&self, path: &TablePath, schema: &TableSchema) -> Result<()>;
    fn open(
        &self,
        path: &TablePath,
        schema: &TableSchema,
        counters: Arc<HandlerCounters>,
    ) -> Result<Arc<dyn Table>>;
    /// REPAIR TABLE's reading of a table's files, closed (one too damaged to open
    /// included): every row its data still holds, given to `each` in storage order, past
    /// records that fail their checksum or do not decode (counted, not given). None: the
    /// engine reads no further than its scan does (REPAIR then rebuilds from that).
    fn salvage(
        &self,
        _path: &TablePath,
        _schema: &TableSchema,
        _each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<Option<Salvaged>> {
        Ok(None)
    }
    fn drop_table(&self, path: &TablePath) -> Result<()>;
    fn rename(&self, from: &TablePath, to: &TablePath) -> Result<()>;
    /// Put the indexes a table's [`Table::build_indexes`] made in place, once its handle
    /// is no longer used: new index `n` is old index `kept[n]`, or the one built for `n`.
    /// `commit` makes the new table definition durable; a crash before it leaves the old
    /// definition (whose indexes are then rebuilt from the rows at open), a crash after it
    /// the new one.
    fn install_indexes(
        &self,
        _path: &TablePath,
        _kept: &[Option<usize>],
        _commit: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        Err(Error::unsupported("changing indexes in place"))
    }
}

/// Engines by name. Several SQL names may map to one engine (`InnoDB` → row engine).
#[derive(Default)]
pub struct EngineRegistry {
    engines: Vec<Arc<dyn Engine>>,
    aliases: HashMap<String, (usize, &'static str)>,
}

impl EngineRegistry {
    pub fn register(&mut self, engine: Arc<dyn Engine>, sql_names: &[&'static str]) {
        let idx = self.engines.len();
        self.engines.push(engine);
        for n in sql_names {
            self.aliases.insert(n.to_ascii_lowercase(), (idx, n));
        }
    }
    /// Resolve an `ENGINE=` name; returns the engine and the canonical SQL name.
    pub fn resolve(&self, name: &str) -> Option<(Arc<dyn Engine>, &'static str)> {
        self.aliases
            .get(&name.to_ascii_lowercase())
            .map(|(i, n)| (self.engines[*i].clone(), *n))
    }
    /// (SQL name, engine) pairs for SHOW ENGINES.
    pub fn names(&self) -> Vec<(&'static str, Arc<dyn Engine>)> {
        let mut v: Vec<_> = self
            .aliases
            .values()
            .map(|(i, n)| (*n, self.engines[*i].clone()))
            .collect();
        v.sort_by_key(|(n, _)| *n);
        v
    }
}

/// [`Table::index_lookups`] as one [`Table::index_range`] per key (the default, and what a
/// wrapper falls back to when it cannot hand a batch through).
pub fn lookups_by_range<T: Table + ?Sized>(
    t: &T,
    index: usize,
    keys: &[Vec<Value>],
) -> Result<Vec<Vec<RowId>>> {
    keys.iter()
        .map(|k| t.index_range(index, Bound::Included(k), Bound::Included(k)))
        .collect()
}
