#!/usr/bin/env python3
"""Generate crates/quarry-common/src/collation/cases.tsv: MariaDB 10.11's answers for
random string pairs under each collation Quarry implements — STRCMP and LIKE — that the
collation module's tests check against. Strings are hex-encoded UTF-8.

    python3 scripts/gen_collation_cases.py /path/to/mariadb.sock
"""
import random
import sys

import pymysql

SOCK = sys.argv[1] if len(sys.argv) > 1 else "/tmp/mt.sock"
OUT = "crates/quarry-common/src/collation/cases.tsv"
COLLATIONS = [
    "utf8mb4_general_ci", "utf8mb4_bin", "utf8mb4_nopad_bin", "utf8mb4_unicode_ci",
    "utf8mb4_unicode_520_ci", "utf8mb3_general_ci", "utf8mb3_bin", "utf8mb3_unicode_ci",
    "latin1_swedish_ci", "latin1_bin", "ascii_general_ci", "ascii_bin", "binary",
]
ALPHABET = [
    "a", "A", "b", "B", "z", "Z", "ä", "Ä", "å", "Å", "ö", "Ö", "é", "É", "e", "E", "ß",
    "s", "S", "ss", " ", " ", " ", "\t", "\n", "_", "-", ".", "0", "1", "9", "ǅ", "ǆ",
    "Ǆ", "ı", "İ", "i", "I", "ﬁ", "fi", "æ", "Æ", "ø", "œ", "€", "™", "ÿ", "Ÿ", "中",
    "文", "丁", "\u0300", "à", "\u00a0", "\u0001", "Ω", "ω", "ς", "σ", "Σ", "ｶ", "カ",
    "か", "Ａ", "ａ", "y", "ü", "Ü", "[", "]", "\\", "~", "^", "`", "@",
]
MB4_ONLY = ["😀", "😁", "𐐀", "𐐨", "𠀀"]

rng = random.Random(18)
conn = pymysql.connect(unix_socket=SOCK, user="root", autocommit=True, charset="utf8mb4")
cur = conn.cursor()


def word(alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))


def lit(s, coll):
    cs = "binary" if coll == "binary" else coll.split("_")[0]
    return f"CONVERT(_utf8mb4 X'{s.encode().hex()}' USING {cs}) COLLATE {coll}" if cs != "binary" \
        else f"CONVERT(_utf8mb4 X'{s.encode().hex()}' USING binary)"


lines = []
for coll in COLLATIONS:
    alphabet = ALPHABET + (MB4_ONLY if coll.startswith(("utf8mb4", "binary")) else [])
    pairs = []
    for _ in range(400):
        a = word(alphabet, 5)
        # Often a near neighbour of a: case, accents, padding.
        b = rng.choice([word(alphabet, 5), a.upper(), a + " ", a + "\t", a.lower() + "  ",
                        a[:-1] if a else "x"])
        pairs.append((a, b))
    sel = ",".join(f"STRCMP({lit(a, coll)}, {lit(b, coll)})" for a, b in pairs)
    cur.execute("SELECT " + sel)
    for (a, b), r in zip(pairs, cur.fetchone()):
        lines.append(f"{coll}\tcmp\t{a.encode().hex()}\t{b.encode().hex()}\t{r}")
    likes = []
    for _ in range(300):
        s = word(alphabet, 5)
        p = "".join(rng.choice(alphabet + ["%", "_", "%"]) for _ in range(rng.randint(0, 4)))
        if rng.random() < 0.5 and s:
            p = "".join(c if rng.random() < 0.6 else rng.choice(["%", "_", c.upper()]) for c in s)
        likes.append((s, p))
    sel = ",".join(f"{lit(s, coll)} LIKE {lit(p, coll)}" for s, p in likes)
    cur.execute("SELECT " + sel)
    for (s, p), r in zip(likes, cur.fetchone()):
        lines.append(f"{coll}\tlike\t{s.encode().hex()}\t{p.encode().hex()}\t{r}")

open(OUT, "w").write("\n".join(lines) + "\n")
print(OUT, len(lines), "cases", file=sys.stderr)
