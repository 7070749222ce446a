//! A statement's digest text (`performance_schema`'s DIGEST_TEXT): its tokens as the
//! parser's tokenizer reads them, each literal (string, number, hex, bit) as `?`, a list
//! of them in parentheses as `(...)`, comments dropped and blanks made one space, so
//! statements that differ only in their values read alike.
//!
//! Owns: that text. Must not touch: the summaries kept of it (`quarry_core::digest`).

use sqlparser::tokenizer::{Token, Tokenizer};

/// The longest digest text kept (`performance_schema_max_digest_length`).
const MAX_TEXT: usize = 1024;

/// `sql`'s digest text; a text that does not tokenize is only trimmed.
pub fn digest_text(sql: &str) -> String {
    let Ok(toks) = Tokenizer::new(&crate::dialect(), sql).tokenize() else {
        return sql.trim().chars().take(MAX_TEXT).collect();
    };
    let mut out = String::with_capacity(sql.len().min(MAX_TEXT));
    for t in &toks {
        if out.len() >= MAX_TEXT {
            break;
        }
        match t {
            Token::Whitespace(_) => {
                if !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            Token::Number(..)
            | Token::SingleQuotedString(_)
            | Token::DoubleQuotedString(_)
            | Token::NationalStringLiteral(_)
            | Token::EscapedStringLiteral(_)
            | Token::HexStringLiteral(_)
            | Token::SingleQuotedByteStringLiteral(_)
            | Token::DoubleQuotedByteStringLiteral(_) => out.push('?'),
            other => out.push_str(&other.to_string()),
        }
    }
    let out = out.trim().trim_end_matches(';').trim_end();
    fold_lists(out)
}

/// `(?, ?, ?)` and `(?,?)` as `(...)`: IN lists and VALUES rows of any length read alike.
fn fold_lists(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('(') {
        out.push_str(&rest[..at]);
        let inner = &rest[at + 1..];
        match inner.find(')') {
            Some(end) if inner[..end].split(',').all(|p| p.trim() == "?") => {
                out.push_str("(...)");
                rest = &inner[end + 1..];
            }
            _ => {
                out.push('(');
                rest = inner;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::digest_text;

    #[test]
    fn literals_become_placeholders() {
        for (sql, want) in [
            (
                "SELECT v FROM t WHERE id = 17",
                "SELECT v FROM t WHERE id = ?",
            ),
            (
                "select  *\n from t where s = 'it''s' and x=\"a\\\"b\";",
                "select * from t where s = ? and x=?",
            ),
            (
                "SELECT * FROM t WHERE id IN (1, 2, 3)",
                "SELECT * FROM t WHERE id IN (...)",
            ),
            (
                "INSERT INTO t VALUES (1,'a'),(2,'b')",
                "INSERT INTO t VALUES (...),(...)",
            ),
            (
                "SELECT c2 FROM t1 /* hint */ WHERE k = -1.5e3 -- tail",
                "SELECT c2 FROM t1 WHERE k = -?",
            ),
            (
                "SELECT `col 1` FROM x WHERE b = X'0A' AND h = 0xff",
                "SELECT `col 1` FROM x WHERE b = ? AND h = ?",
            ),
            ("SELECT f(1, col) FROM t2", "SELECT f(?, col) FROM t2"),
        ] {
            assert_eq!(digest_text(sql), want, "{sql}");
        }
    }
}
