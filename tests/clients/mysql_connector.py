"""mysql-connector-python (MySQL 8's connector) with prepared cursors: every statement a server-side
prepare and execute with typed binary parameters, LIMIT ?, executemany, a duplicate-key error.
Prints one line per fact; the client suite compares them with MariaDB 10.11's
(fixtures/mysql-connector.expected). Usage: mysql_connector.py PORT USER"""
import sys, decimal, datetime
import mysql.connector
c = mysql.connector.connect(host="127.0.0.1", port=int(sys.argv[1]), user=sys.argv[2], autocommit=True)
cur = c.cursor(prepared=True)
cur.execute("DROP DATABASE IF EXISTS mc")
cur.execute("CREATE DATABASE mc")
cur.execute("CREATE TABLE mc.t (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2), at DATETIME, note TEXT)")
rows = [(1, "ann", decimal.Decimal("1.50"), datetime.datetime(2024, 1, 2, 3, 4, 5), None), (2, "bø", decimal.Decimal("20.00"), datetime.datetime(2024, 5, 6, 0, 0, 0), "x" * 300)]
for r in rows:
    cur.execute("INSERT INTO mc.t VALUES (?, ?, ?, ?, ?)", r)
print("lastrowid", cur.lastrowid, "rowcount", cur.rowcount)
cur.execute("SELECT id, name, price, at, note FROM mc.t WHERE id >= ? ORDER BY id LIMIT ?", (1, 5))
for r in cur.fetchall():
    print(r[0], r[1], r[2], r[3], None if r[4] is None else len(r[4]))
cur.executemany("UPDATE mc.t SET price = price + ? WHERE id = ?", [(1, 1), (2, 2)])
cur.execute("SELECT SUM(price) FROM mc.t")
print("sum", cur.fetchone()[0])
try:
    cur.execute("INSERT INTO mc.t (id) VALUES (?)", (1,))
except mysql.connector.Error as e:
    print("error", e.errno, e.sqlstate)
cur.execute("DROP DATABASE mc")
