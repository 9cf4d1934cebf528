//! The functions-first layout of a ranking (the default).

use std::fmt::Write as _;

use super::super::disk::{History, Sources};
use super::super::model::{FunctionBlock, Ranking, Report};
use super::super::view::View;
use super::rows::{entry_line, fmt_rank, line_entry};
use crate::rank::functions::LINES_SHOWN;
use crate::spectra::Spectra;

/// The functions-first layout: the top functions in rank order (each where its best line
/// ranks), each with its file and span, and under it its most suspicious lines with their own
/// ranks; then what the cut leaves out. The order on screen is the reading order.
pub(super) fn by_function(
    out: &mut String,
    report: &Report,
    r: &Ranking,
    (blocks, names): (&[FunctionBlock], &[String]),
    view: &View,
    (sources, history): (&Sources, &History),
) {
    let shown = &blocks[..view.top.min(blocks.len())];
    let order = if r.ht.is_some() {
        " in the HT_Rank model's order"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{}{order}, top {} of {}:",
        console::style(format!("Most suspicious functions by {}", r.measure.name)).bold(),
        shown.len(),
        crate::ui::counted(blocks.len(), "function", "functions"),
    );
    for b in shown {
        let head = format!("  {}", function_heading(report.spectra, b, names));
        let _ = writeln!(out, "{}", console::style(head).cyan().bold());
        if let Some(change) = b.function.and_then(|f| {
            let span = &report.spectra.functions[f as usize];
            history.last_change(&span.file, span.start, span.end)
        }) {
            let _ = writeln!(out, "    {}", console::style(history.describe(change)).dim());
        }
        function_lines(out, report, r, b, sources);
    }
    if let Some(rev) = view.diff_base {
        let shown_lines: Vec<(usize, usize)> = shown
            .iter()
            .flat_map(|b| b.entries.iter().take(LINES_SHOWN).map(|(e, us)| (*e, us[0])))
            .collect();
        let k = shown_lines
            .iter()
            .filter(|(e, u)| r.entries[*e].changed_lines.contains(u))
            .count();
        let _ = writeln!(
            out,
            "  {k} of the {} shown changed since {rev}",
            crate::ui::counted(shown_lines.len(), "line", "lines")
        );
    }
    if let Some(last) = shown.last() {
        let more_tied = blocks[shown.len()..].iter().filter(|b| b.rank == last.rank).count();
        if more_tied > 0 {
            let _ = writeln!(
                out,
                "  … and {} more tied at #{}",
                crate::ui::counted(more_tied, "function", "functions"),
                fmt_rank(last.rank)
            );
        }
    }
}

/// A function's heading: `#rank[ =tied]  name  file:start-end` (a ranked line outside every
/// function: `(outside any function)  file:line`). The page's table heads its rows alike.
pub(crate) fn function_heading(spectra: &Spectra, b: &FunctionBlock, names: &[String]) -> String {
    let lead = &spectra.units[b.entries[0].1[0]];
    let place = match b.function {
        Some(f) => {
            let span = &spectra.functions[f as usize];
            let name = names.get(f as usize).map_or("?", String::as_str);
            let lines = crate::report::text::LineSpan {
                start: span.start,
                end: span.end,
            };
            format!("{name}  {}:{lines}", span.file)
        }
        None => format!("(outside any function)  {}:{}", lead.file, lead.line),
    };
    let tie = if b.tied > 1 {
        format!(" ={}", b.tied)
    } else {
        String::new()
    };
    format!("#{}{tie}  {place}", fmt_rank(b.rank))
}

/// A function's first entries, each at its first line in the function with its code, then its
/// other ranked lines by number and rank ([`ALSO_LISTED`] at most).
fn function_lines(out: &mut String, report: &Report, r: &Ranking, b: &FunctionBlock, sources: &Sources) {
    for (e, lines) in b.entries.iter().take(LINES_SHOWN) {
        let x = &r.entries[*e];
        let (location, src) = line_entry(&report.spectra.units, &x.in_code_order(), lines[0], sources);
        let text = entry_line(r, x, (&location, x.changed_lines.contains(&lines[0])), &src);
        let text = if x.rank <= 1.0 {
            console::style(text).red().to_string()
        } else {
            text
        };
        let _ = writeln!(out, "{text}");
    }
    // Its other ranked lines: the shown entries' other lines in it, then the later entries'.
    let units = &report.spectra.units;
    let others: Vec<(u32, f64)> = b
        .entries
        .iter()
        .enumerate()
        .flat_map(|(i, (e, lines))| {
            let skip = usize::from(i < LINES_SHOWN);
            lines.iter().skip(skip).map(|&u| (units[u].line, r.entries[*e].rank))
        })
        .collect();
    if others.is_empty() {
        return;
    }
    let listed: Vec<String> = others
        .iter()
        .take(ALSO_LISTED)
        .map(|(line, rank)| format!("{line} ({})", fmt_rank(*rank)))
        .collect();
    let more = match others.len().saturating_sub(ALSO_LISTED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let _ = writeln!(out, "      also ranked in it, line (rank): {}{more}", listed.join(", "));
}

/// Other ranked lines of a function listed by number under it.
const ALSO_LISTED: usize = 6;
