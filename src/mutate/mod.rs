//! `--mutate`: mutation-based fault localisation of the top suspects, after Metallaxis-FL
//! (Papadakis and Le Traon). The lines at the top of the rankings are mutated ([`sites`]),
//! all mutants compiled into a few plain builds of a copy of the workspace ([`schema`]), and
//! for each mutant the failing tests and the passing tests that ran its line are run again.
//! A mutant of the faulty line tends to change how the failing tests fail (or make them
//! pass) and to break few passing tests; a line's score is its best mutant's Ochiai score over
//! those kills. The rankings then order their mutated entries by that score, in the places
//! those entries held: every other entry stays where it was.
//!
//! Nothing here touches the user's files: the copy lives in the build directory
//! (`<target>/sfl/mutate/src`), its build in `<target>/sfl/mutate/target`.

pub mod schema;
pub mod sites;

use std::collections::{BTreeMap, HashMap};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use cargo_metadata::Message;
use serde::Serialize;

use crate::config::RunConfig;
use crate::error::SflError;
use crate::spectra::{Outcome, Spectra};
use crate::ui;
use crate::workspace::{Built, TestBinary, Workspace};
use sites::Mutant;

/// Lines of each ranking mutated when `--mutate-lines` is not given.
pub const DEFAULT_LINES: usize = 10;

/// How often a round is rebuilt after dropping mutants the compiler rejected.
const MAX_BUILDS_PER_ROUND: usize = 6;

/// What one mutant did.
#[derive(Clone, Debug, Serialize)]
pub struct MutantResult {
    pub file: String,
    pub line: u32,
    pub operator: String,
    /// Failing tests whose failure changed (or that passed).
    pub failing_changed: u32,
    /// Passing tests that failed.
    pub passing_broken: u32,
    /// Tests run (failing and passing).
    pub tests: u32,
}

/// A mutated line's result.
#[derive(Clone, Debug, Serialize)]
pub struct LineScore {
    pub file: String,
    pub line: u32,
    /// Mutants generated on the line.
    pub mutants: u32,
    /// Those that compiled and ran.
    pub viable: u32,
    /// The best viable mutant's Ochiai score over its kills (`None`: no viable mutant).
    pub score: Option<f64>,
}

/// What `--mutate` found and what it cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Mutation {
    pub lines: Vec<LineScore>,
    pub mutants: Vec<MutantResult>,
    /// Failing tests compared (those the plain build runs and that fail there too).
    pub failing_tests: u32,
    /// cargo builds (rounds and their rebuilds).
    pub builds: u32,
    /// Test processes run.
    pub runs: u32,
    pub seconds: f64,
}

impl Mutation {
    /// The score of `file:line`, when it was mutated and had a viable mutant.
    pub fn score(&self, file: &str, line: u32) -> Option<f64> {
        self.lines
            .iter()
            .find(|l| l.file == file && l.line == line)
            .and_then(|l| l.score)
    }

    /// One line for the terminal: what ran and what it cost.
    pub fn summary(&self) -> String {
        let viable: u32 = self.lines.iter().map(|l| l.viable).sum();
        let generated: u32 = self.lines.iter().map(|l| l.mutants).sum();
        let scored = self.lines.iter().filter(|l| l.score.is_some()).count();
        format!(
            "{} of {} lines by {viable} of {generated} mutants that compiled ({} builds, {} test runs, {:.1}s); \
             mutated lines are re-ordered among their places by how their mutants change the failures",
            scored,
            self.lines.len(),
            self.builds,
            self.runs,
            self.seconds
        )
    }
}

/// Metallaxis-FL's score of one mutant: Ochiai over kills, `changed` of `failing` failing
/// tests and `broken` passing ones.
pub fn metallaxis(changed: u32, broken: u32, failing: u32) -> f64 {
    if changed == 0 || failing == 0 {
        return 0.0;
    }
    let (c, b, f) = (f64::from(changed), f64::from(broken), f64::from(failing));
    c / (f * (c + b)).sqrt()
}

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

/// The two passes over a round's mutants.
#[derive(Clone, Copy)]
enum Phase {
    Failing,
    Passing,
}

/// A test of the spectra as the plain build runs it.
struct PlainTest {
    /// Index into `Spectra::tests`.
    record: usize,
    binary: usize,
    name: Option<String>,
    timeout: Duration,
}

/// Mutates `lines` (workspace-relative file, line) and runs the tests again; `spectra` is the
/// run whose tests are compared.
pub fn mutate(cfg: &RunConfig, spectra: &Spectra, lines: &[(String, u32)]) -> Result<Mutation, SflError> {
    let started = Instant::now();
    let ws = Workspace::load(
        cfg.selection.manifest_path.as_deref(),
        cfg.selection.target_dir.as_deref(),
    )?;
    // Doctests are not rebuilt for the mutants: a run whose failures are all doctests has
    // nothing to compare.
    if !spectra
        .tests
        .iter()
        .any(|t| t.outcome.is_failing() && !t.binary.contains("::doctest/"))
    {
        return Err(SflError::Setup(
            "every failing test is a doctest, and the mutants' builds do not rebuild doctests".into(),
        ));
    }
    let base = ws.build_dir.join("mutate");
    let copy = base.join("src");
    let setup = |what: String| SflError::Setup(what);
    sync_tree(&ws.root, &copy, &[&ws.cargo_target_dir, &ws.target_dir])
        .map_err(|e| setup(format!("cannot copy the workspace to {}: {e}", copy.display())))?;

    // The mutants, per file.
    let mut by_file: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (f, l) in lines {
        by_file.entry(f.as_str()).or_default().push(*l);
    }
    // Every crate root of the copy names std as `__sfl_std` (the switch's path), so that
    // `#![no_std]` crates can read the variable too; after its last line, so no line moves.
    let roots = crate_roots(&ws);
    let mut based: BTreeMap<String, String> = BTreeMap::new();
    for rel in &roots {
        if let Ok(text) = std::fs::read_to_string(ws.root.join(rel)) {
            based.insert(rel.clone(), schema::name_std(&text));
        }
    }
    let mut files: Vec<(String, String)> = Vec::new();
    let mut mutants: Vec<(usize, Mutant)> = Vec::new();
    for (rel, ls) in &by_file {
        let text = match based.get(*rel) {
            Some(t) => t.clone(),
            None => match std::fs::read_to_string(ws.root.join(rel)) {
                Ok(t) => t,
                Err(_) => continue,
            },
        };
        let Some(found) = sites::mutants(&text, ls) else {
            ui::detail(format!("--mutate: syn cannot parse {rel}; its lines are not mutated"));
            continue;
        };
        let k = files.len();
        files.push((rel.to_string(), text));
        mutants.extend(found.into_iter().map(|m| (k, m)));
    }
    for (rel, text) in &based {
        let path = copy.join(rel);
        write_if_changed(&path, text).map_err(|e| setup(format!("cannot write {}: {e}", path.display())))?;
    }
    let mut result = Mutation::default();
    let mut counts: Vec<(u32, u32, u32)> = vec![(0, 0, 0); mutants.len()];
    let mut viable = vec![false; mutants.len()];

    let rounds = schema::rounds(&mutants);
    let manifest = copy_manifest(&ws, cfg.selection.manifest_path.as_deref(), &copy)?;
    let target = base.join("target");
    let copy_ws = Workspace::load(Some(&manifest), Some(&target))?;
    let units = spectra.unit_index();
    let passing_mask = spectra.passing_mask();
    let mut baseline: Option<HashMap<usize, (Outcome, String)>> = None;
    let spinner = ui::spinner(
        "Mutating",
        format!("{} mutants of {} lines", mutants.len(), lines.len()),
    );
    for (r, round) in rounds.iter().enumerate() {
        let mut alive: Vec<&schema::Site> = round.iter().collect();
        let mut built = None;
        for _ in 0..MAX_BUILDS_PER_ROUND {
            let written = write_round(&copy, &files, &alive, &mutants)?;
            spinner.set_message(format!(
                "round {} of {}: building {} sites",
                r + 1,
                rounds.len(),
                alive.len()
            ));
            result.builds += 1;
            let (b, errors) = build_plain(cfg, (&copy_ws, &manifest), &copy, &target)?;
            if errors.is_empty() {
                built = Some(b);
                break;
            }
            let ours = |e: &CompileError| files.iter().any(|(rel, _)| copy.join(rel) == e.file);
            if !errors.iter().any(ours) {
                let e = &errors[0];
                return Err(setup(format!(
                    "the copy of the workspace in {} does not build ({}:{}: an error in no mutated file; \
                     a path dependency outside the workspace, or a file the build reads from outside it?)",
                    copy.display(),
                    e.file.display(),
                    e.line
                )));
            }
            let before = alive.len();
            alive = prune(alive, &written, &errors, &files, &copy, &mutants);
            ui::detail(format!(
                "--mutate: round {}: {} compiler errors ({}); {} of {before} sites left",
                r + 1,
                errors.len(),
                errors
                    .iter()
                    .map(|e| format!("{}:{}:{}", e.file.display(), e.line, e.column_start))
                    .collect::<Vec<_>>()
                    .join(", "),
                alive.len()
            ));
            if alive.len() == before || alive.is_empty() {
                break;
            }
        }
        let Some(built) = built else {
            ui::detail(format!(
                "--mutate: round {} did not compile; its mutants are left out",
                r + 1
            ));
            continue;
        };
        let tests = plain_tests(spectra, &built, cfg);
        let failing: Vec<&PlainTest> = tests
            .iter()
            .filter(|t| spectra.tests[t.record].outcome.is_failing())
            .collect();
        if baseline.is_none() {
            spinner.set_message("running the failing tests on the unmutated build");
            let runs: Vec<(u32, &PlainTest)> = failing.iter().map(|t| (0, *t)).collect();
            let got = run_all(&runs, &built, &copy_ws, &target, &base, cfg);
            result.runs += runs.len() as u32;
            baseline = Some(
                runs.iter()
                    .zip(got)
                    .filter(|(_, (o, _))| o.is_failing())
                    .map(|((_, t), x)| (t.record, x))
                    .collect(),
            );
        }
        let base_fail = baseline.as_ref().expect("set above");
        result.failing_tests = base_fail.len() as u32;
        // Each mutant runs the failing tests; one that changes none of them scores 0 whatever
        // the passing tests do, so only the others run the passing tests that ran their line.
        let mut ids: Vec<(u32, usize)> = Vec::new();
        for s in &alive {
            for &(id, k) in &s.mutants {
                viable[k] = true;
                ids.push((id, k));
            }
        }
        for phase in [Phase::Failing, Phase::Passing] {
            let mut runs: Vec<(u32, &PlainTest)> = Vec::new();
            for &(id, k) in &ids {
                let m = &mutants[k];
                let covered = units
                    .get(&(files[m.0].0.as_str(), m.1.line))
                    .map(|&u| &spectra.coverage[u]);
                for t in &tests {
                    let wanted = match phase {
                        Phase::Failing => base_fail.contains_key(&t.record),
                        Phase::Passing => {
                            counts[id as usize - 1].0 > 0
                                && passing_mask.contains(t.record)
                                && covered.is_some_and(|c| c.contains(t.record))
                        }
                    };
                    if wanted {
                        runs.push((id, t));
                    }
                }
            }
            spinner.set_message(format!(
                "round {} of {}: {} runs of {} tests",
                r + 1,
                rounds.len(),
                runs.len(),
                match phase {
                    Phase::Failing => "failing",
                    Phase::Passing => "passing",
                }
            ));
            let got = run_all(&runs, &built, &copy_ws, &target, &base, cfg);
            result.runs += runs.len() as u32;
            for ((id, t), (outcome, message)) in runs.iter().zip(got) {
                let c = &mut counts[*id as usize - 1];
                c.2 += 1;
                match base_fail.get(&t.record) {
                    Some((o, m)) => c.0 += u32::from(*o != outcome || *m != message),
                    None => c.1 += u32::from(outcome != Outcome::Passed),
                }
            }
        }
    }
    spinner.finish_and_clear();
    if baseline.as_ref().is_some_and(HashMap::is_empty) {
        return Err(SflError::Setup(
            "no failing test fails on the plain (uninstrumented) build of the workspace's copy, so no mutant \
             can change a failure"
                .into(),
        ));
    }
    // The copy goes back to the original text, so the next run's copy is cheap.
    for rel in files.iter().map(|(rel, _)| rel).chain(based.keys()) {
        if let Ok(text) = std::fs::read(ws.root.join(rel)) {
            let _ = std::fs::write(copy.join(rel), text);
        }
    }
    let failing = result.failing_tests;
    let mut per_line: BTreeMap<(usize, u32), LineScore> = BTreeMap::new();
    for (k, (f, m)) in mutants.iter().enumerate() {
        let l = per_line.entry((*f, m.line)).or_insert_with(|| LineScore {
            file: files[*f].0.clone(),
            line: m.line,
            mutants: 0,
            viable: 0,
            score: None,
        });
        l.mutants += 1;
        if viable[k] {
            let (changed, broken, ran) = counts[k];
            l.viable += 1;
            let s = metallaxis(changed, broken, failing);
            l.score = Some(l.score.map_or(s, |b: f64| b.max(s)));
            result.mutants.push(MutantResult {
                file: files[*f].0.clone(),
                line: m.line,
                operator: m.operator.clone(),
                failing_changed: changed,
                passing_broken: broken,
                tests: ran,
            });
        }
    }
    result.lines = per_line.into_values().collect();
    let unmutated = without_mutants(lines, &result.lines);
    result.lines.extend(unmutated);
    result
        .lines
        .sort_by(|a, b| (a.file.as_str(), a.line).cmp(&(b.file.as_str(), b.line)));
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// The workspace-relative source files of the members' library and binary targets.
fn crate_roots(ws: &Workspace) -> Vec<String> {
    let mut out: Vec<String> = ws
        .members
        .iter()
        .flat_map(|m| &m.targets)
        .filter(|t| {
            t.kind.iter().any(|k| {
                matches!(
                    k,
                    cargo_metadata::TargetKind::Lib
                        | cargo_metadata::TargetKind::RLib
                        | cargo_metadata::TargetKind::ProcMacro
                        | cargo_metadata::TargetKind::Bin
                )
            })
        })
        .filter_map(|t| ws.relative(t.src_path.as_std_path()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The copy's manifest: the one asked for (or the workspace root's), at the same place in the
/// copy.
fn copy_manifest(ws: &Workspace, asked: Option<&Path>, copy: &Path) -> Result<PathBuf, SflError> {
    let original = match asked {
        Some(p) => std::path::absolute(p).map_err(|e| SflError::Setup(format!("bad --manifest-path: {e}")))?,
        None => ws.root.join("Cargo.toml"),
    };
    let rel = original
        .strip_prefix(&ws.root)
        .map_err(|_| SflError::Setup(format!("{} is not inside {}", original.display(), ws.root.display())))?;
    Ok(copy.join(rel))
}

/// A round's files as written: each file's text, and each live site's range in it (in the
/// order of the live sites).
struct Written {
    texts: Vec<String>,
    ranges: Vec<(usize, usize)>,
}

/// Writes every file of the round: the schema's text where it has sites, the original
/// elsewhere.
fn write_round(
    copy: &Path,
    files: &[(String, String)],
    alive: &[&schema::Site],
    mutants: &[(usize, Mutant)],
) -> Result<Written, SflError> {
    let mut written = Written {
        texts: Vec::with_capacity(files.len()),
        ranges: vec![(0, 0); alive.len()],
    };
    for (k, (rel, text)) in files.iter().enumerate() {
        let here: Vec<usize> = (0..alive.len()).filter(|&i| alive[i].file == k).collect();
        let sites: Vec<&schema::Site> = here.iter().map(|&i| alive[i]).collect();
        let (new, r) = schema::apply(text, &sites, mutants);
        for (&i, range) in here.iter().zip(r) {
            written.ranges[i] = range;
        }
        let path = copy.join(rel);
        write_if_changed(&path, &new).map_err(|e| SflError::Setup(format!("cannot write {}: {e}", path.display())))?;
        written.texts.push(new);
    }
    Ok(written)
}

/// A compiler error's primary position.
#[derive(Debug)]
struct CompileError {
    file: PathBuf,
    line: usize,
    column_start: usize,
    column_end: usize,
    line_end: usize,
}

/// Drops the sites the errors point into; an error that points into no site drops the
/// statement deletions and range changes of its file (the mutants that break code around
/// them), else every site of its file.
fn prune<'a>(
    alive: Vec<&'a schema::Site>,
    written: &Written,
    errors: &[CompileError],
    files: &[(String, String)],
    copy: &Path,
    mutants: &[(usize, Mutant)],
) -> Vec<&'a schema::Site> {
    let mut drop = vec![false; alive.len()];
    for e in errors {
        let Some(k) = files.iter().position(|(rel, _)| copy.join(rel) == e.file) else {
            continue;
        };
        let text = &written.texts[k];
        let (Some(a), Some(b)) = (
            schema::offset(text, e.line, e.column_start),
            schema::offset(text, e.line_end, e.column_end),
        ) else {
            continue;
        };
        let mut hit = false;
        for (i, s) in alive.iter().enumerate() {
            let (start, end) = written.ranges[i];
            if s.file == k && start <= b.max(a + 1) && a < end {
                drop[i] = true;
                hit = true;
            }
        }
        if !hit {
            let risky = |s: &schema::Site| {
                s.mutants.iter().any(|&(_, m)| {
                    let m = &mutants[m].1;
                    m.deletes_statement || m.operator.contains("..")
                })
            };
            let any_risky = alive
                .iter()
                .zip(&drop)
                .any(|(s, dropped)| s.file == k && !dropped && risky(s));
            for (i, s) in alive.iter().enumerate() {
                if s.file == k && (!any_risky || risky(s)) {
                    drop[i] = true;
                }
            }
        }
    }
    alive
        .into_iter()
        .zip(drop)
        .filter(|(_, d)| !d)
        .map(|(s, _)| s)
        .collect()
}

/// `cargo test --no-run` of the copy without coverage (lints capped: a mutant's unused
/// variable must not fail a `#![deny(warnings)]` crate); its test binaries and its errors.
fn build_plain(
    cfg: &RunConfig,
    (copy_ws, manifest): (&Workspace, &Path),
    copy: &Path,
    target: &Path,
) -> Result<(Built, Vec<CompileError>), SflError> {
    let mut select = cfg.selection.clone();
    select.manifest_path = Some(manifest.to_path_buf());
    let mut cmd = crate::build::plain_cargo(copy_ws, &select, target)?;
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| SflError::Setup(format!("cannot run cargo: {e}")))?;
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
    let status = child
        .wait()
        .map_err(|e| SflError::Setup(format!("cargo did not finish: {e}")))?;
    if !status.success() && errors.is_empty() {
        return Err(SflError::Setup(format!(
            "the plain build of the workspace's copy in {} failed without a compiler error (a path \
             dependency outside the workspace?); run without --mutate",
            copy.display()
        )));
    }
    Ok((built, errors))
}

/// The spectra's tests that the plain build can run (doctests are not rebuilt), with their
/// timeouts: ten times what the test took under coverage, at least two seconds.
fn plain_tests(spectra: &Spectra, built: &Built, cfg: &RunConfig) -> Vec<PlainTest> {
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
fn run_all(
    runs: &[(u32, &PlainTest)],
    built: &Built,
    ws: &Workspace,
    target: &Path,
    base: &Path,
    cfg: &RunConfig,
) -> Vec<(Outcome, String)> {
    let jobs = cfg
        .execution
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
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
                ignored: cfg.execution.include_ignored,
            };
            let dir = base.join("runs").join(i.to_string());
            let limits = crate::run::Limits {
                timeout: t.timeout,
                leak_timeout: Duration::ZERO,
                leak_fails: false,
            };
            let got = crate::run::run_test(&crate::run::TestRun {
                job: &job,
                bin: &bin,
                pkg: &ws.members[bin.package],
                target_dir: target,
                release: cfg.selection.release,
                dir: &dir,
                limits,
                edges: false,
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

/// Makes `to` a copy of the source tree `from` (no `.git`, no target directories, nothing
/// under `skip`), writing only files whose content differs (unchanged files keep their times,
/// so cargo's incremental build sees only what changed).
fn sync_tree(from: &Path, to: &Path, skip: &[&Path]) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let kind = entry.file_type()?;
        if name == ".git" || skip.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        if kind.is_dir() {
            // A target directory (cargo marks its own) is no source.
            if path.join("CACHEDIR.TAG").exists() || path.join(".rustc_info.json").exists() {
                continue;
            }
            sync_tree(&path, &to.join(&name), skip)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&path)?;
            let dest = to.join(&name);
            if std::fs::read(&dest).ok().as_deref() != Some(&bytes[..]) {
                std::fs::write(&dest, &bytes)?;
            }
        }
    }
    Ok(())
}

fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// The lines `--mutate` mutates: the first `per_ranking` lines of each ranking, in order,
/// without repeats, passing over the entries a stack-first ranking put first (a failing test
/// panicked on the line's own operation): they keep their places ([`reorder`]).
pub fn lines_to_mutate(rankings: &[crate::rank::Ranking], per_ranking: usize) -> Vec<(String, u32)> {
    let mut out: Vec<(String, u32)> = Vec::new();
    for r in rankings {
        let spectra = r.analysis.spectra;
        let mut n = 0;
        'entries: for x in r.entries.iter().filter(|x| !x.panicked) {
            for &u in &r.analysis.groups[x.group].units {
                if n == per_ranking {
                    break 'entries;
                }
                n += 1;
                let key = (spectra.units[u].file.clone(), spectra.units[u].line);
                if !out.contains(&key) {
                    out.push(key);
                }
            }
        }
    }
    out
}

/// Re-orders each ranking's mutated entries (an entry's score: its lines' best) by score
/// among the places they hold. Operation panic sites keep theirs: a panic on a line's own
/// operation is the stronger evidence (every mutant upstream of it changes the panic's
/// message, so mutants score the lines above it as high as the line itself).
pub fn reorder(rankings: &mut [crate::rank::Ranking], mutation: &Mutation) {
    for r in rankings {
        let spectra = r.analysis.spectra;
        let keys: Vec<Option<f64>> = r
            .entries
            .iter()
            .map(|x| {
                if x.panicked {
                    return None;
                }
                r.analysis.groups[x.group]
                    .units
                    .iter()
                    .filter_map(|&u| mutation.score(&spectra.units[u].file, spectra.units[u].line))
                    .reduce(f64::max)
            })
            .collect();
        r.reorder_within(&keys);
    }
}

/// The asked-for lines that got no mutant, listed too (no score).
fn without_mutants(asked: &[(String, u32)], scored: &[LineScore]) -> Vec<LineScore> {
    asked
        .iter()
        .filter(|(f, l)| !scored.iter().any(|x| x.file == *f && x.line == *l))
        .map(|(f, l)| LineScore {
            file: f.clone(),
            line: *l,
            mutants: 0,
            viable: 0,
            score: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_without_mutants_in_two_files_are_both_listed() {
        let scored = [LineScore {
            file: "src/a.rs".into(),
            line: 3,
            mutants: 2,
            viable: 1,
            score: Some(0.5),
        }];
        let asked = [
            ("src/a.rs".to_string(), 3),
            ("src/a.rs".to_string(), 7),
            ("src/b.rs".to_string(), 7),
        ];
        let listed: Vec<(String, u32)> = without_mutants(&asked, &scored)
            .into_iter()
            .map(|l| (l.file, l.line))
            .collect();
        assert_eq!(listed, [("src/a.rs".to_string(), 7), ("src/b.rs".to_string(), 7)]);
    }

    #[test]
    fn metallaxis_is_ochiai_over_kills() {
        assert_eq!(metallaxis(0, 3, 2), 0.0);
        assert_eq!(metallaxis(2, 0, 2), 1.0);
        // 1 of 4 failing changed, 3 passing broken: 1 / sqrt(4 · 4).
        assert!((metallaxis(1, 3, 4) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn messages_are_compared_without_columns() {
        assert_eq!(
            normalise(Some("panicked at src/lib.rs:10:5:\nindex out of bounds: 3 > 2")),
            "panicked at src/lib.rs:10:\nindex out of bounds: 3 > 2"
        );
        assert_eq!(normalise(Some("a: 1:x")), "a: 1:x");
        assert_eq!(normalise(None), "");
    }

    #[test]
    fn the_copy_leaves_out_git_and_target_directories_and_rewrites_only_changes() {
        let src = tempfile::tempdir().unwrap();
        let dst = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = src.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w("src/lib.rs", "fn a() {}");
        w(".git/HEAD", "x");
        w("target/CACHEDIR.TAG", "x");
        w("src/target/mod.rs", "// a module named target");
        sync_tree(src.path(), dst.path(), &[]).unwrap();
        assert!(dst.path().join("src/lib.rs").is_file());
        assert!(dst.path().join("src/target/mod.rs").is_file());
        assert!(!dst.path().join(".git").exists());
        assert!(!dst.path().join("target").exists());
        let before = std::fs::metadata(dst.path().join("src/lib.rs"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        sync_tree(src.path(), dst.path(), &[]).unwrap();
        let after = std::fs::metadata(dst.path().join("src/lib.rs"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after, "an unchanged file is not rewritten");
    }
}
