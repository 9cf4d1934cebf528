//! Command-line arguments (clap derive, as a cargo subcommand), their validation, and their
//! conversion into the plain [`crate::config`] types the library reads.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{self, HtParams, Partition, ReportConfig, RunConfig, Task};
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
5 unreadable saved spectra, 6 --fail-on threshold reached, 7 nothing to rank (a failing test ran no rankable line; \
eval: no fault was run by a test; explain: the line is not ranked), \
96 setup error, 101 build failed, 1 internal error."
)]
pub struct SflArgs {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true, value_name = "WHEN")]
    pub color: Color,
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

    pub fn color(&self) -> ColorChoice {
        self.color.into()
    }

    /// The subcommand asked for, with its configuration.
    pub fn into_task(self) -> Task {
        match self.command {
            None => Task::Run(Box::new(self.run.into_config())),
            Some(Command::Report(r)) => Task::Report {
                spectra: r.spectra,
                manifest_path: r.manifest_path,
                report: r.output.into_config(),
            },
            Some(Command::Analyze(a)) => Task::Analyze {
                gzoltar: a.gzoltar,
                report: a.output.into_config(),
            },
            Some(Command::Measures(m)) => Task::Measures(m.format.into()),
            Some(Command::Merge(m)) => Task::Merge {
                files: m.files,
                save_spectra: m.save_spectra,
                allow_partial: m.allow_partial,
                report: m.output.into_config(),
            },
            Some(Command::Eval(e)) => Task::Eval(Box::new(e.into_config())),
            Some(Command::Explain(e)) => Task::Explain {
                location: e.location,
                spectra: e.saved.spectra,
                manifest_path: e.saved.manifest_path,
                measures_asked: !e.saved.output.measure.is_empty(),
                report: e.saved.output.into_config(),
            },
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
    /// Why a line ranks where it does: its entry and the lines tied with it, its scores, the
    /// tests that ran it and did not, backtraces through it, and what would tell its entry apart.
    Explain(ExplainArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Only run tests whose name contains this string.
    #[arg(value_name = "TESTNAME_FILTER")]
    pub filter: Option<String>,

    #[command(flatten)]
    pub nextest: NextestArgs,

    #[command(flatten)]
    pub select: SelectionArgs,

    #[command(flatten)]
    pub exec: ExecutionArgs,

    #[command(flatten)]
    pub output: OutputArgs,
}

impl RunArgs {
    pub fn into_config(self) -> RunConfig {
        let mut selection: config::Selection = self.select.into();
        // `cargo test NAME` runs no doctests (only `cargo test --doc NAME` filters them: cargo
        // issue 6981), and cargo sfl runs what cargo test runs.
        if self.filter.is_some() && !selection.doc {
            selection.no_doctests = true;
        }
        RunConfig {
            selection,
            execution: self.exec.into(),
            filter: self.filter,
            nextest: crate::nextest::Options {
                filtersets: self.nextest.filterset,
                config: self.nextest.nextest_config,
                profile: self.nextest.nextest_profile,
            },
            report: self.output.into_config(),
        }
    }
}

/// Which packages and targets to build, as for `cargo test`.
#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "Package selection")]
pub struct SelectionArgs {
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
    /// Test all examples (built with the test harness, so their #[test] functions run).
    #[arg(long, help_heading = "Target selection")]
    pub examples: bool,
    /// Test only the named example.
    #[arg(long, value_name = "NAME", help_heading = "Target selection")]
    pub example: Vec<String>,
    /// Test all targets that have `bench = true` set (benches/, and by default the library and
    /// binaries), built as tests, as `cargo test --benches` does.
    #[arg(long, help_heading = "Target selection")]
    pub benches: bool,
    /// Test only the named benchmark target.
    #[arg(long, value_name = "NAME", help_heading = "Target selection")]
    pub bench: Vec<String>,
    /// Test all targets: --lib --bins --tests --benches --examples (no doctests).
    #[arg(long, help_heading = "Target selection")]
    pub all_targets: bool,
    /// Test only the libraries' documentation examples (doctests).
    #[arg(long, help_heading = "Target selection", conflicts_with_all = ["lib", "bins", "bin", "tests", "test", "examples", "example", "benches", "bench", "all_targets", "no_doctests"])]
    pub doc: bool,
    /// Do not run doctests (they run by default when no target is selected, as with `cargo test`).
    #[arg(long, help_heading = "Target selection")]
    pub no_doctests: bool,
    /// Build each doctest as an executable of its own, as `cargo test --doc` does before edition
    /// 2024. By default a library's doctests are merged into one executable wherever rustdoc can
    /// merge them (each still runs in its own process), which builds and decodes them several
    /// times faster; use this when a doctest depends on being a crate of its own.
    #[arg(long, help_heading = "Target selection")]
    pub standalone_doctests: bool,

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

/// nextest's test selection and configuration.
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "nextest")]
pub struct NextestArgs {
    /// Run the tests this nextest filterset selects (repeatable: tests any of them select), within
    /// the name filter and the profile's default-filter, as `cargo nextest run -E` does. Doctests
    /// are not nextest tests: with -E they are not run.
    #[arg(short = 'E', long = "filterset", value_name = "EXPR")]
    pub filterset: Vec<String>,
    /// The nextest configuration to honour [default: .config/nextest.toml in the workspace, if any].
    #[arg(long, value_name = "FILE")]
    pub nextest_config: Option<PathBuf>,
    /// The nextest profile whose settings apply (test groups, overrides, test-threads, retries,
    /// slow- and leak-timeouts, default-filter); cargo sfl's own flags win. [default: default]
    #[arg(long, value_name = "NAME")]
    pub nextest_profile: Option<String>,
}

/// How tests are run.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Test execution")]
pub struct ExecutionArgs {
    /// Number of tests to run at once [default: number of CPUs].
    #[arg(short, long, value_name = "N", value_parser = at_least_one)]
    pub jobs: Option<usize>,
    /// Kill a test after this many seconds (timed out: left out of the ranking unless
    /// --count-timeouts). [default: 60 s, the time a test may take under `cargo test`, times the
    /// instrumentation's slowdown: 240 with edge profiles, 180 with --no-edges]
    #[arg(long, value_name = "SECS", value_parser = test_timeout)]
    pub test_timeout: Option<Duration>,
    /// Also run tests marked #[ignore].
    #[arg(long)]
    pub include_ignored: bool,
    /// Re-run a test that did not pass up to N more times, as nextest does: it is flaky if a
    /// retry passes (still ranked as failing, with the failing run's coverage), failed if none does.
    /// [default: the nextest profile's `retries`, else 0]
    #[arg(long, value_name = "N", env = "CARGO_SFL_RETRIES")]
    pub retries: Option<u32>,
    /// Run every test. By default a run re-runs only the tests an edit since the last run can
    /// affect (those that ran a changed function, failed, or are new) and reuses the other
    /// tests' coverage, and resumes an interrupted run of the same build.
    #[arg(long)]
    pub rerun: bool,
    /// Start from spectra saved by another run (e.g. on the base branch, with --save-spectra):
    /// only the tests that the changes since can affect are run, the rest are reused. Every test
    /// runs when the toolchain, Cargo.lock, flags or environment differ.
    #[arg(long, value_name = "FILE", conflicts_with = "rerun")]
    pub reuse_spectra: Option<PathBuf>,
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
    /// Write the test run as JUnit XML to this file (outcomes, durations, failure messages;
    /// flaky and timed-out tests marked as nextest marks them). Without it, the nextest
    /// profile's `junit.path` is honoured.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Mutation analysis of the top suspects (Metallaxis-FL): mutate the first lines of each
    /// ranking (operators, conditions, constants, statements) in a copy of the workspace, build
    /// the mutants into a few plain builds, re-run the failing tests and the passing tests that
    /// ran each line, and re-order those lines by how their mutants change the failures. Costs
    /// a few builds and a run per mutant and test.
    #[arg(long)]
    pub mutate: bool,
    /// With --mutate: how many lines of each ranking are mutated.
    #[arg(long, value_name = "N", default_value_t = crate::mutate::DEFAULT_LINES, requires = "mutate")]
    pub mutate_lines: usize,
}

impl From<SelectionArgs> for config::Selection {
    fn from(s: SelectionArgs) -> Self {
        config::Selection {
            // Resolved, as the compiler records the sources' paths (see `Workspace::load`), so
            // cargo's package ids and the workspace's are the same paths.
            manifest_path: s.manifest_path.map(|p| p.canonicalize().unwrap_or(p)),
            package: s.package,
            workspace: s.workspace,
            exclude: s.exclude,
            lib: s.lib,
            bins: s.bins,
            bin: s.bin,
            tests: s.tests,
            test: s.test,
            examples: s.examples,
            example: s.example,
            benches: s.benches,
            bench: s.bench,
            all_targets: s.all_targets,
            features: s.features,
            all_features: s.all_features,
            no_default_features: s.no_default_features,
            release: s.release,
            target_dir: s.target_dir,
            doc: s.doc,
            no_doctests: s.no_doctests,
            standalone_doctests: s.standalone_doctests,
        }
    }
}

impl From<ExecutionArgs> for config::Execution {
    fn from(e: ExecutionArgs) -> Self {
        config::Execution {
            jobs: e.jobs,
            test_timeout: e.test_timeout,
            include_ignored: e.include_ignored,
            retries: e.retries,
            rerun: e.rerun,
            reuse_spectra: e.reuse_spectra,
            no_edges: e.no_edges,
            keep_profiles: e.keep_profiles,
            partition: e.partition,
            save_spectra: e.save_spectra,
            junit: e.junit,
            mutate: e.mutate.then_some(e.mutate_lines),
        }
    }
}

/// Defines clap value enums, each converting into the plain enum with the same variants.
macro_rules! value_enums {
    ($($(#[$doc:meta])* $clap:ident => $plain:ty { $($(#[$vdoc:meta])* $v:ident),+ $(,)? })+) => {$(
        $(#[$doc])*
        #[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $clap {
            $($(#[$vdoc])* $v),+
        }

        impl From<$clap> for $plain {
            fn from(v: $clap) -> Self {
                match v {
                    $($clap::$v => <$plain>::$v),+
                }
            }
        }
    )+};
}

value_enums! {
    /// `--color`.
    Color => ColorChoice {
        /// Colour when the stream is a terminal (and NO_COLOR is unset).
        Auto,
        Always,
        Never,
    }
    /// `cargo sfl eval --sort-by`.
    SortBy => config::SortBy { StandardRank, SteimannRank, Exam, Accuracy, HtRank, Name }
    Format => config::Format {
        /// Summary, failing tests, top suspects with their source lines.
        Human,
        /// The `cargo-sfl/v1` JSON report (every entry).
        Json,
        /// SARIF 2.1.0 for editors and code scanning (the top N entries of each measure).
        Sarif,
        /// A self-contained HTML page written into the --output directory.
        Html,
        /// One `file:line:column: severity: message` line per top entry, for editors' quickfix
        /// lists and problem matchers.
        Short,
    }
    /// `--order`.
    Order => config::Order { Score, Ht }
    /// `--granularity`.
    Granularity => config::Granularity { Line, Function }
    /// Formats of the measure catalogue.
    ListFormat => config::ListFormat { Human, Json }
    /// How lines of one entry (identical coverage) are ordered for line-level metrics.
    TieBreak => crate::evidence::TieBreak {
        /// In code order: every line of an entry ties.
        Code,
        /// By evidence: lines on failing tests' panic backtraces first, then lines just above a
        /// failed index or arithmetic check, then lines that compute or decide before
        /// signatures, braces and attributes.
        Evidence,
    }
}

/// What the report shows and where it goes.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Report")]
pub struct OutputArgs {
    /// Number of entries to show per measure in the human and SARIF reports.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = at_least_one)]
    pub top: usize,
    /// Suspiciousness measure(s) to rank by (repeatable; `cargo sfl measures` lists them)
    /// [default: stack-combined: the lines where failing tests' own operations panicked, then
    /// coverage, backtraces and each line's text weighed as fitted on the project's benchmarks;
    /// `cargo sfl explain FILE:LINE` shows the parts].
    #[arg(long, short = 'm', value_name = "NAME", value_parser = measure_name)]
    pub measure: Vec<String>,
    /// Add 0.5 to ef, ep, nf and np before each formula (the convention of Doric's
    /// 127-measure experiment).
    #[arg(long)]
    pub smoothing: bool,
    /// Count every failing test C times (Zhang et al.'s cloning of failed tests): balances a few failing tests
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
    /// When the failing tests fall into clusters that share no line that passing tests miss and
    /// no backtrace line (two bugs, or an unrelated failure), rank each cluster against the
    /// passing tests and interleave the rankings (Jones, Bowring & Harrold's parallel debugging).
    #[arg(long)]
    pub clusters: bool,
    /// Mark entries on lines changed since this git revision (committed or not), and count
    /// how many of the top N were changed.
    #[arg(long, value_name = "REV")]
    pub diff_base: Option<String>,
    /// With --diff-base: rank only the entries on changed lines.
    #[arg(long, requires = "diff_base")]
    pub only_changed: bool,
    /// Rank test code too. By default it is left out of the rankings (its coverage is still
    /// collected and saved): #[test] functions, #[cfg(test)] items, and files under tests/,
    /// benches/ and examples/. A failing test's own body is run only by failing tests, so it
    /// scores like a fault.
    #[arg(long)]
    pub include_test_code: bool,
    /// The default since test code is left out; kept so older command lines still work.
    #[arg(long, hide = true, conflicts_with = "include_test_code")]
    pub exclude_test_code: bool,
    /// Order of the suspects: by score, or (ht) by when the HT_Rank debugging model (Def. 29:
    /// ranked list plus jumps within a function) expects a person to reach them.
    #[arg(long, value_enum, default_value_t = Order::Score)]
    pub order: Order,
    /// Rank source lines, or functions (each ranked where its best line ranks, with that line's
    /// score; a function is run when any of its lines is).
    #[arg(long, value_enum, default_value_t = Granularity::Line)]
    pub granularity: Granularity,
    /// How the lines of one entry (identical coverage) are ordered: evidence (lines on failing
    /// tests' panic backtraces first, then lines just above a failed index or arithmetic check
    /// in its function, then lines that compute or decide before signatures, braces and
    /// attributes) or code (they tie, shown in code order). Entries keep their order.
    #[arg(long, value_enum, default_value_t = TieBreak::Evidence)]
    pub tie_break: TieBreak,
    /// Exit with code 6 (after writing the report) when a reported entry's score, or
    /// probability for Doric's measures, reaches this value (with --only-changed: a changed
    /// entry).
    #[arg(long, value_name = "SUSPICION")]
    pub fail_on: Option<f64>,
    /// Rank timed-out tests as failed tests. By default they are left out of the ranking,
    /// neither failing nor passing: an instrumented test may time out for being slow, and a
    /// killed test's coverage stops anywhere.
    #[arg(long)]
    pub count_timeouts: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Write the report to this file instead of standard output (a directory for html).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    pub fn into_config(self) -> ReportConfig {
        let format = self.format.into();
        ReportConfig {
            measures: ReportConfig::resolve_measures(&self.measure, format).expect("validated by clap"),
            options: crate::analysis::Options {
                smoothing: self.smoothing,
                clone_failing: self.clone_failing,
                optimise: self.optimise,
                update_bound: self.update_bound,
                group: !self.no_group,
                clusters: self.clusters,
            },
            top: self.top,
            format,
            output: self.output,
            diff_base: self.diff_base,
            only_changed: self.only_changed,
            fail_on: self.fail_on,
            granularity: self.granularity.into(),
            order: self.order.into(),
            tie_break: self.tie_break.into(),
            include_test_code: self.include_test_code,
            count_timeouts: self.count_timeouts,
            ht: HtParams::default(),
        }
    }
}

/// The longest `--test-timeout`: a year (longer ones overflow the clock's deadlines).
const MAX_TEST_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// A number on the command line that no run could use (clap prints it after the value).
#[derive(Debug, thiserror::Error)]
enum BadNumber {
    #[error("not a whole number")]
    NotWhole,
    #[error("must be at least 1")]
    Zero,
    #[error("must be a number of seconds from 0.001 to {MAX_TEST_TIMEOUT_SECS} (a year)")]
    Timeout,
}

/// `-j`, `--top`: a count of which 0 would mean nothing runs or nothing is shown.
fn at_least_one(s: &str) -> Result<usize, BadNumber> {
    match s.parse::<usize>() {
        Ok(0) => Err(BadNumber::Zero),
        Ok(n) => Ok(n),
        Err(_) => Err(BadNumber::NotWhole),
    }
}

/// `--test-timeout`: finite, positive, and small enough for a deadline (`inf`, `1e30` and
/// `nan` parse as numbers but would panic `Duration` or kill every test at once).
fn test_timeout(s: &str) -> Result<Duration, BadNumber> {
    let secs: f64 = s.parse().map_err(|_| BadNumber::Timeout)?;
    if (0.001..=MAX_TEST_TIMEOUT_SECS).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(BadNumber::Timeout)
    }
}

/// A `--measure` no measure answers to; the message lists them all.
#[derive(Debug, thiserror::Error)]
#[error("unknown measure; known measures: {known} (details: cargo sfl measures)")]
struct UnknownMeasureName {
    known: String,
}

fn measure_name(s: &str) -> Result<String, UnknownMeasureName> {
    match crate::measures::find(s) {
        Some(m) => Ok(m.name.to_string()),
        None => Err(UnknownMeasureName {
            known: crate::measures::all().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }),
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
pub struct ExplainArgs {
    /// The line to explain, as `FILE:LINE` with FILE relative to the workspace root (as the
    /// reports print it), e.g. `src/lib.rs:16`.
    #[arg(value_name = "FILE:LINE", value_parser = parse_location)]
    pub location: (String, u32),
    /// The saved spectra and how to report, as for `report`.
    #[command(flatten)]
    pub saved: ReportArgs,
}

fn parse_location(s: &str) -> Result<(String, u32), String> {
    crate::explain::parse_location(s).map_err(|e| e.to_string())
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
    #[arg(long, value_enum, default_value_t = SortBy::StandardRank)]
    pub sort_by: SortBy,
    /// HT_Rank: probability of jumping to a line of the same function (Def. 29).
    #[arg(long, value_name = "P", default_value_t = HtParams::default().p_jump)]
    pub p_jump: f64,
    /// HT_Rank: largest chain (states) solved exactly (state reduction, exact however deep the
    /// ranking); larger ones are estimated by random walks.
    #[arg(long, value_name = "STATES", default_value_t = HtParams::default().exact_limit)]
    pub exact_limit: usize,
    /// HT_Rank: random walks (of at most 200,000 steps) for the estimate; 0 reports HT_Rank
    /// only where the exact method applies.
    #[arg(long, value_name = "N", default_value_t = HtParams::default().walks)]
    pub walks: usize,
    /// Skip HT_Rank.
    #[arg(long)]
    pub no_ht: bool,
    /// Rank the combined measure by these weights (as `cargo xtask fit` writes them) instead of
    /// the built-in ones: how a crate is scored with weights fitted without it.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

impl EvalArgs {
    pub fn into_config(self) -> config::EvalConfig {
        let asked = !self.run.output.measure.is_empty();
        let mut run = self.run.into_config();
        run.report.ht = HtParams {
            p_jump: self.p_jump,
            exact_limit: self.exact_limit,
            walks: self.walks,
        };
        config::EvalConfig {
            faults: self.faults,
            spectra: self.spectra,
            sort_by: self.sort_by.into(),
            ht: !self.no_ht,
            weights: self.weights,
            measures: asked.then(|| run.report.measures.clone()),
            run,
        }
    }
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Spectra files written by the shards (`--save-spectra`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the merged spectra to this file.
    #[arg(long, value_name = "FILE")]
    pub save_spectra: Option<PathBuf>,
    /// Merge even when the files are not every shard of one `--partition` (a warning says what
    /// is missing). Without it such a merge is refused: a ranking from half the tests looks
    /// like a whole one.
    #[arg(long)]
    pub allow_partial: bool,
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
        let Task::Run(c) = a.into_task() else {
            panic!("no subcommand: a run")
        };
        assert_eq!(c.selection.package, vec!["foo"]);
        assert_eq!(c.selection.test, vec!["it"]);
        assert_eq!(c.execution.jobs, Some(3));
        assert_eq!(c.filter.as_deref(), Some("t1"));
        assert_eq!(
            c.report.measures.iter().map(|m| m.name).collect::<Vec<_>>(),
            vec!["dstar2"]
        );
        assert_eq!(c.report.options.clone_failing, 7);
    }

    #[test]
    fn eval_keeps_its_ht_flags_and_whether_measures_were_asked_for() {
        let Cargo::Sfl(a) =
            Cargo::try_parse_from(["cargo", "sfl", "eval", "--faults", "f.toml", "--walks", "9"]).unwrap();
        let Task::Eval(e) = a.into_task() else { panic!("eval") };
        assert_eq!(
            e.run.report.ht,
            HtParams {
                walks: 9,
                ..HtParams::default()
            }
        );
        assert!(e.measures.is_none() && e.ht);
        assert_eq!(e.sort_by, config::SortBy::StandardRank);
    }

    #[test]
    fn unusable_numbers_are_usage_errors_that_say_why() {
        let err = |args: &[&str]| {
            let e = Cargo::try_parse_from(["cargo", "sfl"].iter().chain(args)).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::exit::USAGE, "{args:?}");
            e.to_string()
        };
        for secs in ["inf", "1e30", "nan", "0", "-1", "0.0001", "soon"] {
            let e = err(&[&format!("--test-timeout={secs}")]);
            assert!(e.contains("from 0.001 to 31536000"), "{secs}: {e}");
        }
        assert!(err(&["-j", "0"]).contains("must be at least 1"));
        assert!(err(&["--top", "0"]).contains("must be at least 1"));
        assert!(err(&["report", "--top", "0"]).contains("must be at least 1"));
        assert!(err(&["-j", "two"]).contains("not a whole number"));
        let Cargo::Sfl(a) = Cargo::try_parse_from(["cargo", "sfl", "--test-timeout", "0.5"]).unwrap();
        let Task::Run(c) = a.into_task() else { panic!("a run") };
        assert_eq!(c.execution.timeout(), Duration::from_millis(500));
        let Cargo::Sfl(a) = Cargo::try_parse_from(["cargo", "sfl", "--no-edges"]).unwrap();
        let Task::Run(c) = a.into_task() else { panic!("a run") };
        assert_eq!(c.execution.test_timeout, None);
        assert_eq!(c.execution.timeout(), Duration::from_secs(180));
    }

    #[test]
    fn unknown_measures_are_rejected_with_the_list() {
        let err = Cargo::try_parse_from(["cargo", "sfl", "--measure", "nope"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ochiai"), "{err}");
    }
}
