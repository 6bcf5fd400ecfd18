//! Reductions made from units at hand ([`PtexFile::read_face_from`], the engine's resident
//! units) equal those made from the file, at every resolution of every fixture face; a
//! source of the wrong size is ignored.

use super::fixtures::all;
use crate::sources::ptex::{DecodedUnits, PtexFile, Res};
use std::cell::Cell;

/// Every resolution of a face from another open of the same file (its own decode-cache
/// entries), or bytes of the wrong length; counts what it was asked.
struct Other<'a> {
    file: &'a PtexFile,
    wrong_length: bool,
    asked: Cell<usize>,
}

impl DecodedUnits for Other<'_> {
    fn unit_texels(&self, face: u32, res: Res) -> Option<Vec<u8>> {
        self.asked.set(self.asked.get() + 1);
        let mut texels = self.file.read_face(face, res).ok()?.into_packed();
        if self.wrong_length {
            texels.pop();
        }
        Some(texels)
    }
}

#[test]
fn reductions_from_units_at_hand_equal_those_from_the_file() {
    for wrong_length in [false, true] {
        let mut asked = 0;
        for fx in all() {
            let other_open = PtexFile::open(&fx.path).unwrap();
            let units = Other {
                file: &other_open,
                wrong_length,
                asked: Cell::new(0),
            };
            // A third open, whose decode-cache entries start empty: the chains consult
            // `units` before making their sources.
            let file = PtexFile::open(&fx.path).unwrap();
            for face in 0..file.num_faces() as u32 {
                let info = *file.face_info(face).unwrap();
                for redu in 0..=info.res.ulog2.max(0) {
                    for redv in 0..=info.res.vlog2.max(0) {
                        let res = Res::new(info.res.ulog2 - redu, info.res.vlog2 - redv);
                        let want = fx.file.read_face(face, res);
                        let got = file.read_face_from(face, res, Some(&units));
                        match (want, got) {
                            (Ok(w), Ok(g)) => assert_eq!(
                                w.into_packed(),
                                g.into_packed(),
                                "{} face {face} at {res}",
                                fx.name
                            ),
                            (Err(_), Err(_)) => {}
                            (w, g) => panic!("{} face {face} at {res}: {w:?} vs {g:?}", fx.name),
                        }
                    }
                }
            }
            asked += units.asked.get();
        }
        assert!(asked > 0, "no chain asked for a source");
    }
}
