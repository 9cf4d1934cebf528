//! The benchmark's data: each reproduced bug, each attempt's cached record, and the committed
//! list of bugs.

use std::path::Path;

use cargo_sfl::faults::Fault;
use serde::{Deserialize, Serialize};

/// A reproduced bug: what re-running it needs, and what its failure looks like.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct Bug {
    /// `owner/name`.
    pub repository: String,
    pub commit: String,
    pub parent: String,
    pub subject: String,
    /// The tests (as `target :: name`) failing on the buggy version and passing on the fixed.
    pub tests: Vec<String>,
    /// Fault lines in the buggy version.
    pub faults: Vec<Fault>,
    /// Non-blank, non-comment library lines the fix removes or adds.
    pub changed_lines: usize,
    /// Some fix hunk only adds lines (its fault lines are the insertion point's neighbours).
    pub omission: bool,
    /// `kept` (the parent's Cargo.lock), `regenerated` (removed after it did not build), `none`.
    pub lockfile: String,
    /// How the first failing test fails under cargo sfl (see [`failure_kind`]).
    pub failure_kind: String,
    /// Some failing test's backtrace has a frame in library code.
    pub library_frame: bool,
}

/// One candidate attempted: the cached record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Attempt {
    pub repository: String,
    pub commit: String,
    pub subject: String,
    /// `reproduced`, or why not.
    pub outcome: String,
    /// The first error of a failed build, or other detail.
    #[serde(default)]
    pub detail: String,
    pub seconds: f64,
    pub bug: Option<Bug>,
}

pub(crate) fn slug(repository: &str) -> String {
    repository.replace('/', "+")
}

pub(crate) const BUGS_FILE: &str = "regressions-bugs.json";

/// The bugs file's list.
pub(crate) fn load_bugs(path: &Path) -> Vec<Bug> {
    #[derive(Deserialize)]
    struct File {
        bugs: Vec<Bug>,
    }
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<File>(&b).ok())
        .map(|f| f.bugs)
        .unwrap_or_default()
}

/// The cached record of an attempt, if any.
pub(crate) fn cached(dir: &Path) -> Option<Attempt> {
    serde_json::from_slice(&std::fs::read(dir.join("record.json")).ok()?).ok()
}
