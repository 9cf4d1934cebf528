//! Collecting the spectra: build → list every binary (reading its coverage map meanwhile) →
//! [`plan`] the jobs → [`run`] and decode them → [`assemble`] the matrix → save it.

mod alone;
mod assemble;
mod building;
mod journal;
mod listing;
mod lock;
mod outcome;
mod plan;
mod resume;
mod reuse;
mod run;
mod save;
mod session;
mod setup;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

pub use save::{Collected, KeptProfile, Saving};

use outcome::JobOutcome;
use resume::Reused;
use save::SaveTo;
use session::Session;

use crate::config::{Execution, RunConfig};
use crate::coverage::{LineDecoder, SortedUnits};
use crate::edges::Collector;
use crate::error::SflError;
use crate::nextest::Nextest;
use crate::select::{Choice, Known, Reuse};
use crate::spectra::{FileState, Snapshot, Spectra, TestRecord};
use crate::syntax::{Parsed, Prefetch};
use crate::ui;
use crate::workspace::Workspace;

/// Builds, runs every test and decodes: the matrix, saved to `target/sfl/spectra.json` (and
/// `--save-spectra`).
pub fn collect(cfg: &RunConfig) -> anyhow::Result<Collected> {
    crate::process::kill_tests_on_interrupt();
    let exec = &cfg.execution;
    // `rustc -vV` goes through rustup's proxy (30-40 ms): asked while cargo metadata runs.
    let rustc = std::thread::spawn(assemble::rustc_version);
    let (mut ws, nextest) = open(cfg)?;
    // Held until the spectra are saved: everything below writes into the target dir.
    let lock = lock::DirLock::acquire(&ws.target_dir, |dir| {
        ui::status("Blocking", format!("waiting for lock on {}", dir.display()))
    })?;
    let (snapshot, rustc, mut choice) = look(&ws, cfg, rustc)?;
    setup::check_target(cfg.selection.target.as_deref(), &rustc)?;
    crate::run::ask_toolchain_lib_dir(ws.root.clone());
    // The doctests build while the other tests run, unless a plan needs every test at once
    // (a partition shares out the whole sorted list) or --keep-profiles indexes them together.
    let aside = exec.partition.is_none() && !exec.keep_profiles;
    let (built, doctests_aside) = building::build_tests(&mut ws, &cfg.selection, exec, &mut choice, &rustc, aside)?;
    let snapshot = as_built(snapshot, &ws);
    let scratch_dir = setup::scratch_dir(
        &ws.target_dir,
        exec.keep_profiles,
        nextest.jobs(&setup::own_flags(exec)),
    )?;
    let scratch = &scratch_dir.path;
    let relative = |p: &Path| ws.relative(p);
    let binaries = built.tests.iter().map(|t| t.path.clone());
    let mut coverage = LineDecoder::new(binaries.chain(built.others.iter().cloned()).collect(), &relative);
    let mut edges = (!exec.no_edges).then(|| Collector::new(coverage.paths(), &relative));
    let mut session = Session::new(&ws, &built, &coverage, edges.as_ref(), scratch, cfg, &nextest);
    let inputs = snapshot.inputs_digest();
    session.inputs.clone_from(&inputs);
    let reuse = choice.reuse();
    let (mut plan, sources) = list_and_plan(&mut session, cfg, &nextest);
    // Without doctests to come, a plan with nothing to run is known now.
    let nothing = match doctests_aside {
        None => Some(setup::nothing_planned(&plan, cfg, reuse.is_some())?),
        Some(_) => None,
    };
    let (run, doctests) = run_beside(&session, cfg, &plan, reuse, doctests_aside.as_ref());
    let (journal, mut outcomes, reused) = run?;
    note_volatile(&session, &mut outcomes, reuse);
    let kept = exec
        .keep_profiles
        .then(|| save::kept_index(&outcomes, &plan.jobs, &built));
    drop(session);
    let mut journals = vec![journal];
    if let Some(doctests) = doctests.transpose()?.filter(|d| !d.tests.is_empty()) {
        journals[0].flush();
        let ran = (&mut outcomes, &mut plan, &mut journals);
        run_doctests(
            &doctests,
            (&mut coverage, &mut edges),
            (&ws, scratch, cfg, &nextest, &inputs),
            ran,
        )?;
    }
    let nothing = match nothing {
        Some(nothing) => nothing,
        None => setup::nothing_planned(&plan, cfg, reuse.is_some())?,
    };
    let (outcomes, recorded) = with_reused(outcomes, plan.recorded, reused);
    // The lines and functions the binaries not built would have named (a full run's): also
    // when no row is reused, since a narrowed build leaves out targets that have no test to
    // run again (an untested binary's lines are units of a full run all the same).
    let units = units(coverage, reuse.map(Reuse::known_now));
    let mut spectra = assemble::assemble(&ws.root, units, outcomes, recorded, edges);
    describe(&mut spectra, &ws, snapshot, rustc, sources, exec);
    let spectra = Arc::new(spectra);
    let to = SaveTo::new(&ws, exec, scratch.clone());
    let saving = Saving::start(Arc::clone(&spectra), to, kept, journals, lock);
    if let Some(why) = nothing {
        saving.wait()?;
        return Err(SflError::NoTests(why).into());
    }
    Ok(Collected { spectra, saving })
}

/// What [`Session::run_planned`] gives.
type Run = anyhow::Result<(journal::Journal, Vec<JobOutcome>, Reused)>;

/// Runs the planned jobs (phase one of a run whose doctests build meanwhile, `aside`, on a
/// thread of its own): their run, and the doctests' build.
fn run_beside(
    session: &Session,
    cfg: &RunConfig,
    plan: &plan::Plan,
    reuse: Option<&Reuse>,
    aside: Option<&building::DoctestsAside>,
) -> (Run, Option<Result<crate::workspace::Built, SflError>>) {
    std::thread::scope(|s| {
        let building = aside.map(|d| {
            let ws = session.ws;
            s.spawn(move || d.build(ws))
        });
        if building.is_some() {
            ui::detail("the doctests build while the other tests run");
        }
        let run = session.run_planned(cfg, plan, reuse);
        let doctests = building.map(|b| b.join().expect("the doctests' build does not panic"));
        (run, doctests)
    })
}

/// Phase two, once the `doctests` built during the other tests' run: their executables join
/// the decoders, they are listed, planned and run (with a resume journal of their own), and
/// their outcomes, jobs and journal join the run's (`ran`), in canonical order.
fn run_doctests(
    doctests: &crate::workspace::Built,
    (coverage, edges): (&mut LineDecoder, &mut Option<Collector>),
    (ws, scratch, cfg, nextest, inputs): (&Workspace, &Path, &RunConfig, &Nextest, &str),
    (outcomes, plan, journals): (&mut Vec<JobOutcome>, &mut plan::Plan, &mut Vec<journal::Journal>),
) -> anyhow::Result<()> {
    let more: Vec<_> = doctests
        .tests
        .iter()
        .map(|t| t.path.clone())
        .chain(doctests.others.iter().cloned())
        .collect();
    if let Some(edges) = edges {
        edges.add_binaries(&more);
    }
    coverage.add_binaries(more);
    let mut session = Session::new(ws, doctests, coverage, edges.as_ref(), scratch, cfg, nextest);
    session.journal = "doctests";
    inputs.clone_into(&mut session.inputs);
    let (doc_plan, _) = list_and_plan(&mut session, cfg, nextest);
    let (journal, mut doc_outcomes, _) = session.run_planned(cfg, &doc_plan, None)?;
    note_volatile(&session, &mut doc_outcomes, None);
    journals.push(journal);
    outcomes.extend(doc_outcomes);
    outcomes.sort_by(|a, b| crate::spectra::test_order(&a.record, &b.record));
    plan.jobs.extend(doc_plan.jobs);
    plan.recorded.extend(doc_plan.recorded);
    plan.recorded.sort_by(crate::spectra::test_order);
    plan.selected += doc_plan.selected;
    Ok(())
}

/// The workspace and its nextest configuration, the packages asked for checked before the
/// build.
fn open(cfg: &RunConfig) -> anyhow::Result<(Workspace, Nextest)> {
    let ws = Workspace::load(
        cfg.selection.manifest_path.as_deref(),
        cfg.selection.target_dir.as_deref(),
        cfg.selection.cargo_flags(),
    )?;
    setup::check_packages(&ws, &cfg.selection.package)?;
    setup::note_outside_path_dependencies(&ws, &cfg.selection);
    let nextest = setup::nextest_setup(&ws, cfg)?;
    Ok((ws, nextest))
}

/// What this run sees of the workspace before it builds, `rustc -vV` (`rustc`, asked
/// meanwhile), and what it does with the last run.
fn look(
    ws: &Workspace,
    cfg: &RunConfig,
    rustc: std::thread::JoinHandle<String>,
) -> Result<(Snapshot, String, Choice), SflError> {
    let looked = Instant::now();
    let files = crate::select::files(ws);
    let rustc = rustc.join().unwrap_or_else(|_| "unknown".into());
    let packages: Vec<String> = ws.selected(&cfg.selection).iter().map(|p| p.name.to_string()).collect();
    let mut snapshot = crate::select::look(files, cfg, &rustc, &packages);
    snapshot.compile_time = crate::select::compile_time_files(ws, snapshot.files.keys());
    let choice = reuse::choose(ws, cfg, &snapshot)?;
    ui::detail(format!(
        "compared {} files with the last run in {:.1} ms",
        snapshot.files.len(),
        looked.elapsed().as_secs_f64() * 1e3
    ));
    Ok((snapshot, rustc, choice))
}

/// The snapshot with what the build read: the environment variables it declared, the files
/// its dependency files name that the walk left out (an ignored file `include_str!` reads), and the
/// lock file as the build left it (cargo writes it when there was none, for a library that
/// does not commit one, or when the manifest asks for more, and the next run must compare
/// with the file this build used, not with its absence).
fn as_built(mut snapshot: Snapshot, ws: &Workspace) -> Snapshot {
    let deps = crate::select::dep_files(&ws.build_dir);
    snapshot.build_env = crate::select::build_env(&ws.build_dir, &deps);
    let read = crate::select::also_read(&deps, &ws.build_dir, &ws.root, &snapshot.files);
    snapshot.files.extend(read);
    snapshot.script_inputs = crate::select::script_inputs(&ws.members, &ws.build_dir, &ws.root, &snapshot.files);
    if let Ok(bytes) = std::fs::read(ws.root.join("Cargo.lock")) {
        snapshot.files.insert("Cargo.lock".into(), FileState::digest(&bytes));
    }
    snapshot
}

/// Lists every binary's tests and plans the jobs, the sources parsed meanwhile
/// ([`prefetch_sources`]).
fn list_and_plan(session: &mut Session, cfg: &RunConfig, nextest: &Nextest) -> (plan::Plan, Prefetch) {
    let started = Instant::now();
    let listings = session.list_all();
    let sources = prefetch_sources(session.ws, session.coverage);
    let plan = session.plan(listings, cfg, nextest);
    ui::status(
        "Listed",
        format!(
            "tests and read {} in {:.1} ms",
            crate::ui::counted(session.built.tests.len(), "coverage map", "coverage maps"),
            started.elapsed().as_secs_f64() * 1e3
        ),
    );
    (plan, sources)
}

/// The spectra save what rankings read from the sources (test code, function names): they are
/// parsed while the tests run, from the files the coverage maps name (test files too: their
/// functions are named).
fn prefetch_sources(ws: &Workspace, coverage: &LineDecoder) -> Prefetch {
    let mut files = coverage.files();
    files.sort();
    Prefetch::start(ws.root.clone(), files, Some(ws.target_dir.join("syntax.json")))
}

/// Marks the tests whose rows are samples, not facts ([`reuse::mark_volatile`]), saying how
/// many.
fn note_volatile(session: &Session, outcomes: &mut [JobOutcome], reuse: Option<&Reuse>) {
    let randomised = reuse::randomised_binaries(session.ws, session.built, session.jobs);
    let volatile = reuse::mark_volatile(outcomes, &randomised, reuse, session.coverage);
    if volatile > 0 {
        ui::detail(format!(
            "{} {}may draw random inputs or varied between runs: they run again after every edit (a test \
             that only links a crate that draws them, until two runs of it cover the same lines)",
            ui::counted(volatile, "test", "tests"),
            if reuse.is_some() { "still " } else { "" }
        ));
    }
}

/// This run's outcomes and records with the reused ones among them, in the canonical order
/// (binary, name) of a full run's rows, so that scores summed over tests come out the same to
/// the last bit.
fn with_reused(
    mut outcomes: Vec<JobOutcome>,
    mut recorded: Vec<TestRecord>,
    reused: Reused,
) -> (Vec<JobOutcome>, Vec<TestRecord>) {
    if !reused.rows.is_empty() || !reused.ignored.is_empty() {
        outcomes.extend(reused.rows);
        outcomes.sort_by(|a, b| crate::spectra::test_order(&a.record, &b.record));
        recorded.extend(reused.ignored);
        recorded.sort_by(crate::spectra::test_order);
    }
    (outcomes, recorded)
}

/// The units the decoders interned, with the lines and functions the last run knew that this
/// build may not name (`known`).
fn units(coverage: LineDecoder, known: Option<Known>) -> SortedUnits {
    match known {
        Some((lines, functions)) => {
            coverage.ids_of(lines.iter().map(|(f, l)| (f.as_str(), *l)));
            let mut units = coverage.finish();
            units.functions.extend(functions);
            units
        }
        None => coverage.finish(),
    }
}

/// Gives the spectra what they were built from (`snapshot`, with what changed since the last
/// green run for the tests that fail now; the toolchain `rustc`), the facts read from the
/// sources, and the partition.
fn describe(
    spectra: &mut Spectra,
    ws: &Workspace,
    mut snapshot: Snapshot,
    rustc: String,
    sources: Prefetch,
    exec: &Execution,
) {
    let root = ws.root.as_path();
    snapshot.since_green = reuse::since_green(ws, spectra, &snapshot);
    crate::select::refresh_written_by_tests(&mut snapshot, root);
    spectra.snapshot = Some(snapshot);
    let mut parsed = Parsed::new(root);
    parsed.absorb(sources);
    let members: Vec<&cargo_metadata::Package> = ws.members.iter().collect();
    let support = crate::testcode::support_dirs(root, &members);
    assemble::describe_sources(root, spectra, rustc, (&mut parsed, &support));
    spectra.partition = exec.partition.map(|p| p.to_string());
}
