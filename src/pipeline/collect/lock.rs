//! One collect at a time per sfl target dir. Two runs sharing `target/sfl` would delete each
//! other's profiles (every test then "could not run") and overwrite the saved spectra, so the
//! second run waits for the first, as cargo waits on its build directory.

use std::fs::{File, OpenOptions};
use std::path::Path;

use crate::error::SflError;

/// The lock file inside the sfl target dir (kept: removing it would race with a waiting run).
const LOCK_FILE: &str = ".cargo-sfl-lock";

/// Holds the lock until dropped (the OS releases it when the file is closed, or the process
/// dies).
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

impl DirLock {
    /// Takes the lock on `dir` (created if missing), blocking while another process holds it;
    /// `waiting` is called once, before blocking.
    pub fn acquire(dir: &Path, waiting: impl FnOnce(&Path)) -> Result<Self, SflError> {
        let path = dir.join(LOCK_FILE);
        let setup = |what: &str, e: std::io::Error| SflError::Setup(format!("cannot {what} {}: {e}", path.display()));
        create_tagged(dir).map_err(|e| setup("create the directory of", e))?;
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| setup("open", e))?;
        // Called by path: from Rust 1.89 std's inherent `File::try_lock` would shadow the trait's.
        match fs4::FileExt::try_lock(&file) {
            Ok(()) => {}
            Err(fs4::TryLockError::WouldBlock) => {
                waiting(dir);
                fs4::FileExt::lock(&file).map_err(|e| setup("lock", e))?;
            }
            Err(fs4::TryLockError::Error(e)) => return Err(setup("lock", e)),
        }
        Ok(DirLock { _file: file })
    }
}

/// Creates `dir` and the missing directories above it, each tagged as a cache as cargo tags the
/// target directories it creates (`CACHEDIR.TAG`): a `target/` that cargo sfl made before cargo
/// did would otherwise stay untagged, and a later run whose target directory is elsewhere
/// would read it as part of the package (its snapshot of the sources once digested 838 MB of an
/// old build in a crate without a `.gitignore`).
fn create_tagged(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    std::fs::create_dir_all(dir)?;
    for d in missing {
        // Best effort, as cargo's: an untagged directory only costs a later run time.
        let _ = std::fs::write(
            d.join("CACHEDIR.TAG"),
            format!(
                "{}\n# This file is a cache directory tag created by cargo sfl.\n\
                 # For information about cache directory tags see https://bford.info/cachedir/\n",
                crate::select::CACHE_TAG_SIGNATURE
            ),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    #[test]
    fn the_directories_it_creates_are_tagged_as_caches() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("target/sfl");
        let _lock = DirLock::acquire(&dir, |_| {}).unwrap();
        let tag = |d: &Path| std::fs::read_to_string(d.join("CACHEDIR.TAG")).unwrap_or_default();
        let signature = crate::select::CACHE_TAG_SIGNATURE;
        assert!(tag(&tmp.path().join("target")).starts_with(signature));
        assert!(tag(&dir).starts_with(signature));
        // A directory that was there is not ours to tag.
        assert!(!tmp.path().join("CACHEDIR.TAG").exists());
    }

    #[test]
    fn a_second_holder_waits_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), |_| panic!("nobody holds it yet")).unwrap();
        let (tx, rx) = mpsc::channel();
        let path = dir.path().to_path_buf();
        let second = std::thread::spawn(move || {
            let lock = DirLock::acquire(&path, |_| tx.send("waiting").unwrap()).unwrap();
            tx.send("locked").unwrap();
            drop(lock);
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("waiting"));
        // Still held: the second must not get it.
        assert!(rx.recv_timeout(Duration::from_millis(200)).is_err());
        drop(first);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok("locked"));
        second.join().unwrap();
        assert!(dir.path().join(LOCK_FILE).exists());
    }
}
