//! Reads the LLVM coverage map (`__llvm_covmap` + `__llvm_covfun`, found through
//! [`crate::platform`]) of one instrumented binary.
//!
//! Refs: llvm/include/llvm/ProfileData/InstrProfData.inc (COVMAP_HEADER, COVMAP_FUNC_RECORD),
//! llvm/lib/ProfileData/Coverage/CoverageMappingReader.cpp @ llvmorg-22
//! (`RawCoverageMappingReader`, `VersionedCovMapFuncRecordReader`).
//! Only coverage-mapping format Version7 (header value 6, rustc ≥ 1.79 / LLVM ≥ 18) is accepted.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use md5::{Digest, Md5};

use crate::error::DecodeError;
use crate::platform::{self, Section};

/// The coverage-mapping version value this decoder understands ("Version7").
const COVMAP_VERSION: u32 = 6;

/// The last source line a region may reach. Laying out a file walks every line its regions
/// span, so an unchecked span (a corrupt map's region over lines 1 to 2^32) would cost minutes
/// and gigabytes; no source file rustc compiles comes near four million lines.
pub const MAX_LINE: u64 = 1 << 22;

/// A counter reference inside a mapping: a physical counter, an expression, or zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counter {
    Zero,
    /// Index into the function's counters in the profile.
    Value(u32),
    /// `lhs - rhs` of expression N.
    Sub(u32),
    /// `lhs + rhs` of expression N.
    Add(u32),
}

impl Counter {
    fn decode(v: u64) -> Result<Self, DecodeError> {
        let id = u32::try_from(v >> 2).map_err(|_| DecodeError::malformed("counter id too large"))?;
        Ok(match v & 3 {
            0 => Counter::Zero,
            1 => Counter::Value(id),
            2 => Counter::Sub(id),
            _ => Counter::Add(id),
        })
    }
}

/// Region kinds, numbered as LLVM numbers them (the order matters when sorting).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RegionKind {
    Code = 0,
    Expansion = 1,
    Skipped = 2,
    Gap = 3,
}

/// One mapping region that contributes to line counts (branch and MC/DC regions are dropped).
#[derive(Clone, Copy, Debug)]
pub struct Region {
    pub counter: Counter,
    /// Index into the function's `files`.
    pub file_id: u32,
    pub kind: RegionKind,
    pub line_start: u32,
    pub col_start: u32,
    pub line_end: u32,
    pub col_end: u32,
}

/// One `__llvm_covfun` record: a function (one monomorphisation) and its regions.
#[derive(Debug)]
pub struct CovFunction {
    pub name_ref: u64,
    pub func_hash: u64,
    /// Local file id → index into [`CoverageMap::files`].
    pub files: Vec<u32>,
    pub expressions: Vec<(Counter, Counter)>,
    pub regions: Vec<Region>,
    /// A placeholder record (hash 0, one Zero region) that a real record may replace.
    pub dummy: bool,
}

/// The whole coverage map of a binary: its files and its function records.
#[derive(Debug, Default)]
pub struct CoverageMap {
    /// Absolute (joined with the compilation directory) source paths.
    pub files: Vec<PathBuf>,
    pub functions: Vec<CovFunction>,
}

/// What one binary file gives us: its build-id and its coverage map.
pub struct BinaryInfo {
    pub build_id: Option<Vec<u8>>,
    pub map: CoverageMap,
}

/// The build-id of the executable at `path`, reading its headers and notes only (`None`: it
/// has none, or cannot be read).
pub fn build_id_of(path: &std::path::Path) -> Option<Vec<u8>> {
    let file = std::fs::File::open(path).ok()?;
    let cache = object::ReadCache::new(file);
    platform::build_id(&object::File::parse(&cache).ok()?)
}

/// Parses the coverage map and build-id out of an executable's bytes.
pub fn read_binary<'data>(data: impl object::ReadRef<'data>) -> Result<BinaryInfo, DecodeError> {
    let file = object::File::parse(data).map_err(|e| DecodeError::malformed(format!("not an object file: {e}")))?;
    let build_id = platform::build_id(&file);
    let section = |which: Section| {
        platform::section_data(&file, which)
            .map_err(|e| DecodeError::malformed(format!("cannot read {}: {e}", which.name_in(&file))))
    };
    let (Some(covmap), Some(covfun)) = (section(Section::CoverageMap)?, section(Section::CoverageFunctions)?) else {
        return Err(DecodeError::NoCoverageMap);
    };
    let mut map = parse_coverage_map(&covmap, &covfun)?;
    if let Some(names) = section(Section::ProfileNames)? {
        let own = doctest_functions(&names)?;
        if !own.is_empty() {
            map.functions.retain(|f| !own.contains(&f.name_ref));
        }
    }
    Ok(BinaryInfo { build_id, map })
}

/// The name refs of the functions a standalone doctest defines itself
/// ([`crate::doctest::defined_by_doctest`]), from the profile names section: blocks of `ULEB
/// uncompressed length, ULEB compressed length (0: stored), data`, names separated by `\x01`;
/// a function's name ref is the MD5 of its name.
fn doctest_functions(section: &[u8]) -> Result<std::collections::HashSet<u64>, DecodeError> {
    let mut own = std::collections::HashSet::new();
    let mut r = Cursor::new(section);
    while !r.at_end() {
        let raw = r.maybe_compressed()?;
        for name in raw.split(|&b| b == 1) {
            if std::str::from_utf8(name).is_ok_and(crate::doctest::defined_by_doctest) {
                own.insert(md5_low(name));
            }
        }
        // Blocks of the linked objects follow one another, some padded with zeros.
        r.skip_zeros();
    }
    Ok(own)
}

/// Parses the two coverage sections.
pub fn parse_coverage_map(covmap: &[u8], covfun: &[u8]) -> Result<CoverageMap, DecodeError> {
    let mut map = CoverageMap::default();
    // Filenames tables, keyed by the MD5 of their encoded bytes (what covfun records refer to).
    let mut tables: HashMap<u64, Vec<u32>> = HashMap::new();
    let mut file_ids: HashMap<PathBuf, u32> = HashMap::new();

    let mut pos = 0usize;
    while pos + 16 <= covmap.len() {
        let word = |i: usize| u32::from_le_bytes(covmap[pos + 4 * i..pos + 4 * i + 4].try_into().unwrap());
        let (n_records, filenames_size, coverage_size, version) = (word(0), word(1), word(2), word(3));
        if version != COVMAP_VERSION {
            return Err(DecodeError::UnsupportedVersion {
                what: "coverage map",
                found: u64::from(version) + 1,
            });
        }
        if n_records != 0 || coverage_size != 0 {
            return Err(DecodeError::malformed(
                "covmap header with inline records (pre-Version4 layout)",
            ));
        }
        let start = pos + 16;
        let end = start
            .checked_add(filenames_size as usize)
            .filter(|&e| e <= covmap.len())
            .ok_or_else(|| DecodeError::malformed("filenames table runs past the section"))?;
        let blob = &covmap[start..end];
        let names = decode_filenames(blob)?;
        let global: Vec<u32> = names
            .iter()
            .map(|p| {
                let next = file_ids.len() as u32;
                *file_ids.entry(p.clone()).or_insert_with(|| {
                    map.files.push(p.clone());
                    next
                })
            })
            .collect();
        tables.insert(md5_low(blob), global);
        pos = align8(end);
    }

    // Function records; keep the first per NameRef unless it is a dummy replaced by a real one.
    let mut by_name: HashMap<u64, usize> = HashMap::new();
    let mut pos = 0usize;
    while pos + 28 <= covfun.len() {
        let u64_at = |o: usize| u64::from_le_bytes(covfun[o..o + 8].try_into().unwrap());
        let name_ref = u64_at(pos);
        let data_size = u32::from_le_bytes(covfun[pos + 8..pos + 12].try_into().unwrap()) as usize;
        let func_hash = u64_at(pos + 12);
        let filenames_ref = u64_at(pos + 20);
        let start = pos + 28;
        let end = start
            .checked_add(data_size)
            .filter(|&e| e <= covfun.len())
            .ok_or_else(|| DecodeError::malformed("function record runs past the section"))?;
        let mapping = &covfun[start..end];
        pos = align8(end);
        if name_ref == 0 && data_size == 0 {
            continue; // zero padding between linked sections
        }
        let table = tables
            .get(&filenames_ref)
            .ok_or_else(|| DecodeError::malformed("function record refers to an unknown filenames table"))?;
        let dummy = func_hash == 0 && is_dummy_mapping(mapping);
        if let Some(&existing) = by_name.get(&name_ref) {
            if !map.functions[existing].dummy || dummy {
                continue;
            }
            map.functions[existing] = decode_function(name_ref, func_hash, mapping, table, dummy)?;
            continue;
        }
        by_name.insert(name_ref, map.functions.len());
        map.functions
            .push(decode_function(name_ref, func_hash, mapping, table, dummy)?);
    }
    Ok(map)
}

fn align8(x: usize) -> usize {
    (x + 7) & !7
}

/// Low 64 bits (little-endian) of the MD5 of `bytes`, as LLVM's `MD5Hash` computes them.
pub fn md5_low(bytes: &[u8]) -> u64 {
    let digest = Md5::digest(bytes);
    u64::from_le_bytes(digest[..8].try_into().unwrap())
}

/// Decodes a filenames blob: `ULEB n, ULEB uncompressed_len, ULEB compressed_len, data`.
/// Entry 0 is the compilation directory; relative entries are joined to it.
fn decode_filenames(blob: &[u8]) -> Result<Vec<PathBuf>, DecodeError> {
    let mut r = Cursor::new(blob);
    let n = r.uleb()? as usize;
    let raw = r.maybe_compressed()?;
    let mut r = Cursor::new(&raw);
    // Every name takes at least its length byte: `n` is only a claim.
    let mut names = Vec::with_capacity(n.min(raw.len()));
    for _ in 0..n {
        let len = r.uleb()? as usize;
        let s = String::from_utf8_lossy(r.bytes(len)?).into_owned();
        names.push(PathBuf::from(s));
    }
    if let Some(comp_dir) = names.first().cloned() {
        for name in names.iter_mut().skip(1) {
            // llvm-cov keeps absolute names verbatim and normalises only joined ones.
            if name.is_relative() {
                *name = normalize(&comp_dir.join(&*name));
            }
        }
    }
    Ok(names)
}

/// Inflates zlib data that its header says is `expected` bytes long. The claim is checked,
/// not trusted: no more than that is inflated (a small table cannot expand into gigabytes) and
/// the buffer grows with what the data holds, not with what the header says.
fn inflate(compressed: &[u8], expected: usize) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(expected.min(compressed.len().saturating_mul(4)));
    flate2::read::ZlibDecoder::new(compressed)
        .take((expected as u64).saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| DecodeError::malformed(format!("bad zlib data (filenames or profile names): {e}")))?;
    if out.len() != expected {
        return Err(DecodeError::malformed(format!(
            "compressed data inflates to {}{} bytes, its header says {expected}",
            if out.len() > expected { "more than " } else { "" },
            out.len().min(expected)
        )));
    }
    Ok(out)
}

/// Lexically removes `.` and `..` components (no filesystem access).
pub fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// LLVM's dummy check: one file, no expressions, one region with a Zero counter.
fn is_dummy_mapping(mapping: &[u8]) -> bool {
    let mut r = Cursor::new(mapping);
    let mut check = || -> Result<bool, DecodeError> {
        if r.uleb()? != 1 {
            return Ok(false);
        }
        r.uleb()?;
        if r.uleb()? != 0 {
            return Ok(false);
        }
        if r.uleb()? != 1 {
            return Ok(false);
        }
        Ok(r.uleb()? & 3 == 0)
    };
    check().unwrap_or(false)
}

/// A region's counter and kind from its header, reading the extra fields of branch and MC/DC
/// regions; `None` for those (they carry no line count).
fn region_kind(header: u64, r: &mut Cursor) -> Result<(Counter, Option<RegionKind>), DecodeError> {
    let counter = Counter::decode(header)?;
    if header & 3 != 0 {
        return Ok((counter, Some(RegionKind::Code)));
    }
    if header & 4 != 0 {
        return Ok((Counter::Zero, Some(RegionKind::Expansion)));
    }
    let (kind, extra) = match header >> 3 {
        0 => (Some(RegionKind::Code), 0),
        2 => (Some(RegionKind::Skipped), 0),
        // Branch region: true and false counters.
        4 => (None, 2),
        // MC/DC decision: bitmap index, number of conditions.
        5 => (None, 2),
        // MC/DC branch: two counters, condition id, true id, false id.
        6 => (None, 5),
        k => return Err(DecodeError::malformed(format!("unknown region kind {k}"))),
    };
    for _ in 0..extra {
        r.uleb()?;
    }
    Ok((counter, kind))
}

fn decode_function(
    name_ref: u64,
    func_hash: u64,
    mapping: &[u8],
    table: &[u32],
    dummy: bool,
) -> Result<CovFunction, DecodeError> {
    let mut r = Cursor::new(mapping);
    let n_files = r.uleb()? as usize;
    // Counts are claims: each entry takes at least a byte of the mapping.
    let mut files = Vec::with_capacity(n_files.min(mapping.len()));
    for _ in 0..n_files {
        let idx = r.uleb()? as usize;
        let global = *table
            .get(idx)
            .ok_or_else(|| DecodeError::malformed("file index out of range"))?;
        files.push(global);
    }
    let n_expr = r.uleb()? as usize;
    let mut expressions = Vec::with_capacity(n_expr.min(mapping.len() / 2));
    for _ in 0..n_expr {
        expressions.push((Counter::decode(r.uleb()?)?, Counter::decode(r.uleb()?)?));
    }
    let mut regions = Vec::new();
    for file_id in 0..n_files as u32 {
        let n_regions = r.uleb()? as usize;
        let mut line = 0u64;
        for _ in 0..n_regions {
            let header = r.uleb()?;
            let (counter, kind) = region_kind(header, &mut r)?;
            let delta = r.uleb()?;
            let mut col_start = r.uleb()?;
            let num_lines = r.uleb()?;
            let mut col_end = r.uleb()?;
            let mut is_gap = false;
            if col_end & (1 << 31) != 0 {
                is_gap = true;
                col_end &= !(1u64 << 31);
            }
            let out_of_range = || DecodeError::malformed("region location out of range");
            line = line.checked_add(delta).ok_or_else(out_of_range)?;
            let line_end = line.checked_add(num_lines).ok_or_else(out_of_range)?;
            if line_end > MAX_LINE {
                return Err(DecodeError::malformed(format!(
                    "a region ends on line {line_end}, past the {MAX_LINE} lines a source file may have"
                )));
            }
            if col_start == 0 && col_end == 0 {
                col_start = 1;
                col_end = u64::from(u32::MAX);
            }
            let Some(mut kind) = kind else { continue };
            if is_gap && kind == RegionKind::Code {
                kind = RegionKind::Gap;
            }
            let to_u32 = |v: u64| u32::try_from(v).map_err(|_| out_of_range());
            regions.push(Region {
                counter,
                file_id,
                kind,
                line_start: to_u32(line)?,
                col_start: to_u32(col_start)?,
                line_end: to_u32(line_end)?,
                col_end: to_u32(col_end)?,
            });
        }
    }
    Ok(CovFunction {
        name_ref,
        func_hash,
        files,
        expressions,
        regions,
        dummy,
    })
}

/// A little-endian byte reader with LEB128.
pub(crate) struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Cursor { data, pos: 0 }
    }

    pub(crate) fn uleb(&mut self) -> Result<u64, DecodeError> {
        let mut result = 0u64;
        let mut shift = 0;
        loop {
            let byte = *self
                .data
                .get(self.pos)
                .ok_or_else(|| DecodeError::malformed("truncated LEB128"))?;
            self.pos += 1;
            if shift >= 64 {
                return Err(DecodeError::malformed("LEB128 overflow"));
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(result);
            }
            shift += 7;
        }
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| DecodeError::malformed("truncated data"))?;
        let s = &self.data[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    /// `ULEB uncompressed length, ULEB compressed length (0: stored), data`, as LLVM writes
    /// filenames tables and profile names: the data, inflated when compressed.
    pub(crate) fn maybe_compressed(&mut self) -> Result<std::borrow::Cow<'a, [u8]>, DecodeError> {
        let uncompressed_len = self.uleb()? as usize;
        let compressed_len = self.uleb()? as usize;
        Ok(if compressed_len == 0 {
            std::borrow::Cow::Borrowed(self.bytes(uncompressed_len)?)
        } else {
            std::borrow::Cow::Owned(inflate(self.bytes(compressed_len)?, uncompressed_len)?)
        })
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// Moves past zero bytes (padding).
    pub(crate) fn skip_zeros(&mut self) {
        while self.data.get(self.pos) == Some(&0) {
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_standalone_doctests_own_functions_are_found_by_name() {
        let own = "_RNvCsdqsnfIJc26X_8rust_out4main";
        let library = "_RINvMs1_CseBen9pL05tE_4itoaNtB6_6Buffer6formatyECsdqsnfIJc26X_8rust_out";
        let names = format!("{own}\x01{library}");
        // A stored block, zero padding, then a compressed one holding the doctest's name again.
        let mut section = vec![names.len() as u8, 0];
        section.extend(names.as_bytes());
        section.extend([0, 0]);
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, own.as_bytes()).unwrap();
        let z = z.finish().unwrap();
        section.extend([own.len() as u8, z.len() as u8]);
        section.extend(&z);
        let found = doctest_functions(&section).unwrap();
        assert_eq!(found, std::collections::HashSet::from([md5_low(own.as_bytes())]));
        assert!(
            doctest_functions(&[9, 0, b'x']).is_err(),
            "a block shorter than it says"
        );
    }

    #[test]
    fn uleb_decodes_multibyte_values() {
        let mut c = Cursor::new(&[0xe5, 0x8e, 0x26, 0x01]);
        assert_eq!(c.uleb().unwrap(), 624485);
        assert_eq!(c.uleb().unwrap(), 1);
        assert!(c.uleb().is_err());
    }

    #[test]
    fn counters_decode_by_tag() {
        assert_eq!(Counter::decode(0).unwrap(), Counter::Zero);
        assert_eq!(Counter::decode(5).unwrap(), Counter::Value(1));
        assert_eq!(Counter::decode(10).unwrap(), Counter::Sub(2));
        assert_eq!(Counter::decode(15).unwrap(), Counter::Add(3));
    }

    #[test]
    fn relative_filenames_join_the_compilation_directory() {
        let mut raw = Vec::new();
        for s in ["/ws", "src/lib.rs", "/abs/x.rs"] {
            raw.push(s.len() as u8);
            raw.extend_from_slice(s.as_bytes());
        }
        let mut blob = vec![3, raw.len() as u8, 0];
        blob.extend_from_slice(&raw);
        let names = decode_filenames(&blob).unwrap();
        assert_eq!(
            names,
            vec![
                PathBuf::from("/ws"),
                PathBuf::from("/ws/src/lib.rs"),
                PathBuf::from("/abs/x.rs")
            ]
        );
    }

    fn uleb(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    /// Found by `cargo xtask fuzz` (covmap): a record claiming 2^58 files made the decoder
    /// reserve room for all of them (an abort, not an error).
    #[test]
    fn a_huge_file_count_is_refused_without_allocating() {
        let mut mapping = Vec::new();
        uleb(1 << 58, &mut mapping);
        mapping.push(0);
        assert!(decode_function(1, 1, &mapping, &[0], false).is_err());
        let mut expressions = vec![1, 0];
        uleb(u64::MAX >> 4, &mut expressions);
        assert!(decode_function(1, 1, &expressions, &[0], false).is_err());
    }

    /// Found by `cargo xtask fuzz` (covmap): a region whose line count overflows (a panic in
    /// debug builds, a wrapped line in release ones).
    #[test]
    fn region_lines_that_overflow_are_refused() {
        // One file, no expressions, one region: counter 1, line 1, column 1, u64::MAX lines.
        let mut mapping = vec![1, 0, 0, 1, 5, 1, 1];
        uleb(u64::MAX, &mut mapping);
        mapping.push(1);
        let err = decode_function(1, 1, &mapping, &[0], false).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
        // Two regions whose deltas add up past u64::MAX.
        let mut mapping = vec![1, 0, 0, 2, 5];
        uleb(u64::MAX, &mut mapping);
        mapping.extend([1, 0, 1, 5, 1, 1, 0, 1]);
        assert!(decode_function(1, 1, &mapping, &[0], false).is_err());
    }

    /// Found by `cargo xtask fuzz` (covmap): a region over 24 million lines took the layout
    /// minutes to walk; regions past `MAX_LINE` are refused, ones up to it still decode.
    #[test]
    fn regions_past_the_longest_file_are_refused() {
        let region = |num_lines: u64| {
            let mut mapping = vec![1, 0, 0, 1, 5, 1, 1];
            uleb(num_lines, &mut mapping);
            mapping.push(1);
            decode_function(1, 1, &mapping, &[0], false)
        };
        let f = region(MAX_LINE - 1).unwrap();
        assert_eq!((f.regions[0].line_start, f.regions[0].line_end), (1, MAX_LINE as u32));
        let err = region(24_196_557).unwrap_err().to_string();
        assert!(err.contains("past the 4194304 lines"), "{err}");
    }

    /// A compressed filenames table must inflate to exactly the size its header claims; a
    /// claim of 2^60 bytes is refused, not reserved.
    #[test]
    fn compressed_filenames_are_checked_against_their_claimed_size() {
        use std::io::Write;
        let raw = [4u8, b'/', b'w', b's', b'x'];
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&raw).unwrap();
        let compressed = z.finish().unwrap();
        let blob = |claimed: u64| {
            let mut b = vec![1];
            uleb(claimed, &mut b);
            uleb(compressed.len() as u64, &mut b);
            b.extend_from_slice(&compressed);
            b
        };
        assert_eq!(decode_filenames(&blob(5)).unwrap(), vec![PathBuf::from("/wsx")]);
        for claimed in [4, 6, 1 << 60] {
            let err = decode_filenames(&blob(claimed)).unwrap_err().to_string();
            assert!(err.contains("its header says"), "{claimed}: {err}");
        }
    }

    #[test]
    fn dummy_mapping_is_one_zero_region() {
        assert!(is_dummy_mapping(&[1, 0, 0, 1, 0, 1, 1, 0, 1]));
        assert!(!is_dummy_mapping(&[1, 0, 0, 1, 5, 1, 1, 0, 1]));
        assert!(!is_dummy_mapping(&[2, 0, 1]));
    }
}
