//! Privilege statements, which `sqlparser` does not parse as MariaDB writes them: GRANT
//! and REVOKE (privileges or roles), CREATE / DROP ROLE, SET ROLE, SET DEFAULT ROLE,
//! SHOW GRANTS and SHOW PRIVILEGES.
//!
//! Owns their syntax only: privilege names are kept as written (upper-cased, one space
//! between words); the core knows which exist and where they may be granted.

use quarry_common::{Error, Result};

use crate::accounts::{identified, Scan};
use crate::{AccountOptions, Secret, Stmt};

/// What a GRANT or REVOKE applies to.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantOn {
    /// `*.*`
    Global,
    /// `db.*`, or `*` (None: the current database).
    Db(Option<String>),
    /// `[db.]table`
    Table(Option<String>, String),
}

/// One item of a privilege list: `SELECT`, `ALL`, `UPDATE (a, b)`.
#[derive(Debug, Clone, PartialEq)]
pub struct PrivItem {
    /// Upper-cased, one space between words.
    pub name: String,
    /// As written (a role's name keeps its case).
    pub written: String,
    pub columns: Vec<String>,
}

/// A grantee as written: `'u'@'h'`, or a bare name (host None: `'%'`, or a role of that
/// name), or CURRENT_USER (None).
pub type GranteeSpec = Option<(String, Option<String>)>;

impl Scan<'_> {
    /// A quoted name, or a bare one of letters, digits, `_` and `$`.
    fn ident(&mut self) -> Result<String> {
        self.ws();
        let rest = &self.s[self.pos..];
        if rest.starts_with(['`', '\'', '"']) {
            return self.word();
        }
        let n = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
            .unwrap_or(rest.len());
        if n == 0 {
            return Err(self.err());
        }
        self.pos += n;
        Ok(rest[..n].to_string())
    }

    fn grantee(&mut self) -> Result<GranteeSpec> {
        if self.kw("CURRENT_USER") {
            if self.punct('(') && !self.punct(')') {
                return Err(self.err());
            }
            return Ok(None);
        }
        let u = self.word()?;
        let h = if self.punct('@') {
            Some(self.word()?)
        } else {
            None
        };
        Ok(Some((u, h)))
    }

    fn grantees(&mut self) -> Result<Vec<GranteeSpec>> {
        let mut out = vec![self.grantee()?];
        while self.punct(',') {
            out.push(self.grantee()?);
        }
        Ok(out)
    }

    /// `name [(col, …)]`, a privilege name of one or more words.
    fn priv_item(&mut self) -> Result<PrivItem> {
        let mut words = vec![];
        loop {
            self.ws();
            let rest = &self.s[self.pos..];
            let stop = rest.is_empty()
                || rest.starts_with([',', '(', ';'])
                || ["ON", "TO", "FROM"].iter().any(|k| {
                    rest.get(..k.len())
                        .is_some_and(|w| w.eq_ignore_ascii_case(k))
                        && !rest[k.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                });
            if stop {
                break;
            }
            words.push(self.word()?);
        }
        if words.is_empty() {
            return Err(self.err());
        }
        let mut columns = vec![];
        if self.punct('(') {
            loop {
                columns.push(self.ident()?);
                if !self.punct(',') {
                    break;
                }
            }
            if !self.punct(')') {
                return Err(self.err());
            }
        }
        let written = words.join(" ");
        Ok(PrivItem {
            name: written.to_ascii_uppercase(),
            written,
            columns,
        })
    }

    fn grant_on(&mut self) -> Result<GrantOn> {
        if self.kw("PROCEDURE") || self.kw("FUNCTION") || self.kw("PACKAGE") {
            return Err(Error::unsupported("privileges on stored routines"));
        }
        self.kw("TABLE");
        if self.punct('*') {
            if !self.punct('.') {
                return Ok(GrantOn::Db(None));
            }
            if !self.punct('*') {
                return Err(self.err());
            }
            return Ok(GrantOn::Global);
        }
        let first = self.ident()?;
        if !self.punct('.') {
            return Ok(GrantOn::Table(None, first));
        }
        if self.punct('*') {
            return Ok(GrantOn::Db(Some(first)));
        }
        Ok(GrantOn::Table(Some(first), self.ident()?))
    }
}

/// GRANT … / REVOKE … (after the leading keyword).
pub(crate) fn parse_grant(sql: &str) -> Result<Stmt> {
    let mut sc = Scan { s: sql, pos: 0 };
    let grant = sc.kw("GRANT");
    if !grant && !sc.kw("REVOKE") {
        return Err(sc.err());
    }
    if !grant && sc.kw("ADMIN") {
        return Err(Error::unsupported("REVOKE ADMIN OPTION"));
    }
    let mut items = vec![sc.priv_item()?];
    while sc.punct(',') {
        items.push(sc.priv_item()?);
    }
    // REVOKE ALL [PRIVILEGES], GRANT OPTION FROM …
    let all =
        |i: &PrivItem| i.columns.is_empty() && (i.name == "ALL" || i.name == "ALL PRIVILEGES");
    if !grant
        && items.len() == 2
        && all(&items[0])
        && items[1].name == "GRANT OPTION"
        && sc.kw("FROM")
    {
        let from = sc.grantees()?;
        sc.end()?;
        return Ok(Stmt::RevokeAll { from });
    }
    if sc.kw("ON") {
        let on = sc.grant_on()?;
        if grant {
            if !sc.kw("TO") {
                return Err(sc.err());
            }
            let mut to = vec![];
            loop {
                let g = sc.grantee()?;
                let secret = if sc.kw("IDENTIFIED") {
                    identified(&mut sc)?
                } else {
                    Secret::None
                };
                to.push((g, secret));
                if !sc.punct(',') {
                    break;
                }
            }
            let mut opts = AccountOptions {
                require_ssl: crate::accounts::require(&mut sc)?,
                ..AccountOptions::default()
            };
            let mut grant_option = false;
            if sc.kw("WITH") {
                let mut any = false;
                loop {
                    if sc.kw("GRANT") {
                        if !sc.kw("OPTION") {
                            return Err(sc.err());
                        }
                        grant_option = true;
                    } else if sc.kw("MAX_USER_CONNECTIONS") {
                        let n = sc.word()?;
                        opts.max_user_connections = Some(n.parse().map_err(|_| sc.err())?);
                    } else {
                        break;
                    }
                    any = true;
                }
                if !any {
                    return Err(sc.err());
                }
            }
            sc.end()?;
            return Ok(Stmt::Grant {
                privs: items,
                on,
                to,
                grant_option,
                opts,
            });
        }
        if !sc.kw("FROM") {
            return Err(sc.err());
        }
        let from = sc.grantees()?;
        sc.end()?;
        return Ok(Stmt::Revoke {
            privs: items,
            on,
            from,
        });
    }
    // Roles: GRANT r, … TO … [WITH ADMIN OPTION] / REVOKE r, … FROM ….
    if items.iter().any(|i| !i.columns.is_empty()) {
        return Err(sc.err());
    }
    let roles: Vec<String> = items.into_iter().map(|i| i.written).collect();
    if grant {
        if !sc.kw("TO") {
            return Err(sc.err());
        }
        let to = sc.grantees()?;
        let admin = sc.kw("WITH") && {
            if !(sc.kw("ADMIN") && sc.kw("OPTION")) {
                return Err(sc.err());
            }
            true
        };
        sc.end()?;
        return Ok(Stmt::GrantRole { roles, to, admin });
    }
    if !sc.kw("FROM") {
        return Err(sc.err());
    }
    let from = sc.grantees()?;
    sc.end()?;
    Ok(Stmt::RevokeRole { roles, from })
}

/// CREATE ROLE / DROP ROLE / SET ROLE / SET DEFAULT ROLE / SHOW GRANTS / SHOW PRIVILEGES.
pub(crate) fn parse_role_or_show(sql: &str) -> Result<Stmt> {
    let mut sc = Scan { s: sql, pos: 0 };
    if sc.kw("SHOW") {
        if sc.kw("PRIVILEGES") {
            sc.end()?;
            return Ok(Stmt::ShowPrivileges);
        }
        if !sc.kw("GRANTS") {
            return Err(sc.err());
        }
        let who = if sc.kw("FOR") { sc.grantee()? } else { None };
        sc.end()?;
        return Ok(Stmt::ShowGrants(who));
    }
    if sc.kw("SET") {
        if sc.kw("ROLE") {
            let role = if sc.kw("NONE") {
                None
            } else {
                Some(sc.word()?)
            };
            sc.end()?;
            return Ok(Stmt::SetRole(role));
        }
        if !(sc.kw("DEFAULT") && sc.kw("ROLE")) {
            return Err(sc.err());
        }
        let role = if sc.kw("NONE") {
            None
        } else {
            Some(sc.word()?)
        };
        let user = if sc.kw("FOR") { sc.grantee()? } else { None };
        sc.end()?;
        return Ok(Stmt::SetDefaultRole { role, user });
    }
    let create = sc.kw("CREATE");
    if !create && !sc.kw("DROP") {
        return Err(sc.err());
    }
    if !sc.kw("ROLE") {
        return Err(sc.err());
    }
    let cond = if create {
        sc.kw("IF") && sc.kw("NOT") && sc.kw("EXISTS")
    } else {
        sc.kw("IF") && sc.kw("EXISTS")
    };
    let mut names = vec![sc.word()?];
    while sc.punct(',') {
        names.push(sc.word()?);
    }
    if create && sc.kw("WITH") {
        return Err(Error::unsupported("CREATE ROLE … WITH ADMIN"));
    }
    sc.end()?;
    Ok(if create {
        Stmt::CreateRole {
            names,
            if_not_exists: cond,
        }
    } else {
        Stmt::DropRole {
            names,
            if_exists: cond,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grant_statements_parse() {
        let s = parse_grant(
            "GRANT SELECT, update (b, `c`), ALL PRIVILEGES ON `db1`.t TO app@localhost \
             IDENTIFIED BY 'pw', 'x' WITH GRANT OPTION MAX_USER_CONNECTIONS 3",
        )
        .unwrap();
        let Stmt::Grant {
            privs,
            on,
            to,
            grant_option,
            opts,
        } = s
        else {
            panic!("{s:?}")
        };
        assert_eq!(privs[1].name, "UPDATE");
        assert_eq!(privs[1].columns, ["b", "c"]);
        assert_eq!(privs[2].name, "ALL PRIVILEGES");
        assert_eq!(on, GrantOn::Table(Some("db1".into()), "t".into()));
        assert_eq!(to[0].0, Some(("app".into(), Some("localhost".into()))));
        assert_eq!(to[0].1, Secret::Password("pw".into()));
        assert_eq!(to[1].0, Some(("x".into(), None)));
        assert!(grant_option);
        assert_eq!(opts.max_user_connections, Some(3));
        assert!(matches!(
            parse_grant("REVOKE ALL PRIVILEGES, GRANT OPTION FROM a@b").unwrap(),
            Stmt::RevokeAll { .. }
        ));
        assert!(matches!(
            parse_grant("GRANT r1, r2 TO CURRENT_USER() WITH ADMIN OPTION").unwrap(),
            Stmt::GrantRole { admin: true, .. }
        ));
        assert!(matches!(
            parse_grant("REVOKE insert ON *.* FROM a").unwrap(),
            Stmt::Revoke {
                on: GrantOn::Global,
                ..
            }
        ));
        assert!(matches!(
            parse_grant("GRANT select ON * TO a").unwrap(),
            Stmt::Grant {
                on: GrantOn::Db(None),
                ..
            }
        ));
        assert_eq!(
            parse_grant("GRANT SELECT ON db.* TO").unwrap_err().code,
            1064
        );
        // A multi-byte character where a keyword could start (the fuzz test's find).
        assert!(parse_grant("GRANT reocalhT\u{fffd}ost").is_err());
        assert!(matches!(
            parse_role_or_show("SHOW GRANTS FOR CURRENT_USER").unwrap(),
            Stmt::ShowGrants(None)
        ));
        assert!(matches!(
            parse_role_or_show("SET DEFAULT ROLE NONE FOR u@h").unwrap(),
            Stmt::SetDefaultRole {
                role: None,
                user: Some(_)
            }
        ));
    }
}
