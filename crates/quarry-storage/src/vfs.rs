//! The I/O seam: every file of a datadir opened with the write-ahead log (log segments,
//! logged data files, page files, the column engine's chunk and metadata files) is read
//! and written through a [`Vfs`]. [`RealFs`] is the operating
//! system; [`SimFs`] keeps files in memory and can "crash": writes since a file's last
//! sync are each kept, lost or torn at a 512-byte sector boundary, which is what a power
//! cut may do to a real disk. Directory operations (create, rename, remove) are durable at
//! once in the simulation; the engines fsync directories where that matters.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub trait VFile: Send + Sync {
    /// Read at `off`; fewer bytes than asked only at the end of the file.
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize>;
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()>;
    fn sync(&self) -> io::Result<()>;
    fn set_len(&self, len: u64) -> io::Result<()>;
    fn len(&self) -> io::Result<u64>;
    /// Give the file disk space for its first `len` bytes, growing it (with zeros) to at
    /// least `len`: later writes below `len` cannot fail for lack of space.
    fn allocate(&self, len: u64) -> io::Result<()>;
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
}

pub trait Vfs: Send + Sync {
    /// Open for reading and writing, creating the file when `create`.
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>>;
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// A folder and everything in it (NotFound when there is no such folder).
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// A file or a whole folder.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// A file, or a folder holding something.
    fn exists(&self, path: &Path) -> bool;
    /// Files directly inside `dir`.
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Bytes free to this process on the file system holding `dir`, and its size; None
    /// where the file system cannot say.
    fn space(&self, _dir: &Path) -> io::Result<Option<(u64, u64)>> {
        Ok(None)
    }
}

/// Read as much of `buf` as the file holds from `off` (the rest is left alone).
pub fn read_full(f: &dyn VFile, buf: &mut [u8], off: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = f.read_at(&mut buf[done..], off + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

pub struct RealFs;

struct RealFile(std::fs::File);

impl VFile for RealFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        self.0.read_at(buf, off)
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        self.0.write_all_at(buf, off)
    }
    fn sync(&self) -> io::Result<()> {
        self.0.sync_data()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.0.metadata()?.len())
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let have = self.len()?;
        if len <= have {
            return Ok(());
        }
        // SAFETY: fallocate on a descriptor this file owns; no memory is passed.
        #[allow(unsafe_code)]
        let r = unsafe {
            libc::fallocate(
                self.0.as_raw_fd(),
                0,
                have as libc::off_t,
                (len - have) as libc::off_t,
            )
        };
        if r == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if !matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL)
        ) {
            return Err(e);
        }
        // A file system without fallocate: written zeros take their blocks just as well.
        let zeros = vec![0u8; 1 << 20];
        let mut at = have;
        while at < len {
            let n = (len - at).min(zeros.len() as u64) as usize;
            self.0.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        Ok(())
    }
}

impl Vfs for RealFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)?;
        Ok(Arc::new(RealFile(f)))
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(dir)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }
    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        let mut out = vec![];
        for e in std::fs::read_dir(dir)? {
            out.push(e?.path());
        }
        Ok(out)
    }
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }
    fn space(&self, dir: &Path) -> io::Result<Option<(u64, u64)>> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        #[allow(unsafe_code)]
        // SAFETY: statvfs writes into the zeroed struct we own; the path is NUL-terminated.
        let st = unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut st) != 0 {
                return Err(io::Error::last_os_error());
            }
            st
        };
        let unit = st.f_frsize as u64;
        Ok(Some((st.f_bavail as u64 * unit, st.f_blocks as u64 * unit)))
    }
}

#[derive(Default)]
struct SimState {
    data: Vec<u8>,
    durable: Vec<u8>,
    /// Writes (`Some`) and length changes (`None` + new length) since the last sync.
    unsynced: Vec<(u64, Option<Vec<u8>>)>,
}

#[derive(Default)]
pub struct SimFile {
    st: Mutex<SimState>,
    /// Inject failures: while set, a write or allocation that grows the file fails with
    /// ENOSPC (a full disk has no new blocks; writes inside a file's blocks still work).
    full: Arc<std::sync::atomic::AtomicBool>,
    sync_delay_us: Arc<std::sync::atomic::AtomicU64>,
    read_delay_us: Arc<std::sync::atomic::AtomicU64>,
}

impl VFile for SimFile {
    fn read_at(&self, buf: &mut [u8], off: u64) -> io::Result<usize> {
        let st = self.st.lock();
        let off = off as usize;
        if off >= st.data.len() {
            return Ok(0);
        }
        let n = buf.len().min(st.data.len() - off);
        buf[..n].copy_from_slice(&st.data[off..off + n]);
        drop(st);
        let us = self
            .read_delay_us
            .load(std::sync::atomic::Ordering::Relaxed);
        if us > 0 {
            // A reader preempted after the copy: the file may change before it returns.
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
        Ok(n)
    }
    fn write_at(&self, buf: &[u8], off: u64) -> io::Result<()> {
        let mut st = self.st.lock();
        let end = off as usize + buf.len();
        if end > st.data.len() && self.full.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(28));
        }
        if st.data.len() < end {
            st.data.resize(end, 0);
        }
        st.data[off as usize..end].copy_from_slice(buf);
        st.unsynced.push((off, Some(buf.to_vec())));
        Ok(())
    }
    fn sync(&self) -> io::Result<()> {
        let us = self
            .sync_delay_us
            .load(std::sync::atomic::Ordering::Relaxed);
        if us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(us));
        }
        let mut st = self.st.lock();
        st.durable = st.data.clone();
        st.unsynced.clear();
        Ok(())
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut st = self.st.lock();
        st.data.resize(len as usize, 0);
        st.unsynced.push((len, None));
        Ok(())
    }
    fn len(&self) -> io::Result<u64> {
        Ok(self.st.lock().data.len() as u64)
    }
    fn allocate(&self, len: u64) -> io::Result<()> {
        let mut st = self.st.lock();
        if len as usize <= st.data.len() {
            return Ok(());
        }
        if self.full.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(io::Error::from_raw_os_error(28));
        }
        st.data.resize(len as usize, 0);
        st.unsynced.push((len, None));
        Ok(())
    }
}

/// The files inside folder `dir` (at any depth); NotFound when there are none.
fn files_under(files: &BTreeMap<PathBuf, Arc<SimFile>>, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let under: Vec<PathBuf> = files
        .range(dir.to_path_buf()..)
        .take_while(|(p, _)| p.starts_with(dir))
        .map(|(p, _)| p.clone())
        .filter(|p| p != dir)
        .collect();
    if under.is_empty() {
        return Err(io::Error::from(io::ErrorKind::NotFound));
    }
    Ok(under)
}

/// Files in memory with a crash that loses or tears unsynced writes.
#[derive(Default)]
pub struct SimFs {
    /// By path: a folder's files sort together, right after the folder's own path.
    files: Mutex<BTreeMap<PathBuf, Arc<SimFile>>>,
    full: Arc<std::sync::atomic::AtomicBool>,
    sync_delay_us: Arc<std::sync::atomic::AtomicU64>,
    read_delay_us: Arc<std::sync::atomic::AtomicU64>,
    /// What `space` answers (None: cannot say).
    space: Mutex<Option<(u64, u64)>>,
}

impl SimFs {
    /// `space` answers (free, size) from now on.
    pub fn set_space(&self, free: u64, size: u64) {
        *self.space.lock() = Some((free, size));
    }

    pub fn new() -> Arc<SimFs> {
        Arc::new(SimFs::default())
    }

    /// While `full`, every write or allocation that grows a file fails with "no space
    /// left on device".
    pub fn set_full(&self, full: bool) {
        self.full.store(full, std::sync::atomic::Ordering::SeqCst);
    }

    /// Every fsync takes `d` (a disk's flush latency).
    pub fn set_sync_delay(&self, d: std::time::Duration) {
        self.sync_delay_us
            .store(d.as_micros() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every read takes `d` after it has copied the data.
    pub fn set_read_delay(&self, d: std::time::Duration) {
        self.read_delay_us
            .store(d.as_micros() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    /// A power cut: each file keeps what was synced plus, in order, each later write with
    /// probability one half — whole, or torn (only some of its 512-byte sectors land).
    pub fn crash(&self, seed: u64) {
        let mut rng = seed | 1;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        for f in self.files.lock().values() {
            let mut st = f.st.lock();
            let mut data = st.durable.clone();
            for (off, w) in std::mem::take(&mut st.unsynced) {
                match w {
                    None => {
                        if next() % 2 == 0 {
                            data.resize(off as usize, 0);
                        }
                    }
                    Some(bytes) => {
                        let r = next() % 4;
                        if r < 2 {
                            continue;
                        }
                        let end = off as usize + bytes.len();
                        if data.len() < end {
                            data.resize(end, 0);
                        }
                        let mut at = 0usize;
                        while at < bytes.len() {
                            // Sector-aligned pieces; a torn write keeps a random subset.
                            let sector_end = ((off as usize + at) / 512 + 1) * 512;
                            let n = (sector_end - (off as usize + at)).min(bytes.len() - at);
                            if r == 3 || next() % 2 == 0 {
                                let o = off as usize + at;
                                data[o..o + n].copy_from_slice(&bytes[at..at + n]);
                            }
                            at += n;
                        }
                    }
                }
            }
            st.durable = data.clone();
            st.data = data;
        }
    }
}

impl Vfs for SimFs {
    fn open(&self, path: &Path, create: bool) -> io::Result<Arc<dyn VFile>> {
        let mut files = self.files.lock();
        if let Some(f) = files.get(path) {
            return Ok(f.clone());
        }
        if !create {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        let f = Arc::new(SimFile {
            st: Mutex::default(),
            full: self.full.clone(),
            sync_delay_us: self.sync_delay_us.clone(),
            read_delay_us: self.read_delay_us.clone(),
        });
        files.insert(path.to_path_buf(), f.clone());
        Ok(f)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        self.files
            .lock()
            .remove(path)
            .map(|_| ())
            .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
    }
    fn remove_dir_all(&self, dir: &Path) -> io::Result<()> {
        let mut files = self.files.lock();
        for p in files_under(&files, dir)? {
            files.remove(&p);
        }
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut files = self.files.lock();
        if let Some(f) = files.remove(from) {
            files.insert(to.to_path_buf(), f);
            return Ok(());
        }
        // A folder: everything under it moves.
        for p in files_under(&files, from)? {
            let f = files.remove(&p).expect("listed");
            let rest = p.strip_prefix(from).expect("under from");
            files.insert(to.join(rest), f);
        }
        Ok(())
    }
    fn exists(&self, path: &Path) -> bool {
        self.files
            .lock()
            .range(path.to_path_buf()..)
            .next()
            .is_some_and(|(p, _)| p.starts_with(path))
    }
    fn list(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(self
            .files
            .lock()
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .cloned()
            .collect())
    }
    fn create_dir_all(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        Ok(())
    }
    fn space(&self, _dir: &Path) -> io::Result<Option<(u64, u64)>> {
        Ok(*self.space.lock())
    }
}
