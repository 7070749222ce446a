//! The buffer pool: a fixed set of page frames shared by every open page file, found
//! through a page table split into partitions, each behind its own read-write lock
//! (seed 003: lookups take the shared lock, so readers do not serialize on one mutex).
//!
//! A frame is pinned while a caller holds a [`PageRef`]; only unpinned frames are evicted
//! (clock order). A pin is taken under the partition lock that maps the page, and a frame
//! is unmapped only under that partition's write lock with no pins, so a caller never sees
//! a frame change identity under it. Loads (misses) are serialized by one mutex: simple,
//! and a miss costs a disk read anyway.
//!
//! Beside the frames the pool keeps the [`BlockCache`] that record files read rows
//! through, with a quarter of the pool's bytes on top of them.

use crate::blockcache::BlockCache;
use crate::page::{lsn, seal, set_lsn, verify, well_formed, PAGE_SIZE};
use crate::vfs::{read_full, RealFs, VFile, Vfs};
use crate::wal::{FileKind, Wal};
use parking_lot::{Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use quarry_common::{Error, Result};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PageId {
    pub file: u32,
    pub page: u32,
}

struct Frame {
    data: RwLock<Box<[u8]>>,
    /// Which page the frame holds; changed only by the loader under the load mutex.
    id: Mutex<Option<PageId>>,
    pins: AtomicU32,
    dirty: AtomicBool,
    referenced: AtomicBool,
}

struct OpenFile {
    file: Arc<dyn VFile>,
    path: PathBuf,
    /// The file's number in the write-ahead log (0: not logged).
    fno: u32,
}

#[derive(Default)]
pub struct PoolStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    pub reads: AtomicU64,
    pub writes: AtomicU64,
}

pub struct BufferPool {
    frames: Vec<Frame>,
    parts: Vec<RwLock<HashMap<PageId, usize>>>,
    files: RwLock<Vec<Option<Arc<OpenFile>>>>,
    load: Mutex<LoadState>,
    wal: OnceLock<Arc<Wal>>,
    pub stats: PoolStats,
    data_cache: Arc<BlockCache>,
}

struct LoadState {
    hand: usize,
    free: Vec<usize>,
    /// Frames holding pages of each file (flush and close visit only those).
    by_file: HashMap<u32, HashSet<usize>>,
}

impl BufferPool {
    /// `bytes` of frames (at least 16 pages), page table in `partitions` parts.
    pub fn new(bytes: usize, partitions: usize) -> BufferPool {
        let n = (bytes / PAGE_SIZE).max(16);
        let frames = (0..n)
            .map(|_| Frame {
                // Frames get their memory on first use: a large pool costs nothing idle.
                data: RwLock::new(Box::default()),
                id: Mutex::new(None),
                pins: AtomicU32::new(0),
                dirty: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
            })
            .collect();
        BufferPool {
            frames,
            parts: (0..partitions.max(1))
                .map(|_| RwLock::new(HashMap::new()))
                .collect(),
            files: RwLock::new(Vec::new()),
            load: Mutex::new(LoadState {
                hand: 0,
                free: (0..n).rev().collect(),
                by_file: HashMap::new(),
            }),
            wal: OnceLock::new(),
            stats: PoolStats::default(),
            data_cache: Arc::new(BlockCache::new(bytes / 4)),
        }
    }

    /// Log page changes from now on: files opened later are registered with `wal`, every
    /// change is logged as the byte ranges it made, and a dirty page is written only once
    /// the log is durable past its last change.
    pub fn attach_wal(&self, wal: Arc<Wal>) {
        let _ = self.wal.set(wal);
    }

    pub fn wal(&self) -> Option<&Arc<Wal>> {
        self.wal.get()
    }

    /// The cache of data-file blocks that record files read through.
    pub fn data_cache(&self) -> &Arc<BlockCache> {
        &self.data_cache
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Frames never filled or given back, and frames holding a change not yet written
    /// (InnoDB's free buffers and modified pages).
    pub fn free_and_dirty(&self) -> (usize, usize) {
        let free = self.load.lock().free.len();
        let dirty = self
            .frames
            .iter()
            .filter(|f| f.dirty.load(Ordering::Relaxed))
            .count();
        (free, dirty)
    }

    pub fn partitions(&self) -> usize {
        self.parts.len()
    }

    /// Open (creating if needed) a page file; pages are addressed by the returned id.
    pub fn open_file(&self, path: &Path) -> Result<u32> {
        let (file, fno) = match self.wal.get() {
            Some(w) => (w.vfs().open(path, true), w.register(path, FileKind::Pages)?),
            None => (RealFs.open(path, true), 0),
        };
        let file = file.map_err(|e| Error::io(path.display(), e))?;
        let of = Arc::new(OpenFile {
            file,
            path: path.to_path_buf(),
            fno,
        });
        let mut files = self.files.write();
        if let Some(i) = files.iter().position(Option::is_none) {
            files[i] = Some(of);
            return Ok(i as u32);
        }
        files.push(Some(of));
        Ok(files.len() as u32 - 1)
    }

    fn file(&self, id: u32) -> Result<Arc<OpenFile>> {
        self.files
            .read()
            .get(id as usize)
            .cloned()
            .flatten()
            .ok_or_else(|| Error::new(1030, format!("page file {id} is not open")))
    }

    /// Pages the file holds on disk.
    pub fn file_pages(&self, id: u32) -> Result<u32> {
        let f = self.file(id)?;
        let len = f.file.len().map_err(|e| Error::io(f.path.display(), e))?;
        Ok((len / PAGE_SIZE as u64) as u32)
    }

    fn part(&self, id: PageId) -> &RwLock<HashMap<PageId, usize>> {
        let h = (id.file as usize).wrapping_mul(0x9E37_79B9) ^ id.page as usize;
        &self.parts[h.wrapping_mul(0x85EB_CA6B) % self.parts.len()]
    }

    /// The page, read from disk on a miss (a page past the end of the file reads as zeros).
    pub fn get(&self, id: PageId) -> Result<PageRef<'_>> {
        if let Some(r) = self.lookup(id) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(r);
        }
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        let mut ls = self.load.lock();
        if let Some(r) = self.lookup(id) {
            return Ok(r);
        }
        let f = self.file(id.file)?;
        let victim = self.victim(&mut ls)?;
        let frame = &self.frames[victim];
        {
            let mut data = frame.data.write();
            if data.is_empty() {
                *data = vec![0u8; PAGE_SIZE].into_boxed_slice();
            }
            let n = read_full(
                f.file.as_ref(),
                &mut data,
                id.page as u64 * PAGE_SIZE as u64,
            )
            .map_err(|e| Error::io(f.path.display(), e))?;
            data[n..].fill(0);
            self.stats.reads.fetch_add(1, Ordering::Relaxed);
            let problem = if !verify(&data, id.page) {
                Some("checksum mismatch")
            } else if !well_formed(&data) {
                Some("malformed cells")
            } else {
                None
            };
            if let Some(problem) = problem {
                data.fill(0);
                frame.free_after_failure(&mut ls, victim);
                return Err(Error::corrupt(format!(
                    "{} (page {} {problem})",
                    f.path.display(),
                    id.page
                )));
            }
        }
        *frame.id.lock() = Some(id);
        frame.pins.store(1, Ordering::SeqCst);
        frame.referenced.store(true, Ordering::Relaxed);
        ls.by_file.entry(id.file).or_default().insert(victim);
        self.part(id).write().insert(id, victim);
        Ok(PageRef {
            pool: self,
            frame: victim,
            id,
        })
    }

    fn lookup(&self, id: PageId) -> Option<PageRef<'_>> {
        let part = self.part(id).read();
        let &i = part.get(&id)?;
        self.frames[i].pins.fetch_add(1, Ordering::SeqCst);
        self.frames[i].referenced.store(true, Ordering::Relaxed);
        Some(PageRef {
            pool: self,
            frame: i,
            id,
        })
    }

    /// A free frame, or an unpinned one evicted in clock order (written back if dirty).
    fn victim(&self, ls: &mut LoadState) -> Result<usize> {
        if let Some(i) = ls.free.pop() {
            return Ok(i);
        }
        let n = self.frames.len();
        for _ in 0..3 * n {
            let i = ls.hand;
            ls.hand = (ls.hand + 1) % n;
            let frame = &self.frames[i];
            if frame.pins.load(Ordering::SeqCst) > 0 {
                continue;
            }
            if frame.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            let Some(old) = *frame.id.lock() else {
                return Ok(i);
            };
            let mut part = self.part(old).write();
            if frame.pins.load(Ordering::SeqCst) > 0 {
                continue;
            }
            part.remove(&old);
            drop(part);
            if frame.dirty.swap(false, Ordering::SeqCst) {
                if let Err(e) = self.write_back(old, &mut frame.data.write()) {
                    // Keep the page: map it again so the change is not lost.
                    frame.dirty.store(true, Ordering::SeqCst);
                    self.part(old).write().insert(old, i);
                    return Err(e);
                }
            }
            *frame.id.lock() = None;
            if let Some(set) = ls.by_file.get_mut(&old.file) {
                set.remove(&i);
            }
            return Ok(i);
        }
        Err(Error::new(
            1041,
            "Out of memory: every buffer pool page is pinned; raise quarry_buffer_pool_size",
        ))
    }

    fn write_back(&self, id: PageId, data: &mut [u8]) -> Result<()> {
        let f = self.file(id.file)?;
        if let (Some(w), true) = (self.wal.get(), f.fno != 0) {
            // The write-ahead rule: the log describes the page before the page lands.
            w.flush_to(lsn(data), true)?;
        }
        seal(data, id.page);
        f.file
            .write_at(data, id.page as u64 * PAGE_SIZE as u64)
            .map_err(|e| Error::io(f.path.display(), e))?;
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Write every dirty page of `file` (in page order) and fsync it.
    pub fn flush_file(&self, file: u32) -> Result<()> {
        self.write_dirty(file)?;
        let f = self.file(file)?;
        f.file.sync().map_err(|e| Error::io(f.path.display(), e))
    }

    /// Write every dirty page of every file and fsync them (checkpoints).
    pub fn flush_all(&self) -> Result<()> {
        let files: Vec<u32> = self.load.lock().by_file.keys().copied().collect();
        for f in files {
            if self.file(f).is_ok() {
                self.flush_file(f)?;
            }
        }
        Ok(())
    }

    /// Write the file's dirty pages in page order. The load mutex is only held to list
    /// the frames: a writer holding a page latch may be waiting for it (a page miss), so it
    /// is never held while waiting for a latch. Under each latch the frame is checked to
    /// still hold that page (it may have been evicted, and written, meanwhile).
    fn write_dirty(&self, file: u32) -> Result<()> {
        let mut frames: Vec<(u32, usize)> = {
            let ls = self.load.lock();
            ls.by_file
                .get(&file)
                .into_iter()
                .flatten()
                .filter_map(|&i| self.frames[i].id.lock().map(|id| (id.page, i)))
                .collect()
        };
        frames.sort_unstable();
        for (page, i) in frames {
            let frame = &self.frames[i];
            let id = PageId { file, page };
            if !frame.dirty.load(Ordering::SeqCst) {
                continue;
            }
            let mut data = frame.data.write();
            if *frame.id.lock() != Some(id) || !frame.dirty.swap(false, Ordering::SeqCst) {
                continue;
            }
            if let Err(e) = self.write_back(id, &mut data) {
                frame.dirty.store(true, Ordering::SeqCst);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Drop the file's pages from the pool (written first when `write_dirty`; the caller
    /// fsyncs through `flush_file` when it needs durability) and close it. Callers
    /// guarantee no page of it is pinned.
    pub fn close_file(&self, file: u32, write_dirty: bool) -> Result<()> {
        if write_dirty {
            self.write_dirty(file)?;
        }
        let mut ls = self.load.lock();
        for i in ls.by_file.remove(&file).unwrap_or_default() {
            let frame = &self.frames[i];
            let mut idl = frame.id.lock();
            if let Some(id) = idl.filter(|id| id.file == file) {
                self.part(id).write().remove(&id);
                frame.dirty.store(false, Ordering::SeqCst);
                *idl = None;
                ls.free.push(i);
            }
        }
        if let Some(slot) = self.files.write().get_mut(file as usize) {
            *slot = None;
        }
        Ok(())
    }
}

impl Frame {
    fn free_after_failure(&self, ls: &mut LoadState, i: usize) {
        *self.id.lock() = None;
        self.pins.store(0, Ordering::SeqCst);
        ls.free.push(i);
    }
}

/// A pinned page; the pin is released on drop.
pub struct PageRef<'a> {
    pool: &'a BufferPool,
    frame: usize,
    pub id: PageId,
}

impl PageRef<'_> {
    pub fn read(&self) -> RwLockReadGuard<'_, Box<[u8]>> {
        self.pool.frames[self.frame].data.read()
    }

    /// Write access; the page is marked dirty. The mark is set under the latch, so a
    /// concurrent flush either writes this change or leaves the page dirty. With a log,
    /// the change is logged when the guard is dropped.
    pub fn write(&self) -> PageWrite<'_> {
        let f = &self.pool.frames[self.frame];
        let guard = f.data.write();
        f.dirty.store(true, Ordering::SeqCst);
        let logged = self.pool.wal.get().and_then(|w| {
            let fno = self.pool.file(self.id.file).ok()?.fno;
            (fno != 0).then_some((w.as_ref(), fno))
        });
        let before = logged.map(|_| guard.to_vec());
        PageWrite {
            guard,
            before,
            logged,
            page: self.id.page,
        }
    }
}

/// A page being changed; dropping it logs the changed byte ranges and stamps the page
/// with the record's LSN.
pub struct PageWrite<'a> {
    guard: RwLockWriteGuard<'a, Box<[u8]>>,
    before: Option<Vec<u8>>,
    logged: Option<(&'a Wal, u32)>,
    page: u32,
}

impl std::ops::Deref for PageWrite<'_> {
    type Target = Box<[u8]>;
    fn deref(&self) -> &Box<[u8]> {
        &self.guard
    }
}

impl std::ops::DerefMut for PageWrite<'_> {
    fn deref_mut(&mut self) -> &mut Box<[u8]> {
        &mut self.guard
    }
}

/// Changed ranges `[start, end)` between two images of a page from `from` on; runs of
/// fewer than 8 equal bytes do not split a range.
pub fn diff_ranges(before: &[u8], after: &[u8], from: usize) -> Vec<(usize, usize)> {
    let n = before.len().min(after.len());
    let mut out = vec![];
    let mut i = from;
    while i < n {
        if i.is_multiple_of(64) && i + 64 <= n && before[i..i + 64] == after[i..i + 64] {
            i += 64;
            continue;
        }
        if before[i] == after[i] {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1;
        i += 1;
        while i < n && i - end < 8 {
            if before[i] != after[i] {
                end = i + 1;
            }
            i += 1;
        }
        out.push((start, end));
        i = end;
    }
    out
}

impl Drop for PageWrite<'_> {
    fn drop(&mut self) {
        let (Some(before), Some((wal, fno))) = (self.before.take(), self.logged) else {
            return;
        };
        // Bytes 0..12 (checksum, LSN) are stamped here and at write-back, not logged.
        let ranges = diff_ranges(&before, &self.guard, 12);
        if ranges.is_empty() {
            return;
        }
        let parts: Vec<(u16, &[u8], &[u8])> = ranges
            .iter()
            .map(|&(s, e)| (s as u16, &self.guard[s..e], &before[s..e]))
            .collect();
        let end = wal.log_page(fno, self.page, &parts);
        set_lsn(&mut self.guard, end);
    }
}

impl Drop for PageRef<'_> {
    fn drop(&mut self) {
        self.pool.frames[self.frame]
            .pins
            .fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("quarry-pool-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn pages_survive_eviction_and_reopen() {
        let d = dir("evict");
        let pool = BufferPool::new(16 * PAGE_SIZE, 4);
        let f = pool.open_file(&d.join("a.qix")).unwrap();
        // Four times more pages than frames: most are evicted and read back.
        for p in 0..64u32 {
            let r = pool.get(PageId { file: f, page: p }).unwrap();
            let mut w = r.write();
            w[100..104].copy_from_slice(&p.to_le_bytes());
        }
        for p in (0..64u32).rev() {
            let r = pool.get(PageId { file: f, page: p }).unwrap();
            assert_eq!(&r.read()[100..104], &p.to_le_bytes());
        }
        assert!(pool.stats.writes.load(Ordering::Relaxed) >= 48);
        pool.close_file(f, true).unwrap();
        let pool = BufferPool::new(16 * PAGE_SIZE, 1);
        let f = pool.open_file(&d.join("a.qix")).unwrap();
        assert_eq!(pool.file_pages(f).unwrap(), 64);
        for p in 0..64u32 {
            let r = pool.get(PageId { file: f, page: p }).unwrap();
            assert_eq!(&r.read()[100..104], &p.to_le_bytes());
        }
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_corrupt_page_is_an_error_not_data() {
        let d = dir("corrupt");
        let path = d.join("c.qix");
        {
            let pool = BufferPool::new(16 * PAGE_SIZE, 2);
            let f = pool.open_file(&path).unwrap();
            pool.get(PageId { file: f, page: 3 }).unwrap().write()[200] = 7;
            pool.close_file(f, true).unwrap();
        }
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[1], 3 * PAGE_SIZE as u64 + 500).unwrap();
        let pool = BufferPool::new(16 * PAGE_SIZE, 2);
        let f = pool.open_file(&path).unwrap();
        let e = pool.get(PageId { file: f, page: 3 }).err().unwrap();
        assert_eq!(e.code, 1034, "{}", e.message);
        assert!(pool.get(PageId { file: f, page: 2 }).is_ok());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_well_sealed_but_malformed_page_is_an_error_not_a_panic() {
        let d = dir("malformed");
        let path = d.join("m.qix");
        let mut page = vec![0u8; PAGE_SIZE];
        crate::page::NodeMut(&mut page).init(crate::page::KIND_LEAF, 0);
        assert!(crate::page::NodeMut(&mut page).insert(0, b"key", None));
        assert!(well_formed(&page));
        // The one cell's slot points past the page; the checksum is made to match.
        page[32..34].copy_from_slice(&(PAGE_SIZE as u16 - 1).to_le_bytes());
        seal(&mut page, 0);
        std::fs::write(&path, &page).unwrap();
        let pool = BufferPool::new(16 * PAGE_SIZE, 2);
        let f = pool.open_file(&path).unwrap();
        let e = pool.get(PageId { file: f, page: 0 }).err().unwrap();
        assert_eq!(e.code, 1034, "{}", e.message);
        assert!(e.message.contains("malformed"), "{}", e.message);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn pinned_pages_are_never_evicted() {
        let d = dir("pins");
        let pool = BufferPool::new(16 * PAGE_SIZE, 2);
        let f = pool.open_file(&d.join("p.qix")).unwrap();
        let held: Vec<PageRef> = (0..16)
            .map(|p| pool.get(PageId { file: f, page: p }).unwrap())
            .collect();
        let e = pool.get(PageId { file: f, page: 99 }).err().unwrap();
        assert_eq!(e.code, 1041);
        drop(held);
        assert!(pool.get(PageId { file: f, page: 99 }).is_ok());
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn concurrent_readers_and_writers_see_their_own_pages() {
        let d = dir("threads");
        let pool = Arc::new(BufferPool::new(32 * PAGE_SIZE, 8));
        let f = pool.open_file(&d.join("t.qix")).unwrap();
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let pool = pool.clone();
                std::thread::spawn(move || {
                    for round in 0..50u32 {
                        for p in 0..20u32 {
                            let id = PageId {
                                file: f,
                                page: t * 100 + p,
                            };
                            let r = pool.get(id).unwrap();
                            let mut w = r.write();
                            let seen = u32::from_le_bytes(w[64..68].try_into().unwrap());
                            assert_eq!(seen, round, "page {id:?}");
                            w[64..68].copy_from_slice(&(round + 1).to_le_bytes());
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        std::fs::remove_dir_all(d).unwrap();
    }
}
