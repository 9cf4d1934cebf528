//! `cargo sfl`: glue between the command line and the library.

use clap::Parser;

use cargo_sfl::cli::Cargo;
use cargo_sfl::config::Task;
use cargo_sfl::error::{SflError, exit};
use cargo_sfl::pipeline;

fn main() {
    if std::env::var_os(cargo_sfl::build::WRAPPER_ENV).is_some() {
        cargo_sfl::build::rustc_wrapper();
    }
    let Cargo::Sfl(args) = Cargo::parse();
    cargo_sfl::ui::init(args.color(), args.verbosity());
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
    };
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
