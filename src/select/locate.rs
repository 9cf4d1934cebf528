//! Locating an edit: a line diff of a source file's line hashes, the functions it touches, and
//! where every unchanged line went.

use std::collections::HashMap;
use std::path::Path;

use crate::spectra::FunctionSpan;

/// The spans of `functions`, by file.
pub(super) fn spans_by_file(functions: &[FunctionSpan]) -> HashMap<&str, Vec<&FunctionSpan>> {
    let mut by_file: HashMap<&str, Vec<&FunctionSpan>> = HashMap::new();
    for f in functions {
        by_file.entry(f.file.as_str()).or_default().push(f);
    }
    by_file
}

/// Locates the edit of a file (`old` and `new` line hashes) in `functions`: where each old
/// line went (`None`: changed) and the functions containing a change. `Err(line)`: a change
/// (at that old line) lies in no function.
pub(super) fn locate<'f>(
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
