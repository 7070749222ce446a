//! Earlier versions of one table's rows, kept in memory while a snapshot may need them.
//!
//! Engines keep only the newest version of a row, written in place. Before a transaction
//! first changes a row it leaves the row's previous version here (`None` for a row it
//! inserted), newest last in the row's chain. A reader walks a chain from its newest
//! entry: while the entry's writer is not part of its snapshot, the row it sees is that
//! entry's previous version. Rows without a chain, or whose newest writer it sees, are
//! read from the engine as they are.
//!
//! Readers look here only after the engine handed them rows, and a row's version is
//! recorded before the engine changes it — for a new row id, from inside the engine
//! before the row can be found (`Table::insert_noted`) — so a row a reader got from the
//! engine always has its version recorded by then. Engines that cannot tell new ids in
//! time bracket their writes (`begin_op`/`end_op`) and readers wait those brackets out.
//! Nothing here is held across an engine call by a reader, so engines' own latches never
//! wait on this lock.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Condvar, Mutex, MutexGuard};
use quarry_common::Row;
use quarry_storage_api::RowId;

use crate::txn::{Snapshot, Txn, TxnId};

struct Version {
    writer: Arc<Txn>,
    /// The row before `writer` changed it (None: `writer` inserted it).
    before: Option<Row>,
}

#[derive(Default)]
pub(crate) struct VState {
    /// Chains by row id, oldest entry first.
    rows: BTreeMap<RowId, Vec<Version>>,
    /// Writers with entries here, and the rows they are in.
    writers: HashMap<TxnId, (Arc<Txn>, Vec<RowId>)>,
    /// Transactions inside an engine write call now.
    in_flight: Vec<TxnId>,
}

#[derive(Default)]
pub struct Versions {
    st: Mutex<VState>,
    settled: Condvar,
    /// Writers with entries plus writes in flight, published (under `st`) before any
    /// row they concern can be read: 0 means every engine row is what every snapshot
    /// sees, without taking the lock.
    busy: AtomicUsize,
}

/// What a snapshot sees at a row id.
#[derive(Debug, PartialEq)]
pub enum Seen {
    /// The engine's row, as it is.
    Current,
    /// An earlier version (None: no row there for this snapshot).
    Earlier(Option<Row>),
}

impl VState {
    /// Whether any row here has a newest version `snap` does not see.
    pub(crate) fn hides_any(&self, snap: &Snapshot) -> bool {
        self.writers.values().any(|(w, _)| !snap.sees(w))
    }

    pub(crate) fn seen(&self, snap: &Snapshot, id: RowId) -> Seen {
        let Some(chain) = self.rows.get(&id) else {
            return Seen::Current;
        };
        let mut seen = Seen::Current;
        for v in chain.iter().rev() {
            if snap.sees(&v.writer) {
                break;
            }
            seen = Seen::Earlier(v.before.clone());
        }
        seen
    }

    /// Rows in `range` whose newest version `snap` does not see, with what it sees,
    /// in id order. Only the rows of writers it does not see can be such rows.
    pub(crate) fn hidden_in(
        &self,
        snap: &Snapshot,
        range: RangeInclusive<RowId>,
    ) -> Vec<(RowId, Option<Row>)> {
        let mut ids: Vec<RowId> = self
            .writers
            .values()
            .filter(|(w, _)| !snap.sees(w))
            .flat_map(|(_, ids)| ids.iter().copied())
            .filter(|id| range.contains(id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_iter()
            .filter_map(|id| match self.seen(snap, id) {
                Seen::Current => None,
                Seen::Earlier(r) => Some((id, r)),
            })
            .collect()
    }
}

impl Versions {
    /// No row here has an earlier version and no write is in flight (see `busy`).
    pub(crate) fn quiet(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
    }

    fn publish(&self, st: &VState) {
        self.busy
            .store(st.writers.len() + st.in_flight.len(), Ordering::SeqCst);
    }

    /// A transaction is about to change rows through the engine.
    pub fn begin_op(&self, txn: TxnId) {
        let mut st = self.st.lock();
        st.in_flight.push(txn);
        self.publish(&st);
    }

    pub fn end_op(&self, txn: TxnId) {
        let mut st = self.st.lock();
        if let Some(i) = st.in_flight.iter().position(|&t| t == txn) {
            st.in_flight.swap_remove(i);
        }
        self.publish(&st);
        drop(st);
        self.settled.notify_all();
    }

    /// `id`'s version before `writer` first changed it (later changes by the same writer
    /// keep the first one).
    pub fn record(self: &Arc<Self>, writer: &Arc<Txn>, id: RowId, before: Option<Row>) {
        let mut st = self.st.lock();
        // Most chains hold one version: a first push would reserve room for four (128
        // bytes a row written, the largest part of a big statement's memory).
        let chain = st.rows.entry(id).or_insert_with(|| Vec::with_capacity(1));
        if chain.last().is_some_and(|v| v.writer.id == writer.id) {
            return;
        }
        chain.push(Version {
            writer: writer.clone(),
            before,
        });
        let mut first = false;
        st.writers
            .entry(writer.id)
            .or_insert_with(|| {
                first = true;
                (writer.clone(), Vec::new())
            })
            .1
            .push(id);
        self.publish(&st);
        drop(st);
        if first {
            writer.touched(self);
        }
    }

    /// Purge: `writer`'s entries are needed by no snapshot any more.
    pub(crate) fn forget(&self, writer: TxnId) {
        let mut st = self.st.lock();
        let Some((_, ids)) = st.writers.remove(&writer) else {
            return;
        };
        self.publish(&st);
        for id in ids {
            if let Some(chain) = st.rows.get_mut(&id) {
                chain.retain(|v| v.writer.id != writer);
                if chain.is_empty() {
                    st.rows.remove(&id);
                }
            }
        }
    }

    /// The state once no other transaction is inside an engine write: what a reader
    /// that just got rows from the engine may judge them by.
    pub(crate) fn settled(&self, snap: &Snapshot) -> MutexGuard<'_, VState> {
        let mut st = self.st.lock();
        while st.in_flight.iter().any(|&t| t != snap.own) {
            self.settled.wait(&mut st);
        }
        st
    }

    /// Row chains held (tests, status).
    pub fn len(&self) -> usize {
        self.st.lock().rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
