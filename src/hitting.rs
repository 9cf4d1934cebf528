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
//! Expected hitting times `E[T_{0,x}]` for every location at once: with `B = I − P + 1·e_0ᵀ`
//! (invertible for an ergodic chain), `π = e_0ᵀ B⁻¹` and `E[T_{0,x}] = (B⁻¹)_xx / π_x − (B⁻¹·1)_x`
//! (the fundamental-matrix identity of Kemeny & Snell, with B in place of `I − P + 1πᵀ`). One
//! dense LU (faer), O(n³): exact up to a few thousand states. Larger chains use random walks
//! that record each location's first hitting time (the paper's estimator).

use faer::Mat;

use crate::analysis::Key;
use faer::linalg::solvers::DenseSolveCore;

/// How the chain is shaped.
pub struct ChainSpec<'a> {
    /// Report entries: the locations of each (a single location each for Def. 28/29).
    pub entries: &'a [Vec<usize>],
    /// Each entry's ranking key (higher is more suspicious); equal keys form a score group.
    pub keys: &'a [Key],
    /// Number of locations.
    pub locations: usize,
    /// Jump targets of each location (Def. 26); empty lists for none.
    pub jumps: &'a [Vec<usize>],
    /// Probability of following a jump from a location that has some (Def. 29).
    pub p_jump: f64,
}

/// A Markov chain as sparse rows.
pub struct Chain {
    /// `rows[s]` = (target, probability), summing to 1.
    pub rows: Vec<Vec<(usize, f64)>>,
    /// State index of location 0 (locations are the last states, in order).
    pub first_location: usize,
    pub locations: usize,
}

impl Chain {
    /// Def. 28 (single-location entries, no jumps), Def. 29 (with jumps) or Def. 30 (entries
    /// of several lines: an entry state between group and lines).
    pub fn build(spec: &ChainSpec) -> Chain {
        let h = spec.entries.len();
        // Score groups of entries, most suspicious first.
        let mut order: Vec<usize> = (0..h).collect();
        order.sort_by(|&a, &b| spec.keys[a].cmp_descending(&spec.keys[b]));
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for &e in &order {
            match groups.last_mut() {
                Some(g) if spec.keys[g[0]] == spec.keys[e] => g.push(e),
                _ => groups.push(vec![e]),
            }
        }
        let with_entry_states = spec.entries.iter().any(|e| e.len() != 1);
        let n_groups = groups.len();
        let entry_state = |e: usize| n_groups + e;
        let first_location = if with_entry_states { n_groups + h } else { n_groups };
        let loc = |l: usize| first_location + l;
        let mut rows: Vec<Vec<(usize, f64)>> = vec![Vec::new(); first_location + spec.locations];
        let big_n = h as f64;
        let (up, down) = ((big_n - 1.0) / (2.0 * big_n), 1.0 / (2.0 * big_n));
        let mut entry_group = vec![0; h];
        for (gi, g) in groups.iter().enumerate() {
            let row = &mut rows[gi];
            // Up (or stay, at the top) and down (or stay, at the bottom).
            row.push((gi.saturating_sub(1), up));
            row.push(((gi + 1).min(n_groups - 1), down));
            for &e in g {
                entry_group[e] = gi;
                let target = if with_entry_states {
                    entry_state(e)
                } else {
                    loc(spec.entries[e][0])
                };
                row.push((target, 1.0 / (2.0 * g.len() as f64)));
            }
        }
        let mut home = vec![0; spec.locations];
        for (e, lines) in spec.entries.iter().enumerate() {
            if with_entry_states {
                let row = &mut rows[entry_state(e)];
                row.push((entry_group[e], 0.5));
                for &l in lines {
                    row.push((loc(l), 1.0 / (2.0 * lines.len() as f64)));
                    home[l] = entry_state(e);
                }
            } else {
                home[lines[0]] = entry_group[e];
            }
        }
        for l in 0..spec.locations {
            let jumps = spec.jumps.get(l).map_or(&[][..], Vec::as_slice);
            let row = &mut rows[loc(l)];
            if jumps.is_empty() || spec.p_jump == 0.0 {
                row.push((home[l], 1.0));
            } else {
                row.push((home[l], 1.0 - spec.p_jump));
                for &j in jumps {
                    row.push((loc(j), spec.p_jump / jumps.len() as f64));
                }
            }
        }
        Chain {
            rows,
            first_location,
            locations: spec.locations,
        }
    }

    pub fn states(&self) -> usize {
        self.rows.len()
    }

    /// Exact `E[T_{0,x}]` for every location (dense LU; O(states³)).
    pub fn hitting_times_exact(&self) -> Vec<f64> {
        let n = self.states();
        let mut b = Mat::<f64>::zeros(n, n);
        for (s, row) in self.rows.iter().enumerate() {
            b[(s, s)] += 1.0;
            b[(s, 0)] += 1.0;
            for &(t, p) in row {
                b[(s, t)] -= p;
            }
        }
        let inv = b.partial_piv_lu().inverse();
        (0..self.locations)
            .map(|l| {
                let x = self.first_location + l;
                let row_sum: f64 = (0..n).map(|j| inv[(x, j)]).sum();
                inv[(x, x)] / inv[(0, x)] - row_sum
            })
            .collect()
    }

    /// Random-walk estimate of `E[T_{0,x}]`: `walks` walks from state 0, each until every
    /// location was reached or `max_steps`; unreached locations count `max_steps` (censored).
    pub fn hitting_times_estimated(&self, walks: usize, max_steps: u64, seed: u64) -> Estimate {
        let mut rng = seed | 1;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 11) as f64 / (1u64 << 53) as f64
        };
        let (mut sum, mut sum_sq) = (vec![0.0; self.locations], vec![0.0; self.locations]);
        let mut censored = 0usize;
        // first[l]: the step the walk first reached location `l` (None: not yet).
        let mut first: Vec<Option<u64>> = vec![None; self.locations];
        for _ in 0..walks {
            first.fill(None);
            let (mut state, mut remaining, mut step) = (0usize, self.locations, 0u64);
            while remaining > 0 && step < max_steps {
                let r = next();
                let row = &self.rows[state];
                let mut acc = 0.0;
                state = row.last().expect("rows are non-empty").0;
                for &(t, p) in row {
                    acc += p;
                    if r < acc {
                        state = t;
                        break;
                    }
                }
                step += 1;
                if state >= self.first_location {
                    let l = state - self.first_location;
                    if first[l].is_none() {
                        first[l] = Some(step);
                        remaining -= 1;
                    }
                }
            }
            for l in 0..self.locations {
                let t = first[l].unwrap_or_else(|| {
                    censored += 1;
                    max_steps
                }) as f64;
                sum[l] += t;
                sum_sq[l] += t * t;
            }
        }
        let w = walks as f64;
        let mean: Vec<f64> = sum.iter().map(|s| s / w).collect();
        let stderr = mean
            .iter()
            .zip(&sum_sq)
            .map(|(m, sq)| ((sq / w - m * m).max(0.0) / w).sqrt())
            .collect();
        Estimate {
            mean,
            stderr,
            walks,
            max_steps,
            censored,
        }
    }
}

/// A random-walk estimate with its spread.
pub struct Estimate {
    pub mean: Vec<f64>,
    /// Standard error of each mean.
    pub stderr: Vec<f64>,
    pub walks: usize,
    pub max_steps: u64,
    /// Location-walk pairs that hit `max_steps` first.
    pub censored: usize,
}

/// How the hitting times were obtained.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(tag = "method", rename_all = "kebab-case")]
pub enum Method {
    Exact {
        states: usize,
    },
    Estimated {
        states: usize,
        walks: usize,
        max_steps: u64,
        relative_stderr: f64,
        censored: usize,
    },
    /// Neither method applies (the reason says why); HT_Rank is not reported.
    Unavailable {
        states: usize,
        reason: String,
    },
}

/// Whether exact hitting times are numerically sound. A ranked list drifts towards its top, so
/// hitting times grow geometrically with depth; past ~1e12 between the nearest and the
/// farthest location the fundamental-matrix identity (a difference of large terms) loses
/// every significant digit in double precision.
fn trustworthy(times: &[f64]) -> bool {
    let (min, max) = times
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), &t| (a.min(t), b.max(t)));
    times.iter().all(|t| t.is_finite() && *t > 0.0) && max / min <= 1e12
}

/// Hitting times by the exact method up to `exact_limit` states when it is numerically sound,
/// else estimated by `walks` random walks (none: unavailable).
pub fn hitting_times(chain: &Chain, exact_limit: usize, walks: usize) -> (Vec<f64>, Method) {
    let states = chain.states();
    let mut why = format!("more than {exact_limit} states for the exact method");
    if states <= exact_limit {
        let times = chain.hitting_times_exact();
        if trustworthy(&times) {
            return (times, Method::Exact { states });
        }
        why =
            "hitting times span more than 12 orders of magnitude (a deep ranking): exact values lose precision".into();
    }
    if walks == 0 {
        return (
            vec![f64::NAN; chain.locations],
            Method::Unavailable { states, reason: why },
        );
    }
    let e = chain.hitting_times_estimated(walks, 200_000, 0x9e37_79b9_7f4a_7c15);
    let rel = e
        .mean
        .iter()
        .zip(&e.stderr)
        .map(|(m, s)| if *m > 0.0 { s / m } else { 0.0 })
        .fold(0.0, f64::max);
    let method = Method::Estimated {
        states,
        walks: e.walks,
        max_steps: e.max_steps,
        relative_stderr: rel,
        censored: e.censored,
    };
    (e.mean, method)
}

/// HT_Rank (Def. 25) of the first fault reached: locations reached strictly earlier, plus half
/// of those reached at the same expected time (within `tolerance`, relative).
pub fn ht_rank(times: &[f64], faulty: &[usize], tolerance: f64) -> Option<f64> {
    let t_f = faulty.iter().map(|&f| times[f]).min_by(f64::total_cmp)?;
    if t_f.is_nan() {
        return None;
    }
    let same = |t: f64| (t - t_f).abs() <= tolerance * t_f.abs().max(1.0);
    let before = times.iter().filter(|&&t| t < t_f && !same(t)).count() as f64;
    let tied = times.iter().filter(|&&t| same(t)).count() as f64;
    Some(before + tied / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::spectra::tests::Rng;

    fn singletons(n: usize) -> Vec<Vec<usize>> {
        (0..n).map(|l| vec![l]).collect()
    }

    /// The Def. 28 chain (one line per entry, no jumps) of a ranking given by its keys.
    fn ranked_list(keys: &[Key]) -> Chain {
        Chain::build(&ChainSpec {
            entries: &singletons(keys.len()),
            keys,
            locations: keys.len(),
            jumps: &[],
            p_jump: 0.5,
        })
    }

    /// The paper's equivalence: with Def. 28 and no jumps, HT_Rank orders locations exactly as
    /// the Standard Rank Score does, on random rankings with ties.
    #[test]
    fn def28_ht_rank_equals_the_standard_rank_score() {
        let mut rng = Rng(0x1234_5678_9abc_def1);
        for _ in 0..200 {
            let n = 1 + rng.below(25) as usize;
            let keys: Vec<Key> = (0..n).map(|_| Key::score(rng.below(6) as f64)).collect();
            let times = ranked_list(&keys).hitting_times_exact();
            for f in 0..n {
                let s = keys[f].value;
                let higher = keys.iter().filter(|k| k.value > s).count() as f64;
                let tied = keys.iter().filter(|k| k.value == s).count() as f64;
                let standard = higher + tied / 2.0;
                assert_eq!(
                    ht_rank(&times, &[f], 1e-9),
                    Some(standard),
                    "keys {keys:?}, fault {f}, times {times:?}"
                );
            }
        }
    }

    /// Exact and estimated hitting times agree within 5% on chains with jumps and groups.
    #[test]
    fn exact_and_estimated_hitting_times_agree() {
        let mut rng = Rng(0xfeed_beef_0bad_f00d);
        for _ in 0..4 {
            let n = 6 + rng.below(10) as usize;
            let keys: Vec<Key> = (0..4).map(|i| Key::score(i as f64)).collect();
            let mut entries = vec![Vec::new(); 4];
            for l in 0..n {
                entries[rng.below(4) as usize].push(l);
            }
            entries.retain(|e| !e.is_empty());
            let keys = &keys[..entries.len()];
            // Functions of three lines each: every line jumps to the others of its function.
            let jumps: Vec<Vec<usize>> = (0..n)
                .map(|l| (0..n).filter(|&j| j != l && j / 3 == l / 3).collect())
                .collect();
            let chain = Chain::build(&ChainSpec {
                entries: &entries,
                keys,
                locations: n,
                jumps: &jumps,
                p_jump: 0.5,
            });
            let exact = chain.hitting_times_exact();
            let est = chain.hitting_times_estimated(20_000, 1_000_000, 42);
            assert_eq!(est.censored, 0);
            for (e, m) in exact.iter().zip(&est.mean) {
                assert!((e - m).abs() <= 0.05 * e, "exact {exact:?} vs estimate {:?}", est.mean);
            }
        }
    }

    /// Deep rankings make exact hitting times meaningless in double precision: refused, not
    /// reported as garbage.
    #[test]
    fn deep_chains_are_refused_for_the_exact_method() {
        let keys: Vec<Key> = (0..500).map(|l| Key::score(-((l / 10) as f64))).collect();
        let (times, method) = hitting_times(&ranked_list(&keys), 10_000, 0);
        assert!(matches!(method, Method::Unavailable { .. }), "{method:?}");
        assert_eq!(ht_rank(&times, &[3], 1e-9), None);
    }

    /// A two-location chain worked by hand: g_0 (N = 2 entries, one group) goes to each
    /// location with 1/4 and stays with 1/2; a location returns to g_0. E[T_x] = 5 from g_0.
    #[test]
    fn hitting_times_match_a_hand_computed_chain() {
        let chain = ranked_list(&[Key::score(1.0), Key::score(1.0)]);
        // h = 1 + 1/2 h + 1/4 * 0 + 1/4 (1 + h)  →  h/4 = 5/4  →  h = 5.
        for t in chain.hitting_times_exact() {
            assert!((t - 5.0).abs() < 1e-9, "{t}");
        }
    }
}
