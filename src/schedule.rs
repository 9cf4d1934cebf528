//! Runs jobs on a pool of threads within nextest's limits: a test takes `threads-required`
//! of the `test-threads` slots, and a test group never runs more of its tests at once than
//! its `max-threads`.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};

/// What one job needs while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// Slots of the pool (capped at the pool's size).
    pub threads: usize,
    /// Its test group (an index into the group limits), if any.
    pub group: Option<usize>,
}

struct State {
    /// Jobs not started yet, in order.
    pending: Vec<usize>,
    free: usize,
    /// Running jobs per group.
    in_group: Vec<usize>,
}

/// A running job's hold on its slots (and its place in its group), handed to the job: it
/// can give them back before it ends ([`Slot::release`]), when what is left of its work (a
/// test's decoding, say) should not keep another job from starting.
pub struct Slot<'a> {
    state: &'a Mutex<State>,
    changed: &'a Condvar,
    needs: Needs,
    slots: usize,
    held: Cell<bool>,
}

impl Slot<'_> {
    /// Gives the job's slots back now (once; the scheduler does it when the job ends).
    pub fn release(&self) {
        if !self.held.replace(false) {
            return;
        }
        let mut s = self.state.lock().expect("scheduler state");
        s.free += self.needs.threads.clamp(1, self.slots);
        if let Some(g) = self.needs.group {
            s.in_group[g] -= 1;
        }
        drop(s);
        self.changed.notify_all();
    }
}

/// Runs `f` over `items` with at most `slots` slots taken at once and at most `group_limits[g]`
/// jobs of group `g` at once, handing each result to `sink` on this thread as it is ready. A
/// job that does not fit yet waits while later jobs that fit run, so a group's tests queue
/// behind each other without holding up the rest. A job that releases its slots early
/// ([`Slot::release`]) finishes its work beside the jobs that take them: there are twice as many
/// threads as slots.
pub fn run_limited<T: Sync, R: Send>(
    items: &[T],
    needs: &[Needs],
    slots: usize,
    group_limits: &[usize],
    f: impl Fn(usize, &T, &Slot<'_>) -> R + Sync,
    mut sink: impl FnMut(usize, R),
) {
    let slots = slots.max(1);
    let state = Mutex::new(State {
        pending: (0..items.len()).collect(),
        free: slots,
        in_group: vec![0; group_limits.len()],
    });
    let changed = Condvar::new();
    let fits = |s: &State, i: usize| {
        let n = &needs[i];
        n.threads.clamp(1, slots) <= s.free && n.group.is_none_or(|g| s.in_group[g] < group_limits[g].max(1))
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..(2 * slots).min(items.len()) {
            let tx = tx.clone();
            let (state, changed, f, fits) = (&state, &changed, &f, &fits);
            scope.spawn(move || {
                loop {
                    let mut s = state.lock().expect("scheduler state");
                    let i = loop {
                        if s.pending.is_empty() {
                            return;
                        }
                        if let Some(k) = s.pending.iter().position(|&i| fits(&s, i)) {
                            break s.pending.remove(k);
                        }
                        s = changed.wait(s).expect("scheduler state");
                    };
                    let n = needs[i];
                    s.free -= n.threads.clamp(1, slots);
                    if let Some(g) = n.group {
                        s.in_group[g] += 1;
                    }
                    drop(s);
                    let slot = Slot {
                        state,
                        changed,
                        needs: n,
                        slots,
                        held: Cell::new(true),
                    };
                    let r = f(i, &items[i], &slot);
                    slot.release();
                    if tx.send((i, r)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(tx);
        for (i, r) in rx {
            sink(i, r);
        }
    });
}

/// What runs once its permits are granted: quick and non-blocking, as it may run on the
/// thread that gave permits back.
pub type Start = Box<dyn FnOnce() + Send>;

/// The processes that run at once (`test-threads`), when a job's process is started by whoever
/// frees the permits rather than by the job's own thread: a fork server's reader, on hearing that
/// a test ended, starts the next test queued behind it at once, with no thread to wake between
/// one test's end and the next one's start. Permits go in the order they were asked for.
pub struct Permits {
    total: usize,
    state: Mutex<PermitState>,
}

struct PermitState {
    free: usize,
    queue: VecDeque<(usize, Start)>,
}

impl Permits {
    pub fn new(total: usize) -> Permits {
        Permits {
            total: total.max(1),
            state: Mutex::new(PermitState {
                free: total.max(1),
                queue: VecDeque::new(),
            }),
        }
    }

    /// `threads` permits, as a job takes them (at least one, at most all).
    pub fn count(&self, threads: usize) -> usize {
        threads.clamp(1, self.total)
    }

    /// Runs `start` once `k` permits ([`Permits::count`]) are taken for it: now on this thread
    /// when they are free and no one asked before, else later on the thread that frees them.
    pub fn when_free(&self, k: usize, start: Start) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.queue.is_empty() && s.free >= k {
            s.free -= k;
            drop(s);
            start();
        } else {
            s.queue.push_back((k, start));
        }
    }

    /// Takes `k` permits, waiting for them.
    pub fn acquire(&self, k: usize) {
        let (tx, rx) = std::sync::mpsc::channel();
        self.when_free(
            k,
            Box::new(move || {
                let _ = tx.send(());
            }),
        );
        rx.recv().expect("a queued start runs before the permits are dropped");
    }

    /// Takes the permits of a job needing `threads` slots, waiting for them, until the hold is
    /// dropped.
    pub fn hold(&self, threads: usize) -> Held<'_> {
        let k = self.count(threads);
        self.acquire(k);
        Held { permits: self, k }
    }

    /// Gives `k` permits back, starting what waited for them.
    pub fn release(&self, k: usize) {
        let mut ready = Vec::new();
        {
            let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            s.free += k;
            while s.queue.front().is_some_and(|(need, _)| *need <= s.free) {
                let (need, start) = s.queue.pop_front().expect("front exists");
                s.free -= need;
                ready.push(start);
            }
        }
        for start in ready {
            start();
        }
    }
}

/// Permits taken by [`Permits::hold`], given back when dropped.
pub struct Held<'a> {
    permits: &'a Permits,
    k: usize,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.permits.release(self.k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// Runs jobs that sleep a little and records the most running at once, overall and per group.
    fn peaks(needs: &[Needs], slots: usize, limits: &[usize]) -> (usize, Vec<usize>, usize) {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let group_running: Vec<AtomicUsize> = limits.iter().map(|_| AtomicUsize::new(0)).collect();
        let group_peak: Vec<AtomicUsize> = limits.iter().map(|_| AtomicUsize::new(0)).collect();
        let mut done = 0;
        run_limited(
            needs,
            needs,
            slots,
            limits,
            |_, n, _| {
                let t = n.threads.clamp(1, slots);
                let now = running.fetch_add(t, Ordering::SeqCst) + t;
                peak.fetch_max(now, Ordering::SeqCst);
                if let Some(g) = n.group {
                    let now = group_running[g].fetch_add(1, Ordering::SeqCst) + 1;
                    group_peak[g].fetch_max(now, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(20));
                if let Some(g) = n.group {
                    group_running[g].fetch_sub(1, Ordering::SeqCst);
                }
                running.fetch_sub(t, Ordering::SeqCst);
            },
            |_, ()| done += 1,
        );
        let groups = group_peak.iter().map(|p| p.load(Ordering::SeqCst)).collect();
        (peak.load(Ordering::SeqCst), groups, done)
    }

    /// A job that gives its slot back goes on beside the next job, which takes the slot: the
    /// parts before the release never overlap on one slot, the parts after do.
    #[test]
    fn a_released_slot_starts_the_next_job_while_the_first_finishes() {
        let holding = AtomicUsize::new(0);
        let (hold_peak, after, after_peak) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
        let needs = [Needs {
            threads: 1,
            group: None,
        }; 4];
        let mut done = 0;
        run_limited(
            &needs,
            &needs,
            1,
            &[],
            |_, _, slot| {
                hold_peak.fetch_max(holding.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(5));
                holding.fetch_sub(1, Ordering::SeqCst);
                slot.release();
                slot.release();
                after_peak.fetch_max(after.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(60));
                after.fetch_sub(1, Ordering::SeqCst);
            },
            |_, ()| done += 1,
        );
        assert_eq!(done, 4);
        assert_eq!(hold_peak.load(Ordering::SeqCst), 1, "one slot, one job holding it");
        assert_eq!(after_peak.load(Ordering::SeqCst), 2, "two threads per slot");
    }

    #[test]
    fn a_group_never_runs_more_than_its_max_threads() {
        let grouped = Needs {
            threads: 1,
            group: Some(0),
        };
        let free = Needs {
            threads: 1,
            group: None,
        };
        let needs = [grouped, grouped, grouped, free, free, free];
        let (peak, groups, done) = peaks(&needs, 4, &[1]);
        assert_eq!(done, 6);
        assert_eq!(groups, [1]);
        // The free tests ran beside the group's one at a time.
        assert!(peak >= 2, "peak {peak}");
    }

    #[test]
    fn threads_required_take_slots() {
        let heavy = Needs {
            threads: 3,
            group: None,
        };
        let light = Needs {
            threads: 1,
            group: None,
        };
        let (peak, _, done) = peaks(&[heavy, light, heavy, light, light], 4, &[]);
        assert_eq!(done, 5);
        assert!(peak <= 4, "peak {peak}");
        // A test asking for more than the pool still runs, alone.
        let (peak, _, done) = peaks(
            &[
                Needs {
                    threads: 9,
                    group: None,
                },
                light,
            ],
            2,
            &[],
        );
        assert_eq!((peak <= 2, done), (true, 2));
    }

    /// Permits go in order of asking, started by the thread that frees them, and never more
    /// than the total at once.
    #[test]
    fn permits_start_queued_work_in_order_on_release() {
        let permits = std::sync::Arc::new(Permits::new(2));
        let log = std::sync::Arc::new(Mutex::new(Vec::new()));
        let push = |tag: &'static str| {
            let log = std::sync::Arc::clone(&log);
            Box::new(move || log.lock().unwrap().push(tag)) as Start
        };
        assert_eq!(permits.count(5), 2);
        assert_eq!(permits.count(0), 1);
        permits.when_free(1, push("a"));
        permits.when_free(1, push("b"));
        assert_eq!(*log.lock().unwrap(), ["a", "b"], "free permits start at once");
        permits.when_free(2, push("wide"));
        permits.when_free(1, push("c"));
        assert_eq!(log.lock().unwrap().len(), 2, "none free: both wait");
        permits.release(1);
        assert_eq!(log.lock().unwrap().len(), 2, "the wide one is first and needs two");
        permits.release(1);
        assert_eq!(*log.lock().unwrap(), ["a", "b", "wide"]);
        permits.release(2);
        assert_eq!(*log.lock().unwrap(), ["a", "b", "wide", "c"]);
        permits.when_free(1, push("d"));
        let waiter = {
            let permits = std::sync::Arc::clone(&permits);
            std::thread::spawn(move || {
                permits.acquire(1);
                permits.release(1);
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!waiter.is_finished(), "c and d hold both permits");
        permits.release(1);
        waiter.join().unwrap();
    }
}
