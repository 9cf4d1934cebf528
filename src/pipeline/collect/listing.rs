//! Listing every test binary's tests, with its counter updates made plain first and its
//! coverage map and block table read meanwhile.

use std::path::Path;

use super::session::Session;
use crate::list::{self, Listing};
use crate::ui;
use crate::workspace::TestBinary;

impl Session<'_> {
    /// Lists every binary's tests (their counter updates made plain first, [`relax_counters`]),
    /// and reads its coverage map and block table meanwhile (once per binary). A binary that
    /// cannot be listed is run as one test, with a warning.
    pub(super) fn list_all(&self) -> Vec<Listing> {
        self.relax_all();
        let n = self.built.tests.len();
        let mut listings: Vec<Option<Result<Listing, list::ListError>>> = (0..n).map(|_| None).collect();
        let listing_bar = ui::spinner("Listing", format!("0/{n} test binaries"));
        let mut listed = 0;
        crate::run::parallel(
            &self.built.tests,
            self.jobs,
            |i, bin| self.list_reading(i, bin),
            |i, r| {
                listed += 1;
                listing_bar.set_message(format!("{listed}/{n} test binaries (and their coverage maps)"));
                listings[i] = Some(r);
            },
        );
        listing_bar.finish_and_clear();
        listings
            .into_iter()
            .enumerate()
            .map(|(b, listing)| self.runnable(b, listing.expect("every binary listed")))
            .collect()
    }

    /// Makes every binary's counter updates plain. They are rewritten before any listing
    /// starts: a process forked while an executable is being written holds it open for writing
    /// until it execs, and running that executable then fails ("text file busy"). A merged
    /// doctest runner runs its doctest on its main thread: relaxed too. Standalone doctests are
    /// many small executables, rarely CPU-bound: left atomic.
    fn relax_all(&self) {
        crate::run::parallel(
            &self.built.tests,
            self.jobs,
            |_, bin| match &bin.doctests {
                None => relax_counters(&bin.path),
                Some(suite) => {
                    let mut runners: Vec<&Path> = suite
                        .tests
                        .iter()
                        .filter(|t| t.index.is_some())
                        .map(|t| t.exe.as_path())
                        .collect();
                    runners.sort_unstable();
                    runners.dedup();
                    runners.into_iter().for_each(relax_counters);
                }
            },
            |_, ()| {},
        );
    }

    /// Lists binary `i`'s tests, reading its coverage map and (unless it is a standalone
    /// doctest's) its block table meanwhile. Errors reading either are reported per test when
    /// its profiles are decoded.
    fn list_reading(&self, i: usize, bin: &TestBinary) -> Result<Listing, list::ListError> {
        std::thread::scope(|s| {
            // The block table (DWARF) is the slowest to read. With no more binaries than
            // slots it is read on a thread of its own (a slot would idle once its binary
            // is done, and binaries differ in size: a library's unit tests and its
            // merged doctests, say); otherwise the binaries are read `jobs` at a time,
            // one thing after another, which bounds the memory (itertools: 229 MiB
            // peak, against 313 with a thread each).
            let beside = self.built.tests.len() <= self.jobs;
            // A standalone doctest's executable runs that doctest alone: its blocks are
            // read once it has run, for the functions it ran (`Collector::decode`).
            let one_doctest = bin
                .doctests
                .as_ref()
                .is_some_and(|d| d.tests.iter().filter(|t| t.exe == bin.path).count() == 1);
            let blocks = self.edges.filter(|_| !one_doctest);
            let exe = self.decoder_index(&bin.path, i);
            let edges = blocks.filter(|_| beside).map(|e| s.spawn(move || e.prepare(exe)));
            let list_dir = self.scratch.join(format!("list{i}"));
            let _ = std::fs::create_dir_all(&list_dir);
            let r = list::list(
                bin,
                &self.ws.members[bin.package],
                &self.ws.build_dir,
                &self.profile,
                &list_dir,
                self.timeout,
            );
            let _ = std::fs::remove_dir_all(&list_dir);
            let _ = self.coverage.binary(exe);
            match (edges, blocks) {
                (Some(thread), _) => thread.join().expect("reading a block table"),
                (None, Some(e)) => e.prepare(exe),
                (None, None) => {}
            }
            r
        })
    }

    /// What is run of binary `b`, given its listing. Only a `harness = false` target may not
    /// understand `--list`: it is run once. A libtest binary that cannot list its tests cannot
    /// run them either.
    fn runnable(&self, b: usize, listing: Result<Listing, list::ListError>) -> Listing {
        let binary = &self.built.tests[b];
        match listing {
            Ok(l) => l,
            Err(e) if binary.custom_harness => {
                ui::warn(format!(
                    "cannot list the tests of {}: {e}; running it as one test",
                    binary.id
                ));
                Listing::whole()
            }
            Err(e) => {
                ui::error(format!(
                    "cannot list the tests of {}: {e}; its tests are not run",
                    binary.id
                ));
                Listing::default()
            }
        }
    }
}

/// Makes a test executable's coverage counter updates plain while it runs on one thread
/// ([`crate::edges::relax`]); a failure only costs speed, so it is a warning.
fn relax_counters(exe: &Path) {
    if let Err(e) = crate::edges::relax::relax(exe) {
        ui::warn(format!(
            "cannot rewrite the counter updates of {} ({e}); its tests run with atomic counters, which is slower",
            exe.display()
        ));
    }
}
