//! TIME values: a signed duration in microseconds, −838:59:59.999999 … 838:59:59.999999
//! (MariaDB's range), read from text and numbers and written as `[-]HH:MM:SS[.ffffff]`.
//!
//! Owns the TIME text and number forms and the range. Must not touch storage encodings
//! (the engines store the microseconds) or the wire (the server encodes them).

use crate::value::{parse_datetime, DateTime};
use crate::Value;

pub const MICROS_PER_SEC: i64 = 1_000_000;
/// 838:59:59.999999.
pub const MAX_TIME: i64 = (838 * 3600 + 59 * 60 + 59) * MICROS_PER_SEC + 999_999;

/// How a text or number became a TIME.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeParse {
    Exact(i64),
    /// Valid but past the range: the nearest end of it.
    Clamped(i64),
}

impl TimeParse {
    pub fn micros(self) -> i64 {
        match self {
            TimeParse::Exact(t) | TimeParse::Clamped(t) => t,
        }
    }
}

fn clamp(us: i128) -> TimeParse {
    if us > MAX_TIME as i128 {
        TimeParse::Clamped(MAX_TIME)
    } else if us < -MAX_TIME as i128 {
        TimeParse::Clamped(-MAX_TIME)
    } else {
        TimeParse::Exact(us as i64)
    }
}

/// Up to six digits of a fraction as microseconds (more are cut, as MariaDB rounds
/// only with TIME_ROUND_FRACTIONAL).
fn fraction(f: &str) -> Option<i64> {
    if !f.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let f = &f[..f.len().min(6)];
    Some(format!("{f:0<6}").parse().unwrap_or(0))
}

/// `[-][D ]HH:MM[:SS][.ffffff]`, `[-]HHMMSS[.ffffff]` (also `MMSS`, `SS`), or a date and
/// time (its time of day). None: not a time.
pub fn parse_time(s: &str) -> Option<TimeParse> {
    parse_time_unbounded(s).map(clamp)
}

/// `parse_time` before the range is applied: comparisons use the value as written
/// (MariaDB finds -838:59:59 greater than '-900:00:00').
pub fn parse_time_unbounded(s: &str) -> Option<i128> {
    let t = s.trim();
    if t.is_empty() {
        return None;
    }
    if t.len() > 10 && t.contains(['-', '/']) && !t.starts_with('-') {
        return parse_datetime(t).map(|d| time_of_day(&d) as i128);
    }
    let (neg, t) = match t.strip_prefix('-') {
        Some(r) => (true, r.trim_start()),
        None => (false, t),
    };
    let (body, frac) = match t.split_once('.') {
        Some((b, f)) => (b, fraction(f)?),
        None => (t, 0),
    };
    let (days, hms) = match body.split_once(' ') {
        Some((d, rest)) => (d.parse::<i64>().ok()?, rest.trim()),
        None => (0, body),
    };
    let num = |p: &str| -> Option<i64> {
        if p.is_empty() || p.len() > 12 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        p.parse().ok()
    };
    let (h, m, sec) = if hms.contains(':') {
        let mut parts = hms.split(':');
        let h = num(parts.next()?)?;
        let m = num(parts.next()?)?;
        let sec = match parts.next() {
            Some(p) => num(p)?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        (h, m, sec)
    } else {
        if days != 0 && hms.is_empty() {
            return None;
        }
        let n = num(hms)?;
        (n / 10000, n / 100 % 100, n % 100)
    };
    if m > 59 || sec > 59 {
        return None;
    }
    let total = ((days as i128 * 24 + h as i128) * 3600 + m as i128 * 60 + sec as i128)
        * MICROS_PER_SEC as i128
        + frac as i128;
    Some(if neg { -total } else { total })
}

/// A number read as `[-]HHMMSS[.ffffff]` (123 is 00:01:23, 1.25 is 00:00:01.25).
pub fn time_from_number(whole: i128, micros: i64) -> Option<TimeParse> {
    let neg = whole < 0 || micros < 0;
    let w = whole.unsigned_abs();
    let (h, m, s) = (w / 10000, (w / 100 % 100) as i128, (w % 100) as i128);
    if m > 59 || s > 59 {
        return None;
    }
    let h = i128::try_from(h).ok()?.min(1_000_000);
    let total = (h * 3600 + m * 60 + s) * MICROS_PER_SEC as i128 + micros.unsigned_abs() as i128;
    Some(clamp(if neg { -total } else { total }))
}

/// A value as a TIME (None: NULL, or not a time).
pub fn value_to_time(v: &Value) -> Option<TimeParse> {
    match v {
        Value::Null => None,
        Value::Time(t) => Some(TimeParse::Exact(*t)),
        Value::Int(i) => time_from_number(*i as i128, 0),
        Value::UInt(u) => time_from_number(*u as i128, 0),
        Value::Decimal(d) => {
            // The fraction as microseconds without overflowing: the remainder is below
            // 10^scale, widened or cut to six digits.
            let (int, _) = d.trunc();
            let rem = d.mantissa.checked_rem(crate::value::pow10(d.scale))?;
            let frac = if d.scale <= 6 {
                rem.checked_mul(crate::value::pow10(6 - d.scale))?
            } else {
                rem.checked_div(crate::value::pow10(d.scale - 6))?
            };
            time_from_number(int.saturating_i128(), frac.to_i64()?)
        }
        Value::Double(f) => {
            if !f.is_finite() || f.abs() >= 1e15 {
                return Some(TimeParse::Clamped(if *f < 0.0 {
                    -MAX_TIME
                } else {
                    MAX_TIME
                }));
            }
            time_from_number(f.trunc() as i128, (f.fract() * 1e6).round() as i64)
        }
        Value::Str(s) => parse_time(s),
        Value::Bytes(b) => parse_time(&String::from_utf8_lossy(b)),
        Value::Date(_) => Some(TimeParse::Exact(0)),
        Value::DateTime(d) => Some(TimeParse::Exact(time_of_day(d))),
    }
}

pub fn time_of_day(d: &DateTime) -> i64 {
    (d.hour as i64 * 3600 + d.minute as i64 * 60 + d.second as i64) * MICROS_PER_SEC
        + d.micro as i64
}

/// Fractional digits a TIME needs: none for whole seconds, else up to its last nonzero
/// digit (MariaDB shows a value of a TIME(0) expression with the digits it has).
pub fn digits_needed(us: i64) -> u8 {
    let mut f = us.unsigned_abs() % MICROS_PER_SEC as u64;
    if f == 0 {
        return 0;
    }
    let mut d = 6;
    while f.is_multiple_of(10) {
        f /= 10;
        d -= 1;
    }
    d
}

/// `[-]HH:MM:SS` with at least `scale` fractional digits, more when the value has them
/// (hours run past 24).
pub fn format_time(us: i64, scale: u8) -> String {
    format_time_wide(us as i128, scale)
}

/// How a column of type `ty` shows a TIME or DATETIME value: with the column's n
/// fractional digits (the value alone shows the digits it needs). None for other values,
/// and where the column has no digits to give (the value's own text is right then).
pub fn shown_in_column(v: &Value, ty: &crate::SqlType) -> Option<String> {
    use crate::TypeKind;
    match v {
        Value::Time(t) if ty.kind == TypeKind::Time => Some(format_time(*t, ty.scale)),
        Value::DateTime(d)
            if ty.scale > 0 && matches!(ty.kind, TypeKind::DateTime | TypeKind::Timestamp) =>
        {
            Some(d.fmt_with_scale(ty.scale))
        }
        _ => None,
    }
}

/// `format_time` of any duration, past the TIME range too (warnings quote such results).
pub fn format_time_wide(us: i128, scale: u8) -> String {
    let frac_digits = {
        let f = (us.unsigned_abs() % MICROS_PER_SEC as u128) as i64;
        digits_needed(f)
    };
    let scale = scale.max(frac_digits);
    let neg = us < 0;
    let a = us.unsigned_abs();
    let secs = a / MICROS_PER_SEC as u128;
    let mut s = format!(
        "{}{:02}:{:02}:{:02}",
        if neg { "-" } else { "" },
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    if scale > 0 {
        let frac = format!("{:06}", a % MICROS_PER_SEC as u128);
        s.push('.');
        s.push_str(&frac[..scale.min(6) as usize]);
    }
    s
}

/// The number a TIME is in arithmetic: HHMMSS, with the microseconds as a fraction.
pub fn time_as_number(us: i64) -> (i64, i64) {
    let neg = us < 0;
    let a = us.unsigned_abs() as i64;
    let secs = a / MICROS_PER_SEC;
    let n = secs / 3600 * 10000 + secs / 60 % 60 * 100 + secs % 60;
    let f = a % MICROS_PER_SEC;
    if neg {
        (-n, -f)
    } else {
        (n, f)
    }
}

/// A stored TIME cell: its microseconds. A cell past the range was written before TIME
/// was a type of its own (row format 1 and column chunks stored a TIME as a DATETIME;
/// most such cells hold 0): it reads as the time of day of that DATETIME.
pub fn from_stored(us: i64) -> i64 {
    if (-MAX_TIME..=MAX_TIME).contains(&us) {
        us
    } else {
        time_of_day(&DateTime::from_stored(us))
    }
}

/// Cut `us` to `scale` fractional digits.
pub fn truncate_time(us: i64, scale: u8) -> i64 {
    let keep = 10i64.pow(6 - scale.min(6) as u32);
    us / keep * keep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<String> {
        parse_time(s).map(|t| format_time(t.micros(), 6))
    }

    #[test]
    fn text_forms_read_as_mariadb_reads_them() {
        // Each expected value is what MariaDB 10.11 stored for the text.
        assert_eq!(p("12:34:56").unwrap(), "12:34:56.000000");
        assert_eq!(p("-838:59:59").unwrap(), "-838:59:59.000000");
        assert_eq!(p("1 02:03:04").unwrap(), "26:03:04.000000");
        assert_eq!(p("123456").unwrap(), "12:34:56.000000");
        assert_eq!(p("10:11").unwrap(), "10:11:00.000000");
        assert_eq!(p("0:0:1.5").unwrap(), "00:00:01.500000");
        assert_eq!(p("2024-01-02 03:04:05").unwrap(), "03:04:05.000000");
        assert_eq!(p("abc"), None);
        assert_eq!(p("12:61:00"), None);
        assert_eq!(parse_time("900:00:00"), Some(TimeParse::Clamped(MAX_TIME)));
        assert_eq!(format_time(-789_000, 6), "-00:00:00.789000");
        assert_eq!(format_time(MAX_TIME, 0), "838:59:59.999999");
        assert_eq!(format_time(truncate_time(MAX_TIME, 0), 0), "838:59:59");
    }

    #[test]
    fn cells_written_as_datetimes_read_as_their_time_of_day() {
        // Before TIME was a type, its cells held a DATETIME's stored form (mostly 0).
        let dt = parse_datetime("2024-01-02 03:04:05.5").unwrap();
        assert_eq!(format_time(from_stored(dt.to_stored()), 0), "03:04:05.5");
        assert_eq!(from_stored(0), 0);
        assert_eq!(from_stored(-MAX_TIME), -MAX_TIME);
    }

    #[test]
    fn decimals_of_any_scale_read_without_overflow() {
        use crate::Decimal;
        let t = |m: i128, s: u8| value_to_time(&Value::Decimal(Decimal::new(m, s)));
        assert_eq!(t(125, 2).unwrap().micros(), 1_250_000);
        assert_eq!(t(-1_000_001, 6).unwrap().micros(), -1_000_001);
        // 1.999…9 with 37 fractional digits: the remainder times 10^6 passes i128.
        let huge = 2 * 10i128.pow(37) - 1;
        assert_eq!(t(huge, 37).unwrap().micros(), 1_999_999);
        assert_eq!(t(10i128.pow(37), 0), Some(TimeParse::Clamped(MAX_TIME)));
    }

    #[test]
    fn numbers_read_as_hhmmss() {
        let n = |w: i128, f: i64| time_from_number(w, f).map(|t| format_time(t.micros(), 2));
        assert_eq!(n(123, 0).unwrap(), "00:01:23.00");
        assert_eq!(n(1, 250_000).unwrap(), "00:00:01.25");
        assert_eq!(n(-8385959, 0).unwrap(), "-838:59:59.00");
        assert_eq!(n(170, 0), None);
        assert_eq!(time_as_number(-MAX_TIME), (-8385959, -999_999));
    }
}
