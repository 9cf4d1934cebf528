//! From the coverage matrix to scores: ambiguity groups, per-group spectra, every kind of
//! measure (spectrum formulas with smoothing, cloning and Opt_w; Doric's cl, P(f) and cl-u),
//! the all-failing core and Algorithm 1 of Landsberg, Sun & Kroening's single-fault-optimal study.
//!
//! Only units run by at least one failing test are candidates (the others have `ef = 0` and
//! are never ranked). Candidates with identical coverage columns form an *ambiguity group*:
//! no spectrum measure can tell them apart, so they are scored and reported as one entry. A
//! line where a failing test's own operation panicked (its backtrace's first frame in ranked
//! code) is kept apart from the lines that are not, so that the stack-first rankings can move
//! it alone.

use std::collections::HashMap;

use crate::bitset::BitSet;
use crate::cp::CpVariant;
use crate::evidence::{Tie, TieBreak};
use crate::measures::doric::{ln_not_implicated, ln_term, log_sum_exp};
use crate::measures::{Counts, Kind, Measure, finite};
use crate::spectra::Spectra;

/// How scores are computed (all recorded in the report).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Add 0.5 to each of ef, ep, nf, np before a spectrum formula (Doric's convention).
    pub smoothing: bool,
    /// Count every failing test this many times (Zhang et al.'s cloning study); 1 = off.
    pub clone_failing: u32,
    /// Opt_w (Landsberg, Sun & Kroening): units run by every failing test first, by fewest passing tests.
    pub optimise: bool,
    /// cl-u refutes at most this many entries, then keeps the last order.
    pub update_bound: usize,
    /// Merge units with identical coverage into one entry.
    pub group: bool,
    /// When failing tests form independent clusters ([`crate::clusters`]), rank each cluster
    /// against the passing tests and interleave the rankings.
    pub clusters: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            smoothing: false,
            clone_failing: 1,
            optimise: false,
            update_bound: 20,
            group: true,
            clusters: false,
        }
    }
}

/// One ambiguity group: units with identical coverage (a single unit when grouping is off).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Unit indices into `Spectra::units`, in code order.
    pub units: Vec<usize>,
    /// The raw spectrum shared by every member.
    pub counts: Counts,
}

/// Where a key ranks before its value is compared: tiers carry the non-numeric parts of a
/// measure exactly, without squeezing them into one float.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Not ranked at all (below every key a measure gives).
    Unranked,
    /// The measure could not score it (CP: a line in no block).
    Unscored,
    /// An ordinary score.
    Score,
    /// Decided before any score: cl-u's inspected prefix (value `-position`), P(f) = 1.
    Certain,
    /// Opt_w's all-failing core (value `np + 2`).
    Core,
    /// Where failing tests' operations panicked, for the stack-first rankings (value: the
    /// position by how many tests point there, then by the base measure's key; higher first).
    Stack,
}

/// A ranking key, compared by tier, then value, then (for a line of an entry, with
/// `--tie-break evidence`) the evidence that orders lines of one entry; higher ranks first.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Key {
    pub tier: Tier,
    pub value: f64,
    /// The same for every entry; only line keys carry a line's evidence.
    pub tie: Tie,
}

impl Key {
    pub const fn new(tier: Tier, value: f64) -> Self {
        Key {
            tier,
            value,
            tie: Tie::NONE,
        }
    }

    /// An ordinary score.
    pub const fn score(value: f64) -> Self {
        Key::new(Tier::Score, value)
    }

    /// Below every key a measure gives.
    pub const UNRANKED: Key = Key::new(Tier::Unranked, f64::NEG_INFINITY);

    /// A total order (floats by `total_cmp`), most suspicious first.
    pub fn cmp_descending(&self, other: &Key) -> std::cmp::Ordering {
        other
            .tier
            .cmp(&self.tier)
            .then_with(|| other.value.total_cmp(&self.value))
            .then_with(|| self.tie.cmp_descending(&other.tie))
    }
}

/// What, beside identical coverage, a line must share with the others of its group: its CP
/// score (when CP splits groups) and how many failing tests' backtraces first enter ranked
/// code at it.
type Split = (Vec<Option<u64>>, u32);

/// CP's block solution and every unit's score.
pub type CpScores = (crate::cp::CpSolution, Vec<Option<f64>>);

/// A group's score under one measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// What the ranking sorts on, descending, lexicographically: a tier (Opt_w's core, cl-u's
    /// inspected prefix, P(f) = 1) and the value within it.
    pub key: Key,
    /// The score shown: the formula's value, or the probability for Doric's measures.
    pub score: f64,
    /// log10 of the probability, for Doric's measures (readable when `score` underflows).
    pub log10: Option<f64>,
}

/// The matrix prepared for scoring.
pub struct Analysis<'a> {
    pub spectra: &'a Spectra,
    pub groups: Vec<Group>,
    /// Test indices of the failing tests (the failing set E).
    pub failing: Vec<usize>,
    /// Per group, positions in `failing` of the failing tests that run it (CSR layout).
    fail_start: Vec<usize>,
    fail_of: Vec<u32>,
    /// Per failing test, the number of units it runs (ρ_k).
    rho: Vec<f64>,
    /// Per group, whether some failing test runs nothing else (Doric: P(f) = 1).
    certain: Vec<bool>,
    total_f: u32,
    /// CP's block scores and per-unit scores per variant ([`CpVariant::index`]), each solved on
    /// first use.
    cp: [std::sync::OnceLock<Option<CpScores>>; CpVariant::COUNT],
    /// Per unit, the evidence that orders an entry's lines (`--tie-break evidence`).
    ties: Option<Vec<Tie>>,
    /// Per unit, the failing tests whose operation panicked there
    /// ([`crate::evidence::operation_panic_points`]).
    points: Vec<u32>,
    /// At function granularity ([`Analysis::by_best_line`]): the same run's line analysis, whose
    /// best line of each function gives the function its key.
    by_line: Option<Box<Analysis<'a>>>,
    /// Per unit, the combined ranking's score, when this analysis' groups are split by it
    /// ([`Analysis::with_combined`]).
    combined: Option<Vec<Option<f64>>>,
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

    /// The analysis the combined ranking ranks: groups split by each line's combined score
    /// (computed over `with_cp(spectra, group, &[])`), so an entry's lines share one score.
    pub fn with_combined(spectra: &'a Spectra, group: bool, tie_break: TieBreak) -> Self {
        let scores = crate::combined::scores(&Self::with_cp(spectra, group, &[]), &crate::combined::Weights::active());
        let mut a = Self::split(spectra, group, &[], Some(&scores)).with_tie_break(tie_break);
        a.combined = Some(scores);
        a
    }

    fn split(spectra: &'a Spectra, group: bool, split_by_cp: &[CpVariant], by_score: Option<&[Option<f64>]>) -> Self {
        let cp: [std::sync::OnceLock<_>; CpVariant::COUNT] = Default::default();
        let unit_cp: Vec<&Vec<Option<f64>>> = split_by_cp
            .iter()
            .filter_map(|&v| {
                cp[v.index()]
                    .get_or_init(|| solve_cp(spectra, v))
                    .as_ref()
                    .map(|(_, u)| u)
            })
            .collect();
        let cp_key = |u: usize| unit_cp.iter().map(|s| s[u].map(f64::to_bits)).collect::<Vec<_>>();
        // A line where failing tests' backtraces first enter ranked code, having panicked on
        // the line's own operation, is its own entry (with the lines of equal coverage that as
        // many tests point at): the stack-first rankings move it, not its group.
        let points = crate::evidence::operation_panic_points(spectra);
        let split = |u: usize| {
            let mut key = cp_key(u);
            if let Some(s) = by_score {
                key.push(s[u].map(f64::to_bits));
            }
            (key, points[u])
        };
        let fail = spectra.failing_mask();
        let pass = spectra.passing_mask();
        let failing: Vec<usize> = (0..spectra.tests.len()).filter(|&t| fail.contains(t)).collect();
        let total_f = failing.len() as u32;
        let total_p = pass.count_and(&pass);

        // Candidates in code order; identical columns share a group.
        let mut groups: Vec<Group> = Vec::new();
        let mut by_column: HashMap<(&[u64], Split), usize> = HashMap::new();
        let mut reps: Vec<&BitSet> = Vec::new();
        for (u, col) in spectra.coverage.iter().enumerate() {
            let ef = col.count_and(&fail);
            if ef == 0 {
                continue;
            }
            if group && let Some(&g) = by_column.get(&(col.words(), split(u))) {
                groups[g].units.push(u);
                continue;
            }
            let ep = col.count_and(&pass);
            if group {
                by_column.insert((col.words(), split(u)), groups.len());
            }
            reps.push(col);
            groups.push(Group {
                units: vec![u],
                counts: Counts::new(ef, ep, total_f - ef, total_p - ep),
            });
        }

        // position[t]: where failing test `t` is in `failing` (None: `t` does not fail).
        let mut position: Vec<Option<u32>> = vec![None; spectra.tests.len()];
        for (i, &t) in failing.iter().enumerate() {
            position[t] = Some(i as u32);
        }
        let mut fail_start = Vec::with_capacity(groups.len() + 1);
        let mut fail_of = Vec::new();
        let mut rho = vec![0.0; failing.len()];
        fail_start.push(0);
        for (g, col) in groups.iter().zip(&reps) {
            for t in col.ones_and(&fail) {
                let k = position[t].expect("only failing tests are visited");
                fail_of.push(k);
                rho[k as usize] += g.units.len() as f64;
            }
            fail_start.push(fail_of.len());
        }
        let mut a = Analysis {
            spectra,
            groups,
            failing,
            fail_start,
            fail_of,
            rho,
            certain: Vec::new(),
            total_f,
            cp,
            ties: None,
            points,
            by_line: None,
            combined: None,
        };
        a.certain = (0..a.groups.len())
            .map(|g| a.fail_tests(g).iter().any(|&k| a.rho[k as usize] == 1.0))
            .collect();
        a
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
        let mut a = Self::with_cp(functions, false, &[]);
        a.by_line = Some(Box::new(lines));
        a
    }

    /// The line analysis: this one, or at function granularity the one its keys come from.
    pub fn lines(&self) -> &Analysis<'a> {
        self.by_line.as_deref().unwrap_or(self)
    }

    /// Each function group's key, score and probability: its best line's under `m`.
    fn best_line_scores(&self, lines: &Analysis, m: &Measure, opts: &Options) -> Vec<Scored> {
        let line_scored = lines.score(m, opts);
        let mut best: Vec<Option<Scored>> = vec![None; self.spectra.units.len()];
        for (g, group) in lines.groups.iter().enumerate() {
            for &u in &group.units {
                let Some(f) = lines.spectra.unit_function.get(u).copied().flatten() else {
                    continue;
                };
                let mut s = line_scored[g];
                if let Some(t) = lines.tie(u) {
                    s.key.tie = t;
                }
                let slot = &mut best[f as usize];
                if slot.is_none_or(|b| s.key.cmp_descending(&b.key).is_lt()) {
                    *slot = Some(s);
                }
            }
        }
        self.groups
            .iter()
            .map(|g| {
                best[g.units[0]].unwrap_or(Scored {
                    key: Key::new(Tier::Unscored, 0.0),
                    score: 0.0,
                    log10: None,
                })
            })
            .collect()
    }

    /// Orders each entry's lines as `tie_break` says: by evidence (read from the spectra's
    /// stacks and sources), or in code order.
    pub fn with_tie_break(mut self, tie_break: TieBreak) -> Self {
        self.ties = (tie_break == TieBreak::Evidence).then(|| crate::evidence::ties(self.spectra));
        self
    }

    /// Group `g`'s lines in the order a person should read them: by evidence with
    /// `with_ties` (code order among equals), else in code order.
    pub fn ordered_units(&self, g: usize) -> Vec<usize> {
        let mut units = self.groups[g].units.clone();
        if let Some(t) = &self.ties {
            units.sort_by(|&a, &b| t[a].cmp_descending(&t[b]));
        }
        units
    }

    /// Unit `u`'s evidence, when entries' lines are ordered by it.
    pub fn tie(&self, u: usize) -> Option<Tie> {
        self.ties.as_ref().map(|t| t[u])
    }

    /// The line to show for group `g`: the first of [`Self::ordered_units`].
    pub fn lead(&self, g: usize) -> usize {
        match &self.ties {
            Some(_) => self.ordered_units(g)[0],
            None => self.groups[g].units[0],
        }
    }

    /// Positions in `failing` of the failing tests that run group `g`.
    fn fail_tests(&self, g: usize) -> &[u32] {
        &self.fail_of[self.fail_start[g]..self.fail_start[g + 1]]
    }

    /// Whether some failing test runs group `g`'s unit and nothing else: P(f) = 1.
    pub fn certain(&self, g: usize) -> bool {
        self.certain[g]
    }

    /// Units run by every failing test (the all-failing core): under a single-fault
    /// assumption the fault is among them.
    pub fn core_units(&self) -> usize {
        self.groups
            .iter()
            .filter(|g| self.total_f > 0 && g.counts.ef == f64::from(self.total_f))
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
            for &k in self.fail_tests(g) {
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

    /// Every group's score under `m`.
    pub fn score(&self, m: &Measure, opts: &Options) -> Vec<Scored> {
        if let Some(lines) = &self.by_line {
            return self.best_line_scores(lines, m, opts);
        }
        let mut scored = match m.kind {
            Kind::Spectrum(f) => self
                .groups
                .iter()
                .map(|g| {
                    let mut c = g.counts.cloned(f64::from(opts.clone_failing.max(1)));
                    if opts.smoothing {
                        c = c.smoothed();
                    }
                    let v = finite(f(c));
                    Scored {
                        key: Key::score(v),
                        score: v,
                        log10: None,
                    }
                })
                .collect(),
            Kind::CausalLikelihood => (0..self.groups.len()).map(|g| self.cl(g, &self.rho)).collect(),
            Kind::FaultLikelihood => (0..self.groups.len()).map(|g| self.fault_likelihood(g)).collect(),
            Kind::CausalLikelihoodUpdating => self.cl_updating(opts.update_bound),
            Kind::Propagation(variant) => self.propagation(variant),
            Kind::StackFirst(base) => return self.stack_first(crate::measures::stack_base(base), opts),
            Kind::Combined => self.combined_scores(),
        };
        if opts.optimise {
            self.optimise(m, &mut scored);
        }
        if opts.clusters
            && let Some(c) = crate::clusters::failure_clusters(self.spectra)
        {
            self.interleave(m, opts, &c, &mut scored);
        }
        scored
    }

    /// Each group keyed by the best position it reaches in any cluster's own ranking under `m`
    /// (ties there stay ties): the first entries of every cluster come first, then the second
    /// ones. The scores shown stay the pooled ranking's.
    fn interleave(&self, m: &Measure, opts: &Options, c: &crate::clusters::Clusters, scored: &mut [Scored]) {
        let single = Options {
            clusters: false,
            ..opts.clone()
        };
        let mut best = vec![f64::INFINITY; self.groups.len()];
        for i in 0..c.clusters.len() {
            let spectra = c.spectra_of(self.spectra, i);
            let mut sub = Analysis::with_cp(&spectra, true, &[]);
            sub.ties = self.ties.clone();
            let ranked = crate::rank::rank_scored(&sub, &sub.score(m, &single));
            let mut rank_of_unit = vec![f64::INFINITY; spectra.units.len()];
            for r in &ranked {
                for &u in &sub.groups[r.group].units {
                    rank_of_unit[u] = r.rank;
                }
            }
            for (g, group) in self.groups.iter().enumerate() {
                best[g] = best[g].min(rank_of_unit[group.units[0]]);
            }
        }
        for (s, b) in scored.iter_mut().zip(best) {
            s.key = Key::score(-b);
        }
    }

    /// Opt_w: a unit run by every failing test scores `np + 2` in a tier above all others;
    /// the rest keep their order, shown scaled into [0, 1] (`atan(w)/π + 1/2` for formulas
    /// that are not probabilities already).
    fn optimise(&self, m: &Measure, scored: &mut [Scored]) {
        let f = f64::from(self.total_f);
        for (g, s) in self.groups.iter().zip(scored) {
            if g.counts.ef == f {
                let v = g.counts.np + 2.0;
                *s = Scored {
                    key: Key::new(Tier::Core, v),
                    score: v,
                    log10: None,
                };
            } else if !m.is_probability() {
                s.score = s.score.atan() / std::f64::consts::PI + 0.5;
            }
        }
    }

    /// `base`'s scores, with the entries where failing tests' operations panicked moved first:
    /// by how many failing tests point there, then by `base`'s key. Scores shown stay `base`'s.
    fn stack_first(&self, base: &Measure, opts: &Options) -> Vec<Scored> {
        let mut scored = self.score(base, opts);
        // Every line of a group has the same count (groups are split by it).
        let points: Vec<u32> = self.groups.iter().map(|g| self.points[g.units[0]]).collect();
        let mut pointed: Vec<usize> = (0..self.groups.len()).filter(|&g| points[g] > 0).collect();
        let order = |a: &usize, b: &usize| {
            points[*b]
                .cmp(&points[*a])
                .then_with(|| scored[*a].key.cmp_descending(&scored[*b].key))
        };
        pointed.sort_by(order);
        // Equal counts with equal base keys stay tied.
        let mut value = pointed.len();
        let mut keys = Vec::with_capacity(pointed.len());
        for (i, &g) in pointed.iter().enumerate() {
            if i > 0 && order(&pointed[i - 1], &g).is_ne() {
                value = pointed.len() - i;
            }
            keys.push((g, Key::new(Tier::Stack, value as f64)));
        }
        for (g, key) in keys {
            scored[g].key = key;
        }
        scored
    }

    /// The combined ranking per group: its lines' best combined score (one score, when the
    /// groups are split by it: [`Analysis::with_combined`]).
    fn combined_scores(&self) -> Vec<Scored> {
        let computed;
        let units = match &self.combined {
            Some(s) => s,
            None => {
                computed = crate::combined::scores(self, &crate::combined::Weights::active());
                &computed
            }
        };
        self.groups
            .iter()
            .map(|g| {
                let v = g.units.iter().filter_map(|&u| units[u]).fold(f64::MIN, f64::max);
                Scored {
                    key: Key::score(v),
                    score: v,
                    log10: None,
                }
            })
            .collect()
    }

    /// CP's solution over the edge profiles (solved once per variant, on first use); `None`
    /// without edges.
    pub fn cp(&self, variant: CpVariant) -> Option<&CpScores> {
        self.cp[variant.index()]
            .get_or_init(|| solve_cp(self.spectra, variant))
            .as_ref()
    }

    /// CP per group: the best BR of a block containing one of its lines. Lines that no block
    /// maps to (or everything, without edges) rank after every line a block does.
    fn propagation(&self, variant: CpVariant) -> Vec<Scored> {
        let units = self.cp(variant).map(|(_, u)| u.as_slice());
        self.groups
            .iter()
            .map(|g| {
                let best = g
                    .units
                    .iter()
                    .filter_map(|&u| units.and_then(|s| s[u]))
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
                match best {
                    Some(v) => Scored {
                        key: Key::score(finite(v)),
                        score: finite(v),
                        log10: None,
                    },
                    None => Scored {
                        key: Key::new(Tier::Unscored, 0.0),
                        score: 0.0,
                        log10: None,
                    },
                }
            })
            .collect()
    }

    /// ln cl of group `g` given the current ρ (Doric Eq. 7, in log space).
    fn ln_cl(&self, g: usize, rho: &[f64]) -> f64 {
        let terms = self.fail_tests(g).iter().map(|&k| ln_term(rho[k as usize]));
        let covering = self.groups[g].counts.ef + self.groups[g].counts.ep;
        log_sum_exp(terms) - covering.ln()
    }

    fn cl(&self, g: usize, rho: &[f64]) -> Scored {
        let ln = self.ln_cl(g, rho);
        probability(Key::score(finite(ln)), ln)
    }

    fn fault_likelihood(&self, g: usize) -> Scored {
        // s = -ln(1 - P(f)) = -Σ ln(1 - P_k): monotone in P(f), exact where P(f) rounds to 1.
        let s: f64 = -self
            .fail_tests(g)
            .iter()
            .map(|&k| ln_not_implicated(self.rho[k as usize]))
            .sum::<f64>();
        if self.certain[g] {
            return Scored {
                key: Key::new(Tier::Certain, 0.0),
                score: 1.0,
                log10: Some(0.0),
            };
        }
        let p = -(-s).exp_m1();
        Scored {
            key: Key::score(s),
            score: p,
            log10: Some(p.log10()),
        }
    }

    /// cl-u: repeatedly take the entry of highest cl (ties in code order), refute it (every
    /// failing test that ran it now runs that many fewer units) and recompute; after
    /// `bound` refutations the rest keep the last computed order.
    fn cl_updating(&self, bound: usize) -> Vec<Scored> {
        let n = self.groups.len();
        let mut rho = self.rho.clone();
        let mut out: Vec<Option<Scored>> = vec![None; n];
        for pos in 0..bound.min(n) {
            let mut best: Option<(usize, f64)> = None;
            for g in (0..n).filter(|&g| out[g].is_none()) {
                let ln = self.ln_cl(g, &rho);
                if best.is_none_or(|(_, b)| ln > b) {
                    best = Some((g, ln));
                }
            }
            let Some((g, ln)) = best else { break };
            out[g] = Some(probability(Key::new(Tier::Certain, -(pos as f64)), ln));
            let size = self.groups[g].units.len() as f64;
            for &k in self.fail_tests(g) {
                rho[k as usize] -= size;
            }
        }
        (0..n).map(|g| out[g].unwrap_or_else(|| self.cl(g, &rho))).collect()
    }
}

/// The analyses a set of measures ranks, so that no measure's entries depend on what else was
/// asked: one whose groups are the lines of identical coverage (every measure but CP's), and
/// one per CP variant among the measures, whose groups CP's own scores also split (lines CP
/// tells apart are its entries, not the others').
pub struct Analyses<'a> {
    base: Analysis<'a>,
    cp: Vec<(CpVariant, Analysis<'a>)>,
    /// The combined ranking's, when it is among the measures.
    combined: Option<Analysis<'a>>,
}

impl<'a> Analyses<'a> {
    /// [`Analysis::prepared`] for `measures`: the base analysis, and one per CP variant.
    pub fn prepared(
        spectra: &'a Spectra,
        lines: Option<&'a Spectra>,
        group: bool,
        measures: &[&Measure],
        tie_break: TieBreak,
    ) -> Self {
        let mut variants: Vec<CpVariant> = Vec::new();
        for v in measures.iter().filter_map(|m| m.cp_variant()) {
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        let combined = measures.iter().any(|m| m.is_combined()).then(|| match lines {
            None => Analysis::with_combined(spectra, group, tie_break),
            Some(lines) => Analysis::by_best_line(spectra, Analysis::with_combined(lines, group, tie_break)),
        });
        Analyses {
            base: Analysis::prepared(spectra, lines, group, &[], tie_break),
            cp: variants
                .into_iter()
                .map(|v| (v, Analysis::prepared(spectra, lines, group, &[v], tie_break)))
                .collect(),
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

/// CP over the spectra's edges: the block solution and every unit's score.
fn solve_cp(spectra: &Spectra, variant: CpVariant) -> Option<CpScores> {
    let e = spectra.edges.as_ref()?;
    let solution = crate::cp::solve_edges(e, &spectra.failing_mask(), &spectra.passing_mask(), variant);
    let mut units = crate::cp::unit_scores(e, &solution, spectra.units.len());
    fill_from_neighbours(spectra, &mut units);
    merge_float_ties(&mut units);
    Some((solution, units))
}

/// CP scores closer than this, relative to the larger magnitude (absolute below 1), are the
/// same score: two blocks that propagate the same suspiciousness along different sums of the
/// same terms differ in the last bits (solver round-off is ~1e-15 relative), and such noise
/// must neither order lines nor split ambiguity groups.
pub const CP_TIE_TOLERANCE: f64 = 1e-12;

/// Gives scores within [`CP_TIE_TOLERANCE`] of each other one value: from the highest down,
/// each score joins the run started by the highest score it is close to (the run's first
/// value is what they all get, so a long chain of near-equal steps cannot drift far).
fn merge_float_ties(scores: &mut [Option<f64>]) {
    let mut distinct: Vec<f64> = scores.iter().flatten().copied().collect();
    distinct.sort_by(|a, b| b.total_cmp(a));
    // By bits: `0.0 == -0.0`, but both must stay keys of `rep`.
    distinct.dedup_by(|a, b| a.to_bits() == b.to_bits());
    let mut rep: HashMap<u64, f64> = HashMap::with_capacity(distinct.len());
    let mut run = f64::NAN;
    for v in distinct {
        let close = (run - v).abs() <= CP_TIE_TOLERANCE * run.abs().max(v.abs()).max(1.0);
        if !close {
            run = v;
        }
        rep.insert(v.to_bits(), run);
    }
    for s in scores.iter_mut().flatten() {
        *s = rep[&s.to_bits()];
    }
}

/// A line the line table gives no instruction (a constant `true`, a `return 0` folded into
/// its neighbour) belongs to the code around it: it takes the score of the nearest line above
/// it in the same function that has one, else the nearest below. Units are in (file, line)
/// order, so a function's lines are consecutive within its file.
fn fill_from_neighbours(spectra: &Spectra, scores: &mut [Option<f64>]) {
    let function = |u: usize| spectra.unit_function.get(u).copied().flatten();
    let same = |a: usize, b: usize| spectra.units[a].file == spectra.units[b].file && function(a) == function(b);
    let known: Vec<Option<f64>> = scores.to_vec();
    for u in 0..scores.len() {
        if known[u].is_some() || function(u).is_none() {
            continue;
        }
        let above = (0..u).rev().take_while(|&v| same(u, v)).find_map(|v| known[v]);
        let below = || (u + 1..scores.len()).take_while(|&v| same(u, v)).find_map(|v| known[v]);
        scores[u] = above.or_else(below);
    }
}

/// A Doric score from a natural-log probability.
fn probability(key: Key, ln: f64) -> Scored {
    Scored {
        key,
        score: ln.exp(),
        log10: Some(finite(ln / std::f64::consts::LN_10)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::measures::find;
    use crate::spectra::tests::{lib_functions, matrix};

    /// Function A holds u1 (run only by the two failing tests) and u2 (run by every test);
    /// function B holds u3 (both failing tests and one passing). Over the functions' own
    /// coverage A is run by every test (Ochiai 0.71) and ranks below B (0.82); by its best line
    /// A scores u1's 1.0 and ranks first, whatever the measure.
    #[test]
    fn functions_rank_by_their_best_line() {
        let mut s = matrix(&["111-", "111-", "010+", "011+"]);
        s.set_functions(lib_functions(&[(1, 2), (3, 3)]));
        assert_eq!(s.unit_function, [Some(0), Some(0), Some(1)]);
        let functions = s.by_function();
        let union = Analysis::new(&functions, true).score(find("ochiai").unwrap(), &Options::default());
        assert!(union[0].score < union[1].score, "{union:?}");
        let a = Analysis::prepared(&functions, Some(&s), true, &[], TieBreak::Code);
        assert_eq!(a.groups.len(), 2, "each function its own entry");
        let line_scores: Vec<f64> = Analysis::new(&s, true)
            .score(find("ochiai").unwrap(), &Options::default())
            .iter()
            .map(|x| x.score)
            .collect();
        let best = a.score(find("ochiai").unwrap(), &Options::default());
        assert_eq!((best[0].score, best[1].score), (line_scores[0], line_scores[2]));
        assert_eq!(best[0].score, 1.0);
        let order: Vec<usize> = crate::rank::rank(&a, find("ochiai").unwrap(), &Options::default())
            .entries
            .iter()
            .map(|e| a.groups[e.group].units[0])
            .collect();
        assert_eq!(order, [0, 1]);
        // The line analysis is what CP and the report's CFG summary read.
        assert!(std::ptr::eq(a.lines().spectra, &s));
    }

    /// Stack-first is its base measure exactly when no failing test panicked on an operation in
    /// ranked code; otherwise the line where such a backtrace first enters ranked code goes
    /// first whatever its base score (its callers do not move), and equal counts with equal
    /// base scores tie.
    #[test]
    fn stack_first_moves_backtrace_entries_first_and_is_its_base_without_them() {
        use crate::rank::rank_scored;
        use crate::spectra::tests::{doric_minmax, frame};
        let o = Options::default();
        let (base, combined) = (find("ochiai").unwrap(), find("stack-ochiai").unwrap());
        let ranks = |s: &Spectra, m: &Measure| {
            let a = Analysis::new(s, true);
            let mut r: Vec<(u32, f64)> = rank_scored(&a, &a.score(m, &o))
                .iter()
                .map(|r| (s.units[a.groups[r.group].units[0]].line, r.rank))
                .collect();
            r.sort_by_key(|&(line, _)| line);
            r
        };
        // Minmax: line 3 is run by every failing test (Ochiai 1), lines 2 and 4 by one failing
        // and one passing test each (Ochiai 1/sqrt(6)); line 1 by no failing test.
        let mut s = doric_minmax();
        assert_eq!(ranks(&s, base), [(2, 2.5), (3, 1.0), (4, 2.5)]);
        assert_eq!(ranks(&s, combined), ranks(&s, base));

        // An index out of bounds on line 4 (called from line 2): line 4 goes above line 3,
        // line 2 stays. A failed assertion there would move nothing.
        let oob = |line: u32| {
            Some(format!(
                "panicked at src/lib.rs:{line}:5:\nindex out of bounds: the len is 0 but the index is 0"
            ))
        };
        s.tests[0].stack = vec![frame(4), frame(2)];
        s.tests[0].message = Some("panicked at src/lib.rs:4:5:\nassertion failed: ok".into());
        assert_eq!(ranks(&s, combined), ranks(&s, base));
        s.tests[0].message = oob(4);
        assert_eq!(ranks(&s, combined), [(2, 3.0), (3, 2.0), (4, 1.0)]);
        let a = Analysis::new(&s, true);
        let scored = a.score(combined, &o);
        assert_eq!(scored.iter().filter(|x| x.key.tier == Tier::Stack).count(), 1);
        // The scores shown stay Ochiai's.
        let shown: Vec<f64> = scored.iter().map(|x| x.score).collect();
        assert_eq!(shown, a.score(base, &o).iter().map(|x| x.score).collect::<Vec<_>>());

        // A panic point leaves its group: under Ochiai the two parts tie, under stack-first the
        // panic point leads.
        let mut pair = matrix(&["11-", "00+"]);
        assert_eq!(Analysis::new(&pair, true).groups.len(), 1);
        pair.tests[0].stack = vec![frame(2)];
        pair.tests[0].message = oob(2);
        assert_eq!(Analysis::new(&pair, true).groups.len(), 2);
        assert_eq!(ranks(&pair, base), [(1, 1.5), (2, 1.5)]);
        assert_eq!(ranks(&pair, combined), [(1, 2.0), (2, 1.0)]);

        // Two failing tests each point at one of the two equally scored lines: they tie.
        s.tests[0].stack = vec![frame(2)];
        s.tests[0].message = oob(2);
        s.tests[1].stack = vec![frame(4)];
        s.tests[1].message = oob(4);
        assert_eq!(ranks(&s, combined), [(2, 1.5), (3, 3.0), (4, 1.5)]);
    }

    /// Lines without a block of their own take their function's neighbours' CP scores: the
    /// nearest above, else the nearest below; lines outside functions stay unscored.
    #[test]
    fn lines_without_blocks_take_their_neighbours_scores() {
        let mut s = matrix(&["1111111-", "0111111+"]);
        s.set_functions(lib_functions(&[(1, 4), (5, 6)]));
        let mut got = vec![None, Some(1.0), None, Some(3.0), None, None, None];
        fill_from_neighbours(&s, &mut got);
        assert_eq!(got, vec![Some(1.0), Some(1.0), Some(1.0), Some(3.0), None, None, None]);
    }

    /// Scores equal but for round-off become one score (the highest of the run); scores
    /// further apart, and unscored lines, are left alone.
    /// Regression (a real crate's CP scores): `0.0` and `-0.0` compare equal but have
    /// different bits; merging them panicked on a missing key.
    #[test]
    fn cp_ties_keep_both_zeros() {
        let mut got = vec![Some(0.0), Some(-0.0), Some(1.0)];
        merge_float_ties(&mut got);
        assert_eq!(got[2], Some(1.0));
        assert_eq!(got[0], got[1]);
    }

    #[test]
    fn cp_scores_within_float_noise_tie() {
        let mut got = vec![
            Some(0.5),
            Some(0.5 - 1e-16),
            None,
            Some(0.5 + 2e-16),
            Some(0.4),
            Some(-1e-17),
            Some(0.0),
            Some(0.5 - 1e-9),
        ];
        merge_float_ties(&mut got);
        let top = 0.5 + 2e-16;
        assert_eq!(
            got,
            vec![
                Some(top),
                Some(top),
                None,
                Some(top),
                Some(0.4),
                Some(0.0),
                Some(0.0),
                Some(0.5 - 1e-9)
            ]
        );
    }

    fn scores(s: &Spectra, name: &str, opts: &Options) -> Vec<f64> {
        let a = Analysis::new(s, opts.group);
        a.score(find(name).unwrap(), opts).iter().map(|x| x.score).collect()
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
    }

    fn ungrouped() -> Options {
        Options {
            group: false,
            ..Options::default()
        }
    }

    /// Doric's minmax (Landsberg & Barr, Fig. 2). u1 is run by no failing test, so it is not a
    /// candidate; its cl and P(f) are 0 by definition.
    #[test]
    fn cl_and_fault_likelihood_on_doric_minmax() {
        let s = matrix(&["0110-", "0011-", "0010-", "1001+", "1100+"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 6.0, 5.0 / 9.0, 1.0 / 6.0]);
        close(
            &scores(&s, "fault-likelihood", &ungrouped()),
            &[2.0 / 3.0, 1.0, 2.0 / 3.0],
        );
        let a = Analysis::new(&s, false);
        assert_eq!((0..3).map(|g| a.certain(g)).collect::<Vec<_>>(), [false, true, false]);
        // Wong2 with the erratum: u4 scores 0, not 2.
        close(&scores(&s, "wong2", &ungrouped()), &[0.0, 3.0, 0.0]);
    }

    /// Vector 2: "certain cause". Spectrum measures tie u2 and u3; cl separates them.
    #[test]
    fn cl_identifies_a_certain_cause_that_spectra_cannot() {
        let s = matrix(&["110-", "001-"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 3.0, 1.0 / 3.0, 1.0]);
        let o = scores(&s, "ochiai", &ungrouped());
        assert_eq!(o[1], o[2]);
    }

    /// Vector 3: "updating". All cl = 1/3; refuting u1 makes u2 certain.
    #[test]
    fn cl_u_refutes_the_first_unit_and_promotes_its_partner() {
        let s = matrix(&["0011-", "1100-"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 3.0; 4]);
        let a = Analysis::new(&s, false);
        let u = a.score(find("cl-u").unwrap(), &ungrouped());
        // u1 is inspected first (ties in code order), then u2 at cl 1.
        assert_eq!(u[0].key, Key::new(Tier::Certain, 0.0));
        assert_eq!(u[1].key, Key::new(Tier::Certain, -1.0));
        assert!((u[1].score - 1.0).abs() < 1e-12);
        // With a bound of 1, u2..u4 keep the order computed after refuting u1.
        let one = a.score(
            find("cl-u").unwrap(),
            &Options {
                update_bound: 1,
                ..ungrouped()
            },
        );
        close(
            &one.iter().map(|x| x.score).collect::<Vec<_>>()[1..],
            &[1.0, 1.0 / 3.0, 1.0 / 3.0],
        );
    }

    #[test]
    fn identical_columns_form_one_group() {
        let s = matrix(&["0011-", "1100-"]);
        let a = Analysis::new(&s, true);
        assert_eq!(
            a.groups.iter().map(|g| g.units.clone()).collect::<Vec<_>>(),
            [vec![0, 1], vec![2, 3]]
        );
        // cl still counts every unit a test runs: 1 / (2^2 - 1).
        close(&scores(&s, "cl", &Options::default()), &[1.0 / 3.0, 1.0 / 3.0]);
    }

    /// Algorithm 1 on the single-fault-optimal study's failing tests picks t1 then t2; Naish-I on
    /// the chosen failing tests alone ties C1 and C4 at 2.0.
    #[test]
    fn algorithm1_chooses_single_fault_optimal_failing_tests() {
        let rows = ["10110-", "10011-", "10010-"];
        let s = matrix(&rows);
        let a = Analysis::new(&s, false);
        assert_eq!(a.core_witnesses(), [0, 1]);
        assert_eq!(a.core_units(), 2);
        let chosen = matrix(&rows[..2]);
        let naish = scores(&chosen, "naish2", &ungrouped());
        // Candidates: C1, C3, C4, C5.
        close(&naish, &[2.0, 1.0, 2.0, 1.0]);
    }

    #[test]
    fn opt_w_puts_the_core_first_by_fewest_passing_tests() {
        let s = crate::spectra::tests::sfo_minmax();
        let a = Analysis::new(&s, false);
        let opt = Options {
            optimise: true,
            ..ungrouped()
        };
        let sc = a.score(find("jaccard").unwrap(), &opt);
        // C1 ⟨3,0,7,0⟩ and C4 ⟨3,0,1,6⟩ form the core: np + 2 = 2 and 8.
        // Candidates are C1, C3, C4, C5 (C2 is run by no failing test).
        assert_eq!(
            (sc[0].key, sc[2].key),
            (Key::new(Tier::Core, 2.0), Key::new(Tier::Core, 8.0))
        );
        assert!(sc[1].key.tier == Tier::Score && (0.0..=1.0).contains(&sc[1].score));
    }
}

/// Property tests on random matrices (deterministic seeds, so CI is reproducible).
#[cfg(test)]
mod properties {
    use super::*;
    use crate::measures::{Cloning, all, find};
    use crate::rank::rank_scored;
    use crate::spectra::tests::{Rng, matrix};

    /// A random matrix with at least one failing test: up to 24 tests over up to 16 units.
    fn random_matrix(rng: &mut Rng) -> Spectra {
        let tests = 2 + rng.below(23) as usize;
        let units = 1 + rng.below(16) as usize;
        let density = 1 + rng.below(9);
        let rows: Vec<String> = (0..tests)
            .map(|t| {
                let mut r: String = (0..units)
                    .map(|_| if rng.below(10) < density { '1' } else { '0' })
                    .collect();
                r.push(if t == 0 || rng.below(4) == 0 { '-' } else { '+' });
                r
            })
            .collect();
        matrix(&rows.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn matrices(seed: u64, n: usize) -> Vec<Spectra> {
        let mut rng = Rng(seed);
        (0..n).map(|_| random_matrix(&mut rng)).collect()
    }

    /// Both clauses of single-fault optimality (Landsberg, Sun & Kroening) for one scored matrix.
    fn single_fault_optimal(a: &Analysis, s: &[Scored]) -> Result<(), String> {
        let f = a.failing.len() as f64;
        for (i, gi) in a.groups.iter().enumerate() {
            for (j, gj) in a.groups.iter().enumerate() {
                let better = s[i].key > s[j].key;
                let (ci, cj) = (gi.counts, gj.counts);
                if ci.ef == f && cj.ef < f && !better {
                    return Err(format!("{ci:?} not above {cj:?}"));
                }
                if ci.ef == f && cj.ef == f && ci.ep < cj.ep && !better {
                    return Err(format!("{ci:?} not above {cj:?} (fewer passing tests)"));
                }
            }
        }
        Ok(())
    }

    #[test]
    fn naish1_naish2_and_every_optimised_measure_are_single_fault_optimal() {
        let ungrouped = Options {
            group: false,
            ..Options::default()
        };
        let optimised = Options {
            optimise: true,
            ..ungrouped.clone()
        };
        for (i, s) in matrices(0x9e37_79b9_7f4a_7c15, 300).iter().enumerate() {
            let a = Analysis::new(s, false);
            for name in ["naish1", "naish2"] {
                single_fault_optimal(&a, &a.score(find(name).unwrap(), &ungrouped))
                    .unwrap_or_else(|e| panic!("{name} on matrix {i}: {e}"));
            }
            for m in all() {
                single_fault_optimal(&a, &a.score(m, &optimised))
                    .unwrap_or_else(|e| panic!("optimised {} on matrix {i}: {e}", m.name));
            }
        }
    }

    #[test]
    fn preserved_measures_rank_identically_with_seven_clones() {
        let once = Options::default();
        let seven = Options {
            clone_failing: 7,
            ..Options::default()
        };
        let preserved: Vec<_> = all().filter(|m| m.cloning == Some(Cloning::Preserved)).collect();
        assert_eq!(preserved.len(), 10);
        for (i, s) in matrices(0xdead_beef_cafe_f00d, 300).iter().enumerate() {
            let a = Analysis::new(s, true);
            for m in &preserved {
                let order = |o: &Options| {
                    rank_scored(&a, &a.score(m, o))
                        .iter()
                        .map(|r| (r.group, r.rank))
                        .collect::<Vec<_>>()
                };
                assert_eq!(order(&once), order(&seven), "{} on matrix {i}", m.name);
            }
        }
    }

    #[test]
    fn no_ranking_holds_nan_or_infinity_under_any_option() {
        let variants = [
            Options::default(),
            Options {
                smoothing: true,
                clone_failing: 3,
                ..Options::default()
            },
            Options {
                optimise: true,
                group: false,
                update_bound: 3,
                ..Options::default()
            },
        ];
        for s in matrices(0x0123_4567_89ab_cdef, 150) {
            let a = Analysis::new(&s, true);
            for m in all() {
                for o in &variants {
                    for x in rank_scored(&a, &a.score(m, o)) {
                        assert!(x.score.is_finite() && x.rank.is_finite(), "{} gave {x:?}", m.name);
                    }
                }
            }
        }
    }

    /// cl in log space equals Eq. 7 computed directly, wherever 2^-ρ does not underflow.
    #[test]
    fn log_space_cl_agrees_with_the_direct_formula() {
        for s in matrices(0x5151_5151_2323_2323, 300) {
            let a = Analysis::new(&s, false);
            let cl = a.score(find("cl").unwrap(), &Options::default());
            let fail = s.failing_mask();
            let rho: Vec<i32> = (0..s.tests.len())
                .map(|t| s.coverage.iter().filter(|c| c.contains(t)).count() as i32)
                .collect();
            for (g, scored) in a.groups.iter().zip(&cl) {
                let col = &s.coverage[g.units[0]];
                let num: f64 = col.ones_and(&fail).map(|t| 1.0 / (2f64.powi(rho[t]) - 1.0)).sum();
                let direct = num / (g.counts.ef + g.counts.ep);
                assert!(
                    (scored.score - direct).abs() <= 1e-12 * direct,
                    "{} vs {direct}",
                    scored.score
                );
            }
        }
    }
}
