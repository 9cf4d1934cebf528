//! `--mutate` on the `mutate` fixture: coverage ranks the `else` branch above the fault, the
//! mutation analysis re-orders them, mutants the compiler rejects are dropped, a crate that
//! denies warnings still builds its mutants, and the user's sources are left as they were.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "mutate::fault_moves_above_the_branch_coverage_prefers",
        fault_moves_up,
    )]
}

/// The rank of the entry holding `line` in the first ranking of a JSON report.
fn entry_rank(report: &Value, line: u64) -> f64 {
    report["rankings"][0]["units"]
        .as_array()
        .and_then(|u| {
            u.iter().find(|x| {
                x["line"] == line
                    || x["members"]
                        .as_array()
                        .is_some_and(|m| m.iter().any(|m| m["line"] == line))
            })
        })
        .and_then(|x| x["rank"].as_f64())
        .unwrap_or(f64::INFINITY)
}

/// The `mutation.lines` record of `line`.
fn mutated_line(report: &Value, line: u64) -> Value {
    report["mutation"]["lines"]
        .as_array()
        .and_then(|l| l.iter().find(|x| x["line"] == line))
        .cloned()
        .unwrap_or(Value::Null)
}

fn fault_moves_up() -> Result {
    let tmp = copy_fixture("mutate");
    let dir = tmp.path();
    let source = std::fs::read(dir.join("src/lib.rs"))?;
    let plain = sfl(&["--format", "json", "-m", "ochiai"], dir);
    check(plain.status.success(), || show(&plain))?;
    let plain: Value = serde_json::from_slice(&plain.stdout)?;
    check(entry_rank(&plain, 7) > entry_rank(&plain, 10), || format!("{plain:#}"))?;

    let out = sfl(&["--format", "json", "-m", "ochiai", "--mutate"], dir);
    check(out.status.success(), || show(&out))?;
    let mutated: Value = serde_json::from_slice(&out.stdout)?;
    check(
        entry_rank(&mutated, 7) == 1.0 && entry_rank(&mutated, 10) == 2.0,
        || format!("{mutated:#}"),
    )?;
    // `n > 10` → `n >= 10` makes the failing test pass and breaks no passing test.
    let fault = mutated_line(&mutated, 7);
    check(fault["score"] == 1.0 && fault["viable"] == fault["mutants"], || {
        format!("{mutated:#}")
    })?;
    // `String::from(name) + ":"`: `-` and `*` are not defined on String, so neither compiled.
    let rejected = mutated_line(&mutated, 6);
    check(
        rejected["mutants"] == 2 && rejected["viable"] == 0 && rejected["score"].is_null(),
        || format!("{mutated:#}"),
    )?;
    check(mutated["mutation"]["builds"].as_u64().is_some_and(|b| b >= 2), || {
        format!("{mutated:#}")
    })?;
    check(String::from_utf8_lossy(&out.stderr).contains("Mutated"), || show(&out))?;
    check(std::fs::read(dir.join("src/lib.rs"))? == source, || {
        "the fixture's source changed".to_string()
    })
}
