//! Rows as compact bytes: what is held in memory for a long time (before-images of
//! changed rows, undo records) or written to a spill file (sort runs, aggregate spills).
//!
//! A `Row` spends 48 bytes a value plus its heap parts; packed, a small integer takes 2
//! bytes and a string its length plus 1 or 2. The bytes live only in this process (spill
//! files are unlinked temporary files): the encoding may change between versions.
//!
//! Owns the encoding only; must not touch files or know about tables.

use std::sync::Arc;

use crate::decimal::Mantissa;
use crate::value::{Date, DateTime};
use crate::{Decimal, Error, Result, Row, Value};

const NULL: u8 = 0;
const INT: u8 = 1;
const UINT: u8 = 2;
const DOUBLE: u8 = 3;
const DECIMAL: u8 = 4;
const STR: u8 = 5;
const BYTES: u8 = 6;
const DATE: u8 = 7;
const DATETIME: u8 = 8;
const TIME: u8 = 9;

/// One row's values, packed. Clones share the bytes: an UPDATE's undo record and the
/// row's earlier version are one allocation.
#[derive(Clone, PartialEq, Eq)]
pub struct PackedRow(Arc<[u8]>);

impl PackedRow {
    pub fn pack(row: &[Value]) -> PackedRow {
        let mut out = Vec::with_capacity(row.len() * 3);
        put_row(row, &mut out);
        PackedRow(out.into())
    }

    pub fn unpack(&self) -> Row {
        get_row(&self.0, &mut 0).expect("a packed row decodes: it was packed here")
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// Bytes held (for memory accounting).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Debug for PackedRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.unpack().fmt(f)
    }
}

impl From<&Row> for PackedRow {
    fn from(r: &Row) -> PackedRow {
        PackedRow::pack(r)
    }
}

/// A row: its value count, then each value.
pub fn put_row(row: &[Value], out: &mut Vec<u8>) {
    put_varint(row.len() as u64, out);
    for v in row {
        put_value(v, out);
    }
}

pub fn get_row(b: &[u8], pos: &mut usize) -> Result<Row> {
    let n = get_varint(b, pos)? as usize;
    // Each value takes at least one byte: a count past the bytes left is damage.
    if n > b.len().saturating_sub(*pos) {
        return Err(truncated());
    }
    (0..n).map(|_| get_value(b, pos)).collect()
}

pub fn put_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Int(i) => {
            out.push(INT);
            put_varint(zigzag(*i), out);
        }
        Value::UInt(u) => {
            out.push(UINT);
            put_varint(*u, out);
        }
        Value::Double(d) => {
            out.push(DOUBLE);
            out.extend_from_slice(&d.to_le_bytes());
        }
        Value::Decimal(d) => {
            out.push(DECIMAL);
            out.push(d.scale);
            // Two's complement, little-endian, without the top bytes that only repeat
            // the sign: a 10-digit value takes 5 bytes, not 32.
            let b = d.mantissa.to_le_bytes();
            let fill = if b[31] & 0x80 != 0 { 0xFF } else { 0 };
            let mut n = 32;
            while n > 1 && b[n - 1] == fill && (b[n - 2] & 0x80) == (fill & 0x80) {
                n -= 1;
            }
            out.push(n as u8);
            out.extend_from_slice(&b[..n]);
        }
        Value::Str(s) => {
            out.push(STR);
            put_varint(s.len() as u64, out);
            out.extend_from_slice(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(BYTES);
            put_varint(b.len() as u64, out);
            out.extend_from_slice(b);
        }
        Value::Date(d) => {
            out.push(DATE);
            out.extend_from_slice(&d.year.to_le_bytes());
            out.extend_from_slice(&[d.month, d.day]);
        }
        Value::DateTime(d) => {
            out.push(DATETIME);
            put_varint(zigzag(d.to_micros()), out);
        }
        Value::Time(t) => {
            out.push(TIME);
            put_varint(zigzag(*t), out);
        }
    }
}

pub fn get_value(b: &[u8], pos: &mut usize) -> Result<Value> {
    let tag = take(b, pos, 1)?[0];
    Ok(match tag {
        NULL => Value::Null,
        INT => Value::Int(unzigzag(get_varint(b, pos)?)),
        UINT => Value::UInt(get_varint(b, pos)?),
        DOUBLE => Value::Double(f64::from_le_bytes(take(b, pos, 8)?.try_into().unwrap())),
        DECIMAL => {
            let scale = take(b, pos, 1)?[0];
            let n = take(b, pos, 1)?[0] as usize;
            if !(1..=32).contains(&n) {
                return Err(Error::internal("packed decimal width"));
            }
            let part = take(b, pos, n)?;
            let fill = if part[n - 1] & 0x80 != 0 { 0xFF } else { 0 };
            let mut full = [fill; 32];
            full[..n].copy_from_slice(part);
            Value::Decimal(Decimal::new(Mantissa::from_le_bytes(full), scale))
        }
        STR | BYTES => {
            let n = get_varint(b, pos)? as usize;
            let raw = take(b, pos, n)?.to_vec();
            if tag == STR {
                Value::Str(String::from_utf8(raw).map_err(|_| Error::internal("packed utf-8"))?)
            } else {
                Value::Bytes(raw)
            }
        }
        DATE => {
            let x = take(b, pos, 4)?;
            Value::Date(Date {
                year: u16::from_le_bytes([x[0], x[1]]),
                month: x[2],
                day: x[3],
            })
        }
        DATETIME => Value::DateTime(DateTime::from_micros(unzigzag(get_varint(b, pos)?))),
        TIME => Value::Time(unzigzag(get_varint(b, pos)?)),
        _ => return Err(Error::internal("packed value tag")),
    })
}

fn truncated() -> Error {
    Error::internal("packed row truncated")
}

fn take<'a>(b: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8]> {
    let s = b.get(*pos..pos.saturating_add(n)).ok_or_else(truncated)?;
    *pos += n;
    Ok(s)
}

fn zigzag(i: i64) -> u64 {
    ((i << 1) ^ (i >> 63)) as u64
}

fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// LEB128: 7 bits a byte, low first.
pub fn put_varint(mut u: u64, out: &mut Vec<u8>) {
    while u >= 0x80 {
        out.push(u as u8 | 0x80);
        u >>= 7;
    }
    out.push(u as u8);
}

pub fn get_varint(b: &[u8], pos: &mut usize) -> Result<u64> {
    let mut u = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = take(b, pos, 1)?[0];
        u |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok(u);
        }
    }
    Err(Error::internal("packed varint too long"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Value {
        Value::Decimal(Decimal::parse(s).unwrap())
    }

    /// Every kind of value, at its edges, comes back as it went in; small ones pack small.
    #[test]
    fn values_round_trip_and_pack_small() {
        let row: Row = vec![
            Value::Null,
            Value::Int(0),
            Value::Int(-1),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::UInt(u64::MAX),
            Value::Double(-0.0),
            Value::Double(f64::MAX),
            dec("0"),
            dec("-1"),
            dec("127.5"),
            dec("-128"),
            dec("12345678901234567890123456789012345678901234567890123456789012345"),
            dec("-99999999999999999999999999999999999999999999999999999999999999999"),
            dec("-0.00000000000000000000000000000000000001"),
            Value::Str(String::new()),
            Value::Str("naïve ☃".repeat(40)),
            Value::Bytes(vec![0, 255, 128]),
            Value::Date(Date {
                year: 2024,
                month: 2,
                day: 29,
            }),
            Value::DateTime(DateTime::from_micros(-62_167_219_200_000_000)),
            Value::Time(-3_020_399_999_999),
        ];
        let p = PackedRow::pack(&row);
        let back = p.unpack();
        assert_eq!(back.len(), row.len());
        for (a, b) in row.iter().zip(&back) {
            match (a, b) {
                (Value::Double(x), Value::Double(y)) => assert_eq!(x.to_bits(), y.to_bits()),
                (Value::Decimal(x), Value::Decimal(y)) => {
                    assert_eq!((x.mantissa, x.scale), (y.mantissa, y.scale))
                }
                _ => assert_eq!(a, b),
            }
        }
        let small = PackedRow::pack(&[Value::Int(42), Value::Int(-7), Value::Str("abc".into())]);
        assert_eq!(small.len(), 1 + 2 + 2 + 5);
        assert_eq!(PackedRow::pack(&[dec("12.34")]).len(), 1 + 1 + 1 + 1 + 2);
    }

    /// Damaged bytes are an error, never a panic or a huge allocation.
    #[test]
    fn damaged_bytes_are_errors() {
        let mut buf = Vec::new();
        put_row(&[Value::Str("hello".into()), dec("-5.5")], &mut buf);
        for cut in 0..buf.len() {
            assert!(get_row(&buf[..cut], &mut 0).is_err(), "cut at {cut}");
        }
        assert!(get_row(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F], &mut 0).is_err());
        assert!(get_row(&[1, DECIMAL, 0, 33], &mut 0).is_err());
        assert!(get_row(&[1, 77], &mut 0).is_err());
        assert!(get_row(&[0xFF; 11], &mut 0).is_err());
    }
}
