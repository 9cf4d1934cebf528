//! The typed model of `.config/nextest.toml` (the parts cargo sfl honours); every other key is
//! kept by name in `other`, so it can be named in a warning rather than silently dropped.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// A value in the configuration that cargo sfl cannot use; the caller says which key held it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("0 threads (must be a positive or negative number)")]
    ZeroThreads,
    #[error("`{0}` (expected a number or \"num-cpus\")")]
    Threads(String),
    #[error("threads-required = 0 (must be at least 1)")]
    ZeroThreadsRequired,
    #[error("threads-required = \"{0}\" (expected a number, \"num-cpus\" or \"num-test-threads\")")]
    ThreadsRequired(String),
    #[error("leak-timeout result = \"{0}\" (expected \"pass\" or \"fail\")")]
    LeakResult(String),
    #[error("`{0}` is not a duration (e.g. \"60s\", \"1m 30s\", \"500ms\")")]
    Duration(String),
    #[error("an override needs `filter` or `platform`")]
    OverrideMatchesNothing,
    #[error("test-group `{0}` is not defined under [test-groups]")]
    UnknownGroup(String),
}

/// The whole file.
#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "kebab-case")]
pub struct File {
    #[serde(default)]
    pub profile: BTreeMap<String, Profile>,
    #[serde(default)]
    pub test_groups: BTreeMap<String, Group>,
    #[serde(flatten)]
    pub other: BTreeMap<String, toml::Value>,
}

/// `[profile.NAME]`.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct Profile {
    pub inherits: Option<String>,
    pub default_filter: Option<String>,
    pub retries: Option<Retries>,
    pub test_threads: Option<Threads>,
    pub threads_required: Option<ThreadsRequired>,
    pub slow_timeout: Option<SlowTimeout>,
    pub leak_timeout: Option<LeakTimeout>,
    #[serde(default)]
    pub overrides: Vec<Override>,
    pub junit: Option<Junit>,
    #[serde(flatten)]
    pub other: BTreeMap<String, toml::Value>,
}

/// `[profile.NAME.junit]`: where nextest writes its JUnit report (`path`, under
/// `<target-dir>/nextest/<profile>/`); its other keys (`report-name`, stored output) are kept
/// by name.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct Junit {
    pub path: Option<String>,
    #[serde(flatten)]
    pub other: BTreeMap<String, toml::Value>,
}

/// `[[profile.NAME.overrides]]`.
#[derive(Deserialize, Default, Debug, Clone)]
#[serde(rename_all = "kebab-case")]
pub struct Override {
    pub filter: Option<String>,
    pub platform: Option<Platform>,
    pub default_filter: Option<String>,
    pub test_group: Option<String>,
    pub retries: Option<Retries>,
    pub threads_required: Option<ThreadsRequired>,
    pub slow_timeout: Option<SlowTimeout>,
    pub leak_timeout: Option<LeakTimeout>,
    #[serde(flatten)]
    pub other: BTreeMap<String, toml::Value>,
}

/// `[test-groups.NAME]`.
#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Group {
    pub max_threads: Threads,
}

/// `retries = 2` or `retries = { backoff = "fixed", count = 2, delay = "1s" }`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum Retries {
    Count(u32),
    Policy {
        count: u32,
        #[serde(flatten)]
        other: BTreeMap<String, toml::Value>,
    },
}

impl Retries {
    pub fn count(&self) -> u32 {
        match self {
            Retries::Count(n) | Retries::Policy { count: n, .. } => *n,
        }
    }
}

/// `test-threads` and a group's `max-threads`: a number (negative: that many fewer than the
/// CPUs) or `"num-cpus"`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum Threads {
    Count(i64),
    Named(String),
}

impl Threads {
    pub fn resolve(&self, cpus: usize) -> Result<usize, ValueError> {
        match self {
            Threads::Count(0) => Err(ValueError::ZeroThreads),
            Threads::Count(n) if *n > 0 => Ok(*n as usize),
            Threads::Count(n) => Ok((cpus as i64 + n).max(1) as usize),
            Threads::Named(s) if s == "num-cpus" => Ok(cpus),
            Threads::Named(s) => Err(ValueError::Threads(s.clone())),
        }
    }
}

/// `threads-required`: a number, `"num-cpus"` or `"num-test-threads"`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum ThreadsRequired {
    Count(usize),
    Named(String),
}

impl ThreadsRequired {
    /// Slots a test takes out of `test_threads`, as nextest caps it.
    pub fn resolve(&self, cpus: usize, test_threads: usize) -> Result<usize, ValueError> {
        let n = match self {
            ThreadsRequired::Count(0) => return Err(ValueError::ZeroThreadsRequired),
            ThreadsRequired::Count(n) => *n,
            ThreadsRequired::Named(s) if s == "num-cpus" => cpus,
            ThreadsRequired::Named(s) if s == "num-test-threads" => test_threads,
            ThreadsRequired::Named(s) => return Err(ValueError::ThreadsRequired(s.clone())),
        };
        Ok(n.clamp(1, test_threads.max(1)))
    }
}

/// `slow-timeout = "60s"` or `{ period = "60s", terminate-after = 2, … }`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum SlowTimeout {
    Period(String),
    Table {
        period: String,
        #[serde(rename = "terminate-after")]
        terminate_after: Option<u32>,
        #[serde(flatten)]
        other: BTreeMap<String, toml::Value>,
    },
}

impl SlowTimeout {
    /// When the test is killed: `period × terminate-after`; `None` when nextest would only
    /// call it slow and let it run.
    pub fn terminate(&self) -> Result<Option<Duration>, ValueError> {
        match self {
            SlowTimeout::Period(p) => parse_duration(p).map(|_| None),
            SlowTimeout::Table {
                period,
                terminate_after,
                ..
            } => {
                let p = parse_duration(period)?;
                Ok(terminate_after.map(|n| p * n))
            }
        }
    }
}

/// `leak-timeout = "100ms"` or `{ period = "100ms", result = "fail" }`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum LeakTimeout {
    Period(String),
    Table { period: String, result: Option<String> },
}

/// How long to wait for a test's leftover processes, and whether leaving them fails it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leak {
    pub period: Duration,
    pub fail: bool,
}

impl LeakTimeout {
    pub fn resolve(&self) -> Result<Leak, ValueError> {
        match self {
            LeakTimeout::Period(p) => Ok(Leak {
                period: parse_duration(p)?,
                fail: false,
            }),
            LeakTimeout::Table { period, result } => Ok(Leak {
                period: parse_duration(period)?,
                fail: match result.as_deref() {
                    None | Some("pass") => false,
                    Some("fail") => true,
                    Some(other) => return Err(ValueError::LeakResult(other.to_string())),
                },
            }),
        }
    }
}

/// An override's `platform`: a `cfg()` expression or triple, or `{ host, target }`.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub enum Platform {
    Spec(String),
    Split {
        host: Option<String>,
        target: Option<String>,
    },
}

/// A duration as nextest writes them (humantime): `"60s"`, `"1m 30s"`, `"500ms"`, `"2h"`.
pub fn parse_duration(s: &str) -> Result<Duration, ValueError> {
    let bad = || ValueError::Duration(s.to_string());
    let mut total = Duration::ZERO;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = rest[digits..].trim_start();
        let unit_len = rest.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ns" | "nsec" => Duration::from_nanos(n),
            "us" | "usec" => Duration::from_micros(n),
            "ms" | "msec" => Duration::from_millis(n),
            "s" | "sec" | "secs" | "second" | "seconds" => Duration::from_secs(n),
            "m" | "min" | "mins" | "minute" | "minutes" => Duration::from_secs(n * 60),
            "h" | "hr" | "hour" | "hours" => Duration::from_secs(n * 3600),
            _ => return Err(bad()),
        };
        total += unit;
        rest = rest[unit_len..].trim_start();
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_nextest_writes_them() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("60").is_err());
        assert!(parse_duration("ten s").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn slow_timeout_kills_only_with_terminate_after() {
        let t: Profile = toml::from_str("slow-timeout = { period = \"2s\", terminate-after = 3 }").unwrap();
        assert_eq!(t.slow_timeout.unwrap().terminate(), Ok(Some(Duration::from_secs(6))));
        let t: Profile = toml::from_str("slow-timeout = \"2s\"").unwrap();
        assert_eq!(t.slow_timeout.unwrap().terminate(), Ok(None));
    }

    #[test]
    fn threads_resolve_against_the_cpus_and_are_capped() {
        assert_eq!(Threads::Count(-1).resolve(4), Ok(3));
        assert_eq!(Threads::Count(-9).resolve(4), Ok(1));
        assert_eq!(Threads::Named("num-cpus".into()).resolve(4), Ok(4));
        assert!(Threads::Count(0).resolve(4).is_err());
        assert_eq!(ThreadsRequired::Count(8).resolve(4, 2), Ok(2));
        assert_eq!(ThreadsRequired::Named("num-test-threads".into()).resolve(4, 3), Ok(3));
    }

    #[test]
    fn unknown_keys_are_kept_by_name() {
        let f: File = toml::from_str(
            "store.dir = \"x\"\n[profile.default]\nfail-fast = false\nretries = { backoff = \"fixed\", count = 2, delay = \"1s\" }\n[[profile.default.overrides]]\nfilter = \"all()\"\npriority = 3\n",
        )
        .unwrap();
        assert!(f.other.contains_key("store"));
        let p = &f.profile["default"];
        assert!(p.other.contains_key("fail-fast"));
        assert_eq!(p.retries.as_ref().unwrap().count(), 2);
        assert!(p.overrides[0].other.contains_key("priority"));
    }
}
