//! The one error type of Quarry and its single mapping to MySQL error numbers and SQLSTATE.
//!
//! Every layer returns [`Error`]; the protocol layer turns it into an ERR packet with
//! [`Error::code`] and [`Error::sqlstate`]. Constructors are named after the MySQL condition
//! so call sites read like the MySQL manual (`Error::no_such_table(db, t)`).

use std::fmt;

/// A MySQL-visible error: number, SQLSTATE and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: u16,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: u16, message: impl Into<String>) -> Error {
        Error {
            code,
            message: message.into(),
        }
    }

    /// SQLSTATE for the error number, as MariaDB sends it.
    pub fn sqlstate(&self) -> &'static str {
        match self.code {
            1040 => "08004",
            1045 | 1133 => "28000",
            1046 => "3D000",
            1044 | 1049 | 1061 | 1064 | 1065 | 1066 | 1068 | 1072 | 1075 | 1090 | 1091 | 1102
            | 1103 | 1110 | 1113 | 1115 | 1141 | 1142 | 1143 | 1144 | 1147 | 1149 | 1172 | 1226
            | 1227 | 1231 | 1232 | 1235 | 1239 | 1248 | 1286 | 1305 | 1425 | 1426 | 1427 | 1701 => {
                "42000"
            }
            1050 => "42S01",
            1051 | 1109 | 1146 | 4092 => "42S02",
            1060 => "42S21",
            1054 => "42S22",
            1022 | 1048 | 1052 | 1062 | 1451 | 1452 | 4025 => "23000",
            1058 | 1136 => "21S01",
            1222 | 1241 | 1242 => "21000",
            1264 | 1690 => "22003",
            1292 | 1366 | 1411 => "22007",
            1406 => "22001",
            1365 => "22012",
            1265 => "01000",
            1317 => "70100",
            1213 => "40001",
            1959 => "OP000",
            1792 => "25006",
            1047 | 1153 => "08S01",
            _ => "HY000",
        }
    }

    /// 1031: e.g. ALTER TABLE … DISABLE KEYS on an engine that has no such mode.
    pub fn engine_lacks_option(engine: &str, db: &str, table: &str) -> Error {
        Error::new(
            1031,
            format!(
                "Storage engine {engine} of the table `{db}`.`{table}` doesn't have this option"
            ),
        )
    }

    pub fn syntax(msg: impl fmt::Display) -> Error {
        Error::new(1064, format!("You have an error in your SQL syntax; {msg}"))
    }
    pub fn syntax_near(near: &str) -> Error {
        let near: String = near.chars().take(80).collect();
        Error::new(
            1064,
            format!("You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '{near}'"),
        )
    }
    /// [`Error::syntax_near`] with the line the text starts on, as MariaDB's parser says.
    pub fn syntax_near_line(near: &str, line: usize) -> Error {
        let mut e = Error::syntax_near(near);
        e.message.push_str(&format!(" at line {line}"));
        e
    }
    /// A prepared statement's parameters do not fit it (their number, or a LIMIT that is
    /// negative or past BIGINT UNSIGNED).
    pub fn wrong_execute_arguments() -> Error {
        Error::new(1210, "Incorrect arguments to EXECUTE")
    }
    /// `sql_safe_updates` refuses an UPDATE or DELETE that would scan the whole table.
    pub fn safe_update_without_key() -> Error {
        Error::new(
            1175,
            "You are using safe update mode and you tried to update a table without a WHERE that uses a KEY column",
        )
    }
    pub fn must_set_password() -> Error {
        Error::new(
            1820,
            "You must SET PASSWORD before executing this statement",
        )
    }
    pub fn account_locked() -> Error {
        Error::new(4151, "Access denied, this account is locked")
    }
    pub fn user_connections(user: &str, limit: usize) -> Error {
        Error::new(
            1226,
            format!(
                "User '{user}' has exceeded the 'max_user_connections' resource (current value: {limit})"
            ),
        )
    }
    pub fn secure_file_priv() -> Error {
        Error::new(
            1290,
            "The MariaDB server is running with the --secure-file-priv option so it cannot execute this statement",
        )
    }
    /// `read_only` is on and the account lacks READ ONLY ADMIN.
    pub fn read_only_server() -> Error {
        Error::new(
            1290,
            "The MariaDB server is running with the --read-only option so it cannot execute this statement",
        )
    }
    pub fn unsupported(what: impl fmt::Display) -> Error {
        Error::new(
            1235,
            format!("This version of Quarry doesn't yet support '{what}'"),
        )
    }
    pub fn internal(msg: impl fmt::Display) -> Error {
        Error::new(1105, format!("Unknown error: {msg}"))
    }
    /// An I/O failure on `context` (a file, or what was being read). A path is named by
    /// its last two parts (`./db/t.qrd`, as MariaDB names `./db/t.frm`): messages go to
    /// clients, who have no business with the server's directories.
    pub fn io(context: impl fmt::Display, e: std::io::Error) -> Error {
        let context = short_path(&context.to_string());
        if e.raw_os_error() == Some(28) {
            return Error::disk_full(&context);
        }
        Error::new(
            1030,
            format!("Got error {e} from storage engine ({context})"),
        )
    }
    /// 1021: no space for a write on `what` (a file, or why the server keeps space back).
    pub fn disk_full(what: &str) -> Error {
        Error::new(
            1021,
            format!("Disk full ({what}); waiting for someone to free some space"),
        )
    }
    /// The disk had no space for a write (ENOSPC: 1021).
    pub fn is_disk_full(&self) -> bool {
        self.code == 1021
    }
    pub fn db_access_denied(user: &str, host: &str, db: &str) -> Error {
        Error::new(
            1044,
            format!("Access denied for user '{user}'@'{host}' to database '{db}'"),
        )
    }
    /// 1142: `what` (SELECT, DROP, …) refused on a table.
    pub fn table_access_denied(what: &str, user: &str, host: &str, db: &str, table: &str) -> Error {
        Error::new(
            1142,
            format!("{what} command denied to user '{user}'@'{host}' for table `{db}`.`{table}`"),
        )
    }
    /// 1143: `what` refused on one column of a table.
    pub fn column_access_denied(
        what: &str,
        user: &str,
        host: &str,
        column: &str,
        table: &str,
    ) -> Error {
        Error::new(
            1143,
            format!(
                "{what} command denied to user '{user}'@'{host}' for column '{column}' in table '{table}'"
            ),
        )
    }
    /// 1227: a statement that needs one of the global privileges `names`.
    pub fn need_privilege(names: &str) -> Error {
        Error::new(
            1227,
            format!("Access denied; you need (at least one of) the {names} privilege(s) for this operation"),
        )
    }
    /// 1045 without a login: what MariaDB answers LOAD DATA INFILE without FILE.
    pub fn access_denied(user: &str, host: &str) -> Error {
        Error::new(
            1045,
            format!("Access denied for user '{user}'@'{host}' (using password: YES)"),
        )
    }
    /// 1129: `max_connect_errors` failed handshakes from `host`.
    pub fn host_blocked(host: &str) -> Error {
        Error::new(
            1129,
            format!("Host '{host}' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'"),
        )
    }
    /// 1356: a DEFINER view whose definer may not read what it reads.
    pub fn view_lacks_rights(db: &str, view: &str) -> Error {
        Error::new(
            1356,
            format!("View '{db}.{view}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them"),
        )
    }
    /// 1449: a DEFINER view whose definer account is gone.
    pub fn no_such_definer(user: &str, host: &str) -> Error {
        Error::new(
            1449,
            format!("The user specified as a definer ('{user}'@'{host}') does not exist"),
        )
    }
    pub fn not_thread_owner(id: u64) -> Error {
        Error::new(1095, format!("You are not owner of thread {id}"))
    }
    pub fn no_such_grant(user: &str, host: &str) -> Error {
        Error::new(
            1141,
            format!("There is no such grant defined for user '{user}' on host '{host}'"),
        )
    }
    pub fn no_such_table_grant(user: &str, host: &str, table: &str) -> Error {
        Error::new(
            1147,
            format!(
                "There is no such grant defined for user '{user}' on host '{host}' on table '{table}'"
            ),
        )
    }
    /// 1221: a privilege only `*.*` may hold, granted on a database.
    pub fn db_grant_of_global() -> Error {
        Error::new(1221, "Incorrect usage of DB GRANT and GLOBAL PRIVILEGES")
    }
    /// 1144: a privilege a table cannot hold, granted on one.
    pub fn illegal_grant() -> Error {
        Error::new(
            1144,
            "Illegal GRANT/REVOKE command; please consult the manual to see which privileges can be used",
        )
    }
    /// 1396: an account statement's operation on `who` (`'u'@'h'`, or a role's `'r'`).
    pub fn operation_failed(op: &str, who: &str) -> Error {
        Error::new(1396, format!("Operation {op} failed for {who}"))
    }
    pub fn invalid_role(role: &str) -> Error {
        Error::new(1959, format!("Invalid role specification `{role}`"))
    }
    pub fn incorrect_db_name(db: &str) -> Error {
        Error::new(1102, format!("Incorrect database name '{db}'"))
    }
    /// Expressions or queries nested past what a statement's stack holds.
    pub fn too_deep(limit: usize) -> Error {
        Error::new(
            1436,
            format!(
                "Thread stack overrun: expressions and queries nest at most {limit} levels \
                 deep (a chain of operators or UNIONs counts a level each)"
            ),
        )
    }
    pub fn not_unique_table(name: &str) -> Error {
        Error::new(1066, format!("Not unique table/alias: '{name}'"))
    }
    pub fn union_column_count() -> Error {
        Error::new(
            1222,
            "The used SELECT statements have a different number of columns",
        )
    }
    pub fn no_recursive_anchors(name: &str) -> Error {
        Error::new(
            4005,
            format!("No anchors for recursive WITH element '{name}'"),
        )
    }
    pub fn duplicate_query_name(name: &str) -> Error {
        Error::new(
            4004,
            format!("Duplicate query name `{name}` in WITH clause"),
        )
    }
    pub fn with_column_count() -> Error {
        Error::new(
            4002,
            "WITH column list and SELECT field list have different column counts",
        )
    }
    /// 4009
    pub fn unknown_window(name: &str) -> Error {
        Error::new(
            4009,
            format!("Window specification with name '{name}' is not defined"),
        )
    }
    /// 4010
    pub fn duplicate_window(name: &str) -> Error {
        Error::new(
            4010,
            format!("Multiple window specifications with the same name '{name}'"),
        )
    }
    /// 4011
    pub fn partition_in_referencing_window(name: &str) -> Error {
        Error::new(
            4011,
            format!(
                "Window specification referencing another one '{name}' cannot contain partition list"
            ),
        )
    }
    /// 4012
    pub fn order_in_referenced_window(name: &str) -> Error {
        Error::new(
            4012,
            format!("Referenced window specification '{name}' already contains order list"),
        )
    }
    /// 4013
    pub fn frame_in_referenced_window(name: &str) -> Error {
        Error::new(
            4013,
            format!("Referenced window specification '{name}' cannot contain window frame"),
        )
    }
    /// 4014
    pub fn bad_frame_bounds() -> Error {
        Error::new(
            4014,
            "Unacceptable combination of window frame bound specifications",
        )
    }
    /// 4015
    pub fn window_function_placement() -> Error {
        Error::new(
            4015,
            "Window function is allowed only in SELECT list and ORDER BY clause",
        )
    }
    /// 4017
    pub fn frame_not_allowed(func: &str) -> Error {
        Error::new(4017, format!("Window frame is not allowed with '{func}'"))
    }
    /// 4018
    pub fn window_needs_order(func: &str) -> Error {
        Error::new(
            4018,
            format!("No order list in window specification for '{func}'"),
        )
    }
    /// 4019
    pub fn range_frame_order() -> Error {
        Error::new(
            4019,
            "RANGE-type frame requires ORDER BY clause with single sort key",
        )
    }
    /// 4020
    pub fn rows_frame_integer() -> Error {
        Error::new(4020, "Integer is required for ROWS-type frame")
    }
    /// 4021
    pub fn range_frame_numeric() -> Error {
        Error::new(4021, "Numeric datatype is required for RANGE-type frame")
    }
    /// 4022
    pub fn frame_exclusion() -> Error {
        Error::new(4022, "Frame exclusion is not supported yet")
    }
    /// 4024
    pub fn ntile_argument() -> Error {
        Error::new(4024, "Argument of NTILE must be greater than 0")
    }
    /// 4074
    pub fn window_in_aggregate() -> Error {
        Error::new(
            4074,
            "Window functions can not be used as arguments to group functions.",
        )
    }
    pub fn view_recursion(db: &str, view: &str) -> Error {
        Error::new(1462, format!("`{db}`.`{view}` contains view recursion"))
    }
    pub fn too_many_tables(limit: usize) -> Error {
        Error::new(
            1116,
            format!("Too many tables; MariaDB can only use {limit} tables in a join"),
        )
    }
    pub fn unknown_charset(name: &str) -> Error {
        Error::new(1115, format!("Unknown character set: '{name}'"))
    }
    pub fn unknown_view(names: &str) -> Error {
        Error::new(4092, format!("Unknown VIEW: '{names}'"))
    }
    /// A definition file that cannot be read (`file` as MariaDB names it: `./db/t.frm`).
    pub fn incorrect_file(file: impl fmt::Display, why: &str) -> Error {
        Error::new(
            1033,
            format!("Incorrect information in file: '{file}' ({why})"),
        )
    }
    pub fn corrupt(what: impl fmt::Display) -> Error {
        let what = shorten_paths(&what.to_string());
        Error::new(
            1034,
            format!("Index for table '{what}' is corrupt; try to repair it"),
        )
    }
    pub fn no_database() -> Error {
        Error::new(1046, "No database selected")
    }
    pub fn unknown_database(db: &str) -> Error {
        Error::new(1049, format!("Unknown database '{db}'"))
    }
    pub fn database_exists(db: &str) -> Error {
        Error::new(
            1007,
            format!("Can't create database '{db}'; database exists"),
        )
    }
    pub fn drop_missing_database(db: &str) -> Error {
        Error::new(
            1008,
            format!("Can't drop database '{db}'; database doesn't exist"),
        )
    }
    pub fn no_such_table(db: &str, table: &str) -> Error {
        Error::new(1146, format!("Table '{db}.{table}' doesn't exist"))
    }
    pub fn unknown_table(name: &str) -> Error {
        Error::new(1051, format!("Unknown table '{name}'"))
    }
    pub fn table_exists(table: &str) -> Error {
        Error::new(1050, format!("Table '{table}' already exists"))
    }
    pub fn unknown_column(col: &str, clause: &str) -> Error {
        Error::new(1054, format!("Unknown column '{col}' in '{clause}'"))
    }
    pub fn ambiguous_column(col: &str, clause: &str) -> Error {
        Error::new(1052, format!("Column '{col}' in {clause} is ambiguous"))
    }
    pub fn duplicate_column(col: &str) -> Error {
        Error::new(1060, format!("Duplicate column name '{col}'"))
    }
    pub fn duplicate_key(key: &str, index: &str) -> Error {
        Error::new(1062, format!("Duplicate entry '{key}' for key '{index}'"))
    }
    pub fn column_count_mismatch(row: usize) -> Error {
        Error::new(
            1136,
            format!("Column count doesn't match value count at row {row}"),
        )
    }
    pub fn not_null(col: &str) -> Error {
        Error::new(1048, format!("Column '{col}' cannot be null"))
    }
    pub fn no_default(col: &str) -> Error {
        Error::new(1364, format!("Field '{col}' doesn't have a default value"))
    }
    pub fn out_of_range(col: &str, row: usize) -> Error {
        Error::new(
            1264,
            format!("Out of range value for column '{col}' at row {row}"),
        )
    }
    pub fn data_too_long(col: &str, row: usize) -> Error {
        Error::new(
            1406,
            format!("Data too long for column '{col}' at row {row}"),
        )
    }
    /// A date or time column given text that is no date or time (1292, as MariaDB).
    pub fn incorrect_temporal(kind: &str, value: &str, col: &str, row: usize) -> Error {
        Error::new(
            1292,
            format!("Incorrect {kind} value: '{value}' for column `{col}` at row {row}"),
        )
    }
    pub fn data_truncated(col: &str, row: usize) -> Error {
        Error::new(
            1265,
            format!("Data truncated for column '{col}' at row {row}"),
        )
    }
    pub fn incorrect_value(kind: &str, value: &str, col: &str, row: usize) -> Error {
        Error::new(
            1366,
            format!("Incorrect {kind} value: '{value}' for column `{col}` at row {row}"),
        )
    }
    /// 1525: a value of the wrong kind outside a column (`Incorrect DAY value: '0'`).
    pub fn wrong_value(kind: &str, value: &str) -> Error {
        Error::new(1525, format!("Incorrect {kind} value: '{value}'"))
    }
    pub fn unknown_engine(name: &str) -> Error {
        Error::new(1286, format!("Unknown storage engine '{name}'"))
    }
    pub fn unknown_system_variable(name: &str) -> Error {
        Error::new(1193, format!("Unknown system variable '{name}'"))
    }
    /// SET SESSION of a variable that has only a global value.
    pub fn global_only_variable(name: &str) -> Error {
        Error::new(
            1229,
            format!("Variable '{name}' is a GLOBAL variable and should be set with SET GLOBAL"),
        )
    }
    pub fn wrong_value_for_variable(name: &str, value: &str) -> Error {
        Error::new(
            1231,
            format!("Variable '{name}' can't be set to the value of '{value}'"),
        )
    }
    pub fn wrong_type_for_variable(name: &str) -> Error {
        Error::new(
            1232,
            format!("Incorrect argument type to variable '{name}'"),
        )
    }
    pub fn read_only_variable(name: &str) -> Error {
        Error::new(1238, format!("Variable '{name}' is a read only variable"))
    }
    pub fn unknown_function(name: &str) -> Error {
        Error::new(1305, format!("FUNCTION {name} does not exist"))
    }
    pub fn subquery_rows() -> Error {
        Error::new(1242, "Subquery returns more than 1 row")
    }
    pub fn operand_columns(n: usize) -> Error {
        Error::new(1241, format!("Operand should contain {n} column(s)"))
    }
    pub fn invalid_group() -> Error {
        Error::new(1111, "Invalid use of group function")
    }
    pub fn too_big_precision(name: &str, max: u32) -> Error {
        Error::new(
            1426,
            format!("Too big precision specified for '{name}'. Maximum is {max}"),
        )
    }
    pub fn too_big_scale(name: &str, max: u8) -> Error {
        Error::new(
            1425,
            format!("Too big scale specified for '{name}'. Maximum is {max}"),
        )
    }
    pub fn scale_above_precision(name: &str) -> Error {
        Error::new(
            1427,
            format!(
                "For float(M,D), double(M,D) or decimal(M,D), M must be >= D (column '{name}')"
            ),
        )
    }
    /// A child row whose parent a FOREIGN KEY does not find (`fk`: the key as errors
    /// describe it, "`db`.`child`, CONSTRAINT `name` FOREIGN KEY …").
    pub fn fk_no_parent(fk: &str) -> Error {
        Error::new(
            1452,
            format!("Cannot add or update a child row: a foreign key constraint fails ({fk})"),
        )
    }
    /// A parent row (or table) a FOREIGN KEY's RESTRICT keeps.
    pub fn fk_has_children(fk: Option<&str>) -> Error {
        let mut m =
            "Cannot delete or update a parent row: a foreign key constraint fails".to_string();
        if let Some(fk) = fk {
            m.push_str(&format!(" ({fk})"));
        }
        Error::new(1451, m)
    }
    /// A FOREIGN KEY that names a missing table or column, or an unusable one (InnoDB's
    /// errno 150).
    pub fn fk_malformed(db: &str, table: &str) -> Error {
        Error::new(
            1005,
            format!("Can't create table `{db}`.`{table}` (errno: 150 \"Foreign key constraint is incorrectly formed\")"),
        )
    }
    /// A FOREIGN KEY name another table of the database has (InnoDB's errno 121).
    pub fn fk_duplicate_name(db: &str, table: &str) -> Error {
        Error::new(
            1005,
            format!("Can't create table `{db}`.`{table}` (errno: 121 \"Duplicate key on write or update\")"),
        )
    }
    /// Cascades that went deeper than InnoDB's 15 levels (its error 193).
    pub fn fk_cascade_too_deep(fk: &str, engine: &str) -> Error {
        Error::new(1296, format!("Got error 193 '{fk}' from {engine}"))
    }
    pub fn fk_truncate_parent(fk: &str) -> Error {
        Error::new(
            1701,
            format!("Cannot truncate a table referenced in a foreign key constraint ({fk})"),
        )
    }
    pub fn fk_index_needed(index: &str) -> Error {
        Error::new(
            1553,
            format!("Cannot drop index '{index}': needed in a foreign key constraint"),
        )
    }
    /// A column whose type a FOREIGN KEY fixes (`of_table`: the child, when the column
    /// is the parent's).
    pub fn fk_column_in_use(column: &str, fk: &str, of_table: Option<&str>) -> Error {
        match of_table {
            None => Error::new(
                1832,
                format!("Cannot change column '{column}': used in a foreign key constraint '{fk}'"),
            ),
            Some(t) => Error::new(
                1833,
                format!("Cannot change column '{column}': used in a foreign key constraint '{fk}' of table '{t}'"),
            ),
        }
    }
    /// A row a CHECK constraint makes FALSE (MariaDB's 4025).
    pub fn check_failed(name: &str, db: &str, table: &str) -> Error {
        Error::new(
            4025,
            format!("CONSTRAINT `{name}` failed for `{db}`.`{table}`"),
        )
    }
    pub fn bigint_out_of_range(kind: &str, expr: &str) -> Error {
        Error::new(1690, format!("{kind} value is out of range in '{expr}'"))
    }
    pub fn packet_too_large() -> Error {
        Error::new(1153, "Got a packet bigger than 'max_allowed_packet' bytes")
    }
    /// LOAD DATA LOCAL when the client did not offer its files (or there is no client).
    pub fn local_infile_refused() -> Error {
        Error::new(
            1148,
            "The used command is not allowed with this MariaDB version",
        )
    }
    pub fn query_interrupted() -> Error {
        Error::new(1317, "Query execution was interrupted")
    }
    /// `max_statement_time` ran out (MariaDB's code).
    pub fn statement_timeout() -> Error {
        Error::new(
            1969,
            "Query execution was interrupted (max_statement_time exceeded)",
        )
    }
    /// A `MAX_EXECUTION_TIME(ms)` hint ran out (MySQL's code; MariaDB has no such hint).
    pub fn execution_time_exceeded() -> Error {
        Error::new(
            3024,
            "Query execution was interrupted, maximum statement execution time exceeded",
        )
    }
    pub fn record_too_long(limit: usize) -> Error {
        Error::new(
            1153,
            format!("Got a record bigger than 'max_allowed_packet' ({limit}) bytes"),
        )
    }
    /// A table the session's LOCK TABLES did not name (under the name it is used by).
    pub fn table_not_locked(name: &str) -> Error {
        Error::new(
            1100,
            format!("Table '{name}' was not locked with LOCK TABLES"),
        )
    }
    pub fn table_locked_for_read(name: &str) -> Error {
        Error::new(
            1099,
            format!("Table '{name}' was locked with a READ lock and can't be updated"),
        )
    }
    /// A write by the session holding the global read lock.
    pub fn read_lock_conflict() -> Error {
        Error::new(
            1223,
            "Can't execute the query because you have a conflicting read lock",
        )
    }
    pub fn locked_tables_or_transaction() -> Error {
        Error::new(
            1192,
            "Can't execute the given command because you have active locked tables or an active transaction",
        )
    }
    pub fn division_by_zero() -> Error {
        Error::new(1365, "Division by 0")
    }
    pub fn lock_wait_timeout() -> Error {
        Error::new(
            1205,
            "Lock wait timeout exceeded; try restarting transaction",
        )
    }
    pub fn wrong_arguments(func: &str) -> Error {
        Error::new(
            1582,
            format!("Incorrect parameter count in the call to native function '{func}'"),
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            self.sqlstate(),
            self.message
        )
    }
}

impl std::error::Error for Error {}

/// Shorthand for an early return with a MySQL error.
#[macro_export]
macro_rules! bail {
    ($e:expr) => {
        return Err($e)
    };
}

/// Every absolute path in `s` by its last two parts.
fn shorten_paths(s: &str) -> String {
    s.split(' ')
        .map(|w| {
            let lead = w.len() - w.trim_start_matches(['(', '\'']).len();
            if w[lead..].starts_with('/') {
                format!("{}{}", &w[..lead], short_path(&w[lead..]))
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn short_path(s: &str) -> String {
    if !s.starts_with('/') {
        return s.to_string();
    }
    let parts: Vec<&str> = s.rsplit('/').filter(|p| !p.is_empty()).take(2).collect();
    let tail: Vec<&str> = parts.into_iter().rev().collect();
    format!("./{}", tail.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_do_not_show_server_paths() {
        let e = Error::io(
            "/var/lib/quarry/data/shop/items.qrd",
            std::io::Error::from_raw_os_error(28),
        );
        assert_eq!(e.code, 1021);
        assert!(e.message.contains("(./shop/items.qrd)"), "{}", e.message);
        assert!(!e.message.contains("/var/lib"), "{}", e.message);
        let e = Error::corrupt("/srv/q/d/t.cols: chunk of column a has 3 rows, its segment 4");
        assert_eq!(
            e.message,
            "Index for table './d/t.cols: chunk of column a has 3 rows, its segment 4' is \
             corrupt; try to repair it"
        );
        let e = Error::io("LOAD DATA input", std::io::Error::from_raw_os_error(5));
        assert!(e.message.contains("(LOAD DATA input)"), "{}", e.message);
    }

    /// SQLSTATEs MariaDB 10.11 sent for these codes (provoked one by one); JDBC and
    /// SQLAlchemy classify errors by them. 1054, 1193 and 1364 were wrong.
    #[test]
    fn sqlstates_are_mariadbs() {
        for (code, state) in [
            (1007, "HY000"),
            (1048, "23000"),
            (1052, "23000"),
            (1054, "42S22"),
            (1060, "42S21"),
            (1061, "42000"),
            (1062, "23000"),
            (1066, "42000"),
            (1068, "42000"),
            (1072, "42000"),
            (1075, "42000"),
            (1090, "42000"),
            (1091, "42000"),
            (1094, "HY000"),
            (1111, "HY000"),
            (1193, "HY000"),
            (1222, "21000"),
            (1231, "42000"),
            (1241, "21000"),
            (1242, "21000"),
            (1305, "42000"),
            (1364, "HY000"),
            (1451, "23000"),
            (1452, "23000"),
            (4025, "23000"),
        ] {
            assert_eq!(Error::new(code, "").sqlstate(), state, "error {code}");
        }
    }
}
