//! `--junit FILE`: the test run as JUnit XML, so one CI run gives both the test results (shown
//! by every CI system) and the localisation. Written with nextest's own JUnit model
//! (`quick-junit`) and marked as nextest marks things: a test suite per test binary, a failed
//! test as `<failure type="test failure">`, a timed-out one as `test timeout`, a crashed one as
//! `test abort`; a flaky test (failed, then passed on a retry) passes with each failed run as a
//! `<flakyFailure>`, and a test that failed every retry keeps them as `<rerunFailure>`s. Ignored
//! tests are `<skipped/>`.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestRerun, TestSuite};

use crate::spectra::{Attempt, Outcome, Spectra, TestRecord};

/// The name of the run in the report (`<testsuites name=…>`).
const RUN_NAME: &str = "cargo-sfl-run";

/// The JUnit XML of the run recorded in `spectra`.
pub fn junit(spectra: &Spectra) -> String {
    let mut report = Report::new(RUN_NAME);
    let mut suites: Vec<TestSuite> = Vec::new();
    let mut total = Duration::ZERO;
    for t in &spectra.tests {
        let case = test_case(t);
        total += duration(t.duration_ms);
        match suites.last_mut() {
            Some(s) if s.name.as_str() == t.binary => {
                s.add_test_case(case);
            }
            _ => {
                let mut s = TestSuite::new(t.binary.as_str());
                s.add_test_case(case);
                suites.push(s);
            }
        }
    }
    for s in &mut suites {
        let time = s.test_cases.iter().filter_map(|c| c.time).sum();
        s.set_time(time);
    }
    report.set_time(total);
    report.add_test_suites(suites);
    report.to_string().expect("a JUnit report of strings serialises")
}

fn duration(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// One test: its outcome (the last run's, as nextest reports it) and its other runs.
fn test_case(t: &TestRecord) -> TestCase {
    let runs: Vec<Attempt> = if t.attempts.is_empty() {
        vec![Attempt {
            outcome: t.outcome,
            duration_ms: t.duration_ms,
            message: t.message.clone(),
        }]
    } else {
        t.attempts.clone()
    };
    let (last, earlier) = runs.split_last().expect("at least one run");
    let status = match last.outcome {
        Outcome::Passed => TestCaseStatus::Success {
            flaky_runs: earlier.iter().map(rerun).collect(),
        },
        Outcome::Ignored => TestCaseStatus::skipped(),
        outcome => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_type(failure_type(outcome, t.signal));
            if let Some(m) = &last.message {
                status.set_message(first_line(m));
                status.set_description(m.as_str());
            }
            status.add_reruns(earlier.iter().map(rerun));
            status
        }
    };
    let mut case = TestCase::new(t.name.as_str(), status);
    case.set_classname(t.binary.as_str());
    case.set_time(duration(runs.iter().map(|r| r.duration_ms).sum()));
    case
}

/// An earlier run of a retried test (one that did not pass).
fn rerun(a: &Attempt) -> TestRerun {
    let mut r = TestRerun::new(NonSuccessKind::Failure);
    r.set_type(failure_type(a.outcome, None));
    r.set_time(duration(a.duration_ms));
    if let Some(m) = &a.message {
        r.set_message(first_line(m));
        r.set_description(m.as_str());
    }
    r
}

/// nextest's failure types.
fn failure_type(outcome: Outcome, signal: Option<i32>) -> String {
    match (outcome, signal) {
        (Outcome::TimedOut, _) => "test timeout".into(),
        (Outcome::Crashed, Some(sig)) => format!("test abort (signal {sig})"),
        (Outcome::Crashed, None) => "test abort".into(),
        _ => "test failure".into(),
    }
}

/// A failure's summary: libtest's `panicked at FILE:LINE:COL:` line says only where, so the
/// first line of what the panic said follows it (`panicked at tests/t.rs:9:5: assertion
/// \`left == right\` failed`); any other message's first line as it is.
fn first_line(m: &str) -> String {
    let mut lines = m.lines();
    let first = lines.next().unwrap_or("");
    match lines.next().map(str::trim).filter(|l| !l.is_empty()) {
        Some(what) if first.starts_with("panicked at ") && first.ends_with(':') => format!("{first} {what}"),
        _ => first.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(binary: &str, name: &str, outcome: Outcome) -> TestRecord {
        let mut r = TestRecord::new(binary, name, outcome);
        r.duration_ms = 12;
        r
    }

    /// Every outcome is marked as nextest marks it, and suites follow the binaries.
    #[test]
    fn outcomes_are_marked_as_nextest_marks_them() {
        let mut s = crate::spectra::tests::doric_minmax();
        let mut failed = record("k", "fails", Outcome::Failed);
        failed.message = Some("panicked at src/lib.rs:3:5:\nleft: 1 & <2>".into());
        let mut flaky = record("k", "flaky", Outcome::Failed);
        flaky.flaky = true;
        flaky.attempts = vec![
            Attempt {
                outcome: Outcome::Failed,
                duration_ms: 5,
                message: Some("boom".into()),
            },
            Attempt {
                outcome: Outcome::Passed,
                duration_ms: 4,
                message: None,
            },
        ];
        let mut crashed = record("k::it", "crashes", Outcome::Crashed);
        crashed.signal = Some(11);
        s.tests = vec![
            failed,
            flaky,
            record("k", "passes", Outcome::Passed),
            record("k", "skipped", Outcome::Ignored),
            crashed,
            record("k::it", "slow", Outcome::TimedOut),
        ];
        let xml = junit(&s);
        let report = Report::deserialize_from_str(&xml).expect("our own output reads back");
        assert_eq!(report.tests, 6);
        let suites: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(suites, ["k", "k::it"]);
        let case = |name: &str| {
            report
                .test_suites
                .iter()
                .flat_map(|s| &s.test_cases)
                .find(|c| c.name.as_str() == name)
                .unwrap()
        };
        assert!(
            matches!(&case("fails").status, TestCaseStatus::NonSuccess { ty: Some(t), message: Some(m), .. }
            if t.as_str() == "test failure" && m.as_str() == "panicked at src/lib.rs:3:5: left: 1 & <2>")
        );
        assert!(matches!(&case("flaky").status, TestCaseStatus::Success { flaky_runs } if flaky_runs.len() == 1));
        assert!(matches!(&case("skipped").status, TestCaseStatus::Skipped { .. }));
        assert!(
            matches!(&case("crashes").status, TestCaseStatus::NonSuccess { ty: Some(t), .. } if t.as_str() == "test abort (signal 11)")
        );
        assert!(
            matches!(&case("slow").status, TestCaseStatus::NonSuccess { ty: Some(t), .. } if t.as_str() == "test timeout")
        );
        assert_eq!(case("flaky").time, Some(Duration::from_millis(9)));
        assert!(xml.contains("left: 1 &amp; &lt;2&gt;"), "{xml}");
    }
}
