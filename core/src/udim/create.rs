//! The engine side of UDIM textures: register the tiles (consecutive ids), publish holes
//! and the grid's entry, and report a grid's textures.

use super::{UdimEntry, UdimGrid, UdimId, UdimTiles};
use crate::error::{Error, Result};
use crate::ids::{PageId, TextureId};
use crate::paging::{PageKind, PageTable, HOLE_BASE_COLOR};
use crate::requests::host_state::HostState;
use crate::requests::Engine;
use crate::resources::TextureState;
use crate::sources::{ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::{TextureDesc, TileRegion, MAX_ANISOTROPY};
use std::sync::Arc;

impl Engine {
    /// Register a UDIM texture: every tile of `grid` becomes a texture (consecutive ids,
    /// holes included) sampled with `desc` — [`super::tile_desc`] (clamp) suits tiles — as
    /// does the base texture, if any. Nothing is opened until a launch samples it; sample
    /// with `tex2d_grad_udim`. Errors: a malformed grid ([`UdimGrid::validate`]), an
    /// invalid `desc`, or not enough texture ids or resource pages left.
    pub fn create_udim_texture(&self, grid: UdimGrid, desc: TextureDesc) -> Result<UdimId> {
        create_udim(self, grid, desc)
    }

    /// Register a UDIM texture from the OpenEXR files matching `pattern`
    /// (`name.<UDIM>.exr` or `name.<UVTILE>.exr`; see [`super::expand_pattern`]), with
    /// the OpenEXR file `base`, if given, as the whole-grid base texture. Slots without a
    /// file are holes. Errors: as [`UdimGrid::from_pattern`] and
    /// [`create_udim_texture`](Self::create_udim_texture).
    pub fn create_udim_from_pattern(
        &self,
        pattern: &std::path::Path,
        base: Option<&std::path::Path>,
        desc: TextureDesc,
    ) -> Result<UdimId> {
        let grid = UdimGrid::from_pattern(pattern, base)?;
        self.create_udim_texture(grid, desc)
    }

    /// The textures of a UDIM texture (holes are `None`); `None` for an id that names no
    /// UDIM texture of this engine.
    pub fn udim_tiles(&self, udim: UdimId) -> Option<UdimTiles> {
        udim_tiles(self, udim)
    }

    /// The texture of tile (`col`, `row`) of a UDIM texture, as [`UdimTiles::tile`] gives
    /// it (`Some(None)`: a hole or a tile outside the grid), without listing the others;
    /// `None` for an id that names no UDIM texture of this engine.
    pub fn udim_tile(&self, udim: UdimId, col: u32, row: u32) -> Option<Option<TextureId>> {
        let entry = read_entry(&self.pages, udim)?;
        if col >= entry.width || row >= entry.height {
            return Some(None);
        }
        Some(tile_texture(
            &self.host.lock(),
            &entry,
            row * entry.width + col,
        ))
    }
}

/// Create a UDIM texture: `grid.tiles` become textures `first..first + w·h` (holes
/// included), then the base texture, then the entry page is published.
fn create_udim(engine: &Engine, grid: UdimGrid, desc: TextureDesc) -> Result<UdimId> {
    grid.validate()?;
    if !(1..=MAX_ANISOTROPY).contains(&desc.max_anisotropy) {
        return Err(Error::InvalidArgument(format!(
            "max_anisotropy {} (1..={MAX_ANISOTROPY})",
            desc.max_anisotropy
        )));
    }
    let num_tiles = grid.width * grid.height;
    let needed = num_tiles as u64 + grid.base.is_some() as u64;

    let mut host = engine.host.lock();
    let max_textures = engine.layout.max_textures;
    let used = host.resources.len() as u64;
    let free = (max_textures as u64).saturating_sub(used);
    if needed > free {
        return Err(Error::InvalidArgument(format!(
            "too many textures: a {}×{} UDIM grid{} needs {needed} texture ids, {free} left \
             (max_textures = {max_textures})",
            grid.width,
            grid.height,
            if grid.base.is_some() {
                " and its base"
            } else {
                ""
            },
        )));
    }
    let first = TextureId(used as u32);
    let entry = UdimEntry {
        first,
        base: grid.base.as_ref().map(|_| TextureId(first.0 + num_tiles)),
        width: grid.width,
        height: grid.height,
    };
    let encoded = entry.encode()?;
    // Nothing below can fail once the page is ours.
    let page = host.space.allocate_resources(1, "UDIM texture")?;

    engine.forget_stale_mappings(&mut host, first, needed as u32);
    // Holes: a null sampler and HOLE_BASE_COLOR, resident and never evicted.
    let mut entries = Vec::new();
    for source in grid.tiles {
        match source {
            Some(source) => {
                host.resources.add_texture(source, desc);
            }
            None => {
                let id = host.resources.add_texture(Arc::new(HoleSource), desc);
                if let Some(record) = host.resources.get_mut(id) {
                    record.state = TextureState::Hole;
                }
                entries.push((engine.layout.sampler_page(id), 0));
                entries.push((engine.layout.base_color_page(id), HOLE_BASE_COLOR));
            }
        }
    }
    if let Some(base) = grid.base {
        let id = host.resources.add_texture(base, desc);
        debug_assert_eq!(Some(id), entry.base);
    }
    debug_assert_eq!(host.resources.len() as u64, used + needed);
    // Resident and never evicted from now on; no launch can name the id before we return.
    entries.push((PageId(page), encoded));
    engine.publish_entries_now(&mut host, &entries)?;
    Ok(UdimId(page))
}

/// The textures of `udim`, or `None` if it names no UDIM texture.
fn udim_tiles(engine: &Engine, udim: UdimId) -> Option<UdimTiles> {
    let entry = read_entry(&engine.pages, udim)?;
    let host = engine.host.lock();
    let tiles = (0..entry.num_tiles())
        .map(|i| tile_texture(&host, &entry, i))
        .collect();
    Some(UdimTiles {
        width: entry.width,
        height: entry.height,
        tiles,
        base: entry.base,
    })
}

/// The texture of the `i`th tile (row-major) of `entry`'s grid; `None` for a hole.
fn tile_texture(host: &HostState, entry: &UdimEntry, i: u32) -> Option<TextureId> {
    let id = TextureId(entry.first.0 + i);
    match host.resources.get(id).map(|r| &r.state) {
        Some(TextureState::Hole) | None => None,
        Some(_) => Some(id),
    }
}

/// Read and check the entry of `udim` (recording a use of its page): `None` unless the
/// page is a resident resource page whose entry decodes to a grid within `max_textures`.
/// A page that is not resident names no UDIM texture (they are resident from creation),
/// so nothing is requested for it.
#[inline]
pub(crate) fn read_entry(pages: &PageTable, udim: UdimId) -> Option<UdimEntry> {
    let layout = pages.layout();
    if !matches!(layout.kind(udim.page()), PageKind::Resource(_)) || !pages.is_resident(udim.0) {
        return None;
    }
    UdimEntry::decode(pages.map_or_request(udim.0)?).filter(|e| e.fits(layout.max_textures))
}

/// The source of a hole's texture record. Holes are never opened (their pages are
/// resident from creation and route to nothing), so every call is an error.
struct HoleSource;

impl ImageSource for HoleSource {
    fn name(&self) -> String {
        "UDIM hole".into()
    }
    fn open(&self) -> Result<ImageInfo, SourceError> {
        Err("a UDIM hole has no image".into())
    }
    fn read_region(&self, _: TileRegion, _: &mut [u8], _: usize) -> Result<Readiness, SourceError> {
        Err("a UDIM hole has no image".into())
    }
}
