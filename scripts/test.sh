#!/usr/bin/env bash
# Build and run every test: unit, sqllogictest, the real-client suite, then the
# differential tester against MariaDB 10.11.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --quiet
SB_TIME=${SB_TIME:-10} tests/clients/run.sh
tests/difftest/run.sh
