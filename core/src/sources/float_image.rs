//! `FloatImage`: an uncompressed image of 1 to 4 interleaved `f32` channels, the input of
//! [`crate::sources::mips::build_mips`] and [`crate::sources::exr::write_mip_exr`].

use crate::error::{Error, Result};

/// An image of `f32` samples: `channels` (1 to 4) interleaved per texel, rows top first.
///
/// The channel meaning follows the count: 1 = Y, 2 = Y A, 3 = R G B, 4 = R G B A.
#[derive(Clone, Debug, PartialEq)]
pub struct FloatImage {
    /// Width in texels (at least 1).
    pub width: u32,
    /// Height in texels (at least 1).
    pub height: u32,
    /// Channels per texel, 1 to 4.
    pub channels: u32,
    /// `width * height * channels` samples, interleaved, row-major, first row = top.
    pub data: Vec<f32>,
}

impl FloatImage {
    /// An image of the given size filled with zeros (for generators to fill in).
    pub fn zeros(width: u32, height: u32, channels: u32) -> FloatImage {
        let len = width as usize * height as usize * channels as usize;
        FloatImage {
            width,
            height,
            channels,
            data: vec![0.0; len],
        }
    }

    /// Checks the size, the channel count and the sample count
    /// ([`Error::InvalidArgument`] saying which is wrong).
    pub fn check(&self) -> Result<()> {
        if self.width == 0 || self.height == 0 {
            return Err(Error::InvalidArgument(format!(
                "image size {}x{} is empty",
                self.width, self.height
            )));
        }
        if !(1..=4).contains(&self.channels) {
            return Err(Error::InvalidArgument(format!(
                "{} channels per texel (1 to 4 supported)",
                self.channels
            )));
        }
        let expected = self.width as u64 * self.height as u64 * self.channels as u64;
        if self.data.len() as u64 != expected {
            return Err(Error::InvalidArgument(format!(
                "a {}x{} image of {} channels needs {expected} samples, got {}",
                self.width,
                self.height,
                self.channels,
                self.data.len()
            )));
        }
        Ok(())
    }

    /// The samples of texel `(x, y)` (`channels` values).
    ///
    /// # Panics
    /// If `(x, y)` is outside the image.
    pub fn texel(&self, x: u32, y: u32) -> &[f32] {
        assert!(
            x < self.width && y < self.height,
            "texel ({x}, {y}) outside the image"
        );
        let c = self.channels as usize;
        let i = (y as usize * self.width as usize + x as usize) * c;
        &self.data[i..i + c]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_rejects_bad_shapes_and_accepts_good_ones() {
        assert!(FloatImage::zeros(3, 2, 4).check().is_ok());
        assert!(FloatImage::zeros(0, 2, 4).check().is_err());
        assert!(FloatImage::zeros(3, 2, 5).check().is_err());
        assert!(FloatImage::zeros(3, 2, 0).check().is_err());
        let mut short = FloatImage::zeros(3, 2, 1);
        short.data.pop();
        assert!(matches!(short.check(), Err(Error::InvalidArgument(_))));
    }

    #[test]
    fn texel_addresses_interleaved_samples() {
        let mut img = FloatImage::zeros(3, 2, 2);
        for (i, v) in img.data.iter_mut().enumerate() {
            *v = i as f32;
        }
        assert_eq!(img.texel(2, 1), &[10.0, 11.0]);
        assert_eq!(img.texel(0, 1), &[6.0, 7.0]);
    }
}
