//! Which EXR channels become which texel components, and the conversion of decoded blocks
//! (per line, per channel in name order, native-endian) into interleaved texel rows.

use super::ChannelSelection;
use crate::textures::{TexelFormat, TexelType};
use exr::meta::attribute::{ChannelList, SampleType};
use half::f16;

/// Where one output component comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Component {
    /// A channel of the file: its sample type and the bytes of the channels stored before
    /// it in one texel (its row starts at `block width × prefix` within a decoded line).
    Channel { ty: SampleType, prefix: usize },
    /// The constant 1 (the alpha of an RGB selection).
    One,
}

/// The resolved selection: the texel format served and each component's origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// F16 when every selected channel is half, else F32; 1, 2 or 4 channels.
    pub format: TexelFormat,
    /// The first `format.channels` entries are used.
    pub components: [Component; 4],
    /// The selected channel names, for messages.
    pub names: Vec<String>,
    /// The file's channels that are not served, in name order.
    pub unserved: Vec<String>,
    /// Bytes of one texel of the decoded data (every channel of the file).
    pub file_texel_bytes: usize,
}

/// Resolve `selection` against the file's channels (sorted by name, as EXR stores them).
pub(crate) fn resolve(selection: &ChannelSelection, list: &ChannelList) -> Result<Plan, String> {
    let names: Vec<String> = list.list.iter().map(|c| c.name.to_string()).collect();
    let has = |n: &str| names.iter().any(|x| x == n);
    let missing = |what: &str, wanted: &[String]| {
        let absent: Vec<&str> = wanted
            .iter()
            .filter(|w| !has(w))
            .map(String::as_str)
            .collect();
        format!(
            "channel selection {what}: no channel {} (the file has {})",
            absent.join(", "),
            names.join(", ")
        )
    };
    let in_layer = |prefix: &str, letters: &[&str]| -> Vec<String> {
        letters.iter().map(|l| format!("{prefix}{l}")).collect()
    };
    // RGBA, RGB (+1) or luminance (Y, with its alpha A if there is one) of one layer ("" or
    // "name."), whichever is complete first. Y beside X is a vector's (X, Y, Z), not
    // luminance; with RY and BY it is luminance-chroma, which is not served (its chroma
    // would be lost).
    let standard = |prefix: &str| -> Result<Option<(Vec<String>, bool)>, String> {
        let rgba = in_layer(prefix, &["R", "G", "B", "A"]);
        if rgba.iter().all(|n| has(n)) {
            return Ok(Some((rgba, false)));
        }
        let rgb = in_layer(prefix, &["R", "G", "B"]);
        if rgb.iter().all(|n| has(n)) {
            return Ok(Some((rgb, true)));
        }
        let y = format!("{prefix}Y");
        if !has(&y) {
            return Ok(None);
        }
        let layer: Vec<&str> = names
            .iter()
            .filter_map(|n| n.strip_prefix(prefix))
            .filter(|rest| !rest.contains('.'))
            .collect();
        if layer.contains(&"RY") || layer.contains(&"BY") {
            return Err(format!(
                "luminance-chroma channels ({prefix}Y, {prefix}RY, {prefix}BY) are not served \
                 (convert the file to RGB, or select {y} alone by name)"
            ));
        }
        if layer.contains(&"X") {
            return Ok(None);
        }
        // Luminance and alpha: two channels (Y, A), as OpenImageIO orders them and as a
        // grey-and-alpha PNG is served.
        if layer.contains(&"A") {
            return Ok(Some((vec![y, format!("{prefix}A")], false)));
        }
        Ok(Some((vec![y], false)))
    };
    let (selected, widened): (Vec<String>, bool) = match selection {
        ChannelSelection::Auto => {
            let layer = single_layer(&names).map(|l| format!("{l}."));
            if let Some(s) = standard("")? {
                s
            } else if let Some(s) = match &layer {
                Some(prefix) => standard(prefix)?,
                None => None,
            } {
                s
            } else {
                let first: Vec<String> = names.iter().take(4).cloned().collect();
                let three = first.len() == 3;
                (first, three)
            }
        }
        ChannelSelection::Rgba => {
            let want = in_layer("", &["R", "G", "B", "A"]);
            if !want.iter().all(|n| has(n)) {
                return Err(missing("RGBA", &want));
            }
            (want, false)
        }
        ChannelSelection::Rgb => {
            let want = in_layer("", &["R", "G", "B"]);
            if !want.iter().all(|n| has(n)) {
                return Err(missing("RGB", &want));
            }
            (want, true)
        }
        ChannelSelection::Y => {
            let want = vec!["Y".to_string()];
            if !has("Y") {
                return Err(missing("Y", &want));
            }
            (want, false)
        }
        ChannelSelection::Layer(layer) => {
            let prefix = format!("{layer}.");
            if let Some(s) = standard(&prefix)? {
                s
            } else {
                let members: Vec<String> = names
                    .iter()
                    .filter(|n| n.starts_with(&prefix))
                    .take(4)
                    .cloned()
                    .collect();
                if !members.is_empty() {
                    let three = members.len() == 3;
                    (members, three)
                } else if has(layer) {
                    (vec![layer.clone()], false)
                } else {
                    return Err(format!(
                        "channel selection layer \"{layer}\": no channel {prefix}* or {layer} \
                         (the file has {})",
                        names.join(", ")
                    ));
                }
            }
        }
        ChannelSelection::Names(wanted) => {
            if wanted.is_empty() || wanted.len() > 4 {
                return Err(format!(
                    "channel selection of {} names (1 to 4 are served)",
                    wanted.len()
                ));
            }
            if !wanted.iter().all(|n| has(n)) {
                return Err(missing("by name", wanted));
            }
            (wanted.clone(), wanted.len() == 3)
        }
    };
    plan(list, selected, widened)
}

/// The one layer prefix every channel shares, if all channels are `layer.X`.
fn single_layer(names: &[String]) -> Option<String> {
    let first = names.first()?;
    let (layer, _) = first.rsplit_once('.')?;
    names
        .iter()
        .all(|n| n.rsplit_once('.').map(|(l, _)| l) == Some(layer))
        .then(|| layer.to_string())
}

/// Build the plan for `selected` channels (present in `list`), plus a constant alpha when
/// `widen` (three channels served as four).
fn plan(list: &ChannelList, selected: Vec<String>, widen: bool) -> Result<Plan, String> {
    let mut prefixes = Vec::with_capacity(list.list.len());
    let mut at = 0;
    for c in &list.list {
        prefixes.push(at);
        at += c.sample_type.bytes_per_sample();
    }
    let mut components = [Component::One; 4];
    let mut all_half = true;
    for (k, name) in selected.iter().enumerate() {
        let i = list
            .list
            .iter()
            .position(|c| c.name.to_string() == *name)
            .ok_or_else(|| format!("no channel {name}"))?;
        let ty = list.list[i].sample_type;
        all_half &= ty == SampleType::F16;
        components[k] = Component::Channel {
            ty,
            prefix: prefixes[i],
        };
    }
    let channels = match (selected.len(), widen) {
        (3, true) => 4,
        (n @ (1 | 2 | 4), false) => n as u32,
        (n, _) => return Err(format!("{n} channels selected (1 to 4 are served)")),
    };
    let texel_type = if all_half {
        TexelType::F16
    } else {
        TexelType::F32
    };
    let unserved = list
        .list
        .iter()
        .map(|c| c.name.to_string())
        .filter(|n| !selected.contains(n))
        .collect();
    Ok(Plan {
        format: TexelFormat {
            texel_type,
            channels,
        },
        components,
        unserved,
        names: selected,
        file_texel_bytes: at,
    })
}

/// A rectangle of a decoded block copied to a destination.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CopyRect {
    /// Width of the decoded block in texels.
    pub block_w: usize,
    /// First column and line within the block.
    pub sx: usize,
    /// First line within the block.
    pub sy: usize,
    /// Texels per row copied.
    pub w: usize,
    /// Rows copied.
    pub h: usize,
    /// Byte offset of the first destination texel.
    pub dest_at: usize,
    /// Bytes between destination rows.
    pub row_bytes: usize,
}

impl Plan {
    /// Convert the rectangle `c` of `block` into interleaved texels of `self.format` in
    /// `dest` (little-endian). The caller has checked every bound.
    pub fn copy(&self, block: &[u8], c: CopyRect, dest: &mut [u8]) {
        match (self.format.texel_type, self.format.channels) {
            (TexelType::F16, 1) => self.copy_n::<1, 2>(block, c, dest),
            (TexelType::F16, 2) => self.copy_n::<2, 2>(block, c, dest),
            (TexelType::F16, _) => self.copy_n::<4, 2>(block, c, dest),
            (_, 1) => self.copy_n::<1, 4>(block, c, dest),
            (_, 2) => self.copy_n::<2, 4>(block, c, dest),
            _ => self.copy_n::<4, 4>(block, c, dest),
        }
    }

    /// `N` components of `B` bytes each.
    #[inline(always)]
    fn copy_n<const N: usize, const B: usize>(&self, block: &[u8], c: CopyRect, dest: &mut [u8]) {
        let line_bytes = c.block_w * self.file_texel_bytes;
        let out_bytes = c.w * N * B;
        // The source rows of each component within a line, when all are stored channels
        // of the output's own type (the common case: a straight gather).
        let mut gather = [0usize; N];
        let straight = cfg!(target_endian = "little")
            && self.components[..N]
                .iter()
                .zip(&mut gather)
                .all(|(comp, g)| match *comp {
                    Component::Channel { ty, prefix }
                        if ty.bytes_per_sample() == B && ty != SampleType::U32 =>
                    {
                        *g = c.block_w * prefix + c.sx * B;
                        true
                    }
                    _ => false,
                });
        for j in 0..c.h {
            let line = &block[(c.sy + j) * line_bytes..][..line_bytes];
            let out = &mut dest[c.dest_at + j * c.row_bytes..][..out_bytes];
            if straight {
                let rows: [&[u8]; N] = std::array::from_fn(|k| &line[gather[k]..][..c.w * B]);
                gather_row::<N, B>(rows, out);
            } else {
                for k in 0..N {
                    convert_component::<N, B>(self.components[k], line, c, k, out);
                }
            }
        }
    }
}

/// Interleave `N` component rows of `B`-byte samples into `out`.
#[inline(always)]
fn gather_row<const N: usize, const B: usize>(rows: [&[u8]; N], out: &mut [u8]) {
    match rows[..] {
        [a] => out.copy_from_slice(a),
        [a, b, c, d] => {
            let texels = out.chunks_exact_mut(N * B);
            let samples = a
                .chunks_exact(B)
                .zip(b.chunks_exact(B))
                .zip(c.chunks_exact(B).zip(d.chunks_exact(B)));
            for (t, ((a, b), (c, d))) in texels.zip(samples) {
                t[..B].copy_from_slice(a);
                t[B..2 * B].copy_from_slice(b);
                t[2 * B..3 * B].copy_from_slice(c);
                t[3 * B..4 * B].copy_from_slice(d);
            }
        }
        _ => {
            for (i, t) in out.chunks_exact_mut(N * B).enumerate() {
                for (k, row) in rows.iter().enumerate() {
                    t[k * B..(k + 1) * B].copy_from_slice(&row[i * B..(i + 1) * B]);
                }
            }
        }
    }
}

/// Write component `k` of every texel of `out` from its origin in `line`.
#[inline(always)]
fn convert_component<const N: usize, const B: usize>(
    comp: Component,
    line: &[u8],
    c: CopyRect,
    k: usize,
    out: &mut [u8],
) {
    let texels = out
        .chunks_exact_mut(N * B)
        .map(|t| &mut t[k * B..(k + 1) * B]);
    let Component::Channel { ty, prefix } = comp else {
        let one: &[u8] = if B == 2 {
            &[0x00, 0x3C] // f16 1.0, little-endian
        } else {
            &[0x00, 0x00, 0x80, 0x3F] // f32 1.0, little-endian
        };
        texels.for_each(|t| t.copy_from_slice(one));
        return;
    };
    let start = c.block_w * prefix + c.sx * ty.bytes_per_sample();
    let src = &line[start..][..c.w * ty.bytes_per_sample()];
    match (ty, B) {
        (SampleType::F16, 2) => {
            for (t, s) in texels.zip(src.chunks_exact(2)) {
                t.copy_from_slice(&u16::from_ne_bytes([s[0], s[1]]).to_le_bytes());
            }
        }
        (SampleType::F16, _) => {
            for (t, s) in texels.zip(src.chunks_exact(2)) {
                let v = f16::from_bits(u16::from_ne_bytes([s[0], s[1]])).to_f32();
                t.copy_from_slice(&v.to_le_bytes());
            }
        }
        (SampleType::F32, _) => {
            for (t, s) in texels.zip(src.chunks_exact(4)) {
                t.copy_from_slice(&u32::from_ne_bytes([s[0], s[1], s[2], s[3]]).to_le_bytes());
            }
        }
        (SampleType::U32, _) => {
            for (t, s) in texels.zip(src.chunks_exact(4)) {
                let v = u32::from_ne_bytes([s[0], s[1], s[2], s[3]]) as f32;
                t.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exr::meta::attribute::ChannelDescription;

    /// A channel list of half channels, sorted by name as EXR stores them.
    fn list(names: &[&str]) -> ChannelList {
        let mut sorted = names.to_vec();
        sorted.sort_unstable();
        let channels = sorted
            .iter()
            .map(|n| ChannelDescription::named(*n, SampleType::F16))
            .collect();
        ChannelList::new(channels)
    }

    fn auto(names: &[&str]) -> Result<(Vec<String>, u32, Vec<String>), String> {
        let p = resolve(&ChannelSelection::Auto, &list(names))?;
        Ok((p.names, p.format.channels, p.unserved))
    }

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn auto_serves_rgba_rgb_and_luminance_images() {
        let (n, c, u) = auto(&["A", "B", "G", "R"]).unwrap();
        assert_eq!((n, c, u), (strings(&["R", "G", "B", "A"]), 4, vec![]));
        let (n, c, u) = auto(&["B", "G", "R", "Z"]).unwrap();
        assert_eq!((n, c, u), (strings(&["R", "G", "B"]), 4, strings(&["Z"])));
        let (n, c, _) = auto(&["Y"]).unwrap();
        assert_eq!((n, c), (strings(&["Y"]), 1));
        // Luminance and alpha: two channels, Y then A (OpenImageIO's order).
        let (n, c, u) = auto(&["A", "Y"]).unwrap();
        assert_eq!((n, c, u), (strings(&["Y", "A"]), 2, vec![]));
        let (n, c, _) = auto(&["diffuse.A", "diffuse.Y"]).unwrap();
        assert_eq!((n, c), (strings(&["diffuse.Y", "diffuse.A"]), 2));
        let (n, c, u) = auto(&["A", "Y", "Z"]).unwrap();
        assert_eq!((n, c, u), (strings(&["Y", "A"]), 2, strings(&["Z"])));
    }

    #[test]
    fn a_y_beside_other_channels_is_not_a_luminance_image() {
        // A vector (X, Y, Z, W): every channel, in name order, not Y alone.
        let (n, c, u) = auto(&["X", "Y", "Z", "W"]).unwrap();
        assert_eq!((n, c, u), (strings(&["W", "X", "Y", "Z"]), 4, vec![]));
        let (n, c, u) = auto(&["X", "Y"]).unwrap();
        assert_eq!((n, c, u), (strings(&["X", "Y"]), 2, vec![]));
        // Luminance and depth: Y, the depth named as not served.
        let (n, c, u) = auto(&["Y", "Z"]).unwrap();
        assert_eq!((n, c, u), (strings(&["Y"]), 1, strings(&["Z"])));
        // More than four: the first four, the rest named as not served.
        let (n, _, u) = auto(&["a", "b", "c", "d", "e"]).unwrap();
        assert_eq!((n, u), (strings(&["a", "b", "c", "d"]), strings(&["e"])));
    }

    #[test]
    fn luminance_chroma_is_an_error_unless_y_is_chosen() {
        let e = auto(&["BY", "RY", "Y"]).unwrap_err();
        assert!(e.contains("luminance-chroma"), "{e}");
        let e = auto(&["A", "BY", "RY", "Y"]).unwrap_err();
        assert!(e.contains("luminance-chroma"), "{e}");
        let p = resolve(&ChannelSelection::Y, &list(&["BY", "RY", "Y"])).unwrap();
        assert_eq!(p.names, strings(&["Y"]));
        let e = resolve(
            &ChannelSelection::Layer("l".into()),
            &list(&["l.BY", "l.RY", "l.Y"]),
        )
        .unwrap_err();
        assert!(e.contains("l.RY"), "{e}");
    }
}
