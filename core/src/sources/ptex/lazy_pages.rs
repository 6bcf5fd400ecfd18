//! [`LazyPtexPages`]: a Ptex file registered as a pages texture before it is parsed. Only
//! its header is read at registration (a missing file, a file that is not Ptex, or a
//! version or type the reader does not serve is an error then); the face table, constants,
//! level info and packing ([`PtexPages`]) are read when the engine opens the texture, at
//! its first lookup (or soon after registration in interactive mode), as for every other
//! source, so registering thousands of files costs a header read each and a file no
//! lookup reaches is never parsed. A file that fails to parse is a failed texture.

use super::{DecodeCache, PtexError, PtexFile, PtexOptions, PtexPages, UnitFill};
use crate::sources::{FileHandles, ImageInfo, ImageSource, Readiness, SourceError};
use crate::textures::TileRegion;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A Ptex file as a source of packed pages, parsed at its first use (module
/// documentation).
pub struct LazyPtexPages {
    path: PathBuf,
    options: PtexOptions,
    handles: Arc<FileHandles>,
    fill: UnitFill,
    /// Where the file keeps the sources of its reductions (its engine's cache).
    decode_cache: Arc<DecodeCache>,
    /// Faces, from the header (edits never change the count).
    num_faces: u32,
    pages: OnceLock<Result<Arc<PtexPages>, PtexError>>,
}

impl std::fmt::Debug for LazyPtexPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyPtexPages")
            .field("path", &self.path)
            .field("parsed", &self.pages.get().map(|p| p.is_ok()))
            .finish()
    }
}

impl LazyPtexPages {
    /// The file at `path`, read through `handles`, filled as `fill` says, the sources of
    /// its reductions kept in `decode_cache`, once its header has been read and checked
    /// ([`PtexFile::read_header_shared`]); nothing else is read.
    pub fn new(
        path: &Path,
        options: PtexOptions,
        handles: Arc<FileHandles>,
        fill: UnitFill,
        decode_cache: Arc<DecodeCache>,
    ) -> Result<LazyPtexPages, PtexError> {
        let header = PtexFile::read_header_shared(path, handles.clone())?;
        Ok(LazyPtexPages {
            path: path.to_owned(),
            options,
            handles,
            fill,
            decode_cache,
            num_faces: header.nfaces,
            pages: OnceLock::new(),
        })
    }

    /// The parsed file and its packing: parsed now (in this thread, once for all threads)
    /// if nothing has asked before; the parse's error, every time, if it failed.
    pub fn pages(&self) -> Result<&Arc<PtexPages>, PtexError> {
        self.pages
            .get_or_init(|| {
                let mut file =
                    PtexFile::open_shared(&self.path, self.options, self.handles.clone())?;
                file.use_decode_cache(self.decode_cache.clone());
                Ok(Arc::new(PtexPages::with_fill(Arc::new(file), self.fill)?))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The parsed file and its packing, if it has been parsed (successfully) already.
    pub fn pages_if_parsed(&self) -> Option<&Arc<PtexPages>> {
        self.pages.get()?.as_ref().ok()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The number of faces (from the header: known before the parse).
    pub fn num_faces(&self) -> u32 {
        self.num_faces
    }

    /// [`LazyPtexPages::pages`] for the engine's calls, which come after `open`.
    fn opened(&self) -> Result<&Arc<PtexPages>, SourceError> {
        self.pages().map_err(|e| SourceError(e.to_string()))
    }
}

impl ImageSource for LazyPtexPages {
    fn name(&self) -> String {
        format!("{} (Ptex pages)", self.path.display())
    }

    /// Parse the file (the first time) and describe its pages.
    fn open(&self) -> Result<ImageInfo, SourceError> {
        self.opened()?.open()
    }

    fn read_region(
        &self,
        region: TileRegion,
        dest: &mut [u8],
        row_bytes: usize,
    ) -> Result<Readiness, SourceError> {
        self.opened()?.read_region(region, dest, row_bytes)
    }

    fn read_base_color(&self) -> Result<Option<[f32; 4]>, SourceError> {
        self.opened()?.read_base_color()
    }

    /// The per-face constants of the parsed file (0 before the parse: the engine asks
    /// after `open`).
    fn held_bytes(&self) -> u64 {
        self.pages_if_parsed().map_or(0, |p| p.held_bytes())
    }

    fn tiles_coalescable(&self) -> bool {
        false
    }

    fn texels_are_words(&self) -> bool {
        true
    }
}
