//! Command-line arguments (clap derive, as a cargo subcommand) and their validation.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::ui::{ColorChoice, Verbosity};

/// `cargo sfl …` arrives as `cargo-sfl sfl …`; this wrapper enum accepts that shape.
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo", styles = clap::builder::styling::Styles::styled())]
pub enum Cargo {
    Sfl(SflArgs),
}

/// Statistical fault localisation: run every test in its own process under LLVM coverage and
/// rank the lines that failing tests ran by how suspicious they are.
#[derive(Args, Debug)]
#[command(version, args_conflicts_with_subcommands = true)]
#[command(
    after_help = "Exit codes: 0 report written, 2 usage error, 3 no failing tests, 4 no tests, \
5 unreadable saved spectra, 6 --fail-on threshold reached, 7 eval: no fault was run by a test, \
96 setup error, 101 build failed, 1 internal error."
)]
pub struct SflArgs {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true, value_name = "WHEN")]
    pub color: ColorChoice,
    /// Print only errors and warnings on stderr (no status lines or progress bars).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print every test as it finishes, instead of progress bars.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

impl SflArgs {
    pub fn verbosity(&self) -> Verbosity {
        match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Re-rank the spectra saved by the last run, without building or running tests.
    Report(ReportArgs),
    /// Rank a coverage matrix exported by another tool (GZoltar's sfl/txt format).
    Analyze(AnalyzeArgs),
    /// List every measure: name, formula, source, Xie et al.'s group and cloning class.
    Measures(MeasuresArgs),
    /// Score every measure on known faults (faults.toml): rank scores, EXAM, top-N, HT_Rank.
    Eval(Box<EvalArgs>),
    /// Combine the spectra of shards (`--partition K/N --save-spectra FILE`) and report on the whole.
    Merge(MergeArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Only run tests whose name contains this string.
    #[arg(value_name = "TESTNAME_FILTER")]
    pub filter: Option<String>,

    #[command(flatten)]
    pub select: Selection,

    #[command(flatten)]
    pub exec: Execution,

    #[command(flatten)]
    pub output: OutputArgs,
}

/// Which packages and targets to build, as for `cargo test`.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Package selection")]
pub struct Selection {
    /// Path to Cargo.toml.
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// Package(s) to test.
    #[arg(short, long = "package", value_name = "SPEC")]
    pub package: Vec<String>,
    /// Test all packages in the workspace.
    #[arg(long)]
    pub workspace: bool,
    /// Exclude packages from the test (with --workspace).
    #[arg(long, value_name = "SPEC")]
    pub exclude: Vec<String>,

    /// Test only this package's library.
    #[arg(long, help_heading = "Target selection")]
    pub lib: bool,
    /// Test all binaries.
    #[arg(long, help_heading = "Target selection")]
    pub bins: bool,
    /// Test only the named binary.
    #[arg(long, value_name = "NAME", help_heading = "Target selection")]
    pub bin: Vec<String>,
    /// Test all targets that have `test = true` set.
    #[arg(long, help_heading = "Target selection")]
    pub tests: bool,
    /// Test only the named integration test target.
    #[arg(long, value_name = "NAME", help_heading = "Target selection")]
    pub test: Vec<String>,

    /// Space or comma separated list of features to activate.
    #[arg(short = 'F', long, value_name = "FEATURES", help_heading = "Feature selection")]
    pub features: Vec<String>,
    /// Activate all available features.
    #[arg(long, help_heading = "Feature selection")]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long, help_heading = "Feature selection")]
    pub no_default_features: bool,

    /// Build in release mode, with optimisations.
    #[arg(long, short = 'r', help_heading = "Compilation options")]
    pub release: bool,
    /// Directory for the instrumented build [default: <target-dir>/sfl].
    #[arg(long, value_name = "DIR", help_heading = "Compilation options")]
    pub target_dir: Option<PathBuf>,
}

/// How tests are run.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Test execution")]
pub struct Execution {
    /// Number of tests to run at once [default: number of CPUs].
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Kill a test after this many seconds and count it as failing (timed-out).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub test_timeout: f64,
    /// Also run tests marked #[ignore].
    #[arg(long)]
    pub include_ignored: bool,
    /// Do not record control-flow edges: line coverage only (no C compiler needed, faster
    /// tests, but no `cp` measure). Built in a directory of its own.
    #[arg(long)]
    pub no_edges: bool,
    /// Keep each test's .profraw files under <target-dir>/profiles (for debugging the decoder).
    #[arg(long)]
    pub keep_profiles: bool,
    /// Run one shard of the tests: `count:K/N` (every N-th test of the sorted list, from the
    /// K-th) or `hash:K/N` (by a hash of the test's name, stable as tests are added). Merge the
    /// shards' spectra with `cargo sfl merge`.
    #[arg(long, value_name = "KIND:K/N", value_parser = Partition::parse)]
    pub partition: Option<Partition>,
    /// Also write the spectra to this file (one per shard, for `cargo sfl merge`).
    #[arg(long, value_name = "FILE")]
    pub save_spectra: Option<PathBuf>,
}

/// How tests are split into shards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartitionKind {
    Count,
    Hash,
}

/// Shard `shard` (1-based) of `total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub kind: PartitionKind,
    pub shard: u64,
    pub total: u64,
}

impl Partition {
    /// Parses `count:K/N`, `hash:K/N`, or `K/N` (count).
    pub fn parse(s: &str) -> Result<Self, String> {
        let (kind, rest) = match s.split_once(':') {
            Some(("count", r)) => (PartitionKind::Count, r),
            Some(("hash", r)) => (PartitionKind::Hash, r),
            Some((k, _)) => return Err(format!("unknown partition kind {k:?}: use count or hash")),
            None => (PartitionKind::Count, s),
        };
        let (k, n) = rest.split_once('/').ok_or("expected K/N, e.g. count:1/3")?;
        let (shard, total): (u64, u64) = (
            k.parse().map_err(|_| format!("shard {k:?} is not a number"))?,
            n.parse().map_err(|_| format!("shard count {n:?} is not a number"))?,
        );
        if total == 0 || shard == 0 || shard > total {
            return Err(format!("shard {shard} of {total}: need 1 <= K <= N"));
        }
        Ok(Partition { kind, shard, total })
    }

    /// Whether the test at `index` of the sorted list, with identity `id`, is in this shard.
    pub fn contains(&self, index: usize, id: &str) -> bool {
        let bucket = match self.kind {
            PartitionKind::Count => index as u64 % self.total,
            PartitionKind::Hash => {
                use md5::{Digest, Md5};
                let digest = Md5::digest(id.as_bytes());
                u64::from_le_bytes(digest[..8].try_into().expect("8 bytes")) % self.total
            }
        };
        bucket == self.shard - 1
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        };
        write!(f, "{kind}:{}/{}", self.shard, self.total)
    }
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Summary, failing tests, top suspects with their source lines.
    Human,
    /// The `cargo-sfl/v1` JSON report (every entry).
    Json,
    /// SARIF 2.1.0 for editors and code scanning (the top N entries of each measure).
    Sarif,
    /// A self-contained HTML page written into the --output directory.
    Html,
}

impl From<Format> for crate::report::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Human => Self::Human,
            Format::Json => Self::Json,
            Format::Sarif => Self::Sarif,
            Format::Html => Self::Html,
        }
    }
}

/// `--order`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Score,
    Ht,
}

/// `--granularity`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Line,
    Function,
}

/// Formats of the measure catalogue.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Human,
    Json,
}

/// What the report shows and where it goes.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Report")]
pub struct OutputArgs {
    /// Number of entries to show per measure in the human and SARIF reports.
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub top: usize,
    /// Suspiciousness measure(s) to rank by (repeatable; `cargo sfl measures` lists them)
    /// [default: ochiai].
    #[arg(long, short = 'm', value_name = "NAME", value_parser = measure_name)]
    pub measure: Vec<String>,
    /// Add 0.5 to ef, ep, nf and np before each formula (the convention of Doric's
    /// 127-measure experiment).
    #[arg(long)]
    pub smoothing: bool,
    /// Count every failing test C times (cloning, seed 001): balances a few failing tests
    /// against many passing ones.
    #[arg(long, value_name = "C", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub clone_failing: u32,
    /// Make each measure single-fault optimal (Opt_w): lines run by every failing test come
    /// first, fewest passing tests first.
    #[arg(long, visible_alias = "optimize")]
    pub optimise: bool,
    /// How many entries cl-u refutes before it keeps its last order.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub update_bound: usize,
    /// List every line on its own instead of merging lines with identical coverage.
    #[arg(long)]
    pub no_group: bool,
    /// Mark entries on lines changed since this git revision (committed or not), and count
    /// how many of the top N were changed.
    #[arg(long, value_name = "REV")]
    pub diff_base: Option<String>,
    /// With --diff-base: rank only the entries on changed lines.
    #[arg(long, requires = "diff_base")]
    pub only_changed: bool,
    /// Leave test code out of the rankings: #[test] functions, #[cfg(test)] items and files
    /// under tests/ and benches/ (their coverage is still collected and saved).
    #[arg(long)]
    pub exclude_test_code: bool,
    /// Order of the suspects: by score, or (ht) by when the HT_Rank debugging model (Def. 29:
    /// ranked list plus jumps within a function) expects a person to reach them.
    #[arg(long, value_enum, default_value_t = Order::Score)]
    pub order: Order,
    /// Rank source lines, or functions (a function is run when any of its lines is).
    #[arg(long, value_enum, default_value_t = Granularity::Line)]
    pub granularity: Granularity,
    /// Exit with code 6 (after writing the report) when a reported entry's score, or
    /// probability for Doric's measures, reaches this value (with --only-changed: a changed
    /// entry).
    #[arg(long, value_name = "SUSPICION")]
    pub fail_on: Option<f64>,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Write the report to this file instead of standard output (a directory for html).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// The measures asked for, in order, without repeats; Ochiai when none was given.
    pub fn measures(&self) -> Vec<&'static crate::measures::Measure> {
        let mut out: Vec<&'static crate::measures::Measure> = Vec::new();
        let names: Vec<&str> = if self.measure.is_empty() && self.format == Format::Html {
            // The page switches between measures: offer the usual ones.
            vec![
                crate::measures::DEFAULT,
                "dstar2",
                "tarantula",
                "naish2",
                "cl",
                "fault-likelihood",
            ]
        } else if self.measure.is_empty() {
            vec![crate::measures::DEFAULT]
        } else {
            self.measure.iter().map(String::as_str).collect()
        };
        for n in names {
            let m = crate::measures::find(n).expect("validated by clap");
            if !out.iter().any(|o| o.name == m.name) {
                out.push(m);
            }
        }
        out
    }
}

impl OutputArgs {
    /// How scores are computed.
    pub fn options(&self) -> crate::analysis::Options {
        crate::analysis::Options {
            smoothing: self.smoothing,
            clone_failing: self.clone_failing,
            optimise: self.optimise,
            update_bound: self.update_bound,
            group: !self.no_group,
        }
    }
}

fn measure_name(s: &str) -> Result<String, String> {
    match crate::measures::find(s) {
        Some(m) => Ok(m.name.to_string()),
        None => Err(format!(
            "unknown measure; known measures: {} (details: cargo sfl measures)",
            crate::measures::all().map(|m| m.name).collect::<Vec<_>>().join(", ")
        )),
    }
}

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Saved spectra to read [default: <target-dir>/sfl/spectra.json of the workspace].
    #[arg(long, value_name = "FILE")]
    pub spectra: Option<PathBuf>,
    /// Path to Cargo.toml (to find the default spectra file and the source lines).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// A GZoltar `sfl/txt` directory: `matrix.txt` (one row per test: 0/1 per unit, then
    /// `+` passed or `-` failed) and `spectra.csv` (a `name` header, then one unit per line);
    /// the older header-less `matrix` and `spectra` files are read too, and `tests.csv` names
    /// the tests when present.
    #[arg(long, value_name = "DIR")]
    pub gzoltar: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The known faults: `[[fault]]` tables with `file` (relative to the workspace root) and
    /// `lines`.
    #[arg(long, value_name = "FILE")]
    pub faults: PathBuf,
    /// Evaluate saved spectra instead of building and running the tests.
    #[arg(long, value_name = "FILE")]
    pub spectra: Option<PathBuf>,
    /// Order the table by this metric (smaller is better).
    #[arg(long, value_enum, default_value_t = crate::eval::SortBy::StandardRank)]
    pub sort_by: crate::eval::SortBy,
    /// HT_Rank: probability of jumping to a line of the same function (Def. 29).
    #[arg(long, value_name = "P", default_value_t = 0.5)]
    pub p_jump: f64,
    /// HT_Rank: largest chain (states) solved exactly; larger ones are estimated by random walks.
    #[arg(long, value_name = "STATES", default_value_t = 3000)]
    pub exact_limit: usize,
    /// HT_Rank: random walks (of at most 200,000 steps) for the estimate; 0 reports HT_Rank
    /// only where the exact method applies.
    #[arg(long, value_name = "N", default_value_t = 200)]
    pub walks: usize,
    /// Skip HT_Rank.
    #[arg(long)]
    pub no_ht: bool,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Spectra files written by the shards (`--save-spectra`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the merged spectra to this file.
    #[arg(long, value_name = "FILE")]
    pub save_spectra: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct MeasuresArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cargo::command().debug_assert();
    }

    #[test]
    fn cargo_style_invocation_parses_selection_and_filter() {
        let Cargo::Sfl(a) = Cargo::try_parse_from([
            "cargo",
            "sfl",
            "-p",
            "foo",
            "--test",
            "it",
            "-j",
            "3",
            "--measure",
            "dstar",
            "--clone-failing",
            "7",
            "t1",
        ])
        .unwrap();
        assert_eq!(a.run.select.package, vec!["foo"]);
        assert_eq!(a.run.select.test, vec!["it"]);
        assert_eq!(a.run.exec.jobs, Some(3));
        assert_eq!(a.run.filter.as_deref(), Some("t1"));
        assert_eq!(
            a.run.output.measures().iter().map(|m| m.name).collect::<Vec<_>>(),
            vec!["dstar2"]
        );
        assert_eq!(a.run.output.options().clone_failing, 7);
    }

    #[test]
    fn partitions_parse_and_split_every_test_into_exactly_one_shard() {
        assert_eq!(Partition::parse("2/3").unwrap().kind, PartitionKind::Count);
        assert_eq!(Partition::parse("hash:1/2").unwrap().to_string(), "hash:1/2");
        for bad in ["0/3", "4/3", "x:1/2", "1-2", "1/0"] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
        for kind in ["count", "hash"] {
            let shards: Vec<Partition> = (1..=3)
                .map(|k| Partition::parse(&format!("{kind}:{k}/3")).unwrap())
                .collect();
            for i in 0..50 {
                let id = format!("bin test_{i}");
                assert_eq!(shards.iter().filter(|p| p.contains(i, &id)).count(), 1);
            }
        }
    }

    #[test]
    fn unknown_measures_are_rejected_with_the_list() {
        let err = Cargo::try_parse_from(["cargo", "sfl", "--measure", "nope"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ochiai"), "{err}");
    }
}
