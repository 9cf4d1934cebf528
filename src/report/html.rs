//! The HTML report (`--format html --output DIR`): one self-contained page, no network; its
//! style, markup and script are the files in `html/`.
//!
//! It holds the failing tests, a ranking table switchable between measures, every file with
//! a failing-test line as a Tarantula-coloured heat map (per line: which tests ran it), and a
//! "not the bug" button that applies Doric's cl-u update in the page: the refuted entry leaves
//! the explanations of the failing tests that ran it, cl is recomputed (in log space, as in
//! [`crate::analysis`]) and the page re-ranks and says what it assumed.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::{Conventions, Summary, View, spans, test_label};
use crate::analysis::Analysis;
use crate::bitset::BitSet;
use crate::rank::Ranking;

/// Passing tests listed per line (the rest are counted).
const PASSING_SHOWN: usize = 20;

/// The page's name in the `--output` directory.
pub(super) const FILE_NAME: &str = "index.html";

const STYLE: &str = include_str!("html/page.css");
const BODY: &str = include_str!("html/body.html");
const SCRIPT: &str = include_str!("html/page.js");

/// The page's data: everything the script needs, as JSON.
fn data(a: &Analysis, rankings: &[Ranking], view: &View) -> Value {
    let s = a.spectra;
    let fail = s.failing_mask();
    let pass = s.passing_mask();
    let failing: Vec<usize> = a.failing.clone();
    let position: BTreeMap<usize, usize> = failing.iter().enumerate().map(|(i, &t)| (t, i)).collect();

    // Files with a line some failing test ran, with their source text.
    let mut file_index: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &a.groups {
        for &u in &g.units {
            if s.units[u].name().is_none() {
                let n = file_index.len();
                file_index.entry(s.units[u].file.as_str()).or_insert(n);
            }
        }
    }
    let mut files: Vec<(&str, usize)> = file_index.iter().map(|(f, &i)| (*f, i)).collect();
    files.sort_by_key(|&(_, i)| i);
    let root = Path::new(&s.workspace_root);
    let files_json: Vec<Value> = files
        .iter()
        .map(|(f, _)| {
            let text = match s.may_show(f) {
                true => std::fs::read_to_string(root.join(f)).unwrap_or_default(),
                false => String::new(),
            };
            json!({"path": f, "lines": text.lines().collect::<Vec<_>>()})
        })
        .collect();

    // Every unit of those files: [file, line, group or -1, ef, ep].
    let mut group_of = vec![-1i64; s.units.len()];
    for (g, group) in a.groups.iter().enumerate() {
        for &u in &group.units {
            group_of[u] = g as i64;
        }
    }
    let units: Vec<Value> = s
        .units
        .iter()
        .enumerate()
        .filter_map(|(u, unit)| {
            let &f = file_index.get(unit.file.as_str())?;
            let col = &s.coverage[u];
            Some(json!([
                f,
                unit.line,
                group_of[u],
                col.count_and(&fail),
                col.count_and(&pass)
            ]))
        })
        .collect();

    let shared = groups(a, view, &fail, &pass, &position, &file_index);

    // ρ_k of each failing test: units it runs (all of them, as cl counts them).
    let mut rho = vec![0usize; failing.len()];
    for col in &s.coverage {
        for t in col.ones_and(&fail) {
            rho[position[&t]] += 1;
        }
    }

    json!({
        "summary": Summary::of(a),
        "conventions": Conventions::of(&view.opts),
        "diffBase": view.diff_base,
        "tests": s.tests.iter().map(|t| json!({
            "name": test_label(t),
            "outcome": t.outcome.as_str(),
            "runs": t.runs(),
            "message": t.message,
            "stack": t.stack.iter().map(|f| json!([f.file, f.line, f.function])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "failing": failing,
        "rho": rho,
        "files": files_json,
        "units": units,
        "groups": shared,
        "rankings": rankings.iter().map(|r| {
            let mut ranking = json!({
                "measure": r.measure.name,
                "formula": r.measure.formula,
                "citation": r.measure.citation,
                "probability": r.measure.is_probability(),
                "entries": r.entries.iter().map(|x| json!({
                    "g": x.group, "score": x.shown_score(), "log10": x.log10, "rank": x.rank,
                    "certain": x.certain, "changed": x.changed, "panicked": x.panicked,
                })).collect::<Vec<_>>(),
            });
            // A measure whose groups are its own (CP's, split by its scores) carries them, each
            // with the shared group it is part of (what "not the bug" refutes).
            if !std::ptr::eq(r.analysis, a) {
                let mut own = groups(r.analysis, view, &fail, &pass, &position, &file_index);
                for (g, value) in own.iter_mut().enumerate() {
                    value["base"] = json!(group_of[r.analysis.groups[g].units[0]]);
                }
                ranking["groups"] = json!(own);
            }
            ranking
        }).collect::<Vec<_>>(),
    })
}

/// Each group: its label, units, counts, the failing tests (positions in `failing`) and the
/// first passing tests that ran it.
fn groups(
    a: &Analysis,
    view: &View,
    fail: &BitSet,
    pass: &BitSet,
    position: &BTreeMap<usize, usize>,
    file_index: &BTreeMap<&str, usize>,
) -> Vec<Value> {
    let s = a.spectra;
    a.groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            // The line the other reports lead with: [file, line] (none for imported units).
            let lead = s.units[a.lead(i)].name().is_none().then(|| {
                let unit = &s.units[a.lead(i)];
                json!([file_index[unit.file.as_str()], unit.line])
            });
            let col = &s.coverage[g.units[0]];
            let fails: Vec<usize> = col.ones_and(fail).map(|t| position[&t]).collect();
            let passes: Vec<usize> = col.ones_and(pass).collect();
            let label = match s.units[g.units[0]].name() {
                Some(name) => name.to_string(),
                None if view.function_names.is_some() => g
                    .units
                    .iter()
                    .filter_map(|&u| view.function(a, u).map(|(n, at)| (s.units[u].file.as_str(), n, at)))
                    .map(|(file, name, at)| format!("{name} {file}:{at}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                // The lead line's file first.
                None => spans(&g.units, &s.units)
                    .iter()
                    .filter(|fs| fs.file == s.units[a.lead(i)].file)
                    .chain(
                        spans(&g.units, &s.units)
                            .iter()
                            .filter(|fs| fs.file != s.units[a.lead(i)].file),
                    )
                    .map(|fs| format!("{}:{}", fs.file, fs.runs()))
                    .collect::<Vec<_>>()
                    .join(" "),
            };
            json!({
                "label": label,
                "lead": lead,
                "units": g.units,
                "ef": g.counts.ef, "ep": g.counts.ep, "nf": g.counts.nf, "np": g.counts.np,
                "fail": fails,
                "pass": passes.iter().take(PASSING_SHOWN).collect::<Vec<_>>(),
                "passMore": passes.len().saturating_sub(PASSING_SHOWN),
            })
        })
        .collect()
}

/// The whole page.
pub(super) fn page(a: &Analysis, rankings: &[Ranking], view: &View) -> String {
    // `</` would end the script element early; JSON allows `<\/`.
    let data = data(a, rankings, view).to_string().replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>cargo sfl report</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{BODY}\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}
