//! The fuzz targets: each feeds mutated inputs to one of the library's public decoders of
//! files cargo sfl did not write, and says how far each input got (decoded, refused by the
//! first check, or refused later), so a run shows whether the mutator reaches past headers.

use std::path::Path;

use cargo_sfl::coverage::BinaryCoverage;
use cargo_sfl::coverage::covmap::{self, md5_low};
use cargo_sfl::coverage::profraw::RawProfile;
use cargo_sfl::edges::map::{EdgeMap, MapError};
use cargo_sfl::edges::record::{self, RecordError};
use cargo_sfl::error::DecodeError;

use super::mutate::{self, Rng, interesting, read_u64, write_le};
use super::seeds::Seeds;

/// How far one input got.
pub enum Verdict {
    Decoded,
    /// Refused; `early` when the decoder's first check (magic, syntax, version) refused it.
    Refused {
        kind: String,
        early: bool,
    },
}

impl Verdict {
    pub(super) fn refused(err: &dyn std::fmt::Display, early: bool) -> Verdict {
        Verdict::Refused {
            kind: kind_of(&err.to_string()),
            early,
        }
    }
}

/// An error message with its numbers and quoted parts blanked and its length capped: one
/// "kind" per message template.
pub fn kind_of(msg: &str) -> String {
    // Multi-line messages (TOML's) quote the input between a location and the reason.
    let lines: Vec<&str> = msg.lines().filter(|l| !l.trim().is_empty()).collect();
    let msg = match lines.as_slice() {
        [first, .., last] => format!("{first} … {last}"),
        _ => msg.to_string(),
    };
    let mut out = String::new();
    let mut quoted = false;
    for c in msg.chars() {
        if c == '"' || c == '`' {
            quoted = !quoted;
            out.push(c);
            if quoted {
                out.push('…');
            }
        } else if quoted {
        } else if c.is_ascii_digit() {
            if !out.ends_with('N') {
                out.push('N');
            }
        } else {
            out.push(c);
        }
        if out.chars().count() >= 70 {
            break;
        }
    }
    out
}

/// One decoder under test.
pub trait Target: Send + Sync {
    fn name(&self) -> &'static str;
    /// The seed inputs mutations start from.
    fn corpus(&self) -> &[Vec<u8>];
    /// One mutation (format-aware or generic) of `input`.
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>);
    fn run(&self, input: &[u8]) -> Verdict;
}

/// The targets of binary formats (profiles, coverage maps, objects, edge files), with their
/// shares of a run's inputs (by how cheap and how deep each is).
pub fn binary(seeds: &Seeds) -> Vec<(Box<dyn Target>, u64)> {
    let cov = || {
        let map = covmap::parse_coverage_map(&seeds.covmap, &seeds.covfun).expect("the seed coverage map decodes");
        let build_id = covmap::read_binary(seeds.elf.as_slice())
            .expect("the seed binary decodes")
            .build_id;
        BinaryCoverage::from_map("minmax".into(), build_id, map)
    };
    vec![
        (Box::new(Profraw(seeds.profraw.clone())) as Box<dyn Target>, 20),
        (
            Box::new(Decode {
                corpus: seeds.profraw.clone(),
                cov: cov(),
            }),
            15,
        ),
        (
            Box::new(Covmap {
                corpus: vec![join(&[&seeds.covmap, &seeds.covfun])],
                profiles: seeds.profraw.clone(),
            }),
            15,
        ),
        (Box::new(Object(vec![seeds.elf.clone()])), 8),
        (Box::new(EdgeMapTarget(vec![seeds.elf.clone()])), 6),
        (Box::new(Edges(seeds.edges.clone())), 12),
    ]
}

/// Several files as one input: each part prefixed with its length (u32 LE).
pub fn join(parts: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in parts {
        out.extend_from_slice(&(p.len() as u32).to_le_bytes());
        out.extend_from_slice(p);
    }
    out
}

/// The parts of a [`join`]ed input (a cut-off part ends the list).
pub fn split(input: &[u8]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut rest = input;
    while rest.len() >= 4 {
        let n = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let end = (4 + n).min(rest.len());
        parts.push(rest[4..end].to_vec());
        rest = &rest[end..];
    }
    parts
}

/// Mutates one part of a joined input with `f`.
pub(super) fn mutate_part(rng: &mut Rng, input: &mut Vec<u8>, f: impl FnOnce(&mut Rng, usize, &mut Vec<Vec<u8>>)) {
    let mut parts = split(input);
    if parts.is_empty() {
        return;
    }
    let i = rng.below(parts.len());
    f(rng, i, &mut parts);
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    *input = join(&refs);
}

/// A generic byte mutation that may splice in part of another corpus input.
pub(super) fn generic(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let other = rng.below(corpus.len());
    mutate::bytes(rng, data, corpus.get(other).map_or(&[][..], Vec::as_slice));
}

const PROFRAW_HEADER: usize = 16 * 8;

/// Raw-profile structure: header fields, data-record fields, counters, binary-id lengths.
fn mutate_profraw(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let len = data.len() as u64;
    let ids = read_u64(data, 16).unwrap_or(0) as usize;
    let records = PROFRAW_HEADER.saturating_add(ids);
    let num_data = read_u64(data, 24).unwrap_or(0).min(1 << 20) as usize;
    match rng.below(8) {
        0 => {
            let field = rng.below(16);
            let v = interesting(rng, read_u64(data, field * 8).unwrap_or(len));
            write_le(data, field * 8, 8, v);
        }
        1 | 2 if num_data > 0 => {
            // A data record: NameRef, FuncHash, CounterPtr, BitmapPtr, FunctionPtr, Values,
            // NumCounters (u32), NumValueSites, NumBitmapBytes.
            let at = records.saturating_add(rng.below(num_data) * 64);
            let (off, width) = *rng.pick(&[
                (0, 8),
                (8, 8),
                (16, 8),
                (24, 8),
                (32, 8),
                (40, 8),
                (48, 4),
                (52, 2),
                (56, 4),
            ]);
            let old = read_u64(data, at.saturating_add(off)).unwrap_or(0);
            let v = if rng.one_in(2) {
                old.wrapping_add(8 * (rng.below(9) as u64)).wrapping_sub(32)
            } else {
                interesting(rng, old)
            };
            write_le(data, at.saturating_add(off), width, v);
        }
        3 | 4 => {
            // A counter value (past the records): which functions and regions ran.
            let counters = records.saturating_add(num_data * 64);
            if data.len() > counters.saturating_add(8) {
                let at = counters + rng.below((data.len() - counters) / 8) * 8;
                let v = *rng.pick(&[0, 1, 2, u64::MAX, 1 << 63]);
                write_le(data, at, 8, v);
            }
        }
        5 => write_le(data, PROFRAW_HEADER, 8, interesting(rng, ids as u64)),
        _ => generic(rng, data, corpus),
    }
}

fn profraw_early(e: &DecodeError) -> bool {
    matches!(e, DecodeError::EmptyProfile | DecodeError::NotAProfile)
        || e.to_string().contains("shorter than its header")
}

struct Profraw(Vec<Vec<u8>>);

impl Target for Profraw {
    fn name(&self) -> &'static str {
        "profraw"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_profraw(rng, input, &self.0);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        match RawProfile::parse(input) {
            Ok(p) => {
                // What the decoder reads of a parsed profile.
                let mut sum = 0u64;
                for r in p.records.iter() {
                    if !p.all_zero(r) {
                        sum = (0..r.num_counters).fold(sum, |s, i| s.wrapping_add(p.counter(r.first_counter + i)));
                    }
                }
                std::hint::black_box(sum);
                Verdict::Decoded
            }
            Err(e) => Verdict::refused(&e, profraw_early(&e)),
        }
    }
}

/// A profile decoded against the real coverage map of the binary that wrote the seeds.
struct Decode {
    corpus: Vec<Vec<u8>>,
    cov: BinaryCoverage,
}

impl Target for Decode {
    fn name(&self) -> &'static str {
        "decode"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.corpus
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_profraw(rng, input, &self.corpus);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        let fast = self.cov.decode(input, true);
        let exact = self.cov.decode(input, false);
        match (fast, exact) {
            (Ok(a), Ok(b)) => {
                std::hint::black_box((a, b));
                Verdict::Decoded
            }
            (Err(e), _) | (_, Err(e)) => {
                let early = profraw_early(&e) || matches!(e, DecodeError::BuildIdMismatch { .. });
                Verdict::refused(&e, early)
            }
        }
    }
}

/// `__llvm_covmap` + `__llvm_covfun`, then the prepared map used on the seed profiles.
struct Covmap {
    corpus: Vec<Vec<u8>>,
    profiles: Vec<Vec<u8>>,
}

/// The covfun records: `(header bytes, mapping bytes)`; the rest of the section is dropped.
fn covfun_records(covfun: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + 28 <= covfun.len() {
        let size = u32::from_le_bytes(covfun[pos + 8..pos + 12].try_into().expect("4 bytes")) as usize;
        let end = (pos + 28 + size).min(covfun.len());
        out.push((covfun[pos..pos + 28].to_vec(), covfun[pos + 28..end].to_vec()));
        pos = (end + 7) & !7;
    }
    out
}

/// Lays records out again with consistent sizes and alignment.
fn covfun_join(records: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (header, mapping) in records {
        let mut h = header.clone();
        write_le(&mut h, 8, 4, mapping.len() as u64);
        out.extend_from_slice(&h);
        out.extend_from_slice(mapping);
        out.resize((out.len() + 7) & !7, 0);
    }
    out
}

impl Covmap {
    fn mutate_covfun(rng: &mut Rng, covfun: &mut Vec<u8>) {
        let mut records = covfun_records(covfun);
        if records.is_empty() {
            return;
        }
        let i = rng.below(records.len());
        match rng.below(6) {
            0 => {
                // NameRef, DataSize, FuncHash or FilenamesRef.
                let (off, width) = *rng.pick(&[(0, 8), (8, 4), (12, 8), (20, 8)]);
                let v = interesting(rng, records[i].1.len() as u64);
                write_le(&mut records[i].0, off, width, v);
                // Keep the raw DataSize the mutation wrote.
                let mut out = Vec::new();
                for (k, (h, m)) in records.iter().enumerate() {
                    out.extend_from_slice(h);
                    out.extend_from_slice(m);
                    if k != i {
                        out.resize((out.len() + 7) & !7, 0);
                    }
                }
                *covfun = out;
                return;
            }
            1 => {
                let copy = records[i].clone();
                records.insert(rng.below(records.len() + 1), copy);
            }
            2 | 3 => mutate::leb_field(rng, &mut records[i].1),
            _ => mutate::bytes(rng, &mut records[i].1, &[]),
        }
        *covfun = covfun_join(&records);
    }

    /// Mutates the first filenames table and re-points the records that named it.
    fn mutate_filenames(rng: &mut Rng, covmap: &mut Vec<u8>, covfun: &mut Vec<u8>) {
        if covmap.len() < 16 {
            return mutate::bytes(rng, covmap, &[]);
        }
        let size = (u32::from_le_bytes(covmap[4..8].try_into().expect("4 bytes")) as usize).min(covmap.len() - 16);
        let mut blob = covmap[16..16 + size].to_vec();
        let old = md5_low(&blob);
        if rng.one_in(2) {
            mutate::leb_field(rng, &mut blob);
        } else {
            mutate::bytes(rng, &mut blob, &[]);
        }
        let mut out = covmap[..16].to_vec();
        write_le(&mut out, 4, 4, blob.len() as u64);
        out.extend_from_slice(&blob);
        out.resize((out.len() + 7) & !7, 0);
        out.extend_from_slice(&covmap[((16 + size + 7) & !7).min(covmap.len())..]);
        *covmap = out;
        if !rng.one_in(4) {
            let new = md5_low(&blob);
            let mut records = covfun_records(covfun);
            for (h, _) in &mut records {
                if read_u64(h, 20) == Some(old) {
                    write_le(h, 20, 8, new);
                }
            }
            *covfun = covfun_join(&records);
        }
    }
}

impl Target for Covmap {
    fn name(&self) -> &'static str {
        "covmap"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.corpus
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        let mut parts = split(input);
        parts.resize(2, Vec::new());
        let (covmap, covfun) = parts.split_at_mut(1);
        let (covmap, covfun) = (&mut covmap[0], &mut covfun[0]);
        match rng.below(10) {
            0..=5 => Covmap::mutate_covfun(rng, covfun),
            6 | 7 => Covmap::mutate_filenames(rng, covmap, covfun),
            8 => {
                let field = rng.below(4) * 4;
                let v = interesting(rng, covmap.len() as u64);
                write_le(covmap, field, 4, v);
            }
            _ => {
                let which = if rng.one_in(2) { &mut *covmap } else { &mut *covfun };
                mutate::bytes(rng, which, &[]);
            }
        }
        *input = join(&[covmap, covfun]);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        let parts = split(input);
        let (covmap, covfun) = (
            parts.first().map_or(&[][..], Vec::as_slice),
            parts.get(1).map_or(&[][..], Vec::as_slice),
        );
        match covmap::parse_coverage_map(covmap, covfun) {
            Ok(map) => {
                let cov = BinaryCoverage::from_map("fuzz".into(), None, map);
                std::hint::black_box(cov.mapped_lines());
                for p in &self.profiles {
                    let _ = std::hint::black_box(cov.decode(p, true));
                    let _ = std::hint::black_box(cov.decode(p, false));
                }
                Verdict::Decoded
            }
            Err(e) => {
                let early =
                    matches!(e, DecodeError::UnsupportedVersion { .. }) || e.to_string().contains("pre-Version4");
                Verdict::refused(&e, early)
            }
        }
    }
}

/// ELF header and section-header fields: where an object reader trusts offsets and sizes.
fn mutate_elf(rng: &mut Rng, data: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    let shoff = read_u64(data, 0x28).unwrap_or(0) as usize;
    let shnum = data
        .get(0x3c..0x3e)
        .map_or(0, |b| u16::from_le_bytes([b[0], b[1]]) as usize);
    match rng.below(6) {
        0 => {
            let (off, width) = *rng.pick(&[
                (0x20, 8),
                (0x28, 8),
                (0x36, 2),
                (0x38, 2),
                (0x3a, 2),
                (0x3c, 2),
                (0x3e, 2),
            ]);
            let v = interesting(rng, read_u64(data, off).unwrap_or(0) & (u64::MAX >> (64 - 8 * width)));
            write_le(data, off, width, v);
        }
        1..=3 if shnum > 0 => {
            // sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, sh_link, sh_info,
            // sh_addralign, sh_entsize.
            let at = shoff.saturating_add(rng.below(shnum) * 64);
            let (off, width) = *rng.pick(&[
                (0, 4),
                (4, 4),
                (8, 8),
                (16, 8),
                (24, 8),
                (32, 8),
                (40, 4),
                (44, 4),
                (48, 8),
                (56, 8),
            ]);
            let old = read_u64(data, at.saturating_add(off)).unwrap_or(0);
            let v = if rng.one_in(2) {
                old.wrapping_add(rng.below(65) as u64).wrapping_sub(32)
            } else {
                interesting(rng, old)
            };
            write_le(data, at.saturating_add(off), width, v);
        }
        _ => generic(rng, data, corpus),
    }
}

/// The coverage map and build-id read out of a whole binary.
struct Object(Vec<Vec<u8>>);

impl Target for Object {
    fn name(&self) -> &'static str {
        "object"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_elf(rng, input, &self.0);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        match covmap::read_binary(input) {
            Ok(info) => {
                let cov = BinaryCoverage::from_map("fuzz".into(), info.build_id, info.map);
                std::hint::black_box(cov.mapped_lines());
                Verdict::Decoded
            }
            Err(e) => {
                let early = e.to_string().contains("not an object file");
                Verdict::refused(&e, early)
            }
        }
    }
}

/// A binary's SanitizerCoverage tables (flags, relocated PC and control-flow tables, symbols, DWARF).
struct EdgeMapTarget(Vec<Vec<u8>>);

impl Target for EdgeMapTarget {
    fn name(&self) -> &'static str {
        "edge-map"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_elf(rng, input, &self.0);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        let ours = |p: &Path| Some(p.to_string_lossy().into_owned());
        match EdgeMap::parse(input, &ours) {
            Ok(map) => {
                std::hint::black_box(map.functions.len());
                Verdict::Decoded
            }
            Err(e) => {
                let early = matches!(e, MapError::NotAnObject(_));
                Verdict::refused(&e, early)
            }
        }
    }
}

/// The edge file a test process left.
struct Edges(Vec<Vec<u8>>);

impl Target for Edges {
    fn name(&self) -> &'static str {
        "edges"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        let header = read_u64(input, 8).unwrap_or(0) as usize;
        match rng.below(6) {
            0 => {
                // header_size, blocks, offset, mapped.
                let field = 1 + rng.below(4);
                let v = interesting(rng, read_u64(input, field * 8).unwrap_or(0));
                write_le(input, field * 8, 8, v);
            }
            1 | 2 if input.len() > header && header > 0 => {
                let at = header + rng.below(input.len() - header);
                input[at] = *rng.pick(&[0, 1, 0xff]);
            }
            3 if input.len() > 64 => {
                // The executable's path.
                let at = 64 + rng.below(64.min(input.len() - 64));
                input[at] = *rng.pick(&[0, b'/', 0xff, 0xc3]);
            }
            4 => {
                let pages = 1 + rng.below(2);
                if rng.one_in(2) {
                    input.truncate(input.len().saturating_sub(4096 * pages));
                } else {
                    input.resize(input.len() + 4096 * pages, 0);
                }
            }
            _ => generic(rng, input, &self.0),
        }
    }
    fn run(&self, input: &[u8]) -> Verdict {
        match record::parse(input) {
            Ok(f) => {
                std::hint::black_box(f.ran.len());
                Verdict::Decoded
            }
            Err(e) => {
                let early = matches!(e, RecordError::BadMagic | RecordError::NotStarted);
                Verdict::refused(&e, early)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_parts_split_back() {
        let j = join(&[b"ab", b"", b"xyz"]);
        assert_eq!(split(&j), vec![b"ab".to_vec(), vec![], b"xyz".to_vec()]);
    }

    #[test]
    fn error_kinds_blank_numbers_and_quotes() {
        assert_eq!(
            kind_of("matrix.txt line 12: cell 3 is \"x\", expected 0"),
            "matrix.txt line N: cell N is \"…\", expected N"
        );
    }
}
