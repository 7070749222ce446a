#!/usr/bin/env python3
"""Crash loop: a concurrent write workload over the MySQL protocol, `kill -9` of the
server at a random moment, restart, and checks that

  * every commit acknowledged to a client is there (inserts present, deletes gone,
    updates at their last acknowledged version or a newer in-flight one),
  * no transaction is partly visible (transfers keep the balance total; every insert
    group has all of its rows or none — its rows are spread over a row table and a
    column table, so a transaction spans both engines),
  * CHECK TABLE passes and index reads agree with full scans,
  * DDL is atomic: a table being rebuilt (ALTER TABLE), re-indexed or renamed at the
    kill has its old or its new shape, all of its rows, and no temporary table is left.

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
                sql, extra2 = f"ALTER TABLE {name} ADD COLUMN {col} INT DEFAULT 7", extra | {col}
            target = (name, extra2, indexed)
        elif op < 0.6:
            if indexed:
                sql = f"DROP INDEX iv ON {name}"
            else:
                sql = f"CREATE INDEX iv ON {name} (v, id)"
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
    cols = {r[0] for r in cur.fetchall()} - {"id", "v"}
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
    cur.execute(f"CHECK TABLE crash.{name}")
    r = cur.fetchall()
    if not r or r[-1][3] != "OK":
        problems.append(f"CHECK TABLE {name}: {r}")
    # Settle to what survived.
    with model.lock:
        model.name, model.extra, model.indexed = name, set(cols), indexed
        model.pending = None
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


def verify(port, model, cycle, ddl):
    problems = []
    c = connect(port)
    cur = c.cursor()
    problems += verify_ddl(cur, ddl)
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
    cur.execute("CREATE TABLE crash.dd (id INT PRIMARY KEY, v INT NOT NULL)")
    cur.execute("INSERT INTO crash.dd VALUES " + ",".join(f"({i}, 3)" for i in range(DD_ROWS)))
    c.close()
    model = Model()
    ddl = DdlModel()
    lines = []
    failed = 0
    print(f"crash loop: {args.cycles} cycles, {args.workers} workers, seed {args.seed}, dir {work}")
    for cycle in range(1, args.cycles + 1):
        stop = threading.Event()
        threads = [threading.Thread(target=worker, args=(
            w + cycle * 100, srv.port, model, stop, rnd.random())) for w in range(args.workers)]
        threads.append(threading.Thread(target=ddl_worker, args=(srv.port, ddl, stop, rnd.random())))
        before = model.acked_commits
        ddl_before = ddl.acked
        for t in threads:
            t.start()
        time.sleep(rnd.uniform(0.3, 2.5))
        srv.kill9()
        stop.set()
        for t in threads:
            t.join()
        up = srv.start()
        problems, rows = verify(srv.port, model, cycle, ddl)
        acked = model.acked_commits - before
        status = "ok" if not problems else "FAIL"
        line = (f"cycle {cycle:3}: {status}  acknowledged commits {acked:5}  DDL {ddl.acked - ddl_before:3}"
                f"  rows {rows:6}  restart {up:5.2f} s")
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
               f"commits and {ddl.acked} DDL statements, none lost or half done"
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
