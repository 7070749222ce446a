//! REPAIR TABLE of a damaged row-engine table (issue 18, item 12; it only checked and said
//! OK): records whose checksum fails are dropped and counted, a damaged record header is
//! passed over to the next readable record, indexes are built again from the data, and
//! the table is whole (CHECK TABLE OK) and usable afterwards; an index that lost a page
//! is built again. Column tables are rebuilt from their rows.

mod common;

use common::rows;
use quarry_core::quarry_common::Value;
use quarry_core::{Database, Session};
use std::path::{Path, PathBuf};

fn fresh(name: &str) -> PathBuf {
    quarry_core::quarry_common::test_dir(name)
}

fn fill(dir: &Path, engine: &str) {
    let db = Database::open(dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query(&format!(
        "CREATE DATABASE d; USE d; CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20), KEY (v)) ENGINE={engine}"
    ))
    .unwrap();
    let values: Vec<String> = (0..100)
        .map(|i| format!("({}, 'needle-{i:03}')", i + 1))
        .collect();
    s.query(&format!("INSERT INTO t VALUES {}", values.join(",")))
        .unwrap();
}

/// The table's messages from `sql` (CHECK / REPAIR TABLE): "type: text" each.
fn messages(s: &mut Session, sql: &str) -> Vec<String> {
    rows(s, sql)
        .into_iter()
        .map(|r| format!("{}: {}", r[2], r[3]))
        .collect()
}

fn count(s: &mut Session, sql: &str) -> i64 {
    match &rows(s, sql)[0][0] {
        Value::Int(n) => *n,
        other => panic!("{other:?}"),
    }
}

/// Where `needle` is in the data file, and the header of the record holding it.
fn record_of(data: &[u8], needle: &str) -> (usize, usize) {
    let at = data
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .expect("the value is in the data file");
    for h in (4096..at).rev() {
        if data[h] != 0xA1 {
            continue;
        }
        let slot = u32::from_le_bytes(data[h + 1..h + 5].try_into().unwrap()) as usize;
        let len = u32::from_le_bytes(data[h + 5..h + 9].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(data[h + 9..h + 13].try_into().unwrap());
        if len <= slot
            && h + 13 + len <= data.len()
            && crc32c::crc32c(&data[h + 13..h + 13 + len]) == crc
        {
            return (at, h);
        }
    }
    panic!("no record header before {needle}");
}

#[test]
fn repair_drops_damaged_records_and_keeps_the_rest() {
    let dir = fresh("repair-records");
    fill(&dir, "InnoDB");
    let file = dir.join("d").join("t.qrd");
    let mut data = std::fs::read(&file).unwrap();
    // A payload byte of row 30: its checksum fails.
    let (at, _) = record_of(&data, "needle-030");
    data[at + 7] ^= 0x55;
    // The header of row 60: where the next record starts is lost with it.
    let (_, h) = record_of(&data, "needle-060");
    data[h] = 0x00;
    data[h + 1] = 0xFF;
    std::fs::write(&file, &data).unwrap();

    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("USE d").unwrap();
    let check = messages(&mut s, "CHECK TABLE t");
    assert_eq!(check.last().unwrap(), "status: Corrupt", "{check:?}");
    assert!(s.query("SELECT COUNT(*) FROM t WHERE v LIKE 'n%'").is_err());

    let repair = messages(&mut s, "REPAIR TABLE t");
    // The table could not be opened: how many rows it had is not known. Row 60's header
    // is passed over byte by byte up to row 61's (its own 13 bytes and its payload).
    assert_eq!(repair.len(), 2, "{repair:?}");
    assert!(
        repair[0].starts_with("warning: 2 damaged records dropped (")
            && repair[0].ends_with(" bytes held no readable record)"),
        "{repair:?}"
    );
    assert_eq!(repair[1], "status: OK");
    assert_eq!(messages(&mut s, "CHECK TABLE t"), ["status: OK"]);
    assert_eq!(count(&mut s, "SELECT COUNT(*) FROM t"), 98);
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t WHERE id IN (31, 61)"),
        0
    );
    assert_eq!(
        count(&mut s, "SELECT COUNT(*) FROM t WHERE v = 'needle-061'"),
        1
    );
    assert_eq!(count(&mut s, "SELECT id FROM t WHERE id = 100"), 100);
    s.query("INSERT INTO t VALUES (31, 'again')").unwrap();
    // The counter goes on from the rows kept.
    s.query("INSERT INTO t (v) VALUES ('next')").unwrap();
    assert_eq!(count(&mut s, "SELECT id FROM t WHERE v = 'next'"), 101);
    drop(s);
    drop(db);
    // The repaired table is what a restart opens.
    let db = Database::open(&dir).unwrap();
    let mut s = db.session("root", "localhost");
    assert_eq!(count(&mut s, "SELECT COUNT(*) FROM d.t"), 100);
    assert_eq!(messages(&mut s, "CHECK TABLE d.t"), ["status: OK"]);
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn repair_builds_indexes_again_from_the_data() {
    for engine in ["InnoDB", "COLUMN"] {
        let dir = fresh(&format!("repair-index-{engine}"));
        fill(&dir, engine);
        if engine == "InnoDB" {
            // The index on v loses the page holding its keys.
            let ix = dir.join("d").join("t.i1.qix");
            let mut data = std::fs::read(&ix).unwrap();
            let key = data
                .windows(10)
                .position(|w| w == b"NEEDLE-042" || w == b"needle-042")
                .expect("the key is in the index file");
            let page = key / 4096 * 4096;
            data[page..page + 4096].fill(0xEE);
            std::fs::write(&ix, &data).unwrap();
        }
        let db = Database::open(&dir).unwrap();
        let mut s = db.session("root", "localhost");
        s.query("USE d").unwrap();
        if engine == "InnoDB" {
            let check = messages(&mut s, "CHECK TABLE t");
            assert_eq!(check.last().unwrap(), "status: Corrupt", "{check:?}");
        }
        assert_eq!(
            messages(&mut s, "REPAIR TABLE t"),
            ["status: OK"],
            "{engine}"
        );
        assert_eq!(
            messages(&mut s, "CHECK TABLE t"),
            ["status: OK"],
            "{engine}"
        );
        assert_eq!(count(&mut s, "SELECT COUNT(*) FROM t"), 100, "{engine}");
        assert_eq!(
            count(&mut s, "SELECT COUNT(*) FROM t WHERE v = 'needle-042'"),
            1,
            "{engine}"
        );
        let e = messages(&mut s, "REPAIR TABLE nothere");
        assert_eq!(e.last().unwrap(), "status: Operation failed");
        drop(s);
        drop(db);
        let _ = std::fs::remove_dir_all(dir);
    }
}
