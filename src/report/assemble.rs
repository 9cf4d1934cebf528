//! The report model from the analyses: the summary and groups of the analysis every measure
//! but CP's and the combined ranking's ranks, then each ranking with its entries' lines in
//! reading order, its own groups and CP's solution. The one place the reports' data is read
//! from an [`Analysis`].

use super::model::{Contribution, CpInfo, Entry, Group, Ranking, Report, SincePassed, Summary};
use crate::analysis::Analysis;
use crate::cp::CpVariant;
use crate::spectra::Outcome;

impl<'a> Report<'a> {
    /// The facts of `base` (the analysis of lines with identical coverage), without rankings
    /// yet ([`Report::add`]).
    pub fn of(base: &Analysis<'a>) -> Self {
        Report {
            spectra: base.spectra,
            summary: summary(base),
            core_tests: base.core_witnesses(),
            groups: groups(base, None),
            rankings: Vec::new(),
            lines_in_functions: base.by_line().is_none() && !base.spectra.functions.is_empty(),
            since_passed: None,
        }
    }

    /// With what changed since the workspace's last green run (the snapshot's `since_green`,
    /// saved with the whole matrix) for the tests failing since, in this report's lines (none
    /// at function granularity).
    pub fn with_since_green(mut self, snapshot: Option<&crate::spectra::Snapshot>) -> Self {
        if !self.lines_in_functions && !self.spectra.functions.is_empty() {
            return self;
        }
        self.since_passed = snapshot.and_then(|s| since_passed(self.spectra, s.since_green.as_ref()?, &s.compile_time));
        self
    }

    /// Adds `r`, in its final order (with CP's solution when `r` is CP's).
    pub fn add(&mut self, r: &crate::rank::Ranking<'a>) {
        let own_groups = own_groups(r.measure).then(|| {
            let mut base_of = vec![None; self.spectra.units.len()];
            for (g, group) in self.groups.iter().enumerate() {
                for &u in &group.lines {
                    base_of[u] = Some(g);
                }
            }
            groups(r.analysis, Some(&base_of))
        });
        let lines = own_groups.as_deref().unwrap_or(&self.groups);
        let entries = r
            .entries
            .iter()
            .map(|x| Entry {
                group: x.group,
                lines: lines[x.group].lines.clone(),
                score: x.score,
                unscored: x.unscored,
                log10: x.log10,
                rank: x.rank,
                tied: x.tied,
                line_rank: x.line_rank,
                counts: x.counts,
                certain: x.certain,
                panicked: x.panicked,
                changed_lines: x.changed_lines.clone(),
                expected_time: x.expected_time,
            })
            .collect::<Vec<Entry>>();
        let functions = if self.lines_in_functions {
            // `--only-changed`: the changed lines only, so a function that merely shares an
            // entry with a changed line is not listed.
            let lines_of = |x: &Entry| match r.only_changed {
                true => x
                    .lines
                    .iter()
                    .copied()
                    .filter(|u| x.changed_lines.contains(u))
                    .collect(),
                false => x.lines.clone(),
            };
            let lines: Vec<Vec<usize>> = entries.iter().map(lines_of).collect();
            let by_rank: Vec<(f64, &[usize])> = entries
                .iter()
                .zip(&lines)
                .map(|(x, l)| (x.rank, l.as_slice()))
                .collect();
            let evidence = |u| r.analysis.tie(u);
            let mut blocks = crate::rank::functions::by_function(&by_rank, &self.spectra.unit_items(), evidence);
            // A function's changed line is the one it is shown at.
            for b in &mut blocks {
                for (e, us) in &mut b.entries {
                    let changed = &entries[*e].changed_lines;
                    us.sort_by_key(|u| !changed.contains(u));
                }
            }
            blocks
        } else {
            Vec::new()
        };
        self.rankings.push(Ranking {
            functions,
            measure: r.measure,
            entries,
            ht: r.ht.clone(),
            cp: r.measure.cp_variant().and_then(|v| CpInfo::of(r.analysis, v)),
            own_groups,
        });
    }
}

/// Whether `m` ranks groups of its own rather than the lines of identical coverage: CP's are
/// also split by its scores, the combined ranking's by its ([`crate::analysis::Analyses::of`]).
fn own_groups(m: &crate::measures::Measure) -> bool {
    m.cp_variant().is_some() || m.is_combined()
}

/// Every group of `a`, its lines in reading order; `base_of[u]`: the report's group of unit `u`.
fn groups(a: &Analysis, base_of: Option<&[Option<usize>]>) -> Vec<Group> {
    a.groups
        .iter()
        .enumerate()
        .map(|(g, group)| {
            let lines = a.ordered_units(g);
            Group {
                evidence: lines.iter().map(|&u| a.tie(u)).collect(),
                counts: group.counts,
                base: base_of.and_then(|b| b[group.units[0]]),
                lines,
            }
        })
        .collect()
}

/// The lines of `s` changed since the last green run that the tests failing since run.
fn since_passed(
    s: &crate::spectra::Spectra,
    since: &crate::spectra::SinceGreen,
    compile_time: &std::collections::BTreeSet<String>,
) -> Option<SincePassed> {
    let ids: std::collections::HashSet<&str> = since.tests.iter().map(String::as_str).collect();
    let tests: Vec<usize> = s
        .tests
        .iter()
        .enumerate()
        .filter(|(_, t)| t.outcome.is_failing() && ids.contains(format!("{} {}", t.binary, t.name).as_str()))
        .map(|(i, _)| i)
        .collect();
    if tests.is_empty() {
        return None;
    }
    let lines: Vec<(usize, Vec<usize>)> = s
        .units
        .iter()
        .enumerate()
        .filter(|(_, unit)| {
            since
                .lines
                .get(&unit.file)
                .is_some_and(|changed| changed.binary_search(&unit.line).is_ok())
        })
        .filter_map(|(u, _)| {
            let ran: Vec<usize> = tests.iter().copied().filter(|&t| s.coverage[u].contains(t)).collect();
            (!ran.is_empty()).then_some((u, ran))
        })
        .collect();
    let unseen = unseen_changes(s, since, compile_time, &tests, &lines);
    let in_tests = changed_in_tests(s, since, &tests, &lines, &unseen);
    Some(SincePassed {
        taken: since.taken,
        tests,
        lines,
        unseen,
        in_tests,
        files: since.files.clone(),
        env: since.env.clone(),
    })
}

/// The changed lines of the failing `tests`' own code: in the function around a frame of their
/// stacks (read from the workspace's sources), not among `lines` or `unseen` already. An
/// assertion edited since the test passed (its expected value) is where to look first.
fn changed_in_tests(
    s: &crate::spectra::Spectra,
    since: &crate::spectra::SinceGreen,
    tests: &[usize],
    lines: &[(usize, Vec<usize>)],
    unseen: &[(String, u32)],
) -> Vec<(String, u32)> {
    let shown: std::collections::HashSet<(&str, u32)> = lines
        .iter()
        .map(|(u, _)| (s.units[*u].file.as_str(), s.units[*u].line))
        .chain(unseen.iter().map(|(f, l)| (f.as_str(), *l)))
        .collect();
    let mut parsed = crate::syntax::Parsed::new(std::path::Path::new(&s.workspace_root));
    let mut out: Vec<(String, u32)> = Vec::new();
    for frame in tests.iter().flat_map(|&t| &s.tests[t].stack) {
        let Some(changed) = since.lines.get(&frame.file) else {
            continue;
        };
        let Some(syntax) = parsed.file(&frame.file) else {
            continue;
        };
        let around = syntax
            .items
            .iter()
            .filter(|n| n.kind == crate::syntax::NamedKind::Function && n.head.0 <= frame.line && frame.line <= n.end)
            .min_by_key(|n| n.end - n.head.0);
        if let Some(f) = around {
            out.extend(
                changed
                    .iter()
                    .filter(|&&l| f.head.0 <= l && l <= f.end && !shown.contains(&(frame.file.as_str(), l)))
                    .map(|&l| (frame.file.clone(), l)),
            );
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The changed lines no test's coverage shows (`lines`: those the failing `tests` are seen
/// running, listed apart): in code that runs while compiling, lines with no counter of their
/// own inside a function the failing tests ran or outside every function of a file they ran
/// code of, and every changed line of a file no coverage map holds.
fn unseen_changes(
    s: &crate::spectra::Spectra,
    since: &crate::spectra::SinceGreen,
    compile_time: &std::collections::BTreeSet<String>,
    tests: &[usize],
    lines: &[(usize, Vec<usize>)],
) -> Vec<(String, u32)> {
    // Those a failing test is seen running (a proc macro's helper its unit test calls) are
    // listed with the others.
    let seen: std::collections::HashSet<(&str, u32)> = lines
        .iter()
        .map(|(u, _)| (s.units[*u].file.as_str(), s.units[*u].line))
        .collect();
    // Changed lines no coverage shows: in code that runs while compiling, and lines with no
    // counter of their own inside a function the failing tests ran (a `const`'s value inside
    // it, computed while compiling) or outside every function of a file they ran code of (a
    // `const` table at module level, serde's; an item no test instantiated).
    let counted = s.unit_index();
    let ran: Vec<usize> = (0..s.units.len())
        .filter(|&u| tests.iter().any(|&t| s.coverage[u].contains(t)))
        .collect();
    let ran_functions: std::collections::HashSet<u32> = ran
        .iter()
        .filter_map(|&u| s.unit_function.get(u).copied().flatten())
        .collect();
    let ran_files: std::collections::HashSet<&str> = ran.iter().map(|&u| s.units[u].file.as_str()).collect();
    // Files no coverage map holds a line or a function of: no test's coverage can show a
    // change there, whoever uses it (a module of constants only, an uninstrumented path
    // dependency).
    let mapped: std::collections::HashSet<&str> = s
        .units
        .iter()
        .map(|u| u.file.as_str())
        .chain(s.functions.iter().map(|f| f.file.as_str()))
        .collect();
    let uncounted_and_ran = |file: &str, line: u32| {
        let mut holding = s
            .functions
            .iter()
            .enumerate()
            .filter(|(_, span)| span.file == file && span.start <= line && line <= span.end)
            .peekable();
        match holding.peek() {
            Some(_) => holding.any(|(f, _)| ran_functions.contains(&(f as u32))),
            None => ran_files.contains(file),
        }
    };
    since
        .lines
        .iter()
        .flat_map(|(file, lines)| lines.iter().map(move |&l| (file.as_str(), l)))
        .filter(|&(file, l)| {
            !seen.contains(&(file, l))
                && (compile_time.contains(file)
                    || !mapped.contains(file)
                    || (!counted.contains_key(&(file, l)) && uncounted_and_ran(file, l)))
        })
        .map(|(file, l)| (file.to_string(), l))
        .collect()
}

/// The counts of `a`'s matrix and entries.
fn summary(a: &Analysis) -> Summary {
    let s = a.spectra;
    let count = |o: Outcome| s.tests.iter().filter(|t| t.outcome == o).count();
    let files = s.source_files().len();
    Summary {
        tests: s.tests.len(),
        passed: count(Outcome::Passed),
        failed: count(Outcome::Failed),
        timed_out: count(Outcome::TimedOut),
        crashed: count(Outcome::Crashed),
        ignored: count(Outcome::Ignored),
        flaky: s.tests.iter().filter(|t| t.flaky).count(),
        passed_alone: s.tests.iter().filter(|t| t.passed_alone).count(),
        reused: s.tests.iter().filter(|t| t.reused).count(),
        uncovered: s.tests.iter().filter(|t| t.uncovered && t.outcome.is_failing()).count(),
        units: shown_units(a),
        covered_units: s.coverage.iter().filter(|c| !c.is_empty()).count(),
        failing_units: a.groups.iter().map(|g| g.units.len()).sum(),
        entries: a.groups.len(),
        all_failing_core: a.core_units(),
        files,
    }
}

/// How many units the report counts: at function granularity a closure is part of the
/// function it is written in ([`crate::spectra::Spectra::items`]), an empty unit never ranked,
/// so it is not counted as a function of its own.
fn shown_units(a: &Analysis) -> usize {
    let s = a.spectra;
    if std::ptr::eq(a.lines().spectra, s) {
        return s.units.len();
    }
    let items = s.items();
    (0..s.units.len())
        .filter(|&u| items.get(u).is_none_or(|&i| i as usize == u))
        .count()
}

impl<'a> CpInfo<'a> {
    /// How `variant` was solved for `a` (for its line analysis at function granularity);
    /// `None` without edge profiles.
    pub fn of(a: &Analysis<'a>, variant: CpVariant) -> Option<Self> {
        let a = a.lines();
        let spectra = a.spectra;
        let (sol, _) = a.cp(variant)?;
        let e = spectra.edges.as_ref()?;
        let calls = e.calls();
        Some(CpInfo {
            blocks: e.blocks.len(),
            edges: e.edges.len() - calls,
            calls,
            along_calls: variant.calls,
            blocks_solved: sol.blocks_solved,
            exit_blocks: sol.exit_blocks,
            method: sol.method.clone(),
            damped_functions: e.function_names(&sol.damped_blocks),
            residual: sol.residual,
        })
    }
}

/// Unit `u`'s features in `base` under the weights it is scored with, largest part of its combined score
/// first (features that add nothing left out).
pub fn contributions(base: &Analysis, u: usize) -> Vec<Contribution> {
    let f = crate::combined::features(base);
    let w = base.weights();
    let Some(i) = f.units.iter().position(|&v| v == u) else {
        return Vec::new();
    };
    let mut out: Vec<Contribution> = crate::combined::FEATURES
        .iter()
        .zip(f.rows[i])
        .zip(&w.weights)
        .map(|((feature, value), weight)| Contribution {
            feature,
            value,
            weight: *weight,
            contribution: value * weight,
        })
        .filter(|c| c.contribution != 0.0)
        .collect();
    out.sort_by(|a, b| b.contribution.abs().total_cmp(&a.contribution.abs()));
    out
}
