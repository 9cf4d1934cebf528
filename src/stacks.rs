//! A failing test's panic stack without the standard library's backtrace.
//!
//! With `RUST_BACKTRACE=1` the standard library prints a panic's backtrace, symbolising it in
//! the test's own process: it parses the executable's DWARF there, about 50 ms per failing
//! test (heck, 54 of 111 tests failing: 3.1 s against 0.4 s without). cargo sfl's runtime
//! (`src/edges/runtime.c`), linked into every workspace executable, records the stack's return
//! addresses instead when a panic starts to unwind, and the addresses are symbolised here,
//! once per executable for the whole run. The frames are the ones the standard library's short
//! backtrace shows (between its `__rust_end_short_backtrace` and `__rust_begin_short_backtrace`
//! markers, inlined calls expanded, innermost first), read as [`crate::verdict::panic_stack`]
//! reads the printed ones.
//!
//! When the runtime cannot record (an executable that does not link it, an unwinder linked
//! statically, a system without glibc) it leaves `RUST_BACKTRACE=1` set, and the printed
//! backtrace is read as before. Doctests link it too: rustdoc builds them with the same flags.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::{Object, ObjectSection, ObjectSymbol};

use crate::edges::demangled;
use crate::verdict::RawFrame;

/// Where the runtime writes a test process's first panic stack (set per test).
pub const FILE_ENV: &str = "CARGO_SFL_STACKS";
/// Set with `RUST_BACKTRACE=1`: the runtime, where it records stacks, unsets both (and
/// `RUST_LIB_BACKTRACE`), so the test runs in the environment `cargo test` gives it.
pub const QUIET_ENV: &str = "CARGO_SFL_QUIET_BACKTRACE";
/// The symbols that bound the standard library's short backtrace.
const END_MARKER: &str = "__rust_end_short_backtrace";
const BEGIN_MARKER: &str = "__rust_begin_short_backtrace";
/// Executables kept open at once (their DWARF in memory); the oldest is dropped.
const KEPT: usize = 2;

/// One recorded stack: the process's executable and, innermost first, each frame's address in
/// its file (`None`: the executable; else the shared library's path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub exe: PathBuf,
    pub frames: Vec<(Option<PathBuf>, u64)>,
}

/// The first complete stack in the runtime's file recorded by the executable `exe` (a test
/// may run other instrumented programs, which append their own); `None` when there is none.
pub fn read(path: &Path, exe: &Path) -> Option<Recorded> {
    let text = std::fs::read_to_string(path).ok()?;
    // The runtime writes the path the kernel has for the executable (`/proc/self/exe`).
    let canonical = std::fs::canonicalize(exe).ok();
    parse(&text)
        .into_iter()
        .find(|r| r.exe == exe || canonical.as_deref() == Some(r.exe.as_path()))
}

/// Every complete record in the runtime's file (`exe PATH`, `ADDR FILE` lines, `end`).
fn parse(text: &str) -> Vec<Recorded> {
    let mut out = Vec::new();
    let mut current: Option<Recorded> = None;
    for line in text.lines() {
        if let Some(exe) = line.strip_prefix("exe ") {
            current = Some(Recorded {
                exe: PathBuf::from(exe),
                frames: Vec::new(),
            });
        } else if line == "end" {
            out.extend(current.take());
        } else if let (Some(r), Some((addr, file))) = (current.as_mut(), line.split_once(' '))
            && let Ok(addr) = u64::from_str_radix(addr, 16)
        {
            r.frames.push(((file != "-").then(|| PathBuf::from(file)), addr));
        }
    }
    out
}

type Reader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// One executable's or library's debug information and symbols, for naming addresses.
struct Module {
    path: PathBuf,
    /// `None`: no debug information could be read (then only symbols name frames).
    dwarf: Option<addr2line::Context<Reader>>,
    /// Function symbols by address: (start, size, mangled name), read when a frame first needs
    /// one (the debug information names almost every frame).
    symbols: std::sync::OnceLock<Vec<(u64, u64, String)>>,
}

/// A symbolised frame: its function (demangled, without hash) and location.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    function: Option<String>,
    file: Option<String>,
    line: u32,
}

/// The sections addr2line reads to name frames: the location lists (`.debug_loc`,
/// `.debug_loclists`, a few hundred KiB in a debug test binary) name variables' places, never
/// a frame, and are left unread.
fn names_frames(id: gimli::SectionId) -> bool {
    !matches!(id, gimli::SectionId::DebugLoc | gimli::SectionId::DebugLocLists)
}

impl Module {
    fn open(path: &Path) -> Option<Module> {
        // Only the sections read below are read from the file (a test binary is mostly code and
        // debug information, and only the latter is kept), each once, straight into the buffer
        // addr2line keeps: 20-30 MB of a debug test binary, so a second copy (through object's
        // read cache) cost more than the reading.
        let file = std::fs::File::open(path).ok()?;
        let cache = object::ReadCache::new(&file);
        let obj = object::File::parse(&cache).ok()?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let dwarf = gimli::Dwarf::load(|id| -> Result<Reader, gimli::Error> {
            let bytes = obj
                .section_by_name(id.name())
                .filter(|_| names_frames(id))
                .and_then(|s| section_bytes(&file, &s))
                .unwrap_or_else(|| Arc::from(&[][..]));
            Ok(gimli::EndianArcSlice::new(bytes, endian))
        })
        .ok()
        .and_then(|d| addr2line::Context::from_dwarf(d).ok());
        Some(Module {
            path: path.to_path_buf(),
            dwarf,
            symbols: std::sync::OnceLock::new(),
        })
    }

    /// The frames at `addr`, inlined calls first; the outermost is unnamed when the debug
    /// information does not name it ([`Module::name_by_symbol`] names it).
    fn frames(&self, addr: u64) -> Vec<Named> {
        let mut out = Vec::new();
        if let Some(ctx) = &self.dwarf
            && let Ok(mut frames) = ctx.find_frames(addr).skip_all_loads()
        {
            while let Ok(Some(f)) = frames.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.raw_name().ok())
                    .map(|n| demangled(&n));
                let loc = f.location.as_ref();
                out.push(Named {
                    function,
                    file: loc.and_then(|l| l.file).map(str::to_string),
                    line: loc.and_then(|l| l.line).unwrap_or(0),
                });
            }
        }
        if out.is_empty() {
            out.push(Named {
                function: None,
                file: None,
                line: 0,
            });
        }
        out
    }

    /// `frame` (the outermost at `addr`) named by its symbol when the debug information left
    /// it unnamed, as the standard library's backtrace names it.
    fn name_by_symbol(&self, frame: &mut Named, addr: u64) {
        if frame.function.is_none() {
            frame.function = self.symbol(addr).map(demangled);
        }
    }

    fn symbol(&self, addr: u64) -> Option<&str> {
        let symbols = self.symbols.get_or_init(|| text_symbols(&self.path));
        let i = symbols.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, size, name) = &symbols[i];
        (size == &0 || addr < start + size).then_some(name.as_str())
    }
}

/// A section's bytes as they are in the file, read once into the buffer kept (`None`: a
/// compressed section, decompressed by object, or one that cannot be read).
fn section_bytes<'d, 'f>(
    file: &std::fs::File,
    section: &object::Section<'d, 'f, &'d object::ReadCache<&'f std::fs::File>>,
) -> Option<Arc<[u8]>> {
    if !matches!(
        section.compressed_file_range().ok()?.format,
        object::CompressionFormat::None
    ) {
        return section.uncompressed_data().ok().map(|d| Arc::from(&*d));
    }
    let (offset, size) = section.file_range()?;
    let mut bytes: Arc<[u8]> = std::iter::repeat_n(0u8, usize::try_from(size).ok()?).collect();
    crate::platform::read_exact_at(file, Arc::get_mut(&mut bytes)?, offset).ok()?;
    Some(bytes)
}

/// The function symbols of the executable at `path`, sorted by address (empty when it cannot
/// be read).
fn text_symbols(path: &Path) -> Vec<(u64, u64, String)> {
    let Ok(file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let cache = object::ReadCache::new(&file);
    let Ok(obj) = object::File::parse(&cache) else {
        return Vec::new();
    };
    let mut symbols: Vec<(u64, u64, String)> = obj
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.address() > 0)
        .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
        .collect();
    symbols.sort_unstable_by_key(|s| s.0);
    symbols
}

/// The frames the standard library's short backtrace would print with a location, from each
/// address's frames (innermost first): those after its end marker and before its begin marker
/// (all of them when no end marker is named), then [`crate::verdict::fold`]ed.
fn short_backtrace(frames: Vec<Named>) -> Vec<RawFrame> {
    let marked = frames
        .iter()
        .any(|f| f.function.as_deref().is_some_and(|n| n.contains(END_MARKER)));
    let mut start = !marked;
    let mut kept = Vec::new();
    for f in frames {
        let name = f.function.as_deref().unwrap_or("<unknown>");
        if start && name.contains(BEGIN_MARKER) {
            start = false;
            continue;
        }
        if name.contains(END_MARKER) {
            start = true;
            continue;
        }
        if let (true, Some(file), true) = (start, f.file, f.line > 0) {
            kept.push(RawFrame {
                function: name.to_string(),
                path: PathBuf::from(file),
                line: f.line,
            });
        }
    }
    crate::verdict::fold(kept)
}

/// Whether `frames` (innermost first) reach the short backtrace's begin marker after its end
/// marker: no frame further out is in the short backtrace.
fn short_ends(frames: &[Named]) -> bool {
    let is = |f: &Named, marker: &str| f.function.as_deref().is_some_and(|n| n.contains(marker));
    frames
        .iter()
        .position(|f| is(f, END_MARKER))
        .is_some_and(|end| frames[end..].iter().any(|f| is(f, BEGIN_MARKER)))
}

/// An open module, shared by the threads that name its addresses.
type Shared = Arc<Mutex<Option<Module>>>;

/// Names recorded stacks' addresses, keeping the last few modules read for the run.
#[derive(Default)]
pub struct Symbolizer {
    modules: Mutex<Vec<(PathBuf, Shared)>>,
}

impl Symbolizer {
    /// The panic stack `rec` recorded, as the standard library's short backtrace would show it.
    ///
    /// Addresses are named innermost first, and only up to the short backtrace's begin marker
    /// after its end marker ([`short_ends`]): the frames further out (libtest, `main`,
    /// `_start`) are never shown. A frame the debug information does not name (the runtime's
    /// own, which recorded the stack) has no location, so it is never shown either: it is named
    /// by its symbol, which takes reading the executable's whole symbol table (half the time of
    /// naming a stack), only when the markers were not all found without it (a frame with a
    /// location always is).
    pub fn frames(&self, rec: &Recorded) -> Vec<RawFrame> {
        let mut named = Vec::new();
        let mut unnamed = Vec::new();
        let mut open: Option<(&Path, Shared)> = None;
        for (file, addr) in &rec.frames {
            if short_ends(&named) {
                break;
            }
            let path = file.as_deref().unwrap_or(&rec.exe);
            let module = match &open {
                Some((p, m)) if *p == path => m.clone(),
                _ => {
                    let m = self.module(path);
                    open = Some((path, m.clone()));
                    m
                }
            };
            let held = module.lock().unwrap_or_else(|e| e.into_inner());
            match held.as_ref() {
                Some(m) => named.extend(m.frames(*addr)),
                None => named.push(Named {
                    function: None,
                    file: None,
                    line: 0,
                }),
            }
            if held.is_some() && named.last().is_some_and(|f| f.function.is_none()) {
                unnamed.push((named.len() - 1, module.clone(), *addr));
            }
        }
        // With both markers found, only a frame that can be shown (one with a location) needs
        // its name.
        let markers_found = short_ends(&named);
        for (i, module, addr) in unnamed {
            if markers_found && (named[i].file.is_none() || named[i].line == 0) {
                continue;
            }
            if let Some(m) = module.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                m.name_by_symbol(&mut named[i], addr);
            }
        }
        short_backtrace(named)
    }

    /// The module at `path`, opened now unless it is one of the last [`KEPT`] (an executable
    /// that cannot be read names no frame).
    fn module(&self, path: &Path) -> Shared {
        let mut modules = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = modules.iter().position(|(p, _)| p == path) {
            let m = modules.remove(i);
            let shared = m.1.clone();
            modules.push(m);
            return shared;
        }
        let m: Shared = Arc::new(Mutex::new(Module::open(path)));
        if modules.len() >= KEPT {
            modules.remove(0);
        }
        modules.push((path.to_path_buf(), m.clone()));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_read_whole_and_by_their_executable() {
        let text = "exe /t/a\n4011a0 -\n7f00 /lib/libstd.so\nend\nexe /t/b\n10 -\nend\nexe /t/a\n20 -\n";
        let recs = parse(text);
        assert_eq!(recs.len(), 2, "the unfinished third record is dropped");
        assert_eq!(recs[0].exe, PathBuf::from("/t/a"));
        assert_eq!(
            recs[0].frames,
            [(None, 0x4011a0), (Some(PathBuf::from("/lib/libstd.so")), 0x7f00)]
        );
        assert_eq!(recs[1].frames, [(None, 0x10)]);
    }

    fn named(function: &str, file: Option<&str>, line: u32) -> Named {
        Named {
            function: Some(function.to_string()),
            file: file.map(str::to_string),
            line,
        }
    }

    #[test]
    fn the_short_backtrace_lies_between_the_markers() {
        let frames = vec![
            named("__rustc::rust_begin_unwind", Some("/rustc/std/panicking.rs"), 689),
            named(
                "std::sys::backtrace::__rust_end_short_backtrace",
                Some("/rustc/std/bt.rs"),
                1,
            ),
            named("core::panicking::panic_fmt", Some("/rustc/core/panicking.rs"), 75),
            named("c::g", Some("/w/src/lib.rs"), 2),
            named("c::g", Some("/w/src/lib.rs"), 2),
            named("c::no_line", None, 0),
            named("c::tests::t", Some("/w/src/lib.rs"), 9),
            named("c::tests::t::{{closure}}", Some("/w/src/lib.rs"), 8),
            named(
                "std::sys::backtrace::__rust_begin_short_backtrace",
                Some("/rustc/std/bt.rs"),
                3,
            ),
            named("test::run_test", Some("/rustc/test/lib.rs"), 600),
        ];
        let got: Vec<(String, u32)> = short_backtrace(frames.clone())
            .into_iter()
            .map(|f| (f.function, f.line))
            .collect();
        assert_eq!(
            got,
            [
                ("core::panicking::panic_fmt".to_string(), 75),
                ("c::g".to_string(), 2),
                ("c::tests::t".to_string(), 9),
            ]
        );
        // Naming stops at the begin marker after the end marker, and not before.
        let ends: Vec<bool> = (0..=frames.len()).map(|n| short_ends(&frames[..n])).collect();
        assert_eq!(ends.iter().position(|&e| e), Some(9), "{ends:?}");
        assert!(!short_ends(&frames[8..]), "a begin marker alone ends nothing");
        // Without an end marker every frame with a location is kept.
        let unmarked: Vec<Named> = frames.into_iter().skip(2).take(3).collect();
        assert_eq!(short_backtrace(unmarked).len(), 2);
    }
}
