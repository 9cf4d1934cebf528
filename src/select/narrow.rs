//! A build of only what runs again ([`Reuse::narrowed`]).

use std::collections::BTreeSet;

use cargo_metadata::{Package, TargetKind};

use super::binary::BinaryKey;
use super::reuse::Reuse;
use crate::config::Selection;

/// A build of only what runs again ([`Reuse::narrowed`]).
#[derive(Debug)]
pub struct Narrowed {
    /// Test targets (`-p PKG --lib --test NAME --bin NAME`).
    pub tests: Option<Selection>,
    /// Libraries' doctests (`-p PKG --doc`).
    pub doctests: Option<Selection>,
}

impl Narrowed {
    /// Whether the narrowed test build holds every target of `package` that `cargo test`
    /// without a target option builds: the library's, binaries', integration tests' and
    /// benches' test targets (those with `test = true`), every binary and every example.
    pub fn builds_all_of(&self, package: &Package) -> bool {
        let Some(tests) = &self.tests else {
            return false;
        };
        if tests.package.iter().any(|p| *p != package.name.as_str()) {
            return false;
        }
        let has = |names: &[String], name: &str| names.iter().any(|n| n == name);
        package.targets.iter().all(|t| {
            let kind = |k: TargetKind| t.kind.contains(&k);
            if kind(TargetKind::CustomBuild) {
                true
            } else if kind(TargetKind::Bin) {
                has(&tests.bin, &t.name)
            } else if kind(TargetKind::Example) {
                has(&tests.example, &t.name)
            } else if kind(TargetKind::Test) {
                !t.test || has(&tests.test, &t.name)
            } else if kind(TargetKind::Bench) {
                !t.test || has(&tests.bench, &t.name)
            } else {
                // The library, of whatever crate type.
                !t.test || tests.lib
            }
        })
    }
}

impl Reuse {
    /// The test binaries (by id) of the last run's tests that must run again.
    pub fn binaries_to_run(&self) -> BTreeSet<&str> {
        self.previous
            .tests
            .iter()
            .zip(&self.reusable)
            .enumerate()
            .filter(|(i, (t, reused))| !**reused && t.outcome.ran() && !self.is_gone(*i))
            .map(|(_, (t, _))| t.binary.as_str())
            .collect()
    }

    /// The build this run needs: only the test targets (libraries, binaries, integration tests,
    /// examples and benches) and the doctests of the tests that run again (`None`: the
    /// selection's whole build, for an edit no test ran or a target of a kind not known; both
    /// parts `None`: no build at all, nothing changed and no test runs again).
    /// The packages stay the selection's: cargo unifies features over the packages a command
    /// selects, so `-p uuid` alone would build uuid without the features the workspace's other
    /// members enable for it under `--workspace`, and its feature-gated tests would vanish. The
    /// target flags apply to every package selected (`--workspace --lib --test t` builds every
    /// member's library tests, and `t` of whichever has it): a build of several packages builds
    /// more than it needs, never less, and never otherwise.
    pub fn narrowed(&self, selection: &Selection) -> Option<Narrowed> {
        let binaries = self.binaries_to_run();
        if binaries.is_empty() && self.edited() {
            // An edit no test ran: the whole build says whether it compiles.
            return None;
        }
        if !self.added.is_empty() {
            // New functions (tests) in lines added outside every function: which targets hold
            // them is known only once they are built, and their new tests must run.
            return None;
        }
        let only = || Selection {
            lib: false,
            bins: false,
            bin: Vec::new(),
            tests: false,
            test: Vec::new(),
            examples: false,
            example: Vec::new(),
            benches: false,
            bench: Vec::new(),
            all_targets: false,
            doc: false,
            no_doctests: true,
            ..selection.clone()
        };
        let (mut tests, mut doctests) = (only(), only());
        doctests.doc = true;
        doctests.no_doctests = false;
        let (mut need_tests, mut need_doctests) = (false, false);
        for id in binaries {
            let key = BinaryKey::parse(id);
            if key.is_doctest() {
                need_doctests = true;
            } else {
                need_tests = true;
            }
            match key.target {
                None => tests.lib = true,
                Some(("bin", name)) => tests.bin.push(name.to_string()),
                Some(("test", name)) => tests.test.push(name.to_string()),
                Some(("example", name)) => tests.example.push(name.to_string()),
                Some(("bench", name)) => tests.bench.push(name.to_string()),
                Some(("doctest", _)) => {}
                // A kind cargo sfl does not know: the whole build.
                Some(_) => return None,
            }
        }
        for names in [&mut tests.bin, &mut tests.test, &mut tests.example, &mut tests.bench] {
            names.sort();
            names.dedup();
        }
        Some(Narrowed {
            tests: need_tests.then_some(tests),
            doctests: need_doctests.then_some(doctests),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A package `p` with a library, a binary `cli`, integration tests `it` and `slow` (this
    /// one `test = false`), a bench `b` (not tested by default) and a build script.
    fn package() -> Package {
        let target = |name: &str, kind: &str, test: bool| {
            serde_json::json!({
                "name": name, "kind": [kind], "crate_types": ["bin"], "src_path": "/p/src/x.rs",
                "edition": "2021", "doctest": kind == "lib", "test": test,
            })
        };
        serde_json::from_value(serde_json::json!({
            "name": "p", "version": "0.1.0", "id": "path+file:///p#0.1.0", "source": null,
            "dependencies": [], "features": {}, "manifest_path": "/p/Cargo.toml",
            "targets": [
                target("p", "lib", true),
                target("cli", "bin", true),
                target("it", "test", true),
                target("slow", "test", false),
                target("b", "bench", false),
                target("build-script-build", "custom-build", false),
            ],
        }))
        .unwrap()
    }

    fn narrowed(lib: bool, bin: &[&str], test: &[&str], example: &[&str]) -> Narrowed {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect();
        Narrowed {
            tests: Some(Selection {
                package: vec!["p".into()],
                lib,
                bin: names(bin),
                test: names(test),
                example: names(example),
                ..Selection::default()
            }),
            doctests: None,
        }
    }

    #[test]
    fn a_narrowed_build_holds_all_of_a_package_only_with_each_target_cargo_test_builds() {
        let p = package();
        assert!(narrowed(true, &["cli"], &["it"], &[]).builds_all_of(&p));
        // The library's tests, a binary, an integration test left out: the whole build is more.
        assert!(!narrowed(false, &["cli"], &["it"], &[]).builds_all_of(&p));
        assert!(!narrowed(true, &[], &["it"], &[]).builds_all_of(&p));
        assert!(!narrowed(true, &["cli"], &[], &[]).builds_all_of(&p));
        // Examples are built by `cargo test` whether they have tests or not.
        let mut with_example = package();
        let mut example = with_example.targets[1].clone();
        example.name = "demo".into();
        example.kind = vec![TargetKind::Example];
        with_example.targets.push(example);
        assert!(!narrowed(true, &["cli"], &["it"], &[]).builds_all_of(&with_example));
        assert!(narrowed(true, &["cli"], &["it"], &["demo"]).builds_all_of(&with_example));
        // Another package's targets in the build: not this package's alone.
        let mut other = narrowed(true, &["cli"], &["it"], &[]);
        other.tests.as_mut().unwrap().package.push("q".into());
        assert!(!other.builds_all_of(&p));
        // No test target to build.
        assert!(
            !Narrowed {
                tests: None,
                doctests: None
            }
            .builds_all_of(&p)
        );
    }
}
