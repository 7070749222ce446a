#!/usr/bin/env bash
# The differential tester (crates/quarry-difftest) in CI: fixed seeds, each run against a
# private MariaDB 10.11 (installed with apt when missing; the packaged service is not
# used) and Quarry's row engine with and without indexes and its column engine, plus the
# TLP and NoREC oracles. Any mismatch outside tests/difftest/allow.txt fails; its reduced
# reproduction is in target/difftest/. DIFFTEST_QUERIES sets the queries per seed.
# A longer run by hand: target/release/quarry-difftest --seed N --minutes M [--mixed-types]
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v mariadb-install-db >/dev/null 2>&1; then
  echo "difftest: installing mariadb-server"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
fi
cargo build --release -q -p quarry -p quarry-difftest
status=0
for seed in 1 2 3 4; do
  target/release/quarry-difftest --seed "$seed" --queries "${DIFFTEST_QUERIES:-10000}" \
    --minutes 3 --out "target/difftest/seed-$seed" || status=1
done
exit $status
