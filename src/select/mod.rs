//! Test selection: which tests a run must run, given the last run's spectra and what it saw
//! of the workspace before it built ([`crate::spectra::Snapshot`]).
//!
//! A run looks at the workspace before it builds ([`look`]): every file of the packages (Rust
//! sources as a hash per line, other files as a digest) and the context that decides results
//! beyond them (toolchain, selection and flags, environment). Against the last run's snapshot
//! ([`choose()`]):
//!
//! - any change of context, any changed file that is not a Rust source with functions, and any
//!   edit of a Rust source outside the functions the coverage maps knew (items, `const`s,
//!   macros, attributes, doc comments, `use`s, a new method) runs every test, but lines added
//!   there that no test can feel ([`added`]: blank lines, comments, new free functions such as
//!   a new `#[test]`);
//! - otherwise the edit is located by a line diff in the functions it touches (every function
//!   whose span contains a changed line or an inserted one; a `const fn` may be evaluated at
//!   compile time, so its change runs every test, as does an edit of a member whose code runs
//!   while compiling: a proc macro, a build dependency), and a test is run again when it ran a line
//!   of a changed function, when it did not pass (failed, crashed, timed out, flaky, or with a
//!   warning), or when it is new; every other test's row is reused, its lines and blocks moved
//!   to where the diff says they went.
//!
//! After the build, [`Reuse::verify`] checks the diff against the new coverage maps: every
//! unchanged function must be found where its lines went, and every function of the new build
//! in a changed file must be one of those or inside a changed one; a test that ran a function
//! not found is run again, and a new function anywhere else (but in lines [`added`] judged
//! harmless) runs every test.

mod added;
mod binary;
mod choose;
mod deleted;
mod differences;
mod environment;
mod items;
mod located;
mod locate;
mod narrow;
mod reuse;
mod scripts;
mod snapshot;
mod targets;
mod verify;
pub mod volatile;

pub use binary::BinaryKey;
pub use choose::{Choice, choose};
pub use differences::differences;
pub use environment::changed_env;
pub use locate::{changed_files, changed_lines};
pub use narrow::Narrowed;
pub use reuse::{BlockRef, Known, Reuse, Row};
pub use scripts::script_inputs;
pub use snapshot::{
    CACHE_TAG_SIGNATURE, also_read, build_env, compile_time_files, dep_files, files, look, refresh_written_by_tests,
};
pub use verify::UnknownFunction;

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::path::Path;

    use super::locate::locate;
    use super::*;
    use crate::config::Selection;
    use crate::spectra::{FileState, FunctionSpan, Outcome, Snapshot, Spectra, TestRecord, line_hashes};

    fn span(start: u32, end: u32) -> FunctionSpan {
        FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        }
    }

    const OLD: &str = "use x;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n";

    fn locate_text(new: &str, spans: &[FunctionSpan]) -> Result<(Vec<Option<u32>>, Vec<FunctionSpan>), u32> {
        let refs: Vec<&FunctionSpan> = spans.iter().collect();
        let at = locate(&line_hashes(OLD.as_bytes()), &line_hashes(new.as_bytes()), &refs);
        if let Some(&((line, _), _)) = at.unplaced.first() {
            return Err(line);
        }
        if let Some(d) = at.deleted.first() {
            return Err(d.old.0);
        }
        match at.outside.first() {
            Some(&(line, _)) => Err(line),
            None => Ok((at.lines, at.touched.into_iter().cloned().collect())),
        }
    }

    /// Changed, added and deleted lines in today's coordinates; a new file whole; an
    /// unchanged file and other files left out.
    #[test]
    fn changed_lines_are_todays_lines_an_edit_wrote_or_enclosed() {
        let old = snapshot(OLD);
        // Line 3 changed, a line added after 7; line 1 deleted.
        let now = "fn a() {\n    9\n}\n\nfn b() {\n    2\n    3\n}\n";
        let mut new = snapshot(now);
        new.files.insert("src/new.rs".into(), FileState::lines(b"fn c() {}\n"));
        let changed = changed_lines(&old, &new);
        assert_eq!(changed["src/lib.rs"], [1, 2, 7]);
        assert_eq!(changed["src/new.rs"], [1]);
        assert_eq!(changed.len(), 2, "{changed:?}");
        assert!(changed_lines(&old, &snapshot(OLD)).is_empty());
    }

    #[test]
    fn an_edit_inside_a_function_touches_it_and_moves_the_lines_below() {
        let spans = [span(2, 4), span(6, 8)];
        let (lines, touched) =
            locate_text("use x;\nfn a() {\n    1;\n    3\n}\n\nfn b() {\n    2\n}\n", &spans).unwrap();
        assert_eq!(touched, [span(2, 4)]);
        assert_eq!(lines[2], None, "the changed line");
        assert_eq!(lines[5..8], [Some(7), Some(8), Some(9)], "b moved one line down");
        // A change of b's body alone.
        let (lines, touched) = locate_text("use x;\nfn a() {\n    1\n}\n\nfn b() {\n    5\n}\n", &spans).unwrap();
        assert_eq!(touched, [span(6, 8)]);
        assert_eq!(lines[..4], [Some(1), Some(2), Some(3), Some(4)]);
    }

    /// Comments and whitespace are no tokens: a comment changed beside code or on a line of its
    /// own, code indented again, and a comment line added or removed outside every function
    /// touch nothing, and every line keeps its place. A comment line added in a function
    /// touches it (a region of the coverage map may wrap the new line, which then counts as
    /// one of the function's lines: heck's `test10` in the selection benchmark), as does any
    /// edit with a token changed.
    #[test]
    fn an_edit_of_comments_or_whitespace_touches_no_function() {
        let spans = [span(2, 4), span(6, 8)];
        let old = "use x;\n// about a\nfn a() {\n    // why\n    1\n}\n\nfn b() {\n    2\n}\n";
        let spans_old = [span(3, 6), span(8, 10)];
        let refs: Vec<&FunctionSpan> = spans_old.iter().collect();
        let at = |new: &str| locate(&line_hashes(old.as_bytes()), &line_hashes(new.as_bytes()), &refs);
        let in_place = "use x; // imports\n// all about a\nfn a() {\n    // the reason\n      1 /* one */\n}\n\nfn b() {\n        2\n}\n";
        let same = at(in_place);
        assert!(same.touched.is_empty() && same.unplaced.is_empty() && same.outside.is_empty());
        assert_eq!(same.lines, (1..=10).map(Some).collect::<Vec<_>>());
        // The comment line outside every function removed: unplaced before tokens were read.
        let removed = at("use x;\nfn a() {\n    // why\n    1\n}\n\nfn b() {\n    2\n}\n");
        assert!(removed.touched.is_empty() && removed.unplaced.is_empty() && removed.deleted.is_empty());
        assert_eq!(
            removed.lines[2..],
            [Some(2), Some(3), Some(4), Some(5), Some(6), Some(7), Some(8), Some(9)]
        );
        // A comment line added in a, or a's comment line removed: a is touched, b only moves.
        for new in [
            "use x;\n// about a\nfn a() {\n    // why\n    // and how\n    1\n}\n\nfn b() {\n    2\n}\n",
            "use x;\n// about a\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n",
        ] {
            let added = at(new);
            assert_eq!(added.touched, [&spans_old[0]], "{new}");
            assert!(added.unplaced.is_empty() && added.outside.is_empty());
        }
        // The same tokens, seen as such only where the diff aligned them: code moved across
        // blank lines is a deletion and an insertion.
        let hashes = |t: &str| line_hashes(t.as_bytes());
        assert!(super::locate::same_tokens(&hashes(old), &hashes(in_place), &refs).is_some());
        let moved_code = ("f();\n\n// c\n\n", "\n// c\n\n\nf();\n");
        assert!(super::locate::same_tokens(&hashes(moved_code.0), &hashes(moved_code.1), &[]).is_none());
        // A token changed, with the comments: a is touched.
        let (_, touched) = locate_text("use x;\nfn a() {\n    2 // why\n}\n\nfn b() {\n    2\n}\n", &spans).unwrap();
        assert_eq!(touched, [span(2, 4)]);
        // A blank line inside a string literal is text: a is touched.
        let old = "fn a() -> &'static str {\n    \"x\n\ny\"\n}\n";
        let new = "fn a() -> &'static str {\n    \"x\n\n\ny\"\n}\n";
        let refs = [&spans[0]];
        let at = locate(&line_hashes(old.as_bytes()), &line_hashes(new.as_bytes()), &refs);
        assert_eq!(at.touched, [&span(2, 4)]);
    }

    /// An edit of comments alone reruns no test that ran the file's code (a comment changed
    /// outside every function ran every test before), but it is an edit: a test that ran no
    /// code of the workspace (one that reads the sources' text) runs again.
    #[test]
    fn an_edit_of_comments_alone_reruns_only_the_tests_that_read_no_code() {
        let commented = "use x;\n// a note\nfn a() {\n    1 // one\n}\n\nfn b() {\n        2\n}\n";
        let mut r = reuse(choose_new(commented, None));
        assert_eq!(r.reusable, [true, true, false], "t_fail runs because it failed");
        assert!(r.edited());
        let rows = r.rows(&[1]);
        let lines: Vec<(&str, u32)> = rows[0].lines.iter().map(|&u| r.unit_now(u)).collect();
        assert_eq!(
            lines,
            [("src/lib.rs", 7), ("src/lib.rs", 8)],
            "b's lines one further down"
        );
        let now: HashSet<FunctionSpan> = [span(3, 5), span(7, 9)].into_iter().collect();
        assert_eq!(r.verify(&now, true), Ok(0));
        // A comment changed and nothing else: the same lines, still an edit, so a test that
        // ran no code (one that reads the sources' text) runs again.
        let same_lines = OLD.replace("use x;", "use x; // c");
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), &same_lines).unwrap();
        let r = reuse(choose(last_run_with(&["t_text"]), &snapshot(&same_lines), dir.path()));
        assert_eq!(r.reusable, [true, true, false, false]);
        assert_eq!(r.ran_no_code, 1);
        // Unchanged, it is reused.
        std::fs::write(dir.path().join("src/lib.rs"), OLD).unwrap();
        let r = reuse(choose(last_run_with(&["t_text"]), &snapshot(OLD), dir.path()));
        assert_eq!(r.reusable, [true, true, false, true]);
    }

    /// A last run over OLD: `t_a` ran a, `t_b` ran b, `t_fail` ran b and failed.
    fn last_run() -> Spectra {
        last_run_with(&[])
    }

    /// [`last_run`] with more passing tests (`extra`, by name) that ran no code.
    fn last_run_with(extra: &[&str]) -> Spectra {
        use crate::spectra::{Unit, UnitId};
        let mut tests = vec![
            TestRecord::new("p", "t_a", Outcome::Passed),
            TestRecord::new("p", "t_b", Outcome::Passed),
            TestRecord::new("p", "t_fail", Outcome::Failed),
        ];
        tests.extend(extra.iter().map(|&name| TestRecord::new("p", name, Outcome::Passed)));
        let unit = |line| Unit {
            file: "src/lib.rs".into(),
            line,
        };
        let units = vec![unit(2), unit(3), unit(6), unit(7)];
        let mut rows: Vec<Vec<UnitId>> = [vec![0, 1], vec![2, 3], vec![2, 3]]
            .map(|r| r.into_iter().map(UnitId).collect())
            .into();
        rows.extend(extra.iter().map(|_| Vec::new()));
        let mut s = Spectra::from_tests("/ws".into(), tests, units, &rows);
        s.set_functions(vec![span(2, 4), span(6, 8)]);
        s.snapshot = Some(snapshot(OLD));
        s
    }

    fn snapshot(text: &str) -> Snapshot {
        let mut s = Snapshot::default();
        s.context.insert("toolchain".into(), "1".into());
        s.files.insert("src/lib.rs".into(), FileState::lines(text.as_bytes()));
        s.files.insert("Cargo.toml".into(), FileState::digest(b"[package]"));
        s
    }

    /// [`choose`] against the last run, with `new` as src/lib.rs now (`now` otherwise its
    /// snapshot).
    fn choose_new(new: &str, now: Option<Snapshot>) -> Choice {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), new).unwrap();
        choose(last_run(), &now.unwrap_or_else(|| snapshot(new)), dir.path())
    }

    fn reuse(choice: Choice) -> Box<Reuse> {
        match choice {
            Choice::Reuse(r) => r,
            Choice::All(why) => panic!("every test runs: {why:?}"),
        }
    }

    #[test]
    fn only_the_tests_that_ran_a_changed_function_or_failed_run_again() {
        // b's body changed: t_b runs, t_a's row is reused, t_fail runs because it failed.
        let r = reuse(choose_new("use x;\nfn a() {\n    1\n}\n\nfn b() {\n    5\n}\n", None));
        assert_eq!(r.reusable, [true, false, false]);
        // A line added in a: t_a runs; t_b's row is reused with its lines one further down.
        let longer_a = "use x;\nfn a() {\n    0;\n    1\n}\n\nfn b() {\n    2\n}\n";
        let mut r = reuse(choose_new(longer_a, None));
        assert_eq!(r.reusable, [false, true, false]);
        let rows = r.rows(&[1]);
        let lines: Vec<(&str, u32)> = rows[0].lines.iter().map(|&u| r.unit_now(u)).collect();
        assert_eq!(lines, [("src/lib.rs", 7), ("src/lib.rs", 8)]);
        // The new build has b where the diff says it went, and a (changed) one line longer.
        let now: HashSet<FunctionSpan> = [span(2, 5), span(7, 9)].into_iter().collect();
        assert_eq!(r.verify(&now, true), Ok(0));
        assert_eq!(r.reusable, [false, true, false]);
        // A build where b is not where the diff put it: t_b runs too.
        let mut r2 = reuse(choose_new(longer_a, None));
        let elsewhere: HashSet<FunctionSpan> = [span(2, 5), span(7, 10)].into_iter().collect();
        assert!(
            r2.verify(&elsewhere, true).is_err(),
            "a function the last run did not know"
        );
        // b missing: from a build of some binaries only, it may be in the others (its place
        // stands); from the whole build, it is gone and t_b runs.
        let without_b: HashSet<FunctionSpan> = [span(2, 5)].into_iter().collect();
        let mut r3 = reuse(choose_new(longer_a, None));
        assert_eq!(r3.verify(&without_b, false), Ok(0));
        assert_eq!(r3.known_now().1.len(), 1, "b is still known, where the diff put it");
        assert_eq!(r2.verify(&without_b, true), Ok(1));
        assert_eq!(r2.reusable, [false, false, false]);
    }

    /// A function nested in another (a visitor's methods inside a generic `deserialize`): a
    /// narrowed build may hold the inner one only (the outer is instantiated in other
    /// binaries). The inner one where the diff put it says nothing against the outer's place,
    /// so the outer one's tests are reused and its lines stay known (before, it was taken for
    /// lost: email_address's selected run reran its tests and named 13 lines fewer than a full
    /// run).
    #[test]
    fn a_nested_function_alone_in_a_narrowed_build_keeps_the_outer_one() {
        let longer_a = "use x;\nfn a() {\n    0;\n    1\n}\n\nfn b() {\n    2\n}\n";
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), longer_a).unwrap();
        let mut last = last_run();
        last.set_functions(vec![span(2, 4), span(6, 8), span(6, 7)]);
        let mut r = reuse(choose(last, &snapshot(longer_a), dir.path()));
        assert_eq!(r.reusable, [false, true, false]);
        let inner_only: HashSet<FunctionSpan> = [span(2, 5), span(7, 8)].into_iter().collect();
        assert_eq!(r.verify(&inner_only, false), Ok(0));
        assert_eq!(r.reusable, [false, true, false]);
        assert!(
            r.known_now().1.contains(&span(7, 9)),
            "b is still known, where the diff put it"
        );
        // The whole build without b: b is gone, and t_b runs.
        let mut r = reuse(choose(
            {
                let mut l = last_run();
                l.set_functions(vec![span(2, 4), span(6, 8), span(6, 7)]);
                l
            },
            &snapshot(longer_a),
            dir.path(),
        ));
        assert_eq!(r.verify(&inner_only, true), Ok(1));
    }

    /// A new test written below the others (the edit before a run that should show the bug)
    /// runs alone: every row of the last run but the failing one is reused, the new build's
    /// function there is the new test's; a new item that is not a function still runs every
    /// test.
    #[test]
    fn a_new_test_below_the_others_reuses_every_row() {
        let with_test = format!("{OLD}\n#[test]\nfn c() {{\n    assert_eq!(1, 2);\n}}\n");
        let mut r = reuse(choose_new(&with_test, None));
        assert_eq!(r.reusable, [true, true, false]);
        let now: HashSet<FunctionSpan> = [span(2, 4), span(6, 8), span(10, 13)].into_iter().collect();
        assert_eq!(r.verify(&now, true), Ok(0));
        assert_eq!(r.reusable, [true, true, false]);
        // A function the build has outside the inserted lines is still unexplained.
        let mut r = reuse(choose_new(&with_test, None));
        let odd: HashSet<FunctionSpan> = [span(2, 4), span(6, 8), span(10, 13), span(3, 3)].into_iter().collect();
        assert!(r.verify(&odd, true).is_err());
        let with_static = format!("{OLD}\nstatic N: u8 = 1;\n");
        match choose_new(&with_static, None) {
            Choice::All(Some(why)) => assert_eq!(why, "src/lib.rs changed outside a function (line 9)"),
            _ => panic!("a new static may change what a test sees"),
        }
    }

    #[test]
    fn a_change_of_context_files_or_items_runs_every_test() {
        let all = |c: Choice| match c {
            Choice::All(why) => why.unwrap(),
            Choice::Reuse(_) => panic!("rows reused"),
        };
        let mut now = snapshot(OLD);
        now.context.insert("toolchain".into(), "2".into());
        assert_eq!(all(choose_new(OLD, Some(now))), "the toolchain changed");
        let mut now = snapshot(OLD);
        now.context
            .insert("cargo configuration /w/.cargo/config.toml".into(), "1".into());
        assert!(
            all(choose_new(OLD, Some(now)))
                .ends_with("is read by this run, not by the last one (run from another directory?)")
        );
        let mut now = snapshot(OLD);
        now.files.insert("Cargo.toml".into(), FileState::digest(b"[package]\n"));
        assert_eq!(all(choose_new(OLD, Some(now))), "Cargo.toml changed");
        let mut now = snapshot(OLD);
        now.files.insert("tests/data.txt".into(), FileState::digest(b""));
        assert_eq!(all(choose_new(OLD, Some(now))), "tests/data.txt was added");
        // A new test target is a crate no other target sees; a new module, build script or
        // trybuild case (read by a test) is not one.
        let with = |files: &[&str]| {
            let mut now = snapshot(OLD);
            for f in files {
                now.files
                    .insert(f.to_string(), FileState::lines(b"#[test]\nfn t() {}\n"));
            }
            choose_new(OLD, Some(now))
        };
        for target in [
            &["tests/extra.rs"][..],
            &["tests/extra/main.rs"],
            &["examples/e.rs"],
            &["src/bin/b.rs"],
        ] {
            let r = reuse(with(target));
            assert_eq!(r.reusable, [true, true, false], "{target:?}");
            assert_eq!(r.added[*target.last().unwrap()], [(1, 2)]);
        }
        for other in [
            "src/extra.rs",
            "build.rs",
            "tests/ui/case.rs",
            "crates/x/tests/y.rs",
            "tests/.rs",
        ] {
            assert_eq!(all(with(&[other])), format!("{other} was added"));
        }
        let mut member = snapshot(OLD);
        member
            .files
            .insert("crates/x/Cargo.toml".into(), FileState::digest(b"[package]"));
        assert!(super::targets::new_target_root("crates/x/tests/y.rs", &member));
        assert!(!super::targets::new_target_root("crates/y/tests/y.rs", &member));
        let now = "use y;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n";
        assert_eq!(
            all(choose_new(now, None)),
            "src/lib.rs changed outside a function (line 1)"
        );
        let mut old = last_run();
        old.snapshot = None;
        assert!(all(choose(old, &snapshot(OLD), Path::new("/nonexistent"))).contains("do not say"));
        // Nothing changed: every passing test's row is reused.
        assert_eq!(reuse(choose_new(OLD, None)).reusable, [true, true, false]);
    }

    #[test]
    fn a_change_of_the_environment_reruns_the_tests_that_read_it() {
        let with_env = |name: &str, value: &str, declared: &[&str]| {
            let mut last = last_run();
            last.tests[0].env_reads = Some(vec!["APP_MODE".into()]);
            last.tests[1].env_reads = None;
            let then = last.snapshot.as_mut().unwrap();
            then.build_env = declared.iter().map(|d| d.to_string()).collect();
            then.context.insert(format!("env:{name}"), "old".into());
            let mut now = snapshot(OLD);
            now.context.insert(format!("env:{name}"), value.into());
            choose(last, &now, Path::new("/nonexistent"))
        };
        // Read by t_a; t_b's reads were not watched; t_fail runs anyway.
        let r = reuse(with_env("APP_MODE", "new", &[]));
        assert_eq!(r.reusable, [false, false, false]);
        assert!(
            r.env_note.as_deref().unwrap().contains("APP_MODE changed"),
            "{:?}",
            r.env_note
        );
        // Read by no test that was watched: only the unwatched one runs.
        assert_eq!(reuse(with_env("TMUX_PANE", "%3", &[])).reusable, [true, false, false]);
        // Read by builds: every test.
        for (name, declared) in [("RUSTFLAGS", &[][..]), ("PATH", &[]), ("APP_KEY", &["APP_KEY"])] {
            match with_env(name, "new", declared) {
                Choice::All(Some(why)) => assert!(why.contains(name), "{why}"),
                _ => panic!("{name}: rows reused"),
            }
        }
    }

    #[test]
    fn only_the_targets_of_the_tests_that_run_again_are_built() {
        let mut last = last_run();
        let binaries = ["p", "p::integration", "q::bin/cli", "p::doctest/p", "q::example/e"];
        last.tests = binaries
            .iter()
            .map(|b| TestRecord::new(*b, "t", Outcome::Passed))
            .collect();
        let mut r = reuse(choose_new(OLD, None));
        let user = Selection {
            features: vec!["f".into()],
            workspace: true,
            ..Selection::default()
        };
        r.previous = last;
        r.reusable = vec![true; 5];
        let nothing = r.narrowed(&user).unwrap();
        assert!(
            nothing.tests.is_none() && nothing.doctests.is_none(),
            "nothing changed, nothing runs: no build"
        );
        r.reusable = vec![false, false, false, true, true];
        let n = r.narrowed(&user).unwrap();
        assert!(n.doctests.is_none());
        let t = n.tests.unwrap();
        assert_eq!(
            (t.lib, t.test, t.bin),
            (true, vec!["integration".to_string()], vec!["cli".to_string()])
        );
        // The packages stay the user's (`--workspace`): cargo unifies features over the
        // packages selected, so fewer packages could build one with fewer features.
        assert!(t.workspace && t.package.is_empty() && t.no_doctests && !t.doc && t.features == ["f"]);
        r.reusable = vec![true, true, true, false, true];
        let n = r.narrowed(&user).unwrap();
        let d = n.doctests.unwrap();
        assert!(n.tests.is_none() && d.doc && !d.lib && d.workspace && d.features == ["f"]);
        r.reusable[4] = false;
        let e = r.narrowed(&user).unwrap().tests.unwrap();
        assert_eq!(
            (e.workspace, e.example, e.lib, e.examples),
            (true, vec!["e".to_string()], false, false),
            "an example's test runs again: that example is built with the harness"
        );
        let one = Selection {
            package: vec!["p".into()],
            ..user.clone()
        };
        r.reusable = vec![false, true, true, true, true];
        let p = r.narrowed(&one).unwrap().tests.unwrap();
        assert!(p.package == ["p"] && p.lib && p.test.is_empty(), "{p:?}");
        r.reusable = vec![true; 5];
        r.moved.insert("src/lib.rs".into(), Vec::new());
        assert!(
            r.narrowed(&user).is_none(),
            "an edit no test ran: the whole build checks it compiles"
        );
    }

    #[test]
    fn a_changed_const_fn_runs_every_test() {
        let new = "use x;\nconst fn a() -> u32 {\n    2\n}\n\nfn b() {\n    2\n}\n";
        match choose_new(new, None) {
            Choice::All(Some(why)) => assert!(why.contains("const fn"), "{why}"),
            _ => panic!("a const fn may be evaluated while compiling"),
        }
    }

    #[test]
    fn an_edit_outside_every_function_is_located_nowhere() {
        let spans = [span(2, 4), span(6, 8)];
        assert_eq!(
            locate_text("use y;\nfn a() {\n    1\n}\n\nfn b() {\n    2\n}\n", &spans).unwrap_err(),
            1
        );
        // A new function between a and b: inserted after line 4, which no span continues (left
        // for `added::new_names` to judge).
        let added = "use x;\nfn a() {\n    1\n}\nfn c() {}\n\nfn b() {\n    2\n}\n";
        assert_eq!(locate_text(added, &spans), Err(4));
        // The same file unchanged: nothing touched.
        let (lines, touched) = locate_text(OLD, &spans).unwrap();
        assert!(touched.is_empty());
        assert!(lines.iter().all(Option::is_some));
    }
}
