//! Control-flow edge profiles, for CP (seed 004) and HT_Rank's dynamic CFG.
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
//! **Decoding.** `map::EdgeMap` reads a binary's PC table and DWARF once: functions, their
//! blocks, each block's source lines. `record` parses one process's edge file. The pipeline
//! names blocks `(function without hash, index within function)` so the same function's blocks
//! in several test binaries are one block, and builds `EdgeSpectra`: blocks, edges and, per
//! edge, the tests that traversed it (a bitset, like the line matrix).

pub mod map;
pub mod record;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cp::{CpEdge, CpSolution};
use crate::error::SflError;
use crate::spectra::BitSet;

/// The runtime's output file pattern (`%p` = process id), set for each test process.
pub const FILE_ENV: &str = "CARGO_SFL_EDGES_FILE";
/// Set for the rustc wrapper: the runtime object to link.
pub const RUNTIME_ENV: &str = "CARGO_SFL_EDGES_RUNTIME";
/// The recorder's source, compiled on first use.
const RUNTIME_C: &str = include_str!("runtime.c");

/// rustc flags that add edge instrumentation to a workspace crate (with the runtime at `rt`).
pub fn rustc_flags(rt: &Path) -> Vec<String> {
    let mut flags: Vec<String> = [
        "passes=sancov-module",
        "llvm-args=-sanitizer-coverage-level=3",
        "llvm-args=-sanitizer-coverage-trace-pc-guard",
        "llvm-args=-sanitizer-coverage-pc-table",
        "llvm-args=-sanitizer-coverage-prune-blocks=0",
    ]
    .iter()
    .flat_map(|f| ["-C".to_string(), (*f).to_string()])
    .collect();
    flags.push("-C".into());
    flags.push(format!("link-arg={}", rt.display()));
    flags
}

/// Compiles the runtime into `dir` unless the same source is already there; returns the object.
/// When the runtime changed, binaries linked against the old one are stale but cargo cannot
/// know (the flags are added by our wrapper), so the instrumented build is cleaned.
pub fn prepare_runtime(dir: &Path, build_dir: &Path) -> Result<PathBuf, SflError> {
    let rt_dir = dir.join("edges-runtime");
    let object = rt_dir.join("sfl_edges.o");
    let stamp = rt_dir.join("source.c");
    if std::fs::read_to_string(&stamp).is_ok_and(|s| s == RUNTIME_C) && object.exists() {
        return Ok(object);
    }
    let setup = |what: String| SflError::Setup(what);
    std::fs::create_dir_all(&rt_dir).map_err(|e| setup(format!("cannot create {}: {e}", rt_dir.display())))?;
    let source = rt_dir.join("sfl_edges.c");
    std::fs::write(&source, RUNTIME_C).map_err(|e| setup(format!("cannot write {}: {e}", source.display())))?;
    let cc = std::env::var_os("CC").unwrap_or_else(|| "cc".into());
    let out = std::process::Command::new(&cc)
        .args(["-c", "-O2", "-fPIC", "-fno-stack-protector", "-o"])
        .arg(&object)
        .arg(&source)
        .output()
        .map_err(|e| {
            setup(format!(
                "edge instrumentation needs a C compiler to build its recorder, and `{}` could not run: {e}. \
                 Install one (e.g. `apt install gcc`, which rustc also uses as its linker), set CC, \
                 or pass --no-edges to collect line coverage only",
                cc.to_string_lossy()
            ))
        })?;
    if !out.status.success() {
        return Err(setup(format!(
            "compiling the edge recorder with `{}` failed:\n{}",
            cc.to_string_lossy(),
            String::from_utf8_lossy(&out.stderr).trim_end()
        )));
    }
    // Binaries linked with an older recorder must be relinked.
    for profile in ["debug", "release"] {
        let _ = std::fs::remove_dir_all(build_dir.join(profile));
    }
    std::fs::write(&stamp, RUNTIME_C).map_err(|e| setup(format!("cannot write {}: {e}", stamp.display())))?;
    Ok(object)
}

/// A block of the dynamic CFG: the `index`-th instrumented block of `function`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Block {
    /// Demangled name without hash (closures and monomorphised generics have their own).
    pub function: String,
    pub index: u32,
    /// The units (`Spectra::units` indices) of its source lines in address order, repeats in a
    /// row merged (the order the lines run in, within the block).
    pub lines: Vec<u32>,
}

/// Edge profiles over the same tests as the line matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeSpectra {
    /// Blocks sorted by (function, index).
    pub blocks: Vec<Block>,
    /// `(from, to)` block indices, sorted; `from = None` is the edge into an entry block.
    pub edges: Vec<(Option<u32>, u32)>,
    /// Per edge, the tests that traversed it.
    pub coverage: Vec<BitSet>,
}

/// How edges are saved inside `spectra.json`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedEdges {
    /// `[function, index, [unit…]]`.
    blocks: Vec<(String, u32, Vec<u32>)>,
    /// `[from or null, to, hex bitset over tests]`.
    edges: Vec<(Option<u32>, u32, String)>,
}

impl EdgeSpectra {
    /// Builds the profiles from per-test edges over blocks in any order, putting blocks in
    /// their canonical order.
    pub fn from_tests(blocks: Vec<Block>, tests: usize, traversed: &[Vec<(Option<u32>, u32)>]) -> Self {
        let mut order: Vec<u32> = (0..blocks.len() as u32).collect();
        order.sort_by(|&a, &b| blocks[a as usize].cmp(&blocks[b as usize]));
        let mut remap = vec![0u32; blocks.len()];
        for (new, &old) in order.iter().enumerate() {
            remap[old as usize] = new as u32;
        }
        let mut index: std::collections::BTreeMap<(Option<u32>, u32), BitSet> = std::collections::BTreeMap::new();
        for (t, edges) in traversed.iter().enumerate() {
            for &(from, to) in edges {
                let key = (from.map(|f| remap[f as usize]), remap[to as usize]);
                index.entry(key).or_insert_with(|| BitSet::new(tests)).insert(t);
            }
        }
        let (edges, coverage) = index.into_iter().unzip();
        EdgeSpectra {
            blocks: order.into_iter().map(|o| blocks[o as usize].clone()).collect(),
            edges,
            coverage,
        }
    }

    pub fn to_saved(&self) -> SavedEdges {
        SavedEdges {
            blocks: self
                .blocks
                .iter()
                .map(|b| (b.function.clone(), b.index, b.lines.clone()))
                .collect(),
            edges: self
                .edges
                .iter()
                .zip(&self.coverage)
                .map(|(&(f, t), c)| (f, t, c.to_hex()))
                .collect(),
        }
    }

    /// Checks and reads saved edges for `tests` tests and `units` units.
    pub fn from_saved(saved: SavedEdges, tests: usize, units: usize) -> Result<Self, String> {
        let n = saved.blocks.len() as u32;
        let mut blocks = Vec::with_capacity(saved.blocks.len());
        for (function, index, lines) in saved.blocks {
            if lines.iter().any(|&u| u as usize >= units) {
                return Err(format!("block {index} of {function} names a unit that does not exist"));
            }
            blocks.push(Block { function, index, lines });
        }
        let mut edges = Vec::with_capacity(saved.edges.len());
        let mut coverage = Vec::with_capacity(saved.edges.len());
        for (i, (from, to, hex)) in saved.edges.into_iter().enumerate() {
            if to >= n || from.is_some_and(|f| f >= n) {
                return Err(format!("edge {i} joins blocks that do not exist"));
            }
            edges.push((from, to));
            coverage.push(
                BitSet::from_hex(&hex, tests).ok_or_else(|| format!("edge {i} is not a bitset over {tests} tests"))?,
            );
        }
        Ok(EdgeSpectra {
            blocks,
            edges,
            coverage,
        })
    }

    /// The same profiles with every block's lines mapped through `unit_map` (lines to
    /// functions, or to the units kept); units mapped to `None` are dropped, the order stays
    /// (repeats in a row merged).
    pub fn map_units(&self, unit_map: &[Option<u32>]) -> Self {
        let mut out = self.clone();
        for b in &mut out.blocks {
            b.lines = b.lines.iter().filter_map(|&u| unit_map[u as usize]).collect();
            b.lines.dedup();
        }
        out
    }

    /// The functions (names, sorted, once each) of the given blocks.
    pub fn function_names(&self, blocks: &[usize]) -> Vec<&str> {
        let mut names: Vec<&str> = blocks.iter().map(|&b| self.blocks[b].function.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Solves CP over these edges: every block's BR.
    pub fn solve(&self, failing: &BitSet, passing: &BitSet) -> CpSolution {
        let (total_f, total_p) = (failing.count_and(failing), passing.count_and(passing));
        let edges: Vec<CpEdge> = self
            .edges
            .iter()
            .zip(&self.coverage)
            .map(|(&(from, to), c)| CpEdge {
                from,
                to,
                failing: c.count_and(failing),
                passing: c.count_and(passing),
            })
            .collect();
        crate::cp::solve(self.blocks.len(), &edges, total_f, total_p)
    }

    /// CP's score of every unit: the highest BR of a block containing it, or `None` when no
    /// traversed block contains it.
    pub fn unit_scores(&self, solution: &CpSolution, units: usize) -> Vec<Option<f64>> {
        let mut reached = vec![false; self.blocks.len()];
        for &(f, t) in &self.edges {
            reached[t as usize] = true;
            if let Some(f) = f {
                reached[f as usize] = true;
            }
        }
        let mut out: Vec<Option<f64>> = vec![None; units];
        for (b, block) in self.blocks.iter().enumerate().filter(|(b, _)| reached[*b]) {
            for &u in &block.lines {
                let s = &mut out[u as usize];
                *s = Some(s.map_or(solution.br[b], |v: f64| v.max(solution.br[b])));
            }
        }
        out
    }
}

/// A binary's blocks with their pipeline-wide ids.
struct Prepared {
    /// Per guard (0-based), its block id, or `u32::MAX` for code that is not the workspace's.
    ids: Vec<u32>,
}

/// A block as the collector names it: function, index in the function, `(file, line)`s.
type NamedBlock = (String, u32, Vec<(String, u32)>);

#[derive(Default)]
struct Interner {
    ids: std::collections::HashMap<(String, u32), u32>,
    blocks: Vec<NamedBlock>,
    /// Block count of each function name as first seen.
    sizes: std::collections::HashMap<String, u32>,
}

/// Decodes edge files as tests finish (from any worker), naming blocks across binaries.
pub struct Collector<'a> {
    paths: Vec<PathBuf>,
    relative: &'a (dyn Fn(&Path) -> Option<String> + Sync),
    prepared: Vec<std::sync::OnceLock<Result<Prepared, String>>>,
    interner: std::sync::Mutex<Interner>,
}

/// What one test's edge files held.
#[derive(Debug, Default)]
pub struct Traversed {
    pub edges: Vec<(Option<u32>, u32)>,
    pub dropped: u64,
}

impl<'a> Collector<'a> {
    /// `paths`: every executable of the build (as cargo reported them).
    pub fn new(paths: &[PathBuf], relative: &'a (dyn Fn(&Path) -> Option<String> + Sync)) -> Self {
        Collector {
            paths: paths
                .iter()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
                .collect(),
            relative,
            prepared: paths.iter().map(|_| std::sync::OnceLock::new()).collect(),
            interner: std::sync::Mutex::new(Interner::default()),
        }
    }

    /// Reads binary `i`'s blocks now (e.g. while its tests are being listed); errors are
    /// reported when one of its edge files is decoded.
    pub fn prepare(&self, i: usize) {
        let _ = self.get(i);
    }

    fn get(&self, i: usize) -> &Result<Prepared, String> {
        self.prepared[i].get_or_init(|| {
            let started = std::time::Instant::now();
            let map = map::EdgeMap::open(&self.paths[i], self.relative)
                .map_err(|e| format!("{}: {e}", self.paths[i].display()))?;
            crate::ui::detail(format!(
                "read {} blocks of {} in {:.1} ms",
                map.guards,
                self.paths[i].file_name().unwrap_or_default().to_string_lossy(),
                started.elapsed().as_secs_f64() * 1e3
            ));
            let mut interner = self.interner.lock().expect("not poisoned");
            let mut ids = vec![u32::MAX; map.guards];
            for f in map.functions.iter().filter(|f| f.ours) {
                // The same name with another block count is another function (or another
                // build of it): keep it apart rather than mix their blocks.
                let size = *interner.sizes.entry(f.name.clone()).or_insert(f.blocks);
                let name = if size == f.blocks {
                    f.name.clone()
                } else {
                    format!("{} [{} blocks]", f.name, f.blocks)
                };
                for k in 0..f.blocks {
                    let guard = (f.first + k) as usize;
                    let next = interner.blocks.len() as u32;
                    let id = *interner.ids.entry((name.clone(), k)).or_insert(next);
                    if id == next {
                        let lines = map.lines[guard]
                            .iter()
                            .map(|&(file, line)| (map.files[file as usize].clone(), line))
                            .collect();
                        interner.blocks.push((name.clone(), k, lines));
                    }
                    ids[guard] = id;
                }
            }
            Ok(Prepared { ids })
        })
    }

    /// Reads one edge file and returns its edges between the workspace's blocks.
    pub fn decode(&self, path: &Path, out: &mut Traversed) -> Result<(), String> {
        let file = record::read(path)?;
        let exe = file.exe.canonicalize().unwrap_or_else(|_| file.exe.clone());
        let Some(which) = self.paths.iter().position(|p| *p == exe) else {
            return Err(format!(
                "edge file {} was written by {}, which is not part of this build; ignored",
                path.display(),
                file.exe.display()
            ));
        };
        let prepared = self.get(which).as_ref().map_err(Clone::clone)?;
        if prepared.ids.len() as u64 != file.guards {
            return Err(format!(
                "edge file {} has {} blocks but {} has {}; ignored",
                path.display(),
                file.guards,
                exe.display(),
                prepared.ids.len()
            ));
        }
        out.dropped += file.dropped;
        for (from, to) in file.edges {
            let to = prepared.ids[to as usize - 1];
            if to == u32::MAX {
                continue;
            }
            if from == 0 {
                out.edges.push((None, to));
            } else {
                let from = prepared.ids[from as usize - 1];
                if from != u32::MAX {
                    out.edges.push((Some(from), to));
                }
            }
        }
        Ok(())
    }

    /// The edge profiles of all tests, with block lines as unit ids (`unit` maps a file line to
    /// its unit; lines that are not units are left out).
    pub fn finish(
        self,
        tests: usize,
        traversed: &[Vec<(Option<u32>, u32)>],
        unit: impl Fn(&str, u32) -> Option<u32>,
    ) -> EdgeSpectra {
        let interner = self.interner.into_inner().expect("not poisoned");
        let blocks = interner
            .blocks
            .into_iter()
            .map(|(function, index, lines)| {
                let mut lines: Vec<u32> = lines.iter().filter_map(|(f, l)| unit(f, *l)).collect();
                lines.dedup();
                Block { function, index, lines }
            })
            .collect();
        EdgeSpectra::from_tests(blocks, tests, traversed)
    }
}
