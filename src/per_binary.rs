//! A cache with one slot per test binary: each binary is prepared (its coverage map or its
//! block table read) at most once, lazily, by whichever worker needs it first, while the
//! others wait for that result instead of reading the binary again.
//!
//! A binary that cannot be prepared keeps its error, so every profile of it reports the same
//! reason and the binary is not read again.
//!
//! A binary whose tests have all finished is evicted ([`PerBinary::evict`]), so memory holds
//! the binaries in use, not every binary of the run (a library's doctests are one executable
//! each, each with the library's whole coverage map); one needed again is prepared again.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Why a binary could not be prepared: the binary and the preparation's error (shared, so
/// every test of the binary can report it).
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", binary.display())]
pub struct BinaryError<E: std::error::Error + 'static> {
    pub binary: PathBuf,
    #[source]
    pub source: Arc<E>,
}

// Derived `Clone` would require `E: Clone`; the error is shared through the `Arc`.
impl<E: std::error::Error + 'static> Clone for BinaryError<E> {
    fn clone(&self) -> Self {
        BinaryError {
            binary: self.binary.clone(),
            source: Arc::clone(&self.source),
        }
    }
}

/// A binary's preparation: done once, waited for by concurrent callers.
type Slot<T, E> = Arc<OnceLock<Result<Arc<T>, BinaryError<E>>>>;

/// One lazily prepared `T` per binary, thread-safe.
pub struct PerBinary<T, E: std::error::Error + 'static> {
    paths: Vec<PathBuf>,
    slots: Vec<Mutex<Slot<T, E>>>,
}

impl<T, E: std::error::Error + 'static> PerBinary<T, E> {
    /// Slots for `paths` (binary `i` is `paths[i]`); nothing is read yet.
    pub fn new(paths: Vec<PathBuf>) -> Self {
        let slots = paths.iter().map(|_| Mutex::default()).collect();
        PerBinary { paths, slots }
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }

    /// Slots for more binaries, after the others (binary `len() + k` is `more[k]`).
    pub fn extend(&mut self, more: Vec<PathBuf>) {
        self.slots.extend(more.iter().map(|_| Mutex::default()));
        self.paths.extend(more);
    }

    pub fn len(&self) -> usize {
        self.paths.len()
    }

    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// Binary `i`, prepared by `prepare` (given its path) if no call has prepared it yet.
    /// Concurrent callers for the same binary wait for the first one's result.
    pub fn get(&self, i: usize, prepare: impl FnOnce(&Path) -> Result<T, E>) -> Result<Arc<T>, BinaryError<E>> {
        let slot = self.slot(i);
        let prepared = slot.get_or_init(|| {
            prepare(&self.paths[i]).map(Arc::new).map_err(|e| BinaryError {
                binary: self.paths[i].clone(),
                source: Arc::new(e),
            })
        });
        prepared.clone()
    }

    /// Binary `i`'s preparation if one has finished, without preparing it.
    pub fn peek(&self, i: usize) -> Option<Result<Arc<T>, BinaryError<E>>> {
        self.slot(i).get().cloned()
    }

    /// Forgets binary `i`'s preparation (callers holding it keep their copy); the next
    /// [`PerBinary::get`] prepares it again.
    pub fn evict(&self, i: usize) {
        *self.slots[i].lock().expect("not poisoned") = Slot::default();
    }

    fn slot(&self, i: usize) -> Slot<T, E> {
        Arc::clone(&self.slots[i].lock().expect("not poisoned"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::sync::atomic::{AtomicUsize, Ordering};

    #[derive(Debug, thiserror::Error)]
    #[error("unreadable")]
    struct Unreadable;

    #[test]
    fn prepares_each_binary_once_under_concurrent_access() {
        let cache: PerBinary<usize, Unreadable> = PerBinary::new(vec!["a".into(), "b".into()]);
        let calls = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..8 {
                let (cache, calls) = (&cache, &calls);
                s.spawn(move || {
                    let i = t % 2;
                    let v = cache
                        .get(i, |path| {
                            calls.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(path.as_os_str().len() + 10 * i)
                        })
                        .unwrap();
                    assert_eq!(*v, 1 + 10 * i);
                });
            }
        });
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // Both kept: a later call does not prepare again.
        assert_eq!(cache.get(1, |_| Ok(0)).ok().as_deref(), Some(&11));
    }

    #[test]
    fn an_evicted_binary_is_prepared_again_and_held_copies_stay() {
        let cache: PerBinary<u32, Unreadable> = PerBinary::new(vec!["a".into()]);
        let held = cache.get(0, |_| Ok(1)).unwrap();
        cache.evict(0);
        assert_eq!(*held, 1);
        assert_eq!(cache.get(0, |_| Ok(2)).ok().as_deref(), Some(&2));
    }

    #[test]
    fn keeps_an_error_per_binary() {
        let cache: PerBinary<u32, Unreadable> = PerBinary::new(vec!["/bin/bad".into(), "/bin/good".into()]);
        let err = cache.get(0, |_| Err(Unreadable)).unwrap_err();
        assert_eq!(err.to_string(), "/bin/bad: unreadable");
        // The error stays: the binary is not prepared again.
        let again = cache.get(0, |_| Ok(1)).unwrap_err();
        assert!(Arc::ptr_eq(&err.source, &again.source));
        assert_eq!(cache.get(1, |_| Ok(7)).ok().as_deref(), Some(&7));
    }
}
