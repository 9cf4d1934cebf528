//! Running the plan: the jobs an interrupted run of the same build finished come from the
//! resume journal, the rows of the last run this edit cannot change are reused, and the rest
//! run.

use anyhow::Context;

use super::journal;
use super::outcome::JobOutcome;
use super::plan::Plan;
use super::session::Session;
use crate::config::RunConfig;
use crate::error::SflError;
use crate::run::Job;
use crate::select::Reuse;
use crate::ui;

/// Opens the resume journal of this build and selection: the outcomes of the jobs an
/// interrupted run of it finished (unless `--rerun`), saying so.
fn resume(
    session: &Session,
    cfg: &RunConfig,
    jobs: &[Job],
) -> anyhow::Result<(journal::Journal, Vec<Option<JobOutcome>>)> {
    let exec = &cfg.execution;
    let ids: Vec<&str> = session.built.tests.iter().map(|t| t.id.as_str()).collect();
    // Everything else that changes outcomes is in the binaries, the jobs or the inputs.
    // Per-job settings (retries, timeouts, leak-timeouts) come from the flags and the nextest
    // profile; groups and slots change no outcome.
    let settings: Vec<_> = session.settings.iter().map(|s| (s.limits, s.retries)).collect();
    // The inputs: a data file a test reads, or a variable, changed since the interrupted run.
    let flags = format!(
        "root={} edges={} settings={settings:?} profile={} alone={} inputs={}",
        session.ws.root.display(),
        session.edges.is_some(),
        session.profile,
        session.alone,
        session.inputs
    );
    let fingerprint = journal::fingerprint(session.built, &ids, jobs, &flags);
    let dir = session.ws.target_dir.join("journal").join(session.journal);
    let (journal, earlier) = journal::Journal::open(&dir, &fingerprint, exec.rerun)
        .with_context(|| format!("cannot write the resume journal in {}", dir.display()))?;
    let journal = if session.journal.is_empty() {
        journal
    } else {
        journal.in_own_dir()
    };
    crate::process::on_interrupt_say(format!(
        "the tests that finished are kept in {}: run the same command again to resume (--rerun to run every test)",
        journal.path().display()
    ));
    let done = match earlier {
        Some(earlier) => {
            let started = earlier.started;
            let done = earlier.outcomes(jobs, &ids, session.coverage, session.edges);
            let n = done.iter().filter(|o| o.is_some()).count();
            // An earlier run that ran nothing (it found no test) resumes nothing worth a word.
            if n > 0 {
                ui::status(
                    "Resuming",
                    format!(
                        "{n} of {} tests already ran (an interrupted run {}); --rerun to run them all",
                        jobs.len(),
                        ui::ago(started)
                    ),
                );
            }
            done
        }
        None => jobs.iter().map(|_| None).collect(),
    };
    Ok((journal, done))
}

impl Session<'_> {
    /// Runs the jobs an interrupted run did not finish ([`resume`]), each outcome kept in the
    /// journal as it arrives. A test that could not even be started is no result: saving it as
    /// failed would overwrite good spectra with a broken matrix.
    /// With `reuse`, the jobs whose rows the last run's spectra hold for this edit are not
    /// run ([`crate::select`]); the last run's tests of the binaries this run did not build
    /// (the doctests, or all but the few binaries that run again) come back as [`Reused`].
    pub(super) fn run_planned(
        &self,
        cfg: &RunConfig,
        plan: &Plan,
        reuse: Option<&Reuse>,
    ) -> anyhow::Result<(journal::Journal, Vec<JobOutcome>, Reused)> {
        let jobs = &plan.jobs;
        let (journal, mut done) = resume(self, cfg, jobs)?;
        let mut reused = Reused::default();
        if let Some(reuse) = reuse {
            let ids: Vec<&str> = self.built.tests.iter().map(|t| t.id.as_str()).collect();
            let (of_jobs, rows, ignored) = reuse.outcomes(jobs, &ids, self.coverage, self.edges);
            for (d, row) in done.iter_mut().zip(of_jobs) {
                if d.is_none() {
                    *d = row;
                }
            }
            let total = jobs.len() + rows.len();
            // Recorded without running (#[ignore]d, doctests the build judged), this build's
            // and the last run's of binaries not built: the report's count of tests has them.
            let recorded = plan.recorded.len() + ignored.len();
            let run = done.iter().filter(|d| d.is_none()).count();
            let volatile = match reuse.volatile() {
                0 => String::new(),
                // Marked by the last run; this one clears those whose two runs cover the same lines
                // (a test that only links a crate drawing random inputs), and says how many stay.
                n => format!(
                    " ({n} of them may draw random inputs or varied between runs: each runs again until two \
                     runs of it cover the same lines)"
                ),
            };
            ui::status(
                "Selected",
                format!(
                    "{run} of {total} tests to run{volatile}; {} reused from the run of {} (--rerun runs them all){}",
                    total - run,
                    ui::ago(reuse.when),
                    match recorded {
                        0 => String::new(),
                        n => format!("; {n} more recorded without running (ignored, or doctests only compiled)"),
                    }
                ),
            );
            reused = Reused { rows, ignored };
        }
        let outcomes = if jobs.is_empty() {
            Vec::new()
        } else {
            let edited = reuse.map(Reuse::edited_passing).unwrap_or_default();
            self.run_all(jobs, done, &edited, |o| journal.keep(o, self.coverage, self.edges))
        };
        if let Some(e) = not_run(&outcomes) {
            return Err(e.into());
        }
        Ok((journal, outcomes, reused))
    }
}

/// The last run's tests of the binaries this run did not build: every one's row is reused.
#[derive(Default)]
pub(super) struct Reused {
    /// Their rows (the doctests' among them, when rustdoc did not run).
    pub(super) rows: Vec<JobOutcome>,
    pub(super) ignored: Vec<crate::spectra::TestRecord>,
}

/// The error for a run some of whose tests could not be started (a deleted binary, an unwritable
/// target dir), naming the first.
fn not_run(outcomes: &[JobOutcome]) -> Option<SflError> {
    let mut broken = outcomes.iter().filter_map(|o| Some((&o.record, o.not_run.as_ref()?)));
    let (first, why) = broken.next()?;
    Some(SflError::Setup(format!(
        "{} of {} tests could not be run (first: {} {}: {why}); the spectra were not saved",
        broken.count() + 1,
        outcomes.len(),
        first.binary,
        first.name
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::collect::plan::record;
    use crate::spectra::Outcome;

    fn outcome(name: &str, not_run: Option<&str>) -> JobOutcome {
        JobOutcome {
            record: record("b", name, Outcome::Failed),
            covered: Vec::new(),
            profiles: Vec::new(),
            edges: Vec::new(),
            not_run: not_run.map(str::to_string),
        }
    }

    #[test]
    fn a_run_with_tests_that_could_not_start_is_an_error_not_a_result() {
        assert!(not_run(&[outcome("t1", None), outcome("t2", None)]).is_none());
        let e = not_run(&[
            outcome("t1", None),
            outcome("t2", Some("No such file or directory")),
            outcome("t3", Some("x")),
        ])
        .unwrap();
        assert_eq!(e.exit_code(), crate::error::exit::SETUP);
        assert_eq!(
            e.to_string(),
            "2 of 3 tests could not be run (first: b t2: No such file or directory); the spectra were not saved"
        );
    }
}
