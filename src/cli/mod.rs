//! Command-line arguments (clap derive, as a cargo subcommand), their validation, and their
//! conversion into the plain [`crate::config`] types the library reads.

mod harness;
mod output;
mod run;
mod subcommands;
mod values;

use clap::{Args, Parser, Subcommand};

pub use output::OutputArgs;
pub use run::{ExecutionArgs, NextestArgs, RunArgs, SelectionArgs};
pub use subcommands::{AnalyzeArgs, EvalArgs, ExplainArgs, MeasuresArgs, MergeArgs, ReportArgs};
pub use values::{Color, Format, Granularity, ListFormat, Order, SortBy, TieBreak};

use crate::config::Task;
use crate::ui::{ColorChoice, Verbosity};

/// `cargo sfl …` arrives as `cargo-sfl sfl …`; this wrapper enum accepts that shape.
#[derive(Parser, Debug)]
#[command(name = "cargo", bin_name = "cargo", styles = clap::builder::styling::Styles::styled())]
pub enum Cargo {
    Sfl(SflArgs),
}

/// Statistical fault localisation: run every test in its own process under LLVM coverage and
/// rank the lines that failing tests ran by how suspicious they are.
#[derive(Args, Debug)]
#[command(version, args_conflicts_with_subcommands = true)]
#[command(
    after_help = "Exit codes: 0 report written, 2 usage error, 3 no failing tests, 4 no tests, \
5 unreadable saved spectra, 6 --fail-on threshold reached, 7 nothing to rank (a failing test ran no rankable line; \
eval: no fault was run by a test; explain: the line is not ranked), \
96 setup error, 101 build failed, 1 internal error."
)]
pub struct SflArgs {
    #[command(subcommand)]
    pub command: Option<Command>,

    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true, value_name = "WHEN")]
    pub color: Color,
    /// Print only errors and warnings on stderr (no status lines or progress bars).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Also print every test as it finishes, instead of progress bars.
    #[arg(short, long, global = true)]
    pub verbose: bool,

    #[command(flatten)]
    pub run: RunArgs,
}

impl SflArgs {
    /// What clap cannot check itself: the test harness's arguments after `--` (a usage error,
    /// for the binary to print and exit 2 with, as clap's own).
    pub fn check(&self) -> Result<(), clap::Error> {
        let run = match &self.command {
            Some(Command::Eval(e)) => &e.run,
            _ => &self.run,
        };
        run.check()
    }

    pub fn verbosity(&self) -> Verbosity {
        match (self.quiet, self.verbose) {
            (true, _) => Verbosity::Quiet,
            (_, true) => Verbosity::Verbose,
            _ => Verbosity::Normal,
        }
    }

    pub fn color(&self) -> ColorChoice {
        self.color.into()
    }

    /// The subcommand asked for, with its configuration.
    pub fn into_task(self) -> Task {
        match self.command {
            None => Task::Run(Box::new(self.run.into_config())),
            Some(Command::Report(r)) => Task::Report {
                spectra: r.spectra,
                manifest_path: r.manifest_path,
                report: r.output.into_config(),
            },
            Some(Command::Analyze(a)) => Task::Analyze {
                gzoltar: a.gzoltar,
                report: a.output.into_config(),
            },
            Some(Command::Measures(m)) => Task::Measures(m.format.into()),
            Some(Command::Merge(m)) => Task::Merge {
                files: m.files,
                save_spectra: m.save_spectra,
                allow_partial: m.allow_partial,
                report: m.output.into_config(),
            },
            Some(Command::Eval(e)) => Task::Eval(Box::new(e.into_config())),
            Some(Command::Explain(e)) => Task::Explain {
                location: e.location,
                spectra: e.saved.spectra,
                manifest_path: e.saved.manifest_path,
                measures_asked: !e.saved.output.measure.is_empty(),
                report: e.saved.output.into_config(),
            },
        }
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Re-rank the spectra saved by the last run, without building or running tests.
    Report(ReportArgs),
    /// Rank a coverage matrix exported by another tool (GZoltar's sfl/txt format).
    Analyze(AnalyzeArgs),
    /// List every measure: name, formula, source, Xie et al.'s group and cloning class.
    Measures(MeasuresArgs),
    /// Score every measure on known faults (faults.toml): rank scores, EXAM, top-N, HT_Rank.
    Eval(Box<EvalArgs>),
    /// Combine the spectra of shards (`--partition K/N --save-spectra FILE`) and report on the whole.
    Merge(MergeArgs),
    /// Why a line ranks where it does: its entry and the lines tied with it, its scores, the
    /// tests that ran it and did not, backtraces through it, and what would tell its entry apart.
    Explain(ExplainArgs),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use clap::CommandFactory;

    use super::*;
    use crate::config::{self, HtParams};

    #[test]
    fn cli_definition_is_consistent() {
        Cargo::command().debug_assert();
    }

    #[test]
    fn cargo_style_invocation_parses_selection_and_filter() {
        let Cargo::Sfl(a) = Cargo::try_parse_from([
            "cargo",
            "sfl",
            "-p",
            "foo",
            "--test",
            "it",
            "-j",
            "3",
            "--measure",
            "dstar",
            "--clone-failing",
            "7",
            "t1",
        ])
        .unwrap();
        let Task::Run(c) = a.into_task() else {
            panic!("no subcommand: a run")
        };
        assert_eq!(c.selection.package, vec!["foo"]);
        assert_eq!(c.selection.test, vec!["it"]);
        assert_eq!(c.execution.jobs, Some(3));
        assert_eq!(c.filter, crate::config::NameFilter::substring(Some("t1".into())));
        assert_eq!(
            c.report.measures.iter().map(|m| m.name).collect::<Vec<_>>(),
            vec!["dstar2"]
        );
        assert_eq!(c.report.options.clone_failing, 7);
    }

    #[test]
    fn eval_keeps_its_ht_flags_and_whether_measures_were_asked_for() {
        let Cargo::Sfl(a) =
            Cargo::try_parse_from(["cargo", "sfl", "eval", "--faults", "f.toml", "--walks", "9"]).unwrap();
        let Task::Eval(e) = a.into_task() else { panic!("eval") };
        assert_eq!(
            e.run.report.ht,
            HtParams {
                walks: 9,
                ..HtParams::default()
            }
        );
        assert!(e.measures.is_none() && e.ht);
        assert_eq!(e.sort_by, config::SortBy::StandardRank);
    }

    #[test]
    fn unusable_numbers_are_usage_errors_that_say_why() {
        let err = |args: &[&str]| {
            let e = Cargo::try_parse_from(["cargo", "sfl"].iter().chain(args)).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::exit::USAGE, "{args:?}");
            e.to_string()
        };
        for secs in ["inf", "1e30", "nan", "0", "-1", "0.0001", "soon"] {
            let e = err(&[&format!("--test-timeout={secs}")]);
            assert!(e.contains("from 0.001 to 31536000"), "{secs}: {e}");
        }
        assert!(err(&["-j", "0"]).contains("must be at least 1"));
        assert!(err(&["--top", "0"]).contains("must be at least 1"));
        assert!(err(&["report", "--top", "0"]).contains("must be at least 1"));
        assert!(err(&["-j", "two"]).contains("not a whole number"));
        let Cargo::Sfl(a) = Cargo::try_parse_from(["cargo", "sfl", "--test-timeout", "0.5"]).unwrap();
        let Task::Run(c) = a.into_task() else { panic!("a run") };
        assert_eq!(c.execution.timeout(), Duration::from_millis(500));
        let Cargo::Sfl(a) = Cargo::try_parse_from(["cargo", "sfl", "--no-edges"]).unwrap();
        let Task::Run(c) = a.into_task() else { panic!("a run") };
        assert_eq!(c.execution.test_timeout, None);
        assert_eq!(c.execution.timeout(), Duration::from_secs(180));
    }

    #[test]
    fn unknown_measures_are_rejected_with_the_list() {
        let err = Cargo::try_parse_from(["cargo", "sfl", "--measure", "nope"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("ochiai"), "{err}");
    }

    /// Numbers no run can use, each after its flag as on a command line: refused by the
    /// parser as invalid values, usage errors (`cargo sfl` exits 2 before anything is built)
    /// that say why.
    #[test]
    fn unusable_numbers_exit_2() {
        let cases: [(&[&str], &str); 6] = [
            (&["--test-timeout", "inf"], "from 0.001 to 31536000"),
            (&["--test-timeout", "1e30"], "from 0.001 to 31536000"),
            (&["--test-timeout", "nan"], "from 0.001 to 31536000"),
            (&["--test-timeout", "0"], "from 0.001 to 31536000"),
            (&["-j", "0"], "must be at least 1"),
            (&["report", "--top", "0"], "must be at least 1"),
        ];
        for (args, says) in cases {
            let e = Cargo::try_parse_from(["cargo", "sfl"].iter().chain(args)).unwrap_err();
            assert_eq!(e.kind(), clap::error::ErrorKind::ValueValidation, "{args:?}");
            assert_eq!(e.exit_code(), 2, "{args:?}");
            let text = e.to_string();
            assert!(
                text.contains("invalid value") && text.contains(says),
                "{args:?}: {text}"
            );
        }
    }
}
