//! Why saved spectra cannot be read, or shards cannot be merged.

use super::edges::SavedEdgesError;
use super::schema::{SCHEMA, SCHEMA_V1, SCHEMA_V2};

/// Why saved spectra cannot be read, or shards cannot be merged.
#[derive(Debug, thiserror::Error)]
pub enum SpectraError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("schema is {0:?}, this cargo-sfl reads {SCHEMA:?}, {SCHEMA_V2:?} and {SCHEMA_V1:?}")]
    OtherSchema(String),
    #[error("no \"schema\" field: not a cargo-sfl spectra file")]
    NoSchema,
    #[error("malformed: {0}")]
    Malformed(serde_json::Error),
    #[error("{units} units but {rows} coverage rows")]
    RowCount { units: usize, rows: usize },
    #[error("coverage row {row} is not a bitset over {tests} tests")]
    NotABitset { row: usize, tests: usize },
    #[error("facts: {0}")]
    Facts(String),
    #[error("edges: {0}")]
    Edges(#[from] SavedEdgesError),
    #[error("no shards to merge")]
    NoShards,
    #[error("file {shard} was built with {what} than file 1")]
    OtherBuild { shard: usize, what: &'static str },
    #[error(
        "test {binary} {name} is in files {first} and {second} (were the shards made with the same --partition N?)"
    )]
    InTwoShards {
        binary: String,
        name: String,
        first: usize,
        second: usize,
    },
    #[error("some shards have edge profiles and some do not (collected with --no-edges?)")]
    SomeWithoutEdges,
    #[error(
        "{what} {file:?} is not a path inside the workspace (absolute, or with `..`): reports read \
         and show the files a spectra file names, so only the workspace's own are accepted"
    )]
    OutsideWorkspace { what: &'static str, file: String },
}

impl SpectraError {
    /// For a merge: the shard (0-based, in the order given) the problem was found in.
    pub fn shard(&self) -> Option<usize> {
        match self {
            SpectraError::OtherBuild { shard, .. } => Some(shard - 1),
            SpectraError::InTwoShards { second, .. } => Some(second - 1),
            _ => None,
        }
    }
}
