//! The arguments of a run: the name filter, nextest's selection, the packages and targets,
//! how tests are run, and the report.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::output::OutputArgs;
use super::values::{at_least_one, test_timeout};
use crate::config::{self, Partition, RunConfig};

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

    /// Arguments for the test harness, as `cargo test -- ARGS` takes them: name filters (a test
    /// runs when its name contains one), `--exact`, `--skip NAME`, `--ignored` (only #[ignore]d
    /// tests), `--include-ignored`, `--test-threads N` (as -j N), `--nocapture` (libtest leaves
    /// each test's output to its process, as cargo sfl reads it: a test that crashes or is killed
    /// at its timeout keeps what it printed, at the cost of a write per print; by default libtest
    /// captures it, as under `cargo test`). libtest's other output options (`--show-output`,
    /// `--color`, `--format`, `-q`) have no effect: failing tests' output is shown in the report.
    #[arg(last = true, value_name = "ARGS")]
    pub harness_args: Vec<String>,
}

impl RunArgs {
    /// Checks the test harness's arguments (after `--`): the usage error says which one is
    /// wrong.
    pub fn check(&self) -> Result<(), clap::Error> {
        super::harness::parse(&self.harness_args)
            .map(|_| ())
            .map_err(|why| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{why}\n")))
    }

    /// The run's configuration; the harness's arguments are taken as [`RunArgs::check`]ed.
    pub fn into_config(self) -> RunConfig {
        let mut selection: config::Selection = self.select.into();
        // `cargo test NAME` runs no doctests (only `cargo test --doc NAME` filters them: cargo
        // issue 6981), and cargo sfl runs what cargo test runs.
        if self.filter.is_some() && !selection.doc {
            selection.no_doctests = true;
        }
        let report = self.output.into_config();
        selection.cargo_messages = report.format == config::Format::CargoJson;
        let harness = super::harness::parse(&self.harness_args).unwrap_or_default();
        if !harness.no_effect.is_empty() {
            crate::ui::warn(format!(
                "{} after `--` has no effect: cargo sfl captures every test's output and shows \
                 failing tests' in the report",
                harness.no_effect.join(", ")
            ));
        }
        let mut filter = config::NameFilter::substring(self.filter);
        filter.patterns.extend(harness.patterns);
        filter.exact = harness.exact;
        filter.skip = harness.skip;
        let mut execution: config::Execution = self.exec.into();
        if let Some(ignored) = harness.ignored {
            execution.ignored = ignored;
        }
        execution.jobs = execution.jobs.or(harness.test_threads);
        execution.nocapture = harness.nocapture;
        RunConfig {
            selection,
            execution,
            filter,
            nextest: crate::nextest::Options {
                filtersets: self.nextest.filterset,
                config: self.nextest.nextest_config,
                profile: self.nextest.nextest_profile,
            },
            report,
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
    /// 2024. By default a library with five doctests or more has them merged into one executable
    /// wherever rustdoc can merge them (each still runs in its own process), which builds and
    /// decodes many doctests several times faster; fewer are built one executable each, which
    /// skips the merged runner's build. Use this when a doctest depends on being a crate of its
    /// own.
    #[arg(long, help_heading = "Target selection", conflicts_with = "merged_doctests")]
    pub standalone_doctests: bool,
    /// Merge a library's doctests into one executable however few they are.
    #[arg(long, help_heading = "Target selection")]
    pub merged_doctests: bool,

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
    #[arg(long, short = 'r', help_heading = "Compilation options", conflicts_with = "profile")]
    pub release: bool,
    /// Build with the given cargo profile, as `cargo test --profile NAME`.
    #[arg(long, value_name = "PROFILE-NAME", help_heading = "Compilation options")]
    pub profile: Option<String>,
    /// Build for this target triple, as `cargo test --target TRIPLE`: the tests run on this
    /// machine, so it must be the host's.
    #[arg(long, value_name = "TRIPLE", help_heading = "Compilation options")]
    pub target: Option<String>,
    /// Directory for the instrumented build [default: <target-dir>/sfl].
    #[arg(long, value_name = "DIR", help_heading = "Compilation options")]
    pub target_dir: Option<PathBuf>,

    /// Assert that Cargo.lock will remain unchanged (given to every cargo command, as with
    /// `cargo test --locked`).
    #[arg(long, help_heading = "Manifest options")]
    pub locked: bool,
    /// Run without accessing the network.
    #[arg(long, help_heading = "Manifest options")]
    pub offline: bool,
    /// Equivalent to specifying both --locked and --offline.
    #[arg(long, help_heading = "Manifest options")]
    pub frozen: bool,
    /// Override a cargo configuration value (KEY=VALUE, or a configuration file), as cargo's
    /// `--config` does; repeatable.
    #[arg(long = "config", value_name = "KEY=VALUE|PATH", help_heading = "Manifest options")]
    pub cargo_config: Vec<String>,
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
    /// Do not run failing tests again alone. By default, when tests ran several at a time, each
    /// test that failed or crashed (up to 32 of them) runs once more with no other test running;
    /// one that then passes failed only beside other tests (they share a temporary directory,
    /// a port or a file between processes, which `cargo test`'s one process hides) and is
    /// ranked as passing; the human and JSON reports say so.
    #[arg(long)]
    pub no_alone_rerun: bool,
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
    /// Launch every test as a process of its own. By default the tests of a libtest binary are
    /// forked from one process of that binary, stopped before `main`: each still runs alone in
    /// its own process with its own profile, without paying a launch.
    #[arg(long)]
    pub process_per_test: bool,
    /// Fork a new process for every test. By default a forked test that passed and left no
    /// thread or child process runs the next test of its binary in the same process, once the
    /// environment, working directory and every static of the crate's and its dependencies'
    /// code are as they were before the process's first test (put back if the test changed
    /// them, unless a Rust `#[global_allocator]` is linked): the next test starts from the state
    /// a new process would give it. Any other test ends its process.
    #[arg(long)]
    pub fresh_processes: bool,
    /// Keep each test's .profraw files under <target-dir>/profiles (for debugging the decoder;
    /// every test then writes a whole profile, which forked tests otherwise skip).
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
            profile: s.profile,
            target: s.target,
            target_dir: s.target_dir,
            doc: s.doc,
            no_doctests: s.no_doctests,
            standalone_doctests: s.standalone_doctests,
            merged_doctests: s.merged_doctests,
            cargo_messages: false,
            locked: s.locked,
            offline: s.offline,
            frozen: s.frozen,
            cargo_config: s.cargo_config,
        }
    }
}

impl From<ExecutionArgs> for config::Execution {
    fn from(e: ExecutionArgs) -> Self {
        config::Execution {
            jobs: e.jobs,
            test_timeout: e.test_timeout,
            ignored: if e.include_ignored {
                config::Ignored::Include
            } else {
                config::Ignored::Skip
            },
            retries: e.retries,
            alone_rerun: !e.no_alone_rerun,
            nocapture: false,
            rerun: e.rerun,
            reuse_spectra: e.reuse_spectra,
            no_edges: e.no_edges,
            keep_profiles: e.keep_profiles,
            process_per_test: e.process_per_test,
            fresh_processes: e.fresh_processes,
            partition: e.partition,
            save_spectra: e.save_spectra,
            junit: e.junit,
            mutate: e.mutate.then_some(e.mutate_lines),
        }
    }
}
