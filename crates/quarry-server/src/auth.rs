//! The login exchange after the handshake response: mysql_native_password,
//! caching_sha2_password for clients that answer with it (MySQL 8's connectors), and
//! MariaDB's ed25519 for accounts identified with it (the client signs a 32-byte nonce).
//!
//! caching_sha2_password: the fast path (a scramble of SHA-256s) works once a full
//! authentication has shown the server the password since it started (MySQL's cache
//! works the same way); a full authentication takes the password itself, over TLS only.
//! A client without TLS that the server cannot check fast is switched to
//! mysql_native_password (the RSA key exchange MySQL offers there is not built).
//! Owns: the exchange's packets. Must not touch: accounts (the core keeps them).

use std::io;

use quarry_core::accounts::{verify_sha2, Account};
use quarry_core::Database;
use quarry_protocol::{Conn, HandshakeResponse};

use crate::tls::Socket;

const NATIVE: &str = "mysql_native_password";
const SHA2: &str = "caching_sha2_password";
/// MariaDB's ed25519 plugin, as the client side names it.
const ED25519: &str = "client_ed25519";
/// caching_sha2_password's "more data" replies.
const FAST_AUTH_OK: [u8; 2] = [0x01, 0x03];
const PERFORM_FULL_AUTH: [u8; 2] = [0x01, 0x04];

/// How the client proved (or failed to prove) it knows the password.
pub(crate) struct Verdict {
    pub ok: bool,
    /// It sent a password (the "using password: YES" of 1045).
    pub with_password: bool,
}

/// Ask for the native plugin's answer (AuthSwitchRequest) and read it.
fn switch_to_native(conn: &mut Conn<Socket>, scramble: &[u8; 20]) -> io::Result<Vec<u8>> {
    let mut sw = vec![0xfe];
    sw.extend_from_slice(NATIVE.as_bytes());
    sw.push(0);
    sw.extend_from_slice(scramble);
    sw.push(0);
    conn.push(&sw);
    conn.flush()?;
    conn.read_packet()
}

/// Run the exchange for `resp` and judge it against `account` (None: no such account,
/// which fails the same way a wrong password does). `wait` runs just before the judgment
/// (the failed-login delay).
pub(crate) fn authenticate(
    conn: &mut Conn<Socket>,
    db: &Database,
    resp: &HandshakeResponse,
    scramble: &[u8; 20],
    account: Option<&Account>,
    wait: impl FnOnce(),
) -> io::Result<Verdict> {
    let mut auth = resp.auth.clone();
    if auth == [0] {
        auth.clear();
    }
    // An ed25519 account is asked to sign a fresh nonce, whatever the client answered.
    if let Some(key) = account.and_then(|a| a.ed25519) {
        let mut nonce = [0u8; 32];
        nonce[..20].copy_from_slice(&quarry_protocol::scramble());
        nonce[20..].copy_from_slice(&quarry_protocol::scramble()[..12]);
        let mut sw = vec![0xfe];
        sw.extend_from_slice(ED25519.as_bytes());
        sw.push(0);
        sw.extend_from_slice(&nonce);
        conn.push(&sw);
        conn.flush()?;
        let signature = conn.read_packet()?;
        wait();
        return Ok(Verdict {
            ok: quarry_core::ed25519::verify(&key, &nonce, &signature),
            with_password: !signature.is_empty(),
        });
    }
    let plugin = resp.plugin.as_deref().unwrap_or(NATIVE);
    if plugin == SHA2 && !auth.is_empty() {
        let cached = account.and_then(|a| db.accounts.sha2_cached(a));
        if let Some(stage2) = cached {
            wait();
            let ok = verify_sha2(&auth, scramble, &stage2);
            if ok {
                conn.push(&FAST_AUTH_OK);
            }
            return Ok(Verdict {
                ok,
                with_password: true,
            });
        }
        if conn.stream.is_tls() {
            conn.push(&PERFORM_FULL_AUTH);
            conn.flush()?;
            let clear = conn.read_packet()?;
            let password =
                String::from_utf8_lossy(clear.strip_suffix(&[0]).unwrap_or(&clear)).into_owned();
            wait();
            let ok = account
                .is_some_and(|a| quarry_core::accounts::password_hash2(&password) == a.hash2);
            if let (true, Some(a)) = (ok, account) {
                db.accounts.remember_sha2(a, &password);
            }
            return Ok(Verdict {
                ok,
                with_password: !password.is_empty(),
            });
        }
    }
    // Any other plugin with data is answered again as mysql_native_password; an empty
    // answer (no password) needs no switch.
    if plugin != NATIVE && !auth.is_empty() {
        auth = switch_to_native(conn, scramble)?;
        if auth == [0] {
            auth.clear();
        }
    }
    wait();
    Ok(Verdict {
        ok: account.is_some_and(|a| a.accepts_native(&auth, scramble)),
        with_password: !auth.is_empty(),
    })
}
