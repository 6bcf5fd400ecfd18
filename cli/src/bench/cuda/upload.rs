//! Tile uploads and sparse mapping on device 0, with the CUDA loader's own pieces but no
//! engine ([`UploadBench`]): 64 KiB tiles of a 16384² RGBA8 texture copied from host memory
//! through the pinned staging ring into the array (wall time to a stream synchronisation),
//! and map / unmap operations, in one `cuMemMapArrayAsync` batch for all tiles and one per
//! tile. Medians over the repetitions.

use super::super::Record;
use super::cuda_error;
use super::kernels::median;
use super::upload_bench::{UploadBench, UploadRound};
use crate::error::CliError;
use demandtex::TILE_BYTES;

/// Tiles per round (256 MiB).
const TILES: u32 = 4096;

/// Run the upload benchmark: one record.
pub fn run(reps: usize) -> Result<Vec<Record>, CliError> {
    let mut bench = UploadBench::new(0, TILES).map_err(cuda_error)?;
    // One round first, unmeasured: arenas created, staging pages touched.
    bench.run().map_err(cuda_error)?;
    let rounds = (0..reps.max(1))
        .map(|_| bench.run())
        .collect::<Result<Vec<UploadRound>, _>>()
        .map_err(cuda_error)?;
    let tiles = TILES as f64;
    let m = |f: &dyn Fn(&UploadRound) -> Option<f64>| {
        let v: Vec<f64> = rounds.iter().filter_map(f).collect();
        (!v.is_empty()).then(|| median(&v))
    };
    let upload = m(&|r| Some(r.upload_seconds)).unwrap_or(f64::NAN);
    let mut figures = vec![
        (
            "upload_gigabytes_per_second",
            tiles * TILE_BYTES as f64 / upload / 1e9,
        ),
        ("upload_tiles_per_second", tiles / upload),
    ];
    if let Some(map) = m(&|r| r.map_seconds) {
        figures.push(("batched_map_ops_per_second", tiles / map));
    }
    if let Some(single) = m(&|r| r.single_maps.map(|(n, s)| n as f64 / s)) {
        figures.push(("single_map_ops_per_second", single));
    }
    if let Some(unmap) = m(&|r| r.unmap_seconds) {
        figures.push(("batched_unmap_ops_per_second", tiles / unmap));
    }
    figures.push(("repetitions", rounds.len() as f64));
    let kind = if bench.is_sparse() {
        "sparse"
    } else {
        "dense, no mapping"
    };
    Ok(vec![Record {
        bench: "cuda upload",
        case: format!("{TILES} tiles of 64 KiB, 16384² RGBA8 ({kind})"),
        threads: 1,
        figures,
    }])
}
