//! `cargo sfl measures`: the catalogue of measures, in words or as
//! `cargo-sfl-measures/v1` JSON.

use std::fmt::Write as _;

use serde::Serialize;

use crate::measures::Measure;

/// `cargo sfl measures`: the catalogue in words.
pub fn human() -> String {
    let mut out = String::new();
    let all: Vec<&Measure> = crate::measures::all().collect();
    let _ = writeln!(
        out,
        "{} measures ({} spectrum-based, {} from Doric, {} over control-flow edges, {} with panic stacks first, {} combining them). Default: {}.\n",
        all.len(),
        crate::measures::catalogue::SPECTRUM.len(),
        crate::measures::DORIC.len(),
        crate::measures::CFG.len(),
        crate::measures::STACK_FIRST.len(),
        crate::measures::COMBINED.len(),
        crate::measures::DEFAULT
    );
    for m in all {
        let mut tags = Vec::new();
        if let Some(g) = m.group {
            tags.push(format!("group {g}"));
        }
        if let Some(c) = m.cloning {
            tags.push(format!("cloning: {}", c.as_str()));
        }
        if !m.aliases.is_empty() {
            tags.push(format!("also: {}", m.aliases.join(", ")));
        }
        let tags = if tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", tags.join("; "))
        };
        let _ = writeln!(out, "{}{tags}\n    {}\n    {}", m.name, m.formula, m.citation);
    }
    out
}

#[derive(Serialize)]
struct JsonCatalogue {
    schema: &'static str,
    measures: Vec<JsonMeasure>,
}

#[derive(Serialize)]
struct JsonMeasure {
    name: &'static str,
    aliases: &'static [&'static str],
    formula: &'static str,
    citation: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cloning: Option<&'static str>,
    probability: bool,
}

/// `cargo sfl measures --format json`.
pub fn json() -> String {
    let list: Vec<JsonMeasure> = crate::measures::all()
        .map(|m| JsonMeasure {
            name: m.name,
            aliases: m.aliases,
            formula: m.formula,
            citation: m.citation,
            group: m.group,
            cloning: m.cloning.map(|c| c.as_str()),
            probability: m.is_probability(),
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&JsonCatalogue {
        schema: "cargo-sfl-measures/v1",
        measures: list,
    })
    .expect("catalogue serialises");
    s.push('\n');
    s
}
