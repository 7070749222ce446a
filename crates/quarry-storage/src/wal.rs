//! The write-ahead log shared by the engines: every change to a logged file (a data file
//! through [`LoggedFile`], a page through the buffer pool) is a log record before it may
//! reach its file, and a transaction is committed when its COMMIT record is durable.
//!
//! ```text
//!  <datadir>/#wal/<start LSN, 16 hex>.log  segments of one byte stream (LSN = position)
//!  <datadir>/#wal/control                  two slots: the LSN of the last CHECKPOINT record
//!
//!  record: len u32 │ crc32c u32 (of the rest) │ type u8 │ txn u64 │ body
//!    WRITE     fno u32, off u64, n u32, redo[n], old_len u64, m u32, undo[m]
//!    PAGE      fno u32, page u32, k u16, k × (at u16, n u16, redo[n], undo[n])
//!    CREATE    fno u32, kind u8, path        RENAME  fno u32, from, to      DROP  fno u32
//!    COMMIT    —        ABORT —              TRUNCATE fno u32, len u64 (commits txn)
//!    CHECKPOINT redo_from u64, undo_from u64, next_fno u32, next_txn u64, files
//! ```
//!
//! * Records are physical: bytes at a file offset, ranges of a page. Redo sets bytes and
//!   undo restores the bytes a change replaced, so both are idempotent and a torn page or
//!   a lost unsynced write is repaired by replaying everything since the checkpoint.
//! * Many transactions write at once; each thread works for at most one
//!   ([`Wal::set_thread_txn`]) and its records carry that transaction's id. Undo of the
//!   transactions unfinished at a crash is physical, which is exact where no finished
//!   transaction changed the same bytes after them: data files guarantee it (a record's
//!   bytes belong to the one transaction that locks the row; a freed slot is reused only
//!   after its deleter ended; an append is undone by marking its record deleted, never by
//!   cutting the file), and a page changed by a finished transaction after an unfinished
//!   one is not undone — its file is emptied and reported for rebuilding instead
//!   ([`Recovery::rebuild`]; B-tree indexes are rebuilt from their table's rows). Format
//!   and rules: docs/formats/write-ahead-log.md.
//! * Group commit: committers wait for one flusher that writes and fsyncs everything
//!   appended so far. `innodb_flush_log_at_trx_commit`: 1 fsync at commit, 2 write at
//!   commit, 0 neither — a background thread fsyncs each second.
//! * Fuzzy checkpoint: note the end of the log C, write every logged change below C to its
//!   file and fsync, then record C; segments wholly below what recovery needs are removed.
//! * Recovery: analysis finds which transactions committed, redo replays every record from
//!   C, undo reverses the unfinished transactions newest-first, touched pages are re-sealed.

use crate::page::{seal, PAGE_SIZE};
use crate::pool::BufferPool;
use crate::space::Watermark;
use crate::vfs::{read_full, VFile, Vfs};
use parking_lot::{Condvar, Mutex};
use quarry_common::{Error, Result};
use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

pub use crate::logged::LoggedFile;
use crate::logged::LoggedInner;

pub type Lsn = u64;
pub type TxnId = u64;

const SEGMENT_BYTES: u64 = 64 << 20;
/// Segment size of logs opened after [`Wal::set_segment_bytes_for_tests`] (0: default).
static SEGMENT_OVERRIDE: AtomicU64 = AtomicU64::new(0);

fn segment_bytes() -> u64 {
    match SEGMENT_OVERRIDE.load(Ordering::Relaxed) {
        0 => SEGMENT_BYTES,
        n => n,
    }
}
/// The log's folder in the datadir. A leading `#` keeps it apart from databases (the
/// catalog neither lists nor creates such names), as MySQL's `#innodb_redo`.
pub const LOG_DIR: &str = "#wal";
/// Bytes of the written-but-unsynced copy kept allocated between fsyncs.
const UNSYNCED_KEEP: usize = 8 << 20;
/// Unsynced bytes past which a write of the log also fsyncs it, freeing their copy: a
/// statement that logs gigabytes before its COMMIT must not hold them all in memory.
const UNSYNCED_LIMIT: usize = 16 << 20;
/// The first LSN of a new log (0 means "none").
const FIRST_LSN: Lsn = 16;
const HDR: usize = 17;
/// Bytes written first, alone, while the disk is short of space (`short_of_space`).
const SPACE_PROBE: usize = 64 << 10;
/// Appenders write the log buffer out themselves past this size.
const BUFFER_LIMIT: usize = 16 << 20;
/// Disk space is reserved for the log this far ahead of the COMMIT that needs it (less
/// when the disk has less), so most commits find it already there.
const RESERVE_STEP: u64 = 1 << 20;
const CONTROL_MAGIC: &[u8; 8] = b"QRYWALC1";

const T_WRITE: u8 = 1;
const T_PAGE: u8 = 2;
const T_CREATE: u8 = 3;
const T_RENAME: u8 = 4;
const T_DROP: u8 = 5;
const T_COMMIT: u8 = 6;
const T_ABORT: u8 = 7;
const T_TRUNCATE: u8 = 8;
const T_CHECKPOINT: u8 = 9;

/// What a logged file holds: plain bytes, or checksummed pages re-sealed after recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Bytes = 1,
    Pages = 2,
}

impl FileKind {
    fn from_u8(b: u8) -> Result<FileKind> {
        match b {
            1 => Ok(FileKind::Bytes),
            2 => Ok(FileKind::Pages),
            _ => Err(Error::corrupt("write-ahead log (file kind)")),
        }
    }
}

/// `innodb_flush_log_at_trx_commit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    /// 0: neither write nor fsync at commit; both once a second.
    EverySecond = 0,
    /// 1: write and fsync at every commit (the default).
    EachCommit = 1,
    /// 2: write at commit, fsync once a second.
    WriteAtCommit = 2,
}

impl FlushPolicy {
    pub fn from_i64(v: i64) -> FlushPolicy {
        match v {
            0 => FlushPolicy::EverySecond,
            2 => FlushPolicy::WriteAtCommit,
            _ => FlushPolicy::EachCommit,
        }
    }
}

#[derive(Default)]
pub struct WalStats {
    pub records: AtomicU64,
    pub bytes: AtomicU64,
    pub writes: AtomicU64,
    pub fsyncs: AtomicU64,
    pub commits: AtomicU64,
    pub checkpoints: AtomicU64,
}

/// What recovery did at open.
#[derive(Debug, Default, Clone)]
pub struct Recovery {
    /// Log bytes scanned from the oldest needed record to the end.
    pub scanned_bytes: u64,
    pub redone: u64,
    pub undone_txns: u64,
    pub committed_txns: u64,
    /// Page files recovery emptied instead of undoing (a finished transaction changed a
    /// page after an unfinished one): their owner rebuilds them.
    pub rebuild: Vec<PathBuf>,
    pub elapsed: Duration,
}

thread_local! {
    /// The transaction this thread's log records belong to (0: none).
    static THREAD_TXN: Cell<TxnId> = const { Cell::new(0) };
    /// This thread is undoing changes (`Wal::rolling_back`).
    static ROLLING_BACK: Cell<bool> = const { Cell::new(false) };
}

/// While alive, this thread's changes undo earlier ones (see `Wal::rolling_back`).
pub struct RollingBack(bool);

impl Drop for RollingBack {
    fn drop(&mut self) {
        ROLLING_BACK.set(self.0);
    }
}

struct Appender {
    bytes: Vec<u8>,
    /// LSN of `bytes[0]`.
    start: Lsn,
    /// Open transactions and the LSN of each one's first record (0: none yet).
    active: HashMap<TxnId, Lsn>,
    next_txn: TxnId,
    /// Buffer size at which an appender next tries to write the buffer out (0: at
    /// BUFFER_LIMIT).
    retry_at: usize,
}

impl Appender {
    fn next_lsn(&self) -> Lsn {
        self.start + self.bytes.len() as u64
    }

    /// Where undo of the open transactions would start.
    fn undo_from(&self) -> Lsn {
        self.active
            .values()
            .copied()
            .filter(|&l| l != 0)
            .min()
            .unwrap_or_else(|| self.next_lsn())
    }
}

struct FlushState {
    flushing: bool,
    written: Lsn,
    durable: Lsn,
}

struct SegWriter {
    file: Option<Arc<dyn VFile>>,
    start: Lsn,
    len: u64,
    /// Bytes written since the last successful fsync (rewritten if an fsync fails, since
    /// the kernel may have dropped them) and where they start.
    unsynced: Vec<u8>,
    unsynced_at: Lsn,
    /// Segments before the current one that still need an fsync.
    stale: Vec<Arc<dyn VFile>>,
    /// Bytes of the current segment with disk space allocated (`reserve`).
    allocated: u64,
    /// Segments created ahead of the stream by `reserve`: (start, file, bytes allocated).
    ahead: std::collections::VecDeque<(Lsn, Arc<dyn VFile>, u64)>,
}

#[derive(Clone, Default)]
struct Registry {
    by_fno: HashMap<u32, (FileKind, PathBuf)>,
    by_path: HashMap<PathBuf, u32>,
    next_fno: u32,
}

impl Registry {
    fn insert(&mut self, fno: u32, kind: FileKind, path: PathBuf) {
        if let Some(old) = self.by_path.insert(path.clone(), fno) {
            self.by_fno.remove(&old);
        }
        self.by_fno.insert(fno, (kind, path));
        self.next_fno = self.next_fno.max(fno + 1);
    }
    fn remove(&mut self, fno: u32) {
        if let Some((_, p)) = self.by_fno.remove(&fno) {
            self.by_path.remove(&p);
        }
    }
}

pub struct Wal {
    root: PathBuf,
    dir: PathBuf,
    vfs: Arc<dyn Vfs>,
    app: Mutex<Appender>,
    flush: Mutex<FlushState>,
    flushed: Condvar,
    writer: Mutex<SegWriter>,
    registry: Mutex<Registry>,
    files: Mutex<Vec<Weak<LoggedInner>>>,
    /// Logged files with writes waiting for the log (what a commit may write out).
    pending: Mutex<Vec<Weak<LoggedInner>>>,
    policy: AtomicU8,
    checkpoint_bytes: AtomicU64,
    checkpointing: Mutex<()>,
    /// Transactions ended in the log but still open for the engines.
    held: Mutex<HashSet<TxnId>>,
    last_checkpoint: AtomicU64,
    /// The stream up to here has disk space allocated in its segments: writing it cannot
    /// fail for lack of space (only an I/O error can fail it).
    reserved: AtomicU64,
    control_seq: AtomicU64,
    stop: AtomicBool,
    /// Writing past the reserved space last failed for lack of space: the next flush
    /// first writes a small probe of what is waiting, and tries the rest only once that
    /// went through. A rollback on a full disk flushes at every row it restores; writing
    /// the same tens of megabytes into no space each time made it take minutes.
    short_of_space: AtomicBool,
    /// Changes are refused while the disk has less than this free (`admit_change`).
    watermark: Watermark,
    pub stats: WalStats,
}

fn corrupt_log(what: &str) -> Error {
    Error::corrupt(format!("write-ahead log ({what})"))
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(path.display(), e)
}

fn segment_name(start: Lsn) -> String {
    format!("{start:016x}.log")
}

/// Little-endian field reader over a record body.
struct Body<'a>(&'a [u8]);

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(corrupt_log("short record"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    fn path(&mut self) -> Result<PathBuf> {
        let n = self.u16()? as usize;
        let s = std::str::from_utf8(self.take(n)?).map_err(|_| corrupt_log("path"))?;
        Ok(PathBuf::from(s))
    }
}

fn put_path(out: &mut Vec<u8>, p: &Path) {
    let s = p.to_string_lossy();
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// One record read back from the log.
struct Rec {
    lsn: Lsn,
    ty: u8,
    txn: TxnId,
    body: Vec<u8>,
}

/// Reads records in order across segments; stops (returns None) at the first record that
/// is incomplete or fails its checksum — the torn tail of the last write.
struct LogReader<'a> {
    vfs: &'a dyn Vfs,
    dir: &'a Path,
    segments: &'a [Lsn],
    seg: usize,
    file: Option<Arc<dyn VFile>>,
    pos: Lsn,
    buf: Vec<u8>,
    buf_at: Lsn,
}

impl<'a> LogReader<'a> {
    fn new(vfs: &'a dyn Vfs, dir: &'a Path, segments: &'a [Lsn], from: Lsn) -> LogReader<'a> {
        let seg = segments.partition_point(|&s| s <= from).saturating_sub(1);
        LogReader {
            vfs,
            dir,
            segments,
            seg,
            file: None,
            pos: from,
            buf: Vec::new(),
            buf_at: from,
        }
    }

    /// `n` bytes at `pos`, crossing segment boundaries; None at the end of the log.
    fn bytes(&mut self, n: usize) -> Result<Option<Vec<u8>>> {
        let mut out = Vec::with_capacity(n);
        let mut at = self.pos;
        while out.len() < n {
            let outside = at < self.buf_at || at >= self.buf_at + self.buf.len() as u64;
            if outside && !self.fill(at)? {
                return Ok(None);
            }
            let i = (at - self.buf_at) as usize;
            let take = (n - out.len()).min(self.buf.len() - i);
            out.extend_from_slice(&self.buf[i..i + take]);
            at += take as u64;
        }
        Ok(Some(out))
    }

    /// Load a block starting at `at` from the segment that holds it.
    fn fill(&mut self, at: Lsn) -> Result<bool> {
        // Any segment, earlier ones too: a record straddling a boundary is read twice
        // (its header, then all of it) from its start.
        let seg = self
            .segments
            .partition_point(|&s| s <= at)
            .saturating_sub(1);
        if seg != self.seg {
            self.seg = seg;
            self.file = None;
        }
        let Some(&start) = self.segments.get(self.seg) else {
            return Ok(false);
        };
        if at < start {
            return Ok(false);
        }
        if self.file.is_none() {
            let p = self.dir.join(segment_name(start));
            self.file = Some(self.vfs.open(&p, false).map_err(|e| io(&p, e))?);
        }
        let f = self.file.as_ref().unwrap();
        let mut block = vec![0u8; 1 << 20];
        let n = read_full(f.as_ref(), &mut block, at - start)
            .map_err(|e| io(&self.dir.join(segment_name(start)), e))?;
        if n == 0 {
            // The end of this segment: continue in the next only if it starts right here.
            if self.seg + 1 < self.segments.len() && self.segments[self.seg + 1] == at {
                self.seg += 1;
                self.file = None;
                return self.fill(at);
            }
            return Ok(false);
        }
        block.truncate(n);
        self.buf = block;
        self.buf_at = at;
        Ok(true)
    }

    fn next(&mut self) -> Result<Option<Rec>> {
        let Some(h) = self.bytes(HDR)? else {
            return Ok(None);
        };
        let len = u32::from_le_bytes(h[0..4].try_into().unwrap()) as usize;
        if !(HDR..=(1 << 30)).contains(&len) {
            return Ok(None);
        }
        let Some(all) = self.bytes(len)? else {
            return Ok(None);
        };
        let crc = u32::from_le_bytes(all[4..8].try_into().unwrap());
        if crc32c::crc32c(&all[8..]) != crc {
            return Ok(None);
        }
        let rec = Rec {
            lsn: self.pos,
            ty: all[8],
            txn: u64::from_le_bytes(all[9..17].try_into().unwrap()),
            body: all[HDR..].to_vec(),
        };
        self.pos += len as u64;
        Ok(Some(rec))
    }
}

impl Wal {
    /// Open the log under `<root>/#wal`, recovering the files it covers first.
    pub fn open(root: &Path, vfs: Arc<dyn Vfs>) -> Result<(Arc<Wal>, Recovery)> {
        let dir = root.join(LOG_DIR);
        // Datadirs of layout 1 kept the log in `wal/`, where a database of that name
        // belongs: it moves once, before anything reads it.
        let old = root.join("wal");
        if !vfs.exists(&dir.join("control")) && vfs.exists(&old.join("control")) {
            vfs.rename(&old, &dir).map_err(|e| io(&old, e))?;
            vfs.sync_dir(root).map_err(|e| io(root, e))?;
        }
        vfs.create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        let wal = Arc::new(Wal {
            root: root.to_path_buf(),
            dir,
            vfs,
            app: Mutex::new(Appender {
                bytes: Vec::new(),
                start: FIRST_LSN,
                active: HashMap::new(),
                next_txn: 1,
                retry_at: 0,
            }),
            flush: Mutex::new(FlushState {
                flushing: false,
                written: FIRST_LSN,
                durable: FIRST_LSN,
            }),
            flushed: Condvar::new(),
            writer: Mutex::new(SegWriter {
                file: None,
                start: FIRST_LSN,
                len: 0,
                unsynced: Vec::new(),
                unsynced_at: FIRST_LSN,
                stale: Vec::new(),
                allocated: 0,
                ahead: Default::default(),
            }),
            registry: Mutex::new(Registry::default()),
            files: Mutex::new(Vec::new()),
            pending: Mutex::new(Vec::new()),
            policy: AtomicU8::new(FlushPolicy::EachCommit as u8),
            short_of_space: AtomicBool::new(false),
            watermark: Watermark::new(),
            checkpoint_bytes: AtomicU64::new(96 << 20),
            checkpointing: Mutex::new(()),
            held: Mutex::new(HashSet::new()),
            last_checkpoint: AtomicU64::new(0),
            reserved: AtomicU64::new(0),
            control_seq: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            stats: WalStats::default(),
        });
        let report = wal.recover()?;
        wal.checkpoint(None)?;
        Ok((wal, report))
    }

    /// Small segments, so tests cross segment boundaries often (process-wide).
    pub fn set_segment_bytes_for_tests(n: u64) {
        SEGMENT_OVERRIDE.store(n, Ordering::Relaxed);
    }

    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    pub fn set_policy(&self, p: FlushPolicy) {
        self.policy.store(p as u8, Ordering::Relaxed);
    }

    /// Checkpoint once the log has grown by this much since the last one.
    pub fn set_checkpoint_bytes(&self, n: u64) {
        self.checkpoint_bytes
            .store(n.max(1 << 20), Ordering::Relaxed);
    }

    /// Refuse changes while the datadir's file system has less than `n` bytes free (0:
    /// never; None: 1 GiB or a sixteenth of the file system, whichever is less), keeping
    /// room for rollbacks (see `space.rs`).
    pub fn set_keep_free(&self, n: Option<u64>) {
        self.watermark.set_keep_free(n);
    }

    /// May this thread make a change? A rollback always may; anything else is refused
    /// (1021) while the disk is below the watermark, before it changes anything.
    pub fn admit_change(&self) -> Result<()> {
        if Wal::is_rolling_back() {
            return Ok(());
        }
        let logged = self.stats.bytes.load(Ordering::Relaxed);
        self.watermark.admit(self.vfs.as_ref(), &self.dir, logged)
    }

    fn policy(&self) -> FlushPolicy {
        FlushPolicy::from_i64(self.policy.load(Ordering::Relaxed) as i64)
    }

    fn relative(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root).unwrap_or(path).to_path_buf()
    }

    // ------------------------------------------------------------------ appending

    /// Append one record; returns the LSN just past it (what `flush_to` waits for).
    fn append(&self, ty: u8, parts: &[&[u8]]) -> Lsn {
        self.append_at(ty, false, parts).1
    }

    /// Append one record; returns where it starts and ends. Appending cannot fail: a
    /// full buffer is written out here, and if that fails the bytes stay buffered and
    /// the next flush (a commit) reports the error.
    /// `outside`: the record belongs to no transaction (file records, checkpoints),
    /// whatever transaction is open.
    fn append_at(&self, ty: u8, outside: bool, parts: &[&[u8]]) -> (Lsn, Lsn) {
        let mut a = self.app.lock();
        let txn = if outside { 0 } else { THREAD_TXN.get() };
        let (lsn, end) = self.append_locked(&mut a, ty, txn, parts);
        // After a failed write (a full disk) the next try waits for another
        // BUFFER_LIMIT of records, not the next record.
        let big = a.bytes.len() > BUFFER_LIMIT.max(a.retry_at);
        if big {
            a.retry_at = a.bytes.len() + BUFFER_LIMIT;
        }
        drop(a);
        if big && self.flush_to(end, false).is_ok() {
            self.app.lock().retry_at = 0;
        }
        (lsn, end)
    }

    fn append_locked(&self, a: &mut Appender, ty: u8, txn: TxnId, parts: &[&[u8]]) -> (Lsn, Lsn) {
        let len = HDR + parts.iter().map(|p| p.len()).sum::<usize>();
        let lsn = a.next_lsn();
        if txn != 0 {
            let first = a.active.entry(txn).or_insert(0);
            if *first == 0 {
                *first = lsn;
            }
        }
        let mut crc = crc32c::crc32c(&[ty]);
        crc = crc32c::crc32c_append(crc, &txn.to_le_bytes());
        for p in parts {
            crc = crc32c::crc32c_append(crc, p);
        }
        a.bytes.reserve(len);
        a.bytes.extend_from_slice(&(len as u32).to_le_bytes());
        a.bytes.extend_from_slice(&crc.to_le_bytes());
        a.bytes.push(ty);
        a.bytes.extend_from_slice(&txn.to_le_bytes());
        for p in parts {
            a.bytes.extend_from_slice(p);
        }
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(len as u64, Ordering::Relaxed);
        (lsn, a.next_lsn())
    }

    /// Append a record that ends a transaction (`ty`: COMMIT, or TRUNCATE with `body`)
    /// only where the log has disk space for it and everything before it: once appended,
    /// a COMMIT is durable at the next flush unless the machine fails, so running out of
    /// space must happen before it, where the transaction can still be rolled back. An
    /// error means nothing was appended.
    fn append_end(&self, ty: u8, txn: TxnId, body: &[u8]) -> Result<Lsn> {
        let len = (HDR + body.len()) as u64;
        loop {
            let want = self.app.lock().next_lsn() + len;
            self.reserve(want)?;
            let mut a = self.app.lock();
            if a.next_lsn() + len <= self.reserved.load(Ordering::Acquire) {
                return Ok(self.append_locked(&mut a, ty, txn, &[body]).1);
            }
            // Others appended meanwhile past the space reserved: reserve again.
        }
    }

    /// Log bytes written at `off` of file `fno`. `undo` is what they replace below
    /// `old_len` (the file's length before); only needed inside a transaction.
    pub fn log_write(&self, fno: u32, off: u64, redo: &[u8], old_len: u64, undo: &[u8]) -> Lsn {
        let mut head = Vec::with_capacity(16);
        head.extend_from_slice(&fno.to_le_bytes());
        head.extend_from_slice(&off.to_le_bytes());
        head.extend_from_slice(&(redo.len() as u32).to_le_bytes());
        let mut tail = Vec::with_capacity(12);
        tail.extend_from_slice(&old_len.to_le_bytes());
        tail.extend_from_slice(&(undo.len() as u32).to_le_bytes());
        self.append(T_WRITE, &[&head, redo, &tail, undo])
    }

    /// Log a page change as its changed ranges: (offset in page, new bytes, old bytes).
    pub fn log_page(&self, fno: u32, page: u32, ranges: &[(u16, &[u8], &[u8])]) -> Lsn {
        let mut body = Vec::with_capacity(
            10 + ranges
                .iter()
                .map(|r| 4 + r.1.len() + r.2.len())
                .sum::<usize>(),
        );
        body.extend_from_slice(&fno.to_le_bytes());
        body.extend_from_slice(&page.to_le_bytes());
        body.extend_from_slice(&(ranges.len() as u16).to_le_bytes());
        for (at, redo, undo) in ranges {
            debug_assert_eq!(redo.len(), undo.len());
            body.extend_from_slice(&at.to_le_bytes());
            body.extend_from_slice(&(redo.len() as u16).to_le_bytes());
            body.extend_from_slice(redo);
            body.extend_from_slice(undo);
        }
        self.append(T_PAGE, &[&body])
    }

    /// The file's number in the log, registering it (CREATE record) when new.
    pub fn register(&self, path: &Path, kind: FileKind) -> Result<u32> {
        let rel = self.relative(path);
        let mut reg = self.registry.lock();
        if let Some(&f) = reg.by_path.get(&rel) {
            return Ok(f);
        }
        let fno = reg.next_fno.max(1);
        reg.insert(fno, kind, rel.clone());
        let mut body = fno.to_le_bytes().to_vec();
        body.push(kind as u8);
        put_path(&mut body, &rel);
        // Under the registry lock: a checkpoint's file list and its LSN agree.
        self.append_outside_txn(T_CREATE, &body);
        Ok(fno)
    }

    /// Records that describe files rather than changes belong to no transaction.
    fn append_outside_txn(&self, ty: u8, body: &[u8]) -> (Lsn, Lsn) {
        self.append_at(ty, true, &[body])
    }

    /// Note that the file at `from` is about to be renamed to `to`: durable before the
    /// rename, so recovery never looks for the file under a name it no longer has.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let (from, to) = (self.relative(from), self.relative(to));
        let mut reg = self.registry.lock();
        let Some(&fno) = reg.by_path.get(&from) else {
            return Ok(());
        };
        let kind = reg.by_fno[&fno].0;
        reg.remove(fno);
        reg.insert(fno, kind, to.clone());
        let mut body = fno.to_le_bytes().to_vec();
        put_path(&mut body, &from);
        put_path(&mut body, &to);
        let (_, end) = self.append_outside_txn(T_RENAME, &body);
        drop(reg);
        self.flush_to(end, true)
    }

    /// The file at `path` is going away (durably noted before it goes): its records
    /// are never applied to a file created later at the same path.
    pub fn forget(&self, path: &Path) -> Result<()> {
        let rel = self.relative(path);
        let mut reg = self.registry.lock();
        if let Some(&fno) = reg.by_path.get(&rel) {
            reg.remove(fno);
            let (_, end) = self.append_outside_txn(T_DROP, &fno.to_le_bytes());
            drop(reg);
            return self.flush_to(end, true);
        }
        Ok(())
    }

    /// The number of a file about to be created (or opened): a file that does not exist
    /// yet gets a new number even if an earlier file had its path.
    pub fn register_file(&self, path: &Path, kind: FileKind) -> Result<u32> {
        if !self.vfs.exists(path) {
            let rel = self.relative(path);
            let mut reg = self.registry.lock();
            if let Some(&fno) = reg.by_path.get(&rel) {
                reg.remove(fno);
                self.append_outside_txn(T_DROP, &fno.to_le_bytes());
            }
        }
        self.register(path, kind)
    }

    pub(crate) fn attach(&self, f: &Arc<LoggedInner>) {
        let mut files = self.files.lock();
        files.retain(|w| w.strong_count() > 0);
        files.push(Arc::downgrade(f));
    }

    pub(crate) fn logged_file(&self, fno: u32) -> Option<Arc<LoggedInner>> {
        self.files
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .find(|f| f.fno() == fno)
    }

    fn logged_files(&self) -> Vec<Arc<LoggedInner>> {
        self.files.lock().iter().filter_map(Weak::upgrade).collect()
    }

    // ------------------------------------------------------------------ transactions

    /// A new transaction id; its records are logged once a thread works for it.
    pub fn begin_txn(&self) -> TxnId {
        let mut a = self.app.lock();
        let id = a.next_txn;
        a.next_txn += 1;
        a.active.insert(id, 0);
        id
    }

    /// Log this thread's changes under `txn` from now on (0: outside any transaction).
    pub fn set_thread_txn(txn: TxnId) {
        THREAD_TXN.set(txn);
    }

    /// The transaction this thread works for (0: none).
    pub fn thread_txn() -> TxnId {
        THREAD_TXN.get()
    }

    /// Whether the last write of the log past its reserved space failed for lack of
    /// space (until a write succeeds).
    pub fn short_of_space(&self) -> bool {
        self.short_of_space.load(Ordering::Acquire)
    }

    /// Mark this thread as rolling back until the guard drops: its changes are never
    /// refused for want of log space (`LoggedFile::admit`), since a rollback left half
    /// done would leave half-undone rows.
    pub fn rolling_back() -> RollingBack {
        RollingBack(ROLLING_BACK.replace(true))
    }

    pub fn is_rolling_back() -> bool {
        ROLLING_BACK.get()
    }

    /// Whether `txn` is still open (neither committed nor aborted), or held open for
    /// the engines by [`Wal::hold`].
    pub fn txn_open(&self, txn: TxnId) -> bool {
        self.app.lock().active.contains_key(&txn) || self.held.lock().contains(&txn)
    }

    /// Keep `txn` open for the engines (slots it freed stay parked) past its COMMIT or
    /// ABORT, until [`Wal::release`]: readers whose snapshots predate its end may still
    /// read the rows it freed, until the transaction layer purges it.
    pub fn hold(&self, txn: TxnId) {
        self.held.lock().insert(txn);
    }

    pub fn release(&self, txn: TxnId) {
        self.held.lock().remove(&txn);
    }

    /// Start a transaction for this thread (no-op when it has one).
    pub fn begin(&self) {
        if THREAD_TXN.get() == 0 {
            THREAD_TXN.set(self.begin_txn());
        }
    }

    /// Whether this thread works for a transaction (its changes must be undoable).
    pub fn in_txn(&self) -> bool {
        THREAD_TXN.get() != 0
    }

    /// Commit this thread's transaction: a COMMIT record, made durable as the flush
    /// policy says; then logged files write out what the log now covers.
    pub fn commit(&self) -> Result<()> {
        let lsn = self.commit_no_wait()?;
        self.wait_commit(lsn)
    }

    /// Append the COMMIT record of this thread's transaction and close it without
    /// waiting for the log: the caller may release its locks and then `wait_commit`
    /// (group commit — later records queue behind this COMMIT, so they can never be
    /// durable first). None when the transaction wrote nothing. An error (the log has no
    /// disk space for the COMMIT) leaves the transaction open and this thread working
    /// for it: the caller rolls it back.
    pub fn commit_no_wait(&self) -> Result<Option<Lsn>> {
        let end = self.end_txn(T_COMMIT)?;
        if end.is_some() {
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(end)
    }

    /// Close this thread's transaction, with a `ty` record (COMMIT, ABORT) if it wrote.
    fn end_txn(&self, ty: u8) -> Result<Option<Lsn>> {
        let txn = THREAD_TXN.get();
        if txn == 0 {
            return Ok(None);
        }
        let wrote = self.app.lock().active.get(&txn).is_some_and(|&l| l != 0);
        let end = if !wrote {
            None
        } else if ty == T_COMMIT {
            Some(self.append_end(ty, txn, &[])?)
        } else {
            // An ABORT follows compensations that restored everything: it needs no
            // space guarantee (unwritten, recovery undoes the transaction anyway).
            Some(self.append(ty, &[]))
        };
        THREAD_TXN.set(0);
        self.app.lock().active.remove(&txn);
        Ok(end)
    }

    /// Wait until a commit at `lsn` is as durable as the flush policy asks.
    pub fn wait_commit(&self, lsn: Option<Lsn>) -> Result<()> {
        let Some(end) = lsn else {
            return Ok(());
        };
        match self.policy() {
            FlushPolicy::EachCommit => self.flush_to(end, true)?,
            FlushPolicy::WriteAtCommit => self.flush_to(end, false)?,
            FlushPolicy::EverySecond => {}
        }
        // The commit stands whatever happens here: a data file that cannot take its
        // writes now (a full disk) keeps them pending, and the log holds them meanwhile.
        let _ = self.write_out_ready();
        Ok(())
    }

    /// Roll back is done by the caller's compensating changes; this closes this
    /// thread's transaction so recovery does not reverse it a second time.
    pub fn abort(&self) {
        let _ = self.end_txn(T_ABORT);
    }

    /// Truncate file `fno` to `len` as the commit of this thread's transaction (TRUNCATE
    /// TABLE commits implicitly): durable before the file shrinks, so a crash keeps either
    /// the whole old table or the committed new state. The thread goes on in a new
    /// transaction.
    pub(crate) fn truncate_and_commit(&self, fno: u32, len: u64) -> Result<()> {
        let mut body = fno.to_le_bytes().to_vec();
        body.extend_from_slice(&len.to_le_bytes());
        let old = THREAD_TXN.get();
        let end = self.append_end(T_TRUNCATE, old, &body)?;
        if old != 0 {
            self.app.lock().active.remove(&old);
            let new = self.begin_txn();
            let mut held = self.held.lock();
            if held.remove(&old) {
                held.insert(new);
            }
            drop(held);
            THREAD_TXN.set(new);
        }
        self.flush_to(end, true)
    }

    // ------------------------------------------------------------------ flushing

    pub fn durable_lsn(&self) -> Lsn {
        self.flush.lock().durable
    }

    pub fn next_lsn(&self) -> Lsn {
        self.app.lock().next_lsn()
    }

    /// Make the log durable (`sync`) or at least written up to `lsn`. One caller flushes
    /// for everyone waiting (group commit).
    pub fn flush_to(&self, lsn: Lsn, sync: bool) -> Result<()> {
        loop {
            let mut f = self.flush.lock();
            let have = if sync { f.durable } else { f.written };
            if have >= lsn {
                return Ok(());
            }
            if f.flushing {
                self.flushed.wait(&mut f);
                continue;
            }
            f.flushing = true;
            drop(f);
            let (written, durable, err) = self.flush_once(sync);
            let mut f = self.flush.lock();
            f.flushing = false;
            f.written = f.written.max(written);
            if let Some(d) = durable {
                f.durable = f.durable.max(d);
            }
            let have = if sync { f.durable } else { f.written };
            self.flushed.notify_all();
            drop(f);
            // A failure past `lsn` (bytes without reserved space) is not this caller's.
            match err {
                Some(e) if have < lsn => return Err(e),
                _ => {}
            }
        }
    }

    /// Write everything appended so far; fsync when `sync`. Returns how far the log is
    /// now written and made durable, and what stopped it short of the end. The space
    /// reserved for COMMITs is written first: a failure past it never holds back a
    /// commit inside it.
    fn flush_once(&self, sync: bool) -> (Lsn, Option<Lsn>, Option<Error>) {
        let mut w = self.writer.lock();
        let (bytes, start) = {
            let mut a = self.app.lock();
            let start = a.start;
            let bytes = std::mem::take(&mut a.bytes);
            a.start = start + bytes.len() as u64;
            (bytes, start)
        };
        let reserved = self.reserved.load(Ordering::Acquire);
        let safe = (reserved.saturating_sub(start) as usize).min(bytes.len());
        let mut done = 0;
        let mut err = None;
        // With nothing unsynced before them, the bytes themselves become the unsynced
        // copy (moved, not copied: a 100 MB record is not held twice).
        let take = w.unsynced.is_empty();
        let probe = if self.short_of_space.load(Ordering::Acquire) {
            (safe + SPACE_PROBE).min(bytes.len())
        } else {
            safe
        };
        let parts = [
            (false, &bytes[..safe]),
            (true, &bytes[safe..probe]),
            (true, &bytes[probe..]),
        ];
        for (unreserved, part) in parts {
            if part.is_empty() {
                continue;
            }
            let (wrote, e) = self.write_segments(&mut w, part, start + done as u64, !take);
            done += wrote;
            if let Some(e) = e {
                if unreserved && e.is_disk_full() {
                    self.short_of_space.store(true, Ordering::Release);
                }
                err = Some(e);
                break;
            }
            if unreserved {
                self.short_of_space.store(false, Ordering::Release);
            }
        }
        if take && done > 0 {
            w.unsynced_at = start;
            if done < bytes.len() {
                w.unsynced.extend_from_slice(&bytes[..done]);
            }
        }
        if done < bytes.len() {
            // Nothing is lost: the unwritten bytes go back in front of what was appended
            // since.
            let mut a = self.app.lock();
            let mut b = bytes;
            b.drain(..done);
            b.extend_from_slice(&a.bytes);
            a.bytes = b;
            a.start = start + done as u64;
        } else if take && done > 0 {
            w.unsynced = bytes;
        }
        let end = start + done as u64;
        let sync = sync || w.unsynced.len() > UNSYNCED_LIMIT;
        if !sync || (done == 0 && w.unsynced.is_empty()) {
            return (end, None, err);
        }
        match self.sync_segments(&mut w) {
            Ok(()) => (end, Some(end), err),
            Err(e) => (end, None, Some(e)),
        }
    }

    /// Disk space in the segments for the stream up to `upto` (and a step beyond when
    /// the disk has it), so that writing it cannot fail for lack of space.
    pub(crate) fn reserve(&self, upto: Lsn) -> Result<()> {
        if upto <= self.reserved.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut w = self.writer.lock();
        if w.file.is_none() {
            // Only before `open` has written its first checkpoint: nothing to reserve in
            // yet (and a caller must not wait for a reservation that cannot come).
            self.reserved.fetch_max(upto, Ordering::AcqRel);
            return Ok(());
        }
        let step = (segment_bytes() / 8).clamp(4096, RESERVE_STEP);
        match self.allocate_to(&mut w, upto + step) {
            Err(e) if e.is_disk_full() => self.allocate_to(&mut w, upto),
            r => r,
        }
    }

    fn allocate_to(&self, w: &mut SegWriter, upto: Lsn) -> Result<()> {
        let seg = segment_bytes();
        // `upto` may lie in a segment already written: records outside transactions
        // (checkpoints, file records) take no reservation, and may have moved the
        // writer on since the caller read the end of the log. Such bytes need no space.
        let want = upto.min(w.start + seg).saturating_sub(w.start);
        if want > w.allocated.max(w.len) {
            let f = w.file.as_ref().unwrap();
            f.allocate(want)
                .map_err(|e| io(&self.dir.join(segment_name(w.start)), e))?;
            w.allocated = want;
        }
        let mut next = w.start + seg;
        let mut i = 0;
        while next < upto {
            if i == w.ahead.len() {
                let p = self.dir.join(segment_name(next));
                let f = self.vfs.open(&p, true).map_err(|e| io(&p, e))?;
                self.vfs.sync_dir(&self.dir).map_err(|e| io(&self.dir, e))?;
                w.ahead.push_back((next, f, 0));
            }
            let (s, f, alloc) = &mut w.ahead[i];
            let want = (upto - *s).min(seg);
            if want > *alloc {
                f.allocate(want)
                    .map_err(|e| io(&self.dir.join(segment_name(*s)), e))?;
                *alloc = want;
            }
            next += seg;
            i += 1;
        }
        // Reserved: the allocated prefix of the stream without a gap.
        let mut covered = w.start + w.allocated.max(w.len);
        for (s, _, alloc) in &w.ahead {
            if *s != covered {
                break;
            }
            covered = s + alloc;
        }
        self.reserved.fetch_max(covered, Ordering::AcqRel);
        Ok(())
    }

    /// Write `bytes` at `start` of the stream, adding them to the unsynced copy when
    /// `keep` (else the caller keeps them there itself). Returns how many were written
    /// (all, unless an error stopped it): the rest is written from there next time, at
    /// the place the writer has reached.
    fn write_segments(
        &self,
        w: &mut SegWriter,
        bytes: &[u8],
        start: Lsn,
        keep: bool,
    ) -> (usize, Option<Error>) {
        let mut at = 0usize;
        while at < bytes.len() {
            if w.file.is_none() || w.len >= segment_bytes() {
                let seg_start = start + at as u64;
                let (f, allocated) = match w.ahead.pop_front() {
                    Some((s, f, alloc)) if s == seg_start => (f, alloc),
                    _ => {
                        w.ahead.clear();
                        let p = self.dir.join(segment_name(seg_start));
                        let opened = self.vfs.open(&p, true).map_err(|e| io(&p, e));
                        let f = match opened.and_then(|f| {
                            self.vfs.sync_dir(&self.dir).map_err(|e| io(&self.dir, e))?;
                            Ok(f)
                        }) {
                            Ok(f) => f,
                            Err(e) => return (at, Some(e)),
                        };
                        (f, 0)
                    }
                };
                if let Some(old) = w.file.replace(f) {
                    w.stale.push(old);
                }
                w.start = seg_start;
                w.len = 0;
                w.allocated = allocated;
            }
            let n = ((segment_bytes() - w.len) as usize).min(bytes.len() - at);
            let f = w.file.clone().unwrap();
            if let Err(e) = f.write_at(&bytes[at..at + n], w.len) {
                return (at, Some(io(&self.dir.join(segment_name(w.start)), e)));
            }
            if keep {
                if w.unsynced.is_empty() {
                    w.unsynced_at = start + at as u64;
                }
                w.unsynced.extend_from_slice(&bytes[at..at + n]);
            }
            w.len += n as u64;
            at += n;
            self.stats.writes.fetch_add(1, Ordering::Relaxed);
        }
        (at, None)
    }

    fn sync_segments(&self, w: &mut SegWriter) -> Result<()> {
        let synced = (|| {
            for f in &w.stale {
                f.sync()?;
            }
            if let Some(f) = &w.file {
                f.sync()?;
            }
            Ok::<(), std::io::Error>(())
        })();
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        match synced {
            Ok(()) => {
                w.stale.clear();
                w.unsynced.clear();
                // A large record (a 100 MB value) must not keep its copy's memory.
                if w.unsynced.capacity() > UNSYNCED_KEEP {
                    w.unsynced = Vec::new();
                }
                Ok(())
            }
            Err(e) => {
                // After a failed fsync the kernel may have dropped the dirty pages: write
                // the unsynced bytes again so the next fsync has them.
                let again = std::mem::take(&mut w.unsynced);
                let at = w.unsynced_at;
                let _ = self.rewrite(w, &again, at);
                w.unsynced = again;
                Err(io(&self.dir, e))
            }
        }
    }

    fn rewrite(&self, w: &SegWriter, bytes: &[u8], at: Lsn) -> Result<()> {
        let segs = self.segments()?;
        let mut pos = 0usize;
        while pos < bytes.len() {
            let lsn = at + pos as u64;
            let i = segs.partition_point(|&s| s <= lsn) - 1;
            let seg_end = segs.get(i + 1).copied().unwrap_or(w.start + w.len);
            let n = ((seg_end - lsn) as usize).min(bytes.len() - pos);
            let p = self.dir.join(segment_name(segs[i]));
            let f = self.vfs.open(&p, false).map_err(|e| io(&p, e))?;
            f.write_at(&bytes[pos..pos + n], lsn - segs[i])
                .map_err(|e| io(&p, e))?;
            pos += n;
        }
        Ok(())
    }

    /// Logged files write out changes the log now covers.
    /// Only files with writes waiting are visited, not every open file.
    fn write_out_ready(&self) -> Result<()> {
        let files = std::mem::take(&mut *self.pending.lock());
        let mut result = Ok(());
        let mut waiting = vec![];
        for f in files.iter().filter_map(Weak::upgrade) {
            match &result {
                Ok(()) => match f.write_out(false) {
                    Ok(true) => waiting.push(Arc::downgrade(&f)),
                    Ok(false) => {}
                    Err(e) => {
                        result = Err(e);
                        waiting.push(Arc::downgrade(&f));
                    }
                },
                Err(_) => waiting.push(Arc::downgrade(&f)),
            }
        }
        self.pending.lock().extend(waiting);
        result
    }

    /// `f` just got its first waiting write (called under its own lock; this lock is
    /// never held while a file's is taken).
    pub(crate) fn note_pending(&self, f: &Arc<LoggedInner>) {
        self.pending.lock().push(Arc::downgrade(f));
    }

    /// The background duty: fsync the log each second (policies 0 and 2) and write out
    /// what it covers; checkpoint when the log has grown by `checkpoint_bytes`.
    pub fn start_background(
        self: &Arc<Self>,
        pool: Option<Arc<BufferPool>>,
    ) -> std::thread::JoinHandle<()> {
        let wal = self.clone();
        std::thread::Builder::new()
            .name("quarry-wal".into())
            .spawn(move || {
                let mut last = Instant::now();
                while !wal.stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(100));
                    let second = last.elapsed() >= Duration::from_secs(1);
                    if second {
                        last = Instant::now();
                        let end = wal.next_lsn();
                        if wal.flush_to(end, true).is_ok() {
                            let _ = wal.write_out_ready();
                        }
                    }
                    let since = wal.next_lsn() - wal.last_checkpoint.load(Ordering::Relaxed);
                    // Short of disk, changes are refused and the log stops growing, but
                    // what a transaction that ended since (a rolled-back one that filled
                    // the disk) kept of it can go: a checkpoint each second frees it.
                    let short = second && (wal.watermark.below() || wal.short_of_space());
                    if since > wal.checkpoint_bytes.load(Ordering::Relaxed) || short {
                        let _ = wal.checkpoint(pool.as_deref());
                    }
                }
            })
            .expect("spawn log thread")
    }

    pub fn stop_background(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    // ------------------------------------------------------------------ checkpoints

    /// Write every logged change below the current end of the log to its file, fsync,
    /// and record that recovery may start there. Writers go on meanwhile.
    pub fn checkpoint(&self, pool: Option<&BufferPool>) -> Result<()> {
        let _one = self.checkpointing.lock();
        let (c, undo_from, next_txn, reg) = {
            let reg = self.registry.lock();
            let a = self.app.lock();
            (a.next_lsn(), a.undo_from(), a.next_txn, reg.clone())
        };
        self.flush_to(c, true)?;
        for f in self.logged_files() {
            f.write_out(true)?;
            f.sync()?;
        }
        if let Some(p) = pool {
            p.flush_all()?;
        }
        let mut body = Vec::new();
        body.extend_from_slice(&c.to_le_bytes());
        body.extend_from_slice(&undo_from.min(c).to_le_bytes());
        body.extend_from_slice(&reg.next_fno.to_le_bytes());
        body.extend_from_slice(&next_txn.to_le_bytes());
        body.extend_from_slice(&(reg.by_fno.len() as u32).to_le_bytes());
        for (fno, (kind, path)) in &reg.by_fno {
            body.extend_from_slice(&fno.to_le_bytes());
            body.push(*kind as u8);
            put_path(&mut body, path);
        }
        let (at, end) = self.append_outside_txn(T_CHECKPOINT, &body);
        self.flush_to(end, true)?;
        self.write_control(at)?;
        self.last_checkpoint.store(at, Ordering::Relaxed);
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.remove_segments_below(undo_from.min(c))
    }

    fn segments(&self) -> Result<Vec<Lsn>> {
        let mut v: Vec<Lsn> = self
            .vfs
            .list(&self.dir)
            .map_err(|e| io(&self.dir, e))?
            .iter()
            .filter_map(|p| {
                let n = p.file_name()?.to_str()?;
                u64::from_str_radix(n.strip_suffix(".log")?, 16).ok()
            })
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    fn remove_segments_below(&self, lsn: Lsn) -> Result<()> {
        let segs = self.segments()?;
        let current = self.writer.lock().start;
        for w in segs.windows(2) {
            if w[1] <= lsn && w[0] != current {
                let p = self.dir.join(segment_name(w[0]));
                self.vfs.remove(&p).map_err(|e| io(&p, e))?;
            }
        }
        Ok(())
    }

    fn write_control(&self, lsn: Lsn) -> Result<()> {
        let seq = self.control_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let mut slot = [0u8; 32];
        slot[..8].copy_from_slice(CONTROL_MAGIC);
        slot[8..16].copy_from_slice(&seq.to_le_bytes());
        slot[16..24].copy_from_slice(&lsn.to_le_bytes());
        let crc = crc32c::crc32c(&slot[..24]);
        slot[24..28].copy_from_slice(&crc.to_le_bytes());
        let p = self.dir.join("control");
        let f = self.vfs.open(&p, true).map_err(|e| io(&p, e))?;
        f.write_at(&slot, (seq % 2) * 512).map_err(|e| io(&p, e))?;
        f.sync().map_err(|e| io(&p, e))
    }

    fn read_control(&self) -> Result<Option<Lsn>> {
        let p = self.dir.join("control");
        if !self.vfs.exists(&p) {
            return Ok(None);
        }
        let f = self.vfs.open(&p, false).map_err(|e| io(&p, e))?;
        let mut best: Option<(u64, Lsn)> = None;
        for s in 0..2u64 {
            let mut slot = [0u8; 32];
            if read_full(f.as_ref(), &mut slot, s * 512).map_err(|e| io(&p, e))? < 32 {
                continue;
            }
            let crc = u32::from_le_bytes(slot[24..28].try_into().unwrap());
            if &slot[..8] != CONTROL_MAGIC || crc32c::crc32c(&slot[..24]) != crc {
                continue;
            }
            let seq = u64::from_le_bytes(slot[8..16].try_into().unwrap());
            let lsn = u64::from_le_bytes(slot[16..24].try_into().unwrap());
            if best.is_none_or(|(b, _)| seq > b) {
                best = Some((seq, lsn));
            }
        }
        match best {
            Some((seq, lsn)) => {
                self.control_seq.store(seq, Ordering::Relaxed);
                Ok(Some(lsn))
            }
            None => Err(corrupt_log("both control slots are damaged")),
        }
    }

    // ------------------------------------------------------------------ recovery

    fn recover(&self) -> Result<Recovery> {
        let t0 = Instant::now();
        let mut report = Recovery::default();
        let segs = self.segments()?;
        let ckpt = self.read_control()?;
        if segs.is_empty() {
            if ckpt.is_some() {
                return Err(corrupt_log(
                    "control file names a checkpoint but no segment exists",
                ));
            }
            return Ok(report);
        }
        // The checkpoint: where redo and undo start, and the files as they were then.
        let mut reg = Registry {
            next_fno: 1,
            ..Default::default()
        };
        let (mut redo_from, mut undo_from, mut next_txn) = (segs[0], segs[0], 1);
        if let Some(at) = ckpt {
            let mut r = LogReader::new(self.vfs.as_ref(), &self.dir, &segs, at);
            let rec = r
                .next()?
                .filter(|r| r.ty == T_CHECKPOINT)
                .ok_or_else(|| corrupt_log("checkpoint record missing"))?;
            let mut b = Body(&rec.body);
            redo_from = b.u64()?;
            undo_from = b.u64()?;
            reg.next_fno = b.u32()?;
            next_txn = b.u64()?;
            for _ in 0..b.u32()? {
                let fno = b.u32()?;
                let kind = FileKind::from_u8(b.u8()?)?;
                let path = b.path()?;
                reg.insert(fno, kind, path);
            }
        }
        let start = undo_from.min(redo_from);

        // Analysis: which transactions finished, where the valid log ends, and which file
        // each number names at the end — recovery works on the files as they are now, so
        // a file renamed later is written under its new name, and records of a file
        // dropped or replaced at the same path later are skipped.
        let mut finished: HashSet<TxnId> = HashSet::new();
        let mut committed = 0u64;
        let mut end = start;
        // Each rename is durable before it is done and renames are serialized, so only
        // the last one can be unfinished — unless later records reuse its names.
        let mut last_rename: Option<(u32, PathBuf, PathBuf)> = None;
        {
            let mut r = LogReader::new(self.vfs.as_ref(), &self.dir, &segs, start);
            while let Some(rec) = r.next()? {
                if rec.lsn >= redo_from {
                    let mut b = Body(&rec.body);
                    match rec.ty {
                        T_CREATE => {
                            let fno = b.u32()?;
                            let kind = FileKind::from_u8(b.u8()?)?;
                            let path = b.path()?;
                            if last_rename
                                .as_ref()
                                .is_some_and(|(_, f, t)| *f == path || *t == path)
                            {
                                last_rename = None;
                            }
                            reg.insert(fno, kind, path);
                        }
                        T_RENAME => {
                            let fno = b.u32()?;
                            let (from, to) = (b.path()?, b.path()?);
                            if let Some(&(kind, _)) = reg.by_fno.get(&fno) {
                                reg.remove(fno);
                                reg.insert(fno, kind, to.clone());
                            }
                            last_rename = Some((fno, from, to));
                        }
                        T_DROP => {
                            let fno = b.u32()?;
                            if last_rename.as_ref().is_some_and(|(f, _, _)| *f == fno) {
                                last_rename = None;
                            }
                            reg.remove(fno);
                        }
                        _ => {}
                    }
                }
                match rec.ty {
                    T_COMMIT | T_TRUNCATE => {
                        finished.insert(rec.txn);
                        committed += 1;
                    }
                    T_ABORT => {
                        finished.insert(rec.txn);
                    }
                    _ => {}
                }
                next_txn = next_txn.max(rec.txn + 1);
                end = r.pos;
            }
        }
        report.committed_txns = committed;
        report.scanned_bytes = end - start;
        // A rename the log made durable but the crash cut short.
        if let Some((_, from, to)) = last_rename {
            let (pf, pt) = (self.root.join(&from), self.root.join(&to));
            if self.vfs.exists(&pf) && !self.vfs.exists(&pt) {
                self.vfs.rename(&pf, &pt).map_err(|e| io(&pf, e))?;
            }
        }

        // Redo from the checkpoint; keep the unfinished transactions' records for undo.
        // A page a finished transaction changed after an unfinished one cannot be undone
        // byte-wise (the undo would overwrite the finished change): its file is emptied
        // for its owner to rebuild.
        let mut files = Files::new(self.vfs.clone(), self.root.clone());
        let mut pending_undo: Vec<Rec> = Vec::new();
        let mut unfinished_pages: HashSet<(u32, u32)> = HashSet::new();
        let mut unsafe_files: BTreeSet<u32> = BTreeSet::new();
        {
            let mut r = LogReader::new(self.vfs.as_ref(), &self.dir, &segs, start);
            while let Some(rec) = r.next()? {
                if rec.lsn >= end {
                    break;
                }
                let unfinished = rec.txn != 0 && !finished.contains(&rec.txn);
                if rec.lsn >= redo_from {
                    files.redo(&reg, &rec)?;
                    report.redone += 1;
                }
                if rec.ty == T_PAGE && rec.body.len() >= 8 {
                    let fno = u32::from_le_bytes(rec.body[..4].try_into().unwrap());
                    let page = u32::from_le_bytes(rec.body[4..8].try_into().unwrap());
                    if unfinished {
                        unfinished_pages.insert((fno, page));
                    } else if unfinished_pages.contains(&(fno, page)) {
                        unsafe_files.insert(fno);
                    }
                }
                if unfinished && matches!(rec.ty, T_WRITE | T_PAGE) {
                    pending_undo.push(rec);
                }
            }
        }
        let undone: HashSet<TxnId> = pending_undo.iter().map(|r| r.txn).collect();
        report.undone_txns = undone.len() as u64;
        for rec in pending_undo.iter().rev() {
            if rec.ty == T_PAGE
                && unsafe_files.contains(&u32::from_le_bytes(rec.body[..4].try_into().unwrap()))
            {
                continue;
            }
            files.undo(&reg, rec)?;
        }
        for &fno in &unsafe_files {
            if let Some(path) = files.empty(&reg, fno)? {
                report.rebuild.push(path);
            }
        }
        files.finish(&reg)?;

        // Continue the log at the end of its valid part: cut a torn tail.
        self.resume_at(&segs, end)?;
        {
            let mut a = self.app.lock();
            a.start = end;
            a.next_txn = next_txn;
        }
        {
            let mut f = self.flush.lock();
            f.written = end;
            f.durable = end;
        }
        *self.registry.lock() = reg;
        report.elapsed = t0.elapsed();
        Ok(report)
    }

    fn resume_at(&self, segs: &[Lsn], end: Lsn) -> Result<()> {
        let i = segs.partition_point(|&s| s <= end).saturating_sub(1);
        for &s in &segs[i + 1..] {
            let p = self.dir.join(segment_name(s));
            self.vfs.remove(&p).map_err(|e| io(&p, e))?;
        }
        let start = segs[i];
        let p = self.dir.join(segment_name(start));
        let f = self.vfs.open(&p, true).map_err(|e| io(&p, e))?;
        f.set_len(end - start).map_err(|e| io(&p, e))?;
        f.sync().map_err(|e| io(&p, e))?;
        let mut w = self.writer.lock();
        w.file = Some(f);
        w.start = start;
        w.len = end - start;
        w.allocated = w.len;
        w.unsynced_at = end;
        self.reserved.store(end, Ordering::Release);
        Ok(())
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The change a WRITE, PAGE or TRUNCATE record describes, borrowed from its body.
enum Change<'a> {
    Write {
        fno: u32,
        off: u64,
        new: &'a [u8],
        old_len: u64,
        old: &'a [u8],
    },
    /// Ranges as (offset in the page, new bytes, old bytes).
    Page {
        fno: u32,
        page: u32,
        ranges: Vec<(u64, &'a [u8], &'a [u8])>,
    },
    Truncate {
        fno: u32,
        len: u64,
    },
}

impl<'a> Change<'a> {
    fn parse(rec: &'a Rec) -> Result<Option<Change<'a>>> {
        let mut b = Body(&rec.body);
        Ok(Some(match rec.ty {
            T_WRITE => {
                let fno = b.u32()?;
                let off = b.u64()?;
                let n = b.u32()? as usize;
                let new = b.take(n)?;
                let old_len = b.u64()?;
                let m = b.u32()? as usize;
                Change::Write {
                    fno,
                    off,
                    new,
                    old_len,
                    old: b.take(m)?,
                }
            }
            T_PAGE => {
                let fno = b.u32()?;
                let page = b.u32()?;
                let ranges = (0..b.u16()?)
                    .map(|_| {
                        let at = b.u16()? as u64;
                        let n = b.u16()? as usize;
                        Ok((at, b.take(n)?, b.take(n)?))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Change::Page { fno, page, ranges }
            }
            T_TRUNCATE => Change::Truncate {
                fno: b.u32()?,
                len: b.u64()?,
            },
            _ => return Ok(None),
        }))
    }
}

/// Files touched by recovery, opened once each.
struct Files {
    vfs: Arc<dyn Vfs>,
    root: PathBuf,
    open: HashMap<u32, Arc<dyn VFile>>,
    touched_pages: BTreeMap<u32, HashSet<u32>>,
}

impl Files {
    fn new(vfs: Arc<dyn Vfs>, root: PathBuf) -> Files {
        Files {
            vfs,
            root,
            open: HashMap::new(),
            touched_pages: BTreeMap::new(),
        }
    }

    /// The file `fno` names now; None when it was dropped (its records are skipped).
    fn file(&mut self, reg: &Registry, fno: u32) -> Result<Option<Arc<dyn VFile>>> {
        if let Some(f) = self.open.get(&fno) {
            return Ok(Some(f.clone()));
        }
        let Some((_, rel)) = reg.by_fno.get(&fno) else {
            return Ok(None);
        };
        let p = self.root.join(rel);
        if !self.vfs.exists(&p) {
            return Ok(None);
        }
        let f = self.vfs.open(&p, false).map_err(|e| io(&p, e))?;
        self.open.insert(fno, f.clone());
        Ok(Some(f))
    }

    fn redo(&mut self, reg: &Registry, rec: &Rec) -> Result<()> {
        self.apply(reg, rec, true)
    }

    fn undo(&mut self, reg: &Registry, rec: &Rec) -> Result<()> {
        self.apply(reg, rec, false)
    }

    /// Put a record's new bytes (`redo`) or the bytes it replaced back.
    fn apply(&mut self, reg: &Registry, rec: &Rec, redo: bool) -> Result<()> {
        let what = Path::new(if redo { "redo" } else { "undo" });
        match Change::parse(rec)? {
            Some(Change::Write {
                fno,
                off,
                new,
                old_len,
                old,
            }) => {
                let Some(f) = self.file(reg, fno)? else {
                    return Ok(());
                };
                f.write_at(if redo { new } else { old }, off)
                    .map_err(|e| io(what, e))?;
                if !redo && off + new.len() as u64 > old_len {
                    f.set_len(old_len).map_err(|e| io(what, e))?;
                }
            }
            Some(Change::Page { fno, page, ranges }) => {
                let Some(f) = self.file(reg, fno)? else {
                    return Ok(());
                };
                for (at, new, old) in ranges {
                    f.write_at(
                        if redo { new } else { old },
                        page as u64 * PAGE_SIZE as u64 + at,
                    )
                    .map_err(|e| io(what, e))?;
                }
                self.touched_pages.entry(fno).or_default().insert(page);
            }
            Some(Change::Truncate { fno, len }) if redo => {
                if let Some(f) = self.file(reg, fno)? {
                    f.set_len(len).map_err(|e| io(what, e))?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Empty file `fno` (its pages are not re-sealed); returns its path.
    fn empty(&mut self, reg: &Registry, fno: u32) -> Result<Option<PathBuf>> {
        let Some(f) = self.file(reg, fno)? else {
            return Ok(None);
        };
        f.set_len(0).map_err(|e| io(Path::new("recovery"), e))?;
        self.touched_pages.remove(&fno);
        Ok(Some(self.root.join(&reg.by_fno[&fno].1)))
    }

    /// Re-seal the pages recovery changed (their checksums cover the new bytes) and
    /// fsync every file it wrote.
    fn finish(&mut self, reg: &Registry) -> Result<()> {
        let touched = std::mem::take(&mut self.touched_pages);
        for (fno, pages) in touched {
            let Some(f) = self.file(reg, fno)? else {
                continue;
            };
            let mut buf = vec![0u8; PAGE_SIZE];
            for page in pages {
                buf.fill(0);
                read_full(f.as_ref(), &mut buf, page as u64 * PAGE_SIZE as u64)
                    .map_err(|e| io(Path::new("recovery"), e))?;
                seal(&mut buf, page);
                f.write_at(&buf, page as u64 * PAGE_SIZE as u64)
                    .map_err(|e| io(Path::new("recovery"), e))?;
            }
        }
        for f in self.open.values() {
            f.sync().map_err(|e| io(Path::new("recovery"), e))?;
        }
        Ok(())
    }
}
