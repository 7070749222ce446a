//! The hash table of a hash join's build side: each keyed build row's key bytes in one
//! arena, chained by hash in insertion order, so a build of a million rows makes no
//! allocation per row or per distinct key (a map of `Vec<u8>` to `Vec<usize>` made two).
//!
//! Owns the mapping from key bytes to build-row positions; the rows themselves, the key
//! encoding and spilling are the join's.

use quarry_common::hash::{hash_bytes, WordMap};

const NONE: u32 = u32::MAX;

#[derive(Default)]
pub(crate) struct KeyTable {
    /// Hash of a key → first and last entry with that hash.
    heads: WordMap<u64, (u32, u32)>,
    /// Per entry: the build row it stands for, where its key ends in `keys`, the next
    /// entry of the same hash.
    rows: Vec<u32>,
    ends: Vec<u32>,
    next: Vec<u32>,
    keys: Vec<u8>,
}

impl KeyTable {
    /// Entries (keyed rows) held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Bytes held per entry beyond its key, for the join's memory accounting.
    pub const ENTRY_BYTES: usize = 24;

    pub fn insert(&mut self, key: &[u8], row: usize) {
        let e = self.rows.len() as u32;
        self.keys.extend_from_slice(key);
        self.rows.push(row as u32);
        self.ends.push(self.keys.len() as u32);
        self.next.push(NONE);
        let h = hash_bytes(key);
        match self.heads.get_mut(&h) {
            Some((_, last)) => {
                self.next[*last as usize] = e;
                *last = e;
            }
            None => {
                self.heads.insert(h, (e, e));
            }
        }
    }

    fn key(&self, e: u32) -> &[u8] {
        let start = if e == 0 { 0 } else { self.ends[e as usize - 1] };
        &self.keys[start as usize..self.ends[e as usize] as usize]
    }

    /// The build rows whose key is `key`, in the order they were inserted.
    pub fn matches<'t>(&'t self, key: &'t [u8]) -> impl Iterator<Item = usize> + 't {
        let mut e = self
            .heads
            .get(&hash_bytes(key))
            .map_or(NONE, |&(first, _)| first);
        std::iter::from_fn(move || {
            while e != NONE {
                let at = e;
                e = self.next[at as usize];
                if self.key(at) == key {
                    return Some(self.rows[at as usize] as usize);
                }
            }
            None
        })
    }

    /// Every entry as (key, build row), in insertion order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], usize)> + '_ {
        (0..self.rows.len() as u32).map(|e| (self.key(e), self.rows[e as usize] as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::fuzz::Rng;
    use std::collections::HashMap;

    #[test]
    fn finds_what_a_map_of_vectors_finds_in_the_same_order() {
        let mut rng = Rng::new(7);
        let mut table = KeyTable::default();
        let mut model: HashMap<Vec<u8>, Vec<usize>> = HashMap::new();
        for row in 0..20_000 {
            // Keys of 0 to 12 bytes over a small alphabet: many repeats, prefixes of
            // each other, and the empty key.
            let len = rng.below(13);
            let key: Vec<u8> = (0..len).map(|_| b'a' + rng.below(3) as u8).collect();
            table.insert(&key, row);
            model.entry(key).or_default().push(row);
        }
        assert_eq!(table.len(), 20_000);
        for (key, rows) in &model {
            assert_eq!(&table.matches(key).collect::<Vec<_>>(), rows);
        }
        assert_eq!(table.matches(b"zzz").count(), 0);
        let entries: Vec<usize> = table.entries().map(|(_, r)| r).collect();
        assert_eq!(entries, (0..20_000).collect::<Vec<_>>());
        for (k, r) in table.entries() {
            assert!(model[k].contains(&r));
        }
    }
}
