//! CP, capturing propagation (Zhang, Chan, Tse, Jiang & Wang, *Capturing Propagation of Infected Program States*,
//! ESEC/FSE 2009): block
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
//!
//! # Layout
//!
//! `model` holds CP's types (variants, edges, the solution); `solve` merges edges, contracts
//! chains and splits the CFG into components; `system` assembles, solves, checks and damps one
//! component's system; `synthetic` makes CFG-shaped systems for the benchmark. [`solve_edges`]
//! and [`unit_scores`] apply CP to the edge profiles of [`crate::edges`]; [`lines`] scores the
//! spectra's lines with them.

pub mod lines;
mod model;
mod solve;
mod synthetic;
mod system;

pub use lines::CpScores;
pub use model::{CpEdge, CpMethod, CpSolution, CpVariant, Damping, theta_delta};
pub use solve::{solve, solve_edges, unit_scores};
pub use synthetic::synthetic;
