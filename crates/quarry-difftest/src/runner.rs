//! The servers a run compares: a private MariaDB 10.11 (optional) and `quarry serve`, one
//! connection per database variant. Loads a schema into every variant and runs one
//! statement on one of them, as an [`Outcome`] the oracles can compare.

use std::time::Duration;

use quarry_testkit::client::{Conn, ConnectOptions, DbError};
use quarry_testkit::servers::Server;

use crate::schema::{Table, Variant};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Rows(Vec<Vec<Option<String>>>),
    /// Rows changed (DML).
    Done(u64),
    Error(u16, String),
}

impl Outcome {
    pub fn show(&self) -> String {
        match self {
            Outcome::Rows(rows) => {
                let mut out = format!("{} rows", rows.len());
                for r in rows.iter().take(12) {
                    let vals: Vec<&str> =
                        r.iter().map(|v| v.as_deref().unwrap_or("NULL")).collect();
                    out.push_str(&format!("\n    {}", vals.join(" | ")));
                }
                if rows.len() > 12 {
                    out.push_str("\n    …");
                }
                out
            }
            Outcome::Done(n) => format!("OK, {n} rows affected"),
            Outcome::Error(c, m) => format!("ERROR {c}: {m}"),
        }
    }
}

/// The character set and collation of every database either side makes (MariaDB's own
/// default, under the harness's configuration, is latin1).
pub const UTF8MB4: &str = "CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci";

pub const VARIANTS: [Variant; 3] = [Variant::Indexed, Variant::NoIndex, Variant::Column];

/// Queries slower than this count as hangs.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Side {
    pub server: Server,
    /// One connection per variant ([`VARIANTS`] order); MariaDB has only `Indexed`.
    pub conns: Vec<Conn>,
    /// The database each connection is in (to return to after reconnecting).
    dbs: Vec<String>,
    /// Statements every connection runs first.
    init: Vec<String>,
}

impl Side {
    pub fn open(server: Server, variants: &[Variant], init: &[&str]) -> Result<Side, String> {
        let init: Vec<String> = init.iter().map(|s| s.to_string()).collect();
        let mut conns = vec![];
        for v in variants {
            let mut c = connect(&server, &init)?;
            c.exec(&format!("DROP DATABASE IF EXISTS {}", v.db()))
                .and_then(|_| c.exec(&format!("CREATE DATABASE {} {UTF8MB4}", v.db())))
                .and_then(|_| c.exec(&format!("USE {}", v.db())))
                .map_err(|e| format!("{}: {e}", server.name))?;
            conns.push(c);
        }
        let dbs = variants.iter().map(|v| v.db().to_string()).collect();
        Ok(Side {
            server,
            conns,
            dbs,
            init,
        })
    }

    /// Recreate `tables` in every variant's database.
    pub fn load(&mut self, tables: &[Table], variants: &[Variant]) -> Result<(), String> {
        for (c, v) in self.conns.iter_mut().zip(variants) {
            for t in tables {
                let mut stmts = vec![format!("DROP TABLE IF EXISTS {}", t.name)];
                stmts.extend(t.load(*v));
                for s in stmts {
                    c.exec(&s)
                        .map_err(|e| format!("{} ({}): {s}: {e}", self.server.name, v.db()))?;
                }
            }
        }
        Ok(())
    }

    /// Run `sql` on variant `i`. A connection lost (a crashed statement) is error 2013,
    /// after connecting again; a server that is gone is an error (the caller stops).
    pub fn run(&mut self, i: usize, sql: &str) -> Result<Outcome, String> {
        match self.conns[i].query(sql) {
            Ok(r) if r.columns.is_empty() => Ok(Outcome::Done(r.affected)),
            Ok(r) => Ok(Outcome::Rows(r.rows)),
            Err(DbError { code: 0, message }) => {
                let mut c = connect(&self.server, &self.init)
                    .map_err(|e| format!("gone after `{sql}` ({message}): {e}"))?;
                c.exec(&format!("USE {}", self.dbs[i]))
                    .map_err(|e| e.to_string())?;
                self.conns[i] = c;
                Ok(Outcome::Error(2013, format!("Lost connection: {message}")))
            }
            Err(e) => Ok(Outcome::Error(e.code, e.message)),
        }
    }

    /// Later statements on connection `i` run in `db`.
    pub fn use_db(&mut self, i: usize, db: &str) -> Result<(), String> {
        self.run(i, &format!("USE {db}"))?;
        self.dbs[i] = db.to_string();
        Ok(())
    }
}

/// A connection to `server` with the statement timeout, `init` run on it.
fn connect(server: &Server, init: &[String]) -> Result<Conn, String> {
    let mut o = ConnectOptions::new(server.port);
    o.read_timeout = Some(STATEMENT_TIMEOUT);
    let mut c = Conn::connect(&o).map_err(|e| format!("{}: {e}", server.name))?;
    for s in init {
        c.exec(s)
            .map_err(|e| format!("{}: {s}: {e}", server.name))?;
    }
    Ok(c)
}
