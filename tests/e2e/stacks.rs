//! Panic backtraces as evidence, on the `panic` fixture's shared run: `one_element` panics
//! inside `median`, on the fault (line 11), while `three_elements` fails its own assertion.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::formats::{multitool, sarif_schema};
use crate::support::{
    Result, check, copy_fixture, eval_ochiai, lib_crate, report, sfl, sfl_command, show, standard_rank, test_named,
};

pub fn trials() -> Vec<Trial> {
    let mut trials = vec![
        Trial::test("stacks::panic_in_library_code", panic_in_library_code),
        Trial::test(
            "stacks::a_caught_panic_is_no_evidence_but_a_re_raised_one_is",
            a_caught_panic_is_no_evidence_but_a_re_raised_one_is,
        ),
        Trial::test(
            "stacks::a_members_frames_are_named_from_the_workspace_root",
            a_members_frames_are_named_from_the_workspace_root,
        ),
        Trial::test(
            "stacks::a_stripped_or_split_profile_keeps_its_frames",
            a_stripped_or_split_profile_keeps_its_frames,
        ),
    ];
    // A libtest crate, a proc-macro crate's tests, a `harness = false` target.
    for fixture in ["panic", "proc-macro", "harness-false"] {
        trials.push(Trial::test(
            format!("stacks::recorded_stacks_match_printed_ones::{fixture}"),
            move || recorded_stacks_match_printed_ones(fixture),
        ));
    }
    trials
}

/// In a workspace, cargo compiles a member from the workspace's root, so the panic message
/// names `core/src/lib.rs` relative to it, while an integration test of `app` runs in `app/`:
/// the panic site was taken for `app/core/src/lib.rs` (no such file), and put before the
/// frame that already showed it as if it were inlined code (a helper's workspace).
fn a_members_frames_are_named_from_the_workspace_root() -> Result {
    let tmp = copy_fixture("workspace");
    let dir = tmp.path();
    let lib = dir.join("core/src/lib.rs");
    let text = std::fs::read_to_string(&lib)?;
    std::fs::write(
        &lib,
        format!("{text}\n/// The element at `i`.\npub fn nth(xs: &[i64], i: usize) -> i64 {{\n    xs[i]\n}}\n"),
    )?;
    let line = text.lines().count() as u64 + 4;
    std::fs::write(
        dir.join("app/tests/nth.rs"),
        "#[test]\nfn past_the_end() {\n    assert_eq!(fixture_ws_core::nth(&[1, 2], 2), 0);\n}\n",
    )?;
    let cargo = std::fs::read_to_string(dir.join("app/Cargo.toml"))?;
    check(cargo.contains("fixture-ws-core"), || cargo.clone())?;
    let out = sfl(&["--workspace", "--no-doctests", "--format", "json"], dir);
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let test = test_named(&report, "past_the_end");
    let files: Vec<&str> = test["stack"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["file"].as_str())
        .collect();
    check(
        test["stack"][0]["file"] == "core/src/lib.rs"
            && test["stack"][0]["line"] == line
            && files.iter().filter(|f| **f == "core/src/lib.rs").count() == 1
            && files.contains(&"app/tests/nth.rs"),
        || format!("{test:#}"),
    )
}

/// A profile that strips the binaries or splits their debug info (`strip = true`,
/// `split-debuginfo = "unpacked"`): the stacks std's backtrace reads from them had no frame, or
/// lost the innermost one, and the ranking lost their evidence without a word.
fn a_stripped_or_split_profile_keeps_its_frames() -> Result {
    for profile in ["strip = true", "split-debuginfo = \"unpacked\""] {
        let tmp = copy_fixture("panic");
        let dir = tmp.path();
        let manifest = dir.join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)?;
        std::fs::write(&manifest, format!("{text}\n[profile.dev]\n{profile}\n"))?;
        let out = sfl(&["--format", "json"], dir);
        check(out.status.success(), || show(&out))?;
        let report: Value = serde_json::from_slice(&out.stdout)?;
        let test = test_named(&report, "tests::one_element");
        check(
            test["stack"][0]["file"] == "src/lib.rs"
                && test["stack"][0]["line"] == 11
                && test["stack"][0]["function"]
                    .as_str()
                    .is_some_and(|f| f.ends_with("median")),
            || format!("{profile}: {test:#}"),
        )?;
    }
    Ok(())
}

/// The stacks cargo sfl's runtime records and cargo sfl names are the frames the standard
/// library prints with `RUST_BACKTRACE=1` (which, set by the user, makes cargo sfl read those),
/// test by test; the recorded ones were recorded (their files are kept with the profiles).
fn recorded_stacks_match_printed_ones(fixture: &str) -> Result {
    let tmp = copy_fixture(fixture);
    let dir = tmp.path();
    let stacks = |out: &std::process::Output| -> Result<Vec<(String, Value)>> {
        check(out.status.success(), || show(out))?;
        let report: Value = serde_json::from_slice(&out.stdout)?;
        let tests = report["tests"].as_array().cloned().unwrap_or_default();
        Ok(tests
            .iter()
            .map(|t| (format!("{} {}", t["binary"], t["name"]), t["stack"].clone()))
            .collect())
    };
    let recorded = stacks(&sfl(&["--format", "json", "--keep-profiles"], dir))?;
    let files = std::fs::read_dir(dir.join("target/sfl/profiles"))?
        .flatten()
        .filter(|e| e.path().join("sfl.stacks").exists())
        .count();
    let printed = stacks(
        &sfl_command(dir)
            .args(["--rerun", "--format", "json"])
            .env("RUST_BACKTRACE", "1")
            .output()?,
    )?;
    let with_frames = recorded
        .iter()
        .filter(|(_, s)| s.as_array().is_some_and(|a| !a.is_empty()))
        .count();
    check(with_frames >= 2 && files >= with_frames, || {
        format!("{with_frames} tests with frames, {files} recorded stacks: {recorded:#?}")
    })?;
    check(recorded == printed, || {
        format!("recorded {recorded:#?}\nprinted {printed:#?}")
    })
}

/// The backtrace is saved and reported; the panic-stack baseline points at the fault; by
/// evidence the fault leads its entry; SARIF carries the backtrace as a code flow.
fn panic_in_library_code() -> Result {
    let dir = saved("panic")?.dir();
    let out = report(&["--format", "json", "-m", "ochiai"], dir);
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let test = |name: &str| test_named(&report, name);
    let inner = &test("tests::one_element")["stack"][0];
    check(
        inner["file"] == "src/lib.rs" && inner["line"] == 11 && inner["function"] == "fixture_panic::median",
        || format!("{:#}", test("tests::one_element")),
    )?;

    // Ochiai's top entry is lines 9-11 (run by both failing tests and two passing ones). In
    // code order the fault ties with its two lines: 0 + 3/2. By evidence the panicking line
    // leads: 0 + 1/2. The baseline (first frame outside test code) points at it too.
    let (code, evidence) = (eval_ochiai(dir, "code")?, eval_ochiai(dir, "evidence")?);
    let rank = standard_rank;
    check(
        rank(&code, "ochiai") == 1.5
            && rank(&evidence, "ochiai") == 0.5
            && rank(&code, "panic-stack (baseline)") == 0.5,
        || format!("code {code:#}\nevidence {evidence:#}"),
    )?;

    // stack-ochiai puts the panicking line first, alone, marked as such; the human report says
    // why. The default (combined) puts it first too, by its weights.
    let stack = sfl(
        &["report", "--format", "json", "-m", "stack-ochiai", "-m", "combined"],
        dir,
    );
    check(stack.status.success(), || show(&stack))?;
    let report: Value = serde_json::from_slice(&stack.stdout)?;
    let first = &report["rankings"][0]["units"][0];
    check(
        report["rankings"][0]["measure"] == "stack-ochiai"
            && first["line"] == 11
            && first["panicked"] == true
            && first["rank"] == 1.0
            && first["members"].is_null(),
        || format!("{:#}", report["rankings"][0]),
    )?;
    let combined = &report["rankings"][1];
    check(
        combined["measure"] == "combined" && combined["units"][0]["line"] == 11 && combined["units"][0]["rank"] == 1.0,
        || format!("{combined:#}"),
    )?;
    let human = sfl(&["report", "--color", "never", "-m", "stack-ochiai"], dir);
    let text = String::from_utf8_lossy(&human.stdout);
    check(
        text.contains(" panicked ") && text.contains("(panicked: a failing test panicked on this line's own operation"),
        || text.to_string(),
    )?;

    // SARIF: the fault's entry carries one_element's backtrace, outermost frame first.
    let sarif = sfl(&["report", "--format", "sarif", "-m", "ochiai"], dir);
    check(sarif.status.success(), || show(&sarif))?;
    let log: Value = serde_json::from_slice(&sarif.stdout)?;
    let flow = &log["runs"][0]["results"][0]["codeFlows"][0];
    let steps = flow["threadFlows"][0]["locations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let line = |v: &Value| v["location"]["physicalLocation"]["region"]["startLine"].clone();
    check(
        steps.len() == 2 && line(&steps[0]) == 28 && line(&steps[1]) == 11,
        || format!("{flow:#}"),
    )?;
    let errors: Vec<String> = sarif_schema()?.iter_errors(&log).map(|e| e.to_string()).collect();
    check(errors.is_empty(), || errors.join("\n"))?;
    multitool(tempfile::tempdir()?.path(), "code-flows", &sarif.stdout)
}

/// Two tests panic twice on their own thread. One catches a panic it expects (`checked(-1)`)
/// and then fails an assertion: that first stack is not where it failed, and is no evidence.
/// The other runs a task as a current-thread runtime does (on the test's thread, its panic
/// caught) and unwraps the join, whose error quotes the task's panic: that first stack is
/// where it failed.
fn a_caught_panic_is_no_evidence_but_a_re_raised_one_is() -> Result {
    let tmp = lib_crate(
        "twice",
        "",
        r#"pub fn checked(x: i32) -> u32 {
    if x < 0 {
        panic!("negative input");
    }
    x as u32
}

pub fn halve(n: usize) -> u32 {
    let v = [0u32, 2, 4, 6];
    v[n] / 2
}

#[derive(Debug)]
pub struct JoinError(String);

/// Runs `task` on this thread as a current-thread executor would, its panic caught.
pub fn run_task(task: impl FnOnce() -> u32 + std::panic::UnwindSafe) -> Result<u32, JoinError> {
    std::panic::catch_unwind(task).map_err(|p| {
        JoinError(p.downcast_ref::<String>().cloned().unwrap_or_default())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caught() {
        assert!(std::panic::catch_unwind(|| checked(-1)).is_err());
        assert_eq!(halve(1), 2);
    }

    #[test]
    fn re_raised() {
        assert_eq!(run_task(|| halve(9)).unwrap(), 1);
    }

    #[test]
    fn fine() {
        assert_eq!(checked(4), 4);
        assert_eq!(run_task(|| halve(2)).unwrap(), 2);
    }
}
"#,
    )?;
    let out = sfl(&["--format", "json"], tmp.path());
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let stack = |name: &str| -> Vec<String> {
        report["tests"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .and_then(|t| t["stack"].as_array())
            .map(|frames| {
                frames
                    .iter()
                    .map(|f| f["function"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let (caught, re_raised) = (stack("tests::caught"), stack("tests::re_raised"));
    check(caught.is_empty(), || {
        format!("the caught panic's stack was kept: {caught:?}")
    })?;
    check(re_raised.first().is_some_and(|f| f == "twice::halve"), || {
        format!("the re-raised panic's stack: {re_raised:?}\n{}", show(&out))
    })
}
