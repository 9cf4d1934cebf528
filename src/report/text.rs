//! How the reports write scores, tests and line spans.

use std::fmt;

use super::model::Entry;
use crate::measures::Measure;
use crate::spectra::{TestRecord, Unit};

/// Lines whose entry ranks this high (or higher) are warnings; the other shown lines notes.
pub const WARNING_RANKS: f64 = 5.0;

/// The severity every editor format gives a shown line whose entry ranks `rank`: `warning`
/// within [`WARNING_RANKS`], else `note` (cargo's JSON, `--format short` and SARIF alike).
pub fn level(rank: f64) -> &'static str {
    if rank <= WARNING_RANKS { "warning" } else { "note" }
}

/// A score as the human report, SARIF messages and `--fail-on` show it.
pub fn fmt_score(m: &Measure, x: &Entry) -> String {
    let Some(s) = x.shown_score() else {
        return "unscored".into();
    };
    if m.is_probability() && s < 1e-4 {
        // A probability too small for four decimals: scientific notation, or its log10 when
        // it underflows f64 altogether.
        return if s > 0.0 {
            format!("{s:.2e}")
        } else {
            match x.log10 {
                Some(l) if l > -1e300 => format!("10^{l:.1}"),
                _ => "0".into(),
            }
        };
    }
    if s.abs() == f64::MAX {
        if s > 0.0 { "max".into() } else { "-max".into() }
    } else if s.abs() >= 1e6 {
        format!("{s:.2e}")
    } else {
        format!("{s:.4}")
    }
}

/// A test as the reports name it: `binary name`.
pub fn test_label(t: &TestRecord) -> String {
    format!("{} {}", t.binary, t.name)
}

/// A run of consecutive units' lines, `start..=end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineSpan {
    pub start: u32,
    pub end: u32,
}

/// `7`, or `3-5`.
impl fmt::Display for LineSpan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.start == self.end {
            write!(f, "{}", self.start)
        } else {
            write!(f, "{}-{}", self.start, self.end)
        }
    }
}

/// A group's spans in one file, in unit order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSpans<'a> {
    pub file: &'a str,
    pub spans: Vec<LineSpan>,
}

impl FileSpans<'_> {
    /// The spans as the reports list them: `3-5,7`.
    pub fn runs(&self) -> String {
        self.spans.iter().map(LineSpan::to_string).collect::<Vec<_>>().join(",")
    }
}

/// Line spans of a group's units, by file: units adjacent in the unit table and in the file
/// (same file, next index, next line) form one span. A file appears again when the group leaves it and comes back.
pub fn spans<'a>(units: &[usize], all: &'a [Unit]) -> Vec<FileSpans<'a>> {
    let mut out: Vec<FileSpans<'a>> = Vec::new();
    let mut prev: Option<usize> = None;
    for &u in units {
        let unit = &all[u];
        // Next in the table and on the next line: a span never covers a line (blank, a
        // comment, a brace) that is not in the group.
        let contiguous = prev.is_some_and(|p| p + 1 == u && all[p].file == unit.file && all[p].line + 1 == unit.line);
        let single = LineSpan {
            start: unit.line,
            end: unit.line,
        };
        match out.last_mut() {
            Some(fs) if fs.file == unit.file && contiguous => fs.spans.last_mut().expect("non-empty").end = unit.line,
            Some(fs) if fs.file == unit.file => fs.spans.push(single),
            _ => out.push(FileSpans {
                file: &unit.file,
                spans: vec![single],
            }),
        }
        prev = Some(u);
    }
    out
}

/// Whether `file` (as the coverage maps name it) is in a build script's output directory:
/// `…/build/PACKAGE-HASH/out/…` under a target directory.
pub(crate) fn written_by_build_script(file: &str) -> bool {
    let parts: Vec<&str> = file.split(['/', '\\']).collect();
    parts.windows(3).any(|w| {
        w[0] == "build"
            && w[2] == "out"
            && w[1]
                .rsplit_once('-')
                .is_some_and(|(_, hash)| hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(file: &str, line: u32) -> Unit {
        Unit {
            file: file.into(),
            line,
        }
    }

    #[test]
    fn spans_cover_only_the_groups_lines() {
        let unit = |line| Unit {
            file: "src/lib.rs".into(),
            line,
        };
        // Lines 4, 5 and 7 are next to each other in the unit table (line 6 is blank).
        let all = vec![unit(4), unit(5), unit(7), unit(9)];
        let fs = spans(&[0, 1, 2, 3], &all);
        assert_eq!(fs[0].runs(), "4-5,7,9");
    }

    #[test]
    fn adjacent_units_form_spans_per_file() {
        let all = vec![
            unit("a.rs", 3),
            unit("a.rs", 4),
            unit("a.rs", 5),
            unit("a.rs", 6),
            unit("a.rs", 7),
            unit("b.rs", 8),
            unit("b.rs", 9),
        ];
        let got = spans(&[0, 1, 2, 4, 5, 6], &all);
        let span = |start, end| LineSpan { start, end };
        assert_eq!(
            got,
            vec![
                FileSpans {
                    file: "a.rs",
                    spans: vec![span(3, 5), span(7, 7)],
                },
                FileSpans {
                    file: "b.rs",
                    spans: vec![span(8, 9)],
                },
            ]
        );
        assert_eq!(got[0].runs(), "3-5,7");
        assert_eq!(got[1].runs(), "8-9");
    }

    #[test]
    fn spans_follow_the_unit_table_not_line_numbers() {
        // Units 0 and 2 hold consecutive lines but are not neighbours in the unit table.
        let all = vec![unit("a.rs", 1), unit("b.rs", 1), unit("a.rs", 2)];
        let got = spans(&[0, 2], &all);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].runs(), "1,2");
        // Leaving a file and coming back starts a new entry.
        let got = spans(&[0, 1, 2], &all);
        let files: Vec<&str> = got.iter().map(|f| f.file).collect();
        assert_eq!(files, ["a.rs", "b.rs", "a.rs"]);
    }
}
