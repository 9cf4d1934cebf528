//! Builds the workspace's tests with LLVM source-based coverage, in its own target directory,
//! instrumenting only the workspace's own crates (through a rustc wrapper, as cargo-llvm-cov
//! does), so dependencies build and run uninstrumented. The wrapper is the binary's
//! (`wrappers::rustc`); the constants in [`cargo`] are what the build tells it.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::config::Selection;
use crate::error::SflError;
use crate::workspace::{Built, Workspace};

mod cargo;
pub mod config;
mod doctests;
pub mod head_start;

use crate::workspace::has_doctests;
pub use cargo::{
    COMPILE_TIME_DIRS_ENV, COVERAGE_FLAGS, INSTRUMENT_DIRS_ENV, PLAIN_ENV, Runtime, USER_WRAPPER_ENV, WRAPPER_ENV,
};
pub(crate) use cargo::{add_artifact, plain_cargo};
use cargo::{instrumented_cargo, stream};
pub use doctests::{Doctests, host_triple};
use doctests::{build_doctests, idle_runner};

/// Builds the selected tests with coverage (linking `runtime` when given, with edge
/// instrumentation when it says so), then, when the selection includes doctests, has rustdoc
/// build and keep those ([`crate::doctest`]); cargo's diagnostics go to the terminal.
/// `doctests` says whether the doctests are built ([`Doctests`]): always (then in the same
/// cargo invocation as the other tests), never, or as asked once the other tests are built
/// (test selection skips them when it reuses every doctest's row).
pub fn build(
    ws: &Workspace,
    select: &Selection,
    runtime: Option<&Runtime>,
    doctests: Doctests<'_>,
) -> Result<Built, SflError> {
    forget_other_roots(ws, select)?;
    let mut built = Built::default();
    let mut script_env = HashMap::new();
    let with_doctests = builds_doctests(ws, select);
    // The doctests' build starts as soon as their library is built when this call or the next
    // one builds them.
    let early = match doctests {
        Doctests::Always { .. } => with_doctests,
        Doctests::Later => true,
        Doctests::Never | Doctests::Ask(_) => false,
    };
    let mut head = if early {
        head_start::HeadStarts::new(&ws.build_dir.join("doctests"))
    } else {
        head_start::HeadStarts::default()
    };
    let at_once = match doctests {
        Doctests::Always { host } if !select.doc && with_doctests => idle_runner(host),
        _ => None,
    };
    if let Some(runner) = at_once {
        let mut cmd = instrumented_cargo(ws, select, runtime, &["test", "--no-fail-fast"])?;
        cmd.env(runner, "true");
        build_doctests(ws, select, cmd, &mut built, &mut script_env, &mut head)?;
    } else {
        if !select.doc {
            let cmd = instrumented_cargo(ws, select, runtime, &["test", "--no-run"])?;
            let status = stream(cmd, "compiling", select.cargo_messages, &mut script_env, |art| {
                head.written(&art);
                add_artifact(ws, &mut built, art)
            })?;
            if !status.built() {
                return Err(SflError::BuildFailed);
            }
        }
        let wanted = match doctests {
            Doctests::Always { .. } => true,
            Doctests::Never | Doctests::Later => false,
            Doctests::Ask(ask) => with_doctests && ask(&built),
        };
        if with_doctests && wanted {
            let cmd = instrumented_cargo(ws, select, runtime, &["test", "--doc", "--no-fail-fast"])?;
            build_doctests(ws, select, cmd, &mut built, &mut script_env, &mut head)?;
        }
    }
    built.tests.sort_by(|a, b| a.id.cmp(&b.id));
    configure(&mut built, &ws.root, &select.cargo_config);
    for t in &mut built.tests {
        t.env
            .extend(script_env.get(&ws.members[t.package].id).cloned().unwrap_or_default());
    }
    Ok(built)
}

/// Gives the tests of `built` what `cargo test` would give them in the workspace at `root` with
/// the `--config` values `cli`: cargo's `[env]` and its target runner, read from the current
/// directory ([`config`]), and insta's workspace root.
pub fn configure(built: &mut Built, root: &Path, cli: &[String]) {
    let cwd = config::current_dir(root);
    let mut env = config::env(&cwd, cli);
    answer_insta(&mut env, root, std::env::var_os(INSTA_ROOT).is_some());
    let runner = config::runner(&cwd, cli, None);
    for t in &mut built.tests {
        t.env = env.clone();
        t.runner = runner.clone();
    }
}

/// Whether [`build`] builds doctests for `select`: it asks for them (as `cargo test` does),
/// and a selected package has a library with doctests (`--doc` aside: cargo refuses `test
/// --doc` when none has, a binary-only crate or a `cdylib`-only one: `cargo test -p` of such a
/// package, rustc-demangle's C API, runs its tests and no doctests).
pub fn builds_doctests(ws: &Workspace, select: &Selection) -> bool {
    select.doctests() && (select.doc || ws.selected(select).iter().any(|p| p.targets.iter().any(has_doctests)))
}

/// insta's override of the workspace root it keeps snapshots under.
const INSTA_ROOT: &str = "INSTA_WORKSPACE_ROOT";

/// Gives the tests insta's workspace root (`root`) unless the environment (`set`) or cargo's
/// `[env]` already does. insta otherwise runs `cargo metadata` in the test's package to find
/// it, once per process: once per binary under `cargo test`, once per test here (60-100 ms
/// each, most of a small snapshot test). Every package cargo sfl runs tests of is a member of
/// this workspace, so the answer is the one `cargo metadata` would give.
fn answer_insta(env: &mut Vec<(String, String)>, root: &Path, set: bool) {
    if !set && !env.iter().any(|(k, _)| k == INSTA_ROOT) {
        env.push((INSTA_ROOT.to_string(), root.to_string_lossy().into_owned()));
    }
}

/// Where a profile directory of the build records the workspace root its crates were built
/// from (`target/sfl/debug/.sfl-workspace-root`): it goes when the directory goes.
const ROOT_STAMP: &str = ".sfl-workspace-root";

/// Makes cargo rebuild the workspace's own crates when the build directory holds them as built
/// from another root: a workspace copied or moved with its target directory (a restored CI
/// cache, a moved checkout). cargo would reuse them, since it fingerprints a path package by
/// paths relative to the workspace and by modification times, which a copy keeps; but their
/// coverage maps, line tables and panic locations name the old root's files, so not one line
/// would be recognised as this workspace's. Only the members are cleaned (`cargo clean -p`):
/// dependencies name no workspace file and stay built. A profile directory without the record
/// (built by an older cargo sfl) is cleaned alike; one that does not exist has nothing to clean.
fn forget_other_roots(ws: &Workspace, select: &Selection) -> Result<(), SflError> {
    let profile_dir = ws.build_dir.join(select.profile_dir());
    let stamp = profile_dir.join(ROOT_STAMP);
    let root = ws.root.as_os_str().as_encoded_bytes();
    match std::fs::read(&stamp) {
        Ok(recorded) if recorded == root => return Ok(()),
        Ok(recorded) => {
            crate::ui::status(
                "Rebuilding",
                format!(
                    "the workspace's crates: {} holds them as built at {}, a copy of this workspace at another path",
                    ws.build_dir.display(),
                    String::from_utf8_lossy(&recorded)
                ),
            );
            clean_members(ws, select, &profile_dir)?;
        }
        Err(_) if profile_dir.join(".fingerprint").is_dir() => {
            crate::ui::detail(format!(
                "{} does not say where the workspace's crates were built: rebuilding them",
                profile_dir.display()
            ));
            clean_members(ws, select, &profile_dir)?;
        }
        Err(_) => {}
    }
    std::fs::create_dir_all(&profile_dir)
        .and_then(|()| std::fs::write(&stamp, root))
        .map_err(|why| SflError::CannotWrite { path: stamp, why })
}

/// `cargo clean -p` of every member in `profile_dir`'s profile of the build directory; if cargo
/// cannot, the whole profile directory goes (dependencies are rebuilt too).
fn clean_members(ws: &Workspace, select: &Selection, profile_dir: &Path) -> Result<(), SflError> {
    let mut cmd = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    cmd.arg("clean")
        .args(&ws.cargo_flags)
        .arg("--target-dir")
        .arg(&ws.build_dir);
    if let Some(p) = &select.manifest_path {
        cmd.arg("--manifest-path").arg(p);
    }
    if select.release {
        cmd.arg("--release");
    }
    if let Some(p) = &select.profile {
        cmd.args(["--profile", p]);
    }
    if let Some(t) = &select.target {
        cmd.args(["--target", t]);
    }
    for m in &ws.members {
        cmd.arg("-p").arg(&m.id.repr);
    }
    match cmd.stdin(Stdio::null()).output() {
        Ok(out) if out.status.success() => Ok(()),
        failed => {
            let why = match failed {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim_end().to_string(),
                Err(e) => e.to_string(),
            };
            crate::ui::warn(format!(
                "`cargo clean -p` of the workspace's crates failed ({why}): removing {} instead",
                profile_dir.display()
            ));
            match std::fs::remove_dir_all(profile_dir) {
                Err(why) if why.kind() != std::io::ErrorKind::NotFound => Err(SflError::StaleBuild {
                    path: profile_dir.to_path_buf(),
                    why,
                }),
                _ => Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insta_gets_the_workspace_root_unless_it_is_given_one() {
        let root = Path::new("/ws");
        let mut env = vec![("A".to_string(), "1".to_string())];
        answer_insta(&mut env, root, false);
        assert_eq!(env[1], (INSTA_ROOT.to_string(), "/ws".to_string()));
        let mut env = Vec::new();
        answer_insta(&mut env, root, true);
        assert!(env.is_empty(), "the environment sets it: {env:?}");
        let mut env = vec![(INSTA_ROOT.to_string(), "/elsewhere".to_string())];
        answer_insta(&mut env, root, false);
        assert_eq!(env, [(INSTA_ROOT.to_string(), "/elsewhere".to_string())]);
    }
}
