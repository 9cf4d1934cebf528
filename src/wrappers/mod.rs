//! The processes cargo and rustdoc start as cargo-sfl during a build: the rustc wrapper
//! ([`rustc`]), and the rustdoc wrapper with rustdoc's run tool ([`rustdoc`]). They belong to
//! the binary: each ends its process with the exit code cargo or rustdoc reads, which the
//! library never does.

pub mod rustc;
pub mod rustdoc;

use std::process::Command;

use cargo_sfl::error::exit;

/// Hands this process over to `cmd` (on a system without `exec`, runs it and exits with its
/// status); when it cannot, says `error: {what}: {the error}` and exits [`exit::SETUP`].
fn exec(cmd: Command, what: impl std::fmt::Display) -> ! {
    match cargo_sfl::platform::exec(cmd) {
        Ok(code) => std::process::exit(code),
        Err(err) => {
            eprintln!("error: {what}: {err}");
            std::process::exit(exit::SETUP)
        }
    }
}
