//! SARIF 2.1.0 output (`--format sarif`) for editors and code scanning: one result per top-N
//! entry of each measure, one rule per measure.
//!
//! Paths are relative to the repository root (the git top level, else the workspace root) with
//! `uriBaseId: SRCROOT`; each result carries the measure's score, rank and probability, the
//! failing tests as related locations (at their panic site when the message names one), and a
//! `partialFingerprints` entry that depends on the file and the text of the lines, not on line
//! numbers, so it survives unrelated edits.

use std::path::Path;

use md5::{Digest, Md5};

use super::disk::{Disk, Sources};
use super::model::{Ranking, Report};
use super::text::{fmt_score, test_label, written_by_build_script};
use super::view::ShownLine;
use super::view::{Conventions, View};
use crate::coverage::hex;
use crate::measures::Measure;
use crate::spectra::{Spectra, TestRecord};

/// The SARIF schema URI written into `$schema`.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

mod model;
use model::*;

/// A location in a file under `SRCROOT`; `prefix` is the workspace's path in the repository.
fn physical(prefix: &str, file: &str, region: Region) -> PhysicalLocation {
    PhysicalLocation {
        artifact_location: ArtifactLocation {
            uri: encoded(&format!("{prefix}{file}")),
            uri_base_id: "SRCROOT",
        },
        region,
    }
}

fn lines(start: u32, end: u32) -> Region {
    Region {
        start_line: start,
        start_column: None,
        end_line: Some(end),
    }
}

/// A `file://` URI for a directory, with the trailing slash SARIF requires of base URIs.
fn dir_uri(dir: &Path) -> String {
    let mut s = dir.to_string_lossy().replace('\\', "/");
    if !s.ends_with('/') {
        s.push('/');
    }
    let s = encoded(&s);
    if s.starts_with('/') {
        format!("file://{s}")
    } else {
        format!("file:///{s}")
    }
}

/// `path` as a URI's path: every byte but the unreserved ones and `/` percent-encoded (a
/// space or `ë` in a relative `uri` makes it no URI reference, as SARIF requires).
fn encoded(path: &str) -> String {
    path.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn rule_id(name: &str) -> String {
    format!("sfl/{name}")
}

pub(crate) use crate::verdict::panic_site;

/// The files failing tests' panic sites name (those of the workspace are related locations).
pub fn panic_files(spectra: &Spectra) -> impl Iterator<Item = String> + '_ {
    spectra
        .tests
        .iter()
        .filter(|t| t.outcome.is_failing())
        .filter_map(|t| panic_site(t.message.as_deref()?))
        .map(|(file, _, _)| file)
}

/// The SARIF log (pretty-printed).
pub fn sarif<'a>(report: &Report, view: &'a View<'a>, disk: &Disk) -> String {
    let spectra = report.spectra;
    let (repo, prefix) = match &disk.repository {
        Some(r) => (r.root.as_path(), r.prefix.as_str()),
        None => (Path::new(&spectra.workspace_root), ""),
    };
    let failing: Vec<usize> = (0..spectra.tests.len())
        .filter(|&t| spectra.tests[t].outcome.is_failing())
        .collect();
    // Failing tests, as related locations of the results whose lines they ran.
    let related: Vec<Location> = failing
        .iter()
        .enumerate()
        .map(|(i, &t)| failing_test(i + 1, &spectra.tests[t], disk, prefix))
        .collect();
    let at = Place {
        spectra,
        prefix,
        related: &related,
        failing: &failing,
        view,
    };
    let mut results = Vec::new();
    for (rule_index, r) in report.rankings.iter().enumerate() {
        for shown in view.shown(r) {
            results.push(result(r, rule_index, &shown, &at, &disk.sources));
        }
    }
    let log = Log {
        schema: SCHEMA_URI,
        version: "2.1.0",
        runs: vec![Run {
            tool: Tool {
                driver: Driver {
                    name: "cargo-sfl",
                    version: env!("CARGO_PKG_VERSION"),
                    semantic_version: env!("CARGO_PKG_VERSION"),
                    rules: report.rankings.iter().map(|r| rule(r.measure)).collect(),
                },
            },
            original_uri_base_ids: BaseUris {
                srcroot: BaseUri { uri: dir_uri(repo) },
            },
            invocations: vec![Invocation {
                execution_successful: true,
            }],
            properties: RunProperties {
                tests: spectra.tests.len(),
                failing_tests: failing.len(),
                flaky_tests: failing
                    .iter()
                    .map(|&t| &spectra.tests[t])
                    .filter(|t| t.flaky)
                    .map(test_label)
                    .collect(),
                all_failing_core: report.summary.all_failing_core,
                conventions: Conventions::of(&view.opts),
                diff_base: view.diff_base,
            },
            results,
        }],
    };
    let mut s = serde_json::to_string_pretty(&log).expect("SARIF serialises");
    s.push('\n');
    s
}

/// The first line of a panic's own message (`assertion `left == right` failed`), not the
/// `panicked at` line above it nor the values below it.
pub(crate) fn headline(message: &str) -> &str {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    if first.starts_with("panicked at ") || first.starts_with("thread '") {
        lines.next().unwrap_or(first)
    } else {
        first
    }
}

/// A failing test as a related location: its name, the first line of its panic's message,
/// and its panic site when that is a file of the workspace ([`Disk::panic_files`]).
fn failing_test(id: usize, t: &TestRecord, disk: &Disk, prefix: &str) -> Location {
    let last = t.message.as_deref().map(headline).unwrap_or("");
    let site = t.message.as_deref().and_then(panic_site);
    let physical_location = site
        .filter(|(f, _, _)| disk.panic_files.contains(f))
        .map(|(file, line, col)| {
            let region = Region {
                start_line: line,
                start_column: Some(col),
                end_line: None,
            };
            physical(prefix, &file, region)
        });
    Location {
        id: Some(id),
        message: Some(Message::text(format!(
            "Failing test ({}{}) {}: {}",
            t.outcome.as_str(),
            if t.flaky { ", flaky: passed on a retry" } else { "" },
            test_label(t),
            last.trim()
        ))),
        logical_locations: vec![LogicalLocation {
            fully_qualified_name: format!("{}::{}", t.binary, t.name),
            kind: Some("function"),
        }],
        physical_location,
    }
}

fn rule(m: &Measure) -> Rule {
    let reading = if m.is_probability() {
        "The score is a probability (Doric)."
    } else {
        "Higher scores are more suspicious; only the order matters."
    };
    Rule {
        id: rule_id(m.name),
        name: m.name,
        short_description: Message::text(format!("Line the failing tests point at, by the {} measure.", m.name)),
        full_description: Message::text(format!("{}: {}.", m.name, m.formula)),
        help: Message {
            text: format!(
                "cargo sfl ranks the lines that failing tests ran by the {} measure ({}). {} \
                 Inspect the listed lines from the top; lines with identical coverage are one entry. Source: {}.",
                m.name, m.formula, reading, m.citation
            ),
            markdown: Some(format!(
                "**{}** — `{}`\n\n{} Inspect the listed lines from the top; lines with identical coverage are one entry.\n\nSource: {}.",
                m.name, m.formula, reading, m.citation
            )),
        },
        default_configuration: Configuration { level: "warning" },
        properties: RuleProperties {
            formula: m.formula,
            citation: m.citation,
            probability: m.is_probability(),
        },
    }
}

/// Where results point: the matrix ranked, paths' prefix under `SRCROOT`, and the failing
/// tests a result lists first among its related locations (those that ran its line).
struct Place<'a> {
    spectra: &'a Spectra,
    prefix: &'a str,
    related: &'a [Location],
    /// The test (index in the matrix) of each of `related`.
    failing: &'a [usize],
    /// Whether units are lines or functions (and the functions' names).
    view: &'a View<'a>,
}

fn result(r: &Ranking, rule_index: usize, shown: &ShownLine, at: &Place, sources: &Sources) -> SarifResult {
    let x = shown.entry;
    let group = x.in_code_order();
    let m = r.measure;
    let c = x.counts;
    let (mut location, alike) = locations(shown, at);
    // The column the code starts at, as `--format short` gives it.
    let unit = &at.spectra.units[shown.lead];
    if let Some(p) = location.physical_location.as_mut()
        && p.region.start_line == unit.line
        && let Some(i) = sources
            .line(&unit.file, unit.line)
            .and_then(|text| text.find(|c: char| !c.is_whitespace()))
    {
        p.region.start_column = Some(i as u32 + 1);
    }
    let ran = |t: usize| at.spectra.coverage[shown.lead].contains(t);
    let mut related_locations: Vec<Location> = at
        .related
        .iter()
        .zip(at.failing)
        .filter(|&(_, &t)| ran(t))
        .map(|(l, _)| l.clone())
        .collect();
    related_locations.extend(alike);
    SarifResult {
        rule_id: rule_id(m.name),
        rule_index,
        level: super::text::level(x.rank),
        message: Message::text(message(r, shown, at)),
        locations: vec![location],
        related_locations,
        code_flows: code_flows(at.spectra, &group, at.prefix),
        partial_fingerprints: Fingerprints {
            lines: fingerprint(at.spectra, m, &group, sources),
        },
        properties: ResultProperties {
            measure: m.name,
            score: x.shown_score(),
            unscored: x.unscored,
            rank: x.rank,
            line_rank: x.line_rank,
            ef: c.ef,
            ep: c.ep,
            nf: c.nf,
            np: c.np,
            lines: group.len(),
            probability: m.is_probability().then_some(x.score),
            log10_probability: m.is_probability().then_some(x.log10),
            certain: x.certain,
            changed: x.changed_lines.contains(&shown.lead),
        },
    }
}

/// A result's message: what is suspicious, by which measure, how much, and what sets it apart.
fn message(r: &Ranking, shown: &ShownLine, at: &Place) -> String {
    let x = shown.entry;
    let m = r.measure;
    let c = x.counts;
    let what = m.score_noun();
    let noun = at.view.unit_noun();
    let subject = match (at.view.function(at.spectra, x.first()), shown.function_label()) {
        (Some((name, _)), _) => format!("Suspicious function {name}"),
        (None, Some(function)) => format!("Suspicious line in {function}"),
        (None, None) => "Suspicious line".to_string(),
    };
    let mut text = format!(
        "{subject}: {} {what} {} (rank {} of {}). Run by {} of {} failing tests and {} of {} passing tests.",
        m.name,
        fmt_score(m, x),
        x.rank,
        crate::ui::counted(r.entries.len(), "entry", "entries"),
        c.ef,
        c.ef + c.nf,
        c.ep,
        c.ep + c.np
    );
    if x.panicked {
        text.push_str(" A failing test panicked on this line's own operation (an index out of bounds, an overflow, …), so it is ranked first.");
    }
    if x.certain {
        text.push_str(&format!(" A failing test ran this {noun} and nothing else."));
    }
    if x.lines.len() > 1 {
        let more = crate::ui::counted(
            x.lines.len() - 1,
            &format!("more {noun} runs"),
            &format!("more {noun}s run"),
        );
        text.push_str(&format!(" {more} exactly alike and cannot be told apart."));
    }
    if x.changed_lines.contains(&shown.lead) {
        text.push_str(&format!(" This {noun} changed in the change under test."));
    }
    if written_by_build_script(&at.spectra.units[shown.lead].file) {
        text.push_str(
            " A build script wrote this file into its OUT_DIR: the code to fix is the package's build.rs (or the data it reads).",
        );
    }
    text
}

/// The backtraces of the failing tests that panicked on a path through one of `group`'s units
/// (at function granularity, through one of its functions).
fn code_flows(spectra: &Spectra, group: &[usize], prefix: &str) -> Vec<CodeFlow> {
    let units = &spectra.units;
    let on_entry = |f: &crate::spectra::Frame| {
        group
            .iter()
            .any(|&u| units[u].file == f.file && units[u].line == f.line)
    };
    spectra
        .tests
        .iter()
        .filter(|t| t.outcome.is_failing() && t.stack.iter().any(on_entry))
        .map(|t| {
            let locations = t
                .stack
                .iter()
                .rev()
                .enumerate()
                .map(|(i, f)| ThreadFlowLocation {
                    location: Location {
                        message: Some(Message::text(f.function.clone())),
                        physical_location: Some(physical(prefix, &f.file, lines(f.line, f.line))),
                        ..Location::default()
                    },
                    nesting_level: i,
                })
                .collect();
            CodeFlow {
                message: Message::text(format!("Panic backtrace of failing test {}", test_label(t))),
                thread_flows: vec![ThreadFlow { locations }],
            }
        })
        .collect()
}

/// Stable across line moves: the rule, the file and the text of the entry's lines.
fn fingerprint(spectra: &Spectra, m: &Measure, group: &[usize], sources: &Sources) -> String {
    let mut md5 = Md5::new();
    md5.update(rule_id(m.name).as_bytes());
    for &u in group {
        let unit = &spectra.units[u];
        md5.update(unit.file.as_bytes());
        md5.update([0]);
        md5.update(sources.line(&unit.file, unit.line).unwrap_or("").trim().as_bytes());
        md5.update([0]);
    }
    hex(&md5.finalize())
}

/// The entry's location (its lead line, the one the other reports lead with; at function
/// granularity its first function; or an imported unit's name) and the rest of its spans as
/// related locations, numbered after the failing tests.
fn locations(shown: &ShownLine, at: &Place) -> (Location, Vec<Location>) {
    let spectra = at.spectra;
    let (x, lead) = (shown.entry, shown.lead);
    let first = &spectra.units[lead];
    if let Some(name) = first.name() {
        let location = Location {
            logical_locations: vec![LogicalLocation {
                fully_qualified_name: name.to_string(),
                kind: None,
            }],
            ..Location::default()
        };
        return (location, Vec::new());
    }
    let own = at.view.spans(spectra, &[lead]);
    let (file, head) = (own[0].file, own[0].spans[0]);
    let rest: Vec<usize> = x.in_code_order().into_iter().filter(|&u| u != lead).collect();
    let mut others = Vec::new();
    for fs in &at.view.spans(spectra, &rest) {
        for span in &fs.spans {
            others.push(Location {
                id: Some(at.related.len() + others.len() + 1),
                message: Some(Message::text(format!(
                    "Runs exactly like the reported {}.",
                    at.view.unit_noun()
                ))),
                logical_locations: Vec::new(),
                physical_location: Some(physical(at.prefix, fs.file, lines(span.start, span.end))),
            });
        }
    }
    let location = Location {
        physical_location: Some(physical(at.prefix, file, lines(head.start, head.end))),
        logical_locations: at
            .view
            .function(spectra, lead)
            .map(|(name, _)| name)
            .or_else(|| shown.function.and_then(|(name, _)| name))
            .map(|name| LogicalLocation {
                fully_qualified_name: name.to_string(),
                kind: Some("function"),
            })
            .into_iter()
            .collect(),
        ..Location::default()
    };
    (location, others)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Analysis, Options};
    use crate::measures::find;
    use crate::rank::rank;
    use crate::report::tests::report_of;
    use crate::spectra::tests::matrix;

    fn view(function_names: Option<&[String]>) -> View<'_> {
        View {
            opts: Options::default(),
            top: 10,
            diff_base: None,
            function_names,
            line_functions: None,
            mutation: None,
        }
    }

    /// The first result of ochiai's ranking of `spectra`, its paths under `prefix`, its
    /// functions named `names`.
    fn first_result(spectra: &Spectra, names: Option<&[String]>, prefix: &str) -> SarifResult {
        let a = Analysis::new(spectra, true);
        let report = report_of(&a, &[rank(&a, find("ochiai").unwrap(), &Options::default())]);
        let r = &report.rankings[0];
        let view = view(names);
        let at = Place {
            spectra,
            prefix,
            related: &[],
            failing: &[],
            view: &view,
        };
        result(r, 0, &at.view.shown(r)[0], &at, &Sources::default())
    }

    /// A line of a file a build script wrote into its OUT_DIR: its result says the code to fix
    /// is the build script, as the terminal report does (helper report).
    #[test]
    fn a_result_in_generated_code_points_at_the_build_script() {
        let (mut f, _) = crate::report::tests::three_functions();
        for u in &mut f.units {
            u.file = "target/sfl/debug/build/gen-0123456789abcdef/out/table.rs".into();
        }
        let got = serde_json::to_value(first_result(&f, None, "")).unwrap();
        let text = got["message"]["text"].as_str().unwrap();
        assert!(
            text.ends_with("the code to fix is the package's build.rs (or the data it reads)."),
            "{text}"
        );
    }

    /// At function granularity a result points at its function's whole extent and names it;
    /// a function run alike is related by its own extent, not merged with the first.
    #[test]
    fn a_function_result_spans_the_function_and_names_it() {
        let (f, names) = crate::report::tests::three_functions();
        assert_eq!(Analysis::new(&f, true).groups[0].units, [0, 2]);
        let got = serde_json::to_value(first_result(&f, Some(&names), "")).unwrap();
        assert!(
            got["message"]["text"]
                .as_str()
                .unwrap()
                .starts_with("Suspicious function a::f: ochiai")
        );
        let region = |v: &serde_json::Value| v["physicalLocation"]["region"].clone();
        assert_eq!(
            region(&got["locations"][0]),
            serde_json::json!({"startLine": 1, "endLine": 2})
        );
        assert_eq!(got["locations"][0]["logicalLocations"][0]["fullyQualifiedName"], "a::f");
        assert_eq!(
            region(&got["relatedLocations"][0]),
            serde_json::json!({"startLine": 5, "endLine": 5})
        );
    }

    #[test]
    fn a_result_serialises_in_sarif_key_order_with_its_other_spans_related() {
        // Lines 1-3 and 5 run exactly alike (one entry, led by line 1: the result points at it
        // alone); line 4 is run by the passing test only.
        let s = matrix(&["11101-", "00010+"]);
        let got = first_result(&s, None, "ws/");
        let a = Analysis::new(&s, true);
        let fingerprint = fingerprint(&s, find("ochiai").unwrap(), &a.groups[0].units, &Sources::default());
        let file = |start: u32, end: u32| {
            serde_json::json!({
                "artifactLocation": {"uri": "ws/src/lib.rs", "uriBaseId": "SRCROOT"},
                "region": {"startLine": start, "endLine": end},
            })
        };
        let want = serde_json::json!({
            "ruleId": "sfl/ochiai",
            "ruleIndex": 0,
            "level": "warning",
            "message": {"text": "Suspicious line: ochiai score 1.0000 (rank 1 of 1 entry). Run by 1 of 1 failing tests and 0 of 1 passing tests. 3 more lines run exactly alike and cannot be told apart."},
            "locations": [{"physicalLocation": file(1, 1)}],
            "relatedLocations": [{
                "id": 1,
                "message": {"text": "Runs exactly like the reported line."},
                "physicalLocation": file(2, 3),
            }, {
                "id": 2,
                "message": {"text": "Runs exactly like the reported line."},
                "physicalLocation": file(5, 5),
            }],
            "partialFingerprints": {"cargoSflLines/v1": fingerprint},
            "properties": {
                "measure": "ochiai", "score": 1.0, "rank": 1.0, "lineRank": 2.5,
                "ef": 1.0, "ep": 0.0, "nf": 0.0, "np": 1.0, "lines": 4,
            },
        });
        // Strings, not values: the key order is part of the output.
        assert_eq!(
            serde_json::to_string_pretty(&got).unwrap(),
            serde_json::to_string_pretty(&want).unwrap()
        );
    }

    #[test]
    fn panic_sites_are_read_from_libtest_messages() {
        assert_eq!(
            panic_site("panicked at src/lib.rs:30:9:\nleast = 1"),
            Some(("src/lib.rs".into(), 30, 9))
        );
        assert_eq!(panic_site("exit status 1"), None);
    }

    #[test]
    fn a_failing_test_is_quoted_by_its_panics_first_line() {
        let assert_eq = "panicked at src/lib.rs:30:9:\nassertion `left == right` failed\n  left: Some(1)\n right: None";
        assert_eq!(headline(assert_eq), "assertion `left == right` failed");
        assert_eq!(headline("exit status 1\nmore"), "exit status 1");
        assert_eq!(headline(""), "");
    }

    #[test]
    fn base_uris_are_file_uris_with_a_trailing_slash() {
        assert_eq!(dir_uri(Path::new("/tmp/a b")), "file:///tmp/a%20b/");
        let at = physical("ws/", "crates/mëm ber/src/lib.rs", lines(1, 1));
        assert_eq!(at.artifact_location.uri, "ws/crates/m%C3%ABm%20ber/src/lib.rs");
    }
}
