//! Shared vocabulary of every Quarry layer: values, SQL types, collation and the error type.
//!
//! Owns: [`Value`] and its MySQL conversion/comparison rules, [`SqlType`] with wire metadata,
//! [`Error`] with the single mapping to MySQL error numbers and SQLSTATE.
//! Must not touch: sockets, SQL text, and files other than the unnamed spill files of
//! [`temp_file`] (shared by the executor's sorts and the storage layer's index builds).

pub mod charset;
pub mod collation;
pub mod compiled_like;
pub mod crc32;
pub mod crc32c;
pub mod decimal;
pub mod error;
pub mod field;
pub mod fuzz;
pub mod hash;
pub mod packed;
pub mod time;
pub mod types;
pub mod value;

pub use collation::Collation;
pub use error::{Error, Result};
pub use types::{SqlType, TypeKind};
pub use value::{like, Date, DateTime, Decimal, Row, Value};

/// The machine's physical memory in bytes (`MemTotal` of /proc/meminfo), when known:
/// caches that default to a share of it size themselves from it.
pub fn physical_memory() -> Option<usize> {
    let m = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: usize = m
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// A test's scratch folder, `<tmp>/quarry-<name>-<pid>`, not yet made. Folders of that
/// name left by test processes that are gone (a test that failed or was killed skips its
/// own cleanup) are removed first, so runs do not pile them up in the temp directory.
pub fn test_dir(name: &str) -> std::path::PathBuf {
    let tmp = std::env::temp_dir();
    let prefix = format!("quarry-{name}-");
    let me = std::process::id();
    for e in std::fs::read_dir(&tmp).into_iter().flatten().flatten() {
        let file = e.file_name();
        let pid = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != me && !std::path::Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = tmp.join(format!("{prefix}{me}"));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// An unnamed temporary file for spilling (sort runs, index-build runs): created under the
/// system temp directory and unlinked at once, so nothing is left behind.
pub fn temp_file(purpose: &str) -> Result<std::fs::File> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = std::env::temp_dir().join(format!("quarry-{purpose}-{}-{n}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::io(path.display(), e))?;
    let _ = std::fs::remove_file(&path);
    Ok(f)
}
