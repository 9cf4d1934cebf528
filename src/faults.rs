//! Known faults (`faults.toml`), for `cargo sfl eval` and the fault benchmark.
//!
//! ```toml
//! [[fault]]
//! file = "src/lib.rs"   # relative to the workspace root
//! lines = [10, 11]      # the lines of one fault
//! name = "swapped bounds"   # optional
//! ```
//! A file can list several faults (a multi-fault version). A fault is found when any of its
//! lines is inspected.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// One fault: the lines that make it up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fault {
    pub file: String,
    pub lines: Vec<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultsFile {
    #[serde(default)]
    fault: Vec<Fault>,
}

/// What is wrong with a faults file.
#[derive(Debug, thiserror::Error)]
pub enum FaultsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Invalid {
        path: std::path::PathBuf,
        source: Box<FaultsError>,
    },
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    #[error("no [[fault]] entries")]
    NoFaults,
    #[error("fault in {0} needs 1-based `lines`")]
    BadLines(String),
    #[error("fault file {0:?} must be relative to the workspace root, without `..`")]
    OutsideWorkspace(String),
    #[error("fault file {file} does not exist in the workspace ({})", root.display())]
    NoSuchFile { file: String, root: std::path::PathBuf },
    #[error("fault line {line} is past the end of {file} ({lines} lines)")]
    PastEnd { file: String, line: u32, lines: usize },
}

/// Reads a faults file; the error says what is wrong.
pub fn load(path: &Path) -> Result<Vec<Fault>, FaultsError> {
    let text = std::fs::read_to_string(path).map_err(|source| FaultsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text).map_err(|e| FaultsError::Invalid {
        path: path.to_path_buf(),
        source: Box::new(e),
    })
}

pub fn parse(text: &str) -> Result<Vec<Fault>, FaultsError> {
    let file: FaultsFile = toml::from_str(text)?;
    if file.fault.is_empty() {
        return Err(FaultsError::NoFaults);
    }
    for f in &file.fault {
        if f.lines.is_empty() || f.lines.contains(&0) {
            return Err(FaultsError::BadLines(f.file.clone()));
        }
        let path = Path::new(&f.file);
        if !path.is_relative() || path.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return Err(FaultsError::OutsideWorkspace(f.file.clone()));
        }
    }
    Ok(file.fault)
}

/// Checks that every fault names a file of the workspace at `root` and lines inside it: a
/// typo must be an input error, not "no test ran it" (which reads as an omission fault).
pub fn check_against(faults: &[Fault], root: &Path) -> Result<(), FaultsError> {
    for f in faults {
        let text = std::fs::read_to_string(root.join(&f.file)).map_err(|_| FaultsError::NoSuchFile {
            file: f.file.clone(),
            root: root.to_path_buf(),
        })?;
        let lines = text.lines().count();
        if let Some(&line) = f.lines.iter().find(|&&l| l as usize > lines) {
            return Err(FaultsError::PastEnd {
                file: f.file.clone(),
                line,
                lines,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_faults_and_refuses_bad_ones() {
        let f = parse("[[fault]]\nfile = \"src/lib.rs\"\nlines = [10, 11]\n[[fault]]\nfile = \"a.rs\"\nlines = [3]\nname = \"x\"\n").unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[1].name.as_deref(), Some("x"));
        assert!(parse("").unwrap_err().to_string().contains("no [[fault]]"));
        assert!(parse("[[fault]]\nfile = \"a.rs\"\nlines = []\n").is_err());
        assert!(parse("[[fault]]\nfile = \"a.rs\"\nline = [1]\n").is_err());
        for outside in ["/etc/passwd", "../x.rs", "src/../../x.rs", "./src/lib.rs"] {
            let e = parse(&format!("[[fault]]\nfile = \"{outside}\"\nlines = [1]\n")).unwrap_err();
            assert!(matches!(e, FaultsError::OutsideWorkspace(_)), "{outside}: {e}");
        }
    }

    #[test]
    fn faults_must_name_lines_that_exist() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("src")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), "a\nb\nc\n").unwrap();
        let fault = |file: &str, line| Fault {
            file: file.into(),
            lines: vec![line],
            name: None,
        };
        assert!(check_against(&[fault("src/lib.rs", 3)], root.path()).is_ok());
        let past = check_against(&[fault("src/lib.rs", 4)], root.path()).unwrap_err();
        assert_eq!(past.to_string(), "fault line 4 is past the end of src/lib.rs (3 lines)");
        let missing = check_against(&[fault("src/nope.rs", 1)], root.path()).unwrap_err();
        assert!(matches!(missing, FaultsError::NoSuchFile { .. }), "{missing}");
    }
}
