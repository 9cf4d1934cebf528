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
    let cache = rt_dir.join(CACHE);
    let cached = std::fs::read_to_string(&cache).ok();
    if let Some((key, symbol)) = cached.as_deref().and_then(|s| s.rsplit_once('\n'))
        && key == rustc_vv
    {
        return (!symbol.is_empty()).then(|| symbol.to_string());
    }
    let symbol = lib_dir().and_then(|dir| entry_in(&dir));
    if std::fs::create_dir_all(rt_dir).is_ok() {
        let _ = std::fs::write(&cache, format!("{rustc_vv}\n{}", symbol.as_deref().unwrap_or("")));
    }
    symbol
}

/// The entry's symbol in the libtest archive of the library directory `dir`.
fn entry_in(dir: &Path) -> Option<String> {
    let rlib = std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("libtest-") && n.ends_with(".rlib"))
    })?;
    entry_in_archive(&std::fs::read(rlib).ok()?)
}

/// The one symbol of an archive (its symbol index, else its members' symbol tables) that
/// demangles to libtest's entry and can be written in a linker flag and a C string.
fn entry_in_archive(data: &[u8]) -> Option<String> {
    use object::read::archive::ArchiveFile;
    use object::{Object, ObjectSymbol};
    let archive = ArchiveFile::parse(data).ok()?;
    let mut entries: Vec<String> = Vec::new();
    if let Ok(Some(index)) = archive.symbols() {
        entries.extend(index.flatten().filter_map(|s| {
            std::str::from_utf8(s.name())
                .ok()
                .filter(|n| is_entry(n))
                .map(str::to_string)
        }));
    } else {
        for member in archive.members().flatten() {
            if let Ok(file) = member.data(data).and_then(object::File::parse) {
                let defined = file.symbols().filter(|s| s.is_definition() && s.is_global());
                entries.extend(defined.filter_map(|s| s.name().ok().filter(|n| is_entry(n)).map(str::to_string)));
            }
        }
    }
    let entry = entries.pop()?;
    entries.iter().all(|other| *other == entry).then_some(entry)
}

/// Whether `symbol` is libtest's entry and safe to pass on as written.
fn is_entry(symbol: &str) -> bool {
    // Both manglings spell the name's length before it: most symbols are left without demangling.
    symbol.contains("16test_main_static")
        && symbol
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b == b'.')
        && rustc_demangle::try_demangle(symbol).is_ok_and(|d| format!("{d:#}") == ENTRY)
}

/// The rustc flags that wrap the entry `symbol` in a harness test crate's link.
pub fn link_flags(symbol: &str) -> [String; 2] {
    ["-C".into(), format!("link-arg=-Wl,--wrap={symbol}")]
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let out = std::process::Command::new(std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()))
            .args(["--print", "target-libdir"])
            .output()
            .expect("rustc runs");
        let lib_dir = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
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
}
