#!/usr/bin/env bash
# CUDA compile checks, no GPU needed: every device header (include/demandtex/device/) and
# kernel (cuda/kernels/: paging; cli/kernels/: demo and benchmarks) compiled with the pinned
# NVRTC for sm_75 and sm_90, warnings as errors; deliberately wrong calls
# (tests/cuda/must_fail_*.cu) must fail; the checked-in PTX (each kernel directory's ptx/)
# must equal a fresh compile. UPDATE_PTX=1 regenerates the PTX.
#
# NVRTC comes from NVIDIA's pip wheels, pinned exactly (scripts/cuda-venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

CU13="$(scripts/cuda-venv.sh)"
export LD_LIBRARY_PATH="$CU13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== NVRTC compile checks ($CU13/lib)"
DEMANDTEX_REQUIRE_NVRTC=1 cargo test -p demandtex-cuda --test cuda_compile "$@"
