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

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
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
    /// (The lock manager grants a key to a transaction once: no key is here twice.)
    held: Mutex<Vec<LockKey>>,
    /// What waits until no snapshot can see the rows it replaced (`on_purged`).
    purged: Mutex<Vec<Box<dyn FnOnce() + Send>>>,
}

impl Txn {
    pub fn is_open(&self) -> bool {
        self.end.load(Ordering::Acquire) == 0
    }

    /// `v` holds versions of this transaction (called once per table).
    pub(crate) fn touched(&self, v: &Arc<Versions>) {
        self.touched.lock().push(Arc::downgrade(v));
    }

    /// Run `f` once this transaction has ended and no live snapshot is older than its
    /// end — when what it deleted or moved away is needed by no reader (an engine slot
    /// it freed may then hold another row).
    pub fn on_purged(&self, f: impl FnOnce() + Send + 'static) {
        self.purged.lock().push(Box::new(f));
    }

    fn run_purged(&self) {
        for f in std::mem::take(&mut *self.purged.lock()) {
            f();
        }
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
        let end = writer.end.load(Ordering::SeqCst);
        end != 0 && end <= self.tick
    }
}

/// The live snapshots one thread took from one manager. Only that thread adds to it
/// (its mutex is not contended); purge reads `min`, a tick no newer than any of them
/// (0: none).
#[derive(Default)]
struct Slot {
    min: AtomicU64,
    live: Mutex<BTreeMap<u64, usize>>,
}

struct Registration {
    tick: u64,
    slot: Arc<Slot>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut live = self.slot.live.lock();
        if let Some(n) = live.get_mut(&self.tick) {
            *n -= 1;
            if *n == 0 {
                live.remove(&self.tick);
            }
        }
        let min = live.keys().next().copied().unwrap_or(0);
        self.slot.min.store(min, Ordering::SeqCst);
    }
}

thread_local! {
    /// This thread's slot in each manager, by manager id.
    static SLOTS: RefCell<HashMap<u64, Arc<Slot>>> = RefCell::new(HashMap::new());
}

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

pub struct TxnManager {
    /// The tick of the last transaction end; bumped under `ending`.
    clock: AtomicU64,
    ending: Mutex<()>,
    next_id: AtomicU64,
    /// Every thread's snapshot slot (dead threads' slots drop out).
    slots: Mutex<Vec<Weak<Slot>>>,
    /// Ended transactions whose versions are not purged yet, oldest end first.
    ended: Mutex<VecDeque<Arc<Txn>>>,
    pub locks: LockManager,
    id: u64,
}

impl TxnManager {
    pub fn new(lock_partitions: usize) -> Arc<TxnManager> {
        Arc::new(TxnManager {
            clock: AtomicU64::new(1),
            ending: Mutex::new(()),
            next_id: AtomicU64::new(1),
            slots: Mutex::new(Vec::new()),
            ended: Mutex::new(VecDeque::new()),
            locks: LockManager::new(lock_partitions),
            id: NEXT_MANAGER.fetch_add(1, Ordering::Relaxed),
        })
    }

    fn thread_slot(&self) -> Arc<Slot> {
        SLOTS.with(|s| {
            s.borrow_mut()
                .entry(self.id)
                .or_insert_with(|| {
                    let slot = Arc::new(Slot::default());
                    let mut all = self.slots.lock();
                    all.retain(|w| w.strong_count() > 0);
                    all.push(Arc::downgrade(&slot));
                    slot
                })
                .clone()
        })
    }

    pub fn begin(&self) -> Arc<Txn> {
        Arc::new(Txn {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            end: AtomicU64::new(0),
            touched: Mutex::new(Vec::new()),
            held: Mutex::new(Vec::new()),
            purged: Mutex::new(Vec::new()),
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
            txn.held.lock().push(key);
        }
        Ok(())
    }

    /// A view of everything ended so far (and `own`'s changes), kept from purge until
    /// the last clone is dropped.
    pub fn snapshot(&self, own: TxnId) -> Snapshot {
        let slot = self.thread_slot();
        let mut live = slot.live.lock();
        if live.is_empty() {
            // Published before the tick is read: a purge that misses it read the clock
            // earlier still, so it cannot pass this snapshot's tick.
            slot.min
                .store(self.clock.load(Ordering::SeqCst), Ordering::SeqCst);
        }
        let tick = self.clock.load(Ordering::SeqCst);
        *live.entry(tick).or_default() += 1;
        drop(live);
        Snapshot {
            own,
            tick,
            _reg: Arc::new(Registration { tick, slot }),
        }
    }

    /// `txn` committed or finished rolling back: later snapshots see the tables' rows as
    /// they are now; its locks go. Then purge what no snapshot needs any more.
    pub fn end(&self, txn: &Arc<Txn>) {
        {
            let _one = self.ending.lock();
            let tick = self.clock.load(Ordering::SeqCst) + 1;
            txn.end.store(tick, Ordering::SeqCst);
            self.clock.store(tick, Ordering::SeqCst);
        }
        // Taken, not drained: the list's room goes too (an ended transaction is kept
        // until purge, and its list may have held millions of keys).
        let held: Vec<LockKey> = std::mem::take(&mut *txn.held.lock());
        self.locks.release(txn.id, &held);
        if txn.touched.lock().is_empty() {
            // It left no versions: no snapshot reads anything of it.
            txn.run_purged();
        } else {
            self.ended.lock().push_back(txn.clone());
            self.purge();
        }
    }

    /// The oldest tick a live snapshot holds (or the clock when none does).
    pub fn horizon(&self) -> u64 {
        let clock = self.clock.load(Ordering::SeqCst);
        let mut all = self.slots.lock();
        all.retain(|w| w.strong_count() > 0);
        all.iter()
            .filter_map(Weak::upgrade)
            .map(|s| s.min.load(Ordering::SeqCst))
            .filter(|&m| m != 0)
            .fold(clock, u64::min)
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
            txn.run_purged();
        }
    }

    /// Transactions ended but not purged yet (tests, status).
    pub fn unpurged(&self) -> usize {
        self.ended.lock().len()
    }
}
