//! Line coverage: from a test binary's LLVM coverage map and one test's raw profile to the
//! source lines that test ran.
//!
//! [`covmap`] reads the coverage map, [`profraw`] a raw profile, [`lines`] applies
//! `llvm-cov`'s line rule, [`decode`] puts them together per binary ([`BinaryCoverage`]), and
//! [`units`] numbers the workspace's lines across all binaries of a run ([`LineDecoder`]).

pub mod covmap;
pub mod decode;
pub mod lines;
pub mod profraw;
pub mod units;

pub use crate::bitset::hex;
pub use decode::{BinaryCoverage, FileLines};
pub use units::{Functions, LineDecoder, ProfileError, SortedUnits, UnitTable};
