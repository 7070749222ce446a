//! A data file whose writes are logged: each write becomes a WAL record (new bytes, and
//! inside a transaction the bytes it replaces) and is kept in memory until the log is
//! durable past it — the write-ahead rule — then written to the file. Reads see those
//! pending writes, so callers never notice the delay. Without a log it is a plain file.
//! A file opened with a [`BlockCache`] reads small ranges through it: blocks hold what the
//! file holds, are patched as pending bytes are written out, and dropped past a cut.

use crate::blockcache::{BlockCache, BLOCK, MAX_CACHED_READ};
use crate::vfs::{read_full, RealFs, VFile, Vfs};
use crate::wal::{Lsn, Wal};
use parking_lot::Mutex;
use quarry_common::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Pending bytes past which a writer forces the log and writes them out itself.
const PENDING_LIMIT: usize = 32 << 20;

pub struct LoggedFile {
    inner: Arc<LoggedInner>,
}

pub(crate) struct LoggedInner {
    file: Arc<dyn VFile>,
    path: PathBuf,
    fno: u32,
    wal: Option<Arc<Wal>>,
    pend: Mutex<Pending>,
    /// Bumped before and after every change of the file (pending extents written out,
    /// a cut), each made under `pend` so it is odd exactly while one runs: a read runs
    /// its pread outside `pend` and keeps the result only if the count did not move. A
    /// thread preempted in pread so stalls no one.
    file_writes: AtomicU64,
    /// `Pending::len`, readable without `pend`.
    len: AtomicU64,
    /// The cache small reads go through, and this file's owner number in it.
    cache: Option<(Arc<BlockCache>, u64)>,
}

#[derive(Default)]
struct Pending {
    /// Non-overlapping extents by offset. A write is appended to the extent it follows;
    /// one that only touches the extent after it stays apart (merging would copy that
    /// extent, and writes in falling offsets, as reused slots are taken, would then copy
    /// up to `PENDING_LIMIT` bytes each).
    ext: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
    max_lsn: Lsn,
    /// Length including pending writes.
    len: u64,
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::io(path.display(), e)
}

impl Pending {
    /// Put `data` at `off`: into the extent that holds it whole, or appended to the
    /// extent ending at `off` when nothing pending lies under it, else merged with the
    /// extents it overlaps.
    fn put(&mut self, off: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = off + data.len() as u64;
        let before = self
            .ext
            .range(..=off)
            .next_back()
            .map(|(&s, v)| (s, s + v.len() as u64));
        if let Some((s, e)) = before {
            // Inside one extent (undo marking a record deleted): overwritten in place.
            if off < e && end <= e {
                let v = self.ext.get_mut(&s).expect("found above");
                v[(off - s) as usize..(end - s) as usize].copy_from_slice(data);
                return;
            }
            if e == off && self.ext.range(off..end).next().is_none() {
                self.ext
                    .get_mut(&s)
                    .expect("found above")
                    .extend_from_slice(data);
                self.bytes += data.len();
                return;
            }
        }
        let mut start = off;
        let mut merged_end = end;
        let touching: Vec<u64> = self
            .ext
            .range(..end)
            .rev()
            .take_while(|(s, v)| **s + v.len() as u64 > off)
            .map(|(s, _)| *s)
            .collect();
        let mut olds = Vec::with_capacity(touching.len());
        for s in touching {
            let v = self.ext.remove(&s).unwrap();
            self.bytes -= v.len();
            start = start.min(s);
            merged_end = merged_end.max(s + v.len() as u64);
            olds.push((s, v));
        }
        let mut buf = vec![0u8; (merged_end - start) as usize];
        for (s, v) in olds {
            let at = (s - start) as usize;
            buf[at..at + v.len()].copy_from_slice(&v);
        }
        let at = (off - start) as usize;
        buf[at..at + data.len()].copy_from_slice(data);
        self.bytes += buf.len();
        self.ext.insert(start, buf);
    }

    /// Copy pending bytes over `buf` (which holds the file's bytes from `off`).
    fn overlay(&self, buf: &mut [u8], off: u64) {
        let end = off + buf.len() as u64;
        for (&s, v) in self.ext.range(..end).rev() {
            let e = s + v.len() as u64;
            if e <= off {
                break;
            }
            let from = s.max(off);
            let to = e.min(end);
            buf[(from - off) as usize..(to - off) as usize]
                .copy_from_slice(&v[(from - s) as usize..(to - s) as usize]);
        }
    }

    /// Drop pending bytes at or past `len`.
    fn cut(&mut self, len: u64) {
        let keys: Vec<u64> = self
            .ext
            .range(..)
            .rev()
            .take_while(|(s, v)| **s + v.len() as u64 > len)
            .map(|(s, _)| *s)
            .collect();
        for s in keys {
            let mut v = self.ext.remove(&s).unwrap();
            self.bytes -= v.len();
            if s < len {
                v.truncate((len - s) as usize);
                self.bytes += v.len();
                self.ext.insert(s, v);
            }
        }
    }
}

impl LoggedFile {
    /// Open (or create) `path`; with a log, its writes are logged under the file's number.
    pub fn open(path: &Path, wal: Option<&Arc<Wal>>, create: bool) -> Result<LoggedFile> {
        LoggedFile::open_cached(path, wal, create, None)
    }

    /// [`LoggedFile::open`], reading small ranges through `cache` (unless another handle
    /// on the file is open, whose way of reading it shares).
    pub fn open_cached(
        path: &Path,
        wal: Option<&Arc<Wal>>,
        create: bool,
        cache: Option<&Arc<BlockCache>>,
    ) -> Result<LoggedFile> {
        let fno = match wal {
            Some(w) => w.register_file(path, crate::wal::FileKind::Bytes)?,
            None => 0,
        };
        let file = match wal {
            Some(w) => w.vfs().open(path, create),
            None => RealFs.open(path, create),
        }
        .map_err(|e| io(path, e))?;
        // Another handle on the same file (a table reopened while the old handle lives)
        // shares its pending writes.
        if let Some(inner) = wal.and_then(|w| w.logged_file(fno)) {
            return Ok(LoggedFile { inner });
        }
        let len = file.len().map_err(|e| io(path, e))?;
        let inner = Arc::new(LoggedInner {
            file,
            path: path.to_path_buf(),
            fno,
            wal: wal.cloned(),
            pend: Mutex::new(Pending {
                len,
                ..Default::default()
            }),
            file_writes: AtomicU64::new(0),
            len: AtomicU64::new(len),
            cache: cache.map(|c| (c.clone(), BlockCache::new_owner())),
        });
        if let Some(w) = wal {
            w.attach(&inner);
        }
        Ok(LoggedFile { inner })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    pub fn len(&self) -> u64 {
        self.inner.pend.lock().len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Read from `off`; returns how many bytes the file has there (short at its end).
    pub fn read_at(&self, buf: &mut [u8], off: u64) -> Result<usize> {
        let inner = &*self.inner;
        let before = inner.file_writes.load(Ordering::Acquire);
        let len = inner.len.load(Ordering::Acquire);
        if before.is_multiple_of(2) && off < len {
            let n = buf.len().min((len - off) as usize);
            let got = inner.read_file(&mut buf[..n], off, before)?;
            let p = inner.pend.lock();
            // The file as read is the file now: pending bytes (including any added
            // meanwhile) go over it, as they would have under the lock.
            if inner.file_writes.load(Ordering::Acquire) == before && p.len == len {
                buf[got..n].fill(0);
                p.overlay(&mut buf[..n], off);
                return Ok(n);
            }
        }
        let p = inner.pend.lock();
        if off >= p.len {
            return Ok(0);
        }
        let n = buf.len().min((p.len - off) as usize);
        let buf = &mut buf[..n];
        let got = read_full(inner.file.as_ref(), buf, off).map_err(|e| io(&inner.path, e))?;
        buf[got..].fill(0);
        p.overlay(buf, off);
        Ok(n)
    }

    pub fn read_exact_at(&self, buf: &mut [u8], off: u64) -> Result<()> {
        if self.read_at(buf, off)? < buf.len() {
            return Err(Error::corrupt(format!(
                "{} (read past the end at {off})",
                self.inner.path.display()
            )));
        }
        Ok(())
    }

    /// Write `data` at `off` (logged; reaches the file once the log covers it). Undo
    /// restores the bytes replaced and cuts what was appended.
    pub fn write_at(&self, data: &[u8], off: u64) -> Result<()> {
        self.write_logged(data, off, None)
    }

    /// Write `data` at `off` with `undo` (as long as `data`) as what undo puts there
    /// instead of the bytes replaced, and never cutting the file: an append by one of
    /// several concurrent transactions is undone by marking it dead, since later
    /// appends by others may follow it.
    pub fn write_at_undo(&self, data: &[u8], off: u64, undo: &[u8]) -> Result<()> {
        debug_assert_eq!(data.len(), undo.len());
        self.write_logged(data, off, Some(undo))
    }

    fn write_logged(&self, data: &[u8], off: u64, undo_image: Option<&[u8]>) -> Result<()> {
        let Some(wal) = &self.inner.wal else {
            let mut p = self.inner.pend.lock();
            self.inner.file_writes.fetch_add(1, Ordering::AcqRel);
            let r = self.inner.file.write_at(data, off);
            self.inner.patch_cache(off, data);
            self.inner.file_writes.fetch_add(1, Ordering::AcqRel);
            p.len = p.len.max(off + data.len() as u64);
            self.inner.len.store(p.len, Ordering::Release);
            return r.map_err(|e| io(&self.inner.path, e));
        };
        let mut p = self.inner.pend.lock();
        let old_len = p.len;
        // The replaced bytes are only needed to undo an open transaction.
        let in_txn = wal.in_txn();
        let undo: std::borrow::Cow<[u8]> = match undo_image {
            Some(u) if in_txn => u.into(),
            None if in_txn && off < old_len => {
                let n = data.len().min((old_len - off) as usize);
                let mut u = vec![0u8; n];
                let got = read_full(self.inner.file.as_ref(), &mut u, off)
                    .map_err(|e| io(&self.inner.path, e))?;
                u[got..].fill(0);
                p.overlay(&mut u, off);
                u.into()
            }
            _ => (&[][..]).into(),
        };
        let old = match (in_txn, undo_image) {
            (false, _) => u64::MAX,
            // Undo never cuts the file here.
            (true, Some(_)) => old_len.max(off + data.len() as u64),
            (true, None) => old_len,
        };
        let lsn = wal.log_write(self.inner.fno, off, data, old, &undo);
        if p.ext.is_empty() {
            wal.note_pending(&self.inner);
        }
        p.put(off, data);
        p.max_lsn = p.max_lsn.max(lsn);
        p.len = p.len.max(off + data.len() as u64);
        self.inner.len.store(p.len, Ordering::Release);
        let over = p.bytes > PENDING_LIMIT;
        drop(p);
        if over {
            // The write is done (logged, kept pending). When the log cannot be written
            // (a full disk) it stays in memory: failing here would leave the caller's
            // change half made. Writers are refused before they start instead (`admit`).
            let _ = self.inner.write_out(true);
        }
        Ok(())
    }

    /// Refuse a change before it is made while the log cannot be written (a full disk),
    /// so a statement fails there instead of growing in memory for a COMMIT that would
    /// find no space either (and a rollback that would need as much again). A rollback
    /// is never refused: it must finish.
    pub fn admit(&self) -> Result<()> {
        let Some(wal) = &self.inner.wal else {
            return Ok(());
        };
        if Wal::is_rolling_back() {
            return Ok(());
        }
        wal.admit_change()?;
        if wal.short_of_space() {
            // A probe of what waits: cheap when the disk is still full.
            wal.flush_to(wal.next_lsn(), false)?;
        }
        if self.inner.pend.lock().bytes <= PENDING_LIMIT {
            return Ok(());
        }
        self.inner.write_out(true).map(|_| ())
    }

    /// Shrink the file to `len`. With a log this commits the open transaction (TRUNCATE
    /// TABLE commits implicitly), and the file shrinks only once that is durable.
    pub fn truncate_and_commit(&self, len: u64) -> Result<()> {
        let mut p = self.inner.pend.lock();
        if let Some(wal) = &self.inner.wal {
            wal.truncate_and_commit(self.inner.fno, len)?;
        }
        p.cut(len);
        p.len = len;
        self.inner.len.store(len, Ordering::Release);
        drop(p);
        // Extents below `len` written first, then the cut: all covered by the log now.
        self.inner.write_out(true)?;
        // Under `pend` like every other change of the file (see `file_writes`).
        let _p = self.inner.pend.lock();
        self.inner.file_writes.fetch_add(1, Ordering::AcqRel);
        let cut = self.inner.file.set_len(len);
        if let Some((cache, owner)) = &self.inner.cache {
            cache.forget_from(*owner, len);
        }
        self.inner.file_writes.fetch_add(1, Ordering::AcqRel);
        cut.map_err(|e| io(&self.inner.path, e))
    }

    /// Write out what the log covers and fsync the file.
    pub fn sync(&self) -> Result<()> {
        self.inner.write_out(true)?;
        self.inner.sync()
    }
}

impl Drop for LoggedFile {
    /// The last handle writes out what is pending: a checkpoint only sees open files.
    fn drop(&mut self) {
        if Arc::strong_count(&self.inner) == 1 {
            let _ = self.inner.write_out(true);
        }
    }
}

impl LoggedInner {
    pub(crate) fn fno(&self) -> u32 {
        self.fno
    }

    /// Write pending extents to the file once the log is durable past them; `force`
    /// makes it durable first. Returns whether writes are still waiting.
    pub(crate) fn write_out(&self, force: bool) -> Result<bool> {
        let mut p = self.pend.lock();
        if p.ext.is_empty() {
            return Ok(false);
        }
        if let Some(wal) = &self.wal {
            if wal.durable_lsn() < p.max_lsn {
                if !force {
                    return Ok(true);
                }
                wal.flush_to(p.max_lsn, true)?;
            }
        }
        self.file_writes.fetch_add(1, Ordering::AcqRel);
        let written = p.ext.iter().try_for_each(|(off, v)| {
            let r = self.file.write_at(v, *off);
            // Even a failed write may have changed part of the range.
            self.patch_cache(*off, v);
            r
        });
        self.file_writes.fetch_add(1, Ordering::AcqRel);
        written.map_err(|e| io(&self.path, e))?;
        p.ext.clear();
        p.bytes = 0;
        Ok(false)
    }

    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync().map_err(|e| io(&self.path, e))
    }

    /// `data` was written at `off` (the caller holds `pend` and `file_writes` is odd).
    fn patch_cache(&self, off: u64, data: &[u8]) {
        if let Some((cache, owner)) = &self.cache {
            cache.patch(*owner, off, data);
        }
    }

    /// Read the file's bytes at `off` into `buf` as `read_full` does, through the cache
    /// when the range is small. `before` is the even `file_writes` count seen before:
    /// a block read from the file is kept only if the count has not moved when it is
    /// stored (writers patch cached blocks after changing the file, under the cache's
    /// locks), and the caller checks the count again before using what it got.
    fn read_file(&self, buf: &mut [u8], off: u64, before: u64) -> Result<usize> {
        let Some((cache, owner)) = self.cache.as_ref().filter(|_| buf.len() <= MAX_CACHED_READ)
        else {
            return read_full(self.file.as_ref(), buf, off).map_err(|e| io(&self.path, e));
        };
        let mut done = 0usize;
        let mut block_buf: Option<Box<[u8]>> = None;
        while done < buf.len() {
            let at = off + done as u64;
            let block = at / BLOCK as u64;
            let from = (at % BLOCK as u64) as usize;
            let take = (BLOCK - from).min(buf.len() - done);
            let out = &mut buf[done..done + take];
            if cache.copy_out(*owner, block, from, out) {
                done += take;
                continue;
            }
            let b = block_buf.get_or_insert_with(|| vec![0u8; BLOCK].into_boxed_slice());
            let got = read_full(self.file.as_ref(), b, block * BLOCK as u64)
                .map_err(|e| io(&self.path, e))?;
            if got == BLOCK {
                cache.insert_if(*owner, block, b, || {
                    self.file_writes.load(Ordering::Acquire) == before
                });
            }
            let have = got.saturating_sub(from).min(take);
            out[..have].copy_from_slice(&b[from..from + have]);
            done += have;
            if have < take {
                // The file ends here.
                break;
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    fn read(p: &Pending, off: u64, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len];
        p.overlay(&mut buf, off);
        buf
    }

    /// Records written into reused slots, in rising and in falling offsets, and over each
    /// other: every byte reads back, no extent overlaps another, and a run in falling
    /// offsets is never merged (each merge copied the whole run: a bulk insert into a
    /// table whose rows had been deleted took 28 s for 200 000 rows instead of 0.2 s).
    #[test]
    fn writes_in_any_order_read_back_without_copying_runs() {
        let rec = |i: u64| vec![(i % 251) as u8 + 1; 40];
        let mut p = Pending::default();
        for i in 0..1000u64 {
            p.put(i * 40, &rec(i));
        }
        assert_eq!(p.ext.len(), 1, "a rising run is one extent");
        let mut q = Pending::default();
        for i in (0..1000u64).rev() {
            q.put(i * 40, &rec(i));
        }
        assert_eq!(
            q.ext.len(),
            1000,
            "a falling run is left in pieces, not copied"
        );
        for p in [&p, &q] {
            for i in [0u64, 1, 499, 999] {
                assert_eq!(read(p, i * 40, 40), rec(i));
            }
            assert_eq!(p.bytes, 40_000);
        }
        // A write inside one extent changes it in place.
        p.put(4005, &[0xAB; 3]);
        assert_eq!(p.ext.len(), 1);
        assert_eq!(
            read(&p, 4000, 10),
            [&rec(100)[..5], &[0xAB; 3], &rec(100)[8..10]].concat()
        );
        assert_eq!(p.bytes, 40_000);
        // Overwrites across pieces merge them, and later bytes win.
        q.put(30, &[0xEE; 60]);
        assert_eq!(read(&q, 0, 30), rec(0)[..30].to_vec());
        assert_eq!(read(&q, 30, 60), vec![0xEE; 60]);
        assert_eq!(read(&q, 90, 30), rec(2)[10..].to_vec());
        let mut last_end = 0;
        for (&s, v) in &q.ext {
            assert!(s >= last_end, "extents overlap at {s}");
            last_end = s + v.len() as u64;
        }
        assert_eq!(q.bytes, q.ext.values().map(Vec::len).sum::<usize>());
    }
}
