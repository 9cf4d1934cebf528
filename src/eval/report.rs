//! The evaluation's results, as `cargo sfl eval` reports them (`cargo-sfl-eval/v1`): each
//! fault located, and every measure's metrics.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::faults::Fault;
use crate::hitting::Method;

/// Schema tag of `cargo sfl eval --format json`.
pub const SCHEMA: &str = "cargo-sfl-eval/v1";

/// What the coverage says about one fault.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FaultState {
    /// Some line of it was run by a failing test: measures rank it.
    Ranked,
    /// Only passing tests ran it: it sits at the bottom of every ranking.
    RunOnlyByPassingTests,
    /// No test ran any of its lines (an omission, or code no test reaches).
    Unlocalisable,
}

/// A fault and the units it covers.
#[derive(Clone, Debug, Serialize)]
pub struct LocatedFault {
    #[serde(flatten)]
    pub fault: Fault,
    pub state: FaultState,
    /// Executed units of the fault (indices into `Spectra::units`).
    #[serde(skip)]
    pub units: Vec<usize>,
}

/// Every metric of one measure on one version.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Metrics {
    pub standard_rank: f64,
    pub steimann_rank: f64,
    pub min_expense: f64,
    pub max_expense: f64,
    pub avg_expense: f64,
    pub exam: f64,
    pub top: BTreeMap<String, bool>,
    pub accuracy: f64,
    /// HT_Rank under the Def. 29 model (Def. 28 when no jump targets exist), if computed.
    pub ht_rank: Option<f64>,
}

/// The N of the top-N metrics.
pub const TOP_N: [usize; 4] = [1, 3, 5, 10];

/// Where the fault's report entry ranks: what a person reading the report, entry by entry,
/// meets. An entry (an ambiguity group, or an executed line no failing test ran) is faulty
/// when any of its lines is.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EntryMetrics {
    /// Standard Rank Score over entries: entries ranked strictly higher + tied entries / 2.
    pub entry_rank: f64,
    /// Whether the first faulty entry's expected position (ties broken at random, faulty
    /// entries counted, as for `top`) is at most N.
    pub entry_top: BTreeMap<String, bool>,
}

/// One measure's results.
#[derive(Debug, Serialize)]
pub struct MeasureResult {
    pub measure: &'static str,
    #[serde(flatten)]
    pub metrics: Metrics,
    #[serde(flatten)]
    pub entries: EntryMetrics,
    /// How HT_Rank's hitting times were obtained.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ht: Option<Method>,
    /// Lines read before the first faulty one in the functions-first report's reading order
    /// ([`crate::rank::functions::reading_order`]); `None` at function granularity, or when no
    /// faulty line is ranked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines_read: Option<f64>,
}

/// The whole evaluation.
#[derive(Debug, Serialize)]
pub struct EvalReport {
    pub schema: &'static str,
    pub faults: Vec<LocatedFault>,
    /// Executed lines: the locations every metric counts.
    pub lines: usize,
    /// Of those, lines run by a failing test (the rest tie at the bottom).
    pub ranked_lines: usize,
    pub conventions: BTreeMap<&'static str, String>,
    pub measures: Vec<MeasureResult>,
}
