//! The reference fixtures (`shared/fixtures/ptex/*.ptx`, written by Ptex v2.4.3, with the
//! values its reader returned in `*.json`) and helpers to compare with them.

use crate::sources::ptex::{PtexFile, PtexOptions, Res};
use serde_json::Value;
use std::path::PathBuf;

/// Every fixture, by name.
pub const FIXTURES: [&str; 7] = [
    "quad_uint8_rgb",
    "quad_uint16_2ch",
    "quad_half_rgba",
    "quad_float_1ch",
    "tri_uint8_rgb",
    "quad_uint8_edits",
    "quad_uint8_nomip",
];

/// The fixture directory: `tests/fixtures/ptex/` of the repository (a copy of the project's
/// shared reference fixtures, checked in so that a clean clone tests on its own).
/// Missing, it is a failure, not a skip: these tests are the reader's only reference.
pub fn fixture_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex");
    assert!(
        dir.join("README.md").is_file(),
        "the Ptex reference fixtures are missing: expected {} (tests/fixtures/ptex/*.ptx and \
         *.json in the repository)",
        dir.display()
    );
    dir
}

/// One fixture: its file, opened, and its reference values.
pub struct Fixture {
    pub name: &'static str,
    pub path: PathBuf,
    pub file: PtexFile,
    pub json: Value,
}

impl Fixture {
    /// Open fixture `name` with the default options.
    pub fn load(name: &'static str) -> Fixture {
        let path = fixture_dir().join(format!("{name}.ptx"));
        let json_path = fixture_dir().join(format!("{name}.json"));
        let text = std::fs::read_to_string(&json_path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", json_path.display()));
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", json_path.display()));
        let file = PtexFile::open(&path).unwrap_or_else(|e| panic!("{e}"));
        Fixture {
            name,
            path,
            file,
            json,
        }
    }

    /// The same file opened premultiplied.
    pub fn premultiplied(&self) -> PtexFile {
        PtexFile::open_with(
            &self.path,
            PtexOptions {
                premultiply: true,
                ..PtexOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        std::fs::read(&self.path).unwrap()
    }
}

/// Every fixture, loaded.
pub fn all() -> Vec<Fixture> {
    FIXTURES.iter().map(|n| Fixture::load(n)).collect()
}

/// An unsigned integer field.
pub fn int(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not an unsigned integer: {v}"))
}

/// A signed integer field.
pub fn sint(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// A boolean field.
pub fn flag(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| panic!("not a boolean: {v}"))
}

/// A `[ulog2, vlog2]` pair.
pub fn res(v: &Value) -> Res {
    Res::new(sint(&v[0]) as i8, sint(&v[1]) as i8)
}

/// An array field.
pub fn list(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// A float printed with 9 significant digits, as the `f32` it was.
pub fn f32_of(v: &Value) -> f32 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}")) as f32
}

/// The 64-bit FNV-1a hash of `bytes`, as the JSON writes it (16 hex digits).
pub fn fnv1a64(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    format!("{h:016x}")
}

/// A raw texel from the JSON (one integer or float per channel) as the file's bytes.
pub fn raw_texel(file: &PtexFile, v: &Value) -> Vec<u8> {
    use crate::sources::ptex::DataType;
    let mut out = Vec::new();
    for x in list(v) {
        match file.data_type() {
            DataType::U8 => out.push(int(x) as u8),
            DataType::U16 | DataType::Half => out.extend((int(x) as u16).to_le_bytes()),
            DataType::F32 => out.extend(f32_of(x).to_le_bytes()),
        }
    }
    out
}
