//! The test-run progress bar: counts by outcome, each test as it finishes (with `-v`, or
//! when it did not pass), and the slowest test still running.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::run::Job;
use crate::spectra::{Outcome, TestRecord};
use crate::ui;
use crate::workspace::Built;

/// The test-run progress bar: counts by outcome and the slowest test still running.
pub(crate) struct RunProgress {
    bar: indicatif::ProgressBar,
    running: Mutex<HashMap<usize, Instant>>,
    /// Passed, failed, timed out, crashed, flaky (flaky tests are counted by outcome too).
    tally: Mutex<[usize; 5]>,
    /// Set by [`RunProgress::done`], which wakes the ticker: the run does not wait out its
    /// last tick (up to 100 ms at the end of every run, a third of a small crate's).
    finished: Mutex<bool>,
    wake: std::sync::Condvar,
    total: usize,
}

impl RunProgress {
    pub(crate) fn new(total: usize) -> Self {
        RunProgress {
            bar: ui::bar("Testing", total as u64),
            running: Mutex::new(HashMap::new()),
            tally: Mutex::new([0; 5]),
            finished: Mutex::new(false),
            wake: std::sync::Condvar::new(),
            total,
        }
    }

    pub(crate) fn started(&self, job: usize) {
        self.running.lock().unwrap().insert(job, Instant::now());
    }

    pub(crate) fn finished(&self, job: usize) {
        self.running.lock().unwrap().remove(&job);
    }

    pub(crate) fn counts(&self) -> String {
        let [p, f, t, c, flaky] = *self.tally.lock().unwrap();
        let mut parts = vec![format!("{p} passed"), format!("{f} failed")];
        if t > 0 {
            parts.push(format!("{t} timed out"));
        }
        if c > 0 {
            parts.push(format!("{c} crashed"));
        }
        if flaky > 0 {
            parts.push(format!("{flaky} flaky"));
        }
        parts.join(", ")
    }

    /// Called on the main thread as each test's result arrives.
    pub(crate) fn record(&self, rec: &TestRecord) {
        let slot = match rec.outcome {
            Outcome::Passed => 0,
            Outcome::Failed => 1,
            Outcome::TimedOut => 2,
            _ => 3,
        };
        let mut tally = self.tally.lock().unwrap();
        tally[slot] += 1;
        tally[4] += usize::from(rec.flaky);
        drop(tally);
        self.bar.inc(1);
        let done = self.bar.position();
        let mut line = format!(
            "{:>12} [{:>7.3}s] ({done}/{}) {} {}",
            rec.outcome.as_str().to_uppercase(),
            rec.duration_ms as f64 / 1000.0,
            self.total,
            rec.binary,
            rec.name
        );
        if let Some(runs) = rec.runs() {
            line.push_str(&format!(" ({runs})"));
        }
        if rec.outcome == Outcome::Passed {
            ui::detail(line);
        } else {
            ui::info(line);
        }
        for w in &rec.warnings {
            ui::warn(format!("{} {}: {w}", rec.binary, rec.name));
        }
    }

    /// Refreshes the bar's message (counts and the slowest running test) until `done`.
    pub(crate) fn tick_until_done(&self, jobs: &[Job], built: &Built) {
        let mut finished = self.finished.lock().unwrap();
        while !*finished {
            drop(finished);
            let slowest = self
                .running
                .lock()
                .unwrap()
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(&j, t)| (j, t.elapsed()));
            let mut msg = self.counts();
            if let Some((j, age)) = slowest {
                let job = &jobs[j];
                let name = job.name.as_deref().unwrap_or("main");
                msg.push_str(&format!(
                    " · slowest running: {} {name} ({:.1}s)",
                    built.tests[job.binary].id,
                    age.as_secs_f64()
                ));
            }
            self.bar.set_message(msg);
            finished = self.finished.lock().unwrap();
            if !*finished {
                finished = self.wake.wait_timeout(finished, Duration::from_millis(100)).unwrap().0;
            }
        }
    }

    /// Ends the run's progress when the returned guard drops, however its scope ends: a panic
    /// on the way must not leave the scope waiting for [`RunProgress::tick_until_done`].
    pub(crate) fn done_on_drop(&self) -> DoneOnDrop<'_> {
        DoneOnDrop(self)
    }

    fn done(&self) {
        *self.finished.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.wake.notify_all();
        self.bar.finish_and_clear();
    }
}

/// See [`RunProgress::done_on_drop`].
pub(crate) struct DoneOnDrop<'a>(&'a RunProgress);

impl Drop for DoneOnDrop<'_> {
    fn drop(&mut self) {
        self.0.done();
    }
}
