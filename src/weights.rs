//! The combined ranking's features and their weights, as `cargo xtask fit` writes them: the
//! committed ones (`combined-weights.json`), or a file given to `cargo sfl eval --weights`.
//! The features themselves are computed by the combined ranking (`combined`).

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The features of a line, in the order of the weights.
pub const FEATURES: [&str; N] = [
    "ochiai",
    "ochiai_level",
    "failing_share",
    "every_failing",
    "only_failing",
    "passing_share",
    "stack",
    "stack_function",
    "panic_point",
    "operation_panic_point",
    "above_operation_panic",
    "above_panic",
    "structural",
    "function_prior",
    "operates",
    "guard",
];

/// How many features a line has.
pub const N: usize = 16;

/// What each feature is, for `--help`, DESIGN.md and the fit's report.
pub const MEANINGS: [&str; N] = [
    "Ochiai's score of the line's coverage: ef / sqrt((ef + nf)(ef + ep))",
    "1 / (1 + k): k distinct Ochiai scores rank above the line's",
    "the share of failing tests that ran the line: ef / (ef + nf)",
    "1 when every failing test ran the line",
    "1 when no passing test ran the line",
    "the share of passing tests that ran the line: ep / (ep + np)",
    "the line's weight on failing tests' backtraces, Σ 1 / (1 + depth), over the failing tests",
    "the same for the line's function: Σ over failing tests of 1 / (1 + depth) of the function's first frame, over the failing tests",
    "the share of failing tests whose backtrace first enters ranked code at the line",
    "the share of failing tests whose own operation panicked on the line (index, overflow, a std check)",
    "1 / (1 + d) for a line d lines above an operation panic in its function, run by that test",
    "the same for any panic in ranked code (an unwrap, an assert! of the crate's own)",
    "1 when the line only opens or closes a block, declares an item, or is an attribute",
    "1 / n for a line of a function with n ranked lines",
    "1 when the line compares, computes, indexes or assigns with an operator",
    "1 when the next ranked line of its function scores higher under Ochiai: a condition above a block that failing tests enter more",
];

/// The weights of a combined ranking, as `cargo xtask fit` writes them.
#[derive(Clone, Debug, Deserialize)]
pub struct Weights {
    /// The feature each weight is for, in [`FEATURES`] order.
    pub features: Vec<String>,
    pub weights: Vec<f64>,
}

/// Why a weights file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WeightsError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Malformed { path: PathBuf, source: serde_json::Error },
    #[error("{}: {source}", path.display())]
    Invalid { path: PathBuf, source: InvalidWeights },
}

/// What is wrong with weights that parse.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum InvalidWeights {
    #[error("the weights are for {found:?}, not {:?}", FEATURES)]
    OtherFeatures { found: Vec<String> },
    #[error("the weights must be one finite number per feature")]
    NotOnePerFeature,
}

impl Weights {
    /// Reads weights written by `cargo xtask fit`, checked against the features.
    pub fn load(path: &Path) -> Result<Weights, WeightsError> {
        let at = || path.to_path_buf();
        let text = std::fs::read_to_string(path).map_err(|source| WeightsError::Read { path: at(), source })?;
        let w: Weights =
            serde_json::from_str(&text).map_err(|source| WeightsError::Malformed { path: at(), source })?;
        w.check()
            .map_err(|source| WeightsError::Invalid { path: at(), source })?;
        Ok(w)
    }

    /// The committed weights (`src/combined-weights.json`).
    pub fn committed() -> &'static Weights {
        static W: std::sync::OnceLock<Weights> = std::sync::OnceLock::new();
        W.get_or_init(|| {
            let w: Weights = serde_json::from_str(include_str!("combined-weights.json"))
                .expect("the committed weights parse (unit-tested)");
            assert!(
                w.check().is_ok(),
                "the committed weights name every feature (unit-tested)"
            );
            w
        })
    }

    /// Whether the weights are one per feature, in order, and finite.
    pub fn check(&self) -> Result<(), InvalidWeights> {
        if self.features != FEATURES {
            return Err(InvalidWeights::OtherFeatures {
                found: self.features.clone(),
            });
        }
        if self.weights.len() != N || self.weights.iter().any(|w| !w.is_finite()) {
            return Err(InvalidWeights::NotOnePerFeature);
        }
        Ok(())
    }

    /// `w · x`.
    pub fn score(&self, x: &[f64; N]) -> f64 {
        self.weights.iter().zip(x).map(|(w, x)| w * x).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_weights_name_every_feature() {
        assert_eq!(FEATURES.len(), MEANINGS.len());
        Weights::committed().check().unwrap();
    }

    /// The messages a user reads after `--weights FILE`.
    #[test]
    fn unusable_weights_say_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.json");
        let missing = Weights::load(&path).unwrap_err().to_string();
        assert!(
            missing.starts_with(&format!("cannot read {}: ", path.display())),
            "{missing}"
        );
        std::fs::write(&path, r#"{"features": ["ochiai"], "weights": [1.0]}"#).unwrap();
        let other = Weights::load(&path).unwrap_err().to_string();
        assert_eq!(
            other,
            format!(
                "{}: the weights are for [\"ochiai\"], not {:?}",
                path.display(),
                FEATURES
            )
        );
        let mut w = Weights::committed().clone();
        w.weights[0] = f64::NAN;
        assert_eq!(
            w.check().unwrap_err().to_string(),
            "the weights must be one finite number per feature"
        );
    }
}
