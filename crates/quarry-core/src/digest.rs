//! Statement digests (`performance_schema.events_statements_summary_by_digest`): each
//! statement's text with its literals taken out, and per digest and database the count,
//! times, rows and errors of the statements that had it — what PMM, pt-query-digest's
//! `--type` P_S readers and sys-schema-style reports read. Kept only while
//! `performance_schema` is ON (a startup option, OFF by default as in MariaDB: then the
//! table is empty, as MariaDB's is).
//!
//! Owns: the summary table. Must not touch: the digest text (`quarry_sql::digest_text`)
//! or running statements (the session reports each one when it ends).

use std::collections::HashMap;

use parking_lot::Mutex;
use quarry_common::value::DateTime;
use sha2::{Digest as _, Sha256};

/// Digests kept at most; later new ones are counted under one row of NULL digest, as
/// MySQL's `performance_schema_digests_size`.
const MAX_DIGESTS: usize = 5000;

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
        let text = quarry_sql::digest_text(r.sql);
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
