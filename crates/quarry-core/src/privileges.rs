//! Privileges: MariaDB's privilege names and bits, what each level may hold, the grants
//! of accounts and roles at the database, table and column levels, what a session may do
//! (its account's grants merged with its active role's), and SHOW GRANTS' text.
//!
//! Owns the grant tables in memory and their lines in the account file (the account
//! store, `accounts.rs`, writes them with the accounts: one file, replaced atomically).
//! Must not touch: statements (the session decides what a statement needs), sockets.

use std::collections::{BTreeMap, HashMap};

use quarry_common::field::escape;
use quarry_common::{Error, Result};

/// A set of privileges: bit `i` is `NAMES[i]`, MariaDB's order (`privilege.h`), which is
/// also the order SHOW GRANTS lists them in.
pub type Privs = u64;

pub const NAMES: [&str; 39] = [
    "SELECT",
    "INSERT",
    "UPDATE",
    "DELETE",
    "CREATE",
    "DROP",
    "RELOAD",
    "SHUTDOWN",
    "PROCESS",
    "FILE",
    "GRANT OPTION",
    "REFERENCES",
    "INDEX",
    "ALTER",
    "SHOW DATABASES",
    "SUPER",
    "CREATE TEMPORARY TABLES",
    "LOCK TABLES",
    "EXECUTE",
    "REPLICATION SLAVE",
    "BINLOG MONITOR",
    "CREATE VIEW",
    "SHOW VIEW",
    "CREATE ROUTINE",
    "ALTER ROUTINE",
    "CREATE USER",
    "EVENT",
    "TRIGGER",
    "CREATE TABLESPACE",
    "DELETE HISTORY",
    "SET USER",
    "FEDERATED ADMIN",
    "CONNECTION ADMIN",
    "READ_ONLY ADMIN",
    "REPLICATION SLAVE ADMIN",
    "REPLICATION MASTER ADMIN",
    "BINLOG ADMIN",
    "BINLOG REPLAY",
    "SLAVE MONITOR",
];

const fn bit(name_index: u32) -> Privs {
    1 << name_index
}

pub const SELECT: Privs = bit(0);
pub const INSERT: Privs = bit(1);
pub const UPDATE: Privs = bit(2);
pub const DELETE: Privs = bit(3);
pub const CREATE: Privs = bit(4);
pub const DROP: Privs = bit(5);
pub const RELOAD: Privs = bit(6);
pub const SHUTDOWN: Privs = bit(7);
pub const PROCESS: Privs = bit(8);
pub const FILE: Privs = bit(9);
pub const GRANT: Privs = bit(10);
pub const REFERENCES: Privs = bit(11);
pub const INDEX: Privs = bit(12);
pub const ALTER: Privs = bit(13);
pub const SHOW_DB: Privs = bit(14);
pub const SUPER: Privs = bit(15);
pub const CREATE_TMP: Privs = bit(16);
pub const LOCK_TABLES: Privs = bit(17);
pub const EXECUTE: Privs = bit(18);
pub const CREATE_VIEW: Privs = bit(21);
pub const SHOW_VIEW: Privs = bit(22);
pub const CREATE_ROUTINE: Privs = bit(23);
pub const ALTER_ROUTINE: Privs = bit(24);
pub const CREATE_USER: Privs = bit(25);
pub const EVENT: Privs = bit(26);
pub const TRIGGER: Privs = bit(27);
pub const DELETE_HISTORY: Privs = bit(29);
pub const SET_USER: Privs = bit(30);
pub const CONNECTION_ADMIN: Privs = bit(32);
pub const READ_ONLY_ADMIN: Privs = bit(33);

/// The global privileges of which one lets a session SET GLOBAL `var` (MariaDB 10.11's
/// split of SUPER: the connection limits also take CONNECTION ADMIN, read_only takes
/// READ_ONLY ADMIN alone).
pub fn set_global_needs(var: &str) -> Privs {
    match var {
        "read_only" => READ_ONLY_ADMIN,
        "max_connections"
        | "max_user_connections"
        | "max_connect_errors"
        | "connect_timeout"
        | "disconnect_on_expired_password"
        | "extra_max_connections"
        | "init_connect"
        | "max_password_errors"
        | "proxy_protocol_networks"
        | "secure_auth"
        | "slow_launch_time"
        | "thread_pool_idle_timeout" => SUPER | CONNECTION_ADMIN,
        _ => SUPER,
    }
}

/// Every privilege but GRANT OPTION: what `ALL [PRIVILEGES]` grants on `*.*`.
pub const GLOBAL_ALL: Privs = ((1 << NAMES.len()) - 1) & !GRANT;
/// What a database-level grant may hold (else 1221), ALL on `db.*`.
pub const DB_ALL: Privs = SELECT
    | INSERT
    | UPDATE
    | DELETE
    | CREATE
    | DROP
    | REFERENCES
    | INDEX
    | ALTER
    | CREATE_TMP
    | LOCK_TABLES
    | EXECUTE
    | CREATE_VIEW
    | SHOW_VIEW
    | CREATE_ROUTINE
    | ALTER_ROUTINE
    | EVENT
    | TRIGGER
    | DELETE_HISTORY;
/// What a table-level grant may hold (else 1144), ALL on `db.t`: a database's but those
/// of routines, events, temporary tables and LOCK TABLES.
pub const TABLE_ALL: Privs =
    DB_ALL & !(CREATE_TMP | LOCK_TABLES | EXECUTE | CREATE_ROUTINE | ALTER_ROUTINE | EVENT);
/// What a column-level grant may hold (else 1064, as MariaDB's grammar refuses it).
pub const COLUMN_ALL: Privs = SELECT | INSERT | UPDATE | REFERENCES;

/// The bit of a privilege name (spaces between words already single, any case), with
/// MariaDB's aliases; None for an unknown name (a syntax error).
pub fn by_name(name: &str) -> Option<Privs> {
    let up = name.to_ascii_uppercase();
    let canonical = match up.as_str() {
        "REPLICATION CLIENT" => "BINLOG MONITOR",
        "READ ONLY ADMIN" => "READ_ONLY ADMIN",
        other => other,
    };
    NAMES
        .iter()
        .position(|n| *n == canonical)
        .map(|i| bit(i as u32))
}

/// `SELECT, INSERT` in MariaDB's order (GRANT OPTION left out: it is a clause).
pub fn names(p: Privs) -> Vec<&'static str> {
    (0..NAMES.len())
        .filter(|&i| p & bit(i as u32) != 0 && bit(i as u32) != GRANT)
        .map(|i| NAMES[i])
        .collect()
}

/// The list SHOW GRANTS prints for a level whose whole set is `all`.
fn list_for(p: Privs, all: Privs) -> String {
    let p = p & !GRANT;
    if p == 0 {
        "USAGE".into()
    } else if p & all == all {
        "ALL PRIVILEGES".into()
    } else {
        names(p).join(", ")
    }
}

/// The privilege list of a global grant line.
pub fn global_list(p: Privs) -> String {
    list_for(p, GLOBAL_ALL)
}

/// Where a grant applies.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Global,
    Db(String),
    Table(String, String),
}

/// One table's grants: the table's own privileges and each column's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TableGrant {
    pub privs: Privs,
    /// By column name as granted; matched without regard to case (as column names are).
    pub columns: BTreeMap<String, Privs>,
}

impl TableGrant {
    pub fn column(&self, name: &str) -> Privs {
        self.columns
            .iter()
            .filter(|(c, _)| c.eq_ignore_ascii_case(name))
            .fold(0, |acc, (_, p)| acc | p)
    }
    /// Privileges some column has.
    pub fn any_column(&self) -> Privs {
        self.columns.values().fold(0, |a, p| a | p)
    }
    fn is_empty(&self) -> bool {
        self.privs == 0 && self.columns.values().all(|p| *p == 0)
    }
}

/// An authorization id: an account (`user`, `host`) or a role (`name`, empty host).
pub type Grantee = (String, String);

/// The database-, table- and column-level grants of every account and role. Global
/// privileges are the account's own (`Account::privs`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    pub dbs: BTreeMap<(Grantee, String), Privs>,
    pub tables: BTreeMap<(Grantee, String, String), TableGrant>,
    /// Roles granted to an account or role: (grantee, role) → WITH ADMIN OPTION.
    pub roles: BTreeMap<(Grantee, String), bool>,
}

/// A database grant's name may hold `%` and `_` wildcards (`\_` is a literal `_`), as
/// MariaDB's; other names match exactly.
fn db_matches(pattern: &str, db: &str) -> bool {
    if !pattern.contains(['%', '_']) {
        return pattern == db;
    }
    quarry_executor::expr::like(db, pattern, '\\')
}

impl Grants {
    /// Everything `g` holds is dropped (DROP USER / DROP ROLE), and the role `g` from
    /// whoever had it when `g` is a role.
    pub fn forget(&mut self, g: &Grantee) {
        self.dbs.retain(|(who, _), _| who != g);
        self.tables.retain(|(who, _, _), _| who != g);
        self.roles
            .retain(|(who, role), _| who != g && !(g.1.is_empty() && *role == g.0));
    }

    /// The roles `g` was granted, and theirs, once each.
    pub fn roles_of(&self, g: &Grantee) -> Vec<String> {
        let mut out: Vec<String> = vec![];
        let mut todo = vec![g.clone()];
        while let Some(who) = todo.pop() {
            for ((w, role), _) in self.roles.range((who.clone(), String::new())..) {
                if *w != who {
                    break;
                }
                if !out.contains(role) {
                    out.push(role.clone());
                    todo.push((role.clone(), String::new()));
                }
            }
        }
        out
    }

    pub fn has_role(&self, g: &Grantee, role: &str) -> bool {
        self.roles_of(g).iter().any(|r| r == role)
    }

    /// Add `privs` (and column privileges) at `level` for `g`; the level's rules were
    /// checked by the caller.
    pub fn grant(&mut self, g: &Grantee, level: &Level, privs: Privs, columns: &[(String, Privs)]) {
        match level {
            Level::Global => {}
            Level::Db(db) => *self.dbs.entry((g.clone(), db.clone())).or_default() |= privs,
            Level::Table(db, t) => {
                let e = self
                    .tables
                    .entry((g.clone(), db.clone(), t.clone()))
                    .or_default();
                e.privs |= privs;
                for (c, p) in columns {
                    let key = e
                        .columns
                        .keys()
                        .find(|k| k.eq_ignore_ascii_case(c))
                        .cloned()
                        .unwrap_or_else(|| c.clone());
                    *e.columns.entry(key).or_default() |= p;
                }
            }
        }
    }

    /// Take `privs` (and column privileges) away at `level`; 1141 / 1147 when `g` has no
    /// grant there at all, as MariaDB.
    pub fn revoke(
        &mut self,
        g: &Grantee,
        level: &Level,
        privs: Privs,
        columns: &[(String, Privs)],
    ) -> Result<()> {
        match level {
            Level::Global => Ok(()),
            Level::Db(db) => {
                let key = (g.clone(), db.clone());
                let Some(p) = self.dbs.get_mut(&key) else {
                    return Err(Error::no_such_grant(&g.0, &g.1));
                };
                *p &= !privs;
                if *p == 0 {
                    self.dbs.remove(&key);
                }
                Ok(())
            }
            Level::Table(db, t) => {
                let key = (g.clone(), db.clone(), t.clone());
                let Some(e) = self.tables.get_mut(&key) else {
                    return Err(Error::no_such_table_grant(&g.0, &g.1, t));
                };
                e.privs &= !privs;
                for p in e.columns.values_mut() {
                    *p &= !privs;
                }
                for (c, p) in columns {
                    for (_, have) in e
                        .columns
                        .iter_mut()
                        .filter(|(k, _)| k.eq_ignore_ascii_case(c))
                    {
                        *have &= !p;
                    }
                }
                e.columns.retain(|_, p| *p != 0);
                if e.is_empty() {
                    self.tables.remove(&key);
                }
                Ok(())
            }
        }
    }

    /// REVOKE ALL PRIVILEGES, GRANT OPTION: every database and table grant of `g`.
    pub fn revoke_all(&mut self, g: &Grantee) {
        self.dbs.retain(|(who, _), _| who != g);
        self.tables.retain(|(who, _, _), _| who != g);
    }

    /// A dropped table's grants stay, as MariaDB's do (a table made again under its name
    /// has them again).
    ///
    /// SHOW GRANTS' lines after the global one, for `g`: databases, then tables with
    /// their columns, each sorted by name; `to` is the grantee as printed.
    pub fn show_lines(&self, g: &Grantee, to: &str) -> Vec<String> {
        let mut out = vec![];
        for ((who, db), p) in &self.dbs {
            if who != g {
                continue;
            }
            let opt = if p & GRANT != 0 {
                " WITH GRANT OPTION"
            } else {
                ""
            };
            out.push(format!(
                "GRANT {} ON {}.* TO {to}{opt}",
                list_for(*p, DB_ALL),
                quote(db)
            ));
        }
        for ((who, db, t), e) in &self.tables {
            if who != g {
                continue;
            }
            let mut parts = vec![];
            let table = e.privs & !GRANT;
            if table & TABLE_ALL == TABLE_ALL {
                parts.push("ALL PRIVILEGES".to_string());
            } else {
                // A privilege the table has is listed alone; one only some columns have
                // lists them: `SELECT, UPDATE (`b`)`.
                for (i, name) in NAMES.iter().enumerate() {
                    let b = bit(i as u32);
                    if b == GRANT {
                        continue;
                    }
                    if table & b != 0 {
                        parts.push(name.to_string());
                        continue;
                    }
                    let cols: Vec<String> = e
                        .columns
                        .iter()
                        .filter(|(_, p)| *p & b != 0)
                        .map(|(c, _)| quote(c))
                        .collect();
                    if !cols.is_empty() {
                        parts.push(format!("{name} ({})", cols.join(", ")));
                    }
                }
            }
            if parts.is_empty() {
                parts.push("USAGE".into());
            }
            let opt = if e.privs & GRANT != 0 {
                " WITH GRANT OPTION"
            } else {
                ""
            };
            out.push(format!(
                "GRANT {} ON {}.{} TO {to}{opt}",
                parts.join(", "),
                quote(db),
                quote(t)
            ));
        }
        out
    }

    /// What `who` (an account and the roles it uses) may do: merged once per change of
    /// the grants, then consulted by every statement without locks.
    pub fn effective(&self, global: Privs, who: &[Grantee]) -> Effective {
        let mut e = Effective {
            global,
            ..Effective::default()
        };
        for ((w, db), p) in &self.dbs {
            if who.contains(w) {
                match e.dbs.iter_mut().find(|(d, _)| d == db) {
                    Some((_, have)) => *have |= p,
                    None => e.dbs.push((db.clone(), *p)),
                }
            }
        }
        for ((w, db, t), g) in &self.tables {
            if who.contains(w) {
                let have = e
                    .tables
                    .entry(db.clone())
                    .or_default()
                    .entry(t.clone())
                    .or_default();
                have.privs |= g.privs;
                for (c, p) in &g.columns {
                    *have.columns.entry(c.to_ascii_lowercase()).or_default() |= p;
                }
            }
        }
        e
    }
}

/// `` `name` `` with backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// A session's privileges: its account's and its active roles', merged.
#[derive(Debug, Clone, Default)]
pub struct Effective {
    pub global: Privs,
    pub dbs: Vec<(String, Privs)>,
    /// By database, then table (looked up without building a key); column names
    /// lowercased.
    pub tables: HashMap<String, HashMap<String, TableGrant>>,
}

impl Effective {
    /// Every privilege a statement could need, on everything: checks are skipped.
    pub fn is_all(&self) -> bool {
        self.global & GLOBAL_ALL == GLOBAL_ALL
    }

    /// Privileges on database `db` (global ones included).
    pub fn db(&self, db: &str) -> Privs {
        self.dbs
            .iter()
            .filter(|(p, _)| db_matches(p, db))
            .fold(self.global, |a, (_, p)| a | p)
    }

    /// Privileges on table `db`.`t` as a whole (global and database ones included), and
    /// its column grants.
    pub fn table(&self, db: &str, t: &str) -> (Privs, Option<&TableGrant>) {
        let g = self.tables.get(db).and_then(|ts| ts.get(t));
        (self.db(db) | g.map_or(0, |g| g.privs), g)
    }

    /// Has it any privilege on table `db`.`t`, at any level (SHOW TABLES lists it)?
    pub fn any_on_table(&self, db: &str, t: &str) -> bool {
        let (have, g) = self.table(db, t);
        have & TABLE_ALL != 0 || g.is_some_and(|g| !g.is_empty())
    }

    /// Has it any privilege in `db`, at any level (USE, SHOW TABLES, SHOW DATABASES)?
    pub fn any_in_db(&self, db: &str) -> bool {
        self.db(db) & !GRANT & (DB_ALL | GLOBAL_ALL) != 0
            || self
                .tables
                .get(db)
                .is_some_and(|ts| ts.values().any(|g| !g.is_empty()))
    }
}

/// The account file's lines for the grants (version 3): tab-separated, fields escaped
/// with [`escape`]. Privileges are written by name, so the file reads the same whatever
/// the bits become.
///
/// ```text
/// db     <user> <host> <db> <privs>
/// table  <user> <host> <db> <table> <privs>
/// column <user> <host> <db> <table> <column> <privs>
/// role   <user> <host> <role> <admin: 0|1>
/// ```
pub fn to_lines(g: &Grants, out: &mut String) {
    for (((u, h), db), p) in &g.dbs {
        line(out, &["db", u, h, db, &privs_text(*p)]);
    }
    for (((u, h), db, t), e) in &g.tables {
        line(out, &["table", u, h, db, t, &privs_text(e.privs)]);
        for (c, p) in &e.columns {
            line(out, &["column", u, h, db, t, c, &privs_text(*p)]);
        }
    }
    for (((u, h), role), admin) in &g.roles {
        line(out, &["role", u, h, role, if *admin { "1" } else { "0" }]);
    }
}

fn line(out: &mut String, fields: &[&str]) {
    let f: Vec<String> = fields.iter().map(|f| escape(f)).collect();
    out.push_str(&f.join("\t"));
    out.push('\n');
}

/// Privileges as names, comma-separated.
pub fn privs_text(p: Privs) -> String {
    (0..NAMES.len())
        .filter(|&i| p & bit(i as u32) != 0)
        .map(|i| NAMES[i])
        .collect::<Vec<_>>()
        .join(",")
}

pub fn privs_from_text(t: &str) -> Option<Privs> {
    t.split(',')
        .filter(|n| !n.is_empty())
        .try_fold(0, |acc, n| Some(acc | by_name(n)?))
}

/// Read one grant line (its fields unescaped); false when it is not a grant line.
pub fn from_line(g: &mut Grants, f: &[String]) -> Option<bool> {
    let who = |i: usize| (f[i].clone(), f[i + 1].clone());
    match (f.first().map(String::as_str), f.len()) {
        (Some("db"), 5) => {
            g.dbs
                .insert((who(1), f[3].clone()), privs_from_text(&f[4])?);
        }
        (Some("table"), 6) => {
            g.tables
                .entry((who(1), f[3].clone(), f[4].clone()))
                .or_default()
                .privs = privs_from_text(&f[5])?;
        }
        (Some("column"), 7) => {
            g.tables
                .entry((who(1), f[3].clone(), f[4].clone()))
                .or_default()
                .columns
                .insert(f[5].clone(), privs_from_text(&f[6])?);
        }
        (Some("role"), 5) => {
            g.roles.insert((who(1), f[3].clone()), f[4] == "1");
        }
        _ => return Some(false),
    }
    Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_levels_nest() {
        for (i, n) in NAMES.iter().enumerate() {
            assert_eq!(by_name(n), Some(bit(i as u32)), "{n}");
        }
        assert_eq!(by_name("replication client"), by_name("BINLOG MONITOR"));
        assert_eq!(by_name("frob"), None);
        assert_eq!(TABLE_ALL & !DB_ALL, 0);
        assert_eq!(COLUMN_ALL & !TABLE_ALL, 0);
        assert_eq!(DB_ALL & !GLOBAL_ALL, 0);
        assert_eq!(
            privs_from_text(&privs_text(DB_ALL | GRANT)),
            Some(DB_ALL | GRANT)
        );
    }

    /// The lines MariaDB 10.11 printed for the same grants.
    #[test]
    fn show_grants_lines_are_mariadbs() {
        let mut g = Grants::default();
        let app = ("app".to_string(), "localhost".to_string());
        g.grant(&app, &Level::Db("db1".into()), SELECT, &[]);
        let t = Level::Table("db1".into(), "t".into());
        g.grant(
            &app,
            &t,
            SELECT | INSERT,
            &[("b".into(), UPDATE), ("a".into(), REFERENCES)],
        );
        g.grant(
            &app,
            &Level::Db("db2".into()),
            DB_ALL & !(SELECT | INSERT | UPDATE | DELETE | REFERENCES) | GRANT,
            &[],
        );
        let lines = g.show_lines(&app, "`app`@`localhost`");
        assert_eq!(
            lines,
            [
                "GRANT SELECT ON `db1`.* TO `app`@`localhost`",
                "GRANT CREATE, DROP, INDEX, ALTER, CREATE TEMPORARY TABLES, LOCK TABLES, EXECUTE, CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, EVENT, TRIGGER, DELETE HISTORY ON `db2`.* TO `app`@`localhost` WITH GRANT OPTION",
                "GRANT SELECT, INSERT, UPDATE (`b`), REFERENCES (`a`) ON `db1`.`t` TO `app`@`localhost`",
            ]
        );
        g.grant(&app, &Level::Db("db1".into()), DB_ALL, &[]);
        assert_eq!(
            g.show_lines(&app, "`app`@`localhost`")[0],
            "GRANT ALL PRIVILEGES ON `db1`.* TO `app`@`localhost`"
        );
        assert_eq!(list_for(GLOBAL_ALL, GLOBAL_ALL), "ALL PRIVILEGES");
        assert_eq!(
            list_for(RELOAD | PROCESS | FILE, GLOBAL_ALL),
            "RELOAD, PROCESS, FILE"
        );
        assert_eq!(
            g.revoke(&app, &Level::Table("db1".into(), "u".into()), SELECT, &[])
                .unwrap_err()
                .code,
            1147
        );
        let mut text = String::new();
        to_lines(&g, &mut text);
        let mut back = Grants::default();
        for l in text.lines() {
            let f: Vec<String> = l.split('\t').map(quarry_common::field::unescape).collect();
            assert_eq!(from_line(&mut back, &f), Some(true), "{l}");
        }
        assert_eq!(back, g);
    }

    #[test]
    fn effective_privileges_merge_levels() {
        let mut g = Grants::default();
        let app = ("app".to_string(), "%".to_string());
        g.grant(&app, &Level::Db("shop\\_%".into()), SELECT, &[]);
        g.grant(
            &app,
            &Level::Table("x".into(), "t".into()),
            0,
            &[("a".into(), SELECT)],
        );
        let e = g.effective(0, std::slice::from_ref(&app));
        assert_eq!(e.db("shop_1"), SELECT);
        assert_eq!(e.db("shopx1"), 0, "an escaped _ is literal");
        assert!(e.any_in_db("x") && !e.any_in_db("y"));
        let (p, cols) = e.table("x", "t");
        assert_eq!(p, 0);
        assert_eq!(cols.unwrap().column("A"), SELECT);
    }
}
