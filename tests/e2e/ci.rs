//! What CI relies on: the GitHub Action's steps (action.yml) on a real repository, the
//! `--diff-base`/`--only-changed` filter and the `--fail-on` gate, and terminal output (`-q`
//! for logs, `--color` for ANSI codes, `-v` for progress).

use std::path::Path;
use std::process::Command;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, check_exit, copy_fixture, edit_file, lib_crate, root, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("ci::action_steps", ci_action_steps),
        Trial::test("terminal::quiet_and_color", terminal_quiet_and_color),
        Trial::test(
            "report::when_the_top_functions_last_changed",
            when_the_top_functions_last_changed,
        ),
    ]
}

/// The `run: |` script of the step named `name` in `file` (a workflow or action.yml).
fn step_script(file: &Path, name: &str) -> Result<String> {
    let text = std::fs::read_to_string(file)?;
    let mut lines = text.lines().skip_while(|l| l.trim() != format!("- name: {name}"));
    lines
        .next()
        .ok_or_else(|| format!("no step {name:?} in {}", file.display()))?;
    let mut lines = lines.skip_while(|l| l.trim() != "run: |");
    let run = lines.next().ok_or("the step has no `run: |` block")?;
    let indent = run.len() - run.trim_start().len() + 2;
    let script: Vec<&str> = lines
        .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() >= indent)
        .map(|l| l.get(indent..).unwrap_or(""))
        .collect();
    Ok(script.join("\n"))
}

/// Runs git in `dir` as a fixed user, so commits work without a global git config.
fn git(dir: &Path, args: &[&str]) -> Result {
    let out = Command::new("git")
        .args(["-c", "user.name=sfl", "-c", "user.email=sfl@example.com"])
        .args(args)
        .current_dir(dir)
        .output()?;
    check(out.status.success(), || show(&out))
}

/// In a git checkout the report says under each function when it last changed (`git blame`):
/// the commit that added minmax (and `explain` says it of a line), then, with a line of it
/// edited, that it has uncommitted changes; outside git it says nothing of it (the snapshots).
fn when_the_top_functions_last_changed() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    git(dir, &["init", "-q"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "minmax: least and most of three"])?;
    let heading_then_change = |out: &std::process::Output| -> Option<String> {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("#1  minmax  src/lib.rs:"));
        lines.next()?;
        lines.next().map(|l| l.trim().to_string())
    };
    let out = sfl(&["--color", "never"], dir);
    check_exit(&out, 0, &out.stdout, &["#1  minmax"])?;
    let change = heading_then_change(&out).unwrap_or_default();
    // Its age depends on how long the build took: "just now", "1 minute ago".
    let committed = |l: &str| l.starts_with("last changed ") && l.ends_with(" \"minmax: least and most of three\"");
    check(committed(&change), || format!("{change:?}\n{}", show(&out)))?;
    let explained = sfl(&["explain", "src/lib.rs:16"], dir);
    let said = String::from_utf8_lossy(&explained.stdout).into_owned();
    check(said.lines().any(|l| committed(l.trim())), || show(&explained))?;
    edit_file(&dir.join("src/lib.rs"), "// FAULT (u3)", "// FAULT (u3, edited)")?;
    let out = sfl(&["--color", "never"], dir);
    check_exit(&out, 0, &out.stdout, &["#1  minmax"])?;
    let change = heading_then_change(&out).unwrap_or_default();
    check(change.starts_with("changed since the last commit"), || {
        format!("{change:?}\n{}", show(&out))
    })
}

/// Runs the step `name` of action.yml in `dir` as the runner would: bash, the step's inputs in
/// its environment, `GITHUB_OUTPUT` a file, cargo-sfl on the PATH (so its install is skipped).
fn action_step(dir: &Path, name: &str, env: &[(&str, &str)]) -> Result<std::process::Output> {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_cargo-sfl"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )?;
    let mut cmd = Command::new("bash");
    cmd.args([
        "-e",
        "-o",
        "pipefail",
        "-c",
        &step_script(&root().join("action.yml"), name)?,
    ])
    .env("PATH", path)
    .env("GITHUB_OUTPUT", dir.join("github-output"))
    .env("GITHUB_ACTION_PATH", root())
    .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Ok(cmd.output()?)
}

/// action.yml's steps on a fixture repository: commit a correct minmax, introduce the fault as
/// the change under test, run the steps with the diff base `HEAD`, and check what they leave for
/// the upload and comment steps and how the job ends (with and without `fail-on`); with the
/// fault fixed the job passes and reports nothing. Then `--only-changed` and `--fail-on` by hand.
fn ci_action_steps() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let lib = dir.join("src/lib.rs");
    let faulty = std::fs::read_to_string(&lib)?;
    let fixed = faulty.replace("most = in2; // FAULT", "least = in2; // FIXED");
    check(fixed != faulty, || "fixture changed: no FAULT marker".into())?;
    std::fs::write(&lib, &fixed)?;
    std::fs::write(dir.join(".gitignore"), "/target\n")?;
    git(dir, &["init", "-q"])?;
    git(dir, &["add", "-A"])?;
    git(dir, &["commit", "-q", "-m", "correct minmax"])?;
    std::fs::write(&lib, &faulty)?;

    let install = action_step(dir, "Install cargo-sfl", &[])?;
    check(install.status.success(), || show(&install))?;
    let inputs = [("SFL_BASE", "HEAD"), ("SFL_TOP", "10"), ("SFL_ARGS", "")];
    let out = action_step(dir, "Run the tests and localise", &inputs)?;
    check(out.status.success(), || show(&out))?;
    let outputs = std::fs::read_to_string(dir.join("github-output"))?;
    check(
        outputs.contains("failed=true") && outputs.contains("sarif=sfl.sarif"),
        || outputs.clone(),
    )?;

    let sarif: Value = serde_json::from_slice(&std::fs::read(dir.join("sfl.sarif"))?)?;
    let top = &sarif["runs"][0]["results"][0];
    check(
        top["locations"][0]["physicalLocation"]["region"]["startLine"] == 16 && top["properties"]["changed"] == true,
        || format!("{top:#}"),
    )?;
    let report: Value = serde_json::from_slice(&std::fs::read(dir.join("sfl.json"))?)?;
    check(
        report["diff_base"] == "HEAD" && report["rankings"][0]["changed_in_top"] == 1,
        || format!("{:#}", report["rankings"][0]["changed_in_top"]),
    )?;
    let md = std::fs::read_to_string(dir.join("sfl.md"))?;
    check(
        md.contains(" changed ") && md.contains("1 of the 1 line shown changed since HEAD"),
        || md.clone(),
    )?;
    // The job fails: always without a threshold; with one, only when a changed line reaches it
    // (thresholds below and above the changed line's score, in the default measure's units).
    let score = report["rankings"][0]["units"][0]["score"].as_f64().unwrap_or(f64::NAN);
    let (below, above) = (format!("{}", score * 0.9), format!("{}", score * 1.5));
    for (fail_on, code) in [("", 1), (below.as_str(), 1), (above.as_str(), 0)] {
        let end = action_step(dir, "Fail the job", &[("SFL_BASE", "HEAD"), ("SFL_FAIL_ON", fail_on)])?;
        check(end.status.code() == Some(code), || {
            format!("fail-on {fail_on:?}: {}", show(&end))
        })?;
    }

    // Only the changed line is ranked; it reaches --fail-on below its score (exit 6).
    let only = sfl(
        &["report", "--diff-base", "HEAD", "--only-changed", "--format", "json"],
        dir,
    );
    let v: Value = serde_json::from_slice(&only.stdout)?;
    check(v["rankings"][0]["units"].as_array().unwrap().len() == 1, || show(&only))?;
    let gate = sfl(
        &["report", "--diff-base", "HEAD", "--only-changed", "--fail-on", &below],
        dir,
    );
    check_exit(&gate, 6, &gate.stderr, &["src/lib.rs:16"])?;
    // A revision git does not know is a usage error.
    let bad = sfl(&["report", "--diff-base", "no-such-rev"], dir);
    check(bad.status.code() == Some(2), || show(&bad))?;

    // Spectra saved on one run are reused by the next (as on a pull request of the commit
    // whose push saved them): only the failing tests run again.
    // Outside the checkout, as the runner's temporary directory is.
    let cache = tempfile::tempdir()?;
    let spectra = cache.path().join("cargo-sfl/spectra.json");
    let spectra = spectra.to_str().unwrap();
    let with_spectra = [inputs[0], inputs[1], inputs[2], ("SFL_SPECTRA", spectra)];
    // What the steps wrote is not in a fresh checkout.
    let fresh = || {
        for f in ["sfl.sarif", "sfl.json", "sfl.md", "github-output"] {
            let _ = std::fs::remove_file(dir.join(f));
        }
    };
    fresh();
    let saved = action_step(dir, "Run the tests and localise", &with_spectra)?;
    check(saved.status.success() && Path::new(spectra).is_file(), || show(&saved))?;
    fresh();
    let reused = action_step(dir, "Run the tests and localise", &with_spectra)?;
    check(
        reused.status.success() && String::from_utf8_lossy(&reused.stderr).contains("Selected 3 of 5 tests to run"),
        || show(&reused),
    )?;

    // Fixed: every test passes, the job passes and reports nothing.
    std::fs::write(&lib, &fixed)?;
    std::fs::remove_file(dir.join("github-output"))?;
    let green = action_step(dir, "Run the tests and localise", &inputs)?;
    check(green.status.success(), || show(&green))?;
    let outputs = std::fs::read_to_string(dir.join("github-output"))?;
    check(outputs.trim() == "failed=false", || outputs.clone())
}

/// `-q` leaves only the report (stderr empty); `--color always|never` controls ANSI codes.
fn terminal_quiet_and_color() -> Result {
    let tmp = copy_fixture("minmax");
    let quiet = sfl(&["-q", "--top", "1"], tmp.path());
    check(quiet.status.success() && quiet.stderr.is_empty(), || show(&quiet))?;
    let normal = sfl(&["report", "--top", "1"], tmp.path());
    check(!normal.stdout.contains(&0x1b), || show(&normal))?;
    let always = sfl(&["report", "--top", "1", "--color", "always"], tmp.path());
    check(always.stdout.contains(&0x1b), || show(&always))?;
    let never = sfl(&["report", "--top", "1", "--color", "never"], tmp.path());
    check(!never.stdout.contains(&0x1b) && never.stdout == normal.stdout, || {
        show(&never)
    })?;
    // Every test runs again (the passing ones would be reused), so both kinds of line show.
    let verbose = sfl(&["-v", "--rerun", "--top", "1"], tmp.path());
    let err = String::from_utf8_lossy(&verbose.stderr);
    check(
        err.contains("PASSED") && err.contains("FAILED") && err.contains("Finished"),
        || show(&verbose),
    )?;
    // A test that colours its own failure message (assert_cmd, pretty_assertions): no report
    // carries its terminal codes, whatever --color says.
    let colourful = lib_crate(
        "colourful",
        "",
        "pub fn double(x: u32) -> u32 {\n    x * 3\n}\n\n#[test]\nfn doubles() {\n             let got = double(2);\n    if got != 4 {\n        panic!(\"\\x1b[31mgot {got}\\x1b[0m, expected 4\");\n    }\n}\n",
    )?;
    for args in [&["--color", "never"][..], &["--format", "json"][..]] {
        let out = sfl(args, colourful.path());
        check(out.status.code() == Some(0), || show(&out))?;
        check(!out.stdout.contains(&0x1b), || show(&out))?;
        check(
            String::from_utf8_lossy(&out.stdout).contains("got 6, expected 4"),
            || show(&out),
        )?;
    }
    Ok(())
}
