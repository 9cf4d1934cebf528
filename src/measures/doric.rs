//! Doric's probabilistic measures (Landsberg & Barr, *Doric: Foundations for Statistical Fault
//! Localisation*), in log space.
//!
//! A failing test k that runs `rho_k` units explains the failure by one of the `2^rho_k - 1`
//! non-empty sets of them. Its contribution to a unit's causal likelihood is
//! `t_k = 1 / (2^rho_k - 1)`, which underflows f64 past `rho ≈ 1074`, so every term is kept
//! as `ln t_k` and summed with log-sum-exp. The matrix-level computation (which tests run
//! which units, updating) is in [`crate::analysis`]; these are the per-test terms.

use std::f64::consts::LN_2;

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
