//! `--diff-base REV`: which source lines changed since a git revision (committed or not), so
//! the report can mark suspects on changed lines, or rank only those.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;

/// Changed lines per file, paths relative to the workspace root.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub lines: HashMap<String, HashSet<u32>>,
}

impl Changes {
    pub fn contains(&self, file: &str, line: u32) -> bool {
        self.lines.get(file).is_some_and(|l| l.contains(&line))
    }
}

/// Why the changed lines could not be found.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("cannot run git: {0}")]
    CannotRunGit(std::io::Error),
    #[error("{} is not in a git repository", .0.display())]
    NotARepository(std::path::PathBuf),
    #[error("git diff {rev} failed: {stderr}")]
    DiffFailed { rev: String, stderr: String },
}

/// Runs `git diff --unified=0 REV` in the workspace and reads the new-side line ranges. A
/// pure deletion marks the line after which it happened (the code around the missing lines).
pub fn changed_since(workspace: &Path, rev: &str) -> Result<Changes, DiffError> {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(workspace)
            .output()
            .map_err(DiffError::CannotRunGit)
    };
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if !top.status.success() {
        return Err(DiffError::NotARepository(workspace.to_path_buf()));
    }
    let out = git(&[
        "diff",
        "--unified=0",
        "--no-color",
        "--no-ext-diff",
        "--relative",
        rev,
        "--",
    ])?;
    if !out.status.success() {
        return Err(DiffError::DiffFailed {
            rev: rev.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(parse(&String::from_utf8_lossy(&out.stdout)))
}

/// Parses unified diff output (`--relative`, so paths are relative to the workspace).
pub fn parse(diff: &str) -> Changes {
    let mut changes = Changes::default();
    let mut file: Option<String> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            file = path.strip_prefix("b/").map(str::to_string);
        } else if let Some(hunk) = line.strip_prefix("@@ ") {
            let (Some(f), Some(new)) = (&file, hunk.split_whitespace().find(|t| t.starts_with('+'))) else {
                continue;
            };
            let new = &new[1..];
            let (start, count) = match new.split_once(',') {
                Some((s, c)) => (s.parse().unwrap_or(0), c.parse().unwrap_or(0)),
                None => (new.parse().unwrap_or(0), 1),
            };
            let set = changes.lines.entry(f.clone()).or_default();
            if count == 0 {
                set.insert(start.max(1));
            } else {
                set.extend(start..start + count);
            }
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_added_changed_and_deleted_ranges() {
        let diff = "diff --git a/src/lib.rs b/src/lib.rs\n--- a/src/lib.rs\n+++ b/src/lib.rs\n\
                    @@ -16 +16 @@ fn f() {\n-a\n+b\n@@ -20,0 +21,2 @@\n+x\n+y\n@@ -30,2 +31,0 @@\n-p\n-q\n\
                    diff --git a/new.rs b/new.rs\n--- /dev/null\n+++ b/new.rs\n@@ -0,0 +1,3 @@\n";
        let c = parse(diff);
        let lib: Vec<u32> = {
            let mut v: Vec<u32> = c.lines["src/lib.rs"].iter().copied().collect();
            v.sort();
            v
        };
        assert_eq!(lib, [16, 21, 22, 31]);
        assert!(c.contains("new.rs", 3) && !c.contains("new.rs", 4));
    }
}
