//! `Launch`: one launch's view of the loader (TEMPORARY SKELETON — being implemented).

use crate::ids::TextureId;
use crate::paging::DeviceContext;
use crate::sampling::{CpuView, Sample, SampleOptions};

/// One launch: what samplers read while it lives. Mappings pushed before it was prepared are
/// visible; tile memory it can see is not reused until it is dropped (or consumed by
/// [`crate::Loader::process_requests`]). Share it by reference among sampling threads.
pub struct Launch {
    pub(crate) _private: (),
}

impl Launch {
    /// The page layer and tiles as the CPU samplers read them.
    pub fn view(&self) -> CpuView<'_> {
        todo!()
    }
    /// The `#[repr(C)]` context over this launch's page arrays.
    pub fn device_context(&self) -> DeviceContext {
        todo!()
    }
    /// This launch's number (1 for the first).
    pub fn launch_num(&self) -> u32 {
        todo!()
    }
    /// Sample level 0.
    pub fn tex2d(&self, texture: TextureId, s: f32, t: f32, options: &SampleOptions) -> Sample {
        crate::sampling::tex2d(self.view(), texture, s, t, options)
    }
    /// Sample at an explicit level of detail.
    pub fn tex2d_lod(&self, texture: TextureId, s: f32, t: f32, lod: f32, options: &SampleOptions) -> Sample {
        crate::sampling::tex2d_lod(self.view(), texture, s, t, lod, options)
    }
    /// Sample with screen-space gradients of (s, t).
    pub fn tex2d_grad(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> Sample {
        crate::sampling::tex2d_grad(self.view(), texture, s, t, ddx, ddy, options)
    }
}
