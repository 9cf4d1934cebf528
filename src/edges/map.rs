//! One instrumented binary's blocks: SanitizerCoverage's PC table (`__sancov_pcs`, one
//! `(pc, flags)` pair per block, flag 1 = function entry) split into functions, its
//! control-flow table (`__sancov_cfs`, [`Cfg`]), each block's address range mapped to source
//! lines through DWARF (inlined frames resolved to the workspace's code), and each function
//! named by its symbol (demangled, without hash) so the same function in two test binaries is
//! recognised as one.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

use super::cfg::Blocks;
use super::dwarf::{Source, UnitTables, Units};
use super::line_rows::{LineRows, Reader, frames};
use super::table::{CfgError, DELETED};
use crate::platform::{self, Section};

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
    #[error("cannot read the debug information: {0}")]
    DebugSection(std::io::Error),
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

    /// [`EdgeMap::parse_for`] of the binary at `path`. Only the sections it needs are read
    /// from the file (a debug executable is mostly code and debug information that no block
    /// of this run maps to).
    pub fn open_for(
        path: &Path,
        relative: &dyn Fn(&Path) -> Option<String>,
        ran: Option<&[bool]>,
    ) -> Result<EdgeMap, MapError> {
        EdgeMap::open_reading(path, relative, ran, LineReader::Units)
    }

    /// [`EdgeMap::open_for`] with the given reader of line tables (both give the same map).
    pub fn open_reading(
        path: &Path,
        relative: &dyn Fn(&Path) -> Option<String>,
        ran: Option<&[bool]>,
        reader: LineReader,
    ) -> Result<EdgeMap, MapError> {
        let io = |source| MapError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::open(path).map_err(io)?;
        let image = sparse_image(&file).map_err(io)?;
        EdgeMap::read(&image, Source::File(&file), relative, ran, reader)
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
        EdgeMap::read(data, Source::Bytes(data), relative, ran, LineReader::Units)
    }

    /// The map of the binary `data`; `source` reads the debug sections `data` may leave out.
    fn read(
        data: &[u8],
        source: Source<'_>,
        relative: &dyn Fn(&Path) -> Option<String>,
        ran: Option<&[bool]>,
        reader: LineReader,
    ) -> Result<EdgeMap, MapError> {
        let obj = object::File::parse(data).map_err(MapError::NotAnObject)?;
        let (flags, graph) = blocks(&obj)?;
        let symbols = text_symbols(&obj);
        // The whole DWARF, read only if needed: no unit index, or inlined frames to resolve.
        let sections = OnceCell::new();
        let whole = OnceCell::new();
        let context = || -> Result<&addr2line::Context<Reader<'_>>, MapError> {
            if whole.get().is_none() {
                if sections.get().is_none() {
                    let _ = sections.set(dwarf_sections(&obj, source).map_err(MapError::DebugSection)?);
                }
                let _ = whole.set(dwarf_context(sections.get().expect("set"), &obj)?);
            }
            Ok(whole.get().expect("set"))
        };
        let units = match reader {
            LineReader::Units => Units::new(&obj, source),
            LineReader::Addr2line => None,
        };
        let mut map = EdgeMap::of_blocks(flags, graph);
        let syms = map.function_symbols(&symbols);
        // A doctest's own functions are test code whose lines a standalone doctest's line table
        // puts in the doc comment (and past it): left out, as a merged doctest's are.
        let mut wanted = map.wanted(ran);
        for (w, sym) in wanted.iter_mut().zip(&syms) {
            *w &= !sym.is_some_and(|s| crate::doctest::defined_by_doctest(s.2));
        }
        let ranges = line_ranges(&syms, &wanted);
        let ranges = ranges.as_deref().unwrap_or(&[(0, u64::MAX)]);
        let mut tables = units.as_ref().map(UnitTables::new);
        let mut rows = map.line_rows(&mut tables, ranges, relative, &context)?;
        for (k, sym) in syms.iter().enumerate() {
            let function = if wanted[k] {
                map.map_function(k, *sym, &mut rows, &mut tables, relative, &context)?
            } else {
                map.unmapped_function(k)
            };
            map.functions.push(function);
        }
        Ok(map)
    }

    /// The map of `graph`'s blocks (`flags` of them in the PC table), with no lines and no
    /// functions yet.
    fn of_blocks(flags: usize, graph: Blocks) -> EdgeMap {
        let blocks = graph.len();
        let mut entry = vec![false; blocks];
        for &(first, count) in &graph.functions {
            if count > 0 {
                entry[first as usize] = true;
            }
        }
        EdgeMap {
            blocks,
            flags,
            graph,
            entry,
            lines: vec![Vec::new(); blocks],
            ..EdgeMap::default()
        }
    }

    /// Per function, whether it is mapped: with `ran` (the flags of one process's run), only
    /// the functions with a block that ran; else all.
    fn wanted(&self, ran: Option<&[bool]>) -> Vec<bool> {
        let ran_blocks = ran.map(|flags| self.graph.ran(flags));
        self.graph
            .functions
            .iter()
            .map(|&(first, count)| {
                ran_blocks
                    .as_ref()
                    .is_none_or(|r| r[first as usize..(first + count) as usize].contains(&true))
            })
            .collect()
    }

    /// Each function's symbol (name, and its end), looked up once.
    fn function_symbols<'s, 'data>(&self, symbols: &'s [Symbol<'data>]) -> Vec<Option<&'s Symbol<'data>>> {
        self.graph
            .functions
            .iter()
            .map(|&(first, _)| {
                let pc = self.graph.address[first as usize];
                symbols.binary_search_by(|s| s.0.cmp(&pc)).ok().map(|i| &symbols[i])
            })
            .collect()
    }

    /// The line-table rows of `ranges`, read by unit when `tables` can, else through addr2line
    /// (`tables` is then dropped). A unit the targeted reader cannot read (a form it does not
    /// know, say) sends the whole map to addr2line, which reports what is wrong if anything is.
    fn line_rows<'c, 'r: 'c>(
        &mut self,
        tables: &mut Option<UnitTables<'_, '_>>,
        ranges: &[(u64, u64)],
        relative: &dyn Fn(&Path) -> Option<String>,
        context: &dyn Fn() -> Result<&'c addr2line::Context<Reader<'r>>, MapError>,
    ) -> Result<LineRows, MapError> {
        let by_unit = tables
            .as_mut()
            .and_then(|tables| LineRows::by_unit(tables, ranges, relative, &mut self.files).ok());
        match by_unit {
            Some(rows) => Ok(rows),
            None => {
                *tables = None;
                self.files.clear();
                LineRows::read(context()?, ranges, relative, &mut self.files).map_err(MapError::LineTable)
            }
        }
    }

    /// Function `k` left out of a run's map ([`EdgeMap::parse_for`]): no name, not ours.
    fn unmapped_function(&self, k: usize) -> Function {
        let (first, blocks) = self.graph.functions[k];
        Function {
            name: String::new(),
            first,
            blocks,
            ours: false,
        }
    }

    /// Maps function `k`'s blocks to lines and names it (`sym`: its symbol, if any).
    fn map_function<'c, 'r: 'c>(
        &mut self,
        k: usize,
        sym: Option<&Symbol<'_>>,
        rows: &mut LineRows,
        tables: &mut Option<UnitTables<'_, '_>>,
        relative: &dyn Fn(&Path) -> Option<String>,
        context: &dyn Fn() -> Result<&'c addr2line::Context<Reader<'r>>, MapError>,
    ) -> Result<Function, MapError> {
        let (first, count) = self.graph.functions[k];
        let (first, end) = (first as usize, (first + count) as usize);
        let address = &self.graph.address;
        let entry_pc = address[first];
        let name = sym.map_or_else(|| format!("<function at {entry_pc:#x}>"), |s| demangled(s.2));
        let fn_end = sym.map_or(u64::MAX, end_of);
        // Block ranges: each block runs to the next block's start within the function.
        let mut order: Vec<usize> = (first..end).filter(|&i| address[i] != DELETED).collect();
        order.sort_by_key(|&i| address[i]);
        for (j, &b) in order.iter().enumerate() {
            let lo = address[b];
            let hi = order
                .get(j + 1)
                .map_or(fn_end, |&n| address[n])
                .max(lo.saturating_add(1));
            self.lines[b] = rows.lines(lo, hi);
        }
        let ours = (first..end).any(|b| !self.lines[b].is_empty());
        if ours {
            self.inlined_lines(first..end, rows, tables, relative, context)?;
        }
        Ok(Function {
            name,
            first: first as u32,
            blocks: count,
            ours,
        })
    }

    /// Our function's blocks of code inlined from elsewhere (std in a release build) take the
    /// line of the innermost inlining frame that is ours.
    fn inlined_lines<'c, 'r: 'c>(
        &mut self,
        blocks: std::ops::Range<usize>,
        rows: &mut LineRows,
        tables: &mut Option<UnitTables<'_, '_>>,
        relative: &dyn Fn(&Path) -> Option<String>,
        context: &dyn Fn() -> Result<&'c addr2line::Context<Reader<'r>>, MapError>,
    ) -> Result<(), MapError> {
        let bare: Vec<usize> = blocks
            .filter(|&b| self.lines[b].is_empty() && self.graph.address[b] != DELETED)
            .collect();
        for b in bare {
            let address = self.graph.address[b];
            let locations = match tables.as_mut().and_then(|t| t.locations(address)) {
                Some(locations) => locations,
                None => frames(context()?, address),
            };
            if let Some(line) = rows.first_ours(locations, relative, &mut self.files) {
                self.lines[b] = vec![line];
            }
        }
        Ok(())
    }
}

/// A function symbol: `(address, size, mangled name)`.
type Symbol<'data> = (u64, u64, &'data str);

/// Where a symbol's code ends (at least one byte past its start).
fn end_of(s: &Symbol<'_>) -> u64 {
    s.0.saturating_add(s.1.max(1))
}

/// The address ranges whose line-table rows are read: only the wanted functions'. The line
/// programs of the rest (std, dependencies: most of a small doctest executable) are never
/// parsed. A function without a symbol to bound it means the whole table (`None`).
fn line_ranges(syms: &[Option<&Symbol<'_>>], wanted: &[bool]) -> Option<Vec<(u64, u64)>> {
    syms.iter()
        .zip(wanted)
        .filter(|(_, wanted)| **wanted)
        .map(|(s, _)| s.map(|s| (s.0, end_of(s))))
        .collect()
}

/// The number of the PC table's entries (the runtime's flags, checked against the flags'
/// section) and the binary's blocks. The flags' section also holds the runtime's page of
/// padding: at least one flag per block.
fn blocks(obj: &object::File) -> Result<(usize, Blocks), MapError> {
    let flags = platform::section(obj, Section::SancovFlags)
        .ok_or(MapError::NoFlags {
            section: Section::SancovFlags.name_in(obj),
        })?
        .size() as usize;
    let pcs = pc_table(obj)?;
    let blocks = pcs.len() / 2;
    if blocks > flags {
        return Err(MapError::PcCount { entries: blocks, flags });
    }
    if blocks > 0 && pcs[1] & 1 == 0 {
        return Err(MapError::NoEntry);
    }
    Ok((blocks, control_flow(obj, &pcs)?))
}

/// Sections no block is mapped through, skipped by [`sparse_image`]: code and data, unwind
/// tables, the coverage map, and the debug sections [`Units`] reads in part (`.debug_info`,
/// `.debug_line`, `.debug_str`, `.debug_ranges`) or never (locations). The whole-DWARF reader
/// reads the sections it needs itself, through [`Source`].
fn skipped(name: &str) -> bool {
    const SKIP: [&str; 9] = [
        ".text",
        ".rodata",
        ".eh_frame",
        ".eh_frame_hdr",
        ".gcc_except_table",
        ".data",
        ".data.rel.ro",
        ".bss",
        ".tbss",
    ];
    SKIP.contains(&name)
        || name.starts_with("__llvm_cov")
        || name.starts_with("__llvm_prf")
        || (name.starts_with(".debug_") && !matches!(name, ".debug_aranges" | ".debug_abbrev"))
}

/// The binary's bytes with the [`skipped`] sections left as zeros: what an executable that
/// runs one test needs is a tenth of it (a 10 MB doctest executable), and zero pages that are
/// never touched cost neither a read nor a page fault. Compressed sections are read whole.
fn sparse_image(file: &std::fs::File) -> std::io::Result<Vec<u8>> {
    let len = file.metadata()?.len();
    let mut holes: Vec<(u64, u64)> = Vec::new();
    {
        let cache = object::ReadCache::new(file);
        if let Ok(obj) = object::File::parse(&cache) {
            for section in obj.sections() {
                let plain = section
                    .compressed_file_range()
                    .is_ok_and(|r| r.format == object::CompressionFormat::None);
                if let (true, Ok(name), Some((offset, size))) = (plain, section.name(), section.file_range())
                    && skipped(name)
                    && offset.checked_add(size).is_some_and(|end| end <= len)
                {
                    holes.push((offset, offset + size));
                }
            }
        }
    }
    holes.sort_unstable();
    let mut image = vec![0u8; usize::try_from(len).map_err(|_| std::io::Error::other("file too large"))?];
    let mut at = 0u64;
    for (start, end) in holes.into_iter().chain([(len, len)]) {
        if start > at {
            platform::read_exact_at(file, &mut image[at as usize..start as usize], at)?;
        }
        at = at.max(end);
    }
    Ok(image)
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
fn text_symbols<'data>(obj: &object::File<'data>) -> Vec<Symbol<'data>> {
    let mut out: Vec<Symbol<'data>> = obj
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() != 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    out.dedup_by_key(|s| s.0);
    out
}

/// A symbol's name demangled, without its hash (as the standard library's backtraces print it).
pub fn demangled(mangled: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(mangled))
}

/// The binary's DWARF sections: inflated when compressed (the image holds those), else read
/// through `source` (a sparse image leaves them out).
fn dwarf_sections<'data>(
    obj: &object::File<'data>,
    source: Source<'data>,
) -> std::io::Result<gimli::DwarfSections<Cow<'data, [u8]>>> {
    gimli::DwarfSections::load(|id: gimli::SectionId| -> std::io::Result<Cow<'data, [u8]>> {
        let Some(section) = obj.section_by_name(id.name()) else {
            return Ok(Cow::Borrowed(&[]));
        };
        match (section.compressed_file_range(), section.file_range()) {
            (Ok(r), Some((offset, size))) if r.format == object::CompressionFormat::None => source.read(offset, size),
            _ => Ok(section.uncompressed_data().unwrap_or(Cow::Borrowed(&[]))),
        }
    })
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

/// How [`EdgeMap::open_reading`] reads line tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineReader {
    /// Only the compilation units that hold the functions read (found through
    /// `.debug_aranges`); the whole DWARF when the binary has no such index.
    Units,
    /// Every unit, through addr2line.
    Addr2line,
}
