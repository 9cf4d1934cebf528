//! A build of only what runs again ([`Reuse::narrowed`]).

use std::collections::BTreeSet;

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

impl Reuse {
    /// The test binaries (by id) of the last run's tests that must run again.
    pub fn binaries_to_run(&self) -> BTreeSet<&str> {
        self.previous
            .tests
            .iter()
            .zip(&self.reusable)
            .filter(|(t, reused)| !**reused && t.outcome.ran())
            .map(|(t, _)| t.binary.as_str())
            .collect()
    }

    /// The build this run needs: only the test targets (libraries, binaries, integration tests,
    /// examples and benches) and the doctests of the tests that run again (`None`: the
    /// selection's whole build, for an edit no test ran or a target of a kind not known; both
    /// parts `None`: no build at all, nothing changed and no test runs again).
    /// cargo applies target flags to every package given (`-p a -p b --lib --test t` builds
    /// both libraries' tests, and `t` of whichever has it): tests of several packages build a
    /// little more than they need, never less.
    pub fn narrowed(&self, selection: &Selection) -> Option<Narrowed> {
        let binaries = self.binaries_to_run();
        if binaries.is_empty() && self.edited() {
            // An edit no test ran: the whole build says whether it compiles.
            return None;
        }
        let only = |package: Vec<String>| Selection {
            package,
            workspace: false,
            exclude: Vec::new(),
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
        let (mut tests, mut doctests) = (only(Vec::new()), only(Vec::new()));
        doctests.doc = true;
        doctests.no_doctests = false;
        for id in binaries {
            let key = BinaryKey::parse(id);
            let into = if key.is_doctest() { &mut doctests } else { &mut tests };
            if !into.package.iter().any(|p| p == key.package) {
                into.package.push(key.package.to_string());
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
            tests: (!tests.package.is_empty()).then_some(tests),
            doctests: (!doctests.package.is_empty()).then_some(doctests),
        })
    }
}
