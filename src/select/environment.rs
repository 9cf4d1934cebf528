//! The environment in a snapshot: which variables a snapshot leaves out, which changes run
//! every test, and what a change re-runs.

use std::collections::BTreeSet;

use crate::spectra::{Snapshot, TestRecord};

/// Environment variables that differ between two shells of one session without changing
/// what a test does (jobserver descriptors, terminal and session ids).
pub(super) fn volatile(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "_",
        "OLDPWD",
        "SHLVL",
        "COLUMNS",
        "LINES",
        "TERM_SESSION_ID",
        "WINDOWID",
        "SSH_AUTH_SOCK",
        "SSH_AGENT_PID",
        "SSH_CLIENT",
        "SSH_CONNECTION",
        "SSH_TTY",
        "XDG_SESSION_ID",
        "DISPLAY",
        "WAYLAND_DISPLAY",
    ];
    NAMES.contains(&name) || name.contains("MAKEFLAGS") || name.contains("JOBSERVER") || name.starts_with("CARGO_SFL_")
}

/// Whether a change of the environment variable `name` may change what is built or how every
/// test runs: cargo's and rustc's variables, the C toolchain's, `PATH` (which programs a test
/// starts), and those the last build declared reading.
pub(super) fn builds_read(name: &str, declared: &[String]) -> bool {
    const NAMES: &[&str] = &[
        "PATH",
        "CC",
        "CXX",
        "AR",
        "LD",
        "CFLAGS",
        "CXXFLAGS",
        "LDFLAGS",
        "CPPFLAGS",
        "HOST",
        "TARGET",
        "LD_LIBRARY_PATH",
        "LD_PRELOAD",
        "PKG_CONFIG_PATH",
        "SDKROOT",
        "HOME",
    ];
    [
        "CARGO",
        "RUST",
        "LLVM_",
        "CC_",
        "CXX_",
        "CFLAGS_",
        "CXXFLAGS_",
        "AR_",
        "PKG_CONFIG",
    ]
    .iter()
    .any(|p| name.starts_with(p))
        || NAMES.contains(&name)
        || declared.iter().any(|d| d == name)
}

/// What a change of the environment (`changed`, variable names) re-runs, in words: the tests
/// that read a changed variable, and those whose reads were not watched (`None`: no change).
pub(super) fn env_note(tests: &[TestRecord], changed: &[String]) -> Option<String> {
    if changed.is_empty() {
        return None;
    }
    let read = tests
        .iter()
        .filter(|t| {
            t.env_reads
                .as_ref()
                .is_some_and(|r| r.iter().any(|n| changed.contains(n)))
        })
        .count();
    let unobserved = tests.iter().filter(|t| t.env_reads.is_none()).count();
    let names = match changed.join(", ") {
        long if long.len() > 80 => format!("{} and {} more variables", changed[0], changed.len() - 1),
        names => names,
    };
    if read + unobserved == 0 {
        return Some(format!(
            "{names} changed in the environment: no test read it, so none runs again for it"
        ));
    }
    Some(format!(
        "{names} changed in the environment: {} read it, {} could not be watched; they run again",
        crate::ui::counted(read, "test", "tests"),
        crate::ui::counted(unobserved, "test's reads", "tests' reads"),
    ))
}

/// The environment variables that differ between the two snapshots, sorted.
pub fn changed_env(then: &Snapshot, now: &Snapshot) -> Vec<String> {
    let names: BTreeSet<&String> = then.context.keys().chain(now.context.keys()).collect();
    names
        .into_iter()
        .filter(|n| then.context.get(*n) != now.context.get(*n))
        .filter_map(|n| n.strip_prefix("env:").map(str::to_string))
        .collect()
}
