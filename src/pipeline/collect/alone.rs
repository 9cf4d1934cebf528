//! Failing tests run again alone: a test that failed only beside others (a shared temporary
//! directory, a global) is ranked as passing, or as flaky when the edit made it fail.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use super::outcome::JobOutcome;
use super::session::Session;
use crate::run::Job;
use crate::spectra::{Attempt, Outcome, TestRecord};
use crate::ui;

/// At most this many failing tests run again alone ([`Session::run_alone`]).
const ALONE_AT_MOST: usize = 32;

/// The outcome of a test that failed beside other tests and then `alone` otherwise: passed (the
/// passing run's record and coverage, marked `passed_alone`), or failing another way (a crash
/// beside the others, a plain failure alone: ripgrep's tests sharing a temporary directory
/// named by a per-process counter; the run with no other test beside it is kept). The first run
/// (or its retries) and this one are its attempts. With `edited` (it passed in the last run and
/// ran code the edit touched) a pass alone keeps the failing run, as a flaky test: the edit
/// made it fail (rayon-core's ordering tests, which a pool of two threads fails at random).
fn rerun_alone(first: JobOutcome, mut alone: JobOutcome, edited: bool) -> JobOutcome {
    let attempt = |r: &TestRecord| Attempt {
        outcome: r.outcome,
        duration_ms: r.duration_ms,
        message: r.message.clone(),
    };
    let mut attempts = first.record.attempts.clone();
    if attempts.is_empty() {
        attempts.push(attempt(&first.record));
    }
    attempts.push(attempt(&alone.record));
    if edited && alone.record.outcome == Outcome::Passed {
        let mut first = first;
        first.record.attempts = attempts;
        first.record.flaky = true;
        return first;
    }
    alone.record.attempts = attempts;
    alone.record.passed_alone = alone.record.outcome == Outcome::Passed;
    alone
}

/// The Alone status line: of `failing` tests run again alone, those that `passed`, those that
/// passed but stay failing (`flaky`: they ran code the edit touched), and those that failed
/// another way (`otherwise`).
fn alone_status(failing: usize, passed: &[String], flaky: &[String], otherwise: &[String]) -> String {
    let mut otherwise = match otherwise.len() {
        0 => String::new(),
        n => format!(
            "; {n} failed another way alone (the run alone is kept): {}",
            ui::shortened(otherwise, 3)
        ),
    };
    if !flaky.is_empty() {
        otherwise.push_str(&format!(
            "; {} passed alone but ran code the edit touched and passed before it: ranked as failing, as flaky",
            ui::shortened(flaky, 3)
        ));
    }
    let again = failing - passed.len() - flaky.len();
    format!(
        "ran {} again, one at a time with no other test running: {}{otherwise}",
        ui::counted(failing, "failing test", "failing tests"),
        match passed.len() {
            0 if again == 1 && failing == 1 => "it failed again".to_string(),
            0 if again == failing => "all failed again".to_string(),
            0 => format!("{again} failed again"),
            _ if again > 0 => format!(
                "{} passed (failed only beside other tests: ranked as passing), {again} failed again",
                ui::shortened(passed, 3)
            ),
            _ => format!(
                "{} passed (failed only beside other tests: ranked as passing)",
                ui::shortened(passed, 3)
            ),
        }
    )
}

impl Session<'_> {
    /// Runs again, one at a time with no other test running, the tests of `todo` that failed
    /// or crashed while others ran beside them (not with one job at a time, a single test, or
    /// `--no-alone-rerun`; not flaky ones, whose retries already decided; none when more than
    /// [`ALONE_AT_MOST`] failed: that many do not all share something). A test that passes
    /// alone takes that run's record and coverage, with both runs among its attempts
    /// ([`rerun_alone`]); one that fails again the same way keeps its first run, one that fails
    /// another way takes the run alone ([`rerun_alone`]). The status line, if any.
    pub(super) fn run_alone(
        &self,
        jobs: &[Job],
        (todo, edited): (&[usize], &HashSet<String>),
        done: &mut [Option<JobOutcome>],
        decode_total: &Mutex<Duration>,
        finished: &(impl Fn(&JobOutcome) + Sync),
    ) -> Option<String> {
        let failing = self.alone_candidates(todo, done)?;
        let needs: Vec<_> = failing.iter().map(|&i| self.settings[i].needs).collect();
        let mut again: Vec<Option<JobOutcome>> = failing.iter().map(|_| None).collect();
        crate::schedule::run_limited(
            &failing,
            &needs,
            1,
            &self.groups,
            |_, &i, slot| {
                if crate::process::interrupted() {
                    return None;
                }
                let dir = self.scratch.join(format!("t{i}-alone"));
                let run = (self.exe_index(&jobs[i]), false, dir);
                Some(self.run_in(i, &jobs[i], run, decode_total, slot, false))
            },
            |k, r| again[k] = r,
        );
        let (mut passed, mut flaky, mut otherwise) = (Vec::new(), Vec::new(), Vec::new());
        for (&i, alone) in failing.iter().zip(again) {
            let first_outcome = done[i].as_ref().map(|d| d.record.outcome);
            let Some(alone) = alone.filter(|a| {
                a.not_run.is_none()
                    && (a.record.outcome == Outcome::Passed
                        || (a.record.outcome.is_failing() && Some(a.record.outcome) != first_outcome))
            }) else {
                continue;
            };
            let first = done[i].take().expect("a failing test ran");
            let name = format!("{} {}", first.record.binary, first.record.name);
            let first_outcome = first.record.outcome;
            let outcome = rerun_alone(first, alone, edited.contains(&name));
            finished(&outcome);
            match outcome.record.outcome {
                Outcome::Passed => passed.push(name),
                _ if outcome.record.flaky => flaky.push(name),
                o => otherwise.push(format!(
                    "{name} ({} beside others, {} alone)",
                    first_outcome.as_str(),
                    o.as_str()
                )),
            }
            done[i] = Some(outcome);
        }
        Some(alone_status(failing.len(), &passed, &flaky, &otherwise))
    }

    /// Whether the failing tests of a run of `tests` run again alone after it: tests ran
    /// several at a time.
    pub(super) fn runs_alone_after(&self, tests: usize) -> bool {
        self.alone && self.jobs >= 2 && tests >= 2
    }

    /// The tests [`Session::run_alone`] runs again (`None`: none).
    fn alone_candidates(&self, todo: &[usize], done: &[Option<JobOutcome>]) -> Option<Vec<usize>> {
        if !self.runs_alone_after(todo.len()) {
            return None;
        }
        let failing: Vec<usize> = todo
            .iter()
            .copied()
            .filter(|&i| {
                done[i]
                    .as_ref()
                    .is_some_and(|o| o.not_run.is_none() && o.record.outcome.is_failing() && !o.record.flaky)
            })
            .collect();
        if failing.len() > ALONE_AT_MOST {
            ui::detail(format!(
                "{} tests failed: more than {ALONE_AT_MOST}, so none runs again alone",
                failing.len()
            ));
            return None;
        }
        (!failing.is_empty()).then_some(failing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::UnitId;

    fn outcome(result: Outcome, message: Option<&str>, covered: &[u32]) -> JobOutcome {
        let mut record = TestRecord::new("pkg", "tests::shared", result);
        record.message = message.map(str::to_string);
        record.duration_ms = 7;
        JobOutcome {
            record,
            covered: covered.iter().map(|&u| UnitId(u)).collect(),
            profiles: Vec::new(),
            edges: Vec::new(),
            not_run: None,
        }
    }

    /// A test that passed alone is the passing run (outcome, coverage), its attempts the first
    /// run then this one; after retries, every retry then this one.
    #[test]
    fn a_test_that_passed_alone_keeps_the_passing_run_and_every_attempt() {
        let first = outcome(Outcome::Failed, Some("another test wrote here"), &[1, 2, 3]);
        let alone = rerun_alone(first, outcome(Outcome::Passed, None, &[1, 2]), false);
        let runs = |o: &JobOutcome| o.record.attempts.iter().map(|a| a.outcome).collect::<Vec<_>>();
        assert_eq!(alone.record.outcome, Outcome::Passed);
        assert!(alone.record.passed_alone && !alone.record.flaky);
        assert_eq!(alone.covered, vec![UnitId(1), UnitId(2)]);
        assert_eq!(runs(&alone), vec![Outcome::Failed, Outcome::Passed]);
        assert_eq!(
            alone.record.attempts[0].message.as_deref(),
            Some("another test wrote here")
        );

        let mut retried = outcome(Outcome::Crashed, None, &[1]);
        retried.record.attempts = vec![
            Attempt {
                outcome: Outcome::Crashed,
                duration_ms: 7,
                message: None,
            };
            2
        ];
        let alone = rerun_alone(retried, outcome(Outcome::Passed, None, &[1]), false);
        assert_eq!(runs(&alone), vec![Outcome::Crashed, Outcome::Crashed, Outcome::Passed]);

        // One that passed in the last run and ran code the edit touched keeps its failing run,
        // as a flaky test, with both attempts.
        let first = outcome(Outcome::Failed, Some("order differs"), &[1, 2, 3]);
        let kept = rerun_alone(first, outcome(Outcome::Passed, None, &[1, 2]), true);
        assert_eq!(kept.record.outcome, Outcome::Failed);
        assert!(kept.record.flaky && !kept.record.passed_alone);
        assert_eq!(kept.covered, vec![UnitId(1), UnitId(2), UnitId(3)]);
        assert_eq!(runs(&kept), vec![Outcome::Failed, Outcome::Passed]);
        // Failing alone too: as without the edit.
        let first = outcome(Outcome::Failed, Some("order differs"), &[1]);
        let again = rerun_alone(first, outcome(Outcome::Crashed, None, &[1]), true);
        assert_eq!(again.record.outcome, Outcome::Crashed);
        assert!(!again.record.flaky);
    }

    #[test]
    fn the_alone_line_says_what_each_test_did() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(alone_status(1, &[], &[], &[]).ends_with(": it failed again"));
        assert!(alone_status(3, &[], &names(&["a"]), &[]).contains(": 2 failed again; a passed alone but ran code"));
        assert!(
            alone_status(2, &names(&["b"]), &names(&["a"]), &[]).contains(": b passed (failed only beside other tests")
        );
    }
}
