//! Transactions over any engine's tables: snapshots (MVCC), row and table locks with
//! deadlock detection, and the earlier versions of rows that snapshots read.
//!
//! ```text
//!   executor ──▶ MvccTable (one per open table) ──▶ the engine's table
//!                   │  reads: the engine's rows, corrected by Versions for the
//!                   │         statement's Snapshot (rows changed by writers it does
//!                   │         not see are replaced by their earlier version)
//!                   │  writes: lock the row's unique keys (X), record its version,
//!                   │          then change it in the engine, in place
//!                   ▼
//!               TxnManager: ids, the end-of-transaction clock, snapshots, purge, locks
//! ```
//!
//! Engines stay single-version: a write changes the row in place, visible at once to the
//! engine's own reads; what makes it invisible to others until the writer ends is the
//! version left here. Rolling back is the executor's compensation (the engine's
//! `restore` puts a deleted row back at its own id), after which the rows are as they
//! were and the transaction ends like a commit (see [`txn`]).
//!
//! What a call sees is set per thread by the session ([`enter`]): the transaction that
//! writes, the snapshot that reads (None: the newest rows, as READ UNCOMMITTED or work
//! outside statements), and how long to wait for a lock. Without a context a table is
//! the engine's, unversioned and unlocked — DDL, which runs alone, works that way.
//!
//! Must not touch: SQL, sessions, files. Engines know nothing of this crate.

mod few;
pub mod lock;
mod mvcc;
pub mod txn;
mod version;

pub use lock::{LockKey, LockManager, LockMode};
pub use mvcc::{current, enter, newest_reads, Context, ContextGuard, MvccTable};
pub use txn::{Snapshot, Txn, TxnManager};
pub use version::{Seen, Versions};
