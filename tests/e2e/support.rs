//! What every end-to-end trial shares: a private copy of a fixture, running the real binary,
//! turning a failed expectation into a trial failure, and finding the external tools.

pub mod shared;
pub mod webdriver;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use libtest_mimic::Failed;
use serde_json::Value;

pub type Result<T = ()> = std::result::Result<T, Failed>;

/// The repository root (where `fixtures/`, `tests/` and `target/` are).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies a fixture (without its target dir) into a fresh temp dir.
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
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

/// A one-library crate in a fresh temp dir, its own workspace: `Cargo.toml` with `name` and the
/// manifest sections `sections` (e.g. `[lib]` settings), and `src/lib.rs`.
pub fn lib_crate(name: &str, sections: &str, lib_rs: &str) -> Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n{sections}[workspace]\n"),
    )?;
    std::fs::write(dir.join("src/lib.rs"), lib_rs)?;
    Ok(tmp)
}

/// `cargo sfl` as cargo would start it, in `dir`; for runs that need their own environment.
/// The tests run in the environment a developer's shell gives by default: no `RUST_BACKTRACE`
/// (a set one makes cargo sfl read the standard library's printed backtraces instead of the
/// stacks its runtime records; `stacks::recorded_stacks_match_printed_ones` sets it itself).
pub fn sfl_command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cargo-sfl"));
    command
        .arg("sfl")
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE");
    command
}

/// Runs `cargo sfl ARGS` in `dir`.
pub fn sfl(args: &[&str], dir: &Path) -> Output {
    sfl_command(dir).args(args).output().unwrap()
}

/// Runs `cargo sfl report ARGS` in `dir`: what a run with `ARGS` would print, made from the
/// spectra saved there.
pub fn report(args: &[&str], dir: &Path) -> Output {
    sfl_command(dir).arg("report").args(args).output().unwrap()
}

/// Replaces the first `from` in the file at `path` with `to`; fails when `from` is not there.
pub fn edit_file(path: &Path, from: &str, to: &str) -> Result {
    let text = std::fs::read_to_string(path)?;
    check(text.contains(from), || format!("{from:?} not in {}", path.display()))?;
    std::fs::write(path, text.replacen(from, to, 1))?;
    Ok(())
}

pub fn check(cond: bool, msg: impl FnOnce() -> String) -> Result {
    if cond { Ok(()) } else { Err(msg().into()) }
}

/// Checks that a run exited with `code` and that `stream`, its stdout or stderr, says each of
/// `says`.
pub fn check_exit(out: &Output, code: i32, stream: &[u8], says: &[&str]) -> Result {
    check(out.status.code() == Some(code), || show(out))?;
    let text = String::from_utf8_lossy(stream);
    check(says.iter().all(|s| text.contains(s)), || show(out))
}

/// A finished command's exit code and output, for failure messages.
pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The fault lines of a fixture, from its `faults.toml`.
pub fn faults(dir: &Path) -> Vec<(String, u32)> {
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

/// An LLVM tool of the active toolchain's llvm-tools component.
pub fn llvm_tool(name: &str) -> Result<PathBuf> {
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

/// A tool installed by `.ci/setup` under target/tools (or named by an environment variable).
pub fn tool(env: &str, relative: &str) -> Result<PathBuf> {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/tools").join(relative));
    if path.exists() {
        Ok(path)
    } else {
        Err(format!("{} is missing: run .ci/setup (or set {env})", path.display()).into())
    }
}

/// `cargo sfl eval` of the spectra saved in `dir` (a fixture's run) against its `faults.toml`,
/// Ochiai only, with `--tie-break tie_break`: the JSON report.
pub fn eval_ochiai(dir: &Path, tie_break: &str) -> Result<Value> {
    let faults = dir.join("faults.toml");
    let spectra = dir.join("target/sfl/spectra.json");
    let args = [
        "eval",
        "--faults",
        faults.to_str().unwrap(),
        "--spectra",
        spectra.to_str().unwrap(),
        "-m",
        "ochiai",
        "--tie-break",
        tie_break,
        "--format",
        "json",
    ];
    let out = sfl(&args, dir);
    check(out.status.success(), || show(&out))?;
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// The test named `name` in a JSON report (`Null` when it has none).
pub fn test_named(report: &Value, name: &str) -> Value {
    report["tests"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == name))
        .cloned()
        .unwrap_or_default()
}

/// The outcome of the test `name` in the JSON report a run printed (`out`; empty when the
/// report has no such test).
pub fn outcome_of(out: &Output, name: &str) -> Result<String> {
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}\n{}", show(out)))?;
    Ok(test_named(&report, name)["outcome"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// A measure's (or baseline's) Standard Rank Score in an eval report.
pub fn standard_rank(report: &Value, measure: &str) -> Value {
    report["measures"]
        .as_array()
        .and_then(|ms| ms.iter().find(|x| x["measure"] == measure))
        .map(|x| x["standard_rank"].clone())
        .unwrap_or_default()
}

/// The (file, line) each suspect of a JSON ranking is shown at, in the order the human, short
/// and SARIF reports show them: by default the first entry of each function (at
/// its first line in the function), function after function; with `--granularity line` the
/// entries at their lead lines.
pub fn shown_in_json(ranking: &Value) -> Vec<(String, u32)> {
    cargo_sfl::report::shown_in_json(ranking)
}

/// The human report shows every entry at the line the JSON report shows it at, under that
/// line's own file (functions first: in the JSON's order; lines: as a set, since the human
/// report groups them by file).
pub fn human_agrees_with_json(human: &str, json: &Value) -> Result {
    let shown = cargo_sfl::report::shown_entries(human)?;
    check(!shown.is_empty(), || {
        format!("no ranking in the human report:\n{human}")
    })?;
    for (measure, mut entries) in shown {
        let ranking = json["rankings"]
            .as_array()
            .and_then(|r| r.iter().find(|r| r["measure"] == measure.as_str()))
            .ok_or_else(|| format!("no JSON ranking for {measure}"))?;
        let mut want = shown_in_json(ranking);
        want.truncate(entries.len());
        if ranking["functions"].is_null() {
            entries.sort();
            want.sort();
        }
        check(entries == want, || {
            format!("{measure}: the human report shows {entries:?}, the JSON report leads with {want:?}\n{human}")
        })?;
    }
    Ok(())
}
