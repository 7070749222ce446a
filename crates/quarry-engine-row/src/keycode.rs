//! Memcomparable index keys: column values encoded so that comparing the bytes compares
//! the values as SQL does — NULL first, numbers by value, strings by their column's
//! collation (the plain one as `collate_key` keys it), dates chronologically. An index
//! entry is the encoded key followed by the 8-byte big-endian row id, which makes every
//! entry distinct and lets a B+tree order entries with plain `memcmp`.
//!
//! Every encoding of a column value is prefix-free (fixed width, or terminated), so the
//! entries whose first n key columns equal some values are exactly the entries that start
//! with those values' encoding. A DESC key column stores its encoding with every byte
//! inverted: still prefix-free, and byte order is then the reverse of value order (NULLs
//! last).

use quarry_common::value::collate_key;
use quarry_common::{SqlType, TypeKind, Value};

/// One index column as its entries encode it.
#[derive(Debug, Clone, Copy)]
pub struct KeyCol {
    pub ty: SqlType,
    /// Characters kept of a string (0 = the whole value).
    pub prefix: u32,
    pub desc: bool,
}

impl KeyCol {
    /// XOR mask of the column's stored bytes.
    fn mask(&self) -> u8 {
        if self.desc {
            0xFF
        } else {
            0
        }
    }
}

/// Append `v` as key column `col` stores it.
pub fn encode_column(v: &Value, col: &KeyCol, out: &mut Vec<u8>) {
    let start = out.len();
    encode_value(v, &col.ty, col.prefix, out);
    if col.desc {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
}

/// Append `v` (a value of a column of type `ty`, cut to `prefix` characters when > 0).
pub fn encode_value(v: &Value, ty: &SqlType, prefix: u32, out: &mut Vec<u8>) {
    if v.is_null() {
        out.push(0x00);
        return;
    }
    out.push(0x01);
    match v {
        Value::Null => {}
        Value::Int(_) | Value::UInt(_) | Value::Decimal(_) if ty.kind == TypeKind::Decimal => {
            // The mantissa at the column's scale; a value with more fractional digits
            // keeps the double form it always had.
            let d = v.to_decimal();
            match (d.scale <= ty.scale)
                .then(|| d.checked_rescale(ty.scale))
                .flatten()
            {
                Some(d) if ty.wide_decimal() => {
                    out.extend_from_slice(&d.mantissa.to_ordered_bytes())
                }
                Some(d) => push_int(d.mantissa.saturating_i128(), out),
                None => push_f64(v.to_f64(), out),
            }
        }
        Value::Int(i) => push_int(*i as i128, out),
        Value::UInt(u) => push_int(*u as i128, out),
        Value::Decimal(_) => push_f64(v.to_f64(), out),
        Value::Double(f) => push_f64(*f, out),
        Value::Str(s) => {
            let cut: String;
            let s = if prefix > 0 {
                cut = s.chars().take(prefix as usize).collect();
                cut.as_str()
            } else {
                s.as_str()
            };
            let mut k = Vec::with_capacity(s.len());
            if matches!(
                ty.kind,
                TypeKind::Binary | TypeKind::VarBinary | TypeKind::Blob
            ) {
                k.extend_from_slice(s.as_bytes());
            } else if ty.coll.is_plain() {
                collate_key(s, &mut k);
            } else {
                // The column's own collation: a utf8mb4_bin key tells 'X' from 'x'.
                ty.coll.key(s, &mut k);
            }
            push_terminated(&k, out);
        }
        Value::Bytes(b) => {
            let b = if prefix > 0 {
                &b[..b.len().min(prefix as usize)]
            } else {
                b
            };
            push_terminated(b, out);
        }
        Value::Date(d) => {
            out.extend_from_slice(&d.year.to_be_bytes());
            out.extend_from_slice(&[d.month, d.day]);
        }
        Value::DateTime(dt) => {
            out.extend_from_slice(&dt.date.year.to_be_bytes());
            out.extend_from_slice(&[dt.date.month, dt.date.day, dt.hour, dt.minute, dt.second]);
            out.extend_from_slice(&dt.micro.to_be_bytes());
        }
        // A TIME takes a DATETIME's 11 bytes (the width a TIME key column had before
        // TIME was a type of its own): the sign-flipped microseconds, then zeros.
        Value::Time(t) => {
            out.extend_from_slice(&((*t as u64) ^ (1 << 63)).to_be_bytes());
            out.extend_from_slice(&[0, 0, 0]);
        }
    }
}

/// Integers (any width, signed or not) as 16 sign-flipped big-endian bytes.
fn push_int(i: i128, out: &mut Vec<u8>) {
    out.extend_from_slice(&((i as u128) ^ (1u128 << 127)).to_be_bytes());
}

/// IEEE doubles in total order: flip all bits of negatives, the sign bit of positives.
fn push_f64(f: f64, out: &mut Vec<u8>) {
    let f = if f == 0.0 { 0.0 } else { f }; // -0.0 sorts as 0.0
    let bits = f.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    out.extend_from_slice(&ordered.to_be_bytes());
}

/// Bytes with 0x00 escaped as 0x00 0xFF, then the terminator 0x00 0x00.
fn push_terminated(b: &[u8], out: &mut Vec<u8>) {
    for &c in b {
        out.push(c);
        if c == 0 {
            out.push(0xFF);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// An index entry: the key of `values` (one per index column, in order) and the row id.
pub fn entry(values: &[(&Value, &SqlType, u32)], row_id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    for (v, ty, prefix) in values {
        encode_value(v, ty, *prefix, &mut out);
    }
    out.extend_from_slice(&row_id.to_be_bytes());
    out
}

/// The row id at the end of an entry.
pub fn row_id(entry: &[u8]) -> u64 {
    u64::from_be_bytes(entry[entry.len() - 8..].try_into().unwrap())
}

/// How a key column's encoding can be read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// 16-byte integer (also DECIMAL(p ≤ 38) at the column's scale).
    Int,
    /// DECIMAL(p > 38): the 32-byte ordered mantissa at the column's scale.
    Wide,
    F64,
    Date,
    DateTime,
    /// Escaped, terminated bytes.
    Bytes,
}

fn shape(ty: &SqlType) -> Shape {
    use TypeKind::*;
    match ty.kind {
        k if SqlType::new(k).is_integer() => Shape::Int,
        Decimal if ty.wide_decimal() => Shape::Wide,
        Decimal => Shape::Int,
        Float | Double => Shape::F64,
        Date => Shape::Date,
        DateTime | Timestamp | Time => Shape::DateTime,
        _ => Shape::Bytes,
    }
}

/// Whether a key column gives back the stored value exactly (index-only reads): numbers,
/// dates and whole binary strings do; collated strings and prefixes do not.
pub fn decodable(ty: &SqlType, prefix: u32) -> bool {
    match shape(ty) {
        Shape::Bytes => prefix == 0 && ty.is_binary(),
        _ => true,
    }
}

/// Split off the first column's encoding of `key` (stored as `col`), returning its
/// length in bytes.
fn column_len(key: &[u8], col: &KeyCol) -> Option<usize> {
    let mask = col.mask();
    let at = |i: usize| key.get(i).map(|b| b ^ mask);
    if at(0)? == 0 {
        return Some(1);
    }
    let body = match shape(&col.ty) {
        Shape::Int => 16,
        Shape::Wide => 32,
        Shape::F64 => 8,
        Shape::Date => 4,
        Shape::DateTime => 11,
        Shape::Bytes => {
            let mut i = 1;
            loop {
                match (at(i)?, at(i + 1)?) {
                    (0, 0) => break i + 1,
                    (0, _) => i += 2,
                    _ => i += 1,
                }
            }
        }
    };
    (key.len() > body).then_some(body + 1)
}

/// Lengths of the encodings of `cols` (the leading index columns) in an entry: the
/// entries agreeing on the first j key columns share the first `ends[j-1]` bytes.
pub fn column_ends(entry: &[u8], cols: &[KeyCol]) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(cols.len());
    let mut at = 0;
    for col in cols {
        at += column_len(&entry[at..], col)?;
        ends.push(at);
    }
    Some(ends)
}

/// Whether one of the key columns `cols` of an entry is NULL (None: malformed entry).
pub fn has_null(entry: &[u8], cols: &[KeyCol]) -> Option<bool> {
    let mut at = 0;
    for col in cols {
        if entry.get(at)? ^ col.mask() == 0 {
            return Some(true);
        }
        at += column_len(&entry[at..], col)?;
    }
    Some(false)
}

/// The values of the index columns in an entry: `Some` for columns that are `decodable`,
/// `None` (unknown) for the others.
#[cfg(test)]
pub fn decode_key(entry: &[u8], cols: &[KeyCol]) -> Option<Vec<Option<Value>>> {
    let mut out = Vec::with_capacity(cols.len());
    decode_key_into(entry, cols, &mut out).then_some(out)
}

/// `decode_key` into a buffer the caller reuses across entries (false: malformed entry).
pub fn decode_key_into(entry: &[u8], cols: &[KeyCol], out: &mut Vec<Option<Value>>) -> bool {
    out.clear();
    decode_columns(entry, cols, out).is_some()
}

fn decode_columns(entry: &[u8], cols: &[KeyCol], out: &mut Vec<Option<Value>>) -> Option<()> {
    let mut at = 0;
    let mut plain = Vec::new();
    for col in cols {
        let ty = &col.ty;
        let len = column_len(&entry[at..], col)?;
        let mut enc = &entry[at..at + len];
        at += len;
        if !decodable(ty, col.prefix) {
            out.push(None);
            continue;
        }
        if col.desc {
            plain.clear();
            plain.extend(enc.iter().map(|b| !b));
            enc = &plain;
        }
        if enc[0] == 0 {
            out.push(Some(Value::Null));
            continue;
        }
        let b = &enc[1..];
        let v = match shape(ty) {
            Shape::Int => {
                let i = (u128::from_be_bytes(b.try_into().ok()?) ^ (1u128 << 127)) as i128;
                match ty.kind {
                    TypeKind::Decimal => Value::Decimal(quarry_common::Decimal::new(i, ty.scale)),
                    TypeKind::BigInt if ty.unsigned => Value::UInt(i as u64),
                    _ => Value::Int(i as i64),
                }
            }
            Shape::Wide => Value::Decimal(quarry_common::Decimal::new(
                quarry_common::value::Mantissa::from_ordered_bytes(b.try_into().ok()?),
                ty.scale,
            )),
            Shape::F64 => {
                let o = u64::from_be_bytes(b.try_into().ok()?);
                let bits = if o >> 63 == 1 { o & !(1 << 63) } else { !o };
                Value::Double(f64::from_bits(bits))
            }
            Shape::Date => Value::Date(quarry_common::Date {
                year: u16::from_be_bytes([b[0], b[1]]),
                month: b[2],
                day: b[3],
            }),
            Shape::DateTime if ty.kind == TypeKind::Time => {
                Value::Time((u64::from_be_bytes(b[..8].try_into().ok()?) ^ (1 << 63)) as i64)
            }
            Shape::DateTime => Value::DateTime(quarry_common::value::DateTime {
                date: quarry_common::Date {
                    year: u16::from_be_bytes([b[0], b[1]]),
                    month: b[2],
                    day: b[3],
                },
                hour: b[4],
                minute: b[5],
                second: b[6],
                micro: u32::from_be_bytes(b[7..11].try_into().ok()?),
            }),
            Shape::Bytes => {
                let mut v = Vec::with_capacity(b.len());
                let mut i = 0;
                while i + 1 < b.len() {
                    match (b[i], b[i + 1]) {
                        (0, 0) => break,
                        (0, _) => {
                            v.push(0);
                            i += 2;
                        }
                        (c, _) => {
                            v.push(c);
                            i += 1;
                        }
                    }
                }
                Value::Bytes(v)
            }
        };
        out.push(Some(v));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::{Date, DateTime, Decimal};
    use std::cmp::Ordering;

    fn ty(kind: TypeKind, unsigned: bool, len: u32, scale: u8) -> SqlType {
        SqlType {
            coll: Default::default(),
            kind,
            unsigned,
            len,
            scale,
        }
    }

    fn enc(v: &Value, t: &SqlType) -> Vec<u8> {
        let mut out = vec![];
        encode_value(v, t, 0, &mut out);
        out
    }

    /// Byte order must agree with SQL order for every pair.
    fn check_order(vals: &[Value], t: &SqlType) {
        for a in vals {
            for b in vals {
                let want = a.total_cmp(b);
                let got = enc(a, t).cmp(&enc(b, t));
                assert_eq!(got, want, "{a:?} vs {b:?} as {t:?}");
            }
        }
    }

    #[test]
    fn integers_order_by_value_null_first() {
        let mut vals = vec![Value::Null];
        for i in [i64::MIN, -300, -1, 0, 1, 2, 255, 256, 70_000, i64::MAX] {
            vals.push(Value::Int(i));
        }
        vals.push(Value::UInt(u64::MAX));
        check_order(&vals, &ty(TypeKind::BigInt, false, 0, 0));
    }

    #[test]
    fn doubles_and_decimals_order_by_value() {
        let vals: Vec<Value> = [-1e300, -2.5, -0.0, 0.0, 1e-300, 0.5, 3.0, 1e300]
            .into_iter()
            .map(Value::Double)
            .collect();
        check_order(&vals, &ty(TypeKind::Double, false, 0, 0));
        let d = |m: i128, s: u8| {
            Value::Decimal(Decimal {
                mantissa: m.into(),
                scale: s,
            })
        };
        let vals = vec![
            d(-12345, 2),
            d(-1, 0),
            d(0, 2),
            d(5, 1),
            d(51, 2),
            d(100, 2),
            d(99999, 2),
        ];
        check_order(&vals, &ty(TypeKind::Decimal, false, 8, 2));
    }

    #[test]
    fn strings_follow_the_collation() {
        let vals: Vec<Value> = [
            "", " ", "a", "A", "a  ", "ab", "Ab", "abc", "b", "B ", "z", "é", "zz\0x",
        ]
        .into_iter()
        .map(|s| Value::Str(s.to_string()))
        .collect();
        check_order(&vals, &ty(TypeKind::VarChar, false, 20, 0));
        // A prefix index compares the first characters only.
        let mut a = vec![];
        let mut b = vec![];
        encode_value(
            &Value::Str("abcdef".into()),
            &ty(TypeKind::VarChar, false, 20, 0),
            3,
            &mut a,
        );
        encode_value(
            &Value::Str("ABCxyz".into()),
            &ty(TypeKind::VarChar, false, 20, 0),
            3,
            &mut b,
        );
        assert_eq!(a, b);
    }

    #[test]
    fn dates_and_multi_column_prefixes() {
        let dt = |y, mo, d, h, mi, s, us| {
            Value::DateTime(DateTime {
                date: Date {
                    year: y,
                    month: mo,
                    day: d,
                },
                hour: h,
                minute: mi,
                second: s,
                micro: us,
            })
        };
        let vals = vec![
            dt(1999, 12, 31, 23, 59, 59, 999_999),
            dt(2000, 1, 1, 0, 0, 0, 0),
            dt(2000, 1, 1, 0, 0, 0, 1),
            dt(2026, 11, 22, 6, 0, 0, 0),
        ];
        check_order(&vals, &ty(TypeKind::DateTime, false, 0, 6));
        // (k, c) entries: all entries with k = 5 share the encoding of k = 5 as a prefix.
        let int = ty(TypeKind::Int, false, 0, 0);
        let s = ty(TypeKind::VarChar, false, 10, 0);
        let five = Value::Int(5);
        let e1 = entry(&[(&five, &int, 0), (&Value::Str("x".into()), &s, 0)], 7);
        let e2 = entry(&[(&five, &int, 0), (&Value::Null, &s, 0)], 9);
        let mut p = vec![];
        encode_value(&five, &int, 0, &mut p);
        assert!(e1.starts_with(&p) && e2.starts_with(&p));
        assert_eq!(e2.cmp(&e1), Ordering::Less, "NULL sorts first");
        assert_eq!((row_id(&e1), row_id(&e2)), (7, 9));
    }

    #[test]
    fn keys_decode_back_to_their_values() {
        let big_u = ty(TypeKind::BigInt, true, 0, 0);
        let int = ty(TypeKind::Int, false, 0, 0);
        let dec = ty(TypeKind::Decimal, false, 10, 3);
        let dbl = ty(TypeKind::Double, false, 0, 0);
        let bin = ty(TypeKind::VarBinary, false, 10, 0);
        let txt = ty(TypeKind::VarChar, false, 10, 0);
        let date = ty(TypeKind::Date, false, 0, 0);
        let dtt = ty(TypeKind::DateTime, false, 0, 6);
        let cases: Vec<(Value, SqlType)> = vec![
            (Value::UInt(u64::MAX), big_u),
            (Value::Int(-42), int),
            (Value::Null, int),
            (Value::Decimal(Decimal::new(-12345, 3)), dec),
            (Value::Double(-2.5e-7), dbl),
            (Value::Bytes(vec![0, 1, 0, 0, 255, 7]), bin),
            (Value::Str("Ab".into()), txt),
            (
                Value::Date(Date {
                    year: 2026,
                    month: 11,
                    day: 22,
                }),
                date,
            ),
            (
                Value::DateTime(DateTime::from_micros(1_763_800_000_123_456)),
                dtt,
            ),
        ];
        let mut key = vec![];
        for (v, t) in &cases {
            encode_value(v, t, 0, &mut key);
        }
        let e = [key.as_slice(), &9u64.to_be_bytes()].concat();
        let key_col = |ty: SqlType, desc: bool| KeyCol {
            ty,
            prefix: 0,
            desc,
        };
        let cols: Vec<KeyCol> = cases.iter().map(|(_, t)| key_col(*t, false)).collect();
        let got = decode_key(&e, &cols).unwrap();
        for ((v, t), g) in cases.iter().zip(&got) {
            if t.kind == TypeKind::VarChar {
                assert_eq!(g, &None, "collated strings are not given back");
            } else {
                assert_eq!(g.as_ref(), Some(v), "{t:?}");
            }
        }
        let ends = column_ends(&e, &cols).unwrap();
        assert_eq!(*ends.last().unwrap(), key.len());
        assert_eq!(row_id(&e), 9);
        assert_eq!(has_null(&e, &cols), Some(true));
        assert_eq!(has_null(&e, &cols[..2]), Some(false));
        // The same values as DESC columns decode alike and end at the same places.
        let desc: Vec<KeyCol> = cases.iter().map(|(_, t)| key_col(*t, true)).collect();
        let mut dkey = vec![];
        for ((v, _), c) in cases.iter().zip(&desc) {
            encode_column(v, c, &mut dkey);
        }
        let de = [dkey.as_slice(), &9u64.to_be_bytes()].concat();
        assert_eq!(decode_key(&de, &desc).unwrap(), got);
        assert_eq!(column_ends(&de, &desc).unwrap(), ends);
        assert_eq!(has_null(&de, &desc), Some(true));
        assert_eq!(has_null(&de, &desc[..2]), Some(false));
    }

    #[test]
    fn desc_columns_reverse_the_order_with_nulls_last() {
        let s = ty(TypeKind::VarBinary, false, 10, 0);
        let int = ty(TypeKind::Int, false, 0, 0);
        let enc = |v: &Value, t: SqlType| {
            let mut out = vec![];
            encode_column(
                v,
                &KeyCol {
                    ty: t,
                    prefix: 0,
                    desc: true,
                },
                &mut out,
            );
            out
        };
        let strs = [
            Value::Null,
            Value::Bytes(vec![]),
            Value::Bytes(vec![0]),
            Value::Bytes(vec![0, 0]),
            Value::Bytes(vec![0, 1]),
            Value::Bytes(vec![1]),
            Value::Bytes(vec![255, 255]),
        ];
        let ints = [
            Value::Null,
            Value::Int(i64::MIN),
            Value::Int(-1),
            Value::Int(0),
            Value::Int(7),
        ];
        for (vals, t) in [(&strs[..], s), (&ints[..], int)] {
            let keys: Vec<Vec<u8>> = vals.iter().map(|v| enc(v, t)).collect();
            // Ascending values (NULL first) give strictly descending keys.
            for w in keys.windows(2) {
                assert_eq!(w[0].cmp(&w[1]), Ordering::Greater, "{vals:?}");
            }
        }
    }
}
