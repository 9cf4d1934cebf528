//! `cargo xtask bench panic4r`: real bugs. Panic4R (github.com/cardigan1008/panic4r) holds
//! reproducible panics of popular crates, each with the buggy source snapshot, a trigger
//! program and the fix lines.
//!
//! 1. For each bug of [`CRATES`] in the checkout: the snapshot is copied to
//!    target/bench/panic4r/<bug>/snapshot, the trigger becomes the integration test
//!    `tests/panic4r_trigger.rs`, and `perfect_location.txt` becomes faults.toml ([`prepare`]).
//! 2. cargo sfl runs the crate's tests ([`run`]); a bug is reproduced when the trigger fails and
//!    another test passes. Every bug attempted is recorded with its reason; the record and the
//!    spectra are cached, so a re-run only evaluates.
//! 3. `cargo sfl eval` (the built binary) scores every measure on each reproduced bug, at line
//!    and at function granularity ([`report`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

mod prepare;
pub(crate) mod report;
pub(crate) mod run;

use run::Record;
pub use run::cached as cached_record;

/// The long help of `cargo xtask bench panic4r` (docs/guide/eval-and-benchmarks.md says the same).
pub const ABOUT: &str = "Real bugs: run cargo sfl on the reproducible panics of Panic4R and evaluate every measure.

Get the data with `git clone https://github.com/cardigan1008/panic4r` (a few very large files may be \
missing; the bugs of this benchmark do not need them), then run
`cargo xtask bench panic4r --data ../panic4r [--crates strsim,uuid]`. Each bug's snapshot is copied under \
target/bench/panic4r/<bug>/ with its trigger as the test `panic4r_trigger`; cargo sfl runs the crate's tests \
(dependencies from crates.io), and `cargo sfl eval` scores every measure against the fix lines. Runs are cached \
(`--eval-only` evaluates only what is cached). Results: bench-results/panic4r.md and panic4r.json.";

/// The crates whose bugs the benchmark attempts (directory `lib-<name>` in the checkout).
pub const CRATES: &[&str] = &[
    "strsim",
    "textwrap",
    "smallvec",
    "hashbrown",
    "num-bigint",
    "regex",
    "aho-corasick",
    "syn",
    "clap",
    "idna",
    "chrono",
    "nom",
    "time",
    "toml",
    "percent-encoding",
    "form_urlencoded",
    "uuid",
    "httparse",
    "bumpalo",
    "rustc-demangle",
];

#[derive(clap::Args)]
pub struct Args {
    /// The Panic4R checkout (`git clone https://github.com/cardigan1008/panic4r`).
    #[arg(long)]
    pub data: PathBuf,
    /// Only these crates (comma-separated names of the benchmark's crates).
    #[arg(long, value_delimiter = ',')]
    pub crates: Vec<String>,
    /// Only evaluate what is cached; run nothing.
    #[arg(long)]
    pub eval_only: bool,
    /// Kill a bug's cargo sfl run (build and tests) after this many seconds.
    #[arg(long, default_value_t = 1800)]
    pub bug_timeout: u64,
    /// Keep each crate's build directories (target/bench/panic4r/target-*) after its bugs ran;
    /// by default they are deleted then (they reach tens of GB over the benchmark).
    #[arg(long)]
    pub keep_builds: bool,
    /// Where panic4r.md and panic4r.json go (relative to the repository).
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
}

/// The bugs of one crate in the checkout: (bug name, its directory), sorted by name.
fn bugs_of(data: &Path, krate: &str) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(data.join(format!("lib-{krate}"))) else {
        return Vec::new();
    };
    let mut bugs: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    bugs.sort();
    bugs
}

pub fn run_bench(args: &Args) -> Result<()> {
    let crates: Vec<&str> = CRATES
        .iter()
        .copied()
        .filter(|c| args.crates.is_empty() || args.crates.iter().any(|a| a == c))
        .collect();
    for a in &args.crates {
        if !CRATES.contains(&a.as_str()) {
            anyhow::bail!("{a} is not one of the benchmark's crates: {}", CRATES.join(", "));
        }
    }
    let cache = crate::root().join("target/bench/panic4r");
    // Built even with --eval-only: evaluating with a stale binary would report old rankings.
    let sfl = crate::build_sfl()?;
    let runner = run::Runner {
        sfl: &sfl,
        timeout: Duration::from_secs(args.bug_timeout),
        builds: Default::default(),
    };
    let (mut records, mut not_run) = (Vec::new(), Vec::new());
    for krate in &crates {
        let bugs = bugs_of(&args.data, krate);
        if bugs.is_empty() {
            eprintln!("warning: no bugs of {krate} under {}", args.data.display());
        }
        for (bug, bug_dir) in bugs {
            let Some(r) = attempt(&runner, &cache.join(&bug), (&bug, &bug_dir), krate, args.eval_only)? else {
                not_run.push(bug);
                continue;
            };
            eprintln!(
                "== {bug:<22} {:>6.0}s {}",
                r.seconds,
                if r.reproduced { "reproduced" } else { &r.reason }
            );
            records.push(r);
        }
        // The bugs of one crate share snapshots, so its builds go once all of them ran.
        if !args.keep_builds {
            runner.remove_builds();
        }
    }
    let out_dir = crate::root().join(&args.output_dir);
    evaluate(&sfl, &cache, (&records, not_run), &crates, &out_dir)
}

/// Prepares a reproduced bug again (as its recorded run did: lockfile, features) and hands
/// `measure` a `cargo sfl` command for it, its manifest and the fix lines; the bug's build
/// directory is removed afterwards.
pub fn mutate_bug<T>(
    sfl: &Path,
    data: &Path,
    record: &Record,
    dir: &Path,
    measure: impl FnOnce(std::process::Command, &Path, &[(String, u32)]) -> Result<T>,
) -> Result<T> {
    let bug_dir = bugs_of(data, &record.krate)
        .into_iter()
        .find(|(b, _)| *b == record.bug)
        .map(|(_, d)| d)
        .ok_or_else(|| anyhow::anyhow!("{} is not in {}", record.bug, data.display()))?;
    let p = prepare::prepare(&bug_dir, dir)?;
    if record.lockfile == "updated" {
        std::process::Command::new(env!("CARGO"))
            .arg("update")
            .current_dir(&p.workspace_root)
            .output()?;
    }
    let all_features = record.notes.iter().any(|n| n.contains("--all-features"));
    let target = dir.with_file_name(format!("target-mutate-{}", record.bug));
    let cmd = run::sfl_command(sfl, &p, &target, all_features);
    let faults = cargo_sfl::faults::load(&dir.join("faults.toml")).map_err(|e| anyhow::anyhow!("{e}"))?;
    let lines: Vec<(String, u32)> = faults
        .iter()
        .flat_map(|f| f.lines.iter().map(|&l| (f.file.clone(), l)))
        .collect();
    let got = measure(cmd, &p.crate_dir.join("Cargo.toml"), &lines);
    let _ = std::fs::remove_dir_all(&target);
    got
}

/// One bug: its cached record, or prepared and run now (None: not run, with --eval-only).
fn attempt(
    runner: &run::Runner,
    dir: &Path,
    (bug, bug_dir): (&str, &Path),
    krate: &str,
    eval_only: bool,
) -> Result<Option<Record>> {
    if let Some(r) = run::cached(dir) {
        return Ok(Some(r));
    }
    if eval_only {
        return Ok(None);
    }
    std::fs::create_dir_all(dir)?;
    let r = match prepare::prepare(bug_dir, dir) {
        Ok(p) => runner.run_bug((bug, krate), dir, &p)?,
        Err(e) => {
            let r = Record::failed(bug, krate, format!("cannot prepare: {e:#}"));
            std::fs::write(dir.join("record.json"), serde_json::to_vec_pretty(&r)?)?;
            r
        }
    };
    Ok(Some(r))
}

fn evaluate(
    sfl: &Path,
    cache: &Path,
    (records, not_run): (&[Record], Vec<String>),
    crates: &[&str],
    out_dir: &Path,
) -> Result<()> {
    let mut sums = report::Sums::default();
    let mut unlocalisable = Vec::new();
    for r in records.iter().filter(|r| r.reproduced) {
        let dir = cache.join(&r.bug);
        let (spectra, faults) = (run::spectra_path(&dir), dir.join("faults.toml"));
        let root = report::workspace_root(&spectra);
        let spectra = (spectra.as_path(), root.as_deref());
        // The combined ranking ranks this crate by weights fitted without it (cross-validation),
        // when the fit held it out.
        let weights = crate::folds::fold_weights_file(out_dir, &r.krate, cache)?.map(|p| p.display().to_string());
        let extra: Vec<&str> = weights.iter().flat_map(|w| ["--weights", w.as_str()]).collect();
        let eval = |more: &[&str]| report::eval(sfl, spectra, &faults, &[extra.as_slice(), more].concat());
        match eval(&[])? {
            Some(line) => sums.add(&report::Evals {
                line,
                function: eval(&["--granularity", "function"])?,
                with_tests: eval(&["--include-test-code"])?,
            }),
            None => unlocalisable.push(format!("{}: no test ran a fix line", r.bug)),
        }
    }
    report::write(
        out_dir,
        &report::Summary {
            records,
            not_run,
            unlocalisable,
            sums,
            crates: crates.iter().map(|c| c.to_string()).collect(),
        },
    )
}
