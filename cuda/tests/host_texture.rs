//! Host emulation test of the device texture lookups `dtex::tex2DGrad`, `dtex::tex2DLod`,
//! `dtex::tex2DGradUdim` and `dtex::environment` (include/demandtex/device/texture.cuh,
//! udim.cuh, environment.cuh), no GPU needed:
//! the device headers are compiled by the host C++ compiler after
//! tests/cuda-host/dtex_host_shim.h (a one-lane "warp", texture objects over host arrays
//! with the filtering texture.cuh asks of the hardware, exact float weights) into
//! tests/cuda-host/texture_host.cpp.
//!
//! A CPU loader streams a few textures (RGBA8, one-channel float, two-channel 16-bit,
//! RGBA half; wrap, clamp, mirror and border addressing; linear and point filters; up to 8×
//! anisotropy; a lat-long map, wrapped in s and clamped in t, looked up by direction as
//! well) and a UDIM grid (3 × 2 tiles, one a hole, and a base texture) until the
//! pages some lookups touch are resident and the rest are not. Its page table at one
//! launch -- entries, residence bits, each open texture's sampler record and its levels --
//! goes to the program with a few thousand lookups (gradients from a fraction of a texel
//! to the whole texture, explicit levels of detail, the coarser fallback, stochastic
//! filtering, UDIM tiles, holes, the outside of the grid and distant lookups, unknown ids,
//! a texture never opened, NaN), and each
//! answer is compared with core's CPU sampler over the same launch:
//!
//! - the pages the lookup requested (the reference bits it set, which become the launch's
//!   requests) equal the pages the CPU lookup found missing: so a GPU render asks for
//!   exactly the pages a CPU render asks for, and converges the same way;
//! - residency is the same;
//! - values agree within 2e-5 (relative above 1): the emulation's hardware filter uses exact
//!   weights, so what is left is the order of float operations. (Real hardware quantises
//!   its bilinear and level weights to 8-bit fractions, so a comparison on a device must
//!   allow about 1/256 of a texel step; the pages requested do not depend on it.)
//!
//! The same lookups run first with the interactive mode's request rejection (a threshold
//! rejecting three in four new requests, each lookup's request key its block in the
//! program's grid, the reference bits building up over the lookups as over a launch, every
//! use recorded): each lookup sets the same new reference bits on both sides, with the same
//! residency and value, and the device's count of rejected requests equals core's (a page
//! already requested in the launch is never rejected: that changes only the count).
//!
//! `cargo test -p demandtex-cuda --test host_texture -- --nocapture` prints a summary per
//! texture. Without a C++ compiler it fails, unless `DEMANDTEX_SKIP_HOST_CUDA=1`.

use demandtex::paging::device_context::CONTEXT_FLAG_COUNT_REQUESTS;
use demandtex::paging::CONTEXT_FLAG_REQUEST_IF_RESIDENT;
use demandtex::sampling::environment::{environment, UpAxis};
use demandtex::sampling::Rejection;
use demandtex::sampling::{tex2d_grad, tex2d_lod, CpuView, MissList, Sample, SampleOptions};
use demandtex::sources::ImageSource;
use demandtex::sources::InMemoryImage;
use demandtex::textures::{
    AddressMode, FilterMode, MipFilter, TexelFormat, TexelType, TextureDesc, TextureSampler,
};
use demandtex::udim::{tex2d_grad_udim, tile_desc, UdimGrid, UdimId};
use demandtex::{Launch, Loader, LoaderOptions, TextureId, TILE_BYTES};
use std::collections::BTreeSet;
use std::sync::Arc;

mod host_support;
use host_support::{
    compile_host_program, lookup_answers_start, put, run_host_program, sampler_bytes, word, Rng,
};

/// One texture of the test: its size, format and sampling description.
struct Case {
    name: &'static str,
    width: u32,
    height: u32,
    format: TexelFormat,
    desc: TextureDesc,
}

/// The textures: every texel format's channel expansions, every address mode, both
/// filters, anisotropy, sizes that are not powers of two.
fn cases() -> Vec<Case> {
    let format = |texel_type, channels| TexelFormat {
        texel_type,
        channels,
    };
    let desc = |address, filter, mip_filter, max_anisotropy| TextureDesc {
        address,
        filter,
        mip_filter,
        max_anisotropy,
        ..TextureDesc::default()
    };
    use AddressMode::{Border, Clamp, Mirror, Wrap};
    vec![
        Case {
            name: "rgba8 wrap linear aniso 8",
            width: 700,
            height: 500,
            format: format(TexelType::U8, 4),
            desc: desc([Wrap, Wrap], FilterMode::Linear, MipFilter::Linear, 8),
        },
        Case {
            name: "f32 x1 clamp/mirror linear",
            width: 300,
            height: 260,
            format: format(TexelType::F32, 1),
            desc: desc([Clamp, Mirror], FilterMode::Linear, MipFilter::Linear, 4),
        },
        Case {
            name: "u16 x2 border/clamp point",
            width: 257,
            height: 190,
            format: format(TexelType::U16, 2),
            desc: desc([Border, Clamp], FilterMode::Point, MipFilter::Point, 1),
        },
        Case {
            name: "rgba8 lat-long wrap/clamp linear aniso 16",
            width: 512,
            height: 256,
            format: format(TexelType::U8, 4),
            desc: desc([Wrap, Clamp], FilterMode::Linear, MipFilter::Linear, 16),
        },
        Case {
            name: "f16 x4 mirror/border linear, point mips",
            width: 512,
            height: 384,
            format: format(TexelType::F16, 4),
            desc: desc([Mirror, Border], FilterMode::Linear, MipFilter::Point, 2),
        },
    ]
}

/// Texels distinct enough that a wrong texel, weight or level shows: smooth ramps plus a
/// per-texel hash, in [0, 1] (half and float textures also go up to 3).
fn image(case: &Case, seed: u32) -> InMemoryImage {
    let (w, h) = (case.width, case.height);
    let scale = match case.format.texel_type {
        TexelType::F16 | TexelType::F32 => 3.0,
        _ => 1.0,
    };
    let pixels: Vec<[f32; 4]> = (0..w * h)
        .map(|i| {
            let (x, y) = (i % w, i / w);
            let hash = (i ^ seed).wrapping_mul(0x9E37_79B9).rotate_left(11);
            let noise = (hash >> 24) as f32 / 255.0;
            [
                scale * (x as f32 / w as f32 * 0.7 + noise * 0.3),
                scale * (y as f32 / h as f32 * 0.7 + (1.0 - noise) * 0.3),
                ((x + 3 * y + seed) % 17) as f32 / 16.0,
                0.25 + 0.75 * (((x * 7 + y * 13) % 11) as f32 / 10.0),
            ]
        })
        .collect();
    InMemoryImage::from_rgba_f32(w, h, case.format, &pixels, true).expect("the test image")
}

/// One lookup: a texture (a UDIM texture with `udim`), a point, a footprint (gradients, or
/// a level of detail in `d[0]` with `lod`), and options.
#[derive(Clone, Copy, Debug)]
struct Lookup {
    texture: u32,
    s: f32,
    t: f32,
    d: [f32; 4],
    lod: bool,
    udim: bool,
    fallback: bool,
    stochastic: Option<[f32; 2]>,
    /// An environment lookup: the direction, its differentials and the up axis (then `s`,
    /// `t` and `d` are unused).
    env: Option<EnvQuery>,
}

/// An environment lookup's direction, differentials (x, y) and up axis.
type EnvQuery = ([f32; 3], [f32; 3], [f32; 3], UpAxis);

/// Deterministic lookups of `texture` (`levels` levels): points inside and beyond [0, 1]
/// (the address modes), on texel edges and centres of every level; gradients from 0 to
/// past the whole texture, isotropic, anisotropic, skewed; explicit levels from below 0 to
/// past the last; the coarser fallback and stochastic filtering drawn at random.
fn lookups(texture: u32, size: (u32, u32), levels: u32, n: u32, rng: &mut Rng) -> Vec<Lookup> {
    (0..n)
        .map(|i| {
            let (s, t) = match i % 4 {
                0 | 1 => (rng.unit() * 1.6 - 0.3, rng.unit() * 1.6 - 0.3),
                2 => {
                    // A texel edge or centre of a random level.
                    let l = rng.bits() % levels;
                    let (w, h) = ((size.0 >> l).max(1) as f32, (size.1 >> l).max(1) as f32);
                    let half = if rng.bits() & 1 == 0 { 0.0 } else { 0.5 };
                    (
                        ((rng.unit() * w).floor() + half) / w,
                        ((rng.unit() * h).floor() + half) / h,
                    )
                }
                _ => {
                    let sides = [0.0, 1.0, 0.5, -0.0, 1.0 - f32::EPSILON, 2.0, -1.0];
                    let k = rng.bits() as usize;
                    (sides[k % 7], sides[k / 7 % 7])
                }
            };
            let b = rng.bits();
            let lod = b & 7 == 0;
            let d = if lod {
                [rng.unit() * (levels as f32 + 2.0) - 1.0, 0.0, 0.0, 0.0]
            } else {
                let w = [0.0, 1e-4, 1e-3, 4e-3, 0.02, 0.1, 0.4, 1.5][(b >> 3) as usize % 8];
                let mut d = [w * rng.unit(), 0.0, 0.0, w * rng.unit()];
                match (b >> 6) & 3 {
                    1 => d[3] *= 0.08,
                    2 => d[0] *= 0.08,
                    _ => {}
                }
                if b & 0x100 != 0 {
                    d[1] = w * (rng.unit() - 0.5);
                    d[2] = w * (rng.unit() - 0.5);
                }
                d
            };
            Lookup {
                texture,
                s,
                t,
                d,
                lod,
                udim: false,
                fallback: b & 0x200 != 0,
                stochastic: (b & 0xC00 == 0xC00).then(|| [rng.unit(), rng.unit()]),
                env: None,
            }
        })
        .collect()
}

/// Deterministic environment lookups of `texture`: directions over the whole sphere (poles
/// and seam included) of any length, differentials from 10⁻⁵ radians to past the whole map,
/// isotropic and up to 40:1 (past the texture's largest anisotropy), either way up, with
/// the coarser fallback and stochastic filtering drawn at random.
fn env_lookups(texture: u32, n: u32, rng: &mut Rng) -> Vec<Lookup> {
    (0..n)
        .map(|i| {
            let z = rng.unit() * 2.0 - 1.0;
            let phi = rng.unit() * std::f32::consts::TAU;
            let rho = (1.0 - z * z).max(0.0).sqrt();
            let scale = 0.25 + 4.0 * rng.unit();
            let mut r = [rho * phi.cos(), rho * phi.sin(), z].map(|c| c * scale);
            if i % 17 == 0 {
                // Exactly at a pole or on the seam, either way up.
                r = [
                    [0.0, 1.0, 0.0],
                    [0.0, 0.0, -1.0],
                    [-1.0, 0.0, 1e-7],
                    [1.0, 0.0, 0.0],
                ][(i / 17) as usize % 4];
            }
            let b = rng.bits();
            let w = [1e-5, 1e-4, 1e-3, 4e-3, 0.02, 0.1, 0.5, 3.0][(b as usize) % 8] * scale;
            let aniso = [1.0, 1.0, 1.5, 4.0, 40.0][(b >> 3) as usize % 5];
            let mut d = || [rng.unit() - 0.5, rng.unit() - 0.5, rng.unit() - 0.5];
            let (dx, dy) = (d(), d());
            let drdx = dx.map(|c| c * w);
            let drdy = dy.map(|c| c * w * aniso);
            let up = if b & 0x100 != 0 { UpAxis::Z } else { UpAxis::Y };
            Lookup {
                texture,
                s: r[0],
                t: r[1],
                d: [0.0; 4],
                lod: false,
                udim: false,
                fallback: b & 0x200 != 0,
                stochastic: (b & 0xC00 == 0xC00).then(|| [rng.unit(), rng.unit()]),
                env: Some((r, drdx, drdy, up)),
            }
        })
        .collect()
}

/// Core's answer to `l` through `view` (the request key `request_key(l)`, which matters
/// only with rejection).
fn sample(view: CpuView<'_>, l: &Lookup) -> Sample {
    let options = SampleOptions {
        fallback_to_coarser: l.fallback,
        stochastic: l.stochastic,
        request_key: request_key(l),
    };
    let id = TextureId(l.texture);
    let (ddx, ddy) = ([l.d[0], l.d[1]], [l.d[2], l.d[3]]);
    if let Some((r, drdx, drdy, up)) = l.env {
        environment(view, id, r, drdx, drdy, up, &options)
    } else if l.lod {
        tex2d_lod(view, id, l.s, l.t, l.d[0], &options)
    } else if l.udim {
        tex2d_grad_udim(view, UdimId(l.texture), l.s, l.t, ddx, ddy, &options)
    } else {
        tex2d_grad(view, id, l.s, l.t, ddx, ddy, &options)
    }
}

/// Core's answer to `l` in `launch`, and the pages it found missing (`None` if more than a
/// `MissList` holds).
fn cpu_lookup(launch: &Launch, l: &Lookup) -> (Sample, Option<BTreeSet<u32>>) {
    let misses = MissList::new();
    let sample = sample(launch.view().with_misses(&misses), l);
    let full = misses.len() == demandtex::sampling::MISS_LIST_CAPACITY;
    let pages = (!full).then(|| misses.pages().map(|p| p.0).collect());
    (sample, pages)
}

/// The program's input (format: texture_host.cpp) for `launch`'s page table, the open
/// textures among `textures` (id, image) and `lookups`.
fn input(
    launch: &Launch,
    textures: &[(TextureId, &InMemoryImage)],
    lookups: &[Lookup],
    rejection: Option<u32>,
) -> Vec<u8> {
    let ctx = launch.device_context();
    let entries = ctx.page_table_entries as usize;
    let words = (ctx.num_pages as usize).div_ceil(32);
    // SAFETY: the context's arrays hold `page_table_entries` entries and `num_pages` bits
    // and live as long as the launch, which is borrowed; nothing writes them meanwhile
    // (this thread runs no lookup and no `process_requests` while reading them).
    let (table, residence) = unsafe {
        (
            std::slice::from_raw_parts(ctx.page_table, entries).to_vec(),
            std::slice::from_raw_parts(ctx.residence_bits, words).to_vec(),
        )
    };
    let mut b = b"DTXTEX03".to_vec();
    put(
        &mut b,
        &[ctx.max_textures, ctx.page_table_entries, ctx.num_pages],
    );
    match rejection {
        // Every use recorded (as core's lookups record it), the launch's number, the
        // threshold; the reference bits build up over the lookups from the launch's.
        Some(threshold) => put(
            &mut b,
            &[
                CONTEXT_FLAG_REQUEST_IF_RESIDENT | CONTEXT_FLAG_COUNT_REQUESTS,
                ctx.launch_num,
                threshold,
                1,
            ],
        ),
        None => put(&mut b, &[0, 0, 0, 0]),
    }
    put(&mut b, &[entries as u32]);
    b.extend(table.iter().flat_map(|e| e.to_le_bytes()));
    put(&mut b, &[words as u32]);
    put(&mut b, &residence);
    match rejection {
        // SAFETY: as above; this thread runs no lookup while reading them.
        Some(_) => {
            let reference = unsafe { std::slice::from_raw_parts(ctx.reference_bits, words) };
            put(&mut b, &[words as u32]);
            put(&mut b, reference);
        }
        None => put(&mut b, &[0]),
    }
    let resident = |page: u32| residence[page as usize / 32] >> (page % 32) & 1 != 0;
    let open: Vec<_> = textures
        .iter()
        .filter(|(id, _)| resident(id.0) && table[id.0 as usize] != 0)
        .collect();
    put(&mut b, &[open.len() as u32]);
    for (id, image) in open {
        // SAFETY: a resident sampler page's nonzero entry is the address of the texture's
        // `TextureSampler`, which the engine keeps for its life (the loader outlives this).
        let sampler = unsafe { &*(table[id.0 as usize] as *const TextureSampler) };
        put(&mut b, &[id.0]);
        b.extend(sampler_bytes(sampler));
        put(&mut b, &[image.num_levels()]);
        for l in 0..image.num_levels() {
            let (w, h, bytes) = image.level(l).expect("a level of the image");
            put(&mut b, &[w, h]);
            let format = image.format();
            let texel = format.texel_bytes();
            for t in bytes.chunks_exact(texel) {
                // As the hardware reads it: normalised floats, the channels as stored.
                put(&mut b, &format.decode(t).map(f32::to_bits));
            }
        }
    }
    put(&mut b, &[lookups.len() as u32]);
    for l in lookups {
        let flags = u32::from(l.lod)
            | u32::from(l.fallback) << 1
            | u32::from(l.stochastic.is_some()) << 2
            | u32::from(l.udim) << 3
            | u32::from(l.env.is_some()) << 4
            | u32::from(l.env.is_some_and(|e| e.3 == UpAxis::Z)) << 5
            | request_key(l) << 16;
        let jitter = l.stochastic.unwrap_or([0.5, 0.5]);
        put(&mut b, &[l.texture, l.s.to_bits(), l.t.to_bits()]);
        put(&mut b, &l.d.map(f32::to_bits));
        put(&mut b, &[flags, jitter[0].to_bits(), jitter[1].to_bits()]);
        let (r, drdx, drdy, _) = l.env.unwrap_or(([0.0; 3], [0.0; 3], [0.0; 3], UpAxis::Y));
        for v in [r, drdx, drdy] {
            put(&mut b, &v.map(f32::to_bits));
        }
    }
    b
}

/// One answer of the program: the value, residency and the pages requested.
struct Answer {
    value: [f32; 4],
    resident: bool,
    pages: BTreeSet<u32>,
}

/// Parse the program's output (format: texture_host.cpp): the answers, and the request
/// counters (standing, rejected).
fn answers(bytes: &[u8], n: usize) -> (Vec<Answer>, [u32; 2]) {
    let word = |i: usize| word(bytes, i);
    let mut at = lookup_answers_start(bytes, b"DTXTOUT1", n);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let value = std::array::from_fn(|c| f32::from_bits(word(at + 4 * c)));
        let resident = word(at + 16) != 0;
        let count = word(at + 20) as usize;
        let pages = (0..count).map(|k| word(at + 24 + 4 * k)).collect();
        at += 24 + 4 * count;
        out.push(Answer {
            value,
            resident,
            pages,
        });
    }
    let counts = [word(at), word(at + 4)];
    assert_eq!(at + 8, bytes.len(), "texture_host's output length");
    (out, counts)
}

/// Launch after launch, look up `warm` and serve the requests until no lookup misses (at
/// most 8 launches): the pages those lookups touch are then resident.
fn warm_up(loader: &Loader, warm: &[Lookup]) {
    for _ in 0..8 {
        let launch = loader.launch_prepare();
        let missed = warm
            .iter()
            .filter(|l| !cpu_lookup(&launch, l).0.resident)
            .count();
        loader.process_requests(launch).wait();
        if missed == 0 {
            return;
        }
    }
    panic!("the warm-up lookups did not converge in 8 launches");
}

/// A UDIM grid of 3 × 2 tiles, one a hole, of different sizes and formats, and a base
/// texture: (the grid, the tiles' images row by row, the base's image).
fn udim_grid() -> (UdimGrid, Vec<Option<InMemoryImage>>, InMemoryImage) {
    let rgba8 = TexelFormat {
        texel_type: TexelType::U8,
        channels: 4,
    };
    let half = TexelFormat {
        texel_type: TexelType::F16,
        channels: 4,
    };
    let tile = |w, h, format, seed| {
        let case = Case {
            name: "udim tile",
            width: w,
            height: h,
            format,
            desc: tile_desc(),
        };
        Some(image(&case, seed))
    };
    let images = vec![
        tile(200, 150, rgba8, 1),
        None,
        tile(130, 100, rgba8, 2),
        tile(96, 200, half, 3),
        tile(300, 60, rgba8, 4),
        tile(64, 64, half, 5),
    ];
    let base = image(
        &Case {
            name: "udim base",
            width: 256,
            height: 128,
            format: rgba8,
            desc: tile_desc(),
        },
        6,
    );
    let grid = UdimGrid {
        width: 3,
        height: 2,
        tiles: images
            .iter()
            .map(|i| {
                i.as_ref()
                    .map(|i| Arc::new(i.clone()) as Arc<dyn ImageSource>)
            })
            .collect(),
        base: Some(Arc::new(base.clone())),
    };
    (grid, images, base)
}

/// UDIM lookups of `udim` (a 3 × 2 grid): `lookups` spread over [-0.9, 3.9] × [-0.6, 2.6],
/// gradients only.
fn udim_lookups(udim: UdimId, n: u32, rng: &mut Rng) -> Vec<Lookup> {
    lookups(udim.0, (256, 128), 9, n, rng)
        .into_iter()
        .map(|mut l| {
            (l.s, l.t, l.udim) = (l.s * 3.0, l.t * 2.0, true);
            if l.lod {
                (l.lod, l.d) = (false, [1e-3, 0.0, 0.0, 2e-3]);
            }
            l
        })
        .collect()
}

/// A lookup's request key (its pixel, for rejection): from its point, below 2^16 (the
/// program runs the lookup as that block of its grid, whose index is the device's key).
fn request_key(l: &Lookup) -> u32 {
    (l.s.to_bits() ^ l.t.to_bits().rotate_left(7)) % 509
}

/// The interactive mode's request rejection, device against core: the lookups run with a
/// rejection threshold over `launch` (each with its request key), the
/// reference bits building up over them from the launch's as over a real launch, both
/// sides recording every use. Each lookup must set the same new reference bits (its uses
/// and its requests that were not rejected) and give the same residency and value.
fn check_rejection(
    exe: &std::path::Path,
    loader: &Loader,
    launch: &Launch,
    textures: &[(TextureId, &InMemoryImage)],
    lookups: &[Lookup],
) {
    let ctx = launch.device_context();
    let words = (ctx.num_pages as usize).div_ceil(32);
    // The words a lookup can set (as the program reads them): the entry pages', and each
    // open texture's page range (reading the sampler entries records their use: before the
    // program's copy of the reference bits is taken).
    let mut spans = vec![(0, (ctx.page_table_entries as usize).div_ceil(32))];
    for (id, _) in textures {
        let entry = launch.map_or_request(demandtex::PageId(id.0)).unwrap_or(0);
        if entry != 0 {
            // SAFETY: a resident sampler page's nonzero entry is the address of the
            // texture's `TextureSampler`, which the engine keeps for its life.
            let s = unsafe { &*(entry as *const TextureSampler) };
            let end = (s.start_page + s.num_pages) as usize;
            spans.push((s.start_page as usize / 32, end.div_ceil(32)));
        }
    }
    // Three in four new requests rejected.
    let threshold = 0xC000_0000;
    let output = run_host_program(
        exe,
        "rejection",
        &input(launch, textures, lookups, Some(threshold)),
    );
    let (got, [_, device_rejected]) = answers(&output, lookups.len());
    // SAFETY: the launch's reference bits (`words` of them) live as long as the launch; this
    // thread's lookups are the only writers, and none runs while they are read.
    let all = unsafe { std::slice::from_raw_parts(ctx.reference_bits, words) };
    let reference = || -> Vec<(usize, u32)> {
        spans
            .iter()
            .flat_map(|&(from, to)| (from..to).map(|w| (w, all[w])))
            .collect()
    };
    let rejection = Rejection {
        gate: loader.engine().request_gate(),
        threshold,
        launch_num: launch.launch_num(),
        key: 0,
    };
    let gate = loader.engine().request_gate();
    let rejected_before = gate.rejected();
    let (mut failures, mut quiet) = (Vec::new(), 0u32);
    for (i, (l, a)) in lookups.iter().zip(&got).enumerate() {
        let before = reference();
        let want = sample(launch.view().with_rejection(rejection), l);
        let after = reference();
        let set: BTreeSet<u32> = before
            .iter()
            .zip(&after)
            .flat_map(|(&(w, old), &(_, now))| {
                let new = now & !old;
                (0..32)
                    .filter(move |b| new >> b & 1 != 0)
                    .map(move |b| (w * 32) as u32 + b)
            })
            .collect();
        // Missed without a new request: its pages requested before, or rejected.
        quiet += u32::from(!want.resident && set.is_empty());
        let same_value =
            a.value.iter().zip(&want.value).all(|(g, w)| {
                g.to_bits() == w.to_bits() || (g - w).abs() <= 2e-5 * w.abs().max(1.0)
            });
        if a.pages != set || a.resident != want.resident || !same_value {
            failures.push(format!(
                "lookup {i} {l:?}: device set {:?}, resident {}, {:?}; core {set:?}, {want:?}",
                a.pages, a.resident, a.value
            ));
        }
    }
    let rejected = gate.rejected() - rejected_before;
    println!(
        "host_texture: rejection at {threshold:#x}: {} lookups, {rejected} requests rejected, \
         {quiet} lookups missed without a new request",
        lookups.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} lookups differ with rejection:\n{}",
        failures.len(),
        lookups.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    assert!(
        rejected > 10,
        "the threshold rejected too little to test: {rejected}"
    );
    // The same requests rejected, counted: a request of a page already requested in the
    // launch is never rejected (it stands).
    assert_eq!(
        u64::from(device_rejected),
        rejected,
        "requests rejected, device against core"
    );
}

#[test]
fn device_lookups_request_the_pages_the_cpu_requests_and_agree_in_value() {
    let Some(exe) = compile_host_program("texture_host") else {
        return;
    };
    let cases = cases();
    // Room for every page: nothing is evicted while the test warms up.
    let loader = Loader::new(LoaderOptions {
        max_texture_memory: 4096 * TILE_BYTES as u64,
        fill_threads: 2,
        ..LoaderOptions::default()
    })
    .expect("a CPU loader");
    let images: Vec<InMemoryImage> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| image(c, i as u32 * 101 + 7))
        .collect();
    let ids: Vec<TextureId> = cases
        .iter()
        .zip(&images)
        .map(|(c, img)| {
            loader
                .engine()
                .create_texture(Arc::new(img.clone()), c.desc)
                .expect("registering a texture")
        })
        .collect();
    // One more texture, never looked up before the snapshot: its sampler page is missing.
    let unopened = loader
        .engine()
        .create_texture(Arc::new(images[0].clone()), cases[0].desc)
        .expect("registering a texture");
    let (grid, tile_images, base_image) = udim_grid();
    let udim = loader
        .engine()
        .create_udim_texture(grid, tile_desc())
        .expect("registering a UDIM texture");

    // Warm up with lookups over the left half of each texture (s < 0.5), a quarter of them
    // at coarse levels, and over the UDIM grid's first column and a half: the rest's fine
    // tiles stay missing.
    let mut rng = Rng(0x1234_5678);
    let mut warm = Vec::new();
    for (case, id) in cases.iter().zip(&ids) {
        let levels = images[id.0 as usize].num_levels();
        for mut l in lookups(id.0, (case.width, case.height), levels, 300, &mut rng) {
            l.s = (l.s.rem_euclid(1.0)) * 0.49;
            l.t = l.t.rem_euclid(1.0);
            l.stochastic = None;
            warm.push(l);
        }
    }
    for mut l in udim_lookups(udim, 300, &mut rng) {
        l.s = l.s.rem_euclid(1.5);
        l.stochastic = None;
        warm.push(l);
    }
    warm_up(&loader, &warm);

    let mut all = Vec::new();
    for (case, id) in cases.iter().zip(&ids) {
        let levels = images[id.0 as usize].num_levels();
        all.extend(lookups(
            id.0,
            (case.width, case.height),
            levels,
            1500,
            &mut rng,
        ));
    }
    // Environment lookups of the lat-long map (and of an unknown id, of non-finite
    // directions, and of a texture never opened).
    let latlong = cases
        .iter()
        .position(|c| c.name.contains("lat-long"))
        .expect("the lat-long case");
    let mut env = env_lookups(ids[latlong].0, 1500, &mut rng);
    let mut odd_env = env_lookups(ids[latlong].0, 40, &mut rng);
    for (i, l) in odd_env.iter_mut().enumerate() {
        let e = l.env.as_mut().expect("an environment lookup");
        match i % 4 {
            0 => l.texture = 1 << 30,
            1 => e.0[0] = f32::NAN,
            2 => e.2[1] = f32::INFINITY,
            _ => l.texture = unopened.0,
        }
    }
    env.extend(odd_env);
    all.extend(env);
    all.extend(lookups(unopened.0, (700, 500), 10, 40, &mut rng));
    all.extend(udim_lookups(udim, 1500, &mut rng));
    // Unknown ids, and non-finite inputs.
    let mut odd = lookups(ids[0].0, (700, 500), 10, 40, &mut rng);
    odd.extend(udim_lookups(udim, 40, &mut rng));
    for (i, l) in odd.iter_mut().enumerate() {
        match i % 4 {
            0 => l.texture = 1 << 30,
            1 => l.s = f32::NAN,
            2 => l.d[0] = f32::INFINITY,
            _ => l.t = f32::NEG_INFINITY,
        }
    }
    all.extend(odd);

    let launch = loader.launch_prepare();
    // The grid's textures: tile (col, row) is `first + row * 3 + col`, the base its own.
    let entry = launch
        .map_or_request(demandtex::PageId(udim.0))
        .expect("a UDIM texture's entry is resident");
    let (first, base) = ((entry & 0xFF_FFFF) as u32, (entry >> 24 & 0xFF_FFFF) as u32);
    let textures: Vec<(TextureId, &InMemoryImage)> = ids
        .iter()
        .copied()
        .zip(&images)
        .chain([(unopened, &images[0]), (TextureId(base), &base_image)])
        .chain(
            tile_images
                .iter()
                .enumerate()
                .filter_map(|(k, i)| Some((TextureId(first + k as u32), i.as_ref()?))),
        )
        .collect();
    check_rejection(&exe, &loader, &launch, &textures, &all);
    let output = run_host_program(&exe, "lookups", &input(&launch, &textures, &all, None));
    let (got, counts) = answers(&output, all.len());
    assert_eq!(
        counts,
        [0, 0],
        "requests counted without DTEX_CONTEXT_FLAG_COUNT_REQUESTS"
    );

    let mut failures = Vec::new();
    // Per kind of lookup: lookups, resident, with requests, pages compared, max diff.
    let mut stats = std::collections::BTreeMap::<String, (u32, u32, u32, u32, f32)>::new();
    for (i, (l, a)) in all.iter().zip(&got).enumerate() {
        let (want, pages) = cpu_lookup(&launch, l);
        let kind = match ids.iter().position(|id| id.0 == l.texture) {
            _ if l.env.is_some() => "environment".to_owned(),
            _ if l.udim => "udim".to_owned(),
            Some(k) => cases[k].name.to_owned(),
            None if l.texture == unopened.0 => "never opened".to_owned(),
            None => "unknown id".to_owned(),
        };
        let st = stats.entry(kind).or_default();
        st.0 += 1;
        st.1 += u32::from(want.resident);
        st.2 += u32::from(!a.pages.is_empty());
        let mut fail = |what: String| failures.push(format!("lookup {i} {l:?}: {what}"));
        if a.resident != want.resident {
            fail(format!(
                "device resident {}, core {}",
                a.resident, want.resident
            ));
        }
        if let Some(pages) = pages {
            st.3 += 1;
            if a.pages != pages {
                fail(format!("device requested {:?}, core {:?}", a.pages, pages));
            }
        }
        for (c, (&g, &w)) in a.value.iter().zip(&want.value).enumerate() {
            let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
            let diff = if same { 0.0 } else { (g - w).abs() };
            st.4 = st.4.max(diff);
            if !(same || diff <= 2e-5 * w.abs().max(1.0)) {
                fail(format!("channel {c}: device {g:e}, core {w:e}"));
            }
        }
    }
    for (kind, (n, resident, requesting, compared, max)) in &stats {
        println!(
            "host_texture: {kind}: {n} lookups, {resident} resident, {requesting} with requests, \
             pages compared in {compared}, max |device - core| {max:e}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} lookups differ:\n{}",
        failures.len(),
        all.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    // The test is only worth its name if lookups of both kinds ran, UDIM ones too.
    let (resident, requesting): (u32, u32) =
        stats.values().fold((0, 0), |(r, q), s| (r + s.1, q + s.2));
    assert!(resident > 1000 && requesting > 500, "{stats:?}");
    let u = stats["udim"];
    assert!(u.1 > 300 && u.2 > 100, "udim: {u:?}");
    let e = stats["environment"];
    assert!(e.1 > 300 && e.2 > 100, "environment: {e:?}");
}
