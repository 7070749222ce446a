//! The TIME functions: TIME, CURTIME, HOUR/MINUTE/SECOND/MICROSECOND (of times and
//! datetimes), TIME_TO_SEC, SEC_TO_TIME, TIMEDIFF, ADDTIME, SUBTIME and MAKETIME, each as
//! MariaDB 10.11 answers it (a result past ±838:59:59 is the nearest end, with warning
//! 1292).
//!
//! Owns only these functions' evaluation; the TIME type's text and number forms are
//! `quarry_common::time`'s, and argument evaluation is `func::call`'s.

use quarry_common::time::{
    digits_needed, format_time_wide, time_of_day, truncate_time, value_to_time, TimeParse,
    MAX_TIME, MICROS_PER_SEC,
};
use quarry_common::value::DateTime;
use quarry_common::{Decimal, Result, Value};

use crate::exec::ExecCtx;
use crate::expr::to_dt;

/// Arguments each function takes (min, max); None: not a TIME function.
pub fn arity(name: &str) -> Option<(usize, usize)> {
    Some(match name {
        "TIME" | "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND" | "TIME_TO_SEC" | "SEC_TO_TIME" => {
            (1, 1)
        }
        "TIMEDIFF" | "ADDTIME" | "SUBTIME" | "TIME_FORMAT" => (2, 2),
        "MAKETIME" => (3, 3),
        "CURTIME" | "CURRENT_TIME" => (0, 1),
        _ => return None,
    })
}

/// A numeric value that reads as a date and time (YYYYMMDD[hhmmss]) is one; other
/// numbers are [-]HHMMSS.
fn as_time(v: &Value) -> Option<TimeParse> {
    if v.is_numeric() {
        if let Some(d) = v.to_datetime() {
            return Some(TimeParse::Exact(time_of_day(&d)));
        }
    }
    value_to_time(v)
}

/// `us` as a TIME result: past the range it is the nearest end at the fractional digits
/// of the arguments `from` (MariaDB's result type), with MariaDB's warning.
fn time_result(us: i128, from: &[Value], shown: impl FnOnce() -> String, ctx: &ExecCtx) -> Value {
    if us.abs() > MAX_TIME as i128 {
        ctx.warn(
            1292,
            format!("Truncated incorrect time value: '{}'", shown()),
        );
        let digits = from
            .iter()
            .filter_map(as_time)
            .map(|t| digits_needed(t.micros()))
            .max()
            .unwrap_or(0);
        let end = truncate_time(MAX_TIME, digits);
        return Value::Time(if us < 0 { -end } else { end });
    }
    Value::Time(us as i64)
}

/// A datetime argument given as a DATETIME/DATE or as text or a number that reads as one.
fn datetime_arg(v: &Value) -> Option<DateTime> {
    match v {
        Value::Time(_) => None,
        Value::Str(s) if s.trim().len() <= 10 && !s.contains(['-', '/']) => None,
        other => to_dt(other),
    }
}

pub fn call(name: &str, vals: &[Value], ctx: &ExecCtx) -> Result<Value> {
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let v = |i: usize| &vals[i];
    Ok(match name {
        "CURTIME" | "CURRENT_TIME" => {
            let p = vals
                .first()
                .map(|p| p.to_i64().clamp(0, 6) as u8)
                .unwrap_or(0);
            Value::Time(truncate_time(time_of_day(&ctx.now), p))
        }
        "TIME_FORMAT" => match as_time(v(0)) {
            Some(t) => {
                time_format(t.micros(), &v(1).as_str_lossy()).map_or(Value::Null, Value::Str)
            }
            None => Value::Null,
        },
        "TIME" => match as_time(v(0)) {
            Some(t) => Value::Time(t.micros()),
            None => Value::Null,
        },
        "HOUR" | "MINUTE" | "SECOND" | "MICROSECOND" => {
            let Some(t) = as_time(v(0)) else {
                return Ok(Value::Null);
            };
            let a = t.micros().unsigned_abs() as i64;
            let secs = a / MICROS_PER_SEC;
            Value::Int(match name {
                "HOUR" => secs / 3600,
                "MINUTE" => secs / 60 % 60,
                "SECOND" => secs % 60,
                _ => a % MICROS_PER_SEC,
            })
        }
        "TIME_TO_SEC" => {
            let Some(t) = as_time(v(0)) else {
                return Ok(Value::Null);
            };
            let us = t.micros();
            if us % MICROS_PER_SEC == 0 {
                Value::Int(us / MICROS_PER_SEC)
            } else {
                Value::Decimal(Decimal::new(us, 6).normalized())
            }
        }
        "SEC_TO_TIME" => {
            let d = v(0).to_decimal().rescale(6);
            time_result(d.mantissa.saturating_i128(), vals, || v(0).to_string(), ctx)
        }
        "MAKETIME" => {
            let (h, m) = (v(0).to_i64(), v(1).to_i64());
            let s = v(2).to_decimal().rescale(6).mantissa.saturating_i128();
            if !(0..60).contains(&m) || !(0..60 * MICROS_PER_SEC as i128).contains(&s) {
                return Ok(Value::Null);
            }
            let mag =
                (h.unsigned_abs() as i128 * 3600 + m as i128 * 60) * MICROS_PER_SEC as i128 + s;
            let us = if h < 0 { -mag } else { mag };
            time_result(us, &[], || format!("{h}:{m:02}:{}", v(2)), ctx)
        }
        "TIMEDIFF" => match (datetime_arg(v(0)), datetime_arg(v(1))) {
            (Some(a), Some(b)) => {
                let us = a.to_micros() as i128 - b.to_micros() as i128;
                time_result(us, vals, || format_time_wide(us, 0), ctx)
            }
            (None, None) => match (as_time(v(0)), as_time(v(1))) {
                (Some(a), Some(b)) => {
                    let us = a.micros() as i128 - b.micros() as i128;
                    time_result(us, vals, || format_time_wide(us, 0), ctx)
                }
                _ => Value::Null,
            },
            // A time and a datetime: MariaDB answers NULL.
            _ => Value::Null,
        },
        "ADDTIME" | "SUBTIME" => {
            let Some(delta) = as_time(v(1)) else {
                return Ok(Value::Null);
            };
            let delta = if name == "SUBTIME" {
                -(delta.micros() as i128)
            } else {
                delta.micros() as i128
            };
            match datetime_arg(v(0)) {
                Some(d) => {
                    let us = d.to_micros() as i128 + delta;
                    if us < 0 || us > max_datetime() as i128 {
                        return Ok(Value::Null);
                    }
                    Value::DateTime(DateTime::from_micros(us as i64))
                }
                None => match as_time(v(0)) {
                    Some(t) => {
                        let us = t.micros() as i128 + delta;
                        time_result(us, vals, || format_time_wide(us, 0), ctx)
                    }
                    None => Value::Null,
                },
            }
        }
        _ => unreachable!("timefn::arity names {name}"),
    })
}

/// 9999-12-31 23:59:59.999999 in microseconds.
fn max_datetime() -> i64 {
    let last = quarry_common::Date {
        year: 9999,
        month: 12,
        day: 31,
    };
    DateTime::from_date(last).to_micros() + 86_400 * MICROS_PER_SEC - 1
}

/// TIME_FORMAT: the hour, minute, second and fraction specifiers of DATE_FORMAT over a
/// TIME, whose hours may pass 23 (`%H` and `%k` show them whole; `%h`, `%l`, `%p` and
/// `%r` take them modulo 12 and 24), a negative one led by `-`. A date specifier makes
/// the result NULL, as MariaDB answers.
fn time_format(us: i64, fmt: &str) -> Option<String> {
    let a = us.unsigned_abs() as i64;
    let (h, m, sec, f) = (
        a / MICROS_PER_SEC / 3600,
        a / MICROS_PER_SEC / 60 % 60,
        a / MICROS_PER_SEC % 60,
        a % MICROS_PER_SEC,
    );
    let h12 = (h % 12 + 11) % 12 + 1;
    let ampm = if h % 24 < 12 { "AM" } else { "PM" };
    let mut out = String::new();
    if us < 0 {
        out.push('-');
    }
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(spec) = it.next() else { break };
        match spec {
            'H' => out.push_str(&format!("{h:02}")),
            'k' => out.push_str(&h.to_string()),
            'h' | 'I' => out.push_str(&format!("{h12:02}")),
            'l' => out.push_str(&h12.to_string()),
            'i' => out.push_str(&format!("{m:02}")),
            's' | 'S' => out.push_str(&format!("{sec:02}")),
            'f' => out.push_str(&format!("{f:06}")),
            'p' => out.push_str(ampm),
            'T' => out.push_str(&format!("{h:02}:{m:02}:{sec:02}")),
            'r' => out.push_str(&format!("{h12:02}:{m:02}:{sec:02} {ampm}")),
            'Y' | 'y' | 'm' | 'c' | 'd' | 'e' | 'D' | 'j' | 'M' | 'b' | 'W' | 'a' | 'w' | 'U'
            | 'u' | 'V' | 'v' | 'X' | 'x' => return None,
            other => out.push(other),
        }
    }
    Some(out)
}
