//! Record encoding: one row ⇄ bytes, in the two MyISAM-like formats.
//!
//! DYNAMIC: null bitmap, then each non-null column in its smallest form — integers as
//! zig-zag varints, strings as varint length plus only the used bytes (DESIGN rule 4).
//! FIXED: null bitmap, then every column at its full width (strings padded to the
//! declared maximum), so every record has the same length and can be rewritten in place.
//! Byte layouts are documented in `docs/formats/row-engine.md`.

use quarry_common::value::Mantissa;
use quarry_common::{Date, DateTime, Decimal, Error, Result, Row, SqlType, TypeKind, Value};
use quarry_storage_api::{ColumnSchema, RowFormat};

pub fn put_varint(out: &mut Vec<u8>, mut v: u128) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u128> {
    // Most cells are a few bytes: those are read without the wide loop's shifts.
    if let Some(&b) = buf.get(*pos) {
        if b & 0x80 == 0 {
            *pos += 1;
            return Ok(b as u128);
        }
        let mut v = (b & 0x7f) as u64;
        let mut shift = 7;
        let mut at = *pos + 1;
        while let Some(&b) = buf.get(at) {
            v |= ((b & 0x7f) as u64) << shift;
            at += 1;
            if b & 0x80 == 0 {
                *pos = at;
                return Ok(v as u128);
            }
            shift += 7;
            if shift > 56 {
                break;
            }
        }
    }
    get_long_varint(buf, pos)
}

#[cold]
fn get_long_varint(buf: &[u8], pos: &mut usize) -> Result<u128> {
    let mut v: u128 = 0;
    let mut shift = 0;
    loop {
        let b = *buf
            .get(*pos)
            .ok_or_else(|| Error::corrupt("record truncated"))?;
        *pos += 1;
        v |= ((b & 0x7f) as u128) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 126 {
            return Err(Error::corrupt("varint too long"));
        }
    }
}

fn zigzag(v: i128) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}
#[inline]
fn unzigzag(v: u128) -> i128 {
    ((v >> 1) as i128) ^ -((v & 1) as i128)
}

#[inline]
fn take<'a>(buf: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8]> {
    let s = buf
        .get(*pos..*pos + n)
        .ok_or_else(|| Error::corrupt("record truncated"))?;
    *pos += n;
    Ok(s)
}

/// Maximum bytes a string column can hold (utf8mb4: 4 bytes per character).
fn max_string_bytes(ty: &SqlType) -> usize {
    match ty.kind {
        TypeKind::Binary | TypeKind::VarBinary => ty.len as usize,
        _ => ty.len as usize * 4,
    }
}

/// Bytes a column takes in a FIXED-format record (TEXT and BLOB: tables with them are
/// always DYNAMIC).
fn cell_width(ty: &SqlType) -> usize {
    match ty.kind {
        TypeKind::Decimal if ty.wide_decimal() => 32,
        TypeKind::Decimal => 16,
        TypeKind::Date => 4,
        TypeKind::Char | TypeKind::VarChar | TypeKind::Binary | TypeKind::VarBinary => {
            2 + max_string_bytes(ty)
        }
        _ => 8,
    }
}

/// A DECIMAL(p > 38) cell in a DYNAMIC record: a length byte, then that many bytes of the
/// mantissa's little-endian two's complement, sign-extended when read.
fn put_wide(out: &mut Vec<u8>, m: Mantissa) {
    let b = m.to_le_bytes();
    let fill = if m.is_negative() { 0xFF } else { 0 };
    // Keep the bytes up to the last one that is not sign fill, plus one that carries the sign.
    let used = b.iter().rposition(|&x| x != fill).map_or(0, |i| i + 1);
    let n = if used < 32 && (used == 0 || (b[used - 1] ^ fill) & 0x80 != 0) {
        used + 1
    } else {
        used
    };
    out.push(n as u8);
    out.extend_from_slice(&b[..n]);
}

fn get_wide(buf: &[u8], pos: &mut usize) -> Result<Mantissa> {
    let n = take(buf, pos, 1)?[0] as usize;
    if n > 32 {
        return Err(Error::corrupt("decimal cell too long"));
    }
    let b = take(buf, pos, n)?;
    let fill = if n > 0 && b[n - 1] & 0x80 != 0 {
        0xFF
    } else {
        0
    };
    let mut full = [fill; 32];
    full[..n].copy_from_slice(b);
    Ok(Mantissa::from_le_bytes(full))
}

/// Width of a FIXED-format record (excluding the record header).
pub fn fixed_width(cols: &[ColumnSchema]) -> usize {
    let mut w = cols.len().div_ceil(8);
    for c in cols {
        w += cell_width(&c.ty);
    }
    w
}

pub fn encode(cols: &[ColumnSchema], format: RowFormat, row: &[Value], out: &mut Vec<u8>) {
    let start = out.len();
    let nb = cols.len().div_ceil(8);
    out.resize(start + nb, 0);
    for (i, v) in row.iter().enumerate() {
        if v.is_null() {
            out[start + i / 8] |= 1 << (i % 8);
        }
    }
    let fixed = format == RowFormat::Fixed;
    for (c, v) in cols.iter().zip(row) {
        if v.is_null() {
            if fixed {
                out.resize(out.len() + cell_width(&c.ty), 0);
            }
            continue;
        }
        match c.ty.kind {
            k if SqlType::new(k).is_integer() => {
                if fixed {
                    let bits = match v {
                        Value::UInt(u) => *u,
                        other => other.to_i64() as u64,
                    };
                    out.extend_from_slice(&bits.to_le_bytes());
                } else {
                    match v {
                        Value::UInt(u) => put_varint(out, *u as u128),
                        other => put_varint(out, zigzag(other.to_i64() as i128)),
                    }
                }
            }
            TypeKind::Float | TypeKind::Double => out.extend_from_slice(&v.to_f64().to_le_bytes()),
            TypeKind::Decimal => {
                // Values reach the engine range-checked for the column: a narrow column's
                // mantissa fits an i128.
                let m = v.to_decimal().rescale(c.ty.scale).mantissa;
                match (c.ty.wide_decimal(), fixed) {
                    (true, true) => out.extend_from_slice(&m.to_le_bytes()),
                    (true, false) => put_wide(out, m),
                    (false, true) => out.extend_from_slice(&m.saturating_i128().to_le_bytes()),
                    (false, false) => put_varint(out, zigzag(m.saturating_i128())),
                }
            }
            TypeKind::Date => {
                let d = v.to_datetime().map(|d| d.date).unwrap_or(Date {
                    year: 0,
                    month: 0,
                    day: 0,
                });
                out.extend_from_slice(&d.year.to_le_bytes());
                out.push(d.month);
                out.push(d.day);
            }
            TypeKind::Time => {
                let us = quarry_common::time::value_to_time(v)
                    .map(|t| t.micros())
                    .unwrap_or(0);
                out.extend_from_slice(&us.to_le_bytes());
            }
            TypeKind::DateTime | TypeKind::Timestamp => {
                let us = v.to_datetime().map(|d| d.to_stored()).unwrap_or(0);
                out.extend_from_slice(&us.to_le_bytes());
            }
            _ => {
                let bytes: &[u8] = match v {
                    Value::Str(s) => s.as_bytes(),
                    Value::Bytes(b) => b,
                    _ => unreachable!("strings are coerced before they reach the engine"),
                };
                if fixed && !matches!(c.ty.kind, TypeKind::Text | TypeKind::Blob) {
                    let max = max_string_bytes(&c.ty);
                    let n = bytes.len().min(max);
                    out.extend_from_slice(&(n as u16).to_le_bytes());
                    out.extend_from_slice(&bytes[..n]);
                    out.resize(out.len() + (max - n), 0);
                } else {
                    put_varint(out, bytes.len() as u128);
                    out.extend_from_slice(bytes);
                }
            }
        }
    }
}

pub fn decode(cols: &[ColumnSchema], format: RowFormat, buf: &[u8]) -> Result<Row> {
    decode_some(cols, format, buf, None)
}

/// How a non-NULL cell is framed in a record, known from its column and the format alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A varint: DYNAMIC integers and decimals of up to 38 digits.
    Varint,
    /// A length byte, then that many bytes: DYNAMIC wider decimals.
    Wide,
    /// A varint length, then that many bytes: DYNAMIC strings; TEXT and BLOB in both formats.
    Counted,
    /// Always this many bytes.
    Fixed(usize),
}

pub(crate) fn frame(c: &ColumnSchema, format: RowFormat) -> Frame {
    let k = c.ty.kind;
    match k {
        TypeKind::Text | TypeKind::Blob => Frame::Counted,
        _ if format == RowFormat::Fixed => Frame::Fixed(cell_width(&c.ty)),
        TypeKind::Float
        | TypeKind::Double
        | TypeKind::Time
        | TypeKind::DateTime
        | TypeKind::Timestamp => Frame::Fixed(8),
        TypeKind::Date => Frame::Fixed(4),
        TypeKind::Decimal if c.ty.wide_decimal() => Frame::Wide,
        TypeKind::Decimal => Frame::Varint,
        _ if SqlType::new(k).is_integer() => Frame::Varint,
        _ => Frame::Counted,
    }
}

/// The bytes a NULL cell takes: its full width in a FIXED record, none in a DYNAMIC one.
pub(crate) fn null_width(c: &ColumnSchema, format: RowFormat) -> usize {
    if format == RowFormat::Fixed {
        cell_width(&c.ty)
    } else {
        0
    }
}

/// Step over a non-NULL cell framed as `frame`. A fixed-width cell is not bounds-checked
/// here: the next cell read is.
#[inline]
pub(crate) fn skip_cell(buf: &[u8], pos: &mut usize, frame: Frame) -> Result<()> {
    match frame {
        Frame::Fixed(n) => *pos += n,
        Frame::Varint => skip_varints(buf, pos, 1)?,
        Frame::Wide => {
            let n = take(buf, pos, 1)?[0] as usize;
            take(buf, pos, n)?;
        }
        Frame::Counted => {
            let n = get_varint(buf, pos)? as usize;
            take(buf, pos, n)?;
        }
    }
    Ok(())
}

/// Step over `n` varints from `pos`: a varint ends at its first byte below 0x80, so
/// where eight bytes are left they are looked at as one word.
#[inline]
pub(crate) fn skip_varints(buf: &[u8], pos: &mut usize, mut n: u32) -> Result<()> {
    while n > 0 {
        match buf.get(*pos..*pos + 8) {
            Some(w) => {
                // Ends taken lowest first (no population count: the baseline x86-64
                // this is built for has no instruction for it).
                let mut ends = !u64::from_le_bytes(w.try_into().unwrap()) & 0x8080_8080_8080_8080;
                while ends != 0 {
                    n -= 1;
                    if n == 0 {
                        *pos += (ends.trailing_zeros() / 8 + 1) as usize;
                        return Ok(());
                    }
                    ends &= ends - 1;
                }
                *pos += 8;
            }
            None => {
                let b = *buf
                    .get(*pos)
                    .ok_or_else(|| Error::corrupt("record truncated"))?;
                *pos += 1;
                if b & 0x80 == 0 {
                    n -= 1;
                }
            }
        }
    }
    Ok(())
}

/// An integer cell of a column that is not BIGINT UNSIGNED.
#[inline]
pub(crate) fn int_cell(buf: &[u8], pos: &mut usize, fixed: bool) -> Result<i64> {
    Ok(if fixed {
        u64::from_le_bytes(take(buf, pos, 8)?.try_into().unwrap()) as i64
    } else {
        unzigzag(get_varint(buf, pos)?) as i64
    })
}

/// A DECIMAL(p ≤ 38) cell: its mantissa at the column's scale.
#[inline]
pub(crate) fn narrow_decimal_cell(buf: &[u8], pos: &mut usize, fixed: bool) -> Result<i128> {
    Ok(if fixed {
        i128::from_le_bytes(take(buf, pos, 16)?.try_into().unwrap())
    } else {
        unzigzag(get_varint(buf, pos)?)
    })
}

/// A DATE cell as the number `check::packed_date` makes of it.
#[inline]
pub(crate) fn date_number(buf: &[u8], pos: &mut usize) -> Result<i128> {
    let b = take(buf, pos, 4)?;
    Ok(crate::check::packed_date(
        u16::from_le_bytes([b[0], b[1]]),
        b[2],
        b[3],
    ))
}

#[inline]
pub(crate) fn double_cell(buf: &[u8], pos: &mut usize) -> Result<f64> {
    Ok(f64::from_le_bytes(take(buf, pos, 8)?.try_into().unwrap()))
}

/// A string cell's bytes (CHAR, VARCHAR, TEXT and their binary kinds).
pub(crate) fn string_cell<'a>(
    c: &ColumnSchema,
    fixed: bool,
    buf: &'a [u8],
    pos: &mut usize,
) -> Result<&'a [u8]> {
    if fixed && !matches!(c.ty.kind, TypeKind::Text | TypeKind::Blob) {
        let max = max_string_bytes(&c.ty);
        let n = u16::from_le_bytes(take(buf, pos, 2)?.try_into().unwrap()) as usize;
        let all = take(buf, pos, max)?;
        all.get(..n).ok_or_else(|| Error::corrupt("string length"))
    } else {
        let n = get_varint(buf, pos)? as usize;
        take(buf, pos, n)
    }
}

/// The text of a non-binary string cell.
pub(crate) fn text(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| Error::corrupt("invalid utf-8 in record"))
}

/// A non-NULL cell of column `c` as a value.
pub(crate) fn cell_value(
    c: &ColumnSchema,
    fixed: bool,
    buf: &[u8],
    pos: &mut usize,
) -> Result<Value> {
    Ok(match c.ty.kind {
        TypeKind::BigInt if c.ty.unsigned => Value::UInt(if fixed {
            u64::from_le_bytes(take(buf, pos, 8)?.try_into().unwrap())
        } else {
            get_varint(buf, pos)? as u64
        }),
        k if SqlType::new(k).is_integer() => Value::Int(int_cell(buf, pos, fixed)?),
        TypeKind::Float | TypeKind::Double => Value::Double(double_cell(buf, pos)?),
        TypeKind::Decimal => {
            let m = match (c.ty.wide_decimal(), fixed) {
                (true, true) => Mantissa::from_le_bytes(take(buf, pos, 32)?.try_into().unwrap()),
                (true, false) => get_wide(buf, pos)?,
                (false, _) => Mantissa::from(narrow_decimal_cell(buf, pos, fixed)?),
            };
            Value::Decimal(Decimal::new(m, c.ty.scale))
        }
        TypeKind::Date => {
            let b = take(buf, pos, 4)?;
            Value::Date(Date {
                year: u16::from_le_bytes([b[0], b[1]]),
                month: b[2],
                day: b[3],
            })
        }
        TypeKind::Time => {
            let us = i64::from_le_bytes(take(buf, pos, 8)?.try_into().unwrap());
            Value::Time(quarry_common::time::from_stored(us))
        }
        TypeKind::DateTime | TypeKind::Timestamp => {
            let us = i64::from_le_bytes(take(buf, pos, 8)?.try_into().unwrap());
            Value::DateTime(DateTime::from_stored(us))
        }
        _ => {
            let bytes = string_cell(c, fixed, buf, pos)?;
            if c.ty.is_binary() {
                Value::Bytes(bytes.to_vec())
            } else {
                Value::Str(text(bytes)?.to_owned())
            }
        }
    })
}

/// `decode`, leaving NULL the columns `wanted` (when given) does not mark: their cells are
/// stepped over without building values, so a scan that reads two numbers of a wide row
/// allocates no strings.
pub fn decode_some(
    cols: &[ColumnSchema],
    format: RowFormat,
    buf: &[u8],
    wanted: Option<&[bool]>,
) -> Result<Row> {
    let nb = cols.len().div_ceil(8);
    let nulls = buf
        .get(..nb)
        .ok_or_else(|| Error::corrupt("record truncated"))?;
    let mut pos = nb;
    let fixed = format == RowFormat::Fixed;
    let mut row = Vec::with_capacity(cols.len());
    for (i, c) in cols.iter().enumerate() {
        let is_null = nulls[i / 8] & (1 << (i % 8)) != 0;
        let skip = wanted.is_some_and(|w| !w.get(i).copied().unwrap_or(false));
        if is_null {
            pos += null_width(c, format);
            row.push(Value::Null);
        } else if skip {
            skip_cell(buf, &mut pos, frame(c, format))?;
            row.push(Value::Null);
        } else {
            row.push(cell_value(c, fixed, buf, &mut pos)?);
        }
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(name: &str, ty: SqlType) -> ColumnSchema {
        ColumnSchema {
            name: name.into(),
            ty,
            nullable: true,
            columnar: false,
        }
    }

    fn cols() -> Vec<ColumnSchema> {
        vec![
            c("a", SqlType::INT),
            c("b", SqlType::varchar(10)),
            c("c", SqlType::decimal(10, 2)),
            c("d", SqlType::DATE),
            c("e", SqlType::DATETIME),
            c("f", SqlType::DOUBLE),
            c(
                "g",
                SqlType {
                    unsigned: true,
                    ..SqlType::BIGINT
                },
            ),
        ]
    }

    /// A value for each of [`cols`].
    fn sample_row() -> Vec<Value> {
        vec![
            Value::Int(-42),
            Value::Str("héllo".into()),
            Value::Decimal(Decimal::new(-12345, 2)),
            Value::Date(Date {
                year: 2024,
                month: 2,
                day: 29,
            }),
            Value::DateTime(DateTime::from_micros(63_000_000_123)),
            Value::Double(1.5),
            Value::UInt(u64::MAX),
        ]
    }

    #[test]
    fn both_formats_round_trip() {
        let row = sample_row();
        let nulls = vec![Value::Null; 7];
        for fmt in [RowFormat::Dynamic, RowFormat::Fixed] {
            for r in [&row, &nulls] {
                let mut buf = vec![];
                encode(&cols(), fmt, r, &mut buf);
                if fmt == RowFormat::Fixed {
                    assert_eq!(buf.len(), fixed_width(&cols()));
                }
                assert_eq!(&decode(&cols(), fmt, &buf).unwrap(), r);
            }
        }
    }

    /// Every subset of columns decodes to the full row's values there and NULL elsewhere,
    /// in both formats, with a TEXT and a wide DECIMAL among the skipped cells.
    #[test]
    fn decode_some_reads_only_the_wanted_columns() {
        let mut cs = cols();
        cs.push(c("h", SqlType::new(TypeKind::Text)));
        cs.push(c("i", SqlType::decimal(65, 3)));
        cs.push(c("j", SqlType::TIME));
        cs.push(c("k", SqlType::INT));
        let mut row = sample_row();
        row[5] = Value::Null;
        row.extend([
            Value::Str("a longer text".into()),
            Value::Decimal(
                Decimal::parse("-123456789012345678901234567890123456789012.5")
                    .unwrap()
                    .rescale(3),
            ),
            Value::Time(-3_600_000_001),
            Value::Int(7),
        ]);
        for fmt in [RowFormat::Dynamic, RowFormat::Fixed] {
            let cs: Vec<ColumnSchema> = if fmt == RowFormat::Fixed {
                cs.iter()
                    .filter(|c| c.ty.kind != TypeKind::Text)
                    .cloned()
                    .collect()
            } else {
                cs.clone()
            };
            let row: Vec<Value> = if fmt == RowFormat::Fixed {
                row.iter()
                    .enumerate()
                    .filter(|(i, _)| *i != 7)
                    .map(|(_, v)| v.clone())
                    .collect()
            } else {
                row.clone()
            };
            let mut buf = vec![];
            encode(&cs, fmt, &row, &mut buf);
            for mask in 0u32..1 << cs.len() {
                let wanted: Vec<bool> = (0..cs.len()).map(|i| mask & (1 << i) != 0).collect();
                let got = decode_some(&cs, fmt, &buf, Some(&wanted)).unwrap();
                let expected: Vec<Value> = row
                    .iter()
                    .zip(&wanted)
                    .map(|(v, w)| if *w { v.clone() } else { Value::Null })
                    .collect();
                assert_eq!(got, expected, "{fmt:?} mask {mask:b}");
            }
        }
    }

    /// DECIMAL(65,10) cells and keys on both sides of the old 128-bit limit (which a
    /// 50-digit value overflowed into i128::MAX) and at every width of the DYNAMIC cell.
    #[test]
    fn wide_decimals_round_trip_and_their_keys_keep_order() {
        use crate::keycode::{decode_key, encode_column, KeyCol};
        let ty = SqlType::decimal(65, 10);
        let c = vec![ColumnSchema {
            name: "w".into(),
            ty,
            nullable: true,
            columnar: false,
        }];
        let nines = format!("{}.{}", "9".repeat(55), "9".repeat(10));
        let texts = [
            format!("-{nines}"),
            "-170141183460469231731687303715884105729".to_string(),
            "-12.8".into(),
            "-0.0000000001".into(),
            "0".into(),
            "0.0000000127".into(),
            "0.0000000128".into(),
            "17014118346046923173168730371588410572.8".into(),
            "170141183460469231731687303715884105728".into(),
            nines,
        ];
        let values: Vec<Value> = texts
            .iter()
            .map(|t| Value::Decimal(Decimal::parse(t).unwrap().rescale(10)))
            .collect();
        for fmt in [RowFormat::Dynamic, RowFormat::Fixed] {
            for v in values.iter().chain([&Value::Null]) {
                let mut buf = vec![];
                encode(&c, fmt, std::slice::from_ref(v), &mut buf);
                assert_eq!(decode(&c, fmt, &buf).unwrap(), vec![v.clone()], "{fmt:?}");
                if fmt == RowFormat::Fixed {
                    assert_eq!(buf.len(), fixed_width(&c));
                }
            }
        }
        for desc in [false, true] {
            let k = [KeyCol {
                ty,
                prefix: 0,
                desc,
            }];
            let keys: Vec<Vec<u8>> = values
                .iter()
                .map(|v| {
                    let mut out = vec![];
                    encode_column(v, &k[0], &mut out);
                    out.extend_from_slice(&7u64.to_be_bytes());
                    assert_eq!(decode_key(&out, &k).unwrap(), vec![Some(v.clone())]);
                    out
                })
                .collect();
            for w in keys.windows(2) {
                assert_eq!(w[0] < w[1], !desc);
            }
        }
    }

    #[test]
    fn dynamic_stores_only_used_bytes() {
        let c = vec![ColumnSchema {
            name: "v".into(),
            ty: SqlType::varchar(2048),
            nullable: true,
            columnar: false,
        }];
        let mut buf = vec![];
        encode(&c, RowFormat::Dynamic, &[Value::Str("x".into())], &mut buf);
        assert_eq!(buf.len(), 3); // bitmap + length + one byte
        assert!(decode(&c, RowFormat::Dynamic, &buf[..2]).is_err());
    }

    #[test]
    fn skipping_varints_lands_where_reading_them_does() {
        let mut rng = quarry_common::fuzz::Rng::new(4);
        for _ in 0..3_000 {
            let lead = rng.below(3);
            let mut buf = rng.bytes(lead);
            let start = buf.len();
            let n = rng.below(12);
            for _ in 0..n {
                let bits = rng.below(128) as u32;
                let v = (rng.next_u64() as u128 | (rng.next_u64() as u128) << 64) >> (127 - bits);
                put_varint(&mut buf, v);
            }
            let end = buf.len();
            let trail = rng.below(10);
            buf.extend(rng.bytes(trail));
            let mut read = start;
            for _ in 0..n {
                get_varint(&buf, &mut read).unwrap();
            }
            assert_eq!(read, end);
            let mut skipped = start;
            skip_varints(&buf, &mut skipped, n as u32).unwrap();
            assert_eq!(skipped, end);
            // Without the last varint's last byte: an error, not a panic or a wrong place.
            if n > 0 {
                let mut at = start;
                assert!(skip_varints(&buf[..end - 1], &mut at, n as u32).is_err());
            }
        }
    }
}

/// Records and index keys read from damaged or hostile files: decoding returns an error
/// (corruption is 1034), never panics. Inputs: valid encodings mutated, and random bytes.
#[cfg(test)]
mod fuzz {
    use super::*;
    use crate::keycode::{decode_key, encode_column, KeyCol};
    use quarry_common::fuzz::{mutate, run};
    use quarry_common::{Decimal, SqlType};

    fn c(name: &str, ty: SqlType) -> ColumnSchema {
        ColumnSchema {
            name: name.into(),
            ty,
            nullable: true,
            columnar: false,
        }
    }

    fn cols() -> Vec<ColumnSchema> {
        vec![
            c("a", SqlType::INT),
            c("b", SqlType::varchar(10)),
            c("c", SqlType::decimal(30, 6)),
            c("d", SqlType::DATE),
            c("e", SqlType::DATETIME),
            c("f", SqlType::DOUBLE),
            c("g", SqlType::BIGINT),
            c("h", SqlType::varchar(300)),
            c("w", SqlType::decimal(65, 4)),
        ]
    }

    fn sample(rng: &mut quarry_common::fuzz::Rng) -> Row {
        vec![
            Value::Int(rng.next_u64() as i32 as i64),
            Value::Str("x".repeat(rng.below(11))),
            Value::Decimal(Decimal::new(rng.next_u64() as i64 as i128, 6)),
            Value::Date(quarry_common::Date {
                year: 2024,
                month: 2,
                day: 29,
            }),
            Value::DateTime(quarry_common::DateTime::from_micros(
                rng.next_u64() as i64 >> 8,
            )),
            Value::Double(f64::from_bits(rng.next_u64())),
            if rng.chance(3) {
                Value::Null
            } else {
                Value::Int(rng.next_u64() as i64)
            },
            Value::Str("ü".repeat(rng.below(40))),
            Value::Decimal(Decimal::new(
                quarry_common::value::Mantissa::from(rng.next_u64() as i64 as i128)
                    .checked_mul(quarry_common::value::pow10(rng.below(48) as u8))
                    .unwrap(),
                4,
            )),
        ]
    }

    #[test]
    fn record_decoding_never_panics() {
        let cols = cols();
        for format in [RowFormat::Dynamic, RowFormat::Fixed] {
            run(
                &format!("row record ({format:?})"),
                2000,
                |rng| {
                    if rng.chance(5) {
                        let n = rng.below(200);
                        return rng.bytes(n);
                    }
                    let mut out = vec![];
                    encode(&cols, format, &sample(rng), &mut out);
                    mutate(rng, &out)
                },
                |input| {
                    let _ = decode(&cols, format, input);
                },
            );
        }
    }

    #[test]
    fn index_key_decoding_never_panics() {
        let kc: Vec<KeyCol> = cols()
            .iter()
            .enumerate()
            .map(|(i, c)| KeyCol {
                ty: c.ty,
                prefix: if i == 7 { 5 } else { 0 },
                desc: i % 2 == 1,
            })
            .collect();
        run(
            "row index key",
            2000,
            |rng| {
                let mut out = vec![];
                for (v, k) in sample(rng).iter().zip(&kc) {
                    encode_column(v, k, &mut out);
                }
                mutate(rng, &out)
            },
            |input| {
                let _ = decode_key(input, &kc);
            },
        );
    }
}
