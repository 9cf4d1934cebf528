//! `cargo sfl eval`: rank scores, EXAM and hitting times on minmax against values worked out
//! by hand, and an unlocalisable fault; ordering an entry's lines by evidence on the schedule
//! fixture; exact HT_Rank on a ranking hundreds of score groups deep. Each evaluates the saved
//! spectra of its fixture's shared run (`report::rereads_saved_spectra` checks that `eval`
//! with a run gives what `eval --spectra` gives of that run's spectra).

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::support::{Result, check, check_exit, copy_fixture, eval_ochiai, lib_crate, sfl, show, standard_rank};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("eval::hand_computed_ranks", eval_reproduces_hand_computed_ranks),
        Trial::test("eval::tie_break_by_evidence", tie_break_by_evidence),
        Trial::test("eval::ht_exact_on_a_deep_ranking", ht_exact_on_a_deep_ranking),
    ]
}

/// On schedule, Ochiai's two top entries (0.7071) hold 11 lines: `find_nth` with the fault's
/// block (22-24, 30-33, 37) and the branch that removes the process (34-36). In code order the
/// fault (line 30) ties with all 11: 0 + 11/2. By evidence (no backtrace reaches non-test code:
/// both failing tests fail in their own assertions), the signature and two closing braces go
/// last; of the 8 lines that compute or decide, `find_nth`'s one line comes first (a function of
/// 3 lines against `unblock_process`'s more than 10), then the four that operate (`+ 1`, `*`, `n - 1`,
/// an index), the fault among them: 1 + 4/2. The report leads the first entry with line 23,
/// not the signature on line 22. At function granularity each function ranks by its best line,
/// and of two whose best lines share an entry, the one with more lines in it comes first.
fn tie_break_by_evidence() -> Result {
    let dir = saved("schedule")?.dir();
    let code = standard_rank(&eval_ochiai(dir, "code")?, "ochiai");
    let evidence = standard_rank(&eval_ochiai(dir, "evidence")?, "ochiai");
    check(code == 5.5 && evidence == 3.0, || {
        format!("code {code}, evidence {evidence}")
    })?;
    let report = sfl(
        &["report", "--tie-break", "evidence", "--format", "json", "-m", "ochiai"],
        dir,
    );
    let v: Value = serde_json::from_slice(&report.stdout)?;
    let lead = &v["rankings"][0]["units"][0]["line"];
    check(lead == 23, || {
        format!("first entry led by line {lead}\n{}", show(&report))
    })?;
    // Functions rank by their best line: both functions' best lines score 0.7071 in one entry
    // (find_nth's 22-24, unblock_process's 30-33 and 37); the function holding more of the
    // entry's lines comes first (the faulty one, though the line order puts `find_nth`'s line
    // first); with `--tie-break code` the two tie.
    let functions = |tie_break: &str| -> Result<Vec<(String, f64, f64)>> {
        let out = sfl(
            &[
                "report",
                "--granularity",
                "function",
                "-m",
                "ochiai",
                "--tie-break",
                tie_break,
                "--format",
                "json",
            ],
            dir,
        );
        check(out.status.success(), || show(&out))?;
        let v: Value = serde_json::from_slice(&out.stdout)?;
        Ok(v["rankings"][0]["units"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| {
                let name = u["function"].as_str().unwrap_or("").to_string();
                (
                    name,
                    u["score"].as_f64().unwrap_or(f64::NAN),
                    u["rank"].as_f64().unwrap_or(f64::NAN),
                )
            })
            .collect())
    };
    let by_evidence = functions("evidence")?;
    let top_line_score = v["rankings"][0]["units"][0]["score"].as_f64().unwrap();
    check(
        by_evidence.len() == 2
            && by_evidence[0].0 == "Scheduler::unblock_process"
            && by_evidence[0].2 == 1.0
            && by_evidence[1].2 == 2.0
            && by_evidence.iter().all(|f| f.1 == top_line_score),
        || format!("{by_evidence:?}, top line score {top_line_score}"),
    )?;
    let in_code_order = functions("code")?;
    check(in_code_order.iter().all(|f| f.2 == 1.5), || {
        format!("{in_code_order:?}")
    })
}

/// Saved spectra of 20 failing and 20 passing tests and 420 lines, one per (ef, ep) with
/// ef in 1..=20 and ep in 0..=20: every line its own entry, most at their own Ochiai score, so
/// the HT_Rank chain is a ranked list (Def. 28, no functions, no jumps) hundreds of groups
/// deep, with hitting times up to ~1e700 steps. The dense solver refused such chains (estimates
/// by default, "n/a" with `--walks 0`); solved exactly, HT_Rank equals the Standard Rank Score
/// there (Henderson et al.'s equivalence), and `--order ht` keeps Ochiai's order.
fn ht_exact_on_a_deep_ranking() -> Result {
    let source: String = (1..=420).map(|l| format!("// line {l}\n")).collect();
    let tmp = lib_crate("deep", "", &source)?;
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("target/sfl"))?;
    let tests: Vec<Value> = (0..40)
        .map(|t| serde_json::json!({"binary": "b", "name": format!("t{t}"), "outcome": if t < 20 { "failed" } else { "passed" }}))
        .collect();
    let (mut units, mut coverage) = (Vec::new(), Vec::new());
    for ef in 1..=20u32 {
        for ep in 0..=20u32 {
            units.push(serde_json::json!(["src/lib.rs", units.len() + 1]));
            // Failing tests 0..ef and passing tests 20..20 + ep, as little-endian hex bytes.
            let bits: u64 = ((1u64 << ef) - 1) | (((1u64 << ep) - 1) << 20);
            let bytes: Vec<String> = bits.to_le_bytes()[..5].iter().map(|b| format!("{b:02x}")).collect();
            coverage.push(bytes.concat());
        }
    }
    let spectra = serde_json::json!({
        "schema": "cargo-sfl-spectra/v1",
        "workspace_root": dir,
        "tests": tests,
        "units": units,
        "coverage": coverage,
    });
    let saved = dir.join("target/sfl/spectra.json");
    std::fs::write(&saved, serde_json::to_vec(&spectra)?)?;
    // The fault: ef 4, ep 18, far down the ranking.
    let line = 3 * 21 + 18 + 1;
    std::fs::write(
        dir.join("faults.toml"),
        format!("[[fault]]\nfile = \"src/lib.rs\"\nlines = [{line}]\n"),
    )?;
    let faults = dir.join("faults.toml");
    for walks in ["200", "0"] {
        let out = sfl(
            &[
                "eval",
                "--faults",
                faults.to_str().unwrap(),
                "--spectra",
                saved.to_str().unwrap(),
                "-m",
                "ochiai",
                "--walks",
                walks,
                "--format",
                "json",
            ],
            dir,
        );
        check(out.status.success(), || show(&out))?;
        let v: Value = serde_json::from_slice(&out.stdout)?;
        let r = &v["measures"][0];
        let standard = r["standard_rank"].as_f64().unwrap_or(0.0);
        check(
            r["ht"]["method"] == "exact" && standard > 100.0 && r["ht_rank"].as_f64() == Some(standard),
            || format!("--walks {walks}: {r:#}"),
        )?;
    }
    let report = sfl(&["report", "-m", "ochiai", "--order", "ht", "--format", "json"], dir);
    check(report.status.success(), || show(&report))?;
    let v: Value = serde_json::from_slice(&report.stdout)?;
    let ranking = &v["rankings"][0];
    // Hitting-time order is score order, deep entries included.
    let scores: Vec<f64> = ranking["units"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|u| u["score"].as_f64())
        .collect();
    check(
        ranking["ht_order"]["method"] == "exact" && scores.len() == 420 && scores.windows(2).all(|w| w[0] >= w[1]),
        || format!("scores in hitting-time order {scores:?}\n{}", show(&report)),
    )
}

/// The measures and format of [`eval_reproduces_hand_computed_ranks`]'s evaluation.
pub(crate) const HAND_COMPUTED: [&str; 8] = ["-m", "ochiai", "-m", "tarantula", "-m", "wong1", "--format", "json"];

/// `cargo sfl eval` on minmax reproduces rank scores worked out by hand (test code left out:
/// 17 executed lines of `minmax`). The fault (line 16) is the only line with ef 3, ep 0, so
/// Ochiai's EXAM is 1/17; the other views of the same spectra follow.
fn eval_reproduces_hand_computed_ranks() -> Result {
    let saved = saved("minmax")?;
    let dir = saved.dir();
    let spectra = saved.spectra();
    let faults = dir.join("faults.toml");
    let mut args = vec!["eval", "--faults", faults.to_str().unwrap()];
    args.extend(HAND_COMPUTED);
    args.extend(["--spectra", spectra.to_str().unwrap()]);
    let out = sfl(&args, dir);
    check(out.status.success(), || show(&out))?;
    let v: Value = serde_json::from_slice(&out.stdout)?;
    check(v["schema"] == "cargo-sfl-eval/v1" && v["lines"] == 17, || show(&out))?;
    let by = |m: &str| {
        v["measures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["measure"] == m)
            .cloned()
            .unwrap()
    };
    // Test code is left out: 17 executed lines of `minmax`. Ochiai and Tarantula put the fault
    // alone on top (Tarantula tied it with the failing tests' bodies while they were ranked).
    // Wong1 (ef) ties its entry with the 13 lines every test runs; by evidence (the default)
    // the signature and five closing braces go last, leaving 8 lines of one function that
    // compute or decide. The four conditions operate (`<`, `>`) and come first; the fault, an
    // assignment, ties with the other three: 4 + 4/2. (Here the operator prior costs: the
    // fault is the wrong variable, not a wrong operator.)
    for (m, rank) in [("ochiai", 0.5), ("tarantula", 0.5), ("wong1", 6.0)] {
        let r = by(m);
        check(r["standard_rank"] == rank, || format!("{m}: {r:#}"))?;
        check(r["ht_rank"].is_number() && r["ht"]["method"] == "exact", || {
            format!("{m}: {r:#}")
        })?;
    }
    // The panic-stack baseline: every failing test panics in the test helper `check` (test
    // code, not ranked), so no backtrace points into `minmax`: all 17 lines tie, 0 + 17/2.
    let baseline = by("panic-stack (baseline)");
    check(baseline["standard_rank"] == 8.5, || format!("{baseline:#}"))?;
    let o = by("ochiai");
    check(
        (o["exam"].as_f64().unwrap() - 1.0 / 17.0).abs() < 1e-12 && o["top"]["1"] == true,
        || format!("{o:#}"),
    )?;
    check(
        by("wong1")["top"]["5"] == false && by("wong1")["top"]["10"] == true,
        || format!("{:#}", by("wong1")),
    )?;
    // Entries: the 17 lines form 5 report entries: the 13 lines every test runs (ef 3, ep 2),
    // the fault (3, 0), lines 13 and 19 (1, 1 each, run by different tests) and line 10 (run
    // only by a passing test, its own entry at the bottom). Ochiai and Tarantula: the fault's
    // entry alone on top, 0 + 1/2, top-1. Wong1 ties it with the 13 lines' entry: 0 + 2/2 = 1;
    // expected position 0 + (2 + 1)/(1 + 1) = 1.5, so top-3 but not top-1.
    for (m, rank, top1) in [("ochiai", 0.5, true), ("tarantula", 0.5, true), ("wong1", 1.0, false)] {
        let r = by(m);
        check(
            r["entry_rank"] == rank && r["entry_top"]["1"] == top1 && r["entry_top"]["3"] == true,
            || format!("{m}: {r:#}"),
        )?;
    }

    with_test_code(dir, &args)?;
    function_granularity(dir, &args)?;
    ht_order(dir)?;
    unlocalisable(dir, &spectra)
}

/// With test code ranked again (36 executed lines), the failing tests' bodies (run by one
/// failing test each, by no passing test) tie with the fault for Tarantula.
fn with_test_code(dir: &Path, args: &[&str]) -> Result {
    // With test code ranked again, the failing tests' bodies (run by one failing test each,
    // by no passing test) tie with the fault for Tarantula: 36 executed lines; Tarantula puts 9
    // test lines beside the fault (0 + 10/2), Wong1 17 lines (the 14 above and `check`'s 3).
    // (Lines of one entry tie here, `--tie-break code`, as when these values were worked out.)
    let mut with_tests = args.to_vec();
    with_tests.extend(["--include-test-code", "--tie-break", "code"]);
    let wt: Value = serde_json::from_slice(&sfl(&with_tests, dir).stdout)?;
    let rank_of = |m: &str| {
        wt["measures"]
            .as_array()
            .and_then(|ms| ms.iter().find(|x| x["measure"] == m))
            .map(|x| x["standard_rank"].clone())
    };
    check(
        wt["lines"] == 36
            && rank_of("ochiai") == Some(0.5.into())
            && rank_of("tarantula") == Some(5.0.into())
            && rank_of("wong1") == Some(8.5.into()),
        || format!("{wt:#}"),
    )?;

    Ok(())
}

/// At function granularity the fault is function `minmax`, named and shown with its extent.
fn function_granularity(dir: &Path, args: &[&str]) -> Result {
    // Function granularity: the fault is function `minmax` (lines 6-22), the only function
    // left once test code is: 0 + 1/2 of 1 executed function.
    let mut f = args.to_vec();
    f.extend(["--granularity", "function"]);
    let fun: Value = serde_json::from_slice(&sfl(&f, dir).stdout)?;
    check(
        fun["lines"] == 1 && fun["measures"][0]["standard_rank"] == 0.5 && fun["measures"][0]["entry_rank"] == 0.5,
        || format!("{fun:#}"),
    )?;

    // The report at function granularity names the function and shows its extent.
    let human = sfl(&["report", "--granularity", "function", "-m", "ochiai"], dir);
    let text = String::from_utf8_lossy(&human.stdout);
    check(
        text.contains("Most suspicious functions by ochiai") && text.contains("src/lib.rs:6-22 | minmax"),
        || show(&human),
    )?;
    let json = sfl(&["report", "--granularity", "function", "--format", "json"], dir);
    let json: Value = serde_json::from_slice(&json.stdout)?;
    let top = &json["rankings"][0]["units"][0];
    check(
        top["function"] == "minmax" && top["line"] == 6 && top["end_line"] == 22,
        || format!("{top:#}"),
    )?;

    Ok(())
}

/// `--order ht` lists entries by expected hitting time, earliest first.
fn ht_order(dir: &Path) -> Result {
    let ht = sfl(&["report", "--order", "ht", "--format", "json"], dir);
    let ht: Value = serde_json::from_slice(&ht.stdout)?;
    let times: Vec<f64> = ht["rankings"][0]["units"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["expected_hitting_time"].as_f64().unwrap())
        .collect();
    check(
        times.windows(2).all(|w| w[0] <= w[1]) && ht["rankings"][0]["units"][0]["line"] == 16,
        || format!("{times:?}"),
    )?;
    check(ht["rankings"][0]["ht_order"]["method"] == "exact", || {
        format!("{:#}", ht["rankings"][0]["ht_order"])
    })
}

/// A fault on a line no test runs is reported as unlocalisable, and alone gives exit 7.
fn unlocalisable(dir: &Path, saved: &Path) -> Result {
    let scratch = tempfile::tempdir()?;
    let omission = scratch.path().join("omission.toml");
    std::fs::write(&omission, "[[fault]]\nfile = \"src/lib.rs\"\nlines = [2]\n")?;
    let out3 = sfl(
        &[
            "eval",
            "--faults",
            omission.to_str().unwrap(),
            "--spectra",
            saved.to_str().unwrap(),
        ],
        dir,
    );
    check_exit(&out3, 7, &out3.stdout, &["UNLOCALISABLE"])?;

    // A fault that names no line of the workspace is an input error (exit 2), not an omission;
    // it is refused before any test would run (without --spectra too: in a copy of minmax of
    // its own, where a run that was not refused would do no harm).
    let unbuilt = copy_fixture("minmax");
    for (fault, says) in [
        (
            "file = \"src/lib.rs\"\nlines = [9999]",
            "line 9999 is past the end of src/lib.rs",
        ),
        (
            "file = \"src/nope.rs\"\nlines = [1]",
            "src/nope.rs does not exist in the workspace",
        ),
        (
            "file = \"/etc/passwd\"\nlines = [1]",
            "must be relative to the workspace root",
        ),
        (
            "file = \"../x.rs\"\nlines = [1]",
            "must be relative to the workspace root",
        ),
    ] {
        std::fs::write(&omission, format!("[[fault]]\n{fault}\n"))?;
        let with_saved = [
            "eval",
            "--faults",
            omission.to_str().unwrap(),
            "--spectra",
            saved.to_str().unwrap(),
        ];
        for (args, at) in [(&with_saved[..], dir), (&with_saved[..3], unbuilt.path())] {
            let out = sfl(args, at);
            check_exit(&out, 2, &out.stderr, &[says])?;
            check(!String::from_utf8_lossy(&out.stderr).contains("Running"), || show(&out))?;
        }
    }
    Ok(())
}
