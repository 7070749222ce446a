//! System variables: defaults, and the ones a session may change.

use quarry_common::Value;

pub const VERSION: &str = "10.11.19-MariaDB-Quarry-0.1.0";

/// (name, default) for every variable `SELECT @@x` and `SHOW VARIABLES` know.
pub fn defaults() -> Vec<(&'static str, Value)> {
    let s = |x: &str| Value::Str(x.to_string());
    let i = Value::Int;
    vec![
        ("auto_increment_increment", i(1)),
        ("auto_increment_offset", i(1)),
        ("autocommit", i(1)),
        ("character_set_client", s("utf8mb4")),
        ("character_set_connection", s("utf8mb4")),
        ("character_set_database", s("utf8mb4")),
        ("character_set_results", s("utf8mb4")),
        ("character_set_server", s("utf8mb4")),
        ("connect_timeout", i(10)),
        ("collation_connection", s("utf8mb4_general_ci")),
        ("collation_database", s("utf8mb4_general_ci")),
        ("collation_server", s("utf8mb4_general_ci")),
        ("default_storage_engine", s("InnoDB")),
        ("div_precision_increment", i(4)),
        ("group_concat_max_len", i(1 << 20)),
        // MySQL's connection_control plugin (failed-login throttling), always on here.
        ("connection_control_failed_connections_threshold", i(3)),
        ("connection_control_min_connection_delay", i(1000)),
        ("connection_control_max_connection_delay", i(2147483647)),
        // TLS: YES once the server has a certificate (quarry-server's tls.rs sets these).
        ("have_ssl", s("DISABLED")),
        ("have_openssl", s("DISABLED")),
        ("ssl_cert", s("")),
        ("ssl_key", s("")),
        ("ssl_ca", s("")),
        ("tls_version", s("TLSv1.2,TLSv1.3")),
        ("require_secure_transport", i(0)),
        ("innodb_flush_log_at_trx_commit", i(1)),
        ("innodb_lock_wait_timeout", i(50)),
        // Seconds a statement waits for another session's LOCK TABLES or global read lock.
        ("lock_wait_timeout", i(86400)),
        ("interactive_timeout", i(28800)),
        // CHECK constraints are tested on the rows statements write (0: skipped, as for a
        // dump's restore).
        ("check_constraint_checks", i(1)),
        // FOREIGN KEYs are checked and their ON DELETE / ON UPDATE actions taken (0: not,
        // as a dump's restore sets it).
        ("foreign_key_checks", i(1)),
        ("unique_checks", i(1)),
        // UPDATE and DELETE must find their rows through a key (or, but for a DELETE
        // without WHERE, carry a LIMIT): 1175 otherwise, as MariaDB.
        ("sql_safe_updates", i(0)),
        // Notes (DROP TABLE IF EXISTS of a missing table, …) become warnings (0: not).
        ("sql_notes", i(1)),
        // Accepted; SHOW CREATE always quotes names (COMPAT.md).
        ("sql_quote_show_create", i(1)),
        // Writes by accounts without READ ONLY ADMIN (or SUPER) are refused (1290).
        ("read_only", i(0)),
        // What tools read at connect, as they are here: no binary log (issue 23), no
        // event scheduler, one server, names never resolved, a file set per table.
        ("innodb_version", s("10.11.19")),
        ("protocol_version", i(10)),
        ("server_id", i(1)),
        ("log_bin", i(0)),
        // The operator logs (`oplog`): off, as MariaDB's; the files' default names (in
        // the datadir) are set when it opens.
        ("general_log", i(0)),
        ("general_log_file", s("quarry.log")),
        ("slow_query_log", i(0)),
        ("slow_query_log_file", s("quarry-slow.log")),
        ("long_query_time", Value::Decimal(quarry_common::Decimal::new(10_000_000, 6))),
        ("log_queries_not_using_indexes", i(0)),
        ("log_slow_verbosity", s("")),
        ("log_output", s("FILE")),
        ("log_warnings", i(2)),
        ("log_error", s("")),
        ("sql_log_bin", i(1)),
        ("binlog_format", s("MIXED")),
        ("gtid_domain_id", i(0)),
        ("gtid_current_pos", s("")),
        ("gtid_binlog_pos", s("")),
        ("gtid_slave_pos", s("")),
        ("gtid_strict_mode", i(0)),
        ("lc_messages", s("en_US")),
        ("event_scheduler", s("OFF")),
        ("skip_name_resolve", i(1)),
        ("innodb_file_per_table", i(1)),
        ("basedir", s("")),
        ("tmpdir", s("")),
        ("license", s("Apache-2.0")),
        ("lower_case_table_names", i(0)),
        ("max_allowed_packet", i(16 * 1024 * 1024)),
        // Idle tables kept open at the most (the catalog closes the least recently used).
        ("table_open_cache", i(quarry_catalog::TABLE_OPEN_CACHE as i64)),
        // Seconds a statement may run (0: no limit), as MariaDB; fractions allowed.
        ("max_statement_time", Value::Double(0.0)),
        ("max_connections", i(151)),
        // Rounds a recursive CTE runs at the most (warning 1931 past them), as MariaDB.
        ("max_recursive_iterations", i(1000)),
        // Failed handshakes in a row before a host is refused (1129) until FLUSH HOSTS.
        ("max_connect_errors", i(100)),
        // Days a password lasts for accounts with PASSWORD EXPIRE DEFAULT (0: for ever).
        ("default_password_lifetime", i(0)),
        ("max_heap_table_size", i(16 * 1024 * 1024)),
        ("net_buffer_length", i(16384)),
        ("net_write_timeout", i(60)),
        ("performance_schema", i(0)),
        ("port", i(3306)),
        // A connection idle this long gives its thread back until it speaks again
        // (0: it keeps its thread).
        ("quarry_idle_thread_timeout_ms", i(2000)),
        // Changes are refused (1021) while the datadir's disk has less free than this
        // (unset, at most a sixteenth of the disk): room for rollbacks, checkpoints, DROP.
        ("quarry_disk_keep_free", i(quarry_storage::DEFAULT_KEEP_FREE as i64)),
        ("quarry_sort_buffer_size", i(64 * 1024 * 1024)),
        ("quarry_join_buffer_size", i(128 * 1024 * 1024)),
        // Aggregates over a whole-table scan evaluated on column vectors where they can
        // be (OFF: always row at a time; the answers are the same).
        ("quarry_vector_execution", i(1)),
        // A hash join hands its build side's integer keys to the scan feeding its probe
        // side, which leaves out rows that cannot match (OFF: every row is read).
        ("quarry_runtime_filters", i(1)),
        // EXPLAIN FORMAT=TREE shows each SELECT block's plan after each rewrite of the
        // planner before the plan (a Quarry tool; the golden plan tests read it).
        ("quarry_explain_passes", i(0)),
        ("read_buffer_size", i(128 * 1024)),
        ("socket", s("")),
        ("sort_buffer_size", i(2 * 1024 * 1024)),
        ("sql_auto_is_null", i(0)),
        ("sql_mode", s("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION")),
        ("sql_select_limit", Value::UInt(u64::MAX)),
        ("storage_engine", s("InnoDB")),
        ("system_time_zone", s("UTC")),
        ("time_zone", s("SYSTEM")),
        ("tmp_table_size", i(16 * 1024 * 1024)),
        ("transaction_isolation", s("REPEATABLE-READ")),
        ("tx_isolation", s("REPEATABLE-READ")),
        ("tx_read_only", i(0)),
        ("transaction_read_only", i(0)),
        ("version", s(VERSION)),
        ("version_comment", s("Quarry MySQL-compatible server")),
        ("version_compile_machine", s("x86_64")),
        ("version_compile_os", s("Linux")),
        ("wait_timeout", i(28800)),
        ("net_write_timeout", i(60)),
        ("warning_count", i(0)),
        ("error_count", i(0)),
        ("init_connect", s("")),
        ("license_key", s("")),
        ("query_cache_type", s("OFF")),
        ("query_cache_size", i(0)),
        ("last_insert_id", i(0)),
        ("identity", i(0)),
        ("hostname", s("localhost")),
        ("datadir", s("")),
        ("local_infile", i(1)),
        ("in_transaction", i(0)),
        ("session_track_schema", i(1)),
        ("transaction_alloc_block_size", i(8192)),
        ("optimizer_switch", s("engine_condition_pushdown=on")),
    ]
}

/// Normalise `@@session.x`, `SESSION x`, `@@x` to the bare lowercase name.
pub fn normalise(name: &str) -> (String, Option<bool>) {
    let mut n = name.trim().trim_start_matches("@@").to_ascii_lowercase();
    let mut global = None;
    for (p, g) in [("session.", false), ("local.", false), ("global.", true)] {
        if let Some(rest) = n.strip_prefix(p) {
            n = rest.to_string();
            global = Some(g);
        }
    }
    (n.trim_matches('`').to_string(), global)
}
