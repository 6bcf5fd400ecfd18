//! The writer: every reference fixture re-written from its decoded data reads back
//! identically (face info with the neighbourhood-constant flags, constants, every stored
//! level, rfaceids, meta data), which checks the stored reductions and constant values
//! against the reference writer's; and synthetic files round-trip (tiled faces, uniform
//! tiles, constant faces, adjacency, small and large meta data, half RGBA).

use super::fixtures::{fixture_dir, FIXTURES};
use crate::sources::ptex::{
    face_flags, DataType, FaceInfo, MeshType, MetaStorage, MetaValue, PtexFile, PtexOptions,
    PtexWriteOptions, PtexWriter, Res,
};

/// Write `file`'s decoded data again (level 0 of every face, constants, meta data).
fn rewrite(file: &PtexFile) -> Vec<u8> {
    let mut options = PtexWriteOptions::new(
        file.mesh_type(),
        file.data_type(),
        file.num_channels() as u16,
        file.alpha_channel(),
    );
    options.border_u = file.u_border_mode();
    options.border_v = file.v_border_mode();
    options.edge_filter = file.edge_filter_mode();
    options.mipmaps = file.has_mipmaps();
    let mut w = PtexWriter::new(options, file.num_faces() as u32).unwrap();
    for (f, info) in file.faces().iter().enumerate() {
        let f = f as u32;
        if info.is_constant() {
            w.write_constant_face(f, *info, file.constant(f).unwrap())
                .unwrap();
        } else {
            let data = file.read_level(f, 0).unwrap().into_packed();
            w.write_face(f, *info, &data).unwrap();
        }
    }
    for i in 0..file.meta().len() {
        w.add_meta(&file.meta()[i].key, &file.meta_value(i).unwrap())
            .unwrap();
    }
    w.finish().unwrap()
}

#[test]
fn rewritten_fixtures_read_back_identically() {
    for name in FIXTURES {
        let path = fixture_dir().join(format!("{name}.ptx"));
        let old = PtexFile::open(&path).unwrap();
        let new = PtexFile::from_bytes(name, rewrite(&old), PtexOptions::default())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(new.mesh_type(), old.mesh_type(), "{name}");
        assert_eq!(new.data_type(), old.data_type(), "{name}");
        assert_eq!(new.num_channels(), old.num_channels(), "{name}");
        assert_eq!(new.alpha_channel(), old.alpha_channel(), "{name}");
        assert_eq!(new.num_faces(), old.num_faces(), "{name}");
        assert_eq!(new.u_border_mode(), old.u_border_mode(), "{name}");
        assert_eq!(new.v_border_mode(), old.v_border_mode(), "{name}");
        assert_eq!(new.edge_filter_mode(), old.edge_filter_mode(), "{name}");
        let edited = old.has_edits();
        if !edited {
            assert_eq!(new.num_levels(), old.num_levels(), "{name}");
            assert_eq!(
                new.header().leveldatasize > 0,
                old.header().leveldatasize > 0
            );
        }
        for f in 0..old.num_faces() as u32 {
            let (a, b) = (old.face_info(f).unwrap(), new.face_info(f).unwrap());
            let mut expected = *a;
            expected.flags &= !face_flags::HAS_EDITS;
            if edited {
                // The edit changed the neighbourhoods the stored flags describe.
                expected.flags &= !face_flags::NB_CONSTANT;
                let mut got = *b;
                got.flags &= !face_flags::NB_CONSTANT;
                assert_eq!(got, expected, "{name} face {f}");
            } else {
                assert_eq!(*b, expected, "{name} face {f}");
                assert_eq!(new.rfaceid(f).unwrap(), old.rfaceid(f).unwrap());
            }
            assert_eq!(
                new.constant(f).unwrap(),
                old.constant(f).unwrap(),
                "{name} face {f} constant"
            );
            let levels = old.stored_levels(f).unwrap();
            if !a.has_edits() {
                assert_eq!(new.stored_levels(f).unwrap(), levels, "{name} face {f}");
            }
            for level in 0..levels {
                assert_eq!(
                    new.read_level(f, level).unwrap().into_packed(),
                    old.read_level(f, level).unwrap().into_packed(),
                    "{name} face {f} level {level}"
                );
            }
            if !edited {
                let (bo, bn) = (old.block(f, 0).unwrap(), new.block(f, 0).unwrap());
                assert_eq!(
                    bn.span.header.encoding(),
                    bo.span.header.encoding(),
                    "{name} face {f} encoding"
                );
                assert_eq!(
                    bn.tiles.map(|t| (t.tile_res, t.tiles.len())),
                    bo.tiles.map(|t| (t.tile_res, t.tiles.len()))
                );
            }
        }
        assert_eq!(new.meta().len(), old.meta().len(), "{name}");
        for (i, (a, b)) in old.meta().iter().zip(new.meta()).enumerate() {
            assert_eq!(b.key, a.key, "{name}");
            assert_eq!(b.meta_type, a.meta_type, "{name} {}", a.key);
            if a.storage != MetaStorage::Edit {
                assert_eq!(b.storage, a.storage, "{name} {}", a.key);
            }
            assert_eq!(new.meta_value(i).unwrap(), old.meta_value(i).unwrap());
        }
    }
}

/// A 3×3 quad grid's adjacency: face `y * 3 + x`.
fn grid_info(x: i32, y: i32, res: Res) -> FaceInfo {
    let id = |x: i32, y: i32| {
        if (0..3).contains(&x) && (0..3).contains(&y) {
            y * 3 + x
        } else {
            -1
        }
    };
    FaceInfo {
        res,
        // Each edge meets the opposite edge of its neighbour: 0↔2, 1↔3.
        adjedges: 2 | (3 << 2) | (1 << 6), // edge 2 meets edge 0: bits 4-5 are 0
        flags: 0,
        adjfaces: [id(x, y - 1), id(x + 1, y), id(x, y + 1), id(x - 1, y)],
    }
}

fn pattern(res: Res, pixel_size: usize, seed: usize) -> Vec<u8> {
    (0..res.texels() * pixel_size)
        .map(|i| ((i * 31 + seed * 7 + (i / 97) * 13) % 251) as u8)
        .collect()
}

#[test]
fn synthetic_files_round_trip() {
    for (data_type, nchannels, alpha) in [(DataType::U8, 3u16, None), (DataType::Half, 4, Some(3))]
    {
        let options = PtexWriteOptions::new(MeshType::Quad, data_type, nchannels, alpha);
        let mut w = PtexWriter::new(options, 9).unwrap();
        let ps = w.pixel_size();
        let mut written = Vec::new();
        for f in 0..9i32 {
            let res = match f {
                0 => Res::new(9, 8), // tiled (≥ 128 KiB)
                1 => Res::new(0, 0),
                2 => Res::new(5, 2),
                3 => Res::new(3, 3),
                _ => Res::new(f as i8 - 2, 4),
            };
            let info = grid_info(f % 3, f / 3, res);
            let mut texels = if data_type == DataType::Half {
                // Finite halves in [0, 1): small exponents only.
                pattern(res, ps, f as usize)
                    .chunks(2)
                    .flat_map(|c| [c[0], c[1] % 0x3b])
                    .collect()
            } else {
                pattern(res, ps, f as usize)
            };
            if f == 0 {
                // A uniform region as large as a tile: stored as a constant tile.
                let row = res.u() * ps;
                for v in 0..128 {
                    texels[v * row..v * row + 256 * ps].fill(7);
                }
            }
            if f == 8 {
                texels = texels[..ps].repeat(res.texels());
            }
            w.write_face(f as u32, info, &texels).unwrap();
            written.push((info, texels));
        }
        w.add_meta("name", &MetaValue::String("round trip".into()))
            .unwrap();
        w.add_meta("big", &MetaValue::Int32((0..600).collect()))
            .unwrap();
        w.add_meta("weights", &MetaValue::Double(vec![0.5, -2.0]))
            .unwrap();
        let file =
            PtexFile::from_bytes("synthetic", w.finish().unwrap(), PtexOptions::default()).unwrap();
        assert_eq!(file.num_faces(), 9);
        assert_eq!(file.data_type(), data_type);
        assert_eq!(file.alpha_channel(), alpha);
        // The largest min(ulog2, vlog2) among non-constant faces is 8: levels 0..=6.
        assert_eq!(file.num_levels(), 7);
        for (f, (info, texels)) in written.iter().enumerate() {
            let f = f as u32;
            let got = file.face_info(f).unwrap();
            assert_eq!(got.res, info.res);
            assert_eq!(got.adjfaces, info.adjfaces);
            assert_eq!(got.adjedges, info.adjedges);
            let uniform = f == 1 || f == 8;
            assert_eq!(got.is_constant(), uniform, "face {f}");
            if uniform {
                assert_eq!(file.constant(f).unwrap(), &texels[..ps]);
            }
            assert_eq!(&file.read_face(f, info.res).unwrap().into_packed(), texels);
            let min = info.res.ulog2.min(info.res.vlog2);
            let expect_levels = if uniform {
                1
            } else {
                1 + (min - 2).max(0) as usize
            };
            assert_eq!(file.stored_levels(f).unwrap(), expect_levels, "face {f}");
        }
        let tiles = file.block(0, 0).unwrap().tiles.expect("face 0 is tiled");
        assert!(tiles.tiles.len() >= 2);
        assert_eq!(
            tiles.tiles[0].header.encoding(),
            crate::sources::ptex::Encoding::Constant
        );
        let big = file.meta_index("big").unwrap();
        assert_eq!(file.meta()[big].storage, MetaStorage::Large);
        assert_eq!(
            file.meta_value(big).unwrap(),
            MetaValue::Int32((0..600).collect())
        );
        let name = file.meta_index("name").unwrap();
        assert_eq!(file.meta()[name].storage, MetaStorage::Small);
        assert_eq!(
            file.meta_value(name).unwrap(),
            MetaValue::String("round trip".into())
        );
        let weights = file.meta_index("weights").unwrap();
        assert_eq!(
            file.meta_value(weights).unwrap(),
            MetaValue::Double(vec![0.5, -2.0])
        );
    }
}

#[test]
fn constant_neighbourhoods_are_flagged() {
    let options = PtexWriteOptions::new(MeshType::Quad, DataType::U8, 1, None);
    let mut w = PtexWriter::new(options, 9).unwrap();
    for f in 0..9 {
        let value = if f == 8 { 200 } else { 10 };
        w.write_constant_face(
            f,
            grid_info(f as i32 % 3, f as i32 / 3, Res::new(2, 2)),
            &[value],
        )
        .unwrap();
    }
    let file = PtexFile::from_bytes("nb", w.finish().unwrap(), PtexOptions::default()).unwrap();
    // Faces touching face 8 (at a vertex or an edge) are not neighbourhood-constant.
    for f in 0..9u32 {
        let nb = file.face_info(f).unwrap().is_neighborhood_constant();
        assert_eq!(nb, ![4, 5, 7, 8].contains(&f), "face {f}");
    }
}

#[test]
fn bad_writes_are_errors() {
    let options = PtexWriteOptions::new(MeshType::Triangle, DataType::U8, 3, None);
    let mut w = PtexWriter::new(options, 2).unwrap();
    let info = |res| FaceInfo {
        res,
        adjedges: 0,
        flags: 0,
        adjfaces: [-1; 4],
    };
    assert!(w.write_face(2, info(Res::new(1, 1)), &[0; 12]).is_err());
    assert!(w.write_face(0, info(Res::new(2, 1)), &[0; 24]).is_err());
    assert!(w.write_face(0, info(Res::new(1, 1)), &[0; 11]).is_err());
    let mut far = info(Res::new(1, 1));
    far.adjfaces[0] = 5;
    assert!(w.write_face(0, far, &[0; 12]).is_err());
    assert!(w.add_meta("", &MetaValue::Int8(vec![1])).is_err());
    assert!(w
        .add_meta(&"k".repeat(255), &MetaValue::Int8(vec![1]))
        .is_err());
    assert!(PtexWriter::new(
        PtexWriteOptions::new(MeshType::Quad, DataType::U8, 3, Some(3)),
        1
    )
    .is_err());
}
