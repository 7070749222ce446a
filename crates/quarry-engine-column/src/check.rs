//! CHECK TABLE for column tables: every chunk decodes with its checksum, zone maps count
//! the NULLs their chunks hold, the live-row count matches, each unique key's hash
//! names exactly the live rows holding its keys, and each ordered index holds exactly
//! one entry per live row. Reads only; repairs nothing.

use crate::{unique_key, ColumnTable};
use quarry_common::Result;

impl ColumnTable {
    pub(crate) fn check_all(&self) -> Result<Vec<String>> {
        let snap = self.snapshot()?;
        let mut problems = vec![];
        let mut rows = 0u64;
        for (seg, del) in snap.segs.iter().zip(&snap.dels) {
            for c in 0..self.schema.columns.len() {
                match self.chunk(seg, c) {
                    Ok(ch) => {
                        let nulls = (0..ch.rows).filter(|&i| ch.is_null(i)).count() as u32;
                        if nulls != seg.chunks[c].zone.nulls {
                            problems.push(format!(
                                "column {}: zone map counts {} NULLs, the chunk holds {nulls}",
                                self.schema.columns[c].name, seg.chunks[c].zone.nulls
                            ));
                        }
                    }
                    Err(e) => problems.push(e.message),
                }
            }
            rows += seg.rows as u64 - del.count as u64;
        }
        rows += snap.delta.len() as u64;
        let mut guard = self.lock()?;
        let st = &mut *guard;
        if rows != st.live {
            problems.push(format!("{} rows counted, {} recorded", rows, st.live));
        }
        // One pass over each segment's key columns (a lookup per row would decode a whole
        // chunk per row).
        for (ix, map) in self.schema.indexes.iter().zip(&st.unique) {
            let Some(map) = map else { continue };
            let mut keyed = 0usize;
            let mut wrong = false;
            for (seg, del) in st.segs.iter().zip(&st.dels) {
                let live: Vec<u32> = (0..seg.rows).filter(|&i| !del.get(i as usize)).collect();
                let mut chunks: Vec<_> = (0..self.schema.columns.len()).map(|_| None).collect();
                for (&pos, row) in
                    live.iter()
                        .zip(self.materialize(seg, &live, &ix.columns, &mut chunks)?)
                {
                    if let Some(k) = unique_key(&self.schema, ix, &row) {
                        keyed += 1;
                        wrong |= map.get(&k) != Some(&seg.id(pos as usize));
                    }
                }
            }
            for (id, row) in st.delta.iter() {
                if let Some(k) = unique_key(&self.schema, ix, row) {
                    keyed += 1;
                    wrong |= map.get(&k) != Some(id);
                }
            }
            if wrong {
                problems.push(format!("unique key {} points at a wrong row", ix.name));
            } else if keyed != map.len() {
                problems.push(format!(
                    "unique key {} holds {} entries for {keyed} rows",
                    ix.name,
                    map.len()
                ));
            }
        }
        for (n, ix) in self.schema.indexes.iter().enumerate() {
            let keys = &mut st.keys[n];
            let mut missing = 0usize;
            let mut e = Vec::new();
            let mut has = |row: &quarry_common::Row, id| {
                e.clear();
                self.entry(n, row, id, &mut e);
                let at = std::ops::Bound::Included(&e[..]);
                if keys.count(at, at) != 1 {
                    missing += 1;
                }
            };
            for (seg, del) in st.segs.iter().zip(&st.dels) {
                let live: Vec<u32> = (0..seg.rows).filter(|&i| !del.get(i as usize)).collect();
                let mut chunks: Vec<_> = (0..self.schema.columns.len()).map(|_| None).collect();
                let rows = self.materialize(seg, &live, &ix.columns, &mut chunks)?;
                for (&pos, row) in live.iter().zip(&rows) {
                    has(row, seg.id(pos as usize));
                }
            }
            for (&id, row) in st.delta.iter() {
                has(row, id);
            }
            if missing > 0 || keys.len() as u64 != st.live {
                problems.push(format!(
                    "index {} holds {} entries for {} rows ({missing} rows without theirs)",
                    ix.name,
                    keys.len(),
                    st.live
                ));
            }
        }
        Ok(problems)
    }
}
