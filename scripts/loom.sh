#!/usr/bin/env bash
# Model-check the lock-free protocols (page bits, epochs, tickets) with loom: every
# interleaving of the models in core/src/loom_models.rs. Its own target directory, since
# `--cfg loom` rebuilds everything. LOOM_MAX_PREEMPTIONS bounds the search (default: 3).
set -euo pipefail
cd "$(dirname "$0")/.."
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
RUSTFLAGS="--cfg loom -D warnings" CARGO_TARGET_DIR=target/loom \
  cargo test --release -p demandtex --lib loom_models -- --test-threads=1 "$@"
