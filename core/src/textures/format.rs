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
    /// components. Integer types are clamped to [0, 1] and rounded half away from zero;
    /// NaN becomes 0.
    #[inline]
    pub fn encode(self, rgba: [f32; 4], dst: &mut [u8]) {
        for (i, &v) in rgba.iter().enumerate().take(self.channels as usize) {
            encode_component(self.texel_type, v, dst, i);
        }
    }

    /// Encode a row of RGBA texels into `dst`, packed (`texel_bytes()` each), byte for byte
    /// as [`encode`](TexelFormat::encode) does texel by texel, but with the component type
    /// and channel count resolved once per row. Stops at the shorter of `rgba` and `dst`.
    pub fn encode_row(&self, rgba: &[[f32; 4]], dst: &mut [u8]) {
        match self.texel_type {
            TexelType::U8 => encode_typed(*self, rgba, dst, |v| [unorm(v, 255.0) as u8]),
            TexelType::U16 => encode_typed(*self, rgba, dst, |v| {
                (unorm(v, 65535.0) as u16).to_le_bytes()
            }),
            TexelType::F16 => encode_typed(*self, rgba, dst, |v| f16::from_f32(v).to_le_bytes()),
            TexelType::F32 => encode_typed(*self, rgba, dst, f32::to_le_bytes),
        }
    }
}

/// Channel letters and component type, e.g. `RGBA8`, `R16`, `RG16F`, `RGBA32F`.
impl std::fmt::Display for TexelFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let channels = match self.channels {
            1 => "R",
            2 => "RG",
            3 => "RGB",
            4 => "RGBA",
            _ => "?",
        };
        let ty = match self.texel_type {
            TexelType::U8 => "8",
            TexelType::U16 => "16",
            TexelType::F16 => "16F",
            TexelType::F32 => "32F",
        };
        write!(f, "{channels}{ty}")
    }
}

#[inline]
fn decode_component(t: TexelType, src: &[u8], i: usize) -> f32 {
    match t {
        TexelType::U8 => src[i] as f32 * (1.0 / 255.0),
        TexelType::U16 => u16::from_le_bytes([src[2 * i], src[2 * i + 1]]) as f32 * (1.0 / 65535.0),
        TexelType::F16 => f16::from_le_bytes([src[2 * i], src[2 * i + 1]]).to_f32(),
        TexelType::F32 => {
            f32::from_le_bytes([src[4 * i], src[4 * i + 1], src[4 * i + 2], src[4 * i + 3]])
        }
    }
}

#[inline]
fn encode_component(t: TexelType, v: f32, dst: &mut [u8], i: usize) {
    match t {
        TexelType::U8 => dst[i] = unorm(v, 255.0) as u8,
        TexelType::U16 => {
            dst[2 * i..2 * i + 2].copy_from_slice(&(unorm(v, 65535.0) as u16).to_le_bytes())
        }
        TexelType::F16 => dst[2 * i..2 * i + 2].copy_from_slice(&f16::from_f32(v).to_le_bytes()),
        TexelType::F32 => dst[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
    }
}

/// [`TexelFormat::encode_row`] for one component type of `B` bytes, dispatched on the
/// channel count.
#[inline(always)]
fn encode_typed<const B: usize>(
    format: TexelFormat,
    texels: &[[f32; 4]],
    dest: &mut [u8],
    component: impl Fn(f32) -> [u8; B],
) {
    fn run<const N: usize, const B: usize>(
        texels: &[[f32; 4]],
        dest: &mut [u8],
        component: impl Fn(f32) -> [u8; B],
    ) {
        for (rgba, texel) in texels.iter().zip(dest.chunks_exact_mut(N * B)) {
            // All four at once (one SIMD vector), then keep the first N.
            let encoded = rgba.map(&component);
            for (bytes, out) in encoded.iter().zip(texel.chunks_exact_mut(B)) {
                out.copy_from_slice(bytes);
            }
        }
    }
    match format.channels {
        1 => run::<1, B>(texels, dest, component),
        2 => run::<2, B>(texels, dest, component),
        4 => run::<4, B>(texels, dest, component),
        // Not a valid format; never reached through a checked read, but stay defined.
        _ => {
            let texel_bytes = format.texel_bytes().max(1);
            for (rgba, texel) in texels.iter().zip(dest.chunks_exact_mut(texel_bytes)) {
                format.encode(*rgba, texel);
            }
        }
    }
}

/// `v` clamped to [0, 1], scaled by `max` and rounded half away from zero (NaN gives 0):
/// the same integer as `(v.clamp(0.0, 1.0) * max).round()`, without a call to `roundf`
/// and in a form that vectorises.
#[inline(always)]
fn unorm(v: f32, max: f32) -> u32 {
    // NaN fails the comparison and becomes 0.
    let clamped = if v >= 0.0 { v.min(1.0) } else { 0.0 };
    round_small(clamped * max)
}

/// `x.round() as u32` for `x` in [0, 2^22]: adding 2^23 leaves the nearest integer (ties to
/// even) in the low mantissa bits; a tie that went down to even is then moved up.
#[inline(always)]
fn round_small(x: f32) -> u32 {
    const SHIFT: f32 = 8_388_608.0; // 2^23
    let nearest_even = (x + SHIFT).to_bits() & 0x007f_ffff;
    // Exact: |x - nearest| <= 0.5 and both are small.
    let tie_down = x - nearest_even as i32 as f32 == 0.5;
    nearest_even + tie_down as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_are_64_kib_for_every_format() {
        for t in [
            TexelType::U8,
            TexelType::U16,
            TexelType::F16,
            TexelType::F32,
        ] {
            for ch in [1, 2, 4] {
                let f = TexelFormat::new(t, ch).unwrap();
                let (w, h) = f.tile_extent();
                assert_eq!(
                    w as usize * h as usize * f.texel_bytes(),
                    crate::ids::TILE_BYTES,
                    "{f:?}"
                );
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
        for t in [
            TexelType::U8,
            TexelType::U16,
            TexelType::F16,
            TexelType::F32,
        ] {
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

    fn all_formats() -> Vec<TexelFormat> {
        let mut v = Vec::new();
        for t in [
            TexelType::U8,
            TexelType::U16,
            TexelType::F16,
            TexelType::F32,
        ] {
            for ch in [1, 2, 4] {
                v.push(TexelFormat::new(t, ch).unwrap());
            }
        }
        v
    }

    #[test]
    fn display_names_channels_and_type() {
        assert_eq!(TexelFormat::RGBA8.to_string(), "RGBA8");
        assert_eq!(TexelFormat::RGBA16F.to_string(), "RGBA16F");
        assert_eq!(TexelFormat::RGBA32F.to_string(), "RGBA32F");
        assert_eq!(
            TexelFormat::new(TexelType::F16, 2).unwrap().to_string(),
            "RG16F"
        );
        assert_eq!(
            TexelFormat::new(TexelType::U16, 1).unwrap().to_string(),
            "R16"
        );
        assert_eq!(
            TexelFormat::new(TexelType::F32, 1).unwrap().to_string(),
            "R32F"
        );
        let bad = TexelFormat {
            texel_type: TexelType::U8,
            channels: 3,
        };
        assert_eq!(bad.to_string(), "RGB8");
    }

    /// The encoding `encode` had before it shared `encode_row`'s rounding: libm `round`.
    fn reference_encode(f: TexelFormat, rgba: [f32; 4], dst: &mut [u8]) {
        let unorm = |v: f32, max: f32| {
            if v.is_nan() {
                0.0
            } else {
                (v.clamp(0.0, 1.0) * max).round()
            }
        };
        for (i, &v) in rgba.iter().enumerate().take(f.channels as usize) {
            match f.texel_type {
                TexelType::U8 => dst[i] = unorm(v, 255.0) as u8,
                TexelType::U16 => {
                    dst[2 * i..2 * i + 2].copy_from_slice(&(unorm(v, 65535.0) as u16).to_le_bytes())
                }
                TexelType::F16 => {
                    dst[2 * i..2 * i + 2].copy_from_slice(&f16::from_f32(v).to_le_bytes())
                }
                TexelType::F32 => dst[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes()),
            }
        }
    }

    #[test]
    fn run_encoding_matches_texel_encoding_exactly() {
        // Every rounding boundary of U8, a dense sweep, and the awkward values.
        let mut values: Vec<f32> = vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1.0,
            2.0,
            -1.0,
        ];
        values.push(0.499_999_97);
        values.push(f32::MIN_POSITIVE);
        for k in 0..=255 {
            let b = (k as f32 + 0.5) / 255.0;
            values.extend([
                b,
                f32::from_bits(b.to_bits() - 1),
                f32::from_bits(b.to_bits() + 1),
            ]);
        }
        for k in 0..=65535 {
            let b = (k as f32 + 0.5) / 65535.0;
            values.extend([
                b,
                f32::from_bits(b.to_bits() - 1),
                f32::from_bits(b.to_bits() + 1),
            ]);
        }
        values.extend((0..100_000).map(|i| i as f32 / 99_999.0 * 1.2 - 0.1));
        let texels: Vec<[f32; 4]> = values
            .chunks(4)
            .map(|c| {
                [
                    c[0],
                    c[c.len() / 2],
                    c[c.len() - 1],
                    c[c.len().div_ceil(2) % c.len()],
                ]
            })
            .chain(values.iter().map(|&v| [v, 1.0 - v, v * 0.5, v]))
            .collect();
        for f in all_formats() {
            let tb = f.texel_bytes();
            let mut fast = vec![0u8; texels.len() * tb];
            f.encode_row(&texels, &mut fast);
            let mut slow = vec![0u8; texels.len() * tb];
            for (t, d) in texels.iter().zip(slow.chunks_exact_mut(tb)) {
                f.encode(*t, d);
            }
            assert!(fast == slow, "{f:?}");
            // And both are what libm rounding gives.
            let mut reference = vec![0u8; texels.len() * tb];
            for (t, d) in texels.iter().zip(reference.chunks_exact_mut(tb)) {
                reference_encode(f, *t, d);
            }
            assert!(slow == reference, "{f:?}");
        }
        // An invalid format still writes within bounds (texel by texel).
        let three = TexelFormat {
            texel_type: TexelType::U8,
            channels: 3,
        };
        let mut out = [0u8; 6];
        three.encode_row(&[[1.0; 4], [0.0; 4]], &mut out);
        assert_eq!(out, [255, 255, 255, 0, 0, 0]);
    }

    #[test]
    fn rounding_matches_round_half_away_from_zero() {
        for k in 0..=70_000u32 {
            let base = k as f32;
            for x in [
                base,
                base + 0.5,
                base + 0.25,
                base + 0.75,
                f32::from_bits((base + 0.5).to_bits() - 1),
                f32::from_bits((base + 0.5).to_bits() + 1),
                f32::from_bits(base.to_bits().saturating_sub(1)),
            ] {
                assert_eq!(round_small(x), x.round() as u32, "{x}");
            }
        }
        assert_eq!(unorm(f32::NAN, 255.0), 0);
        assert_eq!(unorm(f32::INFINITY, 65535.0), 65535);
        assert_eq!(unorm(-1.0, 255.0), 0);
    }
}
