//! Every ranking's metrics per version, the leave-one-crate-out choice of the default among
//! the candidate rankings, and what `fit` writes (combined.md, combined.json, the folds).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;
use cargo_sfl::combined::{FEATURES, MEANINGS, N};
use serde_json::json;

use super::versions::{Scores, Source, Version};

/// One ranking's metrics on one version.
struct Row {
    /// The version's index among those read.
    id: usize,
    source: Source,
    krate: String,
    ranking: &'static str,
    scores: Scores,
}

/// Every ranking's metrics on every version.
#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
}

/// Means (and the median lines read) of one ranking over some versions.
#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub mean: Scores,
    pub median_read: f64,
    pub versions: usize,
}

impl Table {
    pub fn add(&mut self, v: &Version, ranking: &'static str, scores: Scores) {
        self.rows.push(Row {
            id: v.id,
            source: v.source,
            krate: v.krate.clone(),
            ranking,
            scores,
        });
    }

    /// `ranking` over the versions of `source` whose crate `keep` accepts.
    fn summary(&self, source: Source, ranking: &str, keep: &dyn Fn(&str) -> bool) -> Option<Summary> {
        let rows: Vec<&Scores> = self
            .rows
            .iter()
            .filter(|r| r.source == source && r.ranking == ranking && keep(&r.krate))
            .map(|r| &r.scores)
            .collect();
        if rows.is_empty() {
            return None;
        }
        let d = rows.len() as f64;
        let mut mean = Scores::default();
        for s in &rows {
            for i in 0..4 {
                mean.top[i] += s.top[i] / d;
            }
            for i in 0..2 {
                mean.fn_top[i] += s.fn_top[i] / d;
            }
            mean.std_rank += s.std_rank / d;
        }
        let mut read: Vec<f64> = rows.iter().map(|s| s.read).collect();
        read.sort_by(f64::total_cmp);
        let mid = read.len() / 2;
        let median_read = if read.len() % 2 == 1 {
            read[mid]
        } else {
            (read[mid - 1] + read[mid]) / 2.0
        };
        Some(Summary {
            mean,
            median_read,
            versions: rows.len(),
        })
    }

    /// The rows of one ranking on the versions whose crate `keep` accepts.
    fn of<'a>(&'a self, ranking: &'a str, keep: &'a dyn Fn(&str) -> bool) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows.iter().filter(move |r| r.ranking == ranking && keep(&r.krate))
    }
}

/// What the default is chosen for: per version, the mean of line top-1 and top-5 and function
/// top-1 and top-5 (what a reader of the functions-first report sees first).
fn objective(s: &Scores) -> f64 {
    (s.top[0] + s.top[2] + s.fn_top[0] + s.fn_top[1]) / 4.0
}

/// A candidate's objective over the versions `keep` accepts, every benchmark weighing the
/// same, and its standard error's square against `best`'s (paired by version): `(mean,
/// variance of the difference)`.
fn weighed(table: &Table, ranking: &str, best: Option<&str>, keep: &dyn Fn(&str) -> bool) -> (f64, f64) {
    let mut per_source: BTreeMap<Source, Vec<(f64, f64)>> = BTreeMap::new();
    let best_rows: HashMap<usize, f64> = best
        .map(|b| table.of(b, keep).map(|r| (r.id, objective(&r.scores))).collect())
        .unwrap_or_default();
    for r in table.of(ranking, keep) {
        let o = objective(&r.scores);
        let other = best_rows.get(&r.id).copied().unwrap_or(o);
        per_source.entry(r.source).or_default().push((o, other - o));
    }
    let k = per_source.len().max(1) as f64;
    let (mut mean, mut var) = (0.0, 0.0);
    for rows in per_source.values() {
        let n = rows.len() as f64;
        mean += rows.iter().map(|(o, _)| o).sum::<f64>() / n / k;
        let dm = rows.iter().map(|(_, d)| d).sum::<f64>() / n;
        let dv = rows.iter().map(|(_, d)| (d - dm).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
        var += dv / n / (k * k);
    }
    (mean, var)
}

/// The candidate with the best objective on the versions `keep` accepts.
fn best(table: &Table, candidates: &[&'static str], keep: &dyn Fn(&str) -> bool) -> &'static str {
    candidates
        .iter()
        .copied()
        .max_by(|a, b| {
            weighed(table, a, None, keep)
                .0
                .total_cmp(&weighed(table, b, None, keep).0)
        })
        .expect("candidates")
}

/// The default among `candidates` (simplest first) on the versions `keep` accepts: the best
/// objective, or the simplest candidate within one standard error of it (Breiman et al.'s
/// one-standard-error rule).
pub fn choose(table: &Table, candidates: &[&'static str], keep: &dyn Fn(&str) -> bool) -> &'static str {
    let best = best(table, candidates, keep);
    let top = weighed(table, best, None, keep).0;
    candidates
        .iter()
        .copied()
        .find(|c| {
            let (mean, var) = weighed(table, c, Some(best), keep);
            top - mean <= var.sqrt()
        })
        .unwrap_or(best)
}

/// The default chosen by leave-one-crate-out: for each crate, the choice made without it, and
/// that choice's metrics on it (added to the table as [`CHOSEN`]).
pub fn choose_per_fold(
    table: &mut Table,
    candidates: &[&'static str],
    crates: &BTreeSet<String>,
) -> Vec<(String, &'static str)> {
    let mut picks = Vec::new();
    let mut rows = Vec::new();
    for held in crates {
        let pick = choose(table, candidates, &|c: &str| c != held);
        picks.push((held.clone(), pick));
        rows.extend(
            table
                .rows
                .iter()
                .filter(|r| &r.krate == held && r.ranking == pick)
                .map(|r| Row {
                    id: r.id,
                    source: r.source,
                    krate: r.krate.clone(),
                    ranking: CHOSEN,
                    scores: r.scores,
                }),
        );
    }
    table.rows.extend(rows);
    picks
}

/// The row of the default chosen without each crate, on that crate.
pub const CHOSEN: &str = "the default chosen without the crate (leave-one-crate-out)";

/// Everything `fit` found, for [`write`].
pub struct Found<'a> {
    pub table: &'a Table,
    /// The rankings shown, in order.
    pub rankings: &'a [&'static str],
    pub candidates: &'a [&'static str],
    pub chosen: &'static str,
    pub picks: &'a [(String, &'static str)],
    pub weights: &'a [f64; N],
    pub folds: &'a [(String, [f64; N])],
    pub crates: &'a BTreeSet<String>,
}

/// A share as a whole percentage.
fn pct(x: f64) -> String {
    format!("{:.0}%", 100.0 * x)
}

fn read(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.1}")
    } else {
        "∞".to_string()
    }
}

/// combined.md, combined.json and the folds' weights.
pub fn write(out: &Path, f: &Found) -> Result<()> {
    let all = |_: &str| true;
    let mut md =
        String::from("# `cargo xtask fit`: the combined ranking, and the default chosen on three benchmarks\n\n");
    let _ = writeln!(
        md,
        "Weights fitted by damped Newton steps on the softmax cross-entropy of the faulty lines (every version \
         weighing the same, or every benchmark where the ranking says so; ridge 0.01), scored with leave-one-crate-out cross-validation over {} crates: each crate's versions are \
         ranked by weights fitted on the other crates' versions (a crate in several benchmarks is held out of all of them). \
         Injected faults are single-fault versions of `bench faults`, their lines' text facts read from the original source; \
         real panics are the reproduced bugs of `bench panic4r`; regressions are the reproduced bugs of `bench regressions` \
         (mostly assertion failures in test code). Functions rank by their best line; lines read is the median number of \
         lines a reader of the functions-first report reads before the first faulty one (∞: most never reach it).\n",
        f.crates.len()
    );
    let mut json_rows = Vec::new();
    for source in Source::ALL {
        let Some(s) = f.table.summary(source, f.rankings[0], &all) else {
            continue;
        };
        let _ = writeln!(md, "## {} ({} versions)\n", source.name(), s.versions);
        md.push_str("| ranking | std rank | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 | lines read |\n");
        md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in f.rankings {
            let Some(Summary {
                mean: s,
                median_read,
                versions,
            }) = f.table.summary(source, r, &all)
            else {
                continue;
            };
            let _ = writeln!(
                md,
                "| {r} | {:.2} | {} | {} | {} | {} | {} | {} | {} |",
                s.std_rank,
                pct(s.top[0]),
                pct(s.top[1]),
                pct(s.top[2]),
                pct(s.top[3]),
                pct(s.fn_top[0]),
                pct(s.fn_top[1]),
                read(median_read)
            );
            json_rows.push(json!({
                "benchmark": source.name(), "ranking": r, "versions": versions, "standard_rank": s.std_rank,
                "top1": s.top[0], "top3": s.top[1], "top5": s.top[2], "top10": s.top[3],
                "function_top1": s.fn_top[0], "function_top5": s.fn_top[1],
                "median_lines_read": median_read.is_finite().then_some(median_read),
            }));
        }
        md.push('\n');
    }
    write_choice(&mut md, f);
    write_weights(&mut md, f);
    std::fs::create_dir_all(out)?;
    std::fs::write(out.join("combined.md"), md)?;
    // Each held-out crate's weights: the benchmarks rank a crate's versions by them.
    let by_crate: BTreeMap<&str, serde_json::Value> = f
        .folds
        .iter()
        .map(|(c, fw)| (c.as_str(), json!({ "features": FEATURES, "weights": fw })))
        .collect();
    std::fs::write(
        out.join(crate::folds::FOLDS),
        serde_json::to_string_pretty(&by_crate)? + "\n",
    )?;
    let weights: HashMap<&str, f64> = FEATURES.iter().copied().zip(f.weights.iter().copied()).collect();
    let picks: BTreeMap<&str, &str> = f.picks.iter().map(|(c, p)| (c.as_str(), *p)).collect();
    std::fs::write(
        out.join("combined.json"),
        serde_json::to_string_pretty(&json!({
            "rows": json_rows,
            "weights": weights,
            "folds": f.folds.len(),
            "candidates": f.candidates,
            "chosen": f.chosen,
            "chosen_per_fold": picks,
        }))?,
    )?;
    eprintln!("fit: wrote {}", out.join("combined.md").display());
    Ok(())
}

fn write_choice(md: &mut String, f: &Found) {
    let all = |_: &str| true;
    md.push_str("## Choosing the default\n\n");
    md.push_str(
        "Candidates, simplest first; the objective is the mean of line top-1, line top-5, function top-1 and \
         function top-5, each benchmark weighing the same; the default is the simplest candidate within one \
         standard error (paired by version) of the best. `±` is that standard error against the best.\n\n",
    );
    let top = best(f.table, f.candidates, &all);
    md.push_str("| candidate | objective, all crates | ± |\n|---|---:|---:|\n");
    for c in f.candidates {
        let (mean, var) = weighed(f.table, c, Some(top), &all);
        let _ = writeln!(md, "| {c} | {:.1}% | {:.1} |", 100.0 * mean, 100.0 * var.sqrt());
    }
    let _ = writeln!(md, "\nChosen on every crate: **{}**.\n", f.chosen);
    let mut count: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (c, p) in f.picks {
        count.entry(p).or_default().push(c);
    }
    let _ = writeln!(
        md,
        "Chosen with each crate held out (the `{CHOSEN}` row of each table scores each crate by the choice made without it):\n"
    );
    for (p, cs) in count {
        let _ = writeln!(md, "- {p}: {} folds ({})", cs.len(), cs.join(", "));
    }
    md.push('\n');
}

fn write_weights(md: &mut String, f: &Found) {
    md.push_str("## The weights fitted on every crate (`src/combined-weights.json`)\n\n| feature | weight | meaning |\n|---|---:|---|\n");
    for i in 0..N {
        let _ = writeln!(md, "| {} | {:.2} | {} |", FEATURES[i], f.weights[i], MEANINGS[i]);
    }
    md.push_str("\n## Per fold (held-out crate: its weights)\n\n");
    let _ = writeln!(md, "| held out | {} |", FEATURES.join(" | "));
    let _ = writeln!(md, "|---|{}", "---:|".repeat(N));
    for (c, fw) in f.folds {
        let cells: Vec<String> = fw.iter().map(|x| format!("{x:.2}")).collect();
        let _ = writeln!(md, "| {c} | {} |", cells.join(" | "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of two rankings on `n` versions of each benchmark: `simple` finds the fault
    /// (every top-N) on the versions `simple_hits` accepts, `fancy` on those `fancy_hits` does.
    fn table(n: usize, simple_hits: &dyn Fn(usize) -> bool, fancy_hits: &dyn Fn(usize) -> bool) -> Table {
        let mut t = Table::default();
        let hit = |yes: bool| {
            let x = f64::from(u8::from(yes));
            Scores {
                top: [x; 4],
                fn_top: [x; 2],
                std_rank: 1.0,
                read: 0.0,
            }
        };
        for (s, source) in Source::ALL.into_iter().enumerate() {
            for i in 0..n {
                let id = s * n + i;
                for (ranking, hits) in [("simple", simple_hits), ("fancy", fancy_hits)] {
                    t.rows.push(Row {
                        id,
                        source,
                        krate: format!("crate{}", i % 5),
                        ranking,
                        scores: hit(hits(i)),
                    });
                }
            }
        }
        t
    }

    /// The simpler ranking is kept when the better one wins by less than the noise, and
    /// dropped when it loses by more.
    #[test]
    fn one_standard_error_rule() {
        let all = |_: &str| true;
        // fancy finds one more of 40 faults per benchmark, but not the same ones: within one
        // standard error of the paired differences.
        let close = table(40, &|i| i < 20, &|i| (2..23).contains(&i));
        assert_eq!(choose(&close, &["simple", "fancy"], &all), "simple");
        // fancy finds 20 more: far beyond it.
        let far = table(40, &|i| i < 10, &|i| i < 30);
        assert_eq!(choose(&far, &["simple", "fancy"], &all), "fancy");
        // The objective weighs every benchmark the same and reads the kept crates only.
        let (mean, _) = weighed(&far, "fancy", None, &|c: &str| c != "crate0");
        assert!((mean - 24.0 / 32.0).abs() < 1e-12, "{mean}");
    }

    /// Each fold's choice is scored on its held-out crate only.
    #[test]
    fn chosen_rows_are_the_held_out_crates() {
        let mut t = table(40, &|i| i < 10, &|i| i < 30);
        let crates: BTreeSet<String> = (0..5).map(|i| format!("crate{i}")).collect();
        let picks = choose_per_fold(&mut t, &["simple", "fancy"], &crates);
        assert_eq!(picks.len(), 5);
        assert!(picks.iter().all(|(_, p)| *p == "fancy"));
        let chosen = t.summary(Source::Faults, CHOSEN, &|_| true).unwrap();
        let fancy = t.summary(Source::Faults, "fancy", &|_| true).unwrap();
        assert_eq!(chosen.versions, 40);
        assert_eq!(chosen.mean.top, fancy.mean.top);
    }
}
