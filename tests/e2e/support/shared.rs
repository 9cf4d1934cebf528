//! Runs that many trials read and none changes: `cargo sfl ARGS` on a copy of a fixture, made
//! once per suite run by the first trial that asks for it and read by every trial that asks
//! after it (libtest-mimic runs trials on several threads: a trial that asks while the run is
//! under way waits for it). The copies are removed when the suite ends ([`remove_all`]).
//!
//! A trial that reads a shared run writes nothing into its directory: reports, pages and
//! scratch files go to a temporary directory of the trial's own.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::{Mutex, OnceLock};

use super::{Result, check, copy_fixture, sfl, show};

/// A finished run of a fixture: its copy (sources, target dir, saved spectra) and its output.
pub struct Saved {
    dir: PathBuf,
    /// What the run printed and how it exited.
    pub out: Output,
}

impl Saved {
    /// The fixture copy the run was made in (its workspace root).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The spectra file the run saved.
    pub fn spectra(&self) -> PathBuf {
        self.dir.join("target/sfl/spectra.json")
    }
}

/// The fixture and the arguments of a shared run.
type Key = (&'static str, &'static [&'static str]);

/// Where a shared run is kept once made; it lives as long as the suite.
type Slot = OnceLock<Saved>;

static RUNS: Mutex<BTreeMap<Key, &'static Slot>> = Mutex::new(BTreeMap::new());

/// `cargo sfl ARGS` on a copy of `fixture`, shared by every trial that asks for the same
/// fixture and arguments; an error showing the run's output unless it exited 0.
pub fn run(fixture: &'static str, args: &'static [&'static str]) -> Result<&'static Saved> {
    let slot: &'static Slot = RUNS
        .lock()
        .unwrap()
        .entry((fixture, args))
        .or_insert_with(|| &*Box::leak(Box::default()));
    let saved = slot.get_or_init(|| {
        let tmp = copy_fixture(fixture);
        let out = sfl(args, tmp.path());
        Saved { dir: tmp.keep(), out }
    });
    check(saved.out.status.code() == Some(0), || {
        format!(
            "the shared run `cargo sfl {}` of {fixture} failed:\n{}",
            args.join(" "),
            show(&saved.out)
        )
    })?;
    Ok(saved)
}

/// Removes the copies of every shared run made; called once every trial has finished.
pub fn remove_all() {
    for slot in RUNS.lock().unwrap().values() {
        if let Some(saved) = slot.get() {
            let _ = std::fs::remove_dir_all(&saved.dir);
        }
    }
}
