//! Runs that end without a ranking (nothing failed, nothing matched, the build broke, the saved
//! spectra are corrupt) and the exit code and message each gives; and `report` re-ranking good
//! saved spectra to the same JSON.

use libtest_mimic::Trial;

use crate::support::{Result, check, check_exit, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("exit::no_failing_tests", no_failing_tests),
        Trial::test("exit::no_tests_match", no_tests_match),
        Trial::test("exit::build_failure_shows_diagnostics", build_failure_shows_diagnostics),
        Trial::test("report::rereads_saved_spectra", report_rereads_saved_spectra),
    ]
}

/// A test filter that keeps only passing tests: exit code 3 and a coverage summary.
fn no_failing_tests() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["t4"], tmp.path());
    check_exit(&out, 3, &out.stdout, &["No failing tests", "Coverage:"])
}

/// A filter that matches no test: exit code 4 and a message.
fn no_tests_match() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["no_such_test"], tmp.path());
    check_exit(&out, 4, &out.stderr, &["no tests matched"])
}

/// A fixture that does not compile: exit code 101 and the compiler's diagnostics.
fn build_failure_shows_diagnostics() -> Result {
    let tmp = copy_fixture("minmax");
    std::fs::write(tmp.path().join("src/lib.rs"), "pub fn broken( {}\n")?;
    let out = sfl(&[], tmp.path());
    check_exit(&out, 101, &out.stderr, &["error", "instrumented build failed"])
}

/// `cargo sfl report` re-ranks the saved spectra to the same JSON; a corrupt file is refused.
fn report_rereads_saved_spectra() -> Result {
    let tmp = copy_fixture("minmax");
    let first = sfl(&["--format", "json", "-m", "dstar"], tmp.path());
    check(first.status.success(), || show(&first))?;
    let again = sfl(&["report", "--format", "json", "-m", "dstar"], tmp.path());
    check(again.status.success(), || show(&again))?;
    check(first.stdout == again.stdout, || {
        format!("{}\nvs\n{}", show(&first), show(&again))
    })?;
    let spectra = tmp.path().join("target/sfl/spectra.json");
    std::fs::write(&spectra, "{\"schema\": \"cargo-sfl-spectra/v1\", \"tests\": 3}")?;
    let bad = sfl(&["report"], tmp.path());
    check_exit(&bad, 5, &bad.stderr, &["malformed"])
}
