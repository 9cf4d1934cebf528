//! The plain (uninstrumented) build of the workspace's copy, and its tests run against each
//! mutant: an outcome and a failure message, without columns, per run.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use cargo_metadata::Message;

use super::copy::WorkspaceCopy;
use super::schema;
use crate::config::RunConfig;
use crate::error::SflError;
use crate::spectra::{Outcome, Spectra};
use crate::workspace::{Built, TestBinary};

/// A failure message without column numbers (`src/a.rs:10:5` → `src/a.rs:10`): a mutated line
/// is longer, so a panic on it has another column.
fn normalise(message: Option<&str>) -> String {
    let text = message.unwrap_or("");
    let mut out = String::with_capacity(text.len());
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        // `:<digits>:<digits>` → `:<digits>`.
        if bytes[i] == b':' {
            let d1 = bytes[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
            if d1 > 0 && bytes.get(i + 1 + d1) == Some(&b':') {
                let d2 = bytes[i + 2 + d1..].iter().take_while(|b| b.is_ascii_digit()).count();
                if d2 > 0 {
                    out.push_str(&text[i..i + 1 + d1]);
                    i += 2 + d1 + d2;
                    continue;
                }
            }
        }
        let ch = text[i..].chars().next().expect("in bounds");
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A test of the spectra as the plain build runs it.
pub(super) struct PlainTest {
    /// Index into `Spectra::tests`.
    pub record: usize,
    binary: usize,
    name: Option<String>,
    timeout: Duration,
}

/// A compiler error's primary position.
#[derive(Debug)]
pub(super) struct CompileError {
    pub file: PathBuf,
    pub line: usize,
    pub column_start: usize,
    pub column_end: usize,
    pub line_end: usize,
}

/// `cargo test --no-run` of the copy without coverage (lints capped: a mutant's unused
/// variable must not fail a `#![deny(warnings)]` crate); its test binaries and its errors.
pub(super) fn build_plain(cfg: &RunConfig, copy: &WorkspaceCopy) -> Result<(Built, Vec<CompileError>), SflError> {
    let copy_ws = &copy.ws;
    let mut select = cfg.selection.clone();
    select.manifest_path = Some(copy.manifest.clone());
    let mut cmd = crate::build::plain_cargo(copy_ws, &select, &copy.target)?;
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().map_err(SflError::CargoSpawn)?;
    let stdout = child.stdout.take().expect("piped");
    let mut built = Built::default();
    let mut errors = Vec::new();
    for msg in Message::parse_stream(BufReader::new(stdout)).map_while(Result::ok) {
        match msg {
            Message::CompilerArtifact(art) => crate::build::add_artifact(copy_ws, &mut built, art),
            Message::CompilerMessage(m) if m.message.level == cargo_metadata::diagnostic::DiagnosticLevel::Error => {
                for s in m.message.spans.iter().filter(|s| s.is_primary) {
                    let f = Path::new(&s.file_name);
                    let file = if f.is_absolute() {
                        f.to_path_buf()
                    } else {
                        copy_ws.root.join(f)
                    };
                    errors.push(CompileError {
                        file,
                        line: s.line_start,
                        line_end: s.line_end,
                        column_start: s.column_start,
                        column_end: s.column_end,
                    });
                }
            }
            _ => {}
        }
    }
    let status = child.wait().map_err(SflError::CargoWait)?;
    crate::build::configure(&mut built, &copy_ws.root, &select.cargo_config);
    if !status.success() && errors.is_empty() {
        return Err(SflError::MutatePlainBuild { copy: copy.src.clone() });
    }
    Ok((built, errors))
}

/// The spectra's tests that the plain build can run (doctests are not rebuilt), with their
/// timeouts: ten times what the test took under coverage, at least two seconds.
pub(super) fn plain_tests(spectra: &Spectra, built: &Built, cfg: &RunConfig) -> Vec<PlainTest> {
    let cap = cfg.execution.timeout();
    spectra
        .tests
        .iter()
        .enumerate()
        .filter(|(_, t)| t.outcome.ran())
        .filter_map(|(i, t)| {
            let binary = built.tests.iter().position(|b| b.id == t.binary)?;
            let b = &built.tests[binary];
            let name = (!(b.custom_harness && t.name == "main")).then(|| t.name.clone());
            let timeout = (Duration::from_millis(t.duration_ms) * 10)
                .max(Duration::from_secs(2))
                .min(cap);
            Some(PlainTest {
                record: i,
                binary,
                name,
                timeout,
            })
        })
        .collect()
}

/// Runs each `(mutant, test)` in its own process, on all cores; outcome and normalised
/// message of each, in order.
pub(super) fn run_all(
    runs: &[(u32, &PlainTest)],
    built: &Built,
    copy: &WorkspaceCopy,
    cfg: &RunConfig,
) -> Vec<(Outcome, String)> {
    let jobs = cfg.execution.jobs.unwrap_or_else(crate::platform::cpus);
    let mut out = vec![(Outcome::Passed, String::new()); runs.len()];
    crate::run::parallel(
        runs,
        jobs,
        |i, (id, t)| {
            let mut bin: TestBinary = built.tests[t.binary].clone();
            bin.env.push((schema::MUTANT_ENV.to_string(), id.to_string()));
            let job = crate::run::Job {
                binary: t.binary,
                name: t.name.clone(),
                ignored: cfg.execution.ignored != crate::config::Ignored::Skip,
            };
            let dir = copy.base.join("runs").join(i.to_string());
            let limits = crate::run::Limits {
                timeout: t.timeout,
                leak_timeout: Duration::ZERO,
                leak_fails: false,
            };
            let got = crate::run::run_test(&crate::run::TestRun {
                job: &job,
                bin: &bin,
                pkg: &copy.ws.members[bin.package],
                target_dir: &copy.target,
                profile: &cfg.selection.profile_dir(),
                dir: &dir,
                limits,
                threads: 1,
                edges: false,
                servers: None,
                stacks: None,
                nocapture: false,
            });
            let _ = std::fs::remove_dir_all(&dir);
            match got {
                Ok(f) => (f.outcome, normalise(f.message.as_deref())),
                Err(e) => (Outcome::Crashed, e.to_string()),
            }
        },
        |i, r| out[i] = r,
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_compared_without_columns() {
        assert_eq!(
            normalise(Some("panicked at src/lib.rs:10:5:\nindex out of bounds: 3 > 2")),
            "panicked at src/lib.rs:10:\nindex out of bounds: 3 > 2"
        );
        assert_eq!(normalise(Some("a: 1:x")), "a: 1:x");
        assert_eq!(normalise(None), "");
    }
}
