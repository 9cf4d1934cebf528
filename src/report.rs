//! Renders rankings: the human report (failing tests, then the top suspects with their source
//! lines, grouped by file) and the `cargo-sfl/v1` JSON contract.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::analysis::{Analysis, Options};
use crate::measures::Measure;
use crate::rank::{Ranked, Ranking};
use crate::spectra::{Outcome, Spectra, Unit};

/// Schema tag of the JSON report.
pub const SCHEMA: &str = "cargo-sfl/v1";

/// What a report shows besides the rankings.
pub struct View<'a> {
    pub opts: Options,
    /// Entries per measure in the human and SARIF reports (and for `changed_in_top`).
    pub top: usize,
    /// The `--diff-base` revision, when entries are marked as changed.
    pub diff_base: Option<&'a str>,
}

impl View<'_> {
    /// How many of a ranking's top N entries touch changed lines (with `--diff-base`).
    pub fn changed_in_top(&self, r: &Ranking) -> Option<usize> {
        self.diff_base?;
        Some(r.entries.iter().take(self.top).filter(|x| x.changed).count())
    }
}

#[derive(Serialize, Debug, Default, PartialEq)]
pub struct Summary {
    pub tests: usize,
    pub passed: usize,
    pub failed: usize,
    pub timed_out: usize,
    pub crashed: usize,
    pub ignored: usize,
    /// Lines the coverage map knows (executable lines of the workspace's code).
    pub units: usize,
    /// Lines at least one test ran.
    pub covered_units: usize,
    /// Lines at least one failing test ran (the ranked lines).
    pub failing_units: usize,
    /// Report entries for those lines: lines with identical coverage are one entry.
    pub entries: usize,
    /// Lines run by every failing test (the all-failing core; a single fault must be there).
    pub all_failing_core: usize,
    pub files: usize,
}

impl Summary {
    pub fn of(a: &Analysis) -> Self {
        let s = a.spectra;
        let count = |o: Outcome| s.tests.iter().filter(|t| t.outcome == o).count();
        let files: std::collections::HashSet<&str> = s
            .units
            .iter()
            .filter(|u| u.name().is_none())
            .map(|u| u.file.as_str())
            .collect();
        Summary {
            tests: s.tests.len(),
            passed: count(Outcome::Passed),
            failed: count(Outcome::Failed),
            timed_out: count(Outcome::TimedOut),
            crashed: count(Outcome::Crashed),
            ignored: count(Outcome::Ignored),
            units: s.units.len(),
            covered_units: s.coverage.iter().filter(|c| !c.is_empty()).count(),
            failing_units: a.groups.iter().map(|g| g.units.len()).sum(),
            entries: a.groups.len(),
            all_failing_core: a.core_units(),
            files: files.len(),
        }
    }

    pub fn failing(&self) -> usize {
        self.failed + self.timed_out + self.crashed
    }

    pub fn ran(&self) -> usize {
        self.tests - self.ignored
    }
}

#[derive(Serialize)]
struct JsonReport<'a> {
    schema: &'static str,
    workspace_root: &'a str,
    summary: Summary,
    /// Seed 003's Algorithm 1: failing tests that pin the all-failing core down.
    core_tests: Vec<String>,
    conventions: Conventions,
    #[serde(skip_serializing_if = "Option::is_none")]
    diff_base: Option<&'a str>,
    tests: Vec<JsonTest<'a>>,
    rankings: Vec<JsonRanking<'a>>,
}

#[derive(Serialize)]
pub(crate) struct Conventions {
    failing: &'static str,
    rank: &'static str,
    line_rank: &'static str,
    division_by_zero: &'static str,
    ties_displayed: &'static str,
    entries: &'static str,
    smoothing: bool,
    clone_failing: u32,
    optimise: bool,
    update_bound: usize,
}

#[derive(Serialize)]
struct JsonTest<'a> {
    binary: &'a str,
    name: &'a str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    signal: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    duration_ms: u64,
}

#[derive(Serialize)]
struct JsonRanking<'a> {
    measure: &'static str,
    formula: &'static str,
    /// With --diff-base: how many of the top N entries touch changed lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    changed_in_top: Option<usize>,
    /// With --order ht: entries are in expected-hitting-time order, computed this way.
    #[serde(skip_serializing_if = "Option::is_none")]
    ht_order: Option<&'a crate::hitting::Method>,
    /// For cp: the CFG it solved and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    cfg: Option<JsonCfg<'a>>,
    /// One entry per ambiguity group (a single line when nothing shares its coverage).
    units: Vec<JsonEntry<'a>>,
}

/// How CP's system was solved.
#[derive(Serialize)]
struct JsonCfg<'a> {
    blocks: usize,
    edges: usize,
    blocks_solved: usize,
    exit_blocks: usize,
    /// `exact`, or `damped` (a singular component's propagation ratios were scaled down).
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    damping_factor: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    damped_functions: Vec<&'a str>,
    /// Largest residual of the undamped equations.
    residual: f64,
}

impl<'a> JsonCfg<'a> {
    fn of(a: &'a Analysis) -> Option<Self> {
        let (sol, _) = a.cp()?;
        let e = a.spectra.edges.as_ref()?;
        let (method, damping_factor) = match &sol.method {
            crate::cp::CpMethod::Exact => ("exact", None),
            crate::cp::CpMethod::Damped { factor, .. } => ("damped", Some(*factor)),
        };
        let damped_functions = e.function_names(&sol.damped_blocks);
        Some(JsonCfg {
            blocks: e.blocks.len(),
            edges: e.edges.len(),
            blocks_solved: sol.blocks_solved,
            exit_blocks: sol.exit_blocks,
            method,
            damping_factor,
            damped_functions,
            residual: sol.residual,
        })
    }
}

/// A unit: a source line, or an imported unit's name.
#[derive(Serialize)]
struct JsonUnit<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

impl<'a> JsonUnit<'a> {
    fn of(u: &'a Unit) -> Self {
        match u.name() {
            Some(name) => JsonUnit {
                file: None,
                line: None,
                name: Some(name),
            },
            None => JsonUnit {
                file: Some(&u.file),
                line: Some(u.line),
                name: None,
            },
        }
    }
}

#[derive(Serialize)]
struct JsonEntry<'a> {
    /// The entry's first unit.
    #[serde(flatten)]
    first: JsonUnit<'a>,
    /// Every unit of the group, when it has more than one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    members: Vec<JsonUnit<'a>>,
    score: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    log10_probability: Option<f64>,
    rank: f64,
    line_rank: f64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    certain: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    changed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected_hitting_time: Option<f64>,
    ef: u32,
    ep: u32,
    nf: u32,
    np: u32,
}

/// What every report states about how it was computed.
pub(crate) fn conventions(opts: &Options) -> Conventions {
    Conventions {
        failing: "failed, timed-out and crashed tests form the failing set; ignored tests are not used",
        rank: "mid-rank over entries: entries scoring strictly higher, plus (tied entries + 1) / 2",
        line_rank: "mid-rank over lines: lines in entries scoring strictly higher, plus (lines in tied entries + 1) / 2",
        division_by_zero: "0/0 = 0; x/0 = ±f64::MAX; ln 0 = -f64::MAX; overflow clamps to ±f64::MAX",
        ties_displayed: "in code order (file, line)",
        entries: if opts.group {
            "lines with identical coverage form one entry (no spectrum measure can tell them apart)"
        } else {
            "one entry per line (--no-group)"
        },
        smoothing: opts.smoothing,
        clone_failing: opts.clone_failing,
        optimise: opts.optimise,
        update_bound: opts.update_bound,
    }
}

pub(crate) fn test_label(t: &crate::spectra::TestRecord) -> String {
    format!("{} {}", t.binary, t.name)
}

/// The JSON report (pretty-printed, stable key order).
pub fn json(a: &Analysis, rankings: &[Ranking], view: &View) -> String {
    let spectra = a.spectra;
    let report = JsonReport {
        schema: SCHEMA,
        workspace_root: &spectra.workspace_root,
        summary: Summary::of(a),
        core_tests: a
            .core_witnesses()
            .into_iter()
            .map(|t| test_label(&spectra.tests[t]))
            .collect(),
        conventions: conventions(&view.opts),
        diff_base: view.diff_base,
        tests: spectra
            .tests
            .iter()
            .map(|t| JsonTest {
                binary: &t.binary,
                name: &t.name,
                outcome: t.outcome.as_str(),
                signal: t.signal,
                message: t.message.as_deref(),
                duration_ms: t.duration_ms,
            })
            .collect(),
        rankings: rankings
            .iter()
            .map(|r| JsonRanking {
                measure: r.measure.name,
                formula: r.measure.formula,
                changed_in_top: view.changed_in_top(r),
                ht_order: r.ht.as_ref(),
                cfg: if r.measure.needs_edges() { JsonCfg::of(a) } else { None },
                units: r.entries.iter().map(|x| json_entry(a, x)).collect(),
            })
            .collect(),
    };
    let mut s = serde_json::to_string_pretty(&report).expect("report serialises");
    s.push('\n');
    s
}

fn json_entry<'a>(a: &'a Analysis, x: &Ranked) -> JsonEntry<'a> {
    let units = &a.groups[x.group].units;
    let c = x.counts;
    JsonEntry {
        first: JsonUnit::of(&a.spectra.units[units[0]]),
        members: if units.len() > 1 {
            units.iter().map(|&u| JsonUnit::of(&a.spectra.units[u])).collect()
        } else {
            Vec::new()
        },
        score: x.score,
        log10_probability: x.log10,
        rank: x.rank,
        line_rank: x.line_rank,
        certain: x.certain,
        changed: x.changed,
        expected_hitting_time: x.expected_time,
        ef: c.ef as u32,
        ep: c.ep as u32,
        nf: c.nf as u32,
        np: c.np as u32,
    }
}

/// Reads source lines on demand (files relative to the workspace root).
pub(crate) struct Sources<'a> {
    root: &'a Path,
    files: HashMap<String, Option<Vec<String>>>,
}

impl<'a> Sources<'a> {
    pub(crate) fn new(root: &'a Path) -> Self {
        Sources {
            root,
            files: HashMap::new(),
        }
    }

    pub(crate) fn line(&mut self, file: &str, line: u32) -> Option<&str> {
        let root = self.root;
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(root.join(file))
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        lines.as_ref()?.get(line.checked_sub(1)? as usize).map(String::as_str)
    }
}

pub(crate) fn fmt_score(m: &Measure, x: &Ranked) -> String {
    let s = x.score;
    if m.is_probability() && s < 1e-4 {
        // A probability too small for four decimals: scientific notation, or its log10 when
        // it underflows f64 altogether.
        return if s > 0.0 {
            format!("{s:.2e}")
        } else {
            match x.log10 {
                Some(l) if l > -1e300 => format!("10^{l:.1}"),
                _ => "0".into(),
            }
        };
    }
    if s.abs() == f64::MAX {
        if s > 0.0 { "max".into() } else { "-max".into() }
    } else if s.abs() >= 1e6 {
        format!("{s:.2e}")
    } else {
        format!("{s:.4}")
    }
}

fn fmt_rank(r: f64) -> String {
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// Line spans of a group's units in one file: runs of consecutive units become `a-b`.
pub(crate) fn spans(units: &[usize], all: &[Unit]) -> Vec<(String, String)> {
    let mut out: Vec<(String, Vec<(u32, u32)>)> = Vec::new();
    let mut prev: Option<usize> = None;
    for &u in units {
        let unit = &all[u];
        let file = unit.file.clone();
        let contiguous = prev.is_some_and(|p| p + 1 == u && all[p].file == unit.file);
        match out.last_mut() {
            Some((f, runs)) if *f == file && contiguous => runs.last_mut().expect("non-empty").1 = unit.line,
            Some((f, runs)) if *f == file => runs.push((unit.line, unit.line)),
            _ => out.push((file, vec![(unit.line, unit.line)])),
        }
        prev = Some(u);
    }
    out.into_iter()
        .map(|(f, runs)| {
            let text = runs
                .iter()
                .map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") })
                .collect::<Vec<_>>()
                .join(",");
            (f, text)
        })
        .collect()
}

/// The failing tests with their messages.
pub fn failing_tests(spectra: &Spectra) -> String {
    let mut out = String::new();
    let failing: Vec<_> = spectra.tests.iter().filter(|t| t.outcome.is_failing()).collect();
    if failing.is_empty() {
        return out;
    }
    let _ = writeln!(out, "Failing tests ({}):", failing.len());
    for t in failing {
        let _ = writeln!(
            out,
            "  {:<9} {} {}",
            t.outcome.as_str().to_uppercase(),
            t.binary,
            t.name
        );
        if let Some(m) = &t.message {
            for l in m.lines() {
                let _ = writeln!(out, "            {l}");
            }
        }
    }
    out
}

/// Options that differ from the defaults, in words (empty when none do).
fn option_notes(opts: &Options) -> Vec<String> {
    let mut notes = Vec::new();
    if opts.smoothing {
        notes.push("counts smoothed by +0.5".to_string());
    }
    if opts.clone_failing > 1 {
        notes.push(format!("failing tests counted {} times", opts.clone_failing));
    }
    if opts.optimise {
        notes.push("Opt_w: lines run by every failing test first".to_string());
    }
    if !opts.group {
        notes.push("one entry per line".to_string());
    }
    notes
}

/// The human report: summary, failing tests, then each measure's top-N entries by file.
pub fn human(a: &Analysis, rankings: &[Ranking], view: &View) -> String {
    let spectra = a.spectra;
    let sum = Summary::of(a);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} tests: {} passed, {} failed, {} timed out, {} crashed, {} ignored",
        sum.tests, sum.passed, sum.failed, sum.timed_out, sum.crashed, sum.ignored
    );
    let (noun, place) = if sum.files == 0 {
        ("units", String::new())
    } else {
        ("lines", format!(" in {} files", sum.files))
    };
    let _ = writeln!(
        out,
        "{} {noun}{place}, {} run by some test, {} by a failing test ({} entries after merging {noun} with identical coverage)",
        sum.units, sum.covered_units, sum.failing_units, sum.entries
    );
    if sum.failing() > 0 {
        let witnesses = a.core_witnesses();
        let _ = writeln!(
            out,
            "{} {noun} are run by every failing test: if there is a single fault, it is one of them ({} of {} failing tests already pin them down)",
            sum.all_failing_core,
            witnesses.len(),
            sum.failing()
        );
    }
    let mut notes = option_notes(&view.opts);
    if let Some(rev) = view.diff_base {
        notes.push(format!("`changed` marks lines changed since {rev}"));
    }
    if !notes.is_empty() {
        let _ = writeln!(out, "Options: {}", notes.join("; "));
    }
    out.push('\n');
    out.push_str(&failing_tests(spectra));
    let mut sources = Sources::new(Path::new(&spectra.workspace_root));
    for r in rankings {
        human_ranking(&mut out, a, r, view, &mut sources);
    }
    if rankings.iter().any(|r| r.entries.iter().any(|x| x.tied > 1)) {
        let _ = writeln!(
            out,
            "\n(=N after a rank: N entries share that score and that mid-rank.)"
        );
    }
    if rankings.iter().any(|r| r.entries.iter().any(|x| x.certain)) {
        let _ = writeln!(
            out,
            "(certain: a failing test ran this line and nothing else, so Doric's fault likelihood is 1.)"
        );
    }
    out
}

fn human_ranking(out: &mut String, a: &Analysis, r: &Ranking, view: &View, sources: &mut Sources) {
    let top = view.top;
    let units = &a.spectra.units;
    let shown = &r.entries[..top.min(r.entries.len())];
    let what = if r.measure.is_probability() {
        "probability"
    } else {
        "score"
    };
    let order = if r.ht.is_some() {
        " in the order a person is expected to reach them (HT_Rank model, E[T] = expected steps)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "\n{}{order} ({}), top {} of {} entries:",
        console::style(format!("Most suspicious lines by {}", r.measure.name)).bold(),
        r.measure.formula,
        shown.len(),
        r.entries.len()
    );
    // Files in the order of their best-ranked entry; entries in rank order within a file.
    let file_of = |x: &Ranked| units[a.groups[x.group].units[0]].file.as_str();
    let named = |x: &Ranked| units[a.groups[x.group].units[0]].name().is_some();
    let mut files: Vec<&str> = Vec::new();
    for x in shown.iter().filter(|x| !named(x)) {
        if !files.contains(&file_of(x)) {
            files.push(file_of(x));
        }
    }
    let line = |x: &Ranked, location: &str, src: &str| {
        let tie = if x.tied > 1 {
            format!("={}", x.tied)
        } else {
            String::new()
        };
        let certain = match (x.certain, x.changed) {
            (true, true) => " certain changed",
            (true, false) => " certain",
            (false, true) => " changed",
            (false, false) => "",
        };
        let time = x.expected_time.map(|t| format!("  E[T] {t:>7.1}")).unwrap_or_default();
        format!(
            "    rank {:>5} {:<4} {what} {:>8}{time}  ef {:>3} ep {:>3}{certain}  {location:>5} | {src}",
            fmt_rank(x.rank),
            tie,
            fmt_score(r.measure, x),
            x.counts.ef,
            x.counts.ep,
        )
    };
    for f in files {
        let _ = writeln!(out, "  {}", console::style(f).cyan().bold());
        for x in shown.iter().filter(|x| !named(x) && file_of(x) == f) {
            let group = &a.groups[x.group].units;
            let first = &units[group[0]];
            let mut src = sources.line(&first.file, first.line).unwrap_or("").trim().to_string();
            if group.len() > 1 {
                let all: Vec<String> = spans(group, units)
                    .into_iter()
                    .map(|(f, runs)| if f == first.file { runs } else { format!("{f}:{runs}") })
                    .collect();
                let mut list = all.join(", ");
                if list.chars().count() > 60 {
                    list = list.chars().take(59).collect::<String>() + "…";
                }
                let _ = write!(src, "   (+{} lines alike: {list})", group.len() - 1);
            }
            let text = line(x, &first.line.to_string(), &src);
            let text = if x.rank <= 1.0 {
                console::style(text).red().to_string()
            } else {
                text
            };
            let _ = writeln!(out, "{text}");
        }
    }
    let imported: Vec<&Ranked> = shown.iter().filter(|x| named(x)).collect();
    if !imported.is_empty() {
        let _ = writeln!(out, "  (imported units)");
        for x in imported {
            let group = &a.groups[x.group].units;
            let mut name = units[group[0]].file.clone();
            if group.len() > 1 {
                let _ = write!(name, "   (+{} units with the same coverage)", group.len() - 1);
            }
            let _ = writeln!(out, "{}", line(x, "", &name));
        }
    }
    if let (Some(k), Some(rev)) = (view.changed_in_top(r), view.diff_base) {
        let _ = writeln!(
            out,
            "  {k} of these {} entries touch lines changed since {rev}",
            shown.len()
        );
    }
    if let Some(last) = shown.last() {
        let more_tied = r.entries[shown.len()..].iter().filter(|x| x.rank == last.rank).count();
        if more_tied > 0 {
            let _ = writeln!(
                out,
                "  … and {more_tied} more entries tied at rank {}",
                fmt_rank(last.rank)
            );
        }
    }
}

/// The report when no test failed: a coverage summary.
pub fn no_failures(a: &Analysis) -> String {
    let sum = Summary::of(a);
    format!(
        "No failing tests: all {} tests that ran passed ({} ignored); nothing to localise.\nCoverage: {} of {} lines in {} files ran ({:.1}%).\n",
        sum.ran(),
        sum.ignored,
        sum.covered_units,
        sum.units,
        sum.files,
        if sum.units == 0 {
            0.0
        } else {
            100.0 * sum.covered_units as f64 / sum.units as f64
        }
    )
}

/// `cargo sfl measures`: the catalogue in words.
pub fn catalogue_human() -> String {
    let mut out = String::new();
    let all: Vec<&Measure> = crate::measures::all().collect();
    let _ = writeln!(
        out,
        "{} measures ({} spectrum-based, {} from Doric, {} over control-flow edges). Default: {}.\n",
        all.len(),
        crate::measures::catalogue::SPECTRUM.len(),
        crate::measures::DORIC.len(),
        crate::measures::CFG.len(),
        crate::measures::DEFAULT
    );
    for m in all {
        let mut tags = Vec::new();
        if let Some(g) = m.group {
            tags.push(format!("group {g}"));
        }
        if let Some(c) = m.cloning {
            tags.push(format!("cloning: {}", c.as_str()));
        }
        if !m.aliases.is_empty() {
            tags.push(format!("also: {}", m.aliases.join(", ")));
        }
        let tags = if tags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", tags.join("; "))
        };
        let _ = writeln!(out, "{}{tags}\n    {}\n    {}", m.name, m.formula, m.citation);
    }
    out
}

#[derive(Serialize)]
struct JsonMeasure {
    name: &'static str,
    aliases: &'static [&'static str],
    formula: &'static str,
    citation: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cloning: Option<&'static str>,
    probability: bool,
}

/// `cargo sfl measures --format json`.
pub fn catalogue_json() -> String {
    let list: Vec<JsonMeasure> = crate::measures::all()
        .map(|m| JsonMeasure {
            name: m.name,
            aliases: m.aliases,
            formula: m.formula,
            citation: m.citation,
            group: m.group,
            cloning: m.cloning.map(|c| c.as_str()),
            probability: m.is_probability(),
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&serde_json::json!({
        "schema": "cargo-sfl-measures/v1",
        "measures": list,
    }))
    .expect("catalogue serialises");
    s.push('\n');
    s
}
