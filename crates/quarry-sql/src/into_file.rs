//! `SELECT … INTO OUTFILE 'file' [CHARACTER SET cs] [FIELDS …] [LINES …]` and
//! `SELECT … INTO DUMPFILE 'file'`. sqlparser knows only `SELECT … INTO table`, so the
//! clause is taken out of the token stream before the query is parsed, wherever MySQL
//! allows it (before FROM, or after the rest of the query).
//!
//! Owns the clause's syntax only; writing the file is the session's.

use sqlparser::parser::ParserError;

use crate::FieldFormat;
use sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace, Word};

/// Where and how a query's rows are written.
#[derive(Debug, Clone, PartialEq)]
pub struct IntoFile {
    pub file: String,
    /// DUMPFILE: one row, its values written back to back without any formatting.
    pub dump: bool,
    pub format: FieldFormat,
}

/// The tokens of `toks` from `at` on, whitespace and comments skipped.
struct Cursor<'t> {
    toks: &'t [TokenWithSpan],
    at: usize,
}

impl Cursor<'_> {
    fn skip_blank(&mut self) {
        while matches!(
            self.toks.get(self.at).map(|t| &t.token),
            Some(Token::Whitespace(_))
        ) {
            self.at += 1;
        }
    }
    fn word(&mut self) -> Option<String> {
        self.skip_blank();
        match self.toks.get(self.at).map(|t| &t.token) {
            Some(Token::Word(Word { value, .. })) => Some(value.to_ascii_uppercase()),
            _ => None,
        }
    }
    fn eat(&mut self, kw: &str) -> bool {
        if self.word().as_deref() == Some(kw) {
            self.at += 1;
            return true;
        }
        false
    }
    fn eat_seq(&mut self, kws: &[&str]) -> bool {
        let save = self.at;
        if kws.iter().all(|k| self.eat(k)) {
            return true;
        }
        self.at = save;
        false
    }
    fn string(&mut self) -> Result<String, ParserError> {
        self.skip_blank();
        match self.toks.get(self.at).map(|t| &t.token) {
            Some(Token::SingleQuotedString(s) | Token::DoubleQuotedString(s)) => {
                self.at += 1;
                Ok(s.clone())
            }
            other => Err(ParserError::ParserError(format!(
                "Expected: a quoted file name or option, found: {}",
                other.map_or("EOF".to_string(), |t| t.to_string())
            ))),
        }
    }
}

impl crate::OptionWords for Cursor<'_> {
    fn eat_seq(&mut self, kws: &[&str]) -> bool {
        Cursor::eat_seq(self, kws)
    }
    fn quoted(&mut self) -> quarry_common::Result<String> {
        self.string()
            .map_err(|e| quarry_common::Error::syntax(e.to_string()))
    }
}

/// Take an `INTO OUTFILE` / `INTO DUMPFILE` clause at the top level out of `toks`.
pub(crate) fn take(toks: &mut Vec<TokenWithSpan>) -> Result<Option<IntoFile>, ParserError> {
    let mut depth = 0i32;
    let mut start = None;
    for (i, t) in toks.iter().enumerate() {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.value.eq_ignore_ascii_case("INTO") => {
                let mut c = Cursor { toks, at: i + 1 };
                if matches!(c.word().as_deref(), Some("OUTFILE" | "DUMPFILE")) {
                    start = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(start) = start else {
        return Ok(None);
    };
    let mut c = Cursor {
        toks,
        at: start + 1,
    };
    let dump = c.eat("DUMPFILE");
    if !dump {
        c.eat("OUTFILE");
    }
    let mut into = IntoFile {
        file: c.string()?,
        dump,
        format: FieldFormat::default(),
    };
    if !dump {
        if c.eat_seq(&["CHARACTER", "SET"]) || c.eat("CHARSET") {
            // Rows are written as UTF-8 whatever is named.
            if c.word().is_some() {
                c.at += 1;
            } else {
                c.string()?;
            }
        }
        crate::field_line_options(&mut c, &mut into.format)
            .map_err(|e| ParserError::ParserError(e.message))?;
    }
    let end = c.at;
    let span = toks[start].span;
    toks.splice(
        start..end,
        [TokenWithSpan {
            token: Token::Whitespace(Whitespace::Space),
            span,
        }],
    );
    Ok(Some(into))
}
