//! The analyses a set of measures ranks, so that no measure's entries depend on what else was
//! asked.

use crate::analysis::Analysis;
use crate::cp::CpVariant;
use crate::evidence::TieBreak;
use crate::measures::Measure;
use crate::spectra::Spectra;
use crate::weights::Weights;

/// One analysis whose groups are the lines of identical coverage (every measure but CP's and
/// the combined ranking's), one per CP variant among the measures, whose groups CP's own
/// scores also split (lines CP tells apart are its entries, not the others'), and the combined
/// ranking's, split by its scores.
pub struct Analyses<'a> {
    base: Analysis<'a>,
    cp: Vec<(CpVariant, Analysis<'a>)>,
    /// The combined ranking's, when it is among the measures.
    combined: Option<Analysis<'a>>,
}

impl<'a> Analyses<'a> {
    /// [`Analysis::prepared`] for `measures`, the combined ranking by the committed weights.
    pub fn prepared(
        spectra: &'a Spectra,
        lines: Option<&'a Spectra>,
        group: bool,
        measures: &[&Measure],
        tie_break: TieBreak,
    ) -> Self {
        Self::with_weights(spectra, lines, group, measures, tie_break, Weights::committed())
    }

    /// [`Analysis::prepared`] for `measures`: the base analysis, one per CP variant, and the
    /// combined ranking's by `weights`.
    pub fn with_weights(
        spectra: &'a Spectra,
        lines: Option<&'a Spectra>,
        group: bool,
        measures: &[&Measure],
        tie_break: TieBreak,
        weights: &'a Weights,
    ) -> Self {
        let mut variants: Vec<CpVariant> = Vec::new();
        for v in measures.iter().filter_map(|m| m.cp_variant()) {
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        let combined = measures.iter().any(|m| m.is_combined()).then(|| match lines {
            None => crate::combined::analysis(spectra, group, tie_break, weights),
            Some(lines) => Analysis::by_best_line(spectra, crate::combined::analysis(lines, group, tie_break, weights)),
        });
        let prepared = |split_by_cp: &[CpVariant]| {
            Analysis::prepared(spectra, lines, group, split_by_cp, tie_break).with_weights(weights)
        };
        Analyses {
            base: prepared(&[]),
            cp: variants.into_iter().map(|v| (v, prepared(&[v]))).collect(),
            combined,
        }
    }

    /// The analysis of every measure but CP's: what the summary counts.
    pub fn base(&self) -> &Analysis<'a> {
        &self.base
    }

    /// The analysis whose groups `m` ranks.
    pub fn of(&self, m: &Measure) -> &Analysis<'a> {
        if m.is_combined()
            && let Some(a) = &self.combined
        {
            return a;
        }
        m.cp_variant()
            .and_then(|v| self.cp.iter().find(|(w, _)| *w == v))
            .map_or(&self.base, |(_, a)| a)
    }

    /// Every analysis, the base first.
    pub fn all(&self) -> impl Iterator<Item = &Analysis<'a>> {
        std::iter::once(&self.base)
            .chain(self.cp.iter().map(|(_, a)| a))
            .chain(self.combined.as_ref())
    }
}
