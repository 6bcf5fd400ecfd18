//! The packing of units into pages: every unit of every fixture is found where the page
//! walk says, no two units overlap, the per-page useful bytes add up, and tiles of large
//! units are at most a page.

use super::fixtures;
use crate::sources::ptex::pack::{PlacedUnit, PAGE_BYTES};
use crate::sources::ptex::{MeshType, PtexPages, Res};
use std::collections::HashSet;
use std::sync::Arc;

#[test]
fn every_unit_has_one_place_and_units_never_overlap() {
    for fx in fixtures::all() {
        let file = Arc::new(fx.file);
        let pages = PtexPages::new(file.clone());
        let layout = pages.layout();
        let mut placed = HashSet::new();
        let mut total = 0u64;
        for (face, info) in file.faces().iter().enumerate() {
            let face = face as u32;
            for a in 0..=info.res.ulog2 {
                for b in 0..=info.res.vlog2 {
                    let res = Res::new(a, b);
                    let loc = layout.locate(face, res);
                    let has = !info.is_constant()
                        && res != Res::new(0, 0)
                        && (file.mesh_type() == MeshType::Quad
                            || info.res.ulog2 - a == info.res.vlog2 - b);
                    assert_eq!(loc.is_some(), has, "{}: face {face} at {res}", fx.name);
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
                            "{}: {unit:?} not listed on page {page}",
                            fx.name
                        );
                        placed.insert((page, unit));
                        total += u64::from(loc.bytes);
                    }
                }
            }
        }
        assert_eq!(total, layout.unit_bytes(), "{}", fx.name);
        for page in 0..layout.num_pages() {
            let mut units = layout.units_on_page(page);
            assert!(!units.is_empty(), "{}: page {page} is empty", fx.name);
            units.sort_by_key(|u| u.offset);
            for w in units.windows(2) {
                assert!(
                    w[0].offset + w[0].bytes <= w[1].offset,
                    "{}: overlap {w:?}",
                    fx.name
                );
            }
            let useful: usize = units.iter().map(|u| u.bytes).sum();
            assert_eq!(useful as u32, layout.page_useful_bytes(page));
            assert!(units.iter().all(|u| placed.contains(&(page, *u))));
        }
    }
}

#[test]
fn filled_pages_hold_the_units_texels() {
    for fx in fixtures::all() {
        let pages = PtexPages::new(Arc::new(fx.file));
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
        let pages = PtexPages::new(Arc::new(PtexFile::open(&fx.path).unwrap()));
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
