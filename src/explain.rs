//! `cargo sfl explain FILE:LINE`: why a line ranks where it does. Its entry and every line tied
//! with it, its score and rank under a few measures, which tests ran it (failing and passing)
//! and which did not, the failing tests' backtrace frames through it, the evidence that ordered
//! it inside its entry, and, for an entry of several lines, what no existing test tells apart
//! and which passing tests come closest to doing so (what a new test should run, and not run).

use std::fmt::Write as _;

use serde::Serialize;

use crate::evidence::LineKind;
use crate::rank::Analyses;
use crate::rank::{Ranking, rank};
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

/// One feature's part in the line's combined score ([`crate::combined`]).
#[derive(Serialize, Debug)]
pub struct Contribution {
    pub feature: &'static str,
    pub value: f64,
    pub weight: f64,
    /// `value × weight`.
    pub contribution: f64,
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
}

/// Explains `file:line` of `ranked` (the matrix as reports rank it: test code left out), whose
/// `analyses` rank by `measures`; `whole` is the saved matrix (to say why a line is not ranked).
pub fn explain(
    whole: &Spectra,
    ranked: &Spectra,
    analyses: &Analyses,
    rankings: &[Ranking],
    file: &str,
    line: u32,
) -> Explanation {
    let mut out = Explanation {
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
    };
    let Some(&u) = ranked.unit_index().get(&(file, line)) else {
        out.not_ranked = Some(match whole.unit_index().get(&(file, line)) {
            Some(_) => "it is test code (a test function, a `#[cfg(test)]` item, a file of tests): left out of \
                        every ranking unless --include-test-code"
                .into(),
            None => format!(
                "no test binary's coverage map has {file}:{line} (a blank line, a comment, code outside the \
                 workspace, or code no test binary links)"
            ),
        });
        return out;
    };
    let label = |t: usize| crate::report::test_label(&ranked.tests[t]);
    let (fail, pass) = (ranked.failing_mask(), ranked.passing_mask());
    let col = &ranked.coverage[u];
    for t in 0..ranked.tests.len() {
        let list = match (fail.contains(t), pass.contains(t), col.contains(t)) {
            (true, _, true) => &mut out.tests.failing_ran,
            (true, _, false) => &mut out.tests.failing_not,
            (_, true, true) => &mut out.tests.passing_ran,
            (_, true, false) => &mut out.tests.passing_not,
            _ => continue,
        };
        list.push(label(t));
    }
    (out.ef, out.ep) = (out.tests.failing_ran.len(), out.tests.passing_ran.len());
    (out.nf, out.np) = (out.tests.failing_not.len(), out.tests.passing_not.len());
    out.frames = frames(ranked, file, line);
    let base = analyses.base();
    let Some(g) = base.groups.iter().position(|g| g.units.contains(&u)) else {
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
    let ordered = base.ordered_units(g);
    out.entry = ordered.iter().map(|&v| place(v)).collect();
    for r in rankings {
        let ra = r.analysis;
        let Some(x) = r.entries.iter().find(|x| ra.groups[x.group].units.contains(&u)) else {
            continue;
        };
        out.measures.push(MeasureRank {
            measure: r.measure.name,
            score: x.shown_score(),
            shown: crate::report::fmt_score(r.measure, x),
            rank: x.rank,
            entries: r.entries.len(),
            line_rank: x.line_rank,
            tied: x.tied,
        });
    }
    if let Some(t) = base.tie(u) {
        out.evidence = Some(Evidence {
            position: ordered.iter().position(|&v| v == u).map_or(0, |p| p + 1),
            stack: t.stack,
            near_panic: t.near,
            structural: t.kind == LineKind::Structural,
            function_prior: t.prior,
            operates: t.operates,
        });
    }
    if rankings.iter().any(|r| r.measure.is_combined()) {
        out.combined = contributions(base, u);
    }
    if ordered.len() > 1 {
        out.separation = Some(separation(ranked, &ordered, &label, &place));
    }
    out
}

/// Unit `u`'s features under the committed weights, largest part of its score first (features
/// that add nothing left out).
fn contributions(base: &crate::analysis::Analysis, u: usize) -> Vec<Contribution> {
    let f = crate::combined::features(base);
    let w = crate::combined::Weights::committed();
    let Some(i) = f.units.iter().position(|&v| v == u) else {
        return Vec::new();
    };
    let mut out: Vec<Contribution> = crate::combined::FEATURES
        .iter()
        .zip(f.rows[i])
        .zip(&w.weights)
        .map(|((feature, value), weight)| Contribution {
            feature,
            value,
            weight: *weight,
            contribution: value * weight,
        })
        .filter(|c| c.contribution != 0.0)
        .collect();
    out.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
    out
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
                    test: crate::report::test_label(t),
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
            "every test runs all {n} lines or none of them; {split}: {} runs them all ({} of {} lines of \
             their functions), and a variant of it that skips part of them would",
            c.test, c.runs, c.of
        ),
        Some(c) => format!(
            "every test runs all {n} lines or none of them; {split}: {} comes closest, running {} of {} \
             lines of their functions but none of these",
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
    if !e.entry.is_empty() {
        let places: Vec<String> = e.entry.iter().map(|p| format!("{}:{}", p.file, p.line)).collect();
        let _ = writeln!(
            out,
            "  entry: {} line{} run exactly alike: {}",
            places.len(),
            if places.len() == 1 { "" } else { "s" },
            shorten(&places)
        );
    }
    for m in &e.measures {
        let score = &m.shown;
        let tie = if m.tied > 1 {
            format!(" (tied with {} more)", m.tied - 1)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {:<14} score {score:>8}  rank {} of {}{tie}, line rank {}",
            m.measure,
            m.rank,
            crate::ui::counted(m.entries, "entry", "entries"),
            m.line_rank
        );
    }
    let _ = writeln!(out, "  ef {} ep {} nf {} np {}", e.ef, e.ep, e.nf, e.np);
    for (what, list) in [
        ("failing tests that ran it", &e.tests.failing_ran),
        ("passing tests that ran it", &e.tests.passing_ran),
        ("failing tests that did not", &e.tests.failing_not),
        ("passing tests that did not", &e.tests.passing_not),
    ] {
        if !list.is_empty() {
            let _ = writeln!(out, "  {what} ({}): {}", list.len(), shorten(list));
        }
    }
    for f in &e.frames {
        let _ = writeln!(
            out,
            "  on the backtrace of {} (depth {}, in {})",
            f.test, f.depth, f.function
        );
    }
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

/// A list of names cut after [`SHOWN`].
fn shorten(list: &[String]) -> String {
    let shown = list.iter().take(SHOWN).cloned().collect::<Vec<_>>().join(", ");
    match list.len() {
        n if n > SHOWN => format!("{shown} and {} more", n - SHOWN),
        _ => shown,
    }
}

/// The explanation as `cargo-sfl-explain/v1` JSON.
pub fn json(e: &Explanation) -> String {
    let mut s = serde_json::to_string_pretty(e).expect("an explanation serialises");
    s.push('\n');
    s
}

/// Ranks `analyses` by each of `measures` (the explanation's scores).
pub fn rankings<'m>(
    analyses: &'m Analyses<'m>,
    measures: &[&'m crate::measures::Measure],
    opts: &crate::analysis::Options,
) -> Vec<Ranking<'m>> {
    measures.iter().map(|&m| rank(analyses.of(m), m, opts)).collect()
}

/// `FILE:LINE` as given on the command line.
pub fn parse_location(s: &str) -> Result<(String, u32), String> {
    let (file, line) = s.rsplit_once(':').ok_or_else(|| format!("{s:?} is not FILE:LINE"))?;
    let line: u32 = line
        .parse()
        .map_err(|_| format!("{line:?} in {s:?} is not a line number"))?;
    if file.is_empty() || line == 0 {
        return Err(format!("{s:?} is not FILE:LINE"));
    }
    Ok((file.trim_start_matches("./").replace('\\', "/"), line))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::TieBreak;

    #[test]
    fn locations_are_file_colon_line() {
        assert_eq!(parse_location("src/lib.rs:16"), Ok(("src/lib.rs".into(), 16)));
        assert_eq!(parse_location("./src/a:b.rs:3"), Ok(("src/a:b.rs".into(), 3)));
        assert!(parse_location("src/lib.rs").is_err());
        assert!(parse_location("src/lib.rs:0").is_err());
        assert!(parse_location(":4").is_err());
    }

    /// Doric's minmax: unit 2 is the fault, run by the three failing tests only.
    #[test]
    fn the_tests_that_ran_a_line_and_its_entry() {
        let s = crate::spectra::tests::doric_minmax();
        let measures = [crate::measures::find("ochiai").unwrap()];
        let analyses = Analyses::prepared(&s, None, true, &measures, TieBreak::Code);
        let r = rankings(&analyses, &measures, &Default::default());
        let fault = &s.units[2];
        let e = explain(&s, &s, &analyses, &r, &fault.file, fault.line);
        assert_eq!(e.not_ranked, None, "{e:?}");
        assert_eq!((e.ef, e.ep, e.nf, e.np), (3, 0, 0, 2), "{e:?}");
        assert_eq!(e.measures[0].rank, 1.0);
        assert!(e.entry.contains(&Place {
            file: fault.file.clone(),
            line: fault.line
        }));
        let unknown = explain(&s, &s, &analyses, &r, "src/lib.rs", 999);
        assert!(unknown.not_ranked.is_some_and(|w| w.contains("no test binary")));
    }
}
