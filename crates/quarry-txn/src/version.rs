//! Earlier versions of one table's rows, kept in memory while a snapshot may need them.
//!
//! Engines keep only the newest version of a row, written in place. Before a transaction
//! first changes a row it leaves the row's previous version here (`None` for a row it
//! inserted), newest last in the row's chain. A reader walks a chain from its newest
//! entry: while the entry's writer is not part of its snapshot, the row it sees is that
//! entry's previous version. Rows without a chain, or whose newest writer it sees, are
//! read from the engine as they are.
//!
//! A row a writer inserted or changed where no chain was is kept more compactly: in one
//! of the writer's ascending lists, as the oldest entry of that id — an id (8 bytes) for
//! an insert, an id and the packed row (24 bytes and the row's) for a change, where a
//! chain of its own took about 100. A bulk insert, or a DELETE or UPDATE in id order, of
//! millions of rows holds this until it ends.
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
use quarry_common::packed::PackedRow;
use quarry_common::Row;
use quarry_storage_api::RowId;

use crate::few::Few;
use crate::txn::{Snapshot, Txn, TxnId};

struct Version {
    writer: Arc<Txn>,
    /// The row before `writer` changed it (None: `writer` inserted it), packed: a
    /// statement that changes millions of rows keeps this for each.
    before: Option<PackedRow>,
}

/// A transaction with entries here.
struct Writer {
    txn: Arc<Txn>,
    /// Rows whose chains it is in.
    chained: Vec<RowId>,
    /// Rows it inserted where no chain was and no other writer had inserted, ascending:
    /// each the oldest entry of its id, with no row before it (`before: None`).
    inserted: Vec<RowId>,
    /// Likewise the rows it changed or deleted, with their rows before (`before: Some`).
    changed: Vec<(RowId, PackedRow)>,
}

impl Writer {
    fn inserted(&self, id: RowId) -> bool {
        self.inserted.binary_search(&id).is_ok()
    }

    /// Its listed entry of `id`, the oldest of that id: the row before (None: inserted).
    fn first(&self, id: RowId) -> Option<Option<&PackedRow>> {
        if self.inserted(id) {
            return Some(None);
        }
        self.changed
            .binary_search_by_key(&id, |e| e.0)
            .ok()
            .map(|i| Some(&self.changed[i].1))
    }

    /// Its listed ids in `range`.
    fn listed_in(&self, range: &RangeInclusive<RowId>, out: &mut Vec<RowId>) {
        let from = self.inserted.partition_point(|id| id < range.start());
        let to = self.inserted.partition_point(|id| id <= range.end());
        out.extend_from_slice(&self.inserted[from..to]);
        let from = self.changed.partition_point(|e| e.0 < *range.start());
        let to = self.changed.partition_point(|e| e.0 <= *range.end());
        out.extend(self.changed[from..to].iter().map(|e| e.0));
    }
}

#[derive(Default)]
pub(crate) struct VState {
    /// Chains by row id, oldest entry first (nearly always one, kept inline: a DELETE of
    /// millions of rows makes millions of chains).
    rows: BTreeMap<RowId, Few<Version>>,
    /// Writers with entries here.
    writers: HashMap<TxnId, Writer>,
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
        self.writers.values().any(|w| !snap.sees(&w.txn))
    }

    pub(crate) fn seen(&self, snap: &Snapshot, id: RowId) -> Seen {
        let mut seen = Seen::Current;
        if let Some(chain) = self.rows.get(&id) {
            for v in chain.as_slice().iter().rev() {
                if snap.sees(&v.writer) {
                    return seen;
                }
                seen = Seen::Earlier(v.before.as_ref().map(PackedRow::unpack));
            }
        }
        // The oldest entry may be kept in its writer's list.
        for w in self.writers.values() {
            if let Some(before) = w.first(id) {
                if !snap.sees(&w.txn) {
                    seen = Seen::Earlier(before.map(PackedRow::unpack));
                }
                break;
            }
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
        let mut ids: Vec<RowId> = Vec::new();
        for w in self.writers.values().filter(|w| !snap.sees(&w.txn)) {
            ids.extend(w.chained.iter().copied().filter(|id| range.contains(id)));
            w.listed_in(&range, &mut ids);
        }
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
    pub fn record(self: &Arc<Self>, writer: &Arc<Txn>, id: RowId, before: Option<PackedRow>) {
        let mut guard = self.st.lock();
        let st = &mut *guard;
        if st
            .writers
            .get(&writer.id)
            .is_some_and(|w| w.first(id).is_some())
        {
            return; // its first entry of the row is kept
        }
        let compact =
            !st.rows.contains_key(&id) && !st.writers.values().any(|w| w.first(id).is_some());
        let mut first = false;
        let w = st.writers.entry(writer.id).or_insert_with(|| {
            first = true;
            Writer {
                txn: writer.clone(),
                chained: Vec::new(),
                inserted: Vec::new(),
                changed: Vec::new(),
            }
        });
        let listed = compact
            && match before {
                None if w.inserted.last().is_none_or(|&last| last < id) => {
                    w.inserted.push(id);
                    true
                }
                Some(ref row) if w.changed.last().is_none_or(|last| last.0 < id) => {
                    w.changed.push((id, row.clone()));
                    true
                }
                _ => false,
            };
        if !listed {
            let v = Version {
                writer: writer.clone(),
                before,
            };
            match st.rows.entry(id) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(Few::One(v));
                }
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    let chain = e.get_mut();
                    if chain
                        .as_slice()
                        .last()
                        .is_some_and(|v| v.writer.id == writer.id)
                    {
                        return;
                    }
                    chain.push(v);
                }
            }
            w.chained.push(id);
        }
        self.publish(st);
        drop(guard);
        if first {
            writer.touched(self);
        }
    }

    /// Purge: `writer`'s entries are needed by no snapshot any more.
    pub(crate) fn forget(&self, writer: TxnId) {
        let mut st = self.st.lock();
        let Some(w) = st.writers.remove(&writer) else {
            return;
        };
        self.publish(&st);
        for id in w.chained {
            if let Some(chain) = st.rows.get_mut(&id) {
                if !chain.retain(|v| v.writer.id != writer) {
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

    /// Rows with earlier versions held: chains and kept inserts (tests, status).
    pub fn len(&self) -> usize {
        let st = self.st.lock();
        st.rows.len()
            + st.writers
                .values()
                .map(|w| w.inserted.len() + w.changed.len())
                .sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::TxnManager;
    use quarry_common::Value;

    fn row(v: i64) -> Option<PackedRow> {
        Some(PackedRow::pack(&[Value::Int(v)]))
    }

    fn seen_row(v: i64) -> Seen {
        Seen::Earlier(Some(vec![Value::Int(v)]))
    }

    /// Inserts kept in their writer's list (not a chain each) answer every snapshot as
    /// chains did, stay the oldest entry under later writers' versions, and go with
    /// their writer's purge.
    #[test]
    fn kept_inserts_answer_as_chains_did() {
        let m = TxnManager::new(4);
        let v = Arc::new(Versions::default());
        let t1 = m.begin();
        let s0 = m.snapshot(0);
        for id in [10, 20, 30] {
            v.record(&t1, id, None);
        }
        // Its own later change keeps the first entry; an id below its last is a chain.
        v.record(&t1, 20, row(2));
        v.record(&t1, 5, None);
        {
            let st = v.st.lock();
            assert_eq!(st.writers[&t1.id].inserted, [10, 20, 30]);
            assert_eq!(st.rows.keys().copied().collect::<Vec<_>>(), [5]);
            for id in [5, 10, 20, 30] {
                assert_eq!(st.seen(&s0, id), Seen::Earlier(None), "{id}");
            }
            assert_eq!(st.seen(&s0, 11), Seen::Current);
            let own = m.snapshot(t1.id);
            assert_eq!(st.seen(&own, 20), Seen::Current);
            let hidden: Vec<RowId> = st.hidden_in(&s0, 0..=25).into_iter().map(|h| h.0).collect();
            assert_eq!(hidden, [5, 10, 20]);
        }
        assert_eq!(v.len(), 4);
        m.end(&t1);
        let s1 = m.snapshot(0);
        let t2 = m.begin();
        v.record(&t2, 30, row(3));
        // A new row in a slot t1's row had (t1 still kept): a chain, not a second list.
        let t3 = m.begin();
        v.record(&t3, 10, None);
        {
            let st = v.st.lock();
            assert!(!st.writers[&t3.id].inserted(10));
            assert_eq!(st.seen(&s1, 30), seen_row(3));
            assert_eq!(st.seen(&s0, 30), Seen::Earlier(None));
            assert_eq!(st.seen(&s1, 10), Seen::Earlier(None));
            assert_eq!(st.seen(&s0, 10), Seen::Earlier(None));
            assert_eq!(st.seen(&s1, 20), Seen::Current);
        }
        v.forget(t1.id);
        let st = v.st.lock();
        assert_eq!(st.seen(&s1, 20), Seen::Current);
        assert_eq!(st.seen(&s1, 30), seen_row(3));
        assert!(st.writers.values().all(|w| w.inserted.is_empty()));
    }

    /// Changes kept in their writer's list (a DELETE or UPDATE in id order) answer every
    /// snapshot as chains did, stay the oldest entry under later writers' versions, and
    /// go with their writer's purge.
    #[test]
    fn kept_changes_answer_as_chains_did() {
        let m = TxnManager::new(4);
        let v = Arc::new(Versions::default());
        let s0 = m.snapshot(0);
        let t1 = m.begin();
        for id in [10, 20, 30] {
            v.record(&t1, id, row(id as i64));
        }
        // Its second change of a row keeps the first; an id below its last is a chain.
        v.record(&t1, 20, row(99));
        v.record(&t1, 5, row(5));
        {
            let st = v.st.lock();
            let w = &st.writers[&t1.id];
            assert_eq!(
                w.changed.iter().map(|e| e.0).collect::<Vec<_>>(),
                [10, 20, 30]
            );
            assert_eq!(st.rows.keys().copied().collect::<Vec<_>>(), [5]);
            for id in [5, 10, 20, 30] {
                assert_eq!(st.seen(&s0, id), seen_row(id as i64), "{id}");
            }
            assert_eq!(st.seen(&m.snapshot(t1.id), 20), Seen::Current);
            let hidden = st.hidden_in(&s0, 6..=25);
            assert_eq!(
                hidden,
                [
                    (10, Some(vec![Value::Int(10)])),
                    (20, Some(vec![Value::Int(20)]))
                ]
            );
        }
        m.end(&t1);
        let s1 = m.snapshot(0);
        // A later writer's change of a listed row is a chain over the listed entry.
        let t2 = m.begin();
        v.record(&t2, 20, row(21));
        {
            let st = v.st.lock();
            assert!(st.writers[&t2.id].changed.is_empty());
            assert_eq!(st.seen(&s0, 20), seen_row(20));
            assert_eq!(st.seen(&s1, 20), seen_row(21));
            assert_eq!(st.seen(&s1, 10), Seen::Current);
        }
        assert_eq!(v.len(), 5);
        drop(s0);
        v.forget(t1.id);
        let st = v.st.lock();
        assert_eq!(st.seen(&s1, 20), seen_row(21));
        assert_eq!(st.seen(&s1, 10), Seen::Current);
        assert_eq!(st.rows.len(), 1);
    }
}
