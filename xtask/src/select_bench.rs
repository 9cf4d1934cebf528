//! `cargo xtask bench select`: test selection proven safe and measured. On crates of the corpus
//! benchmark (each a copy under target/bench/select/NAME), random source edits: mutations
//! (operators, conditions, constants), removed and added statements, edits outside every
//! function, and edits of comments and whitespace alone. For each edit, from the crate's
//! pristine spectra (`--reuse-spectra`): the selected run, a full run (`--rerun`) and
//! `cargo test`, each timed; the selected run's spectra must equal the full run's, test by
//! test (outcome, lines, edges). Tests whose rows differ between two full runs of the pristine
//! crate (random inputs, timing) are nondeterministic, and so are, for one edit, those whose
//! rows differ between two full runs of the edited crate (a second full run is made only for
//! an edit whose runs differ): their differences are counted apart. Per crate also: a cold run and a warm full run against `cargo test`. `--recheck`
//! runs the cached edits that differed again. Written to bench-results/select.md and
//! select.json.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::corpus_bench::{Ran, run_merged};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Crates of the corpus benchmark (name-version); default: six quick ones with unit,
    /// integration and doctests.
    #[arg(long = "crate")]
    pub crates: Vec<String>,
    /// Edits per crate that build (edits that do not compile are drawn again).
    #[arg(long, default_value_t = 40)]
    pub edits: usize,
    /// Seed of the edit sampling.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Warm full runs of each of `cargo sfl` and `cargo test` (alternated; medians); each
    /// `cargo sfl` run after the first is compared with the first for nondeterministic tests.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,
    /// Only summarise the cached results.
    #[arg(long)]
    pub eval_only: bool,
    /// Run again the cached edits whose selected and full runs differed (selected, full, and a
    /// second full run that tells a nondeterministic test from a selection error), then
    /// summarise.
    #[arg(long)]
    pub recheck: bool,
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
}

const DEFAULT: &[&str] = &[
    "semver-1.0.28",
    "either-1.19.0",
    "smallvec-1.16.5",
    "heck-0.5.0",
    "bitflags-2.13.2",
    "indexmap-2.14.2",
];

/// One edit's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Edit {
    krate: String,
    file: String,
    line: u32,
    kind: String,
    /// What the edit did (the replaced text and its replacement).
    change: String,
    /// Tests the selected run ran, of all.
    selected: usize,
    total: usize,
    /// Why every test ran, when it did.
    everything: Option<String>,
    selected_secs: f64,
    full_secs: f64,
    cargo_test_secs: f64,
    /// `cargo test` was killed after 20 s (the edit made a test loop): left out of the
    /// timings.
    #[serde(default)]
    hangs: bool,
    /// Differences between the selected and the full run's spectra on tests whose rows the
    /// selected run reused (nondeterministic tests apart): the selection's errors.
    differences: Vec<String>,
    /// Differences on tests both runs ran, that full runs of the edited crate do not show to
    /// vary.
    #[serde(default)]
    rerun_differences: Vec<String>,
    /// Differences on nondeterministic tests ([`Classified`]).
    unstable_differences: usize,
}

/// One crate's baselines.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct CrateRuns {
    krate: String,
    cold_sfl_secs: f64,
    cold_cargo_test_secs: f64,
    warm_sfl_secs: f64,
    warm_cargo_test_secs: f64,
    /// Tests whose rows differ between two full runs of the pristine crate.
    unstable: Vec<String>,
    /// Edits that did not compile (drawn again).
    not_compiling: usize,
    error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Results {
    crates: Vec<CrateRuns>,
    edits: Vec<Edit>,
}

pub fn run(args: &Args) -> Result<()> {
    let root = crate::root();
    let work = root.join("target/bench/select");
    std::fs::create_dir_all(&work)?;
    let cache = work.join("results.json");
    let mut results: Results = std::fs::read(&cache)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if args.recheck {
        let sfl = crate::build_sfl()?;
        recheck(&sfl, &work, &mut results, args.seed)?;
        std::fs::write(&cache, serde_json::to_vec_pretty(&results)?)?;
    } else if !args.eval_only {
        let sfl = crate::build_sfl()?;
        let chosen: Vec<String> = if args.crates.is_empty() {
            DEFAULT.iter().map(|s| s.to_string()).collect()
        } else {
            args.crates.clone()
        };
        for name in &chosen {
            eprintln!("== {name}");
            results.crates.retain(|c| &c.krate != name);
            results.edits.retain(|e| &e.krate != name);
            let mut runs = CrateRuns {
                krate: name.clone(),
                ..CrateRuns::default()
            };
            let mut edits = Vec::new();
            if let Err(e) = bench_crate(&sfl, &work, name, args, &mut runs, &mut edits) {
                eprintln!("   {name}: {e:#}");
                runs.error = Some(format!("{e:#}"));
            }
            results.crates.push(runs);
            results.edits.extend(edits);
            std::fs::write(&cache, serde_json::to_vec_pretty(&results)?)?;
        }
    }
    write(&results, &root.join(&args.output_dir))
}

/// The crate's pristine copy and its target dir.
fn lay_out(work: &Path, name: &str) -> Result<(PathBuf, PathBuf)> {
    let (crate_name, version) = name.rsplit_once('-').context("crate as name-version")?;
    let source = crate::fetch_crate(crate_name, version, &crate::root().join("target/bench/corpus"))?;
    let dir = work.join(name);
    let _ = std::fs::remove_dir_all(&dir);
    crate::copy_tree(&source, &dir)?;
    if !dir.join("Cargo.lock").exists() {
        crate::run(cargo(&dir, &work.join(format!("{name}.target"))).arg("generate-lockfile"))?;
    }
    Ok((dir, work.join(format!("{name}.target"))))
}

fn cargo(dir: &Path, target: &Path) -> Command {
    let mut c = Command::new(env!("CARGO"));
    crate::default_env(&mut c)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never");
    c
}

fn sfl(sfl: &Path, dir: &Path, target: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(sfl);
    crate::default_env(&mut c)
        .arg("sfl")
        .args(["--format", "json", "-o", "/dev/null", "--test-timeout", "5"])
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("CARGO_TERM_COLOR", "never");
    c
}

const LIMIT: Duration = Duration::from_secs(900);
/// How long `cargo test` may take after an edit before it counts as hanging.
const HANG: Duration = Duration::from_secs(20);

/// A run of cargo sfl that must have produced spectra: the build failed (`Ok(None)`), or the
/// run.
fn sfl_ran(cmd: &mut Command) -> Result<Option<Ran>> {
    let ran = run_merged(cmd, LIMIT)?;
    match ran.code {
        Some(101) => Ok(None),
        Some(0 | 3 | 6 | 7) => Ok(Some(ran)),
        _ => anyhow::bail!("cargo sfl failed ({:?}):\n{}", ran.code, ran.output),
    }
}

fn load(path: &Path) -> Result<cargo_sfl::spectra::Spectra> {
    cargo_sfl::spectra::Spectra::load(path).with_context(|| format!("cannot load {}", path.display()))
}

fn bench_crate(
    sfl_exe: &Path,
    work: &Path,
    name: &str,
    args: &Args,
    runs: &mut CrateRuns,
    edits: &mut Vec<Edit>,
) -> Result<()> {
    let (dir, target) = lay_out(work, name)?;
    let _ = std::fs::remove_dir_all(&target);
    let spectra = |which: &str| work.join(format!("{name}.{which}.json"));
    // Cold: nothing built but the registry's sources.
    runs.cold_cargo_test_secs = run_merged(cargo(&dir, &target).args(["test", "--no-fail-fast"]), LIMIT)?.secs;
    runs.cold_sfl_secs = sfl_ran(&mut sfl(sfl_exe, &dir, &target, &["--rerun"]))?
        .context("the pristine crate does not build")?
        .secs;
    let (mut warm_sfl, mut warm_test) = (Vec::new(), Vec::new());
    // Every full run after the first is compared with it: a test whose row differs in any of
    // them is nondeterministic (indexmap's hashing varies rarely: one comparison found 26 such
    // tests in one run of the benchmark, 56 in another).
    let mut unstable = std::collections::BTreeSet::new();
    let mut first = None;
    for i in 0..args.repeats.max(2) {
        let save = spectra(if i == 0 { "base" } else { "base2" });
        let save_arg = save.to_string_lossy().into_owned();
        let ran = sfl_ran(&mut sfl(
            sfl_exe,
            &dir,
            &target,
            &["--rerun", "--save-spectra", &save_arg],
        ))?
        .context("build")?;
        warm_sfl.push(ran.secs);
        warm_test.push(run_merged(cargo(&dir, &target).args(["test", "--no-fail-fast"]), LIMIT)?.secs);
        let this = load(&save)?;
        match &first {
            None => first = Some(this),
            Some(first) => unstable.extend(
                cargo_sfl::select::differences(first, &this)
                    .into_iter()
                    .filter_map(|d| d.split_once(": ").map(|(t, _)| t.to_string())),
            ),
        }
    }
    runs.warm_sfl_secs = median(&mut warm_sfl);
    runs.warm_cargo_test_secs = median(&mut warm_test);
    let unstable: Vec<String> = unstable.into_iter().collect();
    runs.unstable = unstable.clone();
    eprintln!(
        "   cold {:.1}s vs {:.1}s, warm {:.1}s vs {:.1}s, {} nondeterministic tests",
        runs.cold_sfl_secs,
        runs.cold_cargo_test_secs,
        runs.warm_sfl_secs,
        runs.warm_cargo_test_secs,
        runs.unstable.len()
    );
    let base = spectra("base").to_string_lossy().into_owned();
    let (sel_path, full_path) = (spectra("selected"), spectra("full"));
    let pool = edit_pool(&dir, args.seed ^ seed_of(name))?;
    let mut done = 0;
    for edit in pool {
        if done == args.edits {
            break;
        }
        let path = dir.join(&edit.file);
        let original = std::fs::read_to_string(&path)?;
        std::fs::write(&path, &edit.text)?;
        let result = (|| -> Result<Option<Edit>> {
            let Some(selected) = sfl_ran(&mut sfl(
                sfl_exe,
                &dir,
                &target,
                &["--reuse-spectra", &base, "--save-spectra", &sel_path.to_string_lossy()],
            ))?
            else {
                return Ok(None);
            };
            let full = sfl_ran(&mut sfl(
                sfl_exe,
                &dir,
                &target,
                &["--rerun", "--save-spectra", &full_path.to_string_lossy()],
            ))?
            .context("the full run did not build what the selected run built")?;
            // A mutant that loops for ever hangs `cargo test`, which has no timeout: it is
            // killed after as long as cargo sfl's own timeout allows, and the edit is left out
            // of the timings.
            let test = run_merged(cargo(&dir, &target).args(["test", "--no-fail-fast"]), HANG)?;
            let (sel, full_spectra) = (load(&sel_path)?, load(&full_path)?);
            let classified = classify(
                cargo_sfl::select::differences(&sel, &full_spectra),
                &unstable,
                &sel,
                || again(sfl_exe, &dir, &target, &full_path, &full_spectra),
            )?;
            let (count, everything) = selection(&selected.output);
            let total = sel.tests.iter().filter(|t| t.outcome.ran()).count();
            Ok(Some(Edit {
                krate: name.to_string(),
                file: edit.file.clone(),
                line: edit.line,
                kind: edit.kind.to_string(),
                change: edit.change.clone(),
                selected: count.unwrap_or(total),
                total,
                everything,
                selected_secs: selected.secs,
                full_secs: full.secs,
                cargo_test_secs: test.secs,
                hangs: test.code.is_none(),
                differences: classified.reused,
                rerun_differences: classified.rerun,
                unstable_differences: classified.nondeterministic,
            }))
        })();
        std::fs::write(&path, original)?;
        match result? {
            None => runs.not_compiling += 1,
            Some(e) => {
                done += 1;
                eprintln!(
                    "   {done:>3} {:<18} {}:{} ran {}/{} in {:.1}s (full {:.1}s, cargo test {:.1}s){}",
                    e.kind,
                    e.file,
                    e.line,
                    e.selected,
                    e.total,
                    e.selected_secs,
                    e.full_secs,
                    e.cargo_test_secs,
                    if e.differences.is_empty() {
                        String::new()
                    } else {
                        format!(" DIFFERENCES {:?}", e.differences)
                    }
                );
                edits.push(e);
            }
        }
    }
    Ok(())
}

/// [`Args::recheck`]: each cached edit whose runs differed, drawn again from its crate's pool
/// and run again.
fn recheck(sfl_exe: &Path, work: &Path, results: &mut Results, seed: u64) -> Result<()> {
    // First, which tests are nondeterministic in each crate with differences: those whose rows
    // differ from the unedited crate's spectra in any of six more full runs of it.
    let differing: std::collections::BTreeSet<String> = results
        .edits
        .iter()
        .filter(|e| !e.differences.is_empty() || !e.rerun_differences.is_empty())
        .map(|e| e.krate.clone())
        .collect();
    for c in results.crates.iter_mut().filter(|c| differing.contains(&c.krate)) {
        let dir = work.join(&c.krate);
        let target = work.join(format!("{}.target", c.krate));
        let base = load(&work.join(format!("{}.base.json", c.krate)))?;
        let path = work.join(format!("{}.full.json", c.krate));
        let mut unstable: std::collections::BTreeSet<String> = c.unstable.iter().cloned().collect();
        for _ in 0..3 {
            unstable.extend(again(sfl_exe, &dir, &target, &path, &base)?);
        }
        eprintln!("== {}: {} nondeterministic tests", c.krate, unstable.len());
        c.unstable = unstable.into_iter().collect();
    }
    for e in results.edits.iter_mut() {
        let unstable = &results
            .crates
            .iter()
            .find(|c| c.krate == e.krate)
            .map(|c| c.unstable.clone())
            .unwrap_or_default();
        let on = |d: &String| d.split_once(": ").is_some_and(|(t, _)| unstable.iter().any(|u| u == t));
        let before = e.differences.len() + e.rerun_differences.len();
        e.differences.retain(|d| !on(d));
        e.rerun_differences.retain(|d| !on(d));
        e.unstable_differences += before - e.differences.len() - e.rerun_differences.len();
    }
    for e in results
        .edits
        .iter_mut()
        .filter(|e| !e.differences.is_empty() || !e.rerun_differences.is_empty())
    {
        eprintln!("== recheck {} {}:{} {} ({})", e.krate, e.file, e.line, e.kind, e.change);
        let dir = work.join(&e.krate);
        let target = work.join(format!("{}.target", e.krate));
        let unstable = results
            .crates
            .iter()
            .find(|c| c.krate == e.krate)
            .map(|c| c.unstable.clone())
            .unwrap_or_default();
        let Some(edit) = edit_pool(&dir, seed ^ seed_of(&e.krate))?
            .into_iter()
            .find(|c| c.file == e.file && c.line == e.line && c.kind == e.kind && c.change == e.change)
        else {
            eprintln!("   not in the pool any more");
            continue;
        };
        let path = dir.join(&edit.file);
        let original = std::fs::read_to_string(&path)?;
        std::fs::write(&path, &edit.text)?;
        let base = work.join(format!("{}.base.json", e.krate));
        let (sel_path, full_path) = (
            work.join(format!("{}.selected.json", e.krate)),
            work.join(format!("{}.full.json", e.krate)),
        );
        let checked = (|| -> Result<Classified> {
            sfl_ran(&mut sfl(
                sfl_exe,
                &dir,
                &target,
                &[
                    "--reuse-spectra",
                    &base.to_string_lossy(),
                    "--save-spectra",
                    &sel_path.to_string_lossy(),
                ],
            ))?
            .context("the edit does not build any more")?;
            sfl_ran(&mut sfl(
                sfl_exe,
                &dir,
                &target,
                &["--rerun", "--save-spectra", &full_path.to_string_lossy()],
            ))?
            .context("the full run did not build")?;
            let (full, sel) = (load(&full_path)?, load(&sel_path)?);
            classify(cargo_sfl::select::differences(&sel, &full), &unstable, &sel, || {
                again(sfl_exe, &dir, &target, &full_path, &full)
            })
        })();
        std::fs::write(&path, original)?;
        let c = checked?;
        eprintln!(
            "   {} differences on reused tests, {} on tests both ran, {} on nondeterministic tests",
            c.reused.len(),
            c.rerun.len(),
            c.nondeterministic
        );
        e.differences = c.reused;
        e.rerun_differences = c.rerun;
        e.unstable_differences = c.nondeterministic;
    }
    Ok(())
}

/// The differences between a selected and a full run, split by the test they are on.
struct Classified {
    /// On a test whose row the selected run reused, that no full run shows to vary: the
    /// selection's errors.
    reused: Vec<String>,
    /// On a test both runs ran, that two more full runs of the edited crate do not show to vary
    /// (a build difference, if any).
    rerun: Vec<String>,
    /// On a nondeterministic test: one whose row differs between two full runs of the unedited
    /// crate (`unstable`), or between full runs of the edited crate (a mutant with undefined
    /// behaviour, say a read past the end in unsafe code, runs differently each time; hash
    /// seeds and random inputs too).
    nondeterministic: usize,
}

fn classify(
    all: Vec<String>,
    unstable: &[String],
    selected: &cargo_sfl::spectra::Spectra,
    again: impl FnOnce() -> Result<Vec<String>>,
) -> Result<Classified> {
    let test = |d: &String| d.split_once(": ").map(|(t, _)| t.to_string()).unwrap_or_default();
    let (left_out, rest): (Vec<String>, Vec<String>) = all.into_iter().partition(|d| unstable.contains(&test(d)));
    let mut out = Classified {
        reused: Vec::new(),
        rerun: Vec::new(),
        nondeterministic: left_out.len(),
    };
    if rest.is_empty() {
        return Ok(out);
    }
    let varying = again()?;
    let reused: std::collections::BTreeSet<String> = selected
        .tests
        .iter()
        .filter(|t| t.reused)
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect();
    for d in rest {
        let t = test(&d);
        if varying.contains(&t) {
            out.nondeterministic += 1;
        } else if reused.contains(&t) {
            out.reused.push(d);
        } else {
            out.rerun.push(d);
        }
    }
    Ok(out)
}

/// Two more full runs of the edited crate: the tests whose rows differ from the first one's
/// (`full`, saved at `path`) in either.
fn again(
    sfl_exe: &Path,
    dir: &Path,
    target: &Path,
    path: &Path,
    full: &cargo_sfl::spectra::Spectra,
) -> Result<Vec<String>> {
    let second = path.with_extension("again.json");
    let mut tests = Vec::new();
    for _ in 0..2 {
        sfl_ran(&mut sfl(
            sfl_exe,
            dir,
            target,
            &["--rerun", "--save-spectra", &second.to_string_lossy()],
        ))?
        .context("the edited crate built once, not twice")?;
        tests.extend(
            cargo_sfl::select::differences(&load(&second)?, full)
                .into_iter()
                .filter_map(|d| d.split_once(": ").map(|(t, _)| t.to_string())),
        );
    }
    tests.sort();
    tests.dedup();
    Ok(tests)
}

/// How many tests the selected run ran (its "Selected N of M" line), and why every test ran
/// when it did ("Selecting every test: …").
fn selection(output: &str) -> (Option<usize>, Option<String>) {
    for line in output.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("Selecting every test: ") {
            return (None, Some(rest.to_string()));
        }
        if let Some(rest) = line.strip_prefix("Selected ") {
            return (rest.split_whitespace().next().and_then(|n| n.parse().ok()), None);
        }
    }
    (None, Some("no selection line (no last run to compare with)".into()))
}

fn seed_of(name: &str) -> u64 {
    name.bytes()
        .fold(0xcbf29ce484222325, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// A candidate edit: the file's whole new text.
struct Candidate {
    file: String,
    line: u32,
    kind: &'static str,
    change: String,
    text: String,
}

/// Every edit of the crate's library sources, shuffled and interleaved by kind (mutations,
/// changed constants, removed statements, added statements), with an edit outside every
/// function and one of comments and whitespace alone every fourteenth.
fn edit_pool(dir: &Path, seed: u64) -> Result<Vec<Candidate>> {
    let mut by_kind: [Vec<Candidate>; 6] = Default::default();
    let mut files = Vec::new();
    rs_files(&dir.join("src"), &mut files);
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path)?;
        let file = path.strip_prefix(dir)?.to_string_lossy().into_owned();
        let lines: Vec<u32> = (1..=text.lines().count() as u32).collect();
        let Some(mutants) = cargo_sfl::mutate::sites::mutants(&text, &lines) else {
            continue;
        };
        for m in mutants {
            let old = &text[m.start..m.end];
            let mut new = text.clone();
            new.replace_range(m.start..m.end, &m.replacement);
            let kind = if m.deletes_statement {
                3
            } else if old.trim().chars().next().is_some_and(|c| c.is_ascii_digit()) || old == "true" || old == "false" {
                1
            } else {
                0
            };
            let names = ["mutation", "changed constant", "", "removed statement"];
            by_kind[kind].push(Candidate {
                file: file.clone(),
                line: m.line,
                kind: names[kind],
                change: format!("`{}` -> `{}`", old.trim(), m.replacement),
                text: new,
            });
            if m.deletes_statement {
                // A statement added before the one that could be deleted (same indentation).
                let start = text[..m.start].rfind('\n').map_or(0, |i| i + 1);
                let indent: String = text[start..]
                    .chars()
                    .take_while(|c| c.is_whitespace() && *c != '\n')
                    .collect();
                let mut added = text.clone();
                added.insert_str(start, &format!("{indent}let _sfl_edit = {};\n", m.line));
                by_kind[2].push(Candidate {
                    file: file.clone(),
                    line: m.line,
                    kind: "added statement",
                    change: format!("`let _sfl_edit = {};` before line {}", m.line, m.line),
                    text: added,
                });
                // A comment before the statement, on its line, and the line indented further:
                // no token changed, no line moved.
                let mut commented = text.clone();
                commented.insert_str(start, "    /* An edit of comments and whitespace. */ ");
                by_kind[5].push(Candidate {
                    file: file.clone(),
                    line: m.line,
                    kind: "comments and whitespace",
                    change: format!("a comment at the start of line {}, indented further", m.line),
                    text: commented,
                });
            }
        }
        let mut outside = text.clone();
        outside.push_str("\n// An edit outside every function.\n");
        by_kind[4].push(Candidate {
            file: file.clone(),
            line: text.lines().count() as u32 + 2,
            kind: "outside functions",
            change: "a comment at the end of the file".into(),
            text: outside,
        });
    }
    let mut rng = seed.max(1);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for kind in &mut by_kind {
        for i in (1..kind.len()).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            kind.swap(i, j);
        }
    }
    let mut pool = Vec::new();
    let mut round = 0;
    while by_kind.iter().any(|k| !k.is_empty()) {
        let order: &[usize] = if round % 3 == 2 {
            &[0, 1, 2, 3, 4, 5]
        } else {
            &[0, 1, 2, 3]
        };
        for &k in order {
            if let Some(c) = by_kind[k].pop() {
                pool.push(c);
            }
        }
        if by_kind[..4].iter().all(Vec::is_empty) {
            pool.append(&mut by_kind[4]);
            pool.append(&mut by_kind[5]);
        }
        round += 1;
    }
    Ok(pool)
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn write(results: &Results, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out)?;
    let edits = &results.edits;
    let differences: usize = edits.iter().map(|e| e.differences.len()).sum();
    let rerun_differences: usize = edits.iter().map(|e| e.rerun_differences.len()).sum();
    let nondeterministic: usize = edits.iter().map(|e| e.unstable_differences).sum();
    let with_differences = edits.iter().filter(|e| !e.differences.is_empty()).count();
    let mut per_crate = Vec::new();
    let mut md = String::from(
        "# Test selection: `cargo xtask bench select`\n\n\
         Random source edits of published crates (mutations, changed constants, removed and added \
         statements, edits outside every function, comments and whitespace alone). For each edit, from the pristine crate's \
         spectra (`--reuse-spectra`), the selected run, a full run (`--rerun`) and `cargo test \
         --no-fail-fast` after the same edit, each timed in the same script; the selected run's \
         spectra are compared with the full run's test by test (outcome, lines run, edges taken). \
         Tests whose rows differ between two full runs of the pristine crate are nondeterministic \
         (random inputs), and so are, for one edit, the tests whose rows differ between two full \
         runs of the edited crate (a mutant with undefined behaviour, a test killed at its \
         timeout): their differences are counted apart.\n\n",
    );
    md.push_str(
        "| crate | edits | did not compile | all tests run | tests run (median) | selected run (median s) | `cargo test` (median s) | ratio (median) | differences | nondeterministic tests (differences) | cold vs `cargo test` | warm full vs `cargo test` |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for c in &results.crates {
        let mine: Vec<&Edit> = edits.iter().filter(|e| e.krate == c.krate).collect();
        let timed: Vec<&&Edit> = mine.iter().filter(|e| !e.hangs).collect();
        let mut ratios: Vec<f64> = timed.iter().map(|e| e.selected_secs / e.cargo_test_secs).collect();
        let mut sel: Vec<f64> = timed.iter().map(|e| e.selected_secs).collect();
        let mut test: Vec<f64> = timed.iter().map(|e| e.cargo_test_secs).collect();
        let mut share: Vec<f64> = mine.iter().map(|e| e.selected as f64).collect();
        let total = mine.first().map_or(0, |e| e.total);
        let ratio = median(&mut ratios);
        per_crate.push(ratio);
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.0} of {} | {:.2} | {:.2} | {:.2}× | {} | {} ({}) | {:.2}× | {:.2}× |{}\n",
            c.krate,
            mine.len(),
            c.not_compiling,
            mine.iter().filter(|e| e.everything.is_some()).count(),
            median(&mut share),
            total,
            median(&mut sel),
            median(&mut test),
            ratio,
            mine.iter().map(|e| e.differences.len()).sum::<usize>(),
            c.unstable.len(),
            mine.iter().map(|e| e.unstable_differences).sum::<usize>(),
            c.cold_sfl_secs / c.cold_cargo_test_secs,
            c.warm_sfl_secs / c.warm_cargo_test_secs,
            c.error
                .as_ref()
                .map(|e| format!(" error: {}", e.lines().next().unwrap_or("")))
                .unwrap_or_default(),
        ));
    }
    let per_crate_median = median(&mut per_crate.iter().copied().filter(|r| r.is_finite()).collect::<Vec<_>>());
    let mut by_kind = String::from(
        "\n| edit | edits | all tests run | tests run (median share) | ratio (median) |\n|---|---:|---:|---:|---:|\n",
    );
    for kind in [
        "mutation",
        "changed constant",
        "removed statement",
        "added statement",
        "outside functions",
        "comments and whitespace",
    ] {
        let mine: Vec<&Edit> = edits.iter().filter(|e| e.kind == kind).collect();
        let mut share: Vec<f64> = mine.iter().map(|e| e.selected as f64 / e.total.max(1) as f64).collect();
        let mut ratios: Vec<f64> = mine
            .iter()
            .filter(|e| !e.hangs)
            .map(|e| e.selected_secs / e.cargo_test_secs)
            .collect();
        by_kind.push_str(&format!(
            "| {kind} | {} | {} | {:.0}% | {:.2}× |\n",
            mine.len(),
            mine.iter().filter(|e| e.everything.is_some()).count(),
            100.0 * median(&mut share),
            median(&mut ratios)
        ));
    }
    md.push_str(&by_kind);
    md.push_str(&format!(
        "\n**{} edits, {differences} differences** ({with_differences} edits with any) on tests whose rows the \
         selected run reused; {rerun_differences} on tests both runs ran that full runs do not show to vary; \
         {nondeterministic} on nondeterministic tests. Median over crates of the selected run against \
         `cargo test` after the same edit: **{per_crate_median:.2}×**.\n",
        edits.len()
    ));
    let hangs = edits.iter().filter(|e| e.hangs).count();
    if hangs > 0 {
        md.push_str(&format!(
            "\n{hangs} edits made a test loop for ever: both runs time it out (5 s) and are compared \
             like the others (a test timed out in both by its outcome alone: a killed test's coverage \
             stops wherever it was), but `cargo test`, which has no timeout, was killed after 20 s, \
             so they are left out of the timings.\n"
        ));
    }
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for e in edits.iter().filter_map(|e| e.everything.as_ref()) {
        let general = e.split(" (line").next().unwrap_or(e).to_string();
        let general = general
            .split_once(' ')
            .map_or(general.clone(), |(_, rest)| format!("FILE {rest}"));
        *reasons.entry(general).or_default() += 1;
    }
    if !reasons.is_empty() {
        md.push_str("\nWhy every test ran:\n\n");
        for (why, n) in reasons {
            md.push_str(&format!("- {why}: {n}\n"));
        }
    }
    let failing: Vec<&Edit> = edits.iter().filter(|e| !e.differences.is_empty()).collect();
    if !failing.is_empty() {
        md.push_str("\nEdits whose selected run differs from the full run:\n\n");
        for e in failing.iter().take(20) {
            md.push_str(&format!(
                "- {} {}:{} {} ({}): {}\n",
                e.krate,
                e.file,
                e.line,
                e.kind,
                e.change,
                e.differences.join("; ")
            ));
        }
    }
    std::fs::write(out.join("select.md"), &md)?;
    let json = serde_json::json!({
        "edits": edits.len(),
        "differences": differences,
        "rerun_differences": rerun_differences,
        "nondeterministic_differences": nondeterministic,
        "median_ratio_vs_cargo_test": per_crate_median,
        "crates": results.crates,
        "per_edit": edits,
    });
    std::fs::write(out.join("select.json"), serde_json::to_vec_pretty(&json)?)?;
    print!("{md}");
    Ok(())
}
