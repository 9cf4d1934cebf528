//! Source lines of chosen address ranges, read from only the compilation units that hold them.
//!
//! A doctest executable links its whole library, std and the dependencies: 10 MB, most of it
//! debug information. Its one test runs a few functions, so [`super::map::EdgeMap::parse_for`]
//! needs the line rows of a few address ranges. `addr2line` opens every compilation unit up
//! front and needs the whole of `.debug_info` and `.debug_str` in memory; here
//! `.debug_aranges` says which units hold the ranges, and only those units' headers, root
//! entries and line programs are read from the file, with the strings they name. The rows
//! are the ones `addr2line::Context::find_location_range` yields (same sequences, same
//! handling of rows at one address, same file paths), so either reader gives the same map;
//! `tests/e2e/edges.rs` checks that on real binaries.

use std::borrow::Cow;

use rustc_hash::FxHashMap as HashMap;

use gimli::{AttributeValue, DebugInfoOffset, DebugLineOffset, RunTimeEndian};
use object::{Object, ObjectSection};

type Slice<'a> = gimli::EndianSlice<'a, RunTimeEndian>;

/// Where a binary's bytes are read from: all of them in memory, or its file (read in part).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Bytes(&'a [u8]),
    File(&'a std::fs::File),
}

impl<'a> Source<'a> {
    /// `size` bytes at `offset` of the binary.
    pub fn read(self, offset: u64, size: u64) -> std::io::Result<Cow<'a, [u8]>> {
        let short = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        match self {
            Source::Bytes(data) => {
                let start = usize::try_from(offset).map_err(|_| short())?;
                let end = start
                    .checked_add(usize::try_from(size).map_err(|_| short())?)
                    .ok_or_else(short)?;
                data.get(start..end).map(Cow::Borrowed).ok_or_else(short)
            }
            Source::File(file) => {
                let mut buf = vec![0u8; usize::try_from(size).map_err(|_| short())?];
                crate::platform::read_exact_at(file, &mut buf, offset)?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    /// The NUL-terminated string at `offset`, no further than `end`.
    fn string(self, offset: u64, end: u64) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut at = offset;
        while at < end {
            let chunk = self.read(at, (end - at).min(256))?;
            if let Some(nul) = chunk.iter().position(|&b| b == 0) {
                out.extend_from_slice(&chunk[..nul]);
                return Ok(out);
            }
            out.extend_from_slice(&chunk);
            at += chunk.len() as u64;
        }
        Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof))
    }
}

/// A line-table row in address order: `(address, file index, line)` (line 0: none).
type LineRow = (u64, u64, u32);

/// One sequence of a unit's line program: rows over `[start, end)`.
struct Sequence {
    start: u64,
    end: u64,
    rows: Vec<LineRow>,
}

/// One unit's line table, as `addr2line` builds it.
pub struct UnitLines {
    files: Vec<String>,
    sequences: Vec<Sequence>,
}

impl UnitLines {
    /// The rows from the one that covers `lo` (or the first after it) while they start before
    /// `hi`, as `(address, length, file, line)`.
    pub fn rows(&self, lo: u64, hi: u64, mut each: impl FnMut(u64, u64, Option<&str>, u32)) {
        let mut seq = self.sequences.partition_point(|s| s.end <= lo);
        let mut row = self.sequences.get(seq).map_or(0, |s| {
            if lo < s.start {
                0
            } else {
                s.rows.partition_point(|r| r.0 <= lo).saturating_sub(1)
            }
        });
        while let Some(s) = self.sequences.get(seq) {
            if s.start >= hi {
                break;
            }
            let Some(&(address, file, line)) = s.rows.get(row) else {
                seq += 1;
                row = 0;
                continue;
            };
            if address >= hi {
                break;
            }
            let next = s.rows.get(row + 1).map_or(s.end, |r| r.0);
            each(address, next - address, self.file(file), line);
            row += 1;
        }
    }

    /// The file and line (0: none) of the row that covers `probe`, as addr2line's
    /// `find_location` finds it.
    pub fn location(&self, probe: u64) -> Option<(Option<&str>, u32)> {
        let s = &self.sequences[self.sequences.partition_point(|s| s.end <= probe)..];
        let s = s.first().filter(|s| s.start <= probe)?;
        let row = s.rows.partition_point(|r| r.0 <= probe).checked_sub(1)?;
        let (_, file, line) = s.rows[row];
        Some((self.file(file), line))
    }

    /// File `index` of the unit's line program.
    pub fn file(&self, index: u64) -> Option<&str> {
        self.files.get(index as usize).map(String::as_str)
    }
}

/// A unit's functions and the code inlined into them, for the call sites of an address.
pub struct UnitInlines {
    /// Address ranges of the unit's functions.
    functions: Vec<(u64, u64)>,
    inlined: Vec<Inlined>,
}

/// Code inlined into a function: where, from which call site, how deep in other inlined code.
struct Inlined {
    depth: u32,
    ranges: Vec<(u64, u64)>,
    call_file: Option<u64>,
    call_line: u32,
}

impl UnitInlines {
    /// The call sites `probe` was inlined through, innermost first, as `(file index, line)`
    /// (line 0: none); none when no function of the unit holds `probe` (addr2line's frames).
    pub fn call_sites(&self, probe: u64) -> Vec<(Option<u64>, u32)> {
        let holds = |ranges: &[(u64, u64)]| ranges.iter().any(|&(b, e)| b <= probe && probe < e);
        if !holds(&self.functions) {
            return Vec::new();
        }
        // The inlined code that holds `probe`, outermost first, while each depth has one (the
        // first in the unit's order, as addr2line's search finds it).
        let mut holding: Vec<&Inlined> = self.inlined.iter().filter(|i| holds(&i.ranges)).collect();
        holding.sort_by_key(|i| i.depth);
        holding.dedup_by_key(|i| i.depth);
        let chain = holding.iter().enumerate().take_while(|&(d, i)| i.depth as usize == d);
        let mut sites: Vec<(Option<u64>, u32)> = chain.map(|(_, i)| (i.call_file, i.call_line)).collect();
        sites.reverse();
        sites
    }
}

/// Where a section's bytes are in the file.
#[derive(Clone, Copy, Default)]
struct Place {
    offset: u64,
    size: u64,
}

/// The units of a binary by address (from `.debug_aranges`), and what is needed to read one.
pub struct Units<'a> {
    source: Source<'a>,
    endian: RunTimeEndian,
    /// `(begin, end, unit offset in .debug_info)`, sorted by begin.
    ranges: Vec<(u64, u64, usize)>,
    abbrev: Cow<'a, [u8]>,
    info: Place,
    line: Place,
    str: Place,
    line_str: Place,
    ranges_v4: Place,
}

impl<'a> Units<'a> {
    /// `None` when the binary has no `.debug_aranges` (or its debug sections are compressed):
    /// the caller then reads the whole DWARF.
    pub fn new(obj: &object::File, source: Source<'a>) -> Option<Self> {
        let endian = if obj.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let place = |name: &str| -> Option<Place> {
            let section = obj.section_by_name(name)?;
            if section.compressed_file_range().ok()?.format != object::CompressionFormat::None {
                return None;
            }
            let (offset, size) = section.file_range()?;
            Some(Place { offset, size })
        };
        let aranges = place(".debug_aranges")?;
        let aranges = source.read(aranges.offset, aranges.size).ok()?;
        let aranges = gimli::DebugAranges::new(&aranges, endian);
        let mut ranges = Vec::new();
        let mut headers = aranges.headers();
        while let Ok(Some(header)) = headers.next() {
            let unit = header.debug_info_offset().0;
            let mut entries = header.entries();
            // Errors in one entry (an address that overflows) are skipped, as addr2line does.
            while let Some(entry) = entries.next().transpose() {
                // Code the linker dropped keeps its entries, at address 0 (a tombstone).
                if let Ok(entry) = entry
                    && entry.length() != 0
                    && entry.address() != 0
                {
                    let r = entry.range();
                    ranges.push((r.begin, r.end, unit));
                }
            }
        }
        ranges.sort_unstable();
        if ranges.windows(2).any(|w| w[1].0 < w[0].1) {
            // Overlapping ranges: not a table to look addresses up in.
            return None;
        }
        let abbrev = match place(".debug_abbrev") {
            Some(p) => source.read(p.offset, p.size).ok()?,
            None => Cow::Borrowed(&[][..]),
        };
        Some(Units {
            source,
            endian,
            ranges,
            abbrev,
            info: place(".debug_info")?,
            line: place(".debug_line")?,
            str: place(".debug_str").unwrap_or_default(),
            line_str: place(".debug_line_str").unwrap_or_default(),
            ranges_v4: place(".debug_ranges").unwrap_or_default(),
        })
    }

    /// The units (offsets into `.debug_info`) with code in `[lo, hi)`, each once.
    pub fn covering(&self, lo: u64, hi: u64, out: &mut Vec<usize>) {
        // The ranges do not overlap (checked in `new`), so their ends are sorted too.
        let first = self.ranges.partition_point(|r| r.1 <= lo);
        for &(_, _, unit) in self.ranges[first..].iter().take_while(|r| r.0 < hi) {
            if !out.contains(&unit) {
                out.push(unit);
            }
        }
    }

    /// The bytes of the unit at `offset` in `.debug_info`.
    pub fn unit(&self, offset: usize) -> Result<Cow<'a, [u8]>, gimli::Error> {
        self.unit_bytes(self.info, offset as u64)
    }

    /// The line table of the unit whose bytes ([`Units::unit`]) are `unit_bytes`.
    pub fn lines(&self, unit_bytes: &[u8]) -> Result<UnitLines, gimli::Error> {
        let info = gimli::DebugInfo::from(Slice::new(unit_bytes, self.endian));
        let header = info.header_from_offset(DebugInfoOffset(0))?;
        let abbrevs = header.abbreviations(&gimli::DebugAbbrev::new(&self.abbrev, self.endian))?;
        let mut entries = header.entries_raw(&abbrevs, None)?;
        let Some(abbrev) = entries.read_abbreviation()? else {
            return Ok(UnitLines {
                files: Vec::new(),
                sequences: Vec::new(),
            });
        };
        let (mut comp_dir, mut name, mut stmt_list) = (None, None, None);
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            match attr.name() {
                gimli::DW_AT_comp_dir => comp_dir = Some(self.string(attr.value())?),
                gimli::DW_AT_name => name = Some(self.string(attr.value())?),
                gimli::DW_AT_stmt_list => match attr.value() {
                    AttributeValue::DebugLineRef(DebugLineOffset(o)) | AttributeValue::SecOffset(o) => {
                        stmt_list = Some(o)
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        let Some(stmt_list) = stmt_list else {
            return Ok(UnitLines {
                files: Vec::new(),
                sequences: Vec::new(),
            });
        };
        let program_bytes = self.unit_bytes(self.line, stmt_list as u64)?;
        let program = gimli::DebugLine::from(Slice::new(&program_bytes, self.endian)).program(
            DebugLineOffset(0),
            header.address_size(),
            comp_dir.as_deref().map(|s| Slice::new(s, self.endian)),
            name.as_deref().map(|s| Slice::new(s, self.endian)),
        )?;
        let mut sequences = Vec::new();
        let mut current: Vec<LineRow> = Vec::new();
        let mut rows = program.rows();
        while let Some((_, row)) = rows.next_row()? {
            if row.end_sequence() {
                if let Some(start) = current.first().map(|r| r.0) {
                    let end = row.address();
                    let rows = std::mem::take(&mut current);
                    if start < end {
                        sequences.push(Sequence { start, end, rows });
                    }
                }
                continue;
            }
            let address = row.address();
            let line = row.line().map_or(0, |l| l.get() as u32);
            // A later row at the same address replaces the earlier one.
            if let Some(last) = current.last_mut()
                && last.0 == address
            {
                *last = (address, row.file_index(), line);
                continue;
            }
            current.push((address, row.file_index(), line));
        }
        sequences.sort_unstable_by_key(|s| s.start);
        let header = rows.header();
        let comp_dir = comp_dir.as_deref().map(|d| String::from_utf8_lossy(d).into_owned());
        let mut files = Vec::new();
        let mut index = 0;
        while let Some(file) = header.file(index) {
            files.push(self.file_path(comp_dir.as_deref(), file, header)?);
            index += 1;
        }
        if index == 0 {
            // DWARF 4 and earlier have no file 0: file indices start at 1.
            files.push(String::new());
            index = 1;
            while let Some(file) = header.file(index) {
                files.push(self.file_path(comp_dir.as_deref(), file, header)?);
                index += 1;
            }
        }
        Ok(UnitLines { files, sequences })
    }

    /// The functions of the unit whose bytes are `unit_bytes` and the code inlined into them.
    /// DWARF 5 range lists and address indices are not read here (an error: the caller asks
    /// addr2line).
    pub fn inlines(&self, unit_bytes: &[u8]) -> Result<UnitInlines, gimli::Error> {
        let info = gimli::DebugInfo::from(Slice::new(unit_bytes, self.endian));
        let header = info.header_from_offset(DebugInfoOffset(0))?;
        let unsupported = || gimli::Error::UnsupportedAttributeForm(gimli::constants::DW_FORM_rnglistx);
        if header.version() >= 5 {
            return Err(unsupported());
        }
        let abbrevs = header.abbreviations(&gimli::DebugAbbrev::new(&self.abbrev, self.endian))?;
        let address_size = header.address_size();
        let mut out = UnitInlines {
            functions: Vec::new(),
            inlined: Vec::new(),
        };
        let mut base = 0u64;
        // (DIE depth, is inlined code) of the entries above the current one.
        let mut stack: Vec<(isize, bool)> = Vec::new();
        let mut entries = header.entries(&abbrevs);
        while let Some(entry) = entries.next_dfs()? {
            let depth = entry.depth();
            while stack.last().is_some_and(|&(d, _)| d >= depth) {
                stack.pop();
            }
            let tag = entry.tag();
            let (inlined, function) = (tag == gimli::DW_TAG_inlined_subroutine, tag == gimli::DW_TAG_subprogram);
            if depth == 0 {
                if let Some(AttributeValue::Addr(low)) = entry.attr_value(gimli::DW_AT_low_pc) {
                    base = low;
                }
            } else if inlined || function {
                let mut ranges = Vec::new();
                let (mut low, mut high, mut size, mut call_file, mut call_line) = (None, None, None, None, 0);
                for attr in entry.attrs() {
                    match (attr.name(), attr.value()) {
                        (gimli::DW_AT_low_pc, AttributeValue::Addr(v)) => low = Some(v),
                        (gimli::DW_AT_high_pc, AttributeValue::Addr(v)) => high = Some(v),
                        (gimli::DW_AT_high_pc, AttributeValue::Udata(v)) => size = Some(v),
                        (gimli::DW_AT_low_pc | gimli::DW_AT_high_pc, AttributeValue::DebugAddrIndex(_)) => {
                            return Err(unsupported());
                        }
                        (gimli::DW_AT_ranges, AttributeValue::RangeListsRef(o)) => {
                            self.ranges_v4(o.0 as u64, address_size, base, &mut ranges)?;
                        }
                        (gimli::DW_AT_ranges, _) => return Err(unsupported()),
                        (gimli::DW_AT_call_file, AttributeValue::FileIndex(f)) if f > 0 => call_file = Some(f),
                        (gimli::DW_AT_call_line, v) => call_line = v.udata_value().unwrap_or(0) as u32,
                        _ => {}
                    }
                }
                if ranges.is_empty()
                    && let Some(low) = low
                    && let Some(end) = high.or(size.map(|s| low.wrapping_add(s)))
                    && low < end
                {
                    ranges.push((low, end));
                }
                if function {
                    out.functions.extend(ranges);
                } else {
                    let depth = stack.iter().filter(|&&(_, inl)| inl).count() as u32;
                    out.inlined.push(Inlined {
                        depth,
                        ranges,
                        call_file,
                        call_line,
                    });
                }
            }
            stack.push((depth, inlined));
        }
        Ok(out)
    }

    /// The ranges of a DWARF 4 range list at `offset` in `.debug_ranges`, read a chunk of
    /// entries at a time.
    fn ranges_v4(
        &self,
        offset: u64,
        address_size: u8,
        mut base: u64,
        out: &mut Vec<(u64, u64)>,
    ) -> Result<(), gimli::Error> {
        let eof = || gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(offset));
        let width = usize::from(address_size);
        if width == 0 || width > 8 {
            return Err(gimli::Error::UnsupportedAddressSize(address_size));
        }
        let max = if width == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * width)) - 1
        };
        let mut at = offset;
        loop {
            let left = self.ranges_v4.size.checked_sub(at).ok_or_else(eof)?;
            let len = left.min(64 * 2 * width as u64) / (2 * width as u64) * (2 * width as u64);
            if len == 0 {
                return Err(eof());
            }
            let chunk = self.source.read(self.ranges_v4.offset + at, len).map_err(|_| eof())?;
            at += len;
            for pair in chunk.chunks_exact(2 * width) {
                match (self.uint(&pair[..width]), self.uint(&pair[width..])) {
                    (0, 0) => return Ok(()),
                    (b, e) if b == max => base = e,
                    (b, e) => {
                        let (b, e) = (base.wrapping_add(b), base.wrapping_add(e));
                        if b < e {
                            out.push((b, e));
                        }
                    }
                }
            }
        }
    }

    /// An unsigned integer of up to 8 bytes in the binary's byte order.
    fn uint(&self, b: &[u8]) -> u64 {
        let mut v = [0u8; 8];
        match self.endian {
            RunTimeEndian::Little => {
                v[..b.len()].copy_from_slice(b);
                u64::from_le_bytes(v)
            }
            RunTimeEndian::Big => {
                v[8 - b.len()..].copy_from_slice(b);
                u64::from_be_bytes(v)
            }
        }
    }

    /// A file's path as addr2line renders it: the unit's directory, the file's directory (not
    /// for directory 0, the unit's own) and its name, an absolute part replacing what is before.
    fn file_path(
        &self,
        comp_dir: Option<&str>,
        file: &gimli::FileEntry<Slice<'_>>,
        header: &gimli::LineProgramHeader<Slice<'_>>,
    ) -> Result<String, gimli::Error> {
        let mut path = comp_dir.unwrap_or_default().to_string();
        if file.directory_index() != 0
            && let Some(dir) = file.directory(header)
        {
            push(&mut path, &String::from_utf8_lossy(&self.string(dir)?));
        }
        push(&mut path, &String::from_utf8_lossy(&self.string(file.path_name())?));
        Ok(path)
    }

    /// The bytes of the unit (of `.debug_info` or `.debug_line`) at `offset` in `place`,
    /// from its length field to its end.
    fn unit_bytes(&self, place: Place, offset: u64) -> Result<Cow<'a, [u8]>, gimli::Error> {
        let eof = || gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(offset));
        let read = |at: u64, len: u64| -> Result<Cow<'a, [u8]>, gimli::Error> {
            if at.checked_add(len).is_none_or(|end| end > place.size) {
                return Err(eof());
            }
            self.source.read(place.offset + at, len).map_err(|_| eof())
        };
        let length = self.uint(&read(offset, 4)?);
        let total = if length == 0xffff_ffff {
            self.uint(&read(offset + 4, 8)?).checked_add(12).ok_or_else(eof)?
        } else {
            length + 4
        };
        read(offset, total)
    }

    /// A string attribute's bytes: inline, or read from `.debug_str` / `.debug_line_str`.
    fn string(&self, value: AttributeValue<Slice<'_>>) -> Result<Vec<u8>, gimli::Error> {
        let at = |place: Place, offset: usize| -> Result<Vec<u8>, gimli::Error> {
            let eof = gimli::Error::UnexpectedEof(gimli::ReaderOffsetId(offset as u64));
            if offset as u64 >= place.size {
                return Err(eof);
            }
            self.source
                .string(place.offset + offset as u64, place.offset + place.size)
                .map_err(|_| eof)
        };
        match value {
            AttributeValue::String(s) => Ok(s.slice().to_vec()),
            AttributeValue::DebugStrRef(o) => at(self.str, o.0),
            AttributeValue::DebugLineStrRef(o) => at(self.line_str, o.0),
            _ => Err(gimli::Error::UnsupportedAttributeForm(gimli::constants::DW_FORM_strx)),
        }
    }
}

/// The units read so far of one binary: line tables, and inlined code when asked for.
pub struct UnitTables<'u, 'a> {
    units: &'u Units<'a>,
    /// Each unit's bytes, read once for its line table and its inlined code.
    bytes: HashMap<usize, Cow<'a, [u8]>>,
    lines: HashMap<usize, UnitLines>,
    inlines: HashMap<usize, Option<UnitInlines>>,
}

impl<'u, 'a> UnitTables<'u, 'a> {
    pub fn new(units: &'u Units<'a>) -> Self {
        UnitTables {
            units,
            bytes: HashMap::default(),
            lines: HashMap::default(),
            inlines: HashMap::default(),
        }
    }

    /// The line table of unit `unit`, read on first use.
    pub fn lines(&mut self, unit: usize) -> Result<&UnitLines, gimli::Error> {
        if !self.lines.contains_key(&unit) {
            let units = self.units;
            let table = units.lines(self.unit(unit)?)?;
            self.lines.insert(unit, table);
        }
        Ok(&self.lines[&unit])
    }

    /// Unit `unit`'s bytes, read on first use.
    fn unit(&mut self, unit: usize) -> Result<&[u8], gimli::Error> {
        if !self.bytes.contains_key(&unit) {
            let bytes = self.units.unit(unit)?;
            self.bytes.insert(unit, bytes);
        }
        Ok(&self.bytes[&unit])
    }

    /// The rows of `[lo, hi)` from every unit with code there (see [`UnitLines::rows`]).
    pub fn rows(
        &mut self,
        lo: u64,
        hi: u64,
        mut each: impl FnMut(u64, u64, Option<&str>, u32),
    ) -> Result<(), gimli::Error> {
        let mut covering = Vec::new();
        self.units.covering(lo, hi, &mut covering);
        for unit in covering {
            self.lines(unit)?.rows(lo, hi, &mut each);
        }
        Ok(())
    }

    /// The source locations of `probe`, innermost first, as addr2line's frames give them:
    /// its line-table row, then each call site it was inlined through, as `(file, line)`
    /// (line 0: none). `None` when this reader cannot tell (DWARF 5 forms): ask addr2line.
    pub fn locations(&mut self, probe: u64) -> Option<Vec<(Option<String>, u32)>> {
        let mut covering = Vec::new();
        self.units.covering(probe, probe + 1, &mut covering);
        let Some(&unit) = covering.first() else {
            return Some(Vec::new());
        };
        if !self.inlines.contains_key(&unit) {
            let units = self.units;
            let inlines = self.unit(unit).and_then(|bytes| units.inlines(bytes)).ok();
            self.inlines.insert(unit, inlines);
        }
        let sites = self.inlines[&unit].as_ref()?.call_sites(probe);
        let lines = self.lines(unit).ok()?;
        let own = lines.location(probe);
        let mut out = Vec::with_capacity(sites.len() + 1);
        out.push(own.map_or((None, 0), |(file, line)| (file.map(str::to_string), line)));
        out.extend(
            sites
                .into_iter()
                .map(|(file, line)| (file.and_then(|f| lines.file(f)).map(str::to_string), line)),
        );
        Some(out)
    }
}

/// addr2line's `path_push`.
fn push(path: &mut String, p: &str) {
    let rooted = |s: &str| s.starts_with('/') || s.starts_with('\\') || matches!(s.get(1..3), Some(":/" | ":\\"));
    if rooted(p) {
        *path = p.to_string();
    } else {
        let separator = if path.starts_with('\\') || path.get(1..3) == Some(":\\") {
            '\\'
        } else {
            '/'
        };
        if !path.is_empty() && !path.ends_with(separator) {
            path.push(separator);
        }
        path.push_str(p);
    }
}
