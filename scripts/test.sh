#!/usr/bin/env bash
# Build and run every test: unit, sqllogictest, then the real-client suite.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --quiet
SB_TIME=${SB_TIME:-10} tests/clients/run.sh
