//! Evaluating the reproduced bugs with `cargo sfl eval` (through the Panic4R benchmark's
//! helpers: line and function granularity, every measure) and writing
//! bench-results/regressions.md, regressions.json and regressions-bugs.json.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Value, json};

use super::bugs::{Attempt, BUGS_FILE, Bug, cached, slug};
use crate::panic4r_bench::report as p4r;

/// Every cached attempt, per repository directory, in commit order.
pub(super) fn attempts(cache: &Path) -> Vec<(PathBuf, Attempt)> {
    let mut out = Vec::new();
    let Ok(repos) = std::fs::read_dir(cache) else {
        return out;
    };
    let mut repos: Vec<PathBuf> = repos.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    repos.sort();
    for repo in repos {
        let Ok(entries) = std::fs::read_dir(&repo) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        out.extend(dirs.into_iter().filter_map(|d| cached(&d).map(|a| (d, a))));
    }
    out
}

/// The metrics of one measure's row in an eval report.
fn row<'a>(set: &'a Option<Vec<(String, Value)>>, measure: &str) -> Option<&'a Value> {
    set.as_ref()?.iter().find(|(m, _)| m == measure).map(|(_, v)| v)
}

fn top(m: Option<&Value>, n: &str) -> bool {
    m.is_some_and(|m| m["top"][n].as_bool().unwrap_or(false))
}

/// One bug's figures for the default ranking, Ochiai and the panic-stack baseline.
fn figures(line: &Option<Vec<(String, Value)>>, function: &Option<Vec<(String, Value)>>, measure: &str) -> Value {
    let (l, f) = (row(line, measure), row(function, measure));
    json!({
        "line_rank": l.and_then(|m| m["standard_rank"].as_f64()),
        "line_top1": top(l, "1"), "line_top3": top(l, "3"), "line_top5": top(l, "5"), "line_top10": top(l, "10"),
        "function_rank": f.and_then(|m| m["standard_rank"].as_f64()),
        "function_top1": top(f, "1"), "function_top5": top(f, "5"),
        "lines_read": l.and_then(|m| m["lines_read"].as_f64()),
    })
}

const SHOWN: [(&str, &str); 3] = [
    ("default", cargo_sfl::measures::DEFAULT),
    ("ochiai", "ochiai"),
    ("baseline", cargo_sfl::eval::PANIC_STACK),
];

pub(super) fn evaluate(sfl: &Path, cache: &Path, out_dir: &Path, listed: &[Bug]) -> Result<()> {
    let all = attempts(cache);
    let mut sums = p4r::Sums::default();
    let (mut per_bug, mut unlocalisable) = (Vec::new(), Vec::new());
    for (dir, a) in all.iter().filter(|(_, a)| a.bug.is_some()) {
        let bug = a.bug.as_ref().expect("filtered");
        let (spectra, faults, root) = (dir.join("spectra.json"), dir.join("faults.toml"), dir.join("buggy"));
        if !spectra.is_file() || !root.is_dir() {
            continue;
        }
        // The combined ranking ranks this crate by weights fitted without it (cross-validation),
        // when the fit held it out.
        let krate = crate::folds::crate_of(&bug.repository);
        let weights = crate::folds::fold_weights_file(out_dir, &krate, dir)?.map(|p| p.display().to_string());
        let extra: Vec<&str> = weights.iter().flat_map(|w| ["--weights", w.as_str()]).collect();
        let eval = |more: &[&str]| {
            p4r::eval(
                sfl,
                (&spectra, Some(&root)),
                &faults,
                &[extra.as_slice(), more].concat(),
            )
        };
        let Some(line) = eval(&[])? else {
            unlocalisable.push(format!("{} {}", bug.repository, &bug.commit[..12]));
            continue;
        };
        let function = eval(&["--granularity", "function"])?;
        let with_tests = eval(&["--include-test-code"])?;
        let mut entry = json!({
            "repository": bug.repository,
            "commit": bug.commit,
            "subject": bug.subject,
            "failure_kind": bug.failure_kind,
            "library_frame": bug.library_frame,
            "changed_lines": bug.changed_lines,
            "fault_lines": bug.faults.iter().map(|f| f.lines.len()).sum::<usize>(),
            "omission": bug.omission,
            "failing_tests": bug.tests.len(),
        });
        let line = Some(line);
        for (key, measure) in SHOWN {
            entry[key] = figures(&line, &function, measure);
        }
        let Some(line) = line else { continue };
        per_bug.push(entry);
        sums.add(&p4r::Evals {
            line,
            function,
            with_tests,
        });
    }
    write_bugs(out_dir, &all, listed)?;
    write(out_dir, &all, &per_bug, &unlocalisable, &sums)
}

/// regressions-bugs.json: every reproduced bug cached here, and the listed bugs of
/// repositories not attempted here.
fn write_bugs(out_dir: &Path, all: &[(PathBuf, Attempt)], listed: &[Bug]) -> Result<()> {
    let mut bugs: Vec<Bug> = all.iter().filter_map(|(_, a)| a.bug.clone()).collect();
    let here: Vec<&str> = all.iter().map(|(_, a)| a.repository.as_str()).collect();
    bugs.extend(
        listed
            .iter()
            .filter(|b| !here.contains(&b.repository.as_str()))
            .cloned(),
    );
    bugs.sort_by(|a, b| (&a.repository, &a.commit).cmp(&(&b.repository, &b.commit)));
    std::fs::create_dir_all(out_dir)?;
    let json = json!({"schema": "cargo-sfl-regressions-bugs/v1", "bugs": bugs});
    std::fs::write(out_dir.join(BUGS_FILE), serde_json::to_string_pretty(&json)? + "\n")?;
    Ok(())
}

/// Share of `per_bug` whose `key` figures have `field` true.
fn share(per_bug: &[Value], key: &str, field: &str) -> f64 {
    let n = per_bug.iter().filter(|b| b[key][field].as_bool() == Some(true)).count();
    n as f64 / per_bug.len().max(1) as f64
}

fn mean(per_bug: &[Value], key: &str, field: &str) -> f64 {
    let v: Vec<f64> = per_bug.iter().filter_map(|b| b[key][field].as_f64()).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The median of `per_bug`'s `key` lines read (a bug whose fault is not ranked counts as
/// infinitely many; `null` when most are).
fn median_read(per_bug: &[Value], key: &str) -> Option<f64> {
    let mut v: Vec<f64> = per_bug
        .iter()
        .map(|b| b[key]["lines_read"].as_f64().unwrap_or(f64::INFINITY))
        .collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let m = match n {
        0 => return None,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    };
    m.is_finite().then_some(m)
}

fn summary(per_bug: &[Value], key: &str) -> Value {
    json!({
        "median_lines_read": median_read(per_bug, key),
        "line": {
            "mean_rank": mean(per_bug, key, "line_rank"),
            "top1": share(per_bug, key, "line_top1"), "top3": share(per_bug, key, "line_top3"),
            "top5": share(per_bug, key, "line_top5"), "top10": share(per_bug, key, "line_top10"),
        },
        "function": {
            "mean_rank": mean(per_bug, key, "function_rank"),
            "top1": share(per_bug, key, "function_top1"), "top5": share(per_bug, key, "function_top5"),
        },
    })
}

fn count<'a>(items: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, usize> {
    let mut m = BTreeMap::new();
    for i in items {
        *m.entry(i).or_insert(0) += 1;
    }
    m
}

/// Per repository: commits, mined candidates, attempts, reproduced bugs.
fn repositories(cache: &Path, all: &[(PathBuf, Attempt)]) -> Vec<Value> {
    let mut names: Vec<&str> = all.iter().map(|(_, a)| a.repository.as_str()).collect();
    names.dedup();
    names
        .iter()
        .map(|name| {
            let mined: Value = std::fs::read(cache.join(slug(name)).join("candidates.json"))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            let mine: Vec<&Attempt> = all.iter().map(|(_, a)| a).filter(|a| a.repository == *name).collect();
            json!({
                "repository": name,
                "commits": mined["commits"],
                "candidates": mined["candidates"].as_array().map(Vec::len),
                "turned_away": mined["turned_away"],
                "attempted": mine.len(),
                "reproduced": mine.iter().filter(|a| a.bug.is_some()).count(),
            })
        })
        .collect()
}

fn write(
    out_dir: &Path,
    all: &[(PathBuf, Attempt)],
    per_bug: &[Value],
    unlocalisable: &[String],
    sums: &p4r::Sums,
) -> Result<()> {
    let cache = all
        .first()
        .and_then(|(d, _)| d.parent()?.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let reproduced: Vec<&Bug> = all.iter().filter_map(|(_, a)| a.bug.as_ref()).collect();
    let mut crates: Vec<&str> = reproduced.iter().map(|b| b.repository.as_str()).collect();
    crates.dedup();
    let skipped = count(
        all.iter()
            .map(|(_, a)| a.outcome.as_str())
            .filter(|o| *o != "reproduced"),
    );
    let kinds = count(reproduced.iter().map(|b| b.failure_kind.as_str()));
    let measures: Vec<Value> = sums
        .rows()
        .iter()
        .map(|(m, v)| {
            let mut o = serde_json::Map::new();
            o.insert("measure".into(), json!(m));
            for (k, x) in p4r::NAMES.iter().zip(v) {
                o.insert((*k).into(), json!(x));
            }
            o.insert("median_lines_read".into(), json!(sums.median_lines_read(m)));
            Value::Object(o)
        })
        .collect();
    let d = summary(per_bug, "default");
    let json = json!({
        "schema": "cargo-sfl-regressions-bench/v1",
        "default": cargo_sfl::measures::DEFAULT,
        "bugs": per_bug.len(),
        "reproduced": reproduced.len(),
        "crates": crates.len(),
        "attempted": all.len(),
        "results": {
            "line": d["line"], "function": d["function"], "median_lines_read": d["median_lines_read"],
            // The name the benchmark's specification gives the same figure.
            "reading_order_median": d["median_lines_read"],
            "baseline": summary(per_bug, "baseline"),
            "ochiai": summary(per_bug, "ochiai"),
        },
        "failure_kinds": kinds,
        "library_frame": reproduced.iter().filter(|b| b.library_frame).count(),
        "skipped": skipped,
        "unlocalisable": unlocalisable,
        "repositories": repositories(&cache, all),
        "measures": measures,
        "per_bug": per_bug,
    });
    std::fs::create_dir_all(out_dir)?;
    std::fs::write(
        out_dir.join("regressions.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let md = markdown(&json, per_bug, sums);
    std::fs::write(out_dir.join("regressions.md"), &md)?;
    print!("{md}");
    Ok(())
}

fn pct(x: &Value) -> String {
    format!("{:.0}%", 100.0 * x.as_f64().unwrap_or(0.0))
}

fn markdown(j: &Value, per_bug: &[Value], sums: &p4r::Sums) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# `cargo xtask bench regressions`\n");
    let _ = writeln!(
        md,
        "Real regressions mined from git histories: commits that change library code and add or change a test, built as the \
         parent's library with the commit's tests; a bug is kept when a new or changed test fails before the fix and passes \
         after, and every other test passes on both. Fault lines are the lines the fix changes or deletes in the buggy \
         version; for a fix that only adds lines, the closest code line above and below the insertion point. The list of \
         bugs is `bench-results/regressions-bugs.json` (`--from-list` re-runs it without mining).\n"
    );
    let _ = writeln!(
        md,
        "Candidates attempted: {}; reproduced: {} from {} repositories; evaluated (a fault line was run): {}.\n",
        j["attempted"], j["reproduced"], j["crates"], j["bugs"]
    );
    let unrun: Vec<&str> = j["unlocalisable"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    if !unrun.is_empty() {
        let _ = writeln!(md, "Not evaluated, no test ran a fault line: {}.\n", unrun.join(", "));
    }
    let r = &j["results"];
    let _ = writeln!(
        md,
        "| ranking | line mean rank | line top-1 | top-3 | top-5 | top-10 | fn mean rank | fn top-1 | fn top-5 | lines read (median) |"
    );
    let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let rows = [
        (
            format!("default ({})", j["default"].as_str().unwrap_or("")),
            json!({"line": r["line"], "function": r["function"], "median_lines_read": r["median_lines_read"]}),
        ),
        ("ochiai".to_string(), r["ochiai"].clone()),
        ("panic-stack (baseline)".to_string(), r["baseline"].clone()),
    ];
    for (name, s) in rows {
        let _ = writeln!(
            md,
            "| {name} | {:.1} | {} | {} | {} | {} | {:.1} | {} | {} | {} |",
            s["line"]["mean_rank"].as_f64().unwrap_or(0.0),
            pct(&s["line"]["top1"]),
            pct(&s["line"]["top3"]),
            pct(&s["line"]["top5"]),
            pct(&s["line"]["top10"]),
            s["function"]["mean_rank"].as_f64().unwrap_or(0.0),
            pct(&s["function"]["top1"]),
            pct(&s["function"]["top5"]),
            p4r::fmt_read(Some(s["median_lines_read"].as_f64().unwrap_or(f64::INFINITY))),
        );
    }
    let _ = writeln!(
        md,
        "\nRanks are Standard Rank Scores (`higher + tied/2`, lines or functions); top-N is the share of bugs whose first fault \
         line (function) is expected within N entries; lines read is the median number of lines a reader of the \
         functions-first report reads before the first faulty line (the best line of each of the top 5 functions, then the \
         remaining lines in rank order; ∞ when most faults are not ranked). The combined ranking ranks each \
         crate's bugs by the weights `cargo xtask fit` fitted without that crate (`combined-folds.json`), so \
         its figures are leave-one-crate-out.\n"
    );
    let _ = writeln!(
        md,
        "Failure kinds: {}; a library frame in a failing test's backtrace: {} bugs.\n",
        kinds(&j["failure_kinds"]),
        j["library_frame"]
    );
    let _ = writeln!(md, "## Per bug\n");
    let _ = writeln!(
        md,
        "| repository | commit | failure | library frame | changed lines | line rank | fn rank | lines read | baseline line rank |"
    );
    let _ = writeln!(md, "|---|---|---|---|---:|---:|---:|---:|---:|");
    for b in per_bug {
        let rank = |x: &Value| x.as_f64().map_or("-".to_string(), |v| format!("{v:.1}"));
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {}{} | {} | {} | {} | {} |",
            b["repository"].as_str().unwrap_or(""),
            &b["commit"].as_str().unwrap_or("")[..12],
            b["failure_kind"].as_str().unwrap_or(""),
            if b["library_frame"] == true { "yes" } else { "no" },
            b["changed_lines"],
            if b["omission"] == true { " (omission)" } else { "" },
            rank(&b["default"]["line_rank"]),
            rank(&b["default"]["function_rank"]),
            rank(&b["default"]["lines_read"]),
            rank(&b["baseline"]["line_rank"]),
        );
    }
    let _ = writeln!(md, "\n## Repositories\n");
    let _ = writeln!(md, "| repository | commits | candidates | attempted | reproduced |");
    let _ = writeln!(md, "|---|---:|---:|---:|---:|");
    // A repository whose bugs came from the list (`--from-list`) was not mined on this machine.
    let mined = |v: &Value| {
        if v.is_null() {
            "not mined here".to_string()
        } else {
            v.to_string()
        }
    };
    for r in j["repositories"].as_array().into_iter().flatten() {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            r["repository"].as_str().unwrap_or(""),
            mined(&r["commits"]),
            mined(&r["candidates"]),
            r["attempted"],
            r["reproduced"]
        );
    }
    let _ = writeln!(md, "\n## Candidates not reproduced\n");
    let _ = writeln!(md, "| reason | candidates |");
    let _ = writeln!(md, "|---|---:|");
    for (reason, n) in j["skipped"].as_object().into_iter().flatten() {
        let _ = writeln!(md, "| {reason} | {n} |");
    }
    if sums.versions > 0 {
        let _ = writeln!(md, "\n## Every measure\n");
        let _ = writeln!(
            md,
            "| measure | std rank | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|");
        for (m, v) in sums.rows() {
            let p: Vec<String> = v[1..7].iter().map(|x| format!("{:.0}%", 100.0 * x)).collect();
            let _ = writeln!(md, "| {m} | {:.2} | {} |", v[0], p.join(" | "));
        }
    }
    md
}

fn kinds(k: &Value) -> String {
    let v: Vec<String> = k
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    if v.is_empty() { "none".into() } else { v.join(", ") }
}
