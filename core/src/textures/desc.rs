//! How a texture is sampled: address modes, filters, anisotropy, fallback colour.

/// What happens to coordinates outside [0, 1). Values shared with C and CUDA
/// (0–3 equal CUDA's `CUaddress_mode`; [`FromFile`](AddressMode::FromFile) is resolved
/// when the texture opens, so sampler records and device code only ever see 0–3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum AddressMode {
    /// Repeat (periodic).
    #[default]
    Wrap = 0,
    /// Clamp to the edge texel.
    Clamp = 1,
    /// Repeat mirrored.
    Mirror = 2,
    /// Outside is transparent black.
    Border = 3,
    /// The file's own wrap mode for this axis (maketx's `wrapmodes` in a `.tx` or
    /// OpenEXR file, [`ImageSource::address_modes`]), else [`Border`](AddressMode::Border):
    /// OpenImageIO's `WrapDefault` and USD's `useMetadata`, which both read a file without
    /// the metadata as black. Resolved once, when the texture opens
    /// ([`TextureDesc::resolve_address`]).
    ///
    /// [`ImageSource::address_modes`]: crate::sources::ImageSource::address_modes
    FromFile = 4,
}

impl AddressMode {
    /// The mode for a device code (unknown codes are `Wrap`).
    pub fn from_code(code: u32) -> AddressMode {
        match code {
            1 => AddressMode::Clamp,
            2 => AddressMode::Mirror,
            3 => AddressMode::Border,
            4 => AddressMode::FromFile,
            _ => AddressMode::Wrap,
        }
    }

    /// OpenImageIO's name of a wrap mode (`black`, `clamp`, `periodic`, `mirror`, and its
    /// `periodic_pow2` and `periodic_sharedborder`, which repeat as `periodic` does), as
    /// maketx writes it; `None` for another name (OpenImageIO's `default`, or none it knows).
    pub fn from_oiio_name(name: &str) -> Option<AddressMode> {
        Some(match name.trim() {
            "black" => AddressMode::Border,
            "clamp" => AddressMode::Clamp,
            "periodic" | "periodic_pow2" | "periodic_sharedborder" => AddressMode::Wrap,
            "mirror" => AddressMode::Mirror,
            _ => return None,
        })
    }

    /// OpenImageIO's name of this mode (`FromFile` is its `default`).
    pub fn oiio_name(self) -> &'static str {
        match self {
            AddressMode::Wrap => "periodic",
            AddressMode::Clamp => "clamp",
            AddressMode::Mirror => "mirror",
            AddressMode::Border => "black",
            AddressMode::FromFile => "default",
        }
    }

    /// OpenImageIO's `wrapmodes` metadata, `s,t` (one name stands for both): the value of
    /// maketx's `wrapmodes` in a `.tx` and of the OpenEXR standard attribute, read as
    /// OpenImageIO's `Tex::parse_wrapmodes` reads it: s is the text up to the first comma,
    /// t everything after it (so `a,b,c` gives t the unknown name `b,c`), and an axis whose
    /// name is unknown is black. `None` when neither axis names a mode.
    pub fn parse_oiio_wrapmodes(text: &str) -> Option<[AddressMode; 2]> {
        let (s, t) = text.split_once(',').unwrap_or((text, text));
        match (
            AddressMode::from_oiio_name(s),
            AddressMode::from_oiio_name(t),
        ) {
            (None, None) => None,
            (s, t) => Some([
                s.unwrap_or(AddressMode::Border),
                t.unwrap_or(AddressMode::Border),
            ]),
        }
    }
}

/// Filtering within one mip level. Values equal CUDA's `CUfilter_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum FilterMode {
    /// Nearest texel.
    Point = 0,
    /// Bilinear.
    #[default]
    Linear = 1,
}

/// Filtering between mip levels. Values equal CUDA's `CUfilter_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[repr(u32)]
pub enum MipFilter {
    /// Nearest level.
    Point = 0,
    /// Blend the two levels around the level of detail (trilinear with a linear filter).
    #[default]
    Linear = 1,
}

/// The sampling state of a texture, fixed at creation.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct TextureDesc {
    /// Address modes for s and t.
    pub address: [AddressMode; 2],
    /// Filter within a level.
    pub filter: FilterMode,
    /// Filter between levels.
    pub mip_filter: MipFilter,
    /// Largest anisotropy ratio honoured (1 = isotropic; at most 16).
    pub max_anisotropy: u32,
    /// The colour every lookup returns once the texture has failed (its source could not
    /// be opened or read). Opaque magenta by default, so failures are visible.
    pub fallback_color: [f32; 4],
}

impl Default for TextureDesc {
    fn default() -> Self {
        TextureDesc {
            address: [AddressMode::Wrap; 2],
            filter: FilterMode::Linear,
            mip_filter: MipFilter::Linear,
            max_anisotropy: 1,
            fallback_color: DEFAULT_FALLBACK_COLOR,
        }
    }
}

impl TextureDesc {
    /// The default description with both axes [`AddressMode::FromFile`]: the file's own
    /// wrap modes, black where it names none — OpenImageIO's `WrapDefault`, what a lookup
    /// by file name (`texture(filename, ...)`) uses there, and what
    /// [`TextureCache::tex2d_grad_path`](crate::TextureCache::tex2d_grad_path) registers
    /// a path with.
    pub fn file_modes() -> TextureDesc {
        TextureDesc {
            address: [AddressMode::FromFile; 2],
            ..TextureDesc::default()
        }
    }

    /// The address modes the texture is sampled with, given the file's own (`file`, from
    /// [`ImageSource::address_modes`](crate::sources::ImageSource::address_modes)): an
    /// axis set to [`AddressMode::FromFile`] takes the file's mode for that axis, and
    /// [`AddressMode::Border`] when the file has none. The one place this rule lives.
    pub fn resolve_address(&self, file: Option<[AddressMode; 2]>) -> [AddressMode; 2] {
        let mut out = self.address;
        for (axis, mode) in out.iter_mut().enumerate() {
            if *mode == AddressMode::FromFile {
                *mode = match file.map(|f| f[axis]) {
                    Some(AddressMode::FromFile) | None => AddressMode::Border,
                    Some(m) => m,
                };
            }
        }
        out
    }

    /// This description with its address modes resolved against the file's
    /// ([`resolve_address`](TextureDesc::resolve_address)).
    pub fn resolved(&self, file: Option<[AddressMode; 2]>) -> TextureDesc {
        TextureDesc {
            address: self.resolve_address(file),
            ..*self
        }
    }
}

/// Opaque magenta: the default colour of failed textures.
pub const DEFAULT_FALLBACK_COLOR: [f32; 4] = [1.0, 0.0, 1.0, 1.0];

/// Most anisotropy supported (as CUDA).
pub const MAX_ANISOTROPY: u32 = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use AddressMode::*;

    #[test]
    fn oiio_wrapmodes_parse_as_maketx_writes_them() {
        let p = AddressMode::parse_oiio_wrapmodes;
        assert_eq!(p("black,black"), Some([Border, Border]));
        assert_eq!(p("periodic,clamp"), Some([Wrap, Clamp]));
        assert_eq!(p("mirror"), Some([Mirror, Mirror]));
        assert_eq!(p(" clamp , periodic "), Some([Clamp, Wrap]));
        assert_eq!(p("periodic_pow2,periodic_sharedborder"), Some([Wrap, Wrap]));
        // As OpenImageIO: an unknown name (its `default`) is black on its axis, and t is
        // everything after the first comma.
        assert_eq!(p("periodic,default"), Some([Wrap, Border]));
        assert_eq!(p("bogus,clamp"), Some([Border, Clamp]));
        assert_eq!(p("clamp,clamp,clamp"), Some([Clamp, Border]));
        assert_eq!(p("default"), None);
        assert_eq!(p("default,default"), None);
        assert_eq!(p(""), None);
    }

    #[test]
    fn from_file_takes_the_files_mode_per_axis_and_black_without_one() {
        let desc = TextureDesc {
            address: [FromFile, Clamp],
            ..TextureDesc::default()
        };
        assert_eq!(desc.resolve_address(Some([Wrap, Mirror])), [Wrap, Clamp]);
        assert_eq!(desc.resolve_address(None), [Border, Clamp]);
        assert_eq!(
            desc.resolve_address(Some([FromFile, Wrap])),
            [Border, Clamp]
        );
        let both = TextureDesc {
            address: [FromFile; 2],
            ..desc
        };
        assert_eq!(both.resolved(Some([Mirror, Wrap])).address, [Mirror, Wrap]);
        // Explicit modes win over the file's.
        let explicit = TextureDesc::default();
        assert_eq!(explicit.resolve_address(Some([Clamp, Clamp])), [Wrap, Wrap]);
        assert_eq!(AddressMode::from_code(FromFile as u32), FromFile);
        for m in [Wrap, Clamp, Mirror, Border] {
            assert_eq!(AddressMode::from_oiio_name(m.oiio_name()), Some(m));
        }
    }
}
