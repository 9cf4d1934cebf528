//! What a report shows of the checkout, read before it is rendered: the source files of the
//! entries it shows (all the ranked files for the HTML page), and for SARIF the repository and
//! the panic sites that are files of the workspace, for `--format short` the current directory.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::Format;
use crate::report::Report;
use crate::report::disk::{Disk, History, Repository};

/// What `format` shows of the checkout `report`'s spectra were collected in, with `top`
/// entries per ranking.
pub(super) fn disk(format: Format, report: &Report, top: usize) -> Disk {
    let spectra = report.spectra;
    let root = Path::new(&spectra.workspace_root);
    let mut disk = Disk::default();
    let mut files: BTreeSet<String> = shown_files(format, report, top)
        .into_iter()
        .map(str::to_string)
        .collect();
    if format == Format::CargoJson {
        // The failing tests' panic sites, where the suspects' child notes point.
        files.extend(crate::report::sarif::panic_files(spectra).filter(|f| !f.starts_with('/')));
    }
    if format == Format::Human
        && let Some(since) = &report.since_passed
    {
        // The changed lines no coverage shows, shown with their text.
        files.extend(since.unseen.iter().map(|(f, _)| f.clone()));
    }
    for file in &files {
        if spectra.may_show(file)
            && let Ok(text) = std::fs::read_to_string(root.join(file))
        {
            disk.sources.insert(file, &text);
        }
    }
    if format == Format::Sarif {
        disk.repository = Some(repository(root));
        disk.panic_files = crate::report::sarif::panic_files(spectra)
            .filter(|f| !f.starts_with('/') && root.join(f).is_file())
            .collect();
    }
    if format == Format::Short {
        disk.here = std::env::current_dir().ok();
    }
    if format == Format::CargoJson {
        disk.packages = packages(root);
    }
    if format == Format::Human && report.lines_in_functions {
        disk.history = history(root, files.iter().filter(|f| !disk.sources.lines(f).is_empty()));
    }
    disk
}

/// When each line of `files` last changed, from `git blame` run in the workspace (nothing for
/// a file git does not track, or outside a repository). Shown, not ranked: on the regressions
/// benchmark, putting the most recently changed of the top functions first did not find more
/// faults first.
pub(crate) fn history<'a>(root: &Path, files: impl Iterator<Item = &'a String>) -> History {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut history = History {
        now,
        ..History::default()
    };
    // Outside a repository every blame fails: no process for each (a crate unpacked from
    // crates.io, a copy in /tmp).
    if !in_git_checkout(root) {
        return history;
    }
    // All at once, a thread each: in a long history one file's blame takes most of a second.
    let files: Vec<&String> = files.collect();
    let blamed: Vec<Option<String>> = std::thread::scope(|scope| {
        let threads: Vec<_> = files
            .iter()
            .map(|file| {
                scope.spawn(move || {
                    let out = std::process::Command::new("git")
                        .args(["blame", "--porcelain", "--", file.as_str()])
                        .current_dir(root)
                        .stdin(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .output()
                        .ok()?;
                    out.status
                        .success()
                        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().ok().flatten()).collect()
    });
    for (file, text) in files.into_iter().zip(blamed) {
        if let Some(text) = text {
            history.add_blame(file, &text);
        }
    }
    history
}

/// Whether git may find a repository for `root`: a `.git` (directory, or the file a worktree
/// or submodule has) there or above, or `GIT_DIR` set.
fn in_git_checkout(root: &Path) -> bool {
    std::env::var_os("GIT_DIR").is_some() || root.ancestors().any(|d| d.join(".git").exists())
}

/// The workspace's members as cargo's messages name them (none when `cargo metadata` fails:
/// then no suspect can be attributed, and a warning says so).
fn packages(root: &Path) -> Vec<crate::report::disk::Package> {
    match crate::workspace::Workspace::load(Some(&root.join("Cargo.toml")), None, Vec::new()) {
        Ok(ws) => ws
            .members
            .into_iter()
            .map(|p| crate::report::disk::Package {
                id: p.id,
                manifest_path: p.manifest_path.to_string(),
                targets: p.targets,
            })
            .collect(),
        Err(e) => {
            crate::ui::warn(format!(
                "--message-format json: cannot read the workspace's packages ({e}): no suspect is reported"
            ));
            Vec::new()
        }
    }
}

/// The files whose lines `format` shows: every ranked file on the HTML page, the files of
/// the shown entries' lines in the other reports that quote code.
fn shown_files<'a>(format: Format, report: &Report<'a>, top: usize) -> BTreeSet<&'a str> {
    let units = &report.spectra.units;
    let lines: Vec<usize> = match format {
        Format::Json => Vec::new(),
        // Functions first, a top function's lines may rank anywhere: every ranked file.
        Format::Html | Format::CargoJson => report.groups.iter().flat_map(|g| g.lines.iter().copied()).collect(),
        Format::Human | Format::Sarif | Format::Short if report.lines_in_functions => {
            report.groups.iter().flat_map(|g| g.lines.iter().copied()).collect()
        }
        Format::Human | Format::Sarif | Format::Short => report
            .rankings
            .iter()
            .flat_map(|r| r.entries.iter().take(top))
            .flat_map(|x| x.lines.iter().copied())
            .collect(),
    };
    lines
        .into_iter()
        .filter(|&u| units[u].name().is_none())
        .map(|u| units[u].file.as_str())
        .collect()
}

/// The directory SARIF paths are relative to (the git top level, else the workspace root),
/// and the workspace's path inside it.
fn repository(workspace: &Path) -> Repository {
    let top = std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(workspace)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    let Some(top) = top else {
        return Repository {
            root: workspace.to_path_buf(),
            prefix: String::new(),
        };
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let prefix = canon(workspace)
        .strip_prefix(canon(&top))
        .map(|p| p.to_string_lossy().replace('\\', "/"))
        .unwrap_or_default();
    Repository {
        root: top,
        prefix: if prefix.is_empty() {
            prefix
        } else {
            format!("{prefix}/")
        },
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn git_history_is_looked_for_only_in_a_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws/member");
        std::fs::create_dir_all(&root).unwrap();
        // A worktree's `.git` is a file, two directories above the member.
        std::fs::write(dir.path().join(".git"), "gitdir: elsewhere\n").unwrap();
        assert!(super::in_git_checkout(&root), "a worktree's .git file above");
        std::fs::remove_file(dir.path().join(".git")).unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        assert!(
            super::in_git_checkout(&root),
            "a repository's .git directory at the root"
        );
    }
}
