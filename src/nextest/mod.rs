//! The project's nextest setup, honoured: `-E` filtersets, and the selected profile of
//! `.config/nextest.toml` (test groups, overrides, test-threads, retries, slow- and
//! leak-timeouts, default-filter), resolved into per-test settings; cargo sfl's own flags win.

pub mod filter;
mod model;

use std::path::{Path, PathBuf};
use std::time::Duration;

use nextest_filtering::{CompiledExpr, FiltersetKind};

/// What the command line asks of nextest's setup.
pub use crate::config::NextestOptions as Options;
pub use crate::error::NextestError;
pub use filter::{BinaryInfo, Selector};
pub use model::Leak;

use crate::workspace::Workspace;
use model::{File, Profile, ValueError};

/// Where nextest keeps a workspace's configuration.
pub const CONFIG_PATH: &str = ".config/nextest.toml";

/// nextest's leak-timeout when the configuration sets none.
const DEFAULT_LEAK: Leak = Leak {
    period: Duration::from_millis(100),
    fail: false,
};

/// cargo sfl's own flags, which win over the profile.
#[derive(Debug, Default, Clone, Copy)]
pub struct Flags {
    pub jobs: Option<usize>,
    pub retries: Option<u32>,
    pub timeout: Option<Duration>,
}

/// One test's settings from the configuration; `None`: the configuration says nothing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TestSettings {
    /// Index into [`Nextest::groups`].
    pub group: Option<usize>,
    pub retries: Option<u32>,
    pub timeout: Option<Duration>,
    pub threads: usize,
    pub leak: Option<Leak>,
}

/// One job's settings, cargo sfl's flags and the configuration combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSettings {
    pub limits: crate::run::Limits,
    pub retries: u32,
    pub needs: crate::schedule::Needs,
}

/// Why an override cannot be used: its filter does not compile (the error names the
/// filterset), or a value in it is wrong (the caller names the override and the file).
#[derive(Debug, thiserror::Error)]
enum OverrideError {
    #[error(transparent)]
    Filterset(NextestError),
    #[error(transparent)]
    Value(#[from] ValueError),
}

/// An override with its filter compiled.
struct Override {
    filter: Option<CompiledExpr>,
    /// Its `platform` matches this machine (or it has none).
    platform: bool,
    group: Option<usize>,
    retries: Option<u32>,
    timeout: Option<Option<Duration>>,
    threads: Option<model::ThreadsRequired>,
    leak: Option<Leak>,
}

/// The nextest setup in force for one run.
#[derive(Default)]
pub struct Nextest {
    /// The configuration file read, if any, and the profile used.
    pub source: Option<(PathBuf, String)>,
    pub selector: Selector,
    /// Test groups and their `max-threads`, by name.
    pub groups: Vec<(String, usize)>,
    test_threads: Option<usize>,
    retries: Option<u32>,
    timeout: Option<Duration>,
    threads: Option<model::ThreadsRequired>,
    leak: Option<Leak>,
    overrides: Vec<Override>,
    /// Keys cargo sfl does not honour, with why.
    pub ignored: Vec<String>,
}

impl Nextest {
    /// Reads the configuration (if the workspace has one) and compiles every filterset.
    pub fn load(ws: &Workspace, opts: &Options) -> Result<Self, NextestError> {
        let path = match &opts.config {
            Some(p) => Some(p.clone()),
            None => Some(ws.root.join(CONFIG_PATH)).filter(|p| p.is_file()),
        };
        let file = match &path {
            Some(p) => Some(read(p)?),
            None if opts.profile.as_deref().is_some_and(|p| p != "default") => {
                return Err(NextestError::NoConfig(opts.profile.clone().unwrap_or_default()));
            }
            None => None,
        };
        let mut graph = None;
        let mut compile = |input: &str, kind, origin: &str| -> Result<CompiledExpr, NextestError> {
            if graph.is_none() {
                graph = Some(filter::Graph::load(ws)?);
            }
            graph.as_ref().expect("loaded").compile(input, kind, origin)
        };
        let mut nx = Nextest::default();
        for e in &opts.filtersets {
            nx.selector.exprs.push(compile(e, FiltersetKind::Test, "-E")?);
        }
        let (Some(path), Some(file)) = (path, file) else {
            return Ok(nx);
        };
        let name = opts.profile.clone().unwrap_or_else(|| "default".into());
        nx.apply(&file, path, name, &mut compile)?;
        Ok(nx)
    }

    /// Where the profile in force asks for a JUnit report (`[profile.NAME.junit] path`), as
    /// nextest places it: `<cargo's target dir>/nextest/<profile>/<path>`. `None` when the
    /// workspace has no configuration or no profile of the chain names a path.
    pub fn junit_path(ws: &Workspace, opts: &Options) -> Result<Option<PathBuf>, NextestError> {
        let path = match &opts.config {
            Some(p) => p.clone(),
            None => match Some(ws.root.join(CONFIG_PATH)).filter(|p| p.is_file()) {
                Some(p) => p,
                None => return Ok(None),
            },
        };
        let file = read(&path)?;
        let name = opts.profile.clone().unwrap_or_else(|| "default".into());
        let junit = junit_of(&file, &name, &path)?;
        Ok(junit.map(|j| ws.cargo_target_dir.join("nextest").join(&name).join(j)))
    }

    /// Takes profile `name` of `file` (read from `path`) with what it inherits.
    fn apply(
        &mut self,
        file: &File,
        path: PathBuf,
        name: String,
        compile: &mut dyn FnMut(&str, FiltersetKind, &str) -> Result<CompiledExpr, NextestError>,
    ) -> Result<(), NextestError> {
        let nx = self;
        let chain = chain(file, &name, &path)?;
        let bad = |why: String| NextestError::Config {
            path: path.clone(),
            why,
        };
        let cpus = crate::platform::cpus();
        for (group, cfg) in &file.test_groups {
            let n = cfg
                .max_threads
                .resolve(cpus)
                .map_err(|e| bad(format!("test-groups.{group}.max-threads: {e}")))?;
            nx.groups.push((group.clone(), n));
        }
        let first = |f: &dyn Fn(&Profile) -> bool| chain.iter().find(|(_, p)| f(p)).map(|(_, p)| p);
        nx.test_threads = first(&|p| p.test_threads.is_some())
            .map(|p| p.test_threads.as_ref().expect("set").resolve(cpus))
            .transpose()
            .map_err(|e| bad(format!("test-threads: {e}")))?;
        nx.retries = first(&|p| p.retries.is_some()).map(|p| p.retries.as_ref().expect("set").count());
        nx.timeout = first(&|p| p.slow_timeout.is_some())
            .map(|p| p.slow_timeout.as_ref().expect("set").terminate())
            .transpose()
            .map_err(|e| bad(format!("slow-timeout: {e}")))?
            .flatten();
        nx.threads = first(&|p| p.threads_required.is_some()).and_then(|p| p.threads_required.clone());
        nx.leak = first(&|p| p.leak_timeout.is_some())
            .map(|p| p.leak_timeout.as_ref().expect("set").resolve())
            .transpose()
            .map_err(|e| bad(e.to_string()))?;
        // The selected profile's overrides come first, then those of what it inherits from.
        for (pname, profile) in &chain {
            for (k, o) in profile.overrides.iter().enumerate() {
                let origin = format!("profile.{pname}.overrides[{k}]");
                let compiled = nx.compile_override(o, &origin, compile).map_err(|e| match e {
                    OverrideError::Value(why) => bad(format!("{origin}: {why}")),
                    OverrideError::Filterset(e) => e,
                })?;
                nx.overrides.push(compiled);
            }
        }
        let default_filter = nx
            .overrides
            .iter()
            .zip(chain.iter().flat_map(|(_, p)| &p.overrides))
            .find_map(|(c, o)| {
                (o.filter.is_none() && c.platform)
                    .then_some(o.default_filter.as_deref())
                    .flatten()
            })
            .or_else(|| first(&|p| p.default_filter.is_some()).and_then(|p| p.default_filter.as_deref()));
        if let Some(df) = default_filter {
            nx.selector.default = Some(compile(df, FiltersetKind::DefaultFilter, "default-filter")?);
        }
        nx.ignored = unhonoured(file, &chain);
        nx.source = Some((path, name));
        Ok(())
    }

    /// Compiles one override.
    fn compile_override(
        &self,
        o: &model::Override,
        origin: &str,
        compile: &mut dyn FnMut(&str, FiltersetKind, &str) -> Result<CompiledExpr, NextestError>,
    ) -> Result<Override, OverrideError> {
        if o.filter.is_none() && o.platform.is_none() {
            return Err(ValueError::OverrideMatchesNothing.into());
        }
        let filter = match &o.filter {
            Some(f) => Some(compile(f, FiltersetKind::Test, origin).map_err(OverrideError::Filterset)?),
            None => None,
        };
        let group = match &o.test_group {
            None => None,
            Some(g) if g == "@global" => None,
            Some(g) => Some(
                self.groups
                    .iter()
                    .position(|(name, _)| name == g)
                    .ok_or_else(|| ValueError::UnknownGroup(g.clone()))?,
            ),
        };
        Ok(Override {
            filter,
            platform: o.platform.as_ref().is_none_or(platform_matches),
            group,
            retries: o.retries.as_ref().map(|r| r.count()),
            timeout: o.slow_timeout.as_ref().map(|s| s.terminate()).transpose()?,
            threads: o.threads_required.clone(),
            leak: o.leak_timeout.as_ref().map(|l| l.resolve()).transpose()?,
        })
    }

    /// Tests at once: `-j` if given, else the profile's `test-threads`, else the CPUs.
    pub fn jobs(&self, flags: &Flags) -> usize {
        flags
            .jobs
            .or(self.test_threads)
            .unwrap_or_else(crate::platform::cpus)
            .max(1)
    }

    /// Test `name` of `bin`'s settings: for each, the first matching override's, else the
    /// profile's. `jobs` caps `threads-required`.
    pub fn settings(&self, bin: &BinaryInfo, name: &str, jobs: usize) -> TestSettings {
        let all = CompiledExpr::ALL;
        let default = self.selector.default.as_ref().unwrap_or(&all);
        self.settings_matching(&|f| bin.matches(f, default, name), jobs)
    }

    /// [`Nextest::settings`] of the test that `takes` says each override's filter takes.
    fn settings_matching(&self, takes: &dyn Fn(&CompiledExpr) -> bool, jobs: usize) -> TestSettings {
        let cpus = crate::platform::cpus();
        let matching: Vec<&Override> = self
            .overrides
            .iter()
            .filter(|o| o.platform && o.filter.as_ref().is_none_or(takes))
            .collect();
        let threads = matching
            .iter()
            .find_map(|o| o.threads.as_ref())
            .or(self.threads.as_ref())
            .and_then(|t| t.resolve(cpus, jobs).ok())
            .unwrap_or(1);
        TestSettings {
            group: matching.iter().find_map(|o| o.group),
            retries: matching.iter().find_map(|o| o.retries).or(self.retries),
            timeout: matching.iter().find_map(|o| o.timeout).unwrap_or(self.timeout),
            threads,
            leak: matching
                .iter()
                .find_map(|o| o.leak)
                .or(self.leak)
                .or(self.source.as_ref().map(|_| DEFAULT_LEAK)),
        }
    }

    /// One job's settings: cargo sfl's flags first, then the configuration, then
    /// `default_timeout` (no retries, nextest's default leak-timeout: 100 ms to end).
    pub fn job(
        &self,
        bin: &BinaryInfo,
        name: &str,
        flags: &Flags,
        default_timeout: Duration,
        jobs: usize,
    ) -> JobSettings {
        let s = self.settings(bin, name, jobs);
        // Without a configuration nextest's default too: a test that kills its child just
        // before it returns leaves the child dying for a moment, not leaked.
        let leak = s.leak.unwrap_or(DEFAULT_LEAK);
        JobSettings {
            limits: crate::run::Limits {
                timeout: flags.timeout.or(s.timeout).unwrap_or(default_timeout),
                leak_timeout: leak.period,
                leak_fails: leak.fail,
            },
            retries: flags.retries.or(s.retries).unwrap_or(0),
            needs: crate::schedule::Needs {
                threads: s.threads,
                group: s.group,
            },
        }
    }

    /// The status line: which profile, and each setting with where it came from.
    pub fn describe(&self, root: &Path, flags: &Flags) -> Option<String> {
        let (path, profile) = self.source.as_ref()?;
        let shown = path.strip_prefix(root).unwrap_or(path).display();
        let mut parts = Vec::new();
        let given = |ours: bool, flag: String| {
            if ours {
                format!(" (ignored: {flag} given)")
            } else {
                String::new()
            }
        };
        if let Some(n) = self.test_threads {
            parts.push(format!(
                "test-threads {n}{}",
                given(flags.jobs.is_some(), format!("-j {}", flags.jobs.unwrap_or(0)))
            ));
        }
        if let Some(n) = self.retries {
            parts.push(format!(
                "retries {n}{}",
                given(
                    flags.retries.is_some(),
                    format!("--retries {}", flags.retries.unwrap_or(0))
                )
            ));
        }
        if let Some(t) = self.timeout {
            let flag = flags
                .timeout
                .map(|t| format!("--test-timeout {}", t.as_secs_f64()))
                .unwrap_or_default();
            parts.push(format!(
                "timeout {}s{}",
                t.as_secs_f64(),
                given(flags.timeout.is_some(), flag)
            ));
        }
        if let Some(l) = self.leak {
            parts.push(format!(
                "leak-timeout {}ms{}",
                l.period.as_millis(),
                if l.fail { " (fails the test)" } else { "" }
            ));
        }
        if self.selector.default.is_some() {
            parts.push("default-filter".into());
        }
        let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        parts.push(plural(self.groups.len(), "test group"));
        parts.push(plural(self.overrides.len(), "override"));
        Some(format!("profile {profile} from {shown}: {}", parts.join(", ")))
    }
}

/// Reads and parses the configuration file.
fn read(path: &Path) -> Result<File, NextestError> {
    let bad = |why: String| NextestError::Config {
        path: path.to_path_buf(),
        why,
    };
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    toml::from_str(&text).map_err(|e| bad(e.to_string().trim_end().replace('\n', " ")))
}

/// The JUnit path of profile `name`: its own, else the nearest it inherits.
fn junit_of(file: &File, name: &str, path: &Path) -> Result<Option<String>, NextestError> {
    Ok(chain(file, name, path)?
        .into_iter()
        .find_map(|(_, p)| p.junit.as_ref().and_then(|j| j.path.clone())))
}

/// The profile `name` and those it inherits from, nearest first, ending with `default`.
fn chain<'f>(file: &'f File, name: &str, path: &Path) -> Result<Vec<(String, &'f Profile)>, NextestError> {
    static EMPTY: std::sync::LazyLock<Profile> = std::sync::LazyLock::new(Profile::default);
    let mut out: Vec<(String, &Profile)> = Vec::new();
    let mut next = Some(name.to_string());
    while let Some(n) = next.take() {
        if out.iter().any(|(seen, _)| *seen == n) {
            return Err(NextestError::Config {
                path: path.to_path_buf(),
                why: format!("profile `{n}` inherits from itself"),
            });
        }
        let profile = match file.profile.get(&n) {
            Some(p) => p,
            None if n == "default" => &*EMPTY,
            None => {
                let mut known: Vec<&str> = file.profile.keys().map(String::as_str).collect();
                if !known.contains(&"default") {
                    known.insert(0, "default");
                }
                return Err(NextestError::UnknownProfile {
                    name: n,
                    path: path.to_path_buf(),
                    known: known.join(", "),
                });
            }
        };
        if n != "default" {
            next = Some(profile.inherits.clone().unwrap_or_else(|| "default".into()));
        }
        out.push((n, profile));
    }
    Ok(out)
}

/// Whether an override's `platform` describes this machine (cargo sfl builds for the host, so
/// host and target are one).
fn platform_matches(p: &model::Platform) -> bool {
    let Ok(here) = target_spec::Platform::build_target() else {
        return false;
    };
    let eval = |spec: &str| {
        target_spec::TargetSpec::new(spec.to_string())
            .ok()
            .and_then(|t| t.eval(&here))
            .unwrap_or(false)
    };
    match p {
        model::Platform::Spec(s) => eval(s),
        model::Platform::Split { host, target } => {
            host.as_deref().is_none_or(eval) && target.as_deref().is_none_or(eval)
        }
    }
}

/// Every key of the file that cargo sfl does not honour, with why (top level, the profiles in
/// force and their overrides).
fn unhonoured(file: &File, chain: &[(String, &Profile)]) -> Vec<String> {
    let why = |key: &str| match key {
        "status-level" | "final-status-level" | "failure-output" | "success-output" => "cargo sfl reports its own way",
        "report-name" | "store-success-output" | "store-failure-output" => "the JUnit report is cargo sfl's own",
        "fail-fast" => "every test runs: the ranking needs them all",
        "flaky-result" => "a flaky test is always ranked as failing",
        "scripts" | "script" | "experimental" => "setup and wrapper scripts are not run",
        "archive" | "store" => "no archives or run store",
        "priority" => "tests run in canonical order",
        "run-extra-args" => "tests run with libtest's own arguments",
        "global-timeout" | "bench" => "not supported",
        "nextest-version" => "not checked",
        _ => "unknown key",
    };
    let mut out: Vec<String> = file.other.keys().map(|k| format!("{k} ({})", why(k))).collect();
    for (name, p) in chain {
        out.extend(p.other.keys().map(|k| format!("profile.{name}.{k} ({})", why(k))));
        if let Some(j) = &p.junit {
            out.extend(j.other.keys().map(|k| format!("profile.{name}.junit.{k} ({})", why(k))));
        }
        if let Some(model::Retries::Policy { other, .. }) = &p.retries {
            out.extend(
                other
                    .keys()
                    .filter(|k| *k != "backoff")
                    .map(|k| format!("profile.{name}.retries.{k} (retries run at once)")),
            );
        }
        for (i, o) in p.overrides.iter().enumerate() {
            out.extend(
                o.other
                    .keys()
                    .map(|k| format!("profile.{name}.overrides[{i}].{k} ({})", why(k))),
            );
        }
        let own = std::iter::once((format!("profile.{name}"), &p.slow_timeout));
        let overrides = p
            .overrides
            .iter()
            .enumerate()
            .map(|(i, o)| (format!("profile.{name}.overrides[{i}]"), &o.slow_timeout));
        for (at, s) in own.chain(overrides) {
            if let Some(model::SlowTimeout::Table { other, .. }) = s {
                out.extend(
                    other.keys().map(|k| {
                        format!("{at}.slow-timeout.{k} (a timed-out test is killed at once and never passes)")
                    }),
                );
            }
        }
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests;
