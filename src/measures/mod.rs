//! Suspiciousness measures: the spectrum-based catalogue ([`catalogue`]) and Doric's
//! probabilistic measures ([`doric`]), behind one [`Measure`] interface.
//!
//! Conventions (recorded in every report):
//! - **Division by zero** ([`div`]): `0/0 = 0`; `x/0 = ±f64::MAX` (the formula's limit, so a
//!   unit no passing test runs stays on top). `ln(0) = -f64::MAX` ([`ln`]). A score that still
//!   overflows is clamped to `±f64::MAX`; no catalogue formula yields NaN on any spectrum (tested
//!   exhaustively on small counts).
//! - **Smoothing** (optional): Doric's +0.5 on each of ef, ep, nf, np before the formula.
//! - **Cloning** (optional): the failing tests counted `c` times (ef, nf scaled by c).

pub mod catalogue;
pub mod doric;
mod measure;

use crate::cp::CpVariant;

pub use crate::spectra::Counts;
pub use measure::{Cloning, Kind, Measure, div, finite, ln};

/// What a measure is, through its base for a stack-first ranking ([`stack_base`]).
impl Measure {
    /// Whether the measure ranks the combined score (itself, or under panic sites first): it
    /// ranks the groups split by that score ([`crate::combined::analysis`]).
    pub fn is_combined(&self) -> bool {
        match self.kind {
            Kind::Combined => true,
            Kind::StackFirst(base) => stack_base(base).is_combined(),
            _ => false,
        }
    }

    /// What the reports call its score: `probability` for Doric's measures, else `score`.
    pub fn score_noun(&self) -> &'static str {
        if self.is_probability() { "probability" } else { "score" }
    }

    /// Whether the measure's score is a probability (Doric's measures).
    pub fn is_probability(&self) -> bool {
        match self.kind {
            Kind::CausalLikelihood | Kind::FaultLikelihood | Kind::CausalLikelihoodUpdating => true,
            Kind::Spectrum(_) | Kind::Propagation(_) | Kind::Combined => false,
            Kind::StackFirst(base) => stack_base(base).is_probability(),
        }
    }

    /// Whether the measure needs control-flow edge profiles, not only the line matrix.
    pub fn needs_edges(&self) -> bool {
        match self.kind {
            Kind::Propagation(_) => true,
            Kind::Spectrum(_)
            | Kind::CausalLikelihood
            | Kind::FaultLikelihood
            | Kind::CausalLikelihoodUpdating
            | Kind::Combined => false,
            Kind::StackFirst(base) => stack_base(base).needs_edges(),
        }
    }
}

/// The base measure a stack-first ranking names (always one of the catalogue; unit-tested).
pub fn stack_base(name: &str) -> &'static Measure {
    find(name).expect("a stack-first ranking names a measure of the catalogue")
}

/// Doric's measures (Landsberg & Barr), computed over the whole matrix.
pub static DORIC: &[Measure] = &[
    Measure {
        name: "cl",
        aliases: &["causal-likelihood", "cl-n"],
        formula: "sum over failing tests k that run u of 1 / (2^rho_k - 1), divided by ef + ep (rho_k = units test k runs)",
        citation: "Landsberg & Barr, 'Doric: foundations for statistical fault localisation', Eq. 7 (computed in log space)",
        group: None,
        cloning: None,
        kind: Kind::CausalLikelihood,
    },
    Measure {
        name: "fault-likelihood",
        aliases: &["pf", "p(f)"],
        formula: "1 - product over failing tests k that run u of (1 - 2^(rho_k - 1) / (2^rho_k - 1))",
        citation: "Landsberg & Barr, Doric, Eq. 4-6",
        group: None,
        cloning: None,
        kind: Kind::FaultLikelihood,
    },
    Measure {
        name: "cl-u",
        aliases: &["clu", "cl-updating"],
        formula: "inspect the unit of highest cl; if it is not the fault, refute it (rho_k -= its coverage) and recompute; up to the update bound",
        citation: "Landsberg & Barr, Doric, section 3 (updating, Proposition 3.12)",
        group: None,
        cloning: None,
        kind: Kind::CausalLikelihoodUpdating,
    },
];

/// Measures over the control-flow graph (CP: Zhang, Chan, Tse, Jiang & Wang). `cp` is the
/// paper's, within functions; `cp-calls` propagates along calls too and damps only loops.
pub static CFG: &[Measure] = &[
    Measure {
        name: "cp",
        aliases: &["capturing-propagation"],
        formula: "BR(b) = sum over edges b->c of BR(c) d(b->c) / (sum of d into c), exit blocks: sum of d into them; d = (theta_fail - theta_pass) / (theta_fail + theta_pass) per CFG edge; a line takes its best block's BR",
        citation: CP_CITATION,
        group: None,
        cloning: None,
        kind: Kind::Propagation(CpVariant::PAPER),
    },
    Measure {
        name: "cp-calls",
        aliases: &["cp-interprocedural"],
        formula: "cp over the dynamic CFG with calls: a block that calls a function precedes its entry block (d of the call from the tests that ran both), and a singular system is damped on its loops only",
        citation: CP_CITATION,
        group: None,
        cloning: None,
        kind: Kind::Propagation(CpVariant::INTERPROCEDURAL),
    },
];

const CP_CITATION: &str =
    "Zhang, Chan, Tse, Jiang & Wang, 'Capturing propagation of infected program states', ESEC/FSE 2009";

/// A stack-first ranking over the base measure of that name.
macro_rules! stack_first {
    ($name:literal, $base:literal) => {
        Measure {
            name: $name,
            aliases: &[],
            formula: concat!(
                $base,
                ", with the lines where failing tests' own operations panicked moved first, by how many tests ",
                "(an index or slice out of bounds, overflow, division by zero, a std precondition; ",
                "not assert!, unwrap or panic!)"
            ),
            citation: "Wu, Zhang, Cheung & Kim, 'CrashLocator: locating crashing faults based on crash stacks', ISSTA 2014; Zou, Liang, Xiong, Ernst & Zhang, 'An empirical study of fault localization families and their combinations', IEEE TSE 2019",
            group: None,
            cloning: None,
            kind: Kind::StackFirst($base),
        }
    };
}

/// Rankings that combine a measure with the failing tests' panic backtraces.
///
/// A panic backtrace says where the failure became visible. On real panics (Panic4R) the
/// innermost frame in the crate's own non-test code is the fault about half the time, and no
/// spectrum measure knows it: the panicking line is run by passing tests too. Only that frame
/// moves (callers, tried too, cost more on injected faults than they gained on real ones), and
/// only when the line's own operation panicked ([`crate::evidence::operation_panic`]): an
/// `assert!`, `unwrap` or `panic!` detects a state that a fault elsewhere made. When no failing
/// test panicked that way (an assertion in a test failed) each ranking is exactly its base
/// measure.
pub static STACK_FIRST: &[Measure] = &[
    stack_first!("stack-ochiai", "ochiai"),
    stack_first!("stack-dstar2", "dstar2"),
    stack_first!("stack-gp13", "gp13"),
    stack_first!("stack-cl", "cl"),
    stack_first!("stack-combined", "combined"),
];

/// The combined ranking ([`crate::combined`]).
pub static COMBINED: &[Measure] = &[Measure {
    name: "combined",
    aliases: &["learned"],
    formula: "a weighted sum of each line's coverage, backtrace and text features (cargo sfl explain shows them; weights fitted by cargo xtask fit)",
    citation: "Zou, Liang, Xiong, Ernst & Zhang, 'An empirical study of fault localization families and their combinations', IEEE TSE 2019; Wu, Zhang, Cheung & Kim, 'CrashLocator', ISSTA 2014",
    group: None,
    cloning: None,
    kind: Kind::Combined,
}];

/// The default measure: chosen among simpler and fitted rankings on three benchmarks (injected
/// faults, real panics, real regressions) by leave-one-crate-out, the simplest within one
/// standard error of the best (`cargo xtask fit`, DESIGN.md).
pub const DEFAULT: &str = "stack-ochiai";

/// Every measure: the spectrum catalogue, then Doric's, then CP, then the stack-first rankings.
pub fn all() -> impl Iterator<Item = &'static Measure> {
    catalogue::SPECTRUM
        .iter()
        .chain(DORIC)
        .chain(CFG)
        .chain(STACK_FIRST)
        .chain(COMBINED)
}

/// Looks a measure up by name or alias (case-insensitive, `_` read as `-`).
pub fn find(name: &str) -> Option<&'static Measure> {
    let wanted = name.to_ascii_lowercase().replace('_', "-");
    all().find(|m| m.name == wanted || m.aliases.contains(&wanted.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(name: &str, c: Counts) -> f64 {
        match find(name).unwrap_or_else(|| panic!("{name}")).kind {
            Kind::Spectrum(f) => f(c),
            _ => panic!("{name} is not a spectrum measure"),
        }
    }

    /// The 10-test minmax of Landsberg, Sun & Kroening's single-fault-optimal study, spectra
    /// ⟨ef,nf,ep,np⟩ per column.
    fn sfo_minmax_columns() -> [Counts; 5] {
        [
            Counts::new(3, 7, 0, 0),
            Counts::new(0, 3, 3, 4),
            Counts::new(1, 2, 2, 5),
            Counts::new(3, 1, 0, 6),
            Counts::new(1, 3, 2, 4),
        ]
    }

    #[test]
    fn naish2_matches_the_single_fault_optimal_minmax_vector() {
        let got: Vec<f64> = sfo_minmax_columns().iter().map(|c| score("naish-i", *c)).collect();
        let want = [2.125, -0.375, 0.75, 2.875, 0.625];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
    }

    /// Hand-computed values on the single-fault-optimal study's fault C4: ef 3, ep 1, nf 0, np 6 (F 3, P 7, n 10).
    #[test]
    fn formulas_match_hand_computed_values_on_the_single_fault_optimal_fault() {
        let c4 = sfo_minmax_columns()[3];
        let want: &[(&str, f64)] = &[
            ("naish1", 6.0),
            ("binary", 1.0),
            ("jaccard", 0.75),
            ("anderberg", 0.6),
            ("sorensen-dice", 6.0 / 7.0),
            ("dice", 1.5),
            ("goodman", 5.0 / 7.0),
            ("tarantula", 1.0 / (1.0 + 1.0 / 7.0)),
            ("qe", 0.75),
            ("cbi-inc", 0.45),
            ("wong1", 3.0),
            ("wong2", 2.0),
            ("wong3", 2.0),
            ("hamann", 0.8),
            ("simple-matching", 0.9),
            ("sokal", 18.0 / 19.0),
            ("rogers-tanimoto", 9.0 / 11.0),
            ("hamming", 9.0),
            ("euclid", 3.0),
            ("russell-rao", 0.3),
            ("scott", 71.0 / 91.0),
            ("rogot1", 0.5 * (3.0 / 7.0 + 6.0 / 13.0)),
            ("kulczynski1", 3.0),
            ("kulczynski2", 0.875),
            ("m1", 9.0),
            ("m2", 3.0 / 11.0),
            ("ample", 6.0 / 7.0),
            ("ample2", 6.0 / 7.0),
            ("arithmetic-mean", 0.8),
            ("cohen", 36.0 / 46.0),
            ("fleiss", 3.55),
            ("ochiai", 3.0 / 12f64.sqrt()),
            ("ochiai2", 18.0 / 504f64.sqrt()),
            ("geometric-mean", 18.0 / 504f64.sqrt()),
            ("harmonic-mean", 810.0 / 504.0),
            ("rogot2", 0.25 * (0.75 + 1.0 + 1.0 + 6.0 / 7.0)),
            ("dennis", 18.0 / 120f64.sqrt()),
            ("dstar2", 9.0),
            ("dstar3", 27.0),
            ("zoltar", 0.75),
            ("barinel", 0.75),
            ("gp13", 3.6),
            ("lift", 2.5),
            ("odds-ratio", f64::MAX),
            ("yule-q", 1.0),
            ("laplace", 4.0 / 6.0),
            ("conviction", 2.8),
            ("loevinger", 18.0 / 28.0),
            ("certainty", 1.0),
            ("sorgenfrei", 0.75),
            ("simpson", 1.0),
            ("braun-banquet", 0.75),
            ("least-contradiction", 2.0 / 3.0),
            ("recall", 1.0),
        ];
        for &(name, w) in want {
            let g = score(name, c4);
            assert!((g - w).abs() < 1e-12 * w.abs().max(1.0), "{name}: {g} != {w}");
        }
        // Doric's minmax fault u3 (ef 3, ep 0, nf 0): D* divides by zero and stays on top.
        let u3 = Counts::new(3, 0, 0, 2);
        assert_eq!(score("dstar", u3), f64::MAX);
        assert_eq!(score("ochiai", u3), 1.0);
    }

    #[test]
    fn the_catalogue_has_every_named_measure_and_unique_names() {
        let all: Vec<&Measure> = all().collect();
        assert!(
            catalogue::SPECTRUM.len() >= 100,
            "{} spectrum measures",
            catalogue::SPECTRUM.len()
        );
        let mut names = std::collections::HashSet::new();
        for m in &all {
            for n in std::iter::once(&m.name).chain(m.aliases) {
                assert!(names.insert(*n), "{n} names two measures");
                assert_eq!(n.to_ascii_lowercase(), *n);
            }
        }
        // The minimum set the single-fault-optimal and cloning studies name (Lewis has no definition we
        // could verify; see DESIGN.md).
        for n in [
            "naish1",
            "naish2",
            "binary",
            "wong1",
            "wong2",
            "wong3",
            "jaccard",
            "anderberg",
            "sorensen-dice",
            "dice",
            "goodman",
            "cbi-inc",
            "tarantula",
            "qe",
            "hamann",
            "rogers-tanimoto",
            "simple-matching",
            "sokal",
            "hamming",
            "euclid",
            "russell-rao",
            "rogot1",
            "scott",
            "ample",
            "ample2",
            "arithmetic-mean",
            "cohen",
            "fleiss",
            "m1",
            "m2",
            "kulczynski1",
            "kulczynski2",
            "ochiai",
            "ochiai2",
            "dstar2",
            "dstar3",
            "zoltar",
            "gp02",
            "gp03",
            "gp05",
            "gp13",
            "gp19",
            "barinel",
            "klosgen",
            "added-value",
            "gower",
            "sokal-sneath4",
            "certainty",
            "geometric-mean",
            "harmonic-mean",
            "dennis",
            "cl",
            "fault-likelihood",
            "cl-u",
        ] {
            assert!(find(n).is_some(), "{n} missing");
        }
        // The cloning study's 33 formulas with Xie et al.'s groups and the proven cloning classes.
        let tagged: Vec<&Measure> = all.iter().copied().filter(|m| m.cloning.is_some()).collect();
        assert_eq!(tagged.len(), 33);
        let in_group = |g: &str| tagged.iter().filter(|m| m.group == Some(g)).count();
        let sizes: Vec<usize> = ["ER1", "ER2", "ER3", "ER4", "ER5", "ER6"]
            .iter()
            .map(|g| in_group(g))
            .collect();
        assert_eq!(sizes, [2, 5, 3, 7, 3, 2]);
        let class = |c: Cloning| tagged.iter().filter(|m| m.cloning == Some(c)).count();
        assert_eq!(
            (
                class(Cloning::Preserved),
                class(Cloning::Improved),
                class(Cloning::NonDeterministic)
            ),
            (10, 19, 4)
        );
    }

    /// Every formula on every spectrum with counts 0..=6: never NaN (∞ is clamped later, and
    /// `finite` keeps it ordered).
    #[test]
    fn no_formula_returns_nan_on_any_small_spectrum() {
        for m in catalogue::SPECTRUM {
            let Kind::Spectrum(f) = m.kind else { unreachable!() };
            for ef in 0..=6 {
                for ep in 0..=6 {
                    for nf in 0..=6 {
                        for np in 0..=6 {
                            let c = Counts::new(ef, ep, nf, np);
                            for c in [c, c.smoothed(), c.cloned(7.0)] {
                                let s = f(c);
                                assert!(!s.is_nan(), "{} gave NaN on {c:?}", m.name);
                                assert!(finite(s).is_finite());
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn aliases_resolve_to_canonical_names() {
        assert_eq!(find("D*").unwrap().name, "dstar2");
        assert_eq!(find("Naish-I").unwrap().name, "naish2");
        assert_eq!(find("sokal_sneath4").unwrap().name, "rogot2");
        assert_eq!(find("CL").unwrap().name, "cl");
        assert!(find("nope").is_none());
    }
}
