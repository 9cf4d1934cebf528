//! Test selection: a second run re-runs only the tests an edit can affect, reuses the other
//! tests' rows (lines moved where the edit moved them), and its spectra equal a full run's;
//! an edit outside every function, and `--rerun`, run every test; `--reuse-spectra` starts
//! from a saved file.

use std::path::Path;

use libtest_mimic::Trial;

use crate::support::{Result, check, copy_fixture, edit_file, lib_crate, outcome_of, sfl, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test(
            "select::an_edit_reruns_only_the_tests_that_ran_it",
            an_edit_reruns_only_the_tests_that_ran_it,
        ),
        Trial::test(
            "select::an_edit_outside_functions_or_rerun_runs_every_test",
            outside_functions_or_rerun,
        ),
        Trial::test(
            "select::only_the_targets_that_run_again_are_built",
            only_the_targets_that_run_again_are_built,
        ),
        Trial::test(
            "select::a_dev_dependency_that_pulls_another_version_of_the_package",
            another_version_of_the_package,
        ),
        Trial::test(
            "select::lines_of_targets_not_rebuilt_are_kept",
            lines_of_targets_not_rebuilt_are_kept,
        ),
        Trial::test(
            "select::a_property_test_runs_again_after_every_edit",
            a_property_test_runs_again_after_every_edit,
        ),
        Trial::test("select::a_crate_without_a_lock_file", a_crate_without_a_lock_file),
        Trial::test(
            "select::an_edit_of_comments_and_whitespace_reruns_no_test_that_ran_code",
            an_edit_of_comments_and_whitespace,
        ),
        Trial::test(
            "select::another_builds_target_directory_is_not_a_source",
            another_builds_target_directory,
        ),
        Trial::test(
            "select::a_change_of_the_environment_reruns_the_tests_that_read_it",
            a_change_of_the_environment,
        ),
        Trial::test(
            "select::a_test_that_starts_a_program_reads_every_variable",
            a_test_that_starts_a_program_reads_every_variable,
        ),
        Trial::test(
            "select::a_build_scripts_input_outside_the_package_is_compared",
            a_build_scripts_input_outside_the_package,
        ),
        Trial::test(
            "select::what_changed_since_the_failing_tests_last_passed",
            changed_since_last_passed,
        ),
        Trial::test(
            "select::changed_since_names_the_failing_tests_own_lines",
            changed_since_names_the_failing_tests_own_lines,
        ),
        Trial::test(
            "select::changed_since_names_a_statements_line_and_the_environment",
            changed_since_names_a_statements_line_and_the_environment,
        ),
        Trial::test(
            "select::changed_since_last_passed_where_a_test_always_fails",
            changed_since_last_passed_where_a_test_always_fails,
        ),
        Trial::test(
            "select::workspaces_sharing_a_target_directory_keep_their_own_runs",
            workspaces_sharing_a_target_directory,
        ),
        Trial::test(
            "select::a_member_keeps_the_features_the_workspace_gives_it",
            features_the_workspace_gives,
        ),
        Trial::test(
            "select::another_directory_selects_another_package",
            another_directory_another_package,
        ),
        Trial::test(
            "select::an_edit_of_a_proc_macro_runs_every_test",
            an_edit_of_a_proc_macro_runs_every_test,
        ),
        Trial::test(
            "select::a_changed_const_value_is_named_though_no_coverage_shows_it",
            a_changed_const_value_is_named,
        ),
        Trial::test(
            "select::a_change_no_coverage_map_holds_is_named",
            a_change_no_coverage_map_holds_is_named,
        ),
        Trial::test(
            "select::a_snapshot_written_for_review_is_no_edit",
            a_snapshot_written_for_review_is_no_edit,
        ),
        Trial::test(
            "select::a_new_test_written_below_the_others_runs_alone",
            a_new_test_runs_alone,
        ),
        Trial::test(
            "select::a_test_that_reads_the_sources_runs_again_after_an_edit",
            a_test_that_reads_the_sources_runs_again,
        ),
        Trial::test(
            "select::a_hidden_file_a_test_reads_is_compared",
            a_hidden_file_a_test_reads_is_compared,
        ),
        Trial::test(
            "select::a_variable_read_before_main_is_read_by_every_test_of_a_kept_process",
            a_variable_read_before_main,
        ),
        Trial::test(
            "select::a_program_of_the_package_started_with_a_cleared_environment_is_covered",
            a_program_started_with_a_cleared_environment,
        ),
        Trial::test(
            "select::a_test_that_iterates_the_environment_reads_every_variable",
            a_test_that_iterates_the_environment,
        ),
    ]
}

/// A test that reads a hidden file at run time (`tests/.fixtures/.expected`; dotenv's `.env`,
/// ignore's `.gitignore` fixtures): an edit of that file runs every test, and the test fails as
/// under `cargo test`. Before, hidden files were not walked and its old "passed" row was reused.
/// What editors keep beside the sources (`.idea/`, a vim swap file) is not an edit.
fn a_hidden_file_a_test_reads_is_compared() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    crate::reliability::add_test(
        dir,
        "reads_a_hidden_fixture",
        "let path = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/tests/.fixtures/.expected\");\n        \
         assert_eq!(std::fs::read_to_string(path).unwrap(), \"ok\\n\");",
    )?;
    std::fs::create_dir_all(dir.join("tests/.fixtures"))?;
    std::fs::write(dir.join("tests/.fixtures/.expected"), "ok\n")?;
    std::fs::create_dir_all(dir.join(".idea"))?;
    std::fs::write(dir.join(".idea/workspace.xml"), "<project/>\n")?;
    let outcome = |out: &std::process::Output| outcome_of(out, "tests::reads_a_hidden_fixture");
    let first = sfl(&["--format", "json"], dir);
    check(outcome(&first)? == "passed", || show(&first))?;
    std::fs::write(dir.join(".idea/workspace.xml"), "<project version=\"4\"/>\n")?;
    std::fs::write(dir.join("src/.lib.rs.swp"), "b0VIM 9.0")?;
    let unchanged = sfl(&["--format", "json"], dir);
    check(outcome(&unchanged)? == "passed", || show(&unchanged))?;
    let err = String::from_utf8_lossy(&unchanged.stderr);
    check(!err.contains("changed") && !err.contains("was added"), || {
        show(&unchanged)
    })?;
    std::fs::write(dir.join("tests/.fixtures/.expected"), "not ok\n")?;
    let second = sfl(&["--format", "json"], dir);
    check(outcome(&second)? == "failed", || show(&second))?;
    let err = String::from_utf8_lossy(&second.stderr);
    check(err.contains("tests/.fixtures/.expected changed"), || show(&second))
}

/// An edit of comments and whitespace alone: a trailing comment of the function every test
/// runs changed, one of its lines indented again, and a comment line outside every function
/// removed (which ran every test before). Only the failing tests run again (before, every test
/// that ran the function did), and the spectra equal a full run's.
/// `a_test_that_reads_the_sources_runs_again` shows such an edit is still one for a test that
/// reads the sources' text.
fn an_edit_of_comments_and_whitespace() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    edit(
        dir,
        "pub fn minmax(",
        "// The least and the most of three.\npub fn minmax(",
    )?;
    let first = sfl(&["--format", "json"], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    let report: serde_json::Value = serde_json::from_slice(&first.stdout)?;
    let failed = report["summary"]["failed"].as_u64().unwrap_or(0) as usize;
    edit(dir, "// The least and the most of three.\n", "")?;
    edit(dir, "    let mut most = in1;\n", "        let mut most  =  in1;\n")?;
    edit(dir, "most = in2; // u1", "most = in2; /* the first */")?;
    let sel = dir.join("target").join("selected.json");
    let out = sfl(&["--save-spectra", sel.to_str().unwrap()], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    check(
        selected(&out).is_some_and(|(n, total)| n == failed && n < total),
        || format!("{failed} failing\n{}", show(&out)),
    )?;
    same_as_full(dir, &sel, &[])
}

/// A test that checks the sources' text (here for a `TODO`; smol_str's runs `cargo fmt
/// --check`) runs none of the crate's code, so no coverage ties it to an edit: an edit inside a
/// function that it should fail on runs it again, and the selected run agrees with `cargo test`.
fn a_test_that_reads_the_sources_runs_again() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    crate::reliability::add_test(
        dir,
        "no_todo_left",
        "let src = std::fs::read_to_string(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/lib.rs\")).unwrap();\n        \
         assert!(!src.contains(\"TO\\x44O\"), \"a to-do is left in src/lib.rs\");",
    )?;
    let first = sfl(&["--format", "json"], dir);
    let todo = |out: &std::process::Output| outcome_of(out, "tests::no_todo_left");
    check(todo(&first)? == "passed", || show(&first))?;
    edit(
        dir,
        "    let mut least = in1;\n",
        "    // TODO: name these\n    let mut least = in1;\n",
    )?;
    let second = sfl(&["--format", "json"], dir);
    check(todo(&second)? == "failed", || show(&second))?;
    let err = String::from_utf8_lossy(&second.stderr);
    check(err.contains("ran none of the workspace's code"), || show(&second))
}

/// The edit before a run that should show the bug: a new test below the others, with a helper
/// only it calls. Before, it was a change outside every function and ran every test (slab's
/// tests/slab.rs, helper report); now the new test runs with the failing ones, every other row
/// is reused, and the spectra equal a full run's. A new `static` in the same place still runs
/// every test.
fn a_new_test_runs_alone() -> Result {
    let tmp = copy_fixture("workspace");
    let dir = tmp.path();
    // An integration test binary none of whose tests fail: the failing tests run again in the
    // others, and a build of only their binaries would leave the new test out (indexmap, where
    // its property tests run again after every edit: helper report).
    let file = dir.join("app/tests/extra.rs");
    std::fs::write(
        &file,
        "use fixture_ws_app::progress_bar;\n\n#[test]\nfn bar_empty() {\n    assert_eq!(progress_bar(0, 4, 2), \"[..]\");\n}\n",
    )?;
    let first = sfl(&["--no-doctests"], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    let text = std::fs::read_to_string(&file)?;
    std::fs::write(
        &file,
        format!(
            "{text}\n// The bar of a finished task.\nfn full_bar(width: usize) -> String {{\n    format!(\"[{{}}]\", \"#\".repeat(width))\n}}\n\n\
             #[test]\nfn bar_done() {{\n    assert_eq!(progress_bar(4, 4, 8), full_bar(7));\n}}\n"
        ),
    )?;
    let sel = dir.join("selected.json");
    let out = sfl(&["--no-doctests", "--save-spectra", sel.to_str().unwrap()], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let full = sfl(&["--no-doctests", "--rerun", "--format", "json"], dir);
    let report: serde_json::Value = serde_json::from_slice(&full.stdout)?;
    let failed = report["summary"]["failed"].as_u64().unwrap_or(0) as usize;
    check(
        report["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["name"] == "bar_done" && t["outcome"] == "failed"),
        || show(&full),
    )?;
    check(
        !String::from_utf8_lossy(&out.stderr).contains("Selecting every test")
            && selected(&out).is_some_and(|(n, total)| n < total && n <= failed),
        || format!("{failed} failing\n{}", show(&out)),
    )?;
    same_as_full(dir, &sel, &["--no-doctests"])?;
    let text = std::fs::read_to_string(&file)?;
    std::fs::write(&file, format!("{text}\nstatic LIMIT: u8 = 3;\n"))?;
    let out = sfl(&["--no-doctests"], dir);
    check(
        String::from_utf8_lossy(&out.stderr)
            .contains("Selecting every test: app/tests/extra.rs changed outside a function"),
        || show(&out),
    )
}

/// A proc macro runs inside the compiler: no test's coverage shows the tests that use its
/// expansion, so an edit of a proc-macro crate runs every test. Here the fault goes back into
/// `snake` after a green run: the unit test that calls `snake` fails, and so does the
/// integration test that uses the macro's expansion. Before, only the unit test ran again and
/// the integration test's passing row was reused (seen on async-trait, where an edit of the
/// expansion ran 0 of 7 tests and the run said every test passed while `cargo test` failed).
fn an_edit_of_a_proc_macro_runs_every_test() -> Result {
    let tmp = copy_fixture("proc-macro");
    let dir = tmp.path();
    let lib = dir.join("src/lib.rs");
    edit_file(&lib, "if i > 1 {", "if i > 0 {")?;
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(&lib, "if i > 0 {", "if i > 1 {")?;
    let out = sfl(&["--format", "json"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("src/lib.rs changed, code that runs while compiling"),
        || show(&out),
    )?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let failed: Vec<&str> = report["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["outcome"] == "failed")
        .filter_map(|t| t["name"].as_str())
        .collect();
    check(
        failed.contains(&"expands_at_compile_time") && failed.contains(&"tests::one_letter_words"),
        || format!("failing tests {failed:?}\n{}", show(&out)),
    )?;
    // The edited line is run by the failing unit test: listed with the changed lines failing
    // tests run, not again as unseen code that runs while compiling.
    let since = &report["changed_since_passed"];
    check(
        since["lines"][0]["line"] == 12 && since.get("uncovered_lines").is_none(),
        || format!("changed_since_passed {since}"),
    )?;
    // Green again, then an edit of the expansion alone, which no test runs: only the test that
    // uses the macro fails, and the report names the edited line as changed in code that runs
    // while compiling (before, it said the change was elsewhere: test code, a dependency, a
    // data file).
    edit_file(&lib, "if i > 1 {", "if i > 0 {")?;
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(
        &lib,
        "Literal::string(&snake(&name))",
        "Literal::string(&snake(&name).to_uppercase())",
    )?;
    let out = sfl(&["--format", "json"], dir);
    check(out.status.code() == Some(7), || show(&out))?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let changed = &report["changed_since_passed"]["uncovered_lines"];
    check(
        changed == &serde_json::json!([{"file": "src/lib.rs", "line": 32}]),
        || format!("uncovered_lines {changed}"),
    )?;
    let out = crate::support::report(&[], dir);
    let human = String::from_utf8_lossy(&out.stdout);
    check(
        human.contains("changed where no test's coverage shows (code that runs while compiling")
            && human
                .contains("src/lib.rs:32  | TokenTree::Literal(Literal::string(&snake(&name).to_uppercase())).into()"),
        || show(&out),
    )?;
    // The crate's integration test is not compiled into the macro: an edit of it is located in
    // its function as any test's is.
    edit_file(
        &dir.join("tests/expand.rs"),
        "fn expands_at_compile_time() {",
        "fn expands_at_compile_time() {\n    let _ = 0;",
    )?;
    let out = sfl(&[], dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        out.status.code() == Some(7) && stderr.contains("Selected") && !stderr.contains("Selecting every test"),
        || show(&out),
    )
}

/// "Changed since these tests last passed" after an edit of a line that has no counter of its
/// own (a macro call's argument on a line of its own: the compiler records the statement's
/// coverage on its first line) names the statement's line, which the failing test runs (before,
/// it listed the edit among the changes no coverage shows, as if it ran while compiling); and a
/// failure that follows a changed environment variable names the variable (before: "the change
/// is elsewhere").
fn changed_since_names_a_statements_line_and_the_environment() -> Result {
    let lib_rs = "pub fn greet(name: &str) -> String {\n\
                  \x20   let g = std::env::var(\"GREETING\").unwrap_or_default();\n\
                  \x20   let out = format!(\n\
                  \x20       \"{g}, {name}\"\n\
                  \x20   );\n\
                  \x20   out\n\
                  }\n\
                  #[cfg(test)]\nmod tests {\n\
                  \x20   #[test] fn hello() { assert_eq!(super::greet(\"you\"), \"hello, you\"); }\n\
                  \x20   #[test] fn empty() { assert!(!super::greet(\"\").is_empty()); }\n\
                  }\n";
    let tmp = crate::support::lib_crate("fixture-statement-line", "", lib_rs)?;
    let dir = tmp.path();
    let run = |greeting: &str, args: &[&str]| {
        crate::support::sfl_command(dir)
            .env("GREETING", greeting)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run("hello", &[]);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(&dir.join("src/lib.rs"), "\"{g}, {name}\"", "\"{g}; {name}\"")?;
    let out = run("hello", &["--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let since = &report["changed_since_passed"];
    check(
        since["lines"][0]["line"] == 3 && since.get("uncovered_lines").is_none(),
        || format!("changed_since_passed {since}\n{}", show(&out)),
    )?;
    edit_file(&dir.join("src/lib.rs"), "\"{g}; {name}\"", "\"{g}, {name}\"")?;
    let out = run("hello", &[]);
    check(out.status.code() == Some(3), || show(&out))?;
    let out = run("hi", &["--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let since = &report["changed_since_passed"];
    check(
        since["environment"] == serde_json::json!(["GREETING"]) && since["lines"] == serde_json::json!([]),
        || format!("changed_since_passed {since}\n{}", show(&out)),
    )?;
    let out = crate::support::report(&[], dir);
    let human = String::from_utf8_lossy(&out.stdout);
    check(
        human.contains("no changed line they run: the environment changed")
            && human.contains("environment variables changed: GREETING"),
        || show(&out),
    )
}

/// A `const` block inside a function is computed while compiling: its lines have no counter, so
/// a failing test that ran the function is not seen running them. After a green run, an edit
/// of one fails the tests that use the function, and the report names the edited line among
/// the changes no coverage shows (before, it said the change was elsewhere: test code, a
/// dependency, a data file; seen on shlex's `UNQUOTED_OK_MASK`).
fn a_changed_const_value_is_named() -> Result {
    let lib_rs = "pub fn small(n: u32) -> bool {\n\
                  \x20   const LIMIT: u32 = {\n\
                  \x20       let base = 10;\n\
                  \x20       base * 2\n\
                  \x20   };\n\
                  \x20   n < LIMIT\n\
                  }\n\
                  #[cfg(test)]\nmod tests {\n\
                  \x20   #[test] fn nineteen() { assert!(super::small(19)); }\n\
                  \x20   #[test] fn twenty() { assert!(!super::small(20)); }\n\
                  }\n";
    let tmp = crate::support::lib_crate("fixture-const-value", "", lib_rs)?;
    let dir = tmp.path();
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(&dir.join("src/lib.rs"), "let base = 10;", "let base = 5;")?;
    let out = sfl(&["--format", "json"], dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let uncovered = &report["changed_since_passed"]["uncovered_lines"];
    check(
        uncovered == &serde_json::json!([{"file": "src/lib.rs", "line": 3}]),
        || format!("uncovered_lines {uncovered}\n{}", show(&out)),
    )?;
    let out = crate::support::report(&[], dir);
    let human = String::from_utf8_lossy(&out.stdout);
    check(
        human.contains("the change is where no coverage shows") && human.contains("src/lib.rs:3  | let base = 5;"),
        || show(&out),
    )?;
    // A table at module level, outside every function (serde's digit pairs): named too.
    edit_file(&dir.join("src/lib.rs"), "let base = 5;", "let base = 10;")?;
    std::fs::write(
        dir.join("src/lib.rs"),
        std::fs::read_to_string(dir.join("src/lib.rs"))?.replace("n < LIMIT\n", "n < LIMIT && n != TABLE[0]\n")
            + "const TABLE: [u32; 2] = [\n    7,\n    8,\n];\n",
    )?;
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(&dir.join("src/lib.rs"), "    7,\n", "    19,\n")?;
    let out = sfl(&["--format", "json"], dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let uncovered = &report["changed_since_passed"]["uncovered_lines"];
    check(
        uncovered == &serde_json::json!([{"file": "src/lib.rs", "line": 14}]),
        || format!("uncovered_lines {uncovered}\n{}", show(&out)),
    )
}

/// A module of constants only has no function, so no coverage map holds a line of it, and a
/// data file the code includes is no Rust at all. After a green run, an edit of either fails a
/// test, and the report names it (before, both said the change was elsewhere: test code, a
/// dependency, a data file; found on a crate whose build script read a data file and on
/// unicode-general-category's tables).
fn a_change_no_coverage_map_holds_is_named() -> Result {
    let lib_rs = "mod data;\n\
                  pub fn small(n: u32) -> bool {\n\
                  \x20   n < data::LIMIT && n != include_str!(\"skip.txt\").trim().parse::<u32>().unwrap()\n\
                  }\n\
                  #[cfg(test)]\nmod tests {\n\
                  \x20   #[test] fn nineteen() { assert!(super::small(19)); }\n\
                  \x20   #[test] fn twelve() { assert!(super::small(12)); }\n\
                  }\n";
    let tmp = crate::support::lib_crate("fixture-no-map", "", lib_rs)?;
    let dir = tmp.path();
    std::fs::write(dir.join("src/data.rs"), "pub const LIMIT: u32 =\n    20;\n")?;
    std::fs::write(dir.join("src/skip.txt"), "7\n")?;
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    edit_file(&dir.join("src/data.rs"), "    20;", "    19;")?;
    let out = sfl(&["--format", "json"], dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let since = &report["changed_since_passed"];
    check(
        since["uncovered_lines"] == serde_json::json!([{"file": "src/data.rs", "line": 2}])
            && since.get("files").is_none(),
        || format!("changed_since_passed {since}\n{}", show(&out)),
    )?;
    edit_file(&dir.join("src/data.rs"), "    19;", "    20;")?;
    let out = sfl(&[], dir);
    check(out.status.code() == Some(3), || show(&out))?;
    std::fs::write(dir.join("src/skip.txt"), "12\n")?;
    let out = sfl(&["--format", "json"], dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let since = &report["changed_since_passed"];
    check(
        since["files"] == serde_json::json!(["src/skip.txt"])
            && since["tests"].as_array().is_some_and(|t| t.len() == 1),
        || format!("changed_since_passed {since}\n{}", show(&out)),
    )?;
    let out = crate::support::report(&[], dir);
    let human = String::from_utf8_lossy(&out.stdout);
    check(
        human.contains("the change is where no coverage shows") && human.contains("other files changed: src/skip.txt"),
        || show(&out),
    )
}

/// The tests' binaries a run in `dir` with `args` reported, from its JSON report.
fn binaries_reported(dir: &Path, args: &[&str]) -> Result<std::collections::BTreeSet<String>> {
    let out = sfl(&[&["--format", "json"][..], args].concat(), dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    Ok(report["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["binary"].as_str().map(str::to_string))
        .collect())
}

/// In a workspace, the flags alone do not say which package a run tests: `cargo test` in a
/// member's directory (or with its `--manifest-path`) tests that member. A run in `app` after
/// one in `core/src` must not reuse core's rows as if the selection were the same, and a run
/// with `--manifest-path core/Cargo.toml` after it must not narrow the build to app's targets.
/// Before, the run in app reported core's 5 tests too (reused), and the next failed to build:
/// "no test target named `integration` in default-run packages" (exit 101).
fn another_directory_another_package() -> Result {
    let tmp = copy_fixture("workspace");
    let root = tmp.path();
    let (core, app) = ("fixture-ws-core", ["fixture-ws-app", "fixture-ws-app::integration"]);
    let ran = binaries_reported(&root.join("core/src"), &[])?;
    check(ran.iter().eq([core]), || format!("in core/src: {ran:?}"))?;
    let ran = binaries_reported(&root.join("app"), &[])?;
    check(ran.iter().eq(app), || format!("in app: {ran:?}"))?;
    let ran = binaries_reported(root, &["--manifest-path", "core/Cargo.toml"])?;
    check(ran.iter().eq([core]), || format!("with core's manifest: {ran:?}"))
}

/// A workspace whose `app` enables a feature of `core` that gates one of core's tests: under
/// `--workspace` cargo builds core with it. After an edit only one of core's tests runs again, and the
/// build of only what runs again must keep the workspace's packages, or core would be built
/// without the feature and its gated test would vanish from the run. A member with no code for
/// this target (no coverage map, no doctests) does not make that run start over.
fn features_the_workspace_gives() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"core\", \"app\", \"wasm\"]\nresolver = \"2\"\n",
    );
    let package = |name: &str| format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n");
    write(
        "core/Cargo.toml",
        &format!("{}[features]\nwide = []\n", package("feat-core")),
    );
    write(
        "core/src/lib.rs",
        "pub fn double(x: u32) -> u32 {\n    x * 2\n}\n\npub fn triple(x: u32) -> u32 {\n    x * 3\n}\n\n#[cfg(feature = \"wide\")]\npub fn widen(x: u32) -> u64 {\n    u64::from(double(x))\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        assert_eq!(super::double(2), 4);\n    }\n\n    #[test]\n    fn triples() {\n        assert_eq!(super::triple(2), 6);\n    }\n\n    #[cfg(feature = \"wide\")]\n    #[test]\n    fn widens() {\n        assert_eq!(super::widen(3), 6);\n    }\n}\n",
    );
    write(
        "app/Cargo.toml",
        &format!(
            "{}[dependencies]\nfeat-core = {{ path = \"../core\", features = [\"wide\"] }}\n",
            package("feat-app")
        ),
    );
    write(
        "app/src/lib.rs",
        "pub fn go() -> u64 {\n    feat_core::widen(1)\n}\n\n#[test]\nfn goes() {\n    assert_eq!(go(), 2);\n}\n",
    );
    // A member with no code for this target: its test binary has no coverage map, and its
    // library no doctests (a suite of no executable).
    write("wasm/Cargo.toml", &package("feat-wasm"));
    write(
        "wasm/src/lib.rs",
        "#![cfg(target_arch = \"wasm32\")]\npub fn only_there() {}\n",
    );
    let args = ["--workspace"];
    let out = sfl(&args, dir);
    check(
        out.status.code() == Some(3) && String::from_utf8_lossy(&out.stdout).contains("all 4 tests passed"),
        || show(&out),
    )?;
    // Only core's `triples` runs `triple`: only core's library tests are built again.
    edit_file(&dir.join("core/src/lib.rs"), "x * 3", "x + x + x")?;
    let out = sfl(&args, dir);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    check(
        out.status.code() == Some(3) && stdout.contains("all 4 tests passed") && stderr.contains("Selected 1 of 4"),
        || format!("the run after the edit lost the feature-gated test:\n{}", show(&out)),
    )
}

/// Two workspaces built in one target directory outside both (`CARGO_TARGET_DIR`, a global
/// `build.target-dir`): each keeps its own run there, so running one does not make the other's
/// next run start over, and `report` in each ranks its own tests.
fn workspaces_sharing_a_target_directory() -> Result {
    let (minmax, two_files) = (copy_fixture("minmax"), copy_fixture("two-files"));
    let target = tempfile::tempdir()?;
    let run = |dir: &Path, args: &[&str]| {
        crate::support::sfl_command(dir)
            .args(args)
            .env("CARGO_TARGET_DIR", target.path())
            .output()
            .unwrap()
    };
    for dir in [minmax.path(), two_files.path()] {
        let out = run(dir, &["--no-doctests"]);
        check(out.status.code() == Some(0), || show(&out))?;
    }
    // minmax again, after two-files ran: nothing changed, so only its failing tests run again
    // (as always) and nothing is rebuilt; its passing tests' rows are reused.
    let out = run(minmax.path(), &["--no-doctests"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    check(
        out.status.code() == Some(0) && stdout.contains("3 ran, 2 reused") && !stderr.contains("Rebuilding"),
        || format!("minmax's second run did not reuse its first:\n{}", show(&out)),
    )?;
    for (dir, own, other) in [
        (minmax.path(), "minmax (function #1)", "clamp_low"),
        (two_files.path(), "clamp_low", "minmax"),
    ] {
        let out = run(dir, &["report", "--format", "short"]);
        let text = String::from_utf8_lossy(&out.stdout);
        check(text.contains(own) && !text.contains(other), || {
            format!("report in {} does not rank its own run:\n{}", dir.display(), show(&out))
        })?;
    }
    let projects = std::fs::read_dir(target.path().join("sfl"))?
        .flatten()
        .filter(|e| e.path().join("spectra.json").is_file())
        .count();
    check(projects == 2, || {
        format!("{projects} runs kept under the shared target directory, not 2")
    })
}

/// A green run of minmax (the fault fixed), then the fault put back: the tests that fail
/// now passed then, and the line the edit changed is shown as changed since they last passed,
/// in the human and JSON reports and by `explain`, also when the saved spectra are reported
/// again; a second failing run keeps the green run to compare with.
/// A test's own assertion edited since it passed (an assertion failure, no library frame):
/// no ranking holds test code, so the section names that line apart, in JSON too.
fn changed_since_names_the_failing_tests_own_lines() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    edit(dir, "most = in2; // FAULT", "least = in2; // FIXED")?;
    let green = sfl(&[], dir);
    check(green.status.code() == Some(3), || show(&green))?;
    edit(
        dir,
        "        check(0, 1, 2);",
        "        check(0, 1, 2);\n        assert_eq!(minmax(0, 1, 2), (0, 3));",
    )?;
    edit(dir, "use super::minmax;", "use super::minmax;\n")?;
    let run = sfl(&["--color", "never", "--rerun"], dir);
    let human = String::from_utf8_lossy(&run.stdout);
    check(
        run.status.code() == Some(0)
            && human.contains("no changed line they run outside their own code")
            && human.contains("changed in the failing tests' own code (no ranking holds test code):")
            && human.contains("src/lib.rs:57  | assert_eq!(minmax(0, 1, 2), (0, 3));"),
        || show(&run),
    )?;
    let json = sfl(&["report", "--format", "json"], dir);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout)?;
    check(
        v["changed_since_passed"]["test_lines"] == serde_json::json!([{"file": "src/lib.rs", "line": 57}]),
        || format!("{:#}", v["changed_since_passed"]),
    )
}

fn changed_since_last_passed() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let (fault, fixed) = ("most = in2; // FAULT", "least = in2; // FIXED");
    edit(dir, fault, fixed)?;
    // Exit code 3: no test failed.
    let green = sfl(&[], dir);
    check(green.status.code() == Some(3), || show(&green))?;
    edit(dir, fixed, fault)?;
    let run = sfl(&["--color", "never"], dir);
    check(run.status.code() == Some(0), || show(&run))?;
    let human = String::from_utf8_lossy(&run.stdout);
    check(
        human.contains("Changed since these tests last passed (3 failing tests, passing in the run started")
            && human.contains("1 changed line they run")
            && human.contains("  src/lib.rs:16  rank 1 by stack-ochiai, run by 3 of 3  | most = in2;"),
        || show(&run),
    )?;
    for _ in 0..2 {
        let json = sfl(&["report", "--format", "json"], dir);
        let v: serde_json::Value = serde_json::from_slice(&json.stdout)?;
        let since = &v["changed_since_passed"];
        check(
            since["lines"].as_array().map(Vec::len) == Some(1)
                && since["lines"][0]["line"] == 16
                && since["tests"].as_array().map(Vec::len) == Some(3),
            || format!("{since:#}"),
        )?;
        let explain = sfl(&["explain", "src/lib.rs:16"], dir);
        let text = String::from_utf8_lossy(&explain.stdout);
        check(
            text.contains(
                "changed since the run they last passed in, and run by 3 tests that passed then and fail now",
            ),
            || show(&explain),
        )?;
        // A line the edit did not touch says nothing of it.
        let other = sfl(&["explain", "src/lib.rs:15"], dir);
        check(
            !String::from_utf8_lossy(&other.stdout).contains("changed since the run they last passed in"),
            || show(&other),
        )?;
        // Another run with the fault still there compares with the same green run.
        let again = sfl(&["--color", "never"], dir);
        check(
            String::from_utf8_lossy(&again.stdout).contains("Changed since these tests last passed"),
            || show(&again),
        )?;
    }
    Ok(())
}

/// A crate with a test that fails in every run (it needs a variable no one sets): no run is
/// green, and the run before a fault made another test fail is what that test is compared
/// with, on that run and the next; once the fault is fixed, that run is, for the next fault.
fn changed_since_last_passed_where_a_test_always_fails() -> Result {
    let tmp = lib_crate(
        "chronic",
        "",
        r#"pub fn double(x: i32) -> i32 {
    x * 2
}

pub fn triple(x: i32) -> i32 {
    x * 3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needs_a_variable() {
        assert!(double(1) == 2 && std::env::var("SFL_E2E_NEVER_SET").is_ok());
    }

    #[test]
    fn doubles() {
        assert_eq!(double(2), 4);
    }

    #[test]
    fn triples() {
        assert_eq!(triple(2), 6);
    }
}
"#,
    )?;
    let dir = tmp.path();
    let changed = |out: &std::process::Output, line: &str| {
        let text = String::from_utf8_lossy(&out.stdout);
        check(
            text.contains("Changed since these tests last passed (1 failing test, passing in the run started")
                && text.contains(line),
            || show(out),
        )
    };
    let first = sfl(&[], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    edit(dir, "x * 2", "x * 2 + 1")?;
    for _ in 0..2 {
        changed(&sfl(&["--color", "never"], dir), "src/lib.rs:2  rank 1")?;
    }
    edit(dir, "x * 2 + 1", "x * 2")?;
    let fixed = sfl(&["--color", "never"], dir);
    check(
        !String::from_utf8_lossy(&fixed.stdout).contains("Changed since"),
        || show(&fixed),
    )?;
    edit(dir, "x * 3", "x * 3 - 1")?;
    changed(&sfl(&["--color", "never"], dir), "src/lib.rs:6  rank 1")
}

/// The "Selected N of M" line's N and M, if the run has one.
fn selected(out: &std::process::Output) -> Option<(usize, usize)> {
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().map(str::trim).find_map(|l| l.strip_prefix("Selected "))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    Some((words.first()?.parse().ok()?, words.get(2)?.parse().ok()?))
}

fn edit(dir: &Path, from: &str, to: &str) -> Result {
    edit_file(&dir.join("src/lib.rs"), from, to)
}

/// The selected run saved at `selected` against a full run of the same sources (with `args`).
fn same_as_full(dir: &Path, selected: &Path, args: &[&str]) -> Result {
    // In the target dir: a file of the package would be an edit to the next run.
    let full = dir.join("target").join("full.json");
    let mut all = vec!["--rerun", "--save-spectra", full.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = sfl(&all, dir);
    check(matches!(out.status.code(), Some(0 | 3)), || show(&out))?;
    let (a, b) = (
        cargo_sfl::spectra::Spectra::load(selected)?,
        cargo_sfl::spectra::Spectra::load(&full)?,
    );
    let differences = cargo_sfl::select::differences(&a, &b);
    check(differences.is_empty(), || {
        format!("selected and full runs differ: {differences:#?}")
    })
}

/// A copy of `fixture` after a first run with `args` (which must find failing tests).
fn after_a_first_run(fixture: &str, args: &[&str]) -> Result<tempfile::TempDir> {
    let tmp = copy_fixture(fixture);
    let first = sfl(args, tmp.path());
    check(first.status.code() == Some(0), || show(&first))?;
    Ok(tmp)
}

/// doctest-2021: unit tests `percent_in_range` and `halves`, doctests of `percent` (failing),
/// `half`, `half_of_even` (should_panic), `double`.
fn an_edit_reruns_only_the_tests_that_ran_it() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let first = sfl(&[], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    check(selected(&first).is_none(), || {
        format!("a first run selects nothing: {}", show(&first))
    })?;

    // A statement added to `half`: the tests that ran it run again (the `halves` unit test and
    // `half`'s doctest), and the failing doctest; the lines below it move one down.
    edit(
        dir,
        "    x / 2\n}\n\n/// Half of an even",
        "    let x = x;\n    x / 2\n}\n\n/// Half of an even",
    )?;
    let sel = dir.join("selected.json");
    let second = sfl(&["--save-spectra", sel.to_str().unwrap()], dir);
    check(second.status.code() == Some(0), || show(&second))?;
    check(selected(&second) == Some((3, 6)), || {
        format!("3 of 6 tests to run: {}", show(&second))
    })?;
    same_as_full(dir, &sel, &[])?;

    // The fault fixed, then an edit of a unit test that no doctest ran: every doctest is
    // reused, so none is built.
    edit(dir, "return x; // FAULT: should return top", "return top;")?;
    let fixed = sfl(&[], dir);
    check(fixed.status.code() == Some(3), || {
        format!("no failing test: {}", show(&fixed))
    })?;
    // Nothing changed since and every test passed: nothing to build, and no word of building.
    let idle = sfl(&[], dir);
    check(
        idle.status.code() == Some(3) && !String::from_utf8_lossy(&idle.stderr).contains("Building"),
        || format!("nothing to build: {}", show(&idle)),
    )?;
    edit(
        dir,
        "assert_eq!(percent(40), 40);",
        "let p = percent(40);\n        assert_eq!(p, 40);",
    )?;
    let third = sfl(&["-v", "--save-spectra", sel.to_str().unwrap()], dir);
    check(third.status.code() == Some(3), || show(&third))?;
    // The ignored doctest is counted apart, as the report counts it.
    let err = String::from_utf8_lossy(&third.stderr);
    check(
        selected(&third) == Some((1, 6)) && err.contains("; 1 more recorded without running (ignored"),
        || format!("1 of 6 tests to run: {}", show(&third)),
    )?;
    check(!err.contains("the doctests build while the other tests run"), || {
        format!("the doctests were built though none runs: {}", show(&third))
    })?;
    same_as_full(dir, &sel, &[])?;

    // A unit test renamed, another deleted: the renamed one runs as a new test, nothing else
    // (no code calls a test, so its signature reaches no caller).
    edit(dir, "fn percent_in_range()", "fn percent_stays_in_range()")?;
    edit(
        dir,
        "    #[test]\n    fn halves() {\n        assert_eq!(half(6), 3);\n        assert_eq!(half_of_even(4), 2);\n    }\n",
        "",
    )?;
    // The green run selects one test of `total`, none for every test, and equals a full run.
    let one_of = |total: usize, what: &str| -> Result {
        let out = sfl(&["-v", "--save-spectra", sel.to_str().unwrap()], dir);
        let err = String::from_utf8_lossy(&out.stderr);
        check(
            out.status.code() == Some(3) && selected(&out) == Some((1, total)) && !err.contains("every test"),
            || format!("{what}: {}", show(&out)),
        )?;
        same_as_full(dir, &sel, &[])
    };
    one_of(5, "the renamed test alone runs")?;

    // A new integration test file: a target no other sees, so its test alone runs.
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("tests/added.rs"),
        "#[test]\nfn doubles() {\n    assert_eq!(fixture_doctest_2021::double(2), 4);\n}\n",
    )?;
    one_of(6, "the new file's test alone runs")?;

    // The file removed again: its test goes with it, and nothing else runs.
    std::fs::remove_file(dir.join("tests/added.rs"))?;
    let out = sfl(&["--save-spectra", sel.to_str().unwrap()], dir);
    let err = String::from_utf8_lossy(&out.stderr);
    check(
        out.status.code() == Some(3)
            && selected(&out) == Some((0, 5))
            && err.contains("tests/added.rs was removed: 1 test of the last run went with it"),
        || format!("the removed file's test is gone, no other runs: {}", show(&out)),
    )?;
    same_as_full(dir, &sel, &[])
}

/// A comment added between two functions runs every test, and says why; `--rerun` runs every
/// test and says nothing; `--reuse-spectra FILE` starts from that file.
fn outside_functions_or_rerun() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let base = dir.join("base.json");
    let first = sfl(&["--save-spectra", base.to_str().unwrap()], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    edit(dir, "/// Half of `x`", "const _LIMIT: u8 = 1;\n/// Half of `x`")?;
    let out = sfl(&[], dir);
    let err = String::from_utf8_lossy(&out.stderr);
    check(
        err.contains("Selecting every test: src/lib.rs changed outside a function (line 16)"),
        || show(&out),
    )?;
    let again = sfl(&[], dir);
    check(selected(&again) == Some((1, 6)), || {
        format!("only the failing doctest: {}", show(&again))
    })?;
    let rerun = sfl(&["--rerun"], dir);
    check(
        selected(&rerun).is_none() && !String::from_utf8_lossy(&rerun.stderr).contains("Selecting"),
        || show(&rerun),
    )?;
    // From the file saved before the comment: every test again, for the same reason.
    let from_base = sfl(&["--reuse-spectra", base.to_str().unwrap()], dir);
    check(
        String::from_utf8_lossy(&from_base.stderr).contains("Selecting every test: src/lib.rs changed outside"),
        || show(&from_base),
    )?;
    let missing = sfl(&["--reuse-spectra", "no-such.json"], dir);
    check(missing.status.code() == Some(2), || show(&missing))
}

/// The workspace fixture (core and app, app's unit and integration tests): a second run builds
/// only the targets of the tests that run again (the failing ones, and those that ran an edited
/// function), and equals a full run. core's library is `test = false`: its unit tests run in
/// neither (`--lib` in a narrowed build of several packages builds them: helper report).
fn only_the_targets_that_run_again_are_built() -> Result {
    let tmp = copy_fixture("workspace");
    let dir = tmp.path();
    let manifest = dir.join("core/Cargo.toml");
    let text = std::fs::read_to_string(&manifest)?;
    std::fs::write(&manifest, format!("{text}\n[lib]\ntest = false\n"))?;
    let first = sfl(&["--no-doctests"], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    let sel = dir.join("selected.json");
    let args = ["-v", "--no-doctests", "--save-spectra", sel.to_str().unwrap()];
    // A selected run that built only some targets.
    let narrowed = || -> Result {
        let out = sfl(&args, dir);
        let err = String::from_utf8_lossy(&out.stderr);
        check(
            err.contains("building only what runs again: ") && selected(&out).is_some(),
            || show(&out),
        )
    };
    // Nothing changed: only the failing tests run, from their own binaries.
    narrowed()?;
    edit_file(
        &dir.join("app/src/lib.rs"),
        "    count_vowels(s) * s.len()",
        "    let n = s.len();\n    count_vowels(s) * n",
    )?;
    narrowed()?;
    same_as_full(dir, &sel, &["--no-doctests"])?;
    edit_file(
        &dir.join("core/src/lib.rs"),
        "    s.chars().rev().collect()",
        "    let r = s.chars().rev();\n    r.collect()",
    )?;
    let out = sfl(&args, dir);
    check(selected(&out).is_some(), || show(&out))?;
    same_as_full(dir, &sel, &["--no-doctests"])
}

/// self-dev-dep: the package's dev-dependency pulls another version of it, so cargo calls its
/// bare name ambiguous. A run after an edit builds only its targets (by package ID), and `-p`
/// with the bare name works too.
fn another_version_of_the_package() -> Result {
    let tmp = after_a_first_run("self-dev-dep", &[])?;
    let dir = tmp.path();
    edit(dir, "    let mut count = 1;", "    let mut count: u32 = 1;")?;
    let sel = dir.join("selected.json");
    let second = sfl(&["-v", "--save-spectra", sel.to_str().unwrap()], dir);
    check(second.status.code() == Some(0), || show(&second))?;
    check(
        String::from_utf8_lossy(&second.stderr).contains("building only what runs again")
            && selected(&second).is_some_and(|(run, all)| run < all),
        || show(&second),
    )?;
    same_as_full(dir, &sel, &[])?;
    let named = sfl(&["-p", "fixture-selfdep", "--rerun"], dir);
    check(named.status.code() == Some(0), || show(&named))
}

/// A run whose narrowed build leaves out the untested binary `src/bin/tool.rs`, with no row
/// reused (the filter keeps only tests of the edited function): its lines are still units,
/// as in a full run.
fn lines_of_targets_not_rebuilt_are_kept() -> Result {
    let tmp = after_a_first_run("self-dev-dep", &["clamp"])?;
    let dir = tmp.path();
    edit(
        dir,
        "        return p; // FAULT",
        "        let p = p;\n        return p; // FAULT",
    )?;
    let sel = dir.join("selected.json");
    let second = sfl(&["-v", "clamp", "--save-spectra", sel.to_str().unwrap()], dir);
    check(
        second.status.code() == Some(0) && selected(&second) == Some((1, 1)),
        || show(&second),
    )?;
    let spectra = cargo_sfl::spectra::Spectra::load(&sel)?;
    check(spectra.units.iter().any(|u| u.file == "src/bin/tool.rs"), || {
        format!("src/bin/tool.rs has no unit: {}", show(&second))
    })?;
    same_as_full(dir, &sel, &["clamp"])
}

/// Property tests (their binary links the fixture's quickcheck stand-in) draw new inputs on
/// every run: after an edit they did not reach, they run again, marked, and the status line says
/// so; the other tests that did not reach the edit are reused. Once two runs of one cover the
/// same lines (`parity_of_twice_any_number` always takes the even branch) it is reused like any
/// other test; one whose lines differ (`parity_of_any_number`, odd or even) stays marked for good.
fn a_property_test_runs_again_after_every_edit() -> Result {
    let tmp = after_a_first_run("self-dev-dep", &[])?;
    let dir = tmp.path();
    edit(dir, "    let mut count = 1;", "    let mut count: u32 = 1;")?;
    // In the target directory: a new file of the package would run every test.
    let sel = dir.join("target/selected.json");
    let second = sfl(&["--save-spectra", sel.to_str().unwrap()], dir);
    check(second.status.code() == Some(0), || show(&second))?;
    check(
        String::from_utf8_lossy(&second.stderr).contains("(2 of them may draw random inputs or varied between runs"),
        || show(&second),
    )?;
    let spectra = cargo_sfl::spectra::Spectra::load(&sel)?;
    let test = |spectra: &cargo_sfl::spectra::Spectra, name: &str| {
        spectra
            .tests
            .iter()
            .find(|t| t.name == name)
            .cloned()
            .ok_or_else(|| format!("no test {name}"))
    };
    let property = test(&spectra, "parity_of_any_number")?;
    let twice = test(&spectra, "parity_of_twice_any_number")?;
    check(!property.reused && !twice.reused, || format!("{property:?}\n{twice:?}"))?;
    // The same branch in both runs: its row is a fact now. The other took the same branch
    // twice (then it is not marked either) or not (then it says why, for good).
    check(twice.volatile.is_none(), || format!("{twice:?}"))?;
    check(
        property
            .volatile
            .as_deref()
            .is_none_or(|v| v.contains("coverage of unchanged code changed")),
        || format!("{property:?}"),
    )?;
    let other = test(&spectra, "tests::parity_of_two")?;
    check(other.reused && other.volatile.is_none(), || format!("{other:?}"))?;
    edit(dir, "    let mut count: u32 = 1;", "    let mut count: u32 = 1u32;")?;
    let third_sel = dir.join("target/third.json");
    let third = sfl(&["--save-spectra", third_sel.to_str().unwrap()], dir);
    check(third.status.code() == Some(0), || show(&third))?;
    let spectra = cargo_sfl::spectra::Spectra::load(&third_sel)?;
    let twice = test(&spectra, "parity_of_twice_any_number")?;
    check(twice.reused && twice.volatile.is_none(), || {
        format!("{twice:?}\n{}", show(&third))
    })?;
    let property = test(&spectra, "parity_of_any_number")?;
    check(property.reused == property.volatile.is_none(), || {
        format!("{property:?}")
    })?;
    same_as_full(dir, &third_sel, &[])
}

/// A crate that commits no Cargo.lock: the first run's build writes one, and the second run
/// compares with the lock file that build used instead of running every test.
fn a_crate_without_a_lock_file() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    std::fs::remove_file(dir.join("Cargo.lock"))?;
    let first = sfl(&[], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    let second = sfl(&[], dir);
    check(
        !String::from_utf8_lossy(&second.stderr).contains("Selecting every test") && selected(&second).is_some(),
        || show(&second),
    )
}

/// A target directory of another build inside the package (tagged `CACHEDIR.TAG` as cargo
/// tags them, and no `.gitignore`, as in a crate unpacked from the registry): what that build
/// writes is no edit of the package's, so the next run selects tests instead of running every
/// test for a file added.
fn another_builds_target_directory() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let other = dir.join("other-target");
    std::fs::create_dir_all(other.join("debug"))?;
    std::fs::write(
        other.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by cargo.\n",
    )?;
    std::fs::write(other.join("debug/old.rlib"), "built before")?;
    let first = sfl(&[], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    std::fs::write(other.join("debug/new.rlib"), "built since")?;
    let second = sfl(&[], dir);
    check(
        !String::from_utf8_lossy(&second.stderr).contains("Selecting every test") && selected(&second).is_some(),
        || show(&second),
    )
}

/// A program a test starts (`sh`) gets the whole environment and reads it unseen: the test
/// ran again after a change of a variable only the program read (it had stayed passing, reused,
/// while `cargo test` failed it).
fn a_test_that_starts_a_program_reads_every_variable() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("tests/child.rs"),
        "#[test]\nfn child_sees_probe() {\n    let status = std::process::Command::new(\"sh\")\n        .args([\"-c\", \"test \\\"$SFL_E2E_PROBE\\\" = yes\"])\n        .status()\n        .unwrap();\n    assert!(status.success());\n}\n",
    )?;
    let run = |probe: &str| {
        crate::support::sfl_command(dir)
            .args(["--format", "json"])
            .env("SFL_E2E_PROBE", probe)
            .output()
            .unwrap()
    };
    let outcome = |out: &std::process::Output| -> Result<String> {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        Ok(crate::support::test_named(&v, "child_sees_probe")["outcome"].to_string())
    };
    let first = run("yes");
    check(outcome(&first)? == "\"passed\"", || show(&first))?;
    let second = run("no");
    check(outcome(&second)? == "\"failed\"", || show(&second))
}

/// self-dev-dep's `tests::reads_its_mode` reads `SELFDEP_MODE`: a variable no test reads may
/// change without a test running again; a change of `SELFDEP_MODE` runs that test again; a
/// change of a variable builds read (`CC`) runs every test. The failing tests run every time, the
/// property tests until two runs of one agree.
fn a_change_of_the_environment() -> Result {
    let tmp = copy_fixture("self-dev-dep");
    let dir = tmp.path();
    let run = |mode: &str, unread: &str, cc: &str| {
        crate::support::sfl_command(dir)
            .env("SELFDEP_MODE", mode)
            .env("SELFDEP_UNREAD", unread)
            .env("CC", cc)
            .output()
            .unwrap()
    };
    let first = run("a", "1", "cc");
    check(first.status.code() == Some(0), || show(&first))?;
    let unread = run("a", "2", "cc");
    check(
        selected(&unread) == Some((4, 9))
            && String::from_utf8_lossy(&unread.stderr)
                .contains("SELFDEP_UNREAD changed in the environment: no test read it, so none runs again for it"),
        || show(&unread),
    )?;
    let read = run("b", "2", "cc");
    // `parity_of_twice_any_number` ran twice to the same lines: reused now; `parity_of_any_number`
    // runs again when its two runs took different branches of `parity`.
    let sampled =
        String::from_utf8_lossy(&read.stderr).contains("(1 of them may draw random inputs or varied between runs");
    check(selected(&read) == Some((3 + usize::from(sampled), 9)), || show(&read))?;
    let build = run("b", "2", "gcc");
    check(
        String::from_utf8_lossy(&build.stderr)
            .contains("Selecting every test: the environment variable CC changed (builds or every test read it)"),
        || show(&build),
    )
}

/// A function in `.init_array` (as `#[ctor]` makes one: logging set up from `RUST_LOG`) reads
/// `INIT_V` before `main`, once per process: every test of the process depends on it. Kept
/// processes ran it for their first test only, so only that test recorded the read, and after a
/// change of `INIT_V` the others kept their old rows (`cargo test` failed them). Now each test
/// of a kept process records it, and the selected run agrees with `--rerun`.
fn a_variable_read_before_main() -> Result {
    let lib_rs = "use std::sync::atomic::{AtomicUsize, Ordering};\n\
                  pub static LEN: AtomicUsize = AtomicUsize::new(0);\n\
                  #[used]\n\
                  #[link_section = \".init_array\"]\n\
                  static INIT: extern \"C\" fn() = init;\n\
                  extern \"C\" fn init() {\n\
                  \x20   LEN.store(std::env::var(\"INIT_V\").map_or(5, |v| v.len()), Ordering::SeqCst);\n\
                  }\n\
                  pub fn len() -> usize {\n    LEN.load(Ordering::SeqCst)\n}\n\
                  pub fn half(x: u32) -> u32 {\n    x / 3\n}\n\
                  #[cfg(test)]\n\
                  mod tests {\n\
                  \x20   #[test] fn a_len() { assert_eq!(super::len(), 5); }\n\
                  \x20   #[test] fn b_len() { assert_eq!(super::len(), 5); }\n\
                  \x20   #[test] fn c_len() { assert_eq!(super::len(), 5); }\n\
                  \x20   #[test] fn halves() { assert_eq!(super::half(4), 2); }\n\
                  }\n";
    let tmp = lib_crate("init-env", "", lib_rs)?;
    let dir = tmp.path();
    let run = |value: Option<&str>, args: &[&str]| {
        let mut cmd = crate::support::sfl_command(dir);
        cmd.args(["-j", "1", "--format", "json"]).args(args);
        match value {
            Some(v) => cmd.env("INIT_V", v),
            None => cmd.env_remove("INIT_V"),
        };
        cmd.output().unwrap()
    };
    let failed = |out: &std::process::Output| -> Result<Vec<String>> {
        let report: serde_json::Value =
            serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}\n{}", show(out)))?;
        Ok(report["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["outcome"] == "failed")
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect())
    };
    let first = run(None, &[]);
    check(failed(&first)? == ["tests::halves"], || show(&first))?;
    let spectra = crate::reliability::spectra(dir)?;
    let read_by: Vec<&str> = spectra["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| {
            t["env_reads"]
                .as_array()
                .is_some_and(|r| r.iter().any(|v| v == "INIT_V"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    check(read_by.len() == 4, || {
        format!("tests that read INIT_V: {read_by:?}\n{}", show(&first))
    })?;
    let selected_run = run(Some("abc"), &[]);
    let everything = ["tests::a_len", "tests::b_len", "tests::c_len", "tests::halves"];
    check(failed(&selected_run)? == everything, || show(&selected_run))?;
    let full = run(Some("abc"), &["--rerun"]);
    check(failed(&full)? == everything, || show(&full))
}

/// An integration test runs the package's binary with `Command::env_clear` (assert_cmd users
/// do, to keep a developer's configuration out): the binary got no `LLVM_PROFILE_FILE`, wrote
/// `default_….profraw` into the package and its coverage was lost, so an edit of `main.rs`
/// left the test's old "passed" row in place (`cargo test` failed it), and every later run
/// found the profile "added". Now the runtime hands a program of the build the test's profile
/// variables, the test's row has `main.rs`'s lines, and the edit runs it again.
fn a_program_started_with_a_cleared_environment() -> Result {
    let lib_rs = "pub fn expected() -> String {\n    \"42\".to_string()\n}\n\n\
                  pub fn other(a: i32) -> i32 {\n    a - 1\n}\n\n\
                  #[test]\nfn other_fails() {\n    assert_eq!(other(1), 3);\n}\n\n\
                  #[test]\nfn other_passes() {\n    assert_eq!(other(3), 2);\n}\n";
    let tmp = lib_crate("cleared", "", lib_rs)?;
    let dir = tmp.path();
    std::fs::write(
        dir.join("src/main.rs"),
        "fn compute(x: u32) -> u32 {\n    x * 2\n}\n\nfn main() {\n    println!(\"{}\", compute(21));\n}\n",
    )?;
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("tests/cli.rs"),
        "#[test]\nfn runs_the_binary() {\n    \
         let out = std::process::Command::new(env!(\"CARGO_BIN_EXE_cleared\")).env_clear().output().unwrap();\n    \
         assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), cleared::expected());\n}\n",
    )?;
    let outcome = |out: &std::process::Output| outcome_of(out, "runs_the_binary");
    let first = sfl(&["--format", "json"], dir);
    check(outcome(&first)? == "passed", || show(&first))?;
    let profiles: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".profraw"))
        .map(|e| e.file_name())
        .collect();
    check(profiles.is_empty(), || {
        format!("profiles written into the package: {profiles:?}")
    })?;
    edit_file(&dir.join("src/main.rs"), "x * 2", "x * 3")?;
    let second = sfl(&["--format", "json"], dir);
    check(outcome(&second)? == "failed", || show(&second))?;
    check(selected(&second) == Some((2, 3)), || show(&second))
}

/// `std::env::vars()` reads the environment without `getenv` (envy, figment and config scan it
/// for a prefix): a test that iterates it reads every variable. Before, its reads were those it
/// made through `getenv` alone, and after `EVX_PORT` was set its old "passed" row was reused
/// (`cargo test` failed it). Now it runs again after any change of the environment, and a test
/// that does not iterate stays reused.
fn a_test_that_iterates_the_environment() -> Result {
    let lib_rs = "pub fn prefixed() -> Vec<(String, String)> {\n    \
                  std::env::vars().filter(|(k, _)| k.starts_with(\"EVX_\")).collect()\n}\n\n\
                  pub fn other(a: i32) -> i32 {\n    a - 1\n}\n\n\
                  #[cfg(test)]\nmod tests {\n\
                  \x20   #[test] fn t_vars() { assert!(super::prefixed().is_empty()); }\n\
                  \x20   #[test] fn t_other() { assert_eq!(super::other(3), 2); }\n\
                  \x20   #[test] fn t_fail() { assert_eq!(super::other(1), 3); }\n}\n";
    let tmp = lib_crate("iterates-env", "", lib_rs)?;
    let dir = tmp.path();
    let run = |port: Option<&str>| {
        let mut cmd = crate::support::sfl_command(dir);
        cmd.args(["--format", "json"]);
        match port {
            Some(p) => cmd.env("EVX_PORT", p),
            None => cmd.env_remove("EVX_PORT"),
        };
        cmd.output().unwrap()
    };
    let outcome = |out: &std::process::Output| outcome_of(out, "tests::t_vars");
    let first = run(None);
    check(outcome(&first)? == "passed", || show(&first))?;
    let second = run(Some("1"));
    check(outcome(&second)? == "failed", || show(&second))?;
    check(selected(&second) == Some((2, 3)), || show(&second))
}

/// A failing snapshot test writes its new snapshot for review (insta's `NAME.snap.new`, here
/// written by hand as insta does): the next run with no edit runs only the failing tests again,
/// where before it ran every test because the file "was added since the last run" (similar).
fn a_snapshot_written_for_review_is_no_edit() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    crate::reliability::add_test(
        dir,
        "t8_snapshot",
        "let (least, most) = minmax(2, 0, 1);\n        if least > most {\n            \
         let snaps = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/src/snapshots\");\n            \
         std::fs::create_dir_all(snaps).unwrap();\n            \
         std::fs::write(format!(\"{snaps}/minmax__t8.snap.new\"), format!(\"{least} {most}\")).unwrap();\n            \
         let persisted = concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/proptest-regressions\");\n            \
         std::fs::create_dir_all(persisted).unwrap();\n            \
         std::fs::write(format!(\"{persisted}/lib.txt\"), \"cc 0123\").unwrap();\n            \
         panic!(\"snapshot differs\");\n        }",
    )?;
    let first = sfl(&[], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    check(dir.join("src/snapshots/minmax__t8.snap.new").is_file(), || show(&first))?;
    check(dir.join("proptest-regressions/lib.txt").is_file(), || show(&first))?;
    let second = sfl(&[], dir);
    check(second.status.code() == Some(0), || show(&second))?;
    let err = String::from_utf8_lossy(&second.stderr);
    check(
        !err.contains("Selecting every test") && selected(&second).is_some_and(|(n, m)| n < m),
        || show(&second),
    )?;
    // A persisted case written by another run (`cargo test`'s, between two of cargo sfl's) is an
    // input of the property tests of its source, here an integration test's: they run again,
    // not every test (before: "tests/prop.proptest-regressions was added", and every test ran).
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("tests/prop.rs"),
        "#[test]\nfn ordered() {\n    let (least, most) = fixture_minmax::minmax(1, 2, 3);\n    assert!(least <= most);\n}\n",
    )?;
    let third = sfl(&[], dir);
    check(third.status.code() == Some(0), || show(&third))?;
    std::fs::write(dir.join("tests/prop.proptest-regressions"), "cc 4567\n")?;
    let fourth = sfl(&[], dir);
    let err = String::from_utf8_lossy(&fourth.stderr);
    check(
        !err.contains("Selecting every test") && selected(&fourth).is_some_and(|(n, m)| n < m),
        || show(&fourth),
    )
}

/// A build script generates code from a file outside the package that it declares
/// (`rerun-if-changed`): after a change of that file alone, cargo runs the script again and the
/// test that passed fails; it ran again (before, its passing row was reused: helper report).
fn a_build_scripts_input_outside_the_package() -> Result {
    let data = tempfile::tempdir()?;
    let input = data.path().join("n.txt");
    std::fs::write(&input, "1")?;
    let tmp = lib_crate(
        "sfl_e2e_generated",
        "",
        "include!(concat!(env!(\"OUT_DIR\"), \"/gen.rs\"));\n\n#[test]\nfn n_is_one() {\n    assert_eq!(n(), 1);\n}\n",
    )?;
    let dir = tmp.path();
    std::fs::write(
        dir.join("build.rs"),
        format!(
            "fn main() {{\n    let input = {input:?};\n    println!(\"cargo:rerun-if-changed={{input}}\");\n    \
             let n = std::fs::read_to_string(input).unwrap();\n    \
             let out = std::path::Path::new(&std::env::var(\"OUT_DIR\").unwrap()).join(\"gen.rs\");\n    \
             std::fs::write(out, format!(\"pub fn n() -> u32 {{{{\\n    {{}}\\n}}}}\\n\", n.trim())).unwrap();\n}}\n"
        ),
    )?;
    let first = sfl(&[], dir);
    check(first.status.code() == Some(3), || show(&first))?;
    std::fs::write(&input, "2")?;
    let second = sfl(&[], dir);
    let err = String::from_utf8_lossy(&second.stderr);
    check(
        second.status.code() == Some(0) && err.contains("which a build script reads (rerun-if-changed), changed"),
        || format!("the test fails after its generated code changed: {}", show(&second)),
    )
}
