//! Value enums and value parsers of the command line.

use std::time::Duration;

use clap::ValueEnum;

use crate::config;
use crate::ui::ColorChoice;

/// Defines clap value enums, each converting into the plain enum with the same variants.
macro_rules! value_enums {
    ($($(#[$doc:meta])* $clap:ident => $plain:ty { $($(#[$vdoc:meta])* $v:ident),+ $(,)? })+) => {$(
        $(#[$doc])*
        #[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $clap {
            $($(#[$vdoc])* $v),+
        }

        impl From<$clap> for $plain {
            fn from(v: $clap) -> Self {
                match v {
                    $($clap::$v => <$plain>::$v),+
                }
            }
        }
    )+};
}

value_enums! {
    /// `--color`.
    Color => ColorChoice {
        /// Colour when the stream is a terminal (and NO_COLOR is unset).
        Auto,
        Always,
        Never,
    }
    /// `cargo sfl eval --sort-by`.
    SortBy => config::SortBy { StandardRank, SteimannRank, Exam, Accuracy, HtRank, Name }
    Format => config::Format {
        /// Summary, failing tests, top suspects with their source lines.
        Human,
        /// The `cargo-sfl/v1` JSON report (every entry).
        Json,
        /// SARIF 2.1.0 for editors and code scanning (the top N entries of each measure).
        Sarif,
        /// A self-contained HTML page written into the --output directory.
        Html,
        /// One `file:line:column: severity: message` line per top entry, for editors' quickfix
        /// lists and problem matchers.
        Short,
    }
    /// `--order`.
    Order => config::Order { Score, Ht }
    /// `--granularity`.
    Granularity => config::Granularity { Line, Function }
    /// Formats of the measure catalogue.
    ListFormat => config::ListFormat { Human, Json }
    /// How lines of one entry (identical coverage) are ordered for line-level metrics.
    TieBreak => crate::evidence::TieBreak {
        /// In code order: every line of an entry ties.
        Code,
        /// By evidence: lines on failing tests' panic backtraces first, then lines just above a
        /// failed index or arithmetic check, then lines that compute or decide before
        /// signatures, braces and attributes.
        Evidence,
    }
}

/// `--message-format`, named after cargo's.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFormat {
    /// The terminal report (`--format human`).
    Human,
    /// One `file:line:column: severity: message` line per shown line (`--format short`).
    Short,
    /// cargo's JSON messages: the build's as cargo prints them, then one `compiler-message`
    /// per shown line (what rust-analyzer's `check.overrideCommand` reads).
    Json,
}

/// The longest `--test-timeout`: a year (longer ones overflow the clock's deadlines).
const MAX_TEST_TIMEOUT_SECS: f64 = 365.0 * 24.0 * 3600.0;

/// A number on the command line that no run could use (clap prints it after the value).
#[derive(Debug, thiserror::Error)]
pub(super) enum BadNumber {
    #[error("not a whole number")]
    NotWhole,
    #[error("must be at least 1")]
    Zero,
    #[error("must be a number of seconds from 0.001 to {MAX_TEST_TIMEOUT_SECS} (a year)")]
    Timeout,
}

/// `-j`, `--top`: a count of which 0 would mean nothing runs or nothing is shown.
pub(super) fn at_least_one(s: &str) -> Result<usize, BadNumber> {
    match s.parse::<usize>() {
        Ok(0) => Err(BadNumber::Zero),
        Ok(n) => Ok(n),
        Err(_) => Err(BadNumber::NotWhole),
    }
}

/// `--test-timeout`: finite, positive, and small enough for a deadline (`inf`, `1e30` and
/// `nan` parse as numbers but would panic `Duration` or kill every test at once).
pub(super) fn test_timeout(s: &str) -> Result<Duration, BadNumber> {
    let secs: f64 = s.parse().map_err(|_| BadNumber::Timeout)?;
    if (0.001..=MAX_TEST_TIMEOUT_SECS).contains(&secs) {
        Ok(Duration::from_secs_f64(secs))
    } else {
        Err(BadNumber::Timeout)
    }
}

/// A `--measure` no measure answers to; the message lists them all.
#[derive(Debug, thiserror::Error)]
#[error("unknown measure; known measures: {known} (details: cargo sfl measures)")]
pub(super) struct UnknownMeasureName {
    known: String,
}

pub(super) fn measure_name(s: &str) -> Result<String, UnknownMeasureName> {
    match crate::measures::find(s) {
        Some(m) => Ok(m.name.to_string()),
        None => Err(UnknownMeasureName {
            known: crate::measures::all().map(|m| m.name).collect::<Vec<_>>().join(", "),
        }),
    }
}
