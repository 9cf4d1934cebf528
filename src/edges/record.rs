//! Reads the edge file one test process left (written by `runtime.c` through a shared
//! mapping, so it is complete up to the moment the process died).

use std::path::{Path, PathBuf};

const MAGIC: u64 = u64::from_le_bytes(*b"SFLEDGE1");
const PATH_MAX: usize = 4096;
/// magic, header_size, guards, slots, dropped, 3 reserved, exe path.
const HEADER: usize = 8 * 8 + PATH_MAX;

/// One process's edges.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeFile {
    /// The executable that wrote it.
    pub exe: PathBuf,
    /// Blocks of that executable.
    pub guards: u64,
    /// Edges the recorder could not keep (its table full, or recursion deeper than it tracks).
    pub dropped: u64,
    /// `(from, to)` guards (1-based); `from == 0` is the virtual edge into an entry block.
    pub edges: Vec<(u32, u32)>,
}

/// What is wrong with an edge file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the process ended before its edge recorder started")]
    NotStarted,
    #[error("not a cargo sfl edge file (bad magic)")]
    BadMagic,
    #[error("edge file of an unknown layout (header {header} bytes, {slots} slots, {len} bytes)")]
    UnknownLayout { header: usize, slots: u64, len: usize },
    #[error("edge {from}→{to} outside the {guards} blocks of the binary")]
    OutOfRange { from: u32, to: u32, guards: u64 },
}

/// Why an edge file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{name}: {source}")]
    Invalid { name: String, source: RecordError },
}

/// Parses an edge file; errors say what is wrong with it.
pub fn parse(bytes: &[u8]) -> Result<EdgeFile, RecordError> {
    let word = |i: usize| -> Option<u64> {
        bytes
            .get(8 * i..8 * i + 8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    match word(0) {
        Some(MAGIC) => {}
        Some(0) => return Err(RecordError::NotStarted),
        _ => return Err(RecordError::BadMagic),
    }
    let header = word(1).unwrap_or(0) as usize;
    let (guards, slots, dropped) = (word(2).unwrap_or(0), word(3).unwrap_or(0), word(4).unwrap_or(0));
    let expected_len = slots.checked_mul(8).and_then(|t| t.checked_add(HEADER as u64));
    if header != HEADER || !slots.is_power_of_two() || expected_len != Some(bytes.len() as u64) {
        return Err(RecordError::UnknownLayout {
            header,
            slots,
            len: bytes.len(),
        });
    }
    let path = &bytes[64..HEADER];
    let len = path.iter().position(|&b| b == 0).unwrap_or(PATH_MAX);
    let exe = PathBuf::from(String::from_utf8_lossy(&path[..len]).into_owned());
    let mut edges = Vec::new();
    for c in bytes[HEADER..].chunks_exact(8) {
        let key = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
        if key == 0 {
            continue;
        }
        let (from, to) = ((key >> 32) as u32, key as u32);
        if to == 0 || u64::from(to) > guards || u64::from(from) > guards {
            return Err(RecordError::OutOfRange { from, to, guards });
        }
        edges.push((from, to));
    }
    edges.sort_unstable();
    Ok(EdgeFile {
        exe,
        guards,
        dropped,
        edges,
    })
}

/// Reads and parses `path`.
pub fn read(path: &Path) -> Result<EdgeFile, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&bytes).map_err(|source| ReadError::Invalid {
        name: path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(guards: u64, slots: u64, keys: &[(u64, u64)]) -> Vec<u8> {
        let mut b = Vec::new();
        for w in [MAGIC, HEADER as u64, guards, slots, 3, 0, 0, 0] {
            b.extend(w.to_ne_bytes());
        }
        let mut path = b"/bin/x".to_vec();
        path.resize(PATH_MAX, 0);
        b.extend(path);
        let mut table = vec![0u64; slots as usize];
        for &(slot, key) in keys {
            table[slot as usize] = key;
        }
        for k in table {
            b.extend(k.to_ne_bytes());
        }
        b
    }

    #[test]
    fn reads_edges_and_header() {
        let f = parse(&file(5, 8, &[(6, (2 << 32) | 3), (1, 1)])).unwrap();
        assert_eq!(f.edges, vec![(0, 1), (2, 3)]);
        assert_eq!((f.guards, f.dropped), (5, 3));
        assert_eq!(f.exe, PathBuf::from("/bin/x"));
    }

    #[test]
    fn refuses_foreign_truncated_and_out_of_range() {
        let err = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
        assert!(err(b"garbage!").contains("bad magic"));
        assert!(err(&[0u8; 64]).contains("before its edge recorder started"));
        let mut short = file(5, 8, &[]);
        short.truncate(short.len() - 8);
        assert!(err(&short).contains("unknown layout"));
        assert!(err(&file(5, 8, &[(0, (9 << 32) | 1)])).contains("outside"));
    }

    /// Found by `cargo xtask fuzz` (edges): 2^61 slots of 8 bytes wrap around to a table of
    /// zero bytes, so a bare header passed the size check (and overflowed in a debug build).
    #[test]
    fn a_slot_count_whose_table_size_overflows_is_refused() {
        let mut bare = file(5, 8, &[]);
        bare.truncate(HEADER);
        bare[24..32].copy_from_slice(&(1u64 << 61).to_ne_bytes());
        assert!(matches!(parse(&bare), Err(RecordError::UnknownLayout { .. })));
    }
}
