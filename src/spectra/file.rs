//! The saved file (`spectra.json`, schema [`SCHEMA`]): written whole or streamed, read back
//! with every check (schema, row counts, bitsets, source facts, edge profiles, no source file
//! outside the workspace), older schemas included.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::edges::{self, EdgeSpectra, SavedEdges};
use super::error::SpectraError;
use super::facts::{self, SourceFacts};
use super::matrix::{BuildInfo, Outcome, Spectra, TestRecord};
use super::schema::{SCHEMA, SCHEMA_V1, SCHEMA_V2};
use super::snapshot::Snapshot;
use super::unit::{FunctionSpan, Unit, inside_workspace};
use crate::bitset::BitSet;

#[derive(Serialize, Deserialize)]
#[cfg_attr(test, serde(deny_unknown_fields))]
struct SavedSpectra {
    schema: String,
    workspace_root: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    build: Option<BuildInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partition: Option<String>,
    /// `[file, first line, last line]` of every function.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    functions: Vec<(String, u32, u32)>,
    tests: Vec<TestRecord>,
    /// `[file, line]` pairs.
    units: Vec<(String, u32)>,
    /// Per unit, the covering tests as a hex bitset (bit i of byte j = test 8j+i).
    coverage: Vec<String>,
    /// Schema v1 only: the edge profiles as plain JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edges: Option<SavedEdges>,
    /// Schema v2: the edge profiles' JSON, deflated and base64-encoded (`edges::saved`): they
    /// are most of a run's data (function names repeat per block) and only CP reads them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    edges_deflated: Option<String>,
    /// Schema v3: the source facts ([`SourceFacts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    facts: Option<facts::SavedFacts>,
    /// What the run saw before it built ([`Snapshot`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    snapshot: Option<Snapshot>,
}

/// Just the schema, read before the rest.
#[derive(Deserialize)]
struct Head {
    schema: Option<String>,
}

/// Whether loading saved spectra reads their edge profiles (only CP needs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeProfiles {
    Load,
    Skip,
}

/// A saved run's outcomes (`binary name`, outcome) and its selection's digest
/// ([`Spectra::skim`]).
pub type Skimmed = (Vec<(String, Outcome)>, Option<String>);

impl Spectra {
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        // Write then rename, so a crash never leaves a half-written file behind.
        let tmp = path.with_extension("json.tmp");
        // Streamed to the file: the text is never whole in memory (the run's report may be
        // computed meanwhile).
        let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
        serde_json::to_writer(&mut out, &self.saved())?;
        std::io::Write::flush(&mut out)?;
        drop(out);
        std::fs::rename(&tmp, path)
    }

    /// The saved file's bytes (schema [`SCHEMA`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.saved()).expect("spectra serialise")
    }

    /// What is saved, in the file's shape.
    fn saved(&self) -> SavedSpectra {
        SavedSpectra {
            schema: SCHEMA.to_string(),
            workspace_root: self.workspace_root.clone(),
            build: self.build.clone(),
            partition: self.partition.clone(),
            functions: self
                .functions
                .iter()
                .map(|f| (f.file.clone(), f.start, f.end))
                .collect(),
            tests: self.tests.clone(),
            units: self.units.iter().map(|u| (u.file.clone(), u.line)).collect(),
            coverage: self.coverage.iter().map(BitSet::to_hex).collect(),
            edges: None,
            edges_deflated: self.edges.as_ref().map(edges::deflate_saved),
            facts: self.facts.as_ref().map(|f| f.to_saved(&self.functions)),
            snapshot: self.snapshot.clone(),
        }
    }

    /// Reads saved spectra; the error says what is wrong in words.
    pub fn load(path: &Path) -> Result<Self, SpectraError> {
        Spectra::load_with(path, EdgeProfiles::Load)
    }

    /// The outcome of every test of the saved file at `path`, with its `binary name`, reading
    /// nothing else (the rest of the file is skimmed, not built); `None` when it is missing,
    /// unreadable, of a schema this version does not read, or of another workspace than
    /// `workspace_root`.
    pub fn outcomes_in(path: &Path, workspace_root: &str) -> Option<Vec<(String, Outcome)>> {
        Spectra::skim(path, workspace_root).map(|(outcomes, _)| outcomes)
    }

    /// [`Spectra::outcomes_in`], with the digest of the run's selection (its snapshot's
    /// `selection` part: packages, features, filters, …), when it has one.
    pub fn skim(path: &Path, workspace_root: &str) -> Option<Skimmed> {
        #[derive(Deserialize)]
        struct Tests {
            schema: String,
            #[serde(default)]
            workspace_root: String,
            tests: Vec<OutcomeOnly>,
            #[serde(default)]
            snapshot: Option<ContextOnly>,
        }
        #[derive(Deserialize)]
        struct OutcomeOnly {
            binary: String,
            name: String,
            outcome: Outcome,
        }
        #[derive(Deserialize)]
        struct ContextOnly {
            #[serde(default)]
            context: std::collections::BTreeMap<String, String>,
        }
        let t: Tests = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        ([SCHEMA, SCHEMA_V2, SCHEMA_V1].contains(&t.schema.as_str()) && t.workspace_root == workspace_root).then(|| {
            let selection = t.snapshot.and_then(|mut s| s.context.remove("selection"));
            let outcomes = t
                .tests
                .into_iter()
                .map(|o| (format!("{} {}", o.binary, o.name), o.outcome))
                .collect();
            (outcomes, selection)
        })
    }

    /// [`Spectra::load`], reading the edge profiles only when `edges` says so.
    pub fn load_with(path: &Path, edges: EdgeProfiles) -> Result<Self, SpectraError> {
        Spectra::parse_with(&std::fs::read(path)?, edges)
    }

    /// [`Spectra::load`] on a file's bytes: every check, no file system.
    pub fn parse(bytes: &[u8]) -> Result<Self, SpectraError> {
        Spectra::parse_with(bytes, EdgeProfiles::Load)
    }

    /// [`Spectra::parse`], reading the edge profiles only when `edges` says so (skipped, they
    /// are neither inflated nor checked, and the spectra have none).
    pub fn parse_with(bytes: &[u8], edges: EdgeProfiles) -> Result<Self, SpectraError> {
        // One pass when the file is good; the schema is read on its own only to say why not.
        let saved = match serde_json::from_slice::<SavedSpectra>(bytes) {
            Ok(saved) if matches!(saved.schema.as_str(), SCHEMA | SCHEMA_V2 | SCHEMA_V1) => saved,
            Ok(saved) => return Err(SpectraError::OtherSchema(saved.schema)),
            Err(malformed) => {
                let head: Head = serde_json::from_slice(bytes).map_err(SpectraError::NotJson)?;
                return Err(match head.schema {
                    Some(s) if [SCHEMA, SCHEMA_V2, SCHEMA_V1].contains(&s.as_str()) => {
                        SpectraError::Malformed(malformed)
                    }
                    Some(other) => SpectraError::OtherSchema(other),
                    None => SpectraError::NoSchema,
                });
            }
        };
        if saved.units.len() != saved.coverage.len() {
            return Err(SpectraError::RowCount {
                units: saved.units.len(),
                rows: saved.coverage.len(),
            });
        }
        let n = saved.tests.len();
        let coverage = saved
            .coverage
            .iter()
            .enumerate()
            .map(|(i, h)| BitSet::from_hex(h, n).ok_or(SpectraError::NotABitset { row: i, tests: n }))
            .collect::<Result<Vec<_>, _>>()?;
        let functions: Vec<FunctionSpan> = saved
            .functions
            .into_iter()
            .map(|(file, start, end)| FunctionSpan { file, start, end })
            .collect();
        let facts = saved
            .facts
            .map(|f| SourceFacts::from_saved(f, saved.units.len(), &functions))
            .transpose()?;
        let saved_edges = match (edges, saved.edges, saved.edges_deflated) {
            (EdgeProfiles::Skip, ..) => None,
            (EdgeProfiles::Load, Some(plain), _) => Some(plain),
            (EdgeProfiles::Load, None, Some(deflated)) => Some(edges::inflate_saved(&deflated)?),
            (EdgeProfiles::Load, None, None) => None,
        };
        let edges = saved_edges
            .map(|e| EdgeSpectra::from_saved(e, n, saved.units.len()))
            .transpose()?;
        let mut spectra = Spectra {
            edges,
            build: saved.build,
            partition: saved.partition,
            functions: Vec::new(),
            unit_function: Vec::new(),
            facts,
            snapshot: saved.snapshot,
            shown_sources: None,
            workspace_root: saved.workspace_root,
            tests: saved.tests,
            units: saved
                .units
                .into_iter()
                .map(|(file, line)| Unit { file, line })
                .collect(),
            coverage,
        };
        spectra.set_functions(functions);
        spectra.check_paths()?;
        Ok(spectra)
    }

    /// Refuses source files outside the workspace root. A saved file may come from elsewhere
    /// (a CI artifact, a shard): reports read the files its units and functions name and show
    /// or embed them, so `/etc/shadow` or `../../x` must not get that far. Imported units
    /// (`line == 0`) are names, never read as files.
    fn check_paths(&self) -> Result<(), SpectraError> {
        let source_files = (self
            .units
            .iter()
            .filter(|u| u.name().is_none())
            .map(|u| ("unit", &u.file)))
        .chain(self.functions.iter().map(|f| ("function", &f.file)))
        .chain(
            self.tests
                .iter()
                .flat_map(|t| &t.stack)
                .map(|f| ("stack frame", &f.file)),
        );
        for (what, file) in source_files {
            if !inside_workspace(file) {
                return Err(SpectraError::OutsideWorkspace {
                    what,
                    file: file.clone(),
                });
            }
        }
        Ok(())
    }
}
