//! cargo sfl: statistical fault localisation for Rust test suites.
//!
//! The modules are declared below in pipeline order, each looking only down the list's
//! foundations and earlier stages (`cargo xtask house` checks that no file imports another
//! in a circle):
//!
//! - [`cli`] parses the command line into a [`config`] (plain types every stage reads);
//!   [`error`] holds the typed errors and their exit codes, [`ui`] the terminal.
//! - [`pipeline`] runs each subcommand over the stages below, in this order.
//! - Collecting: [`workspace`] (members, target dirs, the built test binaries) →
//!   [`select`] (which tests an edit can affect, against the last run) → [`build`] (the
//!   instrumented tests; [`doctest`]s kept by rustdoc) → [`list`] (each binary's tests) with
//!   [`nextest`] (filtersets, profiles) → [`run`] (a process per test, through [`process`]
//!   and [`schedule`]; [`verdict`] reads each outcome, [`stacks`] names a panic's frames) →
//!   [`coverage`] (per-test line coverage) and [`edges`] (per-test control-flow edges) →
//!   [`spectra`] (the saved matrix; [`gzoltar`] imports one).
//! - Analysing: [`score`] (what a measure gives an entry) → [`analysis`] (ambiguity groups,
//!   the all-failing core) with [`measures`] (the catalogue, Doric's measures), [`cp`],
//!   [`testcode`] (test code, from [`syntax`]) and [`evidence`] (what orders lines coverage
//!   cannot tell apart) → [`combined`] (the learned score, with its [`weights`]) and
//!   [`clusters`] (independent failures) → [`rank`] (every measure's ranking; [`diff`] for
//!   changed lines) → [`mutate`] (`--mutate` re-orders the top lines).
//! - Reporting and evaluating: [`report`] (a report model every format only reads: human,
//!   short, JSON, SARIF, HTML, JUnit), [`explain`] (why a line ranks where it does), [`eval`]
//!   (every measure on known [`faults`], HT_Rank from [`hitting`]).
//! - Foundations: [`bitset`] (the matrix's row type), [`per_binary`] (what is read from each
//!   test binary, cached), [`platform`] (the one place that knows object formats and
//!   operating systems).
//!
//! The rustc and rustdoc wrappers and everything that ends the process live in the binary
//! (`src/main.rs`, `src/wrappers/`), not here: the library returns errors.

// Driving: the command line, its configuration, errors, the terminal, the subcommands.
pub mod cli;
pub mod config;
pub mod error;
pub mod ui;
pub mod pipeline;

// Collecting: workspace → select → build → list/run → coverage and edges → spectra.
pub mod workspace;
pub mod select;
pub mod build;
pub mod doctest;
pub mod list;
pub mod nextest;
pub mod process;
pub mod forkserver;
pub mod schedule;
pub mod run;
pub mod stacks;
pub mod verdict;
pub mod coverage;
pub mod edges;
pub mod spectra;
pub mod gzoltar;

// Analysing: scores, groups, measures, CP, evidence, the combined score, rankings.
pub mod score;
pub mod analysis;
pub mod measures;
pub mod cp;
pub mod syntax;
pub mod testcode;
pub mod evidence;
pub mod weights;
pub mod combined;
pub mod clusters;
pub mod rank;
pub mod diff;
pub mod mutate;

// Reporting and evaluating.
pub mod report;
pub mod explain;
pub mod eval;
pub mod faults;
pub mod hitting;

// Foundations.
pub mod bitset;
pub mod per_binary;
pub mod platform;
