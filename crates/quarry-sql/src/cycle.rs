//! MariaDB's `CYCLE column, … RESTRICT` after a recursive CTE's query (10.5.2+), which
//! sqlparser does not know. It is taken out of the tokens before parsing and put back on
//! the parsed CTE, as a `SETTINGS` entry of its query (`quarry_cycle = (column, …)`): a
//! clause the MySQL dialect never parses, so only this makes one. The binder reads it
//! there ([`cycle_columns`]).
//!
//! Owns: the clause's tokens. Must not touch: what the clause means (the binder's).

use std::ops::ControlFlow;

use sqlparser::ast::{self, Ident, Setting, VisitMut, VisitorMut};
use sqlparser::tokenizer::{Location, Token, TokenWithSpan};

const MARKER: &str = "quarry_cycle";

/// The clauses taken out: where the `)` before each one starts, and its columns.
#[derive(Default)]
pub(crate) struct Cycles(Vec<(Location, Vec<Ident>)>);

fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

/// Take every `) CYCLE a [, b …] RESTRICT` out of `toks`, keeping the `)`.
pub(crate) fn take(toks: &mut Vec<TokenWithSpan>) -> Cycles {
    let mut found = Cycles::default();
    let mut i = 0;
    while i < toks.len() {
        if !is_word(&toks[i].token, "CYCLE") {
            i += 1;
            continue;
        }
        let solid = |j: usize| !matches!(toks[j].token, Token::Whitespace(_));
        let Some(paren) = (0..i).rev().find(|&j| solid(j)) else {
            i += 1;
            continue;
        };
        if toks[paren].token != Token::RParen {
            i += 1;
            continue;
        }
        // The column list, then RESTRICT; anything else is left for the parser to refuse.
        let mut cols = vec![];
        let mut want_name = true;
        let mut j = i + 1;
        let end = loop {
            while j < toks.len() && !solid(j) {
                j += 1;
            }
            let Some(t) = toks.get(j) else { break None };
            match &t.token {
                Token::Word(w) if want_name => cols.push(Ident {
                    value: w.value.clone(),
                    quote_style: w.quote_style,
                    span: t.span,
                }),
                Token::Comma if !want_name => {}
                x if !want_name && is_word(x, "RESTRICT") => break Some(j),
                _ => break None,
            }
            want_name = !want_name;
            j += 1;
        };
        let Some(end) = end else {
            i += 1;
            continue;
        };
        found.0.push((toks[paren].span.start, cols));
        toks.drain(i..=end);
    }
    found
}

impl Cycles {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Put each clause on the CTE whose `)` it followed; false if one is on none (a
    /// `CYCLE` after another parenthesis: the statement is refused).
    pub(crate) fn put_back(self, stmts: &mut [ast::Statement]) -> bool {
        struct Attach(Vec<(Location, Vec<Ident>)>);
        impl VisitorMut for Attach {
            type Break = ();
            fn pre_visit_query(&mut self, q: &mut ast::Query) -> ControlFlow<()> {
                let Some(with) = &mut q.with else {
                    return ControlFlow::Continue(());
                };
                for cte in &mut with.cte_tables {
                    let at = cte.closing_paren_token.0.span.start;
                    if let Some(k) = self.0.iter().position(|(l, _)| *l == at) {
                        let (_, cols) = self.0.remove(k);
                        let value =
                            ast::Expr::Tuple(cols.into_iter().map(ast::Expr::Identifier).collect());
                        cte.query.settings = Some(vec![Setting {
                            key: Ident::new(MARKER),
                            value,
                        }]);
                    }
                }
                ControlFlow::Continue(())
            }
        }
        let mut a = Attach(self.0);
        for s in stmts.iter_mut() {
            let _ = s.visit(&mut a);
        }
        a.0.is_empty()
    }
}

/// The columns of a CTE query's `CYCLE … RESTRICT` (names as written), if it has one.
pub fn cycle_columns(q: &ast::Query) -> Option<Vec<&Ident>> {
    let s = q
        .settings
        .as_ref()?
        .iter()
        .find(|s| s.key.value == MARKER)?;
    match &s.value {
        ast::Expr::Tuple(v) => Some(
            v.iter()
                .filter_map(|e| match e {
                    ast::Expr::Identifier(i) => Some(i),
                    _ => None,
                })
                .collect(),
        ),
        _ => None,
    }
}

/// `q` as SQL text, its CTEs' `CYCLE … RESTRICT` written back where MariaDB has them
/// (after the CTE's parenthesis): a view's stored definition.
pub fn query_text(q: &ast::Query) -> String {
    let text = q.to_string();
    let marker = format!(" SETTINGS {MARKER} = (");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find(&marker) {
        let after = &rest[at + marker.len()..];
        // The column list holds names only (no parenthesis); the CTE's own closes after.
        let Some(end) = after.find(')') else { break };
        let Some(tail) = after[end + 1..].strip_prefix(')') else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str(") CYCLE ");
        out.push_str(&after[..end]);
        out.push_str(" RESTRICT");
        rest = tail;
    }
    out.push_str(rest);
    out
}
