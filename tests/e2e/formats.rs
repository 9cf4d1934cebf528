//! The report formats end to end: human, JSON and SARIF snapshots, SARIF against the official
//! schema and Microsoft's Multitool, the HTML report in a real browser, the measures catalogue
//! and GZoltar matrices imported with `analyze`. The reports are made from minmax's shared run
//! (`report::rereads_saved_spectra` checks that a run prints what `report` makes of its spectra).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::support::webdriver::Browser;
use crate::support::{Result, check, check_exit, report, root, sfl, show, tool};

/// The human report the snapshot holds: the first five entries of two measures.
pub(crate) const HUMAN_TOP_5: &[&str] = &["--top", "5", "-m", "ochiai", "-m", "naish2"];

/// The SARIF report [`sarif_validates`] reads: the first three entries of three measures
/// (lines listed on their own: minmax has one function).
pub(crate) const SARIF_TOP_3: &[&str] = &[
    "--format",
    "sarif",
    "--granularity",
    "line",
    "--top",
    "3",
    "-m",
    "ochiai",
    "-m",
    "cl",
    "-m",
    "cp",
];

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("snapshot::outputs", snapshots),
        Trial::test("analyze::gzoltar_doric_minmax", analyze_gzoltar_doric_minmax),
        Trial::test("measures::catalogue", measures_catalogue),
        Trial::test("sarif::validates", sarif_validates),
        Trial::test("html::report_in_a_browser", html_report_in_a_browser),
    ]
}

/// Snapshots of the human and JSON reports (paths and durations redacted) and of `--help`.
fn snapshots() -> Result {
    let dir = saved("minmax")?.dir();
    let human = report(HUMAN_TOP_5, dir);
    check(human.status.success(), || show(&human))?;
    let json = sfl(&["report", "--format", "json"], dir);
    check(json.status.success(), || show(&json))?;
    let help = sfl(&["--help"], dir);
    let catalogue = sfl(&["measures"], dir);
    let sarif = sfl(&["report", "--format", "sarif", "--top", "2"], dir);
    let short = sfl(&["report", "--format", "short", "-m", "ochiai", "-m", "naish2"], dir);
    check(short.status.success(), || show(&short))?;
    short_lines_lead_as_json(&String::from_utf8_lossy(&short.stdout), dir)?;
    let imported = sfl(
        &[
            "analyze",
            "--gzoltar",
            gzoltar_minmax().to_str().unwrap(),
            "-m",
            "cl-u",
            "-m",
            "dstar",
            "--no-group",
        ],
        dir,
    );
    check(imported.status.success(), || show(&imported))?;
    let repo = root().to_string_lossy().into_owned();
    let root = dir.to_string_lossy().into_owned();
    let redact = |b: &[u8]| {
        let s = String::from_utf8_lossy(b).replace(&root, "[ROOT]");
        s.lines()
            .map(|l| match l.find("\"duration_ms\": ") {
                Some(i) => format!(
                    "{}\"duration_ms\": [MS]{}",
                    &l[..i],
                    if l.ends_with(',') { "," } else { "" }
                ),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root_snapshots());
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        insta::assert_snapshot!("minmax_human", redact(&human.stdout));
        insta::assert_snapshot!("minmax_json", redact(&json.stdout));
        insta::assert_snapshot!("help", redact(&help.stdout));
        insta::assert_snapshot!("measures", redact(&catalogue.stdout));
        insta::assert_snapshot!(
            "minmax_sarif",
            redact(&sarif.stdout).replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
        );
        insta::assert_snapshot!("minmax_short", redact(&short.stdout));
        insta::assert_snapshot!(
            "gzoltar_minmax_human",
            redact(&imported.stdout).replace(&repo, "[REPO]")
        );
    });
    Ok(())
}

/// Every `--format short` line is `file:line:column: severity: message`, in the order the JSON
/// report's functions show their entries, each at the line the JSON report shows it at.
fn short_lines_lead_as_json(short: &str, dir: &std::path::Path) -> Result {
    let json = sfl(&["report", "--format", "json", "-m", "ochiai", "-m", "naish2"], dir);
    let report: serde_json::Value = serde_json::from_slice(&json.stdout)?;
    let want: Vec<(String, u64, String)> = report["rankings"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| {
            let measure = r["measure"].as_str().unwrap().to_string();
            // The best line of each of the top 5 functions.
            let top = r["functions"].as_array().unwrap().len().min(5);
            crate::support::shown_in_json(r)
                .into_iter()
                .take(top)
                .map(move |(file, line)| (file, u64::from(line), measure.clone()))
        })
        .collect();
    let lines: Vec<&str> = short.lines().collect();
    check(lines.len() == want.len(), || {
        format!("{} lines, {} entries:\n{short}", lines.len(), want.len())
    })?;
    for (line, (file, n, measure)) in lines.iter().zip(&want) {
        let mut parts = line.splitn(5, ':');
        let (f, l, c, severity, message) = (parts.next(), parts.next(), parts.next(), parts.next(), parts.next());
        check(
            f == Some(file.as_str())
                && l.and_then(|l| l.parse::<u64>().ok()) == Some(*n)
                && c.is_some_and(|c| c.parse::<u32>().is_ok_and(|c| c >= 1))
                && matches!(severity, Some(" warning" | " note"))
                && message.is_some_and(|m| m.contains(" (function #") && m.contains(&format!(": {measure} rank "))),
            || format!("{line:?} is not {file}:{n} under {measure}"),
        )?;
    }
    Ok(())
}

/// `cargo sfl analyze --gzoltar` on Doric's minmax matrix gives the paper's cl and P(f).
fn analyze_gzoltar_doric_minmax() -> Result {
    let dir = gzoltar_minmax();
    let dir = dir.to_str().unwrap();
    let out = sfl(
        &[
            "analyze",
            "--gzoltar",
            dir,
            "-m",
            "cl",
            "-m",
            "fault-likelihood",
            "--no-group",
            "--format",
            "json",
        ],
        &root(),
    );
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let by_name = |ranking: usize| -> BTreeMap<String, (f64, bool)> {
        report["rankings"][ranking]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                let name = u["name"].as_str().unwrap().to_string();
                (
                    name,
                    (u["score"].as_f64().unwrap(), u["certain"].as_bool().unwrap_or(false)),
                )
            })
            .collect()
    };
    let close = |got: &BTreeMap<String, (f64, bool)>, want: &[(&str, f64)]| -> Result {
        check(got.len() == want.len(), || format!("{got:?}"))?;
        for (name, w) in want {
            let g = got[*name].0;
            check((g - w).abs() < 1e-12, || format!("{name}: {g} != {w} in {got:?}"))?;
        }
        Ok(())
    };
    let cl = by_name(0);
    close(
        &cl,
        &[
            ("minmax#u2", 1.0 / 6.0),
            ("minmax#u3", 5.0 / 9.0),
            ("minmax#u4", 1.0 / 6.0),
        ],
    )?;
    check(report["rankings"][0]["units"][0]["name"] == "minmax#u3", || show(&out))?;
    let pf = by_name(1);
    close(
        &pf,
        &[("minmax#u2", 2.0 / 3.0), ("minmax#u3", 1.0), ("minmax#u4", 2.0 / 3.0)],
    )?;
    check(pf["minmax#u3"].1 && !pf["minmax#u2"].1, || show(&out))?;
    check(report["tests"][0]["name"] == "t1", || show(&out))?;
    // A malformed matrix is refused with exit code 5 and the offending line.
    let tmp = tempfile::tempdir()?;
    std::fs::write(tmp.path().join("spectra.csv"), "name\nu1\n")?;
    std::fs::write(tmp.path().join("matrix.txt"), "1 -\n1 0 +\n")?;
    let bad = sfl(&["analyze", "--gzoltar", tmp.path().to_str().unwrap()], &root());
    check_exit(&bad, 5, &bad.stderr, &["matrix.txt line 2"])
}

/// `cargo sfl measures --format json` lists at least 100 measures, each findable by name.
fn measures_catalogue() -> Result {
    let out = sfl(&["measures", "--format", "json"], &root());
    check(out.status.success(), || show(&out))?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    let list = v["measures"].as_array().unwrap();
    check(list.len() >= 100, || format!("{} measures", list.len()))?;
    for m in list {
        let name = m["name"].as_str().unwrap();
        check(
            !m["formula"].as_str().unwrap().is_empty() && !m["citation"].as_str().unwrap().is_empty(),
            || format!("{name} lacks a formula or citation"),
        )?;
        // Every listed name works as --measure.
        if ["ochiai", "cl", "gp05"].contains(&name) {
            let r = sfl(
                &["analyze", "--gzoltar", gzoltar_minmax().to_str().unwrap(), "-m", name],
                &root(),
            );
            check(r.status.success(), || show(&r))?;
        }
    }
    Ok(())
}

/// `--format sarif` validates against the official SARIF 2.1.0 schema and passes Microsoft's
/// SARIF Multitool with no error-level result; its content points at the fault.
fn sarif_validates() -> Result {
    let dir = saved("minmax")?.dir();
    let scratch = tempfile::tempdir()?;
    let out = report(SARIF_TOP_3, dir);
    check(out.status.success(), || show(&out))?;
    let log: Value = serde_json::from_slice(&out.stdout)?;

    let validator = sarif_schema()?;
    let errors: Vec<String> = validator
        .iter_errors(&log)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    check(errors.is_empty(), || errors.join("\n"))?;
    // The check is live: a log with a wrong version or a result without a message fails it.
    let mut broken = log.clone();
    broken["version"] = "9.9".into();
    broken["runs"][0]["results"][0]
        .as_object_mut()
        .unwrap()
        .remove("message");
    check(validator.iter_errors(&broken).count() >= 2, || {
        "a broken log passed the schema".into()
    })?;

    multitool(scratch.path(), "report", &out.stdout)?;

    // At function granularity a result spans its function and names it; still valid.
    let fun = sfl(
        &[
            "report",
            "--granularity",
            "function",
            "--format",
            "sarif",
            "-m",
            "ochiai",
        ],
        dir,
    );
    check(fun.status.success(), || show(&fun))?;
    let fun_log: Value = serde_json::from_slice(&fun.stdout)?;
    let errors: Vec<String> = validator.iter_errors(&fun_log).map(|e| e.to_string()).collect();
    check(errors.is_empty(), || errors.join("\n"))?;
    multitool(scratch.path(), "functions", &fun.stdout)?;
    let at = &fun_log["runs"][0]["results"][0]["locations"][0];
    check(
        at["physicalLocation"]["region"] == serde_json::json!({"startLine": 6, "startColumn": 1, "endLine": 22})
            && at["logicalLocations"][0]["fullyQualifiedName"] == "minmax",
        || format!("{at:#}"),
    )?;

    let run = &log["runs"][0];
    let results = run["results"].as_array().unwrap();
    check(run["tool"]["driver"]["rules"].as_array().unwrap().len() == 3, || {
        "three rules".into()
    })?;
    check(results.len() == 9, || format!("{} results", results.len()))?;
    let top = &results[0];
    let region = &top["locations"][0]["physicalLocation"];
    check(
        region["artifactLocation"]["uri"] == "src/lib.rs"
            && region["artifactLocation"]["uriBaseId"] == "SRCROOT"
            && region["region"]["startLine"] == 16,
        || format!("{top:#}"),
    )?;
    check(
        top["ruleId"] == "sfl/ochiai" && top["partialFingerprints"]["cargoSflLines/v1"].is_string(),
        || format!("{top:#}"),
    )?;
    // The failing tests are related locations, at their panic site.
    let related = top["relatedLocations"].as_array().unwrap();
    check(
        related
            .iter()
            .filter(|r| r["physicalLocation"]["region"]["startLine"] == 30)
            .count()
            == 3,
        || format!("{related:#?}"),
    )?;
    // cl results carry the probability; cp results a score and no probability.
    check(results[3]["properties"]["probability"].is_number(), || {
        format!("{:#}", results[3])
    })?;
    check(
        results[6]["ruleId"] == "sfl/cp"
            && results[6]["properties"]["score"].is_number()
            && results[6]["properties"]["probability"].is_null(),
        || format!("{:#}", results[6]),
    )
}

/// Microsoft's SARIF Multitool finds no error in `log` (written as `name.sarif` into `dir`).
/// The official SARIF 2.1.0 schema as a validator.
pub(crate) fn sarif_schema() -> Result<jsonschema::Validator> {
    // The official schema's `language` pattern has a bare `]`, a literal in ECMAScript but an
    // error for Rust's regex engine: escape it (the same pattern in both dialects).
    let text = std::fs::read_to_string(tool("SFL_SARIF_SCHEMA", "sarif-2.1.0.json")?)?;
    let bare = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    check(text.contains(bare), || "the schema's language pattern changed".into())?;
    let schema: Value = serde_json::from_str(&text.replace(bare, r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}\\]?$""#))?;
    Ok(jsonschema::validator_for(&schema).map_err(|e| format!("schema: {e}"))?)
}

pub(crate) fn multitool(dir: &Path, name: &str, log: &[u8]) -> Result {
    let file = dir.join(format!("{name}.sarif"));
    std::fs::write(&file, log)?;
    let validated = dir.join(format!("{name}-validation.sarif"));
    let mt = Command::new(tool(
        "SFL_SARIF_MULTITOOL",
        "node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool",
    )?)
    .arg("validate")
    .arg(&file)
    .arg("-o")
    .arg(&validated)
    .output()?;
    check(mt.status.success(), || show(&mt))?;
    let v: Value = serde_json::from_slice(&std::fs::read(&validated)?)?;
    let problems: Vec<&Value> = v["runs"][0]["results"].as_array().unwrap().iter().collect();
    let errors: Vec<&&Value> = problems.iter().filter(|r| r["level"] == "error").collect();
    check(errors.is_empty(), || format!("Multitool errors: {errors:#?}"))
}

/// The HTML report in a real headless browser: the top suspect, switching measures, "not the
/// bug" re-ranking by Doric's cl-u exactly as `cargo sfl -m cl-u` does, and screenshots kept in
/// target/test-artifacts/.
fn html_report_in_a_browser() -> Result {
    let dir = saved("minmax")?.dir();
    let scratch = tempfile::tempdir()?;
    let out_dir = scratch.path().join("report");
    let out = sfl(
        &["report", "--format", "html", "--output", out_dir.to_str().unwrap()],
        dir,
    );
    check(out.status.success(), || show(&out))?;
    let page = out_dir.join("index.html");
    let html = std::fs::read_to_string(&page)?;
    check(!html.contains("http://") && !html.contains("https://"), || {
        "the page must not need the network".into()
    })?;
    // What cl-u inspects second, for comparison with the page.
    let clu = sfl(&["report", "-m", "cl-u", "--format", "json"], dir);
    let clu: Value = serde_json::from_slice(&clu.stdout)?;
    let clu_second = clu["rankings"][0]["units"][1]["line"].as_u64().unwrap();

    let browser = Browser::start(&scratch.path().join("chromium-profile"))?;
    browser.open(&format!("file://{}", page.display()))?;
    let artifacts = root().join("target/test-artifacts");
    browser.screenshot(&artifacts.join("html-report.png"))?;
    let rows = ranking_rows(&browser)?;
    check(rows.first().map(String::as_str) == Some("src/lib.rs:16"), || {
        format!("ochiai rows {rows:?}")
    })?;

    // Each failing test shows its panic backtrace (minmax's tests panic in `check`, line 30).
    let failing = browser.script("return document.getElementById('failing').innerText")?;
    check(
        failing
            .as_str()
            .is_some_and(|t| t.contains("src/lib.rs:30  fixture_minmax::tests::check")),
        || format!("failing tests: {failing}"),
    )?;

    browser.click("#measure option[value='cl']")?;
    let rows = ranking_rows(&browser)?;
    // With test code left out, Doric's cl puts the fault first too.
    check(rows.first().map(String::as_str) == Some("src/lib.rs:16"), || {
        format!("cl rows {rows:?}")
    })?;

    browser.click("#ranking tbody button.refute")?;
    let rows = ranking_rows(&browser)?;
    check(rows.first().is_some_and(|r| label_holds(r, clu_second)), || {
        format!("after 'not the bug': {rows:?}, cl-u's second pick is line {clu_second}")
    })?;
    check(!rows.iter().any(|r| r == "src/lib.rs:16"), || {
        format!("refuted entry still ranked: {rows:?}")
    })?;
    let notice = browser.script("return document.getElementById('notice').innerText")?;
    let notice = notice.as_str().unwrap_or("");
    check(notice.contains("src/lib.rs:16") && notice.contains("Assumed"), || {
        notice.to_string()
    })?;
    let selected = browser.script("return document.getElementById('measure').value")?;
    check(selected.as_str().is_some_and(|s| s.starts_with("cl-u")), || {
        format!("{selected}")
    })?;
    browser.screenshot(&artifacts.join("html-report-after-not-the-bug.png"))
}

/// Whether a row label (`src/lib.rs:6-9,11-12,…`: an entry's runs of lines) holds `line`.
fn label_holds(label: &str, line: u64) -> bool {
    let runs = label.rsplit_once(':').map_or("", |(_, runs)| runs);
    runs.split(',').any(|run| {
        let (a, b) = run.split_once('-').unwrap_or((run, run));
        matches!((a.parse::<u64>(), b.parse::<u64>()), (Ok(a), Ok(b)) if a <= line && line <= b)
    })
}

/// The ranking table's rows, top first, by their location label.
fn ranking_rows(browser: &Browser) -> Result<Vec<String>> {
    let v = browser.script("return [...document.querySelectorAll('#ranking tbody tr')].map(r => r.dataset.loc)")?;
    Ok(v.as_array()
        .ok_or("no rows")?
        .iter()
        .filter_map(|x| x.as_str().map(String::from))
        .collect())
}

/// Where the insta snapshots live (insta's default would follow this module's path).
fn root_snapshots() -> PathBuf {
    root().join("tests/snapshots")
}

/// Doric's minmax example as a GZoltar matrix.
fn gzoltar_minmax() -> PathBuf {
    root().join("fixtures/gzoltar-minmax")
}
