//! Assembles the matrix from the finished jobs: units in code order (so output is stable
//! whatever order tests finished in), one row per test (ignored tests last), the edge matrix,
//! and the build information shards must agree on.

use std::collections::HashMap;
use std::path::Path;

use super::outcome::JobOutcome;
use crate::coverage::SortedUnits;
use crate::edges::Edge;
use crate::spectra::{BuildInfo, SourceFacts, Spectra, TestRecord, UnitId, file_digest, sources_digest};
use crate::syntax::Parsed;
use crate::ui;

/// The matrix of every test over the interned units; `edges` decodes the edge matrix when
/// edge profiles were recorded.
pub(crate) fn assemble(
    root: &Path,
    units: SortedUnits,
    outcomes: Vec<JobOutcome>,
    ignored: Vec<TestRecord>,
    edges: Option<crate::edges::Collector<'_>>,
) -> Spectra {
    let SortedUnits {
        units,
        functions,
        new_id,
    } = units;
    let rows = rows(outcomes, ignored, &new_id);
    let edges = edges.map(|collector| {
        let unit_id: HashMap<(&str, u32), UnitId> = units
            .iter()
            .enumerate()
            .map(|(i, u)| ((u.file.as_str(), u.line), UnitId(i as u32)))
            .collect();
        let e = collector.finish(rows.tests.len(), &rows.traversed, |f, l| unit_id.get(&(f, l)).copied());
        ui::detail(format!("{} blocks, {} edges traversed", e.blocks.len(), e.edges.len()));
        e
    });
    let mut spectra = Spectra::from_tests(root.to_string_lossy().into_owned(), rows.tests, units, &rows.covered);
    spectra.edges = edges;
    spectra.set_functions(functions);
    spectra
}

/// One row per test: records, covered units (renumbered) and traversed edges.
struct Rows {
    tests: Vec<TestRecord>,
    covered: Vec<Vec<UnitId>>,
    traversed: Vec<Vec<Edge>>,
}

/// The jobs' rows in job order, then the ignored tests' empty rows.
fn rows(outcomes: Vec<JobOutcome>, ignored: Vec<TestRecord>, remap: &[UnitId]) -> Rows {
    let mut rows = Rows {
        tests: Vec::new(),
        covered: Vec::new(),
        traversed: Vec::new(),
    };
    for o in outcomes {
        rows.tests.push(o.record);
        rows.covered
            .push(o.covered.into_iter().map(|u| remap[u.index()]).collect());
        rows.traversed.push(o.edges);
    }
    for rec in ignored {
        rows.tests.push(rec);
        rows.covered.push(Vec::new());
        rows.traversed.push(Vec::new());
    }
    rows
}

/// `rustc -vV` of the toolchain that builds the tests (asked while they build and run: a
/// process start through rustup's proxy is 10-15 ms).
pub(crate) fn rustc_version() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    std::process::Command::new(rustc)
        .arg("-vV")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|e| format!("unknown ({e})"))
}

/// What the spectra record of the sources that were built, each file read once: the build
/// information (the toolchain and a digest over the units' source files, what shards must
/// agree on) and the source facts rankings read instead of the sources (test code, each line's
/// kind and operators, function names, each file's digest). `parsed` holds the files parsed
/// while the tests ran; `support`, the workspace's test-support directories.
pub(crate) fn describe_sources(
    root: &Path,
    spectra: &mut Spectra,
    rustc: String,
    (parsed, support): (&mut Parsed, &[String]),
) {
    let files: Vec<String> = spectra.source_files().into_iter().map(str::to_string).collect();
    let read: Vec<Option<Vec<u8>>> = files.iter().map(|f| std::fs::read(root.join(f)).ok()).collect();
    let sources = sources_digest(files.iter().map(String::as_str).zip(read.iter().map(|b| b.as_deref())));
    let mut facts = SourceFacts::new(spectra.units.len());
    for (u, test) in crate::testcode::test_units(spectra, parsed, support)
        .into_iter()
        .enumerate()
    {
        if test {
            facts.test_code.insert(u);
        }
    }
    let lines: HashMap<&str, Vec<&str>> = files
        .iter()
        .zip(&read)
        .filter_map(|(f, bytes)| {
            Some((
                f.as_str(),
                std::str::from_utf8(bytes.as_deref()?).ok()?.lines().collect(),
            ))
        })
        .collect();
    for (u, unit) in spectra.units.iter().enumerate() {
        let text = lines
            .get(unit.file.as_str())
            .and_then(|l| l.get((unit.line as usize).checked_sub(1)?).copied());
        let (kind, operates) = crate::evidence::read_line(text);
        if kind == crate::evidence::LineKind::Structural {
            facts.structural.insert(u);
        }
        if operates {
            facts.operates.insert(u);
        }
    }
    facts.function_names = spectra
        .functions
        .iter()
        .cloned()
        .zip(parsed.function_names(&spectra.functions))
        .collect();
    facts.digests = files
        .iter()
        .zip(&read)
        .filter_map(|(f, bytes)| Some((f.clone(), file_digest(bytes.as_deref()?))))
        .collect();
    spectra.build = Some(BuildInfo { rustc, sources });
    spectra.facts = Some(facts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::collect::plan::record;
    use crate::spectra::Outcome;

    fn entry_edge() -> Edge {
        Edge {
            from: None,
            to: crate::edges::BlockId(0),
        }
    }

    fn outcome(name: &str, outcome: Outcome, covered: &[UnitId]) -> JobOutcome {
        JobOutcome {
            record: record("b", name, outcome),
            covered: covered.to_vec(),
            profiles: Vec::new(),
            edges: vec![entry_edge()],
            not_run: None,
        }
    }

    #[test]
    fn units_are_put_in_code_order_and_rows_renumbered() {
        let mut interner = crate::coverage::UnitTable::default();
        // Interned in the order tests happened to meet them.
        let b9 = interner.intern("src/b.rs", 9);
        let a2 = interner.intern("src/a.rs", 2);
        let b1 = interner.intern("src/b.rs", 1);
        let outcomes = vec![
            outcome("t1", Outcome::Failed, &[b9, a2]),
            outcome("t2", Outcome::Passed, &[b1]),
        ];
        let ignored = vec![record("b", "t0", Outcome::Ignored)];
        let s = assemble(Path::new("/ws"), interner.sorted(), outcomes, ignored, None);
        let units: Vec<(&str, u32)> = s.units.iter().map(|u| (u.file.as_str(), u.line)).collect();
        assert_eq!(units, [("src/a.rs", 2), ("src/b.rs", 1), ("src/b.rs", 9)]);
        let names: Vec<&str> = s.tests.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t1", "t2", "t0"], "jobs in job order, then ignored tests");
        let runs = |u: usize| (0..3).filter(|&t| s.coverage[u].contains(t)).collect::<Vec<_>>();
        assert_eq!((runs(0), runs(1), runs(2)), (vec![0], vec![1], vec![0]));
        assert!(s.edges.is_none());
        assert_eq!(s.workspace_root, "/ws");
    }

    #[test]
    fn rows_keep_edges_and_give_ignored_tests_empty_rows() {
        let r = rows(
            vec![outcome("t1", Outcome::Passed, &[UnitId(1), UnitId(0)])],
            vec![record("b", "t2", Outcome::Ignored)],
            &[UnitId(1), UnitId(0)],
        );
        assert_eq!(r.covered, [vec![UnitId(0), UnitId(1)], vec![]]);
        assert_eq!(r.traversed, [vec![entry_edge()], vec![]]);
        assert_eq!(r.tests.len(), 2);
    }
}
