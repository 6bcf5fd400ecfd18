//! `Launch`: one launch's view of a CPU loader — what samplers read while it lives.

use crate::backend::cpu::CpuBackend;
use crate::ids::{PageId, TextureId};
use crate::paging::DeviceContext;
use crate::requests::{Engine, LaunchPin};
use crate::sampling::{CpuView, Rejection, Sample, SampleOptions};
use std::sync::Arc;

/// One launch. Mappings published before it was prepared are visible to it; tile memory it
/// can see is not reused until it is dropped or handed to
/// [`crate::Loader::process_requests`]. It is `Sync`: share `&Launch` among sampling threads.
pub struct Launch {
    pin: LaunchPin,
    cpu: Arc<CpuBackend>,
}

impl Launch {
    pub(crate) fn new(pin: LaunchPin, cpu: Arc<CpuBackend>) -> Launch {
        Launch { pin, cpu }
    }

    pub(crate) fn engine(&self) -> &Arc<Engine> {
        self.pin.engine()
    }

    /// The page layer and tiles as the CPU samplers read them.
    #[inline]
    pub fn view(&self) -> CpuView<'_> {
        // SAFETY: the engine publishes only valid sampler records, mip tails and tile
        // buffers (RawBox / TileBuffer allocations it owns; the CPU backend's directory
        // holds their addresses), never writes them while visible, and reuses or frees tile
        // memory only once every launch that could see it — this one included, through its
        // pin — has ended. Sampler records and mip tails live as long as the engine, which
        // `self` keeps alive.
        let view = unsafe { CpuView::new(self.engine().page_table(), self.cpu.directory()) };
        let engine = self.engine();
        let view = view.with_file_tiles(&**engine);
        // The threshold is 0 without rejection: the gate then only counts.
        if engine.options().counts_requests() {
            view.with_rejection(Rejection {
                gate: engine.request_gate(),
                threshold: self.pin.reject_threshold(),
                launch_num: self.launch_num(),
                key: 0,
            })
        } else {
            view
        }
    }

    /// The `#[repr(C)]` context over this launch's page arrays (valid while `self` lives).
    pub fn device_context(&self) -> DeviceContext {
        let engine = self.engine();
        DeviceContext {
            reject_threshold: self.pin.reject_threshold(),
            ..engine
                .page_table()
                .device_context(self.launch_num(), engine.options().eviction)
        }
    }

    /// The entry of `page` if it is resident; otherwise record a request for it (served by
    /// the next [`crate::Loader::process_requests`]) and return `None` — the CPU side of
    /// the device's `pagingMapOrRequest`, for user resources
    /// ([`Engine::create_resource`]) or any page with an entry. Pages without an
    /// entry (`page ≥ page_table_entries`) and resource pages whose callback failed return
    /// `None` and record nothing.
    #[inline]
    pub fn map_or_request(&self, page: PageId) -> Option<u64> {
        let engine = self.engine();
        if engine.is_resource_failed(page) {
            return None;
        }
        engine.page_table().map_or_request(page.0)
    }

    /// This launch's number (1 for the first).
    pub fn launch_num(&self) -> u32 {
        self.pin.launch_num()
    }

    /// Sample level 0.
    #[inline]
    pub fn tex2d(&self, texture: TextureId, s: f32, t: f32, options: &SampleOptions) -> Sample {
        crate::sampling::tex2d(self.view(), texture, s, t, options)
    }

    /// Sample at an explicit level of detail.
    #[inline]
    pub fn tex2d_lod(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        lod: f32,
        options: &SampleOptions,
    ) -> Sample {
        crate::sampling::tex2d_lod(self.view(), texture, s, t, lod, options)
    }

    /// Sample with the screen-space gradients of (s, t) (ray differentials).
    #[inline]
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

    /// [`tex2d_grad`](Self::tex2d_grad) with the derivatives of the value with respect to
    /// s and t ([`crate::sampling::tex2d_grad_with_derivatives`]).
    #[inline]
    pub fn tex2d_grad_with_derivatives(
        &self,
        texture: TextureId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> crate::SampleDerivatives {
        crate::sampling::tex2d_grad_with_derivatives(self.view(), texture, s, t, ddx, ddy, options)
    }

    /// Sample lat-long environment map `texture` in direction `r` with its screen-space
    /// differentials `drdx`, `drdy` ([`crate::sampling::environment`]: OpenImageIO's mapping
    /// and filter, periodic in s and clamped in t).
    #[inline]
    pub fn environment(
        &self,
        texture: TextureId,
        r: [f32; 3],
        drdx: [f32; 3],
        drdy: [f32; 3],
        up: crate::sampling::environment::UpAxis,
        options: &SampleOptions,
    ) -> Sample {
        crate::sampling::environment::environment(self.view(), texture, r, drdx, drdy, up, options)
    }

    /// Sample a UDIM texture with the screen-space gradients of (s, t)
    /// ([`crate::udim::tex2d_grad_udim`]).
    #[inline]
    pub fn tex2d_grad_udim(
        &self,
        udim: crate::udim::UdimId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> Sample {
        crate::udim::tex2d_grad_udim(self.view(), udim, s, t, ddx, ddy, options)
    }

    /// [`tex2d_grad_udim`](Self::tex2d_grad_udim) with the derivatives of the value with
    /// respect to the UDIM coordinates ([`crate::udim::tex2d_grad_udim_with_derivatives`]).
    #[inline]
    pub fn tex2d_grad_udim_with_derivatives(
        &self,
        udim: crate::udim::UdimId,
        s: f32,
        t: f32,
        ddx: [f32; 2],
        ddy: [f32; 2],
        options: &SampleOptions,
    ) -> crate::SampleDerivatives {
        let view = self.view();
        crate::udim::tex2d_grad_udim_with_derivatives(view, udim, s, t, ddx, ddy, options)
    }
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Launch({})", self.launch_num())
    }
}
