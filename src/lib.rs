//! cargo sfl: statistical fault localisation for Rust test suites.
//!
//! The pipeline, one module per stage: [`build`] (instrumented test binaries) → [`runner`]
//! (one process per test, continuous-mode profiles) → [`coverage`] (per-test line coverage)
//! and [`edges`] (per-test control-flow edges, for [`cp`]) → [`spectra`] (the coverage
//! matrix, saved and reloaded) → [`analysis`] (ambiguity groups, the all-failing core, scores
//! under every option) with [`measures`] (the catalogue and Doric's measures) → [`rank`] →
//! [`report`] (human and JSON). [`gzoltar`] imports matrices from other tools.
//! [`cli`] parses arguments and [`pipeline`] drives the stages. [`platform`] is the one place
//! that knows object formats and operating systems; [`per_binary`] caches what is read from
//! each test binary.

pub mod analysis;
pub mod bitset;
pub mod build;
pub mod cli;
pub mod coverage;
pub mod cp;
pub mod diff;
pub mod edges;
pub mod error;
pub mod eval;
pub mod faults;
pub mod gzoltar;
pub mod hitting;
pub mod html;
pub mod measures;
pub mod per_binary;
pub mod pipeline;
pub mod platform;
pub mod rank;
pub mod report;
pub mod runner;
pub mod sarif;
pub mod spectra;
pub mod testcode;
pub mod ui;
