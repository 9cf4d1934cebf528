//! What a report shows besides the rankings: how many entries, the options that produced
//! them (and how every machine-readable format states them), `--diff-base`, the functions'
//! names at function granularity, `--mutate`'s results.

use serde::Serialize;

use super::model::Ranking;
use super::text::{FileSpans, LineSpan, spans};
use crate::analysis::Options;
use crate::spectra::Spectra;

/// What a report shows besides the rankings.
pub struct View<'a> {
    pub opts: Options,
    /// Entries per measure in the human and SARIF reports (and for `changed_in_top`).
    pub top: usize,
    /// The `--diff-base` revision, when entries are marked as changed.
    pub diff_base: Option<&'a str>,
    /// At `--granularity function`: each unit's function name (unit `u` is the spectra's
    /// function `u`, whose extent `Spectra::functions[u]` gives). `None` for lines.
    pub function_names: Option<&'a [String]>,
    /// `--mutate`'s results, when it ran.
    pub mutation: Option<&'a crate::mutate::Mutation>,
}

impl View<'_> {
    /// What a unit is, in the singular: "function" or "line".
    pub fn unit_noun(&self) -> &'static str {
        if self.function_names.is_some() {
            "function"
        } else {
            "line"
        }
    }

    /// The function unit `u` of `spectra` is, with its name, at function granularity.
    pub fn function<'s>(&'s self, spectra: &'s Spectra, u: usize) -> Option<(&'s str, LineSpan)> {
        let name = self.function_names?.get(u)?;
        let f = spectra.functions.get(u)?;
        Some((
            name,
            LineSpan {
                start: f.start,
                end: f.end,
            },
        ))
    }

    /// A group's spans by file: adjacent lines merged, or, at function granularity, each
    /// function's own extent (two functions are never one span).
    pub fn spans<'s>(&self, spectra: &'s Spectra, units: &[usize]) -> Vec<FileSpans<'s>> {
        if self.function_names.is_none() {
            return spans(units, &spectra.units);
        }
        let mut out: Vec<FileSpans<'s>> = Vec::new();
        for &u in units {
            let f = &spectra.functions[u];
            let span = LineSpan {
                start: f.start,
                end: f.end,
            };
            match out.last_mut() {
                Some(fs) if fs.file == f.file => fs.spans.push(span),
                _ => out.push(FileSpans {
                    file: &f.file,
                    spans: vec![span],
                }),
            }
        }
        out
    }

    /// How many of a ranking's top N entries touch changed lines (with `--diff-base`).
    pub fn changed_in_top(&self, r: &Ranking) -> Option<usize> {
        self.diff_base?;
        Some(r.entries.iter().take(self.top).filter(|x| x.changed).count())
    }
}

/// How a report was computed, stated in every machine-readable format.
#[derive(Serialize)]
pub(crate) struct Conventions {
    failing: &'static str,
    rank: &'static str,
    line_rank: &'static str,
    division_by_zero: &'static str,
    ties_displayed: &'static str,
    entries: &'static str,
    smoothing: bool,
    clone_failing: u32,
    optimise: bool,
    update_bound: usize,
}

impl Conventions {
    pub(crate) fn of(opts: &Options) -> Self {
        Conventions {
            failing: "failed, timed-out and crashed tests form the failing set; ignored tests are not used",
            rank: "mid-rank over entries: entries scoring strictly higher, plus (tied entries + 1) / 2",
            line_rank: "mid-rank over lines: lines in entries scoring strictly higher, plus (lines in tied entries + 1) / 2",
            division_by_zero: "0/0 = 0; x/0 = ±f64::MAX; ln 0 = -f64::MAX; overflow clamps to ±f64::MAX",
            ties_displayed: "in code order (file, line)",
            entries: if opts.group {
                "lines with identical coverage form one entry (no spectrum measure can tell them apart)"
            } else {
                "one entry per line (--no-group)"
            },
            smoothing: opts.smoothing,
            clone_failing: opts.clone_failing,
            optimise: opts.optimise,
            update_bound: opts.update_bound,
        }
    }
}
