//! `cargo xtask bench corpus`: cargo sfl against `cargo test --no-fail-fast` on published crates
//! of many shapes. Per crate: every test's outcome under both (doctests included, names
//! mapped), the human report against the JSON report, both exit codes and wall times; then
//! one injected fault and its rank; then the run after an edit against a full run of the
//! same sources (second_run.rs). Written to bench-results/corpus.md and corpus.json.
//!
//! Every crate is a copy under target/bench/corpus/NAME-VERSION (its own workspace, its
//! lockfile generated once and kept); all of them build into target/bench/corpus/target so
//! dependencies shared between crates are built once.

mod common;
mod parse;
mod second_run;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use common::{Crate, backup, cargo, fault_candidates, krate, restore_sources, round, sfl_cmd, target_dir, with_line};
pub(crate) use common::{Ran, run_merged};
use parse::{Origin, Target};

const CORPUS: &[Crate] = &[
    krate(
        "sd",
        "1.0.0",
        &["binary-only with CLI tests (assert_cmd)", "insta snapshots", "proptest"],
        &[],
        "src/replacer/mod.rs",
    ),
    krate(
        "thiserror",
        "2.0.21",
        &[
            "build.rs",
            "proc-macro dependency",
            "#[ignore] (trybuild UI test, nightly only)",
        ],
        &[],
        "src/lib.rs",
    ),
    krate(
        "ctrlc",
        "3.5.2",
        &["harness = false targets", "no_run doctests"],
        &[],
        "src/platform/unix/mod.rs",
    ),
    krate(
        "url",
        "2.5.8",
        &["harness = false target (WPT)", "no_run doctests"],
        &[],
        "src/parser.rs",
    ),
    krate(
        "similar",
        "2.7.0",
        &["insta snapshots", "feature-gated tests (--all-features)"],
        &["--all-features"],
        "src/algorithms/myers.rs",
    ),
    krate(
        "rayon-core",
        "1.13.0",
        &["build.rs", "#[should_panic]", "#[ignore]", "compile_fail doctests"],
        &[],
        "src/registry.rs",
    ),
    krate(
        "bitflags",
        "2.13.2",
        &["many doctests", "examples"],
        &[],
        "src/traits.rs",
    ),
    krate(
        "anyhow",
        "1.0.104",
        &["build.rs", "#[ignore] (trybuild UI test, nightly only)"],
        &[],
        "src/ensure.rs",
    ),
    krate(
        "csv",
        "1.4.0",
        &["examples run by tests", "no_run doctests"],
        &[],
        "src/byte_record.rs",
    ),
    krate("semver", "1.0.28", &["integration tests only"], &[], "src/eval.rs"),
    krate("itoa", "1.0.18", &["tiny: two tests"], &[], "src/lib.rs"),
    krate("memchr", "2.8.3", &["quickcheck"], &[], "src/arch/all/memchr.rs"),
    krate(
        "byteorder",
        "1.5.0",
        &["quickcheck", "#[should_panic]"],
        &[],
        "src/lib.rs",
    ),
    krate(
        "pulldown-cmark",
        "0.13.6",
        &["over 1,000 tests", "build.rs", "binary and library"],
        &[],
        "src/scanners.rs",
    ),
    krate(
        "smallvec",
        "1.16.5",
        &["#[should_panic]", "compile_fail doctests"],
        &[],
        "src/lib.rs",
    ),
    krate("either", "1.19.0", &["#[should_panic]"], &[], "src/lib.rs"),
    krate(
        "ryu",
        "1.0.23",
        &["#[ignore] (exhaustive test behind a cfg)", "randomized tests (rand)"],
        &[],
        "src/pretty/mod.rs",
    ),
    krate(
        "unicode-width",
        "0.2.3",
        &["generated tables, no dev-dependencies"],
        &[],
        "src/lookup.rs",
    ),
    krate("heck", "0.5.0", &["unit tests per module only"], &[], "src/lib.rs"),
    krate(
        "indexmap",
        "2.14.2",
        &["quickcheck", "#[should_panic]"],
        &[],
        "src/inner.rs",
    ),
    krate(
        "static_assertions",
        "1.1.0",
        &["compile_fail doctests only"],
        &[],
        "src/const_assert.rs",
    ),
    Crate {
        name: "glob+strsim",
        version: "0.3.4+0.11.1",
        members: &[("glob", "0.3.4"), ("strsim", "0.11.1")],
        shapes: &["workspace of several members (glob 0.3.4 and strsim 0.11.1 assembled under target/bench)"],
        flags: &["--workspace"],
        fault_file: "strsim/src/lib.rs",
        target_link: false,
    },
    krate(
        "tokio-stream",
        "0.1.19",
        &[
            "dev-dependencies pull another version of itself (tokio-test depends on tokio-stream)",
            "#[tokio::test]",
            "feature-gated tests (--all-features)",
        ],
        &["--all-features"],
        "src/stream_map.rs",
    ),
    krate(
        "num_enum",
        "0.7.6",
        &["trybuild UI tests on stable", "derive from a proc-macro dependency"],
        &[],
        "src/lib.rs",
    ),
    krate(
        "parse_datetime",
        "0.17.0",
        &["rstest (parametrised test cases)"],
        &[],
        "src/items/date.rs",
    ),
    krate(
        "arrayvec",
        "0.7.8",
        &["no_std (cfg_attr(not(feature = \"std\"), no_std))"],
        &[],
        "src/arrayvec.rs",
    ),
    krate(
        "heapless",
        "0.9.4",
        &["no_std (cfg_attr(not(test), no_std))", "hundreds of unit tests"],
        &[],
        "src/vec/mod.rs",
    ),
    krate(
        "tinyvec",
        "1.13.3",
        &["required-features test targets (left out with default features)"],
        &[],
        "src/arrayvec.rs",
    ),
    krate(
        "env_logger",
        "0.11.12",
        &[
            "#[test] in an example (--all-targets)",
            "a test that fails on purpose (examples/in_tests.rs)",
        ],
        &["--all-targets"],
        "src/fmt/mod.rs",
    ),
    Crate {
        target_link: true,
        ..krate(
            "duct",
            "1.1.2",
            &["tests that spawn processes (helper binaries built by `cargo build` from a test)"],
            &[],
            "src/lib.rs",
        )
    },
    krate(
        "toml_edit",
        "0.19.15",
        &[
            "libtest-mimic 0.6 harnesses (compliance suites: 700 tests, `ok` coloured in a pipe, output uncaptured)",
            "snapbox harness",
        ],
        &[],
        "src/parser/key.rs",
    ),
    krate(
        "zerocopy-derive",
        "0.8.64",
        &[
            "proc-macro crate with unit tests (expansions compared through proc-macro2)",
            "integration tests that need an unpublished crate (--lib)",
        ],
        &["--lib"],
        "src/repr.rs",
    ),
    krate(
        "walkdir",
        "2.5.0",
        &["tests that share a temporary directory between processes (named by a per-process counter)"],
        &[],
        "src/dent.rs",
    ),
    krate(
        "once_cell",
        "1.21.4",
        &["a test that kills the child it spawned just before it returns (left a zombie where PID 1 reaps late)"],
        &[],
        "src/imp_std.rs",
    ),
    krate(
        "tempfile",
        "3.23.0",
        &[
            "tests that create, persist and delete files and override the temporary directory once per process (a OnceLock)",
            "no_run doctests on generic impls",
        ],
        &[],
        "src/lib.rs",
    ),
    krate(
        "typenum",
        "1.20.1",
        &[
            "one doc block on a pub use of several items (doctests named with one file and line)",
            "a generated integration test of 1,743 tests",
        ],
        &[],
        "src/lib.rs",
    ),
    krate(
        "hexyl",
        "0.16.0",
        &[
            "binary and library, CLI tests spawning the binary (assert_cmd)",
            "unit tests in the binary",
        ],
        &[],
        "src/lib.rs",
    ),
];

/// The differences between the two tools that DESIGN.md and the user guide document: listed, not
/// mismatches.
const HARNESS_FALSE: &str =
    "a `harness = false` target that does not list its tests is one test, `main`, under cargo sfl";

const CRASH_ENDS_BINARY: &str = "a test that crashes its process ends the rest of its executable's tests under cargo test; \
                                 cargo sfl runs every test in a process of its own";

const COMPILE_ONLY: &str = "a `no_run` or `compile_fail` doctest that passes its compile check runs no code: not a test \
                            under cargo sfl (docs/guide/doctests.md)";

/// Alternated rounds of `cargo test` and `cargo sfl --rerun` per crate; the medians' ratio is
/// reported.
const TIMING_ROUNDS: usize = 3;

/// Mutations tried in turn per crate until one makes a test fail.
const FAULT_CANDIDATES: usize = 6;

pub fn run(only: &[String], output_dir: &Path) -> Result<()> {
    let root = crate::root();
    let sfl = crate::build_sfl()?;
    let work = root.join("target/bench/corpus");
    std::fs::create_dir_all(&work)?;
    let mut rows = Vec::new();
    // The corpus's order, or the order of `--crate`.
    let chosen: Vec<&Crate> = if only.is_empty() {
        CORPUS.iter().collect()
    } else {
        only.iter()
            .filter_map(|o| CORPUS.iter().find(|c| c.name == o))
            .collect()
    };
    // With `--crate`, the other crates keep the rows of the last run (in corpus order).
    if !only.is_empty() {
        rows = saved_rows(output_dir);
    }
    for c in chosen {
        eprintln!("== {} {}", c.name, c.version);
        let row = match run_crate(c, &sfl, &work) {
            Ok(row) => row,
            Err(e) => json!({
                "name": c.name, "version": c.version, "shapes": c.shapes,
                "error": format!("{e:#}"), "mismatches": [], "report_consistent": null,
            }),
        };
        eprintln!("{}", summary_line(&row));
        match rows.iter().position(|r| r["name"] == c.name) {
            Some(i) => rows[i] = row,
            None => rows.push(row),
        }
        rows.sort_by_key(|r| CORPUS.iter().position(|c| r["name"] == c.name).unwrap_or(usize::MAX));
        // Written after every crate, so an interrupted run keeps what it found.
        write_results(&rows, output_dir, false)?;
    }
    write_results(&rows, output_dir, true)
}

/// Lays out the crate (or the workspace of its members) under `work`: its manifest path.
fn lay_out(c: &Crate, work: &Path) -> Result<PathBuf> {
    let dir = if c.members.is_empty() {
        crate::fetch_crate(c.name, c.version, work)?
    } else {
        let dir = work.join(c.name.replace('+', "-"));
        if !dir.join("Cargo.toml").exists() {
            let mut members = Vec::new();
            for (name, version) in c.members {
                let src = crate::fetch_crate(name, version, &work.join("members"))?;
                crate::copy_tree(&src, &dir.join(name))?;
                // A member must not be a workspace root of its own.
                let manifest = dir.join(name).join("Cargo.toml");
                let text = std::fs::read_to_string(&manifest)?;
                std::fs::write(&manifest, text.replace("\n[workspace]\n", "\n"))?;
                members.push(format!("{name:?}"));
            }
            std::fs::write(
                dir.join("Cargo.toml"),
                format!("[workspace]\nresolver = \"2\"\nmembers = [{}]\n", members.join(", ")),
            )?;
        }
        dir
    };
    if !dir.join("Cargo.lock").exists() {
        crate::run(cargo(&dir).arg("generate-lockfile"))?;
    }
    if c.target_link && !dir.join("target").exists() {
        std::fs::create_dir_all(target_dir())?;
        std::os::unix::fs::symlink(target_dir(), dir.join("target"))?;
    }
    Ok(dir.join("Cargo.toml"))
}

/// Removes cargo sfl's kept doctest builds: cargo test compiles the doctests every time. The
/// corpus shares one target directory outside every crate, where cargo sfl keeps each
/// workspace's builds in a directory of its own under `sfl/` (and older builds in `sfl/` itself).
fn forget_doctests() {
    let sfl = target_dir().join("sfl");
    let workspaces = std::fs::read_dir(&sfl)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path());
    for dir in std::iter::once(sfl.clone()).chain(workspaces) {
        let _ = std::fs::remove_dir_all(dir.join("doctests"));
    }
}

/// (package, kind, target name) of every `harness = false` target: the kind too, for a target of
/// another kind may have the same name (parse_datetime's bench is named as its library).
type CustomHarness = BTreeSet<(String, String, String)>;

/// The workspace members' targets (`cargo metadata`, no dependencies) and the custom harnesses.
fn targets(dir: &Path) -> Result<(Vec<Target>, CustomHarness)> {
    let out = cargo(dir)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()?;
    if !out.status.success() {
        bail!("cargo metadata failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let meta: Value = serde_json::from_slice(&out.stdout)?;
    let mut targets = Vec::new();
    let mut custom = CustomHarness::new();
    for p in meta["packages"].as_array().context("metadata packages")? {
        let package = p["name"].as_str().unwrap_or_default().to_string();
        for t in p["targets"].as_array().into_iter().flatten() {
            targets.push(Target {
                package: package.clone(),
                kind: t["kind"][0].as_str().unwrap_or_default().to_string(),
                name: t["name"].as_str().unwrap_or_default().to_string(),
                src_path: t["src_path"].as_str().unwrap_or_default().to_string(),
            });
        }
        let manifest: toml::Table =
            std::fs::read_to_string(p["manifest_path"].as_str().unwrap_or_default())?.parse()?;
        for kind in ["test", "bin", "example", "bench"] {
            for t in manifest.get(kind).and_then(|v| v.as_array()).into_iter().flatten() {
                if t.get("harness").and_then(toml::Value::as_bool) == Some(false)
                    && let Some(name) = t.get("name").and_then(toml::Value::as_str)
                {
                    custom.insert((package.clone(), kind.to_string(), name.to_string()));
                }
            }
        }
    }
    Ok((targets, custom))
}

/// What `cargo test` ran: outcome per (binary id, test name), and the executables a crash ended
/// early; the documented differences. `listed`: the custom harnesses cargo sfl ran test by test,
/// whose tests are read from their own `test NAME ... RESULT` lines.
fn cargo_outcomes(
    output: &str,
    targets: &[Target],
    (custom, listed): (&CustomHarness, &BTreeSet<String>),
    differences: &mut Vec<Value>,
    mismatches: &mut Vec<Value>,
) -> (BTreeMap<(String, String), &'static str>, BTreeSet<String>) {
    let mut outcomes = BTreeMap::new();
    let mut crashed = BTreeSet::new();
    for section in parse::cargo_test_sections(output) {
        let Some((id, target)) = parse::binary_id(&section.origin, targets) else {
            mismatches.push(json!({"section": format!("{:?}", section.origin), "reason": "no target of the workspace matches this cargo test section"}));
            continue;
        };
        if section.crashed {
            crashed.insert(id.clone());
        }
        let is_custom = matches!(section.origin, Origin::Binary { .. })
            && custom.contains(&(target.package.clone(), target.kind.clone(), target.name.clone()));
        if is_custom && listed.contains(&id) {
            for (name, outcome) in section.tests.into_iter().chain(section.loose) {
                outcomes.insert((id.clone(), name), outcome);
            }
            continue;
        }
        if is_custom {
            let outcome = if section.failed { "failed" } else { "passed" };
            differences.push(json!({
                "binary": id, "difference": HARNESS_FALSE,
                "cargo_test_lines": section.tests.len(), "outcome": outcome,
            }));
            outcomes.insert((id, "main".to_string()), outcome);
            continue;
        }
        for (name, outcome) in section.tests {
            if outcome == "passed" && section.compile_only.contains(&name) {
                differences.push(json!({"binary": id, "test": name, "difference": COMPILE_ONLY}));
                continue;
            }
            outcomes.insert((id.clone(), name), outcome);
        }
    }
    (outcomes, crashed)
}

fn sfl_outcomes(report: &Value) -> BTreeMap<(String, String), String> {
    report["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            (
                (
                    t["binary"].as_str().unwrap_or_default().to_string(),
                    t["name"].as_str().unwrap_or_default().to_string(),
                ),
                t["outcome"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

/// Every per-test difference between the two runs. Documented, not returned: a test of an
/// executable that a crash ended early under cargo test (`crashed`), which cargo test never
/// reported (`harness = false` is handled when cargo test's outcomes are read).
fn compare(
    cargo: &BTreeMap<(String, String), &'static str>,
    sfl: &BTreeMap<(String, String), String>,
    crashed: &BTreeSet<String>,
    differences: &mut Vec<Value>,
) -> Vec<Value> {
    let keys: BTreeSet<&(String, String)> = cargo.keys().chain(sfl.keys()).collect();
    let mut out = Vec::new();
    for key in keys {
        let (binary, test) = key;
        match (cargo.get(key), sfl.get(key)) {
            (Some(a), Some(b)) if a == b => {}
            (Some(a), Some(b)) => out.push(json!({"binary": binary, "test": test, "cargo_test": a, "cargo_sfl": b, "reason": "different outcomes"})),
            (Some(a), None) => out.push(json!({"binary": binary, "test": test, "cargo_test": a, "reason": "run by cargo test, not by cargo sfl"})),
            (None, Some(b)) if crashed.contains(binary) => {
                differences.push(json!({"binary": binary, "test": test, "cargo_sfl": b, "difference": CRASH_ENDS_BINARY}));
            }
            (None, Some(b)) => out.push(json!({"binary": binary, "test": test, "cargo_sfl": b, "reason": "run by cargo sfl, not by cargo test"})),
            (None, None) => {}
        }
    }
    out
}

/// The human report's entries against the JSON report's first entries, per measure:
/// `Ok(false)` with the differences when they disagree, `Ok(true)` when they agree, `None` when
/// there is no ranking to compare.
fn report_agrees(human: &str, report: &Value, problems: &mut Vec<String>) -> Option<bool> {
    let shown = match cargo_sfl::report::shown_entries(human) {
        Ok(shown) if !shown.is_empty() => shown,
        Ok(_) => return None,
        Err(e) => {
            problems.push(e.to_string());
            return Some(false);
        }
    };
    let mut ok = true;
    for (measure, mut entries) in shown {
        let Some(ranking) = report["rankings"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["measure"] == measure.as_str()))
        else {
            problems.push(format!("{measure}: no JSON ranking"));
            ok = false;
            continue;
        };
        let mut want = cargo_sfl::report::shown_in_json(ranking);
        want.truncate(entries.len());
        // Functions first, the human report is in the JSON's order; lines, grouped by file.
        if ranking["functions"].is_null() {
            entries.sort();
            want.sort();
        }
        if entries != want {
            problems.push(format!(
                "{measure}: the human report shows {entries:?}, the JSON leads with {want:?}"
            ));
            ok = false;
        }
    }
    Some(ok)
}

/// Runs cargo sfl with a JSON report and saved spectra, then the human report of those spectra.
struct SflOutcome {
    code: Option<i32>,
    secs: f64,
    report: Value,
    human: String,
    output: String,
    spectra: PathBuf,
}

fn run_sfl(sfl: &Path, c: &Crate, manifest: &Path, tag: &str) -> Result<SflOutcome> {
    let dir = manifest.parent().unwrap();
    let out_dir = target_dir().join("corpus-reports");
    std::fs::create_dir_all(&out_dir)?;
    let json_path = out_dir.join(format!("{}-{tag}.json", c.name));
    let spectra = out_dir.join(format!("{}-{tag}.spectra.json", c.name));
    let _ = std::fs::remove_file(&json_path);
    let ran = run_merged(
        &mut sfl_rerun(sfl, c, manifest, (&json_path, &spectra)),
        Duration::from_secs(1800),
    )?;
    let report: Value = std::fs::read(&json_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    let human = if spectra.exists() {
        let out = sfl_cmd(sfl, dir)
            .args(["report", "--color", "never", "--spectra"])
            .arg(&spectra)
            .arg("--manifest-path")
            .arg(manifest)
            .output()?;
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::new()
    };
    Ok(SflOutcome {
        code: ran.code,
        secs: ran.secs,
        report,
        human,
        output: ran.output,
        spectra,
    })
}

/// `cargo sfl --rerun` as the corpus runs it: the JSON report and the spectra into `to`.
fn sfl_rerun(sfl: &Path, c: &Crate, manifest: &Path, to: (&Path, &Path)) -> Command {
    let mut cmd = sfl_cmd(sfl, manifest.parent().unwrap());
    cmd.args(["--format", "json", "--rerun", "--test-timeout", "120", "-o"])
        .arg(to.0)
        .arg("--save-spectra")
        .arg(to.1)
        .arg("--manifest-path")
        .arg(manifest)
        .args(c.flags);
    cmd
}

/// `cargo test --no-fail-fast` as the corpus runs it.
fn cargo_test_cmd(c: &Crate, manifest: &Path) -> Command {
    let mut cmd = cargo(manifest.parent().unwrap());
    cmd.args(["test", "--no-fail-fast", "--manifest-path"])
        .arg(manifest)
        .args(c.flags);
    cmd
}

fn cargo_test(c: &Crate, manifest: &Path, limit: Duration) -> Result<Ran> {
    run_merged(&mut cargo_test_cmd(c, manifest), limit)
}

/// The wall times of `first` (the compared runs: cargo test's, cargo sfl's) and
/// [`TIMING_ROUNDS`] - 1 more rounds of the same commands, alternated, under GNU time for the
/// peak memory of each command's largest process: the medians, and every round with the peaks.
fn time_rounds(c: &Crate, sfl: &Path, manifest: &Path, first: (f64, f64)) -> Result<(f64, f64, Value)> {
    let (mut cargo_walls, mut sfl_walls) = (vec![first.0], vec![first.1]);
    let (mut cargo_rss, mut sfl_rss) = (None::<f64>, None::<f64>);
    let out_dir = target_dir().join("corpus-reports");
    let to = (
        out_dir.join(format!("{}-timing.json", c.name)),
        out_dir.join(format!("{}-timing.spectra.json", c.name)),
    );
    for round in 1..TIMING_ROUNDS {
        eprintln!("   timing round {}/{TIMING_ROUNDS}", round + 1);
        let (secs, rss) = timed_rss(&mut cargo_test_cmd(c, manifest))?;
        cargo_walls.push(secs);
        cargo_rss = rss.into_iter().chain(cargo_rss).reduce(f64::max);
        // As before the compared run: cargo test compiles the doctests every time.
        forget_doctests();
        let (secs, rss) = timed_rss(&mut sfl_rerun(sfl, c, manifest, (&to.0, &to.1)))?;
        sfl_walls.push(secs);
        sfl_rss = rss.into_iter().chain(sfl_rss).reduce(f64::max);
    }
    let walls = json!({"cargo_test": cargo_walls.iter().map(|&s| round(s)).collect::<Vec<_>>(),
                       "cargo_sfl": sfl_walls.iter().map(|&s| round(s)).collect::<Vec<_>>(),
                       "peak_rss_mib": {"cargo_test": cargo_rss.map(round), "cargo_sfl": sfl_rss.map(round)}});
    let median = crate::collect_bench::median;
    Ok((median(&mut cargo_walls), median(&mut sfl_walls), walls))
}

fn run_crate(c: &Crate, sfl: &Path, work: &Path) -> Result<Value> {
    let manifest = lay_out(c, work)?;
    let dir = manifest.parent().unwrap().to_path_buf();
    restore_sources(&dir, c)?;
    let (targets, custom) = targets(&dir)?;
    // Warm builds: the plain one for cargo test, the instrumented one for cargo sfl (a name
    // filter no test has; the run then finds no test to run).
    let mut warm = cargo(&dir);
    warm.args(["test", "--no-run", "--manifest-path"])
        .arg(&manifest)
        .args(c.flags);
    crate::run(&mut warm)?;
    let _ = run_merged(
        sfl_cmd(sfl, &dir)
            .args(["xtask-corpus-warm-up-no-such-test", "--no-doctests", "--manifest-path"])
            .arg(&manifest)
            .args(c.flags),
        Duration::from_secs(3600),
    )?;

    eprintln!("   cargo test");
    let plain = cargo_test(c, &manifest, Duration::from_secs(1800))?;
    std::fs::write(
        target_dir().join(format!("corpus-reports-{}-cargo-test.log", c.name)),
        &plain.output,
    )?;
    eprintln!("   cargo sfl");
    // cargo test compiles the doctests every time; cargo sfl keeps them while their sources
    // are unchanged, and whether a kept build matches would depend on what ran before.
    forget_doctests();
    let run = run_sfl(sfl, c, &manifest, "pristine")?;
    std::fs::write(
        target_dir().join(format!("corpus-reports-{}-sfl.log", c.name)),
        &run.output,
    )?;
    if run.report.is_null() {
        bail!(
            "cargo sfl wrote no JSON report (exit {:?}):\n{}",
            run.code,
            tail(&run.output)
        );
    }

    let (wall_cargo, wall_sfl, walls) = time_rounds(c, sfl, &manifest, (plain.secs, run.secs))?;

    let mut differences = Vec::new();
    let mut mismatches = Vec::new();
    let sfl_tests = sfl_outcomes(&run.report);
    // Custom harnesses that cargo sfl ran test by test (they answered `--list`).
    let listed: BTreeSet<String> = sfl_tests
        .keys()
        .filter(|(_, test)| test != "main")
        .map(|(binary, _)| binary.clone())
        .collect();
    let (cargo_tests, crashed) = cargo_outcomes(
        &plain.output,
        &targets,
        (&custom, &listed),
        &mut differences,
        &mut mismatches,
    );
    mismatches.extend(compare(&cargo_tests, &sfl_tests, &crashed, &mut differences));
    let mut problems = Vec::new();
    let pristine_consistent = report_agrees(&run.human, &run.report, &mut problems);
    // cargo test fails exactly when cargo sfl finds failing tests (0) rather than none (3).
    let exit_consistent = matches!((plain.code, run.code), (Some(0), Some(3)) | (Some(101), Some(0)));

    eprintln!("   fault");
    let fault = inject_fault(c, sfl, &manifest, &mut problems);
    let fault_consistent = fault
        .as_ref()
        .ok()
        .and_then(|f| f.get("report_consistent").and_then(Value::as_bool));
    // The run after an edit, against a full run of the same sources (second_run.rs).
    let fault_row = match fault {
        Ok(f) => f,
        Err(e) => json!({"error": format!("{e:#}")}),
    };
    let second = second_run::check(c, sfl, &manifest, &run.spectra, &fault_row)
        .unwrap_or_else(|e| json!({"error": format!("{e:#}")}));
    let report_consistent = match (pristine_consistent, fault_consistent) {
        (None, None) => Value::Null,
        (a, b) => json!(a.unwrap_or(true) && b.unwrap_or(true)),
    };
    Ok(json!({
        "name": c.name,
        "version": c.version,
        "shapes": c.shapes,
        "flags": c.flags,
        "tests_cargo": cargo_tests.len(),
        "tests_sfl": sfl_tests.len(),
        "failed_cargo": cargo_tests.values().filter(|o| **o == "failed").count(),
        "failed_sfl": sfl_tests.values().filter(|o| *o != "passed" && *o != "ignored").count(),
        "mismatches": mismatches,
        "documented_differences": differences,
        "report_consistent": report_consistent,
        "report_problems": problems,
        "exit_code": {"cargo_test": plain.code, "cargo_sfl": run.code},
        "exit_consistent": exit_consistent,
        "wall_cargo_s": round(wall_cargo),
        "wall_sfl_s": round(wall_sfl),
        "wall_rounds_s": walls,
        "fault": fault_row,
        "second_run": second,
    }))
}

/// `cmd`'s wall time, and its largest process's peak memory in MiB ([`crate::peak_rss`]).
fn timed_rss(cmd: &mut Command) -> Result<(f64, Option<f64>)> {
    let start = Instant::now();
    let rss = crate::peak_rss(cmd)?;
    Ok((start.elapsed().as_secs_f64(), rss))
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Tries the file's mutations in order under `cargo test` until one makes a test fail, runs
/// cargo sfl on that mutant and reads the mutated line's rank; restores the file.
fn inject_fault(c: &Crate, sfl: &Path, manifest: &Path, problems: &mut Vec<String>) -> Result<Value> {
    let dir = manifest.parent().unwrap();
    let path = dir.join(c.fault_file);
    let pristine = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let saved = backup(c, c.fault_file);
    std::fs::create_dir_all(saved.parent().unwrap())?;
    std::fs::copy(&path, &saved)?;
    let result = (|| -> Result<Value> {
        let mut tried = Vec::new();
        for (line, mutated) in fault_candidates(&pristine).into_iter().take(FAULT_CANDIDATES) {
            std::fs::write(&path, with_line(&pristine, line, &mutated))?;
            let ran = cargo_test(c, manifest, Duration::from_secs(120))?;
            let failing = parse::cargo_test_sections(&ran.output)
                .iter()
                .any(|s| s.failed || s.tests.iter().any(|t| t.1 == "failed"));
            let built = !ran.output.contains("error: could not compile");
            tried.push(json!({"line": line, "built": built, "fails_a_test": failing && built, "timed_out": ran.code.is_none()}));
            if !(failing && built) || ran.code.is_none() {
                continue;
            }
            eprintln!("   fault at {}:{line}: {}", c.fault_file, mutated.trim());
            let run = run_sfl(sfl, c, manifest, "fault")?;
            let consistent = report_agrees(&run.human, &run.report, problems);
            let rank = fault_rank(&run.report, c.fault_file, line as u64);
            return Ok(json!({
                "file": c.fault_file,
                "line": line,
                "mutation": mutated.trim(),
                "rank": rank,
                "top1": rank.is_some_and(|r| r <= 1.0),
                "top5": rank.is_some_and(|r| r <= 5.0),
                "top10": rank.is_some_and(|r| r <= 10.0),
                "exit_code": run.code,
                "wall_sfl_s": round(run.secs),
                "report_consistent": consistent,
                "tried": tried,
            }));
        }
        Ok(
            json!({"file": c.fault_file, "line": null, "rank": null, "error": "no candidate mutation made a test fail", "tried": tried}),
        )
    })();
    std::fs::write(&path, &pristine)?;
    let _ = std::fs::remove_file(&saved);
    result
}

/// The rank of the entry holding `file:line` in the default measure's ranking.
fn fault_rank(report: &Value, file: &str, line: u64) -> Option<f64> {
    let ranking = report["rankings"]
        .as_array()?
        .iter()
        .find(|r| r["measure"] == cargo_sfl::measures::DEFAULT)?;
    let at = |u: &Value| u["file"] == file && u["line"].as_u64() == Some(line);
    ranking["units"]
        .as_array()?
        .iter()
        .find(|u| at(u) || u["members"].as_array().is_some_and(|m| m.iter().any(at)))
        .and_then(|u| u["rank"].as_f64())
}

fn summary_line(row: &Value) -> String {
    if let Some(e) = row["error"].as_str() {
        return format!("   {}: error: {e}", row["name"].as_str().unwrap_or_default());
    }
    format!(
        "   tests {} / {}, {} mismatches, report consistent {}, exits {}/{}, wall {}s / {}s, fault rank {}; {}",
        row["tests_cargo"],
        row["tests_sfl"],
        row["mismatches"].as_array().map_or(0, Vec::len),
        row["report_consistent"],
        row["exit_code"]["cargo_test"],
        row["exit_code"]["cargo_sfl"],
        row["wall_cargo_s"],
        row["wall_sfl_s"],
        row["fault"]["rank"],
        second_run_cell(&row["second_run"]),
    )
}

/// The tests the full runs after a crate's edits ran, summed over the edits.
fn second_run_total(s: &Value) -> u64 {
    s["per_edit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["total"].as_u64())
        .sum()
}

/// A crate's second-run check in the table: `edits, run of total, differences, varying, wall`.
fn second_run_table_cell(s: &Value) -> String {
    if let Some(e) = s["error"].as_str() {
        return format!("error: {}", e.lines().next().unwrap_or_default().replace('|', "\\|"));
    }
    if s.is_null() {
        return "not checked".into();
    }
    let total = second_run_total(s);
    let differences = s["differences"].as_u64().unwrap_or(0);
    let fresh = match s["fresh_differences"].as_array().map(Vec::len) {
        None => "not compared".to_string(),
        Some(0) => "0".to_string(),
        Some(n) => format!("**{n}**"),
    };
    format!(
        "{}, {} of {}, {}, {}, {:.1} / {:.1}, {fresh}",
        s["edits"],
        s["selected"],
        total,
        if differences > 0 {
            format!("**{differences}**")
        } else {
            "0".into()
        },
        s["varying_tests"],
        s["wall_selected_s"].as_f64().unwrap_or(0.0),
        s["wall_rerun_s"].as_f64().unwrap_or(0.0),
    )
}

/// A crate's second-run check in a few words, for the summary line.
fn second_run_cell(s: &Value) -> String {
    if let Some(e) = s["error"].as_str() {
        return format!("second run: error: {}", e.lines().next().unwrap_or_default());
    }
    if s.is_null() {
        return "second run: not checked".into();
    }
    let total = second_run_total(s);
    format!(
        "second run: {} edits ran {} of {} tests, {} differences, {} varying tests, {}s selected / {}s --rerun",
        s["edits"], s["selected"], total, s["differences"], s["varying_tests"], s["wall_selected_s"], s["wall_rerun_s"],
    )
}

/// The rows of the last run's corpus.json (none when there is none).
fn saved_rows(output_dir: &Path) -> Vec<Value> {
    std::fs::read(output_dir.join("corpus.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["crates"].as_array().cloned())
        .unwrap_or_default()
}

fn write_results(rows: &[Value], output_dir: &Path, print: bool) -> Result<()> {
    let mut md = String::from(
        "# Corpus: cargo sfl against `cargo test --no-fail-fast` on published crates\n\n\
         Produced by `cargo xtask bench corpus`. Each crate is a copy under target/bench/corpus \
         with its lockfile kept; both tools build into target/bench/corpus/target. Wall times are \
         medians of three rounds, `cargo test` and `cargo sfl --rerun` alternated within each \
         (the first round's runs are the ones whose outcomes are compared), of the whole commands \
         after a warm-up build of each (`cargo test --no-run`; `cargo sfl` with a \
         name filter no test has), so they include running the tests and compiling doctests (the \
         doctests cargo sfl kept from an earlier run are removed first: cargo test compiles them \
         every time), not building dependencies. Tests are counted per tool, doctests included; a `harness = false` \
         target that does not list its tests is one test under cargo sfl, and the tests a crash kept \
         cargo test from running are run by cargo sfl (both documented, not mismatches). The fault is the first \
         mutation of the named file (a negated comparison, `&&`/`||`, `true`/`false`, \
         `is_some`/`is_none`) that makes a test fail under cargo test; its rank is under \
         the default ranking.\n\n\
         The second run: one more full run of the unedited crate (tests whose rows differ from the \
         first run's vary between runs of unchanged code: listed, not counted), then up to three \
         edits, each undone after its runs: `let _ = 0;` before the first statement a test ran, \
         the fault's mutation, and `#[allow(dead_code)] const _SFL_BENCH: u8 = 0;` at the end \
         of the fault file (outside every function). After each edit the default `cargo sfl` \
         (which runs only the tests the edit can affect and reuses the other rows) and `cargo sfl \
         --rerun` right after it; their spectra (`cargo_sfl::select::differences`: outcomes and \
         rows), their JSON reports' summary counts (but `reused`) and default rankings (every \
         entry), and their exit codes must agree. Tests run counts the selected runs' tests \
         against the full runs'; wall times are summed over the edits (the selected run builds the \
         edit, the `--rerun` after it has nothing left to build). Kept against fresh: one more \
         full run with `--fresh-processes` (no test runs in a process an earlier test left), \
         compared with the unedited crate's full run in kept processes (the default); differences \
         on tests that vary are not counted (\"not compared\": a row from before the check).\n\n\
         | crate | version | shapes | tests (cargo test / cargo sfl) | mismatches | documented differences | report consistent | exit codes (test / sfl) | wall s (test / sfl, ratio) | fault | rank | second run: edits, tests run, differences, varying tests, wall s (selected / --rerun), kept against fresh differences |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut ratios = Vec::new();
    let (mut top1, mut top5, mut top10, mut faults) = (0, 0, 0, 0);
    for r in rows {
        if let Some(e) = r["error"].as_str() {
            md.push_str(&format!(
                "| {} | {} | {} | error: {} | | | | | | | | |\n",
                r["name"].as_str().unwrap_or_default(),
                r["version"].as_str().unwrap_or_default(),
                shapes(r),
                e.lines().next().unwrap_or_default().replace('|', "\\|"),
            ));
            continue;
        }
        let (wc, ws) = (
            r["wall_cargo_s"].as_f64().unwrap_or(0.0),
            r["wall_sfl_s"].as_f64().unwrap_or(0.0),
        );
        if wc > 0.0 {
            ratios.push(ws / wc);
        }
        let f = &r["fault"];
        let rank = f["rank"].as_f64();
        if f["line"].is_u64() {
            faults += 1;
            top1 += usize::from(rank.is_some_and(|r| r <= 1.0));
            top5 += usize::from(rank.is_some_and(|r| r <= 5.0));
            top10 += usize::from(rank.is_some_and(|r| r <= 10.0));
        }
        md.push_str(&format!(
            "| {} | {} | {} | {} / {} | {} | {} | {} | {} / {} | {:.1} / {:.1} ({:.1}×) | {} | {} | {} |\n",
            r["name"].as_str().unwrap_or_default(),
            r["version"].as_str().unwrap_or_default(),
            shapes(r),
            r["tests_cargo"],
            r["tests_sfl"],
            r["mismatches"].as_array().map_or(0, Vec::len),
            r["documented_differences"].as_array().map_or(0, Vec::len),
            match r["report_consistent"].as_bool() {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "no ranking",
            },
            r["exit_code"]["cargo_test"],
            r["exit_code"]["cargo_sfl"],
            wc,
            ws,
            if wc > 0.0 { ws / wc } else { 0.0 },
            match f["line"].as_u64() {
                Some(l) => format!(
                    "{}:{l} `{}`",
                    f["file"].as_str().unwrap_or_default(),
                    f["mutation"].as_str().unwrap_or_default().replace('|', "\\|")
                ),
                None => f["error"].as_str().unwrap_or("none").to_string(),
            },
            rank.map_or("not ranked".to_string(), |r| format!("{r}")),
            second_run_table_cell(&r["second_run"]),
        ));
    }
    ratios.sort_by(f64::total_cmp);
    let median = ratios.get(ratios.len() / 2).copied().unwrap_or(0.0);
    let mismatches: usize = rows
        .iter()
        .map(|r| r["mismatches"].as_array().map_or(0, Vec::len))
        .sum();
    let consistent = rows.iter().filter(|r| r["report_consistent"] == true).count();
    let inconsistent = rows.iter().filter(|r| r["report_consistent"] == false).count();
    let shapes_covered: BTreeSet<&str> = rows
        .iter()
        .flat_map(|r| r["shapes"].as_array().into_iter().flatten().filter_map(Value::as_str))
        .collect();
    let second: Vec<&Value> = rows
        .iter()
        .map(|r| &r["second_run"])
        .filter(|s| s["edits"].is_u64())
        .collect();
    let sum = |key: &str| second.iter().filter_map(|s| s[key].as_u64()).sum::<u64>();
    let second_errors = rows
        .iter()
        .filter(|r| r["error"].is_null() && !r["second_run"]["edits"].is_u64())
        .count();
    let summary = format!(
        "{} crates, {} shapes; {mismatches} undocumented mismatches; reports consistent in {consistent}, \
         inconsistent in {inconsistent}; median wall-time ratio (cargo sfl / cargo test) {median:.2}×; \
         injected faults {faults}: top-1 {top1}, top-5 {top5}, top-10 {top10}; second run on {} crates \
         ({second_errors} more not checked): {} edits, {} differences (in {} crates), {} varying tests, \
         selected runs ran {} tests",
        rows.len(),
        shapes_covered.len(),
        second.len(),
        sum("edits"),
        sum("differences"),
        second.iter().filter(|s| s["differences"].as_u64() > Some(0)).count(),
        sum("varying_tests"),
        sum("selected"),
    );
    md.push_str(&format!("\n{summary}.\n"));
    // Peak memory, from the rows timed under GNU time.
    let peak = |tool: &str| {
        rows.iter()
            .filter_map(|r| Some((r["wall_rounds_s"]["peak_rss_mib"][tool].as_f64()?, r["name"].as_str()?)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let measured = rows
        .iter()
        .filter(|r| r["wall_rounds_s"]["peak_rss_mib"]["cargo_sfl"].is_f64())
        .count();
    if let (Some((sfl_mib, sfl_crate)), Some((test_mib, test_crate))) = (peak("cargo_sfl"), peak("cargo_test")) {
        md.push_str(&format!(
            "\nPeak memory of the largest process (GNU time's maximum resident set over the command and \
             the processes it waited for: tests and compilers included), on the {measured} crates timed \
             under it: cargo sfl at most {sfl_mib:.0} MiB ({sfl_crate}), cargo test at most \
             {test_mib:.0} MiB ({test_crate}).\n"
        ));
    }
    for r in rows {
        let list = |key: &str| r[key].as_array().cloned().unwrap_or_default();
        let (m, p) = (list("mismatches"), list("report_problems"));
        let second = &r["second_run"];
        let texts: Vec<String> = second["difference_texts"]
            .as_array()
            .into_iter()
            .flatten()
            .chain(second["unedited_differences"].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .map(|t| format!("second run: {}", t.replace('\n', " / ")))
            .chain(
                second["fresh_differences"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(|t| format!("kept against fresh processes: {}", t.replace('\n', " / "))),
            )
            .chain(
                second["error"]
                    .as_str()
                    .map(|e| format!("second run: error: {}", e.replace('\n', " / "))),
            )
            .collect();
        if m.is_empty() && p.is_empty() && texts.is_empty() {
            continue;
        }
        md.push_str(&format!(
            "\n## {} {}\n\n",
            r["name"].as_str().unwrap_or_default(),
            r["version"].as_str().unwrap_or_default()
        ));
        for x in m.iter().chain(&p) {
            md.push_str(&format!("- {x}\n"));
        }
        for t in texts {
            md.push_str(&format!("- {t}\n"));
        }
    }
    std::fs::create_dir_all(output_dir)?;
    std::fs::write(output_dir.join("corpus.md"), &md)?;
    std::fs::write(
        output_dir.join("corpus.json"),
        serde_json::to_string_pretty(&json!({"crates": rows, "summary": summary}))?,
    )?;
    if print {
        println!("{md}");
    }
    Ok(())
}

fn shapes(r: &Value) -> String {
    r["shapes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("; ")
}
