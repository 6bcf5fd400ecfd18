//! The "neighbourhood constant" flag (format note §3), computed at close as the reference
//! writer's `flagConstantNeighorhoods` does: a constant face whose every vertex is
//! surrounded by constant faces of byte-identical value (a mesh boundary counts only when
//! both border modes are clamp).

use super::super::faces::{face_flags, FaceInfo};

/// What the walk needs to know of the file.
pub(crate) struct Mesh<'a> {
    pub faces: &'a mut [FaceInfo],
    pub const_data: &'a [u8],
    pub pixel_size: usize,
    pub triangles: bool,
    pub clamp_borders: bool,
}

/// Set [`face_flags::NB_CONSTANT`] on every qualifying constant face.
pub(crate) fn flag_constant_neighborhoods(m: Mesh<'_>) {
    let ps = m.pixel_size;
    let nedges: i32 = if m.triangles { 3 } else { 4 };
    let n = m.faces.len();
    let adj = |faces: &[FaceInfo], f: usize, e: i32| -> (i32, i32) {
        let info = &faces[f];
        (
            info.adjfaces[e as usize & 3],
            i32::from(info.adj_edge(e as u8)),
        )
    };
    for face in 0..n {
        let f = m.faces[face];
        if !f.is_constant() {
            continue;
        }
        let value = &m.const_data[face * ps..(face + 1) * ps];
        let same = |faces: &[FaceInfo], other: usize| {
            faces[other].is_constant() && &m.const_data[other * ps..(other + 1) * ps] == value
        };
        let mut is_const = true;
        let mut eid = 0;
        while is_const && eid < nedges {
            let mut prev_was_subface = f.is_subface();
            let mut prev = face as i32;
            // Around the vertex clockwise.
            let (mut afid, mut aeid) = adj(m.faces, face, eid);
            let mut count = 0;
            const MAX_COUNT: i32 = 10;
            while afid != face as i32 && afid >= 0 && {
                count += 1;
                count < MAX_COUNT
            } {
                let a = afid as usize;
                if !same(m.faces, a) {
                    is_const = false;
                    break;
                }
                let af = m.faces[a];
                let is_subface = af.is_subface();
                let is_t = !m.triangles
                    && prev_was_subface
                    && !is_subface
                    && af.adjfaces[aeid as usize & 3] == prev;
                if is_t {
                    break;
                }
                prev_was_subface = is_subface;
                prev = afid;
                aeid = (aeid + 1) % nedges;
                (afid, aeid) = adj(m.faces, a, aeid);
            }
            if is_const && afid < 0 {
                if !m.clamp_borders {
                    is_const = false;
                }
                // And counter-clockwise from the boundary.
                if is_const {
                    aeid = (aeid - 1 + nedges) % nedges;
                    (afid, aeid) = adj(m.faces, face, aeid);
                    count = 0;
                    while afid != face as i32 && afid >= 0 && {
                        count += 1;
                        count < MAX_COUNT
                    } {
                        let a = afid as usize;
                        if !same(m.faces, a) {
                            is_const = false;
                            break;
                        }
                        let af = m.faces[a];
                        aeid = (aeid - 1 + nedges) % nedges;
                        (afid, aeid) = adj(m.faces, a, aeid);
                        let is_subface = af.is_subface();
                        if is_subface && !prev_was_subface {
                            aeid = (aeid + 3) % 4;
                            afid = af.adjfaces[aeid as usize & 3];
                            aeid = (i32::from(af.adj_edge(aeid as u8)) + 3) % 4;
                        }
                        prev_was_subface = is_subface;
                    }
                }
            }
            eid += 1;
        }
        if is_const {
            m.faces[face].flags |= face_flags::NB_CONSTANT;
        }
    }
}
