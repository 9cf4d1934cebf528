//! What a measure gives each entry: the key the ranking sorts on and the score a report shows,
//! and the options that shape them. Nothing here reads the matrix: the ranking scores each
//! measure over an analysis's groups and hands these on.

use crate::evidence::line::LineEvidence;

/// How scores are computed (all recorded in the report).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Add 0.5 to each of ef, ep, nf, np before a spectrum formula (Doric's convention).
    pub smoothing: bool,
    /// Count every failing test this many times (Zhang et al.'s cloning study); 1 = off.
    pub clone_failing: u32,
    /// Opt_w (Landsberg, Sun & Kroening): units run by every failing test first, by fewest passing tests.
    pub optimise: bool,
    /// cl-u refutes at most this many entries, then keeps the last order.
    pub update_bound: usize,
    /// Merge units with identical coverage into one entry.
    pub group: bool,
    /// When failing tests form independent clusters (`--clusters`), rank each cluster against
    /// the passing tests and interleave the rankings.
    pub clusters: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            smoothing: false,
            clone_failing: 1,
            optimise: false,
            update_bound: 20,
            group: true,
            clusters: false,
        }
    }
}

/// Where a key ranks before its value is compared: tiers carry the non-numeric parts of a
/// measure exactly, without squeezing them into one float.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Not ranked at all (below every key a measure gives).
    Unranked,
    /// The measure could not score it (CP: a line in no block).
    Unscored,
    /// An ordinary score.
    Score,
    /// Decided before any score: cl-u's inspected prefix (value `-position`), P(f) = 1.
    Certain,
    /// Opt_w's all-failing core (value `np + 2`).
    Core,
    /// Where failing tests' operations panicked, for the stack-first rankings (value: the
    /// position by how many tests point there, then by the base measure's key; higher first).
    Stack,
}

/// A ranking key, compared by tier, then value, then (for a line of an entry, with
/// `--tie-break evidence`) the evidence that orders lines of one entry; higher ranks first.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub struct Key {
    pub tier: Tier,
    pub value: f64,
    /// The same for every entry; only line keys carry a line's evidence.
    pub evidence: LineEvidence,
}

impl Key {
    pub const fn new(tier: Tier, value: f64) -> Self {
        Key {
            tier,
            value,
            evidence: LineEvidence::NONE,
        }
    }

    /// An ordinary score.
    pub const fn score(value: f64) -> Self {
        Key::new(Tier::Score, value)
    }

    /// Below every key a measure gives.
    pub const UNRANKED: Key = Key::new(Tier::Unranked, f64::NEG_INFINITY);

    /// A total order (floats by `total_cmp`), most suspicious first.
    pub fn cmp_descending(&self, other: &Key) -> std::cmp::Ordering {
        other
            .tier
            .cmp(&self.tier)
            .then_with(|| other.value.total_cmp(&self.value))
            .then_with(|| self.evidence.cmp_descending(&other.evidence))
    }
}

/// A group's score under one measure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    /// What the ranking sorts on, descending, lexicographically: a tier (Opt_w's core, cl-u's
    /// inspected prefix, P(f) = 1) and the value within it.
    pub key: Key,
    /// The score shown: the formula's value, or the probability for Doric's measures.
    pub score: f64,
    /// log10 of the probability, for Doric's measures (readable when `score` underflows).
    pub log10: Option<f64>,
}

impl Scored {
    /// An ordinary score, shown as it is.
    pub const fn plain(value: f64) -> Self {
        Scored {
            key: Key::score(value),
            score: value,
            log10: None,
        }
    }

    /// What a measure gives an entry it cannot score (CP: a line in no block).
    pub const UNSCORED: Scored = Scored {
        key: Key::new(Tier::Unscored, 0.0),
        score: 0.0,
        log10: None,
    };
}
