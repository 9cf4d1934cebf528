//! The `cargo-sfl/v1` JSON report: the summary, every test, and every entry of each ranking
//! with its counts, both mid-ranks and the options that produced them.

use serde::Serialize;

use super::model::{CpInfo, Entry, Report, Summary};
use super::text::test_label;
use super::view::{Conventions, View};
use crate::spectra::{Spectra, Unit};

/// Schema tag of the JSON report.
pub const SCHEMA: &str = "cargo-sfl/v1";

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    workspace_root: &'a str,
    summary: &'a Summary,
    /// Algorithm 1 of Landsberg, Sun & Kroening's single-fault-optimal study: failing tests that pin the all-failing core down.
    core_tests: Vec<String>,
    conventions: Conventions,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff_base: Option<&'a str>,
    tests: Vec<JsonTest<'a>>,
    /// Failing tests that passed in the workspace's last green run, and the lines changed
    /// since that they run.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_since_passed: Option<JsonSincePassed<'a>>,
    rankings: Vec<JsonRanking<'a>>,
    /// With --mutate: each mutated line's score, each viable mutant's kills, and the cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    mutation: Option<&'a crate::mutate::Mutation>,
}

#[derive(Serialize)]
struct JsonSincePassed<'a> {
    /// When the last green run started, in seconds since the Unix epoch.
    green_run_started: u64,
    tests: Vec<String>,
    lines: Vec<JsonChangedLine<'a>>,
    /// Changed lines no test's coverage shows: in code that runs while compiling (proc macros,
    /// build dependencies), and lines without coverage of their own inside a function the
    /// failing tests ran (a `const`'s value).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    uncovered_lines: Vec<JsonFileLine<'a>>,
    /// Changed lines of the failing tests' own code (the functions of their stacks' frames),
    /// which no ranking holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    test_lines: Vec<JsonFileLine<'a>>,
    /// Other files changed since (data files, manifests, removed sources).
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    files: &'a [String],
    /// Environment variables whose values changed since.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    environment: &'a [String],
}

#[derive(Serialize)]
struct JsonFileLine<'a> {
    file: &'a str,
    line: u32,
}

#[derive(Serialize)]
struct JsonChangedLine<'a> {
    file: &'a str,
    line: u32,
    /// Those of the tests that run it.
    tests: Vec<String>,
}

impl<'a> JsonSincePassed<'a> {
    fn of(spectra: &'a Spectra, since: &'a super::model::SincePassed) -> Self {
        let label = |t: &usize| test_label(&spectra.tests[*t]);
        JsonSincePassed {
            green_run_started: since.taken,
            tests: since.tests.iter().map(label).collect(),
            lines: since
                .lines
                .iter()
                .map(|(u, tests)| JsonChangedLine {
                    file: &spectra.units[*u].file,
                    line: spectra.units[*u].line,
                    tests: tests.iter().map(label).collect(),
                })
                .collect(),
            uncovered_lines: since
                .unseen
                .iter()
                .map(|(file, line)| JsonFileLine { file, line: *line })
                .collect(),
            test_lines: since
                .in_tests
                .iter()
                .map(|(file, line)| JsonFileLine { file, line: *line })
                .collect(),
            files: &since.files,
            environment: &since.env,
        }
    }
}

#[derive(Serialize)]
struct JsonTest<'a> {
    binary: &'a str,
    name: &'a str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    duration_ms: u64,
    /// A failing test's panic backtrace, workspace frames only, innermost first.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    stack: &'a [crate::spectra::Frame],
    /// Failed, then passed on a retry (`--retries`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    flaky: bool,
    /// Failed beside other tests, passed when run again alone (ranked as passing).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    passed_alone: bool,
    /// Not run: the row is the last run's (test selection).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reused: bool,
    /// Every run of a retried test, in order.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    attempts: &'a [crate::spectra::Attempt],
}

#[derive(Serialize)]
struct JsonRanking<'a> {
    measure: &'static str,
    formula: &'static str,
    /// With --diff-base: how many of the top N entries touch changed lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_in_top: Option<usize>,
    /// With --order ht: entries are in expected-hitting-time order, computed this way.
    #[serde(skip_serializing_if = "Option::is_none")]
    ht_order: Option<&'a crate::hitting::Method>,
    /// For cp: the CFG it solved and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    cfg: Option<JsonCfg<'a>>,
    /// One entry per ambiguity group (a single line when nothing shares its coverage).
    units: Vec<JsonEntry<'a>>,
    /// The same ranking read function by function (the default report's layout): every
    /// function holding a ranked line, most suspicious first (each where its best line ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    functions: Vec<JsonFunction<'a>>,
}

/// A function of a line ranking.
#[derive(Serialize)]
struct JsonFunction<'a> {
    /// `null` for ranked lines outside every function (each its own item).
    name: Option<&'a str>,
    file: &'a str,
    /// Its span, or the line outside every function.
    line: u32,
    end_line: u32,
    /// Mid-rank among functions: functions whose best line ranks strictly higher, plus (tied
    /// functions + 1) / 2.
    rank: f64,
    /// Functions sharing that rank.
    tied: usize,
    /// Its ranked lines, entry by entry in rank order: each entry's index in `units` and the
    /// entry's lines in this function.
    entries: Vec<JsonFunctionEntry>,
}

#[derive(Serialize)]
struct JsonFunctionEntry {
    unit: usize,
    lines: Vec<u32>,
}

/// How CP's system was solved.
#[derive(Serialize)]
struct JsonCfg<'a> {
    blocks: usize,
    /// Traversed edges within functions.
    edges: usize,
    /// Calls between the workspace's functions the measure propagates along (`cp-calls`; 0
    /// for `cp`).
    calls: usize,
    blocks_solved: usize,
    exit_blocks: usize,
    /// `exact`, or `damped` (a singular component's propagation ratios were scaled down).
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    damping_factor: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    damped_functions: Vec<&'a str>,
    /// Largest residual of the undamped equations.
    residual: f64,
}

impl<'a> JsonCfg<'a> {
    fn of(cp: &'a CpInfo) -> Self {
        let (method, damping_factor) = match &cp.method {
            crate::cp::CpMethod::Exact => ("exact", None),
            crate::cp::CpMethod::Damped { factor, .. } => ("damped", Some(*factor)),
        };
        JsonCfg {
            blocks: cp.blocks,
            edges: cp.edges,
            calls: if cp.along_calls { cp.calls } else { 0 },
            blocks_solved: cp.blocks_solved,
            exit_blocks: cp.exit_blocks,
            method,
            damping_factor,
            damped_functions: cp.damped_functions.clone(),
            residual: cp.residual,
        }
    }
}

/// A unit: a source line, a function (`--granularity function`: its first line, `end_line`
/// and `function` name), or an imported unit's name.
#[derive(Serialize)]
struct JsonUnit<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    end_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> JsonUnit<'a> {
    fn of(spectra: &'a Spectra, view: &View<'a>, u: usize) -> Self {
        let unit: &'a Unit = &spectra.units[u];
        if let Some(name) = unit.name() {
            return JsonUnit {
                file: None,
                line: None,
                end_line: None,
                function: None,
                name: Some(name),
            };
        }
        let function = view.function_names.and_then(|names| names.get(u)).map(String::as_str);
        JsonUnit {
            file: Some(&unit.file),
            line: Some(unit.line),
            end_line: function.and_then(|_| spectra.functions.get(u)).map(|f| f.end),
            function,
            name: None,
        }
    }
}

#[derive(Serialize)]
struct JsonEntry<'a> {
    /// The entry's first unit.
    #[serde(flatten)]
    first: JsonUnit<'a>,
    /// Every unit of the group, when it has more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    members: Vec<JsonUnit<'a>>,
    /// `null` when the measure could not score the entry (CP: no block maps to its lines).
    score: Option<f64>,
    /// Set (with `score: null`) on entries the measure could not score: they rank after
    /// every scored entry.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    unscored: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    log10_probability: Option<f64>,
    rank: f64,
    line_rank: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    certain: bool,
    /// Set on entries a stack-first ranking put first because a failing test panicked on the
    /// line's own operation; `score` is the base measure's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    panicked: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_hitting_time: Option<f64>,
    ef: u32,
    ep: u32,
    nf: u32,
    np: u32,
}

/// The JSON report (pretty-printed, stable key order).
pub fn json<'a>(report: &'a Report, view: &View<'a>) -> String {
    let spectra = report.spectra;
    let json = JsonReport {
        schema: SCHEMA,
        workspace_root: &spectra.workspace_root,
        summary: &report.summary,
        core_tests: report
            .core_tests
            .iter()
            .map(|&t| test_label(&spectra.tests[t]))
            .collect(),
        conventions: Conventions::of(&view.opts),
        diff_base: view.diff_base,
        tests: spectra.tests.iter().map(JsonTest::of).collect(),
        changed_since_passed: report.since_passed.as_ref().map(|s| JsonSincePassed::of(spectra, s)),
        rankings: report
            .rankings
            .iter()
            .map(|r| JsonRanking {
                measure: r.measure.name,
                formula: r.measure.formula,
                changed_in_top: view.changed_in_top(r),
                ht_order: r.ht.as_ref(),
                cfg: r.cp.as_ref().map(JsonCfg::of),
                units: r.entries.iter().map(|x| json_entry(spectra, view, x)).collect(),
                functions: json_functions(spectra, view, r),
            })
            .collect(),
        mutation: view.mutation,
    };
    let mut s = serde_json::to_string_pretty(&json).expect("report serialises");
    s.push('\n');
    s
}

impl<'a> JsonTest<'a> {
    fn of(t: &'a crate::spectra::TestRecord) -> Self {
        JsonTest {
            binary: &t.binary,
            name: &t.name,
            outcome: t.outcome.as_str(),
            signal: t.signal,
            message: t.message.as_deref(),
            duration_ms: t.duration_ms,
            stack: &t.stack,
            flaky: t.flaky,
            passed_alone: t.passed_alone,
            reused: t.reused,
            attempts: &t.attempts,
        }
    }
}

/// The functions of `r` when the report reads rankings function by function.
fn json_functions<'a>(spectra: &'a Spectra, view: &View<'a>, r: &super::model::Ranking) -> Vec<JsonFunction<'a>> {
    let Some((blocks, names)) = view.functions(r) else {
        return Vec::new();
    };
    blocks
        .iter()
        .map(|b| {
            let lead = &spectra.units[b.entries[0].1[0]];
            let (name, file, line, end_line) = match b.function {
                Some(f) => {
                    let span = &spectra.functions[f as usize];
                    let name = names.get(f as usize).map(String::as_str);
                    (name, span.file.as_str(), span.start, span.end)
                }
                None => (None, lead.file.as_str(), lead.line, lead.line),
            };
            JsonFunction {
                name,
                file,
                line,
                end_line,
                rank: b.rank,
                tied: b.tied,
                entries: b
                    .entries
                    .iter()
                    .map(|(e, lines)| JsonFunctionEntry {
                        unit: *e,
                        lines: lines.iter().map(|&u| spectra.units[u].line).collect(),
                    })
                    .collect(),
            }
        })
        .collect()
}

fn json_entry<'a>(spectra: &'a Spectra, view: &View<'a>, x: &Entry) -> JsonEntry<'a> {
    // With `--tie-break evidence`, the entry's best-evidence line leads and members follow
    // in evidence order; otherwise code order.
    let units = &x.lines;
    let c = x.counts;
    JsonEntry {
        first: JsonUnit::of(spectra, view, units[0]),
        members: if units.len() > 1 {
            units.iter().map(|&u| JsonUnit::of(spectra, view, u)).collect()
        } else {
            Vec::new()
        },
        score: x.shown_score(),
        unscored: x.unscored,
        log10_probability: x.log10,
        rank: x.rank,
        line_rank: x.line_rank,
        certain: x.certain,
        panicked: x.panicked,
        changed: x.changed(),
        expected_hitting_time: x.expected_time,
        ef: c.ef as u32,
        ep: c.ep as u32,
        nf: c.nf as u32,
        np: c.np as u32,
    }
}

/// The lines a reader of one JSON ranking (`rankings[i]`) sees first, in order: with functions
/// first, each function's first entry's first line (as the human report shows it); otherwise
/// the units in rank order. What the tests and the corpus benchmark compare the other formats
/// with.
pub fn shown_in_json(ranking: &serde_json::Value) -> Vec<(String, u32)> {
    let line = |v: &serde_json::Value| v.as_u64().unwrap_or(0) as u32;
    match ranking["functions"].as_array() {
        Some(functions) => functions
            .iter()
            .filter_map(|f| {
                let first = f["entries"].as_array()?.first()?;
                Some((
                    f["file"].as_str().unwrap_or_default().to_string(),
                    line(&first["lines"][0]),
                ))
            })
            .collect(),
        None => ranking["units"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|u| (u["file"].as_str().unwrap_or_default().to_string(), line(&u["line"])))
            .collect(),
    }
}
