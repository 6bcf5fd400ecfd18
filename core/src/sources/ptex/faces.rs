//! Faces: resolution, adjacency and flags (format note §3), and the order of faces in the
//! reduced levels (rfaceids, §6).
//!
//! Edges are numbered counter-clockwise. Quads: 0 bottom (uv (0,0)→(1,0)), 1 right, 2 top,
//! 3 left. Triangles (vertices at uv (0,0), (1,0), (0,1)): 0 is v = 0, 1 the hypotenuse
//! u + v = 1, 2 is u = 0; edge 3 does not exist. Each edge records the neighbouring face
//! and which of *its* edges is shared, which gives the rotation between the two faces'
//! uv frames ([`Adjacent::rotation`]).

use super::error::{Fail, R};
use super::header::{i32_at, MeshType};

/// The largest `ulog2 + vlog2` of a face this reader accepts: 2^30 texels, the most the
/// reference library can address (it counts texels in an `int`).
pub const MAX_FACE_LOG2: i32 = 30;

/// A face resolution as two base-2 logarithms: `1 << ulog2` by `1 << vlog2` texels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Res {
    /// log2 of the width (u).
    pub ulog2: i8,
    /// log2 of the height (v).
    pub vlog2: i8,
}

impl Res {
    /// The resolution `1 << ulog2` by `1 << vlog2`.
    pub const fn new(ulog2: i8, vlog2: i8) -> Res {
        Res { ulog2, vlog2 }
    }

    /// Whether both logs are non-negative and together at most [`MAX_FACE_LOG2`]; every
    /// `Res` the reader hands out is.
    pub fn is_valid(self) -> bool {
        self.ulog2 >= 0
            && self.vlog2 >= 0
            && i32::from(self.ulog2) + i32::from(self.vlog2) <= MAX_FACE_LOG2
    }

    /// Width in texels (logs outside `0..=30` are clamped into it).
    pub fn u(self) -> usize {
        1usize << self.ulog2.clamp(0, 30)
    }

    /// Height in texels (logs outside `0..=30` are clamped into it).
    pub fn v(self) -> usize {
        1usize << self.vlog2.clamp(0, 30)
    }

    /// Texels in all: `u() * v()`.
    pub fn texels(self) -> usize {
        self.u() * self.v()
    }

    /// Both logs reduced by `k` (may become negative: check [`Res::is_valid`]).
    pub fn reduced(self, k: i8) -> Res {
        Res::new(self.ulog2.saturating_sub(k), self.vlog2.saturating_sub(k))
    }
}

impl std::fmt::Display for Res {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_valid() {
            write!(f, "{}x{}", self.u(), self.v())
        } else {
            write!(f, "(log2 {}, {})", self.ulog2, self.vlog2)
        }
    }
}

/// The neighbour across one edge of a face.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Adjacent {
    /// The neighbouring face.
    pub face: u32,
    /// The neighbour's edge that is shared (its own edge numbering).
    pub edge: u8,
}

impl Adjacent {
    /// Quarter turns (counter-clockwise, 0..=3) from this face's uv frame to the
    /// neighbour's, for a quad crossed at `from_edge`: `(from_edge - edge + 2) mod 4`, the
    /// rule the reference filters use.
    pub fn rotation(self, from_edge: u8) -> u8 {
        ((from_edge & 3) + 6 - (self.edge & 3)) % 4
    }
}

/// What the file records about one face.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaceInfo {
    /// Full resolution.
    pub res: Res,
    /// Two bits per edge: the neighbour's edge id shared with edge `e` at bits `2e..2e+1`.
    pub adjedges: u8,
    /// Bits of [`face_flags`].
    pub flags: u8,
    /// The neighbour across each edge, or -1 at a mesh boundary (and for edge 3 of a
    /// triangle).
    pub adjfaces: [i32; 4],
}

/// The bits of [`FaceInfo::flags`] (module constants, not associated ones: cbindgen, which
/// generates the C header from the crates that depend on this one, would export associated
/// constants of a non-`repr(C)` type into `demandtex.h`).
pub mod face_flags {
    /// Every texel has the face's constant value.
    pub const CONSTANT: u8 = 1;
    /// The face was replaced by an edit record (set by the reader, never stored).
    pub const HAS_EDITS: u8 = 2;
    /// A constant face whose whole neighbourhood has the same value.
    pub const NB_CONSTANT: u8 = 4;
    /// One of the quad subfaces of an n-gon (n ≠ 4).
    pub const SUBFACE: u8 = 8;
}

impl FaceInfo {
    /// Parse a 20-byte record.
    pub(crate) fn parse(b: &[u8]) -> FaceInfo {
        FaceInfo {
            res: Res::new(b[0] as i8, b[1] as i8),
            adjedges: b[2],
            flags: b[3],
            adjfaces: [i32_at(b, 4), i32_at(b, 8), i32_at(b, 12), i32_at(b, 16)],
        }
    }

    /// Whether the face is constant.
    pub fn is_constant(&self) -> bool {
        self.flags & face_flags::CONSTANT != 0
    }

    /// Whether an edit record replaced the face.
    pub fn has_edits(&self) -> bool {
        self.flags & face_flags::HAS_EDITS != 0
    }

    /// Whether the face and all faces around it are constant with one value.
    pub fn is_neighborhood_constant(&self) -> bool {
        self.flags & face_flags::NB_CONSTANT != 0
    }

    /// Whether the face is a subface of an n-gon.
    pub fn is_subface(&self) -> bool {
        self.flags & face_flags::SUBFACE != 0
    }

    /// The neighbour's edge id shared with `edge` (0..=3).
    pub fn adj_edge(&self, edge: u8) -> u8 {
        (self.adjedges >> (2 * (edge & 3))) & 3
    }

    /// The neighbour across `edge` (0..=3), or `None` at a boundary.
    pub fn adjacent(&self, edge: u8) -> Option<Adjacent> {
        let face = self.adjfaces[usize::from(edge & 3)];
        (face >= 0).then(|| Adjacent {
            face: face as u32,
            edge: self.adj_edge(edge),
        })
    }

    /// Check the record for a file of `nfaces` faces on a `mesh`.
    pub(crate) fn check(&self, mesh: MeshType, nfaces: u32) -> R<()> {
        if !self.res.is_valid() {
            return Err(Fail::corrupt(format!(
                "resolution log2 ({}, {}) is negative or above 2^{MAX_FACE_LOG2} texels",
                self.res.ulog2, self.res.vlog2
            )));
        }
        if mesh == MeshType::Triangle && self.res.ulog2 != self.res.vlog2 {
            return Err(Fail::corrupt(format!(
                "triangle face of resolution {} is not square",
                self.res
            )));
        }
        for (edge, &f) in self.adjfaces.iter().enumerate() {
            if f < -1 || (f >= 0 && f as u32 >= nfaces) {
                return Err(Fail::corrupt(format!(
                    "neighbour across edge {edge} is face {f}, not -1 or one of the {nfaces} faces"
                )));
            }
        }
        Ok(())
    }
}

/// The position of each face in the reduced levels: face ids stably sorted by decreasing
/// `min(ulog2, vlog2)`, constant faces counting as 1 (format note §6). Computed from the
/// face info as stored, before edits.
pub(crate) fn rfaceids(faces: &[FaceInfo]) -> Vec<u32> {
    let key = |f: &FaceInfo| {
        if f.is_constant() {
            1
        } else {
            f.res.ulog2.min(f.res.vlog2)
        }
    };
    let mut order: Vec<u32> = (0..faces.len() as u32).collect();
    // `sort_by_key` is stable, like the reference's std::stable_sort.
    order.sort_by_key(|&f| std::cmp::Reverse(key(&faces[f as usize])));
    let mut rfaceids = vec![0u32; faces.len()];
    for (r, &f) in order.iter().enumerate() {
        rfaceids[f as usize] = r as u32;
    }
    rfaceids
}
