//! STR_TO_DATE(text, format): DATE_FORMAT's specifiers read back. The result is a DATE
//! when the format names only date parts, a TIME when only time parts, else a DATETIME;
//! parts not named are 0 (`STR_TO_DATE('2020', '%Y')` is 2020-00-00), as MariaDB answers.
//! Text that does not fit the format is NULL with warning 1411.
//!
//! Owns the reading only; argument handling is `func::call`'s.

use quarry_common::value::{Date, DateTime};
use quarry_common::Value;

use crate::func::{DAY_NAMES as DAYS, MONTH_NAMES as MONTHS};

/// Whether `format` names date parts, and time parts.
pub fn parts(format: &str) -> (bool, bool) {
    let (mut date, mut time) = (false, false);
    let mut it = format.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            continue;
        }
        match it.next() {
            Some('Y' | 'y' | 'm' | 'c' | 'd' | 'e' | 'D' | 'j' | 'M' | 'b' | 'W' | 'a') => {
                date = true
            }
            Some('H' | 'k' | 'h' | 'I' | 'l' | 'i' | 's' | 'S' | 'f' | 'p' | 'T' | 'r') => {
                time = true
            }
            _ => {}
        }
    }
    (date, time)
}

struct Reader<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    /// Up to `max` digits (at least one).
    fn number(&mut self, max: usize) -> Option<i64> {
        let start = self.pos;
        while self.pos < self.s.len() && self.pos - start < max && self.s[self.pos].is_ascii_digit()
        {
            self.pos += 1;
        }
        if self.pos == start {
            return None;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()?
            .parse()
            .ok()
    }

    /// One of `names` (or its first three letters), any case: its index.
    fn name(&mut self, names: &[&str], short: bool) -> Option<usize> {
        let i = names.iter().position(|n| {
            let want = if short { &n[..3] } else { n };
            self.s[self.pos..]
                .get(..want.len())
                .is_some_and(|x| x.eq_ignore_ascii_case(want.as_bytes()))
        })?;
        self.pos += if short { 3 } else { names[i].len() };
        Some(i)
    }

    /// `hh:mm:ss`.
    fn hms(&mut self) -> Option<(i64, i64, i64)> {
        let h = self.number(2)?;
        self.word(":").then_some(())?;
        let m = self.number(2)?;
        self.word(":").then_some(())?;
        Some((h, m, self.number(2)?))
    }

    /// `AM` / `PM`: whether it is PM.
    fn ampm(&mut self) -> Option<bool> {
        if self.word("PM") {
            Some(true)
        } else if self.word("AM") {
            Some(false)
        } else {
            None
        }
    }

    fn word(&mut self, w: &str) -> bool {
        let hit = self.s[self.pos..]
            .get(..w.len())
            .is_some_and(|x| x.eq_ignore_ascii_case(w.as_bytes()));
        if hit {
            self.pos += w.len();
        }
        hit
    }
}

/// `text` read with `format`; None when it does not fit.
pub fn str_to_date(text: &str, format: &str) -> Option<Value> {
    let mut r = Reader {
        s: text.as_bytes(),
        pos: 0,
    };
    let (mut y, mut mo, mut d) = (0i64, 0i64, 0i64);
    let (mut h, mut mi, mut sec, mut us) = (0i64, 0i64, 0i64, 0i64);
    let mut pm: Option<bool> = None;
    let mut yday: Option<i64> = None;
    let mut f = format.chars().peekable();
    while let Some(c) = f.next() {
        if c.is_whitespace() {
            while r.pos < r.s.len() && r.s[r.pos].is_ascii_whitespace() {
                r.pos += 1;
            }
            continue;
        }
        if c != '%' {
            let mut buf = [0u8; 4];
            if !r.word(c.encode_utf8(&mut buf)) {
                return None;
            }
            continue;
        }
        match f.next()? {
            'Y' => y = r.number(4)?,
            'y' => {
                let n = r.number(2)?;
                y = if n < 70 { 2000 + n } else { 1900 + n };
            }
            'm' | 'c' => mo = r.number(2)?,
            'd' | 'e' => d = r.number(2)?,
            'D' => {
                d = r.number(2)?;
                let _ = r.word("st") || r.word("nd") || r.word("rd") || r.word("th");
            }
            'j' => yday = Some(r.number(3)?),
            // 12-hour forms take their AM/PM from %p.
            'H' | 'k' | 'h' | 'I' | 'l' => h = r.number(2)?,
            'i' => mi = r.number(2)?,
            's' | 'S' => sec = r.number(2)?,
            'f' => {
                let start = r.pos;
                let n = r.number(6)?;
                us = n * 10i64.pow(6 - (r.pos - start) as u32);
            }
            'p' => pm = Some(r.ampm()?),
            'M' => mo = r.name(&MONTHS, false)? as i64 + 1,
            'b' => mo = r.name(&MONTHS, true)? as i64 + 1,
            'W' => {
                r.name(&DAYS, false)?;
            }
            'a' => {
                r.name(&DAYS, true)?;
            }
            'T' => (h, mi, sec) = r.hms()?,
            'r' => {
                (h, mi, sec) = r.hms()?;
                while r.pos < r.s.len() && r.s[r.pos] == b' ' {
                    r.pos += 1;
                }
                pm = Some(r.ampm()?);
            }
            '%' => {
                if !r.word("%") {
                    return None;
                }
            }
            _ => return None,
        }
    }
    if let Some(p) = pm {
        if !(1..=12).contains(&h) {
            return None;
        }
        h = h % 12 + if p { 12 } else { 0 };
    }
    if let Some(n) = yday {
        let first = Date {
            year: y as u16,
            month: 1,
            day: 1,
        };
        let date = Date::from_days(first.to_days() + n - 1);
        mo = date.month as i64;
        d = date.day as i64;
    }
    let date = Date {
        year: u16::try_from(y).ok().filter(|y| *y <= 9999)?,
        month: u8::try_from(mo).ok().filter(|m| *m <= 12)?,
        day: u8::try_from(d).ok()?,
    };
    // A day past its month is kept (2020-02-30), as MariaDB keeps it in its default mode.
    if date.day > 31 {
        return None;
    }
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let time = ((h * 60 + mi) * 60 + sec) * 1_000_000 + us;
    Some(match parts(format) {
        (true, false) => Value::Date(date),
        (false, true) => Value::Time(time),
        _ => Value::DateTime(DateTime {
            date,
            hour: h as u8,
            minute: mi as u8,
            second: sec as u8,
            micro: us as u32,
        }),
    })
}
