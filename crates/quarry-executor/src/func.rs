//! Built-in scalar functions (string, numeric, date, control flow, session information).
use std::borrow::Cow;

use quarry_common::charset::Charset;
use quarry_common::value::Mantissa;
use quarry_common::value::{Date, DateTime};
use quarry_common::{Collation, Decimal, Error, Result, Value};

use crate::exec::ExecCtx;
use crate::expr::{to_dt, Expr};

fn argc(name: &str, args: &[Expr], min: usize, max: usize) -> Result<()> {
    if args.len() < min || args.len() > max {
        return Err(Error::wrong_arguments(name));
    }
    Ok(())
}

/// Number of arguments a function takes (min, max); None = unknown function.
/// A string's bytes in its character set: latin1 ones when the binder marked the argument
/// with a latin1 collation (values are UTF-8 inside), a binary string's as they are.
fn stored_bytes(v: &Value, coll: Option<Collation>) -> Cow<'_, [u8]> {
    match v {
        Value::Bytes(b) => Cow::Borrowed(b),
        Value::Str(s) if coll.is_some_and(|c| c.charset() == "latin1") => {
            Cow::Owned(Charset::Latin1.encode(s).into_owned())
        }
        Value::Str(s) => Cow::Borrowed(s.as_bytes()),
        other => Cow::Owned(other.as_str_lossy().into_owned().into_bytes()),
    }
}

pub fn arity(name: &str) -> Option<(usize, usize)> {
    if let Some(a) = crate::timefn::arity(name) {
        return Some(a);
    }
    Some(match name {
        "CONCAT" | "COALESCE" | "GREATEST" | "LEAST" | "CONCAT_WS" | "FIELD" | "ELT" => {
            (1, usize::MAX)
        }
        "LENGTH" | "OCTET_LENGTH" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "UPPER" | "UCASE"
        | "LOWER" | "LCASE" | "TRIM" | "LTRIM" | "RTRIM" | "REVERSE" | "ASCII" | "ORD"
        | "SPACE" | "HEX" | "ABS" | "CEIL" | "CEILING" | "FLOOR" | "SQRT" | "EXP" | "LN"
        | "LOG10" | "LOG2" | "SIGN" | "DATE" | "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH"
        | "DAYOFWEEK" | "WEEKDAY" | "DAYOFYEAR" | "TO_DAYS" | "LAST_DAY" | "ISNULL" | "QUARTER"
        | "MONTHNAME" | "DAYNAME" | "FROM_DAYS" | "BIT_LENGTH" | "UNHEX" | "RADIANS"
        | "DEGREES" | "SIN" | "COS" | "TAN" | "ATAN" | "ASIN" | "ACOS" | "COT" | "BIN" | "OCT"
        | "LOAD_FILE" | "WEEKOFYEAR" | "JSON_VALID" => (1, 1),
        "WEEK" | "YEARWEEK" => (1, 2),
        "STR_TO_DATE" => (2, 2),
        "LEFT"
        | "RIGHT"
        | "REPEAT"
        | "INSTR"
        | "IFNULL"
        | "NULLIF"
        | "POW"
        | "POWER"
        | "MOD"
        | "DATEDIFF"
        | "DATE_FORMAT"
        | "STRCMP"
        | "FORMAT"
        | "TIMESTAMPDIFF_SECONDS"
        | "ATAN2" => (2, 2),
        "SUBSTRING" | "SUBSTR" | "MID" => (2, 3),
        "LOCATE" => (2, 3),
        "ROUND" | "TRUNCATE" | "LOG" => (1, 2),
        "REPLACE" | "LPAD" | "RPAD" | "IF" | "DATE_ADD" | "DATE_SUB" | "SUBSTRING_INDEX"
        | "TIMESTAMPDIFF" | "INSERT_STR" => (3, 3),
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" | "SYSDATE"
        | "UTC_TIMESTAMP" => (0, 1),
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" | "PI" | "DATABASE" | "SCHEMA" | "VERSION"
        | "USER" | "CURRENT_USER" | "SESSION_USER" | "SYSTEM_USER" | "CONNECTION_ID"
        | "ROW_COUNT" | "FOUND_ROWS" | "UUID" => (0, 0),
        "LAST_INSERT_ID" | "RAND" | "UNIX_TIMESTAMP" => (0, 1),
        "FROM_UNIXTIME" => (1, 2),
        "CHAR" => (1, usize::MAX),
        _ => return None,
    })
}

fn s(v: &Value) -> String {
    v.as_str_lossy().into_owned()
}

fn dt_or_null(v: &Value) -> Option<DateTime> {
    to_dt(v)
}

pub fn call(name: &str, args: &[Expr], row: &[Value], ctx: &ExecCtx) -> Result<Value> {
    // Functions that must not evaluate all arguments eagerly.
    match name {
        "IF" => {
            argc(name, args, 3, 3)?;
            return if args[0].eval_truth(row, ctx)? {
                args[1].eval(row, ctx)
            } else {
                args[2].eval(row, ctx)
            };
        }
        "IFNULL" => {
            let a = args[0].eval(row, ctx)?;
            return if a.is_null() {
                args[1].eval(row, ctx)
            } else {
                Ok(a)
            };
        }
        "COALESCE" => {
            for a in args {
                let v = a.eval(row, ctx)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            return Ok(Value::Null);
        }
        _ => {}
    }
    let vals: Vec<Value> = args
        .iter()
        .map(|a| a.eval(row, ctx))
        .collect::<Result<_>>()?;
    if crate::timefn::arity(name).is_some() {
        return crate::timefn::call(name, &vals, ctx);
    }
    let null_in = vals.iter().any(Value::is_null);
    let v = |i: usize| &vals[i];
    // Arguments compared under a collation carry it (bind/collation.rs).
    let coll = match args.first() {
        Some(Expr::Collate(_, c)) => Some(*c),
        _ => None,
    };
    let cmp = |a: &Value, b: &Value| match coll {
        Some(c) => a.sql_cmp_in(b, c),
        None => a.sql_cmp(b),
    };
    Ok(match name {
        "CONCAT" => {
            if null_in {
                return Ok(Value::Null);
            }
            let len: usize = vals.iter().map(|x| x.as_str_lossy().len()).sum();
            if over_packet("concat", len, ctx) {
                return Ok(Value::Null);
            }
            Value::Str(vals.iter().map(s).collect())
        }
        "CONCAT_WS" => {
            if v(0).is_null() {
                return Ok(Value::Null);
            }
            let sep = s(v(0));
            let len: usize = vals[1..]
                .iter()
                .map(|x| x.as_str_lossy().len() + sep.len())
                .sum();
            if over_packet("concat_ws", len, ctx) {
                return Ok(Value::Null);
            }
            Value::Str(
                vals[1..]
                    .iter()
                    .filter(|x| !x.is_null())
                    .map(s)
                    .collect::<Vec<_>>()
                    .join(&sep),
            )
        }
        "NULLIF" => {
            if cmp(v(0), v(1)) == Some(std::cmp::Ordering::Equal) {
                Value::Null
            } else {
                v(0).clone()
            }
        }
        "ISNULL" => Value::from_bool(v(0).is_null()),
        "JSON_VALID" => match v(0) {
            Value::Null => Value::Null,
            x => Value::from_bool(crate::json::valid(&x.as_str_lossy())),
        },
        "GREATEST" | "LEAST" => {
            if null_in {
                return Ok(Value::Null);
            }
            let mut best = v(0).clone();
            for x in &vals[1..] {
                let o = cmp(x, &best).unwrap_or(std::cmp::Ordering::Equal);
                if (name == "GREATEST" && o == std::cmp::Ordering::Greater)
                    || (name == "LEAST" && o == std::cmp::Ordering::Less)
                {
                    best = x.clone();
                }
            }
            best
        }
        "FIELD" => {
            if v(0).is_null() {
                return Ok(Value::Int(0));
            }
            let p = vals[1..]
                .iter()
                .position(|x| cmp(v(0), x) == Some(std::cmp::Ordering::Equal));
            Value::Int(p.map(|p| p as i64 + 1).unwrap_or(0))
        }
        "ELT" => {
            let n = v(0).to_i64();
            if n >= 1 && (n as usize) < vals.len() {
                vals[n as usize].clone()
            } else {
                Value::Null
            }
        }
        _ if null_in
            && !matches!(
                name,
                "LAST_INSERT_ID" | "RAND" | "UNIX_TIMESTAMP" | "NOW" | "CHAR"
            ) =>
        {
            Value::Null
        }
        "LENGTH" | "OCTET_LENGTH" => Value::Int(stored_bytes(v(0), coll).len() as i64),
        "BIT_LENGTH" => Value::Int(stored_bytes(v(0), coll).len() as i64 * 8),
        "CHAR_LENGTH" | "CHARACTER_LENGTH" => {
            Value::Int(v(0).as_str_lossy().chars().count() as i64)
        }
        "UPPER" | "UCASE" => Value::Str(s(v(0)).to_uppercase()),
        "LOWER" | "LCASE" => Value::Str(s(v(0)).to_lowercase()),
        "TRIM" => Value::Str(s(v(0)).trim_matches(' ').to_string()),
        "LTRIM" => Value::Str(s(v(0)).trim_start_matches(' ').to_string()),
        "RTRIM" => Value::Str(s(v(0)).trim_end_matches(' ').to_string()),
        "TRIM_CHARS" => {
            // (string, remstr, where: 0 both, 1 leading, 2 trailing)
            let text = s(v(0));
            let rem = s(v(1));
            let mode = v(2).to_i64();
            let mut t = text.as_str();
            if !rem.is_empty() {
                if mode != 2 {
                    while let Some(r) = t.strip_prefix(rem.as_str()) {
                        t = r;
                    }
                }
                if mode != 1 {
                    while let Some(r) = t.strip_suffix(rem.as_str()) {
                        t = r;
                    }
                }
            }
            Value::Str(t.to_string())
        }
        "REVERSE" => Value::Str(s(v(0)).chars().rev().collect()),
        "REPEAT" => {
            let n = v(1).to_i64().max(0) as usize;
            let base = s(v(0));
            if over_packet("repeat", base.len().saturating_mul(n), ctx) {
                return Ok(Value::Null);
            }
            Value::Str(base.repeat(n))
        }
        "SPACE" => {
            let n = v(0).to_i64().max(0) as usize;
            if over_packet("space", n, ctx) {
                return Ok(Value::Null);
            }
            Value::Str(" ".repeat(n))
        }
        "ASCII" => Value::Int(stored_bytes(v(0), coll).first().map_or(0, |&b| b as i64)),
        // The first character's bytes as one big-endian number.
        "ORD" => {
            let b = stored_bytes(v(0), coll);
            let n = match (b.first(), v(0)) {
                (None, _) => 0,
                (Some(_), Value::Str(_)) if coll.is_none_or(|c| c.is_unicode()) => {
                    v(0).as_str_lossy().chars().next().map_or(1, char::len_utf8)
                }
                (Some(_), _) => 1,
            };
            Value::Int(b[..n].iter().fold(0i64, |acc, &x| acc << 8 | x as i64))
        }
        "CHAR" => Value::Str(
            vals.iter()
                .filter(|x| !x.is_null())
                .map(|x| char::from_u32(x.to_i64() as u32).unwrap_or('?'))
                .collect(),
        ),
        "HEX" => match v(0) {
            x if x.is_numeric() => Value::Str(format!("{:X}", x.to_i64())),
            other => Value::Str(
                stored_bytes(other, coll)
                    .iter()
                    .map(|b| format!("{b:02X}"))
                    .collect(),
            ),
        },
        "UNHEX" => {
            let h = s(v(0));
            let bytes: Option<Vec<u8>> = (0..h.len() / 2)
                .map(|i| {
                    h.get(2 * i..2 * i + 2)
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                })
                .collect();
            match bytes {
                Some(b) if h.len().is_multiple_of(2) => Value::Bytes(b),
                _ => Value::Null,
            }
        }
        "LOAD_FILE" => match ctx.session.read_file(&s(v(0)), ctx.max_packet) {
            Some(bytes) => Value::Bytes(bytes),
            None => Value::Null,
        },
        "BIN" => Value::Str(format!("{:b}", v(0).to_i64())),
        "OCT" => Value::Str(format!("{:o}", v(0).to_i64())),
        "LEFT" => Value::Str(
            s(v(0))
                .chars()
                .take(v(1).to_i64().max(0) as usize)
                .collect(),
        ),
        "RIGHT" => {
            let t: Vec<char> = s(v(0)).chars().collect();
            let n = (v(1).to_i64().max(0) as usize).min(t.len());
            Value::Str(t[t.len() - n..].iter().collect())
        }
        "SUBSTRING" | "SUBSTR" | "MID" => {
            let t: Vec<char> = s(v(0)).chars().collect();
            let pos = v(1).to_i64();
            let len = if vals.len() > 2 {
                v(2).to_i64()
            } else {
                i64::MAX
            };
            let start = if pos > 0 {
                (pos - 1) as usize
            } else if pos < 0 && (-pos) as usize <= t.len() {
                t.len() - (-pos) as usize
            } else {
                return Ok(Value::Str(String::new()));
            };
            if start >= t.len() || len <= 0 {
                return Ok(Value::Str(String::new()));
            }
            let end = (start as i64).saturating_add(len).min(t.len() as i64) as usize;
            Value::Str(t[start..end].iter().collect())
        }
        "SUBSTRING_INDEX" => {
            let text = s(v(0));
            let delim = s(v(1));
            let n = v(2).to_i64();
            if delim.is_empty() || n == 0 {
                return Ok(Value::Str(String::new()));
            }
            let parts: Vec<&str> = text.split(delim.as_str()).collect();
            if n > 0 {
                Value::Str(parts[..(n as usize).min(parts.len())].join(&delim))
            } else {
                let k = ((-n) as usize).min(parts.len());
                Value::Str(parts[parts.len() - k..].join(&delim))
            }
        }
        "INSTR" | "LOCATE" => {
            let (hay, needle, from) = if name == "INSTR" {
                (s(v(0)), s(v(1)), 1)
            } else {
                (
                    s(v(1)),
                    s(v(0)),
                    if vals.len() > 2 { v(2).to_i64() } else { 1 },
                )
            };
            if from < 1 {
                return Ok(Value::Int(0));
            }
            let hay_l: Vec<char> = hay.to_lowercase().chars().collect();
            let nee_l: Vec<char> = needle.to_lowercase().chars().collect();
            let start = (from - 1) as usize;
            if nee_l.is_empty() {
                return Ok(Value::Int(if start <= hay_l.len() { from } else { 0 }));
            }
            let found = (start..hay_l.len()).find(|&i| hay_l[i..].starts_with(&nee_l));
            Value::Int(found.map(|i| i as i64 + 1).unwrap_or(0))
        }
        "REPLACE" => {
            let from = s(v(1));
            if from.is_empty() {
                v(0).clone()
            } else {
                let (hay, to) = (s(v(0)), s(v(2)));
                let grow = to.len().saturating_sub(from.len());
                let len = hay.len() + hay.matches(from.as_str()).count().saturating_mul(grow);
                if over_packet("replace", len, ctx) {
                    return Ok(Value::Null);
                }
                Value::Str(hay.replace(&from, &to))
            }
        }
        "LPAD" | "RPAD" => {
            let t: Vec<char> = s(v(0)).chars().collect();
            let n = v(1).to_i64();
            if n < 0 {
                return Ok(Value::Null);
            }
            let n = n as usize;
            let pad: Vec<char> = s(v(2)).chars().collect();
            let widest = pad
                .iter()
                .chain(&t)
                .map(|c| c.len_utf8())
                .max()
                .unwrap_or(1);
            if n > t.len() && over_packet(&name.to_ascii_lowercase(), n.saturating_mul(widest), ctx)
            {
                return Ok(Value::Null);
            }
            if t.len() >= n {
                return Ok(Value::Str(t[..n].iter().collect()));
            }
            if pad.is_empty() {
                return Ok(Value::Null);
            }
            let fill: String = pad.iter().cycle().take(n - t.len()).collect();
            let body: String = t.iter().collect();
            Value::Str(if name == "LPAD" {
                fill + &body
            } else {
                body + &fill
            })
        }
        "STRCMP" => Value::Int(match cmp(v(0), v(1)).unwrap() {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }),
        "FORMAT" => {
            let d = v(0).to_decimal();
            let d = d
                .checked_rescale(v(1).to_i64().clamp(0, 38) as u8)
                .unwrap_or(d);
            let txt = d.to_string();
            let (int_part, frac) = txt
                .split_once('.')
                .map(|(a, b)| (a.to_string(), Some(b.to_string())))
                .unwrap_or((txt.clone(), None));
            let (neg, digits) = int_part
                .strip_prefix('-')
                .map(|d| (true, d.to_string()))
                .unwrap_or((false, int_part.clone()));
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i) % 3 == 0 {
                    grouped.push(',');
                }
                grouped.push(c);
            }
            Value::Str(format!(
                "{}{}{}",
                if neg { "-" } else { "" },
                grouped,
                frac.map(|f| format!(".{f}")).unwrap_or_default()
            ))
        }
        "ABS" => match v(0) {
            Value::Int(i) => Value::Int(
                i.checked_abs()
                    .ok_or_else(|| Error::bigint_out_of_range("BIGINT", &format!("abs({i})")))?,
            ),
            Value::UInt(u) => Value::UInt(*u),
            Value::Decimal(d) => Value::Decimal(d.abs()),
            other => Value::Double(other.to_f64().abs()),
        },
        "SIGN" => Value::Int(match v(0).to_f64() {
            x if x > 0.0 => 1,
            x if x < 0.0 => -1,
            _ => 0,
        }),
        "CEIL" | "CEILING" | "FLOOR" => {
            let up = name != "FLOOR";
            match v(0) {
                Value::Int(_) | Value::UInt(_) => v(0).clone(),
                Value::Decimal(d) => {
                    let (base, frac_nonzero) = d.trunc();
                    let adj = if frac_nonzero && up && !d.is_negative() {
                        1
                    } else if frac_nonzero && !up && d.is_negative() {
                        -1
                    } else {
                        0
                    };
                    let m = base.checked_add(Mantissa::from(adj as i64)).unwrap_or(base);
                    // Past BIGINT the result stays a DECIMAL, as in MariaDB.
                    match m.to_i64() {
                        Some(i) => Value::Int(i),
                        None => Value::Decimal(Decimal::new(m, 0)),
                    }
                }
                other => {
                    let f = other.to_f64();
                    Value::Double(if up { f.ceil() } else { f.floor() })
                }
            }
        }
        "ROUND" | "TRUNCATE" => {
            let places = if vals.len() > 1 { v(1).to_i64() } else { 0 };
            let trunc = name == "TRUNCATE";
            match v(0) {
                Value::Int(i) if places >= 0 => Value::Int(*i),
                Value::Int(_) | Value::UInt(_) | Value::Decimal(_) => {
                    let d = v(0).to_decimal();
                    if places >= 0 {
                        let p = places.min(38) as u8;
                        // Both give p fractional digits (MariaDB: TRUNCATE(1.5, 2) is 1.50).
                        if trunc && d.scale > p {
                            let drop = d.scale - p;
                            Value::Decimal(Decimal::new(
                                d.mantissa
                                    .checked_div(quarry_common::value::pow10(drop))
                                    .unwrap_or(Mantissa::ZERO),
                                p,
                            ))
                        } else {
                            // Padding past the digits a result holds keeps the value as is.
                            Value::Decimal(d.checked_rescale(p).unwrap_or(d))
                        }
                    } else {
                        // Exactly, half away from zero, as a DECIMAL when it passes the
                        // BIGINT range (ROUND(9223372036854775807, -1)).
                        let m = d.mantissa.to_i128().unwrap_or(d.round_to_i128());
                        let sc = if d.mantissa.to_i128().is_some() {
                            d.scale as u32
                        } else {
                            0
                        };
                        let k = (-places).min(30) as u32;
                        let step = 10i128.checked_pow(sc + k).unwrap_or(i128::MAX);
                        let q = m / step;
                        let rem = m % step;
                        let q = if !trunc && rem.abs() >= step - rem.abs() {
                            q + m.signum()
                        } else {
                            q
                        };
                        let r = q.saturating_mul(10i128.pow(k));
                        // A DECIMAL stays one (its type says so: ROUND(ROUND(15.5, -1), 1)
                        // shows 20.0, as in MariaDB).
                        match i64::try_from(r) {
                            Ok(i) if !matches!(v(0), Value::Decimal(_)) => Value::Int(i),
                            _ => Value::Decimal(Decimal::new(r, 0)),
                        }
                    }
                }
                other => {
                    let x = other.to_f64();
                    let f = 10f64.powi(places.clamp(-300, 300) as i32);
                    Value::Double(if trunc {
                        (x * f).trunc() / f
                    } else {
                        // Half to even on the scaled double (rint), as MariaDB:
                        // ROUND(2.5e0) is 2, ROUND(0.125e0, 2) 0.12.
                        (x * f).round_ties_even() / f
                    })
                }
            }
        }
        "MOD" => {
            let m = crate::expr::binary(crate::expr::BinOp::Mod, v(0), v(1))?;
            if m.is_null() && !v(0).is_null() && !v(1).is_null() {
                ctx.division_by_zero()?;
            }
            m
        }
        "POW" | "POWER" => Value::Double(v(0).to_f64().powf(v(1).to_f64())),
        "SQRT" => {
            let x = v(0).to_f64();
            if x < 0.0 {
                Value::Null
            } else {
                Value::Double(x.sqrt())
            }
        }
        "EXP" => Value::Double(v(0).to_f64().exp()),
        "LN" | "LOG" | "LOG10" | "LOG2" => {
            let (base, x) = if name == "LOG" && vals.len() == 2 {
                (Some(v(0).to_f64()), v(1).to_f64())
            } else {
                (None, v(0).to_f64())
            };
            if x <= 0.0 {
                return Ok(Value::Null);
            }
            Value::Double(match (name, base) {
                (_, Some(b)) => x.ln() / b.ln(),
                ("LOG10", _) => x.log10(),
                ("LOG2", _) => x.log2(),
                _ => x.ln(),
            })
        }
        "PI" => Value::Double(std::f64::consts::PI),
        "RADIANS" => Value::Double(v(0).to_f64().to_radians()),
        "DEGREES" => Value::Double(v(0).to_f64().to_degrees()),
        "SIN" => Value::Double(v(0).to_f64().sin()),
        "COS" => Value::Double(v(0).to_f64().cos()),
        "TAN" => Value::Double(v(0).to_f64().tan()),
        "COT" => Value::Double(1.0 / v(0).to_f64().tan()),
        "ASIN" => Value::Double(v(0).to_f64().asin()),
        "ACOS" => Value::Double(v(0).to_f64().acos()),
        "ATAN" => Value::Double(v(0).to_f64().atan()),
        "ATAN2" => Value::Double(v(0).to_f64().atan2(v(1).to_f64())),
        "RAND" => {
            let seed = ctx.rand_state.get();
            let next = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ctx.rand_state.set(next);
            Value::Double((next >> 11) as f64 / (1u64 << 53) as f64)
        }
        "NOW" | "CURRENT_TIMESTAMP" | "LOCALTIMESTAMP" | "LOCALTIME" | "SYSDATE"
        | "UTC_TIMESTAMP" => {
            let mut now = ctx.now;
            let p = if vals.is_empty() {
                0
            } else {
                v(0).to_i64().clamp(0, 6) as u32
            };
            now.micro = now.micro / 10u32.pow(6 - p) * 10u32.pow(6 - p);
            Value::DateTime(now)
        }
        "CURDATE" | "CURRENT_DATE" | "UTC_DATE" => Value::Date(ctx.now.date),
        "DATE" => dt_or_null(v(0))
            .map(|d| Value::Date(d.date))
            .unwrap_or(Value::Null),
        "YEAR" | "MONTH" | "DAY" | "DAYOFMONTH" | "DAYOFWEEK" | "WEEKDAY" | "DAYOFYEAR"
        | "TO_DAYS" | "QUARTER" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            Value::Int(match name {
                "YEAR" => d.date.year as i64,
                "MONTH" => d.date.month as i64,
                "DAY" | "DAYOFMONTH" => d.date.day as i64,
                "DAYOFWEEK" => (d.date.weekday() as i64 + 1) % 7 + 1,
                "WEEKDAY" => d.date.weekday() as i64,
                "DAYOFYEAR" => {
                    d.date.to_days()
                        - Date {
                            year: d.date.year,
                            month: 1,
                            day: 1,
                        }
                        .to_days()
                        + 1
                }
                "QUARTER" => (d.date.month as i64 - 1) / 3 + 1,
                _ => d.date.to_days(),
            })
        }
        "STR_TO_DATE" => {
            if v(0).is_null() || v(1).is_null() {
                return Ok(Value::Null);
            }
            let text = s(v(0));
            match crate::strtodate::str_to_date(&text, &s(v(1))) {
                Some(d) => d,
                None => {
                    ctx.warn(
                        1411,
                        format!("Incorrect datetime value: '{text}' for function str_to_date"),
                    );
                    Value::Null
                }
            }
        }
        "WEEK" | "YEARWEEK" | "WEEKOFYEAR" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            // The mode (default_week_format's default, 0; WEEKOFYEAR is mode 3).
            let mode = match name {
                "WEEKOFYEAR" => 3,
                _ if vals.len() > 1 => v(1).to_i64(),
                _ => 0,
            };
            let mut bits = crate::week::mode_bits(mode);
            if name == "YEARWEEK" {
                bits |= crate::week::YEAR;
            }
            let (w, y) = crate::week::week(&d.date, bits);
            Value::Int(if name == "YEARWEEK" { y * 100 + w } else { w })
        }
        "MONTHNAME" | "DAYNAME" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            // A zero month has no name, a date with a zero part no weekday: NULL, as
            // MariaDB (MONTHNAME('0000-00-00') panicked).
            match name {
                "MONTHNAME" if d.date.month == 0 => Value::Null,
                "MONTHNAME" => Value::Str(month_name(d.date.month).to_string()),
                _ if d.date.month == 0 || d.date.day == 0 => Value::Null,
                _ => Value::Str(DAY_NAMES[d.date.weekday() as usize].to_string()),
            }
        }
        "FROM_DAYS" => Value::Date(Date::from_days(v(0).to_i64())),
        "LAST_DAY" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            Value::Date(Date {
                day: Date::days_in_month(d.date.year, d.date.month),
                ..d.date
            })
        }
        "DATEDIFF" => match (dt_or_null(v(0)), dt_or_null(v(1))) {
            (Some(a), Some(b)) => Value::Int(a.date.to_days() - b.date.to_days()),
            _ => Value::Null,
        },
        "TIMESTAMPDIFF" => {
            let unit = s(v(0)).to_ascii_uppercase();
            let (Some(a), Some(b)) = (dt_or_null(v(1)), dt_or_null(v(2))) else {
                return Ok(Value::Null);
            };
            let us = b.to_micros() - a.to_micros();
            let months = (b.date.year as i64 * 12 + b.date.month as i64)
                - (a.date.year as i64 * 12 + a.date.month as i64);
            let months = if months > 0
                && (b.date.day, b.hour, b.minute, b.second)
                    < (a.date.day, a.hour, a.minute, a.second)
            {
                months - 1
            } else if months < 0
                && (b.date.day, b.hour, b.minute, b.second)
                    > (a.date.day, a.hour, a.minute, a.second)
            {
                months + 1
            } else {
                months
            };
            Value::Int(match unit.as_str() {
                "MICROSECOND" => us,
                "SECOND" => us / 1_000_000,
                "MINUTE" => us / 60_000_000,
                "HOUR" => us / 3_600_000_000,
                "DAY" => us / 86_400_000_000,
                "WEEK" => us / (7 * 86_400_000_000),
                "MONTH" => months,
                "QUARTER" => months / 3,
                "YEAR" => months / 12,
                _ => return Err(Error::syntax_near(&unit)),
            })
        }
        "DATE_ADD" | "DATE_SUB" if matches!(v(0), Value::Time(_)) => {
            // A TIME moves within its range (it was NULL); months and years do not apply.
            let Value::Time(t) = v(0) else { unreachable!() };
            let (n, unit) = interval_amount(v(1), s(v(2)));
            let per: Option<i64> = match unit.as_str() {
                "MICROSECOND" => Some(1),
                "SECOND" => Some(1_000_000),
                "MINUTE" => Some(60_000_000),
                "HOUR" => Some(3_600_000_000),
                "DAY" => Some(86_400_000_000),
                "WEEK" => Some(7 * 86_400_000_000),
                "MONTH" | "QUARTER" | "YEAR" => None,
                other => return Err(Error::syntax_near(other)),
            };
            let moved = per
                .and_then(|p| n.checked_mul(p))
                .and_then(|d| {
                    if name == "DATE_SUB" {
                        d.checked_neg()
                    } else {
                        Some(d)
                    }
                })
                .and_then(|d| t.checked_add(d))
                .filter(|r| r.abs() <= quarry_common::time::MAX_TIME);
            match moved {
                Some(r) => Value::Time(r),
                None => {
                    ctx.warn(1441, "Datetime function: time field overflow");
                    Value::Null
                }
            }
        }
        "DATE_ADD" | "DATE_SUB" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            let unit = s(v(2));
            if let Some(parsed) = compound_interval(v(1), &unit) {
                // '1:30' HOUR_MINUTE and the like: months, then microseconds; text that
                // does not fit the unit is NULL, as MariaDB answers.
                let Some((mut months, mut us)) = parsed else {
                    return Ok(Value::Null);
                };
                if name == "DATE_SUB" {
                    (months, us) = (-months, -us);
                }
                let r = match add_interval(d, months, "MONTH")? {
                    Some(x) => add_interval(x, us, "MICROSECOND")?,
                    None => None,
                };
                let is_date = matches!(v(0), Value::Date(_))
                    || (matches!(v(0), Value::Str(t) if t.trim().len() <= 10));
                return Ok(match r {
                    None => {
                        ctx.warn(1441, "Datetime function: datetime field overflow");
                        Value::Null
                    }
                    Some(r) if is_date && unit == "YEAR_MONTH" => Value::Date(r.date),
                    Some(r) => Value::DateTime(r),
                });
            }
            let (mut n, unit) = interval_amount(v(1), unit);
            if name == "DATE_SUB" {
                n = -n;
            }
            let is_date = matches!(v(0), Value::Date(_))
                || (matches!(v(0), Value::Str(t) if t.trim().len() <= 10));
            let r = add_interval(d, n, &unit)?;
            match r {
                None => {
                    ctx.warn(1441, "Datetime function: datetime field overflow");
                    Value::Null
                }
                Some(r)
                    if is_date
                        && matches!(
                            unit.as_str(),
                            "DAY" | "WEEK" | "MONTH" | "QUARTER" | "YEAR"
                        ) =>
                {
                    Value::Date(r.date)
                }
                Some(r) => Value::DateTime(r),
            }
        }
        "DATE_FORMAT" => {
            let Some(d) = dt_or_null(v(0)) else {
                return Ok(Value::Null);
            };
            Value::Str(date_format(&d, &s(v(1))))
        }
        "UNIX_TIMESTAMP" => {
            let d = if vals.is_empty() {
                Some(ctx.now)
            } else {
                dt_or_null(v(0))
            };
            let Some(d) = d else { return Ok(Value::Null) };
            Value::Int(d.unix_micros() / 1_000_000)
        }
        "FROM_UNIXTIME" => {
            let d = DateTime::from_unix_micros((v(0).to_f64() * 1e6) as i64);
            if vals.len() > 1 {
                Value::Str(date_format(&d, &s(v(1))))
            } else {
                Value::DateTime(d)
            }
        }
        "DATABASE" | "SCHEMA" => ctx.db.clone().map(Value::Str).unwrap_or(Value::Null),
        "VERSION" => Value::Str(ctx.session.sys_var("version")?.as_str_lossy().into_owned()),
        "USER" | "SESSION_USER" | "SYSTEM_USER" => Value::Str(ctx.session.user()),
        "CURRENT_USER" => Value::Str(ctx.session.current_user()),
        "CONNECTION_ID" => Value::UInt(ctx.session.connection_id()),
        "LAST_INSERT_ID" => {
            if vals.is_empty() {
                Value::UInt(ctx.session.last_insert_id())
            } else {
                let id = v(0).to_i64() as u64;
                ctx.session.set_last_insert_id(id);
                Value::UInt(id)
            }
        }
        "ROW_COUNT" => Value::Int(ctx.session.row_count()),
        "FOUND_ROWS" => Value::Int(ctx.session.found_rows() as i64),
        "UUID" => {
            let mut b = [0u8; 16];
            let seed = ctx.rand_state.get() ^ ctx.now.to_micros() as u64;
            for (i, x) in b.iter_mut().enumerate() {
                *x = (seed.rotate_left(i as u32 * 7) >> (i % 8)) as u8 ^ (i as u8).wrapping_mul(31);
            }
            ctx.rand_state
                .set(seed.wrapping_mul(6364136223846793005).wrapping_add(1));
            let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
            Value::Str(format!(
                "{}-{}-{}-{}-{}",
                &h[0..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..32]
            ))
        }
        _ => return Err(Error::unknown_function(name)),
    })
}

/// A string result past `max_allowed_packet`: NULL with warning 1301 (as MariaDB), before
/// it is built — a statement must not hold gigabytes for one value.
fn over_packet(func: &str, len: usize, ctx: &ExecCtx) -> bool {
    if len <= ctx.max_packet {
        return false;
    }
    ctx.warn(
        1301,
        format!(
            "Result of {func}() was larger than max_allowed_packet ({}) - truncated",
            ctx.max_packet
        ),
    );
    true
}

/// An interval's amount in whole units: rounded, except that a SECOND interval keeps
/// its fraction (as microseconds), as MariaDB: `INTERVAL 1.5 SECOND` is 1.5 s,
/// `INTERVAL 1.5 MINUTE` 2 minutes.
/// A compound unit's amount (`'1 2:30' DAY_MINUTE`) as months and microseconds: None
/// for a simple unit, Some(None) for text with more parts than the unit has. Parts are
/// runs of digits, missing ones are the larger units (`'5' HOUR_MINUTE` is 5 minutes), a
/// microsecond part has its digits as a fraction ('.5' is 500 000), a leading `-` makes it
/// all negative.
fn compound_interval(v: &Value, unit: &str) -> Option<Option<(i64, i64)>> {
    const MICROS: [(&str, i64); 5] = [
        ("DAY", 86_400_000_000),
        ("HOUR", 3_600_000_000),
        ("MINUTE", 60_000_000),
        ("SECOND", 1_000_000),
        ("MICROSECOND", 1),
    ];
    let (first, last) = unit.split_once('_')?;
    let fields: Vec<&str> = if unit == "YEAR_MONTH" {
        vec!["YEAR", "MONTH"]
    } else {
        let a = MICROS.iter().position(|(n, _)| *n == first)?;
        let b = MICROS.iter().position(|(n, _)| *n == last)?;
        MICROS[a..=b].iter().map(|(n, _)| *n).collect()
    };
    let text = v.as_str_lossy();
    let text = text.trim();
    let negative = text.starts_with('-');
    let runs: Vec<&str> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|r| !r.is_empty())
        .collect();
    if runs.is_empty() || runs.len() > fields.len() {
        return Some(None);
    }
    let pad = fields.len() - runs.len();
    let (mut months, mut us) = (0i64, 0i64);
    for (i, run) in runs.iter().enumerate() {
        let field = fields[pad + i];
        let n: i64 = run.parse().unwrap_or(i64::MAX / 1_000_000_000);
        match field {
            "YEAR" => months = months.saturating_add(n.saturating_mul(12)),
            "MONTH" => months = months.saturating_add(n),
            "MICROSECOND" => {
                let digits = run.len().min(6) as u32;
                let n: i64 = run[..digits as usize].parse().unwrap_or(0);
                us = us.saturating_add(n * 10i64.pow(6 - digits));
            }
            f => {
                let per = MICROS.iter().find(|(x, _)| *x == f).map_or(1, |p| p.1);
                us = us.saturating_add(n.saturating_mul(per));
            }
        }
    }
    if negative {
        (months, us) = (-months, -us);
    }
    Some(Some((months, us)))
}

fn interval_amount(v: &Value, unit: String) -> (i64, String) {
    match v {
        Value::Int(_) | Value::UInt(_) => (v.to_i64(), unit),
        _ if unit == "SECOND" => {
            let us = v.to_decimal().rescale(6).mantissa.saturating_i128();
            (
                us.clamp(i64::MIN as i128, i64::MAX as i128) as i64,
                "MICROSECOND".into(),
            )
        }
        _ => (v.to_i64(), unit),
    }
}

/// `d` moved by `n` units; None past the dates MariaDB computes (0001-01-01 to 9999-12-31
/// by days and seconds, 0000-01 to 9999-12 by months), however large `n` is.
fn add_interval(d: DateTime, n: i64, unit: &str) -> Result<Option<DateTime>> {
    let per: i64 = match unit {
        "MICROSECOND" => 1,
        "SECOND" => 1_000_000,
        "MINUTE" => 60_000_000,
        "HOUR" => 3_600_000_000,
        "DAY" => 86_400_000_000,
        "WEEK" => 7 * 86_400_000_000,
        "MONTH" | "QUARTER" | "YEAR" => {
            let months = match unit {
                "MONTH" => Some(n),
                "QUARTER" => n.checked_mul(3),
                _ => n.checked_mul(12),
            };
            let total = months
                .and_then(|m| (d.date.year as i64 * 12 + (d.date.month as i64 - 1)).checked_add(m));
            let Some(total) = total.filter(|t| (0..=9999 * 12 + 11).contains(t)) else {
                return Ok(None);
            };
            let (y, m) = ((total / 12) as u16, (total % 12 + 1) as u8);
            let day = d.date.day.min(Date::days_in_month(y, m));
            return Ok(Some(DateTime {
                date: Date {
                    year: y,
                    month: m,
                    day,
                },
                ..d
            }));
        }
        other => return Err(Error::syntax_near(other)),
    };
    let first = DateTime::from_date(Date {
        year: 1,
        month: 1,
        day: 1,
    })
    .to_micros();
    let last = DateTime::from_date(Date {
        year: 9999,
        month: 12,
        day: 31,
    })
    .to_micros()
        + 86_400_000_000
        - 1;
    let moved = n
        .checked_mul(per)
        .and_then(|us| d.to_micros().checked_add(us));
    Ok(moved
        .filter(|us| d.date.year > 0 && (first..=last).contains(us))
        .map(DateTime::from_micros))
}

pub(crate) const MONTH_NAMES: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
/// By `Date::weekday` (Monday first).
pub(crate) const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// A month's English name ("" for the zero date's month 0).
fn month_name(month: u8) -> &'static str {
    (month as usize)
        .checked_sub(1)
        .and_then(|i| MONTH_NAMES.get(i))
        .copied()
        .unwrap_or("")
}

fn date_format(d: &DateTime, fmt: &str) -> String {
    let mut out = String::new();
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let Some(f) = it.next() else { break };
        match f {
            'Y' => out.push_str(&format!("{:04}", d.date.year)),
            'y' => out.push_str(&format!("{:02}", d.date.year % 100)),
            'm' => out.push_str(&format!("{:02}", d.date.month)),
            'c' => out.push_str(&d.date.month.to_string()),
            'd' => out.push_str(&format!("{:02}", d.date.day)),
            'e' => out.push_str(&d.date.day.to_string()),
            'H' => out.push_str(&format!("{:02}", d.hour)),
            'k' => out.push_str(&d.hour.to_string()),
            'h' | 'I' => out.push_str(&format!("{:02}", (d.hour + 11) % 12 + 1)),
            'l' => out.push_str(&((d.hour + 11) % 12 + 1).to_string()),
            'i' => out.push_str(&format!("{:02}", d.minute)),
            's' | 'S' => out.push_str(&format!("{:02}", d.second)),
            'f' => out.push_str(&format!("{:06}", d.micro)),
            'p' => out.push_str(if d.hour < 12 { "AM" } else { "PM" }),
            'T' => out.push_str(&format!("{:02}:{:02}:{:02}", d.hour, d.minute, d.second)),
            'j' => out.push_str(&format!(
                "{:03}",
                d.date.to_days()
                    - Date {
                        year: d.date.year,
                        month: 1,
                        day: 1
                    }
                    .to_days()
                    + 1
            )),
            'w' => out.push_str(&((d.date.weekday() + 1) % 7).to_string()),
            'U' | 'u' | 'V' | 'v' | 'X' | 'x' => {
                use crate::week::{week, FIRST_WEEKDAY, MONDAY_FIRST, YEAR};
                let bits = match f {
                    'U' => FIRST_WEEKDAY,
                    'u' => MONDAY_FIRST,
                    'V' | 'X' => YEAR | FIRST_WEEKDAY,
                    _ => YEAR | MONDAY_FIRST,
                };
                let (w, y) = week(&d.date, bits);
                match f {
                    'X' | 'x' => out.push_str(&format!("{y:04}")),
                    _ => out.push_str(&format!("{w:02}")),
                }
            }
            'W' => out.push_str(DAY_NAMES[d.date.weekday() as usize]),
            'a' => out.push_str(&DAY_NAMES[d.date.weekday() as usize][..3]),
            'M' => out.push_str(month_name(d.date.month)),
            'b' => out.push_str(month_name(d.date.month).get(..3).unwrap_or("")),
            'D' => {
                let n = d.date.day;
                let suffix = match (n % 10, n % 100) {
                    (_, 11..=13) => "th",
                    (1, _) => "st",
                    (2, _) => "nd",
                    (3, _) => "rd",
                    _ => "th",
                };
                out.push_str(&format!("{n}{suffix}"));
            }
            'r' => out.push_str(&format!(
                "{:02}:{:02}:{:02} {}",
                (d.hour + 11) % 12 + 1,
                d.minute,
                d.second,
                if d.hour < 12 { "AM" } else { "PM" }
            )),
            other => out.push(other),
        }
    }
    out
}

/// Functions whose value may change between two calls in one statement: a condition
/// holding one is never copied or moved by a rewrite.
pub const VOLATILE_FUNCTIONS: &[&str] = &[
    "RAND",
    "UUID",
    "UUID_SHORT",
    "SYS_GUID",
    "RANDOM_BYTES",
    "SLEEP",
    "BENCHMARK",
    "GET_LOCK",
    "RELEASE_LOCK",
    "LAST_INSERT_ID",
    "NEXTVAL",
    "ROW_COUNT",
    "FOUND_ROWS",
    // The time at which it runs, not the statement's.
    "SYSDATE",
];
