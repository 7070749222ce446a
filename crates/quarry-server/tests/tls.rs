//! TLS: a server offers it from its first start with a CA and certificate made in the
//! datadir (a client given `ca.pem` verifies the server, by address too); `Ssl_version`
//! and `Ssl_cipher` report the connection's; `REQUIRE SSL` accounts and
//! `require_secure_transport` refuse plain logins with 1045, as MariaDB 10.11 does.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::{Raw, Running};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

type Tls = StreamOwned<ClientConnection, TcpStream>;

fn read_packet(s: &mut impl Read) -> (u8, Vec<u8>) {
    let mut h = [0u8; 4];
    s.read_exact(&mut h).unwrap();
    let mut p = vec![0; u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize];
    s.read_exact(&mut p).unwrap();
    (h[3], p)
}

fn framed(seq: u8, payload: &[u8]) -> Vec<u8> {
    let l = (payload.len() as u32).to_le_bytes();
    let mut b = vec![l[0], l[1], l[2], seq];
    b.extend_from_slice(payload);
    b
}

const CLIENT_SSL: u32 = 0x0800;
const CAPS: u32 = 0x0000_0200 | 0x0000_8000 | 0x0008_0000 | 0x0002_0000;

/// A client that trusts the datadir's generated CA only.
fn client_config(dir: &std::path::Path) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(dir.join("ca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Arc::new(
        ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Log in over TLS. The SSL request and the TLS ClientHello go out in one write, as a
/// fast client's may arrive: the server lost a ClientHello read together with the
/// request, and the handshake hung until connect_timeout.
fn tls_login(running: &Running, user: &str, password: &str) -> Result<Tls, u16> {
    tls_login_trusting(running, &running.dir, user, password)
}

/// [`tls_login`], trusting the CA in `ca_dir`.
fn tls_login_trusting(
    running: &Running,
    ca_dir: &std::path::Path,
    user: &str,
    password: &str,
) -> Result<Tls, u16> {
    let (mut tls, scramble, request) = tls_connect_trusting(running, ca_dir);
    let token = quarry_core::accounts::native_token(password, &scramble);
    let mut p = request;
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(token.len() as u8);
    p.extend_from_slice(&token);
    p.extend_from_slice(b"mysql_native_password\0");
    tls.write_all(&framed(2, &p)).unwrap();
    let (_, reply) = read_packet(&mut tls);
    match reply[0] {
        0 => Ok(tls),
        _ => Err(u16::from_le_bytes([reply[1], reply[2]])),
    }
}

/// The handshake response of a caching_sha2_password client (MySQL 8's default): the
/// SSL request's 32 bytes `request` (or a plain response's same fields), then the rest.
fn sha2_response(request: &[u8], user: &str, password: &str, scramble: &[u8]) -> Vec<u8> {
    let token = quarry_core::accounts::sha2_token(password, scramble);
    let mut p = request.to_vec();
    p.extend_from_slice(user.as_bytes());
    p.push(0);
    p.push(token.len() as u8);
    p.extend_from_slice(&token);
    p.extend_from_slice(b"caching_sha2_password\0");
    p
}

/// TCP connected, greeting read, SSL request and ClientHello sent, TLS set up: the
/// stream, the scramble and the SSL request's 32 bytes.
fn tls_connect(running: &Running) -> (Tls, Vec<u8>, Vec<u8>) {
    tls_connect_trusting(running, &running.dir)
}

fn tls_connect_trusting(running: &Running, ca_dir: &std::path::Path) -> (Tls, Vec<u8>, Vec<u8>) {
    let mut tcp = TcpStream::connect(("127.0.0.1", running.port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (_, hello) = read_packet(&mut tcp);
    let v = 1 + hello[1..].iter().position(|&b| b == 0).unwrap() + 1;
    let caps_lo = u16::from_le_bytes([hello[v + 13], hello[v + 14]]) as u32;
    assert_ne!(caps_lo & CLIENT_SSL, 0, "the greeting offers TLS");
    let mut scramble = hello[v + 4..v + 12].to_vec();
    let rest = v + 12 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&hello[rest..rest + 12]);

    let caps = CAPS | CLIENT_SSL;
    let mut request = caps.to_le_bytes().to_vec();
    request.extend_from_slice(&(16u32 << 20).to_le_bytes());
    request.push(45);
    request.extend_from_slice(&[0; 23]);
    let name = ServerName::try_from("127.0.0.1").unwrap().to_owned();
    let mut conn = ClientConnection::new(client_config(ca_dir), name).unwrap();
    let mut both = framed(1, &request);
    conn.write_tls(&mut both).unwrap();
    tcp.write_all(&both).unwrap();
    (StreamOwned::new(conn, tcp), scramble, request)
}

/// Plain TCP, greeting read: the stream and the scramble.
fn plain_connect(running: &Running) -> (TcpStream, Vec<u8>) {
    let mut tcp = TcpStream::connect(("127.0.0.1", running.port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (_, hello) = read_packet(&mut tcp);
    let v = 1 + hello[1..].iter().position(|&b| b == 0).unwrap() + 1;
    let mut scramble = hello[v + 4..v + 12].to_vec();
    let rest = v + 12 + 1 + 2 + 1 + 2 + 2 + 1 + 10;
    scramble.extend_from_slice(&hello[rest..rest + 12]);
    (tcp, scramble)
}

/// The value of the first row's last column of a one-column-pair result (SHOW STATUS).
fn status(tls: &mut Tls, sql: &str) -> String {
    let mut p = vec![3];
    p.extend_from_slice(sql.as_bytes());
    tls.write_all(&framed(0, &p)).unwrap();
    let (_, first) = read_packet(tls);
    assert!(first[0] != 0xff, "{}", String::from_utf8_lossy(&first));
    for _ in 0..=first[0] {
        read_packet(tls);
    }
    let (_, row) = read_packet(tls);
    // Two length-prefixed strings (short ones): name, value.
    let n = row[0] as usize;
    let v = &row[1 + n..];
    let out = String::from_utf8_lossy(&v[1..1 + v[0] as usize]).into_owned();
    while read_packet(tls).1[0] != 0xfe {}
    out
}

#[test]
fn tls_out_of_the_box_and_secure_only_logins() {
    let running = Running::start("tls", &[]);
    for f in ["ca.pem", "server-cert.pem", "server-key.pem"] {
        assert!(running.dir.join(f).exists(), "{f} made at first start");
    }
    let mut tls = tls_login(&running, "root", "").expect("root over TLS");
    assert_eq!(
        status(&mut tls, "SHOW STATUS LIKE 'Ssl_version'"),
        "TLSv1.3"
    );
    assert_eq!(
        status(&mut tls, "SHOW STATUS LIKE 'Ssl_cipher'"),
        "TLS_AES_256_GCM_SHA384"
    );
    assert_eq!(status(&mut tls, "SHOW VARIABLES LIKE 'have_ssl'"), "YES");

    let mut root = Raw::login(running.port);
    let plain: Vec<Vec<u8>> = root.query_rows(b"SHOW STATUS LIKE 'Ssl_cipher'").unwrap();
    assert!(plain[0].ends_with(&[0]), "no cipher without TLS");
    assert_eq!(
        root.query_rows(b"CREATE USER 'sec'@'%' IDENTIFIED BY 'pw' REQUIRE SSL"),
        Ok(vec![])
    );
    assert_eq!(Raw::login_as(running.port, "sec", "pw").err(), Some(1045));
    assert!(tls_login(&running, "sec", "pw").is_ok());
    assert_eq!(tls_login(&running, "sec", "wrong").err(), Some(1045));

    assert_eq!(
        root.query_rows(b"SET GLOBAL require_secure_transport = ON"),
        Ok(vec![])
    );
    assert_eq!(Raw::login_as(running.port, "root", "").err(), Some(1045));
    assert!(tls_login(&running, "root", "").is_ok());
    assert_eq!(
        root.query_rows(b"SET GLOBAL require_secure_transport = OFF"),
        Ok(vec![])
    );
    assert!(Raw::login_as(running.port, "root", "").is_ok());
    drop(tls);
    running.stop();
}

/// caching_sha2_password (MySQL 8 clients): over TLS a first login sends the password
/// itself (full authentication: the server asks with 0x01 0x04), later ones pass the
/// fast path (0x01 0x03) with TLS or without; a client without TLS the server has not
/// seen yet is switched to mysql_native_password (0xFE); a wrong password is 1045.
#[test]
fn caching_sha2_password_full_then_fast() {
    let running = Running::start("sha2", &[]);
    let mut root = Raw::login(running.port);
    for sql in [
        "CREATE USER 'app'@'%' IDENTIFIED BY 'pw'",
        "CREATE USER 'other'@'%' IDENTIFIED BY 'x'",
    ] {
        assert_eq!(root.query_rows(sql.as_bytes()), Ok(vec![]));
    }
    // Full authentication over TLS.
    let (mut tls, scramble, request) = tls_connect(&running);
    tls.write_all(&framed(2, &sha2_response(&request, "app", "pw", &scramble)))
        .unwrap();
    assert_eq!(read_packet(&mut tls), (3, vec![0x01, 0x04]));
    tls.write_all(&framed(4, b"pw\0")).unwrap();
    assert_eq!(
        read_packet(&mut tls).1[0],
        0,
        "OK after the full authentication"
    );
    // Fast path, over TLS and without.
    let (mut tls, scramble, request) = tls_connect(&running);
    tls.write_all(&framed(2, &sha2_response(&request, "app", "pw", &scramble)))
        .unwrap();
    assert_eq!(read_packet(&mut tls), (3, vec![0x01, 0x03]));
    assert_eq!(read_packet(&mut tls).1[0], 0);
    let (mut tcp, scramble) = plain_connect(&running);
    let mut head = CAPS.to_le_bytes().to_vec();
    head.extend_from_slice(&(16u32 << 20).to_le_bytes());
    head.push(45);
    head.extend_from_slice(&[0; 23]);
    tcp.write_all(&framed(1, &sha2_response(&head, "app", "pw", &scramble)))
        .unwrap();
    assert_eq!(read_packet(&mut tcp), (2, vec![0x01, 0x03]));
    assert_eq!(read_packet(&mut tcp).1[0], 0);
    // A wrong password on the fast path.
    let (mut tcp, scramble) = plain_connect(&running);
    tcp.write_all(&framed(1, &sha2_response(&head, "app", "nope", &scramble)))
        .unwrap();
    let (_, err) = read_packet(&mut tcp);
    assert_eq!((err[0], u16::from_le_bytes([err[1], err[2]])), (0xff, 1045));
    // Not seen yet, no TLS: switched to mysql_native_password.
    let (mut tcp, scramble) = plain_connect(&running);
    tcp.write_all(&framed(1, &sha2_response(&head, "other", "x", &scramble)))
        .unwrap();
    let (_, switch) = read_packet(&mut tcp);
    assert_eq!(switch[0], 0xfe);
    assert!(switch.starts_with(b"\xfemysql_native_password\0"));
    let token = quarry_core::accounts::native_token("x", &scramble);
    tcp.write_all(&framed(3, &token)).unwrap();
    assert_eq!(read_packet(&mut tcp).1[0], 0);
    // A changed password is not taken on the fast path.
    assert_eq!(
        root.query_rows(b"ALTER USER 'app'@'%' IDENTIFIED BY 'new'"),
        Ok(vec![])
    );
    let (mut tcp, scramble) = plain_connect(&running);
    tcp.write_all(&framed(1, &sha2_response(&head, "app", "pw", &scramble)))
        .unwrap();
    assert_eq!(
        read_packet(&mut tcp).1[0],
        0xfe,
        "switched: the cache is stale"
    );
    running.stop();
}

/// Certificate files given (`--ssl-cert`, `--ssl-key`, `--ssl-ca`) are served and shown,
/// and none is made; `--tls-version` narrows what is offered, and an old version stops
/// the start; `--skip-ssl` offers no TLS in the greeting.
#[test]
fn given_certificates_versions_and_skip_ssl() {
    use quarry_core::quarry_common::Value;
    let a = Running::start("tls-a", &[]);
    let file = |f: &str| Value::Str(a.dir.join(f).display().to_string());
    let opts = quarry_core::Options {
        tls: vec![
            ("ssl_cert".into(), file("server-cert.pem")),
            ("ssl_key".into(), file("server-key.pem")),
            ("ssl_ca".into(), file("ca.pem")),
            ("tls_version".into(), Value::Str("TLSv1.2".into())),
        ],
        ..Default::default()
    };
    let b = Running::start_with("tls-b", &[], &opts);
    assert!(
        !b.dir.join("ca.pem").exists(),
        "nothing made when files are given"
    );
    let mut tls = tls_login_trusting(&b, &a.dir, "root", "").expect("a's certificate");
    assert_eq!(
        status(&mut tls, "SHOW STATUS LIKE 'Ssl_version'"),
        "TLSv1.2"
    );
    assert_eq!(
        status(&mut tls, "SHOW VARIABLES LIKE 'ssl_cert'"),
        a.dir.join("server-cert.pem").display().to_string()
    );
    drop(tls);
    b.stop();

    let old = quarry_core::Options {
        tls: vec![("tls_version".into(), Value::Str("TLSv1.1".into()))],
        ..Default::default()
    };
    let dir = std::env::temp_dir().join(format!("quarry-tls-old-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let db = quarry_core::Database::open_with(&dir, &old).unwrap();
    assert!(quarry_server::Server::bind(db.clone(), "127.0.0.1:0").is_err());
    let plain = quarry_server::Server::bind_without_tls(db, "127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(plain.local_addr().unwrap()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // The greeting is sent at accept, which `run` does: read it from a server thread.
    let plain = Arc::new(plain);
    let stop = plain.stop_handle();
    let t = {
        let p = plain.clone();
        std::thread::spawn(move || p.run())
    };
    let (_, hello) = read_packet(&mut c);
    let v = 1 + hello[1..].iter().position(|&b| b == 0).unwrap() + 1;
    let caps_lo = u16::from_le_bytes([hello[v + 13], hello[v + 14]]) as u32;
    assert_eq!(caps_lo & CLIENT_SSL, 0, "no TLS offered with --skip-ssl");
    drop(c);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    t.join().unwrap().unwrap();
    drop(plain);
    let _ = std::fs::remove_dir_all(&dir);
    a.stop();
}
