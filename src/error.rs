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
    #[error("cannot write {what} to {}: {source}", path.display())]
    Output {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SflError {
    pub fn exit_code(&self) -> i32 {
        match self {
            SflError::Metadata(_) | SflError::Setup(_) => exit::SETUP,
            SflError::BuildFailed => exit::BUILD_FAILED,
            SflError::NoTests(_) => exit::NO_TESTS,
            SflError::BadSpectra { .. } => exit::BAD_SPECTRA,
            SflError::DiffBase(_) | SflError::Usage(_) | SflError::Nextest(_) => exit::USAGE,
            SflError::Output { .. } => exit::OUTPUT,
        }
    }
}
