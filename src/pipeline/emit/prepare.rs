//! The matrix a report ranks: timed-out tests left out (or counted as failing), test code
//! left out, at the asked-for granularity; and the measures its edge profiles allow.

use std::path::Path;

use crate::config::{Granularity, ReportConfig};
use crate::error::SflError;
use crate::measures::Measure;
use crate::spectra::{Outcome, Spectra};
use crate::syntax::Parsed;
use crate::ui;

/// The matrix a report ranks, as [`at_granularity`] prepares it.
#[derive(Debug)]
pub(in crate::pipeline) struct Prepared<'a> {
    /// Lines, or functions at function granularity.
    pub spectra: &'a Spectra,
    /// At function granularity, the lines the functions were made of (each function ranks by
    /// its best line: [`crate::analysis::Analysis::prepared`]).
    pub lines: Option<&'a Spectra>,
    /// At function granularity, each unit's function name.
    pub names: Option<Vec<String>>,
    /// When line rankings are read function by function (`functions_first`), the name of each
    /// of the lines' functions.
    pub line_functions: Option<Vec<String>>,
}

/// The matrix as the report options want it: without test code (unless `--include-test-code`) and
/// at the requested granularity; at function granularity, with each unit's function name and
/// the lines kept beside. Test code and names are the spectra's saved facts; only spectra saved
/// without them (schema v2 and v1, imported) have their sources parsed here, once for both.
/// `converted` holds what had to be made (the lines, then the functions).
pub(in crate::pipeline) fn at_granularity<'a>(
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
        let line_functions = (out.functions_first && !lines.functions.is_empty())
            .then(|| names_of(lines, &lines.functions, &mut parsed));
        return Ok(Prepared {
            spectra: lines,
            lines: None,
            names: None,
            line_functions,
        });
    }
    if lines.functions.is_empty() {
        return Err(SflError::Usage(
            "--granularity function needs function information, which imported matrices and spectra saved by older versions lack".into(),
        ));
    }
    let functions = function_slot.insert(lines.by_function());
    Ok(Prepared {
        names: Some(names_of(lines, &functions.functions, &mut parsed)),
        spectra: functions,
        lines: Some(lines),
        line_functions: None,
    })
}

/// The name of each of `functions` (of `lines`): the saved facts', or parsed from the sources
/// for spectra saved without them.
fn names_of(lines: &Spectra, functions: &[crate::spectra::FunctionSpan], parsed: &mut Parsed) -> Vec<String> {
    match &lines.facts {
        Some(_) => functions
            .iter()
            .map(|f| {
                lines
                    .function_name(f)
                    .map_or_else(|| format!("<fn at line {}>", f.start), str::to_string)
            })
            .collect(),
        None => parsed.function_names(functions),
    }
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
pub(in crate::pipeline) fn require_edges(spectra: &Spectra, measures: &[&Measure]) -> Result<(), SflError> {
    match spectra.edges {
        None => refuse_edge_measures(measures),
        Some(_) => Ok(()),
    }
}

/// The error for asking for a measure that needs edge profiles where there are none.
pub(in crate::pipeline) fn refuse_edge_measures(measures: &[&Measure]) -> Result<(), SflError> {
    match measures.iter().find(|m| m.needs_edges()) {
        Some(m) => Err(SflError::Usage(format!(
            "the {} measure needs control-flow edge profiles, which these spectra lack (collected with --no-edges, \
             imported, or saved by an older cargo sfl); run `cargo sfl` without --no-edges",
            m.name
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
pub(in crate::pipeline) mod tests {
    use super::*;
    use crate::analysis::Options;
    use crate::config::{Format, HtParams, Order};
    use crate::spectra::tests::doric_minmax;

    pub(in crate::pipeline) fn config(measures: &[&str]) -> ReportConfig {
        let names: Vec<String> = measures.iter().map(|m| m.to_string()).collect();
        ReportConfig {
            measures: ReportConfig::resolve_measures(&names, Format::Human).unwrap(),
            options: Options::default(),
            top: 10,
            format: Format::Human,
            output: None,
            diff_base: None,
            only_changed: false,
            fail_on: None,
            granularity: Granularity::Line,
            functions_first: false,
            order: Order::Score,
            tie_break: Default::default(),
            include_test_code: true,
            count_timeouts: false,
            ht: HtParams::default(),
        }
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
