//! A binary's line-table rows over chosen address ranges, read by compilation unit or through
//! addr2line, each row's file judged the workspace's or not once.

use std::num::NonZeroU32;
use std::path::Path;

use rustc_hash::FxHashMap as HashMap;

use super::dwarf::UnitTables;

pub(super) type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// A line-table row: `(address, length, (file, line))`; `None`: not the workspace's code, or
/// no line (line 0).
type Row = (u64, u64, Option<(u32, NonZeroU32)>);

/// The whole line table, sorted by address, with each row's file already judged ours or not.
pub(super) struct LineRows {
    rows: Vec<Row>,
    /// Interned names of files, so each path is judged once.
    ids: HashMap<String, u32>,
}

impl LineRows {
    /// The rows of the address ranges `ranges`, through addr2line (the whole DWARF).
    pub(super) fn read(
        ctx: &addr2line::Context<Reader<'_>>,
        ranges: &[(u64, u64)],
        relative: &dyn Fn(&Path) -> Option<String>,
        names: &mut Vec<String>,
    ) -> Result<LineRows, gimli::Error> {
        let mut rows = RowJudge::new(relative, names);
        for &(lo, hi) in ranges {
            for (addr, len, loc) in ctx.find_location_range(lo, hi)? {
                rows.push(addr, len, loc.file, loc.line.unwrap_or(0));
            }
        }
        Ok(rows.finish())
    }

    /// [`LineRows::read`] from only the units that hold the ranges.
    pub(super) fn by_unit(
        tables: &mut UnitTables,
        ranges: &[(u64, u64)],
        relative: &dyn Fn(&Path) -> Option<String>,
        names: &mut Vec<String>,
    ) -> Result<LineRows, gimli::Error> {
        let mut rows = RowJudge::new(relative, names);
        for &(lo, hi) in ranges {
            tables.rows(lo, hi, |addr, len, file, line| rows.push(addr, len, file, line))?;
        }
        Ok(rows.finish())
    }

    /// Our lines of the code in `[lo, hi)` in address order (repeats in a row merged): the row
    /// that covers `lo` and every row that starts before `hi`. A row that ends before `lo` (the
    /// end of the function before, when no row covers the start of a function with no line
    /// table of its own, like the `main` rustc generates) covers nothing here.
    pub(super) fn lines(&self, lo: u64, hi: u64) -> Vec<(u32, u32)> {
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

    /// The first of `locations` (an address's, innermost first) that is the workspace's code.
    pub(super) fn first_ours(
        &mut self,
        locations: Vec<(Option<String>, u32)>,
        relative: &dyn Fn(&Path) -> Option<String>,
        names: &mut Vec<String>,
    ) -> Option<(u32, u32)> {
        locations.into_iter().find_map(|(file, line)| {
            let rel = relative(Path::new(file.as_deref()?)).filter(|_| line > 0)?;
            Some((intern(rel, names, &mut self.ids), line))
        })
    }
}

/// The source locations of the frames at `addr`, innermost first, through addr2line.
pub(super) fn frames(ctx: &addr2line::Context<Reader<'_>>, addr: u64) -> Vec<(Option<String>, u32)> {
    let mut out = Vec::new();
    if let Ok(mut frames) = ctx.find_frames(addr).skip_all_loads() {
        while let Ok(Some(frame)) = frames.next() {
            let loc = frame.location.as_ref();
            out.push((
                loc.and_then(|l| l.file).map(str::to_string),
                loc.and_then(|l| l.line).unwrap_or(0),
            ));
        }
    }
    out
}

/// Builds [`LineRows`], judging each file ours or not once.
struct RowJudge<'a> {
    relative: &'a dyn Fn(&Path) -> Option<String>,
    names: &'a mut Vec<String>,
    judged: HashMap<String, Option<u32>>,
    ids: HashMap<String, u32>,
    rows: Vec<Row>,
}

impl<'a> RowJudge<'a> {
    fn new(relative: &'a dyn Fn(&Path) -> Option<String>, names: &'a mut Vec<String>) -> Self {
        RowJudge {
            relative,
            names,
            judged: HashMap::default(),
            ids: HashMap::default(),
            rows: Vec::new(),
        }
    }

    /// A row of `len` bytes at `addr` on `line` (0: none) of `file`.
    fn push(&mut self, addr: u64, len: u64, file: Option<&str>, line: u32) {
        let ours = match (file, NonZeroU32::new(line)) {
            (Some(f), Some(line)) => {
                let file = match self.judged.get(f) {
                    Some(&j) => j,
                    None => {
                        let j = (self.relative)(Path::new(f)).map(|rel| intern(rel, self.names, &mut self.ids));
                        self.judged.insert(f.to_string(), j);
                        j
                    }
                };
                file.map(|file| (file, line))
            }
            _ => None,
        };
        self.rows.push((addr, len, ours));
    }

    fn finish(self) -> LineRows {
        let mut rows = self.rows;
        rows.sort_by_key(|r| r.0);
        // Ranges that touch share a boundary row.
        rows.dedup();
        LineRows { rows, ids: self.ids }
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
