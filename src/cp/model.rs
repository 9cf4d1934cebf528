//! CP's types: the variants, the edges it reads and the solution it gives.

/// What a rejected component's damping scales ([`CpVariant::damping`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Damping {
    /// Every propagation ratio of the component (the function, or the functions joined by
    /// calls).
    Whole,
    /// Only the ratios on a cycle (between blocks of one strongly connected component): the
    /// loops that make the system singular. The rest of the function propagates as the paper
    /// defines it.
    Loops,
}

/// Which CP: the paper's intraprocedural one, or propagation along calls too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CpVariant {
    /// Calls are edges too: a block that calls a function passes on a share of the callee's
    /// entry block's suspiciousness, like any successor ([`EdgeSpectra::is_call`]).
    pub calls: bool,
    pub damping: Damping,
}

impl CpVariant {
    /// The paper's: within functions, a singular function damped whole.
    pub const PAPER: CpVariant = CpVariant {
        calls: false,
        damping: Damping::Whole,
    };
    /// Along calls too, a singular component damped on its cycles only: `cp-calls`.
    pub const INTERPROCEDURAL: CpVariant = CpVariant {
        calls: true,
        damping: Damping::Loops,
    };
    /// How many variants there are ([`CpVariant::index`] is below it).
    pub const COUNT: usize = 4;

    /// A number of its own, below [`CpVariant::COUNT`].
    pub fn index(self) -> usize {
        usize::from(self.calls) * 2 + usize::from(self.damping == Damping::Loops)
    }
}

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

/// A traversed edge after merging, with block ids as indices.
pub(super) struct ThetaEdge {
    pub(super) from: Option<usize>,
    pub(super) to: usize,
    pub(super) theta: f64,
}
