//! Building the tests, and with rows to reuse, only what runs again.

use std::collections::HashSet;
use std::path::Path;

use super::reuse;
use crate::build::{self, Runtime};
use crate::config::{Execution, Selection};
use crate::error::SflError;
use crate::select::{Choice, Narrowed};
use crate::ui;
use crate::workspace::{Built, Workspace};

/// Builds the workspace's tests (with the edge recorder unless `--no-edges`, in
/// a directory of its own). With rows to reuse (`choice`), the edit is checked against the
/// new build's coverage maps, only the targets of the tests that run again are built when
/// they are few ([`crate::select::Reuse::narrowed`]: no doctest; nothing when nothing changed
/// and no test runs again), and the doctests only when one runs again; a check that fails makes
/// `choice` run every test.
/// With `aside` (the caller can run the other tests first), a build of every test leaves the
/// doctests out and says how to build them meanwhile ([`DoctestsAside`]).
pub(super) fn build_tests(
    ws: &mut Workspace,
    select: &Selection,
    exec: &Execution,
    choice: &mut Choice,
    rustc: &str,
    aside: bool,
) -> anyhow::Result<(Built, Option<DoctestsAside>)> {
    let with_edges = !exec.no_edges;
    if !with_edges {
        ws.build_dir = ws.target_dir.join("lines-only");
    }
    let runtime = runtime(ws, with_edges, rustc)?;
    let narrowed = choice.reuse().and_then(|r| r.narrowed(select));
    // Nothing to build when nothing changed and every test passed: nothing said.
    if !narrowed
        .as_ref()
        .is_some_and(|n| n.tests.is_none() && n.doctests.is_none())
    {
        ui::status(
            "Building",
            format!(
                "tests with coverage{} in {}",
                if with_edges { " and edge profiles" } else { "" },
                ws.build_dir.display()
            ),
        );
    }
    let ws: &Workspace = ws;
    if aside && matches!(choice, Choice::All(_)) && !select.doc && build::builds_doctests(ws, select) {
        let built = build::build(ws, select, runtime.as_ref(), build::Doctests::Later)?;
        let mut doc = select.clone();
        doc.doc = true;
        return Ok((built, Some(DoctestsAside { select: doc, runtime })));
    }
    let Some(narrowed) = narrowed.filter(|n| !whole_build_adds_nothing(ws, select, n)) else {
        return Ok((build_whole(ws, select, runtime.as_ref(), choice, rustc)?, None));
    };
    let (mut built, what) = build_narrowed(ws, &narrowed, runtime.as_ref())?;
    if let Some(reuse) = choice.reuse() {
        // `--lib` builds the unit tests of every selected package's library, `test = false`
        // ones too: a narrowed build finds no new binary (new targets and tests build whole).
        let known: HashSet<&str> = reuse.previous.tests.iter().map(|t| t.binary.as_str()).collect();
        built.tests.retain(|t| known.contains(t.id.as_str()));
    }
    if what.is_empty() {
        // Nothing changed and every test passed: nothing to build or run.
        return Ok((built, None));
    }
    ui::detail(format!("building only what runs again: {}", what.join(" and ")));
    check_edit(ws, &built, choice, false);
    if matches!(choice, Choice::All(_)) || reuse::missing_binaries(choice, &built) {
        ui::detail("the edit needs more than that build: building every test target");
        return Ok((build_whole(ws, select, runtime.as_ref(), choice, rustc)?, None));
    }
    Ok((built, None))
}

/// The doctests' build left out of a build of every test, to run while the other tests run:
/// rustdoc compiling a library's doctests takes about as long as running its other tests (1.2 s
/// against 0.6 s for indexmap's 41 doctests and 183 tests, 0.6 against 0.7 s for
/// pulldown-cmark's), mostly on one core.
pub(super) struct DoctestsAside {
    /// The selection's doctests alone (`--doc`).
    select: Selection,
    runtime: Option<Runtime>,
}

impl DoctestsAside {
    /// Builds the doctests (`cargo test --doc` with cargo-sfl as rustdoc).
    pub(super) fn build(&self, ws: &Workspace) -> Result<Built, SflError> {
        build::build(
            ws,
            &self.select,
            self.runtime.as_ref(),
            build::Doctests::Always { host: None },
        )
    }
}

/// cargo sfl's runtime, compiled into the build directory: the edge recorder (`with_edges`),
/// else only faster line coverage, whose absence is a warning. It wraps libtest's entry of the
/// toolchain `rustc` (`rustc -vV`) when that is found.
fn runtime(ws: &Workspace, with_edges: bool, rustc: &str) -> Result<Option<Runtime>, SflError> {
    let rt_dir = crate::edges::runtime_dir(&ws.build_dir);
    let test_main = crate::edges::harness::test_main_symbol(&rt_dir, rustc, || crate::run::toolchain_lib_dir(&ws.root));
    let env_iteration =
        crate::edges::harness::env_iteration_symbols(&rt_dir, rustc, || crate::run::toolchain_lib_dir(&ws.root));
    match crate::edges::prepare_runtime(&ws.build_dir, test_main.as_deref(), env_iteration.as_deref()) {
        Ok(object) => Ok(Some(Runtime {
            object,
            edges: with_edges,
            test_main,
            env_iteration,
        })),
        Err(e) if with_edges => Err(e),
        // Without edges the runtime only speeds line coverage up.
        Err(_) => {
            ui::warn(
                "cargo sfl's runtime could not be compiled with the system C compiler (`cc`, or $CC): \
                 line coverage runs with rustc's atomic counter updates, which is slower",
            );
            Ok(None)
        }
    }
}

/// Checks the edit against a build, and says whether the doctests must be built too.
/// `complete`: `built` is the selection's whole build.
fn check_edit(ws: &Workspace, built: &Built, choice: &mut Choice, complete: bool) -> bool {
    let Choice::Reuse(reuse) = choice else {
        return true;
    };
    let relative = |p: &Path| ws.relative(p);
    match reuse.doctests_needed(built, &relative, complete) {
        Ok(needed) => needed,
        Err(why) => {
            let why = why.to_string();
            ui::status("Selecting", format!("every test: {why}"));
            *choice = Choice::All(Some(why));
            true
        }
    }
}

/// The selection's whole build; the doctests only when one runs again: in the same cargo
/// invocation as the other tests ([`build::Doctests::Always`]) when that is known before the
/// build (every test runs, or the edit reruns a doctest), else asked once the other tests are
/// built (a second invocation when they must be).
fn build_whole(
    ws: &Workspace,
    select: &Selection,
    runtime: Option<&Runtime>,
    choice: &mut Choice,
    rustc: &str,
) -> anyhow::Result<Built> {
    let doctests_known = match choice {
        Choice::All(_) => true,
        Choice::Reuse(reuse) => reuse.doctests_run_again(),
    };
    if doctests_known {
        // One cargo invocation builds the tests and the doctests; the edit is checked
        // against the build afterwards.
        let host = build::host_triple(rustc);
        let built = build::build(ws, select, runtime, build::Doctests::Always { host })?;
        check_edit(ws, &built, choice, true);
        return Ok(built);
    }
    let checked = std::cell::Cell::new(false);
    let built = build::build(
        ws,
        select,
        runtime,
        build::Doctests::Ask(&mut |built| {
            checked.set(true);
            check_edit(ws, built, choice, true)
        }),
    )?;
    if !checked.get() {
        check_edit(ws, &built, choice, true);
    }
    Ok(built)
}

/// Whether a narrowed build that needs test targets and doctests builds everything the
/// selection's whole build would ([`Narrowed::builds_all_of`], one package): then the whole
/// build does it in one cargo invocation, where the tests and the doctests (which need the
/// library itself, not its test target) compile side by side instead of in two invocations
/// one after the other.
fn whole_build_adds_nothing(ws: &Workspace, select: &Selection, narrowed: &Narrowed) -> bool {
    narrowed.doctests.is_some() && matches!(ws.selected(select)[..], [package] if narrowed.builds_all_of(package))
}

/// The build of only what runs again, and what it built, in words (empty: nothing).
fn build_narrowed(
    ws: &Workspace,
    narrowed: &Narrowed,
    runtime: Option<&Runtime>,
) -> Result<(Built, Vec<String>), SflError> {
    let mut built = Built::default();
    let mut what = Vec::new();
    let names = |select: &Selection| {
        let names: Vec<&str> = ws.selected(select).iter().map(|p| p.name.as_str()).collect();
        names.join(", ")
    };
    if let Some(tests) = &narrowed.tests {
        what.push(format!("the test targets of {}", names(tests)));
        let next = if narrowed.doctests.is_some() {
            build::Doctests::Later
        } else {
            build::Doctests::Never
        };
        built = build::build(ws, tests, runtime, next)?;
    }
    if let Some(doctests) = &narrowed.doctests {
        what.push(format!("the doctests of {}", names(doctests)));
        let more = build::build(ws, doctests, runtime, build::Doctests::Always { host: None })?;
        built.tests.extend(more.tests);
        built.others.extend(more.others);
        built.tests.sort_by(|a, b| a.id.cmp(&b.id));
    }
    Ok((built, what))
}
