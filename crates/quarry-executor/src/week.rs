//! Week numbers as MySQL and MariaDB count them: WEEK(d, mode), YEARWEEK, WEEKOFYEAR and
//! DATE_FORMAT's %U %u %V %v %X %x. A mode's three bits say whether weeks start on
//! Monday, whether a week belongs to the year holding most of it (so week 0 never
//! appears: it is the previous year's last), and whether week 1 is the first with the
//! first day of the week in it (else the first with 4 or more days of the year).
//!
//! Owns these calculations only; argument handling is `func::call`'s.

use quarry_common::value::Date;

pub const MONDAY_FIRST: u8 = 1;
pub const YEAR: u8 = 2;
pub const FIRST_WEEKDAY: u8 = 4;

fn days_in_year(y: i64) -> i64 {
    337 + Date::days_in_month(y as u16, 2) as i64
}

/// 0 for the first day of the week (Monday, or Sunday when `sunday_first`) … 6.
fn weekday(days: i64, sunday_first: bool) -> i64 {
    (days + 5 + sunday_first as i64).rem_euclid(7)
}

/// The week of `d` under the bits of `behaviour`, and the year it belongs to.
pub fn week(d: &Date, behaviour: u8) -> (i64, i64) {
    let monday_first = behaviour & MONDAY_FIRST != 0;
    let mut week_year = behaviour & YEAR != 0;
    let first_weekday = behaviour & FIRST_WEEKDAY != 0;
    let day_nr = d.to_days();
    let mut first_nr = Date {
        year: d.year,
        month: 1,
        day: 1,
    }
    .to_days();
    let mut wd = weekday(first_nr, !monday_first);
    let mut year = d.year as i64;
    // Does the year's first (partial) week count as week 1, or as the previous year's?
    let starts_late = |wd: i64| (first_weekday && wd != 0) || (!first_weekday && wd >= 4);
    if d.month == 1 && (d.day as i64) <= 7 - wd {
        if !week_year && starts_late(wd) {
            return (0, year);
        }
        week_year = true;
        year -= 1;
        let n = days_in_year(year);
        first_nr -= n;
        wd = (wd + 53 * 7 - n) % 7;
    }
    let days = if starts_late(wd) {
        day_nr - (first_nr + (7 - wd))
    } else {
        day_nr - (first_nr - wd)
    };
    if week_year && days >= 52 * 7 {
        let next = (wd + days_in_year(year)) % 7;
        if (!first_weekday && next < 4) || (first_weekday && next == 0) {
            return (1, year + 1);
        }
    }
    (days / 7 + 1, year)
}

/// WEEK(d, mode)'s mode as bits (modes with Sunday first count week 1 from the first
/// Sunday, so their FIRST_WEEKDAY bit is turned round).
pub fn mode_bits(mode: i64) -> u8 {
    let mut bits = (mode & 7) as u8;
    if bits & MONDAY_FIRST == 0 {
        bits ^= FIRST_WEEKDAY;
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: u16, m: u8, day: u8) -> Date {
        Date {
            year: y,
            month: m,
            day,
        }
    }

    /// MariaDB 10.11's WEEK(d, 0..7) for days around two year ends.
    #[test]
    fn weeks_are_mariadbs() {
        let cases: [(Date, [i64; 8]); 4] = [
            (d(2020, 1, 1), [0, 1, 52, 1, 1, 0, 1, 52]),
            (d(2021, 1, 1), [0, 0, 52, 53, 0, 0, 53, 52]),
            (d(2020, 12, 31), [52, 53, 52, 53, 53, 52, 53, 52]),
            (d(2020, 2, 3), [5, 6, 5, 6, 6, 5, 6, 5]),
        ];
        for (date, want) in cases {
            let got: Vec<i64> = (0..8).map(|m| week(&date, mode_bits(m)).0).collect();
            assert_eq!(got, want, "{date:?}");
        }
    }
}
