//! `--format short`: one `file:line:column: severity: message` line per reported entry, the
//! shape compilers print and that editors' quickfix lists (Vim's `errorformat`, Emacs's
//! compilation mode) and VS Code's problem matchers read. Each line is an entry's lead line (the
//! one every other report shows it at), `warning` within [`super::WARNING_RANKS`] and `note` for
//! the rest (as cargo's JSON and SARIF give them); the message names the measure, the rank, the score and the counts.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::disk::Disk;
use super::model::{Ranking, Report};
use super::text::fmt_score;
use super::view::{ShownLine, View};

/// The short report: the top entries of each ranking, one line each, nothing else (no failing
/// tests, no summary: a quickfix list wants locations).
pub fn short(report: &Report, view: &View, disk: &Disk) -> String {
    let mut out = String::new();
    for r in &report.rankings {
        let total_f = r.entries.first().map_or(0.0, |x| x.counts.ef + x.counts.nf);
        let total_p = r.entries.first().map_or(0.0, |x| x.counts.ep + x.counts.np);
        for shown in view.shown(r) {
            // Imported units name no file: nothing an editor can jump to.
            if report.spectra.units[shown.lead].name().is_none() {
                short_entry(&mut out, report, r, &shown, (total_f, total_p), view, disk);
            }
        }
    }
    out
}

/// One entry at the line it is shown at (at function granularity, its first function, named;
/// functions first, its function named with its rank).
fn short_entry(
    out: &mut String,
    report: &Report,
    r: &Ranking,
    shown: &ShownLine,
    (total_f, total_p): (f64, f64),
    view: &View,
    disk: &Disk,
) {
    let spectra = report.spectra;
    let x = shown.entry;
    let unit = &spectra.units[shown.lead];
    let name = view
        .function(spectra, x.lead())
        .map(|(name, _)| name.to_string())
        .or_else(|| shown.function_label());
    let column = disk
        .sources
        .line(&unit.file, unit.line)
        .and_then(|text| text.find(|c: char| !c.is_whitespace()))
        .map_or(1, |i| i + 1);
    let severity = super::text::level(x.rank);
    let subject = name.map_or_else(String::new, |n| format!("{n}: "));
    let _ = write!(
        out,
        "{}:{}:{column}: {severity}: {subject}{} rank {} of {}, {} {}, run by {} of {} failing and {} of {} passing tests",
        shown_path(Path::new(&spectra.workspace_root), &unit.file, disk.here.as_deref()),
        unit.line,
        r.measure.name,
        x.rank,
        r.entries.len(),
        r.measure.score_noun(),
        fmt_score(r.measure, x),
        x.counts.ef,
        total_f,
        x.counts.ep,
        total_p,
    );
    if x.panicked {
        out.push_str("; a failing test panicked on its own operation");
    }
    if x.lines.len() > 1 {
        let noun = view.unit_noun();
        let more = crate::ui::counted(
            x.lines.len() - 1,
            &format!("more {noun} runs"),
            &format!("more {noun}s run"),
        );
        let _ = write!(out, "; {more} exactly alike");
    }
    out.push('\n');
}

/// `file` (relative to the workspace `root`) as an editor run in `here` finds it: relative to
/// `here` when it is inside, else absolute.
fn shown_path(root: &Path, file: &str, here: Option<&Path>) -> String {
    let full: PathBuf = root.join(file);
    match here.and_then(|h| full.strip_prefix(h).ok()) {
        Some(rel) => rel.to_string_lossy().into_owned(),
        None => full.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_relative_to_the_current_directory_when_inside_it() {
        let root = Path::new("/ws");
        assert_eq!(shown_path(root, "src/lib.rs", Some(Path::new("/ws"))), "src/lib.rs");
        assert_eq!(
            shown_path(root, "core/src/lib.rs", Some(Path::new("/ws/core"))),
            "src/lib.rs"
        );
        assert_eq!(
            shown_path(root, "src/lib.rs", Some(Path::new("/elsewhere"))),
            "/ws/src/lib.rs"
        );
        assert_eq!(shown_path(root, "src/lib.rs", None), "/ws/src/lib.rs");
    }
}
