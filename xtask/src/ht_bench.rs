//! `cargo xtask bench ht`: HT_Rank's exact solver (state reduction) on chains of growing size,
//! against the dense LU it replaced where that is feasible, and the random-walk estimate.
//!
//! Two chain families. *Ranked list*: Def. 29, entries of one line, score groups of 10, jumps
//! among the 10 lines of a function. *Realistic*: what `cargo sfl` builds from a real run —
//! functions of 5–200 lines cut into entries of 1–30 consecutive lines (Def. 30); entries of
//! the functions failing tests ran (a third) scored from a pool with ties, every line of the
//! others its own entry at the bottom; each line jumps to the rest of its function, and a
//! function's last line to a line of another function and back (a call edge in the CFG).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use cargo_sfl::hitting::{Chain, ChainSpec};
use cargo_sfl::score::Key;

use crate::measures_bench::Rng;

/// The chain of one family and size, as its parts.
struct Spec {
    entries: Vec<Vec<usize>>,
    keys: Vec<Key>,
    jumps: Vec<Vec<usize>>,
}

impl Spec {
    fn chain(&self) -> Chain {
        Chain::build(&ChainSpec {
            entries: &self.entries,
            keys: &self.keys,
            locations: self.jumps.len(),
            jumps: &self.jumps,
            p_jump: 0.5,
        })
    }
}

fn ranked_list(n: usize) -> Spec {
    Spec {
        entries: (0..n).map(|l| vec![l]).collect(),
        keys: (0..n).map(|l| Key::score(-((l / 10) as f64))).collect(),
        jumps: (0..n)
            .map(|l| (l / 10 * 10..(l / 10 * 10 + 10).min(n)).filter(|&j| j != l).collect())
            .collect(),
    }
}

fn realistic(n: usize, seed: u64) -> Spec {
    let mut rng = Rng(seed);
    let mut below = |k: usize| (rng.next() % k as u64) as usize;
    let mut functions: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + 5 + below(196)).min(n);
        functions.push(start..end);
        start = end;
    }
    // About four entries share each score, as ambiguity groups of a real ranking do.
    let pool = (n / 40).max(1);
    let (mut entries, mut keys) = (Vec::new(), Vec::new());
    let mut jumps: Vec<Vec<usize>> = vec![Vec::new(); n];
    for f in &functions {
        let failing = below(3) == 0;
        let mut l = f.start;
        while l < f.end {
            let take = if failing { (1 + below(30)).min(f.end - l) } else { 1 };
            entries.push((l..l + take).collect());
            keys.push(if failing {
                Key::score(below(pool) as f64)
            } else {
                Key::UNRANKED
            });
            l += take;
        }
        for l in f.clone() {
            jumps[l] = f.clone().filter(|&j| j != l).collect();
        }
        let (from, to) = (f.end - 1, below(n));
        if !f.contains(&to) {
            jumps[from].push(to);
            jumps[to].push(from);
        }
    }
    Spec { entries, keys, jumps }
}

/// Largest relative difference between two lists of times.
fn max_gap(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| ((x - y) / x).abs()).fold(0.0, f64::max)
}

/// One table row: sizes, exact solve, dense LU and its agreement, the estimate.
fn row(md: &mut String, family: &str, spec: &Spec, walks: usize) {
    let chain = spec.chain();
    let states = chain.states();
    let t0 = Instant::now();
    let log_times = chain.log_hitting_times();
    let exact = t0.elapsed().as_secs_f64();
    let times: Vec<f64> = log_times.iter().map(|t| t.exp()).collect();
    let (lo, hi) = log_times
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &t| (a.min(t), b.max(t)));
    let finite = log_times.iter().all(|t| t.is_finite());
    let (lu_time, lu_gap) = if states <= 2000 {
        let t1 = Instant::now();
        let lu = chain.hitting_times_dense_lu();
        let took = t1.elapsed().as_secs_f64();
        // Where every time is a double and the span keeps digits, LU is the reference.
        let gap = if hi < 700.0 {
            format!("{:.1e}", max_gap(&times, &lu))
        } else {
            "times past 1e304".into()
        };
        (format!("{took:.3} s"), gap)
    } else {
        ("not run".into(), "-".into())
    };
    let estimate = if walks > 0 && states <= 30_000 {
        let t2 = Instant::now();
        let e = chain.hitting_times_estimated(walks, 200_000, 7);
        format!(
            "{:.2} s ({} of {} censored)",
            t2.elapsed().as_secs_f64(),
            e.censored,
            walks * chain.locations
        )
    } else {
        "not run".into()
    };
    let _ = writeln!(
        md,
        "| {family} | {} | {states} | {} | **{exact:.3} s** | 10^{:.1} … 10^{:.1} | {} | {lu_time} | {lu_gap} | {estimate} |",
        chain.locations,
        spec.jumps.iter().map(Vec::len).sum::<usize>(),
        lo / std::f64::consts::LN_10,
        hi / std::f64::consts::LN_10,
        if finite { "yes" } else { "**no**" },
    );
    eprintln!("{family} {} locations: exact {exact:.3} s", chain.locations);
}

pub fn run(sizes: &[usize], walks: usize, output: Option<&Path>) -> Result<()> {
    let mut md = String::new();
    let _ = writeln!(md, "# `cargo xtask bench ht`\n");
    let _ = writeln!(
        md,
        "HT_Rank's exact hitting times (GTH state reduction, `Chain::log_hitting_times`) against the dense LU it replaced (run up to 2,000 states) and {walks} random walks of at most 200,000 steps. p_jump = 0.5, one core of a shared 2-core machine.\n"
    );
    let _ = writeln!(
        md,
        "*ranked list*: Def. 29, one line per entry, score groups of 10, functions of 10 lines. *realistic*: Def. 30, functions of 5–200 lines in entries of 1–30 lines, a third of the functions ranked (about four entries per score), the rest one line per entry at the bottom; jumps within a function plus one call edge per function.\n"
    );
    let _ = writeln!(
        md,
        "| chain | locations | states | jump edges | exact | E[T] from … to | all finite | dense LU | max relative gap to LU | estimate |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---|---|---:|---:|---|");
    for &n in sizes {
        row(&mut md, "ranked list", &ranked_list(n), walks);
        row(
            &mut md,
            "realistic",
            &realistic(n, 0x5eed_0000_0000_0001 ^ n as u64),
            walks,
        );
    }
    print!("{md}");
    if let Some(path) = output {
        std::fs::write(path, &md)?;
    }
    Ok(())
}
