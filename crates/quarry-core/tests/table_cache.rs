//! More tables than may stay open: tables open at first use and the least recently used
//! idle ones close past `table_open_cache`, so descriptors stay bounded (sql-bench's
//! 10 000-table `create` test ran out of them at about 9 995), while a table in use — by a
//! statement, a prepared plan or an open transaction — is never closed under it.

mod common;

use common::{fresh_db, rows};
use quarry_core::quarry_common::Value;
use quarry_core::Database;

fn one(s: &mut quarry_core::Session, sql: &str) -> String {
    rows(s, sql)[0][0].to_string()
}

#[test]
fn many_tables_stay_within_the_open_table_cache() {
    let (dir, db) = fresh_db("table-cache");
    db.set_global("table_open_cache", Value::Int(20));
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d").unwrap();
    let n = 300;
    for i in 0..n {
        let engine = if i % 5 == 0 { "COLUMN" } else { "InnoDB" };
        s.query(&format!(
            "CREATE TABLE t{i} (id INT AUTO_INCREMENT PRIMARY KEY, v INT, KEY (v)) ENGINE={engine}; INSERT INTO t{i} (v) VALUES ({i}), ({i} + 1)"
        ))
        .unwrap();
        assert!(
            db.catalog.open_tables() <= 21,
            "{} open",
            db.catalog.open_tables()
        );
    }
    // CREATE TABLE alone (sql-bench's create test) keeps the count bounded too.
    for i in 0..100 {
        s.query(&format!(
            "CREATE TABLE c{i} (i INT PRIMARY KEY, s CHAR(10), KEY (s))"
        ))
        .unwrap();
        assert!(
            db.catalog.open_tables() <= 21,
            "{} open",
            db.catalog.open_tables()
        );
    }
    // A transaction's table stays open (and its rows its own) while others come and go.
    let mut tx = db.session("root", "localhost");
    tx.query("USE d; BEGIN; INSERT INTO t7 (v) VALUES (-1)")
        .unwrap();
    let held = tx.prepare("SELECT count(*) FROM t8").unwrap();
    for i in 0..n {
        assert_eq!(
            one(&mut s, &format!("SELECT sum(v) FROM t{i}")),
            (2 * i + 1).to_string()
        );
    }
    assert!(
        db.catalog.open_tables() <= 23,
        "{} open",
        db.catalog.open_tables()
    );
    assert_eq!(one(&mut tx, "SELECT count(*) FROM t7"), "3");
    assert_eq!(tx.execute(&held, vec![]).map(|_| ()), Ok(()));
    tx.query("ROLLBACK").unwrap();
    assert_eq!(one(&mut s, "SELECT count(*) FROM t7"), "2");
    // Auto-increment goes on after the largest id whether the table was closed or not.
    for i in [0, 1, 150, 299] {
        s.query(&format!("INSERT INTO t{i} (v) VALUES (0)"))
            .unwrap();
        assert_eq!(
            one(&mut s, &format!("SELECT max(id) FROM t{i}")),
            "3",
            "t{i}"
        );
    }
    drop(tx);
    drop(s);
    drop(db);
    // A restart opens no table until it is used.
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.catalog.open_tables(), 0);
    let mut s = db.session("root", "localhost");
    s.query("USE d; INSERT INTO t5 (v) VALUES (9)").unwrap();
    assert_eq!(one(&mut s, "SELECT max(id) FROM t5"), "3");
    assert_eq!(db.catalog.open_tables(), 1);
    let check = rows(&mut s, "CHECK TABLE t299");
    assert_eq!(check.last().unwrap()[3], Value::Str("OK".into()));
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
