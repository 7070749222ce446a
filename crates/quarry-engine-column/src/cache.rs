//! Decoded chunks kept for reads by row id: an index lookup fetches a row or a few from a
//! segment, and decoding each column's chunk (up to 64 Ki values) for every such read
//! would cost far more than the lookup. One cache per engine, shared by its tables, keyed
//! by table, column and file offset, bounded in bytes; the least recently used go first.
//!
//! Scans do not fill it (one pass over a large table would push out every hot chunk);
//! they read from it when a chunk is there. A table must forget its chunks when its file
//! offsets are reused (TRUNCATE) — chunks are immutable otherwise.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::chunk::Chunk;

/// Bytes of decoded chunks the engine keeps: a sixteenth of physical memory, 64 MiB to
/// 4 GiB (the row engine's buffer pool takes a quarter). A fixed 256 MiB held less than
/// the five lineitem columns TPC-H Q9 fetches by index at scale factor 1 (decoded, 8 bytes
/// a value, 48 MiB a column): each fetch decoded its chunks again, and Q9 took 4.2 s
/// where it takes 2.2 s with them kept.
pub(crate) fn default_budget() -> usize {
    (quarry_common::physical_memory().unwrap_or(1 << 30) / 16).clamp(64 << 20, 4 << 30)
}

type Key = (u64, usize, u64);

pub(crate) struct ChunkCache {
    inner: Mutex<Inner>,
    budget: usize,
}

struct Inner {
    map: HashMap<Key, (Arc<Chunk>, u64)>,
    bytes: usize,
    tick: u64,
}

impl ChunkCache {
    pub fn new(budget: usize) -> ChunkCache {
        ChunkCache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                bytes: 0,
                tick: 0,
            }),
            budget,
        }
    }

    pub fn get(&self, table: u64, col: usize, off: u64) -> Option<Arc<Chunk>> {
        let mut g = self.inner.lock();
        g.tick += 1;
        let tick = g.tick;
        let (c, used) = g.map.get_mut(&(table, col, off))?;
        *used = tick;
        Some(c.clone())
    }

    pub fn put(&self, table: u64, col: usize, off: u64, chunk: Arc<Chunk>) {
        let size = chunk.heap_bytes();
        if size > self.budget / 4 {
            return;
        }
        let mut g = self.inner.lock();
        g.tick += 1;
        let tick = g.tick;
        if let Some((old, _)) = g.map.insert((table, col, off), (chunk, tick)) {
            g.bytes -= old.heap_bytes();
        }
        g.bytes += size;
        if g.bytes > self.budget {
            // Down to three quarters at once, so eviction's sort is paid rarely.
            let mut by_age: Vec<(u64, Key)> = g.map.iter().map(|(k, (_, t))| (*t, *k)).collect();
            by_age.sort_unstable();
            for (_, k) in by_age {
                if g.bytes <= self.budget / 4 * 3 {
                    break;
                }
                if let Some((c, _)) = g.map.remove(&k) {
                    g.bytes -= c.heap_bytes();
                }
            }
        }
    }

    /// Forget every chunk of `table`.
    pub fn forget(&self, table: u64) {
        let mut g = self.inner.lock();
        let mut freed = 0;
        g.map.retain(|k, (c, _)| {
            let keep = k.0 != table;
            if !keep {
                freed += c.heap_bytes();
            }
            keep
        });
        g.bytes -= freed;
    }
}
