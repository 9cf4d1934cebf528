//! Deleted functions: a deletion outside every function of the last run that holds whole
//! functions of it (a test deleted with its `#[test]`, its doc comment and a blank line) is an
//! edit of those functions alone, when the other lines it deleted are blank lines, comments,
//! or attributes and doc comments of the deleted functions. Code that called a deleted
//! function changed too, or the build fails; the tests that ran it run again.
//!
//! The snapshot keeps a hash per line, not the text: a deleted line's text is known when the
//! file still has a line with its hash (blank lines, `#[test]` at the same indentation) or the
//! file at git's `HEAD` has one (a doc comment).

use std::collections::HashMap;
use std::path::Path;

use super::locate::{Deleted, Located};
use crate::spectra::FunctionSpan;

/// Judges `at.deleted` for `file` under `root` (`old` and `new`: the last run's and today's
/// line hashes; `text`: the file as read now): the functions of a deletion that holds nothing else are returned, edited
/// (deleted) with nothing beyond them; any other deletion is unplaced (every test runs, unless
/// a function of today holds it).
pub(super) fn judge<'f>(
    (root, file, text): (&Path, &str, Option<&str>),
    old: &[u64],
    new: &[u64],
    at: &mut Located<'f>,
) -> Vec<&'f FunctionSpan> {
    let mut gone = Vec::new();
    if at.deleted.is_empty() {
        return gone;
    }
    // The text the snapshot hashed, or nothing is known of it.
    let text = text.filter(|t| crate::spectra::line_hashes(t.as_bytes()) == new);
    let mut known = Known::new(root, file, text.unwrap_or(""));
    for d in std::mem::take(&mut at.deleted) {
        if text.is_some() && deletes_only_functions(&d, old, &mut known) {
            gone.extend(d.functions);
        } else {
            let after = d.after;
            at.unplaced.push((d.old, (after.max(1), after + 1)));
        }
    }
    gone
}

/// Whether deletion `d` holds only its whole functions and lines that go with them, and leaves
/// no kept attribute or doc comment to the item after it.
fn deletes_only_functions(d: &Deleted<'_>, old: &[u64], known: &mut Known) -> bool {
    // The kept line before the deletion: an attribute or doc comment there belonged to what
    // was deleted and now belongs to the item after it.
    if d.after >= 1
        && known
            .now
            .get(d.after as usize - 1)
            .is_some_and(|l| goes_with_an_item(l))
    {
        return false;
    }
    let in_a_function = |l: u32| d.functions.iter().any(|f| f.start <= l && l <= f.end);
    (d.old.0..=d.old.1).all(|l| {
        let Some(line) = old.get(l as usize - 1).and_then(|h| known.text(*h)) else {
            // A line of a deleted function's body need not be known; any other must.
            return in_a_function(l);
        };
        let t = line.trim();
        if in_a_function(l) {
            // Items code outside a body may see go with it (`select::items` says which).
            return !(t.starts_with("impl") || t.contains("macro_export") || t.contains("no_mangle"));
        }
        // A deleted function after it takes its attributes and doc comments.
        let before_a_function = d.functions.iter().any(|f| f.start > l);
        t.is_empty() || (t.starts_with("//") && !goes_with_an_item(t)) || (goes_with_an_item(t) && before_a_function)
    })
}

/// Whether `line` (trimmed or not) goes with the item after it: an outer attribute on one line,
/// or a doc comment.
fn goes_with_an_item(line: &str) -> bool {
    // A comment after an attribute (`#[cfg_attr(miri, ignore)] // slow`) is no part of it.
    let t = match line.split_once(" //") {
        Some((attribute, _)) if attribute.trim().starts_with("#[") => attribute.trim(),
        _ => line.trim(),
    };
    (t.starts_with("#[") && t.ends_with(']')) || t.starts_with("///") || t.starts_with("/**")
}

/// The text of lines by their hash: today's lines, then those of the file at git's `HEAD`,
/// read when first needed.
struct Known {
    now: Vec<String>,
    by_hash: HashMap<u64, String>,
    head: Option<(std::path::PathBuf, String)>,
}

impl Known {
    fn new(root: &Path, file: &str, text: &str) -> Known {
        let now: Vec<String> = text.lines().map(str::to_string).collect();
        // A blank line is known though the file has none left.
        let mut by_hash = hashed(&now);
        by_hash.extend(hashed(&[String::new()]));
        Known {
            now,
            by_hash,
            head: Some((root.to_path_buf(), file.to_string())),
        }
    }

    /// The text of the line whose hash is `hash`, if known.
    fn text(&mut self, hash: u64) -> Option<&str> {
        if !self.by_hash.contains_key(&hash)
            && let Some((root, file)) = self.head.take()
        {
            let head: Vec<String> = std::process::Command::new("git")
                .arg("-C")
                .arg(&root)
                .args(["show", &format!("HEAD:./{file}")])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
                .unwrap_or_default();
            self.by_hash.extend(hashed(&head));
        }
        self.by_hash.get(&hash).map(String::as_str)
    }
}

/// Each of `lines` by its hash, as the snapshot hashes lines.
fn hashed(lines: &[String]) -> HashMap<u64, String> {
    let text: String = lines.iter().flat_map(|l| [l.as_str(), "\n"]).collect();
    crate::spectra::line_hashes(text.as_bytes())
        .into_iter()
        .zip(lines.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::line_hashes;

    /// What becomes of the deletion from `old` to `new` (as `src/lib.rs`, whose functions span
    /// `spans`): the touched functions' starts, or `Err` with the unplaced lines.
    fn judged(old: &str, new: &str, spans: &[(u32, u32)]) -> Result<Vec<u32>, (u32, u32)> {
        let root = tempfile::tempdir().unwrap();
        judged_in(root.path(), old, new, spans)
    }

    /// [`judged`] in `root`.
    fn judged_in(root: &Path, old: &str, new: &str, spans: &[(u32, u32)]) -> Result<Vec<u32>, (u32, u32)> {
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), new).unwrap();
        let spans: Vec<FunctionSpan> = spans
            .iter()
            .map(|&(start, end)| FunctionSpan {
                file: "src/lib.rs".into(),
                start,
                end,
            })
            .collect();
        let refs: Vec<&FunctionSpan> = spans.iter().collect();
        let (old, new) = (line_hashes(old.as_bytes()), line_hashes(new.as_bytes()));
        let mut at = super::super::locate::locate(&old, &new, &refs);
        let text = std::fs::read_to_string(root.join("src/lib.rs")).ok();
        let gone = judge((root, "src/lib.rs", text.as_deref()), &old, &new, &mut at);
        match at.unplaced.first() {
            Some(&(lines, _)) => Err(lines),
            None => Ok(gone.iter().map(|f| f.start).collect()),
        }
    }

    const TESTS: &str = "mod tests {\n    #[test]\n    fn a() {\n        f(1);\n    }\n\n    #[test]\n    fn b() {\n        f(2);\n    }\n}\n";

    #[test]
    fn a_test_deleted_with_its_attribute_touches_it_alone() {
        let new = "mod tests {\n    #[test]\n    fn a() {\n        f(1);\n    }\n}\n";
        assert_eq!(judged(TESTS, new, &[(3, 5), (8, 10)]), Ok(vec![8]));
        // The first one deleted: the diff keeps its `#[test]` for the second, which gains an
        // attribute so; the function that holds it now (`b`, a test) is left to judge.
        let new = "mod tests {\n    #[test]\n    fn b() {\n        f(2);\n    }\n}\n";
        assert_eq!(judged(TESTS, new, &[(3, 5), (8, 10)]), Err((3, 7)));
    }

    #[test]
    fn a_doc_comment_is_read_from_git_head() {
        let old = "/// Checks `f`.\n#[test]\nfn a() {\n    f(1);\n}\n\n#[test]\nfn b() {\n    f(2);\n}\n";
        let new = "#[test]\nfn b() {\n    f(2);\n}\n";
        // Without git, the doc comment's text is unknown.
        assert!(judged(old, new, &[(3, 5), (8, 10)]).is_err());
        // Committed, it is known.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), old).unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .arg("-C")
                .arg(root.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@t"])
                .args(args)
                .output()
                .expect("git runs");
            assert!(out.status.success(), "{out:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "tests"]);
        assert_eq!(judged_in(root.path(), old, new, &[(3, 5), (8, 10)]), Ok(vec![3]));
    }

    #[test]
    fn an_attribute_left_to_the_item_after_it_or_code_outside_a_function_is_unplaced() {
        // `#[repr(C)]` deleted before a kept struct: the struct changed.
        let old = "fn a() {\n    1;\n}\n#[repr(C)]\nstruct S(u8, u16);\n";
        let new = "struct S(u8, u16);\n";
        assert!(judged(old, new, &[(1, 3)]).is_err());
        assert!(goes_with_an_item("    #[cfg_attr(miri, ignore)] // Block on https://x"));
        assert!(!goes_with_an_item("    let x = 1; // #[test]"));
        // A constant deleted with the function.
        let old = "fn a() {\n    1;\n}\nconst C: u8 = 1;\nfn b() {}\n";
        let new = "fn b() {}\n";
        assert!(judged(old, new, &[(1, 3), (5, 5)]).is_err());
        // A kept attribute of the deleted function now on the next one.
        let old = "#[inline(never)]\nfn a() {\n    1;\n}\nfn b() {}\n";
        let new = "#[inline(never)]\nfn b() {}\n";
        assert!(judged(old, new, &[(2, 4), (5, 5)]).is_err());
    }
}
