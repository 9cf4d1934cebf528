//! What every report reads: the rankings of one report, each entry with its lines in reading
//! order, its scores, ranks and marks, and the facts the rankings share (the summary, the
//! failing tests that pin the all-failing core down, the entries of lines with identical
//! coverage). Built once from the analyses ([`super::assemble`]); the output formats only read
//! it.

use serde::Serialize;

use crate::evidence::LineEvidence;
use crate::measures::{Counts, Measure};
pub use crate::rank::functions::FunctionBlock;
use crate::spectra::Spectra;

/// One report's rankings and the facts they share.
pub struct Report<'a> {
    /// The matrix ranked: lines, or functions at function granularity.
    pub spectra: &'a Spectra,
    pub summary: Summary,
    /// Algorithm 1 of Landsberg, Sun & Kroening's single-fault-optimal study: the failing tests
    /// (test indices) that pin the all-failing core down.
    pub core_tests: Vec<usize>,
    /// Every entry of lines with identical coverage (the groups every measure ranks but CP's
    /// and the combined ranking's), ranked or not, in code order.
    pub groups: Vec<Group>,
    /// One per measure, in the order asked.
    pub rankings: Vec<Ranking<'a>>,
    /// The units are lines and the matrix knows their functions: each ranking is also read
    /// function by function ([`Ranking::functions`]).
    pub lines_in_functions: bool,
    /// Failing tests that passed in the workspace's last green run, and the lines changed
    /// since that they run (at line granularity).
    pub since_passed: Option<SincePassed>,
}

/// What changed since failing tests last passed ([`crate::spectra::SinceGreen`]), in the
/// report's units.
#[derive(Clone, Debug, PartialEq)]
pub struct SincePassed {
    /// When the last green run started, in seconds since the Unix epoch.
    pub taken: u64,
    /// The tests (indices) that passed then and fail now.
    pub tests: Vec<usize>,
    /// The changed lines some of those tests run (unit indices, in unit order), each with the
    /// tests that run it.
    pub lines: Vec<(usize, Vec<usize>)>,
    /// The changed lines (file, line) no test's coverage shows: in code that runs while
    /// compiling ([`crate::spectra::Snapshot::compile_time`]), lines without a counter of
    /// their own inside a function those tests ran (a `const`'s value, computed while
    /// compiling), and lines of files no coverage map holds (a module of constants only, a
    /// path dependency that is not instrumented).
    pub unseen: Vec<(String, u32)>,
    /// The changed lines (file, line) of the failing tests' own code, which no ranking holds:
    /// in the functions of the frames of their stacks (the test's assertion, its setup).
    pub in_tests: Vec<(String, u32)>,
    /// The files changed since that no line can show ([`crate::spectra::SinceGreen::files`]:
    /// data files, manifests, removed sources).
    pub files: Vec<String>,
    /// The environment variables changed since ([`crate::spectra::SinceGreen::env`]).
    pub env: Vec<String>,
}

/// Units no test tells apart: one entry of a ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Its units in the order a person should read them: the lead (the line every report
    /// shows the entry at) first, then by evidence with `--tie-break evidence`, else in code
    /// order.
    pub lines: Vec<usize>,
    /// Per unit of `lines`, the evidence that put it there (`--tie-break evidence` only).
    pub evidence: Option<Vec<LineEvidence>>,
    /// The raw spectrum shared by every unit.
    pub counts: Counts,
    /// For a ranking's own groups ([`Ranking::own_groups`]): the report's group that holds its
    /// first unit in code order.
    pub base: Option<usize>,
}

impl Group {
    /// The unit every report shows the group at.
    pub fn lead(&self) -> usize {
        self.lines[0]
    }

    /// Its units in code order.
    pub fn in_code_order(&self) -> Vec<usize> {
        let mut units = self.lines.clone();
        units.sort_unstable();
        units
    }
}

/// One measure's ranking.
pub struct Ranking<'a> {
    pub measure: &'a Measure,
    /// Most suspicious first.
    pub entries: Vec<Entry>,
    /// With `--order ht`: how the hitting times that order the entries were obtained.
    pub ht: Option<crate::hitting::Method>,
    /// For CP: the control-flow graph it solved, and how.
    pub cp: Option<CpInfo<'a>>,
    /// The groups of a measure that forms its own (CP's and the combined ranking's are split by
    /// their own scores), each with the report's group it is part of; `None` when the entries
    /// are the report's groups.
    pub own_groups: Option<Vec<Group>>,
    /// The entries read function by function (most suspicious function first, each with its
    /// entries' indices); empty at function granularity and without function information.
    pub functions: Vec<FunctionBlock>,
}

impl Ranking<'_> {
    /// The groups the entries' `group` indices name: the ranking's own, else the report's.
    pub fn groups<'g>(&'g self, report: &'g Report) -> &'g [Group] {
        self.own_groups.as_deref().unwrap_or(&report.groups)
    }
}

/// One entry of a ranking.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Index of its group among the ranking's groups ([`Ranking::groups`]).
    pub group: usize,
    /// Its units, lead first: the group's `lines`.
    pub lines: Vec<usize>,
    pub score: f64,
    /// The measure could not score it (CP: no block maps to its lines); `score` means nothing
    /// then, and the entry ranks after every scored one.
    pub unscored: bool,
    /// log10 of the probability, for Doric's measures.
    pub log10: Option<f64>,
    /// 1-based mid-rank among entries.
    pub rank: f64,
    /// Entries sharing this rank (1 when not tied).
    pub tied: usize,
    /// 1-based mid-rank among source lines (what EXAM-style metrics count).
    pub line_rank: f64,
    pub counts: Counts,
    /// A failing test ran this unit and nothing else (Doric's P(f) = 1).
    pub certain: bool,
    /// A stack-first ranking put it first: a failing test panicked on its own operation.
    pub panicked: bool,
    /// Its lines changed since `--diff-base` (units, in code order): a report tags a line it
    /// shows as changed only when it is one of them (an entry's other lines run alike but did
    /// not change).
    pub changed_lines: Vec<usize>,
    /// With `--order ht`: the expected steps until the HT_Rank model reaches its first line.
    pub expected_time: Option<f64>,
}

impl Entry {
    /// Some of its lines changed since `--diff-base`.
    pub fn changed(&self) -> bool {
        !self.changed_lines.is_empty()
    }

    /// The unit every report shows the entry at.
    pub fn lead(&self) -> usize {
        self.lines[0]
    }

    /// The unit a report of lines shows it at: its lead, or with `--diff-base` its first
    /// changed line in reading order (the lines of an entry run alike; the changed one is the
    /// one to read).
    pub fn shown_at(&self) -> usize {
        self.lines
            .iter()
            .copied()
            .find(|u| self.changed_lines.contains(u))
            .unwrap_or(self.lead())
    }

    /// The score, or `None` for an entry the measure could not score.
    pub fn shown_score(&self) -> Option<f64> {
        (!self.unscored).then_some(self.score)
    }

    /// Its first unit in code order.
    pub fn first(&self) -> usize {
        self.lines.iter().copied().min().expect("an entry has a unit")
    }

    /// Its units in code order.
    pub fn in_code_order(&self) -> Vec<usize> {
        let mut units = self.lines.clone();
        units.sort_unstable();
        units
    }
}

/// How CP's system was solved, over which control-flow graph.
#[derive(Clone, Debug, PartialEq)]
pub struct CpInfo<'a> {
    pub blocks: usize,
    /// Traversed edges within functions.
    pub edges: usize,
    /// Calls between the workspace's functions in the edge profiles.
    pub calls: usize,
    /// The measure propagates along calls (`cp-calls`).
    pub along_calls: bool,
    pub blocks_solved: usize,
    pub exit_blocks: usize,
    pub method: crate::cp::CpMethod,
    /// The functions of the damped components, sorted.
    pub damped_functions: Vec<&'a str>,
    /// Largest residual of the undamped equations.
    pub residual: f64,
}

/// The counts every report opens with.
#[derive(Serialize, Debug, Default, PartialEq)]
pub struct Summary {
    pub tests: usize,
    pub passed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub crashed: usize,
    pub ignored: usize,
    /// Failed, then passed on a retry (`--retries`); counted among the failing tests.
    pub flaky: usize,
    /// Failed beside other tests, then passed alone; counted among the passing tests.
    #[serde(skip_serializing_if = "is_zero")]
    pub passed_alone: usize,
    /// Not run: their rows are the last run's, which no edit since could change.
    #[serde(skip_serializing_if = "is_zero")]
    pub reused: usize,
    /// Failing tests with no coverage (a doctest that did not build): listed among the failing
    /// tests, left out of the ranking.
    #[serde(skip_serializing_if = "is_zero")]
    pub uncovered: usize,
    /// Lines the coverage map knows (executable lines of the workspace's code).
    pub units: usize,
    /// Lines at least one test ran.
    pub covered_units: usize,
    /// Lines at least one failing test ran (the ranked lines).
    pub failing_units: usize,
    /// Report entries for those lines: lines with identical coverage are one entry.
    pub entries: usize,
    /// Lines run by every failing test (the all-failing core; a single fault must be there).
    pub all_failing_core: usize,
    pub files: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    /// The failing set: failed and crashed tests (timed-out ones are left out).
    pub fn failing(&self) -> usize {
        self.failed + self.crashed
    }

    /// The failing tests the ranking counts: those with coverage.
    pub fn failing_ranked(&self) -> usize {
        self.failing() - self.uncovered
    }

    /// Tests the ranking uses: passing and failing ones.
    pub fn ranked(&self) -> usize {
        self.passed + self.failing()
    }

    pub fn ran(&self) -> usize {
        self.tests - self.ignored
    }
}

/// One feature's part in a line's combined score ([`crate::combined`]).
#[derive(Serialize, Debug)]
pub struct Contribution {
    pub feature: &'static str,
    pub value: f64,
    pub weight: f64,
    /// `value × weight`.
    pub contribution: f64,
}
