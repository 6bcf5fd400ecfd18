//! Duplicate-texture sharing (`LoaderOptions::share_duplicate_textures`): a texture that
//! opens with the same texels as an open one samples that texture's tile pages instead of
//! reading and holding its own.
//!
//! When a texture opens, its [`DuplicateKey`] (size, format, levels, page count, and a hash
//! of its mip tail and base colour) is looked up among the open textures that hold their
//! own tiles (the *owners*, indexed by key in [`DuplicateIndex`]). A key match is only a
//! candidate: the two sources' [`ContentIdentity`]s must then hold the same content
//! ([`same_content`]: one file, or two files with the same bytes, read the same way).
//! Only then does the texture become a *sharer*: its sampler addresses the owner's tile
//! range (its own description — wrap modes, filters, fallback — stays its own), it keeps
//! its own mip tail (small, counted in the budget as every tail is), and it reserves no
//! page range. Its lookups request, fill and evict the owner's pages: the tiles are read
//! once and held once.
//!
//! Lifetime: an owner's contents dropped (invalidate, replace, unload) drop every sharer's
//! too (`Engine::drop_contents`); they open again at their next lookup and may then share
//! with another owner, or own. A sharer dropped leaves the owner alone. A sharer never owns,
//! so there are no chains.

use super::engine::Engine;
use super::host_state::HostState;
use crate::ids::TextureId;
use crate::sources::identity::same_content;
use crate::sources::{ContentIdentity, ImageSource};
use crate::textures::DuplicateKey;
use std::collections::HashMap;
use std::sync::Arc;

/// The owners (open textures holding their own tiles) by key.
#[derive(Default)]
pub(crate) struct DuplicateIndex {
    owners: HashMap<DuplicateKey, Vec<TextureId>>,
}

impl DuplicateIndex {
    /// Owners indexed under `key` (some may have closed since: callers check).
    pub fn owners(&self, key: &DuplicateKey) -> &[TextureId] {
        self.owners.get(key).map_or(&[], |v| v.as_slice())
    }

    /// `texture` holds its own tiles under `key`.
    pub fn insert(&mut self, key: DuplicateKey, texture: TextureId) {
        let v = self.owners.entry(key).or_default();
        if !v.contains(&texture) {
            v.push(texture);
        }
    }

    /// `texture` no longer owns under `key`.
    pub fn remove(&mut self, key: &DuplicateKey, texture: TextureId) {
        if let Some(v) = self.owners.get_mut(key) {
            v.retain(|&t| t != texture);
            if v.is_empty() {
                self.owners.remove(key);
            }
        }
    }
}

/// An owner found for a texture: its id, generation and first tile page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Owner {
    pub texture: TextureId,
    pub generation: u32,
    pub start_page: u32,
}

impl HostState {
    /// The owners of `key` other than `texture` whose sources may hold its content, with
    /// their sources (to compare outside the lock).
    pub(crate) fn duplicate_candidates(
        &self,
        texture: TextureId,
        key: &DuplicateKey,
    ) -> Vec<(Owner, Arc<dyn ImageSource>)> {
        self.duplicates
            .owners(key)
            .iter()
            .filter(|&&t| t != texture)
            .filter_map(|&t| {
                let r = self.resources.get(t)?;
                let owner = Owner {
                    texture: t,
                    generation: r.generation,
                    start_page: r.start_page?,
                };
                self.owns_tiles(&owner, key)
                    .then(|| (owner, r.source.clone()))
            })
            .collect()
    }

    /// Whether `owner` still holds its own tiles under `key`, as it did when found: the key
    /// is cleared when its contents are dropped or it fails.
    pub(crate) fn owns_tiles(&self, owner: &Owner, key: &DuplicateKey) -> bool {
        self.resources.get(owner.texture).is_some_and(|r| {
            r.duplicate_key.as_ref() == Some(key)
                && r.tiles_of.is_none()
                && r.generation == owner.generation
                && r.start_page == Some(owner.start_page)
        })
    }

    /// `texture` holds its own tiles under `key` from now on.
    pub(crate) fn register_owner(&mut self, texture: TextureId, key: DuplicateKey) {
        if let Some(r) = self.resources.get_mut(texture) {
            r.duplicate_key = Some(key);
            self.duplicates.insert(key, texture);
        }
    }
}

impl Engine {
    /// Whether textures with the same content share tiles (the option is on and the
    /// backend lets two samplers address one range: `Backend::shares_texture_tiles`).
    pub(crate) fn shares_duplicate_textures(&self) -> bool {
        self.options.share_duplicate_textures && self.backend.shares_texture_tiles()
    }

    /// The first of `candidates` whose source holds the same content as `identity`.
    /// Compares files: call it outside the lock.
    pub(crate) fn confirm_duplicate(
        &self,
        identity: &ContentIdentity,
        candidates: Vec<(Owner, Arc<dyn ImageSource>)>,
    ) -> Option<Owner> {
        candidates.into_iter().find_map(|(owner, source)| {
            let theirs = source.content_identity()?;
            match same_content(identity, &theirs, &self.digests) {
                Ok(true) => Some(owner),
                Ok(false) => None,
                Err(e) => {
                    tracing::debug!("not sharing tiles with texture {}: {e}", owner.texture.0);
                    None
                }
            }
        })
    }
}
