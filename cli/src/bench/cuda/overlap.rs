//! Whether the host's share of a tile publication can run while a kernel runs: the host
//! time of submitting each kind of publication operation to a stream that is idle, to the
//! same stream busy with earlier device work, and to a second stream while the first is
//! busy. An operation whose submission waits for the device work in front of it costs the
//! frame that work's length wherever it is issued on that stream (`docs/GPU.md`). The busy
//! work is a device-to-device copy (no kernel of our own needed), timed by itself first.
//! Figures only (`demandtex bench --backend cuda`, section upload).

use super::super::Record;
use super::cuda_error;
use super::kernels::median;
use super::upload_bench::UploadBench;
use crate::error::CliError;
use demandtex_cuda::cudarc::driver::{CudaSlice, CudaStream};
use demandtex_cuda::safe;
use std::sync::Arc;
use std::time::Instant;

/// Operations submitted per measurement.
const OPS: u32 = 32;
/// Bytes of the busy copy (each way): a few milliseconds on a current GPU.
const BUSY_BYTES: usize = 4 << 30;

/// Submit one kind of operation to a stream.
type Submit = fn(&mut UploadBench, &Arc<CudaStream>) -> demandtex::Result<()>;

/// The busy work: one large device-to-device copy on a stream.
struct Busy {
    src: CudaSlice<u8>,
    dst: CudaSlice<u8>,
}

impl Busy {
    fn new(stream: &Arc<CudaStream>) -> demandtex::Result<Busy> {
        let alloc = || {
            safe("allocating the busy copy", || {
                stream.alloc_zeros::<u8>(BUSY_BYTES)
            })
        };
        Ok(Busy {
            src: alloc()?,
            dst: alloc()?,
        })
    }

    /// Enqueue the copy on `stream`.
    fn enqueue(&mut self, stream: &Arc<CudaStream>) -> demandtex::Result<()> {
        safe("cuMemcpyDtoDAsync", || {
            stream.memcpy_dtod(&self.src, &mut self.dst)
        })
    }
}

/// Host seconds of `submit` on an idle stream, behind the busy copy on the same stream,
/// and on a second stream while the first is busy: the medians over `reps`.
fn measure(
    reps: usize,
    bench: &mut UploadBench,
    busy: &mut Busy,
    other: &Arc<CudaStream>,
    (submit, mapped_first): (Submit, bool),
) -> demandtex::Result<[f64; 3]> {
    let main = bench.stream().clone();
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..reps.max(1) {
        for (k, t) in times.iter_mut().enumerate() {
            bench.reset(mapped_first)?;
            if k > 0 {
                busy.enqueue(&main)?;
            }
            let on = if k == 2 { other } else { &main };
            let start = Instant::now();
            submit(bench, on)?;
            t.push(start.elapsed().as_secs_f64());
            safe("cuStreamSynchronize", || main.synchronize())?;
            safe("cuStreamSynchronize", || other.synchronize())?;
        }
    }
    Ok(times.map(|t| median(&t)))
}

/// Run the overlap measurements on device 0: one record per kind of operation.
pub fn run(reps: usize) -> Result<Vec<Record>, CliError> {
    let mut bench = UploadBench::new(0, OPS).map_err(cuda_error)?;
    let main = bench.stream().clone();
    let other = safe("cuStreamCreate", || main.context().new_stream()).map_err(cuda_error)?;
    let mut busy = Busy::new(&main).map_err(cuda_error)?;
    // The busy copy's own length.
    let busy_ms = {
        let mut v = Vec::new();
        for _ in 0..3 {
            let start = Instant::now();
            busy.enqueue(&main).map_err(cuda_error)?;
            safe("cuStreamSynchronize", || main.synchronize()).map_err(cuda_error)?;
            v.push(start.elapsed().as_secs_f64() * 1e3);
        }
        median(&v)
    };
    let mut kinds: Vec<(&str, (Submit, bool))> = vec![
        ("staged tile uploads", (UploadBench::submit_uploads, true)),
        (
            "pageable 4 KiB copies",
            (UploadBench::submit_small_copies, false),
        ),
    ];
    if bench.is_sparse() {
        kinds.insert(
            0,
            (
                "sparse tile maps, one call each",
                (UploadBench::submit_maps, false),
            ),
        );
    }
    let mut records = Vec::new();
    for (what, submit) in kinds {
        let [idle, behind, beside] =
            measure(reps, &mut bench, &mut busy, &other, submit).map_err(cuda_error)?;
        records.push(Record {
            bench: "cuda overlap",
            case: format!("{OPS} {what}"),
            threads: 1,
            figures: vec![
                ("busy_copy_ms", busy_ms),
                ("host_ms_idle_stream", idle * 1e3),
                ("host_ms_behind_busy_work", behind * 1e3),
                ("host_ms_other_stream_while_busy", beside * 1e3),
                ("host_us_per_op_idle", idle * 1e6 / OPS as f64),
                ("repetitions", reps.max(1) as f64),
            ],
        });
    }
    Ok(records)
}
