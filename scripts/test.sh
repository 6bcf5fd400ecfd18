#!/usr/bin/env bash
# Every test of the project, on a fresh machine: formatting, lints, unit, property,
# concurrency and integration tests, loom models of the lock-free protocols, doc tests,
# NVRTC compile checks of the CUDA device headers and kernels (and of the shipped PTX),
# the C ABI's C and C++ consumers built against the installed CMake package (valgrind,
# ASan), the Hydra render delegate (where an OpenUSD install is found:
# DEMANDTEX_USD_ROOT), a small end-to-end demo run, and a short coverage-guided fuzzing
# run of every reader and the C ABI (scripts/fuzz.sh).
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

# System packages the cross-checks need: OpenImageIO (the C++ replayer that compares
# demandtex's results with OIIO's TextureSystem) and a C++ toolchain with pkg-config.
need_apt=()
dpkg -s libopenimageio-dev >/dev/null 2>&1 || need_apt+=(libopenimageio-dev)
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
# Python with venv: the pinned NVRTC pip wheels of the CUDA compile checks.
command -v python3 >/dev/null 2>&1 || need_apt+=(python3)
python3 -c 'import ensurepip' >/dev/null 2>&1 || need_apt+=(python3-venv)
scripts/apt-install.sh ${need_apt[@]+"${need_apt[@]}"}

# A clean build's disk use is part of what CI checks: incremental caches only help
# repeated local builds (export CARGO_INCREMENTAL=1 to keep them).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
df -h . | tail -1 | awk '{print "== disk: " $4 " free at the start"}'

echo "== cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
echo "== cargo clippy -D warnings"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p demandtex --all-targets -- -D warnings   # core on its own (no cudarc)
echo "== CUDA compile checks (NVRTC from pinned pip wheels, no GPU)"
./scripts/check-cuda.sh
echo "== cargo test"
cargo test --workspace
echo "== loom models of the lock-free protocols (page bits, epochs, tickets)"
./scripts/loom.sh
echo "== C/C++ consumers: CMake package, pkg-config, symbol list, valgrind, ASan"
./scripts/test-consumers.sh
echo "== Hydra render delegate (skipped, saying so, without an OpenUSD install)"
./scripts/test-hydra.sh
echo "== demo smoke run (small frame, verified against the fully resident render)"
cargo run --release -q -p demandtex-cli -- demo --width 160 --height 90 --out target/demo-smoke --verify
echo "== fuzzing: a short afl.rs run of every target (seed and regression inputs must pass)"
scripts/fuzz.sh all 12
du -sh target | awk '{print "== disk: target/ holds " $1 " after every test"}'
