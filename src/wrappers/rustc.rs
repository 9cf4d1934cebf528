//! cargo-sfl as `RUSTC_WRAPPER` ([`cargo_sfl::build`] sets it): the workspace's own crates
//! get the coverage flags, everything else is compiled as cargo asked.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use cargo_sfl::build::{
    COMPILE_TIME_DIRS_ENV, COVERAGE_FLAGS, INSTRUMENT_DIRS_ENV, PLAIN_ENV, USER_WRAPPER_ENV, WRAPPER_ENV,
};
use cargo_sfl::error::exit;

/// Entry point when cargo runs us as `RUSTC_WRAPPER`: `cargo-sfl <rustc> <args…>`.
/// Adds the coverage flags to the workspace's own crates (not build scripts or proc-macros,
/// which link only the edge callbacks' stub) and replaces this process with rustc.
pub fn rustc_wrapper() -> ! {
    let mut args = std::env::args_os().skip(1);
    let Some(rustc) = args.next() else {
        eprintln!("error: {WRAPPER_ENV} is set but no rustc was given");
        std::process::exit(exit::SETUP);
    };
    let rest: Vec<OsString> = args.collect();
    // The developer's own wrapper (sccache, or one the build relies on) still wraps rustc.
    let mut cmd = match std::env::var_os(USER_WRAPPER_ENV) {
        Some(user) => {
            let mut cmd = Command::new(user);
            cmd.arg(rustc);
            cmd
        }
        None => Command::new(rustc),
    };
    cmd.args(&rest);
    let runtime = std::env::var_os(cargo_sfl::edges::RUNTIME_ENV);
    let edges = std::env::var_os(cargo_sfl::edges::LINES_ONLY_ENV).is_none();
    let kind = kind(&rest);
    match kind {
        Kind::Other => {}
        Kind::Member | Kind::CompileTime if std::env::var_os(PLAIN_ENV).is_some() => {
            // A cap already given (RUSTFLAGS) stands: rustc refuses two.
            if !rest
                .iter()
                .any(|a| a.to_str().is_some_and(|a| a.starts_with("--cap-lints")))
            {
                cmd.arg("--cap-lints=allow");
            }
        }
        Kind::Host => {
            // It may link a compile-time member's instrumented library: the callbacks of its
            // edge tables, doing nothing.
            if let Some(rt) = runtime.filter(|_| edges && std::env::var_os(PLAIN_ENV).is_none()) {
                cmd.arg("-C").arg(format!(
                    "link-arg={}",
                    cargo_sfl::edges::host_stub(Path::new(&rt)).display()
                ));
            }
        }
        Kind::Member | Kind::CompileTime => {
            cmd.args(COVERAGE_FLAGS);
            cmd.args(undone_profile_options(&rest));
            if let Some(rt) = runtime {
                // A library that build scripts or proc macros link too stays position
                // independent, as they need.
                let shared = shared_library(&rest) || kind == Kind::CompileTime;
                cmd.args(cargo_sfl::edges::wrapper_flags(Path::new(&rt), edges, shared));
                // Iterating the environment goes through the runtime, which notes every variable
                // read (the runtime is in every link of a member).
                if let Ok(symbols) = std::env::var(cargo_sfl::edges::harness::ENV_ITERATION_ENV)
                    && links_through_a_compiler_driver(&rest)
                {
                    for symbol in symbols.split(' ') {
                        cmd.args(cargo_sfl::edges::harness::link_flags(symbol));
                    }
                }
                // A libtest harness: its `main`'s call of libtest goes through the runtime.
                if let Some(symbol) = std::env::var(cargo_sfl::edges::harness::TEST_MAIN_ENV).ok()
                    && rest.iter().any(|a| a == "--test")
                    && links_through_a_compiler_driver(&rest)
                {
                    cmd.args(cargo_sfl::edges::harness::link_flags(&symbol));
                }
                // Blocks are mapped to lines through DWARF: a profile without debug info (the
                // release profile's default) gets line tables, and cargo's matching
                // `-C strip=debuginfo` is undone.
                if edges && !has_debuginfo(&rest) {
                    cmd.args(["-C", "debuginfo=line-tables-only", "-C", "strip=none"]);
                }
            }
        }
    }
    super::exec(cmd, "cannot run rustc")
}

/// The options that undo a profile's `strip` and `split-debuginfo` (`packed`, `unpacked`):
/// a panic's stack is read from the test binary's own debug info by std's backtrace, which
/// finds no frame in a stripped binary and not every frame in split files.
fn undone_profile_options(args: &[OsString]) -> Vec<&'static str> {
    let mut undo = Vec::new();
    if codegen_option(args, "strip").is_some_and(|s| s != "none") {
        undo.extend(["-C", "strip=none"]);
    }
    if codegen_option(args, "split-debuginfo").is_some_and(|s| s != "off") {
        undo.extend(["-C", "split-debuginfo=off"]);
    }
    undo
}

/// Whether cargo asked rustc for any debug info (`-C debuginfo=…` other than 0/none).
fn has_debuginfo(args: &[OsString]) -> bool {
    codegen_option(args, "debuginfo").is_some_and(|l| !matches!(l, "0" | "none" | "false"))
}

/// Whether rustc links through a C compiler driver (its default), which takes `-Wl,` options:
/// no linker or flavor given, or a linker named like one (`cc`, `gcc`, `clang`, with a prefix
/// or version). A linker run directly (`rust-lld`, `ld`) would refuse them.
fn links_through_a_compiler_driver(args: &[OsString]) -> bool {
    if codegen_option(args, "linker-flavor").is_some_and(|f| !f.starts_with("gcc")) {
        return false;
    }
    codegen_option(args, "linker").is_none_or(|l| {
        let name = Path::new(l).file_name().and_then(|n| n.to_str()).unwrap_or(l);
        ["cc", "gcc", "clang"].iter().any(|d| name.contains(d))
    })
}

/// The last value of the codegen option `-C name=value` (or `-Cname=value`) in `args`: the
/// last one given wins, as in rustc.
fn codegen_option<'a>(args: &'a [OsString], name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    let mut last = None;
    for (i, a) in args.iter().enumerate() {
        let Some(a) = a.to_str() else { continue };
        let value = if a == "-C" {
            args.get(i + 1).and_then(|v| v.to_str()?.strip_prefix(prefix.as_str()))
        } else {
            a.strip_prefix("-C").and_then(|v| v.strip_prefix(prefix.as_str()))
        };
        last = value.or(last);
    }
    last
}

fn shared_library(args: &[OsString]) -> bool {
    let types = args
        .iter()
        .zip(args.iter().skip(1))
        .filter(|(flag, _)| *flag == "--crate-type")
        .map(|(_, value)| value.to_string_lossy().into_owned());
    let inline = args
        .iter()
        .filter_map(|a| a.to_str()?.strip_prefix("--crate-type=").map(String::from));
    types.chain(inline).any(|t| t.split(',').any(|t| t.ends_with("dylib")))
}

/// What a rustc invocation compiles, for the wrapper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Not the workspace's: compiled as cargo asked.
    Other,
    /// A member's build script or proc macro: code the compiler runs, not instrumented.
    Host,
    /// The library of a member whose code runs while compiling (`COMPILE_TIME_DIRS_ENV`):
    /// instrumented, position independent.
    CompileTime,
    /// Any other crate of a member: instrumented.
    Member,
}

fn kind(args: &[OsString]) -> Kind {
    let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return Kind::Other;
    };
    let listed = |var: &str| {
        std::env::var(var)
            .unwrap_or_default()
            .lines()
            .any(|d| Path::new(d) == Path::new(&dir))
    };
    if !listed(INSTRUMENT_DIRS_ENV) {
        return Kind::Other;
    }
    let pair = |flag: &str, value: &str| args.windows(2).any(|w| w[0] == flag && w[1] == value);
    if pair("--crate-name", "build_script_build") || pair("--crate-type", "proc-macro") {
        return Kind::Host;
    }
    if listed(COMPILE_TIME_DIRS_ENV) && !args.iter().any(|a| a == "--test") {
        return Kind::CompileTime;
    }
    Kind::Member
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_libraries_are_recognised() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(shared_library(&args(&[
            "--crate-type",
            "rlib",
            "--crate-type",
            "cdylib"
        ])));
        assert!(shared_library(&args(&["--crate-type=dylib"])));
        assert!(!shared_library(&args(&["--crate-type", "lib", "--test"])));
        assert!(!shared_library(&args(&["--crate-name", "cdylib"])));
    }

    #[test]
    fn debuginfo_is_read_from_the_arguments() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(has_debuginfo(&args(&["-C", "opt-level=0", "-C", "debuginfo=2"])));
        assert!(has_debuginfo(&args(&["-Cdebuginfo=line-tables-only"])));
        assert!(!has_debuginfo(&args(&["-C", "opt-level=3"])));
        assert!(!has_debuginfo(&args(&["-C", "debuginfo=2", "-C", "debuginfo=0"])));
    }

    #[test]
    fn strip_and_split_debuginfo_are_undone() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            undone_profile_options(&args(&["-C", "strip=symbols", "-Csplit-debuginfo=unpacked"])),
            ["-C", "strip=none", "-C", "split-debuginfo=off"]
        );
        assert_eq!(
            undone_profile_options(&args(&["-C", "strip=debuginfo"])),
            ["-C", "strip=none"]
        );
        assert!(undone_profile_options(&args(&["-C", "strip=none", "-C", "split-debuginfo=off"])).is_empty());
        assert!(undone_profile_options(&args(&["-C", "opt-level=0"])).is_empty());
    }

    #[test]
    fn wl_options_only_through_a_compiler_driver() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(links_through_a_compiler_driver(&args(&["--test"])));
        assert!(links_through_a_compiler_driver(&args(&[
            "-C",
            "linker=/usr/bin/clang-18"
        ])));
        assert!(links_through_a_compiler_driver(&args(&[
            "-Clinker=x86_64-linux-gnu-gcc"
        ])));
        assert!(links_through_a_compiler_driver(&args(&["-C", "linker-flavor=gcc"])));
        assert!(!links_through_a_compiler_driver(&args(&["-C", "linker=rust-lld"])));
        assert!(!links_through_a_compiler_driver(&args(&[
            "-C",
            "linker=cc",
            "-C",
            "linker=ld.lld"
        ])));
        assert!(!links_through_a_compiler_driver(&args(&["-C", "linker-flavor=ld.lld"])));
    }
}
