//! The checked-in header must equal a fresh generation (`UPDATE_HEADER=1` rewrites it).

use std::path::{Path, PathBuf};

fn crate_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `include/demandtex.h` as cbindgen generates it now.
pub(crate) fn generate_header() -> String {
    let dir = crate_dir();
    let mut config =
        cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("capi/cbindgen.toml parses");
    config.trailer = Some(crate::device::static_assert_trailer());
    let bindings = cbindgen::Builder::new()
        .with_crate(&dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut out = Vec::new();
    bindings.write(&mut out);
    hide_functions_from_nvrtc(&String::from_utf8(out).expect("the header is UTF-8"))
}

/// Put the function declarations (cbindgen's `extern "C"` block) under
/// `#if !defined(__CUDACC_RTC__)`: device code compiled by NVRTC includes the header for
/// its types, and NVRTC rejects host function declarations. cbindgen has no option for
/// this, so the generated text is edited here (and the edit checked to apply exactly once).
fn hide_functions_from_nvrtc(header: &str) -> String {
    const OPEN: &str = "#ifdef __cplusplus\nextern \"C\" {\n#endif // __cplusplus\n";
    const CLOSE: &str = "#ifdef __cplusplus\n}  // extern \"C\"\n#endif  // __cplusplus\n";
    assert_eq!(header.matches(OPEN).count(), 1, "one extern \"C\" opening");
    assert_eq!(header.matches(CLOSE).count(), 1, "one extern \"C\" closing");
    header
        .replace(
            OPEN,
            &format!(
                "/* The host API. Not declared for device code compiled by NVRTC\n \
                 * (__CUDACC_RTC__), which rejects host function declarations: device code\n \
                 * uses the types above. */\n#if !defined(__CUDACC_RTC__)\n\n{OPEN}"
            ),
        )
        .replace(
            CLOSE,
            &format!("{CLOSE}\n#endif  /* !defined(__CUDACC_RTC__) */\n"),
        )
}

pub(crate) fn header_path() -> PathBuf {
    crate_dir().join("..").join("include").join("demandtex.h")
}

#[test]
fn header_is_up_to_date() {
    let fresh = generate_header();
    let path = header_path();
    if std::env::var_os("UPDATE_HEADER").is_some() {
        std::fs::write(&path, &fresh).expect("write include/demandtex.h");
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == fresh,
        "{} is stale: regenerate it with\n  UPDATE_HEADER=1 cargo test -p demandtex-capi header_is_up_to_date",
        Path::new(&path).display()
    );
}

#[test]
fn every_function_documents_ownership_and_thread_safety() {
    let header = generate_header();
    let lines: Vec<&str> = header.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(name) = declared_function(line) else {
            continue;
        };
        let doc: Vec<&str> = lines[..i]
            .iter()
            .rev()
            .take_while(|l| l.starts_with("//"))
            .copied()
            .collect();
        let doc = doc.join(" ");
        for needed in ["Ownership", "Thread-safety"] {
            assert!(
                doc.contains(needed),
                "{name}: its doc comment must say `{needed}:`"
            );
        }
        checked += 1;
    }
    assert!(checked > 30, "only {checked} functions found");
}

/// The function a header line declares, if it is a declaration's first line.
fn declared_function(line: &str) -> Option<&str> {
    if line.starts_with(char::is_whitespace) || line.starts_with("//") || line.starts_with('#') {
        return None;
    }
    let open = line.find('(')?;
    let name = line[..open].rsplit([' ', '*']).next()?;
    name.starts_with("dtex_").then_some(name)
}
