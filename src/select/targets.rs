//! Target files added or removed whole since the last run: a file where cargo finds a target by
//! itself ([`new_target_root`]), and the integration tests and benches removed whole
//! ([`gone_targets`]), whose tests are gone while nothing else could feel the removal.

use std::collections::{BTreeSet, HashSet};
use std::path::Path;

use super::binary::BinaryKey;
use crate::spectra::{Snapshot, Spectra};

/// What went with the targets removed since the last run.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Gone {
    /// The removed files: each target's root and the files of its directory.
    pub files: BTreeSet<String>,
    /// The test binaries (by id) of the last run that were built from them.
    pub binaries: BTreeSet<String>,
}

/// The integration tests and benches of the last run (`tests/x.rs`, `tests/x/main.rs` with
/// the rest of `tests/x/`, the same under `benches/`) whose files are all gone now, when that is
/// all a removal is: the package's manifest is unchanged (an edit of it runs every test),
/// exactly one package of the last run has a binary of that name and kind, and no test of
/// another binary ran a line of those files. Such a target is a crate of its own that no other
/// target sees (unlike a binary, whose program tests may run, or an example, which they may
/// build). Files removed otherwise are left out, and their removal runs every test.
pub(super) fn gone_targets(then: &Snapshot, now: &Snapshot, root: &Path, previous: &Spectra) -> Gone {
    let removed: HashSet<&str> = then
        .files
        .keys()
        .filter(|f| !now.files.contains_key(*f) && !root.join(f).exists())
        .map(String::as_str)
        .collect();
    let mut gone = Gone::default();
    for &file in &removed {
        let Some((kind, name, dir)) = target_of(file, then) else {
            continue;
        };
        // A target in a directory goes whole, or it is edited, not removed.
        let files: Vec<&str> = match &dir {
            Some(d) => then
                .files
                .keys()
                .map(String::as_str)
                .filter(|f| f.starts_with(d.as_str()))
                .collect(),
            None => vec![file],
        };
        if files.iter().any(|f| !removed.contains(f)) {
            continue;
        }
        let Some(binary) = binary_of(previous, kind, name) else {
            continue;
        };
        if binary.is_some_and(|b| ran_elsewhere(previous, &files, b)) {
            continue;
        }
        gone.files.extend(files.iter().map(|f| f.to_string()));
        gone.binaries.extend(binary.map(str::to_string));
    }
    gone
}

/// Whether `file` is where cargo finds a target of a package of `now` by itself: an
/// integration test, example, bench or binary (`tests/x.rs`, `tests/x/main.rs`, `examples/…`,
/// `benches/…`, `src/bin/…`), a crate of its own. Another file reaches it only through a
/// `mod` or `include!` of its own, an edit judged apart.
pub(super) fn new_target_root(file: &str, now: &Snapshot) -> bool {
    let is_package = |dir: &str| {
        let manifest = if dir.is_empty() {
            "Cargo.toml".to_string()
        } else {
            format!("{dir}/Cargo.toml")
        };
        now.files.contains_key(&manifest)
    };
    let parts: Vec<&str> = file.split('/').collect();
    let rs = |name: &str| name.ends_with(".rs") && name.len() > 3;
    let at = |kind: &[&str], rest: usize| {
        let n = parts.len();
        n >= kind.len() + rest
            && parts[n - rest - kind.len()..n - rest] == *kind
            && is_package(&parts[..n - rest - kind.len()].join("/"))
    };
    let Some(&last) = parts.last() else { return false };
    [&["tests"][..], &["examples"], &["benches"], &["src", "bin"]]
        .iter()
        .any(|kind| (rs(last) && at(kind, 1)) || (last == "main.rs" && parts.len() >= 2 && at(kind, 2)))
}

/// The kind (as binary ids name it), the name and, for `KIND/NAME/main.rs`, the directory
/// (`…/KIND/NAME/`) of the integration test or bench whose root `file` was in `then`.
fn target_of<'a>(file: &'a str, then: &Snapshot) -> Option<(&'static str, &'a str, Option<String>)> {
    if !new_target_root(file, then) {
        return None;
    }
    let parts: Vec<&str> = file.split('/').collect();
    let n = parts.len();
    let (kind_at, name, dir) = if parts[n - 1] == "main.rs" {
        (n - 3, parts[n - 2], Some(format!("{}/", parts[..n - 1].join("/"))))
    } else {
        (n - 2, parts[n - 1].strip_suffix(".rs")?, None)
    };
    let kind = match parts[kind_at] {
        "tests" => "test",
        "benches" => "bench",
        _ => return None,
    };
    Some((kind, name, dir))
}

/// The one binary of the last run that is target `name` of `kind`: `Some(None)` when no test
/// of the last run was in one (a bench without tests), `None` when several packages have one.
fn binary_of<'a>(previous: &'a Spectra, kind: &str, name: &str) -> Option<Option<&'a str>> {
    let ids: BTreeSet<&str> = previous
        .tests
        .iter()
        .map(|t| t.binary.as_str())
        .filter(|id| BinaryKey::parse(id).target == Some((kind, name)))
        .collect();
    match ids.len() {
        0 => Some(None),
        1 => Some(ids.into_iter().next()),
        _ => None,
    }
}

/// Whether a test of a binary other than `binary` ran a line of `files`.
fn ran_elsewhere(previous: &Spectra, files: &[&str], binary: &str) -> bool {
    previous
        .units
        .iter()
        .zip(&previous.coverage)
        .filter(|(u, _)| files.contains(&u.file.as_str()))
        .any(|(_, tests)| tests.iter().any(|t| previous.tests[t].binary != binary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::{FileState, Outcome, TestRecord, Unit, UnitId};

    fn snapshot(files: &[&str]) -> Snapshot {
        Snapshot {
            files: files
                .iter()
                .map(|f| (f.to_string(), FileState::digest(f.as_bytes())))
                .collect(),
            ..Snapshot::default()
        }
    }

    fn test(binary: &str) -> TestRecord {
        TestRecord::new(binary, "t", Outcome::Passed)
    }

    fn unit(file: &str) -> Unit {
        Unit {
            file: file.into(),
            line: 1,
        }
    }

    /// Tests of `p` (unit tests), `p::a` and `p::b`; `tests/a.rs` line 1 run by `p::a`'s test,
    /// `tests/b/main.rs` line 1 by `p::b`'s and by the unit test's.
    fn previous() -> Spectra {
        let units = vec![unit("tests/a.rs"), unit("tests/b/main.rs")];
        let tests = vec![test("p"), test("p::a"), test("p::b")];
        Spectra::from_tests(
            "/w".into(),
            tests,
            units,
            &[vec![UnitId(1)], vec![UnitId(0)], vec![UnitId(1)]],
        )
    }

    #[test]
    fn a_removed_integration_test_takes_only_its_own_binary() {
        let root = Path::new("/nonexistent/sfl-removed");
        let then = snapshot(&["Cargo.toml", "src/lib.rs", "tests/a.rs", "tests/c.rs"]);
        let now = snapshot(&["Cargo.toml", "src/lib.rs", "tests/c.rs"]);
        let gone = gone_targets(&then, &now, root, &previous());
        assert_eq!(gone.files, BTreeSet::from(["tests/a.rs".to_string()]));
        assert_eq!(gone.binaries, BTreeSet::from(["p::a".to_string()]));
        // `tests/c.rs` had no test in the last run: gone, with no binary.
        let now = snapshot(&["Cargo.toml", "src/lib.rs", "tests/a.rs"]);
        let gone = gone_targets(&then, &now, root, &previous());
        assert_eq!(gone.files, BTreeSet::from(["tests/c.rs".to_string()]));
        assert!(gone.binaries.is_empty());
    }

    #[test]
    fn a_removal_other_tests_could_feel_is_not_taken() {
        let root = Path::new("/nonexistent/sfl-removed");
        // `tests/b/main.rs` was run by the unit tests too (an `include!`, say).
        let then = snapshot(&["Cargo.toml", "tests/b/main.rs", "tests/b/util.rs"]);
        let now = snapshot(&["Cargo.toml"]);
        assert_eq!(gone_targets(&then, &now, root, &previous()), Gone::default());
        // A directory target with a file left is edited, not removed.
        let mut spectra = previous();
        spectra.coverage[1] = crate::bitset::BitSet::new(3);
        let now = snapshot(&["Cargo.toml", "tests/b/util.rs"]);
        assert_eq!(gone_targets(&then, &now, root, &spectra), Gone::default());
        // Gone whole: both files.
        let now = snapshot(&["Cargo.toml"]);
        let gone = gone_targets(&then, &now, root, &spectra);
        assert_eq!(gone.files.len(), 2);
        // A module of a target (not its root), and a binary, are not targets removed.
        let then = snapshot(&["Cargo.toml", "tests/common/mod.rs", "src/bin/cli.rs"]);
        assert_eq!(gone_targets(&then, &now, root, &previous()), Gone::default());
        // Two packages with a test target of that name: which one went is not known.
        let mut spectra = previous();
        spectra.tests[0].binary = "q::a".into();
        let then = snapshot(&["Cargo.toml", "tests/a.rs"]);
        assert_eq!(gone_targets(&then, &now, root, &spectra), Gone::default());
    }
}
