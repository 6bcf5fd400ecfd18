//! What the host emulation tests share (host_ptex.rs, host_texture.rs): compiling a program
//! of tests/cuda-host/ (the device headers after dtex_host_shim.h) with the host's C++
//! compiler, running it over an input file, deterministic random numbers, and the
//! little-endian words of the programs' inputs. See tests/cuda-host/README.md.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// How the host programs are compiled (besides `-I` and the files): exact IEEE single
/// arithmetic, no fused multiply-adds (the `__f*_rn` intrinsics are then the device's);
/// udim.cuh's `#pragma unroll` is nvcc's.
pub const CXX_FLAGS: &[&str] = &[
    "-std=c++17",
    "-ffp-contract=off",
    "-O1",
    "-Wall",
    "-Wextra",
    "-Wno-unknown-pragmas",
];

/// The repository's root directory.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Compile tests/cuda-host/`name`.cpp into a program in this test's temporary directory;
/// `None` (after saying so) if there is no C++ compiler and `DEMANDTEX_SKIP_HOST_CUDA=1`.
/// The compiler is `$CXX` (which may carry arguments, "ccache g++"), else `c++`.
pub fn compile_host_program(name: &str) -> Option<PathBuf> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let mut words = cxx.split_whitespace();
    let program = words.next().unwrap_or("c++");
    let compiler = || {
        let mut c = Command::new(program);
        c.args(words.clone());
        c
    };
    if compiler().arg("--version").output().is_err() {
        if std::env::var("DEMANDTEX_SKIP_HOST_CUDA").is_ok_and(|v| v == "1") {
            println!("{name}: skipped (no C++ compiler `{cxx}`; DEMANDTEX_SKIP_HOST_CUDA=1)");
            return None;
        }
        panic!(
            "{name} needs a C++17 compiler: `{cxx}` ($CXX, else c++) cannot be run. \
             Install g++ (or set CXX), or set DEMANDTEX_SKIP_HOST_CUDA=1 to skip this test."
        );
    }
    let root = repo_root();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("the test's temporary directory");
    let exe = dir.join(name);
    let out = compiler()
        .args(CXX_FLAGS)
        .arg("-I")
        .arg(root.join("include"))
        .arg("-I")
        .arg(root.join("tests/cuda-host"))
        .arg(root.join(format!("tests/cuda-host/{name}.cpp")))
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("running the C++ compiler");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "compiling {name}.cpp with {cxx}:\n{log}"
    );
    if !log.trim().is_empty() {
        println!("{name}: compiler warnings:\n{log}");
    }
    Some(exe)
}

/// Run host program `exe` over `input` (written beside it as `case`.in); its output file's
/// bytes. Panics, with the program's error output, if it fails.
pub fn run_host_program(exe: &Path, case: &str, input: &[u8]) -> Vec<u8> {
    let dir = exe.parent().expect("the program's directory");
    let input_path = dir.join(format!("{case}.in"));
    let output_path = dir.join(format!("{case}.out"));
    std::fs::write(&input_path, input).expect("writing the input");
    let run = Command::new(exe)
        .arg(&input_path)
        .arg(&output_path)
        .output()
        .expect("running the host program");
    assert!(
        run.status.success(),
        "{case}: {} failed ({}):\n{}",
        exe.display(),
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(&output_path).expect("reading the program's output")
}

/// A xorshift generator (deterministic lookups).
pub struct Rng(pub u32);

impl Rng {
    /// The next 32 random bits.
    pub fn bits(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.bits() >> 8) as f32 / (1u32 << 24) as f32
    }
}

/// Append little-endian 32-bit words (floats as their bits).
pub fn put(out: &mut Vec<u8>, words: &[u32]) {
    out.extend(words.iter().flat_map(|w| w.to_le_bytes()));
}

/// The `DtexTextureSampler` bytes of `s`: core's `TextureSampler` is its `repr(C)` twin
/// (demandtex.h asserts the layout), read in this host's byte order, which the program
/// shares.
pub fn sampler_bytes(s: &demandtex::textures::TextureSampler) -> Vec<u8> {
    use demandtex::textures::TextureSampler;
    assert_eq!(std::mem::size_of::<TextureSampler>(), 376);
    // SAFETY: a repr(C) struct of 64- and 32-bit integers and floats without padding (376
    // bytes: 8 + 8 + 18 * 4 + 16 + 17 * 16), read as bytes while borrowed.
    unsafe { std::slice::from_raw_parts(s as *const TextureSampler as *const u8, 376).to_vec() }
}

/// The little-endian word at byte `at` of `bytes`.
pub fn word(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Check the header of a lookup program's output -- `magic`, `n` lookups answered, no
/// reference bit set outside the pages lookups can touch -- and return where the answers
/// start.
pub fn lookup_answers_start(bytes: &[u8], magic: &[u8; 8], n: usize) -> usize {
    assert_eq!(&bytes[..8], magic, "the program's output");
    assert_eq!(word(bytes, 8) as usize, n, "lookups answered");
    assert_eq!(
        word(bytes, 12),
        0,
        "reference bits set outside the pages lookups can touch"
    );
    16
}
