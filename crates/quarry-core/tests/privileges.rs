//! Privileges are checked on every statement. An account granted `SELECT ON db1.*` only
//! inserted into db1, read and dropped db2's tables, made accounts, set root's password
//! and SET GLOBAL. Every expected error below (code and text) is what MariaDB 10.11 gave
//! for the same grants and statement.

mod common;

use common::{fresh_db, lines};
use quarry_core::Session;

fn err(s: &mut Session, sql: &str) -> String {
    match s.query(sql) {
        Ok(_) => "ok".into(),
        Err(e) => format!("{} {}", e.code, e.message),
    }
}

fn setup(name: &str) -> (std::sync::Arc<quarry_core::Database>, Session) {
    let (_, db) = fresh_db(name);
    let mut root = db.session("root", "localhost");
    for sql in [
        "CREATE DATABASE db1",
        "CREATE DATABASE db2",
        "CREATE DATABASE db3",
        "CREATE TABLE db1.t (a INT, b INT)",
        "CREATE TABLE db2.s (x INT)",
        "CREATE TABLE db2.s2 (a INT, b INT)",
        "CREATE TABLE db3.u (k INT)",
        "INSERT INTO db1.t VALUES (1, 2)",
        "CREATE USER ro@localhost IDENTIFIED BY 'pw'",
        "GRANT SELECT ON db1.* TO ro@localhost",
        "GRANT SELECT (a), UPDATE (a) ON db2.s2 TO ro@localhost",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    (db, root)
}

#[test]
fn a_select_only_account_is_refused_every_escalation() {
    let (db, mut root) = setup("priv-escalation");
    let mut ro = db.session("ro", "localhost");
    let denied = |what: &str, t: &str| {
        format!("1142 {what} command denied to user 'ro'@'localhost' for table {t}")
    };
    let cases: Vec<(&str, String)> = vec![
        ("SELECT a, b FROM db1.t", "ok".into()),
        ("INSERT INTO db1.t VALUES (3,4)", denied("INSERT", "`db1`.`t`")),
        ("SELECT * FROM db2.s", denied("SELECT", "`db2`.`s`")),
        ("SELECT * FROM db3.u", denied("SELECT", "`db3`.`u`")),
        ("SELECT * FROM db1.t, db3.u", denied("SELECT", "`db3`.`u`")),
        ("SELECT (SELECT k FROM db3.u)", denied("SELECT", "`db3`.`u`")),
        ("INSERT INTO db1.t SELECT * FROM db3.u", denied("INSERT", "`db1`.`t`")),
        ("DROP TABLE db2.s", denied("DROP", "`db2`.`s`")),
        ("DELETE FROM db1.t", denied("DELETE", "`db1`.`t`")),
        ("ALTER TABLE db1.t ADD c INT", denied("ALTER", "`db1`.`t`")),
        ("CREATE INDEX i ON db1.t (a)", denied("INDEX", "`db1`.`t`")),
        ("CREATE TABLE db1.n (a INT)", denied("CREATE", "`db1`.`n`")),
        ("CREATE VIEW db1.v AS SELECT 1", denied("CREATE VIEW", "`db1`.`v`")),
        ("TRUNCATE db1.t", denied("DROP", "`db1`.`t`")),
        ("RENAME TABLE db1.t TO db1.t2", denied("DROP, ALTER", "`db1`.`t`")),
        ("SHOW CREATE TABLE db3.u", denied("SHOW", "`db3`.`u`")),
        ("DESCRIBE db3.u", denied("SELECT", "`db3`.`u`")),
        ("SELECT * FROM db3.nosuch", denied("SELECT", "`db3`.`nosuch`")),
        (
            "SELECT * FROM db1.nosuch",
            "1146 Table 'db1.nosuch' doesn't exist".into(),
        ),
        (
            "DROP DATABASE db2",
            "1044 Access denied for user 'ro'@'localhost' to database 'db2'".into(),
        ),
        (
            "CREATE DATABASE x",
            "1044 Access denied for user 'ro'@'localhost' to database 'x'".into(),
        ),
        (
            "USE db3",
            "1044 Access denied for user 'ro'@'localhost' to database 'db3'".into(),
        ),
        (
            "SHOW TABLES FROM db3",
            "1044 Access denied for user 'ro'@'localhost' to database 'db3'".into(),
        ),
        ("USE db2", "ok".into()),
        // Column privileges: a is granted, b is not.
        ("SELECT a FROM db2.s2", "ok".into()),
        ("SELECT COUNT(*) FROM db2.s2", "ok".into()),
        (
            "SELECT b FROM db2.s2",
            "1143 SELECT command denied to user 'ro'@'localhost' for column 'b' in table 's2'"
                .into(),
        ),
        ("SELECT * FROM db2.s2", denied("SELECT", "`db2`.`s2`")),
        (
            "SELECT a FROM db2.s2 WHERE b = 1",
            "1143 SELECT command denied to user 'ro'@'localhost' for column 'b' in table 's2'"
                .into(),
        ),
        (
            "UPDATE db2.s2 SET a = 1 WHERE b = 2",
            "1143 SELECT command denied to user 'ro'@'localhost' for column 'b' in table 's2'"
                .into(),
        ),
        (
            "UPDATE db2.s2 SET b = 1",
            "1143 UPDATE command denied to user 'ro'@'localhost' for column 'b' in table 's2'"
                .into(),
        ),
        ("UPDATE db2.s2 SET a = a + 1", "ok".into()),
        // Accounts and the server.
        (
            "CREATE USER evil",
            "1227 Access denied; you need (at least one of) the CREATE USER privilege(s) for this operation".into(),
        ),
        (
            "DROP USER ro@localhost",
            "1227 Access denied; you need (at least one of) the CREATE USER privilege(s) for this operation".into(),
        ),
        (
            "SET PASSWORD FOR root@localhost = PASSWORD('x')",
            "1044 Access denied for user 'ro'@'localhost' to database 'mysql'".into(),
        ),
        (
            "SHOW GRANTS FOR root@localhost",
            "1044 Access denied for user 'ro'@'localhost' to database 'mysql'".into(),
        ),
        (
            "GRANT SELECT ON db1.* TO ro@localhost",
            "1044 Access denied for user 'ro'@'localhost' to database 'db1'".into(),
        ),
        (
            "SET GLOBAL max_connections = 3",
            "1227 Access denied; you need (at least one of) the SUPER, CONNECTION ADMIN privilege(s) for this operation".into(),
        ),
        (
            "SET GLOBAL read_only = 1",
            "1227 Access denied; you need (at least one of) the READ_ONLY ADMIN privilege(s) for this operation".into(),
        ),
        (
            "SELECT 1 INTO OUTFILE 'x1'",
            "1227 Access denied; you need (at least one of) the FILE privilege(s) for this operation".into(),
        ),
        (
            "LOAD DATA INFILE '/etc/passwd' INTO TABLE db1.t",
            "1045 Access denied for user 'ro'@'localhost' (using password: YES)".into(),
        ),
        (
            "FLUSH PRIVILEGES",
            "1227 Access denied; you need (at least one of) the RELOAD privilege(s) for this operation".into(),
        ),
        ("SET SESSION sql_mode = ''", "ok".into()),
        ("SET PASSWORD = PASSWORD('pw')", "ok".into()),
    ];
    let mut wrong = vec![];
    for (sql, want) in &cases {
        let got = err(&mut ro, sql);
        if got != *want {
            wrong.push(format!("{sql}\n  want {want}\n  got  {got}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // LOAD_FILE is NULL without FILE, whatever the file.
    assert_eq!(
        lines(&mut ro, "SELECT LOAD_FILE('/etc/passwd') IS NULL"),
        ["1"]
    );
    // A database where it holds only a table's column privileges lists that table alone;
    // information_schema is open to everyone (MariaDB's answers).
    assert_eq!(lines(&mut ro, "SHOW TABLES FROM db2"), ["s2"]);
    assert_eq!(err(&mut ro, "USE information_schema"), "ok");
    // information_schema's rows follow the same rule (issue 19).
    assert_eq!(
        lines(
            &mut ro,
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db2'"
        ),
        ["s2"]
    );
    assert_eq!(
        lines(
            &mut ro,
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'db2' AND TABLE_NAME = 's'"
        ),
        ["0"]
    );
    assert_eq!(
        lines(
            &mut ro,
            "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY 1"
        ),
        ["db1", "db2", "information_schema"]
    );
    // Only databases with a privilege are listed.
    assert_eq!(
        lines(&mut ro, "SHOW DATABASES"),
        ["db1", "db2", "information_schema"]
    );
    // Nothing was changed by what was refused; root still does everything.
    assert_eq!(lines(&mut root, "SELECT COUNT(*) FROM db1.t"), ["1"]);
    assert_eq!(lines(&mut root, "SELECT COUNT(*) FROM db2.s"), ["0"]);
    assert!(root.query("SET GLOBAL max_connections = 200").is_ok());
}

/// SHOW GRANTS prints what MariaDB 10.11 printed for the same statements.
#[test]
fn show_grants_is_mariadbs() {
    let (db, mut root) = setup("priv-show");
    for sql in [
        "GRANT SELECT, INSERT, UPDATE (b), REFERENCES (a) ON db1.t TO ro@localhost",
        "GRANT RELOAD, PROCESS, FILE ON *.* TO ro@localhost WITH MAX_USER_CONNECTIONS 3",
        "GRANT ALL ON *.* TO big@'%' IDENTIFIED BY 'x' WITH GRANT OPTION",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    assert_eq!(
        lines(&mut root, "SHOW GRANTS FOR ro@localhost"),
        [
            "GRANT RELOAD, PROCESS, FILE ON *.* TO `ro`@`localhost` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' WITH MAX_USER_CONNECTIONS 3",
            "GRANT SELECT ON `db1`.* TO `ro`@`localhost`",
            "GRANT SELECT, INSERT, UPDATE (`b`), REFERENCES (`a`) ON `db1`.`t` TO `ro`@`localhost`",
            "GRANT SELECT (`a`), UPDATE (`a`) ON `db2`.`s2` TO `ro`@`localhost`",
        ]
    );
    assert_eq!(
        lines(&mut root, "SHOW GRANTS FOR big"),
        ["GRANT ALL PRIVILEGES ON *.* TO `big`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' WITH GRANT OPTION"]
    );
    // SHOW PRIVILEGES: MariaDB 10.11's 41 rows, in its order.
    let privs = common::texts(&mut root, "SHOW PRIVILEGES");
    assert_eq!(privs.len(), 41);
    assert_eq!(privs[0], ["Alter", "Tables", "To alter the table"]);
    assert_eq!(
        privs[40],
        [
            "Usage",
            "Server Admin",
            "No privileges - allow connect only"
        ]
    );
    root.query("REVOKE ALL PRIVILEGES ON *.* FROM big").unwrap();
    assert_eq!(
        lines(&mut root, "SHOW GRANTS FOR big"),
        ["GRANT USAGE ON *.* TO `big`@`%` IDENTIFIED BY PASSWORD '*B69027D44F6E5EDC07F1AEAD1477967B16F28227' WITH GRANT OPTION"]
    );
    for (sql, want) in [
        (
            "GRANT SUPER ON db1.* TO ro@localhost",
            "1221 Incorrect usage of DB GRANT and GLOBAL PRIVILEGES",
        ),
        (
            "GRANT FILE ON db1.t TO ro@localhost",
            "1144 Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
        ),
        ("GRANT INSERT (zz) ON db1.t TO ro@localhost", "1054 Unknown column 'zz' in 't'"),
        (
            "GRANT SELECT ON db1.t TO nobody@localhost",
            "1133 Can't find any matching row in the user table",
        ),
        ("GRANT SELECT ON db1.nosuch TO ro@localhost", "1146 Table 'db1.nosuch' doesn't exist"),
        (
            "REVOKE SELECT ON db3.u FROM ro@localhost",
            "1147 There is no such grant defined for user 'ro' on host 'localhost' on table 'u'",
        ),
        (
            "SHOW GRANTS FOR nobody@localhost",
            "1141 There is no such grant defined for user 'nobody' on host 'localhost'",
        ),
        ("GRANT SELECT ON t TO ro@localhost", "1046 No database selected"),
    ] {
        assert_eq!(err(&mut root, sql), want, "{sql}");
    }
    // A statement naming a missing account among others changes none of them.
    assert!(err(
        &mut root,
        "GRANT SELECT ON db3.* TO ro@localhost, nobody2@localhost"
    )
    .starts_with("1133"));
    assert!(!lines(&mut root, "SHOW GRANTS FOR ro@localhost")
        .iter()
        .any(|l| l.contains("db3")));
    drop(db);
}

/// A grantor passes on what it holds WITH GRANT OPTION, nothing more.
#[test]
fn grant_option_passes_on_only_what_is_held() {
    let (db, mut root) = setup("priv-grantor");
    root.query("CREATE USER boss@localhost, clerk@localhost")
        .unwrap();
    root.query("GRANT SELECT, INSERT ON db1.* TO boss@localhost WITH GRANT OPTION")
        .unwrap();
    let mut boss = db.session("boss", "localhost");
    assert_eq!(
        err(&mut boss, "GRANT SELECT ON db1.* TO clerk@localhost"),
        "ok"
    );
    assert_eq!(
        err(&mut boss, "GRANT DELETE ON db1.* TO clerk@localhost"),
        "1044 Access denied for user 'boss'@'localhost' to database 'db1'"
    );
    assert_eq!(
        err(&mut boss, "GRANT SELECT ON db2.* TO clerk@localhost"),
        "1044 Access denied for user 'boss'@'localhost' to database 'db2'"
    );
    let mut clerk = db.session("clerk", "localhost");
    assert_eq!(lines(&mut clerk, "SELECT a FROM db1.t"), ["1"]);
    let one = || vec![quarry_core::quarry_common::Value::Int(1)];
    let p = clerk.prepare("SELECT a FROM db1.t WHERE a = ?").unwrap();
    assert!(clerk.execute(&p, one()).is_ok());
    assert!(clerk.execute(&p, one()).is_ok());
    // A change of grants is seen by sessions already logged in, and by their prepared
    // statements (not checked again while the grants stay the same).
    assert_eq!(
        err(&mut boss, "REVOKE SELECT ON db1.* FROM clerk@localhost"),
        "ok"
    );
    assert!(err(&mut clerk, "SELECT a FROM db1.t").starts_with("1142"));
    assert_eq!(clerk.execute(&p, one()).unwrap_err().code, 1142);
}

/// Roles: granted, activated with SET ROLE (1959 for one not granted), default at login.
#[test]
fn roles_carry_privileges_when_active() {
    let (db, mut root) = setup("priv-roles");
    for sql in [
        "CREATE ROLE reader",
        "GRANT SELECT ON db3.* TO reader",
        "GRANT reader TO ro@localhost",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    let mut ro = db.session("ro", "localhost");
    assert!(err(&mut ro, "SELECT * FROM db3.u").starts_with("1142"));
    assert_eq!(
        err(&mut ro, "SET ROLE nosuch"),
        "1959 Invalid role specification `nosuch`"
    );
    assert_eq!(err(&mut ro, "SET ROLE reader"), "ok");
    assert_eq!(err(&mut ro, "SELECT * FROM db3.u"), "ok");
    assert_eq!(err(&mut ro, "SET ROLE NONE"), "ok");
    assert!(err(&mut ro, "SELECT * FROM db3.u").starts_with("1142"));
    assert_eq!(err(&mut ro, "SET DEFAULT ROLE reader"), "ok");
    let g = lines(&mut root, "SHOW GRANTS FOR ro@localhost");
    assert_eq!(g[0], "GRANT `reader` TO `ro`@`localhost`");
    assert_eq!(
        g[g.len() - 1],
        "SET DEFAULT ROLE `reader` FOR `ro`@`localhost`"
    );
    let mut again = db.session("ro", "localhost");
    assert_eq!(err(&mut again, "SELECT * FROM db3.u"), "ok");
    assert_eq!(
        lines(&mut root, "SHOW GRANTS FOR reader"),
        [
            "GRANT USAGE ON *.* TO `reader`",
            "GRANT SELECT ON `db3`.* TO `reader`"
        ]
    );
    // Revoked, a default role brings nothing at login (it stays named, as in MariaDB).
    root.query("REVOKE reader FROM ro@localhost").unwrap();
    let mut revoked = db.session("ro", "localhost");
    assert!(err(&mut revoked, "SELECT * FROM db3.u").starts_with("1142"));
    assert!(err(&mut again, "SELECT * FROM db3.u").starts_with("1142"));
    root.query("GRANT reader TO ro@localhost").unwrap();
    root.query("DROP ROLE reader").unwrap();
    let mut after = db.session("ro", "localhost");
    assert!(err(&mut after, "SELECT * FROM db3.u").starts_with("1142"));
}

/// CURRENT_USER() is the account that authenticated the session, USER() the name and
/// host the client came with (both were USER()'s).
#[test]
fn current_user_is_the_account() {
    let (db, mut root) = setup("priv-current-user");
    root.query("CREATE USER anyhost IDENTIFIED BY 'x'").unwrap();
    let mut s = db.session("anyhost", "10.0.0.5");
    assert_eq!(
        lines(&mut s, "SELECT CONCAT(USER(), ' ', CURRENT_USER())"),
        ["anyhost@10.0.0.5 anyhost@%"]
    );
}

/// A CTE is no table to check, but it hides only what its scope covers: a table of its
/// name read outside that scope, or inside its own query, is checked (1142 as MariaDB).
#[test]
fn ctes_hide_no_table_outside_their_scope() {
    let (db, mut root) = setup("priv-cte");
    for sql in [
        "CREATE TABLE db1.secret (a INT)",
        "CREATE USER ro2@localhost IDENTIFIED BY 'pw'",
        "GRANT SELECT ON db1.t TO ro2@localhost",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    let mut ro2 = db.session("ro2", "localhost");
    ro2.query("USE db1").unwrap();
    let denied = |t: &str| {
        format!("1142 SELECT command denied to user 'ro2'@'localhost' for table `db1`.`{t}`")
    };
    for (sql, want) in [
        (
            "WITH secret AS (SELECT a FROM t) SELECT * FROM secret",
            "ok".to_string(),
        ),
        (
            "WITH secret AS (SELECT a FROM secret) SELECT * FROM secret",
            denied("secret"),
        ),
        (
            "SELECT * FROM secret WHERE a IN (WITH secret AS (SELECT a FROM t) SELECT a FROM secret)",
            denied("secret"),
        ),
        (
            "WITH c AS (SELECT a FROM t), d AS (SELECT a FROM c) SELECT * FROM d",
            "ok".to_string(),
        ),
        (
            "WITH d AS (SELECT a FROM c), c AS (SELECT a FROM t) SELECT * FROM d",
            denied("c"),
        ),
    ] {
        assert_eq!(err(&mut ro2, sql), want, "{sql}");
    }
}

/// Views read their tables with their definer's privileges (SQL SECURITY DEFINER, the
/// default) or the reader's (INVOKER); a reader needs SELECT on the view itself. A view
/// kept working for everyone after its definer lost the right to read its table. The
/// answers are MariaDB 10.11's.
#[test]
fn views_read_with_their_definers_or_invokers_rights() {
    let (db, mut root) = setup("priv-views");
    for sql in [
        "CREATE USER maker@localhost",
        "GRANT SELECT, CREATE VIEW ON db1.* TO maker@localhost",
        "CREATE USER reader2@localhost",
    ] {
        root.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    let mut maker = db.session("maker", "localhost");
    for sql in [
        "CREATE VIEW db1.vd AS SELECT a FROM db1.t",
        "CREATE SQL SECURITY INVOKER VIEW db1.vi AS SELECT a FROM db1.t",
    ] {
        maker.query(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }
    assert_eq!(
        err(&mut maker, "CREATE DEFINER=root@localhost VIEW db1.vx AS SELECT 1"),
        "1227 Access denied; you need (at least one of) the SUPER, SET USER privilege(s) for this operation"
    );
    assert!(
        texts_first(&mut root, "SHOW CREATE VIEW db1.vd").starts_with(
            "CREATE ALGORITHM=UNDEFINED DEFINER=`maker`@`localhost` SQL SECURITY DEFINER VIEW `vd`"
        )
    );
    root.query("GRANT SELECT ON db1.vd TO reader2@localhost")
        .unwrap();
    root.query("GRANT SELECT ON db1.vi TO reader2@localhost")
        .unwrap();
    let mut reader = db.session("reader2", "localhost");
    assert_eq!(lines(&mut reader, "SELECT a FROM db1.vd"), ["1"]);
    let lacks = |v: &str| {
        format!("1356 View 'db1.{v}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them")
    };
    assert_eq!(err(&mut reader, "SELECT a FROM db1.vi"), lacks("vi"));
    assert!(err(&mut reader, "SELECT * FROM db1.t").starts_with("1142"));
    root.query("REVOKE SELECT ON db1.* FROM maker@localhost")
        .unwrap();
    assert_eq!(err(&mut reader, "SELECT a FROM db1.vd"), lacks("vd"));
    root.query("DROP USER maker@localhost").unwrap();
    assert_eq!(
        err(&mut reader, "SELECT a FROM db1.vd"),
        "1449 The user specified as a definer ('maker'@'localhost') does not exist"
    );
    // The definer's file outlives a restart (version 2 of the view file).
    drop((reader, maker, root));
    let dir = db.datadir().to_path_buf();
    drop(db);
    let db = quarry_core::Database::open(&dir).unwrap();
    let mut root = db.session("root", "localhost");
    assert!(texts_first(&mut root, "SHOW CREATE VIEW db1.vi")
        .contains("DEFINER=`maker`@`localhost` SQL SECURITY INVOKER"));
}

/// The second column of the first row.
fn texts_first(s: &mut Session, sql: &str) -> String {
    common::texts(s, sql)[0][1].clone()
}

/// The embedded shell (`quarry sql`) holds every privilege whatever the account file
/// says: with root@localhost dropped, a login as root has none, and the shell's session
/// still works (it was locked out of its own datadir).
#[test]
fn the_embedded_shell_is_never_locked_out() {
    let (db, mut root) = setup("priv-local");
    root.query("CREATE USER admin@'%' IDENTIFIED BY 'x'")
        .unwrap();
    root.query("GRANT ALL ON *.* TO admin@'%' WITH GRANT OPTION")
        .unwrap();
    root.query("DROP USER root@localhost").unwrap();
    let mut login = db.session("root", "localhost");
    assert!(err(&mut login, "CREATE DATABASE x").starts_with("1044"));
    let mut shell = db.local_session();
    assert_eq!(err(&mut shell, "CREATE DATABASE x"), "ok");
    assert_eq!(
        err(&mut shell, "CREATE USER root@localhost"),
        "ok",
        "and can make root again"
    );
}

#[test]
fn lock_tables_needs_its_privilege_and_select() {
    let (db, mut root) = setup("priv-lock-tables");
    root.query("CREATE USER lv@localhost; GRANT LOCK TABLES ON db2.* TO lv@localhost")
        .unwrap();
    let mut ro = db.session("ro", "localhost");
    assert_eq!(
        err(&mut ro, "LOCK TABLES db1.t READ"),
        "1044 Access denied for user 'ro'@'localhost' to database 'db1'"
    );
    let mut lv = db.session("lv", "localhost");
    assert_eq!(
        err(&mut lv, "LOCK TABLES db2.s READ"),
        "1142 SELECT command denied to user 'lv'@'localhost' for table `db2`.`s`"
    );
    root.query("GRANT SELECT ON db2.s TO lv@localhost").unwrap();
    let mut lv = db.session("lv", "localhost");
    assert_eq!(err(&mut lv, "LOCK TABLES db2.s READ"), "ok");
    assert_eq!(err(&mut lv, "UNLOCK TABLES"), "ok");
}

#[test]
fn alter_database_needs_alter_on_it() {
    let (db, mut root) = setup("priv-alterdb");
    let mut ro = db.session("ro", "localhost");
    assert_eq!(
        err(&mut ro, "ALTER DATABASE db1 CHARACTER SET latin1"),
        "1044 Access denied for user 'ro'@'localhost' to database 'db1'"
    );
    root.query("GRANT ALTER ON db1.* TO ro@localhost").unwrap();
    let mut ro = db.session("ro", "localhost");
    assert_eq!(
        err(&mut ro, "ALTER DATABASE db1 CHARACTER SET latin1"),
        "ok"
    );
    assert_eq!(
        lines(&mut root, "SHOW CREATE DATABASE db1"),
        vec!["db1 CREATE DATABASE `db1` /*!40100 DEFAULT CHARACTER SET latin1 COLLATE latin1_swedish_ci */"]
    );
}

/// `read_only` (was 1193): writes by accounts without READ ONLY ADMIN are refused with
/// 1290 while it is on, reads go on, root (who holds it) still writes; only SET GLOBAL
/// sets it, and only with READ ONLY ADMIN. MariaDB 10.11's codes and texts.
#[test]
fn read_only_refuses_writes_without_read_only_admin() {
    let (db, mut root) = setup("read_only");
    root.query("CREATE USER w@localhost IDENTIFIED BY 'pw'")
        .unwrap();
    root.query("GRANT ALL ON db1.* TO w@localhost").unwrap();
    let mut w = db.session("w", "localhost");
    assert_eq!(err(&mut w, "INSERT INTO db1.t VALUES (3, 4)"), "ok");
    root.query("SET GLOBAL read_only = 1").unwrap();
    let refused = "1290 The MariaDB server is running with the --read-only option so it cannot execute this statement";
    assert_eq!(err(&mut w, "INSERT INTO db1.t VALUES (5, 6)"), refused);
    assert_eq!(err(&mut w, "CREATE TABLE db1.more (a INT)"), refused);
    assert_eq!(lines(&mut w, "SELECT COUNT(*) FROM db1.t"), ["2"]);
    assert_eq!(
        err(&mut w, "SET GLOBAL read_only = 0"),
        "1227 Access denied; you need (at least one of) the READ_ONLY ADMIN privilege(s) for this operation"
    );
    assert_eq!(
        err(&mut root, "SET SESSION read_only = 0"),
        "1229 Variable 'read_only' is a GLOBAL variable and should be set with SET GLOBAL"
    );
    assert_eq!(err(&mut root, "INSERT INTO db1.t VALUES (7, 8)"), "ok");
    assert_eq!(
        lines(&mut w, "SELECT @@read_only, @@global.read_only"),
        ["1 1"]
    );
    root.query("SET GLOBAL read_only = 0").unwrap();
    assert_eq!(err(&mut w, "INSERT INTO db1.t VALUES (9, 10)"), "ok");
    assert_eq!(lines(&mut root, "SELECT COUNT(*) FROM db1.t"), ["4"]);
}

/// The `mysql` schema's account tables and `information_schema`'s privilege tables are
/// read from the account file (they were 1146 and 1109). Every expected row is MariaDB
/// 10.11's for the same accounts and grants.
#[test]
fn mysql_schema_and_privilege_tables_show_the_grants() {
    let (db, mut root) = setup("mysql_schema");
    root.query("CREATE ROLE r1").unwrap();
    root.query("GRANT r1 TO ro@localhost").unwrap();
    assert_eq!(
        lines(
            &mut root,
            "SELECT Host, User, Password, Select_priv, Update_priv, Grant_priv, plugin, \
             authentication_string, is_role, max_user_connections FROM mysql.user \
             WHERE User IN ('ro', 'r1') ORDER BY User"
        ),
        [
            " r1  N N N   Y 0",
            "localhost ro *D821809F681A40A6E379B50D0463EFAE20BDD122 N N N mysql_native_password *D821809F681A40A6E379B50D0463EFAE20BDD122 N 0",
        ]
    );
    assert_eq!(
        lines(
            &mut root,
            "SELECT Host, Db, User, Select_priv, Insert_priv, Delete_history_priv FROM mysql.db WHERE User = 'ro'"
        ),
        ["localhost db1 ro Y N N"]
    );
    assert_eq!(
        lines(
            &mut root,
            "SELECT Host, Db, User, Table_name, Table_priv, Column_priv FROM mysql.tables_priv WHERE User = 'ro'"
        ),
        ["localhost db2 ro s2  Select,Update"]
    );
    assert_eq!(
        lines(
            &mut root,
            "SELECT Db, Table_name, Column_name, Column_priv FROM mysql.columns_priv WHERE User = 'ro' ORDER BY Column_name"
        ),
        ["db2 s2 a Select,Update"]
    );
    assert_eq!(
        lines(
            &mut root,
            "SELECT Host, User, Role, Admin_option FROM mysql.roles_mapping WHERE User = 'ro'"
        ),
        ["localhost ro r1 N"]
    );
    // An account sees its own grants in information_schema, and no mysql table.
    let mut ro = db.session("ro", "localhost");
    assert_eq!(
        lines(
            &mut ro,
            "SELECT GRANTEE, TABLE_CATALOG, PRIVILEGE_TYPE, IS_GRANTABLE FROM information_schema.USER_PRIVILEGES"
        ),
        ["'ro'@'localhost' def USAGE NO"]
    );
    assert_eq!(
        lines(
            &mut ro,
            "SELECT GRANTEE, TABLE_SCHEMA, PRIVILEGE_TYPE, IS_GRANTABLE FROM information_schema.SCHEMA_PRIVILEGES"
        ),
        ["'ro'@'localhost' db1 SELECT NO"]
    );
    assert_eq!(
        lines(
            &mut ro,
            "SELECT GRANTEE, TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, PRIVILEGE_TYPE FROM information_schema.COLUMN_PRIVILEGES ORDER BY PRIVILEGE_TYPE"
        ),
        [
            "'ro'@'localhost' db2 s2 a SELECT",
            "'ro'@'localhost' db2 s2 a UPDATE"
        ]
    );
    assert_eq!(
        lines(
            &mut ro,
            "SELECT COUNT(*) FROM information_schema.TABLE_PRIVILEGES"
        ),
        ["0"]
    );
    assert_eq!(
        err(&mut ro, "SELECT * FROM mysql.user"),
        "1142 SELECT command denied to user 'ro'@'localhost' for table `mysql`.`user`"
    );
    for t in ["INNODB_TRX", "INNODB_BUFFER_POOL_STATS"] {
        assert_eq!(
            err(&mut ro, &format!("SELECT * FROM information_schema.{t}")),
            "1227 Access denied; you need (at least one of) the PROCESS privilege(s) for this operation"
        );
    }
    // Root sees every account's rows; the tables cannot be written.
    assert_eq!(
        lines(
            &mut root,
            "SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = '''ro''@''localhost'''"
        ),
        ["1"]
    );
    assert!(err(&mut root, "DELETE FROM mysql.user WHERE User = 'ro'").starts_with("1044"));
    assert_eq!(
        lines(
            &mut root,
            "SELECT COUNT(*) FROM mysql.user WHERE User = 'ro'"
        ),
        ["1"]
    );
}

/// INNODB_TRX lists a transaction while it is open (BEGIN) and not after COMMIT;
/// performance_schema.threads lists the connections.
#[test]
fn open_transactions_and_threads_are_listed() {
    let (db, mut root) = setup("innodb_trx");
    let mut other = db.session("ro", "localhost");
    let count = "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'RUNNING'";
    assert_eq!(lines(&mut root, count), ["0"]);
    other.query("BEGIN").unwrap();
    other.query("SELECT * FROM db1.t").unwrap();
    assert_eq!(lines(&mut root, count), ["1"]);
    assert_eq!(
        lines(
            &mut root,
            &format!(
                "SELECT trx_mysql_thread_id = {} FROM information_schema.INNODB_TRX",
                other.id()
            )
        ),
        ["1"]
    );
    other.query("COMMIT").unwrap();
    assert_eq!(lines(&mut root, count), ["0"]);
    assert_eq!(
        lines(
            &mut root,
            "SELECT NAME, TYPE, PROCESSLIST_USER FROM performance_schema.threads ORDER BY PROCESSLIST_USER"
        ),
        [
            "thread/sql/one_connection FOREGROUND ro",
            "thread/sql/one_connection FOREGROUND root"
        ]
    );
    // Without a grant on performance_schema an account reads only the tables about its
    // own session (MariaDB's answers).
    assert_eq!(
        err(&mut other, "SELECT COUNT(*) FROM performance_schema.threads"),
        "1142 SELECT command denied to user 'ro'@'localhost' for table `performance_schema`.`threads`"
    );
    for t in [
        "global_status",
        "session_status",
        "session_account_connect_attrs",
    ] {
        assert_eq!(
            err(
                &mut other,
                &format!("SELECT COUNT(*) FROM performance_schema.{t}")
            ),
            "ok"
        );
    }
    root.query("GRANT SELECT ON performance_schema.* TO ro@localhost")
        .unwrap();
    // With one, it sees its own thread only, as SHOW PROCESSLIST without PROCESS.
    assert_eq!(
        lines(
            &mut other,
            "SELECT PROCESSLIST_USER FROM performance_schema.threads"
        ),
        ["ro"]
    );
    assert_eq!(
        lines(
            &mut other,
            "SELECT VARIABLE_VALUE > 0 FROM performance_schema.global_status WHERE VARIABLE_NAME = 'Questions'"
        ),
        ["1"]
    );
}
