//! `cargo xtask bench regressions`: real regressions mined from a repository's git history.
//!
//! 1. Mining ([`mine`]): every non-merge commit whose diff changes library lines (Rust files
//!    under a `src` directory, outside `#[test]` functions, `#[cfg(test)]` items and doc
//!    comments, as cargo sfl tells test code apart) and adds or changes tests (files under a
//!    `tests` directory, test items or doctests in source files) is a candidate. Each `git diff
//!    --unified=0` hunk of a source file is library, test (or doctest), documentation, or
//!    mixed, by the classes of the lines it removes (in the parent) and adds (in the commit).
//!    Commits adding a library file, or changing more than `--max-lines` library lines, are
//!    turned away; the rest are tried subjects-that-say-fix first, smaller first.
//! 2. The buggy version is the parent's tree with the commit's test code: its files under
//!    `tests/` whole, and in each changed source file the commit's test, doctest and doc hunks
//!    applied and its library and mixed hunks not (a mixed hunk's test part is lost, so such a
//!    test cannot reveal the bug). Manifests, benches and examples stay the parent's. The
//!    fixed version is the commit's tree. The two differ only in the fix's library lines.
//! 3. `cargo test --no-fail-fast` runs on both ([`reproduce`]), each killed after
//!    `--candidate-timeout` seconds. A candidate is a reproduced bug when at least one test the
//!    commit adds or changes fails on the buggy version and passes on the fixed one, and every
//!    other test passes on both (a test failing on the fixed version turns the candidate away,
//!    so pre-existing and flaky failures never count). A failing doctest that does not compile
//!    against the parent's library is an API addition, not a bug. An old commit whose
//!    Cargo.lock does not resolve or build is tried once more without it; what still fails is
//!    skipped and counted by reason.
//! 4. Fault lines, in the buggy version's coordinates: the non-blank, non-comment lines the
//!    fix changes or deletes; for a fix hunk that only adds lines (a fault of omission), the
//!    closest code line above and the closest below the insertion point, as Pearson et al.,
//!    "Evaluating and improving fault localization" (ICSE 2017) count an omission found when
//!    a line next to where the code is missing is inspected (Sarhan and Beszédes, "A survey of
//!    challenges in spectrum-based software fault localization", discuss the choice). A bug is
//!    found when any of its lines is inspected.
//! 5. cargo sfl runs on each reproduced buggy version (`--save-spectra`), which gives each
//!    failing test's kind of failure and whether its backtrace has a library frame, and `cargo
//!    sfl eval` scores every measure against the fault lines, by line and by function, with the
//!    panic-stack baseline (where each failing test's backtrace first enters ranked code).
//!
//! Everything is cached under target/bench/regressions/<owner+name>/ (the mined candidates,
//! each attempt's record, the reproduced bugs' buggy trees and spectra); the reproduced bugs
//! are kept in bench-results/regressions-bugs.json, which `--from-list` re-runs without mining.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cargo_sfl::faults::Fault;
use cargo_sfl::spectra::{Spectra, TestRecord};
use serde::{Deserialize, Serialize};

mod bugs;
pub(crate) mod history;
pub(crate) mod mine;
mod report;
pub(crate) mod reproduce;

use bugs::slug;
pub(crate) use bugs::{Attempt, BUGS_FILE, Bug, cached, load_bugs};
use mine::Candidate;
use reproduce::{BuildFailure, TestRun};

#[derive(clap::Args)]
pub struct Args {
    /// A repository with its history (a clone or a bare mirror); repeatable.
    #[arg(long = "repo")]
    pub repos: Vec<PathBuf>,
    /// Candidates attempted per repository (most promising first).
    #[arg(long, default_value_t = 25)]
    pub max_candidates: usize,
    /// Turn away commits changing more library lines than this.
    #[arg(long, default_value_t = 40)]
    pub max_lines: usize,
    /// Kill one `cargo test` or cargo sfl run of a candidate after this many seconds.
    #[arg(long, default_value_t = 900)]
    pub candidate_timeout: u64,
    /// Stop attempting a repository's candidates after this many minutes (0: no limit).
    #[arg(long, default_value_t = 0)]
    pub repo_minutes: u64,
    /// Attempt the bugs listed in bench-results/regressions-bugs.json for the given
    /// repositories instead of mining their history.
    #[arg(long)]
    pub from_list: bool,
    /// Only evaluate what is cached; run nothing.
    #[arg(long)]
    pub eval_only: bool,
    /// The cargo-sfl binary to run [default: built into target/bench/regressions/sfl-build].
    #[arg(long)]
    pub sfl: Option<PathBuf>,
    /// Where regressions.md, regressions.json and regressions-bugs.json go.
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
}

/// The mined candidates of a repository, cached.
#[derive(Serialize, Deserialize)]
struct Mined {
    max_lines: usize,
    commits: usize,
    turned_away: BTreeMap<String, usize>,
    candidates: Vec<Candidate>,
}

/// `owner/name` of a repository: from a mirror's `owner+name/` directory, the origin's URL,
/// or the directory's name.
pub(crate) fn repo_name(path: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let dirs: Vec<String> = path
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if let Some(d) = dirs.iter().rev().find(|d| d.contains('+')) {
        return d.replacen('+', "/", 1);
    }
    if let Ok(url) = mine::git(&path, &["config", "--get", "remote.origin.url"]) {
        let url = url.trim().trim_end_matches(".git");
        let parts: Vec<&str> = url.rsplit(['/', ':']).take(2).collect();
        if parts.len() == 2 {
            return format!("{}/{}", parts[1], parts[0]);
        }
    }
    dirs.last()
        .cloned()
        .unwrap_or_default()
        .trim_end_matches(".git")
        .to_string()
}

struct Ctx {
    sfl: PathBuf,
    limit: Duration,
}

pub fn run_bench(args: &Args) -> Result<()> {
    let root = crate::root();
    let cache = root.join("target/bench/regressions");
    std::fs::create_dir_all(&cache)?;
    let out_dir = root.join(&args.output_dir);
    let sfl = match &args.sfl {
        // Absolute: `cargo sfl eval` runs in each bug's tree.
        Some(p) => p
            .canonicalize()
            .with_context(|| format!("no cargo-sfl at {}", p.display()))?,
        None => build_sfl(&cache)?,
    };
    let ctx = Ctx {
        sfl,
        limit: Duration::from_secs(args.candidate_timeout),
    };
    let listed = load_bugs(&out_dir.join(BUGS_FILE));
    for repo in &args.repos {
        let name = repo_name(repo);
        let dir = cache.join(slug(&name));
        std::fs::create_dir_all(&dir)?;
        let candidates = if args.from_list {
            listed
                .iter()
                .filter(|b| b.repository == name)
                .map(|b| Candidate {
                    commit: b.commit.clone(),
                    parent: b.parent.clone(),
                    subject: b.subject.clone(),
                    changed_lines: b.changed_lines,
                    library_files: Vec::new(),
                    test_files: Vec::new(),
                    mixed: false,
                    time: 0,
                })
                .collect()
        } else {
            mined(repo, &dir, args.max_lines)?.candidates
        };
        eprintln!("== {name}: {} candidates", candidates.len());
        let started = Instant::now();
        for cand in candidates.iter().take(args.max_candidates) {
            let at = dir.join(&cand.commit[..12]);
            if cached(&at).is_some() || args.eval_only {
                continue;
            }
            if args.repo_minutes > 0 && started.elapsed() > Duration::from_secs(args.repo_minutes * 60) {
                eprintln!("   {name}: --repo-minutes reached");
                break;
            }
            let a = attempt(&ctx, (repo, &name), cand, &at)?;
            eprintln!(
                "   {} {:>5.0}s {} ({})",
                &cand.commit[..12],
                a.seconds,
                a.outcome,
                cand.subject
            );
            if !a.detail.is_empty() {
                eprintln!("      {}", a.detail);
            }
        }
    }
    report::evaluate(&ctx.sfl, &cache, &out_dir, &listed)
}

/// Builds cargo sfl into a directory of its own (other builds of the checkout cannot replace
/// it during a long run).
pub(super) fn build_sfl(cache: &Path) -> Result<PathBuf> {
    let target = cache.join("sfl-build");
    crate::run(
        Command::new(env!("CARGO"))
            .args(["build", "--release", "--locked", "--bin", "cargo-sfl"])
            .env("CARGO_TARGET_DIR", &target)
            .current_dir(crate::root()),
    )?;
    Ok(target.join("release/cargo-sfl"))
}

/// The repository's candidates: cached, or mined now.
fn mined(repo: &Path, dir: &Path, max_lines: usize) -> Result<Mined> {
    let path = dir.join("candidates.json");
    if let Some(m) = std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Mined>(&b).ok())
        .filter(|m| m.max_lines == max_lines)
    {
        return Ok(m);
    }
    let commits = mine::commits(repo)?.len();
    let (candidates, turned_away) = mine::mine(repo, max_lines)?;
    let m = Mined {
        max_lines,
        commits,
        turned_away,
        candidates,
    };
    std::fs::write(&path, serde_json::to_vec_pretty(&m)?)?;
    Ok(m)
}

/// Attempts one candidate in `at` and records the outcome there.
fn attempt(ctx: &Ctx, (repo, name): (&Path, &str), cand: &Candidate, at: &Path) -> Result<Attempt> {
    let started = Instant::now();
    std::fs::create_dir_all(at)?;
    let mut a = Attempt {
        repository: name.to_string(),
        commit: cand.commit.clone(),
        subject: cand.subject.clone(),
        outcome: String::new(),
        detail: String::new(),
        seconds: 0.0,
        bug: None,
    };
    match reproduce_candidate(ctx, repo, cand, at) {
        Ok(bug) => {
            a.outcome = "reproduced".into();
            a.bug = Some(Bug {
                repository: name.to_string(),
                ..bug
            });
        }
        Err(Skip { reason, detail }) => {
            a.outcome = reason;
            a.detail = detail;
            let _ = std::fs::remove_dir_all(at.join("buggy"));
        }
    }
    let _ = std::fs::remove_dir_all(at.join("fixed"));
    a.seconds = started.elapsed().as_secs_f64();
    // An error of the benchmark itself (git, the file system, a missing binary) is not a fact
    // about the candidate: not cached, so the next run tries again.
    if a.outcome != "error" {
        std::fs::write(at.join("record.json"), serde_json::to_vec_pretty(&a)?)?;
    }
    Ok(a)
}

/// Why a candidate is not a reproduced bug.
struct Skip {
    reason: String,
    detail: String,
}

impl Skip {
    fn new(reason: &str, detail: impl Into<String>) -> Skip {
        Skip {
            reason: reason.to_string(),
            detail: detail.into(),
        }
    }
}

impl<E: std::fmt::Display> From<E> for Skip {
    fn from(e: E) -> Skip {
        Skip::new("error", format!("{e:#}"))
    }
}

fn reproduce_candidate(ctx: &Ctx, repo: &Path, cand: &Candidate, at: &Path) -> Result<Bug, Skip> {
    let (buggy, fixed) = (at.join("buggy"), at.join("fixed"));
    let missing = |e: anyhow::Error| match format!("{e:#}") {
        // A mirror without its largest files cannot lay out a tree that has them.
        m if m.contains("invalid object") => Skip::new("files missing from the clone", m),
        m => Skip::new("error", m),
    };
    let (faults, changed_lines, omission) = mine::write_buggy(repo, cand, &buggy).map_err(missing)?;
    if faults.is_empty() {
        return Err(Skip::new("the fix changes no code line", ""));
    }
    mine::extract(repo, &cand.commit, &fixed).map_err(missing)?;
    if !buggy.join("Cargo.toml").is_file() {
        return Err(Skip::new("no Cargo.toml at the repository's root", ""));
    }
    // The copies live inside this repository's workspace: each is made a workspace root.
    for dir in [&buggy, &fixed] {
        own_workspace(&dir.join("Cargo.toml"))?;
    }
    let mut lockfile = if buggy.join("Cargo.lock").is_file() {
        "kept"
    } else {
        "none"
    };
    // A build directory per version: both copies are laid out before either is built, and the
    // same package at the same place in its workspace would otherwise pass for up to date.
    let repo_dir = at.parent().context("attempt directory")?;
    let before = test_version(ctx, &buggy, &repo_dir.join("target-buggy"), &mut lockfile)?;
    if let Some(skip) = build_skip(&before, "before the fix") {
        return Err(skip);
    }
    if before.outcomes.tests.values().all(|v| *v != reproduce::Verdict::Failed) {
        return Err(Skip::new("no test fails before the fix", ""));
    }
    if lockfile == "regenerated" {
        let _ = std::fs::remove_file(fixed.join("Cargo.lock"));
    }
    let mut fixed_lock = lockfile;
    let after = test_version(ctx, &fixed, &repo_dir.join("target-fixed"), &mut fixed_lock)?;
    if let Some(skip) = build_skip(&after, "after the fix") {
        return Err(skip);
    }
    let (fns, doc_files) = mine::changed_tests(repo, cand)?;
    let tests = reproduce::judge(&before.outcomes, &after.outcomes, |k| {
        reproduce::is_changed(k, &fns, &doc_files)
    })
    .map_err(|r| Skip::new(&r, ""))?;
    let spectra = sfl_run(ctx, &buggy, at)?;
    let (failure_kind, library_frame) = failure_of(&spectra, &buggy);
    write_faults(&at.join("faults.toml"), &faults)?;
    Ok(Bug {
        repository: String::new(),
        commit: cand.commit.clone(),
        parent: cand.parent.clone(),
        subject: cand.subject.clone(),
        tests,
        faults,
        changed_lines,
        omission,
        lockfile: lockfile.to_string(),
        failure_kind,
        library_frame,
    })
}

/// Adds an empty `[workspace]` table to a root manifest that has none.
fn own_workspace(manifest: &Path) -> Result<()> {
    let text = std::fs::read_to_string(manifest)?;
    if !text.lines().any(|l| l.trim() == "[workspace]") {
        std::fs::write(manifest, text + "\n[workspace]\n")?;
    }
    Ok(())
}

/// `cargo test` on one version; when its Cargo.lock does not resolve or a locked dependency
/// does not build, once more without the lockfile (`lockfile` becomes `regenerated`).
fn test_version(ctx: &Ctx, dir: &Path, target: &Path, lockfile: &mut &str) -> Result<TestRun, Skip> {
    let run = reproduce::cargo_test(dir, target, ctx.limit)?;
    let stale = matches!(
        reproduce::build_failure(&run.log),
        Some(BuildFailure::Resolve | BuildFailure::Dependency)
    );
    if stale && dir.join("Cargo.lock").is_file() {
        std::fs::remove_file(dir.join("Cargo.lock"))?;
        *lockfile = "regenerated";
        return Ok(reproduce::cargo_test(dir, target, ctx.limit)?);
    }
    Ok(run)
}

/// The skip for a run that timed out or did not build.
fn build_skip(run: &TestRun, when: &str) -> Option<Skip> {
    let first = crate::cargo_log::first_error(&run.log);
    if run.code.is_none() {
        return Some(Skip::new("timed out", when));
    }
    let reason = match reproduce::build_failure(&run.log) {
        None if run.outcomes.tests.is_empty() && run.code != Some(0) => "no test ran",
        None => return None,
        Some(BuildFailure::Resolve) => "dependencies no longer resolve",
        Some(BuildFailure::Dependency) => "a dependency does not build with today's toolchain",
        Some(BuildFailure::Library) => "the library does not build with today's toolchain",
        Some(BuildFailure::Tests) if when.starts_with("before") => {
            "the tests do not build against the parent's library"
        }
        Some(BuildFailure::Tests) => "the tests do not build after the fix",
    };
    Some(Skip::new(reason, format!("{when}: {first}")))
}

/// cargo sfl on the buggy version, spectra saved in `at`.
fn sfl_run(ctx: &Ctx, buggy: &Path, at: &Path) -> Result<Spectra, Skip> {
    let spectra = at.join("spectra.json");
    let log_path = at.join("sfl.log");
    let mut cmd = Command::new(&ctx.sfl);
    // `--rerun`: every test runs, nothing is reused from the last candidate's run.
    cmd.args([
        "sfl",
        "--rerun",
        "--color",
        "never",
        "--format",
        "json",
        "--test-timeout",
        "120",
    ])
    .arg("--manifest-path")
    .arg(buggy.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(at.parent().context("attempt directory")?.join("target-sfl"))
    .arg("--save-spectra")
    .arg(&spectra)
    .env("RUSTFLAGS", "--cap-lints=warn")
    .env("RUSTDOCFLAGS", "--cap-lints=warn")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(std::fs::File::create(&log_path)?);
    let code = crate::panic4r_bench::run::run_with_timeout(&mut cmd, ctx.limit)?;
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    match code {
        Some(0) => {
            Ok(Spectra::load(&spectra).map_err(|e| Skip::new("cargo sfl's spectra do not load", e.to_string()))?)
        }
        None => Err(Skip::new("timed out", "cargo sfl")),
        Some(3) => Err(Skip::new("no test fails under cargo sfl", "")),
        Some(c) => Err(Skip::new(
            "cargo sfl failed",
            format!("exit {c}: {}", crate::cargo_log::first_error(&log)),
        )),
    }
}

/// The kind of failure of the first failing test (by name), and whether any failing test's
/// backtrace has a frame in library code.
fn failure_of(spectra: &Spectra, root: &Path) -> (String, bool) {
    let mut failing: Vec<&TestRecord> = spectra.tests.iter().filter(|t| t.outcome.is_failing()).collect();
    failing.sort_by(|a, b| (&a.binary, &a.name).cmp(&(&b.binary, &b.name)));
    let mut files: Vec<String> = spectra.units.iter().map(|u| u.file.clone()).collect();
    files.extend(failing.iter().flat_map(|t| t.stack.iter().map(|f| f.file.clone())));
    files.sort();
    files.dedup();
    let refs: Vec<&str> = files.iter().map(String::as_str).collect();
    let test_code = cargo_sfl::testcode::TestCode::find(root, &refs);
    let is_test = |file: &str, line: u32| {
        test_code.whole_files.contains(file)
            || mine::path_kind(file) == mine::PathKind::Tests
            || test_code
                .ranges
                .get(file)
                .is_some_and(|r| r.iter().any(|&(a, b)| a <= line && line <= b))
    };
    let library_frame = failing
        .iter()
        .any(|t| t.stack.iter().any(|f| !is_test(&f.file, f.line)));
    let kind = failing
        .first()
        .map_or_else(|| "unknown".to_string(), |t| failure_kind(t, &is_test).to_string());
    (kind, library_frame)
}

/// Where the panic happened, from the message's `panicked at FILE:LINE:COL`.
fn panic_site(message: &str) -> Option<(String, u32)> {
    let rest = &message[message.find("panicked at ")? + "panicked at ".len()..];
    let rest = rest.trim_start_matches('\'');
    let mut parts = rest.split(':');
    let file = parts.next()?.to_string();
    let line = parts.next()?.trim().parse().ok()?;
    Some((file, line))
}

/// A failing test's kind of failure: the process crashed; the innermost workspace frame of its
/// panic (or the message's panic site) is library code; a `#[should_panic]` test did not panic;
/// the test unwrapped an error or a `None` the library returned; an assertion failed in test
/// code (a doctest's: wrong output); a `compile_fail` doctest compiled; another panic in test code.
pub(crate) fn failure_kind(t: &TestRecord, is_test: &dyn Fn(&str, u32) -> bool) -> &'static str {
    let doctest = t.binary.contains("::doctest");
    let message = t.message.as_deref().unwrap_or("");
    if t.outcome == cargo_sfl::spectra::Outcome::Crashed {
        return "crash";
    }
    let site = t
        .stack
        .first()
        .map(|f| (f.file.clone(), f.line))
        .or_else(|| panic_site(message));
    let in_library = site.as_ref().is_some_and(|(f, l)| {
        !is_test(f, *l) && !f.starts_with('/') && !f.contains("rustc") && !f.starts_with("library/")
    });
    if in_library {
        return if doctest {
            "panic in library code (doctest)"
        } else {
            "panic in library code"
        };
    }
    if message.contains("did not panic") {
        return "expected panic missing";
    }
    if message.contains("compile_fail") && message.contains("compiled successfully") {
        return "compile_fail doctest compiles";
    }
    if message.contains("on an `Err` value") || message.contains("on a `None` value") {
        return "error returned to the test";
    }
    if message.contains("assertion") {
        return if doctest {
            "wrong output in a doctest"
        } else {
            "assertion in test code"
        };
    }
    if doctest {
        "panic in a doctest"
    } else {
        "panic in test code"
    }
}

fn write_faults(path: &Path, faults: &[Fault]) -> Result<()> {
    #[derive(Serialize)]
    struct File<'a> {
        fault: &'a [Fault],
    }
    if faults.is_empty() {
        bail!("no fault lines");
    }
    std::fs::write(path, toml::to_string(&File { fault: faults })?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cargo_sfl::spectra::{Frame, Outcome};

    #[test]
    fn a_cached_record_reads_back_with_its_bug() {
        let tmp = tempfile::tempdir().unwrap();
        let bug = Bug {
            repository: "dtolnay/semver".into(),
            commit: "55bf7fb6190000000000".into(),
            parent: "0123".into(),
            subject: "Fix bug with pre-release parsing".into(),
            tests: vec!["unittests src/lib.rs :: version_req::test::pre".into()],
            faults: vec![Fault {
                file: "src/version_req.rs".into(),
                lines: vec![120, 121],
                name: None,
            }],
            changed_lines: 2,
            omission: false,
            lockfile: "none".into(),
            failure_kind: "assertion in test code".into(),
            library_frame: false,
        };
        let a = Attempt {
            repository: bug.repository.clone(),
            commit: bug.commit.clone(),
            subject: bug.subject.clone(),
            outcome: "reproduced".into(),
            detail: String::new(),
            seconds: 12.0,
            bug: Some(bug.clone()),
        };
        std::fs::write(tmp.path().join("record.json"), serde_json::to_vec(&a).unwrap()).unwrap();
        let back = cached(tmp.path()).unwrap();
        assert_eq!(back.bug, Some(bug.clone()));
        assert!(cached(&tmp.path().join("missing")).is_none());
        // The bugs file lists bugs the same way.
        let file = tmp.path().join(BUGS_FILE);
        std::fs::write(&file, serde_json::json!({"bugs": [bug]}).to_string()).unwrap();
        assert_eq!(load_bugs(&file)[0].faults[0].lines, [120, 121]);
    }

    #[test]
    fn repository_names_come_from_a_mirror_directory_or_the_last_directory() {
        assert_eq!(
            repo_name(Path::new("/nonexistent/.mirror/dtolnay+semver/repo")),
            "dtolnay/semver"
        );
        assert_eq!(repo_name(Path::new("/nonexistent/clones/heck.git")), "heck");
    }

    fn failing(binary: &str, message: &str, frames: &[(&str, u32)]) -> TestRecord {
        let mut t = TestRecord::new(binary, "t", Outcome::Failed);
        t.message = Some(message.into());
        t.stack = frames
            .iter()
            .map(|(f, l)| Frame {
                function: "f".into(),
                file: f.to_string(),
                line: *l,
            })
            .collect();
        t
    }

    #[test]
    fn failure_kinds_follow_where_and_how_the_test_failed() {
        // Test code: tests/ files and lines 50.. of src/lib.rs.
        let is_test = |f: &str, l: u32| f.starts_with("tests/") || (f == "src/lib.rs" && l >= 50);
        let kind = |t: TestRecord| failure_kind(&t, &is_test);
        assert_eq!(
            kind(failing(
                "k",
                "index out of bounds",
                &[("src/lib.rs", 10), ("tests/a.rs", 3)]
            )),
            "panic in library code"
        );
        assert_eq!(
            kind(failing("k", "assertion `left == right` failed", &[("tests/a.rs", 3)])),
            "assertion in test code"
        );
        assert_eq!(
            kind(failing("k", "assertion failed: x", &[("src/lib.rs", 60)])),
            "assertion in test code"
        );
        assert_eq!(
            kind(failing(
                "k",
                "called `Result::unwrap()` on an `Err` value: E",
                &[("tests/a.rs", 3)]
            )),
            "error returned to the test"
        );
        assert_eq!(
            kind(failing("k", "note: test did not panic as expected", &[])),
            "expected panic missing"
        );
        assert_eq!(
            kind(failing("k::doctest/k", "assertion `left == right` failed", &[])),
            "wrong output in a doctest"
        );
        // Without frames, the message's panic site decides.
        assert_eq!(
            kind(failing(
                "k",
                "thread 't' panicked at src/lib.rs:12:5:\nattempt to subtract with overflow",
                &[]
            )),
            "panic in library code"
        );
        let mut crashed = failing("k", "", &[]);
        crashed.outcome = Outcome::Crashed;
        assert_eq!(kind(crashed), "crash");
    }
}
