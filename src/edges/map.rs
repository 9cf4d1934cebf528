//! One instrumented binary's blocks: SanitizerCoverage's PC table (`__sancov_pcs`, one
//! `(pc, flags)` pair per block, flag 1 = function entry) split into functions, its
//! control-flow table (`__sancov_cfs`, [`Cfg`]), each block's address range mapped to source
//! lines through DWARF (inlined frames resolved to the workspace's code), and each function
//! named by its symbol (demangled, without hash) so the same function in two test binaries is
//! recognised as one.

use std::borrow::Cow;
use std::num::NonZeroU32;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};
use rustc_hash::FxHashMap as HashMap;

use super::cfg::{Blocks, CfgError, DELETED};
use crate::platform::{self, Section};

type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// Why a binary's blocks could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MapError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("not an object file: {0}")]
    NotAnObject(object::Error),
    #[error("no edge instrumentation ({section}) in the binary")]
    NoFlags { section: &'static str },
    #[error("no PC table ({section}) in the binary")]
    NoPcTable { section: &'static str },
    #[error("cannot read {section}: {source}")]
    PcTable {
        section: &'static str,
        source: object::Error,
    },
    #[error("the PC table has {entries} entries for {flags} block flags")]
    PcCount { entries: usize, flags: usize },
    #[error("no control-flow table ({section}) in the binary")]
    NoControlFlow { section: &'static str },
    #[error("cannot read {section}: {source}")]
    ControlFlow {
        section: &'static str,
        source: object::Error,
    },
    #[error("{section}: {source}")]
    BadControlFlow { section: &'static str, source: CfgError },
    #[error("the PC table does not start with a function entry")]
    NoEntry,
    #[error("the PC table has unrelocated entries (a relocation format cargo sfl does not read)")]
    Unrelocated,
    #[error("cannot read DWARF: {0}")]
    Dwarf(gimli::Error),
    #[error("cannot read the line table: {0}")]
    LineTable(gimli::Error),
}

/// A function with instrumented blocks.
#[derive(Debug, Clone)]
pub struct Function {
    /// Demangled, without the hash: the same in every binary that contains the function
    /// (empty for a function [`EdgeMap::parse_for`] left out).
    pub name: String,
    /// Its blocks are `first..first + blocks` (indices in [`EdgeMap::graph`]).
    pub first: u32,
    pub blocks: u32,
    /// Some block maps to a line of the workspace's own code.
    pub ours: bool,
}

/// A binary's instrumented blocks.
#[derive(Debug, Default)]
pub struct EdgeMap {
    /// Number of blocks: the PC table's (one flag of the runtime each) and the pruned ones.
    pub blocks: usize,
    /// Number of flags (entries of the PC table, flags of the runtime, in the same order).
    pub flags: usize,
    /// The blocks, their flags and the control-flow graph between them.
    pub graph: Blocks,
    /// Per block, whether it is a function's entry.
    pub entry: Vec<bool>,
    pub functions: Vec<Function>,
    /// Workspace-relative files that `lines` refer to.
    pub files: Vec<String>,
    /// Per block, its lines `(file, line)` in address order (consecutive repeats merged).
    pub lines: Vec<Vec<(u32, u32)>>,
}

impl EdgeMap {
    /// Reads the binary's PC table and maps its blocks to lines; `relative` names the
    /// workspace's files (None: not ours).
    pub fn open(path: &Path, relative: &dyn Fn(&Path) -> Option<String>) -> Result<EdgeMap, MapError> {
        EdgeMap::open_for(path, relative, None)
    }

    /// [`EdgeMap::parse_for`] of the binary at `path`.
    pub fn open_for(
        path: &Path,
        relative: &dyn Fn(&Path) -> Option<String>,
        ran: Option<&[bool]>,
    ) -> Result<EdgeMap, MapError> {
        let data = std::fs::read(path).map_err(|source| MapError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        EdgeMap::parse_for(&data, relative, ran)
    }

    /// [`EdgeMap::open`] on the binary's bytes.
    pub fn parse(data: &[u8], relative: &dyn Fn(&Path) -> Option<String>) -> Result<EdgeMap, MapError> {
        EdgeMap::parse_for(data, relative, None)
    }

    /// [`EdgeMap::parse`] for one process's run: with `ran` (the flags of its edge file), only
    /// the functions with a block that ran are mapped to lines and named; every other
    /// function is left with no lines and not ours, so none of its blocks gets an id. An
    /// executable that runs one test (a doctest links most of its library, 15,000 blocks on
    /// regex-syntax, and runs a few hundred) is read for that test alone.
    pub fn parse_for(
        data: &[u8],
        relative: &dyn Fn(&Path) -> Option<String>,
        ran: Option<&[bool]>,
    ) -> Result<EdgeMap, MapError> {
        let obj = object::File::parse(data).map_err(MapError::NotAnObject)?;
        // The flags' section also holds the runtime's page of padding: at least one flag per block.
        let flags = platform::section(&obj, Section::SancovFlags)
            .ok_or(MapError::NoFlags {
                section: Section::SancovFlags.name_in(&obj),
            })?
            .size() as usize;
        let pcs = pc_table(&obj)?;
        let blocks = pcs.len() / 2;
        if blocks > flags {
            return Err(MapError::PcCount { entries: blocks, flags });
        }
        if blocks > 0 && pcs[1] & 1 == 0 {
            return Err(MapError::NoEntry);
        }
        let flag_count = blocks;
        let graph = control_flow(&obj, &pcs)?;
        let blocks = graph.len();
        let symbols = text_symbols(&obj);
        let sections = dwarf_sections(&obj);
        let ctx = dwarf_context(&sections, &obj)?;
        let mut entry = vec![false; blocks];
        for &(first, count) in &graph.functions {
            if count > 0 {
                entry[first as usize] = true;
            }
        }
        let mut map = EdgeMap {
            blocks,
            flags: flag_count,
            graph,
            entry,
            lines: vec![Vec::new(); blocks],
            ..EdgeMap::default()
        };
        let (address, functions) = (&map.graph.address, &map.graph.functions);
        let entries: Vec<usize> = functions.iter().map(|&(first, _)| first as usize).collect();
        let ran_blocks = ran.map(|flags| map.graph.ran(flags));
        let wanted: Vec<bool> = functions
            .iter()
            .map(|&(first, count)| {
                ran_blocks
                    .as_ref()
                    .is_none_or(|r| r[first as usize..(first + count) as usize].contains(&true))
            })
            .collect();
        // Each function's symbol (name, and its end), looked up once.
        let syms: Vec<Option<&(u64, u64, &str)>> = entries
            .iter()
            .map(|&first| {
                let pc = address[first];
                symbols.binary_search_by(|s| s.0.cmp(&pc)).ok().map(|i| &symbols[i])
            })
            .collect();
        let end_of = |s: &(u64, u64, &str)| s.0.saturating_add(s.1.max(1));
        // Only the instrumented functions' rows are read: the line programs of the rest (std,
        // dependencies: most of a small doctest executable) are never parsed. A function
        // without a symbol to bound it means the whole table.
        let ranges: Option<Vec<(u64, u64)>> = syms
            .iter()
            .zip(&wanted)
            .filter(|(_, wanted)| **wanted)
            .map(|(s, _)| s.map(|s| (s.0, end_of(s))))
            .collect();
        let mut rows = LineRows::read(
            &ctx,
            ranges.as_deref().unwrap_or(&[(0, u64::MAX)]),
            relative,
            &mut map.files,
        )?;
        for (k, &first) in entries.iter().enumerate() {
            let end = first + functions[k].1 as usize;
            if !wanted[k] {
                map.functions.push(Function {
                    name: String::new(),
                    first: first as u32,
                    blocks: (end - first) as u32,
                    ours: false,
                });
                continue;
            }
            let entry_pc = address[first];
            let name = syms[k].map_or_else(|| format!("<function at {entry_pc:#x}>"), |s| demangled(s.2));
            let fn_end = syms[k].map_or(u64::MAX, end_of);
            // Block ranges: each block runs to the next block's start within the function.
            let mut order: Vec<usize> = (first..end).filter(|&i| address[i] != DELETED).collect();
            order.sort_by_key(|&i| address[i]);
            for (j, &b) in order.iter().enumerate() {
                let lo = address[b];
                let hi = order
                    .get(j + 1)
                    .map_or(fn_end, |&n| address[n])
                    .max(lo.saturating_add(1));
                map.lines[b] = rows.lines(lo, hi);
            }
            let ours = (first..end).any(|b| !map.lines[b].is_empty());
            // Our function's blocks of code inlined from elsewhere (std in a release build)
            // take the line of the innermost inlining frame that is ours.
            if ours {
                let bare: Vec<usize> = (first..end)
                    .filter(|&b| map.lines[b].is_empty() && address[b] != DELETED)
                    .collect();
                for b in bare {
                    if let Some(line) = rows.inlined_at(&ctx, address[b], relative, &mut map.files) {
                        map.lines[b] = vec![line];
                    }
                }
            }
            map.functions.push(Function {
                name,
                first: first as u32,
                blocks: (end - first) as u32,
                ours,
            });
        }
        Ok(map)
    }
}

/// The `(pc, flags)` pairs, relocated as the loader would.
fn pc_table(obj: &object::File) -> Result<Vec<u64>, MapError> {
    let section = Section::SancovPcs.name_in(obj);
    let pcs = platform::relocated_words(obj, Section::SancovPcs)
        .map_err(|source| MapError::PcTable { section, source })?
        .ok_or(MapError::NoPcTable { section })?
        .values;
    if pcs.chunks(2).any(|p| p[0] == 0) {
        return Err(MapError::Unrelocated);
    }
    Ok(pcs)
}

/// The blocks of the PC table `pcs` (`(pc, flags)` pairs) and the pruned ones, and the
/// control-flow graph between them.
fn control_flow(obj: &object::File, pcs: &[u64]) -> Result<Blocks, MapError> {
    let section = Section::SancovControlFlow.name_in(obj);
    let words = platform::relocated_words(obj, Section::SancovControlFlow)
        .map_err(|source| MapError::ControlFlow { section, source })?
        .ok_or(MapError::NoControlFlow { section })?;
    let addresses: Vec<u64> = pcs.iter().step_by(2).copied().collect();
    let entry: Vec<bool> = pcs.iter().skip(1).step_by(2).map(|f| f & 1 != 0).collect();
    Blocks::parse(&words.values, &words.relocated, &addresses, &entry)
        .map_err(|source| MapError::BadControlFlow { section, source })
}

/// Function symbols `(address, size, mangled name)`, sorted by address. Names are demangled
/// only for the functions looked up ([`demangled`]): most symbols of a binary are std's and
/// the dependencies', never instrumented.
fn text_symbols<'data>(obj: &object::File<'data>) -> Vec<(u64, u64, &'data str)> {
    let mut out: Vec<(u64, u64, &str)> = obj
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by_key(|s| s.0);
    out
}

/// A symbol's name demangled, without its hash.
fn demangled(mangled: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(mangled))
}

/// The binary's DWARF sections, borrowed from its bytes (inflated only when compressed): no
/// copy of the debug information, which is most of a debug build's size.
fn dwarf_sections<'data>(obj: &object::File<'data>) -> gimli::DwarfSections<Cow<'data, [u8]>> {
    let load = |id: gimli::SectionId| -> Result<Cow<'data, [u8]>, gimli::Error> {
        Ok(obj
            .section_by_name(id.name())
            .and_then(|s| s.uncompressed_data().ok())
            .unwrap_or(Cow::Borrowed(&[])))
    };
    gimli::DwarfSections::load(load).expect("loading sections cannot fail")
}

fn dwarf_context<'a>(
    sections: &'a gimli::DwarfSections<Cow<'_, [u8]>>,
    obj: &object::File,
) -> Result<addr2line::Context<Reader<'a>>, MapError> {
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let dwarf = sections.borrow(|section| gimli::EndianSlice::new(section, endian));
    addr2line::Context::from_dwarf(dwarf).map_err(MapError::Dwarf)
}

/// A line-table row: `(address, length, (file, line))`; `None`: not the workspace's code, or
/// no line (line 0).
type Row = (u64, u64, Option<(u32, NonZeroU32)>);

/// The whole line table, sorted by address, with each row's file already judged ours or not.
struct LineRows {
    rows: Vec<Row>,
    /// Interned names of files, so each path is judged once.
    ids: HashMap<String, u32>,
}

impl LineRows {
    /// The rows of the address ranges `ranges`.
    fn read(
        ctx: &addr2line::Context<Reader<'_>>,
        ranges: &[(u64, u64)],
        relative: &dyn Fn(&Path) -> Option<String>,
        names: &mut Vec<String>,
    ) -> Result<LineRows, MapError> {
        let mut judged: HashMap<String, Option<u32>> = HashMap::default();
        let mut ids = HashMap::default();
        let mut rows = Vec::new();
        for &(lo, hi) in ranges {
            for (addr, len, loc) in ctx.find_location_range(lo, hi).map_err(MapError::LineTable)? {
                let ours = match (loc.file, loc.line.and_then(NonZeroU32::new)) {
                    (Some(f), Some(line)) => judged
                        .entry(f.to_string())
                        .or_insert_with(|| relative(Path::new(f)).map(|rel| intern(rel, names, &mut ids)))
                        .map(|file| (file, line)),
                    _ => None,
                };
                rows.push((addr, len, ours));
            }
        }
        rows.sort_by_key(|r| r.0);
        // Ranges that touch share a boundary row.
        rows.dedup();
        Ok(LineRows { rows, ids })
    }

    /// Our lines of the code in `[lo, hi)` in address order (repeats in a row merged): the row
    /// that covers `lo` and every row that starts before `hi`. A row that ends before `lo` (the
    /// end of the function before, when no row covers the start of a function with no line
    /// table of its own, like the `main` rustc generates) covers nothing here.
    fn lines(&self, lo: u64, hi: u64) -> Vec<(u32, u32)> {
        let start = self.rows.partition_point(|r| r.0 <= lo).saturating_sub(1);
        let mut out: Vec<(u32, u32)> = Vec::new();
        for &(addr, len, ours) in &self.rows[start..] {
            if addr >= hi {
                break;
            }
            if addr.saturating_add(len) <= lo {
                continue;
            }
            if let Some((file, line)) = ours
                && out.last() != Some(&(file, line.get()))
            {
                out.push((file, line.get()));
            }
        }
        out
    }

    /// The innermost inlining frame at `addr` that is the workspace's code.
    fn inlined_at(
        &mut self,
        ctx: &addr2line::Context<Reader<'_>>,
        addr: u64,
        relative: &dyn Fn(&Path) -> Option<String>,
        names: &mut Vec<String>,
    ) -> Option<(u32, u32)> {
        let mut frames = ctx.find_frames(addr).skip_all_loads().ok()?;
        while let Ok(Some(frame)) = frames.next() {
            if let Some(loc) = frame.location
                && let (Some(f), Some(l)) = (loc.file, loc.line)
                && l > 0
                && let Some(rel) = relative(Path::new(f))
            {
                return Some((intern(rel, names, &mut self.ids), l));
            }
        }
        None
    }
}

/// The id of a workspace-relative file.
fn intern(rel: String, names: &mut Vec<String>, ids: &mut HashMap<String, u32>) -> u32 {
    *ids.entry(rel.clone()).or_insert_with(|| {
        names.push(rel);
        (names.len() - 1) as u32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row at `address` of `len` bytes on `line` of file 0 (0: not the workspace's).
    fn rows(rows: &[(u64, u64, u32)]) -> LineRows {
        LineRows {
            rows: rows
                .iter()
                .map(|&(a, len, l)| -> Row { (a, len, NonZeroU32::new(l).map(|l| (0, l))) })
                .collect(),
            ids: HashMap::default(),
        }
    }

    #[test]
    fn a_block_takes_the_row_over_its_start_and_the_rows_inside() {
        let r = rows(&[(0x10, 0x10, 3), (0x20, 0x8, 4), (0x28, 0x8, 0)]);
        assert_eq!(r.lines(0x18, 0x30), [(0, 3), (0, 4)]);
        assert_eq!(r.lines(0x20, 0x28), [(0, 4)]);
        // Not the workspace's code: no line.
        assert!(r.lines(0x28, 0x30).is_empty());
    }

    #[test]
    fn a_row_that_ends_before_a_block_covers_none_of_it() {
        // A function at 0x40 with no row of its own (rustc's `main`) after one whose last row
        // ends at 0x30.
        let r = rows(&[(0x10, 0x20, 7)]);
        assert!(r.lines(0x40, 0x50).is_empty());
        assert_eq!(r.lines(0x2f, 0x50), [(0, 7)]);
    }
}
