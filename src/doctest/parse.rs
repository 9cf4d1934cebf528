//! Reads what rustdoc leaves of one crate's doctests: its libtest output (one line per
//! standalone doctest, and the failures), the generated runner of merged doctests (edition
//! 2024: names, flags and each test's number), and the directory names it persists
//! standalone doctests under.

/// How rustdoc reported one standalone doctest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reported {
    /// libtest's name: `src/lib.rs - path::item (line 5)`.
    pub name: String,
    pub kind: Kind,
    /// `ok`, `FAILED` or `ignored`.
    pub result: Result,
}

/// What a doctest is, as libtest's result line says (its name's suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Run; passes when it exits successfully.
    Run,
    /// `should_panic`: passes when it fails.
    ShouldPanic,
    /// `no_run`: compiled, never run.
    Compile,
    /// `compile_fail`: passes when it does not compile.
    CompileFail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Result {
    Ok,
    Failed,
    Ignored,
}

/// The doctests of libtest's output (`test NAME[ - should panic| - compile| - compile fail]
/// ... ok|FAILED|ignored`), in output order. Other lines are skipped.
pub fn results(output: &str) -> Vec<Reported> {
    let mut out = Vec::new();
    for line in output.lines() {
        let Some(rest) = line.trim_end().strip_prefix("test ") else {
            continue;
        };
        let Some((head, result)) = rest.rsplit_once(" ... ") else {
            continue;
        };
        let result = match result {
            "ok" => Result::Ok,
            "FAILED" => Result::Failed,
            r if r.starts_with("ignored") => Result::Ignored,
            _ => continue,
        };
        let (name, kind) = [
            (" - compile fail", Kind::CompileFail),
            (" - compile", Kind::Compile),
            (" - should panic", Kind::ShouldPanic),
        ]
        .into_iter()
        .find_map(|(suffix, kind)| head.strip_suffix(suffix).map(|n| (n, kind)))
        .unwrap_or((head, Kind::Run));
        out.push(Reported {
            name: name.to_string(),
            kind,
            result,
        });
    }
    out
}

/// What libtest printed for a failed test (its `---- NAME stdout ----` section), trimmed.
pub fn failure(output: &str, name: &str) -> Option<String> {
    let header = format!("---- {name} stdout ----");
    let mut lines = output.lines().skip_while(|l| l.trim_end() != header).skip(1);
    let body: Vec<&str> = lines
        .by_ref()
        .take_while(|l| !l.starts_with("---- ") && l.trim_end() != "failures:")
        .collect();
    let text = body.join("\n").trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The file and line of a doctest name (`FILE - ITEM (line N)`, or `FILE - (line N)` for a
/// crate-level one).
pub fn file_and_line(name: &str) -> Option<(&str, u32)> {
    let (file, _) = name.split_once(" - ")?;
    let line = name.strip_suffix(')')?.rsplit_once("(line ")?.1.parse().ok()?;
    Some((file, line))
}

/// The directory rustdoc persists a standalone doctest in, before its per-line counter:
/// the file with every character that is not ASCII alphanumeric made `_`, then the line
/// (`src/lib.rs`, line 7 → `src_lib_rs_7_`; the first doctest on that line gets `0`).
pub fn dir_prefix(file: &str, line: u32) -> String {
    let file: String = file
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{file}_{line}_")
}

/// One doctest of a merged runner (`doctest_runner_2024.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    pub name: String,
    pub ignore: bool,
    pub no_run: bool,
    pub should_panic: bool,
    /// Its number for `RUSTDOC_DOCTEST_RUN_NB_TEST`: its place in the runner's test list.
    pub index: usize,
}

/// The doctests of a merged runner's source: each `mod __doctest_K` declares
/// `new_doctest("NAME", ignore, "FILE", LINE, no_run, should_panic, …)`, and `main` pushes
/// the tests in the order that numbers them. `None` when the source is not of that shape.
pub fn merged_runner(source: &str) -> Option<Vec<Merged>> {
    let mut declared = std::collections::HashMap::new();
    for chunk in source.split("\nmod __doctest_").skip(1) {
        let (module, rest) = chunk.split_once(' ')?;
        // `mod __doctest_mod` holds the runner's helpers, not a test.
        let Some((_, args)) = rest.split_once("new_doctest(") else {
            continue;
        };
        let args = args.trim_start();
        let (name, rest) = string_literal(args)?;
        let fields: Vec<&str> = rest.splitn(6, ',').map(str::trim).collect();
        // fields: "", ignore, "FILE", LINE, no_run, should_panic…
        let flag = |i: usize| fields.get(i).map(|f| *f == "true");
        let (ignore, no_run, should_panic) = (flag(1)?, flag(4)?, fields.get(5)?.starts_with("true"));
        declared.insert(module.to_string(), (name, ignore, no_run, should_panic));
    }
    let mut tests = Vec::new();
    for push in source.split("tests.push(__doctest_").skip(1) {
        let module = push.split_once("::TEST")?.0;
        let (name, ignore, no_run, should_panic) = declared.get(module)?.clone();
        tests.push(Merged {
            name,
            ignore,
            no_run,
            should_panic,
            index: tests.len(),
        });
    }
    (!tests.is_empty() || declared.is_empty()).then_some(tests)
}

/// A Rust string literal at the start of `s` (as `{:?}` writes one); the rest after it.
fn string_literal(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()?.1 {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' => {
                    let rest = &body[i + 2..];
                    let hex = rest.strip_prefix('{')?.split_once('}')?.0;
                    out.push(char::from_u32(u32::from_str_radix(hex, 16).ok()?)?);
                    for _ in 0..hex.len() + 2 {
                        chars.next();
                    }
                }
                other => out.push(other),
            },
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_lines_give_each_doctest_its_kind_and_result() {
        let out = "\nrunning 5 tests\ntest src/lib.rs - add (line 19) ... ignored\n\
                   test src/lib.rs - add (line 11) - should panic ... FAILED\n\
                   test src/lib.rs - add (line 15) - compile ... ok\n\
                   test src/lib.rs - add (line 23) - compile fail ... ok\n\
                   test src/a-b.rs - m::S<'_>::f (line 3) ... ok\n\
                   test result: FAILED. 3 passed; 1 failed\n";
        let got: Vec<(String, Kind, Result)> = results(out).into_iter().map(|r| (r.name, r.kind, r.result)).collect();
        let want = [
            ("src/lib.rs - add (line 19)", Kind::Run, Result::Ignored),
            ("src/lib.rs - add (line 11)", Kind::ShouldPanic, Result::Failed),
            ("src/lib.rs - add (line 15)", Kind::Compile, Result::Ok),
            ("src/lib.rs - add (line 23)", Kind::CompileFail, Result::Ok),
            ("src/a-b.rs - m::S<'_>::f (line 3)", Kind::Run, Result::Ok),
        ];
        assert_eq!(got, want.map(|(n, k, r)| (n.to_string(), k, r)));
    }

    #[test]
    fn failures_are_cut_at_the_next_section() {
        let out = "failures:\n\n---- src/lib.rs - a (line 3) stdout ----\nerror[E0308]: mismatched types\n\
                   Couldn't compile the test.\n---- src/lib.rs - b (line 9) stdout ----\nother\n\nfailures:\n    x\n";
        assert_eq!(
            failure(out, "src/lib.rs - a (line 3)").unwrap(),
            "error[E0308]: mismatched types\nCouldn't compile the test."
        );
        assert_eq!(failure(out, "src/lib.rs - b (line 9)").unwrap(), "other");
        assert_eq!(failure(out, "src/lib.rs - c (line 1)"), None);
    }

    #[test]
    fn names_give_the_persisted_directory() {
        assert_eq!(file_and_line("src/lib.rs - add (line 7)"), Some(("src/lib.rs", 7)));
        assert_eq!(file_and_line("src/lib.rs - (line 1)"), Some(("src/lib.rs", 1)));
        assert_eq!(
            file_and_line("crates/a-b/src/x.rs - f (line 12)"),
            Some(("crates/a-b/src/x.rs", 12))
        );
        assert_eq!(file_and_line("no line"), None);
        assert_eq!(dir_prefix("crates/a-b/src/x.rs", 12), "crates_a_b_src_x_rs_12_");
    }

    #[test]
    fn merged_runners_number_their_tests_in_push_order() {
        let src = "extern crate test;\n\nmod __doctest_0 {\npub const TEST: test::TestDescAndFn = test::TestDescAndFn::new_doctest(\n\
                   \"src/lib.rs - add (line 11)\", false, \"src/lib.rs\", 11, false, true,\ntest::StaticTestFn(|| {}));\n}\n\n\
                   mod __doctest_1 {\npub const TEST: test::TestDescAndFn = test::TestDescAndFn::new_doctest(\n\
                   \"src/lib.rs - S<\\\"q\\\">::f (line 15)\", true, \"src/lib.rs\", 15, true, false,\ntest::StaticTestFn(|| {}));\n}\n\n\
                   mod __doctest_mod {\n    pub fn doctest_path() {}\n}\n\n\
                   fn main() {\n    tests.push(__doctest_1::TEST);\ntests.push(__doctest_0::TEST);\n}\n";
        let tests = merged_runner(src).unwrap();
        assert_eq!(
            tests,
            [
                Merged {
                    name: "src/lib.rs - S<\"q\">::f (line 15)".into(),
                    ignore: true,
                    no_run: true,
                    should_panic: false,
                    index: 0
                },
                Merged {
                    name: "src/lib.rs - add (line 11)".into(),
                    ignore: false,
                    no_run: false,
                    should_panic: true,
                    index: 1
                },
            ]
        );
        assert_eq!(merged_runner("fn main() { tests.push(__doctest_9::TEST); }"), None);
        assert_eq!(string_literal("\"a\\u{e9}b\" rest"), Some(("aéb".to_string(), " rest")));
    }
}
