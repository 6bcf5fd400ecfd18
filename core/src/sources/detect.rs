//! The one home of file-format detection: what a texture file is, by its first bytes
//! (then its extension), and the [`ImageSource`] that serves it. Every front end that
//! accepts a texture path (the texture cache, UDIM patterns, the C ABI, `demandtex info`)
//! asks here.

use super::dds::{DdsSource, DDS_MAGIC};
use super::decoded::DecodedImageSource;
use super::tiff::TiffSource;
use super::{ExrSource, ImageSource};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// The first bytes of every OpenEXR file.
pub const EXR_MAGIC: [u8; 4] = [0x76, 0x2f, 0x31, 0x01];
/// The first bytes of every Ptex file.
pub const PTEX_MAGIC: [u8; 4] = *b"Ptex";

/// A texture file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum FileFormat {
    /// OpenEXR (served by [`ExrSource`]).
    OpenExr,
    /// TIFF, `.tx` included, classic or BigTIFF (served by [`TiffSource`]).
    Tiff,
    /// PNG (decoded whole by [`DecodedImageSource`]).
    Png,
    /// JPEG (decoded whole by [`DecodedImageSource`]).
    Jpeg,
    /// Ptex (per-face textures: `crate::sources::ptex`, not an image source).
    Ptex,
    /// DDS: BC1–BC7 blocks or plain texels (served by [`DdsSource`]).
    Dds,
    /// Radiance HDR (RGBE; decoded whole by [`DecodedImageSource`]).
    Hdr,
    /// Targa (no magic number: by its `.tga`/`.tpic` extension; decoded whole by
    /// [`DecodedImageSource`]).
    Tga,
    /// BMP (decoded whole by [`DecodedImageSource`]).
    Bmp,
}

impl FileFormat {
    /// The format's name: "OpenEXR", "TIFF", "PNG", "JPEG", "Ptex", "DDS", "Radiance HDR",
    /// "Targa", "BMP".
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::OpenExr => "OpenEXR",
            FileFormat::Tiff => "TIFF",
            FileFormat::Png => "PNG",
            FileFormat::Jpeg => "JPEG",
            FileFormat::Ptex => "Ptex",
            FileFormat::Dds => "DDS",
            FileFormat::Hdr => "Radiance HDR",
            FileFormat::Tga => "Targa",
            FileFormat::Bmp => "BMP",
        }
    }

    /// Whether textures of this format are image sources ([`file_source`]); Ptex files are
    /// per-face textures, served otherwise.
    pub fn is_image(self) -> bool {
        self != FileFormat::Ptex
    }

    /// The image formats [`file_source`] serves, for messages.
    pub const IMAGE_FORMATS: &'static str =
        "OpenEXR, TIFF/.tx, DDS, PNG, JPEG, Radiance HDR, Targa, BMP";

    /// The format of a file starting with `head`, if its magic number says.
    pub fn from_magic(head: &[u8]) -> Option<FileFormat> {
        Some(if head.starts_with(&EXR_MAGIC) {
            FileFormat::OpenExr
        } else if head.starts_with(&PTEX_MAGIC) {
            FileFormat::Ptex
        } else if head.starts_with(&DDS_MAGIC) {
            FileFormat::Dds
        } else if head.starts_with(b"II*\0")
            || head.starts_with(b"MM\0*")
            || head.starts_with(b"II+\0")
            || head.starts_with(b"MM\0+")
        {
            FileFormat::Tiff
        } else if head.starts_with(b"\x89PNG\r\n\x1a\n") {
            FileFormat::Png
        } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
            FileFormat::Jpeg
        } else if head.starts_with(b"#?") {
            // "#?RADIANCE" or "#?RGBE".
            FileFormat::Hdr
        } else if head.starts_with(b"BM") {
            FileFormat::Bmp
        } else {
            return None;
        })
    }

    /// The format a file name's extension suggests (`.exr`, `.tx`/`.tif`/`.tiff`, `.png`,
    /// `.jpg`/`.jpeg`, `.ptx`, `.dds`, `.hdr`/`.rgbe`, `.tga`/`.tpic`, `.bmp`).
    pub fn from_extension(path: &Path) -> Option<FileFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "exr" => FileFormat::OpenExr,
            "tx" | "tif" | "tiff" => FileFormat::Tiff,
            "png" => FileFormat::Png,
            "jpg" | "jpeg" => FileFormat::Jpeg,
            "ptx" | "ptex" => FileFormat::Ptex,
            "dds" => FileFormat::Dds,
            "hdr" | "rgbe" => FileFormat::Hdr,
            "tga" | "tpic" => FileFormat::Tga,
            "bmp" => FileFormat::Bmp,
            _ => return None,
        })
    }
}

/// The format of the file at `path` by its magic number, then (for Targa, which has none)
/// its extension. `Ok(None)`: readable, but no format known here (or empty).
pub fn detect_format(path: &Path) -> std::io::Result<Option<FileFormat>> {
    let mut head = [0u8; 8];
    let mut file = super::open_file(path)?;
    let mut len = 0;
    while len < head.len() {
        match file.read(&mut head[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let by_extension = || FileFormat::from_extension(path).filter(|f| *f == FileFormat::Tga);
    Ok(FileFormat::from_magic(&head[..len]).or_else(|| (len > 0).then(by_extension).flatten()))
}

/// The image source for the texture file at `path`: by its magic number, else its
/// extension, else OpenEXR. A file that cannot be read now (missing, say) gets the source
/// its extension names, which reports the error when the loader opens it: registering a
/// path never fails, and a bad file gives its texture's fallback colour. Ptex files have
/// no image source (they are per-face textures); they get an OpenEXR source that fails
/// with "not an OpenEXR file".
pub fn file_source(path: &Path) -> Arc<dyn ImageSource> {
    let format = detect_format(path)
        .ok()
        .flatten()
        .or_else(|| FileFormat::from_extension(path));
    match format {
        Some(FileFormat::Tiff) => Arc::new(TiffSource::new(path)),
        Some(
            FileFormat::Png
            | FileFormat::Jpeg
            | FileFormat::Hdr
            | FileFormat::Tga
            | FileFormat::Bmp,
        ) => Arc::new(DecodedImageSource::new(path)),
        Some(FileFormat::Dds) => Arc::new(DdsSource::new(path)),
        _ => Arc::new(ExrSource::new(path)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers_then_extensions_name_the_format() {
        assert_eq!(
            FileFormat::from_magic(&EXR_MAGIC),
            Some(FileFormat::OpenExr)
        );
        assert_eq!(
            FileFormat::from_magic(b"II*\0\x08\0\0\0"),
            Some(FileFormat::Tiff)
        );
        assert_eq!(FileFormat::from_magic(b"MM\0+"), Some(FileFormat::Tiff));
        assert_eq!(
            FileFormat::from_magic(b"\x89PNG\r\n\x1a\n"),
            Some(FileFormat::Png)
        );
        assert_eq!(
            FileFormat::from_magic(&[0xff, 0xd8, 0xff, 0xe0]),
            Some(FileFormat::Jpeg)
        );
        assert_eq!(FileFormat::from_magic(b"Ptex"), Some(FileFormat::Ptex));
        assert_eq!(FileFormat::from_magic(b"DDS \x7c"), Some(FileFormat::Dds));
        assert_eq!(
            FileFormat::from_extension(Path::new("t.DDS")),
            Some(FileFormat::Dds)
        );
        assert_eq!(FileFormat::from_magic(b"hello"), None);
        assert_eq!(FileFormat::from_magic(b""), None);
        assert_eq!(
            FileFormat::from_extension(Path::new("a/b.TX")),
            Some(FileFormat::Tiff)
        );
        assert_eq!(FileFormat::from_extension(Path::new("a/b")), None);
        let tx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tx/const.tx");
        assert_eq!(detect_format(&tx).unwrap(), Some(FileFormat::Tiff));
        assert!(file_source(&tx).open().is_ok());
        // Unreadable: by extension, failing at open with the file's name.
        let missing = Path::new("/nonexistent/dir/m.tx");
        let e = file_source(missing).open().unwrap_err().0;
        assert!(e.contains("m.tx"), "{e}");
    }
}
