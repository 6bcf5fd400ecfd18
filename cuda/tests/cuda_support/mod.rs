//! NVRTC for the CUDA compile checks (`cuda_compile.rs`): find the library, its version, and
//! compile one translation unit with `include/` as the only include directory.
//!
//! NVRTC is loaded dynamically through cudarc; cudarc panics when the library is missing,
//! so [`Nvrtc::find`] checks for it first. The pinned NVRTC comes from the pip wheels
//! `cuda-toolkit[nvrtc,cudart]==13.0.2` (`scripts/check-cuda.sh` installs them and puts
//! `nvidia/cu13/lib` on `LD_LIBRARY_PATH`).

pub mod ptx;

use cudarc::nvrtc::{result, sys};
use std::ffi::CString;
use std::path::{Path, PathBuf};

/// The NVRTC whose PTX is checked in: major, minor, and the build in the PTX header
/// ("Cuda compilation tools, release 13.0, V13.0.88").
pub const PINNED_VERSION: (i32, i32) = (13, 0);
/// The build line of the pinned NVRTC's PTX.
pub const PINNED_BUILD: &str = "Cuda compilation tools, release 13.0, V13.0.88";

/// `DEMANDTEX_REQUIRE_NVRTC=1` (CI): a missing or different NVRTC fails instead of skipping.
pub fn nvrtc_required() -> bool {
    std::env::var("DEMANDTEX_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
}

/// The repository root (the workspace above `cuda/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cuda/ has a parent")
        .to_path_buf()
}

/// The files of `dir` whose names end with `suffix`, sorted.
pub fn files_with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// The file name of `path`, as text.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Say `msg` on the terminal even though the test harness captures `eprintln!` (a skipped
/// check must not pass silently).
pub fn loud(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "\n*** {msg}\n");
}

/// What one compilation produced.
pub struct Compiled {
    /// Whether NVRTC compiled the program.
    pub ok: bool,
    /// The compiler's log (diagnostics), trimmed.
    pub log: String,
    /// The PTX (when `ok`).
    pub ptx: Option<String>,
}

/// A loaded NVRTC.
pub struct Nvrtc {
    /// `nvrtcVersion`.
    pub version: (i32, i32),
}

impl Nvrtc {
    /// NVRTC if the library can be loaded; otherwise `None`, after saying so (or, with
    /// `DEMANDTEX_REQUIRE_NVRTC=1`, a panic).
    pub fn find(test: &str) -> Option<Nvrtc> {
        // SAFETY: only tries to dlopen the library candidates; nothing is called.
        if !unsafe { sys::is_culib_present() } {
            let msg = format!(
                "{test}: NVRTC (libnvrtc.so.13) not found: CUDA compile checks SKIPPED. \
                 Run scripts/check-cuda.sh (pip wheels cuda-toolkit[nvrtc,cudart]==13.0.2, \
                 LD_LIBRARY_PATH=.../nvidia/cu13/lib)."
            );
            assert!(!nvrtc_required(), "{msg} (DEMANDTEX_REQUIRE_NVRTC=1)");
            loud(&msg);
            return None;
        }
        let (mut major, mut minor) = (0, 0);
        // SAFETY: the library is present; both pointers are valid for writes.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .expect("nvrtcVersion");
        Some(Nvrtc {
            version: (major, minor),
        })
    }

    /// Whether this is the pinned major.minor version.
    pub fn is_pinned(&self) -> bool {
        self.version == PINNED_VERSION
    }

    /// Compile `source` (named `name` in diagnostics) with `options`, `include/` as the
    /// include directory, plus the whitespace-separated options of
    /// `DEMANDTEX_NVRTC_OPTIONS` if set (e.g. a temporary stub include directory).
    pub fn compile(&self, source: &str, name: &str, options: &[&str]) -> Compiled {
        let include = repo_root().join("include");
        let mut opts: Vec<String> = options.iter().map(|o| o.to_string()).collect();
        opts.push(format!("--include-path={}", include.display()));
        if let Ok(extra) = std::env::var("DEMANDTEX_NVRTC_OPTIONS") {
            opts.extend(extra.split_whitespace().map(str::to_owned));
        }
        let src = CString::new(source).expect("source without NUL bytes");
        let cname = CString::new(name).expect("name without NUL bytes");
        let prog = result::create_program(&src, Some(&cname)).expect("nvrtcCreateProgram");
        // SAFETY: `prog` was created above and is destroyed only at the end of this
        // function; `src` and `cname` outlive it.
        let compiled = unsafe {
            let status = result::compile_program(prog, &opts);
            let log = result::get_program_log(prog)
                .map(|chars| c_chars_to_string(&chars))
                .unwrap_or_default();
            let ok = match status {
                Ok(()) => true,
                Err(result::NvrtcError(sys::nvrtcResult::NVRTC_ERROR_COMPILATION)) => false,
                Err(e) => panic!(
                    "{name}: NVRTC failed before compiling ({e:?}) with options {opts:?}:\n{log}\n\
                     (NVRTC_ERROR_BUILTIN_OPERATION_FAILURE: libnvrtc-builtins.so.13.0 is not \
                     on LD_LIBRARY_PATH)"
                ),
            };
            let ptx = if ok {
                result::get_ptx(prog)
                    .ok()
                    .map(|chars| c_chars_to_string(&chars))
            } else {
                None
            };
            result::destroy_program(prog).expect("nvrtcDestroyProgram");
            Compiled {
                ok,
                log: log.trim().to_owned(),
                ptx,
            }
        };
        compiled
    }
}

/// A NUL-terminated C string from NVRTC as text.
fn c_chars_to_string(chars: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|&c| c as u8)
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Run `jobs` on all cores (NVRTC compiles independent programs concurrently) and return
/// their results in order.
pub fn parallel<T: Sync, R: Send>(jobs: Vec<T>, run: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(jobs.len().max(1));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<R>>> =
        jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                let r = run(job);
                *results[i].lock().expect("result slot") = Some(r);
            });
        }
    });
    results
        .into_iter()
        .map(|r| r.into_inner().expect("result slot").expect("every job ran"))
        .collect()
}
