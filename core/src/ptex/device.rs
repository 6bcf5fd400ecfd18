//! What device code reads to sample a Ptex texture (`include/demandtex/device/ptex.cuh`,
//! docs/PTEX.md "On the device"): the face table, the location of every unit in the packed
//! pages, and the per-face constant colours. The pages themselves are the pages texture's
//! tiles, published like any texture's; these tables are built once per file on the host
//! ([`PtexDeviceTables::new`]) and copied to device memory by the CUDA backend, which fills
//! a [`PtexDeviceTexture`] with their device addresses.
//!
//! Units are found without any search: face `f` owns the entries
//! `units[face.units .. face.units + (ulog2 + 1) * (vlog2 + 1)]`, entry
//! `redu * (vlog2 + 1) + redv` being the face reduced by (`redu`, `redv`); the entry is
//! [`PackLayout::locate`]'s answer, so host and device agree on every byte.

use crate::sources::ptex::pack::PackLayout;
use crate::sources::ptex::{BorderMode, DataType, EdgeFilterMode, MeshType, PtexPages, Res};

/// `PtexDeviceUnit::page` of a resolution that has no unit (a constant face, 1×1, or a
/// reduction a triangle does not have): the face's constant colour stands for it.
pub const PTEX_NO_UNIT: u32 = 0xFFFF_FFFF;

/// One face as device code reads it (24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtexDeviceFace {
    /// Index of the face's first entry in the unit table.
    pub units: u32,
    /// log2 of the full resolution in u (0 for a constant face).
    pub ulog2: u8,
    /// log2 of the full resolution in v.
    pub vlog2: u8,
    /// The file's face flags (`DTEX_PTEX_FACE_*`).
    pub flags: u8,
    /// Two bits per edge: the neighbour's edge shared with edge `e` at bits `2e..2e+1`.
    pub adjedges: u8,
    /// The neighbour across each edge, -1 at a mesh boundary.
    pub adjfaces: [i32; 4],
}

/// Where one unit (a face at one resolution) lies in the packed pages (16 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PtexDeviceUnit {
    /// The page (index among the pages texture's pages, tile `(page % 1024, page / 1024)`)
    /// of the unit or of its first tile; `PTEX_NO_UNIT` if there is none.
    pub page: u32,
    /// Byte offset of the unit (or its first tile) in its page.
    pub offset: u32,
    /// Bytes of the unit, or of one of its tiles. Tiles follow each other in the stream
    /// as units do, never straddling a page.
    pub bytes: u32,
    /// Tiles across (u); 0 for an untiled unit.
    pub ntiles_u: u16,
    /// log2 of a tile's resolution in u (tiled units).
    pub tile_ulog2: u8,
    /// log2 of a tile's resolution in v (tiled units).
    pub tile_vlog2: u8,
}

/// A Ptex texture as device code reads it: the pages texture to sample, the tables'
/// device addresses and how texels are stored (56 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PtexDeviceTexture {
    /// The face table, `num_faces` entries (device memory).
    pub faces: *const PtexDeviceFace,
    /// The unit table (device memory).
    pub units: *const PtexDeviceUnit,
    /// The constant colour of every face, `num_faces * pixel_size` bytes (device memory).
    pub constants: *const u8,
    /// The texture id of the pages texture (its sampler page).
    pub pages_texture: u32,
    /// Faces.
    pub num_faces: u32,
    /// `DTEX_PTEX_MESH_*`.
    pub mesh_type: u32,
    /// `DTEX_TEXEL_*` of a channel.
    pub data_type: u32,
    /// Channels per texel.
    pub num_channels: u32,
    /// Bytes per texel.
    pub pixel_size: u32,
    /// Entries of the unit table.
    pub num_units: u32,
    /// `DTEX_PTEX_BORDER_*` in u (the separable filters fold or drop their kernel there).
    pub u_border: u8,
    /// `DTEX_PTEX_BORDER_*` in v.
    pub v_border: u8,
    /// `DTEX_PTEX_EDGE_FILTER_*` (tangent vectors rotate across edges).
    pub edge_filter: u8,
    /// Zero.
    pub reserved: u8,
}

/// The host copies of the tables of one Ptex file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PtexDeviceTables {
    /// One per face.
    pub faces: Vec<PtexDeviceFace>,
    /// Per face, one per reduction (module documentation).
    pub units: Vec<PtexDeviceUnit>,
    /// The per-face constant colours, `pixel_size` bytes each.
    pub constants: Vec<u8>,
    /// `DTEX_PTEX_MESH_*` (triangle 0, quad 1).
    pub mesh_type: u32,
    /// `DTEX_TEXEL_*` (u8 0, u16 1, half 2, float 3).
    pub data_type: u32,
    /// Channels per texel.
    pub num_channels: u32,
    /// Bytes per texel.
    pub pixel_size: u32,
    /// `DTEX_PTEX_BORDER_*` in u (clamp 0, black 1, periodic 2).
    pub u_border: u8,
    /// `DTEX_PTEX_BORDER_*` in v.
    pub v_border: u8,
    /// `DTEX_PTEX_EDGE_FILTER_*` (none 0, tangent vectors 1).
    pub edge_filter: u8,
}

/// The device entry of `face` at `res`, from the pack layout.
fn unit(layout: &PackLayout, face: u32, res: Res) -> PtexDeviceUnit {
    let Some(loc) = layout.locate(face, res) else {
        return PtexDeviceUnit {
            page: PTEX_NO_UNIT,
            ..Default::default()
        };
    };
    let (ntiles_u, tile_ulog2, tile_vlog2) = loc.tiling.map_or((0, 0, 0), |t| {
        (
            t.ntiles_u as u16,
            t.tile_res.ulog2 as u8,
            t.tile_res.vlog2 as u8,
        )
    });
    PtexDeviceUnit {
        page: loc.page,
        offset: loc.offset,
        bytes: loc.bytes,
        ntiles_u,
        tile_ulog2,
        tile_vlog2,
    }
}

/// `DTEX_PTEX_BORDER_*` of `mode`.
fn border(mode: BorderMode) -> u8 {
    match mode {
        BorderMode::Clamp => 0,
        BorderMode::Black => 1,
        BorderMode::Periodic => 2,
    }
}

impl PtexDeviceTables {
    /// The tables of the file behind `pages`: `O(Σ (ulog2 + 1)(vlog2 + 1))` entries.
    pub fn new(pages: &PtexPages) -> PtexDeviceTables {
        let file = pages.file();
        let layout = pages.layout();
        let ps = file.pixel_size();
        let mut tables = PtexDeviceTables {
            mesh_type: match file.mesh_type() {
                MeshType::Triangle => 0,
                MeshType::Quad => 1,
            },
            data_type: match file.data_type() {
                DataType::U8 => 0,
                DataType::U16 => 1,
                DataType::Half => 2,
                DataType::F32 => 3,
            },
            num_channels: file.num_channels() as u32,
            pixel_size: ps as u32,
            u_border: border(file.u_border_mode()),
            v_border: border(file.v_border_mode()),
            edge_filter: match file.edge_filter_mode() {
                EdgeFilterMode::None => 0,
                EdgeFilterMode::TanVec => 1,
            },
            ..Default::default()
        };
        for (face, info) in file.faces().iter().enumerate() {
            let face = face as u32;
            let (ul, vl) = (info.res.ulog2.max(0), info.res.vlog2.max(0));
            tables.faces.push(PtexDeviceFace {
                units: tables.units.len() as u32,
                ulog2: ul as u8,
                vlog2: vl as u8,
                flags: info.flags,
                adjedges: info.adjedges,
                adjfaces: info.adjfaces,
            });
            for redu in 0..=ul {
                for redv in 0..=vl {
                    let res = Res::new(ul - redu, vl - redv);
                    tables.units.push(unit(layout, face, res));
                }
            }
            match file.constant(face) {
                Ok(c) if c.len() == ps => tables.constants.extend_from_slice(c),
                _ => tables.constants.extend(std::iter::repeat_n(0, ps)),
            }
        }
        tables
    }

    /// The entry of `face` reduced by (`redu`, `redv`), as device code finds it.
    pub fn unit(&self, face: u32, redu: u32, redv: u32) -> Option<&PtexDeviceUnit> {
        let f = self.faces.get(face as usize)?;
        if redu > u32::from(f.ulog2) || redv > u32::from(f.vlog2) {
            return None;
        }
        let i = f.units + redu * (u32::from(f.vlog2) + 1) + redv;
        self.units.get(i as usize)
    }

    /// Bytes of the three tables.
    pub fn bytes(&self) -> usize {
        self.faces.len() * std::mem::size_of::<PtexDeviceFace>()
            + self.units.len() * std::mem::size_of::<PtexDeviceUnit>()
            + self.constants.len()
    }
}

const _: () = assert!(std::mem::size_of::<PtexDeviceFace>() == 24);
const _: () = assert!(std::mem::size_of::<PtexDeviceUnit>() == 16);
const _: () = assert!(std::mem::size_of::<PtexDeviceTexture>() == 56);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::ptex::tests::fixtures;
    use crate::sources::ptex::PtexFile;
    use std::sync::Arc;

    #[test]
    fn every_entry_is_the_pack_layouts_location_and_the_constants_are_the_files() {
        for fx in fixtures::all() {
            let pages = PtexPages::new(Arc::new(PtexFile::open(&fx.path).unwrap())).unwrap();
            let t = PtexDeviceTables::new(&pages);
            let file = pages.file();
            assert_eq!(t.faces.len(), file.num_faces());
            assert_eq!(t.constants.len(), file.num_faces() * file.pixel_size());
            let mut located = 0;
            for (face, info) in file.faces().iter().enumerate() {
                let f = t.faces[face];
                assert_eq!(
                    (f.flags, f.adjedges, f.adjfaces),
                    (info.flags, info.adjedges, info.adjfaces)
                );
                let ps = file.pixel_size();
                assert_eq!(
                    &t.constants[face * ps..(face + 1) * ps],
                    file.constant(face as u32).unwrap()
                );
                for redu in 0..=u32::from(f.ulog2) {
                    for redv in 0..=u32::from(f.vlog2) {
                        let res = Res::new(f.ulog2 as i8 - redu as i8, f.vlog2 as i8 - redv as i8);
                        let e = t.unit(face as u32, redu, redv).unwrap();
                        match pages.layout().locate(face as u32, res) {
                            None => assert_eq!(e.page, PTEX_NO_UNIT),
                            Some(loc) => {
                                located += 1;
                                assert_eq!(
                                    (e.page, e.offset, e.bytes),
                                    (loc.page, loc.offset, loc.bytes)
                                );
                                let tiling = pages.layout().tiling(face as u32, res);
                                assert_eq!(e.ntiles_u as usize, tiling.map_or(0, |t| t.ntiles_u));
                                if let Some(tl) = tiling {
                                    assert_eq!(
                                        (e.tile_ulog2 as i8, e.tile_vlog2 as i8),
                                        (tl.tile_res.ulog2, tl.tile_res.vlog2)
                                    );
                                }
                            }
                        }
                    }
                }
                assert!(t.unit(face as u32, u32::from(f.ulog2) + 1, 0).is_none());
            }
            assert!(located > 0, "{}", fx.path.display());
            assert!(t.bytes() > 0);
        }
    }
}
