//! `cargo xtask bench launch`: what a test costs cargo sfl beyond what it costs `cargo test`,
//! with tests forked from each binary's server and run in kept processes (the default), forked
//! each into a fresh process (`--fresh-processes`) and launched one process each
//! (`--process-per-test`), against `cargo test` and `cargo nextest run` in the same rounds; and
//! whether kept processes give the spectra fresh ones give (`cargo_sfl::select::differences`
//! between the two, beside the differences between two fresh runs: tests whose rows vary from
//! run to run).
//!
//! Every command runs on its own warm build (cargo test and nextest on the plain one), the
//! commands alternated within each round, medians reported. cargo sfl runs with `--rerun` (every
//! test, as `cargo test` runs them). Its per-test costs come from its own status line: the test
//! phase (every test run and decoded) and the decode time, summed over workers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};
use serde_json::json;

use crate::collect_bench::{median, wall};
use crate::{fetch_crate, sfl_run};

/// Published crates, with why each is here.
const CRATES: &[(&str, &str, &str)] = &[
    ("pulldown-cmark", "0.13.6", "over 1,000 small tests"),
    ("heck", "0.5.0", "127 small unit tests"),
    ("itoa", "1.0.18", "few tests, most of the time start-up"),
    ("indexmap", "2.14.2", "224 tests, quickcheck: slow tests"),
];

/// The commands of a round, in order: plain tools first, then cargo sfl's variants.
const SFL: &[(&str, &[&str])] = &[
    ("kept", &["--rerun"]),
    ("fresh", &["--rerun", "--fresh-processes"]),
    ("launched", &["--rerun", "--process-per-test"]),
    ("kept, no doctests", &["--rerun", "--no-doctests"]),
    ("fresh, no doctests", &["--rerun", "--no-doctests", "--fresh-processes"]),
];
/// [`SFL`]'s variants that run every test, doctests included.
const WITH_DOCTESTS: usize = 3;

struct Row {
    name: String,
    why: &'static str,
    tests: usize,
    tests_no_doc: usize,
    cargo_test: f64,
    nextest: f64,
    /// Per [`SFL`] variant: median wall seconds, and the median test phase and decode time.
    sfl: Vec<f64>,
    phase: Vec<f64>,
    decode_ms: Vec<f64>,
    /// Differences between the spectra of a kept run and a fresh one, and between two fresh
    /// runs (rows that vary from run to run).
    kept_vs_fresh: usize,
    fresh_vs_fresh: usize,
    /// The first few kept-against-fresh differences.
    examples: Vec<String>,
}

pub fn run(runs: usize, output_dir: &Path) -> Result<()> {
    let sfl = crate::build_sfl()?;
    let work = crate::root().join("target/bench");
    std::fs::create_dir_all(&work)?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut crates: Vec<(String, &str, PathBuf)> = Vec::new();
    for &(name, version, why) in CRATES {
        crates.push((format!("{name} {version}"), why, fetch_crate(name, version, &work)?));
    }
    crates.push((
        format!("generated, {} tests", crate::collect_bench::TRIVIAL),
        "each test a few instructions: the runner's cost alone",
        crate::collect_bench::trivial_crate(&work)?,
    ));
    let (tests, lines) = crate::collect_bench::CHATTY;
    crates.push((
        format!("generated, {tests} tests printing {lines} lines each"),
        "short lines to stderr (eprintln!): what output costs",
        crate::collect_bench::chatty_crate(&work)?,
    ));
    let mut rows = Vec::new();
    for (name, why, dir) in crates {
        eprintln!("== {name}");
        rows.push(measure(&sfl, &dir, runs)?.named(name, why));
    }
    let md = render(&rows, runs, jobs);
    print!("{md}");
    std::fs::create_dir_all(output_dir)?;
    std::fs::write(output_dir.join("launch.md"), &md)?;
    std::fs::write(
        output_dir.join("launch.json"),
        serde_json::to_string_pretty(&to_json(&rows, runs, jobs))?,
    )?;
    Ok(())
}

impl Row {
    fn named(mut self, name: String, why: &'static str) -> Row {
        self.name = name;
        self.why = why;
        self
    }
}

/// One crate's medians over `runs` alternated rounds.
fn measure(sfl: &Path, dir: &Path, runs: usize) -> Result<Row> {
    let manifest = dir.join("Cargo.toml");
    let cargo = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO"));
        crate::default_env(&mut c)
            .args(args)
            .arg("--manifest-path")
            .arg(&manifest);
        c
    };
    let cargo_test = || cargo(&["test", "--no-fail-fast"]);
    let nextest = || cargo(&["nextest", "run", "--no-fail-fast"]);
    // Warm-ups: every build once, and a first run of each variant.
    let _ = cargo_test().stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    let _ = nextest().stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    let first: Vec<_> = SFL
        .iter()
        .map(|(_, args)| sfl_run(sfl, &manifest, args))
        .collect::<Result<_>>()?;
    // Spectra: kept, then fresh twice.
    let saved = |variant: usize, file: &str| -> Result<cargo_sfl::spectra::Spectra> {
        let path = dir.join("target").join(file);
        let path_s = path.to_str().context("a UTF-8 path")?;
        let mut args = SFL[variant].1.to_vec();
        args.extend(["--save-spectra", path_s]);
        sfl_run(sfl, &manifest, &args)?;
        cargo_sfl::spectra::Spectra::load(&path).with_context(|| format!("cannot load {}", path.display()))
    };
    let kept = saved(0, "launch-kept.json")?;
    let fresh = saved(1, "launch-fresh.json")?;
    let fresh2 = saved(1, "launch-fresh2.json")?;
    let varying = cargo_sfl::select::differences(&fresh2, &fresh);
    let differ = cargo_sfl::select::differences(&kept, &fresh);
    let mut test_times = Vec::new();
    let mut nextest_times = Vec::new();
    let mut walls = vec![Vec::new(); SFL.len()];
    let mut phases = vec![Vec::new(); SFL.len()];
    let mut decodes = vec![Vec::new(); SFL.len()];
    for round in 0..runs.max(1) {
        eprintln!("   round {}", round + 1);
        test_times.push(wall(&mut cargo_test())?);
        nextest_times.push(wall(&mut nextest())?);
        for (i, (_, args)) in SFL.iter().enumerate() {
            let t = Instant::now();
            let r = sfl_run(sfl, &manifest, args)?;
            walls[i].push(t.elapsed().as_secs_f64());
            phases[i].push(r.run_secs);
            decodes[i].push(r.decode_ms);
        }
    }
    Ok(Row {
        name: String::new(),
        why: "",
        tests: first[0].tests,
        tests_no_doc: first[WITH_DOCTESTS].tests,
        cargo_test: median(&mut test_times),
        nextest: median(&mut nextest_times),
        sfl: walls.iter_mut().map(|v| median(v)).collect(),
        phase: phases.iter_mut().map(|v| median(v)).collect(),
        decode_ms: decodes.iter_mut().map(|v| median(v)).collect(),
        kept_vs_fresh: differ.len(),
        fresh_vs_fresh: varying.len(),
        examples: differ.into_iter().take(3).collect(),
    })
}

/// Milliseconds of worker time per test in the test phase of variant `i` (`jobs` workers).
fn per_test_ms(r: &Row, i: usize, jobs: usize) -> f64 {
    let tests = if i < WITH_DOCTESTS { r.tests } else { r.tests_no_doc };
    r.phase[i] * 1e3 * jobs as f64 / tests.max(1) as f64
}

fn render(rows: &[Row], runs: usize, jobs: usize) -> String {
    let mut s = format!(
        "# `cargo xtask bench launch`\n\nWhole commands on warm builds (cargo test and nextest on the plain build, cargo sfl on its \
         own), {jobs} jobs, median of {runs} rounds, the commands alternated within each round. cargo \
         sfl runs with `--rerun` (every test, as `cargo test` runs them): **kept** is the default (a \
         libtest binary's tests forked from one process of it stopped before `main`, and a test that \
         passed and left its process as it found it, or as it can be put back, runs the next test in it), **fresh** is \
         `--fresh-processes` (a new fork per test), **launched** is `--process-per-test` (one `exec` \
         per test, as nextest does). `no doctests` runs the tests nextest runs. Per-test cost is the \
         test phase (every test run and its profiles decoded) in worker milliseconds per test; decode \
         is the part spent decoding profiles and edge files. Spectra: `cargo_sfl::select::differences` \
         between a kept run's spectra and a fresh run's, and between two fresh runs (rows that vary \
         from run to run whatever runs them).\n\n"
    );
    s.push_str(
        "| crate | why | tests (no doctests) | cargo test (s) | nextest (s) | kept (s) | fresh (s) | launched (s) | kept / cargo test | fresh / cargo test | launched / cargo test | kept, no doctests / nextest | fresh, no doctests / nextest | per test ms: kept / fresh / launched | decode per test ms | spectra differences: kept vs fresh (fresh vs fresh) |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} ({}) | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2} / {:.2} / {:.2} | {:.2} | {} ({}) |\n",
            r.name,
            r.why,
            r.tests,
            r.tests_no_doc,
            r.cargo_test,
            r.nextest,
            r.sfl[0],
            r.sfl[1],
            r.sfl[2],
            r.sfl[0] / r.cargo_test,
            r.sfl[1] / r.cargo_test,
            r.sfl[2] / r.cargo_test,
            r.sfl[3] / r.nextest,
            r.sfl[4] / r.nextest,
            per_test_ms(r, 0, jobs),
            per_test_ms(r, 1, jobs),
            per_test_ms(r, 2, jobs),
            r.decode_ms[0] / r.tests.max(1) as f64,
            r.kept_vs_fresh,
            r.fresh_vs_fresh,
        ));
    }
    for r in rows.iter().filter(|r| !r.examples.is_empty()) {
        s.push_str(&format!(
            "\n{}: kept against fresh: {}\n",
            r.name,
            r.examples.join("; ")
        ));
    }
    s
}

fn to_json(rows: &[Row], runs: usize, jobs: usize) -> serde_json::Value {
    json!({
        "schema": "cargo-sfl-launch-bench/v2",
        "runs": runs,
        "jobs": jobs,
        "crates": rows.iter().map(|r| json!({
            "crate": r.name,
            "tests": r.tests,
            "tests_no_doctests": r.tests_no_doc,
            "cargo_test_s": r.cargo_test,
            "nextest_s": r.nextest,
            "sfl_s": SFL.iter().zip(&r.sfl).map(|((n, _), t)| (n.to_string(), json!(t))).collect::<serde_json::Map<_, _>>(),
            "test_phase_s": SFL.iter().zip(&r.phase).map(|((n, _), t)| (n.to_string(), json!(t))).collect::<serde_json::Map<_, _>>(),
            "decode_ms": SFL.iter().zip(&r.decode_ms).map(|((n, _), t)| (n.to_string(), json!(t))).collect::<serde_json::Map<_, _>>(),
            "kept_over_cargo_test": r.sfl[0] / r.cargo_test,
            "fresh_over_cargo_test": r.sfl[1] / r.cargo_test,
            "launched_over_cargo_test": r.sfl[2] / r.cargo_test,
            "kept_no_doctests_over_nextest": r.sfl[3] / r.nextest,
            "fresh_no_doctests_over_nextest": r.sfl[4] / r.nextest,
            "spectra_differences_kept_vs_fresh": r.kept_vs_fresh,
            "spectra_differences_fresh_vs_fresh": r.fresh_vs_fresh,
        })).collect::<Vec<_>>(),
    })
}
