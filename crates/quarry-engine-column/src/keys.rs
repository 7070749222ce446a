//! A column table's keys: for each UNIQUE key a hash of its values (duplicates are
//! refused through it), and for every key an ordered index ([`KeyIndex`]) — the access
//! path for lookups, ranges, ordered reads and joins. Both are built from the key
//! columns when the table opens and changed with every row the table changes.
//!
//! Must not touch: segments, the delta, the logs (the table changes rows; this keeps the
//! keys in step with them).

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::ops::Bound;

use quarry_common::{Error, Result, Row, Value};
use quarry_engine_row::keycode;
use quarry_engine_row::keyrange::{self, as_slice_bound};
use quarry_storage_api::{
    HandlerCounters, IndexEntry, IndexScan, IndexSchema, RowId, Stat, TablePath, TableSchema,
};

use crate::index::{Builder, KeyIndex};
use crate::{ColumnTable, State};

/// Index entries read under the table's lock at a time: the visitor runs without it.
const ENTRIES_PER_LOCK: usize = 256;

/// A UNIQUE key's values (as [`unique_key`] makes them) and the row holding each.
pub(crate) type UniqueMap = HashMap<Vec<u8>, RowId>;

/// Distinct key counts of an index and the table's change count when they were taken.
pub(crate) struct DistinctStat {
    changes_at: u64,
    rows_at: u64,
    distinct: Vec<u64>,
}

impl ColumnTable {
    /// `row`'s entry (at `id`) in index `n`.
    pub(crate) fn entry(&self, n: usize, row: &Row, id: RowId, out: &mut Vec<u8>) {
        let ix = &self.schema.indexes[n];
        for (&c, col) in ix.columns.iter().zip(&self.key_cols[n]) {
            keycode::encode_column(&row[c], col, out);
        }
        out.extend_from_slice(&id.to_be_bytes());
    }

    /// Every key of the rows as they are after the log's replay: each index built on its
    /// own thread from its own columns (reading and encoding the keys was half of
    /// opening a table, and ran on one core while the sorts waited for it).
    pub(crate) fn build_keys(&mut self) -> Result<()> {
        let live = self.state.get_mut().live as usize;
        let this = &*self;
        let built = std::thread::scope(|scope| {
            let building: Vec<_> = (0..this.schema.indexes.len())
                .map(|n| scope.spawn(move || this.build_index(n, live)))
                .collect();
            building
                .into_iter()
                .map(|h| {
                    h.join()
                        .map_err(|_| Error::internal("index build panicked"))?
                })
                .collect::<Result<Vec<_>>>()
        })?;
        let (maps, keys) = built.into_iter().unzip();
        let st = self.state.get_mut();
        st.unique = maps;
        st.keys = keys;
        st.distinct = self.schema.indexes.iter().map(|_| None).collect();
        Ok(())
    }

    /// Index `n` of the table's `live` rows, and for a UNIQUE index the map that refuses
    /// duplicates.
    fn build_index(&self, n: usize, live: usize) -> Result<(Option<UniqueMap>, KeyIndex)> {
        let ix = &self.schema.indexes[n];
        let mut cols = ix.columns.clone();
        cols.sort_unstable();
        cols.dedup();
        // Sized for every live row at once: growing them by doubling copied and faulted
        // in their memory again at each step (a fifth of opening a 6 M-row table).
        let mut map: Option<UniqueMap> = ix.unique.then(|| HashMap::with_capacity(live));
        let mut builder = Builder::with_rows(live);
        // Rows whose keys became equal when the plain collation began to fold accents
        // (a table written before: 'Köln' and 'Koln') stay; the map keeps the first.
        let mut equal_keys = 0u64;
        // Straight from the segments' chunks into one row reused for every row: a scan
        // would build (and drop) a row as wide as the table for each.
        let snap = self.snapshot()?;
        let mut row: Row = vec![Value::Null; self.schema.columns.len()];
        let mut add = |row: &Row, id: RowId| {
            self.entry(n, row, id, &mut builder.bytes);
            builder.end_entry();
            builder.reserve_like_first(live);
            if let (Some(map), Some(k)) = (&mut map, unique_key(&self.schema, ix, row)) {
                match map.entry(k) {
                    Entry::Occupied(_) => equal_keys += 1,
                    Entry::Vacant(v) => {
                        v.insert(id);
                    }
                }
            }
        };
        for i in 0..snap.segs.len() {
            let (seg, pos, mut chunks) = self.select_segment(&snap, i, None)?;
            if pos.is_empty() {
                continue;
            }
            for &c in &cols {
                if chunks[c].is_none() {
                    chunks[c] = Some(self.chunk(&seg, c)?);
                }
            }
            for &p in &pos {
                for &c in &cols {
                    row[c] = chunks[c].as_ref().expect("read above").value(p as usize)?;
                }
                add(&row, seg.id(p as usize));
            }
        }
        for (&id, r) in snap.delta.iter() {
            add(r, id);
        }
        if equal_keys > 0 {
            // `<db>/<table>.cols`
            let table = self.dir.file_stem().unwrap_or_default().to_string_lossy();
            let path = TablePath::new(self.dir.parent().unwrap_or(&self.dir), &table);
            eprintln!("quarry: {}", path.equal_keys_warning(&ix.name, equal_keys));
        }
        Ok((map, KeyIndex::build(self.key_cols[n].clone(), builder)))
    }

    pub(crate) fn check_unique(&self, st: &State, row: &Row, ignore: Option<RowId>) -> Result<()> {
        for (ix, map) in self.schema.indexes.iter().zip(&st.unique) {
            if let (Some(map), Some(k)) = (map, unique_key(&self.schema, ix, row)) {
                if map.get(&k).is_some_and(|&id| Some(id) != ignore) {
                    return Err(duplicate(ix, row));
                }
            }
        }
        Ok(())
    }

    pub(crate) fn keys_add(&self, st: &mut State, row: &Row, id: RowId) {
        self.keys_change(st, row, id, true);
    }

    pub(crate) fn keys_remove(&self, st: &mut State, row: &Row, id: RowId) {
        self.keys_change(st, row, id, false);
    }

    /// `row`'s keys (at `id`) added to every index, or removed from them.
    fn keys_change(&self, st: &mut State, row: &Row, id: RowId, add: bool) {
        let mut e = Vec::with_capacity(32);
        for (n, ix) in self.schema.indexes.iter().enumerate() {
            if let (Some(map), Some(k)) = (&mut st.unique[n], unique_key(&self.schema, ix, row)) {
                if add {
                    map.insert(k, id);
                } else if map.get(&k) == Some(&id) {
                    map.remove(&k);
                }
            }
            e.clear();
            self.entry(n, row, id, &mut e);
            if add {
                st.keys[n].insert(&e);
            } else {
                st.keys[n].remove(&e);
            }
        }
    }

    pub(crate) fn has_keys(&self) -> bool {
        !self.schema.indexes.is_empty()
    }

    pub(crate) fn forget_keys(&self, st: &mut State) {
        for m in st.unique.iter_mut().flatten() {
            m.clear();
        }
        for k in st.keys.iter_mut() {
            k.clear();
        }
        st.changes += 1;
    }

    /// [`quarry_storage_api::Table::index_scan`]: entries are taken a few hundred at a
    /// time under the lock and visited without it (the visitor may read the table).
    pub(crate) fn scan_index(
        &self,
        scan: &IndexScan,
        visit: &mut dyn FnMut(&IndexEntry) -> Result<bool>,
    ) -> Result<()> {
        let ix = self
            .schema
            .indexes
            .get(scan.index)
            .ok_or_else(|| Error::internal("no such index"))?;
        HandlerCounters::add(&self.counters.read_key, 1);
        let cols = &self.key_cols[scan.index];
        let Some((mut lo, mut hi)) = keyrange::scan_bounds(cols, scan) else {
            return Ok(());
        };
        let mut vals = Vec::with_capacity(cols.len());
        let mut batch = Vec::with_capacity(ENTRIES_PER_LOCK);
        loop {
            batch.clear();
            self.state.lock().keys[scan.index].range(
                as_slice_bound(&lo),
                as_slice_bound(&hi),
                scan.reverse,
                ENTRIES_PER_LOCK,
                &mut batch,
            );
            HandlerCounters::add_read(&self.counters.read_next, batch.len() as u64);
            for e in &batch {
                if scan.keys && !keycode::decode_key_into(e, cols, &mut vals) {
                    return Err(Error::corrupt(format!("index {} entry", ix.name)));
                }
                let go = visit(&IndexEntry {
                    id: keycode::row_id(e),
                    keys: &vals,
                    pos: e,
                })?;
                if !go {
                    return Ok(());
                }
            }
            match batch.pop() {
                Some(last) if batch.len() + 1 == ENTRIES_PER_LOCK => {
                    if scan.reverse {
                        hi = Bound::Excluded(last);
                    } else {
                        lo = Bound::Excluded(last);
                    }
                }
                _ => return Ok(()),
            }
        }
    }

    /// The row ids of index `index`'s entries whose leading columns equal each of
    /// `keys`, in their order, all under one hold of the lock (counted as that many
    /// index scans).
    pub(crate) fn lookup_keys(&self, index: usize, keys: &[Vec<Value>]) -> Result<Vec<Vec<RowId>>> {
        let cols = self
            .key_cols
            .get(index)
            .ok_or_else(|| Error::internal("no such index"))?;
        HandlerCounters::add(&self.counters.read_key, keys.len() as u64);
        let bounds: Vec<Option<keyrange::ByteRange>> = keys
            .iter()
            .map(|k| keyrange::byte_bounds(cols, Bound::Included(k), Bound::Included(k)))
            .collect();
        let mut out = Vec::with_capacity(keys.len());
        let mut entries = 0;
        {
            let mut st = self.state.lock();
            let ix = &mut st.keys[index];
            // Keys in order (a join's, from a table clustered on them) find each one
            // from where the last one was.
            let mut hint = 0;
            let mut last: Option<&keyrange::ByteRange> = None;
            for b in &bounds {
                let mut ids = Vec::new();
                if let Some((lo, hi)) = b {
                    if last.is_some_and(|(l, _)| !follows(l, lo)) {
                        hint = 0;
                    }
                    ix.each_after(
                        &mut hint,
                        as_slice_bound(lo),
                        as_slice_bound(hi),
                        &mut |e| {
                            ids.push(keycode::row_id(e));
                            true
                        },
                    );
                    last = b.as_ref();
                }
                entries += ids.len();
                out.push(ids);
            }
        }
        HandlerCounters::add_read(&self.counters.read_next, entries as u64);
        Ok(out)
    }

    /// The byte range of index `index` between value bounds: None when there is no such
    /// index, `Some(None)` when no entry can lie there.
    fn key_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<Option<keyrange::ByteRange>> {
        Some(keyrange::byte_bounds(self.key_cols.get(index)?, lo, hi))
    }

    pub(crate) fn key_in(
        &self,
        index: usize,
        entry: &[u8],
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<bool> {
        let Some((lo, hi)) = self.key_range(index, lo, hi)? else {
            return Some(false);
        };
        Some(std::ops::RangeBounds::<[u8]>::contains(
            &(as_slice_bound(&lo), as_slice_bound(&hi)),
            entry,
        ))
    }

    /// Entries in a key range, counted exactly.
    pub(crate) fn count_keys(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Option<u64> {
        let Some((lo, hi)) = self.key_range(index, lo, hi)? else {
            return Some(0);
        };
        Some(self.state.lock().keys[index].count(as_slice_bound(&lo), as_slice_bound(&hi)))
    }

    /// Distinct values per key prefix, recounted once a tenth of the rows changed (as the
    /// row engine and InnoDB do).
    pub(crate) fn distinct_keys(&self, index: usize) -> Vec<Stat> {
        let mut st = self.state.lock();
        let (changes, live) = (st.changes, st.live);
        if index >= st.keys.len() {
            return vec![];
        }
        let fresh = |d: &DistinctStat| changes.saturating_sub(d.changes_at) <= d.rows_at / 10;
        let counts = match st.distinct.get(index).and_then(Option::as_ref) {
            Some(d) if fresh(d) => scale(&d.distinct, d.rows_at, live),
            _ => {
                let distinct = st.keys[index].distinct();
                let out = distinct.clone();
                st.distinct[index] = Some(DistinctStat {
                    changes_at: changes,
                    rows_at: live,
                    distinct,
                });
                out
            }
        };
        counts.into_iter().map(Stat::Estimated).collect()
    }
}

/// Distinct counts taken at `then` rows, scaled to `now` rows (never above the rows).
fn scale(distinct: &[u64], then: u64, now: u64) -> Vec<u64> {
    distinct
        .iter()
        .map(|&d| {
            if then == 0 {
                d.min(now)
            } else {
                ((d as f64 * now as f64 / then as f64).round() as u64).clamp(1.min(now), now.max(1))
            }
        })
        .collect()
}

/// The key of `row` in a unique index as grouping compares it under each column's
/// collation (NULL: no key).
pub(crate) fn unique_key(schema: &TableSchema, ix: &IndexSchema, row: &Row) -> Option<Vec<u8>> {
    // A number's key is 18 bytes: room for one each, without growing.
    let mut out = Vec::with_capacity(20 * ix.columns.len());
    for (&c, &p) in ix.columns.iter().zip(&ix.prefix) {
        let coll = schema.columns[c].ty.coll;
        match &row[c] {
            Value::Null => return None,
            Value::Str(s) if p > 0 => {
                Value::Str(s.chars().take(p as usize).collect()).hash_key_in(coll, &mut out)
            }
            Value::Bytes(b) if p > 0 => {
                Value::Bytes(b.iter().take(p as usize).copied().collect()).hash_key(&mut out)
            }
            v => v.hash_key_in(coll, &mut out),
        }
    }
    Some(out)
}

pub(crate) fn duplicate(ix: &IndexSchema, row: &Row) -> Error {
    let shown: Vec<String> = ix
        .columns
        .iter()
        .map(|&c| row[c].as_str_lossy().into_owned())
        .collect();
    let name = if ix.primary { "PRIMARY" } else { &ix.name };
    Error::duplicate_key(&shown.join("-"), name)
}

/// Whether every entry before lower bound `prev` is before lower bound `cur` too (a
/// lookup for `cur` may then start where the one for `prev` did).
fn follows(prev: &Bound<Vec<u8>>, cur: &Bound<Vec<u8>>) -> bool {
    match (prev, cur) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Excluded(p), Bound::Included(c)) => p < c,
        (Bound::Included(p) | Bound::Excluded(p), Bound::Included(c) | Bound::Excluded(c)) => {
            p <= c
        }
    }
}
