//! `cargo sfl explain FILE:LINE`: why a line ranks where it does. Its entry and every line tied
//! with it, its score and rank under a few measures, which tests ran it (failing and passing)
//! and which did not, the failing tests' backtrace frames through it, the evidence that ordered
//! it inside its entry, and, for an entry of several lines, what no existing test tells apart
//! and which passing tests come closest to doing so (what a new test should run, and not run).

use std::fmt::Write as _;

use serde::Serialize;

use crate::evidence::LineKind;
pub use crate::report::model::Contribution;
use crate::report::model::{Group, Report};
use crate::report::text::{fmt_score, test_label};
use crate::spectra::Spectra;

/// Schema tag of the JSON explanation.
pub const SCHEMA: &str = "cargo-sfl-explain/v1";

/// How many test names each list shows in the human report (the JSON has them all).
const SHOWN: usize = 8;

/// How many passing tests are named as the closest to separating an entry's lines.
const CLOSEST: usize = 3;

/// A line, as the explanation names it.
#[derive(Serialize, Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub file: String,
    pub line: u32,
}

/// The line's score and rank under one measure.
#[derive(Serialize, Debug)]
pub struct MeasureRank {
    pub measure: &'static str,
    pub score: Option<f64>,
    /// The score as the reports print it (`max` for the largest, a probability for Doric's
    /// measures).
    pub shown: String,
    /// The entry's mid-rank, and how many entries the ranking has.
    pub rank: f64,
    pub entries: usize,
    /// The line's own mid-rank among lines (what EXAM counts).
    pub line_rank: f64,
    /// Entries tied with this one.
    pub tied: usize,
    /// Where the line's function ranks among functions (each where its best line ranks, as
    /// the default report lists them); `None` for a line outside every function.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionRank>,
}

/// A function's place in a ranking read function by function.
#[derive(Serialize, Debug)]
pub struct FunctionRank {
    /// `None` when the spectra were saved without function names.
    pub name: Option<String>,
    pub rank: f64,
    pub functions: usize,
    pub tied: usize,
}

/// The tests, by whether they failed and whether they ran the line.
#[derive(Serialize, Debug, Default)]
pub struct Tests {
    pub failing_ran: Vec<String>,
    pub passing_ran: Vec<String>,
    pub failing_not: Vec<String>,
    pub passing_not: Vec<String>,
}

/// A failing test's backtrace frame on the line.
#[derive(Serialize, Debug)]
pub struct Frame {
    pub test: String,
    pub function: String,
    /// 0: the innermost frame of the test's backtrace in ranked code.
    pub depth: usize,
}

/// What ordered the line within its entry (`--tie-break evidence`).
#[derive(Serialize, Debug)]
pub struct Evidence {
    /// Its place among the entry's lines (1: the line the entry is shown at).
    pub position: usize,
    pub stack: f64,
    pub near_panic: f64,
    pub structural: bool,
    pub function_prior: f64,
    pub operates: bool,
}

/// A passing test and how near it comes to running only part of the entry.
#[derive(Serialize, Debug)]
pub struct Closest {
    pub test: String,
    /// Lines of the entry's functions it runs, of how many.
    pub runs: usize,
    pub of: usize,
    /// It runs the entry (all of its lines); else none of them.
    pub runs_entry: bool,
}

/// For an entry of several lines: what no test tells apart, and the nearest candidates.
#[derive(Serialize, Debug)]
pub struct Separation {
    /// The lines every existing test runs all or none of.
    pub indistinguishable: Vec<Place>,
    /// Passing tests that run the entry's functions but not the entry, most of the functions
    /// first: a variation of one that runs the line would tell the lines apart.
    pub closest_passing: Vec<Closest>,
    pub advice: String,
}

/// Everything `explain` says about one line.
#[derive(Serialize, Debug)]
pub struct Explanation {
    pub schema: &'static str,
    pub file: String,
    pub line: u32,
    /// Why the line is not ranked, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_ranked: Option<String>,
    /// The line's entry, led by the line the reports show it at.
    pub entry: Vec<Place>,
    pub measures: Vec<MeasureRank>,
    pub ef: usize,
    pub ep: usize,
    pub nf: usize,
    pub np: usize,
    pub tests: Tests,
    pub frames: Vec<Frame>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub separation: Option<Separation>,
    /// With the combined ranking among the measures: what each feature added to its score,
    /// largest part first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub combined: Vec<Contribution>,
    /// The line changed since the workspace's last green run, and these tests, which passed
    /// then and fail now, run it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_since_passed: Vec<String>,
    /// The commit that last changed the line (`git blame`; none outside git).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_changed: Option<LastChanged>,
}

/// When a line last changed, as `git blame` says.
#[derive(Serialize, Debug, Clone, PartialEq, Eq)]
pub struct LastChanged {
    /// Its abbreviated hash; `None`: the line is not committed yet.
    pub commit: Option<String>,
    /// Committer time, seconds since the epoch (for an uncommitted line, when it was read).
    pub time: i64,
    pub summary: String,
    /// As the human output says it (`last changed 3 days ago in 1a2b3c4 "subject"`).
    pub said: String,
}

/// Explains `file:line` of `report` (the matrix as reports rank it: test code left out, the
/// rankings of the measures explained); `whole` is the saved matrix (to say why a line is not
/// ranked), `combined` the line's parts of its combined score when the combined ranking is
/// among the measures.
pub fn explain(
    whole: &Spectra,
    report: &Report,
    combined: Option<Vec<Contribution>>,
    file: &str,
    line: u32,
) -> Explanation {
    let mut out = Explanation::empty(file, line);
    let ranked = report.spectra;
    let Some(&u) = ranked.unit_index().get(&(file, line)) else {
        out.not_ranked = Some(not_in_the_matrix(whole, file, line));
        return out;
    };
    out.tests = tests(ranked, u);
    if let Some(since) = &report.since_passed
        && let Some((_, tests)) = since.lines.iter().find(|(v, _)| *v == u)
    {
        out.changed_since_passed = tests.iter().map(|&t| test_label(&ranked.tests[t])).collect();
    }
    (out.ef, out.ep) = (out.tests.failing_ran.len(), out.tests.passing_ran.len());
    (out.nf, out.np) = (out.tests.failing_not.len(), out.tests.passing_not.len());
    out.frames = frames(ranked, file, line);
    let Some(group) = report.groups.iter().find(|g| g.lines.contains(&u)) else {
        out.not_ranked = Some(if out.ef == 0 {
            "no failing test ran it: only lines a failing test ran are ranked".into()
        } else {
            "it is not ranked at this granularity".into()
        });
        return out;
    };
    let place = |u: usize| Place {
        file: ranked.units[u].file.clone(),
        line: ranked.units[u].line,
    };
    out.entry = group.lines.iter().map(|&v| place(v)).collect();
    out.measures = measures(report, u);
    out.evidence = evidence(group, u);
    if let Some(c) = combined {
        out.combined = c;
    }
    if group.lines.len() > 1 {
        let label = |t: usize| test_label(&ranked.tests[t]);
        out.separation = Some(separation(ranked, &group.lines, &label, &place));
    }
    out
}

impl Explanation {
    /// The explanation of `file:line` before anything is known about it.
    fn empty(file: &str, line: u32) -> Self {
        Explanation {
            schema: SCHEMA,
            file: file.to_string(),
            line,
            not_ranked: None,
            entry: Vec::new(),
            measures: Vec::new(),
            ef: 0,
            ep: 0,
            nf: 0,
            np: 0,
            tests: Tests::default(),
            frames: Vec::new(),
            evidence: None,
            separation: None,
            combined: Vec::new(),
            changed_since_passed: Vec::new(),
            last_changed: None,
        }
    }
}

/// Why `file:line`, absent from the ranked matrix, is: test code (in the saved matrix `whole`),
/// or no line of any coverage map.
fn not_in_the_matrix(whole: &Spectra, file: &str, line: u32) -> String {
    match whole.unit_index().get(&(file, line)) {
        Some(_) => "it is test code (a test function, a `#[cfg(test)]` item, a file of tests): left out of \
                    every ranking unless --include-test-code"
            .into(),
        None => format!(
            "no test binary's coverage map has {file}:{line} (a blank line, a comment, code outside the \
             workspace, code no test binary links, code that runs while compiling: a `const`'s value, \
             a proc macro; or code a macro generates that the coverage map leaves out, as it leaves out \
             pin_project!'s `PinnedDrop` body)"
        ),
    }
}

/// The tests of `s`, by whether they failed and whether they ran unit `u`.
fn tests(s: &Spectra, u: usize) -> Tests {
    let mut out = Tests::default();
    let (fail, pass) = (s.failing_mask(), s.passing_mask());
    let col = &s.coverage[u];
    for t in 0..s.tests.len() {
        let list = match (fail.contains(t), pass.contains(t), col.contains(t)) {
            (true, _, true) => &mut out.failing_ran,
            (true, _, false) => &mut out.failing_not,
            (_, true, true) => &mut out.passing_ran,
            (_, true, false) => &mut out.passing_not,
            _ => continue,
        };
        list.push(test_label(&s.tests[t]));
    }
    out
}

/// Unit `u`'s score and rank under each ranking that ranks it.
fn measures(report: &Report, u: usize) -> Vec<MeasureRank> {
    report
        .rankings
        .iter()
        .filter_map(|r| {
            let x = r.entries.iter().find(|x| x.lines.contains(&u))?;
            Some(MeasureRank {
                measure: r.measure.name,
                score: x.shown_score(),
                shown: fmt_score(r.measure, x),
                rank: x.rank,
                entries: r.entries.len(),
                line_rank: x.line_rank,
                tied: x.tied,
                function: function_rank(report, r, u),
            })
        })
        .collect()
}

/// Where unit `u`'s function ranks in `r` read function by function.
fn function_rank(report: &Report, r: &crate::report::model::Ranking, u: usize) -> Option<FunctionRank> {
    let s = report.spectra;
    let b = r
        .functions
        .iter()
        .find(|b| b.entries.iter().any(|(_, l)| l.contains(&u)))?;
    let f = b.function?;
    Some(FunctionRank {
        name: s.function_name(&s.functions[f as usize]).map(str::to_string),
        rank: b.rank,
        functions: r.functions.len(),
        tied: b.tied,
    })
}

/// What placed unit `u` within its `group`, when lines are ordered by evidence.
fn evidence(group: &Group, u: usize) -> Option<Evidence> {
    let position = group.lines.iter().position(|&v| v == u)?;
    let t = group.evidence.as_ref()?[position];
    Some(Evidence {
        position: position + 1,
        stack: t.stack,
        near_panic: t.near,
        structural: t.kind == LineKind::Structural,
        function_prior: t.prior,
        operates: t.operates,
    })
}

/// The failing tests' backtrace frames on `file:line`, with their depth among the test's
/// frames in ranked code.
fn frames(s: &Spectra, file: &str, line: u32) -> Vec<Frame> {
    let index = s.unit_index();
    let mut out = Vec::new();
    for t in s.tests.iter().filter(|t| t.outcome.is_failing()) {
        let ranked_frames = t
            .stack
            .iter()
            .filter(|f| index.contains_key(&(f.file.as_str(), f.line)));
        for (depth, f) in ranked_frames.enumerate() {
            if f.file == file && f.line == line {
                out.push(Frame {
                    test: test_label(t),
                    function: f.function.clone(),
                    depth,
                });
            }
        }
    }
    out
}

/// What tells the lines of one entry apart: nothing yet (every test runs all of them or none),
/// and the passing tests that get nearest, by how many lines of the entry's functions they run
/// without running the entry.
fn separation(
    s: &Spectra,
    entry: &[usize],
    label: &dyn Fn(usize) -> String,
    place: &dyn Fn(usize) -> Place,
) -> Separation {
    let functions: Vec<u32> = {
        let mut f: Vec<u32> = entry
            .iter()
            .filter_map(|&u| s.unit_function.get(u).copied().flatten())
            .collect();
        f.sort_unstable();
        f.dedup();
        f
    };
    let lines: Vec<usize> = (0..s.units.len())
        .filter(|&v| {
            s.unit_function
                .get(v)
                .copied()
                .flatten()
                .is_some_and(|f| functions.contains(&f))
        })
        .collect();
    let col = &s.coverage[entry[0]];
    let pass = s.passing_mask();
    let mut closest: Vec<Closest> = (0..s.tests.len())
        .filter(|&t| pass.contains(t))
        .map(|t| Closest {
            test: label(t),
            runs: lines.iter().filter(|&&v| s.coverage[v].contains(t)).count(),
            of: lines.len(),
            runs_entry: col.contains(t),
        })
        .filter(|c| c.runs > 0)
        .collect();
    // Nearest first: more of the functions run is nearer; at equal runs, a test that runs the
    // entry's code but not the entry (it needs one more branch taken) before one that runs it.
    closest.sort_by(|a, b| {
        b.runs
            .cmp(&a.runs)
            .then_with(|| a.runs_entry.cmp(&b.runs_entry))
            .then_with(|| a.test.cmp(&b.test))
    });
    closest.truncate(CLOSEST);
    let at = |u: usize| {
        let p = place(u);
        format!("{}:{}", p.file, p.line)
    };
    let split = format!(
        "a test that runs {} but not {} (or the other way round) would tell them apart",
        at(entry[0]),
        at(entry[1])
    );
    let n = entry.len();
    let advice = match closest.first() {
        Some(c) if c.runs_entry => format!(
            "every test runs all {n} lines or none of them; {split}. The passing test {} runs them all \
             ({} of {} lines of their functions): a copy of it with an input that skips some of them would tell them apart",
            c.test, c.runs, c.of
        ),
        Some(c) => format!(
            "every test runs all {n} lines or none of them; {split}. The passing test {} comes closest: \
             it runs {} of {} lines of their functions, but none of these",
            c.test, c.runs, c.of
        ),
        None => {
            format!("every test runs all {n} lines or none of them, and no passing test runs their functions; {split}")
        }
    };
    Separation {
        indistinguishable: entry.iter().map(|&u| place(u)).collect(),
        closest_passing: closest,
        advice,
    }
}

/// The explanation for a person.
pub fn human(e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}:{}", e.file, e.line);
    if let Some(why) = &e.not_ranked {
        let _ = writeln!(out, "  not ranked: {why}");
        if e.ef + e.ep + e.nf + e.np == 0 {
            return out;
        }
    }
    entry_and_scores(&mut out, e);
    if !e.changed_since_passed.is_empty() {
        let _ = writeln!(
            out,
            "  changed since the run they last passed in, and run by {} that passed then and fail now: {}",
            crate::ui::counted(e.changed_since_passed.len(), "test", "tests"),
            crate::ui::shortened(&e.changed_since_passed, SHOWN)
        );
    }
    if let Some(change) = &e.last_changed {
        let _ = writeln!(out, "  {}", change.said);
    }
    tests_and_frames(&mut out, e);
    within_entry(&mut out, e);
    if let Some(sep) = &e.separation {
        let _ = writeln!(out, "  to tell its entry's lines apart: {}", sep.advice);
        for c in &sep.closest_passing {
            let entry = if c.runs_entry {
                "this entry included"
            } else {
                "not this entry"
            };
            let _ = writeln!(
                out,
                "    {} runs {} of {} lines of their functions, {entry}",
                c.test, c.runs, c.of
            );
        }
    }
    out
}

/// The line's entry, and its score and rank under each measure.
fn entry_and_scores(out: &mut String, e: &Explanation) {
    if !e.entry.is_empty() {
        let places: Vec<String> = e.entry.iter().map(|p| format!("{}:{}", p.file, p.line)).collect();
        let _ = writeln!(
            out,
            "  entry: {} line{} run exactly alike: {}",
            places.len(),
            if places.len() == 1 { "" } else { "s" },
            crate::ui::shortened(&places, SHOWN)
        );
    }
    for m in &e.measures {
        let score = &m.shown;
        let tie = if m.tied > 1 {
            format!(" (tied with {} more)", m.tied - 1)
        } else {
            String::new()
        };
        let _ = write!(
            out,
            "  {:<14} score {score:>8}  rank {} of {}{tie}, line rank {}",
            m.measure,
            m.rank,
            crate::ui::counted(m.entries, "entry", "entries"),
            m.line_rank
        );
        if let Some(f) = &m.function {
            let tie = if f.tied > 1 {
                format!(" (tied with {} more)", f.tied - 1)
            } else {
                String::new()
            };
            let _ = write!(
                out,
                "; its function {}is #{} of {}{tie}",
                f.name.as_deref().map(|n| format!("{n} ")).unwrap_or_default(),
                f.rank,
                crate::ui::counted(f.functions, "function", "functions")
            );
        }
        out.push('\n');
    }
}

/// The counts, the tests that ran the line and did not, and the backtraces through it.
fn tests_and_frames(out: &mut String, e: &Explanation) {
    let _ = writeln!(out, "  ef {} ep {} nf {} np {}", e.ef, e.ep, e.nf, e.np);
    for (what, list) in [
        ("failing tests that ran it", &e.tests.failing_ran),
        ("passing tests that ran it", &e.tests.passing_ran),
        ("failing tests that did not", &e.tests.failing_not),
        ("passing tests that did not", &e.tests.passing_not),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "  {what} ({}): {}", list.len(), crate::ui::shortened(list, SHOWN));
        }
    }
    for f in &e.frames {
        let _ = writeln!(
            out,
            "  on the backtrace of {} (depth {}, in {})",
            f.test, f.depth, f.function
        );
    }
}

/// What placed the line within its entry, and the parts of its combined score.
fn within_entry(out: &mut String, e: &Explanation) {
    if let Some(ev) = &e.evidence {
        let _ = writeln!(
            out,
            "  within its entry: line {} of {} (backtraces {:.3}, near a panic {:.3}, {}, function prior {:.3}, {})",
            ev.position,
            e.entry.len(),
            ev.stack,
            ev.near_panic,
            if ev.structural { "structural" } else { "behavioural" },
            ev.function_prior,
            if ev.operates { "operates" } else { "no operator" }
        );
    }
    if !e.combined.is_empty() {
        let total: f64 = e.combined.iter().map(|c| c.contribution).sum();
        let parts: Vec<String> = e
            .combined
            .iter()
            .map(|c| {
                format!(
                    "{} {:.3} x {:.2} = {:+.3}",
                    c.feature, c.value, c.weight, c.contribution
                )
            })
            .collect();
        let _ = writeln!(out, "  combined score {total:.3}: {}", parts.join(", "));
    }
}

/// The explanation as `cargo-sfl-explain/v1` JSON.
pub fn json(e: &Explanation) -> String {
    let mut s = serde_json::to_string_pretty(e).expect("an explanation serialises");
    s.push('\n');
    s
}

/// A command-line `FILE:LINE` that is not one.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error("{0:?} is not FILE:LINE")]
    NotFileLine(String),
    #[error("{line:?} in {arg:?} is not a line number")]
    NotALineNumber { line: String, arg: String },
}

/// `FILE:LINE` as given on the command line.
pub fn parse_location(s: &str) -> Result<(String, u32), LocationError> {
    let not_file_line = || LocationError::NotFileLine(s.to_string());
    let (file, line) = s.rsplit_once(':').ok_or_else(not_file_line)?;
    let line: u32 = line.parse().map_err(|_| LocationError::NotALineNumber {
        line: line.to_string(),
        arg: s.to_string(),
    })?;
    if file.is_empty() || line == 0 {
        return Err(not_file_line());
    }
    Ok((file.trim_start_matches("./").replace('\\', "/"), line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::TieBreak;
    use crate::rank::Analyses;
    use crate::rank::rank;

    #[test]
    fn locations_are_file_colon_line() {
        assert_eq!(parse_location("src/lib.rs:16"), Ok(("src/lib.rs".into(), 16)));
        assert_eq!(parse_location("./src/a:b.rs:3"), Ok(("src/a:b.rs".into(), 3)));
        assert!(parse_location("src/lib.rs").is_err());
        assert!(parse_location("src/lib.rs:0").is_err());
        assert!(parse_location(":4").is_err());
    }

    /// Doric's minmax: unit 2 is the fault, run by the three failing tests only.
    /// A passing test that runs every line of the entry: the advice says what a copy of it
    /// would do, as a whole sentence (it ended at "would").
    #[test]
    fn the_advice_names_the_passing_test_that_runs_the_whole_entry() {
        let mut s = crate::spectra::tests::matrix(&["111-", "111+", "000+"]);
        s.set_functions(crate::spectra::tests::lib_functions(&[(1, 3)]));
        let place = |u: usize| Place {
            file: s.units[u].file.clone(),
            line: s.units[u].line,
        };
        let sep = separation(&s, &[0, 1, 2], &|t| s.tests[t].name.clone(), &place);
        assert_eq!(sep.closest_passing.len(), 1);
        assert!(
            sep.advice.ends_with("runs them all (3 of 3 lines of their functions): a copy of it with an input that skips some of them would tell them apart"),
            "{}",
            sep.advice
        );
    }

    #[test]
    fn the_tests_that_ran_a_line_and_its_entry() {
        let s = crate::spectra::tests::doric_minmax();
        let measures = [crate::measures::find("ochiai").unwrap()];
        let analyses = Analyses::prepared(&s, None, true, &measures, TieBreak::Code);
        let r: Vec<_> = measures
            .iter()
            .map(|&m| rank(analyses.of(m), m, &Default::default()))
            .collect();
        let report = crate::report::tests::report_of(analyses.base(), &r);
        let fault = &s.units[2];
        let e = explain(&s, &report, None, &fault.file, fault.line);
        assert_eq!(e.not_ranked, None, "{e:?}");
        assert_eq!((e.ef, e.ep, e.nf, e.np), (3, 0, 0, 2), "{e:?}");
        assert_eq!(e.measures[0].rank, 1.0);
        assert!(e.entry.contains(&Place {
            file: fault.file.clone(),
            line: fault.line
        }));
        let unknown = explain(&s, &report, None, "src/lib.rs", 999);
        assert!(unknown.not_ranked.is_some_and(|w| w.contains("no test binary")));
    }
}
