//! Saving the spectra (the workspace's file, `--save-spectra`, the tests' durations and the
//! kept profiles' index) on a thread of its own while the report is written.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::journal;
use super::lock;
use super::outcome::JobOutcome;
use super::plan::{self, durations_path};
use crate::config::Execution;
use crate::error::SflError;
use crate::run::Job;
use crate::spectra::{Outcome, Spectra};
use crate::ui;
use crate::workspace::{Built, Workspace};

/// Written next to kept profiles (`--keep-profiles`), for the decoder oracle and debugging.
#[derive(Serialize, Deserialize, Debug)]
pub struct KeptProfile {
    pub binary: String,
    pub name: String,
    pub binary_path: PathBuf,
    pub profiles: Vec<PathBuf>,
}

/// What a collect hands the report: the spectra (with their source facts) and the saving of
/// the spectra, under way.
pub struct Collected {
    pub spectra: Arc<Spectra>,
    pub saving: Saving,
}

/// The spectra being saved on a thread of their own.
pub struct Saving(std::thread::JoinHandle<anyhow::Result<()>>);

impl Saving {
    /// Saves `spectra` on a thread of its own (serialising and writing them need not hold up
    /// the report, which is written meanwhile on another core), then ends the journals (the
    /// doctests', when they ran after the other tests, have their own); the target dir's `lock`
    /// is held until they are saved.
    pub(super) fn start(
        spectra: Arc<Spectra>,
        to: SaveTo,
        kept: Option<Vec<KeptProfile>>,
        journals: Vec<journal::Journal>,
        lock: lock::DirLock,
    ) -> Saving {
        Saving(std::thread::spawn(move || {
            save(&spectra, &to, kept)?;
            journals.into_iter().for_each(journal::Journal::finish);
            drop(lock);
            Ok(())
        }))
    }

    /// Waits until the spectra are saved; a failure to save them is the run's error.
    pub fn wait(self) -> anyhow::Result<()> {
        self.0
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("saving the spectra panicked")))
    }
}

/// Which profiles each test left (`--keep-profiles`).
pub(super) fn kept_index(outcomes: &[JobOutcome], jobs: &[Job], built: &Built) -> Vec<KeptProfile> {
    outcomes
        .iter()
        .zip(jobs)
        .map(|(o, job)| KeptProfile {
            binary: o.record.binary.clone(),
            name: o.record.name.clone(),
            binary_path: built.tests[job.binary].exe_for(job.name.as_deref()).to_path_buf(),
            profiles: o.profiles.clone(),
        })
        .collect()
}

/// Where [`save`] writes: owned, for the thread that saves.
pub(super) struct SaveTo {
    main: PathBuf,
    /// `--save-spectra`.
    extra: Option<PathBuf>,
    durations: PathBuf,
    scratch: PathBuf,
}

impl SaveTo {
    pub(super) fn new(ws: &Workspace, exec: &Execution, scratch: PathBuf) -> Self {
        SaveTo {
            main: ws.spectra_path(),
            extra: exec.save_spectra.clone(),
            durations: durations_path(ws),
            scratch,
        }
    }
}

/// Saves the spectra (the workspace's file, and `--save-spectra`) and the kept profiles' index.
fn save(spectra: &Spectra, to: &SaveTo, kept: Option<Vec<KeptProfile>>) -> anyhow::Result<()> {
    let main = &to.main;
    let output = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SflError::Output {
            what: "the spectra",
            path,
            source,
        }
    };
    let saved = save_keeping_failures(spectra, main).map_err(output(main))?;
    match saved {
        Saved::Green { kept, green } => ui::note(format!(
            "no test failed: kept the last run with failures ({kept}) at {}, for `cargo sfl report`; \
             this run's spectra are at {}",
            main.display(),
            green.display()
        )),
        Saved::Narrower { kept, green, latest } => ui::note(format!(
            "no test failed: kept the last run with failures ({kept}) at {}, for `cargo sfl report`, \
             and the last run in which they passed at {}, which ran tests this run did not; \
             this run's spectra are at {}",
            main.display(),
            green.display(),
            latest.display()
        )),
        Saved::Main => {}
    }
    for path in to.extra.iter() {
        spectra.save(path).map_err(output(path))?;
    }
    // They only order the next run: not keeping them is no reason to fail this one.
    if let Err(e) = plan::save_durations(&to.durations, &spectra.tests) {
        ui::warn(format!("cannot write {}: {e}", to.durations.display()));
    }
    if let Some(kept) = kept {
        let index = to.scratch.join("index.json");
        std::fs::write(&index, serde_json::to_vec_pretty(&kept)?)?;
        ui::status("Kept", format!("profiles: {}", index.display()));
    }
    Ok(())
}

/// Where the workspace's spectra went.
#[derive(Debug, PartialEq)]
enum Saved {
    /// To the workspace's file.
    Main,
    /// To `green` (no test failed), keeping the earlier run with failures in the workspace's
    /// file; `kept` says when it ran and how many tests failed.
    Green { kept: String, green: PathBuf },
    /// To `latest` ([`LATEST`]): no test failed, but the baseline at `green` has tests this
    /// run did not run, and the earlier run with failures stays in the workspace's file
    /// (`kept` as for [`Saved::Green`]).
    Narrower {
        kept: String,
        green: PathBuf,
        latest: PathBuf,
    },
}

/// The baseline failing tests are compared with (the last green run), beside the workspace's
/// spectra.
pub(super) const GREEN: &str = "spectra-green.json";

/// Where a green run that ran fewer tests than the kept baseline goes ([`Saved::Narrower`]),
/// beside the workspace's spectra.
pub(super) const LATEST: &str = "spectra-latest.json";

/// Saves `spectra` to `main`, unless no test failed and `main` holds a run with failing tests:
/// a green run (a flaky test passing this time, a fix being tried) must not silently replace
/// the evidence. Then the green run goes to `spectra-green.json` next to it. A run with
/// failures replaces `main`; first, the run `main` held becomes `spectra-green.json`, the
/// baseline later runs compare with to say what changed since their failing tests last passed,
/// when it was green, or, when no baseline is kept (a test that always fails here: a UI test
/// written for another toolchain, one that needs the network), when this run fails a test that
/// passed in it. A run whose failures the baseline had too takes its place (the baseline is
/// dropped: the workspace's file is as good a baseline). A green run saved to `main` drops the
/// baseline as well.
fn save_keeping_failures(spectra: &Spectra, main: &Path) -> std::io::Result<Saved> {
    let green = main.with_file_name(GREEN);
    // Timed-out tests count: such a run is not green either.
    let bad = |o: &Outcome| o.is_failing() || *o == Outcome::TimedOut;
    let failing_now: HashSet<String> = spectra
        .tests
        .iter()
        .filter(|t| bad(&t.outcome))
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect();
    // Only outcomes: another workspace's run (one target dir shared by several, as a global
    // `build.target-dir` makes it) is none.
    let earlier = Spectra::outcomes_in(main, &spectra.workspace_root);
    let failing_in = |run: &[(String, Outcome)]| run.iter().filter(|(_, o)| bad(o)).count();
    if failing_now.is_empty()
        && let Some(n) = earlier.as_deref().map(failing_in)
        && n > 0
    {
        let when = std::fs::metadata(main).and_then(|m| m.modified());
        let kept = format!(
            "{}, {n} test{} not passing",
            when.map_or_else(|_| "time unknown".into(), ui::ago),
            if n == 1 { "" } else { "s" }
        );
        if narrower_than(spectra, &green) {
            // Kept for the next run to reuse its rows (`reuse::last_run`: the newest of the three).
            let latest = main.with_file_name(LATEST);
            spectra.save(&latest)?;
            return Ok(Saved::Narrower { kept, green, latest });
        }
        spectra.save(&green)?;
        return Ok(Saved::Green { kept, green });
    }
    if !failing_now.is_empty() {
        let baseline = Spectra::outcomes_in(&green, &spectra.workspace_root);
        let earlier_becomes_baseline = earlier.as_deref().is_some_and(|e| {
            failing_in(e) == 0
                || (baseline.is_none() && e.iter().any(|(t, o)| *o == Outcome::Passed && failing_now.contains(t)))
        });
        let baseline_failures = |b: &[(String, Outcome)]| -> HashSet<String> {
            b.iter().filter(|(_, o)| bad(o)).map(|(t, _)| t.clone()).collect()
        };
        if earlier_becomes_baseline {
            std::fs::rename(main, &green)?;
        } else if let Some(b) = baseline.as_deref()
            && failing_in(b) > 0
            && failing_now.is_subset(&baseline_failures(b))
        {
            std::fs::remove_file(&green)?;
        }
        spectra.save(main)?;
        return Ok(Saved::Main);
    }
    spectra.save(main)?;
    match std::fs::remove_file(&green) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(Saved::Main),
    }
}

/// Whether `spectra`, a green run, ran fewer tests than the baseline at `green` under another
/// selection (`-p` of one member, a name filter): it says nothing of the baseline's others, so
/// the baseline stays, or the next run of them could not say what changed since they last
/// passed. Fewer tests under the same selection are tests deleted or renamed since: this run
/// is the baseline then.
fn narrower_than(spectra: &Spectra, green: &Path) -> bool {
    let now: HashSet<String> = spectra
        .tests
        .iter()
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect();
    let selection = spectra.snapshot.as_ref().and_then(|s| s.context.get("selection"));
    Spectra::skim(green, &spectra.workspace_root).is_some_and(|(baseline, baseline_selection)| {
        baseline_selection.as_ref() != selection && baseline.iter().any(|(t, _)| !now.contains(t))
    })
}

#[cfg(test)]
mod saving {
    use super::*;
    use crate::spectra::{Outcome, TestRecord};

    fn run(outcome: Outcome) -> Spectra {
        let tests = vec![TestRecord::new("b", "t", outcome)];
        Spectra::from_tests("/ws".into(), tests, Vec::new(), &[Vec::new()])
    }

    #[test]
    fn a_green_run_never_replaces_a_run_with_failures() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("spectra.json");
        let green = dir.path().join("spectra-green.json");
        let outcome = |p: &Path| Spectra::load(p).unwrap().tests[0].outcome;
        // Nothing before: a green run is saved as the workspace's spectra.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Passed), &main).unwrap(),
            Saved::Main
        );
        assert_eq!(outcome(&main), Outcome::Passed);
        // A failing run replaces a green one.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Failed), &main).unwrap(),
            Saved::Main
        );
        // A green run after it goes next to it.
        let Saved::Green { kept, green: to } = save_keeping_failures(&run(Outcome::Passed), &main).unwrap() else {
            panic!("the failing run was replaced")
        };
        assert_eq!(to, green);
        assert!(kept.ends_with("s ago, 1 test not passing"), "{kept}");
        assert_eq!((outcome(&main), outcome(&green)), (Outcome::Failed, Outcome::Passed));
        // The next run with failures replaces the kept one and keeps the last green run.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Crashed), &main).unwrap(),
            Saved::Main
        );
        assert_eq!((outcome(&main), outcome(&green)), (Outcome::Crashed, Outcome::Passed));
        // A green run with a green one before: the workspace's file, the stale green file
        // dropped; a run with failures then moves that green run aside first.
        let dir = tempfile::tempdir().unwrap();
        let (main, green) = (dir.path().join("spectra.json"), dir.path().join("spectra-green.json"));
        std::fs::write(&green, "stale").unwrap();
        save_keeping_failures(&run(Outcome::Passed), &main).unwrap();
        assert!(!green.exists());
        save_keeping_failures(&run(Outcome::Failed), &main).unwrap();
        assert_eq!((outcome(&main), outcome(&green)), (Outcome::Failed, Outcome::Passed));
    }

    /// A green run of fewer tests (`cargo sfl -p other` between two runs of the whole
    /// workspace) keeps the baseline of the tests it did not run: before, it took the
    /// baseline's place, and the next run of the whole workspace had no baseline for its
    /// failing test (no "changed since these tests last passed").
    #[test]
    fn a_green_run_of_fewer_tests_keeps_the_baseline() {
        let selected = |selection: &str, tests: &[(&str, Outcome)]| {
            let tests: Vec<TestRecord> = tests.iter().map(|(n, o)| TestRecord::new("b", *n, *o)).collect();
            let rows = vec![Vec::new(); tests.len()];
            let mut spectra = Spectra::from_tests("/ws".into(), tests, Vec::new(), &rows);
            let mut snapshot = crate::spectra::Snapshot::default();
            snapshot.context.insert("selection".into(), selection.into());
            spectra.snapshot = Some(snapshot);
            spectra
        };
        let of = |tests: &[(&str, Outcome)]| selected("workspace", tests);
        let dir = tempfile::tempdir().unwrap();
        let (main, green) = (dir.path().join("spectra.json"), dir.path().join("spectra-green.json"));
        let names = |p: &Path| {
            Spectra::load(p)
                .unwrap()
                .tests
                .iter()
                .map(|t| t.name.clone())
                .collect::<Vec<_>>()
        };
        save_keeping_failures(&of(&[("a", Outcome::Passed), ("x", Outcome::Passed)]), &main).unwrap();
        save_keeping_failures(&of(&[("a", Outcome::Failed), ("x", Outcome::Passed)]), &main).unwrap();
        assert_eq!(names(&green), ["a", "x"]);
        let saved = save_keeping_failures(&selected("-p other", &[("x", Outcome::Passed)]), &main).unwrap();
        assert!(matches!(saved, Saved::Narrower { .. }), "{saved:?}");
        assert_eq!(names(&dir.path().join(LATEST)), ["x"], "kept for the next run to reuse");
        assert_eq!(
            (names(&main), names(&green)),
            (vec!["a".to_string(), "x".into()], vec!["a".to_string(), "x".into()])
        );
        // A green run of every test the baseline has takes its place.
        let saved = save_keeping_failures(
            &of(&[("a", Outcome::Passed), ("x", Outcome::Passed), ("y", Outcome::Passed)]),
            &main,
        )
        .unwrap();
        assert!(matches!(saved, Saved::Green { .. }), "{saved:?}");
        assert_eq!(names(&green), ["a", "x", "y"]);
        // Fewer tests under the same selection: `y` was deleted (or renamed), and this run is
        // the baseline now, or `y` would hold the baseline back for ever.
        save_keeping_failures(&of(&[("a", Outcome::Failed), ("x", Outcome::Passed)]), &main).unwrap();
        let saved = save_keeping_failures(&of(&[("a", Outcome::Passed), ("x", Outcome::Passed)]), &main).unwrap();
        assert!(matches!(saved, Saved::Green { .. }), "{saved:?}");
        assert_eq!(names(&green), ["a", "x"]);
    }

    /// A test that always fails (`c`): the last run before another test (`f`) began to fail is
    /// the baseline; a run whose only failures the baseline had takes its place.
    #[test]
    fn with_a_test_that_always_fails_the_run_before_new_failures_is_the_baseline() {
        let two = |f: Outcome| {
            let tests = vec![TestRecord::new("b", "c", Outcome::Failed), TestRecord::new("b", "f", f)];
            Spectra::from_tests("/ws".into(), tests, Vec::new(), &[Vec::new(), Vec::new()])
        };
        let dir = tempfile::tempdir().unwrap();
        let (main, green) = (dir.path().join("spectra.json"), dir.path().join("spectra-green.json"));
        let f_in = |p: &Path| Spectra::load(p).unwrap().tests[1].outcome;
        save_keeping_failures(&two(Outcome::Passed), &main).unwrap();
        assert!(!green.exists());
        // `f` fails: the run it passed in is the baseline.
        save_keeping_failures(&two(Outcome::Failed), &main).unwrap();
        assert_eq!((f_in(&main), f_in(&green)), (Outcome::Failed, Outcome::Passed));
        // It fails again: the baseline stays.
        save_keeping_failures(&two(Outcome::Crashed), &main).unwrap();
        assert_eq!((f_in(&main), f_in(&green)), (Outcome::Crashed, Outcome::Passed));
        // Fixed, `c` still failing: that run is the baseline now, in the workspace's file.
        save_keeping_failures(&two(Outcome::Passed), &main).unwrap();
        assert!(!green.exists());
        assert_eq!(f_in(&main), Outcome::Passed);
    }

    /// One target dir shared by two workspaces: the other workspace's run with failures is not
    /// this workspace's to keep, so this one's green run replaces it.
    #[test]
    fn another_workspaces_failures_are_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("spectra.json");
        let other = Spectra::from_tests(
            "/other".into(),
            vec![TestRecord::new("b", "t", Outcome::Failed)],
            Vec::new(),
            &[Vec::new()],
        );
        save_keeping_failures(&other, &main).unwrap();
        assert_eq!(
            save_keeping_failures(&run(Outcome::Passed), &main).unwrap(),
            Saved::Main
        );
        let saved = Spectra::load(&main).unwrap();
        assert_eq!(
            (saved.workspace_root.as_str(), saved.tests[0].outcome),
            ("/ws", Outcome::Passed)
        );
    }
}
