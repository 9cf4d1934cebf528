//! Reproducible CFG-shaped CP systems for the benchmark and the tests.

use super::model::CpEdge;
use crate::spectra::{BlockId, Edge};

/// xorshift64 (Marsaglia): reproducible, dependency-free.
struct XorShift(u64);

impl XorShift {
    fn new(seed: u64) -> XorShift {
        XorShift(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    fn step(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    fn below(&mut self, n: u64) -> u64 {
        XorShift::step(&mut self.0) % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// A reproducible CFG-shaped system of `blocks` blocks (for benchmarks): functions of 5–60
/// blocks, each a fall-through chain from an entry edge to a return block, with forward
/// branches (30% of blocks), loops (back edges from 15% of blocks, never to the entry block)
/// and panic exits (up to one block in ten). Every edge has random failing and passing counts
/// (at least one test). Returns the edges, total failing and total passing tests. Block ids
/// are `u32`: `blocks` must not exceed `u32::MAX`.
pub fn synthetic(blocks: usize, seed: u64) -> (Vec<CpEdge>, u32, u32) {
    let mut rng = XorShift::new(seed);
    let total_failing = 1 + rng.below(5) as u32;
    let total_passing = 10 + rng.below(191) as u32;
    let mut shape = Vec::new();
    let mut base = 0;
    while base < blocks {
        let size = (5 + rng.below(56) as usize).min(blocks - base);
        synthetic_function(&mut rng, base, size, &mut shape);
        base += size;
    }
    let edges = shape
        .into_iter()
        .map(|e: Edge| {
            let failing = rng.below(u64::from(total_failing) + 1) as u32;
            let passing = rng.below(u64::from(total_passing) + 1) as u32;
            CpEdge {
                from: e.from.map(|f| f.0),
                to: e.to.0,
                failing,
                passing: if failing == 0 { passing.max(1) } else { passing },
            }
        })
        .collect();
    (edges, total_failing, total_passing)
}

/// The edges of one synthetic function of `size` blocks from id `base`: a main chain and
/// panic blocks after it.
fn synthetic_function(rng: &mut XorShift, base: usize, size: usize, out: &mut Vec<Edge>) {
    let id = |local: usize| BlockId((base + local) as u32);
    let edge = |from: usize, to: usize| Edge {
        from: Some(id(from)),
        to: id(to),
    };
    let panics = if size >= 10 {
        rng.below(size as u64 / 10 + 1) as usize
    } else {
        0
    };
    let chain = size - panics;
    out.push(Edge { from: None, to: id(0) });
    for i in 0..chain.saturating_sub(1) {
        out.push(edge(i, i + 1));
        if i + 2 < chain && rng.chance(30) {
            let target = i + 2 + rng.below((chain - i - 2) as u64) as usize;
            out.push(edge(i, target));
        }
        if i >= 1 && rng.chance(15) {
            let lowest = i.saturating_sub(8).max(1);
            let header = lowest + rng.below((i - lowest + 1) as u64) as usize;
            out.push(edge(i, header));
        }
    }
    for p in chain..size {
        let from = rng.below(chain.saturating_sub(1).max(1) as u64) as usize;
        out.push(edge(from, p));
    }
}
