//! Lat-long environment lookups (`demandtex::sampling::environment`) against OpenImageIO's
//! `TextureSystem::environment` (bench/oiio-replay/environment.cpp, with bilinear
//! interpolation: OpenImageIO's default is bicubic on level 0), where OpenImageIO is
//! installed: a 512×256 float map written with demandtex's tiled mip-map writer, 4,000
//! directions away from the poles (where OpenImageIO fades coarse levels to the pole's
//! average) with differentials from 10⁻⁴ to 0.1 radians (every level, blends between two),
//! isotropic and up to 12 times longer one way than the other (anisotropic probes),
//! through a blocking cache. The values must agree to float rounding; the same lookups with
//! the other up axis must not.

use demandtex::sources::exr::{write_mip_exr, SampleType, WriteOptions};
use demandtex::sources::FloatImage;
use demandtex::{LoaderOptions, SampleOptions, TextureCache, TextureDesc, UpAxis};
use std::path::Path;
use std::process::Command;

mod common;
use common::{oiio_program, temp_dir};

/// A smooth gradient with detail at every scale, values above 1.
fn map() -> FloatImage {
    let (w, h) = (512u32, 256u32);
    let mut img = FloatImage::zeros(w, h, 4);
    for y in 0..h {
        for x in 0..w {
            let (u, v) = (x as f32 / w as f32, y as f32 / h as f32);
            let detail = ((x * 7 + y * 13) % 29) as f32 / 29.0;
            let px = [
                2.0 * u + 0.25 * detail,
                v + 0.5 * ((x / 8 + y / 8) % 2) as f32,
                (6.0 * u).sin() * 0.5 + 0.5 + 0.1 * detail,
                1.0 - 0.5 * v,
            ];
            let at = ((y * w + x) * 4) as usize;
            img.data[at..at + 4].copy_from_slice(&px);
        }
    }
    img
}

/// Deterministic directions away from the poles (|t − 0.5| < 0.3 either way up) with
/// differentials across them: two orthogonal vectors, of one length or of two.
fn queries() -> Vec<[[f32; 3]; 3]> {
    let mut state = 0x9e37_79b9u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    let mut out = Vec::new();
    while out.len() < 4000 {
        let phi = next() * std::f32::consts::TAU;
        let z = (next() - 0.5) * 1.4; // |z| < 0.7: away from both poles
        let r = (1.0 - z * z).sqrt();
        let d = [r * phi.cos(), r * phi.sin(), z];
        // Both up axes keep away from their poles.
        if d[1].abs() > 0.7 {
            continue;
        }
        let a = [1e-4f32, 1e-3, 4e-3, 0.01, 0.03, 0.1][out.len() % 6] * (0.5 + next());
        // An orthonormal pair across d.
        let helper = if d[0].abs() < 0.9 {
            [1.0, 0.0, 0.0]
        } else {
            [0.0, 1.0, 0.0]
        };
        let cross = |p: [f32; 3], q: [f32; 3]| {
            [
                p[1] * q[2] - p[2] * q[1],
                p[2] * q[0] - p[0] * q[2],
                p[0] * q[1] - p[1] * q[0],
            ]
        };
        let unit = |p: [f32; 3]| {
            let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
            p.map(|c| c / l)
        };
        let u = unit(cross(d, helper));
        let v = unit(cross(d, u));
        let scale = 0.5 + 2.0 * next(); // any length of direction
                                        // Every other query anisotropic: dRdy 1 to 12 times as long as dRdx.
        let aniso = if out.len() % 2 == 0 {
            1.0
        } else {
            1.0 + 11.0 * next()
        };
        out.push([
            d.map(|c| c * scale),
            u.map(|c| c * a * scale),
            v.map(|c| c * a * aniso * scale),
        ]);
    }
    out
}

fn demandtex_values(file: &Path, up: UpAxis, qs: &[[[f32; 3]; 3]]) -> Vec<[f32; 4]> {
    let cache = TextureCache::new(LoaderOptions {
        max_texture_memory: 64 << 20,
        ..LoaderOptions::default()
    })
    .unwrap();
    let t = cache
        .texture_for_path(
            file,
            // The most the sampler allows (OpenImageIO: 32; the footprints here stay under 2).
            TextureDesc {
                max_anisotropy: 16,
                ..TextureDesc::default()
            },
        )
        .unwrap();
    let o = SampleOptions::default();
    qs.iter()
        .map(|q| {
            let s = cache.environment(t, q[0], q[1], q[2], up, &o);
            assert!(s.resident);
            s.value
        })
        .collect()
}

#[test]
fn lat_long_lookups_equal_openimageio_s() {
    let Some(program) = oiio_program("environment") else {
        return;
    };
    let dir = temp_dir("environment");

    let file = dir.join("latlong.exr");
    let options = WriteOptions {
        sample_type: SampleType::Float,
        ..WriteOptions::default()
    };
    write_mip_exr(&file, &map(), &options, None).unwrap();
    let qs = queries();
    let bytes: Vec<u8> = qs
        .iter()
        .flat_map(|q| q.iter().flatten().flat_map(|v| v.to_le_bytes()))
        .collect();
    std::fs::write(dir.join("queries.f32"), bytes).unwrap();
    let out = Command::new(&program)
        .arg(&file)
        .arg(dir.join("queries.f32"))
        .arg(dir.join("oiio.f32"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "oiio-environment: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let oiio: Vec<f32> = std::fs::read(dir.join("oiio.f32"))
        .unwrap()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(oiio.len(), qs.len() * 4);

    let largest = |values: &[[f32; 4]]| {
        values
            .iter()
            .flatten()
            .zip(&oiio)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0f32, f32::max)
    };
    // The file has no oiio:updirection: OpenImageIO's default, y up.
    let y = demandtex_values(&file, UpAxis::default(), &qs);
    let z = demandtex_values(&file, UpAxis::Z, &qs);
    let (same, other) = (largest(&y), largest(&z));
    eprintln!(
        "environment: {} lookups, largest difference from OpenImageIO {same:e} (other up axis: {other})",
        qs.len()
    );
    // Float rounding of values up to 2.3, summed over probes and levels in another order.
    assert!(same <= 5e-5, "largest difference {same}");
    assert!(other > 0.1, "the up axis made no difference ({other})");
    let _ = std::fs::remove_dir_all(&dir);
}
