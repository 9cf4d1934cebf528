//! The units of the matrix: source lines (or imported names), their ids, and the functions that
//! hold them.

use std::path::{Component, Path};

use serde::{Deserialize, Serialize};

/// A unit of code: one source line, path relative to the workspace root with `/` separators.
/// Units imported from other tools (GZoltar) have only a name: it is kept in `file`, with
/// `line = 0` (lines are 1-based, so no source line is 0).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Unit {
    pub file: String,
    pub line: u32,
}

impl Unit {
    /// An imported unit known only by its name.
    pub fn named(name: impl Into<String>) -> Self {
        Unit {
            file: name.into(),
            line: 0,
        }
    }
    /// The name of an imported unit; `None` for a source line.
    pub fn name(&self) -> Option<&str> {
        (self.line == 0).then_some(self.file.as_str())
    }
}

/// A unit's position in `Spectra::units` (or, while collecting, in the order units were
/// first met). Saved as the bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct UnitId(pub u32);

impl UnitId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A function's extent in the source, from the coverage map (closures are functions too).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FunctionSpan {
    pub file: String,
    pub start: u32,
    pub end: u32,
}

/// Whether `file` stays inside the directory it is relative to: not absolute (no root, no
/// drive prefix, no leading separator of either kind) and without `..`.
pub(super) fn inside_workspace(file: &str) -> bool {
    !file.starts_with(['/', '\\'])
        && Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}
