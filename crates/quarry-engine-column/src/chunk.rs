//! One column of one segment: its encodings, zone map, and conditions evaluated on it.
//!
//! A chunk is encoded once, when its segment is written, choosing per chunk:
//! dictionary codes (one or two bytes) for strings with few distinct values, packed
//! lengths + bytes for other strings (only the used bytes, rule 4, each in as few bits
//! as the chunk's alphabet needs) or integers for strings of digits, run-length or
//! frame-of-reference bit-packing for integers, dates, times and decimals, plain for
//! doubles and decimals too wide for 64 bits. Byte layouts: `docs/formats/column-engine.md`.
//!
//! Conditions are evaluated per chunk into one truth byte per row — 0 false, 1 unknown,
//! 2 true — so SQL's AND/OR/NOT are min/max/(2 − x), and a dictionary chunk decides each
//! distinct value once and maps codes through that table.

use std::borrow::Cow;

use quarry_common::compiled_like::CompiledLike;
use quarry_common::hash::WordMap;
use quarry_common::value::{collate_cmp, collate_cmp_ascii, Mantissa};
use quarry_common::{Date, DateTime, Decimal, Error, Result, SqlType, TypeKind, Value};
use quarry_storage_api::{CmpOp, Pred};

pub(crate) const FALSE: u8 = 0;
pub(crate) const UNKNOWN: u8 = 1;
pub(crate) const TRUE: u8 = 2;

pub(crate) fn tri(b: Option<bool>) -> u8 {
    match b {
        Some(true) => TRUE,
        Some(false) => FALSE,
        None => UNKNOWN,
    }
}

/// How a column's values are held physically (what the row codec would give back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phys {
    Int,
    /// BIGINT UNSIGNED: the u64's bits in an i64.
    UInt,
    Double,
    Decimal(u8),
    /// year << 9 | month << 5 | day: ordered, and zero dates survive.
    Date,
    /// Microseconds.
    DateTime,
    /// TIME: signed microseconds.
    Time,
    Str,
    Bytes,
}

impl Phys {
    pub(crate) fn of(ty: &SqlType) -> Phys {
        match ty.kind {
            k if SqlType::new(k).is_integer() => {
                if ty.unsigned && k == TypeKind::BigInt {
                    Phys::UInt
                } else {
                    Phys::Int
                }
            }
            TypeKind::Float | TypeKind::Double => Phys::Double,
            TypeKind::Decimal => Phys::Decimal(ty.scale),
            TypeKind::Date => Phys::Date,
            TypeKind::DateTime | TypeKind::Timestamp => Phys::DateTime,
            TypeKind::Time => Phys::Time,
            _ if ty.is_binary() => Phys::Bytes,
            _ => Phys::Str,
        }
    }

    fn int_like(self) -> bool {
        matches!(
            self,
            Phys::Int | Phys::UInt | Phys::Decimal(_) | Phys::Date | Phys::DateTime | Phys::Time
        )
    }

    /// A non-null value as an integer of this column (None: not integer-like or too wide).
    fn to_int(self, v: &Value) -> Option<i64> {
        Some(match self {
            Phys::Int => v.to_i64(),
            Phys::UInt => match v {
                Value::UInt(u) => *u as i64,
                other => other.to_i64(),
            },
            Phys::Decimal(s) => v.to_decimal().rescale(s).mantissa.to_i64()?,
            Phys::Date => {
                let d = v.to_datetime().map(|d| d.date).unwrap_or(Date {
                    year: 0,
                    month: 0,
                    day: 0,
                });
                date_stored(&d)
            }
            Phys::DateTime => v.to_datetime().map(|d| d.to_stored()).unwrap_or(0),
            Phys::Time => quarry_common::time::value_to_time(v)
                .map(|t| t.micros())
                .unwrap_or(0),
            Phys::Double | Phys::Str | Phys::Bytes => return None,
        })
    }

    pub(crate) fn int_value(self, i: i64) -> Value {
        match self {
            Phys::Int => Value::Int(i),
            Phys::UInt => Value::UInt(i as u64),
            Phys::Decimal(s) => Value::Decimal(Decimal::new(i, s)),
            Phys::Date => Value::Date(Date {
                year: (i >> 9) as u16,
                month: ((i >> 5) & 15) as u8,
                day: (i & 31) as u8,
            }),
            Phys::DateTime => Value::DateTime(DateTime::from_stored(i)),
            Phys::Time => Value::Time(quarry_common::time::from_stored(i)),
            Phys::Double => Value::Double(f64::from_bits(i as u64)),
            Phys::Str | Phys::Bytes => Value::Null,
        }
    }

    pub(crate) fn bytes_value(self, b: &[u8]) -> Result<Value> {
        self.owned_bytes_value(b.to_vec())
    }

    pub(crate) fn owned_bytes_value(self, b: Vec<u8>) -> Result<Value> {
        Ok(match self {
            Phys::Bytes => Value::Bytes(b),
            _ => Value::Str(
                String::from_utf8(b)
                    .map_err(|_| Error::corrupt("invalid utf-8 in column chunk"))?,
            ),
        })
    }

    /// The value the row engine would hand back for `v` stored in such a column.
    pub(crate) fn normalize(self, v: Value) -> Result<Value> {
        Ok(match (self, v) {
            // Already in the stored form (the usual case): kept without a copy.
            (_, Value::Null) => Value::Null,
            (Phys::Str, v @ Value::Str(_))
            | (Phys::Bytes, v @ Value::Bytes(_))
            | (Phys::Int, v @ Value::Int(_))
            | (Phys::Double, v @ Value::Double(_)) => v,
            (Phys::Bytes, Value::Str(s)) => Value::Bytes(s.into_bytes()),
            (Phys::Str, Value::Bytes(b)) => Value::Str(
                String::from_utf8(b)
                    .map_err(|_| Error::corrupt("invalid utf-8 in a text value"))?,
            ),
            (p, v) => p.normalize_copy(&v)?,
        })
    }

    fn normalize_copy(self, v: &Value) -> Result<Value> {
        Ok(match self {
            Phys::Double => Value::Double(v.to_f64()),
            Phys::Decimal(s) => Value::Decimal(Decimal::new(v.to_decimal().rescale(s).mantissa, s)),
            Phys::Str | Phys::Bytes => match v {
                Value::Str(s) => self.bytes_value(s.as_bytes())?,
                Value::Bytes(b) => self.bytes_value(b)?,
                other => self.bytes_value(other.as_str_lossy().as_bytes())?,
            },
            p => p.int_value(p.to_int(v).unwrap_or(0)),
        })
    }
}

pub(crate) const ALL_NULL: u8 = 0;
pub(crate) const FOR: u8 = 1;
const RLE: u8 = 2;
pub(crate) const F64: u8 = 3;
/// A dictionary sorted as Quarry's plain collation compared before it was
/// utf8mb4_general_ci's (case folded, accents not): re-sorted when read if that order
/// is not the collation's.
pub(crate) const DICT_CASE_ONLY: u8 = 4;
/// A dictionary sorted under utf8mb4_general_ci (bytes for binary strings).
pub(crate) const DICT: u8 = 10;
const PLAIN: u8 = 5;
const I128: u8 = 6;
const PACKED: u8 = 7;
pub(crate) const DIGITS: u8 = 8;
const I256: u8 = 9;

/// More rows than any segment holds: a damaged count, refused before it sizes a buffer.
pub(crate) const MAX_ROWS: usize = 1 << 20;

/// Zone map of a chunk: smallest and largest non-null value (NULL when all are NULL).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Zone {
    pub min: Value,
    pub max: Value,
    pub nulls: u32,
}

/// Encode one column of a segment; returns the bytes and the zone map.
pub(crate) fn encode(phys: Phys, values: &[&Value]) -> (Vec<u8>, Zone) {
    let rows = values.len();
    let nulls = values.iter().filter(|v| v.is_null()).count();
    let mut out = Vec::with_capacity(rows * 2 + 16);
    let mut zone = Zone {
        min: Value::Null,
        max: Value::Null,
        nulls: nulls as u32,
    };
    let header = |out: &mut Vec<u8>, tag: u8| {
        out.push(tag);
        out.extend_from_slice(&(rows as u32).to_le_bytes());
        out.extend_from_slice(&(nulls as u32).to_le_bytes());
        if nulls > 0 && tag != ALL_NULL {
            let mut bm = vec![0u8; rows.div_ceil(8)];
            for (i, v) in values.iter().enumerate() {
                if v.is_null() {
                    bm[i / 8] |= 1 << (i % 8);
                }
            }
            out.extend_from_slice(&bm);
        }
    };
    if nulls == rows {
        header(&mut out, ALL_NULL);
        return (out, zone);
    }
    let widen = |z: &mut Zone, v: Value| {
        if z.min.is_null() || v.total_cmp(&z.min).is_lt() {
            z.min = v.clone();
        }
        if z.max.is_null() || v.total_cmp(&z.max).is_gt() {
            z.max = v;
        }
    };
    if phys.int_like() {
        let ints: Option<Vec<i64>> = values
            .iter()
            .map(|v| if v.is_null() { Some(0) } else { phys.to_int(v) })
            .collect();
        if let Some(ints) = ints {
            // The integers are ordered like the values, except UInt's bits.
            if phys == Phys::UInt {
                let live = || values.iter().zip(&ints).filter(|(v, _)| !v.is_null());
                let lo = live().map(|(_, &i)| i as u64).min().unwrap();
                let hi = live().map(|(_, &i)| i as u64).max().unwrap();
                zone.min = Value::UInt(lo);
                zone.max = Value::UInt(hi);
            } else {
                let live = || values.iter().zip(&ints).filter(|(v, _)| !v.is_null());
                let lo = live().map(|(_, &i)| i).min().unwrap();
                let hi = live().map(|(_, &i)| i).max().unwrap();
                zone.min = phys.int_value(lo);
                zone.max = phys.int_value(hi);
            }
            let runs = 1 + ints.windows(2).filter(|w| w[0] != w[1]).count();
            let base = *ints.iter().min().unwrap();
            let span = ints
                .iter()
                .map(|&i| (i as i128 - base as i128) as u64)
                .max()
                .unwrap();
            let width = 64 - span.leading_zeros();
            let packed_bytes = (rows * width as usize).div_ceil(8);
            if runs * 12 < packed_bytes {
                header(&mut out, RLE);
                out.extend_from_slice(&(runs as u32).to_le_bytes());
                let mut i = 0;
                while i < rows {
                    let mut j = i + 1;
                    while j < rows && ints[j] == ints[i] {
                        j += 1;
                    }
                    out.extend_from_slice(&ints[i].to_le_bytes());
                    out.extend_from_slice(&((j - i) as u32).to_le_bytes());
                    i = j;
                }
            } else {
                header(&mut out, FOR);
                out.extend_from_slice(&base.to_le_bytes());
                out.push(width as u8);
                pack(ints.iter().copied(), base, width, &mut out);
            }
            return (out, zone);
        }
        // Decimals too wide for 64 bits: 128 bits where they all fit, else 256.
        let ms: Vec<Mantissa> = values
            .iter()
            .map(|v| match (v.is_null(), phys) {
                (false, Phys::Decimal(s)) => v.to_decimal().rescale(s).mantissa,
                _ => Mantissa::ZERO,
            })
            .collect();
        let narrow = ms.iter().all(|m| m.to_i128().is_some());
        header(&mut out, if narrow { I128 } else { I256 });
        for (v, m) in values.iter().zip(&ms) {
            match m.to_i128() {
                Some(n) if narrow => out.extend_from_slice(&n.to_le_bytes()),
                _ => out.extend_from_slice(&m.to_le_bytes()),
            }
            if !v.is_null() {
                widen(
                    &mut zone,
                    phys.normalize((*v).clone()).unwrap_or(Value::Null),
                );
            }
        }
        return (out, zone);
    }
    if phys == Phys::Double {
        header(&mut out, F64);
        for v in values {
            let f = if v.is_null() { 0.0 } else { v.to_f64() };
            out.extend_from_slice(&f.to_le_bytes());
            if !v.is_null() {
                widen(&mut zone, Value::Double(f));
            }
        }
        return (out, zone);
    }
    // Strings and binary strings: slices of the values, never copies.
    let slices: Vec<Cow<[u8]>> = values
        .iter()
        .map(|v| match v {
            Value::Str(s) => Cow::Borrowed(s.as_bytes()),
            Value::Bytes(b) => Cow::Borrowed(b.as_slice()),
            Value::Null => Cow::Borrowed(&[][..]),
            other => Cow::Owned(other.as_str_lossy().as_bytes().to_vec()),
        })
        .collect();
    let mut present = [false; 256];
    for b in &slices {
        for &c in b.iter() {
            present[c as usize] = true;
        }
    }
    let ascii = !present[128..].contains(&true);
    // Order as the values compare: the collation for text, bytes for binary strings.
    let order_of = |a: &[u8], b: &[u8]| -> std::cmp::Ordering {
        if phys == Phys::Bytes {
            return a.cmp(b);
        }
        if ascii {
            return collate_cmp_ascii(a, b);
        }
        match (std::str::from_utf8(a), std::str::from_utf8(b)) {
            (Ok(a), Ok(b)) => collate_cmp(a, b),
            _ => a.cmp(b),
        }
    };
    let mut bounds: Option<(&[u8], &[u8])> = None;
    let dict = dictionary(values, &slices);
    if let Some((mut dict, mut order)) = dict {
        // Sorted as the values compare, so a comparison with a constant is a range of
        // codes found by binary search.
        order.sort_by(|a, b| order_of(a, b));
        for (code, d) in order.iter().enumerate() {
            dict.insert(d, code as u16);
        }
        bounds = order.first().zip(order.last()).map(|(a, b)| (*a, *b));
        header(&mut out, DICT);
        out.extend_from_slice(&(order.len() as u32).to_le_bytes());
        for d in &order {
            out.extend_from_slice(&(d.len() as u32).to_le_bytes());
            out.extend_from_slice(d);
        }
        let wide = order.len() > 256;
        out.push(if wide { 2 } else { 1 });
        out.reserve(rows * if wide { 2 } else { 1 });
        for (v, b) in values.iter().zip(&slices) {
            let code = if v.is_null() { 0 } else { dict[&**b] };
            if wide {
                out.extend_from_slice(&code.to_le_bytes());
            } else {
                out.push(code as u8);
            }
        }
    } else {
        match digit_form(values, &slices, &present) {
            Some((form, ints)) => {
                header(&mut out, DIGITS);
                out.push(form.width);
                out.push(form.scale);
                let base = ints.iter().copied().min().unwrap_or(0);
                let span = ints.iter().map(|&i| (i - base) as u64).max().unwrap_or(0);
                let width = 64 - span.leading_zeros();
                out.extend_from_slice(&base.to_le_bytes());
                out.push(width as u8);
                pack(ints.iter().copied(), base, width, &mut out);
            }
            None => {
                header(&mut out, PACKED);
                pack_strings(values, &slices, &present, &mut out);
            }
        }
        for (v, b) in values.iter().zip(&slices) {
            if v.is_null() {
                continue;
            }
            bounds = Some(match bounds {
                None => (b, b),
                Some((lo, hi)) => (
                    if order_of(b, lo).is_lt() { b } else { lo },
                    if order_of(b, hi).is_gt() { b } else { hi },
                ),
            });
        }
    }
    if let Some((lo, hi)) = bounds {
        zone.min = phys.bytes_value(lo).unwrap_or(Value::Null);
        zone.max = phys.bytes_value(hi).unwrap_or(Value::Null);
    }
    (out, zone)
}

/// A dictionary (of text) in the collation's order, its codes renumbered to match: one
/// written before the plain collation folded accents may hold 'Ä' after 'Z'.
fn resort_dictionary(dict: Data) -> Data {
    let Data::Dict {
        offsets,
        bytes,
        codes,
    } = dict
    else {
        return dict;
    };
    let n = offsets.len() - 1;
    let entry = |i: usize| {
        std::str::from_utf8(&bytes[offsets[i] as usize..offsets[i + 1] as usize]).unwrap_or("")
    };
    if (1..n).all(|i| collate_cmp(entry(i - 1), entry(i)).is_le()) {
        return Data::Dict {
            offsets,
            bytes,
            codes,
        };
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| collate_cmp(entry(a), entry(b)));
    let mut renumber = vec![0u16; n];
    let mut new_offsets = Vec::with_capacity(n + 1);
    let mut new_bytes = Vec::with_capacity(bytes.len());
    new_offsets.push(0u32);
    for (code, &old) in order.iter().enumerate() {
        renumber[old] = code as u16;
        new_bytes.extend_from_slice(entry(old).as_bytes());
        new_offsets.push(new_bytes.len() as u32);
    }
    let codes = match codes {
        Codes::U8(c) => Codes::U8(c.into_iter().map(|x| renumber[x as usize] as u8).collect()),
        Codes::U16(c) => Codes::U16(c.into_iter().map(|x| renumber[x as usize]).collect()),
    };
    Data::Dict {
        offsets: new_offsets,
        bytes: new_bytes,
        codes,
    }
}

type Dict<'a> = WordMap<&'a [u8], u16>;

/// A dictionary for the chunk when its distinct values are few (at most half the rows and
/// 65 535): code by value, and the values in first-seen order.
fn dictionary<'a>(
    values: &[&Value],
    slices: &'a [Cow<'a, [u8]>],
) -> Option<(Dict<'a>, Vec<&'a [u8]>)> {
    // A column of (nearly) unique values shows it early: give up after a sample rather
    // than hash half the chunk first (this is on the load path).
    const SAMPLE: usize = 8192;
    let rows = values.len();
    let limit = (rows / 2).min(u16::MAX as usize);
    let mut dict = Dict::default();
    let mut order: Vec<&[u8]> = vec![];
    let mut seen = 0;
    for (v, b) in values.iter().zip(slices) {
        if v.is_null() {
            continue;
        }
        seen += 1;
        if seen == SAMPLE && order.len() * 10 > SAMPLE * 9 {
            return None;
        }
        if dict.contains_key(&**b) {
            continue;
        }
        if order.len() >= limit {
            return None;
        }
        dict.insert(&**b, order.len() as u16);
        order.push(&**b);
    }
    Some((dict, order))
}

/// PACKED strings: the lengths bit-packed from their minimum, then every byte as a k-bit
/// code into the chunk's sorted alphabet when it has at most 128 symbols (digits take 4
/// bits, upper-case words 5), or as itself (k = 8). NULLs take no bytes.
fn pack_strings(values: &[&Value], slices: &[Cow<[u8]>], present: &[bool; 256], out: &mut Vec<u8>) {
    let live = || {
        values
            .iter()
            .zip(slices)
            .filter(|(v, _)| !v.is_null())
            .map(|(_, b)| b.len() as i64)
    };
    let base = live().min().unwrap_or(0);
    let span = live().max().unwrap_or(0) - base;
    let lens = values
        .iter()
        .zip(slices)
        .map(|(v, b)| if v.is_null() { base } else { b.len() as i64 });
    let width = 64 - (span as u64).leading_zeros();
    out.extend_from_slice(&base.to_le_bytes());
    out.push(width as u8);
    pack(lens, base, width, out);
    let alphabet: Vec<u8> = (0..=255u8).filter(|&c| present[c as usize]).collect();
    let k = match alphabet.len() {
        0 | 1 => 0,
        n => usize::BITS - (n - 1).leading_zeros(),
    };
    if k >= 8 {
        out.push(8);
        for b in slices {
            out.extend_from_slice(b);
        }
        return;
    }
    out.push(k as u8);
    out.push(alphabet.len() as u8);
    out.extend_from_slice(&alphabet);
    let mut code = [0u8; 256];
    for (i, &c) in alphabet.iter().enumerate() {
        code[c as usize] = i as u8;
    }
    let total: usize = slices.iter().map(|b| b.len()).sum();
    out.reserve((total * k as usize).div_ceil(8));
    let (mut acc, mut bits) = (0u64, 0u32);
    for b in slices {
        for &c in b.iter() {
            acc |= (code[c as usize] as u64) << bits;
            bits += k;
            if bits >= 32 {
                out.extend_from_slice(&(acc as u32).to_le_bytes());
                acc >>= 32;
                bits -= 32;
            }
        }
    }
    out.extend_from_slice(&acc.to_le_bytes()[..bits.div_ceil(8) as usize]);
}

/// How DIGITS strings are written back from their integers: zero-padded to `width`
/// characters (0: without leading zeros), with a point before the last `scale` digits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DigitForm {
    width: u8,
    scale: u8,
}

impl DigitForm {
    /// Whether the strings sort as their integers do (all of one width).
    pub fn fixed(self) -> bool {
        self.width > 0
    }

    fn write(self, v: i64, out: &mut Vec<u8>) {
        let scale = self.scale as usize;
        // At least the digits the form needs: its width less the point, or one before it.
        let min = match (self.width as usize, scale) {
            (0, s) => s + 1,
            (w, 0) => w,
            (w, _) => w - 1,
        };
        const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
            2021222324252627282930313233343536373839\
            4041424344454647484950515253545556575859\
            6061626364656667686970717273747576777879\
            8081828384858687888990919293949596979899";
        let mut buf = [b'0'; 24];
        let mut at = buf.len();
        let mut n = v.unsigned_abs();
        // Two digits a step: this is every row of a scan of such a column.
        while n >= 100 {
            let p = (n % 100) as usize * 2;
            n /= 100;
            at -= 2;
            buf[at..at + 2].copy_from_slice(&PAIRS[p..p + 2]);
        }
        while n > 0 {
            at -= 1;
            buf[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        // Zero padding: the buffer is zeros already.
        at = at.min(buf.len().saturating_sub(min));
        let digits = &buf[at..];
        if scale == 0 {
            out.extend_from_slice(digits);
        } else {
            let (int, frac) = digits.split_at(digits.len() - scale.min(digits.len()));
            out.extend_from_slice(int);
            out.push(b'.');
            out.extend_from_slice(frac);
        }
    }
}

/// Whether every non-NULL string of the chunk is digits with the point (if any) at one
/// place from the end, written back exactly by one [`DigitForm`]: then the integers
/// (NULLs as 0) pack into fewer bits than the strings' characters would.
fn digit_form(
    values: &[&Value],
    slices: &[Cow<[u8]>],
    present: &[bool; 256],
) -> Option<(DigitForm, Vec<i64>)> {
    let symbols = present.iter().filter(|&&p| p).count();
    let only_digits = present
        .iter()
        .enumerate()
        .all(|(c, &p)| !p || (c as u8).is_ascii_digit() || c as u8 == b'.');
    if !only_digits {
        return None;
    }
    let first = values.iter().zip(slices).find(|(v, _)| !v.is_null())?.1;
    let scale = first.iter().rev().position(|&c| c == b'.').unwrap_or(0);
    let (mut same_len, mut canonical) = (true, true);
    let mut ints = Vec::with_capacity(values.len());
    let mut chars = 0usize;
    for (v, b) in values.iter().zip(slices) {
        if v.is_null() {
            ints.push(0);
            continue;
        }
        let int_len = b.len().checked_sub(if scale > 0 { scale + 1 } else { 0 })?;
        // At most 18 characters: the digits fit an i64.
        if int_len == 0 || b.len() > 18 || (scale > 0 && b[int_len] != b'.') {
            return None;
        }
        let mut n = 0i64;
        for (i, &c) in b.iter().enumerate() {
            if i == int_len && scale > 0 {
                continue;
            }
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + (c - b'0') as i64;
        }
        same_len &= b.len() == first.len();
        canonical &= int_len == 1 || b[0] != b'0';
        chars += b.len();
        ints.push(n);
    }
    let form = DigitForm {
        width: if same_len && !canonical {
            first.len() as u8
        } else {
            0
        },
        scale: scale as u8,
    };
    if !same_len && !canonical {
        return None;
    }
    // Worth it only when the integers take fewer bits than the packed characters.
    let live = ints.iter().zip(values).filter(|(_, v)| !v.is_null());
    let lo = live.clone().map(|(&i, _)| i).min()?;
    let hi = live.map(|(&i, _)| i).max()?;
    let int_bits = values.len() as u64 * (64 - ((hi - lo) as u64).leading_zeros()) as u64;
    let char_bits = chars as u64 * (usize::BITS - (symbols.max(2) - 1).leading_zeros()) as u64;
    // NULL rows take the smallest value, so they widen nothing.
    for (i, v) in ints.iter_mut().zip(values) {
        if v.is_null() {
            *i = lo;
        }
    }
    (int_bits < char_bits).then_some((form, ints))
}

/// A DIGITS chunk's integers, left packed.
pub(crate) fn read_digits(r: &mut Reader, rows: usize) -> Result<Digits> {
    let form = DigitForm {
        width: r.take(1)?[0],
        scale: r.take(1)?[0],
    };
    if form.width > 18 || form.scale > 17 || (form.width > 0 && form.width <= form.scale) {
        return Err(Error::corrupt("column chunk: bad digit form"));
    }
    let base = r.i64()?;
    let width = r.take(1)?[0] as u32;
    if width > 64 {
        return Err(Error::corrupt("column chunk: bad digit width"));
    }
    let mut packed = r.take((rows * width as usize).div_ceil(8))?.to_vec();
    packed.extend_from_slice(&[0; 16]);
    Ok(Digits {
        form,
        base,
        width,
        packed,
    })
}

/// The (offsets, bytes) of a PACKED chunk.
fn unpack_strings(
    r: &mut Reader,
    rows: usize,
    nulls: Option<&[u8]>,
) -> Result<(Vec<u32>, Vec<u8>)> {
    let base = r.i64()?;
    let width = r.take(1)?[0] as u32;
    let packed = r.take((rows * width as usize).div_ceil(8))?;
    let mut offsets = Vec::with_capacity(rows + 1);
    let mut end = 0u64;
    offsets.push(0u32);
    let (mut i, mut bad) = (0, false);
    each_unpacked(packed, rows, base, width, |len| {
        if nulls.is_none_or(|bm| bm[i / 8] & (1 << (i % 8)) == 0) {
            bad |= len < 0;
            end = end.saturating_add(len.max(0) as u64);
        }
        bad |= end > u32::MAX as u64;
        offsets.push(end as u32);
        i += 1;
    })?;
    if bad {
        return Err(Error::corrupt("column chunk: bad length"));
    }
    let total = end as usize;
    let k = r.take(1)?[0] as u32;
    if k == 8 {
        return Ok((offsets, r.take(total)?.to_vec()));
    }
    if k > 8 {
        return Err(Error::corrupt("column chunk: bad symbol width"));
    }
    let n = r.take(1)?[0] as usize;
    let alphabet = r.take(n)?;
    if n == 0 && total > 0 || n > 1 << k {
        return Err(Error::corrupt("column chunk: bad alphabet"));
    }
    let packed = r.take((total * k as usize).div_ceil(8))?;
    let mut data = vec![0u8; total];
    if total == 0 {
        return Ok((offsets, data));
    }
    if k == 0 {
        data.fill(alphabet.first().copied().unwrap_or(0));
        return Ok((offsets, data));
    }
    // Codes past the alphabet only come from a damaged file; they read as its last symbol.
    let mut symbol = [alphabet[n - 1]; 256];
    symbol[..n].copy_from_slice(alphabet);
    let mask = (1u64 << k) - 1;
    // Where eight bytes are left, one word holds the next 56 / k symbols whole (they start
    // at most 7 bits into it).
    let per = (56 / k) as usize;
    let mut done = 0usize;
    let mut bit = 0usize;
    while done + per <= total && bit / 8 + 8 <= packed.len() {
        let at = bit / 8;
        let word = u64::from_le_bytes(packed[at..at + 8].try_into().unwrap()) >> (bit % 8);
        for (j, d) in data[done..done + per].iter_mut().enumerate() {
            *d = symbol[((word >> (j as u32 * k)) & mask) as usize];
        }
        done += per;
        bit += per * k as usize;
    }
    let (mut acc, mut bits, mut pos) = (0u64, 0u32, bit / 8);
    if !bit.is_multiple_of(8) {
        acc = (packed[pos] >> (bit % 8)) as u64;
        bits = 8 - (bit % 8) as u32;
        pos += 1;
    }
    for d in data[done..].iter_mut() {
        if bits < k {
            let mut word = [0u8; 4];
            let avail = (packed.len() - pos).min(4);
            word[..avail].copy_from_slice(&packed[pos..pos + avail]);
            pos += avail;
            acc |= (u32::from_le_bytes(word) as u64) << bits;
            bits += 32;
        }
        *d = symbol[(acc & mask) as usize];
        acc >>= k;
        bits -= k;
    }
    Ok((offsets, data))
}

fn pack(ints: impl IntoIterator<Item = i64>, base: i64, width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    for i in ints {
        acc |= ((i as i128 - base as i128) as u64 as u128) << bits;
        bits += width;
        while bits >= 8 {
            out.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    if bits > 0 {
        out.push(acc as u8);
    }
}

fn unpack(buf: &[u8], rows: usize, base: i64, width: u32) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(rows);
    each_unpacked(buf, rows, base, width, |v| out.push(v))?;
    Ok(out)
}

/// Hand `f` each of `rows` packed integers in turn (no buffer of them all: a segment's
/// worth is large enough for the allocator to map fresh pages for it each time).
fn each_unpacked(
    buf: &[u8],
    rows: usize,
    base: i64,
    width: u32,
    mut f: impl FnMut(i64),
) -> Result<()> {
    if width == 0 {
        (0..rows).for_each(|_| f(base));
        return Ok(());
    }
    if width > 64 || buf.len() < (rows * width as usize).div_ceil(8) {
        return Err(Error::corrupt("column chunk: packed integers truncated"));
    }
    let mut done = 0;
    if width <= 56 {
        // Each value whose eight bytes lie in the buffer is one little-endian word read
        // and a shift (it starts at most 7 bits in and is at most 56 wide).
        let w = width as usize;
        let mask = (1u64 << width) - 1;
        let whole = match buf.len().checked_sub(8) {
            Some(last) => (last * 8 / w + 1).min(rows),
            None => 0,
        };
        for i in 0..whole {
            let bit = i * w;
            let at = bit / 8;
            let word = u64::from_le_bytes(buf[at..at + 8].try_into().unwrap());
            f(base.wrapping_add(((word >> (bit % 8)) & mask) as i64));
        }
        done = whole;
    }
    let mask: u128 = if width == 64 {
        u64::MAX as u128
    } else {
        (1u128 << width) - 1
    };
    let mut acc: u128 = 0;
    let mut bits = 0u32;
    let start = done * width as usize;
    let mut pos = start / 8;
    if !start.is_multiple_of(8) {
        acc = (buf[pos] >> (start % 8)) as u128;
        bits = 8 - (start % 8) as u32;
        pos += 1;
    }
    for _ in done..rows {
        while bits < width {
            acc |= (buf[pos] as u128) << bits;
            pos += 1;
            bits += 8;
        }
        let d = (acc & mask) as u64;
        acc >>= width;
        bits -= width;
        f((base as i128 + d as i128) as i64);
    }
    Ok(())
}

/// Dictionary codes, one or two bytes each.
#[derive(Debug)]
pub(crate) enum Codes {
    U8(Vec<u8>),
    U16(Vec<u16>),
}

#[derive(Debug)]
pub(crate) enum Data {
    AllNull,
    Ints(Vec<i64>),
    F64(Vec<f64>),
    /// Distinct values as bytes (`offsets` has one more entry than there are values),
    /// and a code per row.
    Dict {
        offsets: Vec<u32>,
        bytes: Vec<u8>,
        codes: Codes,
    },
    Plain {
        offsets: Vec<u32>,
        data: Vec<u8>,
    },
    /// Decimals too wide for 64 bits (tags 6 and 9).
    Wide(Vec<Mantissa>),
    /// DIGITS strings, left packed: a row's string is written only when it is asked for.
    Digits(Digits),
}

/// Packed integers read one at a time, and the form that writes them as strings.
#[derive(Debug)]
pub(crate) struct Digits {
    pub form: DigitForm,
    base: i64,
    width: u32,
    /// The packed bits, with 16 bytes of zeros after them for whole-word reads.
    packed: Vec<u8>,
}

impl Digits {
    pub fn int(&self, i: usize) -> i64 {
        if self.width == 0 {
            return self.base;
        }
        let bit = i * self.width as usize;
        let at = bit / 8;
        let word = u128::from_le_bytes(self.packed[at..at + 16].try_into().unwrap());
        let v = (word >> (bit % 8)) as u64 & (u64::MAX >> (64 - self.width));
        self.base.wrapping_add(v as i64)
    }

    /// Row `i`'s string, appended to `out`.
    pub fn write(&self, i: usize, out: &mut Vec<u8>) {
        let v = self.int(i);
        // A negative value only comes from damage: it reads as no digits.
        if v >= 0 {
            self.form.write(v, out);
        }
    }

    /// The integer a string constant is stored as, if any row can equal it.
    fn parse(&self, k: &str) -> Option<i64> {
        let k = k.trim_end_matches(' ');
        if k.is_empty() || k.len() > 18 {
            return None;
        }
        let mut n = 0i64;
        for c in k.bytes().filter(|&c| c != b'.') {
            if !c.is_ascii_digit() {
                return None;
            }
            n = n * 10 + (c - b'0') as i64;
        }
        let mut back = Vec::new();
        self.form.write(n, &mut back);
        (back == k.as_bytes()).then_some(n)
    }
}

/// A decoded chunk.
#[derive(Debug)]
pub(crate) struct Chunk {
    pub rows: usize,
    /// Null bitmap (bit set = NULL) when the chunk has NULLs.
    pub nulls: Option<Vec<u8>>,
    pub data: Data,
    pub phys: Phys,
}

pub(crate) struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .buf
            .get(self.pos..self.pos + n)
            .ok_or_else(|| Error::corrupt("column chunk truncated"))?;
        self.pos += n;
        Ok(s)
    }
    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    pub(crate) fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().unwrap()))
    }
}

/// Decode a chunk's bytes (as `encode` wrote them).
pub(crate) fn decode(phys: Phys, buf: &[u8]) -> Result<Chunk> {
    let mut r = Reader { buf, pos: 0 };
    let tag = r.take(1)?[0];
    let rows = r.u32()? as usize;
    if rows > MAX_ROWS {
        return Err(Error::corrupt("column chunk: too many rows"));
    }
    let nulls = r.u32()? as usize;
    let nulls = if nulls > 0 && tag != ALL_NULL {
        Some(r.take(rows.div_ceil(8))?.to_vec())
    } else {
        None
    };
    let data = match tag {
        ALL_NULL => Data::AllNull,
        FOR => {
            let base = r.i64()?;
            let width = r.take(1)?[0] as u32;
            Data::Ints(unpack(&buf[r.pos..], rows, base, width)?)
        }
        RLE => {
            let runs = r.u32()? as usize;
            let mut v = Vec::with_capacity(rows);
            for _ in 0..runs {
                let x = r.i64()?;
                let n = r.u32()? as usize;
                if v.len() + n > rows {
                    return Err(Error::corrupt("column chunk: runs exceed rows"));
                }
                v.resize(v.len() + n, x);
            }
            if v.len() != rows {
                return Err(Error::corrupt("column chunk: runs short of rows"));
            }
            Data::Ints(v)
        }
        F64 => Data::F64(
            r.take(rows * 8)?
                .chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        I128 => Data::Wide(
            r.take(rows * 16)?
                .chunks_exact(16)
                .map(|c| Mantissa::from(i128::from_le_bytes(c.try_into().unwrap())))
                .collect(),
        ),
        I256 => Data::Wide(
            r.take(rows * 32)?
                .chunks_exact(32)
                .map(|c| Mantissa::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DICT | DICT_CASE_ONLY => {
            let n = r.u32()? as usize;
            let mut offsets = Vec::with_capacity(n + 1);
            let mut bytes = Vec::new();
            offsets.push(0u32);
            for _ in 0..n {
                let len = r.u32()? as usize;
                let b = r.take(len)?;
                if phys == Phys::Str && std::str::from_utf8(b).is_err() {
                    return Err(Error::corrupt("invalid utf-8 in column chunk"));
                }
                bytes.extend_from_slice(b);
                offsets.push(bytes.len() as u32);
            }
            let codes = match r.take(1)?[0] {
                1 => Codes::U8(r.take(rows)?.to_vec()),
                _ => Codes::U16(
                    r.take(rows * 2)?
                        .chunks_exact(2)
                        .map(|c| u16::from_le_bytes([c[0], c[1]]))
                        .collect(),
                ),
            };
            let max = match &codes {
                Codes::U8(c) => c.iter().map(|&x| x as usize).max(),
                Codes::U16(c) => c.iter().map(|&x| x as usize).max(),
            };
            if max.is_some_and(|m| m >= n) {
                return Err(Error::corrupt("column chunk: code outside dictionary"));
            }
            let dict = Data::Dict {
                offsets,
                bytes,
                codes,
            };
            if tag == DICT_CASE_ONLY && phys == Phys::Str {
                resort_dictionary(dict)
            } else {
                dict
            }
        }
        PACKED => {
            let (offsets, data) = unpack_strings(&mut r, rows, nulls.as_deref())?;
            Data::Plain { offsets, data }
        }
        DIGITS => Data::Digits(read_digits(&mut r, rows)?),
        PLAIN => {
            let offsets: Vec<u32> = r
                .take((rows + 1) * 4)?
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            let end = *offsets.last().unwrap_or(&0) as usize;
            if offsets.windows(2).any(|w| w[0] > w[1]) {
                return Err(Error::corrupt("column chunk: offsets out of order"));
            }
            Data::Plain {
                offsets,
                data: r.take(end)?.to_vec(),
            }
        }
        t => {
            return Err(Error::corrupt(format!(
                "column chunk: unknown encoding {t}"
            )))
        }
    };
    Ok(Chunk {
        rows,
        nulls,
        data,
        phys,
    })
}

impl Chunk {
    /// Memory the decoded chunk holds (what a cache of chunks budgets).
    pub(crate) fn heap_bytes(&self) -> usize {
        let data = match &self.data {
            Data::AllNull => 0,
            Data::Ints(v) => v.len() * 8,
            Data::F64(v) => v.len() * 8,
            Data::Dict {
                offsets,
                bytes,
                codes,
            } => {
                offsets.len() * 4
                    + bytes.len()
                    + match codes {
                        Codes::U8(c) => c.len(),
                        Codes::U16(c) => c.len() * 2,
                    }
            }
            Data::Plain { offsets, data } => offsets.len() * 4 + data.len(),
            Data::Wide(v) => v.len() * std::mem::size_of::<Mantissa>(),
            Data::Digits(d) => d.packed.len(),
        };
        data + self.nulls.as_ref().map_or(0, Vec::len) + std::mem::size_of::<Chunk>()
    }

    #[inline]
    pub(crate) fn is_null(&self, i: usize) -> bool {
        match (&self.data, &self.nulls) {
            (Data::AllNull, _) => true,
            (_, Some(bm)) => bm[i / 8] & (1 << (i % 8)) != 0,
            _ => false,
        }
    }

    /// The value of row `i`.
    pub(crate) fn value(&self, i: usize) -> Result<Value> {
        if self.is_null(i) {
            return Ok(Value::Null);
        }
        Ok(match &self.data {
            Data::AllNull => Value::Null,
            Data::Ints(v) => self.phys.int_value(v[i]),
            Data::F64(v) => Value::Double(v[i]),
            Data::Wide(v) => match self.phys {
                Phys::Decimal(s) => Value::Decimal(Decimal::new(v[i], s)),
                _ => Value::Null,
            },
            Data::Dict {
                offsets,
                bytes,
                codes,
            } => {
                let c = match codes {
                    Codes::U8(c) => c[i] as usize,
                    Codes::U16(c) => c[i] as usize,
                };
                self.phys
                    .bytes_value(&bytes[offsets[c] as usize..offsets[c + 1] as usize])?
            }
            Data::Plain { offsets, data } => self
                .phys
                .bytes_value(&data[offsets[i] as usize..offsets[i + 1] as usize])?,
            Data::Digits(d) => {
                let mut b = Vec::with_capacity(20);
                d.write(i, &mut b);
                self.phys.owned_bytes_value(b)?
            }
        })
    }

    /// Truth of the leaf `p` for each dictionary entry. Comparisons with a constant of the
    /// column's own kind take the range of codes from two binary searches of the sorted
    /// dictionary; other conditions are decided entry by entry.
    fn dict_truth(&self, p: &Pred, offsets: &[u32], bytes: &[u8]) -> Result<Vec<u8>> {
        let n = offsets.len() - 1;
        let entry = |i: usize| &bytes[offsets[i] as usize..offsets[i + 1] as usize];
        let key = |v: &Value| -> Option<Vec<u8>> {
            match (self.phys, v) {
                (Phys::Str, Value::Str(s)) => Some(s.as_bytes().to_vec()),
                (Phys::Bytes, Value::Bytes(b)) => Some(b.clone()),
                _ => None,
            }
        };
        let order = |a: &[u8], b: &[u8]| match (
            self.phys,
            std::str::from_utf8(a),
            std::str::from_utf8(b),
        ) {
            (Phys::Str, Ok(a), Ok(b)) => collate_cmp(a, b),
            _ => a.cmp(b),
        };
        // Codes whose entry sorts before `k`, and those not after it.
        let bounds = |k: &[u8]| {
            let lo = partition(n, |i| order(entry(i), k).is_lt());
            let hi = partition(n, |i| order(entry(i), k).is_le());
            (lo, hi)
        };
        let fill = |ranges: &[(usize, usize)], inside: u8, outside: u8| {
            let mut t = vec![outside; n];
            for &(a, b) in ranges {
                t[a..b].iter_mut().for_each(|x| *x = inside);
            }
            t
        };
        match p {
            Pred::Cmp { op, value, .. } => {
                if let Some(k) = key(value) {
                    let (lo, hi) = bounds(&k);
                    return Ok(match op {
                        CmpOp::Eq | CmpOp::NullSafeEq => fill(&[(lo, hi)], TRUE, FALSE),
                        CmpOp::Ne => fill(&[(lo, hi)], FALSE, TRUE),
                        CmpOp::Lt => fill(&[(0, lo)], TRUE, FALSE),
                        CmpOp::Le => fill(&[(0, hi)], TRUE, FALSE),
                        CmpOp::Gt => fill(&[(hi, n)], TRUE, FALSE),
                        CmpOp::Ge => fill(&[(lo, n)], TRUE, FALSE),
                    });
                }
            }
            Pred::In { values, .. } if values.iter().all(|v| key(v).is_some()) => {
                let ranges: Vec<(usize, usize)> =
                    values.iter().map(|v| bounds(&key(v).unwrap())).collect();
                return Ok(fill(&ranges, TRUE, FALSE));
            }
            Pred::Between { lo, hi, .. } => {
                if let (Some(a), Some(b)) = (key(lo), key(hi)) {
                    let from = bounds(&a).0;
                    let to = bounds(&b).1.max(from);
                    return Ok(fill(&[(from, to)], TRUE, FALSE));
                }
            }
            _ => {}
        }
        let leaf = BytesLeaf::new(p);
        (0..n).map(|i| leaf.eval(self.phys, entry(i))).collect()
    }

    /// The number of rows for which the leaf `p` is true, counted on dictionary codes
    /// without a truth per row (None: not a dictionary chunk).
    pub(crate) fn count_leaf(&self, p: &Pred) -> Result<Option<u64>> {
        let Data::Dict {
            offsets,
            bytes,
            codes,
        } = &self.data
        else {
            return Ok(None);
        };
        let table: Vec<bool> = self
            .dict_truth(p, offsets, bytes)?
            .into_iter()
            .map(|t| t == TRUE)
            .collect();
        let trues: Vec<usize> = (0..table.len()).filter(|&i| table[i]).collect();
        // NULL rows carry code 0: counted apart.
        // True codes that form one range (a sorted dictionary's comparisons): counted by
        // comparing codes with its ends.
        let range = match (trues.first(), trues.last()) {
            (Some(&a), Some(&b)) if b - a + 1 == trues.len() => Some((a, b)),
            _ => None,
        };
        let mut n = match (codes, range) {
            _ if trues.is_empty() => 0,
            (Codes::U8(c), Some((a, b))) => c
                .iter()
                .filter(|&&x| (x as usize).wrapping_sub(a) <= b - a)
                .count(),
            (Codes::U16(c), Some((a, b))) => c
                .iter()
                .filter(|&&x| (x as usize).wrapping_sub(a) <= b - a)
                .count(),
            (Codes::U8(c), None) => c.iter().filter(|&&x| table[x as usize]).count(),
            (Codes::U16(c), None) => c.iter().filter(|&&x| table[x as usize]).count(),
        } as u64;
        if self.nulls.is_some() {
            let nulls = (0..self.rows).filter(|&i| self.is_null(i)).count() as u64;
            if table.first() == Some(&true) {
                n -= nulls;
            }
            if p.eval_value(&Value::Null) == Some(true) {
                n += nulls;
            }
        }
        Ok(Some(n))
    }

    /// Truth of the leaf `p` (a condition on this chunk's column) for every row: the
    /// truth of all rows when it is the same for each (`out` is then left empty), else
    /// None with one truth per row in `out`.
    pub(crate) fn eval_leaf(&self, p: &Pred, out: &mut Vec<u8>) -> Result<Option<u8>> {
        out.clear();
        let null_truth = tri(p.eval_value(&Value::Null));
        if let Pred::InKeys { keys, .. } = p {
            // A runtime filter that keeps nearly everything is not checked at all (it is
            // never exact: the join compares the keys again).
            if !keys.worth_it() {
                return Ok(Some(TRUE));
            }
        }
        match &self.data {
            Data::AllNull => return Ok(Some(null_truth)),
            Data::Dict {
                offsets,
                bytes,
                codes,
            } => {
                let table = self.dict_truth(p, offsets, bytes)?;
                let first = table.first().copied().unwrap_or(null_truth);
                if table.iter().all(|&t| t == first)
                    && (self.nulls.is_none() || null_truth == first)
                {
                    return Ok(Some(first));
                }
                // One value true, the rest alike: a comparison of codes, not a lookup.
                let trues: Vec<usize> = (0..table.len()).filter(|&i| table[i] == TRUE).collect();
                let other = table.iter().copied().find(|&t| t != TRUE).unwrap_or(FALSE);
                let single = trues.len() == 1 && table.iter().all(|&t| t == TRUE || t == other);
                match (codes, single) {
                    (Codes::U8(c), true) => {
                        let k = trues[0] as u8;
                        out.extend(c.iter().map(|&x| if x == k { TRUE } else { other }))
                    }
                    (Codes::U16(c), true) => {
                        let k = trues[0] as u16;
                        out.extend(c.iter().map(|&x| if x == k { TRUE } else { other }))
                    }
                    (Codes::U8(c), false) => out.extend(c.iter().map(|&x| table[x as usize])),
                    (Codes::U16(c), false) => out.extend(c.iter().map(|&x| table[x as usize])),
                }
            }
            Data::Ints(v) if matches!(self.phys, Phys::Int | Phys::Decimal(_) | Phys::Date) => {
                match p {
                    Pred::InKeys { keys, .. } if self.phys == Phys::Int => {
                        out.extend(
                            v.iter()
                                .map(|&x| if keys.contains(x) { TRUE } else { FALSE }),
                        );
                        let kept = out.iter().filter(|&&t| t == TRUE).count();
                        keys.record(v.len() as u64, kept as u64);
                    }
                    _ => match int_leaf(p, self.phys) {
                        Some(f) => out.extend(v.iter().map(|&x| f(x))),
                        // Compared as values: a date's stored integer is not the
                        // date a string constant is read as.
                        None => {
                            for &x in v {
                                out.push(tri(p.eval_value(&self.phys.int_value(x))));
                            }
                        }
                    },
                }
            }
            Data::Plain { offsets, data } => {
                let leaf = BytesLeaf::new(p);
                for w in offsets.windows(2) {
                    out.push(leaf.eval(self.phys, &data[w[0] as usize..w[1] as usize])?);
                }
            }
            Data::Digits(d) => match p {
                // Equality with a constant: one integer compared per row.
                Pred::Cmp {
                    op: op @ (CmpOp::Eq | CmpOp::NullSafeEq | CmpOp::Ne),
                    value: Value::Str(k),
                    ..
                } if self.phys == Phys::Str => {
                    let (hit, miss) = if *op == CmpOp::Ne {
                        (FALSE, TRUE)
                    } else {
                        (TRUE, FALSE)
                    };
                    match d.parse(k) {
                        Some(n) => {
                            out.extend(
                                (0..self.rows).map(|i| if d.int(i) == n { hit } else { miss }),
                            )
                        }
                        None => out.resize(self.rows, miss),
                    }
                }
                _ => {
                    let leaf = BytesLeaf::new(p);
                    let mut b = Vec::with_capacity(20);
                    for i in 0..self.rows {
                        b.clear();
                        d.write(i, &mut b);
                        out.push(leaf.eval(self.phys, &b)?);
                    }
                }
            },
            _ => {
                for i in 0..self.rows {
                    out.push(tri(p.eval_value(&self.value(i)?)));
                }
            }
        }
        if self.nulls.is_some() {
            for (i, t) in out.iter_mut().enumerate() {
                if self.is_null(i) {
                    *t = null_truth;
                }
            }
        }
        Ok(None)
    }
}

/// Truth of a leaf for one non-null string value given as bytes; text compared with text
/// constants needs no value built (the collation's comparison and LIKE work on `&str`).
/// A leaf evaluated on many stored strings: a LIKE's pattern prepared once.
struct BytesLeaf<'p> {
    p: &'p Pred,
    like: Option<CompiledLike>,
}

impl<'p> BytesLeaf<'p> {
    fn new(p: &'p Pred) -> BytesLeaf<'p> {
        let like = match p {
            Pred::Like {
                pattern, escape, ..
            } => Some(CompiledLike::new(pattern, *escape)),
            _ => None,
        };
        BytesLeaf { p, like }
    }

    fn eval(&self, phys: Phys, b: &[u8]) -> Result<u8> {
        match &self.like {
            Some(like) if phys == Phys::Str => {
                let m = match like.matches_ascii(b) {
                    Some(m) => m,
                    // Valid UTF-8: checked when the chunk was decoded.
                    None => like.matches(
                        std::str::from_utf8(b)
                            .map_err(|_| Error::corrupt("column chunk: utf-8"))?,
                    ),
                };
                Ok(if m { TRUE } else { FALSE })
            }
            _ => eval_bytes(self.p, phys, b),
        }
    }
}

fn eval_bytes(p: &Pred, phys: Phys, b: &[u8]) -> Result<u8> {
    use std::cmp::Ordering::*;
    if phys == Phys::Str {
        // Valid UTF-8: checked when the chunk was decoded.
        let s = std::str::from_utf8(b).map_err(|_| Error::corrupt("column chunk: utf-8"))?;
        let b3 = |x: bool| if x { TRUE } else { FALSE };
        match p {
            Pred::Cmp {
                op,
                value: Value::Str(k),
                ..
            } => {
                let o = collate_cmp(s, k);
                return Ok(b3(match op {
                    CmpOp::Eq | CmpOp::NullSafeEq => o == Equal,
                    CmpOp::Ne => o != Equal,
                    CmpOp::Lt => o == Less,
                    CmpOp::Le => o != Greater,
                    CmpOp::Gt => o == Greater,
                    CmpOp::Ge => o != Less,
                }));
            }
            Pred::Like {
                pattern, escape, ..
            } => {
                return Ok(b3(quarry_common::compiled_like::like_plain(
                    s, pattern, *escape,
                )))
            }
            _ => {}
        }
    }
    Ok(tri(p.eval_value(&phys.bytes_value(b)?)))
}

/// The first of `0..n` for which `before` is false (`before` holds for a prefix).
fn partition(n: usize, before: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = (lo + hi) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// A comparison of a column stored as signed integers — integers, decimals of the
/// chunk's scale, dates as `year << 9 | month << 5 | day` — against constants of its own
/// family, on the stored integers: each constant becomes the integers it lies between (a
/// decimal constant with more digits than the column keeps falls between two), so the
/// answer is `Value::sql_cmp`'s on the values. None when a constant has no such form.
fn int_leaf(p: &Pred, phys: Phys) -> Option<Box<dyn Fn(i64) -> u8>> {
    let b = |x: bool| if x { TRUE } else { FALSE };
    // The stored integers at or below and at or above a constant (equal when it is one).
    let bounds = |v: &Value| -> Option<(i64, i64)> {
        let exact = |i: i64| Some((i, i));
        match (phys, v) {
            (Phys::Int, Value::Int(k)) => exact(*k),
            (Phys::Decimal(s), Value::Int(_) | Value::Decimal(_)) => {
                let d = v.to_decimal();
                let p = 10i128.checked_pow(d.scale.abs_diff(s) as u32)?;
                let m = d.mantissa.to_i128()?;
                let (lo, hi) = if d.scale <= s {
                    let x = m.checked_mul(p)?;
                    (x, x)
                } else {
                    (
                        m.div_euclid(p),
                        m.div_euclid(p) + (m.rem_euclid(p) != 0) as i128,
                    )
                };
                Some((i64::try_from(lo).ok()?, i64::try_from(hi).ok()?))
            }
            (Phys::Date, Value::Date(d)) => exact(date_stored(d)),
            // A string or number read as a datetime, as `Value::sql_cmp` reads it beside a
            // date: one past midnight lies between its day and the next.
            (Phys::Date, Value::Str(_) | Value::Int(_)) => {
                let o = v.to_datetime()?;
                let lo = date_stored(&o.date);
                let midnight = (o.hour, o.minute, o.second, o.micro) == (0, 0, 0, 0);
                Some((lo, lo + i64::from(!midnight)))
            }
            _ => None,
        }
    };
    match p {
        Pred::Cmp { op, value, .. } => {
            let (lo, hi) = bounds(value)?;
            let on = lo == hi;
            Some(match op {
                CmpOp::Eq | CmpOp::NullSafeEq => Box::new(move |x| b(on && x == lo)),
                CmpOp::Ne => Box::new(move |x| b(!on || x != lo)),
                CmpOp::Lt => Box::new(move |x| b(x < hi)),
                CmpOp::Le => Box::new(move |x| b(x <= lo)),
                CmpOp::Gt => Box::new(move |x| b(x > lo)),
                CmpOp::Ge => Box::new(move |x| b(x >= hi)),
            })
        }
        Pred::Between { lo, hi, .. } => {
            let (lo, hi) = (bounds(lo)?.1, bounds(hi)?.0);
            Some(Box::new(move |x| b(x >= lo && x <= hi)))
        }
        Pred::In { values, .. } => {
            let mut ks = Vec::with_capacity(values.len());
            for v in values {
                let (lo, hi) = bounds(v)?;
                if lo == hi {
                    ks.push(lo);
                }
            }
            ks.sort_unstable();
            Some(Box::new(move |x| b(ks.binary_search(&x).is_ok())))
        }
        _ => None,
    }
}

fn date_stored(d: &Date) -> i64 {
    ((d.year as i64) << 9) | ((d.month as i64) << 5) | d.day as i64
}

/// Values whose order under `Value::sql_cmp` agrees with the zone map's (same family).
fn comparable(a: &Value, b: &Value) -> bool {
    use Value::*;
    matches!(
        (a, b),
        (Int(_) | UInt(_), Int(_) | UInt(_))
            | (Str(_), Str(_))
            | (Bytes(_), Bytes(_))
            | (Date(_), Date(_))
            | (DateTime(_), DateTime(_))
            | (Decimal(_), Decimal(_))
            | (Double(_), Double(_))
    )
}

/// The truth of a leaf for every row of a chunk when its zone map alone decides it (no
/// NULLs, and every value on one side of the constant): `<> 'ABCDE'` over makers that
/// all sort below it is true for each row without reading the chunk.
pub(crate) fn zone_truth(p: &Pred, z: &Zone) -> Option<u8> {
    use std::cmp::Ordering::*;
    if z.nulls > 0 || z.min.is_null() {
        return None;
    }
    let Pred::Cmp { op, value, .. } = p else {
        return None;
    };
    if value.is_null() || !comparable(value, &z.min) {
        return None;
    }
    let below = value.total_cmp(&z.min) == Less; // every value is greater
    let above = value.total_cmp(&z.max) == Greater; // every value is smaller
    let b = |x: bool| Some(if x { TRUE } else { FALSE });
    match op {
        CmpOp::Eq | CmpOp::NullSafeEq if below || above => b(false),
        CmpOp::Ne if below || above => b(true),
        CmpOp::Lt | CmpOp::Le if above => b(true),
        CmpOp::Lt | CmpOp::Le if below => b(false),
        CmpOp::Gt | CmpOp::Ge if below => b(true),
        CmpOp::Gt | CmpOp::Ge if above => b(false),
        _ => None,
    }
}

/// Whether the condition can be true for some row of a segment, from its zone maps
/// (`zone(col)`); false means the segment is skipped.
pub(crate) fn may_match(p: &Pred, zone: &dyn Fn(usize) -> (Zone, u32)) -> bool {
    use std::cmp::Ordering::*;
    match p {
        Pred::And(v) => v.iter().all(|q| may_match(q, zone)),
        Pred::Or(v) => v.iter().any(|q| may_match(q, zone)),
        Pred::Not(q) => match &**q {
            Pred::IsNull { col } => {
                let (z, rows) = zone(*col);
                z.nulls < rows
            }
            _ => true,
        },
        Pred::IsNull { col } => zone(*col).0.nulls > 0,
        leaf => {
            let (z, _) = zone(leaf.column().unwrap_or(0));
            if z.min.is_null() {
                // Every value NULL: only `<=> NULL` can hold.
                return leaf.eval_value(&Value::Null) == Some(true);
            }
            let inside = |v: &Value| {
                !comparable(v, &z.min)
                    || (v.total_cmp(&z.min) != Less && v.total_cmp(&z.max) != Greater)
            };
            match leaf {
                Pred::Cmp { op, value, .. } => {
                    if value.is_null() {
                        return *op == CmpOp::NullSafeEq && z.nulls > 0;
                    }
                    if !comparable(value, &z.min) {
                        return true;
                    }
                    match op {
                        CmpOp::Eq | CmpOp::NullSafeEq => inside(value),
                        CmpOp::Ne => true,
                        CmpOp::Lt => z.min.total_cmp(value) == Less,
                        CmpOp::Le => z.min.total_cmp(value) != Greater,
                        CmpOp::Gt => z.max.total_cmp(value) == Greater,
                        CmpOp::Ge => z.max.total_cmp(value) != Less,
                    }
                }
                Pred::In { values, .. } => values.iter().any(|v| !v.is_null() && inside(v)),
                Pred::InKeys { keys, .. } => match (keys.bounds(), &z.min, &z.max) {
                    (None, Value::Int(_), _) => false,
                    (Some((lo, hi)), Value::Int(min), Value::Int(max)) => lo <= *max && hi >= *min,
                    _ => true,
                },
                Pred::Between { lo, hi, .. } => {
                    if lo.is_null() || hi.is_null() {
                        return false;
                    }
                    let above = comparable(lo, &z.max) && lo.total_cmp(&z.max) == Greater;
                    let below = comparable(hi, &z.min) && hi.total_cmp(&z.min) == Less;
                    !(above || below)
                }
                _ => true,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(phys: Phys, vals: Vec<Value>) -> (Chunk, Zone) {
        let refs: Vec<&Value> = vals.iter().collect();
        let (bytes, zone) = encode(phys, &refs);
        let c = decode(phys, &bytes).unwrap();
        assert_eq!(c.rows, vals.len());
        for (i, v) in vals.iter().enumerate() {
            assert_eq!(&c.value(i).unwrap(), v, "row {i}");
        }
        (c, zone)
    }

    /// A runtime filter's keys decide each integer row as `Pred::eval_value` does (NULL
    /// rows never pass), skip a segment whose zone lies outside them, and stop being
    /// checked — every row passing — once the set keeps nearly all it is asked about.
    #[test]
    fn join_keys_filter_integer_chunks_until_they_stop_paying() {
        let vals: Vec<Value> = (0..3000)
            .map(|i| {
                if i % 11 == 0 {
                    Value::Null
                } else {
                    Value::Int(i % 97 - 40)
                }
            })
            .collect();
        let (c, zone) = roundtrip(Phys::Int, vals.clone());
        let keys = std::sync::Arc::new(quarry_storage_api::KeySet::new(vec![
            -40, -3, 0, 17, 56, 900,
        ]));
        let p = Pred::InKeys {
            col: 0,
            keys: keys.clone(),
        };
        let mut out = Vec::new();
        assert_eq!(c.eval_leaf(&p, &mut out).unwrap(), None);
        for (v, t) in vals.iter().zip(&out) {
            assert_eq!(*t, tri(p.eval_value(v)), "{v:?}");
        }
        assert_eq!(out.iter().filter(|&&t| t == TRUE).count(), 140);
        let zone_of = |z: &Zone| {
            let z = z.clone();
            move |_: usize| (z.clone(), 3000u32)
        };
        assert!(may_match(&p, &zone_of(&zone)));
        let outside = Pred::InKeys {
            col: 0,
            keys: std::sync::Arc::new(quarry_storage_api::KeySet::new(vec![57, 1000])),
        };
        assert!(!may_match(&outside, &zone_of(&zone)));
        let none = Pred::InKeys {
            col: 0,
            keys: std::sync::Arc::new(quarry_storage_api::KeySet::new(vec![])),
        };
        assert!(!may_match(&none, &zone_of(&zone)));
        // Asked about 65 536 values and kept them all: no longer checked.
        keys.record(1 << 16, 1 << 16);
        assert_eq!(c.eval_leaf(&p, &mut out).unwrap(), Some(TRUE));
    }

    /// Leaves on decimals and dates decided on their stored integers answer as the
    /// values compare: constants with more digits than the column keeps, negative
    /// values, integers against decimals, every operator.
    #[test]
    fn stored_integer_leaves_answer_as_values_compare() {
        let dec = |m: i64, s: u8| Value::Decimal(Decimal::new(m, s));
        let consts = [
            Value::Int(3),
            Value::Int(-2),
            dec(1005, 3),
            dec(-1005, 3),
            dec(-1000, 3),
            dec(25, 1),
            dec(123456, 5),
            dec(-7, 0),
        ];
        let date = |y: u16, m: u8, d: u8| {
            Value::Date(quarry_common::value::Date {
                year: y,
                month: m,
                day: d,
            })
        };
        let cases: Vec<(Phys, Vec<Value>, Vec<Value>)> = vec![
            (
                Phys::Decimal(2),
                (-600..600).map(|m| dec(m, 2)).collect(),
                consts.to_vec(),
            ),
            (
                Phys::Date,
                (1..=12)
                    .flat_map(|m| [1, 15, 28].map(|d| date(1994, m, d)))
                    .collect(),
                vec![
                    date(1994, 3, 15),
                    date(1994, 3, 16),
                    date(1993, 12, 31),
                    date(1995, 1, 1),
                ],
            ),
        ];
        let ops = [
            CmpOp::Eq,
            CmpOp::NullSafeEq,
            CmpOp::Ne,
            CmpOp::Lt,
            CmpOp::Le,
            CmpOp::Gt,
            CmpOp::Ge,
        ];
        for (phys, vals, consts) in cases {
            let (c, _) = roundtrip(phys, vals.clone());
            let Data::Ints(stored) = &c.data else {
                panic!("{phys:?}: not integers")
            };
            let mut preds = vec![];
            for k in &consts {
                preds.extend(ops.map(|op| Pred::Cmp {
                    col: 0,
                    op,
                    value: k.clone(),
                }));
                for hi in &consts {
                    preds.push(Pred::Between {
                        col: 0,
                        lo: k.clone(),
                        hi: hi.clone(),
                    });
                }
            }
            preds.push(Pred::In {
                col: 0,
                values: consts.clone(),
            });
            for p in &preds {
                let f = int_leaf(p, phys).unwrap_or_else(|| panic!("{p:?}: no integer form"));
                for (v, &x) in vals.iter().zip(stored) {
                    assert_eq!(f(x), tri(p.eval_value(v)), "{p:?} on {v:?}");
                }
            }
        }
        // Another family's constant keeps the row-by-row path.
        let p = Pred::Cmp {
            col: 0,
            op: CmpOp::Lt,
            value: Value::Double(1.5),
        };
        assert!(int_leaf(&p, Phys::Decimal(2)).is_none());
    }

    /// A leaf on a date or decimal chunk whose constant has no integer form (a string,
    /// a double) is decided on the values, not on the stored integers: `o_orderdate <
    /// '1995-03-15'` was false for every row, `> '1995-03-15'` true for every row.
    #[test]
    fn leaves_without_an_integer_form_compare_the_values() {
        let date = |y: u16, m: u8, d: u8| {
            Value::Date(quarry_common::value::Date {
                year: y,
                month: m,
                day: d,
            })
        };
        let s = |x: &str| Value::Str(x.into());
        let cases: Vec<(Phys, Vec<Value>, Vec<Value>)> = vec![
            (
                Phys::Date,
                (1..=12)
                    .flat_map(|m| [1, 15, 28].map(|d| date(1995, m, d)))
                    .collect(),
                vec![
                    s("1995-03-15"),
                    s("1995-03-15 10:00:00"),
                    s("19950601"),
                    Value::Int(19950601),
                    Value::Double(19950601.5),
                ],
            ),
            (
                Phys::Decimal(2),
                (-300..300)
                    .map(|m| Value::Decimal(Decimal::new(m, 2)))
                    .collect(),
                vec![s("1.5"), s("-0.25"), Value::Double(1.005), s("abc")],
            ),
        ];
        let ops = &CmpOp::ALL[..6];
        let mut out = Vec::new();
        for (phys, vals, consts) in cases {
            let (c, _) = roundtrip(phys, vals.clone());
            assert!(matches!(c.data, Data::Ints(_)), "{phys:?}: not integers");
            for k in &consts {
                for &op in ops {
                    let p = Pred::Cmp {
                        col: 0,
                        op,
                        value: k.clone(),
                    };
                    let want: Vec<u8> = vals.iter().map(|v| tri(p.eval_value(v))).collect();
                    let got = match c.eval_leaf(&p, &mut out).unwrap() {
                        Some(t) => vec![t; vals.len()],
                        None => out.clone(),
                    };
                    assert_eq!(got, want, "{p:?} on {phys:?}");
                    if op == CmpOp::Lt {
                        assert!(want.contains(&TRUE) && want.contains(&FALSE), "{p:?}");
                    }
                }
            }
        }
    }

    /// Packed integers of every width come back, whole-word reads and the byte-wise
    /// tail alike, for row counts around the buffer's last word.
    #[test]
    fn packed_integers_of_every_width_unpack() {
        let mut r = quarry_common::fuzz::Rng::new(7);
        for width in 1..=64u32 {
            for rows in [1usize, 7, 8, 9, 63, 64, 65, 200] {
                let mask = if width == 64 {
                    u64::MAX
                } else {
                    (1u64 << width) - 1
                };
                let vals: Vec<u64> = (0..rows).map(|_| r.next_u64() & mask).collect();
                let mut buf = vec![0u8; (rows * width as usize).div_ceil(8)];
                for (i, &v) in vals.iter().enumerate() {
                    for b in 0..width as usize {
                        if v >> b & 1 == 1 {
                            let bit = i * width as usize + b;
                            buf[bit / 8] |= 1 << (bit % 8);
                        }
                    }
                }
                let got = unpack(&buf, rows, -5, width).unwrap();
                let want: Vec<i64> = vals.iter().map(|&v| (v as i64).wrapping_add(-5)).collect();
                assert_eq!(got, want, "width {width}, {rows} rows");
            }
        }
    }

    #[test]
    fn every_encoding_gives_the_values_back() {
        let (c, z) = roundtrip(
            Phys::Int,
            (0..1000).map(|i| Value::Int(i * 7 - 300)).collect(),
        );
        assert!(matches!(c.data, Data::Ints(_)));
        assert_eq!((z.min, z.max), (Value::Int(-300), Value::Int(6693)));
        roundtrip(Phys::Int, (0..1000).map(|i| Value::Int(i / 100)).collect());
        roundtrip(
            Phys::Int,
            vec![Value::Int(i64::MIN), Value::Null, Value::Int(i64::MAX)],
        );
        roundtrip(
            Phys::UInt,
            vec![Value::UInt(u64::MAX), Value::UInt(0), Value::Null],
        );
        roundtrip(
            Phys::Decimal(2),
            vec![
                Value::Decimal(Decimal::new(12345, 2)),
                Value::Decimal(Decimal::new(i128::MAX / 10, 2)),
            ],
        );
        // DECIMAL(65): a chunk with a value past 128 bits takes 32 bytes a row (tag 9),
        // and its zone map the wide tag.
        let wide = Decimal::parse(&format!("-{}.25", "9".repeat(60))).unwrap();
        let (c, z) = roundtrip(
            Phys::Decimal(2),
            vec![
                Value::Decimal(Decimal::new(12345, 2)),
                Value::Null,
                Value::Decimal(wide),
            ],
        );
        assert!(matches!(c.data, Data::Wide(_)));
        assert_eq!(z.min, Value::Decimal(wide));
        roundtrip(
            Phys::Date,
            vec![
                Value::Date(Date {
                    year: 0,
                    month: 0,
                    day: 0,
                }),
                Value::Date(Date {
                    year: 2026,
                    month: 11,
                    day: 22,
                }),
            ],
        );
        roundtrip(Phys::Double, vec![Value::Double(-0.5), Value::Null]);
        let (c, z) = roundtrip(
            Phys::Str,
            (0..600)
                .map(|i| Value::Str(format!("m{}", i % 300)))
                .collect(),
        );
        assert!(matches!(
            c.data,
            Data::Dict {
                codes: Codes::U16(_),
                ..
            }
        ));
        assert_eq!(z.min, Value::Str("m0".into()));
        let (c, _) = roundtrip(
            Phys::Str,
            (0..50).map(|i| Value::Str(format!("u{i}"))).collect(),
        );
        assert!(matches!(c.data, Data::Plain { .. }));
        roundtrip(Phys::Str, vec![Value::Null, Value::Null]);
        roundtrip(Phys::Bytes, vec![Value::Bytes(vec![0, 255]), Value::Null]);
    }

    #[test]
    fn packed_strings_take_the_bits_their_alphabet_needs() {
        let size = |phys: Phys, vals: &[Value]| {
            let refs: Vec<&Value> = vals.iter().collect();
            let (bytes, _) = encode(phys, &refs);
            assert_eq!(bytes[0], PACKED);
            roundtrip(phys, vals.to_vec());
            bytes.len()
        };
        // Zero-padded hex numbers: 4 bits a digit, fixed length takes no length bits.
        let ids: Vec<Value> = (0..4096)
            .map(|i| Value::Str(format!("{:08X}", i * 7919 % 100_000_000)))
            .collect();
        let n = size(Phys::Str, &ids);
        assert!(n < 4096 * 8 / 2 + 64, "{n} bytes");
        // Words of upper-case letters and spaces: 5 bits a byte plus the lengths.
        let mut seed = 7u64;
        let mut next = move |m: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % m
        };
        let words: Vec<Value> = (0..4096)
            .map(|_| {
                let len = 1 + next(40);
                Value::Str(
                    (0..len)
                        .map(|_| match next(27) {
                            26 => ' ',
                            c => (b'A' + c as u8) as char,
                        })
                        .collect(),
                )
            })
            .collect();
        let text: usize = words.iter().map(|w| w.as_str_lossy().len()).sum();
        let n = size(Phys::Str, &words);
        assert!(
            n < text * 5 / 8 + 4096 * 6 / 8 + 128,
            "{n} bytes for {text}"
        );
        // NULLs, empty strings, one symbol (k = 0), multi-byte UTF-8, any bytes (k = 8).
        let mut mixed: Vec<Value> = (0..3000)
            .map(|i| match i % 5 {
                0 => Value::Null,
                1 => Value::Str(String::new()),
                _ => Value::Str(format!("é{i}ß")),
            })
            .collect();
        mixed.push(Value::Str("日本".into()));
        size(Phys::Str, &mixed);
        let same: Vec<Value> = (0..3).map(|i| Value::Str("a".repeat(i))).collect();
        size(Phys::Str, &same);
        let blobs: Vec<Value> = (0..3000u32)
            .map(|i| Value::Bytes((0..i % 300).map(|j| (j * 37 + i) as u8).collect()))
            .collect();
        size(Phys::Bytes, &blobs);
    }

    /// Every symbol width, strings of every length: the word-at-a-time unpacking and the
    /// tail after it give back what was packed.
    #[test]
    fn packed_strings_of_every_symbol_width_round_trip() {
        let mut rng = quarry_common::fuzz::Rng::new(8);
        for symbols in [2usize, 3, 4, 7, 8, 15, 16, 31, 33, 64, 65, 100, 128] {
            let alphabet: Vec<char> = (0..symbols).map(|i| (b' ' + i as u8) as char).collect();
            for rows in [1, 2, 5, 40, 333] {
                let vals: Vec<Value> = (0..rows)
                    .map(|_| {
                        let len = rng.below(30);
                        Value::Str((0..len).map(|_| *rng.pick(&alphabet)).collect())
                    })
                    .collect();
                roundtrip(Phys::Str, vals);
            }
        }
    }

    #[test]
    fn digit_strings_are_stored_as_integers_and_written_back_exactly() {
        let encoded = |vals: &[Value]| {
            let refs: Vec<&Value> = vals.iter().collect();
            let (bytes, zone) = encode(Phys::Str, &refs);
            roundtrip(Phys::Str, vals.to_vec());
            (bytes[0], bytes.len(), zone)
        };
        let s = |x: String| Value::Str(x);
        // Zero-padded ids in a run: 16 bits each instead of 8 characters.
        let ids: Vec<Value> = (1..=5000).map(|i| s(format!("{i:08}"))).collect();
        let (tag, len, zone) = encoded(&ids);
        assert_eq!(tag, DIGITS);
        assert!(len < 5000 * 2 + 64, "{len} bytes");
        assert_eq!(zone.min, s("00000001".into()));
        assert_eq!(zone.max, s("00005000".into()));
        // Prices with two decimals, of any length, and NULLs.
        let prices: Vec<Value> = (0..5000)
            .map(|i| match i % 97 {
                0 => Value::Null,
                _ => s(format!("{}.{:02}", i / 3, (i * 37) % 100)),
            })
            .collect();
        assert_eq!(encoded(&prices).0, DIGITS);
        // Fixed width with a point and leading zeros.
        let padded: Vec<Value> = (0..3000)
            .map(|i| s(format!("{:04}.{}", i, i % 10)))
            .collect();
        assert_eq!(encoded(&padded).0, DIGITS);
        // Not written back by one form: "7" and "07", signs, exponents, other places of the
        // point, empty strings; these stay strings.
        for odd in ["07", "-3", "1e5", "1.234", "", "١٢"] {
            let mut vals: Vec<Value> = (0..3000)
                .map(|i| s(format!("{}.{:02}", i, i % 100)))
                .collect();
            vals.push(s(odd.into()));
            vals.push(s("7".into()));
            let (tag, ..) = encoded(&vals);
            assert_ne!(tag, DIGITS, "with {odd:?}");
        }
        let mixed: Vec<Value> = (0..3000)
            .map(|i| {
                s(if i % 2 == 0 {
                    format!("{i}")
                } else {
                    format!("{i:06}")
                })
            })
            .collect();
        assert_ne!(encoded(&mixed).0, DIGITS);
        // Damage is an error or some string, never a panic.
        let refs: Vec<&Value> = prices.iter().collect();
        let (bytes, _) = encode(Phys::Str, &refs);
        for i in 0..bytes.len().min(64) {
            let mut bad = bytes.clone();
            bad[i] ^= 0xa5;
            if let Ok(c) = decode(Phys::Str, &bad) {
                for r in 0..c.rows {
                    let _ = c.value(r);
                }
            }
        }
    }

    #[test]
    fn damaged_packed_strings_are_errors_not_panics() {
        let vals: Vec<Value> = (0..100).map(|i| Value::Str(format!("{i:05}"))).collect();
        let refs: Vec<&Value> = vals.iter().collect();
        let (bytes, _) = encode(Phys::Str, &refs);
        for cut in 0..bytes.len() {
            assert!(decode(Phys::Str, &bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x5a;
            if let Ok(c) = decode(Phys::Str, &bad) {
                for r in 0..c.rows {
                    let _ = c.value(r);
                }
            }
        }
    }

    #[test]
    fn leaves_on_encoded_data_agree_with_values() {
        let vals: Vec<Value> = (0..500)
            .map(|i| {
                if i % 17 == 0 {
                    Value::Null
                } else {
                    Value::Str(["a", "B", "c "][i % 3].into())
                }
            })
            .collect();
        let ints: Vec<Value> = (0..500)
            .map(|i| {
                if i % 13 == 0 {
                    Value::Null
                } else {
                    Value::Int(i % 40)
                }
            })
            .collect();
        let preds = [
            Pred::Cmp {
                col: 0,
                op: CmpOp::Eq,
                value: Value::Str("b".into()),
            },
            Pred::Cmp {
                col: 0,
                op: CmpOp::NullSafeEq,
                value: Value::Null,
            },
            Pred::Like {
                col: 0,
                pattern: "C%".into(),
                escape: '\\',
            },
            Pred::In {
                col: 0,
                values: vec![Value::Int(3), Value::Str("a".into())],
            },
            Pred::Cmp {
                col: 0,
                op: CmpOp::Lt,
                value: Value::Int(20),
            },
            Pred::Between {
                col: 0,
                lo: Value::Int(5),
                hi: Value::Int(9),
            },
            Pred::In {
                col: 0,
                values: vec![Value::Int(3), Value::Int(39)],
            },
            Pred::IsNull { col: 0 },
            Pred::Cmp {
                col: 0,
                op: CmpOp::Ge,
                value: Value::Str("b".into()),
            },
            Pred::Cmp {
                col: 0,
                op: CmpOp::Lt,
                value: Value::Str("C".into()),
            },
            Pred::Cmp {
                col: 0,
                op: CmpOp::Ne,
                value: Value::Str("c".into()),
            },
            Pred::Between {
                col: 0,
                lo: Value::Str("A".into()),
                hi: Value::Str("b".into()),
            },
            Pred::In {
                col: 0,
                values: vec![Value::Str("C".into()), Value::Str("zz".into())],
            },
        ];
        // Digit strings (DIGITS chunks): ids, and prices of any length.
        let digits = |f: fn(usize) -> String| -> Vec<Value> {
            (0..500)
                .map(|i| {
                    if i % 11 == 0 {
                        Value::Null
                    } else {
                        Value::Str(f(i))
                    }
                })
                .collect()
        };
        let ids = digits(|i| format!("{:05}", i * 7));
        let prices = digits(|i| format!("{}.{:02}", i * 3, i % 100));
        for d in [&ids, &prices] {
            let refs: Vec<&Value> = d.iter().collect();
            let c = decode(Phys::Str, &encode(Phys::Str, &refs).0).unwrap();
            assert!(matches!(c.data, Data::Digits(_)));
        }
        let mut preds = preds.to_vec();
        for k in [
            "00021", "21", "00021 ", "0021", "21.00", "6.06", "60.60", "6.6", "x",
        ] {
            for op in [
                CmpOp::Eq,
                CmpOp::Ne,
                CmpOp::NullSafeEq,
                CmpOp::Lt,
                CmpOp::Ge,
            ] {
                preds.push(Pred::Cmp {
                    col: 0,
                    op,
                    value: Value::Str(k.into()),
                });
            }
        }
        preds.push(Pred::Like {
            col: 0,
            pattern: "%1_".into(),
            escape: '\\',
        });
        for (phys, vals) in [
            (Phys::Str, &vals),
            (Phys::Int, &ints),
            (Phys::Str, &ids),
            (Phys::Str, &prices),
        ] {
            let refs: Vec<&Value> = vals.iter().collect();
            let c = decode(phys, &encode(phys, &refs).0).unwrap();
            let mut out = vec![];
            for p in &preds {
                let all = c.eval_leaf(p, &mut out).unwrap();
                for (i, v) in vals.iter().enumerate() {
                    let t = all.unwrap_or_else(|| out[i]);
                    assert_eq!(t, tri(p.eval_value(v)), "{p:?} on {v:?} ({:?})", c.data);
                }
                if let Some(n) = c.count_leaf(p).unwrap() {
                    let want = vals
                        .iter()
                        .filter(|v| p.eval_value(v) == Some(true))
                        .count();
                    assert_eq!(n, want as u64, "count {p:?}");
                }
            }
        }
    }

    #[test]
    fn zone_maps_skip_only_what_cannot_match() {
        let z = Zone {
            min: Value::Str("10000".into()),
            max: Value::Str("99999".into()),
            nulls: 0,
        };
        let zone = |_: usize| (z.clone(), 100);
        let eq = |s: &str| Pred::Cmp {
            col: 0,
            op: CmpOp::Eq,
            value: Value::Str(s.into()),
        };
        assert!(!may_match(&eq("ABCDE"), &zone));
        assert!(may_match(&eq("36440"), &zone));
        assert!(may_match(&Pred::Not(Box::new(eq("ABCDE"))), &zone));
        assert!(!may_match(&Pred::IsNull { col: 0 }, &zone));
        let ne = |s: &str| Pred::Cmp {
            col: 0,
            op: CmpOp::Ne,
            value: Value::Str(s.into()),
        };
        assert_eq!(zone_truth(&ne("ABCDE"), &z), Some(TRUE));
        assert_eq!(zone_truth(&ne("36440"), &z), None);
        assert_eq!(zone_truth(&eq("00001"), &z), Some(FALSE));
        let lt = Pred::Cmp {
            col: 0,
            op: CmpOp::Lt,
            value: Value::Str("A".into()),
        };
        assert_eq!(zone_truth(&lt, &z), Some(TRUE));
        let with_nulls = Zone {
            nulls: 1,
            ..z.clone()
        };
        assert_eq!(zone_truth(&ne("ABCDE"), &with_nulls), None);
        // A number against strings compares as numbers: never skipped by string order.
        let num = Pred::Cmp {
            col: 0,
            op: CmpOp::Eq,
            value: Value::Int(5),
        };
        assert!(may_match(&num, &zone));
    }
}

/// Chunks read from damaged or hostile files (a matching CRC does not make them sound):
/// decoding and reading them returns errors, never panics. Inputs: chunks of every
/// encoding, mutated, and random bytes.
#[cfg(test)]
mod fuzz {
    use super::*;
    use quarry_common::fuzz::{mutate, run, Rng};
    use quarry_storage_api::CmpOp;

    fn values(rng: &mut Rng, phys: Phys) -> Vec<Value> {
        let n = 1 + rng.below(300);
        let distinct = 1 + rng.below(20);
        (0..n)
            .map(|i| {
                if rng.chance(7) {
                    return Value::Null;
                }
                let k = (rng.below(distinct) as i64) * if rng.chance(2) { 1 } else { 1000 };
                match phys {
                    Phys::Int | Phys::UInt => Value::Int(k + i as i64 % 3),
                    Phys::Double => Value::Double(k as f64 / 3.0),
                    Phys::Decimal(s) => Value::Decimal(Decimal::new(k as i128, s)),
                    Phys::Date => Value::Date(Date {
                        year: 2000 + (k % 20) as u16,
                        month: 1 + (k % 12) as u8,
                        day: 1 + (k % 28) as u8,
                    }),
                    Phys::DateTime => Value::DateTime(DateTime::from_micros(k * 1_000_003)),
                    Phys::Time => Value::Time((k - 9) * 1_000_003),
                    Phys::Str => Value::Str(format!("{:05}", k % 40)),
                    Phys::Bytes => Value::Bytes(vec![k as u8; 1 + (k % 5) as usize]),
                }
            })
            .collect()
    }

    /// Crashers the fuzzer found, kept: (kind index, chunk bytes).
    const FOUND: &[(u8, &str)] = &[
        // String lengths whose sum overflowed (a debug-build panic).
        (
            7,
            "0709000000020000000a00010000000000004e000300402c020307020208090b",
        ),
        // RLE runs covering fewer rows than the chunk has (read past the values).
        (
            4,
            "022301000023000000031000131020000104810004008001080490c088000000090010",
        ),
        // An empty alphabet for no characters at all (its last symbol underflowed).
        (
            7,
            "070100000000000800010000000000000000000100010000000000007f00000100",
        ),
    ];

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn chunk_decoding_never_panics() {
        let kinds = [
            Phys::Int,
            Phys::UInt,
            Phys::Double,
            Phys::Decimal(2),
            Phys::Date,
            Phys::DateTime,
            Phys::Str,
            Phys::Bytes,
            // Last: FOUND names kinds by their index here.
            Phys::Time,
        ];
        let case = |input: &[u8]| {
            let phys = kinds[input[0] as usize % kinds.len()];
            let Ok(c) = decode(phys, &input[1..]) else {
                return;
            };
            for i in 0..c.rows {
                let _ = c.is_null(i);
                let _ = c.value(i);
            }
            let mut out = Vec::new();
            for op in [CmpOp::Eq, CmpOp::Lt, CmpOp::Ge] {
                let p = Pred::Cmp {
                    col: 0,
                    op,
                    value: Value::Int(3),
                };
                out.clear();
                let _ = c.eval_leaf(&p, &mut out);
            }
        };
        for (kind, hex) in FOUND {
            let mut input = vec![*kind];
            input.extend(unhex(hex));
            case(&input);
        }
        run(
            "column chunk",
            3000,
            |rng| {
                let phys = *rng.pick(&kinds);
                let mut input = vec![kinds.iter().position(|k| *k == phys).unwrap() as u8];
                if rng.chance(6) {
                    let n = rng.below(100);
                    input.extend(rng.bytes(n));
                    return input;
                }
                let vals = values(rng, phys);
                let refs: Vec<&Value> = vals.iter().collect();
                let (bytes, _) = encode(phys, &refs);
                input.extend(mutate(rng, &bytes));
                input
            },
            case,
        );
    }
}
