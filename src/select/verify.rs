//! The check of the edit against the new build's coverage maps ([`Reuse::verify`]).

use std::collections::HashSet;

use super::reuse::Reuse;
use crate::spectra::FunctionSpan;

/// A function of the new build in a changed file that the diff does not explain: neither where
/// an unchanged function went nor inside a changed one.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{} has a function at lines {}-{} that the last run did not know", .0.file, .0.start, .0.end)]
pub struct UnknownFunction(pub FunctionSpan);

impl Reuse {
    /// Each unchanged function of a changed file, and where the diff puts it (`None`: a line
    /// of it changed after all).
    fn unchanged_places(&self) -> Vec<(&FunctionSpan, Option<FunctionSpan>)> {
        self.previous
            .functions
            .iter()
            .filter(|f| self.moved.contains_key(&f.file) && !self.changed.contains(f))
            .map(|f| {
                let moved = (self.line_now(&f.file, f.start), self.line_now(&f.file, f.end));
                let span = match moved {
                    (Some(start), Some(end)) => Some(FunctionSpan {
                        file: f.file.clone(),
                        start,
                        end,
                    }),
                    _ => None,
                };
                (f, span)
            })
            .collect()
    }

    /// Checks the edit against the functions the new build's coverage maps name (`now`):
    /// a test of the last run that ran a function which is not where the diff says it went is
    /// not reused (`Ok(n)`: how many such tests); a new function that is not inside a changed
    /// one means the diff does not explain the edit (`Err`: why every test runs).
    /// `complete`: the build made every binary of the selection, so a function missing from it
    /// is gone; a build of some binaries only may simply not hold it (a generic function
    /// instantiated in other binaries), and then only a function of the build overlapping
    /// where the diff put it says the diff is wrong.
    pub fn verify(&mut self, now: &HashSet<FunctionSpan>, complete: bool) -> Result<usize, UnknownFunction> {
        let mut expected = HashSet::new();
        let mut lost = Vec::new();
        let unchanged = self.unchanged_places();
        // A function of the build where the diff put an unchanged one is explained: one nested
        // in another (the methods of a visitor written inside a generic `deserialize`) says
        // nothing against the outer one's place when a narrowed build holds only the inner.
        let placed: HashSet<&FunctionSpan> = unchanged.iter().filter_map(|(_, s)| s.as_ref()).collect();
        for (f, moved) in &unchanged {
            let f = *f;
            match moved {
                Some(span) => {
                    let span = span.clone();
                    let (start, end) = (span.start, span.end);
                    let overlapped = || {
                        now.iter()
                            .any(|g| g.file == f.file && g.start <= end && start <= g.end && !placed.contains(g))
                    };
                    if now.contains(&span) {
                        expected.insert(span);
                    } else if complete || overlapped() {
                        lost.push(f.clone());
                    }
                }
                None => lost.push(f.clone()),
            }
        }
        // Changed functions as they are now: the lines between the new places of the
        // unchanged lines just outside them.
        let changed_now: Vec<(String, u32, u32)> = self
            .changed
            .iter()
            .map(|f| {
                let lines = &self.moved[&f.file];
                let before = (1..f.start).rev().find_map(|l| lines[l as usize - 1]).unwrap_or(0);
                let after = (f.end + 1..=lines.len() as u32)
                    .find_map(|l| lines[l as usize - 1])
                    .unwrap_or(u32::MAX);
                (f.file.clone(), before, after)
            })
            .collect();
        for f in now
            .iter()
            .filter(|f| self.moved.contains_key(&f.file) && !expected.contains(*f))
        {
            let inside = changed_now
                .iter()
                .any(|(file, before, after)| *file == f.file && *before < f.start && f.end < *after);
            let added = self
                .added
                .get(&f.file)
                .is_some_and(|ranges| ranges.iter().any(|&(a, b)| a <= f.start && f.end <= b));
            if !inside && !added {
                return Err(UnknownFunction(f.clone()));
            }
        }
        let before = self.reusable.iter().filter(|r| **r).count();
        self.changed.extend(lost);
        self.drop_dirty();
        Ok(before - self.reusable.iter().filter(|r| **r).count())
    }
}
