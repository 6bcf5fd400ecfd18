//! Page-resolved texel fetch: one bilinear (or point) footprint at one mip level. Finds the
//! pages its texels live on (tiles of a tiled level, or the mip-tail page), resolves each
//! distinct page once, and adds the weighted texels to an accumulator only if every page
//! is resident. Missing tiles are never read.

use super::address::{
    axis, maps_every_coordinate, sanitise_jitter, sloped_axis, Axis, AxisFilter, SlopedAxis,
};
use super::texel::Texel;
use super::CpuView;
use crate::backend::cpu::TileDirectory;
use crate::memory::TileTrailer;
use crate::textures::{AddressMode, FilterMode, SamplerLevel, TextureSampler};
use crate::TILE_BYTES;
use std::marker::PhantomData;

/// The most pages a level may have for [`Fetch::level_surely_missing`] to look at its
/// residence bits as a whole (8 words).
pub(crate) const SMALL_LEVEL_PAGES: u32 = 256;

/// How a lookup touches pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Touch {
    /// Record a use of every page (misses become requests): the footprint proper.
    Record,
    /// Only test residence (fallback to coarser levels must not request them).
    Peek,
}

/// A filtered value being summed, and whether every page it needed was resident. After
/// the first miss the value is meaningless and nothing more is read; pages are still
/// touched.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Accum {
    /// Weighted sum of the texels read so far.
    pub value: [f32; 4],
    /// No page was missing so far.
    pub resident: bool,
}

impl Accum {
    /// Nothing summed, nothing missing.
    #[inline]
    pub fn new() -> Accum {
        Accum {
            value: [0.0; 4],
            resident: true,
        }
    }
}

/// The derivatives of a filtered value with respect to s and t, being summed beside its
/// [`Accum`] (meaningful only while that stays resident).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Slopes {
    /// ∂value/∂s.
    pub ds: [f32; 4],
    /// ∂value/∂t.
    pub dt: [f32; 4],
}

/// What a footprint's resident texels are summed into: the lookup's [`Accum`], whose
/// `resident` a miss clears, and what else the lookup sums beside it.
pub(crate) trait Combine {
    /// The lookup's accumulator.
    fn acc(&mut self) -> &mut Accum;
    /// Add this footprint's contribution, given `texel(i, j)` (column i, row j of the 2×2
    /// footprint; readable wherever the reach axes passed with it weigh non-zero).
    fn combine(self, texel: impl Fn(usize, usize) -> [f32; 4]);
}

/// The plain lookup's contribution: `weight × Σ wx·wy·texel` into `value`.
struct Weighted<'v> {
    ax: &'v Axis,
    ay: &'v Axis,
    weight: f32,
    acc: &'v mut Accum,
}

impl Combine for Weighted<'_> {
    #[inline(always)]
    fn acc(&mut self) -> &mut Accum {
        self.acc
    }

    #[inline(always)]
    fn combine(self, texel: impl Fn(usize, usize) -> [f32; 4]) {
        blend(
            &mut self.acc.value,
            weighted_sum(self.ax, self.ay, texel),
            self.weight,
        );
    }
}

/// A derivative lookup's contribution: the value as [`Weighted`] sums it (the same terms
/// in the same order), and `weight × Σ ∂(wx·wy)/∂s · texel` (likewise t) into the slopes.
struct WithSlopes<'v> {
    sx: SlopedAxis,
    sy: SlopedAxis,
    weight: f32,
    acc: &'v mut Accum,
    slopes: &'v mut Slopes,
}

impl Combine for WithSlopes<'_> {
    #[inline(always)]
    fn acc(&mut self) -> &mut Accum {
        self.acc
    }

    #[inline(always)]
    fn combine(self, texel: impl Fn(usize, usize) -> [f32; 4]) {
        let (sx, sy) = (&self.sx, &self.sy);
        // The 2×2 texels, each read once (0 outside a border).
        let mut t = [[[0.0f32; 4]; 2]; 2];
        for (j, row) in t.iter_mut().enumerate() {
            if sy.reach.weight[j] != 0.0 {
                for (i, texel_ij) in row.iter_mut().enumerate() {
                    if sx.reach.weight[i] != 0.0 {
                        *texel_ij = texel(i, j);
                    }
                }
            }
        }
        let value = weighted_sum(&sx.weights, &sy.weights, |i, j| t[j][i]);
        blend(&mut self.acc.value, value, self.weight);
        // Each derivative sums the pairs' slopes along its axis first, then weighs them
        // along the other, so a constant channel's derivative is exactly 0.
        let pair = |a: &[f32; 4], b: &[f32; 4], slopes: [f32; 2]| {
            let mut out = [0.0f32; 4];
            for (k, o) in out.iter_mut().enumerate() {
                *o = a[k] * slopes[0] + b[k] * slopes[1];
            }
            out
        };
        for (row, wy) in t.iter().zip(sy.weights.weight) {
            let along_s = pair(&row[0], &row[1], sx.slopes);
            blend(&mut self.slopes.ds, along_s, self.weight * wy);
        }
        let [top, bottom] = &t;
        for ((a, b), wx) in top.iter().zip(bottom).zip(sx.weights.weight) {
            let along_t = pair(a, b, sy.slopes);
            blend(&mut self.slopes.dt, along_t, self.weight * wx);
        }
    }
}

/// Fetches footprints of one texture with texel format `D`.
pub(crate) struct Fetch<'a, D> {
    view: CpuView<'a>,
    tiles: &'a TileDirectory,
    sampler: &'a TextureSampler,
    address: [AddressMode; 2],
    /// How each axis picks its texels (the texture's filter, or a lookup's jitter).
    filter: [AxisFilter; 2],
    touch: Touch,
    tile_shift: [u32; 2],
    _texel: PhantomData<D>,
}

impl<'a, D: Texel> Fetch<'a, D> {
    /// A fetcher for `sampler`, which must be well formed (see `resolve::is_well_formed`:
    /// power-of-two tile sides, `D` its format, levels within `MAX_LEVELS`).
    #[inline]
    pub fn new(view: CpuView<'a>, sampler: &'a TextureSampler, touch: Touch) -> Self {
        debug_assert!(
            sampler.tile_width.is_power_of_two() && sampler.tile_height.is_power_of_two()
        );
        debug_assert_eq!(sampler.texel_bytes as usize, D::BYTES);
        debug_assert!(
            sampler.tile_width >> D::UNIT_SHIFT > 0 && sampler.tile_height >> D::UNIT_SHIFT > 0
        );
        Fetch {
            view,
            tiles: view.tiles(),
            sampler,
            address: [
                AddressMode::from_code(sampler.address_s),
                AddressMode::from_code(sampler.address_t),
            ],
            filter: if sampler.filter == FilterMode::Linear as u32 {
                [AxisFilter::Linear; 2]
            } else {
                [AxisFilter::Point; 2]
            },
            touch,
            tile_shift: [
                sampler.tile_width.trailing_zeros(),
                sampler.tile_height.trailing_zeros(),
            ],
            _texel: PhantomData,
        }
    }

    /// The same fetcher touching pages as `touch`.
    #[inline]
    pub fn with_touch(&self, touch: Touch) -> Self {
        Fetch { touch, ..*self }
    }

    /// The same fetcher reading one texel per level, picked by `jitter` (s, t) among the
    /// bilinear footprint's texels with their weights, whatever the texture's filter
    /// (stochastic filtering; see [`AxisFilter::Jitter`]).
    #[inline]
    pub fn with_jitter(&self, jitter: [f32; 2]) -> Self {
        Fetch {
            filter: jitter.map(|j| AxisFilter::Jitter(sanitise_jitter(j))),
            ..*self
        }
    }

    /// Add `weight` × the filtered value of `level` at (s, t) to `acc`, touching the
    /// footprint's pages; on a missing page mark `acc` non-resident instead.
    #[inline(always)]
    pub fn add(&self, level: u32, s: f32, t: f32, weight: f32, acc: &mut Accum) {
        let lv = &self.sampler.levels[level as usize];
        if lv.width == 0 || lv.height == 0 {
            return; // never built by the loader (levels are at least 1×1): transparent black
        }
        let ax = axis(s, lv.width, self.filter[0], self.address[0]);
        let ay = axis(t, lv.height, self.filter[1], self.address[1]);
        let combine = Weighted {
            ax: &ax,
            ay: &ay,
            weight,
            acc,
        };
        self.add_footprint(level, &ax, &ay, combine);
    }

    /// [`add`](Self::add), also adding `weight` × the derivatives of the level's filtered
    /// value with respect to s and t to `slopes`. Filters with the texture's own filter
    /// (bilinear or point; point's derivatives are 0), whatever the jitter; the value
    /// added is exactly `add`'s. On a texel centre it also reads (and touches) the
    /// bilinear pair's texel of weight 0, whose value the slope needs, which may be on the
    /// next tile.
    #[inline(always)]
    pub fn add_with_slopes(
        &self,
        level: u32,
        s: f32,
        t: f32,
        weight: f32,
        acc: &mut Accum,
        slopes: &mut Slopes,
    ) {
        let lv = &self.sampler.levels[level as usize];
        if lv.width == 0 || lv.height == 0 {
            return;
        }
        let linear = self.sampler.filter == FilterMode::Linear as u32;
        let sx = sloped_axis(s, lv.width, linear, self.address[0]);
        let sy = sloped_axis(t, lv.height, linear, self.address[1]);
        let combine = WithSlopes {
            sx,
            sy,
            weight,
            acc,
            slopes,
        };
        self.add_footprint(level, &sx.reach, &sy.reach, combine);
    }

    /// Touch the pages of the footprint whose texels `ax`, `ay` reach (weight non-zero),
    /// and hand its texels to `combine` if they are all resident and its accumulator is
    /// still resident; on a missing page mark the accumulator non-resident instead.
    #[inline(always)]
    fn add_footprint(&self, level: u32, ax: &Axis, ay: &Axis, combine: impl Combine) {
        if ax.weight == [0.0; 2] || ay.weight == [0.0; 2] {
            return; // all outside a border: transparent black, no page
        }
        if level < self.sampler.mip_tail_first_level {
            let lv = &self.sampler.levels[level as usize];
            self.add_tiled(lv, ax, ay, combine);
        } else {
            self.add_tail(level, ax, ay, combine);
        }
    }

    /// Whether no footprint at tiled level `level` can be resident, known from the
    /// residence bits alone: none of the level's pages is resident, the level has texels,
    /// and neither address mode can put a footprint wholly outside the texture (which needs
    /// no page). Asked only of levels of at most [`SMALL_LEVEL_PAGES`] pages, where it
    /// costs a few word loads; `false` means "look".
    #[inline]
    pub fn level_surely_missing(&self, level: u32) -> bool {
        let lv = &self.sampler.levels[level as usize];
        if lv.width == 0 || lv.height == 0 || level >= self.sampler.mip_tail_first_level {
            return false;
        }
        if !self.address.into_iter().all(maps_every_coordinate) {
            return false;
        }
        // The layout's rule (`TextureLayout`: tiles_y = ⌈height / tile height⌉).
        let pages = lv.tiles_x * lv.height.div_ceil(self.sampler.tile_height);
        pages <= SMALL_LEVEL_PAGES
            && !self
                .view
                .pages()
                .any_resident(self.sampler.start_page + lv.offset, pages)
    }

    /// Whether a page is resident, recording the use if touching records.
    #[inline]
    fn touch_page(&self, page: u32) -> bool {
        match self.touch {
            Touch::Record => self.view.request(page),
            Touch::Peek => self.view.pages().is_resident(page),
        }
    }

    /// The address of a tile page's texels, or `None` if it is not resident (or has no
    /// data). By the contract of `CpuView::new`, a non-null entry of a resident page
    /// addresses a live tile buffer (TILE_BYTES of texels and its trailer) that is not
    /// freed while the view lives; its texels are read only where the trailer says they
    /// are written ([`Fetch::texels_written`]), and only those bytes are borrowed.
    /// The flag says the tile was published with file tiles missing.
    #[inline]
    fn tile(&self, page: u32) -> Option<(*const u8, bool)> {
        if !self.touch_page(page) {
            return None;
        }
        let (ptr, partial) = self.tiles.get_tagged(page);
        (!ptr.is_null()).then_some((ptr, partial))
    }

    /// Whether the footprint's texels on `tile` (page `page`) that `mine(i, j)` selects
    /// are written. A page published before its file tiles were read has some missing:
    /// a recording lookup reads those it needs in place (through the view), a peek says no.
    #[inline(always)]
    fn texels_written(
        &self,
        page: u32,
        tile: *const u8,
        ax: &Axis,
        ay: &Axis,
        mine: impl Fn(usize, usize) -> bool,
    ) -> bool {
        // SAFETY: `tile` came from `tile()`: a live tile buffer, trailer included.
        let trailer = unsafe { TileTrailer::of(tile) };
        let missing = trailer.missing();
        missing == 0 || self.write_file_tiles(page, tile, trailer, missing, ax, ay, &mine)
    }

    #[cold]
    #[allow(clippy::too_many_arguments)]
    fn write_file_tiles(
        &self,
        page: u32,
        tile: *const u8,
        trailer: &TileTrailer,
        missing: u32,
        ax: &Axis,
        ay: &Axis,
        mine: &dyn Fn(usize, usize) -> bool,
    ) -> bool {
        let cut = trailer.sub_tiles();
        let (mask_x, mask_y) = (self.sampler.tile_width - 1, self.sampler.tile_height - 1);
        let mut need = 0u32;
        for j in (0..2).filter(|&j| ay.weight[j] != 0.0) {
            for i in (0..2).filter(|&i| ax.weight[i] != 0.0 && mine(i, j)) {
                need |= 1 << cut.index(ax.index[i] & mask_x, ay.index[j] & mask_y);
            }
        }
        let mut lacking = need & missing;
        if lacking != 0 && self.touch == Touch::Peek {
            return false;
        }
        while lacking != 0 {
            if !self
                .view
                .fill_file_tile(page, tile, lacking.trailing_zeros())
            {
                return false;
            }
            lacking &= lacking - 1;
        }
        true
    }

    #[inline(always)]
    fn add_tiled(&self, lv: &SamplerLevel, ax: &Axis, ay: &Axis, mut combine: impl Combine) {
        let [sx, sy] = self.tile_shift;
        let (mask_x, mask_y) = (self.sampler.tile_width - 1, self.sampler.tile_height - 1);
        // Texel (column i, row j) within its tile: the byte offset of its unit (texel or
        // block) and its place in the unit.
        let unit = D::UNIT_SHIFT;
        let inner = (1u32 << unit) - 1;
        let texel = |i: usize, j: usize, tile: *const u8| {
            let (x, y) = (ax.index[i] & mask_x, ay.index[j] & mask_y);
            let at = (((y >> unit) << (sx - unit)) + (x >> unit)) as usize;
            debug_assert!((at + 1) * D::BYTES <= TILE_BYTES);
            D::decode(
                texel_bytes::<D>(tile, at * D::BYTES),
                (x & inner) as usize,
                (y & inner) as usize,
            )
        };
        // The footprint's distinct tiles: used columns × used rows.
        let (cols, num_cols, col_of) = axis_tiles(ax, sx);
        let (rows, num_rows, row_of) = axis_tiles(ay, sy);
        let first = self.sampler.start_page + lv.offset;
        let page = |r: usize, c: usize| {
            let page = first + rows[r] * lv.tiles_x + cols[c];
            debug_assert!(page < self.sampler.start_page + self.sampler.num_pages);
            page
        };
        if num_cols == 1 && num_rows == 1 {
            // The common case: one tile.
            let Some((tile, partial)) = self.tile(page(0, 0)) else {
                combine.acc().resident = false;
                return;
            };
            if combine.acc().resident {
                if partial && !self.texels_written(page(0, 0), tile, ax, ay, |_, _| true) {
                    combine.acc().resident = false;
                    return;
                }
                combine.combine(|i, j| texel(i, j, tile));
            }
            return;
        }
        let mut data: [*const u8; 4] = [std::ptr::null(); 4];
        let mut partial = [false; 4];
        let mut all_resident = true;
        for r in 0..num_rows {
            for c in 0..num_cols {
                match self.tile(page(r, c)) {
                    Some((tile, p)) => (data[r * 2 + c], partial[r * 2 + c]) = (tile, p),
                    None => all_resident = false,
                }
            }
        }
        if !all_resident {
            combine.acc().resident = false;
        } else if combine.acc().resident {
            for r in 0..num_rows {
                for c in 0..num_cols {
                    let mine = |i: usize, j: usize| row_of[j] == r && col_of[i] == c;
                    if partial[r * 2 + c]
                        && !self.texels_written(page(r, c), data[r * 2 + c], ax, ay, mine)
                    {
                        combine.acc().resident = false;
                        return;
                    }
                }
            }
            combine.combine(|i, j| texel(i, j, data[row_of[j] * 2 + col_of[i]]));
        }
    }

    fn add_tail(&self, level: u32, ax: &Axis, ay: &Axis, mut combine: impl Combine) {
        let Some(texels) = self.tail_level(level) else {
            combine.acc().resident = false;
            return;
        };
        if combine.acc().resident {
            let unit = D::UNIT_SHIFT;
            let inner = (1usize << unit) - 1;
            let width = units::<D>(self.sampler.levels[level as usize].width);
            combine.combine(|i, j| {
                let (x, y) = (ax.index[i] as usize, ay.index[j] as usize);
                let at = ((y >> unit) * width + (x >> unit)) * D::BYTES;
                D::decode(&texels[at..], x & inner, y & inner)
            });
        }
    }

    /// The texels of tail level `level`, touching the mip-tail page; `None` if it is not
    /// resident (or the sampler has no tail data).
    #[inline]
    fn tail_level(&self, level: u32) -> Option<&'a [u8]> {
        if !self.touch_page(self.sampler.start_page) || self.sampler.mip_tail_data == 0 {
            return None;
        }
        let lv = &self.sampler.levels[level as usize];
        let bytes = units::<D>(lv.width) * units::<D>(lv.height) * D::BYTES;
        debug_assert!(
            level >= self.sampler.mip_tail_first_level && level < self.sampler.num_levels
        );
        let ptr = (self.sampler.mip_tail_data as usize + lv.offset as usize) as *const u8;
        // SAFETY: the sampler's mip-tail page is resident, so by the contract of
        // `CpuView::new` `mip_tail_data` addresses the packed tail its levels describe:
        // level `level` is `width × height` texels (or the blocks covering them) at byte
        // `offset`, unchanged while the view lives.
        Some(unsafe { std::slice::from_raw_parts(ptr, bytes) })
    }
}

impl<D> Clone for Fetch<'_, D> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<D> Copy for Fetch<'_, D> {}

/// Units (texels or blocks) covering `side` texels.
#[inline(always)]
fn units<D: Texel>(side: u32) -> usize {
    side.div_ceil(1 << D::UNIT_SHIFT) as usize
}

/// The bytes of the unit (texel or block) at byte `offset` of `tile`.
#[inline(always)]
fn texel_bytes<'t, D: Texel>(tile: *const u8, offset: usize) -> &'t [u8] {
    debug_assert!(offset + D::BYTES <= TILE_BYTES);
    // SAFETY: `tile` addresses a live tile buffer of TILE_BYTES texels (`Fetch::tile`),
    // `offset` is a unit of it (the tile-local unit index times D::BYTES), and that unit is
    // written and not written again while the view lives (`Fetch::texels_written` saw
    // its file tile's bit clear, with Acquire, before this read).
    unsafe { std::slice::from_raw_parts(tile.add(offset), D::BYTES) }
}

/// The distinct tiles (one or two) that an axis's texels with non-zero weight fall in,
/// how many, and which of them each texel uses.
#[inline(always)]
fn axis_tiles(a: &Axis, shift: u32) -> ([u32; 2], usize, [usize; 2]) {
    let t = [a.index[0] >> shift, a.index[1] >> shift];
    if a.weight[0] != 0.0 && a.weight[1] != 0.0 && t[0] != t[1] {
        (t, 2, [0, 1])
    } else if a.weight[0] != 0.0 {
        ([t[0]; 2], 1, [0, 0])
    } else {
        ([t[1]; 2], 1, [0, 0])
    }
}

/// The sum of weight × texel over the 2×2 texels of a footprint with non-zero weight
/// (texels with weight 0 are not read); `texel(i, j)` gives the value of column i, row j.
#[inline(always)]
fn weighted_sum(ax: &Axis, ay: &Axis, texel: impl Fn(usize, usize) -> [f32; 4]) -> [f32; 4] {
    let mut v = [0.0f32; 4];
    for j in 0..2 {
        let wy = ay.weight[j];
        if wy != 0.0 {
            for i in 0..2 {
                let wx = ax.weight[i];
                if wx != 0.0 {
                    blend(&mut v, texel(i, j), wx * wy);
                }
            }
        }
    }
    v
}

/// `acc += value × weight`.
#[inline(always)]
fn blend(acc: &mut [f32; 4], value: [f32; 4], weight: f32) {
    for (a, v) in acc.iter_mut().zip(value) {
        *a += v * weight;
    }
}
