//! [`ResidentPtex`]: the reader as a [`PtexFaces`] store with everything resident — each
//! unit is decoded at its first use and kept. It is the filters' reference path (the
//! fixtures' values, the engine's "fully resident" baseline). Its units are the engine's
//! ([`PtexPages::read_unit`], tiled as [`crate::sources::ptex::pack::PackLayout::tiling`]
//! says), so the engine's lookups equal its own bit for bit.

use super::{PtexFaces, PtexTextureInfo, Texels, Tiling};
use crate::sources::ptex::{FaceInfo, PtexError, PtexFile, PtexPages, Res};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A decoded unit, or why it could not be read.
type Unit = Result<Arc<Vec<u8>>, String>;

/// A Ptex file whose units (a face at one resolution, or a tile of a stored tiled level)
/// are decoded at first use and kept for the life of the store. Units that cannot be read
/// are reported missing (and [`ResidentPtex::errors`] says why).
pub struct ResidentPtex {
    pages: PtexPages,
    info: PtexTextureInfo,
    units: Mutex<HashMap<(u32, Res, usize), Unit>>,
}

impl std::fmt::Debug for ResidentPtex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentPtex")
            .field("file", &self.pages.file().name())
            .finish_non_exhaustive()
    }
}

impl ResidentPtex {
    /// A store over `file`; an error if its units cannot be packed
    /// ([`PtexPages::new`]: more pages than a texture holds).
    pub fn new(file: Arc<PtexFile>) -> Result<ResidentPtex, PtexError> {
        let pages = PtexPages::new(file)?;
        let file = pages.file();
        let info = PtexTextureInfo {
            mesh_type: file.mesh_type(),
            data_type: file.data_type(),
            num_channels: file.num_channels(),
            u_border: file.u_border_mode(),
            v_border: file.v_border_mode(),
            edge_filter: file.edge_filter_mode(),
            num_faces: file.num_faces(),
        };
        Ok(ResidentPtex {
            info,
            pages,
            units: Mutex::new(HashMap::new()),
        })
    }

    /// The file.
    pub fn file(&self) -> &Arc<PtexFile> {
        self.pages.file()
    }

    /// The messages of the units that could not be read so far.
    pub fn errors(&self) -> Vec<String> {
        let units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        units
            .values()
            .filter_map(|u| u.as_ref().err().cloned())
            .collect()
    }

    fn decode(&self, face: u32, res: Res, tile: usize) -> Unit {
        self.pages
            .read_unit(face, res, tile)
            .map(Arc::new)
            .map_err(|e| e.to_string())
    }
}

impl PtexFaces for ResidentPtex {
    fn texture(&self) -> &PtexTextureInfo {
        &self.info
    }

    fn face_info(&self, face: u32) -> Option<&FaceInfo> {
        self.pages.file().faces().get(face as usize)
    }

    fn constant(&self, face: u32) -> Option<&[u8]> {
        self.pages.file().constant(face).ok()
    }

    fn tiling(&self, face: u32, res: Res) -> Option<Tiling> {
        let t = self.pages.layout().tiling(face, res)?;
        Some(Tiling {
            tile_res: t.tile_res,
            ntiles_u: t.ntiles_u,
        })
    }

    fn texels(&self, face: u32, res: Res, tile: usize, visit: &mut dyn FnMut(Texels<'_>)) -> bool {
        let key = (face, res, tile);
        let cached = {
            let units = self.units.lock().unwrap_or_else(|e| e.into_inner());
            units.get(&key).cloned()
        };
        let unit = match cached {
            Some(u) => u,
            None => {
                let u = self.decode(face, res, tile);
                let mut units = self.units.lock().unwrap_or_else(|e| e.into_inner());
                units.entry(key).or_insert(u).clone()
            }
        };
        match unit {
            Ok(data) => {
                visit(Texels::Packed(&data));
                true
            }
            Err(_) => false,
        }
    }
}
