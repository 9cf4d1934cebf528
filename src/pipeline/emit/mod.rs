//! From spectra to a written report and an exit code: the matrix at the asked granularity
//! ([`prepare`]), `--diff-base`, a ranking per measure (HT_Rank order with `--order ht`:
//! [`rankings`]), `--mutate`, the report model, what the report shows of the checkout
//! ([`read`]), the report in its format, and `--fail-on`.

mod prepare;
mod rankings;
mod read;
pub(crate) use read::history;

use std::io::Write;
use std::path::Path;

use crate::config::{Granularity, ReportConfig};
use crate::error::{SflError, exit};
use crate::rank::Analyses;
use crate::report::model::Report;
use crate::report::{self, text::test_label};
use crate::spectra::{Outcome, Spectra};
use crate::ui;

pub(super) use prepare::{Prepared, at_granularity, refuse_edge_measures, require_edges};
use rankings::{rank_all, warn_cp};

/// With `--clusters`: says whether the failing tests looked independent, and which fell
/// together.
fn note_clusters(spectra: &Spectra) {
    let Some(c) = crate::clusters::failure_clusters(spectra) else {
        ui::note(
            "--clusters: the failing tests share lines that passing tests miss or backtrace lines; ranked together",
        );
        return;
    };
    let names = |tests: &[usize]| {
        let shown: Vec<String> = tests.iter().take(4).map(|&t| test_label(&spectra.tests[t])).collect();
        match tests.len() {
            n if n > 4 => format!("{} and {} more", shown.join(", "), n - 4),
            _ => shown.join(", "),
        }
    };
    let mut text = format!(
        "the failures look independent: {} clusters of failing tests share no line that passing tests miss and no \
         backtrace line, so each was ranked against the passing tests and the rankings interleaved",
        c.clusters.len()
    );
    for (i, tests) in c.clusters.iter().enumerate() {
        text.push_str(&format!("\n  cluster {}: {}", i + 1, names(tests)));
    }
    if !c.shared.is_empty() {
        text.push_str(&format!("\n  in every cluster: {}", names(&c.shared)));
    }
    ui::note(text);
}

/// Ranks and writes the report; returns the exit code.
pub fn emit(spectra: &Spectra, out: &ReportConfig) -> anyhow::Result<i32> {
    emit_with(spectra, out, None)
}

/// What `--mutate` runs: the mutation analysis of the asked-for lines.
pub type Mutator<'a> = dyn Fn(&[(String, u32)]) -> Result<crate::mutate::Mutation, SflError> + 'a;

/// [`emit`] with `--mutate`: the first `lines` lines of each ranking mutated and re-ordered
/// by `mutator` before the report is written. When the mutation analysis fails, the report
/// is the plain one, with a warning.
pub fn emit_mutated(spectra: &Spectra, out: &ReportConfig, lines: usize, mutator: &Mutator) -> anyhow::Result<i32> {
    emit_with(spectra, out, Some((lines, mutator)))
}

/// [`emit`]'s steps: the matrix prepared, the analyses, one ranking per measure (re-ordered by
/// `--mutate`), the report model built from them once, then the report written and the exit
/// code.
fn emit_with(spectra: &Spectra, out: &ReportConfig, mutate: Option<(usize, &Mutator)>) -> anyhow::Result<i32> {
    let whole = spectra;
    let mut converted = Default::default();
    let Prepared {
        spectra,
        lines,
        names: function_names,
        line_functions,
    } = at_granularity(spectra, out, &mut converted)?;
    require_edges(spectra, &out.measures)?;
    let analyses = Analyses::prepared(spectra, lines, out.options.group, &out.measures, out.tie_break);
    let mut report = Report::of(analyses.base()).with_since_green(since_green(whole));
    let changes = match &out.diff_base {
        Some(rev) => Some(
            crate::diff::changed_since(Path::new(&spectra.workspace_root), rev)
                .map_err(|e| SflError::DiffBase(e.to_string()))?,
        ),
        None => None,
    };
    let mut rankings = rank_all(&analyses, out, changes.as_ref());
    warn_cp(&rankings);
    let mutation = match mutate {
        Some((lines, mutator)) => mutated(&mut rankings, out, report.summary.failing(), lines, mutator),
        None => None,
    };
    for r in &rankings {
        report.add(r);
    }
    let view = report::View {
        mutation: mutation.as_ref(),
        opts: out.options.clone(),
        top: out.top,
        diff_base: out.diff_base.as_deref(),
        function_names: function_names.as_deref(),
        line_functions: line_functions.as_deref(),
    };
    write_report(out, &report, &view)?;
    Ok(exit_code(whole, out, &report))
}

/// What the run saw of the workspace, with what changed since the last green run when tests
/// fail that passed then.
fn since_green(whole: &Spectra) -> Option<&crate::spectra::Snapshot> {
    whole.snapshot.as_ref().filter(|s| s.since_green.is_some())
}

/// `--mutate`: the first `lines` lines of each ranking mutated, and the rankings re-ordered
/// by the mutants' scores; `None` when the mutation analysis does not run or fails.
fn mutated(
    rankings: &mut [crate::rank::Ranking],
    out: &ReportConfig,
    failing: usize,
    lines: usize,
    mutator: &Mutator,
) -> Option<crate::mutate::Mutation> {
    if out.granularity != Granularity::Line {
        ui::warn("--mutate re-orders lines: it is not run at --granularity function");
        return None;
    }
    if failing == 0 {
        return None;
    }
    match mutator(&crate::mutate::lines_to_mutate(rankings, lines)) {
        Ok(m) => {
            crate::mutate::reorder(rankings, &m);
            ui::status("Mutated", m.summary());
            Some(m)
        }
        Err(e) => {
            ui::warn(format!("--mutate failed, so the rankings are not re-ordered: {e}"));
            None
        }
    }
}

/// The exit code of a written report, after the notes on how it was ranked: no failing tests,
/// nothing to rank (and why), an entry at `--fail-on`'s threshold, or a report.
fn exit_code(whole: &Spectra, out: &ReportConfig, report: &Report) -> i32 {
    let summary = &report.summary;
    if out.options.clusters {
        note_clusters(report.spectra);
    }
    if summary.failing() > 0 && summary.failing() == summary.ranked() {
        ui::note("every test failed, so no passing test tells lines apart; rankings rest on failing coverage alone");
    }
    if summary.failing() == 0 {
        return exit::NO_FAILING_TESTS;
    }
    // Failing tests and not one entry: an empty ranking would read as "nothing suspicious".
    if summary.entries == 0 {
        ui::error(why_unranked(whole, out));
        return exit::UNLOCALISABLE;
    }
    match out.fail_on {
        Some(threshold) => fail_on(report, threshold),
        None => exit::REPORTED,
    }
}

/// `cargo sfl explain`: why `file:line` of `ranked` (the matrix as reports rank it) ranks
/// where it does under `cfg`'s measures; `whole` is the saved matrix.
pub(super) fn explanation(
    whole: &Spectra,
    ranked: &Spectra,
    cfg: &ReportConfig,
    file: &str,
    line: u32,
) -> crate::explain::Explanation {
    let analyses = Analyses::prepared(ranked, None, cfg.options.group, &cfg.measures, cfg.tie_break);
    let mut report = Report::of(analyses.base()).with_since_green(since_green(whole));
    for &m in &cfg.measures {
        report.add(&crate::rank::rank(analyses.of(m), m, &cfg.options));
    }
    let combined = cfg.measures.iter().any(|m| m.is_combined()).then(|| {
        ranked
            .unit_index()
            .get(&(file, line))
            .map_or_else(Vec::new, |&u| report::assemble::contributions(analyses.base(), u))
    });
    crate::explain::explain(whole, &report, combined, file, line)
}

/// Why a report with failing tests would rank nothing, in words and with what to do, judged
/// from the whole matrix (`spectra`, before timed-out tests and test code are left out): no
/// line of the workspace's code at all, none run by a failing test, or only test code.
fn why_unranked(spectra: &Spectra, out: &ReportConfig) -> String {
    if spectra.units.is_empty() {
        return "no test's coverage names a line of this workspace's code, so nothing can be ranked \
                (the warnings above say why: e.g. test binaries built from a copy of the workspace at \
                another path, or spectra from another workspace). Delete cargo sfl's target directory \
                (target/sfl by default) and run again"
            .into();
    }
    let counted = |o: Outcome| o.is_failing() || (out.count_timeouts && o == Outcome::TimedOut);
    let failing = spectra.mask(counted);
    let ran = spectra.coverage.iter().filter(|c| c.count_and(&failing) > 0).count();
    // Failing tests recorded without coverage (in no set of the spectra) say why in a warning
    // (a doctest run plainly, a doctest that did not build, a `compile_fail` doctest that
    // compiled).
    let uncovered: Vec<&str> = spectra
        .tests
        .iter()
        .filter(|r| r.uncovered && counted(r.outcome))
        .filter_map(|r| {
            r.warnings
                .iter()
                .find(|w| w.starts_with("no coverage"))
                .map(String::as_str)
        })
        .collect();
    if ran == 0 && !uncovered.is_empty() && failing.count_and(&failing) == 0 {
        return format!(
            "the failing tests have no coverage ({}), so nothing can be ranked: fix what they say and run again",
            uncovered[0]
                .trim_start_matches("no coverage: ")
                .trim_end_matches(", so it adds nothing to the ranking")
        );
    }
    let warned = spectra
        .tests
        .iter()
        .any(|r| counted(r.outcome) && !r.warnings.is_empty());
    if ran == 0 && !warned {
        return "the failing tests ran none of this workspace's code but their own (a doctest that \
                calls no function of the crate checks only the code in its block, which is not \
                ranked), so nothing can be ranked: the fault is in the tests themselves"
            .into();
    }
    if ran == 0 {
        return "no failing test ran a line of this workspace's code (did their processes die before \
                writing their profiles? the warnings above say which profiles could not be read), so \
                nothing can be ranked; run the failing tests with `cargo test` to see how they end"
            .into();
    }
    if out.include_test_code {
        return format!("none of the {ran} lines the failing tests ran can be ranked at this granularity");
    }
    format!(
        "the failing tests ran only test code ({ran} lines, left out of the ranking), so nothing \
         else can be ranked: the fault is in the test, or where no coverage shows (code in another \
         language, such as C a build script compiles; a build script; a proc macro or other code that \
         runs while compiling; a data file). Pass \
         --include-test-code to rank test code too"
    )
}

fn html_needs_a_dir() -> SflError {
    SflError::Usage("--format html needs --output DIR (the page is written there)".into())
}

/// Refuses, before anything is built or run, report settings that could not be written.
pub(super) fn check_output(out: &ReportConfig) -> Result<(), SflError> {
    match (out.format, &out.output) {
        (crate::config::Format::Html, None) => Err(html_needs_a_dir()),
        _ => Ok(()),
    }
}

/// `--fail-on`: the exit code, after saying which reported entries reached the threshold.
fn fail_on(report: &Report, threshold: f64) -> i32 {
    let hits = fail_on_hits(report, threshold);
    if hits.is_empty() {
        return exit::REPORTED;
    }
    ui::error(format!(
        "{} entr{} reached --fail-on {threshold}: {}",
        hits.len(),
        if hits.len() == 1 { "y" } else { "ies" },
        hits.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
    ));
    exit::SUSPICION
}

/// Every reported entry whose score reaches `threshold`, as "measure score at file:line".
fn fail_on_hits(report: &Report, threshold: f64) -> Vec<String> {
    report
        .rankings
        .iter()
        .flat_map(|r| {
            // At the line the reports show the entry at: functions first, its line in the first
            // function that holds it; else its lead (or changed) line.
            let mut at: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
            for b in &r.functions {
                for (e, us) in &b.entries {
                    at.entry(*e).or_insert(us[0]);
                }
            }
            r.entries
                .iter()
                .enumerate()
                .filter(|(_, x)| x.shown_score().is_some_and(|s| s >= threshold))
                .map(move |(e, x)| {
                    let u = &report.spectra.units[at.get(&e).copied().unwrap_or_else(|| x.shown_at())];
                    format!(
                        "{} {} at {}:{}",
                        r.measure.name,
                        report::text::fmt_score(r.measure, x),
                        u.file,
                        u.line
                    )
                })
        })
        .collect()
}

/// Renders the report in the asked-for format, with what it shows of the checkout, and
/// writes it: text to stdout or `-o FILE`, the HTML page into the `--output` directory.
fn write_report(out: &ReportConfig, report: &Report, view: &report::View) -> anyhow::Result<()> {
    let disk = read::disk(out.format, report, out.top);
    match report::render(out.format, report, view, &disk) {
        report::Rendered::Text(text) => write_output(out.output.as_deref(), &text),
        report::Rendered::Page { file_name, html } => {
            let dir = out.output.as_deref().ok_or_else(html_needs_a_dir)?;
            let page = dir.join(file_name);
            std::fs::create_dir_all(dir)
                .and_then(|()| std::fs::write(&page, html))
                .map_err(|source| SflError::Output {
                    what: "the HTML report",
                    path: page.clone(),
                    source,
                })?;
            ui::status("Wrote", page.display().to_string());
            Ok(())
        }
    }
}

/// Writes `text` to `path`, or to standard output.
pub(super) fn write_output(path: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match path {
        Some(p) => std::fs::write(p, text).map_err(|source| {
            SflError::Output {
                what: "the report",
                path: p.to_path_buf(),
                source,
            }
            .into()
        }),
        None => {
            let mut stdout = std::io::stdout().lock();
            match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
                // A closed pipe (`cargo sfl | head`) is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                r => r.map_err(|source| {
                    SflError::Stdout {
                        what: "the report",
                        source,
                    }
                    .into()
                }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prepare::tests::config;
    use super::*;
    use crate::evidence::TieBreak;
    use crate::spectra::tests::doric_minmax;

    /// The report of `out`'s rankings of `analyses`.
    fn report_of<'m>(
        analyses: &'m Analyses<'m>,
        out: &'m ReportConfig,
        changes: Option<&crate::diff::Changes>,
    ) -> Report<'m> {
        let mut report = Report::of(analyses.base());
        for r in &rank_all(analyses, out, changes) {
            report.add(r);
        }
        report
    }

    #[test]
    fn fail_on_reports_every_entry_at_or_above_the_threshold() {
        let s = doric_minmax();
        let out = config(&["ochiai", "tarantula"]);
        let analyses = Analyses::prepared(&s, None, true, &out.measures, TieBreak::Code);
        let rankings = report_of(&analyses, &out, None);
        // Line 3 is run by every failing test and no passing one: 1 under both measures.
        let hits = fail_on_hits(&rankings, 1.0);
        assert_eq!(hits.len(), 2, "{hits:?}");
        assert!(
            hits[0].starts_with("ochiai ") && hits[0].ends_with(" at src/lib.rs:3"),
            "{hits:?}"
        );
        assert!(hits[1].starts_with("tarantula "), "{hits:?}");
        assert_eq!(fail_on(&rankings, 1.0), exit::SUSPICION);
        assert!(fail_on_hits(&rankings, 1.5).is_empty());
        assert_eq!(fail_on(&rankings, 1.5), exit::REPORTED);
        let lower = fail_on_hits(&rankings, 0.0);
        assert!(lower.len() > hits.len(), "{lower:?}");
    }

    #[test]
    fn fail_on_sees_only_the_changed_entries_with_only_changed() {
        let s = doric_minmax();
        let mut out = config(&["ochiai"]);
        out.only_changed = true;
        let analyses = Analyses::prepared(&s, None, true, &out.measures, TieBreak::Code);
        // Every line changed but those of the entry holding unit 2 (src/lib.rs:3).
        let analysis = analyses.base();
        let kept = analysis.groups.iter().find(|g| g.units.contains(&2)).unwrap();
        let mut changes = crate::diff::Changes::default();
        for (u, unit) in s.units.iter().enumerate().filter(|(u, _)| !kept.units.contains(u)) {
            changes.lines.entry(unit.file.clone()).or_default().insert(unit.line);
            assert_ne!(u, 2);
        }
        let rankings = report_of(&analyses, &out, Some(&changes));
        assert!(rankings.rankings[0].entries.iter().all(|x| x.changed()));
        assert!(fail_on_hits(&rankings, 1.0).is_empty());
    }
}
