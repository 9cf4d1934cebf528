//! The HT_Rank Markov chain (Def. 28/29/30) as sparse rows, its expected hitting times (exact,
//! or estimated by random walks above `--exact-limit`), and HT_Rank with ties.

use super::gth;
use crate::score::Key;

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
    /// Score groups: the first states, g_0 first.
    pub groups: usize,
    /// State index of location 0 (locations are the last states, in order; entry states,
    /// if any, lie between the groups and the locations).
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
            groups: n_groups,
            first_location,
            locations: spec.locations,
        }
    }

    pub fn states(&self) -> usize {
        self.rows.len()
    }

    /// Exact `ln E[T_{0,x}]` for every location (state reduction; see [`gth`]).
    pub fn log_hitting_times(&self) -> Vec<f64> {
        gth::log_hitting_times(&self.rows, self.groups, self.first_location, self.locations)
    }

    /// Exact `E[T_{0,x}]` for every location; infinite past the largest double (about 1e308
    /// steps, a few hundred score groups down), where [`Chain::log_hitting_times`] still
    /// tells them apart.
    pub fn hitting_times_exact(&self) -> Vec<f64> {
        self.log_hitting_times().into_iter().map(f64::exp).collect()
    }

    /// The textbook method, kept as the reference of the tests and `cargo xtask bench ht`:
    /// with `B = I − P + 1·e_0ᵀ`, `π = e_0ᵀ B⁻¹` and `E[T_{0,x}] = (B⁻¹)_xx / π_x − (B⁻¹·1)_x`
    /// (Kemeny & Snell's fundamental-matrix identity), one dense LU: O(states³), and it loses
    /// every digit once the times span ~1e12.
    pub fn hitting_times_dense_lu(&self) -> Vec<f64> {
        use faer::linalg::solvers::DenseSolveCore;
        let n = self.states();
        let mut b = faer::Mat::<f64>::zeros(n, n);
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

/// `ln E[T_{0,x}]` of every location: exact up to `exact_limit` states, else estimated by
/// `walks` random walks (none: unavailable).
pub fn hitting_times(chain: &Chain, exact_limit: usize, walks: usize) -> (Vec<f64>, Method) {
    let states = chain.states();
    if states <= exact_limit {
        return (chain.log_hitting_times(), Method::Exact { states });
    }
    if walks == 0 {
        return (
            vec![f64::NAN; chain.locations],
            Method::Unavailable {
                states,
                reason: format!("more than {exact_limit} states for the exact method (--exact-limit)"),
            },
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
    (e.mean.iter().map(|m| m.ln()).collect(), method)
}

/// Whether two logarithms of times are the same time within `tolerance`, relative.
pub fn same_time(a: f64, b: f64, tolerance: f64) -> bool {
    a == b || (a - b).abs() <= tolerance.ln_1p()
}

/// HT_Rank (Def. 25) of the first fault reached, from `ln` hitting times: locations reached
/// strictly earlier, plus half of those reached at the same expected time (within
/// `tolerance`, relative).
pub fn ht_rank(log_times: &[f64], faulty: &[usize], tolerance: f64) -> Option<f64> {
    let t_f = faulty.iter().map(|&f| log_times[f]).min_by(f64::total_cmp)?;
    if t_f.is_nan() {
        return None;
    }
    let before = log_times
        .iter()
        .filter(|&&t| t < t_f && !same_time(t, t_f, tolerance))
        .count() as f64;
    let tied = log_times.iter().filter(|&&t| same_time(t, t_f, tolerance)).count() as f64;
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
            let times = ranked_list(&keys).log_hitting_times();
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

    /// A random chain of the given shape: `lines` locations in entries of 1–`entry_max` lines
    /// (Def. 30 as soon as one has two), entries in up to `groups` score groups, lines in
    /// functions of 1–`function_max` lines that jump to each other, or to a few lines of other
    /// functions when `cross` (CFG edges between functions; not symmetric).
    fn random_chain(rng: &mut Rng, lines: usize, entry_max: u64, groups: u64, function_max: u64, cross: bool) -> Chain {
        let mut order: Vec<usize> = (0..lines).collect();
        for i in (1..lines).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let mut entries = Vec::new();
        let mut rest = &order[..];
        while !rest.is_empty() {
            let take = (1 + rng.below(entry_max) as usize).min(rest.len());
            entries.push(rest[..take].to_vec());
            rest = &rest[take..];
        }
        let keys: Vec<Key> = entries.iter().map(|_| Key::score(rng.below(groups) as f64)).collect();
        let mut function = vec![0; lines];
        let (mut f, mut left) = (0, 0);
        for slot in &mut function {
            if left == 0 {
                f += 1;
                left = 1 + rng.below(function_max);
            }
            *slot = f;
            left -= 1;
        }
        let jumps: Vec<Vec<usize>> = (0..lines)
            .map(|l| {
                let mut j: Vec<usize> = (0..lines).filter(|&k| k != l && function[k] == function[l]).collect();
                if cross && rng.below(3) == 0 {
                    j.push(rng.below(lines as u64) as usize);
                    j.retain(|&k| k != l);
                    j.dedup();
                }
                j
            })
            .collect();
        Chain::build(&ChainSpec {
            entries: &entries,
            keys: &keys,
            locations: lines,
            jumps: &jumps,
            p_jump: [0.5, 0.2, 0.9][rng.below(3) as usize],
        })
    }

    /// Largest relative difference between two lists of times.
    fn max_relative_gap(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| ((x - y) / y).abs()).fold(0.0, f64::max)
    }

    /// State reduction agrees with the dense LU to 1e-9 on random chains of every shape:
    /// Def. 28, Def. 29 with jumps across groups, Def. 30 with entries of several lines.
    #[test]
    fn reduction_agrees_with_dense_lu_on_every_shape() {
        let mut rng = Rng(0x0dd5_ca1e_5eed_0001);
        // (entry size, score groups, function size, cross-function jumps)
        let shapes = [
            (1, 4, 1, false),
            (1, 5, 6, false),
            (1, 3, 8, true),
            (5, 4, 1, false),
            (6, 5, 7, true),
        ];
        for &(entry_max, groups, function_max, cross) in &shapes {
            for _ in 0..40 {
                let lines = 1 + rng.below(30) as usize;
                let chain = random_chain(&mut rng, lines, entry_max, groups, function_max, cross);
                let (fast, lu) = (chain.hitting_times_exact(), chain.hitting_times_dense_lu());
                let gap = max_relative_gap(&fast, &lu);
                assert!(
                    gap < 1e-9,
                    "shape {entry_max}/{groups}/{function_max}/{cross}: gap {gap}, {fast:?} vs {lu:?}"
                );
            }
        }
    }

    /// `ln E[T_{0,x}]` of a Def. 28 ranked list of `groups` score groups of `size` lines, in
    /// closed form. The chain is a tree, so (Kemeny & Snell) crossing an edge u → v takes
    /// `π(u's side) / (π_u P_uv)`: with N = groups·size, a group's stationary weight is
    /// 1/(N−1) of the one above, each line half its group's over `size`; g_i → g_{i+1} takes
    /// `3N Σ_{k≤i} (N−1)^k` and g_d → a line `3·size·Σ_{j≠d} (N−1)^{d−j} + 3·size − 1`. Every
    /// term is positive, summed in log space.
    fn deep_list_reference(groups: usize, size: usize, depth: usize) -> f64 {
        let n = (groups * size) as f64;
        let ln_q = (n - 1.0).ln();
        let ln_sum = |terms: &mut dyn Iterator<Item = f64>| terms.fold(f64::NEG_INFINITY, gth::log_add);
        let down = (0..depth).map(|i| (3.0 * n).ln() + ln_sum(&mut (0..=i).map(|k| k as f64 * ln_q)));
        let side = (0..groups)
            .filter(|&j| j != depth)
            .map(|j| (3.0 * size as f64).ln() + (depth as f64 - j as f64) * ln_q);
        let last = std::iter::once((3.0 * size as f64 - 1.0).ln());
        ln_sum(&mut down.chain(side).chain(last))
    }

    /// A ranked list 250 groups deep: times reach ~1e690 steps. State reduction matches the
    /// closed form to 1e-9 at every depth; the dense LU has lost every digit well before.
    #[test]
    fn deep_ranked_lists_stay_exact() {
        let (groups, size) = (250, 3);
        let keys: Vec<Key> = (0..groups * size).map(|l| Key::score(-((l / size) as f64))).collect();
        let chain = ranked_list(&keys);
        let (times, method) = hitting_times(&chain, 1_000_000, 0);
        assert_eq!(method, Method::Exact { states: chain.states() });
        for (l, t) in times.iter().enumerate() {
            let want = deep_list_reference(groups, size, l / size);
            // A difference of logarithms is the relative difference of the times.
            assert!((t - want).abs() < 1e-9, "line {l}: ln {t} vs {want}");
        }
        // The fifth group's lines sit ~1e12 steps down, where the dense identity fails.
        let lu = chain.hitting_times_dense_lu();
        let off = |l: usize| (lu[l].ln() - times[l]).abs().partial_cmp(&1e-9) != Some(std::cmp::Ordering::Less);
        let bad = (0..times.len()).filter(|&l| off(l)).count();
        assert!(bad > times.len() / 2, "dense LU wrong on only {bad} lines");
        // Deep lines still order by depth (their times, past the largest double, are kept as
        // logarithms): 600 lines above, and a tie with the two others of its group.
        assert_eq!(ht_rank(&times, &[3 * 200], 1e-9), Some(601.5));
        assert!(times[3 * 249] > 1500.0, "{}", times[3 * 249]);
    }

    /// Above the limit without walks, HT_Rank is unavailable, with the reason.
    #[test]
    fn chains_over_the_limit_without_walks_are_unavailable() {
        let keys: Vec<Key> = (0..10).map(|l| Key::score(l as f64)).collect();
        let (times, method) = hitting_times(&ranked_list(&keys), 5, 0);
        let Method::Unavailable { reason, .. } = method else {
            panic!("{method:?}")
        };
        assert!(reason.contains("--exact-limit"), "{reason}");
        assert_eq!(ht_rank(&times, &[3], 1e-9), None);
    }

    /// A two-location chain worked by hand: g_0 (N = 2 entries, one group) goes to each
    /// location with 1/4 and stays with 1/2; a location returns to g_0. E[T_x] = 5 from g_0.
    #[test]
    fn hitting_times_match_a_hand_computed_chain() {
        let chain = ranked_list(&[Key::score(1.0), Key::score(1.0)]);
        // h = 1 + 1/2 h + 1/4 * 0 + 1/4 (1 + h)  →  h/4 = 5/4  →  h = 5.
        for t in chain
            .hitting_times_exact()
            .into_iter()
            .chain(chain.hitting_times_dense_lu())
        {
            assert!((t - 5.0).abs() < 1e-9, "{t}");
        }
    }
}
