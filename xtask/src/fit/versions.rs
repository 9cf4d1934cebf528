//! The benchmarks' cached runs, each faulty version reduced to what ranking it needs, and the
//! metrics of one ranking of one version.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use cargo_sfl::analysis::Analysis;
use cargo_sfl::combined::{FEATURES, N, features};
use cargo_sfl::evidence::{LineEvidence, TieBreak};
use cargo_sfl::score::{Key, Options, Tier};
use cargo_sfl::spectra::Spectra;

use crate::folds::crate_of;
use crate::{faults_bench, panic4r_bench, regressions_bench};

/// Which benchmark a version comes from.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Source {
    Faults,
    Panic4r,
    Regressions,
}

impl Source {
    pub const ALL: [Source; 3] = [Source::Faults, Source::Panic4r, Source::Regressions];

    pub fn name(self) -> &'static str {
        match self {
            Source::Faults => "faults (original text)",
            Source::Panic4r => "panic4r",
            Source::Regressions => "regressions",
        }
    }
}

/// One faulty version, reduced to what ranking it needs.
pub struct Version {
    /// Its index among the versions read (set by the reader of all benchmarks).
    pub id: usize,
    pub source: Source,
    pub krate: String,
    /// Some failing test's backtrace enters ranked (library) code.
    pub frame: bool,
    /// Per ranked line: its features, its evidence (what orders equal scores), its function,
    /// whether it is faulty.
    pub rows: Vec<[f64; N]>,
    evidence: Vec<LineEvidence>,
    function: Vec<Option<u32>>,
    pub faulty: Vec<bool>,
    /// The lines the fit learns from: the faulty ones, every line with backtrace evidence,
    /// and the [`TRAIN_LINES`] best by the default ranking (the rest are far from the top
    /// whatever the weights, and only slow the fit down).
    pub train: Vec<usize>,
    /// Per measure compared against, the line keys of the ranked lines.
    pub baselines: Vec<(&'static str, Vec<Key>)>,
}

/// How many of a version's best lines under the default ranking the fit learns from.
const TRAIN_LINES: usize = 300;

/// The measures the combined ranking is compared with (the first orders the lines the fit
/// learns from).
pub const BASELINES: [&str; 4] = ["stack-ochiai", "ochiai", "stack-cl", "cl"];

/// Line and function metrics of one ranking of one version.
#[derive(Clone, Copy, Default, Debug)]
pub struct Scores {
    /// Top-1, 3, 5 and 10 at line level (1 or 0).
    pub top: [f64; 4],
    /// Top-1 and 5 at function level.
    pub fn_top: [f64; 2],
    pub std_rank: f64,
    /// Lines read before the first faulty one in the functions-first reading order
    /// (infinite when it is not read).
    pub read: f64,
}

const TOP: [f64; 4] = [1.0, 3.0, 5.0, 10.0];

/// Where the best faulty item sits among `keys` (Steimann's expected position and the Standard
/// Rank Score), as `cargo sfl eval` counts.
fn position<K: PartialOrd + Copy>(keys: &[K], faulty: &[bool]) -> Option<(f64, f64)> {
    let best = keys
        .iter()
        .zip(faulty)
        .filter(|(_, f)| **f)
        .map(|(k, _)| *k)
        .reduce(|a, b| if b > a { b } else { a })?;
    let (mut higher, mut tied, mut tied_faulty) = (0.0, 0.0, 0.0);
    for (k, f) in keys.iter().zip(faulty) {
        if *k > best {
            higher += 1.0;
        } else if *k == best {
            tied += 1.0;
            tied_faulty += f64::from(u8::from(*f));
        }
    }
    Some((higher + (tied + 1.0) / (tied_faulty + 1.0), higher + tied / 2.0))
}

impl Version {
    /// Metrics of a ranking given as one key per ranked line.
    pub fn scores(&self, keys: &[Key]) -> Scores {
        let mut s = Scores::default();
        if let Some((at, std)) = position(keys, &self.faulty) {
            s.std_rank = std;
            for (i, n) in TOP.iter().enumerate() {
                s.top[i] = f64::from(u8::from(at <= *n));
            }
        }
        // Functions, each ranked by its best line.
        let mut best: BTreeMap<u32, (Key, bool)> = BTreeMap::new();
        for ((k, f), faulty) in keys.iter().zip(&self.function).zip(&self.faulty) {
            let Some(f) = f else { continue };
            let e = best.entry(*f).or_insert((*k, false));
            if *k > e.0 {
                e.0 = *k;
            }
            e.1 |= *faulty;
        }
        let (fk, ff): (Vec<Key>, Vec<bool>) = best.into_values().unzip();
        if let Some((at, _)) = position(&fk, &ff) {
            s.fn_top = [f64::from(u8::from(at <= 1.0)), f64::from(u8::from(at <= 5.0))];
        }
        s.read = self.lines_read(keys);
        s
    }

    /// `keys` with every structural line (a brace, a declaration, an attribute) below every
    /// other line of its tier.
    pub fn structural_last(&self, keys: &[Key]) -> Vec<Key> {
        let st = FEATURES.iter().position(|f| *f == "structural").expect("a feature");
        let span = keys.iter().map(|k| k.value.abs()).fold(1.0, f64::max) * 4.0;
        keys.iter()
            .zip(&self.rows)
            .map(|(k, x)| {
                let mut k = *k;
                if x[st] > 0.0 {
                    k.value -= span;
                }
                k
            })
            .collect()
    }

    /// The line keys of one of the [`BASELINES`] (or the panic-stack baseline).
    pub fn baseline(&self, name: &str) -> &[Key] {
        &self
            .baselines
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a computed baseline")
            .1
    }

    /// Lines read before the first faulty one in the functions-first reading order, as `cargo
    /// sfl eval` counts them: lines of equal keys form one entry (in line order), functions rank
    /// by their best entry; infinite when no faulty line is read.
    fn lines_read(&self, keys: &[Key]) -> f64 {
        use cargo_sfl::rank::functions::{LINES_SHOWN, TOP_FUNCTIONS, by_function, reading_order};
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&x, &y| keys[y].partial_cmp(&keys[x]).unwrap_or(std::cmp::Ordering::Equal));
        let mut groups: Vec<(f64, &[usize])> = Vec::new();
        let mut i = 0;
        while i < order.len() {
            let j = (i..order.len())
                .find(|&j| keys[order[j]] != keys[order[i]])
                .unwrap_or(order.len());
            groups.push(((groups.len() + 1) as f64, &order[i..j]));
            i = j;
        }
        let blocks = by_function(&groups, &self.function, |u| Some(keys[u].evidence));
        let read = reading_order(&blocks, &groups, (TOP_FUNCTIONS, LINES_SHOWN));
        read.iter()
            .position(|&u| self.faulty[u])
            .map_or(f64::INFINITY, |p| p as f64)
    }

    pub fn combined_keys(&self, w: &[f64; N]) -> Vec<Key> {
        self.rows
            .iter()
            .zip(&self.evidence)
            .map(|(x, t)| Key {
                tier: Tier::Score,
                value: x.iter().zip(w).map(|(x, w)| x * w).sum(),
                evidence: *t,
            })
            .collect()
    }

    /// `stack-combined`: the lines where failing tests' own operations panicked first (by how
    /// many tests, then by score), the rest by the combined score.
    pub fn stack_combined_keys(&self, w: &[f64; N]) -> Vec<Key> {
        let op = FEATURES
            .iter()
            .position(|f| *f == "operation_panic_point")
            .expect("a feature");
        let mut keys = self.combined_keys(w);
        // Within the stack tier: the share of tests, then the score (kept as the value's fraction).
        let span = keys.iter().map(|k| k.value.abs()).fold(1.0, f64::max) * 4.0;
        for (k, x) in keys.iter_mut().zip(&self.rows) {
            if x[op] > 0.0 {
                k.tier = Tier::Stack;
                k.value += x[op] * span * 2.0;
            }
        }
        keys
    }
}

/// A version from saved spectra, its known faults, as `cargo sfl` ranks it by default (test
/// code left out).
fn version(source: Source, krate: &str, spectra: &Spectra, faults: &[cargo_sfl::faults::Fault]) -> Option<Version> {
    let mut parsed = cargo_sfl::syntax::Parsed::new(Path::new(&spectra.workspace_root));
    let spectra = cargo_sfl::testcode::without_test_code(spectra, &mut parsed).0;
    let faulty: HashSet<usize> = cargo_sfl::eval::locate(&spectra, faults)
        .iter()
        .flat_map(|f| f.units.iter().copied())
        .collect();
    let a = Analysis::new(&spectra, true).with_tie_break(TieBreak::Evidence);
    let f = features(&a);
    let faulty_rows: Vec<bool> = f.units.iter().map(|u| faulty.contains(u)).collect();
    if !faulty_rows.contains(&true) {
        return None;
    }
    let line_evidence = f
        .units
        .iter()
        .map(|&u| a.tie(u).unwrap_or(LineEvidence::NONE))
        .collect();
    let baselines: Vec<(&'static str, Vec<Key>)> = BASELINES
        .iter()
        .map(|name| {
            let m = cargo_sfl::measures::find(name).expect("a baseline of the catalogue");
            let keys = cargo_sfl::eval::line_keys(&a, &a.score(m, &Options::default()));
            (
                *name,
                f.units
                    .iter()
                    .map(|&u| keys[u].expect("a ranked line has a key"))
                    .collect(),
            )
        })
        .chain(std::iter::once({
            // Where the backtraces first enter ranked code, every other line at the bottom.
            let keys = cargo_sfl::eval::stack_keys(&spectra);
            (
                cargo_sfl::eval::PANIC_STACK,
                f.units.iter().map(|&u| keys[u].unwrap_or(Key::UNRANKED)).collect(),
            )
        }))
        .collect();
    let frame = cargo_sfl::evidence::panic_points(&spectra).iter().any(|&n| n > 0);
    let default_keys: &Vec<Key> = &baselines[0].1;
    let mut order: Vec<usize> = (0..f.units.len()).collect();
    order.sort_by(|&x, &y| {
        default_keys[y]
            .partial_cmp(&default_keys[x])
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let evidence = |i: usize| f.rows[i][6..12].iter().any(|x| *x != 0.0);
    let mut train: Vec<usize> = order
        .iter()
        .enumerate()
        .filter(|&(pos, &i)| pos < TRAIN_LINES || faulty_rows[i] || evidence(i))
        .map(|(_, &i)| i)
        .collect();
    train.sort_unstable();
    Some(Version {
        id: 0,
        source,
        frame,
        train,
        krate: krate.to_string(),
        function: f
            .units
            .iter()
            .map(|&u| spectra.unit_function.get(u).copied().flatten())
            .collect(),
        rows: f.rows,
        evidence: line_evidence,
        faulty: faulty_rows,
        baselines,
    })
}

/// Every single-fault version of `bench faults`' cache, with the original text's line facts.
pub fn faults_versions(bench: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    for (name, release) in faults_bench::CRATES {
        let dir = bench.join("faults").join(name);
        if !dir.is_dir() {
            continue;
        }
        let pristine = crate::fetch_crate(name, release, &bench.join("src"))?;
        for r in faults_bench::cached_records(&dir) {
            if r.status != "failing" || r.mutations.len() != 1 {
                continue;
            }
            let spectra = Spectra::load(&dir.join(format!("{}.spectra.json", r.id))).map_err(anyhow::Error::msg)?;
            let original = faults_bench::with_original_text(&spectra, &pristine, &r.mutations);
            out.extend(version(Source::Faults, name, &original, &r.faults));
        }
    }
    Ok(out)
}

/// Every reproduced bug of `bench panic4r`'s cache.
pub fn panic4r_versions(bench: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(bench.join("panic4r")) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    dirs.sort();
    for dir in dirs {
        let Some(r) = panic4r_bench::cached_record(&dir) else {
            continue;
        };
        if !r.reproduced {
            continue;
        }
        let spectra = Spectra::load(&dir.join("spectra.json")).map_err(anyhow::Error::msg)?;
        let faults = cargo_sfl::faults::load(&dir.join("faults.toml")).with_context(|| dir.display().to_string())?;
        out.extend(version(Source::Panic4r, &r.krate, &spectra, &faults));
    }
    Ok(out)
}

/// Every reproduced bug of `bench regressions`' cache (`regressions/<owner+name>/<commit>/`),
/// under its crate's name.
pub fn regressions_versions(bench: &Path) -> Result<Vec<Version>> {
    let mut out = Vec::new();
    let Ok(repos) = std::fs::read_dir(bench.join("regressions")) else {
        return Ok(out);
    };
    let mut dirs: Vec<PathBuf> = repos
        .flatten()
        .filter(|r| r.path().is_dir())
        .flat_map(|r| std::fs::read_dir(r.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    dirs.sort();
    for dir in dirs {
        let Some(a) = regressions_bench::cached(&dir) else {
            continue;
        };
        if a.bug.is_none() || !dir.join("spectra.json").is_file() {
            continue;
        }
        let spectra = Spectra::load(&dir.join("spectra.json")).map_err(anyhow::Error::msg)?;
        let faults = cargo_sfl::faults::load(&dir.join("faults.toml")).with_context(|| dir.display().to_string())?;
        out.extend(version(
            Source::Regressions,
            &crate_of(&a.repository),
            &spectra,
            &faults,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two functions, f (lines 0, 1) and g (line 2): the reader reads f's best line, then
    /// g's, then f's other line.
    #[test]
    fn lines_read_follow_the_functions_first_order() {
        let key = |v: f64| Key {
            tier: Tier::Score,
            value: v,
            evidence: LineEvidence::NONE,
        };
        let version = |faulty: usize| Version {
            id: 0,
            source: Source::Regressions,
            krate: "k".into(),
            frame: false,
            rows: vec![[0.0; N]; 3],
            evidence: vec![LineEvidence::NONE; 3],
            function: vec![Some(0), Some(0), Some(1)],
            faulty: (0..3).map(|u| u == faulty).collect(),
            train: Vec::new(),
            baselines: Vec::new(),
        };
        let keys = [key(0.9), key(0.8), key(0.5)];
        assert_eq!(version(0).lines_read(&keys), 0.0);
        assert_eq!(version(2).lines_read(&keys), 1.0);
        assert_eq!(version(1).lines_read(&keys), 2.0);
        assert_eq!(version(1).scores(&keys).top[0], 0.0);
        assert_eq!(version(1).scores(&keys).fn_top[0], 1.0);
    }
}
