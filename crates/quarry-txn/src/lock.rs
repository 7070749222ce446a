//! Row and table locks held to the end of a transaction, with deadlock detection.
//!
//! A lock is named by a [`LockKey`]: a table, and a row's key within it (the hash of a
//! unique key's values, or a row id) or the whole table. Modes are InnoDB's: S and X on
//! rows; IS, IX, S and X on tables (a row writer holds IX on its table, so a table X
//! lock — a column table's writer, a bulk load — waits for row writers and they for it).
//!
//! The table of locks is split into partitions by key hash, each a mutex and a condvar
//! (rule 8: a shared hash table is partitioned). A request that must wait adds edges to
//! the wait-for graph — requester → each holder in its way — and a cycle through the
//! requester makes it the victim (error 1213) at once; otherwise it waits until the
//! holders release or `innodb_lock_wait_timeout` passes (error 1205). Waits wake every
//! 100 ms to notice KILL. A stale edge (a holder released while its waiter had not woken
//! yet) can only make a cycle look real a moment early; the victim retries.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use quarry_common::{Error, Result};

use crate::few::Few;

pub type TxnId = u64;

/// What a lock covers: `row == TABLE` is the whole table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockKey {
    pub table: u64,
    pub row: u64,
}

impl LockKey {
    pub const TABLE: u64 = u64::MAX;

    pub fn table(table: u64) -> LockKey {
        LockKey {
            table,
            row: Self::TABLE,
        }
    }

    pub fn row(table: u64, row: u64) -> LockKey {
        // A row key never collides with the table key.
        LockKey {
            table,
            row: row.min(Self::TABLE - 1),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockMode {
    IntentionShared,
    IntentionExclusive,
    Shared,
    Exclusive,
}

impl LockMode {
    fn compatible(self, other: LockMode) -> bool {
        use LockMode::*;
        matches!(
            (self, other),
            (
                IntentionShared,
                IntentionShared | IntentionExclusive | Shared
            ) | (IntentionExclusive, IntentionShared | IntentionExclusive)
                | (Shared, IntentionShared | Shared)
        )
    }

    /// `self` already gives everything `want` does.
    fn covers(self, want: LockMode) -> bool {
        use LockMode::*;
        self == want
            || self == Exclusive
            || (self == Shared && want == IntentionShared)
            || (self == IntentionExclusive && want == IntentionShared)
    }

    /// The weakest mode covering both.
    fn join(self, other: LockMode) -> LockMode {
        use LockMode::*;
        match (self, other) {
            (a, b) if a.covers(b) => a,
            (a, b) if b.covers(a) => b,
            // S + IX = SIX; X is the nearest mode here.
            _ => Exclusive,
        }
    }
}

#[derive(Default)]
struct Entry {
    /// The transactions granted it (nearly always one, kept inline).
    granted: Few<(TxnId, LockMode)>,
    waiting: usize,
}

struct Partition {
    locks: Mutex<HashMap<LockKey, Entry>>,
    released: Condvar,
}

pub struct LockManager {
    parts: Vec<Partition>,
    /// Wait-for graph: a waiting transaction → the holders in its way.
    waits: Mutex<HashMap<TxnId, Vec<TxnId>>>,
    pub stats: LockStats,
}

/// Counts since start, for SHOW STATUS (InnoDB's names where it has them).
#[derive(Default)]
pub struct LockStats {
    /// Requests that had to wait (counted once each).
    pub waits: AtomicU64,
    /// Requests refused with 1213.
    pub deadlocks: AtomicU64,
    /// Requests refused with 1205.
    pub timeouts: AtomicU64,
}

/// What a waiting request gives up on besides its timeout (KILL).
pub struct Interrupt<'a>(pub &'a dyn Fn() -> bool);

impl Default for LockManager {
    fn default() -> LockManager {
        LockManager::new(16)
    }
}

impl LockManager {
    pub fn new(partitions: usize) -> LockManager {
        LockManager {
            parts: (0..partitions.max(1))
                .map(|_| Partition {
                    locks: Mutex::new(HashMap::new()),
                    released: Condvar::new(),
                })
                .collect(),
            waits: Mutex::new(HashMap::new()),
            stats: LockStats::default(),
        }
    }

    fn part(&self, key: &LockKey) -> &Partition {
        &self.parts[self.part_index(key)]
    }

    fn part_index(&self, key: &LockKey) -> usize {
        let h = key
            .table
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .rotate_left(17)
            ^ key.row.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
        (h >> 32) as usize % self.parts.len()
    }

    /// Take `key` in `mode` for `txn`, waiting up to `timeout`. Returns whether the lock
    /// is new to `txn` (the caller remembers it to release at the end).
    pub fn acquire(
        &self,
        txn: TxnId,
        key: LockKey,
        mode: LockMode,
        timeout: Duration,
        interrupt: Option<Interrupt>,
    ) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        let part = self.part(&key);
        let mut locks = part.locks.lock();
        let mut waited = false;
        loop {
            let e = locks.entry(key).or_default();
            let mine = e.granted.as_slice().iter().position(|&(t, _)| t == txn);
            let want = match mine {
                Some(i) if e.granted.as_slice()[i].1.covers(mode) => return Ok(false),
                Some(i) => e.granted.as_slice()[i].1.join(mode),
                None => mode,
            };
            let blockers: Vec<TxnId> = e
                .granted
                .as_slice()
                .iter()
                .filter(|&&(t, m)| t != txn && !m.compatible(want))
                .map(|&(t, _)| t)
                .collect();
            if blockers.is_empty() {
                match mine {
                    Some(i) => e.granted.as_mut_slice()[i].1 = want,
                    None => e.granted.push((txn, want)),
                }
                return Ok(mine.is_none());
            }
            {
                let mut waits = self.waits.lock();
                waits.insert(txn, blockers);
                if reaches(&waits, txn) {
                    waits.remove(&txn);
                    drop(waits);
                    if e.granted.as_slice().is_empty() && e.waiting == 0 {
                        locks.remove(&key);
                    }
                    self.stats.deadlocks.fetch_add(1, Ordering::Relaxed);
                    return Err(Error::new(
                        1213,
                        "Deadlock found when trying to get lock; try restarting transaction",
                    ));
                }
            }
            if !waited {
                waited = true;
                self.stats.waits.fetch_add(1, Ordering::Relaxed);
            }
            e.waiting += 1;
            let slice = (Instant::now() + Duration::from_millis(100)).min(deadline);
            part.released.wait_until(&mut locks, slice);
            let e = locks.get_mut(&key).expect("a waiter keeps its entry");
            e.waiting -= 1;
            self.waits.lock().remove(&txn);
            let killed = interrupt.as_ref().is_some_and(|i| (i.0)());
            if killed || Instant::now() >= deadline {
                if e.granted.as_slice().is_empty() && e.waiting == 0 {
                    locks.remove(&key);
                }
                part.released.notify_all();
                return Err(if killed {
                    Error::query_interrupted()
                } else {
                    self.stats.timeouts.fetch_add(1, Ordering::Relaxed);
                    Error::lock_wait_timeout()
                });
            }
        }
    }

    /// Release `txn`'s locks on `keys` (all it took) and wake their waiters; each
    /// partition is locked once.
    pub fn release(&self, txn: TxnId, keys: &[LockKey]) {
        let mut by_part: Vec<(usize, LockKey)> =
            keys.iter().map(|k| (self.part_index(k), *k)).collect();
        by_part.sort_unstable_by_key(|&(p, _)| p);
        for run in by_part.chunk_by(|a, b| a.0 == b.0) {
            let part = &self.parts[run[0].0];
            let mut locks = part.locks.lock();
            for (_, k) in run {
                if let Some(e) = locks.get_mut(k) {
                    e.granted.retain(|&(t, _)| t != txn);
                    if e.granted.as_slice().is_empty() && e.waiting == 0 {
                        locks.remove(k);
                    }
                }
            }
            // A table never gives back room by itself: a transaction that held millions
            // of locks would leave this partition that big and empty for good.
            if locks.capacity() > 4096 && locks.len() * 4 < locks.capacity() {
                let keep = locks.len() * 2;
                locks.shrink_to(keep);
            }
            part.released.notify_all();
        }
    }

    /// Locks held or awaited now (for tests and SHOW ENGINE-style reports).
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.locks.lock().len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether `from` reaches itself through the wait-for graph.
fn reaches(waits: &HashMap<TxnId, Vec<TxnId>>, from: TxnId) -> bool {
    let mut seen = HashSet::new();
    let mut stack: Vec<TxnId> = waits.get(&from).cloned().unwrap_or_default();
    while let Some(t) = stack.pop() {
        if t == from {
            return true;
        }
        if seen.insert(t) {
            if let Some(next) = waits.get(&t) {
                stack.extend(next);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use LockMode::*;

    const T: Duration = Duration::from_secs(5);

    #[test]
    fn modes_conflict_as_innodb_says() {
        let m = LockManager::new(4);
        let k = LockKey::row(1, 7);
        assert!(m.acquire(1, k, Shared, T, None).unwrap());
        assert!(m.acquire(2, k, Shared, T, None).unwrap());
        assert!(!m.acquire(1, k, Shared, T, None).unwrap(), "held already");
        let e = m
            .acquire(3, k, Exclusive, Duration::from_millis(150), None)
            .unwrap_err();
        assert_eq!(e.code, 1205);
        m.release(1, &[k]);
        m.release(2, &[k]);
        assert!(m.acquire(3, k, Exclusive, T, None).unwrap());
        m.release(3, &[k]);
        assert!(m.is_empty());
        // Row writers share the table (IX); a table X waits for them.
        let t = LockKey::table(1);
        m.acquire(1, t, IntentionExclusive, T, None).unwrap();
        m.acquire(2, t, IntentionExclusive, T, None).unwrap();
        let e = m
            .acquire(3, t, Exclusive, Duration::from_millis(100), None)
            .unwrap_err();
        assert_eq!(e.code, 1205);
        m.release(1, &[t]);
        m.release(2, &[t]);
        assert!(m.is_empty());
        assert_eq!(m.stats.timeouts.load(Ordering::Relaxed), 2);
        assert_eq!(m.stats.waits.load(Ordering::Relaxed), 2);
        assert_eq!(m.stats.deadlocks.load(Ordering::Relaxed), 0);
    }

    /// A transaction that held many locks leaves no big empty tables behind.
    #[test]
    fn released_locks_give_their_room_back() {
        let m = LockManager::new(4);
        let room =
            |m: &LockManager| -> usize { m.parts.iter().map(|p| p.locks.lock().capacity()).sum() };
        let keys: Vec<LockKey> = (0..200_000).map(|r| LockKey::row(1, r)).collect();
        for k in &keys {
            m.acquire(1, *k, Exclusive, T, None).unwrap();
        }
        assert!(room(&m) >= 200_000);
        let other = LockKey::row(2, 1);
        m.acquire(2, other, Exclusive, T, None).unwrap();
        m.release(1, &keys);
        assert_eq!(m.len(), 1);
        assert!(room(&m) < 4 * 4096, "room left: {}", room(&m));
        assert!(
            !m.acquire(2, other, Exclusive, T, None).unwrap(),
            "kept through the shrink"
        );
        // A lock with one holder needs no allocation of its own.
        assert_eq!(std::mem::size_of::<Entry>(), 32);
    }

    #[test]
    fn a_waiter_gets_the_lock_when_the_holder_releases() {
        let m = Arc::new(LockManager::new(4));
        let k = LockKey::row(1, 1);
        m.acquire(1, k, Exclusive, T, None).unwrap();
        let waiter = {
            let m = m.clone();
            std::thread::spawn(move || {
                let t0 = Instant::now();
                m.acquire(2, k, Exclusive, T, None).unwrap();
                t0.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        m.release(1, &[k]);
        let waited = waiter.join().unwrap();
        assert!(waited >= Duration::from_millis(150), "{waited:?}");
        m.release(2, &[k]);
        assert!(m.is_empty());
    }

    #[test]
    fn a_cycle_makes_the_requester_the_victim() {
        let m = Arc::new(LockManager::new(4));
        let (a, b) = (LockKey::row(1, 1), LockKey::row(1, 2));
        m.acquire(1, a, Exclusive, T, None).unwrap();
        m.acquire(2, b, Exclusive, T, None).unwrap();
        let first = {
            let m = m.clone();
            // 1 waits for 2 …
            std::thread::spawn(move || m.acquire(1, b, Exclusive, T, None))
        };
        // Once 1 is waiting (a fixed sleep was too short on a loaded machine: 2 then
        // waited first, and timed out instead) …
        let since = Instant::now();
        while !m.waits.lock().contains_key(&1) {
            assert!(since.elapsed() < Duration::from_secs(30), "1 never waited");
            std::thread::sleep(Duration::from_millis(5));
        }
        // … 2 asking for 1's lock closes the cycle: 2 is the victim, at once.
        let t0 = Instant::now();
        let e = m.acquire(2, a, Exclusive, T, None).unwrap_err();
        assert_eq!(e.code, 1213);
        assert!(t0.elapsed() < Duration::from_secs(1));
        // The victim's rollback releases its locks; the other goes on.
        m.release(2, &[b]);
        assert!(first.join().unwrap().unwrap());
        m.release(1, &[a, b]);
        assert!(m.is_empty());
        assert_eq!(m.stats.deadlocks.load(Ordering::Relaxed), 1);
        assert_eq!(
            m.stats.waits.load(Ordering::Relaxed),
            1,
            "the victim never waited"
        );
    }

    #[test]
    fn upgrades_and_kill() {
        let m = Arc::new(LockManager::new(1));
        let k = LockKey::row(9, 9);
        m.acquire(1, k, Shared, T, None).unwrap();
        m.acquire(2, k, Shared, T, None).unwrap();
        // Both want X: the second upgrade closes a cycle.
        let up = {
            let m = m.clone();
            std::thread::spawn(move || m.acquire(1, k, Exclusive, T, None))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(m.acquire(2, k, Exclusive, T, None).unwrap_err().code, 1213);
        m.release(2, &[k]);
        assert!(!up.join().unwrap().unwrap(), "an upgrade is not a new lock");
        // KILL ends a wait.
        let killed = Arc::new(AtomicBool::new(false));
        let w = {
            let (m, killed) = (m.clone(), killed.clone());
            std::thread::spawn(move || {
                let check = || killed.load(Ordering::Relaxed);
                m.acquire(3, k, Shared, T, Some(Interrupt(&check)))
                    .unwrap_err()
                    .code
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        killed.store(true, Ordering::Relaxed);
        assert_eq!(w.join().unwrap(), 1317);
        m.release(1, &[k]);
        assert!(m.is_empty());
    }
}
