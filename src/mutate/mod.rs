//! `--mutate`: mutation-based fault localisation of the top suspects, after Metallaxis-FL
//! (Papadakis and Le Traon). The lines at the top of the rankings are mutated ([`sites`]),
//! all mutants compiled into a few plain builds of a copy of the workspace ([`schema`]), and
//! for each mutant the failing tests and the passing tests that ran its line are run again.
//! A mutant of the faulty line tends to change how the failing tests fail (or make them
//! pass) and to break few passing tests; a line's score is its best mutant's Ochiai score over
//! those kills ([`outcome`]). The rankings then order their mutated entries by that score, in
//! the places those entries held: every other entry stays where it was.
//!
//! Nothing here touches the user's files: the copy lives in the build directory
//! (`<target>/sfl/mutate/src`), its build in `<target>/sfl/mutate/target`.

mod copy;
pub mod outcome;
mod plain;
pub mod schema;
pub mod sites;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Instant;

use indicatif::ProgressBar;

pub use outcome::{LineScore, MutantResult, Mutation, metallaxis};

use crate::bitset::BitSet;
use crate::config::RunConfig;
use crate::error::SflError;
use crate::spectra::{Outcome, Spectra};
use crate::ui;
use crate::workspace::{Built, Workspace};
use copy::{WorkspaceCopy, Written, sync_tree, write_if_changed, write_round};
use outcome::without_mutants;
use plain::{CompileError, PlainTest, build_plain, plain_tests, run_all};
use sites::Mutant;

/// Lines of each ranking mutated when `--mutate-lines` is not given.
pub const DEFAULT_LINES: usize = 10;

/// How often a round is rebuilt after dropping mutants the compiler rejected.
const MAX_BUILDS_PER_ROUND: usize = 6;

/// The two passes over a round's mutants.
#[derive(Clone, Copy)]
enum Phase {
    Failing,
    Passing,
}

/// Mutates `lines` (workspace-relative file, line) and runs the tests again; `spectra` is the
/// run whose tests are compared.
pub fn mutate(cfg: &RunConfig, spectra: &Spectra, lines: &[(String, u32)]) -> Result<Mutation, SflError> {
    let started = Instant::now();
    let ws = Workspace::load(
        cfg.selection.manifest_path.as_deref(),
        cfg.selection.target_dir.as_deref(),
        cfg.selection.cargo_flags(),
    )?;
    // Doctests are not rebuilt for the mutants: a run whose failures are all doctests has
    // nothing to compare.
    if !spectra
        .tests
        .iter()
        .any(|t| t.outcome.is_failing() && !t.binary.contains("::doctest/"))
    {
        return Err(SflError::MutateOnlyDoctestsFail);
    }
    let base = ws.build_dir.join("mutate");
    let src = base.join("src");
    sync_tree(&ws.root, &src, &[&ws.cargo_target_dir, &ws.target_dir])
        .map_err(|why| SflError::MutateCopy { copy: src.clone(), why })?;
    let based = copy::roots_naming_std(&ws);
    let Mutants { files, mutants } = find_mutants(&ws, &based, lines);
    for (rel, text) in &based {
        let path = src.join(rel);
        write_if_changed(&path, text).map_err(|why| SflError::CannotWrite { path, why })?;
    }
    let copy = WorkspaceCopy::load(&ws, cfg.selection.manifest_path.as_deref(), base)?;
    let session = Session {
        cfg,
        spectra,
        units: spectra.unit_index(),
        passing_mask: spectra.passing_mask(),
        copy,
        files,
        mutants,
    };
    let tally = session.run_rounds(lines.len())?;
    if tally.baseline.as_ref().is_some_and(HashMap::is_empty) {
        return Err(SflError::MutateNoPlainFailure);
    }
    // The copy goes back to the original text, so the next run's copy is cheap.
    for rel in session.files.iter().map(|(rel, _)| rel).chain(based.keys()) {
        if let Ok(text) = std::fs::read(ws.root.join(rel)) {
            let _ = std::fs::write(session.copy.src.join(rel), text);
        }
    }
    let mut result = session.score(tally, lines);
    result.seconds = started.elapsed().as_secs_f64();
    Ok(result)
}

/// The files mutated and their mutants.
struct Mutants {
    /// (workspace-relative path, text) of each file.
    files: Vec<(String, String)>,
    /// Every mutant, with the index of its file.
    mutants: Vec<(usize, Mutant)>,
}

/// The mutants of `lines`, with the files they are in (the crate roots' text as `based` has
/// it): files syn cannot parse are left out.
fn find_mutants(ws: &Workspace, based: &BTreeMap<String, String>, lines: &[(String, u32)]) -> Mutants {
    let mut by_file: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (f, l) in lines {
        by_file.entry(f.as_str()).or_default().push(*l);
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
    Mutants { files, mutants }
}

/// One `--mutate` run: what it compares, the copy, and the mutants.
struct Session<'a> {
    cfg: &'a RunConfig,
    spectra: &'a Spectra,
    /// The spectra's unit of each (file, line).
    units: HashMap<(&'a str, u32), usize>,
    /// The tests that passed.
    passing_mask: BitSet,
    copy: WorkspaceCopy,
    /// The mutated files: (workspace-relative path, original text).
    files: Vec<(String, String)>,
    /// Every mutant, with the index of its file.
    mutants: Vec<(usize, Mutant)>,
}

/// What the rounds found so far.
struct Tally {
    result: Mutation,
    /// Per mutant (numbered from 1, at index number - 1): failing tests changed, passing tests
    /// broken, tests run.
    counts: Vec<(u32, u32, u32)>,
    /// Per mutant: it compiled, and its tests ran.
    viable: Vec<bool>,
    /// The failing tests' outcomes and messages on the unmutated plain build (by record),
    /// once the first round has built.
    baseline: Option<HashMap<usize, (Outcome, String)>>,
}

impl Session<'_> {
    /// Builds and runs every round of mutants.
    fn run_rounds(&self, lines: usize) -> Result<Tally, SflError> {
        let mut tally = Tally {
            result: Mutation::default(),
            counts: vec![(0, 0, 0); self.mutants.len()],
            viable: vec![false; self.mutants.len()],
            baseline: None,
        };
        let rounds = schema::rounds(&self.mutants);
        let spinner = ui::spinner("Mutating", format!("{} mutants of {} lines", self.mutants.len(), lines));
        for (r, round) in rounds.iter().enumerate() {
            let at = (r + 1, rounds.len());
            let Some((built, alive)) = self.build_round(round, at, &spinner, &mut tally)? else {
                ui::detail(format!(
                    "--mutate: round {} did not compile; its mutants are left out",
                    r + 1
                ));
                continue;
            };
            self.run_round(&built, &alive, at, &spinner, &mut tally);
        }
        spinner.finish_and_clear();
        Ok(tally)
    }

    /// Writes round `at` (its number, of how many) and builds it, dropping the sites the
    /// compiler rejects and building again, up to [`MAX_BUILDS_PER_ROUND`] times; the build
    /// and the sites in it, or `None` when no build compiled.
    fn build_round<'r>(
        &self,
        round: &'r [schema::Site],
        (r, n): (usize, usize),
        spinner: &ProgressBar,
        tally: &mut Tally,
    ) -> Result<Option<(Built, Vec<&'r schema::Site>)>, SflError> {
        let mut alive: Vec<&schema::Site> = round.iter().collect();
        for _ in 0..MAX_BUILDS_PER_ROUND {
            let written = write_round(&self.copy.src, &self.files, &alive, &self.mutants)?;
            spinner.set_message(format!("round {r} of {n}: building {} sites", alive.len()));
            tally.result.builds += 1;
            let (b, errors) = build_plain(self.cfg, &self.copy)?;
            if errors.is_empty() {
                return Ok(Some((b, alive)));
            }
            let copy = &self.copy.src;
            let ours = |e: &CompileError| self.files.iter().any(|(rel, _)| copy.join(rel) == e.file);
            if !errors.iter().any(ours) {
                let e = &errors[0];
                return Err(SflError::MutateCopyBuild {
                    copy: copy.clone(),
                    file: e.file.clone(),
                    line: e.line,
                });
            }
            let before = alive.len();
            alive = prune(alive, &written, &errors, &self.files, copy, &self.mutants);
            ui::detail(format!(
                "--mutate: round {r}: {} compiler errors ({}); {} of {before} sites left",
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
        Ok(None)
    }

    /// Runs the tests against round `at`'s build of the sites `alive`: first (once) the failing
    /// tests on the unmutated build, then each mutant's failing tests, then the passing tests
    /// that ran its line for the mutants that changed a failure.
    fn run_round(
        &self,
        built: &Built,
        alive: &[&schema::Site],
        (r, n): (usize, usize),
        spinner: &ProgressBar,
        tally: &mut Tally,
    ) {
        let tests = plain_tests(self.spectra, built, self.cfg);
        if tally.baseline.is_none() {
            tally.baseline = Some(self.baseline(&tests, built, spinner, &mut tally.result));
        }
        let base_fail = tally.baseline.as_ref().expect("set above");
        tally.result.failing_tests = base_fail.len() as u32;
        // Each mutant runs the failing tests; one that changes none of them scores 0 whatever
        // the passing tests do, so only the others run the passing tests that ran their line.
        let mut ids: Vec<(u32, usize)> = Vec::new();
        for s in alive {
            for &(id, k) in &s.mutants {
                tally.viable[k] = true;
                ids.push((id, k));
            }
        }
        for phase in [Phase::Failing, Phase::Passing] {
            let runs = self.runs_of(phase, &ids, &tests, base_fail, &tally.counts);
            spinner.set_message(format!(
                "round {r} of {n}: {} runs of {} tests",
                runs.len(),
                match phase {
                    Phase::Failing => "failing",
                    Phase::Passing => "passing",
                }
            ));
            let got = run_all(&runs, built, &self.copy, self.cfg);
            tally.result.runs += runs.len() as u32;
            for ((id, t), (outcome, message)) in runs.iter().zip(got) {
                let c = &mut tally.counts[*id as usize - 1];
                c.2 += 1;
                match base_fail.get(&t.record) {
                    Some((o, m)) => c.0 += u32::from(*o != outcome || *m != message),
                    None => c.1 += u32::from(outcome != Outcome::Passed),
                }
            }
        }
    }

    /// The failing tests' outcomes and messages on the unmutated build (those that fail there
    /// too), by record.
    fn baseline(
        &self,
        tests: &[PlainTest],
        built: &Built,
        spinner: &ProgressBar,
        result: &mut Mutation,
    ) -> HashMap<usize, (Outcome, String)> {
        let failing: Vec<&PlainTest> = tests
            .iter()
            .filter(|t| self.spectra.tests[t.record].outcome.is_failing())
            .collect();
        spinner.set_message("running the failing tests on the unmutated build");
        let runs: Vec<(u32, &PlainTest)> = failing.iter().map(|t| (0, *t)).collect();
        let got = run_all(&runs, built, &self.copy, self.cfg);
        result.runs += runs.len() as u32;
        runs.iter()
            .zip(got)
            .filter(|(_, (o, _))| o.is_failing())
            .map(|((_, t), x)| (t.record, x))
            .collect()
    }

    /// The (mutant, test) runs of `phase` for the mutants `ids`: every failing test of the
    /// baseline, or the passing tests that ran the line of a mutant that changed a failure.
    fn runs_of<'t>(
        &self,
        phase: Phase,
        ids: &[(u32, usize)],
        tests: &'t [PlainTest],
        base_fail: &HashMap<usize, (Outcome, String)>,
        counts: &[(u32, u32, u32)],
    ) -> Vec<(u32, &'t PlainTest)> {
        let mut runs: Vec<(u32, &PlainTest)> = Vec::new();
        for &(id, k) in ids {
            let m = &self.mutants[k];
            let covered = self
                .units
                .get(&(self.files[m.0].0.as_str(), m.1.line))
                .map(|&u| &self.spectra.coverage[u]);
            for t in tests {
                let wanted = match phase {
                    Phase::Failing => base_fail.contains_key(&t.record),
                    Phase::Passing => {
                        counts[id as usize - 1].0 > 0
                            && self.passing_mask.contains(t.record)
                            && covered.is_some_and(|c| c.contains(t.record))
                    }
                };
                if wanted {
                    runs.push((id, t));
                }
            }
        }
        runs
    }

    /// Each line's score (its best viable mutant's) and each viable mutant's kills; the asked
    /// `lines` that got no mutant are listed too.
    fn score(&self, tally: Tally, lines: &[(String, u32)]) -> Mutation {
        let Tally {
            mut result,
            counts,
            viable,
            ..
        } = tally;
        let failing = result.failing_tests;
        let mut per_line: BTreeMap<(usize, u32), LineScore> = BTreeMap::new();
        for (k, (f, m)) in self.mutants.iter().enumerate() {
            let l = per_line.entry((*f, m.line)).or_insert_with(|| LineScore {
                file: self.files[*f].0.clone(),
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
                    file: self.files[*f].0.clone(),
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
        result
    }
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
