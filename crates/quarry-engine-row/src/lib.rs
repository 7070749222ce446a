//! The row engine: one data file per table, MyISAM-style records, B+tree indexes.
//!
//! ```text
//!  <table>.qrd  ┌────────────── 4 KiB header (magic, version, row format, crc) ─┐
//!               │ rec: status u8 │ slot u32 │ len u32 │ crc32c u32 │ payload…   │
//!               │ rec …  (row id = file offset of the record header)           │
//!               └───────────────────────────────────────────────────────────────┘
//! ```
//!
//! * Scans read the file sequentially in `read_buffer_size` blocks (rule 1), never one
//!   `read()` per record; a big table's in runs, one per core at a time (`split_scan`).
//! * The planner's estimates of conditions come from a sample of the rows (`sample`).
//! * Appends go through a write buffer; its first flush ends on a 4 KiB boundary so every
//!   later write is block-aligned, and bulk loads flush in 128 KiB writes.
//! * Deleted records keep their slot; a later insert whose record fits reuses it (first
//!   fit by size, bounded waste).
//! * Every record carries a CRC32C of its payload: a corrupt record is an error, never data.
//! * Each index (PRIMARY, UNIQUE, secondary) is a B+tree in `<table>.i<n>.qix` whose
//!   entries are memcomparable keys followed by the row id (`keycode`), in pages served by
//!   the engine's buffer pool. Bulk loads collect non-unique entries and sort them into the
//!   tree at the end of the bracket (bottom-up when the tree is empty).
//! * A column whose comment contains `columnar_storage` is kept a second time in
//!   `<table>.cols/<column>.column` (`sidecol`, seed 002); conditions on it alone are
//!   pushed to the table and answered from that file.
//! * With the write-ahead log (the engine's buffer pool has one), the data file is a
//!   `LoggedFile` and index pages are logged by the pool: recovery brings both to the
//!   last committed state. Side files, and indexes of an engine without a log, are made
//!   consistent by rebuilding: a `<table>.qdirty` marker is written before the first
//!   change after a sync and removed by the next sync; a table opened with the marker
//!   present (or whose index entry counts disagree with the data) gets them rebuilt.
//!
//! * Several transactions write at once (rows are locked above, in `quarry-txn`), and the
//!   log's physical undo of an unfinished one must not touch another's bytes: a slot a
//!   transaction freed is parked until its log transaction ends and is released (the
//!   server releases it once no snapshot can read the row that was there), an append
//!   is logged with an undo image that marks the record deleted instead of cutting the
//!   file, and `restore` puts a row deleted by a rolled-back transaction back at its id.
//!
//! Must not touch: SQL, sessions, transactions (undo is done above through this API).

mod check;
mod codec;
#[cfg(test)]
mod crash_tests;
mod fetch;
pub mod keycode;
pub mod keyrange;
mod records;
mod salvage;
mod sample;
mod sidecol;
mod split_scan;
mod vectors;
mod walk;

use keyrange::{as_slice_bound, ByteRange};
use records::RecordReader;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use quarry_common::{Error, Result, Row, TypeKind, Value};
use quarry_storage::wal::TxnId;
use quarry_storage::{BTree, BufferPool, ExternalSorter, LoggedFile, Wal};
use quarry_storage_api::{
    Batch, Capabilities, Cursor, Engine, HandlerCounters, IndexEntry, IndexScan, IndexSchema, Pred,
    RowFormat, RowId, Salvaged, ScanRequest, Stat, Support, Table, TablePath, TableSchema,
    TableStats,
};

pub use codec::{decode, decode_some, encode, fixed_width};
pub use sidecol::{side_file, wants_side_file};

const MAGIC: &[u8; 8] = b"QRYROWD\0";
/// 2: text keys under the plain collation are utf8mb4_general_ci's weights (accents
/// folded). Files of version 1 keyed them by upper case only; their indexes are rebuilt
/// at open, then the header says 2.
const VERSION: u32 = 2;
const VERSION_CASE_ONLY_KEYS: u32 = 1;
const HEADER_SIZE: u64 = 4096;
const REC_HDR: usize = 13;
const LIVE: u8 = 0xA1;
const DELETED: u8 = 0xD0;
const WRITE_BUFFER: usize = 128 * 1024;
/// Bytes between the records `State::marks` lists (tests split small files).
const MARK_EVERY: u64 = if cfg!(test) { 4096 } else { 1 << 20 };
/// A file shorter than this is scanned as one part however many are asked for.
const SPLIT_FROM: u64 = if cfg!(test) { 16 * 1024 } else { 8 << 20 };
/// A buffer grown past this by one huge record is given back after it.
const KEEP_BUFFER: usize = 1 << 20;

/// The row engine and the buffer pool its index pages live in.
pub struct RowEngine {
    pool: Arc<BufferPool>,
}

impl RowEngine {
    pub fn new(pool: Arc<BufferPool>) -> RowEngine {
        RowEngine { pool }
    }

    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
}

impl Default for RowEngine {
    /// A 64 MiB pool with 8 page-table partitions (tests and tools).
    fn default() -> RowEngine {
        RowEngine::new(Arc::new(BufferPool::new(64 << 20, 8)))
    }
}

/// Index files and the dirty marker of a table, whatever their number.
fn side_files(path: &TablePath) -> Vec<std::path::PathBuf> {
    let mut out = vec![path.file("qdirty")];
    let prefix = format!("{}.i", path.name);
    if let Ok(rd) = std::fs::read_dir(&path.dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let base = name
                .strip_suffix(".new")
                .or_else(|| name.strip_suffix(".tmp"))
                .unwrap_or(&name);
            if base.starts_with(&prefix) && base.ends_with(".qix") {
                let middle = &base[prefix.len()..base.len() - 4];
                if !middle.is_empty() && middle.bytes().all(|b| b.is_ascii_digit()) {
                    out.push(e.path());
                }
            }
        }
    }
    out
}

/// The folder of a table's column side-files.
fn remove_cols_dir(path: &TablePath) -> Result<()> {
    let dir = path.file("cols");
    match std::fs::remove_dir_all(&dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io(dir.display(), e)),
        _ => Ok(()),
    }
}

fn remove_if_exists(f: &std::path::Path) -> Result<()> {
    remove_logged(None, f)
}

/// Remove a file, telling the log first so none of its records reach a later file of
/// the same name.
fn remove_logged(wal: Option<&Arc<Wal>>, f: &std::path::Path) -> Result<()> {
    if let Some(w) = wal {
        w.forget(f)?;
    }
    match std::fs::remove_file(f) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::io(f.display(), e)),
    }
}

/// Rename a file, logged first (recovery applies later records to the new name).
fn rename_logged(
    wal: Option<&Arc<Wal>>,
    from: &std::path::Path,
    to: &std::path::Path,
) -> Result<()> {
    // Finishing an interrupted DDL at startup: this file already moved.
    if !from.exists() && to.exists() {
        return Ok(());
    }
    if let Some(w) = wal {
        w.rename(from, to)?;
    }
    std::fs::rename(from, to).map_err(|e| Error::io(from.display(), e))
}

impl Engine for RowEngine {
    fn name(&self) -> &'static str {
        "row"
    }
    fn comment(&self) -> &'static str {
        "Quarry row engine: MyISAM-style records (FIXED/DYNAMIC), checksummed, transactional above the engine"
    }
    fn create(&self, path: &TablePath, schema: &TableSchema) -> Result<()> {
        // Leftovers of an earlier table of this name must not be taken for its indexes.
        for f in side_files(path) {
            remove_logged(self.pool.wal(), &f)?;
        }
        remove_cols_dir(path)?;
        let file = path.file("qrd");
        remove_logged(self.pool.wal(), &file)?;
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .map_err(|e| Error::io(file.display(), e))?;
        f.write_all(&header(schema.row_format))
            .map_err(|e| Error::io(file.display(), e))?;
        f.sync_all().map_err(|e| Error::io(file.display(), e))?;
        File::open(&path.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(path.dir.display(), e))?;
        Ok(())
    }
    fn open(
        &self,
        path: &TablePath,
        schema: &TableSchema,
        counters: Arc<HandlerCounters>,
    ) -> Result<Arc<dyn Table>> {
        Ok(Arc::new(RowTable::open(
            path,
            schema.clone(),
            counters,
            self.pool.clone(),
        )?))
    }
    fn salvage(
        &self,
        path: &TablePath,
        schema: &TableSchema,
        each: &mut dyn FnMut(Row) -> Result<()>,
    ) -> Result<Option<Salvaged>> {
        salvage::salvage(path, schema, each).map(Some)
    }
    fn drop_table(&self, path: &TablePath) -> Result<()> {
        let wal = self.pool.wal();
        remove_logged(wal, &path.file("qrd"))?;
        for f in side_files(path) {
            remove_logged(wal, &f)?;
        }
        remove_cols_dir(path)
    }
    fn rename(&self, from: &TablePath, to: &TablePath) -> Result<()> {
        let wal = self.pool.wal();
        rename_logged(wal, &from.file("qrd"), &to.file("qrd"))?;
        let cols = from.file("cols");
        if cols.exists() {
            std::fs::rename(&cols, to.file("cols")).map_err(|e| Error::io(cols.display(), e))?;
        }
        for f in side_files(from) {
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let target = to
                .dir
                .join(format!("{}{}", to.name, &name[from.name.len()..]));
            if f.exists() {
                rename_logged(wal, &f, &target)?;
            }
        }
        Ok(())
    }
    fn install_indexes(
        &self,
        path: &TablePath,
        kept: &[Option<usize>],
        commit: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let wal = self.pool.wal();
        let mv = |from: &std::path::Path, to: &std::path::Path| rename_logged(wal, from, to);
        // Old and new numbering overlap: every file first takes a staging name.
        for (n, k) in kept.iter().enumerate() {
            let from = match k {
                Some(m) => index_file(path, *m, ""),
                None => index_file(path, n, ".new"),
            };
            mv(&from, &index_file(path, n, ".tmp"))?;
        }
        for f in side_files(path) {
            if f.extension().is_some_and(|e| e == "qix") {
                remove_logged(wal, &f)?;
            }
        }
        for n in 0..kept.len() {
            mv(&index_file(path, n, ".tmp"), &index_file(path, n, ""))?;
        }
        commit()?;
        remove_if_exists(&path.file("qdirty"))
    }
}

/// Whether an index keys a text column under the plain collation (whose keys changed
/// with data-file version 2).
fn keys_text(schema: &TableSchema) -> bool {
    schema.indexes.iter().any(|ix| {
        ix.columns.iter().any(|&c| {
            let ty = &schema.columns[c].ty;
            ty.is_string() && !ty.is_binary() && ty.coll.is_plain()
        })
    })
}

fn header(format: RowFormat) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_SIZE as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12] = match format {
        RowFormat::Fixed => 1,
        RowFormat::Dynamic => 2,
    };
    let crc = crc32c::crc32c(&h[..4092]);
    h[4092..].copy_from_slice(&crc.to_le_bytes());
    h
}

struct State {
    /// File length including the unflushed write buffer.
    end: u64,
    /// Appended records not yet written; they start at `wbuf_start`.
    wbuf: Vec<u8>,
    wbuf_start: u64,
    /// File offsets of the records that start in `wbuf` (undo of an append marks them
    /// deleted).
    wbuf_recs: Vec<u64>,
    bulk: bool,
    /// ALTER TABLE … DISABLE KEYS: entries of the non-unique indexes collect in `pending`
    /// across statements until ENABLE KEYS, or until something reads or removes entries
    /// of the table's indexes (`settle`). Committed rows may then be missing from the
    /// index files, so the dirty marker stands meanwhile: a crash rebuilds them at open.
    keys_disabled: bool,
    /// Flush size while `bulk` (bytes).
    write_buffer: usize,
    /// Free slots by payload capacity, as offsets: the lowest is reused first, so slots
    /// freed in file order (a DELETE's scan) are refilled in file order and their writes
    /// append to one pending extent; undo takes one back in O(log n).
    free: BTreeMap<u32, BTreeSet<u64>>,
    /// Slots freed by transactions still open, as offset → slot: reused only once their
    /// deleter ended, so undo of a delete never overwrites another transaction's row.
    quarantine: HashMap<TxnId, BTreeMap<u64, u32>>,
    free_bytes: u64,
    live_rows: u64,
    /// Offsets of records, each at least `MARK_EVERY` bytes past the one before (from the
    /// first record's, which is not listed): where the parts of a split scan start.
    /// Records never move and a slot is reused whole, so these stay record starts until
    /// the file is cut.
    marks: Vec<u64>,
    /// Index entries collected during a bulk bracket or while keys are disabled, per
    /// index (non-unique ones only), sorted in bounded memory (`SORT_BUDGET` each) when
    /// they go into the trees.
    pending: Vec<ExternalSorter>,
    /// The dirty marker exists (a change since the last sync).
    marked_dirty: bool,
    scratch: Vec<u8>,
    /// Column side-files (`columnar_storage` columns).
    side: Vec<sidecol::SideColumn>,
}

pub struct RowTable {
    name: String,
    path: TablePath,
    pool: Arc<BufferPool>,
    schema: TableSchema,
    file: LoggedFile,
    counters: Arc<HandlerCounters>,
    state: Mutex<State>,
    fixed_slot: Option<u32>,
    trees: Vec<BTree>,
    dirty_marker: std::path::PathBuf,
    /// Rows inserted, updated or deleted since open (ages the index statistics).
    changes: std::sync::atomic::AtomicU64,
    index_stats: Mutex<Vec<Option<IndexStat>>>,
    /// Rows for estimates of conditions (`sample`).
    sample: Mutex<Option<sample::Sample>>,
    /// `State::keys_disabled`, readable without the lock by index reads (which settle).
    keys_off: AtomicBool,
}

/// Distinct key-prefix counts of one index, as of `rows_at` live rows.
struct IndexStat {
    rows_at: u64,
    changes_at: u64,
    distinct: Vec<u64>,
}

/// Distinct counts measured at `then` rows, scaled to `now` rows (a prefix that was
/// unique stays unique; others keep their rows per value).
fn scale_distinct(d: &[u64], then: u64, now: u64) -> Vec<Stat> {
    d.iter()
        .map(|&x| {
            let v = if then == 0 || x >= then {
                now.max(x.min(now))
            } else {
                ((x as f64) * now as f64 / then as f64).round().max(1.0) as u64
            };
            Stat::Estimated(v.min(now.max(1)))
        })
        .collect()
}

impl RowTable {
    pub fn open(
        path: &TablePath,
        schema: TableSchema,
        counters: Arc<HandlerCounters>,
        pool: Arc<BufferPool>,
    ) -> Result<RowTable> {
        let fname = path.file("qrd");
        if !fname.exists() {
            return Err(Error::io(
                fname.display(),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        let file = LoggedFile::open_cached(&fname, pool.wal(), false, Some(pool.data_cache()))?;
        let mut h = vec![0u8; HEADER_SIZE as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|_| Error::corrupt(&path.name))?;
        let crc = u32::from_le_bytes(h[4092..].try_into().unwrap());
        if &h[..8] != MAGIC || crc != crc32c::crc32c(&h[..4092]) {
            return Err(Error::corrupt(&path.name));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        if version != VERSION && version != VERSION_CASE_ONLY_KEYS {
            return Err(Error::new(
                1033,
                format!(
                    "Incorrect information in file: '{}' (format version {version})",
                    fname.display()
                ),
            ));
        }
        let len = file.len();
        let fixed_slot =
            (schema.row_format == RowFormat::Fixed).then(|| fixed_width(&schema.columns) as u32);
        let dirty_marker = path.file("qdirty");
        let was_dirty = dirty_marker.exists();
        let reindex = version == VERSION_CASE_ONLY_KEYS && keys_text(&schema);
        // Under the marker the indexes are rebuilt anyway: one an interrupted index build
        // left unreadable is started afresh instead of failing the open.
        let trees = (0..schema.indexes.len())
            .map(|n| {
                let file = path.file(&format!("i{n}.qix"));
                match BTree::open(pool.clone(), &file) {
                    Err(_) if was_dirty => {
                        remove_logged(pool.wal(), &file)?;
                        BTree::open(pool.clone(), &file)
                    }
                    r => r,
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let side = schema
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.columnar)
            .map(|(i, c)| {
                sidecol::SideColumn::open(side_file(&path.dir, &path.name, &c.name), i, c)
            })
            .collect::<Result<Vec<_>>>()?;
        let t = RowTable {
            name: path.name.clone(),
            path: path.clone(),
            pool: pool.clone(),
            schema,
            file,
            counters,
            fixed_slot,
            trees,
            dirty_marker,
            changes: std::sync::atomic::AtomicU64::new(0),
            index_stats: Mutex::new(Vec::new()),
            sample: Mutex::new(None),
            keys_off: AtomicBool::new(false),
            state: Mutex::new(State {
                end: len,
                wbuf: Vec::new(),
                wbuf_start: len,
                wbuf_recs: Vec::new(),
                bulk: false,
                keys_disabled: false,
                write_buffer: WRITE_BUFFER,
                free: BTreeMap::new(),
                quarantine: HashMap::new(),
                free_bytes: 0,
                live_rows: 0,
                marks: Vec::new(),
                pending: Vec::new(),
                marked_dirty: was_dirty,
                scratch: Vec::new(),
                side,
            }),
        }
        .rebuild(was_dirty || reindex)?;
        if version == VERSION_CASE_ONLY_KEYS {
            // After the rebuild (which synced): a crash before this leaves version 1 and
            // a rebuild at the next open.
            t.file.write_at(&header(t.schema.row_format), 0)?;
            t.file.sync()?;
        }
        Ok(t)
    }

    /// Scan the whole file once for the free list and row count; rebuild the indexes from
    /// the data when the last change was not synced (`force`) or their counts disagree.
    fn rebuild(self, force: bool) -> Result<RowTable> {
        let mut free: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        let mut free_bytes = 0;
        let mut live = 0;
        let mut marks = Vec::new();
        let end = self.state.lock().end;
        let mut reader = RecordReader::new(&self, HEADER_SIZE, end, 1 << 20);
        reader.stop_at_torn_tail = true;
        while let Some((off, status, slot, _)) = reader.next_record()? {
            if off >= marks.last().copied().unwrap_or(HEADER_SIZE) + MARK_EVERY {
                marks.push(off);
            }
            if status == LIVE {
                live += 1;
            } else {
                free.entry(slot).or_default().insert(off);
                free_bytes += slot as u64 + REC_HDR as u64;
            }
        }
        if let Some(cut) = reader.torn_tail {
            // A bulk statement's write buffer is written in aligned blocks that may end
            // inside a record; when the statement never finished, recovery marked that
            // record deleted but the rest of it never reached the log. It holds nothing.
            let db = self
                .path
                .dir
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            eprintln!(
                "quarry: table {db}.{}: cut an unfinished record at the end of its data file \
                 (offset {cut}, {} bytes)",
                self.name,
                end - cut
            );
            self.file.truncate_and_commit(cut)?;
            let mut st = self.state.lock();
            st.end = cut;
            st.wbuf_start = cut;
        }
        {
            let mut st = self.state.lock();
            st.free = free;
            st.free_bytes = free_bytes;
            st.live_rows = live;
            st.marks = marks;
            st.pending = (0..self.schema.indexes.len())
                .map(|_| ExternalSorter::new(SORT_BUDGET))
                .collect();
        }
        let mut stale = force;
        for t in &self.trees {
            stale |= t.len()? != live;
        }
        if stale && !self.trees.is_empty() {
            self.rebuild_indexes()?;
        }
        let side_stale = self
            .state
            .lock()
            .side
            .iter()
            .any(|s| force || s.live() != live);
        if side_stale {
            self.rebuild_side_files()?;
        }
        if force {
            self.sync()?;
        }
        Ok(self)
    }

    /// Recreate the column side-files from the data file.
    fn rebuild_side_files(&self) -> Result<()> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st)?;
        for s in st.side.iter_mut() {
            s.reset()?;
        }
        let mut reader = RecordReader::new(self, HEADER_SIZE, st.end, 1 << 20);
        while let Some((off, status, _, payload)) = reader.next_record()? {
            if status == LIVE {
                let row = decode(&self.schema.columns, self.schema.row_format, payload)?;
                for s in st.side.iter_mut() {
                    s.add(off, &row[s.col]);
                }
            }
        }
        for s in st.side.iter_mut() {
            s.sync()?;
        }
        Ok(())
    }

    /// Row ids matching `filter` from the side files, sorted; None when a part of it is
    /// not on one side-file column, or (`sample`) when a side file's first entries say
    /// the filter keeps too many rows for fetching them one by one to pay.
    fn side_matches(
        &self,
        filter: &Pred,
        block: usize,
        sample: bool,
    ) -> Result<Option<Vec<RowId>>> {
        let parts: Vec<&Pred> = match filter {
            Pred::And(v) => v.iter().collect(),
            p => vec![p],
        };
        let mut st = self.state.lock();
        let mut result: Option<Vec<RowId>> = None;
        for p in parts {
            let cols = p.columns();
            let Some(s) = st.side.iter_mut().find(|s| cols == [s.col]) else {
                return Ok(None);
            };
            let Some(ids) = s.matching(p, block, sample.then_some(8192))? else {
                return Ok(None);
            };
            result = Some(match result {
                None => ids,
                Some(prev) => {
                    let keep: std::collections::HashSet<RowId> = ids.into_iter().collect();
                    prev.into_iter().filter(|id| keep.contains(id)).collect()
                }
            });
        }
        Ok(result)
    }

    /// Recreate every index from the data file: entries sorted, trees built bottom-up.
    /// A unique index may then hold equal keys (rows written when the plain collation
    /// did not fold accents): they stay, and the server says so.
    fn rebuild_indexes(&self) -> Result<()> {
        let ixs: Vec<&IndexSchema> = self.schema.indexes.iter().collect();
        let entries = self.sorted_entries(&ixs, &|_| {})?;
        for ((tree, sorter), ix) in self.trees.iter().zip(entries).zip(&ixs) {
            tree.clear()?;
            let cols = self.key_cols(ix);
            let mut prev: Vec<u8> = Vec::new();
            let mut equal = 0u64;
            let sorted = sorter.finish()?.inspect(|e| {
                let Ok(e) = e else { return };
                let key = &e[..e.len().saturating_sub(8)];
                if ix.unique && key == prev && keycode::has_null(e, &cols) == Some(false) {
                    equal += 1;
                }
                prev.clear();
                prev.extend_from_slice(key);
            });
            bulk_load_all(tree, Box::new(sorted))?;
            if equal > 0 {
                eprintln!("quarry: {}", self.path.equal_keys_warning(&ix.name, equal));
            }
        }
        Ok(())
    }

    /// Distinct values of each key prefix of index `index`, by one pass over its entries
    /// (entries not yet in the tree during a bulk load are left out).
    fn count_distinct(&self, index: usize) -> Result<Vec<u64>> {
        self.settle_deferred()?;
        let ix = &self.schema.indexes[index];
        let cols = self.key_cols(ix);
        let n = cols.len();
        let mut distinct = vec![0u64; n];
        let mut prev: Vec<u8> = Vec::new();
        let mut prev_ends: Vec<usize> = Vec::new();
        self.trees[index].scan(Bound::Unbounded, Bound::Unbounded, &mut |e| {
            let ends = keycode::column_ends(e, &cols)
                .ok_or_else(|| Error::corrupt(format!("index {} entry", ix.name)))?;
            let first_diff = if prev_ends.is_empty() {
                0
            } else {
                (0..n)
                    .find(|&j| e[..ends[j]] != prev[..prev_ends[j]])
                    .unwrap_or(n)
            };
            for d in &mut distinct[first_diff..] {
                *d += 1;
            }
            prev.clear();
            prev.extend_from_slice(e);
            prev_ends = ends;
            Ok(true)
        })?;
        Ok(distinct)
    }

    /// The index entry of `row` (stored at `id`) in `ix`.
    fn entry(&self, ix: &IndexSchema, row: &Row, id: RowId) -> Vec<u8> {
        let mut out = self.key_prefix(ix, row);
        out.extend_from_slice(&id.to_be_bytes());
        out
    }

    /// The encoded key of `row` in `ix` (every entry of that key starts with it).
    fn key_prefix(&self, ix: &IndexSchema, row: &Row) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        for (i, &c) in ix.columns.iter().enumerate() {
            keycode::encode_column(&row[c], &self.key_col(ix, i), &mut out);
        }
        out
    }

    /// How the columns of `ix` are stored in its entries.
    fn key_cols(&self, ix: &IndexSchema) -> Vec<keycode::KeyCol> {
        keyrange::key_cols(&self.schema, ix)
    }

    /// How column `i` of `ix` is stored in its entries.
    fn key_col(&self, ix: &IndexSchema, i: usize) -> keycode::KeyCol {
        keycode::KeyCol {
            ty: self.schema.columns[ix.columns[i]].ty,
            prefix: ix.prefix[i],
            desc: ix.desc[i],
        }
    }

    /// Before the first change after a sync: note on disk that the indexes may be ahead
    /// of or behind the data, so a crash leads to a rebuild at the next open.
    fn mark_dirty(&self, st: &mut State) -> Result<()> {
        // With the log, indexes recover with the data; side files are still rebuilt.
        let logged = self.pool.wal().is_some();
        let rebuilt = st.side.is_empty() && (logged || self.trees.is_empty());
        if st.marked_dirty || rebuilt {
            return Ok(());
        }
        self.write_marker(st)
    }

    fn write_marker(&self, st: &mut State) -> Result<()> {
        File::create(&self.dirty_marker)
            .and_then(|f| f.sync_all())
            .map_err(|e| Error::io(self.dirty_marker.display(), e))?;
        st.marked_dirty = true;
        Ok(())
    }

    fn flush_locked(&self, st: &mut State) -> Result<()> {
        for s in st.side.iter_mut() {
            let n = s.flush()?;
            if n > 0 {
                HandlerCounters::add(&self.counters.io_write_calls, 1);
                HandlerCounters::add(&self.counters.io_write_bytes, n);
            }
        }
        if st.wbuf.is_empty() {
            return Ok(());
        }
        let end = st.wbuf_start + st.wbuf.len() as u64;
        let starts = st.wbuf_recs.partition_point(|&r| r < end);
        if Wal::thread_txn() == 0 {
            // Nothing to undo: no undo image to build.
            self.file.write_at(&st.wbuf, st.wbuf_start)?;
        } else {
            let mut undo = st.wbuf.clone();
            for &r in &st.wbuf_recs[..starts] {
                undo[(r - st.wbuf_start) as usize] = DELETED;
            }
            self.file.write_at_undo(&st.wbuf, st.wbuf_start, &undo)?;
        }
        st.wbuf_recs.drain(..starts);
        HandlerCounters::add(&self.counters.io_write_calls, 1);
        HandlerCounters::add(&self.counters.io_write_bytes, st.wbuf.len() as u64);
        st.wbuf_start += st.wbuf.len() as u64;
        st.wbuf.clear();
        if st.wbuf.capacity() > KEEP_BUFFER.max(st.write_buffer * 2) {
            st.wbuf = Vec::new();
        }
        Ok(())
    }

    fn check_unique(&self, row: &Row, ignore: Option<RowId>) -> Result<()> {
        for (ix, tree) in self.schema.indexes.iter().zip(&self.trees) {
            if !ix.unique || ix.columns.iter().any(|&c| row[c].is_null()) {
                continue;
            }
            let key = self.key_prefix(ix, row);
            let mut taken = false;
            tree.scan_prefix(&key, &mut |e| {
                taken = Some(keycode::row_id(e)) != ignore;
                Ok(!taken)
            })?;
            if taken {
                return Err(duplicate(ix, row));
            }
        }
        Ok(())
    }

    /// Sorted entries of each index in `ixs` for every live row, from one pass over the
    /// data file.
    fn sorted_entries(
        &self,
        ixs: &[&IndexSchema],
        progress: &dyn Fn(u64),
    ) -> Result<Vec<ExternalSorter>> {
        let end = self.state.lock().end;
        let mut sorters: Vec<ExternalSorter> = ixs
            .iter()
            .map(|_| ExternalSorter::new(SORT_BUDGET))
            .collect();
        let mut reader = RecordReader::new(self, HEADER_SIZE, end, 1 << 20);
        let mut rows = 0u64;
        while let Some((off, status, _, payload)) = reader.next_record()? {
            if status == LIVE {
                let row = decode(&self.schema.columns, self.schema.row_format, payload)?;
                for (sorter, ix) in sorters.iter_mut().zip(ixs) {
                    sorter.push(&self.entry(ix, &row, off))?;
                }
                rows += 1;
                if rows.is_multiple_of(65536) {
                    progress(rows);
                }
            }
        }
        progress(rows);
        Ok(sorters)
    }

    /// Load sorted entries of `ix` into the empty tree `tree`; for a UNIQUE index, two
    /// entries with the same key (and no NULL in it) are error 1062 naming that key.
    fn load_checked(
        &self,
        tree: &BTree,
        ix: &IndexSchema,
        sorted: Box<dyn Iterator<Item = Result<Vec<u8>>>>,
    ) -> Result<u64> {
        if !ix.unique {
            return bulk_load_all(tree, sorted);
        }
        let cols = self.key_cols(ix);
        let mut prev: Vec<u8> = Vec::new();
        let checked = sorted.map(move |e| {
            let e = e?;
            let key = &e[..e.len() - 8];
            let has_null = || {
                keycode::has_null(&e, &cols)
                    .ok_or_else(|| Error::corrupt(format!("index {} entry", ix.name)))
            };
            if key == prev.as_slice() && !has_null()? {
                let row = self
                    .fetch(&[keycode::row_id(&e)])?
                    .pop()
                    .ok_or_else(|| Error::corrupt(&self.name))?;
                return Err(duplicate(ix, &row));
            }
            prev.clear();
            prev.extend_from_slice(key);
            Ok(e)
        });
        bulk_load_all(tree, Box::new(checked))
    }

    fn index_add(&self, st: &mut State, row: &Row, id: RowId) -> Result<()> {
        for (n, ix) in self.schema.indexes.iter().enumerate() {
            let e = self.entry(ix, row, id);
            if (st.bulk || st.keys_disabled) && !ix.unique {
                st.pending[n].push(&e)?;
            } else {
                self.trees[n].insert(&e)?;
            }
        }
        Ok(())
    }

    /// Put the pending entries into the trees: sorted, bottom-up into an empty tree, else
    /// in key order (neighbouring inserts touch the same pages).
    fn settle(&self, st: &mut State) -> Result<()> {
        for (tree, pending) in self.trees.iter().zip(st.pending.iter_mut()) {
            if pending.is_empty() {
                continue;
            }
            let sorted = std::mem::replace(pending, ExternalSorter::new(SORT_BUDGET)).finish()?;
            if tree.is_empty()? && tree.pages()? == 2 {
                bulk_load_all(tree, sorted)?;
            } else {
                for e in sorted {
                    tree.insert(&e?)?;
                }
            }
        }
        Ok(())
    }

    /// While keys are disabled, what reads the trees first settles the entries deferred
    /// (outside a bulk statement, whose entries settle when it ends).
    fn settle_deferred(&self) -> Result<()> {
        if !self.keys_off.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut st = self.state.lock();
        if st.bulk {
            return Ok(());
        }
        self.settle(&mut st)
    }

    fn index_remove(&self, st: &mut State, row: &Row, id: RowId) -> Result<()> {
        for (n, ix) in self.schema.indexes.iter().enumerate() {
            let e = self.entry(ix, row, id);
            if !self.trees[n].delete(&e)? {
                st.pending[n].remove(&e);
            }
        }
        Ok(())
    }

    /// Byte bounds of the entries whose keys lie between the value bounds `lo` and `hi`.
    fn byte_bounds(
        &self,
        ix: &IndexSchema,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<ByteRange> {
        keyrange::byte_bounds(&self.key_cols(ix), lo, hi)
    }

    /// Write one record (header + payload) at `off`, through the write buffer when appending.
    fn write_record(&self, st: &mut State, off: u64, slot: u32, payload_len: usize) -> Result<()> {
        let mut rec = Vec::with_capacity(REC_HDR + slot as usize);
        rec.push(LIVE);
        rec.extend_from_slice(&slot.to_le_bytes());
        rec.extend_from_slice(&(payload_len as u32).to_le_bytes());
        rec.extend_from_slice(
            &quarry_common::crc32c::crc32c(&st.scratch[..payload_len]).to_le_bytes(),
        );
        rec.extend_from_slice(&st.scratch[..payload_len]);
        rec.resize(REC_HDR + slot as usize, 0);
        if payload_len > KEEP_BUFFER {
            // A huge value (a 100 MB LONGTEXT) must not keep its encoding's memory.
            st.scratch = Vec::new();
        }
        if off == st.end {
            if off >= st.marks.last().copied().unwrap_or(HEADER_SIZE) + MARK_EVERY {
                st.marks.push(off);
            }
            st.wbuf_recs.push(off);
            st.end += rec.len() as u64;
            if st.wbuf.is_empty() && rec.len() > st.wbuf.capacity() {
                st.wbuf = rec;
            } else {
                st.wbuf.extend_from_slice(&rec);
            }
            if !st.bulk {
                self.flush_locked(st)?;
            } else {
                // The first flush ends on a 4 KiB boundary; every later one is a whole
                // aligned WRITE_BUFFER block.
                loop {
                    let misalign = (st.wbuf_start % 4096) as usize;
                    let chunk = if misalign != 0 && st.write_buffer >= 4096 {
                        4096 - misalign
                    } else {
                        st.write_buffer
                    };
                    if st.wbuf.len() < chunk {
                        break;
                    }
                    let rest = st.wbuf.split_off(chunk);
                    self.flush_locked(st)?;
                    st.wbuf = rest;
                }
            }
        } else {
            self.flush_locked(st)?;
            self.file.write_at(&rec, off)?;
            HandlerCounters::add(&self.counters.io_write_calls, 1);
            HandlerCounters::add(&self.counters.io_write_bytes, rec.len() as u64);
        }
        Ok(())
    }

    fn read_record(&self, st: &mut State, id: RowId) -> Result<(u32, Row)> {
        self.flush_locked(st)?;
        let mut hdr = [0u8; REC_HDR];
        self.file.read_exact_at(&mut hdr, id)?;
        if hdr[0] != LIVE {
            return Err(Error::internal(format!(
                "row {id} of {} is not live",
                self.name
            )));
        }
        let slot = u32::from_le_bytes(hdr[1..5].try_into().unwrap());
        let len = u32::from_le_bytes(hdr[5..9].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(hdr[9..13].try_into().unwrap());
        let mut payload = vec![0u8; len];
        self.file.read_exact_at(&mut payload, id + REC_HDR as u64)?;
        HandlerCounters::add(&self.counters.io_read_calls, 2);
        HandlerCounters::add(&self.counters.io_read_bytes, (REC_HDR + len) as u64);
        if quarry_common::crc32c::crc32c(&payload) != crc {
            return Err(Error::corrupt(&self.name));
        }
        Ok((
            slot,
            decode(&self.schema.columns, self.schema.row_format, &payload)?,
        ))
    }

    fn alloc(&self, st: &mut State, need: u32) -> (u64, u32) {
        if !st.quarantine.is_empty() {
            if let Some(wal) = self.pool.wal() {
                let ended: Vec<TxnId> = st
                    .quarantine
                    .keys()
                    .copied()
                    .filter(|&t| !wal.txn_open(t))
                    .collect();
                for t in ended {
                    for (off, slot) in st.quarantine.remove(&t).unwrap_or_default() {
                        st.free.entry(slot).or_default().insert(off);
                    }
                }
            }
        }
        let slot_want = self.fixed_slot.unwrap_or(need);
        let max_ok = slot_want.saturating_mul(2).saturating_add(64);
        let found = st.free.range(slot_want..=max_ok).next().map(|(s, _)| *s);
        if let Some(slot) = found {
            let list = st.free.get_mut(&slot).unwrap();
            let off = list.pop_first().unwrap();
            if list.is_empty() {
                st.free.remove(&slot);
            }
            st.free_bytes -= slot as u64 + REC_HDR as u64;
            return (off, slot);
        }
        (st.end, slot_want)
    }

    /// Encode `row` into the state's scratch buffer; returns its length.
    fn encode_scratch(&self, st: &mut State, row: &Row) -> usize {
        st.scratch.clear();
        encode(
            &self.schema.columns,
            self.schema.row_format,
            row,
            &mut st.scratch,
        );
        st.scratch.len()
    }

    /// Take the free slot at `id` off the free lists; false when it is not there.
    fn unpark(&self, st: &mut State, id: RowId, slot: u32) -> bool {
        for parked in st.quarantine.values_mut() {
            if parked.remove(&id).is_some() {
                return true;
            }
        }
        if let Some(list) = st.free.get_mut(&slot) {
            if list.remove(&id) {
                if list.is_empty() {
                    st.free.remove(&slot);
                }
                return true;
            }
        }
        false
    }

    fn mark_deleted(&self, st: &mut State, id: RowId, slot: u32) -> Result<()> {
        self.flush_locked(st)?;
        self.file.write_at(&[DELETED], id)?;
        HandlerCounters::add(&self.counters.io_write_calls, 1);
        HandlerCounters::add(&self.counters.io_write_bytes, 1);
        let txn = Wal::thread_txn();
        if txn != 0 && self.pool.wal().is_some() {
            st.quarantine.entry(txn).or_default().insert(id, slot);
        } else {
            st.free.entry(slot).or_default().insert(id);
        }
        st.free_bytes += slot as u64 + REC_HDR as u64;
        Ok(())
    }
}

struct RowCursor<'a> {
    reader: RecordReader<'a>,
    batch_rows: usize,
    /// The columns to decode (the request's and the filter's); None: all.
    wanted: Option<Vec<bool>>,
    /// A condition checked here, on each record's cells it reads before the rest of the
    /// row is decoded.
    filter: Option<Checked<'a>>,
}

/// A scan's condition and the walk that reads its cells.
struct Checked<'a> {
    /// The runtime filters: column, keys, and this batch's values asked about and kept
    /// (recorded on the keys, which say when checking stops paying: `KeySet::worth_it`).
    keys: Vec<RuntimeKeys>,
    /// Checks the condition but its top-level runtime filters (`Pred::InKeys`), whose
    /// columns it decodes.
    walk: walk::Walk<'a>,
    /// The condition's columns; the other columns decoded once it passed.
    cols: Vec<usize>,
    rest: Vec<usize>,
    scratch: Vec<Value>,
    starts: Vec<Option<usize>>,
}

struct RuntimeKeys {
    col: usize,
    keys: Arc<quarry_storage_api::KeySet>,
    on: bool,
    asked: u64,
    passed: u64,
}

impl<'a> Checked<'a> {
    fn new(table: &'a RowTable, pred: Pred, wanted: Option<&[bool]>) -> Checked<'a> {
        let n = table.schema.columns.len();
        let cols: Vec<usize> = pred.columns().into_iter().filter(|&c| c < n).collect();
        let rest: Vec<usize> = (0..n)
            .filter(|&c| wanted.is_none_or(|w| w[c]) && !cols.contains(&c))
            .collect();
        let parts = match pred {
            Pred::And(v) => v,
            p => vec![p],
        };
        let (mut keys, mut plain) = (vec![], vec![]);
        for p in parts {
            match p {
                Pred::InKeys { col, keys: k } if col < n => keys.push(RuntimeKeys {
                    col,
                    keys: k,
                    on: true,
                    asked: 0,
                    passed: 0,
                }),
                p => plain.push(p),
            }
        }
        let pred = Pred::all(plain);
        let key_cols: Vec<usize> = keys.iter().map(|k| k.col).collect();
        let located: Vec<usize> = cols.iter().chain(&rest).copied().collect();
        Checked {
            walk: walk::Walk::new(
                &table.schema.columns,
                table.schema.row_format,
                pred.as_ref(),
                &key_cols,
                &located,
            ),
            keys,
            cols,
            rest,
            scratch: vec![Value::Null; n],
            starts: vec![None; n],
        }
    }

    /// Before a batch: which runtime filters still pay.
    fn begin_batch(&mut self) {
        for k in &mut self.keys {
            k.on = k.keys.worth_it();
        }
    }

    /// After a batch: what the runtime filters were asked and kept, onto their keys.
    fn end_batch(&mut self) {
        for k in &mut self.keys {
            k.keys.record(k.asked, k.passed);
            (k.asked, k.passed) = (0, 0);
        }
    }

    /// The row in `payload` when the condition passes it (the columns not read NULL).
    fn row(&mut self, payload: &[u8]) -> Result<Option<Row>> {
        if !self
            .walk
            .run(payload, &mut self.scratch, &mut self.starts)?
        {
            return Ok(None);
        }
        for k in self.keys.iter_mut().filter(|k| k.on) {
            k.asked += 1;
            let pass = match &self.scratch[k.col] {
                Value::Null => false,
                Value::Int(i) => k.keys.contains(*i),
                _ => true,
            };
            if !pass {
                return Ok(None);
            }
            k.passed += 1;
        }
        let mut row = vec![Value::Null; self.scratch.len()];
        for &c in self.cols.iter().chain(&self.rest) {
            row[c] = if self.walk.decodes(c) {
                std::mem::replace(&mut self.scratch[c], Value::Null)
            } else {
                self.walk.value_at(c, payload, self.starts[c])?
            };
        }
        Ok(Some(row))
    }
}

/// Rows a side file selected, fetched in file order a batch at a time.
struct FetchCursor<'a> {
    table: &'a RowTable,
    ids: Vec<RowId>,
    at: usize,
    batch_rows: usize,
}

impl Cursor for FetchCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        if self.at >= self.ids.len() {
            return Ok(None);
        }
        let end = (self.at + self.batch_rows).min(self.ids.len());
        let ids = self.ids[self.at..end].to_vec();
        self.at = end;
        let rows = self.table.fetch(&ids)?;
        Ok(Some(Batch { ids, rows }))
    }
}

impl RowTable {
    /// A scan with `req` of the records in `[from, to)` (`from` a record's start).
    fn run_cursor(&self, req: &ScanRequest, from: u64, to: u64) -> RowCursor<'_> {
        let wanted = req.columns.as_ref().map(|cols| {
            let filter_cols = req.filter.as_ref().map(Pred::columns).unwrap_or_default();
            self.column_mask(cols.iter().chain(&filter_cols).copied())
        });
        RowCursor {
            reader: RecordReader::new(self, from, to, scan_block(req)),
            batch_rows: req.batch_rows.max(1),
            filter: req
                .filter
                .clone()
                .map(|f| Checked::new(self, f, wanted.as_deref())),
            wanted,
        }
    }
}

impl Cursor for RowCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        let mut batch = Batch::default();
        let table = self.reader.table;
        let mut visited = 0u64;
        if let Some(f) = &mut self.filter {
            f.begin_batch();
        }
        while batch.rows.len() < self.batch_rows {
            match self.reader.next_record()? {
                None => break,
                Some((off, status, _, payload)) => {
                    visited += 1;
                    if status != LIVE {
                        continue;
                    }
                    let row = match &mut self.filter {
                        Some(f) => match f.row(payload)? {
                            Some(row) => row,
                            None => continue,
                        },
                        None => decode_some(
                            &table.schema.columns,
                            table.schema.row_format,
                            payload,
                            self.wanted.as_deref(),
                        )?,
                    };
                    batch.rows.push(row);
                    batch.ids.push(off);
                }
            }
        }
        HandlerCounters::add_read(&table.counters.read_rnd_next, visited);
        if let Some(f) = &mut self.filter {
            f.end_batch();
        }
        if batch.rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(batch))
    }
}

impl Table for RowTable {
    fn schema(&self) -> &TableSchema {
        &self.schema
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            index_access: true,
            row_locks: true,
            columnar: false,
            checks_any_filter: true,
        }
    }

    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        let (end, starts) = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            (st.end, split_scan::run_starts(&st.marks, st.end))
        };
        let block = scan_block(req);
        if let Some(f) = &req.filter {
            // The side files decide the condition, unless a sample of them says most rows
            // pass: then fetching rows by id would cost more than reading them all.
            if let Some(ids) = self.side_matches(f, block, true)? {
                return Ok(Box::new(FetchCursor {
                    table: self,
                    ids,
                    at: 0,
                    batch_rows: req.batch_rows.max(1),
                }));
            }
        }
        if let Some(starts) = starts {
            return Ok(Box::new(split_scan::SplitCursor::new(
                self,
                req.clone(),
                starts,
                end,
            )));
        }
        Ok(Box::new(self.run_cursor(req, HEADER_SIZE, end)))
    }

    /// Records decoded straight into vectors (`vectors`), in up to `parts` consecutive
    /// runs of the file that start at marked records.
    fn scan_columns(
        &self,
        req: &ScanRequest,
        parts: usize,
    ) -> Result<Option<quarry_storage_api::ColumnCursors<'_>>> {
        let Some(columns) = &req.columns else {
            return Ok(None);
        };
        // A condition on a side-file column is answered from its file, by the row scan.
        let cols = &self.schema.columns;
        if req.filter.as_ref().is_some_and(|f| {
            f.columns()
                .iter()
                .any(|&c| cols.get(c).is_some_and(|c| c.columnar))
        }) {
            return Ok(None);
        }
        let (end, starts) = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            (st.end, split_points(&st.marks, st.end, parts))
        };
        let block = scan_block(req);
        let mut cursors: quarry_storage_api::ColumnCursors<'_> = Vec::new();
        for (k, &from) in starts.iter().enumerate() {
            let to = starts.get(k + 1).copied().unwrap_or(end);
            let reader = RecordReader::new(self, from, to, block);
            match vectors::VectorCursor::new(self, reader, columns, req.filter.clone()) {
                Some(c) => cursors.push(Box::new(c)),
                None => return Ok(None),
            }
        }
        Ok(Some(cursors))
    }

    /// Conditions on one `columnar_storage` column are taken: its side file decides them.
    fn pushdown(&self, filter: &Pred) -> Support {
        match filter.columns().as_slice() {
            [c] if self.schema.columns.get(*c).is_some_and(|c| c.columnar) => Support::Exact,
            _ => Support::Unsupported,
        }
    }

    fn estimate(&self, req: &ScanRequest) -> Option<u64> {
        self.estimate_sampled(req.filter.as_ref()?)
    }

    fn count(&self, req: &ScanRequest) -> Result<Option<u64>> {
        let Some(f) = &req.filter else {
            return Ok(None);
        };
        Ok(self
            .side_matches(f, 1 << 20, false)?
            .map(|ids| ids.len() as u64))
    }

    fn build_indexes(
        &self,
        new: &[IndexSchema],
        kept: &[Option<usize>],
        progress: &dyn Fn(u64),
    ) -> Result<bool> {
        if self.state.lock().bulk {
            return Ok(false);
        }
        // Kept index files move as they are: with every entry in them.
        self.settle_deferred()?;
        // Everything on disk first (the kept index files move as they are), then the
        // marker: until the new definition is committed, a crash rebuilds the indexes.
        self.sync()?;
        self.write_marker(&mut self.state.lock())?;
        let building: Vec<usize> = (0..new.len()).filter(|&n| kept[n].is_none()).collect();
        let result = (|| {
            let ixs: Vec<&IndexSchema> = building.iter().map(|&n| &new[n]).collect();
            let sorters = self.sorted_entries(&ixs, progress)?;
            for (sorter, &n) in sorters.into_iter().zip(&building) {
                let file = index_file(&self.path, n, ".new");
                remove_if_exists(&file)?;
                let tree = BTree::open(self.pool.clone(), &file)?;
                let loaded = self.load_checked(&tree, &new[n], sorter.finish()?);
                tree.close(loaded.is_ok())?;
                loaded?;
            }
            Ok(())
        })();
        if let Err(e) = result {
            for &n in &building {
                remove_if_exists(&index_file(&self.path, n, ".new"))?;
            }
            self.sync()?;
            return Err(e);
        }
        Ok(true)
    }

    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        self.fetch_rows(ids, None)
    }

    fn fetch_columns(&self, ids: &[RowId], columns: Option<&[usize]>) -> Result<Vec<Row>> {
        self.fetch_rows(ids, columns)
    }

    fn index_scan(
        &self,
        scan: &IndexScan,
        visit: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        let (Some(ix), Some(tree)) = (
            self.schema.indexes.get(scan.index),
            self.trees.get(scan.index),
        ) else {
            return Err(Error::internal("no such index"));
        };
        self.settle_deferred()?;
        HandlerCounters::add(&self.counters.read_key, 1);
        let cols = self.key_cols(ix);
        let Some((lo, hi)) = keyrange::scan_bounds(&cols, scan) else {
            return Ok(());
        };
        let mut read = 0u64;
        let mut vals = Vec::with_capacity(cols.len());
        let mut on_entry = |e: &[u8]| -> Result<bool> {
            read += 1;
            if scan.keys && !keycode::decode_key_into(e, &cols, &mut vals) {
                return Err(Error::corrupt(format!("index {} entry", ix.name)));
            }
            visit(&IndexEntry {
                id: keycode::row_id(e),
                keys: &vals,
                pos: e,
            })
        };
        let (lo, hi) = (as_slice_bound(&lo), as_slice_bound(&hi));
        if scan.reverse {
            tree.scan_rev(lo, hi, &mut on_entry)?;
        } else {
            tree.scan(lo, hi, &mut on_entry)?;
        }
        HandlerCounters::add_read(&self.counters.read_next, read);
        Ok(())
    }

    fn index_key(&self, index: usize, row: &Row, id: RowId) -> Option<Vec<u8>> {
        Some(self.entry(self.schema.indexes.get(index)?, row, id))
    }

    fn index_key_in(
        &self,
        index: usize,
        entry: &[u8],
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<bool> {
        let ix = self.schema.indexes.get(index)?;
        let Some((lo, hi)) = self.byte_bounds(ix, lo, hi) else {
            return Some(false);
        };
        Some(std::ops::RangeBounds::<[u8]>::contains(
            &(as_slice_bound(&lo), as_slice_bound(&hi)),
            entry,
        ))
    }

    fn index_covers(&self, index: usize) -> Vec<bool> {
        self.schema
            .indexes
            .get(index)
            .map_or(vec![], |ix| keyrange::covers(&self.schema, ix))
    }

    fn records_in_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Stat> {
        let (Some(ix), Some(tree)) = (self.schema.indexes.get(index), self.trees.get(index)) else {
            return Ok(Stat::Unknown);
        };
        let Some((lo, hi)) = self.byte_bounds(ix, lo, hi) else {
            return Ok(Stat::Exact(0));
        };
        let pending = self
            .state
            .lock()
            .pending
            .get(index)
            .map_or(0, ExternalSorter::len);
        let n = tree.estimate_range(as_slice_bound(&lo), as_slice_bound(&hi))?;
        Ok(Stat::Estimated(n + pending))
    }

    fn index_count(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Option<u64>> {
        let (Some(ix), Some(tree)) = (self.schema.indexes.get(index), self.trees.get(index)) else {
            return Ok(None);
        };
        // Entries a bulk load has not sorted into the tree yet are not countable there.
        if self
            .state
            .lock()
            .pending
            .get(index)
            .is_some_and(|p| !p.is_empty())
        {
            return Ok(None);
        }
        HandlerCounters::add(&self.counters.read_key, 1);
        let Some((lo, hi)) = self.byte_bounds(ix, lo, hi) else {
            return Ok(Some(0));
        };
        Ok(Some(tree.count(as_slice_bound(&lo), as_slice_bound(&hi))?))
    }

    fn index_distinct(&self, index: usize) -> Result<Vec<Stat>> {
        let Some(ix) = self.schema.indexes.get(index) else {
            return Ok(vec![]);
        };
        let live = self.state.lock().live_rows;
        let changes = self.changes.load(std::sync::atomic::Ordering::Relaxed);
        {
            let cached = self.index_stats.lock();
            if let Some(Some(st)) = cached.get(index) {
                // Stale after a tenth of the rows changed (InnoDB's auto-recalc rule).
                if changes.saturating_sub(st.changes_at) <= st.rows_at / 10 {
                    return Ok(scale_distinct(&st.distinct, st.rows_at, live));
                }
            }
        }
        let distinct = self.count_distinct(index)?;
        let mut cached = self.index_stats.lock();
        cached.resize_with(self.schema.indexes.len(), || None);
        cached[index] = Some(IndexStat {
            rows_at: live,
            changes_at: changes,
            distinct: distinct.clone(),
        });
        debug_assert_eq!(distinct.len(), ix.columns.len());
        Ok(distinct.into_iter().map(Stat::Estimated).collect())
    }

    fn analyze(&self) -> Result<()> {
        let live = self.state.lock().live_rows;
        let changes = self.changes.load(std::sync::atomic::Ordering::Relaxed);
        let mut fresh = Vec::with_capacity(self.schema.indexes.len());
        for i in 0..self.schema.indexes.len() {
            fresh.push(Some(IndexStat {
                rows_at: live,
                changes_at: changes,
                distinct: self.count_distinct(i)?,
            }));
        }
        *self.index_stats.lock() = fresh;
        self.resample()
    }

    fn insert(&self, row: Row) -> Result<RowId> {
        self.insert_noted(row, &mut |_| {})
    }

    fn insert_noted(&self, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        self.file.admit()?;
        let mut st = self.state.lock();
        self.check_unique(&row, None)?;
        self.mark_dirty(&mut st)?;
        let len = self.encode_scratch(&mut st, &row);
        let (off, slot) = self.alloc(&mut st, len as u32);
        // Readers find the row only once it is written (or indexed).
        note(off);
        self.write_record(&mut st, off, slot, len)?;
        self.index_add(&mut st, &row, off)?;
        for s in st.side.iter_mut() {
            s.add(off, &row[s.col]);
        }
        st.live_rows += 1;
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HandlerCounters::add(&self.counters.write, 1);
        Ok(off)
    }

    /// The slot still holds the row's old size and is parked for its deleter (the one
    /// rolling back), so the row goes back in place and keeps its id.
    fn restore(&self, id: RowId, row: Row) -> Result<bool> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st)?;
        let mut hdr = [0u8; REC_HDR];
        self.file.read_exact_at(&mut hdr, id)?;
        let slot = u32::from_le_bytes(hdr[1..5].try_into().unwrap());
        if hdr[0] != DELETED {
            return Err(Error::internal(format!(
                "row {id} of {} to restore is not deleted",
                self.name
            )));
        }
        let len = self.encode_scratch(&mut st, &row);
        if len > slot as usize || !self.unpark(&mut st, id, slot) {
            return Ok(false);
        }
        self.check_unique(&row, None)?;
        self.mark_dirty(&mut st)?;
        self.write_record(&mut st, id, slot, len)?;
        self.index_add(&mut st, &row, id)?;
        for s in st.side.iter_mut() {
            s.add(id, &row[s.col]);
        }
        st.live_rows += 1;
        st.free_bytes -= slot as u64 + REC_HDR as u64;
        Ok(true)
    }

    fn update(&self, id: RowId, row: Row) -> Result<RowId> {
        self.update_noted(id, row, &mut |_| {})
    }

    fn update_noted(&self, id: RowId, row: Row, note: &mut dyn FnMut(RowId)) -> Result<RowId> {
        self.file.admit()?;
        let mut st = self.state.lock();
        let (slot, old) = self.read_record(&mut st, id)?;
        self.check_unique(&row, Some(id))?;
        self.mark_dirty(&mut st)?;
        if st.keys_disabled {
            // The old entries may wait in the sorters (taking one back from there is a
            // search through all of them).
            self.settle(&mut st)?;
        }
        let len = self.encode_scratch(&mut st, &row);
        // Keys are encoded once; entries whose key and row id stay the same are left alone.
        let moves = len > slot as usize;
        let changed: Vec<(usize, Vec<u8>, Vec<u8>)> = self
            .schema
            .indexes
            .iter()
            .enumerate()
            .map(|(n, ix)| (n, self.key_prefix(ix, &old), self.key_prefix(ix, &row)))
            .filter(|(_, before, after)| moves || before != after)
            .collect();
        let with_id = |key: &[u8], id: RowId| [key, &id.to_be_bytes()].concat();
        let new_id = if moves {
            self.mark_deleted(&mut st, id, slot)?;
            let (off, nslot) = self.alloc(&mut st, len as u32);
            note(off);
            self.write_record(&mut st, off, nslot, len)?;
            off
        } else {
            self.write_record(&mut st, id, slot, len)?;
            id
        };
        for (n, before, after) in &changed {
            self.trees[*n].replace(&with_id(before, id), &with_id(after, new_id))?;
        }
        for s in st.side.iter_mut() {
            if new_id != id || old[s.col] != row[s.col] {
                s.remove(id);
                s.add(new_id, &row[s.col]);
            }
        }
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HandlerCounters::add(&self.counters.update, 1);
        Ok(new_id)
    }

    fn delete(&self, id: RowId) -> Result<()> {
        self.file.admit()?;
        let mut st = self.state.lock();
        let (slot, old) = self.read_record(&mut st, id)?;
        self.mark_dirty(&mut st)?;
        if st.keys_disabled {
            self.settle(&mut st)?;
        }
        self.mark_deleted(&mut st, id, slot)?;
        self.index_remove(&mut st, &old, id)?;
        for s in st.side.iter_mut() {
            s.remove(id);
        }
        st.live_rows -= 1;
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HandlerCounters::add(&self.counters.delete, 1);
        Ok(())
    }

    /// Indexes and side files first, the data file last: with the log, shrinking it
    /// commits the whole truncation at once.
    fn truncate(&self) -> Result<()> {
        let mut st = self.state.lock();
        self.mark_dirty(&mut st)?;
        st.wbuf.clear();
        for (tree, pending) in self.trees.iter().zip(st.pending.iter_mut()) {
            tree.clear()?;
            pending.clear();
        }
        for s in st.side.iter_mut() {
            s.reset()?;
        }
        self.file.truncate_and_commit(HEADER_SIZE)?;
        st.end = HEADER_SIZE;
        st.wbuf_start = HEADER_SIZE;
        st.wbuf_recs.clear();
        st.free.clear();
        st.quarantine.clear();
        st.free_bytes = 0;
        st.live_rows = 0;
        st.marks.clear();
        Ok(())
    }

    fn begin_bulk(&self, write_buffer: usize) {
        let mut st = self.state.lock();
        st.bulk = true;
        st.write_buffer = if write_buffer == 0 {
            WRITE_BUFFER
        } else {
            write_buffer
        };
    }

    /// Sorted, the collected entries go in bottom-up when the tree is empty, else in key
    /// order (neighbouring inserts touch the same pages).
    fn end_bulk(&self) -> Result<()> {
        let mut st = self.state.lock();
        st.bulk = false;
        self.flush_locked(&mut st)?;
        if st.keys_disabled {
            return Ok(());
        }
        self.settle(&mut st)
    }

    /// DISABLE KEYS: from the next insert on, the non-unique indexes' entries wait in
    /// the sorters (the marker first, so committed rows whose entries wait are rebuilt
    /// into the indexes after a crash). ENABLE KEYS puts them in and syncs, which removes
    /// the marker.
    fn set_keys_disabled(&self, disabled: bool) -> Result<bool> {
        {
            let mut st = self.state.lock();
            if disabled == st.keys_disabled {
                return Ok(true);
            }
            if disabled {
                if !st.marked_dirty {
                    self.write_marker(&mut st)?;
                }
            } else if !st.bulk {
                self.settle(&mut st)?;
            }
            st.keys_disabled = disabled;
            self.keys_off.store(disabled, Ordering::Release);
        }
        if !disabled {
            self.sync()?;
        }
        Ok(true)
    }

    fn flush(&self) -> Result<()> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st)
    }

    /// Data, then indexes, then the dirty marker goes: after a sync the files agree.
    fn sync(&self) -> Result<()> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st)?;
        self.file.sync()?;
        for s in st.side.iter_mut() {
            s.sync()?;
        }
        // While keys are disabled the marker stands (a TRUNCATE empties the sorters, and
        // the rows after it defer their entries again).
        if st.bulk || st.keys_disabled {
            return Ok(());
        }
        for t in &self.trees {
            t.flush()?;
        }
        if st.marked_dirty {
            remove_if_exists(&self.dirty_marker)?;
            st.marked_dirty = false;
        }
        Ok(())
    }

    fn stats(&self) -> TableStats {
        let st = self.state.lock();
        let data = st.end - HEADER_SIZE;
        TableStats {
            rows: Stat::Exact(st.live_rows),
            data_bytes: data,
            free_bytes: st.free_bytes,
            avg_row_bytes: (data - st.free_bytes)
                .checked_div(st.live_rows)
                .unwrap_or(0),
        }
    }

    fn check(&self) -> Result<Vec<String>> {
        self.settle_deferred()?;
        let end = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            st.end
        };
        let mut problems = Vec::new();
        let mut live = 0u64;
        let mut reader = RecordReader::new(self, HEADER_SIZE, end, 1 << 20);
        let mut missing = vec![0u64; self.schema.indexes.len()];
        loop {
            match reader.next_record() {
                Ok(None) => break,
                Ok(Some((off, status, _, payload))) => {
                    if status == LIVE {
                        live += 1;
                        match decode(&self.schema.columns, self.schema.row_format, payload) {
                            Ok(row) => {
                                for (i, ix) in self.schema.indexes.iter().enumerate() {
                                    if !self.trees[i].contains(&self.entry(ix, &row, off))? {
                                        missing[i] += 1;
                                    }
                                }
                            }
                            Err(e) => problems.push(format!("record at {off}: {}", e.message)),
                        }
                    }
                }
                Err(e) => {
                    problems.push(e.message);
                    break;
                }
            }
        }
        let st = self.state.lock();
        if live != st.live_rows {
            problems.push(format!(
                "row count {} but {} live records",
                st.live_rows, live
            ));
        }
        for (i, ix) in self.schema.indexes.iter().enumerate() {
            let entries = self.trees[i].len()? + st.pending[i].len();
            if entries != live || missing[i] > 0 {
                problems.push(format!(
                    "index {} does not match the data ({entries} entries for {live} rows, {} rows missing)",
                    ix.name, missing[i]
                ));
            }
            for p in self.trees[i].verify()? {
                problems.push(format!("index {}: {p}", ix.name));
            }
        }
        for s in &st.side {
            if s.live() != live {
                problems.push(format!(
                    "side file of column {} holds {} rows, the data {live}",
                    self.schema.columns[s.col].name,
                    s.live()
                ));
            }
        }
        Ok(problems)
    }
}

/// An integral double within the u64/i64 range as an integer key value.
/// Memory for sorting one index's entries in a bulk load or index build before runs
/// spill to temporary files.
const SORT_BUDGET: usize = 64 << 20;

/// Error 1062 for `row`'s key in `ix`.
fn duplicate(ix: &IndexSchema, row: &Row) -> Error {
    let shown: Vec<String> = ix
        .columns
        .iter()
        .zip(&ix.prefix)
        .map(|(&c, &p)| match &row[c] {
            Value::Str(s) if p > 0 => s.chars().take(p as usize).collect(),
            v => v.to_string(),
        })
        .collect();
    let name = if ix.primary { "PRIMARY" } else { &ix.name };
    Error::duplicate_key(&shown.join("-"), name)
}

/// Where index `n` of a table lives, and where it is built before being put in place.
fn index_file(path: &TablePath, n: usize, stage: &str) -> std::path::PathBuf {
    path.file(&format!("i{n}.qix{stage}"))
}

/// Bulk-load a tree from a fallible sorted stream (the first error stops the load).
fn bulk_load_all(
    tree: &BTree,
    sorted: Box<dyn Iterator<Item = Result<Vec<u8>>> + '_>,
) -> Result<u64> {
    let mut err = None;
    let mut it = sorted.map_while(|e| match e {
        Ok(e) => Some(e),
        Err(x) => {
            err = Some(x);
            None
        }
    });
    let n = tree.bulk_load(&mut it)?;
    match err {
        Some(e) => Err(e),
        None => Ok(n),
    }
}

impl Drop for RowTable {
    /// Index pages go to disk and the files close; the dirty marker stays unless a sync
    /// removed it, so an unsynced change is still rebuilt at the next open.
    fn drop(&mut self) {
        for t in self.trees.drain(..) {
            let _ = t.close(true);
        }
    }
}

/// True when the type is stored as a variable-length value.
/// Bytes a scan reads at a time: the session's `read_buffer_size`, else 128 KiB.
fn scan_block(req: &ScanRequest) -> usize {
    if req.read_buffer == 0 {
        128 * 1024
    } else {
        req.read_buffer
    }
}

/// Where each of up to `parts` runs of a scan of the records before `end` starts: the
/// first record, then the marked record nearest past each even share of the bytes.
fn split_points(marks: &[u64], end: u64, parts: usize) -> Vec<u64> {
    let mut starts = vec![HEADER_SIZE];
    let bytes = end.saturating_sub(HEADER_SIZE);
    if bytes < SPLIT_FROM {
        return starts;
    }
    for i in 1..parts as u64 {
        let target = HEADER_SIZE + bytes / parts as u64 * i;
        let at = marks.partition_point(|&m| m < target);
        if let Some(&m) = marks.get(at) {
            if m < end && m > *starts.last().unwrap() {
                starts.push(m);
            }
        }
    }
    starts
}

pub fn has_variable_columns(schema: &TableSchema) -> bool {
    schema.columns.iter().any(|c| c.ty.is_variable())
}

/// FIXED cannot hold TEXT/BLOB (as in MyISAM, such tables are DYNAMIC).
pub fn effective_row_format(requested: Option<RowFormat>, schema: &TableSchema) -> RowFormat {
    let has_lob = schema
        .columns
        .iter()
        .any(|c| matches!(c.ty.kind, TypeKind::Text | TypeKind::Blob));
    match requested {
        Some(RowFormat::Fixed) if !has_lob => RowFormat::Fixed,
        Some(RowFormat::Fixed) => RowFormat::Dynamic,
        Some(f) => f,
        None if has_variable_columns(schema) => RowFormat::Dynamic,
        None => RowFormat::Fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::SqlType;
    use quarry_storage_api::{ColumnSchema, IndexSchema};
    use std::os::unix::fs::FileExt;

    fn schema(format: RowFormat) -> TableSchema {
        TableSchema {
            columns: vec![
                ColumnSchema {
                    name: "id".into(),
                    ty: SqlType::INT,
                    nullable: false,
                    columnar: false,
                },
                ColumnSchema {
                    name: "v".into(),
                    ty: SqlType::varchar(100),
                    nullable: true,
                    columnar: false,
                },
            ],
            indexes: vec![IndexSchema {
                name: "PRIMARY".into(),
                columns: vec![0],
                prefix: vec![0],
                desc: vec![false],
                unique: true,
                primary: true,
            }],
            row_format: format,
        }
    }

    fn scan_all(t: &dyn Table) -> Vec<Row> {
        let mut c = t
            .scan(&ScanRequest {
                batch_rows: 7,
                read_buffer: 4096,
                ..Default::default()
            })
            .unwrap();
        let mut out = vec![];
        while let Some(b) = c.next_batch().unwrap() {
            out.extend(b.rows);
        }
        out
    }

    #[test]
    fn bulk_write_buffer_sizes_keep_every_row_across_reopen() {
        let dir = std::env::temp_dir().join(format!("quarry-row-wbuf-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let counters = Arc::new(HandlerCounters::default());
        // Below a record, below and above the 4 KiB alignment, and not a power of two.
        for (n, wbuf) in [256usize, 1000, 4096, 70_000, 1 << 20]
            .into_iter()
            .enumerate()
        {
            let path = TablePath::new(&dir, &format!("t{n}"));
            let schema = schema(RowFormat::Dynamic);
            RowEngine::default().create(&path, &schema).unwrap();
            let t = RowEngine::default()
                .open(&path, &schema, counters.clone())
                .unwrap();
            // A row before the bulk bracket leaves the appends misaligned.
            t.insert(vec![Value::Int(-1), Value::Str("first".into())])
                .unwrap();
            t.begin_bulk(wbuf);
            for i in 0..3000 {
                t.insert(vec![
                    Value::Int(i),
                    Value::Str("v".repeat((i % 97) as usize)),
                ])
                .unwrap();
            }
            t.end_bulk().unwrap();
            t.sync().unwrap();
            drop(t);
            let t = RowEngine::default()
                .open(&path, &schema, counters.clone())
                .unwrap();
            let rows = scan_all(&*t);
            assert_eq!(rows.len(), 3001, "write buffer {wbuf}");
            assert!(t.check().unwrap().is_empty(), "write buffer {wbuf}");
            for read_buffer in [256, 300, 1 << 16] {
                let mut c = t
                    .scan(&ScanRequest {
                        batch_rows: 100,
                        read_buffer,
                        ..Default::default()
                    })
                    .unwrap();
                let mut again = vec![];
                while let Some(b) = c.next_batch().unwrap() {
                    again.extend(b.rows);
                }
                assert_eq!(again, rows, "read buffer {read_buffer}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn insert_update_delete_reuse_and_reopen() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            let dir =
                std::env::temp_dir().join(format!("quarry-row-{}-{format:?}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let path = TablePath::new(&dir, "t");
            let counters = Arc::new(HandlerCounters::default());
            RowEngine::default().create(&path, &schema(format)).unwrap();
            let t = RowEngine::default()
                .open(&path, &schema(format), counters.clone())
                .unwrap();
            t.begin_bulk(0);
            let mut ids = vec![];
            for i in 0..5000 {
                ids.push(
                    t.insert(vec![
                        Value::Int(i),
                        Value::Str("x".repeat((i % 50) as usize)),
                    ])
                    .unwrap(),
                );
            }
            t.end_bulk().unwrap();
            let dup = t.insert(vec![Value::Int(7), Value::Null]).unwrap_err();
            assert_eq!(dup.code, 1062);
            t.delete(ids[10]).unwrap();
            let reused = t
                .insert(vec![Value::Int(-1), Value::Str("short".into())])
                .unwrap();
            assert_eq!(reused, ids[10], "a deleted slot is reused");
            let moved = t
                .update(ids[1], vec![Value::Int(1), Value::Str("y".repeat(90))])
                .unwrap();
            assert_eq!(t.fetch(&[moved]).unwrap()[0][1], Value::Str("y".repeat(90)));
            assert_eq!(
                t.index_range(
                    0,
                    Bound::Included(&[Value::Int(1)]),
                    Bound::Included(&[Value::Int(1)])
                )
                .unwrap(),
                vec![moved]
            );
            assert!(t.check().unwrap().is_empty());
            let before = scan_all(&*t);
            assert_eq!(before.len(), 5000);
            t.sync().unwrap();
            drop(t);
            let t = RowEngine::default()
                .open(&path, &schema(format), counters)
                .unwrap();
            assert_eq!(scan_all(&*t), before);
            assert_eq!(
                t.index_range(
                    0,
                    Bound::Included(&[Value::Int(100)]),
                    Bound::Excluded(&[Value::Int(103)])
                )
                .unwrap()
                .len(),
                3
            );
            if format == RowFormat::Fixed {
                // Freed slots (one size here) are refilled lowest offset first: slots a
                // DELETE's scan freed in file order are refilled in file order (they were
                // refilled backwards, each write before the last, which the pending
                // writes of the log then merged by copying: quadratic).
                for &id in &ids[100..120] {
                    t.delete(id).unwrap();
                }
                let refilled: Vec<RowId> = (0..20)
                    .map(|i| t.insert(vec![Value::Int(10_000 + i), Value::Null]).unwrap())
                    .collect();
                assert_eq!(refilled, ids[100..120]);
                assert!(t.check().unwrap().is_empty());
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// Side files follow inserts, moving updates, deletes and truncation; a pushed condition
    /// answers from them (scan and count) exactly as a filter over all rows would; after a
    /// crash (no sync, side file cut short) the next open rebuilds them from the data.
    #[test]
    fn side_files_follow_the_rows_and_are_rebuilt_after_a_crash() {
        use quarry_storage_api::CmpOp;
        let dir = std::env::temp_dir().join(format!("quarry-row-side-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = TablePath::new(&dir, "t");
        let mut schema = schema(RowFormat::Dynamic);
        schema.indexes.clear();
        schema.columns[1].columnar = true;
        let engine = RowEngine::default();
        engine.create(&path, &schema).unwrap();
        let counters = Arc::new(HandlerCounters::default());
        let preds = [
            Pred::Cmp {
                col: 1,
                op: CmpOp::Eq,
                value: Value::Str("m3".into()),
            },
            Pred::Cmp {
                col: 1,
                op: CmpOp::Ne,
                value: Value::Str("ABCDE".into()),
            },
            Pred::IsNull { col: 1 },
        ];
        let agree = |t: &dyn Table| {
            let all = scan_all(t);
            for p in &preds {
                let want: Vec<&Row> = all.iter().filter(|r| p.eval(r) == Some(true)).collect();
                let mut c = t
                    .scan(&ScanRequest {
                        batch_rows: 10,
                        filter: Some(p.clone()),
                        ..Default::default()
                    })
                    .unwrap();
                let mut got = vec![];
                while let Some(b) = c.next_batch().unwrap() {
                    got.extend(b.rows);
                }
                let mut want: Vec<Row> = want.into_iter().cloned().collect();
                want.sort_by_key(|r| r[0].to_i64());
                got.sort_by_key(|r| r[0].to_i64());
                assert_eq!(got, want, "{p:?}");
                let n = t
                    .count(&ScanRequest {
                        filter: Some(p.clone()),
                        ..Default::default()
                    })
                    .unwrap();
                assert_eq!(n, Some(want.len() as u64), "count {p:?}");
            }
        };
        let t = engine.open(&path, &schema, counters.clone()).unwrap();
        assert_eq!(t.pushdown(&preds[0]), Support::Exact);
        let mut ids = vec![];
        for i in 0..3000i64 {
            let v = if i % 10 == 0 {
                Value::Null
            } else {
                Value::Str(format!("m{}", i % 7))
            };
            ids.push(t.insert(vec![Value::Int(i), v]).unwrap());
        }
        agree(&*t);
        // Moving updates (longer values), in-place ones, deletes.
        for (k, id) in ids.iter().enumerate().step_by(3) {
            let v = Value::Str(format!("m3{}", "x".repeat(k % 40)));
            let new = t.update(*id, vec![Value::Int(k as i64), v]).unwrap();
            if k % 2 == 0 {
                t.delete(new).unwrap();
            }
        }
        t.update(ids[1], vec![Value::Int(1), Value::Str("m3".into())])
            .unwrap();
        agree(&*t);
        t.sync().unwrap();
        drop(t);
        let t = engine.open(&path, &schema, counters.clone()).unwrap();
        agree(&*t);
        // A crash: changes written but not synced, and the side file lost its tail.
        t.insert(vec![Value::Int(9000), Value::Str("m3".into())])
            .unwrap();
        t.flush().unwrap();
        std::mem::forget(t);
        let side = side_file(&dir, "t", "v");
        let len = std::fs::metadata(&side).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&side)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let t = engine.open(&path, &schema, counters.clone()).unwrap();
        agree(&*t);
        t.truncate().unwrap();
        t.insert(vec![Value::Int(1), Value::Str("m3".into())])
            .unwrap();
        agree(&*t);
        drop(t);
        engine.drop_table(&path).unwrap();
        assert!(!path.file("cols").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Index pages lost in a crash (the files roll back to the last sync) are rebuilt
    /// from the data at the next open: by the dirty marker, or by the entry counts.
    #[test]
    fn stale_index_files_are_rebuilt_at_open() {
        let dir = std::env::temp_dir().join(format!("quarry-row-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = TablePath::new(&dir, "t");
        let mut schema = schema(RowFormat::Dynamic);
        schema.indexes.push(IndexSchema {
            name: "v".into(),
            columns: vec![1],
            prefix: vec![0],
            desc: vec![false],
            unique: true,
            primary: false,
        });
        let engine = RowEngine::default();
        engine.create(&path, &schema).unwrap();
        let counters = Arc::new(HandlerCounters::default());
        let ids_of = |t: &dyn Table, n: usize, v: &str| {
            let key = [Value::Str(v.into())];
            t.index_range(n, Bound::Included(&key), Bound::Included(&key))
                .unwrap()
        };
        for keep_marker in [true, false] {
            let t = engine.open(&path, &schema, counters.clone()).unwrap();
            t.truncate().unwrap();
            for i in 0..100 {
                t.insert(vec![Value::Int(i), Value::Str(format!("v{i}"))])
                    .unwrap();
            }
            t.sync().unwrap();
            assert!(!path.file("qdirty").exists());
            let saved: Vec<(std::path::PathBuf, Vec<u8>)> = (0..2)
                .map(|n| {
                    let f = path.file(&format!("i{n}.qix"));
                    let bytes = std::fs::read(&f).unwrap();
                    (f, bytes)
                })
                .collect();
            for i in 100..300 {
                t.insert(vec![Value::Int(i), Value::Str(format!("v{i}"))])
                    .unwrap();
            }
            // Two NULLs in a UNIQUE index are allowed; a repeated value is not.
            t.insert(vec![Value::Int(1000), Value::Null]).unwrap();
            t.insert(vec![Value::Int(1001), Value::Null]).unwrap();
            assert_eq!(
                t.insert(vec![Value::Int(1002), Value::Str("V7".into())])
                    .unwrap_err()
                    .code,
                1062
            );
            let gone = ids_of(&*t, 1, "v5");
            t.delete(gone[0]).unwrap();
            assert!(path.file("qdirty").exists());
            t.flush().unwrap();
            drop(t);
            for (f, bytes) in &saved {
                std::fs::write(f, bytes).unwrap();
            }
            if !keep_marker {
                std::fs::remove_file(path.file("qdirty")).unwrap();
            }
            let t = engine.open(&path, &schema, counters.clone()).unwrap();
            assert!(t.check().unwrap().is_empty(), "{:?}", t.check().unwrap());
            assert!(ids_of(&*t, 1, "v5").is_empty());
            assert_eq!(ids_of(&*t, 1, "V250").len(), 1, "case-insensitive key");
            let all = t
                .index_range(0, Bound::Unbounded, Bound::Unbounded)
                .unwrap();
            assert_eq!(all.len(), 301);
            assert!(!path.file("qdirty").exists());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// CREATE/DROP INDEX in place: a duplicate for a new UNIQUE index changes nothing,
    /// a crash before the new definition is committed leaves the old table whole, and
    /// after the commit the table opens with the new indexes and no rebuild.
    #[test]
    fn indexes_change_in_place_and_a_crash_leaves_old_or_new() {
        let dir = std::env::temp_dir().join(format!("quarry-row-alter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = TablePath::new(&dir, "t");
        let key_v = |name: &str, unique: bool| IndexSchema {
            name: name.into(),
            columns: vec![1],
            prefix: vec![0],
            desc: vec![false],
            unique,
            primary: false,
        };
        let mut old = schema(RowFormat::Dynamic);
        old.indexes.push(key_v("kv", false));
        let mut new = schema(RowFormat::Dynamic);
        new.indexes.push(key_v("uv", true));
        let kept = [Some(0), None];
        let engine = RowEngine::default();
        engine.create(&path, &old).unwrap();
        let counters = Arc::new(HandlerCounters::default());
        let ids_of = |t: &dyn Table, n: usize, v: &str| {
            let key = [Value::Str(v.into())];
            t.index_range(n, Bound::Included(&key), Bound::Included(&key))
                .unwrap()
        };
        let staged = || {
            std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".new"))
        };
        let t = engine.open(&path, &old, counters.clone()).unwrap();
        for i in 0..500 {
            t.insert(vec![Value::Int(i), Value::Str(format!("v{i}"))])
                .unwrap();
        }
        t.insert(vec![Value::Int(1000), Value::Null]).unwrap();
        t.insert(vec![Value::Int(1001), Value::Null]).unwrap();
        let dup = t
            .insert(vec![Value::Int(1002), Value::Str("V7".into())])
            .unwrap();
        let err = t.build_indexes(&new.indexes, &kept, &|_| {}).unwrap_err();
        assert_eq!(err.code, 1062);
        assert!(
            err.message.contains("'V7'") || err.message.contains("'v7'"),
            "{}",
            err.message
        );
        assert!(!staged() && !path.file("qdirty").exists());
        assert!(t.check().unwrap().is_empty());
        t.delete(dup).unwrap();
        // Crash after the build, before anything moved; then a crash after the files
        // moved but before the new definition was written.
        for fail_commit in [false, true] {
            assert!(t.build_indexes(&new.indexes, &kept, &|_| {}).unwrap());
            if fail_commit {
                let r = engine.install_indexes(&path, &kept, &mut || {
                    Err(Error::new(1030, "simulated crash"))
                });
                assert!(r.is_err());
            }
            let t2 = engine.open(&path, &old, counters.clone()).unwrap();
            assert!(t2.check().unwrap().is_empty(), "{:?}", t2.check().unwrap());
            assert_eq!(ids_of(&*t2, 1, "v250").len(), 1);
            assert_eq!(
                t2.index_range(0, Bound::Unbounded, Bound::Unbounded)
                    .unwrap()
                    .len(),
                502
            );
            drop(t2);
        }
        drop(t);
        let t = engine.open(&path, &old, counters.clone()).unwrap();
        assert!(t.build_indexes(&new.indexes, &kept, &|_| {}).unwrap());
        drop(t);
        let mut committed = false;
        engine
            .install_indexes(&path, &kept, &mut || {
                committed = true;
                Ok(())
            })
            .unwrap();
        assert!(committed && !staged() && !path.file("qdirty").exists());
        let t = engine.open(&path, &new, counters.clone()).unwrap();
        assert!(t.check().unwrap().is_empty(), "{:?}", t.check().unwrap());
        assert_eq!(
            ids_of(&*t, 1, "V250").len(),
            1,
            "case-insensitive unique key"
        );
        assert_eq!(
            t.insert(vec![Value::Int(2000), Value::Str("V9".into())])
                .unwrap_err()
                .code,
            1062
        );
        assert_eq!(
            t.index_range(0, Bound::Unbounded, Bound::Unbounded)
                .unwrap()
                .len(),
            502
        );
        drop(t);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn corruption_is_detected_not_returned() {
        let dir = std::env::temp_dir().join(format!("quarry-row-corrupt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = TablePath::new(&dir, "t");
        RowEngine::default()
            .create(&path, &schema(RowFormat::Dynamic))
            .unwrap();
        let t = RowEngine::default()
            .open(&path, &schema(RowFormat::Dynamic), Arc::default())
            .unwrap();
        t.insert(vec![Value::Int(1), Value::Str("hello world".into())])
            .unwrap();
        t.sync().unwrap();
        drop(t);
        let f = OpenOptions::new()
            .write(true)
            .open(path.file("qrd"))
            .unwrap();
        f.write_all_at(b"J", HEADER_SIZE + REC_HDR as u64 + 4)
            .unwrap();
        let err = RowEngine::default()
            .open(&path, &schema(RowFormat::Dynamic), Arc::default())
            .err()
            .unwrap();
        assert_eq!(err.code, 1034);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
