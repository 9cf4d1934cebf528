//! Builds the workspace's tests with LLVM source-based coverage, in its own target directory,
//! instrumenting only the workspace's own crates (through a rustc wrapper, as cargo-llvm-cov
//! does), so dependencies build and run uninstrumented. The wrapper is the binary's
//! (`wrappers::rustc`); the constants here are what the build tells it.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::Message;

use crate::config::Selection;
use crate::error::SflError;
use crate::workspace::{Built, TestBinary, Workspace};

/// Set (to any value) when cargo-sfl runs as the rustc wrapper.
pub const WRAPPER_ENV: &str = "CARGO_SFL_RUSTC_WRAPPER";
/// Newline-separated manifest directories of the crates to instrument.
pub const INSTRUMENT_DIRS_ENV: &str = "CARGO_SFL_INSTRUMENT_DIRS";
/// Set for `--mutate`'s plain build: the wrapper caps the members' lints and adds no coverage.
pub const PLAIN_ENV: &str = "CARGO_SFL_PLAIN_BUILD";
/// rustc flags added to the workspace's own crates.
pub const COVERAGE_FLAGS: &[&str] = &[
    "-C",
    "instrument-coverage",
    "-C",
    "llvm-args=-runtime-counter-relocation",
    "--cfg",
    "coverage",
];

/// cargo sfl's runtime (`src/edges/runtime.c`), linked into the workspace's instrumented crates.
#[derive(Debug, Clone)]
pub struct Runtime {
    pub object: PathBuf,
    /// With SanitizerCoverage (edge profiles); else linked only for its counter updates.
    pub edges: bool,
    /// libtest's entry, which the runtime was compiled to wrap ([`crate::edges::harness`]).
    pub test_main: Option<String>,
}

/// Builds the selected tests with coverage (linking `runtime` when given, with edge
/// instrumentation when it says so), then, when the selection includes doctests, has rustdoc
/// build and keep those ([`crate::doctest`]); cargo's diagnostics go to the terminal.
/// `doctests` is asked, once the other tests are built, whether the doctests must be built too
/// (test selection skips them when it reuses every doctest's row).
pub fn build(
    ws: &Workspace,
    select: &Selection,
    runtime: Option<&Runtime>,
    doctests: &mut dyn FnMut(&Built) -> bool,
) -> Result<Built, SflError> {
    forget_other_roots(ws, select)?;
    let mut built = Built::default();
    let mut script_env = HashMap::new();
    if !select.doc {
        let cmd = instrumented_cargo(ws, select, runtime, &["test", "--no-run"])?;
        let status = stream(cmd, "compiling", select.cargo_messages, &mut script_env, |art| {
            add_artifact(ws, &mut built, art)
        })?;
        if !status.success() {
            return Err(SflError::BuildFailed);
        }
    }
    // cargo refuses `test --doc` when no selected package has a library (a binary-only crate).
    let libraries = select.doc || ws.selected(select).iter().any(|p| p.targets.iter().any(is_library));
    if select.doctests() && libraries && doctests(&built) {
        build_doctests(ws, select, runtime, &mut built, &mut script_env)?;
    }
    built.tests.sort_by(|a, b| a.id.cmp(&b.id));
    let config = config_env(&ws.root);
    for t in &mut built.tests {
        t.env = config.clone();
        t.env
            .extend(script_env.get(&ws.members[t.package].id).cloned().unwrap_or_default());
    }
    Ok(built)
}

/// Where a profile directory of the build records the workspace root its crates were built
/// from (`target/sfl/debug/.sfl-workspace-root`): it goes when the directory goes.
const ROOT_STAMP: &str = ".sfl-workspace-root";

/// Makes cargo rebuild the workspace's own crates when the build directory holds them as built
/// from another root: a workspace copied or moved with its target directory (a restored CI
/// cache, a moved checkout). cargo would reuse them, since it fingerprints a path package by
/// paths relative to the workspace and by modification times, which a copy keeps; but their
/// coverage maps, line tables and panic locations name the old root's files, so not one line
/// would be recognised as this workspace's. Only the members are cleaned (`cargo clean -p`):
/// dependencies name no workspace file and stay built. A profile directory without the record
/// (built by an older cargo sfl) is cleaned alike; one that does not exist has nothing to clean.
fn forget_other_roots(ws: &Workspace, select: &Selection) -> Result<(), SflError> {
    let profile_dir = ws.build_dir.join(if select.release { "release" } else { "debug" });
    let stamp = profile_dir.join(ROOT_STAMP);
    let root = ws.root.as_os_str().as_encoded_bytes();
    match std::fs::read(&stamp) {
        Ok(recorded) if recorded == root => return Ok(()),
        Ok(recorded) => {
            crate::ui::status(
                "Rebuilding",
                format!(
                    "the workspace's crates: {} holds them as built at {}, a copy of this workspace at another path",
                    ws.build_dir.display(),
                    String::from_utf8_lossy(&recorded)
                ),
            );
            clean_members(ws, select, &profile_dir)?;
        }
        Err(_) if profile_dir.join(".fingerprint").is_dir() => {
            crate::ui::detail(format!(
                "{} does not say where the workspace's crates were built: rebuilding them",
                profile_dir.display()
            ));
            clean_members(ws, select, &profile_dir)?;
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(&profile_dir)
        .and_then(|()| std::fs::write(&stamp, root))
        .map_err(|why| SflError::CannotWrite { path: stamp, why })
}

/// `cargo clean -p` of every member in `profile_dir`'s profile of the build directory; if cargo
/// cannot, the whole profile directory goes (dependencies are rebuilt too).
fn clean_members(ws: &Workspace, select: &Selection, profile_dir: &Path) -> Result<(), SflError> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("clean").arg("--target-dir").arg(&ws.build_dir);
    if let Some(p) = &select.manifest_path {
        cmd.arg("--manifest-path").arg(p);
    }
    if select.release {
        cmd.arg("--release");
    }
    for m in &ws.members {
        cmd.arg("-p").arg(&m.id.repr);
    }
    match cmd.stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        failed => {
            let why = match failed {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
                Err(e) => e.to_string(),
            };
            crate::ui::warn(format!(
                "`cargo clean -p` of the workspace's crates failed ({why}): removing {} instead",
                profile_dir.display()
            ));
            match std::fs::remove_dir_all(profile_dir) {
                Err(why) if why.kind() != std::io::ErrorKind::NotFound => Err(SflError::StaleBuild {
                    path: profile_dir.to_path_buf(),
                    why,
                }),
                _ => Ok(()),
            }
        }
    }
}

/// `cargo <args>` for the instrumented build: our target dir, the selection, cargo-sfl as the
/// rustc wrapper, cargo's JSON messages on stdout.
fn instrumented_cargo(
    ws: &Workspace,
    select: &Selection,
    runtime: Option<&Runtime>,
    args: &[&str],
) -> Result<Command, SflError> {
    let mut cmd = wrapped_cargo(ws, select, &ws.build_dir, args)?;
    // Passed through, cargo's messages carry rustc's diagnostics as JSON (for the editor);
    // else they are rendered on stderr.
    cmd.arg(if select.cargo_messages {
        "--message-format=json"
    } else {
        "--message-format=json-render-diagnostics"
    });
    match runtime {
        Some(rt) => cmd.env(crate::edges::RUNTIME_ENV, &rt.object),
        None => cmd.env_remove(crate::edges::RUNTIME_ENV),
    };
    match runtime {
        Some(rt) if !rt.edges => cmd.env(crate::edges::LINES_ONLY_ENV, "1"),
        _ => cmd.env_remove(crate::edges::LINES_ONLY_ENV),
    };
    match runtime.and_then(|rt| rt.test_main.as_deref()) {
        Some(symbol) => cmd.env(crate::edges::harness::TEST_MAIN_ENV, symbol),
        None => cmd.env_remove(crate::edges::harness::TEST_MAIN_ENV),
    };
    cmd.arg(if crate::ui::stderr_colors() {
        "--color=always"
    } else {
        "--color=never"
    });
    if crate::ui::verbosity() == crate::ui::Verbosity::Quiet {
        cmd.arg("--quiet");
    }
    Ok(cmd)
}

/// `cargo test --no-run` for `--mutate`'s plain build of a workspace copy: the selection,
/// `target` as the target dir, JSON messages on stdout, and cargo-sfl as the rustc wrapper
/// only to cap the members' lints (a mutant's unused value must not fail a
/// `#![deny(warnings)]` crate): no coverage.
pub(crate) fn plain_cargo(ws: &Workspace, select: &Selection, target: &Path) -> Result<Command, SflError> {
    let mut select = select.clone();
    select.doc = false;
    let mut cmd = wrapped_cargo(ws, &select, target, &["test", "--no-run"])?;
    cmd.args(["--message-format=json", "--color=never", "--quiet"])
        .env(PLAIN_ENV, "1")
        .env_remove(crate::edges::RUNTIME_ENV)
        .env_remove(crate::edges::harness::TEST_MAIN_ENV);
    Ok(cmd)
}

/// `cargo <args>` into `target` for the selection, with cargo-sfl as the rustc wrapper of the
/// workspace's members.
fn wrapped_cargo(ws: &Workspace, select: &Selection, target: &Path, args: &[&str]) -> Result<Command, SflError> {
    let exe = crate::platform::current_exe().map_err(SflError::OwnExecutable)?;
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(args).arg("--target-dir").arg(target);
    cargo_selection_args(&mut cmd, select, ws);
    let dirs: Vec<String> = ws
        .members
        .iter()
        .filter_map(|m| m.manifest_path.parent().map(|d| d.to_string()))
        .collect();
    cmd.env("RUSTC_WRAPPER", &exe)
        .env(WRAPPER_ENV, "1")
        .env(INSTRUMENT_DIRS_ENV, dirs.join("\n"));
    Ok(cmd)
}

/// Runs a cargo build, forwarding its stderr above a spinner, handing each artifact of the
/// JSON stream to `on_artifact` and collecting build scripts' `rustc-env`; with `pass_through`
/// (`--message-format json`), every line of cargo's JSON stream is printed on stdout as read.
fn stream(
    mut cmd: Command,
    what: &str,
    pass_through: bool,
    script_env: &mut HashMap<cargo_metadata::PackageId, Vec<(String, String)>>,
    mut on_artifact: impl FnMut(cargo_metadata::Artifact),
) -> Result<std::process::ExitStatus, SflError> {
    // cargo's own lines and rustc's diagnostics are forwarded above the progress spinner.
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(SflError::CargoSpawn)?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let forward = std::thread::spawn(move || {
        let mut summary = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // cargo's verdict on a doctest run ("doctest failed", "N targets failed:" and the
            // targets under it) is not ours: the build only compiled them.
            let t = line.trim_start();
            summary = t.starts_with("error: doctest failed")
                || (t.starts_with("error: ") && t.contains(" failed:"))
                || (summary && line.starts_with("    "));
            if !summary {
                crate::ui::line(&line);
            }
        }
    });
    let spinner = crate::ui::spinner("Building", what);
    let mut artifacts = 0;
    let mut out = std::io::stdout();
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        if pass_through {
            use std::io::Write as _;
            let _ = writeln!(out, "{line}");
        }
        let Ok(msg) = serde_json::from_str::<Message>(&line) else {
            continue;
        };
        match msg {
            Message::CompilerArtifact(art) => {
                artifacts += 1;
                spinner.set_message(format!("{artifacts} crates compiled, last {}", art.target.name));
                on_artifact(art);
            }
            Message::BuildScriptExecuted(script) => {
                script_env.insert(script.package_id, script.env);
            }
            _ => {}
        }
    }
    let status = child.wait().map_err(SflError::CargoWait)?;
    let _ = forward.join();
    spinner.finish_and_clear();
    Ok(status)
}

/// Records one artifact of the test build: a test binary of a member, or another executable.
pub(crate) fn add_artifact(ws: &Workspace, built: &mut Built, art: cargo_metadata::Artifact) {
    let Some(exe) = art.executable else { return };
    if built.tests.iter().any(|t| t.path == exe.as_std_path()) || built.others.iter().any(|o| o == exe.as_std_path()) {
        return;
    }
    let Some(package) = ws.members.iter().position(|m| m.id == art.package_id) else {
        return;
    };
    if !art.profile.test {
        built.others.push(exe.into_std_path_buf());
        return;
    }
    let member = &ws.members[package];
    let kind = art.target.kind.first().map(|k| k.to_string()).unwrap_or_default();
    let (id, nextest_kind) = match kind.as_str() {
        "proc-macro" => (member.name.to_string(), "proc-macro"),
        "lib" | "rlib" | "dylib" | "cdylib" | "staticlib" => (member.name.to_string(), "lib"),
        "test" => (format!("{}::{}", member.name, art.target.name), "test"),
        other => (format!("{}::{}/{}", member.name, other, art.target.name), other),
    };
    let custom_harness = has_custom_harness(member.manifest_path.as_std_path(), &kind, &art.target.name);
    built.tests.push(TestBinary {
        id,
        kind: nextest_kind.to_string(),
        target: art.target.name.to_string(),
        path: exe.into_std_path_buf(),
        package,
        custom_harness,
        env: Vec::new(),
        doctests: None,
    });
}

/// `cargo test --doc` with cargo-sfl as rustdoc: every library's doctests built with coverage
/// and kept, one binary `pkg::doctest/<lib>` each. When rustdoc cannot keep them, the
/// doctests run plainly instead (no coverage), with a warning.
fn build_doctests(
    ws: &Workspace,
    select: &Selection,
    runtime: Option<&Runtime>,
    built: &mut Built,
    script_env: &mut HashMap<cargo_metadata::PackageId, Vec<(String, String)>>,
) -> Result<(), SflError> {
    let base = ws.build_dir.join("doctests");
    // Kept from run to run (rustdoc's wrapper reuses a crate's doctests while their sources are
    // unchanged); what this run's rustdoc invocations mark is what is read.
    crate::doctest::forget_marks(&base);
    std::fs::create_dir_all(&base).map_err(|why| SflError::CannotCreate {
        path: base.clone(),
        why,
    })?;
    let exe = crate::platform::current_exe().map_err(SflError::OwnExecutable)?;
    let mut cmd = instrumented_cargo(ws, select, runtime, &["test", "--doc", "--no-fail-fast"])?;
    cmd.env(crate::doctest::RUSTDOC_WRAPPER_ENV, rustdoc())
        .env("RUSTDOC", &exe)
        .env(crate::doctest::DIR_ENV, &base);
    if select.standalone_doctests {
        cmd.env(crate::doctest::STANDALONE_ENV, "1");
    }
    let status = stream(cmd, "doctests", select.cargo_messages, script_env, |_| {})?;
    let suites = match crate::doctest::read_suites(&base) {
        Some(s) if !s.is_empty() || status.success() => s,
        // No library compiled, or a doctest build that failed before rustdoc tested anything.
        _ if select.doc && !status.success() && std::fs::read_dir(&base).is_ok_and(|mut d| d.next().is_none()) => {
            return Err(SflError::BuildFailed);
        }
        _ => {
            crate::ui::warn(
                "rustdoc could not build the doctests with coverage (it refused `--persist-doctests` or \
                 `--test-runtool`; a toolchain older than 1.83?): running them plainly with `cargo test --doc`; \
                 their results are reported, without coverage",
            );
            plain_doctests(ws, select)?
        }
    };
    for suite in suites {
        add_suite(ws, built, suite);
    }
    Ok(())
}

/// The rustdoc cargo would run: `$RUSTDOC`, else `rustdoc` (rustup picks the toolchain).
fn rustdoc() -> OsString {
    std::env::var_os("RUSTDOC").unwrap_or_else(|| "rustdoc".into())
}

/// `cargo test --doc`, uninstrumented in a directory of its own: every doctest's result.
fn plain_doctests(ws: &Workspace, select: &Selection) -> Result<Vec<crate::doctest::DocSuite>, SflError> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.args(["test", "--doc", "--no-fail-fast", "--color=never"]);
    cmd.arg("--target-dir").arg(ws.target_dir.join("doctests-plain"));
    cargo_selection_args(&mut cmd, select, ws);
    // Names on their own lines (libtest turns terse for large suites).
    cmd.args(["--", "--format=pretty"]);
    cmd.env_remove("RUSTC_WRAPPER")
        .env_remove(WRAPPER_ENV)
        .env_remove(crate::doctest::RUSTDOC_WRAPPER_ENV);
    let out = ws.target_dir.join("doctests-plain.out");
    let spinner = crate::ui::spinner("Running", "doctests without coverage");
    // Its own doctests' timeouts are libtest's; this bounds a hang of the whole run.
    let captured = crate::process::run_captured(cmd, &out, std::time::Duration::from_secs(3600));
    spinner.finish_and_clear();
    let captured = captured.map_err(SflError::PlainDoctests)?;
    let suites = crate::doctest::plain_results(&captured.output);
    if suites.is_empty() && !captured.status.is_some_and(|s| s.success()) {
        for line in captured.output.lines() {
            crate::ui::line(line);
        }
        return Err(SflError::BuildFailed);
    }
    Ok(suites)
}

/// Whether `t` is a package's library, of whatever crate types (`lib`, or e.g. `cdylib` and
/// `rlib` together, whose doctests cargo runs too).
fn is_library(t: &cargo_metadata::Target) -> bool {
    use cargo_metadata::TargetKind as K;
    t.kind
        .iter()
        .any(|k| matches!(k, K::Lib | K::RLib | K::DyLib | K::CDyLib | K::StaticLib | K::ProcMacro))
}

/// One library's doctests as a test binary of its package (matched by the lib's crate name).
fn add_suite(ws: &Workspace, built: &mut Built, suite: crate::doctest::DocSuite) {
    let lib = ws.members.iter().enumerate().find_map(|(i, m)| {
        m.targets
            .iter()
            .find(|t| is_library(t) && t.name.replace('-', "_") == suite.crate_name)
            .map(|t| (i, t.name.clone()))
    });
    let Some((package, lib)) = lib else {
        crate::ui::warn(format!(
            "doctests of crate {} belong to no workspace member; they are not run",
            suite.crate_name
        ));
        return;
    };
    // Every executable's coverage map is read when a profile names it (by build-id).
    let mut exes: Vec<PathBuf> = suite.tests.iter().map(|t| t.exe.clone()).collect();
    exes.dedup();
    let path = exes.first().cloned().unwrap_or_default();
    built.others.extend(exes.into_iter().skip(1));
    built.tests.push(TestBinary {
        id: format!("{}::doctest/{lib}", ws.members[package].name),
        kind: "doctest".into(),
        target: lib.to_string(),
        path,
        package,
        custom_harness: false,
        env: Vec::new(),
        doctests: Some(suite),
    });
}

/// The `[env]` tables of cargo's configuration files that apply in `dir` (`.cargo/config.toml`
/// or `.cargo/config` in it and every parent, then `$CARGO_HOME/config.toml`; nearer files
/// win), as cargo applies them: a variable the environment already has is kept unless
/// `force = true`; `relative = true` resolves the value against the directory holding `.cargo`.
fn config_env(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<PathBuf> = dir
        .ancestors()
        .flat_map(|d| [d.join(".cargo/config.toml"), d.join(".cargo/config")])
        .filter(|f| f.is_file())
        .collect();
    if let Some(home) = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
    {
        let file = home.join("config.toml");
        if file.is_file() && !files.contains(&file) {
            files.push(file);
        }
    }
    let mut env: Vec<(String, String)> = Vec::new();
    // Farthest first, so nearer files override.
    for file in files.iter().rev() {
        let Ok(table) = std::fs::read_to_string(file).map(|t| t.parse::<toml::Table>()) else {
            continue;
        };
        let Some(toml::Value::Table(vars)) = table.ok().and_then(|mut t| t.remove("env")) else {
            continue;
        };
        let base = file.parent().and_then(Path::parent).unwrap_or(dir);
        for (key, value) in vars {
            let (value, force, relative) = match value {
                toml::Value::String(v) => (v, false, false),
                toml::Value::Table(t) => (
                    t.get("value").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
                    t.get("force").and_then(toml::Value::as_bool).unwrap_or(false),
                    t.get("relative").and_then(toml::Value::as_bool).unwrap_or(false),
                ),
                _ => continue,
            };
            if !force && std::env::var_os(&key).is_some() {
                continue;
            }
            let value = if relative {
                base.join(&value).to_string_lossy().into_owned()
            } else {
                value
            };
            env.retain(|(k, _)| *k != key);
            env.push((key, value));
        }
    }
    env
}

fn cargo_selection_args(cmd: &mut Command, s: &Selection, ws: &Workspace) {
    if let Some(p) = &s.manifest_path {
        cmd.arg("--manifest-path").arg(p);
    }
    for p in &s.package {
        cmd.args(["--package", ws.package_spec(p)]);
    }
    if s.workspace {
        cmd.arg("--workspace");
    }
    for e in &s.exclude {
        cmd.args(["--exclude", e]);
    }
    for (flag, on) in [
        ("--lib", s.lib),
        ("--bins", s.bins),
        ("--tests", s.tests),
        ("--examples", s.examples),
        ("--benches", s.benches),
        ("--all-targets", s.all_targets),
        ("--all-features", s.all_features),
        ("--no-default-features", s.no_default_features),
        ("--release", s.release),
    ] {
        if on {
            cmd.arg(flag);
        }
    }
    for b in &s.bin {
        cmd.args(["--bin", b]);
    }
    for (flag, names) in [("--test", &s.test), ("--example", &s.example), ("--bench", &s.bench)] {
        for name in names {
            cmd.args([flag, name]);
        }
    }
    for f in &s.features {
        cmd.args(["--features", f]);
    }
}

/// Reads the package manifest to see whether the target has `harness = false`
/// (cargo metadata does not say).
fn has_custom_harness(manifest: &Path, kind: &str, name: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(manifest) else {
        return false;
    };
    let Ok(doc) = text.parse::<toml::Table>() else {
        return false;
    };
    let harness_false = |t: &toml::Value| t.get("harness").and_then(toml::Value::as_bool) == Some(false);
    let section = match kind {
        "test" => "test",
        "bench" => "bench",
        "bin" => "bin",
        "example" => "example",
        _ => return doc.get("lib").is_some_and(harness_false),
    };
    doc.get(section).and_then(toml::Value::as_array).is_some_and(|targets| {
        targets.iter().any(|t| {
            let tname = t.get("name").and_then(toml::Value::as_str).map(|n| n.replace('-', "_"));
            tname.as_deref() == Some(&name.replace('-', "_")) && harness_false(t)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_false_is_read_from_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let m = dir.path().join("Cargo.toml");
        std::fs::write(
            &m,
            "[package]\nname='x'\n[[test]]\nname = \"custom-one\"\nharness = false\n[[test]]\nname='normal'\n",
        )
        .unwrap();
        assert!(has_custom_harness(&m, "test", "custom-one"));
        assert!(has_custom_harness(&m, "test", "custom_one"));
        assert!(!has_custom_harness(&m, "test", "normal"));
        assert!(!has_custom_harness(&m, "lib", "x"));
    }
}
