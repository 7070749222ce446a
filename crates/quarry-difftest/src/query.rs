//! Random queries over a generated schema, kept as clauses (not only text) so the reducer
//! can drop parts of a failing one and the oracles can rewrite its WHERE. Expressions are
//! SQL text built bottom-up: column references, the schema's literals, operators,
//! functions, casts, CASE, and subqueries (correlated or not).

use std::fmt;

use quarry_common::fuzz::Rng;

use crate::schema::{Kind, Table};

#[derive(Clone, Debug, Default)]
pub struct Select {
    pub distinct: bool,
    pub items: Vec<String>,
    /// The FROM clause's text (tables, aliases, joins).
    pub from: String,
    /// Conjuncts of WHERE.
    pub filter: Vec<String>,
    pub group_by: Vec<String>,
    pub rollup: bool,
    pub having: Option<String>,
    /// ORDER BY every select item (by position): the result's order is then fully
    /// determined and compared as a sequence.
    pub ordered: bool,
    pub limit: Option<u32>,
    /// UNION [ALL] with another select of the same width.
    pub union: Option<(bool, Box<Select>)>,
}

impl Select {
    pub fn where_text(&self) -> Option<String> {
        if self.filter.is_empty() {
            None
        } else {
            Some(
                self.filter
                    .iter()
                    .map(|c| format!("({c})"))
                    .collect::<Vec<_>>()
                    .join(" AND "),
            )
        }
    }

    /// Whether rows must come in the same order on both sides.
    pub fn fully_ordered(&self) -> bool {
        self.ordered && self.union.is_none()
    }

    /// Whether the query picks one of several equal values (see [`crate::check::same`]).
    pub fn picks_among_equals(&self) -> bool {
        // LIMIT after ORDER BY may cut between rows that compare equal ('a', 'A').
        self.limit.is_some()
            || self.distinct
            || !self.group_by.is_empty()
            || self.union.as_ref().is_some_and(|(all, _)| !all)
            || self.items.iter().any(|i| has_aggregate(i))
            || self.to_string().contains("SELECT M")
    }

    /// A select whose rows are a plain filter of its FROM (no grouping, DISTINCT, LIMIT or
    /// UNION): ternary-logic partitioning applies.
    pub fn partitionable(&self) -> bool {
        !self.distinct
            && self.group_by.is_empty()
            && self.having.is_none()
            && self.limit.is_none()
            && self.union.is_none()
            && !self.items.iter().any(|i| has_aggregate(i))
    }
}

pub fn has_aggregate(e: &str) -> bool {
    let u = e.to_ascii_uppercase();
    [
        "COUNT(",
        "SUM(",
        "MIN(",
        "MAX(",
        "AVG(",
        "GROUP_CONCAT(",
        "BIT_OR(",
    ]
    .iter()
    .any(|f| u.contains(f))
}

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SELECT ")?;
        if self.distinct {
            write!(f, "DISTINCT ")?;
        }
        write!(f, "{} FROM {}", self.items.join(", "), self.from)?;
        if let Some(w) = self.where_text() {
            write!(f, " WHERE {w}")?;
        }
        if !self.group_by.is_empty() {
            write!(f, " GROUP BY {}", self.group_by.join(", "))?;
            if self.rollup {
                write!(f, " WITH ROLLUP")?;
            }
        }
        if let Some(h) = &self.having {
            write!(f, " HAVING {h}")?;
        }
        if let Some((all, other)) = &self.union {
            write!(f, " UNION {}{other}", if *all { "ALL " } else { "" })?;
        }
        if self.ordered {
            let n: Vec<String> = (1..=self.items.len()).map(|i| i.to_string()).collect();
            write!(f, " ORDER BY {}", n.join(", "))?;
        }
        if let Some(l) = self.limit {
            write!(f, " LIMIT {l}")?;
        }
        Ok(())
    }
}

/// A table in scope: its alias and definition.
#[derive(Clone)]
struct InScope<'t> {
    alias: String,
    table: &'t Table,
}

pub struct Gen<'a> {
    pub rng: &'a mut Rng,
    pub tables: &'a [Table],
    aliases: Vec<String>,
    /// Operands of any type together (a string compared with a number, a date divided):
    /// MariaDB's conversion rules at work. Without it, operands of one class.
    pub mixed: bool,
}

/// What a value is, for keeping operands of one kind together.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Class {
    Num,
    Text,
    Time,
}

impl Kind {
    pub fn class(self) -> Class {
        if self.numeric() {
            Class::Num
        } else if self.text() {
            Class::Text
        } else {
            Class::Time
        }
    }
}

const ALIASES: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

impl<'a> Gen<'a> {
    pub fn new(rng: &'a mut Rng, tables: &'a [Table]) -> Gen<'a> {
        Gen {
            rng,
            tables,
            aliases: ALIASES.iter().map(|s| s.to_string()).collect(),
            mixed: false,
        }
    }

    fn below(&mut self, n: usize) -> usize {
        self.rng.below(n)
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.rng.chance(one_in)
    }

    /// A top-level query.
    pub fn select(&mut self) -> Select {
        let mut used = 0;
        self.select_at(&[], &mut used, 0, None)
    }

    /// `want`: the classes of the select items (a UNION's second input, without
    /// --mixed-types, has the first one's).
    fn select_at(
        &mut self,
        outer: &[InScope<'a>],
        used: &mut usize,
        depth: usize,
        want: Option<&[Class]>,
    ) -> Select {
        let (from, scope) = self.tables_joined(used, depth);
        let mut all: Vec<InScope<'a>> = outer.to_vec();
        all.extend(scope.iter().cloned());
        let mut s = Select {
            from,
            ..Default::default()
        };
        for _ in 0..self.below(3) {
            let p = self.pred(&all, depth);
            s.filter.push(p);
        }
        let aggregate = want.is_none() && self.chance(3);
        let mut classes: Vec<Option<Class>> = vec![];
        if aggregate {
            let ng = self.below(3);
            for _ in 0..ng {
                let c = self.column(&scope).0;
                if !s.group_by.contains(&c) {
                    s.group_by.push(c);
                }
            }
            s.items = s.group_by.clone();
            for _ in 0..1 + self.below(2) {
                let a = self.aggregate(&scope, depth);
                s.items.push(a);
            }
            s.rollup = !s.group_by.is_empty() && self.chance(6);
            if !s.group_by.is_empty() && self.chance(3) {
                let a = self.aggregate(&scope, depth);
                let v = self.literal(Kind::Int);
                s.having = Some(format!("{a} > {v}"));
            }
        } else if let Some(want) = want {
            for &class in want {
                let e = match self.column_of(&scope, class) {
                    Some((c, _)) if self.chance(2) => c,
                    _ => self.typed(class, &all, depth),
                };
                s.items.push(e);
            }
        } else {
            for _ in 0..1 + self.below(3) {
                if self.chance(2) {
                    let (c, kind) = self.column(&scope);
                    s.items.push(c);
                    classes.push(Some(kind.class()));
                } else if self.mixed {
                    let e = self.scalar(&all, depth);
                    s.items.push(e);
                    classes.push(None);
                } else {
                    let class = *self.rng.pick(&[Class::Num, Class::Text, Class::Time]);
                    let e = self.typed(class, &all, depth);
                    s.items.push(e);
                    classes.push(Some(class));
                }
            }
            s.distinct = self.chance(6);
        }
        // ROLLUP takes no ORDER BY in MariaDB (1221).
        if !s.rollup {
            s.ordered = self.chance(2);
            if s.ordered && self.chance(3) {
                s.limit = Some(self.below(5) as u32);
            }
        }
        if depth == 0 && !aggregate && !s.ordered && self.chance(8) {
            let width = s.items.len();
            let known: Option<Vec<Class>> = classes.iter().copied().collect();
            let mut other = match known.filter(|_| !self.mixed) {
                Some(k) => self.select_at(outer, used, depth + 1, Some(&k)),
                None => self.select_at(outer, used, depth + 1, None),
            };
            other.items.truncate(width);
            while other.items.len() < width {
                other.items.push("NULL".into());
            }
            other.group_by.clear();
            other.rollup = false;
            other.having = None;
            other.items.retain(|i| !has_aggregate(i));
            while other.items.len() < width {
                other.items.push("1".into());
            }
            other.ordered = false;
            other.limit = None;
            other.union = None;
            s.union = Some((self.chance(2), Box::new(other)));
        }
        s
    }

    fn fresh_alias(&mut self, used: &mut usize) -> String {
        let a = self.aliases[*used % self.aliases.len()].clone();
        *used += 1;
        if *used > self.aliases.len() {
            format!("{a}{used}")
        } else {
            a
        }
    }

    fn tables_joined(&mut self, used: &mut usize, depth: usize) -> (String, Vec<InScope<'a>>) {
        let tables = self.tables;
        let first = &tables[self.below(tables.len())];
        let alias = self.fresh_alias(used);
        let mut scope = vec![InScope {
            alias: alias.clone(),
            table: first,
        }];
        let mut text = format!("{} {alias}", first.name);
        let joins = if depth == 0 {
            self.below(3)
        } else {
            self.below(2)
        };
        for _ in 0..joins {
            let t = &tables[self.below(tables.len())];
            let alias = self.fresh_alias(used);
            let right = InScope {
                alias: alias.clone(),
                table: t,
            };
            let kind = *self
                .rng
                .pick(&["JOIN", "LEFT JOIN", "RIGHT JOIN", "CROSS JOIN", ","]);
            if kind == "CROSS JOIN" || kind == "," {
                text = format!("{text}{} {} {alias}", if kind == "," { "" } else { " " }, {
                    if kind == "," {
                        format!(", {}", t.name)
                    } else {
                        format!("CROSS JOIN {}", t.name)
                    }
                });
                scope.push(right);
                continue;
            }
            // Join on an equality of the INT or string columns, sometimes with more.
            let l = scope[self.below(scope.len())].alias.clone();
            let (lc, rc) = if self.chance(2) {
                ("c0", "c0")
            } else {
                ("c1", "c1")
            };
            let mut on = format!("{l}.{lc} = {alias}.{rc}");
            if self.chance(4) {
                on = format!("{l}.pk = {alias}.pk");
            }
            scope.push(right);
            if self.chance(4) {
                let p = self.pred(&scope, depth + 1);
                on = format!("{on} AND {p}");
            }
            text = format!("{text} {kind} {} {alias} ON {on}", t.name);
        }
        (text, scope)
    }

    fn column(&mut self, scope: &[InScope<'a>]) -> (String, Kind) {
        let s = &scope[self.below(scope.len())];
        let c = &s.table.columns[self.below(s.table.columns.len())];
        (format!("{}.{}", s.alias, c.name), c.kind)
    }

    fn literal(&mut self, kind: Kind) -> String {
        if self.chance(12) {
            return "NULL".into();
        }
        self.rng.pick(kind.values()).to_string()
    }

    fn aggregate(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        let (c, kind) = self.column(scope);
        let arg = if self.chance(4) {
            self.scalar(scope, depth + 1)
        } else {
            c.clone()
        };
        match self.below(9) {
            0 => "COUNT(*)".into(),
            1 => format!("COUNT({arg})"),
            2 => format!("COUNT(DISTINCT {c})"),
            3 if kind.numeric() => format!("SUM({c})"),
            4 if kind.numeric() => format!("AVG({c})"),
            5 => format!("MIN({arg})"),
            6 => format!("MAX({arg})"),
            7 => format!("GROUP_CONCAT({c} ORDER BY {c})"),
            _ => format!("COUNT({c})"),
        }
    }

    /// Any scalar expression.
    fn scalar(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        if !self.mixed {
            let class = *self
                .rng
                .pick(&[Class::Num, Class::Num, Class::Text, Class::Time]);
            return self.typed(class, scope, depth);
        }
        self.scalar_mixed(scope, depth)
    }

    fn column_of(&mut self, scope: &[InScope<'a>], class: Class) -> Option<(String, Kind)> {
        let mut cands = vec![];
        for s in scope {
            for c in &s.table.columns {
                if c.kind.class() == class {
                    cands.push((format!("{}.{}", s.alias, c.name), c.kind));
                }
            }
        }
        if cands.is_empty() {
            None
        } else {
            Some(cands[self.below(cands.len())].clone())
        }
    }

    fn typed_leaf(&mut self, class: Class, scope: &[InScope<'a>]) -> String {
        if !self.chance(4) {
            if let Some((c, _)) = self.column_of(scope, class) {
                return c;
            }
        }
        let kind = match class {
            Class::Num => *self.rng.pick(&[
                Kind::Int,
                Kind::BigInt,
                Kind::Decimal,
                Kind::Double,
                Kind::TinyInt,
            ]),
            Class::Text => Kind::Varchar,
            Class::Time => *self.rng.pick(&[Kind::Date, Kind::DateTime]),
        };
        let lit = self.literal(kind);
        // A time literal typed as one ('2000-01-01' alone is a string).
        match kind {
            _ if lit == "NULL" => lit,
            Kind::Date => format!("DATE {lit}"),
            Kind::DateTime => format!("TIMESTAMP {lit}"),
            _ => lit,
        }
    }

    /// An expression of one class whose operands are of the classes its operators take.
    fn typed(&mut self, class: Class, scope: &[InScope<'a>], depth: usize) -> String {
        if depth > 2 || self.chance(3) {
            return self.typed_leaf(class, scope);
        }
        let d = depth + 1;
        let t = |g: &mut Self, c: Class| g.typed(c, scope, d);
        match (class, self.below(12)) {
            (_, 0) => format!("COALESCE({}, {})", t(self, class), t(self, class)),
            (_, 1) => format!("IFNULL({}, {})", t(self, class), t(self, class)),
            (_, 2) => {
                let p = self.pred(scope, d);
                format!("IF({p}, {}, {})", t(self, class), t(self, class))
            }
            (_, 3) => {
                let p = self.pred(scope, d);
                format!(
                    "CASE WHEN {p} THEN {} ELSE {} END",
                    t(self, class),
                    t(self, class)
                )
            }
            (Class::Num, 4) => format!(
                "{} {} {}",
                t(self, Class::Num),
                self.rng.pick(&["+", "-", "*", "/", "DIV", "%"]),
                t(self, Class::Num)
            ),
            (Class::Num, 5) => format!(
                "{}({})",
                self.rng.pick(&["ABS", "FLOOR", "CEIL", "SIGN", "-"]),
                t(self, Class::Num)
            ),
            (Class::Num, 6) => format!(
                "ROUND({}, {})",
                t(self, Class::Num),
                self.rng.pick(&["0", "1", "2", "-1"])
            ),
            (Class::Num, 7) => format!(
                "{}({}, {})",
                self.rng.pick(&["GREATEST", "LEAST", "NULLIF"]),
                t(self, Class::Num),
                t(self, Class::Num)
            ),
            (Class::Num, 8) => format!(
                "{}({})",
                self.rng.pick(&["LENGTH", "CHAR_LENGTH"]),
                t(self, Class::Text)
            ),
            (Class::Num, 9) => {
                if self.chance(2) {
                    format!("YEAR({})", t(self, Class::Time))
                } else {
                    format!(
                        "DATEDIFF({}, {})",
                        t(self, Class::Time),
                        t(self, Class::Time)
                    )
                }
            }
            (Class::Num, 10) => format!(
                "CAST({} AS {})",
                t(self, Class::Num),
                self.rng.pick(&["SIGNED", "DECIMAL(10,2)", "DOUBLE"])
            ),
            (Class::Text, 4) => {
                format!("CONCAT({}, {})", t(self, Class::Text), t(self, Class::Text))
            }
            (Class::Text, 5) => format!(
                "{}({})",
                self.rng.pick(&["UPPER", "LOWER", "TRIM"]),
                t(self, Class::Text)
            ),
            (Class::Text, 6) => format!(
                "SUBSTRING({}, {}, {})",
                t(self, Class::Text),
                self.rng.pick(&["1", "2", "0", "-1"]),
                self.rng.pick(&["1", "2", "5"])
            ),
            (Class::Text, 7) => format!("CAST({} AS CHAR)", t(self, Class::Num)),
            (Class::Text, 8) => format!(
                "{}({}, {})",
                self.rng.pick(&["GREATEST", "LEAST", "NULLIF"]),
                t(self, Class::Text),
                t(self, Class::Text)
            ),
            (Class::Time, 4..=6) => format!(
                "DATE_ADD({}, INTERVAL {} {})",
                t(self, Class::Time),
                self.rng.pick(&["1", "-1", "30"]),
                self.rng.pick(&["DAY", "MONTH", "YEAR", "HOUR"])
            ),
            (Class::Time, 7) => format!("CAST({} AS DATE)", t(self, Class::Time)),
            (_, 11) if class != Class::Time => {
                let sub = self.subquery_scalar(scope, d, Some(class));
                format!("({sub})")
            }
            _ => self.typed_leaf(class, scope),
        }
    }

    fn scalar_mixed(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        if depth > 2 || self.chance(3) {
            return if self.chance(4) {
                let k = *self.rng.pick(&crate::schema::KINDS);
                self.literal(k)
            } else {
                self.column(scope).0
            };
        }
        let d = depth + 1;
        match self.below(22) {
            0 => format!(
                "{} {} {}",
                self.numeric(scope, d),
                self.rng.pick(&["+", "-", "*"]),
                self.numeric(scope, d)
            ),
            1 => format!("{} / {}", self.numeric(scope, d), self.numeric(scope, d)),
            2 => format!(
                "{} {} {}",
                self.numeric(scope, d),
                self.rng.pick(&["DIV", "%", "MOD"]),
                self.numeric(scope, d)
            ),
            3 => format!("ABS({})", self.numeric(scope, d)),
            4 => format!(
                "COALESCE({}, {})",
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            5 => format!(
                "IFNULL({}, {})",
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            6 => format!(
                "NULLIF({}, {})",
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            7 => format!(
                "IF({}, {}, {})",
                self.pred(scope, d),
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            8 => format!(
                "CASE WHEN {} THEN {} ELSE {} END",
                self.pred(scope, d),
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            9 => format!(
                "CONCAT({}, {})",
                self.scalar(scope, d),
                self.scalar(scope, d)
            ),
            10 => format!(
                "{}({})",
                self.rng
                    .pick(&["LENGTH", "CHAR_LENGTH", "UPPER", "LOWER", "TRIM", "HEX"]),
                self.text(scope, d)
            ),
            11 => format!(
                "SUBSTRING({}, {}, {})",
                self.text(scope, d),
                self.rng.pick(&["1", "2", "0", "-1"]),
                self.rng.pick(&["1", "2", "5"])
            ),
            12 => format!(
                "ROUND({}, {})",
                self.numeric(scope, d),
                self.rng.pick(&["0", "1", "-1"])
            ),
            13 => format!(
                "{}({})",
                self.rng.pick(&["FLOOR", "CEIL", "SIGN"]),
                self.numeric(scope, d)
            ),
            14 => format!(
                "{}({}, {})",
                self.rng.pick(&["GREATEST", "LEAST"]),
                self.numeric(scope, d),
                self.numeric(scope, d)
            ),
            15 => format!(
                "CAST({} AS {})",
                self.scalar(scope, d),
                self.rng.pick(&[
                    "SIGNED",
                    "UNSIGNED",
                    "CHAR",
                    "DECIMAL(10,2)",
                    "DATE",
                    "DOUBLE"
                ])
            ),
            16 => format!("YEAR({})", self.temporal(scope, d)),
            17 => format!(
                "DATE_ADD({}, INTERVAL {} {})",
                self.temporal(scope, d),
                self.rng.pick(&["1", "-1", "30"]),
                self.rng.pick(&["DAY", "MONTH", "YEAR", "HOUR"])
            ),
            18 => format!(
                "DATEDIFF({}, {})",
                self.temporal(scope, d),
                self.temporal(scope, d)
            ),
            19 => format!("-{}", self.numeric(scope, d)),
            20 => format!("({})", self.subquery_scalar(scope, d, None)),
            _ => self.pred(scope, d),
        }
    }

    fn of_kind(&mut self, scope: &[InScope<'a>], want: fn(Kind) -> bool) -> Option<String> {
        let mut cands = vec![];
        for s in scope {
            for c in &s.table.columns {
                if want(c.kind) {
                    cands.push(format!("{}.{}", s.alias, c.name));
                }
            }
        }
        if cands.is_empty() {
            None
        } else {
            Some(cands[self.below(cands.len())].clone())
        }
    }

    fn numeric(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        if !self.mixed {
            return self.typed(Class::Num, scope, depth);
        }
        if depth > 2 || self.chance(2) {
            if self.chance(3) {
                let k = *self
                    .rng
                    .pick(&[Kind::Int, Kind::BigInt, Kind::Decimal, Kind::Double]);
                return self.literal(k);
            }
            return self
                .of_kind(scope, Kind::numeric)
                .unwrap_or_else(|| "1".into());
        }
        self.scalar(scope, depth)
    }

    fn text(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        if !self.mixed {
            return self.typed(Class::Text, scope, depth);
        }
        if depth > 2 || self.chance(2) {
            if self.chance(3) {
                return self.literal(Kind::Varchar);
            }
            return self
                .of_kind(scope, Kind::text)
                .unwrap_or_else(|| "'x'".into());
        }
        self.scalar(scope, depth)
    }

    fn temporal(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        let _ = depth;
        if self.chance(3) {
            return self.literal(Kind::Date);
        }
        self.of_kind(scope, Kind::temporal)
            .unwrap_or_else(|| "'2001-02-03'".into())
    }

    /// A predicate (a truth value, possibly NULL).
    fn pred(&mut self, scope: &[InScope<'a>], depth: usize) -> String {
        let d = depth + 1;
        let choice = if depth > 2 {
            self.below(6)
        } else {
            self.below(14)
        };
        match choice {
            0..=2 => {
                let (c, kind) = self.column(scope);
                let op = *self
                    .rng
                    .pick(&["=", "<>", "<", "<=", ">", ">=", "<=>", "!="]);
                let rhs = if !self.chance(3) {
                    self.literal(kind)
                } else if self.mixed {
                    self.column(scope).0
                } else {
                    self.typed(kind.class(), scope, d)
                };
                format!("{c} {op} {rhs}")
            }
            3 => {
                let (c, _) = self.column(scope);
                format!("{c} IS {}NULL", if self.chance(2) { "NOT " } else { "" })
            }
            4 => {
                let (c, kind) = self.column(scope);
                let (a, b) = (self.literal(kind), self.literal(kind));
                format!(
                    "{c} {}BETWEEN {a} AND {b}",
                    if self.chance(3) { "NOT " } else { "" }
                )
            }
            5 => {
                let (c, kind) = self.column(scope);
                let n = 1 + self.below(4);
                let vals: Vec<String> = (0..n).map(|_| self.literal(kind)).collect();
                format!(
                    "{c} {}IN ({})",
                    if self.chance(3) { "NOT " } else { "" },
                    vals.join(", ")
                )
            }
            6 => {
                let c = self
                    .of_kind(scope, Kind::text)
                    .unwrap_or_else(|| "'a'".into());
                let pat = *self
                    .rng
                    .pick(&["'a%'", "'%b%'", "'_'", "'A_C'", "'%'", "''", "'a '", "'1%'"]);
                format!("{c} {}LIKE {pat}", if self.chance(3) { "NOT " } else { "" })
            }
            7 => format!("NOT ({})", self.pred(scope, d)),
            8 | 9 => format!(
                "({}) {} ({})",
                self.pred(scope, d),
                self.rng.pick(&["AND", "OR", "XOR"]),
                self.pred(scope, d)
            ),
            10 => {
                let (e, rhs) = if self.mixed {
                    (self.scalar(scope, d), self.scalar(scope, d))
                } else {
                    let class = *self.rng.pick(&[Class::Num, Class::Text, Class::Time]);
                    (self.typed(class, scope, d), self.typed(class, scope, d))
                };
                let op = *self.rng.pick(&["=", "<", ">", "<>"]);
                format!("{e} {op} {rhs}")
            }
            11 => {
                // [NOT] EXISTS, correlated on an INT or string column half the time.
                let sub = self.subquery(scope, d, true, None);
                format!("{}EXISTS ({sub})", if self.chance(3) { "NOT " } else { "" })
            }
            12 => {
                let (c, kind) = self.column(scope);
                let want = (!self.mixed).then(|| kind.class());
                let mut sub = self.subquery(scope, d, false, want);
                let not = self.chance(3);
                // MariaDB 10.11 answers NOT IN over a subquery holding NULL wrongly in
                // several plans (COMPAT.md, NOT IN): without --mixed-types the subquery
                // leaves out its NULLs.
                if not && !self.mixed {
                    let (sel, _) = sub.split_once(" FROM ").unwrap();
                    let col = sel.trim_start_matches("SELECT ").to_string();
                    if col != "1" {
                        let glue = if sub.contains(" WHERE ") {
                            " AND "
                        } else {
                            " WHERE "
                        };
                        sub = format!("{sub}{glue}{col} IS NOT NULL");
                    }
                }
                format!("{c} {}IN ({sub})", if not { "NOT " } else { "" })
            }
            _ => {
                let (c, kind) = self.column(scope);
                let op = *self.rng.pick(&["=", "<", ">", ">="]);
                let sub = if self.mixed {
                    self.subquery_scalar(scope, d, None)
                } else {
                    self.subquery_scalar(scope, d, Some(kind.class()))
                };
                format!("{c} {op} ({sub})")
            }
        }
    }

    /// SELECT of one column (of class `want`, when given) from one table, maybe correlated
    /// with `outer`.
    fn subquery(
        &mut self,
        outer: &[InScope<'a>],
        depth: usize,
        any_width: bool,
        want: Option<Class>,
    ) -> String {
        let tables = self.tables;
        let fits = |t: &Table| want.is_none_or(|w| t.columns.iter().any(|c| c.kind.class() == w));
        let choices: Vec<&Table> = tables.iter().filter(|t| fits(t)).collect();
        let t = if choices.is_empty() {
            &tables[self.below(tables.len())]
        } else {
            choices[self.below(choices.len())]
        };
        let alias = format!("s{depth}{}", self.below(100));
        let me = InScope {
            alias: alias.clone(),
            table: t,
        };
        let cols: Vec<&str> = t
            .columns
            .iter()
            .filter(|c| want.is_none_or(|w| c.kind.class() == w))
            .map(|c| c.name.as_str())
            .collect();
        let col = if any_width && self.chance(2) || cols.is_empty() {
            "1".to_string()
        } else {
            format!("{alias}.{}", cols[self.below(cols.len())])
        };
        let mut conds = vec![];
        if !outer.is_empty() && self.chance(2) {
            let o = &outer[self.below(outer.len())];
            let c = if self.chance(2) { "c0" } else { "c1" };
            conds.push(format!("{alias}.{c} = {}.{c}", o.alias));
        }
        if self.chance(2) {
            let p = self.pred(&[me], depth + 1);
            conds.push(p);
        }
        let w = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        format!("SELECT {col} FROM {} {alias}{w}", t.name)
    }

    /// A subquery giving at most one value (of `class`, when given: COUNT and SUM only
    /// over numbers).
    fn subquery_scalar(
        &mut self,
        outer: &[InScope<'a>],
        depth: usize,
        class: Option<Class>,
    ) -> String {
        let sub = self.subquery(outer, depth, false, class);
        let (sel, rest) = sub.split_once(" FROM ").unwrap();
        let col = sel.trim_start_matches("SELECT ");
        let agg = match class {
            None | Some(Class::Num) => *self.rng.pick(&["MAX", "MIN", "COUNT", "SUM"]),
            _ => *self.rng.pick(&["MAX", "MIN"]),
        };
        format!("SELECT {agg}({col}) FROM {rest}")
    }
}

impl Gen<'_> {
    /// An UPDATE, DELETE or INSERT … SELECT on one table; `step` (a multiple of 12 less
    /// one, a case's DMLs) keeps the primary keys INSERT … SELECT makes apart from every
    /// earlier step's.
    pub fn dml(&mut self, step: usize) -> String {
        let tables = self.tables;
        let t = &tables[self.below(tables.len())];
        let me = [InScope {
            alias: t.name.clone(),
            table: t,
        }];
        let filter = if self.chance(4) {
            String::new()
        } else {
            format!(" WHERE {}", self.pred(&me, 1))
        };
        match self.below(3) {
            0 => {
                let c = &t.columns[1 + self.below(t.columns.len() - 1)];
                let v = if self.chance(2) {
                    self.literal(c.kind)
                } else if self.mixed {
                    self.scalar(&me, 1)
                } else {
                    self.typed(c.kind.class(), &me, 1)
                };
                format!("UPDATE {} SET {} = {v}{filter}", t.name, c.name)
            }
            1 => format!("DELETE FROM {}{filter}", t.name),
            _ => {
                let cols: Vec<String> = t
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        if i == 0 {
                            // 1000 · 2^k for the k-th DML of a case: every key is its
                            // first row's plus a sum of distinct such offsets, so no two
                            // copies collide (MariaDB's reference tables have no key to
                            // refuse one).
                            format!("pk + {}", 1000u64 << (step / 12).min(20))
                        } else {
                            c.name.clone()
                        }
                    })
                    .collect();
                format!(
                    "INSERT INTO {} SELECT {} FROM {}{filter}",
                    t.name,
                    cols.join(", "),
                    t.name
                )
            }
        }
    }
}
