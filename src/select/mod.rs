//! Test selection: which tests a run must run, given the last run's spectra and what it saw
//! of the workspace before it built ([`Snapshot`]).
//!
//! A run looks at the workspace before it builds ([`look`]): every file of the packages (Rust
//! sources as a hash per line, other files as a digest) and the context that decides results
//! beyond them (toolchain, selection and flags, environment). Against the last run's snapshot
//! ([`choose`]):
//!
//! - any change of context, any changed file that is not a Rust source with functions, and any
//!   edit of a Rust source outside the functions the coverage maps knew (items, `const`s,
//!   macros, attributes, doc comments, `use`s, a new function) runs every test;
//! - otherwise the edit is located by a line diff in the functions it touches (every function
//!   whose span contains a changed line or an inserted one; a `const fn` may be evaluated at
//!   compile time, so its change runs every test), and a test is run again when it ran a line
//!   of a changed function, when it did not pass (failed, crashed, timed out, flaky, or with a
//!   warning), or when it is new; every other test's row is reused, its lines and blocks moved
//!   to where the diff says they went.
//!
//! After the build, [`Reuse::verify`] checks the diff against the new coverage maps: every
//! unchanged function must be found where its lines went, and every function of the new build
//! in a changed file must be one of those or inside a changed one; a test that ran a function
//! not found is run again, and a new function anywhere else runs every test.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::bitset::BitSet;
use crate::config::{RunConfig, Selection};
use crate::spectra::{FileState, FunctionSpan, Outcome, Snapshot, Spectra, TestRecord};
use crate::workspace::Workspace;

pub mod volatile;

/// Bump when what a snapshot records, or how it is compared, changes: an older snapshot then
/// runs every test.
const VERSION: &str = "2";

/// Environment variables that differ between two shells of one session without changing
/// what a test does (jobserver descriptors, terminal and session ids).
fn volatile(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "_",
        "OLDPWD",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "TERM_SESSION_ID",
        "WINDOWID",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "SSH_TTY",
        "XDG_SESSION_ID",
        "DISPLAY",
        "WAYLAND_DISPLAY",
    ];
    NAMES.contains(&name) || name.contains("MAKEFLAGS") || name.contains("JOBSERVER") || name.starts_with("CARGO_SFL_")
}

/// What a run sees of the workspace before it builds: the files of the selected packages
/// ([`files`]) and the context. `rustc` is `rustc -vV`.
pub fn look(files: BTreeMap<String, FileState>, cfg: &RunConfig, rustc: &str) -> Snapshot {
    let mut context = BTreeMap::new();
    let mut part = |name: String, value: &str| {
        context.insert(name, crate::spectra::file_digest(value.as_bytes()));
    };
    part("cargo-sfl".into(), &format!("{} {VERSION}", env!("CARGO_PKG_VERSION")));
    part("toolchain".into(), rustc);
    let mut selection = cfg.selection.clone();
    // Where the workspace and the build are does not change results (a CI cache is restored
    // at another path).
    selection.manifest_path = None;
    selection.target_dir = None;
    let exec = &cfg.execution;
    part(
        "selection".into(),
        &format!(
            "{selection:?} filter={:?} expr={:?} ignored={} partition={:?} edges={} retries={:?} timeout={:?}",
            cfg.filter,
            cfg.nextest.filtersets,
            exec.include_ignored,
            exec.partition.map(|p| p.to_string()),
            !exec.no_edges,
            exec.retries,
            exec.test_timeout,
        ),
    );
    for (name, value) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if !volatile(&name) {
            part(format!("env:{name}"), &value.to_string_lossy());
        }
    }
    Snapshot {
        taken: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        context,
        files,
        build_env: Vec::new(),
    }
}

/// The environment variables the build in `build_dir` declared reading: rustc's dependency
/// files (`# env-dep:NAME`, from `env!` and `option_env!`) and build scripts' output
/// (`cargo:rerun-if-env-changed=NAME`), sorted.
pub fn build_env(build_dir: &Path) -> Vec<String> {
    let mut names = BTreeSet::new();
    let read_dir = |d: PathBuf| std::fs::read_dir(d).into_iter().flatten().flatten();
    for profile in read_dir(build_dir.to_path_buf()).filter(|e| e.path().is_dir()) {
        for dep in read_dir(profile.path().join("deps")) {
            if dep.path().extension().is_some_and(|x| x == "d")
                && let Ok(text) = std::fs::read_to_string(dep.path())
            {
                for line in text.lines() {
                    if let Some(rest) = line.strip_prefix("# env-dep:") {
                        names.insert(rest.split('=').next().unwrap_or(rest).to_string());
                    }
                }
            }
        }
        for script in read_dir(profile.path().join("build")) {
            if let Ok(text) = std::fs::read_to_string(script.path().join("output")) {
                for line in text.lines() {
                    let line = line.strip_prefix("cargo::").or_else(|| line.strip_prefix("cargo:"));
                    if let Some(name) = line.and_then(|l| l.strip_prefix("rerun-if-env-changed=")) {
                        names.insert(name.trim().to_string());
                    }
                }
            }
        }
    }
    names.into_iter().collect()
}

/// Whether a change of the environment variable `name` may change what is built or how every
/// test runs: cargo's and rustc's variables, the C toolchain's, `PATH` (which programs a test
/// starts), and those the last build declared reading.
fn builds_read(name: &str, declared: &[String]) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "CC",
        "CXX",
        "AR",
        "LD",
        "CFLAGS",
        "CXXFLAGS",
        "LDFLAGS",
        "CPPFLAGS",
        "HOST",
        "TARGET",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PKG_CONFIG_PATH",
        "SDKROOT",
        "HOME",
    ];
    [
        "CARGO",
        "RUST",
        "LLVM_",
        "CC_",
        "CXX_",
        "CFLAGS_",
        "CXXFLAGS_",
        "AR_",
        "PKG_CONFIG",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || NAMES.contains(&name)
        || declared.iter().any(|d| d == name)
}

/// The files of the selected packages (and the workspace's manifest, lock file, cargo and
/// nextest configuration, path dependencies outside it): Rust sources as a hash per line,
/// others as a digest.
pub fn files(ws: &Workspace) -> BTreeMap<String, FileState> {
    package_files(ws)
        .into_iter()
        .filter_map(|(rel, path)| {
            let bytes = std::fs::read(&path).ok()?;
            let state = if rel.ends_with(".rs") {
                FileState::lines(&bytes)
            } else {
                FileState::digest(&bytes)
            };
            Some((rel, state))
        })
        .collect()
}

/// Every file a test's result may depend on outside the toolchain and the registry: the
/// members' directories (as git would see them: ignored and hidden files left out, and the
/// target directories), path dependencies outside the workspace, and the workspace's manifest,
/// lock file, cargo and nextest configuration. Relative to the root where inside it.
fn package_files(ws: &Workspace) -> BTreeMap<String, PathBuf> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for m in &ws.members {
        if let Some(dir) = m.manifest_path.parent() {
            dirs.insert(dir.as_std_path().to_path_buf());
        }
        for d in &m.dependencies {
            if let Some(p) = &d.path {
                dirs.insert(p.as_std_path().to_path_buf());
            }
        }
    }
    let skip: Vec<PathBuf> = [&ws.target_dir, &ws.cargo_target_dir, &ws.build_dir]
        .into_iter()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
        .collect();
    let mut files = BTreeMap::new();
    let name = |path: &Path| match path.strip_prefix(&ws.root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => path.to_string_lossy().into_owned(),
    };
    for dir in dirs {
        let walk = ignore::WalkBuilder::new(&dir)
            .filter_entry({
                let skip = skip.clone();
                move |e| !skip.iter().any(|s| e.path() == s)
            })
            .build();
        for entry in walk.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) {
                files.insert(name(entry.path()), entry.into_path());
            }
        }
    }
    for extra in [
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        ".cargo/config",
        ".config/nextest.toml",
    ] {
        let path = ws.root.join(extra);
        if path.is_file() {
            files.insert(extra.to_string(), path);
        }
    }
    files
}

/// What a run does with the last run.
pub enum Choice {
    /// Run every test, and why (`None`: there is no last run to compare with, or `--rerun`).
    All(Option<String>),
    /// Reuse the rows of the tests an edit cannot affect.
    Reuse(Box<Reuse>),
}

/// The last run, and which of its tests' rows this run may reuse.
pub struct Reuse {
    pub previous: Spectra,
    /// When the last run started.
    pub when: SystemTime,
    /// Per test of the last run: its row may be reused.
    pub reusable: Vec<bool>,
    /// Per changed source file: where each old line went (`[line - 1]`; `None`: changed).
    moved: HashMap<String, Vec<Option<u32>>>,
    /// Functions of the last run that the edit touched.
    changed: Vec<FunctionSpan>,
    /// Per test of the last run: its row ran a line (or took an edge) the edit touched.
    touched: Vec<bool>,
    /// Which environment variables changed and how many tests that re-runs, in words.
    pub env_note: Option<String>,
}

/// A build of only what runs again ([`Reuse::narrowed`]).
#[derive(Debug)]
pub struct Narrowed {
    /// Test targets (`-p PKG --lib --test NAME --bin NAME`).
    pub tests: Option<Selection>,
    /// Libraries' doctests (`-p PKG --doc`).
    pub doctests: Option<Selection>,
}

/// A reused test's row, its lines and blocks where they are now.
pub struct Row {
    pub record: TestRecord,
    pub lines: Vec<(String, u32)>,
    /// `(from, to)`; `from` `None`: the entry into `to`.
    pub edges: Vec<(Option<BlockRef>, BlockRef)>,
}

/// A block of a reused row.
#[derive(Clone)]
pub struct BlockRef {
    pub function: String,
    pub index: u32,
    pub lines: Vec<(String, u32)>,
}

/// Compares the last run (its spectra, with their snapshot) with what this run sees.
pub fn choose(mut previous: Spectra, now: &Snapshot, root: &Path) -> Choice {
    let Some(then) = previous.snapshot.take() else {
        return Choice::All(Some("the last run's spectra do not say what it was built from".into()));
    };
    if let Some(part) = changed_context(&then, now) {
        return Choice::All(Some(part));
    }
    let env_changed = changed_env(&then, now);
    if let Some(name) = env_changed.iter().find(|n| builds_read(n, &then.build_env)) {
        return Choice::All(Some(format!(
            "the environment variable {name} changed (builds or every test read it)"
        )));
    }
    let spans = spans_by_file(&previous.functions);
    let mut moved = HashMap::new();
    let mut changed = Vec::new();
    for (file, old) in &then.files {
        let Some(new) = now.files.get(file) else {
            return Choice::All(Some(format!("{file} was removed")));
        };
        if new == old {
            continue;
        }
        let (Some(old), Some(new)) = (old.line_hashes(), new.line_hashes()) else {
            return Choice::All(Some(format!("{file} changed")));
        };
        let Some(functions) = spans.get(file.as_str()) else {
            return Choice::All(Some(format!("{file} changed, and no test ran a function in it")));
        };
        match locate(&old, &new, functions) {
            Ok((lines, touched)) => {
                if let Some(f) = touched.iter().find(|f| is_const_fn(root, f, &lines)) {
                    return Choice::All(Some(format!(
                        "the const fn at {file}:{} changed (it may be evaluated while compiling)",
                        f.start
                    )));
                }
                moved.insert(file.clone(), lines);
                changed.extend(touched.into_iter().cloned());
            }
            Err(line) => return Choice::All(Some(format!("{file} changed outside a function (line {line})"))),
        }
    }
    if let Some(file) = now.files.keys().find(|f| !then.files.contains_key(*f)) {
        return Choice::All(Some(format!("{file} was added")));
    }
    let when = UNIX_EPOCH + Duration::from_secs(then.taken);
    let env_note = env_note(&previous.tests, &env_changed);
    let mut reuse = Reuse {
        reusable: previous
            .tests
            .iter()
            .map(|t| {
                reusable_outcome(t)
                    && (env_changed.is_empty()
                        || t.env_reads
                            .as_ref()
                            .is_some_and(|r| !r.iter().any(|n| env_changed.contains(n))))
            })
            .collect(),
        touched: vec![false; previous.tests.len()],
        env_note,
        previous,
        when,
        moved,
        changed,
    };
    reuse.drop_dirty();
    Choice::Reuse(Box::new(reuse))
}

/// What a change of the environment (`changed`, variable names) re-runs, in words: the tests
/// that read a changed variable, and those whose reads were not watched (`None`: no change).
fn env_note(tests: &[TestRecord], changed: &[String]) -> Option<String> {
    if changed.is_empty() {
        return None;
    }
    let read = tests
        .iter()
        .filter(|t| {
            t.env_reads
                .as_ref()
                .is_some_and(|r| r.iter().any(|n| changed.contains(n)))
        })
        .count();
    let unobserved = tests.iter().filter(|t| t.env_reads.is_none()).count();
    let names = match changed.join(", ") {
        long if long.len() > 80 => format!("{} and {} more variables", changed[0], changed.len() - 1),
        names => names,
    };
    Some(format!(
        "{names} changed in the environment: {} read it, {} could not be watched; they run again",
        crate::ui::counted(read, "test", "tests"),
        crate::ui::counted(unobserved, "test's reads", "tests' reads"),
    ))
}

/// The environment variables that differ between the two snapshots, sorted.
fn changed_env(then: &Snapshot, now: &Snapshot) -> Vec<String> {
    let names: BTreeSet<&String> = then.context.keys().chain(now.context.keys()).collect();
    names
        .into_iter()
        .filter(|n| then.context.get(*n) != now.context.get(*n))
        .filter_map(|n| n.strip_prefix("env:").map(str::to_string))
        .collect()
}

/// The first part of the context other than the environment that differs, in words.
fn changed_context(then: &Snapshot, now: &Snapshot) -> Option<String> {
    let names: BTreeSet<&String> = then.context.keys().chain(now.context.keys()).collect();
    let name = names
        .into_iter()
        .filter(|n| !n.starts_with("env:"))
        .find(|n| then.context.get(*n) != now.context.get(*n))?;
    Some(match name.as_str() {
        "selection" => "the packages, targets, features, filter or flags changed".into(),
        "toolchain" => "the toolchain changed".into(),
        "cargo-sfl" => "cargo sfl changed".into(),
        _ => format!("{name} changed"),
    })
}

/// Whether a test's row may be reused at all: only a clean pass of a deterministic test (a
/// failing, crashed, timed-out or flaky test, one whose coverage was partial, and one whose row
/// is a sample of random inputs are always run again).
fn reusable_outcome(t: &TestRecord) -> bool {
    t.outcome == Outcome::Passed && !t.flaky && t.warnings.is_empty() && t.attempts.is_empty() && t.volatile.is_none()
}

fn spans_by_file(functions: &[FunctionSpan]) -> HashMap<&str, Vec<&FunctionSpan>> {
    let mut by_file: HashMap<&str, Vec<&FunctionSpan>> = HashMap::new();
    for f in functions {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    by_file
}

/// Locates the edit of a file (`old` and `new` line hashes) in `functions`: where each old
/// line went (`None`: changed) and the functions containing a change. `Err(line)`: a change
/// (at that old line) lies in no function.
fn locate<'f>(
    old: &[u64],
    new: &[u64],
    functions: &[&'f FunctionSpan],
) -> Result<(Vec<Option<u32>>, Vec<&'f FunctionSpan>), u32> {
    use similar::{Algorithm, DiffOp, capture_diff_slices};
    let mut lines = vec![None; old.len()];
    let mut touched: Vec<&FunctionSpan> = Vec::new();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => {
                for k in 0..len {
                    lines[old_index + k] = Some((new_index + k + 1) as u32);
                }
            }
            DiffOp::Delete { old_index, old_len, .. } | DiffOp::Replace { old_index, old_len, .. } => {
                // Old lines old_index+1 ..= old_index+old_len (1-based) changed.
                let (first, last) = (old_index as u32 + 1, (old_index + old_len) as u32);
                let within: Vec<_> = functions
                    .iter()
                    .filter(|f| f.start <= first && last <= f.end)
                    .copied()
                    .collect();
                if within.is_empty() {
                    return Err(first);
                }
                touched.extend(within);
            }
            DiffOp::Insert { old_index, .. } => {
                // New lines between old lines old_index and old_index + 1 (1-based).
                let after = old_index as u32;
                let within: Vec<_> = functions
                    .iter()
                    .filter(|f| f.start <= after && after < f.end)
                    .copied()
                    .collect();
                if within.is_empty() {
                    return Err(after.max(1));
                }
                touched.extend(within);
            }
        }
    }
    touched.sort();
    touched.dedup();
    Ok((lines, touched))
}

/// Whether the changed function `f` is a `const fn` now: its first line (where the last
/// unchanged line before it went, plus one), or the line before, declares one.
fn is_const_fn(root: &Path, f: &FunctionSpan, moved: &[Option<u32>]) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join(&f.file)) else {
        return true;
    };
    let start = (1..=f.start)
        .rev()
        .find_map(|l| moved[l as usize - 1].map(|n| n + f.start - l))
        .unwrap_or(f.start);
    let lines: Vec<&str> = text.lines().collect();
    let declares = |l: &str| {
        let words: Vec<&str> = l
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        words
            .windows(2)
            .any(|w| w[0] == "const" && matches!(w[1], "fn" | "unsafe" | "extern"))
    };
    (start.saturating_sub(2)..start)
        .filter_map(|i| lines.get(i as usize))
        .any(|l| declares(l))
}

impl Reuse {
    /// Where line `line` of `file` in the last run is now (`None`: it changed).
    fn line_now(&self, file: &str, line: u32) -> Option<u32> {
        match self.moved.get(file) {
            None => Some(line),
            Some(lines) => lines.get((line as usize).checked_sub(1)?).copied().flatten(),
        }
    }

    /// Whether a line of the last run is in a function the edit touched, or changed itself.
    fn dirty(&self, file: &str, line: u32) -> bool {
        self.line_now(file, line).is_none()
            || self
                .changed
                .iter()
                .any(|f| f.file == file && f.start <= line && line <= f.end)
    }

    /// No row that ran a dirty line, or took an edge from or to a block with one, is reused.
    fn drop_dirty(&mut self) {
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

    /// How many of the last run's tests run again only because their rows are samples.
    pub fn volatile(&self) -> usize {
        self.previous
            .tests
            .iter()
            .filter(|t| t.volatile.is_some() && t.outcome == Outcome::Passed)
            .count()
    }

    /// Checks the edit against the functions the new build's coverage maps name (`now`):
    /// a test of the last run that ran a function which is not where the diff says it went is
    /// not reused (`Ok(n)`: how many such tests); a new function that is not inside a changed
    /// one means the diff does not explain the edit (`Err`: why every test runs).
    /// `complete`: the build made every binary of the selection, so a function missing from it
    /// is gone; a build of some binaries only may simply not hold it (a generic function
    /// instantiated in other binaries), and then only a function of the build overlapping
    /// where the diff put it says the diff is wrong.
    pub fn verify(&mut self, now: &HashSet<FunctionSpan>, complete: bool) -> Result<usize, String> {
        let mut expected = HashSet::new();
        let mut lost = Vec::new();
        for f in &self.previous.functions {
            if !self.moved.contains_key(&f.file) || self.changed.contains(f) {
                continue;
            }
            let moved = (self.line_now(&f.file, f.start), self.line_now(&f.file, f.end));
            match moved {
                (Some(start), Some(end)) => {
                    let span = FunctionSpan {
                        file: f.file.clone(),
                        start,
                        end,
                    };
                    let overlapped = || now.iter().any(|g| g.file == f.file && g.start <= end && start <= g.end);
                    if now.contains(&span) {
                        expected.insert(span);
                    } else if complete || overlapped() {
                        lost.push(f.clone());
                    }
                }
                _ => lost.push(f.clone()),
            }
        }
        // Changed functions as they are now: the lines between the new places of the
        // unchanged lines just outside them.
        let changed_now: Vec<(String, u32, u32)> = self
            .changed
            .iter()
            .map(|f| {
                let lines = &self.moved[&f.file];
                let before = (1..f.start).rev().find_map(|l| lines[l as usize - 1]).unwrap_or(0);
                let after = (f.end + 1..=lines.len() as u32)
                    .find_map(|l| lines[l as usize - 1])
                    .unwrap_or(u32::MAX);
                (f.file.clone(), before, after)
            })
            .collect();
        for f in now
            .iter()
            .filter(|f| self.moved.contains_key(&f.file) && !expected.contains(*f))
        {
            let inside = changed_now
                .iter()
                .any(|(file, before, after)| *file == f.file && *before < f.start && f.end < *after);
            if !inside {
                return Err(format!(
                    "{} has a function at lines {}-{} that the last run did not know",
                    f.file, f.start, f.end
                ));
            }
        }
        let before = self.reusable.iter().filter(|r| **r).count();
        self.changed.extend(lost);
        self.drop_dirty();
        Ok(before - self.reusable.iter().filter(|r| **r).count())
    }

    /// The last run's units (lines the coverage maps knew) and functions, where they are now,
    /// but those the edit touched: what the binaries this run did not build would have named.
    pub fn known_now(&self) -> (Vec<(String, u32)>, Vec<FunctionSpan>) {
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

    /// The test binaries (by id) of the last run's tests that must run again.
    pub fn binaries_to_run(&self) -> BTreeSet<&str> {
        self.previous
            .tests
            .iter()
            .zip(&self.reusable)
            .filter(|(t, reused)| !**reused && t.outcome.ran())
            .map(|(t, _)| t.binary.as_str())
            .collect()
    }

    /// The build this run needs: only the test targets (libraries, binaries, integration tests,
    /// examples and benches) and the doctests of the tests that run again (`None`: the
    /// selection's whole build, for an edit no test ran or a target of a kind not known; both
    /// parts `None`: no build at all, nothing changed and no test runs again).
    /// cargo applies target flags to every package given (`-p a -p b --lib --test t` builds
    /// both libraries' tests, and `t` of whichever has it): tests of several packages build a
    /// little more than they need, never less.
    pub fn narrowed(&self, selection: &Selection) -> Option<Narrowed> {
        let binaries = self.binaries_to_run();
        if binaries.is_empty() && self.edited() {
            // An edit no test ran: the whole build says whether it compiles.
            return None;
        }
        let only = |package: Vec<String>| Selection {
            package,
            workspace: false,
            exclude: Vec::new(),
            lib: false,
            bins: false,
            bin: Vec::new(),
            tests: false,
            test: Vec::new(),
            examples: false,
            example: Vec::new(),
            benches: false,
            bench: Vec::new(),
            all_targets: false,
            doc: false,
            no_doctests: true,
            ..selection.clone()
        };
        let (mut tests, mut doctests) = (only(Vec::new()), only(Vec::new()));
        doctests.doc = true;
        doctests.no_doctests = false;
        for id in binaries {
            let (package, target) = id.split_once("::").map_or((id, None), |(p, t)| (p, Some(t)));
            let kind = target.map(|t| t.split_once('/').unwrap_or(("test", t)));
            let into = if matches!(kind, Some(("doctest", _))) {
                &mut doctests
            } else {
                &mut tests
            };
            if !into.package.iter().any(|p| p == package) {
                into.package.push(package.to_string());
            }
            match kind {
                None => tests.lib = true,
                Some(("bin", name)) => tests.bin.push(name.to_string()),
                Some(("test", name)) => tests.test.push(name.to_string()),
                Some(("example", name)) => tests.example.push(name.to_string()),
                Some(("bench", name)) => tests.bench.push(name.to_string()),
                Some(("doctest", _)) => {}
                // A kind cargo sfl does not know: the whole build.
                Some(_) => return None,
            }
        }
        for names in [&mut tests.bin, &mut tests.test, &mut tests.example, &mut tests.bench] {
            names.sort();
            names.dedup();
        }
        Some(Narrowed {
            tests: (!tests.package.is_empty()).then_some(tests),
            doctests: (!doctests.package.is_empty()).then_some(doctests),
        })
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

    /// The reusable rows of the last run's tests `which` (indices into its tests), lines and
    /// blocks where they are now.
    pub fn rows(&self, which: &[usize]) -> Vec<Row> {
        let p = &self.previous;
        let unit = |u: crate::spectra::UnitId| {
            let unit = &p.units[u.index()];
            (
                unit.file.clone(),
                self.line_now(&unit.file, unit.line).unwrap_or(unit.line),
            )
        };
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
        let slot: HashMap<usize, usize> = which.iter().enumerate().map(|(i, &t)| (t, i)).collect();
        for (u, column) in p.coverage.iter().enumerate() {
            for t in column.iter() {
                if let Some(&i) = slot.get(&t) {
                    rows[i].lines.push(unit(crate::spectra::UnitId(u as u32)));
                }
            }
        }
        if let Some(edges) = &p.edges {
            let block = |b: crate::edges::BlockId| {
                let b = &edges.blocks[b.index()];
                BlockRef {
                    function: b.function.clone(),
                    index: b.index,
                    lines: b.lines.iter().map(|&u| unit(u)).collect(),
                }
            };
            for (e, column) in edges.edges.iter().zip(&edges.coverage) {
                for t in column.iter() {
                    if let Some(&i) = slot.get(&t) {
                        rows[i].edges.push((e.from.map(block), block(e.to)));
                    }
                }
            }
        }
        rows
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::line_hashes;

    fn span(start: u32, end: u32) -> FunctionSpan {
        FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        }
    }

    const OLD: &str = "use x;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n";

    fn locate_text(new: &str, spans: &[FunctionSpan]) -> Result<(Vec<Option<u32>>, Vec<FunctionSpan>), u32> {
        let refs: Vec<&FunctionSpan> = spans.iter().collect();
        locate(&line_hashes(OLD.as_bytes()), &line_hashes(new.as_bytes()), &refs)
            .map(|(lines, touched)| (lines, touched.into_iter().cloned().collect()))
    }

    #[test]
    fn an_edit_inside_a_function_touches_it_and_moves_the_lines_below() {
        let spans = [span(2, 4), span(6, 8)];
        let (lines, touched) =
            locate_text("use x;\nfn a() {\n    1;\n    3\n}\n\nfn b() {\n    2\n}\n", &spans).unwrap();
        assert_eq!(touched, [span(2, 4)]);
        assert_eq!(lines[2], None, "the changed line");
        assert_eq!(lines[5..8], [Some(7), Some(8), Some(9)], "b moved one line down");
        // A change of b's body alone.
        let (lines, touched) = locate_text("use x;\nfn a() {\n    1\n}\n\nfn b() {\n    5\n}\n", &spans).unwrap();
        assert_eq!(touched, [span(6, 8)]);
        assert_eq!(lines[..4], [Some(1), Some(2), Some(3), Some(4)]);
    }

    /// A last run over OLD: `t_a` ran a, `t_b` ran b, `t_fail` ran b and failed.
    fn last_run() -> Spectra {
        use crate::spectra::Unit;
        let tests = vec![
            TestRecord::new("p", "t_a", Outcome::Passed),
            TestRecord::new("p", "t_b", Outcome::Passed),
            TestRecord::new("p", "t_fail", Outcome::Failed),
        ];
        let unit = |line| Unit {
            file: "src/lib.rs".into(),
            line,
        };
        let units = vec![unit(2), unit(3), unit(6), unit(7)];
        let rows = [vec![0, 1], vec![2, 3], vec![2, 3]].map(|r| r.into_iter().map(crate::spectra::UnitId).collect());
        let mut s = Spectra::from_tests("/ws".into(), tests, units, &rows);
        s.set_functions(vec![span(2, 4), span(6, 8)]);
        s.snapshot = Some(snapshot(OLD));
        s
    }

    fn snapshot(text: &str) -> Snapshot {
        let mut s = Snapshot::default();
        s.context.insert("toolchain".into(), "1".into());
        s.files.insert("src/lib.rs".into(), FileState::lines(text.as_bytes()));
        s.files.insert("Cargo.toml".into(), FileState::digest(b"[package]"));
        s
    }

    /// [`choose`] against the last run, with `new` as src/lib.rs now (`now` otherwise its
    /// snapshot).
    fn choose_new(new: &str, now: Option<Snapshot>) -> Choice {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), new).unwrap();
        choose(last_run(), &now.unwrap_or_else(|| snapshot(new)), dir.path())
    }

    fn reuse(choice: Choice) -> Box<Reuse> {
        match choice {
            Choice::Reuse(r) => r,
            Choice::All(why) => panic!("every test runs: {why:?}"),
        }
    }

    #[test]
    fn only_the_tests_that_ran_a_changed_function_or_failed_run_again() {
        // b's body changed: t_b runs, t_a's row is reused, t_fail runs because it failed.
        let r = reuse(choose_new("use x;\nfn a() {\n    1\n}\n\nfn b() {\n    5\n}\n", None));
        assert_eq!(r.reusable, [true, false, false]);
        // A line added in a: t_a runs; t_b's row is reused with its lines one further down.
        let longer_a = "use x;\nfn a() {\n    0;\n    1\n}\n\nfn b() {\n    2\n}\n";
        let mut r = reuse(choose_new(longer_a, None));
        assert_eq!(r.reusable, [false, true, false]);
        let rows = r.rows(&[1]);
        assert_eq!(
            rows[0].lines,
            [("src/lib.rs".to_string(), 7), ("src/lib.rs".to_string(), 8)]
        );
        // The new build has b where the diff says it went, and a (changed) one line longer.
        let now: HashSet<FunctionSpan> = [span(2, 5), span(7, 9)].into_iter().collect();
        assert_eq!(r.verify(&now, true), Ok(0));
        assert_eq!(r.reusable, [false, true, false]);
        // A build where b is not where the diff put it: t_b runs too.
        let mut r2 = reuse(choose_new(longer_a, None));
        let elsewhere: HashSet<FunctionSpan> = [span(2, 5), span(7, 10)].into_iter().collect();
        assert!(
            r2.verify(&elsewhere, true).is_err(),
            "a function the last run did not know"
        );
        // b missing: from a build of some binaries only, it may be in the others (its place
        // stands); from the whole build, it is gone and t_b runs.
        let without_b: HashSet<FunctionSpan> = [span(2, 5)].into_iter().collect();
        let mut r3 = reuse(choose_new(longer_a, None));
        assert_eq!(r3.verify(&without_b, false), Ok(0));
        assert_eq!(r3.known_now().1.len(), 1, "b is still known, where the diff put it");
        assert_eq!(r2.verify(&without_b, true), Ok(1));
        assert_eq!(r2.reusable, [false, false, false]);
    }

    #[test]
    fn a_change_of_context_files_or_items_runs_every_test() {
        let all = |c: Choice| match c {
            Choice::All(why) => why.unwrap(),
            Choice::Reuse(_) => panic!("rows reused"),
        };
        let mut now = snapshot(OLD);
        now.context.insert("toolchain".into(), "2".into());
        assert_eq!(all(choose_new(OLD, Some(now))), "the toolchain changed");
        let mut now = snapshot(OLD);
        now.files.insert("Cargo.toml".into(), FileState::digest(b"[package]\n"));
        assert_eq!(all(choose_new(OLD, Some(now))), "Cargo.toml changed");
        let mut now = snapshot(OLD);
        now.files.insert("tests/data.txt".into(), FileState::digest(b""));
        assert_eq!(all(choose_new(OLD, Some(now))), "tests/data.txt was added");
        let now = "use y;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n";
        assert_eq!(
            all(choose_new(now, None)),
            "src/lib.rs changed outside a function (line 1)"
        );
        let mut old = last_run();
        old.snapshot = None;
        assert!(all(choose(old, &snapshot(OLD), Path::new("/nonexistent"))).contains("do not say"));
        // Nothing changed: every passing test's row is reused.
        assert_eq!(reuse(choose_new(OLD, None)).reusable, [true, true, false]);
    }

    #[test]
    fn a_change_of_the_environment_reruns_the_tests_that_read_it() {
        let with_env = |name: &str, value: &str, declared: &[&str]| {
            let mut last = last_run();
            last.tests[0].env_reads = Some(vec!["APP_MODE".into()]);
            last.tests[1].env_reads = None;
            let then = last.snapshot.as_mut().unwrap();
            then.build_env = declared.iter().map(|d| d.to_string()).collect();
            then.context.insert(format!("env:{name}"), "old".into());
            let mut now = snapshot(OLD);
            now.context.insert(format!("env:{name}"), value.into());
            choose(last, &now, Path::new("/nonexistent"))
        };
        // Read by t_a; t_b's reads were not watched; t_fail runs anyway.
        let r = reuse(with_env("APP_MODE", "new", &[]));
        assert_eq!(r.reusable, [false, false, false]);
        assert!(
            r.env_note.as_deref().unwrap().contains("APP_MODE changed"),
            "{:?}",
            r.env_note
        );
        // Read by no test that was watched: only the unwatched one runs.
        assert_eq!(reuse(with_env("TMUX_PANE", "%3", &[])).reusable, [true, false, false]);
        // Read by builds: every test.
        for (name, declared) in [("RUSTFLAGS", &[][..]), ("PATH", &[]), ("APP_KEY", &["APP_KEY"])] {
            match with_env(name, "new", declared) {
                Choice::All(Some(why)) => assert!(why.contains(name), "{why}"),
                _ => panic!("{name}: rows reused"),
            }
        }
    }

    #[test]
    fn only_the_targets_of_the_tests_that_run_again_are_built() {
        let mut last = last_run();
        let binaries = ["p", "p::integration", "q::bin/cli", "p::doctest/p", "q::example/e"];
        last.tests = binaries
            .iter()
            .map(|b| TestRecord::new(*b, "t", Outcome::Passed))
            .collect();
        let mut r = reuse(choose_new(OLD, None));
        let user = Selection {
            features: vec!["f".into()],
            workspace: true,
            ..Selection::default()
        };
        r.previous = last;
        r.reusable = vec![true; 5];
        let nothing = r.narrowed(&user).unwrap();
        assert!(
            nothing.tests.is_none() && nothing.doctests.is_none(),
            "nothing changed, nothing runs: no build"
        );
        r.reusable = vec![false, false, false, true, true];
        let n = r.narrowed(&user).unwrap();
        assert!(n.doctests.is_none());
        let t = n.tests.unwrap();
        assert_eq!(
            (t.package, t.lib, t.test, t.bin),
            (
                vec!["p".to_string(), "q".into()],
                true,
                vec!["integration".to_string()],
                vec!["cli".to_string()]
            )
        );
        assert!(!t.workspace && t.no_doctests && !t.doc && t.features == ["f"]);
        r.reusable = vec![true, true, true, false, true];
        let n = r.narrowed(&user).unwrap();
        let d = n.doctests.unwrap();
        assert!(n.tests.is_none() && d.doc && !d.lib && d.package == ["p"] && d.features == ["f"]);
        r.reusable[4] = false;
        let e = r.narrowed(&user).unwrap().tests.unwrap();
        assert_eq!(
            (e.package, e.example, e.lib, e.examples),
            (vec!["q".to_string()], vec!["e".to_string()], false, false),
            "an example's test runs again: that example is built with the harness"
        );
        r.reusable = vec![true; 5];
        r.moved.insert("src/lib.rs".into(), Vec::new());
        assert!(
            r.narrowed(&user).is_none(),
            "an edit no test ran: the whole build checks it compiles"
        );
    }

    #[test]
    fn a_changed_const_fn_runs_every_test() {
        let new = "use x;\nconst fn a() -> u32 {\n    2\n}\n\nfn b() {\n    2\n}\n";
        match choose_new(new, None) {
            Choice::All(Some(why)) => assert!(why.contains("const fn"), "{why}"),
            _ => panic!("a const fn may be evaluated while compiling"),
        }
    }

    #[test]
    fn an_edit_outside_every_function_is_located_nowhere() {
        let spans = [span(2, 4), span(6, 8)];
        assert_eq!(
            locate_text("use y;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n", &spans).unwrap_err(),
            1
        );
        // A new function between a and b: inserted after line 4, which no span continues.
        let added = "use x;\nfn a() {\n    1\n}\nfn c() {}\n\nfn b() {\n    2\n}\n";
        assert!(locate_text(added, &spans).is_err());
        // The same file unchanged: nothing touched.
        let (lines, touched) = locate_text(OLD, &spans).unwrap();
        assert!(touched.is_empty());
        assert!(lines.iter().all(Option::is_some));
    }
}
