//! The last run's rows this run may reuse ([`Reuse`]): which, and where their lines and
//! blocks are now.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::SystemTime;

use crate::bitset::BitSet;
use crate::spectra::{FunctionSpan, Outcome, Spectra, TestRecord};

/// The last run, and which of its tests' rows this run may reuse.
pub struct Reuse {
    pub previous: Spectra,
    /// When the last run started.
    pub when: SystemTime,
    /// Per test of the last run: its row may be reused.
    pub reusable: Vec<bool>,
    /// Per changed source file: where each old line went (`[line - 1]`; `None`: changed).
    pub(super) moved: HashMap<String, Vec<Option<u32>>>,
    /// Per changed source file: lines inserted outside every function that no test of the last
    /// run can feel (blank lines, comments, new free functions: [`super::added`]), in today's
    /// lines (1-based, inclusive); the functions the new build has there are new.
    pub(super) added: HashMap<String, Vec<(u32, u32)>>,
    /// Functions of the last run that the edit touched.
    pub(super) changed: Vec<FunctionSpan>,
    /// Sources whose property tests' persisted failing cases changed: every line of theirs is
    /// dirty, so the tests that ran them (their own tests among them) run again.
    pub(super) reread: Vec<String>,
    /// Per test of the last run: its row ran a line (or took an edge) the edit touched.
    pub(super) touched: Vec<bool>,
    /// The targets (integration tests and benches) removed whole, their files and their
    /// binaries, whose tests went with them ([`super::targets`]).
    pub(super) gone: super::targets::Gone,
    /// Which environment variables changed and how many tests that re-runs, in words.
    pub env_note: Option<String>,
    /// How many tests that would have been reused run again because they ran none of the
    /// workspace's code outside test code (`choose::ran_no_code`).
    pub ran_no_code: usize,
}

/// Lines (`(file, line)`) and functions of the last run, where they are now.
pub type Known = (Vec<(String, u32)>, Vec<FunctionSpan>);

/// A reused test's row: the last run's units and blocks it ran, by their indices in the last
/// run's spectra ([`Reuse::unit_now`] and [`Reuse::block_now`] say where each is now: a
/// workspace of 14,000 tests made a string per line of every reused row, 6.5 GB and two minutes).
pub struct Row {
    pub record: TestRecord,
    /// Indices into the last run's units.
    pub lines: Vec<u32>,
    /// `(from, to)`, indices into the last run's blocks; `from` `None`: the entry into `to`.
    pub edges: Vec<(Option<u32>, u32)>,
}

/// A block of a reused row.
#[derive(Clone)]
pub struct BlockRef {
    pub function: String,
    pub index: u32,
    pub lines: Vec<(String, u32)>,
}

impl Reuse {
    /// Where line `line` of `file` in the last run is now (`None`: it changed).
    pub(super) fn line_now(&self, file: &str, line: u32) -> Option<u32> {
        match self.moved.get(file) {
            None => Some(line),
            Some(lines) => lines.get((line as usize).checked_sub(1)?).copied().flatten(),
        }
    }

    /// Whether a line of the last run is in a function the edit touched, or changed itself.
    pub(super) fn dirty(&self, file: &str, line: u32) -> bool {
        self.reread.iter().any(|f| f == file)
            || self.line_now(file, line).is_none()
            || self
                .changed
                .iter()
                .any(|f| f.file == file && f.start <= line && line <= f.end)
    }

    /// No row that ran a dirty line, or took an edge from or to a block with one, is reused.
    pub(super) fn drop_dirty(&mut self) {
        let p = &self.previous;
        let mut rerun = BitSet::new(p.tests.len());
        let dirty_units: Vec<bool> = p.units.iter().map(|u| self.dirty(&u.file, u.line)).collect();
        for (u, column) in p.coverage.iter().enumerate() {
            if dirty_units[u] {
                rerun.union_with(column);
            }
        }
        if let Some(edges) = &p.edges {
            // Line 1 is where rustc places what it generates for the whole crate (the test
            // harness's `main`, which every test enters): as a block's line it says nothing of
            // the function that starts there, whose runs the line coverage shows.
            let dirty_block: Vec<bool> = edges
                .blocks
                .iter()
                .map(|b| {
                    b.lines
                        .iter()
                        .any(|u| dirty_units[u.index()] && p.units[u.index()].line != 1)
                })
                .collect();
            for (e, column) in edges.edges.iter().zip(&edges.coverage) {
                if dirty_block[e.to.index()] || e.from.is_some_and(|f| dirty_block[f.index()]) {
                    rerun.union_with(column);
                }
            }
        }
        for t in rerun.iter() {
            self.reusable[t] = false;
            self.touched[t] = true;
        }
    }

    /// The tests (`binary name`) that passed in the last run, beside other tests, and ran code
    /// the edit touched: a failure of theirs now follows the edit. (One that passed then only
    /// alone shares something with other tests.)
    pub fn edited_passing(&self) -> HashSet<String> {
        self.previous
            .tests
            .iter()
            .enumerate()
            .filter(|(t, r)| self.touched[*t] && r.outcome == Outcome::Passed && !r.passed_alone)
            .map(|(_, r)| format!("{} {}", r.binary, r.name))
            .collect()
    }

    /// Whether test `t` of the last run can be judged by [`Reuse::varied`]: it ran no code the
    /// edit touched, so its lines of unchanged code should be the same.
    pub fn judged(&self, t: usize) -> bool {
        !self.touched[t]
    }

    /// Whether test `t` of the last run, run again now without having run a line the edit
    /// touched (it failed, say), ran other lines of unchanged code this time (`lines`, where
    /// they are now): then its row is a sample, not a fact. A test whose last row ran touched
    /// code may rightly run other lines now, so it is not judged.
    pub fn varied(&self, t: usize, lines: &[(String, u32)]) -> bool {
        if self.touched[t] {
            return false;
        }
        let p = &self.previous;
        let mut before = BTreeSet::new();
        let mut known = HashSet::new();
        for (u, column) in p.coverage.iter().enumerate() {
            let unit = &p.units[u];
            if self.dirty(&unit.file, unit.line) {
                continue;
            }
            let Some(now) = self.line_now(&unit.file, unit.line) else {
                continue;
            };
            known.insert((unit.file.as_str(), now));
            if column.contains(t) {
                before.insert((unit.file.as_str(), now));
            }
        }
        let after: BTreeSet<(&str, u32)> = lines
            .iter()
            .map(|(f, l)| (f.as_str(), *l))
            .filter(|k| known.contains(k))
            .collect();
        before != after
    }

    /// The last run's tests (by binary and name as named now), as indices into its tests.
    pub fn index(&self) -> HashMap<(&str, String), usize> {
        self.previous
            .tests
            .iter()
            .enumerate()
            .map(|(i, t)| ((t.binary.as_str(), self.name_now(&t.name)), i))
            .collect()
    }

    /// Whether test `t` of the last run went with its removed target.
    pub fn is_gone(&self, t: usize) -> bool {
        self.gone.binaries.contains(&self.previous.tests[t].binary)
    }

    /// The targets removed whole and how many tests went with them, in words.
    pub fn gone_note(&self) -> Option<String> {
        let files = &self.gone.files;
        let first = files.first()?;
        let tests = (0..self.previous.tests.len()).filter(|&t| self.is_gone(t)).count();
        Some(match files.len() {
            1 => format!(
                "{first} was removed: {} of the last run went with it",
                crate::ui::counted(tests, "test", "tests")
            ),
            n => format!(
                "{first} and {} more files were removed: {} of the last run went with them",
                n - 1,
                crate::ui::counted(tests, "test", "tests")
            ),
        })
    }

    /// How many of the last run's tests run again only because their rows are samples.
    pub fn volatile(&self) -> usize {
        self.previous
            .tests
            .iter()
            .filter(|t| t.volatile.is_some() && t.outcome == Outcome::Passed)
            .count()
    }

    /// The last run's units (lines the coverage maps knew) and functions, where they are now,
    /// but those the edit touched: what the binaries this run did not build would have named.
    pub fn known_now(&self) -> Known {
        let p = &self.previous;
        let units = p
            .units
            .iter()
            .filter(|u| u.name().is_none() && !self.dirty(&u.file, u.line))
            .filter_map(|u| Some((u.file.clone(), self.line_now(&u.file, u.line)?)))
            .collect();
        let functions = p
            .functions
            .iter()
            .filter(|f| !self.changed.contains(f))
            .filter_map(|f| {
                Some(FunctionSpan {
                    file: f.file.clone(),
                    start: self.line_now(&f.file, f.start)?,
                    end: self.line_now(&f.file, f.end)?,
                })
            })
            .collect();
        (units, functions)
    }

    /// Whether any source file changed since the last run.
    pub fn edited(&self) -> bool {
        !self.moved.is_empty()
    }

    /// A test of the last run as it is named now: a doctest's name says its line
    /// (`src/lib.rs - half (line 18)`), which an edit above it moves.
    pub fn name_now(&self, name: &str) -> String {
        let moved = || {
            let (item, line) = name.strip_suffix(')')?.rsplit_once(" (line ")?;
            let (file, _) = item.split_once(" - ")?;
            let now = self.line_now(file, line.parse().ok()?)?;
            Some(format!("{item} (line {now})"))
        };
        moved().unwrap_or_else(|| name.to_string())
    }

    /// Where the last run's unit `u` is now.
    pub fn unit_now(&self, u: u32) -> (&str, u32) {
        let unit = &self.previous.units[u as usize];
        (
            unit.file.as_str(),
            self.line_now(&unit.file, unit.line).unwrap_or(unit.line),
        )
    }

    /// The last run's block `b`, its lines where they are now (`None` without edge profiles).
    pub fn block_now(&self, b: u32) -> Option<BlockRef> {
        let block = &self.previous.edges.as_ref()?.blocks[b as usize];
        Some(BlockRef {
            function: block.function.clone(),
            index: block.index,
            lines: block
                .lines
                .iter()
                .map(|u| {
                    let (file, line) = self.unit_now(u.0);
                    (file.to_string(), line)
                })
                .collect(),
        })
    }

    /// The reusable rows of the last run's tests `which` (indices into its tests), by the last
    /// run's unit and block indices, in their order there.
    pub fn rows(&self, which: &[usize]) -> Vec<Row> {
        let p = &self.previous;
        let mut rows: Vec<Row> = which
            .iter()
            .map(|&t| Row {
                record: TestRecord {
                    name: self.name_now(&p.tests[t].name),
                    reused: true,
                    ..p.tests[t].clone()
                },
                lines: Vec::new(),
                edges: Vec::new(),
            })
            .collect();
        let mut slot = vec![usize::MAX; p.tests.len()];
        for (i, &t) in which.iter().enumerate() {
            slot[t] = i;
        }
        let row_of = |t: usize| slot.get(t).copied().filter(|&i| i != usize::MAX);
        for (u, column) in p.coverage.iter().enumerate() {
            for t in column.iter() {
                if let Some(i) = row_of(t) {
                    rows[i].lines.push(u as u32);
                }
            }
        }
        if let Some(edges) = &p.edges {
            for (e, column) in edges.edges.iter().zip(&edges.coverage) {
                for t in column.iter() {
                    if let Some(i) = row_of(t) {
                        rows[i].edges.push((e.from.map(|b| b.0), e.to.0));
                    }
                }
            }
        }
        rows
    }
}
