//! The output formats behind one entry point, [`render`]: what every format shares (the
//! summary, the conventions, source lines, scores and line spans as text) lives here, each
//! format in its own module.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::Serialize;

use crate::analysis::{Analysis, Options};
use crate::measures::Measure;
use crate::rank::{Ranked, Ranking};
use crate::spectra::{Outcome, TestRecord, Unit};

pub mod catalogue;
mod html;
mod human;
mod json;
mod junit;
pub mod sarif;
mod short;

pub use human::{failing_tests, human, no_failures, shown_entries};
pub use json::json;
pub use junit::junit;

/// Schema tag of the JSON report.
pub const SCHEMA: &str = "cargo-sfl/v1";

/// The formats [`render`] renders (the configuration's own enum).
pub use crate::config::Format;

/// A rendered report; writing it is the caller's business.
#[derive(Debug, PartialEq, Eq)]
pub enum Rendered {
    /// Text for standard output or `--output FILE`.
    Text(String),
    /// A self-contained HTML page, to be written as `file_name` into the `--output` directory.
    Page { file_name: &'static str, html: String },
}

/// Renders `rankings` of `a` in `format`. The human format says "no failing tests" instead
/// of ranking when no test failed.
pub fn render(format: Format, a: &Analysis, rankings: &[Ranking], view: &View) -> Rendered {
    match format {
        Format::Human if Summary::of(a).failing() == 0 => Rendered::Text(no_failures(a)),
        Format::Human => Rendered::Text(human(a, rankings, view)),
        Format::Json => Rendered::Text(json(a, rankings, view)),
        Format::Sarif => Rendered::Text(sarif::sarif(a, rankings, view)),
        Format::Short => Rendered::Text(short::short(a, rankings, view)),
        Format::Html => Rendered::Page {
            file_name: html::FILE_NAME,
            html: html::page(a, rankings, view),
        },
    }
}

/// What a report shows besides the rankings.
pub struct View<'a> {
    pub opts: Options,
    /// Entries per measure in the human and SARIF reports (and for `changed_in_top`).
    pub top: usize,
    /// The `--diff-base` revision, when entries are marked as changed.
    pub diff_base: Option<&'a str>,
    /// At `--granularity function`: each unit's function name (unit `u` is the spectra's
    /// function `u`, whose extent `Spectra::functions[u]` gives). `None` for lines.
    pub function_names: Option<&'a [String]>,
    /// `--mutate`'s results, when it ran.
    pub mutation: Option<&'a crate::mutate::Mutation>,
}

impl View<'_> {
    /// What a unit is, in the singular: "function" or "line".
    pub fn unit_noun(&self) -> &'static str {
        if self.function_names.is_some() {
            "function"
        } else {
            "line"
        }
    }

    /// The function unit `u` is, with its name, at function granularity.
    pub fn function<'s>(&'s self, a: &'s Analysis, u: usize) -> Option<(&'s str, LineSpan)> {
        let name = self.function_names?.get(u)?;
        let f = a.spectra.functions.get(u)?;
        Some((
            name,
            LineSpan {
                start: f.start,
                end: f.end,
            },
        ))
    }

    /// A group's spans by file: adjacent lines merged, or, at function granularity, each
    /// function's own extent (two functions are never one span).
    pub fn spans<'s>(&self, a: &'s Analysis, units: &[usize]) -> Vec<FileSpans<'s>> {
        if self.function_names.is_none() {
            return spans(units, &a.spectra.units);
        }
        let mut out: Vec<FileSpans<'s>> = Vec::new();
        for &u in units {
            let f = &a.spectra.functions[u];
            let span = LineSpan {
                start: f.start,
                end: f.end,
            };
            match out.last_mut() {
                Some(fs) if fs.file == f.file => fs.spans.push(span),
                _ => out.push(FileSpans {
                    file: &f.file,
                    spans: vec![span],
                }),
            }
        }
        out
    }

    /// How many of a ranking's top N entries touch changed lines (with `--diff-base`).
    pub fn changed_in_top(&self, r: &Ranking) -> Option<usize> {
        self.diff_base?;
        Some(r.entries.iter().take(self.top).filter(|x| x.changed).count())
    }
}

#[derive(Serialize, Debug, Default, PartialEq)]
pub struct Summary {
    pub tests: usize,
    pub passed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub crashed: usize,
    pub ignored: usize,
    /// Failed, then passed on a retry (`--retries`); counted among the failing tests.
    pub flaky: usize,
    /// Not run: their rows are the last run's, which no edit since could change.
    #[serde(skip_serializing_if = "is_zero")]
    pub reused: usize,
    /// Lines the coverage map knows (executable lines of the workspace's code).
    pub units: usize,
    /// Lines at least one test ran.
    pub covered_units: usize,
    /// Lines at least one failing test ran (the ranked lines).
    pub failing_units: usize,
    /// Report entries for those lines: lines with identical coverage are one entry.
    pub entries: usize,
    /// Lines run by every failing test (the all-failing core; a single fault must be there).
    pub all_failing_core: usize,
    pub files: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Summary {
    pub fn of(a: &Analysis) -> Self {
        let s = a.spectra;
        let count = |o: Outcome| s.tests.iter().filter(|t| t.outcome == o).count();
        let files = s.source_files().len();
        Summary {
            tests: s.tests.len(),
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            timed_out: count(Outcome::TimedOut),
            crashed: count(Outcome::Crashed),
            ignored: count(Outcome::Ignored),
            flaky: s.tests.iter().filter(|t| t.flaky).count(),
            reused: s.tests.iter().filter(|t| t.reused).count(),
            units: s.units.len(),
            covered_units: s.coverage.iter().filter(|c| !c.is_empty()).count(),
            failing_units: a.groups.iter().map(|g| g.units.len()).sum(),
            entries: a.groups.len(),
            all_failing_core: a.core_units(),
            files,
        }
    }

    /// The failing set: failed and crashed tests (timed-out ones are left out).
    pub fn failing(&self) -> usize {
        self.failed + self.crashed
    }

    /// Tests the ranking uses: passing and failing ones.
    pub fn ranked(&self) -> usize {
        self.passed + self.failing()
    }

    pub fn ran(&self) -> usize {
        self.tests - self.ignored
    }
}

/// How a report was computed, stated in every machine-readable format.
#[derive(Serialize)]
pub(crate) struct Conventions {
    failing: &'static str,
    rank: &'static str,
    line_rank: &'static str,
    division_by_zero: &'static str,
    ties_displayed: &'static str,
    entries: &'static str,
    smoothing: bool,
    clone_failing: u32,
    optimise: bool,
    update_bound: usize,
}

impl Conventions {
    pub(crate) fn of(opts: &Options) -> Self {
        Conventions {
            failing: "failed, timed-out and crashed tests form the failing set; ignored tests are not used",
            rank: "mid-rank over entries: entries scoring strictly higher, plus (tied entries + 1) / 2",
            line_rank: "mid-rank over lines: lines in entries scoring strictly higher, plus (lines in tied entries + 1) / 2",
            division_by_zero: "0/0 = 0; x/0 = ±f64::MAX; ln 0 = -f64::MAX; overflow clamps to ±f64::MAX",
            ties_displayed: "in code order (file, line)",
            entries: if opts.group {
                "lines with identical coverage form one entry (no spectrum measure can tell them apart)"
            } else {
                "one entry per line (--no-group)"
            },
            smoothing: opts.smoothing,
            clone_failing: opts.clone_failing,
            optimise: opts.optimise,
            update_bound: opts.update_bound,
        }
    }
}

pub(crate) fn test_label(t: &TestRecord) -> String {
    format!("{} {}", t.binary, t.name)
}

/// Reads source lines on demand (files relative to the workspace root), only those of files a
/// report may show (`Spectra::may_show`: a loaded file's sources only where they match their
/// recorded digest).
pub(crate) struct Sources<'a> {
    root: &'a Path,
    spectra: Option<&'a crate::spectra::Spectra>,
    files: HashMap<String, Option<Vec<String>>>,
}

impl<'a> Sources<'a> {
    pub(crate) fn new(root: &'a Path) -> Self {
        Sources {
            root,
            spectra: None,
            files: HashMap::new(),
        }
    }

    /// The sources of `spectra`, from its workspace root.
    pub(crate) fn of(spectra: &'a crate::spectra::Spectra) -> Self {
        Sources {
            spectra: Some(spectra),
            ..Sources::new(Path::new(&spectra.workspace_root))
        }
    }

    pub(crate) fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let (root, spectra) = (self.root, self.spectra);
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            if spectra.is_some_and(|s| !s.may_show(file)) {
                return None;
            }
            std::fs::read_to_string(root.join(file))
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get(line.checked_sub(1)? as usize).map(String::as_str)
    }
}

/// A score as the human report, SARIF messages and `--fail-on` show it.
pub fn fmt_score(m: &Measure, x: &Ranked) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    use crate::measures::find;
    use crate::rank::rank;
    use crate::spectra::tests::{doric_minmax, matrix};

    fn view() -> View<'static> {
        View {
            opts: Options::default(),
            top: 3,
            diff_base: None,
            function_names: None,
            mutation: None,
        }
    }

    #[test]
    fn render_gives_text_for_stdout_and_a_page_for_html() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let text = |f| match render(f, &a, &rankings, &view()) {
            Rendered::Text(t) => t,
            page => panic!("{f:?} rendered {page:?}"),
        };
        assert!(text(Format::Human).contains("Most suspicious lines by ochiai"));
        assert!(text(Format::Json).contains(&format!("\"schema\": \"{SCHEMA}\"")));
        assert!(text(Format::Sarif).contains("\"version\": \"2.1.0\""));
        match render(Format::Html, &a, &rankings, &view()) {
            Rendered::Page { file_name, html } => {
                assert_eq!(file_name, "index.html");
                assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
            }
            text => panic!("html rendered {text:?}"),
        }
    }

    /// Three functions over five lines (1-2, 3-4, 5), as `--granularity function` makes them:
    /// the first and third run alike (one entry), and their names.
    pub(super) fn three_functions() -> (crate::spectra::Spectra, [String; 3]) {
        let mut s = matrix(&["11101-", "00110+"]);
        let span = |start, end| crate::spectra::FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        };
        s.set_functions(vec![span(1, 2), span(3, 4), span(5, 5)]);
        let names = ["a::f".to_string(), "b".into(), "a::f::{closure}".into()];
        (s.by_function(), names)
    }

    /// At function granularity the report names functions and shows their extents; a group
    /// of functions lists the others by name and extent, never as a range of first lines.
    #[test]
    fn functions_read_as_functions() {
        let (f, names) = three_functions();
        let a = Analysis::new(&f, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let view = View {
            function_names: Some(&names),
            ..view()
        };
        let Rendered::Text(text) = render(Format::Human, &a, &rankings, &view) else {
            panic!("human is text");
        };
        let text = console::strip_ansi_codes(&text);
        assert!(text.contains("3 functions in 1 file,"), "{text}");
        assert!(text.contains("Most suspicious functions by ochiai"), "{text}");
        assert!(
            text.contains("src/lib.rs:1-2 | a::f   (+1 function alike: a::f::{closure} 5)"),
            "{text}"
        );
        assert!(text.contains("src/lib.rs:3-4 | b\n"), "{text}");
        assert!(!text.contains("lines alike") && !text.contains("1-3"), "{text}");
        let Rendered::Text(json) = render(Format::Json, &a, &rankings, &view) else {
            panic!("json is text");
        };
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let top = &json["rankings"][0]["units"][0];
        assert_eq!(
            (&top["function"], &top["line"], &top["end_line"]),
            (&"a::f".into(), &1.into(), &2.into())
        );
        assert_eq!(top["members"][1]["function"], "a::f::{closure}");
        let Rendered::Page { html, .. } = render(Format::Html, &a, &rankings, &view) else {
            panic!("html is a page");
        };
        assert!(html.contains("a::f src/lib.rs:1-2, a::f::{closure} src/lib.rs:5"));
    }

    /// An entry the measure could not score reads as such everywhere, not as a score of 0.
    #[test]
    fn unscored_entries_have_no_score() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let mut rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        rankings[0].entries[2].unscored = true;
        let json: serde_json::Value = match render(Format::Json, &a, &rankings, &view()) {
            Rendered::Text(t) => serde_json::from_str(&t).unwrap(),
            page => panic!("{page:?}"),
        };
        let units = &json["rankings"][0]["units"];
        assert!(units[2]["score"].is_null() && units[2]["unscored"] == true, "{units:#}");
        assert!(units[0]["score"].is_number() && units[0].get("unscored").is_none());
        assert_eq!(fmt_score(rankings[0].measure, &rankings[0].entries[2]), "unscored");
        let Rendered::Text(sarif) = render(Format::Sarif, &a, &rankings, &view()) else {
            panic!("sarif is text");
        };
        assert!(sarif.contains("\"unscored\": true"));
    }

    #[test]
    fn the_human_report_without_failures_says_so() {
        let s = matrix(&["11+", "10+"]);
        let a = Analysis::new(&s, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        assert_eq!(
            render(Format::Human, &a, &rankings, &view()),
            Rendered::Text(no_failures(&a))
        );
        assert!(no_failures(&a).starts_with("No failing tests: all 2 tests that ran passed"));
        // A timed-out test is no failure, but the report names it.
        let mut s = matrix(&["11-", "10+"]);
        s.tests[0].outcome = Outcome::TimedOut;
        s.tests[0].message = Some("timed out after 3s and was killed".into());
        let a = Analysis::new(&s, true);
        assert_eq!(Summary::of(&a).failing(), 0);
        assert_eq!(
            no_failures(&a),
            "No failing tests: 1 passed, 1 timed out, 0 ignored; nothing to localise.\n\
             Coverage: 2 of 2 lines in 1 files ran (100.0%).\n\
             Timed out (1), left out of the ranking (--count-timeouts ranks them as failing):\n  \
             b t1\n            timed out after 3s and was killed\n"
        );
    }

    fn unit(file: &str, line: u32) -> Unit {
        Unit {
            file: file.into(),
            line,
        }
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
        // Units 0 and 2 hold consecutive lines but are not neighbours in the table.
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
