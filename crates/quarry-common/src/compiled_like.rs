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
    /// The pattern has no `_` or escape and is ASCII: `%` is its only wildcard.
    plain: bool,
}

impl CompiledLike {
    pub fn new(pattern: &str, escape: char) -> CompiledLike {
        CompiledLike {
            pattern: pattern.to_string(),
            escape,
            plain: is_plain(pattern, escape),
        }
    }

    /// `s LIKE pattern ESCAPE escape` under the plain collation.
    pub fn matches(&self, s: &str) -> bool {
        match self.plain && s.is_ascii() {
            true => pieces_match(s.as_bytes(), self.pattern.as_bytes()),
            false => like(s, &self.pattern, self.escape),
        }
    }

    /// `matches` of text given as bytes, when they are ASCII and the pattern plain (no
    /// UTF-8 check needed); None otherwise (check them as UTF-8 and call `matches`).
    pub fn matches_ascii(&self, b: &[u8]) -> Option<bool> {
        (self.plain && b.is_ascii()).then(|| pieces_match(b, self.pattern.as_bytes()))
    }
}

/// `s LIKE pattern ESCAPE escape` under the plain collation, the pattern not prepared:
/// a condition an engine checks row by row (`Pred::Like`) takes the same fast path, its
/// only extra cost a look at the pattern's few bytes.
pub fn like_plain(s: &str, pattern: &str, escape: char) -> bool {
    match s.is_ascii() && is_plain(pattern, escape) {
        true => pieces_match(s.as_bytes(), pattern.as_bytes()),
        false => like(s, pattern, escape),
    }
}

fn is_plain(pattern: &str, escape: char) -> bool {
    // Bytes, not a search for either of two chars: this runs for every row a condition
    // checks.
    escape.is_ascii()
        && pattern.is_ascii()
        && memchr::memchr2(b'_', escape as u8, pattern.as_bytes()).is_none()
}

/// Whether `s` is the pieces of `pattern` between its `%` signs joined by runs of any
/// bytes, ASCII case ignored.
fn pieces_match(s: &[u8], pattern: &[u8]) -> bool {
    let (Some(first_end), Some(last_pct)) = (
        memchr::memchr(b'%', pattern),
        memchr::memrchr(b'%', pattern),
    ) else {
        return s.eq_ignore_ascii_case(pattern);
    };
    let (first, last) = (&pattern[..first_end], &pattern[last_pct + 1..]);
    if s.len() < first.len() + last.len()
        || !s[..first.len()].eq_ignore_ascii_case(first)
        || !s[s.len() - last.len()..].eq_ignore_ascii_case(last)
    {
        return false;
    }
    // The middle pieces, each at its first place after the one before: with `%` the only
    // wildcard, the earliest place leaves the most room for the rest.
    let mut rest = &s[first.len()..s.len() - last.len()];
    if first_end == last_pct {
        return true;
    }
    for piece in pattern[first_end + 1..last_pct].split(|&b| b == b'%') {
        match find_ignoring_case(rest, piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Where `needle` first starts in `hay`, ASCII case ignored.
fn find_ignoring_case(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let Some(&c) = needle.first() else {
        return Some(0);
    };
    let (lo, up) = (c.to_ascii_lowercase(), c.to_ascii_uppercase());
    let mut from = 0;
    while from + needle.len() <= hay.len() {
        let at = from + memchr::memchr2(lo, up, &hay[from..=hay.len() - needle.len()])?;
        if hay[at..at + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(at);
        }
        from = at + 1;
    }
    None
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
}
