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
//! A third streams the fixtures through a multi-pass CPU loader until only some of their
//! pages are resident, and runs every lookup over that launch's residence bits (the missing
//! pages zeros, as unmapped tiles read): the device requests exactly the pages core's
//! lookups (`EnginePtex`) find missing, reports the same residency, and gives core's values
//! (the face's constant colour where a unit is missing).
//!
//! Run it with `cargo test -p demandtex-cuda --test host_ptex -- --nocapture` (a summary per
//! fixture). Without a C++ compiler it fails, unless `DEMANDTEX_SKIP_HOST_CUDA=1`.
//! cuda/tests/gpu_ptex.rs checks the same on a real device.

use demandtex::ptex::device::PtexDeviceTables;
use demandtex::ptex::PtexTexture;
use demandtex::sampling::ptex::{
    ptex_sample, EnginePtex, PtexFilterOptions, PtexFilterType, PtexSampled, ResidentPtex,
};
use demandtex::sampling::MissList;
use demandtex::sources::ptex::pages::PAGES_ACROSS;
use demandtex::sources::ptex::{PtexFile, PtexPages};
use demandtex::sources::ImageSource;
use demandtex::textures::{FilterMode, MipFilter, TextureDesc, TextureLayout, TextureSampler};
use demandtex::{Launch, Loader, LoaderOptions, TextureId, TILE_BYTES};
use demandtex_cuda::ptex::{face_bytes, unit_bytes};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod host_support;
use host_support::{
    compile_host_program, lookup_answers_start, put, repo_root, run_host_program, sampler_bytes,
    word, Rng,
};

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

/// Where the emulated context puts the pages texture, and which of its pages are resident.
struct Placement {
    /// The pages texture's id (its sampler page).
    pages_texture: u32,
    max_textures: u32,
    page_table_entries: u32,
    num_pages: u32,
    /// The pages texture's sampler (its `start_page` places the pack's pages).
    sampler: TextureSampler,
    /// The residence bits of the page space; empty: every page resident.
    residence: Vec<u32>,
}

impl Placement {
    /// The pages texture of `pages` alone, every page resident: id `PAGES_TEXTURE`, its
    /// range from `START_PAGE` (as the engine lays it out: core's `PtexTexture::create_filled`).
    fn alone(pages: &PtexPages) -> Placement {
        let info = pages.open().expect("the pages texture's image");
        let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)
            .expect("the pages texture's layout");
        let desc = TextureDesc {
            filter: FilterMode::Point,
            mip_filter: MipFilter::Point,
            ..TextureDesc::default()
        };
        let sampler = TextureSampler::new(&layout, &desc, START_PAGE);
        Placement {
            pages_texture: PAGES_TEXTURE,
            max_textures: MAX_TEXTURES,
            page_table_entries: 2 * MAX_TEXTURES,
            // A few past the texture's range.
            num_pages: START_PAGE + sampler.num_pages + 3,
            sampler,
            residence: Vec::new(),
        }
    }

    /// Whether page `page` of the page space is resident.
    fn resident(&self, page: u32) -> bool {
        self.residence.is_empty() || self.residence[page as usize / 32] >> (page % 32) & 1 != 0
    }

    /// Whether page `p` of the pack is: tile (`p % PAGES_ACROSS`, `p / PAGES_ACROSS`) of
    /// the pages texture's level 0, whose page is its level's first plus the tile's index.
    fn pack_page_resident(&self, p: u32) -> bool {
        let level = &self.sampler.levels[0];
        let tile = p / PAGES_ACROSS * level.tiles_x + p % PAGES_ACROSS;
        self.resident(self.sampler.start_page + level.offset + tile)
    }
}

/// The program's input for the texture of `pages` placed as `at` and `lookups` (format:
/// ptex_host.cpp): the pack's resident pages as core fills them, the others zeros (as an
/// unmapped tile reads).
fn input(
    pages: &PtexPages,
    tables: &PtexDeviceTables,
    at: &Placement,
    lookups: &[Lookup],
) -> Vec<u8> {
    let mut b = b"DTXHOST1".to_vec();
    let t = tables;
    // `DtexPtexDeviceTexture` from `pages_texture` to its end (as cuda/src/ptex.rs fills it).
    let (num_faces, num_units) = (t.faces.len() as u32, t.units.len() as u32);
    put(&mut b, &[32, at.pages_texture, num_faces, t.mesh_type]);
    put(
        &mut b,
        &[t.data_type, t.num_channels, t.pixel_size, num_units],
    );
    b.extend_from_slice(&[t.u_border, t.v_border, t.edge_filter, 0]);
    put(
        &mut b,
        &[at.max_textures, at.page_table_entries, at.num_pages],
    );
    b.extend(sampler_bytes(&at.sampler));
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
        if at.pack_page_resident(p) {
            pages
                .fill_page(p, &mut page)
                .unwrap_or_else(|e| panic!("filling page {p}: {e:?}"));
        }
        b.extend(page);
    }
    put(&mut b, &[at.residence.len() as u32]);
    put(&mut b, &at.residence);
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

/// One answer of the program: values, channels, resident, supported, the pages requested.
struct Answer {
    values: [f32; 4],
    channels: u32,
    resident: bool,
    supported: bool,
    pages: Vec<u32>,
}

/// Parse the program's output (format: ptex_host.cpp).
fn answers(bytes: &[u8], n: usize) -> Vec<Answer> {
    let word = |i: usize| word(bytes, i);
    let mut at = lookup_answers_start(bytes, b"DTXHOUT2", n);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let count = word(at + 28) as usize;
        out.push(Answer {
            values: std::array::from_fn(|c| f32::from_bits(word(at + 4 * c))),
            channels: word(at + 16),
            resident: word(at + 20) != 0,
            supported: word(at + 24) != 0,
            pages: (0..count).map(|k| word(at + 32 + 4 * k)).collect(),
        });
        at += 32 + 4 * count;
    }
    assert_eq!(at, bytes.len(), "ptex_host's output length");
    out
}

/// Whether a device value `g` agrees with core's `w` for `filter`: point lookups bit-exact,
/// stochastic ones within 1e-6, the other filters within 1e-5 (relative above 1); NaN
/// agrees with NaN only.
fn agrees(filter: PtexFilterType, g: f32, w: f32) -> bool {
    let tol = match filter {
        PtexFilterType::Point => 0.0,
        PtexFilterType::StochasticPoint => 1e-6 * w.abs().max(1.0),
        _ => 1e-5 * w.abs().max(1.0),
    };
    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan()) || (g - w).abs() <= tol
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
        for (c, (&g, &w)) in a.values.iter().zip(&want).take(s.channels).enumerate() {
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            let diff = if same { 0.0 } else { (g - w).abs() };
            st.3 = st.3.max(diff);
            if !agrees(l.options.filter, g, w) {
                fail(format!("channel {c}: device {g:e}, core {w:e}"));
            }
        }
    }
    stats
}

/// Run the host program (`exe`) over `lookups` of the texture `pages` / `tables` placed
/// alone, every page resident (files named after `name` in the program's directory); its
/// answers, none of which requested a page.
fn run_ptex_host(
    exe: &Path,
    name: &str,
    pages: &PtexPages,
    tables: &PtexDeviceTables,
    lookups: &[Lookup],
) -> Vec<Answer> {
    let at = Placement::alone(pages);
    let output = run_host_program(exe, name, &input(pages, tables, &at, lookups));
    let got = answers(&output, lookups.len());
    assert!(
        got.iter().all(|a| a.pages.is_empty()),
        "{name}: pages requested with every page resident"
    );
    got
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

/// Core's answer to `l` of Ptex texture `id` (whose pack is `pages`) in `launch`, and the
/// pages it found missing (`None` if more than a `MissList` holds).
fn engine_lookup(
    launch: &Launch,
    id: TextureId,
    pages: &PtexPages,
    l: &Lookup,
    out: &mut [f32; 4],
) -> (PtexSampled, Option<BTreeSet<u32>>) {
    let misses = MissList::new();
    let store = EnginePtex::new(launch.view().with_misses(&misses), id, pages);
    let s = ptex_sample(
        &store, l.face, l.u, l.v, l.d[0], l.d[1], l.d[2], l.d[3], &l.options, out,
    );
    let full = misses.len() == demandtex::sampling::MISS_LIST_CAPACITY;
    (s, (!full).then(|| misses.pages().map(|p| p.0).collect()))
}

/// With only some of its pages resident -- those a multi-pass CPU loader filled for the
/// lookups of face 0 of each fixture -- the device lookups (on the host, over that launch's
/// residence bits and the pages texture's sampler, the missing pages zeros as unmapped
/// tiles read) request exactly the pages core's lookups find missing, report the same
/// residency, and give core's values: the device side of streaming Ptex.
#[test]
fn partly_resident_device_ptex_lookups_request_the_pages_cores_request() {
    let Some(exe) = build_host_program() else {
        return;
    };
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: 1024 * TILE_BYTES as u64,
        fill_threads: 2,
        ..LoaderOptions::default()
    })
    .expect("a CPU loader");
    let textures: Vec<(String, PtexTexture)> = fixtures()
        .iter()
        .map(|p| {
            let name = p
                .file_name()
                .expect("a file name")
                .to_string_lossy()
                .into_owned();
            let t = loader
                .create_ptex_texture(p)
                .expect("registering a fixture");
            (name, t)
        })
        .collect();
    // Warm up: face 0's lookups, until none misses.
    let warm: Vec<Vec<Lookup>> = textures
        .iter()
        .map(|(_, t)| {
            let pages = PtexPages::new(Arc::new(PtexFile::open(t.path()).expect("a fixture")))
                .expect("packing a fixture");
            let mut ls = lookups(&PtexDeviceTables::new(&pages));
            ls.retain(|l| l.face == 0);
            ls
        })
        .collect();
    let mut converged = false;
    for _ in 0..8 {
        let launch = loader.launch_prepare();
        let mut missed = 0;
        for ((_, t), ls) in textures.iter().zip(&warm) {
            for l in ls {
                let mut out = [0f32; 4];
                let d = l.d;
                let s = launch.ptex_sample(
                    t, l.face, l.u, l.v, d[0], d[1], d[2], d[3], &l.options, &mut out,
                );
                missed += usize::from(!s.resident);
            }
        }
        loader.process_requests(launch).wait();
        if missed == 0 {
            converged = true;
            break;
        }
    }
    assert!(
        converged,
        "the warm-up lookups did not converge in 8 launches"
    );

    let launch = loader.launch_prepare();
    let ctx = launch.device_context();
    let words = (ctx.num_pages as usize).div_ceil(32);
    // SAFETY: the context's arrays hold `page_table_entries` entries and `num_pages` bits and
    // live as long as the launch, which is borrowed; nothing writes them meanwhile (this
    // thread runs no lookup that could open a texture, nor `process_requests`).
    let (table, residence) = unsafe {
        (
            std::slice::from_raw_parts(ctx.page_table, ctx.page_table_entries as usize).to_vec(),
            std::slice::from_raw_parts(ctx.residence_bits, words).to_vec(),
        )
    };
    let (mut failures, mut total, mut missing, mut requesting) = (Vec::new(), 0, 0, 0);
    for (name, t) in &textures {
        let id = t.id();
        let pages = t.pages().expect("the fixture was parsed in the warm-up");
        let tables = PtexDeviceTables::new(pages);
        // SAFETY: a resident sampler page's nonzero entry is the address of the texture's
        // `TextureSampler`, which the engine keeps for its life (the loader outlives this).
        let sampler = unsafe { *(table[id.0 as usize] as *const TextureSampler) };
        let at = Placement {
            pages_texture: id.0,
            max_textures: ctx.max_textures,
            page_table_entries: ctx.page_table_entries,
            num_pages: ctx.num_pages,
            sampler,
            residence: residence.clone(),
        };
        let pack_pages = pages.layout().num_pages();
        let resident_pages = (0..pack_pages)
            .filter(|&p| at.pack_page_resident(p))
            .count();
        let lookups = lookups(&tables);
        let output = run_host_program(
            &exe,
            &format!("{name}.partial"),
            &input(pages, &tables, &at, &lookups),
        );
        let got = answers(&output, lookups.len());
        let (mut n_missing, mut n_requesting) = (0, 0);
        for (i, (l, a)) in lookups.iter().zip(&got).enumerate() {
            let mut want = [0f32; 4];
            let (s, pages_missed) = engine_lookup(&launch, id, pages, l, &mut want);
            let mut fail = |what: String| failures.push(format!("{name} lookup {i} {l:?}: {what}"));
            n_missing += usize::from(!s.resident);
            n_requesting += usize::from(!a.pages.is_empty());
            if a.resident != s.resident || a.channels as usize != s.channels || !a.supported {
                fail(format!(
                    "device resident {}, {} channels, supported {}; core {s:?}",
                    a.resident, a.channels, a.supported
                ));
                continue;
            }
            if let Some(p) = pages_missed {
                let got: BTreeSet<u32> = a.pages.iter().copied().collect();
                if got != p {
                    fail(format!("device requested {got:?}, core {p:?}"));
                }
            }
            for (c, (&g, &w)) in a.values.iter().zip(&want).take(s.channels).enumerate() {
                if !agrees(l.options.filter, g, w) {
                    fail(format!("channel {c}: device {g:e}, core {w:e}"));
                }
            }
        }
        println!(
            "{name}: {resident_pages} of {pack_pages} pages resident; {} lookups, {n_missing} \
             missing, {n_requesting} with requests",
            lookups.len()
        );
        total += lookups.len();
        missing += n_missing;
        requesting += n_requesting;
    }
    assert!(
        failures.is_empty(),
        "{} of {total} lookups differ from core's; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(30)].join("\n")
    );
    // Both kinds ran: lookups served and lookups that requested pages.
    assert!(
        missing > total / 20 && missing < total * 19 / 20 && requesting >= missing,
        "{missing} of {total} lookups missed, {requesting} requested"
    );
}
