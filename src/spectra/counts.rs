//! A unit's spectrum: how many failing and passing tests run it and how many do not.

/// The spectrum of one unit: failing/passing tests that run it (`ef`, `ep`) and that do not.
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
    /// All tests.
    pub fn n(&self) -> f64 {
        self.f() + self.p()
    }
    /// The failing tests counted `c` times (Zhang et al.'s cloning of failed test cases).
    pub fn cloned(self, c: f64) -> Self {
        Counts {
            ef: self.ef * c,
            nf: self.nf * c,
            ..self
        }
    }
    /// +0.5 on every count (the smoothing of Doric's 127-measure experiment).
    pub fn smoothed(self) -> Self {
        Counts {
            ef: self.ef + 0.5,
            ep: self.ep + 0.5,
            nf: self.nf + 0.5,
            np: self.np + 0.5,
        }
    }
}
