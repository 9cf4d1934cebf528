//! The choice between reusing the last run's rows and running every test ([`choose`]).

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use super::added::{mentioned_elsewhere, new_names};
use super::environment::{builds_read, changed_env, env_note};
use super::items::FunctionsNow;
use super::locate::{Located, is_const_fn, locate, same_tokens, spans_by_file};
use super::reuse::Reuse;
use super::targets::new_target_root;
use crate::spectra::{FileState, FunctionSpan, Outcome, Snapshot, Spectra, TestRecord};

/// What a run does with the last run.
pub enum Choice {
    /// Run every test, and why (`None`: there is no last run to compare with, or `--rerun`).
    All(Option<String>),
    /// Reuse the rows of the tests an edit cannot affect.
    Reuse(Box<Reuse>),
}

impl Choice {
    /// The rows to reuse, if any.
    pub fn reuse(&self) -> Option<&Reuse> {
        match self {
            Choice::Reuse(r) => Some(r),
            Choice::All(_) => None,
        }
    }
}

/// Compares the last run (its spectra, with their snapshot) with what this run sees.
pub fn choose(mut previous: Spectra, now: &Snapshot, root: &Path) -> Choice {
    let Some(then) = previous.snapshot.take() else {
        return Choice::All(Some("the last run's spectra do not say what it was built from".into()));
    };
    if let Some(part) = changed_context(&then, now) {
        return Choice::All(Some(part));
    }
    if let Some(why) = super::scripts::changed_input(&then, root) {
        return Choice::All(Some(why));
    }
    let env_changed = changed_env(&then, now);
    if let Some(name) = env_changed.iter().find(|n| builds_read(n, &then.build_env)) {
        return Choice::All(Some(format!(
            "the environment variable {name} changed (builds or every test read it)"
        )));
    }
    let spans = spans_by_file(&previous.functions);
    let gone = super::targets::gone_targets(&then, now, root, &previous);
    let Edits {
        moved,
        added,
        changed,
        reread,
    } = match edits(&then, now, &spans, (root, &gone.files)) {
        Ok(edits) => edits,
        Err(EveryTest(why)) => return Choice::All(Some(why)),
    };
    let when = UNIX_EPOCH + Duration::from_secs(then.taken);
    let env_note = env_note(&previous.tests, &env_changed);
    let mut reuse = Reuse {
        reusable: previous
            .tests
            .iter()
            .map(|t| {
                !gone.binaries.contains(&t.binary)
                    && reusable_outcome(t)
                    && (env_changed.is_empty()
                        || t.env_reads
                            .as_ref()
                            .is_some_and(|r| !r.iter().any(|n| env_changed.contains(n))))
            })
            .collect(),
        touched: vec![false; previous.tests.len()],
        gone,
        env_note,
        ran_no_code: 0,
        previous,
        when,
        moved,
        added,
        changed,
        reread,
    };
    if !reuse.moved.is_empty() || !reuse.added.is_empty() {
        for t in ran_no_code(&reuse.previous) {
            if std::mem::replace(&mut reuse.reusable[t], false) {
                reuse.ran_no_code += 1;
            }
        }
    }
    reuse.drop_dirty();
    Choice::Reuse(Box::new(reuse))
}

/// Where an edit of the workspace's sources went, when only functions' bodies changed (and
/// harmless additions outside them).
struct Edits {
    /// Per changed file, where each old line is now.
    moved: HashMap<String, Vec<Option<u32>>>,
    /// Per file, the ranges of new functions added outside every function.
    added: HashMap<String, Vec<(u32, u32)>>,
    /// The functions whose bodies changed.
    changed: Vec<FunctionSpan>,
    /// The sources whose proptest persistence files changed ([`Reuse::reread`]).
    reread: Vec<String>,
}

/// Why every test runs again, in words.
struct EveryTest(String);

impl From<String> for EveryTest {
    fn from(why: String) -> Self {
        EveryTest(why)
    }
}

/// The edit from `then` to `now` ([`Edits`]), but the files of targets removed whole (`gone`,
/// every line of theirs changed); `Err`: why every test runs instead.
fn edits(
    then: &Snapshot,
    now: &Snapshot,
    spans: &HashMap<&str, Vec<&FunctionSpan>>,
    (root, gone): (&Path, &BTreeSet<String>),
) -> Result<Edits, EveryTest> {
    let mut edits = Edits {
        moved: HashMap::new(),
        added: HashMap::new(),
        changed: Vec::new(),
        reread: reread(then, now),
    };
    for (file, old) in &then.files {
        if super::snapshot::persisted_for(file).is_some() {
            continue;
        }
        if gone.contains(file) {
            let lines = old.line_hashes().map_or(0, |l| l.len());
            edits.moved.insert(file.clone(), vec![None; lines]);
            continue;
        }
        let new = state_now(file, old, now, root)?;
        let new = new.as_ref();
        if new == old {
            continue;
        }
        let (Some(old), Some(new)) = (old.line_hashes(), new.line_hashes()) else {
            return Err(changed_file(file, now).into());
        };
        if let Some((lines, changed)) = comments_only(root, file, (&old, &new), spans) {
            edits.moved.insert(file.clone(), lines);
            edits.changed.extend(changed);
            continue;
        }
        if now.compile_time.contains(file) {
            return Err(runs_while_compiling(file).into());
        }
        let Some(functions) = spans.get(file.as_str()) else {
            return Err(format!("{file} changed, and no test ran a function in it").into());
        };
        let mut at = locate(&old, &new, functions);
        // The file as it is now, read once: functions deleted whole (the tests that ran them
        // run again, nothing beyond), moved ones that report their own line, and, parsed once,
        // what its edit's functions reach.
        let text = std::fs::read_to_string(root.join(file)).ok();
        let gone = super::deleted::judge((root, file, text.as_deref()), &old, &new, &mut at);
        let located = super::located::moved_and_located(text.as_deref(), functions, &at.lines);
        edits.changed.extend(gone.into_iter().chain(located).cloned());
        let now_fns = text.as_deref().and_then(FunctionsNow::parse);
        let placed = place_in_unknown_functions(now_fns.as_ref(), file, &mut at)?;
        let touched: Vec<&FunctionSpan> = at.touched.iter().copied().chain(&placed).collect();
        if let Some(f) = touched.iter().find(|f| is_const_fn(root, f, &at.lines)) {
            return Err(const_fn_changed(file, f.start).into());
        }
        if let Some(why) = touched
            .iter()
            .find_map(|f| now_fns.as_ref()?.reaches_beyond(f, &at.lines))
        {
            return Err(why.into());
        }
        edits.changed.extend(placed);
        if !at.outside.is_empty() {
            let ranges = added_harmlessly(root, file, &new, &at.outside, now)
                .ok_or_else(|| EveryTest(outside_a_function(file, at.outside[0].1.0)))?;
            edits.added.insert(file.clone(), ranges);
        }
        edits.moved.insert(file.clone(), at.lines);
        edits.changed.extend(at.touched.into_iter().cloned());
    }
    edits.added.extend(added_targets(then, now)?);
    Ok(edits)
}

/// The sources whose persisted proptest failures changed: a failing case proptest persisted
/// (written by `cargo test` between two runs, say) is an input of the property tests of its
/// source, which run again, not every test.
fn reread(then: &Snapshot, now: &Snapshot) -> Vec<String> {
    let persisted: BTreeSet<&String> = then.files.keys().chain(now.files.keys()).collect();
    persisted
        .into_iter()
        .filter(|file| then.files.get(*file) != now.files.get(*file))
        .filter_map(|file| super::snapshot::persisted_for(file))
        .collect()
}

/// The edit of `file` (line hashes `old`, `new`) when it changed comments, blank lines or
/// whitespace alone ([`same_tokens`]): where each old line went, and the functions it changed
/// (those whose blank lines it added or removed, and those moved that report their own line).
/// `None` for an edit of code.
fn comments_only(
    root: &Path,
    file: &str,
    (old, new): (&[u64], &[u64]),
    spans: &HashMap<&str, Vec<&FunctionSpan>>,
) -> Option<(Vec<Option<u32>>, Vec<FunctionSpan>)> {
    let functions = spans.get(file).map_or(&[][..], Vec::as_slice);
    let at = same_tokens(old, new, functions)?;
    let text = std::fs::read_to_string(root.join(file)).ok();
    let located = super::located::moved_and_located(text.as_deref(), functions, &at.lines);
    let changed = located.into_iter().chain(at.touched).cloned().collect();
    Some((at.lines, changed))
}

/// The Rust sources added since `then` that are new targets ([`new_target_root`]), each whole
/// as its added lines; `Err` for any other file added.
fn added_targets(then: &Snapshot, now: &Snapshot) -> Result<HashMap<String, Vec<(u32, u32)>>, EveryTest> {
    let mut added = HashMap::new();
    for (file, state) in &now.files {
        if then.files.contains_key(file) || super::snapshot::persisted_for(file).is_some() {
            continue;
        }
        // A new test target (`tests/x.rs`) is a crate of its own that no other target sees:
        // its tests are new, and the whole build finds them.
        match state.line_hashes() {
            Some(lines) if new_target_root(file, now) => {
                added.insert(file.clone(), vec![(1, lines.len().max(1) as u32)]);
            }
            _ => return Err(format!("{file} was added").into()),
        }
    }
    Ok(added)
}

/// The state of `file` (`old` in the last run) now: in the snapshot `now`, or for a file the
/// walk of the packages leaves out that the last build read (a file git ignores
/// that a test `include_str!`s, `snapshot::also_read`), as it is on disk.
fn state_now<'a>(
    file: &str,
    old: &FileState,
    now: &'a Snapshot,
    root: &Path,
) -> Result<std::borrow::Cow<'a, FileState>, EveryTest> {
    if let Some(new) = now.files.get(file) {
        return Ok(std::borrow::Cow::Borrowed(new));
    }
    match super::snapshot::state_of(file, &root.join(file)) {
        Some(state) if state.line_hashes().is_none() || state == *old => Ok(std::borrow::Cow::Owned(state)),
        Some(_) => Err(format!("{file} changed").into()),
        None => Err(format!("{file} was removed").into()),
    }
}

/// The functions that hold the changes `at` found outside every function of the last run, as
/// the syntax of the file now shows them (`now`, of `file`): one compiled out by a `cfg`, or
/// a generic no test instantiated, is one no test ran, and its lines are dirty like any
/// function's. Insertions placed so leave `at.outside`; `Err`: a change no function holds.
fn place_in_unknown_functions(
    now: Option<&FunctionsNow>,
    file: &str,
    at: &mut Located<'_>,
) -> Result<Vec<FunctionSpan>, EveryTest> {
    let enclosing = |new: (u32, u32), old: (u32, u32)| now?.enclosing(file, new, old, &at.lines);
    let mut placed = Vec::new();
    for &(old, new) in &at.unplaced {
        let span = enclosing(new, old).ok_or_else(|| EveryTest(outside_a_function(file, new.0)))?;
        placed.push(span);
    }
    let mut outside = Vec::new();
    for &(after, new) in &at.outside {
        match enclosing(new, (after, after)) {
            Some(span) => placed.push(span),
            None => outside.push((after, new)),
        }
    }
    at.outside = outside;
    Ok(placed)
}

/// The tests of `spectra` that ran no line of the workspace's code outside test code: what
/// such a test checks is something no coverage shows (the sources' text, as a test that runs
/// `cargo fmt --check` or looks for `TODO`s does; files; other programs; an uninstrumented path
/// dependency), so an edit of any Rust source may change its outcome.
fn ran_no_code(spectra: &Spectra) -> Vec<usize> {
    let mut ran = crate::bitset::BitSet::new(spectra.tests.len());
    for (u, tests) in spectra.coverage.iter().enumerate() {
        let test_code = spectra.facts.as_ref().is_some_and(|f| f.test_code.contains(u));
        if !test_code {
            ran.union_with(tests);
        }
    }
    (0..spectra.tests.len()).filter(|&t| !ran.contains(t)).collect()
}

/// Why every test runs after an edit of `file` that is no Rust source.
fn changed_file(file: &str, now: &Snapshot) -> String {
    if now.compile_time.contains(file) {
        runs_while_compiling(file)
    } else {
        format!("{file} changed")
    }
}

/// Why every test runs after an edit of `file`, whose code runs while compiling.
fn runs_while_compiling(file: &str) -> String {
    format!("{file} changed, code that runs while compiling (a build script, a proc macro or a build dependency)")
}

/// Why every test runs after an edit of the `const fn` at `file:line`.
fn const_fn_changed(file: &str, line: u32) -> String {
    format!("the const fn at {file}:{line} changed (it may be evaluated while compiling)")
}

/// Why every test runs after an edit of `file` at `line` (today's: the first new line, or
/// for a deletion the line before it), which no function holds.
fn outside_a_function(file: &str, line: u32) -> String {
    format!("{file} changed outside a function (line {line})")
}

/// The lines `outside` (after which old line, which new lines) inserted into `file` outside
/// every function, when they add nothing an existing test can feel ([`new_names`], names
/// [`mentioned_elsewhere`] nowhere) and the file read now is the one the snapshot hashed
/// (`new`): the new lines; `None` when every test must run.
fn added_harmlessly(
    root: &Path,
    file: &str,
    new: &[u64],
    outside: &[(u32, (u32, u32))],
    now: &Snapshot,
) -> Option<Vec<(u32, u32)>> {
    let ranges: Vec<(u32, u32)> = outside.iter().map(|&(_, r)| r).collect();
    let text = std::fs::read_to_string(root.join(file)).ok()?;
    let names = (crate::spectra::line_hashes(text.as_bytes()) == new).then(|| new_names(&text, &ranges))??;
    (!mentioned_elsewhere(root, file, &names, now.files.keys())).then_some(ranges)
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
        // Read by one run only: a configuration file found from one directory and not from
        // another (cargo reads those from the directory it runs in up).
        _ if !now.context.contains_key(name) => {
            format!("{name} was read by the last run, not by this one (run from another directory?)")
        }
        _ if !then.context.contains_key(name) => {
            format!("{name} is read by this run, not by the last one (run from another directory?)")
        }
        _ => format!("{name} changed"),
    })
}

/// Whether a test's row may be reused at all: only a clean pass of a deterministic test (a
/// failing, crashed, timed-out or flaky test, one whose coverage was partial, and one whose row
/// is a sample of random inputs are always run again).
fn reusable_outcome(t: &TestRecord) -> bool {
    t.outcome == Outcome::Passed && !t.flaky && t.warnings.is_empty() && t.attempts.is_empty() && t.volatile.is_none()
}
