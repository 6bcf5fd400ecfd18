//! Synthetic Ptex sets for tests and benchmarks (`demandtex ptex gen`): many files, each a
//! quad grid of faces with adjacency, of mixed resolutions (1×1 to 1024×1024, so large
//! faces are tiled), some constant faces, alternating `u8` RGB and half RGBA files, all
//! deterministic for a seed.
//!
//! Resolutions: about 8% of the faces are constant; the others draw each side's log2 from
//! a distribution centred on 8 to 32 texels (128 to 512 are rare) with the other side
//! within one level, and every file of 16 faces or more has one face of the largest size
//! allowed ([`SyntheticSet::max_log2`], 1024×1024 by default). Texels
//! are smooth ramps per face and channel with a little noise (compressible like painted
//! textures, never uniform).

use super::{PtexWriteOptions, PtexWriter};
use crate::sources::ptex::{DataType, FaceInfo, MeshType, MetaValue, PtexError, Res};
use rayon::prelude::*;
use std::path::{Path, PathBuf};

/// What to generate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyntheticSet {
    /// Number of files.
    pub files: usize,
    /// Faces per file.
    pub faces: u32,
    /// The seed: the same seed gives the same files, byte for byte.
    pub seed: u64,
    /// The largest log2 of a face side (10: up to 1024×1024); sides drawn above it are
    /// clamped to it.
    pub max_log2: i8,
}

/// What was generated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SyntheticTotals {
    /// Files written.
    pub files: usize,
    /// Faces in all.
    pub faces: u64,
    /// Constant faces among them.
    pub constant_faces: u64,
    /// Texels of the non-constant faces at full resolution.
    pub texels: u64,
    /// Bytes of the files on disk.
    pub bytes: u64,
}

/// The name of file `index` of a set.
pub fn synthetic_file_name(index: usize) -> String {
    format!("synthetic_{index:05}.ptx")
}

/// Write `set` into `dir` (created if missing), files in parallel.
pub fn write_synthetic_set(dir: &Path, set: &SyntheticSet) -> Result<SyntheticTotals, PtexError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| super::fail(format!("cannot create {}: {e}", dir.display())))?;
    let parts: Vec<SyntheticTotals> = (0..set.files)
        .into_par_iter()
        .map(|i| write_file(&dir.join(synthetic_file_name(i)), i, set))
        .collect::<Result<_, _>>()?;
    Ok(parts
        .iter()
        .fold(SyntheticTotals::default(), |a, p| SyntheticTotals {
            files: a.files + p.files,
            faces: a.faces + p.faces,
            constant_faces: a.constant_faces + p.constant_faces,
            texels: a.texels + p.texels,
            bytes: a.bytes + p.bytes,
        }))
}

/// SplitMix64: a small, good, deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Cumulative per-mille weights of a side's log2 (0..=9).
const SIDE_LOG2: [u64; 10] = [40, 100, 250, 480, 700, 880, 970, 995, 999, 1000];

fn side_log2(rng: &mut Rng) -> i8 {
    let r = rng.below(1000);
    SIDE_LOG2.iter().position(|&c| r < c).unwrap_or(9) as i8
}

/// The face info of face `id` of a `width`-wide grid of `n` faces.
fn grid_face(id: u32, width: u32, n: u32, res: Res) -> FaceInfo {
    let (x, y) = ((id % width) as i64, (id / width) as i64);
    let at = |x: i64, y: i64| -> i32 {
        if x < 0 || y < 0 || x >= i64::from(width) {
            return -1;
        }
        let f = y * i64::from(width) + x;
        if f < i64::from(n) {
            f as i32
        } else {
            -1
        }
    };
    FaceInfo {
        res,
        // Edge 0 meets the neighbour's edge 2 and 1 meets 3 (and back).
        adjedges: 2 | (3 << 2) | (1 << 6),
        flags: 0,
        adjfaces: [at(x, y - 1), at(x + 1, y), at(x, y + 1), at(x - 1, y)],
    }
}

fn write_file(
    path: &PathBuf,
    index: usize,
    set: &SyntheticSet,
) -> Result<SyntheticTotals, PtexError> {
    let mut rng = Rng(set.seed ^ (index as u64).wrapping_mul(0xd134_2543_de82_ef95));
    let half = index % 2 == 1;
    let options = if half {
        PtexWriteOptions::new(MeshType::Quad, DataType::Half, 4, Some(3))
    } else {
        PtexWriteOptions::new(MeshType::Quad, DataType::U8, 3, None)
    };
    let n = set.faces;
    let width = (f64::from(n).sqrt().ceil() as u32).max(1);
    let mut w = PtexWriter::new(options, n)?;
    let nch = usize::from(options.nchannels);
    let big = (n >= 16).then(|| rng.below(u64::from(n)) as u32);
    let mut totals = SyntheticTotals {
        files: 1,
        faces: u64::from(n),
        ..Default::default()
    };
    for id in 0..n {
        let constant = rng.below(1000) < 80;
        let max = set.max_log2.clamp(0, 10);
        let res = if Some(id) == big {
            Res::new(max, max)
        } else if constant {
            Res::new(rng.below(6) as i8, rng.below(6) as i8)
        } else {
            let u = side_log2(&mut rng);
            let v = (u + rng.below(3) as i8 - 1).clamp(0, 10);
            Res::new(u.min(max), v.min(max))
        };
        let info = grid_face(id, width, n, res);
        let base: Vec<f32> = (0..nch).map(|_| rng.below(1000) as f32 / 1000.0).collect();
        if constant || res.texels() == 1 {
            let texel = encode(&base, half);
            w.write_constant_face(id, info, &texel)?;
            totals.constant_faces += 1;
            continue;
        }
        let (ures, vres) = (res.u(), res.v());
        let mut values = vec![0f32; nch];
        let mut texels = Vec::with_capacity(res.texels() * w.pixel_size());
        let mut noise = Rng(rng.next());
        for v in 0..vres {
            for u in 0..ures {
                let (fu, fv) = (
                    (u as f32 + 0.5) / ures as f32,
                    (v as f32 + 0.5) / vres as f32,
                );
                let jitter = (noise.next() & 3) as f32 / 255.0;
                for (c, value) in values.iter_mut().enumerate() {
                    let ramp = if c % 2 == 0 { fu } else { fv };
                    *value = (0.5 * base[c] + 0.4 * ramp + jitter).min(1.0);
                }
                if half {
                    values[3] = 0.5 + 0.5 * fu.max(fv);
                }
                texels.extend_from_slice(&encode(&values, half));
            }
        }
        totals.texels += res.texels() as u64;
        w.write_face(id, info, &texels)?;
    }
    w.add_meta(
        "demandtex:generator",
        &MetaValue::String("demandtex ptex gen".into()),
    )?;
    w.add_meta("demandtex:seed", &MetaValue::Double(vec![set.seed as f64]))?;
    totals.bytes = w.write_to(path)?;
    Ok(totals)
}

/// One texel in the file's type: `u8` (rounded) or half.
fn encode(values: &[f32], half: bool) -> Vec<u8> {
    if half {
        values
            .iter()
            .flat_map(|&v| crate::sources::ptex::values::f32_to_half(v).to_le_bytes())
            .collect()
    } else {
        values
            .iter()
            .map(|&v| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8)
            .collect()
    }
}
