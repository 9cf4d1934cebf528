//! The matrix itself: the tests with their outcomes, the units, and one bitset per unit over
//! the tests that ran it; made from a run, at function granularity, or with some units only.

use serde::{Deserialize, Serialize};

use super::counts::Counts;
use super::edges::EdgeSpectra;
use super::facts::SourceFacts;
use super::snapshot::Snapshot;
use super::unit::{FunctionSpan, Unit, UnitId};
use crate::bitset::BitSet;

/// How a test ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Passed,
    Failed,
    TimedOut,
    Crashed,
    Ignored,
}

impl Outcome {
    /// Failed and crashed tests are the failing set E of the spectra. A timed-out test is
    /// neither failing nor passing: under instrumentation a slow test times out without being
    /// wrong, and a killed test's coverage stops wherever it was (`--count-timeouts` ranks
    /// them as failed tests).
    pub fn is_failing(self) -> bool {
        matches!(self, Outcome::Failed | Outcome::Crashed)
    }
    /// Whether the test ran at all (ignored tests contribute nothing).
    pub fn ran(self) -> bool {
        self != Outcome::Ignored
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed-out",
            Outcome::Crashed => "crashed",
            Outcome::Ignored => "ignored",
        }
    }
}

/// One test and what happened to it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TestRecord {
    /// The test binary, named as nextest names it (`pkg`, `pkg::integration`, `pkg::bin/name`).
    pub binary: String,
    /// The libtest name, or `main` for a binary whose harness cannot list its tests.
    pub name: String,
    pub outcome: Outcome,
    /// Signal number for crashed tests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// First lines of the failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default)]
    pub duration_ms: u64,
    /// Problems decoding this test's coverage (its coverage may be partial).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Where a failing test panicked: the frames of its panic's backtrace that are workspace
    /// code, innermost first (test code included; the report decides what to show).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<Frame>,
    /// Every run of the test when it was retried (`--retries`) or run again alone, the first
    /// included, in order. The record's own outcome, message, stack and coverage are the first
    /// run's, or with `passed_alone` the last run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// It failed, then passed on a retry. It stays in the failing set with the failing run's
    /// coverage: that run is evidence of the fault (see docs/guide/reference.md, flaky tests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
    /// It failed (or crashed) while other tests ran beside it, then passed when run again with
    /// no other test running: the tests share something between processes (a temporary
    /// directory named by a counter, a port, a file). Ranked as passing, with that run's
    /// coverage: the failure is evidence against the tests' isolation, not the code.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passed_alone: bool,
    /// Not run: its row is the last run's, which no edit since could change (test selection).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reused: bool,
    /// Its row is a sample, not a fact: it draws random inputs (quickcheck, proptest, …) or its
    /// coverage changed between two runs of unchanged code. Never reused (test selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volatile: Option<String>,
    /// The environment variables it read (`None`: not observed): after a change of the
    /// environment, only the tests that read a changed variable run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_reads: Option<Vec<String>>,
    /// No coverage was collected for it, so its empty row is no fact (a doctest that did not
    /// build, a `compile_fail` doctest that compiled, doctests rustdoc ran plainly): listed
    /// with its outcome, but in neither the failing nor the passing set of the spectra.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub uncovered: bool,
}

/// One run of a retried test.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Attempt {
    pub outcome: Outcome,
    #[serde(default)]
    pub duration_ms: u64,
    /// First lines of its failure message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl TestRecord {
    /// A test's record before (or without) running it: no signal, message, warnings or stack.
    pub fn new(binary: impl Into<String>, name: impl Into<String>, outcome: Outcome) -> Self {
        TestRecord {
            binary: binary.into(),
            name: name.into(),
            outcome,
            signal: None,
            message: None,
            duration_ms: 0,
            warnings: Vec::new(),
            stack: Vec::new(),
            attempts: Vec::new(),
            flaky: false,
            passed_alone: false,
            reused: false,
            volatile: None,
            env_reads: None,
            uncovered: false,
        }
    }

    /// How a retried test's runs went ("flaky: failed, then passed on retry 1", "did not pass
    /// in 3 runs"); `None` when it ran once.
    pub fn runs(&self) -> Option<String> {
        let n = self.attempts.len();
        if n == 0 {
            return None;
        }
        Some(if self.flaky {
            let before: Vec<&str> = self.attempts[..n - 1].iter().map(|a| a.outcome.as_str()).collect();
            format!("flaky: {}, then passed on retry {}", before.join(", "), n - 1)
        } else {
            format!("did not pass in {n} runs")
        })
    }
}

/// One frame of a panic's backtrace, in the workspace's code.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The function, as the backtrace names it (demangled, without hash).
    pub function: String,
    /// Path relative to the workspace root, `/`-separated.
    pub file: String,
    pub line: u32,
}

/// What a matrix was built from: shards may only be merged when these agree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// `rustc -vV` of the toolchain that built the tests.
    pub rustc: String,
    /// MD5 over every source file of the units (relative path and contents), in path order.
    pub sources: String,
}

/// The matrix itself.
#[derive(Clone, Debug, Default)]
pub struct Spectra {
    pub workspace_root: String,
    pub tests: Vec<TestRecord>,
    pub units: Vec<Unit>,
    /// `coverage[u]` = the tests that ran unit `u`.
    pub coverage: Vec<BitSet>,
    /// Toolchain and source digest (absent for imported matrices).
    pub build: Option<BuildInfo>,
    /// The shard this matrix holds (`count:1/3`, `hash:2/4`), if partitioned.
    pub partition: Option<String>,
    /// Functions of the workspace, in code order (empty for imported matrices).
    pub functions: Vec<FunctionSpan>,
    /// Per unit, the innermost function containing it (index into `functions`).
    pub unit_function: Vec<Option<u32>>,
    /// Control-flow edge profiles over the same tests (absent with `--no-edges` and for
    /// imported matrices).
    pub edges: Option<EdgeSpectra>,
    /// What the ranking needs from the sources, from the sources that were built (absent in
    /// imported matrices and files saved before schema v3: then they are read where the file
    /// is used).
    pub facts: Option<SourceFacts>,
    /// What the run saw of the workspace before it built, for the next run's selection of
    /// tests (absent in imported, merged and older files: the next run then runs every test).
    pub snapshot: Option<Snapshot>,
    /// The source files whose code a report may show (not saved): `None`, all of them (a run's
    /// own); for a loaded file, those that match their recorded digest
    /// ([`Spectra::check_sources`]).
    pub shown_sources: Option<std::collections::BTreeSet<String>>,
}

impl Spectra {
    /// Builds the matrix from per-test covered units (unit ids index `units`).
    pub fn from_tests(
        workspace_root: String,
        tests: Vec<TestRecord>,
        units: Vec<Unit>,
        covered: &[Vec<UnitId>],
    ) -> Self {
        let mut coverage = vec![BitSet::new(tests.len()); units.len()];
        for (t, ids) in covered.iter().enumerate() {
            for &u in ids {
                coverage[u.index()].insert(t);
            }
        }
        Spectra::from_columns(workspace_root, tests, units, coverage)
    }

    /// Builds the matrix from per-unit columns (`coverage[u]`: the tests that ran unit `u`).
    pub fn from_columns(
        workspace_root: String,
        tests: Vec<TestRecord>,
        units: Vec<Unit>,
        coverage: Vec<BitSet>,
    ) -> Self {
        Spectra {
            workspace_root,
            tests,
            units,
            coverage,
            build: None,
            partition: None,
            functions: Vec::new(),
            unit_function: Vec::new(),
            edges: None,
            facts: None,
            snapshot: None,
            shown_sources: None,
        }
    }

    /// The name the sources gave a function when the tests were collected.
    pub fn function_name(&self, f: &FunctionSpan) -> Option<&str> {
        self.facts.as_ref()?.function_names.get(f).map(String::as_str)
    }

    /// Per function, the function a reader takes it for: a closure (an async block too: syntax
    /// names both `f::{closure}`) is part of the innermost function around it that is not one,
    /// its own lines among that function's; anything else is itself. A reader opens `fn`s, and
    /// one closure apiece would take the report's first places from them (six of eight functions
    /// above a fault were closures on ipnet's parser). Without names (an imported matrix), each
    /// is itself.
    pub fn items(&self) -> Vec<u32> {
        let closure: Vec<bool> = self
            .functions
            .iter()
            .map(|f| self.function_name(f).is_some_and(|n| n.ends_with("::{closure}")))
            .collect();
        let mut items: Vec<u32> = (0..self.functions.len() as u32).collect();
        if !closure.contains(&true) {
            return items;
        }
        // Outer functions before the ones they hold: by file, start, then the longest first;
        // `open` holds the functions around the current one, innermost last.
        let mut order: Vec<usize> = (0..self.functions.len()).collect();
        let f = &self.functions;
        order.sort_by(|&a, &b| {
            (&f[a].file, f[a].start, std::cmp::Reverse(f[a].end)).cmp(&(
                &f[b].file,
                f[b].start,
                std::cmp::Reverse(f[b].end),
            ))
        });
        let mut open: Vec<usize> = Vec::new();
        for i in order {
            open.retain(|&o| f[o].file == f[i].file && f[o].end >= f[i].start);
            if closure[i]
                && let Some(&o) = open.iter().rev().find(|&&o| !closure[o] && f[o].end >= f[i].end)
            {
                items[i] = o as u32;
            }
            open.push(i);
        }
        items
    }

    /// Per unit, the function a reader takes it for ([`Spectra::items`] of its innermost
    /// function): what function-level rankings and the report's function blocks group by.
    pub fn unit_items(&self) -> Vec<Option<u32>> {
        self.unit_items_of(&self.items())
    }

    /// [`Spectra::unit_items`] with the functions' [`Spectra::items`] already known.
    fn unit_items_of(&self, items: &[u32]) -> Vec<Option<u32>> {
        self.unit_function
            .iter()
            .map(|f| f.map(|f| items[f as usize]))
            .collect()
    }

    /// Each unit's position, by `(file, line)`.
    pub fn unit_index(&self) -> std::collections::HashMap<(&str, u32), usize> {
        self.units
            .iter()
            .enumerate()
            .map(|(i, u)| ((u.file.as_str(), u.line), i))
            .collect()
    }

    /// Sets the functions and maps every unit to the innermost one containing it.
    pub fn set_functions(&mut self, mut functions: Vec<FunctionSpan>) {
        functions.sort();
        functions.dedup();
        let mut by_file: std::collections::HashMap<&str, Vec<(usize, &FunctionSpan)>> =
            std::collections::HashMap::new();
        for (i, f) in functions.iter().enumerate() {
            by_file.entry(f.file.as_str()).or_default().push((i, f));
        }
        self.unit_function = self
            .units
            .iter()
            .map(|u| {
                by_file
                    .get(u.file.as_str())?
                    .iter()
                    .filter(|(_, f)| f.start <= u.line && u.line <= f.end)
                    .min_by_key(|(_, f)| f.end - f.start)
                    .map(|&(i, _)| i as u32)
            })
            .collect();
        self.functions = functions;
    }

    /// Tests in the failing set.
    pub fn failing_mask(&self) -> BitSet {
        self.mask(|o| o.is_failing())
    }
    /// Tests that ran and passed.
    pub fn passing_mask(&self) -> BitSet {
        self.mask(|o| o == Outcome::Passed)
    }
    /// Tests whose outcome satisfies `pred`, among those with a row of coverage (not
    /// [`TestRecord::uncovered`]): the sets the spectra count.
    pub fn mask(&self, pred: impl Fn(Outcome) -> bool) -> BitSet {
        let mut m = BitSet::new(self.tests.len());
        for (i, t) in self.tests.iter().enumerate() {
            if pred(t.outcome) && !t.uncovered {
                m.insert(i);
            }
        }
        m
    }

    /// ⟨ef, ep, nf, np⟩ of every unit.
    pub fn counts(&self) -> Vec<Counts> {
        let (fail, pass) = (self.failing_mask(), self.passing_mask());
        let total_f = fail.count_and(&fail);
        let total_p = pass.count_and(&pass);
        self.coverage
            .iter()
            .map(|c| {
                let (ef, ep) = (c.count_and(&fail), c.count_and(&pass));
                Counts::new(ef, ep, total_f - ef, total_p - ep)
            })
            .collect()
    }
}

impl Spectra {
    /// The same matrix with functions as units: a function (named by its first line) is run by
    /// a test when any of its lines is. Lines outside every function are dropped.
    pub fn by_function(&self) -> Spectra {
        let items = self.items();
        let unit_items = self.unit_items_of(&items);
        let mut coverage = vec![BitSet::new(self.tests.len()); self.functions.len()];
        for (u, f) in unit_items.iter().enumerate() {
            if let Some(f) = f {
                coverage[*f as usize].union_with(&self.coverage[u]);
            }
        }
        let units = self
            .functions
            .iter()
            .map(|f| Unit {
                file: f.file.clone(),
                line: f.start,
            })
            .collect();
        // A backtrace frame stands for its function too.
        let mut tests = self.tests.clone();
        for t in &mut tests {
            t.stack
                .retain_mut(|f| match self.enclosing_items(&items, &f.file, &[f.line]).first() {
                    Some(&start) => {
                        f.line = start;
                        true
                    }
                    None => false,
                });
        }
        Spectra {
            workspace_root: self.workspace_root.clone(),
            tests,
            units,
            coverage,
            build: self.build.clone(),
            partition: self.partition.clone(),
            functions: self.functions.clone(),
            unit_function: (0..self.functions.len() as u32).map(Some).collect(),
            edges: self
                .edges
                .as_ref()
                .map(|e| e.map_units(|u| unit_items[u.index()].map(UnitId))),
            facts: self.facts.as_ref().map(|f| f.for_functions(self.functions.len())),
            snapshot: None,
            shown_sources: self.shown_sources.clone(),
        }
    }

    /// The same matrix with only the units for which `keep` holds (edges' blocks lose the
    /// others' lines).
    pub fn retain_units(&self, keep: &[bool]) -> Spectra {
        let mut next = 0u32;
        let new_id: Vec<Option<UnitId>> = keep
            .iter()
            .map(|&k| {
                next += u32::from(k);
                k.then(|| UnitId(next - 1))
            })
            .collect();
        let kept = |u: &usize| keep[*u];
        let mut out = Spectra {
            workspace_root: self.workspace_root.clone(),
            tests: self.tests.clone(),
            units: (0..self.units.len())
                .filter(kept)
                .map(|u| self.units[u].clone())
                .collect(),
            coverage: (0..self.units.len())
                .filter(kept)
                .map(|u| self.coverage[u].clone())
                .collect(),
            build: self.build.clone(),
            partition: self.partition.clone(),
            functions: Vec::new(),
            unit_function: Vec::new(),
            edges: self.edges.as_ref().map(|e| e.map_units(|u| new_id[u.index()])),
            facts: self.facts.as_ref().map(|f| f.retain(keep)),
            snapshot: None,
            shown_sources: self.shown_sources.clone(),
        };
        out.set_functions(self.functions.clone());
        out
    }

    /// The first lines of the functions a reader takes the given lines for ([`Spectra::items`]
    /// of the innermost functions containing them): how a fault is named at `by_function`
    /// granularity.
    pub fn enclosing_functions(&self, file: &str, lines: &[u32]) -> Vec<u32> {
        self.enclosing_items(&self.items(), file, lines)
    }

    /// [`Spectra::enclosing_functions`] with the functions' [`Spectra::items`] already known.
    fn enclosing_items(&self, items: &[u32], file: &str, lines: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = lines
            .iter()
            .filter_map(|&l| {
                self.functions
                    .iter()
                    .enumerate()
                    .filter(|(_, f)| f.file == file && f.start <= l && l <= f.end)
                    .min_by_key(|(_, f)| f.end - f.start)
                    .map(|(i, _)| self.functions[items[i] as usize].start)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The order tests are kept in: tests that ran by (binary, name), then ignored ones. Every run
/// and every merge uses it, so shards merge into exactly the unsharded matrix.
pub fn test_order(a: &TestRecord, b: &TestRecord) -> std::cmp::Ordering {
    let key = |t: &TestRecord| (t.outcome == Outcome::Ignored, t.binary.clone(), t.name.clone());
    key(a).cmp(&key(b))
}
