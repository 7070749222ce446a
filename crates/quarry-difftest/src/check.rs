//! Deciding whether two outcomes agree, and the oracles that need no second server:
//! ternary-logic partitioning and NoREC (SQLancer's), both on Quarry alone. Results compare
//! as sequences when the query orders them fully, else as multisets; values by their text,
//! except floating-point values, which may differ in the last digits of a sum taken in a
//! different order; errors by code.

use crate::query::Select;
use crate::runner::Outcome;

/// `loose`: the query picks one of several values that compare equal (a group's, a
/// DISTINCT row's, MIN/MAX's): 'a' and 'A ' are then the same answer. Rows in order must
/// agree up to such ties even without it (ORDER BY cannot order 'a' and 'A').
pub fn same(a: &Outcome, b: &Outcome, ordered: bool, loose: bool) -> bool {
    match (a, b) {
        (Outcome::Rows(x), Outcome::Rows(y)) => {
            if x.len() != y.len() {
                return false;
            }
            let (x, y) = (&positive_zeros(x), &positive_zeros(y));
            let (fx, fy) = (fold(x), fold(y));
            let as_set =
                rows_eq(&sorted(x), &sorted(y)) || loose && rows_eq(&sorted(&fx), &sorted(&fy));
            as_set && (!ordered || rows_eq(&fx, &fy))
        }
        (Outcome::Error(c1, _), Outcome::Error(c2, _)) => c1 == c2,
        (Outcome::Done(x), Outcome::Done(y)) => x == y,
        _ => false,
    }
}

type Rows = Vec<Vec<Option<String>>>;

/// Values as a case-insensitive, PAD SPACE collation compares them.
fn fold(rows: &[Vec<Option<String>>]) -> Rows {
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| v.as_ref().map(|s| fold_value(s)))
                .collect()
        })
        .collect()
}

/// Each comma-separated piece (a GROUP_CONCAT's values, whose ties may come either way)
/// as utf8mb4_general_ci's key ('Ä ' and 'a' alike).
fn fold_value(s: &str) -> String {
    s.split(',')
        .map(|p| {
            let mut k = vec![];
            quarry_common::value::collate_key(p, &mut k);
            String::from_utf8_lossy(&k).into_owned()
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// MariaDB keeps the sign of a DECIMAL that is zero (-4.00 % 2 is -0.00); Quarry's
/// decimals have one zero. Listed in tests/difftest/allow.txt.
fn positive_zeros(rows: &[Vec<Option<String>>]) -> Rows {
    let zero = |s: &str| !s.is_empty() && s.bytes().all(|c| c == b'0' || c == b'.');
    rows.iter()
        .map(|r| {
            r.iter()
                .map(|v| match v.as_deref().and_then(|s| s.strip_prefix('-')) {
                    Some(t) if zero(t) => Some(t.to_string()),
                    _ => v.clone(),
                })
                .collect()
        })
        .collect()
}

fn sorted(rows: &[Vec<Option<String>>]) -> Rows {
    let mut v = rows.to_vec();
    v.sort();
    v
}

fn rows_eq(x: &[Vec<Option<String>>], y: &[Vec<Option<String>>]) -> bool {
    x.iter().zip(y).all(|(a, b)| {
        a.len() == b.len()
            && a.iter().zip(b).all(|(u, v)| match (u, v) {
                (Some(u), Some(v)) => value_eq(u, v),
                (None, None) => true,
                _ => false,
            })
    })
}

fn value_eq(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let float = |s: &str| s.contains(['e', 'E']) || s.contains('.') && s.len() > 15;
    if !(float(a) || float(b)) {
        return false;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
        _ => false,
    }
}

/// Ternary-logic partitioning: the rows of `q` are exactly the rows of `q AND p`,
/// `q AND NOT p` and `q AND p IS NULL` together. Returns the three partition queries
/// (their rows are concatenated and compared with `q`'s as a multiset).
pub fn tlp_partitions(q: &Select, p: &str) -> [String; 3] {
    let part = |extra: String| {
        let mut s = q.clone();
        s.ordered = false;
        s.filter.push(extra);
        s.to_string()
    };
    [
        part(p.to_string()),
        part(format!("NOT ({p})")),
        part(format!("({p}) IS NULL")),
    ]
}

pub fn union_all(parts: &[Outcome]) -> Option<Outcome> {
    let mut all = vec![];
    for p in parts {
        match p {
            Outcome::Rows(r) => all.extend(r.iter().cloned()),
            _ => return None,
        }
    }
    Some(Outcome::Rows(all))
}

/// NoREC: counting the rows that pass WHERE (which the optimizer may turn into index
/// ranges, pushed-down filters and join conditions) against evaluating the same condition
/// on every row of the FROM clause. None when `q` has no WHERE.
pub fn norec_pair(q: &Select) -> Option<(String, String)> {
    let w = q.where_text()?;
    Some((
        format!("SELECT COUNT(*) FROM {} WHERE {w}", q.from),
        format!(
            "SELECT COALESCE(SUM(CASE WHEN {w} THEN 1 ELSE 0 END), 0) FROM {}",
            q.from
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[&[Option<&str>]]) -> Outcome {
        Outcome::Rows(
            v.iter()
                .map(|r| r.iter().map(|x| x.map(str::to_string)).collect())
                .collect(),
        )
    }

    #[test]
    fn unordered_results_compare_as_multisets() {
        let a = rows(&[&[Some("1")], &[Some("2")], &[Some("2")]]);
        let b = rows(&[&[Some("2")], &[Some("1")], &[Some("2")]]);
        let c = rows(&[&[Some("2")], &[Some("1")], &[Some("1")]]);
        assert!(same(&a, &b, false, false));
        assert!(!same(&a, &b, true, false));
        assert!(!same(&a, &c, false, false));
        assert!(!same(
            &a,
            &rows(&[&[None], &[Some("1")], &[Some("2")]]),
            false,
            false
        ));
    }

    #[test]
    fn ties_of_a_case_insensitive_order_may_come_either_way() {
        let a = rows(&[&[Some("a")], &[Some("A")], &[Some("b")]]);
        let b = rows(&[&[Some("A")], &[Some("a")], &[Some("b")]]);
        let c = rows(&[&[Some("a")], &[Some("a")], &[Some("b")]]);
        assert!(same(&a, &b, true, false));
        assert!(!same(&a, &c, true, false));
        assert!(same(&a, &c, true, true));
        assert!(!same(
            &a,
            &rows(&[&[Some("b")], &[Some("a")], &[Some("A")]]),
            true,
            false
        ));
    }

    #[test]
    fn only_floats_get_a_tolerance() {
        assert!(value_eq("1.0000000000000002e20", "1.0000000000000001e20"));
        assert!(!value_eq("10", "10.0"));
        assert!(!value_eq("1.50", "1.5"));
        assert!(!value_eq("abc", "abd"));
        let neg = rows(&[&[Some("-0.00")], &[Some("-3.00")]]);
        let pos = rows(&[&[Some("-3.00")], &[Some("0.00")]]);
        assert!(same(&neg, &pos, false, false));
        assert!(!same(
            &rows(&[&[Some("-1.00")]]),
            &rows(&[&[Some("1.00")]]),
            false,
            false
        ));
    }

    #[test]
    fn errors_compare_by_code() {
        assert!(same(
            &Outcome::Error(1054, "a".into()),
            &Outcome::Error(1054, "b".into()),
            false,
            false
        ));
        assert!(!same(
            &Outcome::Error(1054, "a".into()),
            &Outcome::Done(0),
            false,
            false
        ));
    }
}
