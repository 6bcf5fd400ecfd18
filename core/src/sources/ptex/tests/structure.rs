//! The files' structure against the fixtures' `layout`, `info` and `faces`: header fields,
//! section offsets, level tables, every block's place and encoding, tiles, rfaceids, face
//! infos and adjacency, edit records.

use super::fixtures::*;
use crate::sources::ptex::*;
use serde_json::Value;

fn encoding_name(e: Encoding) -> &'static str {
    match e {
        Encoding::Constant => "constant",
        Encoding::Zipped => "zipped",
        Encoding::DiffZipped => "diffzipped",
        Encoding::Tiled => "tiled",
    }
}

#[test]
fn headers_match_every_field() {
    for fx in all() {
        let (f, l) = (&fx.file, &fx.json["layout"]);
        assert_eq!(f.file_size(), int(&l["file_size"]), "{}", fx.name);
        let h = f.header();
        let jh = &l["header"];
        let fields: [(&str, u64); 16] = [
            ("magic", h.magic.into()),
            ("version", h.version.into()),
            ("meshtype", h.meshtype.into()),
            ("datatype", h.datatype.into()),
            ("alphachan", (h.alphachan as i64) as u64),
            ("nchannels", h.nchannels.into()),
            ("nlevels", h.nlevels.into()),
            ("nfaces", h.nfaces.into()),
            ("extheadersize", h.extheadersize.into()),
            ("faceinfosize", h.faceinfosize.into()),
            ("constdatasize", h.constdatasize.into()),
            ("levelinfosize", h.levelinfosize.into()),
            ("minorversion", h.minorversion.into()),
            ("leveldatasize", h.leveldatasize),
            ("metadatazipsize", h.metadatazipsize.into()),
            ("metadatamemsize", h.metadatamemsize.into()),
        ];
        for (name, value) in fields {
            assert_eq!(value, sint(&jh[name]) as u64, "{} header.{name}", fx.name);
        }
        let x = f.ext_header();
        let jx = &l["extheader"];
        let fields: [(&str, u64); 9] = [
            ("ubordermode", x.ubordermode.into()),
            ("pad", x.pad.into()),
            ("vbordermode", x.vbordermode.into()),
            ("edgefiltermode", x.edgefiltermode.into()),
            ("lmdheaderzipsize", x.lmdheaderzipsize.into()),
            ("lmdheadermemsize", x.lmdheadermemsize.into()),
            ("lmddatasize", x.lmddatasize),
            ("editdatasize", x.editdatasize),
            ("editdatapos", x.editdatapos),
        ];
        for (name, value) in fields {
            assert_eq!(value, int(&jx[name]), "{} extheader.{name}", fx.name);
        }
        let s = f.sections();
        let js = &l["section_offsets"];
        let fields: [(&str, u64); 9] = [
            ("faceinfo", s.faceinfo),
            ("constdata", s.constdata),
            ("levelinfo", s.levelinfo),
            ("leveldata", s.leveldata),
            ("metadata", s.metadata),
            ("compat_barrier", s.compat_barrier),
            ("lmdheader", s.lmdheader),
            ("lmddata", s.lmddata),
            ("editdata", s.editdata),
        ];
        for (name, value) in fields {
            assert_eq!(value, int(&js[name]), "{} section {name}", fx.name);
        }
    }
}

#[test]
fn info_matches_get_info() {
    for fx in all() {
        let (f, i) = (&fx.file, &fx.json["info"]);
        let mesh = match f.mesh_type() {
            MeshType::Triangle => "triangle",
            MeshType::Quad => "quad",
        };
        assert_eq!(mesh, i["meshType"], "{}", fx.name);
        let data = match f.data_type() {
            DataType::U8 => "uint8",
            DataType::U16 => "uint16",
            DataType::Half => "float16",
            DataType::F32 => "float32",
        };
        assert_eq!(data, i["dataType"], "{}", fx.name);
        assert_eq!(
            f.num_channels() as u64,
            int(&i["numChannels"]),
            "{}",
            fx.name
        );
        let alpha = f.alpha_channel().map_or(-1, |a| a as i64);
        assert_eq!(alpha, sint(&i["alphaChannel"]), "{}", fx.name);
        assert_eq!(f.num_faces() as u64, int(&i["numFaces"]), "{}", fx.name);
        let border = |m: BorderMode| match m {
            BorderMode::Clamp => "clamp",
            BorderMode::Black => "black",
            BorderMode::Periodic => "periodic",
        };
        assert_eq!(border(f.u_border_mode()), i["uBorderMode"], "{}", fx.name);
        assert_eq!(border(f.v_border_mode()), i["vBorderMode"], "{}", fx.name);
        let efm = match f.edge_filter_mode() {
            EdgeFilterMode::None => "none",
            EdgeFilterMode::TanVec => "tanvec",
        };
        assert_eq!(efm, i["edgeFilterMode"], "{}", fx.name);
        assert_eq!(f.has_edits(), flag(&i["hasEdits"]), "{}", fx.name);
        assert_eq!(f.has_mipmaps(), flag(&i["hasMipMaps"]), "{}", fx.name);
        assert_eq!(
            f.num_levels() as u64,
            int(&fx.json["layout"]["header"]["nlevels"])
        );
    }
}

#[test]
fn face_infos_and_adjacency_match() {
    for fx in all() {
        let f = &fx.file;
        let faces = list(&fx.json["faces"]);
        assert_eq!(faces.len(), f.num_faces(), "{}", fx.name);
        for jf in faces {
            let id = int(&jf["id"]) as u32;
            let info = f.face_info(id).unwrap();
            let ctx = format!("{} face {id}", fx.name);
            assert_eq!(info.res, res(&jf["res"]), "{ctx}");
            assert_eq!(
                [info.res.u(), info.res.v()],
                [int(&jf["size"][0]) as usize, int(&jf["size"][1]) as usize]
            );
            assert_eq!(u64::from(info.flags), int(&jf["flags"]), "{ctx}");
            assert_eq!(info.is_constant(), flag(&jf["isConstant"]), "{ctx}");
            assert_eq!(info.has_edits(), flag(&jf["hasEdits"]), "{ctx}");
            assert_eq!(
                info.is_neighborhood_constant(),
                flag(&jf["isNeighborhoodConstant"]),
                "{ctx}"
            );
            assert_eq!(info.is_subface(), flag(&jf["isSubface"]), "{ctx}");
            assert_eq!(u64::from(info.adjedges), int(&jf["adjedges_byte"]), "{ctx}");
            for e in 0..4u8 {
                let adj_face = sint(&jf["adjfaces"][e as usize]);
                let adj_edge = int(&jf["adjedges"][e as usize]) as u8;
                assert_eq!(
                    i64::from(info.adjfaces[e as usize]),
                    adj_face,
                    "{ctx} edge {e}"
                );
                assert_eq!(info.adj_edge(e), adj_edge, "{ctx} edge {e}");
                let expected = (adj_face >= 0).then_some(Adjacent {
                    face: adj_face as u32,
                    edge: adj_edge,
                });
                assert_eq!(info.adjacent(e), expected, "{ctx} edge {e}");
            }
        }
    }
}

/// Adjacency is mutual: across edge e of face f lies face g, whose edge adj_edge(e) leads
/// back to f across edge e. The fixtures include rotated neighbours, subfaces of n-gons
/// and triangles. (Between a quad and the subfaces of an n-gon it is not: the quad's edge
/// borders two subfaces and names the first, format note §3.)
#[test]
fn adjacency_is_mutual() {
    let mut rotations = std::collections::BTreeSet::new();
    let mut quad_to_subface = 0;
    for fx in all() {
        let f = &fx.file;
        let edges = if f.mesh_type() == MeshType::Triangle {
            3
        } else {
            4
        };
        for (id, info) in f.faces().iter().enumerate() {
            for e in 0..edges {
                let Some(adj) = info.adjacent(e) else {
                    continue;
                };
                let other = f.face_info(adj.face).unwrap();
                if other.is_subface() != info.is_subface() {
                    // A quad names the first subface met counter-clockwise, by its edge 3.
                    if !info.is_subface() {
                        assert_eq!(adj.edge, 3, "{} face {id} edge {e}", fx.name);
                        quad_to_subface += 1;
                    }
                    continue;
                }
                let back = other.adjacent(adj.edge).unwrap();
                assert_eq!(
                    back,
                    Adjacent {
                        face: id as u32,
                        edge: e
                    },
                    "{} face {id} edge {e}",
                    fx.name
                );
                if f.mesh_type() == MeshType::Quad {
                    rotations.insert(adj.rotation(e));
                }
            }
        }
    }
    assert_eq!(
        quad_to_subface, 2,
        "quad_uint8_rgb: two quads border its triangles"
    );
    // Every rotation occurs somewhere in the quad fixtures.
    assert_eq!(rotations.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3]);
}

#[test]
fn rfaceids_match() {
    for fx in all() {
        let l = &fx.json["layout"];
        for (face, r) in list(&l["rfaceids"]).iter().enumerate() {
            assert_eq!(
                u64::from(fx.file.rfaceid(face as u32).unwrap()),
                int(r),
                "{} face {face}",
                fx.name
            );
        }
    }
}

/// Compare a block span (and tiles) with a `layout.levels[].faces[]` entry.
fn check_block(name: &str, span: BlockSpan, tiles: Option<&TileLayout>, j: &Value) {
    let ctx = format!("{name} block at {}", j["offset"]);
    assert_eq!(span.offset, int(&j["offset"]), "{ctx}");
    assert_eq!(
        u64::from(span.header.block_size()),
        int(&j["blocksize"]),
        "{ctx}"
    );
    assert_eq!(
        encoding_name(span.header.encoding()),
        j["encoding"],
        "{ctx}"
    );
    if let Some(t) = tiles {
        assert_eq!(t.tile_res, res(&j["tileres"]), "{ctx}");
        assert_eq!(t.ntiles_u as u64, int(&j["ntilesu"]), "{ctx}");
        assert_eq!(t.ntiles_v as u64, int(&j["ntilesv"]), "{ctx}");
        assert_eq!(u64::from(t.header_size), int(&j["tileheadersize"]), "{ctx}");
        let jt = list(&j["tiles"]);
        assert_eq!(t.tiles.len(), jt.len(), "{ctx}");
        for (tile, jt) in t.tiles.iter().zip(jt) {
            assert_eq!(tile.offset, int(&jt["offset"]), "{ctx}");
            assert_eq!(
                u64::from(tile.header.block_size()),
                int(&jt["blocksize"]),
                "{ctx}"
            );
            assert_eq!(
                encoding_name(tile.header.encoding()),
                jt["encoding"],
                "{ctx}"
            );
        }
    } else {
        assert!(j.get("tiles").is_none(), "{ctx}: the reference says tiled");
    }
}

/// Every level's place, info and blocks as written (the main data, before edits).
#[test]
fn level_tables_and_blocks_match_the_layout() {
    for fx in all() {
        let f = &fx.file;
        let jl = list(&fx.json["layout"]["levels"]);
        assert_eq!(jl.len(), f.num_levels(), "{}", fx.name);
        for (level, j) in jl.iter().enumerate() {
            let info = f.level_info(level).unwrap();
            assert_eq!(
                f.level_offset(level),
                Some(int(&j["offset"])),
                "{} level {level}",
                fx.name
            );
            assert_eq!(info.leveldatasize, int(&j["leveldatasize"]));
            assert_eq!(u64::from(info.levelheadersize), int(&j["levelheadersize"]));
            assert_eq!(u64::from(info.nfaces), int(&j["nfaces"]));
            let blocks = &f.levels[level].blocks;
            for jb in list(&j["faces"]) {
                let (index, face) = (int(&jb["index"]) as usize, int(&jb["faceid"]) as u32);
                let expected = if level == 0 {
                    face
                } else {
                    f.rfaceid(face).unwrap()
                };
                assert_eq!(index as u32, expected, "{} level {level}", fx.name);
                let edited = f.face_info(face).unwrap().has_edits();
                if level == 0 && edited {
                    continue; // replaced by its edit record (checked below)
                }
                let block = &blocks[index];
                let tiles = (block.span.header.encoding() == Encoding::Tiled).then(|| {
                    let r = f.face_info(face).unwrap().res.reduced(level as i8);
                    assert_eq!(r, res(&jb["res"]), "{} level {level} face {face}", fx.name);
                    block.tiles(&f.input, r).unwrap()
                });
                check_block(fx.name, block.span, tiles.as_deref(), jb);
                // The public view agrees where the block is in use.
                if !edited && level < f.stored_levels(face).unwrap() {
                    let b = f.block(face, level).unwrap();
                    assert_eq!(b.span, block.span);
                    if !f.face_info(face).unwrap().is_constant() {
                        assert_eq!(b.tiles.as_deref(), tiles.as_deref());
                    }
                }
            }
        }
    }
}

#[test]
fn edit_records_match_the_layout() {
    let mut seen = 0;
    for fx in all() {
        let f = &fx.file;
        let je = list(&fx.json["layout"]["edits"]);
        assert_eq!(f.edits().len(), je.len(), "{}", fx.name);
        for (e, j) in f.edits().iter().zip(je) {
            seen += 1;
            assert_eq!(e.offset, int(&j["offset"]));
            match &e.kind {
                EditKind::Face {
                    face,
                    res: r,
                    constant,
                    block,
                } => {
                    assert_eq!(j["type"], "facedata");
                    assert_eq!(u64::from(*face), int(&j["faceid"]));
                    assert_eq!(*r, res(&j["res"]));
                    assert_eq!(*constant, int(&j["flags"]) & 1 != 0);
                    assert_eq!(block.offset, int(&j["data_offset"]));
                    assert_eq!(
                        block.offset - f.pixel_size() as u64,
                        int(&j["constvalue_offset"])
                    );
                    assert_eq!(u64::from(block.header.block_size()), int(&j["blocksize"]));
                    assert_eq!(encoding_name(block.header.encoding()), j["encoding"]);
                    assert_eq!(
                        28 + f.pixel_size() as u64 + int(&j["blocksize"]),
                        int(&j["editsize"])
                    );
                    // The edited face's level-0 block is the edit's.
                    if !*constant {
                        assert_eq!(f.block(*face, 0).unwrap().span, *block);
                    }
                }
                EditKind::Meta { zip_size, mem_size } => {
                    assert_eq!(j["type"], "metadata");
                    assert_eq!(u64::from(*zip_size), int(&j["metadatazipsize"]));
                    assert_eq!(u64::from(*mem_size), int(&j["metadatamemsize"]));
                }
                EditKind::Unknown { .. } => panic!("{}: unknown edit record", fx.name),
            }
        }
    }
    assert_eq!(seen, 3, "the fixtures hold three edit records");
}

/// Edited faces have one stored level: their stored reductions are stale.
#[test]
fn edited_faces_ignore_stale_reductions() {
    let fx = Fixture::load("quad_uint8_edits");
    let f = &fx.file;
    for face in 0..4u32 {
        let edited = f.face_info(face).unwrap().has_edits();
        assert_eq!(edited, face == 1 || face == 2, "face {face}");
        let expected = if edited { 1 } else { 3 };
        assert_eq!(f.stored_levels(face).unwrap(), expected, "face {face}");
    }
    let e = f.read_level(1, 1).unwrap_err();
    assert_eq!(e.kind, PtexErrorKind::OutOfRange);
    assert!(e.message.contains("stale"), "{e}");
    // Face 1 was 16x16 with stored reductions; its edit made it 32x8.
    assert_eq!(f.face_info(1).unwrap().res, Res::new(5, 3));
    assert_eq!(
        f.read_face(1, Res::new(4, 2)).unwrap().res(),
        Res::new(4, 2)
    );
}
