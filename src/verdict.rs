//! What a test process did, read from its exit status and its output: the outcome, the
//! failure message, and the panic's backtrace. The runner ([`crate::run`]) and the doctests'
//! plain run ([`crate::doctest`]) read their processes' output here.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use crate::spectra::Outcome;

/// A backtrace frame as the panic hook printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    pub function: String,
    pub path: PathBuf,
    pub line: u32,
}

/// What a finished process did. `name`: the libtest test it ran (`None`: a whole binary run
/// with no arguments, whose harness prints what it likes).
///
/// `captured`: libtest captured the test's output (as under `cargo test`, where it prints it
/// only for a test that fails); a process that ends before libtest reports the test (killed at
/// its timeout, by a signal, or by `exit`) takes that output with it, and its message says so.
pub(crate) fn classify(
    status: Option<ExitStatus>,
    output: &str,
    timeout: Duration,
    name: Option<&str>,
    captured: bool,
) -> (Outcome, Option<i32>, Option<String>) {
    let lost = |mut msg: String| {
        if captured && name.is_some() && !output.contains(CAPTURED_HEADER_END) {
            msg.push_str(LOST_OUTPUT);
        }
        msg
    };
    let Some(status) = status else {
        let mut msg = format!("timed out after {}s and was killed", timeout.as_secs_f64());
        if let Some(tail) = tail(output, 3) {
            msg.push('\n');
            msg.push_str(&tail);
        }
        return (Outcome::TimedOut, None, Some(lost(msg)));
    };
    if status.success() {
        return match name {
            Some(name) if !libtest_passed(output, name) => {
                (Outcome::Failed, None, Some(lost(early_exit(output, name))))
            }
            _ => (Outcome::Passed, None, None),
        };
    }
    if let Some(sig) = crate::platform::exit_signal(&status) {
        let mut msg = format!("killed by signal {sig} ({})", signal_name(sig));
        if let Some(m) = panic_message(output).or_else(|| tail(output, 3)) {
            msg.push('\n');
            msg.push_str(&m);
        }
        return (Outcome::Crashed, Some(sig), Some(lost(msg)));
    }
    // A `#[should_panic]` test that did not panic: any panic in its output is one it caught
    // (a thread's, joined with `unwrap_or`), not its failure.
    if let Some(note) = did_not_panic(output) {
        let caught = panic_message(output)
            .and_then(|m| m.lines().next().map(str::to_string))
            .map(|first| format!("\n(a panic it caught or a thread had: {first})"))
            .unwrap_or_default();
        return (Outcome::Failed, None, Some(format!("{note}{caught}")));
    }
    let msg = panic_message(output)
        .map(|m| m + &should_panic_note(output))
        .or_else(|| tail(output, 5))
        .or_else(|| status.code().map(|c| lost(format!("exited with status {c}"))));
    (Outcome::Failed, None, msg)
}

/// libtest's note on a `#[should_panic]` test that did not panic (`test did not panic as
/// expected`, with the test's location on newer toolchains).
pub(crate) fn did_not_panic(output: &str) -> Option<&str> {
    output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("note: "))
        .find(|l| l.starts_with("test did not panic as expected"))
}

/// libtest's note on a `#[should_panic(expected = …)]` test whose panic said something else
/// (the note and the two lines after it), which is why it failed; empty when there is none.
fn should_panic_note(output: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let Some(at) = lines.iter().position(|l| {
        l.trim_start()
            .starts_with("note: panic did not contain expected string")
    }) else {
        return String::new();
    };
    lines[at..lines.len().min(at + 3)]
        .iter()
        .map(|l| format!("\n{}", l.trim()))
        .collect()
}

/// How libtest's report of a failed test's captured output ends its heading
/// (`---- NAME stdout ----`).
const CAPTURED_HEADER_END: &str = " stdout ----";
/// Said of a libtest test whose process ended before libtest could print its captured output.
const LOST_OUTPUT: &str = "\n(libtest captured the test's output, as under `cargo test`, and it ended with the \
                           process: `cargo sfl -- --nocapture` keeps it)";

/// What a doctest process did: as rustdoc judges it, by its exit status alone, inverted for
/// `should_panic` (any failure to finish passes, as under rustdoc).
pub(crate) fn classify_doctest(
    status: Option<ExitStatus>,
    output: &str,
    timeout: Duration,
    should_panic: bool,
) -> (Outcome, Option<i32>, Option<String>) {
    match status {
        Some(s) if should_panic && s.success() => (
            Outcome::Failed,
            None,
            Some("the doctest ran to its end, but it is marked should_panic".into()),
        ),
        Some(_) if should_panic => (Outcome::Passed, None, None),
        _ => classify(status, output, timeout, None, false),
    }
}

/// Whether libtest itself said `name` passed: its result line (`test NAME ... ok`, with
/// ` - should panic` for `#[should_panic]`; the test's own unterminated output may precede it)
/// or its summary. A test that calls `std::process::exit(0)` exits 0 without either. Colour
/// codes are ignored: libtest-mimic 0.6 colours `ok` when its output is a pipe, and does not
/// capture the test's output, which can come between the name and `ok` (then only the summary
/// says it).
fn libtest_passed(output: &str, name: &str) -> bool {
    let (plain, should_panic) = (
        format!("test {name} ... ok"),
        format!("test {name} - should panic ... ok"),
    );
    console::strip_ansi_codes(output)
        .lines()
        .map(str::trim_end)
        .any(|l| l.ends_with(&plain) || l.ends_with(&should_panic) || l.starts_with("test result: ok. 1 passed;"))
}

/// The message of a test that exited 0 before libtest reported its result.
fn early_exit(output: &str, name: &str) -> String {
    let mut msg = format!(
        "exited before libtest reported a result (status 0 but no `test {name} ... ok` line: \
         did the test call std::process::exit?)"
    );
    if let Some(tail) = tail(output, 3) {
        msg.push('\n');
        msg.push_str(&tail);
    }
    msg
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        4 => "SIGILL",
        5 => "SIGTRAP",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        _ => "signal",
    }
}

/// `panicked at src/lib.rs:30:9:` → (`src/lib.rs`, 30, 9): where a failure message's
/// (first) panic was raised.
pub(crate) fn panic_site(message: &str) -> Option<(String, u32, u32)> {
    let rest = message.lines().find_map(|l| l.trim().strip_prefix("panicked at "))?;
    let rest = rest.trim_end_matches(':');
    let mut parts = rest.rsplitn(3, ':');
    let col = parts.next()?.parse().ok()?;
    let line = parts.next()?.parse().ok()?;
    Some((parts.next()?.to_string(), line, col))
}

/// The panic message: the `panicked at` line and the lines after it, up to [`PANIC_LINES`] in
/// all, to what std or libtest print after a message (a note, a backtrace, the summary of the
/// failures) or the next panic. When the test
/// panicked more than once, the last panic follows the first (`then panicked at …`): the first
/// may be one the test caught and handled (`catch_unwind`), the last may be the re-raise of a
/// thread's or a task's panic (`unwrap` of a join's error), and `cargo test` shows them all.
pub(crate) fn panic_message(output: &str) -> Option<String> {
    let panics = panics(output);
    let (first, last) = (panics.first()?, panics.last()?);
    Some(if last.text == first.text {
        first.text.clone()
    } else {
        format!("{}\nthen {}", first.text, last.text)
    })
}

/// The most lines of a panic message kept, its `panicked at` line included.
const PANIC_LINES: usize = 40;

/// One panic in a test's output: the thread it names (`None` for a stack overflow), and its
/// `panicked at` line with the message after it ([`panic_message`]).
struct Panic<'a> {
    thread: Option<&'a str>,
    text: String,
}

impl Panic<'_> {
    /// The message the panic carried (the lines after `panicked at …`), as its payload's `Debug`
    /// shows it: `"index out of bounds: …"`, newlines as `\n`.
    fn payload_debug(&self) -> Option<String> {
        let (_, message) = self.text.split_once('\n')?;
        Some(format!("{message:?}"))
    }
}

/// The panics of `output`, in order.
fn panics(output: &str) -> Vec<Panic<'_>> {
    let starts = |l: &str| l.contains("panicked at") || l.contains("has overflowed its stack");
    let lines: Vec<&str> = output.lines().collect();
    let mut out = Vec::new();
    for (start, line) in lines.iter().enumerate() {
        if !starts(line) {
            continue;
        }
        let first = line.find("panicked at").map_or(*line, |i| &line[i..]);
        let mut text = vec![first.to_string()];
        let mut cut = 0;
        for l in &lines[start + 1..] {
            let next_panic = panicking_thread(l).is_some() || l.contains("has overflowed its stack");
            // What std prints after the message, then libtest's summary of the failure.
            let after = l.starts_with("note: ")
                || l.starts_with("stack backtrace:")
                || *l == "failures:"
                || l.starts_with("---- ")
                || l.starts_with("test result: ");
            if after || next_panic {
                break;
            }
            if text.len() >= PANIC_LINES {
                cut += 1;
                continue;
            }
            text.push((*l).to_string());
        }
        // A message of several paragraphs (pretty_assertions' diff, proptest's shrunk input
        // after a blank line) keeps them; the blank lines before what ends it do not count.
        while text.last().is_some_and(|l| l.trim().is_empty()) {
            text.pop();
        }
        if cut > 0 {
            text.push(format!("… ({cut} more lines in the test's output)"));
        }
        out.push(Panic {
            thread: panicking_thread(line),
            text: text.join("\n"),
        });
    }
    out
}

/// Whether the test's first panic was one it caught and went on from: it panicked again later
/// on the same thread (libtest's thread for the test, named after it). The first panic's stack
/// is then not where the test failed (a test that checks that `checked(-1)` panics, then fails
/// an assertion), and it is no evidence; the panic messages show both. A first panic on another
/// thread (a thread or a task whose join the test unwrapped) is what failed the test, and its
/// stack stays; so does one whose message the last panic carries, quoted as its payload's
/// `Debug` shows it: a task of a current-thread runtime panics on the test's own thread, and the
/// test's `unwrap` of the join says `JoinError::Panic(Id(2), "index out of bounds: …", ...)`.
pub(crate) fn went_on_after_first_panic(output: &str) -> bool {
    let panics = panics(output);
    let [first, .., last] = panics.as_slice() else {
        return false;
    };
    let re_raised = first.payload_debug().is_some_and(|p| last.text.contains(&p));
    first.thread.is_some() && first.thread == last.thread && !re_raised
}

/// The thread a `thread 'NAME' panicked at …` line names.
fn panicking_thread(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("thread '")?;
    let (name, after) = rest.split_once('\'')?;
    after.contains("panicked at").then_some(name)
}

/// The frames of the first panic backtrace in `output` that carry a source location
/// (`  3: crate::f` followed by `      at ./src/lib.rs:2:23`), innermost first.
pub(crate) fn panic_stack(output: &str) -> Vec<RawFrame> {
    let mut lines = output.lines().skip_while(|l| l.trim() != "stack backtrace:").skip(1);
    let mut frames = Vec::new();
    let mut function: Option<&str> = None;
    for l in lines.by_ref() {
        let t = l.trim();
        if let Some(at) = t.strip_prefix("at ") {
            // `path:line:column`; the path may itself hold colons.
            let mut parts = at.rsplitn(3, ':');
            let (_col, line, path) = (parts.next(), parts.next(), parts.next());
            if let (Some(f), Some(line), Some(path)) = (function, line.and_then(|n| n.parse().ok()), path) {
                frames.push(RawFrame {
                    function: f.to_string(),
                    path: PathBuf::from(path),
                    line,
                });
            }
        } else if let Some((n, f)) = t.split_once(": ")
            && n.chars().all(|c| c.is_ascii_digit())
        {
            function = Some(f);
        } else {
            break;
        }
    }
    fold(frames)
}

/// Drops frames that say nothing new: libtest calls a test through a closure of the test's
/// own (`t::{closure#0}` just outside `t`), and a frame on the same line as the one inside it.
pub(crate) fn fold(frames: Vec<RawFrame>) -> Vec<RawFrame> {
    let mut kept: Vec<RawFrame> = Vec::with_capacity(frames.len());
    for f in frames {
        if let Some(inner) = kept.last() {
            let parent = f
                .function
                .strip_suffix('}')
                .and_then(|n| n.rsplit_once("::{"))
                .map(|(p, _)| p);
            if parent == Some(inner.function.as_str()) || (inner.path == f.path && inner.line == f.line) {
                continue;
            }
        }
        kept.push(f);
    }
    kept
}

/// The last `n` lines that are not libtest's own bookkeeping. An uncaptured test's first
/// printed line follows libtest's `test NAME ... ` on the same line: that part is kept.
fn tail(output: &str, n: usize) -> Option<String> {
    let keep: Vec<&str> = captured_section(output)
        .lines()
        .filter_map(|l| {
            let t = l.trim();
            let own = t.is_empty() || t.starts_with("running ") || t.starts_with("test result:") || t == "failures:";
            if own || (t.starts_with("test ") && t.ends_with(" ...")) {
                return None;
            }
            match t.strip_prefix("test ").and_then(|r| r.split_once(" ... ")) {
                Some((_, rest)) => {
                    let rest = rest.trim();
                    (!matches!(rest, "" | "ok" | "FAILED" | "ignored")).then_some(rest)
                }
                None => Some(l.trim_end()),
            }
        })
        .collect();
    (!keep.is_empty()).then(|| keep[keep.len().saturating_sub(n)..].join("\n"))
}

/// What a failed test printed, when libtest captured it: the text under its heading
/// (`---- NAME stdout ----`), up to the list of failures that closes libtest's report; else the
/// whole output.
fn captured_section(output: &str) -> &str {
    let Some(start) = output.find("\n---- ").filter(|&i| {
        output[i + 1..]
            .lines()
            .next()
            .is_some_and(|l| l.ends_with(CAPTURED_HEADER_END))
    }) else {
        return output;
    };
    let body = output[start + 1..].split_once('\n').map_or("", |(_, rest)| rest);
    body.rfind("\nfailures:\n").map_or(body, |end| &body[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_stacks_are_read_from_short_backtraces() {
        let out = "thread 't' panicked at src/lib.rs:2:23:\nattempt to subtract with overflow\n\
                   stack backtrace:\n   0: __rustc::rust_begin_unwind\n             at /rustc/x/library/std/src/panicking.rs:689:5\n\
                   \x20  3: bt::g\n             at ./src/lib.rs:2:23\n   4: bt::f\n             at /w/c:d/src/lib.rs:1:27\n\
                   \x20  9: std::rt::lang_start\nnote: Some details are omitted\n   10: after::note\n      at ./x.rs:1:1\n";
        let frames = panic_stack(out);
        let got: Vec<(&str, &str, u32)> = frames
            .iter()
            .map(|f| (f.function.as_str(), f.path.to_str().unwrap(), f.line))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "__rustc::rust_begin_unwind",
                    "/rustc/x/library/std/src/panicking.rs",
                    689
                ),
                ("bt::g", "./src/lib.rs", 2),
                ("bt::f", "/w/c:d/src/lib.rs", 1),
            ]
        );
        assert!(panic_stack("thread 't' panicked at src/lib.rs:2:23:\nboom\n").is_empty());
        // libtest's wrapper closure and a second frame on one line are folded away.
        let wrapped = "stack backtrace:\n   0: c::g\n      at ./src/lib.rs:2:1\n   1: c::g\n      at ./src/lib.rs:2:9\n\
                       \x20  2: c::tests::t\n      at ./src/lib.rs:9:5\n   3: c::tests::t::{{closure}}\n      at ./src/lib.rs:8:10\n";
        let names: Vec<String> = panic_stack(wrapped).into_iter().map(|f| f.function).collect();
        assert_eq!(names, ["c::g", "c::tests::t"]);
    }

    #[test]
    fn panic_messages_are_cut_before_notes() {
        let out = "running 1 test\nthread 'tests::t1' panicked at src/lib.rs:30:9:\nleast = 1, most = 0\nnote: run with `RUST_BACKTRACE=1`\ntest tests::t1 ... FAILED\n";
        assert_eq!(
            panic_message(out).unwrap(),
            "panicked at src/lib.rs:30:9:\nleast = 1, most = 0"
        );
        // A message of paragraphs (pretty_assertions' diff after a blank line) keeps them, up
        // to the summary libtest prints when no note came (a process's second panic).
        let diff = "---- tests::t stdout ----\nthread 'tests::t' panicked at tests/f.rs:67:5:\nassertion failed: `(left == right)`\n\nDiff < left / right > :\n<[1, 2]\n>[1]\n\n\nfailures:\n    tests::t\n";
        assert_eq!(
            panic_message(diff).unwrap(),
            "panicked at tests/f.rs:67:5:\nassertion failed: `(left == right)`\n\nDiff < left / right > :\n<[1, 2]\n>[1]"
        );
        // A long one is cut, and says so.
        let long = format!(
            "thread 't' panicked at src/lib.rs:1:1:\n{}note: run with `RUST_BACKTRACE=1`\n",
            (0..50).map(|i| format!("line {i}\n")).collect::<String>()
        );
        let message = panic_message(&long).unwrap();
        assert_eq!(message.lines().count(), PANIC_LINES + 1);
        assert!(
            message.ends_with("line 38\n… (11 more lines in the test's output)"),
            "{message}"
        );
    }

    #[test]
    fn a_caught_panic_is_followed_by_the_one_that_failed_the_test() {
        let out = "thread 'tests::t' panicked at src/lib.rs:7:9:\nnegative input\nnote: run with \
                   `RUST_BACKTRACE=1`\n\nthread 'tests::t' panicked at src/lib.rs:20:9:\n\
                   assertion `left == right` failed\n  left: 6\n right: 4\n";
        assert_eq!(
            panic_message(out).unwrap(),
            "panicked at src/lib.rs:7:9:\nnegative input\nthen panicked at src/lib.rs:20:9:\n\
             assertion `left == right` failed\n  left: 6\n right: 4"
        );
    }

    #[test]
    fn a_caught_panic_on_the_test_s_thread_is_no_stack_but_a_joined_thread_s_is() {
        let caught = "thread 'tests::t' panicked at src/lib.rs:7:9:\nnegative input\n\
                      thread 'tests::t' panicked at src/lib.rs:20:9:\nassertion failed\n";
        assert!(went_on_after_first_panic(caught));
        let joined = "thread '<unnamed>' (42) panicked at src/lib.rs:3:5:\nboom\n\
                      thread 'tests::t' (41) panicked at src/lib.rs:9:30:\n\
                      called `Result::unwrap()` on an `Err` value: Any { .. }\n";
        assert!(!went_on_after_first_panic(joined));
        assert!(!went_on_after_first_panic(
            "thread 'tests::t' panicked at src/lib.rs:7:9:\nonce\n"
        ));
    }

    #[test]
    fn a_task_s_panic_re_raised_on_the_test_s_thread_keeps_its_stack() {
        // tokio's current-thread runtime runs the task on the test's thread; the join's error
        // quotes the task's panic.
        let task = "thread 'tests::t' (7) panicked at src/lib.rs:10:5:\nindex out of bounds: the len is 4 \
                    but the index is 7\nnote: run with `RUST_BACKTRACE=1`\n\
                    thread 'tests::t' (7) panicked at src/lib.rs:29:28:\ncalled `Result::unwrap()` on an \
                    `Err` value: JoinError::Panic(Id(2), \"index out of bounds: the len is 4 but the index \
                    is 7\", ...)\n";
        assert!(!went_on_after_first_panic(task));
        // A message of several lines is quoted with `\n`.
        let two_lines = "thread 't' panicked at src/lib.rs:3:5:\nassertion failed\n  left: 1\n\
                         thread 't' panicked at tests/t.rs:9:5:\nJoinError::Panic(Id(1), \
                         \"assertion failed\\n  left: 1\", ...)\n";
        assert!(!went_on_after_first_panic(two_lines));
        // A different message on the same thread is still a caught panic.
        let other = "thread 't' panicked at src/lib.rs:3:5:\nboom\n\
                     thread 't' panicked at tests/t.rs:9:5:\nJoinError::Panic(Id(1), \"bang\", ...)\n";
        assert!(went_on_after_first_panic(other));
    }

    #[test]
    fn a_should_panic_test_says_which_message_it_expected() {
        let out = "thread 'm' panicked at tests/edge.rs:11:69:\nother message\nnote: run with `RUST_BACKTRACE=1`\n\
                   note: panic did not contain expected string\n      panic message: \"other message\"\n \
                   expected substring: \"wrong message\"\n";
        assert_eq!(
            should_panic_note(out),
            "\nnote: panic did not contain expected string\npanic message: \"other message\"\n\
             expected substring: \"wrong message\""
        );
        assert_eq!(should_panic_note("thread 'm' panicked at a.rs:1:1:\nboom\n"), "");
    }

    /// A `#[should_panic]` test that did not panic fails for that, even when a thread it
    /// started panicked and the test caught it (`join().unwrap_or(0)`): the caught panic was
    /// the message before.
    #[cfg(unix)]
    #[test]
    fn a_should_panic_test_that_did_not_panic_says_so() {
        let out = "thread '<unnamed>' panicked at src/lib.rs:28:9:\nratio with zero denominator\n\
                   note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\
                   note: test did not panic as expected at tests/env.rs:45:4\n";
        let (outcome, _, message) = classify(exited(101), out, Duration::from_secs(1), Some("t"), false);
        assert_eq!(outcome, Outcome::Failed);
        assert_eq!(
            message.as_deref(),
            Some(
                "test did not panic as expected at tests/env.rs:45:4\n(a panic it caught or a thread had: panicked \
                 at src/lib.rs:28:9:)"
            )
        );
        assert_eq!(
            did_not_panic("note: test did not panic as expected\n"),
            Some("test did not panic as expected")
        );
        assert_eq!(did_not_panic("thread 'm' panicked at a.rs:1:1:\nboom\n"), None);
    }

    #[test]
    fn custom_harness_failures_keep_their_last_lines() {
        let out = "check a ... ok\ncheck b ... FAILED\n";
        assert_eq!(tail(out, 5).unwrap(), "check a ... ok\ncheck b ... FAILED");
    }

    #[cfg(unix)]
    fn exited(code: i32) -> Option<ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        Some(ExitStatus::from_raw(code << 8))
    }

    #[cfg(unix)]
    #[test]
    fn a_libtest_test_passes_only_when_libtest_says_so() {
        let t = Duration::from_secs(1);
        let ok = "\nrunning 1 test\nhello\ntest m::t1 ... ok\n\ntest result: ok. 1 passed; 0 failed\n";
        assert_eq!(classify(exited(0), ok, t, Some("m::t1"), false).0, Outcome::Passed);
        let panicked = "running 1 test\npartial output test m::t2 - should panic ... ok\n";
        assert_eq!(
            classify(exited(0), panicked, t, Some("m::t2"), false).0,
            Outcome::Passed
        );
        // std::process::exit(0) inside the test: libtest never got to say anything.
        let early = "\nrunning 1 test\nabout to leave";
        let (outcome, _, msg) = classify(exited(0), early, t, Some("m::t1"), false);
        assert_eq!(outcome, Outcome::Failed);
        let msg = msg.unwrap();
        assert!(msg.starts_with("exited before libtest reported a result"), "{msg}");
        assert!(msg.ends_with("about to leave"), "{msg}");
        // libtest-mimic 0.6 (toml_edit's compliance suites): `ok` coloured though the output is a
        // pipe, and the test's own uncaptured output between the name and the result.
        let mimic = "\nrunning 1 test\ntest invalid/a.toml ... \x1b[0m\x1b[32mok\x1b[0m\n\n\
                     test result: \x1b[0m\x1b[32mok\x1b[0m. 1 passed; 0 failed; 405 filtered out\n";
        assert_eq!(
            classify(exited(0), mimic, t, Some("invalid/a.toml"), false).0,
            Outcome::Passed
        );
        let interleaved = "\nrunning 1 test\ntest invalid/a.toml ... TOML parse error at line 1\n\
                           expected `]`\n\n\x1b[0m\x1b[32mok\x1b[0m\n\n\
                           test result: \x1b[0m\x1b[32mok\x1b[0m. 1 passed; 0 failed\n";
        assert_eq!(
            classify(exited(0), interleaved, t, Some("invalid/a.toml"), false).0,
            Outcome::Passed
        );
        // Another test's result line is not this one's.
        let other = "running 1 test\ntest m::t1 ... ok\n";
        assert_eq!(classify(exited(0), other, t, Some("t1"), false).0, Outcome::Failed);
        // A whole binary (harness = false) has no libtest lines: its status decides.
        assert_eq!(
            classify(exited(0), "all checks passed\n", t, None, false).0,
            Outcome::Passed
        );
        assert_eq!(
            classify(exited(1), "check a ... FAILED\n", t, None, false).0,
            Outcome::Failed
        );
    }

    /// libtest's capture (the default, as under `cargo test`): a failed test's output comes in
    /// its report; a process that ends first takes it along, and the message says so.
    #[cfg(unix)]
    #[test]
    fn captured_output_is_read_from_libtests_report() {
        let t = Duration::from_secs(1);
        let err = "\nrunning 1 test\ntest err ... FAILED\n\nfailures:\n\n---- err stdout ----\nsome output\n\
                   Error: \"bad input\"\n\n\nfailures:\n    err\n\ntest result: FAILED. 0 passed; 1 failed\n";
        let (outcome, _, msg) = classify(exited(101), err, t, Some("err"), true);
        assert_eq!(outcome, Outcome::Failed);
        assert_eq!(msg.unwrap(), "some output\nError: \"bad input\"");
        let panicked = "\nrunning 1 test\ntest pan ... FAILED\n\nfailures:\n\n---- pan stdout ----\nbefore\n\n\
                        thread 'pan' (8612) panicked at t.rs:2:40:\nsum\nnote: run with `RUST_BACKTRACE=1`\n\n\n\
                        failures:\n    pan\n\ntest result: FAILED. 0 passed; 1 failed\n";
        let (_, _, msg) = classify(exited(101), panicked, t, Some("pan"), true);
        assert_eq!(msg.unwrap(), "panicked at t.rs:2:40:\nsum");
        // `std::process::exit(1)` and `abort()` inside the test: libtest never printed it.
        let left = "\nrunning 1 test\ntest ex ... ";
        let (outcome, _, msg) = classify(exited(1), left, t, Some("ex"), true);
        assert_eq!(outcome, Outcome::Failed);
        assert_eq!(msg.unwrap(), format!("exited with status 1{LOST_OUTPUT}"));
        let (outcome, _, msg) = classify(exited(0), left, t, Some("ex"), true);
        assert_eq!(outcome, Outcome::Failed);
        assert!(msg.unwrap().ends_with(LOST_OUTPUT));
        let (outcome, _, msg) = classify(None, left, t, Some("ex"), true);
        assert_eq!(outcome, Outcome::TimedOut);
        assert!(msg.unwrap().ends_with(LOST_OUTPUT));
        // Uncaptured (`-- --nocapture`), the output is there to show, and nothing was lost; its
        // first line follows libtest's own on the same line.
        let (_, _, msg) = classify(
            exited(1),
            "\nrunning 1 test\ntest ex ... leaving\nbye\n",
            t,
            Some("ex"),
            false,
        );
        assert_eq!(msg.unwrap(), "leaving\nbye");
    }

    #[cfg(unix)]
    #[test]
    fn doctests_are_judged_by_status_and_should_panic() {
        let t = Duration::from_secs(1);
        assert_eq!(classify_doctest(exited(0), "", t, false).0, Outcome::Passed);
        let (outcome, _, msg) = classify_doctest(
            exited(101),
            "thread 'main' panicked at src/lib.rs:4:1:\nboom\n",
            t,
            false,
        );
        assert_eq!(
            (outcome, msg.unwrap().as_str()),
            (Outcome::Failed, "panicked at src/lib.rs:4:1:\nboom")
        );
        assert_eq!(classify_doctest(exited(101), "", t, true).0, Outcome::Passed);
        assert_eq!(classify_doctest(exited(0), "", t, true).0, Outcome::Failed);
        assert_eq!(classify_doctest(None, "", t, true).0, Outcome::TimedOut);
    }
}
