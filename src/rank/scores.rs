//! Every group's score under a measure ([`Analysis::score`]): the measure's own computation
//! (a spectrum formula, Doric's measures, CP, the combined ranking, a stack-first ranking over
//! a base measure), then the options that rearrange keys (Opt_w, independent clusters).

use crate::analysis::Analysis;
use crate::cp::CpVariant;
use crate::measures::{Counts, Kind, Measure, finite};
use crate::score::{Key, Options, Scored, Tier};

impl Analysis<'_> {
    /// Every group's score under `m`.
    pub fn score(&self, m: &Measure, opts: &Options) -> Vec<Scored> {
        if let Some(lines) = self.by_line() {
            return best_line_scores(self, lines, m, opts);
        }
        let mut scored = match m.kind {
            Kind::Spectrum(f) => spectrum(self, f, opts),
            Kind::CausalLikelihood => self.incidence().cl(),
            Kind::FaultLikelihood => self.incidence().fault_likelihood(),
            Kind::CausalLikelihoodUpdating => self.incidence().cl_updating(opts.update_bound),
            Kind::Propagation(variant) => propagation(self, variant),
            Kind::StackFirst(base) => return stack_first(self, crate::measures::stack_base(base), opts),
            Kind::Combined => crate::combined::group_scores(self),
        };
        if opts.optimise {
            optimise(self, m, &mut scored);
        }
        if opts.clusters
            && let Some(c) = crate::clusters::failure_clusters(self.spectra)
        {
            let single = Options {
                clusters: false,
                ..opts.clone()
            };
            super::interleave(self, &c, &mut scored, |sub| sub.score(m, &single));
        }
        scored
    }
}

/// A spectrum formula over each group's counts, cloned and smoothed as `opts` say.
fn spectrum(a: &Analysis, f: fn(Counts) -> f64, opts: &Options) -> Vec<Scored> {
    a.groups
        .iter()
        .map(|g| {
            let mut c = g.counts.cloned(f64::from(opts.clone_failing.max(1)));
            if opts.smoothing {
                c = c.smoothed();
            }
            Scored::plain(finite(f(c)))
        })
        .collect()
}

/// Each function group's key, score and probability: its best line's under `m` (`lines`: the
/// line analysis of `functions`' spectra), except that the evidence's prior is how many of the
/// function's lines that line's entry holds (`rank::functions::function_evidence`; with
/// `--tie-break code`, no evidence).
fn best_line_scores(functions: &Analysis, lines: &Analysis, m: &Measure, opts: &Options) -> Vec<Scored> {
    let line_scored = lines.score(m, opts);
    let unit_items = lines.spectra.unit_items();
    let function_of = |u: usize| unit_items.get(u).copied().flatten();
    // Per function, its best line's score and entry.
    let mut best: Vec<Option<(Scored, usize)>> = vec![None; functions.spectra.units.len()];
    for (g, group) in lines.groups.iter().enumerate() {
        for &u in &group.units {
            let Some(f) = function_of(u) else {
                continue;
            };
            let mut s = line_scored[g];
            if let Some(e) = lines.tie(u) {
                s.key.evidence = e;
            }
            let slot = &mut best[f as usize];
            if slot.is_none_or(|(b, _)| s.key.cmp_descending(&b.key).is_lt()) {
                *slot = Some((s, g));
            }
        }
    }
    functions
        .groups
        .iter()
        .map(|fg| {
            let f = fg.units[0];
            let Some((mut s, g)) = best[f] else {
                return Scored::UNSCORED;
            };
            // `--tie-break code`: no evidence orders lines, none orders functions.
            if lines.tie(lines.groups[g].units[0]).is_none() {
                return s;
            }
            let here = lines.groups[g]
                .units
                .iter()
                .filter(|&&u| function_of(u) == Some(f as u32));
            s.key.evidence = super::functions::function_evidence(s.key.evidence, here.count());
            s
        })
        .collect()
}

/// Opt_w: a unit run by every failing test scores `np + 2` in a tier above all others;
/// the rest keep their order, shown scaled into [0, 1] (`atan(w)/π + 1/2` for formulas
/// that are not probabilities already).
fn optimise(a: &Analysis, m: &Measure, scored: &mut [Scored]) {
    let f = a.failing.len() as f64;
    for (g, s) in a.groups.iter().zip(scored) {
        if g.counts.ef == f {
            let v = g.counts.np + 2.0;
            *s = Scored {
                key: Key::new(Tier::Core, v),
                score: v,
                log10: None,
            };
        } else if !m.is_probability() {
            s.score = s.score.atan() / std::f64::consts::PI + 0.5;
        }
    }
}

/// `base`'s scores, with the entries where failing tests' operations panicked moved first:
/// by how many failing tests point there, then by `base`'s key. Scores shown stay `base`'s.
fn stack_first(a: &Analysis, base: &Measure, opts: &Options) -> Vec<Scored> {
    let mut scored = a.score(base, opts);
    // Every line of a group has the same count (groups are split by it).
    let points: Vec<u32> = a.groups.iter().map(|g| a.operation_panics(g.units[0])).collect();
    let mut pointed: Vec<usize> = (0..a.groups.len()).filter(|&g| points[g] > 0).collect();
    let order = |x: &usize, y: &usize| {
        points[*y]
            .cmp(&points[*x])
            .then_with(|| scored[*x].key.cmp_descending(&scored[*y].key))
    };
    pointed.sort_by(order);
    // Equal counts with equal base keys stay tied.
    let mut value = pointed.len();
    let mut keys = Vec::with_capacity(pointed.len());
    for (i, &g) in pointed.iter().enumerate() {
        if i > 0 && order(&pointed[i - 1], &g).is_ne() {
            value = pointed.len() - i;
        }
        keys.push((g, Key::new(Tier::Stack, value as f64)));
    }
    for (g, key) in keys {
        scored[g].key = key;
    }
    scored
}

/// CP per group: the best BR of a block containing one of its lines. Lines that no block
/// maps to (or everything, without edges) rank after every line a block does.
fn propagation(a: &Analysis, variant: CpVariant) -> Vec<Scored> {
    let units = a.cp(variant).map(|(_, u)| u.as_slice());
    a.groups
        .iter()
        .map(|g| {
            let best = g
                .units
                .iter()
                .filter_map(|&u| units.and_then(|s| s[u]))
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            best.map_or(Scored::UNSCORED, |v| Scored::plain(finite(v)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Key;
    use crate::evidence::TieBreak;
    use crate::measures::find;
    use crate::spectra::Spectra;
    use crate::spectra::tests::{lib_functions, matrix};

    /// Function A holds u1 (run only by the two failing tests) and u2 (run by every test);
    /// function B holds u3 (both failing tests and one passing). Over the functions' own
    /// coverage A is run by every test (Ochiai 0.71) and ranks below B (0.82); by its best line
    /// A scores u1's 1.0 and ranks first, whatever the measure.
    #[test]
    fn functions_rank_by_their_best_line() {
        let mut s = matrix(&["111-", "111-", "010+", "011+"]);
        s.set_functions(lib_functions(&[(1, 2), (3, 3)]));
        assert_eq!(s.unit_function, [Some(0), Some(0), Some(1)]);
        let functions = s.by_function();
        let union = Analysis::new(&functions, true).score(find("ochiai").unwrap(), &Options::default());
        assert!(union[0].score < union[1].score, "{union:?}");
        let a = Analysis::prepared(&functions, Some(&s), true, &[], TieBreak::Code);
        assert_eq!(a.groups.len(), 2, "each function its own entry");
        let line_scores: Vec<f64> = Analysis::new(&s, true)
            .score(find("ochiai").unwrap(), &Options::default())
            .iter()
            .map(|x| x.score)
            .collect();
        let best = a.score(find("ochiai").unwrap(), &Options::default());
        assert_eq!((best[0].score, best[1].score), (line_scores[0], line_scores[2]));
        assert_eq!(best[0].score, 1.0);
        let order: Vec<usize> = crate::rank::rank(&a, find("ochiai").unwrap(), &Options::default())
            .entries
            .iter()
            .map(|e| a.groups[e.group].units[0])
            .collect();
        assert_eq!(order, [0, 1]);
        // The line analysis is what CP and the report's CFG summary read.
        assert!(std::ptr::eq(a.lines().spectra, &s));
    }

    /// A one-line callee (u0) and its caller (u1-u3) that every test runs together: u0, u1 and
    /// u2 form one entry, so the spectrum cannot order the two. The caller, holding more of the
    /// entry's lines, ranks first (each line as likely as any), though the line prior alone
    /// would put the smaller callee first.
    #[test]
    fn functions_sharing_their_best_entry_rank_by_their_lines_in_it() {
        let mut s = matrix(&["1111-", "1110+", "0001+", "0001+"]);
        // Function 0: u0 alone (the callee); function 1: u1, u2 and u3.
        s.set_functions(lib_functions(&[(1, 1), (2, 4)]));
        let functions = s.by_function();
        let a = Analysis::prepared(&functions, Some(&s), true, &[], TieBreak::Evidence);
        let best = a.score(find("ochiai").unwrap(), &Options::default());
        assert_eq!(best[0].score, best[1].score, "the same best entry");
        assert_eq!((best[0].key.evidence.prior, best[1].key.evidence.prior), (1.0, 2.0));
        let order: Vec<usize> = crate::rank::rank(&a, find("ochiai").unwrap(), &Options::default())
            .entries
            .iter()
            .map(|e| a.groups[e.group].units[0])
            .collect();
        assert_eq!(order, [1, 0]);
        // `--tie-break code`: no evidence, so the two keys are equal.
        let a = Analysis::prepared(&functions, Some(&s), true, &[], TieBreak::Code);
        let best = a.score(find("ochiai").unwrap(), &Options::default());
        assert_eq!(best[0].key, best[1].key);
    }

    /// Stack-first is its base measure exactly when no failing test panicked on an operation in
    /// ranked code; otherwise the line where such a backtrace first enters ranked code goes
    /// first whatever its base score (its callers do not move), and equal counts with equal
    /// base scores tie.
    #[test]
    fn stack_first_moves_backtrace_entries_first_and_is_its_base_without_them() {
        use crate::rank::rank_scored;
        use crate::spectra::tests::{doric_minmax, frame};
        let o = Options::default();
        let (base, combined) = (find("ochiai").unwrap(), find("stack-ochiai").unwrap());
        let ranks = |s: &Spectra, m: &Measure| {
            let a = Analysis::new(s, true);
            let mut r: Vec<(u32, f64)> = rank_scored(&a, &a.score(m, &o))
                .iter()
                .map(|r| (s.units[a.groups[r.group].units[0]].line, r.rank))
                .collect();
            r.sort_by_key(|&(line, _)| line);
            r
        };
        // Minmax: line 3 is run by every failing test (Ochiai 1), lines 2 and 4 by one failing
        // and one passing test each (Ochiai 1/sqrt(6)); line 1 by no failing test.
        let mut s = doric_minmax();
        assert_eq!(ranks(&s, base), [(2, 2.5), (3, 1.0), (4, 2.5)]);
        assert_eq!(ranks(&s, combined), ranks(&s, base));

        // An index out of bounds on line 4 (called from line 2): line 4 goes above line 3,
        // line 2 stays. A failed assertion there would move nothing.
        let oob = |line: u32| {
            Some(format!(
                "panicked at src/lib.rs:{line}:5:\nindex out of bounds: the len is 0 but the index is 0"
            ))
        };
        s.tests[0].stack = vec![frame(4), frame(2)];
        s.tests[0].message = Some("panicked at src/lib.rs:4:5:\nassertion failed: ok".into());
        assert_eq!(ranks(&s, combined), ranks(&s, base));
        s.tests[0].message = oob(4);
        assert_eq!(ranks(&s, combined), [(2, 3.0), (3, 2.0), (4, 1.0)]);
        let a = Analysis::new(&s, true);
        let scored = a.score(combined, &o);
        assert_eq!(scored.iter().filter(|x| x.key.tier == Tier::Stack).count(), 1);
        // The scores shown stay Ochiai's.
        let shown: Vec<f64> = scored.iter().map(|x| x.score).collect();
        assert_eq!(shown, a.score(base, &o).iter().map(|x| x.score).collect::<Vec<_>>());

        // A panic point leaves its group: under Ochiai the two parts tie, under stack-first the
        // panic point leads.
        let mut pair = matrix(&["11-", "00+"]);
        assert_eq!(Analysis::new(&pair, true).groups.len(), 1);
        pair.tests[0].stack = vec![frame(2)];
        pair.tests[0].message = oob(2);
        assert_eq!(Analysis::new(&pair, true).groups.len(), 2);
        assert_eq!(ranks(&pair, base), [(1, 1.5), (2, 1.5)]);
        assert_eq!(ranks(&pair, combined), [(1, 2.0), (2, 1.0)]);

        // Two failing tests each point at one of the two equally scored lines: they tie.
        s.tests[0].stack = vec![frame(2)];
        s.tests[0].message = oob(2);
        s.tests[1].stack = vec![frame(4)];
        s.tests[1].message = oob(4);
        assert_eq!(ranks(&s, combined), [(2, 1.5), (3, 3.0), (4, 1.5)]);
    }

    fn scores(s: &Spectra, name: &str, opts: &Options) -> Vec<f64> {
        let a = Analysis::new(s, opts.group);
        a.score(find(name).unwrap(), opts).iter().map(|x| x.score).collect()
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
    }

    fn ungrouped() -> Options {
        Options {
            group: false,
            ..Options::default()
        }
    }

    /// Doric's minmax (Landsberg & Barr, Fig. 2). u1 is run by no failing test, so it is not a
    /// candidate; its cl and P(f) are 0 by definition.
    #[test]
    fn cl_and_fault_likelihood_on_doric_minmax() {
        let s = matrix(&["0110-", "0011-", "0010-", "1001+", "1100+"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 6.0, 5.0 / 9.0, 1.0 / 6.0]);
        close(
            &scores(&s, "fault-likelihood", &ungrouped()),
            &[2.0 / 3.0, 1.0, 2.0 / 3.0],
        );
        let a = Analysis::new(&s, false);
        assert_eq!((0..3).map(|g| a.certain(g)).collect::<Vec<_>>(), [false, true, false]);
        // Wong2 with the erratum: u4 scores 0, not 2.
        close(&scores(&s, "wong2", &ungrouped()), &[0.0, 3.0, 0.0]);
    }

    /// Vector 2: "certain cause". Spectrum measures tie u2 and u3; cl separates them.
    #[test]
    fn cl_identifies_a_certain_cause_that_spectra_cannot() {
        let s = matrix(&["110-", "001-"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 3.0, 1.0 / 3.0, 1.0]);
        let o = scores(&s, "ochiai", &ungrouped());
        assert_eq!(o[1], o[2]);
    }

    /// Vector 3: "updating". All cl = 1/3; refuting u1 makes u2 certain.
    #[test]
    fn cl_u_refutes_the_first_unit_and_promotes_its_partner() {
        let s = matrix(&["0011-", "1100-"]);
        close(&scores(&s, "cl", &ungrouped()), &[1.0 / 3.0; 4]);
        let a = Analysis::new(&s, false);
        let u = a.score(find("cl-u").unwrap(), &ungrouped());
        // u1 is inspected first (ties in code order), then u2 at cl 1.
        assert_eq!(u[0].key, Key::new(Tier::Certain, 0.0));
        assert_eq!(u[1].key, Key::new(Tier::Certain, -1.0));
        assert!((u[1].score - 1.0).abs() < 1e-12);
        // With a bound of 1, u2..u4 keep the order computed after refuting u1.
        let one = a.score(
            find("cl-u").unwrap(),
            &Options {
                update_bound: 1,
                ..ungrouped()
            },
        );
        close(
            &one.iter().map(|x| x.score).collect::<Vec<_>>()[1..],
            &[1.0, 1.0 / 3.0, 1.0 / 3.0],
        );
    }

    #[test]
    fn identical_columns_form_one_group() {
        let s = matrix(&["0011-", "1100-"]);
        let a = Analysis::new(&s, true);
        assert_eq!(
            a.groups.iter().map(|g| g.units.clone()).collect::<Vec<_>>(),
            [vec![0, 1], vec![2, 3]]
        );
        // cl still counts every unit a test runs: 1 / (2^2 - 1).
        close(&scores(&s, "cl", &Options::default()), &[1.0 / 3.0, 1.0 / 3.0]);
    }

    /// Algorithm 1 on the single-fault-optimal study's failing tests picks t1 then t2; Naish-I on
    /// the chosen failing tests alone ties C1 and C4 at 2.0.
    #[test]
    fn algorithm1_chooses_single_fault_optimal_failing_tests() {
        let rows = ["10110-", "10011-", "10010-"];
        let s = matrix(&rows);
        let a = Analysis::new(&s, false);
        assert_eq!(a.core_witnesses(), [0, 1]);
        assert_eq!(a.core_units(), 2);
        let chosen = matrix(&rows[..2]);
        let naish = scores(&chosen, "naish2", &ungrouped());
        // Candidates: C1, C3, C4, C5.
        close(&naish, &[2.0, 1.0, 2.0, 1.0]);
    }

    #[test]
    fn opt_w_puts_the_core_first_by_fewest_passing_tests() {
        let s = crate::spectra::tests::sfo_minmax();
        let a = Analysis::new(&s, false);
        let opt = Options {
            optimise: true,
            ..ungrouped()
        };
        let sc = a.score(find("jaccard").unwrap(), &opt);
        // C1 ⟨3,0,7,0⟩ and C4 ⟨3,0,1,6⟩ form the core: np + 2 = 2 and 8.
        // Candidates are C1, C3, C4, C5 (C2 is run by no failing test).
        assert_eq!(
            (sc[0].key, sc[2].key),
            (Key::new(Tier::Core, 2.0), Key::new(Tier::Core, 8.0))
        );
        assert!(sc[1].key.tier == Tier::Score && (0.0..=1.0).contains(&sc[1].score));
    }
}

/// Property tests on random matrices (deterministic seeds, so CI is reproducible).
#[cfg(test)]
mod properties {
    use super::*;
    use crate::measures::{Cloning, all, find};
    use crate::rank::rank_scored;
    use crate::spectra::Spectra;
    use crate::spectra::tests::{Rng, matrix};

    /// A random matrix with at least one failing test: up to 24 tests over up to 16 units.
    fn random_matrix(rng: &mut Rng) -> Spectra {
        let tests = 2 + rng.below(23) as usize;
        let units = 1 + rng.below(16) as usize;
        let density = 1 + rng.below(9);
        let rows: Vec<String> = (0..tests)
            .map(|t| {
                let mut r: String = (0..units)
                    .map(|_| if rng.below(10) < density { '1' } else { '0' })
                    .collect();
                r.push(if t == 0 || rng.below(4) == 0 { '-' } else { '+' });
                r
            })
            .collect();
        matrix(&rows.iter().map(String::as_str).collect::<Vec<_>>())
    }

    fn matrices(seed: u64, n: usize) -> Vec<Spectra> {
        let mut rng = Rng(seed);
        (0..n).map(|_| random_matrix(&mut rng)).collect()
    }

    /// Both clauses of single-fault optimality (Landsberg, Sun & Kroening) for one scored matrix.
    /// The first pair of groups that breaks a clause, in words; `None` when both hold.
    fn single_fault_violation(a: &Analysis, s: &[Scored]) -> Option<String> {
        let f = a.failing.len() as f64;
        for (i, gi) in a.groups.iter().enumerate() {
            for (j, gj) in a.groups.iter().enumerate() {
                let better = s[i].key > s[j].key;
                let (ci, cj) = (gi.counts, gj.counts);
                if ci.ef == f && cj.ef < f && !better {
                    return Some(format!("{ci:?} not above {cj:?}"));
                }
                if ci.ef == f && cj.ef == f && ci.ep < cj.ep && !better {
                    return Some(format!("{ci:?} not above {cj:?} (fewer passing tests)"));
                }
            }
        }
        None
    }

    #[test]
    fn naish1_naish2_and_every_optimised_measure_are_single_fault_optimal() {
        let ungrouped = Options {
            group: false,
            ..Options::default()
        };
        let optimised = Options {
            optimise: true,
            ..ungrouped.clone()
        };
        for (i, s) in matrices(0x9e37_79b9_7f4a_7c15, 300).iter().enumerate() {
            let a = Analysis::new(s, false);
            for name in ["naish1", "naish2"] {
                if let Some(e) = single_fault_violation(&a, &a.score(find(name).unwrap(), &ungrouped)) {
                    panic!("{name} on matrix {i}: {e}");
                }
            }
            for m in all() {
                if let Some(e) = single_fault_violation(&a, &a.score(m, &optimised)) {
                    panic!("optimised {} on matrix {i}: {e}", m.name);
                }
            }
        }
    }

    #[test]
    fn preserved_measures_rank_identically_with_seven_clones() {
        let once = Options::default();
        let seven = Options {
            clone_failing: 7,
            ..Options::default()
        };
        let preserved: Vec<_> = all().filter(|m| m.cloning == Some(Cloning::Preserved)).collect();
        assert_eq!(preserved.len(), 10);
        for (i, s) in matrices(0xdead_beef_cafe_f00d, 300).iter().enumerate() {
            let a = Analysis::new(s, true);
            for m in &preserved {
                let order = |o: &Options| {
                    rank_scored(&a, &a.score(m, o))
                        .iter()
                        .map(|r| (r.group, r.rank))
                        .collect::<Vec<_>>()
                };
                assert_eq!(order(&once), order(&seven), "{} on matrix {i}", m.name);
            }
        }
    }

    #[test]
    fn no_ranking_holds_nan_or_infinity_under_any_option() {
        let variants = [
            Options::default(),
            Options {
                smoothing: true,
                clone_failing: 3,
                ..Options::default()
            },
            Options {
                optimise: true,
                group: false,
                update_bound: 3,
                ..Options::default()
            },
        ];
        for s in matrices(0x0123_4567_89ab_cdef, 150) {
            let a = Analysis::new(&s, true);
            for m in all() {
                for o in &variants {
                    for x in rank_scored(&a, &a.score(m, o)) {
                        assert!(x.score.is_finite() && x.rank.is_finite(), "{} gave {x:?}", m.name);
                    }
                }
            }
        }
    }

    /// cl in log space equals Eq. 7 computed directly, wherever 2^-ρ does not underflow.
    #[test]
    fn log_space_cl_agrees_with_the_direct_formula() {
        for s in matrices(0x5151_5151_2323_2323, 300) {
            let a = Analysis::new(&s, false);
            let cl = a.score(find("cl").unwrap(), &Options::default());
            let fail = s.failing_mask();
            let rho: Vec<i32> = (0..s.tests.len())
                .map(|t| s.coverage.iter().filter(|c| c.contains(t)).count() as i32)
                .collect();
            for (g, scored) in a.groups.iter().zip(&cl) {
                let col = &s.coverage[g.units[0]];
                let num: f64 = col.ones_and(&fail).map(|t| 1.0 / (2f64.powi(rho[t]) - 1.0)).sum();
                let direct = num / (g.counts.ef + g.counts.ep);
                assert!(
                    (scored.score - direct).abs() <= 1e-12 * direct,
                    "{} vs {direct}",
                    scored.score
                );
            }
        }
    }
}
