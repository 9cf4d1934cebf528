//! `cargo xtask fit`: fits the combined ranking's weights (`src/combined-weights.json`) on the
//! cached runs of three benchmarks, measures what they are worth with leave-one-crate-out
//! cross-validation (for each crate, weights fitted on every other crate rank that crate's
//! versions), and chooses the default ranking among simpler candidates the same way. Writes
//! bench-results/combined.md and combined.json.
//!
//! - Injected faults (`bench faults`, single-fault versions): each line's text facts (kind,
//!   operators) come from the crate's original text ([`faults_bench::with_original_text`]), so
//!   the weights learn nothing from cargo-mutants' replacement text.
//! - Real panics (`bench panic4r`, reproduced bugs).
//! - Real regressions (`bench regressions`, reproduced bugs; mostly assertion failures).
//!
//! A crate in several benchmarks (strsim, semver, chrono, …) is held out of all at once. The fit
//! minimises the softmax cross-entropy of the faulty lines, every version weighing the same
//! ([`loss`]; one candidate weighs every benchmark the same instead), by damped Newton steps
//! from the stack-first ranking's weights (Ochiai, operation panics first). `stack-combined` (operation panic sites first, then the combined score) is
//! scored with the same folds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use cargo_sfl::combined::{FEATURES, N};
use serde_json::json;

use crate::root;

mod results;
mod versions;

use results::{CHOSEN, Found, Table};
use versions::{Source, Version};

#[derive(clap::Args)]
pub struct Args {
    /// Where the benchmarks' caches are (faults/, panic4r/ and regressions/ under it).
    #[arg(long, default_value = "target/bench")]
    pub bench_dir: PathBuf,
    /// Where combined.md and combined.json go (relative to the repository).
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
    /// Write the weights fitted on every crate to src/combined-weights.json.
    #[arg(long)]
    pub write: bool,
}

/// How strongly the fit pulls weights towards 0 (L2): keeps the weights of rare features
/// small, so that a crate with an unusual feature does not decide them.
const RIDGE: f64 = 0.01;

/// What the fit's loss weighs the same.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Weighing {
    /// Every version (the larger benchmark counts for more).
    Versions,
    /// Every benchmark, and every version within it.
    Benchmarks,
}

/// The fit's loss, gradient and Hessian: per version, the softmax cross-entropy of the faulty
/// lines (`ln Σ_all e^s − ln Σ_faulty e^s`, small when the faulty lines outscore the rest), every
/// version or every benchmark weighing the same (`weighing`), plus `RIDGE/2 ‖w‖²`. The Hessian of a version is the covariance of its
/// features under the softmax over all lines less that over its faulty lines.
fn loss(versions: &[&Version], w: &[f64; N], weighing: Weighing) -> (f64, [f64; N], [[f64; N]; N]) {
    let mut total = RIDGE / 2.0 * w.iter().map(|x| x * x).sum::<f64>();
    let mut grad: [f64; N] = w.map(|x| RIDGE * x);
    let mut hess = [[0.0; N]; N];
    for (k, row) in hess.iter_mut().enumerate() {
        row[k] = RIDGE;
    }
    let mut per_source: BTreeMap<Source, f64> = BTreeMap::new();
    for v in versions {
        *per_source.entry(v.source).or_default() += 1.0;
    }
    let sources = per_source.len() as f64;
    for v in versions {
        let weight = match weighing {
            Weighing::Versions => 1.0 / versions.len() as f64,
            Weighing::Benchmarks => 1.0 / (sources * per_source[&v.source]),
        };
        let rows: Vec<&[f64; N]> = v.train.iter().map(|&i| &v.rows[i]).collect();
        let faulty: Vec<bool> = v.train.iter().map(|&i| v.faulty[i]).collect();
        let scores: Vec<f64> = rows.iter().map(|x| x.iter().zip(w).map(|(x, w)| x * w).sum()).collect();
        let top = scores.iter().copied().fold(f64::MIN, f64::max);
        let e: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
        let z: f64 = e.iter().sum();
        let zf: f64 = e.iter().zip(&faulty).filter(|(_, f)| **f).map(|(e, _)| e).sum();
        if zf <= 0.0 {
            continue;
        }
        total += weight * (z.ln() - zf.ln());
        // First and second moments under both distributions.
        let (mut mp, mut mq) = ([0.0; N], [0.0; N]);
        let (mut sp, mut sq) = ([[0.0; N]; N], [[0.0; N]; N]);
        for ((x, e), f) in rows.iter().zip(&e).zip(&faulty) {
            let p = e / z;
            let q = if *f { e / zf } else { 0.0 };
            for a in 0..N {
                mp[a] += p * x[a];
                mq[a] += q * x[a];
                for b in a..N {
                    sp[a][b] += p * x[a] * x[b];
                    sq[a][b] += q * x[a] * x[b];
                }
            }
        }
        for a in 0..N {
            grad[a] += weight * (mp[a] - mq[a]);
            for b in a..N {
                let h = weight * ((sp[a][b] - mp[a] * mp[b]) - (sq[a][b] - mq[a] * mq[b]));
                hess[a][b] += h;
                if a != b {
                    hess[b][a] += h;
                }
            }
        }
    }
    (total, grad, hess)
}

/// Solves `m x = r` by Gaussian elimination with partial pivoting; `None` when singular.
fn solve(mut m: [[f64; N]; N], mut r: [f64; N]) -> Option<[f64; N]> {
    for c in 0..N {
        let p = (c..N).max_by(|&a, &b| m[a][c].abs().total_cmp(&m[b][c].abs()))?;
        if m[p][c].abs() < 1e-14 {
            return None;
        }
        m.swap(c, p);
        r.swap(c, p);
        let pivot = m[c];
        for row in c + 1..N {
            let f = m[row][c] / pivot[c];
            for (x, p) in m[row][c..].iter_mut().zip(&pivot[c..]) {
                *x -= f * p;
            }
            r[row] -= f * r[c];
        }
    }
    let mut x = [0.0; N];
    for c in (0..N).rev() {
        let s: f64 = (c + 1..N).map(|k| m[c][k] * x[k]).sum();
        x[c] = (r[c] - s) / m[c][c];
    }
    Some(x)
}

/// The weights of the default ranking, the start of every fit: Ochiai, operation panics first.
fn start() -> [f64; N] {
    let mut w = [0.0; N];
    w[0] = 1.0;
    w[FEATURES
        .iter()
        .position(|f| *f == "operation_panic_point")
        .expect("a feature")] = 2.0;
    w
}

/// Damped Newton steps on [`loss`] from [`start`] (Levenberg–Marquardt: the damping grows until
/// a step lowers the loss, and shrinks after one does), until the loss stops falling.
fn fit(versions: &[&Version], weighing: Weighing) -> [f64; N] {
    let mut w = start();
    let (mut value, mut grad, mut hess) = loss(versions, &w, weighing);
    let mut damping = 1e-3;
    for _ in 0..100 {
        let mut damped = hess;
        for (k, row) in damped.iter_mut().enumerate() {
            row[k] += damping;
        }
        let step = solve(damped, grad.map(|g| -g));
        let next = step.map(|d| std::array::from_fn(|k| w[k] + d[k]));
        match next.map(|n: [f64; N]| (n, loss(versions, &n, weighing))) {
            Some((n, (v, g, h))) if v < value => {
                let gain = value - v;
                (w, value, grad, hess) = (n, v, g, h);
                damping = (damping / 10.0).max(1e-9);
                if gain < 1e-10 {
                    break;
                }
            }
            _ => {
                damping *= 10.0;
                if damping > 1e9 {
                    break;
                }
            }
        }
    }
    w
}

const CV: &str = "combined (leave-one-crate-out)";
const STACK_CV: &str = "stack-combined (leave-one-crate-out)";
const HYBRID: &str = "stack-combined with a library frame, else stack-cl (leave-one-crate-out)";
const HYBRID_OCHIAI: &str = "stack-combined with a library frame, else stack-ochiai (leave-one-crate-out)";
const STRUCTURAL_LAST: &str = "stack-ochiai, structural lines after the others";
const REVERSE: &str = "stack-ochiai with a library frame, else combined (leave-one-crate-out)";
const BALANCED: &str = "stack-combined, fitted with every benchmark weighing the same (leave-one-crate-out)";
const SPLIT: &str = "stack-combined, weights fitted apart with and without a library frame (leave-one-crate-out)";
const IN_SAMPLE: &str = "combined (fitted on all, in-sample)";

/// The rankings the default is chosen from, simplest first.
const CANDIDATES: [&str; 12] = [
    "ochiai",
    "cl",
    "stack-ochiai",
    "stack-cl",
    STRUCTURAL_LAST,
    HYBRID_OCHIAI,
    HYBRID,
    REVERSE,
    CV,
    STACK_CV,
    BALANCED,
    SPLIT,
];

/// Every benchmark's cached versions, numbered.
fn read_all(bench: &Path) -> Result<Vec<Version>> {
    let started = std::time::Instant::now();
    let mut versions = versions::faults_versions(bench)?;
    versions.extend(versions::panic4r_versions(bench)?);
    versions.extend(versions::regressions_versions(bench)?);
    for (i, v) in versions.iter_mut().enumerate() {
        v.id = i;
    }
    eprintln!("fit: read the cached runs in {:.1} s", started.elapsed().as_secs_f64());
    if versions.is_empty() {
        bail!(
            "no cached versions under {}: run `cargo xtask bench faults`, `bench panic4r` and `bench regressions` first",
            bench.display()
        );
    }
    let count = |s: Source| versions.iter().filter(|v| v.source == s).count();
    eprintln!(
        "fit: {} versions ({} injected, {} real panics, {} regressions) over {} crates",
        versions.len(),
        count(Source::Faults),
        count(Source::Panic4r),
        count(Source::Regressions),
        versions.iter().map(|v| &v.krate).collect::<BTreeSet<_>>().len()
    );
    Ok(versions)
}

/// Weights fitted without each crate on the versions `learn` accepts, one fold per crate, on as
/// many threads as there are cores.
fn fit_folds(
    versions: &[Version],
    crates: &BTreeSet<String>,
    learn: &(dyn Fn(&Version) -> bool + Sync),
    weighing: Weighing,
) -> Vec<(String, [f64; N])> {
    let held: Vec<&String> = crates.iter().collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let fitted = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..std::thread::available_parallelism().map_or(1, |n| n.get()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(held) = held.get(i) else { break };
                    let train: Vec<&Version> = versions.iter().filter(|v| &v.krate != *held && learn(v)).collect();
                    let w = fit(&train, weighing);
                    eprintln!("fit: held out {held}");
                    fitted.lock().expect("no fold panicked").push(((*held).clone(), w));
                }
            });
        }
    });
    let mut folds = fitted.into_inner().expect("no fold panicked");
    folds.sort_by(|a, b| a.0.cmp(&b.0));
    folds
}

pub fn run(args: &Args) -> Result<()> {
    let root = root();
    let versions = read_all(&root.join(&args.bench_dir))?;
    let crates: BTreeSet<String> = versions.iter().map(|v| v.krate.clone()).collect();
    let folds = fit_folds(&versions, &crates, &|_| true, Weighing::Versions);
    let balanced = fit_folds(&versions, &crates, &|_| true, Weighing::Benchmarks);
    let framed = fit_folds(&versions, &crates, &|v: &Version| v.frame, Weighing::Versions);
    let plain = fit_folds(&versions, &crates, &|v: &Version| !v.frame, Weighing::Versions);
    let mut table = Table::default();
    for ((((held, w), (_, wf)), (_, wp)), (_, wb)) in folds.iter().zip(&framed).zip(&plain).zip(&balanced) {
        for v in versions.iter().filter(|v| &v.krate == held) {
            let stacked = v.stack_combined_keys(w);
            table.add(v, CV, v.scores(&v.combined_keys(w)));
            table.add(v, STACK_CV, v.scores(&stacked));
            let hybrid = if v.frame {
                v.scores(&stacked)
            } else {
                v.scores(v.baseline("stack-cl"))
            };
            table.add(v, HYBRID, hybrid);
            let hybrid = if v.frame {
                v.scores(&stacked)
            } else {
                v.scores(v.baseline("stack-ochiai"))
            };
            table.add(v, HYBRID_OCHIAI, hybrid);
            let reverse = if v.frame {
                v.scores(v.baseline("stack-ochiai"))
            } else {
                v.scores(&v.combined_keys(w))
            };
            table.add(v, REVERSE, reverse);
            table.add(v, BALANCED, v.scores(&v.stack_combined_keys(wb)));
            table.add(
                v,
                SPLIT,
                v.scores(&v.stack_combined_keys(if v.frame { wf } else { wp })),
            );
        }
    }
    let all: Vec<&Version> = versions.iter().collect();
    let w = fit(&all, Weighing::Versions);
    for v in &versions {
        table.add(
            v,
            STRUCTURAL_LAST,
            v.scores(&v.structural_last(v.baseline("stack-ochiai"))),
        );
        table.add(v, IN_SAMPLE, v.scores(&v.combined_keys(&w)));
        for (name, keys) in &v.baselines {
            table.add(v, name, v.scores(keys));
        }
    }
    let chosen = results::choose(&table, &CANDIDATES, &|_| true);
    let picks = results::choose_per_fold(&mut table, &CANDIDATES, &crates);
    eprintln!("fit: chosen on every crate: {chosen}");
    let mut rankings: Vec<&'static str> = vec![CHOSEN];
    rankings.extend(CANDIDATES);
    rankings.extend([cargo_sfl::eval::PANIC_STACK, IN_SAMPLE]);
    let found = Found {
        table: &table,
        rankings: &rankings,
        candidates: &CANDIDATES,
        chosen,
        picks: &picks,
        weights: &w,
        folds: &folds,
        crates: &crates,
    };
    results::write(&root.join(&args.output_dir), &found)?;
    if args.write {
        let text = serde_json::to_string_pretty(&json!({
            "features": FEATURES,
            "weights": w,
            "fitted_by": "cargo xtask fit --write",
        }))?;
        std::fs::write(root.join("src/combined-weights.json"), text + "\n")?;
        eprintln!("fit: wrote src/combined-weights.json");
    }
    Ok(())
}
