//! cargo sfl: statistical fault localisation for Rust test suites.
//!
//! The modules below are listed in pipeline order, one module per stage:
//! [`build`] (instrumented test binaries, and [`doctest`]s kept by rustdoc) → [`list`] (each binary's tests) / [`run`] (one
//! process per test, continuous-mode profiles) → [`coverage`] (per-test line coverage) and
//! [`edges`] (per-test control-flow edges) → [`spectra`] (the coverage matrix, saved and
//! reloaded; [`gzoltar`] imports one) → [`analysis`] (ambiguity groups, the all-failing core)
//! with [`measures`] (the catalogue, Doric's measures), [`cp`], [`testcode`] (test code, from
//! [`syntax`]) and [`evidence`] (what orders lines coverage cannot tell apart) → [`rank`]
//! (every measure's [`score`]s, [`combined`] with its [`weights`], the rankings; with [`diff`]
//! for changed lines) → [`report`] (human, JSON, SARIF, HTML); [`eval`] scores every measure
//! on known [`faults`] with [`hitting`] (HT_Rank).
//!
//! Around them: [`cli`] parses arguments into a [`config`], and [`pipeline`] runs each
//! subcommand over the stages; [`error`] holds the exit codes, [`ui`] the terminal;
//! [`platform`] is the one place that knows object formats and operating systems;
//! [`per_binary`] caches what is read from each test binary; [`bitset`] is the matrix's row type.

// Configuration and driving.
pub mod cli;
pub mod config;
pub mod error;
pub mod pipeline;
pub mod ui;

// Collecting: build → list/run → coverage and edges → spectra.
pub mod workspace;
pub mod build;
pub mod select;
pub mod doctest;
pub mod list;
pub mod nextest;
pub mod process;
pub mod run;
pub mod verdict;
pub mod schedule;
pub mod coverage;
pub mod edges;
pub mod spectra;
pub mod gzoltar;

// Analysing: scores, CP, ranks.
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
pub mod mutate;
pub mod rank;
pub mod diff;

// Reporting and evaluating.
pub mod report;
pub mod explain;
pub mod eval;
pub mod faults;
pub mod hitting;

// Shared foundations.
pub mod bitset;
pub mod per_binary;
pub mod platform;
