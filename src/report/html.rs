//! The HTML report (`--format html --output DIR`): one self-contained page, no network; its
//! style, markup and script are the files in `html/`.
//!
//! It holds the failing tests, a ranking table switchable between measures, every file with
//! a failing-test line as a Tarantula-coloured heat map (per line: which tests ran it), and a
//! "not the bug" button that applies Doric's cl-u update in the page: the refuted entry leaves
//! the explanations of the failing tests that ran it, cl is recomputed (in log space, as in
//! [`crate::analysis`]) and the page re-ranks and says what it assumed.

use std::collections::BTreeMap;

use super::disk::Sources;
use super::model::{Group, Report};
use super::text::{spans, test_label};
use super::view::{Conventions, View};
use crate::bitset::BitSet;
use crate::spectra::Spectra;

mod model;
use model::{PageData, PageEntry, PageFile, PageFunction, PageGroup, PageRanking, PageTest};

/// Passing tests listed per line (the rest are counted).
const PASSING_SHOWN: usize = 20;

/// The page's name in the `--output` directory.
pub(super) const FILE_NAME: &str = "index.html";

const STYLE: &str = include_str!("html/page.css");
const BODY: &str = include_str!("html/body.html");
const SCRIPT: &str = include_str!("html/page.js");

/// What the groups of every ranking are described against: the failing and passing tests,
/// each failing test's position among the failing ones, each file's index in `files`.
struct Basis<'a> {
    spectra: &'a Spectra,
    view: &'a View<'a>,
    fail: BitSet,
    pass: BitSet,
    position: BTreeMap<usize, usize>,
    file_index: BTreeMap<&'a str, usize>,
}

/// The page's data: everything the script needs.
fn data<'a>(report: &'a Report, view: &'a View<'a>, sources: &'a Sources) -> PageData<'a> {
    let s = report.spectra;
    let fail = s.failing_mask();
    let failing: Vec<usize> = (0..s.tests.len()).filter(|&t| fail.contains(t)).collect();
    let basis = Basis {
        spectra: s,
        view,
        pass: s.passing_mask(),
        position: failing.iter().enumerate().map(|(i, &t)| (t, i)).collect(),
        file_index: file_index(report),
        fail,
    };
    let mut files: Vec<(&str, usize)> = basis.file_index.iter().map(|(f, &i)| (*f, i)).collect();
    files.sort_by_key(|&(_, i)| i);
    // Each unit's group among the report's, -1 for none.
    let mut group_of = vec![-1i64; s.units.len()];
    for (g, group) in report.groups.iter().enumerate() {
        for &u in &group.lines {
            group_of[u] = g as i64;
        }
    }
    PageData {
        summary: &report.summary,
        conventions: Conventions::of(&view.opts),
        diff_base: view.diff_base,
        tests: s.tests.iter().map(page_test).collect(),
        rho: rho(&basis, failing.len()),
        failing,
        files: files
            .iter()
            .map(|&(path, _)| PageFile {
                path,
                lines: sources.lines(path),
            })
            .collect(),
        units: units(&basis, &group_of),
        groups: groups(&basis, &report.groups, false),
        rankings: report
            .rankings
            .iter()
            .map(|r| PageRanking {
                measure: r.measure.name,
                formula: r.measure.formula,
                citation: r.measure.citation,
                probability: r.measure.is_probability(),
                entries: r
                    .entries
                    .iter()
                    .map(|x| PageEntry {
                        g: x.group,
                        score: x.shown_score(),
                        log10: x.log10,
                        rank: x.rank,
                        certain: x.certain,
                        changed: x.changed_lines.contains(&x.shown_at()),
                        panicked: x.panicked,
                        at: (x.shown_at() != x.lead())
                            .then(|| {
                                let unit = &s.units[x.shown_at()];
                                basis.file_index.get(unit.file.as_str()).map(|&f| (f, unit.line))
                            })
                            .flatten(),
                    })
                    .collect(),
                // Each own group with the report's group it is part of (what "not the bug"
                // refutes).
                groups: r.own_groups.as_deref().map(|own| groups(&basis, own, true)),
                functions: page_functions(&basis, r),
            })
            .collect(),
    }
}

/// Functions first: the top functions of `r`, each with its heading and first entries, each
/// entry at its first line in the function (as the terminal report shows it), not at the lead
/// line of its whole entry, which may be another function's.
fn page_functions(basis: &Basis, r: &super::model::Ranking) -> Option<Vec<PageFunction>> {
    let (s, view) = (basis.spectra, basis.view);
    let (blocks, names) = view.functions(r)?;
    let shown = blocks.iter().take(view.top).map(|b| {
        let first = b.entries.iter().take(crate::rank::functions::LINES_SHOWN);
        PageFunction {
            label: super::human::function_heading(s, b, names),
            entries: first.clone().map(|(e, _)| *e).collect(),
            at: first
                .clone()
                .map(|(_, us)| {
                    let unit = &s.units[us[0]];
                    basis.file_index.get(unit.file.as_str()).map(|&f| (f, unit.line))
                })
                .collect(),
            changed: first
                .map(|(e, us)| r.entries[*e].changed_lines.contains(&us[0]))
                .collect(),
        }
    });
    Some(shown.collect())
}

/// Files with a line some failing test ran, numbered in the order the groups reach them.
fn file_index<'a>(report: &Report<'a>) -> BTreeMap<&'a str, usize> {
    let units = &report.spectra.units;
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for g in &report.groups {
        for u in g.in_code_order() {
            if units[u].name().is_none() {
                let n = index.len();
                index.entry(units[u].file.as_str()).or_insert(n);
            }
        }
    }
    index
}

fn page_test(t: &crate::spectra::TestRecord) -> PageTest<'_> {
    PageTest {
        name: test_label(t),
        outcome: t.outcome.as_str(),
        runs: t.runs(),
        message: t.message.as_deref(),
        stack: t
            .stack
            .iter()
            .map(|f| (f.file.as_str(), f.line, f.function.as_str()))
            .collect(),
    }
}

/// ρ_k of each of the `failing` tests: units it runs (all of them, as cl counts them).
fn rho(basis: &Basis, failing: usize) -> Vec<usize> {
    let mut rho = vec![0usize; failing];
    for col in &basis.spectra.coverage {
        for t in col.ones_and(&basis.fail) {
            rho[basis.position[&t]] += 1;
        }
    }
    rho
}

/// Every unit of the files shown: (file, line, group or -1, ef, ep).
fn units(basis: &Basis, group_of: &[i64]) -> Vec<(usize, u32, i64, u32, u32)> {
    let s = basis.spectra;
    s.units
        .iter()
        .enumerate()
        .filter_map(|(u, unit)| {
            let &f = basis.file_index.get(unit.file.as_str())?;
            let col = &s.coverage[u];
            Some((
                f,
                unit.line,
                group_of[u],
                col.count_and(&basis.fail),
                col.count_and(&basis.pass),
            ))
        })
        .collect()
}

/// Each group: its label, units, counts, the failing tests (positions in `failing`) and the
/// first passing tests that ran it; a ranking's `own` groups with the report's group each is
/// part of.
fn groups(basis: &Basis, groups: &[Group], own: bool) -> Vec<PageGroup> {
    let s = basis.spectra;
    groups
        .iter()
        .map(|g| {
            let units = g.in_code_order();
            // The line the other reports lead with (none for imported units).
            let lead = &s.units[g.lead()];
            let col = &s.coverage[units[0]];
            let passes: Vec<usize> = col.ones_and(&basis.pass).collect();
            PageGroup {
                label: label(basis, &units, &lead.file),
                lead: lead
                    .name()
                    .is_none()
                    .then(|| (basis.file_index[lead.file.as_str()], lead.line)),
                ef: g.counts.ef,
                ep: g.counts.ep,
                nf: g.counts.nf,
                np: g.counts.np,
                fail: col.ones_and(&basis.fail).map(|t| basis.position[&t]).collect(),
                pass: passes.iter().take(PASSING_SHOWN).copied().collect(),
                pass_more: passes.len().saturating_sub(PASSING_SHOWN),
                base: own.then(|| g.base.map_or(-1, |b| b as i64)),
                units,
            }
        })
        .collect()
}

/// A group's label: an imported unit's name, its functions with their extents, or its lines'
/// spans (the lead line's file first).
fn label(basis: &Basis, units: &[usize], lead_file: &str) -> String {
    let s = basis.spectra;
    if let Some(name) = s.units[units[0]].name() {
        return name.to_string();
    }
    if basis.view.function_names.is_some() {
        return units
            .iter()
            .filter_map(|&u| {
                basis
                    .view
                    .function(s, u)
                    .map(|(n, at)| (s.units[u].file.as_str(), n, at))
            })
            .map(|(file, name, at)| format!("{name} {file}:{at}"))
            .collect::<Vec<_>>()
            .join(", ");
    }
    let spans = spans(units, &s.units);
    spans
        .iter()
        .filter(|fs| fs.file == lead_file)
        .chain(spans.iter().filter(|fs| fs.file != lead_file))
        .map(|fs| format!("{}:{}", fs.file, fs.runs()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The whole page.
pub(super) fn page(report: &Report, view: &View, sources: &Sources) -> String {
    // `</` would end the script element early; JSON allows `<\/`.
    let data = serde_json::to_string(&data(report, view, sources))
        .expect("the page's data serialises")
        .replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>cargo sfl report</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{BODY}\
         <script type=\"application/json\" id=\"data\">{data}</script>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n"
    )
}
