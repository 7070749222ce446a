//! The accounts and grants as tools read them: the `mysql` schema's user, db,
//! tables_priv, columns_priv, roles_mapping and global_priv tables, and
//! `information_schema`'s USER_, SCHEMA_, TABLE_ and COLUMN_PRIVILEGES, built from the
//! account store as MariaDB 10.11 lays them out.
//!
//! Owns: the rows. Must not touch: the accounts and grants themselves (`accounts.rs`,
//! `privileges.rs`). Quarry keeps no grantor or grant time: tables_priv's Grantor is
//! empty and the timestamps are zero (MariaDB's are zero too). mysql.proc and
//! mysql.procs_priv are empty: Quarry has no stored routines yet.

use quarry_common::value::DateTime;
use quarry_common::{Row, Value};

use super::{int, s};
use crate::accounts::{Account, Store};
use crate::privileges::{self as p, Grantee, Privs};
use crate::session::Session;

/// mysql.user's privilege columns after Host, User and Password, in its order.
const USER_COLUMNS: [Privs; 30] = [
    p::SELECT,
    p::INSERT,
    p::UPDATE,
    p::DELETE,
    p::CREATE,
    p::DROP,
    p::RELOAD,
    p::SHUTDOWN,
    p::PROCESS,
    p::FILE,
    p::GRANT,
    p::REFERENCES,
    p::INDEX,
    p::ALTER,
    p::SHOW_DB,
    p::SUPER,
    p::CREATE_TMP,
    p::LOCK_TABLES,
    p::EXECUTE,
    1 << 19, // REPLICATION SLAVE
    1 << 20, // REPLICATION CLIENT (BINLOG MONITOR)
    p::CREATE_VIEW,
    p::SHOW_VIEW,
    p::CREATE_ROUTINE,
    p::ALTER_ROUTINE,
    p::CREATE_USER,
    p::EVENT,
    p::TRIGGER,
    1 << 28, // CREATE TABLESPACE
    p::DELETE_HISTORY,
];

/// mysql.db's privilege columns after Host, Db and User.
const DB_COLUMNS: [Privs; 20] = [
    p::SELECT,
    p::INSERT,
    p::UPDATE,
    p::DELETE,
    p::CREATE,
    p::DROP,
    p::GRANT,
    p::REFERENCES,
    p::INDEX,
    p::ALTER,
    p::CREATE_TMP,
    p::LOCK_TABLES,
    p::CREATE_VIEW,
    p::SHOW_VIEW,
    p::CREATE_ROUTINE,
    p::ALTER_ROUTINE,
    p::EXECUTE,
    p::EVENT,
    p::TRIGGER,
    p::DELETE_HISTORY,
];

/// A table grant's privileges as tables_priv's SET names them.
const TABLE_NAMES: [(Privs, &str); 14] = [
    (p::SELECT, "Select"),
    (p::INSERT, "Insert"),
    (p::UPDATE, "Update"),
    (p::DELETE, "Delete"),
    (p::CREATE, "Create"),
    (p::DROP, "Drop"),
    (p::GRANT, "Grant"),
    (p::REFERENCES, "References"),
    (p::INDEX, "Index"),
    (p::ALTER, "Alter"),
    (p::CREATE_VIEW, "Create View"),
    (p::SHOW_VIEW, "Show view"),
    (p::TRIGGER, "Trigger"),
    (p::DELETE_HISTORY, "Delete versioning rows"),
];

fn yn(have: Privs, bit: Privs) -> Value {
    s(if have & bit != 0 { "Y" } else { "N" })
}

fn set_text(privs: Privs) -> Value {
    let names: Vec<&str> = TABLE_NAMES
        .iter()
        .filter(|(b, _)| privs & b != 0)
        .map(|(_, n)| *n)
        .collect();
    s(names.join(","))
}

fn zero_time() -> Value {
    Value::DateTime(DateTime::from_micros(0))
}

/// `*` and the upper-case hex of SHA1(SHA1(password)), as MariaDB shows a native hash.
fn native_hash(a: &Account) -> String {
    if a.hash2.is_empty() {
        return String::new();
    }
    let hex: String = a.hash2.iter().map(|b| format!("{b:02X}")).collect();
    format!("*{hex}")
}

fn plugin(a: &Account) -> &'static str {
    match (a.role, a.ed25519.is_some()) {
        (true, _) => "",
        (false, true) => "ed25519",
        (false, false) => "mysql_native_password",
    }
}

fn auth_string(a: &Account) -> String {
    match &a.ed25519 {
        Some(k) => crate::ed25519::to_text(k),
        None => native_hash(a),
    }
}

/// `'user'@'host'`, or `'role'` for a role, as GRANTEE columns name them.
fn grantee((user, host): &Grantee) -> String {
    if host.is_empty() {
        format!("'{user}'")
    } else {
        format!("'{user}'@'{host}'")
    }
}

fn user_row(a: &Account) -> Row {
    let mut r = vec![s(&a.host), s(&a.user), s(native_hash(a))];
    r.extend(USER_COLUMNS.iter().map(|b| yn(a.privs, *b)));
    r.extend([
        s(if a.require_ssl { "ANY" } else { "" }),
        s(""),
        s(""),
        s(""),
        int(0),
        int(0),
        int(0),
        int(a.max_user_connections),
        s(plugin(a)),
        s(auth_string(a)),
        s(if a.expired { "Y" } else { "N" }),
        s(if a.role { "Y" } else { "N" }),
        s(a.default_role.clone().unwrap_or_default()),
        Value::Decimal(quarry_common::Decimal::new(0, 6)),
    ]);
    r
}

fn global_priv_row(a: &Account) -> Row {
    let mut json = format!("{{\"access\":{},\"version_id\":101119", a.privs);
    if a.role {
        json.push_str(",\"is_role\":true");
    } else {
        json.push_str(&format!(
            ",\"plugin\":\"{}\",\"authentication_string\":\"{}\",\"password_last_changed\":{}",
            plugin(a),
            auth_string(a),
            a.password_changed
        ));
    }
    json.push('}');
    vec![s(&a.host), s(&a.user), s(json)]
}

impl Session {
    /// The rows of `mysql`.`name` (its tables are read under the usual privileges:
    /// SELECT on `mysql`).
    pub(super) fn mysql_rows(&self, name: &str) -> Vec<Row> {
        self.db.accounts.read(|st: &Store| match name {
            "user" => st.list.iter().map(user_row).collect(),
            "global_priv" => st.list.iter().map(global_priv_row).collect(),
            "db" => st
                .grants
                .dbs
                .iter()
                .map(|(((user, host), db), privs)| {
                    let mut r = vec![s(host), s(db), s(user)];
                    r.extend(DB_COLUMNS.iter().map(|b| yn(*privs, *b)));
                    r
                })
                .collect(),
            "tables_priv" => st
                .grants
                .tables
                .iter()
                .map(|(((user, host), db, table), g)| {
                    vec![
                        s(host),
                        s(db),
                        s(user),
                        s(table),
                        s(""),
                        zero_time(),
                        set_text(g.privs),
                        set_text(g.any_column()),
                    ]
                })
                .collect(),
            "columns_priv" => st
                .grants
                .tables
                .iter()
                .flat_map(|(((user, host), db, table), g)| {
                    g.columns.iter().map(move |(column, privs)| {
                        vec![
                            s(host),
                            s(db),
                            s(user),
                            s(table),
                            s(column),
                            zero_time(),
                            set_text(*privs),
                        ]
                    })
                })
                .collect(),
            "roles_mapping" => st
                .grants
                .roles
                .iter()
                .map(|(((user, host), role), admin)| {
                    vec![s(host), s(user), s(role), s(if *admin { "Y" } else { "N" })]
                })
                .collect(),
            _ => vec![],
        })
    }

    /// USER_, SCHEMA_, TABLE_ and COLUMN_PRIVILEGES: one row per privilege held. An
    /// account sees its own grants, and everyone's with SELECT on `mysql`, as MariaDB.
    pub(super) fn privilege_rows(&self, name: &str) -> Vec<Row> {
        let me: Grantee = (self.info.user.clone(), self.info.account_host.clone());
        let all = self.privileges().db(quarry_catalog::MYSQL_SCHEMA) & p::SELECT != 0;
        let shown = |g: &Grantee| all || *g == me;
        let grantable = |privs: Privs| s(if privs & p::GRANT != 0 { "YES" } else { "NO" });
        self.db.accounts.read(|st: &Store| {
            let mut rows = vec![];
            match name {
                "USER_PRIVILEGES" => {
                    for a in &st.list {
                        let g = (a.user.clone(), a.host.clone());
                        if !shown(&g) {
                            continue;
                        }
                        let names = p::names(a.privs);
                        let names = if names.is_empty() {
                            vec!["USAGE"]
                        } else {
                            names
                        };
                        for n in names {
                            rows.push(vec![s(grantee(&g)), s("def"), s(n), grantable(a.privs)]);
                        }
                    }
                }
                "SCHEMA_PRIVILEGES" => {
                    for ((g, db), privs) in &st.grants.dbs {
                        if shown(g) {
                            for n in p::names(*privs) {
                                rows.push(vec![
                                    s(grantee(g)),
                                    s("def"),
                                    s(db),
                                    s(n),
                                    grantable(*privs),
                                ]);
                            }
                        }
                    }
                }
                "TABLE_PRIVILEGES" => {
                    for ((g, db, table), tg) in &st.grants.tables {
                        if shown(g) {
                            for n in p::names(tg.privs) {
                                rows.push(vec![
                                    s(grantee(g)),
                                    s("def"),
                                    s(db),
                                    s(table),
                                    s(n),
                                    grantable(tg.privs),
                                ]);
                            }
                        }
                    }
                }
                _ => {
                    for ((g, db, table), tg) in &st.grants.tables {
                        if !shown(g) {
                            continue;
                        }
                        for (column, privs) in &tg.columns {
                            for n in p::names(*privs) {
                                rows.push(vec![
                                    s(grantee(g)),
                                    s("def"),
                                    s(db),
                                    s(table),
                                    s(column),
                                    s(n),
                                    grantable(tg.privs),
                                ]);
                            }
                        }
                    }
                }
            }
            rows
        })
    }
}
