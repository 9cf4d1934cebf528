//! What the report shows and where it goes ([`OutputArgs`]), for every subcommand that ranks.

use std::path::PathBuf;

use clap::Args;

use super::values::{Format, Granularity, MessageFormat, Order, TieBreak, at_least_one, measure_name};
use crate::config::{HtParams, ReportConfig};

/// What the report shows and where it goes.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Report")]
pub struct OutputArgs {
    /// Number of suspects to show per measure in the human, short and SARIF reports: functions
    /// (each with its most suspicious lines) by default, entries with --granularity line or
    /// function [default: 5 functions, 10 entries].
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub top: Option<usize>,
    /// Suspiciousness measure(s) to rank by (repeatable; `cargo sfl measures` lists them)
    /// [default: stack-ochiai: the lines where failing tests' own operations panicked (an index
    /// out of bounds, an overflow), then Ochiai's coverage score; `stack-combined` also weighs
    /// backtraces and each line's text; `cargo sfl explain FILE:LINE` shows why a line ranks].
    #[arg(long, short = 'm', value_name = "NAME", value_parser = measure_name)]
    pub measure: Vec<String>,
    /// Add 0.5 to ef, ep, nf and np before each formula (the convention of Doric's
    /// 127-measure experiment).
    #[arg(long)]
    pub smoothing: bool,
    /// Count every failing test C times (Zhang et al.'s cloning of failed tests): balances a few failing tests
    /// against many passing ones.
    #[arg(long, value_name = "C", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub clone_failing: u32,
    /// Make each measure single-fault optimal (Opt_w): lines run by every failing test come
    /// first, fewest passing tests first.
    #[arg(long, visible_alias = "optimize")]
    pub optimise: bool,
    /// How many entries cl-u refutes before it keeps its last order.
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub update_bound: usize,
    /// List every line on its own instead of merging lines with identical coverage.
    #[arg(long)]
    pub no_group: bool,
    /// When the failing tests fall into clusters that share no line that passing tests miss and
    /// no backtrace line (two bugs, or an unrelated failure), rank each cluster against the
    /// passing tests and interleave the rankings (Jones, Bowring & Harrold's parallel debugging).
    #[arg(long)]
    pub clusters: bool,
    /// Mark entries on lines changed since this git revision (committed or not), and count
    /// how many of the top N were changed.
    #[arg(long, value_name = "REV")]
    pub diff_base: Option<String>,
    /// With --diff-base: rank only the entries on changed lines.
    #[arg(long, requires = "diff_base")]
    pub only_changed: bool,
    /// Rank test code too. By default it is left out of the rankings (its coverage is still
    /// collected and saved): #[test] functions, #[cfg(test)] items, and files under tests/,
    /// benches/ and examples/. A failing test's own body is run only by failing tests, so it
    /// scores like a fault.
    #[arg(long)]
    pub include_test_code: bool,
    /// The default since test code is left out; kept so older command lines still work.
    #[arg(long, hide = true, conflicts_with = "include_test_code")]
    pub exclude_test_code: bool,
    /// Order of the suspects: by score, or (ht) by when the HT_Rank debugging model (Def. 29:
    /// ranked list plus jumps within a function) expects a person to reach them.
    #[arg(long, value_enum, default_value_t = Order::Score)]
    pub order: Order,
    /// What a suspect is. By default lines are ranked and shown function by function: the
    /// most suspicious functions first (each where its best line ranks), each with its most
    /// suspicious lines and their ranks. `line` lists the ranked lines on their own; `function`
    /// ranks functions only (each with its best line's score; a function is run when any of its
    /// lines is).
    #[arg(long, value_enum)]
    pub granularity: Option<Granularity>,
    /// How the lines of one entry (identical coverage) are ordered: evidence (lines on failing
    /// tests' panic backtraces first, then lines just above a failed index or arithmetic check
    /// in its function, then lines that compute or decide before signatures, braces and
    /// attributes) or code (they tie, shown in code order). Entries keep their order.
    #[arg(long, value_enum, default_value_t = TieBreak::Evidence)]
    pub tie_break: TieBreak,
    /// Exit with code 6 (after writing the report) when a reported entry's score, or
    /// probability for Doric's measures, reaches this value (with --only-changed: a changed
    /// entry).
    #[arg(long, value_name = "SUSPICION")]
    pub fail_on: Option<f64>,
    /// Rank timed-out tests as failed tests. By default they are left out of the ranking,
    /// neither failing nor passing: an instrumented test may time out for being slow, and a
    /// killed test's coverage stops anywhere.
    #[arg(long)]
    pub count_timeouts: bool,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// As cargo names it: `json` prints cargo's own build messages as `cargo test
    /// --message-format json` does, then the suspects as `compiler-message`s (warnings for
    /// lines ranked in the top 5, notes for the other shown lines) for rust-analyzer's
    /// `check.overrideCommand` and every tool that reads cargo's messages; `short` and `human`
    /// are `--format short` and `--format human`.
    #[arg(long, value_enum, value_name = "FMT", conflicts_with = "format")]
    pub message_format: Option<MessageFormat>,
    /// Write the report to this file instead of standard output (a directory for html).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    pub fn into_config(self) -> ReportConfig {
        let format = match self.message_format {
            Some(MessageFormat::Json) => crate::config::Format::CargoJson,
            Some(MessageFormat::Short) => crate::config::Format::Short,
            Some(MessageFormat::Human) => crate::config::Format::Human,
            None => self.format.into(),
        };
        ReportConfig {
            measures: ReportConfig::resolve_measures(&self.measure, format).expect("validated by clap"),
            options: crate::analysis::Options {
                smoothing: self.smoothing,
                clone_failing: self.clone_failing,
                optimise: self.optimise,
                update_bound: self.update_bound,
                group: !self.no_group,
                clusters: self.clusters,
            },
            top: self.top.unwrap_or(if self.granularity.is_none() {
                crate::rank::functions::TOP_FUNCTIONS
            } else {
                10
            }),
            format,
            output: self.output,
            diff_base: self.diff_base,
            only_changed: self.only_changed,
            fail_on: self.fail_on,
            granularity: self.granularity.unwrap_or(Granularity::Line).into(),
            functions_first: self.granularity.is_none(),
            order: self.order.into(),
            tie_break: self.tie_break.into(),
            include_test_code: self.include_test_code,
            count_timeouts: self.count_timeouts,
            ht: HtParams::default(),
        }
    }
}
