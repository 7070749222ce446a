"""The seed workload in DuckDB (in-process), run by quarry-bench.

Prints one tab-separated line per result, which the harness parses:
  version <v>
  time <item> <count or -> <seconds or error> <answer>
  fact <item> <value>
Item names must match crates/quarry-bench/src/seed.rs.
"""
import os
import statistics
import sys
import threading
import time

import duckdb

db_path, big, small, t1_empty, t1_half, big_rows, t1_rows, timeout = sys.argv[1:9]
timeout = float(timeout)

PRODUCT = ("(Id char(8), PZN char(7), EVP char(8), HAP char(8), ArtikelBez varchar(40), "
           "ArtikelText varchar(26), Hersteller char(5))")
QUERIES = [
    ("a) count Hersteller='36440'", "SELECT count(*) FROM TestBig WHERE Hersteller = '36440'"),
    ("b) count Hersteller='ABCDE'", "SELECT count(*) FROM TestBig WHERE Hersteller = 'ABCDE'"),
    ("c) count Hersteller<>'ABCDE'", "SELECT count(*) FROM TestBig WHERE Hersteller <> 'ABCDE'"),
    ("d) join TestSmall x TestBig",
     "SELECT count(*) FROM TestSmall A JOIN TestBig B ON (A.PZN = B.PZN) "
     "WHERE A.Hersteller = '08650' AND B.Hersteller = '36440'"),
]
INDEXES = [
    ("e) CREATE INDEX TestBig(PZN)", "CREATE INDEX idx_big_pzn ON TestBig (PZN)"),
    ("e) CREATE INDEX TestBig(Hersteller)", "CREATE INDEX idx_big_h ON TestBig (Hersteller)"),
    ("e) CREATE INDEX TestSmall(PZN)", "CREATE INDEX idx_small_pzn ON TestSmall (PZN)"),
    ("e) CREATE INDEX TestSmall(Hersteller)", "CREATE INDEX idx_small_h ON TestSmall (Hersteller)"),
]
# DuckDB rejects a bare non-grouped column, so col1 goes through any_value().
GROUP_BY = "SELECT any_value(col1) FROM t1 GROUP BY col2, uniqe LIMIT 1"


def emit(*fields):
    print("\t".join(str(f) for f in fields), flush=True)


con = duckdb.connect(db_path)
emit("version", duckdb.__version__)


def timed(sql):
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - t0, (rows[0][0] if rows else None)


def query(name, sql):
    try:
        first, answer = timed(sql)
        runs = [first]
        if first <= 60:
            runs += [timed(sql)[0] for _ in range(2)]
        emit("time", name, "-", f"{statistics.median(runs):.6f}", answer)
    except Exception as e:  # noqa: BLE001 - reported, never fatal
        emit("time", name, "-", f"error: {e}".replace("\t", " ")[:60], "")


def load(name, table, path, rows):
    try:
        t0 = time.perf_counter()
        con.execute(f"COPY {table} FROM '{path}' (FORMAT csv, DELIMITER '\t', HEADER false, "
                    "QUOTE '', ESCAPE '')")
        secs = time.perf_counter() - t0
        emit("time", name, rows, f"{secs:.6f}", "")
        emit("fact", name, f"{int(rows) / secs:.0f} rows/s")
    except Exception as e:  # noqa: BLE001
        emit("time", name, rows, f"error: {e}".replace("\t", " ")[:60], "")
    con.execute("CHECKPOINT")


def peak_temp(fn):
    st = os.statvfs(os.path.dirname(db_path))
    before = st.f_bavail * st.f_frsize
    low = [before]
    done = threading.Event()

    def sample():
        while not done.is_set():
            s = os.statvfs(os.path.dirname(db_path))
            low[0] = min(low[0], s.f_bavail * s.f_frsize)
            time.sleep(0.02)

    t = threading.Thread(target=sample)
    t.start()
    try:
        fn()
    finally:
        done.set()
        t.join()
    return before - low[0]


con.execute(f"CREATE TABLE TestBig {PRODUCT}")
con.execute(f"CREATE TABLE TestSmall {PRODUCT}")
load("load TestBig", "TestBig", big, big_rows)
load("load TestSmall", "TestSmall", small, 301036)
for phase in ["", " (indexed)"]:
    if phase:
        for name, sql in INDEXES:
            try:
                emit("time", name, "-", f"{timed(sql)[0]:.6f}", "")
            except Exception as e:  # noqa: BLE001
                emit("time", name, "-", f"error: {e}"[:60], "")
    for name, sql in QUERIES:
        query(name + phase, sql)
for what, path in [("col2 1 char", t1_empty), ("col2 1024 chars", t1_half)]:
    con.execute("DROP TABLE IF EXISTS t1")
    con.execute("CREATE TABLE t1 (uniqe int, col1 varchar(10), col2 varchar(2048))")
    load(f"load t1 ({what})", "t1", path, t1_rows)
    name = f"f) GROUP BY col2, uniqe ({what})"
    peak = peak_temp(lambda: query(name, GROUP_BY))
    emit("fact", f"{name}: peak temp bytes", peak)
con.execute("DROP TABLE IF EXISTS t1")
con.execute("CHECKPOINT")
emit("fact", "size database file", os.path.getsize(db_path))
