//! Failing tests that look independent: two bugs, or a failure beside one that has nothing to do
//! with it. A spectrum measure pools every failing test, so the lines of the bug most tests hit
//! bury the other's. Jones, Bowring and Harrold ("Debugging in parallel", ISSTA 2007) rank each
//! cluster of failing tests against the passing tests on its own; FLITSR (Callaghan and Fischer,
//! "Improving spectrum-based localization of multiple faults by iterative test suite reduction")
//! interleaves what each finds. Here a cluster is what failing tests share that passing tests
//! do not: two failing tests are linked when both ran a line no passing test ran, or when both
//! backtraces pass through the same ranked line. A failing test with neither (an assertion in a
//! test failed after common code) says nothing about independence and joins every cluster.

use crate::bitset::BitSet;
use crate::spectra::{Outcome, Spectra};

/// The clusters of failing tests, when there are at least two.
#[derive(Clone, Debug, PartialEq)]
pub struct Clusters {
    /// Test indices of each cluster's own failing tests, clusters ordered by their first test.
    pub clusters: Vec<Vec<usize>>,
    /// Failing tests that link to nothing: part of every cluster.
    pub shared: Vec<usize>,
}

impl Clusters {
    /// The spectra that rank cluster `c`: every failing test outside it (and outside the shared
    /// ones) left out, as if it had not run.
    pub fn spectra_of(&self, spectra: &Spectra, c: usize) -> Spectra {
        let mut out = spectra.clone();
        for (i, cluster) in self.clusters.iter().enumerate() {
            if i != c {
                for &t in cluster {
                    out.tests[t].outcome = Outcome::Ignored;
                }
            }
        }
        out
    }
}

/// The failing tests of `spectra` in clusters that share nothing ([`Clusters`]); `None` when
/// they form fewer than two.
pub fn failure_clusters(spectra: &Spectra) -> Option<Clusters> {
    let fail = spectra.failing_mask();
    let pass = spectra.passing_mask();
    let n = spectra.tests.len();
    let mut parent: Vec<usize> = (0..n).collect();
    let mut informative = BitSet::new(n);
    let mut link = |tests: &mut dyn Iterator<Item = usize>, parent: &mut Vec<usize>| {
        let mut first = None;
        for t in tests {
            informative.insert(t);
            match first {
                None => first = Some(t),
                Some(f) => union(parent, f, t),
            }
        }
    };
    for col in &spectra.coverage {
        if col.count_and(&pass) == 0 {
            link(&mut col.ones_and(&fail), &mut parent);
        }
    }
    let mut on_stack: Vec<Vec<usize>> = vec![Vec::new(); spectra.units.len()];
    crate::evidence::ranked_frames(spectra, |t, u, _| {
        if on_stack[u].last() != Some(&t) {
            on_stack[u].push(t);
        }
    });
    for tests in &on_stack {
        link(&mut tests.iter().copied(), &mut parent);
    }
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    let mut root_of: Vec<Option<usize>> = vec![None; n];
    let mut shared = Vec::new();
    for t in (0..n).filter(|&t| fail.contains(t)) {
        if !informative.contains(t) {
            shared.push(t);
            continue;
        }
        let r = find(&mut parent, t);
        match root_of[r] {
            Some(c) => clusters[c].push(t),
            None => {
                root_of[r] = Some(clusters.len());
                clusters.push(vec![t]);
            }
        }
    }
    (clusters.len() >= 2).then_some(Clusters { clusters, shared })
}

fn find(parent: &mut [usize], mut x: usize) -> usize {
    while parent[x] != x {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    x
}

fn union(parent: &mut [usize], a: usize, b: usize) {
    let (ra, rb) = (find(parent, a), find(parent, b));
    if ra != rb {
        parent[ra.max(rb)] = ra.min(rb);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::tests::{frame, matrix};

    /// Two failing tests each with a line of its own that no passing test runs: two clusters.
    /// A third failing test that runs only common lines joins both.
    #[test]
    fn failing_tests_that_share_no_failure_only_line_are_apart() {
        let s = matrix(&["1100-", "1010-", "1000-", "1000+"]);
        let c = failure_clusters(&s).unwrap();
        assert_eq!(c.clusters, vec![vec![0], vec![1]]);
        assert_eq!(c.shared, vec![2]);
        let sub = c.spectra_of(&s, 0);
        assert_eq!(sub.tests[1].outcome, Outcome::Ignored);
        assert!(sub.tests[0].outcome.is_failing() && sub.tests[2].outcome.is_failing());
    }

    /// Sharing a failure-only line, or a line on both backtraces, links them.
    #[test]
    fn a_shared_line_or_frame_links_failing_tests() {
        assert_eq!(failure_clusters(&matrix(&["1101-", "1011-", "1000+"])), None);
        let mut s = matrix(&["1100-", "1010-", "1111+"]);
        assert!(failure_clusters(&s).is_none(), "no failure-only line: nothing to tell");
        s.tests[0].stack = vec![frame(2)];
        s.tests[1].stack = vec![frame(3)];
        assert!(failure_clusters(&s).is_some(), "different frames: apart");
        s.tests[1].stack = vec![frame(3), frame(1)];
        s.tests[0].stack = vec![frame(2), frame(1)];
        assert_eq!(failure_clusters(&s), None, "a common frame links them");
    }
}
