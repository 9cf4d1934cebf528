//! Reading what `cargo test` and cargo sfl print: cargo test's per-binary sections and test
//! lines, the mapping of a section to cargo sfl's binary id (the human report is read by `cargo_sfl::report::shown_entries`).

/// A test's outcome as both tools name it (cargo sfl's JSON spelling).
pub type Outcome = &'static str;

/// Where a section of `cargo test`'s output comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `Running [unittests ]SRC (…/deps/STEM-HASH)`: a test executable of a target.
    Binary { src: String, stem: String },
    /// `Doc-tests CRATE`: the doctests of the library whose crate name is CRATE.
    Doc { krate: String },
}

/// One test executable's (or one library's doctests') part of `cargo test`'s output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub origin: Origin,
    /// `test NAME ... RESULT` lines in order, the name as cargo sfl spells it.
    pub tests: Vec<(String, Outcome)>,
    /// The doctests among `tests` that are only compiled (`no_run`, `compile_fail`).
    pub compile_only: Vec<String>,
    /// cargo said `error: test failed` for this executable (a failing test or a process that
    /// did not exit successfully).
    pub failed: bool,
    /// The executable was killed by a signal (cargo's `process didn't exit successfully: …
    /// (signal: …)`): a crash in one test ended the rest of its tests under `cargo test`.
    pub crashed: bool,
    /// `test NAME ... RESULT` lines whose name has a `/` or a space: a line a test printed itself
    /// in a libtest executable (trybuild's), or a test of a custom harness that names tests so
    /// (libtest-mimic's file-based suites); [`cargo_test_sections`] cannot tell which.
    pub loose: Vec<(String, Outcome)>,
}

/// libtest's and libtest-mimic's word for a result: `ok`, `FAILED`, `ignored[, reason]`.
fn outcome_of(result: &str) -> Option<Outcome> {
    match result.trim() {
        "ok" => Some("passed"),
        "FAILED" => Some("failed"),
        r if r.starts_with("ignored") => Some("ignored"),
        _ => None,
    }
}

/// Splits `cargo test --no-fail-fast`'s merged stdout and stderr into sections.
///
/// In a test executable's section, a `test … ... ok` line whose name has a `/` or a space is
/// not libtest's (a test name is a Rust path): it is a line a test printed itself, such as
/// trybuild's `test tests/ui/x.rs ... ok`, or a custom harness's test; it goes to
/// [`Section::loose`]. Colour codes are dropped (libtest-mimic 0.6 colours results in a pipe),
/// and a result alone on a line is the result of the last `test NAME ... ` line that had none
/// (a harness that does not capture its tests' output prints it in between). A doctest's name
/// loses rustdoc's ` - compile fail`, ` - compile` or ` - should panic` suffix, as cargo sfl names
/// it.
pub fn cargo_test_sections(output: &str) -> Vec<Section> {
    let mut sections: Vec<Section> = Vec::new();
    // A `test NAME ... ` line still waiting for its result.
    let mut pending: Option<String> = None;
    let output = console::strip_ansi_codes(output);
    for line in output.lines() {
        let trimmed = line.trim();
        if let Some(outcome) = outcome_of(trimmed)
            && let Some(name) = pending.take()
            && let Some(section) = sections.last_mut()
        {
            push_test(section, &name, outcome);
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix("Running ") {
            let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
            let Some((src, exe)) = rest.rsplit_once(" (") else {
                continue;
            };
            let exe = exe.trim_end_matches(')');
            let file = exe.rsplit(['/', '\\']).next().unwrap_or(exe);
            let file = file.strip_suffix(".exe").unwrap_or(file);
            let stem = file.rsplit_once('-').map_or(file, |(s, _)| s);
            sections.push(Section {
                origin: Origin::Binary {
                    src: src.to_string(),
                    stem: stem.to_string(),
                },
                tests: Vec::new(),
                compile_only: Vec::new(),
                failed: false,
                crashed: false,
                loose: Vec::new(),
            });
            pending = None;
        } else if let Some(krate) = trimmed.strip_prefix("Doc-tests ") {
            sections.push(Section {
                origin: Origin::Doc {
                    krate: krate.trim().to_string(),
                },
                tests: Vec::new(),
                compile_only: Vec::new(),
                failed: false,
                crashed: false,
                loose: Vec::new(),
            });
            pending = None;
        } else if trimmed.starts_with("error: test failed") {
            if let Some(s) = sections.last_mut() {
                s.failed = true;
            }
        } else if trimmed.starts_with("process didn't exit successfully") && trimmed.contains("(signal: ") {
            if let Some(s) = sections.last_mut() {
                s.crashed = true;
            }
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, result)) = rest.split_once(" ... ")
            && let Some(section) = sections.last_mut()
        {
            match outcome_of(result) {
                Some(outcome) => push_test(section, name, outcome),
                None => pending = Some(name.to_string()),
            }
        }
    }
    sections
}

/// Records one `test NAME ... RESULT` line of `section` (libtest-mimic pads names to a column).
fn push_test(section: &mut Section, name: &str, outcome: Outcome) {
    let name = name.trim_end();
    let name = match section.origin {
        Origin::Doc { .. } => {
            let compiled = [" - compile fail", " - compile"]
                .iter()
                .find_map(|s| name.strip_suffix(s));
            if let Some(n) = compiled {
                section.compile_only.push(n.to_string());
            }
            compiled
                .or_else(|| name.strip_suffix(" - should panic"))
                .unwrap_or(name)
        }
        // libtest marks a `#[should_panic]` test `name - should panic`.
        Origin::Binary { .. } => {
            let name = name.strip_suffix(" - should panic").unwrap_or(name);
            if name.contains(['/', ' ']) {
                section.loose.push((name.to_string(), outcome));
                return;
            }
            name
        }
    };
    section.tests.push((name.to_string(), outcome));
}

/// A cargo target of a workspace member, as `cargo metadata` describes it.
#[derive(Debug, Clone)]
pub struct Target {
    pub package: String,
    /// The first of the target's kinds (`lib`, `proc-macro`, `bin`, `test`, `example`, …).
    pub kind: String,
    pub name: String,
    pub src_path: String,
}

/// cargo sfl's id of the binary that ran a section's tests (`pkg` for a library's unit tests,
/// `pkg::NAME` for integration test NAME, `pkg::KIND/NAME` otherwise, `pkg::doctest/LIB`), and
/// the target it belongs to; `None` when no target matches.
pub fn binary_id<'t>(origin: &Origin, targets: &'t [Target]) -> Option<(String, &'t Target)> {
    let crate_name = |t: &Target| t.name.replace('-', "_");
    let is_lib = |t: &Target| {
        matches!(
            t.kind.as_str(),
            "lib" | "rlib" | "dylib" | "cdylib" | "staticlib" | "proc-macro"
        )
    };
    match origin {
        Origin::Doc { krate } => {
            let t = targets.iter().find(|t| is_lib(t) && crate_name(t) == *krate)?;
            Some((format!("{}::doctest/{}", t.package, t.name), t))
        }
        Origin::Binary { src, stem } => {
            let named: Vec<&Target> = targets.iter().filter(|t| crate_name(t) == *stem).collect();
            let src = src.replace('\\', "/");
            let t = named
                .iter()
                .find(|t| t.src_path.replace('\\', "/").ends_with(&format!("/{src}")))
                .or(named.first())?;
            let id = match t.kind.as_str() {
                _ if is_lib(t) => t.package.clone(),
                "test" => format!("{}::{}", t.package, t.name),
                kind => format!("{}::{kind}/{}", t.package, t.name),
            };
            Some((id, t))
        }
    }
}

/// How many tests a default run of cargo sfl ran, from its `Selected N of M tests to run; …`
/// status line, or why it ran every test (its `Selecting every test: WHY` line): one of the two,
/// or both `None` when it printed neither (a run with nothing to start from, or a failed one).
pub fn selection(output: &str) -> (Option<usize>, Option<String>) {
    for line in output.lines().map(str::trim) {
        if let Some(why) = line.strip_prefix("Selecting every test: ") {
            return (None, Some(why.to_string()));
        }
        if let Some(rest) = line.strip_prefix("Selected ")
            && let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok())
        {
            return (Some(n), None);
        }
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\
   Compiling x v0.1.0 (/w/x)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 1.2s
     Running unittests src/lib.rs (target/debug/deps/my_crate-0123abcd)

running 4 tests
test tests::a ... ok
test tests::b ... FAILED
test tests::c ... ignored, needs network
test tests::d - should panic ... ok

failures:
test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out

error: test failed, to rerun pass `--lib`
     Running tests/compiletest.rs (target/debug/deps/compiletest-feedbeef)

running 1 test
test tests/ui/bad.rs ... ok
test ui ... ok
     Running tests/main/mod.rs (target/debug/deps/main-00ff)
whatever a custom harness prints
error: test failed, to rerun pass `--test main`
     Running unittests src/main.rs (target/debug/deps/my_crate-77)

running 0 tests
   Doc-tests my_crate

running 3 tests
test src/lib.rs - f (line 5) ... ok
test src/lib.rs - g (line 9) - compile fail ... ok
test src/lib.rs - h (line 12) - compile ... ok
";

    fn targets() -> Vec<Target> {
        let t = |kind: &str, name: &str, src: &str| Target {
            package: "my-crate".into(),
            kind: kind.into(),
            name: name.into(),
            src_path: format!("/w/x/{src}"),
        };
        vec![
            t("lib", "my-crate", "src/lib.rs"),
            t("bin", "my-crate", "src/main.rs"),
            t("test", "compiletest", "tests/compiletest.rs"),
            t("test", "main", "tests/main/mod.rs"),
        ]
    }

    #[test]
    fn sections_and_test_lines() {
        let s = cargo_test_sections(OUTPUT);
        assert_eq!(s.len(), 5);
        assert_eq!(
            s[0].tests,
            [
                ("tests::a".into(), "passed"),
                ("tests::b".into(), "failed"),
                ("tests::c".into(), "ignored"),
                ("tests::d".into(), "passed")
            ]
        );
        assert!(s[0].failed);
        // trybuild's own line is not a test of the binary.
        assert_eq!(s[1].tests, [("ui".to_string(), "passed")]);
        assert!(!s[1].failed);
        assert!(s[2].tests.is_empty() && s[2].failed);
        assert_eq!(
            s[4].origin,
            Origin::Doc {
                krate: "my_crate".into()
            }
        );
        let names: Vec<&str> = s[4].tests.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "src/lib.rs - f (line 5)",
                "src/lib.rs - g (line 9)",
                "src/lib.rs - h (line 12)"
            ]
        );
    }

    /// libtest-mimic 0.6 (toml_edit's compliance suites): results coloured in a pipe, tests
    /// named by file, a test's own output between its name and its result; and an executable
    /// that a stack overflow killed.
    #[test]
    fn custom_harness_lines_and_crashes() {
        let out = "     Running tests/decoder_compliance.rs (target/debug/deps/decoder_compliance-01)\n\
                   \nrunning 3 tests\n\
                   test valid/a.toml      ... \x1b[0m\x1b[32mok\x1b[0m\n\
                   test invalid/b.toml ... TOML parse error at line 1, column 12\n\
                   expected `]`\n\
                   \x1b[0m\x1b[32mok\x1b[0m\n\
                   test invalid/c.toml ... \x1b[0m\x1b[31mFAILED\x1b[0m\n\
                   \ntest result: \x1b[0m\x1b[31mFAILED\x1b[0m. 2 passed; 1 failed\n\
                   error: test failed, to rerun pass `--test decoder_compliance`\n\
                        Running tests/testsuite/main.rs (target/debug/deps/testsuite-02)\n\
                   \nrunning 2 tests\n\
                   test deep::ok_one ... ok\n\
                   test deep::overflow ... \n\
                   thread 'deep::overflow' has overflowed its stack\n\
                   fatal runtime error: stack overflow, aborting\n\
                   error: test failed, to rerun pass `--test testsuite`\n\
                   \nCaused by:\n  process didn't exit successfully: `target/debug/deps/testsuite-02` (signal: 6, SIGABRT: process abort signal)\n";
        let s = cargo_test_sections(out);
        assert!(s[0].tests.is_empty());
        assert_eq!(
            s[0].loose,
            [
                ("valid/a.toml".to_string(), "passed"),
                ("invalid/b.toml".to_string(), "passed"),
                ("invalid/c.toml".to_string(), "failed")
            ]
        );
        assert!(s[0].failed && !s[0].crashed);
        assert_eq!(s[1].tests, [("deep::ok_one".to_string(), "passed")]);
        assert!(s[1].failed && s[1].crashed);
    }

    #[test]
    fn sections_map_to_cargo_sfl_binary_ids() {
        let t = targets();
        let ids: Vec<String> = cargo_test_sections(OUTPUT)
            .iter()
            .map(|s| binary_id(&s.origin, &t).unwrap().0)
            .collect();
        assert_eq!(
            ids,
            [
                "my-crate",
                "my-crate::compiletest",
                "my-crate::main",
                "my-crate::bin/my-crate",
                "my-crate::doctest/my-crate"
            ]
        );
    }

    #[test]
    fn the_selection_line() {
        let out = "   Compiling x\n    Selected 3 of 40 tests to run; 37 reused from the run of 2s ago (--rerun runs them all)\n";
        assert_eq!(selection(out), (Some(3), None));
        let out = "Selecting every test: Cargo.lock was added since the last run\n";
        assert_eq!(
            selection(out),
            (None, Some("Cargo.lock was added since the last run".into()))
        );
        assert_eq!(selection("error: the instrumented build failed\n"), (None, None));
    }
}
