#!/usr/bin/env bash
# Side-by-side benchmark: Quarry vs MariaDB (InnoDB, MyISAM) vs DuckDB, in one run.
# Installs what it needs when missing (Debian: mariadb-server, sysbench, fonts for the
# charts; PyPI: duckdb and tpchgen-cli into target/bench-venv), builds the release
# binaries, then runs quarry-bench with the given options (e.g. --quick; see --help).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v mariadb-install-db >/dev/null 2>&1 || need_apt+=(mariadb-server)
command -v mariadb >/dev/null 2>&1 || need_apt+=(mariadb-client)
command -v sysbench >/dev/null 2>&1 || need_apt+=(sysbench)
[ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || need_apt+=(fonts-dejavu-core)
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "bench.sh: installing ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  # Install only; the packaged MariaDB service is not used (the harness runs its own).
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

VENV=target/bench-venv
if ! "$VENV/bin/python" -c 'import duckdb' >/dev/null 2>&1; then
  echo "bench.sh: creating $VENV with duckdb"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'duckdb==2.0.0'
fi
# TPC-H data generator (the tpch phase).
if [ ! -x "$VENV/bin/tpchgen-cli" ]; then
  "$VENV/bin/pip" install -q 'tpchgen-cli==4.0.0'
fi

cargo build --release -p quarry -p quarry-bench
exec target/release/quarry-bench --python "$VENV/bin/python" --quarry-bin target/release/quarry "$@"
