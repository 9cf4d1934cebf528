//! The terminal report: the summary, the failing tests with their messages, then each
//! measure's top entries grouped by file with their source lines.

use std::fmt::Write as _;

use super::disk::{History, Sources};
use super::model::{Entry, Ranking, Report};
use super::text::written_by_build_script;
use super::view::View;
use crate::spectra::{Outcome, Spectra};

mod functions;
pub(crate) use functions::function_heading;
mod rows;
mod since;

use rows::{cut, entry_line, fmt_rank, line_entry};

/// The failing tests with their messages.
pub fn failing_tests(spectra: &Spectra) -> String {
    let mut out = String::new();
    let failing: Vec<_> = spectra.tests.iter().filter(|t| t.outcome.is_failing()).collect();
    if failing.is_empty() {
        return out;
    }
    let _ = writeln!(out, "Failing tests ({}):", failing.len());
    for t in failing {
        let _ = write!(
            out,
            "  {:<9} {} {}",
            t.outcome.as_str().to_uppercase(),
            t.binary,
            t.name
        );
        let _ = match t.runs() {
            Some(runs) => writeln!(out, " ({runs})"),
            None => writeln!(out),
        };
        if let Some(m) = &t.message {
            for l in m.lines() {
                let _ = writeln!(out, "{}", indented(l));
            }
        }
        stack(&mut out, &t.stack);
    }
    out
}

/// The timed-out tests, which the ranking leaves out, with their messages.
fn timed_out_tests(spectra: &Spectra) -> String {
    let mut out = String::new();
    let timed_out: Vec<_> = spectra
        .tests
        .iter()
        .filter(|t| t.outcome == Outcome::TimedOut)
        .collect();
    if timed_out.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "Timed out ({}), left out of the ranking (--count-timeouts ranks them as failing):",
        timed_out.len()
    );
    for t in timed_out {
        let _ = writeln!(out, "  {} {}", t.binary, t.name);
        for l in t.message.iter().flat_map(|m| m.lines()) {
            let _ = writeln!(out, "{}", indented(l));
        }
    }
    out
}

/// A line of a test's message under its name (a blank line stays blank).
fn indented(line: &str) -> String {
    if line.trim().is_empty() {
        String::new()
    } else {
        format!("            {line}")
    }
}

/// Frames shown of a failing test's panic backtrace (workspace code, innermost first).
const STACK_SHOWN: usize = 5;

/// A failing test's backtrace in the workspace's code, one `file:line function` per line.
fn stack(out: &mut String, shown: &[crate::spectra::Frame]) {
    if shown.is_empty() {
        return;
    }
    let _ = writeln!(out, "            stack (innermost first):");
    for f in shown.iter().take(STACK_SHOWN) {
        let _ = writeln!(
            out,
            "              {}:{}  {}",
            f.file,
            f.line,
            without_generic_args(&f.function)
        );
    }
    if shown.len() > STACK_SHOWN {
        let _ = writeln!(out, "              … {} more", shown.len() - STACK_SHOWN);
    }
}

/// A frame's function with each list of generic arguments shown as `<…>`: a type's
/// (`Peekable<Iter<IntoIter<i32>>>` is `Peekable<…>`) and a function's (`insert::<…>`); a
/// qualified path (`<A as Trait>::f`) keeps its brackets. The JSON report keeps whole names.
fn without_generic_args(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    // Depth inside the arguments being left out (0: none).
    let mut depth = 0usize;
    let mut prev = '\0';
    for c in name.chars() {
        if depth > 0 {
            match c {
                '<' => depth += 1,
                '>' if prev != '-' => depth -= 1,
                _ => {}
            }
            if depth == 0 {
                out.push('>');
            }
        } else if c == '<' && (prev.is_alphanumeric() || prev == '_' || out.ends_with("::")) {
            out.push_str("<…");
            depth = 1;
        } else {
            out.push(c);
        }
        prev = c;
    }
    out
}

/// Options that differ from the defaults, and `--diff-base`, in words (empty when none do).
fn option_notes(view: &View) -> Vec<String> {
    let opts = &view.opts;
    let mut notes = Vec::new();
    if opts.smoothing {
        notes.push("counts smoothed by +0.5".to_string());
    }
    if opts.clone_failing > 1 {
        notes.push(format!("failing tests counted {} times", opts.clone_failing));
    }
    if opts.optimise {
        notes.push("Opt_w: lines run by every failing test first".to_string());
    }
    if !opts.group {
        notes.push("one entry per line".to_string());
    }
    if let Some(rev) = view.diff_base {
        notes.push(format!("`changed` marks lines changed since {rev}"));
    }
    notes
}

/// The human report: summary, failing tests, then each measure's top-N entries by file.
pub fn human(report: &Report, view: &View, sources: &Sources, history: &History) -> String {
    let mut out = String::new();
    summary(&mut out, report, view);
    out.push('\n');
    out.push_str(&failing_tests(report.spectra));
    out.push_str(&timed_out_tests(report.spectra));
    since::changed_since_passed(&mut out, report, sources);
    for r in &report.rankings {
        human_ranking(&mut out, report, r, view, (sources, history));
    }
    footer(&mut out, report, view);
    out
}

/// The summary: the tests, the units, the all-failing core and the options.
fn summary(out: &mut String, report: &Report, view: &View) {
    let sum = &report.summary;
    let _ = write!(
        out,
        "{} tests: {} passed, {} failed, {} timed out, {} crashed, {} ignored",
        sum.tests, sum.passed, sum.failed, sum.timed_out, sum.crashed, sum.ignored
    );
    if sum.flaky > 0 {
        let _ = write!(out, "; {} flaky (passed on a retry, ranked as failing)", sum.flaky);
    }
    if sum.passed_alone > 0 {
        let _ = write!(out, "; {}", passed_alone(sum.passed_alone));
    }
    if sum.reused > 0 {
        let _ = write!(
            out,
            "; {} ran, {} reused from the last run (no edit since reached them; --rerun runs them all)",
            sum.tests - sum.ignored - sum.reused,
            sum.reused
        );
    }
    if sum.uncovered > 0 {
        let _ = write!(
            out,
            "; {} with no coverage, left out of the ranking",
            crate::ui::counted(sum.uncovered, "failing test", "failing tests")
        );
    }
    let _ = writeln!(out);
    let files = crate::ui::counted(sum.files, "file", "files");
    let (noun, place) = if sum.files == 0 {
        ("units", String::new())
    } else if view.function_names.is_some() {
        ("functions", format!(" in {files}"))
    } else {
        ("lines", format!(" in {files}"))
    };
    let _ = writeln!(
        out,
        "{} {noun}{place}, {} run by some test, {} by a failing test ({} after merging {noun} with identical coverage)",
        sum.units,
        sum.covered_units,
        sum.failing_units,
        crate::ui::counted(sum.entries, "entry", "entries")
    );
    if sum.failing() > 0 && sum.failing_units == 0 {
        // Nothing to rank (a failing test that ran only test code, or only a build check such
        // as trybuild's): no claim about where a single fault must be.
        let _ = writeln!(out, "No failing test ran one of these {noun}: there is nothing to rank");
    } else if sum.failing() > 0 && sum.all_failing_core == 0 {
        // No line is in every failing test's row: core_tests is then a cover of nothing.
        let _ = writeln!(
            out,
            "No {} is run by every failing test: more than one fault, or a fault where no coverage shows (code that runs while compiling, a const's value, a data file)",
            noun.trim_end_matches('s')
        );
    } else if sum.failing() > 0 {
        let _ = writeln!(out, "{}", all_failing_core(report, noun));
    }
    let notes = option_notes(view);
    if !notes.is_empty() {
        let _ = writeln!(out, "Options: {}", notes.join("; "));
    }
}

/// The lines every failing test runs (the all-failing core), and how few failing tests
/// already pin them down (Algorithm 1's failing tests: the fewest whose shared lines are
/// already these).
fn all_failing_core(report: &Report, noun: &str) -> String {
    let sum = &report.summary;
    let (core, failing) = (report.core_tests.len(), sum.failing_ranked());
    let fewer = if core == 1 && failing > 1 {
        format!(" (one of the {failing} failing tests runs just these {noun}; the rest narrow it no further)")
    } else if core < failing {
        format!(" ({core} of the {failing} failing tests share just these {noun}; the rest narrow it no further)")
    } else {
        String::new()
    };
    let (noun, are, which) = match sum.all_failing_core {
        1 => (noun.trim_end_matches('s'), "is", "that one"),
        _ => (noun, "are", "one of them"),
    };
    format!(
        "{} {noun} {are} run by every failing test: if there is a single fault, it is {which}{fewer}",
        sum.all_failing_core,
    )
}

/// What the marks and counts of the listed entries mean.
fn footer(out: &mut String, report: &Report, view: &View) {
    let rankings = &report.rankings;
    let mut blank = "\n";
    // The legends of what the shown entries carry (not of entries below the cut, nor of the
    // lines a function lists only by number).
    let shown: Vec<_> = rankings.iter().map(|r| view.shown(r)).collect();
    let any_shown = |mark: fn(&Entry) -> bool| shown.iter().flatten().any(|s| mark(s.entry));
    // A tie shows at a rank, or at a function's #rank.
    let function_tied = rankings.iter().any(|r| {
        view.functions(r)
            .is_some_and(|(blocks, _)| blocks.iter().take(view.top).any(|b| b.tied > 1))
    });
    let tie_shown = any_shown(|x| x.tied > 1) || function_tied;
    if tie_shown {
        let _ = writeln!(
            out,
            "{blank}(=N after a rank: N entries share that score and that mid-rank.)"
        );
        blank = "";
    }
    if rankings.iter().any(|r| view.functions(r).is_some()) {
        let _ = writeln!(
            out,
            "{blank}(#N: the function's rank: functions come in the order their best lines rank, those tied there ordered by the evidence that orders lines; under it that line with its rank, then its other ranked lines as line (rank). A line's rank is its entry's: lines with identical coverage share one, and `explain FILE:LINE` gives a line's own place; --granularity line lists lines alone.)"
        );
        blank = "";
    }
    if any_shown(|x| x.panicked) {
        let _ = writeln!(
            out,
            "(panicked: a failing test panicked on this line's own operation (an index out of bounds, an overflow, …), so it is ranked first; the score shown is the base measure's.)"
        );
        blank = "";
    }
    if any_shown(|x| x.certain) {
        let _ = writeln!(
            out,
            "(certain: a failing test ran this {} and nothing else, so Doric's fault likelihood is 1.)",
            view.unit_noun()
        );
        blank = "";
    }
    // Code a build script wrote: what a reader edits is the script that writes it.
    let units = &report.spectra.units;
    let mut generated: Vec<&str> = shown
        .iter()
        .flatten()
        .map(|s| units[s.entry.first()].file.as_str())
        .filter(|f| written_by_build_script(f))
        .collect();
    generated.sort_unstable();
    generated.dedup();
    for file in generated {
        let _ = writeln!(
            out,
            "{blank}({file} was written by a build script into its OUT_DIR: the code to fix is the package's build.rs (or the data it reads), which writes it.)"
        );
        blank = "";
    }
    // The explanation speaks of lines: a report of imported units only goes without it.
    let lists_lines = shown.iter().flatten().any(|s| units[s.entry.first()].name().is_none());
    if lists_lines {
        let _ = writeln!(
            out,
            "{blank}(ef = failing tests that ran the {}, ep = passing tests that ran it.)",
            view.unit_noun()
        );
    }
}

/// One ranking's top entries: a heading, the entries under the files of their lead lines,
/// imported units apart, then what the cut leaves out.
fn human_ranking(
    out: &mut String,
    report: &Report,
    r: &Ranking,
    view: &View,
    (sources, history): (&Sources, &History),
) {
    if r.entries.is_empty() {
        // No heading over nothing: the summary said why.
        return;
    }
    if let Some((blocks, names)) = view.functions(r) {
        functions::by_function(out, report, r, (blocks, names), view, (sources, history));
        return;
    }
    let shown = &r.entries[..view.top.min(r.entries.len())];
    heading(out, r, shown.len(), view);
    let units = &report.spectra.units;
    // An imported unit has a name, not a file.
    let (imported, in_files): (Vec<&Entry>, Vec<&Entry>) =
        shown.iter().partition(|x| units[x.first()].name().is_some());
    by_file(out, report, r, &in_files, view, sources);
    if !imported.is_empty() {
        let _ = writeln!(out, "  (imported units)");
        for x in imported {
            let group = x.in_code_order();
            let mut name = units[group[0]].file.clone();
            if group.len() > 1 {
                let _ = write!(name, "   (+{} units with the same coverage)", group.len() - 1);
            }
            let _ = writeln!(out, "{}", entry_line(r, x, ("", x.changed()), &name));
        }
    }
    if let (Some(k), Some(rev)) = (view.changed_in_top(r), view.diff_base) {
        let _ = writeln!(
            out,
            "  {k} of these {} touch lines changed since {rev}",
            crate::ui::counted(shown.len(), "entry", "entries")
        );
    }
    if let Some(last) = shown.last() {
        let more_tied = r.entries[shown.len()..].iter().filter(|x| x.rank == last.rank).count();
        if more_tied > 0 {
            let _ = writeln!(
                out,
                "  … and {} more tied at rank {}",
                crate::ui::counted(more_tied, "entry", "entries"),
                fmt_rank(last.rank)
            );
        }
    }
}

/// `Most suspicious lines by M (formula), top N of M entries:`.
fn heading(out: &mut String, r: &Ranking, shown: usize, view: &View) {
    let order = if r.ht.is_some() {
        " in the order a person is expected to reach them (HT_Rank model, E[T] = expected steps)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{}{order} ({}), top {} of {}:",
        console::style(format!("Most suspicious {}s by {}", view.unit_noun(), r.measure.name)).bold(),
        r.measure.formula,
        shown,
        crate::ui::counted(r.entries.len(), "entry", "entries")
    );
}

/// Entries under their files: files in the order of their best-ranked entry, entries in rank
/// order within a file. An entry is shown at its lead line (at function granularity, its first
/// function), so it goes under that line's own file.
fn by_file(out: &mut String, report: &Report, r: &Ranking, shown: &[&Entry], view: &View, sources: &Sources) {
    let spectra = report.spectra;
    let file_of = |x: &Entry| spectra.units[x.lead()].file.as_str();
    let mut files: Vec<&str> = Vec::new();
    for x in shown {
        if !files.contains(&file_of(x)) {
            files.push(file_of(x));
        }
    }
    for f in files {
        let _ = writeln!(out, "  {}", console::style(f).cyan().bold());
        for x in shown.iter().filter(|x| file_of(x) == f) {
            let group = x.in_code_order();
            let (location, src, changed) = match view.function(spectra, group[0]) {
                Some(_) => {
                    let (location, src) = function_entry(spectra, view, &group);
                    (location, src, x.changed())
                }
                None => {
                    let (location, src) = line_entry(&spectra.units, &group, x.shown_at(), sources);
                    (location, src, x.changed_lines.contains(&x.shown_at()))
                }
            };
            let text = entry_line(r, x, (&location, changed), &src);
            let text = if x.rank <= 1.0 {
                console::style(text).red().to_string()
            } else {
                text
            };
            let _ = writeln!(out, "{text}");
        }
    }
}

/// A function entry's location (`file:start-end` of its first function) and text (its name,
/// and the other functions of its group with their spans).
fn function_entry(spectra: &Spectra, view: &View, group: &[usize]) -> (String, String) {
    let file = |u: usize| spectra.functions[u].file.as_str();
    let Some((name, span)) = view.function(spectra, group[0]) else {
        return (String::new(), String::new());
    };
    let mut src = name.to_string();
    if group.len() > 1 {
        let others: Vec<String> = group[1..]
            .iter()
            .filter_map(|&u| {
                let (n, s) = view.function(spectra, u)?;
                Some(if file(u) == file(group[0]) {
                    format!("{n} {s}")
                } else {
                    format!("{n} {}:{s}", file(u))
                })
            })
            .collect();
        let noun = if others.len() == 1 { "function" } else { "functions" };
        let _ = write!(src, "   (+{} {noun} alike: {})", others.len(), cut(&others.join(", ")));
    }
    (format!("{}:{span}", file(group[0])), src)
}

/// Per ranking of a human report, its measure and the (file, line) of each entry shown.
pub type Shown = Vec<(String, Vec<(String, u32)>)>;

/// An entry line of a human report that names no line number.
#[derive(Debug, thiserror::Error)]
#[error("no line number in {0:?}")]
pub struct NoLineNumber(pub String);

/// The entries a human report shows, read back from its text: per ranking (in report order,
/// named by its measure), the file heading and line number of each entry shown. What the tests
/// and the corpus benchmark check the report against the JSON with; an entry line without a
/// line number is an error.
pub fn shown_entries(human: &str) -> Result<Shown, NoLineNumber> {
    let mut shown: Shown = Vec::new();
    let mut file = String::new();
    for line in human.lines() {
        let heading = ["Most suspicious lines by ", "Most suspicious functions by "]
            .iter()
            .find_map(|h| line.strip_prefix(h));
        if let Some(rest) = heading {
            let measure = rest.split([' ', ',']).next().unwrap_or_default().to_string();
            shown.push((measure, Vec::new()));
        } else if let Some(function) = line.strip_prefix("  #") {
            // A function's heading ends with its `file:start-end` (or `file:line`).
            let place = function.split_whitespace().last().unwrap_or_default();
            file = place.rsplit_once(':').map_or(place, |(f, _)| f).to_string();
        } else if line.starts_with("  ") && !line.starts_with("   ") && !line.trim_start().starts_with('…') {
            file = line.trim().to_string();
        } else if line.trim_start().starts_with("rank ")
            && let Some((head, _)) = line.split_once(" | ")
            && let Some(ranking) = shown.last_mut()
        {
            let number = head.split_whitespace().last().unwrap_or_default();
            let n = number.parse().map_err(|_| NoLineNumber(line.to_string()))?;
            ranking.1.push((file.clone(), n));
        }
    }
    Ok(shown)
}

/// The report when no test failed: a coverage summary (and the timed-out tests, if any).
pub fn no_failures(report: &Report) -> String {
    let sum = &report.summary;
    let coverage = format!(
        "Coverage: {} of {} lines in {} ran ({:.1}%).\n",
        sum.covered_units,
        sum.units,
        crate::ui::counted(sum.files, "file", "files"),
        if sum.units == 0 {
            0.0
        } else {
            100.0 * sum.covered_units as f64 / sum.units as f64
        }
    );
    let alone = match sum.passed_alone {
        0 => String::new(),
        n => format!(
            "{}: {}; `-j 1` runs every test alone.\n",
            passed_alone(n),
            crate::ui::shortened(&alone_tests(report.spectra), 5)
        ),
    };
    if sum.timed_out == 0 {
        // Reused rows passed when they last ran: they are counted, and said to be reused.
        let reused = match sum.reused {
            0 => String::new(),
            n if n == sum.ran() => ", every one as it passed on the last run (reused: no edit reached it)".to_string(),
            n => format!(", {n} of them as they passed on the last run (reused)"),
        };
        return format!(
            "No failing tests: all {} tests passed ({} ignored){reused}; nothing to localise.\n{alone}{coverage}",
            sum.ran(),
            sum.ignored,
        );
    }
    format!(
        "No failing tests: {} passed, {} timed out, {} ignored; nothing to localise.\n{alone}{coverage}{}",
        sum.passed,
        sum.timed_out,
        sum.ignored,
        timed_out_tests(report.spectra)
    )
}

/// What `n` tests that passed alone did, for the summary.
fn passed_alone(n: usize) -> String {
    format!(
        "{n} failed only beside other tests and passed alone (ranked as passing: they share something \
         between processes, such as a temporary directory, a port or a file)"
    )
}

/// The tests that failed beside others and passed alone, as `binary name`.
fn alone_tests(spectra: &crate::spectra::Spectra) -> Vec<String> {
    spectra
        .tests
        .iter()
        .filter(|t| t.passed_alone)
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_script_s_output_is_told_from_sources() {
        assert!(written_by_build_script(
            "target/sfl/debug/build/gen-1f34ef868c1d8821/out/gen.rs"
        ));
        assert!(written_by_build_script(
            "/abs/target/debug/build/my-pkg-0123456789abcdef/out/sub/x.rs"
        ));
        assert!(!written_by_build_script("src/build/out.rs"));
        assert!(!written_by_build_script("src/build/cargo-1/out/x.rs"));
    }

    #[test]
    fn frames_are_shown_without_generic_arguments() {
        assert_eq!(
            without_generic_args(
                "<tokio_stream::stream_ext::peekable::Peekable<tokio_stream::iter::Iter<alloc::vec::into_iter::IntoIter<i32>>>>::peek::{closure#0}"
            ),
            "<tokio_stream::stream_ext::peekable::Peekable<…>>::peek::{closure#0}"
        );
        assert_eq!(
            without_generic_args(
                "<hashbrown::raw::RawTable<(i32, i32)>>::insert::<<hashbrown::map::HashMap<i32, i32>>::insert::{closure#1}>"
            ),
            "<hashbrown::raw::RawTable<…>>::insert::<…>"
        );
        assert_eq!(without_generic_args("<a::Map<fn(u8) -> u8>>::get"), "<a::Map<…>>::get");
        assert_eq!(
            without_generic_args("<semver::Version as core::fmt::Display>::fmt"),
            "<semver::Version as core::fmt::Display>::fmt"
        );
        assert_eq!(without_generic_args("tk::halve"), "tk::halve");
    }

    #[test]
    fn shown_entries_are_read_under_their_files() {
        let human = "\
Most suspicious lines by stack-ochiai (1 failing test of 4):
  src/a.rs
    rank 1    12 | if x < y {
    rank 2     3 | let z = 1;
  src/b.rs
    rank 2    40 | return;
  … and 2 more entries tied at rank 2
Most suspicious lines by ochiai, among 3 lines:
  src/b.rs
    rank 1    40 | return;
";
        let e = shown_entries(human).unwrap();
        assert_eq!(e[0].0, "stack-ochiai");
        assert_eq!(
            e[0].1,
            [("src/a.rs".into(), 12), ("src/a.rs".into(), 3), ("src/b.rs".into(), 40)]
        );
        assert_eq!(e[1], ("ochiai".to_string(), vec![("src/b.rs".to_string(), 40)]));
        assert!(shown_entries("Most suspicious lines by x\n  f\n    rank 1  x | y\n").is_err());
    }

    #[test]
    fn shown_entries_are_read_under_their_functions() {
        let human = "\
Most suspicious functions by stack-combined, top 2 of 2 functions:
  #1  clamp_low  src/util.rs:1-3
    rank     1      score  10.5138  ef   1 ep   0      2 | if x < 0 { 1 } else { x }
      … 2 more of its lines are ranked, the next at rank 4
  #2 =2  non_negative_sum  src/lib.rs:6-12
    rank     2      score  10.3007  ef   1 ep   0      9 | sum += util::clamp_low(v);
  #2 =2  (outside any function)  src/x.rs:40
    rank     3      score  1.0  ef   1 ep   0      40 | static X: u8 = 1;
";
        let e = shown_entries(human).unwrap();
        assert_eq!(e[0].0, "stack-combined");
        assert_eq!(
            e[0].1,
            [
                ("src/util.rs".into(), 2),
                ("src/lib.rs".into(), 9),
                ("src/x.rs".into(), 40)
            ]
        );
    }
}
