//! `demandtex bench`: throughput figures for resident lookups (against a flat-array
//! baseline), the request pipeline without I/O, and fills from procedural sources; with
//! `--backend cuda`, the GPU figures of [`cuda`] instead. Benchmarks report; they never
//! assert timings.

mod baseline;
mod blocks;
mod coalescing;
pub mod compare;
pub mod cuda;
mod duplicates;
mod exr_fill;
mod fill;
mod launch_prepare;
mod lookups;
pub mod make_trace;
mod many_textures;
mod ptex_open;
pub mod replay;
mod requests;
mod rounds;
pub mod trace;
mod whole_decodes;

use crate::error::CliError;
use crate::table::{format_rate, Table};
use clap::builder::TypedValueParser as _;
use demandtex::textures::TextureLayout;
use demandtex::{Loader, SampleOptions, TextureId};
use std::time::Duration;

/// Arguments of `demandtex bench`: the built-in sections, or a subcommand.
#[derive(clap::Args, Clone, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    /// Replay or write query traces, or compare replay results (default: the sections).
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Thread counts to measure, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = clap::value_parser!(u32).range(1..=1024).map(|n| n as usize))]
    pub threads_list: Vec<usize>,
    /// Seconds to spend on each measurement.
    #[arg(long, default_value_t = 1.0)]
    pub seconds: f64,
    /// Also print one JSON object per measurement, one per line.
    #[arg(long)]
    pub json: bool,
    /// Benchmarks to run, comma-separated (default: lookups,requests,fill,launch-prepare on the CPU;
    /// fetch,requests,upload,converge with --backend cuda).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<Which>,
    /// Where to measure: the CPU loader, or CUDA device 0 (without a driver or device: a
    /// clear error, exit code 2).
    #[arg(long, value_enum, default_value_t = Backend::Cpu)]
    pub backend: Backend,
    /// Repetitions of each GPU measurement (the figures are medians).
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub reps: u32,
}

/// Where `demandtex bench` measures.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The CPU loader and samplers.
    Cpu,
    /// CUDA device 0: the CUDA loader, the device API and the paging kernels.
    Cuda,
}

/// `demandtex bench` subcommands: query traces (`.dtxq`, see `shared/bench/QUERIES.md`).
#[derive(clap::Subcommand, Clone, Debug)]
pub enum BenchCommand {
    /// Replay a query trace on its texture files and print the figures.
    Replay(replay::ReplayArgs),
    /// Write procedural textures and a coherent or incoherent query trace over them.
    MakeTrace(make_trace::MakeTraceArgs),
    /// Compare two replays' results (4 × f32 per query): PSNR, largest difference.
    Compare(compare::CompareArgs),
}

/// One of the benchmarks.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Resident lookups per second against a flat-array baseline.
    Lookups,
    /// Pages per second through pull → route → push, without I/O (CPU or CUDA).
    Requests,
    /// Tiles and bytes per second filled from procedural sources.
    Fill,
    /// EXR tiles decoded per second: bare exr API vs. demandtex's fill path (not default).
    ExrFill,
    /// CUDA: demand-path lookups against a plain hardware tex2DGrad.
    Fetch,
    /// CUDA: tile uploads (GB/s) and sparse map / unmap operations per second.
    Upload,
    /// CUDA: launches to converge on the demo scene, and the 1 TiB set in a 2 GiB pool.
    Converge,
    /// Time to start a launch against pages changed and page space in use (CPU loader).
    LaunchPrepare,
    /// Memory per texture and page, 10,000 and 100,000 8K textures (CPU, not default).
    ManyTextures,
    /// Constant-tile coalescing on masks, and duplicate-texture sharing on copies of mask
    /// files: budget and bytes read, on against off (CPU, not default).
    Coalescing,
    /// Ptex files registered (header only) against parsed (face tables, constants,
    /// packing): 1,000 synthetic files (CPU, not default).
    PtexOpen,
    /// DDS textures (BC1, BC7) with their blocks kept in the pages against decoded to
    /// texels: resident lookups per second, and the budget's hold on a set (CPU, not
    /// default).
    Blocks,
    /// PNG files decoded whole inside the budget: decodes released after their fills
    /// against kept for the texture's life (CPU, not default).
    WholeDecodes,
}

impl Which {
    /// The sections `--backend cpu` runs when `--only` names none.
    pub const CPU_DEFAULT: [Which; 4] = [
        Which::Lookups,
        Which::Requests,
        Which::Fill,
        Which::LaunchPrepare,
    ];
    /// The sections `--backend cuda` runs when `--only` names none.
    pub const CUDA_DEFAULT: [Which; 4] = [
        Which::Fetch,
        Which::Requests,
        Which::Upload,
        Which::Converge,
    ];

    /// Whether the section runs on `backend`.
    pub fn runs_on(self, backend: Backend) -> bool {
        match self {
            Which::Requests => true,
            Which::Lookups
            | Which::Fill
            | Which::ExrFill
            | Which::LaunchPrepare
            | Which::ManyTextures
            | Which::Coalescing
            | Which::PtexOpen
            | Which::WholeDecodes
            | Which::Blocks => backend == Backend::Cpu,
            Which::Fetch | Which::Upload | Which::Converge => backend == Backend::Cuda,
        }
    }
}

/// The sections to run: `--only`, or the backend's defaults; a usage error for a section
/// the backend does not have.
pub fn sections(args: &BenchArgs) -> Result<Vec<Which>, CliError> {
    if args.only.is_empty() {
        return Ok(match args.backend {
            Backend::Cpu => Which::CPU_DEFAULT.to_vec(),
            Backend::Cuda => Which::CUDA_DEFAULT.to_vec(),
        });
    }
    if let Some(w) = args.only.iter().find(|w| !w.runs_on(args.backend)) {
        let name = clap::ValueEnum::to_possible_value(w)
            .map_or_else(|| format!("{w:?}"), |v| v.get_name().to_owned());
        let backend = match args.backend {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        };
        return Err(CliError::Usage(format!(
            "--only {name} does not run with --backend {backend}"
        )));
    }
    Ok(args.only.clone())
}

/// One measurement: a benchmark, its case, the threads used and named figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// Which benchmark.
    pub bench: &'static str,
    /// The case within it.
    pub case: String,
    /// Threads used (sampling threads, or fill threads).
    pub threads: usize,
    /// Named figures, in display order. Names end in their unit (`_per_second`, `_mb_per_second`…).
    pub figures: Vec<(&'static str, f64)>,
}

impl Record {
    /// The figure named `name`, if the record has it.
    pub fn figure(&self, name: &str) -> Option<f64> {
        self.figures
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| *v)
    }

    /// The record as one JSON object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        m.insert("bench".into(), self.bench.into());
        m.insert("case".into(), self.case.clone().into());
        m.insert("threads".into(), (self.threads as u64).into());
        for (k, v) in &self.figures {
            let n = serde_json::Number::from_f64(*v)
                .map_or(serde_json::Value::Null, serde_json::Value::Number);
            m.insert((*k).into(), n);
        }
        serde_json::Value::Object(m)
    }
}

fn format_figure(name: &str, v: f64) -> String {
    if name.ends_with("_bytes") && v.fract() == 0.0 && (0.0..1.8e19).contains(&v) {
        crate::table::format_bytes(v as u64)
    } else if name.contains("per_second") {
        format_rate(v)
    } else if name.contains("ratio") {
        format!("{v:.3}")
    } else if v.fract() == 0.0 && (0.0..1e15).contains(&v) {
        crate::table::format_count(v as u64)
    } else {
        format_float(v)
    }
}

/// Three significant digits; scientific notation below 0.01.
fn format_float(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !a.is_finite() {
        format!("{v}")
    } else if a < 0.01 {
        format!("{v:.2e}")
    } else if a < 10.0 {
        format!("{v:.2}")
    } else if a < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// One table per benchmark; the columns are the figures of its first record.
pub fn render_tables(records: &[Record]) -> String {
    let mut out = String::new();
    let mut benches: Vec<&str> = records.iter().map(|r| r.bench).collect();
    benches.dedup();
    for bench in benches {
        let rows: Vec<&Record> = records.iter().filter(|r| r.bench == bench).collect();
        let names: Vec<&str> = rows[0].figures.iter().map(|(k, _)| *k).collect();
        let headers: Vec<String> = ["case", "threads"]
            .into_iter()
            .map(String::from)
            .chain(names.iter().map(|n| n.replace('_', " ")))
            .collect();
        let mut t = Table::new(&headers.iter().map(String::as_str).collect::<Vec<_>>());
        for r in rows {
            let mut cells = vec![r.case.clone(), r.threads.to_string()];
            for n in &names {
                let v = r.figure(n);
                cells.push(v.map_or(String::new(), |v| format_figure(n, v)));
            }
            t.row(cells);
        }
        out += &format!("\n{bench}\n{}", t.render());
    }
    out
}

/// Run the selected benchmarks and print their figures.
pub fn run(args: &BenchArgs) -> Result<(), CliError> {
    match &args.command {
        Some(BenchCommand::Replay(a)) => return replay::run(a),
        Some(BenchCommand::MakeTrace(a)) => return make_trace::run(a),
        Some(BenchCommand::Compare(a)) => return compare::run(a),
        None => {}
    }
    if !(args.seconds > 0.0 && args.seconds <= 3600.0) {
        return Err(CliError::Usage(format!(
            "--seconds {} (0 < s <= 3600)",
            args.seconds
        )));
    }
    let time = Duration::from_secs_f64(args.seconds);
    let only = sections(args)?;
    let mut records = Vec::new();
    let emit = |batch: Vec<Record>, records: &mut Vec<Record>| {
        if args.json {
            for r in &batch {
                println!("{}", r.to_json());
            }
        }
        records.extend(batch);
    };
    if args.backend == Backend::Cuda {
        return run_cuda(args, &only);
    }
    emit(vec![paging_record()?], &mut records);
    if only.contains(&Which::Lookups) {
        eprintln!("bench: resident lookups…");
        emit(lookups::run(&args.threads_list, time)?, &mut records);
    }
    if only.contains(&Which::Requests) {
        eprintln!("bench: requests…");
        emit(requests::run(&args.threads_list, time)?, &mut records);
    }
    if only.contains(&Which::Fill) {
        eprintln!("bench: fills…");
        emit(fill::run(&args.threads_list, time)?, &mut records);
    }
    if only.contains(&Which::ExrFill) {
        eprintln!("bench: EXR fills…");
        emit(exr_fill::run(&args.threads_list, time)?, &mut records);
    }
    if only.contains(&Which::LaunchPrepare) {
        eprintln!("bench: launch_prepare against changes and page space…");
        emit(launch_prepare::run(time)?, &mut records);
    }
    if only.contains(&Which::ManyTextures) {
        eprintln!("bench: memory per texture…");
        emit(many_textures::run()?, &mut records);
    }
    if only.contains(&Which::Coalescing) {
        eprintln!("bench: constant-tile coalescing…");
        emit(coalescing::run()?, &mut records);
        eprintln!("bench: duplicate-texture sharing…");
        emit(duplicates::run()?, &mut records);
    }
    if only.contains(&Which::PtexOpen) {
        eprintln!("bench: Ptex registration against parsing…");
        emit(ptex_open::run()?, &mut records);
    }
    if only.contains(&Which::WholeDecodes) {
        eprintln!("bench: images decoded whole, inside the budget…");
        emit(whole_decodes::run()?, &mut records);
    }
    if only.contains(&Which::Blocks) {
        eprintln!("bench: BC blocks kept in pages against decoded…");
        emit(blocks::run(&args.threads_list, time)?, &mut records);
    }
    print!("{}", render_tables(&records));
    Ok(())
}

/// `--backend cuda`: the sections of [`cuda`], then their tables.
fn run_cuda(args: &BenchArgs, only: &[Which]) -> Result<(), CliError> {
    let mut records = Vec::new();
    cuda::run(args, only, &mut |batch| {
        if args.json {
            for r in &batch {
                println!("{}", r.to_json());
            }
        }
        records.extend(batch);
    })?;
    print!("{}", render_tables(&records));
    Ok(())
}

/// Page bookkeeping of the default page space (2^26 pages = 4 TiB of 64 KiB tiles): bits,
/// LRU ages, page-table entries and the CPU tile directory, per virtual page.
fn paging_record() -> Result<Record, CliError> {
    let options = demandtex::LoaderOptions::default();
    let loader = Loader::new(options.clone()).map_err(|e| CliError::Demandtex(e.to_string()))?;
    let bytes = loader.stats().bookkeeping_bytes as f64;
    Ok(Record {
        bench: "paging",
        case: "default page space".into(),
        threads: 0,
        figures: vec![
            ("virtual_pages", options.num_pages as f64),
            ("bookkeeping_bytes", bytes),
            (
                "bookkeeping_bytes_per_virtual_page",
                bytes / options.num_pages as f64,
            ),
        ],
    })
}

/// Launch until a lookup at the coarsest level of `texture` is resident: its sampler and
/// mip tail are loaded, so later lookups request tiles.
pub(crate) fn warm_up(loader: &Loader, texture: TextureId) -> Result<(), CliError> {
    for _ in 0..16 {
        let launch = loader.launch_prepare();
        let s = launch.tex2d_lod(texture, 0.5, 0.5, 64.0, &SampleOptions::default());
        loader.process_requests(launch).wait();
        if s.resident {
            return Ok(());
        }
    }
    Err(CliError::Demandtex(
        "the mip tail did not become resident in 16 launches".into(),
    ))
}

/// Tiles of level 0 of `layout`.
pub(crate) fn level0_tiles(layout: &TextureLayout) -> u64 {
    layout.levels[0].tiles_x as u64 * layout.levels[0].tiles_y as u64
}

/// The texture coordinates of the centre of the level-0 tile `n`, tiles visited in a
/// scattered order (an odd stride modulo the tile count) so that neighbours in `n` are
/// far apart in the image.
pub(crate) fn scattered_tile_centre(layout: &TextureLayout, n: u64) -> (f32, f32) {
    let l = &layout.levels[0];
    let total = level0_tiles(layout);
    let mut stride = 40_503 % total.max(1);
    while gcd(stride, total) != 1 {
        stride += 1;
    }
    let i = (n % total) * stride % total;
    let (tx, ty) = ((i % l.tiles_x as u64) as u32, (i / l.tiles_x as u64) as u32);
    let r = layout.tile_region(0, tx, ty);
    let s = (r.x as f64 + r.width as f64 * 0.5) / l.width as f64;
    let t = (r.y as f64 + r.height as f64 * 0.5) / l.height as f64;
    (s as f32, t as f32)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A small fast generator for benchmark coordinates (xorshift64*).
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value).
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use demandtex::textures::TexelFormat;

    #[test]
    fn scattered_tiles_visit_every_tile_once() {
        let layout = TextureLayout::new(1000, 600, 1, TexelFormat::RGBA8).unwrap();
        let total = level0_tiles(&layout);
        let mut seen = std::collections::HashSet::new();
        for n in 0..total {
            let (s, t) = scattered_tile_centre(&layout, n);
            assert!((0.0..1.0).contains(&s) && (0.0..1.0).contains(&t));
            seen.insert(((s * 1000.0) as u32 / 128, (t * 600.0) as u32 / 128));
        }
        assert_eq!(seen.len() as u64, total);
    }

    #[test]
    fn rng_stays_in_the_unit_interval() {
        let mut r = Rng::new(3);
        let v: Vec<f32> = (0..10_000).map(|_| r.next_f32()).collect();
        assert!(v.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = v.iter().sum::<f32>() / v.len() as f32;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    fn args(backend: Backend, only: Vec<Which>) -> BenchArgs {
        BenchArgs {
            command: None,
            threads_list: vec![1],
            seconds: 1.0,
            json: false,
            only,
            backend,
            reps: 1,
        }
    }

    #[test]
    fn sections_default_per_backend_and_refuse_the_other_backends() {
        assert_eq!(
            sections(&args(Backend::Cpu, vec![])).unwrap(),
            Which::CPU_DEFAULT.to_vec()
        );
        assert_eq!(
            sections(&args(Backend::Cuda, vec![])).unwrap(),
            Which::CUDA_DEFAULT.to_vec()
        );
        let both = vec![Which::Requests];
        assert_eq!(sections(&args(Backend::Cuda, both.clone())).unwrap(), both);
        let e = sections(&args(Backend::Cuda, vec![Which::Requests, Which::Lookups])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument: --only lookups does not run with --backend cuda"
        );
        let e = sections(&args(Backend::Cpu, vec![Which::Converge])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(Which::CPU_DEFAULT.iter().all(|w| w.runs_on(Backend::Cpu)));
        assert!(Which::CUDA_DEFAULT.iter().all(|w| w.runs_on(Backend::Cuda)));
    }

    #[test]
    fn byte_figures_read_as_sizes() {
        assert_eq!(
            format_figure("peak_resident_bytes", 3.0 * 1048576.0),
            "3.00 MiB"
        );
        assert_eq!(format_figure("bytes_per_page", 2.5), "2.50");
        assert_eq!(format_figure("time_ratio_demand_to_hardware", 1.1), "1.100");
    }

    #[test]
    fn records_become_json_and_tables() {
        let r = Record {
            bench: "fill",
            case: "noise RGBA8".into(),
            threads: 2,
            figures: vec![("tiles_per_second", 12_345.0), ("ratio", 0.5)],
        };
        let j = r.to_json();
        assert_eq!(j["bench"], "fill");
        assert_eq!(j["threads"], 2);
        assert_eq!(j["tiles_per_second"], 12_345.0);
        assert_eq!(format_float(187_541.66), "187542");
        assert_eq!(format_float(1.2345), "1.23");
        assert_eq!(format_float(0.000_12), "1.20e-4");
        let t = render_tables(&[r]);
        assert!(
            t.contains("tiles per second") && t.contains("12.3 k") && t.contains("0.500"),
            "{t}"
        );
    }
}
