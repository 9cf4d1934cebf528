//! Evidence beyond coverage, to order the lines that coverage cannot tell apart.
//!
//! Lines with identical coverage form one ambiguity group, and every spectrum measure gives
//! them one score: a function's signature, its closing brace and the faulty comparison tie. Five
//! kinds of evidence separate them without touching the order of the groups themselves, each
//! consulted only when the ones before it tie:
//!
//! - **the panic stack**: a line on a failing test's backtrace is where the failure became
//!   visible. Each failing test adds `1 / (1 + depth)` to the first frame it has on a line,
//!   depth counted over its frames in ranked code (innermost 0), so the panicking line weighs
//!   most and its callers less;
//! - **reading up from an operation panic**: when a runtime check failed (an index out of
//!   bounds, an overflow), the bad value was most often made a few lines before, in the same
//!   function. Lines above the panicking line in its function, that the panicking test ran,
//!   come next, nearest first;
//! - **the line's kind**: a line that only opens or closes a block, declares an item or is an
//!   attribute or comment (`fn f(…) {`, `}`, `} else {`, `#[inline]`) carries no behaviour of its
//!   own; a condition, an assignment, a call, an index or a return value is where faults live;
//! - **the size of its function**: a prior that gives every function the same chance of
//!   holding the fault and shares it among the function's lines, so a line of a 3-line helper
//!   comes before a line of a 40-line function it ties with. Fault density falls with a
//!   component's size (Hatton, "Reexamining the fault density–component size connection");
//! - **whether the line operates**: a comparison, arithmetic, a logical or bitwise operator, a
//!   compound assignment or an index, the constructs most fixes change (Pan, Kim and
//!   Whitehead, "Toward an understanding of bug fix patterns").
//!
//! All are read from what a run already has (the saved backtraces, the functions' spans, and
//! each line's kind and operators, read from the sources when the tests were collected and saved
//! with the spectra: `spectra::SourceFacts`), so they cost nothing to collect and a saved file
//! orders its lines the same wherever it is read. Spectra saved before those facts (schema v2
//! and v1) read the lines from the sources where they are used ([`line_facts`]).

use std::collections::HashMap;
use std::path::Path;

use crate::spectra::Spectra;

pub mod line;

pub use line::{LineEvidence, LineKind, TieBreak, line_kind, operates, read_line};

/// Per unit of `spectra`, its kind and whether it operates: from the facts saved with the
/// spectra, else ([`read_line`]) from the unit's source under the workspace root.
pub fn line_facts(spectra: &Spectra) -> Vec<(LineKind, bool)> {
    match &spectra.facts {
        Some(f) => (0..spectra.units.len())
            .map(|u| {
                let kind = if f.structural.contains(u) {
                    LineKind::Structural
                } else {
                    LineKind::Behavioural
                };
                (kind, f.operates.contains(u))
            })
            .collect(),
        None => texts(spectra).iter().map(|t| read_line(t.as_deref())).collect(),
    }
}

/// Per unit of `spectra`, the evidence that orders it within its group.
pub fn line_evidence(spectra: &Spectra) -> Vec<LineEvidence> {
    let mut function_lines = vec![0u32; spectra.functions.len()];
    for f in spectra.unit_function.iter().flatten() {
        function_lines[*f as usize] += 1;
    }
    let lines = line_facts(spectra);
    let kinds: Vec<LineKind> = lines.iter().map(|l| l.0).collect();
    let reach = operation_panic_reach(spectra, &kinds);
    stack_weights(spectra)
        .into_iter()
        .enumerate()
        .map(|(u, stack)| {
            let (kind, operates) = lines[u];
            LineEvidence {
                stack,
                near: match reach[u] {
                    0 => 0.0,
                    r => 1.0 / f64::from(r),
                },
                kind,
                prior: spectra
                    .unit_function
                    .get(u)
                    .copied()
                    .flatten()
                    .map_or(0.0, |f| 1.0 / f64::from(function_lines[f as usize])),
                operates,
            }
        })
        .collect()
}

/// Per unit, Σ over failing tests of `1 / (1 + depth)` of the unit on the test's backtrace
/// (depth counted over the test's frames on units, innermost 0; a unit counts once per test).
fn stack_weights(spectra: &Spectra) -> Vec<f64> {
    let mut w = vec![0.0; spectra.units.len()];
    // The units already counted for the current test (frames come test by test).
    let mut seen: Vec<usize> = Vec::new();
    ranked_frames(spectra, |_, u, depth| {
        if depth == 0 {
            seen.clear();
        }
        if !seen.contains(&u) {
            seen.push(u);
            w[u] += 1.0 / f64::from(1 + depth);
        }
    });
    w
}

/// Calls `visit(test, unit, depth)` for every frame of every failing test's backtrace that is on
/// a unit, innermost first, test by test; `depth` counts the test's frames on units before it
/// (innermost 0, so `depth == 0` starts a test).
pub fn ranked_frames(spectra: &Spectra, mut visit: impl FnMut(usize, usize, u32)) {
    let unit = spectra.unit_index();
    for (t, test) in spectra.tests.iter().enumerate().filter(|(_, t)| t.outcome.is_failing()) {
        let units = test.stack.iter().filter_map(|f| unit.get(&(f.file.as_str(), f.line)));
        for (depth, &u) in (0u32..).zip(units) {
            visit(t, u, depth);
        }
    }
}

/// Per unit, the number of failing tests whose backtrace first enters ranked code there (their
/// innermost frame on a unit): where a developer reading the panic would look first.
pub fn panic_points(spectra: &Spectra) -> Vec<u32> {
    points_where(spectra, |_| true)
}

/// [`panic_points`] of the tests whose panic the operation on that line raised by itself
/// ([`operation_panic`]): what the stack-first rankings move first.
pub fn operation_panic_points(spectra: &Spectra) -> Vec<u32> {
    points_where(spectra, is_operation_panic)
}

/// Per unit, how a person reading upwards from an operation panic meets it: `1 + d` for a
/// behavioural line (`kinds`: each unit's [`line_kind`]) `d` lines above the point
/// where a failing test's operation panicked ([`operation_panic_points`]; 1 for the point
/// itself), in the same function, run by that test; 0 for every other line. The nearest panic
/// counts when several reach a line.
///
/// A runtime check fails where a bad value is used; the value is most often made a few lines
/// before, in the same function (a missing guard, an off-by-one bound, an unchecked
/// subtraction). Moving these lines ahead of other entries cost more on injected faults than
/// it gained on real panics (bench-results/stack-evidence.md), so they order lines within an
/// entry only.
pub fn operation_panic_reach(spectra: &Spectra, kinds: &[LineKind]) -> Vec<u32> {
    panic_reach(spectra, kinds, is_operation_panic)
}

/// [`operation_panic_reach`] from every failing test's panic point ([`panic_points`]), an
/// explicit check's (`unwrap`, `assert!`) included: what the combined ranking weighs.
pub fn any_panic_reach(spectra: &Spectra, kinds: &[LineKind]) -> Vec<u32> {
    panic_reach(spectra, kinds, |_| true)
}

fn panic_reach(spectra: &Spectra, kinds: &[LineKind], keep: impl Fn(&crate::spectra::TestRecord) -> bool) -> Vec<u32> {
    let mut reach = vec![0u32; spectra.units.len()];
    let sites = panic_sites(spectra, keep);
    if sites.is_empty() {
        return reach;
    }
    // Lines that only open or close a block or declare an item hold no value of their own.
    let mut by_function: HashMap<u32, Vec<usize>> = HashMap::new();
    for (u, f) in spectra.unit_function.iter().enumerate() {
        if let Some(f) = f
            && kinds[u] == LineKind::Behavioural
        {
            by_function.entry(*f).or_default().push(u);
        }
    }
    for (t, p) in sites {
        let Some(Some(f)) = spectra.unit_function.get(p) else {
            continue;
        };
        let at = &spectra.units[p];
        for &u in by_function.get(f).into_iter().flatten() {
            let line = &spectra.units[u];
            if line.file != at.file || line.line > at.line || !spectra.coverage[u].contains(t) {
                continue;
            }
            let r = at.line - line.line + 1;
            if reach[u] == 0 || r < reach[u] {
                reach[u] = r;
            }
        }
    }
    reach
}

fn points_where(spectra: &Spectra, keep: impl Fn(&crate::spectra::TestRecord) -> bool) -> Vec<u32> {
    let mut points = vec![0u32; spectra.units.len()];
    for (_, u) in panic_sites(spectra, keep) {
        points[u] += 1;
    }
    points
}

/// Whether failing test `t` panicked on an operation ([`operation_panic`]).
fn is_operation_panic(t: &crate::spectra::TestRecord) -> bool {
    t.message.as_deref().is_some_and(operation_panic)
}

/// Each failing test that `keep` accepts, with the unit its backtrace first enters ranked code
/// at: `(test index, unit)`.
fn panic_sites(spectra: &Spectra, keep: impl Fn(&crate::spectra::TestRecord) -> bool) -> Vec<(usize, usize)> {
    let tests: Vec<_> = spectra
        .tests
        .iter()
        .enumerate()
        .filter(|(_, t)| t.outcome.is_failing() && !t.stack.is_empty() && keep(t))
        .collect();
    if tests.is_empty() {
        // Every report builds an analysis: no line index when no test needs one.
        return Vec::new();
    }
    let unit = spectra.unit_index();
    tests
        .into_iter()
        .filter_map(|(i, t)| {
            let u = t.stack.iter().find_map(|f| unit.get(&(f.file.as_str(), f.line)))?;
            Some((i, *u))
        })
        .collect()
}

/// Messages of the checks the language and the standard library make on an operation: an
/// index or a slice out of bounds, arithmetic overflow, division by zero, a bad argument to a
/// std call.
const RUNTIME_CHECKS: &[&str] = &[
    "attempt to ",
    "index out of bounds",
    "range end index",
    "range start index",
    "slice index starts",
    "byte index",
    // str slicing with its start after its end: older toolchains say "begin <= end (4 <= 2)",
    // newer ones (1.95 here) "begin > end (4 > 2)".
    "begin <= end",
    "begin > end",
    "start byte index",
    "end byte index",
    "removal index",
    "insertion index",
    "swap_remove index",
    "mid > len",
    "already borrowed",
    "already mutably borrowed",
    "capacity overflow",
];

/// Whether a panic message (`panicked at FILE:LINE:COL:` and what follows) says that the
/// operation on the panicking line failed by itself: a runtime check of the language or of the
/// standard library (see [`RUNTIME_CHECKS`]; also any panic located outside the workspace).
/// An explicit check of the crate's own (`assert!`, `panic!`, `unreachable!`, `unwrap`,
/// `expect`) is not: it detects a state that a fault elsewhere made.
pub fn operation_panic(message: &str) -> bool {
    let mut lines = message.lines();
    let Some(site) = lines.find_map(|l| l.trim().strip_prefix("panicked at ")) else {
        return false;
    };
    // Workspace locations are relative; std's and dependencies' are absolute.
    if Path::new(site.split(':').next().unwrap_or("")).is_absolute() {
        return true;
    }
    let text = lines.next().unwrap_or("").trim();
    RUNTIME_CHECKS.iter().any(|c| text.starts_with(c)) || text.contains("is not a char boundary")
}

/// Each unit's source line, reading each file once; `None` for units of unreadable files and
/// imported units (which name no line): behavioural, not operating. Only for spectra without
/// saved facts.
fn texts(spectra: &Spectra) -> Vec<Option<String>> {
    let root = Path::new(&spectra.workspace_root);
    let mut files: HashMap<&str, Option<Vec<String>>> = HashMap::new();
    spectra
        .units
        .iter()
        .map(|u| {
            let lines = files.entry(u.file.as_str()).or_insert_with(|| {
                std::fs::read_to_string(root.join(&u.file))
                    .ok()
                    .map(|text| text.lines().map(str::to_string).collect())
            });
            lines
                .as_ref()
                .and_then(|l| l.get((u.line as usize).checked_sub(1)?))
                .cloned()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::Outcome;
    use crate::spectra::tests::{doric_minmax, frame};

    /// Lines of one group: a smaller function's line first, then a line that operates.
    #[test]
    fn smaller_functions_and_operating_lines_come_first_within_a_kind() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/lib.rs"),
            "fn big(x: u8) -> u8 {\n    let y = x;\n    y + 1\n}\nfn small() -> bool {\n    true\n}\n",
        )
        .unwrap();
        let mut s = doric_minmax();
        s.workspace_root = dir.path().to_string_lossy().into_owned();
        // Units: lines 2 and 3 of `big`, line 6 of `small`, line 1 (big's signature).
        for (unit, line) in s.units.iter_mut().zip([2, 3, 6, 1]) {
            unit.file = "src/lib.rs".into();
            unit.line = line;
        }
        s.set_functions(crate::spectra::tests::lib_functions(&[(1, 4), (5, 7)]));
        assert_eq!(s.unit_function, [Some(0), Some(0), Some(1), Some(0)]);
        let t = line_evidence(&s);
        assert_eq!(
            t.iter().map(|t| t.prior).collect::<Vec<_>>(),
            [1.0 / 3.0, 1.0 / 3.0, 1.0, 1.0 / 3.0]
        );
        assert_eq!(
            t.iter().map(|t| t.operates).collect::<Vec<_>>(),
            [false, true, false, false]
        );
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by(|&a, &b| t[a].cmp_descending(&t[b]));
        // small's `true`, big's `y + 1`, big's `let y = x;`, then the signature.
        assert_eq!(order, [2, 1, 0, 3]);

        // The last test (it runs units 0 and 1) fails, overflowing on `y + 1` (unit 1, line 3):
        // `let y = x;` (line 2), just above it in `big` and run by that test, now comes before
        // small's `true`; the signature stays last (structural).
        s.tests[4].outcome = Outcome::Failed;
        s.tests[4].stack = vec![frame(3)];
        s.tests[4].message = Some("panicked at src/lib.rs:3:5:\nattempt to add with overflow".into());
        let t = line_evidence(&s);
        assert_eq!(t.iter().map(|t| t.near).collect::<Vec<_>>(), [0.5, 1.0, 0.0, 0.0]);
        let mut order: Vec<usize> = (0..4).collect();
        order.sort_by(|&a, &b| t[a].cmp_descending(&t[b]));
        assert_eq!(order, [1, 0, 2, 3]);
    }

    /// A panic the operation raised (index, slice, arithmetic, a std precondition, or located
    /// in std) is an operation panic; an explicit check of the crate's own is not.
    #[test]
    fn operation_panics_are_told_from_explicit_checks() {
        for m in [
            "panicked at src/lib.rs:11:10:\nindex out of bounds: the len is 1 but the index is 1",
            "panicked at src/lib.rs:2:23:\nattempt to subtract with overflow",
            "panicked at src/a.rs:9:5:\nattempt to divide by zero",
            "panicked at src/a.rs:9:5:\nbyte index 3 is not a char boundary; it is inside 'é'",
            "panicked at src/a.rs:9:5:\nend byte index 6 is out of bounds of `foo`",
            "panicked at src/a.rs:9:5:\nremoval index (is 3) should be < len (is 2)",
            "panicked at /rustc/59807616e1fa/library/core/src/str/mod.rs:68:5:\nfailed to slice string",
            "panicked at url/src/lib.rs:2432:11:\nbegin <= end (12 <= 10) when slicing `arhttps://e`",
            "panicked at url/src/lib.rs:2432:11:\nbegin > end (4 > 2) when slicing `a://a`",
        ] {
            assert!(operation_panic(m), "{m}");
        }
        for m in [
            "panicked at src/lib.rs:33:9:\nassertion `left == right` failed\n  left: Some(3)",
            "panicked at src/lib.rs:3:9:\nassertion failed: v.spilled()",
            "panicked at src/lib.rs:3:9:\ncalled `Option::unwrap()` on a `None` value",
            "panicked at src/lib.rs:3:9:\nentered unreachable code",
            "panicked at src/lib.rs:3:9:\nattempted to index past the end",
            "test did not panic",
            "",
        ] {
            assert!(!operation_panic(m), "{m}");
        }
    }

    /// Reading upwards from an operation panic: the behavioural lines above the point in its
    /// function that the panicking test ran, by distance (the point itself 1); not lines below
    /// it, structural lines, lines of other functions, lines the test did not run, nor anything
    /// for an explicit check.
    #[test]
    fn operation_panic_reach_reads_up_the_panicking_function() {
        use crate::spectra::tests::{lib_functions, matrix};
        // Test 0 runs lines 1, 3, 4, 5 and 6; functions are lines 1-5 and 6-7; line 1 is `fn`.
        let mut s = matrix(&["1011110-", "1111111+"]);
        s.set_functions(lib_functions(&[(1, 5), (6, 7)]));
        let mut texts = vec!["    let x = v[i] + 1;"; 7];
        texts[0] = "fn f(v: &[u8], i: usize) -> u8 {";
        let kinds = |texts: &[&str]| texts.iter().map(|t| line_kind(t)).collect::<Vec<_>>();
        assert_eq!(operation_panic_reach(&s, &kinds(&texts)), [0; 7]);
        s.tests[0].stack = vec![frame(4), frame(6)];
        s.tests[0].message = Some("panicked at src/lib.rs:4:9:\nattempt to add with overflow".into());
        assert_eq!(operation_panic_reach(&s, &kinds(&texts)), [0, 0, 2, 1, 0, 0, 0]);
        texts[0] = "    let n = v.len();";
        assert_eq!(operation_panic_reach(&s, &kinds(&texts)), [4, 0, 2, 1, 0, 0, 0]);
        s.tests[0].message = Some("panicked at src/lib.rs:4:9:\nassertion failed: x > 0".into());
        assert_eq!(operation_panic_reach(&s, &kinds(&texts)), [0; 7]);
    }

    /// Only failing tests whose panic the operation raised count for the stack-first rankings;
    /// the baseline counts every failing test's first frame.
    #[test]
    fn operation_panic_points_leave_explicit_checks_out() {
        let mut s = doric_minmax();
        s.tests[0].stack = vec![frame(3)];
        s.tests[0].message =
            Some("panicked at src/lib.rs:3:1:\nindex out of bounds: the len is 0 but the index is 0".into());
        s.tests[1].stack = vec![frame(2)];
        s.tests[1].message = Some("panicked at src/lib.rs:2:1:\nassertion failed: ok".into());
        assert_eq!(panic_points(&s), [0, 1, 1, 0]);
        assert_eq!(operation_panic_points(&s), [0, 0, 1, 0]);
    }

    /// Doric's minmax with backtraces: t1 panics on line 3 called from line 2, t2 on line 3.
    #[test]
    fn stack_evidence_weighs_the_panicking_line_most() {
        let mut s = doric_minmax();
        s.tests[0].stack = vec![frame(99), frame(3), frame(3), frame(2)];
        s.tests[1].stack = vec![frame(3)];
        s.tests[3].stack = vec![frame(1)];
        assert_eq!(s.tests[3].outcome, Outcome::Passed);
        let t = line_evidence(&s);
        let stacks: Vec<f64> = t.iter().map(|t| t.stack).collect();
        // Line 3: depth 0 in t1 and t2; line 2: depth 2 in t1 (after line 3 twice).
        assert_eq!(stacks, [0.0, 1.0 / 3.0, 2.0, 0.0]);
        assert!(t[2] > t[1] && t[1] > t[0]);
    }
}
