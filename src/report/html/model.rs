//! The data the page's script reads, embedded in the page as JSON (field order = key order).

use serde::Serialize;

use crate::report::model::Summary;
use crate::report::view::Conventions;

/// Everything the script needs.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PageData<'a> {
    pub summary: &'a Summary,
    pub conventions: Conventions,
    pub diff_base: Option<&'a str>,
    pub tests: Vec<PageTest<'a>>,
    /// Test indices of the failing tests.
    pub failing: Vec<usize>,
    /// ρ_k of each failing test: the units it runs (all of them, as cl counts them).
    pub rho: Vec<usize>,
    pub files: Vec<PageFile<'a>>,
    /// Every unit of those files: (file, line, group or -1, ef, ep).
    pub units: Vec<(usize, u32, i64, u32, u32)>,
    /// The report's groups.
    pub groups: Vec<PageGroup>,
    pub rankings: Vec<PageRanking>,
}

#[derive(Serialize)]
pub(super) struct PageTest<'a> {
    pub name: String,
    pub outcome: &'static str,
    pub runs: Option<String>,
    pub message: Option<&'a str>,
    /// Backtrace frames: (file, line, function).
    pub stack: Vec<(&'a str, u32, &'a str)>,
}

/// A file with a line some failing test ran, with its source text.
#[derive(Serialize)]
pub(super) struct PageFile<'a> {
    pub path: &'a str,
    pub lines: &'a [String],
}

/// A group: its label, units, counts, the failing tests (positions in `failing`) and the
/// first passing tests that ran it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PageGroup {
    pub label: String,
    /// The line the other reports lead with: (file, line); none for imported units.
    pub lead: Option<(usize, u32)>,
    pub units: Vec<usize>,
    pub ef: f64,
    pub ep: f64,
    pub nf: f64,
    pub np: f64,
    pub fail: Vec<usize>,
    pub pass: Vec<usize>,
    pub pass_more: usize,
    /// A ranking's own group: the report's group it is part of (what "not the bug" refutes),
    /// -1 for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base: Option<i64>,
}

#[derive(Serialize)]
pub(super) struct PageRanking {
    pub measure: &'static str,
    pub formula: &'static str,
    pub citation: &'static str,
    pub probability: bool,
    pub entries: Vec<PageEntry>,
    /// A measure whose groups are its own (CP's, split by its scores) carries them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<PageGroup>>,
    /// Functions first (the default): the ranking read function by function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub functions: Option<Vec<PageFunction>>,
}

/// A function of a ranking read function by function: its heading and the entries shown
/// under it.
#[derive(Serialize)]
pub(super) struct PageFunction {
    /// `#rank name file:start-end`.
    pub label: String,
    /// Indices into the ranking's `entries`, in rank order (the first few).
    pub entries: Vec<usize>,
    /// Per entry, the line it is shown at: its first line in the function (file index, line).
    pub at: Vec<Option<(usize, u32)>>,
    /// Per entry, whether that line changed since `--diff-base`.
    pub changed: Vec<bool>,
}

#[derive(Serialize)]
pub(super) struct PageEntry {
    /// The entry's group among the ranking's groups.
    pub g: usize,
    pub score: Option<f64>,
    pub log10: Option<f64>,
    pub rank: f64,
    pub certain: bool,
    /// The line it is shown at changed since `--diff-base`.
    pub changed: bool,
    pub panicked: bool,
    /// With `--diff-base`, the changed line it is shown at (file index, line) when that is not
    /// its lead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<(usize, u32)>,
}
