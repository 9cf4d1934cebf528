//! What a run saw of the workspace before it built, saved with its spectra: the next run
//! compares it with what it sees to re-run only the tests an edit can affect
//! ([`crate::select`]).

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The workspace as a run saw it before it built.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    /// When the run started, in seconds since the Unix epoch.
    pub taken: u64,
    /// What decides results beyond the packages' files, part by part (`toolchain`,
    /// `selection`, `env:NAME`, …): a digest each, so the next run can say which changed.
    pub context: BTreeMap<String, String>,
    /// Every file of the packages (relative to the workspace root, `/`-separated): Rust
    /// sources as a hash per line (so an edit is located in its functions), others as a
    /// digest of their contents.
    pub files: BTreeMap<String, FileState>,
    /// Environment variables the build declared reading (`env!`, `option_env!`, build scripts'
    /// `rerun-if-env-changed`), read after it: a change of one re-runs every test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_env: Vec<String>,
    /// The paths workspace members' build scripts declared reading (`rerun-if-changed`) that
    /// [`Snapshot::files`] does not hold (outside the packages, ignored by git), read after the
    /// build, relative to the workspace root (or absolute): a change of one re-runs every test.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub script_inputs: BTreeMap<String, FileState>,
    /// When tests fail that passed in the workspace's last green run (every test passed): what
    /// changed since ([`SinceGreen`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_green: Option<SinceGreen>,
    /// The files (of [`Snapshot::files`]) of members whose code runs while compiling: proc-macro
    /// crates, build dependencies, and the members they depend on. No test's coverage shows
    /// what an edit there changes, so it runs every test.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub compile_time: std::collections::BTreeSet<String>,
}

impl Snapshot {
    /// A digest of everything the snapshot says results depend on (the files, the build's
    /// declared inputs and the context: toolchain, selection, environment), not when it was
    /// taken: equal for two runs whose tests see the same inputs. An interrupted run resumes
    /// only when it is unchanged, so a data file edited since is not read as it was.
    pub fn inputs_digest(&self) -> String {
        let parts = (&self.context, &self.files, &self.build_env, &self.script_inputs);
        super::facts::file_digest(&serde_json::to_vec(&parts).unwrap_or_default())
    }
}

/// What changed since the workspace's last green run, for the tests that passed then and fail
/// now: the prime suspects are the changed lines those tests run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SinceGreen {
    /// When the green run started, in seconds since the Unix epoch.
    pub taken: u64,
    /// The tests (`binary name`) that passed then and fail now.
    pub tests: Vec<String>,
    /// Per Rust source (relative to the workspace root), the lines (1-based, in today's file)
    /// changed or added since, and for a deletion the lines on either side of it; a changed
    /// line inside a statement of several lines whose coverage is recorded on another of its
    /// lines is given as that line.
    pub lines: BTreeMap<String, Vec<u32>>,
    /// The other files (a snapshot's digests: data files, manifests) changed, added or
    /// removed since, and the Rust sources removed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The environment variables whose values changed since (set, unset or given another
    /// value), sorted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// One file of a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    /// MD5 of the contents, hex.
    Digest(String),
    /// A Rust source as cargo sfl saved it before it read tokens: the first 8 bytes of each
    /// line's MD5, little-endian, concatenated, base64. Read, never written (a snapshot of an
    /// older version is not compared with today's: `select::snapshot::VERSION`).
    Lines(String),
    /// A Rust source: [`line_hashes`] (a hash of each line's tokens, comments and whitespace
    /// between them left out) as 8 bytes each, little-endian, concatenated, base64; and the
    /// MD5 of its bytes, hex, so that an edit of comments alone is still an edit (a test may
    /// read the sources' text).
    Source { lines: String, digest: String },
}

impl FileState {
    /// A Rust source: a hash per line of its tokens, and a digest of its bytes.
    pub fn lines(text: &[u8]) -> Self {
        let mut bytes = Vec::new();
        for h in line_hashes(text) {
            bytes.extend_from_slice(&h.to_le_bytes());
        }
        FileState::Source {
            lines: base64::engine::general_purpose::STANDARD.encode(bytes),
            digest: super::facts::file_digest(text),
        }
    }

    /// Any other file: a digest of its contents.
    pub fn digest(bytes: &[u8]) -> Self {
        FileState::Digest(super::facts::file_digest(bytes))
    }

    /// The per-line hashes of a Rust source (`None`: a digest, or not base64).
    pub fn line_hashes(&self) -> Option<Vec<u64>> {
        let (FileState::Lines(text) | FileState::Source { lines: text, .. }) = self else {
            return None;
        };
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).ok()?;
        (bytes.len() % 8 == 0).then(|| {
            bytes
                .chunks_exact(8)
                .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect()
        })
    }
}

/// A hash of each line of Rust source `text` (lines as [`str::lines`] splits them: `\n` or
/// `\r\n`): of its tokens ([`super::tokens::token_lines`]), so that a line whose comments or
/// indentation changed hashes as it did, and a line of comments or whitespace alone hashes as
/// a blank one ([`blank_line_hash`]).
pub fn line_hashes(text: &[u8]) -> Vec<u64> {
    super::tokens::token_lines(text).iter().map(|l| hash(l)).collect()
}

/// The [`line_hashes`] of a line without a token: blank, or comments alone.
pub fn blank_line_hash() -> u64 {
    hash(b"")
}

fn hash(line: &[u8]) -> u64 {
    use md5::{Digest, Md5};
    u64::from_le_bytes(Md5::digest(line)[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_hashes_survive_the_round_trip_and_count_lines_like_str_lines() {
        let text = b"fn a() {\r\n    1\n}\n";
        let state = FileState::lines(text);
        let hashes = state.line_hashes().unwrap();
        assert_eq!(hashes.len(), std::str::from_utf8(text).unwrap().lines().count());
        assert_eq!(
            hashes,
            line_hashes(b"fn a() {\n    1\n}"),
            "\\r\\n and a last newline change no line"
        );
        assert_ne!(hashes[0], hashes[1]);
        assert_eq!(FileState::digest(b"x").line_hashes(), None);
        assert!(line_hashes(b"").is_empty());
        let commented = FileState::lines(b"fn a() { // one\r\n        1\n}\n");
        assert_eq!(
            commented.line_hashes(),
            state.line_hashes(),
            "comments and indentation are no tokens"
        );
        assert_ne!(commented, state, "but the file changed");
        assert_eq!(line_hashes(b"  // c\n\n/* d */"), [blank_line_hash(); 3]);
    }
}
