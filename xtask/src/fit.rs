//! `cargo xtask fit`: fits the combined ranking's weights (`src/combined-weights.json`) on the
//! cached runs of both benchmarks, and measures what they are worth with leave-one-crate-out
//! cross-validation: for each crate, weights fitted on every other crate rank that crate's
//! versions. Writes bench-results/combined.md and combined.json.
//!
//! - Injected faults (`bench faults`, single-fault versions): each line's text facts (kind,
//!   operators) come from the crate's original text ([`faults_bench::with_original_text`]), so
//!   the weights learn nothing from cargo-mutants' replacement text.
//! - Real panics (`bench panic4r`, reproduced bugs).
//!
//! A crate in both benchmarks (strsim, textwrap, smallvec) is held out of both at once. The fit
//! minimises the softmax cross-entropy of the faulty lines, every version weighing the same
//! ([`loss`]), by damped Newton steps from the stack-first ranking's weights (Ochiai, operation
//! panics first). `stack-combined` (operation panic sites first, then the combined score) is
//! scored with the same folds.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use cargo_sfl::analysis::Analysis;
use cargo_sfl::combined::{FEATURES, MEANINGS, N, features};
use cargo_sfl::evidence::{LineEvidence, TieBreak};
use cargo_sfl::score::{Key, Options, Tier};
use cargo_sfl::spectra::Spectra;
use serde_json::json;

use crate::{faults_bench, panic4r_bench, root};

#[derive(clap::Args)]
pub struct Args {
    /// Where the benchmarks' caches are (faults/ and panic4r/ under it).
    #[arg(long, default_value = "target/bench")]
    pub bench_dir: PathBuf,
    /// Where combined.md and combined.json go (relative to the repository).
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
    /// Write the weights fitted on every crate to src/combined-weights.json.
    #[arg(long)]
    pub write: bool,
}

/// Which benchmark a version comes from.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Source {
    Faults,
    Panic4r,
}

impl Source {
    fn name(self) -> &'static str {
        match self {
            Source::Faults => "faults (original text)",
            Source::Panic4r => "panic4r",
        }
    }
}

/// One faulty version, reduced to what ranking it needs.
struct Version {
    source: Source,
    krate: String,
    /// Per ranked line: its features, its evidence (what orders equal scores), its function,
    /// whether it is faulty.
    rows: Vec<[f64; N]>,
    evidence: Vec<LineEvidence>,
    function: Vec<Option<u32>>,
    faulty: Vec<bool>,
    /// The lines the fit learns from: the faulty ones, every line with backtrace evidence,
    /// and the [`TRAIN_LINES`] best by the default ranking (the rest are far from the top
    /// whatever the weights, and only slow the fit down).
    train: Vec<usize>,
    /// Per measure compared against, the line keys of the ranked lines.
    baselines: Vec<(&'static str, Vec<Key>)>,
}

/// How many of a version's best lines under the default ranking the fit learns from.
const TRAIN_LINES: usize = 300;

/// The measures the combined ranking is compared with.
const BASELINES: [&str; 2] = ["stack-ochiai", "ochiai"];

/// Line and function metrics of one ranking of one version.
#[derive(Clone, Copy, Default, Debug)]
struct Scores {
    top: [f64; 4],
    fn_top: [f64; 2],
    std_rank: f64,
}

const TOP: [f64; 4] = [1.0, 3.0, 5.0, 10.0];

/// Where the best faulty item sits among `keys` (Steimann's expected position and the Standard
/// Rank Score), as `cargo sfl eval` counts.
fn position<K: PartialOrd + Copy>(keys: &[K], faulty: &[bool]) -> Option<(f64, f64)> {
    let best = keys
        .iter()
        .zip(faulty)
        .filter(|(_, f)| **f)
        .map(|(k, _)| *k)
        .reduce(|a, b| if b > a { b } else { a })?;
    let (mut higher, mut tied, mut tied_faulty) = (0.0, 0.0, 0.0);
    for (k, f) in keys.iter().zip(faulty) {
        if *k > best {
            higher += 1.0;
        } else if *k == best {
            tied += 1.0;
            tied_faulty += f64::from(u8::from(*f));
        }
    }
    Some((higher + (tied + 1.0) / (tied_faulty + 1.0), higher + tied / 2.0))
}

impl Version {
    /// Metrics of a ranking given as one key per ranked line.
    fn scores(&self, keys: &[Key]) -> Scores {
        let mut s = Scores::default();
        if let Some((at, std)) = position(keys, &self.faulty) {
            s.std_rank = std;
            for (i, n) in TOP.iter().enumerate() {
                s.top[i] = f64::from(u8::from(at <= *n));
            }
        }
        // Functions, each ranked by its best line.
        let mut best: BTreeMap<u32, (Key, bool)> = BTreeMap::new();
        for ((k, f), faulty) in keys.iter().zip(&self.function).zip(&self.faulty) {
            let Some(f) = f else { continue };
            let e = best.entry(*f).or_insert((*k, false));
            if *k > e.0 {
                e.0 = *k;
            }
            e.1 |= *faulty;
        }
        let (fk, ff): (Vec<Key>, Vec<bool>) = best.into_values().unzip();
        if let Some((at, _)) = position(&fk, &ff) {
            s.fn_top = [f64::from(u8::from(at <= 1.0)), f64::from(u8::from(at <= 5.0))];
        }
        s
    }

    fn combined_keys(&self, w: &[f64; N]) -> Vec<Key> {
        self.rows
            .iter()
            .zip(&self.evidence)
            .map(|(x, t)| Key {
                tier: Tier::Score,
                value: x.iter().zip(w).map(|(x, w)| x * w).sum(),
                evidence: *t,
            })
            .collect()
    }

    /// `stack-combined`: the lines where failing tests' own operations panicked first (by how
    /// many tests, then by score), the rest by the combined score.
    fn stack_combined_keys(&self, w: &[f64; N]) -> Vec<Key> {
        let op = FEATURES
            .iter()
            .position(|f| *f == "operation_panic_point")
            .expect("a feature");
        let mut keys = self.combined_keys(w);
        // Within the stack tier: the share of tests, then the score (kept as the value's fraction).
        let span = keys.iter().map(|k| k.value.abs()).fold(1.0, f64::max) * 4.0;
        for (k, x) in keys.iter_mut().zip(&self.rows) {
            if x[op] > 0.0 {
                k.tier = Tier::Stack;
                k.value += x[op] * span * 2.0;
            }
        }
        keys
    }
}

/// A version from saved spectra, its known faults, as `cargo sfl` ranks it by default (test
/// code left out).
fn version(source: Source, krate: &str, spectra: &Spectra, faults: &[cargo_sfl::faults::Fault]) -> Option<Version> {
    let mut parsed = cargo_sfl::syntax::Parsed::new(Path::new(&spectra.workspace_root));
    let spectra = cargo_sfl::testcode::without_test_code(spectra, &mut parsed).0;
    let faulty: HashSet<usize> = cargo_sfl::eval::locate(&spectra, faults)
        .iter()
        .flat_map(|f| f.units.iter().copied())
        .collect();
    let a = Analysis::new(&spectra, true).with_tie_break(TieBreak::Evidence);
    let f = features(&a);
    let faulty_rows: Vec<bool> = f.units.iter().map(|u| faulty.contains(u)).collect();
    if !faulty_rows.contains(&true) {
        return None;
    }
    let line_evidence = f
        .units
        .iter()
        .map(|&u| a.tie(u).unwrap_or(LineEvidence::NONE))
        .collect();
    let baselines: Vec<(&'static str, Vec<Key>)> = BASELINES
        .iter()
        .map(|name| {
            let m = cargo_sfl::measures::find(name).expect("a baseline of the catalogue");
            let keys = cargo_sfl::eval::line_keys(&a, &a.score(m, &Options::default()));
            (
                *name,
                f.units
                    .iter()
                    .map(|&u| keys[u].expect("a ranked line has a key"))
                    .collect(),
            )
        })
        .chain(std::iter::once({
            // Where the backtraces first enter ranked code, every other line at the bottom.
            let keys = cargo_sfl::eval::stack_keys(&spectra);
            (
                cargo_sfl::eval::PANIC_STACK,
                f.units.iter().map(|&u| keys[u].unwrap_or(Key::UNRANKED)).collect(),
            )
        }))
        .collect();
    let default_keys: &Vec<Key> = &baselines[0].1;
    let mut order: Vec<usize> = (0..f.units.len()).collect();
    order.sort_by(|&x, &y| {
        default_keys[y]
            .partial_cmp(&default_keys[x])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let evidence = |i: usize| f.rows[i][6..12].iter().any(|x| *x != 0.0);
    let mut train: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|&(pos, &i)| pos < TRAIN_LINES || faulty_rows[i] || evidence(i))
        .map(|(_, &i)| i)
        .collect();
    train.sort_unstable();
    Some(Version {
        source,
        train,
        krate: krate.to_string(),
        function: f
            .units
            .iter()
            .map(|&u| spectra.unit_function.get(u).copied().flatten())
            .collect(),
        rows: f.rows,
        evidence: line_evidence,
        faulty: faulty_rows,
        baselines,
    })
}

/// Every single-fault version of `bench faults`' cache, with the original text's line facts.
fn faults_versions(bench: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    for (name, release) in faults_bench::CRATES {
        let dir = bench.join("faults").join(name);
        if !dir.is_dir() {
            continue;
        }
        let pristine = crate::fetch_crate(name, release, &bench.join("src"))?;
        for r in faults_bench::cached_records(&dir) {
            if r.status != "failing" || r.mutations.len() != 1 {
                continue;
            }
            let spectra = Spectra::load(&dir.join(format!("{}.spectra.json", r.id))).map_err(anyhow::Error::msg)?;
            let original = faults_bench::with_original_text(&spectra, &pristine, &r.mutations);
            out.extend(version(Source::Faults, name, &original, &r.faults));
        }
    }
    Ok(out)
}

/// Every reproduced bug of `bench panic4r`'s cache.
fn panic4r_versions(bench: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(bench.join("panic4r")) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs {
        let Some(r) = panic4r_bench::cached_record(&dir) else {
            continue;
        };
        if !r.reproduced {
            continue;
        }
        let spectra = Spectra::load(&dir.join("spectra.json")).map_err(anyhow::Error::msg)?;
        let faults = cargo_sfl::faults::load(&dir.join("faults.toml")).with_context(|| dir.display().to_string())?;
        out.extend(version(Source::Panic4r, &r.krate, &spectra, &faults));
    }
    Ok(out)
}

/// How strongly the fit pulls weights towards 0 (L2): keeps the weights of rare features
/// small, so that a crate with an unusual feature does not decide them.
const RIDGE: f64 = 0.01;

/// The fit's loss, gradient and Hessian: per version, the softmax cross-entropy of the faulty
/// lines (`ln Σ_all e^s − ln Σ_faulty e^s`, small when the faulty lines outscore the rest), every
/// version weighing the same, plus `RIDGE/2 ‖w‖²`. The Hessian of a version is the covariance of its
/// features under the softmax over all lines less that over its faulty lines.
fn loss(versions: &[&Version], w: &[f64; N]) -> (f64, [f64; N], [[f64; N]; N]) {
    let mut total = RIDGE / 2.0 * w.iter().map(|x| x * x).sum::<f64>();
    let mut grad: [f64; N] = w.map(|x| RIDGE * x);
    let mut hess = [[0.0; N]; N];
    for (k, row) in hess.iter_mut().enumerate() {
        row[k] = RIDGE;
    }
    for v in versions {
        let weight = 1.0 / versions.len() as f64;
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
fn fit(versions: &[&Version]) -> [f64; N] {
    let mut w = start();
    let (mut value, mut grad, mut hess) = loss(versions, &w);
    let mut damping = 1e-3;
    for _ in 0..100 {
        let mut damped = hess;
        for (k, row) in damped.iter_mut().enumerate() {
            row[k] += damping;
        }
        let step = solve(damped, grad.map(|g| -g));
        let next = step.map(|d| std::array::from_fn(|k| w[k] + d[k]));
        match next.map(|n: [f64; N]| (n, loss(versions, &n))) {
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

/// Sums of [`Scores`] per benchmark and ranking.
#[derive(Default)]
struct Table {
    sums: BTreeMap<(Source, String), (Scores, usize)>,
}

impl Table {
    fn add(&mut self, v: &Version, ranking: &str, s: Scores) {
        let e = self.sums.entry((v.source, ranking.to_string())).or_default();
        for i in 0..4 {
            e.0.top[i] += s.top[i];
        }
        for i in 0..2 {
            e.0.fn_top[i] += s.fn_top[i];
        }
        e.0.std_rank += s.std_rank;
        e.1 += 1;
    }

    fn mean(&self, source: Source, ranking: &str) -> Option<(Scores, usize)> {
        let (s, n) = self.sums.get(&(source, ranking.to_string()))?;
        let d = *n as f64;
        Some((
            Scores {
                top: s.top.map(|x| x / d),
                fn_top: s.fn_top.map(|x| x / d),
                std_rank: s.std_rank / d,
            },
            *n,
        ))
    }
}

const CV: &str = "combined (leave-one-crate-out)";
const STACK_CV: &str = "stack-combined (leave-one-crate-out)";

/// The file (next to combined.md) with each held-out crate's weights.
pub const FOLDS: &str = "combined-folds.json";

/// The weights fitted without `krate` (read from the benchmark results), if the fit held it out.
pub fn fold_weights(out_dir: &Path, krate: &str) -> Option<cargo_sfl::weights::Weights> {
    let text = std::fs::read_to_string(out_dir.join(FOLDS)).ok()?;
    let all: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).ok()?;
    let w: cargo_sfl::weights::Weights = serde_json::from_value(all.get(krate)?.clone()).ok()?;
    w.check().ok().map(|()| w)
}
const IN_SAMPLE: &str = "combined (fitted on all, in-sample)";

pub fn run(args: &Args) -> Result<()> {
    let root = root();
    let bench = root.join(&args.bench_dir);
    let started = std::time::Instant::now();
    let mut versions = faults_versions(&bench)?;
    versions.extend(panic4r_versions(&bench)?);
    eprintln!("fit: read the cached runs in {:.1} s", started.elapsed().as_secs_f64());
    if versions.is_empty() {
        bail!(
            "no cached versions under {}: run `cargo xtask bench faults` and `cargo xtask bench panic4r` first",
            bench.display()
        );
    }
    let crates: BTreeSet<String> = versions.iter().map(|v| v.krate.clone()).collect();
    eprintln!(
        "fit: {} versions ({} injected, {} real) over {} crates",
        versions.len(),
        versions.iter().filter(|v| v.source == Source::Faults).count(),
        versions.iter().filter(|v| v.source == Source::Panic4r).count(),
        crates.len()
    );
    let mut table = Table::default();
    let mut folds: Vec<(String, [f64; N])> = Vec::new();
    // One fold per crate, fitted on as many threads as there are cores.
    let held: Vec<&String> = crates.iter().collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let fitted = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..std::thread::available_parallelism().map_or(1, |n| n.get()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(held) = held.get(i) else { break };
                    let train: Vec<&Version> = versions.iter().filter(|v| &v.krate != *held).collect();
                    let w = fit(&train);
                    eprintln!("fit: held out {held}");
                    fitted.lock().expect("no fold panicked").push(((*held).clone(), w));
                }
            });
        }
    });
    folds.extend(fitted.into_inner().expect("no fold panicked"));
    folds.sort_by(|a, b| a.0.cmp(&b.0));
    for (held, w) in &folds {
        for v in versions.iter().filter(|v| &v.krate == held) {
            table.add(v, CV, v.scores(&v.combined_keys(w)));
            table.add(v, STACK_CV, v.scores(&v.stack_combined_keys(w)));
        }
    }
    let all: Vec<&Version> = versions.iter().collect();
    let w = fit(&all);
    for v in &versions {
        table.add(v, IN_SAMPLE, v.scores(&v.combined_keys(&w)));
        for (name, keys) in &v.baselines {
            table.add(v, name, v.scores(keys));
        }
    }
    write_results(&root.join(&args.output_dir), &table, &w, &folds, &crates)?;
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

fn write_results(
    out: &Path,
    table: &Table,
    w: &[f64; N],
    folds: &[(String, [f64; N])],
    crates: &BTreeSet<String>,
) -> Result<()> {
    let rankings = [
        CV,
        STACK_CV,
        BASELINES[0],
        BASELINES[1],
        cargo_sfl::eval::PANIC_STACK,
        IN_SAMPLE,
    ];
    let mut md = String::from("# `cargo xtask fit`: the combined ranking\n\n");
    let _ = writeln!(
        md,
        "Weights fitted by damped Newton steps on the softmax cross-entropy of the faulty lines (every version \
         weighing the same, ridge 0.01), scored with leave-one-crate-out cross-validation over {} crates: each crate's versions are \
         ranked by weights fitted on the other crates' versions. Injected faults are single-fault \
         versions of `bench faults`, their lines' text facts read from the original source; real \
         bugs are the reproduced bugs of `bench panic4r`. Functions rank by their best line.\n",
        crates.len()
    );
    let mut json_rows = Vec::new();
    for source in [Source::Faults, Source::Panic4r] {
        let Some((_, n)) = table.mean(source, CV) else { continue };
        let _ = writeln!(md, "## {} ({n} versions)\n", source.name());
        md.push_str("| ranking | std rank | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 |\n");
        md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in rankings {
            let Some((s, _)) = table.mean(source, r) else { continue };
            let pct = |x: f64| format!("{:.0}%", 100.0 * x);
            let _ = writeln!(
                md,
                "| {r} | {:.2} | {} | {} | {} | {} | {} | {} |",
                s.std_rank,
                pct(s.top[0]),
                pct(s.top[1]),
                pct(s.top[2]),
                pct(s.top[3]),
                pct(s.fn_top[0]),
                pct(s.fn_top[1])
            );
            json_rows.push(json!({
                "benchmark": source.name(), "ranking": r, "versions": n, "standard_rank": s.std_rank,
                "top1": s.top[0], "top3": s.top[1], "top5": s.top[2], "top10": s.top[3],
                "function_top1": s.fn_top[0], "function_top5": s.fn_top[1],
            }));
        }
        md.push('\n');
    }
    md.push_str("## The weights fitted on every crate (`src/combined-weights.json`)\n\n| feature | weight | meaning |\n|---|---:|---|\n");
    for i in 0..N {
        let _ = writeln!(md, "| {} | {:.2} | {} |", FEATURES[i], w[i], MEANINGS[i]);
    }
    md.push_str("\n## Per fold (held-out crate: its weights)\n\n");
    let _ = writeln!(md, "| held out | {} |", FEATURES.join(" | "));
    let _ = writeln!(md, "|---|{}", "---:|".repeat(N));
    for (c, fw) in folds {
        let cells: Vec<String> = fw.iter().map(|x| format!("{x:.2}")).collect();
        let _ = writeln!(md, "| {c} | {} |", cells.join(" | "));
    }
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("combined.md"), md)?;
    // Each held-out crate's weights: the benchmarks rank a crate's versions by them.
    let by_crate: BTreeMap<&str, serde_json::Value> = folds
        .iter()
        .map(|(c, fw)| (c.as_str(), json!({ "features": FEATURES, "weights": fw })))
        .collect();
    std::fs::write(out.join(FOLDS), serde_json::to_string_pretty(&by_crate)? + "\n")?;
    let weights: HashMap<&str, f64> = FEATURES.iter().copied().zip(w.iter().copied()).collect();
    std::fs::write(
        out.join("combined.json"),
        serde_json::to_string_pretty(&json!({ "rows": json_rows, "weights": weights, "folds": folds.len() }))?,
    )?;
    eprintln!("fit: wrote {}", out.join("combined.md").display());
    Ok(())
}
