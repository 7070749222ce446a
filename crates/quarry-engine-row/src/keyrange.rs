//! Value bounds of an index range turned into bounds on its entries' bytes
//! ([`crate::keycode`]): shared by every engine that keeps memcomparable entries, so a
//! range means the same entries in each.

use std::ops::Bound;

use quarry_common::Value;
use quarry_storage::btree::prefix_end;
use quarry_storage_api::{IndexScan, IndexSchema, TableSchema};

use crate::keycode::{self, KeyCol};

/// How the columns of `ix` are stored in its entries.
pub fn key_cols(schema: &TableSchema, ix: &IndexSchema) -> Vec<KeyCol> {
    (0..ix.columns.len())
        .map(|i| KeyCol {
            ty: schema.columns[ix.columns[i]].ty,
            prefix: ix.prefix[i],
            desc: ix.desc[i],
        })
        .collect()
}

/// Per column of `ix`: whether an index-only read gives its exact value back.
pub fn covers(schema: &TableSchema, ix: &IndexSchema) -> Vec<bool> {
    ix.columns
        .iter()
        .zip(&ix.prefix)
        .map(|(&c, &p)| keycode::decodable(&schema.columns[c].ty, p))
        .collect()
}

/// The byte range an index scan reads: its bounds, resumed after `scan.after`.
pub fn scan_bounds(cols: &[KeyCol], scan: &IndexScan) -> Option<ByteRange> {
    let (mut lo, mut hi) = byte_bounds(cols, scan.lo, scan.hi)?;
    if let Some(after) = scan.after {
        if scan.reverse {
            hi = Bound::Excluded(after.to_vec());
        } else {
            lo = Bound::Excluded(after.to_vec());
        }
    }
    Some((lo, hi))
}

/// Lower and upper bound of a run of index entries, in key bytes.
pub type ByteRange = (Bound<Vec<u8>>, Bound<Vec<u8>>);

/// Byte bounds of the entries whose keys lie between the value bounds `lo` and `hi` of an
/// index stored as `cols` (None: no entry can). When the column the bounds end on is
/// DESC, byte order runs against value order there, so the value bounds trade places.
pub fn byte_bounds(cols: &[KeyCol], lo: Bound<&[Value]>, hi: Bound<&[Value]>) -> Option<ByteRange> {
    let len = |b: &Bound<&[Value]>| match b {
        Bound::Included(v) | Bound::Excluded(v) => v.len(),
        Bound::Unbounded => 0,
    };
    let n = len(&lo).max(len(&hi));
    let flip = n > 0 && cols[n - 1].desc;
    let lo_bytes = key_bound(cols, lo, true, flip)?;
    let hi_bytes = key_bound(cols, hi, false, flip)?;
    Some(if flip {
        (hi_bytes, lo_bytes)
    } else {
        (lo_bytes, hi_bytes)
    })
}

/// One index bound in key bytes: a value prefix `p` as a lower bound starts at `p`
/// (inclusive) or after every entry starting with `p` (exclusive), and as an upper
/// bound ends after (inclusive) or before (exclusive) them. `lower` is the bound's
/// role among values; `flip` makes a lower value bound an upper byte bound.
fn key_bound(
    cols: &[KeyCol],
    b: Bound<&[Value]>,
    lower: bool,
    flip: bool,
) -> Option<Bound<Vec<u8>>> {
    let (vals, inclusive) = match b {
        Bound::Unbounded => return Some(Bound::Unbounded),
        Bound::Included(v) => (v, true),
        Bound::Excluded(v) => (v, false),
    };
    let mut out = Vec::with_capacity(32);
    let mut inclusive = inclusive;
    for (v, col) in vals.iter().zip(cols) {
        let ty = &col.ty;
        // An integer column bounded by a non-integral number (k > 2.5): the nearest
        // integer inside the range, inclusive.
        let adjusted;
        let v = match v {
            Value::Double(f) if ty.is_integer() => {
                // Past every integer key: the range starts after the largest (or ends
                // before the smallest) possible key.
                let (value, incl) = if *f >= 18_446_744_073_709_551_615.0 {
                    (Value::UInt(u64::MAX), !lower)
                } else if *f < -9_223_372_036_854_775_808.0 {
                    (Value::Int(i64::MIN), lower)
                } else if f.fract() != 0.0 {
                    let r = if lower { f.ceil() } else { f.floor() };
                    (int_key(r), true)
                } else {
                    (int_key(*f), inclusive)
                };
                inclusive = incl;
                adjusted = value;
                &adjusted
            }
            v => v,
        };
        keycode::encode_column(v, col, &mut out);
    }
    Some(match (lower != flip, inclusive) {
        (true, true) => Bound::Included(out),
        (true, false) => Bound::Included(prefix_end(&out)?),
        (false, true) => match prefix_end(&out) {
            Some(e) => Bound::Excluded(e),
            None => Bound::Unbounded,
        },
        (false, false) => Bound::Excluded(out),
    })
}

fn int_key(f: f64) -> Value {
    if f > i64::MAX as f64 {
        Value::UInt(f as u64)
    } else {
        Value::Int(f as i64)
    }
}

pub fn as_slice_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
