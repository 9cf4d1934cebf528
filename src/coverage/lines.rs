//! Turns counted regions of one source file into per-line execution counts, exactly as
//! `llvm-cov` does (its `SegmentBuilder`, then `LineCoverageIterator`/`LineCoverageStats`).
//!
//! Refs: llvm/lib/ProfileData/Coverage/CoverageMapping.cpp @ llvmorg-22. The structure of a
//! file (sorted, combined regions) is fixed per binary; only the counts change per test, so
//! [`FileLayout`] is built once and [`FileLayout::line_counts`] runs per test.

use super::covmap::RegionKind;

/// A (line, column) source position; ordering is lexicographic like LLVM's `LineColPair`.
pub type Loc = (u32, u32);

/// Regions of one file that share a start and end location; their counts add up
/// (identical regions from several monomorphisations of one function).
#[derive(Clone, Debug)]
pub struct Group {
    pub start: Loc,
    pub end: Loc,
    pub kind: RegionKind,
    /// Indices into the per-binary flat region-count vector.
    pub members: Vec<u32>,
}

/// One input region before grouping.
#[derive(Clone, Copy, Debug)]
pub struct RegionRef {
    pub start: Loc,
    pub end: Loc,
    pub kind: RegionKind,
    /// Index into the flat region-count vector.
    pub index: u32,
}

/// The fixed structure of one file: its regions sorted and combined, and for each group the
/// lines whose count it takes part in.
#[derive(Clone, Debug, Default)]
pub struct FileLayout {
    pub groups: Vec<Group>,
    /// `group_lines[g]`: the mapped lines that count as run whenever group `g` ran.
    ///
    /// A line's count is the max of the counts of the regions starting on it and of the region
    /// wrapped into it; which regions those are does not depend on the counts. So a line ran
    /// exactly when one of its contributing groups ran, and a test's covered lines are the
    /// union of `group_lines` over the groups it ran: no segment building per test.
    pub group_lines: Vec<Vec<u32>>,
}

#[derive(Clone, Copy, Debug)]
struct Segment {
    line: u32,
    count: u64,
    has_count: bool,
    is_entry: bool,
    is_gap: bool,
}

impl FileLayout {
    /// Sorts regions (start ascending, enclosing first, then kind) and combines identical ones.
    pub fn new(mut regions: Vec<RegionRef>) -> Self {
        regions.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)).then(a.kind.cmp(&b.kind)));
        let mut groups: Vec<Group> = Vec::with_capacity(regions.len());
        for r in regions {
            if let Some(g) = groups.last_mut().filter(|g| g.start == r.start && g.end == r.end) {
                // Only regions of the first region's kind add their counts (LLVM `combineRegions`).
                if g.kind == r.kind {
                    g.members.push(r.index);
                }
                continue;
            }
            groups.push(Group {
                start: r.start,
                end: r.end,
                kind: r.kind,
                members: vec![r.index],
            });
        }
        // Build the segments once with each group's own index as its "count": segments are
        // then merged only where two come from the same group, which holds for any counts.
        let ids: Vec<u64> = (0..groups.len() as u64).collect();
        let segments = SegmentBuilder::build(&groups, &ids);
        let mut group_lines = vec![Vec::new(); groups.len()];
        walk_lines(&segments, |line, wrapped, starts| {
            for g in wrapped.into_iter().chain(starts.iter().copied()) {
                let lines: &mut Vec<u32> = &mut group_lines[g as usize];
                if lines.last() != Some(&line) {
                    lines.push(line);
                }
            }
        });
        FileLayout { groups, group_lines }
    }

    /// Per-line counts for mapped lines, given the flat region counts of this test.
    /// With `covered_only`, only lines with a non-zero count are returned, and a file none of
    /// whose regions ran is skipped without building segments.
    pub fn line_counts(&self, region_counts: &[u64], covered_only: bool, out: &mut Vec<(u32, u64)>) {
        let counts: Vec<u64> = self
            .groups
            .iter()
            .map(|g| {
                g.members
                    .iter()
                    .fold(0u64, |acc, &m| acc.wrapping_add(region_counts[m as usize]))
            })
            .collect();
        if covered_only && counts.iter().all(|&c| c == 0) {
            return;
        }
        let segments = SegmentBuilder::build(&self.groups, &counts);
        line_stats(&segments, covered_only, out);
    }
}

struct SegmentBuilder<'a> {
    groups: &'a [Group],
    counts: &'a [u64],
    segments: Vec<Segment>,
    active: Vec<usize>,
}

impl<'a> SegmentBuilder<'a> {
    fn build(groups: &'a [Group], counts: &'a [u64]) -> Vec<Segment> {
        let mut b = SegmentBuilder {
            groups,
            counts,
            segments: Vec::new(),
            active: Vec::new(),
        };
        b.run();
        b.segments
    }

    fn start_segment(&mut self, region: usize, loc: Loc, is_entry: bool, emit_skipped: bool) {
        let g = &self.groups[region];
        let count = self.counts[region];
        let has_count = !emit_skipped && g.kind != RegionKind::Skipped;
        // A segment that would not change what is rendered is not emitted.
        if !is_entry
            && !emit_skipped
            && let Some(last) = self.segments.last()
            && last.has_count == has_count
            && last.count == count
            && !last.is_entry
        {
            return;
        }
        self.segments.push(Segment {
            line: loc.0,

            count: if has_count { count } else { 0 },
            has_count,
            is_entry,
            is_gap: has_count && g.kind == RegionKind::Gap,
        });
    }

    /// Emits the segments for active regions that end before `loc` (all of them for `None`);
    /// `first_completed` indexes the first completed region in `self.active`.
    fn complete_until(&mut self, loc: Option<Loc>, first_completed: usize) {
        let groups = self.groups;
        self.active[first_completed..].sort_by_key(|&r| groups[r].end);
        let n = self.active.len();
        for i in first_completed + 1..n {
            let mut completed = self.active[i];
            let seg_loc = groups[self.active[i - 1]].end;
            if loc == Some(seg_loc) {
                break;
            }
            if seg_loc == groups[completed].end {
                continue;
            }
            for j in i + 1..n {
                if groups[completed].end == groups[self.active[j]].end {
                    completed = self.active[j];
                }
            }
            self.start_segment(completed, seg_loc, false, false);
        }
        let last = self.active[n - 1];
        let last_end = groups[last].end;
        if first_completed > 0 && Some(last_end) != loc {
            // Fill the gap after the last completed region with the enclosing active region.
            self.start_segment(self.active[first_completed - 1], last_end, false, false);
        } else if first_completed == 0 && loc != Some(last_end) {
            // No region is active any more: mark the rest as skipped (gaps between functions).
            self.start_segment(last, last_end, false, true);
        }
        self.active.truncate(first_completed);
    }

    fn run(&mut self) {
        let groups = self.groups;
        for (i, g) in groups.iter().enumerate() {
            let cur = g.start;
            // Stable partition: still-open regions first, completed ones after.
            if self.active.iter().any(|&r| groups[r].end <= cur) {
                let (open, done): (Vec<usize>, Vec<usize>) = self.active.iter().partition(|&&r| groups[r].end > cur);
                let first_completed = open.len();
                self.active = open;
                self.active.extend(done);
                self.complete_until(Some(cur), first_completed);
            }
            let is_gap = g.kind == RegionKind::Gap;
            if cur == g.end {
                // Zero-length regions never become active.
                let skipped = i + 1 == groups.len() || g.kind == RegionKind::Skipped;
                let source = self.active.last().copied().unwrap_or(i);
                self.start_segment(source, cur, !is_gap, skipped);
                if skipped && let Some(&top) = self.active.last() {
                    self.start_segment(top, cur, false, false);
                }
                continue;
            }
            if i + 1 == groups.len() || cur != groups[i + 1].start {
                self.start_segment(i, cur, !is_gap, false);
            }
            self.active.push(i);
        }
        if !self.active.is_empty() {
            self.complete_until(None, 0);
        }
    }
}

/// LLVM's `LineCoverageIterator` + `LineCoverageStats`: calls `f(line, wrapped, starts)` for
/// every mapped line, with the count of the segment wrapped into the line (if it has one) and
/// the counts of the region-entry segments starting on it. The line's count is
/// `max(wrapped, starts…)` (just `wrapped`, or 0, when nothing starts on it).
fn walk_lines(segments: &[Segment], mut f: impl FnMut(u32, Option<u64>, &[u64])) {
    let mut wrapped: Option<Segment> = None;
    let mut next = 0usize;
    let mut line = segments.first().map_or(1, |s| s.line.max(1));
    let mut starts: Vec<u64> = Vec::new();
    while next < segments.len() {
        let begin = next;
        while next < segments.len() && segments[next].line == line {
            next += 1;
        }
        let on_line = &segments[begin..next];
        starts.clear();
        starts.extend(
            on_line
                .iter()
                .filter(|s| !s.is_gap && s.has_count && s.is_entry)
                .map(|s| s.count),
        );
        let starts_skipped = on_line.first().is_some_and(|s| !s.has_count && s.is_entry);
        let mut mapped = !starts_skipped && (wrapped.is_some_and(|w| w.has_count) || !starts.is_empty());
        mapped |= on_line.iter().any(|s| s.is_entry && s.has_count);
        if mapped {
            f(line, wrapped.filter(|w| w.has_count).map(|w| w.count), &starts);
        }
        if let Some(last) = on_line.last() {
            wrapped = Some(*last);
        }
        if next < segments.len() && on_line.is_empty() && wrapped.is_none_or(|w| !w.has_count) {
            // Nothing open and nothing on this line: jump to the next segment's line.
            line = segments[next].line;
            continue;
        }
        line += 1;
    }
}

fn line_stats(segments: &[Segment], covered_only: bool, out: &mut Vec<(u32, u64)>) {
    walk_lines(segments, |line, wrapped, starts| {
        // llvm-cov uses the wrapped segment's count even when it has none (then 0).
        let count = starts.iter().copied().fold(wrapped.unwrap_or(0), u64::max);
        if !covered_only || count > 0 {
            out.push((line, count));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(index: u32, start: Loc, end: Loc) -> RegionRef {
        RegionRef {
            start,
            end,
            kind: RegionKind::Code,
            index,
        }
    }

    fn lines(regions: Vec<RegionRef>, counts: &[u64]) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        FileLayout::new(regions).line_counts(counts, false, &mut out);
        out
    }

    #[test]
    fn a_line_takes_the_max_of_regions_starting_on_it() {
        // fn body lines 1..=5, an inner block on line 3 that ran twice.
        let got = lines(vec![region(0, (1, 1), (5, 2)), region(1, (3, 9), (3, 20))], &[1, 2]);
        assert_eq!(got, vec![(1, 1), (2, 1), (3, 2), (4, 1), (5, 1)]);
    }

    #[test]
    fn a_line_inside_an_inner_region_takes_the_wrapped_count() {
        // Outer 1..=6 ran once; inner block 2:10 .. 4:6 never ran.
        let got = lines(vec![region(0, (1, 1), (6, 2)), region(1, (2, 10), (4, 6))], &[1, 0]);
        // Line 2: max(outer wrapped 1, inner start 0) = 1; lines 3-4 wrap the inner region.
        assert_eq!(got, vec![(1, 1), (2, 1), (3, 0), (4, 0), (5, 1), (6, 1)]);
    }

    #[test]
    fn identical_regions_of_several_instantiations_add_up() {
        let got = lines(vec![region(0, (1, 1), (2, 2)), region(1, (1, 1), (2, 2))], &[3, 4]);
        assert_eq!(got, vec![(1, 7), (2, 7)]);
    }

    #[test]
    fn lines_between_functions_are_not_mapped() {
        let got = lines(vec![region(0, (1, 1), (2, 2)), region(1, (5, 1), (6, 2))], &[1, 0]);
        assert_eq!(got, vec![(1, 1), (2, 1), (5, 0), (6, 0)]);
    }

    /// The per-test fast path (union of `group_lines` of the groups that ran) must give exactly
    /// the lines the full segment algorithm counts as run, for any regions and counts.
    #[test]
    fn group_lines_agree_with_the_segment_algorithm_on_random_regions() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..3000 {
            let n = 1 + rnd(8) as u32;
            let mut regions = Vec::new();
            for i in 0..n {
                let (l1, c1) = (1 + rnd(10) as u32, 1 + rnd(6) as u32);
                let (l2, c2) = (l1 + rnd(4) as u32, 1 + rnd(6) as u32);
                let end = if (l2, c2) < (l1, c1) { (l1, c1) } else { (l2, c2) };
                let kind = if rnd(10) == 0 {
                    RegionKind::Gap
                } else {
                    RegionKind::Code
                };
                regions.push(RegionRef {
                    start: (l1, c1),
                    end,
                    kind,
                    index: i,
                });
            }
            let counts: Vec<u64> = (0..n).map(|_| if rnd(2) == 0 { 0 } else { 1 + rnd(3) }).collect();
            let layout = FileLayout::new(regions.clone());
            let mut full = Vec::new();
            layout.line_counts(&counts, true, &mut full);
            let want: Vec<u32> = full.iter().map(|l| l.0).collect();
            let mut got: Vec<u32> = Vec::new();
            for (g, group) in layout.groups.iter().enumerate() {
                if group.members.iter().map(|&m| counts[m as usize]).sum::<u64>() > 0 {
                    got.extend(&layout.group_lines[g]);
                }
            }
            got.sort_unstable();
            got.dedup();
            assert_eq!(got, want, "regions {regions:?} counts {counts:?}");
        }
    }

    #[test]
    fn covered_only_keeps_nonzero_lines_and_skips_unrun_files() {
        let layout = FileLayout::new(vec![region(0, (1, 1), (3, 2)), region(1, (2, 5), (2, 9))]);
        let mut out = Vec::new();
        layout.line_counts(&[0, 0], true, &mut out);
        assert!(out.is_empty());
        layout.line_counts(&[1, 0], true, &mut out);
        assert_eq!(out, vec![(1, 1), (2, 1), (3, 1)]);
    }
}
