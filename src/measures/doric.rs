//! Doric's probabilistic measures (Landsberg & Barr, *Doric: Foundations for Statistical Fault
//! Localisation*), in log space: the causal likelihood cl (Eq. 7), the fault likelihood P(f)
//! (Eq. 4-6) and cl with updating, over which failing tests run which entries ([`Incidence`]).
//!
//! A failing test k that runs `rho_k` units explains the failure by one of the `2^rho_k - 1`
//! non-empty sets of them. Its contribution to a unit's causal likelihood is
//! `t_k = 1 / (2^rho_k - 1)`, which underflows f64 past `rho ≈ 1074`, so every term is kept
//! as `ln t_k` and summed with log-sum-exp.

use std::f64::consts::LN_2;

use super::measure::finite;
use crate::score::{Key, Scored, Tier};

/// Which failing tests run which entries (ambiguity groups), and how many units each failing
/// test runs: what Doric's measures read of the matrix.
#[derive(Clone, Debug, Default)]
pub struct Incidence {
    /// Per entry, positions among the failing tests of those that run it (CSR layout).
    start: Vec<usize>,
    of: Vec<u32>,
    /// Per entry, its number of units and how many tests run it (`ef + ep`).
    size: Vec<f64>,
    covering: Vec<f64>,
    /// Per failing test, the number of units it runs (ρ_k).
    rho: Vec<f64>,
    /// Per entry, whether some failing test runs nothing else (P(f) = 1).
    certain: Vec<bool>,
}

impl Incidence {
    /// No entries yet, over `failing` failing tests.
    pub fn new(failing: usize) -> Self {
        Incidence {
            start: vec![0],
            rho: vec![0.0; failing],
            ..Default::default()
        }
    }

    /// Adds the next entry: `size` units run by `covering` tests, among them the failing tests
    /// at positions `tests`.
    pub fn push(&mut self, size: usize, covering: f64, tests: impl Iterator<Item = u32>) {
        for k in tests {
            self.of.push(k);
            self.rho[k as usize] += size as f64;
        }
        self.start.push(self.of.len());
        self.size.push(size as f64);
        self.covering.push(covering);
    }

    /// Done adding entries: decides which are certain.
    pub fn finish(mut self) -> Self {
        self.certain = (0..self.size.len())
            .map(|g| self.fail_tests(g).iter().any(|&k| self.rho[k as usize] == 1.0))
            .collect();
        self
    }

    /// Positions among the failing tests of those that run entry `g`.
    pub fn fail_tests(&self, g: usize) -> &[u32] {
        &self.of[self.start[g]..self.start[g + 1]]
    }

    /// Whether some failing test runs entry `g`'s units and nothing else: P(f) = 1.
    pub fn certain(&self, g: usize) -> bool {
        self.certain[g]
    }

    /// ln cl of entry `g` given the current ρ (Doric Eq. 7, in log space).
    fn ln_cl(&self, g: usize, rho: &[f64]) -> f64 {
        let terms = self.fail_tests(g).iter().map(|&k| ln_term(rho[k as usize]));
        log_sum_exp(terms) - self.covering[g].ln()
    }

    fn cl_at(&self, g: usize, rho: &[f64]) -> Scored {
        let ln = self.ln_cl(g, rho);
        probability(Key::score(finite(ln)), ln)
    }

    /// Every entry's causal likelihood cl.
    pub fn cl(&self) -> Vec<Scored> {
        (0..self.size.len()).map(|g| self.cl_at(g, &self.rho)).collect()
    }

    /// Every entry's fault likelihood P(f).
    pub fn fault_likelihood(&self) -> Vec<Scored> {
        (0..self.size.len()).map(|g| self.fault_likelihood_of(g)).collect()
    }

    fn fault_likelihood_of(&self, g: usize) -> Scored {
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
    pub fn cl_updating(&self, bound: usize) -> Vec<Scored> {
        let n = self.size.len();
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
            for &k in self.fail_tests(g) {
                rho[k as usize] -= self.size[g];
            }
        }
        (0..n).map(|g| out[g].unwrap_or_else(|| self.cl_at(g, &rho))).collect()
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

/// `ln(1 / (2^rho - 1)) = -rho ln 2 - ln(1 - 2^-rho)`, for `rho >= 1`.
pub fn ln_term(rho: f64) -> f64 {
    -rho * LN_2 - (-(-rho).exp2()).ln_1p()
}

/// `ln(1 - P_k(h)) = ln((2^(rho-1) - 1) / (2^rho - 1))`: the log-probability that a failing
/// test running `rho` units does *not* implicate a given one of them. `-∞` when `rho = 1`.
pub fn ln_not_implicated(rho: f64) -> f64 {
    if rho <= 1.0 {
        f64::NEG_INFINITY
    } else {
        -LN_2 + (-(1.0 - rho).exp2()).ln_1p() - (-(-rho).exp2()).ln_1p()
    }
}

/// `ln Σ exp(x_i)` without overflow or underflow; `-∞` for no terms.
pub fn log_sum_exp(xs: impl Iterator<Item = f64> + Clone) -> f64 {
    let max = xs.clone().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        return max;
    }
    max + xs.map(|x| (x - max).exp()).sum::<f64>().ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_the_direct_formula_where_it_does_not_underflow() {
        for rho in 1..60 {
            let r = f64::from(rho);
            let direct = 1.0 / (2f64.powi(rho) - 1.0);
            assert!((ln_term(r).exp() - direct).abs() <= 1e-12 * direct, "rho {rho}");
            let p = 2f64.powi(rho - 1) / (2f64.powi(rho) - 1.0);
            if rho > 1 {
                assert!((ln_not_implicated(r).exp() - (1.0 - p)).abs() < 1e-12, "rho {rho}");
            }
        }
        assert_eq!(ln_not_implicated(1.0), f64::NEG_INFINITY);
    }

    #[test]
    fn huge_coverage_stays_finite_and_ordered() {
        // 2^-5000 underflows f64; its logarithm does not.
        let (a, b) = (ln_term(5000.0), ln_term(5001.0));
        assert!(a.is_finite() && b.is_finite() && a > b);
        assert!((a - (-5000.0 * LN_2)).abs() < 1e-9);
    }

    #[test]
    fn log_sum_exp_adds_in_linear_space() {
        let xs = [0.5f64.ln(), 0.25f64.ln(), 0.125f64.ln()];
        assert!((log_sum_exp(xs.iter().copied()).exp() - 0.875).abs() < 1e-15);
        assert_eq!(log_sum_exp(std::iter::empty()), f64::NEG_INFINITY);
        let tiny = [-3000.0, -3000.0];
        assert!((log_sum_exp(tiny.iter().copied()) - (-3000.0 + LN_2)).abs() < 1e-12);
    }
}
