//! How the units of a Ptex file — a face at one resolution, or one tile of a large one —
//! are packed into 64 KiB pages, the engine's unit of residency (`docs/PTEX.md`).
//!
//! Units are grouped by the resolution a lookup reads, which is absolute: a filter's
//! resolution comes from its footprint's width in face coordinates, the same for
//! neighbouring faces whatever their sizes. So every face's full-resolution unit is in one
//! group (the point filter's: a point lookup reads full resolution), and every reduced unit
//! is in the group of its resolution `(ulog2, vlog2)`, next to the units of that resolution
//! of the neighbouring faces large enough to have it ([`GroupKey`]). Each group is a
//! stream of its faces' units in face-id order (face ids follow the mesh); the groups
//! follow each other in one stream, full resolution first, then the reduced resolutions
//! in decreasing `(ulog2, vlog2)` order. A unit of at most one page is placed at the
//! current offset, or at the start of the next page if it does not fit (units never
//! straddle pages); a larger one is cut into tiles of at most one page, one tile per page.
//! Constant faces and 1×1 resolutions have no unit: the face's constant colour stands for
//! them and is always resident.
//!
//! A page holding several units keeps a validity bitmap in its last [`VALID_BYTES`]
//! bytes: one bit per [`CHUNK_BYTES`] of the page, the bit of the chunk a unit starts in
//! set once the unit holds its texels. Units on such a page start at multiples of
//! [`CHUNK_BYTES`] (so no two share a bit) and fill at most [`UNIT_CAPACITY`] bytes of it;
//! a unit of exactly one page has a page of its own and no bitmap. A blocking cache fills
//! such pages unit by unit as lookups need them (`docs/PTEX.md`).
//!
//! Locating a unit walks from a checkpoint kept every [`CHECKPOINT`] faces of each group
//! (every face of the full-resolution group), or, where a group's units are few among
//! many faces, every [`CHECKPOINT`] units (`super::checkpoints`), so the index is in
//! proportion to the units; filling a page walks its units from the first one starting
//! on it, recorded per page.

use super::checkpoints::{CheckpointBuilder, Checkpoints};
use super::faces::{FaceInfo, Res};
use super::header::MeshType;
use super::pages::MAX_PAGES;
use std::collections::HashMap;

pub use super::units::{
    has_bitmap, page_capacity, unit_stride, unit_tiling, PlacedUnit, UnitLoc, UnitTiling,
    CHUNK_BYTES, PAGE_BYTES, UNIT_CAPACITY, VALID_BYTES,
};

/// Faces between two checkpoints of a group.
pub const CHECKPOINT: usize = 8;

/// Faces between two checkpoints of the full-resolution group: every face, so the point
/// filter's units are found without a walk (8 bytes a face).
pub const CHECKPOINT_FULL_RES: usize = 1;

/// A group of units (module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupKey {
    /// Every face's unit at its full resolution.
    Full,
    /// The reduced units of this resolution: of every face larger in one direction at
    /// least, and not smaller in the other (triangles: reduced alike in both).
    Reduced(Res),
}

impl GroupKey {
    /// The group of a face of full resolution `full`'s unit at `res` (whether the face
    /// has one there is [`GroupKey::unit_res`]'s answer).
    pub fn of(full: Res, res: Res) -> GroupKey {
        if res == full {
            GroupKey::Full
        } else {
            GroupKey::Reduced(res)
        }
    }

    /// The resolution of the unit a non-constant face of full resolution `full` on a
    /// `mesh` has in this group, if it has one: the one rule of which units exist and
    /// where they go.
    pub fn unit_res(self, full: Res, mesh: MeshType) -> Option<Res> {
        let res = match self {
            GroupKey::Full => full,
            GroupKey::Reduced(res) => {
                // In i16: `res` may be anything a caller asks for.
                let redu = i16::from(full.ulog2) - i16::from(res.ulog2);
                let redv = i16::from(full.vlog2) - i16::from(res.vlog2);
                let reduced = redu >= 0 && redv >= 0 && (redu, redv) != (0, 0);
                if !reduced || (mesh == MeshType::Triangle && redu != redv) {
                    return None;
                }
                res
            }
        };
        (res.ulog2 >= 0 && res.vlog2 >= 0 && res != Res::new(0, 0)).then_some(res)
    }

    /// Faces between two checkpoints of this group.
    fn checkpoint_stride(self) -> usize {
        match self {
            GroupKey::Full => CHECKPOINT_FULL_RES,
            GroupKey::Reduced(_) => CHECKPOINT,
        }
    }
}

/// Refuse units that cannot be packed, from the faces' resolutions alone (`sizes`: each
/// full resolution of a non-constant face and how many faces have it; `keys`: the groups
/// packed), before anything is allocated per page: texels larger than a page, or units
/// whose bytes alone fill more than [`MAX_PAGES`] pages (a lower bound of the pages they
/// take; packing stops at the last page for the rest).
fn check_unit_bytes(
    nfaces: usize,
    sizes: &[(Res, u64)],
    keys: &[GroupKey],
    mesh: MeshType,
    pixel_size: usize,
) -> Result<(), String> {
    let mut bytes: u128 = 0;
    for &key in keys {
        for &(full, n) in sizes {
            if let Some(res) = key.unit_res(full, mesh) {
                bytes += u128::from(n) * res.texels() as u128 * pixel_size as u128;
            }
        }
    }
    if bytes > 0 && pixel_size > PAGE_BYTES {
        return Err(format!(
            "texels of {pixel_size} bytes are larger than a page of {PAGE_BYTES} bytes: \
             the units of its {nfaces} faces cannot be packed"
        ));
    }
    let pages = bytes.div_ceil(PAGE_BYTES as u128);
    if pages > u128::from(MAX_PAGES) {
        return Err(too_many_pages(format_args!("at least {pages}"), nfaces));
    }
    Ok(())
}

/// The faces marked in `marked` (one bit per face), in increasing order, clearing the
/// marks as they are read (a word's bits at once; words without a mark cost one test).
fn take_marked(marked: &mut [u64]) -> impl Iterator<Item = u32> + '_ {
    marked.iter_mut().enumerate().flat_map(|(w, word)| {
        let mut bits = std::mem::take(word);
        std::iter::from_fn(move || {
            (bits != 0).then(|| {
                let b = bits.trailing_zeros();
                bits &= bits - 1;
                (w * 64) as u32 + b
            })
        })
    })
}

/// Place a unit of `res` (or its tiles, one after the other) of `bytes` (a tile's, if
/// `tiling`) at `cur`, advancing it; where it went.
fn place_sized(cur: &mut Cursor, res: Res, tiling: Option<UnitTiling>, bytes: u32) -> UnitLoc {
    let capacity = page_capacity(bytes);
    cur.offset = cur.offset.next_multiple_of(CHUNK_BYTES as u32);
    if cur.offset + bytes > capacity {
        cur.page += 1;
        cur.offset = 0;
    }
    let loc = UnitLoc {
        page: cur.page,
        offset: cur.offset,
        res,
        tiling,
        bytes,
    };
    let (page, offset) = loc.tile(tiling.map_or(0, |t| t.ntiles - 1));
    cur.page = page;
    cur.offset = offset + bytes;
    if cur.offset + bytes.min(1) > capacity {
        cur.page += 1;
        cur.offset = 0;
    }
    loc
}

/// The error of units that need more than [`MAX_PAGES`] pages.
fn too_many_pages(pages: std::fmt::Arguments, faces: impl std::fmt::Display) -> String {
    format!(
        "the units of its {faces} faces need {pages} pages of {PAGE_BYTES} bytes, more \
         than the {MAX_PAGES} a texture can hold"
    )
}

/// The tiling and bytes of the last unit placed whose file does not tile it: they follow
/// from its resolution alone ([`PackLayout::unit_bytes_memo`]).
#[derive(Default)]
struct SizeMemo(Option<(Res, Option<UnitTiling>, u32)>);

/// A position in a group's stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Cursor {
    pub page: u32,
    pub offset: u32,
}

struct Group {
    key: GroupKey,
    /// Where walks to its units start (`GroupKey::checkpoint_stride` apart).
    checkpoints: Checkpoints,
}

/// The packing of one file's units into pages (module documentation).
pub struct PackLayout {
    faces: Vec<FaceInfo>,
    mesh: MeshType,
    pixel_size: usize,
    /// The largest log2 of a face side.
    max_log: usize,
    /// The full-resolution group's index.
    full: Option<u32>,
    /// Group index per reduced resolution `(ulog2, vlog2)` at
    /// `ulog2 * (max_log + 1) + vlog2`.
    group_of: Vec<Option<u32>>,
    groups: Vec<Group>,
    /// Per page: group, face and tile of the first unit starting on it.
    page_first: Vec<(u32, u32, u32)>,
    /// Per page: bytes of unit data on it.
    useful: Vec<u32>,
    /// Where the next unit goes.
    cursor: Cursor,
    /// The file's own tiling of stored tiled levels (tiles of at most a page).
    file_tiles: HashMap<(u32, Res), UnitTiling>,
    /// One bit per face: whether `file_tiles` has an entry for it (most faces have none,
    /// and `locate` asks for the tiling of every face it walks past).
    has_file_tiles: Vec<u64>,
    /// This layout's key in the per-thread memo of unit locations (`locate_cache`).
    id: u64,
}

impl std::fmt::Debug for PackLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackLayout")
            .field("pages", &self.page_first.len())
            .field("groups", &self.groups.len())
            .field("unit_bytes", &self.unit_bytes())
            .field("index_bytes", &self.index_bytes())
            .finish_non_exhaustive()
    }
}

impl PackLayout {
    /// Pack the units of `faces` (texels of `pixel_size` bytes on a `mesh`); `file_tiles`
    /// gives the tiling of the units the file stores tiled (with tiles of at most a page),
    /// which then are its tiles; other units larger than a page are cut by [`unit_tiling`].
    ///
    /// An error, in words, when the units need more than [`MAX_PAGES`] pages (what a
    /// texture can hold) or a texel is larger than a page: the page count is bounded from
    /// the faces' resolutions before anything is allocated per page, and packing stops at
    /// the first unit past the last page, so a small hostile file declaring a million
    /// faces of 2^15×2^15 texels is refused at once.
    pub fn new(
        faces: &[FaceInfo],
        mesh: MeshType,
        pixel_size: usize,
        file_tiles: HashMap<(u32, Res), UnitTiling>,
    ) -> Result<PackLayout, String> {
        let max_log = faces
            .iter()
            .map(|f| f.res.ulog2.max(f.res.vlog2).max(0) as usize)
            .max()
            .unwrap_or(0);
        // The non-constant faces by full resolution (in face order within each): a reduced
        // group is packed only if one of these resolutions has a unit in it, and visits
        // only their faces.
        let mut by_res: HashMap<Res, Vec<u32>> = HashMap::new();
        for (i, f) in faces.iter().enumerate().filter(|(_, f)| !f.is_constant()) {
            by_res.entry(f.res).or_default().push(i as u32);
        }
        let mut by_res: Vec<(Res, Vec<u32>)> = by_res.into_iter().collect();
        by_res.sort_unstable_by_key(|(r, _)| (r.ulog2, r.vlog2));
        let sizes: Vec<(Res, u64)> = by_res.iter().map(|(r, f)| (*r, f.len() as u64)).collect();
        let mut keys = vec![GroupKey::Full];
        for ulog2 in (0..=max_log as i8).rev() {
            for vlog2 in (0..=max_log as i8).rev() {
                let key = GroupKey::Reduced(Res::new(ulog2, vlog2));
                if sizes
                    .iter()
                    .any(|&(full, _)| key.unit_res(full, mesh).is_some())
                {
                    keys.push(key);
                }
            }
        }
        check_unit_bytes(faces.len(), &sizes, &keys, mesh, pixel_size)?;
        let mut has_file_tiles = vec![0u64; faces.len().div_ceil(64)];
        for &(face, _) in file_tiles.keys() {
            if let Some(word) = has_file_tiles.get_mut(face as usize / 64) {
                *word |= 1 << (face % 64);
            }
        }
        let mut layout = PackLayout {
            faces: faces.to_vec(),
            mesh,
            pixel_size,
            max_log,
            full: None,
            group_of: vec![None; (max_log + 1) * (max_log + 1)],
            groups: Vec::new(),
            page_first: Vec::new(),
            useful: Vec::new(),
            cursor: Cursor::default(),
            file_tiles,
            has_file_tiles,
            id: super::decode_cache::unique_id(),
        };
        // One bit per face, for picking a reduced group's faces out in face order.
        let mut marked = vec![0u64; faces.len().div_ceil(64)];
        for key in keys {
            // The faces with a unit in the group, in order: every face for full
            // resolution; for a reduced one, only the faces of the resolutions above it,
            // marked in `marked` and read back in face order (no sort).
            match key {
                GroupKey::Full => layout.add_group(key, 0..faces.len() as u32)?,
                GroupKey::Reduced(_) => {
                    let classes = by_res
                        .iter()
                        .filter(|(full, _)| key.unit_res(*full, mesh).is_some());
                    for (_, members) in classes {
                        for &f in members {
                            marked[f as usize / 64] |= 1 << (f % 64);
                        }
                    }
                    layout.add_group(key, take_marked(&mut marked))?;
                }
            }
        }
        Ok(layout)
    }

    /// Pack group `key`'s units after the units packed so far: those of `members` (faces
    /// in increasing order, every face with a unit in the group among them); an error if
    /// one of them lies past the last of [`MAX_PAGES`] pages (nothing is recorded for it).
    fn add_group(
        &mut self,
        key: GroupKey,
        members: impl IntoIterator<Item = u32>,
    ) -> Result<(), String> {
        let group = self.groups.len() as u32;
        let mut checkpoints = CheckpointBuilder::new(key.checkpoint_stride());
        let (mut last, mut next) = (0, 0);
        let mut sizes = SizeMemo::default();
        for face in members {
            let Some(res) = self.unit_res(face, key) else {
                continue;
            };
            // Faces `next..face` have no unit here: their checkpoints in one step.
            checkpoints.skip(next, face, self.cursor);
            checkpoints.face(face, self.cursor, true);
            (last, next) = (face, face + 1);
            let mut cur = self.cursor;
            let loc = self.place(&mut sizes, &mut cur, face, res);
            self.cursor = cur;
            let ntiles = loc.tiling.map_or(1, |t| t.ntiles);
            let (last_page, _) = loc.tile(ntiles - 1);
            if last_page >= MAX_PAGES {
                let pages = u64::from(last_page) + 1;
                return Err(too_many_pages(
                    format_args!("at least {pages}"),
                    self.faces.len(),
                ));
            }
            for tile in 0..ntiles {
                let (page, offset) = loc.tile(tile);
                if offset == 0 {
                    debug_assert_eq!(page as usize, self.page_first.len());
                    self.page_first.push((group, face, tile as u32));
                    self.useful.push(0);
                }
                if let Some(u) = self.useful.last_mut() {
                    *u += loc.bytes;
                }
            }
        }
        let Some(checkpoints) = checkpoints.finish(last) else {
            return Ok(());
        };
        match key {
            GroupKey::Full => self.full = Some(group),
            GroupKey::Reduced(res) => {
                if let Some(at) = self.reduced_index(res) {
                    self.group_of[at] = Some(group);
                }
            }
        }
        self.groups.push(Group { key, checkpoints });
        Ok(())
    }

    /// Where group `res`'s index is in `group_of`, if `res` is within the largest face.
    fn reduced_index(&self, res: Res) -> Option<usize> {
        let (u, v) = (
            usize::try_from(res.ulog2).ok()?,
            usize::try_from(res.vlog2).ok()?,
        );
        (u <= self.max_log && v <= self.max_log).then_some(u * (self.max_log + 1) + v)
    }

    /// The index of group `key`, if it has units.
    fn group_index(&self, key: GroupKey) -> Option<u32> {
        match key {
            GroupKey::Full => self.full,
            GroupKey::Reduced(res) => self.group_of[self.reduced_index(res)?],
        }
    }

    /// The resolution of `face`'s unit in group `key`, if it has one.
    fn unit_res(&self, face: u32, key: GroupKey) -> Option<Res> {
        let f = self.faces.get(face as usize)?;
        if f.is_constant() {
            return None;
        }
        key.unit_res(f.res, self.mesh)
    }

    /// Place `face`'s unit of `res` (or its tiles, one after the other) at `cur`, advancing
    /// it, its size taken through `sizes` ([`PackLayout::unit_bytes_memo`]); where it went.
    fn place(&self, sizes: &mut SizeMemo, cur: &mut Cursor, face: u32, res: Res) -> UnitLoc {
        let (tiling, bytes) = self.unit_bytes_memo(sizes, face, res);
        place_sized(cur, res, tiling, bytes)
    }

    /// Whether the file stores `face` tiled at some level (`file_tiles` may hold its
    /// tiling).
    fn file_tiled(&self, face: u32) -> bool {
        let word = self.has_file_tiles.get(face as usize / 64).copied();
        word.unwrap_or(0) & (1 << (face % 64)) != 0
    }

    /// How the unit of `face` at `res` is tiled, and the bytes of the unit (or of one tile).
    fn unit_bytes_of(&self, face: u32, res: Res) -> (Option<UnitTiling>, u32) {
        let tiling = self.tiling(face, res);
        let texels = tiling.map_or(res.texels(), |t| t.tile_res.texels());
        (tiling, (texels * self.pixel_size) as u32)
    }

    /// [`PackLayout::unit_bytes_of`], taken from `memo` when `face`'s file does not tile it
    /// and the last such unit had the same resolution (in a group, neighbouring faces mostly
    /// do: a reduced group's units all have its resolution).
    fn unit_bytes_memo(
        &self,
        memo: &mut SizeMemo,
        face: u32,
        res: Res,
    ) -> (Option<UnitTiling>, u32) {
        let by_file = self.file_tiled(face);
        match memo.0 {
            Some((r, tiling, bytes)) if r == res && !by_file => (tiling, bytes),
            _ => {
                let (tiling, bytes) = self.unit_bytes_of(face, res);
                if !by_file {
                    memo.0 = Some((res, tiling, bytes));
                }
                (tiling, bytes)
            }
        }
    }

    /// Whether `page` keeps a validity bitmap (it holds units of less than a page).
    pub fn page_has_bitmap(&self, page: u32) -> bool {
        let Some(&(group, face, _)) = self.page_first.get(page as usize) else {
            return false;
        };
        let key = self.groups[group as usize].key;
        self.unit_res(face, key)
            .is_some_and(|res| has_bitmap(self.unit_bytes_of(face, res).1))
    }

    /// Pages in all.
    pub fn num_pages(&self) -> u32 {
        self.page_first.len() as u32
    }

    /// Bytes of unit data in all pages.
    pub fn unit_bytes(&self) -> u64 {
        self.useful.iter().map(|&u| u64::from(u)).sum()
    }

    /// Bytes of the index that finds units: the groups' checkpoints and the per-page
    /// records (not the layout's copy of the face table, nor the file's own tilings).
    pub fn index_bytes(&self) -> usize {
        let checkpoints: usize = self.groups.iter().map(|g| g.checkpoints.bytes()).sum();
        checkpoints
            + std::mem::size_of_val(self.page_first.as_slice())
            + std::mem::size_of_val(self.useful.as_slice())
    }

    /// Bytes of unit data on `page`.
    pub fn page_useful_bytes(&self, page: u32) -> u32 {
        self.useful.get(page as usize).copied().unwrap_or(0)
    }

    /// Where the unit of `face` at `res` lies (`None` if it has none: a constant face, 1×1,
    /// or a resolution the face does not have). Remembered per thread (`locate_cache`):
    /// neighbouring lookups ask for the same units again and again.
    #[inline]
    pub fn locate(&self, face: u32, res: Res) -> Option<UnitLoc> {
        super::locate_cache::located(self.id, face, res, || self.walk_to(face, res))
    }

    /// [`PackLayout::locate`] worked out: from the unit's group, its checkpoint at or before
    /// `face`, and the units placed after it up to `face`.
    fn walk_to(&self, face: u32, res: Res) -> Option<UnitLoc> {
        let f = self.faces.get(face as usize)?;
        let key = GroupKey::of(f.res, res);
        self.unit_res(face, key)?;
        let group = &self.groups[self.group_index(key)? as usize];
        let (from, mut cur) = group.checkpoints.before(face)?;
        let mut sizes = SizeMemo::default();
        for prior in from..face {
            if let Some(r) = self.unit_res(prior, key) {
                self.place(&mut sizes, &mut cur, prior, r);
            }
        }
        Some(self.place(&mut sizes, &mut cur, face, res))
    }

    /// How the unit of `face` at `res` is cut into tiles (`None`: one piece).
    pub fn tiling(&self, face: u32, res: Res) -> Option<UnitTiling> {
        if !self.file_tiled(face) {
            return unit_tiling(res, self.pixel_size);
        }
        match self.file_tiles.get(&(face, res)) {
            Some(t) => Some(*t),
            None => unit_tiling(res, self.pixel_size),
        }
    }

    /// Every unit (or tile) on `page`, in order.
    pub fn units_on_page(&self, page: u32) -> Vec<PlacedUnit> {
        let Some(&(g0, face0, tile0)) = self.page_first.get(page as usize) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut cur = None;
        let mut sizes = SizeMemo::default();
        for g in g0 as usize..self.groups.len() {
            let key = self.groups[g].key;
            let from = if g == g0 as usize {
                face0
            } else {
                self.groups[g].checkpoints.first_face()
            };
            for face in from..self.faces.len() as u32 {
                let Some(res) = self.unit_res(face, key) else {
                    continue;
                };
                let loc = match cur.as_mut() {
                    None => {
                        // The first unit: placed again from its own place, the walk
                        // continues after it.
                        let Some(loc) = self.locate(face, res) else {
                            return out;
                        };
                        let mut next = Cursor {
                            page: loc.page,
                            offset: loc.offset,
                        };
                        let again = self.place(&mut sizes, &mut next, face, res);
                        cur = Some(next);
                        again
                    }
                    Some(c) => self.place(&mut sizes, c, face, res),
                };
                let ntiles = loc.tiling.map_or(1, |t| t.ntiles);
                let first_tile = if out.is_empty() && g == g0 as usize && face == face0 {
                    tile0 as usize
                } else {
                    0
                };
                for tile in first_tile..ntiles {
                    let (p, offset) = loc.tile(tile);
                    if p > page {
                        return out;
                    }
                    if p == page {
                        out.push(PlacedUnit {
                            face,
                            res,
                            tile,
                            offset: offset as usize,
                            bytes: loc.bytes as usize,
                        });
                    }
                }
            }
        }
        out
    }
}
