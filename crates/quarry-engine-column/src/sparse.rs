//! A few rows' values read straight from a chunk's encoded bytes, for a scan that keeps
//! few of its segment's rows: TPC-H Q9's lineitem scan, filtered by the keys of the parts
//! it joins, keeps 5 % of them, and decoding each column it reads whole (every packed
//! integer unpacked) was most of what making those rows cost. Here a row's bits are read
//! where they lie.
//!
//! Owns that reading only. The layouts are `chunk`'s (`docs/formats/column-engine.md`),
//! and a value read here is the one `chunk::Chunk::value` gives for the row; encodings
//! whose rows cannot be found without reading those before them (runs, packed strings),
//! wide decimals and the plain strings of old files are left to `chunk::decode`.

use quarry_common::{Error, Result, Value};

use crate::chunk::{
    read_digits, Phys, Reader, ALL_NULL, DICT, DICT_CASE_ONLY, DIGITS, F64, FOR, MAX_ROWS,
};

/// A scan reads its rows from the encoded bytes when it keeps fewer than one in this many
/// of the segment's rows (a packed integer read alone costs a few times one unpacked in
/// turn).
pub(crate) const SPARSE: usize = 4;

/// The values at `positions` of the chunk of `expect` rows in `buf`, or None when its
/// encoding is not read here.
pub(crate) fn values_at(
    phys: Phys,
    buf: &[u8],
    expect: usize,
    positions: &[u32],
) -> Result<Option<Vec<Value>>> {
    let mut r = Reader { buf, pos: 0 };
    let tag = r.take(1)?[0];
    let rows = r.u32()? as usize;
    if rows > MAX_ROWS || rows != expect {
        return Err(Error::corrupt(format!(
            "column chunk of {rows} rows where its segment has {expect}"
        )));
    }
    if let Some(&p) = positions.iter().find(|&&p| p as usize >= rows) {
        return Err(Error::internal(format!(
            "row {p} of a column chunk of {rows} rows"
        )));
    }
    let nulls = r.u32()? as usize;
    let nulls = if nulls > 0 && tag != ALL_NULL {
        Some(r.take(rows.div_ceil(8))?)
    } else {
        None
    };
    let is_null = |i: usize| nulls.is_some_and(|bm| bm[i / 8] & (1 << (i % 8)) != 0);
    let each = |f: &mut dyn FnMut(usize) -> Result<Value>| -> Result<Option<Vec<Value>>> {
        positions
            .iter()
            .map(|&p| match is_null(p as usize) {
                true => Ok(Value::Null),
                false => f(p as usize),
            })
            .collect::<Result<Vec<Value>>>()
            .map(Some)
    };
    match tag {
        ALL_NULL => Ok(Some(vec![Value::Null; positions.len()])),
        FOR => {
            let base = r.i64()?;
            let width = r.take(1)?[0] as u32;
            let packed = &buf[r.pos..];
            if width > 64 || packed.len() < (rows * width as usize).div_ceil(8) {
                return Err(Error::corrupt("column chunk: packed integers truncated"));
            }
            each(&mut |i| Ok(phys.int_value(packed_int(packed, i, base, width))))
        }
        F64 => {
            let data = r.take(rows * 8)?;
            each(&mut |i| {
                let b = data[i * 8..i * 8 + 8].try_into().unwrap();
                Ok(Value::Double(f64::from_le_bytes(b)))
            })
        }
        DICT | DICT_CASE_ONLY => {
            let n = r.u32()? as usize;
            let mut entries = Vec::with_capacity(n.min(rows));
            for _ in 0..n {
                let len = r.u32()? as usize;
                entries.push(r.take(len)?);
            }
            let wide = r.take(1)?[0] != 1;
            let codes = r.take(if wide { rows * 2 } else { rows })?;
            each(&mut |i| {
                let c = match wide {
                    true => u16::from_le_bytes([codes[i * 2], codes[i * 2 + 1]]) as usize,
                    false => codes[i] as usize,
                };
                let entry = entries
                    .get(c)
                    .ok_or_else(|| Error::corrupt("column chunk: code outside dictionary"))?;
                phys.bytes_value(entry)
            })
        }
        DIGITS => {
            let d = read_digits(&mut r, rows)?;
            each(&mut |i| {
                let mut b = Vec::with_capacity(20);
                d.write(i, &mut b);
                phys.owned_bytes_value(b)
            })
        }
        _ => Ok(None),
    }
}

/// Row `i` of `width`-bit integers packed from the first bit of `packed`, plus `base`
/// (the caller checked that `packed` holds all the rows).
fn packed_int(packed: &[u8], i: usize, base: i64, width: u32) -> i64 {
    if width == 0 {
        return base;
    }
    let bit = i * width as usize;
    let at = bit / 8;
    // Up to 16 bytes from `at` (fewer at the end of the data, the rest zeros): a value
    // starts at most 7 bits in and is at most 64 wide.
    let mut word = [0u8; 16];
    let have = (packed.len() - at).min(16);
    word[..have].copy_from_slice(&packed[at..at + have]);
    let v = (u128::from_le_bytes(word) >> (bit % 8)) as u64;
    let v = if width == 64 {
        v
    } else {
        v & ((1u64 << width) - 1)
    };
    (base as i128 + v as i128) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{decode, encode};
    use quarry_common::{Date, Decimal};

    /// Every encoding read here gives, at any rows, what the decoded chunk gives; the
    /// others are left to decoding.
    #[test]
    fn values_read_in_place_are_the_decoded_ones() {
        let n = 3001usize;
        let cases: Vec<(Phys, Vec<Value>)> = vec![
            // FOR, with NULLs, widths from 0 to 64 bits.
            (
                Phys::Int,
                (0..n)
                    .map(|i| {
                        if i % 7 == 0 {
                            Value::Null
                        } else {
                            Value::Int(i as i64 * 37 % 1000 - 500)
                        }
                    })
                    .collect(),
            ),
            (Phys::Int, (0..n).map(|_| Value::Int(42)).collect()),
            (
                Phys::Int,
                (0..n)
                    .map(|i| {
                        Value::Int(if i % 2 == 0 {
                            i64::MIN
                        } else {
                            i64::MAX - i as i64
                        })
                    })
                    .collect(),
            ),
            (
                Phys::UInt,
                (0..n)
                    .map(|i| Value::UInt(u64::MAX - i as u64 * 3))
                    .collect(),
            ),
            (
                Phys::Decimal(2),
                (0..n)
                    .map(|i| Value::Decimal(Decimal::new(i as i64 * 1013 - 90_000, 2)))
                    .collect(),
            ),
            (
                Phys::Date,
                (0..n)
                    .map(|i| {
                        Value::Date(Date {
                            year: 1992 + (i % 7) as u16,
                            month: 1 + (i % 12) as u8,
                            day: 1 + (i % 28) as u8,
                        })
                    })
                    .collect(),
            ),
            // F64.
            (
                Phys::Double,
                (0..n)
                    .map(|i| {
                        if i % 5 == 0 {
                            Value::Null
                        } else {
                            Value::Double(i as f64 * 0.37 - 3.0)
                        }
                    })
                    .collect(),
            ),
            // A dictionary (few distinct strings), one with over 256 entries, packed strings.
            (
                Phys::Str,
                (0..n)
                    .map(|i| {
                        if i % 9 == 0 {
                            Value::Null
                        } else {
                            Value::Str(["AIR", "MAIL", "SHIP", "rail", "Ä"][i % 5].into())
                        }
                    })
                    .collect(),
            ),
            (
                Phys::Str,
                (0..n)
                    .map(|i| Value::Str(format!("k{}", i % 700)))
                    .collect(),
            ),
            (
                Phys::Str,
                (0..n)
                    .map(|i| Value::Str(format!("comment {i} {}", "x".repeat(i % 13))))
                    .collect(),
            ),
            (
                Phys::Bytes,
                (0..n)
                    .map(|i| Value::Bytes(vec![(i % 251) as u8; i % 5]))
                    .collect(),
            ),
            // Strings of digits.
            (
                Phys::Str,
                (0..n)
                    .map(|i| Value::Str(format!("{:05}", i * 7)))
                    .collect(),
            ),
            // All NULL; runs.
            (Phys::Int, vec![Value::Null; n]),
            (
                Phys::Int,
                (0..n).map(|i| Value::Int((i / 500) as i64)).collect(),
            ),
        ];
        let positions: Vec<u32> = (0..n as u32)
            .filter(|p| p % 13 == 1 || *p as usize == n - 1)
            .collect();
        let mut read = 0;
        for (phys, vals) in cases {
            let refs: Vec<&Value> = vals.iter().collect();
            let (bytes, _) = encode(phys, &refs);
            let chunk = decode(phys, &bytes).unwrap();
            let Some(got) = values_at(phys, &bytes, n, &positions).unwrap() else {
                assert!(
                    !matches!(bytes[0], FOR | F64 | DICT | DIGITS | ALL_NULL),
                    "encoding {} not read in place",
                    bytes[0]
                );
                continue;
            };
            read += 1;
            for (&p, v) in positions.iter().zip(&got) {
                assert_eq!(v, &chunk.value(p as usize).unwrap(), "{phys:?} row {p}");
                assert_eq!(v, &vals[p as usize], "{phys:?} row {p}");
            }
        }
        assert!(read >= 10, "{read} encodings read in place");
        // A row past the chunk is an error, not a read past its bytes.
        let (bytes, _) = encode(Phys::Int, &[&Value::Int(1), &Value::Int(2)]);
        assert!(values_at(Phys::Int, &bytes, 2, &[2]).is_err());
        assert!(values_at(Phys::Int, &bytes, 3, &[1]).is_err());
    }
}
