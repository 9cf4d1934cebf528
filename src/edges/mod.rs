//! Control-flow edge profiles, for CP (Zhang, Chan, Tse, Jiang & Wang) and HT_Rank's dynamic CFG.
//!
//! **Mechanism.** The workspace's crates are built with LLVM SanitizerCoverage at block level
//! (`-C passes=sancov-module`, level 3: critical edges split, LLVM's block pruning) with an
//! inline flag per block it keeps, a PC table and the control-flow table (every block, flagged
//! or pruned), next to `-C instrument-coverage`, all on stable rustc. Each flagged block sets its
//! byte the first time it runs: no call per block; a pruned block's runs are inferred from the
//! graph ([`cfg::Blocks::ran`]). A small C runtime (`runtime.c`, compiled here with the system C compiler
//! that links Rust programs anyway, cached in the target directory, passed to the linker with
//! `-C link-arg`) maps the flags' pages onto a file per process, so they survive crashes and
//! the timeout's kill. Which edges a test took follows from the blocks it ran and the static
//! graph ([`cfg`]). Why this and not the alternatives: rustc's own coverage counters count
//! regions, not edges, and cannot say which block followed which; `-C instrument-coverage`'s
//! MC/DC and branch coverage is still unstable; a callback per block that pairs consecutive
//! blocks is exact but makes every test several times slower.
//!
//! **Modules.** [`instrument`]: the rustc flags and the runtime. [`record`]: one process's
//! edge file (its block flags). `table`: SanitizerCoverage's control-flow table, its records
//! matched to blocks. [`cfg`]: the blocks, the control-flow graph and the edges taken. [`map`]:
//! a binary's PC table, control-flow table and DWARF (`dwarf`: only the units that hold the
//! functions; `line_rows`: their line-table rows), read once (or, for an executable that runs
//! one test, for the functions that test ran): functions, their blocks, each block's source
//! lines. [`harness`]: libtest's entry, which the runtime wraps to hand libtest only the test a
//! process runs. [`collect`]: the [`Collector`] names blocks `(function without hash, index within
//! function)` so the same function's blocks in several test binaries are one block, and builds
//! [`EdgeSpectra`] (saved with the matrix: [`crate::spectra::edges`]): blocks, edges and, per
//! edge, the tests that traversed it (a bitset, like the line matrix). [`relax`]: the coverage
//! counters' atomic updates made plain while a test runs on one thread. [`state`]: the statics a
//! kept test process compares before it takes another test. CP itself is in
//! [`crate::cp`].

pub mod cfg;
mod dwarf;
pub mod collect;
pub mod harness;
pub mod instrument;
mod line_rows;
pub mod map;
pub mod record;
pub mod relax;
pub mod state;
mod table;

pub use crate::spectra::edges::{
    Block, BlockId, Edge, EdgeSpectra, SavedEdges, SavedEdgesError, deflate_saved, inflate_saved,
};
pub use collect::{CollectError, Collector};
pub use instrument::{
    ENV_READS_ENV, FILE_ENV, LINES_ONLY_ENV, RUNTIME_ENV, host_stub, prepare_runtime, runtime_dir, rustc_flags,
    wrapper_flags,
};
pub use map::demangled;
