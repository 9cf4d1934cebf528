//! `cargo xtask bench collect`: whole `cargo sfl` commands against `cargo nextest run` on real
//! crates, as a user runs them: each command on its own warm build (nextest on the plain
//! uninstrumented one), commands alternated within each round, medians reported, and the peak
//! memory of one run of each. Written to Markdown and JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::json;

use crate::{fetch_crate, peak_rss, sfl_run};

/// Real crates no one here wrote, each with why it is in the set.
const CRATES: &[(&str, &str, &str)] = &[
    ("regex-syntax", "0.8.5", "a parser; many small tests"),
    ("textwrap", "0.16.1", "short tests, most time in process start"),
    ("itertools", "0.14.0", "over 400 tests"),
    (
        "num-bigint",
        "0.4.6",
        "CPU-bound: its modpow tests take 2 s each under nextest",
    ),
];

/// The `cargo sfl` variants measured; doctests are left out of the first two so the same tests
/// run as under nextest (which never runs doctests).
const VARIANTS: &[(&str, &[&str])] = &[
    ("edges", &["--no-doctests"]),
    ("lines", &["--no-doctests", "--no-edges"]),
    ("default", &[]),
];

struct Row {
    name: String,
    why: &'static str,
    /// Tests cargo sfl ran without doctests, and with them.
    tests: usize,
    tests_with_doctests: usize,
    nextest: f64,
    /// `cargo test --doc` (plain build): the doctests, which nextest does not run.
    doctests: f64,
    /// Per variant: median wall seconds.
    sfl: Vec<f64>,
    /// Peak RSS (MiB): nextest, then each variant (None: no GNU time here).
    rss: Vec<Option<f64>>,
    /// Profile decode time per test (µs) with edges, without doctests.
    decode_us: f64,
}

pub fn run(runs: usize, output: Option<&Path>) -> Result<()> {
    let sfl = crate::build_sfl()?;
    let work = crate::root().join("target/bench");
    std::fs::create_dir_all(&work)?;
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    let mut crates: Vec<(String, &str, PathBuf)> = Vec::new();
    for &(name, version, why) in CRATES {
        crates.push((format!("{name} {version}"), why, fetch_crate(name, version, &work)?));
    }
    crates.push((
        format!("generated, {TRIVIAL} tests"),
        "process overhead: each test a few instructions",
        trivial_crate(&work)?,
    ));
    for (name, why, dir) in crates {
        eprintln!("== {name}");
        let manifest = dir.join("Cargo.toml");
        let nextest = || {
            let mut c = Command::new(env!("CARGO"));
            c.args(["nextest", "run", "--no-fail-fast", "--manifest-path"])
                .arg(&manifest);
            c
        };
        // What a nextest user runs for the doctests (nextest cannot run them): rustdoc compiles
        // every doctest again on each run.
        let doctests = || {
            let mut c = Command::new(env!("CARGO"));
            c.args(["test", "--doc", "--no-fail-fast", "--manifest-path"])
                .arg(&manifest);
            c
        };
        // Warm-ups: every build once.
        let _ = nextest().stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let _ = doctests().stdout(Stdio::null()).stderr(Stdio::null()).status()?;
        let first = VARIANTS
            .iter()
            .map(|(_, args)| sfl_run(&sfl, &manifest, args))
            .collect::<Result<Vec<_>>>()?;
        // nextest, each variant, then `cargo test --doc`.
        let mut times: Vec<Vec<f64>> = vec![Vec::new(); VARIANTS.len() + 2];
        for _ in 0..runs.max(1) {
            times[0].push(wall(&mut nextest())?);
            times[VARIANTS.len() + 1].push(wall(&mut doctests())?);
            for (i, (_, args)) in VARIANTS.iter().enumerate() {
                let t = Instant::now();
                sfl_run(&sfl, &manifest, args)?;
                times[i + 1].push(t.elapsed().as_secs_f64());
            }
        }
        let mut rss = vec![peak_rss(&mut nextest())?];
        for (_, args) in VARIANTS {
            rss.push(peak_rss(
                Command::new(&sfl)
                    .args(["sfl", "--format", "json", "--test-timeout", "600", "--manifest-path"])
                    .arg(&manifest)
                    .args(*args),
            )?);
        }
        let medians: Vec<f64> = times.iter_mut().map(|v| median(v)).collect();
        rows.push(Row {
            name,
            why,
            tests: first[0].tests,
            tests_with_doctests: first[2].tests,
            nextest: medians[0],
            doctests: medians[VARIANTS.len() + 1],
            sfl: medians[1..=VARIANTS.len()].to_vec(),
            rss,
            decode_us: first[0].decode_ms * 1e3 / first[0].tests.max(1) as f64,
        });
    }
    let table = render(&rows, runs, jobs);
    print!("{table}");
    if let Some(p) = output {
        std::fs::write(p, &table)?;
        std::fs::write(
            p.with_extension("json"),
            serde_json::to_string_pretty(&to_json(&rows, runs, jobs))?,
        )?;
    }
    Ok(())
}

/// Tests in the generated crate.
pub(crate) const TRIVIAL: usize = 3000;

/// A crate of [`TRIVIAL`] tests that each check one addition: what is measured is what a runner
/// spends per test (listing, spawning, profile files, decoding).
pub(crate) fn trivial_crate(work: &Path) -> Result<PathBuf> {
    let tests: String = (0..TRIVIAL)
        .map(|i| {
            format!(
                "    #[test]\n    fn t{i}() {{\n        assert_eq!(super::add({i}, 1), {});\n    }}\n",
                i + 1
            )
        })
        .collect();
    generated_crate(&work.join(format!("trivial-{TRIVIAL}")), "trivial", &tests)
}

/// A crate `name` in `dir` whose library is an `add` function and a test module holding
/// `tests`; its files are rewritten only when they change, so the builds stay warm.
fn generated_crate(dir: &Path, name: &str, tests: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(dir.join("src"))?;
    let manifest = format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n");
    let lib = format!("pub fn add(a: u64, b: u64) -> u64 {{\n    a + b\n}}\n\n#[cfg(test)]\nmod tests {{\n{tests}}}\n");
    for (path, text) in [(dir.join("Cargo.toml"), manifest), (dir.join("src/lib.rs"), lib)] {
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text)?;
        }
    }
    Ok(dir.to_path_buf())
}

/// Tests in the generated chatty crate, and the lines each prints.
pub(crate) const CHATTY: (usize, usize) = (8, 250_000);

/// A crate of [`CHATTY`] tests that each print many short lines to stderr (`eprintln!` with
/// arguments, as bytes' `advance_bytes_mut_remaining_capacity` prints 2.8 million): what output
/// costs a runner. libtest captures it in memory; a test run with `--nocapture` makes a few
/// `write`s per line.
pub(crate) fn chatty_crate(work: &Path) -> Result<PathBuf> {
    let (tests, lines) = CHATTY;
    let tests_src: String = (0..tests)
        .map(|i| {
            format!(
                "    #[test]\n    fn t{i}() {{\n        for k in 0..{lines}u64 {{\n            \
                 eprintln!(\"step {{k}} of test {i}: {{}}\", super::add(k, {i}));\n        }}\n    }}\n"
            )
        })
        .collect();
    generated_crate(&work.join(format!("chatty-{tests}x{lines}")), "chatty", &tests_src)
}

/// Wall seconds of a command whose failure (a failing test) is expected; a command that could
/// not start is an error.
pub(crate) fn wall(cmd: &mut Command) -> Result<f64> {
    let t = Instant::now();
    let status = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status()?;
    if status.code().is_none() {
        bail!("{cmd:?} was killed ({status})");
    }
    Ok(t.elapsed().as_secs_f64())
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn mib(v: Option<f64>) -> String {
    v.map_or("–".into(), |m| format!("{m:.0}"))
}

fn render(rows: &[Row], runs: usize, jobs: usize) -> String {
    let mut s = format!(
        "Whole commands, builds warm (each on its own build: nextest on the plain one), {jobs} jobs, \
         median of {runs} rounds, the commands alternated within each round. `edges` is `cargo sfl \
         --no-doctests` (edge profiles on, the default), `lines` adds `--no-edges`; both run the same \
         tests as nextest. `default` is plain `cargo sfl`, which also runs the doctests (nextest never \
         does); its like-for-like baseline is `nextest + doc`: `cargo nextest run` then `cargo test \
         --doc`, as nextest's documentation advises for doctests (rustdoc compiles every doctest on \
         each run; cargo sfl keeps its compiled doctests until their sources change). Every cargo sfl command has run before on its build, so the longest tests of its last \
         run start first, as in a developer's repeated runs. Peak RSS is the largest single process \
         of one run (GNU time).\n\n"
    );
    s.push_str(
        "| crate | why | tests (+ doctests) | nextest (s) | edges (s) | lines (s) | default (s) | nextest + doc (s) | edges / nextest | lines / nextest | edges / lines | default / nextest | default / (nextest + doc) | decode per test | peak RSS MiB: nextest / edges / lines / default |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in rows {
        let [edges, lines, default] = [r.sfl[0], r.sfl[1], r.sfl[2]];
        s.push_str(&format!(
            "| {} | {} | {} (+{}) | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.2}× | {:.0} µs | {} |\n",
            r.name,
            r.why,
            r.tests,
            r.tests_with_doctests.saturating_sub(r.tests),
            r.nextest,
            edges,
            lines,
            default,
            r.nextest + r.doctests,
            edges / r.nextest,
            lines / r.nextest,
            edges / lines,
            default / r.nextest,
            default / (r.nextest + r.doctests),
            r.decode_us,
            r.rss.iter().map(|m| mib(*m)).collect::<Vec<_>>().join(" / "),
        ));
    }
    s
}

fn to_json(rows: &[Row], runs: usize, jobs: usize) -> serde_json::Value {
    let crates: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            json!({
                "crate": r.name,
                "why": r.why,
                "tests": r.tests,
                "tests_with_doctests": r.tests_with_doctests,
                "seconds": {
                    "nextest": r.nextest,
                    "doctests": r.doctests,
                    "edges": r.sfl[0],
                    "lines": r.sfl[1],
                    "default": r.sfl[2],
                },
                "ratios": {
                    "edges_over_nextest": r.sfl[0] / r.nextest,
                    "lines_over_nextest": r.sfl[1] / r.nextest,
                    "edges_over_lines": r.sfl[0] / r.sfl[1],
                    "default_over_nextest": r.sfl[2] / r.nextest,
                    "default_over_nextest_and_doctests": r.sfl[2] / (r.nextest + r.doctests),
                },
                "peak_rss_mib": {
                    "nextest": r.rss[0],
                    "edges": r.rss[1],
                    "lines": r.rss[2],
                    "default": r.rss[3],
                },
                "decode_us_per_test": r.decode_us,
            })
        })
        .collect();
    json!({ "runs": runs, "jobs": jobs, "crates": crates })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_and_the_json_agree() {
        let row = Row {
            name: "c 1".into(),
            why: "w",
            tests: 10,
            tests_with_doctests: 12,
            nextest: 2.0,
            doctests: 4.0,
            sfl: vec![2.5, 2.0, 3.0],
            rss: vec![Some(50.0), Some(100.0), None, Some(120.0)],
            decode_us: 40.0,
        };
        let md = render(std::slice::from_ref(&row), 3, 2);
        assert!(md.contains("| c 1 | w | 10 (+2) | 2.00 | 2.50 | 2.00 | 3.00 | 6.00 | 1.25× | 1.00× | 1.25× | 1.50× | 0.50× | 40 µs | 50 / 100 / – / 120 |"), "{md}");
        let j = to_json(&[row], 3, 2);
        assert_eq!(j["crates"][0]["ratios"]["edges_over_nextest"], 1.25);
        assert_eq!(j["crates"][0]["ratios"]["default_over_nextest_and_doctests"], 0.5);
        assert_eq!(j["crates"][0]["peak_rss_mib"]["lines"], serde_json::Value::Null);
    }

    #[test]
    fn generated_crates_hold_their_tests_and_are_rewritten_only_when_they_change() {
        let work = tempfile::tempdir().unwrap();
        let dir = trivial_crate(work.path()).unwrap();
        let lib = dir.join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).unwrap();
        assert!(
            text.starts_with("pub fn add(a: u64, b: u64) -> u64 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n"),
            "{text}"
        );
        assert_eq!(text.matches("#[test]").count(), TRIVIAL);
        assert!(
            text.contains("assert_eq!(super::add(2, 1), 3);") && text.ends_with("    }\n}\n"),
            "{text}"
        );
        let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        assert!(
            manifest.contains("name = \"trivial\"") && manifest.contains("[workspace]"),
            "{manifest}"
        );
        let written = std::fs::metadata(&lib).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        trivial_crate(work.path()).unwrap();
        assert_eq!(std::fs::metadata(&lib).unwrap().modified().unwrap(), written);
        let chatty = std::fs::read_to_string(chatty_crate(work.path()).unwrap().join("src/lib.rs")).unwrap();
        assert_eq!(chatty.matches("eprintln!").count(), CHATTY.0);
        assert!(chatty.contains(&format!("for k in 0..{}u64", CHATTY.1)), "{chatty}");
    }
}
