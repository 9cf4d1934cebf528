//! Saved spectra rank the same wherever they are read: `merge` and `report --spectra` in the
//! workspace, in an empty directory and in another crate give the run's own ranking (test
//! code, line evidence and function names are saved with the spectra), and show code only from
//! sources that match the recorded digest.

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, copy_fixture, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "anywhere::saved_spectra_rank_the_same_in_any_directory",
            saved_spectra_rank_the_same_in_any_directory,
        ),
        Trial::test(
            "anywhere::a_manifest_path_through_a_link_ranks_as_the_real_one",
            through_a_link,
        ),
    ]
}

/// `--manifest-path` through a symbolic link to the workspace: the compiler records the
/// resolved path, and the run still recognises its own files (it once ranked nothing).
fn through_a_link() -> Result {
    let tmp = copy_fixture("minmax");
    let links = tempfile::tempdir()?;
    let link = links.path().join("linked");
    std::os::unix::fs::symlink(tmp.path(), &link)?;
    let out = sfl(
        &[
            "--format",
            "json",
            "--manifest-path",
            link.join("Cargo.toml").to_str().ok_or("path")?,
        ],
        links.path(),
    );
    check(out.status.success(), || show(&out))?;
    let linked = placeless(&out.stdout)?;
    let direct = sfl(&["report", "--format", "json"], tmp.path());
    check(direct.status.success(), || show(&direct))?;
    let direct = placeless(&direct.stdout)?;
    check(linked["rankings"] == direct["rankings"], || {
        format!("through the link:\n{linked:#}\ndirect:\n{direct:#}")
    })?;
    check(linked["rankings"][0]["units"][0]["line"] == 16, || {
        format!("{linked:#}")
    })
}

/// A JSON report without what depends on where and when it was made: the workspace root and
/// the tests' durations.
fn placeless(json: &[u8]) -> Result<Value> {
    let mut v: Value = serde_json::from_slice(json)?;
    let o = v.as_object_mut().ok_or("not a JSON object")?;
    o.remove("workspace_root");
    for t in o.get_mut("tests").and_then(Value::as_array_mut).into_iter().flatten() {
        t.as_object_mut().unwrap().remove("duration_ms");
    }
    Ok(v)
}

/// Every `(file, line)` an entry of any ranking of `report` holds.
fn ranked_lines(report: &Value) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for r in report["rankings"].as_array().into_iter().flatten() {
        for e in r["entries"].as_array().into_iter().flatten() {
            let members = e["members"].as_array().cloned().unwrap_or_default();
            for u in std::iter::once(e).chain(&members) {
                if let (Some(f), Some(l)) = (u["file"].as_str(), u["line"].as_u64()) {
                    out.push((f.to_string(), l));
                }
            }
        }
    }
    out
}

fn saved_spectra_rank_the_same_in_any_directory() -> Result {
    let tmp = copy_fixture("minmax");
    let ws = tmp.path();
    let run = sfl(&["--format", "json"], ws);
    check(run.status.success(), || show(&run))?;
    // The file travels: read from outside every workspace below.
    let elsewhere = tempfile::tempdir()?;
    let file = elsewhere.path().join("spectra.json");
    std::fs::copy(ws.join("target/sfl/spectra.json"), &file)?;
    let file = file.to_str().unwrap();
    // And so do shards, for a CI merge job.
    let mut shards = Vec::new();
    for k in 1..=2 {
        let shard = elsewhere.path().join(format!("shard{k}.json"));
        let out = sfl(
            &[
                "--partition",
                &format!("count:{k}/2"),
                "--save-spectra",
                shard.to_str().unwrap(),
            ],
            ws,
        );
        check(shard.exists(), || show(&out))?;
        shards.push(shard.to_str().unwrap().to_string());
    }
    let saved: Value = serde_json::from_slice(&std::fs::read(file)?)?;
    check(
        saved["schema"] == "cargo-sfl-spectra/v3" && saved["facts"].is_object(),
        || format!("no source facts saved: {}", saved["schema"]),
    )?;

    let lib = std::fs::read_to_string(ws.join("src/lib.rs"))?;
    let tests_from = lib
        .lines()
        .position(|l| l.trim() == "#[cfg(test)]")
        .ok_or("no test module")? as u64
        + 1;
    let empty = tempfile::tempdir()?;
    let other = copy_fixture("panic");
    let expected = placeless(&run.stdout)?;
    let mut by_function: Option<Value> = None;
    for (place, dir) in [
        ("the workspace", ws),
        ("an empty directory", empty.path()),
        ("another crate", other.path()),
    ] {
        let here_is_home = dir == ws;
        for args in [
            vec!["merge", &shards[0], &shards[1], "--format", "json"],
            vec!["report", "--spectra", file, "--format", "json"],
        ] {
            let out = sfl(&args, dir);
            check(out.status.success(), || format!("{args:?} in {place}: {}", show(&out)))?;
            let got = placeless(&out.stdout)?;
            check(got == expected, || {
                format!("{args:?} in {place} ranks differently from the run:\n{got:#}\nvs\n{expected:#}")
            })?;
            let test_code: Vec<_> = ranked_lines(&got)
                .into_iter()
                .filter(|(f, l)| f == "src/lib.rs" && *l >= tests_from)
                .collect();
            check(test_code.is_empty(), || {
                format!("{args:?} in {place} ranks test code: {test_code:?}")
            })?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            check(stderr.contains("code text is not shown") != here_is_home, || {
                format!("{args:?} in {place}: the note on code text: {stderr}")
            })?;
            check(!stderr.contains("older cargo sfl"), || {
                format!("{args:?} in {place}: {stderr}")
            })?;
        }
        // Function names are saved too.
        let out = sfl(
            &[
                "report",
                "--spectra",
                file,
                "--granularity",
                "function",
                "--format",
                "json",
            ],
            dir,
        );
        check(out.status.success(), || show(&out))?;
        let got = placeless(&out.stdout)?;
        check(got.to_string().contains("\"function\":\"minmax\""), || {
            format!("in {place}: {got}")
        })?;
        match &by_function {
            None => by_function = Some(got),
            Some(first) => check(&got == first, || format!("function ranking in {place} differs"))?,
        }
        // Code is shown only from the sources the spectra were recorded from.
        let human = sfl(&["report", "--spectra", file], dir);
        let text = String::from_utf8_lossy(&human.stdout);
        check(text.contains("most = in2; // FAULT") == here_is_home, || {
            format!("human report in {place}: {}", show(&human))
        })?;
        for theirs in std::fs::read_to_string(dir.join("src/lib.rs"))
            .unwrap_or_default()
            .lines()
        {
            let theirs = theirs.trim();
            check(here_is_home || theirs.len() < 12 || !text.contains(theirs), || {
                format!("human report in {place} shows the other crate's line {theirs:?}")
            })?;
        }
    }
    older_files_rank_as_before_with_a_note(ws, &saved)
}

/// A file saved before the facts (schema v2) still loads and ranks from the sources here, with
/// a note saying what it lacks.
fn older_files_rank_as_before_with_a_note(ws: &Path, saved: &Value) -> Result {
    let mut v2 = saved.clone();
    v2["schema"] = "cargo-sfl-spectra/v2".into();
    v2.as_object_mut().unwrap().remove("facts");
    let file = ws.join("v2.json");
    std::fs::write(&file, serde_json::to_vec(&v2)?)?;
    let out = sfl(&["report", "--spectra", file.to_str().unwrap(), "--format", "json"], ws);
    check(out.status.success(), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("older cargo sfl") && stderr.contains("may depend on the directory"),
        || show(&out),
    )?;
    check(!stderr.contains("code text is not shown"), || show(&out))
}
