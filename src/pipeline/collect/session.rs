//! What listing and running the tests share ([`Session`]), and the plan of its jobs.

use std::path::Path;
use std::time::Duration;

use super::plan::{self, durations_path, plan};
use super::setup::own_flags;
use crate::config::RunConfig;
use crate::coverage::LineDecoder;
use crate::edges::Collector;
use crate::list::Listing;
use crate::nextest::{BinaryInfo, Flags, Nextest};
use crate::ui;
use crate::workspace::{Built, Workspace};

/// What listing and running the tests share.
pub(super) struct Session<'a> {
    pub(super) ws: &'a Workspace,
    pub(super) built: &'a Built,
    pub(super) coverage: &'a LineDecoder<'a>,
    /// Decodes edge files; `None` with `--no-edges`.
    pub(super) edges: Option<&'a Collector<'a>>,
    /// Where each test's profiles land (`<target-dir>/profiles`).
    pub(super) scratch: &'a Path,
    /// The build profile's directory ([`crate::config::Selection::profile_dir`]).
    pub(super) profile: String,
    pub(super) timeout: Duration,
    /// How the timeout was chosen, for the status line.
    pub(super) timeout_note: String,
    /// Per job (in plan order): its timeout, leak-timeout, retries, slots and test group, from
    /// the flags and the nextest profile.
    pub(super) settings: Vec<crate::nextest::JobSettings>,
    /// Each nextest test group's `max-threads`.
    pub(super) groups: Vec<usize>,
    /// Processes at once (slots).
    pub(super) jobs: usize,
    /// cargo sfl's own flags, which win over the nextest profile.
    pub(super) flags: Flags,
    pub(super) keep: bool,
    /// Tests that failed beside others run again alone ([`Session::run_alone`]).
    pub(super) alone: bool,
    /// `-- --nocapture`: tests run with libtest's `--nocapture`.
    pub(super) nocapture: bool,
    /// The fork servers tests run on (`None`: `--process-per-test`, or not on this system).
    pub(super) servers: Option<crate::forkserver::ForkServers>,
    /// Names the panic stacks the runtime records.
    pub(super) stacks: crate::stacks::Symbolizer,
    /// How long each test took in the last run (it orders the longest first).
    pub(super) last: plan::Durations,
    /// The resume journal's directory under `<target-dir>/journal` (empty: that one); the
    /// doctests run after the other tests have their own.
    pub(super) journal: &'static str,
    /// The digest of the run's inputs ([`crate::spectra::Snapshot::inputs_digest`]): an
    /// interrupted run resumes only with the same.
    pub(super) inputs: String,
}

impl<'a> Session<'a> {
    /// The session of one collect, before its jobs are planned (no per-job settings yet).
    pub(super) fn new(
        ws: &'a Workspace,
        built: &'a Built,
        coverage: &'a LineDecoder<'a>,
        edges: Option<&'a Collector<'a>>,
        scratch: &'a Path,
        cfg: &RunConfig,
        nextest: &Nextest,
    ) -> Self {
        let exec = &cfg.execution;
        let flags = own_flags(exec);
        let jobs = nextest.jobs(&flags);
        Session {
            ws,
            built,
            coverage,
            edges,
            scratch,
            profile: cfg.selection.profile_dir(),
            timeout: exec.timeout(),
            timeout_note: exec.timeout_note(),
            settings: Vec::new(),
            groups: nextest.groups.iter().map(|(_, n)| *n).collect(),
            jobs,
            flags,
            keep: exec.keep_profiles,
            alone: exec.alone_rerun,
            nocapture: exec.nocapture,
            servers: (!exec.process_per_test && crate::platform::FORK_SERVERS)
                .then(|| crate::forkserver::ForkServers::new(jobs, !exec.keep_profiles, !exec.fresh_processes)),
            stacks: crate::stacks::Symbolizer::default(),
            last: plan::load_durations(&durations_path(ws)),
            journal: "",
            inputs: String::new(),
        }
    }

    /// The index among the decoders' executables of `exe` (`fallback` when they do not hold
    /// it). The decoders number the executables of the whole run: the doctests, listed and run
    /// after the other tests, come after theirs, so binary `b` of this session's build need not
    /// be executable `b`.
    pub(super) fn decoder_index(&self, exe: &Path, fallback: usize) -> usize {
        self.coverage.paths().iter().position(|p| p == exe).unwrap_or(fallback)
    }

    /// Plans the jobs from the listings (filter, `-E`, ignored tests, partition) and gives each
    /// its settings (flags, then the nextest profile), saying which share a partition took.
    pub(super) fn plan(&mut self, listings: Vec<Listing>, cfg: &RunConfig, nextest: &Nextest) -> plan::Plan {
        let exec = &cfg.execution;
        let infos: Vec<BinaryInfo> = self.built.tests.iter().map(|b| BinaryInfo::new(self.ws, b)).collect();
        let plan = plan(
            &self.built.tests,
            listings,
            &cfg.filter,
            &|b, name| nextest.selector.selects(&infos[b], name),
            exec.ignored,
            exec.partition.as_ref(),
        );
        self.settings = plan
            .jobs
            .iter()
            .map(|j| {
                let name = j.name.as_deref().unwrap_or("main");
                nextest.job(&infos[j.binary], name, &self.flags, self.timeout, self.jobs)
            })
            .collect();
        if let Some(p) = &exec.partition {
            ui::status(
                "Partition",
                format!("{p}: {} of {} tests", plan.jobs.len(), plan.selected),
            );
        }
        plan
    }
}
