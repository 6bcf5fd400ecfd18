//! Reductions made from units at hand ([`PtexFile::read_face_from`], the engine's resident
//! units) equal those made from the file, at every resolution of every fixture face; a
//! source of the wrong size, or of one value throughout (it may stand for uniform data,
//! which the chain makes a constant of), is not taken.

use super::fixtures::all;
use crate::sources::ptex::{DecodedUnits, PtexFile, Res};
use std::cell::Cell;

/// What [`Other`] answers.
#[derive(Clone, Copy, PartialEq)]
enum Answer {
    /// The texels.
    Right,
    /// One byte short.
    WrongLength,
    /// The first texel throughout (wrong unless the face is uniform there).
    OneValue,
}

/// Every resolution of a face from another open of the same file (its own decode-cache
/// entries), as `answer` says; counts what it was asked.
struct Other<'a> {
    file: &'a PtexFile,
    answer: Answer,
    asked: Cell<usize>,
}

impl DecodedUnits for Other<'_> {
    fn unit_texels(&self, face: u32, res: Res) -> Option<Vec<u8>> {
        self.asked.set(self.asked.get() + 1);
        let mut texels = self.file.read_face(face, res).ok()?.into_packed();
        match self.answer {
            Answer::Right => {}
            Answer::WrongLength => {
                texels.pop();
            }
            Answer::OneValue => {
                let ps = self.file.pixel_size();
                let first = texels[..ps].to_vec();
                texels
                    .chunks_exact_mut(ps)
                    .for_each(|t| t.copy_from_slice(&first));
            }
        }
        Some(texels)
    }
}

#[test]
fn reductions_from_units_at_hand_equal_those_from_the_file() {
    for answer in [Answer::Right, Answer::WrongLength, Answer::OneValue] {
        let mut asked = 0;
        for fx in all() {
            let other_open = PtexFile::open(&fx.path).unwrap();
            let units = Other {
                file: &other_open,
                answer,
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
