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
