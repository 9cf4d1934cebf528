//! Ranks units by a measure: scores, mid-ranks for ties, display order.

use crate::measures::{Counts, Measure};
use crate::spectra::Spectra;

/// One ranked unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// Index into `Spectra::units`.
    pub unit: usize,
    pub score: f64,
    /// 1-based mid-rank: units scoring strictly higher, plus (tied units + 1) / 2.
    pub rank: f64,
    /// Number of units sharing this score (1 when not tied).
    pub tied: usize,
    pub counts: Counts,
}

/// Every unit covered by at least one failing test, best first, ties in code order.
pub fn rank(spectra: &Spectra, measure: &Measure) -> Vec<Ranked> {
    let counts = spectra.counts();
    let mut out: Vec<Ranked> = counts
        .iter()
        .enumerate()
        .filter(|(_, c)| c.ef > 0.0)
        .map(|(unit, c)| Ranked {
            unit,
            score: (measure.score)(c),
            rank: 0.0,
            tied: 1,
            counts: *c,
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| spectra.units[a.unit].cmp(&spectra.units[b.unit]))
    });
    assign_mid_ranks(&mut out);
    out
}

/// Sets `rank` and `tied` on a list already sorted by descending score.
fn assign_mid_ranks(list: &mut [Ranked]) {
    let mut start = 0;
    while start < list.len() {
        let mut end = start + 1;
        while end < list.len() && list[end].score == list[start].score {
            end += 1;
        }
        let tied = end - start;
        let rank = start as f64 + (tied as f64 + 1.0) / 2.0;
        for r in &mut list[start..end] {
            r.rank = rank;
            r.tied = tied;
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measures::find;
    use crate::spectra::tests::doric_minmax;

    #[test]
    fn ochiai_puts_doric_minmax_fault_first_and_halves_ties() {
        let s = doric_minmax();
        let r = rank(&s, find("ochiai").unwrap());
        // u1 is covered by no failing test, so it is not listed.
        assert_eq!(r.iter().map(|x| x.unit).collect::<Vec<_>>(), vec![2, 1, 3]);
        assert_eq!(r[0].rank, 1.0);
        // u2 and u4 are both ⟨ef 1, ep 1⟩: tied at mid-rank 2.5, shown in code order.
        assert_eq!((r[1].rank, r[2].rank, r[1].tied), (2.5, 2.5, 2));
    }

    #[test]
    fn naish2_ranks_follow_scores() {
        let s = doric_minmax();
        let r = rank(&s, find("naish2").unwrap());
        assert_eq!(r[0].unit, 2);
        assert!((r[0].score - 3.0).abs() < 1e-12);
    }
}
