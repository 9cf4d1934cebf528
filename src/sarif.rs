//! SARIF 2.1.0 output (`--format sarif`) for editors and code scanning: one result per top-N
//! entry of each measure, one rule per measure.
//!
//! Paths are relative to the repository root (the git top level, else the workspace root) with
//! `uriBaseId: SRCROOT`; each result carries the measure's score, rank and probability, the
//! failing tests as related locations (at their panic site when the message names one), and a
//! `partialFingerprints` entry that depends on the file and the text of the lines, not on line
//! numbers, so it survives unrelated edits.

use std::path::{Path, PathBuf};

use md5::{Digest, Md5};
use serde_json::{Value, json};

use crate::analysis::Analysis;
use crate::coverage::hex;
use crate::rank::{Ranked, Ranking};
use crate::report::{Sources, View, conventions, fmt_score, spans, test_label};

/// The SARIF schema URI written into `$schema`.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The directory SARIF paths are relative to, and the workspace's path inside it.
fn repository_root(workspace: &Path) -> (PathBuf, String) {
    let top = std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(workspace)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match top {
        Some(top) => {
            let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
            let prefix = canon(workspace)
                .strip_prefix(canon(&top))
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            (
                top,
                if prefix.is_empty() {
                    prefix
                } else {
                    format!("{prefix}/")
                },
            )
        }
        None => (workspace.to_path_buf(), String::new()),
    }
}

/// A `file://` URI for a directory, with the trailing slash SARIF requires of base URIs.
fn dir_uri(dir: &Path) -> String {
    let mut s = dir.to_string_lossy().replace('\\', "/");
    if !s.ends_with('/') {
        s.push('/');
    }
    let s: String = s
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    if s.starts_with('/') {
        format!("file://{s}")
    } else {
        format!("file:///{s}")
    }
}

fn rule_id(name: &str) -> String {
    format!("sfl/{name}")
}

/// `panicked at src/lib.rs:30:9:` → (`src/lib.rs`, 30, 9).
fn panic_site(message: &str) -> Option<(String, u32, u32)> {
    let rest = message.lines().find_map(|l| l.trim().strip_prefix("panicked at "))?;
    let rest = rest.trim_end_matches(':');
    let mut parts = rest.rsplitn(3, ':');
    let col = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_string(), line, col))
}

/// The SARIF log (pretty-printed).
pub fn sarif(a: &Analysis, rankings: &[Ranking], view: &View) -> String {
    let top = view.top;
    let spectra = a.spectra;
    let workspace = Path::new(&spectra.workspace_root);
    let (repo, prefix) = repository_root(workspace);
    let mut sources = Sources::new(workspace);
    let failing: Vec<&crate::spectra::TestRecord> = spectra.tests.iter().filter(|t| t.outcome.is_failing()).collect();

    // Failing tests, as related locations shared by every result.
    let related: Vec<Value> = failing
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let first = t.message.as_deref().and_then(|m| m.lines().last()).unwrap_or("");
            let mut loc = json!({
                "id": i + 1,
                "message": {"text": format!("Failing test ({}) {}: {}", t.outcome.as_str(), test_label(t), first.trim())},
                "logicalLocations": [{"fullyQualifiedName": format!("{}::{}", t.binary, t.name), "kind": "function"}],
            });
            let site = t.message.as_deref().and_then(panic_site);
            if let Some((file, line, col)) = site.filter(|(f, _, _)| !f.starts_with('/') && workspace.join(f).is_file()) {
                loc["physicalLocation"] = json!({
                    "artifactLocation": {"uri": format!("{prefix}{file}"), "uriBaseId": "SRCROOT"},
                    "region": {"startLine": line, "startColumn": col},
                });
            }
            loc
        })
        .collect();

    let rules: Vec<Value> = rankings
        .iter()
        .map(|r| {
            let m = r.measure;
            let reading = if m.is_probability() {
                "The score is a probability (Doric)."
            } else {
                "Higher scores are more suspicious; only the order matters."
            };
            json!({
                "id": rule_id(m.name),
                "name": m.name,
                "shortDescription": {"text": format!("Line the failing tests point at, by the {} measure.", m.name)},
                "fullDescription": {"text": format!("{}: {}.", m.name, m.formula)},
                "help": {
                    "text": format!(
                        "cargo sfl ranks the lines that failing tests ran by the {} measure ({}). {} \
                         Inspect the listed lines from the top; lines with identical coverage are one entry. Source: {}.",
                        m.name, m.formula, reading, m.citation
                    ),
                    "markdown": format!(
                        "**{}** — `{}`\n\n{} Inspect the listed lines from the top; lines with identical coverage are one entry.\n\nSource: {}.",
                        m.name, m.formula, reading, m.citation
                    ),
                },
                "defaultConfiguration": {"level": "warning"},
                "properties": {"formula": m.formula, "citation": m.citation, "probability": m.is_probability()},
            })
        })
        .collect();

    let mut results = Vec::new();
    for (rule_index, r) in rankings.iter().enumerate() {
        for x in r.entries.iter().take(top) {
            results.push(result(a, r, rule_index, x, &prefix, &mut sources, &related));
        }
    }

    let log = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cargo-sfl",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "originalUriBaseIds": {"SRCROOT": {"uri": dir_uri(&repo)}},
            "invocations": [{"executionSuccessful": true}],
            "properties": {
                "tests": spectra.tests.len(),
                "failingTests": failing.len(),
                "allFailingCore": a.core_units(),
                "conventions": serde_json::to_value(conventions(&view.opts)).expect("serialisable"),
                "diffBase": view.diff_base,
            },
            "results": results,
        }],
    });
    let mut s = serde_json::to_string_pretty(&log).expect("SARIF serialises");
    s.push('\n');
    s
}

fn result(
    a: &Analysis,
    r: &Ranking,
    rule_index: usize,
    x: &Ranked,
    prefix: &str,
    sources: &mut Sources,
    related: &[Value],
) -> Value {
    let units = &a.spectra.units;
    let group = &a.groups[x.group].units;
    let first = &units[group[0]];
    let m = r.measure;
    let c = x.counts;
    let what = if m.is_probability() { "probability" } else { "score" };
    let mut text = format!(
        "Suspicious line: {} {what} {} (rank {} of {} entries). Run by {} of {} failing tests and {} of {} passing tests.",
        m.name,
        fmt_score(m, x),
        x.rank,
        r.entries.len(),
        c.ef,
        c.ef + c.nf,
        c.ep,
        c.ep + c.np
    );
    if x.certain {
        text.push_str(" A failing test ran this line and nothing else.");
    }
    if group.len() > 1 {
        text.push_str(&format!(
            " {} more lines run exactly alike and cannot be told apart.",
            group.len() - 1
        ));
    }
    // Stable across line moves: the rule, the file and the text of the entry's lines.
    let mut md5 = Md5::new();
    md5.update(rule_id(m.name).as_bytes());
    for &u in group {
        let unit = &units[u];
        md5.update(unit.file.as_bytes());
        md5.update([0]);
        md5.update(sources.line(&unit.file, unit.line).unwrap_or("").trim().as_bytes());
        md5.update([0]);
    }
    let fingerprint = hex(&md5.finalize());

    let mut properties = json!({
        "measure": m.name,
        "score": x.score,
        "rank": x.rank,
        "lineRank": x.line_rank,
        "ef": c.ef, "ep": c.ep, "nf": c.nf, "np": c.np,
        "lines": group.len(),
    });
    if m.is_probability() {
        properties["probability"] = json!(x.score);
        properties["log10Probability"] = json!(x.log10);
    }
    if x.certain {
        properties["certain"] = json!(true);
    }
    if x.changed {
        properties["changed"] = json!(true);
        text.push_str(" This line changed in the change under test.");
    }

    let (location, others) = match first.name() {
        Some(name) => (json!({"logicalLocations": [{"fullyQualifiedName": name}]}), Vec::new()),
        None => {
            // The first run of consecutive lines is the region; the rest are related locations.
            let mut end = first.line;
            for w in group.windows(2) {
                if w[1] == w[0] + 1 && units[w[1]].file == first.file {
                    end = units[w[1]].line;
                } else {
                    break;
                }
            }
            let physical = |file: &str, start: u32, end: u32| {
                json!({
                    "artifactLocation": {"uri": format!("{prefix}{file}"), "uriBaseId": "SRCROOT"},
                    "region": {"startLine": start, "endLine": end},
                })
            };
            let mut others = Vec::new();
            let all = spans(group, units);
            for (file, runs) in &all {
                for run in runs.split(',') {
                    let (s, e) = run.split_once('-').unwrap_or((run, run));
                    let (s, e): (u32, u32) = (s.parse().unwrap_or(0), e.parse().unwrap_or(0));
                    if *file == first.file && s == first.line {
                        continue;
                    }
                    others.push(json!({
                        "id": related.len() + others.len() + 1,
                        "message": {"text": "Runs exactly like the reported line."},
                        "physicalLocation": physical(file, s, e),
                    }));
                }
            }
            (
                json!({"physicalLocation": physical(&first.file, first.line, end)}),
                others,
            )
        }
    };
    let mut related_all: Vec<Value> = related.to_vec();
    related_all.extend(others);
    json!({
        "ruleId": rule_id(m.name),
        "ruleIndex": rule_index,
        "level": if x.rank <= 1.0 { "warning" } else { "note" },
        "message": {"text": text},
        "locations": [location],
        "relatedLocations": related_all,
        "partialFingerprints": {"cargoSflLines/v1": fingerprint},
        "properties": properties,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_sites_are_read_from_libtest_messages() {
        assert_eq!(
            panic_site("panicked at src/lib.rs:30:9:\nleast = 1"),
            Some(("src/lib.rs".into(), 30, 9))
        );
        assert_eq!(panic_site("exit status 1"), None);
    }

    #[test]
    fn base_uris_are_file_uris_with_a_trailing_slash() {
        assert_eq!(dir_uri(Path::new("/tmp/a b")), "file:///tmp/a%20b/");
    }
}
