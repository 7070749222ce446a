//! LOCK TABLES and FLUSH TABLES WITH READ LOCK across sessions (issue 18, item 12; they
//! were accepted and ignored): a READ lock lets others read and makes their writes
//! wait, a WRITE lock makes their reads wait too, the global read lock makes every
//! other writer wait and waits itself for the writes running when it is taken; waits end
//! with 1205 after `lock_wait_timeout`; a session's end gives its locks up. The
//! holder's own errors (1099, 1100, 1223, 1192) are in tests/slt/lock_tables.slt.

mod common;

use common::{fresh_db, rows};
use quarry_core::{Database, Session};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// `sql` in a new session on another thread: its error code (0: it succeeded).
fn spawn(db: &Arc<Database>, sql: &str) -> JoinHandle<u16> {
    let (db, sql) = (Arc::clone(db), sql.to_string());
    std::thread::spawn(move || {
        let mut b = db.session("root", "localhost");
        match b.query(&sql) {
            Ok(_) => 0,
            Err(e) => e.code,
        }
    })
}

fn waits<T>(h: &JoinHandle<T>) -> bool {
    std::thread::sleep(Duration::from_millis(300));
    !h.is_finished()
}

fn count(s: &mut Session, sql: &str) -> String {
    rows(s, sql)[0][0].to_string()
}

fn setup(name: &str) -> (std::path::PathBuf, Arc<Database>, Session) {
    let (dir, db) = fresh_db(name);
    let mut a = db.session("root", "localhost");
    a.query(
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT PRIMARY KEY, v INT); \
         CREATE TABLE u (id INT PRIMARY KEY); INSERT INTO t VALUES (1, 0), (2, 0)",
    )
    .unwrap();
    (dir, db, a)
}

#[test]
fn read_and_write_locks_make_others_wait() {
    let (dir, db, mut a) = setup("tl-rw");
    a.query("LOCK TABLES t READ").unwrap();
    assert_eq!(spawn(&db, "SELECT COUNT(*) FROM d.t").join().unwrap(), 0);
    let w = spawn(&db, "INSERT INTO d.t VALUES (3, 0)");
    assert!(waits(&w), "a write waits for the READ lock");
    assert_eq!(count(&mut a, "SELECT COUNT(*) FROM t"), "2");
    a.query("UNLOCK TABLES").unwrap();
    assert_eq!(w.join().unwrap(), 0);

    a.query("LOCK TABLES t WRITE").unwrap();
    let r = spawn(&db, "SELECT COUNT(*) FROM d.t");
    assert!(waits(&r), "a read waits for the WRITE lock");
    // Another table is not locked.
    assert_eq!(spawn(&db, "INSERT INTO d.u VALUES (1)").join().unwrap(), 0);
    a.query("INSERT INTO t VALUES (4, 0)").unwrap();
    a.query("UNLOCK TABLES").unwrap();
    assert_eq!(r.join().unwrap(), 0);

    // LOCK TABLES WRITE waits for another session's READ lock.
    let mut b = db.session("root", "localhost");
    b.query("LOCK TABLES d.t READ").unwrap();
    let l = spawn(&db, "LOCK TABLES d.t WRITE");
    assert!(waits(&l));
    drop(b);
    assert_eq!(l.join().unwrap(), 0, "a session's end gives up its locks");
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn waits_end_after_lock_wait_timeout() {
    let (dir, db, mut a) = setup("tl-timeout");
    a.query("LOCK TABLES t READ").unwrap();
    let start = Instant::now();
    let w = spawn(
        &db,
        "SET lock_wait_timeout = 1; INSERT INTO d.t VALUES (3, 0)",
    );
    assert_eq!(w.join().unwrap(), 1205);
    assert!(start.elapsed() >= Duration::from_millis(900));
    a.query("UNLOCK TABLES").unwrap();
    assert_eq!(count(&mut a, "SELECT COUNT(*) FROM t"), "2");
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn global_read_lock_stops_every_writer() {
    let (dir, db, mut a) = setup("tl-global");
    a.query("FLUSH TABLES WITH READ LOCK").unwrap();
    assert_eq!(spawn(&db, "SELECT COUNT(*) FROM d.t").join().unwrap(), 0);
    let w = spawn(&db, "INSERT INTO d.u VALUES (7)");
    let ddl = spawn(&db, "CREATE TABLE d.n (a INT)");
    assert!(waits(&w), "writes wait for the global read lock");
    assert!(!ddl.is_finished(), "DDL waits too");
    assert_eq!(a.query("INSERT INTO u VALUES (8)").unwrap_err().code, 1223);
    a.query("UNLOCK TABLES").unwrap();
    assert_eq!(w.join().unwrap(), 0);
    assert_eq!(ddl.join().unwrap(), 0);
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn global_read_lock_waits_for_running_writes() {
    let (dir, db, a) = setup("tl-running");
    // b holds a row lock; c's UPDATE of that row is a write running (waiting) when the
    // read lock is asked for, which must wait for it to end.
    let mut b = db.session("root", "localhost");
    b.query("USE d; BEGIN; UPDATE t SET v = 1 WHERE id = 1")
        .unwrap();
    let c = spawn(&db, "UPDATE d.t SET v = 2 WHERE id = 1");
    std::thread::sleep(Duration::from_millis(300));
    let flush = {
        let db = Arc::clone(&db);
        std::thread::spawn(move || {
            let mut s = db.session("root", "localhost");
            s.query("FLUSH TABLES WITH READ LOCK").unwrap();
            let v = count(&mut s, "SELECT v FROM d.t WHERE id = 1");
            s.query("UNLOCK TABLES").unwrap();
            v
        })
    };
    assert!(waits(&flush), "the read lock waits for the running UPDATE");
    b.query("COMMIT").unwrap();
    assert_eq!(c.join().unwrap(), 0);
    assert_eq!(flush.join().unwrap(), "2", "it read after the UPDATE ended");
    drop(b);
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn lock_tables_commits_the_open_transaction() {
    let (dir, db, mut a) = setup("tl-commit");
    a.query("BEGIN; INSERT INTO t VALUES (5, 0); LOCK TABLES t READ; ROLLBACK")
        .unwrap();
    a.query("UNLOCK TABLES").unwrap();
    assert_eq!(count(&mut a, "SELECT COUNT(*) FROM t"), "3");
    drop(a);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
