//! Project chores: `cargo xtask bench collect` (the collection benchmark) and
//! `cargo xtask bench measures` (every measure on a large synthetic matrix),
//! `cargo xtask bench edges` (edge recording's cost, CP's solve time), `bench ht`, `bench faults`,
//! `bench panic4r` (real panics from the Panic4R data set), `bench launch` (what a test costs, forked
//! and launched, against `cargo test` and nextest), `bench corpus` (parity with `cargo test`
//! on published crates of many shapes, and the run after an edit against a full run); `cargo xtask fuzz` (the decoders of
//! untrusted input under structure-aware mutation); `cargo xtask house` (the library's shape); `cargo xtask soak` (repeated runs with random
//! kills of test processes); `cargo xtask readme` (the README's sample report, regenerated).

mod cargo_log;
mod collect_bench;
mod corpus_bench;
mod edges_bench;
mod edges_compare;
mod faults_bench;
mod launch_bench;
mod fit;
mod folds;
mod fuzz;
mod house;
mod ht_bench;
mod measures_bench;
mod mutate_bench;
mod panic4r_bench;
mod readme;
mod regressions_bench;
mod screenshots;
mod select_bench;
mod soak;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "cargo-sfl project chores")]
enum Xtask {
    /// Benchmarks.
    #[command(subcommand)]
    Bench(Bench),
    /// Run cargo sfl many times on a generated crate while SIGKILLing test processes at
    /// random: every run's spectra must equal an undisturbed run's but for the killed tests
    /// (reported as crashed), and no process may outlive a run.
    Soak(soak::Args),
    /// Fuzz the decoders of files cargo sfl did not write (raw profiles, coverage maps, edge
    /// files, saved spectra, GZoltar input, faults files) with mutated real inputs.
    Fuzz(fuzz::Args),
    /// Fit the combined ranking's weights on the cached runs of three benchmarks (injected faults,
    /// Panic4R, regressions) with leave-one-crate-out cross-validation, and choose the default
    /// ranking among simpler and fitted candidates the same way (the simplest within one standard
    /// error of the best): bench-results/combined.md and combined.json (`--write`: the weights too).
    Fit(fit::Args),
    /// The guide's pictures of the terminal and HTML reports (docs/guide/img/), made from a run
    /// on fixtures/minmax by headless Chromium.
    Screenshots,
    /// Check the library's shape: no circle of imports between its files, process exits only
    /// in the binary, no function over 80 lines or file over 600 lines outside tests, no
    /// `Result<_, String>` outside clap value parsers. Exit 1 on a finding.
    House,
    /// Regenerate the README's sample report: the demo command's standard output on
    /// fixtures/minmax, between the `sample-report` marker comments.
    Readme {
        /// Only check that the sample is up to date (exit 1 if not); write nothing.
        #[arg(long)]
        check: bool,
    },
}

#[derive(Subcommand)]
enum Bench {
    /// Whole `cargo sfl` commands (edges on and off, with and without doctests) against
    /// `cargo nextest run` on real crates, warm builds, with peak memory and decode cost per test.
    Collect {
        /// Rounds (each runs every command once; medians are reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Write the Markdown table here as well as to stdout, and the JSON next to it.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Inject faults into real crates with cargo-mutants, run cargo sfl on every faulty version
    /// (cached), and evaluate every measure: bench-results/faults.md and faults.json.
    Faults {
        /// Mutants sampled per crate for single-fault versions.
        #[arg(long, default_value_t = 45)]
        per_crate: usize,
        /// Versions per crate for each of 2, 4 and 8 faults.
        #[arg(long, default_value_t = 4)]
        multi: usize,
        /// Only these crates (by name).
        #[arg(long = "crate")]
        crates: Vec<String>,
        /// Only evaluate what is cached; run nothing.
        #[arg(long)]
        eval_only: bool,
        /// Where faults.md and faults.json go.
        #[arg(long, default_value = "bench-results")]
        output_dir: PathBuf,
    },
    /// What a test costs beyond `cargo test`: tests forked from each binary's server (the
    /// default) and launched one process each (`--process-per-test`), against `cargo test` and
    /// `cargo nextest run` in the same rounds: bench-results/launch.md and launch.json.
    Launch {
        /// Rounds (each runs every command once; medians are reported).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Where launch.md and launch.json go.
        #[arg(long, default_value = "bench-results")]
        output_dir: PathBuf,
    },
    /// Parity with `cargo test --no-fail-fast` on published crates of many shapes: per-test
    /// outcomes (doctests included), the human report against the JSON report, exit codes, wall
    /// times, one injected fault's rank per crate, and the run after an edit against `--rerun`
    /// (spectra, summary, default ranking): bench-results/corpus.md and corpus.json.
    Corpus {
        /// Only these crates (by name).
        #[arg(long = "crate")]
        crates: Vec<String>,
        /// Where corpus.md and corpus.json go.
        #[arg(long, default_value = "bench-results")]
        output_dir: PathBuf,
    },
    /// Real bugs: run cargo sfl on the reproducible panics of Panic4R (a checkout given by
    /// --data) and evaluate every measure: bench-results/panic4r.md and panic4r.json.
    #[command(long_about = panic4r_bench::ABOUT)]
    Panic4r(panic4r_bench::Args),
    /// Real regressions mined from git histories (`--repo PATH`, any clone with its history):
    /// commits fixing library code with a new or changed test, reproduced as the parent's
    /// library with the commit's tests, localised by cargo sfl: bench-results/regressions.md,
    /// regressions.json and the bug list regressions-bugs.json.
    Regressions(regressions_bench::Args),
    /// Whether a function's git history (its age, its churn) tells the faulty one apart among the
    /// default's top functions, on the bugs `bench regressions` cached (`--repo PATH` each):
    /// bench-results/history.md and history.json.
    History(regressions_bench::history::Args),
    /// What `cargo sfl --mutate` gains and costs on a sample of the injected faults and on
    /// reproduced Panic4R bugs: bench-results/mutate.md and mutate.json.
    Mutate(mutate_bench::Args),
    /// Test selection proven safe and measured: random edits of corpus crates, each run
    /// selected (from the pristine spectra) and in full, spectra compared test by test, wall
    /// times against `cargo test` after the same edit: bench-results/select.md and select.json.
    Select(select_bench::Args),
    /// Test-run time with edge recording against `--no-edges` on the same crates, and CP's
    /// solve time on their CFGs and on synthetic ones up to `--blocks`.
    Edges {
        /// Repetitions per kind of run (the median is reported).
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Largest synthetic CFG (blocks); sizes go 1000, 10000, … up to it.
        #[arg(long, default_value_t = 100_000)]
        blocks: usize,
        /// Skip the real crates fetched from crates.io (fixtures only).
        #[arg(long)]
        fixtures_only: bool,
        /// Also run this other cargo-sfl binary (e.g. a build with an earlier edge recorder) on
        /// every crate and compare the edges each test took.
        #[arg(long, value_name = "CARGO_SFL")]
        against: Option<PathBuf>,
        /// Write the Markdown table here as well as to stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// HT_Rank's exact solver against the dense LU and random walks on chains of growing size.
    Ht {
        /// Chain sizes (locations).
        #[arg(long, value_delimiter = ',', default_values_t = [500usize, 1000, 2000, 5000, 20000, 50000, 100000])]
        sizes: Vec<usize>,
        /// Random walks for the estimate.
        #[arg(long, default_value_t = 200)]
        walks: usize,
        /// Write the Markdown table here as well as to stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Time every measure (scores and ranking) on a synthetic matrix, on one core, and report
    /// peak memory.
    Measures {
        /// Tests in the synthetic matrix.
        #[arg(long, default_value_t = 10_000)]
        tests: usize,
        /// Lines in the synthetic matrix.
        #[arg(long, default_value_t = 100_000)]
        units: usize,
        /// Write the Markdown table here as well as to stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
}

/// Real crates with a few hundred tests between them that test offline.
const REAL_CRATES: &[(&str, &str)] = &[("regex-syntax", "0.8.5"), ("textwrap", "0.16.1")];
/// The hang fixture is left out: nextest and cargo test have no timeout and would hang.
const FIXTURES: &[&str] = &["minmax", "workspace", "crash", "harness-false", "generic-macro"];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn main() -> Result<()> {
    match Xtask::parse() {
        Xtask::Bench(Bench::Collect { runs, output }) => collect_bench::run(runs, output.as_deref()),
        Xtask::Bench(Bench::Measures { tests, units, output }) => measures_bench::run(tests, units, output.as_deref()),
        Xtask::Bench(Bench::Edges {
            runs,
            blocks,
            fixtures_only,
            against,
            output,
        }) => edges_bench::run_bench(runs, blocks, fixtures_only, against.as_deref(), output.as_deref()),
        Xtask::Bench(Bench::Ht { sizes, walks, output }) => ht_bench::run(&sizes, walks, output.as_deref()),
        Xtask::Bench(Bench::Faults {
            per_crate,
            multi,
            crates,
            eval_only,
            output_dir,
        }) => faults_bench::run_bench(&faults_bench::Args {
            per_crate,
            multi,
            crates,
            eval_only,
            output_dir: root().join(output_dir),
        }),
        Xtask::Bench(Bench::Launch { runs, output_dir }) => launch_bench::run(runs, &root().join(output_dir)),
        Xtask::Bench(Bench::Corpus { crates, output_dir }) => corpus_bench::run(&crates, &root().join(output_dir)),
        Xtask::Bench(Bench::Panic4r(args)) => panic4r_bench::run_bench(&args),
        Xtask::Bench(Bench::Regressions(args)) => regressions_bench::run_bench(&args),
        Xtask::Bench(Bench::History(args)) => regressions_bench::history::run(&args),
        Xtask::Bench(Bench::Mutate(args)) => mutate_bench::run(&args),
        Xtask::Bench(Bench::Select(args)) => select_bench::run(&args),
        Xtask::Soak(args) => soak::run(&args),
        Xtask::Fuzz(args) => fuzz::run(&args),
        Xtask::House => {
            let mut findings = house::check(&root())?;
            // The xtask's own files import one way too.
            findings.circles.extend(house::binary_circles(&root().join("xtask"))?);
            print!("{}", findings.render());
            if !findings.is_clean() {
                std::process::exit(1);
            }
            Ok(())
        }
        Xtask::Readme { check } => readme::run(check),
        Xtask::Screenshots => screenshots::run(),
        Xtask::Fit(args) => fit::run(&args),
    }
}

/// Builds cargo sfl in release mode and lays out the benchmark crates (the fixtures, then the
/// real crates unless `fixtures_only`) under target/bench: the binary and `(label, dir)`s.
fn bench_crates(fixtures_only: bool) -> Result<(PathBuf, Vec<(String, PathBuf)>)> {
    let root = root();
    let sfl = build_sfl()?;
    let work = root.join("target/bench");
    std::fs::create_dir_all(&work)?;
    let mut crates: Vec<(String, PathBuf)> = Vec::new();
    for f in FIXTURES {
        let dst = work.join(format!("fixture-{f}"));
        copy_tree(&root.join("fixtures").join(f), &dst)?;
        crates.push((format!("fixture {f}"), dst));
    }
    if !fixtures_only {
        for (name, version) in REAL_CRATES {
            crates.push((format!("{name} {version}"), fetch_crate(name, version, &work)?));
        }
    }
    Ok((sfl, crates))
}

/// Kills a child started in a process group of its own, with everything in the group, and
/// reaps it.
fn kill_group(child: &mut std::process::Child) {
    // `--` first: without it procps's kill reads the negative process-group id as a signal,
    // kills nothing, and the wait below never ends.
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
}

/// Builds cargo sfl in release mode; the path of the binary.
fn build_sfl() -> Result<PathBuf> {
    let root = root();
    run(Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "cargo-sfl"])
        .current_dir(&root))?;
    Ok(root.join("target/release/cargo-sfl"))
}

pub(crate) struct SflRun {
    pub(crate) tests: usize,
    /// The test-run phase: every test run and its profiles decoded (the build excluded).
    pub(crate) run_secs: f64,
    pub(crate) decode_ms: f64,
}

/// `c` without the backtrace variables a developer's shell may set: what the speed benchmarks
/// time runs in the default environment (with `RUST_BACKTRACE=1` the standard library
/// symbolises every failing test's backtrace, under `cargo test` and cargo sfl alike).
pub(crate) fn default_env(c: &mut Command) -> &mut Command {
    c.env_remove("RUST_BACKTRACE").env_remove("RUST_LIB_BACKTRACE")
}

/// Runs cargo sfl (with `extra` arguments) and reads its "Finished N tests in Xs; decoded … in
/// Y ms" lines, summed: a run of every test says one for the other tests and one for the
/// doctests, built while those ran.
pub(crate) fn sfl_run(sfl: &Path, manifest: &Path, extra: &[&str]) -> Result<SflRun> {
    let out = default_env(&mut Command::new(sfl))
        .args(["sfl", "--format", "json", "--test-timeout", "60", "--manifest-path"])
        .arg(manifest)
        .args(extra)
        .stdout(Stdio::null())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !matches!(out.status.code(), Some(0 | 3)) {
        bail!("cargo sfl failed on {}:\n{stderr}", manifest.display());
    }
    let mut run = SflRun {
        tests: 0,
        run_secs: 0.0,
        decode_ms: 0.0,
    };
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("Finished") && l.contains("decoded"))
        .collect();
    if lines.is_empty() {
        bail!("no timing line:\n{stderr}");
    }
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        let num = |after: &str, offset: usize| -> Result<f64> {
            let i = words.iter().position(|w| *w == after).context("timing line shape")?;
            Ok(words[i + offset].trim_end_matches(['s', ';']).parse()?)
        };
        run.tests += num("Finished", 1)? as usize;
        run.run_secs += num("in", 1)?;
        run.decode_ms += num("profiles", 2)?;
    }
    Ok(run)
}

/// Downloads a published crate through cargo (crates.io) and unpacks it as its own workspace.
/// Where `cargo fetch` unpacked `name` `version`: `$CARGO_HOME/registry/src/<index>/name-version`.
fn unpacked(name: &str, version: &str) -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    std::fs::read_dir(home.join("registry/src"))
        .ok()?
        .flatten()
        .map(|index| index.path().join(format!("{name}-{version}")))
        .find(|dir| dir.join("Cargo.toml").is_file())
}

fn fetch_crate(name: &str, version: &str, work: &Path) -> Result<PathBuf> {
    let dst = work.join(format!("{name}-{version}"));
    if dst.join("Cargo.toml").exists() {
        return Ok(dst);
    }
    let probe = work.join(format!("fetch-{name}"));
    std::fs::create_dir_all(probe.join("src"))?;
    std::fs::write(
        probe.join("Cargo.toml"),
        format!(
            "[package]\nname = \"fetch-probe\"\nversion = \"0.0.0\"\nedition = \"2021\"\n[dependencies]\n{name} = \"={version}\"\n[workspace]\n"
        ),
    )?;
    std::fs::write(probe.join("src/lib.rs"), "")?;
    run(Command::new(env!("CARGO")).arg("fetch").current_dir(&probe))?;
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1"])
        .current_dir(&probe)
        .output()?;
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let listed = meta["packages"]
        .as_array()
        .context("metadata")?
        .iter()
        .find(|p| p["name"] == name)
        .and_then(|p| p["manifest_path"].as_str())
        .map(|m| Path::new(m).parent().unwrap().to_path_buf());
    // A crate without a library (a binary-only CLI) is fetched but left out of the metadata
    // ("ignoring invalid dependency"): it is where cargo unpacked it.
    let source = match listed {
        Some(dir) => dir,
        None => unpacked(name, version).context("crate neither in metadata nor unpacked by cargo fetch")?,
    };
    copy_tree(&source, &dst)?;
    // Make the unpacked crate its own workspace root.
    let mut toml = std::fs::read_to_string(dst.join("Cargo.toml"))?;
    if !toml.contains("[workspace]") {
        toml.push_str("\n[workspace]\n");
        std::fs::write(dst.join("Cargo.toml"), toml)?;
    }
    Ok(dst)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)?.flatten() {
        if e.file_name() == "target" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)?;
        } else {
            std::fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd.status()?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Wall time of a command whose own failure (failing tests) is expected.
/// Runs `cmd` once under GNU time: the peak RSS in MiB of the largest process among it and
/// the processes it waited for (Linux's `wait4` reports the maximum over the tree). `None`
/// when `/usr/bin/time` is missing.
pub(crate) fn peak_rss(cmd: &mut Command) -> Result<Option<f64>> {
    let time = Path::new("/usr/bin/time");
    if !time.exists() {
        return Ok(None);
    }
    let out = std::env::temp_dir().join(format!("xtask-rss-{}", std::process::id()));
    let mut timed = Command::new(time);
    timed
        .args(["-f", "%M", "-o"])
        .arg(&out)
        .arg(cmd.get_program())
        .args(cmd.get_args())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    let status = timed.status()?;
    let text = std::fs::read_to_string(&out).with_context(|| format!("GNU time wrote nothing ({status})"))?;
    let _ = std::fs::remove_file(&out);
    // The last line is the number (a non-zero exit adds a "Command exited…" line before it).
    let kib: f64 = text.lines().last().unwrap_or_default().trim().parse()?;
    Ok(Some(kib / 1024.0))
}

fn median(runs: usize, mut f: impl FnMut() -> Result<f64>) -> Result<f64> {
    let mut v = (0..runs.max(1)).map(|_| f()).collect::<Result<Vec<f64>>>()?;
    v.sort_by(f64::total_cmp);
    Ok(v[v.len() / 2])
}
