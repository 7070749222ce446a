#!/usr/bin/env python3
"""Generate crates/quarry-common/src/collation/weights.bin: the weights of MariaDB 10.11's
collations that are tables, not rules (utf8mb4_general_ci's case and accent folding, UCA
4.0.0 for utf8mb4_unicode_ci, UCA 5.2.0 for utf8mb4_unicode_520_ci, latin1 (cp1252) and
latin1_swedish_ci, ascii_general_ci), read from a running MariaDB 10.11 with
WEIGHT_STRING() for every code point. Only what the rules in collation/mod.rs do not give
is stored: for the UCA collations, the code points whose weights are not the implicit
ones computed there.

    python3 scripts/gen_collation_tables.py /path/to/mariadb.sock

The file is committed; run this again only to check it (it must come out identical).
"""
import struct
import sys

import pymysql

SOCK = sys.argv[1] if len(sys.argv) > 1 else "/tmp/mt.sock"
OUT = "crates/quarry-common/src/collation/weights.bin"

conn = pymysql.connect(unix_socket=SOCK, user="root", autocommit=True)
cur = conn.cursor()


def weights(coll, cps, charset="utf8mb4"):
    out = {}
    step = 2048
    for i in range(0, len(cps), step):
        part = cps[i:i + step]
        sel = ",".join(
            f"HEX(WEIGHT_STRING(CONVERT(CHAR({cp} USING utf32) USING {charset}) COLLATE {coll}))"
            for cp in part
        )
        cur.execute("SELECT " + sel)
        for cp, w in zip(part, cur.fetchone()):
            out[cp] = [int(w[j:j + 4], 16) for j in range(0, len(w), 4)]
    return out


def implicit(cp, version):
    """Must equal collation::uca::implicit."""
    if version == 400 and cp > 0xFFFF:
        return [0xFFFD]
    if 0x4E00 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF:
        base = 0xFB40
    elif 0x3400 <= cp <= 0x4DBF:
        base = 0xFB80
    else:
        base = 0xFBC0
    return [base + (cp >> 15), (cp & 0x7FFF) | 0x8000]


bmp = [cp for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF]
every = bmp + list(range(0x10000, 0x110000))
out = bytearray(b"QCW1")

general = weights("utf8mb4_general_ci", bmp)
diffs = [(cp, w[0]) for cp, w in sorted(general.items()) if w != [cp]]
out += struct.pack("<I", len(diffs))
for cp, w in diffs:
    out += struct.pack("<HH", cp, w)

# latin1 is MariaDB's cp1252: each byte's character, and latin1_swedish_ci's weight.
cur.execute("SELECT " + ",".join(f"HEX(CONVERT(CHAR({b} USING latin1) USING utf32))" for b in range(256)))
unicode_of = [int(h, 16) for h in cur.fetchone()]
cur.execute("SELECT " + ",".join(f"HEX(WEIGHT_STRING(CHAR({b} USING latin1) COLLATE latin1_swedish_ci))" for b in range(256)))
swedish = [int(h, 16) for h in cur.fetchone()]
for u in unicode_of:
    out += struct.pack("<H", u)
out += bytes(swedish)
cur.execute("SELECT " + ",".join(f"HEX(WEIGHT_STRING(CHAR({b} USING ascii) COLLATE ascii_general_ci))" for b in range(128)))
out += bytes(int(h, 16) for h in cur.fetchone())

for coll, version, cps in (("utf8mb4_unicode_ci", 400, bmp), ("utf8mb4_unicode_520_ci", 520, every)):
    ws = weights(coll, cps)
    diffs = [(cp, w) for cp, w in sorted(ws.items()) if w != implicit(cp, version)]
    out += struct.pack("<I", len(diffs))
    for cp, w in diffs:
        out += struct.pack("<IB", cp, len(w))
        for x in w:
            out += struct.pack("<H", x)
    print(coll, len(diffs), "code points with weights of their own", file=sys.stderr)

open(OUT, "wb").write(out)
print(OUT, len(out), "bytes", file=sys.stderr)
