//! `dtex_udim_expand_pattern`: core's UDIM rule through the C ABI, and its agreement with
//! `dtex_udim_create_from_pattern`.

use super::util::*;
use crate::status::*;
use crate::udim::*;
use std::ffi::{c_char, c_void, CStr};
use std::path::Path;
use std::ptr::{null, null_mut};

/// One reported tile: (udim, column, row, path).
type Tile = (u32, u32, u32, String);

/// What the test callback collects, and what it answers.
#[derive(Default)]
struct Collect {
    tiles: Vec<Tile>,
    /// Answer STOP at this tile (1-based); 0: never.
    stop_at: usize,
    /// Answer this instead of CONTINUE (to test bad answers); `None`: CONTINUE.
    answer: Option<i32>,
}

unsafe extern "C" fn collect(
    user: *mut c_void,
    udim: u32,
    column: u32,
    row: u32,
    path: *const c_char,
) -> i32 {
    // SAFETY: the tests pass a `Collect` as user data; `path` is a C string for the call.
    let (c, path) = unsafe { (&mut *(user as *mut Collect), CStr::from_ptr(path)) };
    c.tiles
        .push((udim, column, row, path.to_str().unwrap().to_owned()));
    if c.tiles.len() == c.stop_at {
        return DTEX_UDIM_TILE_STOP;
    }
    c.answer.unwrap_or(DTEX_UDIM_TILE_CONTINUE)
}

/// Expand `pattern` into `c`; the status and the count (u32::MAX if not written).
fn expand(pattern: &str, c: &mut Collect) -> (DtexStatus, u32) {
    let pattern = cstring(pattern);
    let mut count = u32::MAX;
    // SAFETY: valid pointers; `collect` honours the callback contract.
    let status = unsafe {
        dtex_udim_expand_pattern(
            pattern.as_ptr(),
            Some(collect),
            c as *mut Collect as *mut c_void,
            &mut count,
        )
    };
    (status, count)
}

/// The tiles of `pattern`, which must expand.
fn tiles(pattern: &Path) -> Vec<Tile> {
    let mut c = Collect::default();
    let (status, count) = expand(pattern.to_str().unwrap(), &mut c);
    ok(status);
    assert_eq!(count as usize, c.tiles.len());
    c.tiles
}

fn touch(dir: &Path, names: &[&str]) {
    for n in names {
        std::fs::write(dir.join(n), b"").unwrap();
    }
}

fn tile(udim: u32, column: u32, row: u32, dir: &Path, name: &str) -> Tile {
    let path = dir.join(name).to_str().unwrap().to_owned();
    (udim, column, row, path)
}

/// `dtex_udim_create_from_pattern`'s status for `pattern` on a fresh loader.
fn create_status(pattern: &str) -> DtexStatus {
    let loader = TestLoader::new();
    let pattern = cstring(pattern);
    let mut udim = 0u32;
    // SAFETY: valid pointers.
    unsafe { dtex_udim_create_from_pattern(loader.0, pattern.as_ptr(), null(), null(), &mut udim) }
}

#[test]
fn a_set_starting_at_1101_and_one_reaching_1999_expand_row_major() {
    let dir = TempDir::new("udim-expand-high");
    let d = dir.path();
    // Rows 0..9 are holes; tiles beyond 1100, up to the last UDIM number.
    touch(d, &["h.1112.exr", "h.1999.exr", "h.1101.exr", "h.1102.exr"]);
    // Not tiles: malformed numbers, other names, a directory named like a tile.
    touch(
        d,
        &[
            "h.1100x.exr",
            "h.2000.exr",
            "h.1000.exr",
            "h.0999.exr",
            "h.exr",
        ],
    );
    touch(d, &["h.10011.exr", "h.1103.tif", "hh.1104.exr"]);
    std::fs::create_dir(d.join("h.1105.exr")).unwrap();
    assert_eq!(
        tiles(&d.join("h.<UDIM>.exr")),
        [
            tile(1101, 0, 10, d, "h.1101.exr"),
            tile(1102, 1, 10, d, "h.1102.exr"),
            tile(1112, 1, 11, d, "h.1112.exr"),
            tile(1999, 8, 99, d, "h.1999.exr"),
        ]
    );
}

#[test]
fn uvtiles_reach_past_u10_and_v10() {
    let dir = TempDir::new("udim-expand-uvtile");
    let d = dir.path();
    touch(
        d,
        &[
            "w_u1_v1.exr",
            "w_u10_v1.exr",
            "w_u11_v2.exr",
            "w_u3_v11.exr",
        ],
    );
    touch(
        d,
        &[
            "w_u255_v255.exr",
            "w_u0_v1.exr",
            "w_u01_v3.exr",
            "w_u256_v1.exr",
        ],
    );
    assert_eq!(
        tiles(&d.join("w_<UVTILE>.exr")),
        [
            tile(1001, 0, 0, d, "w_u1_v1.exr"),
            tile(1010, 9, 0, d, "w_u10_v1.exr"),
            // Column 10: no UDIM number.
            tile(DTEX_UDIM_NO_NUMBER, 10, 1, d, "w_u11_v2.exr"),
            tile(1103, 2, 10, d, "w_u3_v11.exr"),
            tile(DTEX_UDIM_NO_NUMBER, 254, 254, d, "w_u255_v255.exr"),
        ]
    );
}

#[test]
fn expansion_agrees_with_creating_the_texture() {
    let dir = TempDir::new("udim-expand-create");
    let d = dir.path();
    for name in ["c.1101.exr", "c.1113.exr"] {
        write_exr(&d.join(name), 4, 4, |_, _| [0.5, 0.25, 0.125, 1.0]);
    }
    let pattern = d.join("c.<UDIM>.exr");
    assert_eq!(tiles(&pattern).len(), 2);
    ok(create_status(pattern.to_str().unwrap()));

    // No match: OK with no tile here, IO_ERROR when creating a texture.
    let none = d.join("none.<UDIM>.exr");
    let mut c = Collect::default();
    let (status, count) = expand(none.to_str().unwrap(), &mut c);
    ok(status);
    assert_eq!((count, c.tiles.len()), (0, 0));
    fails(create_status(none.to_str().unwrap()), DTEX_STATUS_IO_ERROR);

    // Bad patterns: INVALID_ARGUMENT from both, with the same message.
    let bad = [
        d.join("c.1101.exr"),
        d.join("c.<UDIM>.<UDIM>.exr"),
        d.join("c.<UDIM>.<UVTILE>.exr"),
        d.join("<UDIM>").join("c.<UDIM>.exr"),
    ];
    for p in &bad {
        let p = p.to_str().unwrap();
        let mut c = Collect::default();
        let (status, count) = expand(p, &mut c);
        let expanding = fails(status, DTEX_STATUS_INVALID_ARGUMENT);
        assert_eq!((count, c.tiles.len()), (u32::MAX, 0), "{p}");
        let creating = fails(create_status(p), DTEX_STATUS_INVALID_ARGUMENT);
        assert_eq!(expanding, creating);
    }

    // A directory that cannot be listed: IO_ERROR from both.
    let missing = d.join("missing").join("c.<UDIM>.exr");
    let missing = missing.to_str().unwrap();
    let mut c = Collect::default();
    let e = fails(expand(missing, &mut c).0, DTEX_STATUS_IO_ERROR);
    assert!(e.contains("missing"), "{e}");
    fails(create_status(missing), DTEX_STATUS_IO_ERROR);
}

#[test]
fn a_callback_can_stop_early_and_a_null_one_counts() {
    let dir = TempDir::new("udim-expand-stop");
    let d = dir.path();
    touch(d, &["s.1001.exr", "s.1002.exr", "s.1150.exr"]);
    let pattern = d.join("s.<UDIM>.exr");
    let p = pattern.to_str().unwrap();

    let mut c = Collect {
        stop_at: 2,
        ..Default::default()
    };
    let (status, count) = expand(p, &mut c);
    ok(status);
    assert_eq!(count, 2);
    assert_eq!(
        c.tiles.iter().map(|t| t.0).collect::<Vec<_>>(),
        [1001, 1002]
    );

    let cp = cstring(p);
    let mut count = 0u32;
    // SAFETY: valid pointers; no callback.
    ok(unsafe { dtex_udim_expand_pattern(cp.as_ptr(), None, null_mut(), &mut count) });
    assert_eq!(count, 3);

    // An answer that is neither CONTINUE nor STOP: INVALID_ARGUMENT, no further tile.
    let mut c = Collect {
        answer: Some(7),
        ..Default::default()
    };
    let (status, count) = expand(p, &mut c);
    let e = fails(status, DTEX_STATUS_INVALID_ARGUMENT);
    assert!(e.contains("returned 7") && e.contains("s.1001.exr"), "{e}");
    assert_eq!((count, c.tiles.len()), (u32::MAX, 1));
}

#[test]
fn null_arguments_are_refused() {
    let dir = TempDir::new("udim-expand-null");
    touch(dir.path(), &["n.1001.exr"]);
    let pattern = cpath(&dir.path().join("n.<UDIM>.exr"));
    let mut count = 0u32;
    // SAFETY: NULL pattern / NULL out_count, checked by the library.
    unsafe {
        let e = fails(
            dtex_udim_expand_pattern(null(), Some(collect), null_mut(), &mut count),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(e.contains("pattern is NULL"), "{e}");
        let e = fails(
            dtex_udim_expand_pattern(pattern.as_ptr(), None, null_mut(), null_mut()),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        assert!(e.contains("out_count is NULL"), "{e}");
    }
    // Not UTF-8.
    let bad = c"/tmp/\xff.<UDIM>.exr";
    // SAFETY: a valid C string.
    let status = unsafe { dtex_udim_expand_pattern(bad.as_ptr(), None, null_mut(), &mut count) };
    fails(status, DTEX_STATUS_INVALID_ARGUMENT);
}

/// `dtex_udim_get_grid` / `dtex_udim_get_tile`: the grid a pattern made, each tile's
/// texture (an ordinary texture id: its image information once it opened), holes and
/// tiles outside the grid as `DTEX_NO_TEXTURE`; UNKNOWN_TEXTURE for an id that is not a
/// UDIM texture, INVALID_ARGUMENT for NULL outputs.
#[test]
fn a_udim_textures_tiles_are_ordinary_textures() {
    use crate::lifecycle::dtex_texture_get_image_info;
    use crate::textures::DtexImageInfo;
    use crate::textures::DTEX_NO_TEXTURE;
    let dir = TempDir::new("udim-tiles");
    let d = dir.path();
    write_exr(&d.join("t.1001.exr"), 8, 4, |_, _| [0.5, 0.25, 0.125, 1.0]);
    write_exr(&d.join("t.1012.exr"), 16, 16, |x, _| {
        [x as f32, 0.0, 0.0, 1.0]
    });
    let loader = TestLoader::new();
    let pattern = cpath(&d.join("t.<UDIM>.exr"));
    let mut udim = u32::MAX;
    // SAFETY: valid pointers.
    ok(unsafe {
        dtex_udim_create_from_pattern(loader.0, pattern.as_ptr(), null(), null(), &mut udim)
    });
    let (mut w, mut h, mut base) = (0u32, 0u32, 0u32);
    // SAFETY: valid pointers.
    ok(unsafe { dtex_udim_get_grid(loader.0, udim, &mut w, &mut h, &mut base) });
    assert_eq!((w, h, base), (2, 2, DTEX_NO_TEXTURE));
    let tile = |column, row| {
        let mut t = 7u32;
        // SAFETY: valid pointers.
        ok(unsafe { dtex_udim_get_tile(loader.0, udim, column, row, &mut t) });
        t
    };
    let (first, second) = (tile(0, 0), tile(1, 1));
    assert!(first != DTEX_NO_TEXTURE && second != DTEX_NO_TEXTURE && first != second);
    for (column, row) in [(1, 0), (0, 1), (2, 0), (0, 2), (u32::MAX, u32::MAX)] {
        assert_eq!(tile(column, row), DTEX_NO_TEXTURE, "({column}, {row})");
    }
    // The tile's id is a texture of the loader: sampled and described as any other.
    converge(&loader, &query_grid(second, 4, 16.0));
    let mut info = DtexImageInfo::default();
    let mut opened = 0u32;
    // SAFETY: valid pointers.
    ok(unsafe { dtex_texture_get_image_info(loader.0, second, &mut info, &mut opened) });
    assert_eq!((opened, info.width, info.height), (1, 16, 16));

    // Not a UDIM texture: a tile's own id, an id never handed out.
    for id in [first, 999, DTEX_NO_TEXTURE] {
        // SAFETY: valid pointers.
        let e = fails(
            unsafe { dtex_udim_get_grid(loader.0, id, &mut w, &mut h, &mut base) },
            DTEX_STATUS_UNKNOWN_TEXTURE,
        );
        assert!(e.contains("not a UDIM texture"), "{e}");
        let mut t = 0u32;
        // SAFETY: valid pointers.
        fails(
            unsafe { dtex_udim_get_tile(loader.0, id, 0, 0, &mut t) },
            DTEX_STATUS_UNKNOWN_TEXTURE,
        );
    }
    // SAFETY: NULL outputs are what is checked.
    unsafe {
        fails(
            dtex_udim_get_grid(loader.0, udim, null_mut(), &mut h, &mut base),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
        fails(
            dtex_udim_get_tile(loader.0, udim, 0, 0, null_mut()),
            DTEX_STATUS_INVALID_ARGUMENT,
        );
    }
}
