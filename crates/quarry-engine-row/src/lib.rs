//! The row engine: one data file per table, MyISAM-style records, in-memory key maps.
//!
//! ```text
//!  <table>.qrd  ┌────────────── 4 KiB header (magic, version, row format, crc) ─┐
//!               │ rec: status u8 │ slot u32 │ len u32 │ crc32c u32 │ payload…   │
//!               │ rec …  (row id = file offset of the record header)           │
//!               └───────────────────────────────────────────────────────────────┘
//! ```
//!
//! * Scans read the file sequentially in `read_buffer_size` blocks (rule 1), never one
//!   `read()` per record.
//! * Appends go through a write buffer; its first flush ends on a 4 KiB boundary so every
//!   later write is block-aligned, and bulk loads flush in 128 KiB writes.
//! * Deleted records keep their slot; a later insert whose record fits reuses it (first
//!   fit by size, bounded waste).
//! * Every record carries a CRC32C of its payload: a corrupt record is an error, never data.
//! * Keys (PRIMARY, UNIQUE, secondary) are kept in ordered in-memory maps rebuilt when the
//!   table is opened. They enforce uniqueness and serve point and range lookups until the
//!   on-disk B+tree of the index issue replaces them.
//!
//! Must not touch: SQL, sessions, transactions (undo is done above through this API).

mod codec;

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::ops::Bound;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use parking_lot::Mutex;
use quarry_common::{Error, Result, Row, TypeKind, Value};
use quarry_storage_api::{
    Batch, Cursor, Engine, HandlerCounters, IndexSchema, RowFormat, RowId, ScanRequest, Stat,
    Table, TablePath, TableSchema, TableStats,
};

pub use codec::{decode, encode, fixed_width};

const MAGIC: &[u8; 8] = b"QRYROWD\0";
const VERSION: u32 = 1;
const HEADER_SIZE: u64 = 4096;
const REC_HDR: usize = 13;
const LIVE: u8 = 0xA1;
const DELETED: u8 = 0xD0;
const WRITE_BUFFER: usize = 128 * 1024;

pub struct RowEngine;

impl Engine for RowEngine {
    fn name(&self) -> &'static str {
        "row"
    }
    fn comment(&self) -> &'static str {
        "Quarry row engine: MyISAM-style records (FIXED/DYNAMIC), checksummed, transactional above the engine"
    }
    fn create(&self, path: &TablePath, schema: &TableSchema) -> Result<()> {
        let file = path.file("qrd");
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
            .map_err(|e| Error::io(file.display(), e))?;
        f.write_all(&header(schema.row_format))
            .map_err(|e| Error::io(file.display(), e))?;
        f.sync_all().map_err(|e| Error::io(file.display(), e))?;
        Ok(())
    }
    fn open(
        &self,
        path: &TablePath,
        schema: &TableSchema,
        counters: Arc<HandlerCounters>,
    ) -> Result<Arc<dyn Table>> {
        Ok(Arc::new(RowTable::open(path, schema.clone(), counters)?))
    }
    fn drop_table(&self, path: &TablePath) -> Result<()> {
        let f = path.file("qrd");
        match std::fs::remove_file(&f) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(f.display(), e)),
        }
    }
    fn rename(&self, from: &TablePath, to: &TablePath) -> Result<()> {
        std::fs::rename(from.file("qrd"), to.file("qrd"))
            .map_err(|e| Error::io(from.file("qrd").display(), e))
    }
}

fn header(format: RowFormat) -> Vec<u8> {
    let mut h = vec![0u8; HEADER_SIZE as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h[12] = match format {
        RowFormat::Fixed => 1,
        RowFormat::Dynamic => 2,
    };
    let crc = crc32c::crc32c(&h[..4092]);
    h[4092..].copy_from_slice(&crc.to_le_bytes());
    h
}

/// An index key: column values compared with SQL collation rules, NULL first.
#[derive(Debug, Clone)]
struct Key(Vec<Value>);

impl PartialEq for Key {
    fn eq(&self, o: &Key) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Key) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Key) -> Ordering {
        for (a, b) in self.0.iter().zip(&o.0) {
            match a.total_cmp(b) {
                Ordering::Equal => {}
                x => return x,
            }
        }
        self.0.len().cmp(&o.0.len())
    }
}

fn prefix_cmp(key: &Key, bound: &[Value]) -> Ordering {
    for (a, b) in key.0.iter().zip(bound) {
        match a.total_cmp(b) {
            Ordering::Equal => {}
            x => return x,
        }
    }
    Ordering::Equal
}

struct State {
    /// File length including the unflushed write buffer.
    end: u64,
    /// Appended records not yet written; they start at `wbuf_start`.
    wbuf: Vec<u8>,
    wbuf_start: u64,
    bulk: bool,
    /// Flush size while `bulk` (bytes).
    write_buffer: usize,
    /// Free slots by payload capacity.
    free: BTreeMap<u32, Vec<u64>>,
    free_bytes: u64,
    live_rows: u64,
    indexes: Vec<BTreeMap<Key, Vec<RowId>>>,
    scratch: Vec<u8>,
}

pub struct RowTable {
    name: String,
    schema: TableSchema,
    file: File,
    counters: Arc<HandlerCounters>,
    state: Mutex<State>,
    fixed_slot: Option<u32>,
}

impl RowTable {
    pub fn open(
        path: &TablePath,
        schema: TableSchema,
        counters: Arc<HandlerCounters>,
    ) -> Result<RowTable> {
        let fname = path.file("qrd");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fname)
            .map_err(|e| Error::io(fname.display(), e))?;
        let mut h = vec![0u8; HEADER_SIZE as usize];
        file.read_exact_at(&mut h, 0)
            .map_err(|e| Error::io(fname.display(), e))?;
        let crc = u32::from_le_bytes(h[4092..].try_into().unwrap());
        if &h[..8] != MAGIC || crc != crc32c::crc32c(&h[..4092]) {
            return Err(Error::corrupt(&path.name));
        }
        let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
        if version != VERSION {
            return Err(Error::new(
                1033,
                format!(
                    "Incorrect information in file: '{}' (format version {version})",
                    fname.display()
                ),
            ));
        }
        let len = file
            .metadata()
            .map_err(|e| Error::io(fname.display(), e))?
            .len();
        let fixed_slot =
            (schema.row_format == RowFormat::Fixed).then(|| fixed_width(&schema.columns) as u32);
        let t = RowTable {
            name: path.name.clone(),
            schema,
            file,
            counters,
            fixed_slot,
            state: Mutex::new(State {
                end: len,
                wbuf: Vec::new(),
                wbuf_start: len,
                bulk: false,
                write_buffer: WRITE_BUFFER,
                free: BTreeMap::new(),
                free_bytes: 0,
                live_rows: 0,
                indexes: Vec::new(),
                scratch: Vec::new(),
            }),
        }
        .rebuild()?;
        Ok(t)
    }

    /// Scan the whole file once: free list, row count and key maps.
    fn rebuild(self) -> Result<RowTable> {
        let mut free: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        let mut free_bytes = 0;
        let mut live = 0;
        let mut indexes: Vec<BTreeMap<Key, Vec<RowId>>> =
            vec![BTreeMap::new(); self.schema.indexes.len()];
        let mut reader = RecordReader::new(&self, HEADER_SIZE, self.state.lock().end, 1 << 20);
        while let Some((off, status, slot, payload)) = reader.next_record()? {
            if status == LIVE {
                let row = decode(&self.schema.columns, self.schema.row_format, payload)?;
                for (ix, map) in self.schema.indexes.iter().zip(indexes.iter_mut()) {
                    map.entry(index_key(ix, &row)).or_default().push(off);
                }
                live += 1;
            } else {
                free.entry(slot).or_default().push(off);
                free_bytes += slot as u64 + REC_HDR as u64;
            }
        }
        {
            let mut st = self.state.lock();
            st.free = free;
            st.free_bytes = free_bytes;
            st.live_rows = live;
            st.indexes = indexes;
        }
        Ok(self)
    }

    fn flush_locked(&self, st: &mut State) -> Result<()> {
        if st.wbuf.is_empty() {
            return Ok(());
        }
        self.file
            .write_all_at(&st.wbuf, st.wbuf_start)
            .map_err(|e| Error::io(&self.name, e))?;
        HandlerCounters::add(&self.counters.io_write_calls, 1);
        HandlerCounters::add(&self.counters.io_write_bytes, st.wbuf.len() as u64);
        st.wbuf_start += st.wbuf.len() as u64;
        st.wbuf.clear();
        Ok(())
    }

    fn check_unique(&self, st: &State, row: &Row, ignore: Option<RowId>) -> Result<()> {
        for (ix, map) in self.schema.indexes.iter().zip(&st.indexes) {
            if !ix.unique {
                continue;
            }
            let key = index_key(ix, row);
            if key.0.iter().any(Value::is_null) {
                continue;
            }
            if let Some(ids) = map.get(&key) {
                if ids.iter().any(|id| Some(*id) != ignore) {
                    let shown: Vec<String> = key.0.iter().map(|v| v.to_string()).collect();
                    let name = if ix.primary { "PRIMARY" } else { &ix.name };
                    return Err(Error::duplicate_key(&shown.join("-"), name));
                }
            }
        }
        Ok(())
    }

    fn index_add(&self, st: &mut State, row: &Row, id: RowId) {
        for (ix, map) in self.schema.indexes.iter().zip(st.indexes.iter_mut()) {
            map.entry(index_key(ix, row)).or_default().push(id);
        }
    }

    fn index_remove(&self, st: &mut State, row: &Row, id: RowId) {
        for (ix, map) in self.schema.indexes.iter().zip(st.indexes.iter_mut()) {
            let key = index_key(ix, row);
            if let Some(ids) = map.get_mut(&key) {
                ids.retain(|x| *x != id);
                if ids.is_empty() {
                    map.remove(&key);
                }
            }
        }
    }

    /// Write one record (header + payload) at `off`, through the write buffer when appending.
    fn write_record(&self, st: &mut State, off: u64, slot: u32, payload_len: usize) -> Result<()> {
        let mut rec = Vec::with_capacity(REC_HDR + slot as usize);
        rec.push(LIVE);
        rec.extend_from_slice(&slot.to_le_bytes());
        rec.extend_from_slice(&(payload_len as u32).to_le_bytes());
        rec.extend_from_slice(&crc32c::crc32c(&st.scratch[..payload_len]).to_le_bytes());
        rec.extend_from_slice(&st.scratch[..payload_len]);
        rec.resize(REC_HDR + slot as usize, 0);
        if off == st.end {
            st.wbuf.extend_from_slice(&rec);
            st.end += rec.len() as u64;
            if !st.bulk {
                self.flush_locked(st)?;
            } else {
                // The first flush ends on a 4 KiB boundary; every later one is a whole
                // aligned WRITE_BUFFER block.
                loop {
                    let misalign = (st.wbuf_start % 4096) as usize;
                    let chunk = if misalign != 0 && st.write_buffer >= 4096 {
                        4096 - misalign
                    } else {
                        st.write_buffer
                    };
                    if st.wbuf.len() < chunk {
                        break;
                    }
                    let rest = st.wbuf.split_off(chunk);
                    self.flush_locked(st)?;
                    st.wbuf = rest;
                }
            }
        } else {
            self.flush_locked(st)?;
            self.file
                .write_all_at(&rec, off)
                .map_err(|e| Error::io(&self.name, e))?;
            HandlerCounters::add(&self.counters.io_write_calls, 1);
            HandlerCounters::add(&self.counters.io_write_bytes, rec.len() as u64);
        }
        Ok(())
    }

    fn read_record(&self, st: &mut State, id: RowId) -> Result<(u32, Row)> {
        self.flush_locked(st)?;
        let mut hdr = [0u8; REC_HDR];
        self.file
            .read_exact_at(&mut hdr, id)
            .map_err(|e| Error::io(&self.name, e))?;
        if hdr[0] != LIVE {
            return Err(Error::internal(format!(
                "row {id} of {} is not live",
                self.name
            )));
        }
        let slot = u32::from_le_bytes(hdr[1..5].try_into().unwrap());
        let len = u32::from_le_bytes(hdr[5..9].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(hdr[9..13].try_into().unwrap());
        let mut payload = vec![0u8; len];
        self.file
            .read_exact_at(&mut payload, id + REC_HDR as u64)
            .map_err(|e| Error::io(&self.name, e))?;
        HandlerCounters::add(&self.counters.io_read_calls, 2);
        HandlerCounters::add(&self.counters.io_read_bytes, (REC_HDR + len) as u64);
        if crc32c::crc32c(&payload) != crc {
            return Err(Error::corrupt(&self.name));
        }
        Ok((
            slot,
            decode(&self.schema.columns, self.schema.row_format, &payload)?,
        ))
    }

    fn alloc(&self, st: &mut State, need: u32) -> (u64, u32) {
        let slot_want = self.fixed_slot.unwrap_or(need);
        let max_ok = slot_want.saturating_mul(2).saturating_add(64);
        let found = st.free.range(slot_want..=max_ok).next().map(|(s, _)| *s);
        if let Some(slot) = found {
            let list = st.free.get_mut(&slot).unwrap();
            let off = list.pop().unwrap();
            if list.is_empty() {
                st.free.remove(&slot);
            }
            st.free_bytes -= slot as u64 + REC_HDR as u64;
            return (off, slot);
        }
        (st.end, slot_want)
    }

    fn mark_deleted(&self, st: &mut State, id: RowId, slot: u32) -> Result<()> {
        self.flush_locked(st)?;
        self.file
            .write_all_at(&[DELETED], id)
            .map_err(|e| Error::io(&self.name, e))?;
        HandlerCounters::add(&self.counters.io_write_calls, 1);
        HandlerCounters::add(&self.counters.io_write_bytes, 1);
        st.free.entry(slot).or_default().push(id);
        st.free_bytes += slot as u64 + REC_HDR as u64;
        Ok(())
    }
}

/// Key of `row` in `ix`, with string prefixes cut to the declared length.
fn index_key(ix: &IndexSchema, row: &Row) -> Key {
    Key(ix
        .columns
        .iter()
        .zip(&ix.prefix)
        .map(|(&c, &p)| match &row[c] {
            Value::Str(s) if p > 0 => Value::Str(s.chars().take(p as usize).collect()),
            Value::Bytes(b) if p > 0 => Value::Bytes(b[..b.len().min(p as usize)].to_vec()),
            v => v.clone(),
        })
        .collect())
}

/// (offset, status, slot size, used payload) of one record.
type RawRecord<'a> = (u64, u8, u32, &'a [u8]);

/// Sequential reader over the record area in large blocks.
struct RecordReader<'a> {
    table: &'a RowTable,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    block: usize,
}

impl<'a> RecordReader<'a> {
    fn new(table: &'a RowTable, pos: u64, end: u64, block: usize) -> RecordReader<'a> {
        RecordReader {
            table,
            pos,
            end,
            buf: Vec::new(),
            buf_start: pos,
            block: block.max(256),
        }
    }

    /// Make `[pos, pos+n)` available in the buffer.
    fn ensure(&mut self, n: usize) -> Result<()> {
        let have_end = self.buf_start + self.buf.len() as u64;
        if self.pos >= self.buf_start && self.pos + n as u64 <= have_end {
            return Ok(());
        }
        let want = n.max(self.block);
        let len = (want as u64).min(self.end - self.pos) as usize;
        if len < n {
            return Err(Error::corrupt(format!(
                "{}: record past end of file",
                self.table.name
            )));
        }
        self.buf.resize(len, 0);
        self.table
            .file
            .read_exact_at(&mut self.buf, self.pos)
            .map_err(|e| Error::io(&self.table.name, e))?;
        HandlerCounters::add(&self.table.counters.io_read_calls, 1);
        HandlerCounters::add(&self.table.counters.io_read_bytes, len as u64);
        self.buf_start = self.pos;
        Ok(())
    }

    fn next_record(&mut self) -> Result<Option<RawRecord<'_>>> {
        if self.pos >= self.end {
            return Ok(None);
        }
        self.ensure(REC_HDR)?;
        let at = (self.pos - self.buf_start) as usize;
        let h = &self.buf[at..at + REC_HDR];
        let status = h[0];
        let slot = u32::from_le_bytes(h[1..5].try_into().unwrap());
        let len = u32::from_le_bytes(h[5..9].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(h[9..13].try_into().unwrap());
        if (status != LIVE && status != DELETED) || len > slot as usize {
            return Err(Error::corrupt(format!(
                "{} at offset {}",
                self.table.name, self.pos
            )));
        }
        let off = self.pos;
        self.ensure(REC_HDR + slot as usize)?;
        let at = (self.pos - self.buf_start) as usize;
        self.pos += (REC_HDR + slot as usize) as u64;
        let payload = &self.buf[at + REC_HDR..at + REC_HDR + len];
        if status == LIVE && crc32c::crc32c(payload) != crc {
            return Err(Error::corrupt(format!(
                "{} (checksum mismatch at offset {off})",
                self.table.name
            )));
        }
        Ok(Some((off, status, slot, payload)))
    }
}

struct RowCursor<'a> {
    reader: RecordReader<'a>,
    batch_rows: usize,
}

impl Cursor for RowCursor<'_> {
    fn next_batch(&mut self) -> Result<Option<Batch>> {
        let mut batch = Batch::default();
        let table = self.reader.table;
        let mut visited = 0u64;
        while batch.rows.len() < self.batch_rows {
            match self.reader.next_record()? {
                None => break,
                Some((off, status, _, payload)) => {
                    visited += 1;
                    if status == LIVE {
                        batch.rows.push(decode(
                            &table.schema.columns,
                            table.schema.row_format,
                            payload,
                        )?);
                        batch.ids.push(off);
                    }
                }
            }
        }
        HandlerCounters::add(&table.counters.read_rnd_next, visited);
        if batch.rows.is_empty() {
            return Ok(None);
        }
        Ok(Some(batch))
    }
}

impl Table for RowTable {
    fn schema(&self) -> &TableSchema {
        &self.schema
    }

    fn scan(&self, req: &ScanRequest) -> Result<Box<dyn Cursor + '_>> {
        let end = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            st.end
        };
        let block = if req.read_buffer == 0 {
            128 * 1024
        } else {
            req.read_buffer
        };
        Ok(Box::new(RowCursor {
            reader: RecordReader::new(self, HEADER_SIZE, end, block),
            batch_rows: req.batch_rows.max(1),
        }))
    }

    fn fetch(&self, ids: &[RowId]) -> Result<Vec<Row>> {
        let end = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            st.end
        };
        HandlerCounters::add(&self.counters.read_rnd, ids.len() as u64);
        // Callers pass ids sorted, so neighbouring rows come out of one block read instead
        // of one read per row (rule 5: fetch matching rows in file order, in batches).
        let block = if ids.len() > 1 { 64 * 1024 } else { 4096 };
        let mut reader = RecordReader::new(self, HEADER_SIZE, end, block);
        ids.iter()
            .map(|&id| {
                if id < HEADER_SIZE || id >= end {
                    return Err(Error::internal(format!(
                        "row {id} of {} is out of range",
                        self.name
                    )));
                }
                reader.pos = id;
                match reader.next_record()? {
                    Some((_, LIVE, _, payload)) => {
                        decode(&self.schema.columns, self.schema.row_format, payload)
                    }
                    _ => Err(Error::internal(format!(
                        "row {id} of {} is not live",
                        self.name
                    ))),
                }
            })
            .collect()
    }

    fn index_range(
        &self,
        index: usize,
        lo: Bound<&[Value]>,
        hi: Bound<&[Value]>,
    ) -> Result<Vec<RowId>> {
        let st = self.state.lock();
        let map = st
            .indexes
            .get(index)
            .ok_or_else(|| Error::internal("no such index"))?;
        HandlerCounters::add(&self.counters.read_key, 1);
        let start = match lo {
            Bound::Included(v) | Bound::Excluded(v) => Bound::Included(Key(v.to_vec())),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut out = Vec::new();
        for (k, ids) in map.range((start, Bound::Unbounded)) {
            if let Bound::Excluded(v) = lo {
                if prefix_cmp(k, v) == Ordering::Equal {
                    continue;
                }
            }
            match hi {
                Bound::Included(v) if prefix_cmp(k, v) == Ordering::Greater => break,
                Bound::Excluded(v) if prefix_cmp(k, v) != Ordering::Less => break,
                _ => {}
            }
            out.extend_from_slice(ids);
        }
        HandlerCounters::add(&self.counters.read_next, out.len() as u64);
        Ok(out)
    }

    fn insert(&self, row: Row) -> Result<RowId> {
        let mut st = self.state.lock();
        self.check_unique(&st, &row, None)?;
        let mut scratch = std::mem::take(&mut st.scratch);
        scratch.clear();
        encode(
            &self.schema.columns,
            self.schema.row_format,
            &row,
            &mut scratch,
        );
        let len = scratch.len();
        st.scratch = scratch;
        let (off, slot) = self.alloc(&mut st, len as u32);
        self.write_record(&mut st, off, slot, len)?;
        self.index_add(&mut st, &row, off);
        st.live_rows += 1;
        HandlerCounters::add(&self.counters.write, 1);
        Ok(off)
    }

    fn update(&self, id: RowId, row: Row) -> Result<RowId> {
        let mut st = self.state.lock();
        let (slot, old) = self.read_record(&mut st, id)?;
        self.check_unique(&st, &row, Some(id))?;
        let mut scratch = std::mem::take(&mut st.scratch);
        scratch.clear();
        encode(
            &self.schema.columns,
            self.schema.row_format,
            &row,
            &mut scratch,
        );
        let len = scratch.len();
        st.scratch = scratch;
        self.index_remove(&mut st, &old, id);
        let new_id = if len <= slot as usize {
            self.write_record(&mut st, id, slot, len)?;
            id
        } else {
            self.mark_deleted(&mut st, id, slot)?;
            let (off, nslot) = self.alloc(&mut st, len as u32);
            self.write_record(&mut st, off, nslot, len)?;
            off
        };
        self.index_add(&mut st, &row, new_id);
        HandlerCounters::add(&self.counters.update, 1);
        Ok(new_id)
    }

    fn delete(&self, id: RowId) -> Result<()> {
        let mut st = self.state.lock();
        let (slot, old) = self.read_record(&mut st, id)?;
        self.mark_deleted(&mut st, id, slot)?;
        self.index_remove(&mut st, &old, id);
        st.live_rows -= 1;
        HandlerCounters::add(&self.counters.delete, 1);
        Ok(())
    }

    fn truncate(&self) -> Result<()> {
        let mut st = self.state.lock();
        st.wbuf.clear();
        self.file
            .set_len(HEADER_SIZE)
            .map_err(|e| Error::io(&self.name, e))?;
        st.end = HEADER_SIZE;
        st.wbuf_start = HEADER_SIZE;
        st.free.clear();
        st.free_bytes = 0;
        st.live_rows = 0;
        for m in st.indexes.iter_mut() {
            m.clear();
        }
        Ok(())
    }

    fn begin_bulk(&self, write_buffer: usize) {
        let mut st = self.state.lock();
        st.bulk = true;
        st.write_buffer = if write_buffer == 0 {
            WRITE_BUFFER
        } else {
            write_buffer
        };
    }

    fn end_bulk(&self) -> Result<()> {
        let mut st = self.state.lock();
        st.bulk = false;
        self.flush_locked(&mut st)
    }

    fn flush(&self) -> Result<()> {
        let mut st = self.state.lock();
        self.flush_locked(&mut st)
    }

    fn sync(&self) -> Result<()> {
        self.flush()?;
        self.file.sync_data().map_err(|e| Error::io(&self.name, e))
    }

    fn stats(&self) -> TableStats {
        let st = self.state.lock();
        let data = st.end - HEADER_SIZE;
        TableStats {
            rows: Stat::Exact(st.live_rows),
            data_bytes: data,
            free_bytes: st.free_bytes,
            avg_row_bytes: (data - st.free_bytes)
                .checked_div(st.live_rows)
                .unwrap_or(0),
        }
    }

    fn check(&self) -> Result<Vec<String>> {
        let end = {
            let mut st = self.state.lock();
            self.flush_locked(&mut st)?;
            st.end
        };
        let mut problems = Vec::new();
        let mut live = 0u64;
        let mut reader = RecordReader::new(self, HEADER_SIZE, end, 1 << 20);
        let mut keys: Vec<Vec<(Key, RowId)>> = vec![Vec::new(); self.schema.indexes.len()];
        loop {
            match reader.next_record() {
                Ok(None) => break,
                Ok(Some((off, status, _, payload))) => {
                    if status == LIVE {
                        live += 1;
                        match decode(&self.schema.columns, self.schema.row_format, payload) {
                            Ok(row) => {
                                for (i, ix) in self.schema.indexes.iter().enumerate() {
                                    keys[i].push((index_key(ix, &row), off));
                                }
                            }
                            Err(e) => problems.push(format!("record at {off}: {}", e.message)),
                        }
                    }
                }
                Err(e) => {
                    problems.push(e.message);
                    break;
                }
            }
        }
        let st = self.state.lock();
        if live != st.live_rows {
            problems.push(format!(
                "row count {} but {} live records",
                st.live_rows, live
            ));
        }
        for (i, ix) in self.schema.indexes.iter().enumerate() {
            let entries: usize = st.indexes[i].values().map(Vec::len).sum();
            if entries != keys[i].len()
                || keys[i]
                    .iter()
                    .any(|(k, id)| !st.indexes[i].get(k).is_some_and(|v| v.contains(id)))
            {
                problems.push(format!("index {} does not match the data", ix.name));
            }
        }
        Ok(problems)
    }
}

/// True when the type is stored as a variable-length value.
pub fn has_variable_columns(schema: &TableSchema) -> bool {
    schema.columns.iter().any(|c| c.ty.is_variable())
}

/// FIXED cannot hold TEXT/BLOB (as in MyISAM, such tables are DYNAMIC).
pub fn effective_row_format(requested: Option<RowFormat>, schema: &TableSchema) -> RowFormat {
    let has_lob = schema
        .columns
        .iter()
        .any(|c| matches!(c.ty.kind, TypeKind::Text | TypeKind::Blob));
    match requested {
        Some(RowFormat::Fixed) if !has_lob => RowFormat::Fixed,
        Some(RowFormat::Fixed) => RowFormat::Dynamic,
        Some(f) => f,
        None if has_variable_columns(schema) => RowFormat::Dynamic,
        None => RowFormat::Fixed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::SqlType;
    use quarry_storage_api::{ColumnSchema, IndexSchema};

    fn schema(format: RowFormat) -> TableSchema {
        TableSchema {
            columns: vec![
                ColumnSchema {
                    name: "id".into(),
                    ty: SqlType::INT,
                    nullable: false,
                },
                ColumnSchema {
                    name: "v".into(),
                    ty: SqlType::varchar(100),
                    nullable: true,
                },
            ],
            indexes: vec![IndexSchema {
                name: "PRIMARY".into(),
                columns: vec![0],
                prefix: vec![0],
                unique: true,
                primary: true,
            }],
            row_format: format,
        }
    }

    fn scan_all(t: &dyn Table) -> Vec<Row> {
        let mut c = t
            .scan(&ScanRequest {
                batch_rows: 7,
                read_buffer: 4096,
            })
            .unwrap();
        let mut out = vec![];
        while let Some(b) = c.next_batch().unwrap() {
            out.extend(b.rows);
        }
        out
    }

    #[test]
    fn insert_update_delete_reuse_and_reopen() {
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            let dir =
                std::env::temp_dir().join(format!("quarry-row-{}-{format:?}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let path = TablePath::new(&dir, "t");
            let counters = Arc::new(HandlerCounters::default());
            RowEngine.create(&path, &schema(format)).unwrap();
            let t = RowEngine
                .open(&path, &schema(format), counters.clone())
                .unwrap();
            t.begin_bulk(0);
            let mut ids = vec![];
            for i in 0..5000 {
                ids.push(
                    t.insert(vec![
                        Value::Int(i),
                        Value::Str("x".repeat((i % 50) as usize)),
                    ])
                    .unwrap(),
                );
            }
            t.end_bulk().unwrap();
            let dup = t.insert(vec![Value::Int(7), Value::Null]).unwrap_err();
            assert_eq!(dup.code, 1062);
            t.delete(ids[10]).unwrap();
            let reused = t
                .insert(vec![Value::Int(-1), Value::Str("short".into())])
                .unwrap();
            assert_eq!(reused, ids[10], "a deleted slot is reused");
            let moved = t
                .update(ids[1], vec![Value::Int(1), Value::Str("y".repeat(90))])
                .unwrap();
            assert_eq!(t.fetch(&[moved]).unwrap()[0][1], Value::Str("y".repeat(90)));
            assert_eq!(
                t.index_range(
                    0,
                    Bound::Included(&[Value::Int(1)]),
                    Bound::Included(&[Value::Int(1)])
                )
                .unwrap(),
                vec![moved]
            );
            assert!(t.check().unwrap().is_empty());
            let before = scan_all(&*t);
            assert_eq!(before.len(), 5000);
            t.sync().unwrap();
            drop(t);
            let t = RowEngine.open(&path, &schema(format), counters).unwrap();
            assert_eq!(scan_all(&*t), before);
            assert_eq!(
                t.index_range(
                    0,
                    Bound::Included(&[Value::Int(100)]),
                    Bound::Excluded(&[Value::Int(103)])
                )
                .unwrap()
                .len(),
                3
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn corruption_is_detected_not_returned() {
        let dir = std::env::temp_dir().join(format!("quarry-row-corrupt-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = TablePath::new(&dir, "t");
        RowEngine
            .create(&path, &schema(RowFormat::Dynamic))
            .unwrap();
        let t = RowEngine
            .open(&path, &schema(RowFormat::Dynamic), Arc::default())
            .unwrap();
        t.insert(vec![Value::Int(1), Value::Str("hello world".into())])
            .unwrap();
        t.sync().unwrap();
        drop(t);
        let f = OpenOptions::new()
            .write(true)
            .open(path.file("qrd"))
            .unwrap();
        f.write_all_at(b"J", HEADER_SIZE + REC_HDR as u64 + 4)
            .unwrap();
        let err = RowEngine
            .open(&path, &schema(RowFormat::Dynamic), Arc::default())
            .err()
            .unwrap();
        assert_eq!(err.code, 1034);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
