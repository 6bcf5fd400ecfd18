//! Decoding a `convert` input (OpenEXR, DDS, PNG, JPEG, TIFF, Radiance HDR, Targa, BMP) to a
//! `FloatImage`.
//!
//! OpenEXR is read with the exr crate (scan-line or tiled, level 0 only, any part); DDS
//! and TIFF with core's readers (level 0 as the engine serves it: `dds::load_dds`,
//! `core_inputs::load_tiff`; a TIFF core does not serve falls back to the image crate); PNG,
//! JPEG, Radiance HDR, Targa and BMP with the image crate (8/16-bit gray, gray-alpha, RGB,
//! RGBA, and float), integers
//! mapped to [0, 1]. Channel selection (`--channels`) and sRGB linearisation
//! (`--linearize`, integer inputs only) happen here.

use super::FloatImage;
use crate::error::CliError;
use demandtex::sources::exr::describe;
use demandtex::sources::{open_file, ChannelSelection, FileFormat, SizeLimits};
use exr::prelude::{FlatSamples, ReadChannels, ReadLayers};
use rayon::prelude::*;
use std::io::Read;
use std::path::Path;

/// The first four bytes of every OpenEXR file.
pub const EXR_MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];

/// How to load an input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The input is refused, before decoding, if holding it decoded could take more than
    /// `limits.max_image_bytes` (core's rule for every size a file declares).
    pub limits: SizeLimits,
    /// Channel selection: a layer name (`diffuse` → `diffuse.R`, `.G`, `.B`, `.A` or
    /// `diffuse.Y`, `.A`), one channel name, or a comma-separated list of 1 to 4 channel
    /// names. `None`: R G B (A), else Y (A), else the only channel.
    pub channels: Option<String>,
    /// Convert sRGB-encoded integer inputs (8/16-bit) to linear (alpha stays as is).
    pub linearize: bool,
    /// Multiply colour by alpha (PNG, JPEG, TIFF store straight alpha; OpenEXR's convention
    /// is premultiplied). After linearisation. Off by default: samples stay as stored.
    pub premultiply: bool,
}

/// A decoded input and where it came from.
#[derive(Debug)]
pub struct Loaded {
    /// The pixels.
    pub image: FloatImage,
    /// "OpenEXR", "PNG", "JPEG", "TIFF".
    pub format: &'static str,
    /// The input channels selected, in output order.
    pub source_channels: Vec<String>,
    /// Whether the samples were converted from sRGB to linear.
    pub linearized: bool,
    /// Whether colour was multiplied by alpha.
    pub premultiplied: bool,
}

/// The input formats recognised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// OpenEXR, by magic number.
    Exr,
    /// DDS, by magic number (decoded by core's reader).
    Dds,
    /// A format of the image crate (PNG, JPEG, TIFF, Radiance HDR, Targa, BMP).
    Image(image::ImageFormat),
}

/// Detects the format of `path` from its first bytes, then from its extension.
pub fn detect_format(path: &Path) -> Result<InputFormat, CliError> {
    let mut head = [0u8; 16];
    let mut file = open_file(path).map_err(|e| open_error(path, e))?;
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(open_error(path, e)),
        }
    }
    let head = &head[..len];
    if head.starts_with(&EXR_MAGIC) {
        return Ok(InputFormat::Exr);
    }
    if demandtex::sources::FileFormat::from_magic(head) == Some(demandtex::sources::FileFormat::Dds)
    {
        return Ok(InputFormat::Dds);
    }
    let ext = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let format = image::guess_format(head)
        .ok()
        .or_else(|| ext.as_deref().and_then(image::ImageFormat::from_extension));
    match format {
        Some(
            f @ (image::ImageFormat::Png
            | image::ImageFormat::Jpeg
            | image::ImageFormat::Tiff
            | image::ImageFormat::Hdr
            | image::ImageFormat::Tga
            | image::ImageFormat::Bmp),
        ) => Ok(InputFormat::Image(f)),
        Some(image::ImageFormat::OpenExr) => Err(CliError::Io(format!(
            "{}: not an OpenEXR file (bad magic number)",
            path.display()
        ))),
        Some(f) => Err(CliError::Io(format!(
            "{}: {} images are not supported ({} are)",
            path.display(),
            format_name(f),
            FileFormat::IMAGE_FORMATS
        ))),
        None if len == 0 => Err(CliError::Io(format!(
            "{}: the file is empty",
            path.display()
        ))),
        None => Err(CliError::Io(format!(
            "{}: unrecognised image format ({} are supported)",
            path.display(),
            FileFormat::IMAGE_FORMATS
        ))),
    }
}

fn open_error(path: &Path, e: std::io::Error) -> CliError {
    CliError::Io(format!("cannot read {}: {e}", path.display()))
}

/// A short name of an image crate format (core's name for the formats it serves).
pub fn format_name(format: image::ImageFormat) -> &'static str {
    let core = match format {
        image::ImageFormat::Png => FileFormat::Png,
        image::ImageFormat::Jpeg => FileFormat::Jpeg,
        image::ImageFormat::Tiff => FileFormat::Tiff,
        image::ImageFormat::Hdr => FileFormat::Hdr,
        image::ImageFormat::Tga => FileFormat::Tga,
        image::ImageFormat::Bmp => FileFormat::Bmp,
        other => return other.extensions_str().first().copied().unwrap_or("unknown"),
    };
    core.name()
}

/// Decodes `path` as `options` say.
pub fn load(path: &Path, options: &LoadOptions) -> Result<Loaded, CliError> {
    match detect_format(path)? {
        InputFormat::Exr => {
            if options.linearize {
                tracing::warn!("--linearize ignored: OpenEXR samples are linear already");
            }
            if options.premultiply {
                tracing::warn!("--premultiply ignored: OpenEXR samples are premultiplied already");
            }
            check_exr_size(path, &options.limits)?;
            load_exr(path, options.channels.as_deref())
        }
        InputFormat::Dds => super::dds::load_dds(path, options),
        InputFormat::Image(image::ImageFormat::Tiff) => {
            match super::core_inputs::load_tiff(path, options)? {
                Ok(loaded) => Ok(loaded),
                // Not served by core (CCITT fax compression, 32-bit integers, …): the image
                // crate's decoder, and both reasons if it fails too.
                Err(core) => load_image(path, image::ImageFormat::Tiff, options)
                    .map_err(|e| CliError::Io(format!("{e} (the engine's reader: {core})"))),
            }
        }
        InputFormat::Image(format) => load_image(path, format, options),
    }
}

/// Runs a third-party decoder, turning a panic on a corrupt file into an error (with the
/// panic message kept off the terminal).
pub fn guarded<T>(
    path: &Path,
    decode: impl FnOnce() -> Result<T, CliError>,
) -> Result<T, CliError> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode));
    std::panic::set_hook(hook);
    result.unwrap_or_else(|_| {
        Err(CliError::Io(format!(
            "cannot decode {}: the decoder failed (corrupt file?)",
            path.display()
        )))
    })
}

fn load_image(
    path: &Path,
    format: image::ImageFormat,
    options: &LoadOptions,
) -> Result<Loaded, CliError> {
    let decode_error = |e: &dyn std::fmt::Display| {
        CliError::Io(format!(
            "cannot decode {} as {}: {e}",
            path.display(),
            format_name(format)
        ))
    };
    let reader = || -> Result<_, CliError> {
        let file = open_file(path).map_err(|e| open_error(path, e))?;
        Ok(image::ImageReader::with_format(
            std::io::BufReader::new(file),
            format,
        ))
    };
    // The size the file declares, checked before anything is decoded: at most 4 channels
    // of f32 are held (the decoder's own buffer is no larger).
    let (width, height) = guarded(path, || {
        reader()?.into_dimensions().map_err(|e| decode_error(&e))
    })?;
    options
        .limits
        .check_image_size(
            format_args!("{}: the decoded image", path.display()),
            (width.into(), height.into()),
            16,
        )
        .map_err(CliError::Io)?;
    let decoded = guarded(path, || {
        let mut reader = reader()?;
        let mut limits = image::Limits::no_limits();
        limits.max_alloc = Some(options.limits.max_image_bytes);
        reader.limits(limits);
        reader.decode().map_err(|e| decode_error(&e))
    })?;
    let (width, height) = (decoded.width(), decoded.height());
    use image::DynamicImage as D;
    // (channels, data, integer-encoded)
    let (channels, data, integer): (u32, Vec<f32>, bool) = match decoded {
        D::ImageLuma8(i) => (1, unorm8(i.as_raw()), true),
        D::ImageLumaA8(i) => (2, unorm8(i.as_raw()), true),
        D::ImageRgb8(i) => (3, unorm8(i.as_raw()), true),
        D::ImageRgba8(i) => (4, unorm8(i.as_raw()), true),
        D::ImageLuma16(i) => (1, unorm16(i.as_raw()), true),
        D::ImageLumaA16(i) => (2, unorm16(i.as_raw()), true),
        D::ImageRgb16(i) => (3, unorm16(i.as_raw()), true),
        D::ImageRgba16(i) => (4, unorm16(i.as_raw()), true),
        D::ImageRgb32F(i) => (3, i.into_raw(), false),
        D::ImageRgba32F(i) => (4, i.into_raw(), false),
        other => (4, other.into_rgba32f().into_raw(), false),
    };
    finish(
        path,
        format_name(format),
        (width, height, channels),
        data,
        integer,
        options,
    )
}

/// Channel selection, sRGB linearisation (integer samples only) and premultiplication of
/// a decoded `(width, height, channels)` image of `data`, as `options` say.
pub(crate) fn finish(
    path: &Path,
    format: &'static str,
    (width, height, channels): (u32, u32, u32),
    data: Vec<f32>,
    integer: bool,
    options: &LoadOptions,
) -> Result<Loaded, CliError> {
    let names = demandtex::sources::exr::writer::channel_names(channels);
    let available: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    let selected = select_channels(&available, options.channels.as_deref())
        .map_err(|m| CliError::Usage(format!("{}: {m}", path.display())))?;
    let mut image = FloatImage {
        width,
        height,
        channels,
        data,
    };
    if selected.iter().copied().ne(0..channels as usize) {
        image = pick(&image, &selected);
    }
    let linearized = options.linearize && integer;
    if options.linearize && !integer {
        tracing::warn!(
            "--linearize ignored: {} holds float samples",
            path.display()
        );
    }
    if linearized {
        linearize(&mut image);
    }
    let premultiplied = options.premultiply && (image.channels == 2 || image.channels == 4);
    if premultiplied {
        premultiply(&mut image);
    }
    Ok(Loaded {
        image,
        format,
        source_channels: selected.iter().map(|&i| available[i].clone()).collect(),
        linearized,
        premultiplied,
    })
}

fn unorm8(raw: &[u8]) -> Vec<f32> {
    let lut: Vec<f32> = (0..=255u32).map(|v| v as f32 / 255.0).collect();
    let mut out = vec![0.0f32; raw.len()];
    out.par_chunks_mut(1 << 16)
        .zip(raw.par_chunks(1 << 16))
        .for_each(|(o, r)| o.iter_mut().zip(r).for_each(|(o, &v)| *o = lut[v as usize]));
    out
}

fn unorm16(raw: &[u16]) -> Vec<f32> {
    let mut out = vec![0.0f32; raw.len()];
    out.par_chunks_mut(1 << 16)
        .zip(raw.par_chunks(1 << 16))
        .for_each(|(o, r)| {
            o.iter_mut()
                .zip(r)
                .for_each(|(o, &v)| *o = v as f32 / 65535.0)
        });
    out
}

/// The sRGB transfer function, encoded value to linear.
pub fn srgb_to_linear(v: f32) -> f32 {
    if v <= 0.04045 {
        v / 12.92
    } else {
        ((v + 0.055) / 1.055).powf(2.4)
    }
}

/// Converts the colour channels (all but the alpha of a 2- or 4-channel image) to linear.
fn linearize(image: &mut FloatImage) {
    let c = image.channels as usize;
    let colour = if c == 2 || c == 4 { c - 1 } else { c };
    image.data.par_chunks_mut(c * 4096).for_each(|texels| {
        for texel in texels.chunks_exact_mut(c) {
            for v in &mut texel[..colour] {
                *v = srgb_to_linear(*v);
            }
        }
    });
}

/// Multiplies the colour channels of a 2- or 4-channel image by its alpha (the last).
fn premultiply(image: &mut FloatImage) {
    let c = image.channels as usize;
    image.data.par_chunks_mut(c * 4096).for_each(|texels| {
        for texel in texels.chunks_exact_mut(c) {
            let a = texel[c - 1];
            for v in &mut texel[..c - 1] {
                *v *= a;
            }
        }
    });
}

/// A new image of the `selected` channels of `image`, in that order.
fn pick(image: &FloatImage, selected: &[usize]) -> FloatImage {
    let c = image.channels as usize;
    let mut data = Vec::with_capacity(image.data.len() / c * selected.len());
    for texel in image.data.chunks_exact(c) {
        data.extend(selected.iter().map(|&k| texel[k]));
    }
    FloatImage {
        width: image.width,
        height: image.height,
        channels: selected.len() as u32,
        data,
    }
}

/// Chooses channels among `available` (names) by `spec` (see `LoadOptions::channels`);
/// returns their indices in output order, or a message saying what is missing.
pub fn select_channels(available: &[String], spec: Option<&str>) -> Result<Vec<usize>, String> {
    let find = |name: &str| available.iter().position(|a| a == name);
    let layer = |prefix: &str| -> Option<Vec<usize>> {
        let q = |c: &str| {
            if prefix.is_empty() {
                find(c)
            } else {
                find(&format!("{prefix}.{c}"))
            }
        };
        if let (Some(r), Some(g), Some(b)) = (q("R"), q("G"), q("B")) {
            return Some(
                [Some(r), Some(g), Some(b), q("A")]
                    .into_iter()
                    .flatten()
                    .collect(),
            );
        }
        if let Some(y) = q("Y") {
            return Some([Some(y), q("A")].into_iter().flatten().collect());
        }
        None
    };
    let listing = || available.join(", ");
    match spec.map(str::trim) {
        None | Some("") => {
            if let Some(found) = layer("") {
                Ok(found)
            } else if available.len() == 1 {
                Ok(vec![0])
            } else {
                Err(format!(
                    "no R, G, B or Y channels; choose some with --channels (channels: {})",
                    listing()
                ))
            }
        }
        Some(list) if list.contains(',') => {
            let names: Vec<&str> = list.split(',').map(str::trim).collect();
            if !(1..=4).contains(&names.len()) {
                return Err(format!(
                    "--channels {list}: 1 to 4 channels, got {}",
                    names.len()
                ));
            }
            names
                .iter()
                .map(|n| {
                    find(n).ok_or_else(|| format!("no channel {n:?} (channels: {})", listing()))
                })
                .collect()
        }
        Some(name) => layer(name)
            .or_else(|| find(name).map(|i| vec![i]))
            .ok_or_else(|| format!("no layer or channel {name:?} (channels: {})", listing())),
    }
}

/// Refuse an OpenEXR input whose parts, decoded (every channel as at most 4-byte samples),
/// could take more than `limits.max_image_bytes`: its headers are read first (core's
/// parse, as `demandtex info`), so an absurd data window never reaches the decoder.
fn check_exr_size(path: &Path, limits: &SizeLimits) -> Result<(), CliError> {
    let d = describe(path, 0, &ChannelSelection::Auto).map_err(|e| CliError::Io(e.0))?;
    let bytes = d.parts.iter().fold(0u64, |sum, p| {
        let texel = 4 * p.channels.len() as u64;
        sum.saturating_add(p.width.saturating_mul(p.height).saturating_mul(texel))
    });
    limits
        .check_image(
            format_args!("{}: the decoded OpenEXR image", path.display()),
            bytes,
        )
        .map_err(CliError::Io)
}

fn load_exr(path: &Path, spec: Option<&str>) -> Result<Loaded, CliError> {
    let image = guarded(path, || {
        exr::prelude::read()
            .no_deep_data()
            .largest_resolution_level()
            .all_channels()
            .all_layers()
            .all_attributes()
            .from_file(path)
            .map_err(|e| {
                CliError::Io(format!(
                    "cannot read {} (truncated or corrupt OpenEXR?): {e}",
                    path.display()
                ))
            })
    })?;
    // Channel names as stored (`raw`) and qualified by their part's name, and where they are.
    let mut raw = Vec::new();
    let mut qualified = Vec::new();
    let mut location = Vec::new();
    for (part, layer) in image.layer_data.iter().enumerate() {
        let layer_name = layer.attributes.layer_name.as_ref().map(|n| n.to_string());
        for (k, ch) in layer.channel_data.list.iter().enumerate() {
            let name = ch.name.to_string();
            qualified.push(match &layer_name {
                Some(l) if !l.is_empty() && !name.starts_with(&format!("{l}.")) => {
                    format!("{l}.{name}")
                }
                _ => name.clone(),
            });
            raw.push(name);
            location.push((part, k));
        }
    }
    let usage = |m: String| CliError::Usage(format!("{}: {m}", path.display()));
    let selected = match spec {
        // The first part with usable channels.
        None => (0..image.layer_data.len())
            .find_map(|part| {
                let first = location.iter().position(|&(p, _)| p == part)?;
                let count = image.layer_data[part].channel_data.list.len();
                let found = select_channels(&raw[first..first + count], None).ok()?;
                Some(found.into_iter().map(|i| i + first).collect())
            })
            .ok_or_else(|| usage(select_channels(&qualified, None).unwrap_err()))?,
        // By stored name (the first part that has it), else by part-qualified name.
        Some(s) => select_channels(&raw, Some(s))
            .or_else(|_| select_channels(&qualified, Some(s)))
            .map_err(usage)?,
    };
    let part = location[selected[0]].0;
    let size = image.layer_data[part].size;
    let (width, height) = (size.x(), size.y());
    let mut planes = Vec::with_capacity(selected.len());
    for &i in &selected {
        let (p, k) = location[i];
        let layer = &image.layer_data[p];
        if layer.size != size {
            return Err(CliError::Usage(format!(
                "{}: the selected channels have different sizes",
                path.display()
            )));
        }
        let samples = &layer.channel_data.list[k].sample_data;
        if samples.len() != width * height {
            return Err(CliError::Io(format!(
                "{}: channel {} is subsampled (not supported)",
                path.display(),
                qualified[i]
            )));
        }
        planes.push(samples);
    }
    let c = planes.len();
    let mut data = vec![0.0f32; width * height * c];
    for (k, plane) in planes.iter().enumerate() {
        let out = data.iter_mut().skip(k).step_by(c);
        match plane {
            FlatSamples::F16(v) => out.zip(v.iter()).for_each(|(o, s)| *o = s.to_f32()),
            FlatSamples::F32(v) => out.zip(v.iter()).for_each(|(o, s)| *o = *s),
            FlatSamples::U32(v) => out.zip(v.iter()).for_each(|(o, s)| *o = *s as f32),
        }
    }
    let image = FloatImage {
        width: u32::try_from(width).map_err(|_| too_large(path))?,
        height: u32::try_from(height).map_err(|_| too_large(path))?,
        channels: c as u32,
        data,
    };
    Ok(Loaded {
        image,
        format: "OpenEXR",
        source_channels: selected.iter().map(|&i| qualified[i].clone()).collect(),
        linearized: false,
        premultiplied: false,
    })
}

fn too_large(path: &Path) -> CliError {
    CliError::Io(format!("{}: the image is too large", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn default_selection_prefers_rgba_then_y_then_a_lone_channel() {
        let rgba = names(&["A", "B", "G", "R"]);
        assert_eq!(select_channels(&rgba, None).unwrap(), vec![3, 2, 1, 0]);
        assert_eq!(
            select_channels(&names(&["B", "G", "R"]), None).unwrap(),
            vec![2, 1, 0]
        );
        assert_eq!(
            select_channels(&names(&["A", "Y"]), None).unwrap(),
            vec![1, 0]
        );
        assert_eq!(select_channels(&names(&["Z"]), None).unwrap(), vec![0]);
        let err = select_channels(&names(&["diffuse.R", "Z"]), None).unwrap_err();
        assert!(err.contains("diffuse.R"), "{err}");
    }

    #[test]
    fn layers_single_names_and_lists_select_in_order() {
        let all = names(&[
            "diffuse.B",
            "diffuse.G",
            "diffuse.R",
            "spec.Y",
            "Z",
            "R",
            "G",
            "B",
        ]);
        assert_eq!(
            select_channels(&all, Some("diffuse")).unwrap(),
            vec![2, 1, 0]
        );
        assert_eq!(select_channels(&all, Some("spec")).unwrap(), vec![3]);
        assert_eq!(select_channels(&all, Some("Z")).unwrap(), vec![4]);
        assert_eq!(select_channels(&all, Some("Z, R")).unwrap(), vec![4, 5]);
        assert!(select_channels(&all, Some("nope")).is_err());
        assert!(select_channels(&all, Some("R,G,B,Z,R")).is_err());
        assert!(select_channels(&all, Some("R,X")).is_err());
    }

    #[test]
    fn srgb_curve_hits_its_anchors() {
        assert_eq!(srgb_to_linear(0.0), 0.0);
        assert!((srgb_to_linear(1.0) - 1.0).abs() < 1e-6);
        assert!((srgb_to_linear(0.5) - 0.21404).abs() < 1e-4);
        let mut img = FloatImage {
            width: 1,
            height: 1,
            channels: 2,
            data: vec![0.5, 0.5],
        };
        linearize(&mut img);
        assert!((img.data[0] - 0.21404).abs() < 1e-4);
        assert_eq!(img.data[1], 0.5, "alpha stays");
        premultiply(&mut img);
        assert!((img.data[0] - 0.10702).abs() < 1e-4);
        assert_eq!(img.data[1], 0.5);
    }

    #[test]
    fn unknown_and_empty_files_are_clear_errors() {
        let dir = std::env::temp_dir().join(format!("demandtex-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.png");
        std::fs::write(&empty, b"").unwrap();
        assert!(load(&empty, &LoadOptions::default()).is_err());
        let text = dir.join("notes.txt");
        std::fs::write(&text, b"hello, not an image").unwrap();
        let err = detect_format(&text).unwrap_err().to_string();
        assert!(err.contains("unrecognised"), "{err}");
        let fake = dir.join("fake.exr");
        std::fs::write(&fake, b"hello, not an image").unwrap();
        let err = detect_format(&fake).unwrap_err().to_string();
        assert!(err.contains("not an OpenEXR"), "{err}");
        assert!(detect_format(&dir.join("missing.png")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
