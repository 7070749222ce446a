//! SHOW COLLATION and SHOW CHARACTER SET: the collations and character sets Quarry has
//! (`quarry_common::collation`), as MariaDB lists them. `LIKE` filters here; `WHERE` is
//! the session's, over the same columns.

use quarry_common::{Collation, Result, Row, Value};
use quarry_sql::ast::ShowStatementFilter;

use super::{like_filter, num, text, Output, Session};

fn like(filter: Option<&ShowStatementFilter>) -> Option<&str> {
    match filter {
        Some(ShowStatementFilter::Like(p) | ShowStatementFilter::NoKeyword(p)) => Some(p),
        _ => None,
    }
}

/// A collation as SHOW COLLATION lists it (information_schema.COLLATIONS has the same
/// columns): Collation, Charset, Id, Default, Compiled, Sortlen.
pub(super) fn collation_row(c: &Collation) -> Row {
    vec![
        Value::Str(c.name().into()),
        Value::Str(c.charset().into()),
        Value::Int(c.id() as i64),
        Value::Str(if c.is_default() { "Yes" } else { "" }.into()),
        Value::Str("Yes".into()),
        Value::Int(c.sortlen() as i64),
    ]
}

/// A character set as SHOW CHARACTER SET lists it: Charset, Description, Default
/// collation, Maxlen.
pub(super) fn charset_row(&(name, description, maxlen): &(&str, &str, u32)) -> Row {
    let default = Collation::default_of(name).map_or("", Collation::name);
    vec![
        Value::Str(name.into()),
        Value::Str(description.into()),
        Value::Str(default.into()),
        Value::Int(maxlen as i64),
    ]
}

impl Session {
    pub(super) fn show_collation(&self, filter: Option<&ShowStatementFilter>) -> Result<Output> {
        let rows = quarry_common::collation::ALL
            .iter()
            .filter(|c| like_filter(like(filter), c.name()))
            .map(collation_row)
            .collect();
        Ok(Output::Rows {
            columns: vec![
                text("Collation", 64),
                text("Charset", 32),
                num("Id"),
                text("Default", 3),
                text("Compiled", 3),
                num("Sortlen"),
            ],
            rows,
        })
    }

    pub(super) fn show_charset(&self, filter: Option<&ShowStatementFilter>) -> Result<Output> {
        let rows = quarry_common::collation::CHARSETS
            .iter()
            .filter(|(name, ..)| like_filter(like(filter), name))
            .map(charset_row)
            .collect();
        Ok(Output::Rows {
            columns: vec![
                text("Charset", 32),
                text("Description", 60),
                text("Default collation", 64),
                num("Maxlen"),
            ],
            rows,
        })
    }
}
