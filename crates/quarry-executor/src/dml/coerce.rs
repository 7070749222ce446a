//! What a value becomes in a column: conversion to the column's type with MySQL's
//! strict-mode rules — out-of-range numbers, strings too long, text its character set
//! cannot hold, bad dates — as an error (strict) or a fitted value and a warning. Knows
//! nothing of tables or statements beyond the column and the row number errors name.

use quarry_catalog::ColumnDef;
use quarry_common::value::{parse_number_prefix, Date};
use quarry_common::{Decimal, Error, Result, SqlType, TypeKind, Value};

use crate::exec::ExecCtx;

/// A value too long for `col`: refused in strict mode (1406), else cut with warning 1265
/// — unless only spaces are cut, which is a note (1265), as in MariaDB.
fn cut_or_refuse(only_spaces: bool, col: &ColumnDef, row_no: usize, ctx: &ExecCtx) -> Result<()> {
    let msg = || format!("Data truncated for column '{}' at row {row_no}", col.name);
    if only_spaces {
        ctx.note(1265, msg());
        return Ok(());
    }
    if ctx.strict_now() {
        return Err(Error::data_too_long(&col.name, row_no));
    }
    ctx.warn(1265, msg());
    Ok(())
}

/// Convert a value for storage in `col`, applying MySQL's strict-mode rules.
pub fn coerce(v: Value, col: &ColumnDef, row_no: usize, ctx: &ExecCtx) -> Result<Value> {
    if v.is_null() {
        return if col.nullable {
            Ok(Value::Null)
        } else {
            Err(Error::not_null(&col.name))
        };
    }
    let ty = col.ty;
    let bad = |kind: &str, v: &Value| -> Result<()> {
        let msg =
            Error::incorrect_value(kind, &v.as_str_lossy(), &ctx.column_name(&col.name), row_no);
        if ctx.strict_now() {
            Err(msg)
        } else {
            ctx.warn(1366, msg.message);
            Ok(())
        }
    };
    let out_of_range = || -> Result<()> {
        if ctx.strict_now() {
            Err(Error::out_of_range(&col.name, row_no))
        } else {
            ctx.warn(1264, Error::out_of_range(&col.name, row_no).message);
            Ok(())
        }
    };
    Ok(match ty.kind {
        k if SqlType::new(k).is_integer() => {
            let (lo, hi) = ty.int_range();
            let n: i128 = match &v {
                Value::Int(i) => *i as i128,
                Value::UInt(u) => *u as i128,
                Value::Decimal(d) => d.round_to_i128(),
                Value::Double(f) => {
                    let r = f.round_ties_even();
                    if r > 1e30 {
                        i128::MAX
                    } else if r < -1e30 {
                        i128::MIN
                    } else {
                        r as i128
                    }
                }
                Value::Str(_) | Value::Bytes(_) => {
                    let s = v.as_str_lossy();
                    let t = s.trim();
                    match t.parse::<i128>() {
                        Ok(n) => n,
                        Err(_) => {
                            let (f, whole) = parse_number_prefix(&s);
                            if !whole || t.is_empty() {
                                bad("integer", &v)?;
                            }
                            f.round() as i128
                        }
                    }
                }
                other => other.to_i64() as i128,
            };
            let clamped = n.clamp(lo, hi);
            // 2^63, which is i64::MAX as a double, stores as BIGINT's largest value, as in
            // MariaDB (CAST(c AS DOUBLE) back into a BIGINT c); 2^64 into an unsigned one is
            // out of range there too.
            let bound_as_double =
                hi == i64::MAX as i128 && matches!(v, Value::Double(f) if f == i64::MAX as f64);
            if clamped != n && !bound_as_double {
                out_of_range()?;
            }
            if ty.unsigned && ty.kind == TypeKind::BigInt {
                Value::UInt(clamped as u64)
            } else {
                Value::Int(clamped as i64)
            }
        }
        TypeKind::Decimal => {
            let d = match &v {
                Value::Str(s) => match Decimal::parse(s) {
                    Some(d) => Some(d),
                    None => {
                        let (f, whole) = parse_number_prefix(s);
                        if !whole {
                            bad("decimal", &v)?;
                        }
                        Decimal::try_from_f64(f, ty.scale)
                    }
                },
                other => other.try_to_decimal(),
            };
            // Out of range (more digits than a decimal holds too) is an error, or the
            // nearest end of the range; never a wrapped or saturated number.
            // The sign matters only for a number too large for any decimal.
            let negative = d.is_none() && v.to_f64() < 0.0;
            let (d, out) = quarry_common::decimal::fit(d, negative, ty.len, ty.scale, ty.unsigned);
            if out {
                out_of_range()?;
            }
            Value::Decimal(d)
        }
        TypeKind::Float | TypeKind::Double => {
            let f = match &v {
                Value::Str(s) => {
                    let (f, whole) = parse_number_prefix(s);
                    if !whole {
                        bad("double", &v)?;
                    }
                    f
                }
                other => other.to_f64(),
            };
            let f = if ty.kind == TypeKind::Float {
                f as f32 as f64
            } else {
                f
            };
            if ty.unsigned && f < 0.0 {
                out_of_range()?;
                Value::Double(0.0)
            } else {
                Value::Double(f)
            }
        }
        TypeKind::Char | TypeKind::VarChar | TypeKind::Text => {
            let mut s = match v {
                Value::Str(s) => s,
                Value::Bytes(b) => {
                    match String::from_utf8(b) {
                        Ok(s) => s,
                        Err(e) => {
                            let shown: String = e
                                .as_bytes()
                                .iter()
                                .take(8)
                                .map(|b| format!("\\x{b:02X}"))
                                .collect();
                            let err = Error::new(1366, format!("Incorrect string value: '{shown}' for column `{}` at row {row_no}", col.name));
                            if ctx.strict_now() {
                                return Err(err);
                            }
                            ctx.warn(1366, err.message);
                            String::from_utf8_lossy(e.as_bytes()).into_owned()
                        }
                    }
                }
                other => other.to_string(),
            };
            // A latin1 or ascii column holds only its set's characters: another is 1366
            // (strict), else '?' with that warning, as MariaDB converts it.
            if let Some(at) = s.char_indices().find(|(_, c)| !ty.coll.holds(*c)) {
                let err = Error::new(
                    1366,
                    format!(
                        "Incorrect string value: '{}' for column `{}` at row {row_no}",
                        shown_bytes(&s.as_bytes()[at.0..]),
                        ctx.column_name(&col.name)
                    ),
                );
                if ctx.strict_now() {
                    return Err(err);
                }
                ctx.warn(1366, err.message);
                s = s
                    .chars()
                    .map(|c| if ty.coll.holds(c) { c } else { '?' })
                    .collect();
            }
            if ty.kind == TypeKind::Char {
                let t = s.trim_end_matches(' ').len();
                s.truncate(t);
            }
            if ty.kind == TypeKind::Text {
                // TEXT types count bytes (TINYTEXT: 255 bytes, 63 four-byte characters),
                // and cut at a character boundary.
                let max = ty.lob_bytes() as usize;
                if s.len() > max {
                    let only_spaces = s.as_bytes()[max..].iter().all(|&b| b == b' ');
                    cut_or_refuse(only_spaces, col, row_no, ctx)?;
                    s.truncate(s.floor_char_boundary(max));
                }
                return Ok(Value::Str(s));
            }
            let max = ty.len as usize;
            // No more bytes than characters allowed: no need to count the characters.
            if s.len() > max && s.chars().count() > max {
                let only_spaces = s.chars().skip(max).all(|c| c == ' ');
                cut_or_refuse(only_spaces, col, row_no, ctx)?;
                s = s.chars().take(max).collect();
            }
            Value::Str(s)
        }
        TypeKind::Binary | TypeKind::VarBinary | TypeKind::Blob => {
            let mut b = match v {
                Value::Bytes(b) => b,
                other => other.as_str_lossy().into_owned().into_bytes(),
            };
            let max = if ty.kind == TypeKind::Blob {
                ty.lob_bytes() as usize
            } else {
                ty.len as usize
            };
            if b.len() > max {
                cut_or_refuse(false, col, row_no, ctx)?;
                b.truncate(max);
            }
            if ty.kind == TypeKind::Binary {
                b.resize(max, 0);
            }
            Value::Bytes(b)
        }
        TypeKind::Date | TypeKind::DateTime | TypeKind::Timestamp => {
            let zero_ok = matches!(&v, Value::Str(s) if s.starts_with("0000-00-00"));
            match v.to_datetime() {
                Some(dt) if ty.kind == TypeKind::Date => Value::Date(dt.date),
                Some(mut dt) => {
                    let keep = 10u32.pow(6 - ty.scale.min(6) as u32);
                    dt.micro = dt.micro / keep * keep;
                    Value::DateTime(dt)
                }
                None if zero_ok => {
                    let z = Date {
                        year: 0,
                        month: 0,
                        day: 0,
                    };
                    if ty.kind == TypeKind::Date {
                        Value::Date(z)
                    } else {
                        Value::DateTime(quarry_common::DateTime::from_date(z))
                    }
                }
                None => {
                    let kind = if ty.kind == TypeKind::Date {
                        "date"
                    } else {
                        "datetime"
                    };
                    let err = Error::new(
                        1292,
                        format!(
                            "Incorrect {kind} value: '{}' for column `{}` at row {row_no}",
                            v.as_str_lossy(),
                            ctx.column_name(&col.name)
                        ),
                    );
                    if ctx.strict_now() {
                        return Err(err);
                    }
                    ctx.warn(1265, err.message);
                    if col.nullable {
                        Value::Null
                    } else {
                        Value::Date(Date {
                            year: 0,
                            month: 0,
                            day: 0,
                        })
                    }
                }
            }
        }
        TypeKind::Year => {
            let y = v.to_i64();
            Value::Int(match y {
                0 => 0,
                1..=69 => 2000 + y,
                70..=99 => 1900 + y,
                1901..=2155 => y,
                _ => {
                    out_of_range()?;
                    0
                }
            })
        }
        TypeKind::Time => {
            use quarry_common::time::{truncate_time, value_to_time, TimeParse};
            let bad = || {
                Error::incorrect_temporal(
                    "time",
                    &v.as_str_lossy(),
                    &ctx.column_name(&col.name),
                    row_no,
                )
            };
            match value_to_time(&v) {
                Some(TimeParse::Exact(t)) => Value::Time(truncate_time(t, ty.scale)),
                Some(TimeParse::Clamped(t)) => {
                    if ctx.strict_now() {
                        return Err(bad());
                    }
                    ctx.warn(1264, Error::out_of_range(&col.name, row_no).message);
                    Value::Time(truncate_time(t, ty.scale))
                }
                None => {
                    if ctx.strict_now() {
                        return Err(bad());
                    }
                    ctx.warn(1265, Error::data_truncated(&col.name, row_no).message);
                    Value::Time(0)
                }
            }
        }
        TypeKind::Null => Value::Null,
        _ => v,
    })
}

/// Bytes as error 1366 shows them: printable ASCII as itself, others as `\xHH`, at most
/// six, then `...`.
fn shown_bytes(b: &[u8]) -> String {
    let mut out: String = b
        .iter()
        .take(6)
        .map(|&c| {
            if (0x20..0x7F).contains(&c) {
                (c as char).to_string()
            } else {
                format!("\\x{c:02X}")
            }
        })
        .collect();
    if b.len() > 6 {
        out.push_str("...");
    }
    out
}
