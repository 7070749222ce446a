//! The table's metadata file and its delta log, byte for byte.
//!
//! `table.meta` lists the segments (row ids, per column the chunk's place in its
//! `.column` file and its zone map) and each segment's delete vector. Without the
//! write-ahead log it is replaced whole (temporary file, fsync, rename, fsync of the
//! folder), the commit point of every merge, and `delta.<gen>.log` holds the row-wise
//! delta written since. With the log, `table.meta` is rewritten in place behind an
//! 8-byte tag and its length (`QRYCOLM2`), and one `delta.log` is rewritten from its start
//! at each merge; both are logged, so a transaction's merge commits or rolls back with
//! it. Delta records are inserts (the row in the row engine's DYNAMIC record format) and
//! deletes, each with its length, CRC32C and the metadata generation it belongs to:
//! reading stops at a torn record or one of another generation (left behind by a shorter
//! rewrite).

use std::path::Path;

use quarry_common::value::Mantissa;
use quarry_common::{Date, DateTime, Decimal, Error, Result, Value};
use quarry_storage::vfs::{read_full, Vfs};

use crate::chunk::Zone;
use crate::At;

const MAGIC: &[u8; 8] = b"QRYCOLM\0";
/// 2: text zone maps (min, max) under utf8mb4_general_ci's weights. Version 1 ordered
/// them case-folded only ('Ä' above 'Z'); they are recomputed when such a file is read.
pub(crate) const VERSION: u32 = 2;
/// The version whose text zone maps are in the old order.
pub(crate) const VERSION_CASE_ONLY: u32 = 1;

/// Where one chunk lives and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChunkMeta {
    pub off: u64,
    pub len: u32,
    pub zone: Zone,
}

/// Row ids of a segment's rows, ascending.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ids {
    /// `first`, `first + 1`, … (bulk loads).
    Dense(u64),
    List(Vec<u64>),
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Segment {
    pub rows: u32,
    pub ids: Ids,
    pub chunks: Vec<ChunkMeta>,
}

impl Segment {
    pub(crate) fn first_id(&self) -> u64 {
        match &self.ids {
            Ids::Dense(f) => *f,
            Ids::List(v) => v[0],
        }
    }
    pub(crate) fn last_id(&self) -> u64 {
        match &self.ids {
            Ids::Dense(f) => f + self.rows as u64 - 1,
            Ids::List(v) => *v.last().unwrap(),
        }
    }
    pub(crate) fn id(&self, i: usize) -> u64 {
        match &self.ids {
            Ids::Dense(f) => f + i as u64,
            Ids::List(v) => v[i],
        }
    }
    pub(crate) fn position(&self, id: u64) -> Option<usize> {
        match &self.ids {
            Ids::Dense(f) => (id >= *f && id < f + self.rows as u64).then(|| (id - f) as usize),
            Ids::List(v) => v.binary_search(&id).ok(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Meta {
    /// The version the file was written in (written back as the current one).
    pub version: u32,
    /// Generation: names the delta log that goes with this file.
    pub gen: u64,
    pub next_id: u64,
    /// Every id below is in a segment (or was deleted): the log's inserts below it are
    /// already merged.
    pub merged_upto: u64,
    pub columns: u32,
    pub segments: Vec<Segment>,
    /// Per segment: the positions of deleted rows, ascending.
    pub deleted: Vec<Vec<u32>>,
}

#[derive(Default)]
pub(crate) struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn bytes(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.buf.extend_from_slice(b);
    }
    pub fn value(&mut self, v: &Value) {
        match v {
            Value::Null => self.u8(0),
            Value::Int(i) => {
                self.u8(1);
                self.u64(*i as u64);
            }
            Value::UInt(u) => {
                self.u8(2);
                self.u64(*u);
            }
            Value::Double(f) => {
                self.u8(3);
                self.u64(f.to_bits());
            }
            // Tag 4 where the mantissa fits 128 bits (every value before DECIMAL(65)).
            Value::Decimal(d) => match d.mantissa.to_i128() {
                Some(m) => {
                    self.u8(4);
                    self.buf.extend_from_slice(&m.to_le_bytes());
                    self.u8(d.scale);
                }
                None => {
                    self.u8(10);
                    self.buf.extend_from_slice(&d.mantissa.to_le_bytes());
                    self.u8(d.scale);
                }
            },
            Value::Str(s) => {
                self.u8(5);
                self.bytes(s.as_bytes());
            }
            Value::Bytes(b) => {
                self.u8(6);
                self.bytes(b);
            }
            Value::Date(d) => {
                self.u8(7);
                self.buf.extend_from_slice(&d.year.to_le_bytes());
                self.u8(d.month);
                self.u8(d.day);
            }
            Value::DateTime(d) => {
                self.u8(8);
                self.u64(d.to_micros() as u64);
            }
            Value::Time(t) => {
                self.u8(9);
                self.u64(*t as u64);
            }
        }
    }
}

pub(crate) struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .buf
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| Error::corrupt("column table metadata truncated"))?;
        self.pos += n;
        Ok(s)
    }
    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
    pub fn value(&mut self) -> Result<Value> {
        Ok(match self.u8()? {
            0 => Value::Null,
            1 => Value::Int(self.u64()? as i64),
            2 => Value::UInt(self.u64()?),
            3 => Value::Double(f64::from_bits(self.u64()?)),
            4 => {
                let m = i128::from_le_bytes(self.take(16)?.try_into().unwrap());
                Value::Decimal(Decimal::new(m, self.u8()?))
            }
            5 => Value::Str(
                String::from_utf8(self.bytes()?.to_vec())
                    .map_err(|_| Error::corrupt("column table metadata: utf-8"))?,
            ),
            6 => Value::Bytes(self.bytes()?.to_vec()),
            7 => {
                let b = self.take(4)?;
                Value::Date(Date {
                    year: u16::from_le_bytes([b[0], b[1]]),
                    month: b[2],
                    day: b[3],
                })
            }
            8 => Value::DateTime(DateTime::from_micros(self.u64()? as i64)),
            9 => Value::Time(self.u64()? as i64),
            10 => {
                let m = Mantissa::from_le_bytes(self.take(32)?.try_into().unwrap());
                Value::Decimal(Decimal::new(m, self.u8()?))
            }
            t => return Err(Error::corrupt(format!("column table metadata: tag {t}"))),
        })
    }
}

impl Meta {
    pub(crate) fn empty(columns: usize) -> Meta {
        Meta {
            version: VERSION,
            gen: 0,
            next_id: 1,
            merged_upto: 1,
            columns: columns as u32,
            segments: vec![],
            deleted: vec![],
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.buf.extend_from_slice(MAGIC);
        w.u32(VERSION);
        w.u64(self.gen);
        w.u64(self.next_id);
        w.u64(self.merged_upto);
        w.u32(self.columns);
        w.u32(self.segments.len() as u32);
        for (s, del) in self.segments.iter().zip(&self.deleted) {
            w.u32(s.rows);
            match &s.ids {
                Ids::Dense(f) => {
                    w.u8(0);
                    w.u64(*f);
                }
                Ids::List(v) => {
                    w.u8(1);
                    for id in v {
                        w.u64(*id);
                    }
                }
            }
            for c in &s.chunks {
                w.u64(c.off);
                w.u32(c.len);
                w.u32(c.zone.nulls);
                w.value(&c.zone.min);
                w.value(&c.zone.max);
            }
            w.u32(del.len() as u32);
            for d in del {
                w.u32(*d);
            }
        }
        let crc = crc32c::crc32c(&w.buf);
        w.u32(crc);
        w.buf
    }

    pub(crate) fn from_bytes(buf: &[u8]) -> Result<Meta> {
        let bad = || Error::corrupt("column table metadata (table.meta)");
        if buf.len() < 12 || &buf[..8] != MAGIC {
            return Err(bad());
        }
        let (body, crc) = buf.split_at(buf.len() - 4);
        if crc32c::crc32c(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(bad());
        }
        let mut r = Reader { buf: body, pos: 8 };
        let version = r.u32()?;
        if version != VERSION && version != VERSION_CASE_ONLY {
            return Err(Error::corrupt("column table metadata: unknown version"));
        }
        let gen = r.u64()?;
        let next_id = r.u64()?;
        let merged_upto = r.u64()?;
        let columns = r.u32()?;
        let n = r.u32()? as usize;
        let mut segments = Vec::with_capacity(n);
        let mut deleted = Vec::with_capacity(n);
        for _ in 0..n {
            let rows = r.u32()?;
            if rows == 0 {
                return Err(bad());
            }
            let ids = match r.u8()? {
                0 => Ids::Dense(r.u64()?),
                _ => Ids::List((0..rows).map(|_| r.u64()).collect::<Result<_>>()?),
            };
            let mut chunks = Vec::with_capacity(columns as usize);
            for _ in 0..columns {
                let off = r.u64()?;
                let len = r.u32()?;
                let nulls = r.u32()?;
                let min = r.value()?;
                let max = r.value()?;
                chunks.push(ChunkMeta {
                    off,
                    len,
                    zone: Zone { min, max, nulls },
                });
            }
            let nd = r.u32()? as usize;
            let del: Vec<u32> = (0..nd).map(|_| r.u32()).collect::<Result<_>>()?;
            if del.iter().any(|&d| d >= rows) {
                return Err(bad());
            }
            segments.push(Segment { rows, ids, chunks });
            deleted.push(del);
        }
        Ok(Meta {
            version,
            gen,
            next_id,
            merged_upto,
            columns,
            segments,
            deleted,
        })
    }

    /// Replace the metadata file durably: the commit point of a merge.
    pub(crate) fn store(&self, vfs: &dyn Vfs, dir: &Path) -> Result<()> {
        let tmp = dir.join("table.meta.tmp");
        let dst = dir.join("table.meta");
        {
            let f = vfs.open(&tmp, true).at(tmp.display())?;
            f.set_len(0).at(tmp.display())?;
            f.write_at(&self.to_bytes(), 0).at(tmp.display())?;
            f.sync().at(tmp.display())?;
        }
        vfs.rename(&tmp, &dst).at(dst.display())?;
        vfs.sync_dir(dir).at(dir.display())?;
        Ok(())
    }

    pub(crate) fn load(vfs: &dyn Vfs, dir: &Path) -> Result<Meta> {
        let path = dir.join("table.meta");
        let f = vfs.open(&path, false).at(path.display())?;
        let mut buf = vec![0u8; f.len().at(path.display())? as usize];
        let n = read_full(&*f, &mut buf, 0).at(path.display())?;
        buf.truncate(n);
        Meta::from_stored(&buf)
    }

    /// The bytes written in place (with the log): tag, length, metadata.
    pub(crate) fn to_stored(&self) -> Vec<u8> {
        let body = self.to_bytes();
        let mut out = Vec::with_capacity(16 + body.len());
        out.extend_from_slice(STORED_TAG);
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// Either form of the file: written whole, or in place behind its tag and length
    /// (bytes after it are an older, longer version's).
    pub(crate) fn from_stored(buf: &[u8]) -> Result<Meta> {
        if buf.len() >= 16 && &buf[..8] == STORED_TAG {
            let len = u64::from_le_bytes(buf[8..16].try_into().unwrap()) as usize;
            let body = buf
                .get(16..16 + len)
                .ok_or_else(|| Error::corrupt("column table metadata (table.meta length)"))?;
            return Meta::from_bytes(body);
        }
        Meta::from_bytes(buf)
    }
}

const STORED_TAG: &[u8; 8] = b"QRYCOLM2";

pub(crate) const LOG_INSERT: u8 = 1;
pub(crate) const LOG_DELETE: u8 = 2;

/// Append one log record of metadata generation `gen`.
pub(crate) fn log_record(out: &mut Vec<u8>, op: u8, id: u64, gen: u64, payload: &[u8]) {
    let len = 17 + payload.len();
    let start = out.len();
    out.extend_from_slice(&(len as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.push(op);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&gen.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// One delta log record: operation, row id, payload.
pub(crate) type LogRecord<'a> = (u8, u64, &'a [u8]);

/// The log's records of generation `gen` up to the first torn or corrupt one or one of
/// another generation, and the length they cover.
pub(crate) fn log_records(buf: &[u8], gen: u64) -> (Vec<LogRecord<'_>>, usize) {
    let mut out = vec![];
    let mut pos = 0;
    while pos + 8 <= buf.len() {
        let len = u32::from_le_bytes(buf[pos..pos + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(buf[pos + 4..pos + 8].try_into().unwrap());
        let Some(body) = buf.get(pos + 8..pos + 8 + len) else {
            break;
        };
        if len < 17 || crc32c::crc32c(body) != crc {
            break;
        }
        let id = u64::from_le_bytes(body[1..9].try_into().unwrap());
        if u64::from_le_bytes(body[9..17].try_into().unwrap()) != gen {
            break;
        }
        out.push((body[0], id, &body[17..]));
        pos += 8 + len;
    }
    (out, pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_and_rejects_damage() {
        let m = Meta {
            version: VERSION,
            gen: 3,
            next_id: 900,
            merged_upto: 700,
            columns: 1,
            segments: vec![Segment {
                rows: 3,
                ids: Ids::List(vec![5, 9, 11]),
                chunks: vec![ChunkMeta {
                    off: 4096,
                    len: 77,
                    zone: Zone {
                        // Tag 10: a mantissa past 128 bits.
                        min: Value::Decimal(Decimal::parse(&"9".repeat(60)).unwrap()),
                        max: Value::Decimal(Decimal::new(-5, 1)),
                        nulls: 1,
                    },
                }],
            }],
            deleted: vec![vec![0, 2]],
        };
        let b = m.to_bytes();
        assert_eq!(Meta::from_bytes(&b).unwrap(), m);
        for i in [0, 9, b.len() / 2, b.len() - 1] {
            let mut d = b.clone();
            d[i] ^= 0x40;
            assert!(Meta::from_bytes(&d).is_err(), "flip at {i}");
        }
        assert!(Meta::from_bytes(&b[..b.len() - 3]).is_err());
    }

    #[test]
    fn log_stops_at_a_torn_record() {
        let mut buf = vec![];
        log_record(&mut buf, LOG_INSERT, 7, 4, b"row");
        log_record(&mut buf, LOG_DELETE, 3, 4, b"");
        let whole = buf.len();
        log_record(&mut buf, LOG_INSERT, 8, 4, b"another row");
        let (recs, used) = log_records(&buf[..buf.len() - 2], 4);
        assert_eq!(used, whole);
        assert_eq!(
            recs,
            vec![(LOG_INSERT, 7, &b"row"[..]), (LOG_DELETE, 3, &b""[..])]
        );
        buf[whole + 10] ^= 1;
        assert_eq!(log_records(&buf, 4).0.len(), 2);
        // A record of an older generation ends the log (a shorter rewrite left it).
        let mut older = vec![];
        log_record(&mut older, LOG_INSERT, 9, 5, b"new");
        log_record(&mut older, LOG_INSERT, 1, 4, b"old");
        assert_eq!(log_records(&older, 5).0, vec![(LOG_INSERT, 9, &b"new"[..])]);
    }

    #[test]
    fn metadata_in_place_ignores_an_older_longer_tail() {
        let mut m = Meta::empty(2);
        m.gen = 3;
        let mut stored = m.to_stored();
        let longer = stored.clone();
        m.gen = 4;
        stored = m.to_stored();
        let mut file = longer.clone();
        file.extend_from_slice(b"junk of an older version");
        file[..stored.len()].copy_from_slice(&stored);
        assert_eq!(Meta::from_stored(&file).unwrap().gen, 4);
        assert_eq!(Meta::from_stored(&m.to_bytes()).unwrap().gen, 4);
    }
}
