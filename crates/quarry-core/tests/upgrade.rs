//! Datadirs written by earlier layouts open with everything in them. Each fixture under
//! `tests/fixtures/datadir-<layout>/` was written by the server of that layout (a clean
//! shutdown; docs/formats/datadir.md says what each layout changed) and is opened from a
//! copy, as an upgrade would.

mod common;

use common::rows;
use quarry_core::quarry_common::Value;
use quarry_core::Database;
use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn fixture(layout: u32) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../tests/fixtures/datadir-{layout}"));
    let to = std::env::temp_dir().join(format!("quarry-upgrade-{layout}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&to);
    copy_dir(&from, &to);
    to
}

/// Layout 1 kept the log in `wal/`, where it showed as a database (`DROP DATABASE wal`
/// deleted the live log); it moves to `#wal/` at the first open, and `wal` is then an
/// ordinary database name.
#[test]
fn layout_1_opens_and_its_log_moves_out_of_the_database_names() {
    let dir = fixture(1);
    let db = Database::open(&dir).unwrap();
    assert!(dir.join("#wal/control").exists());
    assert!(!dir.join("wal").exists());
    assert_eq!(db.catalog.open_problems(), Vec::<String>::new());
    let mut s = db.session("root", "localhost");
    let dbs: Vec<String> = rows(&mut s, "SHOW DATABASES")
        .iter()
        .map(|r| r[0].to_string())
        .collect();
    assert!(
        !dbs.iter().any(|d| d == "wal" || d.starts_with('#')),
        "{dbs:?}"
    );
    s.query("USE shop").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT id, name, price, made FROM items ORDER BY id"),
        rows(&mut s, "SELECT 1, 'tea', 2.50, CAST('2024-01-02 03:04:05' AS DATETIME) UNION ALL SELECT 2, 'coffee', 3.10, NULL")
    );
    assert_eq!(
        rows(&mut s, "SELECT name FROM items WHERE name = 'coffee'"),
        vec![vec![Value::Str("coffee".into())]]
    );
    assert_eq!(
        rows(&mut s, "SELECT name FROM cheap"),
        vec![vec![Value::Str("tea".into())]]
    );
    let facts = rows(&mut s, "SELECT count(*), sum(amount) FROM facts");
    assert_eq!(
        facts[0].iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        ["503", "364524"]
    );
    assert_eq!(
        rows(&mut s, "SELECT a, b FROM fixed ORDER BY a"),
        vec![
            vec![Value::Int(1), Value::Str("x".into())],
            vec![Value::Int(2), Value::Null]
        ]
    );
    for t in ["items", "facts", "fixed"] {
        let check = rows(&mut s, &format!("CHECK TABLE {t}"));
        assert_eq!(
            check.last().unwrap()[3],
            Value::Str("OK".into()),
            "{t}: {check:?}"
        );
    }
    s.query("INSERT INTO items (name, price) VALUES ('scone', 1.25); CREATE DATABASE wal; CREATE TABLE wal.t (a INT); INSERT INTO wal.t VALUES (42)").unwrap();
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    assert_eq!(
        rows(&mut s, "SELECT a FROM wal.t"),
        vec![vec![Value::Int(42)]]
    );
    assert_eq!(
        rows(&mut s, "SELECT id FROM shop.items WHERE name = 'scone'"),
        vec![vec![Value::Int(3)]]
    );
    s.query("DROP DATABASE wal").unwrap();
    assert_eq!(
        rows(&mut s, "SELECT count(*) FROM shop.items"),
        vec![vec![Value::Int(3)]]
    );
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
