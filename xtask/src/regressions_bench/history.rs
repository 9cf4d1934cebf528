//! `cargo xtask bench history`: is a function's git history evidence of the fault, on the
//! regressions benchmark's reproduced bugs?
//!
//! For each bug cached by `bench regressions` (its spectra and buggy tree), the default ranking's
//! top functions (`cargo sfl report --format json`) are blamed at the fix's parent with the buggy
//! version's contents (`git blame --contents`, parsed by the report's own
//! `report::disk::History`): a function's age is the time from its newest committed line to the
//! parent commit, its churn the number of commits among its lines. Then the orders a report
//! could use are scored by where the first faulty function lands: the default's, ties broken by
//! age or churn, the top 3 or 5 re-ordered newest first, and the score rank plus a weight times
//! the age rank, the weight chosen leave-one-crate-out. Positions are those in the order (the
//! report's own order breaks what the order leaves tied). Writes bench-results/history.md and
//! history.json.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use cargo_sfl::report::disk::History;
use serde_json::{Value, json};

use super::{mine, repo_name};

#[derive(clap::Args)]
pub struct Args {
    /// The repositories of the cached bugs (clones or mirrors with their history); repeatable.
    #[arg(long = "repo")]
    pub repos: Vec<PathBuf>,
    /// The cargo-sfl binary that ranks (default: a release build of this checkout).
    #[arg(long)]
    pub sfl: Option<PathBuf>,
    /// Functions of the default ranking blamed per bug.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
}

/// One of a bug's top functions.
#[derive(Debug, Clone)]
struct Func {
    rank: f64,
    /// Days from its newest committed line to the parent commit (`None`: git could not blame it).
    age: Option<f64>,
    /// Commits among its lines.
    churn: usize,
    fault: bool,
}

#[derive(Debug)]
struct BugFuncs {
    krate: String,
    funcs: Vec<Func>,
}

/// The weights tried for the score rank plus weight × age rank.
const WEIGHTS: [f64; 6] = [0.0, 0.1, 0.25, 0.5, 1.0, 2.0];

pub fn run(args: &Args) -> Result<()> {
    let root = crate::root();
    let cache = root.join("target/bench/regressions");
    let sfl = match &args.sfl {
        Some(p) => p
            .canonicalize()
            .with_context(|| format!("no cargo-sfl at {}", p.display()))?,
        None => super::build_sfl(&cache)?,
    };
    let repos: BTreeMap<String, &PathBuf> = args.repos.iter().map(|r| (repo_name(r), r)).collect();
    let mut bugs = Vec::new();
    let mut no_repo = 0;
    for (dir, attempt) in super::report::attempts(&cache) {
        let Some(bug) = attempt.bug else { continue };
        let (spectra, buggy) = (dir.join("spectra.json"), dir.join("buggy"));
        if !spectra.is_file() || !buggy.is_dir() {
            continue;
        }
        let Some(repo) = repos.get(&bug.repository) else {
            no_repo += 1;
            continue;
        };
        let funcs = top_functions(&sfl, &spectra, &buggy, args.top)?;
        let mut blamed: BTreeMap<String, History> = BTreeMap::new();
        let parent_time: i64 = mine::git(repo, &["show", "-s", "--format=%ct", &bug.parent])?
            .trim()
            .parse()
            .unwrap_or(0);
        let mut out = Vec::new();
        for (file, start, end, rank) in funcs {
            let history = blamed.entry(file.clone()).or_insert_with(|| {
                let mut h = History {
                    now: parent_time,
                    ..History::default()
                };
                if let Ok(text) = mine::git(
                    repo,
                    &[
                        "blame",
                        "--porcelain",
                        "--contents",
                        &buggy.join(&file).display().to_string(),
                        &bug.parent,
                        "--",
                        &file,
                    ],
                ) {
                    h.add_blame(&file, &text);
                }
                h
            });
            let lines = history.lines.get(&file).map_or(&[][..], Vec::as_slice);
            let span = lines
                .get(start.saturating_sub(1) as usize..(end as usize).min(lines.len()))
                .unwrap_or_default();
            let committed: Vec<u32> = span
                .iter()
                .copied()
                .filter(|&c| history.commits[c as usize].short.is_some())
                .collect();
            let newest = committed.iter().map(|&c| history.commits[c as usize].time).max();
            let mut distinct = committed.clone();
            distinct.sort_unstable();
            distinct.dedup();
            out.push(Func {
                rank,
                age: newest.map(|t| (parent_time - t) as f64 / 86_400.0),
                churn: distinct.len(),
                fault: bug
                    .faults
                    .iter()
                    .any(|f| f.file == file && f.lines.iter().any(|l| (start..=end).contains(l))),
            });
        }
        bugs.push(BugFuncs {
            krate: bug.repository.clone(),
            funcs: out,
        });
    }
    let json = evaluate(&bugs, no_repo);
    let out_dir = root.join(&args.output_dir);
    std::fs::create_dir_all(&out_dir)?;
    std::fs::write(
        out_dir.join("history.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let md = markdown(&json, args.top);
    std::fs::write(out_dir.join("history.md"), &md)?;
    print!("{md}");
    Ok(())
}

/// The default ranking's top `n` functions of a bug: (file, first line, last line, rank).
fn top_functions(sfl: &Path, spectra: &Path, buggy: &Path, n: usize) -> Result<Vec<(String, u32, u32, f64)>> {
    let out = Command::new(sfl)
        .args([
            "sfl",
            "report",
            "--format",
            "json",
            "--top",
            &n.to_string(),
            "--spectra",
        ])
        .arg(spectra)
        .arg("--manifest-path")
        .arg(buggy.join("Cargo.toml"))
        .env_remove("RUST_BACKTRACE")
        .output()?;
    let report: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "cargo sfl report on {}: {}",
            spectra.display(),
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let functions = report["rankings"][0]["functions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    Ok(functions
        .iter()
        .take(n)
        .filter_map(|f| {
            Some((
                f["file"].as_str()?.to_string(),
                f["line"].as_u64()? as u32,
                f["end_line"].as_u64()? as u32,
                f["rank"].as_f64()?,
            ))
        })
        .collect())
}

/// The position (1-based) of the first faulty function once `funcs` are put in `order`.
fn first_fault(funcs: &[Func], order: impl Fn(&[Func]) -> Vec<usize>) -> Option<usize> {
    order(funcs).iter().position(|&i| funcs[i].fault).map(|p| p + 1)
}

/// Ages, unknown ones oldest.
fn age(f: &Func) -> f64 {
    f.age.unwrap_or(f64::INFINITY)
}

fn sorted_by(funcs: &[Func], key: impl Fn(&Func) -> (f64, f64)) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..funcs.len()).collect();
    idx.sort_by(|&a, &b| key(&funcs[a]).partial_cmp(&key(&funcs[b])).expect("no NaN"));
    idx
}

/// The first `n` newest first, the rest as ranked.
fn newest_first(funcs: &[Func], n: usize) -> Vec<usize> {
    let n = n.min(funcs.len());
    let mut head = sorted_by(&funcs[..n], |f| (age(f), 0.0));
    head.extend(n..funcs.len());
    head
}

/// Score rank plus `weight` × age rank (1 = newest).
fn combined(funcs: &[Func], weight: f64) -> Vec<usize> {
    let by_age = sorted_by(funcs, |f| (age(f), 0.0));
    let mut age_rank = vec![0.0; funcs.len()];
    for (k, &i) in by_age.iter().enumerate() {
        age_rank[i] = (k + 1) as f64;
    }
    let mut idx: Vec<usize> = (0..funcs.len()).collect();
    idx.sort_by(|&a, &b| {
        let ka = (funcs[a].rank + weight * age_rank[a], funcs[a].rank);
        let kb = (funcs[b].rank + weight * age_rank[b], funcs[b].rank);
        ka.partial_cmp(&kb).expect("no NaN")
    });
    idx
}

/// Top-1, top-3 and top-5 counts of an order over `bugs`.
fn tops(bugs: &[&BugFuncs], order: &dyn Fn(&[Func]) -> Vec<usize>) -> [usize; 3] {
    let mut t = [0; 3];
    for b in bugs {
        if let Some(p) = first_fault(&b.funcs, order) {
            for (k, n) in [1, 3, 5].iter().enumerate() {
                t[k] += usize::from(p <= *n);
            }
        }
    }
    t
}

fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    (!xs.is_empty()).then(|| xs[xs.len() / 2])
}

fn evaluate(bugs: &[BugFuncs], no_repo: usize) -> Value {
    let all: Vec<&BugFuncs> = bugs.iter().collect();
    type Order = Box<dyn Fn(&[Func]) -> Vec<usize>>;
    let orders: Vec<(&str, Order)> = vec![
        ("default", Box::new(|f: &[Func]| (0..f.len()).collect())),
        ("ties by age", Box::new(|f: &[Func]| sorted_by(f, |x| (x.rank, age(x))))),
        (
            "ties by churn",
            Box::new(|f: &[Func]| sorted_by(f, |x| (x.rank, -(x.churn as f64)))),
        ),
        ("top 3 newest first", Box::new(|f: &[Func]| newest_first(f, 3))),
        ("top 5 newest first", Box::new(|f: &[Func]| newest_first(f, 5))),
    ];
    let mut rows: Vec<Value> = orders
        .iter()
        .map(|(name, order)| {
            let [t1, t3, t5] = tops(&all, order.as_ref());
            json!({"order": name, "top1": t1, "top3": t3, "top5": t5})
        })
        .collect();
    for w in WEIGHTS.iter().skip(1) {
        let [t1, t3, t5] = tops(&all, &|f: &[Func]| combined(f, *w));
        rows.push(json!({"order": format!("rank + {w} x age rank"), "top1": t1, "top3": t3, "top5": t5}));
    }
    // The weight chosen on the other crates' bugs, scored on each crate's.
    let crates: std::collections::BTreeSet<&str> = bugs.iter().map(|b| b.krate.as_str()).collect();
    let mut loco = [0; 3];
    for c in &crates {
        let (train, test): (Vec<&BugFuncs>, Vec<&BugFuncs>) = bugs.iter().partition(|b| b.krate != *c);
        let best = WEIGHTS
            .iter()
            .copied()
            .max_by(|a, b| {
                let (ta, tb) = (
                    tops(&train, &|f: &[Func]| combined(f, *a)),
                    tops(&train, &|f: &[Func]| combined(f, *b)),
                );
                // Ties go to the smaller weight.
                (ta[0], ta[2])
                    .cmp(&(tb[0], tb[2]))
                    .then(b.partial_cmp(a).expect("no NaN"))
            })
            .expect("weights");
        let t = tops(&test, &|f: &[Func]| combined(f, best));
        for k in 0..3 {
            loco[k] += t[k];
        }
    }
    rows.push(json!({"order": "rank + w x age rank, w leave-one-crate-out", "top1": loco[0], "top3": loco[1], "top5": loco[2]}));
    // How old the faulty function is against the other top functions.
    let (mut younger, mut compared) = (0, 0);
    let (mut fault_ages, mut other_ages) = (Vec::new(), Vec::new());
    for b in bugs {
        let Some(f) = b.funcs.iter().find(|f| f.fault) else {
            continue;
        };
        let Some(a) = f.age else { continue };
        let others: Vec<f64> = b.funcs.iter().filter(|g| !g.fault).filter_map(|g| g.age).collect();
        if let Some(m) = median(others.clone()) {
            compared += 1;
            younger += usize::from(a < m);
        }
        fault_ages.push(a);
        other_ages.extend(others);
    }
    json!({
        "schema": "cargo-sfl-history-bench/v1",
        "bugs": bugs.len(),
        "crates": crates.len(),
        "bugs_without_repository": no_repo,
        "fault_in_top": bugs.iter().filter(|b| b.funcs.iter().any(|f| f.fault)).count(),
        "fault_younger_than_median_other": {"bugs": younger, "of": compared},
        "median_age_days": {"faulty": median(fault_ages), "others": median(other_ages)},
        "orders": rows,
    })
}

fn markdown(j: &Value, top: usize) -> String {
    let bugs = j["bugs"].as_u64().unwrap_or(0) as f64;
    let pct = |x: &Value| format!("{} ({:.0}%)", x, 100.0 * x.as_f64().unwrap_or(0.0) / bugs.max(1.0));
    let days = |x: &Value| x.as_f64().map_or("–".into(), |d| format!("{d:.0}"));
    let mut md = format!(
        "# Git history as evidence: the regressions benchmark\n\n\
         Generated by `cargo xtask bench history --repo PATH...` from the bugs `cargo xtask bench regressions` \
         cached. Each bug's top {top} functions by the default ranking, blamed at the fix's parent with the \
         buggy version's contents: {} bugs from {} crates; a faulty function among the top {top} in {}.\n\n\
         The faulty function changed more recently than the median of the other top functions in {} of {} bugs \
         (median age {} days, others {} days). Where the first faulty function lands in each order (the \
         report's order breaks what an order leaves tied; shares of all the bugs, a function counted faulty when \
         its span holds a fault line, so they differ from regressions.md, which scores by fault line the bugs where \
         a test ran one):\n\n\
         | order | function top-1 | top-3 | top-5 |\n|---|---:|---:|---:|\n",
        j["bugs"],
        j["crates"],
        j["fault_in_top"],
        j["fault_younger_than_median_other"]["bugs"],
        j["fault_younger_than_median_other"]["of"],
        days(&j["median_age_days"]["faulty"]),
        days(&j["median_age_days"]["others"]),
    );
    for r in j["orders"].as_array().into_iter().flatten() {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            r["order"].as_str().unwrap_or_default(),
            pct(&r["top1"]),
            pct(&r["top3"]),
            pct(&r["top5"])
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(rank: f64, age: f64, fault: bool) -> Func {
        Func {
            rank,
            age: Some(age),
            churn: 1,
            fault,
        }
    }

    #[test]
    fn orders_move_the_young_function_up_as_they_say() {
        // Tied first two, the faulty one older; a young faulty function third.
        let funcs = [
            f(1.5, 10.0, false),
            f(1.5, 300.0, true),
            f(3.0, 1.0, true),
            f(4.0, 2.0, false),
        ];
        assert_eq!(first_fault(&funcs, |f| (0..f.len()).collect()), Some(2));
        assert_eq!(first_fault(&funcs, |f| sorted_by(f, |x| (x.rank, age(x)))), Some(2));
        assert_eq!(first_fault(&funcs, |f| newest_first(f, 3)), Some(1));
        assert_eq!(first_fault(&funcs, |f| newest_first(f, 2)), Some(2));
        // Age ranks 3, 4, 1, 2: rank + 1 x age rank = 4.5, 5.5, 4, 6.
        assert_eq!(combined(&funcs, 1.0), [2, 0, 1, 3]);
        assert_eq!(combined(&funcs, 0.0), [0, 1, 2, 3]);
    }

    #[test]
    fn the_evaluation_counts_tops_and_ages() {
        let bugs = vec![
            BugFuncs {
                krate: "a/a".into(),
                funcs: vec![f(1.0, 5.0, true), f(2.0, 100.0, false), f(3.0, 200.0, false)],
            },
            BugFuncs {
                krate: "b/b".into(),
                funcs: vec![f(1.0, 1.0, false), f(2.0, 50.0, true)],
            },
        ];
        let j = evaluate(&bugs, 3);
        let default = &j["orders"][0];
        assert_eq!((default["top1"].as_u64(), default["top3"].as_u64()), (Some(1), Some(2)));
        assert_eq!(j["fault_younger_than_median_other"]["bugs"], 1);
        assert_eq!(j["fault_younger_than_median_other"]["of"], 2);
        assert_eq!(j["bugs_without_repository"], 3);
        assert!(markdown(&j, 10).contains("| default | 1 (50%) | 2 (100%) | 2 (100%) |"));
    }
}
