//! Ambiguity groups: the candidates (units run by at least one failing test) with identical
//! coverage columns, which no spectrum measure can tell apart, each scored and reported as one
//! entry; and which failing tests run which group ([`Incidence`]).

use std::collections::HashMap;

use crate::bitset::BitSet;
use crate::measures::doric::Incidence;
use crate::spectra::{Counts, Spectra};

/// One ambiguity group: units with identical coverage (a single unit when grouping is off).
#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// Unit indices into `Spectra::units`, in code order.
    pub units: Vec<usize>,
    /// The raw spectrum shared by every member.
    pub counts: Counts,
}

/// What, beside identical coverage, a line must share with the others of its group: its CP
/// scores and combined score (when those split groups) and how many failing tests'
/// backtraces first enter ranked code at it.
pub type Split = (Vec<Option<u64>>, u32);

/// The candidates of a matrix in groups.
pub struct Grouping {
    /// In code order (of each group's first unit).
    pub groups: Vec<Group>,
    /// Test indices of the failing tests (the failing set E).
    pub failing: Vec<usize>,
    pub incidence: Incidence,
}

/// The candidates of `spectra` in code order, those with identical columns and the same
/// `split` in one group (each alone unless `group`).
pub fn group(spectra: &Spectra, group: bool, split: impl Fn(usize) -> Split) -> Grouping {
    let fail = spectra.failing_mask();
    let failing: Vec<usize> = (0..spectra.tests.len()).filter(|&t| fail.contains(t)).collect();
    let (groups, reps) = candidates(spectra, group, &fail, split);
    let incidence = incidence(spectra.tests.len(), &failing, &fail, &groups, &reps);
    Grouping {
        groups,
        failing,
        incidence,
    }
}

/// The groups, and each one's coverage column.
fn candidates<'s>(
    spectra: &'s Spectra,
    group: bool,
    fail: &BitSet,
    split: impl Fn(usize) -> Split,
) -> (Vec<Group>, Vec<&'s BitSet>) {
    let pass = spectra.passing_mask();
    let total_f = fail.count_and(fail);
    let total_p = pass.count_and(&pass);
    let mut groups: Vec<Group> = Vec::new();
    let mut by_column: HashMap<(&[u64], Split), usize> = HashMap::new();
    let mut reps: Vec<&BitSet> = Vec::new();
    for (u, col) in spectra.coverage.iter().enumerate() {
        let ef = col.count_and(fail);
        if ef == 0 {
            continue;
        }
        if group && let Some(&g) = by_column.get(&(col.words(), split(u))) {
            groups[g].units.push(u);
            continue;
        }
        let ep = col.count_and(&pass);
        if group {
            by_column.insert((col.words(), split(u)), groups.len());
        }
        reps.push(col);
        groups.push(Group {
            units: vec![u],
            counts: Counts::new(ef, ep, total_f - ef, total_p - ep),
        });
    }
    (groups, reps)
}

/// Which failing tests run each group (`reps[g]`: group `g`'s column).
fn incidence(tests: usize, failing: &[usize], fail: &BitSet, groups: &[Group], reps: &[&BitSet]) -> Incidence {
    // position[t]: where failing test `t` is in `failing` (None: `t` does not fail).
    let mut position: Vec<Option<u32>> = vec![None; tests];
    for (i, &t) in failing.iter().enumerate() {
        position[t] = Some(i as u32);
    }
    let mut incidence = Incidence::new(failing.len());
    for (g, col) in groups.iter().zip(reps) {
        let tests = col
            .ones_and(fail)
            .map(|t| position[t].expect("only failing tests are visited"));
        incidence.push(g.units.len(), g.counts.ef + g.counts.ep, tests);
    }
    incidence.finish()
}
