//! Renders rankings: the human report (failing tests, then the top suspects with their source
//! lines, grouped by file) and the `cargo-sfl/v1` JSON contract.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::measures::Measure;
use crate::rank::Ranked;
use crate::spectra::{Outcome, Spectra};

/// Schema tag of the JSON report.
pub const SCHEMA: &str = "cargo-sfl/v1";

/// One measure's ranking.
pub struct Ranking<'a> {
    pub measure: &'a Measure,
    pub units: Vec<Ranked>,
}

#[derive(Serialize, Debug, Default, PartialEq)]
pub struct Summary {
    pub tests: usize,
    pub passed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub crashed: usize,
    pub ignored: usize,
    /// Lines the coverage map knows (executable lines of the workspace's code).
    pub units: usize,
    /// Lines at least one test ran.
    pub covered_units: usize,
    /// Lines at least one failing test ran (the ranked lines).
    pub failing_units: usize,
    pub files: usize,
}

impl Summary {
    pub fn of(s: &Spectra) -> Self {
        let count = |o: Outcome| s.tests.iter().filter(|t| t.outcome == o).count();
        let fail = s.failing_mask();
        let files: std::collections::HashSet<&str> = s.units.iter().map(|u| u.file.as_str()).collect();
        Summary {
            tests: s.tests.len(),
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            timed_out: count(Outcome::TimedOut),
            crashed: count(Outcome::Crashed),
            ignored: count(Outcome::Ignored),
            units: s.units.len(),
            covered_units: s.coverage.iter().filter(|c| !c.is_empty()).count(),
            failing_units: s.coverage.iter().filter(|c| c.count_and(&fail) > 0).count(),
            files: files.len(),
        }
    }

    pub fn failing(&self) -> usize {
        self.failed + self.timed_out + self.crashed
    }

    pub fn ran(&self) -> usize {
        self.tests - self.ignored
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    workspace_root: &'a str,
    summary: Summary,
    conventions: Conventions,
    tests: Vec<JsonTest<'a>>,
    rankings: Vec<JsonRanking<'a>>,
}

#[derive(Serialize)]
struct Conventions {
    failing: &'static str,
    rank: &'static str,
    division_by_zero: &'static str,
    ties_displayed: &'static str,
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
}

#[derive(Serialize)]
struct JsonRanking<'a> {
    measure: &'static str,
    formula: &'static str,
    units: Vec<JsonUnit<'a>>,
}

#[derive(Serialize)]
struct JsonUnit<'a> {
    file: &'a str,
    line: u32,
    score: f64,
    rank: f64,
    ef: u32,
    ep: u32,
    nf: u32,
    np: u32,
}

/// The JSON report (pretty-printed, stable key order).
pub fn json(spectra: &Spectra, rankings: &[Ranking]) -> String {
    let report = JsonReport {
        schema: SCHEMA,
        workspace_root: &spectra.workspace_root,
        summary: Summary::of(spectra),
        conventions: Conventions {
            failing: "failed, timed-out and crashed tests form the failing set; ignored tests are not used",
            rank: "mid-rank: units scoring strictly higher, plus (tied units + 1) / 2",
            division_by_zero: "0/0 = 0; x/0 = ±f64::MAX",
            ties_displayed: "in code order (file, line)",
        },
        tests: spectra
            .tests
            .iter()
            .map(|t| JsonTest {
                binary: &t.binary,
                name: &t.name,
                outcome: t.outcome.as_str(),
                signal: t.signal,
                message: t.message.as_deref(),
                duration_ms: t.duration_ms,
            })
            .collect(),
        rankings: rankings
            .iter()
            .map(|r| JsonRanking {
                measure: r.measure.name,
                formula: r.measure.formula,
                units: r
                    .units
                    .iter()
                    .map(|x| {
                        let u = &spectra.units[x.unit];
                        let c = x.counts;
                        JsonUnit {
                            file: &u.file,
                            line: u.line,
                            score: x.score,
                            rank: x.rank,
                            ef: c.ef as u32,
                            ep: c.ep as u32,
                            nf: c.nf as u32,
                            np: c.np as u32,
                        }
                    })
                    .collect(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&report).expect("report serialises");
    s.push('\n');
    s
}

/// Reads source lines on demand (files relative to the workspace root).
struct Sources<'a> {
    root: &'a Path,
    files: HashMap<String, Option<Vec<String>>>,
}

impl Sources<'_> {
    fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let root = self.root;
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(root.join(file))
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get(line.checked_sub(1)? as usize).map(String::as_str)
    }
}

fn fmt_score(s: f64) -> String {
    if s.abs() == f64::MAX {
        if s > 0.0 { "max".into() } else { "-max".into() }
    } else {
        format!("{s:.4}")
    }
}

fn fmt_rank(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// The failing tests with their messages.
pub fn failing_tests(spectra: &Spectra) -> String {
    let mut out = String::new();
    let failing: Vec<_> = spectra.tests.iter().filter(|t| t.outcome.is_failing()).collect();
    if failing.is_empty() {
        return out;
    }
    let _ = writeln!(out, "Failing tests ({}):", failing.len());
    for t in failing {
        let _ = writeln!(
            out,
            "  {:<9} {} {}",
            t.outcome.as_str().to_uppercase(),
            t.binary,
            t.name
        );
        if let Some(m) = &t.message {
            for l in m.lines() {
                let _ = writeln!(out, "            {l}");
            }
        }
    }
    out
}

/// The human report: summary, failing tests, then each measure's top-N lines by file.
pub fn human(spectra: &Spectra, rankings: &[Ranking], top: usize) -> String {
    let sum = Summary::of(spectra);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} tests: {} passed, {} failed, {} timed out, {} crashed, {} ignored",
        sum.tests, sum.passed, sum.failed, sum.timed_out, sum.crashed, sum.ignored
    );
    let _ = writeln!(
        out,
        "{} lines in {} files, {} run by some test, {} by a failing test\n",
        sum.units, sum.files, sum.covered_units, sum.failing_units
    );
    out.push_str(&failing_tests(spectra));
    let mut sources = Sources {
        root: Path::new(&spectra.workspace_root),
        files: HashMap::new(),
    };
    for r in rankings {
        let shown = &r.units[..top.min(r.units.len())];
        let _ = writeln!(
            out,
            "\nMost suspicious lines by {} ({}), top {} of {}:",
            r.measure.name,
            r.measure.formula,
            shown.len(),
            r.units.len()
        );
        // Files in the order of their best-ranked line; lines in rank order within a file.
        let mut files: Vec<&str> = Vec::new();
        for x in shown {
            let f = spectra.units[x.unit].file.as_str();
            if !files.contains(&f) {
                files.push(f);
            }
        }
        for f in files {
            let _ = writeln!(out, "  {f}");
            for x in shown.iter().filter(|x| spectra.units[x.unit].file == f) {
                let u = &spectra.units[x.unit];
                let tie = if x.tied > 1 {
                    format!("={}", x.tied)
                } else {
                    String::new()
                };
                let src = sources.line(&u.file, u.line).unwrap_or("").trim();
                let _ = writeln!(
                    out,
                    "    rank {:>5} {:<4} score {:>8}  ef {:>3} ep {:>3}  {:>5} | {}",
                    fmt_rank(x.rank),
                    tie,
                    fmt_score(x.score),
                    x.counts.ef,
                    x.counts.ep,
                    u.line,
                    src
                );
            }
        }
        if let Some(last) = shown.last() {
            let more_tied = r.units[shown.len()..].iter().filter(|x| x.score == last.score).count();
            if more_tied > 0 {
                let _ = writeln!(
                    out,
                    "  … and {more_tied} more lines tied at rank {}",
                    fmt_rank(last.rank)
                );
            }
        }
    }
    if rankings.len() == 1 && rankings[0].units.iter().any(|x| x.tied > 1) {
        let _ = writeln!(out, "\n(=N after a rank: N lines share that score and that mid-rank.)");
    }
    out
}

/// The report when no test failed: a coverage summary.
pub fn no_failures(spectra: &Spectra) -> String {
    let sum = Summary::of(spectra);
    format!(
        "No failing tests: all {} tests that ran passed ({} ignored); nothing to localise.\nCoverage: {} of {} lines in {} files ran ({:.1}%).\n",
        sum.ran(),
        sum.ignored,
        sum.covered_units,
        sum.units,
        sum.files,
        if sum.units == 0 {
            0.0
        } else {
            100.0 * sum.covered_units as f64 / sum.units as f64
        }
    )
}
