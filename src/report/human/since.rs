//! The "changed since these tests last passed" section.

use std::fmt::Write as _;

use super::super::disk::Sources;
use super::super::model::Report;
use super::rows::fmt_rank;

/// Changed lines shown in the "changed since these tests last passed" section.
const CHANGED_SHOWN: usize = 10;

/// The lines changed since the last green run that the tests failing since run, most
/// suspicious first by the first ranking, each with its rank there and how many of those
/// tests run it. Shown, not ranked: no benchmark of ours can say what the fact is worth.
pub(super) fn changed_since_passed(out: &mut String, report: &Report, sources: &Sources) {
    let Some(since) = &report.since_passed else { return };
    let spectra = report.spectra;
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(since.taken);
    // Blank and comment lines say nothing of where the change is.
    let unseen: Vec<&(String, u32)> = since
        .unseen
        .iter()
        .filter(|(file, line)| {
            let text = sources.line(file, *line).map(str::trim);
            !text.is_some_and(|t| t.is_empty() || t.starts_with("//"))
        })
        .collect();
    let they_run = if since.lines.is_empty() && !since.in_tests.is_empty() {
        "no changed line they run outside their own code".to_string()
    } else if since.lines.is_empty() && !(unseen.is_empty() && since.files.is_empty()) {
        "no changed line they run: the change is where no coverage shows".to_string()
    } else if since.lines.is_empty() && !since.env.is_empty() {
        "no changed line they run: the environment changed".to_string()
    } else if since.lines.is_empty() {
        "no changed line they run (the change is elsewhere: test code, a dependency, a data file)".to_string()
    } else {
        format!(
            "{} they run",
            crate::ui::counted(since.lines.len(), "changed line", "changed lines")
        )
    };
    let _ = writeln!(
        out,
        "\n{} ({}, passing in the run started {}): {they_run}",
        console::style("Changed since these tests last passed").bold(),
        crate::ui::counted(since.tests.len(), "failing test", "failing tests"),
        crate::ui::ago(when),
    );
    let ranking = report.rankings.first();
    let rank_of = |u: usize| ranking.and_then(|r| r.entries.iter().find(|x| x.lines.contains(&u)).map(|x| x.rank));
    let mut lines: Vec<&(usize, Vec<usize>)> = since.lines.iter().collect();
    lines.sort_by(|a, b| {
        let (ra, rb) = (rank_of(a.0).unwrap_or(f64::MAX), rank_of(b.0).unwrap_or(f64::MAX));
        ra.total_cmp(&rb).then(a.0.cmp(&b.0))
    });
    for (u, tests) in lines.iter().take(CHANGED_SHOWN) {
        let unit = &spectra.units[*u];
        let rank = match (rank_of(*u), ranking) {
            (Some(r), Some(ranking)) => format!("rank {} by {}", fmt_rank(r), ranking.measure.name),
            _ => "not ranked".to_string(),
        };
        let _ = writeln!(
            out,
            "  {}:{}  {rank}, run by {} of {}  | {}",
            unit.file,
            unit.line,
            tests.len(),
            since.tests.len(),
            sources.line(&unit.file, unit.line).unwrap_or("").trim()
        );
    }
    if lines.len() > CHANGED_SHOWN {
        let _ = writeln!(out, "  … and {} more", lines.len() - CHANGED_SHOWN);
    }
    in_tests(out, &since.in_tests, sources);
    unseen_and_other_files(out, &unseen, &since.files, sources);
    if !since.env.is_empty() {
        let _ = writeln!(
            out,
            "  environment variables changed: {}",
            crate::ui::shortened(&since.env, CHANGED_SHOWN)
        );
    }
}

/// The changed lines of the failing tests' own code.
fn in_tests(out: &mut String, lines: &[(String, u32)], sources: &Sources) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  changed in the failing tests' own code (no ranking holds test code):"
    );
    for (file, line) in lines.iter().take(CHANGED_SHOWN) {
        let _ = writeln!(
            out,
            "    {file}:{line}  | {}",
            sources.line(file, *line).unwrap_or("").trim()
        );
    }
}

/// The changed lines no test's coverage shows, and the other files changed.
fn unseen_and_other_files(out: &mut String, unseen: &[&(String, u32)], files: &[String], sources: &Sources) {
    if !unseen.is_empty() {
        let _ = writeln!(
            out,
            "  changed where no test's coverage shows (code that runs while compiling: a build script, a proc macro, a build dependency, a const's value; code a macro generates that the coverage map leaves out; or a file no test binary's coverage holds: constants only, a dependency that is not instrumented):"
        );
        for (file, line) in unseen.iter().take(CHANGED_SHOWN) {
            let text = sources.line(file, *line).unwrap_or("").trim();
            let _ = writeln!(out, "  {file}:{line}  | {text}");
        }
        if unseen.len() > CHANGED_SHOWN {
            let _ = writeln!(out, "  … and {} more", unseen.len() - CHANGED_SHOWN);
        }
    }
    if !files.is_empty() {
        // Data a build script or a test reads, a manifest (a dependency's version), a removed
        // source: no line of theirs is code a test runs.
        let _ = writeln!(
            out,
            "  other files changed: {}",
            crate::ui::shortened(files, CHANGED_SHOWN)
        );
    }
}
