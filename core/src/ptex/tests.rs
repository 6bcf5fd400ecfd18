//! Ptex through the engine: every fixture sampled under a budget of a few pages, blocking
//! and multi-pass, equals the same lookups on the fully resident reader, bit for bit; the
//! budget is never exceeded and pages are evicted and refilled on the way.

use super::*;
use crate::options::LoaderOptions;
use crate::sampling::ptex::{PtexFaces, PtexFilterType, ResidentPtex};
use crate::sources::ptex::tests::fixtures::{self, Fixture};
use crate::sources::ptex::PtexFile;

mod batch;
mod decode_cache;
mod opening;

const FILTERS: [PtexFilterType; 5] = [
    PtexFilterType::Point,
    PtexFilterType::Bilinear,
    PtexFilterType::Box,
    PtexFilterType::Mitchell,
    PtexFilterType::StochasticPoint,
];

/// A lookup: face, point, footprint, filter.
type Lookup = (u32, [f32; 2], [f32; 4], PtexFilterOptions);

/// Deterministic lookups over every face: small to whole-face footprints, near edges and
/// corners, every filter.
fn lookups(num_faces: usize, n: usize) -> Vec<Lookup> {
    let mut rng = crate::test_rng::xorshift32(0x9E37_79B9);
    let mut next = move || (rng() >> 8) as f32 / (1u32 << 24) as f32;
    (0..n)
        .map(|i| {
            let face = (i % num_faces) as u32;
            let (u, v) = (next() * 1.1 - 0.05, next() * 1.1 - 0.05);
            let (u, v) = if u + v > 1.0 && i % 2 == 0 {
                (1.0 - v, 1.0 - u)
            } else {
                (u, v)
            };
            let w = [0.0, 0.003, 0.02, 0.1, 0.4, 1.0][i % 6];
            let d = [
                w * next(),
                w * (next() - 0.5) * 0.3,
                w * (next() - 0.5) * 0.3,
                w * next(),
            ];
            let filter = FILTERS[(i / 3) % FILTERS.len()];
            let options = PtexFilterOptions {
                filter,
                lerp: i % 4 == 0,
                jitter: [next(), next()],
                ..Default::default()
            };
            (face, [u, v], d, options)
        })
        .collect()
}

fn reference(fx: &Fixture, lookups: &[Lookup]) -> Vec<Vec<f32>> {
    let store = ResidentPtex::new(Arc::new(PtexFile::open(&fx.path).unwrap())).unwrap();
    let n = store.texture().num_channels;
    lookups
        .iter()
        .map(|(face, uv, d, o)| {
            let mut out = vec![0f32; n];
            let s = ptex_sample(
                &store, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, &mut out,
            );
            assert!(s.resident);
            out
        })
        .collect()
}

/// A folder of its own (named after `tag`) holding one synthetic file of `faces` faces,
/// sides up to `2^max_log2`, seed 3; and the file's path.
fn one_synthetic_file(
    tag: &str,
    faces: u32,
    max_log2: i8,
) -> (std::path::PathBuf, std::path::PathBuf) {
    use crate::sources::ptex::write::{synthetic_file_name, write_synthetic_set, SyntheticSet};
    let dir = std::env::temp_dir().join(format!("demandtex-ptex-{tag}-{}", std::process::id()));
    let set = SyntheticSet {
        files: 1,
        faces,
        seed: 3,
        max_log2,
    };
    write_synthetic_set(&dir, &set).unwrap();
    let path = dir.join(synthetic_file_name(0));
    (dir, path)
}

fn options(pages: u64) -> LoaderOptions {
    LoaderOptions {
        max_texture_memory: pages * TILE_BYTES as u64,
        fill_threads: 1,
        ..Default::default()
    }
}

/// Blocking: 12 pages of budget (the largest fixture packs into about 40).
#[test]
fn blocking_under_a_tiny_budget_equals_resident() {
    let mut evictions = 0;
    for name in fixtures::FIXTURES {
        let fx = Fixture::load(name);
        let cache = TextureCache::new(options(12)).unwrap();
        let tex = cache.create_ptex_texture(&fx.path).unwrap();
        let n = fx.file.num_channels();
        let ls = lookups(fx.file.num_faces(), 600);
        let want = reference(&fx, &ls);
        for (i, ((face, uv, d, o), want)) in ls.iter().zip(&want).enumerate() {
            let mut out = vec![0f32; n];
            let s = cache.ptex_sample(
                &tex, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, &mut out,
            );
            assert!(s.resident, "{name} lookup {i}");
            assert_eq!(&out, want, "{name} lookup {i}: {:?}", ls[i]);
        }
        let stats = cache.loader().engine().stats();
        assert!(
            stats.peak_resident_bytes <= stats.budget_bytes,
            "{name}: {stats:?}"
        );
        assert_eq!(stats.read_errors, 0, "{name}");
        evictions += stats.evictions;
        // Every page but the last is at least half full (tiles of 3-byte texels fill 3/4).
        let packing = tex.packing().unwrap();
        let full = packing.pages.saturating_sub(1) as f64 * TILE_BYTES as f64;
        assert!(
            packing.unit_bytes as f64 >= 0.5 * full,
            "{name}: {packing:?}"
        );
        eprintln!("{name}: {packing:?}");
        let resident = tex.resident_packing(cache.loader().engine());
        assert!(
            resident.pages > 0 && resident.pages <= 12,
            "{name}: {resident:?}"
        );
    }
    assert!(evictions > 0, "the budget forced no eviction");
}

/// Multi-pass: batches of lookups sampled launch after launch until resident, under a
/// budget of 24 pages; the converged values equal the resident ones.
#[test]
fn multipass_under_a_small_budget_converges_to_resident() {
    for name in fixtures::FIXTURES {
        let fx = Fixture::load(name);
        let loader = Loader::new(options(24)).unwrap();
        let tex = loader.create_ptex_texture(&fx.path).unwrap();
        let n = fx.file.num_channels();
        let ls = lookups(fx.file.num_faces(), 240);
        let want = reference(&fx, &ls);
        for (b, batch) in ls.chunks(4).enumerate() {
            let mut got = vec![vec![0f32; n]; batch.len()];
            let mut done = false;
            for _ in 0..12 {
                let launch = loader.launch_prepare();
                done = true;
                for ((face, uv, d, o), out) in batch.iter().zip(&mut got) {
                    let s = launch
                        .ptex_sample(&tex, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, out);
                    done &= s.resident;
                }
                loader.process_requests(launch).wait();
                if done {
                    break;
                }
            }
            assert!(done, "{name}: batch {b} did not converge");
            for (k, out) in got.iter().enumerate() {
                assert_eq!(out, &want[b * 4 + k], "{name} lookup {}", b * 4 + k);
            }
        }
        let stats = loader.engine().stats();
        assert!(
            stats.peak_resident_bytes <= stats.budget_bytes,
            "{name}: {stats:?}"
        );
        assert_eq!(stats.read_errors, 0, "{name}");
    }
}

/// A file that cannot be opened is a clear error naming it.
#[test]
fn a_bad_file_is_an_error() {
    let cache = TextureCache::new(options(12)).unwrap();
    let e = cache.create_ptex_texture("/nonexistent/x.ptx").unwrap_err();
    assert!(e.to_string().contains("x.ptx"), "{e}");
}

/// 5,000 small files stream through a set of 100 open files: the set never holds more,
/// each file is opened about once in a file-by-file sweep (no reopening storm), and every
/// lookup equals the resident reader's.
#[test]
fn five_thousand_files_through_a_hundred_open_files() {
    use crate::sources::ptex::write::{synthetic_file_name, write_synthetic_set, SyntheticSet};
    use crate::sources::FileHandles;
    const FILES: usize = 5000;
    let dir = std::env::temp_dir().join(format!("demandtex-ptex-handles-{}", std::process::id()));
    let set = SyntheticSet {
        files: FILES,
        faces: 2,
        seed: 7,
        max_log2: 4,
    };
    write_synthetic_set(&dir, &set).unwrap();
    let handles = Arc::new(FileHandles::new(100));
    let cache = TextureCache::new(LoaderOptions {
        max_texture_memory: 256 * TILE_BYTES as u64,
        fill_threads: 1,
        ..Default::default()
    })
    .unwrap();
    let options = PtexFilterOptions {
        filter: PtexFilterType::Bilinear,
        lerp: true,
        ..Default::default()
    };
    let mut peak_open = 0;
    for i in 0..FILES {
        let path = dir.join(synthetic_file_name(i));
        let tex = cache
            .create_ptex_texture_with_handles(&path, handles.clone())
            .unwrap();
        let resident = ResidentPtex::new(Arc::new(PtexFile::open(&path).unwrap())).unwrap();
        let n = resident.texture().num_channels;
        for face in 0..2 {
            let (mut got, mut want) = (vec![0f32; n], vec![0f32; n]);
            let d = [0.05, 0.0, 0.0, 0.05];
            let s = cache.ptex_sample(
                &tex, face, 0.3, 0.6, d[0], d[1], d[2], d[3], &options, &mut got,
            );
            assert!(s.resident, "file {i} face {face}");
            ptex_sample(
                &resident, face, 0.3, 0.6, d[0], d[1], d[2], d[3], &options, &mut want,
            );
            assert_eq!(got, want, "file {i} face {face}");
        }
        peak_open = peak_open.max(handles.stats().open_now);
    }
    let stats = handles.stats();
    assert!(peak_open <= 100, "{peak_open} files open at once");
    assert!(
        stats.opens >= FILES as u64 && stats.opens <= FILES as u64 + 100,
        "{} opens for {FILES} files",
        stats.opens
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A blocking cache fills pages lazily: lookups from several threads at once, under a
/// budget that forces evictions, decode the units they meet in place and every value
/// equals the resident reader's; a few lookups decode far fewer unit bytes than filling
/// their pages whole (a multi-pass loader's eager fills) would.
#[test]
fn lazy_pages_fill_in_place_from_many_threads() {
    let fx = Fixture::load("quad_uint8_rgb");
    let ls = lookups(fx.file.num_faces(), 2400);
    let want = reference(&fx, &ls);
    let cache = TextureCache::new(options(6)).unwrap();
    let tex = cache.create_ptex_texture(&fx.path).unwrap();
    assert_eq!(
        tex.pages().unwrap().unit_fill(),
        crate::sources::ptex::UnitFill::Lazy
    );
    let n = fx.file.num_channels();
    std::thread::scope(|s| {
        for t in 0..4 {
            let (cache, tex, ls, want) = (&cache, &tex, &ls, &want);
            s.spawn(move || {
                for i in (t..ls.len()).step_by(4) {
                    let (face, uv, d, o) = &ls[(i * 7) % ls.len()];
                    let mut out = vec![0f32; n];
                    let r = cache.ptex_sample(
                        tex, *face, uv[0], uv[1], d[0], d[1], d[2], d[3], o, &mut out,
                    );
                    assert!(r.resident, "lookup {i}");
                    assert_eq!(out, want[(i * 7) % ls.len()], "lookup {i}");
                }
            });
        }
    });
    let stats = cache.loader().engine().stats();
    assert!(stats.evictions > 0 && stats.peak_resident_bytes <= stats.budget_bytes);
    assert!(tex.pages().unwrap().unit_error().is_none());

    // Sparse lookups (a few faces of a file of many small ones) decode a few units, where
    // filling their pages whole decodes every unit on them.
    let (dir, path) = one_synthetic_file("sparse", 400, 5);
    let o = PtexFilterOptions {
        filter: PtexFilterType::Point,
        ..Default::default()
    };
    let faces = [3u32, 150, 333];
    let cache = TextureCache::new(options(64)).unwrap();
    let lazy = cache.create_ptex_texture(&path).unwrap();
    let loader = Loader::new(options(64)).unwrap();
    let eager = loader.create_ptex_texture(&path).unwrap();
    for face in faces {
        let (mut a, mut b) = ([0f32; 4], [0f32; 4]);
        assert!(
            cache
                .ptex_sample(&lazy, face, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut a)
                .resident
        );
        for _ in 0..4 {
            let launch = loader.launch_prepare();
            let r = launch.ptex_sample(&eager, face, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut b);
            loader.process_requests(launch).wait();
            if r.resident {
                break;
            }
        }
        assert_eq!(a, b, "face {face}");
    }
    let (lazy, eager) = (
        lazy.pages().unwrap().read_stats(),
        eager.pages().unwrap().read_stats(),
    );
    assert!(lazy.units_decoded <= 3, "{lazy:?}");
    assert!(
        lazy.unit_bytes_decoded * 10 < eager.unit_bytes_decoded,
        "lazy {lazy:?}, eager {eager:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Set the modification time of the file at `path` (what a read checks beside its length
/// and inode).
fn set_modified(path: &std::path::Path, time: std::time::SystemTime) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_modified(time).unwrap();
}

/// A unit that cannot be decoded in place (the file's data was overwritten after it was
/// opened) gives the face's constant colour, non-resident, and keeps the error.
#[test]
fn a_unit_that_fails_in_place_falls_back_with_its_error() {
    let fx = Fixture::load("quad_uint8_rgb");
    let dir = std::env::temp_dir().join(format!("demandtex-ptex-lazy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("damaged.ptx");
    let bytes = std::fs::read(&fx.path).unwrap();
    std::fs::write(&path, &bytes).unwrap();
    let cache = TextureCache::new(options(16)).unwrap();
    let tex = cache.create_ptex_texture(&path).unwrap();
    // Parsed now (it would be at the first lookup), before the damage.
    tex.pages().unwrap();
    // Zero the second half of the file: the face data blocks, not the header or tables
    // already read.
    let mut damaged = bytes.clone();
    let half = damaged.len() / 2;
    damaged[half..].fill(0);
    let opened = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::fs::write(&path, &damaged).unwrap();
    // The same length and modification time: the reads cannot tell the file changed (see
    // `a_file_changed_on_disk_is_an_error_not_texels_of_two_versions`), the damage is met
    // by the decoder.
    set_modified(&path, opened);
    let o = PtexFilterOptions {
        filter: PtexFilterType::Point,
        ..Default::default()
    };
    let n = fx.file.num_channels();
    let mut failed = 0;
    for face in 0..fx.file.num_faces() as u32 {
        let mut out = vec![0f32; n];
        let r = cache.ptex_sample(&tex, face, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut out);
        if !r.resident {
            failed += 1;
            let constant = fx.file.constant(face).unwrap();
            let want: Vec<f32> = constant
                .iter()
                .map(|&b| f32::from(b) * (1.0 / 255.0))
                .collect();
            assert_eq!(out, want, "face {face}");
        }
    }
    assert!(failed > 0, "no lookup met the damage");
    let e = tex
        .pages()
        .unwrap()
        .unit_error()
        .expect("the error is kept");
    assert!(e.0.contains("damaged.ptx"), "{e:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file rewritten on disk after its texture was created: a unit read afterwards is an
/// error naming the change (the face's constant colour, non-resident), never texels of the
/// new file decoded with the old one's tables; creating the texture again reads the new file.
#[test]
fn a_file_changed_on_disk_is_an_error_not_texels_of_two_versions() {
    let fx = Fixture::load("quad_uint8_rgb");
    let dir = std::env::temp_dir().join(format!("demandtex-ptex-changed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("changing.ptx");
    let bytes = std::fs::read(&fx.path).unwrap();
    let o = PtexFilterOptions {
        filter: PtexFilterType::Point,
        ..Default::default()
    };
    let n = fx.file.num_channels();
    let faces = fx.file.num_faces() as u32;
    let sample = |cache: &TextureCache, tex: &PtexTexture, face: u32| {
        let mut out = vec![0f32; n];
        let r = cache.ptex_sample(tex, face, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &o, &mut out);
        (r.resident, out)
    };
    // Two kinds of change: a longer file, and one of the same length written later.
    for longer in [true, false] {
        std::fs::write(&path, &bytes).unwrap();
        let cache = TextureCache::new(options(16)).unwrap();
        let tex = cache.create_ptex_texture(&path).unwrap();
        let (resident, before) = sample(&cache, &tex, 0);
        assert!(resident);
        let mut changed = bytes.clone();
        if longer {
            changed.extend_from_slice(&[0u8; 16]);
        }
        let opened = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, &changed).unwrap();
        set_modified(&path, opened + std::time::Duration::from_secs(10));
        // Face 0 was decoded before the change and stays; every face read after it fails.
        assert_eq!(sample(&cache, &tex, 0), (true, before));
        let mut failed = 0;
        for face in 1..faces {
            let (resident, _) = sample(&cache, &tex, face);
            failed += usize::from(!resident);
        }
        assert!(failed > 0, "longer {longer}: no read met the change");
        let e = tex
            .pages()
            .unwrap()
            .unit_error()
            .expect("the error is kept");
        assert!(
            e.0.contains("changing.ptx") && e.0.contains("changed on disk"),
            "{e:?}"
        );
        // Created again, the texture reads the file as it is now.
        let again = cache.create_ptex_texture(&path).unwrap();
        for face in 0..faces {
            assert!(
                sample(&cache, &again, face).0,
                "longer {longer}: face {face}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each face's constant colour, held with the open file, is charged to the budget as long
/// as the texture is open: before any unit is read, an open texture's resident bytes are
/// its constants and the engine's decode cache (an eighth of the budget, taken at the
/// first registration); a budget that cannot hold them fails the texture with an error
/// saying so (its lookups read the constants, as resident); unloading gives the
/// constants' bytes back.
#[test]
fn per_face_constants_are_charged_to_the_budget() {
    let (dir, path) = one_synthetic_file("consts", 50_000, 2);
    let file = PtexFile::open(&path).unwrap();
    let constants = file.constant_bytes();
    assert_eq!(constants, 50_000 * file.pixel_size() as u64);
    assert!(constants > 2 * TILE_BYTES as u64, "{constants}");
    let filter = PtexFilterOptions::default();
    let mut out = vec![0f32; file.num_channels()];
    // One launch: lookups find the texture unopened and ask for it; its fill opens it.
    let open = |loader: &Loader, tex: &PtexTexture, out: &mut [f32]| {
        let launch = loader.launch_prepare();
        let mut resident = true;
        for face in 0..64 {
            let s = launch.ptex_sample(tex, face, 0.5, 0.5, 0.0, 0.0, 0.0, 0.0, &filter, out);
            resident &= s.resident;
        }
        loader.process_requests(launch).wait();
        resident
    };

    let loader = Loader::new(options(64)).unwrap();
    let tex = loader.create_ptex_texture(&path).unwrap();
    let cache = loader.engine().ptex_decode_cache().capacity() as u64;
    assert_eq!(cache, 64 * TILE_BYTES as u64 / 8);
    assert_eq!(loader.engine().stats().resident_bytes, cache);
    open(&loader, &tex, &mut out);
    let stats = loader.engine().stats();
    assert_eq!(stats.failed_textures, 0, "{stats:?}");
    assert_eq!(stats.resident_bytes, constants + cache, "{stats:?}");
    loader.engine().unload_texture(tex.id()).unwrap();
    // Launches that could still see the texture have ended: the bytes are back.
    drop(loader.launch_prepare());
    assert_eq!(loader.engine().stats().resident_bytes, cache);

    let small = Loader::new(options(2)).unwrap();
    let tex = small.create_ptex_texture(&path).unwrap();
    open(&small, &tex, &mut out);
    let stats = small.engine().stats();
    assert_eq!(
        (stats.failed_textures, stats.resident_bytes),
        (1, 2 * TILE_BYTES as u64 / 8),
        "{stats:?}"
    );
    let e = small.engine().texture_error(tex.id()).expect("an error");
    assert!(e.to_string().contains("budget"), "{e}");
    assert!(
        open(&small, &tex, &mut out),
        "a failed texture reads its constants"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
