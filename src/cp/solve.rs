//! Solving CP: edges merged, chains contracted, the CFG split into components, each component's
//! system solved ([`super::system`]); and every block's score mapped to the lines it holds.

use super::model::{CpEdge, CpMethod, CpSolution, CpVariant, Damping, ThetaEdge, theta_delta};
use super::system::{System, solve_system};
use crate::bitset::BitSet;
use crate::spectra::EdgeSpectra;

/// Builds and solves the system for `blocks` blocks (ids 0..blocks). Blocks with no incident
/// edge at all get BR 0 and are not part of the system.
///
/// The system is solved per connected component of the CFG (per function, as edges are
/// intraprocedural), so a singular loop in one function damps that function only.
pub fn solve(blocks: usize, edges: &[CpEdge], total_failing: u32, total_passing: u32, damping: Damping) -> CpSolution {
    let merged = merge(blocks, edges, total_failing, total_passing);
    let (chain_of, contracted) = contract_chains(blocks, &merged.edges);
    let mut br = vec![0.0; blocks];
    let (mut exits, mut residual) = (0, 0.0f64);
    let mut damped: Vec<(f64, String)> = Vec::new();
    let mut damped_blocks = Vec::new();
    let components = components(blocks, &contracted);
    for (ids, local) in &components {
        let system = System::build(ids.len(), local, damping);
        let (x, method) = solve_system(&system);
        residual = residual.max(system.max_residual(1.0, &x).min(f64::MAX));
        for (&row, &score) in system.block.iter().zip(&x) {
            br[ids[row]] = score;
        }
        exits += system.exit.iter().filter(|&&e| e).count();
        if let CpMethod::Damped { factor, reason } = method {
            damped_blocks.push(ids[0]);
            damped.push((factor, reason));
        }
    }
    let mut present = vec![false; blocks];
    for e in &merged.edges {
        present[e.to] = true;
        if let Some(f) = e.from {
            present[f] = true;
        }
    }
    let solved = present.iter().filter(|&&p| p).count();
    for b in 0..blocks {
        br[b] = br[chain_of[b]];
    }
    let method = match damped.first() {
        None => CpMethod::Exact,
        Some((_, first)) => CpMethod::Damped {
            factor: damped.iter().map(|d| d.0).fold(1.0, f64::min),
            reason: format!(
                "{} of {} CFG components (functions) could not be solved exactly and were damped; the first: {first}",
                damped.len(),
                components.len()
            ),
        },
    };
    CpSolution {
        br,
        theta: merged.theta,
        blocks_solved: solved,
        exit_blocks: exits,
        method,
        residual,
        duplicates_merged: merged.duplicates,
        ignored_edges: merged.ignored,
        damped_blocks,
    }
}

/// Solves CP over edge profiles: every block's BR, with each edge counted over the `failing`
/// and `passing` tests that traversed it; calls only when `variant` says so.
pub fn solve_edges(profiles: &EdgeSpectra, failing: &BitSet, passing: &BitSet, variant: CpVariant) -> CpSolution {
    let (total_f, total_p) = (failing.count_and(failing), passing.count_and(passing));
    let edges: Vec<CpEdge> = profiles
        .edges
        .iter()
        .zip(&profiles.coverage)
        .filter(|(e, _)| variant.calls || !profiles.is_call(**e))
        .map(|(e, c)| CpEdge {
            from: e.from.map(|f| f.0),
            to: e.to.0,
            failing: c.count_and(failing),
            passing: c.count_and(passing),
        })
        .collect();
    solve(profiles.blocks.len(), &edges, total_f, total_p, variant.damping)
}

/// CP's score of every unit (of `units`): the highest BR of a block containing it, or `None`
/// when no traversed block contains it.
pub fn unit_scores(profiles: &EdgeSpectra, solution: &CpSolution, units: usize) -> Vec<Option<f64>> {
    let mut reached = vec![false; profiles.blocks.len()];
    for e in &profiles.edges {
        reached[e.to.index()] = true;
        if let Some(f) = e.from {
            reached[f.index()] = true;
        }
    }
    let mut out: Vec<Option<f64>> = vec![None; units];
    for (b, block) in profiles.blocks.iter().enumerate().filter(|(b, _)| reached[*b]) {
        for &u in &block.lines {
            let s = &mut out[u.index()];
            *s = Some(s.map_or(solution.br[b], |v: f64| v.max(solution.br[b])));
        }
    }
    out
}

/// Contracts chains into maximal blocks: an edge `a → b` where `a` has no other successor and
/// `b` no other predecessor (nor the virtual entry edge) joins them into one block, as a
/// compiler that did not split blocks (gcov's, the paper's) would have them. LLVM splits a
/// block at every check whose failure edge no test takes (overflow, bounds) and at critical
/// edges, and such a split must not change a score: along the chain `W = θΔ/θΔ = 1`, except
/// where θΔ = 0 (an edge every test takes), where the paper's `0/1e-10` would cut the chain.
/// Returns each block's chain head and the edges between chains (renamed to their heads).
fn contract_chains(blocks: usize, edges: &[ThetaEdge]) -> (Vec<usize>, Vec<ThetaEdge>) {
    let (mut outs, mut ins) = (vec![0u32; blocks], vec![0u32; blocks]);
    for e in edges {
        ins[e.to] += 1;
        if let Some(f) = e.from {
            outs[f] += 1;
        }
    }
    // next[a] = Some(b) when a → b is a chain link.
    let mut next: Vec<Option<usize>> = vec![None; blocks];
    let mut linked = vec![false; blocks];
    for e in edges {
        if let Some(f) = e.from
            && f != e.to
            && outs[f] == 1
            && ins[e.to] == 1
        {
            next[f] = Some(e.to);
            linked[e.to] = true;
        }
    }
    let mut head = (0..blocks).collect::<Vec<usize>>();
    for start in (0..blocks).filter(|&b| !linked[b]) {
        let mut b = start;
        while let Some(n) = next[b]
            && n != start
        {
            b = n;
            head[b] = start;
        }
    }
    let out = edges
        .iter()
        .filter(|e| e.from.is_none_or(|f| next[f] != Some(e.to)))
        .map(|e| ThetaEdge {
            from: e.from.map(|f| head[f]),
            to: head[e.to],
            theta: e.theta,
        })
        .collect();
    (head, out)
}

/// The weakly connected components of the edges: per component, its block ids (ascending)
/// and its edges renumbered to positions in that list.
fn components(blocks: usize, edges: &[ThetaEdge]) -> Vec<(Vec<usize>, Vec<ThetaEdge>)> {
    let mut parent: Vec<usize> = (0..blocks).collect();
    fn root(parent: &mut [usize], mut b: usize) -> usize {
        while parent[b] != b {
            parent[b] = parent[parent[b]];
            b = parent[b];
        }
        b
    }
    for e in edges {
        if let Some(f) = e.from {
            let (a, b) = (root(&mut parent, f), root(&mut parent, e.to));
            if a != b {
                parent[a.max(b)] = a.min(b);
            }
        }
    }
    let mut present = vec![false; blocks];
    for e in edges {
        present[e.to] = true;
        if let Some(f) = e.from {
            present[f] = true;
        }
    }
    let mut component_of: Vec<Option<usize>> = vec![None; blocks];
    let mut local = vec![0usize; blocks];
    let mut out: Vec<(Vec<usize>, Vec<ThetaEdge>)> = Vec::new();
    for b in (0..blocks).filter(|&b| present[b]) {
        let r = root(&mut parent, b);
        let c = *component_of[r].get_or_insert_with(|| {
            out.push((Vec::new(), Vec::new()));
            out.len() - 1
        });
        local[b] = out[c].0.len();
        out[c].0.push(b);
    }
    for e in edges {
        let c = component_of[root(&mut parent, e.to)].expect("an edge's blocks are present");
        out[c].1.push(ThetaEdge {
            from: e.from.map(|f| local[f]),
            to: local[e.to],
            theta: e.theta,
        });
    }
    out
}

/// The edges that enter the system, and θΔ of every input edge.
struct Merged {
    edges: Vec<ThetaEdge>,
    theta: Vec<f64>,
    duplicates: usize,
    ignored: usize,
}

/// Merges duplicate `(from, to)` pairs (counts added, saturating at the totals), drops
/// untraversed and out-of-range edges, and computes θΔ of every input edge.
fn merge(blocks: usize, edges: &[CpEdge], total_failing: u32, total_passing: u32) -> Merged {
    let theta_of = |f, p| theta_delta(f, p, total_failing, total_passing);
    let mut theta: Vec<f64> = edges.iter().map(|e| theta_of(e.failing, e.passing)).collect();
    let in_range = |e: &CpEdge| (e.to as usize) < blocks && e.from.is_none_or(|f| (f as usize) < blocks);
    let mut order: Vec<usize> = (0..edges.len()).filter(|&i| in_range(&edges[i])).collect();
    let ignored = edges.len() - order.len();
    order.sort_unstable_by_key(|&i| (edges[i].from, edges[i].to, i));
    let mut merged = Vec::new();
    let mut duplicates = 0;
    for group in order.chunk_by(|&a, &b| (edges[a].from, edges[a].to) == (edges[b].from, edges[b].to)) {
        let first = edges[group[0]];
        let (mut failing, mut passing) = (first.failing, first.passing);
        if group.len() > 1 {
            duplicates += group.len() - 1;
            let sum =
                |count: fn(&CpEdge) -> u32| group.iter().fold(0u32, |acc, &i| acc.saturating_add(count(&edges[i])));
            failing = sum(|e| e.failing).min(total_failing);
            passing = sum(|e| e.passing).min(total_passing);
            let t = theta_of(failing, passing);
            for &i in group {
                theta[i] = t;
            }
        }
        if failing > 0 || passing > 0 {
            merged.push(ThetaEdge {
                from: first.from.map(|f| f as usize),
                to: first.to as usize,
                theta: theta[group[0]],
            });
        }
    }
    Merged {
        edges: merged,
        theta,
        duplicates,
        ignored,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cp::synthetic;

    use std::collections::HashMap;

    fn edge(from: Option<u32>, to: u32, failing: u32, passing: u32) -> CpEdge {
        CpEdge {
            from,
            to,
            failing,
            passing,
        }
    }

    /// The edge that tests `traversed` (1-based) took, of 7 tests with t3 and t6 failing.
    fn seed_edge(from: Option<u32>, to: u32, traversed: &[u32]) -> CpEdge {
        let failing = traversed.iter().filter(|t| [3, 6].contains(t)).count() as u32;
        edge(from, to, failing, traversed.len() as u32 - failing)
    }

    fn assert_close(actual: &[f64], expected: &[f64], tolerance: f64) {
        assert_eq!(actual.len(), expected.len());
        for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
            assert!((a - e).abs() <= tolerance, "[{i}]: {a} vs {e}");
        }
    }

    /// Zhang et al.'s CP paper, Fig. 1: CP ranks b2 (the fault) first.
    #[test]
    fn seed_004_figure_1() {
        let all = [1, 2, 3, 4, 5, 6, 7];
        let edges = [
            seed_edge(None, 0, &all),
            seed_edge(Some(0), 1, &[1, 3, 5, 6]),
            seed_edge(Some(0), 3, &[2, 4, 7]),
            seed_edge(Some(1), 2, &[3]),
            seed_edge(Some(1), 3, &[1, 5, 6]),
            seed_edge(Some(2), 3, &[3]),
        ];
        let s = solve(4, &edges, 2, 5, Damping::Whole);
        assert_close(&s.theta, &[0.0, 3.0 / 7.0, -1.0, 1.0, 1.0 / 9.0, 1.0], 1e-12);
        assert_close(&s.br, &[1.0 / 9.0, 10.0 / 9.0, 1.0, 1.0 / 9.0], 1e-9);
        assert_eq!(s.method, CpMethod::Exact);
        assert_eq!((s.blocks_solved, s.exit_blocks), (4, 1));
        assert!(s.residual < 1e-12);
        let top = (0..4).max_by(|&a, &b| s.br[a].total_cmp(&s.br[b]));
        assert_eq!(top, Some(1));
    }

    #[test]
    fn theta_delta_edge_cases() {
        assert_eq!(theta_delta(0, 0, 2, 5), 0.0);
        assert_eq!(theta_delta(0, 0, 0, 0), 0.0);
        // No passing tests: θ✓ = 0, so any failing traversal is +1.
        assert_eq!(theta_delta(1, 0, 2, 0), 1.0);
        assert_eq!(theta_delta(0, 3, 2, 0), 0.0);
        // No failing tests: θ× = 0, so any passing traversal is −1.
        assert_eq!(theta_delta(0, 3, 0, 5), -1.0);
        assert_eq!(theta_delta(4, 0, 0, 5), 0.0);
        // Same share of failing and passing tests: exactly 0.
        assert_eq!(theta_delta(1, 5, 2, 10), 0.0);
        assert_eq!(theta_delta(2, 5, 2, 5), 0.0);
        assert_eq!(theta_delta(u32::MAX, 0, u32::MAX, u32::MAX), 1.0);
        assert!((theta_delta(1, 1, 2, 4) - 1.0 / 3.0).abs() < 1e-15);
    }

    /// A loop whose header is also reached from outside: entry → 0; 0 → 1 (header) or 0 → 3;
    /// 1 → 2 → 1 (body, back edge); 1 → 3 (exit). Two failing, four passing tests.
    ///
    /// θΔ: 0→1 0.6, 0→3 −1, 1→2 0.6, 2→1 1/3, 1→3 0.6; incoming sums: S1 = 14/15, S2 = 0.6,
    /// S3 = −0.4. W(0,1) = 9/14, W(0,3) = 2.5, W(1,2) = 1, W(2,1) = 5/14, W(1,3) = −1.5.
    /// BR3 = −0.4; BR2 = 5/14·BR1; BR1 = BR2 + 0.6 → BR1 = 14/15, BR2 = 1/3;
    /// BR0 = 9/14·14/15 + 2.5·(−0.4) = −0.4.
    #[test]
    fn well_conditioned_loop() {
        let edges = [
            edge(None, 0, 2, 4),
            edge(Some(0), 1, 2, 1),
            edge(Some(0), 3, 0, 3),
            edge(Some(1), 2, 2, 1),
            edge(Some(2), 1, 1, 1),
            edge(Some(1), 3, 2, 1),
        ];
        let s = solve(4, &edges, 2, 4, Damping::Whole);
        assert_close(&s.theta, &[0.0, 0.6, -1.0, 0.6, 1.0 / 3.0, 0.6], 1e-15);
        assert_close(&s.br, &[-0.4, 14.0 / 15.0, 1.0 / 3.0, -0.4], 1e-12);
        assert_eq!(s.method, CpMethod::Exact);
    }

    fn assert_damped(s: &CpSolution) -> (f64, &str) {
        assert!(s.br.iter().all(|b| b.is_finite()), "{:?}", s.br);
        assert!(s.residual.is_finite());
        match &s.method {
            CpMethod::Damped { factor, reason } => {
                assert!(!reason.is_empty());
                (*factor, reason)
            }
            CpMethod::Exact => panic!("not detected: {s:?}"),
        }
    }

    /// A loop with no way out, entered by every test: W = 1 both ways, b = 0, `I − W` singular.
    #[test]
    fn singular_closed_loop_is_damped() {
        let edges = [edge(None, 0, 2, 5), edge(Some(0), 1, 2, 0), edge(Some(1), 0, 2, 0)];
        let s = solve(2, &edges, 2, 5, Damping::Whole);
        let (factor, reason) = assert_damped(&s);
        assert_eq!(factor, 1.0 - 0.1);
        assert!(reason.contains("loop passes all"), "{reason}");
        assert_eq!(s.damped_blocks, vec![0]);
        assert_eq!(s.exit_blocks, 0);
        assert!(s.residual < 1e-6, "consistent system: {}", s.residual);
    }

    /// The common case: a loop header that is the function's entry, entered by every test
    /// (θΔ 0), with an exit. The system has no solution; damped by 0.9 the loop's scores stay
    /// within a small multiple of the exit's.
    #[test]
    fn singular_loop_with_exit_is_damped() {
        let edges = [
            edge(None, 0, 2, 5),
            edge(Some(0), 1, 2, 3),
            edge(Some(1), 0, 2, 1),
            edge(Some(1), 2, 2, 1),
        ];
        let s = solve(3, &edges, 2, 5, Damping::Whole);
        let (factor, reason) = assert_damped(&s);
        assert_eq!(factor, 1.0 - 0.1);
        assert!(reason.contains("loop passes all"), "{reason}");
        assert_eq!(s.damped_blocks, vec![0]);
        let exit = s.br[2];
        assert!(
            s.br.iter().all(|b| b.is_finite() && b.abs() <= 20.0 * exit.abs()),
            "{:?}",
            s.br
        );
        assert!(s.residual > 0.1, "inconsistent system: {}", s.residual);
    }

    #[test]
    fn conventions() {
        let edges = [
            edge(None, 0, 1, 0),
            edge(Some(0), 2, 1, 0),
            // A duplicate of the edge above: merged, counts added and capped at the totals.
            edge(Some(0), 2, 1, 1),
            // Never traversed: dropped, so block 2 is an exit block.
            edge(Some(2), 3, 0, 0),
            // Out of range: ignored (its θΔ is still reported).
            edge(Some(2), 9, 1, 1),
        ];
        let s = solve(5, &edges, 1, 2, Damping::Whole);
        let third = theta_delta(1, 1, 1, 2);
        assert!((third - 1.0 / 3.0).abs() < 1e-15);
        assert_close(&s.theta, &[1.0, third, third, 0.0, third], 0.0);
        assert_eq!((s.duplicates_merged, s.ignored_edges), (1, 1));
        // 0 → 2 is a chain (0's only successor, 2's only predecessor): one exit block, whose
        // score is the θΔ coming into 0. Blocks 1, 3 and 4 take part in nothing.
        assert_eq!((s.blocks_solved, s.exit_blocks), (2, 1));
        assert_close(&s.br, &[1.0, 0.0, 1.0, 0.0, 0.0], 1e-15);
        assert_eq!(s.method, CpMethod::Exact);
        let empty = solve(0, &[], 0, 0, Damping::Whole);
        assert_eq!((empty.br.len(), empty.method), (0, CpMethod::Exact));
    }

    /// A self-loop whose incoming sum cancels exactly: the denominator becomes 1e-10.
    #[test]
    fn cancelling_incoming_sum() {
        // θΔ(entry → 0) = −1, θΔ(0 → 0) = 1: S0 = 0, so W(0,0) = 1e10 and W(0,1) = 1.
        let edges = [edge(None, 0, 0, 2), edge(Some(0), 0, 1, 0), edge(Some(0), 1, 1, 1)];
        let s = solve(2, &edges, 1, 2, Damping::Whole);
        let t = theta_delta(1, 1, 1, 2);
        // BR0 = 1e10·BR0 + BR1 → BR0 = −BR1/(1e10 − 1).
        assert_close(&s.br, &[-t / (1e10 - 1.0), t], 1e-20);
        assert_eq!(s.method, CpMethod::Exact);
    }

    /// The equations of CP, computed independently of the solver: residual of each block's
    /// equation and that equation's scale. A chain link (the only edge out of its source and
    /// into its target) makes the two blocks one: `BR(a) = BR(b)`.
    fn equations(blocks: usize, edges: &[CpEdge], tf: u32, tp: u32, br: &[f64]) -> Vec<(f64, f64)> {
        let (mut outs, mut ins) = (vec![0; blocks], vec![0; blocks]);
        for e in edges {
            ins[e.to as usize] += 1;
            if let Some(f) = e.from {
                outs[f as usize] += 1;
            }
        }
        let link = |e: &CpEdge| {
            e.from
                .is_some_and(|f| f != e.to && outs[f as usize] == 1 && ins[e.to as usize] == 1)
        };
        let theta: Vec<f64> = edges
            .iter()
            .map(|e| theta_delta(e.failing, e.passing, tf, tp))
            .collect();
        let (mut sum, mut magnitude) = (vec![0.0; blocks], vec![0.0; blocks]);
        let mut successors: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, e) in edges.iter().enumerate() {
            sum[e.to as usize] += theta[i];
            magnitude[e.to as usize] += theta[i].abs();
            if let Some(f) = e.from {
                successors.entry(f).or_default().push(i);
            }
        }
        let mut linked_from: Vec<Option<usize>> = vec![None; blocks];
        for e in edges.iter().filter(|e| link(e)) {
            linked_from[e.to as usize] = e.from.map(|f| f as usize);
        }
        // The first block of the chain `b` ends: an exit chain scores what comes into it.
        let head = |mut b: usize| {
            let start = b;
            while let Some(prev) = linked_from[b]
                && prev != start
            {
                b = prev;
            }
            b
        };
        (0..blocks)
            .map(|b| match successors.get(&(b as u32)) {
                Some(out) if out.len() == 1 && link(&edges[out[0]]) => {
                    let to = edges[out[0]].to as usize;
                    (br[b] - br[to], br[b].abs() + br[to].abs())
                }
                None => {
                    let h = head(b);
                    (br[b] - sum[h], br[b].abs() + sum[h].abs())
                }
                Some(out) => {
                    let terms = out.iter().map(|&i| {
                        let to = edges[i].to as usize;
                        let d = if sum[to].abs() <= 1e-12 * magnitude[to] {
                            1e-10
                        } else {
                            sum[to]
                        };
                        theta[i] / d * br[to]
                    });
                    let (total, scale) = terms.fold((0.0, 0.0), |(t, s), v| (t + v, s + v.abs()));
                    (br[b] - total, br[b].abs() + scale)
                }
            })
            .collect()
    }

    /// On random CFG-shaped systems, an exact solution satisfies every block's equation.
    #[test]
    fn random_cfgs_satisfy_the_equations() {
        let mut exact = 0;
        for seed in 0..80u64 {
            let blocks = 5 + (seed as usize * 37) % 300;
            let (edges, tf, tp) = synthetic(blocks, seed);
            let s = solve(blocks, &edges, tf, tp, Damping::Whole);
            assert!(s.br.iter().all(|b| b.is_finite()) && s.residual.is_finite());
            assert_eq!(s.blocks_solved, blocks);
            if s.method != CpMethod::Exact {
                continue;
            }
            exact += 1;
            let eqs = equations(blocks, &edges, tf, tp, &s.br);
            let scale = eqs.iter().fold(1.0f64, |m, e| m.max(e.1));
            for (b, (residual, _)) in eqs.iter().enumerate() {
                assert!(residual.abs() <= 1e-6 * scale, "seed {seed} block {b}: {residual}");
            }
        }
        assert!(exact >= 40, "only {exact} of 80 exact");
    }

    #[test]
    fn calls_pass_the_callees_suspiciousness_to_the_calling_block() {
        use crate::spectra::{Block, BlockId, Edge};
        let block = |function: &str, index| Block {
            function: function.into(),
            index,
            lines: Vec::new(),
        };
        // f: block 0 (entry) → 1 (exit), and 0 calls g; g: block 2 (entry, exit). Tests 0 and
        // 1 fail, 2 and 3 pass; the failing tests and test 2 call g.
        let blocks = vec![block("f", 0), block("f", 1), block("g", 0)];
        let edge = |from: Option<u32>, to| Edge {
            from: from.map(BlockId),
            to: BlockId(to),
        };
        let all = vec![edge(None, 0), edge(Some(0), 1)];
        let calling = [all.clone(), vec![edge(Some(0), 2), edge(None, 2)]].concat();
        let e = EdgeSpectra::from_tests(blocks, 4, &[calling.clone(), calling.clone(), calling, all]);
        assert!(e.is_call(Edge {
            from: Some(BlockId(0)),
            to: BlockId(2)
        }));
        assert!(!e.is_call(Edge {
            from: Some(BlockId(0)),
            to: BlockId(1)
        }));
        let mut failing = BitSet::new(4);
        failing.insert(0);
        failing.insert(1);
        let mut passing = BitSet::new(4);
        passing.insert(2);
        passing.insert(3);
        // θΔ(0 → 1) = 0, θΔ(0 → g) = θΔ(entry of g) = (1 − 1/2)/(1 + 1/2) = 1/3.
        let intra = solve_edges(&e, &failing, &passing, CpVariant::PAPER);
        assert_close(&intra.br, &[0.0, 0.0, 1.0 / 3.0], 1e-12);
        // With the call, g's entry has two incoming edges of 1/3: block 0 takes half its BR.
        let inter = solve_edges(&e, &failing, &passing, CpVariant::INTERPROCEDURAL);
        assert_close(&inter.br, &[1.0 / 3.0, 0.0, 2.0 / 3.0], 1e-12);
    }

    #[test]
    fn synthetic_is_reproducible_and_shaped() {
        let (a, tf, tp) = synthetic(1000, 7);
        assert_eq!(synthetic(1000, 7), (a.clone(), tf, tp));
        assert_ne!(synthetic(1000, 8).0, a);
        assert!(a.iter().all(|e| e.to < 1000 && e.from.is_none_or(|f| f < 1000)));
        assert!(
            a.iter()
                .all(|e| e.failing <= tf && e.passing <= tp && e.failing + e.passing > 0)
        );
        let s = solve(1000, &a, tf, tp, Damping::Whole);
        assert_eq!(s.blocks_solved, 1000);
        assert!(s.exit_blocks > 1000 / 60);
        assert!(a.iter().any(|e| e.from.is_some_and(|f| f >= e.to)), "no loops");
    }
}
