//! The doctests' build: rustdoc through cargo-sfl ([`crate::doctest`]) in `cargo test --doc`, or
//! in the same `cargo test` as the other tests when every test runs; rustdoc that cannot keep
//! them runs them plainly.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;

use super::cargo::{WRAPPER_ENV, add_artifact, cargo_selection_args, stream};
use crate::config::Selection;
use crate::error::SflError;
use crate::workspace::has_doctests;
use crate::workspace::{Built, TestBinary, Workspace};

/// Whether [`build`] builds the doctests.
pub enum Doctests<'a> {
    /// Always (a run of every test): the tests and the doctests are built by one `cargo test`
    /// whose test binaries run through a runner that does nothing, with `host` the toolchain's
    /// host triple (`rustc -vV`), whose runner that is; without it, one cargo invocation each.
    Always { host: Option<&'a str> },
    /// Never (a narrowed build of test targets).
    Never,
    /// Not by this call but by the next one, which may start them early
    /// ([`super::head_start`]).
    Later,
    /// Asked once the other tests are built (test selection skips them when it reuses every
    /// doctest's row).
    Ask(&'a mut dyn FnMut(&Built) -> bool),
}

/// The host triple `rustc -vV` names.
pub fn host_triple(rustc_vv: &str) -> Option<&str> {
    rustc_vv.lines().find_map(|l| l.strip_prefix("host: ")).map(str::trim)
}

/// The variable that makes `true` the runner of the host's test binaries, for a `cargo test`
/// that builds the tests and the doctests at once: cargo builds every test target and the
/// libraries the doctests link (in parallel, as `cargo test` does), "runs" each test binary
/// through `true`, then has rustdoc build the doctests through cargo-sfl ([`build_doctests`]):
/// one resolution and one pass over the fingerprints instead of two invocations. `None` when
/// the host is not known or the build targets another triple (`CARGO_BUILD_TARGET`): then two
/// invocations.
pub(super) fn idle_runner(host: Option<&str>) -> Option<String> {
    let host = host?;
    if std::env::var("CARGO_BUILD_TARGET").is_ok_and(|t| t != host) {
        return None;
    }
    Some(format!(
        "CARGO_TARGET_{}_RUNNER",
        host.to_uppercase().replace(['-', '.'], "_")
    ))
}

/// `cmd` (`cargo test --doc`, or a whole `cargo test` whose test binaries run through a
/// runner that does nothing) with cargo-sfl as rustdoc: every library's doctests built with
/// coverage and kept, one binary `pkg::doctest/<lib>` each; the other tests' executables, when
/// `cmd` builds them, are added as they come. A build that fails before running anything is
/// [`SflError::BuildFailed`]. When rustdoc cannot keep the doctests, they run plainly instead
/// (no coverage), with a warning.
pub(super) fn build_doctests(
    ws: &Workspace,
    select: &Selection,
    mut cmd: Command,
    built: &mut Built,
    script_env: &mut HashMap<cargo_metadata::PackageId, Vec<(String, String)>>,
    head: &mut super::head_start::HeadStarts,
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
    cmd.env(crate::doctest::RUSTDOC_WRAPPER_ENV, rustdoc())
        .env("RUSTDOC", &exe)
        .env(crate::doctest::DIR_ENV, &base);
    if select.standalone_doctests {
        cmd.env(crate::doctest::STANDALONE_ENV, "1");
    }
    if select.merged_doctests {
        cmd.env(crate::doctest::MERGED_ENV, "1");
    }
    let status = stream(cmd, "doctests", select.cargo_messages, script_env, |art| {
        head.written(&art);
        add_artifact(ws, built, art)
    })?;
    if status.build_failed {
        return Err(SflError::BuildFailed);
    }
    let status = status.exit;
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
    let build_only: usize = suites.iter().map(|s| s.build_only.len()).sum();
    if build_only > 0 {
        crate::ui::status(
            "Checked",
            format!(
                "{}: {} the test (`no_run`, `compile_fail`), and {} passed; cargo test counts {} \
                 as passed, here {} nothing to run or rank",
                crate::ui::counted(build_only, "doctest", "doctests"),
                if build_only == 1 {
                    "its build is"
                } else {
                    "their build is"
                },
                if build_only == 1 { "it" } else { "they" },
                if build_only == 1 { "it" } else { "them" },
                if build_only == 1 { "it has" } else { "they have" }
            ),
        );
    }
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

/// One library's doctests as a test binary of its package (matched by the lib's crate name).
fn add_suite(ws: &Workspace, built: &mut Built, suite: crate::doctest::DocSuite) {
    let lib = ws.members.iter().enumerate().find_map(|(i, m)| {
        m.targets
            .iter()
            .find(|t| has_doctests(t) && t.name.replace('-', "_") == suite.crate_name)
            .map(|t| (i, t.name.clone()))
    });
    let Some((package, lib)) = lib else {
        // A member's library with `doctest = false` (rust-url's idna): `cargo test --doc` still
        // hands it to rustdoc, plain `cargo test` runs none of its doctests, and neither does
        // cargo sfl.
        let not_doctested = ws
            .members
            .iter()
            .flat_map(|m| &m.targets)
            .any(|t| !t.doctest && crate::workspace::is_library(t) && t.name.replace('-', "_") == suite.crate_name);
        if !not_doctested {
            crate::ui::warn(format!(
                "doctests of crate {} belong to no workspace member; they are not run",
                suite.crate_name
            ));
        }
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
        runner: Vec::new(),
        doctests: Some(suite),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hosts_runner_is_named_from_rustc() {
        let vv =
            "rustc 1.91.0 (f8297e351 2025-10-28)\nbinary: rustc\nhost: x86_64-unknown-linux-gnu\nrelease: 1.91.0\n";
        assert_eq!(host_triple(vv), Some("x86_64-unknown-linux-gnu"));
        assert_eq!(host_triple("unknown"), None);
        assert_eq!(idle_runner(None), None);
        let build_target = std::env::var("CARGO_BUILD_TARGET").ok();
        let expected = match build_target.as_deref() {
            Some(t) if t != "x86_64-unknown-linux-gnu" => None,
            _ => Some("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER".to_string()),
        };
        assert_eq!(idle_runner(Some("x86_64-unknown-linux-gnu")), expected);
    }
}
