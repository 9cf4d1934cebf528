//! `cargo sfl eval`: how well each measure localises known faults.
//!
//! Locations are the executed lines (units run by some test). Lines run by a failing test are
//! ranked by the measure; lines run only by passing tests come last, tied. A fault is a set of
//! lines and is found when any of them is inspected; a fault none of whose lines any test ran
//! (an omission) cannot be localised by coverage and is reported as such.
//!
//! Metrics, for the best-ranked faulty line f (key k_f), with `higher` lines ranked strictly
//! above it, `tied` lines at its key of which `tied_faulty` are faulty, and |L| lines:
//! - Standard Rank Score (Henderson et al. Def. 17): `higher + tied / 2`.
//! - Steimann rank (Def. 18, faults tied): `higher + (tied + 1) / (tied_faulty + 1)`, the
//!   expected position of the first faulty line when ties are broken at random.
//! - Min / Max / Avg expense (Zhang et al.'s cloning study): position of the first faulty line when the tie is
//!   broken best (`higher + 1`), worst (`higher + tied - tied_faulty + 1`), and their mean.
//! - EXAM: Avg expense / |L|.
//! - Top-N: whether the Steimann rank (expected position, faulty lines counted) is ≤ N.
//! - Accuracy (Doric): expected non-faulty lines inspected before the first fault,
//!   `higher + (tied - tied_faulty) / (tied_faulty + 1)`.
//! - HT_Rank (Henderson et al. Def. 25) from [`crate::hitting`].

use std::collections::{BTreeMap, HashSet};

use crate::analysis::Analysis;
use crate::evidence::{LineEvidence, TieBreak};
use crate::faults::Fault;
use crate::hitting::{HtModel, Method, ht_rank};
use crate::measures::Measure;
use crate::rank::Analyses;
use crate::score::{Key, Options, Scored};
use crate::spectra::Spectra;
use crate::weights::Weights;

mod report;
mod table;

pub use report::{EntryMetrics, EvalReport, FaultState, LocatedFault, MeasureResult, Metrics, SCHEMA, TOP_N};
pub use table::{human, json};

/// Finds each fault's executed lines.
pub fn locate(spectra: &Spectra, faults: &[Fault]) -> Vec<LocatedFault> {
    let fail = spectra.failing_mask();
    faults
        .iter()
        .map(|f| {
            let units: Vec<usize> = spectra
                .units
                .iter()
                .enumerate()
                .filter(|(u, unit)| {
                    unit.file == f.file && f.lines.contains(&unit.line) && !spectra.coverage[*u].is_empty()
                })
                .map(|(u, _)| u)
                .collect();
            let state = if units.is_empty() {
                FaultState::Unlocalisable
            } else if units.iter().any(|&u| spectra.coverage[u].count_and(&fail) > 0) {
                FaultState::Ranked
            } else {
                FaultState::RunOnlyByPassingTests
            };
            LocatedFault {
                fault: f.clone(),
                state,
                units,
            }
        })
        .collect()
}

/// The ranking key of every executed line: its group's key, or the bottom for lines that no
/// failing test ran. `None` for lines no test ran.
pub fn line_keys(a: &Analysis, scored: &[Scored]) -> Vec<Option<Key>> {
    let s = a.spectra;
    let mut keys: Vec<Option<Key>> = s
        .coverage
        .iter()
        .map(|c| (!c.is_empty()).then_some(Key::UNRANKED))
        .collect();
    for (g, group) in a.groups.iter().enumerate() {
        for &u in &group.units {
            let mut key = scored[g].key;
            if let Some(e) = a.tie(u) {
                key.evidence = e;
            }
            keys[u] = Some(key);
        }
    }
    keys
}

/// Where the first fault sits among items (lines, or report entries) ranked by key: `higher`
/// items rank strictly above the best faulty item, `tied` share its key (`tied_faulty` of them
/// faulty), `total` are ranked at all.
struct Position {
    higher: f64,
    tied: f64,
    tied_faulty: f64,
    total: f64,
}

impl Position {
    /// `items` are (key, faulty) pairs; `None` when no item is faulty.
    fn of(items: &[(Key, bool)]) -> Option<Position> {
        let best = items
            .iter()
            .filter(|(_, f)| *f)
            .map(|(k, _)| *k)
            .reduce(|a, b| if b > a { b } else { a })?;
        let mut p = Position {
            higher: 0.0,
            tied: 0.0,
            tied_faulty: 0.0,
            total: items.len() as f64,
        };
        for &(k, faulty) in items {
            if k > best {
                p.higher += 1.0;
            } else if k == best {
                p.tied += 1.0;
                p.tied_faulty += f64::from(u8::from(faulty));
            }
        }
        Some(p)
    }

    /// Henderson et al.'s Standard Rank Score: `higher + tied / 2`.
    fn standard_rank(&self) -> f64 {
        self.higher + self.tied / 2.0
    }

    /// Steimann's expected position of the first faulty item, ties broken at random.
    fn steimann_rank(&self) -> f64 {
        self.higher + (self.tied + 1.0) / (self.tied_faulty + 1.0)
    }

    /// Top-N for every N of [`TOP_N`]: the expected position is at most N.
    fn top(&self) -> BTreeMap<String, bool> {
        let at = self.steimann_rank();
        TOP_N.iter().map(|n| (n.to_string(), at <= *n as f64)).collect()
    }
}

/// Metrics of one ranking (given as line keys) for the faulty lines; `None` when no faulty
/// line was executed.
pub fn metrics(keys: &[Option<Key>], faulty: &HashSet<usize>) -> Option<Metrics> {
    let lines: Vec<(Key, bool)> = keys
        .iter()
        .enumerate()
        .filter_map(|(u, k)| Some(((*k)?, faulty.contains(&u))))
        .collect();
    let p = Position::of(&lines)?;
    let (h, t, tf) = (p.higher, p.tied, p.tied_faulty);
    let (min, max) = (h + 1.0, h + t - tf + 1.0);
    let avg = (min + max) / 2.0;
    Some(Metrics {
        standard_rank: p.standard_rank(),
        steimann_rank: p.steimann_rank(),
        min_expense: min,
        max_expense: max,
        avg_expense: avg,
        exam: avg / p.total,
        top: p.top(),
        accuracy: h + (t - tf) / (tf + 1.0),
        ht_rank: None,
    })
}

/// Entry-level metrics of one measure's scores over `model`'s entries; `None` when no entry
/// holds a faulty location.
pub fn entry_metrics(model: &HtModel, scored: &[Scored], faulty_locs: &HashSet<usize>) -> Option<EntryMetrics> {
    let entries: Vec<(Key, bool)> = model
        .entry_keys(scored)
        .into_iter()
        .zip(&model.entries)
        .map(|(k, locs)| (k, locs.iter().any(|l| faulty_locs.contains(l))))
        .collect();
    let p = Position::of(&entries)?;
    Some(EntryMetrics {
        entry_rank: p.standard_rank(),
        entry_top: p.top(),
    })
}

/// How an evaluation is computed.
pub struct Settings {
    pub opts: Options,
    pub p_jump: f64,
    /// Chains with at most this many states are solved exactly.
    pub exact_limit: usize,
    pub walks: usize,
    /// Compute HT_Rank at all.
    pub ht: bool,
    /// How lines of one entry are ordered for line-level metrics.
    pub tie_break: TieBreak,
    /// The combined ranking's weights (`None`: the committed ones).
    pub weights: Option<Weights>,
}

/// The name of the panic-stack baseline's row.
pub const PANIC_STACK: &str = "panic-stack (baseline)";

/// Line keys of the panic-stack baseline: per line, the failing tests whose backtrace first
/// reaches the ranked code there (innermost frame that is a unit); other executed lines tie at
/// the bottom, lines no test ran are not ranked.
pub fn stack_keys(spectra: &Spectra) -> Vec<Option<Key>> {
    spectra
        .coverage
        .iter()
        .zip(crate::evidence::panic_points(spectra))
        .map(|(c, n)| (!c.is_empty()).then_some(if n > 0 { Key::score(f64::from(n)) } else { Key::UNRANKED }))
        .collect()
}

/// Scores every measure on the known faults.
pub fn evaluate(spectra: &Spectra, faults: &[Fault], measures: &[&'static Measure], settings: &Settings) -> EvalReport {
    evaluate_with(spectra, None, faults, measures, settings)
}

/// [`evaluate`]; with `lines`, `spectra` is `lines.by_function()` and each function ranks by its
/// best line ([`Analysis::prepared`]), as `--granularity function` ranks them.
pub fn evaluate_with(
    spectra: &Spectra,
    lines: Option<&Spectra>,
    faults: &[Fault],
    measures: &[&'static Measure],
    settings: &Settings,
) -> EvalReport {
    // Each measure ranks the groups formed for it (CP's split by its own scores), so no
    // measure's numbers depend on what else is evaluated; an HT model per analysis.
    let weights = settings.weights.as_ref().unwrap_or(Weights::committed());
    let analyses = Analyses::with_weights(
        spectra,
        lines,
        settings.opts.group,
        measures,
        settings.tie_break,
        weights,
    );
    let analysis = analyses.base();
    let located = locate(spectra, faults);
    let faulty: HashSet<usize> = located.iter().flat_map(|f| f.units.iter().copied()).collect();

    let models: Vec<(&Analysis, HtModel)> = analyses.all().map(|a| (a, HtModel::new(spectra, a))).collect();
    let model_of = |a: &Analysis| {
        &models
            .iter()
            .find(|(b, _)| std::ptr::eq(a, *b))
            .expect("every analysis has a model")
            .1
    };
    let model = model_of(analysis);

    let mut results: Vec<MeasureResult> = if faulty.is_empty() {
        Vec::new()
    } else {
        measures
            .iter()
            .filter_map(|m| {
                let analysis = analyses.of(m);
                measure_result(analysis, model_of(analysis), m, &faulty, settings)
            })
            .collect()
    };
    if !faulty.is_empty() {
        results.extend(stack_baseline(spectra, &faulty));
    }
    let conventions = conventions(settings);
    EvalReport {
        schema: SCHEMA,
        faults: located,
        lines: model.executed.len(),
        ranked_lines: analysis.groups.iter().map(|g| g.units.len()).sum(),
        conventions,
        measures: results,
    }
}

/// `m`'s metrics on the analysis it ranks (`model`: that analysis's HT model); `None` when no
/// fault is on a line it ranks.
fn measure_result(
    analysis: &Analysis,
    model: &HtModel,
    m: &'static Measure,
    faulty: &HashSet<usize>,
    settings: &Settings,
) -> Option<MeasureResult> {
    let faulty_locs: HashSet<usize> = faulty.iter().filter_map(|u| model.loc.get(u).copied()).collect();
    let scored = analysis.score(m, &settings.opts);
    let mut metrics = metrics(&line_keys(analysis, &scored), faulty)?;
    let entries = entry_metrics(model, &scored, &faulty_locs)?;
    let mut ht = None;
    if settings.ht {
        let (times, method) = model.times(&scored, settings.p_jump, settings.exact_limit, settings.walks);
        let tolerance = if matches!(method, Method::Exact { .. }) {
            1e-9
        } else {
            0.05
        };
        let locs: Vec<usize> = faulty_locs.iter().copied().collect();
        metrics.ht_rank = ht_rank(&times, &locs, tolerance);
        ht = Some(method);
    }
    let lines_read = if analysis.by_line().is_some() {
        None
    } else {
        let ranked = crate::rank::rank_scored(analysis, &scored);
        let lines: Vec<(f64, Vec<usize>)> = ranked
            .iter()
            .map(|x| (x.rank, analysis.ordered_units(x.group)))
            .collect();
        let evidence = |u| analysis.tie(u);
        lines_read(&lines, &analysis.spectra.unit_items(), evidence, faulty)
    };
    Some(MeasureResult {
        measure: m.name,
        metrics,
        entries,
        ht,
        lines_read,
    })
}

/// Lines read before the first of `faulty` in the functions-first reading order of a line
/// ranking (`entries`: each entry's rank and lines, in rank order; `evidence`: each line's tie
/// evidence).
fn lines_read(
    entries: &[(f64, Vec<usize>)],
    unit_function: &[Option<u32>],
    evidence: impl Fn(usize) -> Option<LineEvidence>,
    faulty: &HashSet<usize>,
) -> Option<f64> {
    use crate::rank::functions::{LINES_SHOWN, TOP_FUNCTIONS, by_function, reading_order};
    let entries: Vec<(f64, &[usize])> = entries.iter().map(|(r, l)| (*r, l.as_slice())).collect();
    let blocks = by_function(&entries, unit_function, evidence);
    let order = reading_order(&blocks, &entries, (TOP_FUNCTIONS, LINES_SHOWN));
    order.iter().position(|u| faulty.contains(u)).map(|p| p as f64)
}

/// The baseline that points at where the backtraces first enter ranked code ([`PANIC_STACK`]);
/// it points at lines, not entries: each line is its own entry.
fn stack_baseline(spectra: &Spectra, faulty: &HashSet<usize>) -> Option<MeasureResult> {
    let keys = stack_keys(spectra);
    let metrics = metrics(&keys, faulty)?;
    // Each line its own entry, the lines some backtrace points at first (most tests first),
    // ranks as positions; the lines at the bottom are not read.
    let mut pointed: Vec<(Key, usize)> = keys
        .iter()
        .enumerate()
        .filter_map(|(u, k)| k.filter(|k| *k > Key::UNRANKED).map(|k| (k, u)))
        .collect();
    pointed.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(&b.1))
    });
    let mut entries: Vec<(f64, Vec<usize>)> = Vec::new();
    for (i, (k, u)) in pointed.iter().enumerate() {
        let rank = match i.checked_sub(1).map(|p| pointed[p].0 == *k) {
            Some(true) => entries[i - 1].0,
            _ => i as f64 + 1.0,
        };
        entries.push((rank, vec![*u]));
    }
    Some(MeasureResult {
        measure: PANIC_STACK,
        lines_read: lines_read(&entries, &spectra.unit_items(), |_| None, faulty),
        entries: EntryMetrics {
            entry_rank: metrics.standard_rank,
            entry_top: metrics.top.clone(),
        },
        metrics,
        ht: None,
    })
}

/// What the report's numbers mean, under `settings`.
fn conventions(settings: &Settings) -> BTreeMap<&'static str, String> {
    let mut conventions = BTreeMap::new();
    conventions.insert(
        PANIC_STACK,
        "the baseline a developer has without cargo sfl: look where each failing test's panic backtrace first enters \
         the ranked code (workspace code that is not test code); lines ranked by how many failing tests point at them, \
         every other line tied at the bottom"
            .to_string(),
    );
    conventions.insert(
        "locations",
        "executed lines; lines no failing test ran tie at the bottom".to_string(),
    );
    conventions.insert(
        "top",
        "top-N: the first faulty line's expected position (ties broken at random, faulty lines counted) is at most N"
            .to_string(),
    );
    conventions.insert(
        "entry_rank",
        "entries are report entries (lines with identical coverage are one; each executed line no failing test ran is its own, at the bottom); entry_rank = entries ranked higher + tied entries / 2; entry_top as top, over entries"
            .to_string(),
    );
    conventions.insert(
        "accuracy",
        "expected non-faulty lines inspected before the first faulty line (Doric)".to_string(),
    );
    conventions.insert(
        "ht_rank",
        format!(
            "Def. 29 chain over report entries (Def. 30 when an entry has several lines), jumps between lines of the same function or adjacent in the dynamic CFG with p_jump = {}; exact up to {} states, else {} random walks (estimates within 5% count as tied)",
            settings.p_jump, settings.exact_limit, settings.walks
        ),
    );
    conventions.insert(
        "tie_break",
        match settings.tie_break {
            TieBreak::Code => "lines of one entry tie (line-level metrics count the whole entry as tied)",
            TieBreak::Evidence => {
                "lines of one entry are ordered by panic-stack evidence, line kind (behavioural before structural), the size of their function (smaller first), then whether they operate"
            }
        }
        .to_string(),
    );
    conventions.insert(
        "cl-u",
        "cl-u's order is its simulated inspection: each inspected entry that is not faulty is refuted".to_string(),
    );
    conventions
}

#[cfg(test)]
mod tests {
    use super::table::entry_top;
    use super::*;
    use crate::measures::find;
    use crate::score::Options;
    use crate::spectra::tests::sfo_minmax;

    fn eval(name: &str, faulty: &[usize]) -> Metrics {
        let s = sfo_minmax();
        let a = Analysis::new(&s, false);
        let scored = a.score(find(name).unwrap(), &Options::default());
        metrics(&line_keys(&a, &scored), &faulty.iter().copied().collect()).unwrap()
    }

    /// The minmax of Landsberg, Sun & Kroening's single-fault-optimal study, fault C4. Naish-I scores C1..C5 = 2.125, -0.375, 0.75, 2.875, 0.625:
    /// C4 is alone at the top of 5 executed lines.
    #[test]
    fn naish2_finds_the_single_fault_optimal_fault_first() {
        let m = eval("naish2", &[3]);
        assert_eq!(
            (m.standard_rank, m.steimann_rank, m.min_expense, m.max_expense),
            (0.5, 1.0, 1.0, 1.0)
        );
        assert_eq!((m.exam, m.accuracy), (0.2, 0.0));
        assert!(m.top["1"]);
    }

    /// The baseline points where each failing test's backtrace first reaches a ranked line,
    /// skipping frames outside the matrix (test code, other crates).
    #[test]
    fn panic_stack_baseline_follows_the_first_ranked_frame() {
        use crate::spectra::tests::{doric_minmax, frame};
        let mut s = doric_minmax();
        s.tests[0].stack = vec![frame(99), frame(3), frame(2)];
        s.tests[1].stack = vec![frame(3)];
        s.tests[3].stack = vec![frame(1)]; // a passing test's stack is not evidence
        let keys = stack_keys(&s);
        assert_eq!(keys[2], Some(Key::score(2.0)));
        assert_eq!(keys[0], Some(Key::UNRANKED));
        let m = metrics(&keys, &[2].into_iter().collect()).unwrap();
        assert_eq!(m.standard_rank, 0.5);
        let m = metrics(&keys, &[1].into_iter().collect()).unwrap();
        assert_eq!(
            m.standard_rank,
            1.0 + 3.0 / 2.0,
            "below the pointed line, tied with the other three"
        );
    }

    /// Tarantula on the same data: C4 ⟨ef 3, ep 1⟩ = 0.875, C1 ⟨3, 7⟩ = 0.5, C3 ⟨1, 2⟩ = 0.538…,
    /// C5 ⟨1, 3⟩ = 0.4375, C2 (ef 0) executed but last: C4 first again. Wong1 (= ef) ties C1 and
    /// C4 at 3: higher 0, tied 2, one faulty.
    #[test]
    fn ties_split_the_expense() {
        let t = eval("tarantula", &[3]);
        assert_eq!(t.standard_rank, 0.5);
        let w = eval("wong1", &[3]);
        assert_eq!((w.standard_rank, w.steimann_rank), (1.0, 1.5));
        assert_eq!((w.min_expense, w.max_expense, w.avg_expense), (1.0, 2.0, 1.5));
        assert_eq!(w.accuracy, 0.5);
        assert!(!w.top["1"] && w.top["3"]);
    }

    /// Two faults tied with a non-faulty line (Wong1 on C1 and C4 both faulty): Steimann's
    /// expected position is (2 + 1) / (2 + 1) = 1.
    #[test]
    fn several_faults_in_a_tie_use_steimanns_rank() {
        let w = eval("wong1", &[0, 3]);
        assert_eq!(
            (w.standard_rank, w.steimann_rank, w.max_expense, w.accuracy),
            (1.0, 1.0, 1.0, 0.0)
        );
    }

    /// Four lines alike on top (u1..u4: both failing tests, no passing one), then the fault u5
    /// (one failing, one passing), then u6 (the passing test only). Ochiai: u1..u4
    /// 2/√(2·2) = 1, u5 1/√(2·2) = 0.5, u6 unranked, last. Lines: 4 higher, the fault alone → 4 + 1/2 = 4.5, expected position 5 (top-5, not
    /// top-3). Entries: {u1..u4}, {u5}, {u6} → 1 higher, 1 tied → 1.5, expected position 2
    /// (top-3, not top-1).
    #[test]
    fn entry_ranks_count_lines_alike_once() {
        let s = crate::spectra::tests::matrix(&["111110-", "111100-", "000011+"]);
        let a = Analysis::new(&s, true);
        let scored = a.score(find("ochiai").unwrap(), &Options::default());
        let faulty: HashSet<usize> = [4].into();
        let m = metrics(&line_keys(&a, &scored), &faulty).unwrap();
        assert_eq!((m.standard_rank, m.top["3"], m.top["5"]), (4.5, false, true));
        let model = HtModel::new(&s, &a);
        assert_eq!(model.entries.len(), 3);
        let locs: HashSet<usize> = [model.loc[&4]].into();
        let e = entry_metrics(&model, &scored, &locs).unwrap();
        assert_eq!((e.entry_rank, e.entry_top["1"], e.entry_top["3"]), (1.5, false, true));
        assert_eq!(entry_top(&e), "3");
        // With u1 faulty as well, the first entry holds a fault: 0 + 1/2.
        let both: HashSet<usize> = [model.loc[&0], model.loc[&4]].into();
        assert_eq!(entry_metrics(&model, &scored, &both).unwrap().entry_rank, 0.5);
    }
}
