//! Where the server may read or write files on a client's behalf (`secure_file_priv`):
//! LOAD DATA INFILE without LOCAL and LOAD_FILE() read, SELECT … INTO OUTFILE / DUMPFILE
//! write, only inside one directory, or nowhere.
//!
//! Owns the policy and the path check; opens no file and must not touch the datadir's
//! own files.

use std::path::{Path, PathBuf};

use quarry_common::{Error, Result, Value};

/// The startup setting, resolved.
#[derive(Debug, Clone)]
pub enum FilePolicy {
    /// Files anywhere the server can read (`secure_file_priv = ''`; MariaDB's default,
    /// and not a safe one).
    Anywhere,
    /// Only files inside this directory (canonical).
    Inside(PathBuf),
    /// No server-side file reads at all (`secure_file_priv = NULL`).
    Disabled,
}

impl FilePolicy {
    /// From the option's text (`None`: the default, `<datadir>/../quarry-files`, created
    /// when missing; NULL when it cannot be). A named directory must exist, as in MariaDB.
    pub fn from_setting(setting: Option<&str>, datadir: &Path) -> Result<FilePolicy> {
        let dir = match setting {
            Some("") => return Ok(FilePolicy::Anywhere),
            Some(s) if s.eq_ignore_ascii_case("NULL") => return Ok(FilePolicy::Disabled),
            Some(s) => PathBuf::from(s),
            None => {
                let parent = std::fs::canonicalize(datadir)
                    .map_err(|e| Error::io(datadir.display(), e))?
                    .parent()
                    .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                let dir = parent.join("quarry-files");
                // A default that cannot be made must not keep the server from starting:
                // then no file is read at all.
                if std::fs::create_dir_all(&dir).is_err() {
                    return Ok(FilePolicy::Disabled);
                }
                dir
            }
        };
        let dir = std::fs::canonicalize(&dir).map_err(|e| {
            Error::new(
                1,
                format!(
                    "secure_file_priv: cannot use directory {}: {e}",
                    dir.display()
                ),
            )
        })?;
        Ok(FilePolicy::Inside(dir))
    }

    /// `@@secure_file_priv` as MariaDB shows it: the directory with a trailing `/`, an
    /// empty string, or NULL.
    pub fn shown(&self) -> Value {
        match self {
            FilePolicy::Anywhere => Value::Str(String::new()),
            FilePolicy::Inside(d) => Value::Str(format!("{}/", d.display())),
            FilePolicy::Disabled => Value::Null,
        }
    }

    /// The file a statement names, resolved (a relative name is in the database's
    /// directory `base`, as MariaDB reads it), if the policy lets the server read or
    /// write it there: else 1290. Symbolic links and `..` are followed before the check.
    pub fn allowed(&self, name: &str, base: &Path) -> Result<PathBuf> {
        let path = base.join(name);
        let inside = match self {
            FilePolicy::Anywhere => return Ok(path),
            FilePolicy::Disabled => None,
            FilePolicy::Inside(dir) => Some(dir),
        };
        // A file that does not exist is checked by its directory.
        let real = match std::fs::canonicalize(&path) {
            Ok(p) => Some(p),
            Err(_) => path
                .parent()
                .and_then(|p| std::fs::canonicalize(p).ok())
                .zip(path.file_name())
                .map(|(p, f)| p.join(f)),
        };
        match (inside, real) {
            (Some(dir), Some(real)) if real.starts_with(dir) => Ok(real),
            _ => Err(Error::secure_file_priv()),
        }
    }
}
