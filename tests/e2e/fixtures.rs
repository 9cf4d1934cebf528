//! One trial per faulty fixture: the whole pipeline with five measures (the default and four others), checked against the
//! tests each fixture is known to fail, its fault's rank, its edges and the decoder oracle.

use std::collections::BTreeSet;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::shared::{self, Saved};
use crate::support::{Result, check, faults, human_agrees_with_json, sfl, show};
use crate::{edges, oracle};

/// Every failing test of every fixture: fixture, test binary, test name, outcome. Every other
/// test must pass. Fixtures get one trial each, in the order they first appear here.
const FAILING: &str = "
    minmax          fixture-minmax                  tests::t1                    failed
    minmax          fixture-minmax                  tests::t2                    failed
    minmax          fixture-minmax                  tests::t3                    failed
    workspace       fixture-ws-core                 tests::clamp_above_range     failed
    workspace       fixture-ws-app                  tests::progress_overshoot    failed
    workspace       fixture-ws-app::integration     bar_overshoot                failed
    crash           fixture-crash                   tests::get_next_wraps        crashed
    crash           fixture-crash                   tests::peek_next_raw_wraps   crashed
    crash           fixture-crash                   tests::steps_around          crashed
    hang            fixture-hang                    tests::trim_indent_tab       timed-out
    hang            fixture-hang                    tests::indent_len_tab        failed
    harness-false   fixture-harness-false           tests::not_leap_1900         failed
    harness-false   fixture-harness-false           tests::february_1900         failed
    harness-false   fixture-harness-false::custom   main                         failed
    harness-false   fixture-harness-false::mimic    not-leap/2100                failed
    harness-false   fixture-harness-false::mimic2   century/1900                 failed
    generic-macro   fixture-generic-macro           tests::percentages_above     failed
    generic-macro   fixture-generic-macro           tests::unit_above            failed
    generic-macro   fixture-generic-macro           tests::chars_above           failed
    panic           fixture-panic                   tests::one_element           failed
    panic           fixture-panic                   tests::three_elements        failed
    bin-only        fixture-bin-only::cli           shouts_short                 failed
    two-files       fixture-two-files               tests::negatives_count_as_zero failed
    two-bugs        fixture-two-bugs                tests::freezing              failed
    two-bugs        fixture-two-bugs                tests::boiling               failed
    two-bugs        fixture-two-bugs                tests::body                  failed
    two-bugs        fixture-two-bugs                tests::one_element           failed
    proc-macro      fixture-proc-macro              tests::one_letter_words      failed
    proc-macro      fixture-proc-macro::expand      expands_at_compile_time      failed
    compile-time    fixture-ct-app                  tests::half_rounds_up        failed
";

/// Files of test code that no ranking may show (fixture, file): a module file that says
/// `#![cfg(test)]` itself, declared by a plain `mod name;`.
const NEVER_RANKED: &[(&str, &str)] = &[("two-files", "src/checks.rs")];

/// What every fixture trial runs, and so each fixture's shared run ([`saved`]): the JSON report
/// by the default measure and four others, the profiles kept for the decoder oracle, and a
/// short test timeout for the fixture whose test hangs.
pub const RUN: &[&str] = &[
    "--format",
    "json",
    "--keep-profiles",
    "--test-timeout",
    "3",
    "-m",
    DEFAULT,
    "-m",
    "stack-combined",
    "-m",
    "ochiai",
    "-m",
    "tarantula",
    "-m",
    "dstar",
];

/// The measures every fixture is ranked by: the default and four others.
const MEASURES: &[&str] = RUN.split_at(5).1;

/// The default ranking.
const DEFAULT: &str = "stack-ochiai";

/// The rank each of these rankings must give every fixture's fault, at worst. The default
/// (stack-ochiai) puts it first everywhere; stack-combined, whose weights were fitted on the
/// benchmarks and not on the fixtures, may put a condition directly above the faulty statement
/// first (in `workspace`, `if p > 100 {` above `return p;`: the guard is as likely a fix as the
/// statement it guards), so it must rank the fault within the first two entries.
const FAULT_RANK_AT_WORST: [(&str, f64); 2] = [(DEFAULT, 1.0), ("stack-combined", 2.0)];

/// What a fixture must produce: its failing tests as (binary, name, outcome).
struct Expect {
    fixture: &'static str,
    failing: Vec<(&'static str, &'static str, &'static str)>,
}

/// The `FAILING` table, grouped by fixture.
fn expectations() -> Vec<Expect> {
    let mut out: Vec<Expect> = Vec::new();
    for row in FAILING.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&'static str> = row.split_whitespace().collect();
        let [fixture, binary, name, outcome] = fields[..] else {
            panic!("FAILING row {row:?} needs four fields");
        };
        match out.last_mut() {
            Some(e) if e.fixture == fixture => e.failing.push((binary, name, outcome)),
            _ => out.push(Expect {
                fixture,
                failing: vec![(binary, name, outcome)],
            }),
        }
    }
    out
}

/// The fixture's shared run ([`RUN`]), for the trials that read its saved spectra, kept
/// profiles or JSON report and change nothing.
pub fn saved(fixture: &'static str) -> Result<&'static Saved> {
    shared::run(fixture, RUN)
}

pub fn trials() -> Vec<Trial> {
    expectations()
        .into_iter()
        .map(|e| Trial::test(format!("fixture::{}", e.fixture), move || fixture_trial(&e)))
        .collect()
}

/// The fixture's run with the default and four other measures ([`RUN`]), keeping the profiles
/// for the oracle.
fn fixture_trial(e: &Expect) -> Result {
    let saved = saved(e.fixture)?;
    let (dir, out) = (saved.dir(), &saved.out);
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|err| format!("bad JSON: {err}\n{}", show(out)))?;
    check(report["schema"] == "cargo-sfl/v1", || "schema".into())?;

    // Outcomes: exactly the expected failing tests fail, in the expected way.
    let mut failing = BTreeSet::new();
    for t in report["tests"].as_array().unwrap() {
        let key = (
            t["binary"].as_str().unwrap().to_string(),
            t["name"].as_str().unwrap().to_string(),
        );
        let outcome = t["outcome"].as_str().unwrap();
        match e.failing.iter().find(|f| f.0 == key.0 && f.1 == key.1) {
            Some(f) => check(outcome == f.2, || format!("{key:?}: expected {}, got {outcome}", f.2))?,
            None => check(outcome == "passed", || {
                format!("{key:?}: expected passed, got {outcome}")
            })?,
        }
        // A test that failed by panicking says where: its backtrace's workspace frames.
        let panicked = outcome == "failed" && t["message"].as_str().is_some_and(|m| m.starts_with("panicked at"));
        let stack = t["stack"].as_array().map_or(0, Vec::len);
        check(!panicked || stack > 0, || {
            format!("{key:?} panicked without a stack: {t:#}")
        })?;
        if outcome != "passed" {
            failing.insert(key);
        }
    }
    check(failing.len() == e.failing.len(), || {
        format!("failing tests {failing:?}")
    })?;

    // Every measure ranks the fault, and the default ranks it as well as expected.
    let fault_lines = faults(dir);
    for ranking in report["rankings"].as_array().unwrap() {
        let units = ranking["units"].as_array().unwrap();
        let best = units
            .iter()
            .filter(|u| {
                // An entry holds the fault when its first line or one of its members is it.
                let lines = std::iter::once(*u).chain(u["members"].as_array().into_iter().flatten());
                lines.into_iter().any(|m| {
                    fault_lines
                        .iter()
                        .any(|(f, l)| m["file"] == f.as_str() && m["line"] == *l)
                })
            })
            .map(|u| u["rank"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        check(best.is_finite(), || format!("{}: fault not ranked", ranking["measure"]))?;
        if let Some((name, worst)) = FAULT_RANK_AT_WORST.iter().find(|(m, _)| ranking["measure"] == *m) {
            check(best <= *worst, || {
                format!("{name} ranks the fault {best}, expected at most {worst}")
            })?;
        }
        for u in units {
            check(u["score"].as_f64().is_some_and(f64::is_finite), || {
                format!("non-finite score {u}")
            })?;
            let lines = std::iter::once(u).chain(u["members"].as_array().into_iter().flatten());
            for m in lines {
                check(
                    !NEVER_RANKED
                        .iter()
                        .any(|&(f, file)| f == e.fixture && m["file"] == file),
                    || format!("{}: test code ranked: {m}", ranking["measure"]),
                )?;
            }
        }
    }
    reports_lead_alike(dir, &report)?;
    edges::cover_every_test(dir)?;
    oracle::decoder_matches_llvm_cov(dir)
}

/// The human and SARIF reports of the saved run show each entry at the line the JSON report
/// leads it with, in that line's own file.
fn reports_lead_alike(dir: &std::path::Path, report: &Value) -> Result {
    let measures: Vec<&str> = std::iter::once("report").chain(MEASURES.iter().copied()).collect();
    let human = sfl(&measures, dir);
    human_agrees_with_json(&String::from_utf8_lossy(&human.stdout), report)?;
    let sarif = sfl(&[&measures[..], &["--format", "sarif"]].concat(), dir);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).map_err(|e| format!("bad SARIF: {e}"))?;
    for ranking in report["rankings"].as_array().unwrap() {
        let rule = format!("sfl/{}", ranking["measure"].as_str().unwrap());
        let results = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["ruleId"] == rule.as_str());
        for (result, (file, line)) in results.zip(crate::support::shown_in_json(ranking)) {
            let at = &result["locations"][0]["physicalLocation"];
            let uri = at["artifactLocation"]["uri"].as_str().unwrap_or_default();
            check(uri.ends_with(&file) && at["region"]["startLine"] == line, || {
                format!("{rule}: SARIF points at {at}, the JSON report shows {file}:{line}")
            })?;
        }
    }
    Ok(())
}
