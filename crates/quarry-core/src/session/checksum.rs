//! CHECKSUM TABLE t, … [QUICK | EXTENDED]: MariaDB's number for the same rows, so a table
//! copied between Quarry and MariaDB can be compared by it.
//!
//! MariaDB sums, over the rows, the CRC-32 of each row laid out as its record: the null
//! bitmap (a reserved first bit unless the record is packed — a table with a VARCHAR,
//! VARBINARY, TEXT or BLOB column, or ROW_FORMAT=DYNAMIC — and the unused bits set), then
//! each non-NULL column: a variable-length one as its value's bytes, any other as its
//! fixed-width storage (little-endian integers and floats, the binary DECIMAL, DATE in 3
//! bytes, DATETIME / TIMESTAMP / TIME in their big-endian packed forms, CHAR padded with
//! spaces to its width in bytes). QUICK asks for a checksum kept live (`CHECKSUM=1`),
//! which Quarry does not keep: NULL, as MariaDB answers for a table without one.
//!
//! Owns: that layout and the statement. Must not touch: how rows are read (a scan of the
//! statement's snapshot, as a SELECT).

use quarry_catalog::{ColumnDef, TableEntry};
use quarry_common::charset::Charset;
use quarry_common::crc32::crc32;
use quarry_common::{Error, Result, Row, SqlType, TypeKind, Value};
use quarry_executor::plan::Plan;
use quarry_storage_api::RowFormat;

use super::{num, text, Output, Session, StmtSink};

impl Session {
    pub(super) fn checksum_tables(
        &mut self,
        tables: &[(Option<String>, String)],
        quick: bool,
        sink: &StmtSink,
    ) -> Result<Output> {
        let mut rows = vec![];
        for (d, t) in tables {
            let db = self.require_db(d.as_deref())?;
            let name = Value::Str(format!("{db}.{t}"));
            let entry = match self.db.catalog.table(&db, t) {
                Ok(e) => e,
                Err(e) => {
                    // The table's row says NULL; the reason is a condition (as MariaDB).
                    self.warnings.push(("Error".into(), e.code, e.message));
                    rows.push(vec![name, Value::Null]);
                    continue;
                }
            };
            let sum = if quick {
                Value::Null
            } else {
                Value::Int(self.table_checksum(&entry, sink)? as i64)
            };
            rows.push(vec![name, sum]);
        }
        Ok(Output::Rows {
            columns: vec![text("Table", 128), num("Checksum")],
            rows,
        })
    }

    fn table_checksum(&self, entry: &std::sync::Arc<TableEntry>, sink: &StmtSink) -> Result<u32> {
        let layout = Layout::of(&entry.def.columns, entry.def.row_format);
        let plan = Plan::scan(entry.clone());
        self.exec_ctx(vec![], sink, |ctx| {
            let mut sum = 0u32;
            let mut buf = Vec::new();
            quarry_executor::exec::run(&plan, ctx, &mut |batch| {
                for r in &batch {
                    sum = sum.wrapping_add(layout.row_crc(&entry.def.columns, r, &mut buf)?);
                }
                Ok(true)
            })?;
            Ok(sum)
        })
    }
}

/// The record layout's parts that do not depend on the row.
struct Layout {
    /// Bytes of the null bitmap.
    null_bytes: usize,
    /// Bits set in the bitmap's last byte whatever the row (those no column uses).
    unused_mask: u8,
    /// Not packed: the bitmap's first bit is reserved (and set).
    reserved_bit: bool,
}

impl Layout {
    fn of(columns: &[ColumnDef], format: Option<RowFormat>) -> Layout {
        let packed = format == Some(RowFormat::Dynamic)
            || columns.iter().any(|c| {
                matches!(
                    c.ty.kind,
                    TypeKind::VarChar | TypeKind::VarBinary | TypeKind::Text | TypeKind::Blob
                )
            });
        let bits = columns.iter().filter(|c| c.nullable).count() + usize::from(!packed);
        let last = bits % 8;
        Layout {
            null_bytes: bits.div_ceil(8),
            unused_mask: if last == 0 { 0 } else { !((1u8 << last) - 1) },
            reserved_bit: !packed,
        }
    }

    fn row_crc(&self, columns: &[ColumnDef], row: &Row, buf: &mut Vec<u8>) -> Result<u32> {
        buf.clear();
        buf.resize(self.null_bytes, 0);
        let mut bit = usize::from(self.reserved_bit);
        for (c, v) in columns.iter().zip(row) {
            if c.nullable {
                if v.is_null() {
                    buf[bit / 8] |= 1 << (bit % 8);
                }
                bit += 1;
            }
        }
        if let Some(last) = buf.last_mut() {
            *last |= self.unused_mask;
        }
        if self.reserved_bit {
            buf[0] |= 1;
        }
        for (c, v) in columns.iter().zip(row) {
            if !v.is_null() {
                field_bytes(c.ty, v, buf)?;
            }
        }
        Ok(crc32(0, buf))
    }
}

/// One non-NULL value as MariaDB's record holds it (variable-length ones: their bytes).
fn field_bytes(ty: SqlType, v: &Value, out: &mut Vec<u8>) -> Result<()> {
    use TypeKind as K;
    let int = |out: &mut Vec<u8>, n: usize| out.extend_from_slice(&v.to_i64().to_le_bytes()[..n]);
    match ty.kind {
        K::TinyInt => int(out, 1),
        K::SmallInt => int(out, 2),
        K::MediumInt => int(out, 3),
        K::Int => int(out, 4),
        K::BigInt => match v {
            Value::UInt(u) => out.extend_from_slice(&u.to_le_bytes()),
            _ => int(out, 8),
        },
        K::Year => {
            let y = v.to_i64();
            out.push(if y == 0 { 0 } else { (y - 1900) as u8 });
        }
        K::Float => out.extend_from_slice(&(v.to_f64() as f32).to_le_bytes()),
        K::Double => out.extend_from_slice(&v.to_f64().to_le_bytes()),
        K::Decimal => decimal_bytes(&v.as_str_lossy(), ty.len, ty.scale, out),
        K::Char | K::Binary => {
            let cs = charset(ty);
            let (width, pad) = match cs {
                Charset::Binary => (ty.len as usize, 0),
                _ => (ty.len as usize * ty.coll.max_bytes_per_char(), b' '),
            };
            let start = out.len();
            push_value_bytes(v, cs, out);
            out.resize(start + width, pad);
        }
        K::VarChar | K::VarBinary | K::Text | K::Blob => push_value_bytes(v, charset(ty), out),
        K::Date => {
            let Value::Date(d) = v else {
                return Err(Error::internal("CHECKSUM: a DATE column holds no date"));
            };
            let n = d.year as u32 * 512 + d.month as u32 * 32 + d.day as u32;
            out.extend_from_slice(&n.to_le_bytes()[..3]);
        }
        K::DateTime => {
            let Value::DateTime(dt) = v else {
                return Err(Error::internal("CHECKSUM: a DATETIME column holds none"));
            };
            let ymd = ((dt.date.year as u64 * 13 + dt.date.month as u64) << 5) | dt.date.day as u64;
            let hms = ((dt.hour as u64) << 12) | ((dt.minute as u64) << 6) | dt.second as u64;
            let packed = ((ymd << 17) | hms) + 0x80_0000_0000;
            out.extend_from_slice(&packed.to_be_bytes()[3..]);
            fraction(dt.micro as i64, ty.scale, out);
        }
        K::Timestamp => {
            let Value::DateTime(dt) = v else {
                return Err(Error::internal("CHECKSUM: a TIMESTAMP column holds none"));
            };
            // Seconds since the epoch of the value as stored (Quarry keeps TIMESTAMPs
            // as written, in the server's UTC).
            let secs = dt.unix_micros().div_euclid(1_000_000);
            out.extend_from_slice(&(secs as u32).to_be_bytes());
            fraction(dt.micro as i64, ty.scale, out);
        }
        K::Time => {
            let micros = match v {
                Value::Time(t) => *t,
                _ => return Err(Error::internal("CHECKSUM: a TIME column holds none")),
            };
            time_bytes(micros, ty.scale, out);
        }
        K::Null => {}
    }
    Ok(())
}

fn charset(ty: SqlType) -> Charset {
    if ty.is_binary() {
        return Charset::Binary;
    }
    Charset::named(ty.coll.charset()).unwrap_or(Charset::Utf8)
}

/// The value's bytes in the column's set, onto `out` (no copy of its own per value).
fn push_value_bytes(v: &Value, cs: Charset, out: &mut Vec<u8>) {
    match v {
        Value::Bytes(b) => out.extend_from_slice(b),
        other => out.extend_from_slice(&cs.encode(&other.as_str_lossy())),
    }
}

/// Fractional seconds after a DATETIME or TIMESTAMP: 1 byte for 1–2 digits, 2 for 3–4,
/// 3 for 5–6, big-endian, in units of the last byte's digits.
fn fraction(micros: i64, scale: u8, out: &mut Vec<u8>) {
    let n = (scale as usize).div_ceil(2);
    if n == 0 {
        return;
    }
    let v = micros / 10i64.pow(6 - 2 * n as u32);
    out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
}

/// TIME: hours, minutes and seconds packed as `h << 12 | m << 6 | s` shifted 24 bits over
/// the microseconds, negated for a negative time; stored from an offset of 2^23 (whole
/// part) and, with 5–6 digits, of 2^47 over all 6 bytes. With 1–4 digits the whole part
/// is the packed value shifted down (rounding down) and the fraction its C remainder
/// (taking the sign of the value), as MariaDB computes them.
fn time_bytes(micros: i64, scale: u8, out: &mut Vec<u8>) {
    let neg = micros < 0;
    let m = micros.unsigned_abs() as i64;
    let (secs, frac) = (m / 1_000_000, m % 1_000_000);
    let hms = ((secs / 3600) << 12) | (((secs / 60) % 60) << 6) | (secs % 60);
    let mut packed = (hms << 24) + frac;
    if neg {
        packed = -packed;
    }
    let n = (scale as usize).div_ceil(2);
    if n == 3 {
        out.extend_from_slice(&(packed + 0x8000_0000_0000).to_be_bytes()[2..]);
        return;
    }
    let whole = (packed >> 24) + 0x80_0000;
    out.extend_from_slice(&whole.to_be_bytes()[5..]);
    if n > 0 {
        let rem = packed % (1 << 24);
        let v = rem / 10i64.pow(6 - 2 * n as u32);
        out.extend_from_slice(&v.to_be_bytes()[8 - n..]);
    }
}

/// MariaDB's binary DECIMAL(p, s): the integer digits (p - s of them) from the left in
/// groups of nine, a shorter group first, and the fraction's from the point, a shorter
/// group last; each group big-endian in the bytes its digits need; negative: every byte
/// inverted; then the first byte's top bit flipped.
fn decimal_bytes(text: &str, precision: u32, scale: u8, out: &mut Vec<u8>) {
    const BYTES: [usize; 10] = [0, 1, 1, 2, 2, 3, 3, 4, 4, 4];
    let neg = text.starts_with('-');
    let t = text.trim_start_matches(['-', '+']);
    let (ip, fp) = t.split_once('.').unwrap_or((t, ""));
    let scale = scale as usize;
    let intg = (precision as usize).saturating_sub(scale);
    let ip = ip.trim_start_matches('0');
    let ip: String = format!("{ip:0>intg$}");
    let ip = &ip[ip.len() - intg..];
    let fp: String = format!("{fp:0<scale$}");
    let fp = &fp[..scale];
    let start = out.len();
    let group = |digits: &str, out: &mut Vec<u8>| {
        let n = BYTES[digits.len()];
        let v: u32 = digits.parse().unwrap_or(0);
        out.extend_from_slice(&v.to_be_bytes()[4 - n..]);
    };
    let lead = intg % 9;
    if lead > 0 {
        group(&ip[..lead], out);
    }
    for k in (lead..intg).step_by(9) {
        group(&ip[k..k + 9], out);
    }
    let full = scale - scale % 9;
    for k in (0..full).step_by(9) {
        group(&fp[k..k + 9], out);
    }
    if !scale.is_multiple_of(9) {
        group(&fp[full..], out);
    }
    if neg {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
    if let Some(b) = out.get_mut(start) {
        *b ^= 0x80;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Byte forms checked against MariaDB's CHECKSUM TABLE of one-column tables.
    #[test]
    fn decimal_and_time_forms() {
        let dec = |t: &str, p, s| {
            let mut v = vec![];
            decimal_bytes(t, p, s, &mut v);
            v
        };
        assert_eq!(dec("12.34", 10, 2), [0x80, 0, 0, 0x0C, 0x22]);
        assert_eq!(dec("-5", 5, 0), [0x7F, 0xFF, 0xFA]);
        let time = |us, s| {
            let mut v = vec![];
            time_bytes(us, s, &mut v);
            v
        };
        // '01:02:03.45' and '-01:02:03.45' as TIME(2).
        assert_eq!(time(3_723_450_000, 2), [0x80, 0x10, 0x83, 45]);
        assert_eq!(time(-3_723_450_000, 2), [0x7F, 0xEF, 0x7C, 0xD3]);
    }
}
