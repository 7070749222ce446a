//! EXPLAIN of a SELECT: MySQL's table, `FORMAT=TREE`, `FORMAT=JSON`, and EXPLAIN ANALYZE
//! (the plan run, with each operator's rows, loops and time). With
//! `quarry_explain_passes` on, `FORMAT=TREE` shows each SELECT block's plan after each
//! rewrite of the planner before the plan itself: what the golden plan tests keep.
//!
//! Owns: the statement's output. The plan and its printing are the planner's
//! (`quarry_planner::explain`).

use quarry_common::{Decimal, Error, Result, SqlType, TypeKind, Value};
use quarry_executor::exec::collect;
use quarry_executor::{OutColumn, SessionInfo};
use quarry_planner::{explain, Binder};
use quarry_sql::ast::{self, Statement as S};

use super::{text, Output, Session, StmtSink};

impl Session {
    pub(super) fn explain(
        &mut self,
        statement: &S,
        analyze: bool,
        format: Option<&ast::AnalyzeFormatKind>,
        params: Vec<Value>,
        sink: &StmtSink,
    ) -> Result<Output> {
        let S::Query(q) = statement else {
            return Err(Error::unsupported("EXPLAIN of this statement"));
        };
        let cur = self.current_db.clone();
        let mut b = Binder::new(&self.db.catalog, cur);
        let fmt = format.map(|f| match f {
            ast::AnalyzeFormatKind::Keyword(x) | ast::AnalyzeFormatKind::Assignment(x) => *x,
        });
        let passes = fmt == Some(ast::AnalyzeFormat::TREE)
            && !analyze
            && self
                .sys_var("quarry_explain_passes")
                .is_ok_and(|v| v.to_i64() != 0);
        if passes {
            b.trace = Some(vec![]);
        }
        let sp = b.bind_query(q)?;
        let filters = self
            .sys_var("quarry_runtime_filters")
            .is_ok_and(|v| v.to_i64() != 0);
        if let Some(trace) = b.trace.take() {
            let mut lines = explain::passes(&trace);
            lines.push("-- plan".into());
            lines.extend(explain::tree(&sp.plan, None, filters));
            return Ok(Output::Rows {
                columns: vec![text("EXPLAIN", 1024)],
                rows: vec![vec![Value::Str(lines.join("\n"))]],
            });
        }
        if analyze {
            let profile = self.exec_ctx(params, sink, |ctx| {
                *ctx.profile.borrow_mut() = Some(Default::default());
                collect(&sp.plan, ctx)?;
                Ok(ctx.profile.borrow_mut().take().unwrap_or_default())
            })?;
            let lines = explain::tree(&sp.plan, Some(&profile), filters);
            return Ok(Output::Rows {
                columns: vec![text("EXPLAIN", 1024)],
                rows: vec![vec![Value::Str(lines.join("\n"))]],
            });
        }
        match fmt {
            Some(ast::AnalyzeFormat::TREE) => Ok(Output::Rows {
                columns: vec![text("EXPLAIN", 1024)],
                rows: vec![vec![Value::Str(
                    explain::tree(&sp.plan, None, filters).join("\n"),
                )]],
            }),
            None | Some(ast::AnalyzeFormat::TRADITIONAL) => {
                let columns = explain::COLUMNS
                    .iter()
                    .map(|c| match *c {
                        "id" | "rows" => OutColumn::expr(c, SqlType::new(TypeKind::BigInt), true),
                        "filtered" => OutColumn::expr(c, SqlType::decimal(5, 2), true),
                        _ => text(c, 255),
                    })
                    .collect();
                let s = |x: Option<String>| x.map(Value::Str).unwrap_or(Value::Null);
                let rows = explain::table(&sp.plan)
                    .into_iter()
                    .map(|r| {
                        vec![
                            Value::Int(r.id as i64),
                            Value::Str(r.select_type.into()),
                            s(r.table),
                            s(r.access_type.map(String::from)),
                            s(r.possible_keys),
                            s(r.key),
                            s(r.key_len),
                            s(r.reference),
                            r.rows.map(|n| Value::Int(n as i64)).unwrap_or(Value::Null),
                            r.filtered
                                .map(|f| {
                                    Value::Decimal(Decimal::new((f * 100.0).round() as i128, 2))
                                })
                                .unwrap_or(Value::Null),
                            s(r.extra),
                        ]
                    })
                    .collect();
                Ok(Output::Rows { columns, rows })
            }
            Some(ast::AnalyzeFormat::JSON) => Ok(Output::Rows {
                columns: vec![text("EXPLAIN", 1024)],
                rows: vec![vec![Value::Str(explain::json(&sp.plan))]],
            }),
            Some(other) => Err(Error::unsupported(format!("EXPLAIN FORMAT={other}"))),
        }
    }
}
