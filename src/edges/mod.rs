//! Control-flow edge profiles, for CP (Zhang, Chan, Tse, Jiang & Wang) and HT_Rank's dynamic CFG.
//!
//! **Mechanism.** The workspace's crates are built with LLVM SanitizerCoverage at block level
//! (`-C passes=sancov-module`, level 3: every block, critical edges split, no pruning) with
//! `trace-pc-guard` callbacks and a PC table, next to `-C instrument-coverage`, all on stable
//! rustc. The callbacks are defined by a small C runtime (`runtime.c`, compiled here with the
//! system C compiler that links Rust programs anyway, cached in the target directory, passed
//! to the linker with `-C link-arg`). Why this and not the alternatives: rustc's own coverage
//! counters count regions, not edges, and cannot say which block followed which; `-C
//! instrument-coverage`'s MC/DC and branch coverage is still unstable; a Rust runtime would need
//! `#[thread_local]` (unstable in `no_std`) or a second copy of std in the test binary.
//! `trace-pc-guard` sees every block as it runs, in order, per thread, so the runtime can pair
//! consecutive blocks of one function activation (its shadow stack is keyed by frame address,
//! so a call in between, recursion, unwinding and threads are all handled) and store each edge
//! once in a shared file mapping that survives crashes and the timeout's kill.
//!
//! **Modules.** [`instrument`]: the rustc flags and the recorder. [`record`]: one process's
//! edge file. [`map`]: a binary's PC table and DWARF, read once: functions, their blocks, each
//! block's source lines. [`collect`]: the [`Collector`] names blocks `(function without hash,
//! index within function)` so the same function's blocks in several test binaries are one
//! block, and builds [`EdgeSpectra`] ([`model`]): blocks, edges and, per edge, the tests that
//! traversed it (a bitset, like the line matrix). CP itself is in [`crate::cp`].

pub mod cfg;
pub mod collect;
pub mod instrument;
pub mod map;
pub mod model;
pub mod record;

pub use collect::{CollectError, Collector, Traversed};
pub use instrument::{FILE_ENV, RUNTIME_ENV, prepare_runtime, rustc_flags};
pub use model::{Block, BlockId, Edge, EdgeSpectra, SavedEdges, SavedEdgesError, deflate_saved, inflate_saved};
