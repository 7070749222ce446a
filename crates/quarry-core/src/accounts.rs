//! The account table: `<datadir>/accounts.qacct`, one `user<TAB>host<TAB>hash<TAB>attributes`
//! per line (version 2; version 1 had no attributes, and reads as none set).
//!
//! `hash` is SHA1(SHA1(password)) in hex, as MySQL's `mysql_native_password` stores it (empty
//! = no password). The default account is `root`@`localhost` without a password, which
//! matches loopback connections only. Privileges are not modelled yet: every account may do
//! everything (COMPAT.md).

use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use quarry_common::{Error, Result};
use quarry_sql::{AccountOptions, Secret};
use sha1::{Digest, Sha1};

const HEADER: &str =
    "# quarry accounts v2: user<TAB>host<TAB>sha1(sha1(password)) hex<TAB>attributes";

#[derive(Debug, Clone, PartialEq)]
pub struct Account {
    pub user: String,
    pub host: String,
    /// SHA1(SHA1(password)); empty for no password.
    pub hash2: Vec<u8>,
    /// ACCOUNT LOCK: no login at all.
    pub locked: bool,
    /// WITH MAX_USER_CONNECTIONS (0: no limit).
    pub max_user_connections: u32,
    /// PASSWORD EXPIRE: a login may only SET PASSWORD (which ends it).
    pub expired: bool,
}

impl Account {
    fn new(user: &str, host: &str, hash2: Vec<u8>) -> Account {
        Account {
            user: user.into(),
            host: host.into(),
            hash2,
            locked: false,
            max_user_connections: 0,
            expired: false,
        }
    }

    fn apply(&mut self, o: &AccountOptions) {
        if let Some(l) = o.locked {
            self.locked = l;
        }
        if let Some(n) = o.max_user_connections {
            self.max_user_connections = n;
        }
        if o.expire {
            self.expired = true;
        }
    }

    /// The statement that makes this account again (SHOW CREATE USER), as MariaDB writes
    /// it.
    pub fn create_statement(&self) -> String {
        let mut s = format!(
            "CREATE USER `{}`@`{}`",
            self.user.replace('`', "``"),
            self.host.replace('`', "``")
        );
        if !self.hash2.is_empty() {
            s.push_str(&format!(
                " IDENTIFIED BY PASSWORD '*{}'",
                hex(&self.hash2).to_ascii_uppercase()
            ));
        }
        if self.max_user_connections > 0 {
            s.push_str(&format!(
                " WITH MAX_USER_CONNECTIONS {}",
                self.max_user_connections
            ));
        }
        if self.locked {
            s.push_str(" ACCOUNT LOCK");
        }
        if self.expired {
            s.push_str(" PASSWORD EXPIRE");
        }
        s
    }

    /// The fourth column: `locked`, `max_user_connections=N`, `expired`, comma-separated.
    fn attributes(&self) -> String {
        let mut a = vec![];
        if self.locked {
            a.push("locked".to_string());
        }
        if self.max_user_connections > 0 {
            a.push(format!(
                "max_user_connections={}",
                self.max_user_connections
            ));
        }
        if self.expired {
            a.push("expired".to_string());
        }
        a.join(",")
    }

    fn set_attributes(&mut self, text: &str) -> Option<()> {
        for a in text.split(',').filter(|a| !a.is_empty()) {
            match a.split_once('=') {
                None if a == "locked" => self.locked = true,
                None if a == "expired" => self.expired = true,
                Some(("max_user_connections", n)) => self.max_user_connections = n.parse().ok()?,
                _ => return None,
            }
        }
        Some(())
    }
}

/// SHA1(SHA1(password)) from `IDENTIFIED BY PASSWORD '*hex'`; 1372 unless it is a star and
/// 40 hex digits (or empty: no password), as MariaDB.
fn hash_from_text(text: &str) -> Result<Vec<u8>> {
    if text.is_empty() {
        return Ok(vec![]);
    }
    text.strip_prefix('*')
        .filter(|h| h.len() == 40)
        .and_then(unhex)
        .ok_or_else(|| {
            Error::new(
                1372,
                "Password hash should be a 41-digit hexadecimal number",
            )
        })
}

fn hash_of(secret: &Secret) -> Result<Option<Vec<u8>>> {
    Ok(match secret {
        Secret::None => None,
        Secret::Password(p) => Some(password_hash2(p)),
        Secret::Hash(h) => Some(hash_from_text(h)?),
    })
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
        let mut fresh = false;
        let list = match std::fs::read_to_string(&path) {
            Ok(text) => text
                .lines()
                .filter(|l| !l.starts_with('#') && !l.is_empty())
                .map(|l| {
                    let mut f = l.split('\t');
                    let (u, h, p, attrs) = (
                        f.next().unwrap_or(""),
                        f.next().unwrap_or(""),
                        f.next().unwrap_or(""),
                        f.next().unwrap_or(""),
                    );
                    let hash2 = unhex(p).ok_or_else(|| Error::corrupt(path.display()))?;
                    let mut a = Account::new(u, h, hash2);
                    a.set_attributes(attrs)
                        .ok_or_else(|| Error::corrupt(path.display()))?;
                    Ok(a)
                })
                .collect::<Result<Vec<_>>>()?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fresh = true;
                vec![Account::new("root", "localhost", vec![])]
            }
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let a = Accounts {
            path,
            list: RwLock::new(list),
        };
        // Written at the first start only: a version 1 file stays as it is until an
        // account changes (it reads the same), and a start does not rewrite and fsync it.
        if fresh {
            a.save()?;
        }
        Ok(a)
    }

    fn save(&self) -> Result<()> {
        let mut text = format!("{HEADER}\n");
        for a in self.list.read().iter() {
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\n",
                a.user,
                a.host,
                hex(&a.hash2),
                a.attributes()
            ));
        }
        // On disk before the rename, and the rename on disk before the statement is
        // answered: a power loss leaves the old file or the new one, never an empty one
        // (which would leave the server without its root account).
        let tmp = self.path.with_extension("tmp");
        let io = |p: &Path, e| Error::io(p.display(), e);
        let mut f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
        std::io::Write::write_all(&mut f, text.as_bytes()).map_err(|e| io(&tmp, e))?;
        f.sync_all().map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &self.path).map_err(|e| io(&self.path, e))?;
        if let Some(dir) = self.path.parent() {
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(|e| io(dir, e))?;
        }
        Ok(())
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
        secret: &Secret,
        opts: &AccountOptions,
        if_not_exists: bool,
    ) -> Result<bool> {
        let hash2 = hash_of(secret)?.unwrap_or_default();
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
        let mut a = Account::new(user, host, hash2);
        a.apply(opts);
        list.push(a);
        drop(list);
        self.save()?;
        Ok(true)
    }

    /// ALTER USER: the password when given, and the options; false when the account does
    /// not exist and `if_exists` (else 1396).
    pub fn alter(
        &self,
        user: &str,
        host: &str,
        secret: &Secret,
        opts: &AccountOptions,
        if_exists: bool,
    ) -> Result<bool> {
        let hash2 = hash_of(secret)?;
        let mut list = self.list.write();
        let Some(a) = list.iter_mut().find(|a| a.user == user && a.host == host) else {
            if if_exists {
                return Ok(false);
            }
            return Err(Error::new(
                1396,
                format!("Operation ALTER USER failed for '{user}'@'{host}'"),
            ));
        };
        if let Some(h) = hash2 {
            a.hash2 = h;
            a.expired = false;
        }
        a.apply(opts);
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
        a.expired = false;
        drop(list);
        self.save()
    }

    /// The account `user`@`host` exactly (no host matching), or 1133.
    pub fn get(&self, user: &str, host: &str) -> Result<Account> {
        self.list
            .read()
            .iter()
            .find(|a| a.user == user && a.host == host)
            .cloned()
            .ok_or_else(|| Error::new(1133, "Can't find any matching row in the user table"))
    }

    pub fn list(&self) -> Vec<Account> {
        self.list.read().clone()
    }
}

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

/// Check a `mysql_native_password` token against the stored SHA1(SHA1(password)).
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

    /// Version 2 keeps ACCOUNT LOCK and MAX_USER_CONNECTIONS across a reopen; a version 1
    /// file (three columns, as the previous main wrote it) reads as neither set.
    #[test]
    fn account_attributes_survive_a_reopen_and_v1_files_still_open() {
        let dir = std::env::temp_dir().join(format!("quarry-acct-v2-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("accounts.qacct"),
            "# quarry accounts v1: user<TAB>host<TAB>sha1(sha1(password)) hex\n\
             root\tlocalhost\t\napp\t%\t2470c0c06dee42fd1618bb99005adca2ec9d1e19\n",
        )
        .unwrap();
        let a = Accounts::open(&dir).unwrap();
        let app = a.find("app", "10.0.0.1").unwrap();
        assert_eq!(app.hash2, password_hash2("password"));
        assert!(!app.locked && app.max_user_connections == 0);
        let opts = AccountOptions {
            max_user_connections: Some(3),
            locked: Some(true),
            expire: true,
        };
        assert!(a.alter("app", "%", &Secret::None, &opts, false).unwrap());
        drop(a);
        let text = std::fs::read_to_string(dir.join("accounts.qacct")).unwrap();
        assert!(text.starts_with("# quarry accounts v2"), "{text}");
        let a = Accounts::open(&dir).unwrap();
        let app = a.find("app", "10.0.0.1").unwrap();
        assert!(app.locked && app.expired);
        assert_eq!(app.max_user_connections, 3);
        assert_eq!(
            app.hash2,
            password_hash2("password"),
            "ALTER without a password keeps it"
        );
        std::fs::write(dir.join("accounts.qacct"), "app\t%\t\tfrozen\n").unwrap();
        assert!(
            Accounts::open(&dir).is_err(),
            "an unknown attribute is damage"
        );
        std::fs::remove_dir_all(&dir).unwrap();
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
        let pw = Secret::Password("pw".into());
        let none = AccountOptions::default();
        a.create("app", "%", &pw, &none, false).unwrap();
        assert_eq!(
            a.create("app", "%", &pw, &none, false).unwrap_err().code,
            1396
        );
        drop(a);
        let a = Accounts::open(&dir).unwrap();
        assert_eq!(
            a.find("app", "10.1.2.3").unwrap().hash2,
            password_hash2("pw")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
