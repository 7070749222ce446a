//! A cache of data-file blocks in memory, shared by the logged files that use it (the row
//! engine's record files), so a row fetched by id is a copy from memory instead of a
//! `pread` per row (TPC-H Q03 on row tables spent 44 % of its time in those calls).
//!
//! Owns the blocks and their eviction (clock order per shard) only. A block holds what the
//! file holds, never bytes still pending: the logged file overlays those, patches the
//! blocks it writes out and says when a cached block may be kept (see
//! `LoggedFile::read_at`). Only whole blocks inside the file are cached.

use parking_lot::Mutex;
use quarry_common::hash::WordMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes per block: a fetch's small read (a record is rarely over 1 KiB) is served by one
/// or two of them.
pub const BLOCK: usize = 8 << 10;

/// Reads longer than this go to the file: a scan's large sequential reads would only
/// push fetched rows' blocks out, and copy twice.
pub const MAX_CACHED_READ: usize = 4 * BLOCK;

const SHARDS: usize = 64;

/// A file's blocks as keyed in the cache: (owner, block number). Owners are never reused
/// within a process, so a file reopened or recreated never meets its old blocks.
type Key = (u64, u64);

static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

pub struct BlockCache {
    shards: Box<[Mutex<Shard>]>,
    /// Blocks each shard holds at most.
    per_shard: usize,
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

#[derive(Default)]
struct Shard {
    at: WordMap<Key, u32>,
    slots: Vec<Slot>,
    hand: usize,
}

struct Slot {
    key: Key,
    data: Box<[u8]>,
    referenced: bool,
}

impl BlockCache {
    /// A cache of at most `bytes` of blocks (at least one block per shard).
    pub fn new(bytes: usize) -> BlockCache {
        BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            per_shard: (bytes / BLOCK / SHARDS).max(1),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// A new owner number for a file's blocks.
    pub fn new_owner() -> u64 {
        NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
    }

    /// Bytes the cache may hold.
    pub fn capacity(&self) -> usize {
        self.per_shard * SHARDS * BLOCK
    }

    fn shard(&self, key: Key) -> &Mutex<Shard> {
        let h = key
            .0
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(key.1.wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
        &self.shards[(h >> 58) as usize % SHARDS]
    }

    /// Copy `out.len()` bytes from offset `from` of block `block` of `owner`, if it is
    /// cached; whether it was.
    pub fn copy_out(&self, owner: u64, block: u64, from: usize, out: &mut [u8]) -> bool {
        let key = (owner, block);
        let mut s = self.shard(key).lock();
        let Some(&i) = s.at.get(&key) else {
            drop(s);
            self.misses.fetch_add(1, Ordering::Relaxed);
            return false;
        };
        let slot = &mut s.slots[i as usize];
        slot.referenced = true;
        out.copy_from_slice(&slot.data[from..from + out.len()]);
        drop(s);
        self.hits.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Keep `data` (a whole block) as block `block` of `owner`, if `still_current` says,
    /// asked under the shard's lock, that the file has not changed since it was read:
    /// a writer patches blocks under the same locks after changing the file, so a block
    /// read before a change is either refused here or patched after.
    pub fn insert_if(
        &self,
        owner: u64,
        block: u64,
        data: &[u8],
        still_current: impl FnOnce() -> bool,
    ) {
        debug_assert_eq!(data.len(), BLOCK);
        let key = (owner, block);
        let mut guard = self.shard(key).lock();
        if !still_current() {
            return;
        }
        let s = &mut *guard;
        if let Some(&i) = s.at.get(&key) {
            s.slots[i as usize].data.copy_from_slice(data);
            return;
        }
        if s.slots.len() < self.per_shard {
            s.at.insert(key, s.slots.len() as u32);
            s.slots.push(Slot {
                key,
                data: data.into(),
                referenced: false,
            });
            return;
        }
        // Clock: the first block not read since the hand last passed it goes.
        let victim = loop {
            let h = s.hand;
            s.hand = (h + 1) % s.slots.len();
            let slot = &mut s.slots[h];
            if !std::mem::take(&mut slot.referenced) {
                break h;
            }
        };
        let slot = &mut s.slots[victim];
        let old = std::mem::replace(&mut slot.key, key);
        slot.data.copy_from_slice(data);
        s.at.remove(&old);
        s.at.insert(key, victim as u32);
    }

    /// `data` was written to `owner`'s file at `off`: cached blocks it overlaps take it.
    pub fn patch(&self, owner: u64, off: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = off + data.len() as u64;
        for block in off / BLOCK as u64..=(end - 1) / BLOCK as u64 {
            let key = (owner, block);
            let mut s = self.shard(key).lock();
            let Some(&i) = s.at.get(&key) else { continue };
            let start = block * BLOCK as u64;
            let from = off.max(start);
            let to = end.min(start + BLOCK as u64);
            s.slots[i as usize].data[(from - start) as usize..(to - start) as usize]
                .copy_from_slice(&data[(from - off) as usize..(to - off) as usize]);
        }
    }

    /// `owner`'s file was cut to `len` bytes: its blocks that reach past that go (a file
    /// grown again holds zeros there, not what was cut).
    pub fn forget_from(&self, owner: u64, len: u64) {
        for shard in self.shards.iter() {
            let mut s = shard.lock();
            let mut i = 0;
            while i < s.slots.len() {
                let (o, b) = s.slots[i].key;
                if o == owner && (b + 1) * BLOCK as u64 > len {
                    let key = s.slots[i].key;
                    s.at.remove(&key);
                    s.slots.swap_remove(i);
                    if let Some(moved) = s.slots.get(i).map(|m| m.key) {
                        s.at.insert(moved, i as u32);
                    }
                    if s.hand >= s.slots.len() {
                        s.hand = 0;
                    }
                } else {
                    i += 1;
                }
            }
        }
    }

    /// Blocks held, over all shards.
    pub fn blocks(&self) -> usize {
        self.shards.iter().map(|s| s.lock().slots.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(fill: u8) -> Vec<u8> {
        vec![fill; BLOCK]
    }

    #[test]
    fn holds_patches_evicts_and_forgets_blocks() {
        // Four blocks per shard: the three blocks kept first cannot evict each other.
        let c = BlockCache::new(4 * SHARDS * BLOCK);
        let me = BlockCache::new_owner();
        let other = BlockCache::new_owner();
        let mut out = [0u8; 4];
        assert!(!c.copy_out(me, 0, 0, &mut out));
        c.insert_if(me, 0, &block(7), || true);
        c.insert_if(other, 0, &block(9), || true);
        assert!(c.copy_out(me, 0, 10, &mut out));
        assert_eq!(out, [7; 4]);
        // A block read before a change is not kept.
        c.insert_if(me, 1, &block(1), || false);
        assert!(!c.copy_out(me, 1, 0, &mut out));
        // A write across two blocks patches the cached one and leaves the other uncached.
        c.insert_if(me, 1, &block(1), || true);
        c.patch(me, BLOCK as u64 - 2, &[5, 5, 5, 5]);
        assert!(c.copy_out(me, 0, BLOCK - 4, &mut out));
        assert_eq!(out, [7, 7, 5, 5]);
        assert!(c.copy_out(me, 1, 0, &mut out));
        assert_eq!(out, [5, 5, 1, 1]);
        // A cut drops the blocks reaching past it, of that file only.
        c.forget_from(me, BLOCK as u64 + 1);
        assert!(c.copy_out(me, 0, 0, &mut out));
        assert!(!c.copy_out(me, 1, 0, &mut out));
        assert!(c.copy_out(other, 0, 0, &mut out));
        assert_eq!(out, [9; 4]);
        // Never more blocks than the budget.
        for b in 0..10 * SHARDS as u64 {
            c.insert_if(me, 100 + b, &block(b as u8), || true);
        }
        assert!(c.blocks() <= 4 * SHARDS);
        let kept = (0..10 * SHARDS as u64)
            .filter(|&b| c.copy_out(me, 100 + b, 0, &mut out) && out == [b as u8; 4])
            .count();
        assert!(kept > 0);
    }
}
