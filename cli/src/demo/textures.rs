//! The scene's textures: which procedural source, in which format and size, sampled how.

use demandtex::sources::{Checkerboard, ImageSource, Mandelbrot, Noise};
use demandtex::textures::{AddressMode, TexelFormat, TextureDesc, TextureLayout};
use std::sync::Arc;

/// Which procedural image a texture shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Checkerboard with squares of `square` texels (a distinct colour per mip level).
    Checker {
        /// Square side in level-0 texels.
        square: u32,
    },
    /// Value noise.
    Noise {
        /// Random seed.
        seed: u32,
    },
    /// The Mandelbrot set.
    Mandelbrot {
        /// Iteration limit.
        iterations: u32,
    },
}

/// One texture of the scene: a procedural source and how it is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TextureSpec {
    /// The image.
    pub pattern: Pattern,
    /// Texel format.
    pub format: TexelFormat,
    /// Width and height in texels.
    pub size: u32,
    /// Address mode for both axes.
    pub address: AddressMode,
    /// Largest anisotropy honoured.
    pub max_anisotropy: u32,
}

impl TextureSpec {
    /// The image source.
    pub fn source(&self) -> Arc<dyn ImageSource> {
        let (w, h, f) = (self.size, self.size, self.format);
        match self.pattern {
            Pattern::Checker { square } => Arc::new(Checkerboard::new(w, h, square as _, f)),
            Pattern::Noise { seed } => Arc::new(Noise::new(w, h, seed as _, f)),
            Pattern::Mandelbrot { iterations } => {
                Arc::new(Mandelbrot::new(w, h, iterations as _, f))
            }
        }
    }

    /// The sampling descriptor.
    pub fn desc(&self) -> TextureDesc {
        TextureDesc {
            address: [self.address; 2],
            max_anisotropy: self.max_anisotropy,
            ..TextureDesc::default()
        }
    }

    /// Level-0 bytes of the texture the source describes.
    pub fn level0_bytes(source: &dyn ImageSource) -> Result<u64, String> {
        let info = source
            .open()
            .map_err(|e| format!("{}: {e}", source.name()))?;
        let layout = TextureLayout::new(info.width, info.height, info.num_levels, info.format)
            .map_err(|e| format!("{}: {e}", source.name()))?;
        Ok(layout.level0_bytes())
    }
}
