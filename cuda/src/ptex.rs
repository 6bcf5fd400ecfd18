//! Publication of a Ptex texture for device code (`include/demandtex/device/ptex.cuh`,
//! docs/PTEX.md "On the device"): the face table, the unit table and the per-face
//! constants of [`PtexDeviceTables`] copied once to device memory, and the
//! [`PtexDeviceTexture`] that points at them. The packed pages are the pages texture's
//! tiles, published by the backend like any texture's (point-filtered, so device code
//! reads the bytes back exactly).
//!
//! The tables are immutable for the life of the file: nothing is re-published per launch.
//! A [`DevicePtex`] must outlive every kernel that reads its [`PtexDeviceTexture`].

use crate::ops::safe;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};
use demandtex::error::Result;
use demandtex::ptex::device::PtexDeviceUnit;
use demandtex::ptex::device::{PtexDeviceFace, PtexDeviceTables, PtexDeviceTexture};
use demandtex::ptex::PtexTexture;
use std::sync::Arc;

/// The bytes of the face table as `DtexPtexDeviceFace[]` (24 bytes each, little-endian).
pub fn face_bytes(faces: &[PtexDeviceFace]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(faces));
    for f in faces {
        out.extend_from_slice(&f.units.to_le_bytes());
        out.extend_from_slice(&[f.ulog2, f.vlog2, f.flags, f.adjedges]);
        for a in f.adjfaces {
            out.extend_from_slice(&a.to_le_bytes());
        }
    }
    out
}

/// The bytes of the unit table as `DtexPtexDeviceUnit[]` (16 bytes each, little-endian).
pub fn unit_bytes(units: &[PtexDeviceUnit]) -> Vec<u8> {
    let mut out = Vec::with_capacity(std::mem::size_of_val(units));
    for u in units {
        out.extend_from_slice(&u.page.to_le_bytes());
        out.extend_from_slice(&u.offset.to_le_bytes());
        out.extend_from_slice(&u.bytes.to_le_bytes());
        out.extend_from_slice(&u.ntiles_u.to_le_bytes());
        out.extend_from_slice(&[u.tile_ulog2, u.tile_vlog2]);
    }
    out
}

/// A Ptex texture's tables in device memory.
pub struct DevicePtex {
    faces: CudaSlice<u8>,
    units: CudaSlice<u8>,
    constants: CudaSlice<u8>,
    texture: PtexDeviceTexture,
}

// SAFETY: the raw pointers in `texture` are device addresses of the slices this value owns;
// they are never dereferenced on the host.
unsafe impl Send for DevicePtex {}
// SAFETY: as above; the value is immutable after `upload`.
unsafe impl Sync for DevicePtex {}

impl DevicePtex {
    /// Copy the tables of `texture` to the device on `stream` (ordered before any kernel
    /// later enqueued on it).
    pub fn upload(stream: &Arc<CudaStream>, texture: &PtexTexture) -> Result<DevicePtex> {
        // The tables need the whole file: it is parsed now if no lookup has.
        let t = PtexDeviceTables::new(texture.pages()?);
        // Never a zero-length allocation: an empty table is one unused byte.
        let copy = |bytes: Vec<u8>, what: &str| -> Result<CudaSlice<u8>> {
            let bytes = if bytes.is_empty() { vec![0] } else { bytes };
            safe(&format!("copying the Ptex {what} to the device"), || {
                stream.clone_htod(&bytes)
            })
        };
        let faces = copy(face_bytes(&t.faces), "face table")?;
        let units = copy(unit_bytes(&t.units), "unit table")?;
        let constants = copy(t.constants.clone(), "constants")?;
        let addr = |s: &CudaSlice<u8>| s.device_ptr(stream).0;
        let texture = PtexDeviceTexture {
            faces: addr(&faces) as *const PtexDeviceFace,
            units: addr(&units) as *const PtexDeviceUnit,
            constants: addr(&constants) as *const u8,
            pages_texture: texture.id().0,
            num_faces: t.faces.len() as u32,
            mesh_type: t.mesh_type,
            data_type: t.data_type,
            num_channels: t.num_channels,
            pixel_size: t.pixel_size,
            num_units: t.units.len() as u32,
            u_border: t.u_border,
            v_border: t.v_border,
            edge_filter: t.edge_filter,
            reserved: 0,
        };
        Ok(DevicePtex {
            faces,
            units,
            constants,
            texture,
        })
    }

    /// What device code reads: pass it to the kernel by value.
    pub fn device_texture(&self) -> PtexDeviceTexture {
        self.texture
    }

    /// Device bytes of the tables.
    pub fn bytes(&self) -> usize {
        self.faces.len() + self.units.len() + self.constants.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_bytes_have_the_c_layout() {
        let f = PtexDeviceFace {
            units: 0x0403_0201,
            ulog2: 5,
            vlog2: 6,
            flags: 8,
            adjedges: 0b1110_0100,
            adjfaces: [-1, 2, 3, 0x7fff_ffff],
        };
        let b = face_bytes(&[f, f]);
        assert_eq!(b.len(), 2 * std::mem::size_of::<PtexDeviceFace>());
        assert_eq!(&b[..8], &[1, 2, 3, 4, 5, 6, 8, 0b1110_0100]);
        assert_eq!(&b[8..12], &[0xff; 4]);
        assert_eq!(&b[20..24], &0x7fff_ffffi32.to_le_bytes());
        // The same bytes as the repr(C) struct in memory (little-endian hosts).
        // SAFETY: a repr(C) struct of plain integers without padding, read as bytes.
        let raw = unsafe {
            std::slice::from_raw_parts(
                &f as *const PtexDeviceFace as *const u8,
                std::mem::size_of::<PtexDeviceFace>(),
            )
        };
        if cfg!(target_endian = "little") {
            assert_eq!(&b[..24], raw);
        }
        let u = PtexDeviceUnit {
            page: 7,
            offset: 0x100,
            bytes: 48,
            ntiles_u: 4,
            tile_ulog2: 7,
            tile_vlog2: 6,
        };
        let b = unit_bytes(&[u]);
        assert_eq!(b.len(), std::mem::size_of::<PtexDeviceUnit>());
        assert_eq!(b, [7, 0, 0, 0, 0, 1, 0, 0, 48, 0, 0, 0, 4, 0, 7, 6]);
    }
}
