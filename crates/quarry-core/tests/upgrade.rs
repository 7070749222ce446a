//! Datadirs written by earlier layouts open with everything in them. Each fixture under
//! `tests/fixtures/datadir-<layout>/` was written by the server of that layout (a clean
//! shutdown; docs/formats/datadir.md says what each layout changed) and is opened from a
//! copy, as an upgrade would.

mod common;

use common::{check_tables, rows, texts};
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
    check_tables(&mut s, &["items", "facts", "fixed"]);
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

/// Layout 2 wrote table definitions of version 1, which kept every DECIMAL in the narrow
/// (38-digit) cells and keys: its DECIMAL(p > 38) columns open as DECIMAL(38,s) with every
/// value, key and column chunk as written, and `ALTER TABLE … MODIFY` widens them to hold
/// 65 digits.
#[test]
fn layout_2_opens_and_its_wide_decimals_read_as_written() {
    let dir = fixture(2);
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.catalog.open_problems(), Vec::<String>::new());
    let mut s = db.session("root", "localhost");
    s.query("USE money").unwrap();
    assert_eq!(
        texts(&mut s, "SELECT id, amount, note FROM wide ORDER BY amount"),
        [
            ["3", "NULL", "none"],
            ["2", "-1.50", "neg"],
            ["4", "0.01", "cent"],
            ["1", "12345678901234567890123456789012345.67", "big"]
        ]
    );
    assert_eq!(
        texts(
            &mut s,
            "SELECT id FROM wide WHERE amount = 12345678901234567890123456789012345.67"
        ),
        [["1"]]
    );
    assert_eq!(
        texts(&mut s, "SELECT k, v FROM wfixed ORDER BY k DESC"),
        [
            ["99999999999999999999999999999999999999", "1"],
            ["7", "3"],
            ["-5", "2"]
        ]
    );
    assert_eq!(
        texts(&mut s, "SELECT id, x FROM wcol ORDER BY x"),
        [
            ["3", "NULL"],
            ["5", "-99999999999999999999999999999999999.999"],
            ["2", "-0.500"],
            ["4", "123456789.125"],
            ["1", "12345678901234567890123456789012345.678"]
        ]
    );
    assert_eq!(
        texts(&mut s, "SELECT p FROM narrow WHERE p > 0"),
        [["2.50"]]
    );
    let col_type = |s: &mut quarry_core::Session, t: &str, c: &str| {
        texts(s, &format!("SHOW COLUMNS FROM {t} LIKE '{c}'"))[0][1].clone()
    };
    assert_eq!(col_type(&mut s, "wide", "amount"), "decimal(38,2)");
    assert_eq!(col_type(&mut s, "wfixed", "k"), "decimal(38,0)");
    // Version 1 took DECIMAL(5,6), which is now 1427: it opens as DECIMAL(6,6), what
    // its cells hold, instead of keeping the table offline.
    assert_eq!(col_type(&mut s, "odd", "d"), "decimal(6,6)");
    assert_eq!(
        texts(&mut s, "SELECT id, d FROM odd WHERE d > -1 ORDER BY d"),
        [["2", "-0.500000"], ["1", "0.123456"]]
    );
    check_tables(&mut s, &["wide", "wfixed", "wcol", "narrow", "odd"]);
    let big = format!("{}.25", "9".repeat(45));
    assert_eq!(
        s.query(&format!("INSERT INTO wide VALUES (5, {big}, 'x')"))
            .unwrap_err()
            .code,
        1264
    );
    s.query("ALTER TABLE wide MODIFY amount DECIMAL(50,2)")
        .unwrap();
    s.query("ALTER TABLE wfixed MODIFY k DECIMAL(45,0)")
        .unwrap();
    s.query("ALTER TABLE wcol MODIFY x DECIMAL(65,3)").unwrap();
    s.query(&format!("INSERT INTO wide VALUES (5, {big}, 'wide')"))
        .unwrap();
    s.query(&format!(
        "INSERT INTO wfixed VALUES ({}, 4)",
        "9".repeat(45)
    ))
    .unwrap();
    s.query(&format!("INSERT INTO wcol VALUES (6, -{big})"))
        .unwrap();
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE money").unwrap();
    assert_eq!(col_type(&mut s, "wide", "amount"), "decimal(50,2)");
    assert_eq!(
        texts(&mut s, &format!("SELECT id FROM wide WHERE amount = {big}")),
        [["5"]]
    );
    assert_eq!(
        texts(&mut s, "SELECT count(*) FROM wide WHERE amount > 0"),
        [["3"]]
    );
    assert_eq!(
        texts(&mut s, "SELECT v FROM wfixed ORDER BY k DESC LIMIT 2"),
        [["4"], ["1"]]
    );
    assert_eq!(
        texts(&mut s, "SELECT id, x FROM wcol ORDER BY x LIMIT 2"),
        [
            ["3", "NULL"],
            ["6", &format!("-{}50", &big[..big.len() - 1])]
        ]
    );
    check_tables(&mut s, &["wide", "wfixed", "wcol"]);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// Layout 3's account file (version 1: user, host, hash) opens with its accounts (the
/// first start rewrites it as version 3); account attributes (ACCOUNT LOCK,
/// MAX_USER_CONNECTIONS) set then survive a reopen. The fixture was written by c33bd3a's `quarry sql`.
#[test]
fn layout_3_accounts_open_and_gain_attributes() {
    let dir = fixture(3);
    let db = Database::open(&dir).unwrap();
    let app = db.accounts.find("app", "10.1.2.3").expect("app@%");
    assert_eq!(
        app.hash2,
        quarry_core::accounts::password_hash2("pw"),
        "the password is kept"
    );
    assert!(!app.locked && app.max_user_connections == 0);
    assert!(db
        .accounts
        .find("ro", "127.0.0.1")
        .unwrap()
        .hash2
        .is_empty());
    let mut s = db.session("root", "localhost");
    assert_eq!(
        texts(&mut s, "SELECT id, name, price FROM shop.items ORDER BY id"),
        [["1", "tea", "2.50"], ["2", "cake", "4.00"]]
    );
    s.query("ALTER USER 'app'@'%' WITH MAX_USER_CONNECTIONS 2 ACCOUNT LOCK")
        .unwrap();
    check_tables(&mut s, &["shop.items"]);
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let app = db.accounts.find("app", "10.1.2.3").unwrap();
    assert!(app.locked);
    assert_eq!(app.max_user_connections, 2);
    assert_eq!(app.hash2, quarry_core::accounts::password_hash2("pw"));
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// Layout 4's account file (version 2: attributes, no privileges) opens with its accounts
/// and their attributes; root keeps every privilege, and other accounts — which could do
/// everything, their GRANTs accepted and ignored — start with none (the server says so
/// at startup). The file is rewritten as version 3 at that first start. Its view (file
/// version 1) reads as made by root. The fixture was written by 01991fe's `quarry sql`,
/// including `GRANT SELECT ON shop.* TO 'app'@'%'`.
#[test]
fn layout_4_accounts_open_and_only_root_keeps_every_privilege() {
    let dir = fixture(4);
    let db = Database::open(&dir).unwrap();
    let app = db.accounts.find("app", "10.1.2.3").expect("app@%");
    assert_eq!(app.hash2, quarry_core::accounts::password_hash2("pw"));
    assert_eq!(app.max_user_connections, 2);
    assert_eq!(app.privs, 0);
    assert!(db.accounts.find("ro", "localhost").unwrap().locked);
    assert!(
        db.accounts.notes.iter().any(|n| n.contains("'app'@'%'")),
        "{:?}",
        db.accounts.notes
    );
    let text = std::fs::read_to_string(dir.join("accounts.qacct")).unwrap();
    assert!(text.starts_with("# quarry accounts v3"), "{text}");
    let mut app = db.session("app", "10.1.2.3");
    assert_eq!(
        app.query("SELECT name FROM shop.items").unwrap_err().code,
        1142
    );
    let mut s = db.session("root", "localhost");
    assert_eq!(
        texts(&mut s, "SELECT id, name, price FROM shop.items ORDER BY id"),
        [["1", "tea", "2.50"], ["2", "cake", "4.00"]]
    );
    s.query("GRANT SELECT ON shop.* TO 'app'@'%'").unwrap();
    assert_eq!(texts(&mut app, "SELECT COUNT(*) FROM shop.items"), [["2"]]);
    // A view of version 1 (no definer) reads as root's, SQL SECURITY DEFINER.
    assert!(texts(&mut s, "SHOW CREATE VIEW shop.cheap")[0][1]
        .starts_with("CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `cheap`"));
    assert_eq!(texts(&mut app, "SELECT name FROM shop.cheap"), [["tea"]]);
    check_tables(&mut s, &["shop.items"]);
    drop((s, app));
    drop(db);
    let db = Database::open(&dir).unwrap();
    assert!(db.accounts.notes.is_empty(), "told once");
    let mut app = db.session("app", "10.1.2.3");
    assert_eq!(texts(&mut app, "SELECT COUNT(*) FROM shop.items"), [["2"]]);
    drop(app);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

/// Layout 5 keyed text under the plain collation by upper case only ('Zoë' apart from
/// 'zoe'; 'Ä' after 'Z'), in row-table indexes, column-table zone maps and dictionaries.
/// utf8mb4_general_ci folds accents now: row data files of version 1 have their indexes
/// rebuilt and say version 2, column metadata of version 1 has its text zone maps
/// recomputed, and old dictionaries are read in the collation's order. `people.u_city`
/// held 'Köln' and 'Koln', equal keys now: both rows stay, a third is refused. `facts`
/// (70 000 rows loaded by LOAD DATA: two segments) has a dictionary of names and the
/// words 'Zebra' and 'Äpfel' among 'w…' ones.
#[test]
fn layout_5_text_keys_fold_accents_after_the_upgrade() {
    let dir = fixture(5);
    let data_version = |dir: &Path| {
        let h = std::fs::read(dir.join("shop/people.qrd")).unwrap();
        u32::from_le_bytes(h[8..12].try_into().unwrap())
    };
    assert_eq!(data_version(&dir), 1);
    let db = Database::open(&dir).unwrap();
    assert_eq!(db.catalog.open_problems(), Vec::<String>::new());
    let mut s = db.session("root", "localhost");
    s.query("USE shop").unwrap();
    let ids = |s: &mut quarry_core::Session, sql: &str| -> Vec<String> {
        texts(s, sql).into_iter().map(|r| r[0].clone()).collect()
    };
    // Answers as MariaDB 10.11 gives them for the same rows.
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE name = 'zoe' ORDER BY id"
        ),
        ["1", "2"]
    );
    // Tables open at first use.
    assert_eq!(data_version(&dir), 2);
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people FORCE INDEX (k_name) WHERE name = 'ARGER' ORDER BY id"
        ),
        ["3", "4"]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE name LIKE 'e%' ORDER BY id"
        ),
        ["6", "7"]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE note = 'ete' ORDER BY id"
        ),
        ["1", "2", "3", "5"]
    );
    assert_eq!(
        ids(&mut s, "SELECT id FROM people ORDER BY name, id"),
        ["3", "4", "5", "6", "7", "8", "1", "2"]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE city = 'koln' ORDER BY id"
        ),
        ["1", "2"]
    );
    assert_eq!(
        ids(&mut s, "SELECT id FROM plain WHERE v = 'a' ORDER BY id"),
        ["1", "2"]
    );
    assert_eq!(
        s.query("INSERT INTO people VALUES (9, 'x', 'KÖLN', NULL)")
            .unwrap_err()
            .code,
        1062
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE name = 'arger'"),
        ["17500"]
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE name > 'c'"),
        ["43750"]
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE word = 'zebra'"),
        ["1"]
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE word < 'b'"),
        ["1"]
    );
    assert_eq!(
        texts(&mut s, "SELECT MIN(word), MAX(word) FROM facts"),
        [["Äpfel", "Zebra"]]
    );
    assert_eq!(
        texts(
            &mut s,
            "SELECT COUNT(*) FROM facts GROUP BY name ORDER BY MIN(id)"
        ),
        [["17500"], ["17500"], ["8750"], ["17500"], ["8750"]]
    );
    check_tables(&mut s, &["people", "plain", "facts"]);
    // New rows next to the old ones, then a reopen: the upgrade is done once.
    s.query("INSERT INTO facts VALUES (70001, 'Ärger', 'Ölberg', 1), (70002, 'ÁRGER', 'zz', 2)")
        .unwrap();
    s.query("INSERT INTO people VALUES (10, 'Zoé', 'Graz', 'ÉTÉ')")
        .unwrap();
    drop(s);
    drop(db);
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE shop").unwrap();
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE name = 'ZOE' ORDER BY id"
        ),
        ["1", "2", "10"]
    );
    assert_eq!(
        ids(
            &mut s,
            "SELECT id FROM people WHERE note = 'ete' ORDER BY id"
        ),
        ["1", "2", "3", "5", "10"]
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE name = 'arger'"),
        ["17502"]
    );
    assert_eq!(
        ids(&mut s, "SELECT COUNT(*) FROM facts WHERE word = 'OLBERG'"),
        ["1"]
    );
    check_tables(&mut s, &["people", "plain", "facts"]);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}
