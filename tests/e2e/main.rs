//! End-to-end tests: the real `cargo-sfl` binary on the faulty fixtures and the report formats,
//! one libtest-mimic trial per fixture or behaviour. A trial that builds, runs or edits works in
//! its own copy of its fixture; trials that only read a run's results share one run of it
//! (`support::shared`).

mod anywhere;
mod ci;
mod clusters;
mod config;
mod docs;
mod doctests;
mod edges;
mod editor;
mod eval;
mod exits;
mod explain;
mod fixtures;
mod formats;
mod mutate;
mod nextest;
mod oracle;
mod reliability;
mod retries;
mod select;
mod shards;
mod stacks;
mod support;
mod targets;

use libtest_mimic::{Arguments, Trial};

fn main() {
    let args = Arguments::from_args();
    let trials: Vec<Trial> = [
        fixtures::trials(),
        exits::trials(),
        reliability::trials(),
        retries::trials(),
        select::trials(),
        formats::trials(),
        shards::trials(),
        anywhere::trials(),
        ci::trials(),
        eval::trials(),
        explain::trials(),
        edges::trials(),
        stacks::trials(),
        clusters::trials(),
        mutate::trials(),
        doctests::trials(),
        nextest::trials(),
        docs::trials(),
        editor::trials(),
        targets::trials(),
        config::trials(),
    ]
    .into_iter()
    .flatten()
    .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    support::shared::remove_all();
    conclusion.exit();
}
