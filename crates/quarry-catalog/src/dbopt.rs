//! A database's options file `<datadir>/<db>/db.opt`, with MariaDB's name and lines
//! (`default-character-set=latin1`, `default-collation=latin1_swedish_ci`): the
//! collation tables created in the database take when they name none. A database without
//! the file (every one made before it existed) has utf8mb4_general_ci. Owns the file; the
//! catalog's in-memory state knows nothing of it (it is read when asked for, which is
//! rare: CREATE TABLE, SHOW CREATE DATABASE, @@collation_database).

use std::path::Path;

use quarry_common::{Collation, Error, Result};

const FILE: &str = "db.opt";

/// The default collation of the database in `dir`.
pub(crate) fn read(dir: &Path) -> Collation {
    let Ok(text) = std::fs::read_to_string(dir.join(FILE)) else {
        return Collation::Utf8mb4GeneralCi;
    };
    let mut set = None;
    let mut coll = None;
    for line in text.lines() {
        match line.split_once('=') {
            Some(("default-character-set", v)) => set = Collation::default_of(v.trim()),
            Some(("default-collation", v)) => coll = Collation::named(v.trim()),
            _ => {}
        }
    }
    coll.or(set).unwrap_or(Collation::Utf8mb4GeneralCi)
}

/// Make `coll` the default collation of the database in `dir`: written to a temporary
/// file, synced, renamed over the old one and the folder synced.
pub(crate) fn write(dir: &Path, coll: Collation) -> Result<()> {
    let tmp = dir.join(format!("{FILE}.tmp"));
    let fin = dir.join(FILE);
    let text = format!(
        "default-character-set={}\ndefault-collation={}\n",
        coll.charset(),
        coll.name()
    );
    std::fs::write(&tmp, text).map_err(|e| Error::io(tmp.display(), e))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(tmp.display(), e))?;
    std::fs::rename(&tmp, &fin).map_err(|e| Error::io(fin.display(), e))?;
    std::fs::File::open(dir)
        .and_then(|f| f.sync_all())
        .map_err(|e| Error::io(dir.display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_options_read_back_and_a_missing_file_is_the_default() {
        let dir = std::env::temp_dir().join(format!("quarry-dbopt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(read(&dir), Collation::Utf8mb4GeneralCi);
        write(&dir, Collation::Latin1Bin).unwrap();
        assert_eq!(read(&dir), Collation::Latin1Bin);
        assert_eq!(
            std::fs::read_to_string(dir.join(FILE)).unwrap(),
            "default-character-set=latin1\ndefault-collation=latin1_bin\n"
        );
        // MariaDB's file names the set alone when the collation is its default.
        std::fs::write(dir.join(FILE), "default-character-set=ascii\n").unwrap();
        assert_eq!(read(&dir), Collation::AsciiGeneralCi);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
