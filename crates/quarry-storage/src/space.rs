//! The free-space watermark of the datadir's file system. The log is both redo and undo,
//! so a transaction's log cannot be reclaimed before it ends, and rolling it back logs
//! more (compensations: a tenth of an INSERT's log, more than a DELETE's). A statement
//! allowed to fill the disk leaves no room for its own rollback, the checkpoint that would
//! free the log, a DROP TABLE, or the next start's recovery: the server is stuck until
//! someone deletes files by hand. So changes are refused (1021) while less than
//! `keep_free` bytes are free — an Elasticsearch-style flood stage — and rollbacks,
//! COMMITs, checkpoints and file records use what is left.
//!
//! Owns only the decision; the log asks it before a change ([`crate::Wal::admit_change`])
//! and it reads the file system through the [`Vfs`] seam.

use crate::vfs::Vfs;
use quarry_common::{Error, Result};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The most kept free by default: enough for the rollback of an INSERT that logged
/// several gigabytes, and the data pages waiting to be written.
pub const DEFAULT_KEEP_FREE: u64 = 1 << 30;
/// The default keeps at most this fraction of a small file system free.
const KEEP_FREE_SHARE: u64 = 16;

pub(crate) struct Watermark {
    /// Bytes to keep free (0: never refuse).
    keep_free: AtomicU64,
    /// `keep_free` is the default, kept to a sixteenth of the file system.
    default: AtomicBool,
    /// Logged bytes (the log's running total) at which the file system is looked at next:
    /// every byte a change writes is logged first, so the log's growth paces the checks.
    check_at: AtomicU64,
    /// The last look found less free than kept: every change looks again (space may have
    /// come back), and is refused until it has.
    below: AtomicBool,
}

impl Watermark {
    pub(crate) fn new() -> Watermark {
        Watermark {
            keep_free: AtomicU64::new(DEFAULT_KEEP_FREE),
            default: AtomicBool::new(true),
            check_at: AtomicU64::new(0),
            below: AtomicBool::new(false),
        }
    }

    /// Keep `n` bytes free as the user asked (None: the default).
    pub(crate) fn set_keep_free(&self, n: Option<u64>) {
        self.keep_free
            .store(n.unwrap_or(DEFAULT_KEEP_FREE), Ordering::Relaxed);
        self.default.store(n.is_none(), Ordering::Relaxed);
        // Looked at again by the next change.
        self.check_at.store(0, Ordering::Relaxed);
    }

    /// The last look found less free than kept.
    pub(crate) fn below(&self) -> bool {
        self.below.load(Ordering::Acquire)
    }

    /// May a change be made, `logged` bytes into the log? An error (1021) when the file
    /// system holding `dir` has less free than kept.
    pub(crate) fn admit(&self, vfs: &dyn Vfs, dir: &Path, logged: u64) -> Result<()> {
        let keep = self.keep_free.load(Ordering::Relaxed);
        if keep == 0
            || (!self.below.load(Ordering::Acquire)
                && logged < self.check_at.load(Ordering::Relaxed))
        {
            return Ok(());
        }
        // A file system that cannot say is not refused.
        let Ok(Some((free, total))) = vfs.space(dir) else {
            return Ok(());
        };
        let keep = if self.default.load(Ordering::Relaxed) {
            keep.min(total / KEEP_FREE_SHARE)
        } else {
            keep
        };
        if free >= keep {
            self.below.store(false, Ordering::Release);
            // The log grows about as fast as the disk fills (its own bytes, and the data
            // written behind it): look again after a quarter of the room left.
            let step = ((free - keep) / 4).clamp(1 << 20, 64 << 20);
            self.check_at.store(logged + step, Ordering::Relaxed);
            return Ok(());
        }
        self.below.store(true, Ordering::Release);
        Err(Error::disk_full(&format!(
            "{} MiB kept free for rollbacks",
            keep >> 20
        )))
    }
}
