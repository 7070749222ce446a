//! Storage core shared by the engines: 16 KiB checksummed pages, the buffer pool with its
//! partitioned page table, the B+tree built on them, the cache of data-file blocks, and the
//! write-ahead log with the I/O seam its files go through. It knows bytes and pages, not
//! rows, SQL or tables; key encoding lives with the engine that owns the index.
//!
pub mod blockcache;
pub mod btree;
pub mod extsort;
mod logged;
pub mod page;
pub mod pool;
mod space;
pub mod vfs;
pub mod wal;

pub use blockcache::BlockCache;
pub use btree::BTree;
pub use extsort::ExternalSorter;
pub use pool::{BufferPool, PageId};
pub use space::DEFAULT_KEEP_FREE;
pub use wal::{FileKind, FlushPolicy, LoggedFile, Wal};
#[cfg(test)]
mod wal_tests;
