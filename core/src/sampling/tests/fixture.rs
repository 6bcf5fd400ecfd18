//! A hand-built page table, tile directory and textures (no loader), plus a direct
//! reference sampler over the same texel function.

use crate::backend::cpu::TileDirectory;
use crate::ids::TextureId;
use crate::memory::TileBuffer;
use crate::paging::{
    encode_base_color, PageLayout, PageMapping, PageTable, PullResult, NO_BASE_COLOR,
};
use crate::sampling::CpuView;
use crate::textures::{
    full_mip_levels, AddressMode, PageContent, TexelFormat, TextureDesc, TextureLayout,
    TextureSampler,
};

pub const MAX_TEXTURES: u32 = 16;
const PAGE_TABLE_ENTRIES: u32 = 64;
const NUM_PAGES: u32 = 1 << 16;

/// The texel function every fixture texture holds: distinct per level and texel, in [0, 1].
pub fn pattern(level: u32, x: u32, y: u32) -> [f32; 4] {
    let k = |a: u32, b: u32, c: u32, m: u32| ((x * a + y * b + level * c) % m) as f32 / 255.0;
    [
        k(7, 3, 50, 251),
        k(13, 17, 29, 241),
        (level + 1) as f32 / 32.0,
        ((x ^ y) % 256) as f32 / 255.0,
    ]
}

/// A texture to create.
#[derive(Clone, Copy, Debug)]
pub struct Spec {
    pub width: u32,
    pub height: u32,
    /// Mip levels (0: the full chain).
    pub levels: u32,
    pub format: TexelFormat,
    pub desc: TextureDesc,
    /// `None`: NO_BASE_COLOR.
    pub base: Option<[f32; 4]>,
}

impl Spec {
    /// An RGBA8 texture with the full chain and a base colour.
    pub fn new(width: u32, height: u32) -> Spec {
        Spec {
            width,
            height,
            levels: 0,
            format: TexelFormat::RGBA8,
            desc: TextureDesc::default(),
            base: Some(BASE),
        }
    }
}

/// The base colour fixture textures get by default (exact in halfs).
pub const BASE: [f32; 4] = [0.25, 0.5, 0.75, 1.0];

pub struct Texture {
    pub layout: TextureLayout,
    pub desc: TextureDesc,
    pub sampler: Box<TextureSampler>,
    base: Option<[f32; 4]>,
    /// Tile data by page offset within the texture's range (offset 0, the tail, is empty).
    tiles: Vec<TileBuffer>,
    _tail: Vec<u8>,
}

pub struct Fixture {
    pub pages: PageTable,
    pub tiles: TileDirectory,
    pub textures: Vec<Texture>,
    next_page: u32,
}

impl Fixture {
    pub fn new() -> Fixture {
        let layout = PageLayout::new(MAX_TEXTURES, PAGE_TABLE_ENTRIES, NUM_PAGES).unwrap();
        Fixture {
            pages: PageTable::new(layout),
            tiles: TileDirectory::new(NUM_PAGES),
            textures: Vec::new(),
            next_page: layout.tile_start(),
        }
    }

    /// Create a texture (nothing resident yet).
    pub fn add(&mut self, spec: Spec) -> TextureId {
        let levels = if spec.levels == 0 {
            full_mip_levels(spec.width, spec.height)
        } else {
            spec.levels
        };
        let layout = TextureLayout::new(spec.width, spec.height, levels, spec.format).unwrap();
        let start = self.next_page;
        self.next_page += layout.num_pages;
        assert!(self.next_page <= NUM_PAGES);
        let f = spec.format;
        let tb = f.texel_bytes();
        let mut tiles = vec![TileBuffer::new()];
        for offset in 1..layout.num_pages {
            let Some(PageContent::Tile {
                level,
                tile_x,
                tile_y,
            }) = layout.page_content(offset)
            else {
                panic!("page {offset}")
            };
            // 0xFF padding: NaN for floats, 1.0 for integers — wrong if ever read.
            let mut buffer = TileBuffer::new();
            let data = buffer.as_mut_slice();
            data.fill(0xFF);
            let r = layout.tile_region(level, tile_x, tile_y);
            for y in 0..r.height {
                for x in 0..r.width {
                    let at = (y * layout.tile_width + x) as usize * tb;
                    f.encode(pattern(level, r.x + x, r.y + y), &mut data[at..at + tb]);
                }
            }
            tiles.push(buffer);
        }
        let mut tail = vec![0u8; layout.mip_tail_bytes as usize];
        for level in layout.mip_tail_first_level..levels {
            let l = layout.levels[level as usize];
            for y in 0..l.height {
                for x in 0..l.width {
                    let at = l.offset as usize + (y * l.width + x) as usize * tb;
                    f.encode(pattern(level, x, y), &mut tail[at..at + tb]);
                }
            }
        }
        let mut sampler = Box::new(TextureSampler::new(&layout, &spec.desc, start));
        sampler.mip_tail_data = tail.as_ptr() as u64;
        self.textures.push(Texture {
            layout,
            desc: spec.desc,
            sampler,
            base: spec.base,
            tiles,
            _tail: tail,
        });
        TextureId(self.textures.len() as u32 - 1)
    }

    pub fn tex(&self, id: TextureId) -> &Texture {
        &self.textures[id.0 as usize]
    }

    pub fn view(&self) -> CpuView<'_> {
        // SAFETY: sampler entries address boxed samplers whose mip_tail_data is the tail
        // vector; tile entries address tile buffers; all owned by `self`, which the
        // view borrows, and never written while it lives.
        unsafe { CpuView::new(&self.pages, &self.tiles) }
    }

    fn push(&self, page: u32, lru: u32, entry: u64) {
        self.pages.push_mapping(PageMapping { page, lru, entry });
    }

    /// Make the base-colour page resident.
    pub fn map_base(&self, id: TextureId) {
        let t = self.tex(id);
        let entry = t.base.map_or(NO_BASE_COLOR, encode_base_color);
        self.push(self.pages.layout().base_color_page(id).0, 15, entry);
    }

    /// Make the sampler, base-colour and mip-tail pages resident.
    pub fn map_sampler(&self, id: TextureId) {
        let t = self.tex(id);
        self.push(id.0, 15, &*t.sampler as *const TextureSampler as u64);
        self.map_base(id);
        self.push(t.sampler.start_page, 15, 0);
    }

    /// Map the sampler page with entry 0 (a degenerate texture), and the base colour.
    pub fn map_null_sampler(&self, id: TextureId) {
        self.push(id.0, 15, 0);
        self.map_base(id);
    }

    /// The page of a tile.
    pub fn tile_page(&self, id: TextureId, level: u32, tx: u32, ty: u32) -> u32 {
        let t = self.tex(id);
        t.sampler.start_page + t.layout.tile_page_offset(level, tx, ty)
    }

    /// The tile page holding texel (x, y) of a tiled level.
    pub fn texel_page(&self, id: TextureId, level: u32, x: u32, y: u32) -> u32 {
        let l = &self.tex(id).layout;
        self.tile_page(id, level, x / l.tile_width, y / l.tile_height)
    }

    /// Publish a tile's data and make its page resident.
    pub fn map_tile(&self, id: TextureId, level: u32, tx: u32, ty: u32) {
        let page = self.tile_page(id, level, tx, ty);
        self.publish(id, page);
        self.push(page, 0, 0);
    }

    /// Publish a tile's data in the directory without making its page resident.
    pub fn publish(&self, id: TextureId, page: u32) {
        let t = self.tex(id);
        self.tiles.set(
            page,
            t.tiles[(page - t.sampler.start_page) as usize].as_ptr(),
        );
    }

    /// Map every tile of a tiled level.
    pub fn map_level(&self, id: TextureId, level: u32) {
        let l = self.tex(id).layout.levels[level as usize];
        for ty in 0..l.tiles_y {
            for tx in 0..l.tiles_x {
                self.map_tile(id, level, tx, ty);
            }
        }
    }

    /// Sampler, base colour, tail and every tile resident.
    pub fn map_all(&self, id: TextureId) {
        self.map_sampler(id);
        for level in 0..self.tex(id).layout.mip_tail_first_level {
            self.map_level(id, level);
        }
    }

    /// Pages referenced but not resident since the last call (ascending).
    pub fn requests(&self) -> Vec<u32> {
        let mut r = PullResult::default();
        self.pages.pull(NUM_PAGES, 1, 1, &mut r);
        r.requested.iter().map(|p| p.0).collect()
    }
}

impl Texture {
    /// The texel as stored (encoded in the texture's format and decoded again).
    pub fn texel(&self, level: u32, x: u32, y: u32) -> [f32; 4] {
        let f = self.layout.format;
        let mut buf = [0u8; 16];
        f.encode(pattern(level, x, y), &mut buf);
        f.decode(&buf)
    }

    /// Reference address mapping, written independently of the sampler's.
    fn address(i: i64, n: i64, mode: AddressMode) -> Option<u32> {
        let r = match mode {
            AddressMode::Wrap => ((i % n) + n) % n,
            AddressMode::Clamp => i.max(0).min(n - 1),
            AddressMode::Mirror => {
                let p = ((i % (2 * n)) + 2 * n) % (2 * n);
                if p >= n {
                    2 * n - 1 - p
                } else {
                    p
                }
            }
            // FromFile: resolved at open; an unresolved one reads as black.
            AddressMode::Border | AddressMode::FromFile => {
                if i < 0 || i >= n {
                    return None;
                }
                i
            }
        };
        Some(r as u32)
    }

    fn texel_or_border(&self, level: u32, x: i64, y: i64) -> [f64; 4] {
        let l = self.layout.levels[level as usize];
        let a = self.desc.address;
        match (
            Self::address(x, l.width as i64, a[0]),
            Self::address(y, l.height as i64, a[1]),
        ) {
            (Some(x), Some(y)) => self.texel(level, x, y).map(|c| c as f64),
            _ => [0.0; 4],
        }
    }

    /// Reference bilinear lookup of one level, in f64.
    pub fn bilinear(&self, level: u32, s: f32, t: f32) -> [f32; 4] {
        let l = self.layout.levels[level as usize];
        let x = s as f64 * l.width as f64 - 0.5;
        let y = t as f64 * l.height as f64 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (x0, y0) = (x0 as i64, y0 as i64);
        let mut v = [0.0f64; 4];
        for (dy, wy) in [(0, 1.0 - fy), (1, fy)] {
            for (dx, wx) in [(0, 1.0 - fx), (1, fx)] {
                let c = self.texel_or_border(level, x0 + dx, y0 + dy);
                for k in 0..4 {
                    v[k] += wx * wy * c[k];
                }
            }
        }
        v.map(|c| c as f32)
    }

    /// Reference derivatives of [`bilinear`](Self::bilinear) with respect to s and t, in
    /// f64: `width × Σ wy·(right − left)` and `height × Σ wx·(below − above)` of the 2×2
    /// texels around the point (the right or lower pair where the point is on a centre).
    pub fn bilinear_slopes(&self, level: u32, s: f32, t: f32) -> ([f32; 4], [f32; 4]) {
        let l = self.layout.levels[level as usize];
        let x = s as f64 * l.width as f64 - 0.5;
        let y = t as f64 * l.height as f64 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let (x0, y0) = (x0 as i64, y0 as i64);
        let at = |dx: i64, dy: i64| self.texel_or_border(level, x0 + dx, y0 + dy);
        let (mut ds, mut dt) = ([0.0f64; 4], [0.0f64; 4]);
        for k in 0..4 {
            ds[k] = l.width as f64
                * ((1.0 - fy) * (at(1, 0)[k] - at(0, 0)[k]) + fy * (at(1, 1)[k] - at(0, 1)[k]));
            dt[k] = l.height as f64
                * ((1.0 - fx) * (at(0, 1)[k] - at(0, 0)[k]) + fx * (at(1, 1)[k] - at(1, 0)[k]));
        }
        (ds.map(|c| c as f32), dt.map(|c| c as f32))
    }

    /// Reference point lookup of one level (same f32 arithmetic as CUDA's `floor(s·w)`).
    pub fn point(&self, level: u32, s: f32, t: f32) -> [f32; 4] {
        let l = self.layout.levels[level as usize];
        let x = (s * l.width as f32).floor() as i64;
        let y = (t * l.height as f32).floor() as i64;
        self.texel_or_border(level, x, y).map(|c| c as f32)
    }

    /// Reference lookup of one level with the texture's filter.
    pub fn level(&self, level: u32, s: f32, t: f32) -> [f32; 4] {
        match self.desc.filter {
            crate::textures::FilterMode::Linear => self.bilinear(level, s, t),
            crate::textures::FilterMode::Point => self.point(level, s, t),
        }
    }
}

/// Assert two colours agree within `tol` per channel.
#[track_caller]
pub fn assert_close(got: [f32; 4], want: [f32; 4], tol: f32, what: &str) {
    for k in 0..4 {
        assert!(
            (got[k] - want[k]).abs() <= tol,
            "{what}: got {got:?}, want {want:?}"
        );
    }
}

/// `a·(1 − w) + b·w`.
pub fn mix(a: [f32; 4], b: [f32; 4], w: f32) -> [f32; 4] {
    [0, 1, 2, 3].map(|k| a[k] * (1.0 - w) + b[k] * w)
}

/// A small deterministic generator (no dependency needed).
pub struct Rng(pub u64);

impl Rng {
    /// Uniform in [lo, hi).
    pub fn f32(&mut self, lo: f32, hi: f32) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let u = (self.0 >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
}
