//! The second run of a crate: after the first run, the default `cargo sfl` (which re-runs only
//! the tests an edit can affect and reuses the other rows) against `cargo sfl --rerun` right
//! after it, on the same edited sources. Both must give the same spectra (outcomes, rows,
//! units), the same summary counts and the same default ranking.
//!
//! Per crate: a full run in fresh processes (`--fresh-processes`: no test runs in a process an
//! earlier test left), whose spectra must be the first run's (kept processes, the default) but
//! for tests whose rows vary between runs; one more full run of the unedited crate, whose spectra are compared with the
//! first run's (tests whose rows differ vary between runs of unchanged code: listed apart, not
//! counted; while an edit shows a test's row differing, up to three more full runs of the
//! edited crate add every test whose rows differ between two full runs and those whose selected
//! row another full run gives); then up to three edits, each
//! made to the pristine sources and undone after its runs: a statement added before a statement a test ran, the injected fault's mutation
//! when there is one, and an item added outside every function. Each edit's selected run
//! starts from the previous edit's full run, so it also sees that edit undone.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::common::{
    Crate, backup, cargo_sfl_spectra, fault_candidates, round, run_merged, sfl_cmd, target_dir, with_line,
};

/// An edit of one file: its whole new text.
struct Edit {
    kind: &'static str,
    file: String,
    line: usize,
    change: String,
    text: String,
}

/// The check of one crate: the `second_run` object of its row in corpus.json. `pristine` is the
/// first run's saved spectra; `fault` the row's `fault` object.
pub(super) fn check(c: &Crate, sfl: &Path, manifest: &Path, pristine: &Path, fault: &Value) -> Result<Value> {
    let dir = manifest.parent().unwrap();
    // Tests whose rows differ between two full runs of the unedited crate. This run also makes
    // the unedited sources the last run the first edit's selected run starts from (the fault
    // run before it ran the mutant).
    eprintln!("   second run: a full run of the unedited crate again");
    let again = run(sfl, c, manifest, "unedited", true)?;
    let first = cargo_sfl_spectra(pristine)?;
    let second = cargo_sfl_spectra(&again.spectra).context("the second full run of the unedited crate")?;
    // Only differences on a test name one: a difference of the run as a whole (its units, say)
    // is not a test's.
    let tests: std::collections::BTreeSet<String> = first
        .tests
        .iter()
        .chain(&second.tests)
        .map(|r| format!("{} {}", r.binary, r.name))
        .collect();
    let unedited = cargo_sfl::select::differences(&first, &second);
    let varying = test_names(&unedited, &tests);
    // Differences of two full runs that are no test's: kept, for they make every comparison
    // below suspect.
    let unedited_differences: Vec<&String> = unedited.iter().filter(|d| !on_test(d, &tests)).collect();

    // Kept processes against fresh ones, on the same unedited crate.
    eprintln!("   second run: a full run in fresh processes");
    let fresh = run_with(sfl, c, manifest, "fresh", true, &["--fresh-processes"])?;
    let fresh_differences: Vec<String> = match cargo_sfl_spectra(&fresh.spectra) {
        Ok(f) => cargo_sfl::select::differences(&second, &f)
            .into_iter()
            .filter(|d| {
                !test_names(std::slice::from_ref(d), &tests)
                    .iter()
                    .any(|t| varying.contains(t))
            })
            .collect(),
        Err(e) => vec![format!("the run in fresh processes saved no spectra: {e}")],
    };
    if fresh.code != again.code {
        eprintln!("     fresh processes: exit {:?} against {:?}", fresh.code, again.code);
    }

    let edits = edits(c, dir, &first, fault)?;
    let mut varying_all: std::collections::BTreeSet<String> = varying.iter().cloned().collect();
    let mut per_edit = Vec::new();
    let mut texts = Vec::new();
    let (mut selected_total, mut wall_selected, mut wall_rerun) = (0, 0.0, 0.0);
    for (i, e) in edits.iter().enumerate() {
        let path = dir.join(&e.file);
        let original = std::fs::read_to_string(&path)?;
        let saved = backup(c, &e.file);
        std::fs::create_dir_all(saved.parent().unwrap())?;
        std::fs::copy(&path, &saved)?;
        std::fs::write(&path, &e.text)?;
        eprintln!("   second run: {} {}:{} ({})", e.kind, e.file, e.line, e.change);
        let known: Vec<String> = varying_all.iter().cloned().collect();
        let result = (|| -> Result<(Sfl, Sfl, Found, Vec<String>)> {
            let selected = run(sfl, c, manifest, &format!("edit{i}-selected"), false)?;
            let full = run(sfl, c, manifest, &format!("edit{i}-rerun"), true)?;
            let mut found = compare(&selected, &full, &known);
            // Two full runs of unchanged code may not show every test that varies (threads,
            // hash seeds: duct's tests; HashMap probing: indexmap's; a random start: tokio's
            // StreamMap). While a test's row differs, up to three more full runs of the edited
            // crate: a test whose rows differ between two full runs varies, and so does one
            // whose selected row is the row another full run gives (the reused row is one a
            // full run can give).
            let mut also: Vec<String> = Vec::new();
            for k in 0..3 {
                let left = test_names(&found.counted, &tests);
                if left.is_empty() {
                    break;
                }
                let again = run(sfl, c, manifest, &format!("edit{i}-rerun-again{k}"), true)?;
                let (Ok(a), Ok(b), Ok(s)) = (
                    cargo_sfl_spectra(&full.spectra),
                    cargo_sfl_spectra(&again.spectra),
                    cargo_sfl_spectra(&selected.spectra),
                ) else {
                    break;
                };
                // Every test whose rows differ between the two full runs varies, whether or not
                // its row differs now: the next edit's selected run starts from the last of
                // these runs and may reuse its row.
                let full_pair = test_names(&cargo_sfl::select::differences(&a, &b), &tests);
                let from_again = test_names(&cargo_sfl::select::differences(&s, &b), &tests);
                let shown = full_pair
                    .iter()
                    .cloned()
                    .chain(left.into_iter().filter(|t| !from_again.contains(t)));
                for t in shown {
                    if !also.contains(&t) {
                        also.push(t);
                    }
                }
                let all: Vec<String> = known.iter().chain(&also).cloned().collect();
                found = compare(&selected, &full, &all);
            }
            Ok((selected, full, found, also))
        })();
        std::fs::write(&path, original)?;
        let _ = std::fs::remove_file(&saved);
        let (selected, full, found, also) = result?;
        let (count, everything) = super::parse::selection(&selected.output);
        varying_all.extend(also.iter().cloned());
        let ran = cargo_sfl_spectra(&selected.spectra)
            .map(|s| s.tests.iter().filter(|t| !t.reused && t.outcome.ran()).count())
            .unwrap_or(0);
        let total = cargo_sfl_spectra(&full.spectra)
            .map(|s| s.tests.iter().filter(|t| t.outcome.ran()).count())
            .unwrap_or(0);
        let selected_count = count.unwrap_or(ran);
        selected_total += selected_count;
        wall_selected += selected.secs;
        wall_rerun += full.secs;
        eprintln!(
            "     selected {selected_count} of {total} in {:.1}s (exit {:?}), --rerun {:.1}s (exit {:?}): {} differences{}",
            selected.secs,
            selected.code,
            full.secs,
            full.code,
            found.counted.len(),
            found
                .counted
                .iter()
                .map(|d| format!("\n       {d}"))
                .collect::<String>()
        );
        texts.extend(
            found
                .counted
                .iter()
                .map(|d| format!("{} {}:{}: {d}", e.kind, e.file, e.line)),
        );
        per_edit.push(json!({
            "kind": e.kind,
            "file": e.file,
            "line": e.line,
            "change": e.change,
            "selected": selected_count,
            "total": total,
            "everything": everything,
            "exit_selected": selected.code,
            "exit_rerun": full.code,
            "wall_selected_s": round(selected.secs),
            "wall_rerun_s": round(full.secs),
            "differences": found.counted,
            "on_varying_tests": found.varying,
            "varying_after_edit": also,
        }));
    }
    Ok(json!({
        "edits": edits.len(),
        "differences": texts.len(),
        "varying_tests": varying_all.len(),
        "selected": selected_total,
        "wall_selected_s": round(wall_selected),
        "wall_rerun_s": round(wall_rerun),
        "difference_texts": texts,
        "varying": varying_all,
        "unedited_differences": unedited_differences,
        "fresh_differences": fresh_differences,
        "wall_fresh_s": round(fresh.secs),
        "wall_kept_s": round(again.secs),
        "per_edit": per_edit,
    }))
}

/// Whether a difference is a test's (`binary name: …`, the test known to `tests`).
/// The volatile tests of both runs whose lines differ, said as differences.
fn volatile_rows_differ(a: &cargo_sfl::spectra::Spectra, b: &cargo_sfl::spectra::Spectra) -> Vec<String> {
    let rows = |s: &cargo_sfl::spectra::Spectra| {
        let mut rows: std::collections::BTreeMap<String, std::collections::BTreeSet<(String, u32)>> = s
            .tests
            .iter()
            .filter(|t| t.volatile.is_some())
            .map(|t| (format!("{} {}", t.binary, t.name), Default::default()))
            .collect();
        let names: Vec<String> = s.tests.iter().map(|t| format!("{} {}", t.binary, t.name)).collect();
        for (u, column) in s.coverage.iter().enumerate() {
            for t in column.iter() {
                if let Some(row) = rows.get_mut(&names[t]) {
                    row.insert((s.units[u].file.clone(), s.units[u].line));
                }
            }
        }
        rows
    };
    let (x, y) = (rows(a), rows(b));
    x.iter()
        .filter(|(name, lines)| y.get(*name).is_some_and(|other| other != *lines))
        .map(|(name, _)| format!("{name}: lines differ (volatile: a sample of random inputs)"))
        .collect()
}

fn on_test(d: &str, tests: &std::collections::BTreeSet<String>) -> bool {
    d.split_once(": ").is_some_and(|(t, _)| tests.contains(t))
}

/// The tests (`binary name`) the differences are on, each once, in order.
fn test_names(differences: &[String], tests: &std::collections::BTreeSet<String>) -> Vec<String> {
    differences
        .iter()
        .filter(|d| on_test(d, tests))
        .filter_map(|d| d.split_once(": ").map(|(t, _)| t.to_string()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// One cargo sfl run of the check: exit code, output, wall time, and where its spectra and JSON
/// report went.
struct Sfl {
    code: Option<i32>,
    output: String,
    secs: f64,
    spectra: PathBuf,
    report: Value,
}

/// `cargo sfl` (the default run) or `cargo sfl --rerun`, with the spectra saved and the JSON
/// report written; the files of an earlier run of the same tag are removed first, so a run that
/// writes nothing is not compared with a stale file.
fn run(sfl: &Path, c: &Crate, manifest: &Path, tag: &str, rerun: bool) -> Result<Sfl> {
    run_with(sfl, c, manifest, tag, rerun, &[])
}

/// [`run`] with `extra` arguments.
fn run_with(sfl: &Path, c: &Crate, manifest: &Path, tag: &str, rerun: bool, extra: &[&str]) -> Result<Sfl> {
    let out_dir = target_dir().join("corpus-reports");
    std::fs::create_dir_all(&out_dir)?;
    let report_path = out_dir.join(format!("{}-second-{tag}.json", c.name));
    let spectra = out_dir.join(format!("{}-second-{tag}.spectra.json", c.name));
    let _ = std::fs::remove_file(&report_path);
    let _ = std::fs::remove_file(&spectra);
    let mut cmd = sfl_cmd(sfl, manifest.parent().unwrap());
    if rerun {
        cmd.arg("--rerun");
    }
    cmd.args(["--format", "json", "--test-timeout", "120", "-o"])
        .arg(&report_path)
        .arg("--save-spectra")
        .arg(&spectra)
        .arg("--manifest-path")
        .arg(manifest)
        .args(c.flags)
        .args(extra);
    let ran = run_merged(&mut cmd, Duration::from_secs(1800))?;
    std::fs::write(out_dir.join(format!("{}-second-{tag}.log", c.name)), &ran.output)?;
    let report = std::fs::read(&report_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Ok(Sfl {
        code: ran.code,
        output: ran.output,
        secs: ran.secs,
        spectra,
        report,
    })
}

/// The edits of the crate, each the whole new text of one file of its pristine sources, in this
/// order: `let _ = 0;` before the first statement a test ran outside test code (in the fault
/// file, else in the first file with one); the fault's mutation when one made a test fail; an
/// item outside every function at the end of the fault file.
fn edits(c: &Crate, dir: &Path, first: &cargo_sfl::spectra::Spectra, fault: &Value) -> Result<Vec<Edit>> {
    let mut out = Vec::new();
    // The lines a test ran, but test code (cargo sfl's own reading of it), per file, the fault
    // file first.
    let files: Vec<&str> = first
        .units
        .iter()
        .map(|u| u.file.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let test_code = cargo_sfl::testcode::TestCode::find(dir, &files);
    let mut ran: std::collections::BTreeMap<&str, Vec<u32>> = Default::default();
    for (u, column) in first.units.iter().zip(&first.coverage) {
        if !column.is_empty() && !test_code.contains(&u.file, u.line) {
            ran.entry(&u.file).or_default().push(u.line);
        }
    }
    let mut files: Vec<(&str, Vec<u32>)> = ran.into_iter().collect();
    files.sort_by_key(|(f, _)| *f != c.fault_file);
    for (file, ran) in files {
        let Ok(text) = std::fs::read_to_string(dir.join(file)) else {
            continue;
        };
        if let Some((line, new)) = added_statement(&text, &ran) {
            out.push(Edit {
                kind: "added statement",
                file: file.to_string(),
                line,
                change: format!("`let _ = 0;` before line {line}"),
                text: new,
            });
            break;
        }
    }
    if let (Some(line), Some(file)) = (fault["line"].as_u64(), fault["file"].as_str()) {
        let text = std::fs::read_to_string(dir.join(file))?;
        if let Some((_, mutated)) = fault_candidates(&text).into_iter().find(|(l, _)| *l as u64 == line) {
            out.push(Edit {
                kind: "mutation",
                file: file.to_string(),
                line: line as usize,
                change: format!("`{}`", mutated.trim()),
                text: with_line(&text, line as usize, &mutated),
            });
        }
    }
    // Last: cargo sfl runs every test after an edit outside every function, and the next
    // edit's selected run would see it undone.
    let text = std::fs::read_to_string(dir.join(c.fault_file))?;
    out.push(Edit {
        kind: "outside functions",
        file: c.fault_file.to_string(),
        line: text.lines().count() + 2,
        change: "`#[allow(dead_code)] const _SFL_BENCH: u8 = 0;` at the end of the file".into(),
        text: outside(&text),
    });
    Ok(out)
}

/// `text` with an item after its last line: the file's functions keep their lines.
fn outside(text: &str) -> String {
    let mut s = text.to_string();
    if !s.ends_with('\n') {
        s.push('\n');
    }
    s.push_str("\n#[allow(dead_code)]\nconst _SFL_BENCH: u8 = 0;\n");
    s
}

/// `let _ = 0;` on a line of its own before the first statement of `text` on a line among `ran`
/// (1-based lines a test ran) that starts its line, indented as it is: (its line, the new text).
/// The statements are those `--mutate` may delete (a call, a method call or an assignment, in a
/// function body outside const contexts), so the new line lands in a block of a function that
/// ran; `None` when there is none or syn cannot parse the file.
fn added_statement(text: &str, ran: &[u32]) -> Option<(usize, String)> {
    let mutants = cargo_sfl::mutate::sites::mutants(text, ran)?;
    let m = mutants.iter().find(|m| {
        let start = text[..m.start].rfind('\n').map_or(0, |i| i + 1);
        m.deletes_statement && ran.contains(&m.line) && text[start..m.start].trim().is_empty()
    })?;
    let start = text[..m.start].rfind('\n').map_or(0, |i| i + 1);
    let mut new = text.to_string();
    new.insert_str(start, &format!("{}let _ = 0;\n", &text[start..m.start]));
    Some((m.line as usize, new))
}

/// The differences between a selected run and the full run after it: counted, and those on
/// varying tests (or, for the summary and the ranking, any difference while varying tests
/// differ too).
#[derive(Debug, Default, PartialEq)]
struct Found {
    counted: Vec<String>,
    varying: Vec<String>,
}

fn compare(selected: &Sfl, full: &Sfl, varying: &[String]) -> Found {
    let mut found = Found::default();
    if selected.code != full.code {
        found.counted.push(format!(
            "exit codes differ: {:?} selected, {:?} with --rerun{}",
            selected.code,
            full.code,
            if matches!(selected.code, Some(0 | 3)) {
                String::new()
            } else {
                let lines: Vec<&str> = selected.output.lines().collect();
                format!(
                    "; the selected run's output ends:\n{}",
                    lines[lines.len().saturating_sub(8)..].join("\n")
                )
            }
        ));
    }
    let (a, b) = (cargo_sfl_spectra(&selected.spectra), cargo_sfl_spectra(&full.spectra));
    let (a, b) = match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (a, b) => {
            // A run that failed is one difference, said above with its output.
            if found.counted.is_empty() {
                for (which, r) in [("selected run", a.err()), ("--rerun", b.err())] {
                    if let Some(e) = r {
                        found.counted.push(format!("the {which} saved no spectra: {e:#}"));
                    }
                }
            }
            return found;
        }
    };
    let on_varying = |d: &String| d.split_once(": ").is_some_and(|(t, _)| varying.iter().any(|v| v == t));
    // A difference on a test whose row the selected run reused is the selection's error; on a
    // test both runs ran on the same sources, the test's own variation (thread timing, hash
    // seeds) that no two full runs happened to show: the test varies, by definition.
    let reused: std::collections::BTreeSet<String> = a
        .tests
        .iter()
        .filter(|t| t.reused)
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect();
    let ran: std::collections::BTreeSet<String> = a.tests.iter().map(|t| format!("{} {}", t.binary, t.name)).collect();
    for d in cargo_sfl::select::differences(&a, &b) {
        if on_varying(&d) {
            found.varying.push(d);
        } else if on_test(&d, &reused) {
            found.counted.push(format!("{d} [row reused by the selected run]"));
        } else if on_test(&d, &ran) {
            found.varying.push(format!("{d} [ran in both runs]"));
        } else {
            found.counted.push(d);
        }
    }
    // A volatile test (random inputs) is compared by its outcome alone; a change of its lines
    // is the sample's, and moves the summary and the ranking as a varying test does.
    found.varying.extend(volatile_rows_differ(&a, &b));
    let mut report = Vec::new();
    summary_differences(&selected.report, &full.report, &mut report);
    ranking_differences(&selected.report, &full.report, &mut report);
    // A varying test that differed can move any count or entry: not the selection's doing.
    if found.varying.is_empty() {
        found.counted.extend(report);
    } else {
        found.varying.extend(report);
    }
    found
}

/// The JSON reports' summary counts, but `reused` (which only the selected run has).
fn summary_differences(a: &Value, b: &Value, out: &mut Vec<String>) {
    let (Some(a), Some(b)) = (a["summary"].as_object(), b["summary"].as_object()) else {
        if a.is_null() != b.is_null() {
            out.push(format!(
                "only the {} wrote a JSON report",
                if a.is_null() { "--rerun" } else { "selected run" }
            ));
        }
        return;
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for k in keys.into_iter().filter(|k| *k != "reused") {
        if a.get(k) != b.get(k) {
            out.push(format!(
                "summary {k}: {} selected, {} with --rerun",
                a.get(k).unwrap_or(&Value::Null),
                b.get(k).unwrap_or(&Value::Null)
            ));
        }
    }
}

/// The default measure's ranking of both reports, entry by entry (lines, members, counts,
/// score, rank): the first entry that differs and the lengths.
fn ranking_differences(a: &Value, b: &Value, out: &mut Vec<String>) {
    let entries = |r: &Value| -> Vec<Value> {
        r["rankings"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["measure"] == cargo_sfl::measures::DEFAULT))
            .and_then(|r| r["units"].as_array().cloned())
            .unwrap_or_default()
    };
    let (x, y) = (entries(a), entries(b));
    if x.len() != y.len() {
        out.push(format!(
            "ranking: {} entries selected, {} with --rerun",
            x.len(),
            y.len()
        ));
    }
    if let Some(i) = x.iter().zip(&y).position(|(p, q)| p != q) {
        out.push(format!(
            "ranking: entry {} is {} selected, {} with --rerun",
            i + 1,
            entry(&x[i]),
            entry(&y[i])
        ));
    }
}

/// An entry of a JSON ranking in one line: `file:line (+N members) score S rank R ef/ep`.
fn entry(e: &Value) -> String {
    let members = e["members"].as_array().map_or(0, Vec::len);
    format!(
        "{}:{}{} score {} rank {} ef {} ep {}",
        e["file"].as_str().unwrap_or("?"),
        e["line"],
        if members > 0 {
            format!(" (group of {members})")
        } else {
            String::new()
        },
        e["score"],
        e["rank"],
        e["ef"],
        e["ep"]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "fn a(x: u32) -> u32 {\n    let y = x + 1;\n    b(y);\n    if y > 2 { c(); }\n    y\n}\n";

    #[test]
    fn a_statement_is_added_before_the_first_statement_a_test_ran() {
        let (line, new) = added_statement(SRC, &[2, 3, 4]).unwrap();
        assert_eq!(line, 3);
        assert_eq!(new, SRC.replacen("    b(y)", "    let _ = 0;\n    b(y)", 1));
        assert!(cargo_sfl::mutate::sites::mutants(&new, &[]).is_some(), "{new}");
        // Line 4's `c();` does not start its line: never taken.
        assert!(added_statement(SRC, &[4]).is_none());
        assert!(added_statement(SRC, &[5]).is_none());
    }

    #[test]
    fn the_outside_edit_keeps_every_line_and_parses() {
        let new = outside(SRC.trim_end());
        assert!(new.starts_with(SRC));
        assert!(cargo_sfl::mutate::sites::mutants(&new, &[]).is_some(), "{new}");
    }

    fn report(entries: Value, units: u32) -> Value {
        json!({
            "summary": {"tests": 3, "units": units, "reused": 1},
            "rankings": [{"measure": cargo_sfl::measures::DEFAULT, "units": entries}],
        })
    }

    #[test]
    fn reports_compare_by_summary_and_default_ranking() {
        let e = |line: u32, score: f64| json!({"file": "src/lib.rs", "line": line, "score": score, "rank": 1.0, "ef": 1, "ep": 0});
        let a = report(json!([e(2, 1.0), e(3, 0.5)]), 10);
        let mut b = report(json!([e(2, 1.0), e(3, 0.5)]), 10);
        b["summary"]["reused"] = json!(0);
        let mut out = Vec::new();
        summary_differences(&a, &b, &mut out);
        ranking_differences(&a, &b, &mut out);
        assert!(out.is_empty(), "{out:?}");
        let c = report(json!([e(2, 1.0), e(4, 0.5), e(5, 0.1)]), 12);
        summary_differences(&a, &c, &mut out);
        ranking_differences(&a, &c, &mut out);
        assert_eq!(
            out,
            [
                "summary units: 10 selected, 12 with --rerun",
                "ranking: 2 entries selected, 3 with --rerun",
                "ranking: entry 2 is src/lib.rs:3 score 0.5 rank 1.0 ef 1 ep 0 selected, src/lib.rs:4 score 0.5 rank 1.0 ef 1 ep 0 with --rerun",
            ]
        );
    }
}
