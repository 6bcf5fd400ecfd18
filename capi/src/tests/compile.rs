//! The header compiles as C11 and C++17 (its layout asserts checked by the C compilers),
//! and a C program linked against the freshly built library runs the multi-pass loop.

use std::path::PathBuf;
use std::process::Command;

pub(super) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Run a compiler; `None` if it is not installed.
pub(super) fn compile(compiler: &str, args: &[&str]) -> Option<std::process::Output> {
    match Command::new(compiler)
        .args(args)
        .current_dir(root())
        .output()
    {
        Ok(out) => Some(out),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => panic!("cannot run {compiler}: {e}"),
    }
}

#[track_caller]
pub(super) fn assert_success(out: &std::process::Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_header_compiles_as_c11_and_cpp17_with_its_layout_asserts() {
    let smoke = "capi/tests-c/smoke.c";
    let c = compile(
        "cc",
        &[
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-Iinclude",
            "-fsyntax-only",
            smoke,
        ],
    )
    .expect("cc is needed to link Rust on this platform");
    assert_success(&c, "cc -std=c11");
    let cpp_args = [
        "-std=c++17",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-pedantic",
        "-Iinclude",
        "-fsyntax-only",
        "-x",
        "c++",
        smoke,
    ];
    match compile("c++", &cpp_args) {
        Some(out) => assert_success(&out, "c++ -std=c++17"),
        None => eprintln!("NOTE: no c++ compiler: the C++ compile check of the header did not run"),
    }
}

#[test]
fn c_program_runs_the_multi_pass_loop() {
    let so = super::abi::build_shared_library().expect("libdemandtex.so builds");
    // The SONAME is libdemandtex.so.0, which cargo does not create: link it there.
    let dir = std::env::temp_dir().join(format!("demandtex-capi-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&so, dir.join("libdemandtex.so")).unwrap();
    std::os::unix::fs::symlink(&so, dir.join("libdemandtex.so.0")).unwrap();
    let exe = dir.join("smoke");
    let out = compile(
        "cc",
        &[
            "-std=c11",
            "-Wall",
            "-Werror",
            "-Iinclude",
            "capi/tests-c/smoke.c",
            "-o",
            exe.to_str().unwrap(),
            &format!("-L{}", dir.display()),
            &format!("-Wl,-rpath,{}", dir.display()),
            "-ldemandtex",
        ],
    )
    .expect("cc is needed to link Rust on this platform");
    assert_success(&out, "compiling capi/tests-c/smoke.c");
    let run = Command::new(&exe).output().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_success(&run, "running the C smoke test");
    assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "ok");
}
