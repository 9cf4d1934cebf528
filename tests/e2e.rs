//! End-to-end tests: the real `cargo-sfl` binary on the faulty fixtures, one trial per
//! fixture (libtest-mimic), each in its own copy of the fixture.
//!
//! Every fixture trial also runs the decoder oracle: for every test and every profile, our
//! in-process line counts must equal `llvm-cov export -format=lcov` on the same profile, and
//! the saved matrix must hold exactly the lines llvm-cov says ran.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use cargo_sfl::coverage::BinaryCoverage;
use cargo_sfl::pipeline::KeptProfile;
use cargo_sfl::spectra::Spectra;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

#[path = "e2e/edges.rs"]
mod edges;

type Result<T = ()> = std::result::Result<T, Failed>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies a fixture (without its target dir) into a fresh temp dir.
fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix(&format!("sfl-{name}-"))
        .tempdir()
        .unwrap();
    copy_tree(&root().join("fixtures").join(name), dir.path());
    dir
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let name = e.file_name();
        if name == "target" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

fn sfl(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-sfl"))
        .arg("sfl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result {
    if cond { Ok(()) } else { Err(msg().into()) }
}

fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// What each fixture must produce: the failing tests (binary, name, outcome) and the best
/// Ochiai rank its fault must reach. Every other test must pass.
struct Expect {
    fixture: &'static str,
    failing: &'static [(&'static str, &'static str, &'static str)],
    ochiai_fault_rank: f64,
}

const FIXTURES: &[Expect] = &[
    Expect {
        fixture: "minmax",
        failing: &[
            ("fixture-minmax", "tests::t1", "failed"),
            ("fixture-minmax", "tests::t2", "failed"),
            ("fixture-minmax", "tests::t3", "failed"),
        ],
        ochiai_fault_rank: 1.0,
    },
    Expect {
        fixture: "workspace",
        failing: &[
            ("fixture-ws-core", "tests::clamp_above_range", "failed"),
            ("fixture-ws-app", "tests::progress_overshoot", "failed"),
            ("fixture-ws-app::integration", "bar_overshoot", "failed"),
        ],
        ochiai_fault_rank: 1.0,
    },
    Expect {
        fixture: "crash",
        failing: &[
            ("fixture-crash", "tests::get_next_wraps", "crashed"),
            ("fixture-crash", "tests::peek_next_raw_wraps", "crashed"),
            ("fixture-crash", "tests::steps_around", "crashed"),
        ],
        ochiai_fault_rank: 1.0,
    },
    Expect {
        fixture: "hang",
        failing: &[
            ("fixture-hang", "tests::trim_indent_tab", "timed-out"),
            ("fixture-hang", "tests::indent_len_tab", "failed"),
        ],
        ochiai_fault_rank: 1.0,
    },
    Expect {
        fixture: "harness-false",
        failing: &[
            ("fixture-harness-false", "tests::not_leap_1900", "failed"),
            ("fixture-harness-false", "tests::february_1900", "failed"),
            ("fixture-harness-false::custom", "main", "failed"),
        ],
        ochiai_fault_rank: 1.0,
    },
    Expect {
        fixture: "generic-macro",
        failing: &[
            ("fixture-generic-macro", "tests::percentages_above", "failed"),
            ("fixture-generic-macro", "tests::unit_above", "failed"),
            ("fixture-generic-macro", "tests::chars_above", "failed"),
        ],
        ochiai_fault_rank: 1.0,
    },
];

/// The fault lines of a fixture, from its `faults.toml`.
fn faults(dir: &Path) -> Vec<(String, u32)> {
    let text = std::fs::read_to_string(dir.join("faults.toml")).unwrap();
    let doc: toml::Table = text.parse().unwrap();
    let mut out = Vec::new();
    for f in doc["fault"].as_array().unwrap() {
        let file = f["file"].as_str().unwrap().to_string();
        for l in f["lines"].as_array().unwrap() {
            out.push((file.clone(), l.as_integer().unwrap() as u32));
        }
    }
    out
}

fn fixture_trial(e: &'static Expect) -> Result {
    let tmp = copy_fixture(e.fixture);
    let dir = tmp.path();
    let out = sfl(
        &[
            "--format",
            "json",
            "--keep-profiles",
            "--test-timeout",
            "3",
            "-m",
            "ochiai",
            "-m",
            "tarantula",
            "-m",
            "dstar",
            "-m",
            "naish2",
        ],
        dir,
    );
    check(out.status.code() == Some(0), || show(&out))?;
    let report: Value =
        serde_json::from_slice(&out.stdout).map_err(|err| format!("bad JSON: {err}\n{}", show(&out)))?;
    check(report["schema"] == "cargo-sfl/v1", || "schema".into())?;

    // Outcomes: exactly the expected failing tests fail, in the expected way.
    let mut failing = BTreeSet::new();
    for t in report["tests"].as_array().unwrap() {
        let key = (
            t["binary"].as_str().unwrap().to_string(),
            t["name"].as_str().unwrap().to_string(),
        );
        let outcome = t["outcome"].as_str().unwrap();
        match e.failing.iter().find(|f| f.0 == key.0 && f.1 == key.1) {
            Some(f) => check(outcome == f.2, || format!("{key:?}: expected {}, got {outcome}", f.2))?,
            None => check(outcome == "passed", || {
                format!("{key:?}: expected passed, got {outcome}")
            })?,
        }
        if outcome != "passed" {
            failing.insert(key);
        }
    }
    check(failing.len() == e.failing.len(), || {
        format!("failing tests {failing:?}")
    })?;

    // Every measure ranks the fault, and Ochiai ranks it as well as expected.
    let fault_lines = faults(dir);
    for ranking in report["rankings"].as_array().unwrap() {
        let units = ranking["units"].as_array().unwrap();
        let best = units
            .iter()
            .filter(|u| {
                fault_lines
                    .iter()
                    .any(|(f, l)| u["file"] == f.as_str() && u["line"] == *l)
            })
            .map(|u| u["rank"].as_f64().unwrap())
            .fold(f64::INFINITY, f64::min);
        check(best.is_finite(), || format!("{}: fault not ranked", ranking["measure"]))?;
        if ranking["measure"] == "ochiai" {
            check(best == e.ochiai_fault_rank, || {
                format!("ochiai ranks the fault {best}, expected {}", e.ochiai_fault_rank)
            })?;
        }
        for u in units {
            check(u["score"].as_f64().is_some_and(f64::is_finite), || {
                format!("non-finite score {u}")
            })?;
        }
    }
    edges::cover_every_test(dir)?;
    oracle(dir)
}

fn llvm_tool(name: &str) -> std::result::Result<PathBuf, Failed> {
    let out = Command::new("rustc")
        .args(["--print", "target-libdir"])
        .output()
        .map_err(|e| format!("rustc: {e}"))?;
    let libdir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let tool = libdir.parent().unwrap().join("bin").join(name);
    check(tool.exists(), || {
        format!(
            "{} is missing: run `rustup component add llvm-tools-preview` (.ci/run does)",
            tool.display()
        )
    })?;
    Ok(tool)
}

/// Per file, `(line, count)` as `llvm-cov export -format=lcov` prints them.
fn llvm_cov_lines(
    binary: &Path,
    profile: &Path,
    work: &Path,
) -> std::result::Result<BTreeMap<PathBuf, Vec<(u32, u64)>>, Failed> {
    let profdata = work.join("oracle.profdata");
    let merge = Command::new(llvm_tool("llvm-profdata")?)
        .args(["merge", "-sparse"])
        .arg(profile)
        .arg("-o")
        .arg(&profdata)
        .output()?;
    check(merge.status.success(), || show(&merge))?;
    let export = Command::new(llvm_tool("llvm-cov")?)
        .args(["export", "-format=lcov", "-instr-profile"])
        .arg(&profdata)
        .arg(binary)
        .output()?;
    check(export.status.success(), || show(&export))?;
    let mut files = BTreeMap::new();
    let mut current: Option<PathBuf> = None;
    for line in String::from_utf8_lossy(&export.stdout).lines() {
        if let Some(f) = line.strip_prefix("SF:") {
            current = Some(PathBuf::from(f));
        } else if let Some(da) = line.strip_prefix("DA:") {
            let (l, c) = da.split_once(',').unwrap();
            files
                .entry(current.clone().unwrap())
                .or_insert_with(Vec::new)
                .push((l.parse().unwrap(), c.parse().unwrap()));
        }
    }
    Ok(files)
}

/// The decoder oracle (see the module doc).
fn oracle(dir: &Path) -> Result {
    let target = dir.join("target/sfl");
    let index: Vec<KeptProfile> = serde_json::from_slice(&std::fs::read(target.join("profiles/index.json"))?)?;
    let spectra = Spectra::load(&target.join("spectra.json"))?;
    let mut binaries: BTreeMap<PathBuf, BinaryCoverage> = BTreeMap::new();
    let mut compared = 0usize;
    for (t, kept) in index.iter().enumerate() {
        check(!kept.profiles.is_empty(), || {
            format!("{} {}: no profile kept", kept.binary, kept.name)
        })?;
        let cov = match binaries.entry(kept.binary_path.clone()) {
            std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => v.insert(BinaryCoverage::open(&kept.binary_path)?),
        };
        let mut ran_lines = BTreeSet::new();
        for profile in &kept.profiles {
            let ours: BTreeMap<PathBuf, Vec<(u32, u64)>> = cov
                .decode(&std::fs::read(profile)?, false)?
                .into_iter()
                .map(|(f, l)| (cov.map.files[f as usize].clone(), l))
                .collect();
            let theirs = llvm_cov_lines(&kept.binary_path, profile, dir)?;
            check(ours == theirs, || {
                format!(
                    "{} {}: decoder differs from llvm-cov\nours:   {ours:?}\ntheirs: {theirs:?}",
                    kept.binary, kept.name
                )
            })?;
            compared += theirs.values().map(Vec::len).sum::<usize>();
            for (file, lines) in theirs {
                let Ok(rel) = file.strip_prefix(dir) else { continue };
                let rel = rel.to_string_lossy().replace('\\', "/");
                ran_lines.extend(lines.iter().filter(|(_, c)| *c > 0).map(|(l, _)| (rel.clone(), *l)));
            }
        }
        // The saved matrix holds the same lines for this test.
        let test_index = spectra
            .tests
            .iter()
            .position(|r| r.binary == kept.binary && r.name == kept.name)
            .unwrap();
        let in_matrix: BTreeSet<(String, u32)> = spectra
            .units
            .iter()
            .zip(&spectra.coverage)
            .filter(|(_, c)| c.contains(test_index))
            .map(|(u, _)| (u.file.clone(), u.line))
            .collect();
        check(in_matrix == ran_lines, || {
            format!("test {t} {}: matrix {in_matrix:?} vs llvm-cov {ran_lines:?}", kept.name)
        })?;
    }
    check(compared > 0, || "no lines compared".into())
}

/// A test filter that keeps only passing tests: exit code 3 and a coverage summary.
fn no_failing_tests() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["t4"], tmp.path());
    check(out.status.code() == Some(3), || show(&out))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    check(
        stdout.contains("No failing tests") && stdout.contains("Coverage:"),
        || show(&out),
    )
}

fn no_tests_match() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["no_such_test"], tmp.path());
    check(out.status.code() == Some(4), || show(&out))?;
    check(
        String::from_utf8_lossy(&out.stderr).contains("no tests matched"),
        || show(&out),
    )
}

fn build_failure_shows_diagnostics() -> Result {
    let tmp = copy_fixture("minmax");
    std::fs::write(tmp.path().join("src/lib.rs"), "pub fn broken( {}\n")?;
    let out = sfl(&[], tmp.path());
    check(out.status.code() == Some(101), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("error") && stderr.contains("instrumented build failed"),
        || show(&out),
    )
}

/// `cargo sfl report` re-ranks the saved spectra to the same JSON; a corrupt file is refused.
fn report_rereads_saved_spectra() -> Result {
    let tmp = copy_fixture("minmax");
    let first = sfl(&["--format", "json", "-m", "dstar"], tmp.path());
    check(first.status.success(), || show(&first))?;
    let again = sfl(&["report", "--format", "json", "-m", "dstar"], tmp.path());
    check(again.status.success(), || show(&again))?;
    check(first.stdout == again.stdout, || {
        format!("{}\nvs\n{}", show(&first), show(&again))
    })?;
    let spectra = tmp.path().join("target/sfl/spectra.json");
    std::fs::write(&spectra, "{\"schema\": \"cargo-sfl-spectra/v1\", \"tests\": 3}")?;
    let bad = sfl(&["report"], tmp.path());
    check(bad.status.code() == Some(5), || show(&bad))?;
    check(String::from_utf8_lossy(&bad.stderr).contains("malformed"), || {
        show(&bad)
    })
}

/// Snapshots of the human and JSON reports (paths and durations redacted) and of `--help`.
fn snapshots() -> Result {
    let tmp = copy_fixture("minmax");
    let human = sfl(&["--top", "5", "-m", "ochiai", "-m", "naish2"], tmp.path());
    check(human.status.success(), || show(&human))?;
    let json = sfl(&["report", "--format", "json"], tmp.path());
    check(json.status.success(), || show(&json))?;
    let help = sfl(&["--help"], tmp.path());
    let catalogue = sfl(&["measures"], tmp.path());
    let sarif = sfl(&["report", "--format", "sarif", "--top", "2"], tmp.path());
    let imported = sfl(
        &[
            "analyze",
            "--gzoltar",
            root().join("fixtures/gzoltar-minmax").to_str().unwrap(),
            "-m",
            "cl-u",
            "-m",
            "dstar",
            "--no-group",
        ],
        tmp.path(),
    );
    check(imported.status.success(), || show(&imported))?;
    let repo = root().to_string_lossy().into_owned();
    let root = tmp.path().to_string_lossy().into_owned();
    let redact = |b: &[u8]| {
        let s = String::from_utf8_lossy(b).replace(&root, "[ROOT]");
        s.lines()
            .map(|l| match l.find("\"duration_ms\": ") {
                Some(i) => format!(
                    "{}\"duration_ms\": [MS]{}",
                    &l[..i],
                    if l.ends_with(',') { "," } else { "" }
                ),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root_snapshots());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        insta::assert_snapshot!("minmax_human", redact(&human.stdout));
        insta::assert_snapshot!("minmax_json", redact(&json.stdout));
        insta::assert_snapshot!("help", redact(&help.stdout));
        insta::assert_snapshot!("measures", redact(&catalogue.stdout));
        insta::assert_snapshot!(
            "minmax_sarif",
            redact(&sarif.stdout).replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
        );
        insta::assert_snapshot!(
            "gzoltar_minmax_human",
            redact(&imported.stdout).replace(&repo, "[REPO]")
        );
    });
    Ok(())
}

/// `cargo sfl analyze --gzoltar` on Doric's minmax matrix gives the paper's cl and P(f).
fn analyze_gzoltar_doric_minmax() -> Result {
    let dir = root().join("fixtures/gzoltar-minmax");
    let dir = dir.to_str().unwrap();
    let out = sfl(
        &[
            "analyze",
            "--gzoltar",
            dir,
            "-m",
            "cl",
            "-m",
            "fault-likelihood",
            "--no-group",
            "--format",
            "json",
        ],
        &root(),
    );
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let by_name = |ranking: usize| -> BTreeMap<String, (f64, bool)> {
        report["rankings"][ranking]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                let name = u["name"].as_str().unwrap().to_string();
                (
                    name,
                    (u["score"].as_f64().unwrap(), u["certain"].as_bool().unwrap_or(false)),
                )
            })
            .collect()
    };
    let close = |got: &BTreeMap<String, (f64, bool)>, want: &[(&str, f64)]| -> Result {
        check(got.len() == want.len(), || format!("{got:?}"))?;
        for (name, w) in want {
            let g = got[*name].0;
            check((g - w).abs() < 1e-12, || format!("{name}: {g} != {w} in {got:?}"))?;
        }
        Ok(())
    };
    let cl = by_name(0);
    close(
        &cl,
        &[
            ("minmax#u2", 1.0 / 6.0),
            ("minmax#u3", 5.0 / 9.0),
            ("minmax#u4", 1.0 / 6.0),
        ],
    )?;
    check(report["rankings"][0]["units"][0]["name"] == "minmax#u3", || show(&out))?;
    let pf = by_name(1);
    close(
        &pf,
        &[("minmax#u2", 2.0 / 3.0), ("minmax#u3", 1.0), ("minmax#u4", 2.0 / 3.0)],
    )?;
    check(pf["minmax#u3"].1 && !pf["minmax#u2"].1, || show(&out))?;
    check(report["tests"][0]["name"] == "t1", || show(&out))?;
    // A malformed matrix is refused with exit code 5 and the offending line.
    let tmp = tempfile::tempdir()?;
    std::fs::write(tmp.path().join("spectra.csv"), "name\nu1\n")?;
    std::fs::write(tmp.path().join("matrix.txt"), "1 -\n1 0 +\n")?;
    let bad = sfl(&["analyze", "--gzoltar", tmp.path().to_str().unwrap()], &root());
    check(bad.status.code() == Some(5), || show(&bad))?;
    check(
        String::from_utf8_lossy(&bad.stderr).contains("matrix.txt line 2"),
        || show(&bad),
    )
}

/// `cargo sfl measures --format json` lists at least 100 measures, each findable by name.
fn measures_catalogue() -> Result {
    let out = sfl(&["measures", "--format", "json"], &root());
    check(out.status.success(), || show(&out))?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let list = v["measures"].as_array().unwrap();
    check(list.len() >= 100, || format!("{} measures", list.len()))?;
    for m in list {
        let name = m["name"].as_str().unwrap();
        check(
            !m["formula"].as_str().unwrap().is_empty() && !m["citation"].as_str().unwrap().is_empty(),
            || format!("{name} lacks a formula or citation"),
        )?;
        // Every listed name works as --measure.
        if ["ochiai", "cl", "gp05"].contains(&name) {
            let r = sfl(
                &[
                    "analyze",
                    "--gzoltar",
                    root().join("fixtures/gzoltar-minmax").to_str().unwrap(),
                    "-m",
                    name,
                ],
                &root(),
            );
            check(r.status.success(), || show(&r))?;
        }
    }
    Ok(())
}

/// The saved spectra without what differs between runs (durations, the partition tag).
fn normalized_spectra(path: &Path) -> std::result::Result<Value, Failed> {
    let mut v: Value = serde_json::from_slice(&std::fs::read(path)?)?;
    v.as_object_mut().unwrap().remove("partition");
    for t in v["tests"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("duration_ms");
    }
    Ok(v)
}

/// Three `count` shards and two `hash` shards of the workspace fixture merge into exactly the
/// unsharded matrix and report; shards of different sources are refused.
fn shards_merge_into_the_unsharded_matrix() -> Result {
    let tmp = copy_fixture("workspace");
    let dir = tmp.path();
    let full = sfl(&["--workspace", "--format", "json"], dir);
    check(full.status.success(), || show(&full))?;
    let whole = normalized_spectra(&dir.join("target/sfl/spectra.json"))?;
    for (kind, n) in [("count", 3), ("hash", 2)] {
        let mut files = Vec::new();
        for k in 1..=n {
            let file = dir.join(format!("{kind}{k}.json"));
            let part = format!("{kind}:{k}/{n}");
            let out = sfl(
                &[
                    "--workspace",
                    "--partition",
                    &part,
                    "--save-spectra",
                    file.to_str().unwrap(),
                ],
                dir,
            );
            // A shard may hold no failing test (exit 3) or no test at all (exit 4).
            check(matches!(out.status.code(), Some(0 | 3 | 4)), || show(&out))?;
            if file.exists() {
                files.push(file.to_str().unwrap().to_string());
            }
        }
        let merged_file = dir.join(format!("{kind}-merged.json"));
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().cloned());
        args.extend([
            "--save-spectra".into(),
            merged_file.to_str().unwrap().into(),
            "--format".into(),
            "json".into(),
        ]);
        let merged = sfl(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir);
        check(merged.status.success(), || show(&merged))?;
        let got = normalized_spectra(&merged_file)?;
        check(got == whole, || {
            format!("{kind}: merged spectra differ from the unsharded run")
        })?;
        let strip = |b: &[u8]| -> Value {
            let mut v: Value = serde_json::from_slice(b).unwrap();
            for t in v["tests"].as_array_mut().unwrap() {
                t.as_object_mut().unwrap().remove("duration_ms");
            }
            v
        };
        check(strip(&merged.stdout) == strip(&full.stdout), || {
            format!("{kind}: merged report differs")
        })?;
    }
    // A shard built from changed sources is refused.
    let lib = dir.join("core/src/lib.rs");
    let text = std::fs::read_to_string(&lib)?;
    std::fs::write(&lib, format!("{text}\n// changed\n"))?;
    let changed = dir.join("changed.json");
    let out = sfl(
        &[
            "--workspace",
            "--partition",
            "count:1/3",
            "--save-spectra",
            changed.to_str().unwrap(),
        ],
        dir,
    );
    check(changed.exists(), || show(&out))?;
    let bad = sfl(
        &[
            "merge",
            changed.to_str().unwrap(),
            dir.join("count2.json").to_str().unwrap(),
        ],
        dir,
    );
    check(bad.status.code() == Some(5), || show(&bad))?;
    check(
        String::from_utf8_lossy(&bad.stderr).contains("different sources"),
        || show(&bad),
    )
}

/// A tool installed by `.ci/setup` under target/tools (or named by an environment variable).
fn tool(env: &str, relative: &str) -> std::result::Result<PathBuf, Failed> {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/tools").join(relative));
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is missing: run .ci/setup (or set {env})", path.display()).into())
    }
}

/// `--format sarif` validates against the official SARIF 2.1.0 schema and passes Microsoft's
/// SARIF Multitool with no error-level result; its content points at the fault.
fn sarif_validates() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(
        &[
            "--format", "sarif", "--top", "3", "-m", "ochiai", "-m", "cl", "-m", "cp",
        ],
        tmp.path(),
    );
    check(out.status.success(), || show(&out))?;
    let log: Value = serde_json::from_slice(&out.stdout)?;

    // The official schema's `language` pattern has a bare `]`, a literal in ECMAScript but an
    // error for Rust's regex engine: escape it (the same pattern in both dialects).
    let text = std::fs::read_to_string(tool("SFL_SARIF_SCHEMA", "sarif-2.1.0.json")?)?;
    let bare = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    check(text.contains(bare), || "the schema's language pattern changed".into())?;
    let schema: Value = serde_json::from_str(&text.replace(bare, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#))?;
    let validator = jsonschema::validator_for(&schema).map_err(|e| format!("schema: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    check(errors.is_empty(), || errors.join("\n"))?;
    // The check is live: a log with a wrong version or a result without a message fails it.
    let mut broken = log.clone();
    broken["version"] = "9.9".into();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    check(validator.iter_errors(&broken).count() >= 2, || {
        "a broken log passed the schema".into()
    })?;

    let file = tmp.path().join("report.sarif");
    std::fs::write(&file, &out.stdout)?;
    let validated = tmp.path().join("validation.sarif");
    let mt = Command::new(tool(
        "SFL_SARIF_MULTITOOL",
        "node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool",
    )?)
    .arg("validate")
    .arg(&file)
    .arg("-o")
    .arg(&validated)
    .output()?;
    check(mt.status.success(), || show(&mt))?;
    let v: Value = serde_json::from_slice(&std::fs::read(&validated)?)?;
    let problems: Vec<&Value> = v["runs"][0]["results"].as_array().unwrap().iter().collect();
    let errors: Vec<&&Value> = problems.iter().filter(|r| r["level"] == "error").collect();
    check(errors.is_empty(), || format!("Multitool errors: {errors:#?}"))?;

    let run = &log["runs"][0];
    let results = run["results"].as_array().unwrap();
    check(run["tool"]["driver"]["rules"].as_array().unwrap().len() == 3, || {
        "three rules".into()
    })?;
    check(results.len() == 9, || format!("{} results", results.len()))?;
    let top = &results[0];
    let region = &top["locations"][0]["physicalLocation"];
    check(
        region["artifactLocation"]["uri"] == "src/lib.rs"
            && region["artifactLocation"]["uriBaseId"] == "SRCROOT"
            && region["region"]["startLine"] == 16,
        || format!("{top:#}"),
    )?;
    check(
        top["ruleId"] == "sfl/ochiai" && top["partialFingerprints"]["cargoSflLines/v1"].is_string(),
        || format!("{top:#}"),
    )?;
    // The failing tests are related locations, at their panic site.
    let related = top["relatedLocations"].as_array().unwrap();
    check(
        related
            .iter()
            .filter(|r| r["physicalLocation"]["region"]["startLine"] == 30)
            .count()
            == 3,
        || format!("{related:#?}"),
    )?;
    // cl results carry the probability; cp results a score and no probability.
    check(results[3]["properties"]["probability"].is_number(), || {
        format!("{:#}", results[3])
    })?;
    check(
        results[6]["ruleId"] == "sfl/cp"
            && results[6]["properties"]["score"].is_number()
            && results[6]["properties"]["probability"].is_null(),
        || format!("{:#}", results[6]),
    )
}

/// The `run: |` script of the workflow step with this name in docs/github-workflow.yml.
fn workflow_step(name: &str) -> std::result::Result<String, Failed> {
    let text = std::fs::read_to_string(root().join("docs/github-workflow.yml"))?;
    let mut lines = text.lines().skip_while(|l| l.trim() != format!("- name: {name}"));
    lines.next().ok_or_else(|| format!("no step {name:?}"))?;
    let mut lines = lines.skip_while(|l| l.trim() != "run: |");
    let run = lines.next().ok_or("the step has no `run: |` block")?;
    let indent = run.len() - run.trim_start().len() + 2;
    let script: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect();
    Ok(script.join("\n"))
}

fn git(dir: &Path, args: &[&str]) -> Result {
    let out = Command::new("git")
        .args(["-c", "user.name=sfl", "-c", "user.email=sfl@example.com"])
        .args(args)
        .current_dir(dir)
        .output()?;
    check(out.status.success(), || show(&out))
}

/// The workflow's "Localise the fault" step on a fixture repository: commit a correct minmax,
/// introduce the fault as the change under test, run the step with `SFL_BASE=HEAD`, and check
/// what it leaves for the upload and comment steps; then `--only-changed` and `--fail-on`.
fn ci_workflow_steps() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let lib = dir.join("src/lib.rs");
    let faulty = std::fs::read_to_string(&lib)?;
    let fixed = faulty.replace("most = in2; // FAULT", "least = in2; // FIXED");
    check(fixed != faulty, || "fixture changed: no FAULT marker".into())?;
    std::fs::write(&lib, &fixed)?;
    std::fs::write(dir.join(".gitignore"), "/target\n")?;
    git(dir, &["init", "-q"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "correct minmax"])?;
    std::fs::write(&lib, &faulty)?;

    let bin_dir = Path::new(env!("CARGO_BIN_EXE_cargo-sfl"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )?;
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", &workflow_step("Localise the fault")?])
        .env("SFL_BASE", "HEAD")
        .env("PATH", path)
        .current_dir(dir)
        .output()?;
    check(out.status.success(), || show(&out))?;

    let sarif: Value = serde_json::from_slice(&std::fs::read(dir.join("sfl.sarif"))?)?;
    let top = &sarif["runs"][0]["results"][0];
    check(
        top["locations"][0]["physicalLocation"]["region"]["startLine"] == 16 && top["properties"]["changed"] == true,
        || format!("{top:#}"),
    )?;
    let report: Value = serde_json::from_slice(&std::fs::read(dir.join("sfl.json"))?)?;
    check(
        report["diff_base"] == "HEAD" && report["rankings"][0]["changed_in_top"] == 1,
        || format!("{:#}", report["rankings"][0]["changed_in_top"]),
    )?;
    let md = std::fs::read_to_string(dir.join("sfl.md"))?;
    check(
        md.contains("changed") && md.contains("1 of these 5 entries touch lines changed since HEAD"),
        || md.clone(),
    )?;

    // Only the changed line is ranked; it reaches --fail-on 0.9 (exit 6) but not 1.5 (exit 0).
    let only = sfl(
        &["report", "--diff-base", "HEAD", "--only-changed", "--format", "json"],
        dir,
    );
    let v: Value = serde_json::from_slice(&only.stdout)?;
    check(v["rankings"][0]["units"].as_array().unwrap().len() == 1, || show(&only))?;
    let gate = sfl(
        &["report", "--diff-base", "HEAD", "--only-changed", "--fail-on", "0.9"],
        dir,
    );
    check(gate.status.code() == Some(6), || show(&gate))?;
    check(String::from_utf8_lossy(&gate.stderr).contains("src/lib.rs:16"), || {
        show(&gate)
    })?;
    let pass = sfl(
        &["report", "--diff-base", "HEAD", "--only-changed", "--fail-on", "1.5"],
        dir,
    );
    check(pass.status.code() == Some(0), || show(&pass))?;
    // A revision git does not know is a usage error.
    let bad = sfl(&["report", "--diff-base", "no-such-rev"], dir);
    check(bad.status.code() == Some(2), || show(&bad))
}

/// `-q` leaves only the report (stderr empty); `--color always|never` controls ANSI codes.
fn terminal_quiet_and_color() -> Result {
    let tmp = copy_fixture("minmax");
    let quiet = sfl(&["-q", "--top", "1"], tmp.path());
    check(quiet.status.success() && quiet.stderr.is_empty(), || show(&quiet))?;
    let normal = sfl(&["report", "--top", "1"], tmp.path());
    check(!normal.stdout.contains(&0x1b), || show(&normal))?;
    let always = sfl(&["report", "--top", "1", "--color", "always"], tmp.path());
    check(always.stdout.contains(&0x1b), || show(&always))?;
    let never = sfl(&["report", "--top", "1", "--color", "never"], tmp.path());
    check(!never.stdout.contains(&0x1b) && never.stdout == normal.stdout, || {
        show(&never)
    })?;
    let verbose = sfl(&["-v", "--top", "1"], tmp.path());
    let err = String::from_utf8_lossy(&verbose.stderr);
    check(
        err.contains("PASSED") && err.contains("FAILED") && err.contains("Finished"),
        || show(&verbose),
    )
}

/// A headless Chromium driven over WebDriver by chromedriver (Debian's chromium-driver).
struct Browser {
    driver: std::process::Child,
    base: String,
    session: String,
}

impl Browser {
    fn start(profile: &Path) -> std::result::Result<Self, Failed> {
        let chromedriver = std::env::var("SFL_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let chromium = std::env::var("SFL_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let driver = Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| {
                format!("cannot start {chromedriver}: {e}; run .ci/setup (Debian's chromium and chromium-driver)")
            })?;
        let base = format!("http://127.0.0.1:{port}");
        let mut browser = Browser {
            driver,
            base,
            session: String::new(),
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while ureq::get(&format!("{}/status", browser.base)).call().is_err() {
            if std::time::Instant::now() > deadline {
                return Err("chromedriver did not start".into());
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let caps = serde_json::json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--window-size=1200,1400", format!("--user-data-dir={}", profile.display()),
            ]},
        }}});
        let v = browser.call("POST", "/session", Some(caps))?;
        browser.session = v["sessionId"].as_str().ok_or("no session id")?.to_string();
        Ok(browser)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> std::result::Result<Value, Failed> {
        let url = format!("{}{path}", self.base);
        let response = match method {
            "GET" => ureq::get(&url).call(),
            "DELETE" => ureq::delete(&url).call(),
            _ => ureq::post(&url).send_json(body.unwrap_or_else(|| serde_json::json!({}))),
        };
        let mut response = response.map_err(|e| format!("{method} {path}: {e}"))?;
        let v: Value = response
            .body_mut()
            .read_json()
            .map_err(|e| format!("{method} {path}: {e}"))?;
        Ok(v["value"].clone())
    }

    fn session(&self, method: &str, path: &str, body: Option<Value>) -> std::result::Result<Value, Failed> {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    fn open(&self, url: &str) -> Result {
        self.session("POST", "/url", Some(serde_json::json!({"url": url})))?;
        Ok(())
    }

    /// Clicks the first element matching a CSS selector, as a user would.
    fn click(&self, css: &str) -> Result {
        let e = self.session(
            "POST",
            "/element",
            Some(serde_json::json!({"using": "css selector", "value": css})),
        )?;
        let id = e
            .as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .ok_or_else(|| format!("no element {css}: {e}"))?;
        self.session("POST", &format!("/element/{id}/click"), Some(serde_json::json!({})))?;
        Ok(())
    }

    fn script(&self, js: &str) -> std::result::Result<Value, Failed> {
        self.session(
            "POST",
            "/execute/sync",
            Some(serde_json::json!({"script": js, "args": []})),
        )
    }

    /// The ranking table's rows, top first, by their location label.
    fn rows(&self) -> std::result::Result<Vec<String>, Failed> {
        let v = self.script("return [...document.querySelectorAll('#ranking tbody tr')].map(r => r.dataset.loc)")?;
        Ok(v.as_array()
            .ok_or("no rows")?
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect())
    }

    fn screenshot(&self, path: &Path) -> Result {
        use base64::Engine;
        let v = self.session("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD.decode(v.as_str().ok_or("no screenshot")?)?;
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, png)?;
        Ok(())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.session("DELETE", "", None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The HTML report in a real headless browser: the top suspect, switching measures, "not the
/// bug" re-ranking by Doric's cl-u exactly as `cargo sfl -m cl-u` does, and screenshots kept in
/// target/test-artifacts/.
fn html_report_in_a_browser() -> Result {
    let tmp = copy_fixture("minmax");
    let out_dir = tmp.path().join("report");
    let out = sfl(&["--format", "html", "--output", out_dir.to_str().unwrap()], tmp.path());
    check(out.status.success(), || show(&out))?;
    let page = out_dir.join("index.html");
    let html = std::fs::read_to_string(&page)?;
    check(!html.contains("http://") && !html.contains("https://"), || {
        "the page must not need the network".into()
    })?;
    // What cl-u inspects second, for comparison with the page.
    let clu = sfl(&["report", "-m", "cl-u", "--format", "json"], tmp.path());
    let clu: Value = serde_json::from_slice(&clu.stdout)?;
    let clu_second = clu["rankings"][0]["units"][1]["line"].as_u64().unwrap();

    let browser = Browser::start(&tmp.path().join("chromium-profile"))?;
    browser.open(&format!("file://{}", page.display()))?;
    let artifacts = root().join("target/test-artifacts");
    browser.screenshot(&artifacts.join("html-report.png"))?;
    let rows = browser.rows()?;
    check(rows.first().map(String::as_str) == Some("src/lib.rs:16"), || {
        format!("ochiai rows {rows:?}")
    })?;

    browser.click("#measure option[value='cl']")?;
    let rows = browser.rows()?;
    check(rows.first().map(String::as_str) == Some("src/lib.rs:44-46"), || {
        format!("cl rows {rows:?}")
    })?;

    browser.click("#ranking tbody tr:first-child button.refute")?;
    let rows = browser.rows()?;
    check(
        rows.first().map(String::as_str) == Some(format!("src/lib.rs:{clu_second}").as_str()),
        || format!("after 'not the bug': {rows:?}, cl-u's second pick is line {clu_second}"),
    )?;
    check(!rows.iter().any(|r| r == "src/lib.rs:44-46"), || {
        format!("refuted entry still ranked: {rows:?}")
    })?;
    let notice = browser.script("return document.getElementById('notice').innerText")?;
    let notice = notice.as_str().unwrap_or("");
    check(
        notice.contains("src/lib.rs:44-46") && notice.contains("Assumed"),
        || notice.to_string(),
    )?;
    let selected = browser.script("return document.getElementById('measure').value")?;
    check(selected.as_str().is_some_and(|s| s.starts_with("cl-u")), || {
        format!("{selected}")
    })?;
    browser.screenshot(&artifacts.join("html-report-after-not-the-bug.png"))
}

/// `cargo sfl eval` on minmax reproduces rank scores worked out by hand. The fault (line 16) is
/// the only line with ef 3, ep 0. Ochiai: alone on top, 0 + 1/2. Tarantula: every line no
/// passing test ran scores 1: the fault and the 9 lines of the three failing tests' bodies,
/// 0 + 10/2. Wong1 (= ef): the 17 lines every failing test ran tie, 0 + 17/2. 36 executed
/// lines, so Ochiai's EXAM is 1/36.
fn eval_reproduces_hand_computed_ranks() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let faults = dir.join("faults.toml");
    let args = [
        "eval",
        "--faults",
        faults.to_str().unwrap(),
        "-m",
        "ochiai",
        "-m",
        "tarantula",
        "-m",
        "wong1",
        "--format",
        "json",
    ];
    let out = sfl(&args, dir);
    check(out.status.success(), || show(&out))?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    check(v["schema"] == "cargo-sfl-eval/v1" && v["lines"] == 36, || show(&out))?;
    let by = |m: &str| {
        v["measures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["measure"] == m)
            .cloned()
            .unwrap()
    };
    for (m, rank) in [("ochiai", 0.5), ("tarantula", 5.0), ("wong1", 8.5)] {
        let r = by(m);
        check(r["standard_rank"] == rank, || format!("{m}: {r:#}"))?;
        check(r["ht_rank"].is_number() && r["ht"]["method"] == "exact", || {
            format!("{m}: {r:#}")
        })?;
    }
    let o = by("ochiai");
    check(
        (o["exam"].as_f64().unwrap() - 1.0 / 36.0).abs() < 1e-12 && o["top"]["1"] == true,
        || format!("{o:#}"),
    )?;
    check(
        by("wong1")["top"]["5"] == false && by("wong1")["top"]["10"] == true,
        || format!("{:#}", by("wong1")),
    )?;

    // The same evaluation from the saved spectra, without running anything.
    let saved = dir.join("target/sfl/spectra.json");
    let mut again: Vec<&str> = args.to_vec();
    again.extend(["--spectra", saved.to_str().unwrap()]);
    let out2 = sfl(&again, dir);
    check(out2.stdout == out.stdout, || show(&out2))?;

    // Function granularity: the fault is function `minmax` (lines 6-22), which Ochiai ties
    // with `check` (lines 28-31, run by every test too): 0 + 2/2 of 7 executed functions.
    let mut f = again.clone();
    f.extend(["--granularity", "function"]);
    let fun: Value = serde_json::from_slice(&sfl(&f, dir).stdout)?;
    check(fun["lines"] == 7 && fun["measures"][0]["standard_rank"] == 1.0, || {
        format!("{fun:#}")
    })?;

    // --order ht lists entries by expected hitting time, earliest first.
    let ht = sfl(&["report", "--order", "ht", "--format", "json"], dir);
    let ht: Value = serde_json::from_slice(&ht.stdout)?;
    let times: Vec<f64> = ht["rankings"][0]["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["expected_hitting_time"].as_f64().unwrap())
        .collect();
    check(
        times.windows(2).all(|w| w[0] <= w[1]) && ht["rankings"][0]["units"][0]["line"] == 16,
        || format!("{times:?}"),
    )?;
    check(ht["rankings"][0]["ht_order"]["method"] == "exact", || {
        format!("{:#}", ht["rankings"][0]["ht_order"])
    })?;

    // A fault on a line no test runs is reported as unlocalisable, and alone gives exit 7.
    let omission = dir.join("omission.toml");
    std::fs::write(&omission, "[[fault]]\nfile = \"src/lib.rs\"\nlines = [2]\n")?;
    let out3 = sfl(
        &[
            "eval",
            "--faults",
            omission.to_str().unwrap(),
            "--spectra",
            saved.to_str().unwrap(),
        ],
        dir,
    );
    check(out3.status.code() == Some(7), || show(&out3))?;
    check(String::from_utf8_lossy(&out3.stdout).contains("UNLOCALISABLE"), || {
        show(&out3)
    })
}

fn root_snapshots() -> PathBuf {
    root().join("tests/snapshots")
}

fn main() {
    let args = Arguments::from_args();
    let mut trials: Vec<Trial> = FIXTURES
        .iter()
        .map(|e| Trial::test(format!("fixture::{}", e.fixture), move || fixture_trial(e)))
        .collect();
    trials.push(Trial::test("exit::no_failing_tests", no_failing_tests));
    trials.push(Trial::test("exit::no_tests_match", no_tests_match));
    trials.push(Trial::test(
        "exit::build_failure_shows_diagnostics",
        build_failure_shows_diagnostics,
    ));
    trials.push(Trial::test(
        "report::rereads_saved_spectra",
        report_rereads_saved_spectra,
    ));
    trials.push(Trial::test("snapshot::outputs", snapshots));
    trials.push(Trial::test(
        "analyze::gzoltar_doric_minmax",
        analyze_gzoltar_doric_minmax,
    ));
    trials.push(Trial::test("measures::catalogue", measures_catalogue));
    trials.push(Trial::test(
        "shard::merge_equals_unsharded",
        shards_merge_into_the_unsharded_matrix,
    ));
    trials.push(Trial::test("sarif::validates", sarif_validates));
    trials.push(Trial::test("ci::workflow_steps", ci_workflow_steps));
    trials.push(Trial::test("terminal::quiet_and_color", terminal_quiet_and_color));
    trials.push(Trial::test("html::report_in_a_browser", html_report_in_a_browser));
    trials.push(Trial::test(
        "eval::hand_computed_ranks",
        eval_reproduces_hand_computed_ranks,
    ));
    trials.push(Trial::test("edges::recorded_exactly", edges::recorded_exactly));
    trials.push(Trial::test("edges::no_edges", edges::no_edges));
    trials.push(Trial::test("cp::schedule", edges::schedule));
    libtest_mimic::run(&args, trials).exit();
}
