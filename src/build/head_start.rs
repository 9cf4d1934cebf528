//! The doctests' build started as soon as the library they link is built.
//!
//! cargo runs rustdoc on a library's doctests only after every other test target of the build
//! is compiled, and cargo sfl builds them in a second cargo invocation when the tests run
//! meanwhile or when test selection builds only some targets. Yet rustdoc needs the library
//! alone: after an edit, the test harness and the integration tests compile while a core could
//! compile the doctests. So the rustdoc wrapper ([`crate::doctest`]) saves each `--test`
//! invocation cargo gave it (arguments, directory, environment) beside the doctests it built,
//! and when a build's messages say that the library that invocation names (`--extern
//! CRATE=….rlib`) is written again, the same invocation starts at once. It is a head start, not
//! a second build: when cargo's own invocation comes, the wrapper waits for it (a lock per
//! crate) and finds the doctests it built under its key (the arguments, the environment cargo
//! gives a package, and every file the arguments name), or builds them itself when anything
//! differs.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

/// Set in a head start's environment: its rustdoc's diagnostics are kept
/// ([`HEAD_START_STDERR`]) for cargo's own invocation to show.
pub const HEAD_START_ENV: &str = "CARGO_SFL_HEAD_START";
/// A crate's saved invocation, in its doctests' directory.
pub const INVOCATION: &str = "sfl-invocation.json";
/// A head start's rustdoc diagnostics, in the crate's doctests' directory.
pub const HEAD_START_STDERR: &str = "sfl-head-start-stderr.txt";

/// The jobserver cargo shares with rustdoc: its descriptors are those of that build alone.
const JOBSERVER: [&str; 3] = ["CARGO_MAKEFLAGS", "MAKEFLAGS", "MFLAGS"];

/// One rustdoc `--test` invocation of the wrapper, as cargo made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invocation {
    dir: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Invocation {
    /// This process's invocation (`None` when an argument, the directory or a variable is not
    /// Unicode: then no head start).
    pub fn current() -> Option<Invocation> {
        let args = std::env::args_os()
            .skip(1)
            .map(OsString::into_string)
            .collect::<Result<Vec<_>, _>>()
            .ok()?;
        let env = std::env::vars_os()
            .filter(|(k, _)| k != HEAD_START_ENV && !JOBSERVER.iter().any(|j| k == j))
            .map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect::<Option<Vec<_>>>()?;
        Some(Invocation {
            dir: std::env::current_dir().ok()?,
            args,
            env,
        })
    }

    /// Saves it in `dir` (the crate's doctests' directory); best effort.
    pub fn save(&self, dir: &Path) {
        if let Ok(text) = serde_json::to_string(self) {
            let _ = std::fs::write(dir.join(INVOCATION), text);
        }
    }

    /// The invocation saved in `dir`.
    fn load(dir: &Path) -> Option<Invocation> {
        serde_json::from_slice(&std::fs::read(dir.join(INVOCATION)).ok()?).ok()
    }

    /// The library of its own crate it links ([`own_library`]).
    fn library(&self) -> Option<PathBuf> {
        own_library(&self.args)
    }
}

/// The library of its own crate that a rustdoc invocation with `args` links: `--extern
/// CRATE=PATH.rlib` (or `--extern=…`), CRATE its `--crate-name`.
pub fn own_library<A: AsRef<std::ffi::OsStr>>(args: &[A]) -> Option<PathBuf> {
    let text: Vec<&str> = args.iter().map(|a| a.as_ref().to_str().unwrap_or("")).collect();
    let name = text.windows(2).find(|w| w[0] == "--crate-name")?[1];
    let prefix = format!("{name}=");
    let next = text.iter().skip(1).copied().chain([""]);
    text.iter()
        .zip(next)
        .filter_map(|(a, b)| match *a {
            "--extern" => b.strip_prefix(&prefix),
            a => a.strip_prefix("--extern=")?.strip_prefix(&prefix),
        })
        .map(PathBuf::from)
        .find(|p| p.extension().is_some_and(|e| e == "rlib"))
}

/// The saved invocations of a build's doctests, each waiting for its library to be written.
#[derive(Default)]
pub struct HeadStarts {
    waiting: HashMap<PathBuf, Invocation>,
}

impl HeadStarts {
    /// Every invocation saved under `base` (the build's doctests' directory, one directory per
    /// crate).
    pub fn new(base: &Path) -> HeadStarts {
        let waiting = std::fs::read_dir(base)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| Invocation::load(&e.path()))
            .filter_map(|inv| Some((inv.library()?, inv)))
            .collect();
        HeadStarts { waiting }
    }

    /// Starts the invocation whose library `artifact` wrote (the wrapper, in the background, its
    /// output discarded: what it builds is read from its directory).
    pub fn written(&mut self, artifact: &cargo_metadata::Artifact) {
        // A library cargo found up to date leaves the doctests' key as it was.
        if self.waiting.is_empty() || artifact.profile.test || artifact.fresh {
            return;
        }
        for file in &artifact.filenames {
            let Some(inv) = self.waiting.remove(file.as_std_path()) else {
                continue;
            };
            let Ok(me) = crate::platform::current_exe() else {
                return;
            };
            // Not waited for: it ends on its own, or with this run when interrupted.
            let started = crate::process::spawn_build(
                Command::new(me)
                    .args(&inv.args)
                    .current_dir(&inv.dir)
                    .env_clear()
                    .envs(inv.env.iter().map(|(k, v)| (k, v)))
                    .env(HEAD_START_ENV, nanos(std::time::SystemTime::now()).to_string())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
            );
            if started.is_ok() {
                crate::ui::detail(format!(
                    "the doctests of {} build while the other tests do",
                    artifact.target.name
                ));
            }
        }
    }
}

/// Whether this process is a head start that cargo's own invocation overtook: the doctests in
/// `dir` were built (`built_from` written) after it was started. It then leaves them as they
/// are: building from a stale invocation would replace the build this run reads.
pub fn overtaken(built_from: &Path) -> bool {
    let Some(started) = std::env::var(HEAD_START_ENV).ok().and_then(|t| t.parse::<u128>().ok()) else {
        return false;
    };
    std::fs::metadata(built_from)
        .and_then(|m| m.modified())
        .is_ok_and(|built| nanos(built) >= started)
}

/// Nanoseconds since the Unix epoch (0 before it).
fn nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// The variables cargo gives rustdoc for a package that its doctests may read at compile time
/// (`env!`), with their values, sorted: part of the key of a kept build of doctests.
pub fn package_env() -> Vec<(String, String)> {
    const NAMED: [&str; 5] = [
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "OUT_DIR",
    ];
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            (k.starts_with("CARGO_PKG_") || NAMED.contains(&k.as_str())).then(|| (k, v.to_string_lossy().into_owned()))
        })
        .collect();
    vars.sort();
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invocation(args: &[&str]) -> Invocation {
        Invocation {
            dir: PathBuf::from("/w"),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: vec![("CARGO_PKG_NAME".into(), "c".into())],
        }
    }

    #[test]
    fn the_library_is_the_crates_own_rlib_in_either_spelling() {
        let inv = invocation(&[
            "--crate-name",
            "my_lib",
            "--test",
            "--extern",
            "dep=/t/deps/libdep-1.rlib",
            "--extern",
            "my_lib=/t/deps/libmy_lib-2.rmeta",
            "--extern=my_lib=/t/deps/libmy_lib-2.rlib",
        ]);
        assert_eq!(inv.library(), Some(PathBuf::from("/t/deps/libmy_lib-2.rlib")));
        assert_eq!(
            invocation(&["--crate-name", "x", "--extern", "y=/t/liby.rlib"]).library(),
            None
        );
    }

    #[test]
    fn saved_invocations_wait_for_their_library() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("my_lib");
        std::fs::create_dir_all(&dir).unwrap();
        let inv = invocation(&["--crate-name", "my_lib", "--extern", "my_lib=/t/libmy_lib-2.rlib"]);
        inv.save(&dir);
        assert_eq!(Invocation::load(&dir), Some(inv));
        std::fs::create_dir_all(base.path().join("unsaved")).unwrap();
        let starts = HeadStarts::new(base.path());
        assert_eq!(
            starts.waiting.keys().collect::<Vec<_>>(),
            [&PathBuf::from("/t/libmy_lib-2.rlib")]
        );
    }
}
