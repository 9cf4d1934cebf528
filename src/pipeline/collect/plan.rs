//! Which tests to run: every binary's listing, filtered by name, ignored tests set aside, in
//! one canonical order, and the shard's share of them.

use crate::config::{Ignored, NameFilter, Partition};
use crate::list::Listing;
use crate::run::Job;
use crate::spectra::{Outcome, TestRecord};
use crate::workspace::{TestBinary, Workspace};

/// The jobs to run, and the tests that are recorded without running.
#[derive(Debug)]
pub struct Plan {
    /// In canonical order (binary id, name).
    pub jobs: Vec<Job>,
    /// Tests recorded without running, in canonical order: #[ignore]d tests (no
    /// `--include-ignored`), and doctests whose outcome the build decided.
    pub recorded: Vec<TestRecord>,
    /// How many jobs the filter selected before the partition took its share.
    pub selected: usize,
}

/// Plans the jobs: `listings[b]` lists `binaries[b]`; a test runs when `filter` takes its name
/// and `selects(b, name)` (the filtersets) takes it, as nextest intersects the two; `#[ignore]`d
/// tests as `ignored_tests` says (with [`Ignored::Only`], only they: the others, and a whole
/// binary's `main`, are filtered out as libtest's `--ignored` does).
pub fn plan(
    binaries: &[TestBinary],
    listings: Vec<Listing>,
    filter: &NameFilter,
    selects: &dyn Fn(usize, &str) -> bool,
    ignored_tests: Ignored,
    partition: Option<&Partition>,
) -> Plan {
    let mut jobs = Vec::new();
    let mut ignored = Vec::new();
    let only_ignored = ignored_tests == Ignored::Only;
    for (b, listing) in listings.into_iter().enumerate() {
        let matches = |name: &str| filter.matches(name) && selects(b, name);
        if !only_ignored {
            ignored.extend(listing.recorded.into_iter().filter(|r| matches(&r.name)));
        }
        if listing.whole {
            if matches("main") && !only_ignored {
                jobs.push(Job {
                    binary: b,
                    name: None,
                    ignored: false,
                });
            }
            continue;
        }
        for t in listing.tests.iter().filter(|t| matches(t)) {
            let is_ignored = listing.ignored.contains(t);
            if only_ignored && !is_ignored {
                continue;
            }
            if is_ignored && ignored_tests == Ignored::Skip {
                ignored.push(record(&binaries[b].id, t, Outcome::Ignored));
                continue;
            }
            jobs.push(Job {
                binary: b,
                name: Some(t.clone()),
                ignored: is_ignored,
            });
        }
    }
    // One canonical order (binary, name), so shards merge into exactly the unsharded matrix.
    jobs.sort_by(|a, b| {
        let id = |j: &Job| (binaries[j.binary].id.clone(), j.name.clone());
        id(a).cmp(&id(b))
    });
    ignored.sort_by(crate::spectra::test_order);
    let selected = jobs.len();
    if let Some(p) = partition {
        let mut index = 0;
        jobs.retain(|j| {
            let id = format!("{} {}", binaries[j.binary].id, j.name.as_deref().unwrap_or("main"));
            index += 1;
            p.contains(index - 1, &id)
        });
    }
    Plan {
        jobs,
        recorded: ignored,
        selected,
    }
}

/// A test's record before (or without) running it.
/// How long each test took last time (`target/sfl/durations.json`), keyed by `(binary, name)`
/// as the spectra name them.
pub type Durations = std::collections::HashMap<(String, String), u64>;

/// Where the tests' last durations are kept.
pub fn durations_path(ws: &Workspace) -> std::path::PathBuf {
    ws.target_dir.join("durations.json")
}

/// The durations of the last run saved in `path`; empty when there is none (or it is unreadable:
/// they only order the tests).
pub fn load_durations(path: &std::path::Path) -> Durations {
    let rows: Vec<(String, String, u64)> = std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    rows.into_iter().map(|(b, n, ms)| ((b, n), ms)).collect()
}

/// Saves the tests' durations for the next run's order.
pub fn save_durations(path: &std::path::Path, tests: &[TestRecord]) -> std::io::Result<()> {
    let rows: Vec<(&str, &str, u64)> = tests
        .iter()
        .filter(|t| t.outcome.ran())
        .map(|t| (t.binary.as_str(), t.name.as_str(), t.duration_ms))
        .collect();
    std::fs::write(path, serde_json::to_vec(&rows)?)
}

/// Starts the longest tests of the last run first: up to `4 * slots` of those that took at
/// least 10 ms, longest first, then the rest in their order. A long test started last runs
/// alone while the other slots idle (regex-syntax's longest test, a fifth of all test time,
/// is its last); started first, it overlaps the short ones.
pub fn longest_first(todo: &mut [usize], last: impl Fn(usize) -> Option<u64>, slots: usize) {
    let mut long: Vec<(u64, usize)> = todo
        .iter()
        .enumerate()
        .filter_map(|(k, &i)| last(i).filter(|&ms| ms >= 10).map(|ms| (ms, k)))
        .collect();
    long.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    long.truncate(4 * slots.max(1));
    let mut first: Vec<bool> = vec![false; todo.len()];
    for &(_, k) in &long {
        first[k] = true;
    }
    let rest = todo.iter().enumerate().filter(|&(k, _)| !first[k]).map(|(_, &i)| i);
    let order: Vec<usize> = long.iter().map(|&(_, k)| todo[k]).chain(rest).collect();
    todo.copy_from_slice(&order);
}

pub(crate) fn record(binary: &str, name: &str, outcome: Outcome) -> TestRecord {
    TestRecord::new(binary, name, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_tests_of_the_last_run_start_first() {
        let last = |i: usize| {
            [Some(5), Some(300), None, Some(40), Some(300), Some(12), Some(900)]
                .get(i)
                .copied()
                .flatten()
        };
        let mut todo: Vec<usize> = (0..7).collect();
        longest_first(&mut todo, last, 1);
        // Four at most with one slot: 900, then the two 300s in their order, then 40.
        assert_eq!(todo, vec![6, 1, 4, 3, 0, 2, 5]);
        let mut todo: Vec<usize> = (0..7).collect();
        longest_first(&mut todo, last, 2);
        assert_eq!(todo, vec![6, 1, 4, 3, 5, 0, 2]);
        let mut none: Vec<usize> = vec![2, 0];
        longest_first(&mut none, |_| None, 2);
        assert_eq!(none, vec![2, 0]);
    }

    #[test]
    fn durations_round_trip_and_a_missing_file_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("durations.json");
        assert!(load_durations(&path).is_empty());
        let mut t = record("pkg", "a", Outcome::Passed);
        t.duration_ms = 42;
        save_durations(&path, &[t, record("pkg", "skipped", Outcome::Ignored)]).unwrap();
        let d = load_durations(&path);
        assert_eq!(d.len(), 1);
        assert_eq!(d[&("pkg".to_string(), "a".to_string())], 42);
    }
    use std::path::PathBuf;

    fn binary(id: &str) -> TestBinary {
        TestBinary {
            id: id.into(),
            kind: "test".into(),
            target: id.into(),
            path: PathBuf::from(id),
            package: 0,
            custom_harness: false,
            env: Vec::new(),
            runner: Vec::new(),
            doctests: None,
        }
    }

    fn listing(tests: &[&str], ignored: &[&str]) -> Listing {
        Listing {
            tests: tests.iter().map(|t| t.to_string()).collect(),
            ignored: ignored.iter().map(|t| t.to_string()).collect(),
            ..Listing::default()
        }
    }

    fn t_filter() -> NameFilter {
        NameFilter::substring(Some("t".into()))
    }

    fn names(plan: &Plan, bins: &[TestBinary]) -> Vec<String> {
        plan.jobs
            .iter()
            .map(|j| format!("{} {}", bins[j.binary].id, j.name.as_deref().unwrap_or("main")))
            .collect()
    }

    #[test]
    fn jobs_are_filtered_sorted_and_ignored_tests_set_aside() {
        let bins = [binary("z"), binary("a"), binary("h")];
        let listings = vec![
            listing(&["t2", "t1", "slow_t"], &["slow_t"]),
            listing(&["t3", "other"], &[]),
            Listing::whole(),
        ];
        let plan = plan(&bins, listings, &t_filter(), &|_, _| true, Ignored::Skip, None);
        assert_eq!(names(&plan, &bins), ["a other", "a t3", "z t1", "z t2"]);
        // "slow_t" matches the filter too; "main" (the whole binary) does not contain "t".
        assert_eq!(plan.recorded.len(), 1);
        assert_eq!(
            (plan.recorded[0].binary.as_str(), plan.recorded[0].name.as_str()),
            ("z", "slow_t")
        );
        assert_eq!(plan.recorded[0].outcome, Outcome::Ignored);
        assert_eq!(plan.selected, 4);
    }

    #[test]
    fn included_ignored_tests_run_and_whole_binaries_are_main() {
        let bins = [binary("b"), binary("h")];
        let listings = vec![listing(&["t"], &["t"]), Listing::whole()];
        let plan = plan(
            &bins,
            listings,
            &NameFilter::default(),
            &|_, _| true,
            Ignored::Include,
            None,
        );
        assert_eq!(names(&plan, &bins), ["b t", "h main"]);
        assert!(plan.jobs[0].ignored && plan.recorded.is_empty());
    }

    #[test]
    fn only_ignored_tests_run_with_ignored() {
        let bins = [binary("b"), binary("h")];
        let listings = vec![listing(&["t", "u", "slow"], &["slow", "u"]), Listing::whole()];
        let plan = plan(
            &bins,
            listings,
            &NameFilter::default(),
            &|_, _| true,
            Ignored::Only,
            None,
        );
        assert_eq!(names(&plan, &bins), ["b slow", "b u"]);
        assert!(plan.jobs.iter().all(|j| j.ignored) && plan.recorded.is_empty());
    }

    #[test]
    fn names_are_taken_as_libtest_takes_them() {
        let f = |patterns: &[&str], exact: bool, skip: &[&str]| NameFilter {
            patterns: patterns.iter().map(|s| s.to_string()).collect(),
            exact,
            skip: skip.iter().map(|s| s.to_string()).collect(),
        };
        let any = f(&[], false, &[]);
        assert!(any.matches("a::b") && any.is_empty());
        let two = f(&["parse", "lex"], false, &[]);
        assert!(two.matches("tests::parse_one") && two.matches("lexer") && !two.matches("eval"));
        let exact = f(&["tests::parse"], true, &[]);
        assert!(exact.matches("tests::parse") && !exact.matches("tests::parse_one"));
        let skip = f(&["tests"], false, &["slow"]);
        assert!(skip.matches("tests::quick") && !skip.matches("tests::slow_one"));
        let skip_exact = f(&[], true, &["tests::slow"]);
        assert!(skip_exact.matches("tests::slow_one") && !skip_exact.matches("tests::slow"));
        assert_eq!(
            f(&["a", "b"], true, &["c"]).to_string(),
            "`a` or `b`, skipping `c` (exact names)"
        );
    }

    #[test]
    fn shards_take_their_share_of_the_canonical_order() {
        let bins = [binary("b")];
        let all = ["t0", "t1", "t2", "t3", "t4"];
        let shard = |k: &str| {
            let p = Partition::parse(k).unwrap();
            let plan = plan(
                &bins,
                vec![listing(&all, &[])],
                &NameFilter::default(),
                &|_, _| true,
                Ignored::Skip,
                Some(&p),
            );
            assert_eq!(plan.selected, 5);
            names(&plan, &bins)
        };
        assert_eq!(shard("count:1/2"), ["b t0", "b t2", "b t4"]);
        assert_eq!(shard("count:2/2"), ["b t1", "b t3"]);
    }

    #[test]
    fn filtersets_intersect_the_name_filter_and_cover_ignored_tests() {
        let bins = [binary("a"), binary("b")];
        let listings = vec![listing(&["t1", "t2", "x"], &["t2"]), listing(&["t1"], &[])];
        // The filterset takes binary a's tests only; the name filter takes names with "t".
        let plan = plan(&bins, listings, &t_filter(), &|b, _| b == 0, Ignored::Skip, None);
        assert_eq!(names(&plan, &bins), ["a t1"]);
        assert_eq!(plan.recorded.len(), 1, "a's ignored t2 is recorded as ignored");
        assert_eq!(plan.recorded[0].name, "t2");
    }
}
