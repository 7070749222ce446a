//! The account table: `<datadir>/accounts.qacct`, the accounts, roles and every grant.
//!
//! Version 3 (this one) is tab-separated lines, each led by its kind: `user` (name, host,
//! hash, attributes, global privileges), `default_role`, and the grant lines of
//! `privileges.rs`. Versions 1 (`user host hash`) and 2 (with attributes) had no
//! privileges; they are read and rewritten as version 3 at the first start (`parse_v2`
//! says what the accounts get).
//!
//! `hash` is SHA1(SHA1(password)) in hex, as MySQL's `mysql_native_password` stores it (empty
//! = no password). The default account is `root`@`localhost` without a password and with
//! every privilege, which matches loopback connections only. A role is an account with an
//! empty host that cannot log in.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;
use quarry_common::{Error, Result};
use quarry_sql::{AccountOptions, PasswordLifetime, Secret};
use sha1::{Digest, Sha1};

use crate::privileges::{
    privs_from_text, privs_text, quote, Effective, Grantee, Grants, Level, Privs, GLOBAL_ALL, GRANT,
};
use quarry_common::field::{escape, unescape};

const HEADER: &str = "# quarry accounts v3: kind<TAB>fields (see accounts.rs)";

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
    /// Global privileges (`ON *.*`).
    pub privs: Privs,
    /// A role (CREATE ROLE): no login; its grants go to whoever has it active.
    pub role: bool,
    /// SET DEFAULT ROLE: active from login.
    pub default_role: Option<String>,
    /// REQUIRE SSL: logins over TLS only.
    pub require_ssl: bool,
    /// IDENTIFIED VIA ed25519: the public key logins are checked with (`hash2` is empty).
    pub ed25519: Option<[u8; 32]>,
    /// PASSWORD EXPIRE INTERVAL / NEVER / DEFAULT.
    pub lifetime: PasswordLifetime,
    /// When the password was last set (seconds since 1970).
    pub password_changed: u64,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
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
            privs: 0,
            role: false,
            default_role: None,
            require_ssl: false,
            ed25519: None,
            lifetime: PasswordLifetime::Default,
            password_changed: now_secs(),
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
        if let Some(r) = o.require_ssl {
            self.require_ssl = r;
        }
        if let Some(l) = o.lifetime {
            self.lifetime = l;
        }
    }

    /// ` IDENTIFIED BY PASSWORD '*HASH' WITH MAX_USER_CONNECTIONS n`, each part when set,
    /// as SHOW CREATE USER and SHOW GRANTS write them.
    fn password_and_limits(&self) -> String {
        let mut s = String::new();
        if let Some(k) = &self.ed25519 {
            s.push_str(&format!(
                " IDENTIFIED VIA ed25519 USING '{}'",
                crate::ed25519::to_text(k)
            ));
        } else if !self.hash2.is_empty() {
            s.push_str(&format!(
                " IDENTIFIED BY PASSWORD '*{}'",
                hex(&self.hash2).to_ascii_uppercase()
            ));
        }
        if self.require_ssl {
            s.push_str(" REQUIRE SSL");
        }
        if self.max_user_connections > 0 {
            s.push_str(&format!(
                " WITH MAX_USER_CONNECTIONS {}",
                self.max_user_connections
            ));
        }
        s
    }

    /// Does a mysql_native_password answer to `scramble` log in to this account? Never
    /// for an ed25519 account: its empty native hash is not "no password".
    pub fn accepts_native(&self, token: &[u8], scramble: &[u8]) -> bool {
        self.ed25519.is_none() && verify_native(token, scramble, &self.hash2)
    }

    /// A new password: its proof, not expired, changed now.
    fn set_credentials(&mut self, c: Credentials) {
        self.hash2 = c.hash2;
        self.ed25519 = c.ed25519;
        self.expired = false;
        self.password_changed = now_secs();
    }

    /// Has the password outlived its lifetime (`default_days`: default_password_lifetime)?
    pub fn password_too_old(&self, default_days: u64, now: u64) -> bool {
        let days = match self.lifetime {
            PasswordLifetime::Never => return false,
            PasswordLifetime::Days(n) => n as u64,
            PasswordLifetime::Default => default_days,
        };
        days > 0 && now.saturating_sub(self.password_changed) >= days * 86_400
    }

    /// ` PASSWORD EXPIRE INTERVAL n DAY` / ` PASSWORD EXPIRE NEVER` (nothing for DEFAULT).
    fn lifetime_text(&self) -> String {
        match self.lifetime {
            PasswordLifetime::Default => String::new(),
            PasswordLifetime::Never => " PASSWORD EXPIRE NEVER".into(),
            PasswordLifetime::Days(n) => format!(" PASSWORD EXPIRE INTERVAL {n} DAY"),
        }
    }

    /// The statements that make this account again (SHOW CREATE USER), as MariaDB writes
    /// them: an expired account with a lifetime takes an ALTER USER for the lifetime.
    pub fn create_statements(&self) -> Vec<String> {
        let name = format!(
            "`{}`@`{}`",
            self.user.replace('`', "``"),
            self.host.replace('`', "``")
        );
        let mut s = format!("CREATE USER {name}");
        s.push_str(&self.password_and_limits());
        if self.locked {
            s.push_str(" ACCOUNT LOCK");
        }
        if !self.expired {
            s.push_str(&self.lifetime_text());
            return vec![s];
        }
        s.push_str(" PASSWORD EXPIRE");
        let mut out = vec![s];
        if self.lifetime != PasswordLifetime::Default {
            out.push(format!("ALTER USER {name}{}", self.lifetime_text()));
        }
        out
    }

    /// The attributes column: `locked`, `max_user_connections=N`, `expired`, `role`,
    /// `require_ssl`, `ed25519=<public key, base64>`, `lifetime=N|never`,
    /// `changed=<seconds since 1970>`, comma-separated.
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
        if self.role {
            a.push("role".to_string());
        }
        if self.require_ssl {
            a.push("require_ssl".to_string());
        }
        if let Some(k) = &self.ed25519 {
            a.push(format!("ed25519={}", crate::ed25519::to_text(k)));
        }
        match self.lifetime {
            PasswordLifetime::Default => {}
            PasswordLifetime::Never => a.push("lifetime=never".into()),
            PasswordLifetime::Days(n) => a.push(format!("lifetime={n}")),
        }
        a.push(format!("changed={}", self.password_changed));
        a.join(",")
    }

    fn set_attributes(&mut self, text: &str) -> Option<()> {
        for a in text.split(',').filter(|a| !a.is_empty()) {
            match a.split_once('=') {
                None if a == "locked" => self.locked = true,
                None if a == "expired" => self.expired = true,
                None if a == "role" => self.role = true,
                None if a == "require_ssl" => self.require_ssl = true,
                Some(("max_user_connections", n)) => self.max_user_connections = n.parse().ok()?,
                Some(("lifetime", "never")) => self.lifetime = PasswordLifetime::Never,
                Some(("lifetime", n)) => self.lifetime = PasswordLifetime::Days(n.parse().ok()?),
                Some(("changed", t)) => self.password_changed = t.parse().ok()?,
                Some(("ed25519", k)) => self.ed25519 = Some(crate::ed25519::from_text(k)?),
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

/// How an account proves its password: SHA1(SHA1(password)) for mysql_native_password,
/// or an ed25519 public key.
#[derive(Debug, Clone, PartialEq)]
struct Credentials {
    hash2: Vec<u8>,
    ed25519: Option<[u8; 32]>,
}

/// What `secret` sets (None: nothing, the password stays).
fn credentials(secret: &Secret) -> Result<Option<Credentials>> {
    let native = |hash2| Credentials {
        hash2,
        ed25519: None,
    };
    let ed = |key| Credentials {
        hash2: vec![],
        ed25519: Some(key),
    };
    Ok(match secret {
        Secret::None => None,
        Secret::Password(p) => Some(native(password_hash2(p))),
        Secret::Hash(h) => Some(native(hash_from_text(h)?)),
        Secret::Ed25519Password(p) => Some(ed(crate::ed25519::public_key(p))),
        Secret::Ed25519Key(k) => Some(ed(crate::ed25519::from_text(k)
            .ok_or_else(|| Error::new(1372, "Password hash should be 43 characters of base64"))?)),
    })
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
pub(crate) fn is_loopback(client: &str) -> bool {
    match client.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Ok(ip) => ip.is_loopback(),
        Err(_) => false,
    }
}

/// The accounts and the grants, changed together (one file holds both).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    pub list: Vec<Account>,
    pub grants: Grants,
}

fn no_user_row() -> Error {
    Error::new(1133, "Can't find any matching row in the user table")
}

impl Store {
    pub fn account(&self, user: &str, host: &str) -> Option<&Account> {
        self.list.iter().find(|a| a.user == user && a.host == host)
    }

    fn account_mut(&mut self, user: &str, host: &str) -> Option<&mut Account> {
        self.list
            .iter_mut()
            .find(|a| a.user == user && a.host == host)
    }

    /// CREATE USER / CREATE ROLE (`role`: host empty); false when it exists and
    /// `if_not_exists` (else 1396).
    pub fn create(
        &mut self,
        user: &str,
        host: &str,
        secret: &Secret,
        opts: &AccountOptions,
        if_not_exists: bool,
        role: bool,
    ) -> Result<bool> {
        let creds = credentials(secret)?;
        if self.account(user, host).is_some() {
            if if_not_exists {
                return Ok(false);
            }
            let what = if role { "CREATE ROLE" } else { "CREATE USER" };
            return Err(Error::operation_failed(what, &grantee_text(user, host)));
        }
        let mut a = Account::new(user, host, vec![]);
        if let Some(c) = creds {
            a.set_credentials(c);
        }
        a.role = role;
        a.apply(opts);
        self.list.push(a);
        Ok(true)
    }

    /// ALTER USER: the password when given, and the options; false when the account does
    /// not exist and `if_exists` (else 1396).
    pub fn alter(
        &mut self,
        user: &str,
        host: &str,
        secret: &Secret,
        opts: &AccountOptions,
        if_exists: bool,
    ) -> Result<bool> {
        let creds = credentials(secret)?;
        let Some(a) = self.account_mut(user, host).filter(|a| !a.role) else {
            if if_exists {
                return Ok(false);
            }
            return Err(Error::operation_failed(
                "ALTER USER",
                &grantee_text(user, host),
            ));
        };
        if let Some(c) = creds {
            a.set_credentials(c);
        }
        a.apply(opts);
        Ok(true)
    }

    /// DROP USER / DROP ROLE, with every grant the account or role held (and the role
    /// from whoever had it); false when it does not exist and `if_exists` (else 1396).
    pub fn drop_account(
        &mut self,
        user: &str,
        host: &str,
        if_exists: bool,
        role: bool,
    ) -> Result<bool> {
        let before = self.list.len();
        self.list
            .retain(|a| !(a.user == user && a.host == host && a.role == role));
        if self.list.len() == before {
            if if_exists {
                return Ok(false);
            }
            let what = if role { "DROP ROLE" } else { "DROP USER" };
            return Err(Error::operation_failed(what, &grantee_text(user, host)));
        }
        self.grants.forget(&(user.to_string(), host.to_string()));
        if role {
            for a in &mut self.list {
                if a.default_role.as_deref() == Some(user) {
                    a.default_role = None;
                }
            }
        }
        Ok(true)
    }

    pub fn set_password(&mut self, user: &str, host: &str, password: &str) -> Result<()> {
        let a = self
            .account_mut(user, host)
            .filter(|a| !a.role)
            .ok_or_else(no_user_row)?;
        // An ed25519 account keeps its plugin: the new password makes its key.
        let c = if a.ed25519.is_some() {
            Credentials {
                hash2: vec![],
                ed25519: Some(crate::ed25519::public_key(password)),
            }
        } else {
            Credentials {
                hash2: password_hash2(password),
                ed25519: None,
            }
        };
        a.set_credentials(c);
        Ok(())
    }

    /// GRANT `privs` (with column privileges) at `level` to an existing account or role
    /// (1133 when there is none).
    pub fn grant(
        &mut self,
        user: &str,
        host: &str,
        level: &Level,
        privs: Privs,
        columns: &[(String, Privs)],
    ) -> Result<()> {
        let a = self.account_mut(user, host).ok_or_else(no_user_row)?;
        if *level == Level::Global {
            a.privs |= privs;
        }
        self.grants
            .grant(&(user.into(), host.into()), level, privs, columns);
        Ok(())
    }

    pub fn revoke(
        &mut self,
        user: &str,
        host: &str,
        level: &Level,
        privs: Privs,
        columns: &[(String, Privs)],
    ) -> Result<()> {
        let a = self
            .account_mut(user, host)
            .ok_or_else(|| Error::no_such_grant(user, host))?;
        if *level == Level::Global {
            a.privs &= !privs;
        }
        self.grants
            .revoke(&(user.into(), host.into()), level, privs, columns)
    }

    /// REVOKE ALL PRIVILEGES, GRANT OPTION FROM …: every privilege at every level, and
    /// the roles granted too (as MariaDB does).
    pub fn revoke_all(&mut self, user: &str, host: &str) -> Result<()> {
        let a = self.account_mut(user, host).ok_or_else(no_user_row)?;
        a.privs = 0;
        let g: Grantee = (user.into(), host.into());
        self.grants.revoke_all(&g);
        self.grants.roles.retain(|(who, _), _| *who != g);
        Ok(())
    }

    pub fn is_role(&self, name: &str) -> bool {
        self.list.iter().any(|a| a.role && a.user == name)
    }

    /// GRANT role TO grantee [WITH ADMIN OPTION]: 1959 for an unknown role, 1133 for an
    /// unknown grantee.
    pub fn grant_role(&mut self, role: &str, user: &str, host: &str, admin: bool) -> Result<()> {
        if !self.is_role(role) {
            return Err(Error::invalid_role(role));
        }
        if self.account(user, host).is_none() {
            return Err(no_user_row());
        }
        let g: Grantee = (user.into(), host.into());
        if g.1.is_empty()
            && (g.0 == role || self.grants.has_role(&(role.into(), String::new()), &g.0))
        {
            return Err(Error::operation_failed("GRANT", &grantee_text(user, host)));
        }
        let e = self.grants.roles.entry((g, role.to_string())).or_default();
        *e |= admin;
        Ok(())
    }

    pub fn revoke_role(&mut self, role: &str, user: &str, host: &str) -> Result<()> {
        if !self.is_role(role) {
            return Err(Error::invalid_role(role));
        }
        let key = ((user.to_string(), host.to_string()), role.to_string());
        if self.grants.roles.remove(&key).is_none() {
            return Err(Error::operation_failed("REVOKE", &grantee_text(user, host)));
        }
        Ok(())
    }

    /// SET DEFAULT ROLE role|NONE FOR user: the role must be granted to the account.
    pub fn set_default_role(&mut self, role: Option<&str>, user: &str, host: &str) -> Result<()> {
        let g: Grantee = (user.into(), host.into());
        if let Some(r) = role {
            if !self.grants.has_role(&g, r) {
                return Err(Error::invalid_role(r));
            }
        }
        let a = self
            .account_mut(user, host)
            .filter(|a| !a.role)
            .ok_or_else(no_user_row)?;
        a.default_role = role.map(str::to_string);
        Ok(())
    }

    /// What `user`@`host` may do with `role` active (its granted roles come with it). A
    /// role no longer granted to the account brings nothing (a default role stays named
    /// after REVOKE, as in MariaDB, and a session may have it active).
    pub fn effective(&self, user: &str, host: &str, role: Option<&str>) -> Effective {
        let me: Grantee = (user.into(), host.into());
        let mut who: Vec<Grantee> = vec![me.clone()];
        let mut global = self.account(user, host).map_or(0, |a| a.privs);
        let role = role.filter(|r| self.grants.has_role(&me, r));
        if let Some(r) = role {
            let rg: Grantee = (r.into(), String::new());
            who.push(rg.clone());
            who.extend(
                self.grants
                    .roles_of(&rg)
                    .into_iter()
                    .map(|r| (r, String::new())),
            );
            for (r, _) in &who[1..] {
                global |= self.account(r, "").map_or(0, |a| a.privs);
            }
        }
        self.grants.effective(global, &who)
    }

    /// SHOW GRANTS FOR an account or role, as MariaDB prints it (1141 for none).
    pub fn show_grants(&self, user: &str, host: &str) -> Result<Vec<String>> {
        let a = self
            .account(user, host)
            .ok_or_else(|| Error::no_such_grant(user, host))?;
        let to = if a.role {
            quote(user)
        } else {
            format!("{}@{}", quote(user), quote(host))
        };
        let mut first = format!(
            "GRANT {} ON *.* TO {to}",
            crate::privileges::global_list(a.privs)
        );
        first.push_str(&a.password_and_limits());
        if a.privs & crate::privileges::GRANT != 0 {
            first.push_str(" WITH GRANT OPTION");
        }
        let g: Grantee = (user.into(), host.into());
        // Roles granted come first, as MariaDB lists them.
        let mut out: Vec<String> = self
            .grants
            .roles
            .iter()
            .filter(|((w, _), _)| *w == g)
            .map(|((_, r), admin)| {
                let opt = if *admin { " WITH ADMIN OPTION" } else { "" };
                format!("GRANT {} TO {to}{opt}", quote(r))
            })
            .collect();
        out.push(first);
        out.extend(self.grants.show_lines(&g, &to));
        if let Some(r) = &a.default_role {
            out.push(format!("SET DEFAULT ROLE {} FOR {to}", quote(r)));
        }
        Ok(out)
    }
}

/// `'user'@'host'`, or a role's `'name'`, as error messages name them.
fn grantee_text(user: &str, host: &str) -> String {
    if host.is_empty() {
        format!("'{user}'")
    } else {
        format!("'{user}'@'{host}'")
    }
}

/// What a full caching_sha2_password authentication showed: the account's
/// SHA1(SHA1(password)) then, and SHA256(SHA256(password)).
type Sha2Seen = (Vec<u8>, [u8; 32]);

pub struct Accounts {
    path: PathBuf,
    store: RwLock<Store>,
    /// caching_sha2_password's fast path: SHA256(SHA256(password)) by account, learnt at
    /// a full authentication (the file keeps no SHA-256 of passwords), with the
    /// SHA1(SHA1(password)) it was learnt under: a changed password makes it stale.
    sha2: parking_lot::Mutex<std::collections::HashMap<Grantee, Sha2Seen>>,
    /// Bumped by every change: sessions re-read their privileges when it moves.
    generation: AtomicU64,
    /// What opening the file found worth telling the operator (accounts an upgrade took
    /// privileges from).
    pub notes: Vec<String>,
}

fn parse_v3(text: &str, path: &Path) -> Result<Store> {
    let bad = || Error::corrupt(path.display());
    let mut st = Store::default();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let f: Vec<String> = l.split('\t').map(unescape).collect();
        match (f[0].as_str(), f.len()) {
            ("user", 6) => {
                let hash2 = unhex(&f[3]).ok_or_else(bad)?;
                let mut a = Account::new(&f[1], &f[2], hash2);
                a.set_attributes(&f[4]).ok_or_else(bad)?;
                a.privs = privs_from_text(&f[5]).ok_or_else(bad)?;
                st.list.push(a);
            }
            ("default_role", 4) => {
                if let Some(a) = st.account_mut(&f[1], &f[2]) {
                    a.default_role = Some(f[3].clone());
                }
            }
            _ => {
                if !crate::privileges::from_line(&mut st.grants, &f).ok_or_else(bad)? {
                    return Err(bad());
                }
            }
        }
    }
    Ok(st)
}

/// Versions 1 and 2: `user host hash [attributes]`, and no privileges (every account
/// could do everything). `root` keeps everything; other accounts start with none, and a
/// note says so — their GRANTs were accepted and ignored, so what they should have is
/// not known, and a server must not go on handing them all of it.
fn parse_v2(text: &str, path: &Path, notes: &mut Vec<String>) -> Result<Store> {
    let mut st = Store::default();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
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
        if u == "root" {
            a.privs = GLOBAL_ALL | GRANT;
        } else {
            notes.push(format!(
                "account '{u}'@'{h}' had every privilege before privileges were kept; it now \
                 has none (USAGE): GRANT it what it needs"
            ));
        }
        st.list.push(a);
    }
    Ok(st)
}

impl Accounts {
    pub fn open(datadir: &Path) -> Result<Accounts> {
        let path = datadir.join("accounts.qacct");
        let mut notes = vec![];
        let mut fresh = false;
        let store = match std::fs::read_to_string(&path) {
            Ok(text) if text.starts_with(HEADER) => parse_v3(&text, &path)?,
            Ok(text) => {
                let st = parse_v2(&text, &path, &mut notes)?;
                // Written as version 3 now: the privileges given here are decided once.
                fresh = true;
                st
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                fresh = true;
                let mut root = Account::new("root", "localhost", vec![]);
                root.privs = GLOBAL_ALL | GRANT;
                Store {
                    list: vec![root],
                    grants: Grants::default(),
                }
            }
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let a = Accounts {
            path,
            store: RwLock::new(store),
            sha2: Default::default(),
            generation: AtomicU64::new(1),
            notes,
        };
        // Written at the first start (or the first of this version) only: a start does
        // not rewrite and fsync it.
        if fresh {
            a.save(&a.store.read())?;
        }
        Ok(a)
    }

    fn save(&self, st: &Store) -> Result<()> {
        let mut text = format!("{HEADER}\n");
        for a in &st.list {
            let f = [
                "user".to_string(),
                escape(&a.user),
                escape(&a.host),
                hex(&a.hash2),
                a.attributes(),
                privs_text(a.privs),
            ];
            text.push_str(&f.join("\t"));
            text.push('\n');
        }
        for a in &st.list {
            if let Some(r) = &a.default_role {
                let f = [
                    "default_role",
                    &escape(&a.user),
                    &escape(&a.host),
                    &escape(r),
                ];
                text.push_str(&f.join("\t"));
                text.push('\n');
            }
        }
        crate::privileges::to_lines(&st.grants, &mut text);
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

    /// Apply `f` to a copy of the accounts and grants and, when it succeeds, write the copy
    /// and put it in place: a statement that fails (or cannot be written) changes nothing.
    pub fn change<T>(&self, f: impl FnOnce(&mut Store) -> Result<T>) -> Result<T> {
        let mut st = self.store.write();
        let mut copy = st.clone();
        let out = f(&mut copy)?;
        if copy != *st {
            self.save(&copy)?;
            *st = copy;
            self.generation.fetch_add(1, Ordering::Release);
        }
        Ok(out)
    }

    /// Read the accounts and grants.
    pub fn read<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        f(&self.store.read())
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The account a login as `user` from `client_host` uses, most specific host first.
    pub fn find(&self, user: &str, client_host: &str) -> Option<Account> {
        let st = self.store.read();
        let mut hits: Vec<&Account> = st
            .list
            .iter()
            .filter(|a| !a.role && a.user == user && host_matches(&a.host, client_host))
            .collect();
        hits.sort_by_key(|a| a.host == "%");
        hits.first().map(|a| (*a).clone())
    }

    /// SHA256(SHA256(password)) of `a`, when a full authentication showed it the
    /// password `a` has now.
    pub fn sha2_cached(&self, a: &Account) -> Option<[u8; 32]> {
        let cache = self.sha2.lock();
        let (hash2, stage2) = cache.get(&(a.user.clone(), a.host.clone()))?;
        (*hash2 == a.hash2).then_some(*stage2)
    }

    /// After a full caching_sha2_password authentication with `password`: later logins
    /// of `a` may take the fast path.
    pub fn remember_sha2(&self, a: &Account, password: &str) {
        let stage2 = sha256(&sha256(password.as_bytes()));
        self.sha2
            .lock()
            .insert((a.user.clone(), a.host.clone()), (a.hash2.clone(), stage2));
    }

    /// The account `user`@`host` exactly (no host matching), or 1133.
    pub fn get(&self, user: &str, host: &str) -> Result<Account> {
        self.read(|st| st.account(user, host).filter(|a| !a.role).cloned())
            .ok_or_else(no_user_row)
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

fn sha256(data: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(data).into()
}

/// What a client sends for `password` under caching_sha2_password's fast path:
/// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + nonce); nothing for none.
pub fn sha2_token(password: &str, nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return vec![];
    }
    let stage1 = sha256(password.as_bytes());
    let mut m = sha2::Sha256::new();
    m.update(sha256(&stage1));
    m.update(nonce);
    let mask: [u8; 32] = m.finalize().into();
    stage1.iter().zip(mask).map(|(a, b)| a ^ b).collect()
}

/// Check a caching_sha2_password fast-path token against SHA256(SHA256(password)).
pub fn verify_sha2(token: &[u8], nonce: &[u8], stage2: &[u8; 32]) -> bool {
    if token.len() != 32 {
        return false;
    }
    let mut m = sha2::Sha256::new();
    m.update(stage2);
    m.update(nonce);
    let mask: [u8; 32] = m.finalize().into();
    let stage1: Vec<u8> = token.iter().zip(mask).map(|(a, b)| a ^ b).collect();
    sha256(&stage1) == *stage2
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
    fn sha2_fast_path_round_trip() {
        let nonce = b"abcdefghijklmnopqrst";
        let stage2 = sha256(&sha256(b"s3cret"));
        assert!(verify_sha2(&sha2_token("s3cret", nonce), nonce, &stage2));
        assert!(!verify_sha2(&sha2_token("other", nonce), nonce, &stage2));
        assert!(!verify_sha2(
            &sha2_token("s3cret", b"another nonce 123456"),
            nonce,
            &stage2
        ));
    }

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
        // Before version 3 every account could do everything: root keeps it, others
        // start with nothing, and the operator is told.
        assert_eq!(app.privs, 0);
        assert_eq!(
            a.find("root", "localhost").unwrap().privs,
            GLOBAL_ALL | GRANT
        );
        assert!(
            a.notes.iter().any(|n| n.contains("'app'@'%'")),
            "{:?}",
            a.notes
        );
        let opts = AccountOptions {
            max_user_connections: Some(3),
            locked: Some(true),
            expire: true,
            require_ssl: Some(true),
            lifetime: Some(PasswordLifetime::Days(30)),
        };
        assert!(a
            .change(|st| st.alter("app", "%", &Secret::None, &opts, false))
            .unwrap());
        drop(a);
        let text = std::fs::read_to_string(dir.join("accounts.qacct")).unwrap();
        assert!(text.starts_with("# quarry accounts v3"), "{text}");
        let a = Accounts::open(&dir).unwrap();
        let app = a.find("app", "10.0.0.1").unwrap();
        assert!(app.locked && app.expired && app.require_ssl);
        assert_eq!(app.lifetime, PasswordLifetime::Days(30));
        assert_eq!(app.max_user_connections, 3);
        assert_eq!(
            app.hash2,
            password_hash2("password"),
            "ALTER without a password keeps it"
        );
        assert!(a.notes.is_empty(), "a version 3 file is read as it is");
        std::fs::write(dir.join("accounts.qacct"), "app\t%\t\tfrozen\n").unwrap();
        assert!(
            Accounts::open(&dir).is_err(),
            "an unknown attribute is damage"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Roles, default roles and grants at every level (names with tabs and backslashes
    /// too) read back as they were written.
    #[test]
    fn grants_and_roles_survive_a_reopen() {
        use crate::privileges::{Level, DELETE, SELECT, UPDATE};
        let dir = std::env::temp_dir().join(format!("quarry-acct-v3-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = Accounts::open(&dir).unwrap();
        let none = AccountOptions::default();
        let odd = "we\\ird\tdb";
        a.change(|st| {
            st.create(
                "app",
                "%",
                &Secret::Password("pw".into()),
                &none,
                false,
                false,
            )?;
            st.create("rw", "", &Secret::None, &none, false, true)?;
            st.grant("rw", "", &Level::Db(odd.into()), UPDATE, &[])?;
            st.grant_role("rw", "app", "%", true)?;
            st.set_default_role(Some("rw"), "app", "%")?;
            st.grant("app", "%", &Level::Global, DELETE, &[])?;
            st.grant(
                "app",
                "%",
                &Level::Table("d".into(), "t".into()),
                SELECT,
                &[("c".into(), UPDATE)],
            )
        })
        .unwrap();
        let before = a.read(|st| st.clone());
        drop(a);
        let a = Accounts::open(&dir).unwrap();
        assert_eq!(a.read(|st| st.clone()), before);
        assert!(a.read(|st| st.is_role("rw")));
        let e = a.read(|st| st.effective("app", "%", Some("rw")));
        assert_eq!(e.db(odd), UPDATE | DELETE);
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
        let create = |a: &Accounts| a.change(|st| st.create("app", "%", &pw, &none, false, false));
        create(&a).unwrap();
        assert_eq!(create(&a).unwrap_err().code, 1396);
        drop(a);
        let a = Accounts::open(&dir).unwrap();
        assert_eq!(
            a.find("app", "10.1.2.3").unwrap().hash2,
            password_hash2("pw")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
