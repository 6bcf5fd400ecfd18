//! Files with other extended-header sizes: shorter ones from older writers (zero-filled;
//! without `editdatapos`, edit records are found after the large meta data and scanned to
//! the end of the file), and longer ones from a future writer (the rest is skipped). The
//! fixtures rewritten so read exactly as the originals.

use super::fixtures::*;
use crate::sources::ptex::*;

/// `bytes` with its extended header resized to `size` bytes (cut, or padded with zeros).
fn with_ext_header_size(bytes: &[u8], size: usize) -> Vec<u8> {
    let old = u32::from_le_bytes(bytes[28..32].try_into().unwrap()) as usize;
    let mut ext = bytes[64..64 + old].to_vec();
    ext.resize(size, 0);
    let mut out = [&bytes[..64], &ext, &bytes[64 + old..]].concat();
    out[28..32].copy_from_slice(&(size as u32).to_le_bytes());
    if size >= 40 {
        let at = 64 + 32;
        let pos = u64::from_le_bytes(out[at..at + 8].try_into().unwrap());
        out[at..at + 8].copy_from_slice(&(pos + size as u64 - old as u64).to_le_bytes());
    }
    out
}

/// Everything `a` and `b` give is the same.
fn assert_same(fx: &Fixture, a: &PtexFile, b: &PtexFile) {
    assert_eq!(a.faces(), b.faces(), "{}", fx.name);
    assert_eq!(a.edits().len(), b.edits().len(), "{}", fx.name);
    assert_eq!(a.meta().len(), b.meta().len(), "{}", fx.name);
    for i in 0..a.meta().len() {
        assert_eq!(
            a.meta_value(i).unwrap(),
            b.meta_value(i).unwrap(),
            "{} meta {i}",
            fx.name
        );
    }
    for jf in list(&fx.json["faces"]) {
        let face = int(&jf["id"]) as u32;
        assert_eq!(a.constant(face).unwrap(), b.constant(face).unwrap());
        for jd in list(&jf["data"]) {
            let r = res(&jd["res"]);
            let data = b.read_face(face, r).unwrap();
            assert_eq!(
                fnv1a64(&data.to_packed()),
                jd["fnv1a64"],
                "{} face {face} res {r}",
                fx.name
            );
        }
    }
}

#[test]
fn an_old_eight_byte_extended_header_reads_the_same() {
    let fx = Fixture::load("quad_uint8_nomip");
    let old = PtexFile::from_bytes(
        "old",
        with_ext_header_size(&fx.bytes(), 8),
        PtexOptions::default(),
    )
    .unwrap();
    assert_eq!(old.ext_header().editdatapos, 0);
    assert_eq!(old.header().extheadersize, 8);
    assert_same(&fx, &fx.file, &old);
}

#[test]
fn edits_without_an_edit_position_are_found_by_scanning() {
    let fx = Fixture::load("quad_uint8_edits");
    let old = PtexFile::from_bytes(
        "old",
        with_ext_header_size(&fx.bytes(), 24),
        PtexOptions::default(),
    )
    .unwrap();
    assert_eq!(old.ext_header().editdatapos, 0);
    assert!(old.has_edits());
    assert_eq!(old.sections().editdata, fx.file.sections().editdata - 16);
    assert_same(&fx, &fx.file, &old);
}

#[test]
fn a_longer_extended_header_is_skipped() {
    for name in ["quad_uint8_rgb", "quad_uint8_edits"] {
        let fx = Fixture::load(name);
        let new = PtexFile::from_bytes(
            "new",
            with_ext_header_size(&fx.bytes(), 56),
            PtexOptions::default(),
        )
        .unwrap();
        assert_eq!(new.header().extheadersize, 56);
        let mut expected = *fx.file.ext_header();
        expected.editdatapos += 16;
        assert_eq!(*new.ext_header(), expected);
        assert_same(&fx, &fx.file, &new);
    }
}

/// An edit appended to a file without meta data (no compatibility barrier): found at
/// `editdatapos`, where the reference reader looks 8 bytes too far (format note §14).
#[test]
fn edits_in_a_file_without_meta_data_start_at_their_recorded_position() {
    let fx = Fixture::load("quad_uint8_nomip");
    let mut bytes = fx.bytes();
    let start = bytes.len() as u64;
    assert_eq!(fx.file.ext_header().editdatapos, start);
    // Face 1 becomes constant (flag 1) with the value (1, 2, 3).
    let info = fx.file.face_info(1).unwrap();
    let mut record = vec![0u8];
    record.extend((28u32 + 3).to_le_bytes());
    record.extend(1u32.to_le_bytes());
    record.extend([
        info.res.ulog2 as u8,
        info.res.vlog2 as u8,
        info.adjedges,
        face_flags::CONSTANT,
    ]);
    for f in info.adjfaces {
        record.extend(f.to_le_bytes());
    }
    record.extend(0u32.to_le_bytes());
    record.extend([1, 2, 3]);
    bytes.extend(&record);
    bytes[64 + 24..64 + 32].copy_from_slice(&(record.len() as u64).to_le_bytes());
    let f = PtexFile::from_bytes("edited", bytes, PtexOptions::default()).unwrap();
    assert_eq!(f.edits().len(), 1);
    assert_eq!(f.edits()[0].offset, start);
    let edited = f.face_info(1).unwrap();
    assert!(edited.is_constant() && edited.has_edits());
    assert_eq!(f.constant(1).unwrap(), [1, 2, 3]);
    let data = f.read_face(1, info.res).unwrap();
    assert!(data.is_constant());
    assert_eq!(data.texel(3, 2).unwrap(), [1, 2, 3]);
    assert_eq!(
        f.read_face(0, fx.file.face_info(0).unwrap().res).unwrap(),
        fx.file.read_level(0, 0).unwrap()
    );
}
