//! What the reports show of the checkout they were made in, read before rendering (the
//! renderers read no file and run no command): source lines, where the repository is, which
//! files failing tests panicked in, the current directory.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// The checkout as the reports show it.
#[derive(Debug, Default)]
pub struct Disk {
    /// Source lines of the files a report shows.
    pub sources: Sources,
    /// Where SARIF's paths are relative to; `None`: the workspace root.
    pub repository: Option<Repository>,
    /// The current directory: `--format short` prints paths relative to it when inside it.
    pub here: Option<PathBuf>,
    /// Files of the workspace (relative to its root) that failing tests' panic sites name.
    pub panic_files: HashSet<String>,
    /// The workspace's members, for cargo's JSON messages (`--message-format json`).
    pub packages: Vec<Package>,
}

/// A workspace member as cargo's messages name it.
#[derive(Debug)]
pub struct Package {
    pub id: cargo_metadata::PackageId,
    pub manifest_path: String,
    pub targets: Vec<cargo_metadata::Target>,
}

/// The repository a workspace is in.
#[derive(Debug, PartialEq, Eq)]
pub struct Repository {
    /// Its top level.
    pub root: PathBuf,
    /// The workspace's path inside it, with a trailing `/` (empty at the top level).
    pub prefix: String,
}

/// Source lines by file (relative to the workspace root), only of files a report may show
/// (`Spectra::may_show`: a loaded file's sources only where they match their recorded digest).
#[derive(Debug, Default)]
pub struct Sources {
    files: HashMap<String, Vec<String>>,
}

impl Sources {
    /// Adds `file`'s text.
    pub fn insert(&mut self, file: &str, text: &str) {
        self.files
            .insert(file.to_string(), text.lines().map(str::to_string).collect());
    }

    /// Line `line` (1-based) of `file`, when its text was read.
    pub fn line(&self, file: &str, line: u32) -> Option<&str> {
        self.files
            .get(file)?
            .get(line.checked_sub(1)? as usize)
            .map(String::as_str)
    }

    /// Every line of `file` (none when its text was not read).
    pub fn lines(&self, file: &str) -> &[String] {
        self.files.get(file).map_or(&[], Vec::as_slice)
    }
}
