//! Content identity: whether two sources serve the same texels, for duplicate-texture
//! sharing (`LoaderOptions::share_duplicate_textures`).
//!
//! A file-backed source names its file and how it reads it ([`ContentIdentity`]). Two
//! sources serve the same texels when they read the same way and their files hold the
//! same bytes: the same file (Unix: one inode, however many paths, links or UDIM
//! spellings reach it), two files that carry the same writer's fingerprint (maketx's
//! `oiio:SHA-1`, [`maketx_fingerprint`]), or two files of one length whose bytes hash
//! alike ([`same_content`]). The engine asks only about textures whose layout, format and
//! mip tail already match, so hashing reads both files once, and only for likely copies.
//!
//! maketx writes the SHA-1 of the source pixels (and of its options that change them)
//! into every `.tx` and OpenEXR texture it makes; two files made from one source differ in
//! their bytes (the command line, the date) but not in their texels. OpenImageIO's
//! ImageCache shares such files' tiles (its `deduplicate` option, on by default) when
//! their format, channels and levels match; here the engine's match (size, format, levels,
//! pages and a hash of the mip tail) comes first, and the fingerprints then stand in for
//! the whole-file hash. The fingerprint leaves out maketx's output compression: an
//! OpenEXR file compressed lossily (B44, DWA, PXR24) has other texels under the same
//! fingerprint, so such files give none and are compared by their bytes (TIFF sources
//! serve only lossless compressions). A file edited after maketx by a tool that kept its fingerprint
//! would be taken for its source's copy, as OpenImageIO takes it;
//! `LoaderOptions::share_duplicate_textures = false` turns sharing off.
//!
//! The hash is XXH3-128 over the whole file (`xxhash-rust`): two different files of the
//! same length collide with probability about 2^-128. It is remembered per file version
//! (`FileIdentity`: inode, length, modification time) in a [`DigestCache`], so a file
//! is read for it at most once while it stays unchanged.

use super::exr::FileIdentity;
use super::SourceError;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which bytes a source's texels come from, and how it reads them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContentIdentity {
    /// The file the texels are read from.
    pub file: PathBuf,
    /// How they are read (the format and the source's options that change texels: an
    /// EXR part and channel selection, say). Sources reading one file differently give
    /// different strings.
    pub reading: String,
    /// The fingerprint of the texels that the file's writer stored in it, when it has one
    /// (maketx's `oiio:SHA-1`: [`maketx_fingerprint`]).
    pub fingerprint: Option<String>,
}

/// The fingerprint in a maketx `oiio:SHA-1` value (OpenEXR attribute, or TIFF
/// ImageDescription entry; older maketx wrote `SHA-1=`): 40 hexadecimal digits, upper
/// case. `None` for anything else.
pub fn maketx_fingerprint(value: &str) -> Option<String> {
    let v = value.trim();
    (v.len() == 40 && v.bytes().all(|b| b.is_ascii_hexdigit())).then(|| v.to_ascii_uppercase())
}

/// Read in pieces of this size while hashing.
const HASH_CHUNK: usize = 1 << 20;

/// The XXH3-128 hash of every byte of `file`, and the file version it was taken from (so
/// that a file changed while it was read is not believed).
fn hash_file(path: &Path) -> Result<(FileIdentity, u128, u64), SourceError> {
    let err =
        |what: &str, e: std::io::Error| SourceError(format!("{}: {what}: {e}", path.display()));
    let mut file = super::open_file(path).map_err(|e| err("opening to hash", e))?;
    let before = FileIdentity::of(&file.metadata().map_err(|e| err("metadata", e))?);
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; HASH_CHUNK];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf).map_err(|e| err("reading to hash", e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        total += n as u64;
    }
    let after = FileIdentity::of(&file.metadata().map_err(|e| err("metadata", e))?);
    if after != before || total != before.len {
        return Err(SourceError(format!(
            "{}: the file changed while it was hashed",
            path.display()
        )));
    }
    Ok((before, hasher.digest128(), total))
}

/// Which file a hash is remembered for: its inode (Unix: however many paths name it),
/// else its path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum FileKey {
    Node(u64, u64),
    Path(PathBuf),
}

impl FileKey {
    fn of(path: &Path, id: &FileIdentity) -> FileKey {
        if cfg!(unix) {
            FileKey::Node(id.node.0, id.node.1)
        } else {
            FileKey::Path(path.to_path_buf())
        }
    }
}

/// One file's hash and the version it was taken from; locked while the file is hashed, so
/// that threads asking for it at once read it once.
type Slot = Arc<Mutex<Option<(FileIdentity, u128)>>>;

/// The most files whose hashes a [`DigestCache`] remembers before it forgets them (a file
/// replaced by another takes a new entry; the old one would otherwise stay).
const MAX_REMEMBERED_FILES: usize = 1 << 16;

/// File hashes by file version: each unchanged file is hashed once, while the cache holds
/// fewer than `MAX_REMEMBERED_FILES` files.
pub struct DigestCache {
    hashes: Mutex<HashMap<FileKey, Slot>>,
    bytes_hashed: std::sync::atomic::AtomicU64,
    max_files: usize,
}

impl Default for DigestCache {
    fn default() -> Self {
        DigestCache::remembering(MAX_REMEMBERED_FILES)
    }
}

impl DigestCache {
    /// An empty cache that remembers the hashes of at most `max_files` files.
    fn remembering(max_files: usize) -> DigestCache {
        DigestCache {
            hashes: Mutex::default(),
            bytes_hashed: Default::default(),
            max_files,
        }
    }

    /// The hash of the file at `path` as it is now: from the cache while the file keeps
    /// its version, else read and remembered.
    fn hash(&self, path: &Path, now: &FileIdentity) -> Result<u128, SourceError> {
        let slot = {
            let mut hashes = self.hashes.lock();
            if hashes.len() >= self.max_files {
                // Forget every hash no thread is taking now: a file compared again is read
                // again, and the cache stays bounded however many files come and go.
                hashes.retain(|_, slot| Arc::strong_count(slot) > 1);
            }
            hashes.entry(FileKey::of(path, now)).or_default().clone()
        };
        let mut slot = slot.lock();
        if let Some((id, h)) = &*slot {
            if id == now {
                return Ok(*h);
            }
        }
        let (id, h, read) = hash_file(path)?;
        self.bytes_hashed
            .fetch_add(read, std::sync::atomic::Ordering::Relaxed);
        if &id != now {
            return Err(SourceError(format!(
                "{}: the file changed while it was compared",
                path.display()
            )));
        }
        *slot = Some((id, h));
        Ok(h)
    }

    /// Bytes of files read to hash them so far.
    pub fn bytes_hashed(&self) -> u64 {
        self.bytes_hashed.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Whether sources with identities `a` and `b` serve the same texels: they read alike,
/// and their files are one file, carry the same fingerprint (both carrying one, they are
/// compared without reading the files), or hold the same bytes (hashed through `cache`).
/// An error (a file gone or changing) means "not known to be the same".
pub fn same_content(
    a: &ContentIdentity,
    b: &ContentIdentity,
    cache: &DigestCache,
) -> Result<bool, SourceError> {
    if a.reading != b.reading {
        return Ok(false);
    }
    let meta = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| FileIdentity::of(&m))
            .map_err(|e| SourceError(format!("{}: {e}", p.display())))
    };
    let (ia, ib) = (meta(&a.file)?, meta(&b.file)?);
    if cfg!(unix) && ia.same_file(&ib) {
        return Ok(true);
    }
    if let (Some(fa), Some(fb)) = (&a.fingerprint, &b.fingerprint) {
        // (Files with one content carry one fingerprint: different ones mean different
        // texels, so nothing is read either way.)
        return Ok(fa == fb);
    }
    if ia.len != ib.len {
        return Ok(false);
    }
    Ok(cache.hash(&a.file, &ia)? == cache.hash(&b.file, &ib)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("demandtex-identity-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn id(file: &Path, reading: &str) -> ContentIdentity {
        ContentIdentity {
            file: file.to_path_buf(),
            reading: reading.into(),
            fingerprint: None,
        }
    }

    #[test]
    fn maketx_fingerprints_decide_without_reading_the_files() {
        let d = dir();
        let (a, b) = (d.join("fa.tx"), d.join("fb.tx"));
        std::fs::write(&a, b"made on monday").unwrap();
        std::fs::write(&b, b"made on friday, a longer line").unwrap();
        let sha = "a6735ed95673b7f5993c4dc1c1b606b28b758931";
        let fp = |file: &Path, f: &str| ContentIdentity {
            fingerprint: maketx_fingerprint(f),
            ..id(file, "TIFF")
        };
        let cache = DigestCache::default();
        assert!(same_content(&fp(&a, sha), &fp(&b, &sha.to_uppercase()), &cache).unwrap());
        let other = "A6735ED95673B7F5993C4DC1C1B606B28B758930";
        assert!(!same_content(&fp(&a, sha), &fp(&b, other), &cache).unwrap());
        assert!(
            !same_content(
                &fp(&a, sha),
                &ContentIdentity {
                    reading: "OpenEXR".into(),
                    ..fp(&b, sha)
                },
                &cache
            )
            .unwrap(),
            "read differently"
        );
        assert_eq!(
            cache.bytes_hashed(),
            0,
            "fingerprints compared, no file read"
        );
        // One side without a fingerprint: the bytes decide (these differ in length).
        assert!(!same_content(&fp(&a, sha), &id(&b, "TIFF"), &cache).unwrap());
        for bad in ["", "A6735ED9", "G6735ED95673B7F5993C4DC1C1B606B28B758931"] {
            assert_eq!(maketx_fingerprint(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn copies_and_links_are_the_same_and_one_changed_byte_is_not() {
        let d = dir();
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let (a, b, c) = (d.join("a.bin"), d.join("b.bin"), d.join("c.bin"));
        std::fs::write(&a, &bytes).unwrap();
        std::fs::write(&b, &bytes).unwrap();
        let mut changed = bytes.clone();
        changed[2_999_999] ^= 1;
        std::fs::write(&c, &changed).unwrap();
        let cache = DigestCache::default();
        assert!(same_content(&id(&a, "exr"), &id(&b, "exr"), &cache).unwrap());
        assert_eq!(cache.bytes_hashed(), 6_000_000, "both copies read once");
        assert!(!same_content(&id(&a, "exr"), &id(&c, "exr"), &cache).unwrap());
        assert_eq!(cache.bytes_hashed(), 9_000_000, "a's hash remembered");
        assert!(
            !same_content(&id(&a, "exr part 0"), &id(&b, "exr part 1"), &cache).unwrap(),
            "read differently"
        );
        // A shorter file: told apart by its length, without reading.
        let short = d.join("short.bin");
        std::fs::write(&short, &bytes[..10]).unwrap();
        assert!(!same_content(&id(&a, "exr"), &id(&short, "exr"), &cache).unwrap());
        assert_eq!(cache.bytes_hashed(), 9_000_000);
        #[cfg(unix)]
        {
            let link = d.join("link.bin");
            let _ = std::fs::remove_file(&link);
            std::os::unix::fs::symlink(&c, &link).unwrap();
            assert!(same_content(&id(&c, "exr"), &id(&link, "exr"), &cache).unwrap());
            assert_eq!(cache.bytes_hashed(), 9_000_000, "one inode: nothing read");
        }
        // A file rewritten since it was hashed is hashed again.
        std::fs::write(&b, &changed[..2_999_000]).unwrap();
        std::fs::write(&b, &changed).unwrap();
        let before = cache.bytes_hashed();
        let now = same_content(&id(&c, "exr"), &id(&b, "exr"), &cache).unwrap();
        assert!(now, "b now holds c's bytes");
        assert!(cache.bytes_hashed() > before);
        let missing = d.join("missing.bin");
        assert!(same_content(&id(&a, "exr"), &id(&missing, "exr"), &cache).is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_cache_forgets_files_beyond_its_bound() {
        // Not under `dir()`, which the other test removes.
        let d =
            std::env::temp_dir().join(format!("demandtex-identity-bounded-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let files: Vec<PathBuf> = (0..6)
            .map(|i| {
                let f = d.join(format!("{i}.bin"));
                std::fs::write(&f, [7u8; 100]).unwrap();
                f
            })
            .collect();
        let cache = DigestCache::remembering(4);
        for pair in files.chunks(2) {
            assert!(same_content(&id(&pair[0], "x"), &id(&pair[1], "x"), &cache).unwrap());
            assert!(cache.hashes.lock().len() <= 4);
        }
        assert_eq!(cache.bytes_hashed(), 600);
        // Forgotten: the first two files are read again.
        assert!(same_content(&id(&files[0], "x"), &id(&files[1], "x"), &cache).unwrap());
        assert_eq!(cache.bytes_hashed(), 800);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
