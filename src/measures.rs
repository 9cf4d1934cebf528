//! Spectrum-based suspiciousness measures: functions of (ef, ep, nf, np).
//!
//! Adding a measure is one [`Measure`] entry in [`MEASURES`]: a name, its formula, the paper
//! it comes from, and a function of [`Counts`].
//!
//! Division by zero: `x / 0` is `0` when `x = 0` and `±f64::MAX` otherwise (see [`div`]), so no
//! score is ever NaN or infinite, and a unit whose denominator vanishes because no passing test
//! covers it stays at the top, as the formula's limit says it should.

/// The spectrum of one unit: failing/passing tests that cover it (`ef`, `ep`) and that do not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Counts {
    pub ef: f64,
    pub ep: f64,
    pub nf: f64,
    pub np: f64,
}

impl Counts {
    pub fn new(ef: u32, ep: u32, nf: u32, np: u32) -> Self {
        Counts {
            ef: ef.into(),
            ep: ep.into(),
            nf: nf.into(),
            np: np.into(),
        }
    }
    /// All failing tests.
    pub fn f(&self) -> f64 {
        self.ef + self.nf
    }
    /// All passing tests.
    pub fn p(&self) -> f64 {
        self.ep + self.np
    }
}

/// A named measure with its formula and source.
pub struct Measure {
    pub name: &'static str,
    pub formula: &'static str,
    pub citation: &'static str,
    pub score: fn(&Counts) -> f64,
}

/// Division with the project's 0/0 and x/0 conventions (never NaN, never infinite).
pub fn div(x: f64, y: f64) -> f64 {
    if y == 0.0 {
        if x == 0.0 { 0.0 } else { f64::MAX.copysign(x) }
    } else {
        x / y
    }
}

/// Ochiai: ef / √((ef+nf)(ef+ep)).
fn ochiai(c: &Counts) -> f64 {
    div(c.ef, (c.f() * (c.ef + c.ep)).sqrt())
}

/// Tarantula: (ef/F) / (ef/F + ep/P).
fn tarantula(c: &Counts) -> f64 {
    let fail = div(c.ef, c.f());
    let pass = div(c.ep, c.p());
    div(fail, fail + pass)
}

/// DStar with * = 2: ef² / (ep + nf).
fn dstar2(c: &Counts) -> f64 {
    div(c.ef * c.ef, c.ep + c.nf)
}

/// Naish2 (Naish-I): ef − ep / (ep + np + 1).
fn naish2(c: &Counts) -> f64 {
    c.ef - c.ep / (c.ep + c.np + 1.0)
}

/// The catalogue, default first.
pub static MEASURES: &[Measure] = &[
    Measure {
        name: "ochiai",
        formula: "ef / sqrt((ef + nf) * (ef + ep))",
        citation: "Abreu, Zoeteweij, van Gemund, 'On the accuracy of spectrum-based fault localization', TAICPART-MUTATION 2007",
        score: ochiai,
    },
    Measure {
        name: "tarantula",
        formula: "(ef / (ef + nf)) / (ef / (ef + nf) + ep / (ep + np))",
        citation: "Jones, Harrold, Stasko, 'Visualization of test information to assist fault localization', ICSE 2002",
        score: tarantula,
    },
    Measure {
        name: "dstar",
        formula: "ef^2 / (ep + nf)",
        citation: "Wong, Debroy, Gao, Li, 'The DStar method for effective software fault localization', IEEE Trans. Reliability 2014",
        score: dstar2,
    },
    Measure {
        name: "naish2",
        formula: "ef - ep / (ep + np + 1)",
        citation: "Naish, Lee, Ramamohanarao, 'A model for spectra-based software diagnosis', TOSEM 2011 (Naish-I; also Landsberg et al., single-fault optimal data)",
        score: naish2,
    },
];

/// Looks a measure up by name (case-insensitive; `d*`/`dstar2` and `naish-i` accepted).
pub fn find(name: &str) -> Option<&'static Measure> {
    let lower = name.to_ascii_lowercase();
    let canonical = match lower.as_str() {
        "d*" | "dstar2" | "d2" => "dstar",
        "naish-i" | "naish-1" | "naishi" => "naish2",
        other => other,
    };
    MEASURES.iter().find(|m| m.name == canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score(name: &str, c: Counts) -> f64 {
        (find(name).unwrap().score)(&c)
    }

    /// ALGORITHMS.md §1: seed 003's 10-test minmax, spectra ⟨ef,nf,ep,np⟩ per column.
    fn seed003_columns() -> [Counts; 5] {
        [
            Counts::new(3, 7, 0, 0),
            Counts::new(0, 3, 3, 4),
            Counts::new(1, 2, 2, 5),
            Counts::new(3, 1, 0, 6),
            Counts::new(1, 3, 2, 4),
        ]
    }

    #[test]
    fn naish2_matches_the_seed003_minmax_vector() {
        let got: Vec<f64> = seed003_columns().iter().map(|c| score("naish2", *c)).collect();
        let want = [2.125, -0.375, 0.75, 2.875, 0.625];
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?}");
        }
    }

    #[test]
    fn ochiai_tarantula_and_dstar_match_hand_computed_values() {
        // C4 of seed 003: ef 3, ep 1, nf 0, np 6.
        let c4 = seed003_columns()[3];
        assert!((score("ochiai", c4) - 3.0 / (3.0f64 * 4.0).sqrt()).abs() < 1e-12);
        assert!((score("tarantula", c4) - 1.0 / (1.0 + 1.0 / 7.0)).abs() < 1e-12);
        assert!((score("dstar", c4) - 9.0).abs() < 1e-12);
        // Doric's minmax fault u3 (ef 3, ep 0, nf 0): D* divides by zero and stays on top.
        let u3 = Counts::new(3, 0, 0, 2);
        assert_eq!(score("dstar", u3), f64::MAX);
        assert_eq!(score("ochiai", u3), 1.0);
        assert_eq!(score("tarantula", u3), 1.0);
    }

    #[test]
    fn no_measure_returns_nan_or_infinity_on_degenerate_spectra() {
        for m in MEASURES {
            for ef in 0..3 {
                for ep in 0..3 {
                    for nf in 0..3 {
                        for np in 0..3 {
                            let s = (m.score)(&Counts::new(ef, ep, nf, np));
                            assert!(s.is_finite(), "{} gave {s} on {ef} {ep} {nf} {np}", m.name);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn aliases_resolve_to_canonical_names() {
        assert_eq!(find("D*").unwrap().name, "dstar");
        assert_eq!(find("Naish-I").unwrap().name, "naish2");
        assert!(find("nope").is_none());
    }
}
