//! What a ranking needs from the sources, computed when the tests are collected (from the
//! sources that were built) and saved with the matrix (schema v3), so that `report`, `merge`
//! and `eval` rank a saved file the same in any directory and on any machine: which units are
//! test code, each line's kind and whether it operates (the evidence that orders the lines of
//! one entry), each function's name, and a digest per source file. Sources are read after that
//! only to print code, and only when they match their digest (`Spectra::check_sources`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::SpectraError;
use super::unit::{FunctionSpan, inside_workspace};
use crate::bitset::BitSet;

/// Per unit (bitsets over `Spectra::units`) and per function, what the sources said when the
/// tests were collected.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceFacts {
    /// Units that are test code (`testcode`).
    pub test_code: BitSet,
    /// Units whose line is structural (`evidence::line_kind`); lines without text are not.
    pub structural: BitSet,
    /// Units whose line operates (`evidence::operates`).
    pub operates: BitSet,
    /// The name of each function (what `--granularity function` shows).
    pub function_names: BTreeMap<FunctionSpan, String>,
    /// Per source file of the units, the MD5 of its contents (hex): only a file that still
    /// has it is read to show its code.
    pub digests: BTreeMap<String, String>,
}

/// The facts as saved: bitsets in hex like the coverage rows, names parallel to the file's
/// `functions`.
#[derive(Serialize, Deserialize)]
#[cfg_attr(test, serde(deny_unknown_fields))]
pub(super) struct SavedFacts {
    test_code: String,
    structural: String,
    operates: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    function_names: Vec<String>,
    /// `[file, MD5 of its contents]`, in path order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    sources: Vec<(String, String)>,
}

impl SourceFacts {
    /// No unit is test code, structural or operating; no names, no digests.
    pub fn new(units: usize) -> Self {
        SourceFacts {
            test_code: BitSet::new(units),
            structural: BitSet::new(units),
            operates: BitSet::new(units),
            function_names: BTreeMap::new(),
            digests: BTreeMap::new(),
        }
    }

    /// The facts of the units `keep` holds for, renumbered.
    pub(super) fn retain(&self, keep: &[bool]) -> Self {
        let kept = keep.iter().filter(|k| **k).count();
        let mut out = SourceFacts {
            function_names: self.function_names.clone(),
            digests: self.digests.clone(),
            ..SourceFacts::new(kept)
        };
        let kept_units = keep.iter().enumerate().filter(|(_, k)| **k).map(|(u, _)| u);
        for (to, u) in kept_units.enumerate() {
            out.copy_unit(to, self, u);
        }
        out
    }

    /// The facts of a matrix whose units are `n` functions: names and digests (line facts are
    /// the lines' own, kept beside at function granularity).
    pub(super) fn for_functions(&self, n: usize) -> Self {
        SourceFacts {
            function_names: self.function_names.clone(),
            digests: self.digests.clone(),
            ..SourceFacts::new(n)
        }
    }

    /// Sets unit `to`'s facts to unit `from`'s of `other`.
    pub(super) fn copy_unit(&mut self, to: usize, other: &SourceFacts, from: usize) {
        for (mine, theirs) in [
            (&mut self.test_code, &other.test_code),
            (&mut self.structural, &other.structural),
            (&mut self.operates, &other.operates),
        ] {
            if theirs.contains(from) {
                mine.insert(to);
            }
        }
    }

    pub(super) fn to_saved(&self, functions: &[FunctionSpan]) -> SavedFacts {
        SavedFacts {
            test_code: self.test_code.to_hex(),
            structural: self.structural.to_hex(),
            operates: self.operates.to_hex(),
            function_names: if self.function_names.is_empty() {
                Vec::new()
            } else {
                functions
                    .iter()
                    .map(|f| self.function_names.get(f).cloned().unwrap_or_default())
                    .collect()
            },
            sources: self.digests.iter().map(|(f, d)| (f.clone(), d.clone())).collect(),
        }
    }

    /// Checks saved facts against the file's `units` and `functions` (the file may be hostile:
    /// every bitset must be over the units, every name a function's).
    pub(super) fn from_saved(
        saved: SavedFacts,
        units: usize,
        functions: &[FunctionSpan],
    ) -> Result<Self, SpectraError> {
        let bits = |what: &'static str, hex: &str| {
            BitSet::from_hex(hex, units).ok_or(SpectraError::Facts(format!(
                "{what} is not a bitset over the {units} units"
            )))
        };
        if !saved.function_names.is_empty() && saved.function_names.len() != functions.len() {
            return Err(SpectraError::Facts(format!(
                "{} function names for {} functions",
                saved.function_names.len(),
                functions.len()
            )));
        }
        let mut digests = BTreeMap::new();
        for (file, digest) in saved.sources {
            if !inside_workspace(&file) {
                return Err(SpectraError::OutsideWorkspace {
                    what: "source digest of",
                    file,
                });
            }
            if digest.len() != 32 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(SpectraError::Facts(format!("the digest of {file:?} is not an MD5")));
            }
            digests.insert(file, digest);
        }
        Ok(SourceFacts {
            test_code: bits("test_code", &saved.test_code)?,
            structural: bits("structural", &saved.structural)?,
            operates: bits("operates", &saved.operates)?,
            function_names: functions
                .iter()
                .cloned()
                .zip(saved.function_names)
                .filter(|(_, name)| !name.is_empty())
                .collect(),
            digests,
        })
    }
}

/// MD5 of a file's contents, in hex.
pub fn file_digest(bytes: &[u8]) -> String {
    use md5::{Digest, Md5};
    crate::bitset::hex(&Md5::digest(bytes))
}

/// The digest over every source file (relative path and contents, in the order given; a file
/// that cannot be read counts as missing) that `build.sources` records; `files` are read from
/// `read` (the file's bytes, `None` when it cannot be read).
pub fn sources_digest<'a>(files: impl IntoIterator<Item = (&'a str, Option<&'a [u8]>)>) -> String {
    use md5::{Digest, Md5};
    let mut md5 = Md5::new();
    for (f, bytes) in files {
        md5.update(f.as_bytes());
        md5.update([0]);
        match bytes {
            Some(bytes) => {
                md5.update((bytes.len() as u64).to_le_bytes());
                md5.update(bytes);
            }
            None => md5.update(b"(missing)"),
        }
    }
    crate::bitset::hex(&md5.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::tests::{doric_minmax, lib_functions};
    use crate::spectra::{BuildInfo, SCHEMA_V2, Spectra};

    fn with_facts() -> Spectra {
        let mut s = doric_minmax();
        s.set_functions(lib_functions(&[(1, 4), (2, 3)]));
        let mut facts = SourceFacts::new(s.units.len());
        facts.test_code.insert(3);
        facts.structural.insert(0);
        facts.operates.insert(2);
        facts.function_names.insert(s.functions[0].clone(), "outer".into());
        facts
            .function_names
            .insert(s.functions[1].clone(), "outer::inner".into());
        facts.digests.insert("src/lib.rs".into(), file_digest(b"text"));
        s.facts = Some(facts);
        s
    }

    #[test]
    fn a_closure_is_part_of_the_function_it_is_written_in() {
        // doric_minmax's units are lines 1-4 of src/lib.rs: `f` (1-4) holds a closure (2-3);
        // a nested `fn` is a function of its own.
        let mut s = doric_minmax();
        s.set_functions(lib_functions(&[(1, 4), (2, 3)]));
        assert_eq!(s.items(), [0, 1], "without names, each is itself");
        let mut facts = SourceFacts::new(s.units.len());
        facts.function_names.insert(s.functions[0].clone(), "f".into());
        facts
            .function_names
            .insert(s.functions[1].clone(), "f::{closure}".into());
        s.facts = Some(facts.clone());
        assert_eq!(s.items(), [0, 0]);
        assert_eq!(s.unit_items(), [Some(0), Some(0), Some(0), Some(0)]);
        assert_eq!(s.unit_function, [Some(0), Some(1), Some(1), Some(0)]);
        assert_eq!(s.enclosing_functions("src/lib.rs", &[2]), [1]);
        // The function-level matrix: the closure's lines are its function's.
        let functions = s.by_function();
        assert!(functions.coverage[1].is_empty() && !functions.coverage[0].is_empty());
        facts.function_names.insert(s.functions[1].clone(), "f::inner".into());
        s.facts = Some(facts);
        assert_eq!(s.items(), [0, 1]);
        assert_eq!(s.enclosing_functions("src/lib.rs", &[2]), [2]);
    }

    #[test]
    fn schema_v3_facts_round_trip_and_v2_loads_without_them() {
        let s = with_facts();
        let bytes = s.to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("\"schema\":\"cargo-sfl-spectra/v3\""), "{text}");
        assert!(text.contains("\"facts\":{\"test_code\":\"08\""), "{text}");
        let back = Spectra::parse(&bytes).unwrap();
        assert_eq!(back.facts, s.facts);
        // A v2 file (no facts) still loads, with the facts absent.
        let mut v2: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        v2["schema"] = SCHEMA_V2.into();
        v2.as_object_mut().unwrap().remove("facts");
        let old = Spectra::parse(&serde_json::to_vec(&v2).unwrap()).unwrap();
        assert_eq!(old.facts, None);
        assert_eq!((old.units, old.coverage), (s.units.clone(), s.coverage.clone()));
    }

    #[test]
    fn facts_follow_the_units_through_retain_by_function_and_merge() {
        let s = with_facts();
        let kept = s.retain_units(&[false, true, true, true]);
        let f = kept.facts.as_ref().unwrap();
        assert!(f.operates.contains(1) && f.test_code.contains(2) && !f.structural.contains(0));
        assert_eq!(kept.function_name(&kept.functions[1]), Some("outer::inner"));
        let functions = s.by_function();
        assert_eq!(functions.facts.as_ref().unwrap().function_names.len(), 2);
        // Shards of one run merge their facts by unit.
        let mut one = s.clone();
        let mut two = s.clone();
        one.tests.truncate(2);
        two.tests.drain(..2);
        for c in &mut one.coverage {
            *c = BitSet::from_words(2, vec![c.words()[0] & 3]);
        }
        for c in &mut two.coverage {
            *c = BitSet::from_words(3, vec![c.words()[0] >> 2]);
        }
        let merged = Spectra::merge(vec![one.clone(), two.clone()]).unwrap();
        assert_eq!(merged.coverage, s.coverage);
        assert_eq!(merged.facts, s.facts);
        // A shard without facts (an older file): the merge has none.
        one.facts = None;
        assert_eq!(Spectra::merge(vec![one, two]).unwrap().facts, None);
    }

    #[test]
    fn hostile_facts_are_refused() {
        let s = with_facts();
        let v: serde_json::Value = serde_json::from_slice(&s.to_bytes()).unwrap();
        let refused = |path: &str, value: serde_json::Value| {
            let mut bad = v.clone();
            bad["facts"][path] = value;
            Spectra::parse(&serde_json::to_vec(&bad).unwrap())
                .unwrap_err()
                .to_string()
        };
        // Unit 4 of 4 does not exist.
        assert!(refused("test_code", "10".into()).contains("not a bitset over the 4 units"));
        assert!(refused("operates", "000000000000000000".into()).contains("not a bitset"));
        assert!(refused("function_names", serde_json::json!(["a"])).contains("1 function names for 2 functions"));
        let outside = refused("sources", serde_json::json!([["../x", file_digest(b"")]]));
        assert!(outside.contains("not a path inside the workspace"), "{outside}");
        assert!(refused("sources", serde_json::json!([["src/lib.rs", "zz"]])).contains("not an MD5"));
    }

    #[test]
    fn only_sources_with_their_recorded_digest_are_shown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        let mut s = with_facts();
        // Missing here.
        let hidden = s.check_sources(dir.path());
        assert_eq!(hidden.missing, ["src/lib.rs"]);
        assert!(!s.may_show("src/lib.rs"));
        // Another file of the same name.
        std::fs::write(dir.path().join("src/lib.rs"), "other").unwrap();
        assert_eq!(s.check_sources(dir.path()).changed, ["src/lib.rs"]);
        std::fs::write(dir.path().join("src/lib.rs"), "text").unwrap();
        assert!(s.check_sources(dir.path()).is_empty() && s.may_show("src/lib.rs"));
        // Without per-file digests, the digest over all files decides.
        s.facts = None;
        s.build = Some(BuildInfo {
            rustc: "r".into(),
            sources: sources_digest([("src/lib.rs", Some(&b"text"[..]))]),
        });
        assert!(s.check_sources(dir.path()).is_empty() && s.may_show("src/lib.rs"));
        std::fs::write(dir.path().join("src/lib.rs"), "changed").unwrap();
        assert_eq!(s.check_sources(dir.path()).changed, ["src/lib.rs"]);
        assert!(!s.may_show("src/lib.rs"));
    }
}
