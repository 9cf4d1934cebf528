//! The combined ranking: one linear score per line over the evidence the other rankings use one
//! piece at a time.
//!
//! Ochiai orders entries by coverage alone; the stack-first rankings move only the lines where a
//! failing test's own operation panicked; everything else a run knows (where the backtraces run,
//! which lines sit just above a panic, what a line's text is, how large its function is, whether
//! the block below a condition is entered only by failing tests) orders lines inside one entry
//! only. The combined ranking weighs all of it at once: each line gets the features below, and
//! its score is `w · x` with weights fitted by `cargo xtask fit` on the project's two benchmarks
//! (injected faults and real panics) with leave-one-crate-out cross-validation, committed as
//! data (`combined-weights.json`). Learning to rank from several families of evidence is what
//! Zou, Liang, Xiong, Ernst and Zhang ("An empirical study of fault localization families and
//! their combinations") and Li, Li, Zhang and Zhang ("DeepFL") found to beat every
//! single family; this is its smallest form, a linear ranker whose every weight can be read.
//!
//! Every feature is read from what a run saves (coverage, backtraces and panic messages, each
//! line's kind and operators), so a saved file ranks the same wherever it is read. When no test
//! panics in ranked code (a test's assertion failed) the stack features are all zero and the
//! spectrum features decide.

use std::collections::HashMap;

use serde::Deserialize;

use crate::analysis::Analysis;
use crate::evidence::{self, LineKind};

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

/// The features of every ranked line of an analysis.
#[derive(Clone, Debug, Default)]
pub struct LineFeatures {
    /// Unit indices into the analysis' spectra, in group order.
    pub units: Vec<usize>,
    /// One row per unit of `units`.
    pub rows: Vec<[f64; N]>,
}

/// The features of every line `a` ranks.
pub fn features(a: &Analysis) -> LineFeatures {
    let s = a.spectra;
    let ties = evidence::ties(s);
    let kinds: Vec<LineKind> = ties.iter().map(|t| t.kind).collect();
    let points = evidence::panic_points(s);
    let op_points = evidence::operation_panic_points(s);
    let any_reach = evidence::any_panic_reach(s, &kinds);
    let failing = a.failing.len().max(1) as f64;

    let mut ochiai = vec![None; s.units.len()];
    for g in &a.groups {
        let c = g.counts;
        let v = crate::measures::catalogue::ochiai(c);
        for &u in &g.units {
            ochiai[u] = Some(v);
        }
    }
    let mut levels: Vec<f64> = ochiai.iter().flatten().copied().collect();
    levels.sort_by(|x, y| y.total_cmp(x));
    levels.dedup();
    let guard = guards(a, &ochiai, &kinds);
    let stack_functions = stack_function_weights(a);

    let reach = |r: u32| if r == 0 { 0.0 } else { 1.0 / f64::from(r) };
    let mut out = LineFeatures::default();
    for g in &a.groups {
        let c = g.counts;
        for &u in &g.units {
            let o = ochiai[u].unwrap_or(0.0);
            let level = levels.partition_point(|&l| l > o);
            let t = ties[u];
            out.units.push(u);
            out.rows.push([
                o,
                1.0 / (1.0 + level as f64),
                crate::measures::div(c.ef, c.ef + c.nf),
                f64::from(u8::from(c.nf == 0.0)),
                f64::from(u8::from(c.ep == 0.0)),
                crate::measures::div(c.ep, c.ep + c.np),
                (t.stack / failing).min(1.0),
                s.unit_function.get(u).copied().flatten().map_or(0.0, |f| {
                    (stack_functions.get(&f).copied().unwrap_or(0.0) / failing).min(1.0)
                }),
                (f64::from(points[u]) / failing).min(1.0),
                (f64::from(op_points[u]) / failing).min(1.0),
                t.near,
                reach(any_reach[u]),
                f64::from(u8::from(t.kind == LineKind::Structural)),
                t.prior,
                f64::from(u8::from(t.operates)),
                f64::from(u8::from(guard[u])),
            ]);
        }
    }
    out
}

/// Per function, Σ over failing tests of `1 / (1 + depth)` of the function's first frame on the
/// test's backtrace (depth counted over frames on ranked lines, innermost 0).
fn stack_function_weights(a: &Analysis) -> HashMap<u32, f64> {
    let s = a.spectra;
    let mut w: HashMap<u32, f64> = HashMap::new();
    // The functions already counted for the current test (frames come test by test).
    let mut seen: Vec<u32> = Vec::new();
    evidence::ranked_frames(s, |_, u, depth| {
        if depth == 0 {
            seen.clear();
        }
        if let Some(Some(func)) = s.unit_function.get(u)
            && !seen.contains(func)
        {
            seen.push(*func);
            *w.entry(*func).or_default() += 1.0 / f64::from(1 + depth);
        }
    });
    w
}

/// Per unit: whether the next ranked behavioural line of its function (in the same file, below
/// it) has a higher Ochiai score. A faulty condition lets failing tests into the block below it,
/// so the block's first line outscores the condition that is the fault.
fn guards(a: &Analysis, ochiai: &[Option<f64>], kinds: &[LineKind]) -> Vec<bool> {
    let s = a.spectra;
    let mut by_function: HashMap<u32, Vec<usize>> = HashMap::new();
    for g in &a.groups {
        for &u in &g.units {
            if let Some(Some(f)) = s.unit_function.get(u)
                && kinds[u] == LineKind::Behavioural
            {
                by_function.entry(*f).or_default().push(u);
            }
        }
    }
    let mut guard = vec![false; s.units.len()];
    for units in by_function.values_mut() {
        units.sort_by(|&x, &y| (&s.units[x].file, s.units[x].line).cmp(&(&s.units[y].file, s.units[y].line)));
        for w in units.windows(2) {
            let (u, v) = (w[0], w[1]);
            if s.units[u].file == s.units[v].file && ochiai[v].unwrap_or(0.0) > ochiai[u].unwrap_or(0.0) {
                guard[u] = true;
            }
        }
    }
    guard
}

/// The weights of a combined ranking, as `cargo xtask fit` writes them.
#[derive(Clone, Debug, Deserialize)]
pub struct Weights {
    /// The feature each weight is for, in [`FEATURES`] order.
    pub features: Vec<String>,
    pub weights: Vec<f64>,
}

thread_local! {
    /// Weights that replace the committed ones on this thread ([`with_weights`]).
    static OVERRIDE: std::cell::RefCell<Option<Weights>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with `w` in place of the committed weights on this thread: how an evaluation ranks
/// a crate by weights fitted without it (`cargo sfl eval --weights`, the benchmarks'
/// cross-validation).
pub fn with_weights<R>(w: Weights, f: impl FnOnce() -> R) -> R {
    let before = replace_weights(Some(w));
    let out = f();
    replace_weights(before);
    out
}

/// Puts `w` in place of the committed weights on this thread (`None`: the committed ones
/// again) and returns what was in place.
pub fn replace_weights(w: Option<Weights>) -> Option<Weights> {
    OVERRIDE.with(|o| o.replace(w))
}

impl Weights {
    /// The weights in force: [`with_weights`]' on this thread, else the committed ones.
    pub fn active() -> Weights {
        OVERRIDE
            .with(|o| o.borrow().clone())
            .unwrap_or_else(|| Self::committed().clone())
    }

    /// Reads weights written by `cargo xtask fit`, checked against the features.
    pub fn load(path: &std::path::Path) -> Result<Weights, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let w: Weights = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        w.check().map_err(|e| format!("{}: {e}", path.display()))?;
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
    pub fn check(&self) -> Result<(), String> {
        if self.features != FEATURES {
            return Err(format!("the weights are for {:?}, not {:?}", self.features, FEATURES));
        }
        if self.weights.len() != N || self.weights.iter().any(|w| !w.is_finite()) {
            return Err("the weights must be one finite number per feature".into());
        }
        Ok(())
    }

    /// `w · x`.
    pub fn score(&self, x: &[f64; N]) -> f64 {
        self.weights.iter().zip(x).map(|(w, x)| w * x).sum()
    }
}

/// Every unit's combined score under `w` (`None` for units `a` does not rank).
pub fn scores(a: &Analysis, w: &Weights) -> Vec<Option<f64>> {
    let f = features(a);
    let mut out = vec![None; a.spectra.units.len()];
    for (u, x) in f.units.iter().zip(&f.rows) {
        out[*u] = Some(crate::measures::finite(w.score(x)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::tests::{doric_minmax, frame, lib_functions, matrix};

    #[test]
    fn committed_weights_name_every_feature() {
        assert_eq!(FEATURES.len(), MEANINGS.len());
        Weights::committed().check().unwrap();
    }

    /// Doric's minmax: the fault (u3, run only by failing tests) has the top Ochiai level, and
    /// the backtrace features are zero without backtraces.
    #[test]
    fn features_of_doric_minmax() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let f = features(&a);
        let row = |u: usize| f.rows[f.units.iter().position(|&x| x == u).unwrap()];
        assert_eq!(row(2)[1], 1.0);
        assert!(row(1)[1] < 1.0);
        for u in [1, 2, 3] {
            assert_eq!(row(u)[6..12], [0.0; 6]);
        }
        // u1 is run by no failing test: not ranked.
        assert!(!f.units.contains(&0));
    }

    /// A condition whose next line in its function failing tests reach more is a guard.
    #[test]
    fn a_condition_above_a_block_failing_tests_enter_is_a_guard() {
        // Lines 1-4 in one function: line 3 is run only by the failing test.
        let mut s = matrix(&["1101+", "1111-", "1101+"]);
        s.set_functions(lib_functions(&[(1, 4)]));
        let a = Analysis::new(&s, false);
        let f = features(&a);
        let guard = FEATURES.iter().position(|&n| n == "guard").unwrap();
        let column: Vec<f64> = (0..4)
            .map(|u| f.rows[f.units.iter().position(|&x| x == u).unwrap()][guard])
            .collect();
        assert_eq!(column, [0.0, 1.0, 0.0, 0.0]);
    }

    /// The panicking line is a panic point, and the lines above it in its function are near it.
    #[test]
    fn panic_features_follow_the_backtrace() {
        let mut s = matrix(&["1111-", "1111+"]);
        s.set_functions(lib_functions(&[(1, 4)]));
        s.tests[0].stack = vec![frame(3)];
        s.tests[0].message =
            Some("panicked at src/lib.rs:3:5:\nindex out of bounds: the len is 0 but the index is 0".into());
        let a = Analysis::new(&s, false);
        let f = features(&a);
        let col = |name: &str| {
            let i = FEATURES.iter().position(|&n| n == name).unwrap();
            (0..4)
                .map(|u| f.rows[f.units.iter().position(|&x| x == u).unwrap()][i])
                .collect::<Vec<f64>>()
        };
        assert_eq!(col("panic_point"), [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(col("operation_panic_point"), [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(col("above_operation_panic"), [1.0 / 3.0, 0.5, 1.0, 0.0]);
        assert_eq!(col("stack"), [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(col("stack_function"), [1.0; 4]);
    }

    #[test]
    fn weights_can_be_replaced_on_one_thread() {
        let mut w = Weights::committed().clone();
        w.weights = vec![0.5; N];
        let inside = with_weights(w.clone(), Weights::active);
        assert_eq!(inside.weights, w.weights);
        assert_eq!(Weights::active().weights, Weights::committed().weights);
    }

    #[test]
    fn scores_are_the_dot_product() {
        let w = Weights {
            features: FEATURES.iter().map(|s| s.to_string()).collect(),
            weights: (0..N).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect(),
        };
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let sc = scores(&a, &w);
        assert!(sc[2].unwrap() > sc[1].unwrap());
        assert_eq!(sc[0], None);
    }
}
