//! The device half of the CLI demo's CUDA render (and of the GPU loader tests): the frame's
//! device buffers and one launch of cli/kernels/demo_render.cu's `dtex_demo_render` through a
//! [`CudaLoader`] launch. The host loop (pixel window, convergence) is the caller's.

use super::cuda_kernel::{DemoCamera, DemoKernel, DemoQuad, DemoScene};
use demandtex::error::{Error, Result};
use demandtex_cuda::cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr};
use demandtex_cuda::safe;
use demandtex_cuda::{CudaLaunch, CudaLoader};
use std::sync::Arc;

/// A frame being rendered by `dtex_demo_render`: pixels, done flags, the rectangles.
pub struct DemoRenderer {
    kernel: DemoKernel,
    stream: Arc<CudaStream>,
    scene: DemoScene,
    // Addressed by `scene.quads`: kept alive with it.
    _quads: CudaSlice<DemoQuad>,
    pixels: CudaSlice<f32>,
    done: CudaSlice<u8>,
    newly_done: CudaSlice<u32>,
    /// Recorded around each frame's kernel: its device time.
    frame_start: CudaEvent,
    frame_end: CudaEvent,
}

impl DemoRenderer {
    /// A black, not-done frame of `camera`'s size on `loader`'s device, lit from `light`
    /// (unit vector), showing `quads` (texture ids of `loader`).
    pub fn new(
        loader: &CudaLoader,
        camera: DemoCamera,
        light: [f64; 3],
        quads: &[DemoQuad],
    ) -> Result<DemoRenderer> {
        if camera.width == 0 || camera.height == 0 {
            return Err(Error::InvalidArgument(format!(
                "a {}×{} demo frame",
                camera.width, camera.height
            )));
        }
        let total = camera.width as usize * camera.height as usize;
        let num_quads = u32::try_from(quads.len())
            .map_err(|_| Error::InvalidArgument(format!("{} rectangles", quads.len())))?;
        let kernel = DemoKernel::load(&loader.context())?;
        let stream = loader.stream();
        // At least one element (a zero-length allocation has no address).
        let placeholder = [DemoQuad::default()];
        let upload = if quads.is_empty() {
            &placeholder[..]
        } else {
            quads
        };
        let quads_dev = safe("uploading the rectangles", || stream.clone_htod(upload))?;
        let pixels = safe("allocating pixels", || stream.alloc_zeros::<f32>(total * 4))?;
        let done = safe("allocating done flags", || stream.alloc_zeros::<u8>(total))?;
        let newly_done = safe("allocating a counter", || stream.alloc_zeros::<u32>(1))?;
        let ctx = loader.context();
        let event = || {
            safe("cuEventCreate", || {
                ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
            })
        };
        let (frame_start, frame_end) = (event()?, event()?);
        let scene = DemoScene {
            camera,
            light,
            quads: quads_dev.device_ptr(&stream).0,
            num_quads,
            reserved: 0,
        };
        Ok(DemoRenderer {
            kernel,
            stream,
            scene,
            _quads: quads_dev,
            pixels,
            done,
            newly_done,
            frame_start,
            frame_end,
        })
    }

    /// Render through `camera` from now on (of the same size as the frame's).
    pub fn set_camera(&mut self, camera: DemoCamera) {
        debug_assert_eq!(
            (camera.width, camera.height),
            (self.scene.camera.width, self.scene.camera.height)
        );
        if (camera.width, camera.height) == (self.scene.camera.width, self.scene.camera.height) {
            self.scene.camera = camera;
        }
    }

    /// Pixels in the frame.
    pub fn pixel_count(&self) -> usize {
        self.scene.camera.width as usize * self.scene.camera.height as usize
    }

    /// Shade the not-done pixels of `[first, end)` in `launch` (enqueued on its stream);
    /// returns how many became done (this waits for the kernel).
    pub fn render(&mut self, launch: &CudaLaunch, first: u32, end: u32) -> Result<u32> {
        let stream = launch.stream();
        safe("cuMemsetD8Async", || {
            stream.memset_zeros(&mut self.newly_done)
        })?;
        let (p, d, n) = (
            self.pixels.device_ptr(stream).0,
            self.done.device_ptr(stream).0,
            self.newly_done.device_ptr(stream).0,
        );
        // SAFETY: the context is the launch's (its buffers live until the next
        // launch_prepare); `scene.quads` holds `num_quads` rectangles, `p` 4 floats and `d`
        // one byte per pixel of the camera's image, `n` one counter — all device memory
        // of the loader's context, alive in `self`.
        unsafe {
            self.kernel.render(
                stream,
                &launch.device_context(),
                &self.scene,
                p,
                d,
                first,
                end,
                n,
            )
        }?;
        let counter = safe("reading the done counter", || {
            let v = stream.clone_dtoh(&self.newly_done)?;
            stream.synchronize()?;
            Ok(v)
        })?;
        Ok(counter[0])
    }

    /// Shade every pixel of one interactive frame in `launch` (textured: a miss shows a
    /// coarser level and records its request; or untextured) and wait for it; returns the
    /// pixels at full detail.
    pub fn frame(&mut self, launch: &CudaLaunch, untextured: bool) -> Result<u32> {
        self.enqueue_frame(launch, untextured)?;
        Ok(self.finish_frame()?.0)
    }

    /// Enqueue one interactive frame's kernel (as [`frame`](Self::frame)) on `launch`'s
    /// stream, between timing events, without waiting for it: the caller may call
    /// `process_requests` before [`finish_frame`](Self::finish_frame).
    pub fn enqueue_frame(&mut self, launch: &CudaLaunch, untextured: bool) -> Result<()> {
        let stream = launch.stream();
        safe("cuMemsetD8Async", || {
            stream.memset_zeros(&mut self.newly_done)
        })?;
        let (p, n) = (
            self.pixels.device_ptr(stream).0,
            self.newly_done.device_ptr(stream).0,
        );
        safe("cuEventRecord", || self.frame_start.record(stream))?;
        // SAFETY: as in `render`: the launch's context, the scene's quads, 4 floats a pixel
        // in `p` and one counter in `n`, all alive in `self`.
        unsafe {
            self.kernel.frame(
                stream,
                &launch.device_context(),
                &self.scene,
                p,
                untextured,
                n,
            )
        }?;
        safe("cuEventRecord", || self.frame_end.record(stream))
    }

    /// Wait for the frame [`enqueue_frame`](Self::enqueue_frame) put on the loader's stream
    /// (and for what was enqueued after it); returns the pixels at full detail and the
    /// kernel's device time in seconds.
    pub fn finish_frame(&mut self) -> Result<(u32, f64)> {
        let stream = &self.stream;
        let counter = safe("reading the full-detail counter", || {
            let v = stream.clone_dtoh(&self.newly_done)?;
            stream.synchronize()?;
            Ok(v)
        })?;
        let ms = safe("timing the frame's kernel", || {
            self.frame_start.elapsed_ms(&self.frame_end)
        })?;
        Ok((counter[0], f64::from(ms) / 1e3))
    }

    /// The done flags (one per pixel, row-major).
    pub fn done_flags(&self) -> Result<Vec<bool>> {
        let bytes = safe("reading done flags", || {
            let v = self.stream.clone_dtoh(&self.done)?;
            self.stream.synchronize()?;
            Ok(v)
        })?;
        Ok(bytes.into_iter().map(|b| b != 0).collect())
    }

    /// The pixels (RGBA, row-major).
    pub fn pixels(&self) -> Result<Vec<[f32; 4]>> {
        let flat = safe("reading pixels", || {
            let v = self.stream.clone_dtoh(&self.pixels)?;
            self.stream.synchronize()?;
            Ok(v)
        })?;
        Ok(flat
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]])
            .collect())
    }
}

impl std::fmt::Debug for DemoRenderer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoRenderer")
            .field("camera", &self.scene.camera)
            .field("quads", &self.scene.num_quads)
            .finish_non_exhaustive()
    }
}
