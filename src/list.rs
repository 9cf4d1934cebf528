//! Lists the tests a test binary holds, in the environment `cargo test` gives it: libtest's
//! JSON listing (every test and whether it is ignored, one process), else `--list --format
//! terse` and `--list --ignored` (a toolchain without the JSON listing, a custom harness).

use std::path::{Path, PathBuf};
use std::time::Duration;

use cargo_metadata::Package;

use crate::process::run_captured;
use crate::run::test_env;
use crate::spectra::TestRecord;
use crate::workspace::TestBinary;

/// The tests one binary holds.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    /// Runnable test names; empty with `whole` set when the harness cannot list tests.
    pub tests: Vec<String>,
    pub ignored: Vec<String>,
    /// The binary is run once, with no arguments, as a single test named `main`.
    pub whole: bool,
    /// Tests whose outcome is known without running them (doctests that are ignored or did not
    /// compile, or every doctest when rustdoc could not keep them).
    pub recorded: Vec<TestRecord>,
}

impl Listing {
    /// A binary run once, as a single test named `main`.
    pub fn whole() -> Self {
        Listing {
            whole: true,
            ..Listing::default()
        }
    }
}

/// A binary that could not be asked for its tests.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    #[error("cannot run {}: {source}", path.display())]
    CannotRun { path: PathBuf, source: std::io::Error },
    /// A libtest binary that did not answer `--list` (it could not start, or crashed).
    #[error("`{} --list` failed: {detail}", path.display())]
    Failed { path: PathBuf, detail: String },
}

/// Lists a binary's tests with `--list --format terse` (and `--ignored`); a library's
/// doctests are known from their build.
pub fn list(
    bin: &TestBinary,
    pkg: &Package,
    target_dir: &Path,
    profile: &str,
    scratch: &Path,
    timeout: Duration,
) -> Result<Listing, ListError> {
    if let Some(suite) = &bin.doctests {
        return Ok(Listing {
            tests: suite.tests.iter().map(|t| t.name.clone()).collect(),
            recorded: suite.records(&bin.id),
            ..Listing::default()
        });
    }
    let run = |args: &[&str]| -> Result<(bool, String), ListError> {
        let mut cmd = bin.command(&bin.path);
        cmd.args(["--list"]).args(args);
        test_env(&mut cmd, bin, pkg, target_dir, profile);
        // libtest takes `-Z unstable-options` (the JSON format) on a stable toolchain with it.
        if args.contains(&"unstable-options") {
            cmd.env("RUSTC_BOOTSTRAP", "1");
        }
        // Listing must not leave default.profraw files in the user's package directory.
        cmd.env("LLVM_PROFILE_FILE", scratch.join("list-%p.profraw"));
        let out_path = scratch.join(format!("list-{}.out", std::process::id()));
        let captured = run_captured(cmd, &out_path, timeout).map_err(|source| ListError::CannotRun {
            path: bin.path.clone(),
            source,
        })?;
        let output = if bin.runner.is_empty() {
            captured.output
        } else {
            listing_lines(&captured.output)
        };
        Ok((captured.status.is_some_and(|s| s.success()), output))
    };
    // A custom harness is not handed options it may not know (or may take for a test's name).
    if !bin.custom_harness {
        if let Some(listing) = kept_listing(&bin.path) {
            return Ok(listing);
        }
        let (ok, text) = run(&["--format", "json", "-Z", "unstable-options"])?;
        if let Some(listing) = parse_json(&text).filter(|_| ok) {
            keep_listing(&bin.path, &text);
            clean_dir_files(scratch, "list-");
            return Ok(listing);
        }
    }
    let result = listed_as_text(bin, &run);
    clean_dir_files(scratch, "list-");
    result
}

/// The lines of a listing that a test binary printed (JSON, `name: test`, `name: benchmark`,
/// the count after a plain listing), without what the target runner it ran through printed
/// beside them (valgrind's notes, a script's echo).
fn listing_lines(output: &str) -> String {
    output
        .lines()
        .filter(|l| {
            let l = l.trim_end();
            l.is_empty()
                || l.starts_with('{')
                || l.ends_with(": test")
                || l.ends_with(": benchmark")
                || (l.contains(" test") && l.contains(", ") && l.contains(" benchmark"))
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Runs a binary with `--list` and the arguments: whether it succeeded, and what it printed.
type Ask<'a> = &'a dyn Fn(&[&str]) -> Result<(bool, String), ListError>;

/// The listing `--list --format terse` gives (and with `--ignored`), or for a custom harness
/// that refuses it a plain `--list`; `run` asks the binary with `--list` and the arguments.
fn listed_as_text(bin: &TestBinary, run: Ask<'_>) -> Result<Listing, ListError> {
    let (ok, text) = run(&["--format", "terse"])?;
    let mut tests = if ok { parse_terse(&text) } else { None };
    // libtest2-mimic (toml's compliance suites) refuses `--format` without `-Z
    // unstable-options`, and lists the same lines plainly, with a count after them.
    let mut format: &[&str] = &["--format", "terse"];
    if tests.is_none() && bin.custom_harness {
        let (ok, text) = run(&[])?;
        tests = if ok { parse_plain(&text) } else { None };
        format = &[];
    }
    Ok(match tests {
        // A custom harness that answered `--list` with nothing is run as one test.
        Some(t) if !(bin.custom_harness && t.is_empty()) => {
            let (ok, text) = run(&[format, &["--ignored"]].concat())?;
            let ignored = if ok {
                parse_plain(&text).unwrap_or_default()
            } else {
                Vec::new()
            };
            Listing {
                tests: t,
                ignored,
                ..Listing::default()
            }
        }
        Some(_) => Listing::whole(),
        // Only a custom harness may not speak libtest's `--list`.
        None if bin.custom_harness => Listing::whole(),
        None => {
            let detail = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
            return Err(ListError::Failed {
                path: bin.path.clone(),
                detail: detail.trim().to_string(),
            });
        }
    })
}

/// Where the JSON listing of libtest binary `exe` is kept (`<exe>.sfl-list`): the executable's
/// stamp (device, inode, size, modification time: [`crate::edges::relax::stamp`]) on the first
/// line, then the listing. A libtest binary's tests are compiled in, so the listing holds until
/// the executable changes; a custom harness may list what it finds on disk, and is never kept.
fn listing_path(exe: &Path) -> PathBuf {
    let mut s = exe.as_os_str().to_owned();
    s.push(".sfl-list");
    PathBuf::from(s)
}

/// The kept listing of `exe`, if it was kept for the executable as it is now.
fn kept_listing(exe: &Path) -> Option<Listing> {
    let now = crate::edges::relax::stamp(exe).ok()?;
    let text = std::fs::read_to_string(listing_path(exe)).ok()?;
    parse_json(text.strip_prefix(now.as_str())?)
}

/// Keeps `exe`'s JSON listing `text` for the next run (best effort: without it the next run
/// lists again).
fn keep_listing(exe: &Path, text: &str) {
    if let Ok(now) = crate::edges::relax::stamp(exe) {
        let _ = crate::edges::relax::write_replacing(&listing_path(exe), format!("{now}{text}").as_bytes(), None);
    }
}

/// libtest's JSON listing (`{"type":"test","event":"discovered","name":...,"ignore":...}` per
/// test after a `{"type":"suite","event":"discovery"}` line): every test, and the ignored among
/// them; benchmarks are left out. `None` when a line is not libtest's JSON, or the listing is
/// not this one (a toolchain that lists otherwise).
fn parse_json(text: &str) -> Option<Listing> {
    let mut listing = Listing::default();
    let mut discovery = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str);
        match (field("type")?, field("event")) {
            ("suite", Some("discovery")) => discovery = true,
            ("test", Some("discovered")) => {
                let name = field("name")?.to_string();
                if v.get("ignore").and_then(serde_json::Value::as_bool)? {
                    listing.ignored.push(name.clone());
                }
                listing.tests.push(name);
            }
            _ => {}
        }
    }
    discovery.then_some(listing)
}

/// The test names of libtest's terse listing; `None` when a line is not libtest's.
fn parse_terse(text: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Some(name) = line.strip_suffix(": test") {
            names.push(name.to_string());
        } else if !line.ends_with(": benchmark") {
            return None;
        }
    }
    Some(names)
}

/// A plain `--list`: the terse lines, blank lines and libtest's count after them (`3 tests, 0
/// benchmarks`); `None` when another line is there.
fn parse_plain(text: &str) -> Option<Vec<String>> {
    let counted = |l: &str| {
        let words: Vec<&str> = l.split_whitespace().collect();
        matches!(words.as_slice(), [n, "test," | "tests,", m, "benchmark" | "benchmarks"]
            if n.parse::<u64>().is_ok() && m.parse::<u64>().is_ok())
    };
    let lines: String = text
        .lines()
        .filter(|l| !counted(l.trim()))
        .map(|l| format!("{l}\n"))
        .collect();
    parse_terse(&lines)
}

fn clean_dir_files(dir: &Path, prefix: &str) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_listing_holds_until_the_executable_changes() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("tests-0123");
        std::fs::write(&exe, b"one build").unwrap();
        let text = "{ \"type\": \"suite\", \"event\": \"discovery\" }\n\
                    { \"type\": \"test\", \"event\": \"discovered\", \"name\": \"a::b\", \"ignore\": false }\n\
                    { \"type\": \"suite\", \"event\": \"completed\", \"tests\": 1, \"benchmarks\": 0, \"total\": 1, \"ignored\": 0 }\n";
        assert!(kept_listing(&exe).is_none());
        keep_listing(&exe, text);
        assert_eq!(kept_listing(&exe).map(|l| l.tests), Some(vec!["a::b".to_string()]));
        // Rebuilt: another size (and time): listed again.
        std::fs::write(&exe, b"another build").unwrap();
        assert!(kept_listing(&exe).is_none());
    }

    #[test]
    fn terse_listings_name_tests_and_skip_benchmarks() {
        assert_eq!(
            parse_terse("a::t1: test\nb: benchmark\n\nt2: test\n"),
            Some(vec!["a::t1".to_string(), "t2".to_string()])
        );
        assert_eq!(parse_terse("custom harness output\n"), None);
    }

    /// libtest2-mimic's plain `--list`: the terse lines, then a count, which is not a test.
    #[test]
    fn plain_listings_end_with_a_count() {
        assert_eq!(
            parse_plain("valid/a.toml: test\nvalid/b.toml: test\n\n2 tests, 0 benchmarks\n"),
            Some(vec!["valid/a.toml".to_string(), "valid/b.toml".to_string()])
        );
        assert_eq!(parse_plain("\n0 tests, 0 benchmarks\n"), Some(Vec::new()));
        assert_eq!(
            parse_plain("1 test, 1 benchmark\nt: test\nb: benchmark\n"),
            Some(vec!["t".to_string()])
        );
        assert_eq!(parse_plain("error: unknown option\n"), None);
    }

    #[test]
    fn json_listings_name_every_test_and_the_ignored_ones() {
        let text = concat!(
            "{ \"type\": \"suite\", \"event\": \"discovery\" }\n",
            "{ \"type\": \"test\", \"event\": \"discovered\", \"name\": \"a::t1\", \"ignore\": false, \"ignore_message\": \"\" }\n",
            "{ \"type\": \"bench\", \"event\": \"discovered\", \"name\": \"b\", \"ignore\": false }\n",
            "{ \"type\": \"test\", \"event\": \"discovered\", \"name\": \"t \\\"2\\\"\", \"ignore\": true, \"ignore_message\": \"slow\" }\n",
            "{ \"type\": \"suite\", \"event\": \"completed\", \"tests\": 2, \"benchmarks\": 1 }\n",
        );
        let l = parse_json(text).expect("libtest's JSON listing");
        assert_eq!(l.tests, ["a::t1", "t \"2\""]);
        assert_eq!(l.ignored, ["t \"2\""]);
        // Not libtest's JSON listing: the terse listings are asked instead.
        assert!(parse_json("a::t1: test\n").is_none());
        assert!(
            parse_json("{ \"type\": \"test\", \"event\": \"discovered\", \"name\": \"x\", \"ignore\": false }\n")
                .is_none()
        );
        assert!(parse_json("").is_none());
    }
}
