//! The key under which open textures are compared for duplicate-texture sharing
//! (`crate::requests` has the rule; `LoaderOptions::share_duplicate_textures`): what two
//! textures must agree on before their files are compared at all.

use super::{TexelFormat, TextureLayout};

/// What two textures must agree on before their files are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DuplicateKey {
    width: u32,
    height: u32,
    levels: u32,
    num_pages: u32,
    format: TexelFormat,
    /// XXH3-128 of the packed mip tail and the base-colour entry.
    content_hash: u128,
}

impl DuplicateKey {
    /// The key of a texture opened with `layout`, whose mip tail is `tail` and whose
    /// base-colour entry is `base_color`.
    pub fn new(layout: &TextureLayout, tail: &[u8], base_color: u64) -> DuplicateKey {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(tail);
        h.update(&base_color.to_le_bytes());
        DuplicateKey {
            width: layout.width,
            height: layout.height,
            levels: layout.num_levels(),
            num_pages: layout.num_pages,
            format: layout.format,
            content_hash: h.digest128(),
        }
    }
}
