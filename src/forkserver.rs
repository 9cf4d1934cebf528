//! Tests forked from one process per test binary instead of launched one by one.
//!
//! Launching a process per test costs its start (the kernel's `exec`, the dynamic loader,
//! relocations, the runtime's start-up) before the test runs. cargo sfl's runtime, linked into
//! every instrumented test binary, can instead make the binary a **fork server** (see the end of
//! `edges/runtime.c`): started once with a placeholder test name, it stops before `main` and
//! forks a child per request; the child takes the test's name, its profile's and edge file's
//! names and its output file, and goes on to `main` (libtest) as a process of its own would.
//! Each test still runs alone in its own process group, writes its own profile, and a crash,
//! abort, hang or `exit` costs only that test; what is saved is the launch.
//!
//! A forked test that passes and leaves its process as it found it (no thread, no child
//! process, its environment, working directory and the Rust code's statics unchanged or put
//! back as they were; see [`crate::edges::state`]) takes the server's next test in the same
//! process: a **kept** process, which saves the fork, the exit and the start-up as well, and
//! starts the next test from the state its own process would give it. Any other end (a
//! failure, a crash, a thread left, a changed static that cannot be put back) ends the process
//! as before, and the next test gets a new fork.
//!
//! A binary that cannot serve (no runtime linked, it exits at start-up) runs its tests one
//! process each, as does a test when its server ends before it started.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::process::Captured;
use crate::schedule::Permits;

/// The variable that makes a test binary a fork server (read by the runtime before `main`).
pub const SERVER_ENV: &str = "CARGO_SFL_FORK_SERVER";
/// The argument the runtime replaces with each test's name.
pub const SLOT: &str = "__cargo_sfl_test__";

/// Set for a fork server: it writes `<exe>.sfl-template.profraw`, the profile its forked tests'
/// counters are decoded with ([`crate::coverage::TEMPLATE_SUFFIX`]).
pub const TEMPLATE_ENV: &str = "CARGO_SFL_PROFILE_TEMPLATE";
/// Set per forked test: the file its counters are mapped onto (`%p`: its process id), instead
/// of a whole profile of its own.
pub const COUNTERS_ENV: &str = "CARGO_SFL_COUNTERS_FILE";
/// Set for a fork server whose forked tests may take further tests (kept processes).
pub const KEEP_ENV: &str = "CARGO_SFL_KEEP_PROCESSES";
/// How long a server may take to say it is ready before its binary runs a process per test.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// What the server says about one request.
#[derive(Debug)]
enum Reply {
    Started(u32),
    /// Its raw wait status.
    Exited(i32),
    /// It passed, and its process lives on to take another test (after putting back what the
    /// test changed, when `true`).
    Passed(bool),
    /// `fork` failed with this errno.
    Failed(i32),
    /// The server ended.
    Gone,
}

/// A test waiting for its server's replies.
struct Waiter {
    replies: Sender<Reply>,
    /// Permits its request holds (taken before it was written, given back when the server says
    /// the test ended or could not start, or when the server ends).
    held: usize,
    /// When its request was written (`None`: still queued for permits).
    sent: Option<Instant>,
}

/// What a server's tests, its reader thread and the permits' queue share.
struct Shared {
    /// `None` once closed.
    requests: Mutex<Option<ChildStdin>>,
    waiting: Mutex<HashMap<u64, Waiter>>,
    gone: AtomicBool,
    permits: Arc<Permits>,
}

impl Shared {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiter>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes request `id` (its `k` permits taken); if the server has ended, gives them back
    /// and tells the test.
    fn send(&self, id: u64, line: &str, k: usize) {
        if let Some(w) = self.waiting().get_mut(&id) {
            w.held = k;
            w.sent = Some(Instant::now());
        }
        if !self.write(line) {
            self.settle(id, Reply::Gone);
        }
    }

    /// Writes `line` to the server: false when it has ended.
    fn write(&self, line: &str) -> bool {
        let mut w = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
        !self.gone.load(Ordering::SeqCst) && w.as_mut().is_some_and(|w| w.write_all(line.as_bytes()).is_ok())
    }

    /// Gives back the permits of test `id` (if it holds any) and hands it `reply`.
    fn settle(&self, id: u64, reply: Reply) {
        let (held, replies) = match self.waiting().get_mut(&id) {
            Some(w) => (std::mem::take(&mut w.held), Some(w.replies.clone())),
            None => (0, None),
        };
        self.give_back(held);
        if let Some(tx) = replies {
            let _ = tx.send(reply);
        }
    }

    fn give_back(&self, held: usize) {
        if held > 0 {
            self.permits.release(held);
        }
    }

    /// Kills test `id` (process group `pid`) through its server, which knows whether that
    /// process still runs it (a kept process may run another test by now); directly when the
    /// server has ended, and with it its children.
    fn kill(&self, id: u64, pid: u32) {
        if !self.write(&format!("kill {id}\n")) {
            crate::platform::kill_group(pid);
        }
    }

    /// Forgets test `id`, giving back any permits it still holds.
    fn forget(&self, id: u64) {
        let held = self.waiting().remove(&id).map_or(0, |w| w.held);
        self.give_back(held);
    }
}

/// One test binary's server.
pub struct ForkServer {
    shared: Arc<Shared>,
    child: Mutex<Child>,
    next: AtomicU64,
}

/// Why a test did not run on a fork server (or a binary has none): the caller runs it in a
/// process of its own.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct NotServed(pub String);

impl ForkServer {
    /// Starts `cmd` (a libtest binary, its arguments naming [`SLOT`] as the test) as a server
    /// and waits until it is ready; its tests start as `permits` are granted to them.
    pub fn start(mut cmd: Command, permits: Arc<Permits>) -> Result<ForkServer, NotServed> {
        cmd.env(SERVER_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        crate::platform::own_process_group(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| NotServed(format!("cannot start: {e}")))?;
        crate::process::track_server(child.id());
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let shared = Arc::new(Shared {
            requests: Mutex::new(Some(stdin)),
            waiting: Mutex::default(),
            gone: AtomicBool::new(false),
            permits,
        });
        let (ready_tx, ready_rx) = mpsc::channel();
        {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || read_replies(BufReader::new(stdout), ready_tx, &shared));
        }
        let server = ForkServer {
            shared,
            child: Mutex::new(child),
            next: AtomicU64::new(0),
        };
        match ready_rx.recv_timeout(READY_TIMEOUT) {
            Ok(true) => Ok(server),
            Ok(false) | Err(RecvTimeoutError::Disconnected) => Err(NotServed(
                "it does not serve (it does not link cargo sfl's runtime, or exits before `main`)".into(),
            )),
            Err(RecvTimeoutError::Timeout) => Err(NotServed(format!("not ready within {} s", READY_TIMEOUT.as_secs()))),
        }
    }

    /// Runs test `name` (taking `threads` permits) in a child of the
    /// server with the variables `env` set, its stdout and stderr into `out_path`, as
    /// [`crate::process::run_captured_leaking`] runs a process; its timeout counts from its start.
    /// Also what it left of its process.
    pub(crate) fn run(
        &self,
        name: &str,
        threads: usize,
        env: &[(&str, OsString)],
        out_path: &Path,
        timeout: Duration,
        leak_timeout: Duration,
    ) -> Result<(Captured, Left), NotServed> {
        let request = request_line(name, env, out_path)
            .ok_or_else(|| NotServed("its name or a file name holds a tab or a line break".into()))?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.shared.waiting().insert(
            id,
            Waiter {
                replies: tx,
                held: 0,
                sent: None,
            },
        );
        let line = format!("{id}\t{request}\n");
        let k = self.shared.permits.count(threads);
        let shared = Arc::clone(&self.shared);
        self.shared
            .permits
            .when_free(k, Box::new(move || shared.send(id, &line, k)));
        let pid = loop {
            match rx.recv_timeout(READY_TIMEOUT) {
                Ok(Reply::Started(pid)) => break pid,
                Ok(Reply::Failed(errno)) => {
                    self.shared.forget(id);
                    return Err(NotServed(format!(
                        "the fork server could not fork: {}",
                        std::io::Error::from_raw_os_error(errno)
                    )));
                }
                // Queued behind running tests: it waits as long as they run.
                Err(RecvTimeoutError::Timeout)
                    if self
                        .shared
                        .waiting()
                        .get(&id)
                        .is_some_and(|w| w.sent.is_none_or(|t| t.elapsed() < READY_TIMEOUT)) => {}
                _ => {
                    self.shared.forget(id);
                    return Err(NotServed("its binary's fork server has ended".into()));
                }
            }
        };
        let start = Instant::now();
        crate::process::track(pid);
        let status = match wait_exit(&rx, timeout) {
            Waited::Exited(raw) => Some(crate::platform::wait_status(raw)),
            Waited::Passed(reset) => return Ok(self.passed_kept(id, pid, start, out_path, reset)),
            Waited::TimedOut => {
                self.shared.kill(id, pid);
                // Killed: the server reports it once it has reaped the child. A test that passed
                // as its time ran out is not killed, and its kept process lives on: no group
                // of its may be killed now.
                if let Waited::Passed(reset) = wait_exit(&rx, READY_TIMEOUT) {
                    return Ok(self.passed_kept(id, pid, start, out_path, reset));
                }
                None
            }
            // Its server died, and with it the test (the runtime asks for that on Linux).
            Waited::Gone => Some(crate::platform::wait_status(crate::platform::KILLED_STATUS)),
        };
        let elapsed = start.elapsed();
        self.shared.forget(id);
        Ok((
            crate::process::ended(pid, status, elapsed, out_path, leak_timeout),
            Left::Ended,
        ))
    }
}

impl ForkServer {
    /// Test `id` passed in process `pid`, which lives on (kept; what the test changed put back
    /// when `reset`).
    fn passed_kept(&self, id: u64, pid: u32, start: Instant, out_path: &Path, reset: bool) -> (Captured, Left) {
        let elapsed = start.elapsed();
        self.shared.forget(id);
        let left = if reset { Left::Reset } else { Left::Unchanged };
        (crate::process::passed_kept(pid, elapsed, out_path), left)
    }
}

/// What a forked test left of its process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// The process ended (the test failed, or changed what cannot be put back).
    Ended,
    /// The test passed and left the process as it found it: it takes the next test.
    Unchanged,
    /// The test passed and changed statics, the environment or the working directory, which
    /// the process put back as they were when its first test began: it takes the next test.
    Reset,
}

enum Waited {
    Exited(i32),
    Passed(bool),
    TimedOut,
    Gone,
}

fn wait_exit(rx: &Receiver<Reply>, timeout: Duration) -> Waited {
    match rx.recv_timeout(timeout) {
        Ok(Reply::Exited(raw)) => Waited::Exited(raw),
        Ok(Reply::Passed(reset)) => Waited::Passed(reset),
        Err(RecvTimeoutError::Timeout) => Waited::TimedOut,
        Ok(_) | Err(RecvTimeoutError::Disconnected) => Waited::Gone,
    }
}

/// `<name>\t<output>\t<K=V>...`, or `None` when a part holds a tab or a line break.
fn request_line(name: &str, env: &[(&str, OsString)], out_path: &Path) -> Option<String> {
    let mut parts = vec![name.to_string(), out_path.to_str()?.to_string()];
    for (k, v) in env {
        parts.push(format!("{k}={}", v.to_str()?));
    }
    let clean = parts.iter().all(|p| !p.contains(['\t', '\n', '\r']) && !p.is_empty());
    clean.then(|| parts.join("\t"))
}

/// Reads the server's replies and hands each to the test waiting for it; `ready` hears whether
/// the server started. A test's end gives its permits back first, which starts the next test
/// queued for them. At the server's end every waiting test hears it is gone.
fn read_replies(out: impl BufRead, ready: Sender<bool>, shared: &Shared) {
    let mut lines = out.lines();
    // A target runner may print before it starts the binary.
    let serves = lines.by_ref().map_while(Result::ok).any(|l| l == "ready");
    let _ = ready.send(serves);
    if serves {
        for line in lines.map_while(Result::ok) {
            let mut words = line.split(' ');
            let (kind, id, value) = (words.next(), words.next(), words.next());
            let (Some(id), Some(value)) = (
                id.and_then(|i| i.parse::<u64>().ok()),
                value.and_then(|v| v.parse::<i64>().ok()),
            ) else {
                continue;
            };
            match kind {
                Some("started") => {
                    if let Some(w) = shared.waiting().get(&id) {
                        let _ = w.replies.send(Reply::Started(value as u32));
                    }
                }
                Some("exited") => shared.settle(id, Reply::Exited(value as i32)),
                Some("passed") => shared.settle(id, Reply::Passed(value == 1)),
                Some("failed") => shared.settle(id, Reply::Failed(value as i32)),
                _ => {}
            }
        }
    }
    shared.gone.store(true, Ordering::SeqCst);
    let ids: Vec<u64> = shared.waiting().keys().copied().collect();
    for id in ids {
        shared.settle(id, Reply::Gone);
    }
}

impl Drop for ForkServer {
    /// Closes its requests: the server waits for its children and exits.
    fn drop(&mut self) {
        drop(
            self.shared
                .requests
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
        let child = self.child.get_mut().unwrap_or_else(PoisonError::into_inner);
        let leader = child.id();
        let waited = Instant::now();
        while waited.elapsed() < Duration::from_secs(5) && !matches!(child.try_wait(), Ok(Some(_))) {
            std::thread::sleep(Duration::from_millis(2));
        }
        crate::platform::kill_group(leader);
        let _ = child.kill();
        let _ = child.wait();
        crate::process::untrack_server(leader);
    }
}

/// A server's test binary (index in the build's) and whether it runs ignored tests.
pub type ServerKey = (usize, bool);

/// The servers of one run, one per test binary (and per `--ignored`), started when their
/// binary's first test runs; a binary that cannot serve is remembered with the reason. Every
/// test process of the run, forked or not, holds permits while it runs ([`ForkServers::permits`]).
pub struct ForkServers {
    servers: Mutex<HashMap<ServerKey, Result<Arc<ForkServer>, NotServed>>>,
    permits: Arc<Permits>,
    forked: std::sync::atomic::AtomicUsize,
    /// Of the forked tests, those that left their process to the next test.
    kept: std::sync::atomic::AtomicUsize,
    /// Of those, the ones whose process put back what they changed ([`Left::Reset`]).
    reset: std::sync::atomic::AtomicUsize,
    /// Servers ended before the end of the run ([`ForkServers::retire`]).
    retired: std::sync::atomic::AtomicUsize,
    /// Why tests ran in processes of their own, with how many did for each reason.
    fallbacks: Mutex<Vec<(String, usize)>>,
    /// Forked tests keep only their counters ([`COUNTERS_ENV`]); their binaries' servers write
    /// the records the counters are decoded with ([`TEMPLATE_ENV`]).
    pub counters_only: bool,
    /// A passing test's process may take further tests ([`KEEP_ENV`]; needs `counters_only`).
    pub keep: bool,
}

impl ForkServers {
    /// Servers whose tests run at most `threads` processes at once, keeping only their
    /// counters when `counters_only` (else the profiler's whole profile per test, which
    /// `--keep-profiles` keeps for llvm-profdata), and keeping processes when `keep` (and
    /// `counters_only`).
    pub fn new(threads: usize, counters_only: bool, keep: bool) -> ForkServers {
        ForkServers {
            servers: Mutex::default(),
            permits: Arc::new(Permits::new(threads)),
            forked: Default::default(),
            kept: Default::default(),
            reset: Default::default(),
            retired: Default::default(),
            fallbacks: Mutex::default(),
            counters_only,
            keep: keep && counters_only,
        }
    }

    /// What a test process of this run takes while it runs, forked or not.
    pub fn permits(&self) -> &Permits {
        &self.permits
    }

    /// The server of `key` (binary, ignored), started with `command` if it is the first ask.
    pub fn server(&self, key: ServerKey, command: impl FnOnce() -> Command) -> Result<Arc<ForkServer>, NotServed> {
        let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
        servers
            .entry(key)
            .or_insert_with(|| ForkServer::start(command(), Arc::clone(&self.permits)).map(Arc::new))
            .clone()
    }

    /// Ends the servers of test binary `binary` (its last test has run): a workspace of many
    /// test binaries keeps no idle server per binary until the end of the run.
    pub fn retire(&self, binary: usize) {
        let ended: Vec<Arc<ForkServer>> = {
            let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
            let keys: Vec<ServerKey> = servers
                .iter()
                .filter(|((b, _), s)| *b == binary && s.is_ok())
                .map(|(k, _)| *k)
                .collect();
            keys.iter().filter_map(|k| servers.remove(k)?.ok()).collect()
        };
        self.retired.fetch_add(ended.len(), Ordering::Relaxed);
        // Each waits for its server to end, outside the lock.
        drop(ended);
    }

    /// Counts a test that ran on a server, and what it left of its process.
    pub fn forked(&self, left: Left) {
        self.forked.fetch_add(1, Ordering::Relaxed);
        if left != Left::Ended {
            self.kept.fetch_add(1, Ordering::Relaxed);
        }
        if left == Left::Reset {
            self.reset.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a test that ran in a process of its own, and why.
    pub fn fell_back(&self, why: &str) {
        let mut f = self.fallbacks.lock().unwrap_or_else(PoisonError::into_inner);
        match f.iter_mut().find(|(w, _)| w == why) {
            Some((_, n)) => *n += 1,
            None => f.push((why.to_string(), 1)),
        }
    }

    /// Ends every server (each waits for its children) and says how the tests ran, for the
    /// status line (`None`: no test ran); the counts start again.
    pub fn shut_down(&self) -> Option<String> {
        let summary = self.summary();
        self.servers.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.forked.store(0, Ordering::Relaxed);
        self.kept.store(0, Ordering::Relaxed);
        self.reset.store(0, Ordering::Relaxed);
        self.retired.store(0, Ordering::Relaxed);
        self.fallbacks.lock().unwrap_or_else(PoisonError::into_inner).clear();
        summary
    }

    fn summary(&self) -> Option<String> {
        let forked = self.forked.load(Ordering::Relaxed);
        let fallbacks = self.fallbacks.lock().unwrap_or_else(PoisonError::into_inner);
        let own: usize = fallbacks.iter().map(|(_, n)| n).sum();
        if forked + own == 0 {
            return None;
        }
        let servers = self
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|s| s.is_ok())
            .count()
            + self.retired.load(Ordering::Relaxed);
        // Runs of tests, not processes: a test that passed leaves its process to the next one,
        // and a failing test may run again alone.
        let mut s = if forked > 0 {
            format!(
                "{} on {servers} fork server{}",
                crate::ui::counted(forked, "test run", "test runs"),
                if servers == 1 { "" } else { "s" }
            )
        } else {
            String::new()
        };
        let kept = self.kept.load(Ordering::Relaxed);
        let reset = self.reset.load(Ordering::Relaxed);
        if kept > 0 && reset == 0 {
            s.push_str(&format!(
                " ({kept} passed and left their process, unchanged, to the next test)"
            ));
        } else if kept > 0 {
            s.push_str(&format!(
                " ({kept} passed and left their process to the next test, {reset} of them after \
                 what they changed was put back)"
            ));
        }
        if own > 0 {
            let why: Vec<String> = fallbacks.iter().map(|(w, n)| format!("{n}: {w}")).collect();
            let own = match (forked, own) {
                (0, 1) => "1 test in a process of its own".to_string(),
                (0, n) => format!("{n} tests in processes of their own"),
                (_, n) => format!(", {n} in processes of their own"),
            };
            s.push_str(&format!("{own} ({})", why.join("; ")));
        }
        Some(s)
    }
}
