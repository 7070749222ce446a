//! Collations as MariaDB 10.11 defines them: how two strings of a character set compare,
//! what sort key stands for a string (equal keys ⇔ equal strings; key order is the
//! collation's), and what LIKE matches. Values are UTF-8 inside the server whatever the
//! column's character set; a latin1 or ascii collation weighs each character by the
//! byte it is in that set (a character the set lacks is its '?').
//!
//! The weights that are tables, not rules, are generated from MariaDB by
//! `scripts/gen_collation_tables.py` into `weights.bin` (see [`tables`]):
//! utf8mb4_general_ci's case and accent folding, UCA 4.0.0 (utf8mb4_unicode_ci) and UCA
//! 5.2.0 (utf8mb4_unicode_520_ci), latin1 (Windows-1252) and latin1_swedish_ci,
//! ascii_general_ci. Comparisons are at the primary level, as MariaDB's `_ci` ones.
//!
//! PAD SPACE collations (all but `_nopad_` ones and `binary`) compare a shorter string as
//! if it went on with spaces: 'a' = 'a  ', and 'a\t' < 'a' (a tab weighs less than a
//! space). Their sort keys leave trailing spaces out; keys then order such a string
//! after the same string followed by characters below a space (the only place where key
//! order and the collation's differ).
//!
//! Owns no values and no types: [`crate::SqlType`] carries a collation, the executor and
//! engines call these functions.

mod tables;

use std::cmp::Ordering;

use crate::value::{like_ascii_ci, like_bytes, like_with};

/// A collation MariaDB 10.11 has and Quarry implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Collation {
    #[default]
    Utf8mb4GeneralCi,
    Utf8mb4Bin,
    Utf8mb4NopadBin,
    Utf8mb4UnicodeCi,
    Utf8mb4Unicode520Ci,
    Utf8mb3GeneralCi,
    Utf8mb3Bin,
    Utf8mb3UnicodeCi,
    Latin1SwedishCi,
    Latin1Bin,
    AsciiGeneralCi,
    AsciiBin,
    Binary,
}

/// How a collation weighs characters.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rule {
    /// One 16-bit weight a character from utf8mb4_general_ci's table (0xFFFD beyond the
    /// BMP).
    General,
    /// The code point.
    CodePoint,
    /// The UCA weights of that version (primary level).
    Uca(u16),
    /// latin1_swedish_ci's byte weights.
    Swedish,
    /// The character's latin1 byte.
    Latin1Byte,
    /// ascii_general_ci's byte weights.
    AsciiCi,
    /// The character's ascii byte.
    AsciiByte,
    /// The UTF-8 bytes, with no padding (binary strings).
    Bytes,
}

/// Every collation, in the order SHOW COLLATION lists them (MariaDB's, by character set).
pub const ALL: [Collation; 13] = [
    Collation::Latin1SwedishCi,
    Collation::Latin1Bin,
    Collation::AsciiGeneralCi,
    Collation::AsciiBin,
    Collation::Utf8mb3GeneralCi,
    Collation::Utf8mb3Bin,
    Collation::Utf8mb3UnicodeCi,
    Collation::Utf8mb4GeneralCi,
    Collation::Utf8mb4Bin,
    Collation::Utf8mb4UnicodeCi,
    Collation::Utf8mb4Unicode520Ci,
    Collation::Utf8mb4NopadBin,
    Collation::Binary,
];

/// The character sets, in the order SHOW CHARACTER SET lists them: name, description,
/// bytes a character takes at the most.
pub const CHARSETS: [(&str, &str, u32); 5] = [
    ("latin1", "cp1252 West European", 1),
    ("ascii", "US ASCII", 1),
    ("utf8mb3", "UTF-8 Unicode", 3),
    ("utf8mb4", "UTF-8 Unicode", 4),
    ("binary", "Binary pseudo charset", 1),
];

impl Collation {
    pub fn name(self) -> &'static str {
        use Collation::*;
        match self {
            Utf8mb4GeneralCi => "utf8mb4_general_ci",
            Utf8mb4Bin => "utf8mb4_bin",
            Utf8mb4NopadBin => "utf8mb4_nopad_bin",
            Utf8mb4UnicodeCi => "utf8mb4_unicode_ci",
            Utf8mb4Unicode520Ci => "utf8mb4_unicode_520_ci",
            Utf8mb3GeneralCi => "utf8mb3_general_ci",
            Utf8mb3Bin => "utf8mb3_bin",
            Utf8mb3UnicodeCi => "utf8mb3_unicode_ci",
            Latin1SwedishCi => "latin1_swedish_ci",
            Latin1Bin => "latin1_bin",
            AsciiGeneralCi => "ascii_general_ci",
            AsciiBin => "ascii_bin",
            Binary => "binary",
        }
    }

    /// The id the wire protocol and SHOW COLLATION give it.
    pub fn id(self) -> u16 {
        use Collation::*;
        match self {
            Utf8mb4GeneralCi => 45,
            Utf8mb4Bin => 46,
            Utf8mb4NopadBin => 1070,
            Utf8mb4UnicodeCi => 224,
            Utf8mb4Unicode520Ci => 246,
            Utf8mb3GeneralCi => 33,
            Utf8mb3Bin => 83,
            Utf8mb3UnicodeCi => 192,
            Latin1SwedishCi => 8,
            Latin1Bin => 47,
            AsciiGeneralCi => 11,
            AsciiBin => 65,
            Binary => 63,
        }
    }

    /// Bytes a character of its set may take (a CHAR(n) column reserves n of them).
    pub fn max_bytes_per_char(self) -> usize {
        match self.charset() {
            "utf8mb4" => 4,
            "utf8mb3" => 3,
            _ => 1,
        }
    }

    /// Its character set's name.
    pub fn charset(self) -> &'static str {
        use Collation::*;
        match self {
            Utf8mb4GeneralCi | Utf8mb4Bin | Utf8mb4NopadBin | Utf8mb4UnicodeCi
            | Utf8mb4Unicode520Ci => "utf8mb4",
            Utf8mb3GeneralCi | Utf8mb3Bin | Utf8mb3UnicodeCi => "utf8mb3",
            Latin1SwedishCi | Latin1Bin => "latin1",
            AsciiGeneralCi | AsciiBin => "ascii",
            Binary => "binary",
        }
    }

    /// SHOW COLLATION's Sortlen.
    pub fn sortlen(self) -> u32 {
        if matches!(self.rule(), Rule::Uca(_)) {
            8
        } else {
            1
        }
    }

    /// The character set's default collation.
    pub fn is_default(self) -> bool {
        Collation::default_of(self.charset()) == Some(self)
    }

    /// A collation by name (any case); `utf8_…` names are `utf8mb3_…` ones.
    pub fn named(name: &str) -> Option<Collation> {
        let n = name.to_ascii_lowercase();
        let n = match n.strip_prefix("utf8_") {
            Some(rest) => format!("utf8mb3_{rest}"),
            None => n,
        };
        ALL.into_iter().find(|c| c.name() == n)
    }

    /// A character set's default collation, by the set's name (`utf8` is `utf8mb3`).
    pub fn default_of(charset: &str) -> Option<Collation> {
        Some(match charset.to_ascii_lowercase().as_str() {
            "utf8mb4" => Collation::Utf8mb4GeneralCi,
            "utf8mb3" | "utf8" => Collation::Utf8mb3GeneralCi,
            "latin1" => Collation::Latin1SwedishCi,
            "ascii" => Collation::AsciiGeneralCi,
            "binary" => Collation::Binary,
            _ => return None,
        })
    }

    /// A `_bin` collation (or binary): strings compare by their characters' codes, as
    /// clients are told with the column's BINARY flag.
    pub fn compares_bytes(self) -> bool {
        matches!(
            self.rule(),
            Rule::CodePoint | Rule::Latin1Byte | Rule::AsciiByte | Rule::Bytes
        )
    }

    /// Whether plain string values compare as this collation does: the executor's and
    /// the engines' comparisons without a collation are utf8mb4_general_ci's (and
    /// utf8mb3_general_ci's, which weighs the same).
    pub fn is_plain(self) -> bool {
        self.rule() == Rule::General
    }

    /// Whether the character set has `c`: a latin1 (Windows-1252) or ascii column stores
    /// no other character.
    pub fn holds(self, c: char) -> bool {
        match self.charset() {
            "latin1" => c == '?' || tables::latin1_byte(c as u32) != b'?',
            "ascii" => c.is_ascii(),
            _ => true,
        }
    }

    /// Whether the character set is a Unicode one (utf8mb4, utf8mb3).
    pub fn is_unicode(self) -> bool {
        matches!(self.charset(), "utf8mb4" | "utf8mb3")
    }

    /// Trailing spaces do not count (PAD SPACE); false for `_nopad_` and binary.
    pub fn pads(self) -> bool {
        !matches!(self, Collation::Utf8mb4NopadBin | Collation::Binary)
    }

    fn rule(self) -> Rule {
        use Collation::*;
        match self {
            Utf8mb4GeneralCi | Utf8mb3GeneralCi => Rule::General,
            Utf8mb4Bin | Utf8mb4NopadBin | Utf8mb3Bin => Rule::CodePoint,
            Utf8mb4UnicodeCi | Utf8mb3UnicodeCi => Rule::Uca(400),
            Utf8mb4Unicode520Ci => Rule::Uca(520),
            Latin1SwedishCi => Rule::Swedish,
            Latin1Bin => Rule::Latin1Byte,
            AsciiGeneralCi => Rule::AsciiCi,
            AsciiBin => Rule::AsciiByte,
            Binary => Rule::Bytes,
        }
    }

    /// The weight of a space, that padding compares with.
    fn space(self) -> u32 {
        match self.rule() {
            Rule::Uca(400) => 0x0209,
            Rule::Uca(_) => 0x020A,
            _ => 0x20,
        }
    }

    /// Append `c`'s weights to `out`.
    fn weigh(self, c: char, out: &mut Vec<u32>) {
        match self.rule() {
            Rule::Uca(v) => tables::uca(v, c as u32, out),
            Rule::Bytes => {
                let mut b = [0u8; 4];
                out.extend(c.encode_utf8(&mut b).bytes().map(u32::from));
            }
            _ => out.push(self.weight1(c)),
        }
    }

    /// The one weight of `c` under a rule that gives each character one (all but UCA and
    /// bytes).
    fn weight1(self, c: char) -> u32 {
        let cp = c as u32;
        match self.rule() {
            Rule::General => tables::general(cp) as u32,
            Rule::Swedish => tables::swedish(tables::latin1_byte(cp)) as u32,
            Rule::Latin1Byte => tables::latin1_byte(cp) as u32,
            Rule::AsciiCi => tables::ascii_ci(ascii_byte(cp)) as u32,
            Rule::AsciiByte => ascii_byte(cp) as u32,
            Rule::CodePoint | Rule::Uca(_) | Rule::Bytes => cp,
        }
    }

    fn weights(self, s: &str) -> Vec<u32> {
        let mut w = Vec::with_capacity(s.len());
        for c in s.chars() {
            self.weigh(c, &mut w);
        }
        w
    }

    /// How `a` compares with `b`.
    pub fn cmp(self, a: &str, b: &str) -> Ordering {
        match self.rule() {
            Rule::Bytes => return a.as_bytes().cmp(b.as_bytes()),
            Rule::CodePoint if !self.pads() => return a.cmp(b),
            _ => {}
        }
        // UCA weighs some ASCII (controls) as nothing, swedish some punctuation apart.
        let one_per_byte = !matches!(self.rule(), Rule::Uca(_) | Rule::Swedish);
        if one_per_byte && a.is_ascii() && b.is_ascii() {
            return self.cmp_ascii(a.as_bytes(), b.as_bytes());
        }
        if !matches!(self.rule(), Rule::Uca(_)) {
            return self.cmp_chars(a, b);
        }
        let (wa, wb) = (self.weights(a), self.weights(b));
        self.cmp_weights(&wa, &wb)
    }

    /// [`Collation::cmp`] under a rule of one weight per character, without building
    /// the weights (sorts call this for every pair).
    fn cmp_chars(self, a: &str, b: &str) -> Ordering {
        let (mut ai, mut bi) = (a.chars(), b.chars());
        loop {
            let (x, y) = match (ai.next(), bi.next()) {
                (Some(x), Some(y)) => (self.weight1(x), self.weight1(y)),
                (None, None) => return Ordering::Equal,
                (Some(x), None) => return self.cmp_rest(x, ai, false),
                (None, Some(y)) => return self.cmp_rest(y, bi, true),
            };
            if x != y {
                return x.cmp(&y);
            }
        }
    }

    /// The longer string's rest (`first`, then `rest`) against the shorter one's end:
    /// longer is greater without padding, else the rest compares with spaces (the order
    /// reversed when it is the right-hand string's).
    fn cmp_rest(self, first: char, rest: std::str::Chars, flip: bool) -> Ordering {
        let o = if self.pads() {
            let space = self.space();
            std::iter::once(first)
                .chain(rest)
                .map(|c| self.weight1(c))
                .find(|&w| w != space)
                .map_or(Ordering::Equal, |w| w.cmp(&space))
        } else {
            Ordering::Greater
        };
        if flip {
            o.reverse()
        } else {
            o
        }
    }

    fn cmp_weights(self, wa: &[u32], wb: &[u32]) -> Ordering {
        let n = wa.len().min(wb.len());
        for i in 0..n {
            if wa[i] != wb[i] {
                return wa[i].cmp(&wb[i]);
            }
        }
        if !self.pads() {
            return wa.len().cmp(&wb.len());
        }
        // The shorter goes on with spaces.
        let space = self.space();
        let (rest, flip) = if wa.len() > n {
            (&wa[n..], false)
        } else {
            (&wb[n..], true)
        };
        for &w in rest {
            if w != space {
                let o = w.cmp(&space);
                return if flip { o.reverse() } else { o };
            }
        }
        Ordering::Equal
    }

    /// [`Collation::cmp`] of ASCII strings, without building weights: one byte, one
    /// weight (not for the UCA and swedish rules).
    pub(crate) fn cmp_ascii(self, a: &[u8], b: &[u8]) -> Ordering {
        let pads = self.pads();
        match self.rule() {
            // utf8mb4_general_ci weighs ASCII as its upper case (the tables' test checks).
            Rule::General => cmp_ascii_by(a, b, pads, |c| c.to_ascii_uppercase()),
            Rule::AsciiCi => cmp_ascii_by(a, b, pads, tables::ascii_ci),
            _ => cmp_ascii_by(a, b, pads, |c| c),
        }
    }

    /// Append `s`'s sort key: equal keys ⇔ equal strings, and keys order as the strings
    /// do (see the module's note on characters below a space).
    pub fn key(self, s: &str, out: &mut Vec<u8>) {
        match self.rule() {
            Rule::Bytes => out.extend_from_slice(s.as_bytes()),
            // UTF-8 orders as code points do.
            Rule::CodePoint => {
                let s = if self.pads() {
                    s.trim_end_matches(' ')
                } else {
                    s
                };
                out.extend_from_slice(s.as_bytes());
            }
            // Weights in UTF-8's form (order kept, one byte below 0x80): ASCII keys are
            // the upper-case bytes, as the default collation's keys always were.
            Rule::General if s.is_ascii() => {
                let s = s.trim_end_matches(' ');
                out.extend(s.bytes().map(|c| c.to_ascii_uppercase()));
            }
            // Straight into `out` (hash keys of GROUP BY and joins take one per row): a
            // space's weight is the only one whose form ends in byte 0x20, so trailing
            // spaces are the trailing 0x20 bytes of what this key appended.
            Rule::General => {
                let start = out.len();
                for c in s.chars() {
                    push_utf8_form(self.weight1(c), out);
                }
                let kept = out[start..]
                    .iter()
                    .rposition(|&b| b != 0x20)
                    .map_or(start, |p| start + p + 1);
                out.truncate(kept);
            }
            _ => {
                let mut w = self.weights(s);
                if self.pads() {
                    let space = self.space();
                    while w.last() == Some(&space) {
                        w.pop();
                    }
                }
                for x in w {
                    out.extend_from_slice(&(x as u16).to_be_bytes());
                }
            }
        }
    }

    /// Under a rule of one weight per character: the character whose weight is the
    /// smallest above `c`'s, leaving out a space's (keys drop trailing spaces). With the
    /// characters before `c`, it bounds the keys of every string that starts with them
    /// and `c` (a LIKE prefix's range). None past the last weight, and under UCA.
    pub fn successor(self, c: char) -> Option<char> {
        if matches!(self.rule(), Rule::Uca(_) | Rule::Bytes) {
            return None;
        }
        let w = self.weight1(c);
        let space = self.space();
        let mut best: Option<(u32, char)> = None;
        for x in (0..=0xFFFF).filter_map(char::from_u32) {
            let wx = self.weight1(x);
            if wx > w && wx != space && best.is_none_or(|(b, _)| wx < b) {
                best = Some((wx, x));
                if wx == w + 1 {
                    break;
                }
            }
        }
        best.map(|(_, x)| x)
    }

    /// `s LIKE p ESCAPE escape`: `_` is one character, `%` any run, and characters match
    /// when their weights are equal (no padding).
    pub fn like(self, s: &str, p: &str, escape: char) -> bool {
        match self.rule() {
            Rule::Bytes if escape.is_ascii() => {
                like_bytes(s.as_bytes(), p.as_bytes(), escape as u8)
            }
            Rule::Bytes | Rule::CodePoint => like_with(s, p, escape, |a, b| a == b),
            // ASCII weighs as its upper case under the general rule.
            Rule::General if s.is_ascii() && p.is_ascii() && escape.is_ascii() => {
                like_ascii_ci(s.as_bytes(), p.as_bytes(), escape as u8)
            }
            _ => {
                let mut wa = Vec::new();
                let mut wb = Vec::new();
                like_with(s, p, escape, |a, b| {
                    if a == b {
                        return true;
                    }
                    wa.clear();
                    wb.clear();
                    self.weigh(a, &mut wa);
                    self.weigh(b, &mut wb);
                    wa == wb
                })
            }
        }
    }
}

/// How ASCII strings compare when `fold` gives each byte's weight (a space weighs 0x20).
fn cmp_ascii_by(a: &[u8], b: &[u8], pads: bool, fold: impl Fn(u8) -> u8) -> Ordering {
    let n = a.len().min(b.len());
    for i in 0..n {
        let (x, y) = (fold(a[i]), fold(b[i]));
        if x != y {
            return x.cmp(&y);
        }
    }
    if !pads {
        return a.len().cmp(&b.len());
    }
    let (rest, flip) = if a.len() > n {
        (&a[n..], false)
    } else {
        (&b[n..], true)
    };
    match rest.iter().map(|&c| fold(c)).find(|&w| w != b' ') {
        Some(w) if flip => b' '.cmp(&w),
        Some(w) => w.cmp(&b' '),
        None => Ordering::Equal,
    }
}

/// A 16-bit weight in the byte form UTF-8 gives that code point (surrogates alike).
fn push_utf8_form(w: u32, out: &mut Vec<u8>) {
    if w < 0x80 {
        out.push(w as u8);
    } else if w < 0x800 {
        out.extend_from_slice(&[0xC0 | (w >> 6) as u8, 0x80 | (w & 0x3F) as u8]);
    } else {
        out.extend_from_slice(&[
            0xE0 | (w >> 12) as u8,
            0x80 | ((w >> 6) & 0x3F) as u8,
            0x80 | (w & 0x3F) as u8,
        ]);
    }
}

/// The ascii byte of a code point ('?' for one beyond ASCII).
fn ascii_byte(cp: u32) -> u8 {
    if cp < 0x80 {
        cp as u8
    } else {
        b'?'
    }
}

#[cfg(test)]
mod tests;
