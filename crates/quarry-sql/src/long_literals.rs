//! Long string literals kept out of `sqlparser`'s way.
//!
//! The parser clones each token it consumes, and where it tries one reading and falls
//! back to another (an expression is first tried as `DATE '…'`-style typed string) it
//! formats the token into an error message it then drops. For a literal of 100 MB that is
//! several hundred megabytes. So a literal longer than [`LONG`] is swapped for a short
//! marker before parsing and moved back into the statement afterwards: the parser only
//! ever copies the marker.
//!
//! Owns: the swap and its undoing. Must not touch: what the literals mean.

use std::ops::ControlFlow;

use sqlparser::ast::{Statement, Value, ValueWithSpan, VisitMut, VisitorMut};
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// Literals at least this long (bytes) are swapped out.
const LONG: usize = 4096;

/// Starts every marker: a control character no client's short literal is expected to
/// start with (if one does, nothing is swapped — see [`swap_out`]).
const MARK: char = '\u{1e}';

/// Literals swapped out of a token stream, by marker number.
pub struct Stash(Vec<Option<String>>);

impl Stash {
    pub fn empty() -> Stash {
        Stash(vec![])
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Replace each long quoted string token with a marker; the tokens and what was taken.
pub fn swap_out(mut toks: Vec<TokenWithSpan>) -> (Vec<TokenWithSpan>, Stash) {
    let quoted = |t: &Token| match t {
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Some(s.len()),
        _ => None,
    };
    let long = toks
        .iter()
        .any(|t| quoted(&t.token).is_some_and(|n| n >= LONG));
    // A short literal that looks like a marker could be mistaken for one.
    let lookalike = toks.iter().any(|t| {
        matches!(&t.token, Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)
            if s.len() < LONG && s.starts_with(MARK))
    });
    if !long || lookalike {
        return (toks, Stash(vec![]));
    }
    let mut stash = vec![];
    for t in &mut toks {
        if let Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) = &mut t.token {
            if s.len() >= LONG {
                let marker = format!("{MARK}{}", stash.len());
                let mut taken = std::mem::replace(s, marker);
                taken.shrink_to_fit();
                stash.push(Some(taken));
            }
        }
    }
    (toks, Stash(stash))
}

/// Move the literals back where their markers ended up. False when one is not found in a
/// literal value of the statements (the parser kept it as some other string, such as a
/// COMMENT): the caller parses again without swapping.
pub fn swap_in(stmts: &mut [Statement], stash: Stash) -> bool {
    struct Back(Stash);
    impl VisitorMut for Back {
        type Break = ();
        fn pre_visit_value(&mut self, v: &mut ValueWithSpan) -> ControlFlow<()> {
            if let Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) = &mut v.value {
                let slot = s
                    .strip_prefix(MARK)
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| self.0 .0.get_mut(n));
                if let Some(taken) = slot.and_then(Option::take) {
                    *s = taken;
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut back = Back(stash);
    for s in stmts.iter_mut() {
        let _ = s.visit(&mut back);
    }
    back.0 .0.iter().all(Option::is_none)
}

#[cfg(test)]
mod tests {
    use crate::{parse_one, Stmt};

    fn text(sql: &str) -> String {
        match parse_one(sql).unwrap() {
            Stmt::Ast(s) => s.to_string(),
            other => panic!("{other:?}"),
        }
    }

    /// Long literals come back whole wherever they stand: in values, in conditions, as
    /// double-quoted strings, and where the parser keeps a plain string (a COMMENT, which
    /// falls back to parsing without the swap); a short literal that looks like a marker
    /// is left alone.
    #[test]
    fn long_literals_come_back_where_they_were() {
        let long = "x".repeat(10_000) + "é";
        let other = "y".repeat(5_000);
        for sql in [
            format!("SELECT LENGTH('{long}'), '{other}'"),
            format!("INSERT INTO t VALUES (1, '{long}'), (2, \"{other}\")"),
            format!("SELECT * FROM t WHERE a LIKE '{long}' OR b = '{other}'"),
            format!("CREATE TABLE t (a INT COMMENT '{long}') COMMENT '{other}'"),
            format!("SELECT '\u{1e}0', '{long}'"),
            format!("SELECT '{long}', '\u{1e}1', '{other}'"),
        ] {
            let got = text(&sql);
            assert!(got.contains(&long), "{}", &sql[..60]);
            // No marker left behind, and a client's lookalike kept.
            assert_eq!(got.matches('\u{1e}').count(), sql.matches('\u{1e}').count());
            assert_eq!(got.matches('x').count(), 10_000, "{:.60}", sql);
        }
    }
}
