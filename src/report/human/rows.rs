//! One row of the terminal report: an entry's rank, score, counts and line, with the other
//! lines of its entry in short; shared by both layouts.

use std::fmt::Write as _;

use super::super::disk::Sources;
use super::super::model::{Entry, Ranking};
use super::super::text::{fmt_score, spans};
use crate::spectra::Unit;

/// One entry: its rank, score and counts, then `location | src`.
/// `changed`: the line shown changed since `--diff-base`.
pub(super) fn entry_line(r: &Ranking, x: &Entry, (location, changed): (&str, bool), src: &str) -> String {
    let what = r.measure.score_noun();
    let tie = if x.tied > 1 {
        format!("={}", x.tied)
    } else {
        String::new()
    };
    let certain = [
        (x.panicked, " panicked"),
        (x.certain, " certain"),
        (changed, " changed"),
    ]
    .iter()
    .filter(|(on, _)| *on)
    .map(|(_, tag)| *tag)
    .collect::<String>();
    let time = x.expected_time.map(|t| format!("  E[T] {t:>7.1}")).unwrap_or_default();
    format!(
        "    rank {:>5} {:<4} {what} {:>8}{time}  ef {:>3} ep {:>3}{certain}  {location:>5} | {src}",
        fmt_rank(x.rank),
        tie,
        fmt_score(r.measure, x),
        x.counts.ef,
        x.counts.ep,
    )
}

/// A line entry's location (its lead line: the first, or the best by evidence) and text (that
/// line's source, and the other lines of its group in short).
pub(super) fn line_entry(units: &[Unit], group: &[usize], lead: usize, sources: &Sources) -> (String, String) {
    let first = &units[lead];
    let mut src = sources.line(&first.file, first.line).unwrap_or("").trim().to_string();
    let others: Vec<usize> = group.iter().copied().filter(|&u| u != lead).collect();
    if !others.is_empty() {
        let noun = if others.len() == 1 { "line" } else { "lines" };
        let _ = write!(
            src,
            "   (+{} {noun} alike: {})",
            others.len(),
            alike(&first.file, &others, units)
        );
    }
    (first.line.to_string(), src)
}

/// The other lines of an entry in short: spans in the lead line's `file` first and bare, then
/// the others prefixed with their file; cut to 60 characters.
pub(super) fn alike(file: &str, others: &[usize], units: &[Unit]) -> String {
    let spans = spans(others, units);
    let own = spans.iter().filter(|fs| fs.file == file).map(|fs| fs.runs());
    let elsewhere = spans
        .iter()
        .filter(|fs| fs.file != file)
        .map(|fs| format!("{}:{}", fs.file, fs.runs()));
    let all: Vec<String> = own.chain(elsewhere).collect();
    cut(&all.join(", "))
}

/// `list` cut to 60 characters, at a separator (`,`) so that no number is cut in two.
pub(super) fn cut(list: &str) -> String {
    if list.chars().count() <= 60 {
        return list.to_string();
    }
    let head: String = list.chars().take(59).collect();
    let whole = match list.chars().nth(59) {
        // The head ends where an item ends.
        Some(',') => head.as_str(),
        _ => head.rfind(',').map_or(head.as_str(), |i| &head[..i]),
    };
    format!("{},…", whole.trim_end_matches([',', ' ']))
}

pub(super) fn fmt_rank(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_long_list_is_cut_between_items() {
        let list = "28-30,32,36-37,58-63,67,77-78,102,106-107,120,124-126,240,251,260-270";
        let got = super::cut(list);
        assert_eq!(got, "28-30,32,36-37,58-63,67,77-78,102,106-107,120,124-126,240,…");
        assert_eq!(super::cut("1,2"), "1,2");
    }
}
