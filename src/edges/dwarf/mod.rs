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

mod inlines;
mod lines;
mod units;

pub use inlines::UnitInlines;
pub use lines::UnitLines;
pub use units::{Source, Units};

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
