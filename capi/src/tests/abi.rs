//! The ABI guard: the exported `dtex_*` symbols of the freshly built `libdemandtex.so` must
//! equal `capi/abi/symbols.txt` (`UPDATE_SYMBOLS=1` rewrites the list).

use std::path::{Path, PathBuf};
use std::process::Command;

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Build the shared library with the profile of this test binary and return its path:
/// target/<profile dir>/libdemandtex.so, next to this binary's `deps/`.
pub(super) fn build_shared_library() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or("the test binary is not in target/<profile>/deps")?
        .to_path_buf();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("release") => "release",
        _ => "test",
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "build",
            "-p",
            "demandtex-capi",
            "--lib",
            "--profile",
            profile,
        ])
        .current_dir(crate_dir())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo build -p demandtex-capi failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let so = profile_dir.join("libdemandtex.so");
    if so.is_file() {
        Ok(so)
    } else {
        Err(format!("{} was not built", so.display()))
    }
}

/// The `dtex_*` symbols `nm -D --defined-only` lists for `so`, sorted.
fn exported_symbols(so: &Path) -> Result<Vec<String>, String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(so)
        .output()
        .map_err(|e| format!("cannot run nm: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "nm failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut syms: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|s| s.starts_with("dtex_"))
        .map(str::to_string)
        .collect();
    syms.sort();
    syms.dedup();
    Ok(syms)
}

/// The `dtex_*` functions cbindgen finds (the fallback when the library cannot be built
/// or read): every function declared in a fresh generation of the header.
fn declared_functions() -> Vec<String> {
    let header = super::header::generate_header();
    let mut names = Vec::new();
    for line in header.lines().filter(|l| !l.trim_start().starts_with("//")) {
        let mut rest = line;
        while let Some(i) = rest.find("dtex_") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(tail.len());
            if tail[end..].starts_with('(') {
                names.push(tail[..end].to_string());
            }
            rest = &tail[end..];
        }
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn exported_symbols_match_the_checked_in_list() {
    let (symbols, source) = match build_shared_library().and_then(|so| {
        let s = exported_symbols(&so)?;
        Ok((s, format!("nm -D {}", so.display())))
    }) {
        Ok(found) => found,
        Err(why) => {
            eprintln!(
                "NOTE: checking the functions cbindgen declares instead of the library's \
                 exports: {why}"
            );
            (declared_functions(), "the cbindgen parse".to_string())
        }
    };
    assert!(
        symbols.len() > 30,
        "only {} dtex_ symbols from {source}",
        symbols.len()
    );
    let list_path = crate_dir().join("abi").join("symbols.txt");
    let text = symbols.join("\n") + "\n";
    if std::env::var_os("UPDATE_SYMBOLS").is_some() {
        std::fs::write(&list_path, &text).expect("write capi/abi/symbols.txt");
        return;
    }
    let listed: Vec<String> = std::fs::read_to_string(&list_path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let removed: Vec<&String> = listed.iter().filter(|s| !symbols.contains(s)).collect();
    let added: Vec<&String> = symbols.iter().filter(|s| !listed.contains(s)).collect();
    assert!(
        removed.is_empty(),
        "symbols of capi/abi/symbols.txt missing from {source}: {removed:?}.\n\
         Removing or changing an exported symbol breaks the ABI: it needs a DTEX_ABI_VERSION \
         bump (capi/src/lib.rs and the SONAME in capi/build.rs), then \
         UPDATE_SYMBOLS=1 cargo test -p demandtex-capi exported_symbols"
    );
    assert!(
        added.is_empty(),
        "new exported symbols not in capi/abi/symbols.txt: {added:?}.\n\
         Adding symbols is compatible; record them with \
         UPDATE_SYMBOLS=1 cargo test -p demandtex-capi exported_symbols"
    );
    // The list is sorted, one symbol a line, so that diffs of it read well.
    let mut sorted = listed.clone();
    sorted.sort();
    assert_eq!(listed, sorted, "capi/abi/symbols.txt must be sorted");
}

#[test]
fn the_declared_functions_are_the_exported_ones() {
    // Every function of the header is exported and vice versa (by the cbindgen parse).
    let listed: Vec<String> = std::fs::read_to_string(crate_dir().join("abi").join("symbols.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(declared_functions(), listed);
}

#[test]
fn build_script_soname_matches_the_abi_version() {
    let build_rs = std::fs::read_to_string(crate_dir().join("build.rs")).unwrap();
    let expected = format!("const ABI_VERSION: u32 = {};", crate::DTEX_ABI_VERSION);
    assert!(
        build_rs.contains(&expected),
        "capi/build.rs must say `{expected}`"
    );
}
