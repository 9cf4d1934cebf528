//! cargo sfl: statistical fault localisation for Rust test suites.
//!
//! The pipeline, one module per stage: [`build`] (instrumented test binaries) → [`list`] (each
//! binary's tests) / [`run`] (one process per test, continuous-mode profiles) → [`decode`]
//! ([`covmap`] + [`profraw`] + [`lines`]: per-test line coverage; [`edges`]: per-test
//! control-flow edges) → [`spectra`] (the coverage matrix, saved and reloaded) → [`analysis`]
//! (ambiguity groups, the all-failing core, scores under every option) with [`measures`]
//! (the catalogue and Doric's measures) and [`cp`] → [`rank`] → [`report`] (human, JSON, SARIF,
//! HTML). [`gzoltar`] imports matrices from other tools; [`eval`] scores measures
//! on known [`faults`].
//! [`cli`] parses arguments into a [`config`], and [`pipeline`] runs the subcommands over the
//! stages.

pub mod analysis;
pub mod build;
pub mod cli;
pub mod config;
pub mod covmap;
pub mod cp;
pub mod decode;
pub mod diff;
pub mod edges;
pub mod error;
pub mod eval;
pub mod faults;
pub mod gzoltar;
pub mod hitting;
pub mod lines;
pub mod list;
pub mod measures;
pub mod pipeline;
pub mod profraw;
pub mod rank;
pub mod report;
pub mod run;
pub mod spectra;
pub mod testcode;
pub mod ui;
