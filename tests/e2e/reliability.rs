//! What users hit when runs overlap, tests leave early, numbers are nonsense, or a saved
//! spectra file is hostile: each is refused or handled, never silently wrong.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, check_exit, copy_fixture, lib_crate, sfl, sfl_command, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("reliability::concurrent_runs_take_turns", concurrent_runs_take_turns),
        Trial::test("reliability::exit_0_in_a_test_fails_it", exit_0_in_a_test_fails_it),
        Trial::test("reliability::output_of_a_crashed_test", output_of_a_crashed_test),
        Trial::test(
            "reliability::kept_processes_give_each_test_a_fresh_state",
            kept_processes_give_each_test_a_fresh_state,
        ),
        Trial::test(
            "reliability::a_kept_process_finds_each_test_among_many",
            a_kept_process_finds_each_test_among_many,
        ),
        Trial::test(
            "reliability::statics_are_not_put_back_under_a_rust_allocator",
            statics_are_not_put_back_under_a_rust_allocator,
        ),
        Trial::test(
            "reliability::path_modules_are_the_crate_files",
            path_modules_are_the_crate_files,
        ),
        #[cfg(unix)]
        Trial::test(
            "reliability::a_file_behind_a_symlink_is_one_file",
            a_file_behind_a_symlink_is_one_file,
        ),
        Trial::test("reliability::unusable_numbers_exit_2", unusable_numbers_exit_2),
        Trial::test(
            "reliability::spectra_outside_the_workspace_refused",
            spectra_outside_the_workspace_refused,
        ),
        Trial::test(
            "reliability::spectra_with_a_signed_hex_row_refused",
            spectra_with_a_signed_hex_row_refused,
        ),
        Trial::test("reliability::proc_macro_tests_run", proc_macro_tests_run),
        Trial::test(
            "reliability::tests_see_cargos_environment",
            tests_see_cargos_environment,
        ),
        Trial::test("reliability::leaked_processes_are_killed", leaked_processes_are_killed),
        Trial::test(
            "reliability::interrupt_kills_running_tests",
            interrupt_kills_running_tests,
        ),
        Trial::test("reliability::interrupt_stops_the_build", interrupt_stops_the_build),
        Trial::test(
            "reliability::a_copied_workspace_ranks_as_before",
            a_copied_workspace_ranks_as_before,
        ),
        Trial::test(
            "reliability::a_build_of_another_copy_is_named",
            a_build_of_another_copy_is_named,
        ),
        Trial::test(
            "reliability::forked_tests_match_their_own_processes",
            forked_tests_match_their_own_processes,
        ),
        Trial::test(
            "reliability::libtest_is_handed_the_one_test",
            libtest_is_handed_the_one_test,
        ),
    ]
}

/// Tests forked from their binary's server (the default) end as they do in processes of their
/// own (`--process-per-test`) and cover the same lines and edges: on a crate whose tests
/// crash, panic and pass, and on one with two faults. The status line says how many
/// were forked.
fn forked_tests_match_their_own_processes() -> Result {
    for fixture in ["crash", "two-bugs"] {
        let dir = copy_fixture(fixture);
        let mut runs = Vec::new();
        for args in [&["--rerun"][..], &["--rerun", "--process-per-test"]] {
            let out = sfl(args, dir.path());
            check(out.status.success(), || show(&out))?;
            let stderr = String::from_utf8_lossy(&out.stderr);
            // A binary's server ends with its last test; the tests that failed beside others
            // run again alone on a new one.
            let forked = stderr.contains(" runs on ") || stderr.contains(" 1 test run on ");
            check(forked == (args.len() == 1), || {
                format!("{fixture} {args:?}: {}", show(&out))
            })?;
            runs.push(comparable_spectra(dir.path())?);
        }
        let (forked, own) = (&runs[0], &runs[1]);
        check(!forked.0.is_empty() && forked.0 == own.0, || {
            format!("{fixture}: outcomes differ\nforked {:#?}\nown {:#?}", forked.0, own.0)
        })?;
        check(forked.0.iter().any(|t| t["outcome"] != "passed"), || {
            format!("{fixture}: nothing failed")
        })?;
        check(forked.1 == own.1 && forked.2 == own.2, || {
            format!("{fixture}: coverage differs")
        })?;
        check(forked.3 == own.3 && !forked.3.is_null(), || {
            format!("{fixture}: edges differ")
        })?;
    }
    Ok(())
}

/// A run's saved tests (without durations and thread ids), units, line coverage and edges.
pub(crate) type Comparable = (Vec<Value>, Value, Value, Value);

pub(crate) fn comparable_spectra(dir: &Path) -> Result<Comparable> {
    let spectra = spectra(dir)?;
    let tests: Vec<Value> = spectra["tests"]
        .as_array()
        .ok_or("no tests")?
        .iter()
        .map(|t| {
            let mut t = t.clone();
            let o = t.as_object_mut().expect("a test is an object");
            o.remove("duration_ms");
            // A thread's id (`thread 'x' (20107) has overflowed its stack`) is no outcome.
            if let Some(m) = o.get("message").and_then(Value::as_str) {
                let kept = m.split('(').map(|part| {
                    let digits = part
                        .find(')')
                        .filter(|&i| i > 0 && part[..i].bytes().all(|b| b.is_ascii_digit()));
                    digits.map_or(part.to_string(), |i| format!("N{}", &part[i..]))
                });
                o.insert("message".into(), Value::from(kept.collect::<Vec<_>>().join("(")));
            }
            t
        })
        .collect();
    Ok((
        tests,
        spectra["units"].clone(),
        spectra["coverage"].clone(),
        spectra["edges_deflated"].clone(),
    ))
}

/// A forked test that passed takes the next test in its process only when the process is put
/// back as it found it: a shared `OnceLock` a test filled (whose initialisation a process of
/// its own counts for each), a variable it set and a directory it changed to are put back; a
/// thread it left ends the process. So every test's spectra are those of a fresh process
/// (`--fresh-processes`), and the status line says how many processes were put back.
fn kept_processes_give_each_test_a_fresh_state() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    add_cached_module(dir, "")?;
    add_test(dir, "env_set", "std::env::set_var(\"SFL_KEPT_TRIAL\", \"1\");")?;
    add_test(dir, "env_read", "assert!(crate::cached::from_env() <= 1);")?;
    add_test(
        dir,
        "leaves_a_thread",
        "std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(300)));",
    )?;
    add_test(dir, "changes_dir", "std::env::set_current_dir(\"/\").unwrap();")?;
    // Process attributes no static holds (helper report): the file mode mask (put back), a
    // signal's disposition, and a closed stdout (whose test fails: no `ok` line) end the process.
    add_test(
        dir,
        "umask_a_set",
        "extern \"C\" { fn umask(mask: u32) -> u32; }\n        unsafe { umask(0o077); }",
    )?;
    add_test(
        dir,
        "umask_b_check",
        "extern \"C\" { fn umask(mask: u32) -> u32; }\n        \
         let mask = unsafe { umask(0o022) };\n        unsafe { umask(mask) };\n        assert_ne!(mask, 0o077);",
    )?;
    add_test(
        dir,
        "sigpipe_a_default",
        "extern \"C\" { fn signal(sig: i32, handler: usize) -> usize; }\n        unsafe { signal(13, 0); }",
    )?;
    add_test(
        dir,
        "sigpipe_b_write",
        "use std::io::Write;\n        \
         let mut child = std::process::Command::new(\"true\").stdin(std::process::Stdio::piped()).spawn().unwrap();\n        \
         let mut input = child.stdin.take().unwrap();\n        child.wait().unwrap();\n        \
         assert!(input.write_all(&[0u8; 1 << 17]).is_err());",
    )?;
    add_test(
        dir,
        "stdout_a_close",
        "extern \"C\" { fn close(fd: i32) -> i32; }\n        unsafe { close(1); }",
    )?;
    add_test(dir, "stdout_b_after", "assert_eq!(1 + 1, 2);")?;
    let kept = kept_and_fresh_agree(dir, 24, true)?;
    check(
        kept.contains("passed and left their process to the next test, ")
            && kept.contains("of them after what they changed was put back"),
        || kept.clone(),
    )
}

/// Under a `#[global_allocator]` written in Rust, whose bookkeeping lives in the statics a
/// kept process compares, a test that changed statics ends its process instead of having them
/// put back (putting an allocator's free lists back would hand out memory in use): the tests
/// see a fresh state, each in a process of its own.
fn statics_are_not_put_back_under_a_rust_allocator() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    add_cached_module(
        dir,
        "pub struct Counting;\n\n\
         static ALLOCATIONS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);\n\n\
         unsafe impl std::alloc::GlobalAlloc for Counting {\n    \
         unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {\n        \
         ALLOCATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);\n        \
         unsafe { std::alloc::System.alloc(layout) }\n    }\n\n    \
         unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {\n        \
         unsafe { std::alloc::System.dealloc(ptr, layout) }\n    }\n}\n\n\
         #[global_allocator]\nstatic GLOBAL: Counting = Counting;\n\n",
    )?;
    // Every test allocates (libtest does), so every process ends.
    let stderr = kept_and_fresh_agree(dir, 14, false)?;
    check(!stderr.contains("put back"), || stderr.clone())
}

/// A kept process looks each test up among its binary's descriptors through an index from its
/// second test on (a binary of 64 tests or more): with 120 tests whose names are prefixes of
/// one another (`many_1`, `many_11`, `many_110`), each runs the test it was handed, as the
/// outcomes say (only `many_11` fails), in processes kept from test to test.
fn a_kept_process_finds_each_test_among_many() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    for i in 0..120 {
        let body = if i == 11 {
            "assert_eq!(minmax(1, 2, 3), (1, 2));".to_string()
        } else {
            format!("assert_eq!({i} + 1, {});", i + 1)
        };
        add_test(dir, &format!("many_{i}"), &body)?;
    }
    let out = sfl(&["--rerun", "-j", "1", "--format", "json"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(stderr.contains("passed and left their process"), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let outcome = |name: &str| {
        report["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == format!("tests::{name}"))
            .map(|t| t["outcome"].as_str().unwrap_or_default().to_string())
    };
    for i in 0..120 {
        let name = format!("many_{i}");
        let expected = if i == 11 { "failed" } else { "passed" };
        check(outcome(&name).as_deref() == Some(expected), || {
            format!("{name}: {:?}\n{}", outcome(&name), show(&out))
        })?;
    }
    Ok(())
}

/// Adds to the minmax copy in `dir` the items `extra` and a module `cached` whose `value` fills
/// a `OnceLock` (tests `lazy_a`, `lazy_b`, `lazy_c` call it), whose `from_env` reads a
/// variable, and six plain tests.
fn add_cached_module(dir: &Path, extra: &str) -> Result {
    let lib = dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib)?;
    // Before the test module, which `add_test` adds to.
    std::fs::write(
        &lib,
        source.replacen(
            "#[cfg(test)]",
            &format!(
                "{extra}pub mod cached {{\n    static CELL: std::sync::OnceLock<i32> = std::sync::OnceLock::new();\n\n    \
                 pub fn value() -> i32 {{\n        *CELL.get_or_init(init)\n    }}\n\n    \
                 fn init() -> i32 {{\n        let mut x = 0;\n        for i in 0..4 {{\n            x += i;\n        }}\n        x\n    }}\n\n    \
                 pub fn from_env() -> i32 {{\n        if std::env::var_os(\"SFL_KEPT_TRIAL\").is_some() {{\n            return 1;\n        }}\n        0\n    }}\n}}\n\n#[cfg(test)]"
            ),
            1,
        ),
    )?;
    for name in ["lazy_a", "lazy_b", "lazy_c"] {
        add_test(dir, name, "assert_eq!(crate::cached::value(), 6);")?;
    }
    for i in 0..6 {
        add_test(
            dir,
            &format!("plain_{i}"),
            &format!("assert_eq!(minmax(1, 2, {}), (1, {}));", 3 + i, 3 + i),
        )?;
    }
    Ok(())
}

/// Runs the crate in `dir` by default and with `--fresh-processes`: both pass with the same
/// `tests` outcomes, lines and edges, and only the first keeps processes (when `keeps`). Its
/// stderr.
fn kept_and_fresh_agree(dir: &Path, tests: usize, keeps: bool) -> Result<String> {
    let mut runs = Vec::new();
    let mut kept_stderr = String::new();
    for args in [
        &["--rerun", "-j", "1"][..],
        &["--rerun", "-j", "1", "--fresh-processes"],
    ] {
        let out = sfl(args, dir);
        check(out.status.success(), || show(&out))?;
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let kept = stderr.contains("passed and left their process");
        check(kept == (keeps && args.len() == 3), || {
            format!("{args:?}: {}", show(&out))
        })?;
        if args.len() == 3 {
            kept_stderr = stderr;
        }
        runs.push(comparable_spectra(dir)?);
    }
    let (kept, fresh) = (&runs[0], &runs[1]);
    check(kept.0.len() == tests && kept.0 == fresh.0, || {
        format!("outcomes differ\nkept {:#?}\nfresh {:#?}", kept.0, fresh.0)
    })?;
    check(kept.1 == fresh.1 && kept.2 == fresh.2, || {
        "line coverage differs".to_string()
    })?;
    check(kept.3 == fresh.3 && !kept.3.is_null(), || "edges differ".to_string())?;
    Ok(kept_stderr)
}

/// In a process cargo sfl runs for one test (`CARGO_SFL_ONE_TEST`), the runtime hands libtest
/// that test alone: libtest runs it as before (same outcome) and filters nothing out. A name no
/// test has, or the binary run without the variable, gets every test, as without the runtime.
fn libtest_is_handed_the_one_test() -> Result {
    let dir = copy_fixture("two-bugs");
    let out = sfl(&["--rerun"], dir.path());
    check(out.status.success(), || show(&out))?;
    let deps = dir.path().join("target/sfl/debug/deps");
    let exe = std::fs::read_dir(&deps)?
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("fixture_two_bugs-") && !name.contains('.')
        })
        .ok_or("no test binary")?;
    // Run directly, the instrumented binary writes a profile: into the fixture's copy, not the
    // current directory.
    let direct = || {
        let mut cmd = Command::new(&exe);
        cmd.current_dir(dir.path())
            .env("LLVM_PROFILE_FILE", dir.path().join("direct-%p.profraw"))
            .env_remove("CARGO_SFL_ONE_TEST");
        cmd
    };
    let run = |name: &str, one: bool| {
        let mut cmd = direct();
        cmd.args(["--exact", name, "--test-threads=1"]);
        if one {
            cmd.env("CARGO_SFL_ONE_TEST", "1");
        }
        cmd.output()
    };
    let listed = direct().args(["--list", "--format", "terse"]).output()?;
    let names: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test").map(str::to_string))
        .collect();
    check(names.len() > 2, || format!("{names:?}"))?;
    let mut failed = 0;
    for name in &names {
        let (one, all) = (run(name, true)?, run(name, false)?);
        let (one_out, all_out) = (
            String::from_utf8_lossy(&one.stdout),
            String::from_utf8_lossy(&all.stdout),
        );
        check(one.status.code() == all.status.code(), || {
            format!("{name}: {one_out}\n---\n{all_out}")
        })?;
        check(
            one_out.contains("running 1 test") && one_out.contains("; 0 filtered out"),
            || format!("{name} alone: {one_out}"),
        )?;
        let others = format!("; {} filtered out", names.len() - 1);
        check(all_out.contains(&others), || format!("{name} among all: {all_out}"))?;
        failed += usize::from(!one.status.success());
    }
    check(failed > 0 && failed < names.len(), || {
        format!("{failed} of {} failed", names.len())
    })?;
    let none = run("no_such_test", true)?;
    let none_out = String::from_utf8_lossy(&none.stdout);
    check(none_out.contains(&format!("; {} filtered out", names.len())), || {
        none_out.to_string()
    })
}

/// `cp -a` of `from`'s contents, its target directory among them (modification times kept, so
/// cargo would take the build as up to date), into a fresh temp dir.
fn copy_with_target_dir(from: &Path) -> Result<tempfile::TempDir> {
    let to = tempfile::tempdir()?;
    let copy = Command::new("cp")
        .arg("-a")
        .arg(from.join("."))
        .arg(to.path())
        .status()?;
    check(copy.success(), || "cp -a failed".into())?;
    Ok(to)
}

/// What a JSON report says that does not depend on where the workspace is or how long tests
/// took: the summary, the tests (outcome, message, stack) and the rankings.
fn path_free(report: &Value) -> Value {
    let mut tests = report["tests"].clone();
    for t in tests.as_array_mut().into_iter().flatten() {
        t.as_object_mut().map(|t| t.remove("duration_ms"));
    }
    serde_json::json!({
        "summary": report["summary"],
        "tests": tests,
        "rankings": report["rankings"],
    })
}

/// A workspace copied with its target directory (a restored CI cache, a moved checkout): cargo
/// would reuse the binaries, whose coverage maps and line tables name the first copy's files.
/// The copy's crates are rebuilt, so the second run ranks exactly as the first, the fault
/// (src/lib.rs:16) first.
fn a_copied_workspace_ranks_as_before() -> Result {
    let first = copy_fixture("minmax");
    let out = sfl(&["--format", "json"], first.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let before: Value = serde_json::from_slice(&out.stdout)?;
    let second = copy_with_target_dir(first.path())?;
    let out = sfl(&["--format", "json"], second.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(
        stderr.contains("Rebuilding") && stderr.contains(&*first.path().to_string_lossy()),
        || show(&out),
    )?;
    let after: Value = serde_json::from_slice(&out.stdout)?;
    let top = &after["rankings"][0]["units"][0];
    check(
        top["file"] == "src/lib.rs" && top["line"] == 16 && top["rank"] == 1.0,
        || format!("the fault is not ranked first: {top}\n{}", show(&out)),
    )?;
    check(path_free(&before) == path_free(&after), || {
        format!("the copy ranks otherwise:\n{before:#}\n---\n{after:#}")
    })?;
    // Built here now: the next run reuses the build.
    let out = sfl(&["--no-doctests"], second.path());
    check(
        out.status.code() == Some(0) && !String::from_utf8_lossy(&out.stderr).contains("Rebuilding"),
        || show(&out),
    )
}

/// Binaries built from another copy that the build directory's record of its workspace root
/// does not reveal (here: the record rewritten to claim this copy) are named, and a run whose
/// failing tests thus rank nothing is an error that says what to do (exit 7), never an empty
/// report.
fn a_build_of_another_copy_is_named() -> Result {
    let first = copy_fixture("minmax");
    let out = sfl(&["--no-doctests"], first.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let second = copy_with_target_dir(first.path())?;
    std::fs::write(
        second.path().join("target/sfl/debug/.sfl-workspace-root"),
        second.path().as_os_str().as_encoded_bytes(),
    )?;
    let out = sfl(&["--no-doctests"], second.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    check_exit(
        &out,
        7,
        &out.stderr,
        &[
            "names none of this workspace's files",
            "no test's coverage names a line of this workspace's code",
        ],
    )?;
    check(
        stderr.contains(&*first.path().to_string_lossy()) && stderr.contains("Delete cargo sfl's target directory"),
        || show(&out),
    )
}

/// A proc-macro crate's tests link the toolchain's `libstd` dylib: they run with the
/// toolchain's library directory on the loader path, as under `cargo test`, each test on its
/// own (never as one binary-wide `main`).
fn proc_macro_tests_run() -> Result {
    let tmp = lib_crate(
        "pm",
        "[lib]\nproc-macro = true\n\n",
        "use proc_macro::TokenStream;\n\n#[proc_macro]\npub fn noop(input: TokenStream) -> TokenStream {\n    input\n}\n\n\
         fn double(x: u32) -> u32 {\n    x * 3 // FAULT\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn doubles() {\n        \
         assert_eq!(super::double(2), 4);\n    }\n    #[test]\n    fn zero() {\n        assert_eq!(super::double(0), 0);\n    }\n}\n",
    )?;
    let dir = tmp.path();
    let out = sfl(&["--format", "json"], dir);
    check(out.status.success(), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let outcomes: Vec<(String, String)> = report["tests"]
        .as_array()
        .ok_or("no tests")?
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap_or("").to_string(),
                t["outcome"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want = [("tests::doubles", "failed"), ("tests::zero", "passed")];
    check(
        outcomes.len() == 2 && want.iter().all(|(n, o)| outcomes.iter().any(|(a, b)| a == n && b == o)),
        || format!("{outcomes:?}\n{}", show(&out)),
    )
}

/// Adds `#[test] fn NAME() { BODY }` to the end of the minmax fixture's test module.
pub(crate) fn add_test(dir: &Path, name: &str, body: &str) -> Result {
    let lib = dir.join("src/lib.rs");
    let source = std::fs::read_to_string(&lib)?;
    let module = source
        .trim_end()
        .strip_suffix('}')
        .ok_or("lib.rs ends its test module")?;
    std::fs::write(
        &lib,
        format!("{module}\n    #[test]\n    fn {name}() {{\n        {body}\n    }}\n}}\n"),
    )?;
    Ok(())
}

pub(crate) fn spectra(dir: &Path) -> Result<Value> {
    Ok(serde_json::from_slice(&std::fs::read(
        dir.join("target/sfl/spectra.json"),
    )?)?)
}

/// Two runs on one crate: the second waits for the first's lock (saying so, as cargo does),
/// both succeed, and the saved spectra has every test, each run and covering lines.
fn concurrent_runs_take_turns() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    // A slow passing test keeps the first run busy for as long as the second needs to reach
    // the lock, however loaded the machine.
    add_test(
        dir,
        "t6_slow",
        "std::thread::sleep(std::time::Duration::from_secs(3));\n        check(1, 2, 3);",
    )?;
    let start = || {
        sfl_command(dir)
            .args(["-j", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    };
    let first = start()?;
    // The first run creates the lock file as it takes the lock, and holds it for its build.
    let lock = dir.join("target/sfl/.cargo-sfl-lock");
    let since = Instant::now();
    while !lock.exists() && since.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = start()?;
    let (first, second) = (first.wait_with_output()?, second.wait_with_output()?);
    for out in [&first, &second] {
        check(out.status.success(), || show(out))?;
    }
    let said = String::from_utf8_lossy(&second.stderr);
    check(said.contains("Blocking waiting for lock on"), || show(&second))?;
    // Only our lock counts: cargo's own "Blocking waiting for file lock on package cache" may
    // appear in either run when the second run's cargo starts during the first one's build.
    check(
        !String::from_utf8_lossy(&first.stderr).contains("Blocking waiting for lock on"),
        || show(&first),
    )?;

    let saved = spectra(dir)?;
    let tests = saved["tests"].as_array().unwrap();
    check(tests.len() == 6, || format!("{} tests saved", tests.len()))?;
    let outcomes: Vec<&str> = tests.iter().map(|t| t["outcome"].as_str().unwrap()).collect();
    check(outcomes.contains(&"failed") && outcomes.contains(&"passed"), || {
        format!("{outcomes:?}")
    })?;
    check(tests.iter().all(|t| t.get("warnings").is_none()), || {
        format!("{tests:#?}")
    })?;
    // Every test covers some line: the union of the rows' bitsets has all six bits.
    let covered = saved["coverage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| u8::from_str_radix(&row.as_str().unwrap()[..2], 16).unwrap())
        .fold(0u8, |a, b| a | b);
    check(covered == 0b11_1111, || format!("tests covering lines: {covered:#b}"))
}

/// A test that calls `std::process::exit(0)` where it would fail is failed, with a message
/// saying libtest never reported it, instead of counted as passing.
fn exit_0_in_a_test_fails_it() -> Result {
    let tmp = copy_fixture("minmax");
    add_test(
        tmp.path(),
        "t6_leaves_early",
        "let (least, most) = minmax(2, 0, 1);\n        if least > most {\n            std::process::exit(0);\n        }",
    )?;
    let out = sfl(&["--format", "json"], tmp.path());
    check(out.status.success(), || show(&out))?;
    let saved = spectra(tmp.path())?;
    let t6 = saved["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "tests::t6_leaves_early")
        .ok_or("t6 was not run")?;
    check(t6["outcome"] == "failed", || format!("{t6:#}"))?;
    let message = t6["message"].as_str().unwrap_or_default();
    check(message.starts_with("exited before libtest reported a result"), || {
        format!("{t6:#}")
    })
}

/// Tests run under libtest's capture, as under `cargo test` (a print costs no write: bytes'
/// test printing 2.8 million lines took 14 s uncaptured against 0.7 s under cargo test): a
/// passing test's output is dropped and a failing test's read from libtest's report. A test
/// whose process crashes takes its captured output along; its message says so and how to keep
/// it, and `-- --nocapture` does.
fn output_of_a_crashed_test() -> Result {
    let tmp = copy_fixture("minmax");
    add_test(
        tmp.path(),
        "t7_prints_then_aborts",
        "let (least, most) = minmax(2, 0, 1);\n        println!(\"least {least} most {most}\");\n        \
         if least > most {\n            std::process::abort();\n        }",
    )?;
    let message = |args: &[&str]| -> Result<String> {
        let out = sfl(args, tmp.path());
        check(out.status.success(), || show(&out))?;
        let saved = spectra(tmp.path())?;
        let t7 = saved["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "tests::t7_prints_then_aborts")
            .ok_or("t7 was not run")?
            .clone();
        check(t7["outcome"] == "crashed", || format!("{t7:#}"))?;
        Ok(t7["message"].as_str().unwrap_or_default().to_string())
    };
    let captured = message(&["--rerun"])?;
    check(
        captured.starts_with("killed by signal 6 (SIGABRT)")
            && captured.contains("libtest captured the test's output")
            && captured.contains("-- --nocapture")
            && !captured.contains("least 1 most 0"),
        || captured.clone(),
    )?;
    let kept = message(&["--rerun", "--", "--nocapture"])?;
    check(
        kept.starts_with("killed by signal 6 (SIGABRT)")
            && kept.contains("least 1 most 0")
            && !kept.contains("libtest captured"),
        || kept.clone(),
    )
}

/// `--test-timeout inf` (a number, but no deadline is that far) in a crate: the binary exits 2,
/// a usage error that says why, and builds nothing. The parser's unit tests (`cli`) refuse
/// every number no run can use the same way.
fn unusable_numbers_exit_2() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["--test-timeout", "inf"], tmp.path());
    check_exit(&out, 2, &out.stderr, &["invalid value", "from 0.001 to 31536000"])?;
    check(!tmp.path().join("target").exists(), || {
        format!("something was built\n{}", show(&out))
    })
}

/// A saved spectra file (say, a CI artifact) naming `/etc/passwd` or `../../x` is refused
/// with exit 5 and the reason, for every report format; an imported unit's name is not a file
/// and stays allowed.
fn spectra_outside_the_workspace_refused() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("artifact.json");
    let with_unit = |unit: &str, line: u32| -> Result<String> {
        let spectra = one_line_spectra(tmp.path(), (unit, line), "01");
        std::fs::write(&file, spectra.to_string())?;
        Ok(file.to_str().unwrap().to_string())
    };
    for unit in ["/etc/passwd", "../../x", "src/../../x"] {
        let path = with_unit(unit, 1)?;
        for format in ["human", "html"] {
            let out_dir = tmp.path().join("html");
            let args = [
                "report",
                "--spectra",
                &path,
                "--format",
                format,
                "-o",
                out_dir.to_str().unwrap(),
            ];
            let out = sfl(&args, tmp.path());
            check_exit(&out, 5, &out.stderr, &[unit, "not a path inside the workspace"])?;
            check(!out_dir.exists(), || format!("{unit}: a report was written"))?;
        }
    }
    let named = with_unit("/etc/passwd", 0)?;
    let out = sfl(&["report", "--spectra", &named], tmp.path());
    check(out.status.success(), || show(&out))?;
    check(!String::from_utf8_lossy(&out.stdout).contains("root:"), || show(&out))?;

    // The root the file names is not trusted either: `/` with `etc/passwd` would reach it.
    // Sources are read from where the report is made (here: the current directory).
    let spectra = one_line_spectra("/", ("etc/passwd", 1), "01");
    std::fs::write(&file, spectra.to_string())?;
    let path = file.to_str().unwrap();
    let page_dir = tmp.path().join("page");
    for format in ["human", "html"] {
        let out_dir = page_dir.to_str().unwrap();
        let out = sfl(
            &["report", "--spectra", path, "--format", format, "-o", out_dir],
            tmp.path(),
        );
        check(out.status.success(), || show(&out))?;
        let page = std::fs::read_to_string(if format == "html" {
            page_dir.join("index.html")
        } else {
            page_dir.clone()
        })?;
        check(!page.contains("root:"), || show(&out))?;
        let _ = std::fs::remove_dir_all(&page_dir).or_else(|_| std::fs::remove_file(&page_dir));
        check(
            String::from_utf8_lossy(&out.stderr).contains("the spectra were recorded in /; reading source lines from"),
            || show(&out),
        )?;
    }
    Ok(())
}

/// A coverage row is lowercase or uppercase hex digits only: `"+1"` once read as `01` (Rust's
/// integer parser takes a sign), so a corrupt artifact ranked as if a test had run the line.
fn spectra_with_a_signed_hex_row_refused() -> Result {
    let tmp = tempfile::tempdir()?;
    let file = tmp.path().join("artifact.json");
    for (row, exit) in [("01", 0), ("+1", 5)] {
        let spectra = one_line_spectra(tmp.path(), ("imported::unit", 0), row);
        std::fs::write(&file, spectra.to_string())?;
        let out = sfl(&["report", "--spectra", file.to_str().unwrap()], tmp.path());
        let reason: &[&str] = if exit == 0 {
            &[]
        } else {
            &["coverage row 0 is not a bitset over 2 tests"]
        };
        check_exit(&out, exit, &out.stderr, reason)?;
    }
    Ok(())
}

/// A saved spectra file of one failing and one passing test and one unit, run by the failing test
/// when `row` is `"01"`.
fn one_line_spectra(root: impl serde::Serialize, unit: (&str, u32), row: &str) -> serde_json::Value {
    serde_json::json!({
        "schema": "cargo-sfl-spectra/v1",
        "workspace_root": root,
        "tests": [
            {"binary": "b", "name": "fails", "outcome": "failed"},
            {"binary": "b", "name": "passes", "outcome": "passed"},
        ],
        "units": [[unit.0, unit.1]],
        "coverage": [row],
    })
}

/// Tests see the environment `cargo test` gives them: `[env]` of `.cargo/config.toml` (plain
/// and `relative`) and the build script's `cargo::rustc-env`; and insta's workspace root, which
/// insta would otherwise ask `cargo metadata` for in every test's process. All pass, so exit 3.
fn tests_see_cargos_environment() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("src"))?;
    std::fs::create_dir_all(dir.join(".cargo"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"envc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )?;
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    println!(\"cargo::rustc-env=BUILT_BY_SCRIPT=yes\");\n}\n",
    )?;
    std::fs::write(
        dir.join(".cargo/config.toml"),
        "[env]\nSFL_GREETING = \"hi\"\nSFL_DATA = { value = \"data\", relative = true }\n",
    )?;
    let data = dir.join("data");
    std::fs::write(
        dir.join("src/lib.rs"),
        format!(
            "#[cfg(test)]\nmod tests {{\n    #[test]\n    fn config_env() {{\n        \
             assert_eq!(std::env::var(\"SFL_GREETING\").as_deref(), Ok(\"hi\"));\n        \
             assert_eq!(std::env::var(\"SFL_DATA\").as_deref(), Ok({data:?}));\n    }}\n    #[test]\n    \
             fn build_script_env() {{\n        assert_eq!(std::env::var(\"BUILT_BY_SCRIPT\").as_deref(), Ok(\"yes\"));\n    }}\n    \
             #[test]\n    fn insta_root() {{\n        \
             assert_eq!(std::env::var(\"INSTA_WORKSPACE_ROOT\").as_deref(), Ok(env!(\"CARGO_MANIFEST_DIR\")));\n    }}\n}}\n",
            data = data.to_string_lossy()
        ),
    )?;
    let out = crate::support::sfl_command(dir)
        .args(["--format", "json"])
        .env_remove("INSTA_WORKSPACE_ROOT")
        .output()?;
    check(out.status.code() == Some(3), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let tests = report["tests"].as_array().ok_or("no tests")?;
    check(
        tests.len() == 3 && tests.iter().all(|t| t["outcome"] == "passed"),
        || show(&out),
    )
}

/// A test that spawns a child and returns leaves it running; cargo sfl kills the test's whole
/// process group, says so on the test, and no child outlives the run (the child would write a
/// file after 3 s).
fn leaked_processes_are_killed() -> Result {
    let tmp = copy_fixture("minmax");
    let dir = tmp.path();
    let marker = dir.join("child-survived");
    let body = format!(
        "std::process::Command::new(\"sh\").arg(\"-c\").arg(\"sleep 3; touch {}\").spawn().unwrap();",
        marker.display()
    );
    add_test(dir, "spawns_and_returns", &body)?;
    let out = sfl(&["--format", "json", "spawns_and_returns"], dir);
    // The only test passes: no failing tests, exit 3.
    check(out.status.code() == Some(3), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let warnings = report["tests"][0]["warnings"].to_string();
    let saved = spectra(dir)?;
    let saved_warnings = saved["tests"][0]["warnings"].to_string();
    check(
        warnings.contains("left processes running") || saved_warnings.contains("left processes running"),
        || format!("{saved:#}"),
    )?;
    std::thread::sleep(Duration::from_secs(4));
    check(!marker.exists(), || "the leaked child outlived the run".into())
}

/// SIGTERM (as Ctrl-C) while a test hangs: cargo sfl kills the running tests' process groups
/// (the terminal's signal does not reach them: each runs in a group of its own), says so, and
/// exits 130; no test process of the run is left.
fn interrupt_kills_running_tests() -> Result {
    use std::io::{BufRead, BufReader};
    let tmp = copy_fixture("hang");
    let dir = tmp.path();
    let mut child = crate::support::sfl_command(dir)
        .args(["-j", "2", "--test-timeout", "300", "trim_indent_tab"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    // Keep reading to the end: a closed pipe would make cargo sfl's own messages fail.
    let reader = std::thread::spawn(move || {
        let mut seen = String::new();
        for line in BufReader::new(stderr).lines().map_while(std::result::Result::ok) {
            if line.contains("Running") {
                let _ = tx.send(());
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        seen
    });
    check(rx.recv_timeout(Duration::from_secs(120)).is_ok(), || {
        "the tests never started".into()
    })?;
    // The hanging test has started once its binary runs; give it a moment.
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
    check(status.success(), || "kill failed".into())?;
    let code = child.wait()?.code();
    let seen = reader.join().unwrap_or_default();
    check(
        code == Some(130) && seen.contains("interrupted: killed 1 running test"),
        || format!("exit {code:?}\n{seen}"),
    )?;
    std::thread::sleep(Duration::from_millis(300));
    let left = running_with(&[dir.to_str().unwrap(), "trim_indent_tab"])?;
    check(left.is_empty(), || format!("left running: {left:?}"))
}

/// The command lines of the processes running now whose command line contains every one of
/// `parts`.
fn running_with(parts: &[&str]) -> std::io::Result<Vec<String>> {
    Ok(std::fs::read_dir("/proc")?
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
        .filter(|c| parts.iter().all(|p| c.contains(p)))
        .collect())
}

/// SIGTERM to cargo sfl alone (as `timeout`, an editor or CI sends it) while it builds: the
/// build (cargo and the build script it runs) ends with it, instead of building on without it,
/// as it did when only tests were killed. The build script says it started, then sleeps.
fn interrupt_stops_the_build() -> Result {
    let tmp = lib_crate(
        "slowbuild",
        "",
        "pub fn one() -> u8 {\n    1\n}\n\n#[test]\nfn is_one() {\n    assert_eq!(one(), 1);\n}\n",
    )?;
    let dir = tmp.path();
    std::fs::write(
        dir.join("build.rs"),
        "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    \
         std::fs::write(std::path::Path::new(&dir).join(\"build-started\"), \"\").unwrap();\n    \
         std::thread::sleep(std::time::Duration::from_secs(120));\n}\n",
    )?;
    let stderr = std::fs::File::create(dir.join("stderr.txt"))?;
    let mut child = sfl_command(dir).stdout(Stdio::null()).stderr(stderr).spawn()?;
    let started = Instant::now();
    while !dir.join("build-started").exists() {
        if started.elapsed() > Duration::from_secs(180) || child.try_wait()?.is_some() {
            let _ = child.kill();
            return Err(format!(
                "the build script never started\n{}",
                std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status()?;
    check(status.success(), || "kill failed".into())?;
    let code = child.wait()?.code();
    let seen = std::fs::read_to_string(dir.join("stderr.txt"))?;
    check(code == Some(130) && seen.contains("interrupted"), || {
        format!("exit {code:?}\n{seen}")
    })?;
    // Killed at once: nothing of the build is left a moment later.
    std::thread::sleep(Duration::from_millis(300));
    let left = running_with(&[dir.to_str().unwrap()])?;
    check(left.is_empty(), || format!("left running: {left:?}"))
}

/// An integration test that includes a library module with `#[path = "../src/…"]` (as ryu's
/// tests do): the coverage map names `tests/../src/digits.rs`, which is `src/digits.rs`. Its
/// lines are the library's units (not test code under `tests/`), and the saved spectra load
/// again (a unit naming `..` would be refused as outside the workspace).
fn path_modules_are_the_crate_files() -> Result {
    let tmp = lib_crate(
        "pathmod",
        "",
        "pub mod digits;\n\n#[test]\nfn lib_counts() {\n    assert_eq!(digits::count(100), 3);\n}\n",
    )?;
    let dir = tmp.path();
    std::fs::write(
        dir.join("src/digits.rs"),
        "pub fn count(mut n: u32) -> u32 {\n    let mut d = 1;\n    while n > 10 {\n        n /= 10;\n        d += 1;\n    }\n    d\n}\n",
    )?;
    std::fs::create_dir_all(dir.join("tests"))?;
    std::fs::write(
        dir.join("tests/included.rs"),
        "#[path = \"../src/digits.rs\"]\nmod digits;\n\n#[test]\nfn ten_has_two_digits() {\n    assert_eq!(digits::count(10), 2);\n}\n",
    )?;
    let run = sfl(&["--format", "json"], dir);
    check(run.status.code() == Some(0), || show(&run))?;
    let again = sfl(&["report", "--format", "json"], dir);
    check(again.status.code() == Some(0), || show(&again))?;
    let report: Value = serde_json::from_slice(&again.stdout)?;
    let units = report["rankings"][0]["units"].as_array().cloned().unwrap_or_default();
    let files: Vec<&str> = units
        .iter()
        .flat_map(|u| std::iter::once(u).chain(u["members"].as_array().into_iter().flatten()))
        .filter_map(|u| u["file"].as_str())
        .collect();
    check(!files.is_empty() && files.iter().all(|f| *f == "src/digits.rs"), || {
        format!("{files:?}")
    })?;
    // `while n > 10` is the fault: run by the failing test, it ranks first.
    check(
        units[0]["line"] == 3
            || units[0]["members"]
                .as_array()
                .is_some_and(|m| m.iter().any(|u| u["line"] == 3)),
        || format!("{:#}", units[0]),
    )
}

/// serde's shape: `mirror/src` is a symbolic link to `core/src/internals`, so two members
/// compile one file under two paths. Its lines are one unit each, named by the real path, and
/// a fault both members' tests run counts both (before: ranked twice, once per path, each
/// with one of the two failing tests, ochiai 0.577 instead of 1).
#[cfg(unix)]
fn a_file_behind_a_symlink_is_one_file() -> Result {
    let tmp = lib_crate(
        "core",
        "",
        "pub mod internals;\n\n#[test]\nfn core_cases() {\n    assert_eq!(internals::upper(\"ab\"), \"AB\");\n}\n",
    )?;
    let dir = tmp.path();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        manifest.replace("[workspace]\n", "[workspace]\nmembers = [\"mirror\"]\n"),
    )?;
    std::fs::create_dir_all(dir.join("src/internals"))?;
    std::fs::write(
        dir.join("src/internals/mod.rs"),
        "pub fn upper(s: &str) -> String {\n    if s.len() > 1 {\n        s.to_lowercase()\n    } else {\n        s.to_uppercase()\n    }\n}\n\n\
         pub fn other(x: u32) -> u32 {\n    x + 1\n}\n",
    )?;
    std::fs::create_dir_all(dir.join("mirror"))?;
    std::fs::write(
        dir.join("mirror/Cargo.toml"),
        "[package]\nname = \"mirror\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"lib.rs\"\n",
    )?;
    std::fs::write(
        dir.join("mirror/lib.rs"),
        "#[path = \"src/mod.rs\"]\npub mod internals;\n\n#[test]\nfn mirror_cases() {\n    assert_eq!(internals::upper(\"xy\"), \"XY\");\n}\n\n\
         #[test]\nfn mirror_other() {\n    assert_eq!(internals::other(1), 2);\n}\n",
    )?;
    std::os::unix::fs::symlink("../src/internals", dir.join("mirror/src"))?;
    let run = sfl(&["--workspace", "--format", "json"], dir);
    check(run.status.code() == Some(0), || show(&run))?;
    let report: Value = serde_json::from_slice(&run.stdout)?;
    let units = report["rankings"][0]["units"].as_array().cloned().unwrap_or_default();
    let files: BTreeSet<&str> = units
        .iter()
        .flat_map(|u| std::iter::once(u).chain(u["members"].as_array().into_iter().flatten()))
        .filter_map(|u| u["file"].as_str())
        .collect();
    check(files == BTreeSet::from(["src/internals/mod.rs"]), || {
        format!("{files:?}")
    })?;
    let fault = units
        .iter()
        .find(|u| {
            u["line"] == 3
                || u["members"]
                    .as_array()
                    .is_some_and(|m| m.iter().any(|m| m["line"] == 3))
        })
        .ok_or("line 3 is not ranked")?;
    check(fault["ef"] == 2 && fault["rank"] == 1.0, || format!("{fault:#}"))
}
