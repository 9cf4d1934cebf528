//! `cargo xtask soak`: cargo sfl many times in a row on one generated crate, with test processes
//! SIGKILLed at random while they run. Every run's spectra must equal an undisturbed run's,
//! except for the killed tests, which must be reported as crashed by signal 9; and no process of
//! the crate may outlive a run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use cargo_sfl::spectra::Spectra;

/// Options of `cargo xtask soak`.
#[derive(clap::Args)]
pub struct Args {
    /// Runs with random kills (after one undisturbed run).
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// Chance per poll (every 20 ms) that a running test process is killed.
    #[arg(long, default_value_t = 0.005)]
    pub kill_rate: f64,
    /// Seed of the kill schedule.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Write the Markdown summary here as well as to stdout.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Tests of the generated crate; every third one reaches the fault.
const TESTS: usize = 24;

/// A block as `(function, index)`: stable across runs, unlike block ids.
type BlockName = (String, u32);

/// What one test did: outcome, signal, covered lines, traversed edges.
#[derive(PartialEq, Eq, Debug, Clone)]
struct TestResult {
    outcome: String,
    signal: Option<i32>,
    lines: BTreeSet<(String, u32)>,
    /// `(from block, to block)`: stable across runs, unlike edge ids.
    edges: BTreeSet<(Option<BlockName>, BlockName)>,
}

/// One soak run's tally.
struct RunTally {
    /// The libtest names of the tests whose process was SIGKILLed.
    killed: BTreeSet<String>,
    crashed: usize,
    too_late: usize,
    mismatches: Vec<String>,
    orphans: usize,
    seconds: f64,
}

pub fn run(args: &Args) -> Result<()> {
    let root = crate::root();
    let dir = root.join("target/soak/crate");
    write_crate(&dir)?;
    let sfl = crate::build_sfl()?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!("soak: undisturbed run (builds the crate)");
    let baseline = run_once(&sfl, &dir, jobs, None)?;
    if !baseline.mismatches.is_empty() {
        bail!("the undisturbed run failed: {:?}", baseline.mismatches);
    }
    let expected = results(&dir)?;
    let mut rng = Rng(args.seed.max(1));
    let mut tallies = Vec::new();
    for i in 1..=args.runs {
        let kills = Kills {
            rate: args.kill_rate,
            rng: &mut rng,
        };
        let mut tally = run_once(&sfl, &dir, jobs, Some(kills))?;
        compare(&expected, &results(&dir)?, &mut tally);
        eprintln!(
            "soak: run {i}/{}: {} killed ({} crashed, {} had already ended), {} mismatches, {} orphans",
            args.runs,
            tally.killed.len(),
            tally.crashed,
            tally.too_late,
            tally.mismatches.len(),
            tally.orphans
        );
        tallies.push(tally);
    }
    let table = summary(&tallies, args, jobs);
    println!("{table}");
    if let Some(out) = &args.output {
        std::fs::write(root.join(out), &table)?;
    }
    let bad: Vec<&String> = tallies.iter().flat_map(|t| &t.mismatches).collect();
    let orphans: usize = tallies.iter().map(|t| t.orphans).sum();
    if !bad.is_empty() || orphans > 0 {
        bail!(
            "{} mismatches, {orphans} orphaned processes; first: {:?}",
            bad.len(),
            bad.first()
        );
    }
    if tallies.iter().map(|t| t.crashed).sum::<usize>() == 0 && args.runs > 0 {
        bail!("no kill landed on a running test: raise --kill-rate");
    }
    Ok(())
}

/// The kill schedule of one run.
struct Kills<'a> {
    rate: f64,
    rng: &'a mut Rng,
}

/// Runs cargo sfl on the crate; with `kills`, SIGKILLs running tests at random meanwhile.
fn run_once(sfl: &Path, dir: &Path, jobs: usize, kills: Option<Kills>) -> Result<RunTally> {
    let started = Instant::now();
    let mut child = Command::new(sfl)
        .args(["sfl", "--quiet", "-j", &jobs.to_string(), "--format", "json"])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .context("cannot start cargo sfl")?;
    let mut killed: BTreeMap<i32, String> = BTreeMap::new();
    let mut tally = RunTally {
        killed: BTreeSet::new(),
        crashed: 0,
        too_late: 0,
        mismatches: Vec::new(),
        orphans: 0,
        seconds: 0.0,
    };
    if let Some(kills) = kills {
        while child.try_wait()?.is_none() {
            for (pid, test) in running_tests(dir) {
                if !killed.contains_key(&pid) && kills.rng.chance(kills.rate) {
                    let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
                    killed.insert(pid, test);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let out = child.wait_with_output()?;
    tally.seconds = started.elapsed().as_secs_f64();
    if out.status.code() != Some(0) {
        tally.mismatches.push(format!(
            "cargo sfl exited with {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    tally.killed = killed.into_values().collect();
    tally.orphans = running(dir).len();
    Ok(tally)
}

/// Checks a disturbed run against the undisturbed one.
fn compare(expected: &BTreeMap<String, TestResult>, got: &BTreeMap<String, TestResult>, tally: &mut RunTally) {
    for (name, want) in expected {
        // `name` is `binary test`; a kill knows the libtest name only.
        let was_killed = tally.killed.iter().any(|k| name.ends_with(&format!(" {k}")));
        let Some(have) = got.get(name) else {
            tally.mismatches.push(format!("{name}: missing from the spectra"));
            continue;
        };
        if have == want {
            if was_killed {
                tally.too_late += 1;
            }
        } else if was_killed && have.outcome == "crashed" && have.signal == Some(9) {
            tally.crashed += 1;
        } else {
            tally.mismatches.push(format!(
                "{name}: {} (signal {:?}, {} lines, {} edges) vs {} ({} lines, {} edges){}",
                have.outcome,
                have.signal,
                have.lines.len(),
                have.edges.len(),
                want.outcome,
                want.lines.len(),
                want.edges.len(),
                if was_killed { " [killed]" } else { "" }
            ));
        }
    }
    if got.len() != expected.len() {
        tally
            .mismatches
            .push(format!("{} tests instead of {}", got.len(), expected.len()));
    }
}

/// Per test (`binary name`), what the saved spectra say it did.
fn results(dir: &Path) -> Result<BTreeMap<String, TestResult>> {
    let spectra = Spectra::load(&dir.join("target/sfl/spectra.json")).context("cannot read the spectra")?;
    let mut out: Vec<TestResult> = spectra
        .tests
        .iter()
        .map(|t| TestResult {
            outcome: t.outcome.as_str().to_string(),
            signal: t.signal,
            lines: BTreeSet::new(),
            edges: BTreeSet::new(),
        })
        .collect();
    for (u, col) in spectra.coverage.iter().enumerate() {
        for t in col.ones_and(col) {
            let unit = &spectra.units[u];
            out[t].lines.insert((unit.file.clone(), unit.line));
        }
    }
    if let Some(edges) = &spectra.edges {
        let block = |b: cargo_sfl::edges::BlockId| {
            let b = &edges.blocks[b.index()];
            (b.function.clone(), b.index)
        };
        for (edge, col) in edges.edges.iter().zip(&edges.coverage) {
            for t in col.ones_and(col) {
                out[t].edges.insert((edge.from.map(block), block(edge.to)));
            }
        }
    }
    Ok(spectra
        .tests
        .iter()
        .map(|t| format!("{} {}", t.binary, t.name))
        .zip(out)
        .collect())
}

/// Processes whose executable lies under `dir` (the crate's builds), with their command lines.
fn running(dir: &Path) -> Vec<(i32, Vec<String>)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let exe = std::fs::read_link(e.path().join("exe")).ok()?;
            if !exe.starts_with(dir) {
                return None;
            }
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            Some((pid, args))
        })
        .collect()
}

/// Running test processes (one test each: `--exact NAME`), by pid.
fn running_tests(dir: &Path) -> Vec<(i32, String)> {
    running(dir)
        .into_iter()
        .filter_map(|(pid, args)| {
            let at = args.iter().position(|a| a == "--exact")?;
            Some((pid, args.get(at + 1)?.clone()))
        })
        .collect()
}

/// Writes the soak crate: tests that each spin for a while (so kills land mid-test) and then
/// check a function with a fault that every third test reaches.
fn write_crate(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"soak\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )?;
    std::fs::write(
        dir.join("src/lib.rs"),
        r#"//! The soak crate: a clamp with a fault, and busy work to make tests last.

/// Deterministic busy work (the same lines run every time).
pub fn spin(rounds: u64) -> u64 {
    let mut x = 1u64;
    for i in 0..rounds {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    x
}

pub fn clamp(v: i64, lo: i64, hi: i64) -> i64 {
    if v < lo {
        lo
    } else if v > hi {
        lo // the fault: should be hi
    } else {
        v
    }
}
"#,
    )?;
    let mut tests = String::from("use soak::{clamp, spin};\n");
    for i in 0..TESTS {
        let (v, want) = if i % 3 == 0 {
            (100 + i as i64, 50)
        } else {
            (i as i64, i as i64)
        };
        tests.push_str(&format!(
            "\n#[test]\nfn t{i:02}() {{\n    std::hint::black_box(spin(30_000_000));\n    assert_eq!(clamp({v}, -50, 50), {want});\n}}\n"
        ));
    }
    std::fs::write(dir.join("tests/soak.rs"), tests)?;
    Ok(())
}

/// The Markdown summary.
fn summary(tallies: &[RunTally], args: &Args, jobs: usize) -> String {
    let mut s = format!(
        "# Soak: cargo sfl {} times with random SIGKILLs of test processes\n\n\
         A generated crate of {TESTS} tests (each spins, then checks a clamp with a fault; 8 fail), \
         `-j {jobs}` (the core count), kill chance {} per running test every 20 ms, seed {}. Each run's \
         spectra are compared with an undisturbed run's: outcome, signal, covered lines and traversed \
         edges of every test.\n\n\
         | run | seconds | killed | reported crashed (signal 9) | had already ended | mismatches | orphaned processes |\n\
         |---:|---:|---:|---:|---:|---:|---:|\n",
        args.runs, args.kill_rate, args.seed
    );
    for (i, t) in tallies.iter().enumerate() {
        s.push_str(&format!(
            "| {} | {:.1} | {} | {} | {} | {} | {} |\n",
            i + 1,
            t.seconds,
            t.killed.len(),
            t.crashed,
            t.too_late,
            t.mismatches.len(),
            t.orphans
        ));
    }
    let sum = |f: fn(&RunTally) -> usize| tallies.iter().map(f).sum::<usize>();
    s.push_str(&format!(
        "| all | | {} | {} | {} | {} | {} |\n",
        sum(|t| t.killed.len()),
        sum(|t| t.crashed),
        sum(|t| t.too_late),
        sum(|t| t.mismatches.len()),
        sum(|t| t.orphans)
    ));
    s
}

/// xorshift64: a fixed, dependency-free kill schedule per seed.
struct Rng(u64);

impl Rng {
    fn chance(&mut self, p: f64) -> bool {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64 > 1.0 - p
    }
}
