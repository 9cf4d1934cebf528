//! Panic backtraces as evidence, on the `panic` fixture's shared run: `one_element` panics
//! inside `median`, on the fault (line 11), while `three_elements` fails its own assertion.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::formats::{multitool, sarif_schema};
use crate::support::{Result, check, eval_ochiai, report, sfl, show, standard_rank};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test("stacks::panic_in_library_code", panic_in_library_code)]
}

/// The backtrace is saved and reported; the panic-stack baseline points at the fault; by
/// evidence the fault leads its entry; SARIF carries the backtrace as a code flow.
fn panic_in_library_code() -> Result {
    let dir = saved("panic")?.dir();
    let out = report(&["--format", "json", "-m", "ochiai"], dir);
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let test = |name: &str| {
        report["tests"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == name))
            .cloned()
            .unwrap_or_default()
    };
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
