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
    /// The pattern's pieces between `%` signs (the first and last empty when it starts or
    /// ends with `%`), when it has no `_` or escape and is ASCII.
    pieces: Option<Vec<Vec<u8>>>,
}

impl CompiledLike {
    pub fn new(pattern: &str, escape: char) -> CompiledLike {
        let plain = pattern.is_ascii()
            && escape.is_ascii()
            && !pattern.contains('_')
            && !pattern.contains(escape);
        CompiledLike {
            pattern: pattern.to_string(),
            escape,
            pieces: plain.then(|| pattern.split('%').map(|p| p.as_bytes().to_vec()).collect()),
        }
    }

    /// `s LIKE pattern ESCAPE escape` under the plain collation.
    pub fn matches(&self, s: &str) -> bool {
        match &self.pieces {
            Some(pieces) if s.is_ascii() => pieces_match(s.as_bytes(), pieces),
            _ => like(s, &self.pattern, self.escape),
        }
    }
}

/// Whether `s` is `pieces` joined by runs of any bytes, ASCII case ignored.
fn pieces_match(s: &[u8], pieces: &[Vec<u8>]) -> bool {
    let (first, last) = (&pieces[0], &pieces[pieces.len() - 1]);
    if pieces.len() == 1 {
        return s.eq_ignore_ascii_case(first);
    }
    if s.len() < first.len() + last.len()
        || !s[..first.len()].eq_ignore_ascii_case(first)
        || !s[s.len() - last.len()..].eq_ignore_ascii_case(last)
    {
        return false;
    }
    // The middle pieces, each at its first place after the one before: with `%` the only
    // wildcard, the earliest place leaves the most room for the rest.
    let mut rest = &s[first.len()..s.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
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
            }
        }
    }
}
