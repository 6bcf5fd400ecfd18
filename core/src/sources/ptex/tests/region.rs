//! Regions ([`PtexFile::read_region`]) equal the same rectangle of the whole face at every
//! resolution: stored levels (tiled and untiled), reductions made on the fly (from tiled
//! levels too), constants and triangles; bad rectangles are errors.

use super::fixtures::all;
use crate::sources::ptex::region::Rect;
use crate::sources::ptex::{
    DataType, FaceInfo, MeshType, PtexFile, PtexOptions, PtexWriteOptions, PtexWriter, Res,
};

/// Every resolution of `face`, a few rectangles each: the whole, quarters, odd ones.
fn check_face(file: &PtexFile, face: u32) {
    let info = *file.face_info(face).unwrap();
    let ps = file.pixel_size();
    for redu in 0..=info.res.ulog2 {
        for redv in 0..=info.res.vlog2 {
            let res = Res::new(info.res.ulog2 - redu, info.res.vlog2 - redv);
            let Ok(whole) = file.read_face(face, res) else {
                // Triangles have no anisotropic resolutions: neither has a region.
                assert!(file.read_region(face, res, whole_rect(res)).is_err());
                continue;
            };
            let (w, h) = (res.u(), res.v());
            let mut rects = vec![whole_rect(res)];
            if w >= 2 && h >= 2 {
                rects.push(Rect {
                    x: w / 2,
                    y: 0,
                    w: w / 2,
                    h: h / 2,
                });
                rects.push(Rect {
                    x: 0,
                    y: h / 2,
                    w: w / 2,
                    h: h / 2,
                });
                rects.push(Rect {
                    x: w / 3,
                    y: h / 4,
                    w: w / 2,
                    h: h - h / 4,
                });
            }
            for rect in rects {
                let got = file.read_region(face, res, rect).unwrap();
                assert_eq!(got.len(), rect.w * rect.h * ps);
                for y in 0..rect.h {
                    for x in 0..rect.w {
                        let at = (y * rect.w + x) * ps;
                        assert_eq!(
                            &got[at..at + ps],
                            whole.texel(rect.x + x, rect.y + y).unwrap(),
                            "{} face {face} at {res}, {rect:?}, texel ({x}, {y})",
                            file.name()
                        );
                    }
                }
            }
        }
    }
}

fn whole_rect(res: Res) -> Rect {
    Rect {
        x: 0,
        y: 0,
        w: res.u(),
        h: res.v(),
    }
}

#[test]
fn regions_of_the_fixtures_equal_their_faces() {
    for fx in all() {
        for face in 0..fx.file.num_faces() as u32 {
            check_face(&fx.file, face);
        }
    }
}

#[test]
fn regions_of_tiled_faces_read_their_tiles() {
    // u8 RGB: a 512×256 face is 384 KiB, stored in tiles of 96 KiB (the writer's rule,
    // as the reference's), its reductions too where they are 128 KiB or more.
    for (data_type, nchannels) in [(DataType::U8, 3u16), (DataType::Half, 4)] {
        let options = PtexWriteOptions::new(MeshType::Quad, data_type, nchannels, None);
        let mut w = PtexWriter::new(options, 2).unwrap();
        let ps = w.pixel_size();
        for (f, res) in [Res::new(9, 8), Res::new(4, 7)].into_iter().enumerate() {
            let texels: Vec<u8> = (0..res.texels() * ps)
                .map(|i| {
                    let v = ((i * 31 + (i / 509) * 17 + f) % 251) as u8;
                    // Finite halves: keep the high byte small.
                    if data_type == DataType::Half && i % 2 == 1 {
                        v % 0x3b
                    } else {
                        v
                    }
                })
                .collect();
            let info = FaceInfo {
                res,
                adjedges: 0,
                flags: 0,
                adjfaces: [-1; 4],
            };
            w.write_face(f as u32, info, &texels).unwrap();
        }
        let file =
            PtexFile::from_bytes("tiled", w.finish().unwrap(), PtexOptions::default()).unwrap();
        assert!(
            file.block(0, 0).unwrap().tiles.is_some(),
            "level 0 is tiled"
        );
        check_face(&file, 0);
        check_face(&file, 1);
    }
}

#[test]
fn bad_regions_are_errors() {
    let fx = &all()[0];
    let res = fx.file.face_info(0).unwrap().res;
    for rect in [
        Rect {
            x: 0,
            y: 0,
            w: 0,
            h: 1,
        },
        Rect {
            x: res.u(),
            y: 0,
            w: 1,
            h: 1,
        },
        Rect {
            x: 0,
            y: 1,
            w: 1,
            h: res.v(),
        },
        Rect {
            x: usize::MAX,
            y: 0,
            w: 2,
            h: 1,
        },
    ] {
        let e = fx.file.read_region(0, res, rect).unwrap_err().to_string();
        assert!(e.contains("outside"), "{e}");
    }
}
