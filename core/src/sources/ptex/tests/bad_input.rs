//! Bad files: missing, not Ptex, truncated anywhere, sizes and counts no file could hold,
//! inconsistent blocks, random corruption. Each is a clear error naming the file, never a
//! panic or a huge allocation.

use super::fixtures::*;
use crate::sources::ptex::*;
use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use std::io::{Read, Write};

const NAME: &str = "bad.ptx";

fn open(bytes: &[u8]) -> Result<PtexFile, PtexError> {
    PtexFile::from_bytes(NAME, bytes.to_vec(), PtexOptions::default())
}

/// Open `bytes`, expecting an error of `kind` whose message contains `words`.
#[track_caller]
fn fails(bytes: &[u8], kind: PtexErrorKind, words: &str) -> PtexError {
    let e = open(bytes).map(|_| ()).expect_err("the file opened");
    assert_eq!(e.kind, kind, "{e}");
    assert_eq!(e.file, NAME);
    assert!(
        e.to_string().starts_with(&format!("ptex file {NAME}: ")),
        "{e}"
    );
    assert!(e.message.contains(words), "expected \"{words}\" in: {e}");
    e
}

fn put_u16(b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&v.to_le_bytes());
}
fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut z = ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

fn unzlib(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    ZlibDecoder::new(data).read_to_end(&mut out).unwrap();
    out
}

/// Replace the zlib block of `size` bytes at `at` with `new` (compressed), fixing the
/// header field at `size_field` and the absolute `editdatapos`.
fn splice(bytes: &[u8], at: usize, size: usize, new: &[u8], size_field: usize) -> Vec<u8> {
    let block = zlib(new);
    let mut out = [&bytes[..at], &block, &bytes[at + size..]].concat();
    put_u32(&mut out, size_field, block.len() as u32);
    let edit_pos = 64 + 32;
    let pos = u64::from_le_bytes(out[edit_pos..edit_pos + 8].try_into().unwrap());
    put_u64(&mut out, edit_pos, pos + block.len() as u64 - size as u64);
    out
}

/// `bytes` with its face info block changed by `f`.
fn with_face_info(bytes: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let file = open(bytes).unwrap();
    let (at, size) = (
        file.sections().faceinfo as usize,
        file.header().faceinfosize as usize,
    );
    let mut info = unzlib(&bytes[at..at + size]);
    f(&mut info);
    splice(bytes, at, size, &info, 32)
}

/// `bytes` with the face data headers of level 0 changed by `f`.
fn with_level0_headers(bytes: &[u8], f: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let file = open(bytes).unwrap();
    let at = file.sections().leveldata as usize;
    let li = file.sections().levelinfo as usize;
    let size = file.level_info(0).unwrap().levelheadersize as usize;
    let mut headers = unzlib(&bytes[at..at + size]);
    f(&mut headers);
    let block = zlib(&headers);
    let delta = block.len() as i64 - size as i64;
    let mut out = splice(bytes, at, size, &headers, li + 8);
    let level_size = file.level_info(0).unwrap().leveldatasize as i64 + delta;
    put_u64(&mut out, li, level_size as u64);
    put_u64(
        &mut out,
        48,
        (file.header().leveldatasize as i64 + delta) as u64,
    );
    out
}

/// Read everything the file offers (skipping whole faces over 16 MiB); errors are fine,
/// panics are not.
fn read_everything(f: &PtexFile) {
    for i in 0..f.meta().len() {
        let _ = f.meta_value(i);
    }
    for face in 0..f.num_faces() as u32 {
        let info = *f.face_info(face).unwrap();
        let _ = f.constant(face);
        let small = |r: Res| (r.texels() * f.pixel_size()) as u64 <= 16 << 20;
        let levels = f.stored_levels(face).unwrap_or(0);
        for level in 0..levels {
            if let Ok(b) = f.block(face, level) {
                for tile in 0..b.tiles.map_or(0, |t| t.tiles.len()) {
                    let _ = f.read_tile(face, level, tile);
                }
                if small(b.res) {
                    let _ = f.read_level(face, level);
                }
            }
        }
        for k in 0..=info.res.ulog2.max(info.res.vlog2) {
            let r = Res::new((info.res.ulog2 - k).max(0), (info.res.vlog2 - k).max(0));
            let _ = f.pixel(face, r, 0, 0);
            if small(r) {
                let _ = f.read_face(face, r);
            }
        }
    }
}

#[test]
fn a_missing_file_is_an_io_error_naming_it() {
    let path = std::env::temp_dir().join("demandtex-no-such-file.ptx");
    let e = PtexFile::open(&path).unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::Io);
    assert!(e.to_string().contains(&path.display().to_string()), "{e}");
    assert!(e.message.contains("cannot open"), "{e}");
    // It converts into the sources' error with its words.
    let s: crate::sources::SourceError = e.clone().into();
    assert_eq!(s.0, e.to_string());
}

#[test]
fn other_files_are_not_ptex() {
    fails(b"", PtexErrorKind::NotPtex, "not a Ptex file");
    fails(
        b"\x89PNG\r\n\x1a\n",
        PtexErrorKind::NotPtex,
        "not a Ptex file",
    );
    fails(&[b'x'; 200], PtexErrorKind::NotPtex, "magic number");
    fails(b"Pte", PtexErrorKind::Corrupt, "shorter than the 64-byte");
    fails(
        b"Ptex\x01\0\0\0",
        PtexErrorKind::Corrupt,
        "shorter than the 64-byte",
    );
}

#[test]
fn bad_header_fields_are_named() {
    let good = Fixture::load("quad_uint8_rgb").bytes();
    let patch = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    fails(
        &patch(&|b| put_u32(b, 4, 2)),
        PtexErrorKind::Unsupported,
        "version 2",
    );
    fails(
        &patch(&|b| put_u32(b, 8, 2)),
        PtexErrorKind::Corrupt,
        "mesh type 2",
    );
    fails(
        &patch(&|b| put_u32(b, 12, 4)),
        PtexErrorKind::Corrupt,
        "data type 4",
    );
    fails(
        &patch(&|b| put_u32(b, 16, 3)),
        PtexErrorKind::Corrupt,
        "alpha channel 3",
    );
    fails(
        &patch(&|b| put_u16(b, 20, 0)),
        PtexErrorKind::Corrupt,
        "0 channels",
    );
    fails(
        &patch(&|b| put_u16(b, 22, 0)),
        PtexErrorKind::Corrupt,
        "0 resolution levels",
    );
    fails(
        &patch(&|b| put_u16(b, 64, 3)),
        PtexErrorKind::Corrupt,
        "u border mode 3",
    );
    fails(
        &patch(&|b| put_u16(b, 68, 7)),
        PtexErrorKind::Corrupt,
        "v border mode 7",
    );
    fails(
        &patch(&|b| put_u16(b, 70, 2)),
        PtexErrorKind::Corrupt,
        "edge filter mode 2",
    );
    fails(
        &patch(&|b| put_u32(b, 40, 16)),
        PtexErrorKind::Corrupt,
        "too small for 7 levels",
    );
}

#[test]
fn absurd_counts_and_sizes_are_refused_before_allocating() {
    let good = Fixture::load("quad_uint8_rgb").bytes();
    let patch = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    // 2^31 faces: more than a face id can name.
    fails(
        &patch(&|b| put_u32(b, 24, 1 << 31)),
        PtexErrorKind::Corrupt,
        "2147483648 faces",
    );
    // 2^31 - 1 faces: 40 GiB of face info cannot come from a 100-byte zlib stream.
    fails(
        &patch(&|b| put_u32(b, 24, i32::MAX as u32)),
        PtexErrorKind::Corrupt,
        "more than zlib can expand to",
    );
    // Blocks of 4 GiB, or 2^64 bytes, past the end of a 200 KB file.
    fails(
        &patch(&|b| put_u32(b, 32, u32::MAX)),
        PtexErrorKind::Corrupt,
        "past the end of the file",
    );
    fails(
        &patch(&|b| put_u32(b, 36, u32::MAX)),
        PtexErrorKind::Corrupt,
        "past the end of the file",
    );
    fails(
        &patch(&|b| put_u32(b, 28, u32::MAX)),
        PtexErrorKind::Corrupt,
        "past the end of the file",
    );
    fails(
        &patch(&|b| put_u64(b, 48, u64::MAX)),
        PtexErrorKind::Corrupt,
        "overflow",
    );
    fails(
        &patch(&|b| put_u64(b, 48, 1 << 40)),
        PtexErrorKind::Corrupt,
        "level data",
    );
    // Meta data claiming 4 GiB uncompressed.
    fails(
        &patch(&|b| put_u32(b, 60, u32::MAX)),
        PtexErrorKind::Corrupt,
        "over this reader's limit",
    );
    fails(
        &patch(&|b| put_u32(b, 64 + 12, u32::MAX)),
        PtexErrorKind::Corrupt,
        "large meta data header",
    );
    fails(
        &patch(&|b| put_u64(b, 64 + 16, u64::MAX / 2)),
        PtexErrorKind::Corrupt,
        "large meta data",
    );
    // Edit records past the end.
    fails(
        &patch(&|b| put_u64(b, 64 + 24, 1 << 40)),
        PtexErrorKind::Corrupt,
        "edit records",
    );
    fails(
        &patch(&|b| put_u64(b, 64 + 32, u64::MAX - 4)),
        PtexErrorKind::Corrupt,
        "edit records",
    );
    // A level info claiming more faces than the file has, or a 2^60-byte level.
    let li = open(&good).unwrap().sections().levelinfo as usize;
    fails(
        &patch(&|b| put_u32(b, li + 16 + 12, 11)),
        PtexErrorKind::Corrupt,
        "level 1 stores 11 faces",
    );
    fails(
        &patch(&|b| put_u32(b, li + 12, 9)),
        PtexErrorKind::Corrupt,
        "level 0 stores 9 faces",
    );
    fails(
        &patch(&|b| put_u64(b, li, 1 << 60)),
        PtexErrorKind::Corrupt,
        "level 0",
    );
    fails(
        &patch(&|b| put_u32(b, li + 8, u32::MAX)),
        PtexErrorKind::Corrupt,
        "face data headers",
    );
}

#[test]
fn bad_face_infos_are_named() {
    let good = Fixture::load("quad_uint8_nomip").bytes();
    let b = with_face_info(&good, |i| i[20] = 31);
    fails(&b, PtexErrorKind::Corrupt, "face 1: resolution log2 (31,");
    let b = with_face_info(&good, |i| i[1] = 0xff);
    fails(&b, PtexErrorKind::Corrupt, "face 0: resolution log2");
    let b = with_face_info(&good, |i| put_u32(i, 4, 3));
    fails(
        &b,
        PtexErrorKind::Corrupt,
        "neighbour across edge 0 is face 3",
    );
    let b = with_face_info(&good, |i| put_u32(i, 16, -7i32 as u32));
    fails(&b, PtexErrorKind::Corrupt, "edge 3 is face -7");
    let b = with_face_info(&good, |i| i.truncate(40));
    fails(
        &b,
        PtexErrorKind::Corrupt,
        "inflates to 40 bytes, expected 60",
    );
    // A triangle face must be square.
    let tri = Fixture::load("tri_uint8_rgb").bytes();
    let b = with_face_info(&tri, |i| i[0] = i[1].saturating_sub(1));
    fails(&b, PtexErrorKind::Corrupt, "is not square");
    // The original passes the same path.
    open(&with_face_info(&good, |_| {})).unwrap();
}

#[test]
fn bad_block_headers_are_named() {
    let good = Fixture::load("quad_uint8_nomip").bytes();
    // A block larger than its level.
    let b = with_level0_headers(&good, |h| put_u32(h, 0, (1 << 30) | 0x3fff_ffff));
    fails(
        &b,
        PtexErrorKind::Corrupt,
        "level 0: block 0 ends at offset",
    );
    // A zipped block whose stream is not the face's size: opens, then fails to read.
    let b = with_level0_headers(&good, |h| {
        let v = u32::from_le_bytes(h[0..4].try_into().unwrap());
        let v2 = u32::from_le_bytes(h[4..8].try_into().unwrap());
        put_u32(h, 0, v - 10);
        put_u32(h, 4, v2 + 10);
    });
    let f = open(&b).unwrap();
    let e = f.read_level(0, 0).unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::Corrupt, "{e}");
    assert!(
        e.to_string().contains(NAME) && e.message.contains("face 0, level 0"),
        "{e}"
    );
    let e = f.read_level(1, 0).unwrap_err();
    assert!(e.message.contains("zlib"), "{e}");
    // A constant block smaller than a texel.
    let b = with_level0_headers(&good, |h| put_u32(h, 8, 1));
    let e = open(&b).unwrap().read_level(2, 0).unwrap_err();
    assert!(e.message.contains("less than a texel"), "{e}");
    // The original passes the same path.
    let f = open(&with_level0_headers(&good, |_| {})).unwrap();
    assert_eq!(
        f.read_level(0, 0).unwrap(),
        open(&good).unwrap().read_level(0, 0).unwrap()
    );
}

#[test]
fn bad_tile_headers_are_named() {
    let fx = Fixture::load("quad_float_1ch");
    let good = fx.bytes();
    let at = fx.file.block(8, 0).unwrap().span.offset as usize;
    let patch = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        open(&b).unwrap()
    };
    for (f, words) in [
        (patch(&|b| b[at] = 0xff), "not within its resolution"),
        (patch(&|b| b[at + 1] = 10), "not within its resolution"),
        (patch(&|b| b[at] = 0), "inflates to 32 bytes, expected 4096"),
        (
            patch(&|b| put_u32(b, at + 2, u32::MAX)),
            "run past the block",
        ),
        (patch(&|b| put_u32(b, at + 2, 2)), "zlib"),
    ] {
        for e in [
            f.read_tile(8, 0, 0).unwrap_err(),
            f.read_level(8, 0).unwrap_err(),
            f.block(8, 0).unwrap_err(),
            f.pixel(8, Res::new(8, 9), 3, 3).unwrap_err(),
        ] {
            assert_eq!(e.kind, PtexErrorKind::Corrupt, "{e}");
            assert!(e.message.contains(words), "expected \"{words}\" in: {e}");
        }
        // The other faces still read.
        f.read_level(7, 0).unwrap();
    }
}

/// A file cut anywhere does not open; the error names the file.
#[test]
fn truncated_files_are_refused() {
    for fx in all() {
        let bytes = fx.bytes();
        let step = if bytes.len() < 5000 { 1 } else { 61 };
        let mut cuts: Vec<usize> = (0..bytes.len()).step_by(step).collect();
        cuts.extend([bytes.len() - 1, bytes.len() - 8, bytes.len() - 9]);
        let s = fx.file.sections();
        for at in [
            s.faceinfo,
            s.constdata,
            s.levelinfo,
            s.leveldata,
            s.metadata,
            s.lmdheader,
            s.editdata,
        ] {
            cuts.extend([at as usize - 1, at as usize, at as usize + 1]);
        }
        for cut in cuts.into_iter().filter(|&c| c < bytes.len()) {
            let e = match open(&bytes[..cut]) {
                Ok(_) => panic!("{} cut at {cut} of {} bytes opened", fx.name, bytes.len()),
                Err(e) => e,
            };
            assert_eq!(e.file, NAME);
            let expected = if cut == 0 {
                PtexErrorKind::NotPtex
            } else {
                PtexErrorKind::Corrupt
            };
            assert_eq!(e.kind, expected, "{} cut at {cut}: {e}", fx.name);
        }
    }
}

/// Random byte changes anywhere: opening and reading everything gives values or errors,
/// never a panic.
#[test]
fn random_corruption_never_panics() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for fx in all() {
        let bytes = fx.bytes();
        for round in 0..150 {
            let mut b = bytes.clone();
            let mut changes = Vec::new();
            for _ in 0..1 + next() % 3 {
                // Half the changes in the structure at the front, half anywhere.
                let at = if next() % 2 == 0 {
                    next() as usize % 400
                } else {
                    next() as usize % b.len()
                };
                let value = next() as u8;
                b[at] = value;
                changes.push((at, value));
            }
            let result = std::panic::catch_unwind(|| {
                if let Ok(f) = open(&b) {
                    read_everything(&f);
                }
            });
            assert!(
                result.is_ok(),
                "{} round {round}: panicked with changes {changes:?}",
                fx.name
            );
        }
    }
}

/// A hand-made quad file of `nfaces` non-constant faces of `res`, u8, one channel, one
/// level whose blocks are all empty: a few tens of KB, since every record is the same.
fn many_faces(nfaces: u32, res: Res) -> Vec<u8> {
    let record = [res.ulog2 as u8, res.vlog2 as u8, 0, 0]
        .into_iter()
        .chain((-1i32).to_le_bytes().repeat(4))
        .collect::<Vec<u8>>();
    let face_info = zlib(&record.repeat(nfaces as usize));
    let const_data = zlib(&vec![0u8; nfaces as usize]);
    let level_headers = zlib(&vec![0u8; 4 * nfaces as usize]);
    let mut level_info = vec![0u8; 16];
    put_u64(&mut level_info, 0, level_headers.len() as u64);
    put_u32(&mut level_info, 8, level_headers.len() as u32);
    put_u32(&mut level_info, 12, nfaces);
    let mut header = vec![0u8; 64 + 40];
    put_u32(&mut header, 0, 0x7865_7450);
    put_u32(&mut header, 4, 1);
    put_u32(&mut header, 8, 1); // quad
    put_u32(&mut header, 16, u32::MAX); // no alpha
    put_u16(&mut header, 20, 1);
    put_u16(&mut header, 22, 1);
    put_u32(&mut header, 24, nfaces);
    put_u32(&mut header, 28, 40);
    put_u32(&mut header, 32, face_info.len() as u32);
    put_u32(&mut header, 36, const_data.len() as u32);
    put_u32(&mut header, 40, 16);
    put_u32(&mut header, 44, 4);
    put_u64(&mut header, 48, level_headers.len() as u64);
    let mut out = [header, face_info, const_data, level_info, level_headers].concat();
    let end = out.len() as u64;
    put_u64(&mut out, 64 + 32, end); // edit records: none, at the end
    out
}

#[test]
fn units_needing_more_pages_than_a_texture_holds_are_refused_before_packing() {
    use crate::sources::ptex::pages::MAX_PAGES;
    // A million faces of 2^15 × 2^15 texels from a ~130 KB file: their full-resolution
    // units alone need 2^20 × 2^14 pages of 64 KiB. Packing them (the per-page records
    // the layout kept before it was bounded: 16 bytes a page) would take 256 GiB; the
    // count is bounded from the resolutions first, with nothing allocated per page.
    let bytes = many_faces(1 << 20, Res::new(15, 15));
    assert!(bytes.len() < 200_000, "{} bytes", bytes.len());
    let file = std::sync::Arc::new(open(&bytes).unwrap());
    let start = std::time::Instant::now();
    let e = PtexPages::new(file.clone()).map(|_| ()).unwrap_err();
    let took = start.elapsed();
    assert_eq!(e.kind, PtexErrorKind::Unsupported, "{e}");
    assert_eq!(e.file, NAME);
    let message = e.to_string();
    assert!(message.starts_with(&format!("ptex file {NAME}: ")), "{e}");
    assert!(message.contains("1048576 faces"), "{e}");
    assert!(
        message.contains(&format!("more than the {MAX_PAGES} a texture can hold")),
        "{e}"
    );
    // 2^20 faces × ~2^16 pages each (2^14 at full resolution, 4/3 of it with the
    // reductions): 64 Gi pages.
    assert!(message.contains("at least 68717379584 pages"), "{e}");
    // (A loop over the pages would take minutes; the bound leaves room for a busy machine.)
    assert!(took.as_secs_f64() < 10.0, "refused in {took:?}");
    // The resident store refuses it the same way.
    let e = crate::sampling::ptex::ResidentPtex::new(file)
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::Unsupported, "{e}");
    // The same file with small faces packs (1024 faces of 64×64: 64 pages and more).
    let small = open(&many_faces(1024, Res::new(6, 6))).unwrap();
    let pages = PtexPages::new(std::sync::Arc::new(small)).unwrap();
    assert!(pages.layout().num_pages() >= 64);
}

#[test]
fn packing_stops_at_the_last_page_when_the_bytes_alone_fit() {
    use crate::sources::ptex::pack::PackLayout;
    use crate::sources::ptex::pages::MAX_PAGES;
    use std::collections::HashMap;
    // Faces of 16384×1, 3 bytes a texel: units of 48 KiB (one a page), 24 KiB (two a
    // page), 12 KiB (five a page), ...: their bytes fill ~1.5 pages a face, the packing
    // takes ~1.8. 640 Ki faces: within the page count the bytes bound, past the last page
    // once packed, refused at the first unit past it.
    let face = FaceInfo {
        res: Res::new(14, 0),
        adjedges: 0,
        flags: 0,
        adjfaces: [-1; 4],
    };
    let faces = vec![face; 640 << 10];
    let e = PackLayout::new(&faces, MeshType::Quad, 3, HashMap::new()).unwrap_err();
    assert!(
        e.contains(&format!("at least {} pages", MAX_PAGES + 1)),
        "{e}"
    );
    assert!(e.contains(&format!("its {} faces", 640 << 10)), "{e}");
    // A tenth as many pack, in about a tenth of the pages.
    let layout = PackLayout::new(&faces[..64 << 10], MeshType::Quad, 3, HashMap::new()).unwrap();
    assert!(layout.num_pages() < MAX_PAGES / 8, "{}", layout.num_pages());
}

#[test]
fn texels_larger_than_a_page_are_refused_not_tiled() {
    use crate::sources::ptex::pack::PackLayout;
    use std::collections::HashMap;
    let face = FaceInfo {
        res: Res::new(1, 0),
        adjedges: 0,
        flags: 0,
        adjfaces: [-1; 4],
    };
    // 20000 float channels: 80000 bytes a texel.
    let e = PackLayout::new(&[face], MeshType::Quad, 80_000, HashMap::new()).unwrap_err();
    assert!(
        e.contains("texels of 80000 bytes are larger than a page"),
        "{e}"
    );
}
