#!/usr/bin/env bash
# Load TPC-H .tbl files (tpchgen-cli output) into a MySQL-protocol server:
#   [ENGINE=name] load.sh DATA_DIR DB [mariadb client options…]
# ENGINE sets the tables' storage engine (default: the server's default engine).
set -euo pipefail
dir=$1; db=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mariadb "$@" -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
if [ -n "${ENGINE:-}" ]; then
  { echo "SET default_storage_engine = $ENGINE;"; cat "$here/schema.sql"; } | mariadb "$@" "$db"
else
  mariadb "$@" "$db" < "$here/schema.sql"
fi
for t in region nation part supplier partsupp customer orders lineitem; do
  mariadb "$@" --local-infile=1 "$db" -e "LOAD DATA LOCAL INFILE '$dir/$t.tbl' INTO TABLE $t FIELDS TERMINATED BY '|' LINES TERMINATED BY '\n'"
done
