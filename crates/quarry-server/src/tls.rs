//! TLS for client connections: the server's certificate (the files `ssl_cert` / `ssl_key`
//! name, or a CA and a server certificate made in the datadir at first start, as MySQL's
//! `auto_generate_certs` does), the rustls configuration, and the socket a connection
//! reads and writes — TCP, or TLS over it once the client asked with an SSL request.
//!
//! Owns: certificate files and the TLS handshake. Must not touch: packets (the protocol
//! crate), sessions, authentication.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use quarry_core::Database;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

/// The files MySQL's auto_generate_certs writes, here in the datadir.
const CA_CERT: &str = "ca.pem";
const CA_KEY: &str = "ca-key.pem";
const SERVER_CERT: &str = "server-cert.pem";
const SERVER_KEY: &str = "server-key.pem";

/// A client connection's transport.
pub enum Socket {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ServerConnection, TcpStream>>),
    /// Only while a connection changes from one to the other.
    Switching,
}

impl Socket {
    /// The TCP connection underneath (timeouts, peeks, the descriptor).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Socket::Plain(s) => s,
            Socket::Tls(t) => &t.sock,
            Socket::Switching => unreachable!("a socket is used only once switched"),
        }
    }

    /// Has TLS decrypted bytes not read yet? A connection parked on its socket would
    /// not wake for them.
    pub fn holds_unread(&mut self) -> bool {
        match self {
            Socket::Tls(t) => t
                .conn
                .process_new_packets()
                .map_or(true, |io| io.plaintext_bytes_to_read() > 0),
            _ => false,
        }
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Socket::Tls(_))
    }

    /// The protocol version and cipher suite in OpenSSL's names (`Ssl_version`,
    /// `Ssl_cipher`), as MariaDB reports them.
    pub fn tls_info(&self) -> Option<(String, String)> {
        let Socket::Tls(t) = self else { return None };
        let version = match t.conn.protocol_version()? {
            rustls::ProtocolVersion::TLSv1_3 => "TLSv1.3",
            rustls::ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "unknown",
        };
        let suite = t.conn.negotiated_cipher_suite()?.suite();
        Some((version.into(), openssl_name(suite).into()))
    }
}

/// rustls's cipher suites as OpenSSL (and so MariaDB's `Ssl_cipher`) names them.
fn openssl_name(s: rustls::CipherSuite) -> &'static str {
    use rustls::CipherSuite as C;
    match s {
        C::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        C::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        C::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-ECDSA-CHACHA20-POLY1305",
        C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        _ => "unknown",
    }
}

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Socket::Plain(s) => s.read(buf),
            Socket::Tls(t) => t.read(buf),
            Socket::Switching => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Plain(s) => s.write(buf),
            Socket::Tls(t) => t.write(buf),
            Socket::Switching => Err(io::ErrorKind::NotConnected.into()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Socket::Plain(s) => s.flush(),
            Socket::Tls(t) => t.flush(),
            Socket::Switching => Err(io::ErrorKind::NotConnected.into()),
        }
    }
}

impl AsRawFd for Socket {
    fn as_raw_fd(&self) -> RawFd {
        self.tcp().as_raw_fd()
    }
}

/// Run the TLS handshake on `tcp` (the client sent its SSL request), by `deadline`;
/// `early` is what was already read from the socket past the request.
pub fn accept(
    tcp: TcpStream,
    early: &[u8],
    config: Arc<ServerConfig>,
    deadline: Option<Instant>,
) -> io::Result<Socket> {
    let mut conn = ServerConnection::new(config).map_err(io::Error::other)?;
    let mut rest = early;
    while !rest.is_empty() {
        conn.read_tls(&mut rest)?;
        conn.process_new_packets()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    }
    let mut tcp = tcp;
    while conn.is_handshaking() {
        match conn.complete_io(&mut tcp) {
            Ok(_) => {}
            // The socket's read timeout is a slice of the handshake's time.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(Socket::Tls(Box::new(StreamOwned::new(conn, tcp))))
}

fn err(what: impl std::fmt::Display) -> String {
    what.to_string()
}

/// Write `text` to `path` readable by the owner only (a private key), or by anyone.
fn write_file(path: &Path, text: &str, private: bool) -> Result<(), String> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if private { 0o600 } else { 0o644 })
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// A CA and a server certificate it signed, in `dir` (when there is no server
/// certificate there yet): a client given `ca.pem` can check the server's.
fn generate(dir: &Path) -> Result<(), String> {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, KeyUsagePurpose};
    let ca_key = KeyPair::generate().map_err(err)?;
    let mut ca = CertificateParams::default();
    ca.distinguished_name.push(
        DnType::CommonName,
        "Quarry_Server_Auto_Generated_CA_Certificate",
    );
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let (from, to) = validity();
    ca.not_before = from;
    ca.not_after = to;
    let ca_cert = ca.self_signed(&ca_key).map_err(err)?;
    let issuer = rcgen::Issuer::new(ca, &ca_key);
    let key = KeyPair::generate().map_err(err)?;
    let mut server = CertificateParams::new(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .map_err(err)?;
    server.distinguished_name.push(
        DnType::CommonName,
        "Quarry_Server_Auto_Generated_Server_Certificate",
    );
    server.not_before = from;
    server.not_after = to;
    // What strict verifiers (Python's ssl, OpenSSL's -x509_strict) look for.
    server.use_authority_key_identifier_extension = true;
    server.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    server.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let cert = server.signed_by(&key, &issuer).map_err(err)?;
    write_file(&dir.join(CA_KEY), &ca_key.serialize_pem(), true)?;
    write_file(&dir.join(CA_CERT), &ca_cert.pem(), false)?;
    write_file(&dir.join(SERVER_KEY), &key.serialize_pem(), true)?;
    // Written last: its presence says the set is whole.
    write_file(&dir.join(SERVER_CERT), &cert.pem(), false)
}

/// Ten years from yesterday (MySQL's auto-generated certificates also last ten years).
fn validity() -> (time::OffsetDateTime, time::OffsetDateTime) {
    let now = time::OffsetDateTime::now_utc();
    let day = time::Duration::days(1);
    (now - day, now + day * 3650)
}

/// What TLS the server offers, from the globals `ssl_cert`, `ssl_key`, `ssl_ca`,
/// `tls_version` (set from the command line or config file); with no certificate named,
/// the datadir's generated one. The globals are set to the files in use, and `have_ssl`
/// to YES.
pub fn setup(db: &Database) -> Result<Option<Arc<ServerConfig>>, String> {
    use quarry_core::quarry_common::Value;
    let text = |name: &str| {
        db.global(name)
            .filter(|v| !v.is_null())
            .map(|v| v.as_str_lossy().to_string())
            .filter(|v| !v.is_empty())
    };
    let dir = db.datadir();
    let (cert, key, ca) = match (text("ssl_cert"), text("ssl_key")) {
        (Some(c), Some(k)) => (
            PathBuf::from(c),
            PathBuf::from(k),
            text("ssl_ca").map(PathBuf::from),
        ),
        (None, None) => {
            if !dir.join(SERVER_CERT).exists() {
                // A crash between the files leaves some without the last: made again.
                for f in [CA_KEY, CA_CERT, SERVER_KEY] {
                    let _ = std::fs::remove_file(dir.join(f));
                }
                generate(dir)?;
            }
            (
                dir.join(SERVER_CERT),
                dir.join(SERVER_KEY),
                Some(dir.join(CA_CERT)),
            )
        }
        _ => return Err("ssl_cert and ssl_key go together".into()),
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .and_then(|it| it.collect())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let private =
        PrivateKeyDer::from_pem_file(&key).map_err(|e| format!("{}: {e}", key.display()))?;
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = {
        let wanted = text("tls_version").unwrap_or_else(|| "TLSv1.2,TLSv1.3".into());
        let mut v = vec![];
        for w in wanted.split(',').map(str::trim) {
            match w {
                "TLSv1.2" => v.push(&rustls::version::TLS12),
                "TLSv1.3" => v.push(&rustls::version::TLS13),
                "TLSv1.0" | "TLSv1.1" => {
                    return Err(format!(
                        "tls_version {w} is not offered (too old to be safe)"
                    ))
                }
                other => return Err(format!("unknown tls_version {other}")),
            }
        }
        v
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(err)?
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .map_err(err)?;
    db.set_global("have_ssl", Value::Str("YES".into()));
    db.set_global("have_openssl", Value::Str("YES".into()));
    db.set_global("ssl_cert", Value::Str(cert.display().to_string()));
    db.set_global("ssl_key", Value::Str(key.display().to_string()));
    if let Some(ca) = ca {
        db.set_global("ssl_ca", Value::Str(ca.display().to_string()));
    }
    Ok(Some(Arc::new(config)))
}
