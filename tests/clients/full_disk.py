#!/usr/bin/env python3
"""A full disk over a real file system: the server's datadir on a small tmpfs, filled by
inserts (row and column tables, multi-row statements and LOAD DATA LOCAL) until they
fail. A statement that failed must have changed nothing (it used to commit anyway: a
retry then hit 1062); once space returns the server serves on without a restart, and
after a kill -9 every acknowledged row is there and CHECK TABLE passes.

Then a large UPDATE runs out of space mid-way (`big_rollback`).

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


class Tmpfs:
    """A tmpfs of `size` for one scenario's datadir, with a scratch folder for the server
    log; the server started in it is killed and both are removed at the end. `mounted`
    is false where no tmpfs can be mounted (not root)."""

    def __init__(self, size):
        self.mnt = tempfile.mkdtemp(prefix="quarry-full-")
        self.tmp = tempfile.mkdtemp(prefix="quarry-full-in-")
        self.mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                                       self.mnt], stderr=subprocess.DEVNULL).returncode == 0
        self.proc = None

    def start(self, binary):
        self.proc, c = start(binary, os.path.join(self.mnt, "data"),
                             os.path.join(self.tmp, "server.log"))
        return c.cursor()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.mounted:
            subprocess.run(["umount", self.mnt], stderr=subprocess.DEVNULL)
        shutil.rmtree(self.mnt, ignore_errors=True)
        shutil.rmtree(self.tmp, ignore_errors=True)


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


def check_failure(cur, table):
    """What CHECK TABLE found wrong with `table` (None: OK)."""
    cur.execute(f"CHECK TABLE {table}")
    r = cur.fetchall()
    return None if r[-1][3] == "OK" else f"CHECK TABLE {table}: {r}"


def count(cur, table, b):
    cur.execute(f"SELECT count(*) FROM {table} WHERE id BETWEEN {b * BATCH} AND {b * BATCH + BATCH - 1}")
    return cur.fetchone()[0]


def main():
    binary = sys.argv[1]
    with Tmpfs("48m") as fs:
        if not fs.mounted:
            print("     full disk: cannot mount a tmpfs here (not root?): skipped")
            return 0
        cur = fs.start(binary)
        cur.execute("CREATE DATABASE f")
        cur.execute("CREATE TABLE f.r (id INT PRIMARY KEY, pad VARCHAR(200), k INT, KEY (k))")
        cur.execute("CREATE TABLE f.c (id INT PRIMARY KEY, pad VARCHAR(200), k INT) ENGINE=COLUMN")
        ok = {"f.r": [], "f.c": []}
        failed = {"f.r": [], "f.c": []}
        for b in range(2000):
            table = "f.r" if b % 2 == 0 else "f.c"
            try:
                insert(cur, table, b, fs.tmp)
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
        subprocess.run(["mount", "-o", "remount,size=512m", fs.mnt], check=True)
        for table, bs in failed.items():
            for b in bs:
                insert(cur, table, b, fs.tmp)
                ok[table].append(b)
        fs.kill()
        cur = fs.start(binary)
        for table, bs in ok.items():
            cur.execute(f"SELECT count(*) FROM {table}")
            n = cur.fetchone()[0]
            if n != len(bs) * BATCH:
                sys.exit(f"{table}: {n} rows after restart, {len(bs) * BATCH} acknowledged")
            failure = check_failure(cur, table)
            if failure:
                sys.exit(failure)
        print(f"     full disk: {sum(len(v) for v in failed.values())} statements refused on a 48 MiB "
              f"tmpfs changed nothing; {sum(len(v) for v in ok.values())} acknowledged batches all "
              f"there after space returned and a kill -9")
        return 0


def big_rollback(binary):
    """An UPDATE of 210 000 rows that runs out of space mid-way fails with 1021 and rolls
    back promptly, reads answer meanwhile with the old values, and once space returns the
    server writes again and a kill -9 loses nothing. Its rollback used to try writing the
    buffered log (tens of megabytes into no space) at every row it restored — minutes —
    and reads failed with 1021 after it."""
    with Tmpfs("320m") as fs:
        if not fs.mounted:
            return "skipped"
        cur = fs.start(binary)
        cur.execute("CREATE DATABASE g")
        cur.execute("CREATE TABLE g.n (a INT PRIMARY KEY)")
        cur.execute("INSERT INTO g.n VALUES " + ",".join(f"({i})" for i in range(1000)))
        cur.execute("CREATE TABLE g.big (id INT PRIMARY KEY, pad VARCHAR(200))")
        cur.execute("INSERT INTO g.big SELECT a.a * 1000 + b.a, REPEAT('p', 180) "
                    "FROM g.n a, g.n b WHERE a.a < 210")
        # Leave 40 MB: the UPDATE needs about 100 MB of log.
        st = os.statvfs(fs.mnt)
        free = st.f_bavail * st.f_frsize
        if free < 60 << 20:
            return f"only {free >> 20} MB free after loading the table"
        filler = os.path.join(fs.mnt, "filler")
        fd = os.open(filler, os.O_CREAT | os.O_WRONLY)
        os.posix_fallocate(fd, 0, free - (40 << 20))
        os.close(fd)
        want = (210000, 210000 * 180)
        t0 = time.time()
        try:
            cur.execute("UPDATE g.big SET pad = CONCAT(pad, 'u')")
            return "the UPDATE of every row succeeded with 40 MB free"
        except pymysql.err.MySQLError as e:
            if e.args[0] != 1021:
                return f"the UPDATE on the full disk: unexpected error {e}"
        took = time.time() - t0
        if took > 60:
            return f"the UPDATE refused on the full disk took {took:.0f} s to roll back"
        cur.execute("SELECT count(*), sum(length(pad)) FROM g.big")
        got = cur.fetchone()
        if got != want:
            return f"after the refused UPDATE g.big holds {got}, not {want}"
        os.remove(filler)
        cur.execute("DELETE FROM g.big WHERE id < 1000")
        fs.kill()
        cur = fs.start(binary)
        cur.execute("SELECT count(*), sum(length(pad)) FROM g.big")
        got = cur.fetchone()
        if got != (209000, 209000 * 180):
            return f"after space returned, a DELETE and a kill -9 g.big holds {got}"
        failure = check_failure(cur, "g.big")
        if failure:
            return failure
        print(f"     full disk: an UPDATE of 210 000 rows refused mid-way rolled back in "
              f"{took:.1f} s; reads went on; writes resumed when space returned")
        return None


def space_kept(binary):
    """An INSERT … SELECT bigger than the disk is refused while there is still room
    (quarry_disk_keep_free): its rollback, the checkpoint that frees its log, later
    writes, DROP TABLE and a restart all find space. It used to fill the disk: the log
    kept every byte of the rolled-back statement, DROP TABLE failed with 1021, and the
    server refused to start again ("Disk full (redo)") until files were deleted by hand."""
    with Tmpfs("400m") as fs:
        if not fs.mounted:
            return "skipped"
        cur = fs.start(binary)
        cur.execute("SET GLOBAL quarry_disk_keep_free = 100 * 1024 * 1024")
        cur.execute("CREATE DATABASE s")
        cur.execute("CREATE TABLE s.n (a INT PRIMARY KEY)")
        cur.execute("INSERT INTO s.n VALUES " + ",".join(f"({i})" for i in range(3000)))
        cur.execute("CREATE TABLE s.big (id INT PRIMARY KEY, pad VARCHAR(200))")
        cur.execute("INSERT INTO s.big SELECT a.a * 3000 + b.a, REPEAT('p', 180) "
                    "FROM s.n a, s.n b WHERE a.a < 100")
        cur.execute("CREATE TABLE s.copy (id INT, pad VARCHAR(200))")
        # 900 000 rows: about 170 MB of rows and twice that of log, more than is left.
        try:
            cur.execute("INSERT INTO s.copy SELECT b.id * 3 + x.n, b.pad FROM s.big b, "
                        "(SELECT 0 n UNION ALL SELECT 1 UNION ALL SELECT 2) x")
            return "the INSERT … SELECT bigger than the disk succeeded"
        except pymysql.err.MySQLError as e:
            if e.args[0] != 1021:
                return f"the INSERT … SELECT bigger than the disk: unexpected error {e}"
        st = os.statvfs(fs.mnt)
        left = st.f_bavail * st.f_frsize >> 20
        # The log of the rolled-back statement is given back: writes resume by themselves.
        t0 = time.time()
        while True:
            try:
                cur.execute("INSERT INTO s.n VALUES (-1)")
                break
            except pymysql.err.MySQLError as e:
                if e.args[0] != 1021 or time.time() - t0 > 15:
                    return f"after the refused INSERT, a one-row INSERT still fails: {e}"
                time.sleep(0.5)
        resumed = time.time() - t0
        fs.kill()
        cur = fs.start(binary)
        cur.execute("SELECT (SELECT count(*) FROM s.big), (SELECT count(*) FROM s.copy), "
                    "(SELECT count(*) FROM s.n)")
        got = cur.fetchone()
        if got != (300000, 0, 3001):
            return f"after the refusal and a kill -9, counts are {got}, not (300000, 0, 3001)"
        cur.execute("DROP TABLE s.copy")
        failure = check_failure(cur, "s.big")
        if failure:
            return failure
        print(f"     full disk: an INSERT … SELECT bigger than the disk refused with {left} MB "
              f"left; writes resumed {resumed:.1f} s later; restarted after a kill -9")
        return None


if __name__ == "__main__":
    rc = main()
    if rc:
        sys.exit(rc)
    for scenario in (big_rollback, space_kept):
        failure = scenario(sys.argv[1])
        if failure and failure != "skipped":
            sys.exit(failure)
