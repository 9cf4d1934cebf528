//! The developer's cargo configuration, as `cargo test` reads it: tests and doctests run
//! through the target runner, the build goes through the developer's rustc wrapper, `[env]` is
//! read from the directory cargo sfl runs in (a member's own `.cargo/config.toml`) and from
//! files outside the workspace, whose edits make the tests run again; a package ID URL given
//! to `-p` selects its package with its doctests; and a path dependency that is no workspace
//! member is said to be left uninstrumented.

use std::path::Path;

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, sfl_command, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "config::tests_run_through_the_runner_and_build_through_the_wrapper",
            runner_and_wrapper,
        ),
        Trial::test(
            "config::a_member_directory_s_env_applies_when_run_there",
            member_directory_env,
        ),
        Trial::test(
            "config::a_configuration_outside_the_workspace_is_read_and_watched",
            outside_configuration,
        ),
        Trial::test("config::a_package_id_url_keeps_the_doctests", package_id_url),
    ]
}

/// Writes `files` (path, text) under `dir`.
fn write(dir: &Path, files: &[(&str, &str)]) -> Result {
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap())?;
        std::fs::write(path, text)?;
    }
    Ok(())
}

/// A shell script at `path`, executable.
fn script(path: &Path, body: &str) -> Result {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::write(path, format!("#!/bin/sh\n{body}"))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))?;
    Ok(())
}

/// (binary, name, outcome) of every test of a JSON report on stdout.
fn outcomes(out: &std::process::Output) -> Result<Vec<(String, String, String)>> {
    let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("bad JSON: {e}\n{}", show(out)))?;
    let tests = report["tests"].as_array().ok_or_else(|| show(out))?;
    Ok(tests
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            (s("binary"), s("name"), s("outcome"))
        })
        .collect())
}

const PACKAGE: &str = "[package]\nname = \"conf\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                       [lints.rust]\nunexpected_cfgs = \"allow\"\n\n[workspace]\n";

/// A runner that marks the environment and a rustc wrapper that adds a `--cfg` to the crates
/// it compiles: under `cargo test` both tests and the doctest pass, and so they must here.
fn runner_and_wrapper() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let (runner, wrapper) = (dir.join("runner.sh"), dir.join("wrapper.sh"));
    // It speaks before the binary does, on both streams, as valgrind or a chatty script does:
    // the listing and the fork servers' replies must still be read.
    script(
        &runner,
        "echo 'runner: starting'\necho 'runner: a note' >&2\nexport WRAPPED=1\nexec \"$@\"\n",
    )?;
    script(
        &wrapper,
        "case \"$*\" in *--crate-name*) exec \"$@\" --cfg from_wrapper;; *) exec \"$@\";; esac\n",
    )?;
    let config = format!("[target.'cfg(all())']\nrunner = {:?}\n", runner.to_string_lossy());
    write(
        dir,
        &[
            ("Cargo.toml", PACKAGE),
            (".cargo/config.toml", &config),
            (
                "src/lib.rs",
                "/// ```\n/// assert_eq!(std::env::var(\"WRAPPED\").as_deref(), Ok(\"1\"));\n/// ```\n\
                 pub fn id(x: i32) -> i32 {\n    x\n}\n\n#[test]\nfn runs_under_the_runner() {\n    \
                 assert_eq!(std::env::var(\"WRAPPED\").as_deref(), Ok(\"1\"));\n}\n\n#[test]\n\
                 fn built_through_the_wrapper() {\n    assert!(cfg!(from_wrapper));\n    assert_eq!(id(1), 1);\n}\n",
            ),
        ],
    )?;
    let out = sfl_command(dir)
        .args(["--format", "json"])
        .env("RUSTC_WRAPPER", &wrapper)
        .output()?;
    let tests = outcomes(&out)?;
    check(
        out.status.code() == Some(3) && tests.len() == 3 && tests.iter().all(|t| t.2 == "passed"),
        || format!("{tests:?}\n{}", show(&out)),
    )?;
    // The tests were forked from a server started through the runner, not launched one by one.
    check(!String::from_utf8_lossy(&out.stderr).contains("does not serve"), || {
        show(&out)
    })
}

/// A virtual workspace whose member has its own `.cargo/config.toml` with `[env]`: `cargo test`
/// run in the member's directory gives its tests that variable.
fn member_directory_env() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    write(
        dir,
        &[
            ("Cargo.toml", "[workspace]\nmembers = [\"m\"]\nresolver = \"2\"\n"),
            (
                "m/Cargo.toml",
                "[package]\nname = \"m\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("m/.cargo/config.toml", "[env]\nMODE = \"testing\"\n"),
            (
                "m/src/lib.rs",
                "#[test]\nfn mode_is_set() {\n    assert_eq!(std::env::var(\"MODE\").as_deref(), Ok(\"testing\"));\n}\n",
            ),
        ],
    )?;
    let out = sfl_command(&dir.join("m"))
        .args(["--format", "json", "--no-doctests"])
        .env_remove("MODE")
        .output()?;
    let tests = outcomes(&out)?;
    check(
        out.status.code() == Some(3) && tests.len() == 1 && tests[0].2 == "passed",
        || format!("{tests:?}\n{}", show(&out)),
    )
}

/// A workspace inside a directory whose `.cargo/config.toml` sets a variable a test reads, and a
/// path dependency beside it: the test sees the variable; the dependency is named as left out
/// of the coverage; and once the variable's value changes the test runs again (and fails, as
/// under `cargo test`) instead of keeping its row from the last run.
fn outside_configuration() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    write(
        dir,
        &[
            (".cargo/config.toml", "[env]\nSFL_V = \"1\"\n"),
            (
                "outlib/Cargo.toml",
                "[package]\nname = \"outlib\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            ("outlib/src/lib.rs", "pub fn one() -> i32 {\n    1\n}\n"),
            (
                "ws/Cargo.toml",
                "[package]\nname = \"ws\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
                 [dependencies]\noutlib = { path = \"../outlib\" }\n\n[workspace]\n",
            ),
            (
                "ws/src/lib.rs",
                "#[test]\nfn reads_v() {\n    assert_eq!(std::env::var(\"SFL_V\").as_deref(), Ok(\"1\"));\n}\n\n\
                 #[test]\nfn uses_outlib() {\n    assert_eq!(outlib::one(), 1);\n}\n",
            ),
        ],
    )?;
    let ws = dir.join("ws");
    let run = || {
        sfl_command(&ws)
            .args(["--format", "json", "--no-doctests"])
            .env_remove("SFL_V")
            .output()
    };
    let first = run()?;
    let tests = outcomes(&first)?;
    check(
        first.status.code() == Some(3) && tests.iter().all(|t| t.2 == "passed") && tests.len() == 2,
        || format!("{tests:?}\n{}", show(&first)),
    )?;
    let stderr = String::from_utf8_lossy(&first.stderr);
    check(
        stderr.contains("not instrumented") && stderr.contains("outlib ("),
        || show(&first),
    )?;
    write(dir, &[(".cargo/config.toml", "[env]\nSFL_V = \"2\"\n")])?;
    let second = run()?;
    let tests = outcomes(&second)?;
    let reads_v = tests.iter().find(|t| t.1 == "reads_v").map(|t| t.2.as_str());
    check(reads_v == Some("failed"), || format!("{tests:?}\n{}", show(&second)))
}

/// `-p` with a package ID URL (as `cargo pkgid` prints it) selects the package with its
/// doctests, as `cargo test -p` does.
fn package_id_url() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    write(
        dir,
        &[
            ("Cargo.toml", "[workspace]\nmembers = [\"pk\"]\nresolver = \"2\"\n"),
            (
                "pk/Cargo.toml",
                "[package]\nname = \"pk\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            ),
            (
                "pk/src/lib.rs",
                "/// ```\n/// assert_eq!(pk::two(), 2);\n/// ```\npub fn two() -> i32 {\n    2\n}\n\n\
                 #[test]\nfn two_is_two() {\n    assert_eq!(two(), 2);\n}\n",
            ),
        ],
    )?;
    let spec = format!("path+file://{}#0.1.0", dir.join("pk").display());
    let out = sfl_command(dir).args(["--format", "json", "-p", &spec]).output()?;
    let tests = outcomes(&out)?;
    let binaries: Vec<&str> = tests.iter().map(|t| t.0.as_str()).collect();
    check(binaries.contains(&"pk::doctest/pk") && binaries.contains(&"pk"), || {
        format!("{tests:?}\n{}", show(&out))
    })?;
    // One that names no member is refused as a name would be.
    let elsewhere = format!("path+file://{}#0.1.0", dir.join("elsewhere").display());
    let out = sfl_command(dir).args(["-p", &elsewhere]).output()?;
    check(
        out.status.code() == Some(2) && String::from_utf8_lossy(&out.stderr).contains("no package"),
        || show(&out),
    )
}
