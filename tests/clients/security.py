#!/usr/bin/env python3
"""Issue 17's scenario over real sockets with PyMySQL and the mariadb CLI: an account
granted `SELECT ON db1.*` only tries every escalation that used to work (insert into db1,
read and drop db2's tables, create an account without a password, set root's password,
create root@'%', see and KILL root's connection, SET GLOBAL, LOAD DATA INFILE of
/etc/passwd); each is refused with MariaDB 10.11's code and root still works. Then: grants
survive a clean restart and a kill -9, a role is activated, the lines SHOW GRANTS
prints recreate the same grants on a second server (a dump of grants round-trips), and
TLS works out of the box: the mariadb CLI and PyMySQL verify the server against the CA
made in the datadir, a REQUIRE SSL account is refused without TLS (1045),
mysql-connector-python logs in with caching_sha2_password, and the CLI with ed25519.

usage: security.py BIN   (exit 0 when every check held)
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


class Server:
    def __init__(self, binary, datadir, log):
        self.binary, self.datadir, self.logpath = binary, datadir, log
        self.start()

    def start(self):
        self.port = free_port()
        self.log = open(self.logpath, "a")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--datadir", self.datadir, "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(400):
            try:
                self.connect().close()
                return
            except pymysql.err.OperationalError:
                if self.proc.poll() is not None:
                    sys.exit("server exited at startup; see " + self.logpath)
                time.sleep(0.05)
        sys.exit("server did not come up")

    def connect(self, user="root", password=""):
        return pymysql.connect(host="127.0.0.1", port=self.port, user=user,
                               password=password, autocommit=True)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        self.proc.wait(timeout=60)
        self.log.close()


failures = []


def check(what, cond):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def code_of(cur, sql):
    try:
        cur.execute(sql)
        return 0
    except pymysql.err.MySQLError as e:
        return e.args[0]


def grants(cur, who):
    cur.execute(f"SHOW GRANTS FOR {who}")
    return [r[0] for r in cur.fetchall()]


def main():
    binary = os.path.abspath(sys.argv[1])
    work = tempfile.mkdtemp(prefix="quarry-security-")
    try:
        run(binary, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} failed")


def run(binary, work):
    srv = Server(binary, os.path.join(work, "data"), os.path.join(work, "server.log"))
    root = srv.connect().cursor()
    for sql in [
        "CREATE DATABASE db1", "CREATE DATABASE db2",
        "CREATE TABLE db1.t (a INT PRIMARY KEY, b INT)", "CREATE TABLE db2.secret (x INT)",
        "INSERT INTO db1.t VALUES (1, 10)", "INSERT INTO db2.secret VALUES (42)",
        "CREATE USER 'reader'@'%' IDENTIFIED BY 'rpw'",
        "GRANT SELECT ON db1.* TO 'reader'@'%'",
    ]:
        root.execute(sql)
    root.execute("SELECT CONNECTION_ID()")
    root_id = root.fetchone()[0]

    app = srv.connect("reader", "rpw").cursor()
    app.execute("SELECT a, b FROM db1.t")
    check("the SELECT it was granted works", app.fetchall() == ((1, 10),))
    refusals = [
        ("INSERT INTO db1.t VALUES (2, 20)", 1142),
        ("SELECT * FROM db2.secret", 1142),
        ("DROP TABLE db2.secret", 1142),
        ("CREATE USER 'evil'@'%'", 1227),
        ("SET PASSWORD FOR 'root'@'localhost' = PASSWORD('owned')", 1044),
        ("CREATE USER 'root'@'%'", 1227),
        ("GRANT ALL ON *.* TO 'reader'@'%'", 1045),
        ("GRANT SELECT ON db2.* TO 'reader'@'%'", 1044),
        (f"KILL {root_id}", 1095),
        ("SET GLOBAL max_connections = 3", 1227),
        ("LOAD DATA INFILE '/etc/passwd' INTO TABLE db1.t", 1045),
        ("SELECT 1 INTO OUTFILE 'x.txt'", 1227),
        ("USE db2", 1044),
    ]
    for sql, want in refusals:
        got = code_of(app, sql)
        check(f"reader: {sql} -> {want} (got {got})", got == want)
    app.execute("SHOW PROCESSLIST")
    check("reader's process list holds its own thread only",
          {r[1] for r in app.fetchall()} == {"reader"})
    app.execute("SELECT LOAD_FILE('/etc/passwd')")
    check("LOAD_FILE without FILE is NULL", app.fetchone()[0] is None)
    root.execute("SELECT COUNT(*) FROM db1.t")
    check("nothing refused changed a row", root.fetchone()[0] == 1)
    root.execute("SELECT x FROM db2.secret")
    check("root still reads db2", root.fetchall() == ((42,),))
    check("root may still SET GLOBAL", code_of(root, "SET GLOBAL max_connections = 151") == 0)
    try:
        srv.connect("evil").close()
        check("no account 'evil' was made", False)
    except pymysql.err.OperationalError as e:
        check("no account 'evil' was made", e.args[0] == 1045)

    # The mariadb CLI sees the same refusal.
    cli = subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{srv.port}", "-ureader", "-prpw", "-e",
         "DELETE FROM db1.t"], capture_output=True, text=True)
    check("mariadb CLI: DELETE refused with 1142",
          cli.returncode != 0 and "ERROR 1142" in cli.stderr)

    # Roles and column privileges.
    for sql in [
        "CREATE ROLE writer", "GRANT INSERT, UPDATE (b) ON db1.t TO writer",
        "GRANT writer TO 'reader'@'%'",
    ]:
        root.execute(sql)
    check("INSERT before SET ROLE is refused",
          code_of(app, "INSERT INTO db1.t VALUES (2, 20)") == 1142)
    app.execute("SET ROLE writer")
    check("INSERT with the role active works",
          code_of(app, "INSERT INTO db1.t VALUES (2, 20)") == 0)
    check("UPDATE of a granted column works", code_of(app, "UPDATE db1.t SET b = 21 WHERE a = 2") == 0)
    check("UPDATE of another column is 1143", code_of(app, "UPDATE db1.t SET a = 3 WHERE a = 2") == 1143)
    root.execute("GRANT SELECT (x) ON db2.secret TO 'reader'@'%'")

    before = grants(root, "'reader'@'%'")
    role_before = grants(root, "writer")
    # A clean restart, then a kill -9 right after a GRANT was answered.
    srv.stop()
    srv.start()
    root = srv.connect().cursor()
    check("grants survive a restart", grants(root, "'reader'@'%'") == before)
    root.execute("GRANT DELETE ON db1.* TO 'reader'@'%'")
    after_kill = grants(root, "'reader'@'%'")
    srv.stop(signal.SIGKILL)
    srv.start()
    root = srv.connect().cursor()
    check("a GRANT answered before kill -9 is kept", grants(root, "'reader'@'%'") == after_kill)
    check("the role's grants too", grants(root, "writer") == role_before)
    app = srv.connect("reader", "rpw").cursor()
    check("DELETE granted before the kill works", code_of(app, "DELETE FROM db1.t WHERE a = 2") == 0)

    # TLS out of the box: the CLI and PyMySQL verify the server with the datadir's CA.
    ca = os.path.join(srv.datadir, "ca.pem")
    cli = subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{srv.port}", "-ureader", "-prpw", f"--ssl-ca={ca}",
         "--ssl-verify-server-cert", "-N", "-e", "SHOW STATUS LIKE 'Ssl_version'"],
        capture_output=True, text=True)
    check(f"mariadb --ssl-verify-server-cert: {cli.stdout.strip()} {cli.stderr.strip()}",
          cli.returncode == 0 and "TLSv1." in cli.stdout)
    sc = pymysql.connect(host="127.0.0.1", port=srv.port, user="reader", password="rpw",
                         ssl_ca=ca, ssl_verify_cert=True, ssl_verify_identity=True).cursor()
    sc.execute("SHOW STATUS LIKE 'Ssl_cipher'")
    check("PyMySQL ssl=: a cipher is in use", sc.fetchone()[1] != "")
    root.execute("CREATE USER 'tlsonly'@'%' IDENTIFIED BY 'tpw' REQUIRE SSL")
    try:
        # PyMySQL asks for TLS whenever the server offers it, unless told not to.
        pymysql.connect(host="127.0.0.1", port=srv.port, user="tlsonly", password="tpw",
                        ssl_disabled=True).close()
        check("REQUIRE SSL refuses a plain login", False)
    except pymysql.err.OperationalError as e:
        check("REQUIRE SSL refuses a plain login (1045)", e.args[0] == 1045)
    pymysql.connect(host="127.0.0.1", port=srv.port, user="tlsonly", password="tpw",
                    ssl={"ca": ca}).close()
    check("REQUIRE SSL admits a TLS login", True)
    root.execute("DROP USER 'tlsonly'@'%'")

    # MariaDB's ed25519: the CLI's client_ed25519 plugin signs the server's nonce.
    root.execute("CREATE USER 'edu'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('edpw')")
    for pw, want in [("edpw", True), ("nope", False)]:
        cli = subprocess.run(
            ["mariadb", "-h127.0.0.1", f"-P{srv.port}", "-uedu", f"-p{pw}", "-N", "-e",
             "SELECT CURRENT_USER()"], capture_output=True, text=True)
        got = cli.returncode == 0 and cli.stdout.strip() == "edu@%"
        check(f"mariadb CLI ed25519 login with {'the right' if want else 'a wrong'} password"
              f" {'works' if want else 'is refused'} {cli.stderr.strip()}", got == want)
    root.execute("DROP USER 'edu'@'%'")

    # A MySQL 8-style client with caching_sha2_password: the first login over TLS sends
    # the password (full authentication), later ones pass the fast path, with or
    # without TLS.
    import mysql.connector
    for label, tls in [("full, over TLS", True), ("fast, over TLS", True),
                       ("fast, without TLS", False)]:
        opts = {"ssl_ca": ca, "ssl_verify_cert": True} if tls else {"ssl_disabled": True}
        try:
            mc = mysql.connector.connect(host="127.0.0.1", port=srv.port, user="reader",
                                         password="rpw", auth_plugin="caching_sha2_password",
                                         **opts)
            cur = mc.cursor()
            cur.execute("SELECT CURRENT_USER()")
            check(f"mysql-connector caching_sha2_password {label}",
                  cur.fetchone()[0] == "reader@%")
            mc.close()
        except mysql.connector.Error as e:
            check(f"mysql-connector caching_sha2_password {label}: {e}", False)

    # SHOW GRANTS' lines recreate the account and its grants on a second server.
    dump = grants(root, "'reader'@'%'")
    srv2 = Server(binary, os.path.join(work, "data2"), os.path.join(work, "server2.log"))
    r2 = srv2.connect().cursor()
    for sql in ["CREATE DATABASE db1", "CREATE DATABASE db2",
                "CREATE TABLE db1.t (a INT PRIMARY KEY, b INT)", "CREATE TABLE db2.secret (x INT)",
                "CREATE ROLE writer"]:
        r2.execute(sql)
    # As mariadb-dump --system=users writes them: the account, then its grants.
    root.execute("SHOW CREATE USER 'reader'@'%'")
    r2.execute(root.fetchone()[0])
    for line in dump:
        r2.execute(line)
    check("SHOW GRANTS round-trips to a second server", grants(r2, "'reader'@'%'") == dump)
    try:
        srv2.connect("reader", "rpw").close()
        check("the dumped password logs in", True)
    except pymysql.err.MySQLError:
        check("the dumped password logs in", False)
    srv2.stop()
    srv.stop()


if __name__ == "__main__":
    main()
