//! Reads the edge file one test process left: which of its executable's blocks ran (flags
//! written by `runtime.c` through a shared mapping, so complete up to the moment the process
//! died). The edges follow from these and the binary's control-flow graph ([`super::cfg`]).

use std::path::{Path, PathBuf};

const MAGIC: u64 = u64::from_le_bytes(*b"SFLEDGE2");
const PATH_MAX: usize = 4096;
/// magic, header_size, blocks, offset, mapped, pad_linked, 2 reserved, exe path.
const HEADER: usize = 8 * 8 + PATH_MAX;

/// One process's blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct EdgeFile {
    /// The executable that wrote it.
    pub exe: PathBuf,
    /// Blocks of that executable.
    pub blocks: u64,
    /// Per block (in PC-table order), whether it ran.
    pub ran: Vec<bool>,
}

/// What is wrong with an edge file.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the process ended before its edge recorder started")]
    NotStarted,
    #[error("not a cargo sfl edge file (bad magic)")]
    BadMagic,
    #[error(
        "edge file of an unknown layout (header {header} bytes, {blocks} blocks at {offset} of {mapped} bytes, {len} bytes in all)"
    )]
    UnknownLayout {
        header: u64,
        blocks: u64,
        offset: u64,
        mapped: u64,
        len: usize,
    },
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
    let word = |i: usize| -> u64 {
        bytes
            .get(8 * i..8 * i + 8)
            .map_or(0, |b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
    };
    match word(0) {
        MAGIC => {}
        0 if bytes.len() >= 8 => return Err(RecordError::NotStarted),
        _ => return Err(RecordError::BadMagic),
    }
    let (header, blocks, offset, mapped) = (word(1), word(2), word(3), word(4));
    let flags = header
        .checked_add(offset)
        .and_then(|start| Some((start, start.checked_add(blocks)?)));
    let fits = header.checked_add(mapped) == Some(bytes.len() as u64)
        && header >= HEADER as u64
        && offset.checked_add(blocks).is_some_and(|end| end <= mapped);
    let Some((start, end)) = flags.filter(|_| fits) else {
        return Err(RecordError::UnknownLayout {
            header,
            blocks,
            offset,
            mapped,
            len: bytes.len(),
        });
    };
    let path = &bytes[64..HEADER];
    let len = path.iter().position(|&b| b == 0).unwrap_or(PATH_MAX);
    let exe = PathBuf::from(String::from_utf8_lossy(&path[..len]).into_owned());
    let ran = bytes[start as usize..end as usize].iter().map(|&f| f != 0).collect();
    Ok(EdgeFile { exe, blocks, ran })
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

    const PAGE: usize = 8192;

    fn file(blocks: u64, offset: u64, ran: &[u64]) -> Vec<u8> {
        let mapped = 4096u64;
        let mut b = Vec::new();
        for w in [MAGIC, PAGE as u64, blocks, offset, mapped, 0, 0, 0] {
            b.extend(w.to_ne_bytes());
        }
        b.extend(b"/bin/x");
        b.resize(PAGE + mapped as usize, 0);
        for &r in ran {
            b[PAGE + (offset + r) as usize] = 1;
        }
        b
    }

    #[test]
    fn reads_flags_and_header() {
        let f = parse(&file(5, 16, &[0, 3])).unwrap();
        assert_eq!(f.ran, vec![true, false, false, true, false]);
        assert_eq!(f.blocks, 5);
        assert_eq!(f.exe, PathBuf::from("/bin/x"));
    }

    #[test]
    fn refuses_foreign_unstarted_and_truncated() {
        let err = |bytes: &[u8]| parse(bytes).unwrap_err().to_string();
        assert!(err(b"garbage!").contains("bad magic"));
        assert!(err(b"gar").contains("bad magic"));
        assert!(err(&[0u8; 64]).contains("before its edge recorder started"));
        let mut short = file(5, 0, &[]);
        short.truncate(short.len() - 8);
        assert!(err(&short).contains("unknown layout"));
        assert!(err(&file(5000, 0, &[])).contains("unknown layout"));
    }

    /// Sizes near 2^64 must not wrap into a layout that seems to fit.
    #[test]
    fn offsets_whose_sum_overflows_are_refused() {
        let mut f = file(5, 0, &[]);
        f[24..32].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(matches!(parse(&f), Err(RecordError::UnknownLayout { .. })));
        let mut f = file(5, 0, &[]);
        f[8..16].copy_from_slice(&(u64::MAX - 10).to_ne_bytes());
        assert!(matches!(parse(&f), Err(RecordError::UnknownLayout { .. })));
    }
}
