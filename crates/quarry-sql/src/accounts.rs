//! Account statements, which `sqlparser` does not parse (`'user'@'host'` with a quoted
//! host): CREATE / ALTER / DROP USER and SET PASSWORD.
//!
//! Owns their syntax only; the account table is the core's.

use quarry_common::{Error, Result};

use crate::Stmt;

/// How an account's password is given.
#[derive(Debug, Clone, PartialEq)]
pub enum Secret {
    /// Not given (CREATE USER: no password; ALTER USER: unchanged).
    None,
    /// `IDENTIFIED BY 'text'`.
    Password(String),
    /// `IDENTIFIED BY PASSWORD '*hex'`: SHA1(SHA1(password)), as SHOW CREATE USER and
    /// dump tools write it.
    Hash(String),
    /// `IDENTIFIED VIA ed25519 USING PASSWORD('pw')`: MariaDB's ed25519 plugin.
    Ed25519Password(String),
    /// `IDENTIFIED VIA ed25519 USING 'key'`: its public key in base64, as SHOW CREATE
    /// USER writes it.
    Ed25519Key(String),
}

/// What CREATE USER and ALTER USER set besides the password (None: unchanged).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountOptions {
    /// `WITH MAX_USER_CONNECTIONS n` (0: no limit).
    pub max_user_connections: Option<u32>,
    /// `ACCOUNT LOCK` / `ACCOUNT UNLOCK`.
    pub locked: Option<bool>,
    /// `PASSWORD EXPIRE`: the next login may only SET PASSWORD.
    pub expire: bool,
    /// `REQUIRE SSL` (true) / `REQUIRE NONE` (false): logins over TLS only.
    pub require_ssl: Option<bool>,
    /// `PASSWORD EXPIRE {INTERVAL n DAY | NEVER | DEFAULT}`.
    pub lifetime: Option<PasswordLifetime>,
}

/// How long an account's password lasts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PasswordLifetime {
    /// `default_password_lifetime` days (0: for ever).
    #[default]
    Default,
    Never,
    Days(u32),
}

/// A small scanner for account statements, which `sqlparser` does not parse
/// (`'user'@'host'` with a quoted host).
pub(crate) struct Scan<'a> {
    pub(crate) s: &'a str,
    pub(crate) pos: usize,
}

impl Scan<'_> {
    pub(crate) fn ws(&mut self) {
        let rest = &self.s[self.pos..];
        self.pos += rest.len() - rest.trim_start().len();
    }
    pub(crate) fn kw(&mut self, k: &str) -> bool {
        self.ws();
        let rest = &self.s[self.pos..];
        let hit = rest.len() >= k.len()
            && rest.is_char_boundary(k.len())
            && rest[..k.len()].eq_ignore_ascii_case(k)
            && !rest[k.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
        if hit {
            self.pos += k.len();
        }
        hit
    }
    pub(crate) fn punct(&mut self, c: char) -> bool {
        self.ws();
        if self.s[self.pos..].starts_with(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }
    pub(crate) fn err(&self) -> Error {
        Error::syntax_near(&self.s[self.pos..])
    }
    /// A quoted ('..', "..", `..`) or bare word.
    pub(crate) fn word(&mut self) -> Result<String> {
        self.ws();
        let rest = &self.s[self.pos..];
        let q = rest.chars().next().ok_or_else(|| self.err())?;
        if q == '\'' || q == '"' || q == '`' {
            let mut out = String::new();
            let body = &rest[1..];
            let mut it = body.char_indices().peekable();
            while let Some((i, c)) = it.next() {
                if c == q {
                    if it.peek().map(|(_, n)| *n) == Some(q) {
                        out.push(q);
                        it.next();
                        continue;
                    }
                    self.pos += 1 + i + 1;
                    return Ok(out);
                }
                if c == '\\' && q != '`' {
                    if let Some((_, n)) = it.next() {
                        out.push(n);
                    }
                    continue;
                }
                out.push(c);
            }
            return Err(self.err());
        }
        let n = rest
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '%' | '-')))
            .unwrap_or(rest.len());
        if n == 0 {
            return Err(self.err());
        }
        self.pos += n;
        Ok(rest[..n].to_string())
    }
    pub(crate) fn user(&mut self) -> Result<(String, String)> {
        let u = self.word()?;
        let h = if self.punct('@') {
            self.word()?
        } else {
            "%".to_string()
        };
        Ok((u, h))
    }
    pub(crate) fn end(&mut self) -> Result<()> {
        let rest = self.s[self.pos..].trim().trim_end_matches(';').trim();
        if rest.is_empty() {
            Ok(())
        } else {
            Err(self.err())
        }
    }
}

pub(crate) fn parse_user_stmt(sql: &str) -> Result<Stmt> {
    let mut sc = Scan { s: sql, pos: 0 };
    if sc.kw("SET") {
        if !sc.kw("PASSWORD") {
            return Err(sc.err());
        }
        let user = if sc.kw("FOR") { Some(sc.user()?) } else { None };
        if !sc.punct('=') {
            return Err(sc.err());
        }
        let password = if sc.kw("PASSWORD") {
            if !sc.punct('(') {
                return Err(sc.err());
            }
            let p = sc.word()?;
            if !sc.punct(')') {
                return Err(sc.err());
            }
            p
        } else {
            sc.word()?
        };
        sc.end()?;
        return Ok(Stmt::SetPassword { user, password });
    }
    if sc.kw("SHOW") {
        if !(sc.kw("CREATE") && sc.kw("USER")) {
            return Err(sc.err());
        }
        let user = sc.user()?;
        sc.end()?;
        return Ok(Stmt::ShowCreateUser(user));
    }
    let create = sc.kw("CREATE");
    let alter = !create && sc.kw("ALTER");
    if !create && !alter && !sc.kw("DROP") {
        return Err(sc.err());
    }
    if !sc.kw("USER") {
        return Err(sc.err());
    }
    let cond = if create {
        sc.kw("IF") && sc.kw("NOT") && sc.kw("EXISTS")
    } else {
        sc.kw("IF") && sc.kw("EXISTS")
    };
    let mut users = vec![];
    loop {
        let (u, h) = sc.user()?;
        let mut secret = Secret::None;
        if sc.kw("IDENTIFIED") {
            secret = identified(&mut sc)?;
        }
        users.push((u, h, secret));
        if !sc.punct(',') {
            break;
        }
    }
    let opts = if create || alter {
        options(&mut sc)?
    } else {
        AccountOptions::default()
    };
    sc.end()?;
    if alter {
        return Ok(Stmt::AlterUser {
            users,
            opts,
            if_exists: cond,
        });
    }
    if create {
        Ok(Stmt::CreateUser {
            users,
            opts,
            if_not_exists: cond,
        })
    } else {
        Ok(Stmt::DropUser {
            users: users.into_iter().map(|(u, h, _)| (u, h)).collect(),
            if_exists: cond,
        })
    }
}

/// After IDENTIFIED: `BY 'pw'`, `BY PASSWORD '*hash'`, `{WITH | VIA} ed25519 {USING |
/// AS} {PASSWORD('pw') | 'key'}`, or `{WITH | VIA} plugin [{BY 'pw' | {AS | USING}
/// '*hash'}]`. Passwords are always stored for mysql_native_password: another
/// plugin is taken with a password (COMPAT.md), and refused without one — an account
/// `IDENTIFIED WITH unix_socket` must not become one without a password.
pub(crate) fn identified(sc: &mut Scan) -> Result<Secret> {
    let plugin = if sc.kw("WITH") || sc.kw("VIA") {
        Some(sc.word()?)
    } else {
        None
    };
    if sc.kw("BY") {
        return Ok(if sc.kw("PASSWORD") {
            Secret::Hash(sc.word()?)
        } else {
            Secret::Password(sc.word()?)
        });
    }
    let Some(plugin) = plugin else {
        return Err(sc.err());
    };
    if plugin.eq_ignore_ascii_case("ed25519") {
        if !(sc.kw("USING") || sc.kw("AS")) {
            return Err(Error::unsupported("ed25519 without USING"));
        }
        if sc.kw("PASSWORD") {
            if !sc.punct('(') {
                return Err(sc.err());
            }
            let pw = sc.word()?;
            if !sc.punct(')') {
                return Err(sc.err());
            }
            return Ok(Secret::Ed25519Password(pw));
        }
        return Ok(Secret::Ed25519Key(sc.word()?));
    }
    if !plugin.eq_ignore_ascii_case("mysql_native_password") {
        return Err(Error::unsupported(format!(
            "authentication plugin {plugin} without a password"
        )));
    }
    if sc.kw("AS") || sc.kw("USING") {
        return Ok(Secret::Hash(sc.word()?));
    }
    // MariaDB: the plugin alone sets an empty password.
    Ok(Secret::Password(String::new()))
}

/// `[REQUIRE {SSL | NONE}]`; X509, ISSUER, SUBJECT and CIPHER (client certificates) are
/// refused, not ignored.
pub(crate) fn require(sc: &mut Scan) -> Result<Option<bool>> {
    if !sc.kw("REQUIRE") {
        return Ok(None);
    }
    if sc.kw("SSL") {
        return Ok(Some(true));
    }
    if sc.kw("NONE") {
        return Ok(Some(false));
    }
    Err(Error::unsupported(
        "REQUIRE X509 / ISSUER / SUBJECT / CIPHER (client certificates)",
    ))
}

/// `[REQUIRE …] [WITH MAX_USER_CONNECTIONS n] [ACCOUNT LOCK | UNLOCK] [PASSWORD EXPIRE]`, in MariaDB's
/// order. The other resource limits, REQUIRE and password lifetimes are refused, not
/// ignored.
fn options(sc: &mut Scan) -> Result<AccountOptions> {
    let mut o = AccountOptions {
        require_ssl: require(sc)?,
        ..AccountOptions::default()
    };
    if sc.kw("WITH") {
        let mut any = false;
        loop {
            if sc.kw("MAX_USER_CONNECTIONS") {
                let n = sc.word()?;
                o.max_user_connections = Some(n.parse().map_err(|_| sc.err())?);
            } else if [
                "MAX_QUERIES_PER_HOUR",
                "MAX_UPDATES_PER_HOUR",
                "MAX_CONNECTIONS_PER_HOUR",
                "MAX_STATEMENT_TIME",
            ]
            .iter()
            .any(|k| sc.kw(k))
            {
                return Err(Error::unsupported(
                    "per-hour and statement-time account limits",
                ));
            } else {
                break;
            }
            any = true;
        }
        if !any {
            return Err(sc.err());
        }
    }
    loop {
        if sc.kw("ACCOUNT") {
            o.locked = Some(if sc.kw("LOCK") {
                true
            } else if sc.kw("UNLOCK") {
                false
            } else {
                return Err(sc.err());
            });
        } else if sc.kw("PASSWORD") {
            if !sc.kw("EXPIRE") {
                return Err(sc.err());
            }
            if sc.kw("NEVER") {
                o.lifetime = Some(PasswordLifetime::Never);
            } else if sc.kw("DEFAULT") {
                o.lifetime = Some(PasswordLifetime::Default);
            } else if sc.kw("INTERVAL") {
                let n: u32 = sc.word()?.parse().map_err(|_| sc.err())?;
                if !sc.kw("DAY") {
                    return Err(sc.err());
                }
                if n == 0 {
                    return Err(Error::wrong_value("DAY", "0"));
                }
                o.lifetime = Some(PasswordLifetime::Days(n));
            } else {
                o.expire = true;
            }
        } else {
            return Ok(o);
        }
    }
}
