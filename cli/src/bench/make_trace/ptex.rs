//! `demandtex bench make-trace --ptex DIR`: `.dtxp` traces over the `.ptx` files of a
//! directory (`shared/bench/QUERIES.md`, "Ptex query traces"), deterministic for a seed.
//!
//! - `coherent`: frames of W × H pixels in pixel order, each cut into 2 × 2 views of one
//!   file each. A view looks at the mesh at a grazing angle: its rows walk across faces
//!   through the adjacency (rotations included, so a row stays on the surface from face to
//!   face), each row farther away than the one below it (the footprint grows 16× from the
//!   bottom row to the top, so the level of detail varies across the view) and
//!   foreshortened (footprints 1.5× longer down the view than across it). A walk that meets
//!   a mesh boundary is mirrored back onto the mesh. Quad meshes only.
//! - `incoherent`: random bounces: a random file, a random face, a random place on it, a
//!   footprint whose size is spread evenly from 2 texels to the whole face, in a random
//!   direction with an anisotropy of 1 to 4.
//!
//! Footprint vectors are in face coordinates: (`dudx`, `dvdx`) is one pixel step across
//! the view, (`dudy`, `dvdy`) one step down it.

use super::super::trace::{PtexQuery, PtexTrace};
use super::super::Rng;
use super::{Kind, MakeTraceArgs};
use crate::error::CliError;
use demandtex::sources::ptex::{FaceInfo, MeshType, PtexFile};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Footprint of the nearest row of a view, in face units per pixel.
const NEAR_STEP: f32 = 1.0 / 48.0;
/// log2 of how much larger the farthest row's footprint is than the nearest's.
const DEPTH_OCTAVES: f32 = 4.0;
/// How much longer a footprint is down the view than across it.
const FORESHORTENING: f32 = 1.5;
/// Largest ratio of an incoherent footprint's major to minor axis.
const MAX_ANISOTROPY: f32 = 4.0;

/// The `.ptx` files of `dir`, sorted by name.
pub(crate) fn ptex_files(dir: &Path) -> Result<Vec<String>, CliError> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| CliError::Io(format!("{}: {e}", dir.display())))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| CliError::Io(format!("{}: {e}", dir.display())))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.ends_with(".ptx") && entry.path().is_file() {
            names.push(name.to_owned());
        }
    }
    names.sort();
    if names.is_empty() {
        return Err(CliError::Usage(format!(
            "{}: no .ptx files (write a synthetic set with `demandtex ptex gen {}`)",
            dir.display(),
            dir.display()
        )));
    }
    Ok(names)
}

/// A 2 × 2 matrix of 0 and ±1 taking a step across / down the view to face coordinates:
/// `[[a, b], [c, d]]`, local = (a·x + b·y, c·x + d·y).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Frame([i8; 4]);

impl Frame {
    /// `quarter_turns` counter-clockwise turns of the view on the face.
    fn turned(quarter_turns: u8) -> Frame {
        let mut f = Frame([1, 0, 0, 1]);
        for _ in 0..quarter_turns % 4 {
            f = f.rotated();
        }
        f
    }

    /// The frame turned a quarter counter-clockwise: (x, y) → (−y, x) after it.
    fn rotated(self) -> Frame {
        let [a, b, c, d] = self.0;
        Frame([-c, -d, a, b])
    }

    /// The frame mirrored in u (`u_axis`) or v.
    fn mirrored(self, u_axis: bool) -> Frame {
        let [a, b, c, d] = self.0;
        if u_axis {
            Frame([-a, -b, c, d])
        } else {
            Frame([a, b, -c, -d])
        }
    }

    fn apply(self, x: f32, y: f32) -> [f32; 2] {
        let [a, b, c, d] = self.0.map(f32::from);
        [a * x + b * y, c * x + d * y]
    }
}

/// A place on the mesh and the view's frame there.
#[derive(Clone, Copy, Debug)]
struct Walker {
    face: u32,
    u: f32,
    v: f32,
    frame: Frame,
}

/// The edge (0 bottom, 1 right, 2 top, 3 left) a point outside the face is past, its
/// fraction along that edge (counter-clockwise) and how far past it the point is.
fn past_edge(u: f32, v: f32) -> Option<(usize, f32, f32)> {
    if u >= 1.0 {
        Some((1, v, u - 1.0))
    } else if u < 0.0 {
        Some((3, 1.0 - v, -u))
    } else if v < 0.0 {
        Some((0, u, -v))
    } else if v >= 1.0 {
        Some((2, 1.0 - u, v - 1.0))
    } else {
        None
    }
}

/// The point at fraction `s` along edge `e` (counter-clockwise) and `depth` inside.
fn inside_edge(e: usize, s: f32, depth: f32) -> (f32, f32) {
    match e {
        0 => (s, depth),
        1 => (1.0 - depth, s),
        2 => (1.0 - s, 1.0 - depth),
        _ => (depth, 1.0 - s),
    }
}

impl Walker {
    /// Move by (`x`, `y`) view steps (in face units), crossing edges through the adjacency
    /// and mirroring at boundaries.
    fn step(&mut self, faces: &[FaceInfo], x: f32, y: f32) {
        let [du, dv] = self.frame.apply(x, y);
        self.u += du;
        self.v += dv;
        // A step is shorter than a face, so a few crossings at most (corners need two).
        for _ in 0..4 {
            let Some((edge, t, depth)) = past_edge(self.u, self.v) else {
                break;
            };
            let info = &faces[self.face as usize];
            let next = info.adjfaces[edge];
            if next < 0 || next as usize >= faces.len() {
                // A boundary: mirror the walk back onto this face.
                let u_axis = edge % 2 == 1;
                if u_axis {
                    self.u = if edge == 1 { 2.0 - self.u } else { -self.u };
                } else {
                    self.v = if edge == 2 { 2.0 - self.v } else { -self.v };
                }
                self.frame = self.frame.mirrored(u_axis);
            } else {
                let entry = usize::from((info.adjedges >> (2 * edge)) & 3);
                let (u, v) = inside_edge(entry, 1.0 - t, depth);
                self.face = next as u32;
                (self.u, self.v) = (u, v);
                // Our edge's outward normal becomes the neighbour's inward one.
                for _ in 0..(entry + 6 - edge) % 4 {
                    self.frame = self.frame.rotated();
                }
            }
            self.u = self.u.clamp(0.0, 1.0 - f32::EPSILON);
            self.v = self.v.clamp(0.0, 1.0 - f32::EPSILON);
            if past_edge(self.u, self.v).is_none() {
                break;
            }
        }
    }
}

/// The coherent trace over files with the given faces (see the module docs).
fn coherent(
    files: &[Vec<FaceInfo>],
    count: u64,
    width: u32,
    height: u32,
    seed: u64,
) -> Vec<PtexQuery> {
    let mut rng = Rng::new(seed ^ 0xc0_4e4e_7e47);
    let mut out = Vec::with_capacity(count as usize);
    let (vw, vh) = (width.div_ceil(2).max(1), height.div_ceil(2).max(1));
    'frames: loop {
        // Four views: a file and a starting place each.
        let views: Vec<(u32, Walker)> = (0..4)
            .map(|_| {
                let texture = ((rng.next_f32() * files.len() as f32) as usize).min(files.len() - 1);
                let n = files[texture].len();
                let face = ((rng.next_f32() * n as f32) as usize).min(n - 1) as u32;
                let turns = (rng.next_f32() * 4.0) as u8;
                let walker = Walker {
                    face,
                    u: rng.next_f32(),
                    v: rng.next_f32(),
                    frame: Frame::turned(turns),
                };
                (texture as u32, walker)
            })
            .collect();
        let mut row_starts: Vec<Walker> = views.iter().map(|v| v.1).collect();
        for y in 0..height {
            let (qy, ry) = ((y / vh) as usize, y % vh);
            if ry == 0 && qy > 0 {
                // A new row of views starts at its own places.
                for q in 0..2 {
                    row_starts[2 * qy.min(1) + q] = views[2 * qy.min(1) + q].1;
                }
            }
            // Depth: the view's top row is farthest away.
            let scale = NEAR_STEP * (DEPTH_OCTAVES * (1.0 - ry as f32 / vh as f32)).exp2();
            for qx in 0..2usize {
                let view = 2 * qy.min(1) + qx;
                let (texture, _) = views[view];
                let faces = &files[texture as usize];
                let mut w = row_starts[view];
                let x_end = if qx == 0 {
                    vw.min(width)
                } else {
                    width - vw.min(width)
                };
                for _ in 0..x_end {
                    out.push(PtexQuery {
                        texture,
                        face: w.face,
                        uv: [w.u, w.v],
                        d1: w.frame.apply(scale, 0.0),
                        d2: w.frame.apply(0.0, scale * FORESHORTENING),
                    });
                    if out.len() as u64 == count {
                        break 'frames;
                    }
                    w.step(faces, scale, 0.0);
                }
                // The next row is one (foreshortened) step down from this one's start.
                row_starts[view].step(faces, 0.0, -scale * FORESHORTENING);
            }
        }
    }
    out
}

/// The incoherent trace over files with the given faces (see the module docs).
fn incoherent(files: &[Vec<FaceInfo>], count: u64, seed: u64) -> Vec<PtexQuery> {
    let mut rng = Rng::new(seed ^ 0x1c0_4e7e_4e47);
    (0..count)
        .map(|_| {
            let texture = ((rng.next_f32() * files.len() as f32) as usize).min(files.len() - 1);
            let faces = &files[texture];
            let face = ((rng.next_f32() * faces.len() as f32) as usize).min(faces.len() - 1);
            let res = faces[face].res;
            // Footprint from 2 texels (of the face's larger side) to the whole face.
            let top = f32::from(res.ulog2.max(res.vlog2).max(1));
            let major = ((1.0 + rng.next_f32() * (top - 1.0)) - top).exp2();
            let minor = major / (1.0 + rng.next_f32() * (MAX_ANISOTROPY - 1.0));
            let (sin, cos) = (rng.next_f32() * std::f32::consts::TAU).sin_cos();
            PtexQuery {
                texture: texture as u32,
                face: face as u32,
                uv: [rng.next_f32(), rng.next_f32()],
                d1: [major * cos, major * sin],
                d2: [-minor * sin, minor * cos],
            }
        })
        .collect()
}

/// Write the `.dtxp` trace `args` asks for over the `.ptx` files of `dir`.
pub(crate) fn run(args: &MakeTraceArgs, dir: &Path) -> Result<(), CliError> {
    let start = Instant::now();
    let names = ptex_files(dir)?;
    let mut files = Vec::with_capacity(names.len());
    let (mut faces, mut bytes) = (0u64, 0u64);
    for name in &names {
        let file =
            PtexFile::open(dir.join(name)).map_err(|e| CliError::Demandtex(e.to_string()))?;
        if args.kind == Kind::Coherent && file.mesh_type() != MeshType::Quad {
            return Err(CliError::Usage(format!(
                "{name}: a triangle mesh; coherent Ptex traces walk quad meshes (use \
                 --kind incoherent)"
            )));
        }
        if file.num_faces() == 0 {
            return Err(CliError::Demandtex(format!("{name}: no faces")));
        }
        faces += file.num_faces() as u64;
        bytes += file.file_size();
        files.push(file.faces().to_vec());
    }
    let queries = match args.kind {
        Kind::Coherent => coherent(&files, args.queries, args.width, args.height, args.seed),
        Kind::Incoherent => incoherent(&files, args.queries, args.seed),
    };
    let trace = PtexTrace {
        textures: names,
        queries,
    };
    let out_dir = args.out.as_deref().unwrap_or(dir);
    std::fs::create_dir_all(out_dir)
        .map_err(|e| CliError::Io(format!("{}: {e}", out_dir.display())))?;
    let trace_path: PathBuf = out_dir.join(format!("{}.dtxp", args.kind.name()));
    trace.write(&trace_path)?;
    println!(
        "{}",
        serde_json::json!({
            "trace": trace_path.display().to_string(),
            "textures_dir": dir.display().to_string(),
            "kind": args.kind.name(),
            "queries": trace.queries.len(),
            "textures": trace.textures.len(),
            "faces": faces,
            "texture_bytes_on_disk": bytes,
            "trace_seconds": start.elapsed().as_secs_f64(),
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::sources::ptex::Res;

    /// A `w`-wide grid of `n` faces, as `ptex gen` lays them out.
    fn grid(w: i32, n: i32) -> Vec<FaceInfo> {
        (0..n)
            .map(|id| {
                let (x, y) = (id % w, id / w);
                let at = |x: i32, y: i32| {
                    if x < 0 || y < 0 || x >= w || y * w + x >= n {
                        -1
                    } else {
                        y * w + x
                    }
                };
                FaceInfo {
                    res: Res::new(5, 4),
                    adjedges: 2 | (3 << 2) | (1 << 6),
                    flags: 0,
                    adjfaces: [at(x, y - 1), at(x + 1, y), at(x, y + 1), at(x - 1, y)],
                }
            })
            .collect()
    }

    #[test]
    fn frames_turn_and_mirror_as_matrices() {
        assert_eq!(Frame::turned(1).apply(1.0, 0.0), [0.0, 1.0]);
        assert_eq!(Frame::turned(4), Frame::turned(0));
        assert_eq!(Frame::turned(2).apply(1.0, 2.0), [-1.0, -2.0]);
        assert_eq!(Frame::turned(0).mirrored(true).apply(1.0, 2.0), [-1.0, 2.0]);
    }

    #[test]
    fn edges_map_points_to_the_neighbour() {
        // Across a grid's right edge: (1.1, 0.3) of one face is (0.1, 0.3) of the next.
        let (e, t, d) = past_edge(1.1, 0.3).unwrap();
        assert_eq!(e, 1);
        let (u, v) = inside_edge(3, 1.0 - t, d);
        assert!((u - 0.1).abs() < 1e-6 && (v - 0.3).abs() < 1e-6);
        // Below the bottom edge: into the top of the face below.
        let (e, t, d) = past_edge(0.4, -0.2).unwrap();
        let (u, v) = inside_edge(2, 1.0 - t, d);
        assert_eq!(e, 0);
        assert!((u - 0.4).abs() < 1e-6 && (v - 0.8).abs() < 1e-6);
    }

    /// A walker at the centre of `face`, the view turned `turns` quarters.
    fn centre_of(face: u32, turns: u8) -> Walker {
        Walker {
            face,
            u: 0.5,
            v: 0.5,
            frame: Frame::turned(turns),
        }
    }

    #[test]
    fn walks_cross_faces_in_a_grid_and_mirror_at_its_boundary() {
        let faces = grid(4, 16);
        let mut w = centre_of(5, 0);
        w.step(&faces, 0.75, 0.0);
        assert_eq!((w.face, (w.u * 4.0).round()), (6, 1.0));
        // Turned a quarter: a step across the view goes up in v (to the face above).
        let mut w = centre_of(5, 1);
        w.step(&faces, 0.75, 0.0);
        assert_eq!(w.face, 9);
        // Walking right along row 0 reaches face 3, then mirrors back.
        let mut w = centre_of(0, 0);
        let mut seen = Vec::new();
        for _ in 0..12 {
            w.step(&faces, 0.5, 0.0);
            seen.push(w.face);
            assert!((0.0..1.0).contains(&w.u) && (0.0..1.0).contains(&w.v));
        }
        assert!(seen.contains(&3));
        assert_eq!(*seen.last().unwrap(), 1, "{seen:?}");
    }

    #[test]
    fn traces_are_deterministic_and_valid() {
        let files = vec![grid(4, 16), grid(3, 7)];
        let c = coherent(&files, 5000, 64, 36, 3);
        assert_eq!(c.len(), 5000);
        assert_eq!(c, coherent(&files, 5000, 64, 36, 3));
        let i = incoherent(&files, 5000, 3);
        assert_eq!(i, incoherent(&files, 5000, 3));
        for q in c.iter().chain(&i) {
            let n = files[q.texture as usize].len() as u32;
            assert!(q.face < n);
            assert!((0.0..1.0).contains(&q.uv[0]) && (0.0..1.0).contains(&q.uv[1]));
            assert!(q.d1[0].hypot(q.d1[1]) > 0.0 && q.d2[0].hypot(q.d2[1]) > 0.0);
        }
        // Coherent: consecutive queries mostly stay on a face or step to a neighbour.
        let near = c
            .windows(2)
            .filter(|p| {
                let (a, b) = (p[0], p[1]);
                a.texture == b.texture
                    && (a.face == b.face
                        || files[a.texture as usize][a.face as usize]
                            .adjfaces
                            .contains(&(b.face as i32)))
            })
            .count();
        assert!(near * 10 > c.len() * 9, "{near} of {}", c.len());
        // Incoherent footprints span 2 texels to the whole face (a 32-texel side here).
        let majors: Vec<f32> = i.iter().map(|q| q.d1[0].hypot(q.d1[1])).collect();
        assert!(majors
            .iter()
            .all(|&m| (1.0 / 16.0 - 1e-6..=1.0 + 1e-6).contains(&m)));
    }
}
