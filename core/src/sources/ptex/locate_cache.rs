//! A small per-thread memo of where units lie ([`PackLayout::locate`]): a unit is found by
//! placing it after its checkpoint (and, in a reduced level, after up to [`CHECKPOINT`] − 1
//! faces before it), and the filters of neighbouring lookups ask for the same units again
//! and again.
//!
//! Direct-mapped, keyed by the layout's process-unique id (`decode_cache::unique_id`,
//! never an address, which a dropped layout's successor may reuse), the face and the
//! resolution.
//!
//! [`PackLayout::locate`]: super::pack::PackLayout::locate
//! [`CHECKPOINT`]: super::pack::CHECKPOINT

use super::faces::Res;
use super::pack::UnitLoc;
use std::cell::RefCell;

/// Entries per thread (a power of two).
const ENTRIES: usize = 512;

type Entry = Option<(u64, u32, Res, UnitLoc)>;

thread_local! {
    static LOCATED: RefCell<[Entry; ENTRIES]> = const { RefCell::new([None; ENTRIES]) };
}

#[inline]
fn slot(layout: u64, face: u32, res: Res) -> usize {
    let key = (layout as u32)
        .wrapping_mul(0x85eb_ca6b)
        .wrapping_add(face)
        .wrapping_mul(0x9e37_79b1)
        ^ (u32::from(res.ulog2 as u8) << 8 | u32::from(res.vlog2 as u8));
    // The top bits of the product: ENTRIES is a power of two.
    (key.wrapping_mul(0x9e37_79b1) >> (32 - ENTRIES.trailing_zeros())) as usize
}

/// The remembered location of `face` at `res` in layout `layout`, or `locate()` (then
/// remembered).
#[inline]
pub(crate) fn located(
    layout: u64,
    face: u32,
    res: Res,
    locate: impl FnOnce() -> Option<UnitLoc>,
) -> Option<UnitLoc> {
    let at = slot(layout, face, res);
    let hit = LOCATED
        .try_with(|m| match m.try_borrow().ok()?[at] {
            Some((l, f, r, loc)) if (l, f, r) == (layout, face, res) => Some(loc),
            _ => None,
        })
        .ok()
        .flatten();
    if hit.is_some() {
        return hit;
    }
    let loc = locate()?;
    let _ = LOCATED.try_with(|m| {
        if let Ok(mut m) = m.try_borrow_mut() {
            m[at] = Some((layout, face, res, loc));
        }
    });
    Some(loc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::ptex::decode_cache::unique_id;

    fn loc(page: u32) -> UnitLoc {
        UnitLoc {
            page,
            offset: 0,
            res: Res::new(1, 1),
            tiling: None,
            bytes: 12,
        }
    }

    #[test]
    fn remembers_per_layout_face_and_resolution() {
        let (a, b) = (unique_id(), unique_id());
        assert_ne!(a, b);
        let r = Res::new(1, 1);
        assert_eq!(located(a, 7, r, || Some(loc(3))), Some(loc(3)));
        // Remembered: the walk is not asked again.
        assert_eq!(located(a, 7, r, || panic!("walked again")), Some(loc(3)));
        // Another layout, face or resolution is its own key.
        assert_eq!(located(b, 7, r, || Some(loc(4))), Some(loc(4)));
        assert_eq!(located(a, 8, r, || Some(loc(5))), Some(loc(5)));
        assert_eq!(located(a, 7, Res::new(2, 1), || None), None);
        // A unit that has no location is not remembered.
        assert_eq!(located(a, 9, r, || None), None);
        assert_eq!(located(a, 9, r, || Some(loc(6))), Some(loc(6)));
    }
}
