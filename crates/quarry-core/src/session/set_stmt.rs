//! SET statements: system variables (session and global, with their checks and
//! effects), user variables, SET TRANSACTION and SET NAMES.
//!
//! Owns: turning an assignment into a variable's value. Must not touch: what the
//! variables then do (the session reads them through `settings`).

use quarry_common::{Error, Result, Value};
use quarry_planner::Binder;
use quarry_sql::ast;

use super::{Output, Session, StmtSink};
use crate::vars::normalise;

impl Session {
    /// SET [GLOBAL | SESSION] TRANSACTION ISOLATION LEVEL … / READ ONLY | READ WRITE: the
    /// variables change (every level behaves as the lock-based serializable one for now;
    /// COMPAT.md). Without a scope MySQL applies it to the next transaction only; Quarry
    /// applies it to the session.
    pub(super) fn set_transaction(
        &mut self,
        modes: &[ast::TransactionMode],
        _session: bool,
        set: &ast::Set,
    ) -> Result<Output> {
        let global = set
            .to_string()
            .to_ascii_uppercase()
            .starts_with("SET GLOBAL");
        for m in modes {
            let (names, v) = match m {
                ast::TransactionMode::IsolationLevel(l) => {
                    let level = match l {
                        ast::TransactionIsolationLevel::ReadUncommitted => "READ-UNCOMMITTED",
                        ast::TransactionIsolationLevel::ReadCommitted => "READ-COMMITTED",
                        ast::TransactionIsolationLevel::RepeatableRead => "REPEATABLE-READ",
                        ast::TransactionIsolationLevel::Serializable => "SERIALIZABLE",
                        ast::TransactionIsolationLevel::Snapshot => {
                            return Err(Error::syntax_near("SNAPSHOT"))
                        }
                    };
                    (
                        ["transaction_isolation", "tx_isolation"],
                        Value::Str(level.into()),
                    )
                }
                ast::TransactionMode::AccessMode(a) => (
                    ["transaction_read_only", "tx_read_only"],
                    Value::Int(matches!(a, ast::TransactionAccessMode::ReadOnly) as i64),
                ),
            };
            for n in names {
                if global {
                    self.db.set_global(n, v.clone());
                } else {
                    self.set_session_var(n.to_string(), Some(v.clone()));
                }
            }
        }
        Ok(Output::ok(0))
    }

    pub(super) fn set(
        &mut self,
        set: &ast::Set,
        params: Vec<Value>,
        sink: &StmtSink,
    ) -> Result<Output> {
        let mut assigns: Vec<(String, bool, ast::Expr)> = vec![];
        match set {
            ast::Set::SingleAssignment {
                scope,
                variable,
                values,
                ..
            } => {
                let global = matches!(scope, Some(ast::ContextModifier::Global));
                let v = values
                    .first()
                    .cloned()
                    .ok_or_else(|| Error::syntax_near("SET"))?;
                assigns.push((variable.to_string(), global, v));
            }
            ast::Set::MultipleAssignments { assignments } => {
                for a in assignments {
                    assigns.push((
                        a.name.to_string(),
                        matches!(a.scope, Some(ast::ContextModifier::Global)),
                        a.value.clone(),
                    ));
                }
            }
            ast::Set::SetTransaction { modes, session, .. } => {
                return self.set_transaction(modes, *session, set);
            }
            ast::Set::SetNames {
                charset_name,
                collation_name,
            } => {
                self.set_names(&charset_name.value, collation_name.as_deref())?;
                return Ok(Output::ok(0));
            }
            ast::Set::SetNamesDefault {} => {
                self.set_names("utf8mb4", None)?;
                return Ok(Output::ok(0));
            }
            ast::Set::SetTimeZone { .. } => return Ok(Output::ok(0)),
            other => return Err(Error::unsupported(other.to_string())),
        }
        // SET GLOBAL needs its privilege before any assignment of the statement happens.
        for (name, global_kw, _) in &assigns {
            if name.starts_with('@') && !name.starts_with("@@") {
                continue;
            }
            let (n, scope) = normalise(name);
            if *global_kw || scope == Some(true) {
                self.require_global(crate::privileges::set_global_needs(&n))?;
            }
        }
        for (name, global_kw, expr) in assigns {
            let cur = self.current_db.clone();
            if let Some(uv) = name.strip_prefix('@').filter(|n| !n.starts_with('@')) {
                let v = self.exec_ctx(params.clone(), sink, |ctx| {
                    Binder::new(&self.db.catalog, cur)
                        .bind_expr(&expr)?
                        .eval(&[], ctx)
                })?;
                self.user_vars
                    .insert(uv.trim_matches('`').to_ascii_lowercase(), v);
                continue;
            }
            let (n, scope) = normalise(&name);
            let n = crate::oplog::canonical(&n).to_string();
            let global = global_kw || scope == Some(true);
            if matches!(&expr, ast::Expr::Identifier(i) if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("DEFAULT"))
            {
                // SET SESSION v = DEFAULT takes the global value again; SET GLOBAL v =
                // DEFAULT restores the compiled-in default.
                let compiled = crate::vars::defaults().into_iter().find(|(d, _)| *d == n);
                match (global, compiled) {
                    (_, None) => return Err(Error::unknown_system_variable(&n)),
                    (true, Some((_, v))) => self.db.set_global(&n, v),
                    (false, Some(_)) => {
                        self.set_session_var(n, None);
                    }
                }
                continue;
            }
            // Bare words (SET autocommit = ON, sql_mode = TRADITIONAL) are values, not
            // columns; `@name` is a user variable (a dump's SET FOREIGN_KEY_CHECKS =
            // @OLD_FOREIGN_KEY_CHECKS).
            let v = match &expr {
                ast::Expr::Identifier(i) if !i.value.starts_with('@') => {
                    Value::Str(i.value.clone())
                }
                other => self.exec_ctx(params.clone(), sink, |ctx| {
                    Binder::new(&self.db.catalog, cur)
                        .bind_expr(other)?
                        .eval(&[], ctx)
                })?,
            };
            if self.db.global(&n).is_none() {
                return Err(Error::unknown_system_variable(&n));
            }
            let v = match n.as_str() {
                log if crate::oplog::is_log_variable(log) => {
                    crate::oplog::check_setting(log, &v, global, self.db.datadir())?
                }
                "read_only" | "quarry_disk_keep_free" if !global => {
                    return Err(Error::global_only_variable(&n));
                }
                "autocommit" | "sql_auto_is_null" | "foreign_key_checks" | "sql_safe_updates" | "unique_checks" | "sql_notes" | "sql_quote_show_create" | "require_secure_transport" | "read_only" | "sql_log_bin" | "gtid_strict_mode" | "quarry_vector_execution" | "quarry_runtime_filters" | "quarry_explain_passes" => {
                    let on = match &v {
                        Value::Str(s) => match s.to_ascii_uppercase().as_str() {
                            "ON" | "TRUE" | "1" => true,
                            "OFF" | "FALSE" | "0" => false,
                            _ => return Err(Error::wrong_value_for_variable(&n, s)),
                        },
                        other => other.to_i64() != 0,
                    };
                    if n == "autocommit" && on && self.in_txn && !global {
                        self.commit()?;
                    }
                    Value::Int(on as i64)
                }
                "sql_mode" => Value::Str(match v.as_str_lossy().to_ascii_uppercase().as_str() {
                    "TRADITIONAL" => "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION".into(),
                    other => other.to_string(),
                }),
                "version" | "version_comment" | "datadir" | "port" | "socket" | "hostname" | "lower_case_table_names" | "secure_file_priv" | "have_ssl" | "have_openssl" | "ssl_cert" | "ssl_key" | "ssl_ca" | "tls_version" | "innodb_version" | "protocol_version" | "log_bin" | "skip_name_resolve" | "innodb_file_per_table" | "basedir" | "tmpdir" | "lc_messages" | "event_scheduler" | "gtid_current_pos" | "gtid_binlog_pos" | "binlog_format" | "performance_schema" => {
                    return Err(Error::read_only_variable(&n));
                }
                _ => v,
            };
            if global {
                self.db.set_global(&n, v);
            } else {
                self.set_session_var(n, Some(v));
            }
        }
        Ok(Output::ok(0))
    }

    /// SET NAMES: the character set the client sends, the connection compares in and
    /// results come back in (the server converts; values stay UTF-8 inside).
    pub(super) fn set_names(&mut self, name: &str, collation: Option<&str>) -> Result<()> {
        if quarry_common::charset::Charset::named(name).is_none() {
            return Err(Error::unknown_charset(name));
        }
        let lower = name.to_ascii_lowercase();
        let shown = if lower == "utf8" {
            "utf8mb3".into()
        } else {
            lower
        };
        let coll = collation.map_or_else(
            || match shown.as_str() {
                "latin1" => "latin1_swedish_ci".to_string(),
                "binary" => "binary".into(),
                "ascii" => "ascii_general_ci".into(),
                cs => format!("{cs}_general_ci"),
            },
            |c| c.to_ascii_lowercase(),
        );
        for v in [
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ] {
            self.set_session_var(v.into(), Some(Value::Str(shown.clone())));
        }
        self.set_session_var("collation_connection".into(), Some(Value::Str(coll)));
        Ok(())
    }
}
