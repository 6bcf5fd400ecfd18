//! Shared by the GPU tests (`gpu_*.rs`): open device 0 or skip, printing `skipped: <test>:
//! <reason>` when there is no driver or no device (or no sparse arrays where a test needs
//! them). `DEMANDTEX_REQUIRE_GPU=1` (set by the GPU suite's run.sh) turns a skip into a
//! failure, so a GPU machine cannot pass by skipping.

#![allow(dead_code)]

use cudarc::driver::{CudaContext, CudaStream};
use demandtex_cuda::{self as cuda, CudaDevice, CudaDeviceInfo};
use std::sync::Arc;

/// The PTX of `sample.cu` (a texture-sampling test kernel), generated with the pinned NVRTC.
pub const SAMPLE_PTX: &str = include_str!("ptx/sample.ptx");

/// An opened device and a stream on it.
pub struct Gpu {
    pub device: CudaDevice,
    pub stream: Arc<CudaStream>,
}

impl Gpu {
    pub fn ctx(&self) -> &Arc<CudaContext> {
        self.device.context()
    }

    pub fn info(&self) -> &CudaDeviceInfo {
        self.device.info()
    }

    pub fn ordinal(&self) -> u32 {
        self.info().ordinal
    }
}

fn skip(test: &str, reason: &str) -> Option<Gpu> {
    if std::env::var_os("DEMANDTEX_REQUIRE_GPU").is_some_and(|v| v == "1") {
        panic!("{test}: no usable GPU ({reason}) but DEMANDTEX_REQUIRE_GPU=1");
    }
    println!("skipped: {test}: {reason}");
    None
}

/// Device 0 with a fresh stream, or `None` (after printing why) without one.
pub fn gpu(test: &str) -> Option<Gpu> {
    if let Err(e) = cuda::probe_device(0) {
        return skip(test, &e.to_string());
    }
    // A device the probe saw must open: a failure here is a real failure.
    let device = CudaDevice::open(0).expect("device 0 was probed but does not open");
    let stream = device.context().new_stream().expect("a CUDA stream");
    Some(Gpu { device, stream })
}

/// As [`gpu`], for tests that need sparse arrays and `cuMemCreate`.
pub fn sparse_gpu(test: &str) -> Option<Gpu> {
    let g = gpu(test)?;
    if !g.info().sparse_supported || !g.info().vmm_supported {
        let why = format!(
            "{} lacks sparse arrays or virtual memory management",
            g.info().name
        );
        return skip(test, &why);
    }
    Some(g)
}

/// `len` bytes of a pattern that differs per byte and per seed.
pub fn pattern(len: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(12345);
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 24) as u8
        })
        .collect()
}

/// The rows of a `width`-texel, `height`-row rectangle out of data `pitch` bytes per row.
pub fn rows(data: &[u8], width_bytes: usize, height: usize, pitch: usize) -> Vec<u8> {
    (0..height)
        .flat_map(|r| data[r * pitch..r * pitch + width_bytes].iter().copied())
        .collect()
}
