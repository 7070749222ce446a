//! Column side-files of row tables (seed 002's `columnar_storage`).
//!
//! A column declared with a comment containing `columnar_storage` is stored a second time
//! in `<table>.cols/<column>.column`, as a log of entries in write order:
//!
//! ```text
//!   op u8 (1 = value, 2 = gone) │ row id u64 │ [len u32 │ the value as a one-column record]
//! ```
//!
//! Inserts append a value entry; deletes append a gone entry; updates append both. A
//! condition on the column is decided by reading this small file instead of the data
//! file: each distinct value is decided once (a cache of encoded value → truth), and the
//! matching row ids come out sorted so rows are fetched in file order, in batches.
//! Like the indexes, the files are rebuilt from the data file when the table was not
//! synced after its last change (the dirty marker) or when they disagree with it.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use quarry_common::{Error, Result, Value};
use quarry_storage_api::{ColumnSchema, Pred, RowFormat, RowId};

use crate::codec::{decode, encode};

const VALUE: u8 = 1;
const GONE: u8 = 2;
/// Distinct encoded values whose truth is remembered during one read of the file.
const CACHE: usize = 1 << 16;

/// Whether a column comment asks for a side file.
pub fn wants_side_file(comment: &str) -> bool {
    comment.to_ascii_lowercase().contains("columnar_storage")
}

/// `<table>.cols/<column>.column` (characters a file name cannot hold as `@xxxx`).
pub fn side_file(dir: &Path, table: &str, column: &str) -> PathBuf {
    let mut name = String::new();
    for ch in column.chars() {
        if ch.is_ascii_alphanumeric() || ch == '_' || ch == '$' {
            name.push(ch);
        } else {
            name.push_str(&format!("@{:04x}", ch as u32));
        }
    }
    dir.join(format!("{table}.cols")).join(name + ".column")
}

/// Called with each entry: operation, row id, encoded value (empty for `GONE`).
type EntryVisitor<'a> = dyn FnMut(u8, RowId, &[u8]) -> Result<()> + 'a;

pub(crate) struct SideColumn {
    /// The table column it mirrors.
    pub col: usize,
    schema: [ColumnSchema; 1],
    path: PathBuf,
    file: File,
    /// Entries not yet written.
    buf: Vec<u8>,
    written: u64,
    pub values: u64,
    pub gone: u64,
    scratch: Vec<u8>,
}

fn io(p: &Path, e: std::io::Error) -> Error {
    Error::io(p.display(), e)
}

impl SideColumn {
    /// Open (creating it empty if missing) and count its entries; `Ok(None)` when the
    /// file's tail is torn (the caller rebuilds it).
    pub fn open(path: PathBuf, col: usize, schema: &ColumnSchema) -> Result<SideColumn> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let len = file.metadata().map_err(|e| io(&path, e))?.len();
        let mut s = SideColumn {
            col,
            schema: [schema.clone()],
            path,
            file,
            buf: Vec::new(),
            written: len,
            values: 0,
            gone: 0,
            scratch: Vec::new(),
        };
        let (mut values, mut gone) = (0, 0);
        let complete = s.read(1 << 20, &mut |op, _, _| {
            if op == VALUE {
                values += 1;
            } else {
                gone += 1;
            }
            Ok(())
        })?;
        s.values = values;
        s.gone = gone;
        if !complete {
            // A torn tail: the entries before it stand, the caller rebuilds anyway.
            s.reset()?;
        }
        Ok(s)
    }

    /// Entries for live rows (values written minus those gone).
    pub fn live(&self) -> u64 {
        self.values.saturating_sub(self.gone)
    }

    pub fn add(&mut self, id: RowId, v: &Value) {
        self.scratch.clear();
        encode(
            &self.schema,
            RowFormat::Dynamic,
            std::slice::from_ref(v),
            &mut self.scratch,
        );
        self.buf.push(VALUE);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.buf
            .extend_from_slice(&(self.scratch.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(&self.scratch);
        self.values += 1;
    }

    pub fn remove(&mut self, id: RowId) {
        self.buf.push(GONE);
        self.buf.extend_from_slice(&id.to_le_bytes());
        self.gone += 1;
    }

    pub fn flush(&mut self) -> Result<u64> {
        if self.buf.is_empty() {
            return Ok(0);
        }
        self.file
            .write_all_at(&self.buf, self.written)
            .map_err(|e| io(&self.path, e))?;
        let n = self.buf.len() as u64;
        self.written += n;
        self.buf.clear();
        Ok(n)
    }

    pub fn sync(&mut self) -> Result<()> {
        self.flush()?;
        self.file.sync_data().map_err(|e| io(&self.path, e))
    }

    /// Empty the file (TRUNCATE, or before a rebuild).
    pub fn reset(&mut self) -> Result<()> {
        self.buf.clear();
        self.file.set_len(0).map_err(|e| io(&self.path, e))?;
        self.written = 0;
        self.values = 0;
        self.gone = 0;
        Ok(())
    }

    /// Visit every written entry in order (`op`, row id, encoded value); false when the
    /// file ends inside an entry.
    fn read(&self, block: usize, visit: &mut EntryVisitor) -> Result<bool> {
        let block = block.max(4096);
        let mut buf: Vec<u8> = Vec::with_capacity(block * 2);
        let mut pos = 0u64; // file offset of buf[0]
        let mut at = 0usize;
        loop {
            // Entries are parsed from `at`; refill when fewer than a whole one remains.
            let need = |b: &[u8]| -> Option<usize> {
                let op = *b.first()?;
                match op {
                    GONE => (b.len() >= 9).then_some(9),
                    VALUE => {
                        let len = u32::from_le_bytes(b.get(9..13)?.try_into().unwrap()) as usize;
                        (b.len() >= 13 + len).then_some(13 + len)
                    }
                    _ => Some(usize::MAX),
                }
            };
            match need(&buf[at..]) {
                Some(usize::MAX) => {
                    return Err(Error::corrupt(format!(
                        "{}: unknown entry at offset {}",
                        self.path.display(),
                        pos + at as u64
                    )))
                }
                Some(n) => {
                    let e = &buf[at..at + n];
                    let id = u64::from_le_bytes(e[1..9].try_into().unwrap());
                    visit(e[0], id, if n > 9 { &e[13..] } else { &[] })?;
                    at += n;
                }
                None => {
                    let file_pos = pos + buf.len() as u64;
                    if file_pos >= self.written {
                        return Ok(at == buf.len());
                    }
                    buf.drain(..at);
                    pos += at as u64;
                    at = 0;
                    let want = block.min((self.written - file_pos) as usize);
                    let old = buf.len();
                    buf.resize(old + want, 0);
                    self.file
                        .read_exact_at(&mut buf[old..], file_pos)
                        .map_err(|e| io(&self.path, e))?;
                }
            }
        }
    }

    /// Sorted ids of live rows for which `p` (a condition on this column only) is true,
    /// reading the file in `block`-byte reads. `limit`: stop (returning None) once more
    /// than that many entries were read and more than a quarter of them matched — the
    /// caller is then better served by a plain scan.
    pub fn matching(
        &mut self,
        p: &Pred,
        block: usize,
        sample: Option<u64>,
    ) -> Result<Option<Vec<RowId>>> {
        self.flush()?;
        let mut truth: HashMap<Vec<u8>, bool> = HashMap::new();
        let schema = &self.schema;
        let mut decide = |enc: &[u8]| -> Result<bool> {
            if let Some(&t) = truth.get(enc) {
                return Ok(t);
            }
            let v = decode(schema, RowFormat::Dynamic, enc)?
                .pop()
                .unwrap_or(Value::Null);
            let t = eval_one(p, &v) == Some(true);
            if truth.len() < CACHE {
                truth.insert(enc.to_vec(), t);
            }
            Ok(t)
        };
        // Rows deleted or moved: their entries are settled in write order at the end.
        let mut replaced: HashSet<RowId> = HashSet::new();
        if self.gone > 0 {
            self.read(block, &mut |op, id, _| {
                if op == GONE {
                    replaced.insert(id);
                }
                Ok(())
            })?;
        }
        let mut ids = Vec::new();
        let mut latest: HashMap<RowId, bool> = HashMap::new();
        let mut seen = 0u64;
        let mut unselective = false;
        let r = self.read(block, &mut |op, id, enc| {
            if op == GONE {
                latest.remove(&id);
                return Ok(());
            }
            let t = decide(enc)?;
            if replaced.contains(&id) {
                latest.insert(id, t);
            } else if t {
                ids.push(id);
            }
            seen += 1;
            if sample.is_some_and(|s| seen == s && ids.len() as u64 * 4 > s) {
                unselective = true;
                return Err(Error::internal("side file sample: not selective"));
            }
            Ok(())
        });
        if unselective {
            return Ok(None);
        }
        r?;
        ids.extend(latest.into_iter().filter(|(_, t)| *t).map(|(id, _)| id));
        ids.sort_unstable();
        Ok(Some(ids))
    }
}

/// A condition on one column for one value of it (three-valued).
fn eval_one(p: &Pred, v: &Value) -> Option<bool> {
    match p {
        Pred::And(ps) => ps
            .iter()
            .try_fold(Some(true), |acc, q| match (acc, eval_one(q, v)) {
                (_, Some(false)) => Err(()),
                (Some(true), Some(true)) => Ok(Some(true)),
                _ => Ok(None),
            })
            .unwrap_or(Some(false)),
        Pred::Or(ps) => ps
            .iter()
            .try_fold(Some(false), |acc, q| match (acc, eval_one(q, v)) {
                (_, Some(true)) => Err(()),
                (Some(false), Some(false)) => Ok(Some(false)),
                _ => Ok(None),
            })
            .unwrap_or(Some(true)),
        Pred::Not(q) => eval_one(q, v).map(|b| !b),
        leaf => leaf.eval_value(v),
    }
}
