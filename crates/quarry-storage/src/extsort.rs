//! Sorting byte-string entries in bounded memory, for building B+trees bottom-up: entries
//! collect in one arena (no allocation per entry); when the arena passes its budget it is
//! sorted and written to an unlinked temporary file as a run; `finish` merges the runs
//! and the last arena into one ascending stream for `BTree::bulk_load`.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};

use quarry_common::{Error, Result};

pub struct ExternalSorter {
    budget: usize,
    arena: Vec<u8>,
    /// (start, length) of each entry in `arena`.
    spans: Vec<(usize, usize)>,
    runs: Vec<File>,
    /// Entries taken back after they may already sit in a run (skipped when merging).
    removed: HashSet<Vec<u8>>,
    len: u64,
}

impl ExternalSorter {
    /// A sorter holding at most about `budget` bytes of entries in memory.
    pub fn new(budget: usize) -> ExternalSorter {
        ExternalSorter {
            budget: budget.max(4096),
            arena: Vec::new(),
            spans: Vec::new(),
            runs: Vec::new(),
            removed: HashSet::new(),
            len: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Sorted runs written so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    pub fn push(&mut self, entry: &[u8]) -> Result<()> {
        self.spans.push((self.arena.len(), entry.len()));
        self.arena.extend_from_slice(entry);
        self.len += 1;
        if self.arena.len() + self.spans.len() * 16 > self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// Take back an entry pushed earlier. Once runs exist an entry not in memory is
    /// assumed to be in a run (callers only take back what they pushed).
    pub fn remove(&mut self, entry: &[u8]) -> bool {
        if let Some(at) = self
            .spans
            .iter()
            .position(|&(s, l)| &self.arena[s..s + l] == entry)
        {
            self.spans.swap_remove(at);
            self.len -= 1;
            return true;
        }
        if !self.runs.is_empty() && self.removed.insert(entry.to_vec()) {
            self.len -= 1;
            return true;
        }
        false
    }

    pub fn clear(&mut self) {
        *self = ExternalSorter::new(self.budget);
    }

    fn sort_spans(&mut self) {
        let arena = &self.arena;
        self.spans
            .sort_unstable_by(|a, b| arena[a.0..a.0 + a.1].cmp(&arena[b.0..b.0 + b.1]));
    }

    fn spill(&mut self) -> Result<()> {
        self.sort_spans();
        let mut w = BufWriter::with_capacity(256 * 1024, quarry_common::temp_file("index-run")?);
        let io = |e: std::io::Error| Error::io("index sort run", e);
        for &(s, l) in &self.spans {
            w.write_all(&(l as u32).to_le_bytes()).map_err(io)?;
            w.write_all(&self.arena[s..s + l]).map_err(io)?;
        }
        let mut f = w.into_inner().map_err(|e| io(e.into_error()))?;
        std::io::Seek::rewind(&mut f).map_err(io)?;
        self.runs.push(f);
        self.arena.clear();
        self.spans.clear();
        Ok(())
    }

    /// Every entry still held, ascending, each once.
    pub fn finish(mut self) -> Result<Box<dyn Iterator<Item = Result<Vec<u8>>>>> {
        self.sort_spans();
        let ExternalSorter {
            arena,
            spans,
            runs,
            removed,
            ..
        } = self;
        let mem = spans
            .into_iter()
            .map(move |(s, l)| Ok(arena[s..s + l].to_vec()));
        if runs.is_empty() {
            return Ok(Box::new(mem));
        }
        let mut sources: Vec<Box<dyn Iterator<Item = Result<Vec<u8>>>>> = vec![Box::new(mem)];
        for f in runs {
            let mut r = BufReader::with_capacity(256 * 1024, f);
            sources.push(Box::new(std::iter::from_fn(move || {
                let mut len = [0u8; 4];
                match r.read_exact(&mut len) {
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => None,
                    Err(e) => Some(Err(Error::io("index sort run", e))),
                    Ok(()) => {
                        let mut v = vec![0u8; u32::from_le_bytes(len) as usize];
                        Some(
                            r.read_exact(&mut v)
                                .map(|_| v)
                                .map_err(|e| Error::io("index sort run", e)),
                        )
                    }
                }
            })));
        }
        Ok(Box::new(Merge::new(sources, removed)?))
    }
}

/// K-way merge of ascending sources through a heap of their heads.
struct Merge {
    sources: Vec<Box<dyn Iterator<Item = Result<Vec<u8>>>>>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    removed: HashSet<Vec<u8>>,
}

impl Merge {
    fn new(
        mut sources: Vec<Box<dyn Iterator<Item = Result<Vec<u8>>>>>,
        removed: HashSet<Vec<u8>>,
    ) -> Result<Merge> {
        let mut heap = BinaryHeap::new();
        for (i, s) in sources.iter_mut().enumerate() {
            if let Some(e) = s.next() {
                heap.push(Reverse((e?, i)));
            }
        }
        Ok(Merge {
            sources,
            heap,
            removed,
        })
    }
}

impl Iterator for Merge {
    type Item = Result<Vec<u8>>;
    fn next(&mut self) -> Option<Result<Vec<u8>>> {
        loop {
            let Reverse((e, i)) = self.heap.pop()?;
            match self.sources[i].next() {
                Some(Ok(n)) => self.heap.push(Reverse((n, i))),
                Some(Err(err)) => return Some(Err(err)),
                None => {}
            }
            if !self.removed.remove(&e) {
                return Some(Ok(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_runs_merge_into_one_ascending_stream() {
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        // A 64 KiB budget forces many runs for ~1 MB of entries.
        let mut s = ExternalSorter::new(64 * 1024);
        let mut want = std::collections::BTreeSet::new();
        for i in 0..40_000u64 {
            let mut e = (next() % 5000).to_be_bytes().to_vec();
            e.extend_from_slice(&i.to_be_bytes());
            e.resize(16 + (next() % 20) as usize, 7);
            s.push(&e).unwrap();
            want.insert(e);
        }
        assert!(s.runs() > 5, "runs {}", s.runs());
        // Take back some entries, spilled or not.
        let victims: Vec<Vec<u8>> = want.iter().step_by(97).cloned().collect();
        for v in &victims {
            assert!(s.remove(v));
            want.remove(v);
        }
        assert_eq!(s.len(), want.len() as u64);
        let got: Vec<Vec<u8>> = s.finish().unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(got, want.into_iter().collect::<Vec<_>>());
    }
}
