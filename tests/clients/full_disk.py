#!/usr/bin/env python3
"""A full disk over a real file system: the server's datadir on a small tmpfs, filled by
inserts (row and column tables, multi-row statements and LOAD DATA LOCAL) until they
fail. A statement that failed must have changed nothing (it used to commit anyway: a
retry then hit 1062); once space returns the server serves on without a restart, and
after a kill -9 every acknowledged row is there and CHECK TABLE passes.

usage: full_disk.py BIN   (needs root to mount a tmpfs; says so and exits 0 otherwise)
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pymysql

from qtest import free_port

BATCH = 1000


def start(binary, datadir, log):
    port = free_port()
    proc = subprocess.Popen([binary, "serve", "--datadir", datadir, "--port", str(port),
                             "--innodb-log-file-size", "4M"],
                            stdout=open(log, "a"), stderr=subprocess.STDOUT)
    for _ in range(300):
        if proc.poll() is not None:
            sys.exit("server exited; see " + log)
        try:
            c = pymysql.connect(host="127.0.0.1", port=port, user="root", autocommit=True,
                                local_infile=True, read_timeout=120)
            return proc, c
        except pymysql.err.OperationalError:
            time.sleep(0.1)
    sys.exit("server did not start; see " + log)


def rows(b):
    return [(b * BATCH + i, "x" * 150, i) for i in range(BATCH)]


def insert(cur, table, b, tmp):
    if b % 3 == 2:
        path = os.path.join(tmp, f"b{b}.tsv")
        with open(path, "w") as f:
            f.write("".join(f"{i}\t{p}\t{k}\n" for i, p, k in rows(b)))
        cur.execute(f"LOAD DATA LOCAL INFILE '{path}' INTO TABLE {table}")
    else:
        cur.execute(f"INSERT INTO {table} VALUES " + ",".join(f"({i},'{p}',{k})" for i, p, k in rows(b)))


def count(cur, table, b):
    cur.execute(f"SELECT count(*) FROM {table} WHERE id BETWEEN {b * BATCH} AND {b * BATCH + BATCH - 1}")
    return cur.fetchone()[0]


def main():
    binary = sys.argv[1]
    mnt = tempfile.mkdtemp(prefix="quarry-full-")
    tmp = tempfile.mkdtemp(prefix="quarry-full-in-")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mnt],
                      stderr=subprocess.DEVNULL).returncode != 0:
        print("     full disk: cannot mount a tmpfs here (not root?): skipped")
        return 0
    log = os.path.join(tmp, "server.log")
    datadir = os.path.join(mnt, "data")
    proc = None
    try:
        proc, c = start(binary, datadir, log)
        cur = c.cursor()
        cur.execute("CREATE DATABASE f")
        cur.execute("CREATE TABLE f.r (id INT PRIMARY KEY, pad VARCHAR(200), k INT, KEY (k))")
        cur.execute("CREATE TABLE f.c (id INT PRIMARY KEY, pad VARCHAR(200), k INT) ENGINE=COLUMN")
        ok = {"f.r": [], "f.c": []}
        failed = {"f.r": [], "f.c": []}
        for b in range(2000):
            table = "f.r" if b % 2 == 0 else "f.c"
            try:
                insert(cur, table, b, tmp)
                ok[table].append(b)
            except pymysql.err.MySQLError as e:
                if e.args[0] not in (1021, 1030):
                    sys.exit(f"batch {b}: unexpected error {e}")
                failed[table].append(b)
                if sum(len(v) for v in failed.values()) >= 12:
                    break
        if not all(failed.values()):
            sys.exit(f"the disk never filled: {[len(v) for v in failed.values()]} failures")
        for table, bs in failed.items():
            for b in bs:
                if count(cur, table, b) != 0:
                    sys.exit(f"{table} batch {b} failed, yet its rows are there")
        # Space returns: the same server takes the failed batches (no duplicates).
        subprocess.run(["mount", "-o", "remount,size=512m", mnt], check=True)
        for table, bs in failed.items():
            for b in bs:
                insert(cur, table, b, tmp)
                ok[table].append(b)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc, c = start(binary, datadir, log)
        cur = c.cursor()
        for table, bs in ok.items():
            cur.execute(f"SELECT count(*) FROM {table}")
            n = cur.fetchone()[0]
            if n != len(bs) * BATCH:
                sys.exit(f"{table}: {n} rows after restart, {len(bs) * BATCH} acknowledged")
            cur.execute(f"CHECK TABLE {table}")
            r = cur.fetchall()
            if r[-1][3] != "OK":
                sys.exit(f"CHECK TABLE {table}: {r}")
        print(f"     full disk: {sum(len(v) for v in failed.values())} statements refused on a 48 MiB "
              f"tmpfs changed nothing; {sum(len(v) for v in ok.values())} acknowledged batches all "
              f"there after space returned and a kill -9")
        return 0
    finally:
        if proc and proc.poll() is None:
            proc.kill()
            proc.wait()
        subprocess.run(["umount", mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(mnt, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
