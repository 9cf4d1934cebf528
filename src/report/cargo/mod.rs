//! `--message-format json`: the suspects as cargo's own JSON messages, one `compiler-message`
//! line per shown line, which every tool that reads `cargo check --message-format json` shows
//! (rust-analyzer's `check.overrideCommand`, and with it every LSP editor). cargo's build
//! messages come first, passed through as cargo printed them (the build's business); this
//! writes the suspects after them.
//!
//! Each diagnostic is a `warning` when its line's entry ranks within [`super::WARNING_RANKS`] (the
//! lines an editor should underline), a `note` for the other shown lines; its message names
//! the rank, the score, the measure, the function and the failing tests that ran the line; its
//! primary span is the line's code, the entry's other lines are secondary spans, and each failing
//! test that ran it is a child note at its panic site. The package id, manifest path and target
//! are those of the workspace member whose target holds the file.

use std::fmt::Write as _;
use std::path::Path;

use super::disk::{Disk, Package, Sources};
use super::model::{Ranking, Report};
use super::text::{fmt_score, level, test_label};
use super::view::{ShownLine, View};
use crate::spectra::Spectra;

mod model;
use model::{Code, CompilerMessage, Diagnostic, Span, SpanLine};

/// Secondary spans at most per diagnostic (the entry's other lines).
const ALIKE_SPANS: usize = 8;

/// One `compiler-message` line per shown line of each ranking (none for a line of no member's
/// target, or of an imported unit).
pub fn messages(report: &Report, view: &View, disk: &Disk) -> String {
    let mut out = String::new();
    let root = Path::new(&report.spectra.workspace_root);
    for r in &report.rankings {
        for shown in view.shown(r) {
            let unit = &report.spectra.units[shown.lead];
            if unit.name().is_some() {
                continue;
            }
            let Some((package, target)) = owner(&disk.packages, root, &unit.file) else {
                continue;
            };
            let message = CompilerMessage {
                reason: "compiler-message",
                package_id: &package.id,
                manifest_path: &package.manifest_path,
                target,
                message: diagnostic(report, r, &shown, disk),
            };
            let _ = writeln!(
                out,
                "{}",
                serde_json::to_string(&message).expect("a message serialises")
            );
        }
    }
    out
}

/// The member and target whose sources hold `file` (relative to `root`): the target whose root
/// file's directory is the longest prefix of it, a library first.
fn owner<'p>(packages: &'p [Package], root: &Path, file: &str) -> Option<(&'p Package, &'p cargo_metadata::Target)> {
    let path = root.join(file);
    packages
        .iter()
        .flat_map(|p| p.targets.iter().map(move |t| (p, t)))
        .filter_map(|(p, t)| {
            let dir = t.src_path.parent()?.as_std_path();
            path.starts_with(dir).then(|| {
                let library = t.kind.iter().any(|k| matches!(k, cargo_metadata::TargetKind::Lib));
                ((dir.components().count(), library), (p, t))
            })
        })
        .max_by_key(|(key, _)| *key)
        .map(|(_, owner)| owner)
}

/// The diagnostic of one shown line.
fn diagnostic(report: &Report, r: &Ranking, shown: &ShownLine, disk: &Disk) -> Diagnostic {
    let spectra = report.spectra;
    let x = shown.entry;
    let lead = shown.lead;
    let failing = failing_that_ran(spectra, lead);
    let names: Vec<String> = failing.iter().map(|&t| test_label(&spectra.tests[t])).collect();
    let total_f = x.counts.ef + x.counts.nf;
    let total_p = x.counts.ep + x.counts.np;
    let function = shown.function_label().map(|f| format!(" in {f}")).unwrap_or_default();
    let alike_lines = x.lines.len() - 1;
    let alike_note = match alike_lines {
        0 => String::new(),
        n if n <= ALIKE_SPANS => format!(
            "; {} exactly alike",
            crate::ui::counted(n, "more line runs", "more lines run")
        ),
        n => format!("; {n} more lines run exactly alike (the first {ALIKE_SPANS} marked)"),
    };
    let changed_note = if x.changed_lines.contains(&lead) {
        "; changed since the diff base"
    } else {
        ""
    };
    let message = format!(
        "suspicious line{function}: rank {} of {} by {}, {} {}; run by {} of {} failing tests ({}) and {} of {} passing{alike_note}{changed_note}",
        x.rank,
        crate::ui::counted(r.entries.len(), "entry", "entries"),
        r.measure.name,
        r.measure.score_noun(),
        fmt_score(r.measure, x),
        x.counts.ef,
        total_f,
        crate::ui::shortened(&names, 3),
        x.counts.ep,
        total_p,
    );
    let level = level(x.rank);
    let unit = &spectra.units[lead];
    let mut spans = vec![span(
        &disk.sources,
        &unit.file,
        unit.line,
        None,
        true,
        Some(format!("rank {}", x.rank)),
    )];
    let alike = x.in_code_order().into_iter().filter(|&u| u != lead);
    for u in alike.take(ALIKE_SPANS) {
        let other = &spectra.units[u];
        if other.name().is_none() {
            spans.push(span(
                &disk.sources,
                &other.file,
                other.line,
                None,
                false,
                Some("runs exactly like it".into()),
            ));
        }
    }
    let children: Vec<Diagnostic> = failing.iter().map(|&t| failed_here(spectra, t, disk)).collect();
    let rendered = render(level, &message, &spans, &children, &disk.sources);
    Diagnostic {
        message_type: Some("diagnostic"),
        message,
        code: Some(Code {
            code: format!("sfl::{}", r.measure.name),
            explanation: None,
        }),
        level,
        spans,
        children,
        rendered: Some(rendered),
    }
}

/// The failing tests that ran unit `u`.
fn failing_that_ran(spectra: &Spectra, u: usize) -> Vec<usize> {
    spectra.coverage[u]
        .iter()
        .filter(|&t| spectra.tests[t].outcome.is_failing())
        .collect()
}

/// A failing test as a child note: its name and panic message, at its panic site when that is
/// a file of the workspace whose text was read.
fn failed_here(spectra: &Spectra, t: usize, disk: &Disk) -> Diagnostic {
    let test = &spectra.tests[t];
    let headline = test.message.as_deref().map(super::sarif::headline).unwrap_or("");
    let site = test.message.as_deref().and_then(super::sarif::panic_site);
    let spans = site
        .filter(|(file, line, _)| disk.sources.line(file, *line).is_some())
        .map(|(file, line, col)| span(&disk.sources, &file, line, Some(col), true, Some("failed here".into())))
        .into_iter()
        .collect();
    let message = match headline.trim() {
        "" => format!("test {} {}", test_label(test), test.outcome.as_str()),
        h => format!("test {} {}: {h}", test_label(test), test.outcome.as_str()),
    };
    Diagnostic {
        message_type: None,
        message,
        code: None,
        level: "note",
        spans,
        children: Vec::new(),
        rendered: None,
    }
}

/// A span over `line` of `file` from `column` (1-based; default its first non-blank
/// character) to the line's end. Byte offsets count `\n`-terminated lines.
fn span(
    sources: &Sources,
    file: &str,
    line: u32,
    column: Option<u32>,
    is_primary: bool,
    label: Option<String>,
) -> Span {
    let lines = sources.lines(file);
    let text = sources.line(file, line).unwrap_or("");
    let indent = text.chars().take_while(|c| c.is_whitespace()).count();
    let start = column.map_or(indent + 1, |c| c as usize).max(1);
    let end = (text.chars().count() + 1).max(start + 1);
    let line_byte: usize = lines
        .iter()
        .take(line.saturating_sub(1) as usize)
        .map(|l| l.len() + 1)
        .sum();
    let byte_at = |col: usize| line_byte + text.chars().take(col - 1).map(char::len_utf8).sum::<usize>();
    Span {
        file_name: file.to_string(),
        byte_start: byte_at(start) as u32,
        byte_end: byte_at(end.min(text.chars().count() + 1)) as u32,
        line_start: line as usize,
        line_end: line as usize,
        column_start: start,
        column_end: end,
        is_primary,
        text: vec![SpanLine {
            text: text.to_string(),
            highlight_start: start,
            highlight_end: end,
        }],
        label,
        suggested_replacement: None,
        suggestion_applicability: None,
        expansion: None,
    }
}

/// The diagnostic as rustc renders one: the headline, the primary span's line underlined with
/// its label, then the children as `= note:` lines.
fn render(level: &str, message: &str, spans: &[Span], children: &[Diagnostic], sources: &Sources) -> String {
    let mut out = format!("{level}: {message}\n");
    if let Some(p) = spans.iter().find(|s| s.is_primary) {
        let number = p.line_start.to_string();
        let pad = " ".repeat(number.len());
        let text = sources.line(&p.file_name, p.line_start as u32).unwrap_or("");
        let marks = "^".repeat(p.column_end.saturating_sub(p.column_start).max(1));
        let _ = writeln!(out, "{pad}--> {}:{}:{}", p.file_name, p.line_start, p.column_start);
        let _ = writeln!(out, "{pad} |");
        let _ = writeln!(out, "{number} | {text}");
        let _ = writeln!(
            out,
            "{pad} | {}{marks} {}",
            " ".repeat(p.column_start - 1),
            p.label.as_deref().unwrap_or("")
        );
        let _ = writeln!(out, "{pad} |");
        for c in children {
            let _ = writeln!(out, "{pad} = note: {}", c.message);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources() -> Sources {
        let mut s = Sources::default();
        s.insert("src/lib.rs", "fn a() {\n    let é = 1;\n}\n");
        s
    }

    /// Columns count characters from the first non-blank one; bytes count the file's.
    #[test]
    fn a_span_covers_the_lines_code() {
        let s = span(&sources(), "src/lib.rs", 2, None, true, Some("rank 1".into()));
        assert_eq!((s.column_start, s.column_end), (5, 15));
        // "fn a() {\n" is 9 bytes; 4 spaces; "let é = 1;" is 11 bytes.
        assert_eq!((s.byte_start, s.byte_end), (13, 24));
        assert_eq!(s.text[0].text, "    let é = 1;");
        let at = span(&sources(), "src/lib.rs", 2, Some(9), true, None);
        assert_eq!((at.column_start, at.byte_start), (9, 17));
    }

    #[test]
    fn rendered_like_rustc() {
        let spans = [span(&sources(), "src/lib.rs", 2, None, true, Some("rank 1".into()))];
        let text = render("warning", "suspicious line", &spans, &[], &sources());
        assert_eq!(
            text,
            "warning: suspicious line\n --> src/lib.rs:2:5\n  |\n2 |     let é = 1;\n  |     ^^^^^^^^^^ rank 1\n  |\n"
        );
    }
}
