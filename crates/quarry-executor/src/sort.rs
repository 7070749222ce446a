//! ORDER BY with bounded memory: an external merge sort.
//!
//! Rows are collected with their sort keys until `sort_buffer` bytes (the session's
//! `quarry_sort_buffer_size`) are used; then the run is sorted and written to an anonymous
//! temporary file, and collection starts again. At the end the runs are merged (k-way, by
//! scanning the run heads), so memory stays at one buffer plus one row per run.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};

use quarry_common::packed;
use quarry_common::{Error, Result, Row, Value};
use quarry_storage_api::HandlerCounters;

/// Keys, desc flags: the comparison used everywhere in this module.
pub(crate) fn cmp_keys(a: &[Value], b: &[Value], desc: &[bool]) -> Ordering {
    for (i, d) in desc.iter().enumerate() {
        let o = a[i].total_cmp(&b[i]);
        let o = if *d { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

pub fn approx_size(r: &[Value]) -> usize {
    r.iter()
        .map(|v| match v {
            Value::Str(s) => 32 + s.len(),
            Value::Bytes(b) => 32 + b.len(),
            _ => 32,
        })
        .sum::<usize>()
        + 24
}

struct RunReader {
    r: BufReader<File>,
    buf: Vec<u8>,
    head: Option<(Row, Row)>,
    nkeys: usize,
}

impl RunReader {
    fn advance(&mut self) -> Result<()> {
        let mut len = [0u8; 4];
        match self.r.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.head = None;
                return Ok(());
            }
            Err(e) => return Err(Error::io("sort run", e)),
        }
        self.buf.resize(u32::from_le_bytes(len) as usize, 0);
        self.r
            .read_exact(&mut self.buf)
            .map_err(|e| Error::io("sort run", e))?;
        let mut vals = packed::get_row(&self.buf, &mut 0)?;
        let row = vals.split_off(self.nkeys);
        self.head = Some((vals, row));
        Ok(())
    }
}

pub struct Sorter<'a> {
    desc: Vec<bool>,
    limit_bytes: usize,
    used: usize,
    rows: Vec<(Row, Row)>,
    /// Spilled runs by merge level (see `spill`).
    runs: Vec<Vec<File>>,
    counters: &'a HandlerCounters,
}

impl<'a> Sorter<'a> {
    pub fn new(desc: Vec<bool>, limit_bytes: usize, counters: &'a HandlerCounters) -> Sorter<'a> {
        Sorter {
            desc,
            limit_bytes: limit_bytes.max(MIN_RUN_BYTES),
            used: 0,
            rows: Vec::new(),
            runs: Vec::new(),
            counters,
        }
    }

    pub fn push(&mut self, keys: Row, row: Row) -> Result<()> {
        self.used += approx_size(&keys) + approx_size(&row);
        self.rows.push((keys, row));
        if self.used > self.limit_bytes {
            self.spill()?;
        }
        Ok(())
    }

    fn sort_run(&mut self) {
        let desc = &self.desc;
        self.rows.sort_by(|a, b| cmp_keys(&a.0, &b.0, desc));
    }

    fn spill(&mut self) -> Result<()> {
        self.sort_run();
        let rows = std::mem::take(&mut self.rows);
        let f = write_run(rows.into_iter().map(Ok))?;
        self.used = 0;
        HandlerCounters::add(&self.counters.sort_spills, 1);
        // Runs merge by level, MERGE_FANIN at a time, into one run of the next level: every
        // row is rewritten once per level (log base MERGE_FANIN of the runs), and at most
        // MERGE_FANIN runs of each level are open.
        let mut merged = f;
        for level in 0.. {
            if self.runs.len() == level {
                self.runs.push(Vec::new());
            }
            self.runs[level].push(merged);
            if self.runs[level].len() < MERGE_FANIN {
                break;
            }
            let mut readers = self.readers(level)?;
            let desc = self.desc.clone();
            merged = write_run(std::iter::from_fn(|| {
                next_in_order(&mut readers, &desc).transpose()
            }))?;
        }
        Ok(())
    }

    /// A reader at the first row of each run of `level` (the runs are taken).
    fn readers(&mut self, level: usize) -> Result<Vec<RunReader>> {
        let nkeys = self.desc.len();
        std::mem::take(&mut self.runs[level])
            .into_iter()
            .map(|f| {
                let mut r = RunReader {
                    r: BufReader::with_capacity(64 * 1024, f),
                    buf: Vec::new(),
                    head: None,
                    nkeys,
                };
                r.advance()?;
                Ok(r)
            })
            .collect()
    }

    /// Emit all rows in order, in batches of `batch` rows; the sink returns false to stop.
    pub fn finish(
        mut self,
        batch: usize,
        sink: &mut dyn FnMut(Vec<Row>) -> Result<bool>,
    ) -> Result<()> {
        self.sort_run();
        if self.runs.is_empty() {
            let mut out = Vec::with_capacity(batch);
            for (_, r) in self.rows {
                out.push(r);
                if out.len() == batch && !sink(std::mem::take(&mut out))? {
                    return Ok(());
                }
            }
            if !out.is_empty() {
                sink(out)?;
            }
            return Ok(());
        }
        let mut readers = vec![];
        for level in 0..self.runs.len() {
            readers.extend(self.readers(level)?);
        }
        let mut mem = self.rows.into_iter().peekable();
        let mut out = Vec::with_capacity(batch);
        loop {
            // The smallest head among the runs and the in-memory remainder.
            let mut best: Option<usize> = None;
            for (i, r) in readers.iter().enumerate() {
                if let Some((k, _)) = &r.head {
                    if best.is_none_or(|b| {
                        cmp_keys(k, &readers[b].head.as_ref().unwrap().0, &self.desc)
                            == Ordering::Less
                    }) {
                        best = Some(i);
                    }
                }
            }
            let take_mem = match (mem.peek(), best) {
                (None, None) => break,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((mk, _)), Some(b)) => {
                    cmp_keys(mk, &readers[b].head.as_ref().unwrap().0, &self.desc)
                        != Ordering::Greater
                }
            };
            let row = if take_mem {
                mem.next().unwrap().1
            } else {
                let b = best.unwrap();
                let (_, r) = readers[b].head.take().unwrap();
                readers[b].advance()?;
                r
            };
            out.push(row);
            if out.len() == batch && !sink(std::mem::take(&mut out))? {
                return Ok(());
            }
        }
        if !out.is_empty() {
            sink(out)?;
        }
        Ok(())
    }
}

/// The smallest run a sort writes, whatever its buffer is set to: a run costs a file, a
/// write buffer and a read buffer, and runs of a few rows made a 1 M-row sort spend
/// minutes in system calls.
const MIN_RUN_BYTES: usize = 256 << 10;

/// Runs merged at once: spilling more merges them first, so a sort holds at most this
/// many files open however small its buffer (one run per row at the smallest).
const MERGE_FANIN: usize = 64;

/// A sorted run of (keys, row) written to an unnamed temporary file, rewound.
fn write_run(rows: impl Iterator<Item = Result<(Row, Row)>>) -> Result<File> {
    let mut f = quarry_common::temp_file("sort")?;
    {
        let mut w = BufWriter::with_capacity(128 * 1024, &mut f);
        let mut rec = Vec::new();
        for kr in rows {
            let (k, r) = kr?;
            rec.clear();
            packed::put_varint((k.len() + r.len()) as u64, &mut rec);
            k.iter()
                .chain(r.iter())
                .for_each(|v| packed::put_value(v, &mut rec));
            w.write_all(&(rec.len() as u32).to_le_bytes())
                .map_err(|e| Error::io("sort run", e))?;
            w.write_all(&rec).map_err(|e| Error::io("sort run", e))?;
        }
        w.flush().map_err(|e| Error::io("sort run", e))?;
    }
    f.seek(SeekFrom::Start(0))
        .map_err(|e| Error::io("sort run", e))?;
    Ok(f)
}

/// The smallest head among `readers`, taken (the reader moves on).
fn next_in_order(readers: &mut [RunReader], desc: &[bool]) -> Result<Option<(Row, Row)>> {
    let mut best: Option<usize> = None;
    for (i, r) in readers.iter().enumerate() {
        if let Some((k, _)) = &r.head {
            if best.is_none_or(|b| {
                cmp_keys(k, &readers[b].head.as_ref().unwrap().0, desc) == Ordering::Less
            }) {
                best = Some(i);
            }
        }
    }
    let Some(b) = best else {
        return Ok(None);
    };
    let head = readers[b].head.take();
    readers[b].advance()?;
    Ok(head)
}

/// Rows written to an unnamed temporary file and read back in order (aggregate spill).
pub struct RowSpill {
    w: BufWriter<File>,
    rec: Vec<u8>,
}

impl RowSpill {
    pub fn new() -> Result<RowSpill> {
        Ok(RowSpill {
            w: BufWriter::with_capacity(64 * 1024, quarry_common::temp_file("sort")?),
            rec: Vec::new(),
        })
    }

    /// `n` empty spill files, one per hash partition.
    pub fn partitions(n: u64) -> Result<Vec<RowSpill>> {
        (0..n).map(|_| RowSpill::new()).collect()
    }

    pub fn write(&mut self, row: &[Value]) -> Result<()> {
        self.rec.clear();
        packed::put_row(row, &mut self.rec);
        self.w
            .write_all(&(self.rec.len() as u32).to_le_bytes())
            .map_err(|e| Error::io("spill", e))?;
        self.w
            .write_all(&self.rec)
            .map_err(|e| Error::io("spill", e))
    }

    pub fn into_reader(self) -> Result<SpillReader> {
        let mut f = self
            .w
            .into_inner()
            .map_err(|e| Error::io("spill", e.into_error()))?;
        f.seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("spill", e))?;
        Ok(SpillReader(RunReader {
            r: BufReader::with_capacity(64 * 1024, f),
            buf: Vec::new(),
            head: None,
            nkeys: 0,
        }))
    }
}

pub struct SpillReader(RunReader);

impl SpillReader {
    /// Back to the first row (a nested loop reads its spilled side once per block).
    pub fn rewind(&mut self) -> Result<()> {
        self.0
            .r
            .seek(SeekFrom::Start(0))
            .map_err(|e| Error::io("spill", e))?;
        self.0.head = None;
        Ok(())
    }

    /// Pass the rows back in batches.
    pub fn feed(
        &mut self,
        batch: usize,
        sink: &mut dyn FnMut(Vec<Row>) -> Result<bool>,
    ) -> Result<()> {
        let mut out = Vec::with_capacity(batch);
        loop {
            self.0.advance()?;
            match self.0.head.take() {
                Some((_, row)) => out.push(row),
                None => break,
            }
            if out.len() == batch && !sink(std::mem::take(&mut out))? {
                return Ok(());
            }
        }
        if !out.is_empty() {
            sink(out)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the smallest buffer every few rows are a run: runs are merged in passes, so
    /// the files open stay few (a 1 M-row sort with a 1-byte buffer used to fail with
    /// "Too many open files").
    #[test]
    fn spilled_sort_matches_in_memory_sort() {
        let counters = HandlerCounters::default();
        let mut s = Sorter::new(vec![false, true], 1024, &counters);
        s.limit_bytes = 1024;
        let mut expect = vec![];
        let mut x: u64 = 12345;
        for i in 0..5000i64 {
            assert!(s.runs.iter().all(|l| l.len() < MERGE_FANIN));
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let k1 = Value::Int((x >> 33) as i64 % 50);
            let k2 = if i % 7 == 0 {
                Value::Null
            } else {
                Value::Str(format!("s{}", (x >> 20) % 1000))
            };
            s.push(
                vec![k1.clone(), k2.clone()],
                vec![Value::Int(i), k2.clone()],
            )
            .unwrap();
            expect.push((vec![k1, k2], vec![Value::Int(i)]));
        }
        assert!(
            counters
                .sort_spills
                .load(std::sync::atomic::Ordering::Relaxed)
                > MERGE_FANIN as u64 * 2,
            "the test must spill past a merge pass"
        );
        let mut got = vec![];
        s.finish(100, &mut |b| {
            got.extend(b);
            Ok(true)
        })
        .unwrap();
        expect.sort_by(|a, b| cmp_keys(&a.0, &b.0, &[false, true]));
        assert_eq!(got.len(), 5000);
        // Keys must come out in order (ties may be in any order).
        let keys_of =
            |r: &Row, e: &[(Row, Row)]| e.iter().find(|(_, v)| v[0] == r[0]).unwrap().0.clone();
        let got_keys: Vec<Row> = got.iter().map(|r| keys_of(r, &expect)).collect();
        assert!(got_keys
            .windows(2)
            .all(|w| cmp_keys(&w[0], &w[1], &[false, true]) != Ordering::Greater));
    }
}
