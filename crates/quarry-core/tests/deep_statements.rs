//! Long flat lists and deep nesting: each statement either works or is refused with a
//! clear error, never overflows the stack (which aborts the whole server). The session
//! runs on a test thread's small stack here, so the statement stack it grows is what
//! keeps these alive.

mod common;

use common::{fresh_db, rows};
use quarry_core::quarry_common::Value;

fn chain(n: usize, term: impl Fn(usize) -> String, sep: &str) -> String {
    (0..n).map(term).collect::<Vec<_>>().join(sep)
}

#[test]
fn flat_chains_and_deep_nesting_work_or_are_refused() {
    let (dir, db) = fresh_db("deep");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE t (a INT); INSERT INTO t VALUES (1), (7), (3000); CREATE TABLE c (a INT) ENGINE=COLUMN; INSERT INTO c VALUES (1), (7), (3000)").unwrap();

    let sum = format!("SELECT {}", chain(1000, |_| "1".into(), "+"));
    assert_eq!(rows(&mut s, &sum), vec![vec![Value::Int(1000)]]);
    for t in ["t", "c"] {
        let ors = format!(
            "SELECT count(*) FROM {t} WHERE {}",
            chain(2000, |i| format!("a = {}", i * 3), " OR ")
        );
        assert_eq!(rows(&mut s, &ors), vec![vec![Value::Int(1)]], "{t}");
    }
    let unions = chain(1500, |i| format!("SELECT {i}"), " UNION ALL ");
    assert_eq!(rows(&mut s, &unions).len(), 1500);
    let parens = format!("SELECT {}1{}", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(rows(&mut s, &parens), vec![vec![Value::Int(1)]]);
    let subs = format!("SELECT {}1{}", "(SELECT ".repeat(300), ")".repeat(300));
    assert_eq!(rows(&mut s, &subs), vec![vec![Value::Int(1)]]);

    // Past the limits: a clear error, and the session goes on.
    for sql in [
        format!("SELECT {}", chain(100_000, |_| "1".into(), "+")),
        format!(
            "SELECT count(*) FROM t WHERE {}",
            chain(50_000, |i| format!("a = {i}"), " OR ")
        ),
        chain(5000, |_| "SELECT 1".into(), " UNION ALL "),
        format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000)),
    ] {
        let e = s.query(&sql).unwrap_err();
        assert_eq!(e.code, 1436, "{}", e.message);
    }
    let joins = format!("SELECT 1 FROM {}", chain(62, |i| format!("t t{i}"), ", "));
    assert_eq!(s.query(&joins).unwrap_err().code, 1116);
    // Prepared statements take the same path.
    let p = s.prepare(&sum).unwrap();
    assert!(s.execute(&p, vec![]).is_ok());
    drop(p);
    assert_eq!(rows(&mut s, "SELECT 1"), vec![vec![Value::Int(1)]]);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// A view cannot be defined through itself (MariaDB: 1146 for the name being defined),
/// and a cycle made behind the server's back (definition files edited) is refused at
/// use with 1462 instead of recursing without end.
#[test]
fn view_cycles_are_refused_at_create_and_at_use() {
    let (dir, db) = fresh_db("view-cycles");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE t (a INT); CREATE VIEW vs AS SELECT * FROM t; CREATE VIEW v1 AS SELECT * FROM t; CREATE VIEW v2 AS SELECT * FROM v1").unwrap();
    assert_eq!(
        s.query("CREATE OR REPLACE VIEW vs AS SELECT * FROM vs")
            .unwrap_err()
            .code,
        1146
    );
    assert_eq!(
        s.query("CREATE OR REPLACE VIEW v1 AS SELECT * FROM v2")
            .unwrap_err()
            .code,
        1146
    );
    assert!(rows(&mut s, "SELECT * FROM v2").is_empty());
    drop(s);
    drop(db);
    let v1 = dir.join("d/v1.qview");
    let text = std::fs::read_to_string(&v1)
        .unwrap()
        .replace("FROM t", "FROM v2");
    std::fs::write(&v1, text).unwrap();
    let db = quarry_core::Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE d").unwrap();
    let e = s.query("SELECT * FROM v2").unwrap_err();
    assert_eq!(e.code, 1462, "{}", e.message);
    assert_eq!(e.message, "`d`.`v2` contains view recursion");
    assert!(rows(&mut s, "SELECT * FROM vs").is_empty());
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
