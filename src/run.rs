//! Runs every test in its own process, in parallel, with a continuous-mode profile per
//! process so crashed and killed tests keep their coverage; classifies what each one did.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use cargo_metadata::Package;

use crate::doctest::DocTest;
use crate::process::{Captured, run_captured_leaking};
use crate::spectra::Outcome;
use crate::verdict::{RawFrame, classify, classify_doctest, panic_stack};
use crate::workspace::TestBinary;

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

/// The environment `cargo test` gives a test of `pkg` run from `bin`.
pub fn test_env(cmd: &mut Command, bin: &TestBinary, pkg: &Package, target_dir: &Path, profile: &str) {
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
    let profile_dir = target_dir.join(profile);
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

/// Asks for [`toolchain_lib_dir`] on a thread of its own now (a rustc start through rustup's
/// proxy, 40-60 ms), so the first test does not wait for it: called while the tests build.
pub fn ask_toolchain_lib_dir(package_dir: PathBuf) {
    std::thread::spawn(move || toolchain_lib_dir(&package_dir));
}

/// The toolchain's library directory for the host (`rustc --print target-libdir`, where the
/// `libstd` dylib is), asked once of the rustc cargo uses (`$RUSTC`, else `rustc` run in the
/// package, so toolchain files apply).
pub(crate) fn toolchain_lib_dir(package_dir: &Path) -> Option<PathBuf> {
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

/// How long a test may run, and what happens to processes it leaves behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    /// How long its leftover processes get to end before they are killed.
    pub leak_timeout: Duration,
    /// Leaving processes behind fails the test (nextest's `leak-timeout.result = "fail"`).
    pub leak_fails: bool,
}

/// One test process to run: the job, the binary it runs and its package, where the build
/// is, where its files land, and its limits.
pub struct TestRun<'a> {
    pub job: &'a Job,
    pub bin: &'a TestBinary,
    pub pkg: &'a Package,
    /// The build's target directory (its library directories go on the loader path).
    pub target_dir: &'a Path,
    /// The build profile's directory in it ([`crate::config::Selection::profile_dir`]).
    pub profile: &'a str,
    /// Where its profiles (and edge files, with `edges`) land (created by [`run_test`]).
    pub dir: &'a Path,
    pub limits: Limits,
    /// Slots of `test-threads` it takes (`threads-required`).
    pub threads: usize,
    pub edges: bool,
    /// Fork a libtest test from its binary's server (`None`: a process per test).
    pub servers: Option<&'a crate::forkserver::ForkServers>,
    /// Names the panic stacks cargo sfl's runtime records (`None`: read the backtrace the
    /// standard library prints, as for a program without the runtime).
    pub stacks: Option<&'a crate::stacks::Symbolizer>,
    /// Run a libtest test with `--nocapture` (`-- --nocapture`); else libtest captures its
    /// output as under `cargo test`, which costs no write per print (a test printing millions
    /// of lines runs as fast as under `cargo test`).
    pub nocapture: bool,
}

/// Runs one test in its own process; its profiles (and edge files, with `edges`) land in
/// `dir` (created here).
pub fn run_test(run: &TestRun) -> std::io::Result<Finished> {
    let TestRun {
        job, bin, dir, limits, ..
    } = *run;
    let timeout = limits.timeout;
    std::fs::create_dir_all(dir)?;
    let doctest = bin
        .doctests
        .as_ref()
        .zip(job.name.as_deref())
        .and_then(|(s, n)| s.test(n));
    let env_reads = dir.join("sfl.env-reads");
    let out_path = dir.join("output.txt");
    let served = serve(run, doctest.is_some(), &env_reads, &out_path);
    let Captured {
        status,
        output,
        elapsed: duration,
        leaked,
    } = match served {
        Some(captured) => captured,
        None => {
            let _permits = run.servers.map(|s| s.permits().hold(run.threads));
            run_captured_leaking(
                test_command(run, doctest, &env_reads),
                &out_path,
                timeout,
                limits.leak_timeout,
            )?
        }
    };
    let (mut outcome, signal, mut message) = judge(run, doctest, status, &output);
    if leaked && limits.leak_fails && outcome == Outcome::Passed {
        outcome = Outcome::Failed;
        message = Some(format!(
            "left processes running {} ms after it ended (leak-timeout result = \"fail\")",
            limits.leak_timeout.as_millis()
        ));
    }
    let stack = match stacks_of(run) {
        _ if !outcome.is_failing()
            || crate::verdict::went_on_after_first_panic(&output)
            || crate::verdict::did_not_panic(&output).is_some() =>
        {
            Vec::new()
        }
        Some(names) => crate::stacks::read(&stacks_file(dir), bin.exe_for(job.name.as_deref()))
            .map_or_else(|| panic_stack(&output), |rec| names.frames(&rec)),
        None => panic_stack(&output),
    };
    let [mut profiles, counters, edge_files] = files_in(dir, ["profraw", "counters", "edges"])?;
    profiles.extend(counters);
    Ok(Finished {
        outcome,
        signal,
        message,
        duration,
        profiles,
        edge_files,
        stack,
        leaked,
        env_reads: read_env_reads(&env_reads, !bin.custom_harness && doctest.is_none()),
    })
}

/// What `run`'s process did (`doctest`: the doctest it ran), read from its exit status and
/// output: the outcome, the signal, the message.
fn judge(
    run: &TestRun,
    doctest: Option<&DocTest>,
    status: Option<std::process::ExitStatus>,
    output: &str,
) -> (Outcome, Option<i32>, Option<String>) {
    let timeout = run.limits.timeout;
    let (outcome, signal, message) = match doctest {
        Some(doc) => classify_doctest(status, output, timeout, doc.should_panic),
        None => {
            let captured = !run.nocapture && !run.bin.custom_harness;
            classify(status, output, timeout, run.job.name.as_deref(), captured)
        }
    };
    // A test's own colours (assert_cmd's and pretty_assertions' diffs) are terminal codes, not
    // text: no report format, nor `--color never`, should carry them.
    let mut message = message.map(|m| console::strip_ansi_codes(&m).into_owned());
    // A merged doctest's panic names its line of the documentation, as `cargo test` does.
    if let (Some(doc), Some(m), Some(package_dir)) = (doctest, &message, run.pkg.manifest_path.parent()) {
        message = Some(crate::doctest::location::in_source(
            m,
            &doc.name,
            package_dir.as_std_path(),
        ));
    }
    (outcome, signal, message)
}

/// Runs `run`'s test on its binary's fork server when it has one (a libtest test, servers on):
/// what it did, or `None` to run it in a process of its own (`doctest`: it is a doctest).
fn serve(run: &TestRun, doctest: bool, env_reads: &Path, out_path: &Path) -> Option<Captured> {
    let servers = run.servers?;
    let Some(name) = run.job.name.as_deref().filter(|_| !doctest && !run.bin.custom_harness) else {
        servers.fell_back(if doctest { "doctests" } else { "harness = false targets" });
        return None;
    };
    let key = (run.job.binary, run.job.ignored);
    let command = || {
        let mut cmd = base_command(run, None, Some(crate::forkserver::SLOT));
        if servers.counters_only {
            cmd.env(crate::forkserver::TEMPLATE_ENV, "1");
        }
        if servers.keep {
            cmd.env(crate::forkserver::KEEP_ENV, "1");
        }
        cmd
    };
    let server = match servers.server(key, command) {
        Ok(s) => s,
        Err(why) => {
            servers.fell_back(&format!("{} cannot fork tests: {why}", run.bin.id));
            return None;
        }
    };
    let mut env = per_test_env(run, env_reads);
    if servers.counters_only {
        env.push((
            crate::forkserver::COUNTERS_ENV,
            run.dir.join("sfl-%p.counters").into_os_string(),
        ));
    }
    match server.run(
        name,
        run.threads,
        &env,
        out_path,
        run.limits.timeout,
        run.limits.leak_timeout,
    ) {
        Ok((captured, left)) => {
            servers.forked(left);
            Some(captured)
        }
        Err(crate::forkserver::NotServed(why)) => {
            servers.fell_back(&why);
            None
        }
    }
}

/// The variables that differ between the tests of one binary: the names of its profiles, its
/// edge files (with edges), and the file the runtime records the variables it reads in.
fn per_test_env(run: &TestRun, env_reads: &Path) -> Vec<(&'static str, std::ffi::OsString)> {
    // %p: one file per process (a test may run other instrumented binaries);
    // %c: continuous mode, counters live in the file while the test runs.
    let mut env = vec![
        ("LLVM_PROFILE_FILE", run.dir.join("sfl-%p%c.profraw").into_os_string()),
        (crate::edges::ENV_READS_ENV, env_reads.as_os_str().to_owned()),
    ];
    if run.edges {
        env.push((crate::edges::FILE_ENV, run.dir.join("sfl-%p.edges").into_os_string()));
    }
    if stacks_of(run).is_some() {
        env.push((crate::stacks::FILE_ENV, stacks_file(run.dir).into_os_string()));
    }
    env
}

/// Who names `run`'s panic stacks recorded by the runtime: `None` when the standard library
/// prints them, because the caller asked for that or because the user set `RUST_BACKTRACE` or
/// `RUST_LIB_BACKTRACE` (the tests then run with the user's setting, as under `cargo test`).
fn stacks_of<'a>(run: &TestRun<'a>) -> Option<&'a crate::stacks::Symbolizer> {
    let user = |v: &str| std::env::var_os(v).is_some();
    run.stacks
        .filter(|_| !user("RUST_BACKTRACE") && !user("RUST_LIB_BACKTRACE"))
}

/// Where the runtime records the panic stacks of a test whose files land in `dir`.
fn stacks_file(dir: &Path) -> PathBuf {
    dir.join("sfl.stacks")
}

/// The command that runs `run`'s test (`doctest`: the doctest it is), with the environment
/// `cargo test` gives it, its profiles' and edge files' names, and where the runtime records
/// the variables it reads (`env_reads`).
fn test_command(run: &TestRun, doctest: Option<&DocTest>, env_reads: &Path) -> Command {
    let mut cmd = base_command(run, doctest, run.job.name.as_deref());
    cmd.envs(per_test_env(run, env_reads));
    cmd
}

/// [`test_command`] without the variables that differ per test ([`per_test_env`]), running
/// the test `name` (a libtest binary's).
fn base_command(run: &TestRun, doctest: Option<&DocTest>, name: Option<&str>) -> Command {
    let TestRun { job, bin, .. } = *run;
    let mut cmd = bin.command(bin.exe_for(job.name.as_deref()));
    match (doctest, name) {
        // A merged doctest runner runs the one test its number names; others are their `main`.
        (Some(doc), _) => {
            if let Some(i) = doc.index {
                cmd.env(DOCTEST_NUMBER_ENV, i.to_string());
            }
        }
        (None, Some(name)) => {
            cmd.args(["--exact", name]);
            if run.nocapture {
                cmd.arg("--nocapture");
            }
            // libtest runs the test on one thread its main thread spawns, then waits. One test,
            // so one thread: it need not work out how many it could use (reading the cgroup
            // files, a noticeable part of a small test's cost).
            if !bin.custom_harness {
                cmd.env(crate::edges::relax::SERIAL_SPAWNS_ENV, "1");
                cmd.arg("--test-threads=1");
                // libtest is handed this test alone ([`crate::edges::harness`]).
                cmd.env(crate::edges::harness::ONE_TEST_ENV, "1");
            }
            if job.ignored {
                cmd.arg("--ignored");
            }
        }
        (None, None) => {}
    }
    test_env(&mut cmd, bin, run.pkg, run.target_dir, run.profile);
    // Set per test ([`per_test_env`]), never inherited from cargo sfl's own environment.
    cmd.env_remove("LLVM_PROFILE_FILE")
        .env_remove(crate::edges::FILE_ENV)
        .env_remove(crate::stacks::FILE_ENV)
        .env_remove(crate::stacks::QUIET_ENV);
    // A panic's backtrace says where a failing test failed. Only panics print it: library
    // backtraces (`Backtrace::capture`, e.g. anyhow's) stay off, as under `cargo test`. A user's
    // own setting wins. Where cargo sfl's runtime records the stack itself (`stacks`), it unsets
    // both again: the standard library would symbolise it in the test, at a cost.
    if std::env::var_os("RUST_BACKTRACE").is_none() {
        cmd.env("RUST_BACKTRACE", "1");
        if std::env::var_os("RUST_LIB_BACKTRACE").is_none() {
            cmd.env("RUST_LIB_BACKTRACE", "0");
        }
    }
    if stacks_of(run).is_some() {
        cmd.env(crate::stacks::QUIET_ENV, "1");
    }
    cmd
}

/// Per extension of `exts`, the files in `dir` with it, sorted (one read of the directory).
fn files_in<const N: usize>(dir: &Path, exts: [&str; N]) -> std::io::Result<[Vec<PathBuf>; N]> {
    let mut found: [Vec<PathBuf>; N] = std::array::from_fn(|_| Vec::new());
    for path in std::fs::read_dir(dir)?.flatten().map(|e| e.path()) {
        if let Some(k) = exts.iter().position(|x| path.extension().is_some_and(|e| e == *x)) {
            found[k].push(path);
        }
    }
    for v in &mut found {
        v.sort();
    }
    Ok(found)
}

/// The variables the runtime recorded as read (`None`: no file, the reads were not observed;
/// or the test started a program, which may read any variable unseen),
/// less the profiler runtime's own and, for a libtest binary (`libtest`), the terminal
/// variables libtest reads in every test to colour its own output (which cargo sfl captures).
fn read_env_reads(path: &Path, libtest: bool) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(path).ok()?;
    // `*`: the test started a program, which may read any variable unseen.
    if text.lines().any(|l| l == "*") {
        return None;
    }
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
    crate::schedule::run_limited(items, &needs, jobs, &[], |i, item, _| f(i, item), sink);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parallel_hands_back_every_result() {
        let items: Vec<u32> = (0..100).collect();
        let mut got = vec![0; 100];
        parallel(&items, 4, |_, x| x * 2, |i, r| got[i] = r);
        assert_eq!(got, items.iter().map(|x| x * 2).collect::<Vec<_>>());
    }
}
