//! The saved file's schema tags: the one written, and the older ones still read.

/// Version tag of the saved-spectra file; bump on any incompatible change.
pub const SCHEMA: &str = "cargo-sfl-spectra/v3";
/// The previous schema, still read: no source facts (`facts`), so test code, line evidence and
/// function names are read from the sources where the file is used.
pub const SCHEMA_V2: &str = "cargo-sfl-spectra/v2";
/// The first schema, still read: edge profiles as plain JSON (`edges`), no source facts.
pub const SCHEMA_V1: &str = "cargo-sfl-spectra/v1";
