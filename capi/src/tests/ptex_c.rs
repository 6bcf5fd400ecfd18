//! A C program (capi/tests-c/ptex.c) linked against the freshly built library samples every
//! Ptex fixture with every filter, multi-pass and blocking; its values equal core's
//! resident `ptex_sample` exactly.

use super::compile::{assert_success, compile};
use super::ptex::{fixtures, lookups};
use crate::ptex::DtexPtexFilterOptions;
use engine::sampling::ptex::{ptex_sample, ResidentPtex};
use engine::sources::ptex::PtexFile;
use std::fmt::Write;
use std::process::Command;
use std::sync::Arc;

#[test]
fn c_program_samples_ptex_as_core_does() {
    let so = super::abi::build_shared_library().expect("libdemandtex.so builds");
    let dir = std::env::temp_dir().join(format!("demandtex-capi-ptex-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&so, dir.join("libdemandtex.so")).unwrap();
    std::os::unix::fs::symlink(&so, dir.join("libdemandtex.so.0")).unwrap();
    let exe = dir.join("ptex");
    let out = compile(
        "cc",
        &[
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-Iinclude",
            "capi/tests-c/ptex.c",
            "-o",
            exe.to_str().unwrap(),
            &format!("-L{}", dir.display()),
            &format!("-Wl,-rpath,{}", dir.display()),
            "-ldemandtex",
        ],
    )
    .expect("cc is needed to link Rust on this platform");
    assert_success(&out, "compiling capi/tests-c/ptex.c");
    for path in fixtures() {
        let store = ResidentPtex::new(Arc::new(PtexFile::open(&path).unwrap())).unwrap();
        let lookups = lookups(store.file().num_faces() as u32, 120);
        let mut text = String::new();
        let mut want = Vec::new();
        for l in &lookups {
            let o = &l.options;
            let (u, v, d) = (l.uv[0], l.uv[1], l.d);
            // `{:?}` prints the shortest text that parses back to the same f32.
            writeln!(
                text,
                "{} {u:?} {v:?} {:?} {:?} {:?} {:?} {} {} {:?} {:?}",
                l.face, d[0], d[1], d[2], d[3], o.filter, o.lerp, o.jitter_u, o.jitter_v
            )
            .unwrap();
            let options = DtexPtexFilterOptions::resolve(Some(o)).unwrap();
            let mut out = vec![0f32; store.file().num_channels()];
            let s = ptex_sample(
                &store, l.face, u, v, d[0], d[1], d[2], d[3], &options, &mut out,
            );
            out.truncate(s.channels);
            want.push(out);
        }
        let file = dir.join("lookups.txt");
        std::fs::write(&file, text).unwrap();
        let run = Command::new(&exe).arg(&path).arg(&file).output().unwrap();
        assert_success(&run, &format!("the C Ptex consumer on {}", path.display()));
        let got: Vec<Vec<f32>> = String::from_utf8_lossy(&run.stdout)
            .lines()
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect();
        assert_eq!(got.len(), want.len(), "{}", path.display());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "{} lookup {i}: {:?}", path.display(), lookups[i]);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
