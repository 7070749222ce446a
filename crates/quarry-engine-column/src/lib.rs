//! The column engine (`ENGINE=COLUMN`, alias `COLUMNSTORE`): every column stored
//! column-wise, for analytic scans.
//!
//! ```text
//!  <table>.cols/<column>.column   chunks of that column, one per segment (crc32c + bytes)
//!  <table>.cols/table.meta        segments: row ids, chunk places, zone maps, delete vectors
//!  <table>.cols/delta.<gen>.log   row-wise delta since the metadata was written
//! ```
//!
//! * Rows are grouped in segments of up to 64 Ki rows; each column of a segment is one
//!   chunk, encoded on its own (`chunk`) with a zone map (min, max, NULL count).
//! * Row ids are handed out in insert order and never change: a segment records the ids
//!   of its rows, so undo records and open cursors stay valid across merges.
//! * Inserts go to a row-wise delta (in memory, and in the delta log); once it holds a
//!   segment's worth, the oldest rows are written as a new segment and the metadata is
//!   replaced (the merge's commit point). Bulk loads (`LOAD DATA`, `INSERT … SELECT`,
//!   multi-row `INSERT`) write whole segments directly and do not log their rows.
//!   Deletes set a bit in the segment's delete vector (or drop a delta row) and are
//!   logged; updates are a delete and an insert (a new row id).
//! * Scans take the filter the planner pushed ([`Pred`]): segments whose zone maps rule
//!   it out are skipped, the rest are evaluated on the encoded chunks (a dictionary chunk
//!   decides each distinct value once), and only then are the requested columns of the
//!   matching rows decoded (late materialisation). COUNT(*) with a pushed filter never
//!   builds rows and is split across the cores; MIN/MAX come from the zone maps where
//!   every row of a segment counts; GROUP BY with COUNT/MIN/MAX is done on the encoded
//!   chunks, segments split across the cores (`group`).
//! * With the write-ahead log, `table.meta` and `delta.log` are written through it (a
//!   merge inside a transaction commits or rolls back with it); chunks are not logged —
//!   they are written past the ends the metadata knows and fsynced before the metadata
//!   that names them, and bytes past those ends are cut off at open. Every file and
//!   folder operation goes through the log's [`Vfs`] (the simulated disk in tests), and
//!   a segment whose chunks cannot be written (a full disk) leaves its rows in the delta.
//! * Every index is an ordered set of memcomparable entries in memory (`index`), built
//!   from the key columns when the table is opened and kept in step with each change
//!   (`keys`): lookups, ranges, ordered reads and index joins go through it, and the
//!   rows it names are read through a cache of decoded chunks (`cache`). UNIQUE and
//!   PRIMARY keys are enforced through an in-memory hash of their keys, built with it.
//!
//! Must not touch: SQL, sessions, transactions (undo is done above through this API).

mod cache;
mod check;
mod chunk;
mod estimate;
mod group;
mod index;
mod keys;
mod meta;
mod sparse;
mod vectors;

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;
use quarry_common::packed::PackedRow;
use quarry_common::{Error, Result, Row, Value};
use quarry_storage::vfs::{read_full, RealFs, VFile, Vfs};
use quarry_storage::{LoggedFile, Wal};
use quarry_storage_api::{
    Batch, Capabilities, Cursor, Engine, HandlerCounters, IndexEntry, IndexScan, Pred, RowFormat,
    RowId, ScanAgg, ScanRequest, Stat, Support, Table, TablePath, TableSchema, TableStats,
};

use cache::ChunkCache;
use chunk::{Chunk, Phys, TRUE};
use keys::unique_key;
use meta::{ChunkMeta, Ids, Meta, Segment, LOG_DELETE, LOG_INSERT};

/// Names of open tables in the engine's chunk cache.
static NEXT_CACHE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// `io::Result` → `Result`, naming the file or folder.
pub(crate) trait At<T> {
    fn at(self, what: impl std::fmt::Display) -> Result<T>;
}

impl<T> At<T> for std::io::Result<T> {
    fn at(self, what: impl std::fmt::Display) -> Result<T> {
        self.map_err(|e| Error::io(what, e))
    }
}

/// Rows per segment.
pub const SEGMENT_ROWS: usize = 65536;
/// The first bulk load of a table leaves a delta of at least this share of a segment (1/8)
/// as a short segment.
const TAIL_SEGMENT_SHARE: usize = 8;

pub struct ColumnEngine {
    segment_rows: usize,
    wal: Option<Arc<Wal>>,
    cache: Arc<ChunkCache>,
}

impl Default for ColumnEngine {
    fn default() -> ColumnEngine {
        ColumnEngine::with_segment_rows(SEGMENT_ROWS)
    }
}

impl ColumnEngine {
    /// An engine writing segments of `rows` rows (tests use small ones).
    pub fn with_segment_rows(rows: usize) -> ColumnEngine {
        ColumnEngine {
            segment_rows: rows.clamp(1, chunk::MAX_ROWS),
            wal: None,
            cache: Arc::new(ChunkCache::new(cache::default_budget())),
        }
    }

    /// Write metadata and delta through `wal`.
    pub fn with_wal(mut self, wal: Arc<Wal>) -> ColumnEngine {
        self.wal = Some(wal);
        self
    }

    /// The log's file system (the simulated disk in tests), else the real one.
    fn vfs(&self) -> Arc<dyn Vfs> {
        vfs_of(self.wal.as_ref())
    }

    /// The files the log knows by name (renamed and forgotten with the table).
    fn logged_files(dir: &Path) -> [PathBuf; 2] {
        [dir.join("table.meta"), dir.join(LOGGED_DELTA)]
    }
}

fn vfs_of(wal: Option<&Arc<Wal>>) -> Arc<dyn Vfs> {
    match wal {
        Some(w) => w.vfs().clone(),
        None => Arc::new(RealFs),
    }
}

/// The one delta log of a table written through the write-ahead log.
const LOGGED_DELTA: &str = "delta.log";

/// The folder holding a table's column files.
pub fn cols_dir(path: &TablePath) -> PathBuf {
    path.dir.join(format!("{}.cols", path.name))
}

/// `<column>.column`, with characters a file name cannot hold written as `@xxxx` (as
/// MySQL encodes table names).
pub fn column_file_name(column: &str) -> String {
    let mut out = String::new();
    for ch in column.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '$' {
            out.push(ch);
        } else {
            out.push_str(&format!("@{:04x}", ch as u32));
        }
    }
    out + ".column"
}

fn log_path(dir: &Path, gen: u64) -> PathBuf {
    dir.join(format!("delta.{gen}.log"))
}

impl Engine for ColumnEngine {
    fn name(&self) -> &'static str {
        "column"
    }
    fn comment(&self) -> &'static str {
        "Column store: segments with zone maps, dictionary/RLE/bit-packed encodings, condition pushdown"
    }
    fn create(&self, path: &TablePath, schema: &TableSchema) -> Result<()> {
        let dir = cols_dir(path);
        let vfs = self.vfs();
        vfs.create_dir_all(&dir).at(dir.display())?;
        for c in &schema.columns {
            let f = vfs
                .open(&dir.join(column_file_name(&c.name)), true)
                .at(dir.display())?;
            f.set_len(0).at(dir.display())?;
        }
        let delta = match self.wal {
            Some(_) => dir.join(LOGGED_DELTA),
            None => log_path(&dir, 0),
        };
        if let Some(w) = &self.wal {
            for f in ColumnEngine::logged_files(&dir) {
                w.forget(&f)?;
            }
        }
        vfs.open(&delta, true)
            .and_then(|f| f.set_len(0))
            .at(dir.display())?;
        Meta::empty(schema.columns.len()).store(&*vfs, &dir)
    }
    fn open(
        &self,
        path: &TablePath,
        schema: &TableSchema,
        counters: Arc<HandlerCounters>,
    ) -> Result<Arc<dyn Table>> {
        Ok(Arc::new(ColumnTable::open_with(
            &cols_dir(path),
            schema.clone(),
            counters,
            self.segment_rows,
            self.wal.clone(),
            self.cache.clone(),
        )?))
    }
    fn drop_table(&self, path: &TablePath) -> Result<()> {
        if let Some(w) = &self.wal {
            for f in ColumnEngine::logged_files(&cols_dir(path)) {
                w.forget(&f)?;
            }
        }
        match self.vfs().remove_dir_all(&cols_dir(path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(Error::io(cols_dir(path).display(), e))
            }
            _ => Ok(()),
        }
    }
    fn rename(&self, from: &TablePath, to: &TablePath) -> Result<()> {
        // Finishing an interrupted DDL at startup: the folder already moved.
        let vfs = self.vfs();
        if !vfs.exists(&cols_dir(from)) && vfs.exists(&cols_dir(to)) {
            return Ok(());
        }
        if let Some(w) = &self.wal {
            let (a, b) = (cols_dir(from), cols_dir(to));
            for (f, t) in ColumnEngine::logged_files(&a)
                .iter()
                .zip(ColumnEngine::logged_files(&b).iter())
            {
                w.rename(f, t)?;
            }
        }
        vfs.rename(&cols_dir(from), &cols_dir(to))
            .at(cols_dir(from).display())?;
        Ok(())
    }
}

/// A bit per segment row: set = deleted.
#[derive(Clone, Default)]
struct Deleted {
    bits: Vec<u64>,
    count: u32,
}

impl Deleted {
    fn from_positions(rows: u32, pos: &[u32]) -> Deleted {
        let mut d = Deleted {
            bits: vec![0; (rows as usize).div_ceil(64)],
            count: 0,
        };
        for &p in pos {
            d.set(p as usize);
        }
        d
    }
    #[inline]
    fn get(&self, i: usize) -> bool {
        self.count > 0 && self.bits[i / 64] & (1 << (i % 64)) != 0
    }
    fn set(&mut self, i: usize) -> bool {
        let was = self.bits[i / 64] & (1 << (i % 64)) != 0;
        self.bits[i / 64] |= 1 << (i % 64);
        if !was {
            self.count += 1;
        }
        !was
    }
    fn positions(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.count as usize);
        for (w, &bits) in self.bits.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                out.push((w * 64) as u32 + b.trailing_zeros());
                b &= b - 1;
            }
        }
        out
    }
}

struct State {
    segs: Vec<Arc<Segment>>,
    dels: Vec<Arc<Deleted>>,
    delta: Arc<BTreeMap<RowId, Row>>,
    next_id: RowId,
    merged_upto: RowId,
    gen: u64,
    log: LoggedFile,
    /// Where the next delta record goes (the log may hold an older generation after it).
    log_end: u64,
    log_buf: Vec<u8>,
    col_ends: Vec<u64>,
    bulk: bool,
    /// Rows the current bulk load has inserted, its first row id, and the segment count
    /// when it began.
    bulk_rows: u64,
    bulk_first_id: RowId,
    bulk_segs: usize,
    /// Delta rows a bulk load added without logging them (the next checkpoint does).
    unlogged: bool,
    /// Per index: for UNIQUE ones, row id by key.
    unique: Vec<Option<HashMap<Vec<u8>, RowId>>>,
    /// Per index: its ordered entries (`keys`).
    keys: Vec<index::KeyIndex>,
    /// Rows added and removed since the table opened (when statistics are stale).
    changes: u64,
    distinct: Vec<Option<keys::DistinctStat>>,
    live: u64,
    /// A bulk load's encoder: the load's last segment is encoded on another core while
    /// the load goes on, and written and made visible ([`ColumnTable::lock`]) before
    /// anything reads the table.
    encoder: Option<Encoder>,
}

/// One thread for the length of a bulk load (a thread per segment would start each on
/// fresh heap pages), encoding one segment at a time.
struct Encoder {
    rows: std::sync::mpsc::Sender<Vec<(RowId, Row)>>,
    done: std::sync::mpsc::Receiver<Encoded>,
    thread: std::thread::JoinHandle<()>,
    in_flight: bool,
}

impl Encoder {
    fn start(phys: Vec<Phys>) -> Encoder {
        let (rows, todo) = std::sync::mpsc::channel::<Vec<(RowId, Row)>>();
        let (finished, done) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            for seg in todo {
                if finished.send(encode_segment(&phys, seg, cores())).is_err() {
                    break;
                }
            }
        });
        Encoder {
            rows,
            done,
            thread,
            in_flight: false,
        }
    }

    fn finish(self) {
        drop(self.rows);
        let _ = self.thread.join();
    }
}

/// A segment's chunks, encoded but not yet written.
struct Encoded {
    ids: Ids,
    rows: u32,
    last_id: RowId,
    /// Per column: crc32c + bytes, the bytes' length, the zone map.
    chunks: Vec<(Vec<u8>, usize, chunk::Zone)>,
    /// The rows, back to the delta if the chunks cannot be written (they may be rows
    /// other transactions committed).
    source: Vec<(RowId, Row)>,
}

/// A segment's chunks as far as they were read (by column; None: not read).
type Chunks = Vec<Option<Chunk>>;

/// What a scan sees: the table as it was when the scan started.
#[derive(Clone)]
struct Snapshot {
    segs: Vec<Arc<Segment>>,
    dels: Vec<Arc<Deleted>>,
    delta: Arc<BTreeMap<RowId, Row>>,
}

impl Snapshot {
    /// `work` over consecutive runs of segments, one run per core; results in run order.
    fn in_parallel<T: Send>(
        &self,
        work: impl Fn(&[(Arc<Segment>, Arc<Deleted>)]) -> Result<T> + Sync,
    ) -> Vec<Result<T>> {
        let threads = cores().min(self.segs.len().max(1));
        let per = self.segs.len().div_ceil(threads).max(1);
        let segs: Vec<(Arc<Segment>, Arc<Deleted>)> = self
            .segs
            .iter()
            .cloned()
            .zip(self.dels.iter().cloned())
            .collect();
        let work = &work;
        std::thread::scope(|s| {
            let runs: Vec<_> = segs
                .chunks(per)
                .map(|run| s.spawn(move || work(run)))
                .collect();
            runs.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::internal("segment worker panicked")))
                })
                .collect()
        })
    }
}

pub struct ColumnTable {
    dir: PathBuf,
    segment_rows: usize,
    schema: TableSchema,
    phys: Vec<Phys>,
    vfs: Arc<dyn Vfs>,
    files: Vec<Arc<dyn VFile>>,
    counters: Arc<HandlerCounters>,
    state: Mutex<State>,
    /// With the log: the metadata file, rewritten in place.
    meta_file: Option<LoggedFile>,
    cache: Arc<ChunkCache>,
    /// This table's name in the cache.
    cache_id: u64,
    /// Per index: how its columns are stored in its entries.
    key_cols: Vec<Vec<quarry_engine_row::keycode::KeyCol>>,
    /// Row estimates by condition (`estimate`), with the change count they were taken at.
    estimates: Mutex<HashMap<String, (u64, u64)>>,
}

impl ColumnTable {
    pub fn open(
        dir: &Path,
        schema: TableSchema,
        counters: Arc<HandlerCounters>,
        segment_rows: usize,
    ) -> Result<ColumnTable> {
        let cache = Arc::new(ChunkCache::new(cache::default_budget()));
        ColumnTable::open_with(dir, schema, counters, segment_rows, None, cache)
    }

    fn open_with(
        dir: &Path,
        schema: TableSchema,
        counters: Arc<HandlerCounters>,
        segment_rows: usize,
        wal: Option<Arc<Wal>>,
        cache: Arc<ChunkCache>,
    ) -> Result<ColumnTable> {
        let vfs = vfs_of(wal.as_ref());
        let meta_file = match &wal {
            Some(w) => Some(LoggedFile::open(&dir.join("table.meta"), Some(w), false)?),
            None => None,
        };
        let meta = match &meta_file {
            Some(f) => {
                let mut buf = vec![0u8; f.len() as usize];
                f.read_exact_at(&mut buf, 0)?;
                Meta::from_stored(&buf)?
            }
            None => Meta::load(&*vfs, dir)?,
        };
        if meta.columns as usize != schema.columns.len() {
            return Err(Error::corrupt(format!(
                "{}: metadata has {} columns, the definition {}",
                dir.display(),
                meta.columns,
                schema.columns.len()
            )));
        }
        // Files of unfinished merges: other logs, a metadata file never renamed.
        for path in vfs.list(dir).at(dir.display())? {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let current = match wal {
                Some(_) => LOGGED_DELTA.to_string(),
                None => format!("delta.{}.log", meta.gen),
            };
            let stale = (name.starts_with("delta.") && name != current) || name.ends_with(".tmp");
            if stale {
                vfs.remove(&path).at(path.display())?;
            }
        }
        // Column files: bytes past the last chunk the metadata knows are an unfinished
        // merge's, and are cut off.
        let mut files = vec![];
        let mut col_ends = vec![];
        for (c, col) in schema.columns.iter().enumerate() {
            let f = vfs
                .open(&dir.join(column_file_name(&col.name)), true)
                .at(dir.display())?;
            let end = meta
                .segments
                .iter()
                .map(|s| s.chunks[c].off + 4 + s.chunks[c].len as u64)
                .max()
                .unwrap_or(0);
            if f.len().at(dir.display())? < end {
                return Err(Error::corrupt(format!(
                    "{}: column file {} shorter than its chunks",
                    dir.display(),
                    col.name
                )));
            }
            f.set_len(end).at(dir.display())?;
            files.push(f);
            col_ends.push(end);
        }
        let phys = schema.columns.iter().map(|c| Phys::of(&c.ty)).collect();
        let dels: Vec<Arc<Deleted>> = meta
            .segments
            .iter()
            .zip(&meta.deleted)
            .map(|(s, d)| Arc::new(Deleted::from_positions(s.rows, d)))
            .collect();
        let old_zones = meta.version == meta::VERSION_CASE_ONLY;
        let segs: Vec<Arc<Segment>> = meta.segments.into_iter().map(Arc::new).collect();
        let log_file = match &wal {
            Some(w) => LoggedFile::open(&dir.join(LOGGED_DELTA), Some(w), true)?,
            None => LoggedFile::open(&log_path(dir, meta.gen), None, true)?,
        };
        let live = segs.iter().map(|s| s.rows as u64).sum::<u64>()
            - dels.iter().map(|d| d.count as u64).sum::<u64>();
        let mut t = ColumnTable {
            dir: dir.to_path_buf(),
            segment_rows,
            phys,
            vfs,
            files,
            counters,
            state: Mutex::new(State {
                segs,
                dels,
                delta: Arc::new(BTreeMap::new()),
                next_id: meta.next_id,
                merged_upto: meta.merged_upto,
                gen: meta.gen,
                log: log_file,
                log_end: 0,
                log_buf: vec![],
                col_ends,
                bulk: false,
                bulk_rows: 0,
                bulk_first_id: 0,
                bulk_segs: 0,
                unlogged: false,
                unique: vec![],
                keys: vec![],
                changes: 0,
                distinct: vec![],
                live,
                encoder: None,
            }),
            key_cols: schema
                .indexes
                .iter()
                .map(|ix| quarry_engine_row::keyrange::key_cols(&schema, ix))
                .collect(),
            estimates: Mutex::new(HashMap::new()),
            schema,
            meta_file,
            cache,
            cache_id: NEXT_CACHE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        if old_zones {
            t.recompute_text_zones()?;
        }
        t.replay()?;
        t.build_keys()?;
        Ok(t)
    }

    /// Text zone maps of metadata version 1 order values case-folded only ('Ä' above
    /// 'Z'): they are recomputed from the chunks under the collation and kept in memory;
    /// the next merge writes them in the current version.
    fn recompute_text_zones(&mut self) -> Result<()> {
        let text: Vec<usize> = (0..self.phys.len())
            .filter(|&c| self.phys[c] == Phys::Str)
            .collect();
        if text.is_empty() {
            return Ok(());
        }
        let segs = std::mem::take(&mut self.state.get_mut().segs);
        let mut rezoned = Vec::with_capacity(segs.len());
        for seg in segs {
            let mut s = (*seg).clone();
            for &c in &text {
                let ch = self.chunk(&seg, c)?;
                let (mut min, mut max) = (Value::Null, Value::Null);
                for i in (0..ch.rows).filter(|&i| !ch.is_null(i)) {
                    let v = ch.value(i)?;
                    if min.is_null() || v.total_cmp(&min).is_lt() {
                        min = v.clone();
                    }
                    if max.is_null() || v.total_cmp(&max).is_gt() {
                        max = v;
                    }
                }
                s.chunks[c].zone.min = min;
                s.chunks[c].zone.max = max;
            }
            rezoned.push(Arc::new(s));
        }
        self.state.get_mut().segs = rezoned;
        Ok(())
    }

    /// Apply the delta log; a torn tail (a crash mid-write) is cut off.
    fn replay(&mut self) -> Result<()> {
        let st = self.state.get_mut();
        let mut buf = vec![0u8; st.log.len() as usize];
        st.log.read_exact_at(&mut buf, 0)?;
        let (records, used) = meta::log_records(&buf, st.gen);
        st.log_end = used as u64;
        let delta = Arc::make_mut(&mut st.delta);
        for (op, id, payload) in records {
            match op {
                LOG_INSERT if id >= st.merged_upto => {
                    let row = quarry_engine_row::decode(
                        &self.schema.columns,
                        RowFormat::Dynamic,
                        payload,
                    )?;
                    if delta.insert(id, row).is_none() {
                        st.live += 1;
                    }
                    st.next_id = st.next_id.max(id + 1);
                }
                LOG_DELETE => {
                    if delta.remove(&id).is_some() {
                        st.live -= 1;
                    } else if let Some((s, i)) = locate(&st.segs, id) {
                        if Arc::make_mut(&mut st.dels[s]).set(i) {
                            st.live -= 1;
                        }
                    }
                }
                _ => {}
            }
        }
        // Without the write-ahead log a torn tail is cut off; with it, what follows is an
        // older generation the next records overwrite.
        if used < buf.len() && self.meta_file.is_none() {
            st.log.truncate_and_commit(used as u64)?;
        }
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        let st = self.lock()?;
        Ok(Snapshot {
            segs: st.segs.clone(),
            dels: st.dels.clone(),
            delta: st.delta.clone(),
        })
    }

    /// Read and decode one chunk, checking its CRC.
    fn chunk(&self, seg: &Segment, col: usize) -> Result<Chunk> {
        let buf = self.chunk_bytes(seg, col)?;
        self.decoded(seg, col, &buf[4..])
    }

    /// A chunk's checksum (four bytes) and encoded bytes, the checksum verified.
    fn chunk_bytes(&self, seg: &Segment, col: usize) -> Result<Vec<u8>> {
        let m = &seg.chunks[col];
        let mut buf = vec![0u8; m.len as usize + 4];
        let got = read_full(&*self.files[col], &mut buf, m.off).at(self.dir.display())?;
        if got < buf.len() {
            return Err(Error::corrupt(format!(
                "{}: column {} ends inside the chunk at offset {}",
                self.dir.display(),
                self.schema.columns[col].name,
                m.off
            )));
        }
        HandlerCounters::add(&self.counters.io_read_calls, 1);
        HandlerCounters::add(&self.counters.io_read_bytes, buf.len() as u64);
        let crc = u32::from_le_bytes(buf[..4].try_into().unwrap());
        if crc32c::crc32c(&buf[4..]) != crc {
            return Err(Error::corrupt(format!(
                "{}: checksum mismatch in column {} at offset {}",
                self.dir.display(),
                self.schema.columns[col].name,
                m.off
            )));
        }
        Ok(buf)
    }

    /// The chunk encoded in `buf` decoded.
    fn decoded(&self, seg: &Segment, col: usize, buf: &[u8]) -> Result<Chunk> {
        let c = chunk::decode(self.phys[col], buf)?;
        if c.rows != seg.rows as usize {
            return Err(Error::corrupt(format!(
                "{}: chunk of column {} has {} rows, its segment {}",
                self.dir.display(),
                self.schema.columns[col].name,
                c.rows,
                seg.rows
            )));
        }
        Ok(c)
    }

    /// Truth of `p` for the rows of a segment, loading the chunks it reads into `chunks`.
    fn eval(&self, p: &Pred, seg: &Segment, chunks: &mut [Option<Chunk>]) -> Result<Truth> {
        Ok(match p {
            Pred::And(v) | Pred::Or(v) => {
                let and = matches!(p, Pred::And(_));
                // AND stops once nothing can be true, OR once everything is.
                let settled = if and { chunk::FALSE } else { TRUE };
                let mut acc = self.eval(&v[0], seg, chunks)?;
                for q in &v[1..] {
                    if acc.all(settled) {
                        break;
                    }
                    let o = self.eval(q, seg, chunks)?;
                    let pick = |a: u8, b: u8| if and { a.min(b) } else { a.max(b) };
                    acc = match (acc, o) {
                        (Truth::All(a), Truth::All(b)) => Truth::All(pick(a, b)),
                        (Truth::All(a), Truth::Rows(mut r))
                        | (Truth::Rows(mut r), Truth::All(a)) => {
                            r.iter_mut().for_each(|t| *t = pick(*t, a));
                            Truth::Rows(r)
                        }
                        (Truth::Rows(mut a), Truth::Rows(b)) => {
                            a.iter_mut().zip(b).for_each(|(x, y)| *x = pick(*x, y));
                            Truth::Rows(a)
                        }
                    };
                }
                acc
            }
            Pred::Not(q) => match self.eval(q, seg, chunks)? {
                Truth::All(t) => Truth::All(TRUE - t),
                Truth::Rows(mut r) => {
                    r.iter_mut().for_each(|t| *t = TRUE - *t);
                    Truth::Rows(r)
                }
            },
            leaf => {
                let col = leaf.column().unwrap_or(0);
                if let Some(t) = chunk::zone_truth(leaf, &seg.chunks[col].zone) {
                    return Ok(Truth::All(t));
                }
                if chunks[col].is_none() {
                    chunks[col] = Some(self.chunk(seg, col)?);
                }
                let mut out = Vec::with_capacity(seg.rows as usize);
                match chunks[col].as_ref().unwrap().eval_leaf(leaf, &mut out)? {
                    Some(t) => Truth::All(t),
                    None => Truth::Rows(out),
                }
            }
        })
    }

    /// Positions of a segment's live rows for which `filter` is true.
    fn select(
        &self,
        seg: &Segment,
        del: &Deleted,
        filter: Option<&Pred>,
        chunks: &mut [Option<Chunk>],
    ) -> Result<Vec<u32>> {
        let rows = seg.rows as usize;
        let all = || (0..rows as u32).filter(|&i| !del.get(i as usize)).collect();
        let Some(p) = filter else {
            return Ok(all());
        };
        if !chunk::may_match(p, &|c| (seg.chunks[c].zone.clone(), seg.rows)) {
            return Ok(vec![]);
        }
        Ok(match self.eval(p, seg, chunks)? {
            Truth::All(TRUE) => all(),
            Truth::All(_) => vec![],
            Truth::Rows(truth) => truth
                .iter()
                .enumerate()
                .filter(|&(i, &t)| t == TRUE && !del.get(i))
                .map(|(i, _)| i as u32)
                .collect(),
        })
    }

    /// Segment `i` of `snap`: the positions of its live rows that pass `filter` (counted
    /// as rows read), and the chunks read to decide them.
    fn select_segment(
        &self,
        snap: &Snapshot,
        i: usize,
        filter: Option<&Pred>,
    ) -> Result<(Arc<Segment>, Vec<u32>, Chunks)> {
        let seg = snap.segs[i].clone();
        let mut chunks: Vec<Option<Chunk>> = (0..self.schema.columns.len()).map(|_| None).collect();
        let pos = self.select(&seg, &snap.dels[i], filter, &mut chunks)?;
        HandlerCounters::add_read(&self.counters.read_rnd_next, pos.len() as u64);
        Ok((seg, pos, chunks))
    }

    /// The rows of segment `i` of `snap` that `filter` passes, with `columns` decoded (the
    /// others NULL), and their ids.
    fn segment_rows(
        &self,
        snap: &Snapshot,
        i: usize,
        filter: Option<&Pred>,
        columns: &[usize],
    ) -> Result<Vec<(RowId, Row)>> {
        let (seg, pos, mut chunks) = self.select_segment(snap, i, filter)?;
        if pos.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.materialize(&seg, &pos, columns, &mut chunks)?;
        Ok(pos.iter().map(|&p| seg.id(p as usize)).zip(rows).collect())
    }

    /// Rows of a segment at `positions`, with `columns` decoded (the others NULL).
    fn materialize(
        &self,
        seg: &Segment,
        positions: &[u32],
        columns: &[usize],
        chunks: &mut [Option<Chunk>],
    ) -> Result<Vec<Row>> {
        let width = self.schema.columns.len();
        // Unread columns stay NULL; the read ones are filled a column at a time (one
        // chunk's data at a time, where a row at a time tested every column of every row).
        let mut rows: Vec<Row> = positions.iter().map(|_| vec![Value::Null; width]).collect();
        let sparse = positions.len() * sparse::SPARSE < seg.rows as usize;
        for &c in columns {
            if chunks[c].is_none() {
                let buf = self.chunk_bytes(seg, c)?;
                // Few rows kept: read where they lie, unless the encoding must be decoded.
                if sparse {
                    let (phys, n) = (self.phys[c], seg.rows as usize);
                    if let Some(vals) = sparse::values_at(phys, &buf[4..], n, positions)? {
                        for (row, v) in rows.iter_mut().zip(vals) {
                            row[c] = v;
                        }
                        continue;
                    }
                }
                chunks[c] = Some(self.decoded(seg, c, &buf[4..])?);
            }
            let Some(ch) = chunks[c].as_ref() else {
                continue;
            };
            for (row, &p) in rows.iter_mut().zip(positions) {
                row[c] = ch.value(p as usize)?;
            }
        }
        Ok(rows)
    }

    /// Count of live segment rows matching `filter`.
    fn count_segment(&self, seg: &Segment, del: &Deleted, filter: Option<&Pred>) -> Result<u64> {
        let Some(p) = filter else {
            return Ok(seg.rows as u64 - del.count as u64);
        };
        if !chunk::may_match(p, &|c| (seg.chunks[c].zone.clone(), seg.rows)) {
            return Ok(0);
        }
        let mut chunks: Vec<Option<Chunk>> = (0..self.schema.columns.len()).map(|_| None).collect();
        if let (Some(col), 0) = (p.column(), del.count) {
            // One condition on one column: counted on its codes where it can be.
            if chunk::zone_truth(p, &seg.chunks[col].zone).is_none() {
                let ch = chunks[col].insert(self.chunk(seg, col)?);
                if let Some(n) = ch.count_leaf(p)? {
                    HandlerCounters::add_read(&self.counters.read_rnd_next, seg.rows as u64);
                    return Ok(n);
                }
            }
        }
        let truth = match self.eval(p, seg, &mut chunks)? {
            Truth::All(TRUE) => return Ok(seg.rows as u64 - del.count as u64),
            Truth::All(_) => return Ok(0),
            Truth::Rows(t) => t,
        };
        HandlerCounters::add_read(&self.counters.read_rnd_next, seg.rows as u64);
        Ok(if del.count == 0 {
            truth.iter().filter(|&&t| t == TRUE).count() as u64
        } else {
            truth
                .iter()
                .enumerate()
                .filter(|&(i, &t)| t == TRUE && !del.get(i))
                .count() as u64
        })
    }

    /// Fold the live, filter-passing, non-NULL values of column `col` in a segment into
    /// `acc`: from the zone map when every row counts, else from the decoded chunk.
    /// Which rows of a segment pass `filter`: None when none can, `Some(None)` when all
    /// do, else a truth byte per row (the chunks read for it are left in `chunks`).
    fn passing(
        &self,
        seg: &Segment,
        filter: Option<&Pred>,
        chunks: &mut [Option<Chunk>],
    ) -> Result<Option<Option<Vec<u8>>>> {
        let Some(p) = filter else {
            return Ok(Some(None));
        };
        if !chunk::may_match(p, &|c| (seg.chunks[c].zone.clone(), seg.rows)) {
            return Ok(None);
        }
        Ok(match self.eval(p, seg, chunks)? {
            Truth::All(TRUE) => Some(None),
            Truth::All(_) => None,
            Truth::Rows(t) => Some(Some(t)),
        })
    }

    fn min_max_segment(
        &self,
        seg: &Segment,
        del: &Deleted,
        col: usize,
        filter: Option<&Pred>,
        acc: &mut MinMax,
    ) -> Result<()> {
        let zone = &seg.chunks[col].zone;
        let mut chunks: Vec<Option<Chunk>> = (0..self.schema.columns.len()).map(|_| None).collect();
        let Some(truth) = self.passing(seg, filter, &mut chunks)? else {
            return Ok(());
        };
        if truth.is_none() && del.count == 0 {
            if !zone.min.is_null() {
                acc.add(&zone.min);
                acc.add(&zone.max);
            }
            return Ok(());
        }
        let ch = match chunks[col].take() {
            Some(c) => c,
            None => self.chunk(seg, col)?,
        };
        HandlerCounters::add_read(&self.counters.read_rnd_next, seg.rows as u64);
        for i in 0..ch.rows {
            let counts = !ch.is_null(i)
                && (del.count == 0 || !del.get(i))
                && truth.as_ref().is_none_or(|t| t[i] == TRUE);
            if counts {
                acc.add(&ch.value(i)?);
            }
        }
        Ok(())
    }

    /// Group the live rows of a segment that pass `filter` into `out`.
    fn group_segment(
        &self,
        seg: &Segment,
        del: &Deleted,
        filter: Option<&Pred>,
        group: &[usize],
        aggs: &[ScanAgg],
        out: &mut group::Groups,
    ) -> Result<()> {
        let mut chunks: Vec<Option<Chunk>> = (0..self.schema.columns.len()).map(|_| None).collect();
        let Some(truth) = self.passing(seg, filter, &mut chunks)? else {
            return Ok(());
        };
        for c in group
            .iter()
            .copied()
            .chain(aggs.iter().filter_map(agg_column))
        {
            if chunks[c].is_none() {
                chunks[c] = Some(self.chunk(seg, c)?);
            }
        }
        HandlerCounters::add_read(&self.counters.read_rnd_next, seg.rows as u64);
        let selected = |i: usize| {
            (del.count == 0 || !del.get(i)) && truth.as_ref().is_none_or(|t| t[i] == TRUE)
        };
        group::segment(&chunks, group, aggs, seg.rows as usize, &selected, out)
    }

    fn normalize(&self, row: Row) -> Result<Row> {
        if row.len() != self.schema.columns.len() {
            return Err(Error::internal("row width differs from the table's"));
        }
        row.into_iter()
            .zip(&self.phys)
            .map(|(v, p)| p.normalize(v))
            .collect()
    }

    /// The row at `id` (live), read under the state lock.
    fn row_at(&self, st: &State, id: RowId) -> Result<Row> {
        if let Some(r) = st.delta.get(&id) {
            return Ok(r.clone());
        }
        let (s, i) = locate(&st.segs, id)
            .filter(|&(s, i)| !st.dels[s].get(i))
            .ok_or_else(|| Error::internal(format!("row {id} not found")))?;
        Ok(self
            .rows_cached(&st.segs[s], &[i as u32], None)?
            .pop()
            .unwrap())
    }

    /// A chunk from the engine's cache, read and put there when missing.
    fn cached_chunk(&self, seg: &Segment, col: usize) -> Result<Arc<Chunk>> {
        let off = seg.chunks[col].off;
        if let Some(c) = self.cache.get(self.cache_id, col, off) {
            return Ok(c);
        }
        let c = Arc::new(self.chunk(seg, col)?);
        self.cache.put(self.cache_id, col, off, c.clone());
        Ok(c)
    }

    /// Rows of a segment at `positions` with `columns` (None: all; the others NULL),
    /// through the chunk cache (reads by row id).
    fn rows_cached(
        &self,
        seg: &Segment,
        positions: &[u32],
        columns: Option<&[usize]>,
    ) -> Result<Vec<Row>> {
        let width = self.schema.columns.len();
        let mut rows: Vec<Row> = positions.iter().map(|_| vec![Value::Null; width]).collect();
        // A column at a time: one chunk's data is walked for all positions, and no
        // per-cell Result passes through an iterator chain (Q21's fetches of a few
        // lineitem columns spent most of their time there).
        for c in 0..width {
            if columns.is_some_and(|cols| !cols.contains(&c)) {
                continue;
            }
            let chunk = self.cached_chunk(seg, c)?;
            for (row, &p) in rows.iter_mut().zip(positions) {
                row[c] = chunk.value(p as usize)?;
            }
        }
        Ok(rows)
    }

    /// An update is a delete and an insert (at a new id); `old` as in `delete_locked`.
    fn update_from(&self, id: RowId, old: Option<Row>, row: Row) -> Result<RowId> {
        let row = self.normalize(row)?;
        let mut st = self.lock()?;
        st.log.admit()?;
        self.check_unique(&st, &row, Some(id))?;
        self.delete_locked(&mut st, id, old)?;
        HandlerCounters::add(&self.counters.update, 1);
        let nid = self.insert_locked(&mut st, row)?;
        self.log_now(&mut st)?;
        Ok(nid)
    }

    fn insert_locked(&self, st: &mut State, row: Row) -> Result<RowId> {
        let id = st.next_id;
        st.next_id += 1;
        if st.bulk {
            st.unlogged = true;
            st.bulk_rows += 1;
        } else {
            let payload = encode_row(&self.schema, &row);
            meta::log_record(&mut st.log_buf, LOG_INSERT, id, st.gen, &payload);
        }
        self.keys_add(st, &row, id);
        Arc::make_mut(&mut st.delta).insert(id, row);
        st.live += 1;
        st.changes += 1;
        HandlerCounters::add(&self.counters.write, 1);
        if st.bulk && st.delta.len() >= self.segment_rows {
            if let Err(e) = self.merge(st, false) {
                // The segment could not be written (its rows are back in the delta): the
                // failed insert must leave nothing, its row included.
                if let Some(row) = Arc::make_mut(&mut st.delta).remove(&id) {
                    self.keys_remove(st, &row, id);
                    st.live -= 1;
                    st.bulk_rows -= 1;
                }
                return Err(e);
            }
        }
        Ok(id)
    }

    /// Delete the row at `id`; `old` is that row when the caller knows it (else it is read
    /// — through the chunk cache — only to learn its keys).
    fn delete_locked(&self, st: &mut State, id: RowId, old: Option<Row>) -> Result<()> {
        if self.has_keys() {
            let row = match old {
                Some(r) => r,
                None => self.row_at(st, id)?,
            };
            self.keys_remove(st, &row, id);
        }
        if Arc::make_mut(&mut st.delta).remove(&id).is_none() {
            let (s, i) = locate(&st.segs, id)
                .ok_or_else(|| Error::internal(format!("row {id} not found")))?;
            if !Arc::make_mut(&mut st.dels[s]).set(i) {
                return Err(Error::internal(format!("row {id} already deleted")));
            }
        }
        meta::log_record(&mut st.log_buf, LOG_DELETE, id, st.gen, &[]);
        st.live -= 1;
        st.changes += 1;
        HandlerCounters::add(&self.counters.delete, 1);
        Ok(())
    }

    /// Write the oldest delta rows as segments: every full segment's worth, or (`all`)
    /// everything. Outside a bulk load the metadata is then replaced.
    fn merge(&self, st: &mut State, all: bool) -> Result<()> {
        let mut wrote = false;
        while st.delta.len() >= self.segment_rows || (all && !st.delta.is_empty()) {
            // The segment in flight first: when it cannot be written its rows go back to
            // the delta, and none may be held here then.
            self.settle(st)?;
            let take = st.delta.len().min(self.segment_rows);
            let rows: Vec<(RowId, Row)> = {
                let delta = Arc::make_mut(&mut st.delta);
                let rest = match delta.keys().nth(take) {
                    Some(&k) => delta.split_off(&k),
                    None => BTreeMap::new(),
                };
                std::mem::replace(delta, rest).into_iter().collect()
            };
            // A bulk load keeps parsing while its last segment is encoded (one in flight
            // bounds the memory); everything else writes the segment now.
            if st.bulk && !all {
                let phys = &self.phys;
                let enc = st
                    .encoder
                    .get_or_insert_with(|| Encoder::start(phys.clone()));
                enc.rows
                    .send(rows)
                    .map_err(|_| Error::internal("column encoder stopped"))?;
                enc.in_flight = true;
            } else {
                self.install(st, encode_segment(&self.phys, rows, cores()))?;
            }
            wrote = true;
        }
        if st.delta.is_empty() && !st.encoder.as_ref().is_some_and(|e| e.in_flight) {
            st.merged_upto = st.next_id;
        }
        if wrote && !st.bulk {
            self.checkpoint(st)?;
        }
        Ok(())
    }

    /// The table's state, with any segment a bulk load has in flight written first.
    fn lock(&self) -> Result<parking_lot::MutexGuard<'_, State>> {
        let mut st = self.state.lock();
        self.settle(&mut st)?;
        Ok(st)
    }

    fn settle(&self, st: &mut State) -> Result<()> {
        let Some(e) = st.encoder.as_mut().filter(|e| e.in_flight) else {
            return Ok(());
        };
        e.in_flight = false;
        match e.done.recv() {
            Ok(enc) => self.install(st, enc),
            Err(_) => {
                if let Some(e) = st.encoder.take() {
                    e.finish();
                }
                Err(Error::internal("column encoder panicked"))
            }
        }
    }

    /// Write an encoded segment's chunks at the ends of the column files and add it. When
    /// a write fails (a full disk) the table is as before: the rows are back in the delta
    /// and the bytes written past the ends are overwritten by the next segment (or cut
    /// off at open).
    fn install(&self, st: &mut State, enc: Encoded) -> Result<()> {
        for (c, (rec, _, _)) in enc.chunks.iter().enumerate() {
            if let Err(e) = self.files[c].write_at(rec, st.col_ends[c]) {
                Arc::make_mut(&mut st.delta).extend(enc.source);
                return Err(Error::io(self.dir.display(), e));
            }
            HandlerCounters::add(&self.counters.io_write_calls, 1);
            HandlerCounters::add(&self.counters.io_write_bytes, rec.len() as u64);
        }
        let mut chunks = Vec::with_capacity(enc.chunks.len());
        for (end, (rec, len, zone)) in st.col_ends.iter_mut().zip(enc.chunks) {
            chunks.push(ChunkMeta {
                off: *end,
                len: len as u32,
                zone,
            });
            *end += rec.len() as u64;
        }
        st.merged_upto = st.merged_upto.max(enc.last_id + 1);
        st.dels
            .push(Arc::new(Deleted::from_positions(enc.rows, &[])));
        st.segs.push(Arc::new(Segment {
            rows: enc.rows,
            ids: enc.ids,
            chunks,
        }));
        Ok(())
    }

    /// Make the segments durable, start a new log holding the delta, and replace the
    /// metadata (the commit point); then drop the old log.
    fn checkpoint(&self, st: &mut State) -> Result<()> {
        self.settle(st)?;
        for f in &self.files {
            f.sync().at(self.dir.display())?;
        }
        let gen = st.gen + 1;
        let mut buf = Vec::new();
        for (id, row) in st.delta.iter() {
            meta::log_record(
                &mut buf,
                LOG_INSERT,
                *id,
                gen,
                &encode_row(&self.schema, row),
            );
        }
        let m = Meta {
            version: meta::VERSION,
            gen,
            next_id: st.next_id,
            merged_upto: st.merged_upto,
            columns: self.schema.columns.len() as u32,
            segments: st.segs.iter().map(|s| (**s).clone()).collect(),
            deleted: st.dels.iter().map(|d| d.positions()).collect(),
        };
        if let Some(meta_file) = &self.meta_file {
            // Both rewrites are logged in the open transaction: it commits them or undoes
            // them, and recovery does the same.
            st.log.write_at(&buf, 0)?;
            st.log_end = buf.len() as u64;
            meta_file.write_at(&m.to_stored(), 0)?;
            st.gen = gen;
            st.log_buf.clear();
            st.unlogged = false;
            return Ok(());
        }
        let log = LoggedFile::open(&log_path(&self.dir, gen), None, true)?;
        log.truncate_and_commit(0)?;
        log.write_at(&buf, 0)?;
        log.sync()?;
        m.store(&*self.vfs, &self.dir)?;
        let old = log_path(&self.dir, st.gen);
        st.gen = gen;
        st.log = log;
        st.log_end = buf.len() as u64;
        st.log_buf.clear();
        st.unlogged = false;
        self.vfs.remove(&old).at(old.display())?;
        Ok(())
    }

    /// Write the buffered delta records to the delta log.
    fn write_log_buf(&self, st: &mut State) -> Result<()> {
        if st.log_buf.is_empty() {
            return Ok(());
        }
        st.log.write_at(&st.log_buf, st.log_end)?;
        st.log_end += st.log_buf.len() as u64;
        HandlerCounters::add(&self.counters.io_write_calls, 1);
        HandlerCounters::add(&self.counters.io_write_bytes, st.log_buf.len() as u64);
        st.log_buf.clear();
        Ok(())
    }

    fn flush_locked(&self, st: &mut State) -> Result<()> {
        if st.unlogged {
            return self.checkpoint(st);
        }
        self.write_log_buf(st)?;
        if st.delta.len() >= self.segment_rows {
            self.merge(st, false)?;
        }
        Ok(())
    }

    /// Merge the whole delta into segments now (OPTIMIZE TABLE).
    pub fn merge_all(&self) -> Result<()> {
        let mut st = self.lock()?;
        self.flush_locked(&mut st)?;
        self.merge(&mut st, true)?;
        self.checkpoint(&mut st)
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Encode a segment's columns, spread over up to `cores` threads (they are independent).
fn encode_segment(phys: &[Phys], rows: Vec<(RowId, Row)>, cores: usize) -> Encoded {
    let first = rows[0].0;
    let dense = rows
        .iter()
        .enumerate()
        .all(|(i, (id, _))| *id == first + i as u64);
    let ids = if dense {
        Ids::Dense(first)
    } else {
        Ids::List(rows.iter().map(|(id, _)| *id).collect())
    };
    let ncols = phys.len();
    let threads = cores.min(ncols).max(1);
    let encode = |c: usize| {
        let values: Vec<&Value> = rows.iter().map(|(_, r)| &r[c]).collect();
        let (bytes, zone) = chunk::encode(phys[c], &values);
        let mut rec = Vec::with_capacity(bytes.len() + 4);
        rec.extend_from_slice(&crc32c::crc32c(&bytes).to_le_bytes());
        rec.extend_from_slice(&bytes);
        (c, rec, bytes.len(), zone)
    };
    let mut encoded: Vec<(usize, Vec<u8>, usize, chunk::Zone)> = if threads == 1 {
        (0..ncols).map(encode).collect()
    } else {
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    let encode = &encode;
                    s.spawn(move || (t..ncols).step_by(threads).map(encode).collect::<Vec<_>>())
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("column encoder panicked"))
                .collect()
        })
    };
    encoded.sort_by_key(|e| e.0);
    Encoded {
        ids,
        rows: rows.len() as u32,
        last_id: rows.last().map_or(first, |r| r.0),
        chunks: encoded
            .into_iter()
            .map(|(_, rec, len, zone)| (rec, len, zone))
            .collect(),
        source: rows,
    }
}

/// The column an aggregate reads, if any.
fn agg_column(a: &ScanAgg) -> Option<usize> {
    match *a {
        ScanAgg::CountStar => None,
        ScanAgg::Count(c) | ScanAgg::Min(c) | ScanAgg::Max(c) => Some(c),
    }
}

/// The smallest and largest value seen so far; the first of equals is kept, as a scan's
/// MIN/MAX would keep it.
#[derive(Default)]
struct MinMax(Option<(Value, Value)>);

impl MinMax {
    fn add(&mut self, v: &Value) {
        match &mut self.0 {
            None => self.0 = Some((v.clone(), v.clone())),
            Some((lo, hi)) => {
                if v.total_cmp(lo).is_lt() {
                    *lo = v.clone();
                }
                if v.total_cmp(hi).is_gt() {
                    *hi = v.clone();
                }
            }
        }
    }
}

/// A condition's truth over a segment: the same for every row, or one per row.
enum Truth {
    All(u8),
    Rows(Vec<u8>),
}

impl Truth {
    fn all(&self, t: u8) -> bool {
        match self {
            Truth::All(x) => *x == t,
            Truth::Rows(r) => r.iter().all(|&x| x == t),
        }
    }
}

/// The segment and position of a row id, if a segment holds it.
fn locate(segs: &[Arc<Segment>], id: RowId) -> Option<(usize, usize)> {
    let s = segs.partition_point(|s| s.last_id() < id);
    let seg = segs.get(s)?;
    if seg.first_id() > id {
        return None;
    }
    seg.position(id).map(|i| (s, i))
}

fn encode_row(schema: &TableSchema, row: &Row) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    quarry_engine_row::encode(&schema.columns, RowFormat::Dynamic, row, &mut out);
    out
}

struct ColumnCursor<'a> {
    t: &'a ColumnTable,
    snap: Snapshot,
    filter: Option<Pred>,
    columns: Vec<usize>,
    batch_rows: usize,
    seg: usize,
    ready: std::vec::IntoIter<(RowId, Row)>,
    delta_done: bool,
}

impl Cursor for ColumnCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        loop {
            if self.ready.len() > 0 {
                let mut b = Batch::default();
                for (id, row) in self.ready.by_ref().take(self.batch_rows) {
                    b.ids.push(id);
                    b.rows.push(row);
                }
                return Ok(Some(b));
            }
            if self.seg < self.snap.segs.len() {
                let rows = self.t.segment_rows(
                    &self.snap,
                    self.seg,
                    self.filter.as_ref(),
                    &self.columns,
                )?;
                self.seg += 1;
                self.ready = rows.into_iter();
                continue;
            }
            if !self.delta_done {
                self.delta_done = true;
                let keep: Vec<(RowId, Row)> = self
                    .snap
                    .delta
                    .iter()
                    .filter(|(_, r)| self.filter.as_ref().is_none_or(|p| p.eval(r) == Some(true)))
                    .map(|(id, r)| {
                        // As from segments: the columns not asked for stay NULL.
                        let mut row = vec![Value::Null; r.len()];
                        for &c in &self.columns {
                            if let (Some(to), Some(v)) = (row.get_mut(c), r.get(c)) {
                                *to = v.clone();
                            }
                        }
                        (*id, row)
                    })
                    .collect();
                HandlerCounters::add_read(&self.t.counters.read_rnd_next, keep.len() as u64);
                self.ready = keep.into_iter();
                continue;
            }
            return Ok(None);
        }
    }
}

impl Table for ColumnTable {
    fn schema(&self) -> &TableSchema {
        &self.schema
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            index_access: true,
            row_locks: false,
            columnar: true,
            checks_any_filter: true,
        }
    }

    fn pushdown(&self, _filter: &Pred) -> Support {
        Support::Exact
    }

    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        let columns = req
            .columns
            .clone()
            .unwrap_or_else(|| (0..self.schema.columns.len()).collect());
        Ok(Box::new(ColumnCursor {
            t: self,
            snap: self.snapshot()?,
            filter: req.filter.clone(),
            columns,
            batch_rows: req.batch_rows.max(1),
            seg: 0,
            ready: Vec::new().into_iter(),
            delta_done: false,
        }))
    }

    fn scan_columns(
        &self,
        req: &ScanRequest,
        parts: usize,
    ) -> Result<Option<quarry_storage_api::ColumnCursors<'_>>> {
        let Some(columns) = req.columns.clone() else {
            return Ok(None);
        };
        let Some(types) = columns
            .iter()
            .map(|&c| {
                let col = self.schema.columns.get(c)?;
                quarry_storage_api::VectorType::of(&col.ty)
            })
            .collect::<Option<Vec<_>>>()
        else {
            return Ok(None);
        };
        let snap = self.snapshot()?;
        // Consecutive runs of segments; the delta's rows come last, with the last run.
        let n = snap.segs.len();
        let per = n.div_ceil(parts.clamp(1, n.max(1))).max(1);
        let mut cursors: quarry_storage_api::ColumnCursors<'_> = Vec::new();
        let mut from = 0;
        loop {
            let to = (from + per).min(n);
            cursors.push(Box::new(vectors::VectorCursor {
                t: self,
                snap: snap.clone(),
                filter: req.filter.clone(),
                columns: columns.clone(),
                types: types.clone(),
                seg: from,
                end: to,
                delta_done: to < n,
            }));
            if to >= n {
                break;
            }
            from = to;
        }
        Ok(Some(cursors))
    }

    fn estimate(&self, req: &ScanRequest) -> Option<u64> {
        self.estimate_rows(req.filter.as_ref()?)
    }

    fn count(&self, req: &ScanRequest) -> Result<Option<u64>> {
        let snap = self.snapshot()?;
        let filter = req.filter.as_ref();
        let counted: Result<u64> = snap
            .in_parallel(|part| {
                let mut n = 0;
                for (seg, del) in part {
                    n += self.count_segment(seg, del, filter)?;
                }
                Ok(n)
            })
            .into_iter()
            .sum();
        let delta = snap
            .delta
            .values()
            .filter(|r| filter.is_none_or(|p| p.eval(r) == Some(true)))
            .count() as u64;
        Ok(Some(counted? + delta))
    }

    fn min_max(&self, col: usize, req: &ScanRequest) -> Result<Option<(Value, Value)>> {
        if col >= self.schema.columns.len() {
            return Ok(None);
        }
        let snap = self.snapshot()?;
        let filter = req.filter.as_ref();
        let mut acc = MinMax::default();
        for (seg, del) in snap.segs.iter().zip(&snap.dels) {
            self.min_max_segment(seg, del, col, filter, &mut acc)?;
        }
        for r in snap.delta.values() {
            if !r[col].is_null() && filter.is_none_or(|p| p.eval(r) == Some(true)) {
                acc.add(&r[col]);
            }
        }
        Ok(Some(acc.0.unwrap_or((Value::Null, Value::Null))))
    }

    fn aggregate(
        &self,
        req: &ScanRequest,
        group: &[usize],
        aggs: &[ScanAgg],
        max_groups: usize,
    ) -> Result<Option<Vec<Row>>> {
        let ncols = self.schema.columns.len();
        if group
            .iter()
            .copied()
            .chain(aggs.iter().filter_map(agg_column))
            .any(|c| c >= ncols)
        {
            return Ok(None);
        }
        let snap = self.snapshot()?;
        let filter = req.filter.as_ref();
        // Runs of segments are grouped apart and merged in order, so groups keep the
        // order a scan meets them in.
        let parts = snap.in_parallel(|part| {
            let mut g = group::Groups::new(group.len(), aggs);
            for (seg, del) in part {
                self.group_segment(seg, del, filter, group, aggs, &mut g)?;
                if g.len() > max_groups {
                    return Ok(None);
                }
            }
            Ok(Some(g))
        });
        let mut total = group::Groups::new(group.len(), aggs);
        for part in parts {
            match part? {
                Some(g) => total.absorb(g),
                None => return Ok(None),
            }
            if total.len() > max_groups {
                return Ok(None);
            }
        }
        for r in snap.delta.values() {
            if filter.is_none_or(|p| p.eval(r) == Some(true)) {
                total.add_row(r, group);
            }
        }
        if total.len() > max_groups {
            return Ok(None);
        }
        Ok(Some(total.rows))
    }

    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        self.fetch_columns(ids, None)
    }

    fn fetch_columns(&self, ids: &[RowId], columns: Option<&[usize]>) -> Result<Vec<Row>> {
        let snap = self.snapshot()?;
        let mut out: Vec<Option<Row>> = ids.iter().map(|_| None).collect();
        // Segment rows grouped by segment, so each segment's chunks are decoded once.
        let mut wanted: BTreeMap<usize, Vec<(u32, usize)>> = BTreeMap::new();
        for (k, &id) in ids.iter().enumerate() {
            if let Some(r) = snap.delta.get(&id) {
                out[k] = Some(r.clone());
            } else if let Some((s, i)) = locate(&snap.segs, id) {
                if !snap.dels[s].get(i) {
                    wanted.entry(s).or_default().push((i as u32, k));
                }
            }
        }
        for (s, list) in wanted {
            let pos: Vec<u32> = list.iter().map(|(p, _)| *p).collect();
            let rows = self.rows_cached(&snap.segs[s], &pos, columns)?;
            for ((_, k), row) in list.into_iter().zip(rows) {
                out[k] = Some(row);
            }
        }
        HandlerCounters::add(&self.counters.read_rnd, ids.len() as u64);
        out.into_iter()
            .zip(ids)
            .map(|(r, id)| r.ok_or_else(|| Error::internal(format!("row {id} not found"))))
            .collect()
    }

    fn index_scan(
        &self,
        scan: &IndexScan,
        visit: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        self.scan_index(scan, visit)
    }

    fn index_lookups(&self, index: usize, keys: &[Vec<Value>]) -> Result<Vec<Vec<RowId>>> {
        self.lookup_keys(index, keys)
    }

    fn index_count(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Option<u64>> {
        HandlerCounters::add(&self.counters.read_key, 1);
        Ok(self.count_keys(index, lo, hi))
    }

    fn index_key(&self, index: usize, row: &Row, id: RowId) -> Option<Vec<u8>> {
        self.schema.indexes.get(index)?;
        let mut e = Vec::with_capacity(24);
        self.entry(index, row, id, &mut e);
        Some(e)
    }

    fn index_key_in(
        &self,
        index: usize,
        entry: &[u8],
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<bool> {
        self.key_in(index, entry, lo, hi)
    }

    fn index_covers(&self, index: usize) -> Vec<bool> {
        self.schema.indexes.get(index).map_or(vec![], |ix| {
            quarry_engine_row::keyrange::covers(&self.schema, ix)
        })
    }

    fn records_in_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Stat> {
        Ok(self
            .count_keys(index, lo, hi)
            .map_or(Stat::Unknown, Stat::Estimated))
    }

    fn index_distinct(&self, index: usize) -> Result<Vec<Stat>> {
        Ok(self.distinct_keys(index))
    }

    fn insert(&self, row: Row) -> Result<RowId> {
        let row = self.normalize(row)?;
        let mut st = self.state.lock();
        st.log.admit()?;
        self.check_unique(&st, &row, None)?;
        let id = self.insert_locked(&mut st, row)?;
        self.log_now(&mut st)?;
        Ok(id)
    }

    fn update(&self, id: RowId, row: Row) -> Result<RowId> {
        self.update_from(id, None, row)
    }

    fn update_known(
        &self,
        id: RowId,
        old: &PackedRow,
        row: Row,
        note: &mut dyn FnMut(RowId),
    ) -> Result<RowId> {
        let nid = self.update_from(id, Some(old.unpack()), row)?;
        if nid != id {
            note(nid);
        }
        Ok(nid)
    }

    fn delete(&self, id: RowId) -> Result<()> {
        let mut st = self.lock()?;
        st.log.admit()?;
        self.delete_locked(&mut st, id, None)?;
        self.log_now(&mut st)
    }

    fn delete_known(&self, id: RowId, old: &PackedRow) -> Result<()> {
        let mut st = self.lock()?;
        st.log.admit()?;
        self.delete_locked(&mut st, id, Some(old.unpack()))?;
        self.log_now(&mut st)
    }

    fn truncate(&self) -> Result<()> {
        let mut st = self.lock()?;
        st.segs.clear();
        st.dels.clear();
        st.delta = Arc::new(BTreeMap::new());
        st.merged_upto = st.next_id;
        st.live = 0;
        self.forget_keys(&mut st);
        self.cache.forget(self.cache_id);
        // The empty metadata is committed before the column files lose their bytes (with
        // the log: cutting the delta log commits the truncation).
        self.checkpoint(&mut st)?;
        if self.meta_file.is_some() {
            let end = st.log_end;
            st.log.truncate_and_commit(end)?;
        }
        for (f, end) in self.files.iter().zip(st.col_ends.iter_mut()) {
            f.set_len(0).at(self.dir.display())?;
            *end = 0;
        }
        Ok(())
    }

    fn optimize(&self) -> Result<()> {
        self.merge_all()?;
        self.sync()
    }

    fn begin_bulk(&self, _write_buffer: usize) {
        let mut st = self.state.lock();
        st.bulk = true;
        st.bulk_rows = 0;
        st.bulk_first_id = st.next_id;
        st.bulk_segs = st.segs.len();
    }

    fn end_bulk(&self) -> Result<()> {
        let mut st = self.lock()?;
        st.bulk = false;
        if let Some(e) = st.encoder.take() {
            e.finish();
        }
        let had = st.unlogged;
        // The tail of a load of many segments becomes a (short) segment too: a delta is read
        // row by row, and a segment's zone maps skip it whole. So does the first load of a
        // table that had no segment, once its delta holds a share of one (a table of
        // 15 000 rows loaded at once: TPC-H SF 0.1's customer, scanned row by row from the
        // delta by every query that read it). Later smaller bulk statements wait in the
        // delta to fill a segment together: a dump's extended INSERTs of some thousand
        // rows each would otherwise leave a short segment each.
        let tail = st.bulk_rows >= self.segment_rows as u64
            || (st.bulk_segs == 0 && st.delta.len() * TAIL_SEGMENT_SHARE >= self.segment_rows);
        self.merge(&mut st, tail)?;
        if self.meta_file.is_some() && st.segs.len() == st.bulk_segs && st.unlogged {
            // With the write-ahead log, a load that formed no segment logs its rows like
            // single inserts: appending beats rewriting the whole delta each statement.
            let gen = st.gen;
            let mut buf = std::mem::take(&mut st.log_buf);
            for (id, row) in st.delta.range(st.bulk_first_id..) {
                meta::log_record(
                    &mut buf,
                    LOG_INSERT,
                    *id,
                    gen,
                    &encode_row(&self.schema, row),
                );
            }
            st.log_buf = buf;
            st.unlogged = false;
        } else if had || st.unlogged {
            self.checkpoint(&mut st)?;
        }
        self.flush_locked(&mut st)
    }

    fn flush(&self) -> Result<()> {
        let mut st = self.lock()?;
        if st.bulk {
            return Ok(());
        }
        self.flush_locked(&mut st)
    }

    fn sync(&self) -> Result<()> {
        let mut st = self.lock()?;
        if !st.bulk {
            self.flush_locked(&mut st)?;
        }
        st.log.sync()?;
        if let Some(m) = &self.meta_file {
            m.sync()?;
        }
        Ok(())
    }

    fn stats(&self) -> TableStats {
        let st = self.state.lock();
        let data: u64 = st.col_ends.iter().sum::<u64>() + st.log_end;
        TableStats {
            rows: Stat::Exact(st.live),
            data_bytes: data,
            free_bytes: 0,
            avg_row_bytes: data.checked_div(st.live).unwrap_or(0),
        }
    }

    fn check(&self) -> Result<Vec<String>> {
        self.check_all()
    }
}

impl Drop for ColumnTable {
    fn drop(&mut self) {
        let st = self.state.get_mut();
        st.bulk = false;
        let _ = self.flush_locked_owned();
        // A table opened again gets another name in the cache.
        self.cache.forget(self.cache_id);
    }
}

impl ColumnTable {
    fn flush_locked_owned(&self) -> Result<()> {
        let mut st = self.lock()?;
        self.flush_locked(&mut st)?;
        st.log.sync()
    }

    /// With the write-ahead log a change reaches the delta log (as a logged write) at
    /// once, so the transaction's COMMIT covers it; without, it waits for a flush.
    fn log_now(&self, st: &mut State) -> Result<()> {
        if self.meta_file.is_some() && !st.bulk {
            self.write_log_buf(st)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
