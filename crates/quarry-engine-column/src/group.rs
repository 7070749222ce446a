//! GROUP BY with COUNT/MIN/MAX inside the engine ([`Table::aggregate`]).
//!
//! Each segment is grouped on its encoded chunks — dictionary codes index an array, other
//! columns key a hash map by their raw integers or bytes — and aggregates keep counts and
//! the row holding the best value so far, so no row is built: only each group's values
//! are materialised at the end of the segment (late materialisation). Segments' groups
//! are then merged by the values' grouping keys ([`Value::hash_key`], so collation-equal
//! strings meet), in the order a scan would meet them.
//!
//! [`Table::aggregate`]: quarry_storage_api::Table::aggregate

use std::cmp::Ordering;

use quarry_common::hash::WordMap;
use quarry_common::value::collate_cmp;
use quarry_common::{Result, Row, Value};
use quarry_storage_api::ScanAgg;

use crate::chunk::{Chunk, Codes, Data, Phys};

/// Groups merged from segments and delta rows: group values then aggregate values.
pub(crate) struct Groups {
    index: WordMap<Vec<u8>, usize>,
    /// Groups of one integer column, by its value (signed or not: a segment and the delta
    /// may give one number either way). A column's values are all integers or none are,
    /// so these never meet a group of `index`.
    ints: WordMap<i64, usize>,
    pub rows: Vec<Row>,
    width: usize,
    aggs: Vec<ScanAgg>,
    key: Vec<u8>,
}

impl Groups {
    pub fn new(width: usize, aggs: &[ScanAgg]) -> Groups {
        Groups {
            index: WordMap::default(),
            ints: WordMap::default(),
            rows: vec![],
            width,
            aggs: aggs.to_vec(),
            key: vec![],
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Add one group's values and partial aggregates.
    pub fn merge(&mut self, row: Row) {
        let (i, new) = self.place(row);
        if let Some(row) = new {
            let cur = &mut self.rows[i];
            for (j, a) in self.aggs.iter().enumerate() {
                let k = self.width + j;
                combine(*a, &mut cur[k], &row[k]);
            }
        }
    }

    /// The position of `row`'s group: a new one holding `row` (None back), or the one it
    /// meets (`row` back, to be combined into it).
    fn place(&mut self, row: Row) -> (usize, Option<Row>) {
        let int = match (self.width, row.first()) {
            (1, Some(Value::Int(k))) => Some(*k),
            (1, Some(Value::UInt(k))) => i64::try_from(*k).ok(),
            _ => None,
        };
        let found = match int {
            Some(k) => match self.ints.get(&k) {
                Some(&i) => Some(i),
                None => {
                    self.ints.insert(k, self.rows.len());
                    None
                }
            },
            _ => {
                self.key.clear();
                for v in &row[..self.width] {
                    v.hash_key(&mut self.key);
                }
                match self.index.get(&self.key) {
                    Some(&i) => Some(i),
                    None => {
                        self.index.insert(self.key.clone(), self.rows.len());
                        None
                    }
                }
            }
        };
        match found {
            None => {
                self.rows.push(row);
                (self.rows.len() - 1, None)
            }
            Some(i) => (i, Some(row)),
        }
    }

    /// The group of one integer column's value `k` (None: NULL), made with zero counts
    /// when new.
    fn int_group(&mut self, k: Option<i64>) -> usize {
        if let Some(k) = k {
            if let Some(&i) = self.ints.get(&k) {
                return i;
            }
        }
        let value = k.map_or(Value::Null, Value::Int);
        let row = std::iter::once(value)
            .chain(self.aggs.iter().map(|_| Value::Int(0)))
            .collect();
        self.place(row).0
    }

    /// Add a whole row (from the delta).
    pub fn add_row(&mut self, r: &Row, group: &[usize]) {
        let mut out: Row = group.iter().map(|&c| r[c].clone()).collect();
        for a in &self.aggs {
            out.push(match *a {
                ScanAgg::CountStar => Value::Int(1),
                ScanAgg::Count(c) => Value::Int(!r[c].is_null() as i64),
                ScanAgg::Min(c) | ScanAgg::Max(c) => r[c].clone(),
            });
        }
        self.merge(out);
    }

    /// Take in another set of groups, met after this one's.
    pub fn absorb(&mut self, other: Groups) {
        for r in other.rows {
            self.merge(r);
        }
    }
}

fn combine(a: ScanAgg, cur: &mut Value, new: &Value) {
    match a {
        ScanAgg::CountStar | ScanAgg::Count(_) => match (cur, new) {
            (Value::Int(c), Value::Int(n)) => *c += n,
            (cur, new) => *cur = Value::Int(cur.to_i64() + new.to_i64()),
        },
        ScanAgg::Min(_) | ScanAgg::Max(_) => {
            let want = if matches!(a, ScanAgg::Min(_)) {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            if !new.is_null() && (cur.is_null() || new.total_cmp(cur) == want) {
                *cur = new.clone();
            }
        }
    }
}

/// Group the rows of one segment for which `selected` holds into `out`. `chunks[c]` is
/// decoded for every column the grouping or the aggregates read. A group of the segment
/// is known by its first row; its counts and the rows of its best MIN/MAX values are kept
/// `aggs.len()` to a group in flat vectors (no allocation per group: a segment of orders
/// grouped by customer has tens of thousands).
pub(crate) fn segment(
    chunks: &[Option<Chunk>],
    group: &[usize],
    aggs: &[ScanAgg],
    rows: usize,
    selected: &dyn Fn(usize) -> bool,
    out: &mut Groups,
) -> Result<()> {
    let ch = |c: usize| chunks[c].as_ref().expect("chunk decoded for grouping");
    if let [c] = group {
        let counts = aggs
            .iter()
            .all(|a| matches!(a, ScanAgg::CountStar | ScanAgg::Count(_)));
        if let (Data::Ints(v), Phys::Int, true) = (&ch(*c).data, ch(*c).phys, counts) {
            return count_by_int(chunks, *c, v, aggs, rows, selected, out);
        }
    }
    let na = aggs.len();
    let mut firsts: Vec<usize> = vec![];
    let mut counts: Vec<i64> = vec![];
    let mut best: Vec<Option<usize>> = vec![];
    // The group of each selected row: through a code-indexed table for one dictionary
    // column, a map keyed by the stored integer for one integer column, else a map keyed
    // by the columns' raw bytes.
    let (dict, ints) = match group {
        [c] => match &ch(*c).data {
            Data::Dict { offsets, codes, .. } => (Some((offsets.len() - 1, codes)), None),
            Data::Ints(v) => (None, Some(v)),
            _ => (None, None),
        },
        _ => (None, None),
    };
    let mut by_code: Vec<u32> = match dict {
        Some((n, _)) => vec![u32::MAX; n + 1],
        None => vec![],
    };
    let mut by_int: WordMap<i64, u32> = WordMap::default();
    let mut null_group: Option<u32> = None;
    let mut by_key: WordMap<Vec<u8>, u32> = WordMap::default();
    let mut key = Vec::new();
    let mut scratch = (Vec::new(), Vec::new());
    for i in (0..rows).filter(|&i| selected(i)) {
        let next = firsts.len() as u32;
        let slot = match (dict, ints) {
            (Some((n, codes)), _) => {
                let code = if ch(group[0]).is_null(i) {
                    n
                } else {
                    match codes {
                        Codes::U8(v) => v[i] as usize,
                        Codes::U16(v) => v[i] as usize,
                    }
                };
                if by_code[code] == u32::MAX {
                    by_code[code] = next;
                }
                by_code[code]
            }
            (None, Some(_)) if ch(group[0]).is_null(i) => *null_group.get_or_insert(next),
            (None, Some(v)) => *by_int.entry(v[i]).or_insert(next),
            (None, None) => {
                key.clear();
                for &c in group {
                    key_part(ch(c), i, &mut key);
                }
                match by_key.get(key.as_slice()) {
                    Some(&s) => s,
                    None => {
                        by_key.insert(key.clone(), next);
                        next
                    }
                }
            }
        } as usize;
        if slot == firsts.len() {
            firsts.push(i);
            counts.resize(counts.len() + na, 0);
            best.resize(best.len() + na, None);
        }
        let (counts, best) = (&mut counts[slot * na..], &mut best[slot * na..]);
        for (j, a) in aggs.iter().enumerate() {
            match *a {
                ScanAgg::CountStar => counts[j] += 1,
                ScanAgg::Count(c) => counts[j] += !ch(c).is_null(i) as i64,
                ScanAgg::Min(c) | ScanAgg::Max(c) => {
                    let col = ch(c);
                    if col.is_null(i) {
                        continue;
                    }
                    let want = if matches!(a, ScanAgg::Min(_)) {
                        Ordering::Less
                    } else {
                        Ordering::Greater
                    };
                    match best[j] {
                        Some(b) if cmp_rows(col, i, b, &mut scratch) != want => {}
                        _ => best[j] = Some(i),
                    }
                }
            }
        }
    }
    for (g, &first) in firsts.iter().enumerate() {
        let mut row = Vec::with_capacity(group.len() + na);
        for &c in group {
            row.push(ch(c).value(first)?);
        }
        for (j, a) in aggs.iter().enumerate() {
            row.push(match *a {
                ScanAgg::CountStar | ScanAgg::Count(_) => Value::Int(counts[g * na + j]),
                ScanAgg::Min(c) | ScanAgg::Max(c) => match best[g * na + j] {
                    Some(b) => ch(c).value(b)?,
                    None => Value::Null,
                },
            });
        }
        out.merge(row);
    }
    Ok(())
}

/// [`segment`] for one integer column and counts only (TPC-H Q13's orders counted by
/// customer): each row is counted straight into `out`'s group, met in row order, so the
/// segment makes no groups of its own to materialise and merge (a segment of orders met
/// most of the customers: 1.1 M groups merged for 100 000).
fn count_by_int(
    chunks: &[Option<Chunk>],
    c: usize,
    v: &[i64],
    aggs: &[ScanAgg],
    rows: usize,
    selected: &dyn Fn(usize) -> bool,
    out: &mut Groups,
) -> Result<()> {
    let ch = |c: usize| chunks[c].as_ref().expect("chunk decoded for grouping");
    let key = ch(c);
    for i in (0..rows).filter(|&i| selected(i)) {
        let g = out.int_group((!key.is_null(i)).then(|| v[i]));
        let row = &mut out.rows[g];
        for (j, a) in aggs.iter().enumerate() {
            let add = match *a {
                ScanAgg::Count(c) => !ch(c).is_null(i) as i64,
                _ => 1,
            };
            combine(*a, &mut row[1 + j], &Value::Int(add));
        }
    }
    Ok(())
}

/// Row `i`'s value of a chunk as bytes that are equal for equal stored values (a finer
/// equality than grouping's; the merge by `hash_key` joins what it splits).
fn key_part(ch: &Chunk, i: usize, out: &mut Vec<u8>) {
    if ch.is_null(i) {
        out.push(0);
        return;
    }
    out.push(1);
    match &ch.data {
        Data::AllNull => {}
        Data::Ints(v) => out.extend_from_slice(&v[i].to_le_bytes()),
        Data::F64(v) => out.extend_from_slice(&v[i].to_bits().to_le_bytes()),
        Data::Wide(v) => out.extend_from_slice(&v[i].to_le_bytes()),
        Data::Dict { codes, .. } => {
            let code = match codes {
                Codes::U8(v) => v[i] as u16,
                Codes::U16(v) => v[i],
            };
            out.extend_from_slice(&code.to_le_bytes());
        }
        Data::Plain { offsets, data } => {
            let b = &data[offsets[i] as usize..offsets[i + 1] as usize];
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        }
        Data::Digits(d) => out.extend_from_slice(&d.int(i).to_le_bytes()),
    }
}

/// How two non-NULL rows of a chunk compare as their values would (`scratch` holds the
/// strings of digit rows that must be written to compare).
fn cmp_rows(ch: &Chunk, i: usize, j: usize, scratch: &mut (Vec<u8>, Vec<u8>)) -> Ordering {
    match &ch.data {
        Data::AllNull => Ordering::Equal,
        Data::Ints(v) if ch.phys == Phys::UInt => (v[i] as u64).cmp(&(v[j] as u64)),
        Data::Ints(v) => v[i].cmp(&v[j]),
        Data::F64(v) => v[i].partial_cmp(&v[j]).unwrap_or(Ordering::Equal),
        Data::Wide(v) => v[i].cmp(&v[j]),
        // Dictionaries are sorted as the column compares.
        Data::Dict { codes, .. } => match codes {
            Codes::U8(v) => v[i].cmp(&v[j]),
            Codes::U16(v) => v[i].cmp(&v[j]),
        },
        Data::Digits(d) if d.form.fixed() => d.int(i).cmp(&d.int(j)),
        Data::Digits(d) => {
            let (a, b) = scratch;
            a.clear();
            b.clear();
            d.write(i, a);
            d.write(j, b);
            a.as_slice().cmp(b.as_slice())
        }
        Data::Plain { offsets, data } => {
            let a = &data[offsets[i] as usize..offsets[i + 1] as usize];
            let b = &data[offsets[j] as usize..offsets[j + 1] as usize];
            match (ch.phys, std::str::from_utf8(a), std::str::from_utf8(b)) {
                (Phys::Str, Ok(a), Ok(b)) => collate_cmp(a, b),
                _ => a.cmp(b),
            }
        }
    }
}
