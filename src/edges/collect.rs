//! Per-test edge files (which blocks ran) to the edges each test traversed (through the
//! binary's control-flow graph, [`super::cfg`]), with blocks named across binaries:
//! `(function without hash, index within function)`, so the same function's blocks in several
//! test binaries are one block. [`Collector::finish`] turns every test's edges into
//! [`EdgeSpectra`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;

use super::cfg::Blocks;
use super::map::{EdgeMap, MapError};
use super::record::{self, ReadError};
use crate::per_binary::{BinaryError, PerBinary};
use crate::spectra::UnitId;
use crate::spectra::edges::{Block, BlockId, Edge, EdgeSpectra};

/// Why an edge file contributed no edges (a warning on its test).
#[derive(Debug, thiserror::Error)]
pub enum CollectError {
    #[error(transparent)]
    Read(#[from] ReadError),
    #[error(transparent)]
    Binary(#[from] BinaryError<MapError>),
    #[error("edge file {} was written by {}, which is not part of this build; ignored", file.display(), exe.display())]
    ForeignBinary { file: PathBuf, exe: PathBuf },
    #[error("edge file {} has {recorded} blocks but {} has {blocks}; ignored", file.display(), binary.display())]
    BlockCount {
        file: PathBuf,
        recorded: u64,
        binary: PathBuf,
        blocks: usize,
    },
}

/// A binary's blocks with their run-wide ids, and its control-flow graph.
struct BinaryBlocks {
    /// Per block, its id (None: code that is not the workspace's).
    ids: Vec<Option<BlockId>>,
    /// The blocks' flags and graph.
    graph: Blocks,
    /// Flags the runtime records (the PC table's entries).
    flags: usize,
    entry: Vec<bool>,
}

/// A block as the collector names it, its lines still as `(file, line)` (files as indices into
/// `BlockNames::files`).
struct NamedBlock {
    function: Arc<str>,
    index: u32,
    lines: Vec<(u32, u32)>,
}

/// The blocks of the run, numbered as first met. Names are shared, not copied per block and
/// line: a crate has tens of thousands of blocks of a few thousand functions in a few files.
#[derive(Default)]
struct BlockNames {
    ids: HashMap<(Arc<str>, u32), BlockId>,
    blocks: Vec<NamedBlock>,
    /// Block count of each function name as first seen.
    sizes: HashMap<Arc<str>, u32>,
    /// Workspace-relative files, each once.
    files: Vec<String>,
    file_ids: HashMap<String, u32>,
}

impl BlockNames {
    /// Names the blocks of `map`'s functions that are the workspace's; returns each block's id.
    fn add(&mut self, map: &EdgeMap) -> Vec<Option<BlockId>> {
        let mut ids = vec![None; map.blocks];
        // This map's file indices, as ours.
        let files: Vec<u32> = map
            .files
            .iter()
            .map(|f| {
                *self.file_ids.entry(f.clone()).or_insert_with(|| {
                    self.files.push(f.clone());
                    self.files.len() as u32 - 1
                })
            })
            .collect();
        for f in map.functions.iter().filter(|f| f.ours) {
            // The same name with another block count is another function (or another
            // build of it): keep it apart rather than mix their blocks.
            let size = *self.sizes.entry(Arc::from(f.name.as_str())).or_insert(f.blocks);
            let name: Arc<str> = if size == f.blocks {
                Arc::from(f.name.as_str())
            } else {
                Arc::from(format!("{} [{} blocks]", f.name, f.blocks))
            };
            for k in 0..f.blocks {
                let block = (f.first + k) as usize;
                let next = BlockId(self.blocks.len() as u32);
                let id = *self.ids.entry((name.clone(), k)).or_insert(next);
                if id == next {
                    let lines = map.lines[block]
                        .iter()
                        .map(|&(file, line)| (files[file as usize], line))
                        .collect();
                    self.blocks.push(NamedBlock {
                        function: name.clone(),
                        index: k,
                        lines,
                    });
                }
                ids[block] = Some(id);
            }
        }
        ids
    }
}

/// Decodes edge files as tests finish (from any worker), naming blocks across binaries.
pub struct Collector<'a> {
    binaries: PerBinary<BinaryBlocks, MapError>,
    relative: &'a (dyn Fn(&Path) -> Option<String> + Sync),
    names: Mutex<BlockNames>,
    /// The executables edge files named, resolved ([`Collector::canonical`]).
    canonical: Mutex<std::collections::HashMap<PathBuf, PathBuf>>,
}

impl<'a> Collector<'a> {
    /// `paths`: every executable of the build (as cargo reported them); `relative` names the
    /// workspace's files (None: not ours).
    pub fn new(paths: &[PathBuf], relative: &'a (dyn Fn(&Path) -> Option<String> + Sync)) -> Self {
        // The recorder writes the executable's path as the kernel resolved it.
        let canonical = paths
            .iter()
            .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
            .collect();
        Collector {
            binaries: PerBinary::new(canonical),
            relative,
            names: Mutex::new(BlockNames::default()),
            canonical: Mutex::default(),
        }
    }

    /// More executables of the build, after the others (as [`crate::coverage::LineDecoder`]
    /// adds them, so that both number them alike).
    pub fn add_binaries(&mut self, more: &[PathBuf]) {
        self.binaries.extend(
            more.iter()
                .map(|p| p.canonicalize().unwrap_or_else(|_| p.clone()))
                .collect(),
        );
    }

    /// Reads binary `i`'s blocks now (e.g. while its tests are being listed); errors are
    /// reported when one of its edge files is decoded.
    pub fn prepare(&self, i: usize) {
        let _ = self.binary(i);
    }

    /// Drops binary `i`'s blocks and graph (its tests have finished; its blocks keep their
    /// names and ids); read again if needed.
    pub fn evict(&self, i: usize) {
        self.binaries.evict(i);
    }

    fn binary(&self, i: usize) -> Result<Arc<BinaryBlocks>, BinaryError<MapError>> {
        self.binaries.get(i, |path| {
            let started = std::time::Instant::now();
            let map = EdgeMap::open(path, self.relative)?;
            crate::ui::detail(format!(
                "read {} blocks of {} in {:.1} ms",
                map.blocks,
                path.file_name().unwrap_or_default().to_string_lossy(),
                started.elapsed().as_secs_f64() * 1e3
            ));
            Ok(self.named(map))
        })
    }

    /// `map`'s blocks, the workspace's named.
    fn named(&self, map: EdgeMap) -> BinaryBlocks {
        let ids = self.names.lock().expect("not poisoned").add(&map);
        BinaryBlocks {
            ids,
            graph: map.graph,
            flags: map.flags,
            entry: map.entry,
        }
    }

    /// Reads one edge file and adds its edges between the workspace's blocks to `out`.
    /// `single`: the executable (an index into the collector's paths) that runs only this
    /// test; if the file is its and its blocks were not read yet, they are read for this
    /// process alone ([`EdgeMap::parse_for`]) and not kept.
    pub fn decode(&self, path: &Path, out: &mut Vec<Edge>, single: Option<usize>) -> Result<(), CollectError> {
        let file = record::read(path)?;
        let exe = self.canonical(&file.exe);
        let Some(which) = self.binaries.paths().iter().position(|p| *p == exe) else {
            return Err(CollectError::ForeignBinary {
                file: path.to_path_buf(),
                exe: file.exe,
            });
        };
        let binary = match self.binaries.peek(which) {
            None if single == Some(which) => {
                let map = EdgeMap::open_for(&exe, self.relative, Some(&file.ran)).map_err(|e| BinaryError {
                    binary: exe.clone(),
                    source: Arc::new(e),
                })?;
                Arc::new(self.named(map))
            }
            _ => self.binary(which)?,
        };
        if binary.flags as u64 != file.blocks {
            return Err(CollectError::BlockCount {
                file: path.to_path_buf(),
                recorded: file.blocks,
                binary: exe,
                blocks: binary.flags,
            });
        }
        let ran = binary.graph.ran_set(&file.ran);
        for (from, to) in binary
            .graph
            .cfg
            .taken_from(&ran.flags, &ran.list, |b| binary.entry[b as usize])
        {
            let Some(to) = binary.ids[to as usize] else { continue };
            match from {
                None => out.push(Edge { from: None, to }),
                Some(from) => {
                    if let Some(from) = binary.ids[from as usize] {
                        out.push(Edge { from: Some(from), to });
                    }
                }
            }
        }
        // Calls between the workspace's functions: edges into an entry block, which no edge
        // within a function enters ([`EdgeSpectra::is_call`]).
        for (from, to) in binary.graph.calls_taken(&ran) {
            if let (Some(from), Some(to)) = (binary.ids[from as usize], binary.ids[to as usize]) {
                out.push(Edge { from: Some(from), to });
            }
        }
        Ok(())
    }

    /// `exe` with its links resolved, asked of the file system once per executable.
    fn canonical(&self, exe: &Path) -> PathBuf {
        let mut known = self.canonical.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known
            .entry(exe.to_path_buf())
            .or_insert_with(|| exe.canonicalize().unwrap_or_else(|_| exe.to_path_buf()))
            .clone()
    }

    /// The name of block `id`: `(function, index)`, the same in every process (ids are
    /// numbered as binaries happen to be read).
    pub fn block_name(&self, id: BlockId) -> (String, u32) {
        let mut name = None;
        self.each_block_name([id], |f, k| name = Some((f.to_string(), k)));
        name.expect("one name per block")
    }

    /// [`Collector::block_name`] of each of `ids`, handed to `f` one by one without a copy.
    pub fn each_block_name(&self, ids: impl IntoIterator<Item = BlockId>, mut f: impl FnMut(&str, u32)) {
        let names = self.names.lock().expect("not poisoned");
        for id in ids {
            let b = &names.blocks[id.index()];
            f(&b.function, b.index);
        }
    }

    /// The id of the block named `(function, index)`, if a binary read so far has it.
    pub fn block_id(&self, function: &str, index: u32) -> Option<BlockId> {
        let names = self.names.lock().expect("not poisoned");
        names.ids.get(&(Arc::from(function), index)).copied()
    }

    /// The id of the block named `(function, index)`; a block no binary read so far has (a
    /// reused test's, of a binary this run did not build) is added with `lines`.
    pub fn adopt(&self, function: &str, index: u32, lines: &[(String, u32)]) -> BlockId {
        let mut names = self.names.lock().expect("not poisoned");
        let key = (Arc::from(function), index);
        if let Some(&id) = names.ids.get(&key) {
            return id;
        }
        let lines = lines
            .iter()
            .map(|(file, line)| {
                let next = names.files.len() as u32;
                let f = *names.file_ids.entry(file.clone()).or_insert(next);
                if f == next {
                    names.files.push(file.clone());
                }
                (f, *line)
            })
            .collect();
        let id = BlockId(names.blocks.len() as u32);
        names.blocks.push(NamedBlock {
            function: key.0.clone(),
            index,
            lines,
        });
        names.ids.insert(key, id);
        id
    }

    /// Decodes one test's edge files, turning every problem into a warning on that test.
    /// `single`: as for [`Collector::decode`].
    pub fn decode_test(
        &self,
        files: &[PathBuf],
        out: &mut Vec<Edge>,
        warnings: &mut Vec<String>,
        single: Option<usize>,
    ) {
        if files.is_empty() {
            warnings.push("the test wrote no edge file; it contributes no edges to CP".into());
        }
        for f in files {
            if let Err(e) = self.decode(f, out, single) {
                warnings.push(e.to_string());
            }
        }
    }

    /// The edge profiles of all tests, with block lines as unit ids (`unit` maps a file line to
    /// its unit; lines that are not units are left out).
    pub fn finish(
        self,
        tests: usize,
        traversed: &[Vec<Edge>],
        unit: impl Fn(&str, u32) -> Option<UnitId>,
    ) -> EdgeSpectra {
        let names = self.names.into_inner().expect("not poisoned");
        let files = names.files;
        let blocks = names
            .blocks
            .into_iter()
            .map(|b| {
                let mut lines: Vec<UnitId> = b
                    .lines
                    .iter()
                    .filter_map(|&(f, l)| unit(&files[f as usize], l))
                    .collect();
                lines.dedup();
                Block {
                    function: b.function.to_string(),
                    index: b.index,
                    lines,
                }
            })
            .collect();
        EdgeSpectra::from_tests(blocks, tests, traversed)
    }
}
