//! Password lifetimes: `PASSWORD EXPIRE INTERVAL n DAY | NEVER | DEFAULT` and
//! `default_password_lifetime`, with MariaDB 10.11's SHOW CREATE USER text; a password
//! past its lifetime logs in to the sandbox (only SET PASSWORD and SET run: 1820), as an
//! explicitly expired one does. They were refused with 1235.

mod common;

use common::{fresh_db, lines};

/// Move `user`@`host`'s last password change `days` into the past.
fn age(db: &quarry_core::Database, user: &str, host: &str, days: u64) {
    db.accounts
        .change(|st| {
            for a in st
                .list
                .iter_mut()
                .filter(|a| a.user == user && a.host == host)
            {
                a.password_changed -= days * 86_400;
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn passwords_expire_after_their_lifetime() {
    let (_, db) = fresh_db("password-lifetimes");
    let mut root = db.session("root", "localhost");
    for sql in [
        "CREATE USER lt1@'%' IDENTIFIED BY 'x' PASSWORD EXPIRE INTERVAL 30 DAY",
        "CREATE USER lt2@'%' PASSWORD EXPIRE NEVER",
        "CREATE USER lt3@'%' PASSWORD EXPIRE DEFAULT",
        "CREATE USER lt4@'%' IDENTIFIED BY 'x' WITH MAX_USER_CONNECTIONS 2 PASSWORD EXPIRE INTERVAL 5 DAY ACCOUNT LOCK",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    // MariaDB 10.11's answers.
    assert_eq!(
        lines(&mut root, "SHOW CREATE USER lt1"),
        ["CREATE USER `lt1`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' PASSWORD EXPIRE INTERVAL 30 DAY"]
    );
    assert_eq!(
        lines(&mut root, "SHOW CREATE USER lt2"),
        ["CREATE USER `lt2`@`%` PASSWORD EXPIRE NEVER"]
    );
    assert_eq!(
        lines(&mut root, "SHOW CREATE USER lt3"),
        ["CREATE USER `lt3`@`%`"]
    );
    assert_eq!(
        lines(&mut root, "SHOW CREATE USER lt4"),
        ["CREATE USER `lt4`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' WITH MAX_USER_CONNECTIONS 2 ACCOUNT LOCK PASSWORD EXPIRE INTERVAL 5 DAY"]
    );
    root.query("ALTER USER lt1@'%' PASSWORD EXPIRE").unwrap();
    assert_eq!(
        lines(&mut root, "SHOW CREATE USER lt1"),
        [
            "CREATE USER `lt1`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' PASSWORD EXPIRE",
            "ALTER USER `lt1`@`%` PASSWORD EXPIRE INTERVAL 30 DAY",
        ]
    );
    root.query("SET PASSWORD FOR lt1@'%' = PASSWORD('x')")
        .unwrap();

    // 29 days old: fine; 30: the sandbox until a new password is set.
    age(&db, "lt1", "%", 29);
    let mut s = db.session("lt1", "10.0.0.1");
    assert!(s.query("SELECT 1").is_ok());
    age(&db, "lt1", "%", 1);
    let mut s = db.session("lt1", "10.0.0.1");
    assert_eq!(s.query("SELECT 1").unwrap_err().code, 1820);
    s.query("SET PASSWORD = PASSWORD('y')").unwrap();
    assert!(s.query("SELECT 1").is_ok());
    assert!(db.session("lt1", "10.0.0.1").query("SELECT 1").is_ok());

    // DEFAULT follows default_password_lifetime (0: for ever); NEVER ignores it.
    age(&db, "lt3", "%", 400);
    age(&db, "lt2", "%", 400);
    assert!(db.session("lt3", "10.0.0.1").query("SELECT 1").is_ok());
    root.query("SET GLOBAL default_password_lifetime = 360")
        .unwrap();
    assert_eq!(
        db.session("lt3", "10.0.0.1")
            .query("SELECT 1")
            .unwrap_err()
            .code,
        1820
    );
    assert!(db.session("lt2", "10.0.0.1").query("SELECT 1").is_ok());
    assert_eq!(
        root.query("CREATE USER bad PASSWORD EXPIRE INTERVAL 0 DAY")
            .unwrap_err()
            .code,
        1525
    );
}
