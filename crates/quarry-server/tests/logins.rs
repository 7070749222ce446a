//! Failed logins are throttled (MySQL's connection_control): 300 wrong passwords in 0.4 s
//! met no resistance.

mod common;

use common::{Raw, Running};

fn delays(root: &mut Raw) -> i64 {
    let rows = root
        .query_rows(b"SHOW STATUS LIKE 'Connection_control_delay_generated'")
        .unwrap();
    let row = String::from_utf8_lossy(&rows[0]).into_owned();
    row.rsplit(|c: char| !c.is_ascii_digit())
        .find(|p| !p.is_empty())
        .unwrap()
        .parse()
        .unwrap()
}

/// Past the threshold every attempt of that account from that host waits before it is
/// judged — the right password too, which then clears the count; other accounts are not
/// slowed. Counted, not timed: `Connection_control_delay_generated`.
#[test]
fn failed_logins_earn_growing_delays_until_one_succeeds() {
    let running = Running::start(
        "logins",
        &[
            ("connection_control_failed_connections_threshold", 2),
            ("connection_control_min_connection_delay", 20),
        ],
    );
    let port = running.port;
    let mut root = Raw::login(port);
    assert_eq!(
        root.query_rows(b"CREATE USER 'app'@'%' IDENTIFIED BY 'secret'"),
        Ok(vec![])
    );
    let before = delays(&mut root);
    for _ in 0..4 {
        assert_eq!(Raw::login_as(port, "app", "wrong").err(), Some(1045));
    }
    assert_eq!(delays(&mut root), before + 2, "the third and fourth waited");
    assert!(Raw::login_as(port, "other", "x").is_err());
    assert_eq!(delays(&mut root), before + 2, "another name is not slowed");
    assert!(Raw::login_as(port, "app", "secret").is_ok());
    assert_eq!(
        delays(&mut root),
        before + 3,
        "the right password waited too"
    );
    assert_eq!(Raw::login_as(port, "app", "wrong").err(), Some(1045));
    assert_eq!(delays(&mut root), before + 3, "a login clears the count");
    running.stop();
}

/// ACCOUNT LOCK, WITH MAX_USER_CONNECTIONS and `IDENTIFIED BY PASSWORD '*hash'`, with
/// MariaDB 10.11's codes: a locked account is refused (4151) only once its password is
/// right, a second session past a limit of one is 1226, and ALTER USER changes only what
/// it names (a bare ALTER USER cleared the password).
#[test]
fn locked_accounts_and_per_account_connection_limits() {
    let running = Running::start("logins-lock", &[]);
    let port = running.port;
    let mut root = Raw::login(port);
    let ok = |root: &mut Raw, sql: &str| {
        root.query_rows(sql.as_bytes())
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
    };
    ok(
        &mut root,
        "CREATE USER 'app'@'%' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 1 ACCOUNT LOCK",
    );
    assert_eq!(Raw::login_as(port, "app", "pw").err(), Some(4151));
    assert_eq!(Raw::login_as(port, "app", "nope").err(), Some(1045));
    ok(&mut root, "ALTER USER 'app'@'%' ACCOUNT UNLOCK");
    ok(&mut root, "ALTER USER 'app'@'%'");
    let first = Raw::login_as(port, "app", "pw").expect("unlocked, password kept");
    assert_eq!(Raw::login_as(port, "app", "pw").err(), Some(1226));
    drop(first);
    common::wait_until(|| Raw::login_as(port, "app", "pw").is_ok());
    ok(
        &mut root,
        "ALTER USER 'app'@'%' WITH MAX_USER_CONNECTIONS 0",
    );
    let _a = Raw::login_as(port, "app", "pw").unwrap();
    let _b = Raw::login_as(port, "app", "pw").expect("no limit");
    // The hash SHOW CREATE USER and dump tools write: SHA1(SHA1('pw')).
    ok(
        &mut root,
        "CREATE USER 'h'@'%' IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122'",
    );
    assert!(Raw::login_as(port, "h", "pw").is_ok());
    assert_eq!(
        root.query_rows(b"CREATE USER 'h2'@'%' IDENTIFIED BY PASSWORD 'abc'"),
        Err(1372)
    );
    assert_eq!(
        root.query_rows(b"ALTER USER 'nobody'@'%' ACCOUNT LOCK"),
        Err(1396)
    );
    ok(&mut root, "ALTER USER IF EXISTS 'nobody'@'%' ACCOUNT LOCK");
    assert_eq!(
        root.query_rows(b"CREATE USER 'x'@'%' WITH MAX_QUERIES_PER_HOUR 5"),
        Err(1235)
    );
    running.stop();
}

/// The first column of the first row of `sql`, as text.
fn first_text(root: &mut Raw, sql: &str) -> String {
    let rows = root.query_rows(sql.as_bytes()).unwrap();
    let r = &rows[0];
    let (len, at) = match r[0] {
        0xfc => (u16::from_le_bytes([r[1], r[2]]) as usize, 3),
        n => (n as usize, 1),
    };
    String::from_utf8(r[at..at + len].to_vec()).unwrap()
}

/// SHOW CREATE USER writes what MariaDB 10.11 writes for the same accounts, and its
/// statement makes the account again (what dump tools rely on).
#[test]
fn show_create_user_round_trips() {
    let running = Running::start("logins-show", &[]);
    let port = running.port;
    let mut root = Raw::login(port);
    root.query_rows(
        b"CREATE USER 'app'@'%' IDENTIFIED BY 'pw' WITH MAX_USER_CONNECTIONS 1 ACCOUNT LOCK",
    )
    .unwrap();
    root.query_rows(b"CREATE USER 'e'@'%'").unwrap();
    let app = first_text(&mut root, "SHOW CREATE USER 'app'@'%'");
    assert_eq!(
        app,
        "CREATE USER `app`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' \
         WITH MAX_USER_CONNECTIONS 1 ACCOUNT LOCK"
    );
    assert_eq!(
        first_text(&mut root, "SHOW CREATE USER e@'%'"),
        "CREATE USER `e`@`%`"
    );
    assert_eq!(root.query_rows(b"SHOW CREATE USER nobody@'%'"), Err(1133));
    root.query_rows(b"DROP USER 'app'@'%'").unwrap();
    root.query_rows(app.as_bytes()).unwrap();
    root.query_rows(b"ALTER USER 'app'@'%' ACCOUNT UNLOCK")
        .unwrap();
    assert!(Raw::login_as(port, "app", "pw").is_ok());
    running.stop();
}

/// PASSWORD EXPIRE: the account logs in, but until it sets a password only SET
/// statements run (1820 for the rest), as MariaDB's sandbox mode; SHOW CREATE USER says
/// so, and a new password ends it.
#[test]
fn an_expired_password_must_be_set_before_anything_else() {
    let running = Running::start("logins-expire", &[]);
    let port = running.port;
    let mut root = Raw::login(port);
    root.query_rows(b"CREATE USER 'ex'@'%' IDENTIFIED BY 'pw' ACCOUNT LOCK PASSWORD EXPIRE")
        .unwrap();
    assert_eq!(
        first_text(&mut root, "SHOW CREATE USER ex@'%'"),
        "CREATE USER `ex`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' \
         ACCOUNT LOCK PASSWORD EXPIRE"
    );
    root.query_rows(b"ALTER USER ex@'%' ACCOUNT UNLOCK")
        .unwrap();
    let mut ex = Raw::login_as(port, "ex", "pw").expect("logs in");
    assert_eq!(ex.query_rows(b"SELECT 1"), Err(1820));
    assert_eq!(ex.query_rows(b"SHOW DATABASES"), Err(1820));
    assert!(ex.query_rows(b"SET autocommit = 0").is_ok());
    assert!(ex.query_rows(b"SET @x = 1").is_ok());
    assert!(ex.query_rows(b"SET PASSWORD = PASSWORD('new')").is_ok());
    assert_eq!(ex.query_rows(b"SELECT 9"), Ok(vec![b"\x019".to_vec()]));
    assert_eq!(
        first_text(&mut root, "SHOW CREATE USER ex@'%'"),
        "CREATE USER `ex`@`%` IDENTIFIED BY PASSWORD '*6FE2B845E049CDA9EFED8CFAF265CD29622FD852'"
    );
    assert!(Raw::login_as(port, "ex", "new")
        .unwrap()
        .query_rows(b"SELECT 1")
        .is_ok());
    running.stop();
}

/// This machine's address on its default route, when it is not loopback.
fn outside_address() -> Option<std::net::IpAddr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

/// The first byte of what the server sends a new connection from `ip`: 10 for the
/// greeting, 0xFF for an error (with its code).
fn first_reply(ip: std::net::IpAddr, port: u16) -> (u8, u16) {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect((ip, port)).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let mut p = vec![0; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
    s.read_exact(&mut p).unwrap();
    let code = if p[0] == 0xff {
        u16::from_le_bytes([p[1], p[2]])
    } else {
        0
    };
    (p[0], code)
}

/// max_connect_errors: handshakes that fail (a garbage response) count against their host;
/// at the limit the host gets 1129 instead of a greeting until FLUSH HOSTS, as MariaDB.
/// Loopback is never blocked, so this runs over the machine's own outside address, and is
/// skipped where there is none.
#[test]
fn a_host_failing_handshakes_is_blocked_until_flush_hosts() {
    use std::io::{Read, Write};
    let Some(ip) = outside_address() else {
        eprintln!("skipped: this machine has no address besides loopback");
        return;
    };
    let running = Running::start_at(
        "hosts",
        &[("max_connect_errors", 2)],
        &Default::default(),
        "0.0.0.0:0",
    );
    let port = running.port;
    for _ in 0..2 {
        let mut s = std::net::TcpStream::connect((ip, port)).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let mut greeting = [0u8; 256];
        let _ = s.read(&mut greeting).unwrap();
        s.write_all(b"\x05\x00\x00\x01\xff\xff\xff\xff\xff")
            .unwrap();
        let mut reply = vec![];
        let _ = s.read_to_end(&mut reply);
        assert!(
            reply.windows(13).any(|w| w == b"Bad handshake"),
            "{reply:?}"
        );
    }
    assert_eq!(first_reply(ip, port), (0xff, 1129));
    let mut root = Raw::login(port);
    assert_eq!(root.query_rows(b"FLUSH HOSTS"), Ok(vec![]));
    assert_eq!(first_reply(ip, port).0, 10, "a greeting again");
    running.stop();
}

/// MariaDB's ed25519: an account identified with it is asked (AuthSwitchRequest to
/// client_ed25519) to sign a 32-byte nonce; the signature made from the right password
/// passes, another is 1045, and an empty answer does not pass for the account's empty
/// native hash. COM_CHANGE_USER (native only) cannot reach it either.
#[test]
fn ed25519_accounts_sign_a_nonce() {
    let running = Running::start("ed25519", &[]);
    let port = running.port;
    let mut root = Raw::login(port);
    assert_eq!(
        root.query_rows(b"CREATE USER ed@'%' IDENTIFIED VIA ed25519 USING PASSWORD('secret')"),
        Ok(vec![])
    );
    let attempt = |answer: &dyn Fn(&[u8]) -> Vec<u8>| -> u8 {
        let mut c = Raw::connect(port);
        c.read().expect("greeting");
        c.send(1, &common::response("ed", &[], 0));
        let (seq, switch) = c.read().expect("switch");
        assert!(switch.starts_with(b"\xfeclient_ed25519\0"), "{switch:?}");
        let nonce = &switch[16..];
        assert_eq!(nonce.len(), 32);
        c.send(seq + 1, &answer(nonce));
        c.read().expect("verdict").1[0]
    };
    assert_eq!(
        attempt(&|n| quarry_core::ed25519::sign("secret", n).to_vec()),
        0
    );
    assert_eq!(
        attempt(&|n| quarry_core::ed25519::sign("wrong", n).to_vec()),
        0xff
    );
    assert_eq!(attempt(&|_| vec![]), 0xff, "an empty answer");
    // COM_CHANGE_USER with no password to the ed25519 account.
    let mut p = vec![0x11];
    p.extend_from_slice(b"ed\0");
    p.push(0);
    p.push(0);
    root.send(0, &p);
    let (_, reply) = root.read().expect("change user reply");
    assert_eq!(reply[0], 0xff, "{reply:?}");
    assert_eq!(u16::from_le_bytes([reply[1], reply[2]]), 1045);
    running.stop();
}
