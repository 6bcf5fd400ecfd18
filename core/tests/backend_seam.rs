//! The publish seam seen from a backend that holds tile data itself, as a GPU does: a model
//! device that keeps its own copy of every tile the engine publishes, answers
//! `HostCopy::Release`, and checks the protocol of `demandtex::backend` at every call.
//! Requests are made as a device kernel makes them (reference bits in the host page table),
//! over frames that alternate between two working sets that do not fit the budget together,
//! so tiles are staged, restored (second chance) and evicted.
//!
//! What must hold:
//! - every call respects the protocol (no tile published over one the device holds, a
//!   restore only of a staged tile, a release only of a held one);
//! - after each frame converges, the device holds, for every page the engine shows resident,
//!   exactly the texels the source has for it: a renderer on that device draws the same
//!   pixels as with every tile resident;
//! - host tile memory stays bounded by the fills of a launch — independent of the budget,
//!   which the device's copies fill — while the CPU backend, for comparison, holds every
//!   resident tile on the host.

use demandtex::backend::{Backend, HostCopy, PublishError, TextureContents, Withdrawal};
use demandtex::memory::TileBuffer;
use demandtex::sources::{ImageSource, Noise};
use demandtex::textures::{TexelFormat, TextureLayout};
use demandtex::{Engine, Error, LoaderOptions, PageId, TextureDesc, TextureId, TILE_BYTES};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// What the model device holds.
#[derive(Default)]
struct Device {
    /// Tile data by page (mapped blocks), visible or staged.
    tiles: HashMap<u32, Vec<u8>>,
    /// Pages whose residence bit is set on the device.
    visible: HashSet<u32>,
    /// Textures built: their first page.
    textures: HashMap<u32, u32>,
    /// Textures built over another's tile range: (sharer, owner).
    sharers: Vec<(u32, u32)>,
    /// Protocol violations (checked by the test, not panicked under the engine's lock).
    violations: Vec<String>,
    publications: u64,
    restores: u64,
    releases: u64,
}

#[derive(Default)]
struct ModelDevice {
    device: Mutex<Device>,
    /// Whether textures may share a tile range (as the CUDA backend's do).
    shares_textures: bool,
    /// Publications of textures with their own tiles to answer "not now" (a device out of
    /// memory for a mip tail), counted down.
    owners_not_now: std::sync::atomic::AtomicU32,
}

impl Backend for ModelDevice {
    fn shares_texture_tiles(&self) -> bool {
        self.shares_textures
    }

    fn withdraw(&self, withdrawal: Withdrawal) -> Result<(), Error> {
        let mut d = self.device.lock();
        match withdrawal {
            Withdrawal::TileStaged(p) => {
                if !d.visible.remove(&p.0) || !d.tiles.contains_key(&p.0) {
                    d.violations
                        .push(format!("staged page {} was not visible", p.0));
                }
            }
            Withdrawal::TileReleased(p) => {
                d.visible.remove(&p.0);
                d.tiles.remove(&p.0);
                d.releases += 1;
            }
            Withdrawal::Page(p) => {
                d.visible.remove(&p.0);
            }
            Withdrawal::Texture(t) => {
                d.textures.remove(&t.0);
            }
        }
        Ok(())
    }

    fn publish_tile(&self, page: PageId, data: &TileBuffer) -> Result<HostCopy, PublishError> {
        let mut d = self.device.lock();
        if d.tiles.contains_key(&page.0) {
            d.violations
                .push(format!("tile {} published over one held", page.0));
        }
        d.tiles.insert(page.0, data.as_slice().to_vec());
        d.visible.insert(page.0);
        d.publications += 1;
        Ok(HostCopy::Release)
    }

    fn restore_tile(&self, page: PageId) -> Result<(), PublishError> {
        let mut d = self.device.lock();
        if !d.tiles.contains_key(&page.0) || d.visible.contains(&page.0) {
            d.violations
                .push(format!("restore of page {} that is not staged", page.0));
        }
        d.visible.insert(page.0);
        d.restores += 1;
        Ok(())
    }

    fn publish_texture(&self, c: &TextureContents<'_>) -> Result<(), PublishError> {
        use std::sync::atomic::Ordering::Relaxed;
        let not_now = |n: u32| n.checked_sub(1);
        if c.tiles_of.is_none()
            && self
                .owners_not_now
                .fetch_update(Relaxed, Relaxed, not_now)
                .is_ok()
        {
            return Err(PublishError::NotNow(
                "no memory for the mip tail yet".into(),
            ));
        }
        let mut d = self.device.lock();
        if c.mip_tail.len() as u64 != c.layout.mip_tail_bytes {
            d.violations.push("a mip tail of the wrong size".into());
        }
        if let Some(owner) = c.tiles_of {
            // Built over the owner's range: the owner must be on the device already.
            if d.textures.get(&owner.0) != Some(&c.sampler.start_page) {
                d.violations.push(format!(
                    "texture {} shares the range of {}, which the device does not hold",
                    c.texture.0, owner.0
                ));
            }
            d.sharers.push((c.texture.0, owner.0));
        }
        d.textures.insert(c.texture.0, c.sampler.start_page);
        d.visible.insert(c.texture.0);
        Ok(())
    }

    fn publish_entry(&self, page: PageId, _entry: u64) -> Result<(), Error> {
        self.device.lock().visible.insert(page.0);
        Ok(())
    }
}

/// Level-0 tile pages of `texture` in columns `cols` of rows `rows`.
fn tile_pages(
    layout: &TextureLayout,
    start: u32,
    cols: std::ops::Range<u32>,
    rows: std::ops::Range<u32>,
) -> Vec<u32> {
    let mut pages = Vec::new();
    for y in rows {
        for x in cols.clone() {
            pages.push(start + layout.tile_page_offset(0, x, y));
        }
    }
    pages
}

/// One frame as a device kernel makes it: request `pages` (and the sampler), launch after
/// launch, until all are resident. Returns the launches it took.
fn converge(engine: &Arc<Engine>, texture: TextureId, pages: &[u32]) -> u32 {
    for launch in 1..=200 {
        engine.publish_pending().unwrap();
        let launch_num = engine.begin_launch().launch_num();
        let table = engine.page_table();
        let mut all = table.request_and_test(texture.0);
        for &p in pages {
            all &= table.request_and_test(p);
        }
        if all {
            return launch;
        }
        engine.process_requests(launch_num, None).wait();
    }
    panic!("a frame did not converge in 200 launches");
}

fn options(budget_bytes: u64) -> LoaderOptions {
    LoaderOptions {
        num_pages: 1 << 20,
        max_texture_memory: budget_bytes,
        max_requests_per_launch: 32,
        fill_threads: 2,
        ..Default::default()
    }
}

/// Two working sets of 256 level-0 tiles each (RGBA8, 128×128 texels a tile) in a budget of
/// 384 tiles: a frame of one set evicts (stages) tiles of the other.
fn run_frames(engine: &Arc<Engine>, source: &Arc<Noise>) -> (TextureId, TextureLayout, u32) {
    let texture = engine
        .create_texture(source.clone(), TextureDesc::default())
        .unwrap();
    converge(engine, texture, &[]);
    let layout = engine.texture_layout(texture).expect("opened");
    let (start, _) = engine.texture_pages(texture).expect("opened");
    let start = start.0;
    let a = tile_pages(&layout, start, 0..16, 0..16);
    let b = tile_pages(&layout, start, 16..32, 0..16);
    for frame in 0..6 {
        let pages = if frame % 2 == 0 { &a } else { &b };
        converge(engine, texture, pages);
    }
    (texture, layout, start)
}

#[test]
fn a_backend_that_holds_tiles_sees_every_change_and_the_host_keeps_only_fills() {
    let budget = 384 * TILE_BYTES as u64;
    let device = Arc::new(ModelDevice::default());
    let engine = Engine::new(options(budget), device.clone()).unwrap();
    let source = Arc::new(Noise::new(8192, 8192, 3, TexelFormat::RGBA8));
    let (texture, layout, start) = run_frames(&engine, &source);

    let d = device.device.lock();
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(d.textures.get(&texture.0), Some(&start));
    let stats = engine.stats();
    assert!(stats.evictions > 0, "{stats:?}");
    assert!(stats.second_chance_restores > 0, "{stats:?}");
    assert_eq!(d.restores, stats.second_chance_restores);
    assert!(stats.peak_resident_bytes <= budget);

    // The device holds exactly the source's texels for every resident tile.
    let mut resident = 0;
    let mut expected = vec![0u8; TILE_BYTES];
    for (&page, data) in &d.tiles {
        if !engine.page_table().is_resident(page) {
            continue;
        }
        resident += 1;
        assert!(
            d.visible.contains(&page),
            "page {page} resident but not visible"
        );
        let offset = page - start;
        let Some(demandtex::textures::PageContent::Tile {
            level,
            tile_x,
            tile_y,
        }) = layout.page_content(offset)
        else {
            panic!("page {page} is not a tile");
        };
        let region = layout.tile_region(level, tile_x, tile_y);
        expected.fill(0);
        let row = layout.tile_width as usize * layout.format.texel_bytes();
        source.read_tile(region, &mut expected, row).unwrap();
        assert!(
            data[..] == expected[..],
            "page {page}: the device's texels differ"
        );
    }
    assert!(resident >= 256, "{resident} resident tiles");

    // Host memory: only the fills of a launch (32 at most, plus spare buffers), although
    // the device holds up to the whole budget.
    let fills = 32 * TILE_BYTES as u64;
    println!(
        "model device: peak resident {} KiB (budget {} KiB), peak host tile memory {} KiB, \
         {} publications, {} restores, {} releases",
        stats.peak_resident_bytes >> 10,
        budget >> 10,
        stats.peak_host_tile_bytes >> 10,
        d.publications,
        d.restores,
        d.releases
    );
    assert!(
        stats.peak_host_tile_bytes <= 2 * fills,
        "peak host tile bytes {} for fills of {fills}",
        stats.peak_host_tile_bytes
    );
    assert!(stats.peak_resident_bytes >= 256 * TILE_BYTES as u64);
    assert!(stats.host_tile_bytes <= fills, "{stats:?}");
}

#[test]
fn the_cpu_backend_keeps_every_resident_tile_on_the_host() {
    let budget = 384 * TILE_BYTES as u64;
    let loader = demandtex::Loader::new(options(budget)).unwrap();
    let source = Arc::new(Noise::new(8192, 8192, 3, TexelFormat::RGBA8));
    run_frames(loader.engine(), &source);
    let stats = loader.stats();
    assert!(stats.evictions > 0);
    println!(
        "CPU backend: peak resident {} KiB, peak host tile memory {} KiB",
        stats.peak_resident_bytes >> 10,
        stats.peak_host_tile_bytes >> 10
    );
    // Every slot is a host buffer: the host holds the working set.
    assert!(
        stats.peak_host_tile_bytes >= 256 * TILE_BYTES as u64,
        "{stats:?}"
    );
    assert!(stats.peak_host_tile_bytes <= stats.peak_resident_bytes);
}

#[test]
fn a_texture_sharing_tiles_is_published_after_its_owner_over_its_range() {
    let dir = std::env::temp_dir().join(format!("dtex-seam-share-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.exr"), dir.join("b.exr"));
    let image = demandtex::sources::FloatImage::zeros(1024, 1024, 4);
    let mut image = image;
    for (i, v) in image.data.iter_mut().enumerate() {
        *v = (i % 977) as f32 / 977.0;
    }
    demandtex::sources::exr::write_mip_exr(&a, &image, &Default::default(), None).unwrap();
    std::fs::copy(&a, &b).unwrap();

    // The owner's first publications are put off, so that its sharer, opened meanwhile,
    // is ready first: it must still wait for the owner.
    let device = Arc::new(ModelDevice {
        shares_textures: true,
        owners_not_now: 3.into(),
        ..ModelDevice::default()
    });
    let engine = Engine::new(options(64 << 20), device.clone()).unwrap();
    // The copy is created first: whichever opens first owns, the other shares.
    let textures: Vec<TextureId> = [&b, &a]
        .iter()
        .map(|p| {
            let source = demandtex::sources::file_source(p);
            engine
                .create_texture(source, TextureDesc::default())
                .unwrap()
        })
        .collect();
    for _ in 0..200 {
        engine.publish_pending().unwrap();
        let launch_num = engine.begin_launch().launch_num();
        let table = engine.page_table();
        let all = textures
            .iter()
            .fold(true, |all, t| table.request_and_test(t.0) & all);
        if all {
            break;
        }
        engine.process_requests(launch_num, None).wait();
    }
    let stats = engine.stats();
    let d = device.device.lock();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(d.violations.is_empty(), "{:?}", d.violations);
    assert_eq!(stats.textures_sharing_tiles, 1, "{stats:?}");
    assert_eq!(
        d.sharers.len(),
        1,
        "one texture built over the other's range"
    );
    let (sharer, owner) = d.sharers[0];
    assert_eq!(d.textures.get(&sharer), d.textures.get(&owner));
    assert_eq!(
        engine.shares_tiles_of(TextureId(sharer)),
        Some(TextureId(owner))
    );
}
