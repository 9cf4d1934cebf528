//! Target selection as `cargo test` has it: `--examples`, `--example NAME`, `--benches`,
//! `--bench NAME` and `--all-targets` build those targets with the test harness and run their
//! tests (and no doctests), each test in its own process like any other.

use std::collections::BTreeSet;

use libtest_mimic::Trial;

use crate::support::{Result, check, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "targets::examples_and_all_targets",
        examples_and_all_targets,
    )]
}

/// The tests (`binary name`) a run with `args` ran on self-dev-dep, from its saved spectra.
fn tests_run(dir: &std::path::Path, args: &[&str]) -> Result<BTreeSet<String>> {
    let saved = dir.join("targets.json");
    let mut all = vec!["--rerun", "--save-spectra", saved.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sfl(&all, dir);
    check(matches!(out.status.code(), Some(0 | 3)), || show(&out))?;
    let spectra = cargo_sfl::spectra::Spectra::load(&saved)?;
    Ok(spectra
        .tests
        .iter()
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect())
}

/// self-dev-dep's example `demo` has a test: `--examples` and `--example demo` run it alone,
/// `--all-targets` runs it with every other target's tests, the default leaves it out, and
/// `--benches` runs the targets with `bench = true` (the library's tests).
fn examples_and_all_targets() -> Result {
    let tmp = copy_fixture("self-dev-dep");
    let dir = tmp.path();
    let demo = "fixture-selfdep::example/demo demo_counts_digits".to_string();
    let only_demo = BTreeSet::from([demo.clone()]);
    for args in [&["--examples"][..], &["--example", "demo"]] {
        let ran = tests_run(dir, args)?;
        check(ran == only_demo, || format!("{args:?} ran {ran:?}"))?;
    }
    let default = tests_run(dir, &[])?;
    check(!default.contains(&demo) && default.len() == 9, || {
        format!("the default ran {default:?}")
    })?;
    let all = tests_run(dir, &["--all-targets"])?;
    let mut expected = default.clone();
    expected.insert(demo);
    check(all == expected, || {
        format!("--all-targets ran {all:?}, expected {expected:?}")
    })?;
    // As with `cargo test --benches`: the library and binaries have `bench = true` by default,
    // so their tests run; the fixture has no benches/ target.
    let benches = tests_run(dir, &["--benches"])?;
    let lib: BTreeSet<String> = default
        .iter()
        .filter(|t| t.starts_with("fixture-selfdep tests::"))
        .cloned()
        .collect();
    check(benches == lib && lib.len() == 6, || {
        format!("--benches ran {benches:?}")
    })
}
