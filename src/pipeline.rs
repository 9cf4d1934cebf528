//! Drives the stages: build → list → run and decode each test as it finishes → matrix →
//! save → rank → report. Every result already computed is kept when a later step fails.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::analysis::Analysis;
use crate::build::{self, Built, Workspace};
use crate::cli::{
    AnalyzeArgs, EvalArgs, Format, Granularity, ListFormat, MeasuresArgs, MergeArgs, Order, OutputArgs, ReportArgs,
    RunArgs,
};
use crate::coverage::{LineDecoder, hex};
use crate::error::{SflError, exit};
use crate::rank::{Ranking, rank_only};
use crate::report;
use crate::runner::{self, Job, Listing};
use crate::spectra::{Outcome, Spectra, TestRecord};
use crate::ui;

/// A finished job: its record, the units it covered, and the profiles kept for it.
type JobResult = (TestRecord, Vec<u32>, Vec<PathBuf>, Vec<crate::edges::Edge>);

/// Written next to kept profiles (`--keep-profiles`), for the decoder oracle and debugging.
#[derive(Serialize, serde::Deserialize, Debug)]
pub struct KeptProfile {
    pub binary: String,
    pub name: String,
    pub binary_path: PathBuf,
    pub profiles: Vec<PathBuf>,
}

/// The test-run progress bar: counts by outcome and the slowest test still running.
struct RunProgress {
    bar: indicatif::ProgressBar,
    running: Mutex<HashMap<usize, Instant>>,
    tally: Mutex<[usize; 4]>,
    finished: std::sync::atomic::AtomicBool,
    total: usize,
}

impl RunProgress {
    fn new(total: usize) -> Self {
        RunProgress {
            bar: ui::bar("Testing", total as u64),
            running: Mutex::new(HashMap::new()),
            tally: Mutex::new([0; 4]),
            finished: std::sync::atomic::AtomicBool::new(false),
            total,
        }
    }

    fn started(&self, job: usize) {
        self.running.lock().unwrap().insert(job, Instant::now());
    }

    fn finished(&self, job: usize) {
        self.running.lock().unwrap().remove(&job);
    }

    fn counts(&self) -> String {
        let [p, f, t, c] = *self.tally.lock().unwrap();
        let mut parts = vec![format!("{p} passed"), format!("{f} failed")];
        if t > 0 {
            parts.push(format!("{t} timed out"));
        }
        if c > 0 {
            parts.push(format!("{c} crashed"));
        }
        parts.join(", ")
    }

    /// Called on the main thread as each test's result arrives.
    fn record(&self, rec: &TestRecord) {
        let slot = match rec.outcome {
            Outcome::Passed => 0,
            Outcome::Failed => 1,
            Outcome::TimedOut => 2,
            _ => 3,
        };
        self.tally.lock().unwrap()[slot] += 1;
        self.bar.inc(1);
        let done = self.bar.position();
        let line = format!(
            "{:>12} [{:>7.3}s] ({done}/{}) {} {}",
            rec.outcome.as_str().to_uppercase(),
            rec.duration_ms as f64 / 1000.0,
            self.total,
            rec.binary,
            rec.name
        );
        if rec.outcome == Outcome::Passed {
            ui::detail(line);
        } else {
            ui::info(line);
        }
        for w in &rec.warnings {
            ui::warn(format!("{} {}: {w}", rec.binary, rec.name));
        }
    }

    /// Refreshes the bar's message (counts and the slowest running test) until `done`.
    fn tick_until_done(&self, jobs: &[Job], built: &Built) {
        use std::sync::atomic::Ordering;
        while !self.finished.load(Ordering::Relaxed) {
            let slowest = self
                .running
                .lock()
                .unwrap()
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(&j, t)| (j, t.elapsed()));
            let mut msg = self.counts();
            if let Some((j, age)) = slowest {
                let job = &jobs[j];
                let name = job.name.as_deref().unwrap_or("main");
                msg.push_str(&format!(
                    " · slowest running: {} {name} ({:.1}s)",
                    built.tests[job.binary].id,
                    age.as_secs_f64()
                ));
            }
            self.bar.set_message(msg);
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn done(&self) {
        self.finished.store(true, std::sync::atomic::Ordering::Relaxed);
        self.bar.finish_and_clear();
    }
}

/// `cargo sfl [OPTIONS] [FILTER]`.
pub fn run(args: &RunArgs) -> anyhow::Result<i32> {
    let spectra = collect(args)?;
    emit(&spectra, &args.output)
}

/// Builds, runs every test and decodes: the matrix, saved to `target/sfl/spectra.json` (and
/// `--save-spectra`).
pub fn collect(args: &RunArgs) -> anyhow::Result<Spectra> {
    let mut ws = Workspace::load(args.select.manifest_path.as_deref(), args.select.target_dir.as_deref())?;
    let with_edges = !args.exec.no_edges;
    if !with_edges {
        ws.build_dir = ws.target_dir.join("lines-only");
    }
    let runtime = if with_edges {
        Some(crate::edges::prepare_runtime(&ws.target_dir, &ws.build_dir)?)
    } else {
        None
    };
    ui::status(
        "Building",
        format!(
            "tests with coverage{} in {}",
            if with_edges { " and edge profiles" } else { "" },
            ws.build_dir.display()
        ),
    );
    let built = build::build(&ws, &args.select, runtime.as_deref())?;
    let release = args.select.release;
    let timeout = Duration::from_secs_f64(args.exec.test_timeout.max(0.001));
    let jobs_n = args
        .exec
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);

    let scratch = ws.target_dir.join("profiles");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;

    // List every binary's tests, and read its coverage map meanwhile (once per binary).
    let relative = |p: &Path| ws.relative(p);
    let binaries: Vec<PathBuf> = built
        .tests
        .iter()
        .map(|t| t.path.clone())
        .chain(built.others.iter().cloned())
        .collect();
    let coverage = LineDecoder::new(binaries, &relative);
    let edge_collector = crate::edges::Collector::new(coverage.paths(), &relative);
    let prep_started = Instant::now();
    let mut listings: Vec<Option<Result<Listing, String>>> = (0..built.tests.len()).map(|_| None).collect();
    let list_dirs: Vec<PathBuf> = (0..built.tests.len())
        .map(|i| scratch.join(format!("list{i}")))
        .collect();
    let listing_bar = ui::spinner("Listing", format!("0/{} test binaries", built.tests.len()));
    let mut listed = 0;
    runner::parallel(
        &built.tests,
        jobs_n,
        |i, bin| {
            let _ = std::fs::create_dir_all(&list_dirs[i]);
            let r = runner::list(
                bin,
                &ws.members[bin.package],
                &ws.build_dir,
                release,
                &list_dirs[i],
                timeout,
            );
            let _ = std::fs::remove_dir_all(&list_dirs[i]);
            // Errors are reported per test when its profiles are decoded.
            let _ = coverage.binary(i);
            if with_edges {
                edge_collector.prepare(i);
            }
            r
        },
        |i, r| {
            listed += 1;
            listing_bar.set_message(format!(
                "{listed}/{} test binaries (and their coverage maps)",
                built.tests.len()
            ));
            listings[i] = Some(r);
        },
    );
    listing_bar.finish_and_clear();

    let mut jobs = Vec::new();
    let mut ignored_records = Vec::new();
    let matches = |name: &str| args.filter.as_deref().is_none_or(|f| name.contains(f));
    for (b, listing) in listings.into_iter().enumerate() {
        let bin = &built.tests[b];
        let listing = match listing.expect("every binary listed") {
            Ok(l) => l,
            Err(e) => {
                ui::warn(format!(
                    "cannot list the tests of {}: {e}; running it as one test",
                    bin.id
                ));
                Listing {
                    tests: vec![],
                    ignored: vec![],
                    whole: true,
                }
            }
        };
        if listing.whole {
            if matches("main") {
                jobs.push(Job {
                    binary: b,
                    name: None,
                    ignored: false,
                });
            }
            continue;
        }
        for t in listing.tests.iter().filter(|t| matches(t)) {
            let is_ignored = listing.ignored.contains(t);
            if is_ignored && !args.exec.include_ignored {
                ignored_records.push(record(&bin.id, t, Outcome::Ignored));
                continue;
            }
            jobs.push(Job {
                binary: b,
                name: Some(t.clone()),
                ignored: is_ignored,
            });
        }
    }
    // One canonical order (binary, name), so shards merge into exactly the unsharded matrix.
    jobs.sort_by(|a, b| {
        let id = |j: &Job| (built.tests[j.binary].id.clone(), j.name.clone());
        id(a).cmp(&id(b))
    });
    ignored_records.sort_by(crate::spectra::test_order);
    if let Some(p) = &args.exec.partition {
        let all = jobs.len();
        let mut index = 0;
        jobs.retain(|j| {
            let id = format!("{} {}", built.tests[j.binary].id, j.name.as_deref().unwrap_or("main"));
            index += 1;
            p.contains(index - 1, &id)
        });
        ui::status("Partition", format!("{p}: {} of {all} tests", jobs.len()));
    }
    if jobs.is_empty() {
        return Err(SflError::NoTests.into());
    }
    let n_bins = jobs
        .iter()
        .map(|j| j.binary)
        .collect::<std::collections::HashSet<_>>()
        .len();
    ui::status(
        "Listed",
        format!(
            "tests and read {} coverage maps in {:.1} ms",
            built.tests.len(),
            prep_started.elapsed().as_secs_f64() * 1e3
        ),
    );
    ui::status(
        "Running",
        format!(
            "{} tests from {} binar{} ({} at a time)",
            jobs.len(),
            n_bins,
            if n_bins == 1 { "y" } else { "ies" },
            jobs_n
        ),
    );
    let started = Instant::now();
    let decode_total = Mutex::new(Duration::ZERO);
    let mut results: Vec<Option<JobResult>> = (0..jobs.len()).map(|_| None).collect();
    let keep = args.exec.keep_profiles;
    let progress = RunProgress::new(jobs.len());
    std::thread::scope(|scope| {
        scope.spawn(|| progress.tick_until_done(&jobs, &built));
        runner::parallel(
            &jobs,
            jobs_n,
            |i, job| {
                progress.started(i);
                let bin = &built.tests[job.binary];
                let dir = scratch.join(format!("t{i}"));
                let name = job.name.clone().unwrap_or_else(|| "main".into());
                let mut rec = record(&bin.id, &name, Outcome::Failed);
                let mut covered = Vec::new();
                let mut traversed = crate::edges::Traversed::default();
                let mut kept = Vec::new();
                match runner::run_test(
                    job,
                    bin,
                    &ws.members[bin.package],
                    &ws.build_dir,
                    release,
                    &dir,
                    timeout,
                    with_edges,
                ) {
                    Err(e) => rec.warnings.push(format!("could not run: {e}")),
                    Ok(fin) => {
                        rec.outcome = fin.outcome;
                        rec.signal = fin.signal;
                        rec.message = fin.message;
                        rec.duration_ms = fin.duration.as_millis() as u64;
                        let t0 = Instant::now();
                        coverage.decode_test(job.binary, &fin.profiles, &mut covered, &mut rec.warnings);
                        if with_edges {
                            edge_collector.decode_test(&fin.edge_files, &mut traversed, &mut rec.warnings);
                        }
                        *decode_total.lock().unwrap() += t0.elapsed();
                        kept = fin.profiles;
                    }
                }
                if !keep {
                    let _ = std::fs::remove_dir_all(&dir);
                    kept.clear();
                }
                covered.sort_unstable();
                covered.dedup();
                traversed.edges.sort_unstable();
                traversed.edges.dedup();
                progress.finished(i);
                (rec, covered, kept, traversed.edges)
            },
            |i, r| {
                progress.record(&r.0);
                results[i] = Some(r);
            },
        );
        progress.done();
    });
    let elapsed = started.elapsed();
    let decode_time = *decode_total.lock().unwrap();
    ui::status(
        "Finished",
        format!(
            "{} tests in {:.2}s ({}); decoded their profiles in {:.1} ms ({:.0} µs per test)",
            jobs.len(),
            elapsed.as_secs_f64(),
            progress.counts(),
            decode_time.as_secs_f64() * 1e3,
            decode_time.as_secs_f64() * 1e6 / jobs.len() as f64
        ),
    );

    // Assemble the matrix with units in code order, so output is stable.
    let crate::coverage::SortedUnits {
        units,
        functions: interner_functions,
        new_id: remap,
    } = coverage.finish();
    let mut tests = Vec::new();
    let mut covered = Vec::new();
    let mut kept_index = Vec::new();
    let mut traversed = Vec::new();
    for (i, r) in results.into_iter().enumerate() {
        let (rec, cov, kept, edges) = r.expect("every job finished");
        traversed.push(edges);
        if keep {
            kept_index.push(KeptProfile {
                binary: rec.binary.clone(),
                name: rec.name.clone(),
                binary_path: built.tests[jobs[i].binary].path.clone(),
                profiles: kept,
            });
        }
        tests.push(rec);
        covered.push(cov.into_iter().map(|u| remap[u as usize]).collect::<Vec<u32>>());
    }
    for rec in ignored_records {
        tests.push(rec);
        covered.push(Vec::new());
        traversed.push(Vec::new());
    }
    let edges = with_edges.then(|| {
        let unit_id: HashMap<(&str, u32), u32> = units
            .iter()
            .enumerate()
            .map(|(i, u)| ((u.file.as_str(), u.line), i as u32))
            .collect();
        let e = edge_collector.finish(tests.len(), &traversed, |f, l| unit_id.get(&(f, l)).copied());
        ui::detail(format!("{} blocks, {} edges traversed", e.blocks.len(), e.edges.len()));
        e
    });
    let mut spectra = Spectra::from_tests(ws.root.to_string_lossy().into_owned(), tests, units, &covered);
    spectra.edges = edges;
    spectra.set_functions(interner_functions);
    spectra.build = Some(build_info(&ws.root, &spectra));
    spectra.partition = args.exec.partition.map(|p| p.to_string());
    for path in std::iter::once(ws.spectra_path()).chain(args.exec.save_spectra.clone()) {
        spectra
            .save(&path)
            .with_context(|| format!("cannot save spectra to {}", path.display()))?;
    }
    if keep {
        let index = scratch.join("index.json");
        std::fs::write(&index, serde_json::to_vec_pretty(&kept_index)?)?;
        ui::status("Kept", format!("profiles: {}", index.display()));
    }
    Ok(spectra)
}

/// The toolchain and a digest of the units' source files (what shards must agree on).
fn build_info(root: &Path, spectra: &Spectra) -> crate::spectra::BuildInfo {
    use md5::{Digest, Md5};
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"));
    let mut files: Vec<&str> = spectra.units.iter().map(|u| u.file.as_str()).collect();
    files.dedup();
    let mut md5 = Md5::new();
    for f in files {
        md5.update(f.as_bytes());
        md5.update([0]);
        match std::fs::read(root.join(f)) {
            Ok(bytes) => {
                md5.update((bytes.len() as u64).to_le_bytes());
                md5.update(&bytes);
            }
            Err(_) => md5.update(b"(missing)"),
        }
    }
    crate::spectra::BuildInfo {
        rustc: version,
        sources: hex(&md5.finalize()),
    }
}

/// `cargo sfl eval`: how well every measure localises the known faults.
pub fn eval(args: &EvalArgs) -> anyhow::Result<i32> {
    let faults = crate::faults::load(&args.faults).map_err(SflError::Usage)?;
    if matches!(args.run.output.format, Format::Sarif | Format::Html) {
        return Err(SflError::Usage("cargo sfl eval writes --format human or json".into()).into());
    }
    let spectra = match &args.spectra {
        Some(path) => Spectra::load(path).map_err(|reason| SflError::BadSpectra {
            path: path.clone(),
            reason: reason.to_string(),
        })?,
        None => collect(&args.run)?,
    };
    let out = &args.run.output;
    let mut converted = None;
    let spectra = at_granularity(&spectra, out, &mut converted)?;
    // At function granularity a fault is the functions that contain its lines.
    let faults: Vec<crate::faults::Fault> = if out.granularity == Granularity::Function {
        faults
            .iter()
            .map(|f| crate::faults::Fault {
                lines: spectra.enclosing_functions(&f.file, &f.lines),
                ..f.clone()
            })
            .collect()
    } else {
        faults
    };
    let measures: Vec<&'static crate::measures::Measure> = if out.measure.is_empty() {
        if spectra.edges.is_none() {
            ui::note("no edge profiles in these spectra: cp is not evaluated");
        }
        crate::measures::all()
            .filter(|m| spectra.edges.is_some() || !m.needs_edges())
            .collect()
    } else {
        out.measures()
    };
    require_edges(spectra, &measures)?;
    let settings = crate::eval::Settings {
        opts: out.options(),
        p_jump: args.p_jump,
        exact_limit: args.exact_limit,
        walks: args.walks,
        ht: !args.no_ht,
    };
    let report = crate::eval::evaluate(spectra, &faults, &measures, &settings);
    let text = match out.format {
        Format::Json => crate::eval::json(&report),
        _ => crate::eval::human(&report, args.sort_by),
    };
    write_output(out.output.as_deref(), &text)?;
    if report.measures.is_empty() {
        ui::error("no known fault is on a line any test ran, so no measure can localise it (see the faults' states)");
        return Ok(exit::UNLOCALISABLE);
    }
    Ok(exit::REPORTED)
}

/// `cargo sfl merge`: combine shards and report on the whole.
pub fn merge(args: &MergeArgs) -> anyhow::Result<i32> {
    let mut shards = Vec::new();
    for path in &args.files {
        let s = Spectra::load(path).map_err(|reason| SflError::BadSpectra {
            path: path.clone(),
            reason: reason.to_string(),
        })?;
        shards.push(s);
    }
    let mut seen: Vec<String> = shards.iter().filter_map(|s| s.partition.clone()).collect();
    seen.sort();
    let merged = Spectra::merge(shards).map_err(|reason| SflError::BadSpectra {
        path: args.files[0].clone(),
        reason: reason.to_string(),
    })?;
    ui::status(
        "Merged",
        format!(
            "{} shards ({}): {} tests, {} lines",
            args.files.len(),
            if seen.is_empty() {
                "no partition recorded".to_string()
            } else {
                seen.join(", ")
            },
            merged.tests.len(),
            merged.units.len()
        ),
    );
    if let Some(out) = &args.save_spectra {
        merged
            .save(out)
            .with_context(|| format!("cannot save spectra to {}", out.display()))?;
    }
    emit(&merged, &args.output)
}

fn record(binary: &str, name: &str, outcome: Outcome) -> TestRecord {
    TestRecord {
        binary: binary.to_string(),
        name: name.to_string(),
        outcome,
        signal: None,
        message: None,
        duration_ms: 0,
        warnings: Vec::new(),
    }
}

/// `cargo sfl report`: re-rank saved spectra.
pub fn report(args: &ReportArgs) -> anyhow::Result<i32> {
    let path = match &args.spectra {
        Some(p) => p.clone(),
        None => Workspace::load(args.manifest_path.as_deref(), None)?.spectra_path(),
    };
    if !path.exists() {
        return Err(SflError::BadSpectra {
            path,
            reason: "no such file; run `cargo sfl` first".into(),
        }
        .into());
    }
    let spectra = Spectra::load(&path).map_err(|reason| SflError::BadSpectra {
        path: path.clone(),
        reason: reason.to_string(),
    })?;
    emit(&spectra, &args.output)
}

/// `cargo sfl measures`: the catalogue.
pub fn measures(args: &MeasuresArgs) -> anyhow::Result<i32> {
    let text = match args.format {
        ListFormat::Human => report::catalogue_human(),
        ListFormat::Json => report::catalogue_json(),
    };
    write_output(None, &text)?;
    Ok(exit::REPORTED)
}

/// `cargo sfl analyze --gzoltar DIR`: rank an imported matrix.
pub fn analyze(args: &AnalyzeArgs) -> anyhow::Result<i32> {
    let spectra = crate::gzoltar::load(&args.gzoltar).map_err(|reason| SflError::BadSpectra {
        path: args.gzoltar.clone(),
        reason,
    })?;
    emit(&spectra, &args.output)
}

/// Refuses measures that need edge profiles when the spectra have none.
fn require_edges(spectra: &Spectra, measures: &[&crate::measures::Measure]) -> Result<(), SflError> {
    match measures.iter().find(|m| m.needs_edges()) {
        Some(m) if spectra.edges.is_none() => Err(SflError::Usage(format!(
            "the {} measure needs control-flow edge profiles, which these spectra lack (collected with --no-edges, \
             imported, or saved by an older cargo sfl); run `cargo sfl` without --no-edges",
            m.name
        ))),
        _ => Ok(()),
    }
}

/// Says how CP's system was solved when it was not solved exactly.
fn warn_cp(analysis: &Analysis) {
    if let Some((sol, _)) = analysis.cp()
        && let crate::cp::CpMethod::Damped { factor, reason } = &sol.method
    {
        let names = analysis
            .spectra
            .edges
            .as_ref()
            .map_or_else(Vec::new, |e| e.function_names(&sol.damped_blocks));
        let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        let more = names.len().saturating_sub(5);
        ui::note(format!(
            "cp: {reason} (factor {factor}). Damped: {shown}{}",
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
}

/// The matrix as the report options want it: without test code (`--exclude-test-code`) and
/// at the requested granularity.
fn at_granularity<'a>(
    spectra: &'a Spectra,
    out: &OutputArgs,
    converted: &'a mut Option<Spectra>,
) -> anyhow::Result<&'a Spectra> {
    let mut owned = out.exclude_test_code.then(|| without_test_code(spectra));
    if out.granularity == Granularity::Function {
        let base = owned.as_ref().unwrap_or(spectra);
        if base.functions.is_empty() {
            return Err(SflError::Usage(
                "--granularity function needs function information, which imported matrices and spectra saved by older versions lack".into(),
            )
            .into());
        }
        owned = Some(base.by_function());
    }
    Ok(match owned {
        Some(s) => converted.insert(s),
        None => spectra,
    })
}

/// The matrix without the lines `testcode` finds to be test code.
fn without_test_code(spectra: &Spectra) -> Spectra {
    let mut files: Vec<&str> = spectra.units.iter().map(|u| u.file.as_str()).collect();
    files.dedup();
    let tests = crate::testcode::TestCode::find(Path::new(&spectra.workspace_root), &files);
    let keep: Vec<bool> = spectra.units.iter().map(|u| !tests.contains(&u.file, u.line)).collect();
    ui::info(format!(
        "left out {} lines of test code",
        keep.iter().filter(|k| !**k).count()
    ));
    spectra.retain_units(&keep)
}

/// Ranks and writes the report; returns the exit code.
pub fn emit(spectra: &Spectra, out: &OutputArgs) -> anyhow::Result<i32> {
    let mut converted = None;
    let spectra = at_granularity(spectra, out, &mut converted)?;
    let opts = out.options();
    let measures = out.measures();
    require_edges(spectra, &measures)?;
    let analysis = Analysis::with_cp(spectra, opts.group, measures.iter().any(|m| m.needs_edges()));
    let summary = report::Summary::of(&analysis);
    // --diff-base: which entries touch changed lines.
    let changed: Option<Vec<bool>> = match &out.diff_base {
        Some(rev) => {
            let changes =
                crate::diff::changed_since(Path::new(&spectra.workspace_root), rev).map_err(SflError::DiffBase)?;
            Some(
                analysis
                    .groups
                    .iter()
                    .map(|g| {
                        g.units
                            .iter()
                            .any(|&u| changes.contains(&spectra.units[u].file, spectra.units[u].line))
                    })
                    .collect(),
            )
        }
        None => None,
    };
    let keep = if out.only_changed { changed.as_deref() } else { None };
    let rankings: Vec<Ranking> = out
        .measures()
        .into_iter()
        .map(|m| {
            let mut r = rank_only(&analysis, m, &opts, keep);
            if let Some(c) = &changed {
                for x in &mut r.entries {
                    x.changed = c[x.group];
                }
            }
            r
        })
        .collect();
    let mut rankings = rankings;
    if rankings.iter().any(|r| r.measure.needs_edges()) {
        warn_cp(&analysis);
    }
    if out.order == Order::Ht {
        let model = crate::eval::HtModel::new(spectra, &analysis);
        for r in &mut rankings {
            let scored = analysis.score(r.measure, &opts);
            let (times, method) = model.times(&scored, 0.5, 3000, 500);
            // An entry is reached when its first line is.
            let group_times: Vec<f64> = analysis
                .groups
                .iter()
                .map(|g| {
                    g.units
                        .iter()
                        .map(|u| times[model.loc[u]])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            r.order_by_time(&analysis, &group_times, method);
        }
    }
    let view = report::View {
        opts,
        top: out.top,
        diff_base: out.diff_base.as_deref(),
    };
    let text = match out.format {
        Format::Json => Some(report::json(&analysis, &rankings, &view)),
        Format::Sarif => Some(crate::sarif::sarif(&analysis, &rankings, &view)),
        Format::Html => None,
        Format::Human if summary.failing() == 0 => Some(report::no_failures(&analysis)),
        Format::Human => Some(report::human(&analysis, &rankings, &view)),
    };
    match text {
        Some(text) => write_output(out.output.as_deref(), &text)?,
        None => {
            let dir = out.output.as_deref().ok_or_else(|| {
                SflError::Usage("--format html needs --output DIR (the page is written there)".into())
            })?;
            let page = crate::html::write(&analysis, &rankings, &view, dir)
                .with_context(|| format!("cannot write the HTML report into {}", dir.display()))?;
            ui::status("Wrote", page.display().to_string());
        }
    }
    if summary.failing() > 0 && summary.failing() == summary.ran() {
        ui::note("every test failed, so no passing test tells lines apart; rankings rest on failing coverage alone");
    }
    if summary.failing() == 0 {
        return Ok(exit::NO_FAILING_TESTS);
    }
    // --fail-on: a reported entry at or above the threshold.
    if let Some(threshold) = out.fail_on {
        let groups = &analysis.groups;
        let hits: Vec<String> = rankings
            .iter()
            .flat_map(|r| {
                r.entries.iter().filter(|x| x.score >= threshold).map(move |x| {
                    let u = &spectra.units[groups[x.group].units[0]];
                    format!(
                        "{} {} at {}:{}",
                        r.measure.name,
                        report::fmt_score(r.measure, x),
                        u.file,
                        u.line
                    )
                })
            })
            .collect();
        if !hits.is_empty() {
            ui::error(format!(
                "{} entr{} reached --fail-on {threshold}: {}",
                hits.len(),
                if hits.len() == 1 { "y" } else { "ies" },
                hits.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
            ));
            return Ok(exit::SUSPICION);
        }
    }
    Ok(exit::REPORTED)
}

fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display())),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
                // A closed pipe (`cargo sfl | head`) is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.context("cannot write the report"),
            }
        }
    }
}
