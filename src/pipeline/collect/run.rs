//! Runs the planned jobs in parallel and decodes each test's profiles and edge files in the
//! worker that ran it, as soon as it finishes.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::outcome::JobOutcome;
use super::plan::{longest_first, record};
use super::session::Session;
use crate::pipeline::progress::RunProgress;
use crate::run::{self, Finished, Job};
use crate::spectra::{Attempt, Frame, Outcome, TestRecord};
use crate::ui;
use crate::verdict::RawFrame;

/// Sorts and dedups a test's edges as one integer each (`from + 1`, 0 for an entry, then `to`):
/// a thousand edges per test, and comparing them as pairs of an option and an id was a tenth
/// of a worker's time on a crate of small tests.
fn sort_edges(edges: &mut Vec<crate::edges::Edge>) {
    use crate::spectra::BlockId;
    let mut keys: Vec<u64> = edges
        .iter()
        .map(|e| u64::from(e.from.map_or(0, |b| b.0 + 1)) << 32 | u64::from(e.to.0))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    edges.clear();
    edges.extend(keys.into_iter().map(|k| crate::edges::Edge {
        from: match (k >> 32) as u32 {
            0 => None,
            b => Some(BlockId(b - 1)),
        },
        to: BlockId(k as u32),
    }));
}

impl Session<'_> {
    /// Runs every job not `done` yet, showing progress and handing each outcome to `finished`
    /// in the worker that ran it; the outcomes are in job order.
    pub(super) fn run_all(
        &self,
        jobs: &[Job],
        mut done: Vec<Option<JobOutcome>>,
        edited: &HashSet<String>,
        finished: impl Fn(&JobOutcome) + Sync,
    ) -> Vec<JobOutcome> {
        let todo = self.todo(jobs, &done);
        let started = Instant::now();
        let decode_total = Mutex::new(Duration::ZERO);
        // Per executable, its jobs still to finish: when none is left, what was read of it is
        // dropped (a library's doctests are an executable each).
        let exes: Vec<usize> = jobs.iter().map(|j| self.exe_index(j)).collect();
        let left: Vec<AtomicUsize> = (0..self.coverage.paths().len()).map(|_| AtomicUsize::new(0)).collect();
        for &i in &todo {
            left[exes[i]].fetch_add(1, Ordering::Relaxed);
        }
        // An executable that runs one job is read for that job alone (a doctest's own).
        let single: Vec<bool> = left.iter().map(|n| n.load(Ordering::Relaxed) == 1).collect();
        // An executable with a failing job keeps what was read of it until the failing tests
        // have run again alone (`run_alone`), which would read it again (env_logger's example:
        // 8.6 ms of a 140 ms run).
        let alone_later = self.runs_alone_after(todo.len());
        let failed: Vec<std::sync::atomic::AtomicBool> = left.iter().map(|_| Default::default()).collect();
        let kept: Mutex<Vec<usize>> = Mutex::new(Vec::new());
        let progress = RunProgress::new(todo.len());
        std::thread::scope(|scope| {
            scope.spawn(|| progress.tick_until_done(jobs, self.built));
            let _done = progress.done_on_drop();
            let needs: Vec<_> = todo.iter().map(|&i| self.settings[i].needs).collect();
            crate::schedule::run_limited(
                &todo,
                &needs,
                self.in_flight(),
                &self.groups,
                |_, &i, slot| {
                    progress.started(i);
                    let outcome = self.run_one(i, &jobs[i], exes[i], single[exes[i]], &decode_total, slot);
                    finished(&outcome);
                    if outcome.record.outcome.is_failing() {
                        failed[exes[i]].store(true, Ordering::Release);
                    }
                    if left[exes[i]].fetch_sub(1, Ordering::AcqRel) == 1 {
                        let keep = alone_later && failed[exes[i]].load(Ordering::Acquire);
                        self.executable_done(&jobs[i], exes[i], keep.then_some(&kept));
                    }
                    progress.finished(i);
                    outcome
                },
                |k, r| {
                    progress.record(&r.record);
                    done[todo[k]] = Some(r);
                },
            );
        });
        let alone = self.run_alone(jobs, (&todo, edited), &mut done, &decode_total, &finished);
        for exe in kept.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner) {
            self.evict(exe);
        }
        let decode_time = *decode_total.lock().unwrap();
        self.say_finished(todo.len(), started.elapsed(), &progress, decode_time, alone);
        done.into_iter().map(|r| r.expect("every job finished")).collect()
    }

    /// The last job of executable `exe` (that of `job`) has finished: the binary's fork server
    /// retires, and what was read of the executable is dropped, or with `keep` kept there for
    /// the failing tests' runs alone.
    fn executable_done(&self, job: &Job, exe: usize, keep: Option<&Mutex<Vec<usize>>>) {
        // The binary's own executable (not one of its doctests') is done.
        let bin = &self.built.tests[job.binary];
        if let Some(servers) = &self.servers
            && bin.exe_for(job.name.as_deref()) == bin.path
        {
            servers.retire(job.binary);
        }
        match keep {
            Some(kept) => kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(exe),
            None => self.evict(exe),
        }
    }

    /// The status lines at the end of the run: how long, how decoding went, how the tests
    /// were run, and what running alone showed.
    fn say_finished(
        &self,
        tests: usize,
        elapsed: Duration,
        progress: &RunProgress,
        decode: Duration,
        alone: Option<String>,
    ) {
        let forked = self.servers.as_ref().and_then(|s| s.shut_down());
        ui::status(
            "Finished",
            format!(
                "{} in {:.2}s ({}); decoded their profiles in {:.1} ms ({:.0} µs per test)",
                ui::counted(tests, "test", "tests"),
                elapsed.as_secs_f64(),
                progress.counts(),
                decode.as_secs_f64() * 1e3,
                decode.as_secs_f64() * 1e6 / tests.max(1) as f64
            ),
        );
        if let Some(how) = forked {
            ui::status("Processes", how);
        }
        if let Some(alone) = alone {
            ui::status("Alone", alone);
        }
    }

    /// The jobs the scheduler hands out at once: with fork servers twice the processes that
    /// run at once, so that a test is queued for the permits of each one running and its server
    /// starts it the moment one ends ([`crate::schedule::Permits`]).
    fn in_flight(&self) -> usize {
        if self.servers.is_some() {
            2 * self.jobs
        } else {
            self.jobs
        }
    }

    /// The jobs not `done` yet, the longest (in the last run) first, said on the status line.
    fn todo(&self, jobs: &[Job], done: &[Option<JobOutcome>]) -> Vec<usize> {
        let mut todo: Vec<usize> = (0..jobs.len()).filter(|&i| done[i].is_none()).collect();
        let last = |i: usize| {
            let name = jobs[i].name.as_deref().unwrap_or("main");
            let key = (self.built.tests[jobs[i].binary].id.clone(), name.to_string());
            self.last.get(&key).copied()
        };
        longest_first(&mut todo, last, self.jobs);
        let n_bins = todo
            .iter()
            .map(|&i| jobs[i].binary)
            .collect::<std::collections::HashSet<_>>()
            .len();
        ui::status(
            "Running",
            format!(
                "{} from {} binar{} ({} at a time, timeout {})",
                crate::ui::counted(todo.len(), "test", "tests"),
                n_bins,
                if n_bins == 1 { "y" } else { "ies" },
                self.jobs,
                self.timeouts_said(&todo)
            ),
        );
        todo
    }

    /// The timeouts of the jobs `todo` in words: the one most of them have (cargo sfl's, with
    /// how it was chosen, or the nextest profile's), then the others, which its overrides set.
    fn timeouts_said(&self, todo: &[usize]) -> String {
        let mut counts: std::collections::BTreeMap<Duration, usize> = std::collections::BTreeMap::new();
        for &i in todo {
            *counts.entry(self.settings[i].limits.timeout).or_default() += 1;
        }
        let Some((&most, _)) = counts.iter().max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t))) else {
            return self.timeout_note.clone();
        };
        let secs = |t: Duration| format!("{}s", t.as_secs_f64());
        let mut said = if most == self.timeout {
            self.timeout_note.clone()
        } else {
            format!("{} from the nextest profile", secs(most))
        };
        let others: Vec<String> = counts
            .iter()
            .filter(|(t, _)| **t != most)
            .map(|(t, n)| format!("{} {}", crate::ui::counted(*n, "test", "tests"), secs(*t)))
            .collect();
        if !others.is_empty() {
            said.push_str(&format!("; by nextest overrides: {}", others.join(", ")));
        }
        said
    }

    /// Drops what was read of executable `exe` (its coverage map and block table).
    fn evict(&self, exe: usize) {
        self.coverage.evict(exe);
        if let Some(edges) = self.edges {
            edges.evict(exe);
        }
    }

    /// Runs job `i` in its own directory and decodes what it wrote; any problem becomes a
    /// warning on its record (`single`: its executable runs no other job). Once its process has
    /// ended, the job gives its slot back (unless a retry may run it again): its decoding is
    /// cargo sfl's own work, and the next test starts meanwhile.
    fn run_one(
        &self,
        i: usize,
        job: &Job,
        exe: usize,
        single: bool,
        decode_total: &Mutex<Duration>,
        slot: &crate::schedule::Slot<'_>,
    ) -> JobOutcome {
        let dir = self.scratch.join(format!("t{i}"));
        self.run_in(i, job, (exe, single, dir), decode_total, slot, true)
    }

    /// [`Session::run_one`] in directory `run.2` (`run`: the executable, whether it runs no
    /// other job, the directory), with `--retries` when `retry`.
    pub(super) fn run_in(
        &self,
        i: usize,
        job: &Job,
        run: (usize, bool, std::path::PathBuf),
        decode_total: &Mutex<Duration>,
        slot: &crate::schedule::Slot<'_>,
        retry: bool,
    ) -> JobOutcome {
        let (exe, single, dir) = run;
        let bin = &self.built.tests[job.binary];
        let name = job.name.clone().unwrap_or_else(|| "main".into());
        let mut out = JobOutcome {
            record: record(&bin.id, &name, Outcome::Failed),
            covered: Vec::new(),
            profiles: Vec::new(),
            edges: Vec::new(),
            not_run: None,
        };
        let ran = self.run_process(i, job, &dir);
        if !retry || self.settings[i].retries == 0 {
            slot.release();
        }
        match ran {
            Err(e) => out.not_run = Some(e.to_string()),
            Ok(fin) => {
                let t0 = Instant::now();
                self.decode(job, exe, single, fin, &mut out);
                *decode_total.lock().unwrap() += t0.elapsed();
                if retry {
                    self.retry(i, job, &mut out.record);
                }
            }
        }
        if !self.keep {
            let _ = std::fs::remove_dir_all(&dir);
            out.profiles.clear();
        }
        out.covered.sort_unstable();
        out.covered.dedup();
        sort_edges(&mut out.edges);
        out
    }

    /// Runs `job`'s process once, its profiles and edge files landing in `dir`.
    fn run_process(&self, i: usize, job: &Job, dir: &std::path::Path) -> std::io::Result<Finished> {
        let bin = &self.built.tests[job.binary];
        run::run_test(&run::TestRun {
            job,
            bin,
            pkg: &self.ws.members[bin.package],
            target_dir: &self.ws.build_dir,
            profile: &self.profile,
            dir,
            limits: self.settings[i].limits,
            threads: self.settings[i].needs.threads,
            edges: self.edges.is_some(),
            servers: self.servers.as_ref(),
            stacks: Some(&self.stacks),
            nocapture: self.nocapture,
        })
    }

    /// `--retries`: re-runs a test whose first run did not pass, up to `retries` more times,
    /// until one passes (then it is flaky). Only the outcomes are kept: the record and the
    /// coverage stay the first run's, the run that showed the failure.
    fn retry(&self, i: usize, job: &Job, rec: &mut TestRecord) {
        let retries = self.settings[i].retries;
        if retries == 0 || rec.outcome == Outcome::Passed {
            return;
        }
        rec.attempts.push(Attempt {
            outcome: rec.outcome,
            duration_ms: rec.duration_ms,
            message: rec.message.clone(),
        });
        for k in 1..=retries {
            if crate::process::interrupted() {
                break;
            }
            let dir = self.scratch.join(format!("t{i}-retry{k}"));
            let attempt = match self.run_process(i, job, &dir) {
                Ok(fin) => Attempt {
                    outcome: fin.outcome,
                    duration_ms: fin.duration.as_millis() as u64,
                    message: fin.message,
                },
                // It ran once, so it can be run: a retry that cannot start says why and stops.
                Err(e) => {
                    rec.warnings.push(format!("retry {k} could not be run: {e}"));
                    break;
                }
            };
            let _ = std::fs::remove_dir_all(&dir);
            let passed = attempt.outcome == Outcome::Passed;
            rec.attempts.push(attempt);
            if passed {
                rec.flaky = true;
                break;
            }
        }
    }

    /// The index among the decoders' executables of the one that runs `job` (a doctest's own
    /// executable, else its test binary).
    pub(super) fn exe_index(&self, job: &Job) -> usize {
        let exe = self.built.tests[job.binary].exe_for(job.name.as_deref());
        self.decoder_index(exe, job.binary)
    }

    /// Records what the process did and decodes its profiles and edge files into `out`
    /// (`exe`: the index of the executable it ran; `single`: it runs no other job, so its
    /// edge map is read for this job alone).
    fn decode(&self, job: &Job, exe: usize, single: bool, fin: Finished, out: &mut JobOutcome) {
        let rec = &mut out.record;
        rec.outcome = fin.outcome;
        rec.signal = fin.signal;
        rec.message = fin.message;
        rec.duration_ms = fin.duration.as_millis() as u64;
        rec.env_reads = fin.env_reads;
        rec.stack = self.workspace_frames(job, &fin.stack);
        if let Some(message) = &rec.message {
            let relative = |file: &str| self.workspace_file(job, file);
            rec.stack = with_panic_site(std::mem::take(&mut rec.stack), message, relative);
        }
        if fin.leaked {
            rec.warnings
                .push("the test left processes running when it ended; cargo sfl killed them".into());
        }
        self.coverage
            .decode_test(exe, &fin.profiles, &mut out.covered, &mut rec.warnings);
        if let Some(collector) = self.edges {
            collector.decode_test(
                &fin.edge_files,
                &mut out.edges,
                &mut rec.warnings,
                single.then_some(exe),
            );
        }
        out.profiles = fin.profiles;
    }

    /// The backtrace frames in the workspace's code, paths made workspace-relative.
    fn workspace_frames(&self, job: &Job, stack: &[RawFrame]) -> Vec<Frame> {
        stack
            .iter()
            .filter_map(|f| {
                Some(Frame {
                    function: f.function.clone(),
                    file: self.workspace_file(job, &f.path.to_string_lossy())?,
                    line: f.line,
                })
            })
            .collect()
    }

    /// A path a test names, relative to the workspace root; `None` outside the workspace. A
    /// relative path is as cargo gave it to the compiler, which it runs in the workspace's
    /// root (a member's `corelib/src/lib.rs`); one that is no file there is taken from the
    /// test's working directory, its package's.
    fn workspace_file(&self, job: &Job, path: &str) -> Option<String> {
        let from_root = self.ws.root.join(path);
        if Path::new(path).is_absolute() || from_root.is_file() {
            return self.ws.relative(&from_root);
        }
        let pkg = &self.ws.members[self.built.tests[job.binary].package];
        let pkg_dir = pkg
            .manifest_path
            .parent()
            .map(|d| d.as_std_path().to_path_buf())
            .unwrap_or_default();
        self.ws.relative(&pkg_dir.join(path))
    }
}

/// The backtrace with the panic's own site first when no frame is there: code inlined into its
/// caller (a test profile built with optimisations) has no frame of its own, so the innermost
/// frame was the caller's line, a call, which stack-first rankings then took for the operation
/// that panicked (base64 with `opt-level = 3`: "index out of bounds" at
/// src/engine/general_purpose/mod.rs:158 was ranked at src/encode.rs:77, the call). A site that
/// is a frame already (a `#[track_caller]` function's caller) changes nothing, nor does one
/// outside the workspace (`relative` gives `None`), nor a message of several panics. (A panic in
/// a `macro_rules!` macro is the same case: the message names the macro's call, the debug
/// information its definition.)
fn with_panic_site(stack: Vec<Frame>, message: &str, relative: impl Fn(&str) -> Option<String>) -> Vec<Frame> {
    let several = message.matches("panicked at ").count() > 1;
    let Some((file, line, _)) = crate::verdict::panic_site(message).filter(|_| !several && !stack.is_empty()) else {
        return stack;
    };
    let Some(file) = relative(&file) else { return stack };
    if stack.iter().any(|f| f.file == file && f.line == line) {
        return stack;
    }
    let site = Frame {
        function: "(the panic's own line: inlined into the frame below, or a macro's call)".into(),
        file,
        line,
    };
    std::iter::once(site).chain(stack).collect()
}

#[cfg(test)]
mod tests {
    use super::with_panic_site;
    use crate::spectra::Frame;

    #[test]
    fn a_panic_site_no_frame_shows_goes_first() {
        let frame = |file: &str, line| Frame {
            function: "f".into(),
            file: file.into(),
            line,
        };
        let stack = vec![frame("src/encode.rs", 77), frame("src/lib.rs", 10)];
        let inside = |f: &str| (!f.starts_with('/')).then(|| f.to_string());
        let message = "panicked at src/engine/mod.rs:158:13:\nindex out of bounds";
        let got = with_panic_site(stack.clone(), message, inside);
        assert_eq!(
            (got[0].file.as_str(), got[0].line, got.len()),
            ("src/engine/mod.rs", 158, 3)
        );
        // Already a frame (a #[track_caller] callee's caller), outside the workspace, or
        // several panics: as it was.
        assert_eq!(
            with_panic_site(stack.clone(), "panicked at src/lib.rs:10:5:\nx", inside),
            stack
        );
        assert_eq!(
            with_panic_site(stack.clone(), "panicked at /rustc/core/src/x.rs:1:1:\nx", inside),
            stack
        );
        let two = "panicked at src/a.rs:1:1:\na\npanicked at src/b.rs:2:2:\nb";
        assert_eq!(with_panic_site(stack.clone(), two, inside), stack);
    }
    use crate::edges::Edge;
    use crate::spectra::BlockId;

    #[test]
    fn edges_sort_as_pairs_do() {
        let e = |from: Option<u32>, to: u32| Edge {
            from: from.map(BlockId),
            to: BlockId(to),
        };
        let mut edges = vec![
            e(Some(3), 1),
            e(None, 7),
            e(Some(0), 9),
            e(None, 2),
            e(Some(3), 1),
            e(Some(u32::MAX - 1), 0),
        ];
        let mut expected = edges.clone();
        expected.sort_unstable();
        expected.dedup();
        super::sort_edges(&mut edges);
        assert_eq!(edges, expected);
    }
}
