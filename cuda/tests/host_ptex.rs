//! Host emulation test of the device Ptex lookup `dtex::ptexSample`
//! (include/demandtex/device/ptex.cuh), no GPU needed: the device headers are compiled by the
//! host C++ compiler (`$CXX`, else `c++`) after tests/cuda-host/dtex_host_shim.h, which
//! defines the CUDA built-ins for a one-lane "warp" (tests/cuda-host/README.md), into the
//! program tests/cuda-host/ptex_host.cpp. For every Ptex fixture the test writes what the
//! CUDA backend would publish (the device tables of `PtexDeviceTables`, the pages texture's
//! sampler and every page of the pack, all resident) and a few thousand lookups covering
//! every face and every filter, runs the program, and compares its answers with core's
//! `ptex_sample` over a `ResidentPtex`: channels equal, everything resident, point lookups
//! bit-exact, stochastic ones within 1e-6, the other filters within 1e-5 (relative above 1)
//! where the device reports them supported. The filters of [`REQUIRED_FILTERS`] must be.
//!
//! A second test runs the fixtures' own reference results (the `PtexFilter` values of the
//! reference library in each fixture's `.json`, all but the 80 premultiplied ones) through
//! the device code and requires them within 1e-5 (relative above 1).
//!
//! Run it with `cargo test -p demandtex-cuda --test host_ptex -- --nocapture` (a summary per
//! fixture). Without a C++ compiler it fails, unless `DEMANDTEX_SKIP_HOST_CUDA=1`.
//! cuda/tests/gpu_ptex.rs checks the same on a real device.

use demandtex::ptex::device::PtexDeviceTables;
use demandtex::sampling::ptex::{ptex_sample, PtexFilterOptions, PtexFilterType, ResidentPtex};
use demandtex::sources::ptex::{PtexFile, PtexPages};
use demandtex::sources::ImageSource;
use demandtex::textures::{FilterMode, MipFilter, TextureDesc, TextureLayout, TextureSampler};
use demandtex::TILE_BYTES;
use demandtex_cuda::ptex::{face_bytes, unit_bytes};
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod host_support;
use host_support::{compile_host_program, put, repo_root, run_host_program, sampler_bytes, Rng};

/// The `DTEX_PTEX_FILTER_*` codes whose lookups the device must report `supported` (and then
/// match core's): every filter, since the separable and triangle filters were ported
/// (2026-11-29). A code left out is compared only where the device reports it supported.
const REQUIRED_FILTERS: &[u32] = &[0, 1, 2, 3, 4, 5, 6, 7, 8];

/// Every filter: its `DTEX_PTEX_FILTER_*` code (the index), core's type and a name.
const FILTERS: [(PtexFilterType, &str); 9] = [
    (PtexFilterType::Point, "point"),
    (PtexFilterType::Bilinear, "bilinear"),
    (PtexFilterType::Box, "box"),
    (PtexFilterType::Gaussian, "gaussian"),
    (PtexFilterType::Bicubic, "bicubic"),
    (PtexFilterType::BSpline, "bspline"),
    (PtexFilterType::CatmullRom, "catmull-rom"),
    (PtexFilterType::Mitchell, "mitchell"),
    (PtexFilterType::StochasticPoint, "stochastic"),
];

/// Lookups per face and filter.
const PER_FACE_AND_FILTER: u32 = 48;

/// The emulated context: texture ids `0..MAX_TEXTURES`, the Ptex pages texture is
/// `PAGES_TEXTURE`, its page range starts at `START_PAGE` (past the entry pages).
const MAX_TEXTURES: u32 = 4;
/// The Ptex pages texture's id (its sampler page).
const PAGES_TEXTURE: u32 = 3;
/// The first page of the pages texture's range.
const START_PAGE: u32 = 2 * MAX_TEXTURES + 5;

/// The fixtures (as gpu_ptex.rs): `$DEMANDTEX_PTEX_FIXTURES`, else the repository's.
fn fixtures() -> Vec<PathBuf> {
    let dir = std::env::var_os("DEMANDTEX_PTEX_FIXTURES")
        .map_or_else(|| repo_root().join("tests/fixtures/ptex"), PathBuf::from);
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a fixture directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 7, "the Ptex fixtures");
    v
}

/// The host program, compiled once for all the tests of this file (they run in parallel).
fn build_host_program() -> Option<PathBuf> {
    static PROGRAM: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    PROGRAM
        .get_or_init(|| compile_host_program("ptex_host"))
        .clone()
}

/// One lookup: a face, a point, a footprint and core's options (with the filter's code).
#[derive(Clone, Copy, Debug)]
struct Lookup {
    face: u32,
    u: f32,
    v: f32,
    /// dudx, dvdx, dudy, dvdy.
    d: [f32; 4],
    code: u32,
    options: PtexFilterOptions,
}

/// Deterministic lookups: every face with every filter; points uniform in [-0.05, 1.05],
/// exactly on the face's sides and corners, and on texel edges (of full and reduced
/// resolutions); footprints from 0 to 0.5, some anisotropic or skewed; the options' switches
/// drawn at random (lerp, noedgeblend, width 1 / 2, blur 0 / 0.01, first channel 0 / 1).
fn lookups(tables: &PtexDeviceTables) -> Vec<Lookup> {
    let mut rng = Rng(0x9E37_79B9);
    let mut out = Vec::new();
    for (face, f) in tables.faces.iter().enumerate() {
        for i in 0..PER_FACE_AND_FILTER * 9 {
            // A texel edge of the face at its resolution reduced by a random step.
            let mut on_edge = |log2: u8| {
                let reduce = (rng.unit() * (f32::from(log2) + 1.0)) as u8;
                let res = (1u32 << (log2 - reduce)) as f32;
                (rng.unit() * (res + 1.0)).floor() / res
            };
            let (u, v) = match i / 9 % 4 {
                0 | 1 => (rng.unit() * 1.1 - 0.05, rng.unit() * 1.1 - 0.05),
                2 => {
                    let sides = [0.0, 1.0, 0.5, 1.0 - f32::EPSILON / 2.0, -0.0, 1.05, -0.05];
                    let k = rng.bits() as usize;
                    (sides[k % 7], sides[k / 7 % 7])
                }
                _ => (on_edge(f.ulog2), on_edge(f.vlog2)),
            };
            let w = [0.0, 1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5][rng.bits() as usize % 7];
            let mut d = [w * rng.unit(), 0.0, 0.0, w * rng.unit()];
            let b = rng.bits();
            // Anisotropic either way, or any pair of per-axis resolutions (2^-k wide).
            match b & 0x301 {
                1 => d[3] *= 0.05,
                0x100 => d[0] *= 0.05,
                0x200 => [0, 3]
                    .iter()
                    .for_each(|&a| d[a] = 0.5f32.powi((rng.bits() % 11) as i32)),
                _ => {}
            }
            if b & 2 != 0 {
                d[1] = w * (rng.unit() - 0.5);
                d[2] = w * (rng.unit() - 0.5);
            }
            let code = i % 9;
            let options = PtexFilterOptions {
                filter: FILTERS[code as usize].0,
                lerp: b & 4 != 0,
                sharpness: rng.unit(),
                noedgeblend: b & 8 != 0,
                width: if b & 16 != 0 { 2.0 } else { 1.0 },
                blur: if b & 32 != 0 { 0.01 } else { 0.0 },
                first_channel: usize::from(b & 192 == 192),
                jitter: [rng.unit(), rng.unit()],
            };
            out.push(Lookup {
                face: face as u32,
                u,
                v,
                d,
                code,
                options,
            });
        }
    }
    out
}

/// The program's input for the texture of `pages` and `lookups` (format: ptex_host.cpp).
fn input(pages: &PtexPages, tables: &PtexDeviceTables, lookups: &[Lookup]) -> Vec<u8> {
    // The pages texture as the engine lays it out (core's `PtexTexture::create_filled`).
    let info = pages.open().expect("the pages texture's image");
    let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)
        .expect("the pages texture's layout");
    let desc = TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        ..TextureDesc::default()
    };
    let sampler = TextureSampler::new(&layout, &desc, START_PAGE);
    let mut b = b"DTXHOST1".to_vec();
    let t = tables;
    // `DtexPtexDeviceTexture` from `pages_texture` to its end (as cuda/src/ptex.rs fills it).
    let (num_faces, num_units) = (t.faces.len() as u32, t.units.len() as u32);
    put(&mut b, &[32, PAGES_TEXTURE, num_faces, t.mesh_type]);
    put(
        &mut b,
        &[t.data_type, t.num_channels, t.pixel_size, num_units],
    );
    b.extend_from_slice(&[t.u_border, t.v_border, t.edge_filter, 0]);
    // max_textures, page_table_entries, num_pages (a few past the texture's range).
    let num_pages = START_PAGE + sampler.num_pages + 3;
    put(&mut b, &[MAX_TEXTURES, 2 * MAX_TEXTURES, num_pages]);
    b.extend(sampler_bytes(&sampler));
    put(&mut b, &[num_faces]);
    b.extend(face_bytes(&t.faces));
    put(&mut b, &[num_units]);
    b.extend(unit_bytes(&t.units));
    put(&mut b, &[t.constants.len() as u32]);
    b.extend_from_slice(&t.constants);
    let num_pages = pages.layout().num_pages();
    put(&mut b, &[num_pages]);
    for p in 0..num_pages {
        let mut page = vec![0u8; TILE_BYTES];
        pages
            .fill_page(p, &mut page)
            .unwrap_or_else(|e| panic!("filling page {p}: {e:?}"));
        b.extend(page);
    }
    put(&mut b, &[lookups.len() as u32]);
    for l in lookups {
        let (o, f) = (&l.options, f32::to_bits);
        put(&mut b, &[l.face, f(l.u), f(l.v)]);
        put(&mut b, &l.d.map(f));
        // DtexPtexFilterOptions: struct_size, filter, lerp, sharpness, noedgeblend, width,
        // blur, first_channel, jitter_u, jitter_v.
        put(&mut b, &[40, l.code, o.lerp.into(), f(o.sharpness)]);
        put(&mut b, &[o.noedgeblend.into(), f(o.width), f(o.blur)]);
        put(
            &mut b,
            &[o.first_channel as u32, f(o.jitter[0]), f(o.jitter[1])],
        );
    }
    b
}

/// One answer of the program: values, channels, resident, supported.
struct Answer {
    values: [f32; 4],
    channels: u32,
    resident: bool,
    supported: bool,
}

/// Parse the program's output (format: ptex_host.cpp); checks that nothing was requested.
fn answers(bytes: &[u8], n: usize) -> Vec<Answer> {
    assert_eq!(&bytes[..8], b"DTXHOUT1", "ptex_host's output");
    let word = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    assert_eq!(word(8) as usize, n, "lookups answered");
    assert_eq!(word(12), 0, "reference bits set with every page resident");
    assert_eq!(bytes.len(), 16 + 28 * n, "ptex_host's output length");
    (0..n)
        .map(|i| {
            let at = 16 + 28 * i;
            Answer {
                values: std::array::from_fn(|c| f32::from_bits(word(at + 4 * c))),
                channels: word(at + 16),
                resident: word(at + 20) != 0,
                supported: word(at + 24) != 0,
            }
        })
        .collect()
}

/// Per filter: lookups compared (with channels), with no channel, unsupported, and the
/// largest |device - core|.
type Stats = [(u32, u32, u32, f32); 9];

/// Compare the device's answers with core's over `store`, pushing every difference (named
/// with `name`) onto `failures`.
fn compare(
    name: &str,
    store: &ResidentPtex,
    lookups: &[Lookup],
    got: &[Answer],
    failures: &mut Vec<String>,
) -> Stats {
    let mut stats: Stats = [(0, 0, 0, 0.0); 9];
    for (i, (l, a)) in lookups.iter().zip(got).enumerate() {
        let mut fail = |what: String| failures.push(format!("{name} lookup {i} {l:?}: {what}"));
        let mut want = [0f32; 4];
        let s = ptex_sample(
            store, l.face, l.u, l.v, l.d[0], l.d[1], l.d[2], l.d[3], &l.options, &mut want,
        );
        let st = &mut stats[l.code as usize];
        if !a.resident || !s.resident || a.channels as usize != s.channels {
            let (resident, channels) = (a.resident, a.channels);
            fail(format!(
                "device resident {resident}, {channels} channels; core {s:?}"
            ));
        }
        if !a.supported {
            if REQUIRED_FILTERS.contains(&l.code) {
                fail("unsupported on the device".to_owned());
            }
            st.2 += 1;
            continue;
        }
        if s.channels == 0 {
            st.1 += 1;
        } else {
            st.0 += 1;
        }
        let tol = |w: f32| match l.options.filter {
            PtexFilterType::Point => 0.0,
            PtexFilterType::StochasticPoint => 1e-6 * w.abs().max(1.0),
            _ => 1e-5 * w.abs().max(1.0),
        };
        for (c, (&g, &w)) in a.values.iter().zip(&want).take(s.channels).enumerate() {
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            let diff = if same { 0.0 } else { (g - w).abs() };
            st.3 = st.3.max(diff);
            // (A NaN on one side only fails: `diff` is NaN.)
            let close = same || diff <= tol(w);
            if !close {
                fail(format!("channel {c}: device {g:e}, core {w:e}"));
            }
        }
    }
    stats
}

/// Run the host program (`exe`) over `lookups` of the texture `pages` / `tables` (files
/// named after `name` in the program's directory); its answers.
fn run_ptex_host(
    exe: &Path,
    name: &str,
    pages: &PtexPages,
    tables: &PtexDeviceTables,
    lookups: &[Lookup],
) -> Vec<Answer> {
    let output = run_host_program(exe, name, &input(pages, tables, lookups));
    answers(&output, lookups.len())
}

/// The reference library's `PtexFilter` results of a fixture (its `.json`, as core's
/// `sampling::ptex` tests read them) that the device can be asked for: not premultiplied
/// (the device reads the file's values as stored). Each with the values expected.
fn reference_cases(path: &Path) -> Vec<(Lookup, Vec<f32>)> {
    let json_path = path.with_extension("json");
    let text = std::fs::read_to_string(&json_path)
        .unwrap_or_else(|e| panic!("{}: {e}", json_path.display()));
    let json: serde_json::Value = serde_json::from_str(&text).expect("the fixture's JSON");
    let f = |v: &serde_json::Value| v.as_f64().expect("a number") as f32;
    let flag = |v: &serde_json::Value| v.as_bool().unwrap_or(false);
    let cases = json["filters"]
        .as_array()
        .expect("the fixture's filter results");
    cases
        .iter()
        .filter(|c| !flag(&c["premultiply"]))
        .map(|c| {
            let name = c["filter"].as_str().expect("a filter name");
            let code = match name {
                "point" => 0,
                "bilinear" => 1,
                "box" => 2,
                "gaussian" => 3,
                "bicubic" => 4,
                "bspline" => 5,
                "catmullrom" => 6,
                "mitchell" => 7,
                other => panic!("unknown filter {other}"),
            };
            let options = PtexFilterOptions {
                filter: FILTERS[code as usize].0,
                lerp: flag(&c["lerp"]),
                sharpness: f(&c["sharpness"]),
                noedgeblend: flag(&c["noedgeblend"]),
                width: f(&c["width"]),
                blur: f(&c["blur"]),
                first_channel: c["firstchan"].as_u64().expect("firstchan") as usize,
                jitter: [0.5, 0.5],
            };
            let lookup = Lookup {
                face: c["face"].as_u64().expect("face") as u32,
                u: f(&c["u"]),
                v: f(&c["v"]),
                d: [f(&c["uw1"]), f(&c["vw1"]), f(&c["uw2"]), f(&c["vw2"])],
                code,
                options,
            };
            let want = c["result"]
                .as_array()
                .expect("result")
                .iter()
                .map(f)
                .collect();
            (lookup, want)
        })
        .collect()
}

/// The device lookups (on the host) give the reference library's `PtexFilter` results of
/// every fixture within 1e-5 (relative above 1), the tolerance for core: a check
/// of the device code against the reference itself, not only against core.
#[test]
fn device_ptex_lookups_on_the_host_match_the_reference_library() {
    let Some(exe) = build_host_program() else {
        return;
    };
    let (mut count, mut worst, mut failures) = (0usize, 0f32, Vec::new());
    for path in fixtures() {
        let name = path.file_name().expect("a file name").to_string_lossy();
        let pages = PtexPages::new(Arc::new(PtexFile::open(&path).expect("the fixture")))
            .expect("packing the fixture");
        let tables = PtexDeviceTables::new(&pages);
        let cases = reference_cases(&path);
        let lookups: Vec<Lookup> = cases.iter().map(|(l, _)| *l).collect();
        let got = run_ptex_host(&exe, &format!("{name}.ref"), &pages, &tables, &lookups);
        for ((l, want), a) in cases.iter().zip(&got) {
            count += 1;
            // The reference was asked for `want.len()` channels; the device writes all it
            // can (up to 4) from the first.
            let n = want.len().min(4);
            if !a.resident || !a.supported || (a.channels as usize) < n {
                failures.push(format!(
                    "{name} {l:?}: resident {}, supported {}, {} channels",
                    a.resident, a.supported, a.channels
                ));
                continue;
            }
            for (c, (&g, &w)) in a.values.iter().zip(want).take(n).enumerate() {
                let err = (g - w).abs() / w.abs().max(1.0);
                worst = worst.max(err);
                if err.is_nan() || err > 1e-5 {
                    failures.push(format!(
                        "{name} {l:?} channel {c}: device {g}, reference {w}"
                    ));
                }
            }
        }
    }
    println!("{count} reference filter results, largest relative error {worst:e}");
    assert!(count > 3000, "only {count} reference cases");
    assert!(
        failures.is_empty(),
        "{} of {count} device results differ from the reference library's; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

#[test]
fn device_ptex_lookups_on_the_host_match_cores() {
    let Some(exe) = build_host_program() else {
        return;
    };
    let mut failures = Vec::new();
    for path in fixtures() {
        let name = path.file_name().expect("a file name").to_string_lossy();
        let open = || Arc::new(PtexFile::open(&path).expect("opening the fixture"));
        let pages = PtexPages::new(open()).expect("packing the fixture");
        let tables = PtexDeviceTables::new(&pages);
        let store = ResidentPtex::new(open()).expect("the resident store");
        let lookups = lookups(&tables);
        let got = run_ptex_host(&exe, &name, &pages, &tables, &lookups);
        let stats = compare(&name, &store, &lookups, &got, &mut failures);
        println!("{name}: {} lookups", lookups.len());
        for (code, (compared, empty, unsupported, max)) in stats.iter().enumerate() {
            println!(
                "  {:>11}: {compared:>4} compared (max |device - core| {max:e}), {empty:>3} \
                 with no channel, {unsupported:>4} unsupported",
                FILTERS[code].1
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{} lookups differ from core's (required filters: {REQUIRED_FILTERS:?}); the first:\n{}",
        failures.len(),
        failures[..failures.len().min(30)].join("\n")
    );
}
