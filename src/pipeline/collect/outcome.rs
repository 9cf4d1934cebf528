//! What a finished job leaves: its record, the units and edges it covered.

use std::path::PathBuf;

use crate::spectra::{TestRecord, UnitId};

/// A finished job.
#[derive(Debug)]
pub struct JobOutcome {
    pub record: TestRecord,
    /// Interned unit ids the test covered, sorted, without repeats.
    pub covered: Vec<UnitId>,
    /// The profiles kept for it (`--keep-profiles`; otherwise empty).
    pub profiles: Vec<PathBuf>,
    /// Edges it traversed (block ids), sorted, without repeats.
    pub edges: Vec<crate::edges::Edge>,
    /// Why its process could not be run at all (then the record is no test result).
    pub not_run: Option<String>,
}
