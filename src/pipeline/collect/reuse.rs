//! Test selection in a collect ([`crate::select`]): the last run (the workspace's, or
//! `--reuse-spectra FILE`), what this run must run of it, the check of the edit against the
//! new build, and the reused rows as job outcomes in this process's ids.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::outcome::JobOutcome;
use crate::config::RunConfig;
use crate::coverage::LineDecoder;
use crate::edges::{Collector, Edge};
use crate::error::DecodeError;
use crate::run::Job;
use crate::select::{BinaryKey, BlockRef, Choice, Reuse, Row, UnknownFunction};
use crate::spectra::{BlockId, EdgeProfiles, Outcome, SinceGreen, Snapshot, Spectra, SpectraError, TestRecord, UnitId};
use crate::ui;
use crate::workspace::{Built, Workspace};

/// Why the new build does not confirm the edit the diff located: then every test runs.
#[derive(Debug, thiserror::Error)]
pub(super) enum Unconfirmed {
    #[error("cannot read the coverage map of {} ({source})", path.display())]
    Map { path: PathBuf, source: DecodeError },
    #[error(transparent)]
    Unknown(#[from] UnknownFunction),
}

/// The spectra whose rows may be reused: `--reuse-spectra FILE`, else the newer of the
/// workspace's last run with failures and its last green run.
fn last_run(ws: &Workspace, cfg: &RunConfig) -> Option<(PathBuf, Result<Spectra, SpectraError>)> {
    let path = match &cfg.execution.reuse_spectra {
        Some(file) => file.clone(),
        None => {
            // The newest of the workspace's spectra, the kept baseline and a green run of
            // fewer tests than it (`save::LATEST`).
            let main = ws.spectra_path();
            let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
            let files = [
                main.with_file_name(super::save::GREEN),
                main.with_file_name(super::save::LATEST),
                main,
            ];
            files
                .into_iter()
                .filter_map(|p| Some((modified(&p)?, p)))
                .max_by_key(|(m, _)| *m)?
                .1
        }
    };
    let loaded = Spectra::load_with(&path, EdgeProfiles::Load);
    Some((path, loaded))
}

/// The run the workspace's failing tests are compared with: the baseline kept beside its
/// spectra (`spectra-green.json`: the last green run, or the last run before tests began to
/// fail where one test always fails), else its last run; one made in this workspace's root.
fn last_green(ws: &Workspace) -> Option<Spectra> {
    let main = ws.spectra_path();
    [main.with_file_name(super::save::GREEN), main]
        .iter()
        .filter_map(|p| Spectra::load_with(p, EdgeProfiles::Skip).ok())
        .find(|s| s.workspace_root == ws.root.to_string_lossy())
}

/// When tests fail that passed in the run they are compared with ([`last_green`]): those tests
/// and the lines of the workspace's Rust sources changed since (both runs' snapshots
/// compared). `None` without such a run, or when every failing test is new or failed then too.
pub(super) fn since_green(ws: &Workspace, spectra: &Spectra, now: &Snapshot) -> Option<SinceGreen> {
    if !spectra.tests.iter().any(|t| t.outcome.is_failing()) {
        return None;
    }
    let green = last_green(ws)?;
    let then = green.snapshot.as_ref()?;
    let id = |t: &TestRecord| format!("{} {}", t.binary, t.name);
    let passed: HashSet<String> = green
        .tests
        .iter()
        .filter(|t| t.outcome == Outcome::Passed)
        .map(id)
        .collect();
    let tests: Vec<String> = spectra
        .tests
        .iter()
        .filter(|t| t.outcome.is_failing())
        .map(id)
        .filter(|t| passed.contains(t))
        .collect();
    (!tests.is_empty()).then(|| SinceGreen {
        taken: then.taken,
        tests,
        lines: with_statement_heads(&ws.root, spectra, crate::select::changed_lines(then, now)),
        files: crate::select::changed_files(then, now),
        env: crate::select::changed_env(then, now),
    })
}

/// The changed `lines`, each one inside a statement of several lines whose coverage the
/// compiler records on another of its lines (a macro call's argument on a line of its own, a
/// chained call) replaced by the nearest such line at or above it in the statement: the test
/// that runs the statement runs the change. Others (a `const`'s value, a table) stay.
fn with_statement_heads(
    root: &Path,
    spectra: &Spectra,
    mut lines: std::collections::BTreeMap<String, Vec<u32>>,
) -> std::collections::BTreeMap<String, Vec<u32>> {
    let counted = spectra.unit_index();
    for (file, changed) in &mut lines {
        let uncounted: Vec<u32> = changed
            .iter()
            .copied()
            .filter(|&l| !counted.contains_key(&(file.as_str(), l)))
            .collect();
        if uncounted.is_empty() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file.as_str())) else {
            continue;
        };
        for l in uncounted {
            let head = crate::syntax::statement_around(&text, l)
                .and_then(|(a, _)| (a..l).rev().find(|h| counted.contains_key(&(file.as_str(), *h))));
            if let Some(head) = head {
                changed.retain(|&c| c != l);
                changed.push(head);
            }
        }
        changed.sort_unstable();
        changed.dedup();
    }
    lines
}

/// What this run does with the last run, said on a status line when it runs every test for
/// a reason the user may not expect.
pub(super) fn choose(ws: &Workspace, cfg: &RunConfig, now: &Snapshot) -> Result<Choice, crate::error::SflError> {
    if cfg.execution.rerun {
        return Ok(Choice::All(None));
    }
    let asked = cfg.execution.reuse_spectra.is_some();
    let Some((path, loaded)) = last_run(ws, cfg) else {
        return Ok(Choice::All(None));
    };
    let previous = match loaded {
        Ok(p) => p,
        // A file the user named must be usable; the workspace's own is only a shortcut.
        Err(e) if asked => {
            return Err(crate::error::SflError::Usage(format!(
                "--reuse-spectra {}: {e}",
                path.display()
            )));
        }
        Err(e) => {
            ui::detail(format!(
                "the last run's spectra ({}) are not usable ({e}): running every test",
                path.display()
            ));
            return Ok(Choice::All(None));
        }
    };
    // The workspace's own file from another root: its target directory was copied or moved
    // with it (a restored cache), and the build there may be the other copy's.
    if !asked && Path::new(&previous.workspace_root) != ws.root {
        ui::status(
            "Selecting",
            format!(
                "every test: the last run was made in another copy of the workspace ({})",
                previous.workspace_root
            ),
        );
        return Ok(Choice::All(None));
    }
    let choice = crate::select::choose(previous, now, &ws.root);
    match &choice {
        Choice::All(Some(why)) => ui::status("Selecting", format!("every test: {why} since the last run")),
        Choice::Reuse(r) => {
            if let Some(note) = r.gone_note() {
                ui::status("Selecting", note);
            }
            if let Some(note) = &r.env_note {
                ui::status("Selecting", note);
            }
            if r.ran_no_code > 0 {
                ui::status(
                    "Selecting",
                    format!(
                        "{} that ran none of the workspace's code outside tests, as after any edit of a Rust \
                         source: what such a test checks (the sources' text, files, other programs) no \
                         coverage shows",
                        ui::counted(r.ran_no_code, "test", "tests")
                    ),
                );
            }
        }
        Choice::All(None) => {}
    }
    Ok(choice)
}

impl Reuse {
    /// Whether the doctests must be built: unless the last run had doctests and every one of
    /// them may be reused. Asked once the other tests are built: their coverage maps check the
    /// edit first ([`Reuse::verify`]); a check that fails means every test runs (`Err`).
    pub(super) fn doctests_needed(
        &mut self,
        built: &Built,
        relative: &dyn Fn(&Path) -> Option<String>,
        complete: bool,
    ) -> Result<bool, Unconfirmed> {
        // Nothing was edited: the build has every function where it was.
        if self.edited() {
            let mut functions = crate::coverage::Functions::default();
            // A library without doctests has a suite of no executable (an empty path).
            let paths = built.tests.iter().map(|t| &t.path).chain(&built.others);
            for path in paths.filter(|p| !p.as_os_str().is_empty()) {
                match functions.add_binary(path, relative) {
                    Ok(()) => {}
                    // A binary of no instrumented function (a member whose code is all for another
                    // target) has none to check; a function only it had is not found, and the
                    // tests that ran it run again.
                    Err(DecodeError::NoCoverageMap) => {}
                    Err(source) => {
                        return Err(Unconfirmed::Map {
                            path: path.clone(),
                            source,
                        });
                    }
                }
            }
            let spans: HashSet<_> = functions.joined().into_iter().collect();
            let demoted = self.verify(&spans, complete)?;
            if demoted > 0 {
                ui::detail(format!(
                    "{demoted} more tests run: they ran a function the new build has elsewhere"
                ));
            }
        }
        Ok(self.doctests_run_again())
    }

    /// Whether a doctest of the last run runs again, or the last run had none (then whether
    /// the doctests exist is not known). The check against the new build ([`Reuse::verify`])
    /// only takes rows away, so a `true` before the build stands after it.
    pub(super) fn doctests_run_again(&self) -> bool {
        let mut doctests = self
            .previous
            .tests
            .iter()
            .zip(&self.reusable)
            .filter(|(t, _)| BinaryKey::parse(&t.binary).is_doctest())
            .peekable();
        doctests.peek().is_none() || doctests.any(|(t, reused)| !*reused && t.outcome != Outcome::Ignored)
    }

    /// The outcome of every planned job whose row is reused (`None`: it runs), and the last
    /// run's tests of the binaries this run did not build (`binary_ids` are those it built):
    /// reused rows and ignored records.
    pub(super) fn outcomes(
        &self,
        jobs: &[Job],
        binary_ids: &[&str],
        coverage: &LineDecoder,
        edges: Option<&Collector>,
    ) -> (Vec<Option<JobOutcome>>, Vec<JobOutcome>, Vec<TestRecord>) {
        let index = self.index();
        let of_job: Vec<Option<usize>> = jobs
            .iter()
            .map(|j| {
                let name = j.name.as_deref().unwrap_or("main");
                index
                    .get(&(binary_ids[j.binary], name.to_string()))
                    .copied()
                    .filter(|&t| self.reusable[t])
            })
            .collect();
        let wanted: Vec<usize> = of_job.iter().flatten().copied().collect();
        let mut rows: HashMap<usize, Row> = wanted.iter().copied().zip(self.rows(&wanted)).collect();
        let mut now = Now::new(self, coverage, edges);
        let done = of_job
            .iter()
            .map(|t| t.and_then(|t| rows.remove(&t)).map(|r| now.outcome(r)))
            .collect();
        let built: HashSet<&str> = binary_ids.iter().copied().collect();
        let elsewhere: Vec<usize> = (0..self.previous.tests.len())
            .filter(|&t| !built.contains(self.previous.tests[t].binary.as_str()) && !self.is_gone(t))
            .collect();
        let reused: Vec<usize> = elsewhere.iter().copied().filter(|&t| self.reusable[t]).collect();
        let kept = self.rows(&reused).into_iter().map(|r| now.outcome(r)).collect();
        let ignored = elsewhere
            .iter()
            .map(|&t| &self.previous.tests[t])
            .filter(|t| t.outcome == Outcome::Ignored)
            .map(|t| TestRecord {
                name: self.name_now(&t.name),
                ..t.clone()
            })
            .collect();
        (done, kept, ignored)
    }
}

/// Whether a test of the last run that must run again is in a binary the build did not make
/// (the check of the edit against the build found more to run than a narrowed build made).
pub(super) fn missing_binaries(choice: &Choice, built: &Built) -> bool {
    let Choice::Reuse(reuse) = choice else { return false };
    let ids: HashSet<&str> = built.tests.iter().map(|t| t.id.as_str()).collect();
    reuse.binaries_to_run().iter().any(|b| !ids.contains(b))
}

/// The last run's units and blocks in this process's ids, each looked up once, on first use
/// (in the order rows name them, as this process's tests meet theirs).
struct Now<'a, 'd> {
    reuse: &'a Reuse,
    coverage: &'a LineDecoder<'d>,
    edges: Option<&'a Collector<'d>>,
    units: Vec<Option<UnitId>>,
    blocks: Vec<Option<BlockId>>,
}

impl<'a, 'd> Now<'a, 'd> {
    fn new(reuse: &'a Reuse, coverage: &'a LineDecoder<'d>, edges: Option<&'a Collector<'d>>) -> Self {
        let blocks = reuse.previous.edges.as_ref().map_or(0, |e| e.blocks.len());
        Now {
            reuse,
            coverage,
            edges,
            units: vec![None; reuse.previous.units.len()],
            blocks: vec![None; blocks],
        }
    }

    fn unit(&mut self, u: u32) -> UnitId {
        *self.units[u as usize].get_or_insert_with(|| self.coverage.ids_of([self.reuse.unit_now(u)])[0])
    }

    fn block(&mut self, collector: &Collector<'_>, b: u32) -> BlockId {
        if let Some(id) = self.blocks[b as usize] {
            return id;
        }
        let block: BlockRef = self
            .reuse
            .block_now(b)
            .expect("rows with edges come from spectra with edges");
        let id = collector.adopt(&block.function, block.index, &block.lines);
        self.blocks[b as usize] = Some(id);
        id
    }

    /// A reused row with this process's unit and block ids.
    fn outcome(&mut self, row: Row) -> JobOutcome {
        let mut covered: Vec<UnitId> = row.lines.iter().map(|&u| self.unit(u)).collect();
        covered.sort_unstable();
        covered.dedup();
        let mut traversed = Vec::new();
        if let Some(collector) = self.edges {
            traversed = row
                .edges
                .iter()
                .map(|&(from, to)| Edge {
                    from: from.map(|b| self.block(collector, b)),
                    to: self.block(collector, to),
                })
                .collect();
            traversed.sort_unstable();
            traversed.dedup();
        }
        JobOutcome {
            record: row.record,
            covered,
            profiles: Vec::new(),
            edges: traversed,
            not_run: None,
        }
    }
}

/// Per test binary built (by id), the randomised-input crate it links, if any
/// ([`crate::select::volatile`]); read in parallel, doctests left out.
pub(super) fn randomised_binaries(ws: &Workspace, built: &Built, jobs: usize) -> HashMap<String, String> {
    let mut found = HashMap::new();
    crate::run::parallel(
        &built.tests,
        jobs,
        |_, bin| {
            if bin.doctests.is_some() {
                return None;
            }
            let candidates = crate::select::volatile::candidates(&ws.members[bin.package]);
            crate::select::volatile::linked(&bin.path, &candidates)
        },
        |i, linked| {
            if let Some(krate) = linked {
                found.insert(built.tests[i].id.clone(), krate);
            }
        },
    );
    found
}

/// Why a test's row is a sample: its coverage of unchanged code changed between two runs. The
/// mark is kept from run to run.
const VARIED: &str = "its coverage of unchanged code changed between two runs";

/// Marks the tests of this run whose rows are samples, not facts: those whose coverage of
/// unchanged code changed since the last run ([`Reuse::varied`]) or did before, and those of a
/// binary that links a randomised-input crate (`randomised`) until two runs of them agree. Such a
/// binary's test that ran again without running code the edit touched, and ran the same lines
/// of unchanged code as last time, is not marked: what it draws does not change where it goes
/// (tests that link `rand` only to make test data, say), so its row is reused like any other.
/// Returns how many are marked.
pub(super) fn mark_volatile(
    outcomes: &mut [JobOutcome],
    randomised: &HashMap<String, String>,
    reuse: Option<&Reuse>,
    coverage: &LineDecoder,
) -> usize {
    let index = reuse.map(Reuse::index).unwrap_or_default();
    let mut marked = 0;
    for o in outcomes.iter_mut().filter(|o| !o.record.reused) {
        let r = &mut o.record;
        let linked = randomised
            .get(&r.binary)
            .map(|krate| format!("its binary links {krate}, which draws random inputs"));
        let last = index.get(&(r.binary.as_str(), r.name.clone())).copied();
        r.volatile = match (reuse, last) {
            (Some(reuse), Some(t)) => {
                let before = reuse.previous.tests[t].volatile.clone();
                if before.as_deref() == Some(VARIED) {
                    before
                } else if reuse.varied(t, &coverage.lines_of(&o.covered)) {
                    Some(VARIED.to_string())
                } else if linked.is_some() && reuse.judged(t) {
                    // Two runs, the same lines: it goes where it went whatever it draws.
                    None
                } else {
                    before.or(linked)
                }
            }
            _ => linked,
        };
        marked += usize::from(r.volatile.is_some());
    }
    marked
}
