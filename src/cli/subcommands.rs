//! The arguments of the subcommands other than a run: `report`, `explain`, `analyze`, `eval`,
//! `merge` and `measures`.

use std::path::PathBuf;

use clap::Args;

use super::output::OutputArgs;
use super::run::RunArgs;
use super::values::{ListFormat, SortBy};
use crate::config::{self, HtParams};

#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Saved spectra to read [default: <target-dir>/sfl/spectra.json of the workspace].
    #[arg(long, value_name = "FILE")]
    pub spectra: Option<PathBuf>,
    /// Path to Cargo.toml (to find the default spectra file and the source lines).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The line to explain, as `FILE:LINE` with FILE relative to the workspace root (as the
    /// reports print it), e.g. `src/lib.rs:16`.
    #[arg(value_name = "FILE:LINE", value_parser = parse_location)]
    pub location: (String, u32),
    /// The saved spectra and how to report, as for `report`.
    #[command(flatten)]
    pub saved: ReportArgs,
}

/// `explain`'s `FILE:LINE` (clap's value parser).
fn parse_location(s: &str) -> Result<(String, u32), String> {
    crate::explain::parse_location(s).map_err(|e| e.to_string())
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// A GZoltar `sfl/txt` directory: `matrix.txt` (one row per test: 0/1 per unit, then
    /// `+` passed or `-` failed) and `spectra.csv` (a `name` header, then one unit per line);
    /// the older header-less `matrix` and `spectra` files are read too, and `tests.csv` names
    /// the tests when present.
    #[arg(long, value_name = "DIR")]
    pub gzoltar: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The known faults: `[[fault]]` tables with `file` (relative to the workspace root) and
    /// `lines`.
    #[arg(long, value_name = "FILE")]
    pub faults: PathBuf,
    /// Evaluate saved spectra instead of building and running the tests.
    #[arg(long, value_name = "FILE")]
    pub spectra: Option<PathBuf>,
    /// Order the table by this metric (smaller is better).
    #[arg(long, value_enum, default_value_t = SortBy::StandardRank)]
    pub sort_by: SortBy,
    /// HT_Rank: probability of jumping to a line of the same function (Def. 29).
    #[arg(long, value_name = "P", default_value_t = HtParams::default().p_jump)]
    pub p_jump: f64,
    /// HT_Rank: largest chain (states) solved exactly (state reduction, exact however deep the
    /// ranking); larger ones are estimated by random walks.
    #[arg(long, value_name = "STATES", default_value_t = HtParams::default().exact_limit)]
    pub exact_limit: usize,
    /// HT_Rank: random walks (of at most 200,000 steps) for the estimate; 0 reports HT_Rank
    /// only where the exact method applies.
    #[arg(long, value_name = "N", default_value_t = HtParams::default().walks)]
    pub walks: usize,
    /// Skip HT_Rank.
    #[arg(long)]
    pub no_ht: bool,
    /// Rank the combined measure by these weights (as `cargo xtask fit` writes them) instead of
    /// the built-in ones: how a crate is scored with weights fitted without it.
    #[arg(long, value_name = "FILE")]
    pub weights: Option<PathBuf>,
    #[command(flatten)]
    pub run: RunArgs,
}

impl EvalArgs {
    pub fn into_config(self) -> config::EvalConfig {
        let asked = !self.run.output.measure.is_empty();
        let mut run = self.run.into_config();
        run.report.ht = HtParams {
            p_jump: self.p_jump,
            exact_limit: self.exact_limit,
            walks: self.walks,
        };
        config::EvalConfig {
            faults: self.faults,
            spectra: self.spectra,
            sort_by: self.sort_by.into(),
            ht: !self.no_ht,
            weights: self.weights,
            measures: asked.then(|| run.report.measures.clone()),
            run,
        }
    }
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Spectra files written by the shards (`--save-spectra`).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Write the merged spectra to this file.
    #[arg(long, value_name = "FILE")]
    pub save_spectra: Option<PathBuf>,
    /// Merge even when the files are not every shard of one `--partition` (a warning says what
    /// is missing). Without it such a merge is refused: a ranking from half the tests looks
    /// like a whole one.
    #[arg(long)]
    pub allow_partial: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct MeasuresArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Human)]
    pub format: ListFormat,
}
