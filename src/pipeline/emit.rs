//! From spectra to a written report and an exit code: the matrix at the asked granularity,
//! `--diff-base`, a ranking per measure (HT_Rank order with `--order ht`), the report in its
//! format, and `--fail-on`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;

use crate::analysis::{Analysis, Options};
use crate::config::{Granularity, HtParams, Order, ReportConfig};
use crate::error::{SflError, exit};
use crate::measures::Measure;
use crate::rank::Analyses;
use crate::rank::{Ranking, rank_only};
use crate::report;
use crate::spectra::{Outcome, Spectra};
use crate::syntax::Parsed;
use crate::ui;

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
        let shown: Vec<String> = tests
            .iter()
            .take(4)
            .map(|&t| report::test_label(&spectra.tests[t]))
            .collect();
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

fn emit_with(spectra: &Spectra, out: &ReportConfig, mutate: Option<(usize, &Mutator)>) -> anyhow::Result<i32> {
    let whole = spectra;
    let mut converted = Default::default();
    let Prepared {
        spectra,
        lines,
        names: function_names,
    } = at_granularity(spectra, out, &mut converted)?;
    let opts = out.options.clone();
    require_edges(spectra, &out.measures)?;
    let analyses = Analyses::prepared(spectra, lines, opts.group, &out.measures, out.tie_break);
    let analysis = analyses.base();
    let summary = report::Summary::of(analysis);
    let changes = match &out.diff_base {
        Some(rev) => Some(
            crate::diff::changed_since(Path::new(&spectra.workspace_root), rev)
                .map_err(|e| SflError::DiffBase(e.to_string()))?,
        ),
        None => None,
    };
    let mut rankings = rank_all(&analyses, out, changes.as_ref());
    for r in &rankings {
        if let Some(variant) = r.measure.cp_variant() {
            warn_cp(r.analysis, r.measure, variant);
        }
    }
    if out.order == Order::Ht {
        order_by_ht(&analyses, &mut rankings, &opts, out.ht);
    }
    let mut mutation = None;
    if mutate.is_some() && out.granularity != crate::config::Granularity::Line {
        ui::warn("--mutate re-orders lines: it is not run at --granularity function");
    }
    if let Some((lines, mutator)) = mutate
        && summary.failing() > 0
        && out.granularity == crate::config::Granularity::Line
    {
        match mutator(&crate::mutate::lines_to_mutate(&rankings, lines)) {
            Ok(m) => {
                crate::mutate::reorder(&mut rankings, &m);
                ui::status("Mutated", m.summary());
                mutation = Some(m);
            }
            Err(e) => ui::warn(format!("--mutate failed, so the rankings are not re-ordered: {e}")),
        }
    }
    let view = report::View {
        mutation: mutation.as_ref(),
        opts,
        top: out.top,
        diff_base: out.diff_base.as_deref(),
        function_names: function_names.as_deref(),
    };
    write_report(out, analysis, &rankings, &view)?;
    if out.options.clusters {
        note_clusters(spectra);
    }
    if summary.failing() > 0 && summary.failing() == summary.ranked() {
        ui::note("every test failed, so no passing test tells lines apart; rankings rest on failing coverage alone");
    }
    if summary.failing() == 0 {
        return Ok(exit::NO_FAILING_TESTS);
    }
    // Failing tests and not one entry: an empty ranking would read as "nothing suspicious".
    if summary.entries == 0 {
        ui::error(why_unranked(whole, out));
        return Ok(exit::UNLOCALISABLE);
    }
    match out.fail_on {
        Some(threshold) => Ok(fail_on(&rankings, threshold)),
        None => Ok(exit::REPORTED),
    }
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
    let failing = spectra.mask(|o| o.is_failing() || (out.count_timeouts && o == Outcome::TimedOut));
    let ran = spectra.coverage.iter().filter(|c| c.count_and(&failing) > 0).count();
    // Failing tests recorded without coverage say why in a warning (a doctest run plainly, a
    // doctest that did not build, a `compile_fail` doctest that compiled).
    let uncovered: Vec<&str> = spectra
        .tests
        .iter()
        .enumerate()
        .filter(|(t, _)| failing.contains(*t))
        .filter_map(|(_, r)| {
            r.warnings
                .iter()
                .find(|w| w.starts_with("no coverage"))
                .map(String::as_str)
        })
        .collect();
    if ran == 0 && !uncovered.is_empty() && uncovered.len() == failing.count_and(&failing) as usize {
        return format!(
            "the failing tests have no coverage ({}), so nothing can be ranked: fix what they say and run again",
            uncovered[0]
                .trim_start_matches("no coverage: ")
                .trim_end_matches(", so it adds nothing to the ranking")
        );
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
         else can be ranked: pass --include-test-code to rank test code too"
    )
}

/// The matrix a report ranks, as [`at_granularity`] prepares it.
#[derive(Debug)]
pub(super) struct Prepared<'a> {
    /// Lines, or functions at function granularity.
    pub spectra: &'a Spectra,
    /// At function granularity, the lines the functions were made of (each function ranks by
    /// its best line: [`Analysis::prepared`]).
    pub lines: Option<&'a Spectra>,
    /// At function granularity, each unit's function name.
    pub names: Option<Vec<String>>,
}

/// The matrix as the report options want it: without test code (unless `--include-test-code`) and
/// at the requested granularity; at function granularity, with each unit's function name and
/// the lines kept beside. Test code and names are the spectra's saved facts; only spectra saved
/// without them (schema v2 and v1, imported) have their sources parsed here, once for both.
/// `converted` holds what had to be made (the lines, then the functions).
pub(super) fn at_granularity<'a>(
    spectra: &'a Spectra,
    out: &ReportConfig,
    converted: &'a mut [Option<Spectra>; 2],
) -> Result<Prepared<'a>, SflError> {
    let mut parsed = Parsed::new(Path::new(&spectra.workspace_root));
    let mut owned = timed_out(spectra, out.count_timeouts);
    if !out.include_test_code {
        owned = Some(without_test_code(owned.as_ref().unwrap_or(spectra), &mut parsed));
    }
    let [line_slot, function_slot] = converted;
    let lines: &'a Spectra = match owned {
        Some(s) => line_slot.insert(s),
        None => spectra,
    };
    if out.granularity != Granularity::Function {
        return Ok(Prepared {
            spectra: lines,
            lines: None,
            names: None,
        });
    }
    if lines.functions.is_empty() {
        return Err(SflError::Usage(
            "--granularity function needs function information, which imported matrices and spectra saved by older versions lack".into(),
        ));
    }
    let functions = function_slot.insert(lines.by_function());
    let names = match &lines.facts {
        Some(_) => functions
            .functions
            .iter()
            .map(|f| {
                lines
                    .function_name(f)
                    .map_or_else(|| format!("<fn at line {}>", f.start), str::to_string)
            })
            .collect(),
        None => parsed.function_names(&functions.functions),
    };
    Ok(Prepared {
        names: Some(names),
        spectra: functions,
        lines: Some(lines),
    })
}

/// Timed-out tests are left out of the ranking, with a warning naming them and how to rank
/// them; with `--count-timeouts` they are failed tests (the matrix returned).
fn timed_out(spectra: &Spectra, count_timeouts: bool) -> Option<Spectra> {
    let names: Vec<String> = spectra
        .tests
        .iter()
        .filter(|t| t.outcome == Outcome::TimedOut)
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect();
    if names.is_empty() {
        return None;
    }
    let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    let more = match names.len() {
        n @ 6.. => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    if !count_timeouts {
        ui::warn(format!(
            "{} test{} timed out and {} left out of the ranking, neither failing nor passing: {shown}{more}. \
             A hang caused by the fault: rank {} as failing with --count-timeouts; a test only slow under \
             instrumentation: raise --test-timeout",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            if names.len() == 1 { "is" } else { "are" },
            if names.len() == 1 { "it" } else { "them" },
        ));
        return None;
    }
    ui::note(format!(
        "--count-timeouts: ranking timed-out tests as failed: {shown}{more}"
    ));
    let mut counted = spectra.clone();
    for t in &mut counted.tests {
        if t.outcome == Outcome::TimedOut {
            t.outcome = Outcome::Failed;
        }
    }
    Some(counted)
}

/// The matrix without the lines `testcode` finds to be test code.
fn without_test_code(spectra: &Spectra, parsed: &mut Parsed) -> Spectra {
    let (kept, left_out) = crate::testcode::without_test_code(spectra, parsed);
    ui::info(format!("left out {left_out} lines of test code"));
    kept
}

/// Refuses measures that need edge profiles when the spectra have none.
pub(super) fn require_edges(spectra: &Spectra, measures: &[&Measure]) -> Result<(), SflError> {
    match spectra.edges {
        None => refuse_edge_measures(measures),
        Some(_) => Ok(()),
    }
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

/// The error for asking for a measure that needs edge profiles where there are none.
pub(super) fn refuse_edge_measures(measures: &[&Measure]) -> Result<(), SflError> {
    match measures.iter().find(|m| m.needs_edges()) {
        Some(m) => Err(SflError::Usage(format!(
            "the {} measure needs control-flow edge profiles, which these spectra lack (collected with --no-edges, \
             imported, or saved by an older cargo sfl); run `cargo sfl` without --no-edges",
            m.name
        ))),
        None => Ok(()),
    }
}

/// `--diff-base`: per entry (ambiguity group) of `analysis`, whether it touches a changed line.
fn changed_entries(analysis: &Analysis, changes: &crate::diff::Changes) -> Vec<bool> {
    let spectra = analysis.spectra;
    analysis
        .groups
        .iter()
        .map(|g| {
            g.units
                .iter()
                .any(|&u| changes.contains(&spectra.units[u].file, spectra.units[u].line))
        })
        .collect()
}

/// A ranking per measure, each of the groups formed for it, entries marked as changed (and,
/// with `--only-changed`, only those).
fn rank_all<'m>(
    analyses: &'m Analyses<'m>,
    out: &'m ReportConfig,
    changes: Option<&crate::diff::Changes>,
) -> Vec<Ranking<'m>> {
    out.measures
        .iter()
        .map(|&m| {
            let analysis = analyses.of(m);
            let changed = changes.map(|c| changed_entries(analysis, c));
            let keep = if out.only_changed { changed.as_deref() } else { None };
            let mut r = rank_only(analysis, m, &out.options, keep);
            if let Some(c) = &changed {
                for x in &mut r.entries {
                    x.changed = c[x.group];
                }
            }
            r
        })
        .collect()
}

/// `--order ht`: each ranking in the order the HT_Rank model expects a person to reach its
/// entries (one model per analysis the rankings rank).
fn order_by_ht(analyses: &Analyses, rankings: &mut [Ranking], opts: &Options, ht: HtParams) {
    for analysis in analyses.all() {
        let mine: Vec<&mut Ranking> = rankings
            .iter_mut()
            .filter(|r| std::ptr::eq(r.analysis, analysis))
            .collect();
        if mine.is_empty() {
            continue;
        }
        let model = crate::hitting::HtModel::new(analysis.spectra, analysis);
        for r in mine {
            let scored = analysis.score(r.measure, opts);
            let (log_times, method) = model.times(&scored, ht.p_jump, ht.exact_limit, ht.walks);
            // An entry is reached when its first line is.
            let group_times: Vec<f64> = analysis
                .groups
                .iter()
                .map(|g| {
                    g.units
                        .iter()
                        .map(|u| log_times[model.loc[u]])
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            r.order_by_time(&group_times, method);
        }
    }
}

/// Says how CP's system was solved when it was not solved exactly, and when a CP that
/// propagates along calls has none to propagate along.
fn warn_cp(analysis: &Analysis, measure: &Measure, variant: crate::cp::CpVariant) {
    let analysis = analysis.lines();
    if variant.calls
        && let Some(e) = &analysis.spectra.edges
        && e.calls() == 0
    {
        ui::note(format!(
            "{}: the edge profiles hold no calls (saved by a cargo sfl from before calls were recorded, \
             or no function of the workspace calls another), so it propagates within functions only; \
             run `cargo sfl` again to record them",
            measure.name
        ));
    }
    if let Some((sol, _)) = analysis.cp(variant)
        && let crate::cp::CpMethod::Damped { factor, reason } = &sol.method
    {
        let names = analysis
            .spectra
            .edges
            .as_ref()
            .map_or_else(Vec::new, |e| e.function_names(&sol.damped_blocks));
        let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        let more = names.len().saturating_sub(5);
        ui::note(format!(
            "{}: {reason} (factor {factor}). Damped: {shown}{}",
            measure.name,
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
}

/// `--fail-on`: the exit code, after saying which reported entries reached the threshold.
fn fail_on(rankings: &[Ranking], threshold: f64) -> i32 {
    let hits = fail_on_hits(rankings, threshold);
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
fn fail_on_hits(rankings: &[Ranking], threshold: f64) -> Vec<String> {
    rankings
        .iter()
        .flat_map(|r| {
            r.entries
                .iter()
                .filter(|x| x.shown_score().is_some_and(|s| s >= threshold))
                .map(move |x| {
                    // At the line the reports lead the entry with.
                    let u = &r.analysis.spectra.units[r.analysis.lead(x.group)];
                    format!(
                        "{} {} at {}:{}",
                        r.measure.name,
                        report::fmt_score(r.measure, x),
                        u.file,
                        u.line
                    )
                })
        })
        .collect()
}

/// Renders the report in the asked-for format and writes it: text to stdout or `-o FILE`, the
/// HTML page into the `--output` directory.
fn write_report(
    out: &ReportConfig,
    analysis: &Analysis,
    rankings: &[Ranking],
    view: &report::View,
) -> anyhow::Result<()> {
    match report::render(out.format, analysis, rankings, view) {
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
                r => r.context("cannot write the report"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Format;
    use crate::evidence::TieBreak;
    use crate::spectra::tests::doric_minmax;

    fn config(measures: &[&str]) -> ReportConfig {
        let names: Vec<String> = measures.iter().map(|m| m.to_string()).collect();
        ReportConfig {
            measures: ReportConfig::resolve_measures(&names, Format::Human).unwrap(),
            options: Options {
                smoothing: false,
                clone_failing: 1,
                optimise: false,
                update_bound: 20,
                group: true,
                clusters: false,
            },
            top: 10,
            format: Format::Human,
            output: None,
            diff_base: None,
            only_changed: false,
            fail_on: None,
            granularity: Granularity::Line,
            order: Order::Score,
            tie_break: Default::default(),
            include_test_code: true,
            count_timeouts: false,
            ht: HtParams::default(),
        }
    }

    #[test]
    fn fail_on_reports_every_entry_at_or_above_the_threshold() {
        let s = doric_minmax();
        let out = config(&["ochiai", "tarantula"]);
        let analyses = Analyses::prepared(&s, None, true, &out.measures, TieBreak::Code);
        let rankings = rank_all(&analyses, &out, None);
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
        let rankings = rank_all(&analyses, &out, Some(&changes));
        assert!(rankings[0].entries.iter().all(|x| x.changed));
        assert!(fail_on_hits(&rankings, 1.0).is_empty());
    }

    #[test]
    fn timed_out_tests_are_ranked_only_with_count_timeouts() {
        let mut s = doric_minmax();
        s.tests[0].outcome = Outcome::TimedOut;
        assert!(
            timed_out(&s, false).is_none(),
            "left out by the failing mask, not rewritten"
        );
        let counted = timed_out(&s, true).unwrap();
        assert_eq!(counted.tests[0].outcome, Outcome::Failed);
        let failing = |s: &Spectra| s.failing_mask().count_and(&s.failing_mask());
        assert_eq!(failing(&counted), failing(&s) + 1);
        assert!(timed_out(&doric_minmax(), true).is_none(), "nothing timed out");
        let mut out = config(&[]);
        out.count_timeouts = true;
        let mut converted = Default::default();
        let ranked = at_granularity(&s, &out, &mut converted).unwrap().spectra;
        assert_eq!(ranked.tests[0].outcome, Outcome::Failed);
    }

    #[test]
    fn function_granularity_needs_function_information() {
        let s = doric_minmax();
        let mut out = config(&[]);
        let mut converted = Default::default();
        assert!(std::ptr::eq(
            at_granularity(&s, &out, &mut converted).unwrap().spectra,
            &s
        ));
        out.granularity = Granularity::Function;
        let err = at_granularity(&s, &out, &mut converted).unwrap_err();
        assert!(matches!(err, SflError::Usage(_)));
        assert!(
            err.to_string()
                .starts_with("--granularity function needs function information"),
            "{err}"
        );
    }

    #[test]
    fn edge_measures_are_refused_without_edge_profiles() {
        let s = doric_minmax();
        let cp = config(&["cp"]).measures;
        let err = require_edges(&s, &cp).unwrap_err().to_string();
        assert!(
            err.starts_with("the cp measure needs control-flow edge profiles"),
            "{err}"
        );
        assert!(require_edges(&s, &config(&[]).measures).is_ok());
    }
}
