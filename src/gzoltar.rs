//! Imports GZoltar's exchange format (`sfl/txt/` as GZoltar 1.7 writes it; flitsr and many
//! papers' data use the same files), so any matrix can be ranked with every measure.
//!
//! - `matrix.txt` (or the older `matrix`): one line per test, space-separated 0/1 per unit,
//!   then `+` (passed) or `-` (failed).
//! - `spectra.csv` (a `name` header line, then one unit name per line) or the older
//!   header-less `spectra`.
//! - `tests.csv` (optional): a header, then `name,outcome,…` per test, in matrix order.

use std::path::Path;

use crate::spectra::{Outcome, Spectra, TestRecord, Unit, UnitId};
use GzoltarError::Malformed;

/// What is wrong with a GZoltar directory: which file, and which line of it.
#[derive(Debug, thiserror::Error)]
pub enum GzoltarError {
    #[error("not a directory")]
    NotADirectory,
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("no spectra.csv (or spectra) file with the unit names")]
    NoSpectraFile,
    #[error("no matrix.txt (or matrix) file")]
    NoMatrixFile,
    /// The files disagree with the format or with each other.
    #[error("{0}")]
    Malformed(String),
}

fn read_first(dir: &Path, names: &[&str]) -> Result<Option<(String, String)>, GzoltarError> {
    for name in names {
        let path = dir.join(name);
        if path.is_file() {
            let text = std::fs::read_to_string(&path).map_err(|source| GzoltarError::Read { path, source })?;
            return Ok(Some((name.to_string(), text)));
        }
    }
    Ok(None)
}

/// The texts of a GZoltar directory's files, each with the name it was read under
/// (`spectra.csv` or `spectra`, `matrix.txt` or `matrix`).
pub struct Texts<'a> {
    pub spectra: (&'a str, &'a str),
    pub matrix: (&'a str, &'a str),
    /// `tests.csv`, when there is one.
    pub tests: Option<&'a str>,
}

/// Reads a GZoltar directory into spectra; the error says which file and line is wrong.
pub fn load(dir: &Path) -> Result<Spectra, GzoltarError> {
    if !dir.is_dir() {
        return Err(GzoltarError::NotADirectory);
    }
    let (spectra_file, spectra_text) =
        read_first(dir, &["spectra.csv", "spectra"])?.ok_or(GzoltarError::NoSpectraFile)?;
    let (matrix_file, matrix_text) = read_first(dir, &["matrix.txt", "matrix"])?.ok_or(GzoltarError::NoMatrixFile)?;
    let tests = read_first(dir, &["tests.csv"])?;
    let texts = Texts {
        spectra: (&spectra_file, &spectra_text),
        matrix: (&matrix_file, &matrix_text),
        tests: tests.as_ref().map(|(_, text)| text.as_str()),
    };
    parse(dir.to_string_lossy().into_owned(), &texts)
}

/// [`load`] on the files' texts; `root` becomes the spectra's workspace root.
pub fn parse(root: String, texts: &Texts) -> Result<Spectra, GzoltarError> {
    let ((spectra_file, spectra_text), (matrix_file, matrix_text)) = (texts.spectra, texts.matrix);
    let units = unit_names(spectra_file, spectra_text)?;
    let (outcomes, covered) = matrix_rows(matrix_file, matrix_text, spectra_file, units.len())?;
    let tests = test_names(texts.tests, matrix_file, outcomes.len())?
        .into_iter()
        .zip(outcomes)
        .map(|(name, outcome)| TestRecord::new("gzoltar", name, outcome))
        .collect();
    Ok(Spectra::from_tests(root, tests, units, &covered))
}

/// The units named by `spectra.csv` (after its `name` header) or the older `spectra`.
fn unit_names(spectra_file: &str, spectra_text: &str) -> Result<Vec<Unit>, GzoltarError> {
    let mut names: Vec<&str> = spectra_text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if spectra_file == "spectra.csv" && names.first() == Some(&"name") {
        names.remove(0);
    }
    if names.is_empty() {
        return Err(Malformed(format!("{spectra_file} names no units")));
    }
    Ok(names.iter().map(|n| Unit::named(*n)).collect())
}

/// Each matrix line's outcome and the units it covered.
fn matrix_rows(
    matrix_file: &str,
    matrix_text: &str,
    spectra_file: &str,
    units: usize,
) -> Result<(Vec<Outcome>, Vec<Vec<UnitId>>), GzoltarError> {
    let mut outcomes = Vec::new();
    let mut covered: Vec<Vec<UnitId>> = Vec::new();
    for (i, line) in matrix_text.lines().enumerate() {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some((verdict, cells)) = tokens.split_last() else {
            continue;
        };
        let at = || format!("{matrix_file} line {}", i + 1);
        let outcome = match *verdict {
            "+" => Outcome::Passed,
            "-" => Outcome::Failed,
            other => {
                return Err(Malformed(format!(
                    "{}: ends in {other:?}, expected + (passed) or - (failed)",
                    at()
                )));
            }
        };
        if cells.len() != units {
            return Err(Malformed(format!(
                "{}: {} cells, but {spectra_file} names {units} units",
                at(),
                cells.len(),
            )));
        }
        let mut row = Vec::new();
        for (u, cell) in cells.iter().enumerate() {
            match *cell {
                "0" => {}
                "1" => row.push(UnitId(u as u32)),
                other => {
                    return Err(Malformed(format!(
                        "{}: cell {} is {other:?}, expected 0 or 1",
                        at(),
                        u + 1
                    )));
                }
            }
        }
        outcomes.push(outcome);
        covered.push(row);
    }
    if outcomes.is_empty() {
        return Err(Malformed(format!("{matrix_file} has no tests")));
    }
    Ok((outcomes, covered))
}

/// The tests' names from `tests.csv`, in matrix order, or `t1`, `t2`, … without one.
fn test_names(tests_csv: Option<&str>, matrix_file: &str, rows: usize) -> Result<Vec<String>, GzoltarError> {
    let Some(text) = tests_csv else {
        return Ok((1..=rows).map(|i| format!("t{i}")).collect());
    };
    let names: Vec<String> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').next().unwrap_or("").to_string())
        .collect();
    if names.len() != rows {
        return Err(Malformed(format!(
            "tests.csv names {} tests but {matrix_file} has {rows} rows",
            names.len(),
        )));
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(d.path().join(name), text).unwrap();
        }
        d
    }

    #[test]
    fn reads_gzoltar_17_files_with_test_names() {
        let d = dir(&[
            ("spectra.csv", "name\na.B#m():1\na.B#m():2\n"),
            ("matrix.txt", "1 0 -\n1 1 +\n"),
            (
                "tests.csv",
                "name,outcome,runtime,stacktrace\na.T#t1,FAIL,1,x\na.T#t2,PASS,1,\n",
            ),
        ]);
        let s = load(d.path()).unwrap();
        assert_eq!(s.units[1].name(), Some("a.B#m():2"));
        assert_eq!(s.tests[0].name, "a.T#t1");
        assert_eq!(s.tests[0].outcome, Outcome::Failed);
        assert_eq!(s.counts()[0], crate::measures::Counts::new(1, 1, 0, 0));
    }

    #[test]
    fn reads_the_older_headerless_files() {
        let d = dir(&[("spectra", "u1\nu2\n"), ("matrix", "0 1 -\n")]);
        let s = load(d.path()).unwrap();
        assert_eq!((s.units.len(), s.tests[0].name.as_str()), (2, "t1"));
    }

    #[test]
    fn malformed_input_names_the_file_and_line() {
        let d = dir(&[("spectra.csv", "name\nu1\nu2\n"), ("matrix.txt", "1 0 -\n1 +\n")]);
        let e = load(d.path()).unwrap_err().to_string();
        assert!(e.contains("matrix.txt line 2") && e.contains("1 cells"), "{e}");
        let d = dir(&[("spectra.csv", "name\nu1\n"), ("matrix.txt", "1 x\n")]);
        assert!(
            load(d.path())
                .unwrap_err()
                .to_string()
                .contains("expected + (passed) or - (failed)")
        );
        let d = dir(&[("matrix.txt", "1 -\n")]);
        assert!(load(d.path()).unwrap_err().to_string().contains("no spectra.csv"));
    }
}
