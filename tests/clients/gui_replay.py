"""Replay the statements a GUI sends (tests/clients/fixtures/gui-replay.sql) and print,
for each, the columns of its answer or its error code: tools read answers by column name,
so a missing column breaks them as an error does. The client suite compares the output
with MariaDB 10.11's (fixtures/gui-replay.expected).

Usage: gui_replay.py PORT USER FILE. EXPLAIN's `filtered` column is left out of the
comparison: Quarry's plain EXPLAIN has it (MySQL's layout, COMPAT.md), MariaDB's not."""
import sys

import pymysql

port, user, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = pymysql.connect(host="127.0.0.1", port=port, user=user, autocommit=True)
cur = c.cursor()
for stmt in [
    "DROP DATABASE IF EXISTS gui",
    "CREATE DATABASE gui",
    "CREATE TABLE gui.customers (name VARCHAR(20) PRIMARY KEY, city VARCHAR(20))",
    "CREATE TABLE gui.orders (id INT AUTO_INCREMENT PRIMARY KEY, customer VARCHAR(20) NOT NULL, "
    "amount DECIMAL(8,2) CHECK (amount >= 0), placed DATETIME DEFAULT CURRENT_TIMESTAMP, "
    "KEY by_customer (customer), CONSTRAINT fk_customer FOREIGN KEY (customer) "
    "REFERENCES gui.customers (name)) COMMENT 'orders'",
    "INSERT INTO gui.customers VALUES ('ann', 'Oslo'), ('bob', 'Rome')",
    "INSERT INTO gui.orders (customer, amount) VALUES ('ann', 10), ('bob', 20), ('ann', 30)",
    "CREATE VIEW gui.big_orders AS SELECT id, amount FROM gui.orders WHERE amount > 15",
]:
    cur.execute(stmt)
for line in open(path):
    q = line.strip()
    if not q:
        continue
    if q.startswith("--"):
        print(q)
        continue
    try:
        cur.execute(q)
        cols = [d[0] for d in cur.description] if cur.description else None
        cur.fetchall()
        if cols is not None and q.upper().startswith("EXPLAIN"):
            cols = [x for x in cols if x != "filtered"]
        print("ok", q[:60], "| columns:", ",".join(cols) if cols is not None else "-")
    except pymysql.MySQLError as e:
        print("ERR", e.args[0], q[:60])
cur.execute("DROP DATABASE gui")
