//! Reproducing a candidate: `cargo test --no-fail-fast` on the buggy version (the parent's
//! library with the commit's tests) and on the fixed version (the commit), the judgement, and
//! the test outcomes parsed from cargo's output.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Result;

/// One test's outcome under `cargo test`, keyed by [`TestKey`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    Passed,
    Failed,
    Ignored,
}

/// Tests by `target :: name` (the target as cargo's "Running" line names it, without the
/// binary's hash; doctests as `doctests`, their `(line N)` replaced by their rank within the
/// item, since fixes above them move their lines), with their failure messages.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Outcomes {
    pub tests: BTreeMap<String, Verdict>,
    pub messages: BTreeMap<String, String>,
}

/// A doctest's name without its line: `src/lib.rs - f (line 12)` is `src/lib.rs - f`.
fn doctest_item(name: &str) -> &str {
    match name.find(" (line ") {
        Some(i) => &name[..i],
        None => name,
    }
}

/// Reads `cargo test` output (standard output and error interleaved).
pub(crate) fn parse_cargo_test(log: &str) -> Outcomes {
    let mut out = Outcomes::default();
    let mut target = String::new();
    let mut doc_seen: BTreeMap<String, usize> = BTreeMap::new();
    // Raw doctest names (with their line) of this target mapped to their keys, for messages.
    let mut keys: BTreeMap<String, String> = BTreeMap::new();
    let mut reading: Option<(String, String)> = None;
    let flush = |out: &mut Outcomes, reading: &mut Option<(String, String)>| {
        if let Some((k, m)) = reading.take() {
            out.messages.insert(k, m.trim().to_string());
        }
    };
    for line in log.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Running ") {
            flush(&mut out, &mut reading);
            // `Running unittests src/lib.rs (target/debug/deps/x-hash)`: the part before the binary.
            target = rest.split(" (").next().unwrap_or(rest).to_string();
            keys.clear();
            continue;
        }
        if t.starts_with("Doc-tests ") {
            flush(&mut out, &mut reading);
            target = "doctests".to_string();
            keys.clear();
            doc_seen.clear();
            continue;
        }
        if let Some(rest) = t.strip_prefix("---- ").and_then(|r| r.strip_suffix(" stdout ----")) {
            flush(&mut out, &mut reading);
            let key = keys.get(rest).cloned().unwrap_or_else(|| format!("{target} :: {rest}"));
            reading = Some((key, String::new()));
            continue;
        }
        if let Some((_, m)) = reading.as_mut() {
            if t == "failures:" || t.starts_with("test result:") {
                flush(&mut out, &mut reading);
            } else {
                m.push_str(line);
                m.push('\n');
            }
            continue;
        }
        let Some(rest) = line.strip_prefix("test ") else {
            continue;
        };
        let Some((name, verdict)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let verdict = match verdict.split([' ', ',']).next().unwrap_or("") {
            "ok" => Verdict::Passed,
            "FAILED" => Verdict::Failed,
            "ignored" => Verdict::Ignored,
            _ => continue,
        };
        let key = if target == "doctests" {
            let item = doctest_item(name).to_string();
            let n = doc_seen.entry(item.clone()).or_insert(0);
            *n += 1;
            format!("doctests :: {item} #{n}")
        } else {
            format!("{target} :: {name}")
        };
        keys.insert(name.to_string(), key.clone());
        out.tests.insert(key, verdict);
    }
    flush(&mut out, &mut reading);
    out
}

/// Why a build failed, from cargo's log: dependencies that do not resolve, a workspace
/// library that does not compile, or only its test targets.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum BuildFailure {
    Resolve,
    /// A dependency does not compile (a new toolchain rejects old code).
    Dependency,
    Library,
    /// Only tests, examples or benches do not compile.
    Tests,
}

pub(crate) fn build_failure(log: &str) -> Option<BuildFailure> {
    const RESOLVE: [&str; 9] = [
        "failed to select a version",
        "no matching package",
        "failed to load source for dependency",
        "failed to get `",
        "failed to parse lock file",
        "failed to parse manifest",
        "unable to get packages from source",
        "failed to download",
        "network failure",
    ];
    if RESOLVE.iter().any(|p| log.contains(p)) {
        return Some(BuildFailure::Resolve);
    }
    // `Compiling name v1.0 (/path)`: a package of the workspace (a path in parentheses).
    let local: Vec<&str> = log
        .lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("Compiling ")?;
            let mut w = rest.split_whitespace();
            let name = w.next()?;
            w.nth(1).is_some_and(|p| p.starts_with("(/")).then_some(name)
        })
        .collect();
    let mut worst = None;
    for l in log.lines() {
        let Some(rest) = l.trim().strip_prefix("error: could not compile `") else {
            continue;
        };
        let Some((name, after)) = rest.split_once('`') else {
            continue;
        };
        let kind = if !local.contains(&name) {
            BuildFailure::Dependency
        } else if after.contains("(lib)") || after.contains("(bin ") || after.contains("build script") {
            BuildFailure::Library
        } else {
            BuildFailure::Tests
        };
        worst = Some(match (worst, kind) {
            (Some(BuildFailure::Dependency), _) | (_, BuildFailure::Dependency) => BuildFailure::Dependency,
            (Some(BuildFailure::Library), _) | (_, BuildFailure::Library) => BuildFailure::Library,
            _ => BuildFailure::Tests,
        });
    }
    worst
}

/// One `cargo test --no-fail-fast` run: the outcomes, the exit code (None: killed at the
/// limit) and the log.
pub(crate) struct TestRun {
    pub code: Option<i32>,
    pub log: String,
    pub outcomes: Outcomes,
}

/// Runs `cargo test --no-fail-fast` in `dir` with the build in `target`, killed after `limit`.
pub(crate) fn cargo_test(dir: &Path, target: &Path, limit: Duration) -> Result<TestRun> {
    let log_path = dir.with_extension("test.log");
    let log = std::fs::File::create(&log_path)?;
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["test", "--no-fail-fast"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        // Old crates deny lints that today's compiler added: warnings only.
        .env("RUSTFLAGS", "--cap-lints=warn")
        .env("RUSTDOCFLAGS", "--cap-lints=warn")
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let code = crate::panic4r_bench::run::run_with_timeout(&mut cmd, limit)?;
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    Ok(TestRun {
        code,
        outcomes: parse_cargo_test(&log),
        log,
    })
}

/// What the two runs say: the failing tests of the buggy version that pass on the fixed one,
/// or why the candidate is not a reproduced bug.
pub(crate) fn judge(buggy: &Outcomes, fixed: &Outcomes, changed: impl Fn(&str) -> bool) -> Result<Vec<String>, String> {
    let failing = |o: &Outcomes| -> Vec<String> {
        o.tests
            .iter()
            .filter(|(_, v)| **v == Verdict::Failed)
            .map(|(k, _)| k.clone())
            .collect()
    };
    let (before, after) = (failing(buggy), failing(fixed));
    if before.is_empty() {
        return Err("no test fails before the fix".into());
    }
    if !after.is_empty() {
        return Err("a test fails after the fix too".into());
    }
    let missing: Vec<&String> = before.iter().filter(|k| !fixed.tests.contains_key(*k)).collect();
    if !missing.is_empty() {
        return Err("a failing test does not run after the fix".into());
    }
    // A doctest that uses the fix's new API fails before the fix by not compiling: that is
    // an addition, not a bug.
    let uncompiled = |k: &String| {
        buggy.messages.get(k).is_some_and(|m| {
            m.contains("error[E") && !m.contains("Test compiled successfully")
                || m.contains("Couldn't compile the test")
        })
    };
    if before.iter().all(uncompiled) {
        return Err("the failing doctests do not compile against the parent's library".into());
    }
    let revealing: Vec<String> = before.into_iter().filter(|k| !uncompiled(k)).collect();
    if !revealing.iter().any(|k| changed(k)) {
        return Err("only tests the commit did not change fail before the fix".into());
    }
    Ok(revealing)
}

/// Whether the test `key` is one the commit adds or changes: its function's name is among
/// `changed_fns`, or it is a doctest of a file whose doctests the commit changes.
pub(crate) fn is_changed(key: &str, changed_fns: &[String], doctest_files: &[String]) -> bool {
    let name = key.rsplit(" :: ").next().unwrap_or(key);
    if let Some(item) = key.strip_prefix("doctests :: ") {
        return doctest_files.iter().any(|f| item.starts_with(&format!("{f} - ")));
    }
    let last = name.rsplit("::").next().unwrap_or(name).trim();
    // `name - should panic` is how libtest lists a #[should_panic] test.
    let last = last.split(" - ").next().unwrap_or(last);
    changed_fns.iter().any(|f| f == last)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "   Compiling semver v0.9.0 (/tmp/w/buggy)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 2.1s
     Running unittests src/lib.rs (target/debug/deps/semver-0a1b)

running 2 tests
test version::tests::parse ... ok
test version::tests::cmp ... FAILED

failures:

---- version::tests::cmp stdout ----
thread 'version::tests::cmp' panicked at src/version.rs:40:9:
assertion `left == right` failed

failures:
    version::tests::cmp

test result: FAILED. 1 passed; 1 failed; 0 ignored
     Running tests/regression.rs (target/debug/deps/regression-ffee)

running 1 test
test big ... ignored, slow

   Doc-tests semver

running 3 tests
test src/lib.rs - Version::parse (line 10) ... ok
test src/lib.rs - Version::parse (line 30) ... FAILED
test src/lib.rs - Version (line 5) - compile fail ... ok

failures:

---- src/lib.rs - Version::parse (line 30) stdout ----
error[E0425]: cannot find function `parse_lenient` in module `semver`
Couldn't compile the test.

failures:
";

    #[test]
    fn cargo_test_output_gives_each_target_its_tests_and_doctests_their_rank() {
        let o = parse_cargo_test(LOG);
        assert_eq!(o.tests.len(), 6);
        assert_eq!(o.tests["unittests src/lib.rs :: version::tests::cmp"], Verdict::Failed);
        assert_eq!(
            o.tests["unittests src/lib.rs :: version::tests::parse"],
            Verdict::Passed
        );
        assert_eq!(o.tests["tests/regression.rs :: big"], Verdict::Ignored);
        assert_eq!(o.tests["doctests :: src/lib.rs - Version::parse #2"], Verdict::Failed);
        assert_eq!(o.tests["doctests :: src/lib.rs - Version #1"], Verdict::Passed);
        assert!(o.messages["unittests src/lib.rs :: version::tests::cmp"].contains("assertion `left == right`"));
        assert!(o.messages["doctests :: src/lib.rs - Version::parse #2"].contains("Couldn't compile"));
    }

    fn outcomes(v: &[(&str, Verdict)]) -> Outcomes {
        Outcomes {
            tests: v.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            messages: BTreeMap::new(),
        }
    }

    #[test]
    fn a_bug_needs_a_changed_test_failing_before_and_every_test_passing_after() {
        use Verdict::*;
        let changed = |k: &str| k.ends_with("new");
        let fixed = outcomes(&[("t :: new", Passed), ("t :: old", Passed)]);
        let buggy = outcomes(&[("t :: new", Failed), ("t :: old", Passed)]);
        assert_eq!(judge(&buggy, &fixed, changed), Ok(vec!["t :: new".to_string()]));
        assert!(judge(&fixed, &fixed, changed).unwrap_err().contains("no test fails"));
        let still = outcomes(&[("t :: new", Passed), ("t :: old", Failed)]);
        assert!(
            judge(&buggy, &still, changed)
                .unwrap_err()
                .contains("after the fix too")
        );
        let old_only = outcomes(&[("t :: new", Passed), ("t :: old", Failed)]);
        assert!(
            judge(&old_only, &fixed, changed)
                .unwrap_err()
                .contains("did not change")
        );
    }

    #[test]
    fn a_doctest_that_does_not_compile_before_the_fix_is_not_a_bug() {
        let o = parse_cargo_test(LOG);
        let fixed = Outcomes {
            tests: o.tests.keys().map(|k| (k.clone(), Verdict::Passed)).collect(),
            messages: BTreeMap::new(),
        };
        let mut only_doc = o;
        only_doc
            .tests
            .insert("unittests src/lib.rs :: version::tests::cmp".into(), Verdict::Passed);
        let err = judge(&only_doc, &fixed, |_| true).unwrap_err();
        assert!(err.contains("do not compile"), "{err}");
    }

    #[test]
    fn changed_tests_are_found_by_function_name_or_doctest_file() {
        let fns = vec!["cmp".to_string()];
        let docs = vec!["src/lib.rs".to_string()];
        assert!(is_changed("unittests src/lib.rs :: version::tests::cmp", &fns, &docs));
        assert!(is_changed("tests/a.rs :: cmp - should panic", &fns, &docs));
        assert!(!is_changed(
            "unittests src/lib.rs :: version::tests::parse",
            &fns,
            &docs
        ));
        assert!(is_changed("doctests :: src/lib.rs - Version::parse #2", &fns, &docs));
        assert!(!is_changed("doctests :: src/range.rs - Range #1", &fns, &docs));
    }

    #[test]
    fn build_failures_are_told_apart_by_what_did_not_compile() {
        let local = "   Compiling semver v0.9.0 (/w/buggy)\n";
        assert_eq!(
            build_failure(&format!(
                "{local}error: could not compile `semver` (lib test) due to 2 previous errors"
            )),
            Some(BuildFailure::Tests)
        );
        assert_eq!(
            build_failure(&format!(
                "{local}error: could not compile `semver` (lib) due to 1 previous error"
            )),
            Some(BuildFailure::Library)
        );
        assert_eq!(
            build_failure(&format!(
                "{local}   Compiling serde v0.8.0\nerror: could not compile `serde` (lib)"
            )),
            Some(BuildFailure::Dependency)
        );
        assert_eq!(
            build_failure("error: failed to select a version for the requirement `foo = \"^0.1\"`"),
            Some(BuildFailure::Resolve)
        );
        assert_eq!(build_failure(local), None);
    }
}
