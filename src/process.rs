//! Child processes: each command runs in a process group of its own with its output captured,
//! and the whole group is killed when it ends, times out, or the run is interrupted.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt;

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
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The process groups of the fork servers running now ([`crate::forkserver`]), killed by an
/// interrupt too (their tests die with them) but not counted as tests.
static SERVERS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The process groups of builds running now (a cargo build, a doctests' head start), killed by
/// an interrupt too: cargo sfl may be signalled alone (SIGTERM from `timeout`, an editor or CI),
/// and they would build on without it.
static BUILDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// What an interrupt leaves behind, said after "killed N running tests; " (the pipeline sets
/// it once results are being kept).
static INTERRUPT_NOTE: Mutex<Option<String>> = Mutex::new(None);

/// Set before the interrupt kills anything: a test that ends after it was killed by us, not
/// by its own doing, and its outcome must not be kept.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ends the process after an interrupt killed the running tests, given what to say (after
/// "error: ") and the exit code. The binary gives it; the library ends no process itself.
pub type EndInterrupted = fn(&str, i32) -> !;

static END_INTERRUPTED: OnceLock<EndInterrupted> = OnceLock::new();

/// Has `end` end the process once an interrupt has killed the running tests. Without it the
/// interrupt only kills them, and the run sees [`interrupted`].
pub fn end_interrupted_with(end: EndInterrupted) {
    let _ = END_INTERRUPTED.set(end);
}

/// Says what an interrupt keeps (instead of "nothing was saved").
pub fn on_interrupt_say(note: String) {
    if let Ok(mut n) = INTERRUPT_NOTE.lock() {
        *n = Some(note);
    }
}

/// What to write before an interrupt ends the process (the journal's held-back tests).
type Keep = Box<dyn Fn() + Send>;
static INTERRUPT_KEEP: Mutex<Option<Keep>> = Mutex::new(None);

/// Has an interrupt run `keep` before it ends the process (replacing any earlier one).
pub fn on_interrupt_keep(keep: Keep) {
    if let Ok(mut k) = INTERRUPT_KEEP.lock() {
        *k = Some(keep);
    }
}

/// Whether an interrupt is killing the tests (results arriving now are not the tests' own).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// On Ctrl-C or SIGTERM: tests run in process groups of their own, so the terminal's signal
/// does not reach them; kill every running group, then have the binary say so and exit 130
/// (as a shell reports an interrupt; [`end_interrupted_with`]). Installed once per process; a
/// second installation is ignored.
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
        for helper in [&SERVERS, &BUILDS] {
            for leader in helper.lock().map(|s| s.to_vec()).unwrap_or_default() {
                crate::platform::kill_group(leader);
            }
        }
        if let Ok(keep) = INTERRUPT_KEEP.lock()
            && let Some(keep) = keep.as_ref()
        {
            keep();
        }
        let note = INTERRUPT_NOTE.lock().ok().and_then(|n| n.clone());
        let message = format!(
            "interrupted: killed {} running test{}; {}",
            groups.len(),
            if groups.len() == 1 { "" } else { "s" },
            note.as_deref().unwrap_or("nothing was saved")
        );
        if let Some(end) = END_INTERRUPTED.get() {
            end(&message, crate::error::exit::INTERRUPTED);
        }
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
        let mut running = RUNNING.lock().unwrap_or_else(PoisonError::into_inner);
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
    Ok(ended(leader, status, start.elapsed(), out_path, leak_timeout))
}

/// Lists the process group `leader` among the running tests an interrupt kills.
pub(crate) fn track(leader: u32) {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner).push(leader);
}

/// Lists the fork server `leader` among the processes an interrupt kills.
pub(crate) fn track_server(leader: u32) {
    SERVERS.lock().unwrap_or_else(PoisonError::into_inner).push(leader);
}

/// Forgets the fork server `leader` (it ended).
pub(crate) fn untrack_server(leader: u32) {
    forget(&SERVERS, leader);
}

/// Removes `leader` from `list`.
fn forget(list: &Mutex<Vec<u32>>, leader: u32) {
    if let Ok(mut leaders) = list.lock() {
        leaders.retain(|&l| l != leader);
    }
}

/// Starts `cmd` in a process group of its own that an interrupt kills ([`BUILDS`]), with no
/// input (a process group in the background that read the terminal would be stopped); the
/// caller that waits for it says when it ended ([`untrack_build`]).
pub(crate) fn spawn_build(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    crate::platform::own_process_group(cmd);
    cmd.stdin(Stdio::null());
    let mut builds = BUILDS.lock().unwrap_or_else(PoisonError::into_inner);
    let child = cmd.spawn()?;
    builds.push(child.id());
    Ok(child)
}

/// Forgets the build `leader` (it was waited for).
pub(crate) fn untrack_build(leader: u32) {
    forget(&BUILDS, leader);
}

/// Forgets the process group `leader` once (it ended, or a kept process's test did: the same
/// process may be listed again for its next test).
pub(crate) fn untrack(leader: u32) {
    if let Ok(mut running) = RUNNING.lock()
        && let Some(i) = running.iter().position(|&l| l == leader)
    {
        running.swap_remove(i);
    }
}

/// The end of a test process, group `leader`, that ended with `status` (`None`: timed out and
/// killed) after `elapsed`, its output in `out_path` (read, then removed): what it left running
/// gets `leak_timeout` to end on its own, then the group is killed and forgotten.
pub(crate) fn ended(
    leader: u32,
    status: Option<ExitStatus>,
    elapsed: Duration,
    out_path: &Path,
    leak_timeout: Duration,
) -> Captured {
    if status.is_some() {
        let waited = Instant::now();
        while waited.elapsed() < leak_timeout && crate::platform::group_alive(leader) {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let leaked = crate::platform::kill_group(leader);
    captured(leader, status, elapsed, out_path, leaked)
}

/// The end of a test that passed in the kept process `leader`, which lives on to run another
/// ([`crate::forkserver`]): it left no process and no thread running, so there is nothing to
/// wait for or kill.
pub(crate) fn passed_kept(leader: u32, elapsed: Duration, out_path: &Path) -> Captured {
    captured(leader, Some(crate::platform::wait_status(0)), elapsed, out_path, false)
}

/// Forgets `leader` and reads (then removes) the output.
fn captured(leader: u32, status: Option<ExitStatus>, elapsed: Duration, out_path: &Path, leaked: bool) -> Captured {
    untrack(leader);
    let bytes = std::fs::read(out_path).unwrap_or_default();
    let _ = std::fs::remove_file(out_path);
    Captured {
        status,
        output: String::from_utf8_lossy(&bytes).into_owned(),
        elapsed,
        leaked,
    }
}
