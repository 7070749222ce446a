"""The embedded shell on a terminal: a statement's time is its own. Every statement that
wrote (and BEGIN, COMMIT) printed "(0.20 sec)": it waited for the progress line's thread
to finish a 200 ms sleep (issue 19, item 6). Runs `quarry sql` under a pseudo-terminal,
sends statements one per line, and checks each reported time; then that `pager CMD`
hands a statement's output to the pager."""

import os
import pty
import re
import select
import shutil
import sys
import tempfile
import time

BIN = sys.argv[1]


def main():
    datadir = tempfile.mkdtemp(prefix="quarry-tty-")
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(BIN, [BIN, "sql", "--datadir", os.path.join(datadir, "d")])
    out = b""

    def read_until(done, timeout=30):
        nonlocal out
        end = time.time() + timeout
        while not done(out):
            if time.time() > end:
                raise SystemExit("timed out; got:\n%s" % out.decode(errors="replace"))
            r, _, _ = select.select([fd], [], [], 0.5)
            if r:
                try:
                    out += os.read(fd, 65536)
                except OSError:
                    break

    read_until(lambda o: b"quarry [" in o)
    statements = [
        "CREATE DATABASE s;",
        "CREATE TABLE s.t (a INT);",
        "INSERT INTO s.t VALUES (1), (2);",
        "BEGIN;",
        "UPDATE s.t SET a = a + 1;",
        "COMMIT;",
        "DELETE FROM s.t WHERE a = 2;",
        "SELECT COUNT(*) FROM s.t\\G",
    ]
    timed = re.compile(rb"\(\d+\.\d+ sec\)")
    for i, stmt in enumerate(statements):
        os.write(fd, stmt.encode() + b"\r")
        read_until(lambda o: len(timed.findall(o)) > i)
    # A pager takes each statement's output (`pager CMD`), `nopager` gives it back.
    paged = os.path.join(datadir, "paged.txt")
    os.write(fd, ("pager cat > %s\r" % paged).encode())
    read_until(lambda o: b"PAGER set to" in o)
    os.write(fd, b"SELECT 6 * 7 AS paged_answer;\r")
    end = time.time() + 30
    while not (os.path.exists(paged) and b"paged_answer" in open(paged, "rb").read()):
        if time.time() > end:
            raise SystemExit("the pager got nothing; output:\n" + out.decode(errors="replace"))
        time.sleep(0.1)
    if not re.search(rb"\|\s+42 \|", open(paged, "rb").read()):
        raise SystemExit("pager output: %r" % open(paged, "rb").read())
    os.write(fd, b"nopager\r")
    read_until(lambda o: b"PAGER set to stdout" in o)
    os.write(fd, b"exit\r")
    time.sleep(0.5)
    text = out.decode(errors="replace")
    times = [float(t) for t in re.findall(r"\((\d+\.\d+) sec\)", text)]
    if len(times) < len(statements):
        raise SystemExit("expected a time per statement; got:\n" + text)
    slow = [t for t in times if t >= 0.15]
    if slow:
        raise SystemExit("statements reported %s s; output:\n%s" % (slow, text))
    print("%d statements, times %s" % (len(times), times))
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    shutil.rmtree(datadir, ignore_errors=True)


main()
