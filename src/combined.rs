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

use crate::analysis::Analysis;
use crate::evidence::{self, LineKind, TieBreak};
use crate::score::Scored;
use crate::spectra::Spectra;

pub use crate::weights::{FEATURES, MEANINGS, N, Weights};

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
    let lines = evidence::line_evidence(s);
    let kinds: Vec<LineKind> = lines.iter().map(|e| e.kind).collect();
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
            let t = lines[u];
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

/// Every unit's combined score under `w` (`None` for units `a` does not rank).
pub fn scores(a: &Analysis, w: &Weights) -> Vec<Option<f64>> {
    let f = features(a);
    let mut out = vec![None; a.spectra.units.len()];
    for (u, x) in f.units.iter().zip(&f.rows) {
        out[*u] = Some(crate::measures::finite(w.score(x)));
    }
    out
}

/// The analysis the combined ranking ranks: groups split by each line's combined score under
/// `w` (computed over `Analysis::new(spectra, group)`), so an entry's lines share one score.
pub fn analysis<'a>(spectra: &'a Spectra, group: bool, tie_break: TieBreak, w: &'a Weights) -> Analysis<'a> {
    let scores = scores(&Analysis::new(spectra, group), w);
    Analysis::with_unit_scores(spectra, group, scores, w).with_tie_break(tie_break)
}

/// The combined ranking per group: its lines' best combined score (one score, when the groups
/// are split by it: [`analysis`]).
pub fn group_scores(a: &Analysis) -> Vec<Scored> {
    let computed;
    let units = match a.unit_scores() {
        Some(s) => s,
        None => {
            computed = scores(a, a.weights());
            &computed
        }
    };
    a.groups
        .iter()
        .map(|g| Scored::plain(g.units.iter().filter_map(|&u| units[u]).fold(f64::MIN, f64::max)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::tests::{doric_minmax, frame, lib_functions, matrix};

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

    /// The weights an analysis is prepared with are the ones its combined scores use, and an
    /// analysis prepared without any uses the committed ones.
    #[test]
    fn the_weights_are_the_analysis_own() {
        let s = doric_minmax();
        let mut w = Weights::committed().clone();
        w.weights = (0..N).map(|i| if i == 0 { 1.0 } else { 0.0 }).collect();
        let ochiai: Vec<f64> = group_scores(&analysis(&s, true, TieBreak::Code, &w))
            .iter()
            .map(|x| x.score)
            .collect();
        let by_line = features(&Analysis::new(&s, true));
        let want: Vec<f64> = [1, 2, 3]
            .map(|u| by_line.rows[by_line.units.iter().position(|&x| x == u).unwrap()][0])
            .to_vec();
        assert_eq!(ochiai, want);
        let committed = Analysis::new(&s, true);
        assert_eq!(
            group_scores(&committed).iter().map(|x| x.score).collect::<Vec<_>>(),
            group_scores(&analysis(&s, true, TieBreak::Code, Weights::committed()))
                .iter()
                .map(|x| x.score)
                .collect::<Vec<_>>()
        );
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
