//! What the first run's checks and the second run's share: a crate of the corpus, the commands
//! both run on it, and the edits that inject a fault.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// One crate of the corpus.
pub(super) struct Crate {
    pub(super) name: &'static str,
    pub(super) version: &'static str,
    /// Published crates assembled into one workspace (members), instead of `name` alone.
    pub(super) members: &'static [(&'static str, &'static str)],
    /// The shapes it stands for, checked against its sources.
    pub(super) shapes: &'static [&'static str],
    /// Extra flags for both `cargo test` and `cargo sfl`.
    pub(super) flags: &'static [&'static str],
    /// The file (from the workspace root) whose first fault-revealing mutation is injected.
    pub(super) fault_file: &'static str,
    /// Its tests run binaries they find under the crate's own `target/` (duct's tests run
    /// `cargo build`, then `target/debug/NAME`): the copy gets a `target` link to the shared
    /// target dir, where both tools build.
    pub(super) target_link: bool,
}

pub(super) const fn krate(
    name: &'static str,
    version: &'static str,
    shapes: &'static [&'static str],
    flags: &'static [&'static str],
    fault_file: &'static str,
) -> Crate {
    Crate {
        name,
        version,
        members: &[],
        shapes,
        flags,
        fault_file,
        target_link: false,
    }
}

/// Where every crate of the corpus builds.
pub(super) fn target_dir() -> PathBuf {
    crate::root().join("target/bench/corpus/target")
}

pub(super) fn cargo(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO"));
    crate::default_env(&mut c)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_TERM_COLOR", "never");
    c
}

pub(super) fn sfl_cmd(sfl: &Path, dir: &Path) -> Command {
    let mut c = Command::new(sfl);
    crate::default_env(&mut c)
        .arg("sfl")
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_TERM_COLOR", "never");
    c
}

/// A command's exit code, merged stdout and stderr, and wall time; killed (with the processes
/// it started) after `limit`, then the code is `None`.
pub(crate) struct Ran {
    pub(crate) code: Option<i32>,
    pub(crate) output: String,
    pub(crate) secs: f64,
}

pub(crate) fn run_merged(cmd: &mut Command, limit: Duration) -> Result<Ran> {
    let (mut reader, writer) = std::io::pipe()?;
    cmd.stdout(writer.try_clone()?)
        .stderr(writer)
        .stdin(Stdio::null())
        .process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn().with_context(|| format!("cannot run {cmd:?}"))?;
    // The command keeps copies of the pipe's write end: only the child's may remain.
    let program = format!("{cmd:?}");
    let _ = std::mem::replace(cmd, Command::new("true"));
    let reading = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = reader.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    });
    let code = loop {
        if let Some(status) = child.try_wait()? {
            break status.code();
        }
        if start.elapsed() > limit {
            eprintln!("   killed after {limit:?}: {program}");
            crate::kill_group(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let secs = start.elapsed().as_secs_f64();
    // What the command left running in its process group (duct's tests leave grandchildren
    // that sleep for days) holds the pipe open, and the read below would never end: killed.
    let _ = Command::new("kill")
        .args(["-s", "KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let output = reading.join().unwrap_or_default();
    Ok(Ran { code, output, secs })
}

pub(super) fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A mutation: negate a comparison, swap `&&`/`||`, `true`/`false`, `is_some`/`is_none`.
pub(super) const MUTATIONS: &[(&str, &str)] = &[
    (" == ", " != "),
    (" != ", " == "),
    (" <= ", " > "),
    (" >= ", " < "),
    (" < ", " >= "),
    (" > ", " <= "),
    (" && ", " || "),
    (" || ", " && "),
    (".is_some()", ".is_none()"),
    (".is_none()", ".is_some()"),
    ("(true)", "(false)"),
    (" true", " false"),
    (" false", " true"),
];

/// Candidate mutations of `text`, in line order: (1-based line, mutated line). Comments and
/// everything from the first `#[cfg(test)]` on are left alone.
pub(super) fn fault_candidates(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        if code.starts_with("//") || code.starts_with("/*") || code.starts_with('*') || code.starts_with("#[") {
            continue;
        }
        // Leave string literals alone: only text before a quote is mutated.
        let end = line.find('"').unwrap_or(line.len());
        let mutated = MUTATIONS.iter().find_map(|(from, to)| {
            let at = line[..end].find(from)?;
            Some(format!("{}{to}{}", &line[..at], &line[at + from.len()..]))
        });
        if let Some(m) = mutated {
            out.push((i + 1, m));
        }
    }
    out
}

pub(super) fn with_line(text: &str, line: usize, new: &str) -> String {
    let mut out: Vec<&str> = text.lines().collect();
    out[line - 1] = new;
    let mut s = out.join("\n");
    if text.ends_with('\n') {
        s.push('\n');
    }
    s
}

/// Where the pristine copy of an edited file of the crate (`file` from its workspace root) is
/// kept while an edit is in place: outside the crate, so that the copy is no file of the
/// package a run of cargo sfl could see.
pub(super) fn backup(c: &Crate, file: &str) -> PathBuf {
    target_dir().join("corpus-backup").join(c.name).join(file)
}

/// Puts back every pristine file an interrupted run left a copy of.
pub(super) fn restore_sources(dir: &Path, c: &Crate) -> Result<()> {
    fn walk(from: &Path, to: &Path) -> Result<()> {
        for e in std::fs::read_dir(from)?.flatten() {
            let (src, dst) = (e.path(), to.join(e.file_name()));
            if src.is_dir() {
                walk(&src, &dst)?;
            } else {
                std::fs::rename(&src, &dst)?;
            }
        }
        Ok(())
    }
    let saved = target_dir().join("corpus-backup").join(c.name);
    if saved.exists() {
        walk(&saved, dir)?;
    }
    Ok(())
}

/// A saved spectra file, loaded.
pub(super) fn cargo_sfl_spectra(path: &Path) -> Result<cargo_sfl::spectra::Spectra> {
    cargo_sfl::spectra::Spectra::load(path).with_context(|| format!("cannot load {}", path.display()))
}
