//! CP, capturing propagation (Zhang, Chan, Tse, Hu & Wang, ESEC/FSE 2009; seed 004): block
//! scores from edge profiles, propagated backwards through the dynamic control-flow graph.
//!
//! # The maths
//!
//! With `v` failing and `u` passing tests, an edge `e` traversed by `f` failing and `p` passing
//! tests has `θ×(e) = f/v`, `θ✓(e) = p/u` and suspiciousness
//! `θΔ(e) = (θ× − θ✓)/(θ× + θ✓)` ∈ [−1, 1] ([`theta_delta`]). A block `b_k` shares out what
//! comes in: the propagation ratio of an edge `b_j → b_k` is
//! `W(b_j, b_k) = θΔ(b_j → b_k) / Σ_{edges * → b_k} θΔ`, the sum including the virtual edge
//! into a function's entry block. One equation per block:
//!
//! * a non-exit block (one outgoing edge or more): `BR(b_j) − Σ_k W(b_j, b_k)·BR(b_k) = 0`;
//! * an exit block (no outgoing edge): `BR(b_j) = Σ_{edges * → b_j} θΔ`.
//!
//! That is `(I − W)·BR = b` with `b` the exits' incoming sums; [`solve`] assembles it as one
//! sparse matrix (it is block-diagonal by function in practice) and factorises it with faer's
//! sparse LU (COLAMD ordering, partial pivoting).
//!
//! # Conventions
//!
//! * Edges traversed by no test (`failing == passing == 0`) are dropped, as in the paper's
//!   dynamic CFG: a block whose outgoing edges were all untraversed is an exit block. Blocks
//!   with no traversed incident edge get BR 0 and are not part of the system.
//! * Duplicate `(from, to)` pairs are *merged*: their counts are added, saturating at the
//!   totals (exact when the duplicates saw disjoint sets of tests; callers that can should take
//!   the union of test sets themselves). Every duplicate reports the merged θΔ.
//! * Edges naming a block `≥ blocks` are ignored (counted in [`CpSolution::ignored_edges`]).
//! * A zero incoming sum becomes `1e-10` in the denominator of `W`, as in the paper (positive:
//!   the sign of a sum that is zero carries no information). A sum within `1e-12·Σ|θΔ|` of zero
//!   is rounding noise of a cancelling sum and counts as zero, here and as an exit's score.
//!
//! # Singular and ill-conditioned systems
//!
//! `I − W` is singular whenever a loop passes all of its suspiciousness back to itself: if the
//! edge into a loop header has θΔ = 0 (every test, or the same share of failing and passing
//! tests, enters the loop), the back edge brings all of the header's incoming suspiciousness,
//! the loop's `W` are 1 around the cycle and its columns of `I − W` sum to 0. This is common.
//! The exact solution is rejected when the factorisation fails, the solution is not finite,
//! its normwise backward error exceeds `1e-10`, or it is ill-conditioned along the damping
//! direction (`‖(I−W)⁻¹·W·x‖ / ‖x‖ > 1e8`: damping by `1 − ε` would move it by more than
//! `1e8·ε`). The system is solved per connected component (per function: edges are
//! intraprocedural), and only a component whose exact solution is rejected is damped: its `W`
//! are multiplied by `1 − ε`, ε = 0.1 ([`CpMethod::Damped`], with the reason; the blocks in
//! [`CpSolution::damped_blocks`]). A singular system's damped solutions grow like 1/ε, so a
//! tiny ε would put that function's blocks above or below everything else; 0.1 keeps them
//! comparable. The residual of the original system is reported alongside. If nothing solves,
//! `W` is dropped for that component (factor 0: exit blocks keep their incoming sums, every
//! other block 0). Scores are always finite.

use std::fmt;

use faer::Col;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Lu, SymbolicLu};
use faer::sparse::{SparseColMat, Triplet};

/// One control-flow edge of the dynamic CFG with its traversal counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpEdge {
    /// `None`: the virtual edge into a function's entry block (e1 in the paper).
    pub from: Option<u32>,
    pub to: u32,
    /// Number of failing / passing tests that traversed the edge.
    pub failing: u32,
    pub passing: u32,
}

/// θΔ(e) = (θ× − θ✓)/(θ× + θ✓), θ× = failing/total_failing, θ✓ = passing/total_passing;
/// 0/0 → 0; a zero total gives that θ = 0.
///
/// Computed as `(f·u − p·v)/(f·u + p·v)` in integers, so that e.g. a perfectly balanced edge
/// is exactly 0 and θΔ is exactly ±1 at the extremes.
pub fn theta_delta(failing: u32, passing: u32, total_failing: u32, total_passing: u32) -> f64 {
    let f = if total_failing == 0 { 0 } else { i128::from(failing) };
    let p = if total_passing == 0 { 0 } else { i128::from(passing) };
    let (v, u) = (i128::from(total_failing.max(1)), i128::from(total_passing.max(1)));
    let (num, den) = (f * u - p * v, f * u + p * v);
    if den == 0 { 0.0 } else { num as f64 / den as f64 }
}

/// The block scores and how they were obtained.
#[derive(Clone, Debug, PartialEq)]
pub struct CpSolution {
    /// BR per block (index = block id), finite always.
    pub br: Vec<f64>,
    /// θΔ per input edge, same order as the input (duplicates: the merged edge's θΔ).
    pub theta: Vec<f64>,
    pub blocks_solved: usize,
    pub exit_blocks: usize,
    /// How the system was solved: exactly, or damped because it was singular or
    /// ill-conditioned (with what was done and why).
    pub method: CpMethod,
    /// Max residual `|(I − W)·BR − b|` of the original (undamped) system, over solved blocks
    /// (`f64::MAX` if it overflows).
    pub residual: f64,
    /// Input edges that repeated an earlier `(from, to)` pair and were merged into it.
    pub duplicates_merged: usize,
    /// Input edges ignored because they name a block `≥ blocks`.
    pub ignored_edges: usize,
    /// One block (the lowest id) of each component that had to be damped.
    pub damped_blocks: Vec<usize>,
}

/// How the linear system was solved.
#[derive(Clone, Debug, PartialEq)]
pub enum CpMethod {
    /// Sparse LU of the system as defined.
    Exact,
    /// The system was singular or ill-conditioned: every propagation ratio `W` was multiplied
    /// by `factor` (= 1 − ε; 0 when nothing else solved) and the reason says why and where.
    Damped { factor: f64, reason: String },
}

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

/// Builds and solves the system for `blocks` blocks (ids 0..blocks). Blocks with no incident
/// edge at all get BR 0 and are not part of the system.
///
/// The system is solved per connected component of the CFG (per function, as edges are
/// intraprocedural), so a singular loop in one function damps that function only.
pub fn solve(blocks: usize, edges: &[CpEdge], total_failing: u32, total_passing: u32) -> CpSolution {
    let merged = merge(blocks, edges, total_failing, total_passing);
    let (chain_of, contracted) = contract_chains(blocks, &merged.edges);
    let mut br = vec![0.0; blocks];
    let (mut exits, mut residual) = (0, 0.0f64);
    let mut damped: Vec<(f64, String)> = Vec::new();
    let mut damped_blocks = Vec::new();
    let components = components(blocks, &contracted);
    for (ids, local) in &components {
        let system = System::build(ids.len(), local);
        let (x, method) = solve_system(&system);
        residual = residual.max(system.max_residual(1.0, &x).min(f64::MAX));
        for (&row, &score) in system.block.iter().zip(&x) {
            br[ids[row]] = score;
        }
        exits += system.exit.iter().filter(|&&e| e).count();
        if let CpMethod::Damped { factor, reason } = method {
            damped_blocks.push(ids[0]);
            damped.push((factor, reason));
        }
    }
    let mut present = vec![false; blocks];
    for e in &merged.edges {
        present[e.to] = true;
        if let Some(f) = e.from {
            present[f] = true;
        }
    }
    let solved = present.iter().filter(|&&p| p).count();
    for b in 0..blocks {
        br[b] = br[chain_of[b]];
    }
    let method = match damped.first() {
        None => CpMethod::Exact,
        Some((_, first)) => CpMethod::Damped {
            factor: damped.iter().map(|d| d.0).fold(1.0, f64::min),
            reason: format!(
                "{} of {} CFG components (functions) could not be solved exactly and were damped; the first: {first}",
                damped.len(),
                components.len()
            ),
        },
    };
    CpSolution {
        br,
        theta: merged.theta,
        blocks_solved: solved,
        exit_blocks: exits,
        method,
        residual,
        duplicates_merged: merged.duplicates,
        ignored_edges: merged.ignored,
        damped_blocks,
    }
}

/// Contracts chains into maximal blocks: an edge `a → b` where `a` has no other successor and
/// `b` no other predecessor (nor the virtual entry edge) joins them into one block, as a
/// compiler that did not split blocks (gcov's, the paper's) would have them. LLVM splits a
/// block at every check whose failure edge no test takes (overflow, bounds) and at critical
/// edges, and such a split must not change a score: along the chain `W = θΔ/θΔ = 1`, except
/// where θΔ = 0 (an edge every test takes), where the paper's `0/1e-10` would cut the chain.
/// Returns each block's chain head and the edges between chains (renamed to their heads).
fn contract_chains(blocks: usize, edges: &[Edge]) -> (Vec<usize>, Vec<Edge>) {
    let (mut outs, mut ins) = (vec![0u32; blocks], vec![0u32; blocks]);
    for e in edges {
        ins[e.to] += 1;
        if let Some(f) = e.from {
            outs[f] += 1;
        }
    }
    // next[a] = b when a → b is a chain link.
    let mut next = vec![usize::MAX; blocks];
    let mut linked = vec![false; blocks];
    for e in edges {
        if let Some(f) = e.from
            && f != e.to
            && outs[f] == 1
            && ins[e.to] == 1
        {
            next[f] = e.to;
            linked[e.to] = true;
        }
    }
    let mut head = (0..blocks).collect::<Vec<usize>>();
    for start in (0..blocks).filter(|&b| !linked[b]) {
        let mut b = start;
        while next[b] != usize::MAX && next[b] != start {
            b = next[b];
            head[b] = start;
        }
    }
    let out = edges
        .iter()
        .filter(|e| e.from.is_none_or(|f| next[f] != e.to))
        .map(|e| Edge {
            from: e.from.map(|f| head[f]),
            to: head[e.to],
            theta: e.theta,
        })
        .collect();
    (head, out)
}

/// The weakly connected components of the edges: per component, its block ids (ascending)
/// and its edges renumbered to positions in that list.
fn components(blocks: usize, edges: &[Edge]) -> Vec<(Vec<usize>, Vec<Edge>)> {
    let mut parent: Vec<usize> = (0..blocks).collect();
    fn root(parent: &mut [usize], mut b: usize) -> usize {
        while parent[b] != b {
            parent[b] = parent[parent[b]];
            b = parent[b];
        }
        b
    }
    for e in edges {
        if let Some(f) = e.from {
            let (a, b) = (root(&mut parent, f), root(&mut parent, e.to));
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut present = vec![false; blocks];
    for e in edges {
        present[e.to] = true;
        if let Some(f) = e.from {
            present[f] = true;
        }
    }
    let mut component_of = vec![usize::MAX; blocks];
    let mut local = vec![0usize; blocks];
    let mut out: Vec<(Vec<usize>, Vec<Edge>)> = Vec::new();
    for b in (0..blocks).filter(|&b| present[b]) {
        let r = root(&mut parent, b);
        if component_of[r] == usize::MAX {
            component_of[r] = out.len();
            out.push((Vec::new(), Vec::new()));
        }
        let c = component_of[r];
        local[b] = out[c].0.len();
        out[c].0.push(b);
    }
    for e in edges {
        let c = component_of[root(&mut parent, e.to)];
        out[c].1.push(Edge {
            from: e.from.map(|f| local[f]),
            to: local[e.to],
            theta: e.theta,
        });
    }
    out
}

/// A traversed edge after merging, with block ids as indices.
struct Edge {
    from: Option<usize>,
    to: usize,
    theta: f64,
}

/// The edges that enter the system, and θΔ of every input edge.
struct Merged {
    edges: Vec<Edge>,
    theta: Vec<f64>,
    duplicates: usize,
    ignored: usize,
}

/// Merges duplicate `(from, to)` pairs (counts added, saturating at the totals), drops
/// untraversed and out-of-range edges, and computes θΔ of every input edge.
fn merge(blocks: usize, edges: &[CpEdge], total_failing: u32, total_passing: u32) -> Merged {
    let theta_of = |f, p| theta_delta(f, p, total_failing, total_passing);
    let mut theta: Vec<f64> = edges.iter().map(|e| theta_of(e.failing, e.passing)).collect();
    let in_range = |e: &CpEdge| (e.to as usize) < blocks && e.from.is_none_or(|f| (f as usize) < blocks);
    let mut order: Vec<usize> = (0..edges.len()).filter(|&i| in_range(&edges[i])).collect();
    let ignored = edges.len() - order.len();
    order.sort_unstable_by_key(|&i| (edges[i].from, edges[i].to, i));
    let mut merged = Vec::new();
    let mut duplicates = 0;
    for group in order.chunk_by(|&a, &b| (edges[a].from, edges[a].to) == (edges[b].from, edges[b].to)) {
        let first = edges[group[0]];
        let (mut failing, mut passing) = (first.failing, first.passing);
        if group.len() > 1 {
            duplicates += group.len() - 1;
            let sum =
                |count: fn(&CpEdge) -> u32| group.iter().fold(0u32, |acc, &i| acc.saturating_add(count(&edges[i])));
            failing = sum(|e| e.failing).min(total_failing);
            passing = sum(|e| e.passing).min(total_passing);
            let t = theta_of(failing, passing);
            for &i in group {
                theta[i] = t;
            }
        }
        if failing > 0 || passing > 0 {
            merged.push(Edge {
                from: first.from.map(|f| f as usize),
                to: first.to as usize,
                theta: theta[group[0]],
            });
        }
    }
    Merged {
        edges: merged,
        theta,
        duplicates,
        ignored,
    }
}

/// Whether an incoming sum is zero up to the rounding of its terms (`magnitude` = Σ|θΔ|).
fn is_zero_sum(sum: f64, magnitude: f64) -> bool {
    sum.abs() <= CANCELLED * magnitude
}

/// `(I − W)·BR = b` over the blocks that have a traversed incident edge, one row each.
struct System {
    /// Block id of each row (ascending).
    block: Vec<usize>,
    /// Whether each row is an exit block.
    exit: Vec<bool>,
    /// `W` by rows (compressed): row `r` has `(col[i], w[i])` for `i` in `start[r]..start[r+1]`.
    start: Vec<usize>,
    col: Vec<usize>,
    w: Vec<f64>,
    /// Right-hand side: an exit's incoming θΔ sum, 0 elsewhere.
    rhs: Vec<f64>,
}

impl System {
    fn build(blocks: usize, edges: &[Edge]) -> System {
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
        let mut row_of = vec![usize::MAX; blocks];
        for (r, &b) in block.iter().enumerate() {
            row_of[b] = r;
        }
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
                let slot = &mut next[row_of[f]];
                let sum = incoming[e.to];
                let denominator = if is_zero_sum(sum, magnitude[e.to]) {
                    ZERO_SUM
                } else {
                    sum
                };
                col[*slot] = row_of[e.to];
                w[*slot] = e.theta / denominator;
                *slot += 1;
            }
        }
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
            rhs,
        }
    }

    fn rows(&self) -> usize {
        self.block.len()
    }

    /// `(col, w)` of row `r`.
    fn row(&self, r: usize) -> impl Iterator<Item = (usize, f64)> + '_ {
        let range = self.start[r]..self.start[r + 1];
        self.col[range.clone()]
            .iter()
            .copied()
            .zip(self.w[range].iter().copied())
    }

    /// `I − factor·W` as a sparse matrix; the pattern does not depend on `factor`.
    fn matrix(&self, factor: f64) -> Result<SparseColMat<usize, f64>, String> {
        let mut triplets = Vec::with_capacity(self.rows() + self.w.len());
        for r in 0..self.rows() {
            triplets.push(Triplet::new(r, r, 1.0));
            triplets.extend(self.row(r).map(|(c, w)| Triplet::new(r, c, -factor * w)));
        }
        SparseColMat::try_new_from_triplets(self.rows(), self.rows(), &triplets).map_err(|e| format!("{e:?}"))
    }

    /// `W·x`.
    fn apply_w(&self, x: &[f64]) -> Vec<f64> {
        (0..self.rows())
            .map(|r| self.row(r).map(|(c, w)| w * x[c]).sum())
            .collect()
    }

    /// `max |(I − factor·W)·x − b|`.
    fn max_residual(&self, factor: f64, x: &[f64]) -> f64 {
        let wx = self.apply_w(x);
        (0..self.rows())
            .map(|r| (x[r] - factor * wx[r] - self.rhs[r]).abs())
            .fold(0.0, f64::max)
    }

    /// Normwise backward error `‖r‖∞ / (‖A‖∞·‖x‖∞ + ‖b‖∞)` of `x` for `A = I − factor·W`.
    fn backward_error(&self, factor: f64, x: &[f64]) -> f64 {
        let residual = self.max_residual(factor, x);
        if residual.is_nan() {
            return f64::INFINITY;
        }
        let norm_a = (0..self.rows())
            .map(|r| 1.0 + factor * self.row(r).map(|(_, w)| w.abs()).sum::<f64>())
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
fn solve_system(system: &System) -> (Vec<f64>, CpMethod) {
    if system.rows() == 0 {
        return (Vec::new(), CpMethod::Exact);
    }
    let symbolic = system
        .matrix(1.0)
        .and_then(|m| SymbolicLu::try_new(m.symbolic()).map_err(|e| format!("{e:?}")));
    let symbolic = match symbolic {
        Ok(s) => s,
        Err(e) => return undamped_fallback(system, &Trouble::Factorisation(e)),
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
    let matrix = system.matrix(factor).map_err(Trouble::Factorisation)?;
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
    let dx = lu_solve(&solved.lu, &system.apply_w(&solved.x));
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

/// xorshift64 (Marsaglia): reproducible, dependency-free.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn step(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn below(&mut self, n: u64) -> u64 {
        XorShift::step(&mut self.0) % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A reproducible CFG-shaped system of `blocks` blocks (for benchmarks): functions of 5–60
/// blocks, each a fall-through chain from an entry edge to a return block, with forward
/// branches (30% of blocks), loops (back edges from 15% of blocks, never to the entry block)
/// and panic exits (up to one block in ten). Every edge has random failing and passing counts
/// (at least one test). Returns the edges, total failing and total passing tests. Block ids
/// are `u32`: `blocks` must not exceed `u32::MAX`.
pub fn synthetic(blocks: usize, seed: u64) -> (Vec<CpEdge>, u32, u32) {
    let mut rng = XorShift::new(seed);
    let total_failing = 1 + rng.below(5) as u32;
    let total_passing = 10 + rng.below(191) as u32;
    let mut shape = Vec::new();
    let mut base = 0;
    while base < blocks {
        let size = (5 + rng.below(56) as usize).min(blocks - base);
        synthetic_function(&mut rng, base, size, &mut shape);
        base += size;
    }
    let edges = shape
        .into_iter()
        .map(|(from, to)| {
            let failing = rng.below(u64::from(total_failing) + 1) as u32;
            let passing = rng.below(u64::from(total_passing) + 1) as u32;
            CpEdge {
                from,
                to,
                failing,
                passing: if failing == 0 { passing.max(1) } else { passing },
            }
        })
        .collect();
    (edges, total_failing, total_passing)
}

/// The edges of one synthetic function of `size` blocks from id `base`: a main chain and
/// panic blocks after it.
fn synthetic_function(rng: &mut XorShift, base: usize, size: usize, out: &mut Vec<(Option<u32>, u32)>) {
    let id = |local: usize| (base + local) as u32;
    let panics = if size >= 10 {
        rng.below(size as u64 / 10 + 1) as usize
    } else {
        0
    };
    let chain = size - panics;
    out.push((None, id(0)));
    for i in 0..chain.saturating_sub(1) {
        out.push((Some(id(i)), id(i + 1)));
        if i + 2 < chain && rng.chance(30) {
            let target = i + 2 + rng.below((chain - i - 2) as u64) as usize;
            out.push((Some(id(i)), id(target)));
        }
        if i >= 1 && rng.chance(15) {
            let lowest = i.saturating_sub(8).max(1);
            let header = lowest + rng.below((i - lowest + 1) as u64) as usize;
            out.push((Some(id(i)), id(header)));
        }
    }
    for p in chain..size {
        let from = rng.below(chain.saturating_sub(1).max(1) as u64) as usize;
        out.push((Some(id(from)), id(p)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::HashMap;

    fn edge(from: Option<u32>, to: u32, failing: u32, passing: u32) -> CpEdge {
        CpEdge {
            from,
            to,
            failing,
            passing,
        }
    }

    /// The edge that tests `traversed` (1-based) took, of 7 tests with t3 and t6 failing.
    fn seed_edge(from: Option<u32>, to: u32, traversed: &[u32]) -> CpEdge {
        let failing = traversed.iter().filter(|t| [3, 6].contains(t)).count() as u32;
        edge(from, to, failing, traversed.len() as u32 - failing)
    }

    fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len());
        for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!((a - e).abs() <= tolerance, "[{i}]: {a} vs {e}");
        }
    }

    /// Seed 004, Fig. 1: CP ranks b2 (the fault) first.
    #[test]
    fn seed_004_figure_1() {
        let all = [1, 2, 3, 4, 5, 6, 7];
        let edges = [
            seed_edge(None, 0, &all),
            seed_edge(Some(0), 1, &[1, 3, 5, 6]),
            seed_edge(Some(0), 3, &[2, 4, 7]),
            seed_edge(Some(1), 2, &[3]),
            seed_edge(Some(1), 3, &[1, 5, 6]),
            seed_edge(Some(2), 3, &[3]),
        ];
        let s = solve(4, &edges, 2, 5);
        assert_close(&s.theta, &[0.0, 3.0 / 7.0, -1.0, 1.0, 1.0 / 9.0, 1.0], 1e-12);
        assert_close(&s.br, &[1.0 / 9.0, 10.0 / 9.0, 1.0, 1.0 / 9.0], 1e-9);
        assert_eq!(s.method, CpMethod::Exact);
        assert_eq!((s.blocks_solved, s.exit_blocks), (4, 1));
        assert!(s.residual < 1e-12);
        let top = (0..4).max_by(|&a, &b| s.br[a].total_cmp(&s.br[b]));
        assert_eq!(top, Some(1));
    }

    #[test]
    fn theta_delta_edge_cases() {
        assert_eq!(theta_delta(0, 0, 2, 5), 0.0);
        assert_eq!(theta_delta(0, 0, 0, 0), 0.0);
        // No passing tests: θ✓ = 0, so any failing traversal is +1.
        assert_eq!(theta_delta(1, 0, 2, 0), 1.0);
        assert_eq!(theta_delta(0, 3, 2, 0), 0.0);
        // No failing tests: θ× = 0, so any passing traversal is −1.
        assert_eq!(theta_delta(0, 3, 0, 5), -1.0);
        assert_eq!(theta_delta(4, 0, 0, 5), 0.0);
        // Same share of failing and passing tests: exactly 0.
        assert_eq!(theta_delta(1, 5, 2, 10), 0.0);
        assert_eq!(theta_delta(2, 5, 2, 5), 0.0);
        assert_eq!(theta_delta(u32::MAX, 0, u32::MAX, u32::MAX), 1.0);
        assert!((theta_delta(1, 1, 2, 4) - 1.0 / 3.0).abs() < 1e-15);
    }

    /// A loop whose header is also reached from outside: entry → 0; 0 → 1 (header) or 0 → 3;
    /// 1 → 2 → 1 (body, back edge); 1 → 3 (exit). Two failing, four passing tests.
    ///
    /// θΔ: 0→1 0.6, 0→3 −1, 1→2 0.6, 2→1 1/3, 1→3 0.6; incoming sums: S1 = 14/15, S2 = 0.6,
    /// S3 = −0.4. W(0,1) = 9/14, W(0,3) = 2.5, W(1,2) = 1, W(2,1) = 5/14, W(1,3) = −1.5.
    /// BR3 = −0.4; BR2 = 5/14·BR1; BR1 = BR2 + 0.6 → BR1 = 14/15, BR2 = 1/3;
    /// BR0 = 9/14·14/15 + 2.5·(−0.4) = −0.4.
    #[test]
    fn well_conditioned_loop() {
        let edges = [
            edge(None, 0, 2, 4),
            edge(Some(0), 1, 2, 1),
            edge(Some(0), 3, 0, 3),
            edge(Some(1), 2, 2, 1),
            edge(Some(2), 1, 1, 1),
            edge(Some(1), 3, 2, 1),
        ];
        let s = solve(4, &edges, 2, 4);
        assert_close(&s.theta, &[0.0, 0.6, -1.0, 0.6, 1.0 / 3.0, 0.6], 1e-15);
        assert_close(&s.br, &[-0.4, 14.0 / 15.0, 1.0 / 3.0, -0.4], 1e-12);
        assert_eq!(s.method, CpMethod::Exact);
    }

    fn assert_damped(s: &CpSolution) -> (f64, &str) {
        assert!(s.br.iter().all(|b| b.is_finite()), "{:?}", s.br);
        assert!(s.residual.is_finite());
        match &s.method {
            CpMethod::Damped { factor, reason } => {
                assert!(!reason.is_empty());
                (*factor, reason)
            }
            CpMethod::Exact => panic!("not detected: {s:?}"),
        }
    }

    /// A loop with no way out, entered by every test: W = 1 both ways, b = 0, `I − W` singular.
    #[test]
    fn singular_closed_loop_is_damped() {
        let edges = [edge(None, 0, 2, 5), edge(Some(0), 1, 2, 0), edge(Some(1), 0, 2, 0)];
        let s = solve(2, &edges, 2, 5);
        let (factor, reason) = assert_damped(&s);
        assert_eq!(factor, 1.0 - 0.1);
        assert!(reason.contains("loop passes all"), "{reason}");
        assert_eq!(s.damped_blocks, vec![0]);
        assert_eq!(s.exit_blocks, 0);
        assert!(s.residual < 1e-6, "consistent system: {}", s.residual);
    }

    /// The common case: a loop header that is the function's entry, entered by every test
    /// (θΔ 0), with an exit. The system has no solution; damped by 0.9 the loop's scores stay
    /// within a small multiple of the exit's.
    #[test]
    fn singular_loop_with_exit_is_damped() {
        let edges = [
            edge(None, 0, 2, 5),
            edge(Some(0), 1, 2, 3),
            edge(Some(1), 0, 2, 1),
            edge(Some(1), 2, 2, 1),
        ];
        let s = solve(3, &edges, 2, 5);
        let (factor, reason) = assert_damped(&s);
        assert_eq!(factor, 1.0 - 0.1);
        assert!(reason.contains("loop passes all"), "{reason}");
        assert_eq!(s.damped_blocks, vec![0]);
        let exit = s.br[2];
        assert!(
            s.br.iter().all(|b| b.is_finite() && b.abs() <= 20.0 * exit.abs()),
            "{:?}",
            s.br
        );
        assert!(s.residual > 0.1, "inconsistent system: {}", s.residual);
    }

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
    fn conventions() {
        let edges = [
            edge(None, 0, 1, 0),
            edge(Some(0), 2, 1, 0),
            // A duplicate of the edge above: merged, counts added and capped at the totals.
            edge(Some(0), 2, 1, 1),
            // Never traversed: dropped, so block 2 is an exit block.
            edge(Some(2), 3, 0, 0),
            // Out of range: ignored (its θΔ is still reported).
            edge(Some(2), 9, 1, 1),
        ];
        let s = solve(5, &edges, 1, 2);
        let third = theta_delta(1, 1, 1, 2);
        assert!((third - 1.0 / 3.0).abs() < 1e-15);
        assert_close(&s.theta, &[1.0, third, third, 0.0, third], 0.0);
        assert_eq!((s.duplicates_merged, s.ignored_edges), (1, 1));
        // 0 → 2 is a chain (0's only successor, 2's only predecessor): one exit block, whose
        // score is the θΔ coming into 0. Blocks 1, 3 and 4 take part in nothing.
        assert_eq!((s.blocks_solved, s.exit_blocks), (2, 1));
        assert_close(&s.br, &[1.0, 0.0, 1.0, 0.0, 0.0], 1e-15);
        assert_eq!(s.method, CpMethod::Exact);
        let empty = solve(0, &[], 0, 0);
        assert_eq!((empty.br.len(), empty.method), (0, CpMethod::Exact));
    }

    /// A self-loop whose incoming sum cancels exactly: the denominator becomes 1e-10.
    #[test]
    fn cancelling_incoming_sum() {
        // θΔ(entry → 0) = −1, θΔ(0 → 0) = 1: S0 = 0, so W(0,0) = 1e10 and W(0,1) = 1.
        let edges = [edge(None, 0, 0, 2), edge(Some(0), 0, 1, 0), edge(Some(0), 1, 1, 1)];
        let s = solve(2, &edges, 1, 2);
        let t = theta_delta(1, 1, 1, 2);
        // BR0 = 1e10·BR0 + BR1 → BR0 = −BR1/(1e10 − 1).
        assert_close(&s.br, &[-t / (1e10 - 1.0), t], 1e-20);
        assert_eq!(s.method, CpMethod::Exact);
    }

    /// The equations of CP, computed independently of the solver: residual of each block's
    /// equation and that equation's scale. A chain link (the only edge out of its source and
    /// into its target) makes the two blocks one: `BR(a) = BR(b)`.
    fn equations(blocks: usize, edges: &[CpEdge], tf: u32, tp: u32, br: &[f64]) -> Vec<(f64, f64)> {
        let (mut outs, mut ins) = (vec![0; blocks], vec![0; blocks]);
        for e in edges {
            ins[e.to as usize] += 1;
            if let Some(f) = e.from {
                outs[f as usize] += 1;
            }
        }
        let link = |e: &CpEdge| {
            e.from
                .is_some_and(|f| f != e.to && outs[f as usize] == 1 && ins[e.to as usize] == 1)
        };
        let theta: Vec<f64> = edges
            .iter()
            .map(|e| theta_delta(e.failing, e.passing, tf, tp))
            .collect();
        let (mut sum, mut magnitude) = (vec![0.0; blocks], vec![0.0; blocks]);
        let mut successors: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, e) in edges.iter().enumerate() {
            sum[e.to as usize] += theta[i];
            magnitude[e.to as usize] += theta[i].abs();
            if let Some(f) = e.from {
                successors.entry(f).or_default().push(i);
            }
        }
        let mut linked_from = vec![usize::MAX; blocks];
        for e in edges.iter().filter(|e| link(e)) {
            linked_from[e.to as usize] = e.from.unwrap() as usize;
        }
        // The first block of the chain `b` ends: an exit chain scores what comes into it.
        let head = |mut b: usize| {
            let start = b;
            while linked_from[b] != usize::MAX && linked_from[b] != start {
                b = linked_from[b];
            }
            b
        };
        (0..blocks)
            .map(|b| match successors.get(&(b as u32)) {
                Some(out) if out.len() == 1 && link(&edges[out[0]]) => {
                    let to = edges[out[0]].to as usize;
                    (br[b] - br[to], br[b].abs() + br[to].abs())
                }
                None => {
                    let h = head(b);
                    (br[b] - sum[h], br[b].abs() + sum[h].abs())
                }
                Some(out) => {
                    let terms = out.iter().map(|&i| {
                        let to = edges[i].to as usize;
                        let d = if sum[to].abs() <= 1e-12 * magnitude[to] {
                            1e-10
                        } else {
                            sum[to]
                        };
                        theta[i] / d * br[to]
                    });
                    let (total, scale) = terms.fold((0.0, 0.0), |(t, s), v| (t + v, s + v.abs()));
                    (br[b] - total, br[b].abs() + scale)
                }
            })
            .collect()
    }

    /// On random CFG-shaped systems, an exact solution satisfies every block's equation.
    #[test]
    fn random_cfgs_satisfy_the_equations() {
        let mut exact = 0;
        for seed in 0..80u64 {
            let blocks = 5 + (seed as usize * 37) % 300;
            let (edges, tf, tp) = synthetic(blocks, seed);
            let s = solve(blocks, &edges, tf, tp);
            assert!(s.br.iter().all(|b| b.is_finite()) && s.residual.is_finite());
            assert_eq!(s.blocks_solved, blocks);
            if s.method != CpMethod::Exact {
                continue;
            }
            exact += 1;
            let eqs = equations(blocks, &edges, tf, tp, &s.br);
            let scale = eqs.iter().fold(1.0f64, |m, e| m.max(e.1));
            for (b, (residual, _)) in eqs.iter().enumerate() {
                assert!(residual.abs() <= 1e-6 * scale, "seed {seed} block {b}: {residual}");
            }
        }
        assert!(exact >= 40, "only {exact} of 80 exact");
    }

    #[test]
    fn synthetic_is_reproducible_and_shaped() {
        let (a, tf, tp) = synthetic(1000, 7);
        assert_eq!(synthetic(1000, 7), (a.clone(), tf, tp));
        assert_ne!(synthetic(1000, 8).0, a);
        assert!(a.iter().all(|e| e.to < 1000 && e.from.is_none_or(|f| f < 1000)));
        assert!(
            a.iter()
                .all(|e| e.failing <= tf && e.passing <= tp && e.failing + e.passing > 0)
        );
        let s = solve(1000, &a, tf, tp);
        assert_eq!(s.blocks_solved, 1000);
        assert!(s.exit_blocks > 1000 / 60);
        assert!(a.iter().any(|e| e.from.is_some_and(|f| f >= e.to)), "no loops");
    }
}
