//! cargo-sfl as cargo's `RUSTDOC` and as rustdoc's `--test-runtool`
//! ([`cargo_sfl::doctest`] reads what they leave).

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_sfl::build::head_start::{
    HEAD_START_ENV, HEAD_START_STDERR, Invocation, overtaken, own_library, package_env,
};
use cargo_sfl::doctest::{
    BUILT_FROM, DIR_ENV, MERGED_ENV, OUTPUT, RUNNABLE, RUNTOOL_ARG, RUSTDOC_WRAPPER_ENV, STANDALONE_ENV, THIS_RUN,
    count,
};
use cargo_sfl::error::exit;

/// Entry point when cargo runs cargo-sfl as `RUSTDOC`. A `--test` run gets the coverage flags
/// and keeps its doctests in `$CARGO_SFL_DOCTEST_DIR/<crate>`, building them without running
/// any: rustdoc "runs" each through cargo-sfl as `--test-runtool`, which only marks it as one to
/// run. (rustdoc's own `--no-run` would do, but it reports every doctest as `- compile`, hiding
/// which are `should_panic` and `no_run`, and it still runs merged doctests.)
/// `RUSTC_BOOTSTRAP=1`, which these rustdoc options need on stable, is set for this rustdoc
/// process alone, never for the crates' builds.
pub fn rustdoc_wrapper() -> ! {
    let real = std::env::var_os(RUSTDOC_WRAPPER_ENV).unwrap_or_else(|| "rustdoc".into());
    let args = without_runtool(std::env::args_os().skip(1).collect());
    let mut cmd = Command::new(&real);
    cmd.args(&args).env_remove(RUSTDOC_WRAPPER_ENV);
    let testing = args.iter().any(|a| a == "--test");
    let crate_name = args
        .windows(2)
        .find(|w| w[0] == "--crate-name")
        .map(|w| w[1].to_string_lossy().into_owned());
    let (Some(base), true, Some(crate_name)) = (std::env::var_os(DIR_ENV), testing, crate_name) else {
        super::exec(cmd, format!("cannot run rustdoc ({})", Path::new(&real).display()))
    };
    let dir = Path::new(&base).join(&crate_name);
    // One build of a crate's doctests at a time: cargo's invocation waits for a head start of
    // the same one ([`cargo_sfl::build::head_start`]), then finds what it built.
    let _lock = lock(Path::new(&base), &crate_name);
    let head_start = std::env::var_os(HEAD_START_ENV).is_some();
    if head_start && overtaken(&dir.join(BUILT_FROM)) {
        std::process::exit(0)
    }
    // rustdoc recompiles every doctest each time; when nothing it reads has changed, the
    // doctests kept last time are these doctests.
    // One executable each with `--standalone-doctests`, or for a few doctests unless
    // `--merged-doctests`.
    let standalone =
        std::env::var_os(STANDALONE_ENV).is_some() || (std::env::var_os(MERGED_ENV).is_none() && few_doctests(&args));
    let merge = if standalone { "no" } else { "auto" };
    let key = build_key(&real, &args, merge);
    if let Some(code) = kept(&dir, &key) {
        if !head_start && let Ok(said) = std::fs::read(dir.join(HEAD_START_STDERR)) {
            // What rustdoc said while building them ahead, said now, when cargo asks.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), &said);
            let _ = std::fs::remove_file(dir.join(HEAD_START_STDERR));
        }
        std::process::exit(code)
    }
    let (Ok(out), Ok(me)) = (fresh(&dir), cargo_sfl::platform::current_exe()) else {
        eprintln!("error: cannot write {}", dir.display());
        std::process::exit(exit::SETUP)
    };
    if let Some(invocation) = Invocation::current() {
        invocation.save(&dir);
    }
    if head_start && let Ok(said) = File::create(dir.join(HEAD_START_STDERR)) {
        cmd.stderr(said);
    }
    keep_doctests(&mut cmd, &args, (&real, merge), &dir, Path::new(&base), me);
    cmd.stdout(out);
    match cmd.status() {
        Ok(status) => {
            let code = status.code().unwrap_or(exit::INTERNAL);
            if status.code().is_some() {
                let _ = std::fs::write(dir.join(BUILT_FROM), format!("{key}\n{code}"));
            }
            std::process::exit(code)
        }
        Err(e) => {
            eprintln!("error: cannot run rustdoc ({}): {e}", Path::new(&real).display());
            std::process::exit(exit::SETUP)
        }
    }
}

/// Whether the library being documented has fewer doctests than merging repays
/// ([`count::MERGE_FROM`]), counted in the sources its build's dependency-info file lists
/// (beside the `.rlib` rustdoc is given as `--extern CRATE=…`). Not known: merged.
fn few_doctests(args: &[OsString]) -> bool {
    let rlib = own_library(args);
    let dep_info = rlib.and_then(|p| {
        let stem = p.file_stem()?.to_str()?.strip_prefix("lib")?;
        Some(p.with_file_name(format!("{stem}.d")))
    });
    let dir = std::env::current_dir().unwrap_or_default();
    dep_info
        .and_then(|d| count::in_library(&d, &dir))
        .is_some_and(|n| n < count::MERGE_FROM)
}

/// The arguments without the run tool cargo passes on from a target's `runner` (`--test-runtool`,
/// `--runtool` before rustdoc 1.87, and their `-arg`s): cargo sfl is the doctests' run tool, and
/// a whole `cargo test` has its test binaries "run" by a runner that does nothing, which must not
/// change what the doctests are built from (their kept build's key).
fn without_runtool(args: Vec<OsString>) -> Vec<OsString> {
    const OPTIONS: [&str; 4] = ["--test-runtool", "--test-runtool-arg", "--runtool", "--runtool-arg"];
    let mut out = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(a) = args.next() {
        let text = a.to_string_lossy();
        if OPTIONS.contains(&text.as_ref()) {
            args.next();
        } else if !OPTIONS
            .iter()
            .any(|o| text.strip_prefix(o).is_some_and(|value| value.starts_with('=')))
        {
            out.push(a);
        }
    }
    out
}

/// rustdoc's exit code when the doctests kept in `dir` were built from `key` (they are then
/// marked as this run's); `None` when they must be built.
fn kept(dir: &Path, key: &str) -> Option<i32> {
    if let Ok(kept) = std::fs::read_to_string(dir.join(BUILT_FROM))
        && let Some((kept_key, code)) = kept.rsplit_once('\n')
        && kept_key == key
        && dir.join(OUTPUT).is_file()
        && let Ok(code) = code.parse::<i32>()
        && std::fs::write(dir.join(THIS_RUN), b"").is_ok()
    {
        return Some(code);
    }
    None
}

/// Holds the lock on building `crate_name`'s doctests under `base` until this process ends
/// (`None`: no lock could be had; then no waiting either).
fn lock(base: &Path, crate_name: &str) -> Option<File> {
    let _ = std::fs::create_dir_all(base);
    let file = File::create(base.join(format!("{crate_name}.lock"))).ok()?;
    fs4::FileExt::lock(&file).ok()?;
    Some(file)
}

/// Empties `dir` and marks it as this run's; the file for rustdoc's output in it.
fn fresh(dir: &Path) -> std::io::Result<File> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(dir.join(THIS_RUN), b""))
        .and_then(|()| File::create(dir.join(OUTPUT)))
}

/// The options that make `real` (merging as `merge` says) build the doctests with coverage
/// and keep them in `dir`, handing each to `me` as the run tool.
fn keep_doctests(
    cmd: &mut Command,
    args: &[OsString],
    (real, merge): (&OsString, &str),
    dir: &Path,
    base: &Path,
    me: PathBuf,
) {
    cmd.args(cargo_sfl::build::COVERAGE_FLAGS);
    // As the library they link was built (position-dependent, with the runtime); their own
    // counter updates stay atomic.
    if let Some(rt) = std::env::var_os(cargo_sfl::edges::RUNTIME_ENV) {
        let edges = std::env::var_os(cargo_sfl::edges::LINES_ONLY_ENV).is_none();
        cmd.args(cargo_sfl::edges::wrapper_flags(Path::new(&rt), edges, false));
    }
    // Every doctest by name on its own line: libtest turns terse (dots) on its own for large
    // suites, which would hide the names.
    cmd.args(["--test-args", "--format=pretty"]);
    cmd.args(["-Z", "unstable-options"]);
    // Merged as edition 2024 merges them, whatever the crate's edition: one executable for all
    // the doctests that can share one (rustdoc builds the rest alone), so one build and one
    // coverage map instead of one per doctest. Each still runs in its own process. (Not when
    // the project's RUSTDOCFLAGS already say how.)
    let said = args.iter().any(|a| a.to_string_lossy().starts_with("--merge-doctests"));
    if !said && merges(real, base) {
        cmd.arg(format!("--merge-doctests={merge}"));
    }
    cmd.arg("--persist-doctests")
        .arg(dir)
        .arg("--test-runtool")
        .arg(me)
        .args(["--test-runtool-arg", RUNTOOL_ARG])
        .env("RUSTC_BOOTSTRAP", "1");
}

/// What a doctest build reads: rustdoc (path, size, modification time), its arguments, the
/// edge recorder's runtime, and the size and modification time of every file the arguments
/// name (the crate's root source and, through `--extern`, the libraries it links, its own
/// among them: cargo rebuilds that one whenever any of its sources, included files too,
/// changes), and the package's variables that doctests may read as they compile (`env!`:
/// `CARGO_PKG_*`, `OUT_DIR`, …). MD5 over all of it, in hex.
fn build_key(rustdoc: &OsString, args: &[OsString], merge: &str) -> String {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    let stamp = |path: &Path| {
        std::fs::metadata(path)
            .ok()
            .filter(|m| m.is_file())
            .map(|m| format!("{}:{:?}", m.len(), m.modified().ok()))
    };
    let rustdoc_path = Path::new(rustdoc);
    h.update(format!("{rustdoc:?} {:?} merge={merge}\n", stamp(rustdoc_path)));
    if let Some(rt) = std::env::var_os(cargo_sfl::edges::RUNTIME_ENV) {
        h.update(format!("runtime {rt:?} {:?}\n", stamp(Path::new(&rt))));
    }
    for a in keyed_args(args) {
        let text = a.to_string_lossy();
        let file = text.split_once('=').map_or(&*text, |(_, path)| path);
        h.update(format!("{text}\t{:?}\n", stamp(Path::new(file))));
    }
    for (k, v) in package_env() {
        h.update(format!("{k}={v}\n"));
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The arguments a doctest build's key reads: all but the `--test-args --quiet` (or `-q`) that
/// `cargo test -q` adds. It changes only how the doctests report as they run, and the wrapper
/// asks for `--format=pretty` after it, which libtest lets win; so a run with `-q` and one without
/// keep the same build. (Other test arguments stay: a name filter changes which doctests rustdoc
/// builds one by one.)
fn keyed_args(args: &[OsString]) -> Vec<&OsString> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--test-args" && args.get(i + 1).is_some_and(|a| a == "--quiet" || a == "-q") {
            i += 2;
            continue;
        }
        out.push(&args[i]);
        i += 1;
    }
    out
}

/// Whether `rustdoc` takes `--merge-doctests` (unstable, from Rust 1.95); without it an older
/// toolchain's doctests are built as their edition says. Asking costs a rustup proxy and a
/// rustdoc start (30-50 ms of every doctest build), so the answer is kept beside `base` (in
/// the build directory, where it outlives the kept doctests) for the rustdoc binary it was
/// asked of ([`rustdoc_binary`]), when that is known.
fn merges(rustdoc: &OsString, base: &Path) -> bool {
    let binary = rustdoc_binary(rustdoc);
    let kept = base.parent().unwrap_or(base).join("sfl-rustdoc-merges");
    if let Some(key) = &binary
        && let Ok(text) = std::fs::read_to_string(&kept)
        && let Some((k, answer)) = text.rsplit_once('\n')
        && k == key
    {
        return answer == "yes";
    }
    let yes = Command::new(rustdoc)
        .args(["-Z", "unstable-options", "--help"])
        .env("RUSTC_BOOTSTRAP", "1")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--merge-doctests"));
    if let Some(key) = binary {
        let _ = std::fs::write(&kept, format!("{key}\n{}", if yes { "yes" } else { "no" }));
    }
    yes
}

/// The rustdoc executable `rustdoc` runs, with its size and time stamp: a path to a file
/// outside rustup's proxies is itself; a bare name or a proxy (in `$CARGO_HOME/bin`), under
/// rustup (which names the toolchain cargo runs in `RUSTUP_HOME` and `RUSTUP_TOOLCHAIN`), is the
/// toolchain's own, since the proxy stays the same file when the toolchain changes. `None` when
/// it is not known.
fn rustdoc_binary(rustdoc: &OsString) -> Option<String> {
    let given = Path::new(rustdoc);
    let proxies = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .map(|home| home.join("bin"));
    let proxied = !given.is_absolute() || given.parent() == proxies.as_deref();
    let path = match (
        proxied,
        std::env::var_os("RUSTUP_HOME"),
        std::env::var_os("RUSTUP_TOOLCHAIN"),
    ) {
        (false, _, _) => given.to_path_buf(),
        (true, Some(home), Some(toolchain)) => Path::new(&home)
            .join("toolchains")
            .join(toolchain)
            .join("bin")
            .join(given.file_name()?),
        (true, _, _) => return None,
    };
    let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
    Some(format!("{} {} {:?}", path.display(), meta.len(), meta.modified().ok()?))
}

/// Entry point when rustdoc runs cargo-sfl as its `--test-runtool` (`cargo-sfl RUNTOOL_ARG
/// <doctest executable> <args…>`): marks the executable as one to run, and runs nothing.
pub fn runtool() -> ! {
    if let Some(exe) = std::env::args_os().nth(2)
        && let Some(dir) = Path::new(&exe).parent()
    {
        let _ = std::fs::write(dir.join(RUNNABLE), b"");
    }
    std::process::exit(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_test_output_does_not_change_the_key() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let rustdoc = OsString::from("rustdoc-that-is-not-a-file");
        let plain = args(&["--test", "src/lib.rs", "--crate-name", "k"]);
        let quiet = args(&["--test", "src/lib.rs", "--test-args", "--quiet", "--crate-name", "k"]);
        let filtered = args(&["--test", "src/lib.rs", "--test-args", "parse", "--crate-name", "k"]);
        let key = |a: &[OsString]| build_key(&rustdoc, a, "auto");
        assert_eq!(key(&plain), key(&quiet));
        assert_eq!(keyed_args(&quiet), plain.iter().collect::<Vec<_>>());
        // A filter changes which doctests are built.
        assert_ne!(key(&plain), key(&filtered));
        // `--quiet` as some other option's value is kept.
        let value = args(&["--crate-name", "--quiet"]);
        assert_eq!(keyed_args(&value).len(), 2);
    }

    #[test]
    fn a_runners_run_tool_is_left_out() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        let given = args(&[
            "--test",
            "--test-runtool",
            "true",
            "--crate-name",
            "x",
            "--test-runtool-arg=-v",
            "--runtool",
            "qemu",
            "--runtool-arg",
            "-L",
            "src/lib.rs",
        ]);
        assert_eq!(
            without_runtool(given),
            args(&["--test", "--crate-name", "x", "src/lib.rs"])
        );
    }
}
