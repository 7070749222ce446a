"""The TPC-H phase in DuckDB (in-process), run by quarry-bench.

Arguments: database file, directory of tpchgen-cli .tbl files, schema file, query files.
Prints one tab-separated line per result, which the harness parses:
  version <v>
  time <item> <count or -> <seconds or error> <rows returned>
Item names must match crates/quarry-bench/src/tpch.rs.
"""
import re
import statistics
import sys
import time

import duckdb

db_path, data_dir, schema_path, *query_paths = sys.argv[1:]
TABLES = ["region", "nation", "part", "supplier", "partsupp", "customer", "orders", "lineitem"]


def emit(*fields):
    print("\t".join(str(f) for f in fields), flush=True)


def clean_error(e):
    return f"error: {e}".replace("\t", " ").replace("\n", " ")[:60]


con = duckdb.connect(db_path)
emit("version", duckdb.__version__)

# The MySQL schema as written, less its secondary KEY clauses (DuckDB has no inline
# index syntax); primary keys stay, as in the other systems.
schema = "\n".join(l for l in open(schema_path).read().splitlines() if not l.startswith("--"))
for stmt in schema.split(";"):
    stmt = re.sub(r",\s*KEY \([^)]*\)", "", stmt).strip()
    if stmt:
        con.execute(stmt)

rows_loaded = 0
t0 = time.perf_counter()
try:
    for t in TABLES:
        ncol = len(con.execute(f"SELECT * FROM {t} LIMIT 0").description)
        # .tbl lines end with a '|': one more (empty) field than the table has columns.
        cols = ", ".join(f"'c{i}': 'VARCHAR'" for i in range(ncol + 1))
        pick = ", ".join(f"c{i}" for i in range(ncol))
        con.execute(f"INSERT INTO {t} SELECT {pick} FROM read_csv('{data_dir}/{t}.tbl', "
                    f"delim='|', header=false, quote='', escape='', columns={{{cols}}})")
        rows_loaded += con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    con.execute("CHECKPOINT")
    emit("time", "load", rows_loaded, f"{time.perf_counter() - t0:.6f}", "")
except Exception as e:  # noqa: BLE001 - reported, never fatal
    emit("time", "load", "-", clean_error(e), "")


def timed(sql):
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - t0, len(rows)


for path in query_paths:
    name = path.rsplit("/", 1)[-1].split(".")[0].upper()
    sql = open(path).read().strip().rstrip(";")
    try:
        first, n = timed(sql)
        runs = [first]
        if first <= 60:
            runs += [timed(sql)[0] for _ in range(2)]
        emit("time", name, "-", f"{statistics.median(runs):.6f}", n)
    except Exception as e:  # noqa: BLE001
        emit("time", name, "-", clean_error(e), "")
