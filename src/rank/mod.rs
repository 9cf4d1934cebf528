//! Ranks scored groups: descending key, ties in code order, mid-ranks at two levels (entries
//! of the report, and the source lines inside them). Each measure's scores ([`scores`]) are
//! computed over the analysis formed for it ([`Analyses`]).

use crate::analysis::Analysis;
use crate::clusters::Clusters;
use crate::evidence::LineEvidence;
use crate::measures::Measure;
use crate::score::{Key, Options, Scored, Tier};
use crate::spectra::Counts;

mod analyses;
pub mod functions;
pub mod scores;

pub use analyses::Analyses;

/// One entry of a ranking: an ambiguity group (or a single unit).
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    /// Index into `Analysis::groups`.
    pub group: usize,
    pub score: f64,
    /// The measure could not score it (CP: no block maps to its lines); `score` means
    /// nothing then, and the entry ranks after every scored one.
    pub unscored: bool,
    /// log10 of the probability, for Doric's measures.
    pub log10: Option<f64>,
    /// 1-based mid-rank among entries: entries ranked strictly higher, plus (tied + 1) / 2.
    pub rank: f64,
    /// Entries sharing this rank (1 when not tied).
    pub tied: usize,
    /// 1-based mid-rank among source lines: lines in entries ranked strictly higher, plus
    /// (lines in tied entries + 1) / 2. What EXAM-style metrics count.
    pub line_rank: f64,
    pub counts: Counts,
    /// A failing test ran this unit and nothing else (Doric's P(f) = 1).
    pub certain: bool,
    /// A stack-first ranking put it first: a failing test panicked on its own operation
    /// (`score` is then the base measure's).
    pub panicked: bool,
    /// Its lines changed since `--diff-base` (units, in code order).
    pub changed_lines: Vec<usize>,
    /// With `--order ht`: the expected steps until the HT_Rank model reaches its first line.
    pub expected_time: Option<f64>,
}

impl Ranked {
    /// Some of its lines changed since `--diff-base`.
    pub fn changed(&self) -> bool {
        !self.changed_lines.is_empty()
    }

    /// The score, or `None` for an entry the measure could not score.
    pub fn shown_score(&self) -> Option<f64> {
        (!self.unscored).then_some(self.score)
    }
}

/// One measure's ranking.
pub struct Ranking<'m> {
    pub measure: &'m Measure,
    /// The analysis whose groups the entries are: each measure ranks the groups formed for it
    /// (CP's split by its own scores), so no measure's entries depend on what else was asked.
    pub analysis: &'m Analysis<'m>,
    pub entries: Vec<Ranked>,
    /// With `--order ht`: how the hitting times were obtained.
    pub ht: Option<crate::hitting::Method>,
    /// `--only-changed`: the entries are those holding lines changed since `--diff-base`, and
    /// a report shows those lines only.
    pub only_changed: bool,
}

impl Ranking<'_> {
    /// Re-orders the entries by expected hitting time (earliest first; ties keep score
    /// order) and reassigns both mid-ranks. `log_times[g]` is the logarithm of group g's time
    /// (deep entries' times exceed the largest double).
    pub fn order_by_time(&mut self, log_times: &[f64], method: crate::hitting::Method) {
        let analysis = self.analysis;
        for x in &mut self.entries {
            x.expected_time = Some(log_times[x.group].exp());
        }
        self.entries
            .sort_by(|a, b| log_times[a.group].total_cmp(&log_times[b.group]));
        let same = |a: &Ranked, b: &Ranked| crate::hitting::same_time(log_times[a.group], log_times[b.group], 1e-9);
        assign_mid_ranks(analysis, &mut self.entries, same);
        self.ht = Some(method);
    }
}

impl Ranking<'_> {
    /// Re-orders the entries with a key (`keys[i]` of entry `i`) among the places those
    /// entries hold, highest key first (ties keep their order); entries without a key stay
    /// where they are. Entries tie only if they tied before and have the same key.
    pub fn reorder_within(&mut self, keys: &[Option<f64>]) {
        let places: Vec<usize> = (0..self.entries.len()).filter(|&i| keys[i].is_some()).collect();
        let mut moved: Vec<usize> = places.clone();
        moved.sort_by(|&a, &b| keys[b].unwrap_or(0.0).total_cmp(&keys[a].unwrap_or(0.0)));
        let old = self.entries.clone();
        let mut new_keys = keys.to_vec();
        for (&place, &from) in places.iter().zip(&moved) {
            self.entries[place] = old[from].clone();
            new_keys[place] = keys[from];
        }
        let key_of: std::collections::HashMap<usize, Option<f64>> =
            self.entries.iter().zip(&new_keys).map(|(x, k)| (x.group, *k)).collect();
        assign_mid_ranks(self.analysis, &mut self.entries, |a, b| {
            a.rank == b.rank && key_of[&a.group] == key_of[&b.group]
        });
    }
}

/// Ranks every group of `analysis` by `measure`.
pub fn rank<'m>(analysis: &'m Analysis<'m>, measure: &'m Measure, opts: &Options) -> Ranking<'m> {
    rank_only(analysis, measure, opts, None)
}

/// Ranks the groups with `keep[g]` (all when `None`) by `measure`.
pub fn rank_only<'m>(
    analysis: &'m Analysis<'m>,
    measure: &'m Measure,
    opts: &Options,
    keep: Option<&[bool]>,
) -> Ranking<'m> {
    let scored = analysis.score(measure, opts);
    Ranking {
        measure,
        analysis,
        entries: rank_filtered(analysis, &scored, keep),
        ht: None,
        only_changed: false,
    }
}

/// Orders groups by their scores and assigns both mid-ranks.
pub fn rank_scored(analysis: &Analysis, scored: &[Scored]) -> Vec<Ranked> {
    rank_filtered(analysis, scored, None)
}

fn rank_filtered(analysis: &Analysis, scored: &[Scored], keep: Option<&[bool]>) -> Vec<Ranked> {
    let mut order: Vec<usize> = (0..scored.len()).filter(|&g| keep.is_none_or(|k| k[g])).collect();
    // Tied entries: the one whose best line has more evidence first (when lines are ordered
    // by evidence), else in code order (groups are in code order already; the sort is stable).
    let lead: Vec<Option<LineEvidence>> = (0..scored.len()).map(|g| analysis.tie(analysis.lead(g))).collect();
    order.sort_by(|&a, &b| {
        scored[a]
            .key
            .cmp_descending(&scored[b].key)
            .then_with(|| match (lead[a], lead[b]) {
                (Some(x), Some(y)) => x.cmp_descending(&y),
                _ => std::cmp::Ordering::Equal,
            })
    });
    let mut out: Vec<Ranked> = order
        .into_iter()
        .map(|g| Ranked {
            group: g,
            score: scored[g].score,
            unscored: scored[g].key.tier == Tier::Unscored,
            log10: scored[g].log10,
            rank: 0.0,
            tied: 1,
            line_rank: 0.0,
            counts: analysis.groups[g].counts,
            certain: analysis.certain(g),
            panicked: scored[g].key.tier == Tier::Stack,
            changed_lines: Vec::new(),
            expected_time: None,
        })
        .collect();
    assign_mid_ranks(analysis, &mut out, |a, b| scored[a.group].key == scored[b.group].key);
    out
}

/// Keys each group by the best position it reaches in any cluster's own ranking (`score_of`
/// scores a cluster's analysis; ties there stay ties): the first entries of every cluster
/// come first, then the second ones. The scores shown stay the pooled ranking's.
pub fn interleave(
    analysis: &Analysis,
    clusters: &Clusters,
    scored: &mut [Scored],
    score_of: impl Fn(&Analysis) -> Vec<Scored>,
) {
    let mut best = vec![f64::INFINITY; analysis.groups.len()];
    for i in 0..clusters.clusters.len() {
        let spectra = clusters.spectra_of(analysis.spectra, i);
        let sub = Analysis::new(&spectra, true).ranked_like(analysis);
        let ranked = rank_scored(&sub, &score_of(&sub));
        let mut rank_of_unit = vec![f64::INFINITY; spectra.units.len()];
        for r in &ranked {
            for &u in &sub.groups[r.group].units {
                rank_of_unit[u] = r.rank;
            }
        }
        for (g, group) in analysis.groups.iter().enumerate() {
            best[g] = best[g].min(rank_of_unit[group.units[0]]);
        }
    }
    for (s, b) in scored.iter_mut().zip(best) {
        s.key = Key::score(-b);
    }
}

/// Sets `rank`, `tied` and `line_rank` on entries already in order; `same` says which
/// neighbours tie.
fn assign_mid_ranks(analysis: &Analysis, entries: &mut [Ranked], same: impl Fn(&Ranked, &Ranked) -> bool) {
    let (mut entries_before, mut lines_before, mut start) = (0usize, 0usize, 0usize);
    while start < entries.len() {
        let end = start + entries[start..].iter().take_while(|x| same(x, &entries[start])).count();
        let tied = end - start;
        let lines: usize = entries[start..end]
            .iter()
            .map(|x| analysis.groups[x.group].units.len())
            .sum();
        for x in &mut entries[start..end] {
            x.rank = entries_before as f64 + (tied as f64 + 1.0) / 2.0;
            x.tied = tied;
            x.line_rank = lines_before as f64 + (lines as f64 + 1.0) / 2.0;
        }
        entries_before += tied;
        lines_before += lines;
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measures::find;
    use crate::spectra::tests::{doric_minmax, matrix};

    #[test]
    fn ochiai_puts_doric_minmax_fault_first_and_halves_ties() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let r = rank(&a, find("ochiai").unwrap(), &Options::default()).entries;
        // u1 is covered by no failing test, so it is not listed.
        let units: Vec<usize> = r.iter().map(|x| a.groups[x.group].units[0]).collect();
        assert_eq!(units, vec![2, 1, 3]);
        assert_eq!(r[0].rank, 1.0);
        // u2 and u4 are both ⟨ef 1, ep 1⟩ but run by different tests: two entries tied at 2.5.
        assert_eq!((r[1].rank, r[2].rank, r[1].tied), (2.5, 2.5, 2));
    }

    #[test]
    fn reordering_moves_keyed_entries_among_their_places_only() {
        // Four single-line entries ranked u0 (wong1 3), u1 (2), u2 (1), u3 (0).
        let s = matrix(&["111-", "110-", "100-", "000+"]);
        let a = Analysis::new(&s, true);
        let mut r = rank(&a, find("wong1").unwrap(), &Options::default());
        let units = |r: &Ranking| r.entries.iter().map(|x| a.groups[x.group].units[0]).collect::<Vec<_>>();
        assert_eq!(units(&r), vec![0, 1, 2]);
        // u0 and u2 have keys (u2's higher): they swap; u1, without one, keeps its place.
        r.reorder_within(&[Some(0.1), None, Some(0.9)]);
        assert_eq!(units(&r), vec![2, 1, 0]);
        let ranks: Vec<f64> = r.entries.iter().map(|x| x.rank).collect();
        assert_eq!(ranks, vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn groups_count_their_lines_in_line_ranks() {
        // u1, u2 identical; u3 alone; u4 identical to nothing.
        let s = matrix(&["1110-", "1100-", "0001+", "0011+"]);
        let a = Analysis::new(&s, true);
        let r = rank(&a, find("wong1").unwrap(), &Options::default()).entries;
        assert_eq!(a.groups[r[0].group].units, vec![0, 1]);
        assert_eq!((r[0].rank, r[0].line_rank), (1.0, 1.5));
        assert_eq!((r[1].rank, r[1].line_rank), (2.0, 3.0));
    }
}
