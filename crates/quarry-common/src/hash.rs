//! The hash function of Quarry's in-memory tables keyed by byte strings (join tables,
//! groups, dictionaries): their keys are values' hash forms the table itself holds, so
//! SipHash's resistance to chosen keys buys little and costs most of a probe.
//!
//! Owns the function only; which table uses it is its owner's choice.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// FNV-1a over 8-byte words, each word's product folded back down (so high bits reach
/// the low ones a table picks its bucket by).
#[derive(Default, Clone, Copy)]
pub struct WordHasher(u64);

impl Hasher for WordHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0 ^ 0xcbf2_9ce4_8422_2325;
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            h = (h ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(0x0000_0100_0000_01b3);
            h ^= h >> 29;
        }
        for &b in words.remainder() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        self.0 = h;
    }

    fn write_u64(&mut self, n: u64) {
        let h = (self.0 ^ 0xcbf2_9ce4_8422_2325 ^ n).wrapping_mul(0x0000_0100_0000_01b3);
        self.0 = h ^ (h >> 29);
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}

/// A hash map hashing its keys with [`WordHasher`].
pub type WordMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

/// A hash set hashing its keys with [`WordHasher`].
pub type WordSet<K> = HashSet<K, BuildHasherDefault<WordHasher>>;

/// The [`WordHasher`] hash of one byte string.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = WordHasher::default();
    h.write(bytes);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_that_differ_in_one_byte_spread_over_buckets() {
        // The hash forms of consecutive integers (tag, 16-byte mantissa, scale) differ in
        // one low byte; a table of 1 024 buckets must not pile them up.
        let mut buckets = vec![0u32; 1024];
        for i in 0..100_000i128 {
            let mut k = vec![1u8];
            k.extend_from_slice(&i.to_le_bytes());
            k.push(0);
            buckets[(hash_bytes(&k) % 1024) as usize] += 1;
        }
        let max = *buckets.iter().max().unwrap();
        assert!(max < 2 * 100_000 / 1024, "fullest bucket holds {max}");
    }
}
