//! OpenImageIO's colour hints as `maketx` writes them: `oiio:ConstantColor` (every texel
//! has this value) and `oiio:AverageColor` (the image's mean), each a comma-separated list
//! of floats, one per channel in OpenImageIO's channel order. The TIFF (`.tx`) and
//! OpenEXR sources give them as the texture's base colour
//! ([`ImageSource::read_base_color`](super::ImageSource::read_base_color)) with no read of
//! the mip tail.

/// The values of a hint: 1 to 4 finite floats, else `None`.
pub(crate) fn parse_color(text: &str) -> Option<Vec<f32>> {
    let v: Option<Vec<f32>> = text.split(',').map(|s| s.trim().parse().ok()).collect();
    v.filter(|v| (1..=4).contains(&v.len()) && v.iter().all(|x| x.is_finite()))
}

/// The base colour a hint of `values` gives a texture served with `channels` channels in
/// the hint's order, as RGBA the way the served format decodes them (one channel
/// `(c, c, c, 1)`, two `(c0, c1, 0, 1)`, three `(r, g, b, 1)`); `None` if the counts
/// differ.
pub(crate) fn hint_rgba(values: &[f32], channels: usize) -> Option<[f32; 4]> {
    if values.len() != channels {
        return None;
    }
    Some(match values {
        [c] => [*c, *c, *c, 1.0],
        [a, b] => [*a, *b, 0.0, 1.0],
        [r, g, b] => [*r, *g, *b, 1.0],
        [r, g, b, a] => [*r, *g, *b, *a],
        _ => return None,
    })
}

/// The constant colour if there is one, else the average, as [`hint_rgba`] maps them.
pub(crate) fn base_color(
    constant: Option<&[f32]>,
    average: Option<&[f32]>,
    channels: usize,
) -> Option<[f32; 4]> {
    hint_rgba(constant.or(average)?, channels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_parse_as_maketx_writes_them_and_refuse_anything_else() {
        assert_eq!(
            parse_color("0.699765,0.649882,0.6"),
            Some(vec![0.699765, 0.649882, 0.6])
        );
        assert_eq!(parse_color("1.425"), Some(vec![1.425]));
        assert_eq!(parse_color(" 1 , 2 "), Some(vec![1.0, 2.0]));
        for bad in ["", "a,b", "1,2,3,4,5", "nan", "inf,1", "1,,2"] {
            assert_eq!(parse_color(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn colours_map_to_rgba_as_the_served_format_decodes_them() {
        assert_eq!(hint_rgba(&[0.5], 1), Some([0.5, 0.5, 0.5, 1.0]));
        assert_eq!(hint_rgba(&[0.5, 0.25], 2), Some([0.5, 0.25, 0.0, 1.0]));
        assert_eq!(hint_rgba(&[0.1, 0.2, 0.3], 3), Some([0.1, 0.2, 0.3, 1.0]));
        assert_eq!(
            hint_rgba(&[0.1, 0.2, 0.3, 0.4], 4),
            Some([0.1, 0.2, 0.3, 0.4])
        );
        assert_eq!(hint_rgba(&[0.1, 0.2, 0.3], 4), None);
        assert_eq!(
            base_color(Some(&[1.0]), Some(&[0.5]), 1),
            Some([1.0, 1.0, 1.0, 1.0])
        );
        assert_eq!(
            base_color(None, Some(&[0.5]), 1),
            Some([0.5, 0.5, 0.5, 1.0])
        );
        assert_eq!(base_color(None, None, 1), None);
    }
}
