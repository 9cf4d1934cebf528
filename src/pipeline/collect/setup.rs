//! The checks and settings of a collect before it builds: the packages asked for, the nextest
//! configuration and `-E`; and what to say when the plan holds no job.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::plan;
use crate::config::{Execution, RunConfig};
use crate::error::SflError;
use crate::nextest::{Flags, Nextest};
use crate::ui;
use crate::workspace::Workspace;

/// Why there is nothing to run, when the plan holds no job: an error, unless this is a
/// partition's empty share of selected tests (`Some(why)`: its empty spectra are still saved,
/// so that `merge` sees every shard, and then it is the run's error). Doctests the build already
/// decided, e.g. ones that do not compile, are results too, and so are the rows a run reuses
/// (`reusing`).
pub(super) fn nothing_planned(plan: &plan::Plan, cfg: &RunConfig, reusing: bool) -> Result<Option<String>, SflError> {
    let decided = reusing || plan.recorded.iter().any(|r| r.outcome.ran());
    let nothing = (plan.jobs.is_empty() && !decided).then(|| nothing_to_run(plan, cfg));
    if let Some(why) = &nothing
        && !(cfg.execution.partition.is_some() && plan.selected > 0)
    {
        return Err(SflError::NoTests(why.clone()));
    }
    Ok(nothing)
}

/// Reads the nextest configuration and compiles `-E` before the build (a mistake in either is
/// reported at once), warns about what is not honoured and says what is.
pub(super) fn nextest_setup(ws: &Workspace, cfg: &RunConfig) -> Result<Nextest, SflError> {
    let exec = &cfg.execution;
    if cfg.selection.doc && !cfg.nextest.filtersets.is_empty() {
        return Err(SflError::Usage(
            "--doc with -E selects nothing: doctests are not nextest tests, and filtersets select only those; \
             drop --doc, or drop -E and use the name filter"
                .into(),
        ));
    }
    let nextest = Nextest::load(ws, &cfg.nextest)?;
    if !nextest.ignored.is_empty() {
        ui::warn(format!(
            "nextest configuration: cargo sfl does not honour {}",
            nextest.ignored.join(", ")
        ));
    }
    if let Some(line) = nextest.describe(&ws.root, &own_flags(exec)) {
        ui::status("Nextest", line);
    }
    Ok(nextest)
}

/// cargo sfl's flags that win over the nextest profile.
pub(super) fn own_flags(exec: &Execution) -> Flags {
    Flags {
        jobs: exec.jobs,
        retries: exec.retries,
        timeout: exec.test_timeout,
    }
}

/// Where each test's profiles land while it is decoded: a fresh directory on a memory
/// filesystem when one has room for `jobs` tests at once (files there cost a fraction of a
/// disk's), named after the target directory `target` (whose lock keeps it to one run), else
/// `<target>/profiles`; always there with `keep` (`--keep-profiles`).
pub(super) fn scratch_dir(target: &Path, keep: bool, jobs: usize) -> anyhow::Result<Scratch> {
    const MIB: u64 = 1 << 20;
    let on_disk = || fresh_dir(target.join("profiles")).map(|path| Scratch { path, in_memory: false });
    let memory = (!keep)
        .then(|| crate::platform::memory_dir(256 * MIB + jobs as u64 * 64 * MIB))
        .flatten();
    let Some(memory) = memory else {
        return on_disk();
    };
    let mut h = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(target, &mut h);
    let dir = memory.join(format!("cargo-sfl-{:016x}", std::hash::Hasher::finish(&h)));
    match fresh_dir(dir) {
        Ok(path) => Ok(Scratch { path, in_memory: true }),
        Err(_) => on_disk(),
    }
}

/// Where each test's profiles land ([`scratch_dir`]); one on a memory filesystem is removed
/// when the collect ends, however it ends (an interrupt, which ends the process, leaves it for
/// the next run to clear).
pub(super) struct Scratch {
    pub(super) path: PathBuf,
    in_memory: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.in_memory {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// `dir`, emptied (what an earlier run left there is not this run's).
pub(super) fn fresh_dir(dir: PathBuf) -> anyhow::Result<PathBuf> {
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// A filter that is one of cargo sfl's subcommands was most likely meant as one, written after
/// the options (`cargo sfl --format json report`): clap reads the first free word as the test
/// name filter there.
fn subcommand_hint(patterns: &[String]) -> String {
    const SUBCOMMANDS: &[&str] = &["report", "analyze", "measures", "eval", "merge", "explain"];
    match patterns.iter().find(|p| SUBCOMMANDS.contains(&p.as_str())) {
        Some(name) => format!(
            " (to run the `{name}` subcommand, write it first: `cargo sfl {name} [OPTIONS]`; after options it is read as a test name filter)"
        ),
        None => String::new(),
    }
}

/// Why a plan holds no job, and what to do.
fn nothing_to_run(plan: &plan::Plan, cfg: &RunConfig) -> String {
    let ignored = plan.recorded.iter().filter(|r| !r.outcome.ran()).count();
    if !cfg.nextest.filtersets.is_empty() {
        let exprs: Vec<String> = cfg.nextest.filtersets.iter().map(|e| format!("-E `{e}`")).collect();
        let filter = if cfg.filter.is_empty() {
            String::new()
        } else {
            format!(" and the filter {}", cfg.filter)
        };
        format!("no tests matched {}{filter}", exprs.join(" or "))
    } else if !cfg.filter.is_empty() {
        format!(
            "no tests matched the filter {}{}",
            cfg.filter,
            subcommand_hint(&cfg.filter.patterns)
        )
    } else if cfg.execution.ignored == crate::config::Ignored::Only {
        "no tests to run: none of the selected tests is #[ignore]d (`-- --ignored` runs only those)".into()
    } else if plan.selected > 0 {
        "this partition's share holds no tests (its empty spectra were saved, for `merge`); the other shards have them"
            .into()
    } else if ignored > 0 {
        format!("no tests to run: the {ignored} tests selected are all #[ignore]d (add --include-ignored to run them)")
    } else {
        "no tests in this crate: the selected packages and targets have no tests (cargo test would run none)".into()
    }
}

/// Refuses a `--target` that is not the host's (`rustc`: `rustc -vV`) before building: the
/// tests run on this machine, and the edge recorder is built for it.
pub(super) fn check_target(target: Option<&str>, rustc: &str) -> Result<(), SflError> {
    match (target, crate::build::host_triple(rustc)) {
        (Some(t), Some(host)) if t != host => Err(SflError::Usage(format!(
            "--target {t}: cargo sfl runs the tests on this machine, so the target must be its own ({host})"
        ))),
        _ => Ok(()),
    }
}

/// Says which path dependencies of the selected packages are no workspace member: cargo sfl
/// instruments the workspace's members only, so a fault in one of them is not ranked, and a
/// report that names none of their lines must not read as if they were checked.
pub(super) fn note_outside_path_dependencies(ws: &Workspace, select: &crate::config::Selection) {
    let member_dirs: Vec<&Path> = ws
        .members
        .iter()
        .filter_map(|m| m.manifest_path.parent().map(|d| d.as_std_path()))
        .collect();
    let mut outside: Vec<String> = ws
        .selected(select)
        .iter()
        .flat_map(|p| &p.dependencies)
        .filter_map(|d| Some((d.name.as_str(), d.path.as_ref()?.as_std_path())))
        .filter(|(_, path)| !member_dirs.contains(path))
        .map(|(name, path)| format!("{name} ({})", path.display()))
        .collect();
    outside.sort_unstable();
    outside.dedup();
    if !outside.is_empty() {
        ui::note(format!(
            "path dependencies that are not workspace members are not instrumented, so a fault in them is not ranked: {}",
            outside.join(", ")
        ));
    }
}

/// Refuses a `-p` that names no workspace member before building (cargo would fail the build,
/// which reads as a compile error). Globs are left to cargo.
pub(super) fn check_packages(ws: &Workspace, specs: &[String]) -> Result<(), SflError> {
    // Globs are left to cargo; a name, or a package ID URL, must select a member.
    let unknown = specs.iter().find(|spec| {
        !spec.contains(['*', '?', '[']) && !ws.members.iter().any(|m| crate::workspace::spec_matches(spec, m))
    });
    match unknown {
        None => Ok(()),
        Some(spec) => {
            let mut members: Vec<&str> = ws.members.iter().map(|m| m.name.as_str()).collect();
            members.sort_unstable();
            Err(SflError::Usage(format!(
                "no package `{spec}` in this workspace (its members: {})",
                members.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_filter_that_names_a_subcommand_says_how_to_run_it() {
        assert!(super::subcommand_hint(&["report".into()]).contains("`cargo sfl report [OPTIONS]`"));
        assert_eq!(super::subcommand_hint(&["parse".into()]), "");
    }
}
