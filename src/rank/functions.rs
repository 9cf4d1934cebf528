//! A line ranking read function by function, as developers read suspects (Kochhar, Xia, Lo
//! and Li, "Practitioners' expectations on automated fault localization", ISSTA 2016: method
//! level is the granularity most prefer, and few look past the first five suspects).
//!
//! Functions come in the order a reader of the line ranking first meets them (a function
//! ranks where its best line ranks, as `--granularity function` ranks them), functions first
//! met in the same entry by their best line's evidence with [`function_evidence`]'s prior;
//! each with the entries that hold its lines, in rank order. The *reading order* is what a
//! person following the functions-first report reads: the line each of the [`TOP_FUNCTIONS`] functions' first
//! [`LINES_SHOWN`] entries is shown at (its first line in the function, with its source text),
//! function after function, then every ranked line not read yet, in rank order (as `--top` or the
//! JSON report lists them). On the regressions and Panic4R benchmarks one line per function read
//! fewest lines before the fault (`bench-results/regressions.md`): a second line of the first
//! function costs more often than it finds the fault.

use crate::evidence::LineEvidence;

/// Entries shown with their code under each function in the functions-first report (its other
/// ranked lines are listed by number).
pub const LINES_SHOWN: usize = 1;

/// Functions the functions-first report shows by default (`--top`).
pub const TOP_FUNCTIONS: usize = 5;

/// A function's tie evidence: its best line's, with the prior replaced by how many of the
/// function's lines that line's entry holds. Functions whose best lines share an entry (a
/// caller and a callee every test runs together) cannot be told apart by the spectrum; when
/// each of the entry's lines is as likely as any to be the fault, the function holding more of
/// them is likelier to hold it. (A line's own prior, one over its function's size, orders the
/// lines inside an entry.) Backtraces, nearness to an operation panic and the line's kind still
/// come first.
pub fn function_evidence(best_line: LineEvidence, lines_in_entry: usize) -> LineEvidence {
    LineEvidence {
        prior: lines_in_entry as f64,
        ..best_line
    }
}

/// One function of a line ranking, or a ranked line outside every function.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctionBlock {
    /// Index into `Spectra::functions`; `None` for an entry whose lines are in no function.
    pub function: Option<u32>,
    /// 1-based mid-rank among functions: functions whose best entry ranks strictly higher (or
    /// ties and their [`function_evidence`] there is higher), plus (functions tied with it +
    /// 1) / 2.
    pub rank: f64,
    /// Functions sharing this rank (1 when not tied).
    pub tied: usize,
    /// The entries holding its lines, in rank order: the entry's index and its lines in this
    /// function (in the entry's own order).
    pub entries: Vec<(usize, Vec<usize>)>,
}

/// The functions of a line ranking. `entries`: each entry's rank and lines (lead first), in
/// rank order; `unit_function`: each line's function; `evidence`: each line's tie evidence
/// (what orders an entry's lines; `None` with `--tie-break code`, which leaves functions first
/// met in one entry in the entry's order).
pub fn by_function(
    entries: &[(f64, &[usize])],
    unit_function: &[Option<u32>],
    evidence: impl Fn(usize) -> Option<LineEvidence>,
) -> Vec<FunctionBlock> {
    let mut blocks: Vec<FunctionBlock> = Vec::new();
    // Per function, its block; blocks of function-less entries are never joined.
    let mut block_of: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    // Per block, the rank of its best entry and its evidence there.
    let mut best: Vec<(f64, LineEvidence)> = Vec::new();
    for (e, (rank, lines)) in entries.iter().enumerate() {
        let mut here: Vec<(Option<u32>, Vec<usize>)> = Vec::new();
        for &u in *lines {
            let f = unit_function.get(u).copied().flatten();
            match here.iter_mut().find(|(g, _)| g.is_some() && *g == f) {
                Some((_, us)) => us.push(u),
                None => here.push((f, vec![u])),
            }
        }
        // Functions first met in one entry in the order `--granularity function` ranks them:
        // by their first line's evidence with the function's prior (the entry's own order,
        // stable, where that ties).
        let mut here: Vec<(Option<u32>, Vec<usize>, LineEvidence)> = here
            .into_iter()
            .map(|(f, us)| {
                let ev = evidence(us[0]).map_or(LineEvidence::NONE, |e| function_evidence(e, us.len()));
                (f, us, ev)
            })
            .collect();
        here.sort_by(|a, b| a.2.cmp_descending(&b.2));
        for (f, us, ev) in here {
            let b = match f.and_then(|f| block_of.get(&f).copied()) {
                Some(b) => b,
                None => {
                    blocks.push(FunctionBlock {
                        function: f,
                        rank: 0.0,
                        tied: 1,
                        entries: Vec::new(),
                    });
                    best.push((*rank, ev));
                    if let Some(f) = f {
                        block_of.insert(f, blocks.len() - 1);
                    }
                    blocks.len() - 1
                }
            };
            blocks[b].entries.push((e, us));
        }
    }
    // Blocks are in the order of their best entry, then of their evidence in it, so equal
    // keys are adjacent.
    let mut i = 0;
    while i < blocks.len() {
        let j = (i..blocks.len()).find(|&j| best[j] != best[i]).unwrap_or(blocks.len());
        let tied = j - i;
        for b in &mut blocks[i..j] {
            b.rank = i as f64 + (tied as f64 + 1.0) / 2.0;
            b.tied = tied;
        }
        i = j;
    }
    blocks
}

/// The lines in the order a reader of the functions-first report reads them: the line each
/// of the first `functions` blocks' first `shown` entries is shown at, block after block, then
/// the ranked lines not read yet in rank order (`entries` as for [`by_function`]). Each line
/// once.
pub fn reading_order(
    blocks: &[FunctionBlock],
    entries: &[(f64, &[usize])],
    (functions, shown): (usize, usize),
) -> Vec<usize> {
    let mut seen = std::collections::HashSet::new();
    let mut order = Vec::new();
    let shown_lines = blocks
        .iter()
        .take(functions)
        .flat_map(|b| b.entries.iter().take(shown).map(|(_, us)| us[0]));
    let rest = entries.iter().flat_map(|(_, lines)| lines.iter().copied());
    for u in shown_lines.chain(rest) {
        if seen.insert(u) {
            order.push(u);
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines 0-2 in function 0, 3-5 in function 1, 6 outside every function. Ranking: entry 0
    /// = [4], entry 1 = [0, 5] (alike across two functions), entry 2 = [1] and entry 3 = [6]
    /// tied at 3.5, entry 4 = [2, 3].
    type Entries = Vec<(f64, Vec<usize>)>;

    fn sample() -> (Entries, Vec<Option<u32>>) {
        let entries = vec![
            (1.0, vec![4]),
            (2.0, vec![0, 5]),
            (3.5, vec![1]),
            (3.5, vec![6]),
            (5.0, vec![2, 3]),
        ];
        let functions = vec![Some(0), Some(0), Some(0), Some(1), Some(1), Some(1), None];
        (entries, functions)
    }

    fn none(_: usize) -> Option<LineEvidence> {
        Some(LineEvidence::NONE)
    }

    fn borrowed(e: &[(f64, Vec<usize>)]) -> Vec<(f64, &[usize])> {
        e.iter().map(|(r, l)| (*r, l.as_slice())).collect()
    }

    #[test]
    fn functions_come_in_the_order_their_best_lines_rank_with_their_entries() {
        let (e, f) = sample();
        let blocks = by_function(&borrowed(&e), &f, none);
        type Shape = (Option<u32>, f64, usize, Vec<(usize, Vec<usize>)>);
        let shape: Vec<Shape> = blocks
            .into_iter()
            .map(|b| (b.function, b.rank, b.tied, b.entries))
            .collect();
        assert_eq!(
            shape,
            [
                (Some(1), 1.0, 1, vec![(0, vec![4]), (1, vec![5]), (4, vec![3])]),
                (Some(0), 2.0, 1, vec![(1, vec![0]), (2, vec![1]), (4, vec![2])]),
                (None, 3.0, 1, vec![(3, vec![6])]),
            ]
        );
    }

    #[test]
    fn functions_first_met_in_one_entry_come_by_their_lines_in_it() {
        // Entry 0 holds line 0 of function 0, then lines 3 and 4 of function 1: function 1
        // first; entry 1 holds line 1 of function 0.
        let (_, f) = sample();
        let e = [(1.0, vec![0, 3, 4]), (2.0, vec![1])];
        let blocks = by_function(&borrowed(&e), &f, none);
        let shape: Vec<_> = blocks.into_iter().map(|b| (b.function, b.rank, b.entries)).collect();
        assert_eq!(
            shape,
            [
                (Some(1), 1.0, vec![(0, vec![3, 4])]),
                (Some(0), 2.0, vec![(0, vec![0]), (1, vec![1])])
            ]
        );
        // A failing test's backtrace through line 0 outweighs the count of lines.
        let on_stack = |u: usize| {
            Some(LineEvidence {
                stack: if u == 0 { 1.0 } else { 0.0 },
                ..LineEvidence::NONE
            })
        };
        let blocks = by_function(&borrowed(&e), &f, on_stack);
        let order: Vec<_> = blocks.iter().map(|b| (b.function, b.rank)).collect();
        assert_eq!(order, [(Some(0), 1.0), (Some(1), 2.0)]);
        // `--tie-break code`: the entry's order, tied.
        let blocks = by_function(&borrowed(&e), &f, |_| None);
        let order: Vec<_> = blocks.iter().map(|b| (b.function, b.rank)).collect();
        assert_eq!(order, [(Some(0), 1.5), (Some(1), 1.5)]);
    }

    #[test]
    fn functions_whose_best_entries_tie_share_a_mid_rank() {
        // Two entries tied first, each in its own function; a third function below.
        let e = [(1.5, vec![0]), (1.5, vec![3]), (3.0, vec![6])];
        let f = [Some(0), None, None, Some(1), None, None, Some(2)];
        let blocks = by_function(&borrowed(&e), &f, none);
        let ranks: Vec<(f64, usize)> = blocks.iter().map(|b| (b.rank, b.tied)).collect();
        assert_eq!(ranks, [(1.5, 2), (1.5, 2), (3.0, 1)]);
    }

    #[test]
    fn the_reader_reads_each_functions_first_lines_then_the_rest_in_rank_order() {
        let (e, f) = sample();
        let e = borrowed(&e);
        let blocks = by_function(&e, &f, none);
        // Function 1's lines 4, 5 and 3, function 0's 0, 1 and 2 (entry 4's line in it), 6.
        assert_eq!(reading_order(&blocks, &e, (5, 3)), [4, 5, 3, 0, 1, 2, 6]);
        // One entry per function: function 1's line 4, function 0's line 0, then 6; the rest
        // in rank order (5 of entry 1, 1, then 2 and 3 of entry 4).
        assert_eq!(reading_order(&blocks, &e, (5, 1)), [4, 0, 6, 5, 1, 2, 3]);
        // Only the first function shown: its line 4, then the rest in rank order.
        assert_eq!(reading_order(&blocks, &e, (1, 1)), [4, 0, 5, 1, 6, 2, 3]);
        // An entry of several lines in one function is read at its first line there; the
        // others wait for the rest.
        let e2 = [(1.0, vec![4, 3]), (2.0, vec![0])];
        let e2 = borrowed(&e2);
        let blocks = by_function(&e2, &f, none);
        assert_eq!(reading_order(&blocks, &e2, (5, 3)), [4, 0, 3]);
    }
}
