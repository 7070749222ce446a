//! The transaction table: ids, the end-of-transaction clock, snapshots and purge.
//!
//! Every transaction that ends — commit or rollback — takes the next tick of one clock
//! and stamps itself with it. A snapshot is a tick: it sees the changes of every
//! transaction that ended at or before it, and its own. A rolled-back transaction counts
//! as ended too, because its rollback already put the rows back: after it, the table's
//! current rows are the truth, exactly as after a commit.
//!
//! Versions a writer left behind ([`crate::Versions`]) are needed only by snapshots
//! older than its end. Purge forgets them once every live snapshot is at least that new.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use quarry_common::Result;

use crate::lock::{Interrupt, LockKey, LockManager, LockMode};
use crate::version::Versions;

pub type TxnId = u64;

/// One transaction as versions and snapshots see it.
pub struct Txn {
    pub id: TxnId,
    /// 0 while open; the clock tick it ended at afterwards.
    end: AtomicU64,
    /// Tables it left versions in, for purge.
    touched: Mutex<Vec<Weak<Versions>>>,
    /// Locks it holds, released when it ends.
    held: Mutex<HashSet<LockKey>>,
}

impl Txn {
    pub fn is_open(&self) -> bool {
        self.end.load(Ordering::Acquire) == 0
    }

    /// `v` holds versions of this transaction (called once per table).
    pub(crate) fn touched(&self, v: &Arc<Versions>) {
        self.touched.lock().push(Arc::downgrade(v));
    }
}

/// A consistent view: what ended at or before `tick`, plus `own`'s changes.
#[derive(Clone)]
pub struct Snapshot {
    pub own: TxnId,
    pub tick: u64,
    _reg: Arc<Registration>,
}

impl Snapshot {
    /// Whether `writer`'s changes are part of this view.
    pub fn sees(&self, writer: &Txn) -> bool {
        if writer.id == self.own {
            return true;
        }
        let end = writer.end.load(Ordering::Acquire);
        end != 0 && end <= self.tick
    }
}

struct Registration {
    tick: u64,
    mgr: Weak<TxnManager>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(m) = self.mgr.upgrade() {
            let mut live = m.snapshots.lock();
            if let Some(n) = live.get_mut(&self.tick) {
                *n -= 1;
                if *n == 0 {
                    live.remove(&self.tick);
                }
            }
        }
    }
}

pub struct TxnManager {
    clock: Mutex<u64>,
    next_id: AtomicU64,
    /// Live snapshots by tick (how many at each).
    snapshots: Mutex<BTreeMap<u64, usize>>,
    /// Ended transactions whose versions are not purged yet, oldest end first.
    ended: Mutex<VecDeque<Arc<Txn>>>,
    pub locks: LockManager,
    me: Weak<TxnManager>,
}

impl TxnManager {
    pub fn new(lock_partitions: usize) -> Arc<TxnManager> {
        Arc::new_cyclic(|me| TxnManager {
            clock: Mutex::new(1),
            next_id: AtomicU64::new(1),
            snapshots: Mutex::new(BTreeMap::new()),
            ended: Mutex::new(VecDeque::new()),
            locks: LockManager::new(lock_partitions),
            me: me.clone(),
        })
    }

    pub fn begin(&self) -> Arc<Txn> {
        Arc::new(Txn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            end: AtomicU64::new(0),
            touched: Mutex::new(Vec::new()),
            held: Mutex::new(HashSet::new()),
        })
    }

    /// Lock `key` for `txn` until it ends (1213 on a deadlock, 1205 after `timeout`).
    pub fn lock(
        &self,
        txn: &Txn,
        key: LockKey,
        mode: LockMode,
        timeout: std::time::Duration,
        interrupt: Option<Interrupt>,
    ) -> Result<()> {
        if self.locks.acquire(txn.id, key, mode, timeout, interrupt)? {
            txn.held.lock().insert(key);
        }
        Ok(())
    }

    /// A view of everything ended so far (and `own`'s changes), kept from purge until
    /// the last clone is dropped.
    pub fn snapshot(&self, own: TxnId) -> Snapshot {
        let clock = self.clock.lock();
        let tick = *clock;
        *self.snapshots.lock().entry(tick).or_default() += 1;
        drop(clock);
        Snapshot {
            own,
            tick,
            _reg: Arc::new(Registration {
                tick,
                mgr: self.me.clone(),
            }),
        }
    }

    /// `txn` committed or finished rolling back: later snapshots see the tables' rows as
    /// they are now. Then purge what no snapshot needs any more.
    pub fn end(&self, txn: &Arc<Txn>) {
        {
            let mut clock = self.clock.lock();
            *clock += 1;
            txn.end.store(*clock, Ordering::Release);
        }
        let held: Vec<LockKey> = txn.held.lock().drain().collect();
        self.locks.release(txn.id, &held);
        if !txn.touched.lock().is_empty() {
            self.ended.lock().push_back(txn.clone());
        }
        self.purge();
    }

    /// The oldest tick a live snapshot holds (or the clock when none does).
    pub fn horizon(&self) -> u64 {
        let clock = self.clock.lock();
        let oldest = self.snapshots.lock().keys().next().copied();
        oldest.unwrap_or(*clock)
    }

    /// Forget versions of transactions that ended at or before every live snapshot.
    pub fn purge(&self) {
        let horizon = self.horizon();
        loop {
            let txn = {
                let mut ended = self.ended.lock();
                match ended.front() {
                    Some(t) if t.end.load(Ordering::Acquire) <= horizon => ended.pop_front(),
                    _ => None,
                }
            };
            let Some(txn) = txn else { break };
            let touched = std::mem::take(&mut *txn.touched.lock());
            for v in touched {
                if let Some(v) = v.upgrade() {
                    v.forget(txn.id);
                }
            }
        }
    }

    /// Transactions ended but not purged yet (tests, status).
    pub fn unpurged(&self) -> usize {
        self.ended.lock().len()
    }
}
