//! The errors users and environments cause, each with a documented exit code.
//!
//! Messages are lowercase fragments that read after "error: ". Unexpected failures use
//! `anyhow` and exit with [`exit::INTERNAL`].

use std::path::PathBuf;

/// Process exit codes (also documented in docs/guide/exit-codes-and-bad-input.md).
pub mod exit {
    /// Failing tests were found and a report was written.
    pub const REPORTED: i32 = 0;
    /// An unexpected internal error.
    pub const INTERNAL: i32 = 1;
    /// Invalid command line (the argument parser's own code).
    pub const USAGE: i32 = 2;
    /// Every selected test passed: nothing to localise. The coverage summary is printed.
    pub const NO_FAILING_TESTS: i32 = 3;
    /// The selection contains no tests at all.
    pub const NO_TESTS: i32 = 4;
    /// Saved spectra could not be read (missing, corrupt, or from another schema).
    pub const BAD_SPECTRA: i32 = 5;
    /// `--fail-on`: some reported entry reached the suspicion threshold (the report was written).
    pub const SUSPICION: i32 = 6;
    /// `eval`: no known fault is on a line any test ran (the report says which faults). A run
    /// or a report: tests failed but ran no line that can be ranked (the error says why).
    /// `explain`: the line asked about is not ranked (the explanation says why).
    pub const UNLOCALISABLE: i32 = 7;
    /// An output file could not be written (`-o`, `--save-spectra`, the HTML page's directory).
    pub const OUTPUT: i32 = 74;
    /// The environment is not usable: cargo metadata failed, a toolchain component or the
    /// profiler runtime is missing.
    pub const SETUP: i32 = 96;
    /// Interrupted (Ctrl-C, SIGTERM) while tests ran; the running tests were killed.
    pub const INTERRUPTED: i32 = 130;
    /// The instrumented build failed; cargo's diagnostics were shown.
    pub const BUILD_FAILED: i32 = 101;
}

/// Errors in decoding a coverage map or a profile.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("profile is empty (the test process died before its profile was set up)")]
    EmptyProfile,
    #[error("not an LLVM raw profile (bad magic number)")]
    NotAProfile,
    #[error("unsupported {what} version {found}")]
    UnsupportedVersion { what: &'static str, found: u64 },
    #[error("malformed coverage data: {0}")]
    Malformed(String),
    #[error("binary has no coverage map (was it built with -C instrument-coverage?)")]
    NoCoverageMap,
    #[error("profile does not belong to {binary} (its build-id is {found:?})", binary = binary.display())]
    BuildIdMismatch { binary: PathBuf, found: Option<String> },
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
}

impl DecodeError {
    pub fn malformed(msg: impl Into<String>) -> Self {
        DecodeError::Malformed(msg.into())
    }
}

/// What is wrong with a filterset or the nextest configuration.
#[derive(Debug, thiserror::Error)]
pub enum NextestError {
    #[error("invalid filterset `{input}` ({origin}): {why}")]
    Filterset { origin: String, input: String, why: String },
    #[error("cannot read the nextest configuration {}: {why}", path.display())]
    Config { path: PathBuf, why: String },
    #[error("no nextest profile `{name}` in {} (its profiles: {known}); pass --nextest-profile with one of them", path.display())]
    UnknownProfile { name: String, path: PathBuf, known: String },
    #[error("--nextest-profile {0}: there is no nextest configuration (.config/nextest.toml or --nextest-config)")]
    NoConfig(String),
    #[error("cannot read the package graph for filtersets (cargo metadata): {0}")]
    Graph(String),
}

/// Errors reported to the user with a specific exit code.
#[derive(Debug, thiserror::Error)]
pub enum SflError {
    #[error("cargo metadata failed: {0}")]
    Metadata(String),
    #[error("the instrumented build failed (cargo's diagnostics are above)")]
    BuildFailed,
    #[error("{0}")]
    Setup(String),
    /// Nothing to run; says why (no tests at all, only ignored ones, or none matched).
    #[error("{0}")]
    NoTests(String),
    #[error("cannot use saved spectra {}: {reason}", path.display())]
    BadSpectra { path: PathBuf, reason: String },
    #[error("--diff-base: {0}")]
    DiffBase(String),
    #[error("{0}")]
    Usage(String),
    /// A bad `-E` filterset or nextest configuration.
    #[error(transparent)]
    Nextest(#[from] NextestError),
    // The reason is the error's source, which the binary prints after it (`{:#}`).
    #[error("cannot write {what} to {}", path.display())]
    Output {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Standard output was closed for writing or its device is full (`> /dev/full`); a closed
    /// pipe (`| head`) is not an error.
    #[error("cannot write {what} to standard output")]
    Stdout { what: &'static str, source: std::io::Error },
    // The environment's failures below name their cause in their own text (none is an error
    // `source`, which the top-level report would print a second time).
    /// cargo sfl cannot find its own executable (cargo runs it as the rustc wrapper).
    #[error("cannot find own executable: {0}")]
    OwnExecutable(std::io::Error),
    #[error("cannot run cargo: {0}")]
    CargoSpawn(std::io::Error),
    #[error("cargo did not finish: {0}")]
    CargoWait(std::io::Error),
    /// `--target-dir` or `--manifest-path` has no absolute form.
    #[error("bad {flag}: {why}")]
    BadPath { flag: &'static str, why: std::io::Error },
    #[error("cannot create {}: {why}", path.display())]
    CannotCreate { path: PathBuf, why: std::io::Error },
    #[error("cannot write {}: {why}", path.display())]
    CannotWrite { path: PathBuf, why: std::io::Error },
    /// A profile directory of the build holds the crates of a copy of the workspace elsewhere.
    #[error("cannot remove {}, built from another copy of the workspace: {why}", path.display())]
    StaleBuild { path: PathBuf, why: std::io::Error },
    #[error("cannot run cargo test --doc: {0}")]
    PlainDoctests(std::io::Error),
    /// `--mutate`: the failing tests are all doctests, which its builds leave out.
    #[error("every failing test is a doctest, and the mutants' builds do not rebuild doctests")]
    MutateOnlyDoctestsFail,
    /// `--mutate`: the workspace's manifest is not where the copy can have it.
    #[error("{} is not inside {}", manifest.display(), root.display())]
    MutateManifestOutside { manifest: PathBuf, root: PathBuf },
    #[error("cannot copy the workspace to {}: {why}", copy.display())]
    MutateCopy { copy: PathBuf, why: std::io::Error },
    /// `--mutate`: the copy fails to build in a file no mutant is in.
    #[error(
        "the copy of the workspace in {} does not build ({}:{line}: an error in no mutated file; \
         a path dependency outside the workspace, or a file the build reads from outside it?)",
        copy.display(),
        file.display()
    )]
    MutateCopyBuild { copy: PathBuf, file: PathBuf, line: usize },
    #[error(
        "the plain build of the workspace's copy in {} failed without a compiler error (a path \
         dependency outside the workspace?); run without --mutate",
        copy.display()
    )]
    MutatePlainBuild { copy: PathBuf },
    #[error(
        "no failing test fails on the plain (uninstrumented) build of the workspace's copy, so no mutant \
         can change a failure"
    )]
    MutateNoPlainFailure,
}

impl SflError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SflError::Metadata(_)
            | SflError::Setup(_)
            | SflError::OwnExecutable(_)
            | SflError::CargoSpawn(_)
            | SflError::CargoWait(_)
            | SflError::BadPath { .. }
            | SflError::CannotCreate { .. }
            | SflError::CannotWrite { .. }
            | SflError::StaleBuild { .. }
            | SflError::PlainDoctests(_)
            | SflError::MutateOnlyDoctestsFail
            | SflError::MutateManifestOutside { .. }
            | SflError::MutateCopy { .. }
            | SflError::MutateCopyBuild { .. }
            | SflError::MutatePlainBuild { .. }
            | SflError::MutateNoPlainFailure => exit::SETUP,
            SflError::BuildFailed => exit::BUILD_FAILED,
            SflError::NoTests(_) => exit::NO_TESTS,
            SflError::BadSpectra { .. } => exit::BAD_SPECTRA,
            SflError::DiffBase(_) | SflError::Usage(_) | SflError::Nextest(_) => exit::USAGE,
            SflError::Output { .. } | SflError::Stdout { .. } => exit::OUTPUT,
        }
    }
}
