//! A ranking per measure, each of the groups formed for it: entries marked as changed since
//! `--diff-base` (and, with `--only-changed`, only those), in the order the HT_Rank model
//! expects a person to reach them with `--order ht`; and a note when CP's system was not
//! solved exactly.

use crate::analysis::{Analysis, Options};
use crate::config::{HtParams, Order, ReportConfig};
use crate::measures::Measure;
use crate::rank::Analyses;
use crate::rank::{Ranking, rank_only, rank_scored};
use crate::report::model::CpInfo;
use crate::ui;

/// A ranking per measure, each of the groups formed for it, entries marked as changed (and,
/// with `--only-changed`, only those).
pub(super) fn rank_all<'m>(
    analyses: &'m Analyses<'m>,
    out: &'m ReportConfig,
    changes: Option<&crate::diff::Changes>,
) -> Vec<Ranking<'m>> {
    out.measures
        .iter()
        .map(|&m| {
            let analysis = analyses.of(m);
            let changed = changes.map(|c| changed_entries(analysis, c));
            let touched: Option<Vec<bool>> = changed.as_ref().map(|c| c.iter().map(|l| !l.is_empty()).collect());
            let keep = if out.only_changed { touched.as_deref() } else { None };
            let mut r = match out.order {
                Order::Score => rank_only(analysis, m, &out.options, keep),
                Order::Ht => by_ht(analysis, m, &out.options, keep, out.ht),
            };
            r.only_changed = keep.is_some();
            if let Some(c) = &changed {
                for x in &mut r.entries {
                    x.changed_lines = c[x.group].clone();
                }
            }
            r
        })
        .collect()
}

/// `--diff-base`: per entry (ambiguity group) of `analysis`, its changed lines (units).
fn changed_entries(analysis: &Analysis, changes: &crate::diff::Changes) -> Vec<Vec<usize>> {
    let spectra = analysis.spectra;
    analysis
        .groups
        .iter()
        .map(|g| {
            let mut lines: Vec<usize> = g
                .units
                .iter()
                .copied()
                .filter(|&u| changes.contains(&spectra.units[u].file, spectra.units[u].line))
                .collect();
            lines.sort_unstable();
            lines
        })
        .collect()
}

/// `--order ht`: the groups with `keep[g]` (all when `None`) in the order the HT_Rank model
/// expects a person to reach them under `measure`'s scores.
fn by_ht<'m>(
    analysis: &'m Analysis<'m>,
    measure: &'m Measure,
    opts: &Options,
    keep: Option<&[bool]>,
    ht: HtParams,
) -> Ranking<'m> {
    let scored = analysis.score(measure, opts);
    let mut entries = rank_scored(analysis, &scored);
    // The hitting times order the entries and set their ranks anew.
    if let Some(keep) = keep {
        entries.retain(|x| keep[x.group]);
    }
    let model = crate::hitting::HtModel::new(analysis.spectra, analysis);
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
    let mut r = Ranking {
        measure,
        analysis,
        entries,
        ht: None,
        only_changed: false,
    };
    r.order_by_time(&group_times, method);
    r
}

/// For each ranking that is CP's, says how its system was solved when it was not solved
/// exactly, and when a CP that propagates along calls has none to propagate along.
pub(super) fn warn_cp(rankings: &[Ranking]) {
    for r in rankings {
        if let Some(cp) = r.measure.cp_variant().and_then(|v| CpInfo::of(r.analysis, v)) {
            note_cp(r.measure, &cp);
        }
    }
}

/// What [`warn_cp`] says of one ranking.
fn note_cp(measure: &Measure, cp: &CpInfo) {
    if cp.along_calls && cp.calls == 0 {
        ui::note(format!(
            "{}: the edge profiles hold no calls (saved by a cargo sfl from before calls were recorded, \
             or no function of the workspace calls another), so it propagates within functions only; \
             run `cargo sfl` again to record them",
            measure.name
        ));
    }
    if let crate::cp::CpMethod::Damped { factor, reason } = &cp.method {
        let names = &cp.damped_functions;
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
