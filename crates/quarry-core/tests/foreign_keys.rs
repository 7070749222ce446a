//! FOREIGN KEYs under concurrent transactions, on both engines: a child written while
//! another transaction deletes its parent (or inserts it) waits for that transaction
//! and then sees what it did, as InnoDB's locking checks do — no orphan is ever
//! committed, and no child is refused for a parent committed after the statement's
//! snapshot. Also: a cascade is undone with its statement and with its transaction.

mod common;

use common::{fresh_db, rows};
use quarry_core::quarry_common::Value;
use quarry_core::{Database, Session};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

const ENGINES: [&str; 2] = ["InnoDB", "COLUMN"];

fn tables(s: &mut Session, engine: &str) -> (String, String) {
    let (p, c) = (format!("d.p_{engine}"), format!("d.c_{engine}"));
    s.query(&format!(
        "CREATE TABLE {p} (id INT PRIMARY KEY) ENGINE={engine}; \
         CREATE TABLE {c} (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES {p} (id)) ENGINE={engine}; \
         INSERT INTO {p} VALUES (1), (2)"
    ))
    .unwrap();
    (p, c)
}

/// `sql` in a new session on another thread: its error code, 0 when it succeeded.
fn spawn(db: &Arc<Database>, sql: String) -> JoinHandle<u16> {
    let db = Arc::clone(db);
    std::thread::spawn(move || {
        let mut b = db.session("root", "localhost");
        match b.query(&sql) {
            Ok(_) => 0,
            Err(e) => e.code,
        }
    })
}

fn count(s: &mut Session, sql: &str) -> i64 {
    match &rows(s, sql)[0][0] {
        Value::Int(i) => *i,
        other => panic!("{other:?}"),
    }
}

#[test]
fn child_insert_waits_for_a_parent_delete() {
    let (dir, db) = fresh_db("fk-insert-delete");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let (p, c) = tables(&mut a, engine);
        a.query(&format!("BEGIN; DELETE FROM {p} WHERE id = 1"))
            .unwrap();
        let child = spawn(&db, format!("INSERT INTO {c} VALUES (10, 1)"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !child.is_finished(),
            "{engine}: the insert waits for the delete"
        );
        a.query("COMMIT").unwrap();
        assert_eq!(child.join().unwrap(), 1452, "{engine}: its parent is gone");
        assert_eq!(count(&mut a, &format!("SELECT COUNT(*) FROM {c}")), 0);
        // A delete rolled back leaves the parent: the waiting child goes in.
        a.query(&format!("BEGIN; DELETE FROM {p} WHERE id = 2"))
            .unwrap();
        let child = spawn(&db, format!("INSERT INTO {c} VALUES (20, 2)"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !child.is_finished(),
            "{engine}: the insert waits for the delete"
        );
        a.query("ROLLBACK").unwrap();
        assert_eq!(child.join().unwrap(), 0, "{engine}: its parent is back");
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn parent_delete_waits_for_a_child_insert() {
    let (dir, db) = fresh_db("fk-delete-insert");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let (p, c) = tables(&mut a, engine);
        a.query(&format!("BEGIN; INSERT INTO {c} VALUES (10, 2)"))
            .unwrap();
        let delete = spawn(&db, format!("DELETE FROM {p} WHERE id = 2"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !delete.is_finished(),
            "{engine}: the delete waits for the child"
        );
        a.query("COMMIT").unwrap();
        assert_eq!(
            delete.join().unwrap(),
            1451,
            "{engine}: the parent has a child"
        );
        assert_eq!(
            count(&mut a, &format!("SELECT COUNT(*) FROM {p} WHERE id = 2")),
            1
        );
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn child_insert_sees_a_parent_committed_meanwhile() {
    let (dir, db) = fresh_db("fk-new-parent");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let (p, c) = tables(&mut a, engine);
        // Uncommitted parent 5: the child waits, then finds it committed.
        a.query(&format!("BEGIN; INSERT INTO {p} VALUES (5)"))
            .unwrap();
        let child = spawn(&db, format!("INSERT INTO {c} VALUES (50, 5)"));
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            !child.is_finished(),
            "{engine}: the child waits for the parent"
        );
        a.query("COMMIT").unwrap();
        assert_eq!(
            child.join().unwrap(),
            0,
            "{engine}: the parent was committed"
        );
        // Uncommitted parent 6 rolled back: the child is refused.
        a.query(&format!("BEGIN; INSERT INTO {p} VALUES (6)"))
            .unwrap();
        let child = spawn(&db, format!("INSERT INTO {c} VALUES (60, 6)"));
        std::thread::sleep(Duration::from_millis(300));
        a.query("ROLLBACK").unwrap();
        assert_eq!(
            child.join().unwrap(),
            1452,
            "{engine}: the parent never was"
        );
        // A REPEATABLE READ transaction whose snapshot predates parent 7 still finds it.
        let mut r = db.session("root", "localhost");
        r.query(&format!("BEGIN; SELECT COUNT(*) FROM {p}"))
            .unwrap();
        a.query(&format!("INSERT INTO {p} VALUES (7)")).unwrap();
        r.query(&format!("INSERT INTO {c} VALUES (70, 7)")).unwrap();
        r.query("COMMIT").unwrap();
        assert_eq!(
            count(
                &mut a,
                &format!("SELECT COUNT(*) FROM {c} WHERE pid IN (5, 7)")
            ),
            2
        );
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn cascades_are_undone_with_their_statement_and_transaction() {
    let (dir, db) = fresh_db("fk-undo");
    let mut a = db.session("root", "localhost");
    a.query("CREATE DATABASE d").unwrap();
    for engine in ENGINES {
        let (p, c, g) = (
            format!("d.up_{engine}"),
            format!("d.uc_{engine}"),
            format!("d.ug_{engine}"),
        );
        a.query(&format!(
            "CREATE TABLE {p} (id INT PRIMARY KEY) ENGINE={engine}; \
             CREATE TABLE {c} (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES {p} (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE={engine}; \
             CREATE TABLE {g} (id INT PRIMARY KEY, cid INT, FOREIGN KEY (cid) REFERENCES {c} (id)) ENGINE={engine}; \
             INSERT INTO {p} VALUES (1), (2), (3); \
             INSERT INTO {c} VALUES (10, 1), (20, 2), (30, 3), (31, 3); \
             INSERT INTO {g} VALUES (100, 30)"
        ))
        .unwrap();
        let state = |a: &mut Session| {
            rows(a, &format!("SELECT id, pid FROM {c} ORDER BY id"))
                .into_iter()
                .map(|r| format!("{}:{}", r[0], r[1]))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let before = state(&mut a);
        // Deleting 1 cascades to 10; deleting 3 would cascade to 30, which 100 keeps
        // (RESTRICT): the whole statement fails and 10 is back.
        let e = a
            .query(&format!("DELETE FROM {p} WHERE id IN (1, 3)"))
            .unwrap_err();
        assert_eq!(e.code, 1451, "{engine}");
        assert_eq!(state(&mut a), before, "{engine}: the cascade was undone");
        assert_eq!(count(&mut a, &format!("SELECT COUNT(*) FROM {p}")), 3);
        // A transaction's cascades go with its rollback.
        a.query(&format!(
            "BEGIN; DELETE FROM {p} WHERE id = 1; UPDATE {p} SET id = 22 WHERE id = 2"
        ))
        .unwrap();
        assert_eq!(state(&mut a), "20:22 30:3 31:3", "{engine}");
        a.query("ROLLBACK").unwrap();
        assert_eq!(state(&mut a), before, "{engine}: rolled back");
    }
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
