//! RETURNING of INSERT / REPLACE / DELETE bound over the target table's row (the
//! executor's [`Returning`] evaluates it for each row written or removed).

use quarry_catalog::TableEntry;
use quarry_common::{Error, Result};
use quarry_executor::dml::Returning;
use quarry_sql::ast::SelectItem;

use crate::bind::Binder;

/// `target`: the table's name as the statement wrote it (its alias for DELETE); an
/// INSERT whose list reads its own target is 1093, as in MariaDB.
pub fn bind(
    items: Option<&[SelectItem]>,
    entry: &TableEntry,
    alias: &str,
    verb: &str,
    b: &mut Binder,
) -> Result<Option<Returning>> {
    let Some(items) = items else {
        return Ok(None);
    };
    let read_before = b.tables_read.len();
    let (exprs, columns) = b.bind_returning(items, entry, alias)?;
    let reads_target = b.tables_read[read_before..].iter().any(|t| {
        t.db.eq_ignore_ascii_case(&entry.db) && t.def.name.eq_ignore_ascii_case(&entry.def.name)
    });
    if reads_target && verb == "INSERT" {
        return Err(Error::new(
            1093,
            format!(
                "Table '{}' is specified twice, both as a target for '{verb}' and as a separate source for data",
                entry.def.name
            ),
        ));
    }
    Ok(Some(Returning::new(exprs, columns)))
}
