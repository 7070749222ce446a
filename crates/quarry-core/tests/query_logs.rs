//! The general and slow query logs (issue 19, item 7): `SET GLOBAL slow_query_log=1`
//! was 1193. Entries are in MariaDB 10.11's layout (its general and slow logs for the
//! same statements are the model: `# Time:`, `# User@Host:`, `# Query_time: …
//! Rows_examined:`, `use`, `SET timestamp=`, the statement), and the variables refuse
//! what MariaDB refuses, with its codes.

mod common;

use common::{fresh_db, lines};
use quarry_core::quarry_common::Value;
use quarry_core::Session;

fn err(s: &mut Session, sql: &str) -> String {
    match s.query(sql) {
        Ok(_) => "ok".into(),
        Err(e) => format!("{} {}", e.code, e.message),
    }
}

#[test]
fn the_slow_log_holds_statements_past_long_query_time() {
    let (dir, db) = fresh_db("slowlog");
    let mut s = db.session("root", "127.0.0.1");
    let file = dir.join("my-slow.log");
    for sql in [
        "CREATE DATABASE app",
        "USE app",
        "CREATE TABLE t (id INT PRIMARY KEY, b INT)",
        "INSERT INTO t VALUES (1, 10), (2, 20), (3, 30)",
    ] {
        s.query(sql).unwrap();
    }
    s.query(&format!(
        "SET GLOBAL slow_query_log_file = '{}'",
        file.display()
    ))
    .unwrap();
    // Every statement is slow past 0 seconds (the session's own long_query_time).
    s.query("SET long_query_time = 0").unwrap();
    s.query("SET GLOBAL slow_query_log = 1").unwrap();
    assert_eq!(
        lines(&mut s, "SELECT b FROM t WHERE b > 15 ORDER BY b"),
        ["20", "30"]
    );
    s.query("UPDATE t SET b = b + 1 WHERE id = 2").unwrap();
    // Slow_queries counts them (mariadb-admin status said 0 whatever ran).
    let slow: i64 = lines(&mut s, "SHOW GLOBAL STATUS LIKE 'Slow_queries'")[0]
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(slow >= 3, "Slow_queries {slow}");
    s.query("SET GLOBAL slow_query_log = 0").unwrap();
    s.query("SELECT 'not logged'").unwrap();
    let log = std::fs::read_to_string(&file).unwrap();
    let header = "quarry, Version: ";
    assert!(log.starts_with(header), "{log}");
    assert!(
        log.contains("\nTime\t\t    Id Command\tArgument\n"),
        "{log}"
    );
    // The SELECT read all 3 rows (no index on b) and sent 2.
    let select = log
        .split("# User@Host: ")
        .find(|e| e.contains("SELECT b FROM t"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        select.starts_with(&format!("root[root] @ localhost [127.0.0.1]\n# Thread_id: {}  Schema: app  QC_hit: No\n# Query_time: ", s.id())),
        "{select}"
    );
    assert!(
        select.contains("  Rows_sent: 2  Rows_examined: 3\n# Rows_affected: 0\n"),
        "{select}"
    );
    // The SET that turned the log on is its first entry (it too took 0 seconds or
    // more), with the database it ran in; later entries say `use` only when it changes.
    assert_eq!(
        log.matches("\nuse `app`;\nSET timestamp=").count(),
        1,
        "{log}"
    );
    assert!(
        log.split("# User@Host: ")
            .nth(1)
            .unwrap()
            .contains("SET GLOBAL slow_query_log = 1;"),
        "{log}"
    );
    assert!(
        select.ends_with(";\nSELECT b FROM t WHERE b > 15 ORDER BY b;\n"),
        "{select}"
    );
    let update = log
        .split("# User@Host: ")
        .find(|e| e.contains("UPDATE t SET"))
        .unwrap();
    assert!(
        update.contains("Rows_examined: 1\n# Rows_affected: 1\n"),
        "{update}"
    );
    assert!(!log.contains("not logged"));

    // log_queries_not_using_indexes: a whole-table read is logged however fast.
    let file2 = dir.join("scans.log");
    s.query(&format!(
        "SET GLOBAL slow_query_log_file = '{}'",
        file2.display()
    ))
    .unwrap();
    s.query("SET long_query_time = 100").unwrap();
    s.query("SET GLOBAL log_queries_not_using_indexes = ON")
        .unwrap();
    s.query("SET GLOBAL log_slow_verbosity = 'query_plan'")
        .unwrap();
    s.query("SET GLOBAL slow_query_log = ON").unwrap();
    s.query("SELECT * FROM t WHERE id = 1").unwrap();
    s.query("SELECT * FROM t WHERE b = 10").unwrap();
    let log = std::fs::read_to_string(&file2).unwrap();
    assert!(!log.contains("WHERE id = 1"), "{log}");
    assert!(log.contains("# Full_scan: Yes\n"), "{log}");
    assert!(log.contains("SELECT * FROM t WHERE b = 10;\n"), "{log}");
}

#[test]
fn the_general_log_holds_every_command() {
    let (dir, db) = fresh_db("generallog");
    let mut s = db.session("root", "127.0.0.1");
    let file = dir.join("general.log");
    s.query(&format!(
        "SET GLOBAL general_log_file = '{}'",
        file.display()
    ))
    .unwrap();
    s.query("SET GLOBAL general_log = 1").unwrap();
    s.query("SELECT 1").unwrap();
    let p = s.prepare("SELECT ?, ?").unwrap();
    s.execute(&p, vec![Value::Int(7), Value::Str("it's".into())])
        .unwrap();
    let id = s.id();
    let mut other = db.session("root", "127.0.0.1");
    other.query("SELECT 2").unwrap();
    drop(other);
    s.query("SET GLOBAL general_log = 0").unwrap();
    s.query("SELECT 3").unwrap();
    let log = std::fs::read_to_string(&file).unwrap();
    let entries: Vec<String> = log
        .lines()
        .skip(3)
        .map(|l| {
            l.split_once('\t')
                .map_or(l, |(_, rest)| rest)
                .trim_start_matches('\t')
                .to_string()
        })
        .collect();
    assert_eq!(
        entries,
        [
            format!("{id:>6} Query\tSELECT 1"),
            format!("{id:>6} Prepare\tSELECT ?, ?"),
            format!("{id:>6} Execute\tSELECT 7, 'it\\'s'"),
            format!("{:>6} Query\tSELECT 2", id + 1),
            format!("{:>6} Quit\t", id + 1),
            format!("{id:>6} Query\tSET GLOBAL general_log = 0"),
        ],
        "{log}"
    );
    // The first entry of a second carries the time (`261126 19:42:48`), as MariaDB's.
    let first = log.lines().nth(3).unwrap();
    assert!(first.len() > 16 && first.as_bytes()[6] == b' ', "{first}");
}

#[test]
fn log_variables_refuse_what_mariadb_refuses() {
    let (_dir, db) = fresh_db("logvars");
    let mut s = db.session("root", "localhost");
    assert_eq!(
        err(&mut s, "SET GLOBAL general_log_file = '/nonexistent/x.log'"),
        "1231 Variable 'general_log_file' can't be set to the value of '/nonexistent/x.log'"
    );
    assert_eq!(
        err(
            &mut s,
            "SET GLOBAL slow_query_log_file = '/nonexistent/x.log'"
        ),
        "1231 Variable 'slow_query_log_file' can't be set to the value of '/nonexistent/x.log'"
    );
    assert_eq!(
        err(&mut s, "SET general_log = 1"),
        "1229 Variable 'general_log' is a GLOBAL variable and should be set with SET GLOBAL"
    );
    assert_eq!(
        err(&mut s, "SET GLOBAL log_output = 'bad'"),
        "1231 Variable 'log_output' can't be set to the value of 'bad'"
    );
    assert_eq!(
        lines(
            &mut s,
            "SELECT @@log_output, @@long_query_time, @@slow_query_log, @@general_log, @@log_warnings"
        ),
        ["FILE 10.000000 0 0 2"]
    );
    s.query("SET SESSION long_query_time = 1").unwrap();
    s.query("SET SESSION slow_query_log = 0").unwrap();
    assert_eq!(
        lines(
            &mut s,
            "SELECT @@session.long_query_time, @@global.long_query_time"
        ),
        ["1.000000 10.000000"]
    );
    // The files' default names are in the datadir.
    s.query("SET GLOBAL slow_query_log = 1").unwrap();
    assert!(db.datadir().join("quarry-slow.log").exists());
}

/// With `performance_schema` ON (a startup option) statements are summarised by digest:
/// literals out, counts and rows per digest and database. OFF (the default, as
/// MariaDB's) the table is empty.
#[test]
fn statements_are_summarised_by_digest() {
    let dir = std::env::temp_dir().join(format!("quarry-digests-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = quarry_core::Options {
        performance_schema: true,
        ..Default::default()
    };
    let db = quarry_core::Database::open_with(&dir, &opts).unwrap();
    let mut s = db.session("root", "localhost");
    for sql in [
        "CREATE DATABASE app",
        "USE app",
        "CREATE TABLE t (id INT PRIMARY KEY, v INT)",
        "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3)",
        "SELECT v FROM t WHERE id = 1",
        "SELECT v FROM t WHERE id = 2",
        "SELECT   v FROM t WHERE id = 42",
        "SELECT v FROM t WHERE id IN (1, 2)",
        "SELECT v FROM t WHERE id IN (3)",
    ] {
        s.query(sql).unwrap();
    }
    assert!(s.query("SELECT nosuch FROM t").is_err());
    assert_eq!(lines(&mut s, "SELECT @@performance_schema"), ["1"]);
    assert_eq!(
        lines(
            &mut s,
            "SELECT SCHEMA_NAME, DIGEST_TEXT, COUNT_STAR, SUM_ROWS_SENT, SUM_ROWS_EXAMINED, SUM_ERRORS, LENGTH(DIGEST) \
             FROM performance_schema.events_statements_summary_by_digest \
             WHERE DIGEST_TEXT LIKE 'SELECT %' ORDER BY DIGEST_TEXT"
        ),
        [
            "app SELECT @@performance_schema 1 1 0 0 32",
            "app SELECT nosuch FROM t 1 0 0 1 32",
            "app SELECT v FROM t WHERE id = ? 3 2 2 0 32",
            // IN (1, 2) reads the 3-row table whole (the plan a scan), IN (3) one entry.
            "app SELECT v FROM t WHERE id IN (...) 2 3 4 0 32",
        ]
    );
    // TRUNCATE starts the summary again (the TRUNCATE itself is its first statement).
    s.query("TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")
        .unwrap();
    assert_eq!(
        lines(
            &mut s,
            "SELECT DIGEST_TEXT FROM performance_schema.events_statements_summary_by_digest"
        ),
        ["TRUNCATE TABLE performance_schema.events_statements_summary_by_digest"]
    );
    assert_eq!(
        err(&mut s, "SET GLOBAL performance_schema = 0"),
        "1238 Variable 'performance_schema' is a read only variable"
    );
    drop(s);
    drop(db);
    let (_dir, off) = fresh_db("digests-off");
    let mut s = off.session("root", "localhost");
    s.query("SELECT 1").unwrap();
    assert_eq!(
        lines(
            &mut s,
            "SELECT COUNT(*) FROM performance_schema.events_statements_summary_by_digest"
        ),
        ["0"]
    );
}
