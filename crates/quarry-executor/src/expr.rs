//! Bound expressions and their evaluation with MySQL semantics.
//!
//! Column references are resolved to positions by the binder, so evaluation never looks
//! names up. NULL follows three-valued logic; arithmetic follows MySQL's type rules
//! (integer stays integer with overflow errors, `/` gives DECIMAL with 4 more digits,
//! anything with a DOUBLE or a string operand is DOUBLE).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use quarry_common::value::{collate_cmp, parse_datetime, Date, DateTime};
use quarry_common::{Collation, Decimal, Error, Result, SqlType, TypeKind, Value};

use crate::exec::{run_subquery, ExecCtx};
use crate::plan::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    IntDiv,
    Mod,
    Eq,
    NullSafeEq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Xor,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BinOp {
    /// The operator as SQL writes it (EXPLAIN, error messages).
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::IntDiv => "DIV",
            BinOp::Mod => "%",
            BinOp::Eq => "=",
            BinOp::NullSafeEq => "<=>",
            BinOp::Ne => "<>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::And => "and",
            BinOp::Or => "or",
            BinOp::Xor => "xor",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
    BitNot,
}

#[derive(Debug)]
pub struct SubQuery {
    pub plan: Plan,
    /// References a column of an enclosing query (must re-run per outer row).
    pub correlated: bool,
    /// The enclosing rows' columns it reads, as (levels up, position) from its own level
    /// (1: the row it runs for): its result is the same for the same values of these,
    /// and is cached by them (`subcache`). None when it calls something volatile (RAND,
    /// SYSDATE, …): it runs for every row.
    pub outer_refs: Option<Vec<(usize, usize)>>,
    pub id: usize,
    /// Its first column's type (what a scalar subquery gives).
    pub ty: SqlType,
}

#[derive(Debug, Clone)]
pub enum Expr {
    Lit(Value),
    Col(usize),
    /// Column of an enclosing query's row: (levels up, 1-based; position).
    Outer(usize, usize),
    Param(usize),
    Unary(UnOp, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// IS [NOT] TRUE / FALSE: (expr, target, negated)
    IsBool(Box<Expr>, bool, bool),
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        escape: char,
        negated: bool,
    },
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        negated: bool,
    },
    InSub {
        expr: Box<Expr>,
        sub: Arc<SubQuery>,
        negated: bool,
    },
    Exists {
        sub: Arc<SubQuery>,
        negated: bool,
    },
    ScalarSub(Arc<SubQuery>),
    Between {
        expr: Box<Expr>,
        lo: Box<Expr>,
        hi: Box<Expr>,
        negated: bool,
    },
    Case {
        operand: Option<Box<Expr>>,
        whens: Vec<(Expr, Expr)>,
        else_: Option<Box<Expr>>,
    },
    Func(String, Vec<Expr>),
    Cast(Box<Expr>, SqlType),
    /// Placeholder for the j-th aggregate during binding.
    AggRef(usize),
    /// Placeholder for the j-th window function during binding.
    WinRef(usize),
    SysVar(String),
    UserVar(String),
    /// VALUES(col) in ON DUPLICATE KEY UPDATE: the row that was to be inserted.
    InsertValue(usize),
    /// `e COLLATE c`, or the subject of a LIKE under collation `c`: the value of `e`,
    /// which compares under `c` (bind/collation.rs).
    Collate(Box<Expr>, Collation),
    /// The sort key of `e`'s string under `c` (a binary string; NULL and binary strings
    /// as they are): keys compare as the collation compares the strings. The binder puts
    /// it around the operands of a comparison, sort or grouping under a collation other
    /// than the default one, which plain values compare under.
    SortKey(Box<Expr>, Collation),
}

impl Expr {
    pub fn lit(v: Value) -> Expr {
        Expr::Lit(v)
    }

    /// True when the expression is constant (no columns, params or subqueries).
    pub fn is_const(&self) -> bool {
        let mut c = true;
        self.walk(&mut |e| {
            if matches!(
                e,
                Expr::Col(_)
                    | Expr::Outer(..)
                    | Expr::Param(_)
                    | Expr::AggRef(_)
                    | Expr::WinRef(_)
                    | Expr::InSub { .. }
                    | Expr::Exists { .. }
                    | Expr::ScalarSub(_)
                    | Expr::InsertValue(_)
                    | Expr::UserVar(_)
                    | Expr::SysVar(_)
            ) {
                c = false;
            }
            if let Expr::Func(n, _) = e {
                if matches!(
                    n.as_str(),
                    "RAND"
                        | "NOW"
                        | "CURTIME"
                        | "CURRENT_TIME"
                        | "SYSDATE"
                        | "UUID"
                        | "LAST_INSERT_ID"
                        | "CONNECTION_ID"
                        | "ROW_COUNT"
                        | "FOUND_ROWS"
                ) {
                    c = false;
                }
            }
        });
        c
    }

    pub fn walk(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        self.for_each_child(&mut |c| c.walk(f));
    }

    /// `f` on each direct operand (not on subqueries' insides).
    pub fn for_each_child<'e>(&'e self, f: &mut dyn FnMut(&'e Expr)) {
        match self {
            Expr::Unary(_, a)
            | Expr::IsNull(a, _)
            | Expr::IsBool(a, ..)
            | Expr::Cast(a, _)
            | Expr::Collate(a, _)
            | Expr::SortKey(a, _) => f(a),
            Expr::Bin(_, a, b)
            | Expr::Like {
                expr: a,
                pattern: b,
                ..
            } => {
                f(a);
                f(b)
            }
            Expr::InList { expr, list, .. } => {
                f(expr);
                list.iter().for_each(f)
            }
            Expr::InSub { expr, .. } => f(expr),
            Expr::Between { expr, lo, hi, .. } => {
                f(expr);
                f(lo);
                f(hi)
            }
            Expr::Case {
                operand,
                whens,
                else_,
            } => {
                if let Some(o) = operand {
                    f(o)
                }
                for (w, t) in whens {
                    f(w);
                    f(t)
                }
                if let Some(e) = else_ {
                    f(e)
                }
            }
            Expr::Func(_, args) => args.iter().for_each(f),
            _ => {}
        }
    }

    /// Rewrite from the root down: where `f` returns Some(replacement) the node is replaced
    /// (and its insides not visited); elsewhere its operands are rewritten.
    pub fn rewrite(self, f: &mut dyn FnMut(&Expr) -> Option<Expr>) -> Expr {
        if let Some(r) = f(&self) {
            return r;
        }
        let bx = |e: Box<Expr>, f: &mut dyn FnMut(&Expr) -> Option<Expr>| Box::new(e.rewrite(f));
        match self {
            Expr::Unary(op, a) => Expr::Unary(op, bx(a, f)),
            Expr::IsNull(a, n) => Expr::IsNull(bx(a, f), n),
            Expr::IsBool(a, t, n) => Expr::IsBool(bx(a, f), t, n),
            Expr::Cast(a, t) => Expr::Cast(bx(a, f), t),
            Expr::Collate(a, c) => Expr::Collate(bx(a, f), c),
            Expr::SortKey(a, c) => Expr::SortKey(bx(a, f), c),
            Expr::Bin(op, a, b) => {
                let a = bx(a, f);
                Expr::Bin(op, a, bx(b, f))
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let expr = bx(expr, f);
                Expr::Like {
                    expr,
                    pattern: bx(pattern, f),
                    escape,
                    negated,
                }
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let expr = bx(expr, f);
                Expr::InList {
                    expr,
                    list: list.into_iter().map(|e| e.rewrite(f)).collect(),
                    negated,
                }
            }
            Expr::InSub { expr, sub, negated } => Expr::InSub {
                expr: bx(expr, f),
                sub,
                negated,
            },
            Expr::Between {
                expr,
                lo,
                hi,
                negated,
            } => {
                let expr = bx(expr, f);
                let lo = bx(lo, f);
                Expr::Between {
                    expr,
                    lo,
                    hi: bx(hi, f),
                    negated,
                }
            }
            Expr::Case {
                operand,
                whens,
                else_,
            } => Expr::Case {
                operand: operand.map(|o| bx(o, f)),
                whens: whens
                    .into_iter()
                    .map(|(w, t)| (w.rewrite(f), t.rewrite(f)))
                    .collect(),
                else_: else_.map(|e| bx(e, f)),
            },
            Expr::Func(n, args) => Expr::Func(n, args.into_iter().map(|e| e.rewrite(f)).collect()),
            other => other,
        }
    }

    /// Structural equality (used to match GROUP BY expressions).
    pub fn same(&self, o: &Expr) -> bool {
        format!("{self:?}") == format!("{o:?}")
    }

    pub fn eval(&self, row: &[Value], ctx: &ExecCtx) -> Result<Value> {
        Ok(match self {
            Expr::Lit(v) => v.clone(),
            Expr::Col(i) => row[*i].clone(),
            Expr::Outer(up, i) => {
                let outer = ctx.outer.borrow();
                let r = outer
                    .len()
                    .checked_sub(*up)
                    .and_then(|k| outer.get(k))
                    .ok_or_else(|| Error::internal("outer row"))?;
                r[*i].clone()
            }
            Expr::Param(i) => ctx.params.get(*i).cloned().unwrap_or(Value::Null),
            Expr::Unary(op, a) => {
                let v = a.eval(row, ctx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                match op {
                    UnOp::Not => Value::from_bool(!v.truth().unwrap_or(false)),
                    UnOp::Neg => match v {
                        // A column's BIGINT minimum has no negation (1690); a constant's
                        // (a literal's, `-9223372036854775807 - 1`'s) becomes a DECIMAL, as
                        // in MariaDB.
                        Value::Int(i64::MIN) if !a.is_const() => {
                            return Err(Error::bigint_out_of_range("BIGINT", "-(…)"));
                        }
                        Value::Int(i) => crate::expr::negate_int(i),
                        Value::UInt(u) if u <= i64::MAX as u64 + 1 => {
                            Value::Int((u as i128).wrapping_neg() as i64)
                        }
                        Value::UInt(u) => Value::Decimal(Decimal::new(-(u as i128), 0)),
                        Value::Decimal(d) => Value::Decimal(-d),
                        other => Value::Double(-other.to_f64()),
                    },
                    UnOp::BitNot => Value::UInt(!(v.to_i64() as u64)),
                }
            }
            Expr::Bin(op, a, b) => return eval_bin(*op, a, b, row, ctx),
            Expr::IsNull(a, neg) => Value::from_bool(a.eval(row, ctx)?.is_null() != *neg),
            Expr::IsBool(a, target, neg) => {
                let v = a.eval(row, ctx)?.truth();
                Value::from_bool((v == Some(*target)) != *neg)
            }
            Expr::Like {
                expr,
                pattern,
                escape,
                negated,
            } => {
                let v = expr.eval_ref(row, ctx)?;
                let p = pattern.eval_ref(row, ctx)?;
                if v.is_null() || p.is_null() {
                    return Ok(Value::Null);
                }
                let (s, p) = (v.as_str_lossy(), p.as_str_lossy());
                let hit = match &**expr {
                    Expr::Collate(_, c) => c.like(&s, &p, *escape),
                    _ => like(&s, &p, *escape),
                };
                Value::from_bool(hit != *negated)
            }
            Expr::InList {
                expr,
                list,
                negated,
            } => {
                let v = expr.eval_ref(row, ctx)?;
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for e in list {
                    let x = e.eval_ref(row, ctx)?;
                    match v.sql_cmp(&x) {
                        Some(Ordering::Equal) => return Ok(Value::from_bool(!*negated)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::from_bool(*negated)
                }
            }
            Expr::InSub { expr, sub, negated } => {
                let v = expr.eval(row, ctx)?;
                let coll = match &**expr {
                    Expr::Collate(_, c) => *c,
                    _ => Collation::default(),
                };
                if !sub.correlated {
                    if let Some(answer) = crate::in_set::probe(sub, &v, coll, *negated, ctx)? {
                        return Ok(answer);
                    }
                }
                let rows = run_subquery(sub, row, ctx)?;
                if rows.first().is_some_and(|r| r.len() != 1) {
                    return Err(Error::operand_columns(1));
                }
                if rows.is_empty() {
                    return Ok(Value::from_bool(*negated));
                }
                if v.is_null() {
                    return Ok(Value::Null);
                }
                let mut saw_null = false;
                for r in rows.iter() {
                    match v.sql_cmp_in(&r[0], coll) {
                        Some(Ordering::Equal) => return Ok(Value::from_bool(!*negated)),
                        None => saw_null = true,
                        _ => {}
                    }
                }
                if saw_null {
                    Value::Null
                } else {
                    Value::from_bool(*negated)
                }
            }
            Expr::Exists { sub, negated } => {
                let rows = run_subquery(sub, row, ctx)?;
                Value::from_bool(rows.is_empty() == *negated)
            }
            Expr::ScalarSub(sub) => {
                let rows = run_subquery(sub, row, ctx)?;
                match rows.len() {
                    0 => Value::Null,
                    1 => {
                        if rows[0].len() != 1 {
                            return Err(Error::operand_columns(1));
                        }
                        rows[0][0].clone()
                    }
                    _ => return Err(Error::subquery_rows()),
                }
            }
            Expr::Between {
                expr,
                lo,
                hi,
                negated,
            } => {
                let v = expr.eval_ref(row, ctx)?;
                let l = lo.eval_ref(row, ctx)?;
                let h = hi.eval_ref(row, ctx)?;
                let ge = v.sql_cmp(&l).map(|o| o != Ordering::Less);
                let le = v.sql_cmp(&h).map(|o| o != Ordering::Greater);
                let r = match (ge, le) {
                    (Some(false), _) | (_, Some(false)) => Some(false),
                    (Some(true), Some(true)) => Some(true),
                    _ => None,
                };
                match r {
                    None => Value::Null,
                    Some(b) => Value::from_bool(b != *negated),
                }
            }
            Expr::Case {
                operand,
                whens,
                else_,
            } => {
                let op = match operand {
                    Some(o) => Some(o.eval(row, ctx)?),
                    None => None,
                };
                for (w, t) in whens {
                    let wv = w.eval(row, ctx)?;
                    let hit = match &op {
                        Some(o) => o.sql_cmp(&wv) == Some(Ordering::Equal),
                        None => wv.truth() == Some(true),
                    };
                    if hit {
                        return t.eval(row, ctx);
                    }
                }
                match else_ {
                    Some(e) => e.eval(row, ctx)?,
                    None => Value::Null,
                }
            }
            Expr::Func(name, args) => return crate::func::call(name, args, row, ctx),
            Expr::Cast(a, ty) => cast(a.eval(row, ctx)?, ty, ctx)?,
            Expr::Collate(a, _) => return a.eval(row, ctx),
            Expr::SortKey(a, c) => sort_key(a.eval(row, ctx)?, *c),
            Expr::AggRef(_) => return Err(Error::invalid_group()),
            Expr::WinRef(_) => return Err(Error::internal("window function outside its window")),
            Expr::SysVar(name) => ctx.session.sys_var(name)?,
            Expr::UserVar(name) => ctx.session.user_var(name),
            Expr::InsertValue(i) => ctx
                .insert_row
                .borrow()
                .as_ref()
                .and_then(|r| r.get(*i).cloned())
                .unwrap_or(Value::Null),
        })
    }

    /// `eval`, lending a column's or a literal's value instead of copying it (no string
    /// is cloned to be compared or hashed).
    pub fn eval_ref<'r>(&'r self, row: &'r [Value], ctx: &ExecCtx) -> Result<Cow<'r, Value>> {
        match self {
            Expr::Col(i) => Ok(Cow::Borrowed(&row[*i])),
            Expr::Lit(v) => Ok(Cow::Borrowed(v)),
            _ => self.eval(row, ctx).map(Cow::Owned),
        }
    }

    pub fn eval_truth(&self, row: &[Value], ctx: &ExecCtx) -> Result<bool> {
        Ok(self.eval(row, ctx)?.truth() == Some(true))
    }
}

/// `v`'s sort key under `c` ([`Expr::SortKey`]): a string's key, a binary string and NULL
/// as they are, another value by its text.
pub fn sort_key(v: Value, c: Collation) -> Value {
    let key = |s: &str| {
        let mut k = Vec::with_capacity(s.len() * 2);
        c.key(s, &mut k);
        Value::Bytes(k)
    };
    match v {
        Value::Null | Value::Bytes(_) => v,
        Value::Str(s) => key(&s),
        other => match other.to_text() {
            Some(s) => key(&s),
            None => Value::Null,
        },
    }
}

fn is_approx(v: &Value) -> bool {
    matches!(
        v,
        Value::Double(_) | Value::Str(_) | Value::Bytes(_) | Value::Date(_) | Value::DateTime(_)
    )
}

fn eval_bin(op: BinOp, a: &Expr, b: &Expr, row: &[Value], ctx: &ExecCtx) -> Result<Value> {
    // AND/OR short-circuit with three-valued logic.
    match op {
        BinOp::And => {
            let l = a.eval(row, ctx)?.truth();
            if l == Some(false) {
                return Ok(Value::Int(0));
            }
            let r = b.eval(row, ctx)?.truth();
            return Ok(match (l, r) {
                (_, Some(false)) => Value::Int(0),
                (Some(true), Some(true)) => Value::Int(1),
                _ => Value::Null,
            });
        }
        BinOp::Or => {
            let l = a.eval(row, ctx)?.truth();
            if l == Some(true) {
                return Ok(Value::Int(1));
            }
            let r = b.eval(row, ctx)?.truth();
            return Ok(match (l, r) {
                (_, Some(true)) => Value::Int(1),
                (Some(false), Some(false)) => Value::Int(0),
                _ => Value::Null,
            });
        }
        _ => {}
    }
    let l = a.eval_ref(row, ctx)?;
    // A comparison with a NULL left side is NULL before its right side is evaluated (as
    // in MariaDB, whose right side then raises no error).
    if l.is_null()
        && matches!(
            op,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    {
        return Ok(Value::Null);
    }
    let r = b.eval_ref(row, ctx)?;
    let v = binary(op, &l, &r)?;
    // NULL / 0 is NULL without a warning (MariaDB warns of a value divided by zero only).
    if v.is_null()
        && matches!(op, BinOp::Div | BinOp::IntDiv | BinOp::Mod)
        && !l.is_null()
        && !r.is_null()
    {
        ctx.division_by_zero()?;
    }
    Ok(v)
}

pub fn binary(op: BinOp, l: &Value, r: &Value) -> Result<Value> {
    if op == BinOp::NullSafeEq {
        return Ok(Value::from_bool(match (l.is_null(), r.is_null()) {
            (true, true) => true,
            (false, false) => l.sql_cmp(r) == Some(Ordering::Equal),
            _ => false,
        }));
    }
    if l.is_null() || r.is_null() {
        return Ok(Value::Null);
    }
    let cmp =
        |f: fn(Ordering) -> bool| Ok(Value::from_bool(f(l.sql_cmp(r).unwrap_or(Ordering::Equal))));
    match op {
        BinOp::Eq => cmp(|o| o == Ordering::Equal),
        BinOp::Ne => cmp(|o| o != Ordering::Equal),
        BinOp::Lt => cmp(|o| o == Ordering::Less),
        BinOp::Le => cmp(|o| o != Ordering::Greater),
        BinOp::Gt => cmp(|o| o == Ordering::Greater),
        BinOp::Ge => cmp(|o| o != Ordering::Less),
        BinOp::Xor => Ok(Value::from_bool(
            l.truth().unwrap_or(false) != r.truth().unwrap_or(false),
        )),
        BinOp::BitAnd => Ok(Value::UInt(l.to_i64() as u64 & r.to_i64() as u64)),
        BinOp::BitOr => Ok(Value::UInt(l.to_i64() as u64 | r.to_i64() as u64)),
        BinOp::BitXor => Ok(Value::UInt(l.to_i64() as u64 ^ r.to_i64() as u64)),
        BinOp::Shl => Ok(Value::UInt(
            (l.to_i64() as u64)
                .checked_shl(r.to_i64() as u32)
                .unwrap_or(0),
        )),
        BinOp::Shr => Ok(Value::UInt(
            (l.to_i64() as u64)
                .checked_shr(r.to_i64() as u32)
                .unwrap_or(0),
        )),
        _ => arith(op, l, r),
    }
}

fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(*i as i128),
        Value::UInt(u) => Some(*u as i128),
        _ => None,
    }
}

fn fit_int(v: i128, op: &str, l: &Value, r: &Value, unsigned: bool) -> Result<Value> {
    if unsigned && v >= 0 && v <= u64::MAX as i128 {
        return Ok(Value::UInt(v as u64));
    }
    if v >= i64::MIN as i128 && v <= i64::MAX as i128 && !unsigned {
        return Ok(Value::Int(v as i64));
    }
    let kind = if unsigned {
        "BIGINT UNSIGNED"
    } else {
        "BIGINT"
    };
    Err(Error::bigint_out_of_range(kind, &format!("{l} {op} {r}")))
}

fn arith(op: BinOp, l: &Value, r: &Value) -> Result<Value> {
    let sym = match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::IntDiv => "DIV",
        _ => "%",
    };
    if is_approx(l) || is_approx(r) {
        let (x, y) = (l.to_f64(), r.to_f64());
        let v = match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => {
                if y == 0.0 {
                    return Ok(Value::Null);
                }
                x / y
            }
            BinOp::IntDiv => {
                if y == 0.0 {
                    return Ok(Value::Null);
                }
                return Ok(Value::Int((x / y).trunc() as i64));
            }
            _ => {
                if y == 0.0 {
                    return Ok(Value::Null);
                }
                x % y
            }
        };
        if !v.is_finite() {
            return Err(Error::bigint_out_of_range(
                "DOUBLE",
                &format!("{l} {sym} {r}"),
            ));
        }
        return Ok(Value::Double(v));
    }
    if let (Some(x), Some(y)) = (int_of(l), int_of(r)) {
        let unsigned = matches!(l, Value::UInt(_)) || matches!(r, Value::UInt(_));
        return match op {
            BinOp::Add => fit_int(x + y, sym, l, r, unsigned),
            BinOp::Sub => fit_int(x - y, sym, l, r, unsigned),
            BinOp::Mul => fit_int(x.checked_mul(y).unwrap_or(i128::MAX), sym, l, r, unsigned),
            BinOp::Div => Ok(Decimal::from_i64(0)
                .checked_add(Decimal::new(x, 0))
                .and_then(|d| d.div(Decimal::new(y, 0), 4))
                .map(Value::Decimal)
                .unwrap_or(Value::Null)),
            BinOp::IntDiv => {
                if y == 0 {
                    Ok(Value::Null)
                } else {
                    fit_int(x / y, sym, l, r, unsigned)
                }
            }
            _ => {
                if y == 0 {
                    Ok(Value::Null)
                } else {
                    fit_int(x % y, sym, l, r, unsigned && x >= 0)
                }
            }
        };
    }
    let (x, y) = (l.to_decimal(), r.to_decimal());
    let overflow = || Error::bigint_out_of_range("DECIMAL", &format!("{l} {sym} {r}"));
    Ok(match op {
        BinOp::Add => Value::Decimal(x.checked_add(y).ok_or_else(overflow)?),
        BinOp::Sub => Value::Decimal(x.checked_sub(y).ok_or_else(overflow)?),
        BinOp::Mul => Value::Decimal(x.checked_mul(y).ok_or_else(overflow)?),
        BinOp::Div if y.is_zero() => Value::Null,
        // A quotient past 76 digits is 1690, not NULL (NULL is division by zero).
        BinOp::Div => Value::Decimal(x.div(y, 4).ok_or_else(overflow)?),
        BinOp::IntDiv if y.is_zero() => Value::Null,
        BinOp::IntDiv => {
            let s = x.scale.max(y.scale);
            let (a, b) = (x.checked_rescale(s), y.checked_rescale(s));
            let q = a
                .zip(b)
                .and_then(|(a, b)| a.mantissa.checked_div(b.mantissa));
            // MariaDB: a quotient past BIGINT is 1690, never a wrapped number.
            Value::Int(
                q.and_then(|q| q.to_i64())
                    .ok_or_else(|| Error::bigint_out_of_range("BIGINT", &format!("{l} DIV {r}")))?,
            )
        }
        _ if y.is_zero() => Value::Null,
        _ => {
            let s = x.scale.max(y.scale);
            let (a, b) = (
                x.checked_rescale(s).ok_or_else(overflow)?,
                y.checked_rescale(s).ok_or_else(overflow)?,
            );
            Value::Decimal(Decimal::new(
                a.mantissa.checked_rem(b.mantissa).ok_or_else(overflow)?,
                s,
            ))
        }
    })
}

pub use quarry_common::like;

/// CAST / column coercion of a value to a type (lenient; strict checks live in DML).
pub fn cast(v: Value, ty: &SqlType, ctx: &ExecCtx) -> Result<Value> {
    if ty.kind == TypeKind::Decimal && !v.is_null() {
        // MariaDB warns of a text that is no number, and of a number past DECIMAL(p,s)
        // (which becomes the nearest end of its range).
        let (d, out, no_number) = cast_decimal(&v, ty);
        if no_number {
            ctx.warn(
                1292,
                format!("Truncated incorrect DECIMAL value: '{}'", v.as_str_lossy()),
            );
        }
        if out {
            ctx.warn(
                1264,
                format!(
                    "Out of range value for column 'CAST({} AS DECIMAL({},{}))' at row 1",
                    v.as_str_lossy(),
                    ty.len,
                    ty.scale
                ),
            );
        }
        return Ok(Value::Decimal(d));
    }
    if ty.is_integer() && matches!(v, Value::Str(_) | Value::Bytes(_)) {
        integer_text_warnings(&v.as_str_lossy(), ty.unsigned, ctx);
    }
    if ty.kind == TypeKind::Time && !v.is_null() {
        // MariaDB warns when a text is no time (NULL) or past the range (clamped).
        match quarry_common::time::value_to_time(&v) {
            None => ctx.warn(
                1292,
                format!("Incorrect time value: '{}'", v.as_str_lossy()),
            ),
            Some(quarry_common::time::TimeParse::Clamped(_)) => ctx.warn(
                1292,
                format!("Truncated incorrect time value: '{}'", v.as_str_lossy()),
            ),
            Some(_) => {}
        }
    }
    cast_value(v, ty)
}

/// `v` as a DECIMAL(p,s), and whether it was past the range (then its nearest end).
/// `v` as a DECIMAL(p,s): the value, whether it was past the range (then its nearest
/// end), and whether it was a text that is no number (its numeric prefix is taken).
fn cast_decimal(v: &Value, ty: &SqlType) -> (Decimal, bool, bool) {
    let (d, negative, no_number) = match v {
        Value::Str(s) => match Decimal::parse(s) {
            Some(d) => (Some(d), false, false),
            None => {
                let (f, whole) = quarry_common::value::parse_number_prefix(s);
                (Decimal::try_from_f64(f, ty.scale), f < 0.0, !whole)
            }
        },
        other => {
            let d = other.try_to_decimal();
            // The sign matters only for a number too large for any decimal.
            let negative = d.is_none() && other.to_f64() < 0.0;
            (d, negative, false)
        }
    };
    let (d, out) = quarry_common::decimal::fit(d, negative, ty.len, ty.scale, ty.unsigned);
    (d, out, no_number)
}

/// What MariaDB says of a text cast to SIGNED / UNSIGNED: a Warning 1292 when the integer
/// it starts with is not all of it ('1x', '2.5', '1e3', '', past 64 bits), a Note 1292
/// when only spaces follow it, and a Note 1105 when UNSIGNED takes a negative number.
fn integer_text_warnings(s: &str, unsigned: bool, ctx: &ExecCtx) {
    let truncated = || format!("Truncated incorrect INTEGER value: '{s}'");
    let t = s.trim_start();
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &body[digits..];
    let n = leading_integer(s);
    if digits == 0 || n.is_none_or(|n| n > u64::MAX as i128 || n < i64::MIN as i128) {
        ctx.warn(1292, truncated());
        return;
    }
    if !rest.is_empty() {
        if rest.bytes().all(|b| b == b' ') {
            ctx.note(1292, truncated());
        } else {
            ctx.warn(1292, truncated());
            return;
        }
    }
    if unsigned && t.starts_with('-') {
        ctx.note(
            1105,
            "Cast to unsigned converted negative integer to it's positive complement",
        );
    }
}

/// CAST('2.5' AS SIGNED): the integer a string starts with (2; '1e3' is 1, ' 7x' 7, 'x'
/// 0), as MariaDB reads it — not the number it holds, which a column store rounds.
fn integer_prefix(v: &Value) -> i64 {
    let n = leading_integer(&v.as_str_lossy()).unwrap_or(0);
    n.clamp(i64::MIN as i128, u64::MAX as i128) as i64
}

/// The integer `s` starts with after leading spaces (digits after an optional sign; none
/// is 0), or None past i128.
pub fn leading_integer(s: &str) -> Option<i128> {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    let n: i128 = if end == 0 {
        0
    } else {
        digits[..end].parse().ok()?
    };
    Some(if neg { -n } else { n })
}

pub fn cast_value(v: Value, ty: &SqlType) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    Ok(match ty.kind {
        k if SqlType::new(k).is_integer() => {
            if ty.unsigned {
                match v {
                    Value::Int(i) => Value::UInt(i as u64),
                    Value::UInt(u) => Value::UInt(u),
                    Value::Str(_) | Value::Bytes(_) => Value::UInt(integer_prefix(&v) as u64),
                    other => {
                        let f = other.to_f64().round_ties_even();
                        Value::UInt(if f < 0.0 { f as i64 as u64 } else { f as u64 })
                    }
                }
            } else {
                match v {
                    Value::UInt(u) => Value::Int(u as i64),
                    Value::Str(_) | Value::Bytes(_) => Value::Int(integer_prefix(&v)),
                    other => Value::Int(other.to_i64()),
                }
            }
        }
        TypeKind::Decimal => Value::Decimal(cast_decimal(&v, ty).0),
        TypeKind::Float | TypeKind::Double => Value::Double(v.to_f64()),
        TypeKind::Char | TypeKind::VarChar | TypeKind::Text => {
            let s = match v {
                Value::Str(s) => s,
                // The binder puts a TIME or DATETIME(n)'s n in a string target's scale.
                Value::Time(t) if ty.scale > 0 => quarry_common::time::format_time(t, ty.scale),
                Value::DateTime(d) if ty.scale > 0 => d.fmt_with_scale(ty.scale),
                other => other.as_str_lossy().into_owned(),
            };
            if ty.len > 0 && ty.kind != TypeKind::Text && s.chars().count() > ty.len as usize {
                Value::Str(s.chars().take(ty.len as usize).collect())
            } else {
                Value::Str(s)
            }
        }
        TypeKind::Binary | TypeKind::VarBinary | TypeKind::Blob => Value::Bytes(match v {
            Value::Bytes(b) => b,
            other => other.as_str_lossy().into_owned().into_bytes(),
        }),
        TypeKind::Date => match v.to_datetime() {
            Some(dt) => Value::Date(dt.date),
            None => Value::Null,
        },
        TypeKind::DateTime | TypeKind::Timestamp => match v.to_datetime() {
            Some(dt) => Value::DateTime(dt),
            None => Value::Null,
        },
        TypeKind::Time => match quarry_common::time::value_to_time(&v) {
            Some(t) => Value::Time(quarry_common::time::truncate_time(t.micros(), ty.scale)),
            None => Value::Null,
        },
        TypeKind::Year => Value::Int(v.to_i64()),
        TypeKind::Null => Value::Null,
        _ => v,
    })
}

pub fn to_date(v: &Value) -> Option<Date> {
    v.to_datetime().map(|d| d.date)
}

pub fn to_dt(v: &Value) -> Option<DateTime> {
    match v {
        Value::Str(s) => parse_datetime(s),
        other => other.to_datetime(),
    }
}

pub fn str_eq(a: &str, b: &str) -> bool {
    collate_cmp(a, b) == Ordering::Equal
}

/// `-i`: past BIGINT (`-(-9223372036854775808)`) a DECIMAL, as MariaDB answers.
pub fn negate_int(i: i64) -> Value {
    match i.checked_neg() {
        Some(n) => Value::Int(n),
        None => Value::Decimal(Decimal::new(-(i as i128), 0)),
    }
}

pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Bin(BinOp::And, a, b) => {
            conjuncts(*a, out);
            conjuncts(*b, out);
        }
        other => out.push(other),
    }
}

pub fn and_all(mut v: Vec<Expr>) -> Option<Expr> {
    let first = if v.is_empty() {
        return None;
    } else {
        v.remove(0)
    };
    Some(v.into_iter().fold(first, |a, b| {
        Expr::Bin(BinOp::And, Box::new(a), Box::new(b))
    }))
}

/// A value fixed while one scan runs: a constant, a parameter, an uncorrelated scalar
/// subquery (run once per statement), or a column of the enclosing query's current row (a
/// correlated subquery's scan runs once per outer row, so `inner.k = outer.k` finds its
/// rows through an index on k).
pub fn known_before_scan(x: &Expr) -> bool {
    if x.is_const() {
        return true;
    }
    let mut ok = true;
    x.walk(&mut |e| match e {
        Expr::Param(_) | Expr::Outer(..) | Expr::Lit(_) | Expr::Unary(..) | Expr::Bin(..) => {}
        Expr::ScalarSub(sub) if !sub.correlated => {}
        _ => ok = false,
    });
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns() {
        assert!(like("Hello", "h%o", '\\'));
        assert!(like("Hello", "_ELLO", '\\'));
        assert!(!like("Hello", "h_o", '\\'));
        assert!(like("50%", "50\\%", '\\'));
        assert!(!like("500", "50\\%", '\\'));
        assert!(like("", "%", '\\'));
        assert!(like("abcabc", "%abc", '\\'));
    }

    #[test]
    fn arithmetic_types() {
        assert_eq!(
            binary(BinOp::Add, &Value::Int(1), &Value::Int(2)).unwrap(),
            Value::Int(3)
        );
        assert_eq!(
            binary(BinOp::Div, &Value::Int(1), &Value::Int(3))
                .unwrap()
                .to_string(),
            "0.3333"
        );
        assert_eq!(
            binary(BinOp::Div, &Value::Int(1), &Value::Int(0)).unwrap(),
            Value::Null
        );
        assert_eq!(
            binary(BinOp::Add, &Value::Str("1.5".into()), &Value::Int(1)).unwrap(),
            Value::Double(2.5)
        );
        assert_eq!(
            binary(BinOp::Add, &Value::Int(i64::MAX), &Value::Int(1))
                .unwrap_err()
                .code,
            1690
        );
        assert_eq!(
            binary(BinOp::Mod, &Value::Int(-7), &Value::Int(3)).unwrap(),
            Value::Int(-1)
        );
        assert_eq!(
            binary(BinOp::Eq, &Value::Str("a ".into()), &Value::Str("A".into())).unwrap(),
            Value::Int(1)
        );
        assert_eq!(
            binary(BinOp::Eq, &Value::Null, &Value::Int(1)).unwrap(),
            Value::Null
        );
        assert_eq!(
            binary(BinOp::NullSafeEq, &Value::Null, &Value::Null).unwrap(),
            Value::Int(1)
        );
    }
}
