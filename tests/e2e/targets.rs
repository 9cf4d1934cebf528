//! Target selection as `cargo test` has it: `--examples`, `--example NAME`, `--benches`,
//! `--bench NAME` and `--all-targets` build those targets with the test harness and run their
//! tests (and no doctests), each test in its own process like any other; cargo's own options
//! (`--locked`, `--offline`, `--frozen`, `--config`) reach every cargo command of a run, and
//! the test harness's arguments after `--` select tests as libtest would.

use std::collections::BTreeSet;

use libtest_mimic::Trial;

use crate::support::{Result, check, check_exit, copy_fixture, lib_crate, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("targets::examples_and_all_targets", examples_and_all_targets),
        Trial::test(
            "targets::cargo_options_reach_every_cargo_command",
            cargo_options_reach_every_cargo_command,
        ),
        Trial::test(
            "targets::harness_arguments_after_double_dash",
            harness_arguments_after_double_dash,
        ),
        Trial::test(
            "targets::a_library_linked_while_compiling_is_covered",
            a_library_linked_while_compiling_is_covered,
        ),
        Trial::test(
            "targets::code_a_build_script_generates_is_ranked",
            code_a_build_script_generates_is_ranked,
        ),
    ]
}

/// The tests (`binary name`) a run with `args` ran on self-dev-dep, from its saved spectra.
fn tests_run(dir: &std::path::Path, args: &[&str]) -> Result<BTreeSet<String>> {
    let saved = dir.join("targets.json");
    let mut all = vec!["--rerun", "--save-spectra", saved.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sfl(&all, dir);
    check(matches!(out.status.code(), Some(0 | 3)), || show(&out))?;
    let spectra = cargo_sfl::spectra::Spectra::load(&saved)?;
    Ok(spectra
        .tests
        .iter()
        .map(|t| format!("{} {}", t.binary, t.name))
        .collect())
}

/// self-dev-dep's example `demo` has a test: `--examples` and `--example demo` run it alone,
/// `--all-targets` runs it with every other target's tests, the default leaves it out, and
/// `--benches` runs the targets with `bench = true` (the library's tests).
fn examples_and_all_targets() -> Result {
    let tmp = copy_fixture("self-dev-dep");
    let dir = tmp.path();
    let demo = "fixture-selfdep::example/demo demo_counts_digits".to_string();
    let only_demo = BTreeSet::from([demo.clone()]);
    for args in [&["--examples"][..], &["--example", "demo"]] {
        let ran = tests_run(dir, args)?;
        check(ran == only_demo, || format!("{args:?} ran {ran:?}"))?;
    }
    let default = tests_run(dir, &[])?;
    check(!default.contains(&demo) && default.len() == 9, || {
        format!("the default ran {default:?}")
    })?;
    let all = tests_run(dir, &["--all-targets"])?;
    let mut expected = default.clone();
    expected.insert(demo);
    check(all == expected, || {
        format!("--all-targets ran {all:?}, expected {expected:?}")
    })?;
    // As with `cargo test --benches`: the library and binaries have `bench = true` by default,
    // so their tests run; the fixture has no benches/ target.
    let benches = tests_run(dir, &["--benches"])?;
    let lib: BTreeSet<String> = default
        .iter()
        .filter(|t| t.starts_with("fixture-selfdep tests::"))
        .cloned()
        .collect();
    check(benches == lib && lib.len() == 6, || {
        format!("--benches ran {benches:?}")
    })
}

/// As with `cargo test`: `--config` and `--profile` change the build (a test profile without
/// debug assertions), `--target` builds for the host's triple (another is refused), and
/// `--locked` refuses a Cargo.lock that needs updating, with cargo's reason, the
/// lockfile left as it was. Before, each was an unknown argument (exit 2).
fn cargo_options_reach_every_cargo_command() -> Result {
    let lib_rs = "pub fn checked() -> bool { cfg!(debug_assertions) }\n\
                  #[cfg(test)]\nmod tests {\n\
                  #[test] fn unchecked() { assert!(!super::checked()); }\n\
                  #[test] fn other() {}\n}\n";
    let profile = "[profile.unchecked]\ninherits = \"dev\"\ndebug-assertions = false\n\n";
    let tmp = lib_crate("fixture-cargo-options", profile, lib_rs)?;
    let dir = tmp.path();
    // Debug assertions on (the default): `unchecked` fails, and a report is written.
    let out = sfl(&["--offline"], dir);
    check_exit(
        &out,
        0,
        &out.stdout,
        &["FAILED    fixture-cargo-options tests::unchecked"],
    )?;
    // Off through --config: every test passes (exit 3), so the option reached the build and
    // the changed flags made the run select every test again.
    let out = sfl(&["--frozen", "--config", "profile.dev.debug-assertions=false"], dir);
    check_exit(&out, 3, &out.stderr, &["every test"])?;
    // A custom profile, as `cargo test --profile NAME` builds it, in its own directory.
    let out = sfl(&["--profile", "unchecked"], dir);
    check_exit(&out, 3, &out.stderr, &["every test"])?;
    let built = std::fs::read_dir(dir.join("target/sfl/unchecked/deps"))?.count();
    check(built > 0, || "nothing built under target/sfl/unchecked".to_string())?;
    // `--target` the host's triple: built under the triple's directory; another is refused
    // before building (the tests run here).
    let host = String::from_utf8(std::process::Command::new("rustc").arg("-vV").output()?.stdout)?;
    let host = host
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_default()
        .to_string();
    let out = sfl(&["--target", &host], dir);
    check_exit(
        &out,
        0,
        &out.stdout,
        &["FAILED    fixture-cargo-options tests::unchecked"],
    )?;
    check(dir.join("target/sfl").join(&host).join("debug/deps").is_dir(), || {
        format!("nothing built under target/sfl/{host}")
    })?;
    let out = sfl(&["--target", "nosuch-unknown-none"], dir);
    check_exit(
        &out,
        2,
        &out.stderr,
        &["--target nosuch-unknown-none: cargo sfl runs the tests on this machine"],
    )?;
    // A path dependency the lockfile does not have yet.
    let lock = std::fs::read_to_string(dir.join("Cargo.lock"))?;
    std::fs::create_dir_all(dir.join("helper/src"))?;
    std::fs::write(
        dir.join("helper/Cargo.toml"),
        "[package]\nname = \"helper\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )?;
    std::fs::write(dir.join("helper/src/lib.rs"), "")?;
    let manifest = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&manifest)?;
    std::fs::write(
        &manifest,
        text.replace(
            "[workspace]",
            "[dependencies]\nhelper = { path = \"helper\" }\n\n[workspace]",
        ),
    )?;
    let out = sfl(&["--locked"], dir);
    check_exit(&out, 101, &out.stderr, &["--locked", "the instrumented build failed"])?;
    check(std::fs::read_to_string(dir.join("Cargo.lock"))? == lock, || {
        "--locked let the lockfile change".to_string()
    })?;
    // Without it, cargo may update the lockfile, as `cargo test` does.
    let out = sfl(&[], dir);
    check(out.status.code() == Some(0), || show(&out))
}

/// `cargo sfl -- ARGS` selects the tests `cargo test -- ARGS` runs: name filters (any of them),
/// `--exact`, `--skip`, `--ignored` (only #[ignore]d tests), the positional filter added to the
/// others; libtest's output options but `--nocapture` are accepted with a warning (which
/// `reliability::output_of_a_crashed_test` runs), its other options refused
/// (exit 2). Before, every argument after `--` was taken as one name filter, so `-- --ignored`
/// said "no tests matched the filter `--ignored`" (exit 4).
fn harness_arguments_after_double_dash() -> Result {
    let lib_rs = "#[cfg(test)]\nmod tests {\n\
                  #[test] fn a_one() {}\n\
                  #[test] fn a_two() {}\n\
                  #[test] fn b_one() {}\n\
                  #[test] #[ignore] fn slow() {}\n}\n";
    let tmp = lib_crate("fixture-harness-args", "", lib_rs)?;
    let dir = tmp.path();
    let names =
        |v: &[&str]| -> BTreeSet<String> { v.iter().map(|n| format!("fixture-harness-args tests::{n}")).collect() };
    for (args, expected) in [
        (&["--", "a_"][..], names(&["a_one", "a_two"])),
        (&["--", "two", "b_"], names(&["a_two", "b_one"])),
        (&["--", "--exact", "tests::a_one", "a_two"], names(&["a_one"])),
        (&["--", "--skip", "two", "--skip=b_"], names(&["a_one", "slow"])),
        (&["--", "--ignored"], names(&["slow"])),
        (&["--", "--include-ignored", "--skip", "a_"], names(&["b_one", "slow"])),
        (&["b_", "--", "a_one"], names(&["a_one", "b_one"])),
        (&["--", "--test-threads=1", "--nocapture", "b_one"], names(&["b_one"])),
    ] {
        let ran = tests_run(dir, args)?;
        // An #[ignore]d test the filters take is recorded (as ignored) without running.
        check(ran == expected, || {
            format!("{args:?} recorded {ran:?}, expected {expected:?}")
        })?;
    }
    let out = sfl(&["--", "--show-output"], dir);
    check_exit(&out, 3, &out.stderr, &["--show-output after `--` has no effect"])?;
    let out = sfl(&["--", "--list"], dir);
    check_exit(&out, 2, &out.stderr, &["`--list` after `--` is not supported"])
}

/// compile-time's `units` library is linked by a proc macro and a build script as well as by
/// `app`'s code: it builds (a build script or a proc macro cannot link a position-dependent
/// instrumented library: exit 101 before), nothing writes a profile into the packages, and
/// `app`'s test that calls `units` at run time is seen running its lines (after the first fix,
/// which left such a library uninstrumented, only `units`' own tests were: darling's core).
fn a_library_linked_while_compiling_is_covered() -> Result {
    let tmp = copy_fixture("compile-time");
    let dir = tmp.path();
    let out = sfl(&[], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let out = sfl(&["explain", "units/src/lib.rs:8"], dir);
    let text = String::from_utf8_lossy(&out.stdout);
    check(text.contains("fixture-ct-app tests::parses_lengths"), || show(&out))?;
    let litter: Vec<_> = ["", "app", "units", "macros"]
        .iter()
        .flat_map(|d| std::fs::read_dir(dir.join(d)).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "profraw"))
        .collect();
    check(litter.is_empty(), || {
        format!("profiles written into the packages: {litter:?}")
    })
}

/// target-lexicon's shape: the build script writes code into `OUT_DIR` that the library
/// `include!`s. Its lines are the package's code: ranked under their path in the target
/// directory, where before they were left out ("the failing tests ran only test code", exit 7).
/// After a green run, an edit of the build script is named among the changes no coverage
/// shows (code that runs while compiling), not blamed on "test code, a dependency, a data file".
fn code_a_build_script_generates_is_ranked() -> Result {
    let lib_rs = "include!(concat!(env!(\"OUT_DIR\"), \"/limits.rs\"));\n\n\
                  #[cfg(test)]\nmod tests {\n    #[test]\n    fn limit_is_ten() {\n        \
                  assert_eq!(super::limit(3), 10);\n    }\n    #[test]\n    fn other() {\n        \
                  assert_eq!(1 + 1, 2);\n    }\n}\n";
    let tmp = lib_crate("fixture-generated", "", lib_rs)?;
    let dir = tmp.path();
    let build_rs = |limit: u32| {
        format!(
            "fn main() {{\n    let out = std::env::var(\"OUT_DIR\").unwrap();\n    let code = \"pub fn limit(x: u32) -> u32 {{\\n    \
             if x > 2 {{\\n        {limit}\\n    }} else {{\\n        x\\n    }}\\n}}\\n\";\n    \
             std::fs::write(format!(\"{{out}}/limits.rs\"), code).unwrap();\n}}\n"
        )
    };
    std::fs::write(dir.join("build.rs"), build_rs(10))?;
    let out = sfl(&[], dir);
    check_exit(&out, 3, &out.stderr, &[])?;
    std::fs::write(dir.join("build.rs"), build_rs(11))?;
    let out = sfl(&["--format", "json"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let first = &report["rankings"][0]["units"][0];
    let file = first["file"].as_str().unwrap_or_default();
    check(
        file.starts_with("target/sfl/")
            && file.ends_with("/out/limits.rs")
            && first["members"]
                .as_array()
                .is_some_and(|m| m.iter().any(|u| u["line"] == 3)),
        || format!("{first}\n{}", show(&out)),
    )?;
    let uncovered = report["changed_since_passed"]["uncovered_lines"].to_string();
    check(uncovered.contains("build.rs"), || {
        format!("{}\n{}", report["changed_since_passed"], show(&out))
    })
}
