//! How a selected run's spectra differ from a full run's ([`differences`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::spectra::{Outcome, Spectra};

/// A test's row in words: its outcome, the lines it ran, and the edges it took (blocks by name
/// with their lines).
type Described = (Outcome, BTreeSet<(String, u32)>, BTreeSet<String>, bool);

/// Every test's row of `spectra`, by `binary name`.
fn described(spectra: &Spectra) -> BTreeMap<String, Described> {
    let mut rows: Vec<Described> = spectra
        .tests
        .iter()
        .map(|t| (t.outcome, BTreeSet::new(), BTreeSet::new(), t.volatile.is_some()))
        .collect();
    for (u, column) in spectra.coverage.iter().enumerate() {
        let unit = &spectra.units[u];
        for t in column.iter() {
            rows[t].1.insert((unit.file.clone(), unit.line));
        }
    }
    if let Some(edges) = &spectra.edges {
        // A block is its function and its index there, as the collector names blocks across
        // binaries; its lines are the line table of whichever binary held it first, which two
        // builds of the same function may draw differently (a line more or less in a block).
        let block = |b: crate::edges::BlockId| {
            let b = &edges.blocks[b.index()];
            format!("{}#{}", b.function, b.index)
        };
        for (e, column) in edges.edges.iter().zip(&edges.coverage) {
            let name = format!("{} -> {}", e.from.map_or("entry".into(), block), block(e.to));
            for t in column.iter() {
                rows[t].2.insert(name.clone());
            }
        }
    }
    spectra
        .tests
        .iter()
        .map(|t| format!("{} {}", t.binary, t.name))
        .zip(rows)
        .collect()
}

/// How a selected run's spectra differ from a full run's: the units and functions known, then
/// test by test outcomes, lines run and edges taken (empty when they agree; of a test that
/// timed out in both, or whose row is a sample of random inputs, only the outcome).
/// What `cargo xtask bench select` checks.
pub fn differences(selected: &Spectra, full: &Spectra) -> Vec<String> {
    let (a, b) = (described(selected), described(full));
    let mut out = Vec::new();
    // The units (lines the coverage maps know, whether or not a test ran them) and the
    // functions: a selected run must know every line a full run knows.
    let units =
        |s: &Spectra| -> BTreeSet<String> { s.units.iter().map(|u| format!("{}:{}", u.file, u.line)).collect() };
    let functions = |s: &Spectra| -> BTreeSet<String> {
        s.functions
            .iter()
            .map(|f| format!("{}:{}-{}", f.file, f.start, f.end))
            .collect()
    };
    for (what, x, y) in [
        ("units", units(selected), units(full)),
        ("functions", functions(selected), functions(full)),
    ] {
        if x != y {
            let here: Vec<&String> = x.difference(&y).take(3).collect();
            let there: Vec<&String> = y.difference(&x).take(3).collect();
            out.push(format!(
                "{what} differ: {} only here ({here:?} …), {} only in the full run ({there:?} …)",
                x.difference(&y).count(),
                y.difference(&x).count()
            ));
        }
    }
    for name in a.keys().chain(b.keys()).collect::<BTreeSet<_>>() {
        match (a.get(name), b.get(name)) {
            (Some(x), Some(y)) => {
                if x.0 != y.0 {
                    out.push(format!(
                        "{name}: {} here, {} in the full run",
                        x.0.as_str(),
                        y.0.as_str()
                    ));
                }
                // A test killed at its timeout in both runs: its coverage stops wherever it was
                // killed, which no two runs share.
                if x.0 == Outcome::TimedOut && y.0 == Outcome::TimedOut {
                    continue;
                }
                // A property test's row is a sample of its random inputs: no two runs share it.
                if x.3 || y.3 {
                    continue;
                }
                if x.1 != y.1 {
                    let only: Vec<String> =
                        x.1.symmetric_difference(&y.1)
                            .take(3)
                            .map(|(f, l)| format!("{f}:{l}"))
                            .collect();
                    out.push(format!("{name}: lines differ ({} …)", only.join(", ")));
                }
                if x.2 != y.2 {
                    let only: Vec<&String> = x.2.symmetric_difference(&y.2).take(2).collect();
                    out.push(format!("{name}: edges differ ({only:?} …)"));
                }
            }
            (Some(_), None) => out.push(format!("{name}: only in the selected run")),
            (None, _) => out.push(format!("{name}: only in the full run")),
        }
    }
    out
}
