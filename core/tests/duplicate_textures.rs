//! Duplicate-texture sharing (`LoaderOptions::share_duplicate_textures`): textures whose
//! files hold the same texels (one file under several names, or byte-identical copies)
//! sample one set of tiles. Lookups return exactly what they return without it; files of
//! the same size, format and mip tail whose bytes differ never share, unless maketx's
//! fingerprint says they hold one source's texels; an owner's contents dropped take its
//! sharers' along, and they open again and share or own.

mod common;

use common::{render, Query, TestDir};
use demandtex::sources::exr::{write_mip_exr, Compression, WriteOptions};
use demandtex::sources::{file_source, FloatImage};
use demandtex::textures::{AddressMode, FilterMode, MipFilter, TextureDesc};
use demandtex::{Loader, LoaderOptions, SampleOptions, TextureCache, TextureId};
use std::path::{Path, PathBuf};

const SIZE: u32 = 512;

/// Version `v` of the image: the versions differ at texel (7, 9) only.
fn image(v: u32) -> FloatImage {
    let mut img = FloatImage::zeros(SIZE, SIZE, 4);
    for y in 0..SIZE {
        for x in 0..SIZE {
            for c in 0..4 {
                let base = ((x * 7 + y * 13 + c * 101) % 1024) as f32 / 256.0;
                let bump = if (x, y) == (7, 9) {
                    v as f32 * 0.25
                } else {
                    0.0
                };
                img.data[((y * SIZE + x) * 4 + c) as usize] = base + bump;
            }
        }
    }
    img
}

fn write(path: &Path, v: u32, compression: Compression) {
    let options = WriteOptions {
        compression,
        ..WriteOptions::default()
    };
    write_mip_exr(path, &image(v), &options, None).unwrap();
}

/// `a.exr`, version `v`, and `b.exr`, a copy of its bytes.
fn file_and_copy(dir: &TestDir, v: u32) -> [PathBuf; 2] {
    let (a, b) = (dir.path("a.exr"), dir.path("b.exr"));
    write(&a, v, Compression::Zip);
    std::fs::copy(&a, &b).unwrap();
    [a, b]
}

/// The set: `a.exr`; `copy.exr`, its bytes; `link.exr`, a hard link to it (Unix);
/// `other.exr`, another version; `plain.exr`, a's texels stored uncompressed (other bytes).
fn write_set(dir: &TestDir) -> Vec<PathBuf> {
    let a = dir.path("a.exr");
    write(&a, 1, Compression::Zip);
    std::fs::copy(&a, dir.path("copy.exr")).unwrap();
    let link = dir.path("link.exr");
    if std::fs::hard_link(&a, &link).is_err() {
        std::fs::copy(&a, &link).unwrap();
    }
    write(&dir.path("other.exr"), 2, Compression::Zip);
    write(&dir.path("plain.exr"), 1, Compression::None);
    ["a", "copy", "link", "other", "plain"]
        .iter()
        .map(|n| dir.path(&format!("{n}.exr")))
        .collect()
}

fn options(share: bool) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 16,
        page_table_entries: 1 << 10,
        max_textures: 16,
        max_texture_memory: 256 << 20,
        fill_threads: 2,
        share_duplicate_textures: share,
        ..Default::default()
    }
}

/// Point lookups at level 0 over every texture, past the edge too (the copy clamps, the
/// others wrap: sharing tiles keeps each texture's own description).
fn queries(textures: &[TextureId]) -> Vec<Query> {
    let d = 1.0 / SIZE as f32;
    let mut q = Vec::new();
    for &texture in textures {
        for i in 0..2048u32 {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(11);
            q.push(Query {
                texture,
                s: (h % 1300) as f32 / 1000.0 - 0.1,
                t: ((h >> 12) % 1000) as f32 / 1000.0,
                ddx: [d, 0.0],
                ddy: [0.0, d],
            });
        }
    }
    q
}

fn desc(address: AddressMode) -> TextureDesc {
    TextureDesc {
        filter: FilterMode::Point,
        mip_filter: MipFilter::Point,
        address: [address, AddressMode::Wrap],
        ..TextureDesc::default()
    }
}

fn create(loader: &Loader, files: &[PathBuf]) -> Vec<TextureId> {
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let address = if i == 1 {
                AddressMode::Clamp
            } else {
                AddressMode::Wrap
            };
            loader
                .create_texture(file_source(f), desc(address))
                .unwrap()
        })
        .collect()
}

#[test]
fn copies_and_links_share_tiles_and_sample_as_without() {
    let dir = TestDir::new("duplicates", "share");
    let files = write_set(&dir);
    let run = |share: bool| {
        let loader = Loader::new(options(share)).unwrap();
        let textures = create(&loader, &files);
        let r = render(&loader, &queries(&textures), 2, 16);
        assert!(r.converged, "share {share}");
        (loader, textures, r.values)
    };
    let (off, _, without) = run(false);
    let (on, t, with) = run(true);
    assert_eq!(with, without, "sharing tiles changes no lookup");

    let so = off.stats();
    let s = on.stats();
    assert_eq!(so.textures_sharing_tiles, 0);
    assert_eq!(s.textures_sharing_tiles, 2, "{s:?}");
    // a, copy and link: one owner, two sharers of its pages; other and plain own theirs.
    let owner_of = |x: TextureId| on.shares_tiles_of(x).unwrap_or(x);
    let group: Vec<TextureId> = t[..3].iter().map(|&x| owner_of(x)).collect();
    assert!(group.iter().all(|&o| o == group[0]), "{group:?}");
    assert!(t[..3].contains(&group[0]));
    for &x in &t[..3] {
        assert_eq!(on.texture_pages(x), on.texture_pages(group[0]));
    }
    assert_eq!(on.shares_tiles_of(t[3]), None, "another version");
    assert_eq!(
        on.shares_tiles_of(t[4]),
        None,
        "the same texels in other bytes"
    );
    assert!(on.texture_pages(t[3]) != on.texture_pages(group[0]));
    // Tiles read and held once for the three: under 3/5 of the run without.
    assert!(
        s.tiles_filled * 5 < so.tiles_filled * 3 + 5,
        "{} vs {}",
        s.tiles_filled,
        so.tiles_filled
    );
    assert!(s.peak_resident_bytes < so.peak_resident_bytes);
    assert_eq!(so.duplicate_bytes_hashed, 0);
    // a and its copy were hashed, each once; on Unix the link is a's inode, never read
    // again. other.exr may be hashed too, if its tail and length match a's; plain.exr
    // differs in length: told apart without reading it.
    let len = |i: usize| std::fs::metadata(&files[i]).unwrap().len();
    assert!(s.duplicate_bytes_hashed >= 2 * len(0), "{s:?}");
    if cfg!(unix) {
        assert!(s.duplicate_bytes_hashed <= 2 * len(0) + len(3), "{s:?}");
        assert!(len(4) != len(0));
    }
}

/// Of two textures, the one holding its own tiles, and the other.
fn owner_and_other(loader: &Loader, t: &[TextureId]) -> (TextureId, TextureId) {
    let owner = t
        .iter()
        .copied()
        .find(|&x| loader.shares_tiles_of(x).is_none())
        .unwrap();
    (owner, t.iter().copied().find(|&x| x != owner).unwrap())
}

#[test]
fn an_owner_dropped_takes_its_sharers_along_and_they_share_again() {
    let dir = TestDir::new("duplicates", "drop");
    let files = file_and_copy(&dir, 1);
    let loader = Loader::new(options(true)).unwrap();
    let t: Vec<TextureId> = files
        .iter()
        .map(|f| {
            loader
                .create_texture(file_source(f), desc(AddressMode::Wrap))
                .unwrap()
        })
        .collect();
    let q = queries(&t);
    let first = render(&loader, &q, 2, 16);
    assert!(first.converged);
    assert_eq!(loader.stats().textures_sharing_tiles, 1);
    let (owner, sharer) = owner_and_other(&loader, &t);
    assert_eq!(loader.shares_tiles_of(sharer), Some(owner));

    // Invalidating the owner drops the sharer's contents too; both open again, and one
    // shares the other's tiles.
    loader.invalidate_texture(owner).unwrap();
    assert_eq!(loader.stats().textures_sharing_tiles, 0);
    assert_eq!(loader.shares_tiles_of(sharer), None);
    let again = render(&loader, &q, 2, 16);
    assert!(again.converged);
    assert_eq!(again.values, first.values);
    assert_eq!(loader.stats().textures_sharing_tiles, 1);

    // Unloading the owner: the other opens again on its own and samples the same.
    let (owner, other) = owner_and_other(&loader, &t);
    loader.unload_texture(owner).unwrap();
    let q_other = queries(&[other]);
    let alone = render(&loader, &q_other, 2, 16);
    assert!(alone.converged);
    let n = q_other.len();
    let at = if other == t[0] { 0 } else { n };
    assert_eq!(alone.values, first.values[at..at + n]);
    assert_eq!(loader.stats().textures_sharing_tiles, 0);
    assert_eq!(loader.shares_tiles_of(other), None);

    // Invalidating a sharer leaves its owner's tiles alone.
    let c = dir.path("c.exr");
    std::fs::copy(&files[0], &c).unwrap();
    let third = loader
        .create_texture(file_source(&c), desc(AddressMode::Wrap))
        .unwrap();
    assert!(render(&loader, &queries(&[other, third]), 2, 16).converged);
    assert_eq!(loader.shares_tiles_of(third), Some(other));
    let filled = loader.stats().tiles_filled;
    loader.invalidate_texture(third).unwrap();
    assert!(render(&loader, &queries(&[other]), 2, 16).launches == 1);
    assert_eq!(loader.stats().tiles_filled, filled, "other's tiles stayed");
}

#[test]
fn blocking_lookups_of_copies_read_their_tiles_once() {
    let dir = TestDir::new("duplicates", "cache");
    let [a, b] = file_and_copy(&dir, 3);
    let run = |share: bool| {
        let cache = TextureCache::new(options(share)).unwrap();
        let o = SampleOptions::default();
        let ta = cache.texture_for_path(&a, desc(AddressMode::Wrap)).unwrap();
        let tb = cache.texture_for_path(&b, desc(AddressMode::Wrap)).unwrap();
        let mut values = Vec::new();
        for i in 0..4096u32 {
            let (s, t) = (
                (i % 64) as f32 / 64.0 + 0.003,
                (i / 64) as f32 / 64.0 + 0.005,
            );
            let va = cache.tex2d_lod(ta, s, t, 0.0, &o);
            let vb = cache.tex2d_lod(tb, s, t, 0.0, &o);
            assert!(va.resident && vb.resident);
            assert_eq!(va.value, vb.value);
            values.push(va.value);
        }
        (cache.stats(), values)
    };
    let (off, v_off) = run(false);
    let (on, v_on) = run(true);
    assert_eq!(v_on, v_off);
    assert_eq!(on.textures_sharing_tiles, 1);
    assert_eq!(off.tiles_filled, 2 * on.tiles_filled, "{off:?}\n{on:?}");
}

/// Replay blocking lookups over `files` (a 32×32 grid of level-0 points each) through a
/// cache with or without sharing (and with full pages or pages of the file's tiles):
/// its statistics, every value, and which textures share another's tiles.
fn maketx_lookups(
    files: &[PathBuf],
    share: bool,
    full_pages: bool,
) -> (demandtex::Stats, Vec<[f32; 4]>, Vec<bool>) {
    let cache = TextureCache::new(LoaderOptions {
        pages_of_file_tiles: !full_pages,
        ..options(share)
    })
    .unwrap();
    let o = SampleOptions::default();
    let t: Vec<TextureId> = files
        .iter()
        .map(|f| cache.texture_for_path(f, desc(AddressMode::Wrap)).unwrap())
        .collect();
    let mut values = Vec::new();
    for &tex in &t {
        for i in 0..1024u32 {
            let (s, u) = ((i % 32) as f32 / 32.0 + 0.01, (i / 32) as f32 / 32.0 + 0.02);
            let v = cache.tex2d_lod(tex, s, u, 0.0, &o);
            assert!(v.resident);
            values.push(v.value);
        }
    }
    let sharing = t
        .iter()
        .map(|&x| cache.shares_tiles_of(x).is_some())
        .collect();
    (cache.stats(), values, sharing)
}

fn tx_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/tx")
        .join(name)
}

#[test]
fn maketx_files_and_their_copies_share_and_sample_as_without() {
    // `.tx` files written by OpenImageIO's maketx (tests/fixtures/tx), and a byte copy of
    // one of them elsewhere: the copy shares the original's tiles, the other file does not.
    let dir = TestDir::new("duplicates", "maketx");
    let copy = dir.path("rgb8_zip_copy.tx");
    std::fs::copy(tx_fixture("rgb8_zip.tx"), &copy).unwrap();
    let files = [
        tx_fixture("rgb8_zip.tx"),
        copy,
        tx_fixture("rgb8_lzw_wrap.tx"),
    ];
    let (off, v_off, _) = maketx_lookups(&files, false, false);
    let (on, v_on, sharing) = maketx_lookups(&files, true, false);
    assert_eq!(v_on, v_off, "sharing tiles changes no lookup");
    assert_eq!(on.textures_sharing_tiles, 1, "{on:?}");
    // Which texture holds the tiles depends on which opened first.
    assert!(sharing[0] != sharing[1] && !sharing[2], "{sharing:?}");
    assert!(on.tiles_filled < off.tiles_filled, "{off:?}\n{on:?}");
}

#[test]
fn maketx_files_made_again_share_by_their_fingerprint() {
    // The same texture made by maketx a second later: only the date in its bytes differs,
    // its fingerprint (`oiio:SHA-1`) does not. OpenImageIO shares such files' tiles; so
    // does demandtex, without reading either file whole to compare them.
    let dir = TestDir::new("duplicates", "maketx-again");
    let original = std::fs::read(tx_fixture("rgb8_zip.tx")).unwrap();
    let date = b"2026:11:25 05:39:03";
    let at = original
        .windows(date.len())
        .position(|w| w == date)
        .expect("the fixture's DateTime");
    let mut again = original.clone();
    again[at + date.len() - 1] = b'4';
    let remade = dir.path("rgb8_zip_remade.tx");
    std::fs::write(&remade, &again).unwrap();
    let files = [tx_fixture("rgb8_zip.tx"), remade];
    let (off, v_off, _) = maketx_lookups(&files, false, false);
    let (on, v_on, sharing) = maketx_lookups(&files, true, false);
    assert_eq!(v_on, v_off, "sharing tiles changes no lookup");
    assert_eq!(on.textures_sharing_tiles, 1, "{on:?}");
    assert!(sharing[0] != sharing[1], "{sharing:?}");
    assert_eq!(off.tiles_filled, 2 * on.tiles_filled, "{off:?}\n{on:?}");

    // One source made into files with other tiles and compression (maketx --tile 32 32
    // --compression none, and packbits with its 64×64 tiles): the same texels under one
    // fingerprint. With 64 KiB pages both are one mip tail of equal texels, and share;
    // with pages of the file's tiles their pages differ in size, and they do not.
    let files = [
        tx_fixture("rgba8_none_tile32.tx"),
        tx_fixture("rgba8_packbits.tx"),
    ];
    let (_, v_off, _) = maketx_lookups(&files, false, true);
    let (on, v_on, sharing) = maketx_lookups(&files, true, true);
    assert_eq!(v_on, v_off, "sharing tiles changes no lookup");
    assert_eq!(v_off[..1024], v_off[1024..], "one source's texels");
    assert!(sharing[0] != sharing[1], "{sharing:?}\n{on:?}");
    let (_, _, sharing) = maketx_lookups(&files, true, false);
    assert_eq!(sharing, [false, false]);
}

#[test]
fn maketx_exr_files_share_by_fingerprint_unless_lossy() {
    // maketx's OpenEXR textures of one source (tests/fixtures/exr): ZIP and ZIPS hold the
    // same texels under one fingerprint and share; B44 carries the fingerprint too, but
    // its texels differ (lossy), and it shares with neither.
    let exr = |n: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/exr")
            .join(n)
    };
    let files = [
        exr("rgb_half_zip.exr"),
        exr("rgb_half_zips.exr"),
        exr("rgb_half_b44.exr"),
    ];
    let (off, v_off, _) = maketx_lookups(&files, false, false);
    let (on, v_on, sharing) = maketx_lookups(&files, true, false);
    assert_eq!(v_on, v_off, "sharing tiles changes no lookup");
    assert_eq!(
        v_off[..1024],
        v_off[1024..2048],
        "ZIP and ZIPS: one source's texels"
    );
    assert_ne!(v_off[..1024], v_off[2048..], "B44 is lossy");
    assert!(sharing[0] != sharing[1] && !sharing[2], "{sharing:?}");
    assert_eq!(on.textures_sharing_tiles, 1, "{on:?}");
    assert!(on.tiles_filled < off.tiles_filled, "{off:?}\n{on:?}");
}

/// Two threads open a file and its copy at once, in blocking lookups, many times: whichever
/// owns, the other waits for the owner's publication and neither lookup hangs or misses.
#[test]
fn blocking_lookups_opening_a_file_and_its_copy_at_once_both_finish() {
    let dir = TestDir::new("duplicates", "race");
    let [a, b] = file_and_copy(&dir, 4);
    let o = SampleOptions::default();
    let mut shared = 0;
    for _ in 0..40 {
        let cache = TextureCache::new(options(true)).unwrap();
        let ta = cache.texture_for_path(&a, desc(AddressMode::Wrap)).unwrap();
        let tb = cache.texture_for_path(&b, desc(AddressMode::Wrap)).unwrap();
        let start = std::sync::Barrier::new(2);
        let [va, vb] = std::thread::scope(|s| {
            let look = |t| {
                let (cache, start, o) = (&cache, &start, &o);
                s.spawn(move || {
                    start.wait();
                    cache.tex2d_lod(t, 0.3, 0.7, 0.0, o)
                })
            };
            let (ha, hb) = (look(ta), look(tb));
            [ha.join().unwrap(), hb.join().unwrap()]
        });
        assert!(va.resident && vb.resident);
        assert_eq!(va.value, vb.value);
        shared += cache.stats().textures_sharing_tiles;
    }
    assert!(shared > 0, "no run shared tiles");
}
