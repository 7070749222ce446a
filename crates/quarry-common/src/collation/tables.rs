//! The generated weight tables (`weights.bin`, written by
//! `scripts/gen_collation_tables.py` from MariaDB 10.11's WEIGHT_STRING), read once at
//! first use into lookups.
//!
//! ```text
//! "QCW1"
//! general_ci:  u32 n, n × (u16 code point, u16 weight)   where the weight is not the
//!              code point (BMP; beyond it every weight is 0xFFFD)
//! latin1:      256 × u16 (each byte's character), 256 × u8 (latin1_swedish_ci weights)
//! ascii:       128 × u8 (ascii_general_ci weights)
//! UCA 4.0.0, then UCA 5.2.0:
//!              u32 n, n × (u32 code point, u8 k, k × u16 weights)   where the weights
//!              are not [`implicit`]'s
//! ```
//! All little-endian.

use std::collections::HashMap;
use std::sync::OnceLock;

static BYTES: &[u8] = include_bytes!("weights.bin");

struct Uca {
    /// Code point → (start, count) in `pool`.
    own: HashMap<u32, (u32, u8)>,
    pool: Vec<u16>,
}

struct Tables {
    general: Vec<u16>,
    latin1: [u32; 256],
    /// Character → latin1 byte, for the characters whose byte is not their code point.
    latin1_rev: HashMap<u32, u8>,
    swedish: [u8; 256],
    ascii: [u8; 128],
    uca400: Uca,
    uca520: Uca,
}

struct Reader {
    at: usize,
}

impl Reader {
    fn take(&mut self, n: usize) -> &'static [u8] {
        let b = &BYTES[self.at..self.at + n];
        self.at += n;
        b
    }
    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().unwrap())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }
    fn uca(&mut self) -> Uca {
        let n = self.u32() as usize;
        let mut own = HashMap::with_capacity(n);
        let mut pool = Vec::with_capacity(n * 2);
        for _ in 0..n {
            let cp = self.u32();
            let k = self.u8();
            own.insert(cp, (pool.len() as u32, k));
            for _ in 0..k {
                pool.push(self.u16());
            }
        }
        Uca { own, pool }
    }
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| {
        assert_eq!(&BYTES[..4], b"QCW1", "collation weights file");
        let mut r = Reader { at: 4 };
        let mut general: Vec<u16> = (0..=0xFFFFu32).map(|c| c as u16).collect();
        for _ in 0..r.u32() {
            let (cp, w) = (r.u16(), r.u16());
            general[cp as usize] = w;
        }
        let mut latin1 = [0u32; 256];
        let mut latin1_rev = HashMap::new();
        for (b, slot) in latin1.iter_mut().enumerate() {
            *slot = r.u16() as u32;
            if *slot != b as u32 {
                latin1_rev.insert(*slot, b as u8);
            }
        }
        let swedish: [u8; 256] = r.take(256).try_into().unwrap();
        let ascii: [u8; 128] = r.take(128).try_into().unwrap();
        let uca400 = r.uca();
        let uca520 = r.uca();
        assert_eq!(r.at, BYTES.len(), "collation weights file");
        Tables {
            general,
            latin1,
            latin1_rev,
            swedish,
            ascii,
            uca400,
            uca520,
        }
    })
}

/// utf8mb4_general_ci's weight of a code point.
pub(super) fn general(cp: u32) -> u16 {
    match tables().general.get(cp as usize) {
        Some(&w) => w,
        None => 0xFFFD,
    }
}

/// The latin1 byte of a character ('?' for one latin1 lacks).
pub(super) fn latin1_byte(cp: u32) -> u8 {
    let t = tables();
    if cp < 256 && t.latin1[cp as usize] == cp {
        return cp as u8;
    }
    t.latin1_rev.get(&cp).copied().unwrap_or(b'?')
}

pub(super) fn swedish(b: u8) -> u8 {
    tables().swedish[b as usize]
}

pub(super) fn ascii_ci(b: u8) -> u8 {
    tables().ascii[(b & 0x7F) as usize]
}

/// The UCA weights a code point has without a table entry: one of three bases (core CJK,
/// other CJK, everything else) and the code point in two parts; beyond the BMP, UCA
/// 4.0.0 as MariaDB has it weighs everything 0xFFFD. (The generator computes the same
/// to know what to store.)
fn implicit(version: u16, cp: u32, out: &mut Vec<u32>) {
    if version == 400 && cp > 0xFFFF {
        out.push(0xFFFD);
        return;
    }
    let base = if (0x4E00..=0x9FFF).contains(&cp) || (0xF900..=0xFAFF).contains(&cp) {
        0xFB40
    } else if (0x3400..=0x4DBF).contains(&cp) {
        0xFB80
    } else {
        0xFBC0
    };
    out.push(base + (cp >> 15));
    out.push((cp & 0x7FFF) | 0x8000);
}

/// Append the UCA `version` (400, 520) primary weights of a code point.
pub(super) fn uca(version: u16, cp: u32, out: &mut Vec<u32>) {
    let t = tables();
    let u = if version == 400 { &t.uca400 } else { &t.uca520 };
    match u.own.get(&cp) {
        Some(&(start, k)) => out.extend(
            u.pool[start as usize..start as usize + k as usize]
                .iter()
                .map(|&w| w as u32),
        ),
        None => implicit(version, cp, out),
    }
}
