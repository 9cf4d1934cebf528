//! Which source files' code a report may show: those that are the files the spectra were
//! recorded from, by their digests.

use std::collections::BTreeSet;
use std::path::Path;

use super::facts::{file_digest, sources_digest};
use super::matrix::Spectra;

/// Source files whose code a report does not show: missing here, or different from the ones
/// the spectra were recorded from.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Hidden {
    pub missing: Vec<String>,
    pub changed: Vec<String>,
    /// The spectra record no digest to check against (then every file is hidden).
    pub unrecorded: bool,
}

impl Hidden {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.changed.is_empty()
    }
}

impl Spectra {
    /// The source files of the units (not imported names), each once, in path order.
    pub fn source_files(&self) -> Vec<&str> {
        let files: BTreeSet<&str> = self
            .units
            .iter()
            .filter(|u| u.name().is_none())
            .map(|u| u.file.as_str())
            .collect();
        files.into_iter().collect()
    }

    /// Whether a report may show the code of `file` (see [`Spectra::check_sources`]).
    pub fn may_show(&self, file: &str) -> bool {
        self.shown_sources.as_ref().is_none_or(|s| s.contains(file))
    }

    /// Reads the units' source files under `root` and lets reports show only those that are
    /// the files the spectra were recorded from: each file's digest when the spectra have them
    /// (schema v3), else the digest over all of them (`build.sources`: all or none). Returns
    /// what is hidden.
    pub fn check_sources(&mut self, root: &Path) -> Hidden {
        let files: Vec<String> = self.source_files().into_iter().map(str::to_string).collect();
        let read: Vec<Option<Vec<u8>>> = files.iter().map(|f| std::fs::read(root.join(f)).ok()).collect();
        let mut hidden = Hidden::default();
        let mut shown = BTreeSet::new();
        match (&self.facts, &self.build) {
            (Some(facts), _) if !facts.digests.is_empty() => {
                for (f, bytes) in files.iter().zip(&read) {
                    match bytes {
                        None => hidden.missing.push(f.clone()),
                        Some(b) if facts.digests.get(f) == Some(&file_digest(b)) => {
                            shown.insert(f.clone());
                        }
                        Some(_) => hidden.changed.push(f.clone()),
                    }
                }
            }
            (_, Some(build)) => {
                let here = sources_digest(files.iter().map(String::as_str).zip(read.iter().map(|b| b.as_deref())));
                if here == build.sources {
                    shown.extend(files.iter().cloned());
                } else {
                    for (f, bytes) in files.iter().zip(&read) {
                        match bytes {
                            None => hidden.missing.push(f.clone()),
                            Some(_) => hidden.changed.push(f.clone()),
                        }
                    }
                }
            }
            (_, None) => {
                hidden.unrecorded = true;
                hidden.changed = files;
            }
        }
        self.shown_sources = Some(shown);
        hidden
    }
}
