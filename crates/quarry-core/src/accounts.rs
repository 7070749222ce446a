//! The account table: `<datadir>/accounts.qacct`, one `user<TAB>host<TAB>hash` per line.
//!
//! `hash` is SHA1(SHA1(password)) in hex, as MySQL's `mysql_native_password` stores it (empty
//! = no password). The default account is `root`@`localhost` without a password, which
//! matches loopback connections only. Privileges are not modelled yet: every account may do
//! everything (COMPAT.md).

use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use quarry_common::{Error, Result};
use sha1::{Digest, Sha1};

const HEADER: &str = "# quarry accounts v1: user<TAB>host<TAB>sha1(sha1(password)) hex";

#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub user: String,
    pub host: String,
    /// SHA1(SHA1(password)); empty for no password.
    pub hash2: Vec<u8>,
}

pub struct Accounts {
    path: PathBuf,
    list: RwLock<Vec<Account>>,
}

pub fn password_hash2(password: &str) -> Vec<u8> {
    if password.is_empty() {
        return vec![];
    }
    Sha1::digest(Sha1::digest(password.as_bytes())).to_vec()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
        .collect()
}

/// Does a client host match an account host (`%`, `localhost` for loopback, exact)?
fn host_matches(pattern: &str, client: &str) -> bool {
    let loopback = client == "localhost" || is_loopback(client);
    pattern == "%"
        || pattern == client
        || (pattern == "localhost" && loopback)
        || (pattern == "127.0.0.1" && loopback)
}

/// 127.0.0.0/8, ::1, and either as an IPv4-mapped IPv6 address.
fn is_loopback(client: &str) -> bool {
    match client.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

impl Accounts {
    pub fn open(datadir: &Path) -> Result<Accounts> {
        let path = datadir.join("accounts.qacct");
        let list = match std::fs::read_to_string(&path) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(|l| {
                    let mut f = l.split('\t');
                    let (u, h, p) = (
                        f.next().unwrap_or(""),
                        f.next().unwrap_or(""),
                        f.next().unwrap_or(""),
                    );
                    let hash2 = unhex(p).ok_or_else(|| Error::corrupt(path.display()))?;
                    Ok(Account {
                        user: u.into(),
                        host: h.into(),
                        hash2,
                    })
                })
                .collect::<Result<Vec<_>>>()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                vec![Account {
                    user: "root".into(),
                    host: "localhost".into(),
                    hash2: vec![],
                }]
            }
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let a = Accounts {
            path,
            list: RwLock::new(list),
        };
        a.save()?;
        Ok(a)
    }

    fn save(&self) -> Result<()> {
        let mut text = format!("{HEADER}\n");
        for a in self.list.read().iter() {
            text.push_str(&format!("{}\t{}\t{}\n", a.user, a.host, hex(&a.hash2)));
        }
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| Error::io(tmp.display(), e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| Error::io(self.path.display(), e))
    }

    /// The account a login as `user` from `client_host` uses, most specific host first.
    pub fn find(&self, user: &str, client_host: &str) -> Option<Account> {
        let list = self.list.read();
        let mut hits: Vec<&Account> = list
            .iter()
            .filter(|a| a.user == user && host_matches(&a.host, client_host))
            .collect();
        hits.sort_by_key(|a| a.host == "%");
        hits.first().map(|a| (*a).clone())
    }

    pub fn create(
        &self,
        user: &str,
        host: &str,
        password: &str,
        if_not_exists: bool,
    ) -> Result<bool> {
        let mut list = self.list.write();
        if list.iter().any(|a| a.user == user && a.host == host) {
            if if_not_exists {
                return Ok(false);
            }
            return Err(Error::new(
                1396,
                format!("Operation CREATE USER failed for '{user}'@'{host}'"),
            ));
        }
        list.push(Account {
            user: user.into(),
            host: host.into(),
            hash2: password_hash2(password),
        });
        drop(list);
        self.save()?;
        Ok(true)
    }

    pub fn drop_user(&self, user: &str, host: &str, if_exists: bool) -> Result<()> {
        let mut list = self.list.write();
        let before = list.len();
        list.retain(|a| !(a.user == user && a.host == host));
        if list.len() == before && !if_exists {
            return Err(Error::new(
                1396,
                format!("Operation DROP USER failed for '{user}'@'{host}'"),
            ));
        }
        drop(list);
        self.save()
    }

    pub fn set_password(&self, user: &str, host: &str, password: &str) -> Result<()> {
        let mut list = self.list.write();
        let a = list
            .iter_mut()
            .find(|a| a.user == user && a.host == host)
            .ok_or_else(|| {
                Error::new(
                    1133,
                    format!("Can't find any matching row in the user table for '{user}'@'{host}'"),
                )
            })?;
        a.hash2 = password_hash2(password);
        drop(list);
        self.save()
    }

    pub fn list(&self) -> Vec<Account> {
        self.list.read().clone()
    }
}

/// Check a `mysql_native_password` token against the stored SHA1(SHA1(password)).
/// What a client sends for `password` under mysql_native_password:
/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))); nothing for no password.
pub fn native_token(password: &str, scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return vec![];
    }
    let h1 = Sha1::digest(password.as_bytes());
    let mut m = Sha1::new();
    m.update(scramble);
    m.update(Sha1::digest(h1));
    h1.iter()
        .zip(m.finalize().iter())
        .map(|(a, b)| a ^ b)
        .collect()
}

pub fn verify_native(token: &[u8], scramble: &[u8], hash2: &[u8]) -> bool {
    if hash2.is_empty() {
        return token.is_empty();
    }
    if token.len() != 20 {
        return false;
    }
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(hash2);
    let mask = h.finalize();
    let candidate: Vec<u8> = token.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
    Sha1::digest(&candidate).as_slice() == hash2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_round_trip() {
        let scramble = b"abcdefghijklmnopqrst";
        let pw = "s3cret";
        let token = native_token(pw, scramble);
        assert!(verify_native(&token, scramble, &password_hash2(pw)));
        assert!(!verify_native(&token, scramble, &password_hash2("other")));
        assert!(verify_native(&[], scramble, &[]));
        assert!(!verify_native(&token, scramble, &[]));
    }

    #[test]
    fn hosts_match_most_specific_first() {
        let dir = std::env::temp_dir().join(format!("quarry-acct-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = Accounts::open(&dir).unwrap();
        // Loopback in every spelling is localhost (::ffff:127.0.0.1 was not).
        for lo in [
            "127.0.0.1",
            "127.0.1.1",
            "::1",
            "::ffff:127.0.0.1",
            "localhost",
        ] {
            assert!(a.find("root", lo).is_some(), "{lo}");
        }
        for remote in ["10.0.0.1", "::ffff:10.0.0.1", "fe80::1", "128.0.0.1"] {
            assert!(
                a.find("root", remote).is_none(),
                "root without a password is loopback only: {remote}"
            );
        }
        a.create("app", "%", "pw", false).unwrap();
        assert_eq!(a.create("app", "%", "pw", false).unwrap_err().code, 1396);
        drop(a);
        let a = Accounts::open(&dir).unwrap();
        assert_eq!(
            a.find("app", "10.1.2.3").unwrap().hash2,
            password_hash2("pw")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
