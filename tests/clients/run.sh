#!/usr/bin/env bash
# Real-client compatibility suite: the mariadb CLI, PyMySQL, Perl DBI (server-side
# prepare) and sysbench's scripts against a release `quarry serve` on an ephemeral port.
# Installs what it needs with apt when missing. Fails on any client error.
set -euo pipefail
cd "$(dirname "$0")/../.."

need=()
command -v mariadb >/dev/null || need+=(mariadb-client)
command -v sysbench >/dev/null || need+=(sysbench)
command -v mydumper >/dev/null || need+=(mydumper)
command -v mariadb-install-db >/dev/null || need+=(mariadb-server)
command -v javac >/dev/null || need+=(default-jdk-headless)
[ -f /usr/share/java/mariadb-java-client.jar ] || need+=(libmariadb-java)
command -v npm >/dev/null || need+=(nodejs npm)
command -v pt-query-digest >/dev/null || need+=(percona-toolkit)
perl -MDBD::MariaDB -e1 2>/dev/null || need+=(libdbd-mariadb-perl)
python3 -c 'import pymysql' 2>/dev/null || need+=(python3-pymysql)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -c 'import pymysql' 2>/dev/null || pip install -q PyMySQL
# MySQL 8's connector, for caching_sha2_password (security.py).
python3 -c 'import mysql.connector' 2>/dev/null || pip install -q mysql-connector-python
python3 -c 'import sqlalchemy' 2>/dev/null || pip install -q 'SQLAlchemy>=2'
# Prometheus' own parser of the text format reads the metrics endpoint.
python3 -c 'import prometheus_client' 2>/dev/null || pip install -q prometheus-client

cargo build --release -q -p quarry
# The README's run command: `cargo run --release -- …` from the root must start the server.
cargo run --release -q -- --version | grep -q '^quarry' || { echo "FAIL cargo run picks the quarry binary"; exit 1; }
BIN=target/release/quarry
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
$BIN serve --datadir "$WORK/data" --port "$PORT" >"$WORK/server.log" 2>&1 &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
for _ in $(seq 50); do mariadb -h127.0.0.1 -P"$PORT" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done

passed=0; failed=0
# A check's own output (its figures) is printed under its ok/FAIL line, not above it.
check() {
  local name=$1; shift
  if "$@" >"$WORK/check.out" 2>&1; then echo "ok   $name"; passed=$((passed+1)); else echo "FAIL $name"; failed=$((failed+1)); fi
  cat "$WORK/check.out"
}

M="mariadb -h127.0.0.1 -P$PORT -uroot --batch"
cli_session() {
  local out
  out=$($M <<'SQL'
CREATE DATABASE shop;
USE shop;
CREATE TABLE items (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(30) NOT NULL, price DECIMAL(8,2));
INSERT INTO items (name, price) VALUES ('tea', 2.50), ('coffee', 3.10), ('cake', 4.00);
UPDATE items SET price = price + 1 WHERE name = 'tea';
DELETE FROM items WHERE name = 'cake';
SELECT id, name, price FROM items ORDER BY id;
SHOW TABLES;
SELECT @@version_comment;
SQL
)
  local want=$'id\tname\tprice\n1\ttea\t3.50\n2\tcoffee\t3.10\nTables_in_shop\nitems\n@@version_comment\nQuarry MySQL-compatible server'
  [ "$out" = "$want" ] || { echo "got:"; echo "$out"; return 1; }
  # errors come back with MySQL codes and the server keeps serving
  { $M -e 'SELECT * FROM shop.nope' 2>&1 || true; } | grep -q 'ERROR 1146' || return 1
  { $M -e 'SELEC 1' 2>&1 || true; } | grep -q 'ERROR 1064' || return 1
  printf '1\tfrom-file\t9.99\n' >"$WORK/items.tsv"
  $M --local-infile=1 shop -e "LOAD DATA LOCAL INFILE '$WORK/items.tsv' REPLACE INTO TABLE items" || return 1
  [ "$($M -N shop -e "SELECT name FROM items WHERE id = 1")" = "from-file" ]
}
check "mariadb CLI scripted session" cli_session

pymysql_test() {
  python3 - "$PORT" <<'PY'
import sys, decimal, datetime, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", autocommit=True)
cur = c.cursor()
cur.execute("CREATE DATABASE py")
cur.execute("USE py")
cur.execute("CREATE TABLE t (id BIGINT PRIMARY KEY, d DECIMAL(10,3), f DOUBLE, s VARCHAR(20), dt DATETIME, n INT)")
cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s, %s, %s)", [(1, decimal.Decimal("1.250"), 0.5, "ä", datetime.datetime(2024, 1, 2, 3, 4, 5), None), (2, 2, 1e10, "b", None, 7)])
cur.execute("SELECT id, d, f, s, dt, n FROM t ORDER BY id")
rows = cur.fetchall()
assert rows[0] == (1, decimal.Decimal("1.250"), 0.5, "ä", datetime.datetime(2024, 1, 2, 3, 4, 5), None), rows
assert rows[1][0] == 2 and rows[1][5] == 7, rows
c.autocommit(False)
cur.execute("INSERT INTO t (id) VALUES (3)")
c.rollback()
cur.execute("SELECT count(*) FROM t")
assert cur.fetchone()[0] == 2
try:
    cur.execute("INSERT INTO t (id) VALUES (1)")
    raise SystemExit("duplicate accepted")
except pymysql.err.IntegrityError as e:
    assert e.args[0] == 1062, e
print("pymysql ok")
PY
}
check "PyMySQL" pymysql_test

sqlalchemy_orm() {
  python3 - "$PORT" <<'PY'
import sys
from sqlalchemy import create_engine, event, String, select
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, Session
class Base(DeclarativeBase): pass
class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(30))
    nick: Mapped[str] = mapped_column(String(30), server_default="anon")
e = create_engine(f"mariadb+pymysql://root@127.0.0.1:{sys.argv[1]}/py")
sent = []
event.listen(e, "before_cursor_execute", lambda conn, cur, stmt, *a: sent.append(stmt))
Base.metadata.create_all(e)
with Session(e) as s:
    s.add_all([User(name="ann"), User(name="bob")])
    s.commit()
    got = [(u.id, u.name, u.nick) for u in s.scalars(select(User).order_by(User.id))]
    assert got == [(1, "ann", "anon"), (2, "bob", "anon")], got
assert any("RETURNING" in q for q in sent), sent
print("sqlalchemy ok")
PY
}
check "SQLAlchemy 2 ORM (INSERT … RETURNING)" sqlalchemy_orm

perl_test() {
  perl - "$PORT" <<'PL'
use strict; use DBI;
my $dbh = DBI->connect("DBI:MariaDB:host=127.0.0.1;port=$ARGV[0];mariadb_server_prepare=1", "root", "", {RaiseError => 1, PrintError => 0});
$dbh->do("CREATE DATABASE pl"); $dbh->do("USE pl");
$dbh->do("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), n BIGINT)");
my $ins = $dbh->prepare("INSERT INTO t VALUES (?, ?, ?)");
$ins->execute($_, "v$_", $_ * 1000) for 1..20;
my $sel = $dbh->prepare("SELECT v, n FROM t WHERE id = ?");
for my $i (1, 7, 20) { $sel->execute($i); my ($v, $n) = $sel->fetchrow_array; die "row $i: $v $n" unless $v eq "v$i" && $n == $i * 1000; }
my ($c) = $dbh->selectrow_array("SELECT count(*) FROM t WHERE n > ?", undef, 5000);
die "count $c" unless $c == 15;
my $ret = $dbh->prepare("INSERT INTO t VALUES (?, ?, ?) RETURNING id, concat(v, '!')");
$ret->execute(100, "r", 1);
my @got = $ret->fetchrow_array;
die "returning: @got" unless "@got" eq "100 r!" && $ret->{NUM_OF_FIELDS} == 2;
print "perl ok\n";
PL
}
check "Perl DBI (server-side prepare)" perl_test

accounts() {
  $M -e "CREATE USER 'app'@'%' IDENTIFIED BY 'secret'" &&
  [ "$(mariadb -h127.0.0.1 -P"$PORT" -uapp -psecret -N -e 'SELECT 7*6')" = "42" ] &&
  ! mariadb -h127.0.0.1 -P"$PORT" -uapp -pwrong -e 'SELECT 1' 2>/dev/null &&
  ! mariadb -h127.0.0.1 -P"$PORT" -unobody -e 'SELECT 1' 2>/dev/null &&
  python3 -c "import pymysql,sys; c=pymysql.connect(host='127.0.0.1', port=int(sys.argv[1]), user='app', password='secret'); c.cursor().execute('SELECT 1')" "$PORT"
}
check "accounts: password login, wrong password and unknown user refused" accounts

$M -e 'CREATE DATABASE sbtest'
SB="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$PORT --mysql-user=root --mysql-db=sbtest --tables=1 --table-size=${SB_ROWS:-2000}"
status() { $M -N -e "SHOW GLOBAL STATUS LIKE '$1'" | cut -f2; }
# Row locks make deadlocks possible when two writers take the same random rows in
# different orders (InnoDB has them too on a 2 000-row table); sysbench retries those.
# Every error it ignored must be a deadlock the server counted — never a lock wait
# timeout or anything else — and they must stay rare.
sysbench_script() {
  local script=$1 threads=$2 log="$WORK/sb-$1-$2.log"
  sysbench "$script" $SB prepare >"$log" 2>&1 || { tail -20 "$log"; return 1; }
  local dl0 to0; dl0=$(status Innodb_deadlocks); to0=$(status Quarry_lock_wait_timeouts)
  sysbench "$script" $SB --threads="$threads" --time="${SB_TIME:-10}" run >>"$log" 2>&1 || { tail -20 "$log"; return 1; }
  local deadlocks=$(( $(status Innodb_deadlocks) - dl0 )) timeouts=$(( $(status Quarry_lock_wait_timeouts) - to0 ))
  sysbench "$script" $SB cleanup >>"$log" 2>&1 || { tail -20 "$log"; return 1; }
  local ignored events
  ignored=$(sed -n 's/.*ignored errors: *\([0-9]*\) .*/\1/p' "$log")
  events=$(sed -n 's/.*transactions: *\([0-9]*\) .*/\1/p' "$log")
  [ -n "$events" ] || events=$(sed -n 's/.*queries: *\([0-9]*\) .*/\1/p' "$log")
  if [ "$ignored" != "$deadlocks" ] || [ "$timeouts" != 0 ] || [ $((ignored * 100)) -gt "$events" ]; then
    echo "     ignored errors $ignored, deadlocks $deadlocks, lock wait timeouts $timeouts, of $events"
    return 1
  fi
  local retried=""; [ "$ignored" = 0 ] || retried=", deadlocks retried: $ignored"
  echo "     $(grep -E 'transactions:|queries:' "$log" | head -1 | tr -s ' ')$retried"
}
for s in oltp_read_write oltp_read_only oltp_write_only oltp_point_select oltp_insert oltp_update_index oltp_update_non_index oltp_delete select_random_points select_random_ranges; do
  check "sysbench $s (2 threads)" sysbench_script "$s" 2
done

# Full scans beside sysbench's writes: a scan read a record an UPDATE or INSERT was
# rewriting in place and called the table corrupt (1034 'checksum mismatch at offset').
scans_beside_writes() {
  sysbench oltp_read_write $SB prepare >"$WORK/scan-sb.log" 2>&1 || { tail -5 "$WORK/scan-sb.log"; return 1; }
  ( for _ in $(seq 2000); do
      $M -N sbtest -e 'SELECT count(*), sum(length(c)) FROM sbtest1' 2>&1 | grep -i error && break
    done ) >"$WORK/scans.log" &
  local scanner=$!
  sysbench oltp_read_write $SB --threads=2 --time="${SB_TIME:-10}" run >>"$WORK/scan-sb.log" 2>&1
  local rc=$?
  kill "$scanner" 2>/dev/null; wait "$scanner" 2>/dev/null
  sysbench oltp_read_write $SB cleanup >>"$WORK/scan-sb.log" 2>&1
  [ "$rc" = 0 ] || { grep FATAL "$WORK/scan-sb.log" | head -3; return 1; }
  if [ -s "$WORK/scans.log" ]; then head -3 "$WORK/scans.log"; return 1; fi
  echo "     $(grep -E 'transactions:' "$WORK/scan-sb.log" | head -1 | tr -s ' ')"
}
check "full scans beside sysbench oltp_read_write" scans_beside_writes

# 1 000 idle clients: once idle past quarry_idle_thread_timeout_ms (2 s) they hold no
# server thread, memory stays bounded, and every one still answers.
idle_connections() {
  $M -e 'SET GLOBAL max_connections = 1100' &&
  python3 - "$PORT" "$PID" <<'PY'
import os, sys, time, pymysql
port, pid = int(sys.argv[1]), sys.argv[2]
def threads(): return len(os.listdir(f"/proc/{pid}/task"))
def rss():
    return int([l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")][0].split()[1])
time.sleep(3)
t0, r0 = threads(), rss()
conns = [pymysql.connect(host="127.0.0.1", port=port, user="root") for _ in range(1000)]
for c in conns:
    c.cursor().execute("SELECT 1")
busy = threads()
deadline = time.time() + 20
while threads() > t0 + 5 and time.time() < deadline:
    time.sleep(0.2)
t1, r1 = threads(), rss()
per = (r1 - r0) / 1000
print(f"     1 000 idle connections: server threads {t0} -> {busy} while they spoke -> {t1} idle; RSS +{per:.0f} KiB per connection")
assert t1 <= t0 + 5, "idle connections keep threads"
assert per < 256, "memory per idle connection"
for c in conns:
    cur = c.cursor(); cur.execute("SELECT 1"); assert cur.fetchone() == (1,)
for c in conns:
    c.close()
PY
  $M -e 'SET GLOBAL max_connections = 151'
}
check "1 000 idle connections hold no threads and all answer" idle_connections

# A malformed packet closes that connection only; the server keeps serving.
malformed() {
  python3 - "$PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.recv(4096)
s.sendall(b"\x05\x00\x00\x01\xff\xff\xff\xff\xff")
s.settimeout(5)
try:
    s.recv(4096)
except Exception:
    pass
s.close()
PY
  [ "$($M -N -e 'SELECT 41+1')" = "42" ]
}
check "malformed handshake leaves the server up" malformed

# SIGTERM stops the server cleanly; data is intact after a restart on the same datadir.
restart() {
  kill -TERM "$PID" && wait "$PID" || true
  grep -q 'stopped (clean shutdown)' "$WORK/server.log" || { cat "$WORK/server.log"; return 1; }
  $BIN serve --datadir "$WORK/data" --port "$PORT" >>"$WORK/server.log" 2>&1 &
  PID=$!
  for _ in $(seq 50); do $M -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
  [ "$($M -N -e 'SELECT name FROM shop.items ORDER BY id' | tr '\n' ,)" = "from-file,coffee," ] &&
  [ "$($M -N -e 'SELECT count(*) FROM py.t')" = "2" ]
}
check "clean stop and restart keep the data" restart

# The embedded shell: one-shot statements print tables like the mysql client, and a
# datadir held by the server cannot be opened a second time.
shell() {
  local out
  out=$($BIN sql --datadir "$WORK/shell" -e "CREATE DATABASE s; USE s; CREATE TABLE t (a INT, b VARCHAR(5)); INSERT INTO t VALUES (1, 'x'), (22, NULL); SELECT a, b FROM t ORDER BY a") || return 1
  grep -q '^| a  | b    |$' <<<"$out" || { echo "$out"; return 1; }
  grep -q '^| 22 | NULL |$' <<<"$out" || { echo "$out"; return 1; }
  grep -q '^2 rows in set' <<<"$out" || { echo "$out"; return 1; }
  [ "$($BIN sql --datadir "$WORK/shell" -e 'SELECT count(*) FROM s.t' | grep -c '|  *2 |')" = 1 ] || return 1
  local err
  if err=$($BIN sql --datadir "$WORK/data" -e 'SELECT 1' 2>&1); then echo "opened a locked datadir"; return 1; fi
  grep -q 'in use by another Quarry process' <<<"$err"
}
check "embedded shell and datadir lock" shell

# The mariadb client's commands and output forms in the shell: \G, --batch, a pipe with
# `use`, `delimiter` and `source`, `warnings`, a MariaDB dump piped in; a failed
# statement stops piped input with status 1 (\G was 1064 and `help` unknown).
shell_commands() {
  local out
  local star='***************************'
  out=$($BIN sql --datadir "$WORK/shell" -e 'SELECT a, b FROM s.t ORDER BY a\G' | head -6) || return 1
  [ "$out" = "$(printf '%s 1. row %s\na: 1\nb: x\n%s 2. row %s\na: 22\nb: NULL' "$star" "$star" "$star" "$star")" ] || { echo "$out"; return 1; }
  out=$($BIN sql --datadir "$WORK/shell" --batch -e "SELECT a, b, 'x	y' AS c FROM s.t ORDER BY a") || return 1
  [ "$out" = "$(printf 'a\tb\tc\n1\tx\tx\\ty\n22\tNULL\tx\\ty')" ] || { echo "$out"; return 1; }
  printf 'SELECT 7 AS seven;\n' >"$WORK/seven.sql"
  out=$(printf 'use s\ndelimiter //\nSELECT COUNT(*) AS n FROM t; //\ndelimiter ;\nsource %s\nwarnings\nSELECT 1/0 AS z;\n' "$WORK/seven.sql" | $BIN sql --datadir "$WORK/shell" --batch) || { echo "$out"; return 1; }
  [ "$out" = "$(printf 'Database changed\nn\n2\nseven\n7\nShow warnings enabled.\nz\nNULL\nWarning (1365): Division by 0')" ] || { echo "$out"; return 1; }
  # A MariaDB dump piped in (its BLOBs raw bytes, not UTF-8) restores as through a server.
  $BIN sql --datadir "$WORK/shell-dump" <tests/clients/fixtures/mariadb-dump.sql >/dev/null || return 1
  out=$($BIN sql --datadir "$WORK/shell-dump" --batch -e "SELECT id, pid, note, HEX(raw), doc, price, at FROM dumped.child ORDER BY id; SELECT * FROM dumped.named ORDER BY id; SELECT id, name FROM dumped.parent ORDER BY id")
  [ "$out" = "$(cat tests/clients/fixtures/mariadb-dump.expected)" ] || { echo "$out"; return 1; }
  if printf 'SELECT * FROM s.nope;\nCREATE DATABASE never;\n' | $BIN sql --datadir "$WORK/shell" >/dev/null; then echo "exit 0 after an error"; return 1; fi
  [ "$($BIN sql --datadir "$WORK/shell" -N --batch -e 'SHOW DATABASES LIKE "never"')" = "" ] || return 1
  # --force goes on past the error (and exits 0, as the mariadb client does).
  printf 'SELECT * FROM s.nope;\nCREATE DATABASE forced;\n' | $BIN sql --datadir "$WORK/shell" --force >/dev/null || { echo "--force exited non-zero"; return 1; }
  [ "$($BIN sql --datadir "$WORK/shell" -N --batch -e 'SHOW DATABASES LIKE "forced"')" = "forced" ] || return 1
  # tee copies what follows to a file, its own line first; notee stops it before saying
  # so (the mariadb client's order).
  printf 'tee %s\nSELECT 41 + 1 AS answer;\nnotee\nSELECT 99;\n' "$WORK/tee.txt" | $BIN sql --datadir "$WORK/shell" --batch >/dev/null || return 1
  [ "$(cat "$WORK/tee.txt")" = "$(printf "Logging to file '%s'\nanswer\n42" "$WORK/tee.txt")" ] || { cat "$WORK/tee.txt"; return 1; }
}
check "embedded shell: mariadb client commands (\\G, --batch, use, delimiter, source, warnings)" shell_commands

# On a terminal, a statement's time is its own (each one that wrote took 0.20 s).
shell_tty() {
  python3 tests/clients/shell_tty.py "$BIN"
}
check "embedded shell on a terminal: no statement waits for the progress line" shell_tty

config() {
  local port2
  port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf '[quarry]\ndatadir = %s\nport = %s\n' "$WORK/cfgdata" "$port2" >"$WORK/quarry.cnf"
  $BIN serve --config "$WORK/quarry.cnf" >"$WORK/cfg.log" 2>&1 &
  local pid=$!
  for _ in $(seq 50); do mariadb -h127.0.0.1 -P"$port2" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
  local v
  v=$(mariadb -h127.0.0.1 -P"$port2" -uroot -N -e 'SELECT @@datadir')
  kill -TERM "$pid"; wait "$pid" || true
  [ "$v" = "$WORK/cfgdata" ] && [ "$($BIN --version | cut -d' ' -f1)" = "quarry" ]
}
check "config file and --version" config

# Issue 17's scenario: a SELECT-only account tries every escalation (each refused with
# MariaDB's code), grants survive a restart and a kill -9, roles, a dump of grants loads.
security() {
  python3 tests/clients/security.py "$BIN"
}
check "privileges: escalations refused, grants durable, SHOW GRANTS round-trips" security

# A dump MariaDB 10.11's mariadb-dump made (tests/clients/fixtures: BLOB bytes raw in
# string literals, JSON, a FOREIGN KEY, a view, versioned comments, DISABLE KEYS, the
# session variables it saves and restores) loads through the mariadb CLI; the rows read
# back as MariaDB reads them (the .expected file), and the FOREIGN KEY is enforced after.
mariadb_dump_restore() {
  $M <tests/clients/fixtures/mariadb-dump.sql || return 1
  local got
  got=$($M dumped -e "SELECT id, pid, note, HEX(raw), doc, price, at FROM child ORDER BY id; SELECT * FROM named ORDER BY id; SELECT id, name FROM parent ORDER BY id")
  [ "$got" = "$(cat tests/clients/fixtures/mariadb-dump.expected)" ] || { echo "got:"; echo "$got"; return 1; }
  { $M dumped -e 'INSERT INTO child (pid) VALUES (99)' 2>&1 || true; } | grep -q 'ERROR 1452' || return 1
  [ "$($M -N -e 'SELECT @@foreign_key_checks')" = 1 ] || return 1
  # The other way: mariadb-dump reads Quarry (information_schema, SHOW CREATE of a view,
  # SHOW … STATUS of routines), with and without --hex-blob, under a transaction or the
  # global read lock, one row per INSERT or many, and its dump restores into Quarry under
  # another name with the same rows.
  for opts in "" "--hex-blob --single-transaction --routines --triggers --events" "--lock-all-tables --skip-extended-insert"; do
    mariadb-dump -h127.0.0.1 -P"$PORT" -uroot $opts --databases dumped >"$WORK/quarry-dump.sql" || return 1
    sed 's/`dumped`/`dumped_again`/g' "$WORK/quarry-dump.sql" | $M || return 1
    got=$($M dumped_again -e "SELECT id, pid, note, HEX(raw), doc, price, at FROM child ORDER BY id; SELECT * FROM named ORDER BY id; SELECT id, name FROM parent ORDER BY id")
    [ "$got" = "$(cat tests/clients/fixtures/mariadb-dump.expected)" ] || { echo "round trip ($opts) got:"; echo "$got"; return 1; }
    $M -e 'DROP DATABASE dumped_again' || return 1
  done
}
check "mariadb-dump both ways: a MariaDB 10.11 dump restores (raw BLOB bytes, JSON, FOREIGN KEY, view), a dump of Quarry restores" mariadb_dump_restore

# The three directions of a dump with a MariaDB 10.11 of the suite's own (started here,
# as the differential tester starts one): MariaDB → mariadb-dump → Quarry and Quarry →
# mariadb-dump → MariaDB, with and without --hex-blob, every table compared row for row
# by the same SELECTs on both servers, and by CHECKSUM TABLE.
dump_three_ways() {
  local mb="$WORK/mdb" mport pid4 MB Q2 d opts
  mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mkdir -p "$mb/tmp"
  mariadb-install-db --no-defaults --user=root --auth-root-authentication-method=normal --skip-test-db --datadir="$mb/data" >"$mb/install.log" 2>&1 || { cat "$mb/install.log"; return 1; }
  mariadbd --no-defaults --user=root --datadir="$mb/data" --socket="$mb/s.sock" --port="$mport" \
    --bind-address=127.0.0.1 --tmpdir="$mb/tmp" --log-error="$mb/err.log" --pid-file="$mb/pid" --skip-grant-tables >"$mb/out.log" 2>&1 &
  pid4=$!
  MB="mariadb -h127.0.0.1 -P$mport -uroot --batch"
  for _ in $(seq 100); do $MB -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
  local rows="SELECT id, name, HEX(raw), note, doc, price, at FROM kinds ORDER BY id; SELECT id, kind_id, qty FROM items ORDER BY id; SELECT * FROM cheap ORDER BY id"
  $MB <<'SQL' || { kill "$pid4"; return 1; }
CREATE DATABASE rt CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE rt;
CREATE TABLE kinds (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40) NOT NULL, raw BLOB, note TEXT, doc JSON, price DECIMAL(10,2), at DATETIME(3), UNIQUE KEY (name));
CREATE TABLE items (id BIGINT PRIMARY KEY, kind_id INT, qty SMALLINT UNSIGNED, CONSTRAINT fk_kind FOREIGN KEY (kind_id) REFERENCES kinds (id) ON DELETE CASCADE);
INSERT INTO kinds (name, raw, note, doc, price, at) VALUES
  ('Köln', X'00FF0A0D27225C', 'it''s a "quote"\nand a \\ backslash', '{"a": [1, 2], "b": "ü"}', 12.50, '2024-02-29 23:59:59.125'),
  ('Ærø', NULL, NULL, NULL, NULL, NULL),
  ('tab	here', X'', '', '[]', -0.01, '1999-12-31 00:00:00');
INSERT INTO items VALUES (1, 1, 65535), (2, 1, 0), (3, 3, NULL);
CREATE VIEW cheap AS SELECT id, name FROM kinds WHERE price < 20;
SQL
  for opts in "" "--hex-blob"; do
    # MariaDB → Quarry
    mariadb-dump -h127.0.0.1 -P"$mport" -uroot $opts --databases rt >"$WORK/from-mariadb.sql" || return 1
    $M -e 'DROP DATABASE IF EXISTS rt' && $M <"$WORK/from-mariadb.sql" || { echo "restore into Quarry ($opts) failed"; return 1; }
    [ "$($M -N rt -e 'SELECT COUNT(*) FROM kinds; SELECT COUNT(*) FROM items' | tr '\n' ,)" = "3,3," ] || return 1
    diff <($MB rt -e "$rows") <($M rt -e "$rows") || { echo "MariaDB → Quarry ($opts) differs"; return 1; }
    # CHECKSUM TABLE gives MariaDB's number for the same rows.
    diff <($MB rt -e 'CHECKSUM TABLE kinds, items') <($M rt -e 'CHECKSUM TABLE kinds, items') || { echo "CHECKSUM TABLE differs"; return 1; }
    # Quarry → MariaDB, under another name
    mariadb-dump -h127.0.0.1 -P"$PORT" -uroot $opts --databases rt | sed 's/`rt`/`rt_back`/g' >"$WORK/from-quarry.sql" || return 1
    $MB -e 'DROP DATABASE IF EXISTS rt_back' && $MB <"$WORK/from-quarry.sql" || { echo "restore into MariaDB ($opts) failed"; return 1; }
    [ "$($MB -N rt_back -e 'SELECT COUNT(*) FROM kinds; SELECT COUNT(*) FROM items' | tr '\n' ,)" = "3,3," ] || return 1
    diff <($M rt -e "$rows") <($MB rt_back -e "$rows") || { echo "Quarry → MariaDB ($opts) differs"; return 1; }
    diff <($M -N rt -e 'CHECKSUM TABLE kinds, items' | cut -f2) <($MB -N rt_back -e 'CHECKSUM TABLE kinds, items' | cut -f2) || { echo "CHECKSUM TABLE of the copy differs"; return 1; }
    # The foreign key came through both ways: MariaDB enforces it on the copy.
    { $MB rt_back -e 'INSERT INTO items VALUES (9, 99, 1)' 2>&1 || true; } | grep -q 'ERROR 1452' || { echo "no FOREIGN KEY in MariaDB's copy"; return 1; }
  done
  kill "$pid4"; wait "$pid4" 2>/dev/null || true
}
check "dumps three ways with a MariaDB of the suite's own: MariaDB → Quarry and Quarry → MariaDB, rows equal" dump_three_ways

# mydumper / myloader round trip of a database with a view (mydumper dropped views: SHOW
# TABLE STATUS left them out).
mydumper_roundtrip() {
  $M -e "CREATE DATABASE md; CREATE TABLE md.t (a INT PRIMARY KEY, b VARCHAR(10)); INSERT INTO md.t VALUES (1,'x'),(2,'y'),(3,NULL); CREATE VIEW md.v AS SELECT a FROM md.t WHERE a > 1" || return 1
  mydumper -h 127.0.0.1 -P "$PORT" -u root -B md -o "$WORK/mydumper" || return 1
  myloader -h 127.0.0.1 -P "$PORT" -u root -B md2 -d "$WORK/mydumper" || return 1
  [ "$($M -N -e 'SELECT a, b FROM md2.t ORDER BY a' | tr '\t\n' ',;')" = "1,x;2,y;3,NULL;" ] || return 1
  [ "$($M -N -e 'SELECT a FROM md2.v ORDER BY a' | tr '\n' ,)" = "2,3," ]
}
check "mydumper / myloader round trip with a view" mydumper_roundtrip

# SQLAlchemy 2's reflection of the restored schema (get_schema_names was 1235 on SHOW
# SCHEMAS; get_foreign_keys gave [] while FOREIGN KEYs were dropped).
sqlalchemy_reflection() {
  python3 - "$PORT" <<'PY'
import sys
import sqlalchemy as sa
e = sa.create_engine(f"mysql+pymysql://root@127.0.0.1:{sys.argv[1]}/dumped")
i = sa.inspect(e)
assert "dumped" in i.get_schema_names(), i.get_schema_names()
assert i.get_table_names() == ["child", "parent"], i.get_table_names()
assert i.get_view_names() == ["named"], i.get_view_names()
assert [c["name"] for c in i.get_columns("child")] == ["id", "pid", "note", "raw", "doc", "price", "at"]
assert i.get_pk_constraint("child")["constrained_columns"] == ["id"]
fks = i.get_foreign_keys("child")
assert [(f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"], f["options"]) for f in fks] == [("fk_parent", ["pid"], "parent", ["id"], {"ondelete": "CASCADE"})], fks
assert [(x["name"], x["column_names"], x["unique"]) for x in i.get_indexes("parent")] == [("name", ["name"], True)]
md = sa.MetaData()
md.reflect(e)
assert sorted(md.tables) == ["child", "parent"], sorted(md.tables)
print("reflected", sorted(md.tables), fks[0]["name"])
PY
}
check "SQLAlchemy reflection: schemas, tables, views, columns, keys, FOREIGN KEYs" sqlalchemy_reflection

# JDBC (MariaDB Connector/J) as Java tools browse a server: DatabaseMetaData's catalogs,
# tables, columns, keys, indexes, foreign keys and type info, then server-side prepared
# statements with generated keys, a batch and a rollback. The output must be MariaDB 10.11's.
jdbc_metadata() {
  java -cp /usr/share/java/mariadb-java-client.jar tests/clients/JdbcMeta.java "$PORT" root >"$WORK/jdbc.out" 2>&1 || { cat "$WORK/jdbc.out"; return 1; }
  diff tests/clients/fixtures/jdbc-meta.expected "$WORK/jdbc.out"
}
check "JDBC: DatabaseMetaData browsing and server-side prepared statements answer as MariaDB" jdbc_metadata

# Node's mysql2 (from npm) as a web application uses it: a pool, execute() with
# LIMIT ? OFFSET ? (1064 at prepare before), a transaction, typed results; MariaDB's output.
node_mysql2() {
  npm install --silent --no-audit --no-fund --prefix "$WORK/node" mysql2 >/dev/null || return 1
  NODE_PATH="$WORK/node/node_modules" node tests/clients/mysql2_test.js "$PORT" root >"$WORK/mysql2.out" 2>&1 || { cat "$WORK/mysql2.out"; return 1; }
  diff tests/clients/fixtures/mysql2.expected "$WORK/mysql2.out"
}
check "Node mysql2: pool, execute() with LIMIT ?, transactions answer as MariaDB" node_mysql2

# mysql-connector-python's prepared cursors: binary-protocol parameters of each type.
connector_prepared() {
  python3 tests/clients/mysql_connector.py "$PORT" root >"$WORK/mc.out" 2>&1 || { cat "$WORK/mc.out"; return 1; }
  diff tests/clients/fixtures/mysql-connector.expected "$WORK/mc.out"
}
check "mysql-connector-python prepared cursors answer as MariaDB" connector_prepared

# The statements DBeaver and MySQL Workbench send on connect, browsing and opening a table
# (fixtures/gui-replay.sql): every one answered with MariaDB 10.11's columns or error code
# (mysql.user, performance_schema, the privilege and InnoDB tables of information_schema
# were 1146 / 1109, sql_safe_updates 1193, SHOW FULL TRIGGERS and EXPLAIN EXTENDED 1064).
gui_replay() {
  python3 tests/clients/gui_replay.py "$PORT" root tests/clients/fixtures/gui-replay.sql >"$WORK/gui.out" || { cat "$WORK/gui.out"; return 1; }
  diff tests/clients/fixtures/gui-replay.expected "$WORK/gui.out" || return 1
  # The attributes a connector sends at login are in performance_schema.
  python3 - "$PORT" <<'PY'
import sys, pymysql
c = pymysql.connect(host="127.0.0.1", port=int(sys.argv[1]), user="root", program_name="quarry-suite")
cur = c.cursor()
cur.execute("SELECT ATTR_NAME, ATTR_VALUE FROM performance_schema.session_account_connect_attrs WHERE PROCESSLIST_ID = CONNECTION_ID() AND ATTR_NAME IN ('_client_name', 'program_name')")
got = sorted(cur.fetchall())
assert got == [("_client_name", "pymysql"), ("program_name", "quarry-suite")], got
PY
}
check "GUI replay: DBeaver's and Workbench's statements answered with MariaDB's columns" gui_replay

# mariadb-admin against a server of its own: status counts the statements run, refresh
# flushes, shutdown needs the SHUTDOWN privilege and then stops the server cleanly
# (refresh and shutdown were 'Unknown command', Questions stayed 0).
mariadb_admin() {
  local port2 pid2 A out
  port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  $BIN serve --datadir "$WORK/admin" --port "$port2" >"$WORK/admin.log" 2>&1 &
  pid2=$!
  A="mariadb-admin -h127.0.0.1 -P$port2"
  for _ in $(seq 50); do $A -uroot ping >/dev/null 2>&1 && break; sleep 0.2; done
  mariadb -h127.0.0.1 -P"$port2" -uroot -e "CREATE USER op IDENTIFIED BY 'pw'; GRANT SELECT ON *.* TO op; SELECT 1; SELECT 2" >/dev/null || return 1
  out=$($A -uroot status) || return 1
  echo "$out"
  echo "$out" | grep -Eq 'Questions: ([4-9]|[1-9][0-9]+) ' || return 1
  $A -uroot refresh || return 1
  # processlist lists this connection; kill ends another; debug writes the state to the
  # error log (SUPER only).
  $A -uroot processlist | grep -qi 'show processlist' || return 1
  python3 -c "import pymysql, time; c = pymysql.connect(host='127.0.0.1', port=$port2, user='root'); print(c.thread_id(), flush=True); time.sleep(30)" >"$WORK/idle.id" &
  local sleeper=$! victim=""
  for _ in $(seq 50); do victim=$(cat "$WORK/idle.id"); [ -n "$victim" ] && break; sleep 0.1; done
  [ -n "$victim" ] || return 1
  $A -uroot kill "$victim" || return 1
  local gone=""
  for _ in $(seq 50); do
    [ -z "$(mariadb -h127.0.0.1 -P"$port2" -uroot -N -e "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = $victim")" ] && { gone=1; break; }
    sleep 0.1
  done
  kill "$sleeper" 2>/dev/null; wait "$sleeper" 2>/dev/null || true
  [ -n "$gone" ] || { echo "thread $victim still there after mariadb-admin kill"; return 1; }
  $A -uroot debug || return 1
  grep -q 'status information (COM_DEBUG)' "$WORK/admin.log" || { cat "$WORK/admin.log"; return 1; }
  { $A -uop -ppw debug 2>&1 || true; } | grep -q 'SUPER' || return 1
  { $A -uop -ppw shutdown 2>&1 || true; } | grep -q 'SHUTDOWN privilege' || return 1
  kill -0 "$pid2" || return 1
  $A -uroot shutdown || return 1
  for _ in $(seq 50); do kill -0 "$pid2" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid2" 2>/dev/null; then kill "$pid2"; echo "still running after shutdown"; return 1; fi
  wait "$pid2" || true
  grep -q 'stopped (clean shutdown)' "$WORK/admin.log"
}
check "mariadb-admin status, refresh and shutdown (SHUTDOWN privilege)" mariadb_admin

# The other client programs: mariadb-import loads a tab-separated file into the table
# of its name, mariadb-check checks, analyzes, optimizes and repairs every table,
# mariadb-slap's generated load runs (its `id serial` table was 1075).
client_programs() {
  $M -e "CREATE DATABASE imp; CREATE TABLE imp.people (id INT PRIMARY KEY, name VARCHAR(20), city VARCHAR(20))" || return 1
  printf '1\tann\tOslo\n2\tbob\tRome\n' >"$WORK/people.txt"
  mariadb-import -h127.0.0.1 -P"$PORT" -uroot --local imp "$WORK/people.txt" | grep -q 'imp.people: Records: 2  Deleted: 0  Skipped: 0  Warnings: 0' || return 1
  [ "$($M -N -e 'SELECT id, name, city FROM imp.people ORDER BY id' | tr '\t\n' ',;')" = "1,ann,Oslo;2,bob,Rome;" ] || return 1
  local mode out
  for mode in --check --analyze --optimize --repair --check-upgrade; do
    out=$(mariadb-check -h127.0.0.1 -P"$PORT" -uroot "$mode" imp) || { echo "$mode: $out"; return 1; }
    echo "$out" | grep -Eq '^imp.people +OK$' || { echo "$mode: $out"; return 1; }
  done
  mariadb-check -h127.0.0.1 -P"$PORT" -uroot --all-databases >"$WORK/check.txt" || return 1
  grep -Eq '^imp.people +OK$' "$WORK/check.txt" || return 1
  mariadb-slap -h127.0.0.1 -P"$PORT" -uroot --auto-generate-sql --auto-generate-sql-load-type=mixed \
    --auto-generate-sql-add-autoincrement --concurrency=4 --number-of-queries=400 --iterations=2 >"$WORK/slap.txt" 2>&1 || { cat "$WORK/slap.txt"; return 1; }
  grep -q 'Number of clients running queries: 4' "$WORK/slap.txt"
}
check "mariadb-import, mariadb-check (every mode) and mariadb-slap" client_programs

# The logs operators read, on a server of their own started with them on: the error log
# (timestamped lines), the general log and the slow log (every statement past
# long_query_time 0), which mariadb-dumpslow and pt-query-digest read as MariaDB's; and
# the metrics endpoint, read with Prometheus' own parser of its text format.
operator_logs() {
  local port3 pid3 mport Q L="$WORK/logs"
  mkdir -p "$L"
  port3=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  mport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  $BIN serve --datadir "$WORK/logsdata" --port "$port3" --log-error "$L/error.log" --metrics-port "$mport" \
    --general-log --general-log-file "$L/general.log" \
    --slow-query-log --slow-query-log-file "$L/slow.log" --long-query-time 0 &
  pid3=$!
  Q="mariadb -h127.0.0.1 -P$port3 -uroot"
  for _ in $(seq 50); do $Q -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
  $Q -e "CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v INT); INSERT INTO shop.t VALUES (1,1),(2,2),(3,3)" || return 1
  # The slow log says `use shop` once, before the first statement run in it (as
  # MariaDB's: when the database changes), so the lookups after it read alike.
  $Q shop -e "SELECT 1 FROM t LIMIT 0; SELECT v FROM t WHERE id = 1; SELECT v FROM t WHERE id = 2; SELECT v FROM t WHERE id = 3; SELECT COUNT(*) FROM t WHERE v > 1" >/dev/null || return 1
  python3 - "$mport" <<'PY' || return 1
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=10).read().decode()
samples = {}
for fam in text_string_to_metric_families(text):
    for s in fam.samples:
        samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
def get(name, **labels):
    return samples[(name, tuple(sorted(labels.items())))]
assert get("mysql_up") == 1
assert get("mysql_global_status_questions") >= 8, get("mysql_global_status_questions")
assert get("mysql_global_status_innodb_buffer_pool_pages_total") > 0
assert get("mysql_global_variables_max_connections") > 0
# The five SELECTs at least (the scrape itself runs no statement).
assert get("quarry_statement_duration_seconds_count", type="select") >= 5
assert get("quarry_statement_duration_seconds_bucket", type="select", le="+Inf") == get("quarry_statement_duration_seconds_count", type="select")
assert get("quarry_statement_duration_seconds_count", type="insert") >= 1
print("metrics:", len(samples), "samples")
PY
  [ "$(python3 -c "import urllib.request, urllib.error
try: urllib.request.urlopen('http://127.0.0.1:$mport/nothing', timeout=5)
except urllib.error.HTTPError as e: print(e.code)")" = 404 ] || return 1
  kill "$pid3"; wait "$pid3" || true
  grep -q "quarry: metrics on http://127.0.0.1:$mport/metrics" "$L/error.log" || return 1
  grep -Eq '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} 0 \[Note\] quarry: serving on' "$L/error.log" || { cat "$L/error.log"; return 1; }
  grep -q '\[Note\] quarry: stopped (clean shutdown)' "$L/error.log" || return 1
  # A line starts with the time when the second changed since the last one (as MariaDB's
  # general log writes it), else with two tabs.
  grep -Pq '^(\d{6} [ \d]\d:\d{2}:\d{2}\t|\t\t) +[0-9]+ Connect\troot@localhost on shop using TCP/IP$' "$L/general.log" || { cat "$L/general.log"; return 1; }
  grep -Pq ' Query\tSELECT v FROM t WHERE id = 3$' "$L/general.log" || return 1
  grep -Pq ' Quit\t$' "$L/general.log" || return 1
  # mariadb-dumpslow folds the three lookups into one line of Count: 3.
  mariadb-dumpslow "$L/slow.log" >"$L/dumpslow.out" || return 1
  grep -A1 '^Count: 3 ' "$L/dumpslow.out" | grep -q 'SELECT v FROM t WHERE id = N' || { cat "$L/dumpslow.out"; return 1; }
  # pt-query-digest reads every entry and its figures: the COUNT(*) examined 3 rows.
  pt-query-digest --limit 100% "$L/slow.log" >"$L/digest.out" 2>&1 || { cat "$L/digest.out"; return 1; }
  grep -Eq 'SELECT v FROM t WHERE id = [123]' "$L/digest.out" || { cat "$L/digest.out"; return 1; }
  grep -Pq '^# Rows examine .* 3 ' "$L/digest.out" || { cat "$L/digest.out"; return 1; }
  grep -Eq '^# Overall: [0-9]+ total' "$L/digest.out"
}
check "operator logs and metrics: error log, general and slow logs (read by mariadb-dumpslow, pt-query-digest), Prometheus endpoint" operator_logs

# A full disk (a small tmpfs): refused statements change nothing, nothing acknowledged is
# lost once space returns (skipped where a tmpfs cannot be mounted).
full_disk() {
  python3 tests/clients/full_disk.py "$BIN"
}
check "full disk: refused statements change nothing" full_disk

# Statements that crashed the server, outran KILL or grew it by gigabytes, under a 3 GiB
# address-space limit: each ends with an answer or a clear error, the server answers after.
queries_of_death() {
  python3 tests/clients/queries_of_death.py "$BIN"
}
check "queries of death: the server survives each" queries_of_death

# A datadir of 100 000 tables: startup opens none of them, descriptors stay within
# table_open_cache, and writes to them survive a restart.
many_tables() {
  python3 tests/clients/many_tables.py "$BIN"
}
check "100 000 tables: startup, bounded descriptors, restart" many_tables

# kill -9 during a concurrent write workload, restart, check every acknowledged commit and
# that no transaction is partly visible (the dedicated 50-cycle run: tests/crash/REPORT.md).
crash_loop() {
  python3 tests/crash/crash_loop.py "$BIN" --cycles "${CRASH_CYCLES:-4}"
}
check "crash loop: kill -9 loses no acknowledged commit" crash_loop

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
