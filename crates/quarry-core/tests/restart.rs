//! Data survives a clean restart; a second process cannot open the same datadir;
//! a rolled-back transaction leaves nothing behind after restart.

mod common;

use common::{fresh_db, rows};
use quarry_core::quarry_common::Value;
use quarry_core::Database;

#[test]
fn data_survives_restart_and_datadir_is_locked() {
    let dir = std::env::temp_dir().join(format!("quarry-restart-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    {
        let db = Database::open(&dir).unwrap();
        let err = Database::open(&dir).err().expect("second open must fail");
        assert!(err.message.contains("in use"), "{}", err.message);
        let mut s = db.session("root", "localhost");
        s.query("CREATE DATABASE d; USE d; CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(100), k INT, KEY (k)) ROW_FORMAT=DYNAMIC").unwrap();
        for i in 0..500 {
            s.query(&format!(
                "INSERT INTO t (v, k) VALUES ('{}', {})",
                "x".repeat(i % 90),
                i % 10
            ))
            .unwrap();
        }
        s.query("DELETE FROM t WHERE id % 3 = 0").unwrap();
        s.query("UPDATE t SET v = 'changed' WHERE id = 2").unwrap();
        s.query("BEGIN; INSERT INTO t (v, k) VALUES ('uncommitted', 1); DELETE FROM t WHERE id = 1; ROLLBACK").unwrap();
    }
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE d").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t"),
        vec![vec![Value::Int(334)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT v FROM t WHERE id = 2"),
        vec![vec![Value::Str("changed".into())]]
    );
    assert_eq!(
        rows(
            &mut s,
            "SELECT count(*) FROM t WHERE v = 'uncommitted' OR id = 1"
        ),
        vec![vec![Value::Int(1)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t WHERE k = 3"),
        rows(&mut s, "SELECT count(*) FROM t WHERE k + 0 = 3")
    );
    s.query("INSERT INTO t (v) VALUES ('after')").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT id FROM t WHERE v = 'after'"),
        vec![vec![Value::Int(501)]]
    );
    let check = rows(&mut s, "CHECK TABLE t");
    assert_eq!(check.last().unwrap()[3], Value::Str("OK".into()));
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_transactions_are_serialized() {
    let (dir, db) = fresh_db("conc");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE acct (id INT PRIMARY KEY, bal INT)")
        .unwrap();
    s.query("INSERT INTO acct VALUES (1, 1000), (2, 1000)")
        .unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut s = db.session("root", "localhost");
                s.query("USE d").unwrap();
                for _ in 0..50 {
                    s.query("BEGIN").unwrap();
                    s.query("UPDATE acct SET bal = bal - 1 WHERE id = 1")
                        .unwrap();
                    s.query("UPDATE acct SET bal = bal + 1 WHERE id = 2")
                        .unwrap();
                    s.query("COMMIT").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(
        rows(&mut s, "SELECT bal FROM acct ORDER BY id"),
        vec![vec![Value::Int(800)], vec![Value::Int(1200)]]
    );
    drop(s);
    drop(db);
    std::fs::remove_dir_all(&dir).unwrap();
}
