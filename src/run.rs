//! Runs every test in its own process, in parallel, with a continuous-mode profile per
//! process so crashed and killed tests keep their coverage; classifies what each one did.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use cargo_metadata::Package;
use wait_timeout::ChildExt;

use crate::build::TestBinary;
use crate::spectra::Outcome;

/// The variable that makes rustdoc's merged doctest runner run one test (by its number) alone.
const DOCTEST_NUMBER_ENV: &str = "RUSTDOC_DOCTEST_RUN_NB_TEST";

/// One process to run.
#[derive(Debug, Clone)]
pub struct Job {
    pub binary: usize,
    /// `None`: run the whole binary (custom harness).
    pub name: Option<String>,
    /// Run an #[ignore]d test (`--include-ignored`).
    pub ignored: bool,
}

/// What a test process did.
#[derive(Debug)]
pub struct Finished {
    pub outcome: Outcome,
    pub signal: Option<i32>,
    pub message: Option<String>,
    pub duration: Duration,
    /// Profiles the process (and any instrumented child it ran) wrote.
    pub profiles: Vec<PathBuf>,
    /// Edge files, likewise.
    pub edge_files: Vec<PathBuf>,
    /// The frames of a failing test's panic backtrace that have a source location, innermost
    /// first; relative paths are relative to the test's working directory (its package).
    pub stack: Vec<RawFrame>,
    /// Processes the test started were still running when it ended; they were killed.
    pub leaked: bool,
    /// The environment variables it read, sorted (`None`: its reads could not be observed,
    /// the executable does not link cargo sfl's runtime).
    pub env_reads: Option<Vec<String>>,
}

/// A backtrace frame as the panic hook printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawFrame {
    pub function: String,
    pub path: PathBuf,
    pub line: u32,
}

/// The environment `cargo test` gives a test of `pkg` run from `bin`.
pub fn test_env(cmd: &mut Command, bin: &TestBinary, pkg: &Package, target_dir: &Path, release: bool) {
    let dir = pkg
        .manifest_path
        .parent()
        .map(|d| d.as_std_path().to_path_buf())
        .unwrap_or_default();
    let v = &pkg.version;
    cmd.current_dir(&dir)
        .env("CARGO_MANIFEST_DIR", &dir)
        .env("CARGO_MANIFEST_PATH", pkg.manifest_path.as_std_path())
        .env("CARGO_PKG_NAME", pkg.name.as_str())
        .env("CARGO_CRATE_NAME", pkg.name.replace('-', "_"))
        .env("CARGO_PKG_VERSION", v.to_string())
        .env("CARGO_PKG_VERSION_MAJOR", v.major.to_string())
        .env("CARGO_PKG_VERSION_MINOR", v.minor.to_string())
        .env("CARGO_PKG_VERSION_PATCH", v.patch.to_string())
        .env("CARGO_PKG_VERSION_PRE", v.pre.to_string())
        .env("CARGO_PKG_AUTHORS", pkg.authors.join(":"))
        .env("CARGO_PKG_DESCRIPTION", pkg.description.clone().unwrap_or_default())
        .env("CARGO_PKG_HOMEPAGE", pkg.homepage.clone().unwrap_or_default())
        .env("CARGO_PKG_REPOSITORY", pkg.repository.clone().unwrap_or_default())
        .env("CARGO_PKG_LICENSE", pkg.license.clone().unwrap_or_default());
    if let Some(cargo) = std::env::var_os("CARGO") {
        cmd.env("CARGO", cargo);
    }
    cmd.envs(bin.env.iter().map(|(k, v)| (k, v)));
    // cargo puts the build's library directories and the toolchain's on the dynamic loader
    // path (a proc-macro crate's tests link the toolchain's `libstd` dylib).
    let profile_dir = target_dir.join(if release { "release" } else { "debug" });
    let mut paths = vec![profile_dir.join("deps"), profile_dir];
    paths.extend(toolchain_lib_dir(&dir));
    let loader_path = crate::platform::loader_path_var();
    if let Some(old) = std::env::var_os(loader_path) {
        paths.extend(std::env::split_paths(&old));
    }
    if let Ok(joined) = std::env::join_paths(paths) {
        cmd.env(loader_path, joined);
    }
}

/// The toolchain's library directory for the host (`rustc --print target-libdir`, where the
/// `libstd` dylib is), asked once of the rustc cargo uses (`$RUSTC`, else `rustc` run in the
/// package, so toolchain files apply).
fn toolchain_lib_dir(package_dir: &Path) -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = Command::new(rustc)
            .args(["--print", "target-libdir"])
            .current_dir(package_dir)
            .output()
            .ok()?;
        let dir = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !dir.trim().is_empty()).then(|| PathBuf::from(dir.trim()))
    })
    .clone()
}

/// What a captured process did.
pub(crate) struct Captured {
    /// `None`: it timed out and was killed.
    pub status: Option<ExitStatus>,
    /// Its stdout and stderr, interleaved.
    pub output: String,
    pub elapsed: Duration,
    /// Processes it started were still running when it ended (they were killed).
    pub leaked: bool,
}

/// The process groups of the tests running now (their leaders' ids), for an interrupt.
static RUNNING: std::sync::Mutex<Vec<u32>> = std::sync::Mutex::new(Vec::new());

/// What an interrupt leaves behind, said after "killed N running tests; " (the pipeline sets
/// it once results are being kept).
static INTERRUPT_NOTE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Set before the interrupt kills anything: a test that ends after it was killed by us, not
/// by its own doing, and its outcome must not be kept.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Says what an interrupt keeps (instead of "nothing was saved").
pub fn on_interrupt_say(note: String) {
    if let Ok(mut n) = INTERRUPT_NOTE.lock() {
        *n = Some(note);
    }
}

/// Whether an interrupt is killing the tests (results arriving now are not the tests' own).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// On Ctrl-C or SIGTERM: tests run in process groups of their own, so the terminal's signal
/// does not reach them; kill every running group, say so, and exit 130 (as a shell reports an
/// interrupt). Installed once per process; a second installation is ignored.
pub fn kill_tests_on_interrupt() {
    let _ = ctrlc::set_handler(|| {
        INTERRUPTED.store(true, Ordering::SeqCst);
        // Held until the process exits: a test being started now is either in the list already
        // or never starts ([`run_captured_leaking`] spawns under this lock).
        let running = RUNNING.lock();
        let groups = running.as_ref().map(|g| g.to_vec()).unwrap_or_default();
        for leader in &groups {
            crate::platform::kill_group(*leader);
        }
        // Straight to stderr, ignoring a closed pipe: the terminal's progress bar may be
        // mid-draw on another thread.
        use std::io::Write as _;
        let note = INTERRUPT_NOTE.lock().ok().and_then(|n| n.clone());
        let _ = writeln!(
            std::io::stderr(),
            "error: interrupted: killed {} running test{}; {}",
            groups.len(),
            if groups.len() == 1 { "" } else { "s" },
            note.as_deref().unwrap_or("nothing was saved")
        );
        std::process::exit(crate::error::exit::INTERRUPTED);
    });
}

/// Runs a command in a process group of its own with stdout and stderr into one file; at its
/// end or timeout the whole group is killed, so nothing it started outlives it.
pub(crate) fn run_captured(cmd: Command, out_path: &Path, timeout: Duration) -> std::io::Result<Captured> {
    run_captured_leaking(cmd, out_path, timeout, Duration::ZERO)
}

/// [`run_captured`], giving processes the command left behind `leak_timeout` to end on their
/// own (nextest's leak-timeout) before the group is killed; `leaked` says some did not.
pub(crate) fn run_captured_leaking(
    mut cmd: Command,
    out_path: &Path,
    timeout: Duration,
    leak_timeout: Duration,
) -> std::io::Result<Captured> {
    let out = File::create(out_path)?;
    cmd.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out);
    crate::platform::own_process_group(&mut cmd);
    let start = Instant::now();
    // Spawned and listed under the lock an interrupt kills the list under, so no test starts
    // unseen between the two (the interrupt exits the process, which would orphan it).
    let mut child: Child = {
        let mut running = RUNNING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let child = cmd.spawn()?;
        running.push(child.id());
        child
    };
    let leader = child.id();
    let status = match child.wait_timeout(timeout)? {
        Some(s) => Some(s),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            None
        }
    };
    let elapsed = start.elapsed();
    if status.is_some() {
        let waited = Instant::now();
        while waited.elapsed() < leak_timeout && crate::platform::group_alive(leader) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let leaked = crate::platform::kill_group(leader);
    if let Ok(mut running) = RUNNING.lock() {
        running.retain(|&l| l != leader);
    }
    let bytes = std::fs::read(out_path).unwrap_or_default();
    let _ = std::fs::remove_file(out_path);
    Ok(Captured {
        status,
        output: String::from_utf8_lossy(&bytes).into_owned(),
        elapsed,
        leaked,
    })
}

/// How long a test may run, and what happens to processes it leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// How long its leftover processes get to end before they are killed.
    pub leak_timeout: Duration,
    /// Leaving processes behind fails the test (nextest's `leak-timeout.result = "fail"`).
    pub leak_fails: bool,
}

/// Runs one test in its own process; its profiles (and edge files, with `edges`) land in
/// `dir` (created here).
#[allow(clippy::too_many_arguments)]
pub fn run_test(
    job: &Job,
    bin: &TestBinary,
    pkg: &Package,
    target_dir: &Path,
    release: bool,
    dir: &Path,
    limits: Limits,
    edges: bool,
) -> std::io::Result<Finished> {
    let timeout = limits.timeout;
    std::fs::create_dir_all(dir)?;
    let doctest = bin
        .doctests
        .as_ref()
        .zip(job.name.as_deref())
        .and_then(|(s, n)| s.test(n));
    let mut cmd = Command::new(bin.exe_for(job.name.as_deref()));
    match (doctest, &job.name) {
        // A merged doctest runner runs the one test its number names; others are their `main`.
        (Some(doc), _) => {
            if let Some(i) = doc.index {
                cmd.env(DOCTEST_NUMBER_ENV, i.to_string());
            }
        }
        (None, Some(name)) => {
            cmd.args(["--exact", name, "--nocapture"]);
            // libtest runs the test on one thread its main thread spawns, then waits.
            if !bin.custom_harness {
                cmd.env(crate::edges::relax::SERIAL_SPAWNS_ENV, "1");
            }
            if job.ignored {
                cmd.arg("--ignored");
            }
        }
        (None, None) => {}
    }
    test_env(&mut cmd, bin, pkg, target_dir, release);
    // %p: one file per process (a test may run other instrumented binaries);
    // %c: continuous mode, counters live in the file while the test runs.
    cmd.env("LLVM_PROFILE_FILE", dir.join("sfl-%p%c.profraw"));
    // A panic's backtrace says where a failing test failed. Only panics print it: library
    // backtraces (`Backtrace::capture`, e.g. anyhow's) stay off, as under `cargo test`. A user's
    // own setting wins.
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        cmd.env("RUST_BACKTRACE", "1");
        if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
            cmd.env("RUST_LIB_BACKTRACE", "0");
        }
    }
    let env_reads = dir.join("sfl.env-reads");
    cmd.env(crate::edges::ENV_READS_ENV, &env_reads);
    if edges {
        cmd.env(crate::edges::FILE_ENV, dir.join("sfl-%p.edges"));
    } else {
        cmd.env_remove(crate::edges::FILE_ENV);
    }
    let Captured {
        status,
        output,
        elapsed: duration,
        leaked,
    } = run_captured_leaking(cmd, &dir.join("output.txt"), timeout, limits.leak_timeout)?;
    let (mut outcome, signal, message) = match doctest {
        Some(doc) => classify_doctest(status, &output, timeout, doc.should_panic),
        None => classify(status, &output, timeout, job.name.as_deref()),
    };
    // A test's own colours (assert_cmd's and pretty_assertions' diffs) are terminal codes, not
    // text: no report format, nor `--color never`, should carry them.
    let mut message = message.map(|m| console::strip_ansi_codes(&m).into_owned());
    if leaked && limits.leak_fails && outcome == Outcome::Passed {
        outcome = Outcome::Failed;
        message = Some(format!(
            "left processes running {} ms after it ended (leak-timeout result = \"fail\")",
            limits.leak_timeout.as_millis()
        ));
    }
    let stack = if outcome.is_failing() {
        panic_stack(&output)
    } else {
        Vec::new()
    };
    let files = |ext: &str| -> std::io::Result<Vec<PathBuf>> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == ext))
            .collect();
        v.sort();
        Ok(v)
    };
    Ok(Finished {
        outcome,
        signal,
        message,
        duration,
        profiles: files("profraw")?,
        edge_files: files("edges")?,
        stack,
        leaked,
        env_reads: read_env_reads(&env_reads, !bin.custom_harness && doctest.is_none()),
    })
}

/// The variables the runtime recorded as read (`None`: no file, the reads were not observed),
/// less the profiler runtime's own and, for a libtest binary (`libtest`), the terminal
/// variables libtest reads in every test to colour its own output (which cargo sfl captures).
fn read_env_reads(path: &Path, libtest: bool) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    let harness = |name: &str| libtest && matches!(name, "TERM" | "TERMINFO" | "TERMINFO_DIRS");
    let mut names: Vec<String> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with("LLVM_") && !l.starts_with("__LLVM_") && !harness(l))
        .map(str::to_string)
        .collect();
    names.sort_unstable();
    names.dedup();
    Some(names)
}

/// What a finished process did. `name`: the libtest test it ran (`None`: a whole binary run
/// with no arguments, whose harness prints what it likes).
fn classify(
    status: Option<ExitStatus>,
    output: &str,
    timeout: Duration,
    name: Option<&str>,
) -> (Outcome, Option<i32>, Option<String>) {
    let Some(status) = status else {
        let mut msg = format!("timed out after {}s and was killed", timeout.as_secs_f64());
        if let Some(tail) = tail(output, 3) {
            msg.push('\n');
            msg.push_str(&tail);
        }
        return (Outcome::TimedOut, None, Some(msg));
    };
    if status.success() {
        return match name {
            Some(name) if !libtest_passed(output, name) => (Outcome::Failed, None, Some(early_exit(output, name))),
            _ => (Outcome::Passed, None, None),
        };
    }
    if let Some(sig) = crate::platform::exit_signal(&status) {
        let mut msg = format!("killed by signal {sig} ({})", signal_name(sig));
        if let Some(m) = panic_message(output).or_else(|| tail(output, 3)) {
            msg.push('\n');
            msg.push_str(&m);
        }
        return (Outcome::Crashed, Some(sig), Some(msg));
    }
    let msg = panic_message(output)
        .or_else(|| tail(output, 5))
        .or_else(|| status.code().map(|c| format!("exited with status {c}")));
    (Outcome::Failed, None, msg)
}

/// What a doctest process did: as rustdoc judges it, by its exit status alone, inverted for
/// `should_panic` (any failure to finish passes, as under rustdoc).
fn classify_doctest(
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
        _ => classify(status, output, timeout, None),
    }
}

/// Whether libtest itself said `name` passed: its result line (`test NAME ... ok`, with
/// ` - should panic` for `#[should_panic]`; the test's own unterminated output may precede it)
/// or its summary. A test that calls `std::process::exit(0)` exits 0 without either.
fn libtest_passed(output: &str, name: &str) -> bool {
    let (plain, should_panic) = (
        format!("test {name} ... ok"),
        format!("test {name} - should panic ... ok"),
    );
    output
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

/// The panic message: the `panicked at` line and the lines after it, up to six.
pub(crate) fn panic_message(output: &str) -> Option<String> {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("panicked at") || l.contains("has overflowed its stack"))?;
    let first = lines[start];
    let first = first.find("panicked at").map_or(first, |i| &first[i..]);
    let mut out = vec![first.to_string()];
    for l in &lines[start + 1..] {
        if l.is_empty() || l.starts_with("note: ") || l.starts_with("stack backtrace:") || out.len() >= 6 {
            break;
        }
        out.push((*l).to_string());
    }
    Some(out.join("\n"))
}

/// The frames of the first panic backtrace in `output` that carry a source location
/// (`  3: crate::f` followed by `      at ./src/lib.rs:2:23`), innermost first.
fn panic_stack(output: &str) -> Vec<RawFrame> {
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
fn fold(frames: Vec<RawFrame>) -> Vec<RawFrame> {
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

/// The last `n` lines that are not libtest's own bookkeeping.
fn tail(output: &str, n: usize) -> Option<String> {
    let keep: Vec<&str> = output
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.is_empty()
                || t.starts_with("running ")
                || t.starts_with("test result:")
                || t == "failures:"
                || (t.starts_with("test ") && t.contains(" ... ")))
        })
        .collect();
    (!keep.is_empty()).then(|| keep[keep.len().saturating_sub(n)..].join("\n"))
}

/// Runs `f` over `items` on `jobs` threads, handing each result to `sink` on this thread as
/// soon as it is ready (in completion order): the scheduler with no limits but the pool's.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    f: impl Fn(usize, &T) -> R + Sync,
    sink: impl FnMut(usize, R),
) {
    let needs = vec![
        crate::schedule::Needs {
            threads: 1,
            group: None
        };
        items.len()
    ];
    crate::schedule::run_limited(items, &needs, jobs, &[], f, sink);
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
        assert_eq!(classify(exited(0), ok, t, Some("m::t1")).0, Outcome::Passed);
        let panicked = "running 1 test\npartial output test m::t2 - should panic ... ok\n";
        assert_eq!(classify(exited(0), panicked, t, Some("m::t2")).0, Outcome::Passed);
        // std::process::exit(0) inside the test: libtest never got to say anything.
        let early = "\nrunning 1 test\nabout to leave";
        let (outcome, _, msg) = classify(exited(0), early, t, Some("m::t1"));
        assert_eq!(outcome, Outcome::Failed);
        let msg = msg.unwrap();
        assert!(msg.starts_with("exited before libtest reported a result"), "{msg}");
        assert!(msg.ends_with("about to leave"), "{msg}");
        // Another test's result line is not this one's.
        let other = "running 1 test\ntest m::t1 ... ok\n";
        assert_eq!(classify(exited(0), other, t, Some("t1")).0, Outcome::Failed);
        // A whole binary (harness = false) has no libtest lines: its status decides.
        assert_eq!(classify(exited(0), "all checks passed\n", t, None).0, Outcome::Passed);
        assert_eq!(classify(exited(1), "check a ... FAILED\n", t, None).0, Outcome::Failed);
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

    #[test]
    fn parallel_hands_back_every_result() {
        let items: Vec<u32> = (0..100).collect();
        let mut got = vec![0; 100];
        parallel(&items, 4, |_, x| x * 2, |i, r| got[i] = r);
        assert_eq!(got, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }
}
