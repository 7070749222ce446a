//! REPAIR TABLE's reading of a damaged data file: every record that still passes its
//! checksum and decodes, past those that do not. A record whose checksum fails is
//! passed over by its slot size when a readable record (or the end) follows there;
//! otherwise its header is not trusted either, and the next readable record is looked
//! for byte by byte (a live record's header and checksum must agree, so a payload's
//! bytes are not taken for one). Reads the data file directly, the table closed (one too
//! damaged to open included), through the file system: whatever the log held for it was
//! written there when the server started or the table was last flushed.

use std::os::unix::fs::FileExt;

use quarry_common::{Error, Result, Row};
use quarry_storage_api::{Salvaged, TablePath, TableSchema};

use crate::codec::decode;
use crate::{DELETED, HEADER_SIZE, LIVE, REC_HDR};

/// Bytes read from the file at a time.
const BLOCK: usize = 1 << 20;

/// A window over the data file, up to `end`.
struct Window<'a> {
    file: &'a std::fs::File,
    end: u64,
    buf: Vec<u8>,
    at: u64,
}

impl Window<'_> {
    /// `[pos, pos + n)`, or None when it runs past the end.
    fn get(&mut self, pos: u64, n: usize) -> Result<Option<&[u8]>> {
        if pos + n as u64 > self.end {
            return Ok(None);
        }
        if pos < self.at || pos + n as u64 > self.at + self.buf.len() as u64 {
            let len = (n.max(BLOCK) as u64).min(self.end - pos) as usize;
            self.buf.resize(len, 0);
            self.file
                .read_exact_at(&mut self.buf, pos)
                .map_err(|e| Error::io("data file", e))?;
            self.at = pos;
        }
        let o = (pos - self.at) as usize;
        Ok(Some(&self.buf[o..o + n]))
    }

    /// The record at `pos` if its framing holds (and, live, its checksum): its status,
    /// slot size and payload.
    fn record(&mut self, pos: u64) -> Result<Option<(u8, u64, Vec<u8>)>> {
        let Some(h) = self.get(pos, REC_HDR)? else {
            return Ok(None);
        };
        let status = h[0];
        let slot = u32::from_le_bytes(h[1..5].try_into().unwrap()) as u64;
        let len = u32::from_le_bytes(h[5..9].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(h[9..13].try_into().unwrap());
        if (status != LIVE && status != DELETED) || len as u64 > slot {
            return Ok(None);
        }
        if pos + REC_HDR as u64 + slot > self.end {
            return Ok(None);
        }
        if status == DELETED {
            return Ok(Some((status, slot, vec![])));
        }
        let Some(payload) = self.get(pos + REC_HDR as u64, len)? else {
            return Ok(None);
        };
        if quarry_common::crc32c::crc32c(payload) != crc {
            return Ok(None);
        }
        Ok(Some((status, slot, payload.to_vec())))
    }

    /// Whether a readable live record, or the end, is at `pos`.
    fn readable_at(&mut self, pos: u64) -> Result<bool> {
        Ok(pos == self.end || matches!(self.record(pos)?, Some((LIVE, _, _))))
    }
}

/// Every row of the data file of `path` that can still be read, given to `each`.
pub(crate) fn salvage(
    path: &TablePath,
    schema: &TableSchema,
    each: &mut dyn FnMut(Row) -> Result<()>,
) -> Result<Salvaged> {
    let name = path.file("qrd");
    let file = std::fs::File::open(&name).map_err(|e| Error::io(name.display(), e))?;
    let end = file
        .metadata()
        .map_err(|e| Error::io(name.display(), e))?
        .len();
    let mut w = Window {
        file: &file,
        end,
        buf: vec![],
        at: 0,
    };
    let mut out = Salvaged::default();
    let mut pos = HEADER_SIZE;
    while pos < end {
        match w.record(pos)? {
            Some((status, slot, payload)) => {
                if status == LIVE {
                    match decode(&schema.columns, schema.row_format, &payload) {
                        Ok(row) => {
                            each(row)?;
                            out.rows += 1;
                        }
                        Err(_) => out.lost_records += 1,
                    }
                }
                pos += REC_HDR as u64 + slot;
            }
            None => {
                // A damaged live record: skip it by its slot when what follows reads.
                if let Some(h) = w.get(pos, REC_HDR)? {
                    let status = h[0];
                    let slot = u32::from_le_bytes(h[1..5].try_into().unwrap()) as u64;
                    let next = pos + REC_HDR as u64 + slot;
                    if status == LIVE && next <= end && w.readable_at(next)? {
                        out.lost_records += 1;
                        pos = next;
                        continue;
                    }
                }
                // Otherwise find the next readable live record.
                let from = pos;
                pos += 1;
                while pos < end && !matches!(w.record(pos)?, Some((LIVE, _, _))) {
                    pos += 1;
                }
                out.lost_records += 1;
                out.skipped_bytes += pos - from;
            }
        }
    }
    Ok(out)
}
