//! Files the server reads for a client (LOAD DATA INFILE without LOCAL, LOAD_FILE()) stay
//! inside `secure_file_priv`. Any account could load `/etc/passwd`, the datadir's account
//! file or `/proc/self/environ`. Errors and `@@secure_file_priv` are MariaDB 10.11's.

mod common;

use std::path::{Path, PathBuf};

use common::{lines, texts};
use quarry_core::{Database, Options, Session};

/// A datadir `<base>/data` opened with `secure_file_priv` = `setting`.
fn open(name: &str, setting: Option<&str>) -> (PathBuf, Session) {
    let base = std::env::temp_dir().join(format!("quarry-files-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let opts = Options {
        secure_file_priv: setting.map(str::to_string),
        ..Options::default()
    };
    let db = Database::open_with(&base.join("data"), &opts).unwrap();
    let mut s = db.session("root", "localhost");
    s.query("CREATE DATABASE d; USE d; CREATE TABLE f (a VARCHAR(200))")
        .unwrap();
    (base, s)
}

fn code(s: &mut Session, sql: &str) -> u16 {
    s.query(sql).map(|_| 0).unwrap_or_else(|e| e.code)
}

fn load(file: &Path) -> String {
    format!("LOAD DATA INFILE '{}' INTO TABLE f", file.display())
}

#[test]
fn server_side_reads_stay_inside_secure_file_priv() {
    let (base, mut s) = open("default", None);
    // The default: a directory beside the datadir, made at startup.
    let files = std::fs::canonicalize(base.join("quarry-files")).unwrap();
    assert_eq!(
        lines(&mut s, "SELECT @@secure_file_priv"),
        [format!("{}/", files.display())]
    );
    std::fs::write(files.join("n.txt"), "1\n2\n").unwrap();
    std::fs::write(base.join("outside.txt"), "secret\n").unwrap();
    std::os::unix::fs::symlink(base.join("outside.txt"), files.join("link.txt")).unwrap();
    assert_eq!(code(&mut s, &load(&files.join("n.txt"))), 0);
    assert_eq!(lines(&mut s, "SELECT count(*) FROM f"), ["2"]);
    for refused in [
        PathBuf::from("/etc/passwd"),
        base.join("outside.txt"),
        files.join("../outside.txt"),
        files.join("link.txt"),
        base.join("data/accounts.qacct"),
        PathBuf::from("n.txt"),
    ] {
        assert_eq!(code(&mut s, &load(&refused)), 1290, "{}", refused.display());
    }
    assert_eq!(code(&mut s, &load(&files.join("nope.txt"))), 29);
    assert_eq!(lines(&mut s, "SELECT count(*) FROM f"), ["2"]);
    // LOAD_FILE: the bytes inside, NULL outside (no error, as MariaDB), NULL past
    // max_allowed_packet.
    let q = |f: &Path| format!("SELECT LOAD_FILE('{}') IS NULL", f.display());
    assert_eq!(
        texts(
            &mut s,
            &format!("SELECT HEX(LOAD_FILE('{}'))", files.join("n.txt").display())
        ),
        [["310A320A"]]
    );
    for null in [
        PathBuf::from("/etc/passwd"),
        files.join("link.txt"),
        files.join("nope.txt"),
    ] {
        assert_eq!(lines(&mut s, &q(&null)), ["1"], "{}", null.display());
    }
    std::fs::write(files.join("big.txt"), vec![b'x'; 2048]).unwrap();
    s.query("SET SESSION max_allowed_packet = 1024").unwrap();
    assert_eq!(lines(&mut s, &q(&files.join("big.txt"))), ["1"]);
    assert_eq!(code(&mut s, "SET GLOBAL secure_file_priv = ''"), 1238);
    drop(s);
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn null_refuses_every_server_side_read_and_empty_allows_any() {
    let (base, mut s) = open("null", Some("NULL"));
    assert_eq!(lines(&mut s, "SELECT @@secure_file_priv IS NULL"), ["1"]);
    std::fs::write(base.join("n.txt"), "1\n").unwrap();
    assert_eq!(code(&mut s, &load(&base.join("n.txt"))), 1290);
    assert_eq!(
        lines(
            &mut s,
            &format!(
                "SELECT LOAD_FILE('{}') IS NULL",
                base.join("n.txt").display()
            )
        ),
        ["1"]
    );
    drop(s);
    let _ = std::fs::remove_dir_all(&base);

    let (base, mut s) = open("anywhere", Some(""));
    assert_eq!(lines(&mut s, "SELECT @@secure_file_priv"), [""]);
    std::fs::write(base.join("n.txt"), "1\n").unwrap();
    assert_eq!(code(&mut s, &load(&base.join("n.txt"))), 0);
    assert_eq!(lines(&mut s, "SELECT count(*) FROM f"), ["1"]);
    drop(s);
    let _ = std::fs::remove_dir_all(&base);
}

/// SELECT … INTO OUTFILE writes LOAD DATA's text format and INTO DUMPFILE one row's
/// bytes, inside secure_file_priv only, never over an existing file. The bytes expected
/// are what MariaDB 10.11 wrote for the same statements.
#[test]
fn select_into_outfile_and_dumpfile_write_what_mariadb_writes() {
    let (base, mut s) = open("outfile", None);
    let files = std::fs::canonicalize(base.join("quarry-files")).unwrap();
    s.query(
        "CREATE TABLE t (id INT, s VARCHAR(30), d DECIMAL(6,2), f FLOAT, dt DATETIME, n INT);
         INSERT INTO t VALUES (1, 'plain', 1.50, 52.14, '2024-01-02 03:04:05', NULL),
           (2, 'tab\\there', -2.00, 0.5, NULL, 7),
           (3, 'line\\nbreak \"q\" back\\\\slash', 0, 1e10, '2020-02-29 00:00:00', 0),
           (4, 'comma,x', 10.25, -1.25, NULL, NULL)",
    )
    .unwrap();
    let f = |n: &str| files.join(n);
    let run = |s: &mut Session, sql: String| s.query(&sql).map(|_| ()).map_err(|e| e.code);
    run(
        &mut s,
        format!(
            "SELECT * FROM t ORDER BY id INTO OUTFILE '{}'",
            f("o1").display()
        ),
    )
    .unwrap();
    run(
        &mut s,
        format!(
            "SELECT id, s, d FROM t ORDER BY id INTO OUTFILE '{}' FIELDS TERMINATED BY ',' \
             OPTIONALLY ENCLOSED BY '\"' LINES TERMINATED BY '\\r\\n'",
            f("o2").display()
        ),
    )
    .unwrap();
    run(
        &mut s,
        format!(
            "SELECT id, s INTO OUTFILE '{}' FIELDS ENCLOSED BY '\\'' ESCAPED BY '' \
             LINES STARTING BY '>' FROM t WHERE id < 3 ORDER BY id",
            f("o3").display()
        ),
    )
    .unwrap();
    run(
        &mut s,
        format!(
            "SELECT s FROM t WHERE id = 3 INTO DUMPFILE '{}'",
            f("o4").display()
        ),
    )
    .unwrap();
    let bytes = |n: &str| std::fs::read(f(n)).unwrap();
    assert_eq!(
        bytes("o1"),
        b"1\tplain\t1.50\t52.14\t2024-01-02 03:04:05\t\\N\n2\ttab\\\there\t-2.00\t0.5\t\\N\t7\n\
          3\tline\\\nbreak \"q\" back\\\\slash\t0.00\t10000000000\t2020-02-29 00:00:00\t0\n\
          4\tcomma,x\t10.25\t-1.25\t\\N\t\\N\n"
    );
    assert_eq!(
        bytes("o2"),
        b"1,\"plain\",1.50\r\n2,\"tab\there\",-2.00\r\n3,\"line\nbreak \\\"q\\\" back\\\\slash\",0.00\r\n4,\"comma,x\",10.25\r\n"
    );
    assert_eq!(bytes("o3"), b">'1'\t'plain'\n>'2'\t'tab\there'\n");
    assert_eq!(bytes("o4"), b"line\nbreak \"q\" back\\slash");
    // Binary values are written byte by byte (they went through text, and lost every
    // byte that is not UTF-8).
    s.query("CREATE TABLE b (id INT, v VARBINARY(10)); INSERT INTO b VALUES (1, x'FF0009C3'), (2, x'5C0A')")
        .unwrap();
    run(
        &mut s,
        format!(
            "SELECT * FROM b ORDER BY id INTO OUTFILE '{}'",
            f("o5").display()
        ),
    )
    .unwrap();
    assert_eq!(bytes("o5"), b"1\t\xff\\0\\\t\xc3\n2\t\\\\\\\n\n");
    // What OUTFILE wrote, LOAD DATA reads back.
    s.query("CREATE TABLE back LIKE t").unwrap();
    run(
        &mut s,
        format!("LOAD DATA INFILE '{}' INTO TABLE back", f("o1").display()),
    )
    .unwrap();
    assert_eq!(
        lines(&mut s, "SELECT * FROM back ORDER BY id"),
        lines(&mut s, "SELECT * FROM t ORDER BY id")
    );
    // Refusals, with MariaDB's codes; a failed DUMPFILE leaves no file.
    let o1 = format!("SELECT id FROM t INTO OUTFILE '{}'", f("o1").display());
    assert_eq!(run(&mut s, o1), Err(1086));
    assert_eq!(
        run(
            &mut s,
            "SELECT id FROM t INTO OUTFILE '/tmp/quarry-out-x'".into()
        ),
        Err(1290)
    );
    let many = format!("SELECT id FROM t INTO DUMPFILE '{}'", f("o6").display());
    assert_eq!(run(&mut s, many), Err(1172));
    assert!(!f("o6").exists());
    drop(s);
    let _ = std::fs::remove_dir_all(&base);
}
