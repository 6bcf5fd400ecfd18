//! Texel formats: component type × channel count, their sizes, the tile extents CUDA
//! sparse arrays use for them, and conversion to and from `f32` RGBA.

use crate::error::{Error, Result};
use half::f16;

/// The type of one texel component. The numeric values are shared with C and CUDA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[repr(u32)]
pub enum TexelType {
    /// 8-bit unsigned, normalised to [0, 1].
    U8 = 0,
    /// 16-bit unsigned, normalised to [0, 1].
    U16 = 1,
    /// IEEE half float.
    F16 = 2,
    /// IEEE single float.
    F32 = 3,
}

impl TexelType {
    /// Bytes of one component.
    pub const fn bytes(self) -> usize {
        match self {
            TexelType::U8 => 1,
            TexelType::U16 | TexelType::F16 => 2,
            TexelType::F32 => 4,
        }
    }

    /// The type for a device code (`TextureSampler::texel_type`).
    pub fn from_code(code: u32) -> Option<TexelType> {
        match code {
            0 => Some(TexelType::U8),
            1 => Some(TexelType::U16),
            2 => Some(TexelType::F16),
            3 => Some(TexelType::F32),
            _ => None,
        }
    }
}

/// A texel format: component type and channel count (1, 2 or 4; three-channel sources are
/// widened to four by their [`crate::sources::ImageSource`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TexelFormat {
    /// Component type.
    pub texel_type: TexelType,
    /// Channels: 1, 2 or 4.
    pub channels: u32,
}

impl TexelFormat {
    /// A format, checking the channel count.
    pub fn new(texel_type: TexelType, channels: u32) -> Result<TexelFormat> {
        match channels {
            1 | 2 | 4 => Ok(TexelFormat {
                texel_type,
                channels,
            }),
            3 => Err(Error::Unsupported(
                "3-channel texels must be widened to 4 by the image source".into(),
            )),
            n => Err(Error::Unsupported(format!(
                "{n} channels (1, 2 or 4 are supported)"
            ))),
        }
    }

    /// 8-bit RGBA, the most common format.
    pub const RGBA8: TexelFormat = TexelFormat {
        texel_type: TexelType::U8,
        channels: 4,
    };
    /// Half-float RGBA.
    pub const RGBA16F: TexelFormat = TexelFormat {
        texel_type: TexelType::F16,
        channels: 4,
    };
    /// Float RGBA.
    pub const RGBA32F: TexelFormat = TexelFormat {
        texel_type: TexelType::F32,
        channels: 4,
    };

    /// Bytes of one texel.
    pub const fn texel_bytes(self) -> usize {
        self.texel_type.bytes() * self.channels as usize
    }

    /// Width and height in texels of one 64 KiB tile: the standard shapes CUDA sparse
    /// arrays use (1 B: 256×256, 2 B: 256×128, 4 B: 128×128, 8 B: 128×64, 16 B: 64×64).
    pub const fn tile_extent(self) -> (u32, u32) {
        match self.texel_bytes() {
            1 => (256, 256),
            2 => (256, 128),
            4 => (128, 128),
            8 => (128, 64),
            _ => (64, 64),
        }
    }

    /// Decode one texel at the start of `src` to RGBA: one channel gives (c, c, c, 1),
    /// two channels give (c0, c1, 0, 1). Integer types are normalised to [0, 1].
    #[inline]
    pub fn decode(self, src: &[u8]) -> [f32; 4] {
        let mut c = [0.0f32; 4];
        let n = self.channels as usize;
        for (i, v) in c.iter_mut().enumerate().take(n) {
            *v = decode_component(self.texel_type, src, i);
        }
        match n {
            1 => [c[0], c[0], c[0], 1.0],
            2 => [c[0], c[1], 0.0, 1.0],
            _ => c,
        }
    }

    /// Encode RGBA into one texel at the start of `dst`, keeping the first `channels`
    /// components. Integer types are clamped to [0, 1] and rounded; NaN becomes 0.
    #[inline]
    pub fn encode(self, rgba: [f32; 4], dst: &mut [u8]) {
        for (i, &v) in rgba.iter().enumerate().take(self.channels as usize) {
            encode_component(self.texel_type, v, dst, i);
        }
    }
}

#[inline]
fn decode_component(t: TexelType, src: &[u8], i: usize) -> f32 {
    match t {
        TexelType::U8 => src[i] as f32 * (1.0 / 255.0),
        TexelType::U16 => u16::from_le_bytes([src[2 * i], src[2 * i + 1]]) as f32 * (1.0 / 65535.0),
        TexelType::F16 => f16::from_le_bytes([src[2 * i], src[2 * i + 1]]).to_f32(),
        TexelType::F32 => f32::from_le_bytes([src[4 * i], src[4 * i + 1], src[4 * i + 2], src[4 * i + 3]]),
    }
}

#[inline]
fn encode_component(t: TexelType, v: f32, dst: &mut [u8], i: usize) {
    let unorm = |v: f32, max: f32| -> f32 {
        if v.is_nan() {
            0.0
        } else {
            (v.clamp(0.0, 1.0) * max).round()
        }
    };
    match t {
        TexelType::U8 => dst[i] = unorm(v, 255.0) as u8,
        TexelType::U16 => dst[2 * i..2 * i + 2].copy_from_slice(&(unorm(v, 65535.0) as u16).to_le_bytes()),
        TexelType::F16 => dst[2 * i..2 * i + 2].copy_from_slice(&f16::from_f32(v).to_le_bytes()),
        TexelType::F32 => dst[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_64_kib_for_every_format() {
        for t in [TexelType::U8, TexelType::U16, TexelType::F16, TexelType::F32] {
            for ch in [1, 2, 4] {
                let f = TexelFormat::new(t, ch).unwrap();
                let (w, h) = f.tile_extent();
                assert_eq!(w as usize * h as usize * f.texel_bytes(), crate::ids::TILE_BYTES, "{f:?}");
            }
        }
    }

    #[test]
    fn three_channels_are_rejected_with_a_reason() {
        let e = TexelFormat::new(TexelType::U8, 3).unwrap_err();
        assert!(e.to_string().contains("widened"));
        assert!(TexelFormat::new(TexelType::F32, 5).is_err());
    }

    #[test]
    fn encode_decode_round_trips() {
        let v = [0.25, 0.5, 0.75, 1.0];
        for t in [TexelType::U8, TexelType::U16, TexelType::F16, TexelType::F32] {
            let f = TexelFormat::new(t, 4).unwrap();
            let mut buf = [0u8; 16];
            f.encode(v, &mut buf);
            let d = f.decode(&buf);
            for i in 0..4 {
                assert!((d[i] - v[i]).abs() < 1.0 / 255.0, "{t:?} {d:?}");
            }
        }
        let f = TexelFormat::new(TexelType::U8, 1).unwrap();
        let mut buf = [0u8; 1];
        f.encode([f32::NAN, 0.0, 0.0, 0.0], &mut buf);
        assert_eq!(f.decode(&buf), [0.0, 0.0, 0.0, 1.0]);
        let f = TexelFormat::new(TexelType::U16, 2).unwrap();
        let mut buf = [0u8; 4];
        f.encode([2.0, -1.0, 0.0, 0.0], &mut buf);
        assert_eq!(f.decode(&buf), [1.0, 0.0, 0.0, 1.0]);
    }
}
