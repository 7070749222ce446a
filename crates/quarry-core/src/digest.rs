//! Statement digests (`performance_schema.events_statements_summary_by_digest`): each
//! statement's text with its literals taken out, and per digest and database the count,
//! times, rows and errors of the statements that had it — what PMM, pt-query-digest's
//! `--type` P_S readers and sys-schema-style reports read. Kept only while
//! `performance_schema` is ON (a startup option, OFF by default as in MariaDB: then the
//! table is empty, as MariaDB's is).
//!
//! Owns: the normalisation and the summary table. Must not touch: running statements
//! (the session reports each one when it ends).

use std::collections::HashMap;

use parking_lot::Mutex;
use quarry_common::value::DateTime;
use sha2::{Digest as _, Sha256};

/// Digests kept at most; later new ones are counted under one row of NULL digest, as
/// MySQL's `performance_schema_digests_size`.
const MAX_DIGESTS: usize = 5000;

/// The longest digest text kept (`performance_schema_max_digest_length`).
const MAX_TEXT: usize = 1024;

/// A statement's text with each literal (string, number, hex, bit) as `?`, a list of
/// them in parentheses as `(...)`, comments dropped and blanks made one space.
pub fn normalize(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len().min(MAX_TEXT));
    let mut i = 0;
    let word_before = |out: &String| {
        out.as_bytes()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$')
    };
    while i < b.len() && out.len() < MAX_TEXT {
        let c = b[i];
        match c {
            b'\'' | b'"' => {
                i += 1;
                while i < b.len() {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == c {
                        if b.get(i + 1) == Some(&c) {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                out.push('?');
            }
            b'`' => {
                let end = b[i + 1..]
                    .iter()
                    .position(|x| *x == b'`')
                    .map_or(b.len(), |p| i + 1 + p + 1);
                out.push_str(&sql[i..end]);
                i = end;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = sql[i + 2..].find("*/").map_or(b.len(), |p| i + 2 + p + 2);
                i = end;
            }
            c if c.is_ascii_whitespace() => {
                while i < b.len() && b[i].is_ascii_whitespace() {
                    i += 1;
                }
                if !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
            }
            c if c.is_ascii_digit() && !word_before(&out) => {
                // A number (0x… and 1e5 included), or X'…' handled as a string above.
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                    i += 1;
                }
                out.push('?');
            }
            b'x' | b'X' | b'b' | b'B' if b.get(i + 1) == Some(&b'\'') && !word_before(&out) => {
                i += 1;
            }
            _ => {
                let ch = sql[i..].chars().next().unwrap_or(' ');
                out.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    let out = out.trim().trim_end_matches(';').trim_end().to_string();
    fold_lists(&out)
}

/// `(?, ?, ?)` and `(?,?)` as `(...)`: IN lists and VALUES rows of any length read alike.
fn fold_lists(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('(') {
        out.push_str(&rest[..at]);
        let inner = &rest[at + 1..];
        let close = inner.find(')');
        match close {
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

/// One statement's figures, as the session reports them.
pub struct Run<'a> {
    pub schema: Option<&'a str>,
    pub sql: &'a str,
    pub picos: u64,
    pub lock_picos: u64,
    pub error: bool,
    pub warnings: u64,
    pub rows_affected: u64,
    pub rows_sent: u64,
    pub rows_examined: u64,
    pub full_scan: bool,
}

/// A digest's row.
#[derive(Clone)]
pub struct Summary {
    pub schema: Option<String>,
    /// None: the row that counts the digests past the table's size.
    pub digest: Option<String>,
    pub text: Option<String>,
    pub count: u64,
    pub sum_picos: u64,
    pub min_picos: u64,
    pub max_picos: u64,
    pub lock_picos: u64,
    pub errors: u64,
    pub warnings: u64,
    pub rows_affected: u64,
    pub rows_sent: u64,
    pub rows_examined: u64,
    pub full_scans: u64,
    pub first_seen: DateTime,
    pub last_seen: DateTime,
}

/// (database, digest): a digest's row per database; (None, None) the overflow row.
type Key = (Option<String>, Option<String>);

#[derive(Default)]
pub struct Digests {
    by_key: Mutex<HashMap<Key, Summary>>,
}

impl Digests {
    pub fn record(&self, r: &Run) {
        let text = normalize(r.sql);
        if text.is_empty() {
            return;
        }
        // 32 hex digits, as MySQL's (its are MD5's; any digest of the text serves).
        let hash: String = Sha256::digest(text.as_bytes())[..16]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let now = DateTime::now();
        let mut map = self.by_key.lock();
        let mut key = (r.schema.map(str::to_string), Some(hash));
        if !map.contains_key(&key) && map.len() >= MAX_DIGESTS {
            key = (None, None);
        }
        let digest = key.1.clone();
        let s = map.entry(key).or_insert_with(|| Summary {
            schema: r.schema.map(str::to_string).filter(|_| digest.is_some()),
            text: digest.as_ref().map(|_| text),
            digest,
            count: 0,
            sum_picos: 0,
            min_picos: u64::MAX,
            max_picos: 0,
            lock_picos: 0,
            errors: 0,
            warnings: 0,
            rows_affected: 0,
            rows_sent: 0,
            rows_examined: 0,
            full_scans: 0,
            first_seen: now,
            last_seen: now,
        });
        s.count += 1;
        s.sum_picos += r.picos;
        s.min_picos = s.min_picos.min(r.picos);
        s.max_picos = s.max_picos.max(r.picos);
        s.lock_picos += r.lock_picos;
        s.errors += r.error as u64;
        s.warnings += r.warnings;
        s.rows_affected += r.rows_affected;
        s.rows_sent += r.rows_sent;
        s.rows_examined += r.rows_examined;
        s.full_scans += r.full_scan as u64;
        s.last_seen = now;
    }

    /// TRUNCATE of the summary table.
    pub fn clear(&self) {
        self.by_key.lock().clear();
    }

    pub fn rows(&self) -> Vec<Summary> {
        let mut v: Vec<Summary> = self.by_key.lock().values().cloned().collect();
        v.sort_by_key(|d| std::cmp::Reverse(d.sum_picos));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::normalize;

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
            assert_eq!(normalize(sql), want, "{sql}");
        }
    }
}
