//! Running cargo sfl on one prepared bug (with a wall-clock limit and, when the snapshot's own
//! Cargo.lock does not build, once more after `cargo update`) and recording what happened.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use cargo_sfl::spectra::Spectra;
use serde::{Deserialize, Serialize};

use super::prepare::{Prepared, TRIGGER};
use crate::cargo_log::first_error;

/// A bug attempted, and what happened: the cached record of its run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub bug: String,
    /// The Panic4R crate (`lib-<krate>` in the checkout).
    pub krate: String,
    /// The package whose tests ran (the trigger's path dependency), when the bug got that far.
    #[serde(default)]
    pub package: String,
    pub reproduced: bool,
    /// Why the bug is not reproduced (empty when it is).
    pub reason: String,
    /// What became of the snapshot's Cargo.lock: kept, updated (`cargo update` after the kept
    /// one failed) or generated (there was none).
    pub lockfile: String,
    pub notes: Vec<String>,
    pub tests: usize,
    pub failing: usize,
    /// Failing tests other than the trigger (the snapshot's own failures on today's toolchain).
    pub other_failing: usize,
    pub seconds: f64,
}

impl Record {
    pub fn failed(bug: &str, krate: &str, reason: String) -> Record {
        Record {
            bug: bug.to_string(),
            krate: krate.to_string(),
            package: String::new(),
            reproduced: false,
            reason,
            lockfile: String::new(),
            notes: Vec::new(),
            tests: 0,
            failing: 0,
            other_failing: 0,
            seconds: 0.0,
        }
    }
}

/// How cargo sfl ran on a bug's crate.
pub struct Runner<'a> {
    pub sfl: &'a Path,
    pub timeout: Duration,
    /// The build directories the runs used since the last [`Runner::remove_builds`].
    pub builds: std::cell::RefCell<Vec<PathBuf>>,
}

/// One cargo sfl run's outcome: its exit code (None when killed at the time limit) and log.
struct Outcome {
    code: Option<i32>,
    log: String,
}

impl Runner<'_> {
    /// Runs cargo sfl on the prepared bug, saving the spectra to `dir/spectra.json`.
    pub fn run_bug(&self, (bug, krate): (&str, &str), dir: &Path, p: &Prepared) -> Result<Record> {
        let started = Instant::now();
        let spectra = dir.join("spectra.json");
        let _ = std::fs::remove_file(&spectra);
        let mut lockfile = if p.had_lockfile { "kept" } else { "generated" };
        let mut out = self.sfl_once(dir, p, &spectra, false)?;
        let mut notes = p.notes.clone();
        if out.code == Some(101) && !out.log.contains("network failure") {
            // Some suites build only with every feature (syn's tests stop a build without
            // them with "Hello! You want: cargo test --release --all-features").
            let all = self.sfl_once(dir, p, &spectra, true)?;
            if all.code != Some(101) {
                notes.push("its tests build only with --all-features".into());
                out = all;
            }
        }
        if p.had_lockfile && matches!(out.code, Some(101 | 96)) {
            // Old lockfiles pin dependencies that today's compiler rejects: update and retry.
            let up = Command::new(env!("CARGO"))
                .arg("update")
                .current_dir(&p.workspace_root)
                .output()?;
            if up.status.success() {
                lockfile = "updated";
                out = self.sfl_once(dir, p, &spectra, false)?;
            }
        }
        std::fs::write(dir.join("sfl.log"), &out.log)?;
        let mut r = Record::failed(bug, krate, String::new());
        r.package = p.manifest.krate.clone();
        r.lockfile = lockfile.to_string();
        r.notes = notes;
        r.seconds = started.elapsed().as_secs_f64();
        r.reason = match out.code {
            None => format!("cargo sfl did not finish within {} s", self.timeout.as_secs()),
            Some(0) => String::new(),
            Some(3) => "the trigger test does not fail (no test fails)".into(),
            Some(4) => "no tests".into(),
            Some(101) if out.log.contains("network failure") => format!(
                "a dependency cannot be fetched (no network access to it): {}",
                first_error(&out.log)
            ),
            Some(101) => format!(
                "does not build with today's stable toolchain: {}",
                first_error(&out.log)
            ),
            Some(c) => format!("cargo sfl exited with {c}: {}", first_error(&out.log)),
        };
        if out.code == Some(0) {
            judge(&mut r, &Spectra::load(&spectra).map_err(anyhow::Error::msg)?);
        }
        let stdin = r.notes.iter().find(|n| n.contains("stdin")).cloned();
        if let Some(n) = stdin.filter(|_| !r.reproduced && r.reason.contains("does not fail")) {
            r.reason = format!("{}: {n}", r.reason);
        }
        if !r.reproduced {
            let _ = std::fs::remove_file(&spectra);
        }
        std::fs::write(dir.join("record.json"), serde_json::to_vec_pretty(&r)?)?;
        Ok(r)
    }

    /// Deletes the build directories of the runs so far (only build output: the spectra,
    /// records and snapshots stay). A crate's snapshots can take several GB each.
    pub fn remove_builds(&self) {
        for d in self.builds.borrow_mut().drain(..) {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    fn sfl_once(&self, dir: &Path, p: &Prepared, spectra: &Path, all_features: bool) -> Result<Outcome> {
        // Shared by the bugs of one snapshot: their dependencies are built once.
        let target = dir.with_file_name(format!("target-{}", p.snapshot_name));
        if !self.builds.borrow().contains(&target) {
            self.builds.borrow_mut().push(target.clone());
        }
        let mut cmd = sfl_command(self.sfl, p, &target, all_features);
        cmd.arg("--save-spectra").arg(spectra);
        let log_path = dir.join("sfl.log");
        let log = std::fs::File::create(&log_path)?;
        cmd.stdout(Stdio::null()).stderr(log);
        let code = run_with_timeout(&mut cmd, self.timeout)?;
        Ok(Outcome {
            code,
            log: std::fs::read_to_string(&log_path).unwrap_or_default(),
        })
    }
}

/// `cargo sfl` on a prepared bug, JSON report on stdout: its manifest, features and build
/// directory (`target`), with `--all-features` when the suite builds only so.
pub fn sfl_command(sfl: &Path, p: &Prepared, target: &Path, all_features: bool) -> Command {
    let mut cmd = Command::new(sfl);
    cmd.args(["sfl", "--color", "never", "--format", "json", "--test-timeout", "120"])
        .arg("--manifest-path")
        .arg(p.crate_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target);
    if all_features {
        cmd.arg("--all-features");
    } else if !p.manifest.features.is_empty() {
        cmd.arg("--features").arg(p.manifest.features.join(","));
    }
    if !p.manifest.default_features && !all_features {
        cmd.arg("--no-default-features");
    }
    // Old crates deny lints that today's compiler has added: warnings only.
    cmd.env("RUSTFLAGS", "--cap-lints=warn");
    cmd
}

/// The exit code, or None when the command (and its process group) was killed at the limit.
pub fn run_with_timeout(cmd: &mut Command, limit: Duration) -> Result<Option<i32>> {
    use std::os::unix::process::CommandExt;
    let mut child = cmd.process_group(0).spawn()?;
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status.code().unwrap_or(-1)));
        }
        if started.elapsed() > limit {
            // The whole group: cargo, rustc and the tests it started.
            crate::kill_group(&mut child);
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Reproduced: the trigger test fails and at least one other test passes.
fn judge(r: &mut Record, s: &Spectra) {
    let is_trigger =
        |t: &cargo_sfl::spectra::TestRecord| t.name == TRIGGER || t.name.ends_with(&format!("::{TRIGGER}"));
    r.tests = s.tests.len();
    r.failing = s.tests.iter().filter(|t| t.outcome.is_failing()).count();
    r.other_failing = s
        .tests
        .iter()
        .filter(|t| t.outcome.is_failing() && !is_trigger(t))
        .count();
    let trigger_fails = s.tests.iter().any(|t| is_trigger(t) && t.outcome.is_failing());
    let passing = s
        .tests
        .iter()
        .any(|t| !is_trigger(t) && t.outcome.ran() && !t.outcome.is_failing());
    r.reason = match (s.tests.iter().any(is_trigger), trigger_fails, passing) {
        (false, _, _) => "the trigger test did not run".into(),
        (true, false, _) => "the trigger test does not fail".into(),
        (true, true, false) => "no passing test".into(),
        (true, true, true) => String::new(),
    };
    r.reproduced = r.reason.is_empty();
}

/// The cached record of a bug, if it was run before.
pub fn cached(dir: &Path) -> Option<Record> {
    serde_json::from_slice(&std::fs::read(dir.join("record.json")).ok()?).ok()
}

/// The spectra of a reproduced bug.
pub fn spectra_path(dir: &Path) -> PathBuf {
    dir.join("spectra.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remove_builds_deletes_each_build_directory_used_once() {
        let tmp = std::env::temp_dir().join(format!("xtask-remove-builds-{}", std::process::id()));
        let (a, b) = (tmp.join("target-a"), tmp.join("target-b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d.join("debug")).unwrap();
        }
        let keep = tmp.join("bug-1");
        std::fs::create_dir_all(&keep).unwrap();
        let runner = Runner {
            sfl: Path::new("cargo-sfl"),
            timeout: Duration::from_secs(1),
            builds: std::cell::RefCell::new(vec![a.clone(), b.clone()]),
        };
        runner.remove_builds();
        assert!(!a.exists() && !b.exists() && keep.exists());
        assert!(runner.builds.borrow().is_empty());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
