//! A binary's compilation units by address, from `.debug_aranges`, and the reading of one
//! unit's bytes and strings from the file.

use std::borrow::Cow;

use gimli::{AttributeValue, RunTimeEndian};
use object::{Object, ObjectSection};

pub(super) type Slice<'a> = gimli::EndianSlice<'a, RunTimeEndian>;

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
    pub(super) fn string(self, offset: u64, end: u64) -> std::io::Result<Vec<u8>> {
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

/// Where a section's bytes are in the file.
#[derive(Clone, Copy, Default)]
pub(super) struct Place {
    pub(super) offset: u64,
    pub(super) size: u64,
}

/// The units of a binary by address (from `.debug_aranges`), and what is needed to read one.
pub struct Units<'a> {
    pub(super) source: Source<'a>,
    pub(super) endian: RunTimeEndian,
    /// `(begin, end, unit offset in .debug_info)`, sorted by begin.
    ranges: Vec<(u64, u64, usize)>,
    pub(super) abbrev: Cow<'a, [u8]>,
    info: Place,
    pub(super) line: Place,
    str: Place,
    line_str: Place,
    pub(super) ranges_v4: Place,
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

    /// An unsigned integer of up to 8 bytes in the binary's byte order.
    pub(super) fn uint(&self, b: &[u8]) -> u64 {
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

    /// The bytes of the unit (of `.debug_info` or `.debug_line`) at `offset` in `place`,
    /// from its length field to its end.
    pub(super) fn unit_bytes(&self, place: Place, offset: u64) -> Result<Cow<'a, [u8]>, gimli::Error> {
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
    pub(super) fn string(&self, value: AttributeValue<Slice<'_>>) -> Result<Vec<u8>, gimli::Error> {
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
