//! The checked-in PTX of `kernels/` and how the tests decide that it is stale.
//!
//! NVRTC 13.0's PTX is not byte-for-byte reproducible: NVVM orders some constant moves and
//! numbers virtual registers by pointer order, which changes with address-space layout
//! randomisation (the same source gave two variants across runs, identical up to that).
//! So a PTX file is stale when either
//!
//! 1. its first line records a hash of its inputs -- the kernel source, every file it
//!    includes (transitively, from `include/`), the compile options and the pinned NVRTC
//!    build -- that differs from the inputs now (this needs no NVRTC), or
//! 2. its body differs from a fresh compile by more than that nondeterminism: the two are
//!    compared as multisets of instructions with register numbers and labels erased.

use super::{repo_root, PINNED_BUILD};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The start of the first line of a checked-in PTX file.
const HEADER_PREFIX: &str = "// demandtex ";

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        self.0 ^= 0xff;
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// The file `#include` line `line` names, resolved against the including file's directory
/// (quoted form) and `include/`; `None` for lines that include nothing we ship (NVRTC has
/// no other headers; `<stdint.h>` and friends belong to hosts).
fn resolve_include(line: &str, from: &Path) -> Option<PathBuf> {
    let rest = line.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("include")?.trim();
    let (quoted, name) = if let Some(r) = rest.strip_prefix('"') {
        (true, r.split('"').next()?)
    } else {
        (false, rest.strip_prefix('<')?.split('>').next()?)
    };
    let mut candidates = Vec::new();
    if quoted {
        candidates.push(from.parent()?.join(name));
    }
    candidates.push(repo_root().join("include").join(name));
    candidates.into_iter().find(|p| p.is_file())
}

/// `source` and every file it includes, transitively: repository-relative path -> content.
pub fn include_closure(source: &Path) -> BTreeMap<String, String> {
    let root = repo_root();
    let mut files = BTreeMap::new();
    let mut todo = vec![source.to_path_buf()];
    while let Some(path) = todo.pop() {
        let path = path.canonicalize().unwrap_or(path);
        let rel = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        if files.contains_key(&rel) {
            continue;
        }
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        todo.extend(text.lines().filter_map(|l| resolve_include(l, &path)));
        files.insert(rel, text);
    }
    files
}

/// The hash of everything a kernel's PTX is made from (see the module documentation).
pub fn inputs_hash(kernel: &Path, options: &[String]) -> String {
    let mut h = Fnv::new();
    h.write(PINNED_BUILD.as_bytes());
    for o in options {
        h.write(o.as_bytes());
    }
    for (path, text) in include_closure(kernel) {
        h.write(path.as_bytes());
        h.write(code_only(&text).as_bytes());
    }
    format!("{:016x}", h.0)
}

/// The code of a C/C++ source without its comments and with whitespace runs collapsed: what
/// the compiler sees, so that editing a comment (the generated C header's documentation
/// changes often) does not make the PTX stale.
pub fn code_only(text: &str) -> String {
    /// A pending separator: none, a space, or a line break (directives are line-based).
    #[derive(Clone, Copy, PartialEq, PartialOrd)]
    enum Gap {
        None,
        Space,
        Line,
    }
    fn emit(out: &mut String, gap: &mut Gap, c: char) {
        match *gap {
            Gap::Line if !out.is_empty() => out.push('\n'),
            Gap::Space if !out.is_empty() => out.push(' '),
            _ => {}
        }
        *gap = Gap::None;
        out.push(c);
    }
    let widen = |gap: &mut Gap, to: Gap| {
        if to > *gap {
            *gap = to;
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut gap = Gap::None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                widen(&mut gap, Gap::Line);
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let (mut prev, mut lines) = (' ', false);
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    lines |= n == '\n';
                    prev = n;
                }
                widen(&mut gap, if lines { Gap::Line } else { Gap::Space });
            }
            '"' | '\'' => {
                emit(&mut out, &mut gap, c);
                while let Some(n) = chars.next() {
                    out.push(n);
                    if n == '\\' {
                        if let Some(e) = chars.next() {
                            out.push(e);
                        }
                    } else if n == c || n == '\n' {
                        break;
                    }
                }
            }
            '\n' => widen(&mut gap, Gap::Line),
            c if c.is_whitespace() => widen(&mut gap, Gap::Space),
            c => emit(&mut out, &mut gap, c),
        }
    }
    out
}

/// The first line of a kernel's PTX file, recording its inputs hash.
pub fn header_line(kernel_rel: &str, hash: &str) -> String {
    format!(
        "{HEADER_PREFIX}{kernel_rel}: inputs fnv1a64={hash} (the kernel, its includes, NVRTC \
         options and build). Regenerate: UPDATE_PTX=1 scripts/check-cuda.sh"
    )
}

/// The inputs hash a PTX file records, if it has the header line.
pub fn recorded_hash(ptx_file: &str) -> Option<String> {
    let first = ptx_file.lines().next()?;
    let rest = first.strip_prefix(HEADER_PREFIX)?;
    let at = rest.find("fnv1a64=")? + "fnv1a64=".len();
    Some(
        rest[at..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .collect(),
    )
}

/// The PTX of a checked-in file (everything after the header line).
pub fn body(ptx_file: &str) -> &str {
    if ptx_file.starts_with(HEADER_PREFIX) {
        ptx_file.split_once('\n').map_or("", |(_, b)| b)
    } else {
        ptx_file
    }
}

/// Replace every `%name123` by `%name` and every `$L__BB1_2` by `$L`.
fn erase_numbers(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' || c == '$' {
            let mut name = String::new();
            while let Some(&n) = chars.peek() {
                if n.is_ascii_alphabetic() || (c == '$' && (n == '_' || n == 'L')) {
                    name.push(n);
                    chars.next();
                } else {
                    break;
                }
            }
            out.push_str(&name);
            while chars
                .peek()
                .is_some_and(|n| n.is_ascii_digit() || (c == '$' && *n == '_'))
            {
                chars.next();
            }
        }
    }
    out
}

/// The instructions and directives of a PTX text, with register numbers and labels erased,
/// sorted: equal for two compiles that differ only by NVVM's nondeterminism.
pub fn normalised(ptx: &str) -> Vec<String> {
    let mut lines: Vec<String> = ptx
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .map(erase_numbers)
        .collect();
    lines.sort_unstable();
    lines
}

/// Whether two PTX texts are the same program up to NVVM's nondeterminism.
pub fn equivalent(a: &str, b: &str) -> bool {
    normalised(a) == normalised(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_numbers_and_labels_are_erased() {
        assert_eq!(
            erase_numbers("mov.f32 \t%f1270, %f1141; @%p157 bra $L__BB0_381;"),
            "mov.f32 \t%f, %f; @%p bra $L__BB;"
        );
        assert!(equivalent(
            "mov.f32 %f1, 0f3F800000;\nmov.f32 %f2, %f1;\n",
            "mov.f32 %f7, %f9;\n// comment\nmov.f32 %f9, 0f3F800000;\n"
        ));
        assert!(!equivalent(
            "sub.f32 %f1, %f2, 0f3F800000;",
            "add.f32 %f1, %f2, 0f3F800000;"
        ));
    }

    #[test]
    fn comments_and_layout_do_not_count_as_code() {
        let a = "int a; // one\n/* two\n lines */ int  b;\r\nconst char* s = \"// x /* y\";\n";
        let b = "int a;\n\nint b; // other\nconst char* s = \"// x /* y\";";
        assert_eq!(code_only(a), code_only(b));
        assert_eq!(
            code_only(a),
            "int a;\nint b;\nconst char* s = \"// x /* y\";"
        );
        assert_ne!(code_only("int a;"), code_only("int b;"));
        assert_ne!(
            code_only("#define X 1\n#define Y 2"),
            code_only("#define X 1 #define Y 2")
        );
    }

    #[test]
    fn header_round_trips() {
        let h = header_line("kernels/x.cu", "00ff00ff00ff00ff");
        let file = format!("{h}\n.version 9.0\n");
        assert_eq!(recorded_hash(&file).as_deref(), Some("00ff00ff00ff00ff"));
        assert_eq!(body(&file), ".version 9.0\n");
        assert_eq!(recorded_hash(".version 9.0\n"), None);
    }
}
