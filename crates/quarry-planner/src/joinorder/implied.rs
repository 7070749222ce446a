//! Equalities implied by others among one join group's conditions: `a = b AND b = c`
//! gives `a = c`, so a table equated to a third can be joined straight to the first (TPC-H
//! Q5 equates customer's and supplier's nation keys, and supplier's to nation's: customer
//! could only follow supplier, and every customer was joined with a year of orders before
//! the nations of one region were applied).
//!
//! Implied only between columns whose equality is an equivalence whatever their values:
//! integers of any width and sign, or columns of one type and collation. (`'1a' = 1` and
//! `1 = '1.0'` hold where `'1a' = '1.0'` does not.)
//!
//! Owns the classes of equal columns and the rule that an equality between columns
//! already equal adds nothing (to an estimate, or as a join key); the join order owns
//! where conditions go.

use quarry_common::SqlType;

/// Classes of columns made equal (union-find over the group's columns).
pub(super) struct Classes {
    parent: Vec<usize>,
}

impl Classes {
    pub fn new(columns: usize) -> Classes {
        Classes {
            parent: (0..columns).collect(),
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }

    /// Make `a` and `b` equal; false when they already were.
    pub fn union(&mut self, a: usize, b: usize) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return false;
        }
        self.parent[ra.max(rb)] = ra.min(rb);
        true
    }
}

/// Whether `a = b` and `b = c` imply `a = c` for columns of these types.
pub(super) fn transitive(a: &SqlType, b: &SqlType) -> bool {
    (a.is_integer() && b.is_integer()) || (a.kind == b.kind && a.coll == b.coll)
}

/// The equalities `eqs` (column pairs, with each column's leaf and type where known)
/// imply and do not already state, between columns of different leaves.
pub(super) fn implied(
    columns: usize,
    eqs: &[(usize, usize)],
    leaf_of: impl Fn(usize) -> usize,
    type_of: impl Fn(usize) -> Option<SqlType>,
) -> Vec<(usize, usize)> {
    let mut classes = Classes::new(columns);
    let mut members: Vec<usize> = Vec::new();
    for &(a, b) in eqs {
        let (Some(ta), Some(tb)) = (type_of(a), type_of(b)) else {
            continue;
        };
        if transitive(&ta, &tb) {
            classes.union(a, b);
            members.extend([a, b]);
        }
    }
    members.sort_unstable();
    members.dedup();
    let stated = |x: usize, y: usize| {
        eqs.iter()
            .any(|&(a, b)| (a, b) == (x, y) || (a, b) == (y, x))
    };
    let mut out = Vec::new();
    for (i, &x) in members.iter().enumerate() {
        for &y in &members[i + 1..] {
            if leaf_of(x) != leaf_of(y) && classes.find(x) == classes.find(y) && !stated(x, y) {
                out.push((x, y));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quarry_common::{Collation, TypeKind};

    fn ty(kind: TypeKind) -> SqlType {
        SqlType::new(kind)
    }

    #[test]
    fn a_chain_of_integer_equalities_implies_its_ends() {
        // Columns 0, 1, 2 in leaves 0, 1, 2: 0 = 1 and 1 = 2 give 0 = 2.
        let got = implied(3, &[(0, 1), (1, 2)], |c| c, |_| Some(ty(TypeKind::Int)));
        assert_eq!(got, vec![(0, 2)]);
        // Stated already, or in one leaf: nothing more.
        assert!(implied(
            3,
            &[(0, 1), (1, 2), (2, 0)],
            |c| c,
            |_| Some(ty(TypeKind::Int))
        )
        .is_empty());
        assert!(implied(3, &[(0, 1), (1, 2)], |_| 0, |_| Some(ty(TypeKind::Int))).is_empty());
    }

    #[test]
    fn nothing_is_implied_through_a_comparison_that_converts() {
        // A string column equated to an integer one compares as numbers: not transitive.
        let types = [ty(TypeKind::VarChar), ty(TypeKind::Int), ty(TypeKind::Int)];
        assert!(implied(3, &[(0, 1), (1, 2)], |c| c, |c| Some(types[c])).is_empty());
        // Two string columns of different collations neither.
        let mut bin = ty(TypeKind::VarChar);
        bin.coll = Collation::Utf8mb4Bin;
        let types = [ty(TypeKind::VarChar), ty(TypeKind::VarChar), bin];
        assert!(implied(3, &[(0, 1), (1, 2)], |c| c, |c| Some(types[c])).is_empty());
        // A column whose type is unknown (a derived table's) takes no part.
        assert!(implied(
            3,
            &[(0, 1), (1, 2)],
            |c| c,
            |c| (c != 1).then(|| ty(TypeKind::Int))
        )
        .is_empty());
    }

    #[test]
    fn classes_say_when_an_equality_adds_nothing() {
        let mut c = Classes::new(4);
        assert!(c.union(0, 1));
        assert!(c.union(2, 1));
        assert!(!c.union(0, 2));
        assert!(c.union(3, 0));
    }
}
