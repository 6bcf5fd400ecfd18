//! GPU test of `dtex::ptexSample` (include/demandtex/device/ptex.cuh): every Ptex fixture
//! registered with a `CudaLoader` (tables uploaded by `create_ptex_texture`) and sampled
//! by a kernel (gpu_support/ptex.cu) launch after launch: the first launch finds nothing
//! resident and gives the faces' constant colours; once converged, point lookups equal
//! core's resident `ptex_sample` exactly, stochastic ones within 1e-6, and the bilinear,
//! box and Gaussian filters (edge blending, triangles) within 1e-5; an unknown filter code
//! reports `supported` false. Skips (printing why) without a device.

mod gpu_support;

use cudarc::driver::{DeviceRepr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::Ptx;
use demandtex::paging::DeviceContext;
use demandtex::ptex::device::PtexDeviceTexture;
use demandtex::sampling::ptex::{ptex_sample, PtexFilterOptions, PtexFilterType, ResidentPtex};
use demandtex::sources::ptex::PtexFile;
use demandtex::LoaderOptions;
use demandtex_cuda::CudaLoader;
use std::path::PathBuf;
use std::sync::Arc;

/// The PTX of gpu_support/ptex.cu, generated with the pinned NVRTC.
const PTEX_PTX: &str = include_str!("gpu_support/ptx/ptex.ptx");

/// `PtexTestLookup` of ptex.cu.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Lookup {
    face: u32,
    filter: u32,
    u: f32,
    v: f32,
    dudx: f32,
    dvdy: f32,
    jitter_u: f32,
    jitter_v: f32,
}

// SAFETY: repr(C) plain data, as ptex.cu declares it.
unsafe impl DeviceRepr for Lookup {}

#[repr(transparent)]
struct Ctx(DeviceContext);
// SAFETY: repr(C) `DtexDeviceContext` (layout asserted in demandtex.h).
unsafe impl DeviceRepr for Ctx {}

#[repr(transparent)]
struct Ptex(PtexDeviceTexture);
// SAFETY: repr(C) `DtexPtexDeviceTexture` (layout asserted in demandtex.h).
unsafe impl DeviceRepr for Ptex {}

/// The fixtures: `$DEMANDTEX_PTEX_FIXTURES` (the GPU suite's bundle), else the repository's.
fn fixtures() -> Vec<PathBuf> {
    let dir = std::env::var_os("DEMANDTEX_PTEX_FIXTURES").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/ptex"),
        PathBuf::from,
    );
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    v.sort();
    assert_eq!(v.len(), 7, "the Ptex fixtures");
    v
}

fn lookups(num_faces: u32) -> Vec<Lookup> {
    let mut state = 0x1234_5678u32;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    (0..num_faces * 24)
        .map(|i| {
            let w = [0.0, 0.002, 0.02, 0.2][(i % 4) as usize];
            Lookup {
                face: i % num_faces,
                // point 0, stochastic 8, bilinear 1, box 2, Gaussian 3, and 9 (no filter).
                filter: [0, 8, 1, 2, 3, 9][(i / 4 % 6) as usize],
                u: next() * 1.1 - 0.05,
                v: next() * 1.1 - 0.05,
                dudx: w * next(),
                dvdy: w * next(),
                jitter_u: next(),
                jitter_v: next(),
            }
        })
        .collect()
}

#[test]
fn ptex_lookups_on_the_device_converge_to_cores_values() {
    if gpu_support::gpu("ptex_lookups_on_the_device_converge_to_cores_values").is_none() {
        return;
    }
    for path in fixtures() {
        let options = LoaderOptions {
            max_texture_memory: 64 << 20,
            fill_threads: 1,
            ..LoaderOptions::default()
        };
        let loader = CudaLoader::new(0, options).unwrap();
        let (_texture, device) = loader.create_ptex_texture(&path).unwrap();
        let store = ResidentPtex::new(Arc::new(PtexFile::open(&path).unwrap())).unwrap();
        let nch = store.file().num_channels().min(4);
        let lookups = lookups(store.file().num_faces() as u32);
        let stream = loader.stream();
        let module = loader
            .context()
            .load_module(Ptx::from_src(PTEX_PTX))
            .unwrap();
        let f = module.load_function("dtex_test_ptex").unwrap();
        let d_lookups = stream.clone_htod(&lookups).unwrap();
        let n = lookups.len() as u32;
        let mut converged = None;
        for launch_no in 1..=20 {
            let launch = loader.launch_prepare().unwrap();
            let mut d_out = stream.alloc_zeros::<f32>(lookups.len() * 4).unwrap();
            let mut d_flags = stream.alloc_zeros::<u32>(lookups.len()).unwrap();
            let ctx = Ctx(launch.device_context());
            let ptex = Ptex(device.device_texture());
            let mut b = stream.launch_builder(&f);
            b.arg(&ctx)
                .arg(&ptex)
                .arg(&d_lookups)
                .arg(&mut d_out)
                .arg(&mut d_flags)
                .arg(&n);
            // SAFETY: the arguments match dtex_test_ptex's parameters; the buffers hold `n`
            // lookups, float4s and flags.
            unsafe { b.launch(LaunchConfig::for_num_elems(n)) }.unwrap();
            let out = stream.clone_dtoh(&d_out).unwrap();
            let flags = stream.clone_dtoh(&d_flags).unwrap();
            stream.synchronize().unwrap();
            let supported = |l: &Lookup| l.filter <= 8;
            let all = lookups
                .iter()
                .zip(&flags)
                .all(|(l, f)| !supported(l) || f & 1 == 1);
            if launch_no == 1 {
                assert!(!all, "{}: resident at the first launch", path.display());
            }
            for (i, l) in lookups.iter().enumerate() {
                assert_eq!(
                    flags[i] & 2 != 0,
                    supported(l),
                    "{} lookup {i}",
                    path.display()
                );
            }
            loader.process_requests(launch).unwrap().wait();
            if all {
                converged = Some((out, flags));
                break;
            }
        }
        let (out, flags) =
            converged.unwrap_or_else(|| panic!("{}: no convergence", path.display()));
        for (i, l) in lookups.iter().enumerate() {
            let filter = match l.filter {
                0 => PtexFilterType::Point,
                1 => PtexFilterType::Bilinear,
                2 => PtexFilterType::Box,
                3 => PtexFilterType::Gaussian,
                8 => PtexFilterType::StochasticPoint,
                _ => continue,
            };
            let o = PtexFilterOptions {
                filter,
                jitter: [l.jitter_u, l.jitter_v],
                ..Default::default()
            };
            let mut want = vec![0f32; store.file().num_channels()];
            let s = ptex_sample(
                &store, l.face, l.u, l.v, l.dudx, 0.0, 0.0, l.dvdy, &o, &mut want,
            );
            assert_eq!(
                (flags[i] >> 2) as usize,
                s.channels.min(4),
                "{} lookup {i}",
                path.display()
            );
            for c in 0..nch {
                let got = out[i * 4 + c];
                let tol = match l.filter {
                    0 => 0.0,
                    8 => 1e-6,
                    _ => 1e-5 * want[c].abs().max(1.0),
                };
                assert!(
                    (got - want[c]).abs() <= tol,
                    "{} lookup {i} {l:?} channel {c}: device {got}, core {}",
                    path.display(),
                    want[c]
                );
            }
        }
        println!(
            "{}: device point, stochastic, bilinear, box and Gaussian lookups equal core's",
            path.display()
        );
    }
}
