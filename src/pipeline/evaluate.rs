//! `cargo sfl eval` on collected or saved spectra: every measure scored against the known
//! faults, as a table or JSON.

use crate::config::{EvalConfig, Format, Granularity};
use crate::error::exit;
use crate::faults::Fault;
use crate::measures::Measure;
use crate::spectra::Spectra;
use crate::ui;

use super::emit::{Prepared, at_granularity, require_edges, write_output};

/// Scores the measures on `spectra` against `faults`, writes the report, returns the exit code.
pub(super) fn evaluate(spectra: &Spectra, faults: Vec<Fault>, cfg: &EvalConfig) -> anyhow::Result<i32> {
    let out = &cfg.run.report;
    let mut converted = Default::default();
    let Prepared { spectra, lines, .. } = at_granularity(spectra, out, &mut converted)?;
    // At function granularity a fault is the functions that contain its lines.
    let faults: Vec<Fault> = if out.granularity == Granularity::Function {
        faults
            .iter()
            .map(|f| Fault {
                lines: spectra.enclosing_functions(&f.file, &f.lines),
                ..f.clone()
            })
            .collect()
    } else {
        faults
    };
    let measures = match &cfg.measures {
        Some(asked) => asked.clone(),
        None => supported_measures(spectra),
    };
    require_edges(spectra, &measures)?;
    let weights = cfg
        .weights
        .as_deref()
        .map(crate::weights::Weights::load)
        .transpose()
        .map_err(|e| crate::error::SflError::Usage(e.to_string()))?;
    let settings = crate::eval::Settings {
        opts: out.options.clone(),
        p_jump: out.ht.p_jump,
        exact_limit: out.ht.exact_limit,
        walks: out.ht.walks,
        ht: cfg.ht,
        tie_break: out.tie_break,
        weights,
    };
    let report = crate::eval::evaluate_with(spectra, lines, &faults, &measures, &settings);
    let text = match out.format {
        Format::Json => crate::eval::json(&report),
        _ => crate::eval::human(&report, cfg.sort_by),
    };
    write_output(out.output.as_deref(), &text)?;
    if report.measures.is_empty() {
        ui::error("no known fault is on a line any test ran, so no measure can localise it (see the faults' states)");
        return Ok(exit::UNLOCALISABLE);
    }
    Ok(exit::REPORTED)
}

/// Every measure, without those that need edge profiles when the spectra have none.
fn supported_measures(spectra: &Spectra) -> Vec<&'static Measure> {
    if spectra.edges.is_none() {
        ui::note("no edge profiles in these spectra: cp is not evaluated");
    }
    crate::measures::all()
        .filter(|m| spectra.edges.is_some() || !m.needs_edges())
        .collect()
}
