#!/usr/bin/env python3
"""Recovery time after a crash with a large un-checkpointed log.

Starts `quarry serve` with a log file size larger than the target so no checkpoint runs,
writes through the MySQL protocol until the log holds --log-mb of records (row inserts
with a secondary index, updates, deletes, each statement its own transaction), kills the
server with SIGKILL, restarts it and reports how long until it accepts a query, with
the server's own recovery line. Then checks the rows are all there.

usage: recovery_time.py BIN [--log-mb 1024]
"""

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pymysql


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(binary, datadir, port, log):
    out = open(log, "a")
    proc = subprocess.Popen([binary, "serve", "--datadir", datadir, "--port", str(port),
                             "--innodb-log-file-size", "64G"], stdout=out, stderr=out)
    t0 = time.time()
    while True:
        if proc.poll() is not None:
            sys.exit("server exited; see " + log)
        try:
            pymysql.connect(host="127.0.0.1", port=port, user="root", connect_timeout=2).close()
            return proc, time.time() - t0
        except pymysql.err.OperationalError:
            time.sleep(0.02)


def log_bytes(datadir):
    d = os.path.join(datadir, "#wal")
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d) if f.endswith(".log"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binary")
    ap.add_argument("--log-mb", type=int, default=1024)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="quarry-recovery-")
    datadir, log = os.path.join(work, "data"), os.path.join(work, "server.log")
    port = free_port()
    proc, _ = start(args.binary, datadir, port, log)
    c = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True)
    cur = c.cursor()
    cur.execute("CREATE DATABASE r")
    cur.execute("CREATE TABLE r.t (id BIGINT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(120), KEY (k))")
    target = args.log_mb << 20
    next_id = 0
    t0 = time.time()
    while log_bytes(datadir) < target:
        rows = ",".join(f"({next_id + i}, {(next_id + i) * 7919 % 100000}, '{'p' * 100}')"
                        for i in range(1000))
        cur.execute("INSERT INTO r.t VALUES " + rows)
        next_id += 1000
        cur.execute(f"UPDATE r.t SET k = k + 1 WHERE id BETWEEN {next_id - 500} AND {next_id - 400}")
        cur.execute(f"DELETE FROM r.t WHERE id BETWEEN {next_id - 1000} AND {next_id - 990}")
    cur.execute("SELECT count(*) FROM r.t")
    want = cur.fetchone()[0]
    c.close()
    wrote = log_bytes(datadir)
    print(f"wrote {wrote / 2**20:.0f} MiB of log in {time.time() - t0:.0f} s ({want} rows); kill -9")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc, up = start(args.binary, datadir, port, log)
    line = [ln.strip() for ln in open(log) if "recovery scanned" in ln][-1:]
    c = pymysql.connect(host="127.0.0.1", port=port, user="root")
    cur = c.cursor()
    cur.execute("SELECT count(*) FROM r.t")
    got = cur.fetchone()[0]
    cur.execute("CHECK TABLE r.t")
    check = cur.fetchall()[-1][3]
    c.close()
    proc.terminate()
    proc.wait()
    print(f"restart until the first query answered: {up:.1f} s")
    print("server: " + (line[0] if line else "(no recovery line)"))
    print(f"rows {got} of {want}, CHECK TABLE {check}")
    ok = got == want and check == "OK"
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
