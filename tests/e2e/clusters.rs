//! Independent failures on the `two-bugs` fixture's shared run: `--clusters` ranks each cluster
//! of failing tests against the passing tests, interleaves the rankings, and says which tests
//! fell together.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::support::{Result, check, report, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test("clusters::two_bugs_ranked_apart", two_bugs_ranked_apart)]
}

/// The entry rank of `line` in the first ranking of a JSON report.
fn rank_of(report: &Value, line: u64) -> f64 {
    report["rankings"][0]["units"]
        .as_array()
        .and_then(|u| u.iter().find(|x| x["line"] == line))
        .and_then(|x| x["rank"].as_f64())
        .unwrap_or(f64::INFINITY)
}

/// Pooled, Ochiai puts `middle`'s fault (line 13, one failing test of four) below `fahrenheit`'s
/// guard (line 5, run by three failing tests and one passing test). Ranked per cluster, each
/// bug's fault is at the top of its own ranking, so both lead the interleaved one.
fn two_bugs_ranked_apart() -> Result {
    let dir = saved("two-bugs")?.dir();
    let pooled = report(&["--format", "json", "-m", "ochiai"], dir);
    check(pooled.status.success(), || show(&pooled))?;
    let pooled: Value = serde_json::from_slice(&pooled.stdout)?;
    check(rank_of(&pooled, 13) > rank_of(&pooled, 5), || format!("{pooled:#}"))?;

    let out = sfl(&["report", "--clusters", "--format", "json", "-m", "ochiai"], dir);
    check(out.status.success(), || show(&out))?;
    let clustered: Value = serde_json::from_slice(&out.stdout)?;
    let (first, second, guard) = (rank_of(&clustered, 8), rank_of(&clustered, 13), rank_of(&clustered, 5));
    check(first == 1.0 && second <= 2.5 && guard > second, || {
        format!("{clustered:#}")
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("the failures look independent: 2 clusters")
            && stderr.contains("cluster 2: fixture-two-bugs tests::one_element"),
        || show(&out),
    )
}
