//! The demo's CUDA kernels, `dtex_demo_render` (a multi-pass launch) and `dtex_demo_frame`
//! (an interactive frame) of `cli/kernels/demo_render.cu` (its PTX
//! shipped in `cli/kernels/ptx/`), and the `#[repr(C)]` scene structs it reads, laid out as
//! the kernel's `DtexDemo*` structs (sizes and offsets asserted here and there).

use demandtex::error::{Error, Result};
use demandtex::paging::DeviceContext;
use demandtex_cuda::cudarc::driver::{
    CudaContext, CudaFunction, CudaStream, DeviceRepr, PushKernelArg,
};
use demandtex_cuda::kernels::{launch_config, load_functions, ptx_param_sizes, KernelContext};
use demandtex_cuda::safe;
use std::mem::{offset_of, size_of};
use std::sync::Arc;

/// PTX of cli/kernels/demo_render.cu.
pub const DEMO_RENDER_PTX: &str = include_str!("../../kernels/ptx/demo_render.ptx");

/// The demo kernel's parameter sizes as [`DemoKernel::render`] passes them.
pub const DEMO_PARAMS: &[usize] = &[
    size_of::<DeviceContext>(),
    size_of::<DemoScene>(),
    8,
    8,
    4,
    4,
    8,
];

/// The interactive frame kernel's parameter sizes as [`DemoKernel::frame`] passes them.
pub const FRAME_PARAMS: &[usize] = &[size_of::<DeviceContext>(), size_of::<DemoScene>(), 8, 4, 8];

/// One texture layer of a demo rectangle (kernels/demo_render.cu `DtexDemoLayer`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemoLayer {
    /// Texture repeats across the rectangle in u and v.
    pub scale: [f64; 2],
    /// Texture coordinates at the rectangle's origin.
    pub offset: [f64; 2],
    /// The loader's texture id; `u32::MAX` (`DTEX_NO_TEXTURE`) for "no layer".
    pub texture: u32,
    /// 1 if the texture's address mode is wrap.
    pub wrap: u32,
}

/// A textured rectangle (`DtexDemoQuad`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemoQuad {
    /// One corner.
    pub origin: [f64; 3],
    /// The edge along texture u.
    pub edge_u: [f64; 3],
    /// The edge along texture v, orthogonal to `edge_u`.
    pub edge_v: [f64; 3],
    /// The base texture.
    pub base: DemoLayer,
    /// The detail texture (`texture == u32::MAX`: none).
    pub detail: DemoLayer,
}

/// The demo camera (`DtexDemoCamera`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemoCamera {
    /// Eye position.
    pub eye: [f64; 3],
    /// Unit view direction.
    pub forward: [f64; 3],
    /// Unit right vector.
    pub right: [f64; 3],
    /// Unit up vector.
    pub up: [f64; 3],
    /// Half the image plane's width at distance 1.
    pub half_width: f64,
    /// Half the image plane's height at distance 1.
    pub half_height: f64,
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
}

/// The demo scene (`DtexDemoScene`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DemoScene {
    /// The camera.
    pub camera: DemoCamera,
    /// Unit direction towards the light.
    pub light: [f64; 3],
    /// Device address of the rectangles (`DemoQuad`s).
    pub quads: u64,
    /// Number of rectangles.
    pub num_quads: u32,
    /// Zero.
    pub reserved: u32,
}

// The sizes and offsets kernels/demo_render.cu asserts.
const _: () = assert!(size_of::<DemoLayer>() == 40 && offset_of!(DemoLayer, texture) == 32);
const _: () = assert!(offset_of!(DemoLayer, wrap) == 36);
const _: () = assert!(size_of::<DemoQuad>() == 152 && offset_of!(DemoQuad, base) == 72);
const _: () = assert!(offset_of!(DemoQuad, detail) == 112);
const _: () = assert!(size_of::<DemoCamera>() == 120 && offset_of!(DemoCamera, half_width) == 96);
const _: () = assert!(offset_of!(DemoCamera, width) == 112);
const _: () = assert!(size_of::<DemoScene>() == 160 && offset_of!(DemoScene, light) == 120);
const _: () =
    assert!(offset_of!(DemoScene, quads) == 144 && offset_of!(DemoScene, num_quads) == 152);

// SAFETY: `#[repr(C)]` plain data (f64s, u32s, a device address), layout asserted above.
unsafe impl DeviceRepr for DemoScene {}
// SAFETY: as above; uploaded as an array of quads.
unsafe impl DeviceRepr for DemoQuad {}

/// The demo's render kernel of cli/kernels/demo_render.cu.
#[derive(Debug, Clone)]
pub struct DemoKernel {
    render: CudaFunction,
    frame: CudaFunction,
}

impl DemoKernel {
    /// Load the embedded PTX into `ctx`.
    pub fn load(ctx: &Arc<CudaContext>) -> Result<DemoKernel> {
        // Launch arguments the PTX does not declare would be undefined behaviour.
        for (name, params) in [
            ("dtex_demo_render", DEMO_PARAMS),
            ("dtex_demo_frame", FRAME_PARAMS),
        ] {
            let declared = ptx_param_sizes(DEMO_RENDER_PTX, name);
            if declared.as_deref() != Some(params) {
                return Err(Error::Internal(format!(
                    "{name}: the PTX declares {declared:?}, the launch passes {params:?}"
                )));
            }
        }
        let [render, frame]: [CudaFunction; 2] = load_functions(
            ctx,
            DEMO_RENDER_PTX,
            &["dtex_demo_render", "dtex_demo_frame"],
        )?
        .try_into()
        .map_err(|_| Error::Internal("the demo module lacks its kernels".into()))?;
        Ok(DemoKernel { render, frame })
    }

    /// Enqueue `dtex_demo_render(ctx, scene, pixels, done, first_pixel, end_pixel,
    /// newly_done)` over pixels `[first_pixel, end_pixel)`.
    ///
    /// # Safety
    /// `ctx` as for the samplers (page table, bits, samplers and texture objects alive in
    /// device memory); `scene.quads` `num_quads` quads, `pixels` one `float4` and `done`
    /// one byte per pixel of the camera's image, `newly_done` one counter, all device
    /// memory of this context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn render(
        &self,
        stream: &CudaStream,
        ctx: &DeviceContext,
        scene: &DemoScene,
        pixels: u64,
        done: u64,
        first_pixel: u32,
        end_pixel: u32,
        newly_done: u64,
    ) -> Result<()> {
        let mut b = stream.launch_builder(&self.render);
        let ctx = KernelContext(*ctx);
        b.arg(&ctx)
            .arg(scene)
            .arg(&pixels)
            .arg(&done)
            .arg(&first_pixel)
            .arg(&end_pixel)
            .arg(&newly_done);
        let threads = end_pixel.saturating_sub(first_pixel) as u64;
        // SAFETY: the arguments match the kernel's parameters (DEMO_PARAMS, tested against
        // the PTX); the caller vouches for the memory they address.
        safe("cuLaunchKernel(dtex_demo_render)", || unsafe {
            b.launch(launch_config(threads))
        })
        .map(|_| ())
    }
}

impl DemoKernel {
    /// Enqueue `dtex_demo_frame(ctx, scene, pixels, untextured, full_detail)` over every
    /// pixel of the camera's image.
    ///
    /// # Safety
    /// As [`DemoKernel::render`]: `ctx` alive in device memory, `scene.quads` `num_quads`
    /// quads, `pixels` one `float4` per pixel, `full_detail` one counter, all device memory
    /// of this context.
    pub unsafe fn frame(
        &self,
        stream: &CudaStream,
        ctx: &DeviceContext,
        scene: &DemoScene,
        pixels: u64,
        untextured: bool,
        full_detail: u64,
    ) -> Result<()> {
        let mut b = stream.launch_builder(&self.frame);
        let ctx = KernelContext(*ctx);
        let untextured = u32::from(untextured);
        b.arg(&ctx)
            .arg(scene)
            .arg(&pixels)
            .arg(&untextured)
            .arg(&full_detail);
        let threads = scene.camera.width as u64 * scene.camera.height as u64;
        // SAFETY: the arguments match the kernel's parameters (FRAME_PARAMS, tested against
        // the PTX); the caller vouches for the memory they address.
        safe("cuLaunchKernel(dtex_demo_frame)", || unsafe {
            b.launch(launch_config(threads))
        })
        .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_helpers_pass_what_the_shipped_ptx_declares() {
        let declared = ptx_param_sizes(DEMO_RENDER_PTX, "dtex_demo_render")
            .expect("dtex_demo_render is an entry of the shipped PTX");
        assert_eq!(declared, DEMO_PARAMS);
        let declared = ptx_param_sizes(DEMO_RENDER_PTX, "dtex_demo_frame")
            .expect("dtex_demo_frame is an entry of the shipped PTX");
        assert_eq!(declared, FRAME_PARAMS);
    }
}
