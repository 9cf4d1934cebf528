//! Plain counter updates while a test runs on one thread.
//!
//! rustc (1.95) lowers every coverage counter update to an atomic read-modify-write (`lock inc`
//! on x86-64), so that counts stay exact when threads race. At opt-level 0 a hot loop updates a
//! counter every few instructions, and the atomics alone made regex-syntax's CPU-bound tests
//! 2.4x slower than an uninstrumented build (the edge flags add little on top). A test on one
//! thread needs no atomics: its counts are exact with plain updates.
//!
//! So, before the tests run, each instrumented test executable's counter updates are rewritten
//! in place: the `lock` prefix (0xF0) becomes a `ds` segment prefix (0x3E), which x86-64
//! ignores, so the instruction keeps its length and becomes a plain increment. The addresses
//! rewritten are saved next to the executable (`<exe>.sfl-atomics`). The edge runtime
//! (`runtime.c`) wraps `pthread_create`: before a thread that could run instrumented code
//! alongside another is created, it writes the `lock` prefixes back, so from then on every
//! update is atomic again, as rustc made it. Counts are therefore exact in every test.
//!
//! Only instructions the decoder proves to be `lock inc qword [reg + disp]` with the
//! displacement inside `__llvm_prf_cnts` are touched, and only in x86-64 ELF executables that
//! link this runtime (its marker symbol). Everything else keeps its atomics: slower, never wrong.

use std::path::{Path, PathBuf};

use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind};
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

/// A symbol of `runtime.c` that says the runtime can restore the atomics.
pub const MARKER: &str = "sfl_restores_atomic_counters";
/// Set for a process whose first thread, spawned by its main thread, is the only one that runs
/// instrumented code (libtest's test thread): that spawn keeps the updates plain.
pub const SERIAL_SPAWNS_ENV: &str = "CARGO_SFL_SERIAL_SPAWNS";
/// The file of rewritten addresses: magic, count, then one address per update (u64, native
/// endian).
const MAGIC: u64 = u64::from_le_bytes(*b"SFLATOM1");
const LOCK: u8 = 0xF0;
const DS: u8 = 0x3E;

/// The file that lists an executable's rewritten updates.
pub fn sites_path(exe: &Path) -> PathBuf {
    beside(exe, ".sfl-atomics")
}

/// `path` with `suffix` appended to its file name.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The file that says which executable `relax` last left: the file's identity, size and
/// modification time, and its sites file's size. An executable that still matches was relaxed
/// already and is not read again (reading and decoding a test executable took 15-20 ms per
/// binary on every run, before any test could start).
fn stamp_path(exe: &Path) -> PathBuf {
    beside(exe, ".sfl-relaxed")
}

/// What [`stamp_path`] holds for `exe` as it is now.
pub(crate) fn stamp(exe: &Path) -> std::io::Result<String> {
    let m = std::fs::metadata(exe)?;
    let t = m.modified()?.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    #[cfg(unix)]
    let id = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    };
    #[cfg(not(unix))]
    let id = (0u64, 0u64);
    let sites = std::fs::metadata(sites_path(exe)).map_or(0, |m| m.len());
    let state = std::fs::metadata(super::state::state_path(exe)).map_or(0, |m| m.len());
    Ok(format!(
        "{} {} {} {}.{:09} {sites} {state}\n",
        id.0,
        id.1,
        m.len(),
        t.as_secs(),
        t.subsec_nanos()
    ))
}

/// Rewrites `exe`'s atomic counter updates into plain ones and saves their addresses (see the
/// module docs); an executable this does not apply to is left alone. An executable already
/// relaxed and unchanged since ([`stamp_path`]) is not read.
pub fn relax(exe: &Path) -> std::io::Result<()> {
    let stamp_file = stamp_path(exe);
    if let (Ok(now), Ok(then)) = (stamp(exe), std::fs::read_to_string(&stamp_file))
        && now == then
    {
        return Ok(());
    }
    rewrite(exe)?;
    // Best effort: without it the next run reads the executable again.
    if let Ok(now) = stamp(exe) {
        let _ = write_replacing(&stamp_file, now.as_bytes(), None);
    }
    Ok(())
}

/// [`relax`] without the stamp: reads, rewrites and lists.
fn rewrite(exe: &Path) -> std::io::Result<()> {
    let mut data = std::fs::read(exe)?;
    let Some(Sites {
        addresses: sites,
        to_patch,
    }) = find_sites(&data).map_err(std::io::Error::other)?
    else {
        return Ok(());
    };
    let mut list = Vec::with_capacity(16 + 8 * sites.len());
    list.extend_from_slice(&MAGIC.to_ne_bytes());
    list.extend_from_slice(&(sites.len() as u64).to_ne_bytes());
    for s in &sites {
        list.extend_from_slice(&s.to_ne_bytes());
    }
    // The statics a kept test process compares (`state`): for the executables this runtime
    // serves, which are the ones relaxed.
    super::state::write(exe, &data)?;
    let list_path = sites_path(exe);
    if std::fs::read(&list_path).ok().as_deref() != Some(&list[..]) {
        write_replacing(&list_path, &list, None)?;
    }
    for &off in &to_patch {
        data[off] = DS;
    }
    if !to_patch.is_empty() {
        let perms = std::fs::metadata(exe)?.permissions();
        write_replacing(exe, &data, Some(perms))?;
    }
    Ok(())
}

/// Writes `path` through a temporary file and a rename, so a process running the old file
/// keeps it and no reader sees half a file.
pub(crate) fn write_replacing(path: &Path, data: &[u8], perms: Option<std::fs::Permissions>) -> std::io::Result<()> {
    let tmp = beside(path, ".sfl-tmp");
    std::fs::write(&tmp, data)?;
    if let Some(p) = perms {
        std::fs::set_permissions(&tmp, p)?;
    }
    std::fs::rename(&tmp, path)
}

/// An executable's relaxable counter updates.
#[derive(Debug, PartialEq, Eq)]
struct Sites {
    /// Every update's address, sorted.
    addresses: Vec<u64>,
    /// File offsets of the `lock` prefixes still to rewrite.
    to_patch: Vec<usize>,
}

/// The relaxable counter updates; `None` when the executable is not one to relax.
fn find_sites(data: &[u8]) -> Result<Option<Sites>, object::Error> {
    let obj = object::File::parse(data)?;
    if obj.architecture() != object::Architecture::X86_64 || obj.format() != object::BinaryFormat::Elf {
        return Ok(None);
    }
    let (Some(counters), Some(text)) = (obj.section_by_name("__llvm_prf_cnts"), obj.section_by_name(".text")) else {
        return Ok(None);
    };
    if !obj.symbols().any(|s| s.name() == Ok(MARKER)) {
        return Ok(None);
    }
    let Some((text_off, text_len)) = text.file_range() else {
        return Ok(None);
    };
    let counters = counters.address()..counters.address() + counters.size();
    let code = &data[text_off as usize..][..text_len as usize];
    let mut functions: Vec<(u64, u64)> = obj
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0 && s.section_index() == Some(text.index()))
        .map(|s| (s.address(), s.address() + s.size()))
        .collect();
    functions.sort_unstable();
    functions.dedup_by_key(|f| f.0);
    let mut sites = Vec::new();
    let mut to_patch = Vec::new();
    let mut last_decoded = None;
    for at in candidates(code) {
        let addr = text.address() + at as u64;
        let i = functions.partition_point(|f| f.0 <= addr);
        let Some(&(start, end)) = i.checked_sub(1).map(|i| &functions[i]) else {
            continue;
        };
        if addr >= end || last_decoded == Some(start) {
            continue;
        }
        last_decoded = Some(start);
        let (lo, hi) = ((start - text.address()) as usize, (end - text.address()) as usize);
        for (ip, locked) in updates(&code[lo..hi.min(code.len())], start, &counters) {
            let off = (ip - text.address()) as usize;
            sites.push(ip);
            if locked {
                to_patch.push(text_off as usize + off);
            }
        }
    }
    sites.sort_unstable();
    sites.dedup();
    Ok(Some(Sites {
        addresses: sites,
        to_patch,
    }))
}

/// Offsets in `code` where a counter update may start: a `lock` or `ds` prefix, a REX.W
/// prefix, then opcode 0xFF with ModRM's reg field 0 (`inc r/m64`). A cheap filter: the
/// decoder decides.
fn candidates(code: &[u8]) -> impl Iterator<Item = usize> + '_ {
    code.windows(4).enumerate().filter_map(|(i, w)| {
        let prefix = w[0] == LOCK || w[0] == DS;
        let rex_w = w[1] & 0xF8 == 0x48;
        (prefix && rex_w && w[2] == 0xFF && (w[3] >> 3) & 7 == 0).then_some(i)
    })
}

/// Decodes one function (`code` at address `ip`) and yields each counter update's address and
/// whether it is still atomic: `lock inc qword [reg + disp]` (or, relaxed by an earlier run,
/// `ds inc qword [reg + disp]`) with `disp` among the counters.
fn updates(code: &[u8], ip: u64, counters: &std::ops::Range<u64>) -> Vec<(u64, bool)> {
    let mut decoder = Decoder::with_ip(64, code, ip, DecoderOptions::NONE);
    let mut ins = Instruction::default();
    let mut out = Vec::new();
    while decoder.can_decode() {
        decoder.decode_out(&mut ins);
        if ins.is_invalid() || ins.mnemonic() != Mnemonic::Inc || ins.op0_kind() != OpKind::Memory {
            continue;
        }
        let first = code[(ins.ip() - ip) as usize];
        let locked = ins.has_lock_prefix() && first == LOCK;
        let relaxed = !ins.has_lock_prefix() && first == DS;
        let plain_base = ins.memory_index() == iced_x86::Register::None && !ins.is_ip_rel_memory_operand();
        if (locked || relaxed) && plain_base && counters.contains(&ins.memory_displacement64()) {
            out.push((ins.ip(), locked));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lock inc qword [rcx + 0x1000]`, `ds inc qword [rcx + 0x1008]`, `lock inc qword
    /// [rcx + 0x9000]` (outside the counters), `lock inc qword [rcx + rdx + 0x1000]` (indexed),
    /// and a `mov` whose immediate holds the bytes of an update.
    const CODE: &[u8] = &[
        0xF0, 0x48, 0xFF, 0x81, 0x00, 0x10, 0x00, 0x00, //
        0x3E, 0x48, 0xFF, 0x81, 0x08, 0x10, 0x00, 0x00, //
        0xF0, 0x48, 0xFF, 0x81, 0x00, 0x90, 0x00, 0x00, //
        0xF0, 0x48, 0xFF, 0x84, 0x11, 0x00, 0x10, 0x00, 0x00, //
        0x48, 0xB8, 0xF0, 0x48, 0xFF, 0x81, 0x00, 0x10, 0x00, 0x00, //
        0xC3,
    ];

    #[test]
    fn only_counter_updates_at_instruction_starts_are_found() {
        let found = updates(CODE, 0x400000, &(0x1000..0x2000));
        assert_eq!(found, vec![(0x400000, true), (0x400008, false)]);
    }

    #[test]
    fn the_filter_keeps_every_update_and_the_decoder_drops_the_rest() {
        // The immediate's copy passes the byte filter (offset 35); decoding rejects it.
        assert_eq!(candidates(CODE).collect::<Vec<_>>(), vec![0, 8, 16, 24, 35]);
    }

    #[test]
    fn executables_without_the_runtime_are_left_alone() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(find_sites(&me).unwrap(), None);
    }

    #[cfg(unix)]
    #[test]
    fn an_executable_left_as_relax_left_it_is_not_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("exe");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        relax(&exe).unwrap();
        assert!(stamp_path(&exe).exists());
        // The same file, its bytes garbled in place with its size and time kept: not read
        // (reading it would fail).
        let file = std::fs::OpenOptions::new().write(true).open(&exe).unwrap();
        let modified = file.metadata().unwrap().modified().unwrap();
        std::os::unix::fs::FileExt::write_at(&file, b"garbage!", 0).unwrap();
        file.set_modified(modified).unwrap();
        drop(file);
        relax(&exe).unwrap();
        // A rebuilt executable (a new file) is read.
        std::fs::remove_file(&exe).unwrap();
        std::fs::write(&exe, b"not an executable").unwrap();
        assert!(relax(&exe).is_err());
    }
}
