//! `cargo xtask fuzz`: structure-aware mutation fuzzing of the decoders that read files cargo
//! sfl did not write, on the stable toolchain and in process. Every input is a function of
//! (seed, target, iteration), so a run is reproducible and a finding is replayed from its
//! number; a panic is caught and saved, a hang is caught by a watchdog and saved, and the
//! command fails on either.

mod mutate;
mod seeds;
mod targets;
mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

pub use seeds::Seeds;
pub use targets::{Target, Verdict};

#[derive(clap::Args)]
pub struct Args {
    /// One target (profraw, decode, covmap, object, edge-map, edges, spectra, gzoltar, faults)
    /// or `all`.
    #[arg(long, default_value = "all")]
    target: String,
    /// Inputs in total, split across the targets by their weights.
    #[arg(long, default_value_t = 200_000)]
    inputs: u64,
    /// Seed of the generator: the same seed gives the same inputs.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// Stop after this many seconds in total (split like the inputs), even if inputs remain.
    #[arg(long)]
    time_limit: Option<f64>,
    /// An input that takes longer than this (seconds) is a hang.
    #[arg(long, default_value_t = 5.0)]
    input_timeout: f64,
    /// Write just this input (of `--target`, `--seed`) to target/fuzz/replay and run it once,
    /// with the panic shown as usual.
    #[arg(long)]
    replay: Option<u64>,
    /// Remake xtask/fuzz-seeds from fixtures/minmax (runs cargo sfl; needs objcopy).
    #[arg(long)]
    refresh_seeds: bool,
    /// Write the Markdown table here as well as to stdout.
    #[arg(long)]
    output: Option<PathBuf>,
}

pub const DEFAULT_SEED: u64 = 0x5f1_f022;

/// What one target's run found.
#[derive(Default)]
pub struct Stats {
    pub target: &'static str,
    pub inputs: u64,
    pub secs: f64,
    pub decoded: u64,
    /// Refused by the decoder's first check (magic, syntax, version).
    pub early: u64,
    /// Refused later: the input got past the first check.
    pub deep: u64,
    /// Error kind → inputs refused with it.
    pub kinds: BTreeMap<String, u64>,
    /// `(iteration, message)` of each panic.
    pub panics: Vec<(u64, String)>,
    pub hangs: Vec<u64>,
}

impl Stats {
    /// Share of inputs that decoded or were refused past the first check.
    pub fn past_first_check(&self) -> f64 {
        (self.decoded + self.deep) as f64 / self.inputs.max(1) as f64
    }
}

/// What to run on one target.
pub struct Plan {
    pub seed: u64,
    pub inputs: u64,
    pub deadline: Option<Instant>,
    pub input_timeout: Duration,
    /// Reproducers go to `<crash_dir>/<target>/`.
    pub crash_dir: PathBuf,
}

pub fn run(args: &Args) -> Result<()> {
    let root = crate::root();
    if args.refresh_seeds {
        seeds::refresh(&root)?;
        eprintln!("seeds written to {}", seeds::dir(&root).display());
        return Ok(());
    }
    let seeds = Seeds::load(&root)?;
    let mut chosen: Vec<(Arc<dyn Target>, u64)> = all(&seeds)
        .into_iter()
        .map(|(t, w)| (Arc::from(t), w))
        .filter(|(t, _): &(Arc<dyn Target>, u64)| args.target == "all" || t.name() == args.target)
        .collect();
    if chosen.is_empty() {
        bail!("no fuzz target {:?}", args.target);
    }
    if let Some(iter) = args.replay {
        let target = &chosen[0].0;
        let input = input_for(target.as_ref(), args.seed, iter);
        let dir = root.join("target/fuzz/replay");
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("{}-{}-{iter}.bin", target.name(), args.seed));
        std::fs::write(&path, &input)?;
        eprintln!("input written to {}", path.display());
        let verdict = target.run(&input);
        eprintln!("{}", describe(&verdict));
        return Ok(());
    }
    let total_weight: u64 = chosen.iter().map(|c| c.1).sum();
    let start = Instant::now();
    let mut all = Vec::new();
    for (target, weight) in chosen.drain(..) {
        let share = weight as f64 / total_weight as f64;
        let plan = Plan {
            seed: args.seed,
            inputs: ((args.inputs as f64 * share).ceil() as u64).max(1),
            deadline: args
                .time_limit
                .map(|t| Instant::now() + Duration::from_secs_f64(t * share)),
            input_timeout: Duration::from_secs_f64(args.input_timeout),
            crash_dir: root.join("target/fuzz/crashes"),
        };
        // Named first: an abort (a stack overflow, a failed allocation) ends the process.
        eprintln!("fuzz {}: {} inputs…", target.name(), plan.inputs);
        let stats = run_target(target, &plan);
        eprintln!("{}", summary_line(&stats));
        all.push(stats);
    }
    let table = render(&all, args.seed, start.elapsed().as_secs_f64());
    print!("{table}");
    if let Some(p) = &args.output {
        std::fs::write(p, &table)?;
    }
    let (panics, hangs): (usize, usize) = all
        .iter()
        .fold((0, 0), |(p, h), s| (p + s.panics.len(), h + s.hangs.len()));
    if panics + hangs > 0 {
        bail!("{panics} panics and {hangs} hangs; reproducers are in target/fuzz/crashes");
    }
    Ok(())
}

/// Every target, with its share of a run's inputs (by how cheap and how deep it is).
pub fn all(seeds: &Seeds) -> Vec<(Box<dyn Target>, u64)> {
    let mut all = targets::binary(seeds);
    all.extend(text::all(seeds));
    all
}

fn describe(v: &Verdict) -> String {
    match v {
        Verdict::Decoded => "decoded".into(),
        Verdict::Refused { kind, early } => format!("refused{}: {kind}", if *early { " (first check)" } else { "" }),
    }
}

/// The input of iteration `iter`: a seed input with one to eight mutations.
pub fn input_for(target: &dyn Target, seed: u64, iter: u64) -> Vec<u8> {
    let name = target
        .name()
        .bytes()
        .fold(0u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let mut rng = mutate::Rng::new(seed ^ name ^ iter.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    rng.next();
    let corpus = target.corpus();
    let mut data = corpus[rng.below(corpus.len())].clone();
    for _ in 0..1 + rng.below(8).min(rng.below(8)) {
        target.mutate(&mut rng, &mut data);
    }
    data
}

/// The input the fuzz worker is on, for the watchdog: its iteration and when it started
/// (nanoseconds since the run began; 0 between inputs).
#[derive(Default)]
struct Progress {
    iter: AtomicU64,
    started: AtomicU64,
}

/// Runs one target on a worker thread while this thread watches for a hang.
pub fn run_target(target: Arc<dyn Target>, plan: &Plan) -> Stats {
    install_panic_hook();
    let progress = Arc::new(Progress::default());
    let t0 = Instant::now();
    let stats = Arc::new(Mutex::new(Stats {
        target: target.name(),
        ..Stats::default()
    }));
    let worker = {
        let (target, progress, stats) = (target.clone(), progress.clone(), stats.clone());
        let (seed, inputs, deadline, crash_dir) = (plan.seed, plan.inputs, plan.deadline, plan.crash_dir.clone());
        std::thread::Builder::new()
            .name(format!("fuzz-{}", target.name()))
            .spawn(move || {
                let mut local = Stats::default();
                for iter in 0..inputs {
                    if deadline.is_some_and(|d| iter % 64 == 0 && Instant::now() > d) {
                        break;
                    }
                    let made = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        input_for(target.as_ref(), seed, iter)
                    }));
                    let Ok(input) = made else {
                        // A bug of the fuzzer itself, reported like a decoder's.
                        let msg = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                        local.panics.push((iter, format!("mutator: {msg}")));
                        continue;
                    };
                    progress.iter.store(iter, Ordering::Relaxed);
                    progress
                        .started
                        .store(t0.elapsed().as_nanos() as u64 + 1, Ordering::Release);
                    let verdict = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target.run(&input)));
                    progress.started.store(0, Ordering::Release);
                    local.inputs += 1;
                    match verdict {
                        Ok(Verdict::Decoded) => local.decoded += 1,
                        Ok(Verdict::Refused { kind, early }) => {
                            *if early { &mut local.early } else { &mut local.deep } += 1;
                            *local.kinds.entry(kind).or_default() += 1;
                        }
                        Err(_) => {
                            let msg = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                            save(&crash_dir, target.name(), seed, iter, &input, &format!("panic: {msg}"));
                            local.panics.push((iter, msg));
                        }
                    }
                    if iter % 4096 == 0 {
                        merge(&stats, &mut local);
                    }
                }
                merge(&stats, &mut local);
            })
            .expect("spawning the fuzz worker")
    };
    let limit = plan.input_timeout.as_nanos() as u64;
    let mut hung = None;
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        let started = progress.started.load(Ordering::Acquire);
        if started != 0 && (t0.elapsed().as_nanos() as u64).saturating_sub(started) > limit {
            let iter = progress.iter.load(Ordering::Relaxed);
            // Re-read: the worker may have moved on since.
            if progress.started.load(Ordering::Acquire) == started {
                hung = Some(iter);
                break;
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    let mut out = match hung {
        // The worker is left running (a thread cannot be stopped); the caller reports the hang.
        Some(iter) => {
            let input = input_for(target.as_ref(), plan.seed, iter);
            save(
                &plan.crash_dir,
                target.name(),
                plan.seed,
                iter,
                &input,
                "hang: over the input time limit",
            );
            let mut s = std::mem::take(&mut *stats.lock().expect("stats"));
            s.hangs.push(iter);
            s
        }
        None => {
            worker.join().expect("the fuzz worker catches panics");
            std::mem::take(&mut *stats.lock().expect("stats"))
        }
    };
    out.target = target.name();
    out.secs = secs;
    out
}

fn merge(into: &Mutex<Stats>, local: &mut Stats) {
    let mut s = into.lock().expect("stats");
    let l = std::mem::take(local);
    s.inputs += l.inputs;
    s.decoded += l.decoded;
    s.early += l.early;
    s.deep += l.deep;
    for (k, n) in l.kinds {
        *s.kinds.entry(k).or_default() += n;
    }
    s.panics.extend(l.panics);
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

/// Panics on fuzz workers are recorded (message and location) instead of printed; any other
/// thread's panic goes to the hook that was there before.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let fuzzing = std::thread::current().name().is_some_and(|n| n.starts_with("fuzz-"));
            if !fuzzing {
                return previous(info);
            }
            let msg = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let at = info
                .location()
                .map(|l| format!(" at {}:{}", l.file(), l.line()))
                .unwrap_or_default();
            if let Ok(mut last) = LAST_PANIC.lock() {
                *last = format!("{msg}{at}");
            }
        }));
    });
}

/// Writes a reproducer and what happened to it.
fn save(dir: &Path, target: &str, seed: u64, iter: u64, input: &[u8], what: &str) {
    let dir = dir.join(target);
    let _ = std::fs::create_dir_all(&dir);
    let stem = dir.join(format!("seed-{seed}-iter-{iter}"));
    let _ = std::fs::write(stem.with_extension("bin"), input);
    let _ = std::fs::write(
        stem.with_extension("txt"),
        format!("{what}\nreplay: cargo xtask fuzz --target {target} --seed {seed} --replay {iter}\n"),
    );
}

fn summary_line(s: &Stats) -> String {
    format!(
        "fuzz {}: {} inputs in {:.1}s, {:.1}% past the first check, {} error kinds, {} panics, {} hangs",
        s.target,
        s.inputs,
        s.secs,
        100.0 * s.past_first_check(),
        s.kinds.len(),
        s.panics.len(),
        s.hangs.len()
    )
}

fn render(all: &[Stats], seed: u64, secs: f64) -> String {
    let mut t = format!(
        "Seed {seed}; {} inputs in {secs:.0} s; one worker thread per target in turn.\n\n",
        all.iter().map(|s| s.inputs).sum::<u64>()
    );
    t.push_str("| target | inputs | time (s) | inputs/s | decoded | refused past first check | refused by first check | error kinds | panics | hangs |\n");
    t.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for s in all {
        let pct = |n: u64| 100.0 * n as f64 / s.inputs.max(1) as f64;
        t.push_str(&format!(
            "| {} | {} | {:.1} | {:.0} | {:.1}% | {:.1}% | {:.1}% | {} | {} | {} |\n",
            s.target,
            s.inputs,
            s.secs,
            s.inputs as f64 / s.secs.max(1e-9),
            pct(s.decoded),
            pct(s.deep),
            pct(s.early),
            s.kinds.len(),
            s.panics.len(),
            s.hangs.len()
        ));
    }
    t
}

#[cfg(test)]
mod tests;
