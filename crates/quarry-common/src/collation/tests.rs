//! The collations against MariaDB 10.11's answers (`cases.tsv`, from
//! `scripts/gen_collation_cases.py`): STRCMP and LIKE of random strings rich in case,
//! accent, padding, expansion, CJK and beyond-BMP characters; and the sort keys against
//! the comparisons they stand for.

use std::cmp::Ordering;

use super::{Collation, ALL};

fn unhex(h: &str) -> String {
    let bytes: Vec<u8> = (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect();
    String::from_utf8(bytes).unwrap()
}

fn cases() -> Vec<(Collation, String, String, String, i64)> {
    include_str!("cases.tsv")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                Collation::named(f[0]).unwrap_or_else(|| panic!("{}", f[0])),
                f[1].to_string(),
                unhex(f[2]),
                unhex(f[3]),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn comparisons_and_like_agree_with_mariadb() {
    let mut wrong = vec![];
    let all = cases();
    for (c, op, a, b, want) in &all {
        let got = match op.as_str() {
            "cmp" => match c.cmp(a, b) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            },
            _ => c.like(a, b, '\\') as i64,
        };
        if got != *want {
            wrong.push(format!(
                "{} {op} {a:?} {b:?}: {got}, MariaDB {want}",
                c.name()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        all.len(),
        wrong[..wrong.len().min(40)].join("\n")
    );
}

#[test]
fn sort_keys_stand_for_the_comparisons() {
    let strings: Vec<String> = cases()
        .into_iter()
        .filter(|(_, op, ..)| op == "cmp")
        .flat_map(|(_, _, a, b, _)| [a, b])
        .take(400)
        .collect();
    // Characters below a space after the string's end are the one place where key
    // order and the padded comparison part (see the module's note).
    let below_space = |s: &str| s.chars().any(|c| (c as u32) < 0x20);
    for c in ALL {
        for a in &strings {
            for b in strings.iter().step_by(7) {
                let (mut ka, mut kb) = (vec![], vec![]);
                c.key(a, &mut ka);
                c.key(b, &mut kb);
                let o = c.cmp(a, b);
                assert_eq!(ka == kb, o == Ordering::Equal, "{} {a:?} {b:?}", c.name());
                if !below_space(a) && !below_space(b) {
                    assert_eq!(ka.cmp(&kb), o, "{} {a:?} {b:?}", c.name());
                }
            }
        }
    }
}

#[test]
fn names_ids_and_character_sets() {
    for c in ALL {
        assert_eq!(Collation::named(c.name()), Some(c));
        assert_eq!(Collation::named(&c.name().to_uppercase()), Some(c));
    }
    assert_eq!(Collation::named("utf8_bin"), Some(Collation::Utf8mb3Bin));
    assert_eq!(
        Collation::default_of("utf8"),
        Some(Collation::Utf8mb3GeneralCi)
    );
    assert_eq!(
        Collation::default_of("UTF8MB4"),
        Some(Collation::Utf8mb4GeneralCi)
    );
    assert_eq!(Collation::named("utf8mb4_klingon_ci"), None);
    assert!(Collation::Latin1SwedishCi.is_default());
    assert!(!Collation::Latin1Bin.is_default());
    let mut ids: Vec<u16> = ALL.iter().map(|c| c.id()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), ALL.len());
}

/// The ASCII fast paths (comparison, keys, LIKE) weigh a byte as its upper case; the
/// generated table must agree, and keys of ASCII strings stay what they were.
#[test]
fn general_ci_weighs_ascii_as_its_upper_case() {
    let c = Collation::Utf8mb4GeneralCi;
    for b in 0u8..0x80 {
        let (mut w, mut one) = (vec![], String::new());
        c.weigh(b as char, &mut w);
        assert_eq!(w, [b.to_ascii_uppercase() as u32], "{b:#x}");
        one.push(b as char);
        // The slow path of a non-ASCII string agrees with the fast one.
        let wide = format!("{one}é");
        assert_eq!(c.cmp(&wide, "Aé"), c.cmp_ascii(&[b], b"A"), "{b:#x}");
    }
    let mut k = vec![];
    c.key("Zoë  ", &mut k);
    assert_eq!(k, "ZOE".as_bytes());
    k.clear();
    c.key("abc ", &mut k);
    assert_eq!(k, b"ABC");
}
