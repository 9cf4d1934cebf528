//! HT_Rank (Henderson, Küçük & Podgurski, SCAM 2019): Markov models of a person debugging with a
//! report, and the expected time they take to reach each location.
//!
//! States: one per score group of the report (g_0 the most suspicious), one per report entry
//! (Def. 30, when entries are groups of lines), one per location (line). Transitions as in
//! Def. 28/30: a group moves up with (N−1)/2N, down with 1/2N (N = entries), and into each of its
//! entries with 1/(2|g|); an entry goes back to its group with 1/2 and to each of its lines with
//! 1/(2|V_h|); a line returns to its entry, or (Def. 29) with `p_jump` jumps to a line it is
//! connected to (same function, Def. 26), uniformly. Start state g_0.
//!
//! Expected hitting times `E[T_{0,x}]` for every location at once, exactly, by state reduction
//! ([`gth`]); they grow geometrically with a location's depth in the ranking, so they are
//! handed out as natural logarithms. Random walks that record each location's first hitting
//! time (the paper's estimator) remain for chains above `--exact-limit`.

mod chain;
mod gth;
mod model;

pub use chain::{Chain, ChainSpec, Estimate, Method, hitting_times, ht_rank, same_time};
pub use model::HtModel;
