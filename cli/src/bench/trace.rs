//! Query traces (version 1): recorded streams of texture lookups that any texture system
//! can replay (see `shared/bench/QUERIES.md`). Two kinds share one layout and differ only
//! in their magic and query record:
//!
//! ```text
//! MAGIC  u32 version = 1  u32 num_textures
//! num_textures × { u32 len, u8 path[len] (UTF-8, relative to the texture directory) }
//! u64 num_queries
//! .dtxq ("DTXQ"): num_queries × { u32 texture, f32 s, t, dsdx, dtdx, dsdy, dtdy }    28 bytes
//! .dtxp ("DTXP"): num_queries × { u32 texture, u32 face, f32 u, v, dudx, dvdx, dudy, dvdy }
//!                                                                                    32 bytes
//! ```
//!
//! Everything is little-endian and packed. A trace is read with one read of the whole file
//! and checked completely before anything is replayed: magic, version, truncation, UTF-8
//! paths, texture indices in range, and no bytes after the last query ([`Trace<Q>`] over a
//! [`Record`]: [`Query`] or [`PtexQuery`]). Face ids of a `.dtxp` are checked by the
//! replayer against the files.

use demandtex::sources::open_file;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The format version this code reads and writes (both kinds).
pub const VERSION: u32 = 1;
/// Most textures a trace may name (a sanity bound that keeps a corrupt count from
/// allocating gigabytes before the truncation is noticed).
pub const MAX_TEXTURES: u32 = 1 << 20;
/// Longest texture path accepted, in bytes.
pub const MAX_PATH_BYTES: u32 = 1 << 16;

/// One recorded lookup.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Query {
    /// Index into [`Trace::textures`].
    pub texture: u32,
    /// Horizontal coordinate: 0 = left edge.
    pub s: f32,
    /// Vertical coordinate: 0 = top edge (the first scanline of the file).
    pub t: f32,
    /// ∂(s, t)/∂x: the footprint's step per pixel in x.
    pub ddx: [f32; 2],
    /// ∂(s, t)/∂y: the footprint's step per pixel in y.
    pub ddy: [f32; 2],
}

/// One recorded Ptex lookup (a `.dtxp` query).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PtexQuery {
    /// Index into [`Trace::textures`].
    pub texture: u32,
    /// Face id within that file.
    pub face: u32,
    /// Face coordinates in [0, 1].
    pub uv: [f32; 2],
    /// First footprint vector (Ptex's `uw1`, `vw1`).
    pub d1: [f32; 2],
    /// Second footprint vector (Ptex's `uw2`, `vw2`).
    pub d2: [f32; 2],
}

/// A query record of one kind of trace: its magic, size and byte layout.
pub trait Record: Copy {
    /// The first four bytes of a trace of this kind.
    const MAGIC: [u8; 4];
    /// Bytes of one record.
    const BYTES: usize;
    /// The texture index the record holds.
    fn texture(&self) -> u32;
    /// Decode one record from exactly [`Record::BYTES`] bytes.
    fn decode(b: &[u8]) -> Self;
    /// Append the record's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);
}

impl Record for Query {
    const MAGIC: [u8; 4] = *b"DTXQ";
    const BYTES: usize = 28;
    fn texture(&self) -> u32 {
        self.texture
    }
    fn decode(b: &[u8]) -> Query {
        Query {
            texture: u32_at(b, 0),
            s: f32_at(b, 4),
            t: f32_at(b, 8),
            ddx: [f32_at(b, 12), f32_at(b, 16)],
            ddy: [f32_at(b, 20), f32_at(b, 24)],
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.texture.to_le_bytes());
        for v in [
            self.s,
            self.t,
            self.ddx[0],
            self.ddx[1],
            self.ddy[0],
            self.ddy[1],
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

impl Record for PtexQuery {
    const MAGIC: [u8; 4] = *b"DTXP";
    const BYTES: usize = 32;
    fn texture(&self) -> u32 {
        self.texture
    }
    fn decode(b: &[u8]) -> PtexQuery {
        PtexQuery {
            texture: u32_at(b, 0),
            face: u32_at(b, 4),
            uv: [f32_at(b, 8), f32_at(b, 12)],
            d1: [f32_at(b, 16), f32_at(b, 20)],
            d2: [f32_at(b, 24), f32_at(b, 28)],
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.texture.to_le_bytes());
        out.extend_from_slice(&self.face.to_le_bytes());
        for v in [self.uv, self.d1, self.d2].concat() {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
}

/// A whole trace: the textures it names and its queries, in replay order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace<Q = Query> {
    /// Texture paths, relative to the directory given to the replayer.
    pub textures: Vec<String>,
    /// The lookups, in order.
    pub queries: Vec<Q>,
}

/// A `.dtxp` trace.
pub type PtexTrace = Trace<PtexQuery>;

/// The first four bytes of the file at `path` (to tell the kinds of trace apart).
pub fn magic_of(path: &Path) -> Result<[u8; 4], TraceError> {
    use std::io::Read;
    let io = |error| TraceError::Io {
        path: path.to_owned(),
        error,
    };
    let mut magic = [0u8; 4];
    let mut f = open_file(path).map_err(io)?;
    let n = f.read(&mut magic).map_err(io)?;
    if n < 4 {
        // A short file: the full parse reports the truncation.
        return Ok([0; 4]);
    }
    Ok(magic)
}

/// Why a trace could not be read or written.
#[derive(Debug)]
pub enum TraceError {
    /// The file could not be read or written.
    Io {
        /// The trace file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The file does not start with the kind's magic.
    BadMagic {
        /// The file's first four bytes.
        found: [u8; 4],
        /// The magic the kind needs.
        expected: [u8; 4],
    },
    /// A version this code does not read.
    UnsupportedVersion(u32),
    /// The file ends inside a record.
    Truncated {
        /// What was being read.
        what: String,
        /// Byte offset where it starts.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes left in the file from `offset`.
        available: u64,
    },
    /// A count or length beyond what the format allows.
    TooLarge(String),
    /// A texture path that is not UTF-8 (or is empty).
    BadPath {
        /// Index of the texture in the list.
        index: u32,
        /// What is wrong with it.
        reason: String,
    },
    /// A query names a texture that is not in the list.
    TextureOutOfRange {
        /// Index of the query.
        query: u64,
        /// The texture index it holds.
        texture: u32,
        /// Textures in the list.
        num_textures: u32,
    },
    /// Bytes after the last query.
    TrailingBytes(u64),
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            TraceError::BadMagic { found, expected } => write!(
                f,
                "not a query trace: the file starts with {:?}, not {:?}",
                String::from_utf8_lossy(found),
                String::from_utf8_lossy(expected)
            ),
            TraceError::UnsupportedVersion(v) => {
                write!(
                    f,
                    "query trace version {v} (only version {VERSION} is supported)"
                )
            }
            TraceError::Truncated {
                what,
                offset,
                needed,
                available,
            } => write!(
                f,
                "truncated query trace: {what} at byte {offset} needs {needed} bytes, \
                 the file has {available} left"
            ),
            TraceError::TooLarge(m) => write!(f, "corrupt query trace: {m}"),
            TraceError::BadPath { index, reason } => {
                write!(f, "query trace texture {index}: {reason}")
            }
            TraceError::TextureOutOfRange {
                query,
                texture,
                num_textures,
            } => write!(
                f,
                "query {query} names texture {texture}, but the trace lists {num_textures} \
                 texture(s)"
            ),
            TraceError::TrailingBytes(n) => {
                write!(f, "corrupt query trace: {n} bytes after the last query")
            }
        }
    }
}

impl std::error::Error for TraceError {}

impl From<TraceError> for crate::error::CliError {
    fn from(e: TraceError) -> Self {
        match e {
            TraceError::Io { .. } => crate::error::CliError::Io(e.to_string()),
            _ => crate::error::CliError::Demandtex(e.to_string()),
        }
    }
}

/// A cursor over the file's bytes that reports truncation with what it was reading.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: u64, what: impl FnOnce() -> String) -> Result<&'a [u8], TraceError> {
        let available = (self.bytes.len() - self.pos) as u64;
        if n > available {
            return Err(TraceError::Truncated {
                what: what(),
                offset: self.pos as u64,
                needed: n,
                available,
            });
        }
        let out = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(out)
    }

    fn u32(&mut self, what: impl FnOnce() -> String) -> Result<u32, TraceError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
}

fn f32_at(b: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

impl<Q: Record> Trace<Q> {
    /// Parse a whole trace held in memory, checking everything (see the module docs).
    pub fn parse(bytes: &[u8]) -> Result<Trace<Q>, TraceError> {
        let mut r = Reader { bytes, pos: 0 };
        let magic = r.take(4, || "the magic number".into())?;
        if magic != Q::MAGIC {
            return Err(TraceError::BadMagic {
                found: [magic[0], magic[1], magic[2], magic[3]],
                expected: Q::MAGIC,
            });
        }
        let version = r.u32(|| "the version".into())?;
        if version != VERSION {
            return Err(TraceError::UnsupportedVersion(version));
        }
        let num_textures = r.u32(|| "the texture count".into())?;
        if num_textures > MAX_TEXTURES {
            return Err(TraceError::TooLarge(format!(
                "{num_textures} textures (at most {MAX_TEXTURES})"
            )));
        }
        let mut textures = Vec::with_capacity(num_textures.min(4096) as usize);
        for index in 0..num_textures {
            let len = r.u32(|| format!("the path length of texture {index}"))?;
            if len > MAX_PATH_BYTES {
                return Err(TraceError::TooLarge(format!(
                    "texture {index} has a path of {len} bytes (at most {MAX_PATH_BYTES})"
                )));
            }
            let raw = r.take(len as u64, || format!("the path of texture {index}"))?;
            let path = std::str::from_utf8(raw).map_err(|e| TraceError::BadPath {
                index,
                reason: format!("the path is not UTF-8 ({e})"),
            })?;
            if path.is_empty() {
                return Err(TraceError::BadPath {
                    index,
                    reason: "the path is empty".into(),
                });
            }
            textures.push(path.to_owned());
        }
        let count_bytes = r.take(8, || "the query count".into())?;
        let num_queries = u64::from_le_bytes(count_bytes.try_into().expect("8 bytes"));
        let start = r.pos as u64;
        let available = bytes.len() as u64 - start;
        let record = Q::BYTES as u64;
        let needed = num_queries.checked_mul(record);
        match needed {
            Some(n) if n <= available => {
                if n < available {
                    return Err(TraceError::TrailingBytes(available - n));
                }
            }
            _ => {
                let whole = available / record;
                return Err(TraceError::Truncated {
                    what: format!(
                        "{num_queries} queries ({whole} whole ones present; query {whole})"
                    ),
                    offset: start + whole * record,
                    needed: record,
                    available: available - whole * record,
                });
            }
        }
        let body = &bytes[r.pos..];
        let mut queries = Vec::with_capacity(num_queries as usize);
        for (i, b) in body.chunks_exact(Q::BYTES).enumerate() {
            let query = Q::decode(b);
            let texture = query.texture();
            if texture >= num_textures {
                return Err(TraceError::TextureOutOfRange {
                    query: i as u64,
                    texture,
                    num_textures,
                });
            }
            queries.push(query);
        }
        Ok(Trace { textures, queries })
    }

    /// Read and parse a trace file (one read of the whole file).
    pub fn read(path: &Path) -> Result<Trace<Q>, TraceError> {
        let mut bytes = Vec::new();
        open_file(path)
            .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut bytes))
            .map_err(|error| TraceError::Io {
                path: path.to_owned(),
                error,
            })?;
        Trace::parse(&bytes)
    }

    /// The trace in its file format. Paths must be non-empty; query texture indices are
    /// written as they are (a writer bug shows up when the trace is read back).
    pub fn to_bytes(&self) -> Vec<u8> {
        let paths: usize = self.textures.iter().map(|p| 4 + p.len()).sum();
        let mut out = Vec::with_capacity(20 + paths + self.queries.len() * Q::BYTES);
        out.extend_from_slice(&Q::MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.textures.len() as u32).to_le_bytes());
        for p in &self.textures {
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(&(self.queries.len() as u64).to_le_bytes());
        for q in &self.queries {
            q.encode(&mut out);
        }
        out
    }

    /// Write the trace to `path` (replacing it), after checking what [`Trace::parse`]
    /// would reject: texture counts, path lengths, empty paths, indices out of range.
    pub fn write(&self, path: &Path) -> Result<(), TraceError> {
        if self.textures.len() as u64 > MAX_TEXTURES as u64 {
            return Err(TraceError::TooLarge(format!(
                "{} textures (at most {MAX_TEXTURES})",
                self.textures.len()
            )));
        }
        for (index, p) in self.textures.iter().enumerate() {
            let index = index as u32;
            if p.is_empty() || p.len() > MAX_PATH_BYTES as usize {
                return Err(TraceError::BadPath {
                    index,
                    reason: format!("a path of {} bytes (1..={MAX_PATH_BYTES})", p.len()),
                });
            }
        }
        let n = self.textures.len() as u32;
        if let Some((i, q)) = self
            .queries
            .iter()
            .enumerate()
            .find(|(_, q)| q.texture() >= n)
        {
            return Err(TraceError::TextureOutOfRange {
                query: i as u64,
                texture: q.texture(),
                num_textures: n,
            });
        }
        let io = |error| TraceError::Io {
            path: path.to_owned(),
            error,
        };
        let mut f = std::fs::File::create(path).map_err(io)?;
        f.write_all(&self.to_bytes()).map_err(io)?;
        f.sync_all().map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUERY_BYTES: usize = <Query as Record>::BYTES;

    fn sample() -> Trace {
        Trace {
            textures: vec!["a.exr".into(), "dir/b é.exr".into()],
            queries: vec![
                Query {
                    texture: 1,
                    s: 0.25,
                    t: -1.5,
                    ddx: [1e-3, -2e-3],
                    ddy: [0.0, f32::MIN_POSITIVE],
                },
                Query::default(),
            ],
        }
    }

    #[test]
    fn round_trips_and_has_the_documented_layout() {
        let t = sample();
        let b = t.to_bytes();
        let paths = 4 + 5 + 4 + "dir/b é.exr".len();
        assert_eq!(b.len(), 12 + paths + 8 + 2 * QUERY_BYTES);
        assert_eq!(&b[..4], b"DTXQ");
        assert_eq!(b[4..8], 1u32.to_le_bytes());
        assert_eq!(b[8..12], 2u32.to_le_bytes());
        let q0 = 12 + paths + 8;
        assert_eq!(b[q0..q0 + 4], 1u32.to_le_bytes());
        assert_eq!(b[q0 + 8..q0 + 12], (-1.5f32).to_le_bytes());
        assert_eq!(Trace::parse(&b).unwrap(), t);
    }

    #[test]
    fn every_kind_of_damage_is_reported() {
        let good = sample().to_bytes();
        let err = |b: &[u8]| Trace::<Query>::parse(b).unwrap_err().to_string();

        let mut b = good.clone();
        b[0] = b'X';
        assert!(err(&b).contains("not a query trace"), "{}", err(&b));
        let mut b = good.clone();
        b[4] = 2;
        assert!(err(&b).contains("version 2"), "{}", err(&b));
        for cut in [0, 3, 10, 14, 20, good.len() - 40, good.len() - 1] {
            let e = err(&good[..cut]);
            assert!(e.contains("truncated"), "cut {cut}: {e}");
        }
        assert!(err(&good[..good.len() - 1]).contains("query 1"));
        let mut b = good.clone();
        b.push(0);
        assert!(err(&b).contains("1 bytes after"), "{}", err(&b));
        // Texture index of the second query.
        let mut b = good.clone();
        let last = b.len() - QUERY_BYTES;
        b[last..last + 4].copy_from_slice(&7u32.to_le_bytes());
        let e = err(&b);
        assert!(
            e.contains("query 1 names texture 7") && e.contains("2 texture"),
            "{e}"
        );
        // A non-UTF-8 byte in the first path.
        let mut b = good.clone();
        b[16] = 0xFF;
        assert!(
            err(&b).contains("texture 0: the path is not UTF-8"),
            "{}",
            err(&b)
        );
        // A huge query count.
        let mut b = good.clone();
        let count_at = good.len() - 2 * QUERY_BYTES - 8;
        b[count_at..count_at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(err(&b).contains("truncated"), "{}", err(&b));
        // A huge texture count.
        let mut b = good;
        b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(err(&b).contains("textures (at most"), "{}", err(&b));
    }

    #[test]
    fn write_refuses_what_read_would_reject() {
        let dir = std::env::temp_dir().join(format!("dtxq-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.dtxq");
        let mut t = sample();
        t.write(&path).unwrap();
        assert_eq!(Trace::read(&path).unwrap(), t);
        t.queries[0].texture = 2;
        assert!(t.write(&path).is_err());
        t.textures[0].clear();
        assert!(t.write(&path).is_err());
        let missing = Trace::<Query>::read(&dir.join("missing.dtxq"))
            .unwrap_err()
            .to_string();
        assert!(missing.contains("missing.dtxq"), "{missing}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn ptex_traces_round_trip_and_are_told_apart_by_magic() {
        let t = PtexTrace {
            textures: vec!["a.ptx".into()],
            queries: vec![PtexQuery {
                texture: 0,
                face: 77,
                uv: [0.25, 0.75],
                d1: [0.01, -0.02],
                d2: [0.0, 1e-6],
            }],
        };
        let b = t.to_bytes();
        assert_eq!(&b[..4], b"DTXP");
        assert_eq!(b.len(), 12 + 4 + 5 + 8 + 32);
        let q0 = 12 + 4 + 5 + 8;
        assert_eq!(b[q0 + 4..q0 + 8], 77u32.to_le_bytes());
        assert_eq!(b[q0 + 28..q0 + 32], 1e-6f32.to_le_bytes());
        assert_eq!(PtexTrace::parse(&b).unwrap(), t);
        let e = Trace::<Query>::parse(&b).unwrap_err().to_string();
        assert!(e.contains("\"DTXP\", not \"DTXQ\""), "{e}");
        let e = PtexTrace::parse(&sample().to_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("not \"DTXP\""), "{e}");
        let e = PtexTrace::parse(&b[..b.len() - 4]).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains("query 0"), "{e}");
    }
}
