//! PNG, JPEG, Radiance HDR, Targa and BMP images as an [`ImageSource`]: formats with no
//! tiles and no mip levels, served the way scan-line OpenEXR files are.
//! [`open`](ImageSource::open) reads only the header (size and channels), checked against
//! [`SizeLimits`] before anything is allocated — level 0 and the generated levels held
//! whole must fit `max_image_bytes` — so a PNG whose header declares 100000² pixels is an
//! error naming the file and the limit. The first read decodes level 0 (the `image` crate's
//! decoders, under an allocation limit) and generates the mip levels from it by the box
//! filter of the generated EXR levels ([`crate::sources::exr`]), on scoped threads; every
//! read after that is a row copy, until the loader releases the decode
//! ([`ImageSource::whole_decode`]): it fills the pages it needs from one decode, with the
//! decode's bytes charged to the texture budget, and then lets it go, so that what stays in
//! memory is pages inside the budget. A warning says once that the file is slow to serve.
//!
//! Samples are served as stored: 8-bit and 16-bit unsigned (normalised by the sampler), or
//! float (Radiance HDR's RGBE, as OpenImageIO decodes it), 1, 2 or 4 channels (RGB widened
//! to RGBA with an opaque alpha); sRGB-encoded values are not linearised (convert with
//! `demandtex convert --linearize` for that). A PNG's and a Targa file's alpha,
//! unassociated by the formats' definitions, is associated (premultiplied) as OpenImageIO
//! associates it on read ([`associate`]: a Targa file's unless its extension area says it
//! is premultiplied, or its alpha is all zeros), so lookups give what `TextureSystem`
//! gives and filtering does not bleed the colour of transparent texels. A BMP's alpha is
//! served as stored, as OpenImageIO serves it. 5- and 6-bit samples (16-bit Targa and BMP
//! pixels) are expanded by bit replication, as OpenImageIO expands them
//! ([`low_bits`](super::low_bits)).

use super::associate;
use super::exr::mips::{self, GenLevel, GeneratedLevels};
use super::open_file;
use super::region::{check_read, full_chain_info};
use super::{ImageInfo, ImageSource, Readiness, SizeLimits, SourceError, WholeDecode};
use crate::textures::{TexelFormat, TexelType, TileRegion};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// A PNG, JPEG, Radiance HDR, Targa or BMP file, decoded whole at its first read. See the
/// module docs (`sources/decoded.rs`).
pub struct DecodedImageSource {
    path: PathBuf,
    limits: SizeLimits,
    /// What the header said at the last `open`.
    info: Mutex<Option<ImageInfo>>,
    /// The decoded levels, level 0 then the generated ones (or why they could not be
    /// made), dropped at every `open` after the first and when the loader releases them;
    /// read from a file once spilled ([`ImageSource::spill_decoded`]).
    levels: GeneratedLevels,
    /// Whether the warning that the file is decoded whole has been given.
    warned: AtomicBool,
    /// Decodes made (successful or not).
    decodes: AtomicU64,
}

impl std::fmt::Debug for DecodedImageSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodedImageSource")
            .field("path", &self.path)
            .field("info", &*self.info.lock())
            .finish_non_exhaustive()
    }
}

/// The served format of a decoder's colour type, and whether RGB is widened to RGBA.
fn served_format(color: image::ColorType) -> Result<(TexelFormat, bool), String> {
    use image::ColorType as C;
    let (texel_type, channels) = match color {
        C::L8 => (TexelType::U8, 1),
        C::La8 => (TexelType::U8, 2),
        C::Rgb8 => (TexelType::U8, 3),
        C::Rgba8 => (TexelType::U8, 4),
        C::L16 => (TexelType::U16, 1),
        C::La16 => (TexelType::U16, 2),
        C::Rgb16 => (TexelType::U16, 3),
        C::Rgba16 => (TexelType::U16, 4),
        C::Rgb32F => (TexelType::F32, 3),
        C::Rgba32F => (TexelType::F32, 4),
        other => return Err(format!("colour type {other:?} is not served")),
    };
    let format = TexelFormat {
        texel_type,
        channels: if channels == 3 { 4 } else { channels },
    };
    Ok((format, channels == 3))
}

impl DecodedImageSource {
    /// A source for the image file at `path` with the default [`SizeLimits`]. Lazy:
    /// the file is not touched until [`ImageSource::open`].
    pub fn new(path: impl Into<PathBuf>) -> DecodedImageSource {
        DecodedImageSource::with_limits(path, SizeLimits::default())
    }

    /// A source for the file at `path` within `limits`.
    pub fn with_limits(path: impl Into<PathBuf>, limits: SizeLimits) -> DecodedImageSource {
        DecodedImageSource {
            path: path.into(),
            limits,
            info: Mutex::new(None),
            levels: GeneratedLevels::new(0),
            warned: AtomicBool::new(false),
            decodes: AtomicU64::new(0),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the decoded image is held now: from a read until the loader releases it
    /// ([`ImageSource::release_decoded`]).
    pub fn holds_decode(&self) -> bool {
        self.levels.is_made()
    }

    /// How many times the file has been decoded.
    pub fn decodes(&self) -> u64 {
        self.decodes.load(Ordering::Relaxed)
    }

    /// Whether reads come from a spilled copy of the decode ([`ImageSource::spill_decoded`]).
    pub fn is_spilled(&self) -> bool {
        self.levels.is_spilled()
    }

    fn error(&self, reason: impl std::fmt::Display) -> SourceError {
        SourceError(format!("{}: {reason}", self.path.display()))
    }

    fn reader(&self) -> Result<image::ImageReader<std::io::BufReader<std::fs::File>>, SourceError> {
        // As `ImageReader::open`: the format from the extension, then from the contents.
        let file =
            open_file(&self.path).map_err(|e| self.error(format_args!("cannot open: {e}")))?;
        let mut reader = image::ImageReader::new(std::io::BufReader::new(file));
        if let Ok(format) = image::ImageFormat::from_path(&self.path) {
            reader.set_format(format);
        }
        reader
            .with_guessed_format()
            .map_err(|e| self.error(format_args!("cannot open: {e}")))
    }

    /// The header: size and served format, checked against the limits.
    fn header(&self) -> Result<(ImageInfo, bool), SourceError> {
        use image::ImageDecoder;
        let decoder = self
            .reader()?
            .into_decoder()
            .map_err(|e| self.error(format_args!("cannot read the header: {e}")))?;
        let (w, h) = decoder.dimensions();
        let (format, widen) = served_format(decoder.color_type()).map_err(|e| self.error(e))?;
        // Level 0 and its generated levels (a third more), held whole.
        let tb = format.texel_bytes() as u64;
        let bytes = (u128::from(w) * u128::from(h) * u128::from(tb) * 4 / 3) as u64;
        self.limits
            .check_image(
                format_args!(
                    "{}: the decoded image and its mip levels ({w}×{h}, {tb} bytes per texel)",
                    self.path.display()
                ),
                bytes,
            )
            .map_err(SourceError)?;
        let info = full_chain_info(w, h, format).map_err(|e| self.error(e))?;
        Ok((info, widen))
    }

    /// The file again, after its decode, for what the decoder does not report (alpha
    /// conventions, sample widths).
    fn reopen(&self) -> Result<std::io::BufReader<std::fs::File>, SourceError> {
        open_file(&self.path)
            .map(std::io::BufReader::new)
            .map_err(|e| self.error(format_args!("cannot open: {e}")))
    }

    /// Associate the alpha of decoded level 0 as OpenImageIO does on read (see
    /// [`associate`]): a PNG's and a Targa file's alpha is unassociated (a Targa file's
    /// unless it says otherwise); a BMP's is served as stored, as OpenImageIO serves it.
    fn associate(
        &self,
        file_format: Option<image::ImageFormat>,
        bytes: &mut [u8],
        format: TexelFormat,
    ) -> Result<(), SourceError> {
        match file_format {
            Some(image::ImageFormat::Png) => {
                let gamma = associate::png_alpha_gamma(self.reopen()?)
                    .ok_or_else(|| self.error("cannot read the PNG's chunks again"))?;
                associate::associate_alpha(bytes, format, gamma);
            }
            Some(image::ImageFormat::Tga) => {
                let alpha = associate::tga_alpha(self.reopen()?)
                    .ok_or_else(|| self.error("cannot read the Targa file's footer"))?;
                associate::associate_tga_alpha(bytes, format, alpha);
            }
            _ => {}
        }
        Ok(())
    }

    /// 5- and 6-bit colour samples (16-bit Targa and BMP pixels) expanded to 8 bits as
    /// OpenImageIO expands them ([`low_bits`](super::low_bits)): `bytes` holds `channels`
    /// 8-bit channels a texel.
    fn replicate_narrow_samples(
        &self,
        file_format: Option<image::ImageFormat>,
        bytes: &mut [u8],
        channels: usize,
    ) -> Result<(), SourceError> {
        use super::low_bits::{bmp_sample_bits, replicate_bits, targa_sample_bits};
        type Header = fn(std::io::BufReader<std::fs::File>) -> Option<Option<[u32; 3]>>;
        let header: Header = match file_format {
            Some(image::ImageFormat::Tga) => targa_sample_bits,
            Some(image::ImageFormat::Bmp) => bmp_sample_bits,
            _ => return Ok(()),
        };
        let bits =
            header(self.reopen()?).ok_or_else(|| self.error("cannot read the header again"))?;
        if let Some(bits) = bits {
            replicate_bits(bytes, channels, bits);
        }
        Ok(())
    }

    /// Decode level 0 and generate the other levels.
    fn decode(&self) -> Result<Vec<GenLevel>, SourceError> {
        self.decodes.fetch_add(1, Ordering::Relaxed);
        let (info, widen) = self.header()?;
        let mut reader = self.reader()?;
        let mut limits = image::Limits::no_limits();
        limits.max_alloc = Some(self.limits.max_image_bytes);
        reader.limits(limits);
        let file_format = reader.format();
        let image = reader
            .decode()
            .map_err(|e| self.error(format_args!("cannot decode: {e}")))?;
        if (image.width(), image.height()) != (info.width, info.height) {
            return Err(self.error("the decoded size differs from the header's"));
        }
        let mut bytes: Vec<u8> = match image {
            image::DynamicImage::ImageRgb32F(i) => {
                i.into_raw().iter().flat_map(|v| v.to_le_bytes()).collect()
            }
            image::DynamicImage::ImageRgba32F(i) => {
                i.into_raw().iter().flat_map(|v| v.to_le_bytes()).collect()
            }
            other => {
                let mut b = other.into_bytes();
                if info.format.texel_type == TexelType::U16 {
                    // Native-endian u16 from the decoder; served little-endian.
                    for v in b.chunks_exact_mut(2) {
                        let x = u16::from_ne_bytes([v[0], v[1]]);
                        v.copy_from_slice(&x.to_le_bytes());
                    }
                }
                b
            }
        };
        let sb = info.format.texel_type.bytes();
        let channels = info.format.channels as usize;
        // (A widened format's bytes are still three channels, with no alpha.)
        if info.format.texel_type == TexelType::U8 {
            let stored = if widen { 3 } else { channels };
            self.replicate_narrow_samples(file_format, &mut bytes, stored)?;
        }
        if !widen && (channels == 2 || channels == 4) {
            self.associate(file_format, &mut bytes, info.format)?;
        }
        let data = if widen {
            let one: &[u8] = match info.format.texel_type {
                TexelType::U8 => &[255],
                TexelType::U16 => &[255, 255],
                _ => &[0, 0, 0x80, 0x3f],
            };
            let mut out = Vec::with_capacity(bytes.len() / 3 * 4);
            for px in bytes.chunks_exact(3 * sb) {
                out.extend_from_slice(px);
                out.extend_from_slice(one);
            }
            out
        } else {
            bytes
        };
        let (w, h) = (info.width as usize, info.height as usize);
        let row_bytes = w * info.format.texel_bytes();
        let read = |y: usize, rows: usize, dest: &mut [u8]| {
            dest.copy_from_slice(&data[y * row_bytes..(y + rows) * row_bytes]);
            Ok(())
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}: a {}-bit image (no tiles, no mip levels): decoded whole and levels 1..{} \
                 generated from it at each read that needs them. Make a tiled, mip-mapped \
                 texture of it with `demandtex convert` or `maketx`.",
                self.path.display(),
                info.format.texel_type.bytes() * 8,
                info.num_levels
            );
        }
        let generated = mips::generate(
            info.format,
            (w, h),
            info.num_levels as usize,
            1,
            threads,
            &read,
        )?;
        let mut levels = Vec::with_capacity(generated.len() + 1);
        levels.push(GenLevel {
            width: w,
            height: h,
            data,
        });
        levels.extend(generated);
        Ok(levels)
    }
}

impl ImageSource for DecodedImageSource {
    fn name(&self) -> String {
        self.path.display().to_string()
    }

    fn content_identity(&self) -> Option<crate::sources::ContentIdentity> {
        Some(crate::sources::ContentIdentity {
            file: self.path.clone(),
            reading: "decoded image".into(),
            fingerprint: None,
        })
    }

    /// Reads the header only; every `open` after the first drops what was decoded, so
    /// the next read decodes the file now at the path.
    fn open(&self) -> Result<ImageInfo, SourceError> {
        let (info, _) = self.header()?;
        let mut last = self.info.lock();
        if last.is_some() {
            self.levels.reset();
        }
        *last = Some(info);
        Ok(info)
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        let info = self
            .info
            .lock()
            .ok_or_else(|| self.error("read before open"))?;
        check_read(&info, region, dest.len(), row_bytes).map_err(|e| self.error(e))?;
        let tb = info.format.texel_bytes();
        self.levels
            .read_with(region, dest, row_bytes, tb, || self.decode())?;
        Ok(Readiness::Ready)
    }

    /// Every level: the image is decoded whole and its levels generated from it.
    fn whole_decode(&self) -> Option<WholeDecode> {
        self.levels.whole_decode(self.info.lock().as_ref()?)
    }

    fn release_decoded(&self) {
        self.levels.release();
    }

    fn spill_decoded(
        &self,
        dir: &Path,
        ledger: &crate::sources::SpillLedger,
    ) -> Result<u64, SourceError> {
        let Some(info) = *self.info.lock() else {
            return Ok(0);
        };
        self.levels.spill(dir, ledger, &info, &self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("dtex-decoded-{}-{name}", std::process::id()))
    }

    /// A PNG of `w × h` RGB8 declared in its header, with (too little) data.
    fn crafted_png(path: &Path, w: u32, h: u32) {
        let chunk = |out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]| {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            let start = out.len();
            out.extend_from_slice(kind);
            out.extend_from_slice(data);
            let mut crc = flate2::Crc::new();
            crc.update(&out[start..]);
            out.extend_from_slice(&crc.sum().to_be_bytes());
        };
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut ihdr = w.to_be_bytes().to_vec();
        ihdr.extend_from_slice(&h.to_be_bytes());
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        chunk(&mut out, b"IHDR", &ihdr);
        chunk(
            &mut out,
            b"IDAT",
            &[0x78, 0x9C, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01],
        );
        chunk(&mut out, b"IEND", &[]);
        std::fs::write(path, out).unwrap();
    }

    #[test]
    fn a_png_declaring_100000_squared_pixels_is_refused_at_open_naming_file_and_limit() {
        let path = temp("huge.png");
        crafted_png(&path, 100_000, 100_000);
        let e = DecodedImageSource::new(&path).open().unwrap_err().0;
        assert!(
            e.contains("huge.png") && e.contains("max_image_bytes"),
            "{e}"
        );
        // Within the limits, the missing data is a decode error at the first read.
        crafted_png(&path, 64, 64);
        let src = DecodedImageSource::new(&path);
        src.open().unwrap();
        let mut buf = vec![0u8; 4];
        let region = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 1,
            height: 1,
        };
        assert!(src.read_region(region, &mut buf, 4).is_err());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn png_and_jpeg_serve_level_0_as_stored_and_generated_levels() {
        let path = temp("rgb.png");
        let img =
            image::RgbImage::from_fn(6, 4, |x, y| image::Rgb([x as u8 * 40, y as u8 * 60, 7]));
        img.save(&path).unwrap();
        let src = DecodedImageSource::new(&path);
        let info = src.open().unwrap();
        assert_eq!((info.width, info.height, info.num_levels), (6, 4, 3));
        assert_eq!(info.format, TexelFormat::RGBA8);
        let mut l0 = vec![0u8; 6 * 4 * 4];
        let region = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: 6,
            height: 4,
        };
        src.read_region(region, &mut l0, 24).unwrap();
        assert_eq!(&l0[4 * 7..4 * 8], &[40, 60, 7, 255]);
        let mut top = [0u8; 4];
        let last = TileRegion {
            level: 2,
            width: 1,
            height: 1,
            ..region
        };
        src.read_region(last, &mut top, 4).unwrap();
        assert_eq!(top[2], 7);
        assert_eq!(top[3], 255);
        let jpg = temp("gray.jpg");
        image::GrayImage::from_pixel(16, 8, image::Luma([128]))
            .save(&jpg)
            .unwrap();
        let src = DecodedImageSource::new(&jpg);
        let info = src.open().unwrap();
        assert_eq!(info.format.channels, 1);
        let mut px = [0u8; 1];
        src.read_region(last, &mut px, 1).unwrap();
        assert!((126..=130).contains(&px[0]), "{px:?}");
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&jpg).unwrap();
    }

    /// A 4×1 PNG of `texels` (RGBA, or grey and alpha) at `depth` bits, with an sRGB chunk
    /// or a gAMA chunk as asked.
    fn alpha_png(
        path: &Path,
        texels: &[u16],
        color: png::ColorType,
        depth: png::BitDepth,
        chunk: &str,
    ) {
        let channels = if color == png::ColorType::Rgba { 4 } else { 2 };
        let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
        let mut e = png::Encoder::new(file, (texels.len() / channels) as u32, 1);
        e.set_color(color);
        e.set_depth(depth);
        match chunk {
            "srgb" => e.set_source_srgb(png::SrgbRenderingIntent::Perceptual),
            "gama 0.45455" => e.set_source_gamma(png::ScaledFloat::from_scaled(45455)),
            "gama 1" => e.set_source_gamma(png::ScaledFloat::from_scaled(100_000)),
            _ => {}
        }
        let data: Vec<u8> = match depth {
            png::BitDepth::Eight => texels.iter().map(|&v| v as u8).collect(),
            _ => texels.iter().flat_map(|v| v.to_be_bytes()).collect(),
        };
        let mut w = e.write_header().unwrap();
        w.write_image_data(&data).unwrap();
    }

    fn level_0(path: &Path, channels: usize, sample_bytes: usize) -> Vec<u16> {
        let src = DecodedImageSource::new(path);
        let info = src.open().unwrap();
        let tb = channels * sample_bytes;
        let mut out = vec![0u8; info.width as usize * tb];
        let region = TileRegion {
            level: 0,
            x: 0,
            y: 0,
            width: info.width,
            height: 1,
        };
        src.read_region(region, &mut out, info.width as usize * tb)
            .unwrap();
        match sample_bytes {
            1 => out.iter().map(|&v| u16::from(v)).collect(),
            _ => out
                .chunks_exact(2)
                .map(|v| u16::from_le_bytes([v[0], v[1]]))
                .collect(),
        }
    }

    #[test]
    fn png_alpha_is_associated_as_openimageio_associates_it() {
        // The expected texels are OpenImageIO 2.4.7's (`oiiotool --dumpdata`) of the same
        // files: integer `c · a / 255` without a gAMA chunk, with an sRGB chunk, or with a
        // gAMA of 1; `c · (a / 255)^2.2` truncated with a gAMA of 0.45455.
        let texels = [
            200, 100, 50, 128, 255, 255, 255, 1, 77, 180, 3, 254, 10, 20, 30, 0,
        ];
        let linear = [100, 50, 25, 128, 1, 1, 1, 1, 76, 179, 2, 254, 0, 0, 0, 0];
        let gamma = [43, 21, 10, 128, 0, 0, 0, 1, 76, 178, 2, 254, 0, 0, 0, 0];
        let path = temp("alpha.png");
        for (chunk, want) in [
            ("", linear),
            ("srgb", linear),
            ("gama 1", linear),
            ("gama 0.45455", gamma),
        ] {
            alpha_png(
                &path,
                &texels,
                png::ColorType::Rgba,
                png::BitDepth::Eight,
                chunk,
            );
            assert_eq!(level_0(&path, 4, 1), want, "{chunk:?}");
        }
        // Grey and alpha.
        alpha_png(
            &path,
            &[200, 128, 255, 1],
            png::ColorType::GrayscaleAlpha,
            png::BitDepth::Eight,
            "",
        );
        assert_eq!(level_0(&path, 2, 1), [100, 128, 1, 1]);
        // 16-bit: c · a / 65535.
        let texels = [60000, 30000, 100, 40000, 65535, 1, 2, 65535];
        alpha_png(
            &path,
            &texels,
            png::ColorType::Rgba,
            png::BitDepth::Sixteen,
            "",
        );
        assert_eq!(
            level_0(&path, 4, 2),
            [36621, 18310, 61, 40000, 65535, 1, 2, 65535]
        );
        std::fs::remove_file(&path).unwrap();
    }
}
