//! `cargo xtask bench faults`: real crates from crates.io with faults injected by cargo-mutants,
//! every measure evaluated on every faulty version.
//!
//! 1. Fetch each crate (cargo, from the registry), install cargo-mutants (crates.io) under
//!    target/bench/tools, and list the crate's mutants (`cargo mutants --list --json`).
//! 2. Single-fault versions: a deterministic, evenly spread sample of mutants. Each is applied
//!    to a working copy and `cargo sfl` runs the tests; a mutant is kept only if at least one
//!    test fails (build failures and survivors are recorded and skipped).
//! 3. Multi-fault versions (Steimann's method): k ∈ {2, 4, 8} kept single-fault mutants of
//!    the same crate, on disjoint lines, applied together.
//! 4. Every run is cached under target/bench/faults/<crate>/ (spectra plus a record with the
//!    fault lines in the mutated file's coordinates), so a re-run only evaluates.
//! 5. Evaluation: `cargo_sfl::eval` on each kept version, every measure; one table per fault
//!    count in bench-results/faults.md and the numbers in bench-results/faults.json.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Result, bail};
use serde_json::Value;

use crate::{root, run};

mod results;
mod versions;
use results::evaluate_all;
pub use versions::{Mutation, Record, cached_records, with_original_text};
use versions::{cached, identity, saved_with_edges};
pub(crate) use versions::{dirs, mutate, restore};

/// Crates whose published packages carry their tests and that test offline in about a minute.
pub const CRATES: &[(&str, &str)] = &[
    ("semver", "1.0.23"),
    ("itoa", "1.0.11"),
    ("hex", "0.4.3"),
    ("strsim", "0.11.1"),
    ("humantime", "2.1.0"),
    ("fixedbitset", "0.5.7"),
    ("arrayvec", "0.7.6"),
    ("smallvec", "1.13.2"),
    ("bitflags", "2.6.0"),
    ("textwrap", "0.16.1"),
];

fn mutations_of(list: &Value) -> Vec<Mutation> {
    let items = list.as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|m| {
            let span = &m["span"];
            let pos =
                |p: &Value| -> Option<(u32, u32)> { Some((p["line"].as_u64()? as u32, p["column"].as_u64()? as u32)) };
            Some(Mutation {
                file: m["file"].as_str()?.to_string(),
                start: pos(&span["start"])?,
                end: pos(&span["end"])?,
                replacement: m["replacement"].as_str()?.to_string(),
                genre: m["genre"].as_str().unwrap_or("").to_string(),
                function: m["function"]["function_name"].as_str().unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// Byte offset of a 1-based (line, column) position, columns counted in characters.
struct Runner {
    sfl: PathBuf,
    cache: PathBuf,
}

impl Runner {
    /// Runs one faulty version, unless a version with the same mutations is in `known` (the
    /// crate's cache, read once); the new record joins it.
    fn version(
        &self,
        known: &mut BTreeMap<String, Record>,
        krate: &str,
        (pristine, work): (&Path, &Path),
        kind: &str,
        muts: &[&Mutation],
    ) -> Result<Record> {
        let owned: Vec<Mutation> = muts.iter().map(|m| (*m).clone()).collect();
        let key = identity(&owned);
        if let Some(r) = known.get(&key) {
            // Versions run before edge profiles existed are run again (for cp).
            let spectra = self.cache.join(krate).join(format!("{}.spectra.json", r.id));
            let stale = r.status == "failing" && !saved_with_edges(&spectra);
            if !stale {
                return Ok(r.clone());
            }
        }
        let digest = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            key.hash(&mut h);
            h.finish()
        };
        let id = format!("{kind}-{digest:016x}");
        let record_path = self.cache.join(krate).join(format!("{id}.json"));
        let started = Instant::now();
        let faults = mutate(pristine, work, muts)?;
        let ok = faults.is_some();
        let faults = faults.unwrap_or_default();
        let spectra = self.cache.join(krate).join(format!("{id}.spectra.json"));
        let status = if !ok {
            "error".to_string()
        } else {
            let out = sfl_command(&self.sfl, work)
                .arg("--save-spectra")
                .arg(&spectra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            match out.code() {
                Some(0) => "failing",
                Some(3) => "survived",
                Some(101) => "unviable",
                _ => "error",
            }
            .to_string()
        };
        restore(pristine, work, muts)?;
        if status != "failing" {
            let _ = std::fs::remove_file(&spectra);
        }
        let record = Record {
            id: id.to_string(),
            krate: krate.to_string(),
            mutations: muts.iter().map(|m| (*m).clone()).collect(),
            status,
            faults,
            seconds: started.elapsed().as_secs_f64(),
        };
        std::fs::create_dir_all(record_path.parent().unwrap())?;
        std::fs::write(&record_path, serde_json::to_vec_pretty(&record)?)?;
        known.insert(key, record.clone());
        Ok(record)
    }
}

/// `cargo sfl` as the benchmark runs it on a version's working copy (JSON report on stdout).
pub(crate) fn sfl_command(sfl: &Path, work: &Path) -> Command {
    let mut cmd = Command::new(sfl);
    cmd.args([
        "sfl",
        "-q",
        "--test-timeout",
        "10",
        "--format",
        "json",
        "--manifest-path",
    ])
    .arg(work.join("Cargo.toml"));
    cmd
}

/// Installs cargo-mutants under target/bench/tools (once).
fn cargo_mutants(tools: &Path) -> Result<PathBuf> {
    let bin = tools.join("bin/cargo-mutants");
    if !bin.exists() {
        run(Command::new(env!("CARGO"))
            .args(["install", "--locked", "--root"])
            .arg(tools)
            .arg("cargo-mutants"))?;
    }
    Ok(bin)
}

/// Evenly spread sample of `n` items (deterministic).
pub(crate) fn spread<T: Clone>(items: &[T], n: usize) -> Vec<T> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n].clone()).collect()
}

pub struct Args {
    pub per_crate: usize,
    pub multi: usize,
    pub crates: Vec<String>,
    pub eval_only: bool,
    pub output_dir: PathBuf,
}

pub fn run_bench(args: &Args) -> Result<()> {
    let root = root();
    let work_root = root.join("target/bench");
    let cache = work_root.join("faults");
    std::fs::create_dir_all(&cache)?;
    let crates: Vec<(&str, &str)> = CRATES
        .iter()
        .copied()
        .filter(|(n, _)| args.crates.is_empty() || args.crates.iter().any(|c| c == n))
        .collect();
    if !args.eval_only {
        let sfl = crate::build_sfl()?;
        let mutants_bin = cargo_mutants(&work_root.join("tools"))?;
        let runner = Runner {
            sfl,
            cache: cache.clone(),
        };
        for (name, version) in &crates {
            if let Err(e) = run_crate(&runner, &mutants_bin, &work_root, name, version, args) {
                eprintln!("warning: {name} {version}: {e:#}");
            }
        }
    }
    evaluate_all(&work_root, &crates, &args.output_dir)
}

fn run_crate(
    runner: &Runner,
    mutants_bin: &Path,
    work_root: &Path,
    name: &str,
    version: &str,
    args: &Args,
) -> Result<()> {
    let (pristine, work) = dirs(work_root, name, version)?;
    let list_path = work_root.join("faults").join(name).join("mutants.json");
    if !list_path.exists() {
        let out = Command::new(mutants_bin)
            .args(["mutants", "--list", "--json", "--dir"])
            .arg(&pristine)
            .output()?;
        if !out.status.success() {
            bail!("cargo mutants --list failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::fs::write(&list_path, &out.stdout)?;
    }
    let list: Value = serde_json::from_slice(&std::fs::read(&list_path)?)?;
    let mut all = mutations_of(&list);
    all.sort_by(|a, b| (&a.file, a.start).cmp(&(&b.file, b.start)));
    let sample = spread(&all, args.per_crate);
    eprintln!(
        "== {name} {version}: {} mutants listed, {} sampled",
        all.len(),
        sample.len()
    );
    let mut known = cached(&work_root.join("faults").join(name));
    let mut kept: Vec<Mutation> = Vec::new();
    for (i, m) in sample.iter().enumerate() {
        let r = runner.version(&mut known, name, (&pristine, &work), "single", &[m])?;
        eprintln!(
            "   single {i:03} {:<9} {:>5.1}s {}:{} {}",
            r.status, r.seconds, m.file, m.start.0, m.genre
        );
        if r.status == "failing" {
            kept.push(m.clone());
        }
    }
    // Multi-fault versions: k kept mutants on disjoint lines, chosen deterministically.
    for k in [2usize, 4, 8] {
        if kept.len() < k {
            continue;
        }
        for j in 0..args.multi {
            let mut chosen: Vec<&Mutation> = Vec::new();
            let mut idx = (j * 7919 + k * 104_729) % kept.len();
            let mut tries = 0;
            while chosen.len() < k && tries < kept.len() * 2 {
                let m = &kept[idx];
                let clash = chosen
                    .iter()
                    .any(|c| c.file == m.file && !(c.end.0 < m.start.0 || m.end.0 < c.start.0));
                if !clash {
                    chosen.push(m);
                }
                idx = (idx + 1 + j) % kept.len();
                tries += 1;
            }
            if chosen.len() < k {
                break;
            }
            let r = runner.version(&mut known, name, (&pristine, &work), &format!("multi{k}"), &chosen)?;
            eprintln!("   {k} faults #{j:02} {:<9} {:>5.1}s", r.status, r.seconds);
        }
    }
    Ok(())
}
