//! libtest's entry, wrapped so that a process that runs one test hands libtest that test alone.
//!
//! A test binary's `main` calls `test::test_main_static` with every test of the binary. Run as
//! `--exact NAME`, libtest copies and sorts all of their descriptors before it keeps the one:
//! in a process per test that is a cost in the number of tests of the binary, paid by each test
//! (on pulldown-cmark's binary of 1,156 tests, about a sixth of a forked test's CPU time). The
//! runtime (`runtime.c`) can stand between `main` and libtest: the link redirects `main`'s call
//! to the runtime (`--wrap`), which, in a process cargo sfl runs for one test
//! ([`ONE_TEST_ENV`]), passes on only that test's descriptor. The wrapped symbol is the
//! toolchain's own mangled name of the entry, read from its libtest archive once per toolchain
//! ([`test_main_symbol`]) and compiled into the runtime.

use std::path::{Path, PathBuf};

/// Set for the rustc wrapper: the mangled name of libtest's entry, which a harness test crate's
/// link wraps.
pub const TEST_MAIN_ENV: &str = "CARGO_SFL_TEST_MAIN";
/// Set for a test process that runs the one libtest test its `--exact` argument names.
pub const ONE_TEST_ENV: &str = "CARGO_SFL_ONE_TEST";
/// What libtest's entry demangles to.
const ENTRY: &str = "test::test_main_static";
/// The cache of the last lookup in the runtime's directory: the toolchain's `rustc -vV`, then
/// the symbol (empty: none found).
const CACHE: &str = "test-main";

/// The mangled name of libtest's entry for the toolchain that `rustc -vV` describes, cached in
/// `rt_dir`; `lib_dir` gives the toolchain's library directory when the cache does not answer.
/// `None` when there is no libtest archive or it does not define the entry once, and off Linux
/// (`--wrap` is an ELF linker's option, not macOS's): the runtime then wraps nothing and libtest
/// gets every test, as without it.
pub fn test_main_symbol(rt_dir: &Path, rustc_vv: &str, lib_dir: impl FnOnce() -> Option<PathBuf>) -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    cached(&rt_dir.join(CACHE), rustc_vv, || {
        defined_once(&archive(&lib_dir()?, "libtest-")?, is_entry)
    })
}

/// Set for the rustc wrapper: the mangled names of `std::env::vars` and `std::env::vars_os`,
/// space-separated, which every link of a workspace crate with the runtime wraps.
pub const ENV_ITERATION_ENV: &str = "CARGO_SFL_ENV_ITERATION";
/// The cache of the last lookup of [`env_iteration_symbols`], as [`CACHE`]'s.
const ENV_CACHE: &str = "env-iteration";

/// The mangled names of `std::env::vars` and `std::env::vars_os` in the toolchain's standard
/// library (`rustc -vV`, cached in `rt_dir` as [`test_main_symbol`]'s), space-separated. They
/// read the environment without `getenv`, so the runtime wraps them (a test iterating the
/// environment reads every variable). Only on x86-64 Linux, where the runtime's wrappers are.
pub fn env_iteration_symbols(
    rt_dir: &Path,
    rustc_vv: &str,
    lib_dir: impl FnOnce() -> Option<PathBuf>,
) -> Option<String> {
    if !cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        return None;
    }
    cached(&rt_dir.join(ENV_CACHE), rustc_vv, || {
        let std = archive(&lib_dir()?, "libstd-")?;
        let vars = defined_once(&std, |s| is_named(s, "3env4vars", "std::env::vars"))?;
        let vars_os = defined_once(&std, |s| is_named(s, "3env7vars_os", "std::env::vars_os"))?;
        Some(format!("{vars} {vars_os}"))
    })
}

/// `look_up()`, cached in the file `cache` under the key `rustc_vv` (an empty answer: none).
fn cached(cache: &Path, rustc_vv: &str, look_up: impl FnOnce() -> Option<String>) -> Option<String> {
    let saved = std::fs::read_to_string(cache).ok();
    if let Some((key, answer)) = saved.as_deref().and_then(|s| s.rsplit_once('\n'))
        && key == rustc_vv
    {
        return (!answer.is_empty()).then(|| answer.to_string());
    }
    let answer = look_up();
    if let Some(dir) = cache.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = std::fs::write(cache, format!("{rustc_vv}\n{}", answer.as_deref().unwrap_or("")));
    }
    answer
}

/// The bytes of the `<prefix>*.rlib` archive of the library directory `dir`.
fn archive(dir: &Path, prefix: &str) -> Option<Vec<u8>> {
    let rlib = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".rlib"))
    })?;
    std::fs::read(rlib).ok()
}

/// The one symbol of an archive (its symbol index, else its members' symbol tables) that
/// `wanted` accepts.
fn defined_once(data: &[u8], wanted: impl Fn(&str) -> bool) -> Option<String> {
    use object::read::archive::ArchiveFile;
    use object::{Object, ObjectSymbol};
    let archive = ArchiveFile::parse(data).ok()?;
    let mut found: Vec<String> = Vec::new();
    if let Ok(Some(index)) = archive.symbols() {
        found.extend(index.flatten().filter_map(|s| {
            std::str::from_utf8(s.name())
                .ok()
                .filter(|n| wanted(n))
                .map(str::to_string)
        }));
    } else {
        for member in archive.members().flatten() {
            if let Ok(file) = member.data(data).and_then(object::File::parse) {
                let defined = file.symbols().filter(|s| s.is_definition() && s.is_global());
                found.extend(defined.filter_map(|s| s.name().ok().filter(|n| wanted(n)).map(str::to_string)));
            }
        }
    }
    let symbol = found.pop()?;
    found.iter().all(|other| *other == symbol).then_some(symbol)
}

/// Whether `symbol` is libtest's entry and safe to pass on as written.
fn is_entry(symbol: &str) -> bool {
    is_named(symbol, "16test_main_static", ENTRY)
}

/// Whether `symbol` demangles to `path` and can be written in a linker flag and a C string
/// (`hint`: a part of its mangled name, both manglings spelling a name's length before it, so
/// most symbols are left without demangling).
fn is_named(symbol: &str, hint: &str, path: &str) -> bool {
    symbol.contains(hint)
        && symbol
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.')
        && rustc_demangle::try_demangle(symbol).is_ok_and(|d| format!("{d:#}") == path)
}

/// The rustc flags that wrap `symbol` in a crate's link (libtest's entry in a harness test
/// crate's, the environment's iterators in every one with the runtime).
pub fn link_flags(symbol: &str) -> [String; 2] {
    ["-C".into(), format!("link-arg=-Wl,--wrap={symbol}")]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The library directory of the toolchain that builds this crate.
    fn target_libdir() -> PathBuf {
        let out = std::process::Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            .args(["--print", "target-libdir"])
            .output()
            .expect("rustc runs");
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
    }

    #[test]
    fn the_entry_is_recognised_in_both_manglings_and_nothing_else_is() {
        assert!(is_entry("_RNvCs3mSbOeLENLV_4test16test_main_static"));
        assert!(is_entry("_ZN4test16test_main_static17h0123456789abcdefE"));
        assert!(!is_entry("_RNvCs3mSbOeLENLV_4test22test_main_static_abort"));
        assert!(!is_entry("_RNvCs3mSbOeLENLV_4test9test_main"));
        assert!(!is_entry("test_main_static"));
    }

    /// The toolchain that builds this crate has a libtest whose entry is found, and the lookup
    /// is cached by `rustc -vV`: a second lookup with the same key does not ask for the
    /// directory, one with another key does.
    #[test]
    fn the_toolchains_entry_is_found_and_cached_by_rustc_version() {
        let lib_dir = target_libdir();
        let dir = std::env::temp_dir().join(format!("sfl-test-main-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let found = test_main_symbol(&dir, "rustc A", || Some(lib_dir.clone())).expect("libtest's entry");
        assert!(is_entry(&found), "{found}");
        let again = test_main_symbol(&dir, "rustc A", || panic!("the cache answers"));
        assert_eq!(again.as_deref(), Some(found.as_str()));
        let other = test_main_symbol(&dir, "rustc B", || None);
        assert_eq!(other, None, "another toolchain is looked up again");
        assert_eq!(test_main_symbol(&dir, "rustc B", || panic!("cached")), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The toolchain's standard library defines both iterators of the environment once, and
    /// nothing else is taken for them.
    #[test]
    fn the_environments_iterators_are_found() {
        let lib_dir = target_libdir();
        let dir = std::env::temp_dir().join(format!("sfl-env-iteration-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let found = env_iteration_symbols(&dir, "rustc A", || Some(lib_dir.clone()));
        if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
            let found = found.expect("std::env::vars and vars_os");
            let (vars, vars_os) = found.split_once(' ').expect("two symbols");
            assert!(is_named(vars, "3env4vars", "std::env::vars"), "{vars}");
            assert!(is_named(vars_os, "3env7vars_os", "std::env::vars_os"), "{vars_os}");
        } else {
            assert_eq!(found, None);
        }
        assert!(!is_named("_RNvNtCs1_3std3env7vars_os", "3env4vars", "std::env::vars"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
