//! The benchmark's faulty versions: cargo-mutants' mutations applied to a working copy of a
//! crate, and each version's cached record.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use cargo_sfl::faults::Fault;
use cargo_sfl::spectra::Spectra;
use serde::{Deserialize, Serialize};

use crate::fetch_crate;

/// One mutation, as cargo-mutants lists it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Mutation {
    pub file: String,
    pub start: (u32, u32),
    pub end: (u32, u32),
    pub replacement: String,
    pub genre: String,
    pub function: String,
}

/// A faulty version and what happened when its tests ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub id: String,
    pub krate: String,
    pub mutations: Vec<Mutation>,
    /// `failing` (kept), `survived` (no test failed), `unviable` (did not build), `error`.
    pub status: String,
    /// The faults' lines in the mutated files.
    pub faults: Vec<Fault>,
    pub seconds: f64,
}

pub(crate) fn offset(text: &str, (line, col): (u32, u32)) -> Option<usize> {
    let mut start = 0;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let rest = &text[start..];
    let chars = rest.char_indices().nth(col as usize - 1).map_or(rest.len(), |(i, _)| i);
    Some(start + chars)
}

/// Applies mutations of one file (bottom first) and returns the new text and each mutation's
/// lines in the new text.
pub fn apply(text: &str, muts: &[&Mutation]) -> Option<(String, Vec<Vec<u32>>)> {
    let mut order: Vec<usize> = (0..muts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(muts[i].start));
    let mut out = text.to_string();
    for &i in &order {
        let m = muts[i];
        let (a, b) = (offset(text, m.start)?, offset(text, m.end)?);
        if a > b {
            return None;
        }
        out.replace_range(a..b, &m.replacement);
    }
    // New coordinates: a mutation moves up by the lines removed by mutations above it.
    let removed = |m: &Mutation| (m.end.0 - m.start.0) as i64 - m.replacement.matches('\n').count() as i64;
    let lines = muts
        .iter()
        .map(|m| {
            let shift: i64 = muts.iter().filter(|o| o.end.0 < m.start.0).map(|o| removed(o)).sum();
            let start = (m.start.0 as i64 - shift) as u32;
            (start..=start + m.replacement.matches('\n').count() as u32).collect()
        })
        .collect();
    Some((out, lines))
}

/// Line `line` of a mutated file in the original file's coordinates (`muts`: that file's
/// mutations): lines above a mutation keep their number, the lines of a replacement map onto
/// the mutation's original lines (the last one takes the rest), and lines below move back by
/// what the replacements above them removed.
pub fn original_line(line: u32, muts: &[&Mutation]) -> u32 {
    let mut sorted = muts.to_vec();
    sorted.sort_by_key(|m| m.start);
    let (mut offset, l) = (0i64, i64::from(line));
    for m in sorted {
        let added = m.replacement.matches('\n').count() as i64;
        let start = i64::from(m.start.0) + offset;
        if l < start {
            break;
        }
        if l <= start + added {
            return (i64::from(m.start.0) + (l - start)).min(i64::from(m.end.0)) as u32;
        }
        offset += added - i64::from(m.end.0 - m.start.0);
    }
    (l - offset) as u32
}

/// The spectra with each mutated file's line facts (kind, operators) read from the original
/// text in `pristine`: what a ranking that reads lines sees of a real bug, whose text is not
/// cargo-mutants' replacement (`Some(-1)`, `!`, a body on the signature line). Coverage,
/// backtraces and everything else stay the mutant's run's.
pub fn with_original_text(spectra: &Spectra, pristine: &Path, muts: &[Mutation]) -> Spectra {
    let mut out = spectra.clone();
    let Some(facts) = out.facts.as_mut() else {
        return out;
    };
    let mut files: Vec<&str> = muts.iter().map(|m| m.file.as_str()).collect();
    files.dedup();
    for file in files {
        let Ok(text) = std::fs::read_to_string(pristine.join(file)) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        let here: Vec<&Mutation> = muts.iter().filter(|m| m.file == file).collect();
        for (u, unit) in spectra.units.iter().enumerate().filter(|(_, x)| x.file == file) {
            let original = lines.get(original_line(unit.line, &here) as usize - 1).copied();
            let (kind, operates) = cargo_sfl::evidence::read_line(original);
            match kind {
                cargo_sfl::evidence::LineKind::Structural => facts.structural.insert(u),
                cargo_sfl::evidence::LineKind::Behavioural => facts.structural.remove(u),
            }
            if operates {
                facts.operates.insert(u);
            } else {
                facts.operates.remove(u);
            }
        }
    }
    out
}

/// A version's identity: its mutations, whatever the file it is cached in is called.
pub(crate) fn identity(muts: &[Mutation]) -> String {
    serde_json::to_string(muts).expect("mutations serialise")
}

/// Every cached record of a crate (one per distinct version), in id order.
pub fn cached_records(dir: &Path) -> Vec<Record> {
    let mut records: Vec<Record> = cached(dir).into_values().collect();
    records.sort_by(|a, b| a.id.cmp(&b.id));
    records
}

/// Every cached record of a crate, by identity.
pub(crate) fn cached(dir: &Path) -> BTreeMap<String, Record> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return BTreeMap::new();
    };
    entries
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            (n.starts_with("single-") || n.starts_with("multi"))
                && n.ends_with(".json")
                && !n.ends_with(".spectra.json")
        })
        .filter_map(|e| serde_json::from_slice::<Record>(&std::fs::read(e.path()).ok()?).ok())
        .fold(BTreeMap::new(), |mut by_id, r| {
            // A version run again (e.g. for edge profiles) has two records: keep the one whose
            // spectra have edges.
            let has_edges = |r: &Record| saved_with_edges(&dir.join(format!("{}.spectra.json", r.id)));
            let key = identity(&r.mutations);
            let keep_old = by_id
                .get(&key)
                .is_some_and(|old: &Record| has_edges(old) || !has_edges(&r));
            if !keep_old {
                by_id.insert(key, r);
            }
            by_id
        })
}

/// Whether saved spectra have edge profiles: inline (`"edges":{…}`, older files) or deflated
/// (`"edges_deflated":"…"`).
pub(crate) fn saved_with_edges(spectra: &Path) -> bool {
    std::fs::read_to_string(spectra).is_ok_and(|t| t.contains("\"edges\":{") || t.contains("\"edges_deflated\":\""))
}

/// Writes the mutated files of a version into the working copy; returns the faults (each
/// mutation's lines in the mutated file), or `None` when a mutation does not apply.
pub(crate) fn mutate(pristine: &Path, work: &Path, muts: &[&Mutation]) -> Result<Option<Vec<Fault>>> {
    let mut by_file: BTreeMap<&str, Vec<&Mutation>> = BTreeMap::new();
    for m in muts {
        by_file.entry(m.file.as_str()).or_default().push(m);
    }
    let mut faults = Vec::new();
    for (file, ms) in &by_file {
        let text = std::fs::read_to_string(pristine.join(file))?;
        let Some((new, lines)) = apply(&text, ms) else {
            restore(pristine, work, muts)?;
            return Ok(None);
        };
        std::fs::write(work.join(file), new)?;
        faults.extend(lines.into_iter().map(|lines| Fault {
            file: file.to_string(),
            lines,
            name: None,
        }));
    }
    Ok(Some(faults))
}

/// Puts the pristine files back into the working copy.
pub(crate) fn restore(pristine: &Path, work: &Path, muts: &[&Mutation]) -> Result<()> {
    for m in muts {
        std::fs::copy(pristine.join(&m.file), work.join(&m.file))?;
    }
    Ok(())
}

/// The pristine sources and the working copy of a crate of the benchmark.
pub(crate) fn dirs(work_root: &Path, name: &str, version: &str) -> Result<(PathBuf, PathBuf)> {
    let pristine = fetch_crate(name, version, &work_root.join("src"))?;
    let work = work_root.join("faults").join(name).join("work");
    if !work.join("Cargo.toml").exists() {
        crate::copy_tree(&pristine, &work)?;
    }
    Ok((pristine, work))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: (u32, u32), end: (u32, u32), replacement: &str) -> Mutation {
        Mutation {
            file: "src/lib.rs".into(),
            start,
            end,
            replacement: replacement.into(),
            genre: String::new(),
            function: String::new(),
        }
    }

    /// A body replaced by one line moves the lines below it up; the original coordinates undo it.
    #[test]
    fn mutated_lines_map_back_to_the_original_text() {
        let body = m((2, 15), (5, 2), "{ 0 }");
        let op = m((8, 7), (8, 9), "!=");
        let both = [&body, &op];
        // Line 1 is above; line 2 is the replaced body; mutated line 5 was original line 8.
        assert_eq!([1, 2, 3, 5].map(|l| original_line(l, &both)), [1, 2, 6, 8]);
        assert_eq!(original_line(7, &[&op]), 7);
        let grown = m((3, 1), (3, 9), "a\nb\nc");
        assert_eq!([3, 4, 5, 6].map(|l| original_line(l, &[&grown])), [3, 3, 3, 4]);
    }

    #[test]
    fn mutations_apply_bottom_up_and_report_new_lines() {
        let text = "fn a() -> u8 {\n    1 + 2\n}\nfn b() -> bool {\n    x == y\n}\n";
        let body = m((1, 14), (3, 2), "{ 0 }");
        let op = m((5, 7), (5, 9), "!=");
        let (out, lines) = apply(text, &[&body, &op]).unwrap();
        assert_eq!(out, "fn a() -> u8 { 0 }\nfn b() -> bool {\n    x != y\n}\n");
        // The body shrank by two lines, so the operator moved from line 5 to line 3.
        assert_eq!(lines, vec![vec![1], vec![3]]);
    }
}
