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

# Disk. Every phase's build outputs together take ~4.5 GB (target/debug ~1.5 GB,
# target/release ~0.9 GB, target/fuzz ~1 GB, target/loom ~0.6 GB); CI machines have
# started with as little as 3 GB free. With less than LEAN_BELOW_GB free at the start
# (or DEMANDTEX_TEST_LEAN=1) each phase's outputs that no later phase reads are removed
# when the phase ends, which keeps the peak under ~2 GB; with more, they stay, so a
# second local run rebuilds only what changed. DEMANDTEX_TEST_LEAN=0 keeps them always.
free_mb() { df -Pm . | awk 'NR == 2 { print $4 }'; }
LEAN_BELOW_GB=${LEAN_BELOW_GB:-12}
lean=${DEMANDTEX_TEST_LEAN:-auto}
if [ "$lean" = auto ]; then
  lean=0
  if [ "$(free_mb)" -lt $((LEAN_BELOW_GB * 1024)) ]; then lean=1; fi
fi
echo "== disk: $(free_mb) MiB free at the start; lean=$lean (DEMANDTEX_TEST_LEAN)"
# done_with PATH...: the phase that wrote PATH has ended and no later phase reads it.
done_with() {
  if [ "$lean" = 1 ]; then
    # (du fails on a path a skipped phase never made: not an error here)
    { du -sm "$@" 2>/dev/null || true; } | awk '{ s += $1 } END { printf "== disk: removing %d MiB of finished build outputs\n", s }'
    rm -rf "$@"
  fi
  echo "== disk: $(free_mb) MiB free"
}

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
done_with target/debug
echo "== loom models of the lock-free protocols (page bits, epochs, tickets)"
./scripts/loom.sh
done_with target/loom
echo "== C/C++ consumers: CMake package, pkg-config, symbol list, valgrind, ASan"
./scripts/test-consumers.sh
echo "== Hydra render delegate (skipped, saying so, without an OpenUSD install)"
./scripts/test-hydra.sh
done_with target/cmake-package target/hydra-delegate
echo "== demo smoke run (small frame, verified against the fully resident render)"
cargo run --release -q -p demandtex-cli -- demo --width 160 --height 90 --out target/demo-smoke --verify
done_with target/release
echo "== fuzzing: a short afl.rs run of every target (seed and regression inputs must pass)"
scripts/fuzz.sh all 12
done_with target/fuzz
du -sh target | awk '{print "== disk: target/ holds " $1 " after every test"}'
