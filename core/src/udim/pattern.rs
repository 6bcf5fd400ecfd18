//! UDIM path patterns: `color.<UDIM>.exr` or `color.<UVTILE>.exr`, expanded from the files
//! present in the pattern's directory.
//!
//! - `<UDIM>`: four digits `1001..=1999`; tile column `(n − 1001) % 10`, row
//!   `(n − 1001) / 10` (Mari).
//! - `<UVTILE>`: `u{U}_v{V}` with 1-based decimal `U`, `V` without leading zeros; column
//!   `U − 1`, row `V − 1` (Mudbox). Each must be at most 255.
//!
//! The token may appear once, in the file name only (not in a directory). The directory is
//! listed once; names that do not have the pattern's prefix and suffix, or whose middle
//! part is not token-shaped at all, are ignored. Token-shaped but malformed numbers
//! (`1000`, `2000`, `0999`, `10011`, `u0_v1`, `u01_v1`) and duplicate tiles (the first
//! name in byte order wins) are ignored with a warning in the log. The grid is as wide and
//! tall as the tiles found need (`<UDIM>`: 10 wide only if a column-9 tile exists); the
//! slots no file fills are holes.
//!
//! [`find_tiles`] lists the matching files (possibly none); [`expand_pattern`] lays them out
//! as a grid and refuses a pattern no file matches. Front ends (the C ABI, and through it
//! the C++ wrapper and the Hydra delegate) ask [`find_tiles`] rather than spelling the rule
//! out again.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{UdimGrid, UDIM_MAX_GRID_SIDE};
use crate::sources::ImageSource;
use std::sync::Arc;

/// The files of an expanded UDIM pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdimFiles {
    /// Columns: the largest column found + 1.
    pub width: u32,
    /// Rows: the largest row found + 1.
    pub height: u32,
    /// Row-major `width × height` paths; `None` where no file was found (a hole).
    pub tiles: Vec<Option<PathBuf>>,
}

/// One file of a UDIM pattern ([`find_tiles`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UdimTileFile {
    /// The tile's column: s in `[col, col + 1)`.
    pub col: u32,
    /// The tile's row: t in `[row, row + 1)`.
    pub row: u32,
    /// The file: the pattern's directory (`.` when it has none) joined with the file name.
    pub path: PathBuf,
}

impl UdimTileFile {
    /// The tile's UDIM number, `1001 + col + 10 · row`; `None` for a `<UVTILE>` tile that has
    /// none (column 10 or beyond, or row 100 or beyond).
    pub fn udim(&self) -> Option<u32> {
        let n = super::udim_number(self.col, self.row);
        (super::udim_tile(n) == Some((self.col, self.row))).then_some(n)
    }
}

impl UdimFiles {
    /// The file of tile (col, row), if any.
    pub fn tile(&self, col: u32, row: u32) -> Option<&Path> {
        if col >= self.width || row >= self.height {
            return None;
        }
        self.tiles[(row * self.width + col) as usize].as_deref()
    }
}

/// The tile tokens a pattern may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    Udim,
    UvTile,
}

impl Token {
    const ALL: [(Token, &'static str); 2] = [(Token::Udim, "<UDIM>"), (Token::UvTile, "<UVTILE>")];

    /// The tile a file name's middle part names: `Ok(None)` if it is not token-shaped
    /// (ignore quietly), `Err(why)` if it is but malformed (ignore with a warning).
    fn parse(self, middle: &str) -> std::result::Result<Option<(u32, u32)>, &'static str> {
        match self {
            Token::Udim => {
                if middle.is_empty() || !middle.bytes().all(|b| b.is_ascii_digit()) {
                    return Ok(None);
                }
                if middle.len() != 4 {
                    return Err("a UDIM number has four digits");
                }
                let n: u32 = middle.parse().map_err(|_| "not a number")?;
                super::udim_tile(n)
                    .map(Some)
                    .ok_or("UDIM numbers run from 1001 to 1999")
            }
            Token::UvTile => {
                let Some((u, v)) = middle
                    .strip_prefix('u')
                    .and_then(|rest| rest.split_once("_v"))
                else {
                    return Ok(None);
                };
                let digits = |x: &str| !x.is_empty() && x.bytes().all(|b| b.is_ascii_digit());
                if !digits(u) || !digits(v) {
                    return Ok(None);
                }
                let index = |x: &str| -> std::result::Result<u32, &'static str> {
                    if x.starts_with('0') {
                        return Err("UVTILE indices are 1-based, without leading zeros");
                    }
                    match x.parse::<u32>() {
                        Ok(n) if (1..=UDIM_MAX_GRID_SIDE).contains(&n) => Ok(n - 1),
                        _ => Err("UVTILE indices run from 1 to 255"),
                    }
                };
                Ok(Some((index(u)?, index(v)?)))
            }
        }
    }
}

/// The files matching `pattern` (see the [module documentation](self)), row-major: by row,
/// then column (for `<UDIM>`: by UDIM number). Empty when no file matches.
///
/// Errors ([`Error::InvalidArgument`]): no token, more than one, or a token outside the
/// file name; ([`Error::Io`]) the directory cannot be listed.
pub fn find_tiles(pattern: &Path) -> Result<Vec<UdimTileFile>> {
    let shown = pattern.display();
    let name = pattern
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("UDIM pattern {shown}: no UTF-8 file name"))
        })?;
    let dir = pattern_dir(pattern);
    let dir_str = dir.to_string_lossy();
    if Token::ALL.iter().any(|(_, t)| dir_str.contains(t)) {
        return Err(Error::InvalidArgument(format!(
            "UDIM pattern {shown}: the <UDIM> or <UVTILE> token may appear in the file name only"
        )));
    }
    let found: Vec<(Token, usize, &str)> = Token::ALL
        .iter()
        .flat_map(|&(token, text)| name.match_indices(text).map(move |(at, t)| (token, at, t)))
        .collect();
    let (token, at, text) = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(Error::InvalidArgument(format!(
                "UDIM pattern {shown}: the file name has no <UDIM> or <UVTILE> token"
            )))
        }
        _ => {
            return Err(Error::InvalidArgument(format!(
                "UDIM pattern {shown}: the file name must hold exactly one <UDIM> or <UVTILE> token"
            )))
        }
    };
    let (prefix, suffix) = (&name[..at], &name[at + text.len()..]);

    let entries = std::fs::read_dir(&dir).map_err(|e| Error::Io {
        path: dir_str.to_string(),
        message: format!("listing the directory of UDIM pattern {shown}: {e}"),
    })?;
    let mut names: Vec<String> = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::Io {
            path: dir_str.to_string(),
            message: format!("listing the directory of UDIM pattern {shown}: {e}"),
        })?;
        // Names that are not UTF-8 cannot match a UTF-8 pattern.
        if let Ok(file_name) = entry.file_name().into_string() {
            names.push(file_name);
        }
    }
    names.sort_unstable();

    // Keyed (row, col): the map's order is row-major.
    let mut tiles: BTreeMap<(u32, u32), PathBuf> = BTreeMap::new();
    for file_name in &names {
        if file_name.len() < prefix.len() + suffix.len()
            || !file_name.starts_with(prefix)
            || !file_name.ends_with(suffix)
        {
            continue;
        }
        let middle = &file_name[prefix.len()..file_name.len() - suffix.len()];
        let path = dir.join(file_name);
        match token.parse(middle) {
            Ok(None) => {}
            Err(why) => {
                tracing::warn!(file = %path.display(), "ignoring a UDIM tile file: {why}");
            }
            Ok(Some((col, row))) => {
                if !path.is_file() {
                    continue;
                }
                if let Some(kept) = tiles.get(&(row, col)) {
                    tracing::warn!(
                        file = %path.display(),
                        kept = %kept.display(),
                        "ignoring a second file for UDIM tile ({col}, {row})"
                    );
                    continue;
                }
                tiles.insert((row, col), path);
            }
        }
    }
    Ok(tiles
        .into_iter()
        .map(|((row, col), path)| UdimTileFile { col, row, path })
        .collect())
}

/// The directory a pattern's files are looked for in: its parent, or `.` when it has none.
fn pattern_dir(pattern: &Path) -> PathBuf {
    match pattern.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Expand a UDIM pattern (see the [module documentation](self)) from the files in its
/// directory ([`find_tiles`]) into a grid.
///
/// Errors ([`Error::InvalidArgument`]): no token, more than one, or a token outside the
/// file name; ([`Error::Io`]) the directory cannot be listed, or no file matches.
pub fn expand_pattern(pattern: &Path) -> Result<UdimFiles> {
    let tiles = find_tiles(pattern)?;
    if tiles.is_empty() {
        return Err(Error::Io {
            path: pattern.display().to_string(),
            message: format!(
                "no file in {} matches this UDIM pattern",
                pattern_dir(pattern).display()
            ),
        });
    }
    let width = tiles.iter().map(|t| t.col).max().unwrap_or(0) + 1;
    let height = tiles.iter().map(|t| t.row).max().unwrap_or(0) + 1;
    let mut grid = vec![None; (width * height) as usize];
    for tile in tiles {
        grid[(tile.row * width + tile.col) as usize] = Some(tile.path);
    }
    Ok(UdimFiles {
        width,
        height,
        tiles: grid,
    })
}

impl UdimGrid {
    /// The grid of the OpenEXR files matching `pattern` ([`expand_pattern`]), with the
    /// OpenEXR file `base`, if given, as the base texture. Files are not opened here.
    pub fn from_pattern(pattern: &Path, base: Option<&Path>) -> Result<UdimGrid> {
        UdimGrid::from_pattern_with(pattern, base, |path| Ok(crate::sources::file_source(path)))
    }

    /// The grid of the files matching `pattern` ([`expand_pattern`]) and the base file,
    /// each turned into a source by `open` (for formats other than OpenEXR). The first
    /// error of `open` is returned.
    pub fn from_pattern_with(
        pattern: &Path,
        base: Option<&Path>,
        mut open: impl FnMut(&Path) -> Result<Arc<dyn ImageSource>>,
    ) -> Result<UdimGrid> {
        let files = expand_pattern(pattern)?;
        let tiles = files
            .tiles
            .iter()
            .map(|t| t.as_deref().map(&mut open).transpose())
            .collect::<Result<Vec<_>>>()?;
        let base = base.map(&mut open).transpose()?;
        Ok(UdimGrid {
            width: files.width,
            height: files.height,
            tiles,
            base,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh empty directory under the system temp dir.
    fn temp_dir(tag: &str) -> PathBuf {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "demandtex-udim-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn touch(dir: &Path, names: &[&str]) {
        for n in names {
            std::fs::write(dir.join(n), b"").unwrap();
        }
    }

    #[test]
    fn udim_numbers_map_to_columns_and_rows_with_holes() {
        let dir = temp_dir("udim");
        touch(
            &dir,
            &[
                "color.1001.exr",
                "color.1003.exr",
                "color.1012.exr",
                // Junk: other names, other extensions, non-numbers — ignored quietly.
                "color.exr",
                "color.1002.tif",
                "color.abcd.exr",
                "colour.1004.exr",
                "notes.txt",
                // Malformed numbers — ignored with a warning.
                "color.1000.exr",
                "color.2000.exr",
                "color.0999.exr",
                "color.10011.exr",
            ],
        );
        std::fs::create_dir(dir.join("color.1005.exr")).unwrap(); // a directory, not a file
        let files = expand_pattern(&dir.join("color.<UDIM>.exr")).unwrap();
        assert_eq!((files.width, files.height), (3, 2));
        assert_eq!(files.tile(0, 0), Some(dir.join("color.1001.exr").as_path()));
        assert_eq!(files.tile(2, 0), Some(dir.join("color.1003.exr").as_path()));
        assert_eq!(files.tile(1, 1), Some(dir.join("color.1012.exr").as_path()));
        for (c, r) in [(1, 0), (0, 1), (2, 1), (3, 0)] {
            assert_eq!(files.tile(c, r), None, "({c}, {r})");
        }
        assert_eq!(files.tiles.iter().flatten().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_tenth_column_makes_the_grid_ten_wide() {
        let dir = temp_dir("wide");
        touch(&dir, &["t_1010.exr", "t_1021.exr", "t_1999.exr"]);
        let files = expand_pattern(&dir.join("t_<UDIM>.exr")).unwrap();
        assert_eq!((files.width, files.height), (10, 100));
        assert!(files.tile(9, 0).is_some());
        assert!(files.tile(0, 2).is_some());
        assert!(files.tile(8, 99).is_some());
        assert_eq!(files.tiles.iter().flatten().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn uvtiles_are_one_based() {
        let dir = temp_dir("uvtile");
        touch(
            &dir,
            &[
                "wood_u1_v1.exr",
                "wood_u2_v1.exr",
                "wood_u12_v3.exr",
                "wood_u0_v1.exr",   // malformed: 0
                "wood_u01_v2.exr",  // malformed: leading zero
                "wood_u300_v1.exr", // malformed: too far
                "wood_u1_v.exr",    // junk
                "wood_x1_v1.exr",   // junk
                "wood_u1_v1.tif",
            ],
        );
        let files = expand_pattern(&dir.join("wood_<UVTILE>.exr")).unwrap();
        assert_eq!((files.width, files.height), (12, 3));
        assert_eq!(files.tile(0, 0), Some(dir.join("wood_u1_v1.exr").as_path()));
        assert_eq!(files.tile(1, 0), Some(dir.join("wood_u2_v1.exr").as_path()));
        assert_eq!(
            files.tile(11, 2),
            Some(dir.join("wood_u12_v3.exr").as_path())
        );
        assert_eq!(files.tiles.iter().flatten().count(), 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_grid_opens_each_file_once_and_the_base() {
        use crate::sources::InMemoryImage;
        use crate::textures::TexelFormat;
        let dir = temp_dir("grid");
        touch(&dir, &["g.1002.exr", "g.1011.exr", "base.exr"]);
        let mut opened = Vec::new();
        let grid = UdimGrid::from_pattern_with(
            &dir.join("g.<UDIM>.exr"),
            Some(&dir.join("base.exr")),
            |p| {
                opened.push(p.file_name().unwrap().to_string_lossy().into_owned());
                let img =
                    InMemoryImage::from_rgba_f32(1, 1, TexelFormat::RGBA8, &[[0.0; 4]], false)?;
                Ok(Arc::new(img))
            },
        )
        .unwrap();
        assert_eq!(opened, ["g.1002.exr", "g.1011.exr", "base.exr"]);
        assert_eq!((grid.width, grid.height), (2, 2));
        let present: Vec<bool> = grid.tiles.iter().map(Option::is_some).collect();
        assert_eq!(present, [false, true, true, false]);
        assert!(grid.base.is_some());
        grid.validate().unwrap();
        let err = UdimGrid::from_pattern_with(&dir.join("g.<UDIM>.exr"), None, |p| {
            Err(Error::Io {
                path: p.display().to_string(),
                message: "unreadable".into(),
            })
        })
        .unwrap_err();
        assert!(err.to_string().contains("g.1002.exr"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn find_tiles_lists_row_major_with_udim_numbers_where_they_exist() {
        let dir = temp_dir("find");
        touch(
            &dir,
            &["h.1112.exr", "h.1101.exr", "h.1999.exr", "h.1010.exr"],
        );
        let tiles = find_tiles(&dir.join("h.<UDIM>.exr")).unwrap();
        let got: Vec<(u32, u32, Option<u32>)> =
            tiles.iter().map(|t| (t.col, t.row, t.udim())).collect();
        assert_eq!(
            got,
            [
                (9, 0, Some(1010)),
                (0, 10, Some(1101)),
                (1, 11, Some(1112)),
                (8, 99, Some(1999))
            ]
        );
        assert_eq!(tiles[1].path, dir.join("h.1101.exr"));

        touch(&dir, &["w_u10_v1.exr", "w_u11_v1.exr", "w_u2_v101.exr"]);
        let tiles = find_tiles(&dir.join("w_<UVTILE>.exr")).unwrap();
        let got: Vec<(u32, u32, Option<u32>)> =
            tiles.iter().map(|t| (t.col, t.row, t.udim())).collect();
        // Column 10 and row 100 have no UDIM number.
        assert_eq!(got, [(9, 0, Some(1010)), (10, 0, None), (1, 100, None)]);

        // No match is an empty list here; expand_pattern refuses it.
        assert_eq!(find_tiles(&dir.join("none.<UDIM>.exr")).unwrap(), []);
        let e = expand_pattern(&dir.join("none.<UDIM>.exr")).unwrap_err();
        assert!(e.to_string().contains("no file"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_patterns_and_empty_matches_are_clear_errors() {
        let dir = temp_dir("errors");
        touch(&dir, &["a.1001.exr"]);
        let err = |p: PathBuf| expand_pattern(&p).unwrap_err().to_string();
        let e = err(dir.join("a.1001.exr"));
        assert!(e.contains("no <UDIM> or <UVTILE> token"), "{e}");
        let e = err(dir.join("a.<UDIM>.<UDIM>.exr"));
        assert!(e.contains("exactly one"), "{e}");
        let e = err(dir.join("a.<UDIM>.<UVTILE>.exr"));
        assert!(e.contains("exactly one"), "{e}");
        let e = err(dir.join("<UDIM>").join("a.<UDIM>.exr"));
        assert!(e.contains("file name only"), "{e}");
        let e = err(dir.join("b.<UDIM>.exr"));
        assert!(e.contains("b.<UDIM>.exr") && e.contains("no file"), "{e}");
        let e = err(dir.join("missing").join("a.<UDIM>.exr"));
        assert!(e.contains("missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
