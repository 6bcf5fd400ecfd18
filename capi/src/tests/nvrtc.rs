//! The header compiles under NVRTC (device code includes it; NVRTC has no system headers
//! and rejects host function declarations), with `include/` as the only include path.
//!
//! NVRTC comes from the pinned pip wheels in `target/cuda-venv` that
//! `scripts/check-cuda.sh` installs; the test drives it through Python's `ctypes` (the capi
//! crate has no CUDA dependency). Without that venv it is skipped, loudly.

use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compiles each program given as an argument pair (name, source) with every option set,
/// all with `--include-path=<include>`; prints `name|options|rc|log` blocks, then `done`.
const DRIVER: &str = r#"
import ctypes, glob, os, sys
import nvidia
lib_dir = os.path.join(list(nvidia.__path__)[0], "cu13", "lib")
# libnvrtc dlopens libnvrtc-builtins by name: load it first from the same directory.
ctypes.CDLL(os.path.join(lib_dir, "libnvrtc-builtins.so.13.0"), mode=ctypes.RTLD_GLOBAL)
nvrtc = ctypes.CDLL(os.path.join(lib_dir, "libnvrtc.so.13"))
include = sys.argv[1]
option_sets = [
    ["--std=c++17", "--gpu-architecture=compute_75"],
    ["--std=c++17", "--gpu-architecture=sm_90"],
    ["--std=c++11", "--gpu-architecture=sm_75"],
]
args = sys.argv[2:]
for name, source in zip(args[0::2], args[1::2]):
    for opts in option_sets:
        opts = opts + ["--include-path=" + include]
        prog = ctypes.c_void_p()
        assert nvrtc.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0, None, None) == 0
        arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = nvrtc.nvrtcCompileProgram(prog, len(opts), arr)
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(prog, log)
        nvrtc.nvrtcDestroyProgram(ctypes.byref(prog))
        print("=== %s | %s | rc %d\n%s" % (name, " ".join(opts[:2]), rc, log.value.decode().strip()))
print("done")
"#;

/// Uses every type family of the header and its macros, twice included.
const USES_HEADER: &str = r#"#include <demandtex.h>
#include "demandtex.h"
extern "C" __global__ void probe(DtexDeviceContext ctx, DtexTextureSampler* s, uint64_t* out) {
    const uint32_t pages = ctx.num_pages + DTEX_VERSION_MAJOR;
    const int32_t status = DTEX_STATUS_OK;
    const size_t bytes = sizeof(DtexPageMapping) + sizeof(DtexSamplerLevel) + sizeof(DtexStats);
    out[0] = pages + (uint64_t)status + bytes + (uint64_t)(s != 0);
    // The device constants: unsigned literals (no <stdint.h> macro), floats exact.
    const uint64_t entry = out[1];
    const uint32_t base = (uint32_t)((entry >> DTEX_UDIM_BASE_SHIFT) & DTEX_UDIM_ID_MASK);
    const uint32_t side = (uint32_t)((entry >> DTEX_UDIM_HEIGHT_SHIFT) & DTEX_UDIM_SIDE_MASK);
    const bool marker = entry == DTEX_NO_BASE_COLOR || entry == DTEX_HOLE_BASE_COLOR;
    const float4 magenta = make_float4(DTEX_DEFAULT_FALLBACK_COLOR_R, DTEX_DEFAULT_FALLBACK_COLOR_G,
                                       DTEX_DEFAULT_FALLBACK_COLOR_B, DTEX_DEFAULT_FALLBACK_COLOR_A);
    out[2] = (base == DTEX_UDIM_NO_BASE) + side + marker + (uint64_t)(magenta.x + magenta.w) +
             DTEX_TILE_BYTES + DTEX_LRU_MAX_AGE + DTEX_LRU_NON_EVICTABLE +
             (entry == DTEX_WAIT_FOREVER) + (base == DTEX_NO_TEXTURE);
}
"#;

/// The layout asserts bite under NVRTC too (its offsetof form included).
const WRONG_OFFSET: &str = r#"#include <demandtex.h>
DTEX_STATIC_ASSERT(DTEX_OFFSETOF(DtexDeviceContext, num_pages) == 0, "expected to fail");
"#;

#[test]
fn the_header_compiles_under_nvrtc_without_system_headers() {
    let python = root().join("target/cuda-venv/bin/python");
    if !python.exists() {
        eprintln!(
            "\n*** NVRTC check of include/demandtex.h SKIPPED: no target/cuda-venv \
             (scripts/check-cuda.sh creates it)\n"
        );
        return;
    }
    let include = root().join("include");
    let out = Command::new(&python)
        .args(["-c", DRIVER, include.to_str().unwrap()])
        .args([
            "uses_header.cu",
            USES_HEADER,
            "wrong_offset.cu",
            WRONG_OFFSET,
        ])
        .output()
        .expect("run the venv's python");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim_end().ends_with("done"),
        "the NVRTC driver failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let blocks: Vec<&str> = text.split("=== ").skip(1).collect();
    assert_eq!(blocks.len(), 6, "{text}");
    for block in blocks {
        let (head, log) = block.split_once('\n').unwrap_or((block, ""));
        let log = log.trim_end_matches("done").trim();
        if head.starts_with("uses_header") {
            // Clean: no error and no warning at all.
            assert!(head.ends_with("rc 0") && log.is_empty(), "{head}\n{log}");
        } else {
            assert!(
                !head.ends_with("rc 0") && log.contains("expected to fail"),
                "{head}\n{log}"
            );
        }
    }
}
