//! The output formats behind one entry point, [`render`]. Every format reads the report model
//! ([`model`], built once from the analyses by [`assemble`]), the [`View`] and what the
//! checkout shows ([`Disk`], read before rendering): none scores, reads a file or runs a
//! command. What the formats share (scores, tests and line spans as text) is in [`text`].

pub mod assemble;
mod cargo;
pub mod catalogue;
pub mod disk;
mod html;
mod human;
mod json;
mod junit;
pub mod model;
pub mod sarif;
mod short;
pub mod text;
pub mod view;

pub use disk::Disk;
pub use human::{NoLineNumber, Shown, failing_tests, human, no_failures, shown_entries};
pub use json::{SCHEMA, json, shown_in_json};
pub use junit::junit;
pub use model::{Report, Summary};
pub use text::WARNING_RANKS;
pub use view::View;

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

/// Renders `report` in `format`. The human format says "no failing tests" instead of ranking
/// when no test failed.
pub fn render(format: Format, report: &Report, view: &View, disk: &Disk) -> Rendered {
    match format {
        Format::Human if report.summary.failing() == 0 => Rendered::Text(no_failures(report)),
        Format::Human => Rendered::Text(human(report, view, &disk.sources, &disk.history)),
        Format::Json => Rendered::Text(json(report, view)),
        Format::Sarif => Rendered::Text(sarif::sarif(report, view, disk)),
        Format::Short => Rendered::Text(short::short(report, view, disk)),
        Format::CargoJson => Rendered::Text(cargo::messages(report, view, disk)),
        Format::Html => Rendered::Page {
            file_name: html::FILE_NAME,
            html: html::page(report, view, &disk.sources),
        },
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::analysis::{Analysis, Options};
    use crate::measures::find;
    use crate::rank::rank;
    use crate::spectra::Outcome;
    use crate::spectra::tests::{doric_minmax, matrix};

    /// The report of `a`'s `rankings`.
    pub(crate) fn report_of<'a>(a: &Analysis<'a>, rankings: &[crate::rank::Ranking<'a>]) -> Report<'a> {
        let mut report = Report::of(a);
        for r in rankings {
            report.add(r);
        }
        report
    }

    /// `rankings` of `a` rendered in `format`, with nothing read from the disk.
    fn rendered(format: Format, a: &Analysis, rankings: &[crate::rank::Ranking], view: &View) -> Rendered {
        render(format, &report_of(a, rankings), view, &Disk::default())
    }

    fn view() -> View<'static> {
        View {
            opts: Options::default(),
            top: 3,
            diff_base: None,
            function_names: None,
            line_functions: None,
            mutation: None,
        }
    }

    #[test]
    fn render_gives_text_for_stdout_and_a_page_for_html() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let text = |f| match rendered(f, &a, &rankings, &view()) {
            Rendered::Text(t) => t,
            page => panic!("{f:?} rendered {page:?}"),
        };
        assert!(text(Format::Human).contains("Most suspicious lines by ochiai"));
        assert!(text(Format::Json).contains(&format!("\"schema\": \"{SCHEMA}\"")));
        assert!(text(Format::Sarif).contains("\"version\": \"2.1.0\""));
        match rendered(Format::Html, &a, &rankings, &view()) {
            Rendered::Page { file_name, html } => {
                assert_eq!(file_name, "index.html");
                assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
            }
            text => panic!("html rendered {text:?}"),
        }
    }

    /// Five lines in three functions (1-2, 3-4, 5): lines 1, 2 and 5 run alike and only in the
    /// failing test, and the functions' names.
    fn three_function_lines() -> (crate::spectra::Spectra, [String; 3]) {
        let mut s = matrix(&["11101-", "00110+"]);
        let span = |start, end| crate::spectra::FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        };
        s.set_functions(vec![span(1, 2), span(3, 4), span(5, 5)]);
        let names = ["a::f".to_string(), "b".into(), "a::f::{closure}".into()];
        (s, names)
    }

    /// The three functions of [`three_function_lines`] as `--granularity function` makes them:
    /// the first and third run alike (one entry), and their names.
    pub(super) fn three_functions() -> (crate::spectra::Spectra, [String; 3]) {
        let (s, names) = three_function_lines();
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
            line_functions: None,
            ..view()
        };
        let Rendered::Text(text) = rendered(Format::Human, &a, &rankings, &view) else {
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
        let Rendered::Text(json) = rendered(Format::Json, &a, &rankings, &view) else {
            panic!("json is text");
        };
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let top = &json["rankings"][0]["units"][0];
        assert_eq!(
            (&top["function"], &top["line"], &top["end_line"]),
            (&"a::f".into(), &1.into(), &2.into())
        );
        assert_eq!(top["members"][1]["function"], "a::f::{closure}");
        let Rendered::Page { html, .. } = rendered(Format::Html, &a, &rankings, &view) else {
            panic!("html is a page");
        };
        assert!(html.contains("a::f src/lib.rs:1-2, a::f::{closure} src/lib.rs:5"));
    }

    /// At function granularity a closure is part of the function it is written in: the header
    /// counts the function once, not its closure as a second (empty, never ranked) function.
    #[test]
    fn the_function_count_leaves_out_folded_closures() {
        use crate::spectra::SourceFacts;
        let mut s = doric_minmax();
        s.set_functions(crate::spectra::tests::lib_functions(&[(1, 4), (2, 3)]));
        let mut facts = SourceFacts::new(s.units.len());
        facts.function_names.insert(s.functions[0].clone(), "f".into());
        facts
            .function_names
            .insert(s.functions[1].clone(), "f::{closure}".into());
        s.facts = Some(facts);
        let functions = s.by_function();
        assert_eq!(functions.units.len(), 2, "the closure keeps an empty unit");
        let a = Analysis::prepared(&functions, Some(&s), true, &[], crate::evidence::TieBreak::Evidence);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let names = ["f".to_string(), "f::{closure}".into()];
        let by_function = View {
            function_names: Some(&names),
            ..view()
        };
        let Rendered::Text(text) = rendered(Format::Human, &a, &rankings, &by_function) else {
            panic!("human is text");
        };
        let text = console::strip_ansi_codes(&text);
        assert!(text.contains("1 functions in 1 file, 1 run by some test"), "{text}");
        // At line granularity every line counts.
        let lines = Analysis::new(&s, true);
        let rankings = vec![rank(&lines, find("ochiai").unwrap(), &Options::default())];
        let Rendered::Text(text) = rendered(Format::Human, &lines, &rankings, &view()) else {
            panic!("human is text");
        };
        assert!(console::strip_ansi_codes(&text).contains("4 lines in 1 file"), "{text}");
    }

    /// `--diff-base`: an entry's lines run alike, but only the changed one is tagged changed,
    /// and a function is shown at its changed line; with `--only-changed`, a function that only
    /// shares the entry with a changed line is not listed (before, every line shown from a
    /// changed entry was tagged, and SARIF said `changed` of lines no edit touched).
    #[test]
    fn only_the_changed_line_of_an_entry_is_tagged_changed() {
        let (s, names) = three_function_lines();
        let a = Analysis::new(&s, true);
        let mut rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        // Line 2 (unit 1) changed: in the first entry with lines 1 and 5.
        let first = &mut rankings[0].entries[0];
        assert!(a.groups[first.group].units.contains(&1));
        first.changed_lines = vec![1];
        let view = View {
            line_functions: Some(&names),
            diff_base: Some("HEAD"),
            ..view()
        };
        let Rendered::Text(text) = rendered(Format::Human, &a, &rankings, &view) else {
            panic!("human is text");
        };
        let text = console::strip_ansi_codes(&text);
        let tagged: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(" rank ") && l.contains(" changed "))
            .collect();
        assert_eq!(tagged.len(), 1, "{text}");
        assert!(
            tagged[0].contains(" changed      2 |"),
            "a::f is shown at its changed line 2: {text}"
        );
        assert!(text.contains("1 of the 3 lines shown changed since HEAD"), "{text}");
        let Rendered::Text(sarif) = rendered(Format::Sarif, &a, &rankings, &view) else {
            panic!("sarif is text");
        };
        let sarif: serde_json::Value = serde_json::from_str(&sarif).unwrap();
        let changed: Vec<(u64, bool)> = sarif["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let line = r["locations"][0]["physicalLocation"]["region"]["startLine"]
                    .as_u64()
                    .unwrap();
                (line, r["properties"]["changed"].as_bool().unwrap_or(false))
            })
            .collect();
        assert_eq!(changed, [(2, true), (5, false), (3, false)]);
        // --only-changed: the unchanged entry gone, and the closure, which only shares the
        // changed entry, not listed.
        rankings[0].entries.retain(|x| x.changed());
        rankings[0].only_changed = true;
        let Rendered::Text(text) = rendered(Format::Human, &a, &rankings, &view) else {
            panic!("human is text");
        };
        let text = console::strip_ansi_codes(&text);
        assert!(
            text.contains("a::f  src/lib.rs:1-2") && !text.contains("a::f::{closure}"),
            "{text}"
        );
    }

    /// Functions first: the lines of the three-function matrix grouped under their functions,
    /// the function holding the top line first, the order on screen the functions' order,
    /// each line keeping its own rank; short, SARIF and JSON say the same.
    #[test]
    fn line_rankings_read_function_by_function() {
        let (s, names) = three_function_lines();
        let a = Analysis::new(&s, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let view = View {
            line_functions: Some(&names),
            ..view()
        };
        let Rendered::Text(text) = rendered(Format::Human, &a, &rankings, &view) else {
            panic!("human is text");
        };
        let text = console::strip_ansi_codes(&text);
        // Lines 1, 2 and 5 run alike and only in the failing test: one entry, first, in two
        // functions; line 3 (failing and passing) second; line 4 (passing only) is not ranked.
        let a_f = text.find("  #1.5 =2  a::f  src/lib.rs:1-2").expect(&text);
        let closure = text.find("  #1.5 =2  a::f::{closure}  src/lib.rs:5\n").expect(&text);
        let b = text.find("  #3  b  src/lib.rs:3-4").expect(&text);
        assert!(a_f < closure && closure < b, "{text}");
        let shown = human::shown_entries(&text).unwrap();
        assert_eq!(
            shown[0].1,
            [
                ("src/lib.rs".into(), 1),
                ("src/lib.rs".into(), 5),
                ("src/lib.rs".into(), 3)
            ]
        );
        assert!(text.contains("(#N: the function's rank"), "{text}");
        let Rendered::Text(short) = rendered(Format::Short, &a, &rankings, &view) else {
            panic!("short is text");
        };
        assert!(
            short.contains("src/lib.rs:5:1: warning: a::f::{closure} (function #1.5): ochiai rank 1 of 2"),
            "{short}"
        );
        assert!(
            short.contains("src/lib.rs:3:1: warning: b (function #3): ochiai rank 2 of 2"),
            "{short}"
        );
        let Rendered::Text(json) = rendered(Format::Json, &a, &rankings, &view) else {
            panic!("json is text");
        };
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        let functions = &json["rankings"][0]["functions"];
        assert_eq!(functions[0]["name"], "a::f");
        assert_eq!(functions[0]["entries"][0]["lines"], serde_json::json!([1, 2]));
        assert_eq!(functions[2]["rank"], 3.0);
        assert_eq!(functions[2]["entries"][0]["unit"], 1);
        let Rendered::Text(sarif) = rendered(Format::Sarif, &a, &rankings, &view) else {
            panic!("sarif is text");
        };
        assert!(sarif.contains("Suspicious line in b (function #3)"), "{sarif}");
    }

    /// An entry the measure could not score reads as such everywhere, not as a score of 0.
    #[test]
    fn unscored_entries_have_no_score() {
        let s = doric_minmax();
        let a = Analysis::new(&s, true);
        let mut rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        rankings[0].entries[2].unscored = true;
        let json: serde_json::Value = match rendered(Format::Json, &a, &rankings, &view()) {
            Rendered::Text(t) => serde_json::from_str(&t).unwrap(),
            page => panic!("{page:?}"),
        };
        let units = &json["rankings"][0]["units"];
        assert!(units[2]["score"].is_null() && units[2]["unscored"] == true, "{units:#}");
        assert!(units[0]["score"].is_number() && units[0].get("unscored").is_none());
        let report = report_of(&a, &rankings);
        assert_eq!(
            text::fmt_score(report.rankings[0].measure, &report.rankings[0].entries[2]),
            "unscored"
        );
        let Rendered::Text(sarif) = rendered(Format::Sarif, &a, &rankings, &view()) else {
            panic!("sarif is text");
        };
        assert!(sarif.contains("\"unscored\": true"));
    }

    #[test]
    fn the_human_report_without_failures_says_so() {
        let s = matrix(&["11+", "10+"]);
        let a = Analysis::new(&s, true);
        let rankings = vec![rank(&a, find("ochiai").unwrap(), &Options::default())];
        let report = report_of(&a, &rankings);
        assert_eq!(
            rendered(Format::Human, &a, &rankings, &view()),
            Rendered::Text(no_failures(&report))
        );
        assert!(no_failures(&report).starts_with("No failing tests: all 2 tests passed"));
        // A timed-out test is no failure, but the report names it.
        let mut s = matrix(&["11-", "10+"]);
        s.tests[0].outcome = Outcome::TimedOut;
        s.tests[0].message = Some("timed out after 3s and was killed".into());
        let a = Analysis::new(&s, true);
        let report = Report::of(&a);
        assert_eq!(report.summary.failing(), 0);
        assert_eq!(
            no_failures(&report),
            "No failing tests: 1 passed, 1 timed out, 0 ignored; nothing to localise.\n\
             Coverage: 2 of 2 lines in 1 file ran (100.0%).\n\
             Timed out (1), left out of the ranking (--count-timeouts ranks them as failing):\n  \
             b t1\n            timed out after 3s and was killed\n"
        );
    }
}
