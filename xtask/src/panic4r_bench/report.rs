//! Evaluating the reproduced bugs with `cargo sfl eval` (the built binary, so the benchmark
//! follows the pipeline) at line and function granularity, and writing
//! bench-results/panic4r.md and panic4r.json.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::run::Record;

/// The workspace root saved spectra name, found under the bug's directory (next to the
/// spectra) when the cache was made in another checkout.
pub fn workspace_root(spectra: &Path) -> Option<std::path::PathBuf> {
    #[derive(serde::Deserialize)]
    struct Root {
        workspace_root: std::path::PathBuf,
    }
    let text = std::fs::read_to_string(spectra).ok()?;
    let root = serde_json::from_str::<Root>(&text).ok()?.workspace_root;
    if root.is_dir() {
        return Some(root);
    }
    let bug_dir = spectra.parent()?;
    let bug = bug_dir.file_name()?;
    let mut parts = root.components().skip_while(|c| c.as_os_str() != bug);
    parts.next()?;
    let here = bug_dir.join(parts.collect::<std::path::PathBuf>());
    here.is_dir().then_some(here)
}

/// `cargo sfl eval --format json` on saved spectra, run in `root` (their workspace: fault paths
/// and sources are read from the local workspace, see [`workspace_root`]): each measure's
/// metrics, or None when the fault is on no executed line (exit code 7).
pub fn eval(
    sfl: &Path,
    (spectra, root): (&Path, Option<&Path>),
    faults: &Path,
    extra: &[&str],
) -> Result<Option<Vec<(String, Value)>>> {
    let mut cmd = Command::new(sfl);
    cmd.args([
        "sfl",
        "eval",
        "--no-ht",
        "--color",
        "never",
        "--format",
        "json",
        "--spectra",
    ])
    .arg(spectra)
    .arg("--faults")
    .arg(faults);
    cmd.args(extra);
    if let Some(root) = root {
        cmd.current_dir(root);
    }
    let out = cmd.output()?;
    match out.status.code() {
        Some(0) => {}
        Some(7) => return Ok(None),
        _ => bail!("cargo sfl eval failed: {}", String::from_utf8_lossy(&out.stderr)),
    }
    let report: Value = serde_json::from_slice(&out.stdout).context("eval JSON")?;
    Ok(Some(
        report["measures"]
            .as_array()
            .context("eval JSON has no measures")?
            .iter()
            .filter_map(|m| Some((m["measure"].as_str()?.to_string(), m.clone())))
            .collect(),
    ))
}

/// Metrics summed per measure: standard rank, top-1/3/5/10 (lines), top-1/5 (functions), and
/// standard rank and top-5 with test code ranked too (`--include-test-code`).
#[derive(Default)]
pub struct Sums {
    pub versions: usize,
    pub by_measure: BTreeMap<String, [f64; M]>,
    /// Per measure, each bug's lines read before its first faulty line in the functions-first
    /// reading order (infinite when no faulty line is ranked).
    pub lines_read: BTreeMap<String, Vec<f64>>,
}

/// How many metrics a row has.
const M: usize = 9;

pub(crate) const NAMES: [&str; M] = [
    "standard_rank",
    "top1",
    "top3",
    "top5",
    "top10",
    "function_top1",
    "function_top5",
    "standard_rank_with_tests",
    "top5_with_tests",
];

/// One bug's evaluations: by line, by function, by line without test code.
pub struct Evals {
    pub line: Vec<(String, Value)>,
    pub function: Option<Vec<(String, Value)>>,
    pub with_tests: Option<Vec<(String, Value)>>,
}

impl Sums {
    /// Adds one bug's line-level and function-level metrics.
    pub fn add(&mut self, e: &Evals) {
        self.versions += 1;
        let top = |m: &Value, n: &str| f64::from(u8::from(m["top"][n].as_bool().unwrap_or(false)));
        let find = |set: &Option<Vec<(String, Value)>>, name: &str| {
            set.as_ref()
                .and_then(|f| f.iter().find(|(n, _)| n == name))
                .map(|(_, v)| v.clone())
        };
        for (name, m) in &e.line {
            let f = find(&e.function, name);
            let x = find(&e.with_tests, name);
            let vals = [
                m["standard_rank"].as_f64().unwrap_or(f64::NAN),
                top(m, "1"),
                top(m, "3"),
                top(m, "5"),
                top(m, "10"),
                f.as_ref().map_or(0.0, |f| top(f, "1")),
                f.as_ref().map_or(0.0, |f| top(f, "5")),
                x.as_ref().and_then(|x| x["standard_rank"].as_f64()).unwrap_or(f64::NAN),
                x.as_ref().map_or(0.0, |x| top(x, "5")),
            ];
            let acc = self.by_measure.entry(name.clone()).or_insert([0.0; M]);
            for (a, v) in acc.iter_mut().zip(vals) {
                *a += v;
            }
            let read = m["lines_read"].as_f64().unwrap_or(f64::INFINITY);
            self.lines_read.entry(name.clone()).or_default().push(read);
        }
    }

    /// The median of `measure`'s lines read before the first faulty line (`None` without
    /// bugs; infinite when most bugs' faults are not ranked).
    pub(crate) fn median_lines_read(&self, measure: &str) -> Option<f64> {
        let mut v = self.lines_read.get(measure)?.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        Some(if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        })
    }

    /// Means per measure, best mean Standard Rank Score first.
    pub(crate) fn rows(&self) -> Vec<(&str, [f64; M])> {
        let n = self.versions.max(1) as f64;
        let mut rows: Vec<(&str, [f64; M])> = self
            .by_measure
            .iter()
            .map(|(m, v)| (m.as_str(), v.map(|x| x / n)))
            .collect();
        rows.sort_by(|a, b| a.1[0].total_cmp(&b.1[0]).then(a.0.cmp(b.0)));
        rows
    }
}

/// What the page and the JSON say.
pub struct Summary<'a> {
    pub records: &'a [Record],
    /// Bugs with no cached run (with --eval-only).
    pub not_run: Vec<String>,
    /// Reproduced bugs whose fault no test ran, with the reason.
    pub unlocalisable: Vec<String>,
    pub sums: Sums,
    pub crates: Vec<String>,
}

pub fn write(out_dir: &Path, s: &Summary) -> Result<()> {
    let default = cargo_sfl::measures::DEFAULT;
    let reproduced: Vec<&Record> = s.records.iter().filter(|r| r.reproduced).collect();
    let rows = s.sums.rows();
    let json = json!({
        "schema": "cargo-sfl-panic4r-bench/v1",
        "default": default,
        "crates": s.crates,
        "attempted": s.records.len(),
        "reproduced": reproduced.len(),
        "localisable": s.sums.versions,
        "not_run": s.not_run,
        "not_reproduced": s.records.iter().filter(|r| !r.reproduced)
            .map(|r| json!({"bug": r.bug, "reason": r.reason})).collect::<Vec<_>>(),
        "unlocalisable": s.unlocalisable,
        "bugs": s.records,
        "results": {"1": {
            "versions": s.sums.versions,
            "measures": rows.iter().map(|(m, v)| {
                let mut o = serde_json::Map::new();
                o.insert("measure".into(), json!(m));
                for (k, x) in NAMES.iter().zip(v) {
                    o.insert((*k).into(), json!(x));
                }
                o.insert("median_lines_read".into(), json!(s.sums.median_lines_read(m)));
                Value::Object(o)
            }).collect::<Vec<_>>(),
        }},
    });
    std::fs::create_dir_all(out_dir)?;
    std::fs::write(
        out_dir.join("panic4r.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    let md = markdown(s, &reproduced, &rows, default);
    std::fs::write(out_dir.join("panic4r.md"), &md)?;
    print!("{md}");
    Ok(())
}

/// A median number of lines read: `-` without bugs, `∞` when most faults are not ranked.
pub(crate) fn fmt_read(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(x) if x.is_infinite() => "∞".into(),
        Some(x) => format!("{x:.1}"),
    }
}

fn markdown(s: &Summary, reproduced: &[&Record], rows: &[(&str, [f64; M])], default: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# `cargo xtask bench panic4r`\n");
    let _ = writeln!(
        md,
        "Real panics from [Panic4R](https://github.com/cardigan1008/panic4r): each bug's buggy snapshot with its \
         trigger as the failing test `{}` and the crate's own tests as the rest; the fault is the fix lines of \
         `perfect_location.txt`. Crates: {}.\n",
        super::prepare::TRIGGER,
        s.crates.join(", ")
    );
    let _ = writeln!(
        md,
        "Bugs attempted: {}; reproduced (trigger fails, another test passes): {}; localisable (a fault line was run): {}.\n",
        s.records.len(),
        reproduced.len(),
        s.sums.versions
    );
    if !s.not_run.is_empty() {
        let _ = writeln!(md, "Not run yet (no cached run): {}.\n", s.not_run.join(", "));
    }
    let _ = writeln!(
        md,
        "The combined ranking ranks each bug by the weights fitted without its crate when `cargo xtask fit` held the crate \
         out (`bench-results/combined-folds.json`), else by the committed weights.\n"
    );
    if !rows.is_empty() {
        let get = |name: &str| rows.iter().find(|r| r.0 == name);
        let best = rows[0];
        if let Some(d) = get(default) {
            let _ = writeln!(
                md,
                "Default ({default}): mean Standard Rank Score {:.2}, top-5 {:.0}%. Best: **{}** {:.2}, top-5 {:.0}%.\n",
                d.1[0],
                100.0 * d.1[3],
                best.0,
                best.1[0],
                100.0 * best.1[3]
            );
        }
        let _ = writeln!(
            md,
            "Means over the localisable bugs; Standard Rank Score counts lines (`higher + tied/2`); top-N is the share of bugs \
             whose first fault line is expected within N entries (functions for the function columns); lines read is the median \
             number of lines a reader of the functions-first report reads before the first faulty line (each function's \
             best line of each of the top 5 functions, then the remaining lines in rank order). By default test code \
             is left out of the ranking; the last two columns rank it too (`--include-test-code`), where the trigger \
             test's own lines, run only by the failing test, come first.\n"
        );
        let _ = writeln!(
            md,
            "| measure | std rank | top-1 | top-3 | top-5 | top-10 | fn top-1 | fn top-5 | lines read (median) | std rank, with test code | top-5, with test code |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (m, v) in rows {
            let pct: Vec<String> = v[1..7].iter().map(|x| format!("{:.0}%", 100.0 * x)).collect();
            let _ = writeln!(
                md,
                "| {m} | {:.2} | {} | {} | {:.2} | {:.0}% |",
                v[0],
                pct.join(" | "),
                fmt_read(s.sums.median_lines_read(m)),
                v[7],
                100.0 * v[8]
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(md, "## Every bug attempted\n");
    let _ = writeln!(
        md,
        "Lockfile: `kept` (the snapshot's), `updated` (`cargo update` after the kept one failed to build), `generated` \
         (the snapshot has none: today's versions). Failing tests other than the trigger (the snapshot's own failures \
         under today's toolchain, e.g. undefined behaviour that newer std checks catch) stay failing in the spectra.\n"
    );
    let _ = writeln!(
        md,
        "| bug | crate (package tested) | outcome | lockfile | tests | other failing | seconds |"
    );
    let _ = writeln!(md, "|---|---|---|---|---:|---:|---:|");
    for r in s.records {
        let outcome = if r.reproduced {
            match s.unlocalisable.iter().find(|u| u.starts_with(&format!("{}:", r.bug))) {
                Some(_) => "reproduced, fault not run by any test".to_string(),
                None => "reproduced".to_string(),
            }
        } else {
            r.reason.replace('|', "\\|")
        };
        let _ = writeln!(
            md,
            "| {} | {} | {outcome} | {} | {} | {} | {:.0} |",
            r.bug,
            if r.package.is_empty() || r.package == r.krate {
                r.krate.clone()
            } else {
                format!("{} ({})", r.krate, r.package)
            },
            r.lockfile,
            r.tests,
            r.other_failing,
            r.seconds
        );
    }
    md
}
