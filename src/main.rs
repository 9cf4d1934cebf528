//! `cargo sfl`: glue between the command line and the library.

mod wrappers;

use std::io::Write as _;

use clap::Parser;

use cargo_sfl::cli::Cargo;
use cargo_sfl::config::Task;
use cargo_sfl::error::{SflError, exit};
use cargo_sfl::pipeline;

fn main() {
    // rustdoc's runtool first: it inherits the wrapper variables of the build that ran rustdoc.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == cargo_sfl::doctest::RUNTOOL_ARG)
    {
        wrappers::rustdoc::runtool();
    }
    // Both wrapper variables reach every process of the doctest build; cargo runs a rustc
    // wrapper as `wrapper <rustc> <args…>` and rustdoc as `rustdoc <options…>`.
    let first_is_option = std::env::args_os()
        .nth(1)
        .is_none_or(|a| a.to_string_lossy().starts_with('-'));
    if std::env::var_os(cargo_sfl::doctest::RUSTDOC_WRAPPER_ENV).is_some() && first_is_option {
        wrappers::rustdoc::rustdoc_wrapper();
    }
    if std::env::var_os(cargo_sfl::build::WRAPPER_ENV).is_some() {
        wrappers::rustc::rustc_wrapper();
    }
    // cargo runs `cargo-sfl sfl …`; run directly (`cargo-sfl --version`, as install scripts
    // and version checks do), the subcommand's name is implied.
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_none_or(|a| a != "sfl") {
        argv.insert(1.min(argv.len()), "sfl".into());
    }
    let Cargo::Sfl(args) = Cargo::parse_from(argv);
    if let Err(usage) = args.check() {
        usage.exit()
    }
    cargo_sfl::ui::init(args.color(), args.verbosity());
    cargo_sfl::process::end_interrupted_with(|note, code| {
        // Straight to stderr, ignoring a closed pipe: the terminal's progress bar may be
        // mid-draw on another thread.
        let _ = writeln!(std::io::stderr(), "error: {note}");
        std::process::exit(code)
    });
    let result = match args.into_task() {
        Task::Run(c) => pipeline::run(&c),
        Task::Report {
            spectra,
            manifest_path,
            report,
        } => pipeline::report(spectra.as_deref(), manifest_path.as_deref(), &report),
        Task::Analyze { gzoltar, report } => pipeline::analyze(&gzoltar, &report),
        Task::Measures(format) => pipeline::measures(format),
        Task::Merge {
            files,
            save_spectra,
            allow_partial,
            report,
        } => pipeline::merge(&files, save_spectra.as_deref(), allow_partial, &report),
        Task::Eval(e) => pipeline::eval(&e),
        Task::Explain {
            location,
            spectra,
            manifest_path,
            measures_asked,
            report,
        } => pipeline::explain(
            &location,
            spectra.as_deref(),
            manifest_path.as_deref(),
            measures_asked,
            &report,
        ),
    };
    // An interrupt ends the process itself (exit 130, saying what it kept): what the run
    // returned after it (the build it killed "failed") is its consequence, not the answer.
    if cargo_sfl::process::interrupted() {
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
    let code = match result {
        Ok(code) => code,
        Err(err) => {
            let code = err
                .downcast_ref::<SflError>()
                .map_or(exit::INTERNAL, SflError::exit_code);
            cargo_sfl::ui::error(format!("{err:#}"));
            code
        }
    };
    std::process::exit(code);
}
