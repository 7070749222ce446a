#!/usr/bin/env python3
"""A datadir with 100 000 tables (issue 16, item 11): the server starts without opening
them, serves any of them with its descriptors bounded by table_open_cache, creates and
drops more, and keeps what was written across a clean restart. Prints the startup time,
open descriptors and resident memory.

The datadir is made by a release server and then multiplied: the server creates and fills
template tables and stops cleanly; each copy is the template's data file with a definition
file naming the copy — the files CREATE TABLE would have written (creating 100 000 tables
one statement at a time takes about 7 minutes here, most of it in fsync).

usage: many_tables.py BIN [--tables N]   (exit 0 when every check held)
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pymysql

from qtest import free_port


class Server:
    def __init__(self, binary, datadir, log):
        self.port = free_port()
        self.log = open(log, "a")
        self.t0 = time.time()
        self.proc = subprocess.Popen(
            [binary, "serve", "--datadir", datadir, "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(600):
            try:
                self.connect().close()
                self.up_after = time.time() - self.t0
                return
            except pymysql.err.OperationalError:
                if self.proc.poll() is not None:
                    sys.exit("server exited at startup; see " + log)
                time.sleep(0.05)
        sys.exit("server did not come up")

    def connect(self):
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root",
                               autocommit=True, read_timeout=600)

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def rss_mib(self):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith("VmRSS"):
                return int(line.split()[1]) // 1024
        return 0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--tables", type=int, default=100_000)
    args = ap.parse_args()
    n = args.tables
    work = tempfile.mkdtemp(prefix="quarry-many-")
    data = os.path.join(work, "data")
    log = os.path.join(work, "server.log")
    problems = []
    try:
        srv = Server(args.binary, data, log)
        c = srv.connect()
        cur = c.cursor()
        cur.execute("CREATE DATABASE m")
        cur.execute("SET GLOBAL table_open_cache = 400")
        # Templates: a plain DYNAMIC table, and one in 100 with a primary key (an index
        # file each).
        cur.execute("CREATE TABLE m.plain (a INT, v VARCHAR(20))")
        cur.execute("INSERT INTO m.plain VALUES (1, 'one'), (2, 'two')")
        cur.execute("CREATE TABLE m.keyed (a INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute("INSERT INTO m.keyed VALUES (1, 'one'), (2, 'two')")
        c.close()
        srv.stop()

        d = os.path.join(data, "m")
        t0 = time.time()
        for kind in ("plain", "keyed"):
            qdef = open(os.path.join(d, f"{kind}.qdef"), encoding="utf-8").read()
            assert f"CREATE TABLE `{kind}`" in qdef, qdef
            files = [f for f in os.listdir(d) if f.startswith(kind + ".") and not f.endswith(".qdef")]
            blobs = {f[len(kind):]: open(os.path.join(d, f), "rb").read() for f in files}
            for i in range(n):
                if (i % 100 == 0) != (kind == "keyed"):
                    continue
                name = f"t{i}"
                with open(os.path.join(d, name + ".qdef"), "w", encoding="utf-8") as f:
                    f.write(qdef.replace(f"CREATE TABLE `{kind}`", f"CREATE TABLE `{name}`", 1))
                for suffix, b in blobs.items():
                    with open(os.path.join(d, name + suffix), "wb") as f:
                        f.write(b)
        print(f"     {n} tables written in {time.time() - t0:.1f} s")

        srv = Server(args.binary, data, log)
        print(f"     startup with {n + 2} tables: {srv.up_after:.1f} s, {srv.fds()} descriptors, "
              f"{srv.rss_mib()} MiB resident")
        c = srv.connect()
        cur = c.cursor()
        cur.execute("SET GLOBAL table_open_cache = 400")
        cur.execute("SHOW TABLES FROM m")
        have = len(cur.fetchall())
        if have != n + 2:
            problems.append(f"SHOW TABLES lists {have} tables, not {n + 2}")
        step = max(1, n // 3000)
        t0 = time.time()
        for i in range(0, n, step):
            cur.execute(f"SELECT sum(a), max(v) FROM m.t{i}")
            got = cur.fetchone()
            if got != (3, "two"):
                problems.append(f"t{i}: {got}")
                break
        touched = len(range(0, n, step))
        fds = srv.fds()
        print(f"     {touched} tables read in {time.time() - t0:.1f} s; {fds} descriptors open")
        if fds > 2 * 400 + 100:
            problems.append(f"{fds} descriptors open past table_open_cache 400")
        for i in range(0, n, n // 100):
            cur.execute(f"INSERT INTO m.t{i} VALUES ({i + 10}, 'new')")
        cur.execute("CREATE TABLE m.extra (a INT PRIMARY KEY)")
        cur.execute("INSERT INTO m.extra VALUES (7)")
        cur.execute(f"DROP TABLE m.t{n - 1}")
        try:
            cur.execute(f"SELECT * FROM m.t{n - 1}")
            problems.append("a dropped table still answers")
        except pymysql.err.ProgrammingError as e:
            if e.args[0] != 1146:
                problems.append(f"dropped table: {e}")
        c.close()
        srv.stop()

        srv = Server(args.binary, data, log)
        print(f"     restart: {srv.up_after:.1f} s")
        c = srv.connect()
        cur = c.cursor()
        cur.execute("SHOW TABLES FROM m")
        have = len(cur.fetchall())
        if have != n + 2:
            problems.append(f"after restart SHOW TABLES lists {have} tables, not {n + 2}")
        for i in range(0, n, n // 100):
            cur.execute(f"SELECT count(*), sum(a) FROM m.t{i}")
            got = cur.fetchone()
            if got != (3, 3 + i + 10):
                problems.append(f"t{i} after restart: {got}")
                break
        cur.execute("SELECT a FROM m.extra")
        if cur.fetchall() != ((7,),):
            problems.append("m.extra lost its row")
        cur.execute("CHECK TABLE m.t0, m.t1, m.extra")
        for r in cur.fetchall():
            if r[3] != "OK":
                problems.append(f"CHECK TABLE: {r}")
        c.close()
        srv.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for p in problems:
        print("     problem:", p)
    print(f"     many tables: {'held' if not problems else 'FAILED'}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
