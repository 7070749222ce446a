//! Running plans: push-based pipelines over row batches.
//!
//! A scan drives its pipeline: each batch from the engine flows through filter and
//! projection closures into the consumer (aggregate, sort, join build, or the client), so a
//! full-table count never holds more than one batch. Joins build a hash table on the right
//! input and stream the left through it (nested loop when there is no equality key),
//! partitioning both inputs to files when the build side outgrows its memory budget.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::rc::Rc;
use std::sync::Arc;

use quarry_catalog::{Catalog, TableEntry};
use quarry_common::hash::WordMap;
use quarry_common::packed::PackedRow;
use quarry_common::value::DateTime;
use quarry_common::{Collation, Error, Result, Row, Value};
use quarry_storage_api::{IndexEntry, IndexScan, Pred, RowId, ScanAgg, ScanRequest, Support};

use crate::expr::{cast_value, Expr, SubQuery};
use crate::join::{join_pair, padded};
use crate::plan::{Access, Agg, AggFunc, JoinKind, Plan, ReadMode};

use crate::aggregate::aggregate;
pub use crate::aggregate::{avg_scale, AggState};
pub(crate) use crate::aggregate::{Feed, SPILL_MAX_DEPTH};

pub const BATCH_ROWS: usize = 1024;

/// What expressions may ask of the session that runs them.
pub trait SessionInfo {
    fn sys_var(&self, name: &str) -> Result<Value>;
    fn user_var(&self, name: &str) -> Value;
    /// USER(): the name the client gave and the host it came from.
    fn user(&self) -> String;
    /// CURRENT_USER(): the account that authenticated it (`name@%` for a wildcard host).
    fn current_user(&self) -> String {
        self.user()
    }
    fn connection_id(&self) -> u64;
    fn last_insert_id(&self) -> u64;
    fn set_last_insert_id(&self, id: u64);
    fn row_count(&self) -> i64;
    fn found_rows(&self) -> u64;
    /// How far a long statement is (`done` of `total` rows at `stage`), for SHOW
    /// PROCESSLIST and the shell's progress line; it lasts until the statement ends.
    fn progress(&self, _stage: &'static str, _done: u64, _total: u64) {}
    /// The client closed its connection: the statement has no one to answer.
    fn client_gone(&self) -> bool {
        false
    }
    /// LOAD_FILE(): the bytes of the server's file `name` when the server may read it
    /// (`secure_file_priv`) and it holds at most `limit` bytes; None otherwise.
    fn read_file(&self, _name: &str, _limit: usize) -> Option<Vec<u8>> {
        None
    }
}

/// When a statement's time is up, and the error it then gets.
pub type Deadline = Option<(std::time::Instant, fn() -> Error)>;

/// Why a statement must stop now, checked between batches and every `TICKS` units of
/// work in loops that can run long without reading a batch (joins, aggregation).
pub struct Interrupt<'a> {
    /// KILL QUERY / KILL.
    pub killed: &'a std::sync::atomic::AtomicBool,
    pub deadline: Deadline,
    pub ticks: Cell<u32>,
    /// When the client's connection was last looked at.
    pub peeked: Cell<Option<std::time::Instant>>,
}

impl<'a> Interrupt<'a> {
    pub fn new(killed: &'a std::sync::atomic::AtomicBool, deadline: Deadline) -> Interrupt<'a> {
        Interrupt {
            killed,
            deadline,
            ticks: Cell::new(0),
            peeked: Cell::new(None),
        }
    }
}

const TICKS: u32 = 4096;
/// How often a running statement looks at its client's connection.
const PEEK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// A statement's condition for SHOW WARNINGS: level (`Warning`, `Note`), code, message.
pub type Warning = (&'static str, u16, String);

/// One write, remembered so a transaction or a failed statement can be undone.
#[derive(Clone)]
pub enum Undo {
    /// Rows inserted at consecutive ids (a bulk load's run is one entry).
    Inserted(Arc<TableEntry>, std::ops::Range<RowId>),
    /// Rows inserted at scattered ids, in the order they went in (a row table's records
    /// are file offsets: 8 bytes a row here, not an entry each).
    InsertedAt(Arc<TableEntry>, Vec<RowId>),
    /// Rows deleted from their ids, in the order deleted (rollback puts each back there
    /// when the engine can). Rows are kept packed: a statement may change millions.
    Deleted(Arc<TableEntry>, Vec<(RowId, PackedRow)>),
    /// Rows updated: where each is now and its row before, in the order changed.
    Updated(Arc<TableEntry>, Vec<(RowId, PackedRow)>),
}

pub struct ExecCtx<'a> {
    pub catalog: &'a Catalog,
    pub db: Option<String>,
    pub params: Vec<Value>,
    pub session: &'a dyn SessionInfo,
    pub outer: RefCell<Vec<Row>>,
    /// Subqueries' results for the statement (`subcache`).
    pub sub_cache: RefCell<crate::subcache::SubCache>,
    /// Uncorrelated `IN (SELECT …)` subqueries' values hashed, by subquery and collation.
    pub in_sets: RefCell<HashMap<(usize, quarry_common::Collation), Rc<crate::in_set::InSet>>>,
    /// The rows the last round of each running recursive CTE made, by its id.
    pub work_tables: RefCell<HashMap<usize, Rc<Vec<Row>>>>,
    /// The rows of each CTE read more than once (`Plan::Shared`), by its id.
    pub ctes: RefCell<HashMap<usize, crate::cte::SharedRows>>,
    pub insert_row: RefCell<Option<Row>>,
    pub now: DateTime,
    pub rand_state: Cell<u64>,
    pub warnings: RefCell<Vec<Warning>>,
    pub undo: RefCell<Vec<Undo>>,
    pub strict: bool,
    /// `check_constraint_checks`: CHECK constraints are tested on written rows.
    pub check_constraints: bool,
    /// `foreign_key_checks`: FOREIGN KEYs are checked and their actions taken.
    pub foreign_key_checks: bool,
    /// `sql_safe_updates`: an UPDATE or DELETE that finds its rows by a whole-table scan
    /// is refused (1175).
    pub safe_updates: bool,
    /// A table was read whole (the slow log's Full_scan, log_queries_not_using_indexes).
    pub full_scan: Cell<bool>,
    /// `sql_mode` has ERROR_FOR_DIVISION_BY_ZERO: a division by zero is a warning, and
    /// an error (with a STRICT mode) in what INSERT and UPDATE evaluate; without it,
    /// nothing is said.
    pub div_zero_is_error: bool,
    /// Set by the statements that write rows (not under IGNORE) while they run.
    pub writing: Cell<bool>,
    /// The table a writing statement writes (database, table), as its column errors
    /// name it (`db`.`t`.`c`).
    pub target: RefCell<Option<(String, String)>>,
    /// INSERT / UPDATE / DELETE IGNORE is running: what strict mode refuses becomes a
    /// warning, and a row a key or constraint refuses is left out.
    pub ignoring: Cell<bool>,
    pub read_buffer: usize,
    pub interrupt: Interrupt<'a>,
    /// The longest record LOAD DATA takes (`max_allowed_packet`).
    pub max_packet: usize,
    /// Bytes a sort may hold in memory before spilling runs to temporary files.
    pub sort_buffer: usize,
    /// Bytes of groups a hash aggregation keeps in memory before partitioning to files.
    pub agg_buffer: usize,
    /// Bytes of build-side rows a hash join keeps in memory before partitioning to files.
    pub join_buffer: usize,
    /// Bytes a GROUP_CONCAT result keeps (`group_concat_max_len`); the rest is cut.
    pub group_concat_max: usize,
    /// Conditions may be evaluated inside engines (`optimizer_switch`).
    pub pushdown: bool,
    /// Aggregates may run on column vectors (`quarry_vector_execution`).
    pub vectors: bool,
    /// The runtime filters of the hash joins now probing, by the scan they are for
    /// (`quarry_runtime_filters`; None: off).
    pub runtime_filters: Option<RefCell<crate::join::RuntimeFilters>>,
    /// Plans the statement's writes need as they run (foreign keys' actions, CHECKs).
    pub planner: &'a dyn crate::planning::Planner,
    /// Per-operator rows and times, collected when set (EXPLAIN ANALYZE).
    pub profile: RefCell<Option<crate::profile::Profile>>,
}

impl ExecCtx<'_> {
    /// Remember that `id` was inserted into `table`, extending the last run when it can.
    pub fn undo_insert(&self, table: &Arc<TableEntry>, id: RowId) {
        let mut undo = self.undo.borrow_mut();
        if let Some(last) = undo.last_mut() {
            match last {
                Undo::Inserted(t, run) if Arc::ptr_eq(t, table) => {
                    if run.end == id {
                        run.end += 1;
                        return;
                    }
                    if run.end - run.start == 1 {
                        let ids = vec![run.start, id];
                        *last = Undo::InsertedAt(table.clone(), ids);
                        return;
                    }
                }
                Undo::InsertedAt(t, ids) if Arc::ptr_eq(t, table) => {
                    ids.push(id);
                    return;
                }
                _ => {}
            }
        }
        undo.push(Undo::Inserted(table.clone(), id..id + 1));
    }

    /// Remember a change of one row (`Undo::Deleted` or `Undo::Updated`, told by
    /// `deleted`), added to the last entry when it is of the same kind and table.
    pub fn undo_change(
        &self,
        table: &Arc<TableEntry>,
        deleted: bool,
        id: RowId,
        before: PackedRow,
    ) {
        let mut undo = self.undo.borrow_mut();
        match undo.last_mut() {
            Some(Undo::Deleted(t, rows)) if deleted && Arc::ptr_eq(t, table) => {
                rows.push((id, before))
            }
            Some(Undo::Updated(t, rows)) if !deleted && Arc::ptr_eq(t, table) => {
                rows.push((id, before))
            }
            _ if deleted => undo.push(Undo::Deleted(table.clone(), vec![(id, before)])),
            _ => undo.push(Undo::Updated(table.clone(), vec![(id, before)])),
        }
    }

    /// A column as errors 1366 and 1292 name it: with its table when a writing statement
    /// set one.
    pub fn column_name(&self, col: &str) -> String {
        match &*self.target.borrow() {
            Some((db, t)) => format!("{db}`.`{t}`.`{col}"),
            None => col.to_string(),
        }
    }

    /// Strict mode, unless the statement runs under IGNORE.
    pub fn strict_now(&self) -> bool {
        self.strict && !self.ignoring.get()
    }

    /// A division (or MOD) by zero, whose value is NULL: warning 1365, or error 1365 in
    /// INSERT / UPDATE in a strict mode, under ERROR_FOR_DIVISION_BY_ZERO (MariaDB's
    /// rule).
    pub fn division_by_zero(&self) -> Result<()> {
        if !self.div_zero_is_error {
            return Ok(());
        }
        if self.strict && self.writing.get() {
            return Err(Error::division_by_zero());
        }
        self.warn(1365, "Division by 0");
        Ok(())
    }

    pub fn warn(&self, code: u16, msg: impl Into<String>) {
        self.push_warning("Warning", code, msg.into());
    }
    /// A condition worth telling, below a warning (SHOW WARNINGS level `Note`).
    pub fn note(&self, code: u16, msg: impl Into<String>) {
        self.push_warning("Note", code, msg.into());
    }
    fn push_warning(&self, level: &'static str, code: u16, msg: String) {
        let mut w = self.warnings.borrow_mut();
        if w.len() < 64 {
            w.push((level, code, msg));
        }
    }
    /// An error when the statement must stop: KILL, its time is up, or its client left.
    pub fn check_killed(&self) -> Result<()> {
        let i = &self.interrupt;
        if i.killed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::query_interrupted());
        }
        let now = std::time::Instant::now();
        if let Some((at, err)) = i.deadline {
            if now >= at {
                return Err(err());
            }
        }
        if i.peeked
            .get()
            .is_none_or(|t| now.duration_since(t) >= PEEK_EVERY)
        {
            i.peeked.set(Some(now));
            if self.session.client_gone() {
                i.killed.store(true, std::sync::atomic::Ordering::Relaxed);
                return Err(Error::query_interrupted());
            }
        }
        Ok(())
    }

    /// One unit of work (a joined pair, an aggregated row): every `TICKS` of them the
    /// statement checks whether it must stop.
    #[inline]
    pub fn tick(&self) -> Result<()> {
        let n = self.interrupt.ticks.get().wrapping_add(1);
        self.interrupt.ticks.set(n);
        if n.is_multiple_of(TICKS) {
            return self.check_killed();
        }
        Ok(())
    }
}

pub type Sink<'s> = dyn FnMut(Vec<Row>) -> Result<bool> + 's;

pub fn collect(plan: &Plan, ctx: &ExecCtx) -> Result<Vec<Row>> {
    let mut out = Vec::new();
    run(plan, ctx, &mut |b| {
        out.extend(b);
        Ok(true)
    })?;
    Ok(out)
}

pub fn run_subquery(sub: &SubQuery, row: &[Value], ctx: &ExecCtx) -> Result<Rc<Vec<Row>>> {
    let key = crate::subcache::key(sub, row, &ctx.outer.borrow());
    if let Some(k) = &key {
        if let Some(r) = ctx.sub_cache.borrow().get(k) {
            return Ok(r);
        }
    }
    ctx.outer.borrow_mut().push(row.to_vec());
    let res = collect(&sub.plan, ctx);
    ctx.outer.borrow_mut().pop();
    let rows = Rc::new(res?);
    if let Some(k) = key {
        ctx.sub_cache.borrow_mut().insert(k, &rows);
    }
    Ok(rows)
}

/// A group value's key: under the collation its GROUP BY expression carries
/// (`Expr::Collate`, bind/collation.rs), else as plain values group.
pub(crate) fn group_key(g: &Expr, v: &Value, out: &mut Vec<u8>) {
    match g {
        Expr::Collate(_, c) => v.hash_key_in(*c, out),
        _ => v.hash_key(out),
    }
}

pub(crate) fn key_of(
    exprs: &[Expr],
    row: &[Value],
    ctx: &ExecCtx,
    out: &mut Vec<u8>,
) -> Result<bool> {
    out.clear();
    for e in exprs {
        // A column (the usual key) is read in place rather than cloned out of the row.
        let evaluated;
        let v = match e {
            Expr::Col(i) => &row[*i],
            _ => {
                evaluated = e.eval(row, ctx)?;
                &evaluated
            }
        };
        if v.is_null() {
            return Ok(false);
        }
        v.hash_key(out);
    }
    Ok(true)
}

/// Key bounds of one index range, evaluated: prefixes of the index columns.
pub type KeyRange = (Bound<Vec<Value>>, Bound<Vec<Value>>);

/// A key value converted to an index column's type, or None when it cannot match any
/// key (NULL, or a value that does not survive conversion, e.g. 'abc' for an INT).
fn key_value(table: &TableEntry, index: usize, k: usize, v: Value) -> Option<Value> {
    let t = table.def.columns[table.def.indexes[index].columns[k]].ty;
    if v.is_null() {
        return None;
    }
    let c = cast_value(v.clone(), &t).ok()?;
    if c.sql_cmp(&v) != Some(std::cmp::Ordering::Equal) && !(t.is_string()) {
        return None;
    }
    Some(c)
}

/// Key values converted to the types of an index's first columns (None if one cannot
/// match any key).
pub fn key_values(table: &TableEntry, index: usize, vals: Vec<Value>) -> Option<Vec<Value>> {
    vals.into_iter()
        .enumerate()
        .map(|(k, v)| key_value(table, index, k, v))
        .collect()
}

/// The index and evaluated key ranges of an access path (None for a full scan).
pub fn access_ranges(
    table: &TableEntry,
    access: &Access,
    ctx: &ExecCtx,
) -> Result<Option<(usize, Vec<KeyRange>)>> {
    Ok(Some(match access {
        Access::Full => return Ok(None),
        Access::Keys { index, keys } => {
            let mut out = Vec::with_capacity(keys.len());
            'keys: for k in keys {
                let mut vals = Vec::with_capacity(k.len());
                for (i, e) in k.iter().enumerate() {
                    match key_value(table, *index, i, e.eval(&[], ctx)?) {
                        Some(v) => vals.push(v),
                        None => continue 'keys,
                    }
                }
                out.push((Bound::Included(vals.clone()), Bound::Included(vals)));
            }
            (*index, out)
        }
        Access::Ranges { index, ranges } => {
            let t = table.def.columns[table.def.indexes[*index].columns[0]].ty;
            let ev = |b: &Option<(Expr, bool)>| -> Result<Option<Bound<Vec<Value>>>> {
                match b {
                    None => Ok(Some(Bound::Unbounded)),
                    Some((e, incl)) => {
                        let v = e.eval(&[], ctx)?;
                        if v.is_null() {
                            return Ok(None);
                        }
                        // An integer column compares numerically: keys of every integer
                        // width share one encoding, so an integral bound is used as it is
                        // (never clamped to the column's range) and any other ('3abc', 2.5,
                        // 1e30) as a double the engine rounds inward. The range then selects
                        // exactly what the comparison does.
                        let (v, incl) = if t.is_integer() {
                            let f = v.to_f64();
                            let v = match v {
                                Value::Int(_) | Value::UInt(_) => v,
                                _ if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::Int(f as i64),
                                _ => Value::Double(f),
                            };
                            (v, *incl)
                        } else {
                            let c = cast_value(v.clone(), &t)?;
                            // A bound rounded to the column's scale (DECIMAL(5,2) < 1.2345)
                            // or cut to its length (VARCHAR(8) < 'abcdefghij') must keep
                            // the changed value in the range.
                            let exact = c.sql_cmp(&v) == Some(std::cmp::Ordering::Equal);
                            (c, *incl || !exact)
                        };
                        Ok(Some(if incl {
                            Bound::Included(vec![v])
                        } else {
                            Bound::Excluded(vec![v])
                        }))
                    }
                }
            };
            let mut out = Vec::with_capacity(ranges.len());
            for (lo, hi) in ranges {
                // A NULL bound selects nothing.
                if let (Some(lo), Some(hi)) = (ev(lo)?, ev(hi)?) {
                    out.push((above_nulls(lo, &hi), hi));
                }
            }
            (*index, out)
        }
    }))
}

/// Key order of two key prefixes of an index whose columns' collations are `colls`
/// (NULL first, strings under their column's collation: 'a' and 'A' are one key under
/// utf8mb4_general_ci, two under utf8mb4_bin).
fn key_cmp(a: &[Value], b: &[Value], colls: &[Collation]) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Equal,
            (true, false) => Less,
            (false, true) => Greater,
            _ => match colls.get(i) {
                Some(c) => x.sql_cmp_in(y, *c),
                None => x.sql_cmp(y),
            }
            .unwrap_or(Equal),
        };
        if o != Equal {
            return o;
        }
    }
    a.len().cmp(&b.len())
}

/// The collations of index `index`'s columns, in key order.
fn index_collations(table: &TableEntry, index: usize) -> Vec<Collation> {
    let schema = table.handle.schema();
    schema.indexes[index]
        .columns
        .iter()
        .map(|&c| schema.columns[c].ty.coll)
        .collect()
}

/// Ranges sorted by their start and merged where they overlap or touch, so that no index
/// entry is read twice and the ranges come in key order (`k IN (3, 1, 3)`, sysbench's
/// overlapping BETWEENs).
fn normalize(mut ranges: Vec<KeyRange>, colls: &[Collation]) -> Vec<KeyRange> {
    use std::cmp::Ordering::*;
    let key_cmp = |a: &[Value], b: &[Value]| key_cmp(a, b, colls);
    if ranges.len() < 2 {
        return ranges;
    }
    // Lower bounds: Unbounded < Included(v) < Excluded(v).
    let lo_cmp = |a: &Bound<Vec<Value>>, b: &Bound<Vec<Value>>| match (a, b) {
        (Bound::Unbounded, Bound::Unbounded) => Equal,
        (Bound::Unbounded, _) => Less,
        (_, Bound::Unbounded) => Greater,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            key_cmp(x, y)
                .then_with(|| matches!(a, Bound::Excluded(_)).cmp(&matches!(b, Bound::Excluded(_))))
        }
    };
    // Whether a range ending at `hi` reaches a range starting at `lo`.
    let reaches = |hi: &Bound<Vec<Value>>, lo: &Bound<Vec<Value>>| match (hi, lo) {
        (Bound::Unbounded, _) | (_, Bound::Unbounded) => true,
        (Bound::Included(h), Bound::Included(l)) => key_cmp(h, l) != Less,
        (Bound::Included(h) | Bound::Excluded(h), Bound::Included(l) | Bound::Excluded(l)) => {
            key_cmp(h, l) == Greater
        }
    };
    // The larger of two upper bounds.
    let hi_max = |a: Bound<Vec<Value>>, b: Bound<Vec<Value>>| match (&a, &b) {
        (Bound::Unbounded, _) => a,
        (_, Bound::Unbounded) => b,
        (Bound::Included(x) | Bound::Excluded(x), Bound::Included(y) | Bound::Excluded(y)) => {
            match key_cmp(x, y) {
                Less => b,
                Greater => a,
                Equal if matches!(a, Bound::Included(_)) => a,
                Equal => b,
            }
        }
    };
    // Only prefixes of one length compare as positions; mixed lengths stay as they are.
    let len = |b: &Bound<Vec<Value>>| match b {
        Bound::Included(v) | Bound::Excluded(v) => Some(v.len()),
        Bound::Unbounded => None,
    };
    let lens: Vec<usize> = ranges
        .iter()
        .flat_map(|(l, h)| [len(l), len(h)])
        .flatten()
        .collect();
    if lens.windows(2).any(|w| w[0] != w[1]) {
        return ranges;
    }
    ranges.sort_by(|a, b| lo_cmp(&a.0, &b.0));
    let mut out: Vec<KeyRange> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if reaches(&last.1, &lo) => {
                let prev = std::mem::replace(&mut last.1, Bound::Unbounded);
                last.1 = hi_max(prev, hi);
            }
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// A range with only an upper bound (`k < 10`) starts after the NULL keys, which sort
/// first and never satisfy a comparison; the whole index (no bounds) keeps them.
pub fn above_nulls(lo: Bound<Vec<Value>>, hi: &Bound<Vec<Value>>) -> Bound<Vec<Value>> {
    match (lo, hi) {
        (Bound::Unbounded, Bound::Included(_) | Bound::Excluded(_)) => {
            Bound::Excluded(vec![Value::Null])
        }
        (lo, _) => lo,
    }
}

pub fn bound_ref(b: &Bound<Vec<Value>>) -> Bound<&[Value]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// Scan a table (by index or fully), passing (ids, rows) batches that pass `filter`.
pub fn scan_table(
    table: &TableEntry,
    filter: Option<&Expr>,
    access: &Access,
    ctx: &ExecCtx,
    sink: &mut dyn FnMut(Vec<RowId>, Vec<Row>) -> Result<bool>,
) -> Result<()> {
    let how = ScanHow {
        filter,
        index_filter: None,
        access,
        read: ReadMode::Rows,
        order: None,
        pushed: None,
        columns: None,
        node: 0,
    };
    scan_with(table, &how, ctx, sink)
}

/// How a scan reads its table (the fields of [`Plan::Scan`]).
#[derive(Clone, Copy)]
pub struct ScanHow<'p> {
    pub filter: Option<&'p Expr>,
    pub index_filter: Option<&'p Expr>,
    pub access: &'p Access,
    pub read: ReadMode,
    pub order: Option<bool>,
    pub pushed: Option<&'p Expr>,
    pub columns: Option<&'p [usize]>,
    /// The scan node's address, which the runtime filters of joins above it name (0:
    /// not a plan's scan).
    pub node: usize,
}

impl<'p> ScanHow<'p> {
    /// How the scan node `plan` reads (None for other nodes).
    pub fn of(plan: &'p Plan) -> Option<ScanHow<'p>> {
        match plan {
            Plan::Scan {
                filter,
                index_filter,
                access,
                read,
                order,
                pushed,
                columns,
                ..
            } => Some(ScanHow {
                filter: filter.as_ref(),
                index_filter: index_filter.as_ref(),
                access,
                read: *read,
                order: *order,
                pushed: pushed.as_ref(),
                columns: columns.as_deref(),
                node: plan as *const Plan as usize,
            }),
            _ => None,
        }
    }
}

/// `scan_table` reading only the index (`read`), in index order (`order`), and/or
/// checking key conditions on index entries before fetching rows (`index_filter`).
pub fn scan_with(
    table: &TableEntry,
    how: &ScanHow,
    ctx: &ExecCtx,
    sink: &mut dyn FnMut(Vec<RowId>, Vec<Row>) -> Result<bool>,
) -> Result<()> {
    // The condition's `int_col IN (SELECT …)` conjuncts, as filters a full scan offers
    // its engine like the runtime filters of joins.
    let in_filters = match how.filter {
        Some(f)
            if ctx.runtime_filters.is_some()
                && ctx.pushdown
                && matches!(how.access, Access::Full) =>
        {
            Some(crate::in_set::scan_filters(f, &table.def.columns, ctx))
        }
        _ => None,
    };
    let r = scan_filtered(table, how, in_filters.as_ref(), ctx, sink);
    if let Some(f) = in_filters {
        f.finish(ctx);
    }
    r
}

fn scan_filtered(
    table: &TableEntry,
    how: &ScanHow,
    in_filters: Option<&crate::in_set::ScanFilters>,
    ctx: &ExecCtx,
    sink: &mut dyn FnMut(Vec<RowId>, Vec<Row>) -> Result<bool>,
) -> Result<()> {
    let ScanHow {
        filter,
        index_filter,
        access,
        read,
        order,
        pushed,
        columns,
        node,
    } = *how;
    // Pushed conjuncts go to the engine, unless pushdown is switched off: then they are
    // checked here like the rest of the filter.
    let (mut engine_filter, local_pushed) = crate::pushdown::route(pushed, ctx)?;
    // Runtime filters of the joins above: to the engine on a full scan where it takes
    // them, else checked here.
    let mut runtime = crate::join::runtime_filters_for(node, ctx);
    runtime.extend(in_filters.into_iter().flat_map(|f| f.preds()));
    let mut folded = filter.map(|f| crate::fold::fold(f, ctx));
    if ctx.pushdown && matches!(access, Access::Full) {
        // An engine that checks any condition also takes the conjuncts of the executor's
        // filter that have its form, and the runtime filters (counting what they drop),
        // unless conditions went to it at plan time: the row engine answers those from
        // its side files, and only those. Rows failing them are never decoded whole.
        let checks_any = table.handle.capabilities().checks_any_filter && engine_filter.is_none();
        if checks_any {
            if let Some(f) = folded.as_deref() {
                let (to_engine, kept) = crate::pushdown::engine_part(table, f, ctx)?;
                if to_engine.is_some() {
                    engine_filter = to_engine;
                    folded = kept.map(std::borrow::Cow::Owned);
                }
            }
        }
        let (to_engine, rest): (Vec<Pred>, Vec<Pred>) = runtime
            .into_iter()
            .partition(|p| checks_any || table.handle.pushdown(p) != Support::Unsupported);
        runtime = rest;
        engine_filter = Pred::all(engine_filter.into_iter().chain(to_engine).collect());
    }
    let filter = folded.as_deref();
    let folded_pushed = local_pushed.map(|f| crate::fold::fold(f, ctx));
    let local_pushed = folded_pushed.as_deref();
    let keep = |mut ids: Vec<RowId>, mut rows: Vec<Row>| -> Result<(Vec<RowId>, Vec<Row>)> {
        crate::join::retain_runtime_filtered(&runtime, &mut ids, &mut rows);
        if filter.is_none() && local_pushed.is_none() {
            return Ok((ids, rows));
        }
        let (mut kid, mut krow) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        for (id, r) in ids.into_iter().zip(rows) {
            let pass = |f: Option<&Expr>| f.map_or(Ok(true), |f| f.eval_truth(&r, ctx));
            if pass(local_pushed)? && pass(filter)? {
                kid.push(id);
                krow.push(r);
            }
        }
        Ok((kid, krow))
    };
    let Some((index, ranges)) = access_ranges(table, access, ctx)?
        .map(|(i, r)| (i, normalize(r, &index_collations(table, i))))
    else {
        if !table
            .db
            .eq_ignore_ascii_case(quarry_catalog::INFORMATION_SCHEMA)
        {
            ctx.full_scan.set(true);
        }
        let columns = columns.map(|c| {
            let mut c = c.to_vec();
            if let Some(p) = local_pushed {
                p.walk(&mut |e| {
                    if let Expr::Col(i) = e {
                        c.push(*i);
                    }
                });
                c.sort_unstable();
                c.dedup();
            }
            c
        });
        let mut cursor = table.handle.scan(&ScanRequest {
            batch_rows: BATCH_ROWS,
            read_buffer: ctx.read_buffer,
            columns,
            filter: engine_filter,
        })?;
        while let Some(batch) = cursor.next_batch()? {
            ctx.check_killed()?;
            let (ids, rows) = keep(batch.ids, batch.rows)?;
            if !rows.is_empty() && !sink(ids, rows)? {
                break;
            }
        }
        return Ok(());
    };
    let width = table.def.columns.len();
    let ix_cols = &table.def.indexes[index].columns;
    // The row an index entry gives back: its key columns in place, NULL elsewhere.
    let entry_row = |e: &IndexEntry| {
        let mut r = vec![Value::Null; width];
        for (k, &c) in ix_cols.iter().enumerate() {
            if let Some(Some(v)) = e.keys.get(k) {
                r[c] = v.clone();
            }
        }
        r
    };
    // One row reused for every entry the index condition is checked on.
    let scratch = RefCell::new(vec![Value::Null; width]);
    let passes_index = |e: &IndexEntry| match index_filter {
        Some(f) => {
            let mut r = scratch.borrow_mut();
            for (k, &c) in ix_cols.iter().enumerate() {
                r[c] = e.keys.get(k).cloned().flatten().unwrap_or(Value::Null);
            }
            f.eval_truth(&r, ctx)
        }
        None => Ok(true),
    };
    if read == ReadMode::Rows && order.is_none() {
        // Every matching id first, sorted, so rows are read in file order.
        let mut ids = Vec::new();
        for (lo, hi) in &ranges {
            if index_filter.is_none() {
                ids.extend(
                    table
                        .handle
                        .index_range(index, bound_ref(lo), bound_ref(hi))?,
                );
                continue;
            }
            let scan = IndexScan {
                index,
                lo: bound_ref(lo),
                hi: bound_ref(hi),
                reverse: false,
                keys: true,
                after: None,
            };
            table.handle.index_scan(&scan, &mut |e| {
                if passes_index(e)? {
                    ids.push(e.id);
                }
                Ok(true)
            })?;
        }
        ids.sort_unstable();
        ids.dedup();
        for chunk in ids.chunks(BATCH_ROWS) {
            ctx.check_killed()?;
            let rows = table.handle.fetch_columns(chunk, columns)?;
            let (kid, krow) = keep(chunk.to_vec(), rows)?;
            if !krow.is_empty() && !sink(kid, krow)? {
                return Ok(());
            }
        }
        return Ok(());
    }
    // In index order, a chunk at a time (small first: a LIMIT often needs few rows); each
    // chunk is read with the index latch released before rows are fetched or passed on.
    let reverse = order == Some(true);
    let mut seen: Option<HashSet<RowId>> =
        (ranges.len() > 1 && !disjoint(&ranges)).then(HashSet::new);
    let ordered: Vec<&KeyRange> = if reverse {
        ranges.iter().rev().collect()
    } else {
        ranges.iter().collect()
    };
    let mut chunk = if order.is_some() { 16 } else { BATCH_ROWS };
    for (lo, hi) in ordered {
        let mut after: Option<Vec<u8>> = None;
        loop {
            ctx.check_killed()?;
            let (mut ids, mut rows, mut last, mut n) = (Vec::new(), Vec::new(), Vec::new(), 0);
            table.handle.index_scan(
                &IndexScan {
                    index,
                    lo: bound_ref(lo),
                    hi: bound_ref(hi),
                    reverse,
                    keys: read == ReadMode::IndexOnly || index_filter.is_some(),
                    after: after.as_deref(),
                },
                &mut |e| {
                    n += 1;
                    last.clear();
                    last.extend_from_slice(e.pos);
                    if seen.as_mut().is_some_and(|s| !s.insert(e.id)) || !passes_index(e)? {
                        return Ok(n < chunk);
                    }
                    ids.push(e.id);
                    match read {
                        ReadMode::IndexOnly => rows.push(entry_row(e)),
                        ReadMode::EntriesOnly => rows.push(Vec::new()),
                        ReadMode::Rows => {}
                    }
                    Ok(n < chunk)
                },
            )?;
            if read == ReadMode::Rows && !ids.is_empty() {
                let mut by_file: Vec<usize> = (0..ids.len()).collect();
                by_file.sort_unstable_by_key(|&i| ids[i]);
                let sorted: Vec<RowId> = by_file.iter().map(|&i| ids[i]).collect();
                let mut fetched: Vec<Option<Row>> = vec![None; ids.len()];
                for (&i, r) in by_file
                    .iter()
                    .zip(table.handle.fetch_columns(&sorted, columns)?)
                {
                    fetched[i] = Some(r);
                }
                rows = fetched.into_iter().map(|r| r.unwrap_or_default()).collect();
            }
            let (kid, krow) = keep(ids, rows)?;
            if !krow.is_empty() && !sink(kid, krow)? {
                return Ok(());
            }
            if n < chunk {
                break;
            }
            after = Some(last);
            chunk = (chunk * 4).min(4 * BATCH_ROWS);
        }
    }
    Ok(())
}

/// `SELECT count(*)` answered without producing rows: over an index-entries-only scan
/// with no condition left, the engine counts the entries of each key range; over a full
/// scan whose whole condition the table took, the engine counts the matching rows. None:
/// it cannot (or index ranges may overlap).
fn count_star(input: &Plan, group: &[Expr], aggs: &[Agg], ctx: &ExecCtx) -> Result<Option<u64>> {
    let (
        [],
        [Agg {
            func: AggFunc::CountStar,
            ..
        }],
        Plan::Scan {
            table,
            filter: None,
            index_filter: None,
            access,
            read,
            ..
        },
    ) = (group, aggs, input)
    else {
        return Ok(None);
    };
    if matches!(access, Access::Full) {
        return match fully_pushed(input, ctx)? {
            Some((table, req)) => table.handle.count(&req),
            None => Ok(None),
        };
    }
    if *read != ReadMode::EntriesOnly {
        return Ok(None);
    }
    let Some((index, ranges)) = access_ranges(table, access, ctx)?
        .map(|(i, r)| (i, normalize(r, &index_collations(table, i))))
    else {
        return Ok(None);
    };
    if ranges.len() > 1 && !disjoint(&ranges) {
        return Ok(None);
    }
    let mut total = 0;
    for (lo, hi) in &ranges {
        match table
            .handle
            .index_count(index, bound_ref(lo), bound_ref(hi))?
        {
            Some(n) => total += n,
            None => return Ok(None),
        }
    }
    Ok(Some(total))
}

/// COUNT(*), MIN(column) and MAX(column) over a whole-table scan whose filter went to the
/// engine, answered by the engine without rows (from zone maps) when it can.
fn min_max_from_engine(
    input: &Plan,
    group: &[Expr],
    aggs: &[Agg],
    ctx: &ExecCtx,
) -> Result<Option<Row>> {
    let wanted = |a: &Agg| {
        matches!(
            (a.func, a.args.as_slice()),
            (AggFunc::CountStar, _) | (AggFunc::Min | AggFunc::Max, [Expr::Col(_)])
        )
    };
    if !group.is_empty()
        || !aggs
            .iter()
            .any(|a| matches!(a.func, AggFunc::Min | AggFunc::Max))
        || !aggs.iter().all(wanted)
    {
        return Ok(None);
    }
    let Some((table, req)) = fully_pushed(input, ctx)? else {
        return Ok(None);
    };
    let mut row = Vec::with_capacity(aggs.len());
    for a in aggs {
        let v = match (a.func, a.args.as_slice()) {
            (AggFunc::Min | AggFunc::Max, [Expr::Col(c)]) => {
                match table.handle.min_max(*c, &req)? {
                    Some((lo, hi)) => {
                        if a.func == AggFunc::Min {
                            lo
                        } else {
                            hi
                        }
                    }
                    None => return Ok(None),
                }
            }
            _ => match table.handle.count(&req)? {
                Some(n) => Value::Int(n as i64),
                None => return Ok(None),
            },
        };
        row.push(v);
    }
    Ok(Some(row))
}

/// GROUP BY columns with COUNT/MIN/MAX of columns over a whole-table scan whose filter went
/// to the engine: grouped inside the engine when it can (on encoded column chunks).
fn group_in_engine(
    input: &Plan,
    group: &[Expr],
    aggs: &[Agg],
    ctx: &ExecCtx,
) -> Result<Option<Vec<Row>>> {
    let Some(cols) = group
        .iter()
        .map(|g| match g {
            Expr::Col(c) => Some(*c),
            _ => None,
        })
        .collect::<Option<Vec<usize>>>()
    else {
        return Ok(None);
    };
    // COUNT(DISTINCT c) alone: the number of non-NULL groups of c.
    if let ([], [a]) = (cols.as_slice(), aggs) {
        if let (AggFunc::Count, [Expr::Col(c)], true) = (a.func, a.args.as_slice(), a.distinct) {
            let Some((table, req)) = fully_pushed(input, ctx)? else {
                return Ok(None);
            };
            // The executor's own DISTINCT set is not bounded either.
            return Ok(table
                .handle
                .aggregate(&req, &[*c], &[], usize::MAX)?
                .map(|g| {
                    let n = g.iter().filter(|r| !r[0].is_null()).count();
                    vec![vec![Value::Int(n as i64)]]
                }));
        }
    }
    let Some(scan_aggs) = aggs
        .iter()
        .map(|a| match (a.func, a.args.as_slice(), a.distinct) {
            (AggFunc::CountStar, _, _) => Some(ScanAgg::CountStar),
            (AggFunc::Count, [Expr::Col(c)], false) => Some(ScanAgg::Count(*c)),
            (AggFunc::Min, [Expr::Col(c)], _) => Some(ScanAgg::Min(*c)),
            (AggFunc::Max, [Expr::Col(c)], _) => Some(ScanAgg::Max(*c)),
            _ => None,
        })
        .collect::<Option<Vec<ScanAgg>>>()
    else {
        return Ok(None);
    };
    let Some((table, req)) = fully_pushed(input, ctx)? else {
        return Ok(None);
    };
    // As many groups as the aggregation buffer would hold before spilling.
    let max_groups = (ctx.agg_buffer / (64 + 48 * aggs.len())).max(1024);
    table.handle.aggregate(&req, &cols, &scan_aggs, max_groups)
}

/// A whole-table scan whose entire condition goes to the engine this execution: its table
/// and the request, for aggregates the engine answers without rows.
pub(crate) fn fully_pushed<'p>(
    input: &'p Plan,
    ctx: &ExecCtx,
) -> Result<Option<(&'p TableEntry, ScanRequest)>> {
    engine_checked(input, ctx, false)
}

/// A whole-table scan's table and request when its engine checks all of its condition:
/// what was pushed to the engine, and — when `all_in_engine_form` — also the conjuncts
/// the plan leaves to the executor that have the engine's form (for engines that check
/// whatever condition a scan hands them, as they make vectors).
pub(crate) fn engine_checked<'p>(
    input: &'p Plan,
    ctx: &ExecCtx,
    all_in_engine_form: bool,
) -> Result<Option<(&'p TableEntry, ScanRequest)>> {
    let Plan::Scan {
        table,
        filter,
        index_filter: None,
        access: Access::Full,
        pushed,
        ..
    } = input
    else {
        return Ok(None);
    };
    let (routed, kept) = crate::pushdown::route(pushed.as_ref(), ctx)?;
    let mut parts: Vec<Pred> = routed.into_iter().collect();
    for e in [kept, filter.as_ref()].into_iter().flatten() {
        if !all_in_engine_form || !table.handle.capabilities().checks_any_filter {
            return Ok(None);
        }
        match crate::pushdown::whole(table, e, ctx)? {
            Some(p) => parts.push(p),
            None => return Ok(None),
        }
    }
    let filter = match parts.len() {
        0 => None,
        1 => parts.pop(),
        _ => Some(Pred::And(parts)),
    };
    Ok(Some((
        table,
        ScanRequest {
            filter,
            ..Default::default()
        },
    )))
}

/// Whether normalized ranges are disjoint: they are unless their prefixes differ in length.
fn disjoint(ranges: &[KeyRange]) -> bool {
    let mut lens = ranges
        .iter()
        .flat_map(|(l, h)| [l, h])
        .filter_map(|b| match b {
            Bound::Included(v) | Bound::Excluded(v) => Some(v.len()),
            Bound::Unbounded => None,
        });
    let first = lens.next();
    lens.all(|l| Some(l) == first)
}

/// The inner side of an index nested-loop join.
struct IndexProbe<'p> {
    table: &'p TableEntry,
    index: usize,
    keys: &'p [Expr],
    left_keys: &'p [Expr],
    right_keys: &'p [Expr],
    filter: Option<&'p Expr>,
    on: Option<&'p Expr>,
    kind: JoinKind,
    /// Columns of the probed rows read (None: all).
    columns: Option<&'p [usize]>,
    /// The columns of the joined rows to make (as `JoinSpec::keep`).
    keep: Option<&'p [usize]>,
}

/// Index nested-loop join: each left batch's keys are looked up, the matching row ids of
/// the whole batch fetched once in file order, and the joined rows emitted in left order.
/// A left row's index entries a semi or anti join reads in its first round (the first)
/// or its second (the rest).
fn entries(ids: &[RowId], first: bool) -> &[RowId] {
    if first {
        &ids[..ids.len().min(1)]
    } else {
        ids.get(1..).unwrap_or(&[])
    }
}

fn index_join(left: &Plan, p: IndexProbe, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    let width = p.table.def.columns.len();
    let nulls: Row = vec![Value::Null; width];
    let (mut lk, mut rk) = (Vec::new(), Vec::new());
    run(left, ctx, &mut |batch| {
        ctx.check_killed()?;
        // The key values of each left row that can match, with its position.
        let mut probes: Vec<(usize, Vec<Value>)> = Vec::with_capacity(batch.len());
        for (i, l) in batch.iter().enumerate() {
            let mut vals = Vec::with_capacity(p.keys.len());
            for (k, e) in p.keys.iter().enumerate() {
                match key_value(p.table, p.index, k, e.eval(l, ctx)?) {
                    Some(v) => vals.push(v),
                    None => break,
                }
            }
            if vals.len() == p.keys.len() {
                probes.push((i, vals));
            }
        }
        // Row ids per left row, looked up in key order: consecutive descents share the
        // index's upper levels (in cache) instead of each starting cold.
        probes.sort_by(|(_, a), (_, b)| {
            a.iter()
                .zip(b)
                .map(|(x, y)| x.total_cmp(y))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut found: Vec<Vec<RowId>> = vec![Vec::new(); batch.len()];
        let (at, keys): (Vec<usize>, Vec<Vec<Value>>) = probes.into_iter().unzip();
        for (i, ids) in at
            .into_iter()
            .zip(p.table.handle.index_lookups(p.index, &keys)?)
        {
            found[i] = ids;
        }
        // Fetched rows of `ids` that pass the pushed filter, by id.
        let fetch = |mut ids: Vec<RowId>| -> Result<WordMap<RowId, Row>> {
            ids.sort_unstable();
            ids.dedup();
            let fetched = p.table.handle.fetch_columns(&ids, p.columns)?;
            let mut at = WordMap::with_capacity_and_hasher(ids.len(), Default::default());
            for (id, r) in ids.into_iter().zip(fetched) {
                if p.filter
                    .map(|f| f.eval_truth(&r, ctx))
                    .transpose()?
                    .unwrap_or(true)
                {
                    at.insert(id, r);
                }
            }
            Ok(at)
        };
        // Whether `l` joins `r`, pushing the joined row for an inner or LEFT join.
        let mut pair = |l: &Row, r: &Row, out: &mut Vec<Row>| -> Result<bool> {
            // Same equality as the hash join: the keys' hash forms agree.
            if !key_of(p.left_keys, l, ctx, &mut lk)?
                || !key_of(p.right_keys, r, ctx, &mut rk)?
                || lk != rk
            {
                return Ok(false);
            }
            if p.kind.left_only() {
                crate::join::pair_passes(l, r.as_slice(), p.on, ctx)
            } else {
                join_pair(l, r.as_slice(), p.on, p.keep, ctx, out)
            }
        };
        let mut out = Vec::new();
        if p.kind.left_only() {
            let mut matched = vec![false; batch.len()];
            // A semi or anti join needs one matching row: each left row's first entry is
            // fetched, and its others only when that one does not match (an anti join's
            // customer with fifteen orders reads one of them).
            for first in [true, false] {
                let wanted: Vec<RowId> = found
                    .iter()
                    .zip(&matched)
                    .filter(|(_, m)| !**m)
                    .flat_map(|(ids, _)| entries(ids, first).iter().copied())
                    .collect();
                if wanted.is_empty() {
                    continue;
                }
                let rows = fetch(wanted)?;
                for ((l, ids), m) in batch.iter().zip(&found).zip(matched.iter_mut()) {
                    for id in entries(ids, first) {
                        if *m {
                            break;
                        }
                        if let Some(r) = rows.get(id) {
                            *m = pair(l, r, &mut out)?;
                        }
                    }
                }
            }
            let keep = p.kind == JoinKind::Semi;
            out.extend(
                batch
                    .into_iter()
                    .zip(matched)
                    .filter(|(_, m)| *m == keep)
                    .map(|(l, _)| l),
            );
        } else {
            let rows = fetch(found.iter().flatten().copied().collect())?;
            for (l, ids) in batch.into_iter().zip(&found) {
                let mut m = false;
                for id in ids {
                    if let Some(r) = rows.get(id) {
                        m |= pair(&l, r, &mut out)?;
                    }
                }
                if !m && p.kind == JoinKind::Left {
                    out.push(padded(l, &nulls, p.keep));
                }
            }
        }
        if out.is_empty() {
            return Ok(true);
        }
        sink(out)
    })
}

pub fn run(plan: &Plan, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    run_keeping(plan, None, ctx, sink)
}

/// `run`, an inner or LEFT join making only the columns `keep` of its rows (see
/// [`joined_columns`]).
fn run_keeping(plan: &Plan, keep: Option<&[usize]>, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    if ctx.profile.borrow().is_none() {
        return run_node(plan, keep, ctx, sink);
    }
    // A node's time is its whole run less the time spent in the operators it feeds.
    let start = std::time::Instant::now();
    let (mut rows, mut fed) = (0u64, std::time::Duration::ZERO);
    let r = run_node(plan, keep, ctx, &mut |b| {
        rows += b.len() as u64;
        let t = std::time::Instant::now();
        let go = sink(b);
        fed += t.elapsed();
        go
    });
    let own = start.elapsed().saturating_sub(fed);
    if let Some(p) = ctx.profile.borrow_mut().as_mut() {
        let st = p.entry(crate::profile::node_key(plan)).or_default();
        st.rows += rows;
        st.loops += 1;
        st.nanos += own.as_nanos() as u64;
    }
    r
}

/// The columns a projection over an inner or LEFT join takes when they are distinct
/// plain columns (column pruning puts such projections over joins): the join makes
/// those rows itself instead of whole joined rows to copy.
fn joined_columns(input: &Plan, exprs: &[Expr]) -> Option<Vec<usize>> {
    let (Plan::Join { kind, .. } | Plan::IndexJoin { kind, .. }) = input else {
        return None;
    };
    if kind.left_only() {
        return None;
    }
    let width = crate::plan::width(input)?;
    let mut seen = vec![false; width];
    exprs
        .iter()
        .map(|e| match e {
            Expr::Col(c) if *c < width && !std::mem::replace(&mut seen[*c], true) => Some(*c),
            _ => None,
        })
        .collect()
}

fn run_node(plan: &Plan, keep: Option<&[usize]>, ctx: &ExecCtx, sink: &mut Sink) -> Result<()> {
    debug_assert!(
        keep.is_none() || matches!(plan, Plan::Join { .. } | Plan::IndexJoin { .. }),
        "only a join makes some of its columns"
    );
    match plan {
        Plan::Dual => {
            sink(vec![vec![]])?;
        }
        Plan::Recursive { .. } => crate::recursive::run_recursive(plan, ctx, sink)?,
        Plan::WorkTable { id, .. } => crate::recursive::run_work_table(*id, ctx, sink)?,
        Plan::Shared { id, input, .. } => crate::cte::run_shared(*id, input, ctx, sink)?,
        Plan::Window {
            input,
            specs,
            calls,
        } => crate::window::run_window(input, specs, *calls, ctx, sink)?,
        Plan::Values(rows) => {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                out.push(
                    r.iter()
                        .map(|e| e.eval(&[], ctx))
                        .collect::<Result<Row>>()?,
                );
            }
            sink(out)?;
        }
        Plan::Scan { table, .. } => {
            let how = ScanHow::of(plan).expect("a scan");
            scan_with(table, &how, ctx, &mut |_, rows| sink(rows))?
        }
        Plan::IndexJoin {
            left,
            table,
            index,
            keys,
            left_keys,
            right_keys,
            filter,
            on,
            kind,
            columns,
            ..
        } => index_join(
            left,
            IndexProbe {
                table,
                index: *index,
                keys,
                left_keys,
                right_keys,
                filter: filter.as_ref(),
                on: on.as_ref(),
                kind: *kind,
                columns: columns.as_deref(),
                keep,
            },
            ctx,
            sink,
        )?,
        Plan::Filter { input, pred } => {
            let pred = crate::fold::fold(pred, ctx);
            run(input, ctx, &mut |mut b| {
                let mut err = None;
                b.retain(|r| match pred.eval_truth(r, ctx) {
                    Ok(t) => t,
                    Err(e) => {
                        err.get_or_insert(e);
                        false
                    }
                });
                if let Some(e) = err {
                    return Err(e);
                }
                if b.is_empty() {
                    return Ok(true);
                }
                sink(b)
            })?
        }
        Plan::Project { input, exprs } => match joined_columns(input, exprs) {
            Some(cols) => run_keeping(input, Some(&cols), ctx, sink)?,
            None => run(input, ctx, &mut |b| {
                let mut out = Vec::with_capacity(b.len());
                for r in &b {
                    // Sized once: collecting through `Result` would grow the row by doubling.
                    let mut row = Vec::with_capacity(exprs.len());
                    for e in exprs {
                        row.push(e.eval(r, ctx)?);
                    }
                    out.push(row);
                }
                sink(out)
            })?,
        },
        Plan::Limit {
            input,
            limit,
            offset,
        } => {
            let mut skip = *offset;
            let mut left = limit.unwrap_or(u64::MAX);
            if left == 0 {
                return Ok(());
            }
            run(input, ctx, &mut |mut b| {
                if skip > 0 {
                    let n = (skip as usize).min(b.len());
                    b.drain(..n);
                    skip -= n as u64;
                }
                if b.len() as u64 > left {
                    b.truncate(left as usize);
                }
                left -= b.len() as u64;
                if !b.is_empty() && !sink(b)? {
                    return Ok(false);
                }
                Ok(left > 0)
            })?
        }
        Plan::Distinct { input, keys, colls } => {
            let key = |r: &Row, k: &mut Vec<u8>| {
                crate::distinct::row_key(&r[..(*keys).min(r.len())], colls, k)
            };
            crate::distinct::distinct(&mut |f| run(input, ctx, f), &key, ctx, 0, sink)?;
        }
        Plan::Sort { input, keys } => {
            let mut sorter = crate::sort::Sorter::new(
                keys.iter().map(|(_, d)| *d).collect(),
                ctx.sort_buffer,
                &ctx.catalog.counters,
            );
            run(input, ctx, &mut |b| {
                for r in b {
                    let k = keys
                        .iter()
                        .map(|(e, _)| e.eval(&r, ctx))
                        .collect::<Result<Row>>()?;
                    sorter.push(k, r)?;
                }
                Ok(true)
            })?;
            sorter.finish(BATCH_ROWS, sink)?;
        }
        Plan::Union { inputs, all, colls } => {
            // Each input runs while the sink wants more.
            let mut feed = |f: &mut Sink| -> Result<()> {
                let mut go = true;
                for p in inputs {
                    if !go {
                        break;
                    }
                    run(p, ctx, &mut |b| {
                        go = f(b)?;
                        Ok(go)
                    })?;
                }
                Ok(())
            };
            if *all {
                feed(sink)?;
            } else {
                let key = |r: &Row, k: &mut Vec<u8>| crate::distinct::row_key(r, colls, k);
                crate::distinct::distinct(&mut feed, &key, ctx, 0, sink)?;
            }
        }
        Plan::SetOp {
            left,
            right,
            except,
            all,
        } => {
            crate::setop::set_op(
                &mut |f| run(left, ctx, f),
                &mut |f| run(right, ctx, f),
                *except,
                *all,
                ctx,
                0,
                sink,
            )?;
        }
        Plan::Join {
            left,
            right,
            kind,
            left_keys,
            right_keys,
            on,
            right_width,
        } => {
            let filters = |probe: &Plan, probe_keys, build_keys, probe_is_left| {
                crate::join::filter_targets(probe, probe_keys, build_keys, *kind, probe_is_left)
            };
            let spec = crate::join::JoinSpec {
                kind: *kind,
                left_keys,
                right_keys,
                on: on.as_ref(),
                nulls: vec![Value::Null; *right_width],
                keep,
                left_filters: filters(left, left_keys, right_keys, true),
                right_filters: filters(right, right_keys, left_keys, false),
            };
            let build_left = crate::join::builds_left(*kind, left, right, left_keys, *right_width);
            let (l, r): (&mut Feed, &mut Feed) =
                (&mut |f| run(left, ctx, f), &mut |f| run(right, ctx, f));
            if build_left && *kind == JoinKind::Inner {
                crate::join::inner_join_on_left(l, r, &spec, ctx, sink)?;
            } else if build_left {
                crate::join::semi_join_on_left(l, r, &spec, ctx, sink)?;
            } else {
                crate::join::hash_join(l, r, &spec, ctx, 0, sink)?;
            }
        }
        Plan::Aggregate {
            input,
            group,
            aggs,
            rollup: true,
        } => {
            send_owned(rollup(input, group, aggs, ctx)?, sink)?;
        }
        Plan::Aggregate {
            input, group, aggs, ..
        } => {
            if let Some(n) = count_star(input, group, aggs, ctx)? {
                sink(vec![vec![Value::Int(n as i64)]])?;
                return Ok(());
            }
            if let Some(row) = min_max_from_engine(input, group, aggs, ctx)? {
                sink(vec![row])?;
                return Ok(());
            }
            let mut out = match group_in_engine(input, group, aggs, ctx)? {
                Some(rows) => rows,
                None => match crate::vector::aggregate(input, group, aggs, ctx)? {
                    Some(rows) => rows,
                    None => {
                        let mut out = Vec::new();
                        aggregate(&mut |f| run(input, ctx, f), group, aggs, ctx, 0, &mut out)?;
                        out
                    }
                },
            };
            if out.is_empty() && group.is_empty() {
                // An aggregate without GROUP BY returns one row even for no input.
                out.push(
                    aggs.iter()
                        .map(|a| AggState::new(a).finish(a, ctx))
                        .collect(),
                );
            }
            send_owned(out, sink)?;
        }
    }
    Ok(())
}

/// `rows` to the sink in batches, moved rather than copied; false when it wants no more.
fn send_owned(rows: Vec<Row>, sink: &mut Sink) -> Result<bool> {
    let mut rows = rows.into_iter();
    loop {
        let batch: Vec<Row> = rows.by_ref().take(BATCH_ROWS).collect();
        if batch.is_empty() {
            return Ok(true);
        }
        if !sink(batch)? {
            return Ok(false);
        }
    }
}

/// GROUP BY … WITH ROLLUP: the groups of every prefix of `group` (the input is read once
/// per level), the columns past the prefix NULL, sorted as MariaDB returns them: by each
/// group column in turn, a level's super-aggregate row after the rows it sums up.
fn rollup(input: &Plan, group: &[Expr], aggs: &[Agg], ctx: &ExecCtx) -> Result<Vec<Row>> {
    let ng = group.len();
    let mut rows: Vec<(Vec<Value>, Row)> = vec![];
    for k in (0..=ng).rev() {
        // The grand total groups by a constant: no input, no row (as MariaDB).
        let by: Vec<Expr> = if k == 0 {
            vec![Expr::Lit(Value::Int(1))]
        } else {
            group[..k].to_vec()
        };
        let mut out = Vec::new();
        aggregate(&mut |f| run(input, ctx, f), &by, aggs, ctx, 0, &mut out)?;
        for r in out {
            let (keys, vals) = r.split_at(by.len());
            let mut row: Row = (0..ng)
                .map(|i| if i < k { keys[i].clone() } else { Value::Null })
                .collect();
            row.extend(vals.iter().cloned());
            // Sort key: for each group column, whether it is rolled up, then its value.
            let key = (0..ng)
                .flat_map(|i| [Value::Int((i >= k) as i64), row[i].clone()])
                .collect();
            rows.push((key, row));
        }
    }
    let asc = vec![false; 2 * ng];
    rows.sort_by(|a, b| crate::sort::cmp_keys(&a.0, &b.0, &asc));
    Ok(rows.into_iter().map(|(_, r)| r).collect())
}

/// Which of `parts` partitions a key's hash form goes to at a partitioning depth (a new
/// seed per depth, so a partition that overflows splits again instead of staying whole).
pub(crate) fn partition_of(key: &[u8], depth: u32, parts: u64) -> usize {
    let h = key
        .iter()
        .fold(0xcbf29ce484222325u64 ^ depth as u64, |h, b| {
            (h ^ *b as u64).wrapping_mul(0x100000001b3)
        });
    (h % parts) as usize
}
