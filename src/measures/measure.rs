//! A measure as the catalogue lists it ([`Measure`], [`Kind`], [`Cloning`]) and the conventions
//! every formula follows ([`div`], [`ln`], [`finite`]).

use crate::cp::CpVariant;
use crate::spectra::Counts;

/// How cloning the failing tests affects a measure's accuracy, as Zhang et al.'s cloning study proves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cloning {
    /// The ranking is the same for every number of clones.
    Preserved,
    /// Never worse and sometimes better with one fault (non-deterministic with several).
    Improved,
    /// Better on some programs and worse on others.
    NonDeterministic,
}

impl Cloning {
    pub fn as_str(self) -> &'static str {
        match self {
            Cloning::Preserved => "preserved",
            Cloning::Improved => "improved",
            Cloning::NonDeterministic => "non-deterministic",
        }
    }
}

/// How a measure is computed.
#[derive(Clone, Copy)]
pub enum Kind {
    /// A function of the unit's own spectrum.
    Spectrum(fn(Counts) -> f64),
    /// Doric's causal likelihood `cl` (Eq. 7): needs every test's coverage size.
    CausalLikelihood,
    /// Doric's fault likelihood `P(f)` (Eq. 4–6).
    FaultLikelihood,
    /// `cl` with updating: an inspection order that refutes the top unit and recomputes.
    CausalLikelihoodUpdating,
    /// CP: block scores propagated over the control-flow edge profiles (needs edges).
    Propagation(CpVariant),
    /// The named base measure's ranking with the lines where a failing test's operation
    /// panicked moved first (`measures::stack_base` resolves the name).
    StackFirst(&'static str),
    /// A linear score over coverage, backtrace and line evidence, with committed weights
    /// ([`crate::combined`]).
    Combined,
}

/// A named measure with its formula and source.
pub struct Measure {
    pub name: &'static str,
    /// Other names accepted by `--measure`.
    pub aliases: &'static [&'static str],
    pub formula: &'static str,
    pub citation: &'static str,
    /// Xie et al.'s single-fault equivalence group (ER1–ER6), for the cloning study's 33 formulas.
    pub group: Option<&'static str>,
    /// The cloning study's proven class, where the paper gives one.
    pub cloning: Option<Cloning>,
    pub kind: Kind,
}

impl Measure {
    /// The CP variant the measure is, if it is one.
    pub fn cp_variant(&self) -> Option<CpVariant> {
        match self.kind {
            Kind::Propagation(v) => Some(v),
            _ => None,
        }
    }
}

/// Division with the project's conventions: `0/0 = 0`, `x/0 = ±f64::MAX` (never NaN or ∞).
pub fn div(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        if x == 0.0 { 0.0 } else { f64::MAX.copysign(x) }
    } else {
        x / y
    }
}

/// Natural logarithm with `ln(x) = -f64::MAX` for `x <= 0` (the limit at 0, never NaN or -∞).
pub fn ln(x: f64) -> f64 {
    if x > 0.0 { x.ln() } else { -f64::MAX }
}

/// A finite score: infinities become `±f64::MAX`, and a NaN (an indeterminate form no
/// catalogue formula produces) ranks last.
pub fn finite(x: f64) -> f64 {
    if x.is_nan() {
        -f64::MAX
    } else {
        x.clamp(-f64::MAX, f64::MAX)
    }
}
