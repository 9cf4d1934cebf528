//! What a command asks for, resolved once from the command line into plain types: the
//! pipeline and the renderers read these, never the argument parser's types.

mod names;

pub use names::{Ignored, NameFilter};

use std::path::PathBuf;
use std::time::Duration;

use crate::analysis::Options;
use crate::measures::Measure;

/// One subcommand with everything it needs.
pub enum Task {
    /// `cargo sfl [OPTIONS] [FILTER]`: build, run, rank, report.
    Run(Box<RunConfig>),
    /// `cargo sfl report`: re-rank saved spectra (`spectra`, or the workspace's default file).
    Report {
        spectra: Option<PathBuf>,
        manifest_path: Option<PathBuf>,
        report: ReportConfig,
    },
    /// `cargo sfl analyze --gzoltar DIR`.
    Analyze { gzoltar: PathBuf, report: ReportConfig },
    /// `cargo sfl measures`.
    Measures(ListFormat),
    /// `cargo sfl merge`: shards' spectra into one.
    Merge {
        files: Vec<PathBuf>,
        save_spectra: Option<PathBuf>,
        /// Merge shards that are not one complete partition (with a warning saying what is
        /// missing).
        allow_partial: bool,
        report: ReportConfig,
    },
    /// `cargo sfl eval`.
    Eval(Box<EvalConfig>),
    /// `cargo sfl explain FILE:LINE`.
    Explain {
        location: (String, u32),
        spectra: Option<PathBuf>,
        manifest_path: Option<PathBuf>,
        /// `-m` was given (else a few classic measures beside the default).
        measures_asked: bool,
        report: ReportConfig,
    },
}

/// Collect the spectra, then report on them.
pub struct RunConfig {
    pub selection: Selection,
    pub execution: Execution,
    /// Which tests run by name (`TESTNAME_FILTER`, and the test harness's arguments after `--`).
    pub filter: NameFilter,
    /// `-E`, `--nextest-config`, `--nextest-profile`.
    pub nextest: NextestOptions,
    pub report: ReportConfig,
}

/// What the command line asks of nextest's setup ([`crate::nextest`]).
#[derive(Debug, Default, Clone)]
pub struct NextestOptions {
    /// `-E`: tests matching any of these run.
    pub filtersets: Vec<String>,
    /// `--nextest-config`: instead of the workspace's `.config/nextest.toml`.
    pub config: Option<PathBuf>,
    /// `--nextest-profile` (default `default`).
    pub profile: Option<String>,
}

/// Which packages and targets to build, as for `cargo test`.
#[derive(Debug, Default, Clone)]
pub struct Selection {
    pub manifest_path: Option<PathBuf>,
    pub package: Vec<String>,
    pub workspace: bool,
    pub exclude: Vec<String>,
    pub lib: bool,
    pub bins: bool,
    pub bin: Vec<String>,
    pub tests: bool,
    pub test: Vec<String>,
    /// `--examples`, `--example NAME`: examples built with the test harness and run.
    pub examples: bool,
    pub example: Vec<String>,
    /// `--benches`, `--bench NAME`: benchmark targets built as tests and run.
    pub benches: bool,
    pub bench: Vec<String>,
    /// `--all-targets`: `--lib --bins --tests --benches --examples`.
    pub all_targets: bool,
    pub features: Vec<String>,
    pub all_features: bool,
    pub no_default_features: bool,
    pub release: bool,
    /// `--profile NAME`: the cargo profile to build with (`--release` is `release`).
    pub profile: Option<String>,
    /// `--target TRIPLE`: the host's triple, given to cargo (its builds then go under a
    /// directory of the triple's, and build scripts and proc macros build apart).
    pub target: Option<String>,
    /// Directory for the instrumented build (default: `<target-dir>/sfl`).
    pub target_dir: Option<PathBuf>,
    /// `--doc`: only the libraries' doctests.
    pub doc: bool,
    /// `--no-doctests`: no doctests even when the selection has libraries.
    pub no_doctests: bool,
    /// `--standalone-doctests`: one executable per doctest, never merged.
    pub standalone_doctests: bool,
    /// `--merged-doctests`: merged however few they are.
    pub merged_doctests: bool,
    /// `--message-format json`: the build's cargo messages go to stdout as cargo prints them
    /// (how the report is written, not what is built: the next run's selection ignores it).
    pub cargo_messages: bool,
    /// `--locked`, `--offline`, `--frozen`: how cargo may resolve and fetch dependencies, given
    /// to every cargo command (not what is built: the next run's selection ignores them).
    pub locked: bool,
    pub offline: bool,
    pub frozen: bool,
    /// `--config KEY=VALUE` (or a file): cargo configuration given to every cargo command.
    pub cargo_config: Vec<String>,
}

impl Selection {
    /// The directory of the build's profile in a target directory, as cargo names it: `debug`
    /// for `dev` and `test`, `release` for `release` and `bench`, else the profile's name; under
    /// the triple's directory with `--target`.
    pub fn profile_dir(&self) -> String {
        let profile = match self.profile.as_deref() {
            _ if self.release => "release",
            None | Some("dev" | "test") => "debug",
            Some("bench") => "release",
            Some(name) => name,
        };
        match &self.target {
            Some(triple) => format!("{triple}/{profile}"),
            None => profile.to_string(),
        }
    }

    /// cargo's own options for every cargo command of the run ([`Selection::locked`] and the
    /// others), as `cargo test` takes them.
    pub fn cargo_flags(&self) -> Vec<String> {
        let mut flags: Vec<String> = [
            ("--locked", self.locked),
            ("--offline", self.offline),
            ("--frozen", self.frozen),
        ]
        .into_iter()
        .filter(|&(_, on)| on)
        .map(|(flag, _)| flag.to_string())
        .collect();
        for c in &self.cargo_config {
            flags.extend(["--config".to_string(), c.clone()]);
        }
        flags
    }

    /// Whether doctests are run: as `cargo test` does, when no target is selected (or with
    /// `--doc`), unless `--no-doctests`.
    pub fn doctests(&self) -> bool {
        self.doc
            || !(self.no_doctests
                || self.lib
                || self.bins
                || self.tests
                || !self.bin.is_empty()
                || !self.test.is_empty()
                || self.examples
                || !self.example.is_empty()
                || self.benches
                || !self.bench.is_empty()
                || self.all_targets)
    }
}

/// How tests are run.
#[derive(Debug, Clone)]
pub struct Execution {
    /// Tests at once (default: the number of CPUs).
    pub jobs: Option<usize>,
    /// `--test-timeout`: how long a test may run before it is killed (timed out); `None`:
    /// [`Execution::timeout`]'s default for the build.
    pub test_timeout: Option<Duration>,
    /// `#[ignore]`d tests: left out, run too (`--include-ignored`), or run alone (`-- --ignored`).
    pub ignored: Ignored,
    /// Run every test: no test's row is reused from the last run, and an interrupted run is
    /// not resumed.
    pub rerun: bool,
    /// `--reuse-spectra FILE`: the run whose rows may be reused (default: the workspace's last).
    pub reuse_spectra: Option<PathBuf>,
    /// Runs more of a test that did not pass (nextest's `--retries`): flaky if one passes.
    /// `None`: not given (the nextest profile's, else none).
    pub retries: Option<u32>,
    /// Runs a test that failed or crashed beside other tests again alone (`--no-alone-rerun`
    /// turns it off): one that then passes is ranked as passing.
    pub alone_rerun: bool,
    /// `-- --nocapture`: libtest leaves each test's output to its process (kept when the
    /// process is killed or crashes, at the cost of a write per print) instead of capturing it
    /// as under `cargo test`.
    pub nocapture: bool,
    pub no_edges: bool,
    pub keep_profiles: bool,
    /// `--process-per-test`: launch every test (no fork servers, [`crate::forkserver`]).
    pub process_per_test: bool,
    /// `--fresh-processes`: a forked test's process never takes another test
    /// ([`crate::forkserver`]'s kept processes).
    pub fresh_processes: bool,
    pub partition: Option<Partition>,
    pub save_spectra: Option<PathBuf>,
    /// `--junit FILE`: the run as JUnit XML.
    pub junit: Option<PathBuf>,
    /// `--mutate`: re-order the first N lines of each ranking by mutation analysis
    /// ([`crate::mutate`]).
    pub mutate: Option<usize>,
}

/// What a test may take under plain `cargo test` before it counts as hanging (nextest's
/// slow-timeout); the default timeout is this times the build's instrumentation slowdown.
pub const UNINSTRUMENTED_TIMEOUT: Duration = Duration::from_secs(60);

/// How much slower a test runs under cargo sfl's instrumentation, at worst: measured on
/// CPU-bound tests (a Collatz loop, sorting and hashing two million numbers), line coverage
/// ran them 1.0-2.3x as long as `cargo test`, and the edge flags added up to 1.5x to that
/// (sorting: std's sort, compiled into the crate, gets flags but no line counters; the
/// heaviest regex-syntax test, 1.7x): 2.3 x 1.7 < 4.
pub const SLOWDOWN_WITH_EDGES: u32 = 4;
/// The same with `--no-edges` (line coverage only).
pub const SLOWDOWN_LINES_ONLY: u32 = 3;

impl Execution {
    /// The timeout: `--test-timeout` as given, else [`UNINSTRUMENTED_TIMEOUT`] scaled by the
    /// build's slowdown, so a test that passes under `cargo test` is not killed for being
    /// instrumented.
    pub fn timeout(&self) -> Duration {
        self.test_timeout.unwrap_or(UNINSTRUMENTED_TIMEOUT * self.slowdown())
    }

    /// The instrumentation's worst slowdown for this build.
    pub fn slowdown(&self) -> u32 {
        if self.no_edges {
            SLOWDOWN_LINES_ONLY
        } else {
            SLOWDOWN_WITH_EDGES
        }
    }

    /// The timeout and where it came from, for the `Running` line.
    pub fn timeout_note(&self) -> String {
        match self.test_timeout {
            Some(t) => format!("{}s", t.as_secs_f64()),
            None => format!(
                "{}s: {}s under cargo test x{} for instrumentation",
                self.timeout().as_secs(),
                UNINSTRUMENTED_TIMEOUT.as_secs(),
                self.slowdown()
            ),
        }
    }
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

/// A `--partition` value that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PartitionError {
    #[error("unknown partition kind {0:?}: use count or hash")]
    UnknownKind(String),
    #[error("expected K/N, e.g. count:1/3")]
    NoSlash,
    #[error("shard {0:?} is not a number")]
    BadShard(String),
    #[error("shard count {0:?} is not a number")]
    BadTotal(String),
    #[error("shard {shard} of {total}: need 1 <= K <= N")]
    OutOfRange { shard: u64, total: u64 },
}

impl Partition {
    /// Parses `count:K/N`, `hash:K/N`, or `K/N` (count).
    pub fn parse(s: &str) -> Result<Self, PartitionError> {
        let (kind, rest) = match s.split_once(':') {
            Some(("count", r)) => (PartitionKind::Count, r),
            Some(("hash", r)) => (PartitionKind::Hash, r),
            Some((k, _)) => return Err(PartitionError::UnknownKind(k.to_string())),
            None => (PartitionKind::Count, s),
        };
        let (k, n) = rest.split_once('/').ok_or(PartitionError::NoSlash)?;
        let (shard, total): (u64, u64) = (
            k.parse().map_err(|_| PartitionError::BadShard(k.to_string()))?,
            n.parse().map_err(|_| PartitionError::BadTotal(n.to_string()))?,
        );
        if total == 0 || shard == 0 || shard > total {
            return Err(PartitionError::OutOfRange { shard, total });
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

/// Why a set of shards is not one complete partition (`cargo sfl merge`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ShardSetError {
    #[error("file {file} records no --partition (it is a whole run, or from an older cargo sfl)")]
    Unrecorded { file: usize },
    #[error("file {file} records partition {found:?}, which does not parse: {error}")]
    Unreadable {
        file: usize,
        found: String,
        error: PartitionError,
    },
    #[error("files {first} and {second} are partitions of different kinds or sizes ({a} and {b})")]
    Mixed {
        first: usize,
        second: usize,
        a: Partition,
        b: Partition,
    },
    #[error("files {first} and {second} are the same shard ({shard})")]
    Duplicate {
        first: usize,
        second: usize,
        shard: Partition,
    },
    #[error("shard{} {} of {kind}:K/{total} missing", if missing.len() == 1 { "" } else { "s" },
        missing.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))]
    Missing {
        kind: &'static str,
        total: u64,
        missing: Vec<u64>,
    },
}

impl ShardSetError {
    /// The file (0-based, in the order given) the problem is best shown on.
    pub fn file(&self) -> usize {
        match self {
            ShardSetError::Unrecorded { file } | ShardSetError::Unreadable { file, .. } => file - 1,
            ShardSetError::Mixed { second, .. } | ShardSetError::Duplicate { second, .. } => second - 1,
            ShardSetError::Missing { .. } => 0,
        }
    }
}

/// Checks that the partitions recorded by the files to merge (in the order given; files are
/// numbered from 1 in errors) are every shard of one partition, each once.
pub fn check_shard_set(recorded: &[Option<&str>]) -> Result<(), ShardSetError> {
    let mut seen: Vec<(usize, Partition)> = Vec::with_capacity(recorded.len());
    for (i, r) in recorded.iter().enumerate() {
        let file = i + 1;
        let found = r.ok_or(ShardSetError::Unrecorded { file })?;
        let p = Partition::parse(found).map_err(|error| ShardSetError::Unreadable {
            file,
            found: found.to_string(),
            error,
        })?;
        if let Some(&(first, a)) = seen.first()
            && (a.kind != p.kind || a.total != p.total)
        {
            return Err(ShardSetError::Mixed {
                first,
                second: file,
                a,
                b: p,
            });
        }
        if let Some(&(first, _)) = seen.iter().find(|(_, q)| q.shard == p.shard) {
            return Err(ShardSetError::Duplicate {
                first,
                second: file,
                shard: p,
            });
        }
        seen.push((file, p));
    }
    let Some(&(_, first)) = seen.first() else { return Ok(()) };
    let missing: Vec<u64> = (1..=first.total)
        .filter(|k| !seen.iter().any(|(_, p)| p.shard == *k))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(ShardSetError::Missing {
        kind: first.kind_name(),
        total: first.total,
        missing,
    })
}

impl Partition {
    fn kind_name(&self) -> &'static str {
        match self.kind {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        }
    }
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}/{}", self.kind_name(), self.shard, self.total)
    }
}

/// A report's format (what `--format` asks for).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Human,
    Json,
    Sarif,
    Html,
    Short,
    /// `--message-format json`: cargo's JSON messages, the suspects as `compiler-message`s.
    CargoJson,
}

/// The order of the suspects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// By score.
    Score,
    /// By when the HT_Rank model expects a person to reach them.
    Ht,
}

/// What a unit of the ranking is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Line,
    Function,
}

/// Formats of the measure catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListFormat {
    Human,
    Json,
}

/// The metric `cargo sfl eval` orders its table by (smaller is better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SortBy {
    #[default]
    StandardRank,
    SteimannRank,
    Exam,
    Accuracy,
    HtRank,
    Name,
}

/// The HT_Rank debugging model's parameters (Def. 29), for `--order ht` and `cargo sfl eval`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HtParams {
    /// Probability of jumping to a line of the same function.
    pub p_jump: f64,
    /// Largest chain (states) solved exactly; larger ones are estimated by random walks. The
    /// exact solver takes seconds up to ~100,000 states and grows faster than linearly past
    /// that (`bench-results/ht.md`), and `eval` solves one chain per measure.
    pub exact_limit: usize,
    /// Random walks for the estimate (0: HT_Rank only where the exact method applies).
    pub walks: usize,
}

impl Default for HtParams {
    fn default() -> Self {
        HtParams {
            p_jump: 0.5,
            exact_limit: 250_000,
            walks: 200,
        }
    }
}

/// What the report shows and where it goes.
#[derive(Clone)]
pub struct ReportConfig {
    /// The measures to rank by, in order, without repeats.
    pub measures: Vec<&'static Measure>,
    pub options: Options,
    /// Entries per measure in the human and SARIF reports (functions, when `functions_first`).
    pub top: usize,
    pub format: Format,
    /// A file (a directory for HTML); standard output when `None`.
    pub output: Option<PathBuf>,
    pub diff_base: Option<String>,
    pub only_changed: bool,
    pub fail_on: Option<f64>,
    pub granularity: Granularity,
    /// Line rankings are shown function by function, each function with its most suspicious
    /// lines (the default; `--granularity line` lists lines on their own).
    pub functions_first: bool,
    pub order: Order,
    /// How the lines of one entry are ordered.
    pub tie_break: crate::evidence::TieBreak,
    pub include_test_code: bool,
    /// Rank timed-out tests as failed ones (by default they are left out: neither failing nor
    /// passing).
    pub count_timeouts: bool,
    pub ht: HtParams,
}

/// The measures the HTML page offers when none is asked for (it switches between them).
const HTML_MEASURES: &[&str] = &[
    crate::measures::DEFAULT,
    "stack-combined",
    "ochiai",
    "dstar2",
    "tarantula",
    "naish2",
    "cl",
];

/// A measure name no measure has.
#[derive(Debug, thiserror::Error)]
#[error("unknown measure {0:?}")]
pub struct UnknownMeasure(pub String);

impl ReportConfig {
    /// The measures `names` asks for, in order, without repeats; when empty, the default (the
    /// usual few for HTML).
    pub fn resolve_measures(names: &[String], format: Format) -> Result<Vec<&'static Measure>, UnknownMeasure> {
        let names: Vec<&str> = match (names.is_empty(), format) {
            (true, Format::Html) => HTML_MEASURES.to_vec(),
            (true, _) => vec![crate::measures::DEFAULT],
            (false, _) => names.iter().map(String::as_str).collect(),
        };
        let mut out: Vec<&'static Measure> = Vec::new();
        for n in names {
            let m = crate::measures::find(n).ok_or_else(|| UnknownMeasure(n.to_string()))?;
            if !out.iter().any(|o| o.name == m.name) {
                out.push(m);
            }
        }
        Ok(out)
    }
}

/// `cargo sfl eval`: the faults, where the spectra come from, and how to score.
pub struct EvalConfig {
    pub faults: PathBuf,
    /// Saved spectra to evaluate; `None`: collect them as `run` does.
    pub spectra: Option<PathBuf>,
    pub sort_by: SortBy,
    /// Compute HT_Rank (with `run.report.ht`).
    pub ht: bool,
    /// The combined ranking's weights, in place of the built-in ones.
    pub weights: Option<PathBuf>,
    /// The measures asked for; `None`: every measure the spectra support.
    pub measures: Option<Vec<&'static Measure>>,
    pub run: RunConfig,
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shard_set_must_be_every_shard_of_one_partition_once() {
        assert_eq!(check_shard_set(&[Some("count:2/2"), Some("count:1/2")]), Ok(()));
        assert_eq!(check_shard_set(&[]), Ok(()));
        assert_eq!(
            check_shard_set(&[Some("count:1/3"), Some("count:3/3")])
                .unwrap_err()
                .to_string(),
            "shard 2 of count:K/3 missing"
        );
        let mixed = check_shard_set(&[Some("count:2/2"), Some("hash:1/2")]).unwrap_err();
        assert_eq!(
            mixed.to_string(),
            "files 1 and 2 are partitions of different kinds or sizes (count:2/2 and hash:1/2)"
        );
        assert_eq!(mixed.file(), 1);
        let twice = check_shard_set(&[Some("hash:1/2"), Some("hash:2/2"), Some("hash:2/2")]).unwrap_err();
        assert_eq!(twice.to_string(), "files 2 and 3 are the same shard (hash:2/2)");
        assert_eq!(twice.file(), 2);
        assert_eq!(
            check_shard_set(&[Some("count:1/1"), None]),
            Err(ShardSetError::Unrecorded { file: 2 })
        );
        assert!(matches!(
            check_shard_set(&[Some("count:9/2")]),
            Err(ShardSetError::Unreadable { file: 1, .. })
        ));
    }

    use super::*;

    #[test]
    fn partitions_parse_and_split_every_test_into_exactly_one_shard() {
        assert_eq!(Partition::parse("2/3").unwrap().kind, PartitionKind::Count);
        assert_eq!(Partition::parse("hash:1/2").unwrap().to_string(), "hash:1/2");
        for bad in ["0/3", "4/3", "x:1/2", "1-2", "1/0"] {
            assert!(Partition::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Partition::parse("x:1/2").unwrap_err().to_string(),
            "unknown partition kind \"x\": use count or hash"
        );
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
    fn measures_resolve_in_order_without_repeats_with_defaults_per_format() {
        let names = |v: Vec<&'static Measure>| v.iter().map(|m| m.name).collect::<Vec<_>>();
        let asked = vec!["dstar".to_string(), "ochiai".into(), "dstar2".into()];
        assert_eq!(
            names(ReportConfig::resolve_measures(&asked, Format::Human).unwrap()),
            ["dstar2", "ochiai"]
        );
        assert_eq!(
            names(ReportConfig::resolve_measures(&[], Format::Json).unwrap()),
            ["stack-ochiai"]
        );
        assert_eq!(
            names(ReportConfig::resolve_measures(&[], Format::Html).unwrap())[..2],
            ["stack-ochiai", "stack-combined"]
        );
        assert_eq!(ReportConfig::resolve_measures(&[], Format::Html).unwrap().len(), 7);
        assert!(ReportConfig::resolve_measures(&["nope".into()], Format::Human).is_err());
    }
}
