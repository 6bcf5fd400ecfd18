#!/usr/bin/env bash
# Every test of the project, on a fresh machine: formatting, lints, unit, property,
# concurrency and integration tests, doc tests, and a small end-to-end demo run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is required (https://rustup.rs)" >&2
  exit 1
fi
for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$component"
  fi
done

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
echo "== cargo test"
cargo test --workspace
echo "== demo smoke run (small frame, verified against the fully resident render)"
cargo run --release -q -p demandtex-cli -- demo --width 160 --height 90 --out target/demo-smoke --verify
