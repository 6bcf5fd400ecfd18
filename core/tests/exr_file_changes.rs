//! OpenEXR files rewritten, truncated or replaced on disk while textures from them are
//! resident.
//!
//! A tile is *torn* when the texels the engine serves for one page do not all come from
//! one version of the file. The tests look up every texel of whole pages (point filter,
//! level 0) and classify each page: all texels of version 1, all of version 2, all the
//! fallback colour (the texture failed), or torn. Checked:
//! - with `invalidate_texture`, the new contents are served — size included — whether the
//!   file was rewritten in place or replaced by a rename, and after a truncation (which
//!   fails the texture) once a good file is back;
//! - without it, pages already resident keep their texels, and a page read after the
//!   change is never torn: a rewrite in place or a truncation fails the texture (its
//!   fallback colour, an error saying the file changed), a file replaced by a rename is
//!   served whole from the file opened until its handle is reopened, which fails too.
//!
//! The torn case is real without the check: pages of 128×64 texels over 96×96 file tiles
//! share decoded tiles through the source's block cache, so a page read after a rewrite
//! assembled cached tiles of the old file with tiles of the new one.

mod common;

use common::{render, Query, TestDir};
use demandtex::sources::exr::{write_mip_exr, Compression, WriteOptions};
use demandtex::sources::{ExrOptions, ExrSource, FileHandles, FloatImage};
use demandtex::textures::{FilterMode, MipFilter, TextureDesc};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TextureId};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const FALLBACK: [f32; 4] = [-1.0, -2.0, -3.0, 1.0];

/// Texel `(x, y)` channel `c` of version `v`: exact in half, different in every version.
fn value(v: u32, x: u32, y: u32, c: u32) -> f32 {
    ((x * 7 + y * 13 + c * 101 + v * 333) % 1024) as f32 / 256.0
}

fn image(v: u32, (w, h): (u32, u32)) -> FloatImage {
    let mut img = FloatImage::zeros(w, h, 4);
    for y in 0..h {
        for x in 0..w {
            for c in 0..4 {
                img.data[((y * w + x) * 4 + c) as usize] = value(v, x, y, c);
            }
        }
    }
    img
}

/// Write version `v` of size `size` to `path` (to a temporary file renamed over `path`).
fn write(path: &Path, v: u32, size: (u32, u32), options: &WriteOptions) {
    write_mip_exr(path, &image(v, size), options, None).unwrap();
}

/// 96×96 uncompressed tiles: pages of 128×64 span several, shared through the block
/// cache, and two versions of one size have the same layout byte for byte.
fn misaligned() -> WriteOptions {
    WriteOptions {
        tile: (96, 96),
        compression: Compression::None,
        ..WriteOptions::default()
    }
}

/// Rewrite `live` in place with the bytes of `from` (same inode: truncated, then written),
/// with a modification time 10 s after the old one. The test sets the time, as a later
/// write would, so as not to depend on the file system's timestamp granularity.
fn rewrite_in_place(from: &Path, live: &Path) {
    let before = std::fs::metadata(live).unwrap().modified().unwrap();
    std::fs::copy(from, live).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(live).unwrap();
    f.set_modified(before + Duration::from_secs(10)).unwrap();
}

fn desc() -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        fallback_color: FALLBACK,
        ..TextureDesc::default()
    }
}

fn options() -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: 64 << 20,
        fill_threads: 2,
        ..Default::default()
    }
}

/// A cache with one texture of `path`, read through a file-handle set of its own.
fn cache_of(path: &Path) -> (TextureCache, TextureId, Arc<FileHandles>) {
    let handles = Arc::new(FileHandles::new(4));
    let src = ExrSource::with_options(
        path,
        ExrOptions {
            handles: handles.clone(),
            ..ExrOptions::default()
        },
    );
    let cache = TextureCache::new(options()).unwrap();
    let tex = cache.create_texture(Arc::new(src), desc()).unwrap();
    (cache, tex, handles)
}

/// What a page served.
#[derive(Clone, Debug, PartialEq)]
enum Seen {
    /// Every texel of this version.
    Version(u32),
    /// Every texel the fallback colour.
    Fallback,
    /// Texels of several versions (or of none).
    Torn(String),
}

/// Look up every texel of level-0 page (`px`, `py`) of a `size` texture and say which
/// version it holds.
fn page(cache: &TextureCache, tex: TextureId, size: (u32, u32), (px, py): (u32, u32)) -> Seen {
    let (pw, ph) = (128, 64); // RGBA half
    let o = SampleOptions::default();
    let mut seen: Option<Seen> = None;
    for y in py * ph..((py + 1) * ph).min(size.1) {
        for x in px * pw..((px + 1) * pw).min(size.0) {
            let (s, t) = (
                (x as f32 + 0.5) / size.0 as f32,
                (y as f32 + 0.5) / size.1 as f32,
            );
            let got = cache.tex2d_lod(tex, s, t, 0.0, &o);
            assert!(got.resident, "({x}, {y})");
            let this = if got.value == FALLBACK {
                Seen::Fallback
            } else {
                match (1..=3).find(|&v| got.value == [0, 1, 2, 3].map(|c| value(v, x, y, c))) {
                    Some(v) => Seen::Version(v),
                    None => return Seen::Torn(format!("({x}, {y}) = {:?}", got.value)),
                }
            };
            match &seen {
                None => seen = Some(this),
                Some(first) if *first == this => {}
                Some(first) => {
                    return Seen::Torn(format!("{first:?}, then {this:?} at ({x}, {y})"))
                }
            }
        }
    }
    seen.unwrap()
}

fn error_of(cache: &TextureCache, tex: TextureId) -> String {
    cache
        .texture_error(tex)
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn a_rewrite_in_place_never_tears_a_page_and_invalidate_serves_it() {
    let dir = TestDir::new("file-changes", "in-place");
    let (live, v2) = (dir.path("live.exr"), dir.path("v2.exr"));
    let size = (512, 512);
    write(&live, 1, size, &misaligned());
    write(&v2, 2, size, &misaligned());
    assert_eq!(
        std::fs::metadata(&live).unwrap().len(),
        std::fs::metadata(&v2).unwrap().len(),
        "the same layout byte for byte"
    );
    let (cache, tex, _) = cache_of(&live);
    assert_eq!(page(&cache, tex, size, (0, 0)), Seen::Version(1));
    assert_eq!(page(&cache, tex, size, (1, 0)), Seen::Version(1));

    rewrite_in_place(&v2, &live);
    // Resident pages are untouched.
    assert_eq!(page(&cache, tex, size, (0, 0)), Seen::Version(1));
    // Page (0, 1) shares its upper file tiles (cached, version 1) with page (0, 0); its
    // lower ones are read from the new file. Never both: the texture fails instead.
    assert_eq!(page(&cache, tex, size, (0, 1)), Seen::Fallback);
    let e = error_of(&cache, tex);
    assert!(
        e.contains("changed on disk") && e.contains("modification time") && e.contains("live.exr"),
        "{e}"
    );
    for p in [(0, 0), (1, 0), (3, 5)] {
        assert_eq!(page(&cache, tex, size, p), Seen::Fallback, "{p:?}");
    }

    cache.invalidate_texture(tex).unwrap();
    for p in [(0, 0), (0, 1), (1, 0), (3, 7)] {
        assert_eq!(page(&cache, tex, size, p), Seen::Version(2), "{p:?}");
    }
    assert!(cache.texture_error(tex).is_none());
}

#[test]
fn a_truncated_file_fails_what_was_not_resident_and_invalidate_recovers() {
    let dir = TestDir::new("file-changes", "truncated");
    let live = dir.path("live.exr");
    let size = (640, 384);
    write(&live, 1, size, &WriteOptions::default());
    let (cache, tex, _) = cache_of(&live);
    assert_eq!(page(&cache, tex, size, (0, 0)), Seen::Version(1));
    assert_eq!(page(&cache, tex, size, (4, 5)), Seen::Version(1));

    let len = std::fs::metadata(&live).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&live)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    assert_eq!(page(&cache, tex, size, (0, 0)), Seen::Version(1));
    assert_eq!(page(&cache, tex, size, (2, 3)), Seen::Fallback);
    let e = error_of(&cache, tex);
    assert!(
        e.contains("changed on disk") && e.contains("length went from"),
        "{e}"
    );

    // Reopened truncated: still failed, now for the missing data.
    cache.invalidate_texture(tex).unwrap();
    let seen: Vec<Seen> = (0..6).map(|py| page(&cache, tex, size, (4, py))).collect();
    assert!(seen.contains(&Seen::Fallback), "{seen:?}");
    assert!(
        seen.iter()
            .all(|s| matches!(s, Seen::Fallback | Seen::Version(1))),
        "{seen:?}"
    );
    let e = error_of(&cache, tex);
    assert!(
        e.contains("live.exr") && !e.contains("changed on disk"),
        "{e}"
    );

    // A good file again, of another size: served whole after an invalidation.
    let size2 = (300, 200);
    write(&live, 2, size2, &WriteOptions::default());
    cache.invalidate_texture(tex).unwrap();
    for p in [(0, 0), (2, 3), (1, 1)] {
        assert_eq!(page(&cache, tex, size2, p), Seen::Version(2), "{p:?}");
    }
    assert_eq!(cache.texture_layout(tex).unwrap().width, 300);
}

#[test]
fn a_file_replaced_by_rename_is_served_whole_until_reopened() {
    let dir = TestDir::new("file-changes", "renamed");
    let live = dir.path("live.exr");
    let size = (512, 512);
    write(&live, 1, size, &misaligned());
    let (cache, tex, handles) = cache_of(&live);
    assert_eq!(page(&cache, tex, size, (0, 0)), Seen::Version(1));

    // write_mip_exr writes a temporary file and renames it over `live`.
    write(&live, 2, size, &misaligned());
    // The source still holds the file it opened: version 1, whole.
    assert_eq!(page(&cache, tex, size, (0, 1)), Seen::Version(1));
    assert_eq!(page(&cache, tex, size, (2, 2)), Seen::Version(1));
    // Once its handle is closed (the open-file bound), the path is another file.
    handles.close_all();
    assert_eq!(page(&cache, tex, size, (1, 1)), Seen::Fallback);
    let e = error_of(&cache, tex);
    assert!(e.contains("replaced by another file"), "{e}");

    cache.invalidate_texture(tex).unwrap();
    for p in [(0, 0), (0, 1), (1, 1), (3, 7)] {
        assert_eq!(page(&cache, tex, size, p), Seen::Version(2), "{p:?}");
    }
}

#[test]
fn multipass_invalidate_serves_a_file_rewritten_in_place_with_another_size() {
    let dir = TestDir::new("file-changes", "multipass");
    let (live, v2) = (dir.path("live.exr"), dir.path("v2.exr"));
    let (size1, size2) = ((700, 500), (260, 900));
    write(&live, 1, size1, &WriteOptions::default());
    let other = WriteOptions {
        tile: (32, 32),
        compression: Compression::Piz,
        ..WriteOptions::default()
    };
    write(&v2, 2, size2, &other);
    let loader = Loader::new(options()).unwrap();
    let tex = loader
        .create_texture(Arc::new(ExrSource::new(&live)), desc())
        .unwrap();
    // Texel centres all over level 0, as (s, t) of a texture of `size`.
    let queries = |size: (u32, u32)| -> Vec<(Query, (u32, u32))> {
        (0..1500u32)
            .map(|i| {
                let (x, y) = ((i * 7919) % size.0, (i * 104_729) % size.1);
                let q = Query {
                    texture: tex,
                    s: (x as f32 + 0.5) / size.0 as f32,
                    t: (y as f32 + 0.5) / size.1 as f32,
                    ddx: [1e-6, 0.0],
                    ddy: [0.0, 1e-6],
                };
                (q, (x, y))
            })
            .collect()
    };
    for (v, size) in [(1, size1), (2, size2)] {
        if v == 2 {
            rewrite_in_place(&v2, &live);
            loader.invalidate_texture(tex).unwrap();
        }
        let qs = queries(size);
        let list: Vec<Query> = qs.iter().map(|(q, _)| *q).collect();
        let r = render(&loader, &list, 2, 50);
        assert!(r.converged, "version {v}");
        for (got, (_, (x, y))) in r.values.iter().zip(&qs) {
            assert_eq!(
                *got,
                [0, 1, 2, 3].map(|c| value(v, *x, *y, c)),
                "v{v} ({x}, {y})"
            );
        }
    }
    assert!(loader.texture_error(tex).is_none());
    assert_eq!(loader.texture_layout(tex).unwrap().width, 260);
}
