//! Results that must not be wrong or lost: flaky tests (`--retries`), a green run after a
//! failing one, timed-out tests, and a run interrupted midway.

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::reliability::{add_test, spectra};
use crate::support::{Result, check, check_exit, copy_fixture, edit_file, outcome_of, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("retries::flaky_tests_are_flagged", flaky_tests_are_flagged),
        Trial::test(
            "retries::green_run_keeps_the_failing_spectra",
            green_run_keeps_the_failing_spectra,
        ),
        Trial::test(
            "retries::timed_out_tests_are_not_failing_evidence",
            timed_out_tests_are_not_failing_evidence,
        ),
        Trial::test("retries::interrupted_run_resumes", interrupted_run_resumes),
        Trial::test(
            "retries::an_input_changed_since_the_interrupt_is_no_resume",
            an_input_changed_since_the_interrupt_is_no_resume,
        ),
        Trial::test(
            "retries::tests_that_fail_only_beside_others_pass_alone",
            tests_that_fail_only_beside_others_pass_alone,
        ),
        Trial::test(
            "retries::a_test_the_edit_makes_fail_beside_others_stays_failing",
            a_test_the_edit_makes_fail_beside_others_stays_failing,
        ),
        Trial::test(
            "retries::a_test_that_crashes_beside_others_keeps_its_run_alone",
            a_test_that_crashes_beside_others_keeps_its_run_alone,
        ),
    ]
}

/// The saved record of test `name`.
fn saved_test(dir: &Path, name: &str) -> Result<Value> {
    let saved = spectra(dir)?;
    let found = saved["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == name);
    found
        .cloned()
        .ok_or_else(|| format!("{name} not saved: {saved:#}").into())
}

/// The outcome of each of a saved test's runs (`attempts`), in order.
fn attempt_outcomes(test: &Value) -> Vec<&str> {
    test["attempts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a["outcome"].as_str().unwrap_or(""))
        .collect()
}

/// With `--retries 2`, a test that fails its first run and passes its second is flaky: still
/// failing in the spectra (with both runs recorded) and flagged in every format; a test that
/// fails every run is failed with all three runs recorded.
fn flaky_tests_are_flagged() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    // Fails the first time it runs (it leaves a marker), passes from then on; it runs the
    // fault's line too, so SARIF relates the results there to it.
    add_test(
        dir,
        "t6_flaky",
        "let marker = std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"ran-once\");\n        \
         let _ = minmax(2, 1, 3);\n        \
         if std::fs::metadata(&marker).is_err() {\n            std::fs::write(&marker, \"\").unwrap();\n            \
         panic!(\"first run\");\n        }",
    )?;
    let out = sfl(&["--retries", "2", "--format", "json"], dir);
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    check(
        report["summary"]["flaky"] == 1 && report["summary"]["failed"] == 4,
        || format!("{:#}", report["summary"]),
    )?;
    let t6 = saved_test(dir, "tests::t6_flaky")?;
    let runs = attempt_outcomes(&t6);
    check(
        t6["outcome"] == "failed" && t6["flaky"] == true && runs == ["failed", "passed"],
        || format!("{t6:#}"),
    )?;
    let t1 = saved_test(dir, "tests::t1")?;
    let runs = t1["attempts"].as_array().map_or(0, Vec::len);
    check(
        t1["outcome"] == "failed" && t1.get("flaky").is_none() && runs == 3,
        || format!("{t1:#}"),
    )?;
    let t4 = saved_test(dir, "tests::t4")?;
    check(t4.get("attempts").is_none(), || {
        format!("a passing test was retried: {t4:#}")
    })?;
    let json_t6 = report["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == "tests::t6_flaky");
    check(json_t6.is_some_and(|t| t["flaky"] == true), || {
        format!("{:#}", report["tests"])
    })?;

    // Every format says so, from the saved spectra.
    let human = sfl(&["report"], dir);
    check_exit(
        &human,
        0,
        &human.stdout,
        &[
            "1 flaky (passed on a retry, ranked as failing)",
            "(flaky: failed, then passed on retry 1)",
            "(did not pass in 3 runs)",
        ],
    )?;
    let sarif = sfl(&["report", "--format", "sarif"], dir);
    let log: Value = serde_json::from_slice(&sarif.stdout)?;
    check(
        log["runs"][0]["properties"]["flakyTests"] == serde_json::json!(["fixture-minmax tests::t6_flaky"]),
        || show(&sarif),
    )?;
    check(
        String::from_utf8_lossy(&sarif.stdout)
            .contains("Failing test (failed, flaky: passed on a retry) fixture-minmax tests::t6_flaky"),
        || show(&sarif),
    )?;
    let html_dir = dir.join("html");
    let html = sfl(&["report", "--format", "html", "-o", html_dir.to_str().unwrap()], dir);
    check(html.status.success(), || show(&html))?;
    let page = std::fs::read_to_string(html_dir.join("index.html"))?;
    check(
        page.contains("\"runs\":\"flaky: failed, then passed on retry 1\""),
        || "the page does not flag the flaky test".into(),
    )
}

/// A run in which no test fails (exit 3) does not replace the saved spectra of the last run
/// that had failures: it goes to `spectra-green.json`, the message names both, and `cargo sfl
/// report` still ranks the failing run.
fn green_run_keeps_the_failing_spectra() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let first = sfl(&["--format", "json"], dir);
    check(first.status.success(), || show(&first))?;
    let green = sfl(&["t4"], dir);
    check_exit(
        &green,
        3,
        &green.stderr,
        &[
            "no test failed: kept the last run with failures (",
            "3 tests not passing) at ",
            "spectra-green.json",
        ],
    )?;
    let kept = spectra(dir)?;
    check(kept["tests"].as_array().map_or(0, Vec::len) == 5, || {
        format!("{kept:#}")
    })?;
    let saved_green: Value = serde_json::from_slice(&std::fs::read(dir.join("target/sfl/spectra-green.json"))?)?;
    check(saved_green["tests"].as_array().map_or(0, Vec::len) == 1, || {
        format!("{saved_green:#}")
    })?;
    let report = sfl(&["report"], dir);
    check_exit(&report, 0, &report.stdout, &["3 failed"])?;
    // The next run with failures replaces the kept one and keeps the last green run (what
    // changed since failing tests last passed is told against it).
    let again = sfl(&["t1"], dir);
    check(again.status.success(), || show(&again))?;
    check(dir.join("target/sfl/spectra-green.json").exists(), || {
        "the last green run was dropped".into()
    })?;
    check(spectra(dir)?["tests"].as_array().map_or(0, Vec::len) == 1, || {
        "not replaced".into()
    })
}

/// On the hang fixture, the hanging test is reported as timed out, named in a warning with
/// the flags that change it, and left out of the failing set: every ranked line's ef counts
/// only the one test that failed. `--count-timeouts` ranks it as failing. Without
/// `--test-timeout` the timeout is 60 s times the instrumentation's slowdown.
fn timed_out_tests_are_not_failing_evidence() -> Result {
    let tmp = copy_fixture("hang");
    let dir = tmp.path();
    let out = sfl(&["--test-timeout", "3", "--format", "json"], dir);
    check_exit(
        &out,
        0,
        &out.stderr,
        &[
            "1 test timed out and is left out of the ranking",
            "fixture-hang tests::trim_indent_tab",
            "--count-timeouts",
            "raise --test-timeout",
        ],
    )?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let summary = &report["summary"];
    check(summary["timed_out"] == 1 && summary["failed"] == 1, || {
        format!("{summary:#}")
    })?;
    let hang = saved_test(dir, "tests::trim_indent_tab")?;
    check(hang["outcome"] == "timed-out", || format!("{hang:#}"))?;
    let max_ef = |report: &Value| {
        report["rankings"][0]["units"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u["ef"].as_f64())
            .fold(0.0, f64::max)
    };
    check(max_ef(&report) == 1.0, || {
        format!(
            "a timed-out test counted as failing: {:#}",
            report["rankings"][0]["units"][0]
        )
    })?;
    let human = sfl(&["report"], dir);
    check_exit(
        &human,
        0,
        &human.stdout,
        &["Timed out (1), left out of the ranking", "timed out after 3s"],
    )?;
    let counted = sfl(&["report", "--count-timeouts", "--format", "json"], dir);
    check(counted.status.success(), || show(&counted))?;
    let counted: Value = serde_json::from_slice(&counted.stdout)?;
    check(counted["summary"]["failed"] == 2 && max_ef(&counted) == 2.0, || {
        format!("{:#}", counted["summary"])
    })?;
    // The default timeout allows for instrumentation (a passing test, so exit 3).
    let default = sfl(&["word_count"], dir);
    check_exit(
        &default,
        3,
        &default.stderr,
        &["timeout 240s: 60s under cargo test x4 for instrumentation"],
    )
}

/// The spectra with durations zeroed (the one thing two runs of the same tests differ in).
fn without_durations(mut spectra: Value) -> Value {
    for t in spectra["tests"].as_array_mut().into_iter().flatten() {
        t["duration_ms"] = 0.into();
    }
    // What the run saw of the workspace before it built (the slow tests' marker files among
    // it), for the next run's selection: no result.
    spectra["snapshot"] = Value::Null;
    spectra
}

/// SIGINT midway through a run of slow tests: the finished tests are kept; the next run says
/// it resumes, runs only the tests that had not finished (each slow test appends a line to
/// its own marker file when it ends, in the target directory, which is no input of the tests:
/// every file has one line after both runs), and saves exactly the spectra of an
/// uninterrupted run (`--rerun`, which runs every test again).
fn interrupted_run_resumes() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let slow = ["t6_slow_a", "t6_slow_b", "t6_slow_c", "t6_slow_d"];
    let lines = add_slow_tests(dir, &slow, "check(1, 2, 3);")?;
    interrupt_after_the_first(dir, || lines(slow[0]) > 0)?;
    let finished: Vec<usize> = slow.iter().map(|n| lines(n)).collect();
    let ran_before = finished.iter().sum::<usize>();
    check(ran_before >= 1 && ran_before < slow.len(), || {
        format!("slow tests finished before the interrupt: {finished:?}")
    })?;

    let resumed = sfl(&["-j", "1", "--format", "json"], dir);
    check(resumed.status.success(), || show(&resumed))?;
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    let ran_first = 5 + ran_before;
    let expect = format!("Resuming {ran_first} of 9 tests already ran (an interrupted run ");
    check(
        stderr.contains(&expect) && stderr.contains(&format!("Running {} tests", 9 - ran_first)),
        || format!("expected {expect:?}\n{}", show(&resumed)),
    )?;
    check(slow.iter().all(|n| lines(n) == 1), || {
        format!("runs per slow test: {:?}", slow.map(&lines))
    })?;
    check(!dir.join("target/sfl/journal").read_dir()?.any(|_| true), || {
        "a completed run left its journal".into()
    })?;
    let after_resume = without_durations(spectra(dir)?);

    let fresh = sfl(&["-j", "1", "--rerun"], dir);
    check(fresh.status.success(), || show(&fresh))?;
    check(!String::from_utf8_lossy(&fresh.stderr).contains("Resuming"), || {
        show(&fresh)
    })?;
    check(slow.iter().all(|n| lines(n) == 2), || {
        format!("--rerun: runs per slow test: {:?}", slow.map(&lines))
    })?;
    let uninterrupted = without_durations(spectra(dir)?);
    check(after_resume == uninterrupted, || {
        format!("resumed:\n{after_resume:#}\nuninterrupted:\n{uninterrupted:#}")
    })
}

/// Adds the tests `names` to the fixture in `dir`, each sleeping 1.5 s, doing `body`, then
/// appending a line to its marker file in the target directory; gives the count of a test's
/// lines so far.
fn add_slow_tests(dir: &Path, names: &[&str], body: &str) -> Result<impl Fn(&str) -> usize> {
    let markers = dir.join("target");
    std::fs::create_dir_all(&markers)?;
    for name in names {
        let marker = markers.join(format!("ran-{name}"));
        add_test(
            dir,
            name,
            &format!(
                "std::thread::sleep(std::time::Duration::from_millis(1500));\n        {body}\n        \
                 use std::io::Write;\n        let mut f = std::fs::OpenOptions::new().create(true).append(true).open({marker:?}).unwrap();\n        \
                 writeln!(f, \"ran\").unwrap();"
            ),
        )?;
    }
    Ok(move |name: &str| std::fs::read_to_string(markers.join(format!("ran-{name}"))).map_or(0, |s| s.lines().count()))
}

/// Starts `cargo sfl -j 1` in `dir` and sends it SIGINT once `finished` (the first slow test
/// has ended; the second is then running): it must exit 130, keep the finished tests in its
/// journal and save no spectra.
fn interrupt_after_the_first(dir: &Path, finished: impl Fn() -> bool) -> Result {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let mut child = crate::support::sfl_command(dir)
        .args(["-j", "1", "-v"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let reader = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(std::result::Result::ok)
            .collect::<Vec<_>>()
            .join("\n")
    });
    let since = std::time::Instant::now();
    while !finished() && since.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    Command::new("kill").args(["-INT", &child.id().to_string()]).status()?;
    let code = child.wait()?.code();
    let said = reader.join().unwrap_or_default();
    check(
        code == Some(130) && said.contains("the tests that finished are kept in"),
        || format!("exit {code:?}\n{said}"),
    )?;
    check(!dir.join("target/sfl/spectra.json").exists(), || {
        "an interrupted run saved spectra".into()
    })
}

/// An interrupted run, then an edit of a data file the slow tests read (no build sees it): the
/// next run does not resume, since the finished tests read the file as it was, and every slow
/// test fails as under `cargo test`. Before, the finished ones were resumed as passed.
fn an_input_changed_since_the_interrupt_is_no_resume() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    std::fs::write(dir.join("data.txt"), "ok")?;
    let slow = ["t7_reads_a", "t7_reads_b", "t7_reads_c"];
    let read =
        "assert_eq!(std::fs::read_to_string(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/data.txt\")).unwrap(), \"ok\");";
    let lines = add_slow_tests(dir, &slow, read)?;
    interrupt_after_the_first(dir, || lines(slow[0]) > 0)?;
    std::fs::write(dir.join("data.txt"), "bad")?;
    let next = sfl(&["-j", "1", "--format", "json"], dir);
    check(next.status.success(), || show(&next))?;
    check(!String::from_utf8_lossy(&next.stderr).contains("Resuming"), || {
        show(&next)
    })?;
    let outcome = |name: &str| outcome_of(&next, &format!("tests::{name}")).unwrap_or_default();
    check(slow.iter().all(|n| outcome(n) == "failed"), || {
        format!("outcomes: {:?}\n{}", slow.map(outcome), show(&next))
    })
}

/// Two tests that share a directory between processes (named by a per-process counter, as
/// walkdir's tests name theirs: under `cargo test` the one process gives each its own; each
/// counts the files there while both are written) fail when they run at once; run again alone, each passes, and is ranked as passing with both runs
/// recorded. With `--no-alone-rerun` they stay failed, which shows the collision is real.
fn tests_that_fail_only_beside_others_pass_alone() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    for name in ["shared_a", "shared_b"] {
        add_test(
            dir,
            name,
            &format!(
                "static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);\n        \
                 let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);\n        \
                 let shared = std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"shared\").join(n.to_string());\n        \
                 std::fs::create_dir_all(&shared).unwrap();\n        \
                 std::fs::write(shared.join(\"{name}\"), \"\").unwrap();\n        \
                 std::thread::sleep(std::time::Duration::from_millis(1000));\n        \
                 let files = std::fs::read_dir(&shared).unwrap().count();\n        \
                 std::thread::sleep(std::time::Duration::from_millis(1000));\n        \
                 std::fs::remove_file(shared.join(\"{name}\")).unwrap();\n        \
                 check(3, 2, 1);\n        \
                 assert_eq!(files, 1, \"another test wrote into {{}}\", shared.display());"
            ),
        )?;
    }
    let out = sfl(&["-j", "2", "--format", "json", "shared"], dir);
    check_exit(
        &out,
        3,
        &out.stderr,
        &["Alone ran 2 failing tests again, one at a time with no other test running: "],
    )?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    check(
        report["summary"]["passed_alone"] == 2 && report["summary"]["failed"] == 0,
        || format!("{:#}", report["summary"]),
    )?;
    for name in ["tests::shared_a", "tests::shared_b"] {
        let saved = saved_test(dir, name)?;
        let runs = attempt_outcomes(&saved);
        check(
            saved["outcome"] == "passed" && saved["passed_alone"] == true && runs == ["failed", "passed"],
            || format!("{saved:#}"),
        )?;
    }
    let human = sfl(&["report"], dir);
    check_exit(
        &human,
        3,
        &human.stdout,
        &[
            "2 failed only beside other tests and passed alone (ranked as passing",
            "fixture-minmax tests::shared_a, fixture-minmax tests::shared_b; `-j 1` runs every test alone.",
        ],
    )?;

    // An edit of code they ran: they passed in the last run only alone, so they share
    // something still, and pass alone again ranked as passing.
    edit_file(
        &dir.join("src/lib.rs"),
        "    let mut least = in1;\n",
        "    let mut least = in1;\n    let _unused = 0;\n",
    )?;
    let out = sfl(&["-j", "2", "--format", "json", "shared"], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    check(report["summary"]["passed_alone"] == 2, || {
        format!("{:#}", report["summary"])
    })?;

    let raw = sfl(
        &["-j", "2", "--rerun", "--no-alone-rerun", "--format", "json", "shared"],
        dir,
    );
    check(raw.status.code() == Some(0), || show(&raw))?;
    let report: Value = serde_json::from_slice(&raw.stdout)?;
    check(
        report["summary"]["failed"] == 2 && report["summary"].get("passed_alone").is_none(),
        || format!("{:#}", report["summary"]),
    )
}

/// Tests that passed beside others in the last run, and fail beside each other after an edit
/// of code they ran (it made them share a directory), pass alone: the edit made them fail, only
/// not every time, so they stay failing as flaky tests and the edited function is ranked (a
/// helper's rayon-core, whose ordering tests a pool of two threads fails at random: before,
/// they were ranked as passing and the edited line came last of 66).
fn a_test_the_edit_makes_fail_beside_others_stays_failing() -> Result {
    let lib_rs = "/// How many tests note at once.\n\
                  pub fn note(name: &str) -> usize {\n\
                  \x20   let _ = name;\n\
                  \x20   1\n\
                  }\n\
                  #[cfg(test)]\nmod tests {\n\
                  \x20   fn run(name: &str) {\n\
                  \x20       std::thread::sleep(std::time::Duration::from_millis(300));\n\
                  \x20       assert_eq!(super::note(name), 1);\n\
                  \x20   }\n\
                  \x20   #[test] fn a() { run(\"a\"); }\n\
                  \x20   #[test] fn b() { run(\"b\"); }\n\
                  \x20   #[test] fn c() { assert_eq!(2 + 2, 4); }\n\
                  }\n";
    let tmp = crate::support::lib_crate("fixture-edit-beside", "", lib_rs)?;
    let dir = tmp.path();
    let out = sfl(&["-j", "2"], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(
        &dir.join("src/lib.rs"),
        "    let _ = name;\n    1\n",
        "    let dir = std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"target/notes\");\n    \
         std::fs::create_dir_all(&dir).unwrap();\n    std::fs::write(dir.join(name), \"\").unwrap();\n    \
         std::thread::sleep(std::time::Duration::from_millis(1000));\n    \
         let n = std::fs::read_dir(&dir).unwrap().count();\n    \
         std::thread::sleep(std::time::Duration::from_millis(1000));\n    \
         std::fs::remove_file(dir.join(name)).unwrap();\n    n\n",
    )?;
    let out = sfl(&["-j", "2", "--format", "json"], dir);
    check_exit(
        &out,
        0,
        &out.stderr,
        &["passed alone but ran code the edit touched and passed before it: ranked as failing, as flaky"],
    )?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    check(
        report["summary"]["flaky"] == 2
            && report["summary"]["failed"] == 2
            && report["summary"].get("passed_alone").is_none(),
        || format!("{:#}", report["summary"]),
    )?;
    for name in ["tests::a", "tests::b"] {
        let saved = saved_test(dir, name)?;
        check(
            saved["outcome"] == "failed" && saved["flaky"] == true && attempt_outcomes(&saved) == ["failed", "passed"],
            || format!("{saved:#}"),
        )?;
    }
    Ok(())
}

/// A test that fails whatever runs beside it, but the way it fails depends on another test's
/// files (ripgrep's `custom_ignore`: its temporary directory, named by a per-process counter,
/// shared with a test running at the same time; it aborted beside it and failed plainly
/// alone). Run again alone it fails another way: that run, with no other test beside it, is
/// kept, with both among its attempts. Before, the crash beside the other test was kept.
fn a_test_that_crashes_beside_others_keeps_its_run_alone() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let shared = "let shared = std::path::Path::new(env!(\"CARGO_MANIFEST_DIR\")).join(\"shared\");\n        \
                  std::fs::create_dir_all(&shared).unwrap();\n        ";
    add_test(
        dir,
        "shared_writer",
        &format!(
            "{shared}std::fs::write(shared.join(\"writer\"), \"\").unwrap();\n        \
             std::thread::sleep(std::time::Duration::from_millis(1500));\n        \
             std::fs::remove_file(shared.join(\"writer\")).unwrap();"
        ),
    )?;
    add_test(
        dir,
        "shared_reader",
        &format!(
            "{shared}std::thread::sleep(std::time::Duration::from_millis(500));\n        \
             if shared.join(\"writer\").exists() {{\n            std::process::abort();\n        }}\n        \
             check(3, 2, 1);\n        panic!(\"fails alone too\");"
        ),
    )?;
    let out = sfl(&["-j", "2", "--format", "json", "shared"], dir);
    check_exit(
        &out,
        0,
        &out.stderr,
        &["1 failed another way alone (the run alone is kept)"],
    )?;
    let saved = saved_test(dir, "tests::shared_reader")?;
    check(
        saved["outcome"] == "failed"
            && saved["passed_alone"] != true
            && attempt_outcomes(&saved) == ["crashed", "failed"]
            && saved["message"].as_str().is_some_and(|m| m.contains("fails alone too")),
        || format!("{saved:#}\n{}", show(&out)),
    )
}
