//! Sequential reads of a data file's records in large blocks (rule 1: never a `read()`
//! per record), with each record's checksum verified. Owns the record framing only;
//! decoding payloads into rows is `codec`'s, and what a torn tail means is the opener's.

use crate::{RowTable, DELETED, LIVE, REC_HDR};
use quarry_common::{Error, Result};
use quarry_storage_api::HandlerCounters;

/// (offset, status, slot size, used payload) of one record.
pub(crate) type RawRecord<'a> = (u64, u8, u32, &'a [u8]);

/// Sequential reader over the record area in large blocks.
pub(crate) struct RecordReader<'a> {
    pub(crate) table: &'a RowTable,
    pub(crate) pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    pub(crate) block: usize,
    /// Set by the opener: a deleted last record cut short by the end of the file ends
    /// the records (its offset goes to `torn_tail`) instead of being an error.
    pub(crate) stop_at_torn_tail: bool,
    pub(crate) torn_tail: Option<u64>,
}

impl<'a> RecordReader<'a> {
    pub(crate) fn new(table: &'a RowTable, pos: u64, end: u64, block: usize) -> RecordReader<'a> {
        RecordReader {
            table,
            pos,
            end,
            buf: Vec::new(),
            buf_start: pos,
            block: block.max(256),
            stop_at_torn_tail: false,
            torn_tail: None,
        }
    }

    /// The record at `pos` is deleted and runs past the end of the file.
    fn is_torn_tail(&mut self, need: usize) -> Result<bool> {
        if !self.stop_at_torn_tail || self.pos + need as u64 <= self.end {
            return Ok(false);
        }
        let mut status = [0u8];
        self.table.file.read_exact_at(&mut status, self.pos)?;
        if status[0] != DELETED {
            return Ok(false);
        }
        self.torn_tail = Some(self.pos);
        Ok(true)
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
        self.table.file.read_exact_at(&mut self.buf, self.pos)?;
        HandlerCounters::add(&self.table.counters.io_read_calls, 1);
        HandlerCounters::add(&self.table.counters.io_read_bytes, len as u64);
        self.buf_start = self.pos;
        Ok(())
    }

    pub(crate) fn next_record(&mut self) -> Result<Option<RawRecord<'_>>> {
        if self.pos >= self.end || self.is_torn_tail(REC_HDR)? {
            return Ok(None);
        }
        self.ensure(REC_HDR)?;
        let at = (self.pos - self.buf_start) as usize;
        let h = &self.buf[at..at + REC_HDR];
        let status = h[0];
        let slot = u32::from_le_bytes(h[1..5].try_into().unwrap());
        let len = u32::from_le_bytes(h[5..9].try_into().unwrap()) as usize;
        if (status != LIVE && status != DELETED) || len > slot as usize {
            return Err(Error::corrupt(format!(
                "{} at offset {}",
                self.table.name, self.pos
            )));
        }
        let off = self.pos;
        if self.is_torn_tail(REC_HDR + slot as usize)? {
            return Ok(None);
        }
        let total = REC_HDR + slot as usize;
        let mut tries = 0u32;
        let (at, status, len) = loop {
            self.ensure(total)?;
            let at = (self.pos - self.buf_start) as usize;
            let h = &self.buf[at..at + REC_HDR];
            let status = h[0];
            let len = u32::from_le_bytes(h[5..9].try_into().unwrap()) as usize;
            let crc = u32::from_le_bytes(h[9..13].try_into().unwrap());
            let framed = (status == LIVE || status == DELETED) && len <= slot as usize;
            if framed
                && (status != LIVE
                    || quarry_common::crc32c::crc32c(&self.buf[at + REC_HDR..at + REC_HDR + len])
                        == crc)
            {
                break (at, status, len);
            }
            // A scan takes no lock: an UPDATE may have been rewriting this record in
            // place while its block was read. Read it again before calling it corrupt
            // (sysbench's read-write mix met this once its scans ran beside updates).
            if tries == 4 {
                return Err(Error::corrupt(format!(
                    "{} (checksum mismatch at offset {off})",
                    self.table.name
                )));
            }
            tries += 1;
            std::thread::sleep(std::time::Duration::from_micros(50 << tries));
            self.buf.clear();
            self.buf_start = off;
        };
        self.pos = off + total as u64;
        Ok(Some((
            off,
            status,
            slot,
            &self.buf[at + REC_HDR..at + REC_HDR + len],
        )))
    }
}
