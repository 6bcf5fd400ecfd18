#!/usr/bin/env bash
# CUDA compile checks, no GPU needed: every device header (include/demandtex/device/) and
# kernel (cuda/kernels/: paging; cli/kernels/: demo and benchmarks) compiled with the pinned
# NVRTC for sm_75 and sm_90, warnings as errors; deliberately wrong calls
# (tests/cuda/must_fail_*.cu) must fail; the checked-in PTX (each kernel directory's ptx/)
# must equal a fresh compile. UPDATE_PTX=1 regenerates the PTX.
#
# NVRTC comes from NVIDIA's pip wheels, pinned exactly: an unpinned install pulls newer
# parts whose PTX (a newer ISA) the R580 driver rejects. They are installed into a venv
# under target/ (reused by later runs) and never committed.
set -euo pipefail
cd "$(dirname "$0")/.."

PINNED='cuda-toolkit[nvrtc,cudart]==13.0.2'
VENV="${DEMANDTEX_CUDA_VENV:-target/cuda-venv}"
STAMP="$VENV/.demandtex-pinned"

if ! command -v python3 >/dev/null 2>&1; then
  echo "check-cuda: python3 is required (for the NVRTC pip wheels)" >&2
  exit 1
fi
if [ ! -x "$VENV/bin/pip" ]; then
  echo "== creating $VENV"
  if ! python3 -m venv "$VENV"; then
    echo "check-cuda: python3 -m venv failed (Debian/Ubuntu: apt-get install python3-venv)" >&2
    exit 1
  fi
fi
if [ "$(cat "$STAMP" 2>/dev/null)" != "$PINNED" ]; then
  echo "== pip install $PINNED"
  if ! "$VENV/bin/pip" install --quiet --disable-pip-version-check "$PINNED"; then
    echo "check-cuda: could not install $PINNED from the package index" >&2
    exit 1
  fi
  echo "$PINNED" > "$STAMP"
fi
CU13="$("$VENV/bin/python" -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13"))')"
if [ ! -e "$CU13/lib/libnvrtc.so.13" ]; then
  echo "check-cuda: $CU13/lib/libnvrtc.so.13 missing after installing $PINNED" >&2
  exit 1
fi
export LD_LIBRARY_PATH="$CU13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== NVRTC compile checks ($CU13/lib)"
DEMANDTEX_REQUIRE_NVRTC=1 cargo test -p demandtex-cuda --test cuda_compile "$@"
