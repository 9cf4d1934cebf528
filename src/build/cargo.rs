//! Running cargo for the instrumented build: the command (our target dir, the selection,
//! cargo-sfl as the rustc wrapper of the workspace's members, the runtime), its JSON stream
//! (artifacts, build scripts' variables, whether the build failed), and what each artifact is.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cargo_metadata::Message;

use crate::config::Selection;
use crate::error::SflError;
use crate::workspace::{Built, TestBinary, Workspace};

/// Set (to any value) when cargo-sfl runs as the rustc wrapper.
pub const WRAPPER_ENV: &str = "CARGO_SFL_RUSTC_WRAPPER";
/// The rustc wrapper `cargo test` would use ([`super::config::rustc_wrapper`]), which cargo
/// sfl, in its place as cargo's wrapper, runs rustc through.
pub const USER_WRAPPER_ENV: &str = "CARGO_SFL_USER_RUSTC_WRAPPER";

/// Newline-separated manifest directories of the crates to instrument.
pub const INSTRUMENT_DIRS_ENV: &str = "CARGO_SFL_INSTRUMENT_DIRS";

/// Newline-separated manifest directories of the members whose code runs while compiling
/// ([`Workspace::compile_time_members`]): their libraries are linked into build scripts and
/// proc macros as well as the tests (one artifact may serve both), so they are instrumented
/// position independent, and build scripts and proc macros link the edge callbacks' stub.
pub const COMPILE_TIME_DIRS_ENV: &str = "CARGO_SFL_COMPILE_TIME_DIRS";

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
    /// `std::env::vars` and `vars_os`, space-separated, which the runtime was compiled to wrap.
    pub env_iteration: Option<String>,
}

/// `cargo <args>` for the instrumented build: our target dir, the selection, cargo-sfl as the
/// rustc wrapper, cargo's JSON messages on stdout.
pub(super) fn instrumented_cargo(
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
    match runtime.and_then(|rt| rt.env_iteration.as_deref()) {
        Some(symbols) => cmd.env(crate::edges::harness::ENV_ITERATION_ENV, symbols),
        None => cmd.env_remove(crate::edges::harness::ENV_ITERATION_ENV),
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
        .env_remove(crate::edges::harness::TEST_MAIN_ENV)
        .env_remove(crate::edges::harness::ENV_ITERATION_ENV);
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
    let compile_time: Vec<String> = ws
        .compile_time_members()
        .iter()
        .filter_map(|m| m.manifest_path.parent().map(|d| d.to_string()))
        .collect();
    // A build script, or the compiler running a proc macro, that links a compile-time member's
    // instrumented library writes that library's profile as it exits: nowhere, instead of a
    // `default_*.profraw` in the package.
    cmd.env("LLVM_PROFILE_FILE", "/dev/null")
        .env("RUSTC_WRAPPER", &exe)
        .env(WRAPPER_ENV, "1")
        .env(INSTRUMENT_DIRS_ENV, dirs.join("\n"))
        .env(COMPILE_TIME_DIRS_ENV, compile_time.join("\n"));
    let cwd = super::config::current_dir(&ws.root);
    match super::config::rustc_wrapper(&cwd, &select.cargo_config).filter(|w| !same_file(w, &exe)) {
        Some(user) => cmd.env(USER_WRAPPER_ENV, user),
        None => cmd.env_remove(USER_WRAPPER_ENV),
    };
    Ok(cmd)
}

/// Whether `a` and `b` name one file (a wrapper that is cargo-sfl itself is not chained).
fn same_file(a: &Path, b: &Path) -> bool {
    a == b || a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a))
}

/// Runs a cargo build, forwarding its stderr above a spinner, handing each artifact of the
/// JSON stream to `on_artifact` and collecting build scripts' `rustc-env`; with `pass_through`
/// (`--message-format json`), every line of cargo's JSON stream is printed on stdout as read.
pub(super) fn stream(
    mut cmd: Command,
    what: &str,
    pass_through: bool,
    script_env: &mut HashMap<cargo_metadata::PackageId, Vec<(String, String)>>,
    mut on_artifact: impl FnMut(cargo_metadata::Artifact),
) -> Result<Streamed, SflError> {
    // cargo's own lines and rustc's diagnostics are forwarded above the progress spinner.
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = crate::process::spawn_build(&mut cmd).map_err(SflError::CargoSpawn)?;
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let doc_only = cmd.get_args().any(|a| a == "--doc");
    let forward = std::thread::spawn(move || {
        let mut summary = false;
        let mut diagnostics = Diagnostics::default();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            // cargo's verdict on a doctest run ("doctest failed", "N targets failed:" and the
            // targets under it) is not ours: the build only compiled them.
            let t = line.trim_start();
            summary = t.starts_with("error: doctest failed")
                || (t.starts_with("error: ") && t.contains(" failed:"))
                || (summary && line.starts_with("    "));
            // Nor its "Running unittests src/lib.rs (...)" of a test binary it hands to the
            // runner that does nothing (a `Running \`rustc ...\`` of `cargo -v` is shown).
            let ran = t.starts_with("Running ") && !t.starts_with("Running `");
            // cargo's "Doc-tests NAME" announces a run that is not cargo's here; and a build of
            // the doctests alone (`--doc`) runs while the other tests run, where its "Finished …"
            // would land among their progress lines.
            let aside = t.starts_with("Doc-tests ") || (doc_only && t.starts_with("Finished "));
            if !summary && !ran && !aside {
                diagnostics.forward(line).iter().for_each(|l| crate::ui::line(l));
            }
        }
        diagnostics.flush().iter().for_each(|l| crate::ui::line(l));
    });
    let spinner = crate::ui::spinner("Building", what);
    let mut artifacts = 0;
    let mut build_failed = false;
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
            Message::BuildFinished(finished) => build_failed = !finished.success,
            _ => {}
        }
    }
    let exit = child.wait().map_err(SflError::CargoWait);
    crate::process::untrack_build(child.id());
    let exit = exit?;
    let _ = forward.join();
    spinner.finish_and_clear();
    Ok(Streamed { exit, build_failed })
}

/// rustc's diagnostics as cargo renders them on stderr, each printed once per run: a run
/// invokes cargo more than once (the tests, the doctests), and each invocation replays the
/// warnings of the crates it finds built (stats_alloc's showed four or five times with `-q`).
/// A diagnostic opens with a line starting `warning:` or `error:` and ends at the blank line
/// after it; one that points at code (a ` --> file:line` line, indented by the width of its
/// line numbers) is printed once per run, whole. Anything else passes as it is: cargo's status
/// lines, its one-line summaries, and messages that point at no code (a manifest's deprecated
/// key, with the dependency it is in on the next line).
#[derive(Default)]
struct Diagnostics {
    /// The diagnostic being read (its lines so far).
    open: Vec<String>,
}

impl Diagnostics {
    /// The diagnostics already printed by this process.
    fn printed() -> std::sync::MutexGuard<'static, std::collections::HashSet<String>> {
        static PRINTED: std::sync::OnceLock<std::sync::Mutex<std::collections::HashSet<String>>> =
            std::sync::OnceLock::new();
        PRINTED
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The lines to print now that `line` was read.
    fn forward(&mut self, line: String) -> Vec<String> {
        let plain = console::strip_ansi_codes(&line).into_owned();
        let opens = plain.starts_with("warning:") || plain.starts_with("error:");
        // cargo's status lines: a right-aligned verb (`   Compiling`, `    Finished`).
        let status = {
            let t = plain.trim_start();
            plain.starts_with(' ')
                && t.split(' ')
                    .next()
                    .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_uppercase()))
        };
        let mut out = Vec::new();
        if !self.open.is_empty() {
            if opens || status {
                out = self.flush();
            } else {
                self.open.push(line);
                return if plain.is_empty() { self.flush() } else { out };
            }
        }
        if opens {
            self.open.push(line);
        } else {
            out.push(line);
        }
        out
    }

    /// The diagnostic read so far, unless it points at code and this run printed it already.
    fn flush(&mut self) -> Vec<String> {
        let lines = std::mem::take(&mut self.open);
        let points_at_code = lines
            .iter()
            .any(|l| console::strip_ansi_codes(l).trim_start().starts_with("--> "));
        if points_at_code {
            let key = console::strip_ansi_codes(&lines.join("\n")).into_owned();
            if !Self::printed().insert(key) {
                return Vec::new();
            }
        }
        lines
    }
}

/// How a cargo invocation ended.
pub(super) struct Streamed {
    pub(super) exit: std::process::ExitStatus,
    /// cargo said the build failed (its `build-finished` message), before running anything.
    pub(super) build_failed: bool,
}

impl Streamed {
    /// A build-only invocation (`--no-run`) succeeded.
    pub(super) fn built(&self) -> bool {
        self.exit.success() && !self.build_failed
    }
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
        runner: Vec::new(),
        doctests: None,
    });
}

pub(super) fn cargo_selection_args(cmd: &mut Command, s: &Selection, ws: &Workspace) {
    cmd.args(&ws.cargo_flags);
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
    if let Some(p) = &s.profile {
        cmd.args(["--profile", p]);
    }
    if let Some(t) = &s.target {
        cmd.args(["--target", t]);
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

    /// What two cargo invocations print of the same stderr, each through its own reader.
    fn printed_twice(stderr: &str) -> (Vec<String>, Vec<String>) {
        let read = || {
            let mut d = Diagnostics::default();
            let mut out: Vec<String> = stderr.lines().flat_map(|l| d.forward(l.to_string())).collect();
            out.extend(d.flush());
            out
        };
        (read(), read())
    }

    #[test]
    fn a_diagnostic_replayed_by_a_later_invocation_prints_once() {
        let stderr = "   Compiling w v0.1.0\n\
                      warning: unused variable: `replayed_once`\n \
                      --> src/lib.rs:6:9\n  |\n6 |     let replayed_once = 5;\n  |\n\n\
                      warning: `w` (lib) generated 1 warning for replayed_once\n\
                      \x20   Finished `test` profile\n";
        let (first, second) = printed_twice(stderr);
        assert_eq!(first.len(), 9, "{first:#?}");
        assert_eq!(first[1], "warning: unused variable: `replayed_once`");
        assert_eq!(first[6], "", "the blank line ends it");
        assert_eq!(first[7], "warning: `w` (lib) generated 1 warning for replayed_once");
        // The second invocation prints its own status lines and cargo's summary, not the
        // diagnostic again.
        assert_eq!(
            second,
            [
                "   Compiling w v0.1.0",
                "warning: `w` (lib) generated 1 warning for replayed_once",
                "    Finished `test` profile"
            ]
        );
    }

    /// Line numbers of three digits indent the arrow further; a message that points at no
    /// code is printed whole each time, its second line with it (before, such headers were
    /// taken for one-line messages and dropped as repeats, leaving their bodies headless).
    #[test]
    fn wide_line_numbers_and_messages_without_code_keep_their_headers() {
        let stderr = "warning: hiding a lifetime in wide_numbers\n   \
                      --> src/lib.rs:932:17\n    |\n932 |     fn f(&self) -> Iter {\n    |\n\n\
                      warning: `default_features` is deprecated (no_code)\n  \
                      (in the `futures-core` dependency)\n\
                      warning: `default_features` is deprecated (no_code)\n  \
                      (in the `futures-sink` dependency)\n";
        let (first, second) = printed_twice(stderr);
        assert_eq!(first.len(), 10, "{first:#?}");
        assert_eq!(first[1], "   --> src/lib.rs:932:17");
        assert_eq!(
            second,
            [
                "warning: `default_features` is deprecated (no_code)",
                "  (in the `futures-core` dependency)",
                "warning: `default_features` is deprecated (no_code)",
                "  (in the `futures-sink` dependency)"
            ]
        );
    }

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
