//! Runs that end without a ranking (nothing failed, nothing matched, the build broke, the saved
//! spectra are corrupt) and the exit code and message each gives; and `report` re-ranking good
//! saved spectra to what the run printed; and a run whose stderr is closed.

use std::path::Path;

use libtest_mimic::Trial;

use crate::support::{Result, check, check_exit, copy_fixture, lib_crate, report, sfl, sfl_command, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("exit::no_failing_tests", no_failing_tests),
        Trial::test("exit::no_tests_match", no_tests_match),
        Trial::test("exit::build_failure_shows_diagnostics", build_failure_shows_diagnostics),
        Trial::test("report::rereads_saved_spectra", report_rereads_saved_spectra),
        Trial::test(
            "exit::selection_errors_before_building",
            selection_errors_before_building,
        ),
        Trial::test("exit::crate_without_tests", crate_without_tests),
        Trial::test(
            "exit::failing_tests_ran_only_test_code",
            failing_tests_ran_only_test_code,
        ),
        Trial::test("exit::no_line_in_every_failing_test", no_line_in_every_failing_test),
        Trial::test("exit::version_run_directly", version_run_directly),
        Trial::test("exit::a_closed_stderr_loses_nothing", a_closed_stderr_loses_nothing),
    ]
}

/// A closed stderr (`cargo sfl -v 2>&1 | head -2`) loses the status lines and nothing else: the
/// run finishes, exits as it would, prints its report and saves its spectra. It used to hang
/// after the first test's line (a worker's progress line panicked, and the progress ticker
/// waited for an end that never came) or exit with 101 and save nothing.
fn a_closed_stderr_loses_nothing() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let (reader, writer) = std::io::pipe()?;
    drop(reader);
    let stdout = std::fs::File::create(dir.join("report.txt"))?;
    let mut child = sfl_command(dir)
        .args(["-v", "--color", "never"])
        .stdout(stdout)
        .stderr(writer)
        .spawn()?;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(600);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            return Err("cargo sfl with a closed stderr was still running after 10 minutes".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let printed = std::fs::read_to_string(dir.join("report.txt"))?;
    check(status.success(), || format!("status {status:?}\n{printed}"))?;
    let again = report(&[], dir);
    check(again.status.success(), || show(&again))?;
    check(
        printed.as_bytes() == again.stdout && printed.contains("src/lib.rs"),
        || format!("the run printed:\n{printed}\n`report` printed:\n{}", show(&again)),
    )
}

/// The binary run directly (`cargo-sfl --version`, as install scripts and version checks do)
/// answers as `cargo sfl --version` does.
fn version_run_directly() -> Result {
    let tmp = tempfile::tempdir()?;
    let direct = std::process::Command::new(env!("CARGO_BIN_EXE_cargo-sfl"))
        .arg("--version")
        .output()?;
    let through_cargo = sfl(&["--version"], tmp.path());
    let expected = format!("cargo-sfl {}\n", env!("CARGO_PKG_VERSION"));
    check(
        direct.status.success() && String::from_utf8_lossy(&direct.stdout) == expected,
        || show(&direct),
    )?;
    check(through_cargo.stdout == direct.stdout, || show(&through_cargo))
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
    check_exit(&out, 4, &out.stderr, &["no tests matched the filter `no_such_test`"])
}

/// A package that is not a member, and a measure `--no-edges` cannot serve, are refused as
/// usage errors (exit 2) before anything is built: no target dir appears.
fn selection_errors_before_building() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["-p", "nosuchpkg"], tmp.path());
    check_exit(
        &out,
        2,
        &out.stderr,
        &["no package `nosuchpkg`", "members: fixture-minmax"],
    )?;
    let out = sfl(&["-m", "cp", "--no-edges"], tmp.path());
    check_exit(&out, 2, &out.stderr, &["cp measure needs control-flow edge profiles"])?;
    let out = sfl(&["--format", "html"], tmp.path());
    check_exit(&out, 2, &out.stderr, &["--format html needs --output DIR"])?;
    let out = sfl(&["eval", "--faults", "faults.toml", "--format", "sarif"], tmp.path());
    check_exit(&out, 2, &out.stderr, &["cargo sfl eval writes --format human or json"])?;
    check(!tmp.path().join("target").exists(), || {
        format!("something was built\n{}", show(&out))
    })
}

/// A crate with no tests at all says so (not "no tests matched"): exit 4.
fn crate_without_tests() -> Result {
    let tmp = lib_crate("notests", "", "pub fn f() -> u8 { 1 }\n")?;
    let dir = tmp.path();
    let out = sfl(&["--no-edges"], dir);
    check_exit(&out, 4, &out.stderr, &["no tests in this crate"])?;
    // Only #[ignore]d tests: say so, and how to run them.
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn f() -> u8 { 1 }\n#[test]\n#[ignore]\nfn slow() { assert_eq!(f(), 1); }\n",
    )?;
    let out = sfl(&["--no-edges"], dir);
    check_exit(
        &out,
        4,
        &out.stderr,
        &["the 1 tests selected are all #[ignore]d", "--include-ignored"],
    )
}

/// A failing test that runs only test code leaves nothing to rank: an error saying so and how to
/// rank test code (exit 7), not an empty report; with `--include-test-code` it is ranked.
fn failing_tests_ran_only_test_code() -> Result {
    let tmp = lib_crate(
        "onlytests",
        "",
        "pub fn f() -> u8 { 1 }\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn wrong() {\n        let x = 1;\n        \
         assert_eq!(x, 2);\n    }\n    #[test]\n    fn right() {\n        assert_eq!(super::f(), 1);\n    }\n}\n",
    )?;
    let dir = tmp.path();
    let out = sfl(&["--no-edges", "--no-doctests"], dir);
    check_exit(
        &out,
        7,
        &out.stderr,
        &["the failing tests ran only test code", "--include-test-code"],
    )?;
    // The report claims nothing about where a single fault must be, and shows no empty table.
    let report = String::from_utf8_lossy(&out.stdout);
    check(
        report.contains("No failing test ran one of these lines: there is nothing to rank")
            && !report.contains("are run by every failing test")
            && !report.contains("top 0 of 0"),
        || show(&out),
    )?;
    let out = sfl(&["report", "--include-test-code"], dir);
    check_exit(&out, 0, &out.stdout, &["src/lib.rs"])?;
    // A failing doctest that calls nothing of the crate: its profile was read, so no process
    // died (as the message said before: helper report).
    let tmp = lib_crate(
        "onlydoc",
        "",
        "/// Two.\n///\n/// ```\n/// assert_eq!(1 + 1, 3);\n/// ```\npub fn f() -> u8 { 2 }\n\n#[test]\nfn two() {\n    assert_eq!(f(), 2);\n}\n",
    )?;
    let out = sfl(&["--no-edges"], tmp.path());
    check_exit(
        &out,
        7,
        &out.stderr,
        &[
            "the failing tests ran none of this workspace's code but their own",
            "a doctest",
        ],
    )?;
    check(
        !String::from_utf8_lossy(&out.stderr).contains("did their processes die"),
        || show(&out),
    )
}

/// Two failing tests that share no line (two faults): the header says no line is in every
/// failing test's row and why that can be, not "0 lines are run by every failing test: if there
/// is a single fault, it is one of them" (serde, a fault in a proc macro).
fn no_line_in_every_failing_test() -> Result {
    let tmp = lib_crate(
        "twofaults",
        "",
        "pub fn f() -> u8 {\n    2\n}\n\npub fn g() -> u8 {\n    3\n}\n\n#[cfg(test)]\nmod tests {\n    \
         #[test]\n    fn f_is_one() {\n        assert_eq!(super::f(), 1);\n    }\n    \
         #[test]\n    fn g_is_one() {\n        assert_eq!(super::g(), 1);\n    }\n}\n",
    )?;
    let out = sfl(&["--no-edges", "--no-doctests"], tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let report = String::from_utf8_lossy(&out.stdout);
    check(
        report.contains("No line is run by every failing test: more than one fault")
            && !report.contains("if there is a single fault, it is one of them"),
        || show(&out),
    )
}

/// A fixture that does not compile: exit code 101 and the compiler's diagnostics.
fn build_failure_shows_diagnostics() -> Result {
    let tmp = copy_fixture("minmax");
    std::fs::write(tmp.path().join("src/lib.rs"), "pub fn broken( {}\n")?;
    let out = sfl(&[], tmp.path());
    check_exit(&out, 101, &out.stderr, &["error", "instrumented build failed"])
}

/// `cargo sfl report` re-ranks the saved spectra to what the run printed, and `eval --spectra`
/// evaluates them as `eval` with a run does: for JSON and for each report that trials read
/// from a fixture's shared run instead of printing it from a run of their own (the README's
/// demo, the human snapshot's report, the SARIF trial's, the HTML page, the hand-computed
/// evaluation). An output that cannot be written is refused, and so is a corrupt file.
fn report_rereads_saved_spectra() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let manifest = dir.join("Cargo.toml");
    for args in [
        &["--format", "json", "-m", "dstar"][..],
        &crate::docs::demo(manifest.to_str().unwrap()),
        crate::formats::HUMAN_TOP_5,
        crate::formats::SARIF_TOP_3,
    ] {
        let run = sfl(args, dir);
        check(run.status.success(), || show(&run))?;
        let again = report(args, dir);
        check(again.status.success(), || show(&again))?;
        check(run.stdout == again.stdout, || {
            format!("{args:?}:\n{}\nvs\n{}", show(&run), show(&again))
        })?;
    }
    html_and_eval_reread(dir)?;
    // An output that cannot be written is an I/O error naming the path (exit 74).
    let missing = dir.join("no/such/dir/report.json");
    let out = sfl(&["report", "-o", missing.to_str().unwrap()], dir);
    check_exit(
        &out,
        74,
        &out.stderr,
        &["cannot write the report to", "no/such/dir/report.json"],
    )?;
    let under_a_file = dir.join("Cargo.toml/page");
    let out = sfl(
        &["report", "--format", "html", "-o", under_a_file.to_str().unwrap()],
        dir,
    );
    check_exit(
        &out,
        74,
        &out.stderr,
        &["cannot write the HTML report to", "Cargo.toml/page"],
    )?;
    // So is a full standard output (`> /dev/full`), and the reason is said once.
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full")?;
    let out = sfl_command(dir).arg("report").stdout(full).output()?;
    check_exit(
        &out,
        74,
        &out.stderr,
        &["cannot write the report to standard output: No space left on device"],
    )?;
    let said = String::from_utf8_lossy(&out.stderr);
    check(said.matches("No space left").count() == 1, || show(&out))?;

    let spectra = dir.join("target/sfl/spectra.json");
    std::fs::write(&spectra, "{\"schema\": \"cargo-sfl-spectra/v1\", \"tests\": 3}")?;
    let bad = sfl(&["report"], dir);
    check_exit(&bad, 5, &bad.stderr, &["malformed"])
}

/// In `dir`, a copy of minmax: the HTML page a run writes is the one `report` writes of its
/// spectra, and `eval` with a run gives the hand-computed evaluation's report that `eval
/// --spectra` gives of the spectra the run saved.
fn html_and_eval_reread(dir: &Path) -> Result {
    let (by_run, by_report) = (dir.join("page-of-the-run"), dir.join("page-of-the-report"));
    let run = sfl(&["--format", "html", "--output", by_run.to_str().unwrap()], dir);
    check(run.status.success(), || show(&run))?;
    let again = report(&["--format", "html", "--output", by_report.to_str().unwrap()], dir);
    check(again.status.success(), || show(&again))?;
    let (page, page_again) = (
        std::fs::read(by_run.join("index.html"))?,
        std::fs::read(by_report.join("index.html"))?,
    );
    check(page == page_again, || {
        "the run's HTML page differs from the report's".into()
    })?;

    let faults = dir.join("faults.toml");
    let eval = [
        &["eval", "--faults", faults.to_str().unwrap()][..],
        &crate::eval::HAND_COMPUTED,
    ]
    .concat();
    let run = sfl(&eval, dir);
    check(run.status.success(), || show(&run))?;
    let spectra = dir.join("target/sfl/spectra.json");
    let from_saved = sfl(&[&eval[..], &["--spectra", spectra.to_str().unwrap()]].concat(), dir);
    check(from_saved.stdout == run.stdout, || {
        format!("{}\nvs\n{}", show(&run), show(&from_saved))
    })
}
