//! Window functions in a SELECT: `f(…) OVER (…)` and the WINDOW clause bound into window
//! calls, checked as MariaDB 10.11 checks them (errors 4009–4024, 4074), and grouped into
//! the `Plan::Window` node that sits above the grouping and below the select list.
//! Owns: resolving named windows, frames, each call's arguments and result type. Must not
//! touch: how the calls are computed (the executor's `window.rs`).

use sqlparser::ast::{self, Expr as A};

use quarry_common::{Error, Result, SqlType, TypeKind, Value};

use super::{is_float, is_number, Binder};
use quarry_executor::expr::Expr;
use quarry_executor::plan::{AggFunc, Frame, FrameBound, Plan, WinCall, WinFunc, WinSpec};

/// A window call as bound, before its spec is shared with the calls of the same window.
#[derive(Debug, Clone)]
pub(crate) struct BoundWin {
    pub call: WinCall,
    pub partition: Vec<Expr>,
    pub order: Vec<(Expr, bool)>,
    pub nullable: bool,
}

impl BoundWin {
    /// Every expression of the call rewritten by `f` (the grouping's rewrite).
    pub fn map_exprs(&mut self, f: &mut dyn FnMut(Expr) -> Expr) {
        let take = |e: &mut Expr, f: &mut dyn FnMut(Expr) -> Expr| {
            *e = f(std::mem::replace(e, Expr::Lit(Value::Null)));
        };
        self.partition.iter_mut().for_each(|e| take(e, f));
        self.order.iter_mut().for_each(|(e, _)| take(e, f));
        self.call.args.iter_mut().for_each(|e| take(e, f));
        if let WinFunc::Agg(a) = &mut self.call.func {
            a.args.iter_mut().for_each(|e| take(e, f));
        }
    }
}

/// A function call that has an OVER clause, as the binder found it.
pub(super) struct WindowCall<'c> {
    pub f: &'c ast::Function,
    pub name: &'c str,
    pub agg: Option<AggFunc>,
    pub args: &'c [&'c ast::FunctionArg],
    pub distinct: bool,
    pub clauses: &'c [ast::FunctionArgumentClause],
}

/// A window specification with its references to named windows followed.
struct Resolved {
    partition: Vec<A>,
    order: Vec<ast::OrderByExpr>,
    frame: Option<ast::WindowFrame>,
}

/// How many named windows may refer one to the next (a longer chain is a cycle).
const MAX_WINDOW_REFERENCES: usize = 64;

impl Binder<'_> {
    /// Check a SELECT's WINDOW clause: names unique (4010), references resolvable.
    pub(super) fn check_named_windows(&self) -> Result<()> {
        for (i, d) in self.named_windows.iter().enumerate() {
            if self.named_windows[..i]
                .iter()
                .any(|e| e.0.value.eq_ignore_ascii_case(&d.0.value))
            {
                return Err(Error::duplicate_window(&d.0.value));
            }
        }
        for d in &self.named_windows {
            self.resolve_named(&d.0.value, 0)?;
        }
        Ok(())
    }

    fn resolve_named(&self, name: &str, depth: usize) -> Result<Resolved> {
        let def = self
            .named_windows
            .iter()
            .find(|d| d.0.value.eq_ignore_ascii_case(name))
            .filter(|_| depth < MAX_WINDOW_REFERENCES)
            .ok_or_else(|| Error::unknown_window(name))?;
        match &def.1 {
            ast::NamedWindowExpr::NamedWindow(other) => self.resolve_named(&other.value, depth + 1),
            ast::NamedWindowExpr::WindowSpec(ws) => self.resolve_spec(ws, depth + 1),
        }
    }

    fn resolve_spec(&self, ws: &ast::WindowSpec, depth: usize) -> Result<Resolved> {
        let Some(base) = &ws.window_name else {
            return Ok(Resolved {
                partition: ws.partition_by.clone(),
                order: ws.order_by.clone(),
                frame: ws.window_frame.clone(),
            });
        };
        let name = &base.value;
        let base = self.resolve_named(name, depth)?;
        if !ws.partition_by.is_empty() {
            return Err(Error::partition_in_referencing_window(name));
        }
        if !base.order.is_empty() && !ws.order_by.is_empty() {
            return Err(Error::order_in_referenced_window(name));
        }
        if base.frame.is_some() {
            return Err(Error::frame_in_referenced_window(name));
        }
        Ok(Resolved {
            partition: base.partition,
            order: if ws.order_by.is_empty() {
                base.order
            } else {
                ws.order_by.clone()
            },
            frame: ws.window_frame.clone(),
        })
    }

    /// `name(args) OVER (…)`: a window call placeholder (`Expr::WinRef`).
    pub(super) fn bind_window_call(
        &mut self,
        c: WindowCall,
        over: &ast::WindowType,
    ) -> Result<Expr> {
        if self.in_aggregate {
            return Err(Error::window_in_aggregate());
        }
        if self.wins.is_none() {
            return Err(Error::window_function_placement());
        }
        let spec = match over {
            ast::WindowType::NamedWindow(n) => self.resolve_named(&n.value, 0)?,
            ast::WindowType::WindowSpec(ws) => self.resolve_spec(ws, 0)?,
        };
        // Nothing inside a window call may be another window call (4015).
        let wins = self.wins.take();
        let r = self.bind_window_parts(c, &spec);
        self.wins = wins;
        let w = r?;
        let list = self.wins.as_mut().expect("window calls allowed here");
        list.push(w);
        Ok(Expr::WinRef(list.len() - 1))
    }

    fn bind_window_parts(&mut self, c: WindowCall, spec: &Resolved) -> Result<BoundWin> {
        let WindowCall {
            f,
            name,
            agg,
            args,
            distinct,
            clauses,
        } = c;
        let lower = name.to_ascii_lowercase();
        let (func, arity) = match name {
            "ROW_NUMBER" => (WinFunc::RowNumber, 0..=0),
            "RANK" => (WinFunc::Rank, 0..=0),
            "DENSE_RANK" => (WinFunc::DenseRank, 0..=0),
            "PERCENT_RANK" => (WinFunc::PercentRank, 0..=0),
            "CUME_DIST" => (WinFunc::CumeDist, 0..=0),
            "NTILE" => (WinFunc::Ntile, 1..=1),
            // MariaDB's LAG and LEAD take no default value (a third argument is 1064).
            "LAG" => (WinFunc::Lag, 1..=2),
            "LEAD" => (WinFunc::Lead, 1..=2),
            "FIRST_VALUE" => (WinFunc::FirstValue, 1..=1),
            "LAST_VALUE" => (WinFunc::LastValue, 1..=1),
            "NTH_VALUE" => (WinFunc::NthValue, 2..=2),
            _ => match agg {
                Some(AggFunc::GroupConcat) => {
                    return Err(Error::unsupported(
                        "GROUP_CONCAT() aggregate as window function",
                    ))
                }
                Some(_) if distinct => {
                    return Err(Error::unsupported(format!(
                        "{name}(DISTINCT) aggregate as window function"
                    )))
                }
                Some(func) => {
                    let a = self.bind_agg(f, func, args, false, clauses, true)?;
                    (WinFunc::Agg(a), 0..=0)
                }
                None => return Err(Error::syntax_near(&f.to_string())),
            },
        };
        let is_agg = matches!(func, WinFunc::Agg(_));
        if !is_agg && (!arity.contains(&args.len()) || distinct) {
            return Err(Error::syntax_near(&f.to_string()));
        }
        let ranking = matches!(
            func,
            WinFunc::RowNumber
                | WinFunc::Rank
                | WinFunc::DenseRank
                | WinFunc::PercentRank
                | WinFunc::CumeDist
                | WinFunc::Ntile
        );
        if ranking && spec.frame.is_some() {
            return Err(Error::frame_not_allowed(&lower));
        }
        let needs_order = matches!(
            func,
            WinFunc::Rank
                | WinFunc::DenseRank
                | WinFunc::PercentRank
                | WinFunc::CumeDist
                | WinFunc::Lag
                | WinFunc::Lead
        );
        if needs_order && spec.order.is_empty() {
            return Err(Error::window_needs_order(&lower));
        }
        let mut bound = vec![];
        if !is_agg {
            for a in args {
                match a {
                    ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => {
                        bound.push(self.bind_expr(e)?)
                    }
                    other => return Err(Error::syntax_near(&other.to_string())),
                }
            }
        }
        let mut partition = vec![];
        for e in &spec.partition {
            let b = self.in_clause("PARTITION BY", |b| b.bind_expr(e))?;
            partition.push(self.sort_key_of(b)?);
        }
        let mut order = vec![];
        for o in &spec.order {
            let b = self.in_clause("ORDER BY", |b| b.bind_expr(&o.expr))?;
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            order.push((self.sort_key_of(b)?, desc));
        }
        let frame = match &spec.frame {
            Some(fr) => self.bind_frame(fr, &order)?,
            None if order.is_empty() => Frame::whole(),
            None => Frame::to_current_row(),
        };
        let cols = self.scope_cols();
        let (ty, nullable) = match &func {
            WinFunc::RowNumber | WinFunc::Rank | WinFunc::DenseRank | WinFunc::Ntile => {
                (SqlType::BIGINT, false)
            }
            WinFunc::PercentRank | WinFunc::CumeDist => (
                SqlType {
                    scale: 10,
                    ..SqlType::DOUBLE
                },
                true,
            ),
            WinFunc::Agg(a) => (a.ty, !matches!(a.func, AggFunc::Count | AggFunc::CountStar)),
            _ => (self.infer(&bound[0], &cols).0, true),
        };
        Ok(BoundWin {
            call: WinCall {
                func,
                args: bound,
                frame,
                ty,
            },
            partition,
            order,
            nullable,
        })
    }

    /// A partition or order key: a string of a collation other than the plain one as its
    /// sort key.
    fn sort_key_of(&self, b: Expr) -> Result<Expr> {
        Ok(match self.ordering_collation(&b)? {
            Some(c) => Expr::SortKey(Box::new(b), c),
            None => b,
        })
    }

    fn bind_frame(&mut self, fr: &ast::WindowFrame, order: &[(Expr, bool)]) -> Result<Frame> {
        let rows = match fr.units {
            ast::WindowFrameUnits::Rows => true,
            ast::WindowFrameUnits::Range => false,
            ast::WindowFrameUnits::Groups => return Err(Error::syntax_near("GROUPS")),
        };
        let start = self.bind_bound(&fr.start_bound, rows)?;
        let end = match &fr.end_bound {
            Some(b) => self.bind_bound(b, rows)?,
            None => FrameBound::CurrentRow,
        };
        use FrameBound::*;
        let bad = matches!(start, UnboundedFollowing)
            || matches!(end, UnboundedPreceding)
            || (matches!(start, CurrentRow) && matches!(end, Preceding(_)))
            || (matches!(start, Following(_)) && matches!(end, Preceding(_) | CurrentRow));
        if bad {
            return Err(Error::bad_frame_bounds());
        }
        // A RANGE frame bounded anywhere but at the partition's ends needs one numeric
        // order key (MariaDB: even CURRENT ROW).
        let whole = start == UnboundedPreceding && end == UnboundedFollowing;
        if !rows && !whole {
            if order.len() != 1 {
                return Err(Error::range_frame_order());
            }
            let cols = self.scope_cols();
            let t = self.infer(&order[0].0, &cols).0;
            if !(is_number(t) || is_float(t)) {
                return Err(Error::range_frame_numeric());
            }
        }
        Ok(Frame { rows, start, end })
    }

    fn bind_bound(&mut self, b: &ast::WindowFrameBound, rows: bool) -> Result<FrameBound> {
        let offset = |this: &mut Self, e: &A| -> Result<Value> {
            let v = this.bind_const(e)?;
            match v {
                Value::Int(_) | Value::UInt(_) => {}
                _ if rows => return Err(Error::rows_frame_integer()),
                Value::Decimal(_) | Value::Double(_) => {}
                _ => return Err(Error::range_frame_numeric()),
            }
            if v.total_cmp(&Value::Int(0)) == std::cmp::Ordering::Less {
                return Err(Error::syntax_near(&e.to_string()));
            }
            Ok(v)
        };
        Ok(match b {
            ast::WindowFrameBound::CurrentRow => FrameBound::CurrentRow,
            ast::WindowFrameBound::Preceding(None) => FrameBound::UnboundedPreceding,
            ast::WindowFrameBound::Following(None) => FrameBound::UnboundedFollowing,
            ast::WindowFrameBound::Preceding(Some(e)) => FrameBound::Preceding(offset(self, e)?),
            ast::WindowFrameBound::Following(Some(e)) => FrameBound::Following(offset(self, e)?),
        })
    }

    fn scope_cols(&self) -> Vec<super::ScopeCol> {
        self.levels
            .last()
            .map(|l| l.cols.clone())
            .unwrap_or_default()
    }

    pub(super) fn win_type(&self, j: usize) -> (SqlType, bool) {
        match self.wins.as_ref().and_then(|w| w.get(j)) {
            Some(w) => (w.call.ty, w.nullable),
            None => (SqlType::new(TypeKind::Null), true),
        }
    }
}

/// The window node over `input` (whose rows are `width` wide): calls of the same
/// PARTITION BY and ORDER BY share one sort, in the order they first appear; call `j`
/// fills column `width + j`.
pub(super) fn window_plan(input: Plan, wins: Vec<BoundWin>, width: usize) -> Plan {
    let calls = wins.len();
    let mut specs: Vec<WinSpec> = vec![];
    for (j, w) in wins.into_iter().enumerate() {
        let same = |s: &WinSpec| {
            s.partition.len() == w.partition.len()
                && s.order.len() == w.order.len()
                && s.partition.iter().zip(&w.partition).all(|(a, b)| a.same(b))
                && s.order
                    .iter()
                    .zip(&w.order)
                    .all(|((a, da), (b, db))| da == db && a.same(b))
        };
        match specs.iter().position(same) {
            Some(i) => specs[i].calls.push((width + j, w.call)),
            None => specs.push(WinSpec {
                partition: w.partition,
                order: w.order,
                calls: vec![(width + j, w.call)],
            }),
        }
    }
    Plan::Window {
        input: Box::new(input),
        specs,
        calls,
    }
}

/// True when `e` holds a window call placeholder.
pub(super) fn contains_win(e: &Expr) -> bool {
    let mut f = false;
    e.walk(&mut |x| {
        if matches!(x, Expr::WinRef(_)) {
            f = true
        }
    });
    f
}
