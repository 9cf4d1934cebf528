//! The statics a kept test process compares before it takes another test.
//!
//! A forked test that passed may run the server's next test in the same process (see "Kept
//! test processes" in `runtime.c`), but only if the test left the process as a fresh one would
//! be: a `OnceLock` it filled, a lazy static, a counter it bumped or a cache it grew would make
//! the next test start from another state than in a process of its own, and its coverage could
//! differ (a lazy initialisation counted by the first test only). So before the tests run,
//! cargo sfl lists the writable statics of each instrumented test executable's Rust code
//! (`<exe>.sfl-state`); the runtime copies their bytes when the process's first test begins and
//! keeps a process only while they are unchanged, or put back as they were: when the executable
//! allocates with the standard library's allocator ([`resettable`], a flag in the file), a test
//! that changed them has their bytes put back before the next test.
//!
//! Listed: the data objects (ELF `STT_OBJECT`, size > 0) in `.data` and `.bss`, named by Rust
//! symbols, of every crate but the standard library's own (`std`, `core`, `alloc`, libtest and
//! their private dependencies), whose statics change in every test (thread ids, the output
//! capture's flag, the stdout buffer) without changing what the next test's code does. The
//! standard library's state that does matter lives elsewhere and is checked at run time: the
//! environment and the working directory (the runtime notes their changes), other threads and
//! child processes. libtest resets the panic hook after every test. Statics of C code are not
//! listed.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// `<exe>.sfl-state`: magic, count, flags, then (address, length) pairs (u64, native endian).
const MAGIC: u64 = u64::from_le_bytes(*b"SFLSTAT2");
/// The flag saying the statics may be put back as they were ([`resettable`]).
const RESETTABLE: u64 = 1;

/// The crates of the standard library and its private dependencies, whose statics are not
/// compared.
const STD_CRATES: &[&str] = &[
    "std",
    "core",
    "alloc",
    "test",
    "proc_macro",
    "panic_unwind",
    "panic_abort",
    "unwind",
    "std_detect",
    "getopts",
    "unicode_width",
    "compiler_builtins",
    "rustc_demangle",
    "addr2line",
    "gimli",
    "object",
    "miniz_oxide",
    "adler2",
    "hashbrown",
    "memchr",
    "cfg_if",
    "libc",
];

/// The file that lists `exe`'s compared statics.
pub fn state_path(exe: &Path) -> PathBuf {
    let mut s = exe.as_os_str().to_owned();
    s.push(".sfl-state");
    PathBuf::from(s)
}

/// Whether the static named `symbol` (mangled) is compared: Rust code outside the standard
/// library.
fn compared(symbol: &str) -> bool {
    let Ok(d) = rustc_demangle::try_demangle(symbol) else {
        return false;
    };
    let path = format!("{d:#}");
    let krate = path.trim_start_matches('<').split("::").next().unwrap_or("");
    !krate.is_empty() && !STD_CRATES.contains(&krate)
}

/// The compared statics of the executable `data`: (address, length), sorted, touching ones
/// merged.
pub fn ranges(data: &[u8]) -> Result<Vec<(u64, u64)>, object::Error> {
    let obj = object::File::parse(data)?;
    let writable: Vec<object::SectionIndex> = obj
        .sections()
        .filter(|s| {
            let name = s.name().unwrap_or("");
            let data = name == ".data" || (name.starts_with(".data.") && !name.starts_with(".data.rel.ro"));
            data || name == ".bss" || name.starts_with(".bss.")
        })
        .map(|s| s.index())
        .collect();
    let mut found: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0)
        .filter(|s| s.section_index().is_some_and(|i| writable.contains(&i)))
        .filter(|s| s.name().is_ok_and(compared))
        .map(|s| (s.address(), s.size()))
        .collect();
    found.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(found.len());
    for (at, len) in found {
        match merged.last_mut() {
            Some((a, l)) if at <= *a + *l => *l = (*l).max(at + len - *a),
            _ => merged.push((at, len)),
        }
    }
    Ok(merged)
}

/// Whether a test's changes to the compared statics of the executable `data` may be undone by
/// putting their bytes back: when the program allocates with the standard library's allocator.
/// A `#[global_allocator]` of Rust code keeps its free lists in such statics, and putting them
/// back would hand out memory still in use; rustc then links no `__rdl_alloc` (the default
/// allocator's entry).
pub fn resettable(data: &[u8]) -> Result<bool, object::Error> {
    let obj = object::File::parse(data)?;
    Ok(obj.symbols().any(|s| {
        s.name()
            .is_ok_and(|n| n == "__rdl_alloc" || (n.starts_with("_RNv") && n.ends_with("___rdl_alloc")))
    }))
}

/// Writes `exe`'s [`state_path`] from its bytes `data` (only if it changed).
pub fn write(exe: &Path, data: &[u8]) -> std::io::Result<()> {
    let ranges = ranges(data).map_err(std::io::Error::other)?;
    let flags = if resettable(data).map_err(std::io::Error::other)? {
        RESETTABLE
    } else {
        0
    };
    let mut out = Vec::with_capacity(24 + 16 * ranges.len());
    out.extend_from_slice(&MAGIC.to_ne_bytes());
    out.extend_from_slice(&(ranges.len() as u64).to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    for (at, len) in &ranges {
        out.extend_from_slice(&at.to_ne_bytes());
        out.extend_from_slice(&len.to_ne_bytes());
    }
    let path = state_path(exe);
    if std::fs::read(&path).ok().as_deref() == Some(&out[..]) {
        return Ok(());
    }
    let tmp = {
        let mut s = path.as_os_str().to_owned();
        s.push(".sfl-tmp");
        PathBuf::from(s)
    };
    std::fs::write(&tmp, &out)?;
    std::fs::rename(&tmp, &path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_librarys_statics_are_not_compared() {
        // std::thread::ThreadId::new::COUNTER, changed by every test thread libtest spawns.
        assert!(!compared("_ZN3std6thread8ThreadId3new7COUNTER17h0123456789abcdefE"));
        assert!(!compared("_ZN4test7console12TEST_WARNING17h0123456789abcdefE"));
        // A crate's own lazy static and a dependency's cache are.
        assert!(compared("_ZN9my_parser5cache5CACHE17h0123456789abcdefE"));
        assert!(compared("_ZN4jiff2tz2db2DB17h0123456789abcdefE"));
        // C symbols (the profiler's, this runtime's) are not Rust code.
        assert!(!compared("__llvm_profile_counter_bias"));
        assert!(!compared("child_pids"));
    }

    #[test]
    fn statics_may_be_put_back_under_the_standard_allocator_alone() {
        // This test binary allocates with the standard library's allocator.
        let data = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(resettable(&data).unwrap());
        let written = tempfile::tempdir().unwrap();
        let exe = written.path().join("t");
        write(&exe, &data).unwrap();
        let file = std::fs::read(state_path(&exe)).unwrap();
        let word = |i: usize| u64::from_ne_bytes(file[8 * i..8 * i + 8].try_into().unwrap());
        assert_eq!((word(0), word(2)), (MAGIC, RESETTABLE));
        assert_eq!(file.len() as u64, 24 + 16 * word(1));
    }

    static OURS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

    #[test]
    fn this_test_binarys_own_statics_are_listed_and_the_standard_librarys_are_not() {
        OURS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let exe = std::env::current_exe().unwrap();
        let data = std::fs::read(&exe).unwrap();
        let ranges = ranges(&data).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let ours = obj
            .symbols()
            .find(|s| {
                s.name()
                    .is_ok_and(|n| n.contains("state5tests4OURS") && s.kind() == SymbolKind::Data)
            })
            .expect("the test's static is in the symbol table");
        let within = |at: u64| ranges.iter().any(|&(a, l)| a <= at && at < a + l);
        assert!(within(ours.address()), "{ranges:?}");
        let writable = |s: &object::Symbol| {
            let section = s.section_index().and_then(|i| obj.section_by_index(i).ok());
            section.is_some_and(|sec| matches!(sec.name(), Ok(".data" | ".bss")))
        };
        let std_static = obj
            .symbols()
            .filter(|s| s.kind() == SymbolKind::Data && s.size() > 0 && writable(s))
            .find(|s| {
                s.name()
                    .is_ok_and(|n| rustc_demangle::try_demangle(n).is_ok_and(|d| format!("{d:#}").starts_with("std::")))
            })
            .expect("std has a writable static");
        assert!(!within(std_static.address()));
        assert!(ranges.windows(2).all(|w| w[0].0 + w[0].1 < w[1].0), "sorted, merged");
    }
}
