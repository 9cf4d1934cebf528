//! What a report shows besides the rankings: how many entries, the options that produced
//! them (and how every machine-readable format states them), `--diff-base`, the functions'
//! names at function granularity, `--mutate`'s results.

use serde::Serialize;

use super::model::{Entry, Ranking};
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
    /// Line rankings are shown function by function (the default): the name of each of the
    /// matrix's functions (`Spectra::functions`). `None` lists lines on their own.
    pub line_functions: Option<&'a [String]>,
    /// `--mutate`'s results, when it ran.
    pub mutation: Option<&'a crate::mutate::Mutation>,
}

impl<'a> View<'a> {
    /// What a unit is, in the singular: "function" or "line".
    pub fn unit_noun(&self) -> &'static str {
        if self.function_names.is_some() {
            "function"
        } else {
            "line"
        }
    }

    /// How `r` is shown: function by function (its functions, with their names), or entry by
    /// entry.
    pub fn functions<'r>(&self, r: &'r Ranking) -> Option<(&'r [crate::rank::functions::FunctionBlock], &'a [String])> {
        let names = self.line_functions?;
        (!r.functions.is_empty()).then_some((r.functions.as_slice(), names))
    }

    /// What a report shows of `r`, in order: functions first, the first lines of each of the
    /// top functions (each entry at its first line in that function, with the function's name
    /// and rank); otherwise the top entries at their lead units.
    pub fn shown<'r>(&self, r: &'r Ranking) -> Vec<ShownLine<'r>>
    where
        'a: 'r,
    {
        match self.functions(r) {
            Some((blocks, names)) => blocks
                .iter()
                .take(self.top)
                .flat_map(|b| {
                    let name = b.function.and_then(|f| names.get(f as usize)).map(String::as_str);
                    b.entries
                        .iter()
                        .take(crate::rank::functions::LINES_SHOWN)
                        .map(move |(e, lines)| ShownLine {
                            entry: &r.entries[*e],
                            lead: lines[0],
                            function: Some((name, b.rank)),
                        })
                })
                .collect(),
            None => r
                .entries
                .iter()
                .take(self.top)
                .map(|x| ShownLine {
                    entry: x,
                    lead: x.shown_at(),
                    function: None,
                })
                .collect(),
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
        Some(r.entries.iter().take(self.top).filter(|x| x.changed()).count())
    }
}

/// One suspect a report shows ([`View::shown`]).
pub struct ShownLine<'r> {
    pub entry: &'r Entry,
    /// The unit it is shown at: the entry's lead, or its first line in the function.
    pub lead: usize,
    /// Functions first: its function's name (`None` outside every function) and rank.
    pub function: Option<(Option<&'r str>, f64)>,
}

impl ShownLine<'_> {
    /// `name (function #rank)`, functions first.
    pub fn function_label(&self) -> Option<String> {
        let (name, rank) = self.function?;
        let rank = if rank.fract() == 0.0 {
            format!("{rank:.0}")
        } else {
            format!("{rank:.1}")
        };
        Some(match name {
            Some(n) => format!("{n} (function #{rank})"),
            None => format!("outside any function (#{rank})"),
        })
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
