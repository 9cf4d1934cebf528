//! The one place that knows object formats and operating systems: where LLVM puts the
//! coverage map and the SanitizerCoverage tables in each object format, how a binary names
//! its build, how its PC table is relocated, and which variable the dynamic loader reads.
//!
//! Everything else (the coverage-map parser, the edge map, the runner) asks here, so porting
//! cargo sfl to another platform starts and, ideally, ends in this file.

use std::borrow::Cow;
use std::path::PathBuf;

use object::{BinaryFormat, Object, ObjectSection, ReadRef, RelocationFlags};

/// The sections cargo sfl reads out of an instrumented binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// The coverage map's filename tables (`-C instrument-coverage`).
    CoverageMap,
    /// The coverage map's function records.
    CoverageFunctions,
    /// The profile names of the instrumented functions (`-C instrument-coverage`).
    ProfileNames,
    /// SanitizerCoverage's inline flags, one byte per instrumented block.
    SancovFlags,
    /// SanitizerCoverage's PC table, one `(pc, flags)` pair of pointers per block.
    SancovPcs,
    /// SanitizerCoverage's control-flow table: per block, its address, its successors' and
    /// its callees' (each list ended by a null pointer).
    SancovControlFlow,
}

impl Section {
    /// The section's name in an object of `format`. LLVM names them per object format
    /// (`getInstrProfSectionName`, SanitizerCoverage's `getSectionName`): COFF limits names to
    /// eight characters and orders them by the `$` suffix; ELF and Mach-O (whose segment the
    /// `object` crate does not include in a section's name) share the long names.
    pub fn name(self, format: BinaryFormat) -> &'static str {
        let coff = format == BinaryFormat::Coff || format == BinaryFormat::Pe;
        match (self, coff) {
            (Section::CoverageMap, false) => "__llvm_covmap",
            (Section::CoverageMap, true) => ".lcovmap$M",
            (Section::CoverageFunctions, false) => "__llvm_covfun",
            (Section::CoverageFunctions, true) => ".lcovfun$M",
            (Section::ProfileNames, false) => "__llvm_prf_names",
            (Section::ProfileNames, true) => ".lprfn$M",
            (Section::SancovFlags, false) => "__sancov_bools",
            (Section::SancovFlags, true) => ".SCOV$BM",
            (Section::SancovPcs, false) => "__sancov_pcs",
            (Section::SancovPcs, true) => ".SCOVP$M",
            (Section::SancovControlFlow, false) => "__sancov_cfs",
            // LLVM gives the control-flow table no COFF name of its own: it falls through to
            // the guards' name.
            (Section::SancovControlFlow, true) => ".SCOV$GM",
        }
    }

    /// The name in `obj`'s format (for messages).
    pub fn name_in<'data, R: ReadRef<'data>>(self, obj: &object::File<'data, R>) -> &'static str {
        self.name(obj.format())
    }
}

/// The section, if the binary has it.
pub fn section<'data, 'file, R: ReadRef<'data>>(
    obj: &'file object::File<'data, R>,
    which: Section,
) -> Option<object::Section<'data, 'file, R>> {
    obj.section_by_name(which.name_in(obj))
}

/// The section's bytes (decompressed), or `None` when the binary has no such section.
pub fn section_data<'data, R: ReadRef<'data>>(
    obj: &object::File<'data, R>,
    which: Section,
) -> Result<Option<Cow<'data, [u8]>>, object::Error> {
    section(obj, which).map(|s| s.uncompressed_data()).transpose()
}

/// The id the profiler runtime writes into every raw profile of this binary (ELF's GNU
/// build-id note), which is how a profile is matched to the binary that wrote it.
pub fn build_id<'data, R: ReadRef<'data>>(obj: &object::File<'data, R>) -> Option<Vec<u8>> {
    obj.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// A section read as 64-bit words with the dynamic loader's RELATIVE relocations applied.
pub struct Words {
    pub values: Vec<u64>,
    /// Per word, whether a dynamic relocation of any kind targets it: a word still zero here
    /// is filled in by the loader (an address in a shared library), not a null pointer.
    pub relocated: Vec<bool>,
}

/// The section as 64-bit words with the dynamic loader's RELATIVE relocations applied: a
/// position-independent executable's PC table is zeros in the file, each entry a relocation
/// whose addend is the link-time address. `None` when the binary has no such section.
pub fn relocated_words(obj: &object::File, which: Section) -> Result<Option<Words>, object::Error> {
    let Some(sec) = section(obj, which) else {
        return Ok(None);
    };
    let bytes = sec.uncompressed_data()?;
    let little = obj.is_little_endian();
    let values: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| {
            let a: [u8; 8] = c.try_into().expect("8 bytes");
            if little {
                u64::from_le_bytes(a)
            } else {
                u64::from_be_bytes(a)
            }
        })
        .collect();
    let mut words = Words {
        relocated: vec![false; values.len()],
        values,
    };
    // The header's size, not the data's length, bounds the relocations' offsets: in a
    // malformed file they differ, and an address near 2^64 must not wrap.
    let (start, end) = (sec.address(), sec.address().saturating_add(sec.size()));
    if let Some(relocs) = obj.dynamic_relocations() {
        for (offset, r) in relocs {
            if offset < start || offset >= end || (offset - start) % 8 != 0 {
                continue;
            }
            let i = ((offset - start) / 8) as usize;
            let Some(w) = words.values.get_mut(i) else { continue };
            words.relocated[i] = true;
            let relative = matches!(
                r.flags(),
                RelocationFlags::Elf { r_type } if r_type == object::elf::R_X86_64_RELATIVE
                    || r_type == object::elf::R_AARCH64_RELATIVE
                    || r_type == object::elf::R_RISCV_RELATIVE
            );
            if relative {
                *w = r.addend() as u64;
            }
        }
    }
    Ok(Some(words))
}

/// Fills `buf` from `file` at `offset`, without moving a shared cursor.
#[cfg(unix)]
pub fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(not(unix))]
pub fn read_exact_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// The environment variable the dynamic loader searches for shared libraries (a test binary
/// linked against the toolchain's `libstd` dylib finds it through this).
pub fn loader_path_var() -> &'static str {
    if cfg!(target_os = "macos") {
        "DYLD_LIBRARY_PATH"
    } else if cfg!(windows) {
        "PATH"
    } else {
        "LD_LIBRARY_PATH"
    }
}

/// The path of the running executable (cargo sfl re-runs itself as the rustc wrapper).
pub fn current_exe() -> std::io::Result<PathBuf> {
    std::env::current_exe()
}

/// Makes `cmd` start a process group of its own, so everything it spawns can be killed with it.
#[cfg(unix)]
pub fn own_process_group(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// Without process groups, a test's children are not tracked.
#[cfg(not(unix))]
pub fn own_process_group(_: &mut std::process::Command) {}

/// Kills whatever is left of the process group `leader` started; whether anything was (a
/// zombie is not: see [`group_alive`]).
#[cfg(unix)]
pub fn kill_group(leader: u32) -> bool {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    let alive = group_alive(leader);
    if alive {
        let _ = killpg(Pid::from_raw(leader as i32), Signal::SIGKILL);
    }
    alive
}

/// Whether the process group `leader` started still has a member that runs. Signal 0 asks
/// whether it has any; on Linux a group whose members are all zombies does not count: a child
/// the test killed just before it returned is reparented to PID 1, which reaps it at once under
/// an init, but a container's PID 1 often is no init and leaves it a zombie for long.
#[cfg(unix)]
pub fn group_alive(leader: u32) -> bool {
    use nix::sys::signal::killpg;
    use nix::unistd::Pid;
    killpg(Pid::from_raw(leader as i32), None).is_ok() && !only_zombies(leader)
}

/// Whether every process of group `leader` is a zombie (state `Z` in `/proc/PID/stat`).
#[cfg(target_os = "linux")]
fn only_zombies(leader: u32) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    let member_runs = |pid: u32| {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return false;
        };
        // `pid (comm) state ppid pgrp …`; the name may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
            return false;
        };
        let mut fields = rest.split(' ');
        let (state, pgrp) = (fields.next(), fields.nth(1));
        pgrp.and_then(|g| g.parse::<u32>().ok()) == Some(leader) && state != Some("Z")
    };
    !procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .any(member_runs)
}

/// Elsewhere a group member is taken to run.
#[cfg(all(unix, not(target_os = "linux")))]
fn only_zombies(_: u32) -> bool {
    false
}

/// Without process groups nothing is left of one.
#[cfg(not(unix))]
pub fn group_alive(_: u32) -> bool {
    false
}

/// Without process groups there is nothing to kill.
#[cfg(not(unix))]
pub fn kill_group(_: u32) -> bool {
    false
}

/// A directory on a memory filesystem with at least `need` bytes free, for files that live
/// a moment (each test's profiles, read and deleted as it ends): `/dev/shm` on Linux. Creating
/// and deleting files there costs a fraction of what it costs on a disk's filesystem.
#[cfg(target_os = "linux")]
pub fn memory_dir(need: u64) -> Option<std::path::PathBuf> {
    use nix::sys::statfs::{TMPFS_MAGIC, statfs};
    let dir = std::path::Path::new("/dev/shm");
    let s = statfs(dir).ok()?;
    let free = (s.blocks_available() as u64).saturating_mul(s.block_size() as u64);
    (s.filesystem_type() == TMPFS_MAGIC && free >= need).then(|| dir.to_path_buf())
}

/// No memory filesystem is known elsewhere.
#[cfg(not(target_os = "linux"))]
pub fn memory_dir(_need: u64) -> Option<std::path::PathBuf> {
    None
}

/// The CPUs this process may use (`std::thread::available_parallelism`, at least 1), asked
/// once: the answer reads the cgroup files, and planning asks it for every test.
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The exit status a raw wait status (as `waitpid` gives it) stands for.
#[cfg(unix)]
pub fn wait_status(raw: i32) -> std::process::ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(raw)
}

/// The exit status a raw status stands for.
#[cfg(windows)]
pub fn wait_status(raw: i32) -> std::process::ExitStatus {
    use std::os::windows::process::ExitStatusExt;
    std::process::ExitStatus::from_raw(raw as u32)
}

/// The wait status of a process SIGKILL ended.
pub const KILLED_STATUS: i32 = 9;

/// Whether test binaries can serve tests forked from one process ([`crate::forkserver`]): the
/// runtime's server uses `fork`, and the dynamic loader's and std's start-up as on Linux.
pub const FORK_SERVERS: bool = cfg!(target_os = "linux");

/// The signal that ended a process, if one did.
#[cfg(unix)]
pub fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// The signal that ended a process, if one did (never, without Unix signals).
#[cfg(not(unix))]
pub fn exit_signal(_: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Replaces this process with `cmd` (the wrappers hand over to rustc and rustdoc): returns
/// only the error when it cannot.
#[cfg(unix)]
pub fn exec(mut cmd: std::process::Command) -> std::io::Result<i32> {
    use std::os::unix::process::CommandExt;
    Err(cmd.exec())
}

/// Without `exec`, runs `cmd` and returns the exit code its caller is to exit with (1 when it
/// has none), or the error when it cannot run.
#[cfg(not(unix))]
pub fn exec(mut cmd: std::process::Command) -> std::io::Result<i32> {
    cmd.status().map(|s| s.code().unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group whose one process has ended but is not reaped yet (a zombie) has nothing left
    /// running; a group whose process sleeps has, and killing it says so.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_group_of_zombies_is_not_alive() {
        let start = |script: &str| {
            let mut cmd = std::process::Command::new("sh");
            cmd.args(["-c", script]);
            own_process_group(&mut cmd);
            cmd.spawn().unwrap()
        };
        let mut ended = start("exit 0");
        let zombie = |pid: u32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "));
        let waited = std::time::Instant::now();
        while !zombie(ended.id()) && waited.elapsed() < std::time::Duration::from_secs(10) {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(zombie(ended.id()), "the child did not end");
        assert!(!group_alive(ended.id()) && !kill_group(ended.id()));
        ended.wait().unwrap();

        let mut sleeping = start("sleep 30");
        assert!(group_alive(sleeping.id()));
        assert!(kill_group(sleeping.id()));
        sleeping.wait().unwrap();
    }

    #[test]
    fn section_names_follow_the_object_format() {
        assert_eq!(Section::CoverageMap.name(BinaryFormat::Elf), "__llvm_covmap");
        assert_eq!(Section::CoverageFunctions.name(BinaryFormat::MachO), "__llvm_covfun");
        assert_eq!(Section::SancovPcs.name(BinaryFormat::Elf), "__sancov_pcs");
        assert_eq!(Section::CoverageMap.name(BinaryFormat::Coff), ".lcovmap$M");
    }

    #[test]
    fn the_running_test_binary_has_a_path() {
        assert!(current_exe().unwrap().is_file());
        assert!(!loader_path_var().is_empty());
    }
}
