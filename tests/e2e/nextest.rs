//! The project's nextest setup, honoured: on `fixtures/nextest-config` (tests correct only under
//! its `.config/nextest.toml`) cargo sfl reports what `cargo nextest run` reports, kills and
//! retries as its overrides say, and `-E` selects exactly what `cargo nextest list -E` lists.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, check_exit, copy_fixture, edit_file, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "nextest::same_outcomes_as_cargo_nextest",
            same_outcomes_as_cargo_nextest,
        ),
        Trial::test("nextest::overrides_time_out_and_retry", overrides_time_out_and_retry),
        Trial::test(
            "nextest::one_test_process_at_a_time_with_j1",
            one_test_process_at_a_time_with_j1,
        ),
        Trial::test("junit::read_by_a_junit_reader", junit_read_by_a_junit_reader),
        Trial::test(
            "nextest::filtersets_select_what_nextest_lists",
            filtersets_select_what_nextest_lists,
        ),
        Trial::test(
            "nextest::unhonoured_keys_and_bad_input_are_named",
            unhonoured_keys_and_bad_input_are_named,
        ),
    ]
}

/// `cargo nextest ARGS` in `dir` (cargo-nextest must be installed: a missing one fails the trial).
fn nextest(args: &[&str], dir: &Path) -> Result<std::process::Output> {
    let out = Command::new("cargo")
        .arg("nextest")
        .args(args)
        .current_dir(dir)
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(!stderr.contains("no such command"), || {
        "cargo-nextest is not installed (cargo install cargo-nextest)".into()
    })?;
    Ok(out)
}

/// Each test's outcome as cargo sfl saved it (`binary name` → outcome, `flaky` appended).
fn sfl_outcomes(spectra: &Value) -> BTreeMap<String, String> {
    spectra["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let mut outcome = t["outcome"].as_str().unwrap_or("").to_string();
            if t["flaky"] == true {
                outcome = "flaky".into();
            }
            (
                format!(
                    "{} {}",
                    t["binary"].as_str().unwrap_or(""),
                    t["name"].as_str().unwrap_or("")
                ),
                outcome,
            )
        })
        .collect()
}

/// Each test's final outcome from `cargo nextest run --status-level all` (its status lines:
/// `PASS [ 0.01s] (1/8) BINARY NAME`, `TRY 2 PASS` for a retry that passed).
fn nextest_outcomes(stderr: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in stderr.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(bracket) = words.iter().position(|w| w.starts_with('[')) else {
            continue;
        };
        let status = match words[..bracket] {
            ["PASS"] => "passed",
            ["FAIL"] => "failed",
            ["TIMEOUT"] => "timed-out",
            ["TRY", _, "PASS"] => "flaky",
            _ => continue,
        };
        if let [.., binary, name] = words[..] {
            out.insert(format!("{binary} {name}"), status.to_string());
        }
    }
    out
}

/// Runs cargo sfl in `dir` with `args`, saving the spectra to `dir/out.json`; returns them.
fn sfl_spectra(dir: &Path, args: &[&str]) -> Result<(std::process::Output, Value)> {
    let saved = dir.join("out.json");
    let _ = std::fs::remove_file(&saved);
    let mut all = args.to_vec();
    all.extend(["--save-spectra", saved.to_str().unwrap(), "--format", "json"]);
    let out = sfl(&all, dir);
    check(saved.exists(), || show(&out))?;
    let spectra = serde_json::from_slice(&std::fs::read(&saved)?)?;
    Ok((out, spectra))
}

/// With `-j 2`, the two tests sharing a file would run at once and one would fail; their test
/// group keeps them apart, so cargo sfl reports exactly nextest's outcomes (the injected
/// fault's test failing under both) and ranks the fault first.
fn same_outcomes_as_cargo_nextest() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    let out = nextest(
        &[
            "run",
            "-j",
            "2",
            "--status-level",
            "all",
            "--final-status-level",
            "none",
        ],
        dir,
    )?;
    let expected = nextest_outcomes(&String::from_utf8_lossy(&out.stderr));
    check(expected.len() == 8, || {
        format!("nextest ran {expected:?}\n{}", show(&out))
    })?;
    let (out, spectra) = sfl_spectra(dir, &["-j", "2"])?;
    check(out.status.success(), || show(&out))?;
    let got = sfl_outcomes(&spectra);
    check(got == expected, || {
        format!("cargo sfl: {got:#?}\ncargo nextest: {expected:#?}")
    })?;
    check(got["fixture-nextest-config::shared a_writer"] == "passed", || {
        format!("{got:#?}")
    })?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let top = &report["rankings"][0]["units"][0];
    check(top["line"] == 13 && top["rank"] == 1.0, || format!("{top:#}"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("Nextest profile default from .config/nextest.toml: 1 test group, 3 overrides"),
        || show(&out),
    )
}

/// Without their test group, the two tests sharing a file pass only one at a time: with `-j 1`
/// a test forked from a server waits for the other's process to end, even with the next test
/// already queued at the server (the scheduler hands out twice as many tests as run at once).
fn one_test_process_at_a_time_with_j1() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    edit_file(&dir.join(".config/nextest.toml"), "test-group = 'shared-file'", "")?;
    let (out, spectra) = sfl_spectra(dir, &["-j", "1", "-E", "binary(shared)"])?;
    let got = sfl_outcomes(&spectra);
    check(got.len() == 2 && got.values().all(|o| *o == "passed"), || {
        format!("{got:#?}\n{}", show(&out))
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("(1 at a time") && stderr.contains("2 test runs on"),
        || show(&out),
    )
}

/// The override's `slow-timeout` (1 s, terminate after 2) kills the slow test at 2 s, not
/// cargo sfl's instrumentation timeout; the override's `retries = 1` flags the flaky test;
/// `--retries 0` given on the command line wins over it.
fn overrides_time_out_and_retry() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    let (out, spectra) = sfl_spectra(dir, &["-j", "2"])?;
    let test = |name: &str| {
        spectra["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    let slow = test("slow_test");
    let ms = slow["duration_ms"].as_u64().unwrap_or(0);
    check(slow["outcome"] == "timed-out" && (2000..4000).contains(&ms), || {
        format!("{slow:#}\n{}", show(&out))
    })?;
    // The Running line says so (it named cargo sfl's own timeout alone).
    check(
        String::from_utf8_lossy(&out.stderr).contains("; by nextest overrides: 1 test 2s)"),
        || show(&out),
    )?;
    let flaky = test("flaky_once");
    check(
        flaky["flaky"] == true && flaky["attempts"].as_array().map_or(0, Vec::len) == 2,
        || format!("{flaky:#}"),
    )?;
    let (out, spectra) = sfl_spectra(dir, &["-j", "2", "--retries", "0", "-E", "test(flaky)"])?;
    let runs = spectra["tests"][0]
        .get("attempts")
        .map_or(1, |a| a.as_array().map_or(0, Vec::len));
    check(
        sfl_outcomes(&spectra).values().collect::<Vec<_>>() == ["failed"] && runs == 1,
        || format!("{spectra:#}\n{}", show(&out)),
    )
}

/// `--junit FILE` and the nextest profile's `junit.path` write the run as JUnit XML that a JUnit
/// reader (Python's junitparser, installed by .ci/setup) reads: every test, failures typed as
/// nextest types them, the flaky test passing with its failed run as a `flakyFailure`.
fn junit_read_by_a_junit_reader() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    let config = dir.join(".config/nextest.toml");
    let mut text = std::fs::read_to_string(&config)?;
    text.push_str("\n[profile.ci]\njunit = { path = \"junit.xml\" }\n");
    std::fs::write(&config, text)?;
    let (out, spectra) = sfl_spectra(dir, &["-j", "2", "--nextest-profile", "ci"])?;
    let by_profile = dir.join("target/nextest/ci/junit.xml");
    check(by_profile.is_file(), || {
        format!("no {}\n{}", by_profile.display(), show(&out))
    })?;
    let flag = dir.join("reports/run.xml");
    let (out, _) = sfl_spectra(dir, &["-j", "2", "--junit", flag.to_str().unwrap()])?;
    check(flag.is_file(), || show(&out))?;
    let tests = spectra["tests"].as_array().map_or(0, Vec::len);
    for xml in [&by_profile, &flag] {
        let read = junit_reader(xml)?;
        let lines: std::collections::BTreeMap<&str, &str> = read.lines().filter_map(|l| l.split_once('\t')).collect();
        check(lines.len() == tests, || {
            format!("{tests} tests, the reader saw:\n{read}")
        })?;
        for (name, want) in [
            ("tests::percent_over", "failure:test failure"),
            ("slow_test", "failure:test timeout"),
            ("flaky_once", "passed"),
            ("a_writer", "passed"),
        ] {
            check(lines.get(name) == Some(&want), || {
                format!("{name}: want {want}, read:\n{read}")
            })?;
        }
        let raw = std::fs::read_to_string(xml)?;
        check(raw.matches("<flakyFailure").count() == 1, || raw.clone())?;
    }
    Ok(())
}

/// Each test case of a JUnit file as junitparser reads it: `name<TAB>passed|skipped|kind:type`.
fn junit_reader(xml: &Path) -> Result<String> {
    let script = "import sys\nfrom junitparser import JUnitXml\n\
        for suite in JUnitXml.fromfile(sys.argv[1]):\n    for case in suite:\n        \
        r = case.result\n        \
        print(case.name + '\\t' + ('passed' if not r else r[0]._tag + ':' + str(r[0].type)))\n";
    let python = crate::support::tool("SFL_PYTHONPATH", "python")?;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(xml)
        .env("PYTHONPATH", python)
        .output()?;
    check(out.status.success(), || format!("junitparser: {}", show(&out)))?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The tests `cargo nextest list` selects with `-E` (and a name filter).
fn nextest_lists(dir: &Path, args: &[&str]) -> Result<Vec<String>> {
    let mut all = vec!["list", "--message-format", "json"];
    all.extend(args);
    let out = nextest(&all, dir)?;
    check(out.status.success(), || show(&out))?;
    let list: Value = serde_json::from_slice(&out.stdout)?;
    let mut tests = Vec::new();
    for (binary, suite) in list["rust-suites"].as_object().into_iter().flatten() {
        for (name, case) in suite["testcases"].as_object().into_iter().flatten() {
            if case["filter-match"]["status"] == "matches" {
                tests.push(format!("{binary} {name}"));
            }
        }
    }
    tests.sort();
    Ok(tests)
}

/// For several filtersets (with and without a name filter) cargo sfl runs exactly the tests
/// `cargo nextest list` lists.
fn filtersets_select_what_nextest_lists() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    let cases: [&[&str]; 5] = [
        &["-E", "binary(shared)"],
        &["-E", "kind(lib) | test(=quick_test)"],
        &[
            "-E",
            "package(fixture-nextest-config) - binary_id(fixture-nextest-config::slow)",
        ],
        &["-E", "test(/^percent_(half|over)$/)", "-E", "binary(flaky)"],
        &["-E", "not kind(lib)", "writer"],
    ];
    for args in cases {
        let expected = nextest_lists(dir, args)?;
        check(!expected.is_empty(), || format!("nextest lists nothing for {args:?}"))?;
        let (out, spectra) = sfl_spectra(dir, args)?;
        let got: Vec<String> = sfl_outcomes(&spectra).into_keys().collect();
        check(got == expected, || {
            format!(
                "{args:?}: cargo sfl ran {got:?}, nextest lists {expected:?}\n{}",
                show(&out)
            )
        })?;
    }
    Ok(())
}

/// A key cargo sfl cannot honour is named in a warning; a bad filterset, an unknown profile
/// and a filterset selecting nothing are clear errors.
fn unhonoured_keys_and_bad_input_are_named() -> Result {
    let tmp = copy_fixture("nextest-config");
    let dir = tmp.path();
    let config = dir.join(".config/nextest.toml");
    let text = std::fs::read_to_string(&config)?
        .replace("fail-fast = false", "fail-fast = false\nfrobnicate = 3")
        .replace(
            "slow-timeout = { period = \"1s\", terminate-after = 2 }",
            "slow-timeout = { period = \"1s\", terminate-after = 2, grace-period = \"0s\" }",
        );
    std::fs::write(&config, text)?;
    let out = sfl(&["-E", "test(=quick_test)"], dir);
    check_exit(
        &out,
        3,
        &out.stderr,
        &[
            "cargo sfl does not honour",
            "profile.default.frobnicate (unknown key)",
            "profile.default.fail-fast",
            "profile.default.overrides[1].slow-timeout.grace-period (a timed-out test",
        ],
    )?;
    let out = sfl(&["-E", "test(quick"], dir);
    check_exit(&out, 2, &out.stderr, &["invalid filterset `test(quick` (-E)"])?;
    let out = sfl(&["--nextest-profile", "ci"], dir);
    check_exit(
        &out,
        2,
        &out.stderr,
        &["no nextest profile `ci`", "its profiles: default"],
    )?;
    // As in nextest, a name no binary has is a mistake in the expression.
    let out = sfl(&["-E", "binary(nothing_here)"], dir);
    check_exit(
        &out,
        2,
        &out.stderr,
        &[
            "invalid filterset `binary(nothing_here)` (-E)",
            "no binary names matched",
        ],
    )?;
    let out = sfl(&["-E", "test(=nothing_here)"], dir);
    check_exit(&out, 4, &out.stderr, &["no tests matched -E `test(=nothing_here)`"])
}
