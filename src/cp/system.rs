//! CP's linear system `(I − W)·BR = b` for one CFG component: assembling it from θΔ, solving
//! it with faer's sparse LU, checking the solution (finite, small backward error, not
//! sensitive to damping) and damping it when the check fails.

use std::fmt;

use faer::Col;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Lu, SymbolicLu};
use faer::sparse::{SparseColMat, Triplet};

use super::model::{CpMethod, Damping, ThetaEdge};

/// A zero incoming sum is replaced by this in the denominator of `W` (the paper's choice).
const ZERO_SUM: f64 = 1e-10;
/// An incoming sum within this fraction of `Σ|θΔ|` of zero counts as zero.
const CANCELLED: f64 = 1e-12;
/// Largest normwise backward error accepted from the LU solution.
const BACKWARD_TOLERANCE: f64 = 1e-10;
/// Largest accepted `‖(I−W)⁻¹·W·x‖ / ‖x‖` (sensitivity of the solution to damping).
const SENSITIVITY_LIMIT: f64 = 1e8;
/// The ε of the damped system `I − (1 − ε)·W` a rejected component is solved with instead.
/// A singular system has no solution (or infinitely many) and its damped solutions grow like
/// 1/ε, so a small ε would put the loop's blocks above (or below) every other function's: ε is
/// large enough to keep the scores of a damped function comparable with the rest.
const DAMPING: f64 = 0.1;

/// Whether an incoming sum is zero up to the rounding of its terms (`magnitude` = Σ|θΔ|).
fn is_zero_sum(sum: f64, magnitude: f64) -> bool {
    sum.abs() <= CANCELLED * magnitude
}

/// `(I − W)·BR = b` over the blocks that have a traversed incident edge, one row each.
pub(super) struct System {
    /// Block id of each row (ascending).
    pub(super) block: Vec<usize>,
    /// Whether each row is an exit block.
    pub(super) exit: Vec<bool>,
    /// `W` by rows (compressed): row `r` has `(col[i], w[i])` for `i` in `start[r]..start[r+1]`.
    start: Vec<usize>,
    col: Vec<usize>,
    w: Vec<f64>,
    /// Per entry of `W`, whether damping scales it: every entry, or ([`Damping::Loops`]) those
    /// on a cycle (both blocks in one strongly connected component).
    damps: Vec<bool>,
    /// Right-hand side: an exit's incoming θΔ sum, 0 elsewhere.
    rhs: Vec<f64>,
}

impl System {
    pub(super) fn build(blocks: usize, edges: &[ThetaEdge], damping: Damping) -> System {
        let mut incoming = vec![0.0; blocks];
        let mut magnitude = vec![0.0; blocks];
        let mut present = vec![false; blocks];
        let mut outgoing = vec![0usize; blocks];
        for e in edges {
            incoming[e.to] += e.theta;
            magnitude[e.to] += e.theta.abs();
            present[e.to] = true;
            if let Some(f) = e.from {
                present[f] = true;
                outgoing[f] += 1;
            }
        }
        let block: Vec<usize> = (0..blocks).filter(|&b| present[b]).collect();
        // row_of[b]: the row of block `b` (None: no edge names it, so it has no row).
        let mut row_of: Vec<Option<usize>> = vec![None; blocks];
        for (r, &b) in block.iter().enumerate() {
            row_of[b] = Some(r);
        }
        let row = |b: usize| row_of[b].expect("every edge's blocks are present");
        let mut start = Vec::with_capacity(block.len() + 1);
        let mut entries = 0;
        start.push(0);
        for &b in &block {
            entries += outgoing[b];
            start.push(entries);
        }
        let mut next = start.clone();
        let (mut col, mut w) = (vec![0; entries], vec![0.0; entries]);
        for e in edges {
            if let Some(f) = e.from {
                let slot = &mut next[row(f)];
                let sum = incoming[e.to];
                let denominator = if is_zero_sum(sum, magnitude[e.to]) {
                    ZERO_SUM
                } else {
                    sum
                };
                col[*slot] = row(e.to);
                w[*slot] = e.theta / denominator;
                *slot += 1;
            }
        }
        let damps = match damping {
            Damping::Whole => vec![true; w.len()],
            Damping::Loops => {
                let scc = strongly_connected(&start, &col);
                (0..block.len())
                    .flat_map(|r| (start[r]..start[r + 1]).map(move |i| (r, i)))
                    .map(|(r, i)| scc[r] == scc[col[i]])
                    .collect()
            }
        };
        let exit: Vec<bool> = block.iter().map(|&b| outgoing[b] == 0).collect();
        let rhs = block
            .iter()
            .zip(&exit)
            .map(|(&b, &is_exit)| {
                let zero = !is_exit || is_zero_sum(incoming[b], magnitude[b]);
                if zero { 0.0 } else { incoming[b] }
            })
            .collect();
        System {
            block,
            exit,
            start,
            col,
            w,
            damps,
            rhs,
        }
    }

    fn rows(&self) -> usize {
        self.block.len()
    }

    /// `(col, w)` of row `r`, with the entries damping scales multiplied by `factor`: the row
    /// of `W_factor`, which is `W` at factor 1.
    fn row(&self, r: usize, factor: f64) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.start[r]..self.start[r + 1];
        range.map(move |i| (self.col[i], if self.damps[i] { factor * self.w[i] } else { self.w[i] }))
    }

    /// `I − W_factor` as a sparse matrix; the pattern does not depend on `factor`.
    fn matrix(&self, factor: f64) -> Result<SparseColMat<usize, f64>, Trouble> {
        let mut triplets = Vec::with_capacity(self.rows() + self.w.len());
        for r in 0..self.rows() {
            triplets.push(Triplet::new(r, r, 1.0));
            triplets.extend(self.row(r, factor).map(|(c, w)| Triplet::new(r, c, -w)));
        }
        SparseColMat::try_new_from_triplets(self.rows(), self.rows(), &triplets)
            .map_err(|e| Trouble::Factorisation(format!("{e:?}")))
    }

    /// `W_factor·x`.
    fn apply(&self, factor: f64, x: &[f64]) -> Vec<f64> {
        (0..self.rows())
            .map(|r| self.row(r, factor).map(|(c, w)| w * x[c]).sum())
            .collect()
    }

    /// `W_d·x`, `W_d` the entries damping scales: `d/dε` of `(I − W_{1−ε})` is `W_d`.
    fn apply_damped(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows())
            .map(|r| {
                (self.start[r]..self.start[r + 1])
                    .filter(|&i| self.damps[i])
                    .map(|i| self.w[i] * x[self.col[i]])
                    .sum()
            })
            .collect()
    }

    /// `max |(I − W_factor)·x − b|`.
    pub(super) fn max_residual(&self, factor: f64, x: &[f64]) -> f64 {
        let wx = self.apply(factor, x);
        (0..self.rows())
            .map(|r| (x[r] - wx[r] - self.rhs[r]).abs())
            .fold(0.0, f64::max)
    }

    /// Normwise backward error `‖r‖∞ / (‖A‖∞·‖x‖∞ + ‖b‖∞)` of `x` for `A = I − W_factor`.
    fn backward_error(&self, factor: f64, x: &[f64]) -> f64 {
        let residual = self.max_residual(factor, x);
        if residual.is_nan() {
            return f64::INFINITY;
        }
        let norm_a = (0..self.rows())
            .map(|r| 1.0 + self.row(r, factor).map(|(_, w)| w.abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let (norm_x, norm_b) = (max_abs(x), max_abs(&self.rhs));
        if residual == 0.0 {
            0.0
        } else if norm_x > 0.0 {
            // Scaled by ‖x‖ first so that a huge x cannot overflow the denominator.
            (residual / norm_x) / (norm_a + norm_b / norm_x)
        } else {
            residual / norm_b
        }
    }
}

/// The strongly connected component of every node of a graph in compressed rows (node `r`'s
/// successors are `col[start[r]..start[r + 1]]`), numbered from 0 (Tarjan's algorithm, without
/// recursion: a function's CFG can be thousands of blocks deep).
fn strongly_connected(start: &[usize], col: &[usize]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let n = start.len() - 1;
    let (mut index, mut low) = (vec![UNSEEN; n], vec![0; n]);
    let mut on_stack = vec![false; n];
    let (mut stack, mut component) = (Vec::new(), vec![UNSEEN; n]);
    let (mut next_index, mut next_component) = (0, 0);
    // The depth-first path: a node and the position of its next successor to visit.
    let mut path: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        path.push((root, start[root]));
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = path.last_mut() {
            if *i < start[v + 1] {
                let w = col[*i];
                *i += 1;
                if index[w] == UNSEEN {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    path.push((w, start[w]));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            path.pop();
            if let Some(&(parent, _)) = path.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = next_component;
                    if w == v {
                        break;
                    }
                }
                next_component += 1;
            }
        }
    }
    component
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Why a solution was rejected.
enum Trouble {
    Factorisation(String),
    NotFinite { scores: usize, rows: usize },
    Inaccurate { backward_error: f64 },
    Sensitive { amplification: f64 },
}

impl fmt::Display for Trouble {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trouble::Factorisation(e) => write!(f, "the sparse LU factorisation failed ({e})"),
            Trouble::NotFinite { scores, rows } => {
                write!(
                    f,
                    "the LU solution has {scores} non-finite scores of {rows} (a zero pivot)"
                )
            }
            Trouble::Inaccurate { backward_error } => write!(
                f,
                "the LU solution does not satisfy the system (backward error {backward_error:.1e})"
            ),
            Trouble::Sensitive { amplification } => write!(
                f,
                "the system is singular or nearly so (scaling W by 1 − ε moves the solution by \
                 {amplification:.1e}·ε)"
            ),
        }
    }
}

/// A solution with the factorisation that produced it.
struct Solved {
    x: Vec<f64>,
    lu: Lu<usize, f64>,
}

/// The exact solution if it is sound, else a damped one.
pub(super) fn solve_system(system: &System) -> (Vec<f64>, CpMethod) {
    if system.rows() == 0 {
        return (Vec::new(), CpMethod::Exact);
    }
    let symbolic = system
        .matrix(1.0)
        .and_then(|m| SymbolicLu::try_new(m.symbolic()).map_err(|e| Trouble::Factorisation(format!("{e:?}"))));
    let symbolic = match symbolic {
        Ok(s) => s,
        Err(t) => return undamped_fallback(system, &t),
    };
    let trouble = match attempt(system, &symbolic, 1.0).and_then(|s| check_sensitivity(system, s)) {
        Ok(solved) => return (solved.x, CpMethod::Exact),
        Err(t) => t,
    };
    let factor = 1.0 - DAMPING;
    match attempt(system, &symbolic, factor) {
        Ok(solved) => (
            solved.x,
            CpMethod::Damped {
                factor,
                reason: damped_reason(&trouble, DAMPING),
            },
        ),
        Err(_) => undamped_fallback(system, &trouble),
    }
}

/// Factorises and solves `(I − factor·W)·x = b`; the solution must be finite with a small
/// backward error.
fn attempt(system: &System, symbolic: &SymbolicLu<usize>, factor: f64) -> Result<Solved, Trouble> {
    let matrix = system.matrix(factor)?;
    let lu = Lu::try_new_with_symbolic(symbolic.clone(), matrix.as_ref())
        .map_err(|e| Trouble::Factorisation(e.to_string()))?;
    let x = lu_solve(&lu, &system.rhs);
    let scores = x.iter().filter(|v| !v.is_finite()).count();
    if scores > 0 {
        return Err(Trouble::NotFinite {
            scores,
            rows: system.rows(),
        });
    }
    let backward_error = system.backward_error(factor, &x);
    if backward_error > BACKWARD_TOLERANCE {
        return Err(Trouble::Inaccurate { backward_error });
    }
    Ok(Solved { x, lu })
}

/// Rejects an exact solution that damping by `1 − ε` would move by more than
/// `SENSITIVITY_LIMIT·ε` (relative): `dx/dε = −(I − W)⁻¹·W·x`.
fn check_sensitivity(system: &System, solved: Solved) -> Result<Solved, Trouble> {
    let norm_x = max_abs(&solved.x);
    if norm_x == 0.0 {
        return Ok(solved);
    }
    let dx = lu_solve(&solved.lu, &system.apply_damped(&solved.x));
    let norm_dx = dx.iter().fold(
        0.0f64,
        |m, v| if v.is_finite() { m.max(v.abs()) } else { f64::INFINITY },
    );
    let amplification = norm_dx / norm_x;
    if amplification > SENSITIVITY_LIMIT {
        return Err(Trouble::Sensitive { amplification });
    }
    Ok(solved)
}

fn lu_solve(lu: &Lu<usize, f64>, rhs: &[f64]) -> Vec<f64> {
    let x = lu.solve(Col::from_fn(rhs.len(), |i| rhs[i]));
    (0..rhs.len()).map(|i| x[i]).collect()
}

/// What went wrong and what was done.
fn damped_reason(trouble: &Trouble, eps: f64) -> String {
    format!(
        "{trouble}; solved with its W multiplied by 1 − ε, ε = {eps}. Typically a loop passes all \
         of its suspiciousness back to itself: the edge into its header has θΔ = 0 (e.g. every \
         test enters the loop), so the back edge brings all of the header's incoming \
         suspiciousness. Scores in that function depend on ε"
    )
}

/// Last resort: no propagation at all (factor 0), `BR = b`.
fn undamped_fallback(system: &System, trouble: &Trouble) -> (Vec<f64>, CpMethod) {
    let reason = format!(
        "{trouble}; the damped system (ε = {DAMPING}) could not be solved either, so nothing is \
         propagated: exit blocks keep their incoming θΔ sum and every other block scores 0"
    );
    (system.rhs.clone(), CpMethod::Damped { factor: 0.0, reason })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop that keeps all but 1e-14 of its suspiciousness: LU succeeds, but the solution
    /// (~1e14) is meaningless; the sensitivity check catches it. Built directly as a system.
    #[test]
    fn nearly_singular_system_is_damped() {
        let system = System {
            block: vec![0, 1, 2],
            exit: vec![false, false, true],
            start: vec![0, 1, 3, 3],
            col: vec![1, 0, 2],
            w: vec![1.0, 1.0 - 1e-14, 1.0],
            damps: vec![true; 3],
            rhs: vec![0.0, 0.0, 1.0],
        };
        let (x, method) = solve_system(&system);
        assert!(x.iter().all(|v| v.is_finite()));
        match method {
            CpMethod::Damped { factor, reason } => {
                assert_eq!(factor, 1.0 - 0.1);
                assert!(reason.starts_with("the system is singular or nearly so"), "{reason}");
            }
            CpMethod::Exact => panic!("not detected: {x:?}"),
        }
        // The last resort propagates nothing.
        let (x, method) = undamped_fallback(&system, &Trouble::Factorisation("test".into()));
        assert_eq!(x, system.rhs);
        assert!(matches!(method, CpMethod::Damped { factor: 0.0, .. }));
    }

    #[test]
    fn strongly_connected_components() {
        // 0 → 1 → 2 → 1, 2 → 3, 3 → 3 (a self-loop), 4 alone.
        let (start, col) = (vec![0, 1, 2, 4, 5, 5], vec![1, 2, 1, 3, 3]);
        let c = strongly_connected(&start, &col);
        assert_eq!(c[1], c[2]);
        let distinct: std::collections::BTreeSet<usize> = [c[0], c[1], c[3], c[4]].into();
        assert_eq!(distinct.len(), 4, "{c:?}");
    }

    #[test]
    fn loop_damping_scales_only_the_loop() {
        // 0 → 1, 1 ⇄ 2, 2 → 3 (exit). Every test enters the loop (θΔ(0 → 1) = 0), so the back
        // edge brings all of 1's incoming suspiciousness: singular. Whole damping scales
        // 2 → 3 too, loop damping only 1 → 2 and 2 → 1.
        let edges = [
            (None, 0, 0.0),
            (Some(0), 1, 0.0),
            (Some(1), 2, 0.5),
            (Some(2), 1, 0.5),
            (Some(2), 3, 0.5),
        ]
        .map(|(from, to, theta)| ThetaEdge { from, to, theta });
        let whole = System::build(4, &edges, Damping::Whole);
        let loops = System::build(4, &edges, Damping::Loops);
        assert_eq!(whole.damps, vec![true; 4]);
        // Rows: 0 → 1; 1 → 2; 2 → 1, 2 → 3.
        assert_eq!(loops.damps, vec![false, true, true, false]);
        let (xw, mw) = solve_system(&whole);
        let (xl, ml) = solve_system(&loops);
        assert!(matches!(mw, CpMethod::Damped { .. }) && matches!(ml, CpMethod::Damped { .. }));
        // BR2 = 0.9·BR1 + f·0.5, BR1 = 0.9·BR2: BR2 = f·0.5 / 0.19.
        assert!((xw[2] - 0.45 / 0.19).abs() < 1e-9, "{xw:?}");
        assert!((xl[2] - 0.5 / 0.19).abs() < 1e-9, "{xl:?}");
    }
}
