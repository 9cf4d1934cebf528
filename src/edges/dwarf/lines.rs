//! One unit's line table, read from its line program as `addr2line` builds it.

use gimli::{AttributeValue, DebugInfoOffset, DebugLineOffset};

use super::units::{Slice, Units};

/// A line-table row in address order: `(address, file index, line)` (line 0: none).
type LineRow = (u64, u64, u32);

/// One sequence of a unit's line program: rows over `[start, end)`.
struct Sequence {
    start: u64,
    end: u64,
    rows: Vec<LineRow>,
}

/// One unit's line table, as `addr2line` builds it.
#[derive(Default)]
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

impl Units<'_> {
    /// The line table of the unit whose bytes ([`Units::unit`]) are `unit_bytes`.
    pub fn lines(&self, unit_bytes: &[u8]) -> Result<UnitLines, gimli::Error> {
        let info = gimli::DebugInfo::from(Slice::new(unit_bytes, self.endian));
        let header = info.header_from_offset(DebugInfoOffset(0))?;
        let Some(root) = self.root(&header)? else {
            return Ok(UnitLines::default());
        };
        let Some(stmt_list) = root.stmt_list else {
            return Ok(UnitLines::default());
        };
        let program_bytes = self.unit_bytes(self.line, stmt_list as u64)?;
        let program = gimli::DebugLine::from(Slice::new(&program_bytes, self.endian)).program(
            DebugLineOffset(0),
            header.address_size(),
            root.comp_dir.as_deref().map(|s| Slice::new(s, self.endian)),
            root.name.as_deref().map(|s| Slice::new(s, self.endian)),
        )?;
        let mut rows = program.rows();
        let sequences = sequences(&mut rows)?;
        let comp_dir = root
            .comp_dir
            .as_deref()
            .map(|d| String::from_utf8_lossy(d).into_owned());
        let files = self.files(rows.header(), comp_dir.as_deref())?;
        Ok(UnitLines { files, sequences })
    }

    /// What the unit's root entry says of its line program; `None` for a unit without one.
    fn root(&self, header: &gimli::UnitHeader<Slice<'_>>) -> Result<Option<Root>, gimli::Error> {
        let abbrevs = header.abbreviations(&gimli::DebugAbbrev::new(&self.abbrev, self.endian))?;
        let mut entries = header.entries_raw(&abbrevs, None)?;
        let Some(abbrev) = entries.read_abbreviation()? else {
            return Ok(None);
        };
        let mut root = Root::default();
        for spec in abbrev.attributes() {
            let attr = entries.read_attribute(*spec)?;
            match attr.name() {
                gimli::DW_AT_comp_dir => root.comp_dir = Some(self.string(attr.value())?),
                gimli::DW_AT_name => root.name = Some(self.string(attr.value())?),
                gimli::DW_AT_stmt_list => match attr.value() {
                    AttributeValue::DebugLineRef(DebugLineOffset(o)) | AttributeValue::SecOffset(o) => {
                        root.stmt_list = Some(o)
                    }
                    _ => {}
                },
                _ => {}
            }
        }
        Ok(Some(root))
    }

    /// The paths of the line program's files, by index.
    fn files(
        &self,
        header: &gimli::LineProgramHeader<Slice<'_>>,
        comp_dir: Option<&str>,
    ) -> Result<Vec<String>, gimli::Error> {
        let mut files = Vec::new();
        let mut index = 0;
        while let Some(file) = header.file(index) {
            files.push(self.file_path(comp_dir, file, header)?);
            index += 1;
        }
        if index == 0 {
            // DWARF 4 and earlier have no file 0: file indices start at 1.
            files.push(String::new());
            index = 1;
            while let Some(file) = header.file(index) {
                files.push(self.file_path(comp_dir, file, header)?);
                index += 1;
            }
        }
        Ok(files)
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
}

/// What a unit's root entry says of its line program: the unit's directory and name, and where
/// the program is in `.debug_line`.
#[derive(Default)]
struct Root {
    comp_dir: Option<Vec<u8>>,
    name: Option<Vec<u8>>,
    stmt_list: Option<usize>,
}

/// The line program's sequences, sorted by start, each row at an address the last one given.
fn sequences<'s>(
    rows: &mut gimli::LineRows<Slice<'s>, gimli::IncompleteLineProgram<Slice<'s>>>,
) -> Result<Vec<Sequence>, gimli::Error> {
    let mut sequences = Vec::new();
    let mut current: Vec<LineRow> = Vec::new();
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
    Ok(sequences)
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
