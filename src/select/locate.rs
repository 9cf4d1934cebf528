//! Locating an edit: a line diff of a source file's line hashes (of each line's tokens, so a
//! line of comments alone is a blank one), the functions it touches, and where every
//! unchanged line went.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::spectra::{FileState, FunctionSpan, Snapshot};

/// The spans of `functions`, by file.
pub(super) fn spans_by_file(functions: &[FunctionSpan]) -> HashMap<&str, Vec<&FunctionSpan>> {
    let mut by_file: HashMap<&str, Vec<&FunctionSpan>> = HashMap::new();
    for f in functions {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    by_file
}

/// Where an edit of a file went ([`locate`]).
pub(super) struct Located<'f> {
    /// Where each old line went (`[line - 1]`; `None`: changed).
    pub lines: Vec<Option<u32>>,
    /// The functions containing a change.
    pub touched: Vec<&'f FunctionSpan>,
    /// Lines inserted outside every function: the old line they follow and the new lines
    /// (1-based, inclusive), for [`super::added::new_names`] to judge.
    pub outside: Vec<(u32, (u32, u32))>,
    /// Old lines changed or deleted outside every function of the last run (first and last,
    /// 1-based), with the new lines in their place (for a deletion, the two around it).
    pub unplaced: Vec<((u32, u32), (u32, u32))>,
    /// Deletions outside every function that hold whole functions of the last run (a test
    /// deleted with its attributes), for [`super::deleted`] to judge.
    pub deleted: Vec<Deleted<'f>>,
}

/// Old lines deleted outside every function of the last run, holding whole functions of it.
pub(super) struct Deleted<'f> {
    /// The old lines deleted (first and last, 1-based).
    pub old: (u32, u32),
    /// The last new line before the deletion (0: it was at the top).
    pub after: u32,
    /// The functions the deleted lines hold whole.
    pub functions: Vec<&'f FunctionSpan>,
}

impl<'f> Deleted<'f> {
    /// The deletion of old lines `old` (first, last) after new line `after`, when it holds
    /// whole `functions`.
    fn of(functions: &[&'f FunctionSpan], old: (u32, u32), after: u32) -> Option<Deleted<'f>> {
        let whole: Vec<&FunctionSpan> = functions
            .iter()
            .filter(|f| old.0 <= f.start && f.end <= old.1)
            .copied()
            .collect();
        (!whole.is_empty()).then_some(Deleted {
            old,
            after,
            functions: whole,
        })
    }
}

/// Locates the edit of a file (`old` and `new` line hashes) in `functions`: where every line
/// went, the functions touched, and what lies in none of them (`outside`, `unplaced`).
pub(super) fn locate<'f>(old: &[u64], new: &[u64], functions: &[&'f FunctionSpan]) -> Located<'f> {
    use similar::{Algorithm, DiffOp, capture_diff_slices};
    let mut lines = vec![None; old.len()];
    let mut touched: Vec<&FunctionSpan> = Vec::new();
    let mut outside = Vec::new();
    let mut unplaced = Vec::new();
    let mut deleted = Vec::new();
    let blank = crate::spectra::blank_line_hash();
    for op in capture_diff_slices(Algorithm::Myers, old, new) {
        // Lines of comments or whitespace alone, added or removed, change no token; inside a
        // function, a coverage region may wrap them (a line it wraps is one of the function's,
        // as llvm-cov counts them), so they touch it.
        let no_token = blank_only(&op, old, new, blank);
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
                // A deletion of whole functions (exactly one's lines too) is judged apart.
                if let DiffOp::Delete { new_index, .. } = op
                    && !no_token
                    && let Some(d) = Deleted::of(functions, (first, last), new_index as u32)
                {
                    deleted.push(d);
                    continue;
                }
                if within.is_empty() && !no_token {
                    let (start, len) = match op {
                        DiffOp::Replace { new_index, new_len, .. } => (new_index as u32 + 1, new_len as u32),
                        _ => (op.new_range().start as u32, 2),
                    };
                    unplaced.push(((first, last), (start.max(1), start + len.max(1) - 1)));
                }
                touched.extend(within);
            }
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => {
                // New lines between old lines old_index and old_index + 1 (1-based).
                let after = old_index as u32;
                let within: Vec<_> = functions
                    .iter()
                    .filter(|f| f.start <= after && after < f.end)
                    .copied()
                    .collect();
                if within.is_empty() && !no_token {
                    outside.push((after.max(1), (new_index as u32 + 1, (new_index + new_len) as u32)));
                }
                touched.extend(within);
            }
        }
    }
    touched.sort();
    touched.dedup();
    Located {
        lines,
        touched,
        outside,
        unplaced,
        deleted,
    }
}

/// Whether the lines `op` removes from `old` and adds from `new` hold no token (blank, or
/// comments alone: their hash is `blank`).
fn blank_only(op: &similar::DiffOp, old: &[u64], new: &[u64], blank: u64) -> bool {
    !matches!(op, similar::DiffOp::Equal { .. })
        && old[op.old_range()]
            .iter()
            .chain(&new[op.new_range()])
            .all(|&h| h == blank)
}

/// The edit of a source from line hashes `old` to `new`, located in `functions`, when it is
/// one of comments, blank lines or whitespace alone: the lines but for blank ones
/// ([`crate::spectra::blank_line_hash`]) are equal, and the diff aligned them (it touched at
/// most functions whose blank lines it added or removed). `None` for any other edit.
pub(super) fn same_tokens<'f>(old: &[u64], new: &[u64], functions: &[&'f FunctionSpan]) -> Option<Located<'f>> {
    let blank = crate::spectra::blank_line_hash();
    if !old
        .iter()
        .filter(|&&h| h != blank)
        .eq(new.iter().filter(|&&h| h != blank))
    {
        return None;
    }
    let at = locate(old, new, functions);
    // Lines of code moved across blank ones are a deletion and an insertion to the diff. With
    // every line of code aligned, what else the diff holds is blank lines added or removed,
    // which leave nothing outside functions, unplaced or deleted.
    let aligned = old.iter().zip(&at.lines).all(|(&h, now)| h == blank || now.is_some());
    aligned.then_some(at)
}

/// The lines of each Rust source of `new` changed since `old` (1-based, in the new file):
/// replaced and inserted lines, and for a deletion the lines on either side of it (where the
/// missing code was); every line of a source `old` did not have. Files whose line hashes are
/// equal are left out.
pub fn changed_lines(old: &Snapshot, new: &Snapshot) -> BTreeMap<String, Vec<u32>> {
    use similar::{Algorithm, DiffOp, capture_diff_slices};
    let mut out = BTreeMap::new();
    let blank = crate::spectra::blank_line_hash();
    for (file, state) in &new.files {
        let Some(now) = state.line_hashes() else { continue };
        let then = old.files.get(file).and_then(|s| s.line_hashes()).unwrap_or_default();
        if then == now {
            continue;
        }
        let mut lines: Vec<u32> = Vec::new();
        for op in capture_diff_slices(Algorithm::Myers, &then, &now) {
            if blank_only(&op, &then, &now, blank) {
                continue;
            }
            match op {
                DiffOp::Equal { .. } => {}
                DiffOp::Insert { new_index, new_len, .. } | DiffOp::Replace { new_index, new_len, .. } => {
                    lines.extend((new_index + 1..=new_index + new_len).map(|l| l as u32));
                }
                DiffOp::Delete { new_index, .. } => {
                    // The new lines new_index and new_index + 1 (1-based) enclose the deletion.
                    lines.extend(
                        [new_index, new_index + 1]
                            .into_iter()
                            .filter(|&l| l >= 1 && l <= now.len())
                            .map(|l| l as u32),
                    );
                }
            }
        }
        lines.sort_unstable();
        lines.dedup();
        if !lines.is_empty() {
            out.insert(file.clone(), lines);
        }
    }
    out
}

/// The files of `new` kept as a digest (anything but a Rust source: data files, manifests)
/// that differ from `old`'s or are new, and the files of `old` gone from `new`: changes
/// [`changed_lines`] cannot place on a line.
pub fn changed_files(old: &Snapshot, new: &Snapshot) -> Vec<String> {
    let changed = new
        .files
        .iter()
        .filter(|(file, state)| matches!(state, FileState::Digest(_)) && old.files.get(*file) != Some(state))
        .map(|(file, _)| file.clone());
    let removed = old.files.keys().filter(|file| !new.files.contains_key(*file)).cloned();
    let mut out: Vec<String> = changed.chain(removed).collect();
    out.sort();
    out
}

/// Whether the changed function `f` is a `const fn` now: its first line (where the last
/// unchanged line before it went, plus one), or the line before, declares one.
pub(super) fn is_const_fn(root: &Path, f: &FunctionSpan, moved: &[Option<u32>]) -> bool {
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
