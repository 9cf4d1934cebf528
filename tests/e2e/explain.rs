//! `cargo sfl explain FILE:LINE` on the saved spectra of a fixture's shared run.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::support::{Result, check, check_exit, lib_crate, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("explain::minmax", minmax),
        Trial::test("explain::paths_in_a_workspace", paths_in_a_workspace),
    ]
}

/// minmax's fault (line 16) is run by the three failing tests and neither passing test; line 9
/// shares its entry with 12 others that no test tells apart; test code and non-lines are not
/// ranked, and say why.
fn minmax() -> Result {
    let dir = saved("minmax")?.dir();

    let human = sfl(&["explain", "src/lib.rs:16"], dir);
    check(human.status.code() == Some(0), || show(&human))?;
    let text = String::from_utf8_lossy(&human.stdout);
    for want in [
        "failing tests that ran it (3): fixture-minmax tests::t1, fixture-minmax tests::t2, fixture-minmax tests::t3",
        "passing tests that did not (2): fixture-minmax tests::t4, fixture-minmax tests::t5",
        "stack-ochiai",
        "rank 1 of 4 entries",
    ] {
        check(text.contains(want), || format!("no {want:?} in:\n{text}"))?;
    }

    let json = |args: &[&str]| -> Result<Value> {
        let mut all = vec!["explain", "--format", "json"];
        all.extend(args);
        let out = sfl(&all, dir);
        Ok(serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}\n{}", show(&out)))?)
    };
    let fault = json(&["src/lib.rs:16"])?;
    check(fault["schema"] == "cargo-sfl-explain/v1", || format!("{fault:#}"))?;
    check(
        fault["ef"] == 3 && fault["ep"] == 0 && fault["nf"] == 0 && fault["np"] == 2,
        || format!("{fault:#}"),
    )?;
    check(
        fault["tests"]["failing_ran"].as_array().map_or(0, Vec::len) == 3,
        || format!("{fault:#}"),
    )?;

    let tied = json(&["src/lib.rs:9", "-m", "ochiai"])?;
    let entry = tied["entry"].as_array().map_or(0, Vec::len);
    let lines = tied["separation"]["indistinguishable"].as_array().map_or(0, Vec::len);
    let closest = tied["separation"]["closest_passing"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    check(entry == 13 && lines == 13 && !closest.is_empty(), || {
        format!("{tied:#}")
    })?;
    check(
        closest[0]["test"].as_str().is_some_and(|t| t.contains("tests::t")),
        || format!("{tied:#}"),
    )?;
    check(tied["measures"].as_array().map_or(0, Vec::len) == 1, || {
        format!("{tied:#}")
    })?;

    let test_code = sfl(&["explain", "src/lib.rs:30"], dir);
    check_exit(&test_code, 7, &test_code.stdout, &["not ranked: it is test code"])?;
    let blank = sfl(&["explain", "src/lib.rs:5"], dir);
    check_exit(&blank, 7, &blank.stdout, &["not ranked: no test binary's coverage map"])?;
    let bad = sfl(&["explain", "src/lib.rs"], dir);
    check_exit(&bad, 2, &bad.stderr, &["is not FILE:LINE"])
}

/// The workspace fixture: `explain` takes the fault's file relative to the workspace root, to
/// the member's directory (run from there) or absolute; a missing file and a line past the
/// end are usage errors; a line inside a statement of several lines names the line that holds
/// the statement's coverage.
fn paths_in_a_workspace() -> Result {
    let dir = saved("workspace")?.dir();
    let member = dir.join("core");
    let absolute = member.join("src/lib.rs:22");
    for (args, at) in [
        (vec!["explain", "core/src/lib.rs:22"], dir),
        (vec!["explain", "src/lib.rs:22"], member.as_path()),
        (vec!["explain", "./src/lib.rs:22"], member.as_path()),
        (vec!["explain", absolute.to_str().unwrap()], dir),
    ] {
        let out = sfl(&args, at);
        check_exit(
            &out,
            0,
            &out.stdout,
            &["core/src/lib.rs:22", "failing tests that ran it (3)"],
        )?;
    }
    let missing = sfl(&["explain", "core/src/nothing.rs:3"], dir);
    check_exit(&missing, 2, &missing.stderr, &["no such file: core/src/nothing.rs"])?;
    let past = sfl(&["explain", "core/src/lib.rs:999"], dir);
    check_exit(&past, 2, &past.stderr, &["core/src/lib.rs has", "there is no line 999"])?;
    let tmp = lib_crate(
        "label",
        "",
        "pub fn label(n: u32) -> String {\n    format!(\n        \"{} {}\",\n        n,\n        if n == 1 { \"item\" } else { \"items\" }\n    )\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn one() {\n        assert_eq!(super::label(1), \"1 items\");\n    }\n}\n",
    )?;
    let run = sfl(&["-q", "--no-doctests"], tmp.path());
    check(run.status.code() == Some(0), || show(&run))?;
    // The format string of a `format!` call that spans lines 2-6.
    let inside = sfl(&["explain", "src/lib.rs:3"], tmp.path());
    check_exit(
        &inside,
        7,
        &inside.stdout,
        &[
            "it is part of the statement at lines 2-6",
            "cargo sfl explain src/lib.rs:2",
        ],
    )
}
