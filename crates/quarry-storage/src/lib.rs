//! Storage core shared by the engines: 16 KiB checksummed pages, the buffer pool with its
//! partitioned page table, and the B+tree built on them. It knows bytes and pages, not
//! rows, SQL or tables; key encoding lives with the engine that owns the index.
//!
//! Not yet wired into the row engine (its keys are still in-memory maps): this is the
//! first part of the indexes issue.

pub mod btree;
pub mod page;
pub mod pool;

pub use btree::BTree;
pub use pool::{BufferPool, PageId};
