//! Reads one raw LLVM profile (`.profraw`, version 10) without copying its counters.
//!
//! Refs: llvm/include/llvm/ProfileData/InstrProfData.inc (INSTR_PROF_RAW_HEADER,
//! INSTR_PROF_DATA), llvm/lib/ProfileData/InstrProfReader.cpp (`RawInstrProfReader`) @ llvmorg-22.
//! A continuous-mode (`%c`) profile has the same layout, with page-aligned counters.

use std::borrow::Cow;

use crate::error::DecodeError;

/// `\xfflprofr\x81` read as a little-endian u64 (64-bit producer).
pub const MAGIC: u64 = 0xff6c_7072_6f66_7281;
const VERSION: u64 = 10;
const HEADER_FIELDS: usize = 16;
const DATA_RECORD_SIZE: u64 = 64;
/// Flag bit (in the version word) for single-byte counters, which rustc never emits.
const VARIANT_MASK_BYTE_COVERAGE: u64 = 1 << 60;

/// One function's entry in the profile.
#[derive(Clone, Copy, Debug)]
pub struct DataRecord {
    pub name_ref: u64,
    pub func_hash: u64,
    /// Index of the function's first counter in the counters section.
    pub first_counter: usize,
    pub num_counters: usize,
}

/// A parsed profile, borrowing the file's bytes.
pub struct RawProfile<'a> {
    pub binary_ids: Vec<&'a [u8]>,
    /// Its own, or a [`Template`]'s.
    pub records: Cow<'a, [DataRecord]>,
    counters: &'a [u8],
}

impl<'a> RawProfile<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        let h = header(bytes)?;
        let (binary_ids_size, num_data, pad_before_counters, num_counters) = (h[2], h[3], h[4], h[5]);
        let counters_delta = h[10];

        let too_big = || DecodeError::malformed("profile header sizes exceed the file");
        let mut pos: u64 = (HEADER_FIELDS * 8) as u64;
        let ids_end = pos.checked_add(binary_ids_size).ok_or_else(too_big)?;
        let slice = |from: u64, to: u64| -> Result<&'a [u8], DecodeError> {
            if to > bytes.len() as u64 || from > to {
                return Err(too_big());
            }
            Ok(&bytes[from as usize..to as usize])
        };
        let binary_ids = binary_ids(slice(pos, ids_end)?)?;
        pos = ids_end;
        let data_end = num_data
            .checked_mul(DATA_RECORD_SIZE)
            .and_then(|d| d.checked_add(pos))
            .ok_or_else(too_big)?;
        let data = slice(pos, data_end)?;
        let counters_start = data_end.checked_add(pad_before_counters).ok_or_else(too_big)?;
        let counters_end = num_counters
            .checked_mul(8)
            .and_then(|c| c.checked_add(counters_start))
            .ok_or_else(too_big)?;
        let counters = slice(counters_start, counters_end)?;
        Ok(RawProfile {
            binary_ids,
            records: Cow::Owned(records(data, num_data, counters_delta, num_counters)?),
            counters,
        })
    }

    /// The value of counter `i` of the whole counters section.
    #[inline]
    pub fn counter(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.counters[i * 8..i * 8 + 8].try_into().unwrap())
    }

    /// True if every counter of `rec` is zero (the function never ran).
    pub fn all_zero(&self, rec: &DataRecord) -> bool {
        self.counters[rec.first_counter * 8..(rec.first_counter + rec.num_counters) * 8]
            .iter()
            .all(|&b| b == 0)
    }
}

/// What every forked test of one binary shares: the records of a profile its fork server wrote
/// (`<exe>.sfl-template.profraw`, [`TEMPLATE_SUFFIX`]), whose counters are then each test's
/// counters file (the counters section alone, as the test's process mapped it).
pub struct Template {
    binary_ids: Vec<Vec<u8>>,
    records: Vec<DataRecord>,
    num_counters: usize,
}

/// Appended to an executable's path: the template its fork server writes.
pub const TEMPLATE_SUFFIX: &str = ".sfl-template.profraw";

impl Template {
    pub fn parse(bytes: &[u8]) -> Result<Template, DecodeError> {
        let p = RawProfile::parse(bytes)?;
        Ok(Template {
            binary_ids: p.binary_ids.iter().map(|id| id.to_vec()).collect(),
            num_counters: p.counters.len() / 8,
            records: p.records.into_owned(),
        })
    }

    /// The profile of a test whose counters section is `counters`.
    pub fn profile<'a>(&'a self, counters: &'a [u8]) -> Result<RawProfile<'a>, DecodeError> {
        if counters.is_empty() {
            return Err(DecodeError::EmptyProfile);
        }
        if counters.len() != self.num_counters * 8 {
            return Err(DecodeError::malformed(
                "counters file and its binary's profile disagree on the number of counters",
            ));
        }
        Ok(RawProfile {
            binary_ids: self.binary_ids.iter().map(Vec::as_slice).collect(),
            records: Cow::Borrowed(&self.records),
            counters,
        })
    }
}

/// The header's words, checked: the magic, the version, and the counters' width.
fn header(bytes: &[u8]) -> Result<[u64; HEADER_FIELDS], DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::EmptyProfile);
    }
    if bytes.len() < HEADER_FIELDS * 8 {
        return Err(DecodeError::malformed("profile shorter than its header"));
    }
    let h: [u64; HEADER_FIELDS] =
        std::array::from_fn(|i| u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().unwrap()));
    if h[0] != MAGIC {
        if h[0] == MAGIC.swap_bytes() {
            return Err(DecodeError::malformed("big-endian profile"));
        }
        return Err(DecodeError::NotAProfile);
    }
    let version_word = h[1];
    let version = version_word & 0xffff_ffff;
    if version != VERSION {
        return Err(DecodeError::UnsupportedVersion {
            what: "raw profile",
            found: version,
        });
    }
    if version_word & VARIANT_MASK_BYTE_COVERAGE != 0 {
        return Err(DecodeError::malformed("single-byte counters are not supported"));
    }
    Ok(h)
}

/// The binary ids section's ids (each a length, then its bytes padded to 8).
fn binary_ids(ids: &[u8]) -> Result<Vec<&[u8]>, DecodeError> {
    let mut binary_ids = Vec::new();
    let mut i = 0usize;
    while i + 8 <= ids.len() {
        let len = u64::from_le_bytes(ids[i..i + 8].try_into().unwrap()) as usize;
        let start = i + 8;
        let end = start
            .checked_add(len)
            .filter(|&e| e <= ids.len())
            .ok_or_else(|| DecodeError::malformed("binary id runs past its section"))?;
        binary_ids.push(&ids[start..end]);
        i = (end + 7) & !7;
    }
    Ok(binary_ids)
}

/// The data section's records (`num_data` of them), each with its counters placed in the
/// counters section (`num_counters` long, `counters_delta` from the header).
fn records(data: &[u8], num_data: u64, counters_delta: u64, num_counters: u64) -> Result<Vec<DataRecord>, DecodeError> {
    let mut records = Vec::with_capacity(num_data as usize);
    for (idx, rec) in data.chunks_exact(DATA_RECORD_SIZE as usize).enumerate() {
        let f = |o: usize| u64::from_le_bytes(rec[o..o + 8].try_into().unwrap());
        let counter_ptr = f(16);
        let n = u32::from_le_bytes(rec[48..52].try_into().unwrap()) as usize;
        // CounterPtr is relative to the record's own address (profile version ≥ 8).
        let offset = counter_ptr
            .wrapping_add(idx as u64 * DATA_RECORD_SIZE)
            .wrapping_sub(counters_delta);
        if offset % 8 != 0 || offset / 8 + n as u64 > num_counters {
            return Err(DecodeError::malformed(
                "a function's counters lie outside the counters section",
            ));
        }
        records.push(DataRecord {
            name_ref: f(0),
            func_hash: f(8),
            first_counter: (offset / 8) as usize,
            num_counters: n,
        });
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a minimal v10 profile with one record and the given counters.
    pub(crate) fn synthetic(build_id: &[u8], name_ref: u64, hash: u64, counters: &[u64]) -> Vec<u8> {
        let mut ids = Vec::new();
        ids.extend_from_slice(&(build_id.len() as u64).to_le_bytes());
        ids.extend_from_slice(build_id);
        while ids.len() % 8 != 0 {
            ids.push(0);
        }
        let header = [
            MAGIC,
            VERSION,
            ids.len() as u64,
            1,
            0,
            counters.len() as u64,
            0,
            0,
            0,
            0,
            // CountersDelta: counters begin right after the one data record.
            DATA_RECORD_SIZE,
            0,
            0,
            0,
            0,
            1,
        ];
        let mut out: Vec<u8> = header.iter().flat_map(|v| v.to_le_bytes()).collect();
        out.extend_from_slice(&ids);
        let mut rec = [0u8; 64];
        rec[0..8].copy_from_slice(&name_ref.to_le_bytes());
        rec[8..16].copy_from_slice(&hash.to_le_bytes());
        rec[16..24].copy_from_slice(&DATA_RECORD_SIZE.to_le_bytes());
        rec[48..52].copy_from_slice(&(counters.len() as u32).to_le_bytes());
        out.extend_from_slice(&rec);
        for c in counters {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out
    }

    #[test]
    fn parses_a_synthetic_profile() {
        let bytes = synthetic(b"\x01\x02\x03", 42, 7, &[5, 0, 9]);
        let p = RawProfile::parse(&bytes).unwrap();
        assert_eq!(p.binary_ids, vec![&b"\x01\x02\x03"[..]]);
        assert_eq!(p.records.len(), 1);
        assert_eq!((p.records[0].name_ref, p.records[0].func_hash), (42, 7));
        assert_eq!((p.counter(0), p.counter(1), p.counter(2)), (5, 0, 9));
        assert!(!p.all_zero(&p.records[0]));
    }

    #[test]
    fn rejects_empty_truncated_and_foreign_files() {
        assert!(matches!(RawProfile::parse(&[]), Err(DecodeError::EmptyProfile)));
        let bytes = synthetic(b"id", 1, 1, &[1, 2]);
        assert!(RawProfile::parse(&bytes[..bytes.len() - 4]).is_err());
        assert!(matches!(RawProfile::parse(&[0u8; 200]), Err(DecodeError::NotAProfile)));
        let mut v9 = bytes.clone();
        v9[8] = 9;
        assert!(matches!(
            RawProfile::parse(&v9),
            Err(DecodeError::UnsupportedVersion { found: 9, .. })
        ));
    }

    #[test]
    fn a_template_takes_a_tests_counters() {
        let bytes = synthetic(b"\x01\x02", 42, 7, &[0, 0, 0]);
        let t = Template::parse(&bytes).unwrap();
        let counters: Vec<u8> = [5u64, 0, 9].iter().flat_map(|c| c.to_le_bytes()).collect();
        let p = t.profile(&counters).unwrap();
        assert_eq!(p.binary_ids, vec![&b"\x01\x02"[..]]);
        assert_eq!((p.records[0].name_ref, p.records[0].first_counter), (42, 0));
        assert_eq!((p.counter(0), p.counter(1), p.counter(2)), (5, 0, 9));
        // The same as the whole profile with those counters.
        let whole = synthetic(b"\x01\x02", 42, 7, &[5, 0, 9]);
        let w = RawProfile::parse(&whole).unwrap();
        assert_eq!(
            (w.counter(0), w.counter(2), w.records[0].num_counters),
            (5, 9, p.records[0].num_counters)
        );
        // A counters file of another length is another binary's (or cut short).
        assert!(t.profile(&counters[..16]).is_err());
        assert!(matches!(t.profile(&[]), Err(DecodeError::EmptyProfile)));
    }

    #[test]
    fn rejects_counters_outside_the_section() {
        let mut bytes = synthetic(b"id", 1, 1, &[1]);
        let rec = 128 + 8 + 8; // header + id length + padded id
        bytes[rec + 48] = 5; // claims five counters
        assert!(RawProfile::parse(&bytes).is_err());
    }
}
