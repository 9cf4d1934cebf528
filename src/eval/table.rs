//! The evaluation's report: the `cargo-sfl-eval/v1` JSON and the readable table.

use std::fmt::Write as _;

use super::report::{EntryMetrics, EvalReport, FaultState, MeasureResult, Metrics, TOP_N};
use crate::config::SortBy;
use crate::hitting::Method;

/// `--format json`.
pub fn json(report: &EvalReport) -> String {
    let mut s = serde_json::to_string_pretty(report).expect("evaluation serialises");
    s.push('\n');
    s
}

/// The readable table, best first by `sort`.
pub fn human(report: &EvalReport, sort: SortBy) -> String {
    let mut out = String::new();
    for f in &report.faults {
        let lines = f.fault.lines.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let state = match f.state {
            FaultState::Ranked => "ranked",
            FaultState::RunOnlyByPassingTests => "run only by passing tests (ranked last)",
            FaultState::Unlocalisable => "UNLOCALISABLE: no test ran it (an omission, or unreached code)",
        };
        let _ = writeln!(out, "fault {}:{lines}  {state}", f.fault.file);
    }
    let _ = writeln!(
        out,
        "{} executed lines, {} run by a failing test\n",
        report.lines, report.ranked_lines
    );
    if report.measures.is_empty() {
        return out;
    }
    let mut rows: Vec<&MeasureResult> = report.measures.iter().collect();
    rows.sort_by(|a, b| {
        sort_key(sort, &a.metrics)
            .total_cmp(&sort_key(sort, &b.metrics))
            .then_with(|| a.measure.cmp(b.measure))
    });
    let _ = writeln!(
        out,
        "{:<22} {:>9} {:>6} {:>5} {:>9} {:>7} {:>7} {:>7} {:>7} {:>4} {:>4} {:>4} {:>4} {:>9} {:>8}",
        "measure",
        "std rank",
        "entry",
        "etop",
        "steimann",
        "min",
        "max",
        "avg",
        "EXAM",
        "top1",
        "top3",
        "top5",
        "top10",
        "accuracy",
        "HT_Rank"
    );
    for r in rows {
        row(&mut out, r);
    }
    let _ = writeln!(
        out,
        "\nstd rank: Standard Rank Score (higher + tied/2); entry: the same over report entries (lines alike are one entry);\n\
         etop: the smallest N of 1/3/5/10 with the first faulty entry expected within N entries; steimann: expected position of the first fault; min/max/avg: expense;\n\
         EXAM: avg/lines; topN: first fault expected within N lines; accuracy: non-faulty lines before it; HT_Rank: ~ = estimated."
    );
    out
}

/// One measure's row of the table.
fn row(out: &mut String, r: &MeasureResult) {
    let mark = |b: bool| if b { "yes" } else { "-" };
    let m = &r.metrics;
    let ht = match (m.ht_rank, &r.ht) {
        (Some(h), Some(Method::Estimated { .. })) => format!("~{h:.1}"),
        (Some(h), _) => format!("{h:.1}"),
        (None, Some(Method::Unavailable { .. })) => "n/a".into(),
        (None, _) => "-".into(),
    };
    let _ = writeln!(
        out,
        "{:<22} {:>9.1} {:>6.1} {:>5} {:>9.2} {:>7.0} {:>7.0} {:>7.1} {:>7.4} {:>4} {:>4} {:>4} {:>4} {:>9.2} {:>8}",
        r.measure,
        m.standard_rank,
        r.entries.entry_rank,
        entry_top(&r.entries),
        m.steimann_rank,
        m.min_expense,
        m.max_expense,
        m.avg_expense,
        m.exam,
        mark(m.top["1"]),
        mark(m.top["3"]),
        mark(m.top["5"]),
        mark(m.top["10"]),
        m.accuracy,
        ht
    );
}

/// The smallest N of [`TOP_N`] whose entry-level top-N holds; `-` when none does.
pub(super) fn entry_top(e: &EntryMetrics) -> String {
    TOP_N
        .iter()
        .find(|n| e.entry_top[&n.to_string()])
        .map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The value of `m` that `sort` orders the table by (smaller is better).
fn sort_key(sort: SortBy, m: &Metrics) -> f64 {
    match sort {
        SortBy::StandardRank => m.standard_rank,
        SortBy::SteimannRank => m.steimann_rank,
        SortBy::Exam => m.exam,
        SortBy::Accuracy => m.accuracy,
        SortBy::HtRank => m.ht_rank.unwrap_or(f64::INFINITY),
        SortBy::Name => 0.0,
    }
}
