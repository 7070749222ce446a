#![allow(dead_code)]
//! Helpers shared by the embedded-API integration tests.

use quarry_core::quarry_common::Value;
use quarry_core::{Database, Output, Session};
use std::path::PathBuf;
use std::sync::Arc;

/// The rows of the last result of `sql`; panics on an error or a non-row result.
pub fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.query(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        other => panic!("{sql}: {other:?}"),
    }
}

/// The rows of `sql` as text, value by value.
pub fn texts(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    rows(s, sql)
        .iter()
        .map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect()
}

/// The rows of `sql` as text, a row's values joined by spaces.
pub fn lines(s: &mut Session, sql: &str) -> Vec<String> {
    texts(s, sql).into_iter().map(|r| r.join(" ")).collect()
}

/// `CHECK TABLE` finds each of `tables` OK.
pub fn check_tables(s: &mut Session, tables: &[&str]) {
    for t in tables {
        let check = rows(s, &format!("CHECK TABLE {t}"));
        assert_eq!(
            check.last().unwrap()[3],
            Value::Str("OK".into()),
            "{t}: {check:?}"
        );
    }
}

/// A session status counter (`SHOW STATUS LIKE name`).
pub fn status(s: &mut Session, name: &str) -> i64 {
    let r = rows(s, &format!("SHOW STATUS LIKE '{name}'"));
    r[0][1].to_string().parse().unwrap()
}

/// Open `dir` again (after the last session and handle were dropped), in database `db`.
pub fn reopen(dir: &std::path::Path, db: &str) -> Session {
    let mut s = Database::open(dir).unwrap().session("root", "localhost");
    s.query(&format!("USE {db}")).unwrap();
    s
}

/// A fresh datadir under the system temp dir, named for the test and the process.
pub fn fresh_db(name: &str) -> (PathBuf, Arc<Database>) {
    let dir = quarry_core::quarry_common::test_dir(name);
    let db = Database::open(&dir).unwrap();
    (dir, db)
}

/// Fill a column table: each of `segments` (first and last id) inserted at once and
/// merged into a segment of its own, then the ids of `delta` one row at a time (left in
/// the delta); `row` gives an id's `(…)` tuple.
pub fn fill_segments(
    s: &mut Session,
    table: &str,
    segments: &[(i64, i64)],
    delta: std::ops::RangeInclusive<i64>,
    row: impl Fn(i64) -> String,
) {
    for &(from, to) in segments {
        let bulk: Vec<String> = (from..=to).map(&row).collect();
        s.query(&format!("INSERT INTO {table} VALUES {}", bulk.join(",")))
            .unwrap();
        s.query(&format!("OPTIMIZE TABLE {table}")).unwrap();
    }
    for i in delta {
        s.query(&format!("INSERT INTO {table} VALUES {}", row(i)))
            .unwrap();
    }
}

/// The access type and key of `table`'s line in `sql`'s EXPLAIN.
pub fn access_of(s: &mut Session, sql: &str, table: &str) -> (String, String) {
    let plan = rows(s, &format!("EXPLAIN {sql}"));
    let row = plan
        .iter()
        .find(|r| r[2].to_string() == table)
        .unwrap_or_else(|| panic!("{table} not in {plan:?}"));
    (row[3].to_string(), row[5].to_string())
}
