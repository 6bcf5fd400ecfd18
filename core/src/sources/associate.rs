//! Unassociated ("straight") alpha made associated (premultiplied) as OpenImageIO makes it
//! when it reads a PNG or a TIFF, so that textures filter and sample as `TextureSystem`
//! would serve them. One home for the rules, used by [`crate::sources::decoded`] (PNG)
//! and [`crate::sources::tiff`] (ExtraSamples 2).
//!
//! OpenImageIO 2.4 (`png.imageio`): a PNG's alpha is unassociated by definition and is
//! associated on read, in the integer samples, with the file's gamma: 1 unless the file
//! has a gAMA chunk and no sRGB chunk, then `1 / gAMA` rounded to hundredths (2.2 for
//! 0.45455). With a gamma of 1 a colour sample `c` becomes `c · a / max` (integer
//! division); otherwise `c · (a / max)^gamma`, truncated.
//!
//! OpenImageIO 2.4 (`targa.imageio`): a Targa file's alpha is associated on read as a PNG's
//! is (`c · a / max`, or with the gamma of the TGA 2.0 extension area), unless the
//! extension area says it is premultiplied already (alpha type 4), or every alpha sample is
//! 0 and the extension area does not say the alpha is useful (type 3): then the colour is
//! kept as stored (an alpha of zeros meant "no alpha" to the program that wrote it).
//!
//! OpenImageIO 2.4 (`tiff.imageio`), for a TIFF whose ExtraSamples say unassociated alpha:
//! `c · a / max` rounded to the nearest integer (unsigned samples; no ties: `max` is odd),
//! `c · a` for float samples (half rounded to nearest).

use crate::textures::{TexelFormat, TexelType};
use half::f16;
use std::io::{BufRead, Read, Seek, SeekFrom};

/// The gamma OpenImageIO associates a PNG's alpha with: 1 unless the file has a gAMA chunk
/// and no sRGB chunk. `None` when the file cannot be read as a PNG.
pub(crate) fn png_alpha_gamma(reader: impl BufRead + Seek) -> Option<f32> {
    let info = png::Decoder::new(reader).read_info().ok()?;
    let info = info.info();
    if info.srgb.is_some() {
        return Some(1.0);
    }
    Some(match info.gama_chunk {
        Some(g) if g.into_scaled() > 0 => {
            let g = (1.0 / (f64::from(g.into_scaled()) / 100_000.0)) as f32;
            ((100.0 * f64::from(g)) as f32).round() / 100.0
        }
        _ => 1.0,
    })
}

/// What a Targa file's TGA 2.0 extension area says of its alpha.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct TgaAlpha {
    /// The alpha type (0 none, 1 ignore, 2 retain, 3 useful, 4 premultiplied), if the file
    /// has an extension area.
    pub alpha_type: Option<u8>,
    /// The gamma of the extension area (1 without one, or with a zero denominator).
    pub gamma: f32,
}

/// The extension area's alpha type and gamma of a Targa file (one without a TGA 2.0
/// footer, or with a short or out-of-range extension area, has neither). `None` when the
/// file cannot be read.
pub(crate) fn tga_alpha(mut file: impl Read + Seek) -> Option<TgaAlpha> {
    let none = TgaAlpha {
        alpha_type: None,
        gamma: 1.0,
    };
    let len = file.seek(SeekFrom::End(0)).ok()?;
    if len < 26 {
        return Some(none);
    }
    let mut footer = [0u8; 26];
    file.seek(SeekFrom::Start(len - 26)).ok()?;
    file.read_exact(&mut footer).ok()?;
    if &footer[8..25] != b"TRUEVISION-XFILE." {
        return Some(none);
    }
    let at = u64::from(u32::from_le_bytes([
        footer[0], footer[1], footer[2], footer[3],
    ]));
    // The area: its size (u16, 495 in TGA 2.0), ..., gamma (two u16 at 478), ..., the
    // alpha type (the byte at 494).
    let mut area = [0u8; 495];
    if at.checked_add(495).is_none_or(|end| end > len)
        || file.seek(SeekFrom::Start(at)).is_err()
        || file.read_exact(&mut area).is_err()
        || u16::from_le_bytes([area[0], area[1]]) < 495
    {
        return Some(none);
    }
    let u16_at = |i: usize| u16::from_le_bytes([area[i], area[i + 1]]);
    let (num, den) = (u16_at(478), u16_at(480));
    Some(TgaAlpha {
        alpha_type: Some(area[494]),
        gamma: if den == 0 {
            1.0
        } else {
            f32::from(num) / f32::from(den)
        },
    })
}

/// Associate the alpha of a Targa file's 8-bit `texels` (2 or 4 channels) as OpenImageIO
/// does (see the [module docs](self)), given what its extension area says.
pub(crate) fn associate_tga_alpha(texels: &mut [u8], format: TexelFormat, alpha: TgaAlpha) {
    let n = format.channels as usize;
    if format.texel_type != TexelType::U8 || (n != 2 && n != 4) || alpha.alpha_type == Some(4) {
        return;
    }
    let all_zero = texels.chunks_exact(n).all(|t| t[n - 1] == 0);
    if all_zero && alpha.alpha_type != Some(3) {
        return;
    }
    associate_alpha(texels, format, alpha.gamma);
}

/// Associate the alpha (the last of 2 or 4 channels) of `texels` of `format` as
/// OpenImageIO associates a PNG's (see the [module docs](self)): 8- and 16-bit samples,
/// little-endian. Other formats and channel counts are left as they are.
pub(crate) fn associate_alpha(texels: &mut [u8], format: TexelFormat, gamma: f32) {
    let channels = format.channels as usize;
    if channels != 2 && channels != 4 {
        return;
    }
    match format.texel_type {
        TexelType::U8 => {
            for t in texels.chunks_exact_mut(channels) {
                let a = u32::from(t[channels - 1]);
                let associate = Associate::new(a, 255, gamma);
                for c in &mut t[..channels - 1] {
                    *c = associate.apply(u32::from(*c)) as u8;
                }
            }
        }
        TexelType::U16 => {
            for t in texels.chunks_exact_mut(channels * 2) {
                let at = (channels - 1) * 2;
                let a = u32::from(u16::from_le_bytes([t[at], t[at + 1]]));
                let associate = Associate::new(a, 65535, gamma);
                for c in t[..at].chunks_exact_mut(2) {
                    let v = associate.apply(u32::from(u16::from_le_bytes([c[0], c[1]])));
                    c.copy_from_slice(&(v as u16).to_le_bytes());
                }
            }
        }
        TexelType::F16 | TexelType::F32 => {}
    }
}

/// How one texel's colour samples are associated with its alpha.
enum Associate {
    /// Gamma 1: `c · a / max`, integer division.
    Linear { a: u32, max: u32 },
    /// `c · (a / max)^gamma`, truncated.
    Gamma { factor: f32 },
}

impl Associate {
    fn new(a: u32, max: u32, gamma: f32) -> Associate {
        if gamma == 1.0 {
            return Associate::Linear { a, max };
        }
        let inv_max = (1.0 / f64::from(max)) as f32;
        let factor = f64::from(a as f32 * inv_max).powf(f64::from(gamma)) as f32;
        Associate::Gamma { factor }
    }

    fn apply(&self, c: u32) -> u32 {
        match *self {
            // c, a ≤ 65535: the product fits in 32 bits.
            Associate::Linear { a, max } => c * a / max,
            Associate::Gamma { factor } => (c as f32 * factor) as u32,
        }
    }
}

/// Associate the alpha (the last of 2 or 4 channels) of `texels` of `format` as
/// OpenImageIO associates a TIFF's unassociated alpha (see the [module docs](self)).
/// Other channel counts are left as they are.
pub(crate) fn associate_rounded(texels: &mut [u8], format: TexelFormat) {
    let n = format.channels as usize;
    if n != 2 && n != 4 {
        return;
    }
    let sb = format.texel_type.bytes();
    for t in texels.chunks_exact_mut(n * sb) {
        let (colour, alpha) = t.split_at_mut((n - 1) * sb);
        match format.texel_type {
            TexelType::U8 => {
                let a = u32::from(alpha[0]);
                for c in colour.iter_mut() {
                    *c = ((u32::from(*c) * a + 127) / 255) as u8;
                }
            }
            TexelType::U16 => {
                let a = u32::from(u16::from_le_bytes([alpha[0], alpha[1]]));
                for c in colour.chunks_exact_mut(2) {
                    let v = u32::from(u16::from_le_bytes([c[0], c[1]]));
                    // ≤ 65535² + 32767 < 2^32.
                    let v = ((v * a + 32767) / 65535) as u16;
                    c.copy_from_slice(&v.to_le_bytes());
                }
            }
            TexelType::F16 => {
                let a = f16::from_le_bytes([alpha[0], alpha[1]]).to_f32();
                for c in colour.chunks_exact_mut(2) {
                    let v = f16::from_le_bytes([c[0], c[1]]).to_f32() * a;
                    c.copy_from_slice(&f16::from_f32(v).to_le_bytes());
                }
            }
            TexelType::F32 => {
                let a = f32::from_le_bytes([alpha[0], alpha[1], alpha[2], alpha[3]]);
                for c in colour.chunks_exact_mut(4) {
                    let v = f32::from_le_bytes([c[0], c[1], c[2], c[3]]) * a;
                    c.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
}
