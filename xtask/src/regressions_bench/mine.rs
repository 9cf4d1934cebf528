//! Mining: which commits of a repository's history change library code and test code, how
//! each changed line splits into library and test code, the buggy version's text of each file
//! (the parent's library lines with the commit's test lines) and the fault lines in it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use cargo_sfl::faults::Fault;
use cargo_sfl::syntax::FileSyntax;
use serde::{Deserialize, Serialize};

/// `git -C repo args…`: its standard output (the repository may be bare: a mirror).
pub(crate) fn git(repo: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git").arg("-C").arg(repo).args(args).output()?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A file's text at a revision, `None` when it does not exist there.
pub(crate) fn show(repo: &Path, rev: &str, path: &str) -> Option<String> {
    git(repo, &["show", &format!("{rev}:{path}")]).ok()
}

/// What a line of Rust source is, for splitting a change into library and test code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Blank, or a plain comment: changes to it change no behaviour.
    Neutral,
    /// A doc comment line outside a code block: documentation only.
    Doc,
    /// A doc comment line inside a code block: a doctest's code.
    Doctest,
    /// In a `#[test]` function, a `#[cfg(test)]` item, or a test file.
    Test,
    Library,
}

/// Blank, or a `//` comment that is not a doc comment.
fn neutral(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || (t.starts_with("//") && !doc_line(t))
}

fn doc_line(t: &str) -> bool {
    (t.starts_with("///") && !t.starts_with("////")) || t.starts_with("//!")
}

/// Each line's class (index 0 is line 1). Test code is what cargo sfl leaves out of its
/// ranking ([`FileSyntax::parse`]); doc lines between ```` ``` ```` fences are doctest code.
pub(crate) fn classes(text: &str, whole_test: bool) -> Vec<Class> {
    let ranges = if whole_test {
        Vec::new()
    } else {
        FileSyntax::parse(text)
            .map(|s| {
                if s.test_file {
                    vec![(1, u32::MAX)]
                } else {
                    s.test_ranges
                }
            })
            .unwrap_or_default()
    };
    let mut fenced = false;
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let t = line.trim();
            if doc_line(t) {
                let body = t.trim_start_matches(['/', '!']).trim();
                if body.starts_with("```") {
                    fenced = !fenced;
                    return Class::Doctest;
                }
                return if fenced { Class::Doctest } else { Class::Doc };
            }
            let n = i as u32 + 1;
            if neutral(line) {
                Class::Neutral
            } else if whole_test || ranges.iter().any(|&(a, b)| a <= n && n <= b) {
                Class::Test
            } else {
                Class::Library
            }
        })
        .collect()
}

/// One hunk of a `git diff --unified=0`: the old lines `old_start..old_start+old_count` (for
/// an insertion, `old_start` is the line after which it goes) become `new_lines`, which start
/// at line `new_start` of the new text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Hunk {
    pub old_start: u32,
    pub old_count: u32,
    pub new_start: u32,
    pub new_lines: Vec<String>,
}

/// The hunks of a one-file `git diff --unified=0`.
pub(crate) fn parse_hunks(diff: &str) -> Vec<Hunk> {
    let range = |s: &str| -> (u32, u32) {
        match s.split_once(',') {
            Some((a, b)) => (a.parse().unwrap_or(0), b.parse().unwrap_or(0)),
            None => (s.parse().unwrap_or(0), 1),
        }
    };
    let mut hunks: Vec<Hunk> = Vec::new();
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("@@ ") {
            let mut parts = rest.split_whitespace();
            let (Some(old), Some(new)) = (parts.next(), parts.next()) else {
                continue;
            };
            let (old_start, old_count) = range(old.trim_start_matches('-'));
            let (new_start, _) = range(new.trim_start_matches('+'));
            hunks.push(Hunk {
                old_start,
                old_count,
                new_start,
                new_lines: Vec::new(),
            });
        } else if let (Some(h), Some(added)) = (hunks.last_mut(), line.strip_prefix('+'))
            && !line.starts_with("+++")
        {
            h.new_lines.push(added.to_string());
        }
    }
    hunks
}

/// Which side of the split a hunk is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Side {
    /// Only library lines (and neutral ones): the fix; the buggy version keeps the old lines.
    Library,
    /// Only test or doctest lines (and neutral ones): the buggy version takes the new lines.
    Test,
    /// Both: treated as the fix (its test part is lost in the buggy version).
    Mixed,
    /// Only documentation and neutral lines: taken from the commit, nothing is tested by it.
    Doc,
}

/// The side of `h`, from the classes of the old text's and the new text's lines.
pub(crate) fn side(h: &Hunk, old: &[Class], new: &[Class]) -> Side {
    let old_lines = (h.old_start..h.old_start + h.old_count).filter_map(|n| old.get(n as usize - 1));
    let new_lines =
        (h.new_start..h.new_start + h.new_lines.len() as u32).filter_map(|n| new.get((n as usize).saturating_sub(1)));
    let all: Vec<Class> = old_lines.chain(new_lines).copied().collect();
    let library = all.contains(&Class::Library);
    let test = all.iter().any(|c| matches!(c, Class::Test | Class::Doctest));
    match (library, test) {
        (true, true) => Side::Mixed,
        (true, false) => Side::Library,
        (false, true) => Side::Test,
        (false, false) => Side::Doc,
    }
}

/// A file's buggy text and what the fix changed in it.
#[derive(Debug, PartialEq)]
pub(crate) struct Buggy {
    pub text: String,
    /// Fault lines in `text` (1-based, sorted): the non-neutral lines the fix changed or
    /// deleted; for a fix hunk that only adds lines, the closest code line above and below
    /// the insertion point.
    pub faults: Vec<u32>,
    /// Non-neutral library lines the fix removed or added.
    pub changed: usize,
    /// Some fix hunk only adds lines (a fault of omission).
    pub insertion: bool,
}

/// The buggy version of one file: `old` (the parent's text) with the commit's test and doc
/// hunks applied and its library (and mixed) hunks not, and the fault lines in it.
pub(crate) fn buggy_text(old: &str, hunks: &[(Hunk, Side)]) -> Buggy {
    let old_lines: Vec<&str> = old.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut faults: BTreeSet<u32> = BTreeSet::new();
    // Output positions where a fix only inserts lines: neighbours are found once `out` is whole.
    let mut insertions: Vec<usize> = Vec::new();
    let (mut next, mut changed) = (1u32, 0usize);
    let copy_to = |out: &mut Vec<String>, next: &mut u32, upto: u32| {
        while *next <= upto && (*next as usize) <= old_lines.len() {
            out.push(old_lines[*next as usize - 1].to_string());
            *next += 1;
        }
    };
    for (h, side) in hunks {
        // An insertion goes after line old_start; a change starts at it.
        let before = if h.old_count == 0 { h.old_start } else { h.old_start - 1 };
        copy_to(&mut out, &mut next, before);
        let old_part =
            &old_lines[(before as usize).min(old_lines.len())..((before + h.old_count) as usize).min(old_lines.len())];
        match side {
            Side::Test | Side::Doc => out.extend(h.new_lines.iter().cloned()),
            Side::Library | Side::Mixed => {
                changed += old_part.iter().filter(|l| !neutral(l)).count();
                changed += h
                    .new_lines
                    .iter()
                    .filter(|l| !neutral(l) && !doc_line(l.trim()))
                    .count();
                let code: Vec<u32> = (0..old_part.len())
                    .filter(|&i| !neutral(old_part[i]) && !doc_line(old_part[i].trim()))
                    .map(|i| (out.len() + i + 1) as u32)
                    .collect();
                if code.is_empty() {
                    insertions.push(out.len());
                }
                faults.extend(code);
                out.extend(old_part.iter().map(|l| l.to_string()));
            }
        }
        next = before + h.old_count + 1;
    }
    copy_to(&mut out, &mut next, old_lines.len() as u32);
    let code = |i: usize| !neutral(&out[i]) && !doc_line(out[i].trim());
    for &at in &insertions {
        if let Some(i) = (0..at).rev().find(|&i| code(i)) {
            faults.insert(i as u32 + 1);
        }
        if let Some(i) = (at..out.len()).find(|&i| code(i)) {
            faults.insert(i as u32 + 1);
        }
    }
    let mut text = out.join("\n");
    if old.ends_with('\n') || old.is_empty() {
        text.push('\n');
    }
    Buggy {
        text,
        faults: faults.into_iter().collect(),
        changed,
        insertion: !insertions.is_empty(),
    }
}

/// What a path holds, by where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathKind {
    /// Under a `tests` directory: integration tests and their data, taken whole from the commit.
    Tests,
    /// A Rust file of a `src` directory (library or binary code, with unit tests inside).
    Source,
    /// Anything else (manifests, benches, examples, build scripts): the parent's version.
    Other,
}

pub(crate) fn path_kind(path: &str) -> PathKind {
    let parts: Vec<&str> = path.split('/').collect();
    let dirs = &parts[..parts.len() - 1];
    if dirs.iter().any(|d| matches!(*d, "benches" | "examples" | "fuzz")) {
        PathKind::Other
    } else if dirs.contains(&"tests") {
        PathKind::Tests
    } else if dirs.contains(&"src") && path.ends_with(".rs") {
        PathKind::Source
    } else {
        PathKind::Other
    }
}

/// One changed file of a commit.
#[derive(Clone, Debug)]
pub(crate) struct FileChange {
    pub path: String,
    /// `A`, `M` or `D` (renames are a deletion and an addition).
    pub status: char,
    pub kind: PathKind,
    /// A source file that is test code as a whole (`#![cfg(test)]`, or declared by
    /// `#[cfg(test)] mod name;`).
    pub whole_test: bool,
    pub hunks: Vec<(Hunk, Side)>,
}

/// A commit whose diff changes library lines and test lines: a candidate bug fix.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct Candidate {
    pub commit: String,
    pub parent: String,
    pub subject: String,
    /// Non-neutral library lines removed or added by the fix.
    pub changed_lines: usize,
    pub library_files: Vec<String>,
    /// Files whose tests the commit adds or changes (integration test files, source files
    /// with test or doctest hunks).
    pub test_files: Vec<String>,
    /// Some hunk mixes library and test lines (its test part is not in the buggy version).
    pub mixed: bool,
    /// The commit's time (seconds since the epoch; 0 when unknown).
    #[serde(default)]
    pub time: i64,
}

/// Why a commit is not a candidate, or None when it is one.
pub(crate) fn rejection(changes: &[FileChange], max_lines: usize) -> Option<&'static str> {
    let library = changes.iter().any(|f| {
        f.kind == PathKind::Source
            && !f.whole_test
            && f.hunks.iter().any(|(_, s)| matches!(s, Side::Library | Side::Mixed))
    });
    let test = changes.iter().any(|f| {
        (f.kind == PathKind::Tests && f.path.ends_with(".rs") && f.status != 'D')
            || (f.kind == PathKind::Source && f.whole_test && f.status != 'D')
            || f.hunks.iter().any(|(_, s)| *s == Side::Test)
    });
    if !library {
        return Some("no library line changed");
    }
    if !test {
        return Some("no test added or changed");
    }
    // A new library file is a new module: a feature, not a fix of existing code.
    if changes
        .iter()
        .any(|f| f.kind == PathKind::Source && !f.whole_test && f.status == 'A')
    {
        return Some("adds a library file");
    }
    if changed_lines(changes) > max_lines {
        return Some("library change too large");
    }
    None
}

fn changed_lines(changes: &[FileChange]) -> usize {
    changes
        .iter()
        .filter(|f| f.kind == PathKind::Source && !f.whole_test)
        .map(|f| {
            let lib: Vec<(Hunk, Side)> = f
                .hunks
                .iter()
                .filter(|(_, s)| matches!(s, Side::Library | Side::Mixed))
                .cloned()
                .collect();
            lib.iter()
                .map(|(h, _)| h.old_count as usize + h.new_lines.iter().filter(|l| !neutral(l)).count())
                .sum::<usize>()
        })
        .sum()
}

/// A candidate's description from its changes.
pub(crate) fn candidate(commit: &str, parent: &str, subject: &str, changes: &[FileChange]) -> Candidate {
    let lib = |f: &&FileChange| f.kind == PathKind::Source && !f.whole_test;
    Candidate {
        time: 0,
        commit: commit.into(),
        parent: parent.into(),
        subject: subject.into(),
        changed_lines: changed_lines(changes),
        library_files: changes
            .iter()
            .filter(lib)
            .filter(|f| f.hunks.iter().any(|(_, s)| matches!(s, Side::Library | Side::Mixed)))
            .map(|f| f.path.clone())
            .collect(),
        test_files: changes
            .iter()
            .filter(|f| {
                (f.kind == PathKind::Tests && f.path.ends_with(".rs"))
                    || f.whole_test
                    || f.hunks.iter().any(|(_, s)| *s == Side::Test)
            })
            .map(|f| f.path.clone())
            .collect(),
        mixed: changes.iter().flat_map(|f| &f.hunks).any(|(_, s)| *s == Side::Mixed),
    }
}

/// Whether `path` (a source file) is declared `#[cfg(test)] mod name;` by the file that would
/// declare it (`a/b.rs` by `a.rs`, `a/mod.rs`, or `lib.rs`/`main.rs` next to it), at `rev`.
fn declared_as_test(repo: &Path, rev: &str, path: &str) -> bool {
    let p = Path::new(path);
    let (Some(dir), Some(stem)) = (p.parent(), p.file_stem()) else {
        return false;
    };
    let (dir, name) = if stem == "mod" {
        match (dir.parent(), dir.file_name()) {
            (Some(d), Some(n)) => (d, n.to_string_lossy().into_owned()),
            _ => return false,
        }
    } else {
        (dir, stem.to_string_lossy().into_owned())
    };
    let mut parents: Vec<String> = vec![
        dir.join("lib.rs").display().to_string(),
        dir.join("main.rs").display().to_string(),
        dir.join("mod.rs").display().to_string(),
    ];
    if let (Some(up), Some(own)) = (dir.parent(), dir.file_name()) {
        parents.push(up.join(format!("{}.rs", own.to_string_lossy())).display().to_string());
    }
    parents.iter().any(|decl| {
        show(repo, rev, decl)
            .and_then(|t| FileSyntax::parse(&t))
            .is_some_and(|s| s.test_file || s.test_modules.contains(&name))
    })
}

/// The changed files of `commit` against `parent`, with each Rust file's hunks split.
pub(crate) fn changes(repo: &Path, parent: &str, commit: &str) -> Result<Vec<FileChange>> {
    let status = git(repo, &["diff", "--no-renames", "--name-status", parent, commit])?;
    let mut out = Vec::new();
    for line in status.lines() {
        let Some((st, path)) = line.split_once('\t') else {
            continue;
        };
        let status = st.chars().next().unwrap_or('M');
        let kind = path_kind(path);
        let mut change = FileChange {
            path: path.to_string(),
            status,
            kind,
            whole_test: false,
            hunks: Vec::new(),
        };
        if kind == PathKind::Source {
            let rev = if status == 'D' { parent } else { commit };
            change.whole_test = declared_as_test(repo, rev, path);
            let diff = git(
                repo,
                &[
                    "diff",
                    "--unified=0",
                    "--no-color",
                    "--no-renames",
                    "--histogram",
                    parent,
                    commit,
                    "--",
                    path,
                ],
            )?;
            let old = show(repo, parent, path).unwrap_or_default();
            let new = show(repo, commit, path).unwrap_or_default();
            let (old_c, new_c) = (classes(&old, change.whole_test), classes(&new, change.whole_test));
            change.hunks = parse_hunks(&diff)
                .into_iter()
                .map(|h| {
                    let s = side(&h, &old_c, &new_c);
                    (h, s)
                })
                .collect();
        }
        out.push(change);
    }
    Ok(out)
}

/// A commit of the history: id, first parent, subject, commit time.
pub(crate) struct Commit {
    pub id: String,
    pub parent: String,
    pub subject: String,
    pub time: i64,
}

/// The non-merge commits reachable from HEAD (newest first), root commits left out.
pub(crate) fn commits(repo: &Path) -> Result<Vec<Commit>> {
    let log = git(repo, &["log", "--no-merges", "--format=%ct %H %P%x09%s", "HEAD"])?;
    Ok(log
        .lines()
        .filter_map(|l| {
            let (ids, subject) = l.split_once('\t')?;
            let mut ids = ids.split_whitespace();
            let time = ids.next()?.parse().ok()?;
            Some(Commit {
                time,
                id: ids.next()?.to_string(),
                parent: ids.next()?.to_string(),
                subject: subject.to_string(),
            })
        })
        .collect())
}

/// Subjects that say a bug was fixed go first, then commits since the 2018 edition (older ones
/// mostly no longer build or resolve), then smaller fixes: the candidate cap spends builds
/// where reproduction is likeliest.
pub(crate) fn priority(c: &Candidate) -> (bool, bool, usize) {
    let s = c.subject.to_lowercase();
    let says_fix = [
        "fix",
        "bug",
        "wrong",
        "incorrect",
        "panic",
        "crash",
        "regress",
        "overflow",
        "handle",
        "issue",
        "#",
    ]
    .iter()
    .any(|w| s.contains(w));
    // 2019-01-01T00:00:00Z, the first month of Rust 2018 on stable.
    const EDITION_2018: i64 = 1_546_300_800;
    (!says_fix, c.time < EDITION_2018, c.changed_lines)
}

/// Every candidate of the history and how many commits each filter turned away.
pub(crate) fn mine(
    repo: &Path,
    max_lines: usize,
) -> Result<(Vec<Candidate>, std::collections::BTreeMap<String, usize>)> {
    let mut turned_away = std::collections::BTreeMap::new();
    let mut found = Vec::new();
    for c in commits(repo)? {
        // A quick look first: a commit touching no Rust source under src/ is not read further.
        let names = git(repo, &["diff", "--no-renames", "--name-only", &c.parent, &c.id])?;
        if !names.lines().any(|p| path_kind(p) == PathKind::Source) {
            *turned_away.entry("no library line changed".to_string()).or_insert(0) += 1;
            continue;
        }
        let changes = changes(repo, &c.parent, &c.id).with_context(|| format!("reading {}", c.id))?;
        match rejection(&changes, max_lines) {
            Some(why) => *turned_away.entry(why.to_string()).or_insert(0) += 1,
            None => found.push(Candidate {
                time: c.time,
                ..candidate(&c.id, &c.parent, &c.subject, &changes)
            }),
        }
    }
    found.sort_by_key(priority);
    Ok((found, turned_away))
}

/// Lays out the buggy version of `cand` in `dir` (empty or missing): the parent's tree, the
/// commit's integration tests, and each changed source file's buggy text. The fault lines,
/// and whether some fix hunk only inserts lines.
pub(crate) fn write_buggy(repo: &Path, cand: &Candidate, dir: &Path) -> Result<(Vec<Fault>, usize, bool)> {
    extract(repo, &cand.parent, dir)?;
    let mut faults = Vec::new();
    let (mut changed, mut insertion) = (0, false);
    for f in changes(repo, &cand.parent, &cand.commit)? {
        let dst = dir.join(&f.path);
        let whole = f.kind == PathKind::Tests || (f.kind == PathKind::Source && f.whole_test);
        if whole {
            if f.status == 'D' {
                let _ = std::fs::remove_file(&dst);
            } else {
                let bytes = Command::new("git")
                    .arg("-C")
                    .arg(repo)
                    .args(["show", &format!("{}:{}", cand.commit, f.path)])
                    .output()?
                    .stdout;
                std::fs::create_dir_all(dst.parent().context("file without a directory")?)?;
                std::fs::write(&dst, bytes)?;
            }
        } else if f.kind == PathKind::Source && f.status == 'M' {
            let old = show(repo, &cand.parent, &f.path).unwrap_or_default();
            let b = buggy_text(&old, &f.hunks);
            std::fs::write(&dst, &b.text)?;
            changed += b.changed;
            insertion |= b.insertion;
            if !b.faults.is_empty() {
                faults.push(Fault {
                    file: f.path.clone(),
                    lines: b.faults,
                    name: None,
                });
            }
        }
    }
    Ok((faults, changed, insertion))
}

/// Writes the tree of `rev` into `dir` (replacing what was there).
pub(crate) fn extract(repo: &Path, rev: &str, dir: &Path) -> Result<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let archive = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["archive", "--format=tar", rev])
        .output()?;
    if !archive.status.success() {
        bail!(
            "git archive {rev} failed: {}",
            String::from_utf8_lossy(&archive.stderr).trim()
        );
    }
    let mut tar = Command::new("tar")
        // `-m`: files dated now, not at the commit: cargo must not take an older build of
        // another version at the same place for up to date.
        .args(["-x", "-m", "-C"])
        .arg(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()?;
    use std::io::Write as _;
    tar.stdin.take().context("tar's stdin")?.write_all(&archive.stdout)?;
    if !tar.wait()?.success() {
        bail!("tar could not unpack {rev}");
    }
    Ok(())
}

/// The tests `cand` adds or changes: the names of test functions whose lines it changes (and
/// every identifier on its changed test lines, for tests a macro generates), and the files
/// whose doctests it changes.
pub(crate) fn changed_tests(repo: &Path, cand: &Candidate) -> Result<(Vec<String>, Vec<String>)> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    let mut doc_files = Vec::new();
    for f in changes(repo, &cand.parent, &cand.commit)? {
        let whole = f.kind == PathKind::Tests || f.whole_test;
        if f.status == 'D' || !f.path.ends_with(".rs") || !(whole || f.kind == PathKind::Source) {
            continue;
        }
        let new = show(repo, &cand.commit, &f.path).unwrap_or_default();
        let new_classes = classes(&new, whole);
        let lines: Vec<u32> = if f.kind == PathKind::Tests {
            let diff = git(
                repo,
                &[
                    "diff",
                    "--unified=0",
                    "--no-color",
                    "--no-renames",
                    &cand.parent,
                    &cand.commit,
                    "--",
                    &f.path,
                ],
            )?;
            parse_hunks(&diff)
                .iter()
                .flat_map(|h| h.new_start..h.new_start + h.new_lines.len() as u32)
                .collect()
        } else {
            f.hunks
                .iter()
                .filter(|(_, s)| *s == Side::Test)
                .flat_map(|(h, _)| h.new_start..h.new_start + h.new_lines.len() as u32)
                .collect()
        };
        if lines
            .iter()
            .any(|&n| new_classes.get(n as usize - 1) == Some(&Class::Doctest))
        {
            doc_files.push(f.path.clone());
        }
        let text: Vec<&str> = new.lines().collect();
        for &n in &lines {
            if let Some(l) = text.get(n as usize - 1) {
                names.extend(
                    l.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .filter(|w| !w.is_empty())
                        .map(str::to_string),
                );
            }
        }
        if let Some(syntax) = FileSyntax::parse(&new) {
            for item in syntax
                .items
                .iter()
                .filter(|i| i.kind == cargo_sfl::syntax::NamedKind::Function)
            {
                if lines.iter().any(|&n| item.head.0 <= n && n <= item.end) {
                    names.insert(item.name.rsplit("::").next().unwrap_or(&item.name).to_string());
                }
            }
        }
    }
    Ok((names.into_iter().collect(), doc_files))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A library function with a unit test and a doctest, before a fix.
    const OLD: &str = "/// Adds one.
///
/// ```
/// assert_eq!(lib::inc(1), 2);
/// ```
pub fn inc(x: u32) -> u32 {
    // the answer
    x + 2
}

pub fn dec(x: u32) -> u32 {
    x - 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn inc_one() {
        assert_eq!(super::inc(1), 2);
    }
}
";

    /// The fix: `inc` corrected, a check added to `dec`, a test added and the doctest changed.
    const NEW: &str = "/// Adds one.
///
/// ```
/// assert_eq!(lib::inc(2), 3);
/// ```
pub fn inc(x: u32) -> u32 {
    // the answer
    x + 1
}

pub fn dec(x: u32) -> u32 {
    if x == 0 {
        return 0;
    }
    x - 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn inc_one() {
        assert_eq!(super::inc(1), 2);
    }

    #[test]
    fn dec_zero() {
        assert_eq!(super::dec(0), 0);
    }
}
";

    /// The hunks `git diff --unified=0` gives for OLD → NEW.
    const DIFF: &str = "@@ -4 +4 @@
-/// assert_eq!(lib::inc(1), 2);
+/// assert_eq!(lib::inc(2), 3);
@@ -8 +8 @@ pub fn inc(x: u32) -> u32 {
-    x + 2
+    x + 1
@@ -11,0 +12,3 @@ pub fn dec(x: u32) -> u32 {
+    if x == 0 {
+        return 0;
+    }
@@ -20,0 +24,5 @@ mod tests {
+
+    #[test]
+    fn dec_zero() {
+        assert_eq!(super::dec(0), 0);
+    }
";

    fn split() -> Vec<(Hunk, Side)> {
        let (old, new) = (classes(OLD, false), classes(NEW, false));
        parse_hunks(DIFF)
            .into_iter()
            .map(|h| {
                let s = side(&h, &old, &new);
                (h, s)
            })
            .collect()
    }

    #[test]
    fn lines_are_classed_as_library_test_doctest_doc_or_neutral() {
        let c = classes(OLD, false);
        assert_eq!(c[0], Class::Doc);
        assert_eq!(&c[2..5], &[Class::Doctest; 3]);
        assert_eq!(c[5], Class::Library);
        assert_eq!(c[6], Class::Neutral);
        assert_eq!(c[7], Class::Library);
        assert_eq!(c[14], Class::Test);
        assert_eq!(c[18], Class::Test);
    }

    #[test]
    fn each_hunk_of_the_fix_falls_on_the_library_or_the_test_side() {
        let sides: Vec<Side> = split().iter().map(|(_, s)| *s).collect();
        assert_eq!(sides, [Side::Test, Side::Library, Side::Library, Side::Test]);
        let h = &split()[2].0;
        assert_eq!(
            (h.old_start, h.old_count, h.new_start, h.new_lines.len()),
            (11, 0, 12, 3)
        );
    }

    #[test]
    fn the_buggy_text_keeps_the_old_library_and_takes_the_new_tests() {
        let b = buggy_text(OLD, &split());
        let lines: Vec<&str> = b.text.lines().collect();
        // The old body of inc, the new doctest, no check in dec, the new test.
        assert_eq!(lines[3], "/// assert_eq!(lib::inc(2), 3);");
        assert_eq!(lines[7], "    x + 2");
        assert_eq!(lines[11], "    x - 1");
        assert!(b.text.contains("fn dec_zero()"));
        assert!(!b.text.contains("if x == 0"));
        // Fault lines: the changed line 8, and for the insertion into dec the code lines
        // around it (its signature, line 11, and `x - 1`, line 12).
        assert_eq!(b.faults, [8, 11, 12]);
        assert!(b.insertion);
        assert_eq!(b.changed, 2 + 3);
        assert!(b.text.ends_with("}\n"));
    }

    #[test]
    fn a_deleted_line_is_a_fault_line_and_comments_are_not() {
        let old = "fn f(x: i32) -> i32 {\n    // clamp\n    let y = x.max(0);\n    y\n}\n";
        let diff = "@@ -2,2 +1,0 @@\n";
        let hunks: Vec<(Hunk, Side)> = parse_hunks(diff).into_iter().map(|h| (h, Side::Library)).collect();
        let b = buggy_text(old, &hunks);
        assert_eq!(b.text, old);
        assert_eq!(b.faults, [3]);
        assert_eq!(b.changed, 1);
        assert!(!b.insertion);
    }

    #[test]
    fn hunks_mixing_library_and_test_lines_are_mixed() {
        let new = "fn f() -> u8 {\n    2\n}\n#[test]\nfn t() {\n    assert_eq!(f(), 2);\n}\n";
        let old = "fn f() -> u8 {\n    1\n}\n";
        let diff = "@@ -2 +2,5 @@\n-    1\n+    2\n+}\n+#[test]\n+fn t() {\n+    assert_eq!(f(), 2);\n";
        let h = parse_hunks(diff).remove(0);
        assert_eq!(side(&h, &classes(old, false), &classes(new, false)), Side::Mixed);
    }

    fn change(path: &str, status: char, hunks: &[Side]) -> FileChange {
        let h = Hunk {
            old_start: 1,
            old_count: 1,
            new_start: 1,
            new_lines: vec!["x".into()],
        };
        FileChange {
            path: path.into(),
            status,
            kind: path_kind(path),
            whole_test: false,
            hunks: hunks.iter().map(|s| (h.clone(), *s)).collect(),
        }
    }

    #[test]
    fn candidates_change_library_lines_and_tests() {
        let lib = change("src/lib.rs", 'M', &[Side::Library]);
        let unit = change("src/lib.rs", 'M', &[Side::Library, Side::Test]);
        let doc_only = change("src/lib.rs", 'M', &[Side::Library, Side::Doc]);
        let integration = change("tests/parse.rs", 'M', &[]);
        let bench = change("benches/b.rs", 'M', &[]);
        assert_eq!(rejection(std::slice::from_ref(&unit), 40), None);
        assert_eq!(rejection(&[lib.clone(), integration.clone()], 40), None);
        assert_eq!(rejection(&[doc_only], 40), Some("no test added or changed"));
        assert_eq!(rejection(&[lib.clone(), bench], 40), Some("no test added or changed"));
        assert_eq!(
            rejection(std::slice::from_ref(&integration), 40),
            Some("no library line changed")
        );
        assert_eq!(
            rejection(
                &[
                    lib.clone(),
                    integration.clone(),
                    change("src/new.rs", 'A', &[Side::Library])
                ],
                40
            ),
            Some("adds a library file")
        );
        assert_eq!(rejection(&[unit], 1), Some("library change too large"));
        assert_eq!(path_kind("crates/a/tests/data/x.txt"), PathKind::Tests);
        assert_eq!(path_kind("crates/a/src/bin/main.rs"), PathKind::Source);
        assert_eq!(path_kind("Cargo.toml"), PathKind::Other);
    }

    #[test]
    fn fix_subjects_go_first_then_recent_then_small_fixes() {
        let c = |subject: &str, n: usize, year: i64| Candidate {
            commit: String::new(),
            parent: String::new(),
            subject: subject.into(),
            changed_lines: n,
            library_files: Vec::new(),
            test_files: Vec::new(),
            mixed: false,
            time: (year - 1970) * 365 * 86_400,
        };
        let mut v = [
            c("Add feature", 1, 2022),
            c("Fix overflow in parse", 9, 2021),
            c("Fix typo", 2, 2021),
            c("Fix old bug", 1, 2016),
        ];
        v.sort_by_key(priority);
        assert_eq!(
            v.map(|c| c.subject).to_vec(),
            ["Fix typo", "Fix overflow in parse", "Fix old bug", "Add feature"]
        );
    }
}
