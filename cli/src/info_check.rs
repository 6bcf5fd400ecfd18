//! `demandtex info --check FILE` and `--stats`: read every texel the engine could serve
//! from the file, through the engine's own reader for its format, and say whether the file
//! is whole (exit code 0) or report the first error (exit code 1); `--stats` adds min, max
//! and mean per channel of level 0.
//!
//! The walk is core's [`demandtex::sources::check`]: OpenEXR through
//! [`ExrSource`] (every tile of every level, generated levels included), Ptex through
//! [`PtexFile`] (every stored level of every face, tile by tile), DDS through [`DdsSource`]
//! (every block of every level, generated levels included); TIFF (`maketx`'s `.tx`),
//! PNG and JPEG through core's source for them ([`file_source`]: every tile of every
//! level, generated levels included). This module only chooses the reader and formats the
//! report.

use crate::convert::load::{self, detect_format, InputFormat};
use crate::error::CliError;
use crate::info::print_stdout;
use crate::table::format_count;
use demandtex::sources::check::{check_ptex, check_source, CheckError, CheckReport};
use demandtex::sources::ptex::{PtexErrorKind, PtexFile};
use demandtex::sources::{file_source, DdsSource, ExrSource, FileFormat};
use std::fmt::Write as _;
use std::path::Path;

/// The format of `path` by its magic number, as core detects it (`None` when unreadable
/// or unknown).
pub fn core_format(path: &Path) -> Option<FileFormat> {
    demandtex::sources::detect::detect_format(path)
        .ok()
        .flatten()
}

/// Whether `path` starts with the Ptex magic number.
pub fn is_ptex(path: &Path) -> bool {
    core_format(path) == Some(FileFormat::Ptex)
}

/// The format's name and what the check read, or the first error: "damaged:" where data
/// could not be read, "not served:" for a Ptex file of a kind the reader does not serve,
/// "cannot open:" where another format's header could not be described (not served, or
/// too damaged to tell).
pub fn check(path: &Path, stats: bool) -> Result<(&'static str, CheckReport), CliError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| CliError::Demandtex(format!("{what}: {e}"));
    if is_ptex(path) {
        let file = PtexFile::open(path).map_err(|e| match e.kind {
            PtexErrorKind::NotPtex | PtexErrorKind::Unsupported => fail("not served", &e),
            _ => fail("damaged", &e),
        })?;
        let report = check_ptex(&file, stats).map_err(|e| fail("damaged", &e))?;
        return Ok(("Ptex", report));
    }
    let checked = |r: Result<CheckReport, CheckError>| {
        r.map_err(|e| match e {
            CheckError::Open(e) => fail("cannot open", &e),
            CheckError::Read(e) => fail("damaged", &e),
        })
    };
    match detect_format(path)? {
        InputFormat::Exr => Ok((
            "OpenEXR",
            checked(check_source(&ExrSource::new(path), stats))?,
        )),
        InputFormat::Dds => Ok(("DDS", checked(check_source(&DdsSource::new(path), stats))?)),
        InputFormat::Image(format) => {
            // TIFF (`.tx`), PNG and JPEG through the engine's own source for them.
            let report = checked(check_source(&*file_source(path), stats))?;
            Ok((load::format_name(format), report))
        }
    }
}

/// Runs `info --check` (and `--stats`): prints the report, or fails with the first error.
pub fn run(path: &Path, stats: bool, json: bool) -> Result<(), CliError> {
    let (format, report) = check(path, stats)?;
    let text = if json {
        let value = serde_json::json!({
            "file": path, "format": format, "whole": true, "check": report,
        });
        format!("{value:#}\n")
    } else {
        render(path, format, &report)
    };
    print_stdout(&text)
}

/// The text report.
pub fn render(path: &Path, format: &str, r: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: whole ({format}: {} level{}, {} reads, {} texels at level 0)",
        path.display(),
        r.levels,
        if r.levels == 1 { "" } else { "s" },
        format_count(r.reads),
        format_count(r.level0_texels),
    );
    if let Some(stats) = &r.stats {
        let _ = writeln!(
            out,
            "level 0:  {:>7} {:>14} {:>14} {:>14} {:>10}",
            "channel", "min", "max", "mean", "non-finite"
        );
        for (c, s) in stats.iter().enumerate() {
            let _ = writeln!(
                out,
                "          {c:>7} {:>14.6} {:>14.6} {:>14.6} {:>10}",
                s.min, s.max, s.mean, s.non_finite
            );
        }
    }
    out
}
