//! Data survives a clean restart; a second process cannot open the same datadir;
//! a rolled-back transaction leaves nothing behind after restart.

mod common;

use common::{check_tables, fresh_db, lines, reopen, rows};
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

/// A table rebuild's switch (old table aside, new one in, old one dropped) interrupted
/// after any number of steps is finished when the datadir is opened again: the table
/// has its new definition and rows, and no temporary table is left. A rebuild that never
/// reached its switch leaves the old table and no temporary one.
#[test]
fn an_interrupted_ddl_switch_is_finished_at_the_next_open() {
    use quarry_catalog::DdlStep;
    for (engine, stop) in [
        ("InnoDB", 0),
        ("InnoDB", 1),
        ("InnoDB", 2),
        ("COLUMN", 1),
        ("COLUMN", 2),
    ] {
        let dir = std::env::temp_dir().join(format!(
            "quarry-ddl-switch-{}-{engine}-{stop}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let db = Database::open(&dir).unwrap();
            let mut s = db.session("root", "localhost");
            s.query(&format!(
                "CREATE DATABASE d; USE d; CREATE TABLE t (a INT) ENGINE={engine}; \
                 INSERT INTO t VALUES (1), (2); \
                 CREATE TABLE `#sql-alter-1-1` (a INT, b INT DEFAULT 7) ENGINE={engine}; \
                 INSERT INTO `#sql-alter-1-1` (a) VALUES (1), (2), (3); \
                 CREATE TABLE `#sql-alter-2-2` (z INT) ENGINE={engine}"
            ))
            .unwrap();
            let step = |from: &str, to: &str| DdlStep::Rename {
                db: "d".into(),
                from: from.into(),
                to_db: "d".into(),
                to: to.into(),
            };
            db.catalog
                .apply_ddl_until(
                    &[
                        step("t", "#sql-old-1-1"),
                        step("#sql-alter-1-1", "t"),
                        DdlStep::Drop {
                            db: "d".into(),
                            name: "#sql-old-1-1".into(),
                        },
                    ],
                    stop,
                )
                .unwrap();
        }
        let db = Database::open(&dir).unwrap();
        let mut s = db.session("root", "localhost");
        s.query("USE d").unwrap();
        assert_eq!(
            rows(&mut s, "SELECT a, b FROM t ORDER BY a"),
            vec![
                vec![Value::Int(1), Value::Int(7)],
                vec![Value::Int(2), Value::Int(7)],
                vec![Value::Int(3), Value::Int(7)],
            ],
            "{engine} stopped after {stop} steps"
        );
        assert_eq!(
            rows(&mut s, "SHOW TABLES"),
            vec![vec![Value::Str("t".into())]],
            "{engine} stopped after {stop} steps"
        );
        drop(s);
        drop(db);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Every commit with changes writes one COMMIT record; with
/// innodb_flush_log_at_trx_commit=1 each is fsynced, with 2 they are not (the log thread
/// fsyncs once a second); reads log nothing.
#[test]
fn commits_are_logged_and_the_flush_policy_decides_the_fsyncs() {
    let (dir, db) = fresh_db("log-status");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE t (a INT)")
        .unwrap();
    let commits = |s: &mut quarry_core::Session| common::status(s, "Quarry_log_commits");
    let fsyncs = |s: &mut quarry_core::Session| common::status(s, "Innodb_os_log_fsyncs");
    let (c0, f0) = (commits(&mut s), fsyncs(&mut s));
    for i in 0..20 {
        s.query(&format!("INSERT INTO t VALUES ({i})")).unwrap();
    }
    assert_eq!(commits(&mut s) - c0, 20);
    assert!(fsyncs(&mut s) - f0 >= 20);
    let c1 = commits(&mut s);
    rows(&mut s, "SELECT count(*) FROM t");
    s.query("BEGIN; SELECT * FROM t; COMMIT").unwrap();
    assert_eq!(commits(&mut s), c1, "reads log nothing");
    s.query("SET GLOBAL innodb_flush_log_at_trx_commit = 2")
        .unwrap();
    let f1 = fsyncs(&mut s);
    for i in 0..50 {
        s.query(&format!("INSERT INTO t VALUES ({i})")).unwrap();
    }
    assert_eq!(commits(&mut s) - c1, 50);
    assert!(
        fsyncs(&mut s) - f1 < 10,
        "policy 2 fsyncs once a second, not per commit"
    );
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// A table whose index file is damaged beyond opening does not keep the datadir from
/// opening: the other tables serve, the damaged one answers with the error (never with
/// data), CHECK TABLE reports it, and DROP TABLE removes it.
#[test]
fn a_table_that_cannot_open_is_reported_not_fatal() {
    use std::os::unix::fs::FileExt;
    let (dir, db) = fresh_db("unopenable");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE good (a INT); INSERT INTO good VALUES (1); CREATE TABLE bad (a INT PRIMARY KEY); INSERT INTO bad VALUES (1), (2)").unwrap();
    drop(s);
    drop(db);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(dir.join("d").join("bad.i0.qix"))
        .unwrap();
    f.write_all_at(&[0xAB; 64], 100).unwrap();
    drop(f);
    // Tables open at their first use: the damage shows there, not at startup.
    let db = quarry_core::Database::open(&dir).unwrap();
    assert_eq!(db.catalog.open_tables(), 0);
    let mut s = db.session("root", "localhost");
    s.query("USE d").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT a FROM good"),
        vec![vec![Value::Int(1)]]
    );
    let e = s.query("SELECT * FROM bad").unwrap_err();
    assert_eq!(e.code, 1034, "{}", e.message);
    assert!(s.query("INSERT INTO bad VALUES (3)").is_err());
    let check = rows(&mut s, "CHECK TABLE bad");
    assert_ne!(
        check.last().unwrap()[3],
        Value::Str("OK".into()),
        "{check:?}"
    );
    s.query("DROP TABLE bad; CREATE TABLE bad (a INT PRIMARY KEY); INSERT INTO bad VALUES (5)")
        .unwrap();
    assert_eq!(rows(&mut s, "SELECT a FROM bad"), vec![vec![Value::Int(5)]]);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// A prefix key and a DESC key are written to the definition file in a form its reader
/// parses (a prefix key used to make every later start fail with 1072), and one damaged
/// definition file keeps only its own name offline: listed, answering 1033 (as MariaDB
/// does for a damaged .frm), droppable, and the rest of the datadir serves.
#[test]
fn odd_keys_restart_and_a_damaged_definition_keeps_only_itself_offline() {
    let (dir, db) = fresh_db("damaged-def");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE p; USE p; CREATE TABLE t (id INT PRIMARY KEY, pad VARCHAR(200), k INT, KEY (pad(20)), KEY kd (k DESC, pad(3))); INSERT INTO t VALUES (1, 'abcdefghijklmnopqrstuvwxyz', 7), (2, 'abcdefghijklmnopqrstuvwxyZ-2', 8); CREATE TABLE broken (a INT); INSERT INTO broken VALUES (1); CREATE VIEW v AS SELECT id FROM t; CREATE VIEW vbroken AS SELECT a FROM broken").unwrap();
    let before = rows(&mut s, "SHOW CREATE TABLE t");
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.catalog.open_problems(), Vec::<String>::new());
    let mut s = db.session("root", "localhost");
    s.query("USE p").unwrap();
    assert_eq!(rows(&mut s, "SHOW CREATE TABLE t"), before);
    assert_eq!(
        rows(
            &mut s,
            "SELECT id FROM t WHERE pad = 'abcdefghijklmnopqrstuvwxyZ-2'"
        ),
        vec![vec![Value::Int(2)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT k FROM t ORDER BY k DESC"),
        vec![vec![Value::Int(8)], vec![Value::Int(7)]]
    );
    drop(s);
    drop(db);
    std::fs::write(dir.join("p/broken.qdef"), "QUARRY-TABLE-DEF 1\nrow_format=DYNAMIC\nCREATE TABLE `broken` (`a` int(11) DEFAULT NULL, KEY (`nope`))\n").unwrap();
    std::fs::write(dir.join("p/vbroken.qview"), b"\xff\xfe garbage").unwrap();
    let db = Database::open(&dir).unwrap();
    assert_eq!(
        db.catalog.open_problems().len(),
        2,
        "{:?}",
        db.catalog.open_problems()
    );
    let mut s = db.session("root", "localhost");
    s.query("USE p").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM t"),
        vec![vec![Value::Int(2)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM v"),
        vec![vec![Value::Int(2)]]
    );
    let e = s.query("SELECT * FROM broken").unwrap_err();
    assert_eq!(e.code, 1033, "{}", e.message);
    assert!(e.message.contains("'./p/broken.qdef'"), "{}", e.message);
    assert_eq!(s.query("SELECT * FROM vbroken").unwrap_err().code, 1033);
    let listed: Vec<String> = rows(&mut s, "SHOW TABLES")
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    assert_eq!(listed, ["broken", "t", "v", "vbroken"]);
    assert_eq!(
        s.query("CREATE TABLE broken (b INT)").unwrap_err().code,
        1050
    );
    // DROP VIEW does not drop a table's definition.
    assert_eq!(s.query("DROP VIEW broken").unwrap_err().code, 4092);
    s.query("DROP TABLE broken; DROP VIEW vbroken").unwrap();
    assert!(!dir.join("p/broken.qrd").exists());
    s.query("CREATE TABLE broken (b INT); INSERT INTO broken VALUES (9)")
        .unwrap();
    assert_eq!(
        rows(&mut s, "SELECT b FROM broken"),
        vec![vec![Value::Int(9)]]
    );
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// TIME values keep their sign, hours past 24 and fractions through a restart in every
/// table kind, and an index on them orders and finds them (every TIME used to be stored
/// as 0000-01-01 00:00:00).
#[test]
fn time_values_survive_restart_in_every_table_kind() {
    let (dir, db) = fresh_db("time-restart");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d").unwrap();
    let kinds = [
        ("dyn", "ENGINE=InnoDB"),
        ("fix", "ENGINE=MyISAM ROW_FORMAT=FIXED"),
        ("col", "ENGINE=COLUMN"),
    ];
    for (t, opts) in kinds {
        s.query(&format!(
            "CREATE TABLE {t} (id INT PRIMARY KEY, a TIME(3), KEY (a)) {opts}; \
             INSERT INTO {t} VALUES (1, '-838:59:59.999'), (2, '838:59:59.999'), \
             (3, '-00:00:00.5'), (4, '1 02:03:04.125'), (5, NULL), (6, '00:00:00')"
        ))
        .unwrap();
    }
    drop(s);
    drop(db);
    let mut s = reopen(&dir, "d");
    for (t, _) in kinds {
        assert_eq!(
            lines(&mut s, &format!("SELECT id, a FROM {t} ORDER BY a, id")),
            [
                "5 NULL",
                "1 -838:59:59.999",
                "3 -00:00:00.5",
                "6 00:00:00",
                "4 26:03:04.125",
                "2 838:59:59.999"
            ],
            "{t}"
        );
        assert_eq!(
            lines(
                &mut s,
                &format!(
                    "SELECT id FROM {t} WHERE a = '-0:0:0.5' OR a > '26:03:04.124' ORDER BY id"
                )
            ),
            ["2", "3", "4"],
            "{t}"
        );
        check_tables(&mut s, &[t]);
    }
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// TEXT and BLOB sizes are part of the definition file (LONGTEXT used to come back as
/// TEXT, 64 KiB), and values past 64 KiB come back whole from every table kind.
#[test]
fn text_and_blob_sizes_and_long_values_survive_restart() {
    let (dir, db) = fresh_db("lob-restart");
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d").unwrap();
    let kinds = ["ENGINE=InnoDB", "ENGINE=MyISAM", "ENGINE=COLUMN"];
    for (i, opts) in kinds.iter().enumerate() {
        s.query(&format!(
            "CREATE TABLE t{i} (id INT PRIMARY KEY, a TINYTEXT, c MEDIUMTEXT, d LONGTEXT, \
             e TINYBLOB, h LONGBLOB) {opts}; \
             INSERT INTO t{i} VALUES (1, 'tiny', REPEAT('c', 70000), REPEAT('d', 300000), \
             'b', REPEAT('h', 200000))"
        ))
        .unwrap();
    }
    drop(s);
    drop(db);
    let mut s = reopen(&dir, "d");
    for i in 0..kinds.len() {
        let types: Vec<Value> = rows(&mut s, &format!("SHOW COLUMNS FROM t{i}"))
            .into_iter()
            .map(|r| r[1].clone())
            .collect();
        let want = [
            "int(11)",
            "tinytext",
            "mediumtext",
            "longtext",
            "tinyblob",
            "longblob",
        ];
        assert_eq!(types, want.map(|t| Value::Str(t.into())).to_vec(), "t{i}");
        assert_eq!(
            rows(
                &mut s,
                &format!("SELECT LENGTH(c), LENGTH(d), LENGTH(h) FROM t{i}")
            ),
            vec![vec![
                Value::Int(70000),
                Value::Int(300000),
                Value::Int(200000)
            ]],
            "t{i}"
        );
        // The sizes hold after the restart too.
        assert_eq!(
            s.query(&format!(
                "INSERT INTO t{i} (id, a) VALUES (2, REPEAT('x', 256))"
            ))
            .unwrap_err()
            .code,
            1406
        );
    }
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}
