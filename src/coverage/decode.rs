//! Decodes a per-test profile against its binary's coverage map into per-line counts.
//!
//! [`BinaryCoverage`] is built once per test binary (coverage map parsed, regions laid out per
//! file); [`BinaryCoverage::decode`] then runs once per profile, in the worker that ran the test.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::covmap::{self, Counter, CovFunction, CoverageMap};
use super::lines::{FileLayout, RegionRef};
use super::profraw::RawProfile;
use crate::bitset::hex;
use crate::error::DecodeError;

/// Everything needed to decode profiles of one binary.
pub struct BinaryCoverage {
    pub path: PathBuf,
    pub build_id: Option<Vec<u8>>,
    pub map: CoverageMap,
    by_name: HashMap<u64, usize>,
    /// First index of each function's regions in the flat region-count vector.
    region_base: Vec<u32>,
    total_regions: usize,
    /// Every file that has regions: its index in `map.files`, its layout (whose group members
    /// are the file's slots, shared with other binaries with the same regions there) and
    /// each slot's flat region index in this binary.
    layouts: Vec<(u32, Arc<SharedLayout>, Vec<u32>)>,
    /// Flat region index → (index into `layouts`, group), for regions whose counts count.
    region_group: Vec<Option<(u32, u32)>>,
    /// The last profile's records matched to functions ([`RecordMatch`]): every profile of one
    /// binary has the same records, so a test's decoding looks up only the functions it ran.
    matched: std::sync::Mutex<Option<Arc<RecordMatch>>>,
}

/// A profile's data records matched to the map's functions once, keyed by a digest of the
/// records (names, hashes, counter places).
struct RecordMatch {
    digest: u64,
    /// Per record: its function, and whether its hash matches the function's mapping.
    function: Vec<Option<(usize, bool)>>,
}

/// Per-line counts of one profile: `(file index into map.files, [(line, count)])`.
pub type FileLines = Vec<(u32, Vec<(u32, u64)>)>;

impl BinaryCoverage {
    /// Reads and prepares a binary's coverage map. Only the headers and the sections read are
    /// read from the file: a test executable is mostly code and debug information, which the
    /// coverage map never needs (8 MB for 100 KB of map in a doctest executable).
    pub fn open(path: &Path) -> Result<Self, DecodeError> {
        BinaryCoverage::open_sharing(path, &Layouts::default())
    }

    /// [`BinaryCoverage::open`], taking the layouts of files whose regions another binary
    /// already laid out from `shared` (and adding its own).
    pub fn open_sharing(path: &Path, shared: &Layouts) -> Result<Self, DecodeError> {
        let file = std::fs::File::open(path).map_err(|source| DecodeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let info = covmap::read_binary(&object::ReadCache::new(file))?;
        Ok(Self::from_map_sharing(
            path.to_path_buf(),
            info.build_id,
            info.map,
            shared,
        ))
    }

    pub fn from_map(path: PathBuf, build_id: Option<Vec<u8>>, map: CoverageMap) -> Self {
        BinaryCoverage::from_map_sharing(path, build_id, map, &Layouts::default())
    }

    fn from_map_sharing(path: PathBuf, build_id: Option<Vec<u8>>, map: CoverageMap, shared: &Layouts) -> Self {
        let by_name = map.functions.iter().enumerate().map(|(i, f)| (f.name_ref, i)).collect();
        let mut region_base = Vec::with_capacity(map.functions.len());
        let mut total = 0usize;
        for f in &map.functions {
            region_base.push(total as u32);
            total += f.regions.len();
        }
        let layouts = shared.lay_out(&map, &region_base);
        let mut region_group = vec![None; total];
        for (li, (_, shared, slots)) in layouts.iter().enumerate() {
            for (g, group) in shared.layout.groups.iter().enumerate() {
                for &m in &group.members {
                    region_group[slots[m as usize] as usize] = Some((li as u32, g as u32));
                }
            }
        }
        BinaryCoverage {
            path,
            build_id,
            map,
            by_name,
            matched: std::sync::Mutex::new(None),
            region_base,
            total_regions: total,
            layouts,
            region_group,
        }
    }

    /// Every mapped line (count or not) per file: the units this binary can report.
    pub fn mapped_lines(&self) -> FileLines {
        self.layouts
            .iter()
            .map(|(file, shared, _)| (*file, shared.mapped.iter().map(|&l| (l, 0)).collect()))
            .filter(|(_, l): &(u32, Vec<(u32, u64)>)| !l.is_empty())
            .collect()
    }

    /// Per file with regions: its index in `map.files`, its layout's id in the [`Layouts`] it
    /// was opened with (the same id for the same regions in another binary), its mapped lines.
    pub fn layout_ids(&self) -> impl Iterator<Item = (u32, usize, &[u32])> + '_ {
        self.layouts
            .iter()
            .map(|(file, shared, _)| (*file, shared.id, shared.mapped.as_slice()))
    }

    /// Decodes a profile. `covered_only` keeps only lines that ran (what the matrix needs);
    /// otherwise every mapped line is returned with its count (what `llvm-cov` prints).
    pub fn decode(&self, bytes: &[u8], covered_only: bool) -> Result<FileLines, DecodeError> {
        self.decode_parsed(&RawProfile::parse(bytes)?, covered_only)
    }

    /// [`BinaryCoverage::decode`] for a profile the caller has already parsed.
    pub fn decode_parsed(&self, profile: &RawProfile, covered_only: bool) -> Result<FileLines, DecodeError> {
        if let Some(expected) = &self.build_id
            && !profile.binary_ids.iter().any(|id| id == expected)
        {
            return Err(DecodeError::BuildIdMismatch {
                binary: self.path.clone(),
                found: profile.binary_ids.first().map(|id| hex(id)),
            });
        }
        let ran = self.regions_ran(profile);
        if covered_only && ran.all_active {
            return Ok(self.covered_fast(&ran.regions));
        }
        let mut counts = vec![0u64; self.total_regions];
        for &(r, v) in &ran.regions {
            counts[r as usize] = v;
        }
        let mut out = Vec::new();
        let mut push = |file: u32, layout: &FileLayout, counts: &[u64]| {
            let mut lines = Vec::new();
            layout.line_counts(counts, covered_only, &mut lines);
            if !lines.is_empty() {
                out.push((file, lines));
            }
        };
        if ran.all_active {
            for (file, shared, slots) in &self.layouts {
                let by_slot: Vec<u64> = slots.iter().map(|&r| counts[r as usize]).collect();
                push(*file, &shared.layout, &by_slot);
            }
        } else {
            for (file, layout) in build_layouts(&self.map, &self.region_base, &ran.active) {
                push(file, &layout, &counts);
            }
        }
        Ok(out)
    }

    /// The regions the profile counts, and which functions `llvm-cov` would show.
    fn regions_ran(&self, profile: &RawProfile) -> RegionsRan {
        let mut out = RegionsRan {
            regions: Vec::new(),
            active: vec![true; self.map.functions.len()],
            all_active: true,
        };
        let matched = self.match_records(profile);
        // Evaluation buffers, reused from function to function.
        let (mut memo, mut on_stack, mut stack) = (Vec::new(), Vec::new(), Vec::new());
        for (rec, m) in profile.records.iter().zip(&matched.function) {
            let Some((fi, hash_ok)) = *m else {
                continue;
            };
            let f = &self.map.functions[fi];
            if !hash_ok {
                // llvm-cov drops a function whose profile hash does not match its mapping.
                out.hide(fi);
                continue;
            }
            if profile.all_zero(rec) {
                continue;
            }
            if let [only] = f.regions.as_slice() {
                // llvm-cov skips an unused copy of a function whose one region is Zero.
                if only.counter == Counter::Zero && rec.num_counters > 0 && profile.counter(rec.first_counter) > 0 {
                    out.hide(fi);
                    continue;
                }
            }
            let base = self.region_base[fi];
            let values = |i: u32| -> Option<u64> {
                ((i as usize) < rec.num_counters).then(|| profile.counter(rec.first_counter + i as usize))
            };
            memo.clear();
            memo.resize(f.expressions.len(), None);
            on_stack.clear();
            on_stack.resize(f.expressions.len(), false);
            let mut ok = true;
            for (k, r) in f.regions.iter().enumerate() {
                match eval(f, r.counter, &values, (&mut memo, &mut on_stack, &mut stack)) {
                    Some(0) => {}
                    Some(v) => out.regions.push((base + k as u32, v)),
                    None => ok = false,
                }
            }
            if !ok {
                out.hide(fi);
            }
        }
        out
    }
}

impl BinaryCoverage {
    /// `profile`'s records matched to this binary's functions: the last profile's match when
    /// its records are the same (every profile of one binary), else matched now.
    fn match_records(&self, profile: &RawProfile) -> Arc<RecordMatch> {
        let digest = profile.records.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, r| {
            let mix =
                r.name_ref ^ r.func_hash.rotate_left(17) ^ ((r.first_counter as u64) << 32) ^ r.num_counters as u64;
            (h ^ mix).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(5)
        });
        let mut last = self.matched.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(m) = last
            .as_ref()
            .filter(|m| m.digest == digest && m.function.len() == profile.records.len())
        {
            return Arc::clone(m);
        }
        let function = profile
            .records
            .iter()
            .map(|rec| {
                let &fi = self.by_name.get(&rec.name_ref)?;
                Some((fi, rec.func_hash == self.map.functions[fi].func_hash))
            })
            .collect();
        let m = Arc::new(RecordMatch { digest, function });
        *last = Some(Arc::clone(&m));
        m
    }
}

/// What one profile ran of a binary.
struct RegionsRan {
    /// Non-zero region counts as (flat region index, count): tests run a small part of a
    /// binary, so this stays small where a full vector would be cleared per profile.
    regions: Vec<(u32, u64)>,
    /// Per function, whether `llvm-cov` shows it (its profile matches its mapping).
    active: Vec<bool>,
    /// Every function is shown.
    all_active: bool,
}

impl RegionsRan {
    /// Function `f` is not shown.
    fn hide(&mut self, f: usize) {
        self.active[f] = false;
        self.all_active = false;
    }
}

impl BinaryCoverage {
    /// Covered lines from the per-group line lists (see `FileLayout::group_lines`): cost
    /// proportional to the regions that ran, not to the size of the files.
    fn covered_fast(&self, ran: &[(u32, u64)]) -> FileLines {
        // Groups that ran, per layout. A group's count is the sum of its members' counts, so
        // it ran when one of them did.
        let mut groups: Vec<(u32, u32)> = ran.iter().filter_map(|&(r, _)| self.region_group[r as usize]).collect();
        groups.sort_unstable();
        groups.dedup();
        let mut out: FileLines = Vec::new();
        for chunk in groups.chunk_by(|a, b| a.0 == b.0) {
            let (file, shared, _) = &self.layouts[chunk[0].0 as usize];
            let mut lines: Vec<u32> = chunk
                .iter()
                .flat_map(|&(_, g)| shared.layout.group_lines[g as usize].iter().copied())
                .collect();
            if lines.is_empty() {
                continue;
            }
            lines.sort_unstable();
            lines.dedup();
            out.push((*file, lines.into_iter().map(|l| (l, 1)).collect()));
        }
        out
    }
}

/// [`eval`]'s scratch: `memo` and `on_stack` have one entry per expression of the function,
/// the stack is the pending expressions.
type EvalBuffers<'b> = (&'b mut [Option<u64>], &'b mut [bool], &'b mut Vec<(usize, bool)>);

/// Evaluates a counter; `None` when it refers to a counter or expression that does not exist,
/// or to expressions that form a cycle (llvm-cov then drops the whole function). Arithmetic
/// wraps as LLVM's int64 evaluation does. An expression's kind is that of the first counter
/// that reaches it (`memo` is per function).
///
/// Iterative, with an explicit stack: a chain of expressions as long as a corrupt (or a very
/// large) function has must not overflow a worker thread's stack. The buffers are reused from
/// call to call (one allocation per profile, not per expression).
fn eval(f: &CovFunction, c: Counter, values: &dyn Fn(u32) -> Option<u64>, buffers: EvalBuffers<'_>) -> Option<u64> {
    let (memo, on_stack, stack) = buffers;
    let root = match c {
        Counter::Zero => return Some(0),
        Counter::Value(i) => return values(i),
        Counter::Sub(e) | Counter::Add(e) => e as usize,
    };
    enum Operand {
        Known(u64),
        Invalid,
        Needs(usize, bool),
    }
    let operand = |c: Counter, memo: &[Option<u64>]| match c {
        Counter::Zero => Operand::Known(0),
        Counter::Value(i) => values(i).map_or(Operand::Invalid, Operand::Known),
        Counter::Sub(e) | Counter::Add(e) => match memo.get(e as usize) {
            None => Operand::Invalid,
            Some(Some(v)) => Operand::Known(*v),
            Some(None) => Operand::Needs(e as usize, matches!(c, Counter::Sub(_))),
        },
    };
    stack.clear();
    stack.push((root, matches!(c, Counter::Sub(_))));
    let mut ok = true;
    while let Some(&(e, sub)) = stack.last() {
        let Some(&(lhs, rhs)) = f.expressions.get(e) else {
            ok = false;
            break;
        };
        if memo[e].is_some() {
            stack.pop();
            on_stack[e] = false;
            continue;
        }
        on_stack[e] = true;
        match (operand(lhs, memo), operand(rhs, memo)) {
            (Operand::Invalid, _) | (_, Operand::Invalid) => {
                ok = false;
                break;
            }
            (Operand::Needs(x, sub_x), _) | (_, Operand::Needs(x, sub_x)) => {
                if on_stack[x] {
                    ok = false; // a cycle: valid expressions form a DAG
                    break;
                }
                stack.push((x, sub_x));
            }
            (Operand::Known(l), Operand::Known(r)) => {
                memo[e] = Some(if sub { l.wrapping_sub(r) } else { l.wrapping_add(r) });
                stack.pop();
                on_stack[e] = false;
            }
        }
    }
    for &(e, _) in stack.iter() {
        if let Some(flag) = on_stack.get_mut(e) {
            *flag = false;
        }
    }
    if ok { memo[root] } else { None }
}

fn build_layouts(map: &CoverageMap, region_base: &[u32], active: &[bool]) -> Vec<(u32, FileLayout)> {
    let mut per_file: HashMap<u32, Vec<RegionRef>> = HashMap::new();
    for (fi, f) in map.functions.iter().enumerate() {
        if !active[fi] {
            continue;
        }
        for (k, r) in f.regions.iter().enumerate() {
            let Some(&file) = f.files.get(r.file_id as usize) else {
                continue;
            };
            per_file.entry(file).or_default().push(RegionRef {
                start: (r.line_start, r.col_start),
                end: (r.line_end, r.col_end),
                kind: r.kind,
                index: region_base[fi] + k as u32,
            });
        }
    }
    let mut layouts: Vec<(u32, FileLayout)> = per_file.into_iter().map(|(f, rs)| (f, FileLayout::new(rs))).collect();
    layouts.sort_by_key(|(f, _)| *f);
    layouts
}

/// A file's layout, built once for every binary whose regions in that file are the same.
pub struct SharedLayout {
    /// Numbered as first built.
    pub id: usize,
    /// Group members are the file's slots: its functions' regions there, the functions in
    /// the order of their fingerprints, each function's regions in its own order.
    pub layout: FileLayout,
    /// Every mapped line of the file.
    pub mapped: Vec<u32>,
}

/// File layouts shared by the binaries of a run. A library's doctests are one executable each,
/// each with the whole library's coverage map: its files have the same regions in every one
/// of them (only the files of the generic code a doctest instantiates differ), so each file is
/// laid out once, not once per doctest. Region indices differ between binaries (functions come
/// in another order), so a layout counts in slots and each binary maps its slots to its own
/// regions.
#[derive(Default)]
pub struct Layouts {
    by_key: Mutex<HashMap<LayoutKey, Arc<SharedLayout>>>,
}

/// A file's path and the fingerprints of the functions with regions in it, sorted.
type LayoutKey = (String, Vec<u64>);

impl Layouts {
    /// The layout of every file of `map` with regions, and each one's slots as flat region
    /// indices (`region_base`: each function's first).
    fn lay_out(&self, map: &CoverageMap, region_base: &[u32]) -> Vec<(u32, Arc<SharedLayout>, Vec<u32>)> {
        // Per file, each function's regions there, with the function's fingerprint.
        let mut per_file: HashMap<u32, Vec<(u64, usize)>> = HashMap::new();
        for (fi, f) in map.functions.iter().enumerate() {
            let mut files: Vec<u32> = f
                .regions
                .iter()
                .filter_map(|r| f.files.get(r.file_id as usize).copied())
                .collect();
            files.sort_unstable();
            files.dedup();
            for file in files {
                let mut h = std::collections::hash_map::DefaultHasher::new();
                (f.name_ref, f.func_hash).hash(&mut h);
                for r in f
                    .regions
                    .iter()
                    .filter(|r| f.files.get(r.file_id as usize) == Some(&file))
                {
                    (r.line_start, r.col_start, r.line_end, r.col_end, r.kind).hash(&mut h);
                }
                per_file.entry(file).or_default().push((h.finish(), fi));
            }
        }
        let mut out: Vec<(u32, Arc<SharedLayout>, Vec<u32>)> = per_file
            .into_iter()
            .map(|(file, mut functions)| {
                // Functions with one fingerprint have the same regions here: their order
                // among themselves changes no group.
                functions.sort_unstable_by_key(|&(print, _)| print);
                let mut slots = Vec::new();
                let mut regions = Vec::new();
                for &(_, fi) in &functions {
                    let f = &map.functions[fi];
                    for (k, r) in f.regions.iter().enumerate() {
                        if f.files.get(r.file_id as usize) == Some(&file) {
                            regions.push(RegionRef {
                                start: (r.line_start, r.col_start),
                                end: (r.line_end, r.col_end),
                                kind: r.kind,
                                index: slots.len() as u32,
                            });
                            slots.push(region_base[fi] + k as u32);
                        }
                    }
                }
                let key = (
                    map.files[file as usize].to_string_lossy().into_owned(),
                    functions.iter().map(|&(print, _)| print).collect(),
                );
                let known = self.by_key.lock().expect("not poisoned").get(&key).cloned();
                // Built outside the lock: other binaries lay their files out meanwhile.
                let shared = known.unwrap_or_else(|| {
                    let layout = FileLayout::new(regions);
                    let mut mapped = Vec::new();
                    layout.line_counts(&vec![0; slots.len()], false, &mut mapped);
                    let mut by_key = self.by_key.lock().expect("not poisoned");
                    let id = by_key.len();
                    by_key
                        .entry(key)
                        .or_insert_with(|| {
                            Arc::new(SharedLayout {
                                id,
                                layout,
                                mapped: mapped.into_iter().map(|(line, _)| line).collect(),
                            })
                        })
                        .clone()
                });
                (file, shared, slots)
            })
            .collect();
        out.sort_by_key(|(file, _, _)| *file);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn function(expressions: Vec<(Counter, Counter)>) -> CovFunction {
        CovFunction {
            name_ref: 1,
            func_hash: 1,
            files: vec![0],
            expressions,
            regions: Vec::new(),
            dummy: false,
        }
    }

    fn run(f: &CovFunction, c: Counter, counters: &[u64]) -> Option<u64> {
        let values = |i: u32| counters.get(i as usize).copied();
        let n = f.expressions.len();
        eval(
            f,
            c,
            &values,
            (&mut vec![None; n], &mut vec![false; n], &mut Vec::new()),
        )
    }

    #[test]
    fn expressions_add_and_subtract_with_wrapping() {
        let f = function(vec![
            (Counter::Value(0), Counter::Value(1)),
            (Counter::Add(0), Counter::Value(1)),
        ]);
        assert_eq!(run(&f, Counter::Add(0), &[5, 3]), Some(8));
        assert_eq!(run(&f, Counter::Sub(1), &[5, 3]), Some(5));
        assert_eq!(run(&f, Counter::Sub(0), &[3, 5]), Some(3u64.wrapping_sub(5)));
        assert_eq!(run(&f, Counter::Value(2), &[3, 5]), None);
        assert_eq!(run(&f, Counter::Add(2), &[3, 5]), None);
    }

    /// Found by `cargo xtask fuzz` (covmap): a long chain of expressions overflowed a worker
    /// thread's stack (the evaluation recursed once per expression).
    #[test]
    fn a_long_expression_chain_neither_overflows_nor_is_dropped() {
        let n = 200_000u32;
        let mut chain = vec![(Counter::Value(0), Counter::Zero)];
        chain.extend((1..n).map(|i| (Counter::Add(i - 1), Counter::Value(0))));
        let f = function(chain);
        let small_stack = std::thread::Builder::new().stack_size(64 * 1024);
        let v = small_stack
            .spawn(move || run(&f, Counter::Add(n - 1), &[2]))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(v, Some(2 * u64::from(n)));
    }

    #[test]
    fn expression_cycles_drop_the_function() {
        let f = function(vec![
            (Counter::Add(1), Counter::Value(0)),
            (Counter::Value(0), Counter::Sub(0)),
        ]);
        assert_eq!(run(&f, Counter::Add(0), &[1]), None);
        let self_loop = function(vec![(Counter::Add(0), Counter::Add(0))]);
        assert_eq!(run(&self_loop, Counter::Add(0), &[1]), None);
    }
}
