//! CUDA compile checks, no GPU needed (`scripts/check-cuda.sh` runs them
//! with the pinned NVRTC):
//!
//! - every header of `include/demandtex/device/` compiles on its own, and every translation
//!   unit of `tests/cuda/` that uses them, for sm_75 and sm_90;
//! - every kernel of [`KERNEL_DIRS`] (the paging kernels of `cuda/kernels/`, the demo and
//!   benchmark kernels of `cli/kernels/`, the GPU tests' kernels of `cuda/tests/gpu_support/`)
//!   compiles for sm_75 and sm_90;
//! - every `tests/cuda/must_fail_*.cu` fails to compile, with the errors it names in its
//!   `// expect-error: <text>` lines (so the checks are known to bite);
//! - each directory's `ptx/*.ptx` were generated from the current sources (a hash of the kernel, its
//!   includes, the options and the NVRTC build heads each file) and equal a fresh compile
//!   by the pinned NVRTC up to NVVM's nondeterministic register numbering (see
//!   `cuda_support/ptx.rs`); `UPDATE_PTX=1` rewrites them. With another NVRTC version the
//!   comparison with a fresh compile is skipped with a loud message.
//!
//! Warnings are errors: NVRTC 13 has no `-Werror` option, so any diagnostic in the log of a
//! compile that must succeed fails the test. Without NVRTC the tests skip (and say so),
//! unless `DEMANDTEX_REQUIRE_NVRTC=1` (CI), which makes a missing or different NVRTC fail.

mod cuda_support;

use cuda_support::{
    file_name, files_with_suffix, loud, nvrtc_required, parallel, ptx, repo_root, Compiled, Nvrtc,
    PINNED_BUILD,
};
use std::path::{Path, PathBuf};

/// The GPU architectures every header and kernel is compiled for: the oldest supported
/// (Turing) and the reference GPU (Hopper).
const CHECK_ARCHS: [&str; 2] = ["sm_75", "sm_90"];

/// The architecture of the shipped PTX: the oldest supported; the driver JITs it forward.
const PTX_ARCH: &str = "compute_75";

/// Options of every compile.
const COMMON_OPTIONS: &[&str] = &["--std=c++17"];

/// Options of the kernels (and their shipped PTX): no multiply-add contraction, so the demo
/// kernel rounds as the CPU demo does.
const KERNEL_OPTIONS: &[&str] = &["--std=c++17", "--fmad=false"];

fn options(base: &[&'static str], arch: &str) -> Vec<String> {
    let mut v: Vec<String> = base.iter().map(|s| s.to_string()).collect();
    v.push(format!("--gpu-architecture={arch}"));
    v
}

fn compile_file(nvrtc: &Nvrtc, path: &Path, base: &[&'static str], arch: &str) -> Compiled {
    let source =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let opts = options(base, arch);
    let refs: Vec<&str> = opts.iter().map(String::as_str).collect();
    nvrtc.compile(&source, &file_name(path), &refs)
}

/// Compile every job (name, source, options, arch) and fail listing every one that did not
/// compile cleanly (an error, or any diagnostic at all).
fn assert_all_compile_cleanly(nvrtc: &Nvrtc, jobs: Vec<(String, String, &[&'static str], &str)>) {
    assert!(!jobs.is_empty(), "nothing to compile");
    let results = parallel(jobs, |(name, source, base, arch)| {
        let opts = options(base, arch);
        let refs: Vec<&str> = opts.iter().map(String::as_str).collect();
        let c = nvrtc.compile(source, name, &refs);
        (format!("{name} [{arch}]"), c)
    });
    let failures: Vec<String> = results
        .iter()
        .filter(|(_, c)| !c.ok || !c.log.is_empty())
        .map(|(what, c)| {
            let verdict = if c.ok {
                "compiled with diagnostics (warnings are errors)"
            } else {
                "failed"
            };
            format!("{what}: {verdict}:\n{}", c.log)
        })
        .collect();
    assert!(
        failures.is_empty(),
        "CUDA compile checks failed:\n\n{}",
        failures.join("\n\n")
    );
}

fn device_headers() -> Vec<PathBuf> {
    let headers = files_with_suffix(&repo_root().join("include/demandtex/device"), ".cuh");
    assert!(
        !headers.is_empty(),
        "no headers in include/demandtex/device"
    );
    headers
}

/// The directories of kernels with shipped PTX (in `DIR/ptx/`), relative to the repository.
const KERNEL_DIRS: [&str; 3] = ["cuda/kernels", "cli/kernels", "cuda/tests/gpu_support"];

fn kernel_sources() -> Vec<PathBuf> {
    let mut kernels = Vec::new();
    for dir in KERNEL_DIRS {
        let found = files_with_suffix(&repo_root().join(dir), ".cu");
        assert!(!found.is_empty(), "no kernels in {dir}/");
        kernels.extend(found);
    }
    kernels
}

fn test_units() -> (Vec<PathBuf>, Vec<PathBuf>) {
    files_with_suffix(&repo_root().join("tests/cuda"), ".cu")
        .into_iter()
        .partition(|p| !file_name(p).starts_with("must_fail_"))
}

#[test]
fn every_device_header_compiles_on_its_own() {
    let Some(nvrtc) = Nvrtc::find("every_device_header_compiles_on_its_own") else {
        return;
    };
    let mut jobs = Vec::new();
    for header in device_headers() {
        let name = file_name(&header);
        // Twice: the include guard must hold.
        let source =
            format!("#include <demandtex/device/{name}>\n#include <demandtex/device/{name}>\n");
        for arch in CHECK_ARCHS {
            jobs.push((format!("{name}.cu"), source.clone(), COMMON_OPTIONS, arch));
        }
    }
    assert_all_compile_cleanly(&nvrtc, jobs);
}

#[test]
fn device_api_translation_units_compile_without_warnings() {
    let Some(nvrtc) = Nvrtc::find("device_api_translation_units_compile_without_warnings") else {
        return;
    };
    let (units, _) = test_units();
    assert!(units.len() >= 3, "expected the tests/cuda/use_*.cu units");
    let mut jobs = Vec::new();
    for unit in units {
        let source = std::fs::read_to_string(&unit).expect("read unit");
        for arch in CHECK_ARCHS {
            jobs.push((file_name(&unit), source.clone(), COMMON_OPTIONS, arch));
        }
    }
    assert_all_compile_cleanly(&nvrtc, jobs);
}

#[test]
fn kernels_compile_without_warnings() {
    let Some(nvrtc) = Nvrtc::find("kernels_compile_without_warnings") else {
        return;
    };
    let mut jobs = Vec::new();
    for kernel in kernel_sources() {
        let source = std::fs::read_to_string(&kernel).expect("read kernel");
        for arch in CHECK_ARCHS {
            jobs.push((file_name(&kernel), source.clone(), KERNEL_OPTIONS, arch));
        }
    }
    assert_all_compile_cleanly(&nvrtc, jobs);
}

/// The `// expect-error: <text>` lines of a must-fail unit.
fn expected_errors(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.trim().strip_prefix("// expect-error:"))
        .map(|t| t.trim().to_owned())
        .filter(|t| !t.is_empty())
        .collect()
}

#[test]
fn wrong_calls_fail_to_compile_with_the_expected_errors() {
    let Some(nvrtc) = Nvrtc::find("wrong_calls_fail_to_compile_with_the_expected_errors") else {
        return;
    };
    let (_, must_fail) = test_units();
    assert!(
        !must_fail.is_empty(),
        "no tests/cuda/must_fail_*.cu: the checks would not be known to bite"
    );
    for unit in must_fail {
        let source = std::fs::read_to_string(&unit).expect("read unit");
        let expected = expected_errors(&source);
        assert!(
            !expected.is_empty(),
            "{}: no `// expect-error: <text>` line",
            unit.display()
        );
        let c = compile_file(&nvrtc, &unit, COMMON_OPTIONS, CHECK_ARCHS[0]);
        assert!(
            !c.ok,
            "{} compiled, but it must not: the compile checks do not bite",
            unit.display()
        );
        for text in expected {
            assert!(
                c.log.contains(&text),
                "{}: the log does not name the expected error {text:?}:\n{}",
                unit.display(),
                c.log
            );
        }
    }
}

/// The checked-in PTX of a kernel source: `ptx/NAME.ptx` beside it.
fn ptx_path(kernel: &Path) -> PathBuf {
    let stem = kernel
        .file_stem()
        .expect("kernel file stem")
        .to_string_lossy()
        .into_owned();
    let dir = kernel.parent().expect("a kernel's directory");
    dir.join("ptx").join(format!("{stem}.ptx"))
}

/// `DIR/NAME.cu` relative to the repository, as recorded in the PTX header.
fn kernel_rel(kernel: &Path) -> String {
    kernel
        .strip_prefix(repo_root())
        .unwrap_or(kernel)
        .to_string_lossy()
        .into_owned()
}

/// The `extern "C" __global__ void NAME(` kernels a source defines.
fn kernel_names(source: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = source;
    while let Some(i) = rest.find("extern \"C\" __global__ void ") {
        rest = &rest[i + "extern \"C\" __global__ void ".len()..];
        let end = rest.find('(').unwrap_or(0);
        names.push(rest[..end].trim().to_owned());
    }
    names
}

#[test]
fn shipped_ptx_was_generated_from_the_current_sources_for_the_oldest_driver() {
    let mut seen = Vec::new();
    let mut stale = Vec::new();
    for kernel in kernel_sources() {
        let path = ptx_path(&kernel);
        let file = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (generate it: UPDATE_PTX=1 scripts/check-cuda.sh)",
                path.display()
            )
        });
        let hash = ptx::inputs_hash(&kernel, &options(KERNEL_OPTIONS, PTX_ARCH));
        if ptx::recorded_hash(&file).as_deref() != Some(hash.as_str()) {
            stale.push(format!(
                "{} (the kernel or a header it includes changed since it was generated)",
                path.display()
            ));
        }
        let body = ptx::body(&file);
        assert!(
            body.contains(PINNED_BUILD),
            "{}: not from the pinned NVRTC",
            path.display()
        );
        // PTX ISA 9.0 (CUDA 13.0): the R580 driver and newer JIT it.
        assert!(
            body.contains("\n.version 9.0\n"),
            "{}: PTX ISA is not 9.0",
            path.display()
        );
        assert!(
            body.contains("\n.target sm_75\n"),
            "{}: target is not sm_75",
            path.display()
        );
        let source = std::fs::read_to_string(&kernel).expect("read kernel");
        let names = kernel_names(&source);
        assert!(
            !names.is_empty(),
            "{}: no extern \"C\" kernels",
            kernel.display()
        );
        for name in names {
            assert!(
                body.contains(&format!(".visible .entry {name}(")),
                "{}: kernel {name} missing (launched by this plain name)",
                path.display()
            );
        }
        seen.push(path);
    }
    for dir in KERNEL_DIRS {
        for ptx in files_with_suffix(&repo_root().join(dir).join("ptx"), ".ptx") {
            assert!(
                seen.contains(&ptx),
                "{}: no {dir}/*.cu source for it",
                ptx.display()
            );
        }
    }
    assert!(
        stale.is_empty() || std::env::var("UPDATE_PTX").is_ok_and(|v| v == "1"),
        "checked-in PTX is stale: {}\nregenerate: UPDATE_PTX=1 scripts/check-cuda.sh",
        stale.join(", ")
    );
}

#[test]
fn shipped_ptx_equals_a_fresh_compile() {
    let Some(nvrtc) = Nvrtc::find("shipped_ptx_equals_a_fresh_compile") else {
        return;
    };
    let update = std::env::var("UPDATE_PTX").is_ok_and(|v| v == "1");
    let jobs = kernel_sources();
    let fresh = parallel(jobs.clone(), |kernel| {
        compile_file(&nvrtc, kernel, KERNEL_OPTIONS, PTX_ARCH)
    });
    let mut stale = Vec::new();
    for (kernel, c) in jobs.iter().zip(fresh) {
        assert!(c.ok && c.log.is_empty(), "{}: {}", kernel.display(), c.log);
        let fresh = c.ptx.expect("PTX of a successful compile");
        if !(nvrtc.is_pinned() && fresh.contains(PINNED_BUILD)) {
            let msg = format!(
                "NVRTC {}.{} is not the pinned NVRTC ({PINNED_BUILD}): the comparison of the \
                 checked-in PTX with a fresh compile is SKIPPED. Use scripts/check-cuda.sh.",
                nvrtc.version.0, nvrtc.version.1
            );
            assert!(!nvrtc_required(), "{msg} (DEMANDTEX_REQUIRE_NVRTC=1)");
            loud(&msg);
            return;
        }
        let path = ptx_path(kernel);
        let existing = std::fs::read_to_string(&path).ok();
        let same = existing
            .as_deref()
            .is_some_and(|e| ptx::equivalent(ptx::body(e), &fresh));
        if update {
            // Keep an equivalent body: regenerating must not churn the file.
            let body = match &existing {
                Some(e) if same => ptx::body(e).to_owned(),
                _ => fresh,
            };
            let hash = ptx::inputs_hash(kernel, &options(KERNEL_OPTIONS, PTX_ARCH));
            let text = format!("{}\n{body}", ptx::header_line(&kernel_rel(kernel), &hash));
            if existing.as_deref() != Some(text.as_str()) {
                std::fs::create_dir_all(path.parent().expect("DIR/ptx")).expect("mkdir");
                std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                loud(&format!("wrote {}", path.display()));
            }
        } else if !same {
            stale.push(path.display().to_string());
        }
    }
    assert!(
        stale.is_empty(),
        "checked-in PTX is stale (differs from a fresh compile beyond NVVM's \
         register numbering): {}\nregenerate: UPDATE_PTX=1 scripts/check-cuda.sh",
        stale.join(", ")
    );
}
