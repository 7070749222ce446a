#!/usr/bin/env python3
"""Crash loop: a concurrent write workload over the MySQL protocol, `kill -9` of the
server at a random moment, restart, and checks that

  * every commit acknowledged to a client is there (inserts present, deletes gone,
    updates at their last acknowledged version or a newer in-flight one),
  * no transaction is partly visible (transfers keep the balance total; every insert
    group has all of its rows or none — its rows are spread over a row table and a
    column table, so a transaction spans both engines),
  * CHECK TABLE passes and index reads agree with full scans,
  * DDL is atomic: a table being rebuilt (ALTER TABLE), re-indexed (plain, DESC and
    prefix keys) or renamed at the kill has its old or its new shape, all of its rows,
    added columns hold their default in every row, and no temporary table is left,
  * bulk statements are atomic: each LOAD DATA LOCAL and INSERT … SELECT of 100 000 rows
    (into a row table with two keys and into a column table) and each bulk DELETE left
    all of its rows or none; acknowledged ones all of them,
  * tables of every column type created, filled and dropped, on both engines, are there
    with their row as written once acknowledged, or not there.

usage: crash_loop.py BIN --cycles N [--workers W] [--report FILE] [--seed S]
Exit status 0 when every cycle passed.
"""

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import pymysql

ACCOUNTS = 64
START_BALANCE = 1000
GROUP = 3  # rows per insert group, all in one transaction
TABLES = ("log", "clog")  # a row table and a column table


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def connect(port, timeout=10, db=None):
    return pymysql.connect(host="127.0.0.1", port=port, user="root", database=db,
                           autocommit=True, connect_timeout=timeout,
                           read_timeout=60, write_timeout=60)


class Server:
    def __init__(self, binary, datadir, log):
        self.binary, self.datadir, self.log = binary, datadir, log
        self.proc = None
        self.port = None

    def start(self):
        self.port = free_port()
        out = open(self.log, "a")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--datadir", self.datadir, "--port", str(self.port),
             # Checkpoints every few MB of log: they run beside the workload.
             "--innodb-log-file-size", "8M"]
            + os.environ.get("QUARRY_CRASH_ARGS", "").split(),
            stdout=out, stderr=out)
        started = time.time()
        deadline = started + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited at startup; see " + self.log)
            try:
                connect(self.port, timeout=2).close()
                return time.time() - started
            except pymysql.err.OperationalError:
                time.sleep(0.05)
        raise RuntimeError("server did not come up; see " + self.log)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)


DD_ROWS = 300


class DdlModel:
    """Shape of the DDL table: acknowledged, and what an in-flight statement may leave."""

    def __init__(self):
        self.lock = threading.Lock()
        self.name = "dd"
        self.extra = set()     # added columns
        self.indexed = False
        self.pending = None    # (name, extra, indexed) an unacknowledged statement aims at
        self.acked = 0


def shape(name, extra, indexed):
    return (name, frozenset(extra), indexed)


def ddl_worker(port, model, stop, seed):
    rnd = random.Random(seed)
    try:
        c = connect(port, db="crash")
    except Exception:
        return
    cur = c.cursor()
    n = 0
    while not stop.is_set():
        with model.lock:
            name, extra, indexed = model.name, set(model.extra), model.indexed
        op = rnd.random()
        n += 1
        if op < 0.35:
            col = f"c{rnd.randint(0, 5)}"
            if col in extra:
                sql, extra2 = f"ALTER TABLE {name} DROP COLUMN {col}", extra - {col}
            else:
                nn = rnd.choice(["", " NOT NULL"])
                sql, extra2 = f"ALTER TABLE {name} ADD COLUMN {col} INT{nn} DEFAULT 7", extra | {col}
            target = (name, extra2, indexed)
        elif op < 0.6:
            if indexed:
                sql = f"DROP INDEX iv ON {name}"
            else:
                key = rnd.choice(["v, id", "v DESC, id", "s(3), v", "id DESC"])
                sql = f"CREATE INDEX iv ON {name} ({key})"
            target = (name, extra, not indexed)
        elif op < 0.8:
            other = "dd2" if name == "dd" else "dd"
            sql = f"RENAME TABLE {name} TO {other}"
            target = (other, extra, indexed)
        else:
            sql = f"ALTER TABLE {name} ENGINE=InnoDB"
            target = (name, extra, indexed)
        with model.lock:
            model.pending = target
        try:
            cur.execute(sql)
        except Exception as e:
            if os.environ.get("CRASH_DEBUG"):
                print(f"ddl worker: {e!r}", file=sys.stderr)
            return
        with model.lock:
            model.name, model.extra, model.indexed = target[0], set(target[1]), target[2]
            model.pending = None
            model.acked += 1


def verify_ddl(cur, model):
    problems = []
    cur.execute("SHOW TABLES FROM crash")
    tables = {r[0] for r in cur.fetchall()}
    temps = [t for t in tables if t.startswith("#sql")]
    if temps:
        problems.append(f"temporary tables left: {temps}")
    present = [t for t in ("dd", "dd2") if t in tables]
    if len(present) != 1:
        return problems + [f"DDL table: found {present}"]
    name = present[0]
    cur.execute(f"SHOW COLUMNS FROM crash.{name}")
    cols = {r[0] for r in cur.fetchall()} - {"id", "v", "s"}
    cur.execute(f"SHOW INDEX FROM crash.{name}")
    indexed = any(r[2] == "iv" for r in cur.fetchall())
    got = shape(name, cols, indexed)
    with model.lock:
        allowed = {shape(model.name, model.extra, model.indexed)}
        if model.pending:
            allowed.add(shape(*model.pending))
    if got not in allowed:
        problems.append(f"DDL table shape {got} not in {allowed}")
    cur.execute(f"SELECT count(*), sum(id), sum(v) FROM crash.{name}")
    n, sid, sv = cur.fetchone()
    if n != DD_ROWS or int(sid) != DD_ROWS * (DD_ROWS - 1) // 2 or int(sv) != 3 * DD_ROWS:
        problems.append(f"DDL table rows: {n}, sum(id) {sid}, sum(v) {sv}")
    for col in cols:
        cur.execute(f"SELECT count(*) FROM crash.{name} WHERE {col} = 7")
        if cur.fetchone()[0] != DD_ROWS:
            problems.append(f"added column {col} does not hold its default in every row")
    cur.execute(f"CHECK TABLE crash.{name}")
    r = cur.fetchall()
    if not r or r[-1][3] != "OK":
        problems.append(f"CHECK TABLE {name}: {r}")
    # Settle to what survived.
    with model.lock:
        model.name, model.extra, model.indexed = name, set(cols), indexed
        model.pending = None
    return problems


BULK_ROWS = 100_000
BULK_TABLES = ("blk", "cblk")  # a row table with two keys and a column table


class BulkModel:
    """Bulk statements: batch -> table, as acknowledged or in flight."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}      # batch -> table (all rows present)
        self.deleted = set() # batches whose delete was acknowledged
        self.unknown = {}    # batch -> table (an in-flight load or delete: all or none)
        self.next = 0
        self.acked_statements = 0
        self.interrupted = 0  # in flight at a kill: checked all-or-none


def bulk_worker(port, model, stop, seed, workdir):
    rnd = random.Random(seed)
    try:
        c = pymysql.connect(host="127.0.0.1", port=port, user="root", database="crash",
                            autocommit=True, local_infile=True, read_timeout=120)
    except Exception:
        return
    cur = c.cursor()
    while not stop.is_set():
        # Bulk statements lock their table and make DDL wait: not back to back.
        time.sleep(rnd.uniform(0.0, 0.5))
        with model.lock:
            live = [b for b in model.acked if b not in model.unknown]
            model.next += 1
            b = model.next
        try:
            if len(live) >= 4 or (live and rnd.random() < 0.2):
                old = rnd.choice(live)
                with model.lock:
                    t = model.acked[old]
                    model.unknown[old] = t
                cur.execute(f"DELETE FROM {t} WHERE batch = %s", (old,))
                with model.lock:
                    del model.acked[old]
                    del model.unknown[old]
                    model.deleted.add(old)
                    model.acked_statements += 1
                continue
            t = rnd.choice(BULK_TABLES)
            with model.lock:
                model.unknown[b] = t
            if rnd.random() < 0.5:
                path = os.path.join(workdir, f"bulk-{b}.tsv")
                with open(path, "w") as f:
                    f.write("".join(f"{b * BULK_ROWS + i}\t{b}\t{i % 97}\tp{i}\n"
                                    for i in range(BULK_ROWS)))
                cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {t} (id, batch, k, pad)")
                os.unlink(path)
            else:
                cur.execute(f"INSERT INTO {t} (id, batch, k, pad) "
                            f"SELECT id + {b * BULK_ROWS}, {b}, k, pad FROM src")
            with model.lock:
                model.acked[b] = t
                del model.unknown[b]
                model.acked_statements += 1
        except Exception as e:
            if os.environ.get("CRASH_DEBUG"):
                print(f"bulk worker: {e!r}", file=sys.stderr)
            return


def verify_bulk(cur, model):
    problems = []
    present = {}
    for t in BULK_TABLES:
        cur.execute(f"SELECT batch, count(*), count(DISTINCT id) FROM crash.{t} GROUP BY batch")
        for b, n, d in cur.fetchall():
            if n != BULK_ROWS or d != BULK_ROWS:
                problems.append(f"bulk batch {b} in {t}: {n} rows ({d} ids), want all {BULK_ROWS} or none")
            present[b] = t
        cur.execute(f"CHECK TABLE crash.{t}")
        r = cur.fetchall()
        if not r or r[-1][3] != "OK":
            problems.append(f"CHECK TABLE {t}: {r}")
    cur.execute("SELECT count(*) FROM crash.blk")
    full = cur.fetchone()[0]
    cur.execute("SELECT count(*) FROM crash.blk WHERE k >= 0")
    if cur.fetchone()[0] != full:
        problems.append("blk: index count differs from scan count")
    with model.lock:
        for b, t in model.acked.items():
            if b not in present and b not in model.unknown:
                problems.append(f"acknowledged bulk batch {b} ({t}) lost")
        for b in model.deleted:
            if b in present:
                problems.append(f"acknowledged delete of bulk batch {b} undone")
        for b in list(model.unknown):
            model.interrupted += 1
            if b in present:
                model.acked[b] = present[b]
            else:
                model.acked.pop(b, None)
                model.deleted.add(b)
            del model.unknown[b]
    return problems


TYPES = ("i TINYINT, si SMALLINT, mi MEDIUMINT, ii INT, b BIGINT UNSIGNED, d DECIMAL(20,6), "
         "f FLOAT, db DOUBLE, dt DATE, tm DATETIME(6), ts TIMESTAMP NULL, y YEAR, c CHAR(5), "
         "vc VARCHAR(100), tx TEXT, bl BLOB, vb VARBINARY(10), bt BINARY(4), t3 TIME(3), "
         "dw DECIMAL(65,10)")


def type_row(n):
    return (f"(-5, {n % 30000}, -70000, {n}, 18446744073709551615, -12345.678901, 1.5, "
            f"2.25e100, '2024-02-29', '2024-01-02 03:04:05.123456', '2001-02-03 04:05:06', "
            f"2024, 'ab', 'v\u00e4r{n}', REPEAT('t', {n % 2000}), X'00FF10', X'0102', X'61626364', "
            f"'-{n % 839}:59:58.125', -{n}{'7' * 45}.0123456789)")


class TypesModel:
    def __init__(self):
        self.lock = threading.Lock()
        self.tables = {}   # name -> expected row (a tuple read back after writing) or None
        self.unknown = set()
        self.expected = None
        self.n = 0


def types_worker(port, model, stop, seed):
    rnd = random.Random(seed)
    try:
        c = connect(port, db="crash")
    except Exception:
        return
    cur = c.cursor()
    while not stop.is_set():
        # DDL waits for every open transaction (a database-wide metadata lock).
        time.sleep(rnd.uniform(0.1, 0.4))
        with model.lock:
            model.n += 1
            n = model.n
            have = [t for t in model.tables if t not in model.unknown]
        try:
            if len(have) >= 3:
                t = rnd.choice(have)
                with model.lock:
                    model.unknown.add(t)
                cur.execute(f"DROP TABLE {t}")
                with model.lock:
                    del model.tables[t]
                    model.unknown.discard(t)
                continue
            t = f"ty{n}"
            eng = rnd.choice(["InnoDB", "MyISAM", "COLUMN"])
            with model.lock:
                model.unknown.add(t)
            cur.execute(f"CREATE TABLE {t} (k INT PRIMARY KEY, {TYPES}) ENGINE={eng}")
            with model.lock:
                model.tables[t] = None
            cur.execute(f"INSERT INTO {t} VALUES ({n}, " + type_row(n)[1:])
            cur.execute(f"SELECT * FROM {t}")
            row = cur.fetchone()
            with model.lock:
                model.tables[t] = row
                model.unknown.discard(t)
        except Exception as e:
            if os.environ.get("CRASH_DEBUG"):
                print(f"types worker: {e!r}", file=sys.stderr)
            return


def verify_types(cur, model):
    problems = []
    cur.execute("SHOW TABLES FROM crash LIKE 'ty%'")
    present = {r[0] for r in cur.fetchall()}
    with model.lock:
        for t, row in list(model.tables.items()):
            if t not in present:
                if t not in model.unknown:
                    problems.append(f"acknowledged table {t} lost")
                del model.tables[t]
                continue
            cur.execute(f"SELECT * FROM crash.{t}")
            rows = cur.fetchall()
            if row is not None and t not in model.unknown and list(rows) != [row]:
                problems.append(f"table {t}: {rows!r:.200} instead of {row!r:.200}")
            if len(rows) > 1:
                problems.append(f"table {t}: {len(rows)} rows")
            cur.execute(f"CHECK TABLE crash.{t}")
            r = cur.fetchall()
            if not r or r[-1][3] != "OK":
                problems.append(f"CHECK TABLE {t}: {r}")
        for t in present - set(model.tables):
            if t not in model.unknown:
                problems.append(f"dropped table {t} is back")
            # An unacknowledged CREATE or DROP may have happened: keep what is there.
            cur.execute(f"SELECT * FROM crash.{t}")
            rows = cur.fetchall()
            model.tables[t] = rows[0] if rows else None
        model.unknown.clear()
    return problems


class Model:
    """What clients were told. Groups: (worker, seq) -> state."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}        # key -> payload version acknowledged (rows exist)
        self.deleted = set()   # keys whose delete was acknowledged
        self.unknown = {}      # key -> set of payloads an in-flight op may have left
        self.acked_commits = 0


def worker(w, port, model, stop, seed):
    rnd = random.Random(seed)
    seq = 0
    try:
        c = connect(port, db="crash")
    except Exception as e:
        print(f"worker {w} cannot connect: {e!r}", file=sys.stderr)
        return
    cur = c.cursor()
    while not stop.is_set():
        op = rnd.random()
        try:
            if op < 0.35:
                a, b = rnd.sample(range(ACCOUNTS), 2)
                x = rnd.randint(1, 50)
                cur.execute("BEGIN")
                cur.execute("UPDATE acct SET bal = bal - %s WHERE id = %s", (x, a))
                cur.execute("UPDATE acct SET bal = bal + %s WHERE id = %s", (x, b))
                cur.execute("COMMIT")
                with model.lock:
                    model.acked_commits += 1
            elif op < 0.75:
                seq += 1
                key = (w, seq)
                payload = "v0-" + "x" * rnd.randint(0, 150)
                with model.lock:
                    model.unknown[key] = {None, payload}
                rows = [(w * 1_000_000 + seq * 10 + p, w, seq, p, payload) for p in range(GROUP)]
                where = [rnd.choice(TABLES) for _ in rows]
                if len(set(where)) > 1 or rnd.random() < 0.5:
                    cur.execute("BEGIN")
                    for r, t in zip(rows, where):
                        cur.execute(f"INSERT INTO {t} (id, worker, seq, part, payload) VALUES (%s,%s,%s,%s,%s)", r)
                    cur.execute("COMMIT")
                else:
                    cur.execute(f"INSERT INTO {where[0]} (id, worker, seq, part, payload) VALUES "
                                + ",".join(["(%s,%s,%s,%s,%s)"] * GROUP),
                                [v for r in rows for v in r])
                with model.lock:
                    model.acked[key] = payload
                    del model.unknown[key]
                    model.acked_commits += 1
            elif op < 0.88:
                with model.lock:
                    mine = [k for k in model.acked if k[0] == w and k not in model.unknown]
                if not mine:
                    continue
                key = rnd.choice(mine)
                payload = "v%d-upd" % rnd.randint(1, 10**9)
                with model.lock:
                    model.unknown[key] = {model.acked[key], payload}
                cur.execute("BEGIN")
                for t in TABLES:
                    cur.execute(f"UPDATE {t} SET payload = %s WHERE worker = %s AND seq = %s",
                                (payload, key[0], key[1]))
                cur.execute("COMMIT")
                with model.lock:
                    model.acked[key] = payload
                    del model.unknown[key]
                    model.acked_commits += 1
            else:
                with model.lock:
                    mine = [k for k in model.acked if k[0] == w and k not in model.unknown]
                if not mine:
                    continue
                key = rnd.choice(mine)
                with model.lock:
                    model.unknown[key] = {model.acked[key], None}
                cur.execute("BEGIN")
                for t in TABLES:
                    cur.execute(f"DELETE FROM {t} WHERE worker = %s AND seq = %s", key)
                cur.execute("COMMIT")
                with model.lock:
                    del model.acked[key]
                    del model.unknown[key]
                    model.deleted.add(key)
                    model.acked_commits += 1
        except Exception as e:
            # The server died mid-operation: whatever was in flight stays "unknown".
            if os.environ.get("CRASH_DEBUG"):
                print(f"worker {w}: {e!r}", file=sys.stderr)
            return


def verify(port, model, cycle, ddl, bulk, types):
    problems = []
    c = connect(port)
    cur = c.cursor()
    problems += verify_ddl(cur, ddl)
    problems += verify_bulk(cur, bulk)
    problems += verify_types(cur, types)
    cur.execute("SELECT count(*), sum(bal) FROM crash.acct")
    n, total = cur.fetchone()
    if n != ACCOUNTS or int(total) != ACCOUNTS * START_BALANCE:
        problems.append(f"accounts: {n} rows, total {total} (want {ACCOUNTS}, {ACCOUNTS * START_BALANCE})")
    present = {}
    for t in TABLES:
        cur.execute(f"SELECT worker, seq, count(*), min(payload), max(payload) FROM crash.{t} GROUP BY worker, seq")
        for w, s, cnt, pmin, pmax in cur.fetchall():
            c0, mn, mx = present.get((w, s), (0, pmin, pmax))
            present[(w, s)] = (c0 + cnt, min(mn, pmin), max(mx, pmax))
    for (w, s), (cnt, pmin, pmax) in present.items():
        if cnt != GROUP or pmin != pmax:
            problems.append(f"group {(w, s)} partly visible: {cnt} rows, payloads {pmin!r}/{pmax!r}")
    with model.lock:
        for key, payload in model.acked.items():
            got = present.get(key)
            allowed = model.unknown.get(key, {payload})
            if got is None:
                if None not in allowed:
                    problems.append(f"acknowledged group {key} lost")
            elif got[1] not in allowed:
                problems.append(f"group {key} has payload {got[1][:12]!r}, acknowledged {payload[:12]!r}")
        for key in model.deleted:
            if key in present:
                problems.append(f"acknowledged delete of {key} undone")
        for key, allowed in model.unknown.items():
            if key in model.acked:
                continue
            got = present.get(key)
            if got is not None and got[1] not in allowed:
                problems.append(f"in-flight group {key} has a payload it never had")
        # Settle the in-flight operations to what survived, for the next cycle.
        for key, allowed in list(model.unknown.items()):
            got = present.get(key)
            if got is None:
                model.acked.pop(key, None)
            else:
                model.acked[key] = got[1]
            del model.unknown[key]
        for key in list(model.acked):
            if key not in present:
                problems.append(f"group {key} missing after settling")
                del model.acked[key]
    for t in ("acct",) + TABLES:
        cur.execute(f"CHECK TABLE crash.{t}")
        rows = cur.fetchall()
        if not rows or rows[-1][3] != "OK":
            problems.append(f"CHECK TABLE {t}: {rows}")
    # An index range over every worker reads the same rows as the full scan.
    cur.execute("SELECT count(*) FROM crash.clog")
    column_rows = cur.fetchone()[0]
    cur.execute("SELECT count(*) FROM crash.log")
    full = cur.fetchone()[0]
    cur.execute("SELECT count(*) FROM crash.log WHERE worker BETWEEN 0 AND 1000000")
    via_index = cur.fetchone()[0]
    if full != via_index:
        problems.append(f"index count {via_index} != scan count {full}")
    cur.execute("SELECT count(*) FROM crash.log WHERE id >= 0")
    via_pk = cur.fetchone()[0]
    if full != via_pk:
        problems.append(f"primary key count {via_pk} != scan count {full}")
    c.close()
    return problems, full + column_rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--report")
    ap.add_argument("--keep", action="store_true", help="keep the datadir")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    work = tempfile.mkdtemp(prefix="quarry-crash-")
    datadir = os.path.join(work, "data")
    log = os.path.join(work, "server.log")
    srv = Server(args.binary, datadir, log)
    srv.start()
    c = connect(srv.port)
    cur = c.cursor()
    cur.execute("CREATE DATABASE crash")
    cur.execute("CREATE TABLE crash.acct (id INT PRIMARY KEY, bal BIGINT NOT NULL, k INT, KEY (k))")
    cur.execute("INSERT INTO crash.acct VALUES " + ",".join(
        f"({i}, {START_BALANCE}, {i % 7})" for i in range(ACCOUNTS)))
    cur.execute("CREATE TABLE crash.log (id BIGINT PRIMARY KEY, worker INT NOT NULL, seq INT NOT NULL, "
                "part INT NOT NULL, payload VARCHAR(200), KEY (worker, seq))")
    cur.execute("CREATE TABLE crash.clog (id BIGINT PRIMARY KEY, worker INT NOT NULL, seq INT NOT NULL, "
                "part INT NOT NULL, payload VARCHAR(200)) ENGINE=COLUMN")
    cur.execute("CREATE TABLE crash.dd (id INT PRIMARY KEY, v INT NOT NULL, s VARCHAR(20))")
    cur.execute("INSERT INTO crash.dd VALUES " + ",".join(f"({i}, 3, 'str{i}')" for i in range(DD_ROWS)))
    cur.execute("CREATE TABLE crash.src (id INT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(40))")
    src = os.path.join(work, "src.tsv")
    with open(src, "w") as f:
        f.write("".join(f"{i}\t{i % 97}\tp{i}\n" for i in range(BULK_ROWS)))
    c.close()
    c = pymysql.connect(host="127.0.0.1", port=srv.port, user="root", autocommit=True,
                        local_infile=True)
    cur = c.cursor()
    cur.execute(f"LOAD DATA LOCAL INFILE '{src}' INTO TABLE crash.src")
    for t, eng in zip(BULK_TABLES, ("InnoDB", "COLUMN")):
        cur.execute(f"CREATE TABLE crash.{t} (id BIGINT PRIMARY KEY, batch INT NOT NULL, "
                    f"k INT NOT NULL, pad VARCHAR(40), KEY (batch), KEY (k)) ENGINE={eng}")
    c.close()
    model = Model()
    ddl = DdlModel()
    bulk = BulkModel()
    types = TypesModel()
    lines = []
    failed = 0
    print(f"crash loop: {args.cycles} cycles, {args.workers} workers, seed {args.seed}, dir {work}")
    for cycle in range(1, args.cycles + 1):
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(
            w + cycle * 100, srv.port, model, stop, rnd.random())) for w in range(args.workers)]
        threads.append(threading.Thread(target=ddl_worker, args=(srv.port, ddl, stop, rnd.random())))
        threads.append(threading.Thread(target=bulk_worker, args=(srv.port, bulk, stop, rnd.random(), work)))
        threads.append(threading.Thread(target=types_worker, args=(srv.port, types, stop, rnd.random())))
        before = model.acked_commits
        bulk_before = bulk.acked_statements
        ddl_before = ddl.acked
        for t in threads:
            t.start()
        time.sleep(rnd.uniform(0.5, 5.0))
        srv.kill9()
        stop.set()
        for t in threads:
            t.join()
        up = srv.start()
        problems, rows = verify(srv.port, model, cycle, ddl, bulk, types)
        acked = model.acked_commits - before
        status = "ok" if not problems else "FAIL"
        line = (f"cycle {cycle:3}: {status}  acknowledged commits {acked:5}  DDL {ddl.acked - ddl_before:3}"
                f"  bulk {bulk.acked_statements - bulk_before:2}  rows {rows:6}  restart {up:5.2f} s")
        print(line, flush=True)
        lines.append(line)
        for p in problems[:20]:
            print("   ", p)
            lines.append("    " + p)
        if problems:
            failed += 1
    srv.stop()
    recov = [ln for ln in open(log) if "recovery" in ln]
    summary = (f"{args.cycles - failed}/{args.cycles} cycles passed, {model.acked_commits} acknowledged "
               f"commits, {ddl.acked} DDL statements and {bulk.acked_statements} bulk statements "
               f"of {BULK_ROWS} rows ({bulk.interrupted} more killed mid-way), none lost or half done"
               if not failed else f"{failed} of {args.cycles} cycles FAILED")
    print(summary)
    if args.report:
        with open(args.report, "w") as f:
            f.write("# Crash loop report\n\n")
            f.write(f"Command: `tests/crash/crash_loop.py target/release/quarry --cycles {args.cycles} "
                    f"--workers {args.workers} --seed {args.seed}`\n\n")
            f.write(f"Result: {summary}.\n\n```text\n")
            f.write("\n".join(lines) + "\n```\n\nServer recovery lines:\n\n```text\n")
            f.write("".join(recov[-args.cycles:]) + "```\n")
    if not args.keep and not failed:
        shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
