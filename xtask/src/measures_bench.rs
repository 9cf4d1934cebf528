//! `cargo xtask bench measures`: every measure on a synthetic matrix the size of a large
//! project (10,000 tests × 100,000 lines by default), on one core.
//!
//! The matrix imitates real coverage: lines belong to functions of 5–40 lines; a function is
//! called by a skewed share of the tests (a few utilities by most, most functions by few);
//! each function has a few blocks, each run by a subset of its callers; 1% of the tests fail.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use cargo_sfl::analysis::Analysis;
use cargo_sfl::bitset::BitSet;
use cargo_sfl::measures::{self, find};
use cargo_sfl::rank::rank;
use cargo_sfl::score::Options;
use cargo_sfl::spectra::{Outcome, Spectra, TestRecord, Unit};

pub(crate) struct Rng(pub(crate) u64);
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Members of a random subset of `0..len`, each with probability `p` (geometric skips).
    fn subset(&mut self, len: usize, p: f64, out: &mut Vec<u64>) {
        out.clear();
        out.resize(len.div_ceil(64), 0);
        if p <= 0.0 {
            return;
        }
        let lq = (1.0 - p).ln();
        let mut i = 0usize;
        loop {
            let skip = if p >= 1.0 {
                0.0
            } else {
                (self.unit().max(1e-300)).ln() / lq
            };
            i += skip as usize;
            if i >= len {
                return;
            }
            out[i / 64] |= 1 << (i % 64);
            i += 1;
        }
    }
}

/// The synthetic matrix.
fn synthetic(tests: usize, units: usize, seed: u64) -> Spectra {
    let mut rng = Rng(seed);
    let failing = (tests / 100).max(1);
    let records = (0..tests)
        .map(|t| {
            let outcome = if t < failing { Outcome::Failed } else { Outcome::Passed };
            TestRecord::new("bench", format!("t{t}"), outcome)
        })
        .collect();
    let mut unit_list = Vec::with_capacity(units);
    let mut coverage = Vec::with_capacity(units);
    let (mut callers, mut block) = (Vec::new(), Vec::new());
    let mut function = 0;
    while unit_list.len() < units {
        let len = (5 + rng.next() % 36) as usize;
        let popularity = 0.2 * rng.unit().powi(4);
        rng.subset(tests, popularity, &mut callers);
        let blocks = 1 + rng.next() % 5;
        let mut line = 1;
        for b in 0..blocks {
            // Block 0 is the entry: every caller runs it; later blocks run for a subset.
            if b == 0 {
                block.clone_from(&callers);
            } else {
                let keep = 0.2 + 0.7 * rng.unit();
                rng.subset(tests, keep, &mut block);
                for (w, c) in block.iter_mut().zip(&callers) {
                    *w &= c;
                }
            }
            let lines = (len as u64 / blocks).max(1);
            for _ in 0..lines {
                if unit_list.len() == units {
                    break;
                }
                unit_list.push(Unit {
                    file: format!("src/f{}.rs", function / 50),
                    line,
                });
                coverage.push(BitSet::from_words(tests, block.clone()));
                line += 1;
            }
        }
        function += 1;
    }
    Spectra::from_columns("/bench".into(), records, unit_list, coverage)
}

/// Peak resident memory of this process, in MiB (Linux `VmHWM`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

pub fn run(tests: usize, units: usize, output: Option<&Path>) -> Result<()> {
    eprintln!("building a synthetic {tests}-test × {units}-line matrix…");
    let spectra = synthetic(tests, units, 0x5eed_cafe_f00d_d00d);
    let bits: u64 = spectra
        .coverage
        .iter()
        .map(|c| c.words().iter().map(|w| u64::from(w.count_ones())).sum::<u64>())
        .sum();
    let density = bits as f64 / (tests as f64 * units as f64);
    let matrix_rss = peak_rss_mib();

    let mut md = String::new();
    let _ = writeln!(md, "# `cargo xtask bench measures`\n");
    let _ = writeln!(
        md,
        "Synthetic matrix: {tests} tests ({} failing) × {units} lines, density {:.2}% ({bits} covered cells). One core.\n",
        spectra.tests.iter().filter(|t| t.outcome.is_failing()).count(),
        100.0 * density
    );
    let _ = writeln!(
        md,
        "| grouping | prepare (counts, groups, ρ) | ochiai alone | all {} measures | all ÷ ochiai | slowest measure | entries |",
        measures::all().count()
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|");
    for group in [true, false] {
        let opts = Options {
            group,
            ..Options::default()
        };
        let t0 = Instant::now();
        let analysis = Analysis::new(&spectra, group);
        let prepare = t0.elapsed().as_secs_f64();

        let t1 = Instant::now();
        let ochiai = rank(&analysis, find("ochiai").expect("ochiai"), &opts);
        let base = t1.elapsed().as_secs_f64();
        assert!(!ochiai.entries.is_empty());

        let mut slowest = ("", 0.0);
        let t2 = Instant::now();
        for m in measures::all() {
            let t = Instant::now();
            let r = rank(&analysis, m, &opts);
            assert_eq!(r.entries.len(), analysis.groups.len());
            let took = t.elapsed().as_secs_f64();
            if took > slowest.1 {
                slowest = (m.name, took);
            }
        }
        let all = t2.elapsed().as_secs_f64();
        let _ = writeln!(
            md,
            "| {} | {:.3} s | {:.3} s | {:.3} s | {:.0}× | {} ({:.3} s) | {} |",
            if group {
                "ambiguity groups (default)"
            } else {
                "one entry per line (`--no-group`)"
            },
            prepare,
            base,
            all,
            all / base,
            slowest.0,
            slowest.1,
            analysis.groups.len()
        );
    }
    // Log space matters: failing tests run thousands of lines, far past 2^-1074.
    let analysis = Analysis::new(&spectra, true);
    let cl = rank(&analysis, find("cl").expect("cl"), &Options::default());
    let distinct = cl.entries.windows(2).filter(|w| w[0].rank != w[1].rank).count() + 1;
    let failing_rho: Vec<usize> = (0..spectra.tests.len())
        .filter(|&t| spectra.tests[t].outcome.is_failing())
        .map(|t| spectra.coverage.iter().filter(|c| c.contains(t)).count())
        .collect();
    let _ = writeln!(
        md,
        "\nFailing tests run {}–{} lines each (2^-ρ underflows f64 past 1074), yet cl in log space gives {distinct} distinct ranks over {} entries (the direct formula would tie them all at 0).",
        failing_rho.iter().min().unwrap_or(&0),
        failing_rho.iter().max().unwrap_or(&0),
        cl.entries.len()
    );
    let _ = writeln!(
        md,
        "\nPeak memory: {:.0} MiB with the matrix alone, {:.0} MiB at the end (Linux VmHWM).",
        matrix_rss.unwrap_or(f64::NAN),
        peak_rss_mib().unwrap_or(f64::NAN)
    );
    let _ = writeln!(
        md,
        "Goal (issue 3): every measure together under 2 s on one core, memory under 1 GB, on 10,000 × 100,000."
    );
    print!("{md}");
    if let Some(path) = output {
        std::fs::write(path, &md)?;
    }
    Ok(())
}
