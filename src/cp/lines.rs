//! CP's scores on the spectra's lines: the block solution over the edge profiles, each line
//! scored by the blocks holding it, lines without a block of their own scored from their
//! neighbours, and scores within round-off of each other made one.

use std::collections::HashMap;

use super::model::{CpSolution, CpVariant};
use super::solve::{solve_edges, unit_scores};
use crate::spectra::Spectra;

/// CP's block solution and every unit's score.
pub type CpScores = (CpSolution, Vec<Option<f64>>);

/// CP over the spectra's edges: the block solution and every unit's score; `None` without
/// edges.
pub fn solve(spectra: &Spectra, variant: CpVariant) -> Option<CpScores> {
    let e = spectra.edges.as_ref()?;
    let solution = solve_edges(e, &spectra.failing_mask(), &spectra.passing_mask(), variant);
    let mut units = unit_scores(e, &solution, spectra.units.len());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::tests::{lib_functions, matrix};

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
}
