//! `demandtex bench --backend cuda`: the GPU figures, on CUDA device 0. Figures only; every
//! ratio is against a baseline measured in the same run, on the same device.
//!
//! - `fetch`: resident lookups through the demand path (`dtex::tex2DGrad`) against a plain
//!   hardware `tex2DGrad` on the same texture object, timed with CUDA events (medians of
//!   `--reps` launches), with eviction active (resident lookups record references) and not.
//! - `requests`: requests per second through pull → fill → push (a launch requesting N
//!   distinct tiles, `process_requests`, the fills, the next `launch_prepare`), and where the
//!   time goes.
//! - `upload`: tile uploads through the staging ring (GB/s) and sparse map / unmap
//!   operations per second.
//! - `converge`: the demo scene rendered by `dtex_demo_render` until converged, in the demo's
//!   256 MiB and through a 2 GiB pool (its textures as large as the device takes).
//!
//! Without a driver or device: the probe's error (exit code 2) before anything is measured.

mod converge;
mod fetch;
pub mod kernels;
mod overlap;
mod requests;
mod upload;
pub mod upload_bench;

use super::{BenchArgs, Record, Which};
use crate::error::CliError;
use demandtex_cuda as cuda;

/// A library error of the CUDA path: no driver or device is "unavailable" (exit code 2).
pub fn cuda_error(e: demandtex::Error) -> CliError {
    match e {
        demandtex::Error::NoCudaDriver(_)
        | demandtex::Error::NoCudaDevice(_)
        | demandtex::Error::Unsupported(_) => CliError::Unavailable(e.to_string()),
        other => CliError::Demandtex(other.to_string()),
    }
}

/// Run the CUDA sections of `sections` on device 0, handing each one's records to `emit`
/// as it finishes.
pub fn run(
    args: &BenchArgs,
    sections: &[Which],
    emit: &mut dyn FnMut(Vec<Record>),
) -> Result<(), CliError> {
    let info = cuda::probe_device(0).map_err(cuda_error)?;
    println!(
        "CUDA device 0: {} (compute capability {}.{}, {} multiprocessors, driver {}, sparse arrays {})",
        info.name,
        info.compute_capability.0,
        info.compute_capability.1,
        info.multiprocessors,
        info.driver_version_text(),
        if info.sparse_supported && info.vmm_supported { "yes" } else { "no" }
    );
    let reps = args.reps as usize;
    if sections.contains(&Which::Fetch) {
        eprintln!("bench: CUDA fetches…");
        emit(fetch::run(reps)?);
    }
    if sections.contains(&Which::Requests) {
        eprintln!("bench: CUDA requests…");
        emit(requests::run(reps)?);
    }
    if sections.contains(&Which::Upload) {
        eprintln!("bench: CUDA uploads…");
        emit(upload::run(reps)?);
        eprintln!("bench: CUDA publication beside a busy stream…");
        emit(overlap::run(reps)?);
    }
    if sections.contains(&Which::Converge) {
        eprintln!("bench: CUDA demo convergence…");
        emit(converge::run()?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_driver_the_sections_stop_with_the_probe_error() {
        if cuda::driver_present() {
            eprintln!("a CUDA driver is present: this check needs a machine without one");
            return;
        }
        let args = BenchArgs {
            command: None,
            threads_list: vec![1],
            seconds: 1.0,
            json: false,
            only: Vec::new(),
            backend: super::super::Backend::Cuda,
            reps: 1,
        };
        let mut emitted = 0;
        let e = run(&args, &Which::CUDA_DEFAULT, &mut |r| emitted += r.len()).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert_eq!(e.to_string(), cuda::NO_DRIVER_MESSAGE);
        assert_eq!(emitted, 0);
    }

    #[test]
    fn library_errors_map_to_exit_codes() {
        let e = cuda_error(demandtex::Error::NoCudaDevice("none".into()));
        assert_eq!(e.exit_code(), 2);
        let e = cuda_error(demandtex::Error::Internal("x".into()));
        assert_eq!(e.exit_code(), 1);
    }
}
