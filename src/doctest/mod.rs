//! Doctests as tests like any other: rustdoc compiles them with coverage and keeps the
//! executables (`--persist-doctests`), with cargo-sfl standing in for rustdoc (cargo's `RUSTDOC`)
//! and for the tool that would run them (`--test-runtool`), so that nothing runs while building;
//! the pipeline then runs each doctest in its own process. A library's doctests are merged into
//! one executable wherever rustdoc can merge them, in every edition, when it has enough of them
//! to repay the merged runner's build ([`count`]; `--standalone-doctests`: never;
//! `--merged-doctests`: however few). When rustdoc cannot do that, the doctests are run plainly by `cargo test --doc` and
//! reported without coverage. The stand-ins are the binary's (`wrappers::rustdoc`); this module
//! reads what they leave.

pub mod count;
pub mod location;
pub mod parse;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::spectra::{Outcome, TestRecord};

/// Set, to the rustdoc to run, when cargo runs cargo-sfl as `RUSTDOC`.
pub const RUSTDOC_WRAPPER_ENV: &str = "CARGO_SFL_RUSTDOC";
/// Set for `--standalone-doctests`: rustdoc builds one executable per doctest.
pub const STANDALONE_ENV: &str = "CARGO_SFL_STANDALONE_DOCTESTS";
/// Set for `--merged-doctests`: merged however few the doctests ([`count::MERGE_FROM`]).
pub const MERGED_ENV: &str = "CARGO_SFL_MERGED_DOCTESTS";
/// Where each crate's doctests are persisted (`<dir>/<crate name>/`).
pub const DIR_ENV: &str = "CARGO_SFL_DOCTEST_DIR";
/// cargo-sfl's first argument when rustdoc runs it as `--test-runtool`.
pub const RUNTOOL_ARG: &str = "--cargo-sfl-doctest-runtool";
/// Left next to a doctest executable that rustdoc would have run (not `no_run`).
pub const RUNNABLE: &str = "sfl-runnable";
/// rustdoc's libtest output for one crate, in that crate's directory.
pub const OUTPUT: &str = "rustdoc-output.txt";
/// What the kept doctests were built from (a key over everything rustdoc reads), and rustdoc's
/// exit code then.
pub const BUILT_FROM: &str = "sfl-built-from";
/// Marks a crate's directory as built (or reused) by this run's `cargo test --doc`.
pub const THIS_RUN: &str = "sfl-this-run";

/// The crate rustdoc compiles a standalone doctest as.
const DOCTEST_CRATE: &str = "rust_out";

/// Whether the function of symbol or profile name `name` (mangled) is a doctest's own: defined
/// in a standalone doctest's crate, or an impl there. rustdoc maps that crate's source to the
/// doc comment's lines, and its `main` wrapper's last line past the comment (onto the item the
/// comment documents), so its lines would be library lines no test ran; merged doctests' own
/// code is in a generated file, which names no workspace file. Library functions instantiated
/// for the doctest are the library's.
pub fn defined_by_doctest(name: &str) -> bool {
    if !name.contains(DOCTEST_CRATE) {
        return false;
    }
    // A profile name may be `FILE;SYMBOL` (a function of internal linkage).
    let symbol = name.rsplit_once(';').map_or(name, |(_, s)| s);
    let path = format!("{:#}", rustc_demangle::demangle(symbol));
    let own = format!("{DOCTEST_CRATE}::");
    path.starts_with(&own)
        || path.strip_prefix('<').is_some_and(|p| p.starts_with(&own))
        || path.contains(&format!(" as {own}"))
}

/// Unmarks every crate's doctests under `base`, before a run's doctest build marks its own.
pub fn forget_marks(base: &Path) {
    for e in std::fs::read_dir(base).into_iter().flatten().flatten() {
        let _ = std::fs::remove_file(e.path().join(THIS_RUN));
    }
}

/// The doctests of one library.
#[derive(Debug, Clone, Default)]
pub struct DocSuite {
    /// The lib target's crate name (`my_crate`).
    pub crate_name: String,
    /// Doctests to run, one process each.
    pub tests: Vec<DocTest>,
    /// Doctests whose outcome is known without running them: ignored, failed to compile, or
    /// (without coverage) every result of the plain run.
    pub recorded: Vec<(String, Outcome, Option<String>)>,
    /// false: rustdoc could not keep its doctests; `recorded` holds the plain run's results.
    pub coverage: bool,
    /// Doctests whose build is their whole test and passed: `no_run` ones, which compiled and
    /// are never run, and `compile_fail` ones, which failed to compile as they must. `cargo test`
    /// counts them as passed; here they have nothing to run or rank, and the run says how many.
    pub build_only: Vec<String>,
}

/// One doctest executable and how to run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocTest {
    pub name: String,
    pub exe: PathBuf,
    /// For merged doctests: the `RUSTDOC_DOCTEST_RUN_NB_TEST` that runs this one alone.
    pub index: Option<usize>,
    pub should_panic: bool,
}

impl DocSuite {
    pub fn test(&self, name: &str) -> Option<&DocTest> {
        self.tests.iter().find(|t| t.name == name)
    }

    /// The records of the doctests that are not run, under `binary`.
    pub fn records(&self, binary: &str) -> Vec<TestRecord> {
        self.recorded
            .iter()
            .map(|(name, outcome, message)| {
                let mut r = TestRecord::new(binary, name, *outcome);
                r.message = message.clone();
                // Every report shows a test's message; this one says why the test has no row
                // of coverage.
                let compiled_but_compile_fail = message.as_deref().is_some_and(|m| m.contains("marked `compile_fail`"));
                let why = if !self.coverage {
                    Some("run plainly by `cargo test --doc`: rustdoc could not keep its doctests")
                } else if outcome.is_failing() && compiled_but_compile_fail {
                    Some("a `compile_fail` doctest that compiled runs nothing")
                } else if outcome.is_failing() {
                    Some("the doctest did not build")
                } else {
                    None
                };
                if let Some(why) = why.filter(|_| *outcome != Outcome::Ignored) {
                    let note = format!("no coverage: {why}, so it adds nothing to the ranking");
                    r.message = Some(match &r.message {
                        Some(m) => format!("{note}\n{m}"),
                        None => note.clone(),
                    });
                    r.warnings.push(note);
                    r.uncovered = true;
                }
                r
            })
            .collect()
    }
}

/// Whether rustdoc handed the executable in `dir` to the runtool: it compiled, and is neither
/// `no_run` nor `compile_fail`.
fn runnable(dir: &Path) -> bool {
    dir.join(RUNNABLE).is_file() && dir.join("rust_out").is_file()
}

/// Reads what the wrapper left for each crate under `base`. `None` when some crate's rustdoc
/// did not get as far as testing (an old or unusual rustdoc refused the options): then none of
/// it is trusted.
pub fn read_suites(base: &Path) -> Option<Vec<DocSuite>> {
    let mut suites = Vec::new();
    let mut crates: Vec<PathBuf> = std::fs::read_dir(base)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && p.join(THIS_RUN).is_file())
        .collect();
    crates.sort();
    for dir in crates {
        let output = std::fs::read_to_string(dir.join(OUTPUT)).ok()?;
        // "running N tests" heads the standalone doctests' results; a crate whose doctests all
        // merged into one runner gets only rustdoc's closing summary.
        if !output
            .lines()
            .any(|l| l.starts_with("running ") || l.starts_with("all doctests ran in "))
        {
            return None;
        }
        let crate_name = dir.file_name()?.to_string_lossy().into_owned();
        suites.push(suite(&dir, &output, crate_name));
    }
    Some(suites)
}

/// One crate's doctests from its persisted directory and rustdoc's output.
fn suite(dir: &Path, output: &str, crate_name: String) -> DocSuite {
    let mut s = DocSuite {
        crate_name,
        coverage: true,
        ..DocSuite::default()
    };
    let subdirs: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut seen = HashSet::new();
    for merged in subdirs.iter().filter(|d| d.starts_with("merged_doctest_")) {
        let mdir = dir.join(merged);
        let runner = std::fs::read_dir(&mdir)
            .into_iter()
            .flatten()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with("doctest_runner_"))
            .and_then(|e| std::fs::read_to_string(e.path()).ok());
        let (Some(tests), true) = (runner.as_deref().and_then(parse::merged_runner), runnable(&mdir)) else {
            continue;
        };
        for t in tests {
            seen.insert(t.name.clone());
            if t.ignore {
                s.recorded.push((t.name, Outcome::Ignored, None));
            } else if !t.no_run {
                s.tests.push(DocTest {
                    name: t.name,
                    exe: mdir.join("rust_out"),
                    index: Some(t.index),
                    should_panic: t.should_panic,
                });
            } else {
                s.build_only.push(t.name);
            }
        }
    }
    let reported = parse::results(output);
    let on_line = |name: &str| {
        let key = parse::file_and_line(name);
        reported.iter().filter(|r| parse::file_and_line(&r.name) == key).count()
    };
    // Per group of directories of one file and line, whether they hold one program: read once,
    // not once per doctest of the group.
    let mut one_program = HashMap::new();
    for r in &reported {
        if seen.contains(&r.name) {
            continue;
        }
        let sharing = Sharing {
            count: on_line(&r.name),
            one_program: &mut one_program,
        };
        standalone(&mut s, dir, &subdirs, output, r, sharing);
    }
    s.tests.sort_by(|a, b| a.name.cmp(&b.name));
    s.recorded.sort_by(|a, b| a.0.cmp(&b.0));
    s
}

/// The doctests rustdoc named with one doctest's file and line: their directories differ only by
/// a counter in an order cargo sfl cannot see, so they are run only when their executables are
/// one program ([`same_program`]).
struct Sharing<'a> {
    /// How many doctests share the file and line.
    count: usize,
    /// Whether the directories of a group (by its first) hold one program, as found so far.
    one_program: &'a mut HashMap<PathBuf, bool>,
}

/// One standalone doctest as rustdoc reported it.
fn standalone(s: &mut DocSuite, dir: &Path, subdirs: &[String], output: &str, r: &parse::Reported, sharing: Sharing) {
    use parse::{Kind, Result as R};
    let failed = |why: &str| Some(parse::failure(output, &r.name).unwrap_or_else(|| why.to_string()));
    match (r.kind, r.result) {
        (_, R::Ignored) => s.recorded.push((r.name.clone(), Outcome::Ignored, None)),
        (Kind::Compile | Kind::CompileFail, R::Ok) => s.build_only.push(r.name.clone()),
        (Kind::CompileFail, R::Failed) => s.recorded.push((
            r.name.clone(),
            Outcome::Failed,
            failed("the doctest compiled, but it is marked compile_fail"),
        )),
        (_, R::Failed) if !was_built(dir, subdirs, &r.name) => {
            s.recorded
                .push((r.name.clone(), Outcome::Failed, failed("the doctest failed to compile")))
        }
        (Kind::Compile, R::Failed) => {}
        (Kind::Run | Kind::ShouldPanic, _) => {
            let found = parse::file_and_line(&r.name).and_then(|(file, line)| {
                let prefix = parse::dir_prefix(file, line);
                let mut matching: Vec<PathBuf> = subdirs
                    .iter()
                    .filter(|d| {
                        d.strip_prefix(&prefix)
                            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .map(|d| dir.join(d))
                    .collect();
                matching.sort();
                if matching.len() != sharing.count {
                    return None;
                }
                let alike = sharing.count == 1
                    || *sharing.one_program.entry(matching[0].clone()).or_insert_with(|| {
                        let exes: Vec<PathBuf> = matching.iter().map(|d| d.join("rust_out")).collect();
                        matching.iter().all(|d| runnable(d)) && same_program(&exes)
                    });
                alike.then(|| matching.swap_remove(0))
            });
            match found.filter(|d| runnable(d)) {
                Some(d) => s.tests.push(DocTest {
                    name: r.name.clone(),
                    exe: d.join("rust_out"),
                    index: None,
                    // Standalone doctests do not carry libtest's `- should panic` mark:
                    // rustdoc's verdict on the runtool's success says it.
                    should_panic: r.kind == Kind::ShouldPanic
                        || (r.result == R::Failed
                            && parse::failure(output, &r.name).is_some_and(|f| f.contains("marked `should_panic`"))),
                }),
                None => s.recorded.push((
                    r.name.clone(),
                    Outcome::Ignored,
                    Some(format!(
                        "not run: cargo sfl cannot find which executable rustdoc kept for it ({} doctests \
                         are named with this file and line)",
                        sharing.count
                    )),
                )),
            }
        }
    }
}

/// Whether the executables run one program: their code and data are byte for byte the same.
/// rustdoc names the doctests of one code block documenting several items (a doc comment
/// inlined on re-exports, typenum's `consts` module) with one file and line; their standalone
/// executables then differ only in the doctest's function name (it carries the counter of the
/// directory) and what is made from it (the build id, the coverage records' names), so any of
/// them runs any of the doctests.
fn same_program(exes: &[PathBuf]) -> bool {
    use object::{Object as _, ObjectSection as _, SectionKind};
    let contents = |exe: &PathBuf| -> Option<Vec<(String, Vec<u8>)>> {
        let bytes = std::fs::read(exe).ok()?;
        let file = object::File::parse(&*bytes).ok()?;
        let mut sections = Vec::new();
        for section in file.sections() {
            let name = section.name().ok()?.to_string();
            let program = matches!(
                section.kind(),
                SectionKind::Text
                    | SectionKind::Data
                    | SectionKind::ReadOnlyData
                    | SectionKind::ReadOnlyDataWithRel
                    | SectionKind::ReadOnlyString
                    | SectionKind::Tls
            );
            // The instrumentation's records name (and hash) the doctest's own function.
            if program && !name.starts_with("__llvm_") {
                sections.push((name, section.data().ok()?.to_vec()));
            }
        }
        Some(sections)
    };
    let mut programs = exes.iter().map(contents);
    let Some(Some(first)) = programs.next() else {
        return false;
    };
    !first.is_empty() && programs.all(|p| p.as_ref() == Some(&first))
}

/// Whether rustdoc compiled a doctest it reported failed: the runtool only "ran" it (a
/// `should_panic` doctest then fails), so one it never handed over failed to compile.
fn was_built(dir: &Path, subdirs: &[String], name: &str) -> bool {
    parse::file_and_line(name).is_some_and(|(file, line)| {
        let prefix = parse::dir_prefix(file, line);
        subdirs.iter().any(|d| d.starts_with(&prefix) && runnable(&dir.join(d)))
    })
}

/// The plain run's results, per crate: `cargo test --doc` output with stderr merged, where
/// cargo's `Doc-tests NAME` line starts each crate's libtest output.
pub fn plain_results(output: &str) -> Vec<DocSuite> {
    let mut suites: Vec<DocSuite> = Vec::new();
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in output.lines() {
        if let Some(name) = line.trim().strip_prefix("Doc-tests ") {
            sections.push((name.trim().to_string(), String::new()));
        } else if let Some((_, text)) = sections.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    for (crate_name, text) in sections {
        let mut s = DocSuite {
            crate_name,
            coverage: false,
            ..DocSuite::default()
        };
        for r in parse::results(&text) {
            use parse::{Kind, Result as R};
            let outcome = match (r.kind, r.result) {
                (_, R::Ignored) => Outcome::Ignored,
                (Kind::Compile | Kind::CompileFail, R::Ok) => continue,
                (_, R::Ok) => Outcome::Passed,
                (_, R::Failed) => Outcome::Failed,
            };
            let message = (outcome == Outcome::Failed)
                .then(|| parse::failure(&text, &r.name))
                .flatten()
                .map(|m| crate::verdict::panic_message(&m).unwrap_or(m));
            s.recorded.push((r.name, outcome, message));
        }
        suites.push(s);
    }
    suites
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(p: &Path) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"").unwrap();
    }

    #[test]
    fn a_doctests_own_functions_are_told_from_the_librarys() {
        // rust_out::main, a closure in it, an impl of a library trait for a doctest type.
        for own in [
            "_RNvCsdqsnfIJc26X_8rust_out4main",
            "_RNCNvCsdqsnfIJc26X_8rust_out4main0B3_",
            "src/lib.rs;_RNvCsdqsnfIJc26X_8rust_out4main",
            "_ZN8rust_out4main17h0123456789abcdefE",
        ] {
            assert!(defined_by_doctest(own), "{own}");
        }
        // itoa::Buffer::format::<u64> instantiated in the doctest's crate; std's lang_start for it.
        for library in [
            "_RINvMs1_CseBen9pL05tE_4itoaNtB6_6Buffer6formatyECsdqsnfIJc26X_8rust_out",
            "_RINvNtCsjrHSEGnQ3l9_3std2rt10lang_startuECsdqsnfIJc26X_8rust_out",
            "_RNvCsdqsnfIJc26X_4itoa4main",
        ] {
            assert!(!defined_by_doctest(library), "{library}");
        }
    }

    #[test]
    fn a_crate_directory_gives_runnable_and_recorded_doctests() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        for d in ["src_lib_rs_3_0", "src_lib_rs_9_0"] {
            touch(&dir.join(d).join("rust_out"));
            touch(&dir.join(d).join(RUNNABLE));
        }
        // Compiled, but never handed to the runtool: `no_run`.
        touch(&dir.join("src_lib_rs_15_0/rust_out"));
        std::fs::create_dir_all(dir.join("src_lib_rs_12_0")).unwrap();
        std::fs::create_dir_all(dir.join("src_lib_rs_20_0")).unwrap();
        let output = "running 6 tests\ntest src/lib.rs - a (line 3) ... ok\n\
                      test src/lib.rs - b (line 9) ... FAILED\n\
                      test src/lib.rs - c (line 12) ... FAILED\n\
                      test src/lib.rs - d (line 20) - compile fail ... ok\n\
                      test src/lib.rs - f (line 15) - compile ... ok\n\
                      test src/lib.rs - e (line 30) ... ignored\n\nfailures:\n\n\
                      ---- src/lib.rs - b (line 9) stdout ----\nTest executable succeeded, but it's marked `should_panic`.\n\
                      ---- src/lib.rs - c (line 12) stdout ----\nerror[E0425]: cannot find value `x`\n\nfailures:\n";
        let mut s = suite(dir, output, "k".into());
        assert_eq!(
            s.tests,
            [
                DocTest {
                    name: "src/lib.rs - a (line 3)".into(),
                    exe: dir.join("src_lib_rs_3_0/rust_out"),
                    index: None,
                    should_panic: false
                },
                DocTest {
                    name: "src/lib.rs - b (line 9)".into(),
                    exe: dir.join("src_lib_rs_9_0/rust_out"),
                    index: None,
                    should_panic: true
                },
            ]
        );
        assert_eq!(
            s.recorded,
            [
                (
                    "src/lib.rs - c (line 12)".to_string(),
                    Outcome::Failed,
                    Some("error[E0425]: cannot find value `x`".to_string())
                ),
                ("src/lib.rs - e (line 30)".to_string(), Outcome::Ignored, None),
            ]
        );
        let recs = s.records("k::doctest/k");
        assert!(recs[0].warnings[0].starts_with("no coverage"), "{recs:?}");
        let message = recs[0].message.as_deref().unwrap();
        assert!(
            message.starts_with("no coverage: the doctest did not build"),
            "{message}"
        );
        assert!(message.ends_with("cannot find value `x`"), "{message}");
        assert!(recs[1].warnings.is_empty());
        // A `compile_fail` doctest that compiled did build: its note says what happened.
        s.recorded[0].2 = Some("Test compiled successfully, but it's marked `compile_fail`.".to_string());
        let message = s.records("k::doctest/k")[0].message.clone().unwrap();
        assert!(
            message.starts_with("no coverage: a `compile_fail` doctest that compiled runs nothing"),
            "{message}"
        );
        assert!(!message.contains("did not build"), "{message}");
    }

    #[test]
    fn merged_runners_are_run_by_number() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let m = dir.join("merged_doctest_2024_0");
        touch(&m.join("rust_out"));
        touch(&m.join(RUNNABLE));
        std::fs::write(
            m.join("doctest_runner_2024.rs"),
            "x\nmod __doctest_0 {\nconst TEST: T = T::new_doctest(\n\"src/lib.rs - a (line 3)\", false, \"src/lib.rs\", 3, false, false,\n}\n\
             mod __doctest_1 {\nconst TEST: T = T::new_doctest(\n\"src/lib.rs - b (line 5)\", true, \"src/lib.rs\", 5, false, false,\n}\n\
             tests.push(__doctest_0::TEST);\ntests.push(__doctest_1::TEST);\n",
        )
        .unwrap();
        let s = suite(dir, "running 0 tests\n", "k".into());
        assert_eq!(s.tests.len(), 1);
        assert_eq!(
            (s.tests[0].index, s.tests[0].exe.clone()),
            (Some(0), m.join("rust_out"))
        );
        assert_eq!(
            s.recorded,
            [("src/lib.rs - b (line 5)".to_string(), Outcome::Ignored, None)]
        );
    }

    /// rustdoc's output for a crate whose doctests all merged has no "running N tests", only
    /// its closing summary: that crate was tested, unlike one whose rustdoc refused the options.
    #[test]
    fn a_crate_whose_doctests_all_merged_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path();
        let krate = base.join("k");
        let m = krate.join("merged_doctest_2021_0");
        touch(&m.join("rust_out"));
        touch(&m.join(RUNNABLE));
        touch(&krate.join(THIS_RUN));
        std::fs::write(
            m.join("doctest_runner_2021.rs"),
            "x\nmod __doctest_0 {\nconst TEST: T = T::new_doctest(\n\"src/lib.rs - a (line 3)\", false, \"src/lib.rs\", 3, false, false,\n}\n\
             tests.push(__doctest_0::TEST);\n",
        )
        .unwrap();
        let output = krate.join(OUTPUT);
        std::fs::write(
            &output,
            "all doctests ran in 0.64s; merged doctests compilation took 0.64s\n",
        )
        .unwrap();
        let suites = read_suites(base).expect("a tested crate");
        assert_eq!(suites.len(), 1);
        assert_eq!(suites[0].tests.len(), 1);
        // Nothing tested at all: rustdoc stopped before testing (it refused an option).
        std::fs::write(&output, "error: Unrecognized option: 'persist-doctests'\n").unwrap();
        assert!(read_suites(base).is_none());
    }

    #[test]
    fn a_rustdoc_that_refused_the_options_is_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("k")).unwrap();
        std::fs::write(tmp.path().join("k").join(THIS_RUN), "").unwrap();
        std::fs::write(tmp.path().join("k").join(OUTPUT), "").unwrap();
        assert!(read_suites(tmp.path()).is_none());
        std::fs::write(tmp.path().join("k").join(OUTPUT), "\nrunning 0 tests\n").unwrap();
        assert_eq!(read_suites(tmp.path()).unwrap().len(), 1);
        // A crate this run's rustdoc did not touch (kept from an earlier run) is not read.
        forget_marks(tmp.path());
        assert_eq!(read_suites(tmp.path()).unwrap().len(), 0);
    }

    #[test]
    fn plain_runs_are_split_by_crate() {
        let out = "   Compiling k v0.1.0\n   Doc-tests k\n\nrunning 2 tests\ntest src/lib.rs - a (line 3) ... ok\n\
                   test src/lib.rs - b (line 5) ... FAILED\ntest src/lib.rs - c (line 7) ... FAILED\n\nfailures:\n\n---- src/lib.rs - b (line 5) stdout ----\nboom\n\n\
                   ---- src/lib.rs - c (line 7) stdout ----\nTest executable failed.\nthread 'main' panicked at src/lib.rs:7:1:\nno\nstack backtrace:\n\n\
                   failures:\n    src/lib.rs - b (line 5)\n   Doc-tests other\n\nrunning 1 test\n\
                   test src/lib.rs - z (line 1) - compile ... ok\n";
        let suites = plain_results(out);
        assert_eq!(suites.len(), 2);
        assert_eq!(suites[0].crate_name, "k");
        assert_eq!(
            suites[0].recorded,
            [
                ("src/lib.rs - a (line 3)".to_string(), Outcome::Passed, None),
                (
                    "src/lib.rs - b (line 5)".to_string(),
                    Outcome::Failed,
                    Some("boom".to_string())
                ),
                (
                    "src/lib.rs - c (line 7)".to_string(),
                    Outcome::Failed,
                    Some("panicked at src/lib.rs:7:1:\nno".to_string())
                ),
            ]
        );
        assert!(suites[1].recorded.is_empty() && !suites[1].coverage);
    }

    /// Copies of one executable run one program, whatever their symbols say; a changed byte of
    /// code does not.
    #[test]
    fn executables_differing_in_code_are_not_one_program() {
        use object::{Object as _, ObjectSection as _};
        let tmp = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let offset = |name: &str| file.section_by_name(name).and_then(|s| s.file_range()).unwrap().0 as usize;
        let (text, symbols) = (offset(".text"), offset(".strtab"));
        let copy = |name: &str, at: Option<usize>| {
            let mut b = bytes.clone();
            if let Some(i) = at {
                b[i] ^= 0xff;
            }
            let path = tmp.path().join(name);
            std::fs::write(&path, b).unwrap();
            path
        };
        let (a, b) = (copy("a", None), copy("b", Some(symbols + 1)));
        assert!(same_program(&[a.clone(), b.clone()]));
        assert!(!same_program(&[a.clone(), b, copy("c", Some(text + 16))]));
        assert!(!same_program(&[a, tmp.path().join("missing")]));
    }
}
