//! The row-change primitives of INSERT / REPLACE / LOAD DATA: rows made of their values
//! ([`coerce`]), auto-increment, duplicate-key handling, and undo records for rollback.
//! UPDATE and DELETE are in [`modify`]. The statements are bound by the planner
//! (`quarry_planner::dml`), which calls these; LOAD DATA and table copies come straight
//! from the session.

mod checks;
mod coerce;
mod foreign_keys;
pub mod insert_select;
mod modify;
mod returning;

pub use checks::Checks;
pub use coerce::coerce;
pub use foreign_keys::ForeignKeys;
pub use modify::{delete_rows, locked_rows, update_rows, Assign, Target};
pub use returning::{Returned, Returning};

use std::ops::Bound;
use std::sync::Arc;

use quarry_catalog::{ColumnDef, DefaultValue, TableEntry};
use quarry_common::value::Date;
use quarry_common::{Decimal, Error, Result, Row, SqlType, TypeKind, Value};
use quarry_storage_api::RowId;

use crate::exec::{scan_table, ExecCtx};
use crate::expr::Expr;
use crate::plan::Access;

#[derive(Debug, Default, Clone)]
pub struct DmlResult {
    pub affected: u64,
    pub last_insert_id: Option<u64>,
    pub info: Option<String>,
    /// RETURNING's result set, sent instead of the OK packet.
    pub returned: Option<Returned>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum DupMode {
    Error,
    Ignore,
    Replace,
}

fn default_for(col: &ColumnDef, ctx: &ExecCtx) -> Result<Value> {
    match &col.default {
        DefaultValue::Value(v) => coerce(v.clone(), col, 0, ctx),
        DefaultValue::CurrentTimestamp => coerce(Value::DateTime(ctx.now), col, 0, ctx),
        DefaultValue::None if col.nullable || col.auto_increment => Ok(Value::Null),
        DefaultValue::None => {
            if ctx.strict_now() {
                Err(Error::no_default(&col.name))
            } else {
                ctx.warn(1364, Error::no_default(&col.name).message);
                Ok(implicit_default(col))
            }
        }
    }
}

/// What a NOT NULL column without a default holds when it must hold something: zero,
/// the zero date, the empty string.
fn implicit_default(col: &ColumnDef) -> Value {
    let zero_date = Date {
        year: 0,
        month: 0,
        day: 0,
    };
    match col.ty.kind {
        k if SqlType::new(k).is_numeric() => Value::Int(0),
        TypeKind::Date => Value::Date(zero_date),
        TypeKind::DateTime | TypeKind::Timestamp => {
            Value::DateTime(quarry_common::value::DateTime::from_date(zero_date))
        }
        TypeKind::Time => Value::Time(0),
        _ => Value::Str(String::new()),
    }
}

/// The value existing rows take for a column ALTER TABLE adds: its default; a NOT NULL
/// column without one takes its type's implicit default, even in strict mode (MariaDB);
/// an AUTO_INCREMENT column NULL (numbered as the rows are copied).
pub fn added_column_value(col: &ColumnDef, ctx: &ExecCtx) -> Result<Value> {
    match &col.default {
        DefaultValue::None if !col.nullable && !col.auto_increment => {
            coerce(implicit_default(col), col, 0, ctx)
        }
        _ => default_for(col, ctx),
    }
}

/// Fill auto-increment: NULL or 0 means "next value" (sysbench's `VALUES (0, …)`).
fn assign_auto_inc(
    entry: &TableEntry,
    row: &mut Row,
    first_id: &mut Option<u64>,
    ctx: &ExecCtx,
) -> Result<()> {
    let Some(ai) = entry.def.auto_increment_column() else {
        return Ok(());
    };
    ensure_auto_inc(entry, ctx)?;
    let mut next = entry.auto_inc.lock();
    let given = match &row[ai] {
        Value::Null => None,
        v if v.to_i64() == 0 => None,
        v => Some(v.to_i64()),
    };
    match given {
        None => {
            let (_, hi) = entry.def.columns[ai].ty.int_range();
            if *next as i128 > hi {
                return Err(Error::new(
                    1467,
                    "Failed to read auto-increment value from storage engine",
                ));
            }
            row[ai] = coerce_auto(*next, &entry.def.columns[ai]);
            if first_id.is_none() {
                *first_id = Some(*next);
            }
            *next += 1;
        }
        Some(v) if v >= 0 && v as u64 >= *next => *next = v as u64 + 1,
        _ => {}
    }
    Ok(())
}

fn coerce_auto(n: u64, col: &ColumnDef) -> Value {
    if col.ty.unsigned && col.ty.kind == TypeKind::BigInt {
        Value::UInt(n)
    } else if col.ty.kind == TypeKind::Decimal {
        Value::Decimal(Decimal::new(n as i128, col.ty.scale))
    } else if matches!(col.ty.kind, TypeKind::Float | TypeKind::Double) {
        Value::Double(n as f64)
    } else {
        Value::Int(n as i64)
    }
}

/// The auto-increment counter continues after the largest stored value: found the first
/// time it is needed (the datadir opens without reading every table), from the end of
/// an index that starts with the column, else by a scan.
pub fn ensure_auto_inc(entry: &TableEntry, ctx: &ExecCtx) -> Result<()> {
    use std::sync::atomic::Ordering;
    if entry.auto_inc_known.load(Ordering::Acquire) {
        return Ok(());
    }
    let Some(ai) = entry.def.auto_increment_column() else {
        entry.auto_inc_known.store(true, Ordering::Release);
        return Ok(());
    };
    let mut max: Option<i64> = None;
    let ascending = entry
        .def
        .indexes
        .iter()
        .position(|ix| ix.columns[0] == ai && ix.prefix[0] == 0 && !ix.desc[0]);
    if let Some(index) = ascending.filter(|_| entry.index_access()) {
        let mut exact = true;
        entry.handle.index_scan(
            &quarry_storage_api::IndexScan {
                index,
                lo: std::ops::Bound::Unbounded,
                hi: std::ops::Bound::Unbounded,
                reverse: true,
                keys: true,
                after: None,
            },
            &mut |e| {
                match e.keys.first() {
                    Some(Some(Value::Null)) => return Ok(true),
                    Some(Some(v)) => max = Some(v.to_i64()),
                    _ => exact = false,
                }
                Ok(false)
            },
        )?;
        if !exact {
            max = None;
        }
    }
    let max = match max {
        Some(m) => m,
        None => {
            let mut m = 0i64;
            scan_table(entry, None, &Access::Full, ctx, &mut |_, rows| {
                for r in rows {
                    m = m.max(r[ai].to_i64());
                }
                Ok(true)
            })?;
            m
        }
    };
    let mut n = entry.auto_inc.lock();
    *n = (*n).max(max.max(0) as u64 + 1);
    entry.auto_inc_known.store(true, Ordering::Release);
    Ok(())
}

/// Rows that conflict with `row` on a unique key.
fn conflicts(entry: &TableEntry, row: &Row) -> Result<Vec<RowId>> {
    let mut ids = vec![];
    for (ii, ix) in entry.def.indexes.iter().enumerate() {
        if !ix.unique {
            continue;
        }
        let key: Row = ix
            .columns
            .iter()
            .zip(&ix.prefix)
            .map(|(&c, &p)| match &row[c] {
                Value::Str(s) if p > 0 => Value::Str(s.chars().take(p as usize).collect()),
                v => v.clone(),
            })
            .collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        ids.extend(
            entry
                .handle
                .index_range(ii, Bound::Included(&key), Bound::Included(&key))?,
        );
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

pub struct InsertOptions<'e> {
    pub mode: DupMode,
    /// ON DUPLICATE KEY UPDATE assignments: (column, expression over the existing row).
    pub on_dup: &'e [(usize, Expr)],
    pub returning: Option<&'e Returning>,
    pub checks: Option<&'e Checks>,
    pub fks: Option<&'e ForeignKeys>,
}

/// Rows inserted one at a time, with the statement's counts: `insert_rows` feeds one from
/// an iterator, INSERT … SELECT from its source as the source produces rows.
pub struct Inserter<'a> {
    entry: &'a Arc<TableEntry>,
    opts: &'a InsertOptions<'a>,
    res: DmlResult,
    first_id: Option<u64>,
    /// Rows given so far (the row number errors name).
    n: usize,
    dups: u64,
    records: u64,
    keep_row: bool,
}

impl<'a> Inserter<'a> {
    pub fn new(entry: &'a Arc<TableEntry>, opts: &'a InsertOptions<'a>) -> Inserter<'a> {
        Inserter {
            entry,
            opts,
            res: DmlResult::default(),
            first_id: None,
            n: 0,
            dups: 0,
            records: 0,
            // Needed again only where a duplicate is replaced or updated.
            keep_row: opts.returning.is_some()
                || entry.def.indexes.iter().any(|ix| ix.unique)
                    && (opts.mode == DupMode::Replace
                        || !opts.on_dup.is_empty()
                        || opts.fks.is_some()),
        }
    }

    /// Insert one row (`None`: the column's default).
    pub fn push(&mut self, given: Vec<Option<Value>>, ctx: &ExecCtx) -> Result<()> {
        self.n += 1;
        let mut row = Vec::with_capacity(self.entry.def.columns.len());
        for (col, v) in self.entry.def.columns.iter().zip(given) {
            let v = match v {
                Some(v) if v.is_null() && col.auto_increment => Value::Null,
                Some(v) => match coerce(v, col, self.n, ctx) {
                    Ok(v) => v,
                    Err(e) if e.code == 1048 && !ctx.strict_now() => {
                        ctx.warn(1048, e.message);
                        default_for(col, ctx).unwrap_or(Value::Null)
                    }
                    Err(e) => return Err(e),
                },
                None => default_for(col, ctx)?,
            };
            row.push(v);
        }
        assign_auto_inc(self.entry, &mut row, &mut self.first_id, ctx)?;
        if let Some(checks) = self.opts.checks {
            if let Err(e) = checks.test(&row, ctx) {
                // INSERT IGNORE leaves the row out with the error as a warning.
                if self.opts.mode == DupMode::Ignore && e.code == 4025 {
                    ctx.warn(4025, e.message);
                    return Ok(());
                }
                return Err(e);
            }
        }
        if let Some(fks) = self.opts.fks {
            if let Err(e) = fks.check_parents(&row, None, ctx) {
                // INSERT IGNORE leaves the row out with the error as a warning.
                if self.opts.mode == DupMode::Ignore && e.code == 1452 {
                    ctx.warn(1452, e.message);
                    return Ok(());
                }
                return Err(e);
            }
        }
        self.records += 1;
        let inserted = if self.keep_row {
            self.entry.handle.insert(row.clone())
        } else {
            self.entry.handle.insert(std::mem::take(&mut row))
        };
        match inserted {
            Ok(id) => {
                ctx.undo_insert(self.entry, id);
                self.res.affected += 1;
                self.returned(&row, ctx)?;
            }
            Err(e) if e.code == 1062 => {
                self.dups += 1;
                match self.opts.mode {
                    DupMode::Ignore if self.opts.on_dup.is_empty() => {
                        ctx.warn(1062, e.message);
                    }
                    DupMode::Replace => {
                        for id in conflicts(self.entry, &row)? {
                            let old = self.entry.handle.fetch(&[id])?.pop().unwrap();
                            if let Some(fks) = self.opts.fks {
                                fks.on_delete(&old, id, 0, ctx)?;
                            }
                            self.entry.handle.delete(id)?;
                            ctx.undo_change(self.entry, true, id, (&old).into());
                            self.res.affected += 1;
                        }
                        let id = self.entry.handle.insert(row.clone())?;
                        ctx.undo_insert(self.entry, id);
                        self.res.affected += 1;
                        self.returned(&row, ctx)?;
                    }
                    _ if !self.opts.on_dup.is_empty() => {
                        let Some(id) = conflicts(self.entry, &row)?.into_iter().next() else {
                            return Err(e);
                        };
                        let old = self.entry.handle.fetch(&[id])?.pop().unwrap();
                        *ctx.insert_row.borrow_mut() = Some(row.clone());
                        let mut new = old.clone();
                        for (c, ex) in self.opts.on_dup {
                            new[*c] = coerce(
                                ex.eval(&old, ctx)?,
                                &self.entry.def.columns[*c],
                                self.n,
                                ctx,
                            )?;
                        }
                        *ctx.insert_row.borrow_mut() = None;
                        if let Some(checks) = self.opts.checks {
                            checks.test(&new, ctx)?;
                        }
                        if let (Some(fks), false) = (self.opts.fks, new == old) {
                            fks.check_parents(&new, Some(&old), ctx)?;
                            fks.on_update(&old, &new, id, 0, ctx)?;
                        }
                        if new == old {
                            self.returned(&new, ctx)?;
                        } else {
                            match self.entry.handle.update(id, new.clone()) {
                                Ok(nid) => {
                                    ctx.undo_change(self.entry, false, nid, (&old).into());
                                    self.res.affected += 2;
                                    self.returned(&new, ctx)?;
                                }
                                Err(e2) if e2.code == 1062 && self.opts.mode == DupMode::Ignore => {
                                    ctx.warn(1062, e2.message)
                                }
                                Err(e2) => return Err(e2),
                            }
                        }
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
        Ok(())
    }

    fn returned(&self, row: &[Value], ctx: &ExecCtx) -> Result<()> {
        match self.opts.returning {
            Some(r) => r.add(row, ctx),
            None => Ok(()),
        }
    }

    pub fn finish(mut self, ctx: &ExecCtx) -> DmlResult {
        self.res.last_insert_id = self.first_id;
        if self.records > 1 || self.opts.mode != DupMode::Error {
            self.res.info = Some(format!(
                "Records: {}  Duplicates: {}  Warnings: {}",
                self.records,
                self.dups,
                ctx.warnings.borrow().len()
            ));
        }
        self.res
    }
}

/// Insert complete rows (already ordered by table column, unspecified = None → default).
pub fn insert_rows(
    entry: &Arc<TableEntry>,
    rows: impl Iterator<Item = Result<Vec<Option<Value>>>>,
    opts: &InsertOptions,
    ctx: &ExecCtx,
) -> Result<DmlResult> {
    let mut ins = Inserter::new(entry, opts);
    for r in rows {
        ins.push(r?, ctx)?;
    }
    Ok(ins.finish(ctx))
}

pub fn column_targets(entry: &TableEntry, names: &[String]) -> Result<Vec<usize>> {
    if names.is_empty() {
        return Ok((0..entry.def.columns.len()).collect());
    }
    let mut out = vec![];
    for n in names {
        let i = entry
            .def
            .column_index(n)
            .ok_or_else(|| Error::unknown_column(n, "INSERT INTO"))?;
        if out.contains(&i) {
            return Err(Error::new(1110, format!("Column '{n}' specified twice")));
        }
        out.push(i);
    }
    Ok(out)
}

/// Run `f` inside the engine's bulk bracket (writes buffered, flushed at the end).
pub fn in_bulk<T>(entry: &TableEntry, ctx: &ExecCtx, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // The bracket buffers writes table-wide: no other transaction writes meanwhile.
    entry.handle.lock_table(true)?;
    entry.handle.begin_bulk(ctx.read_buffer);
    let r = f();
    entry.handle.end_bulk()?;
    r
}

/// Bulk-insert rows whose i-th value belongs to column `positions[i]` (other columns take
/// their defaults); a duplicate key is an error. CREATE TABLE … SELECT and table rebuilds.
pub fn insert_positioned(
    entry: &Arc<TableEntry>,
    rows: impl IntoIterator<Item = Result<Row>>,
    positions: &[usize],
    ctx: &ExecCtx,
) -> Result<DmlResult> {
    let width = entry.def.columns.len();
    let it = rows.into_iter().map(|r| {
        let mut full = vec![None; width];
        for (p, v) in positions.iter().zip(r?) {
            full[*p] = Some(v);
        }
        Ok(full)
    });
    let checks = Checks::of(entry, ctx)?;
    // FOREIGN KEYs are not checked again on a copy (InnoDB's rule; an ALTER checks the
    // keys it adds itself).
    in_bulk(entry, ctx, || {
        insert_rows(
            entry,
            it,
            &InsertOptions {
                mode: DupMode::Error,
                on_dup: &[],
                returning: None,
                checks: checks.as_ref(),
                fks: None,
            },
            ctx,
        )
    })
}

/// Bulk-insert the whole rows `produce` pushes (a duplicate key is an error; no CHECK or
/// FOREIGN KEY is tested): REPAIR TABLE's copy of what a damaged table still holds.
pub fn insert_pushed<T>(
    entry: &Arc<TableEntry>,
    ctx: &ExecCtx,
    produce: impl FnOnce(&mut dyn FnMut(Row) -> Result<()>) -> Result<T>,
) -> Result<T> {
    let opts = InsertOptions {
        mode: DupMode::Error,
        on_dup: &[],
        returning: None,
        checks: None,
        fks: None,
    };
    in_bulk(entry, ctx, || {
        let mut ins = Inserter::new(entry, &opts);
        produce(&mut |row: Row| ins.push(row.into_iter().map(Some).collect(), ctx))
    })
}

/// LOAD DATA input split into records of fields (None = `\N`, SQL NULL), one record at
/// a time: a field is copied once, straight from the input, unless escapes or enclosing
/// quotes make it differ from its bytes.
pub struct LoadRecords<'a> {
    rest: &'a str,
    ld: &'a quarry_sql::LoadData,
    /// Bytes that may start a terminator, an escape or an enclosure.
    special: [bool; 256],
    enclosed: Option<([u8; 4], usize)>,
    escaped: Option<([u8; 4], usize)>,
    skipped: u64,
    width: usize,
    /// The last record ended at a line terminator (not at the end of the text).
    terminated: bool,
}

impl<'a> LoadRecords<'a> {
    pub fn new(text: &'a str, ld: &'a quarry_sql::LoadData) -> LoadRecords<'a> {
        let utf8 = |c: char| {
            let mut b = [0u8; 4];
            let n = c.encode_utf8(&mut b).len();
            (b, n)
        };
        let enclosed = ld.format.enclosed.map(utf8);
        let escaped = ld.format.escaped.map(utf8);
        let mut special = [false; 256];
        for first in [
            ld.format.fields_terminated.as_bytes().first(),
            ld.format.lines_terminated.as_bytes().first(),
            enclosed.as_ref().map(|e| &e.0[0]),
            escaped.as_ref().map(|e| &e.0[0]),
        ]
        .into_iter()
        .flatten()
        {
            special[*first as usize] = true;
        }
        LoadRecords {
            rest: text,
            ld,
            special,
            enclosed,
            escaped,
            skipped: 0,
            width: 0,
            terminated: false,
        }
    }

    fn record(&mut self) -> Vec<Option<String>> {
        let rest = self.rest;
        let b = rest.as_bytes();
        let ft = self.ld.format.fields_terminated.as_str();
        let lt = self.ld.format.lines_terminated.as_str();
        let at = |i: usize, pat: &Option<([u8; 4], usize)>| {
            pat.as_ref()
                .is_some_and(|(p, n)| b[i..].starts_with(&p[..*n]))
        };
        let mut fields = Vec::with_capacity(self.width);
        let mut cur = String::new();
        let (mut quoted, mut was_quoted) = (false, false);
        // Bytes from `run` to `i` belong to the field but are not yet in `cur`.
        let (mut i, mut run) = (0, 0);
        let mut consumed = b.len();
        self.terminated = false;
        let finish = |cur: &mut String, run: usize, i: usize, was_quoted: bool| {
            let s = if cur.is_empty() {
                rest[run..i].to_string()
            } else {
                cur.push_str(&rest[run..i]);
                std::mem::take(cur)
            };
            finish_field(s, was_quoted)
        };
        while i < b.len() {
            if !self.special[b[i] as usize] {
                i += 1;
                continue;
            }
            if quoted {
                if let Some((_, n)) = self.enclosed.filter(|_| at(i, &self.enclosed)) {
                    cur.push_str(&rest[run..i]);
                    if at(i + n, &self.enclosed) {
                        cur.push_str(&rest[i..i + n]);
                        i += 2 * n;
                    } else {
                        quoted = false;
                        i += n;
                    }
                    run = i;
                    continue;
                }
            } else {
                if !lt.is_empty() && b[i..].starts_with(lt.as_bytes()) {
                    consumed = i + lt.len();
                    self.terminated = true;
                    break;
                }
                if !ft.is_empty() && b[i..].starts_with(ft.as_bytes()) {
                    fields.push(finish(&mut cur, run, i, was_quoted));
                    was_quoted = false;
                    i += ft.len();
                    run = i;
                    continue;
                }
                if let Some((_, n)) = self.enclosed.filter(|_| at(i, &self.enclosed)) {
                    if cur.is_empty() && run == i && !was_quoted {
                        quoted = true;
                        was_quoted = true;
                        i += n;
                        run = i;
                        continue;
                    }
                }
            }
            if let Some((_, n)) = self.escaped.filter(|_| at(i, &self.escaped)) {
                cur.push_str(&rest[run..i]);
                i += n;
                if let Some(c) = rest[i..].chars().next() {
                    i += c.len_utf8();
                    match c {
                        'n' => cur.push('\n'),
                        't' => cur.push('\t'),
                        'r' => cur.push('\r'),
                        '0' => cur.push('\0'),
                        'Z' => cur.push('\x1a'),
                        'N' if cur.is_empty() => cur.push_str(NULL_MARK),
                        other => cur.push(other),
                    }
                }
                run = i;
                continue;
            }
            // A byte that starts a terminator, escape or quote, but not this time.
            i += rest[i..].chars().next().map_or(1, char::len_utf8);
        }
        fields.push(finish(&mut cur, run, i.min(b.len()), was_quoted));
        self.rest = &rest[consumed.min(rest.len())..];
        self.width = fields.len();
        fields
    }
}

impl LoadRecords<'_> {
    /// The next record, and whether IGNORE n LINES skips it (counted as skipped).
    fn next_raw(&mut self) -> Option<(Vec<Option<String>>, bool)> {
        if self.rest.is_empty() {
            return None;
        }
        let starting = self.ld.format.lines_starting.as_str();
        if !starting.is_empty() {
            let p = self.rest.find(starting)?;
            self.rest = &self.rest[p + starting.len()..];
        }
        let fields = self.record();
        let skip = self.skipped < self.ld.ignore_lines;
        if skip {
            self.skipped += 1;
        }
        Some((fields, skip))
    }
}

impl Iterator for LoadRecords<'_> {
    type Item = Vec<Option<String>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (fields, skip) = self.next_raw()?;
            if !skip {
                return Some(fields);
            }
        }
    }
}

/// What `\N` leaves in a field while it is parsed (a NULL unless the field was quoted).
const NULL_MARK: &str = "\u{0}NULL\u{0}";

fn finish_field(s: String, quoted: bool) -> Option<String> {
    if s == NULL_MARK && !quoted {
        None
    } else {
        Some(s)
    }
}

/// Input read per window of a LOAD DATA: memory holds a window's text and rows, not the
/// file.
const LOAD_WINDOW: usize = 4 << 20;

/// The records of LOAD DATA input read from `input` a window at a time. A window ends
/// after the last line terminator in it; a record the parser finds unterminated there (a
/// quoted field holding a terminator) is carried into the next window.
struct StreamRecords<'a> {
    input: &'a mut dyn std::io::Read,
    ld: &'a quarry_sql::LoadData,
    /// Bytes read per window (LOAD_WINDOW; tests use tiny ones).
    window: usize,
    /// The longest record taken (`max_allowed_packet`): input without line terminators
    /// (`/dev/zero`) is an error, not a buffer growing without end.
    max_record: usize,
    carry: Vec<u8>,
    eof: bool,
    ready: std::collections::VecDeque<Vec<Option<String>>>,
    skipped: u64,
    /// Input bytes whose records have been handed out.
    done: u64,
}

impl StreamRecords<'_> {
    fn fill(&mut self) -> Result<()> {
        while self.ready.is_empty() && !(self.eof && self.carry.is_empty()) {
            let mut buf = std::mem::take(&mut self.carry);
            let before = buf.len();
            if !self.eof {
                let want = before + self.window;
                buf.resize(want, 0);
                let mut got = before;
                while got < want {
                    let n = self
                        .input
                        .read(&mut buf[got..])
                        .map_err(|e| Error::io("LOAD DATA input", e))?;
                    if n == 0 {
                        self.eof = true;
                        break;
                    }
                    got += n;
                }
                buf.truncate(got);
            }
            let lt = self.ld.format.lines_terminated.as_bytes();
            let split = if self.eof || lt.is_empty() {
                buf.len()
            } else {
                match buf.windows(lt.len()).rposition(|w| w == lt) {
                    Some(p) => p + lt.len(),
                    None if buf.len() > self.max_record => {
                        return Err(Error::record_too_long(self.max_record));
                    }
                    None => {
                        // One record longer than a window: read on.
                        self.carry = buf;
                        continue;
                    }
                }
            };
            let text = String::from_utf8_lossy(&buf[..split]);
            let mut recs = LoadRecords::new(&text, self.ld);
            recs.skipped = self.skipped;
            let mut cut_at = None;
            loop {
                let (left, skipped) = (recs.rest.len(), recs.skipped);
                let Some((r, skip)) = recs.next_raw() else {
                    break;
                };
                if !recs.terminated && !self.eof {
                    cut_at = Some(text.len() - left);
                    recs.skipped = skipped;
                    break;
                }
                if !skip {
                    self.ready.push_back(r);
                }
            }
            self.skipped = recs.skipped;
            match cut_at {
                // Cut by the window: parsed again with what follows.
                Some(start) => {
                    let mut carry = text[start..].as_bytes().to_vec();
                    carry.extend_from_slice(&buf[split..]);
                    self.carry = carry;
                    self.done += start as u64;
                }
                None => {
                    self.carry = buf[split..].to_vec();
                    self.done += split as u64;
                }
            }
        }
        Ok(())
    }

    fn next_record(&mut self) -> Option<Result<Vec<Option<String>>>> {
        if self.ready.is_empty() {
            if let Err(e) = self.fill() {
                return Some(Err(e));
            }
        }
        self.ready.pop_front().map(Ok)
    }
}

/// LOAD DATA of `data` into `entry` (the whole input in memory; tests and small inputs).
pub fn load_data(
    entry: &Arc<TableEntry>,
    ld: &quarry_sql::LoadData,
    data: &[u8],
    ctx: &ExecCtx,
    progress: &dyn Fn(u64),
) -> Result<DmlResult> {
    load_data_from(entry, ld, &mut &data[..], ctx, progress)
}

/// LOAD DATA of what `input` yields into `entry`, read a window at a time; `progress`
/// hears how many bytes of it were read.
pub fn load_data_from(
    entry: &Arc<TableEntry>,
    ld: &quarry_sql::LoadData,
    input: &mut dyn std::io::Read,
    ctx: &ExecCtx,
    progress: &dyn Fn(u64),
) -> Result<DmlResult> {
    let targets = column_targets(entry, &ld.columns)?;
    let width = entry.def.columns.len();
    let mut records = StreamRecords {
        input,
        ld,
        window: LOAD_WINDOW,
        max_record: ctx.max_packet,
        carry: Vec::new(),
        eof: false,
        ready: Default::default(),
        skipped: 0,
        done: 0,
    };
    let rows = std::iter::from_fn(|| records.next_record().map(|r| r.map(|f| (f, records.done))));
    let mode = if ld.replace {
        DupMode::Replace
    } else if ld.ignore || ld.local {
        DupMode::Ignore
    } else {
        DupMode::Error
    };
    let mut short = 0usize;
    let mut n = 0u64;
    let iter = rows.map(|row| {
        let (fields, read) = row?;
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.check_killed()?;
        }
        if n.is_multiple_of(65536) {
            progress(read);
        }
        let mut full = vec![None; width];
        if fields.len() < targets.len() {
            short += 1;
        }
        let mut fields = fields.into_iter();
        for t in &targets {
            full[*t] = Some(match fields.next() {
                Some(Some(s)) => Value::Str(s),
                Some(None) | None => Value::Null,
            });
        }
        Ok(full)
    });
    let checks = Checks::of(entry, ctx)?;
    let fks = ForeignKeys::of(entry, ctx)?;
    let mut r = in_bulk(entry, ctx, || {
        insert_rows(
            entry,
            iter,
            &InsertOptions {
                mode,
                on_dup: &[],
                returning: None,
                checks: checks.as_ref(),
                fks: fks.as_deref(),
            },
            ctx,
        )
    })?;
    r.info = Some(format!(
        "Records: {}  Deleted: 0  Skipped: 0  Warnings: {}",
        r.affected,
        ctx.warnings.borrow().len()
    ));
    Ok(r)
}

#[cfg(test)]
mod load_tests {
    use super::*;

    /// The first, char-at-a-time parser: the oracle the streaming one must agree with.
    fn reference_parse(data: &[u8], ld: &quarry_sql::LoadData) -> Vec<Vec<Option<String>>> {
        let text = String::from_utf8_lossy(data);
        let mut rows = vec![];
        let ft = ld.format.fields_terminated.as_str();
        let lt = ld.format.lines_terminated.as_str();
        let mut rest: &str = &text;
        let mut skipped = 0;
        while !rest.is_empty() {
            if !ld.format.lines_starting.is_empty() {
                match rest.find(&ld.format.lines_starting) {
                    Some(p) => rest = &rest[p + ld.format.lines_starting.len()..],
                    None => break,
                }
            }
            let mut fields: Vec<Option<String>> = vec![];
            let mut cur = String::new();
            let mut quoted = false;
            let mut was_quoted = false;
            let mut chars = rest.char_indices().peekable();
            let mut consumed = rest.len();
            while let Some((i, c)) = chars.next() {
                if quoted {
                    if Some(c) == ld.format.enclosed {
                        if rest[i + c.len_utf8()..].starts_with(c) {
                            cur.push(c);
                            chars.next();
                        } else {
                            quoted = false;
                        }
                        continue;
                    }
                } else {
                    if rest[i..].starts_with(lt) {
                        consumed = i + lt.len();
                        break;
                    }
                    if rest[i..].starts_with(ft) {
                        fields.push(finish_field(std::mem::take(&mut cur), was_quoted));
                        was_quoted = false;
                        for _ in 1..ft.chars().count() {
                            chars.next();
                        }
                        continue;
                    }
                    if Some(c) == ld.format.enclosed && cur.is_empty() && !was_quoted {
                        quoted = true;
                        was_quoted = true;
                        continue;
                    }
                }
                if Some(c) == ld.format.escaped {
                    if let Some((_, n)) = chars.next() {
                        cur.push(match n {
                            'n' => '\n',
                            't' => '\t',
                            'r' => '\r',
                            '0' => '\0',
                            'Z' => '\x1a',
                            'N' if cur.is_empty() => {
                                cur.push_str("\u{0}NULL\u{0}");
                                continue;
                            }
                            other => other,
                        });
                    }
                    continue;
                }
                cur.push(c);
            }
            fields.push(finish_field(cur, was_quoted));
            rest = &rest[consumed.min(rest.len())..];
            if skipped < ld.ignore_lines {
                skipped += 1;
                continue;
            }
            rows.push(fields);
        }
        rows
    }

    fn load(
        ft: &str,
        lt: &str,
        enclosed: Option<char>,
        escaped: Option<char>,
    ) -> quarry_sql::LoadData {
        let mut ld = match quarry_sql::parse_one("LOAD DATA INFILE 'f' INTO TABLE t").unwrap() {
            quarry_sql::Stmt::LoadData(ld) => ld,
            _ => unreachable!(),
        };
        ld.format.fields_terminated = ft.into();
        ld.format.lines_terminated = lt.into();
        ld.format.enclosed = enclosed;
        ld.format.escaped = escaped;
        ld
    }

    #[test]
    fn streaming_parser_agrees_with_the_reference_on_random_input() {
        let formats = [
            load("\t", "\n", None, Some('\\')),
            load(",", "\r\n", Some('"'), Some('\\')),
            load("||", "\n", Some('\''), None),
            load(";", "é\n", Some('é'), Some('ß')),
        ];
        let alphabet: Vec<&str> = vec![
            "a", "b", "7", " ", "\t", "\n", "\r", ",", "\"", "'", "\\", "N", "n", "|", ";", "é",
            "ß", "日",
        ];
        let mut seed = 42u64;
        let mut next = move |m: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as usize) % m
        };
        for round in 0..3000 {
            let mut ld = formats[round % formats.len()].clone();
            ld.ignore_lines = (next(3) / 2) as _;
            if round % 7 == 0 {
                ld.format.lines_starting = "b".into();
            }
            let text: String = (0..next(60))
                .map(|_| alphabet[next(alphabet.len())])
                .collect();
            let want = reference_parse(text.as_bytes(), &ld);
            let got: Vec<_> = LoadRecords::new(&text, &ld).collect();
            assert_eq!(got, want, "input {text:?} with {ld:?}");
            // Read in tiny windows, records cut anywhere (quoted terminators included)
            // come out the same.
            let window = 1 + next(9);
            let mut input = text.as_bytes();
            let mut stream = StreamRecords {
                input: &mut input,
                ld: &ld,
                window,
                max_record: usize::MAX,
                carry: Vec::new(),
                eof: false,
                ready: Default::default(),
                skipped: 0,
                done: 0,
            };
            let mut streamed = vec![];
            while let Some(r) = stream.next_record() {
                streamed.push(r.unwrap());
            }
            assert_eq!(
                streamed, want,
                "window {window}: input {text:?} with {ld:?}"
            );
        }
    }
}
