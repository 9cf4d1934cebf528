//! Evaluating the cached faulty versions with every measure, and writing the result tables
//! (`bench-results/faults.md` and `faults.json`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use cargo_sfl::eval::{Settings, evaluate, evaluate_with};
use cargo_sfl::faults::Fault;
use cargo_sfl::spectra::Spectra;
use serde_json::{Value, json};

use super::versions::{Mutation, cached_records, dirs, mutate, restore, with_original_text};

/// Sums of each metric per measure, for one fault count.
#[derive(Default)]
struct Sums {
    versions: usize,
    /// Versions each measure was evaluated on (cp needs edge profiles).
    measure_versions: BTreeMap<&'static str, usize>,
    by_measure: BTreeMap<&'static str, [f64; METRICS.len()]>,
    ht_versions: BTreeMap<&'static str, usize>,
}

impl Sums {
    /// Adds one version's line and function results.
    fn add(&mut self, report: &cargo_sfl::eval::EvalReport, by_function: &cargo_sfl::eval::EvalReport) {
        self.versions += 1;
        for m in &report.measures {
            let x = &m.metrics;
            *self.measure_versions.entry(m.measure).or_default() += 1;
            let e = self.by_measure.entry(m.measure).or_insert([0.0; METRICS.len()]);
            let function_top = |n: &str| {
                let m = by_function.measures.iter().find(|f| f.measure == m.measure);
                m.map_or(0.0, |f| f64::from(u8::from(f.metrics.top[n])))
            };
            let vals = [
                x.standard_rank,
                x.exam,
                f64::from(u8::from(x.top["1"])),
                f64::from(u8::from(x.top["3"])),
                f64::from(u8::from(x.top["5"])),
                f64::from(u8::from(x.top["10"])),
                x.accuracy,
                x.ht_rank.unwrap_or(0.0),
                x.steimann_rank,
                function_top("1"),
                function_top("5"),
            ];
            for (acc, v) in e.iter_mut().zip(vals) {
                *acc += v;
            }
            if x.ht_rank.is_some() {
                *self.ht_versions.entry(m.measure).or_default() += 1;
            }
        }
    }
}

/// Evaluates every cached version as `cargo sfl eval` would by default: the version's mutated
/// sources in the working copy (test code is found in them), test code left out, at line and
/// at function granularity.
pub(super) fn evaluate_all(work_root: &Path, crates: &[(&str, &str)], out_dir: &Path) -> Result<()> {
    let cache = work_root.join("faults");
    // Time spent running versions, summed over every cached run (cached runs cost nothing now).
    let mut collect_seconds = 0.0;
    let started = Instant::now();
    let measures: Vec<&'static cargo_sfl::measures::Measure> = cargo_sfl::measures::all().collect();
    let settings = |ht: bool, clusters: bool, weights: &Option<cargo_sfl::weights::Weights>| Settings {
        opts: cargo_sfl::score::Options {
            clusters,
            ..Default::default()
        },
        p_jump: 0.5,
        exact_limit: cargo_sfl::config::HtParams::default().exact_limit,
        walks: 0,
        ht,
        tie_break: Default::default(),
        weights: weights.clone(),
    };
    let mut by_k: BTreeMap<usize, Sums> = BTreeMap::new();
    let mut cross_validated = false;
    // The same, with the mutated files' line facts read from the original text.
    let mut by_k_original: BTreeMap<usize, Sums> = BTreeMap::new();
    let mut status_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut crate_names = Vec::new();
    // Per version, the default's, Ochiai's and the baseline's metrics (faults-versions.json).
    let mut per_version: Vec<Value> = Vec::new();
    for (name, version) in crates {
        let dir = cache.join(name);
        let (pristine, work) = dirs(work_root, name, version)?;
        // One record per distinct version (identity = its mutations).
        let records = cached_records(&dir);
        if records.is_empty() {
            continue;
        }
        crate_names.push(format!("{name} {version}"));
        // The combined ranking ranks this crate by weights fitted without it, when the fit
        // held it out (cross-validation).
        let fold = crate::folds::fold_weights(out_dir, name);
        cross_validated |= fold.is_some();
        let without_ht = settings(false, false, &fold);
        let with_ht = settings(true, false, &fold);
        let with_clusters = settings(false, true, &fold);
        for r in records {
            collect_seconds += r.seconds;
            *status_counts
                .entry(format!("{}-fault {}", r.mutations.len(), r.status))
                .or_default() += 1;
            if r.status != "failing" {
                continue;
            }
            let saved = Spectra::load(&dir.join(format!("{}.spectra.json", r.id))).map_err(anyhow::Error::msg)?;
            let muts: Vec<&Mutation> = r.mutations.iter().collect();
            if mutate(&pristine, &work, &muts)?.is_none() {
                continue;
            }
            // The sources are read while ranking (test code, each line's kind): restored after.
            let spectra = ranked(&saved, &work);
            let usable: Vec<_> = measures
                .iter()
                .copied()
                .filter(|m| spectra.edges.is_some() || !m.needs_edges())
                .collect();
            let mut report = evaluate(&spectra, &r.faults, &usable, &without_ht);
            // HT_Rank, exact, on every version, for the measures of `HT_MEASURES` (each needs
            // a solve of its own).
            let ht_usable: Vec<_> = usable
                .iter()
                .copied()
                .filter(|m| HT_MEASURES.contains(&m.name))
                .collect();
            let ht = evaluate(&spectra, &r.faults, &ht_usable, &with_ht);
            for m in &mut report.measures {
                if let Some(h) = ht.measures.iter().find(|h| h.measure == m.measure) {
                    m.metrics.ht_rank = h.metrics.ht_rank;
                }
            }
            // Functions (each ranked by its best line, as `--granularity function` ranks them):
            // a fault is the functions holding its lines.
            let functions = spectra.by_function();
            let function_faults: Vec<Fault> = r
                .faults
                .iter()
                .map(|f| Fault {
                    lines: spectra.enclosing_functions(&f.file, &f.lines),
                    ..f.clone()
                })
                .collect();
            let mut by_function = evaluate_with(&functions, Some(&spectra), &function_faults, &usable, &without_ht);
            // The main rankings again with independent clusters of failing tests interleaved.
            let clustered: Vec<_> = CLUSTERED
                .iter()
                .filter_map(|(m, _)| cargo_sfl::measures::find(m))
                .collect();
            let renamed = |mut e: cargo_sfl::eval::EvalReport| {
                for m in &mut e.measures {
                    if let Some((_, name)) = CLUSTERED.iter().find(|(b, _)| *b == m.measure) {
                        m.measure = name;
                    }
                }
                e.measures
            };
            report
                .measures
                .extend(renamed(evaluate(&spectra, &r.faults, &clustered, &with_clusters)));
            by_function.measures.extend(renamed(evaluate_with(
                &functions,
                Some(&spectra),
                &function_faults,
                &clustered,
                &with_clusters,
            )));
            restore(&pristine, &work, &muts)?;
            if report.measures.is_empty() {
                *status_counts
                    .entry(format!("{}-fault unlocalisable", r.mutations.len()))
                    .or_default() += 1;
                continue;
            }
            let sums = by_k.entry(r.mutations.len()).or_default();
            for m in report.measures.iter().filter(|m| PER_VERSION.contains(&m.measure)) {
                let function = by_function.measures.iter().find(|f| f.measure == m.measure);
                per_version.push(json!({
                    "crate": name,
                    "version": r.id,
                    "faults": r.mutations.len(),
                    "measure": m.measure,
                    "standard_rank": m.metrics.standard_rank,
                    "top1": m.metrics.top["1"],
                    "top5": m.metrics.top["5"],
                    "top10": m.metrics.top["10"],
                    "function_top1": function.is_some_and(|f| f.metrics.top["1"]),
                }));
            }
            sums.add(&report, &by_function);
            // The same version with each line's text facts read from the original source.
            let original = ranked(&with_original_text(&saved, &pristine, &r.mutations), &work);
            let mut report = evaluate(&original, &r.faults, &usable, &without_ht);
            report
                .measures
                .extend(renamed(evaluate(&original, &r.faults, &clustered, &with_clusters)));
            let functions = original.by_function();
            let mut by_function = evaluate_with(&functions, Some(&original), &function_faults, &usable, &without_ht);
            by_function.measures.extend(renamed(evaluate_with(
                &functions,
                Some(&original),
                &function_faults,
                &clustered,
                &with_clusters,
            )));
            by_k_original
                .entry(r.mutations.len())
                .or_default()
                .add(&report, &by_function);
        }
    }
    let eval_seconds = started.elapsed().as_secs_f64();
    write_results(
        out_dir,
        &crate_names,
        (&by_k, &by_k_original),
        &status_counts,
        collect_seconds,
        (eval_seconds, cross_validated),
    )?;
    // One version's row per line: small, and a re-run's diff shows which versions moved.
    let rows: Vec<String> = per_version.iter().map(Value::to_string).collect();
    std::fs::write(
        out_dir.join("faults-versions.json"),
        format!("[\n{}\n]\n", rows.join(",\n")),
    )
    .context("faults-versions.json")
}

/// The measures whose HT_Rank the benchmark reports (on every version): the default, the best
/// of the spectrum families on these benchmarks, Doric's cl, and CP.
const HT_MEASURES: [&str; 5] = ["ochiai", "dstar2", "tarantula", "cl", "cp"];

/// The rankings evaluated again with `--clusters`, and the name of that row.
const CLUSTERED: [(&str, &str); 3] = [
    ("combined", "combined --clusters"),
    ("stack-ochiai", "stack-ochiai --clusters"),
    ("ochiai", "ochiai --clusters"),
];

/// The rankings whose metrics `faults-versions.json` gives for every version: the default,
/// Ochiai and the panic-stack baseline, the three the goal compares.
const PER_VERSION: [&str; 3] = [cargo_sfl::measures::DEFAULT, "ochiai", "panic-stack (baseline)"];

/// The matrix a version is ranked on by default: without test code, read from the sources in
/// `work` (where the version's mutated files are).
fn ranked(saved: &Spectra, work: &Path) -> Spectra {
    let mut spectra = saved.clone();
    spectra.workspace_root = work.to_string_lossy().into_owned();
    let mut parsed = cargo_sfl::syntax::Parsed::new(work);
    cargo_sfl::testcode::without_test_code(&spectra, &mut parsed).0
}

/// The metric names, in the order of `Sums::by_measure`'s arrays (index 7 is HT_Rank).
const METRICS: [&str; 11] = [
    "standard_rank",
    "exam",
    "top1",
    "top3",
    "top5",
    "top10",
    "accuracy",
    "ht_rank",
    "steimann_rank",
    "function_top1",
    "function_top5",
];

/// One measure's means over the versions it was evaluated on.
struct Row {
    measure: &'static str,
    means: [f64; METRICS.len()],
    ht_versions: usize,
}

/// The measures' mean metrics for one fault count, best mean Standard Rank Score first.
fn rows(sums: &Sums) -> Vec<Row> {
    let mut rows: Vec<Row> = sums
        .by_measure
        .iter()
        .map(|(m, v)| {
            let ht_versions = sums.ht_versions.get(m).copied().unwrap_or(0);
            let n = sums.measure_versions.get(m).copied().unwrap_or(1) as f64;
            let mut means = v.map(|x| x / n);
            means[7] = if ht_versions > 0 {
                v[7] / ht_versions as f64
            } else {
                f64::NAN
            };
            Row {
                measure: m,
                means,
                ht_versions,
            }
        })
        .collect();
    rows.sort_by(|a, b| a.means[0].total_cmp(&b.means[0]).then(a.measure.cmp(b.measure)));
    rows
}

fn plural(k: usize) -> &'static str {
    if k == 1 { "" } else { "s" }
}

/// The page's opening: crates, versions, outcomes, time and how to read the tables.
fn preamble(
    crates: &[String],
    by_k: &BTreeMap<usize, Sums>,
    statuses: &BTreeMap<String, usize>,
    collect_seconds: f64,
    eval_seconds: f64,
) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# `cargo xtask bench faults`\n");
    let _ = writeln!(md, "Crates: {}.\n", crates.join(", "));
    let _ = writeln!(
        md,
        "Versions kept (at least one test fails): {}. Run outcomes: {}.\n",
        by_k.iter()
            .map(|(k, s)| format!("{} with {k} fault{}", s.versions, plural(*k)))
            .collect::<Vec<_>>()
            .join(", "),
        statuses
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        md,
        "Time: {:.0} s running all versions (summed over the cached runs), {:.0} s evaluating every measure on every kept version.\n",
        collect_seconds, eval_seconds
    );
    let _ = writeln!(
        md,
        "Every version is ranked as `cargo sfl` ranks by default: test code (found in the version's own sources) is left out, \
         and an entry's lines are ordered by evidence (backtraces, line kind, function size, operators). The default ranking is **{}**.\n",
        cargo_sfl::measures::DEFAULT
    );
    let _ = writeln!(
        md,
        "Metrics are means over versions; ranks count lines (the Standard Rank Score is `higher + tied/2`), EXAM is the average expense over executed lines, \
         top-N is the share of versions whose first fault is expected within N lines (fn top-N: within N functions, \
         the functions holding the fault lines being the faults), `panic-stack (baseline)` is where each failing test's backtrace first enters ranked code, accuracy is non-faulty lines inspected first (Doric), \
         HT_Rank uses the Def. 29 chain (jumps within functions and, with edge profiles, along the dynamic CFG; p = 0.5), solved exactly on every version, for ochiai, dstar2, tarantula, cl and cp (versions counted).\n"
    );
    md
}

/// One fault count's section of the page, and its JSON.
fn section(md: &mut String, k: usize, sums: &Sums) -> Value {
    let rows = rows(sums);
    let ochiai = rows
        .iter()
        .find(|r| r.measure == "ochiai")
        .map_or(f64::NAN, |r| r.means[0]);
    let best = &rows[0];
    let _ = writeln!(md, "## {k} fault{} ({} versions)\n", plural(k), sums.versions);
    let _ = writeln!(
        md,
        "Best by mean Standard Rank Score: **{}** ({:.2} lines) against Ochiai's {:.2}: {:.1}% fewer lines.\n",
        best.measure,
        best.means[0],
        ochiai,
        100.0 * (ochiai - best.means[0]) / ochiai
    );
    let row = |name: &str| rows.iter().find(|r| r.measure == name);
    let summary = |r: &Row| {
        format!(
            "std rank {:.2}, line top-1 {:.0}%, top-5 {:.0}%, top-10 {:.0}%, function top-1 {:.0}%",
            r.means[0],
            100.0 * r.means[2],
            100.0 * r.means[4],
            100.0 * r.means[5],
            100.0 * r.means[9]
        )
    };
    let default = cargo_sfl::measures::DEFAULT;
    if let (Some(d), Some(o)) = (row(default), row("ochiai")) {
        let baseline = row(cargo_sfl::eval::PANIC_STACK)
            .map_or(String::new(), |b| format!("; the panic-stack baseline: {}", summary(b)));
        let _ = writeln!(
            md,
            "Default (**{default}**): {}. Ochiai: {}{baseline}.\n",
            summary(d),
            summary(o)
        );
    }
    let _ = writeln!(
        md,
        "| measure | std rank | EXAM | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 | accuracy | HT_Rank (versions) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut json_rows = Vec::new();
    for Row {
        measure,
        means: v,
        ht_versions,
    } in &rows
    {
        let ht = if *ht_versions > 0 {
            format!("{:.2} ({ht_versions})", v[7])
        } else {
            "-".into()
        };
        let _ = writeln!(
            md,
            "| {measure} | {:.2} | {:.4} | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.2} | {ht} |",
            v[0],
            v[1],
            100.0 * v[2],
            100.0 * v[3],
            100.0 * v[4],
            100.0 * v[5],
            100.0 * v[9],
            100.0 * v[10],
            v[6],
        );
        let mut obj = serde_json::Map::new();
        obj.insert("measure".into(), json!(measure));
        for (i, name) in METRICS.iter().enumerate() {
            let value = if i == 7 && *ht_versions == 0 {
                Value::Null
            } else {
                json!(v[i])
            };
            obj.insert((*name).into(), value);
        }
        obj.insert("ht_versions".into(), json!(ht_versions));
        json_rows.push(Value::Object(obj));
    }
    let _ = writeln!(md);
    json!({"versions": sums.versions, "best": best.measure, "ochiai_standard_rank": ochiai, "measures": json_rows})
}

/// The rankings the original-text table shows.
const ORIGINAL_TEXT_ROWS: [&str; 10] = [
    "combined",
    "combined --clusters",
    "stack-ochiai",
    "stack-ochiai --clusters",
    "stack-gp13",
    "ochiai",
    "ochiai --clusters",
    "gp13",
    "dstar2",
    cargo_sfl::eval::PANIC_STACK,
];

/// The same versions with the mutated files' line facts (kind, operators) read from the
/// original text: a table of the main rankings, and the default's metrics for the JSON.
fn original_text_section(md: &mut String, sums: &Sums) -> Value {
    let rows = rows(sums);
    let _ = writeln!(
        md,
        "### The same {} versions, original text in place\n\nCoverage and backtraces are the mutant's run's; each line's kind and operators are read from the \
         original source, as for a real bug (cargo-mutants' replacement text, such as a body on the signature line, is not what a real bug looks like).\n",
        sums.versions
    );
    let _ = writeln!(
        md,
        "| measure | std rank | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for name in ORIGINAL_TEXT_ROWS {
        if let Some(r) = rows.iter().find(|r| r.measure == name) {
            let v = r.means;
            let _ = writeln!(
                md,
                "| {name} | {:.2} | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% | {:.0}% |",
                v[0],
                100.0 * v[2],
                100.0 * v[3],
                100.0 * v[4],
                100.0 * v[5],
                100.0 * v[9],
                100.0 * v[10]
            );
        }
    }
    let _ = writeln!(md);
    let default = rows.iter().find(|r| r.measure == cargo_sfl::measures::DEFAULT);
    let mut obj = serde_json::Map::new();
    obj.insert("measure".into(), json!(cargo_sfl::measures::DEFAULT));
    obj.insert("versions".into(), json!(sums.versions));
    if let Some(d) = default {
        for (i, name) in METRICS.iter().enumerate().filter(|(i, _)| *i != 7) {
            obj.insert((*name).into(), json!(d.means[i]));
        }
    }
    Value::Object(obj)
}

fn write_results(
    out_dir: &Path,
    crates: &[String],
    (by_k, by_k_original): (&BTreeMap<usize, Sums>, &BTreeMap<usize, Sums>),
    statuses: &BTreeMap<String, usize>,
    collect_seconds: f64,
    (eval_seconds, cross_validated): (f64, bool),
) -> Result<()> {
    let mut md = preamble(crates, by_k, statuses, collect_seconds, eval_seconds);
    let _ = writeln!(
        md,
        "{}\n",
        if cross_validated {
            "The combined ranking is cross-validated: each crate's versions are ranked by the weights fitted without that crate \
             (`bench-results/combined-folds.json`, written by `cargo xtask fit`)."
        } else {
            "The combined ranking uses the committed weights, fitted on these versions (no `combined-folds.json`): its rows are in-sample."
        }
    );
    let mut json_k = serde_json::Map::new();
    for (k, sums) in by_k {
        let mut section = section(&mut md, *k, sums);
        if let Some(original) = by_k_original.get(k) {
            section["original_text"] = original_text_section(&mut md, original);
        }
        json_k.insert(k.to_string(), section);
    }
    let json = json!({
        "schema": "cargo-sfl-faults-bench/v2",
        "default": cargo_sfl::measures::DEFAULT,
        "crates": crates,
        "versions": by_k.iter().map(|(k, s)| (k.to_string(), json!(s.versions))).collect::<serde_json::Map<_, _>>(),
        "outcomes": statuses,
        "seconds": {"running": collect_seconds, "evaluating": eval_seconds},
        "results": json_k,
    });
    std::fs::create_dir_all(out_dir)?;
    std::fs::write(out_dir.join("faults.md"), &md).context("faults.md")?;
    std::fs::write(out_dir.join("faults.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    print!("{md}");
    Ok(())
}
