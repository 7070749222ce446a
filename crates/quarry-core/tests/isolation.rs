//! The anomalies REPEATABLE READ must prevent, with concurrent sessions on both engines:
//! no dirty read, no non-repeatable read, no lost update under SELECT … FOR UPDATE.

mod common;

use common::{fresh_db, rows};
use quarry_core::quarry_common::Value;
use std::sync::Arc;
use std::time::Duration;

const ENGINES: [&str; 2] = ["InnoDB", "COLUMN"];

/// `d.<prefix>_<engine>` with one row (1, `v`).
fn table(s: &mut quarry_core::Session, prefix: &str, engine: &str, v: i64) -> String {
    let t = format!("d.{prefix}_{engine}");
    s.query(&format!(
        "CREATE TABLE {t} (id INT PRIMARY KEY, v INT) ENGINE={engine}; INSERT INTO {t} VALUES (1, {v})"
    ))
    .unwrap();
    t
}

fn v(s: &mut quarry_core::Session, table: &str) -> i64 {
    match &rows(s, &format!("SELECT v FROM {table} WHERE id = 1"))[0][0] {
        Value::Int(i) => *i,
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_dirty_read() {
    let (dir, db) = fresh_db("iso-dirty");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let t = table(&mut a, "dirty", engine, 10);
        a.query(&format!("BEGIN; UPDATE {t} SET v = 99 WHERE id = 1"))
            .unwrap();
        // Another session reads while the change is uncommitted, then it rolls back: the
        // reader never sees 99.
        let reader = {
            let db = Arc::clone(&db);
            let t = t.clone();
            std::thread::spawn(move || {
                let mut b = db.session("root", "localhost");
                v(&mut b, &t)
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(
            v(&mut a, &t),
            99,
            "{engine}: a transaction sees its own change"
        );
        a.query("ROLLBACK").unwrap();
        assert_eq!(reader.join().unwrap(), 10, "{engine}: dirty read");
        assert_eq!(v(&mut a, &t), 10);
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_non_repeatable_read() {
    let (dir, db) = fresh_db("iso-repeat");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let t = table(&mut a, "rep", engine, 10);
        a.query("START TRANSACTION").unwrap();
        let first = v(&mut a, &t);
        // Another session commits a change meanwhile.
        let writer = {
            let db = Arc::clone(&db);
            let t = t.clone();
            std::thread::spawn(move || {
                let mut b = db.session("root", "localhost");
                b.query(&format!("UPDATE {t} SET v = v + 1 WHERE id = 1"))
                    .unwrap();
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        let second = v(&mut a, &t);
        assert_eq!(first, second, "{engine}: non-repeatable read");
        a.query("COMMIT").unwrap();
        writer.join().unwrap();
        assert_eq!(
            v(&mut a, &t),
            11,
            "{engine}: the other change is there after"
        );
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn no_lost_update_under_select_for_update() {
    let (dir, db) = fresh_db("iso-lost");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let t = table(&mut a, "lost", engine, 0);
        // Read-modify-write in the client, as applications do: each reads the value
        // FOR UPDATE and writes back one more. No increment may be lost.
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let db = Arc::clone(&db);
                let t = t.clone();
                std::thread::spawn(move || {
                    let mut s = db.session("root", "localhost");
                    for _ in 0..50 {
                        s.query("BEGIN").unwrap();
                        let got = match &rows(
                            &mut s,
                            &format!("SELECT v FROM {t} WHERE id = 1 FOR UPDATE"),
                        )[0][0]
                        {
                            Value::Int(i) => *i,
                            other => panic!("{other:?}"),
                        };
                        s.query(&format!("UPDATE {t} SET v = {} WHERE id = 1", got + 1))
                            .unwrap();
                        s.query("COMMIT").unwrap();
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        assert_eq!(v(&mut a, &t), 200, "{engine}: lost update");
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
