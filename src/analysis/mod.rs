//! From the coverage matrix to what every measure scores: ambiguity groups ([`groups`]), which
//! failing tests run which group (what Doric's measures read), the all-failing core and
//! Algorithm 1 of Landsberg, Sun & Kroening's single-fault-optimal study, and the per-unit facts
//! the rankings order by (panic points, line evidence, CP's scores). The scores themselves are
//! computed per measure by [`crate::rank`].
//!
//! Only units run by at least one failing test are candidates (the others have `ef = 0` and
//! are never ranked). Candidates with identical coverage columns form an *ambiguity group*:
//! no spectrum measure can tell them apart, so they are scored and reported as one entry. A
//! line where a failing test's own operation panicked (its backtrace's first frame in ranked
//! code) is kept apart from the lines that are not, so that the stack-first rankings can move
//! it alone.

use crate::cp::{CpScores, CpVariant};
use crate::evidence::{LineEvidence, TieBreak};
use crate::measures::doric::Incidence;
use crate::spectra::Spectra;
use crate::weights::Weights;

pub mod groups;

// The score types, where the reports and the configuration take them from.
pub use crate::score::{Key, Options, Scored, Tier};
pub use groups::Group;

/// The matrix prepared for scoring.
pub struct Analysis<'a> {
    pub spectra: &'a Spectra,
    pub groups: Vec<Group>,
    /// Test indices of the failing tests (the failing set E).
    pub failing: Vec<usize>,
    /// Which failing tests run which group.
    incidence: Incidence,
    /// CP's block scores and per-unit scores per variant ([`CpVariant::index`]), each solved on
    /// first use.
    cp: [std::sync::OnceLock<Option<CpScores>>; CpVariant::COUNT],
    /// Per unit, the evidence that orders an entry's lines (`--tie-break evidence`).
    evidence: Option<Vec<LineEvidence>>,
    /// Per unit, the failing tests whose operation panicked there
    /// ([`crate::evidence::operation_panic_points`]).
    points: Vec<u32>,
    /// At function granularity ([`Analysis::by_best_line`]): the same run's line analysis, whose
    /// best line of each function gives the function its key.
    by_line: Option<Box<Analysis<'a>>>,
    /// Per unit, the combined ranking's score, when this analysis' groups are split by it
    /// ([`Analysis::with_unit_scores`]).
    unit_scores: Option<Vec<Option<f64>>>,
    /// The combined ranking's weights.
    weights: &'a Weights,
}

impl<'a> Analysis<'a> {
    pub fn new(spectra: &'a Spectra, group: bool) -> Self {
        Self::with_cp(spectra, group, &[])
    }

    /// Like `new`; with `split_by_cp` (the CP variants among the measures reported) lines
    /// with identical coverage but different CP scores are different groups, since CP can
    /// tell them apart (the other measures then score the parts alike: tied entries, same line
    /// ranks).
    pub fn with_cp(spectra: &'a Spectra, group: bool, split_by_cp: &[CpVariant]) -> Self {
        Self::split(spectra, group, split_by_cp, None)
    }

    /// Like `new`, with lines of identical coverage but different `scores` in different groups,
    /// so an entry's lines share one score: the analysis the combined ranking ranks, by
    /// `scores` (its per-unit scores under `weights`).
    pub fn with_unit_scores(spectra: &'a Spectra, group: bool, scores: Vec<Option<f64>>, weights: &'a Weights) -> Self {
        let mut a = Self::split(spectra, group, &[], Some(&scores)).with_weights(weights);
        a.unit_scores = Some(scores);
        a
    }

    fn split(spectra: &'a Spectra, group: bool, split_by_cp: &[CpVariant], by_score: Option<&[Option<f64>]>) -> Self {
        let cp: [std::sync::OnceLock<_>; CpVariant::COUNT] = Default::default();
        let unit_cp: Vec<&Vec<Option<f64>>> = split_by_cp
            .iter()
            .filter_map(|&v| {
                cp[v.index()]
                    .get_or_init(|| crate::cp::lines::solve(spectra, v))
                    .as_ref()
                    .map(|(_, u)| u)
            })
            .collect();
        // A line where failing tests' backtraces first enter ranked code, having panicked on
        // the line's own operation, is its own entry (with the lines of equal coverage that as
        // many tests point at): the stack-first rankings move it, not its group.
        let points = crate::evidence::operation_panic_points(spectra);
        let split = |u: usize| {
            let mut key: Vec<Option<u64>> = unit_cp.iter().map(|s| s[u].map(f64::to_bits)).collect();
            if let Some(s) = by_score {
                key.push(s[u].map(f64::to_bits));
            }
            (key, points[u])
        };
        let g = groups::group(spectra, group, split);
        Analysis {
            spectra,
            groups: g.groups,
            failing: g.failing,
            incidence: g.incidence,
            cp,
            evidence: None,
            points,
            by_line: None,
            unit_scores: None,
            weights: Weights::committed(),
        }
    }

    /// The analysis a report or an evaluation ranks: over `spectra`'s lines, or, when `lines` is
    /// given (`spectra` is then `lines.by_function()`), over functions, each ranked where its
    /// best line ranks ([`Analysis::by_best_line`]). `split_by_cp`: the CP variants among the
    /// measures.
    pub fn prepared(
        spectra: &'a Spectra,
        lines: Option<&'a Spectra>,
        group: bool,
        split_by_cp: &[CpVariant],
        tie_break: TieBreak,
    ) -> Self {
        match lines {
            None => Self::with_cp(spectra, group, split_by_cp).with_tie_break(tie_break),
            Some(lines) => Self::by_best_line(
                spectra,
                Self::with_cp(lines, group, split_by_cp).with_tie_break(tie_break),
            ),
        }
    }

    /// Functions ranked by their best line: `functions` is `lines.spectra.by_function()`, each
    /// function its own entry, and under every measure a function's key, score and tie
    /// evidence are those of its best line in `lines` (Zou et al. score a method by its best
    /// statement). A function then ranks where a person reading the line ranking first meets
    /// it, and the top function holds the top line. The counts shown stay the function's own
    /// (the tests that ran any of its lines).
    pub fn by_best_line(functions: &'a Spectra, lines: Analysis<'a>) -> Self {
        let mut a = Self::with_cp(functions, false, &[]).with_weights(lines.weights);
        a.by_line = Some(Box::new(lines));
        a
    }

    /// The line analysis: this one, or at function granularity the one its keys come from.
    pub fn lines(&self) -> &Analysis<'a> {
        self.by_line.as_deref().unwrap_or(self)
    }

    /// At function granularity, the line analysis whose best lines key the functions.
    pub fn by_line(&self) -> Option<&Analysis<'a>> {
        self.by_line.as_deref()
    }

    /// Orders each entry's lines as `tie_break` says: by evidence (read from the spectra's
    /// stacks and sources), or in code order.
    pub fn with_tie_break(mut self, tie_break: TieBreak) -> Self {
        self.evidence = (tie_break == TieBreak::Evidence).then(|| crate::evidence::line_evidence(self.spectra));
        self
    }

    /// Scores the combined ranking with `weights` (the committed ones unless given).
    pub fn with_weights(mut self, weights: &'a Weights) -> Self {
        self.weights = weights;
        if let Some(lines) = &mut self.by_line {
            lines.weights = weights;
        }
        self
    }

    /// This analysis with `other`'s line evidence and weights: a part of `other`'s matrix (one
    /// cluster of its failing tests) ranked as `other` ranks.
    pub fn ranked_like(mut self, other: &Analysis<'a>) -> Self {
        self.evidence = other.evidence.clone();
        self.weights = other.weights;
        self
    }

    /// Group `g`'s lines in the order a person should read them: by evidence with
    /// `with_tie_break` (code order among equals), else in code order.
    pub fn ordered_units(&self, g: usize) -> Vec<usize> {
        let mut units = self.groups[g].units.clone();
        if let Some(e) = &self.evidence {
            units.sort_by(|&a, &b| e[a].cmp_descending(&e[b]));
        }
        units
    }

    /// Unit `u`'s evidence, when it breaks ties among an entry's lines.
    pub fn tie(&self, u: usize) -> Option<LineEvidence> {
        self.evidence.as_ref().map(|e| e[u])
    }

    /// The line to show for group `g`: the first of [`Self::ordered_units`].
    pub fn lead(&self, g: usize) -> usize {
        match &self.evidence {
            Some(_) => self.ordered_units(g)[0],
            None => self.groups[g].units[0],
        }
    }

    /// Which failing tests run which group, and how many units each runs.
    pub fn incidence(&self) -> &Incidence {
        &self.incidence
    }

    /// Whether some failing test runs group `g`'s unit and nothing else: P(f) = 1.
    pub fn certain(&self, g: usize) -> bool {
        self.incidence.certain(g)
    }

    /// How many failing tests panicked on unit `u`'s own operation.
    pub fn operation_panics(&self, u: usize) -> u32 {
        self.points[u]
    }

    /// Per unit, the combined ranking's score, when the groups are split by it.
    pub fn unit_scores(&self) -> Option<&[Option<f64>]> {
        self.unit_scores.as_deref()
    }

    /// The weights the combined ranking scores this analysis with.
    pub fn weights(&self) -> &'a Weights {
        self.weights
    }

    /// Units run by every failing test (the all-failing core): under a single-fault
    /// assumption the fault is among them.
    pub fn core_units(&self) -> usize {
        let f = self.failing.len() as f64;
        self.groups
            .iter()
            .filter(|g| f > 0.0 && g.counts.ef == f)
            .map(|g| g.units.len())
            .sum()
    }

    /// Algorithm 1 of Landsberg, Sun & Kroening's single-fault-optimal study, over the failing tests: starting from the first, add a failing
    /// test that misses some unit run by every test chosen so far, until none does. The chosen
    /// tests pin the all-failing core down as tightly as all failing tests together. Returns
    /// test indices.
    pub fn core_witnesses(&self) -> Vec<usize> {
        if self.failing.is_empty() {
            return Vec::new();
        }
        // Per failing test, the groups it runs.
        let mut runs = vec![Vec::new(); self.failing.len()];
        for g in 0..self.groups.len() {
            for &k in self.incidence.fail_tests(g) {
                runs[k as usize].push(g);
            }
        }
        let mut chosen = vec![0usize];
        let mut core: Vec<usize> = runs[0].clone();
        loop {
            let next = (0..self.failing.len())
                .filter(|k| !chosen.contains(k))
                .find(|&k| core.iter().any(|g| runs[k].binary_search(g).is_err()));
            let Some(k) = next else { break };
            chosen.push(k);
            core.retain(|g| runs[k].binary_search(g).is_ok());
        }
        chosen.into_iter().map(|k| self.failing[k]).collect()
    }

    /// CP's solution over the edge profiles (solved once per variant, on first use); `None`
    /// without edges.
    pub fn cp(&self, variant: CpVariant) -> Option<&CpScores> {
        self.cp[variant.index()]
            .get_or_init(|| crate::cp::lines::solve(self.spectra, variant))
            .as_ref()
    }
}
