//! A unit's functions and the code inlined into them (DWARF 4 and earlier), for the call sites
//! an address was inlined through.

use gimli::{AttributeValue, DebugInfoOffset};

use super::units::{Slice, Units};

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

impl Units<'_> {
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
}
