//! Sharded runs: `--partition` shards of a workspace merge back into exactly the unsharded
//! matrix and report, and shards built from different sources are refused.

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, check_exit, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![Trial::test(
        "shard::merge_equals_unsharded",
        shards_merge_into_the_unsharded_matrix,
    )]
}

/// The saved spectra without what differs between runs (durations, the partition tag, and
/// the snapshot of the workspace that the next run selects tests by, which a merge drops).
fn normalized_spectra(path: &Path) -> Result<Value> {
    let mut v = without_durations(&std::fs::read(path)?)?;
    v.as_object_mut().unwrap().remove("partition");
    v.as_object_mut().unwrap().remove("snapshot");
    Ok(v)
}

/// A report or saved spectra without its tests' durations, which differ between runs.
fn without_durations(json: &[u8]) -> Result<Value> {
    let mut v: Value = serde_json::from_slice(json)?;
    for t in v["tests"].as_array_mut().unwrap() {
        t.as_object_mut().unwrap().remove("duration_ms");
    }
    Ok(v)
}

/// Where two JSON values first differ, as a path with both values (for a readable failure).
fn first_difference(a: &Value, b: &Value, at: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x
            .keys()
            .chain(y.keys())
            .find(|k| x.get(*k) != y.get(*k))
            .map(|k| {
                let null = Value::Null;
                let (u, v) = (x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null));
                first_difference(u, v, &format!("{at}.{k}"))
            })
            .unwrap_or_default(),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => (0..x.len())
            .find(|&i| x[i] != y[i])
            .map(|i| first_difference(&x[i], &y[i], &format!("{at}[{i}]")))
            .unwrap_or_default(),
        _ => format!("{at}: {a} vs {b}"),
    }
}

/// Three `count` shards and two `hash` shards of the workspace fixture merge into exactly the
/// unsharded matrix and report; shards of different sources are refused.
fn shards_merge_into_the_unsharded_matrix() -> Result {
    let tmp = copy_fixture("workspace");
    let dir = tmp.path();
    let full = sfl(&["--workspace", "--format", "json"], dir);
    check(full.status.success(), || show(&full))?;
    let whole = normalized_spectra(&dir.join("target/sfl/spectra.json"))?;
    for (kind, n) in [("count", 3), ("hash", 2)] {
        let mut files = Vec::new();
        for k in 1..=n {
            let file = dir.join(format!("{kind}{k}.json"));
            let part = format!("{kind}:{k}/{n}");
            let out = sfl(
                &[
                    "--workspace",
                    "--partition",
                    &part,
                    "--save-spectra",
                    file.to_str().unwrap(),
                ],
                dir,
            );
            // A shard may hold no failing test (exit 3) or no test at all (exit 4).
            check(matches!(out.status.code(), Some(0 | 3 | 4)), || show(&out))?;
            if file.exists() {
                files.push(file.to_str().unwrap().to_string());
            }
        }
        let merged_file = dir.join(format!("{kind}-merged.json"));
        let mut args = vec!["merge".to_string()];
        args.extend(files.iter().cloned());
        args.extend([
            "--save-spectra".into(),
            merged_file.to_str().unwrap().into(),
            "--format".into(),
            "json".into(),
        ]);
        let merged = sfl(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir);
        check(merged.status.success(), || show(&merged))?;
        let got = normalized_spectra(&merged_file)?;
        check(got == whole, || {
            format!(
                "{kind}: merged spectra differ from the unsharded run at {}",
                first_difference(&got, &whole, "$")
            )
        })?;
        check(
            without_durations(&merged.stdout)? == without_durations(&full.stdout)?,
            || format!("{kind}: merged report differs"),
        )?;
    }
    incomplete_or_foreign_shards(dir)
}

/// Shards that are not one complete partition are refused (naming the file at fault) unless
/// --allow-partial; an empty shard still saves its spectra; a shard built from changed sources
/// is refused. Uses the shard files of [`shards_merge_into_the_unsharded_matrix`].
fn incomplete_or_foreign_shards(dir: &Path) -> Result {
    let file = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let one_of_two = sfl(&["merge", &file("hash1.json")], dir);
    check_exit(
        &one_of_two,
        5,
        &one_of_two.stderr,
        &["shard 2 of hash:K/2 missing", "--allow-partial"],
    )?;
    let mixed = sfl(&["merge", &file("hash2.json"), &file("count1.json")], dir);
    check_exit(
        &mixed,
        5,
        &mixed.stderr,
        &["count1.json", "different kinds or sizes (hash:2/2 and count:1/3)"],
    )?;
    let twice = sfl(
        &[
            "merge",
            &file("count1.json"),
            &file("count2.json"),
            &file("count2.json"),
        ],
        dir,
    );
    check_exit(
        &twice,
        5,
        &twice.stderr,
        &["files 2 and 3 are the same shard (count:2/3)"],
    )?;
    let partial = sfl(
        &["merge", "--allow-partial", &file("count1.json"), &file("count3.json")],
        dir,
    );
    check(matches!(partial.status.code(), Some(0 | 3)), || show(&partial))?;
    check(
        String::from_utf8_lossy(&partial.stderr).contains("--allow-partial: shard 2 of count:K/3 missing"),
        || show(&partial),
    )?;

    // A shard whose share is empty still saves its spectra, so the set stays complete.
    let empty = dir.join("empty.json");
    let out = sfl(
        &[
            "--workspace",
            "--partition",
            "count:50/50",
            "--save-spectra",
            empty.to_str().unwrap(),
        ],
        dir,
    );
    check_exit(
        &out,
        4,
        &out.stderr,
        &["this partition's share holds no tests", "empty spectra were saved"],
    )?;
    check(empty.exists(), || show(&out))?;

    // A shard built from changed sources is refused.
    let lib = dir.join("core/src/lib.rs");
    let text = std::fs::read_to_string(&lib)?;
    std::fs::write(&lib, format!("{text}\n// changed\n"))?;
    let changed = dir.join("changed.json");
    let out = sfl(
        &[
            "--workspace",
            "--partition",
            "count:1/3",
            "--save-spectra",
            changed.to_str().unwrap(),
        ],
        dir,
    );
    check(changed.exists(), || show(&out))?;
    let bad = sfl(
        &[
            "merge",
            changed.to_str().unwrap(),
            dir.join("count2.json").to_str().unwrap(),
            dir.join("count3.json").to_str().unwrap(),
        ],
        dir,
    );
    check_exit(
        &bad,
        5,
        &bad.stderr,
        &[
            "count2.json: file 2 was built with different sources than file 1",
            "1 = ",
        ],
    )
}
