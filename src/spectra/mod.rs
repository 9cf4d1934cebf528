//! The coverage matrix: tests (with outcomes), units (source lines), and one bitset per unit
//! over the tests that ran it. Saved as JSON so `cargo sfl report` can re-rank without
//! re-running anything.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

use crate::bitset::BitSet;

mod counts;
pub mod edges;
mod error;
mod facts;
mod file;
mod merge;
mod snapshot;
mod unit;

pub use counts::Counts;
pub use edges::{Block, BlockId, Edge, EdgeSpectra, SavedEdges};
pub use error::SpectraError;
pub use facts::{Hidden, SourceFacts, file_digest, sources_digest};
pub use file::EdgeProfiles;
pub use snapshot::{FileState, Snapshot, line_hashes};
pub use unit::{FunctionSpan, Unit, UnitId};

/// Version tag of the saved-spectra file; bump on any incompatible change.
pub const SCHEMA: &str = "cargo-sfl-spectra/v3";
/// The previous schema, still read: no source facts (`facts`), so test code, line evidence and
/// function names are read from the sources where the file is used.
pub const SCHEMA_V2: &str = "cargo-sfl-spectra/v2";
/// The first schema, still read: edge profiles as plain JSON (`edges`), no source facts.
pub const SCHEMA_V1: &str = "cargo-sfl-spectra/v1";

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
    /// Every run of the test when it was retried (`--retries`), the first included, in order.
    /// The record's own outcome, message, stack and coverage are the first run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
    /// It failed, then passed on a retry. It stays in the failing set with the failing run's
    /// coverage: that run is evidence of the fault (see docs/guide/reference.md, flaky tests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flaky: bool,
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
            reused: false,
            volatile: None,
            env_reads: None,
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
    /// Tests whose outcome satisfies `pred`.
    pub fn mask(&self, pred: impl Fn(Outcome) -> bool) -> BitSet {
        let mut m = BitSet::new(self.tests.len());
        for (i, t) in self.tests.iter().enumerate() {
            if pred(t.outcome) {
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
        let mut coverage = vec![BitSet::new(self.tests.len()); self.functions.len()];
        for (u, f) in self.unit_function.iter().enumerate() {
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
                .retain_mut(|f| match self.enclosing_functions(&f.file, &[f.line]).first() {
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
                .map(|e| e.map_units(|u| self.unit_function[u.index()].map(UnitId))),
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

    /// The first lines of the innermost functions containing the given lines (how a fault is
    /// named at `by_function` granularity).
    pub fn enclosing_functions(&self, file: &str, lines: &[u32]) -> Vec<u32> {
        let mut out: Vec<u32> = lines
            .iter()
            .filter_map(|&l| {
                self.functions
                    .iter()
                    .filter(|f| f.file == file && f.start <= l && l <= f.end)
                    .min_by_key(|f| f.end - f.start)
                    .map(|f| f.start)
            })
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Whether `file` stays inside the directory it is relative to: not absolute (no root, no
/// drive prefix, no leading separator of either kind) and without `..`.
fn inside_workspace(file: &str) -> bool {
    !file.starts_with(['/', '\\'])
        && Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The order tests are kept in: tests that ran by (binary, name), then ignored ones. Every run
/// and every merge uses it, so shards merge into exactly the unsharded matrix.
pub fn test_order(a: &TestRecord, b: &TestRecord) -> std::cmp::Ordering {
    let key = |t: &TestRecord| (t.outcome == Outcome::Ignored, t.binary.clone(), t.name.clone());
    key(a).cmp(&key(b))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn test(name: &str, outcome: Outcome) -> TestRecord {
        TestRecord::new("b", name, outcome)
    }

    /// A backtrace frame on `src/lib.rs` (the file of the test matrices here).
    pub(crate) fn frame(line: u32) -> Frame {
        Frame {
            function: "f".into(),
            file: "src/lib.rs".into(),
            line,
        }
    }

    /// Doric's minmax (Landsberg & Barr, Fig. 2): t1..t5 over u1..u4.
    pub(crate) fn doric_minmax() -> Spectra {
        let rows: [(&[u32], Outcome); 5] = [
            (&[1, 2], Outcome::Failed),
            (&[2, 3], Outcome::Failed),
            (&[2], Outcome::Failed),
            (&[0, 3], Outcome::Passed),
            (&[0, 1], Outcome::Passed),
        ];
        let tests = rows
            .iter()
            .enumerate()
            .map(|(i, (_, o))| test(&format!("t{}", i + 1), *o))
            .collect();
        let units = (1..=4)
            .map(|l| Unit {
                file: "src/lib.rs".into(),
                line: l,
            })
            .collect();
        let covered: Vec<Vec<UnitId>> = rows
            .iter()
            .map(|(c, _)| c.iter().copied().map(UnitId).collect())
            .collect();
        Spectra::from_tests("/ws".into(), tests, units, &covered)
    }

    /// A deterministic xorshift generator for property tests (fixed seeds keep CI reproducible).
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Functions of `src/lib.rs` spanning lines `start..=end`.
    pub(crate) fn lib_functions(spans: &[(u32, u32)]) -> Vec<FunctionSpan> {
        spans
            .iter()
            .map(|&(start, end)| FunctionSpan {
                file: "src/lib.rs".into(),
                start,
                end,
            })
            .collect()
    }

    /// A matrix from rows of 0/1 (one per unit) ending in `+` (passed) or `-` (failed), as
    /// GZoltar writes them; units are lines 1.. of `src/lib.rs`.
    pub(crate) fn matrix(rows: &[&str]) -> Spectra {
        let width = rows[0].len() - 1;
        let tests = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let outcome = if r.ends_with('-') {
                    Outcome::Failed
                } else {
                    Outcome::Passed
                };
                test(&format!("t{}", i + 1), outcome)
            })
            .collect();
        let units = (1..=width as u32)
            .map(|line| Unit {
                file: "src/lib.rs".into(),
                line,
            })
            .collect();
        let covered: Vec<Vec<UnitId>> = rows
            .iter()
            .map(|r| {
                (0..width as u32)
                    .filter(|&u| r.as_bytes()[u as usize] == b'1')
                    .map(UnitId)
                    .collect()
            })
            .collect();
        Spectra::from_tests("/ws".into(), tests, units, &covered)
    }

    /// The single-fault-optimal study's 10-test minmax (Landsberg, Sun & Kroening; t5 as its
    /// numbers support), t1..t3 failing.
    pub(crate) fn sfo_minmax() -> Spectra {
        matrix(&[
            "10110-", "10011-", "10010-", "11000+", "10100+", "10001+", "10011+", "10000+", "11001+", "11100+",
        ])
    }

    #[test]
    fn timed_out_tests_are_neither_failing_nor_passing() {
        let mut s = matrix(&["11-", "10-", "01+"]);
        s.tests[1].outcome = Outcome::TimedOut;
        let members = |m: BitSet| (0..3).filter(|&t| m.contains(t)).collect::<Vec<_>>();
        assert_eq!(members(s.failing_mask()), [0]);
        assert_eq!(members(s.passing_mask()), [2]);
        // Unit 1 is run by the failing test and the timed-out one: ef 1, not 2.
        let c = s.counts()[0];
        assert_eq!((c.ef, c.ep, c.nf, c.np), (1.0, 0.0, 0.0, 1.0));
    }

    #[test]
    fn retried_tests_say_how_their_runs_went() {
        let mut t = test("t", Outcome::Failed);
        assert_eq!(t.runs(), None);
        let run = |outcome| Attempt {
            outcome,
            duration_ms: 1,
            message: None,
        };
        t.attempts = vec![run(Outcome::Failed), run(Outcome::TimedOut), run(Outcome::Failed)];
        assert_eq!(t.runs().unwrap(), "did not pass in 3 runs");
        t.attempts = vec![run(Outcome::Failed), run(Outcome::Crashed), run(Outcome::Passed)];
        t.flaky = true;
        assert_eq!(t.runs().unwrap(), "flaky: failed, crashed, then passed on retry 2");
        // Both survive a save and a load.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let s = Spectra::from_tests("/ws".into(), vec![t.clone()], Vec::new(), &[Vec::new()]);
        s.save(&path).unwrap();
        assert_eq!(Spectra::load(&path).unwrap().tests, [t]);
    }

    /// Regression: leaving out the first unit (a file that starts with test code) panicked on
    /// an id computed before it was known to be kept.
    #[test]
    fn retain_units_can_drop_the_first_unit() {
        let s = doric_minmax();
        let kept = s.retain_units(&[false, true, false, true]);
        let lines: Vec<u32> = kept.units.iter().map(|u| u.line).collect();
        assert_eq!(lines, [2, 4]);
        assert_eq!(kept.coverage[0], s.coverage[1]);
        assert_eq!(kept.coverage[1], s.coverage[3]);
    }

    #[test]
    fn counts_follow_the_matrix() {
        let s = doric_minmax();
        let c = s.counts();
        assert_eq!(c[2], Counts::new(3, 0, 0, 2));
        assert_eq!(c[0], Counts::new(0, 2, 3, 0));
        assert_eq!(c[3], Counts::new(1, 1, 2, 1));
    }

    #[test]
    fn saved_spectra_round_trip() {
        let s = doric_minmax();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        s.save(&path).unwrap();
        let back = Spectra::load(&path).unwrap();
        assert_eq!(back.tests, s.tests);
        assert_eq!(back.units, s.units);
        assert_eq!(back.coverage, s.coverage);
    }

    #[test]
    fn edge_profiles_are_saved_deflated_read_on_demand_and_v1_still_loads() {
        use super::edges::{Block, Edge, EdgeSpectra};
        let mut s = doric_minmax();
        let blocks = vec![Block {
            function: "minmax".into(),
            index: 0,
            lines: vec![UnitId(0)],
        }];
        let entry = Edge {
            from: None,
            to: super::edges::BlockId(0),
        };
        let traversed: Vec<Vec<Edge>> = (0..s.tests.len()).map(|_| vec![entry]).collect();
        s.edges = Some(EdgeSpectra::from_tests(blocks, s.tests.len(), &traversed));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        s.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"schema\":\"cargo-sfl-spectra/v3\"") && text.contains("\"edges_deflated\":\""));
        assert_eq!(Spectra::load(&path).unwrap().edges, s.edges);
        assert_eq!(Spectra::load_with(&path, EdgeProfiles::Skip).unwrap().edges, None);
        // Skipped edges are not even inflated: garbage there does not matter, until asked for.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut garbage = v.clone();
        garbage["edges_deflated"] = "!!".into();
        let garbage = serde_json::to_vec(&garbage).unwrap();
        assert!(Spectra::parse_with(&garbage, EdgeProfiles::Skip).is_ok());
        assert!(Spectra::parse(&garbage).unwrap_err().to_string().contains("not base64"));
        // Schema v1 (edges as plain JSON) still loads.
        let mut v1 = v;
        v1["schema"] = SCHEMA_V1.into();
        v1["edges"] = serde_json::to_value(s.edges.as_ref().unwrap().to_saved()).unwrap();
        v1.as_object_mut().unwrap().remove("edges_deflated");
        assert_eq!(
            Spectra::parse(&serde_json::to_vec(&v1).unwrap()).unwrap().edges,
            s.edges
        );
    }

    #[test]
    fn a_test_in_two_shards_is_refused_naming_both_files() {
        let e = Spectra::merge(vec![doric_minmax(), doric_minmax()]).unwrap_err();
        assert!(
            matches!(
                e,
                SpectraError::InTwoShards {
                    first: 1,
                    second: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.shard(), Some(1));
    }

    #[test]
    fn foreign_or_corrupt_spectra_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, b"{\"schema\":\"other/v9\"}").unwrap();
        let err = |path: &Path| Spectra::load(path).unwrap_err().to_string();
        assert!(err(&path).contains("other/v9"));
        std::fs::write(&path, b"\x00\x01").unwrap();
        assert!(err(&path).contains("not JSON"));
        doric_minmax().save(&path).unwrap();
        // u3 is covered by t1..t3 (0x07); 0xff would name tests that do not exist.
        let text = std::fs::read_to_string(&path).unwrap().replace("\"07\"", "\"ff\"");
        std::fs::write(&path, text).unwrap();
        assert!(err(&path).contains("bitset"));
    }

    #[test]
    fn spectra_naming_files_outside_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let with_unit = |file: &str, line: u32| {
            let mut s = doric_minmax();
            s.units[1] = Unit {
                file: file.into(),
                line,
            };
            s.save(&path).unwrap();
            Spectra::load(&path)
        };
        for bad in ["/etc/shadow", "../../x", "src/../../x", "\\\\server\\share"] {
            let err = with_unit(bad, 3).unwrap_err().to_string();
            assert!(
                err.contains("not a path inside the workspace") && err.contains(&format!("{bad:?}")),
                "{err}"
            );
        }
        // Imported units are names, not files.
        assert!(with_unit("/etc/shadow", 0).is_ok());
        assert!(with_unit("./src/lib.rs", 3).is_ok());
        let mut s = doric_minmax();
        s.tests[0].stack.push(Frame {
            file: "/root/.ssh/id_rsa".into(),
            ..frame(1)
        });
        s.save(&path).unwrap();
        assert!(Spectra::load(&path).unwrap_err().to_string().contains("stack frame"));
        let mut s = doric_minmax();
        s.set_functions(vec![FunctionSpan {
            file: "../lib.rs".into(),
            start: 1,
            end: 2,
        }]);
        s.save(&path).unwrap();
        assert!(Spectra::load(&path).unwrap_err().to_string().contains("function"));
    }
}
