//! A LIKE pattern prepared once for many strings under the plain collation
//! (utf8mb4_general_ci): a pattern of literal ASCII text between `%` signs
//! (`'%special%requests%'`, `'PROMO%'`, `'%BRASS'`) matches an ASCII string by finding its
//! pieces in order, each by a vectorised byte search, instead of the backtracking matcher
//! run a character at a time. Any other pattern, and any string that is not ASCII (whose
//! characters the collation may equal to ASCII ones: 'é' to 'e'), goes to [`like`].
//!
//! Owns that fast path; its answers must be [`like`]'s. Must not touch: other collations
//! (their LIKE is [`crate::Collation::like`]).

use crate::value::like;

pub struct CompiledLike {
    pattern: String,
    escape: char,
    /// When the pattern has no `_` or escape and is ASCII (`%` its only wildcard): its
    /// pieces, found once.
    pieces: Option<Pieces>,
}

/// A plain pattern cut at its `%` signs: the text before the first, after the last (when
/// there is one), and between, each middle piece with the place of its rarest byte.
struct Pieces {
    first: Vec<u8>,
    last: Option<Vec<u8>>,
    middle: Vec<(Vec<u8>, usize)>,
}

impl CompiledLike {
    pub fn new(pattern: &str, escape: char) -> CompiledLike {
        let p = pattern.as_bytes();
        let pieces = percents(p, escape).map(|pct| match pct {
            Some((first_end, last_pct)) => Pieces {
                first: p[..first_end].to_vec(),
                last: Some(p[last_pct + 1..].to_vec()),
                middle: match first_end == last_pct {
                    true => Vec::new(),
                    false => p[first_end + 1..last_pct]
                        .split(|&b| b == b'%')
                        .map(|piece| (piece.to_vec(), rarest(piece)))
                        .collect(),
                },
            },
            None => Pieces {
                first: p.to_vec(),
                last: None,
                middle: Vec::new(),
            },
        });
        CompiledLike {
            pattern: pattern.to_string(),
            escape,
            pieces,
        }
    }

    /// `s LIKE pattern ESCAPE escape` under the plain collation.
    pub fn matches(&self, s: &str) -> bool {
        match (&self.pieces, s.is_ascii()) {
            (Some(p), true) => p.matches(s.as_bytes()),
            _ => like(s, &self.pattern, self.escape),
        }
    }

    /// `matches` of text given as bytes, when they are ASCII and the pattern plain (no
    /// UTF-8 check needed); None otherwise (check them as UTF-8 and call `matches`).
    pub fn matches_ascii(&self, b: &[u8]) -> Option<bool> {
        let p = self.pieces.as_ref()?;
        b.is_ascii().then(|| p.matches(b))
    }
}

impl Pieces {
    fn matches(&self, s: &[u8]) -> bool {
        let Some(last) = &self.last else {
            return s.eq_ignore_ascii_case(&self.first);
        };
        let Some(rest) = ends_match(s, &self.first, last) else {
            return false;
        };
        middle_match(rest, self.middle.iter().map(|(p, k)| (p.as_slice(), *k)))
    }
}

/// `s LIKE pattern ESCAPE escape` under the plain collation, the pattern not prepared:
/// a condition an engine checks row by row (`Pred::Like`) takes the same fast path, its
/// only extra cost one look at the pattern's few bytes.
pub fn like_plain(s: &str, pattern: &str, escape: char) -> bool {
    let p = pattern.as_bytes();
    match s.is_ascii().then(|| percents(p, escape)).flatten() {
        Some(pct) => pieces_match(s.as_bytes(), p, pct),
        None => like(s, pattern, escape),
    }
}

/// When `pattern` is plain — ASCII, no `_`, no escape character, `%` its only wildcard —
/// the places of its first and last `%` (None when it has none). Found in one pass over
/// its bytes: this runs for every row an engine's condition checks, and a pattern is a
/// few bytes (`'13%'`, TPC-H Q22's seven a row), shorter than a vectorised search's setup.
fn percents(pattern: &[u8], escape: char) -> Option<Option<(usize, usize)>> {
    if !escape.is_ascii() {
        return None;
    }
    let (escape, mut first, mut last) = (escape as u8, usize::MAX, 0);
    for (i, &b) in pattern.iter().enumerate() {
        match b {
            b'%' => {
                first = first.min(i);
                last = i;
            }
            b'_' => return None,
            _ if !b.is_ascii() || b == escape => return None,
            _ => {}
        }
    }
    Some((first != usize::MAX).then_some((first, last)))
}

/// Whether `s` is the pieces of plain `pattern` between its first and last `%` (`pct`,
/// as [`percents`] gives them) joined by runs of any bytes, ASCII case ignored.
fn pieces_match(s: &[u8], pattern: &[u8], pct: Option<(usize, usize)>) -> bool {
    let Some((first_end, last_pct)) = pct else {
        return s.eq_ignore_ascii_case(pattern);
    };
    let (first, last) = (&pattern[..first_end], &pattern[last_pct + 1..]);
    let Some(rest) = ends_match(s, first, last) else {
        return false;
    };
    if first_end == last_pct {
        return true;
    }
    let middle = pattern[first_end + 1..last_pct].split(|&b| b == b'%');
    middle_match(rest, middle.map(|piece| (piece, rarest(piece))))
}

/// What lies between `s`'s `first` and `last` pieces, when it starts and ends with them
/// (not overlapping), ASCII case ignored.
fn ends_match<'s>(s: &'s [u8], first: &[u8], last: &[u8]) -> Option<&'s [u8]> {
    (s.len() >= first.len() + last.len()
        && s[..first.len()].eq_ignore_ascii_case(first)
        && s[s.len() - last.len()..].eq_ignore_ascii_case(last))
    .then(|| &s[first.len()..s.len() - last.len()])
}

/// Whether the middle pieces (each with the place of its rarest byte) are found in
/// `rest` in order, each at its first place after the one before: with `%` the only
/// wildcard, the earliest place leaves the most room for the rest.
fn middle_match<'p>(mut rest: &[u8], pieces: impl Iterator<Item = (&'p [u8], usize)>) -> bool {
    for (piece, k) in pieces {
        match find_ignoring_case(rest, piece, k) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Where `needle` first starts in `hay`, ASCII case ignored. The byte searched for is
/// the needle's rarest in English text, not its first: comments are mostly common
/// letters, and a search for the `s` of `special` stops at nearly every word.
/// `k` is the place of that byte in `needle` ([`rarest`]).
fn find_ignoring_case(hay: &[u8], needle: &[u8], k: usize) -> Option<usize> {
    if needle.is_empty() {
        return Some(0);
    }
    let c = needle[k];
    let (lo, up) = (c.to_ascii_lowercase(), c.to_ascii_uppercase());
    // `at` is where the needle would start; its anchor byte is at `at + k`.
    let mut at = 0;
    while at + needle.len() <= hay.len() {
        let window = &hay[at + k..=hay.len() - needle.len() + k];
        at += memchr::memchr2(lo, up, window)?;
        if hay[at..at + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(at);
        }
        at += 1;
    }
    None
}

/// The place in `piece` of its rarest byte (0 for an empty piece).
fn rarest(piece: &[u8]) -> usize {
    (0..piece.len())
        .min_by_key(|&i| commonness(piece[i]))
        .unwrap_or(0)
}

/// How common a byte is in text, lower for rarer: letters by their frequency in English
/// (either case), the space commonest, other bytes between the rare and the common
/// letters.
fn commonness(b: u8) -> u8 {
    const LETTERS: &[u8; 26] = b"zqjxkvbpygfwmucldrhsnioate";
    match b {
        b' ' => 40,
        b'a'..=b'z' | b'A'..=b'Z' => {
            let l = b.to_ascii_lowercase();
            LETTERS.iter().position(|&x| x == l).unwrap_or(0) as u8 + 10
        }
        _ => 20,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Rng;

    /// Random strings and patterns over a small alphabet (cases, `%`, `_`, the escape,
    /// an accented letter the collation equals to 'e'): the compiled pattern answers as
    /// `like` does.
    #[test]
    fn answers_as_like_does() {
        let mut rng = Rng::new(11);
        let alphabet = ['a', 'A', 'b', 'e', 'é', ' ', '%', '_', '\\'];
        let pick = |rng: &mut Rng, n: usize, from: &[char]| -> String {
            (0..n).map(|_| from[rng.below(from.len())]).collect()
        };
        for _ in 0..20_000 {
            let n = rng.below(8);
            let p = pick(&mut rng, n, &alphabet);
            let compiled = CompiledLike::new(&p, '\\');
            for _ in 0..8 {
                let n = rng.below(10);
                let s = pick(&mut rng, n, &alphabet[..6]);
                assert_eq!(compiled.matches(&s), like(&s, &p, '\\'), "{s:?} LIKE {p:?}");
                assert_eq!(
                    like_plain(&s, &p, '\\'),
                    like(&s, &p, '\\'),
                    "{s:?} LIKE {p:?}"
                );
                if let Some(m) = compiled.matches_ascii(s.as_bytes()) {
                    assert_eq!(m, like(&s, &p, '\\'), "{s:?} LIKE {p:?} as bytes");
                }
            }
        }
    }

    /// The search anchored at a needle's rarest byte finds its first place, ASCII case
    /// ignored, as a search from every place does: needles whose rare byte is first,
    /// last or inside, repeated, overlapping, and at the haystack's ends.
    #[test]
    fn finds_the_first_place_whatever_byte_it_anchors_at() {
        let naive = |hay: &[u8], needle: &[u8]| {
            (0..=hay.len().saturating_sub(needle.len())).find(|&i| {
                i + needle.len() <= hay.len()
                    && hay[i..i + needle.len()].eq_ignore_ascii_case(needle)
            })
        };
        let mut rng = Rng::new(5);
        let alphabet = b"seqQSE x";
        for _ in 0..50_000 {
            let hay: Vec<u8> = (0..rng.below(14)).map(|_| alphabet[rng.below(8)]).collect();
            let needle: Vec<u8> = (0..rng.below(5)).map(|_| alphabet[rng.below(8)]).collect();
            assert_eq!(
                find_ignoring_case(&hay, &needle, rarest(&needle)),
                naive(&hay, &needle),
                "{:?} in {:?}",
                String::from_utf8_lossy(&needle),
                String::from_utf8_lossy(&hay)
            );
        }
        let comment = b"ly final requests. special, express REQUESTS sleep";
        assert_eq!(find_ignoring_case(comment, b"requests", 2), Some(9));
        assert_eq!(find_ignoring_case(&comment[10..], b"requests", 0), Some(26));
        assert_eq!(find_ignoring_case(comment, b"SPECIAL", 6), Some(19));
        let pieces = |p: &[u8]| pieces_match(comment, p, percents(p, '\\').unwrap());
        assert!(pieces(b"%special%requests%"));
        assert!(!pieces(b"%requests%special%requests%sleep%x"));
    }
}
