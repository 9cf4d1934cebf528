//! Collecting the spectra: build → list every binary (reading its coverage map meanwhile) →
//! [`plan`] the jobs → [`run`] and decode them → [`assemble`] the matrix → save it.

mod assemble;
mod journal;
mod lock;
mod plan;
mod reuse;
mod run;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use plan::plan;
use run::JobOutcome;

use crate::build;
use crate::config::{Execution, RunConfig, Selection};
use crate::coverage::LineDecoder;
use crate::edges::Collector;
use crate::error::SflError;
use crate::list::{self, Listing};
use crate::nextest::{BinaryInfo, Flags, Nextest};
use crate::run::Job;
use crate::spectra::{Outcome, Spectra};
use crate::syntax::{Parsed, Prefetch};
use crate::ui;
use crate::workspace::{Built, TestBinary, Workspace};

/// Written next to kept profiles (`--keep-profiles`), for the decoder oracle and debugging.
#[derive(Serialize, Deserialize, Debug)]
pub struct KeptProfile {
    pub binary: String,
    pub name: String,
    pub binary_path: PathBuf,
    pub profiles: Vec<PathBuf>,
}

/// What listing and running the tests share.
struct Session<'a> {
    ws: &'a Workspace,
    built: &'a Built,
    coverage: &'a LineDecoder<'a>,
    /// Decodes edge files; `None` with `--no-edges`.
    edges: Option<&'a Collector<'a>>,
    /// Where each test's profiles land (`<target-dir>/profiles`).
    scratch: &'a Path,
    release: bool,
    timeout: Duration,
    /// How the timeout was chosen, for the status line.
    timeout_note: String,
    /// Per job (in plan order): its timeout, leak-timeout, retries, slots and test group, from
    /// the flags and the nextest profile.
    settings: Vec<crate::nextest::JobSettings>,
    /// Each nextest test group's `max-threads`.
    groups: Vec<usize>,
    /// Processes at once (slots).
    jobs: usize,
    /// cargo sfl's own flags, which win over the nextest profile.
    flags: Flags,
    keep: bool,
    /// How long each test took in the last run (it orders the longest first).
    last: plan::Durations,
}

/// Builds, runs every test and decodes: the matrix, saved to `target/sfl/spectra.json` (and
/// `--save-spectra`).
pub fn collect(cfg: &RunConfig) -> anyhow::Result<Collected> {
    crate::process::kill_tests_on_interrupt();
    let exec = &cfg.execution;
    let mut ws = Workspace::load(
        cfg.selection.manifest_path.as_deref(),
        cfg.selection.target_dir.as_deref(),
    )?;
    check_packages(&ws, &cfg.selection.package)?;
    let nextest = nextest_setup(&ws, cfg)?;
    // Held until the spectra are saved: everything below writes into the target dir.
    let lock = lock::DirLock::acquire(&ws.target_dir, |dir| {
        ui::status("Blocking", format!("waiting for lock on {}", dir.display()))
    })?;
    // `rustc -vV` (10-15 ms through rustup's proxy) is asked while the files are read.
    let rustc = std::thread::spawn(assemble::rustc_version);
    let looked = Instant::now();
    let files = crate::select::files(&ws);
    let rustc = rustc.join().unwrap_or_else(|_| "unknown".into());
    let snapshot = crate::select::look(files, cfg, &rustc);
    let mut choice = reuse::choose(&ws, cfg, &snapshot)?;
    ui::detail(format!(
        "compared {} files with the last run in {:.1} ms",
        snapshot.files.len(),
        looked.elapsed().as_secs_f64() * 1e3
    ));
    let built = build_tests(&mut ws, &cfg.selection, exec, &mut choice)?;
    // The lock file as the build left it: cargo writes it when there was none (a library
    // that does not commit one) or when the manifest asks for more, and the next run must
    // compare with the file this build used, not with its absence.
    let mut snapshot = snapshot;
    snapshot.build_env = crate::select::build_env(&ws.build_dir);
    if let Ok(bytes) = std::fs::read(ws.root.join("Cargo.lock")) {
        snapshot
            .files
            .insert("Cargo.lock".into(), crate::spectra::FileState::digest(&bytes));
    }
    let scratch = fresh_dir(ws.target_dir.join("profiles"))?;
    let relative = |p: &Path| ws.relative(p);
    let binaries = built.tests.iter().map(|t| t.path.clone());
    let coverage = LineDecoder::new(binaries.chain(built.others.iter().cloned()).collect(), &relative);
    let edges = (!exec.no_edges).then(|| Collector::new(coverage.paths(), &relative));
    let mut session = Session::new(&ws, &built, &coverage, edges.as_ref(), &scratch, cfg, &nextest);
    let prep_started = Instant::now();
    let listings = session.list_all();
    let sources = prefetch_sources(&ws, &coverage);
    let plan = session.plan(listings, cfg, &nextest);
    let nothing = nothing_planned(&plan, cfg, matches!(choice, crate::select::Choice::Reuse(_)))?;
    ui::status(
        "Listed",
        format!(
            "tests and read {} coverage maps in {:.1} ms",
            built.tests.len(),
            prep_started.elapsed().as_secs_f64() * 1e3
        ),
    );
    let reuse = match &choice {
        crate::select::Choice::Reuse(r) => Some(&**r),
        crate::select::Choice::All(_) => None,
    };
    let (journal, mut outcomes, reused) = session.run_planned(cfg, &plan.jobs, reuse)?;
    let randomised = reuse::randomised_binaries(&ws, &built, session.jobs);
    let volatile = reuse::mark_volatile(&mut outcomes, &randomised, reuse, &coverage);
    if volatile > 0 {
        ui::detail(format!(
            "{} draw random inputs or varied between runs: they run again after every edit",
            ui::counted(volatile, "test", "tests")
        ));
    }
    let kept = exec.keep_profiles.then(|| kept_index(&outcomes, &plan.jobs, &built));
    let mut recorded = plan.recorded;
    let reused_any = !reused.rows.is_empty() || !reused.ignored.is_empty();
    if reused_any {
        // The canonical order (binary, name) of a full run's rows, so that scores summed over
        // tests come out the same to the last bit.
        outcomes.extend(reused.rows);
        outcomes.sort_by(|a, b| crate::spectra::test_order(&a.record, &b.record));
        recorded.extend(reused.ignored);
        recorded.sort_by(crate::spectra::test_order);
    }
    // The lines and functions the binaries not built would have named (a full run's): also
    // when no row is reused, since a narrowed build leaves out targets that have no test to
    // run again (an untested binary's lines are units of a full run all the same).
    let known = match &choice {
        crate::select::Choice::Reuse(r) => Some(r.known_now()),
        crate::select::Choice::All(_) => None,
    };
    let spectra = {
        let units = match known {
            Some((lines, functions)) => {
                coverage.ids_of(lines.iter().map(|(f, l)| (f.as_str(), *l)));
                let mut units = coverage.finish();
                units.functions.extend(functions);
                units
            }
            None => coverage.finish(),
        };
        let mut spectra = assemble::assemble(&ws.root, units, outcomes, recorded, edges);
        spectra.snapshot = Some(snapshot);
        let mut parsed = Parsed::new(&ws.root);
        parsed.absorb(sources);
        assemble::describe_sources(&ws.root, &mut spectra, rustc, &mut parsed);
        spectra.partition = exec.partition.map(|p| p.to_string());
        Arc::new(spectra)
    };
    let saving = Saving::start(
        Arc::clone(&spectra),
        SaveTo::new(&ws, exec, scratch.clone()),
        kept,
        journal,
        lock,
    );
    if let Some(why) = nothing {
        saving.wait()?;
        return Err(SflError::NoTests(why).into());
    }
    Ok(Collected { spectra, saving })
}

/// The spectra save what rankings read from the sources (test code, function names): they are
/// parsed while the tests run, from the files the coverage maps name.
fn prefetch_sources(ws: &Workspace, coverage: &LineDecoder) -> Prefetch {
    let mut files = coverage.files();
    files.retain(|f| !crate::testcode::is_test_path(f));
    files.sort();
    Prefetch::start(ws.root.clone(), files)
}

/// Why there is nothing to run, when the plan holds no job: an error, unless this is a
/// partition's empty share of selected tests (`Some(why)`: its empty spectra are still saved,
/// so that `merge` sees every shard, and then it is the run's error). Doctests the build already
/// decided, e.g. ones that do not compile, are results too, and so are the rows a run reuses
/// (`reusing`).
fn nothing_planned(plan: &plan::Plan, cfg: &RunConfig, reusing: bool) -> Result<Option<String>, SflError> {
    let decided = reusing || plan.recorded.iter().any(|r| r.outcome.ran());
    let nothing = (plan.jobs.is_empty() && !decided).then(|| nothing_to_run(plan, cfg));
    if let Some(why) = &nothing
        && !(cfg.execution.partition.is_some() && plan.selected > 0)
    {
        return Err(SflError::NoTests(why.clone()));
    }
    Ok(nothing)
}

/// What [`collect`] hands the report: the spectra (with their source facts) and the saving of
/// the spectra, under way.
pub struct Collected {
    pub spectra: Arc<Spectra>,
    pub saving: Saving,
}

/// The spectra being saved on a thread of their own.
pub struct Saving(std::thread::JoinHandle<anyhow::Result<()>>);

impl Saving {
    /// Saves `spectra` on a thread of its own (serialising and writing them took 50 ms of a
    /// 1.3 s run on regex-syntax, with one core idle, while the report is written), then ends
    /// the journal; the target dir's `lock` is held until they are saved.
    fn start(
        spectra: Arc<Spectra>,
        to: SaveTo,
        kept: Option<Vec<KeptProfile>>,
        journal: journal::Journal,
        lock: lock::DirLock,
    ) -> Saving {
        Saving(std::thread::spawn(move || {
            save(&spectra, &to, kept)?;
            journal.finish();
            drop(lock);
            Ok(())
        }))
    }

    /// Waits until the spectra are saved; a failure to save them is the run's error.
    pub fn wait(self) -> anyhow::Result<()> {
        self.0
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("saving the spectra panicked")))
    }
}

/// Reads the nextest configuration and compiles `-E` before the build (a mistake in either is
/// reported at once), warns about what is not honoured and says what is.
fn nextest_setup(ws: &Workspace, cfg: &RunConfig) -> Result<Nextest, SflError> {
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
fn own_flags(exec: &Execution) -> Flags {
    Flags {
        jobs: exec.jobs,
        retries: exec.retries,
        timeout: exec.test_timeout,
    }
}

/// `dir`, emptied (what an earlier run left there is not this run's).
fn fresh_dir(dir: PathBuf) -> anyhow::Result<PathBuf> {
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    Ok(dir)
}

/// Why a plan holds no job, and what to do.
fn nothing_to_run(plan: &plan::Plan, cfg: &RunConfig) -> String {
    let ignored = plan.recorded.iter().filter(|r| !r.outcome.ran()).count();
    if !cfg.nextest.filtersets.is_empty() {
        let exprs: Vec<String> = cfg.nextest.filtersets.iter().map(|e| format!("-E `{e}`")).collect();
        let filter = cfg
            .filter
            .as_ref()
            .map(|f| format!(" and the filter `{f}`"))
            .unwrap_or_default();
        format!("no tests matched {}{filter}", exprs.join(" or "))
    } else if let Some(filter) = &cfg.filter {
        format!("no tests matched the filter `{filter}`")
    } else if plan.selected > 0 {
        "this partition's share holds no tests (its empty spectra were saved, for `merge`); the other shards have them"
            .into()
    } else if ignored > 0 {
        format!("no tests to run: the {ignored} tests selected are all #[ignore]d (add --include-ignored to run them)")
    } else {
        "no tests in this crate: the selected packages and targets have no tests (cargo test would run none)".into()
    }
}

/// Refuses a `-p` that names no workspace member before building (cargo would fail the build,
/// which reads as a compile error). Package-ID URLs and globs are left to cargo.
fn check_packages(ws: &Workspace, specs: &[String]) -> Result<(), SflError> {
    let unknown = specs.iter().find(|spec| {
        let plain = !spec.contains(['/', '#', '*', '?', '[']);
        let name = spec.split(['@', ':']).next().unwrap_or(spec);
        plain && !ws.members.iter().any(|m| m.name.as_str() == name)
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

/// Opens the resume journal of this build and selection: the outcomes of the jobs an
/// interrupted run of it finished (unless `--rerun`), saying so.
fn resume(
    session: &Session,
    cfg: &RunConfig,
    jobs: &[Job],
) -> anyhow::Result<(journal::Journal, Vec<Option<JobOutcome>>)> {
    let exec = &cfg.execution;
    let ids: Vec<&str> = session.built.tests.iter().map(|t| t.id.as_str()).collect();
    // Everything else that changes outcomes is in the binaries or the jobs.
    // Per-job settings (retries, timeouts, leak-timeouts) come from the flags and the nextest
    // profile; groups and slots change no outcome.
    let settings: Vec<_> = session.settings.iter().map(|s| (s.limits, s.retries)).collect();
    let flags = format!(
        "root={} edges={} settings={settings:?} release={}",
        session.ws.root.display(),
        session.edges.is_some(),
        session.release
    );
    let fingerprint = journal::fingerprint(session.built, &ids, jobs, &flags);
    let dir = session.ws.target_dir.join("journal");
    let (journal, earlier) = journal::Journal::open(&dir, &fingerprint, exec.rerun)
        .with_context(|| format!("cannot write the resume journal in {}", dir.display()))?;
    crate::process::on_interrupt_say(format!(
        "the tests that finished are kept in {}: run the same command again to resume (--rerun to run every test)",
        journal.path().display()
    ));
    let done = match earlier {
        Some(earlier) => {
            let started = earlier.started;
            let done = earlier.outcomes(jobs, &ids, session.coverage, session.edges);
            let n = done.iter().filter(|o| o.is_some()).count();
            ui::status(
                "Resuming",
                format!(
                    "{n} of {} tests already ran (an interrupted run {}); --rerun to run them all",
                    jobs.len(),
                    ui::ago(started)
                ),
            );
            done
        }
        None => jobs.iter().map(|_| None).collect(),
    };
    Ok((journal, done))
}

/// Builds the workspace's tests (with the edge recorder unless `--no-edges`, in
/// a directory of its own). With rows to reuse (`choice`), the edit is checked against the
/// new build's coverage maps, only the targets of the tests that run again are built when
/// they are few ([`crate::select::Reuse::narrowed`]: no doctest; nothing when nothing changed
/// and no test runs again), and the doctests only when one runs again; a check that fails makes
/// `choice` run every test.
fn build_tests(
    ws: &mut Workspace,
    select: &Selection,
    exec: &Execution,
    choice: &mut crate::select::Choice,
) -> anyhow::Result<Built> {
    let with_edges = !exec.no_edges;
    if !with_edges {
        ws.build_dir = ws.target_dir.join("lines-only");
    }
    let runtime = match crate::edges::prepare_runtime(&ws.build_dir) {
        Ok(object) => Some(build::Runtime {
            object,
            edges: with_edges,
        }),
        Err(e) if with_edges => return Err(e.into()),
        // Without edges the runtime only speeds line coverage up.
        Err(_) => {
            ui::warn(
                "cargo sfl's runtime could not be compiled with the system C compiler (`cc`, or $CC): \
                 line coverage runs with rustc's atomic counter updates, which is slower",
            );
            None
        }
    };
    ui::status(
        "Building",
        format!(
            "tests with coverage{} in {}",
            if with_edges { " and edge profiles" } else { "" },
            ws.build_dir.display()
        ),
    );
    let ws: &Workspace = ws;
    let relative = |p: &Path| ws.relative(p);
    // Checks the edit against a build, and says whether the doctests must be built too.
    // `complete`: `built` is the selection's whole build.
    let check = |built: &Built, choice: &mut crate::select::Choice, complete: bool| -> bool {
        let crate::select::Choice::Reuse(reuse) = choice else {
            return true;
        };
        match reuse.doctests_needed(built, &relative, complete) {
            Ok(needed) => needed,
            Err(why) => {
                ui::status("Selecting", format!("every test: {why}"));
                *choice = crate::select::Choice::All(Some(why));
                true
            }
        }
    };
    // The selection's whole build; the doctests only when one runs again.
    let whole = |choice: &mut crate::select::Choice| -> anyhow::Result<Built> {
        let checked = std::cell::Cell::new(false);
        let built = build::build(ws, select, runtime.as_ref(), &mut |built| {
            checked.set(true);
            check(built, choice, true)
        })?;
        if !checked.get() {
            check(&built, choice, true);
        }
        Ok(built)
    };
    let narrowed = match choice {
        crate::select::Choice::Reuse(r) => r.narrowed(select),
        crate::select::Choice::All(_) => None,
    };
    let Some(narrowed) = narrowed else {
        return whole(choice);
    };
    let mut built = Built::default();
    let mut what = Vec::new();
    if let Some(tests) = &narrowed.tests {
        what.push(format!("the test targets of {}", tests.package.join(", ")));
        built = build::build(ws, tests, runtime.as_ref(), &mut |_| false)?;
    }
    if let Some(doctests) = &narrowed.doctests {
        what.push(format!("the doctests of {}", doctests.package.join(", ")));
        let more = build::build(ws, doctests, runtime.as_ref(), &mut |_| true)?;
        built.tests.extend(more.tests);
        built.others.extend(more.others);
        built.tests.sort_by(|a, b| a.id.cmp(&b.id));
    }
    if what.is_empty() {
        // Nothing changed and every test passed: nothing to build or run.
        return Ok(built);
    }
    ui::detail(format!("building only what runs again: {}", what.join(" and ")));
    check(&built, choice, false);
    if matches!(choice, crate::select::Choice::All(_)) || reuse::missing_binaries(choice, &built) {
        ui::detail("the edit needs more than that build: building every test target");
        return whole(choice);
    }
    Ok(built)
}

/// Makes a test executable's coverage counter updates plain while it runs on one thread
/// ([`crate::edges::relax`]); a failure only costs speed, so it is a warning.
fn relax_counters(exe: &Path) {
    if let Err(e) = crate::edges::relax::relax(exe) {
        ui::warn(format!(
            "cannot rewrite the counter updates of {} ({e}); its tests run with atomic counters, which is slower",
            exe.display()
        ));
    }
}

impl<'a> Session<'a> {
    /// The session of one collect, before its jobs are planned (no per-job settings yet).
    fn new(
        ws: &'a Workspace,
        built: &'a Built,
        coverage: &'a LineDecoder<'a>,
        edges: Option<&'a Collector<'a>>,
        scratch: &'a Path,
        cfg: &RunConfig,
        nextest: &Nextest,
    ) -> Self {
        let exec = &cfg.execution;
        let flags = own_flags(exec);
        Session {
            ws,
            built,
            coverage,
            edges,
            scratch,
            release: cfg.selection.release,
            timeout: exec.timeout(),
            timeout_note: exec.timeout_note(),
            settings: Vec::new(),
            groups: nextest.groups.iter().map(|(_, n)| *n).collect(),
            jobs: nextest.jobs(&flags),
            flags,
            keep: exec.keep_profiles,
            last: plan::load_durations(&durations_path(ws)),
        }
    }

    /// Plans the jobs from the listings (filter, `-E`, ignored tests, partition) and gives each
    /// its settings (flags, then the nextest profile), saying which share a partition took.
    fn plan(&mut self, listings: Vec<Listing>, cfg: &RunConfig, nextest: &Nextest) -> plan::Plan {
        let exec = &cfg.execution;
        let infos: Vec<BinaryInfo> = self.built.tests.iter().map(|b| BinaryInfo::new(self.ws, b)).collect();
        let plan = plan(
            &self.built.tests,
            listings,
            cfg.filter.as_deref(),
            &|b, name| nextest.selector.selects(&infos[b], name),
            exec.include_ignored,
            exec.partition.as_ref(),
        );
        self.settings = plan
            .jobs
            .iter()
            .map(|j| {
                let name = j.name.as_deref().unwrap_or("main");
                nextest.job(&infos[j.binary], name, &self.flags, self.timeout, self.jobs)
            })
            .collect();
        if let Some(p) = &exec.partition {
            ui::status(
                "Partition",
                format!("{p}: {} of {} tests", plan.jobs.len(), plan.selected),
            );
        }
        plan
    }

    /// Runs the jobs an interrupted run did not finish ([`resume`]), each outcome kept in the
    /// journal as it arrives. A test that could not even be started is no result: saving it as
    /// failed would overwrite good spectra with a broken matrix.
    /// With `reuse`, the jobs whose rows the last run's spectra hold for this edit are not
    /// run ([`crate::select`]); the last run's tests of the binaries this run did not build
    /// (the doctests, or all but the few binaries that run again) come back as [`Reused`].
    fn run_planned(
        &self,
        cfg: &RunConfig,
        jobs: &[Job],
        reuse: Option<&crate::select::Reuse>,
    ) -> anyhow::Result<(journal::Journal, Vec<JobOutcome>, Reused)> {
        let (mut journal, mut done) = resume(self, cfg, jobs)?;
        let mut reused = Reused::default();
        if let Some(reuse) = reuse {
            let ids: Vec<&str> = self.built.tests.iter().map(|t| t.id.as_str()).collect();
            let (of_jobs, rows, ignored) = reuse.outcomes(jobs, &ids, self.coverage, self.edges);
            for (d, row) in done.iter_mut().zip(of_jobs) {
                if d.is_none() {
                    *d = row;
                }
            }
            let total = jobs.len() + rows.len();
            let run = done.iter().filter(|d| d.is_none()).count();
            let volatile = match reuse.volatile() {
                0 => String::new(),
                n => format!(" ({n} of them property or randomised tests, which run after every edit)"),
            };
            ui::status(
                "Selected",
                format!(
                    "{run} of {total} tests to run{volatile}; {} reused from the run of {} (--rerun runs them all)",
                    total - run,
                    ui::ago(reuse.when)
                ),
            );
            reused = Reused { rows, ignored };
        }
        let outcomes = if jobs.is_empty() {
            Vec::new()
        } else {
            self.run_all(jobs, done, |o| journal.keep(o, self.coverage, self.edges))
        };
        if let Some(e) = not_run(&outcomes) {
            return Err(e.into());
        }
        Ok((journal, outcomes, reused))
    }

    /// Lists every binary's tests (their counter updates made plain first, [`relax_counters`]),
    /// and reads its coverage map and block table meanwhile (once per binary). A binary that
    /// cannot be listed is run as one test, with a warning.
    fn list_all(&self) -> Vec<Listing> {
        self.relax_all();
        let n = self.built.tests.len();
        let mut listings: Vec<Option<Result<Listing, list::ListError>>> = (0..n).map(|_| None).collect();
        let listing_bar = ui::spinner("Listing", format!("0/{n} test binaries"));
        let mut listed = 0;
        crate::run::parallel(
            &self.built.tests,
            self.jobs,
            |i, bin| self.list_reading(i, bin),
            |i, r| {
                listed += 1;
                listing_bar.set_message(format!("{listed}/{n} test binaries (and their coverage maps)"));
                listings[i] = Some(r);
            },
        );
        listing_bar.finish_and_clear();
        listings
            .into_iter()
            .enumerate()
            .map(|(b, listing)| self.runnable(b, listing.expect("every binary listed")))
            .collect()
    }

    /// Makes every binary's counter updates plain. They are rewritten before any listing
    /// starts: a process forked while an executable is being written holds it open for writing
    /// until it execs, and running that executable then fails ("text file busy"). A merged
    /// doctest runner runs its doctest on its main thread: relaxed too. Standalone doctests are
    /// many small executables, rarely CPU-bound: left atomic.
    fn relax_all(&self) {
        crate::run::parallel(
            &self.built.tests,
            self.jobs,
            |_, bin| match &bin.doctests {
                None => relax_counters(&bin.path),
                Some(suite) => {
                    let mut runners: Vec<&Path> = suite
                        .tests
                        .iter()
                        .filter(|t| t.index.is_some())
                        .map(|t| t.exe.as_path())
                        .collect();
                    runners.sort_unstable();
                    runners.dedup();
                    runners.into_iter().for_each(relax_counters);
                }
            },
            |_, ()| {},
        );
    }

    /// Lists binary `i`'s tests, reading its coverage map and (unless it is a standalone
    /// doctest's) its block table meanwhile. Errors reading either are reported per test when
    /// its profiles are decoded.
    fn list_reading(&self, i: usize, bin: &TestBinary) -> Result<Listing, list::ListError> {
        std::thread::scope(|s| {
            // The block table (DWARF) is the slowest to read. With no more binaries than
            // slots it is read on a thread of its own (a slot would idle once its binary
            // is done, and binaries differ in size: a library's unit tests and its
            // merged doctests, say); otherwise the binaries are read `jobs` at a time,
            // one thing after another, which bounds the memory (itertools: 229 MiB
            // peak, against 313 with a thread each).
            let beside = self.built.tests.len() <= self.jobs;
            // A standalone doctest's executable runs that doctest alone: its blocks are
            // read once it has run, for the functions it ran (`Collector::decode`).
            let one_doctest = bin
                .doctests
                .as_ref()
                .is_some_and(|d| d.tests.iter().filter(|t| t.exe == bin.path).count() == 1);
            let blocks = self.edges.filter(|_| !one_doctest);
            let edges = blocks.filter(|_| beside).map(|e| s.spawn(move || e.prepare(i)));
            let list_dir = self.scratch.join(format!("list{i}"));
            let _ = std::fs::create_dir_all(&list_dir);
            let r = list::list(
                bin,
                &self.ws.members[bin.package],
                &self.ws.build_dir,
                self.release,
                &list_dir,
                self.timeout,
            );
            let _ = std::fs::remove_dir_all(&list_dir);
            let _ = self.coverage.binary(i);
            match (edges, blocks) {
                (Some(thread), _) => thread.join().expect("reading a block table"),
                (None, Some(e)) => e.prepare(i),
                (None, None) => {}
            }
            r
        })
    }

    /// What is run of binary `b`, given its listing. Only a `harness = false` target may not
    /// understand `--list`: it is run once. A libtest binary that cannot list its tests cannot
    /// run them either.
    fn runnable(&self, b: usize, listing: Result<Listing, list::ListError>) -> Listing {
        let binary = &self.built.tests[b];
        match listing {
            Ok(l) => l,
            Err(e) if binary.custom_harness => {
                ui::warn(format!(
                    "cannot list the tests of {}: {e}; running it as one test",
                    binary.id
                ));
                Listing::whole()
            }
            Err(e) => {
                ui::error(format!(
                    "cannot list the tests of {}: {e}; its tests are not run",
                    binary.id
                ));
                Listing::default()
            }
        }
    }
}

/// The last run's tests of the binaries this run did not build: every one's row is reused.
#[derive(Default)]
struct Reused {
    /// Their rows (the doctests' among them, when rustdoc did not run).
    rows: Vec<JobOutcome>,
    ignored: Vec<crate::spectra::TestRecord>,
}

/// The error for a run some of whose tests could not be started (a deleted binary, an unwritable
/// target dir), naming the first.
fn not_run(outcomes: &[JobOutcome]) -> Option<SflError> {
    let mut broken = outcomes.iter().filter_map(|o| Some((&o.record, o.not_run.as_ref()?)));
    let (first, why) = broken.next()?;
    Some(SflError::Setup(format!(
        "{} of {} tests could not be run (first: {} {}: {why}); the spectra were not saved",
        broken.count() + 1,
        outcomes.len(),
        first.binary,
        first.name
    )))
}

/// Which profiles each test left (`--keep-profiles`).
fn kept_index(outcomes: &[JobOutcome], jobs: &[Job], built: &Built) -> Vec<KeptProfile> {
    outcomes
        .iter()
        .zip(jobs)
        .map(|(o, job)| KeptProfile {
            binary: o.record.binary.clone(),
            name: o.record.name.clone(),
            binary_path: built.tests[job.binary].exe_for(job.name.as_deref()).to_path_buf(),
            profiles: o.profiles.clone(),
        })
        .collect()
}

/// Where [`save`] writes: owned, for the thread that saves.
struct SaveTo {
    main: PathBuf,
    /// `--save-spectra`.
    extra: Option<PathBuf>,
    durations: PathBuf,
    scratch: PathBuf,
}

impl SaveTo {
    fn new(ws: &Workspace, exec: &Execution, scratch: PathBuf) -> Self {
        SaveTo {
            main: ws.spectra_path(),
            extra: exec.save_spectra.clone(),
            durations: durations_path(ws),
            scratch,
        }
    }
}

/// Saves the spectra (the workspace's file, and `--save-spectra`) and the kept profiles' index.
fn save(spectra: &Spectra, to: &SaveTo, kept: Option<Vec<KeptProfile>>) -> anyhow::Result<()> {
    let main = &to.main;
    let output = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SflError::Output {
            what: "the spectra",
            path,
            source,
        }
    };
    let saved = save_keeping_failures(spectra, main).map_err(output(main))?;
    if let Saved::Green { kept, green } = saved {
        ui::note(format!(
            "no test failed: kept the last run with failures ({kept}) at {}, for `cargo sfl report`; \
             this run's spectra are at {}",
            main.display(),
            green.display()
        ));
    }
    for path in to.extra.iter() {
        spectra.save(path).map_err(output(path))?;
    }
    // They only order the next run: not keeping them is no reason to fail this one.
    if let Err(e) = plan::save_durations(&to.durations, &spectra.tests) {
        ui::warn(format!("cannot write {}: {e}", to.durations.display()));
    }
    if let Some(kept) = kept {
        let index = to.scratch.join("index.json");
        std::fs::write(&index, serde_json::to_vec_pretty(&kept)?)?;
        ui::status("Kept", format!("profiles: {}", index.display()));
    }
    Ok(())
}

/// Where the tests' last durations are kept.
fn durations_path(ws: &Workspace) -> PathBuf {
    ws.target_dir.join("durations.json")
}

/// Where the workspace's spectra went.
#[derive(Debug, PartialEq)]
enum Saved {
    /// To the workspace's file.
    Main,
    /// To `green` (no test failed), keeping the earlier run with failures in the workspace's
    /// file; `kept` says when it ran and how many tests failed.
    Green { kept: String, green: PathBuf },
}

/// Saves `spectra` to `main`, unless no test failed and `main` holds a run with failing tests:
/// a green run (a flaky test passing this time, a fix being tried) must not silently replace
/// the evidence. Then the green run goes to `spectra-green.json` next to it. A run with
/// failures replaces both.
fn save_keeping_failures(spectra: &Spectra, main: &Path) -> std::io::Result<Saved> {
    let green = main.with_file_name("spectra-green.json");
    // Timed-out tests count: such a run is not green either.
    let failing = |s: &Spectra| {
        let bad = |o: Outcome| o.is_failing() || o == Outcome::TimedOut;
        s.tests.iter().filter(|t| bad(t.outcome)).count()
    };
    if failing(spectra) == 0
        && let Ok(earlier) = Spectra::load_with(main, crate::spectra::EdgeProfiles::Skip)
        && failing(&earlier) > 0
    {
        spectra.save(&green)?;
        let when = std::fs::metadata(main).and_then(|m| m.modified());
        let n = failing(&earlier);
        let kept = format!(
            "{}, {n} test{} not passing",
            when.map_or_else(|_| "time unknown".into(), ui::ago),
            if n == 1 { "" } else { "s" }
        );
        return Ok(Saved::Green { kept, green });
    }
    spectra.save(main)?;
    match std::fs::remove_file(&green) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(Saved::Main),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::Outcome;

    fn outcome(name: &str, not_run: Option<&str>) -> JobOutcome {
        JobOutcome {
            record: plan::record("b", name, Outcome::Failed),
            covered: Vec::new(),
            profiles: Vec::new(),
            edges: Vec::new(),
            not_run: not_run.map(str::to_string),
        }
    }

    #[test]
    fn a_run_with_tests_that_could_not_start_is_an_error_not_a_result() {
        assert!(not_run(&[outcome("t1", None), outcome("t2", None)]).is_none());
        let e = not_run(&[
            outcome("t1", None),
            outcome("t2", Some("No such file or directory")),
            outcome("t3", Some("x")),
        ])
        .unwrap();
        assert_eq!(e.exit_code(), crate::error::exit::SETUP);
        assert_eq!(
            e.to_string(),
            "2 of 3 tests could not be run (first: b t2: No such file or directory); the spectra were not saved"
        );
    }
}

#[cfg(test)]
mod saving {
    use super::*;
    use crate::spectra::{Outcome, TestRecord};

    fn run(outcome: Outcome) -> Spectra {
        let tests = vec![TestRecord::new("b", "t", outcome)];
        Spectra::from_tests("/ws".into(), tests, Vec::new(), &[Vec::new()])
    }

    #[test]
    fn a_green_run_never_replaces_a_run_with_failures() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("spectra.json");
        let green = dir.path().join("spectra-green.json");
        let outcome = |p: &Path| Spectra::load(p).unwrap().tests[0].outcome;
        // Nothing before: a green run is saved as the workspace's spectra.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Passed), &main).unwrap(),
            Saved::Main
        );
        assert_eq!(outcome(&main), Outcome::Passed);
        // A failing run replaces a green one.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Failed), &main).unwrap(),
            Saved::Main
        );
        // A green run after it goes next to it.
        let Saved::Green { kept, green: to } = save_keeping_failures(&run(Outcome::Passed), &main).unwrap() else {
            panic!("the failing run was replaced")
        };
        assert_eq!(to, green);
        assert!(kept.ends_with("s ago, 1 test not passing"), "{kept}");
        assert_eq!((outcome(&main), outcome(&green)), (Outcome::Failed, Outcome::Passed));
        // The next run with failures replaces the kept one and drops the stale green file.
        assert_eq!(
            save_keeping_failures(&run(Outcome::Crashed), &main).unwrap(),
            Saved::Main
        );
        assert_eq!(outcome(&main), Outcome::Crashed);
        assert!(!green.exists());
    }
}
