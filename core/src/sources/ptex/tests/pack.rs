//! The packing of units into pages: every unit of every fixture is found where the page
//! walk says, no two units overlap, the per-page useful bytes add up, and tiles of large
//! units are at most a page; units of one absolute resolution are packed together whatever
//! their faces' sizes.

use super::fixtures;
use crate::sources::ptex::pack::{unit_stride, PackLayout, PlacedUnit, UnitLoc, PAGE_BYTES};
use crate::sources::ptex::{face_flags, FaceInfo, MeshType, PtexPages, Res};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A face of `res` with no neighbours; constant if `constant`.
fn face(res: Res, constant: bool) -> FaceInfo {
    FaceInfo {
        res,
        adjedges: 0,
        flags: if constant { face_flags::CONSTANT } else { 0 },
        adjfaces: [-1; 4],
    }
}

fn locate(layout: &PackLayout, face: u32, res: Res) -> UnitLoc {
    layout
        .locate(face, res)
        .unwrap_or_else(|| panic!("face {face} has no unit at {res}"))
}

/// Assert that the units of `faces` at `res` follow each other on one page, in that order.
fn assert_consecutive(layout: &PackLayout, faces: &[u32], res: Res) {
    for w in faces.windows(2) {
        let (a, b) = (locate(layout, w[0], res), locate(layout, w[1], res));
        assert_eq!(
            (b.page, b.offset),
            (a.page, a.offset + unit_stride(a.bytes)),
            "faces {} and {} at {res}: {a:?} then {b:?}",
            w[0],
            w[1]
        );
    }
}

#[test]
fn neighbouring_faces_of_different_sizes_share_the_group_of_each_resolution() {
    // Neighbours of four sizes: a footprint reads them at one absolute resolution, which
    // is a different reduction of each.
    let faces = [
        face(Res::new(6, 6), false),
        face(Res::new(5, 5), false),
        face(Res::new(7, 7), false),
        face(Res::new(4, 3), false),
        face(Res::new(7, 7), true),
        face(Res::new(6, 5), false),
    ];
    let layout = PackLayout::new(&faces, MeshType::Quad, 3, HashMap::new()).unwrap();
    // 16×16: reductions (2, 2), (1, 1), (3, 3) and (2, 1) of faces 0, 1, 2 and 5; face 3
    // is smaller and face 4 constant.
    assert_consecutive(&layout, &[0, 1, 2, 5], Res::new(4, 4));
    // 32×32 is face 1's full resolution: its unit is in the full-resolution group, not
    // between faces 0 and 2; face 5 (64×32) has it too.
    assert_consecutive(&layout, &[0, 2, 5], Res::new(5, 5));
    // 16×8 is face 3's full resolution.
    assert_consecutive(&layout, &[0, 1, 2, 5], Res::new(4, 3));
    assert!(layout.locate(3, Res::new(4, 4)).is_none());
    assert!(layout.locate(4, Res::new(4, 4)).is_none());
    // Every full-resolution unit comes first, in face order.
    let full: Vec<UnitLoc> = [0, 1, 2, 3, 5]
        .iter()
        .map(|&f| locate(&layout, f, faces[f as usize].res))
        .collect();
    assert_eq!((full[0].page, full[0].offset), (0, 0));
    assert!(full
        .windows(2)
        .all(|w| (w[0].page, w[0].offset) < (w[1].page, w[1].offset)));
    let last_full = full.iter().map(|l| l.page).max().unwrap();
    for (f, info) in faces.iter().enumerate() {
        for u in 0..=info.res.ulog2 {
            for v in 0..=info.res.vlog2 {
                let res = Res::new(u, v);
                if let Some(loc) = layout.locate(f as u32, res).filter(|_| res != info.res) {
                    assert!(loc.page >= last_full, "face {f} at {res}: {loc:?}");
                }
            }
        }
    }
    check_every_unit("neighbours", &layout, &faces, MeshType::Quad);
}

#[test]
fn every_unit_has_one_place_and_units_never_overlap() {
    for fx in fixtures::all() {
        let pages = PtexPages::new(Arc::new(fx.file)).unwrap();
        let file = pages.file();
        check_every_unit(fx.name, pages.layout(), file.faces(), file.mesh_type());
    }
}

/// Every unit of `faces` has one place, listed on its page; no two units overlap, and the
/// per-page useful bytes add up.
fn check_every_unit(name: &str, layout: &PackLayout, faces: &[FaceInfo], mesh: MeshType) {
    let mut placed = HashSet::new();
    let mut total = 0u64;
    for (face, info) in faces.iter().enumerate() {
        let face = face as u32;
        for a in 0..=info.res.ulog2 {
            for b in 0..=info.res.vlog2 {
                let res = Res::new(a, b);
                let loc = layout.locate(face, res);
                let has = !info.is_constant()
                    && res != Res::new(0, 0)
                    && (mesh == MeshType::Quad || info.res.ulog2 - a == info.res.vlog2 - b);
                assert_eq!(loc.is_some(), has, "{name}: face {face} at {res}");
                let Some(loc) = loc else { continue };
                assert!(loc.bytes as usize <= PAGE_BYTES);
                for tile in 0..loc.tiling.map_or(1, |t| t.ntiles) {
                    let (page, offset) = loc.tile(tile);
                    assert!(offset as usize + loc.bytes as usize <= PAGE_BYTES);
                    let unit = PlacedUnit {
                        face,
                        res,
                        tile,
                        offset: offset as usize,
                        bytes: loc.bytes as usize,
                    };
                    assert!(
                        layout.units_on_page(page).contains(&unit),
                        "{name}: {unit:?} not listed on page {page}"
                    );
                    placed.insert((page, unit));
                    total += u64::from(loc.bytes);
                }
            }
        }
    }
    assert_eq!(total, layout.unit_bytes(), "{name}");
    for page in 0..layout.num_pages() {
        let mut units = layout.units_on_page(page);
        assert!(!units.is_empty(), "{name}: page {page} is empty");
        units.sort_by_key(|u| u.offset);
        for w in units.windows(2) {
            assert!(
                w[0].offset + w[0].bytes <= w[1].offset,
                "{name}: overlap {w:?}"
            );
        }
        let useful: usize = units.iter().map(|u| u.bytes).sum();
        assert_eq!(useful as u32, layout.page_useful_bytes(page));
        assert!(units.iter().all(|u| placed.contains(&(page, *u))));
    }
}

#[test]
fn filled_pages_hold_the_units_texels() {
    for fx in fixtures::all() {
        let pages = PtexPages::new(Arc::new(fx.file)).unwrap();
        let mut buf = vec![0u8; PAGE_BYTES];
        for page in 0..pages.layout().num_pages() {
            buf.fill(0);
            pages.fill_page(page, &mut buf).unwrap();
            for u in pages.layout().units_on_page(page) {
                let want = pages.read_unit(u.face, u.res, u.tile).unwrap();
                assert_eq!(
                    &buf[u.offset..u.offset + u.bytes],
                    &want[..],
                    "{}: {u:?}",
                    fx.name
                );
            }
        }
    }
}

#[test]
fn a_page_has_a_bitmap_unless_it_holds_one_unit_of_a_whole_page() {
    use crate::sources::ptex::pack::has_bitmap;
    use crate::sources::ptex::PtexFile;
    for fx in fixtures::all() {
        let pages = PtexPages::new(Arc::new(PtexFile::open(&fx.path).unwrap())).unwrap();
        let layout = pages.layout();
        for page in 0..layout.num_pages() {
            let units = layout.units_on_page(page);
            let whole = units.len() == 1 && units[0].bytes == PAGE_BYTES;
            assert_eq!(
                layout.page_has_bitmap(page),
                !whole,
                "{} page {page}",
                fx.name
            );
            assert!(units.iter().all(|u| has_bitmap(u.bytes as u32) != whole));
        }
        assert!(!layout.page_has_bitmap(layout.num_pages()));
    }
}

#[test]
fn triangles_share_the_group_of_each_square_resolution() {
    let faces = [
        face(Res::new(4, 4), false),
        face(Res::new(3, 3), false),
        face(Res::new(5, 5), false),
    ];
    let layout = PackLayout::new(&faces, MeshType::Triangle, 4, HashMap::new()).unwrap();
    assert_consecutive(&layout, &[0, 1, 2], Res::new(2, 2));
    assert_consecutive(&layout, &[0, 2], Res::new(3, 3));
    assert!(layout.locate(0, Res::new(3, 2)).is_none());
    check_every_unit("triangles", &layout, &faces, MeshType::Triangle);
}

/// The quad layout of `faces` (1 byte a texel), checked to index them in under 16 bytes a
/// face.
fn layout_with_a_small_index(faces: &[FaceInfo]) -> PackLayout {
    let layout = PackLayout::new(faces, MeshType::Quad, 1, HashMap::new()).unwrap();
    assert!(
        layout.index_bytes() < 16 * faces.len(),
        "{} bytes of index for {} faces",
        layout.index_bytes(),
        faces.len()
    );
    layout
}

#[test]
fn large_faces_at_both_ends_of_many_small_ones_cost_checkpoints_per_unit() {
    // Every reduced resolution of the two 1024×1024 faces spans all 5,000 faces between
    // them, with two units: a checkpoint every 8 faces of that span, for each of 120
    // reductions, took 120 bytes a face; the sparse form keeps two per reduction.
    let n = 5_000;
    let mut faces = vec![face(Res::new(10, 10), false)];
    faces.extend(std::iter::repeat_n(face(Res::new(1, 1), false), n));
    faces.push(face(Res::new(10, 10), false));
    let layout = layout_with_a_small_index(&faces);
    let last = faces.len() as u32 - 1;
    for res in [
        Res::new(10, 10),
        Res::new(9, 3),
        Res::new(0, 5),
        Res::new(1, 1),
    ] {
        let (a, b) = (
            layout.locate(0, res).unwrap(),
            layout.locate(last, res).unwrap(),
        );
        assert!(b.page > a.page || b.offset > a.offset, "{res:?}");
    }
    check_every_unit("both ends", &layout, &faces, MeshType::Quad);
}

#[test]
fn a_resolution_few_faces_have_costs_few_checkpoints() {
    // 20,000 small faces and one large one: the large one's reduced resolutions have one
    // face each, and one checkpoint each (a checkpoint every 8 faces of the whole file,
    // for each of its 120 reductions, took 2.4 MB).
    let n = 20_000;
    let mut faces = vec![face(Res::new(1, 1), false); n];
    faces.push(face(Res::new(10, 10), false));
    faces.push(face(Res::new(1, 1), false));
    let layout = layout_with_a_small_index(&faces);
    // The walks from the checkpoints still find every unit the pages list.
    for (f, res) in [
        (n as u32, Res::new(10, 10)),
        (n as u32, Res::new(3, 9)),
        (n as u32, Res::new(1, 0)),
        (n as u32 - 1, Res::new(1, 0)),
        (n as u32 + 1, Res::new(0, 1)),
        (n as u32 + 1, Res::new(1, 1)),
        (7, Res::new(1, 0)),
    ] {
        let loc = locate(&layout, f, res);
        let unit = PlacedUnit {
            face: f,
            res,
            tile: 0,
            offset: loc.offset as usize,
            bytes: loc.bytes as usize,
        };
        assert!(layout.units_on_page(loc.page).contains(&unit), "{unit:?}");
    }
    assert_consecutive(
        &layout,
        &[n as u32 - 1, n as u32, n as u32 + 1],
        Res::new(1, 0),
    );
}

#[test]
fn resolutions_no_face_has_are_not_found() {
    let faces = [face(Res::new(3, 2), false), face(Res::new(30, 0), false)];
    let layout = PackLayout::new(&faces, MeshType::Quad, 2, HashMap::new()).unwrap();
    for res in [
        Res::new(-128, 1),
        Res::new(1, -128),
        Res::new(127, 127),
        Res::new(4, 2),
        Res::new(3, 3),
        Res::new(31, 0),
        Res::new(0, 0),
    ] {
        assert!(layout.locate(0, res).is_none(), "{res:?}");
        assert!(layout.locate(1, res).is_none(), "{res:?}");
    }
    assert!(layout.locate(2, Res::new(1, 1)).is_none());
    assert!(layout.locate(0, Res::new(2, 1)).is_some());
    assert!(layout.locate(1, Res::new(29, 0)).is_some());
}
