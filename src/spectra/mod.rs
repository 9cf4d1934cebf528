//! The coverage matrix: tests (with outcomes), units (source lines), and one bitset per unit
//! over the tests that ran it. Saved as JSON so `cargo sfl report` can re-rank without
//! re-running anything.

mod counts;
pub mod edges;
mod error;
mod facts;
mod file;
mod matrix;
mod merge;
mod schema;
mod snapshot;
mod sources;
mod tokens;
mod unit;

pub use counts::Counts;
pub use edges::{Block, BlockId, Edge, EdgeSpectra, SavedEdges};
pub use error::SpectraError;
pub use facts::{SourceFacts, file_digest, sources_digest};
pub use file::EdgeProfiles;
pub use matrix::{Attempt, BuildInfo, Frame, Outcome, Spectra, TestRecord, test_order};
pub use schema::{SCHEMA, SCHEMA_V1, SCHEMA_V2};
pub use snapshot::{FileState, SinceGreen, Snapshot, blank_line_hash, line_hashes};
pub use sources::Hidden;
pub use unit::{FunctionSpan, Unit, UnitId};

#[cfg(test)]
pub(crate) mod tests {
    use std::path::Path;

    use super::*;
    use crate::bitset::BitSet;

    fn test(name: &str, outcome: Outcome) -> TestRecord {
        TestRecord::new("b", name, outcome)
    }

    /// A backtrace frame on `src/lib.rs` (the file of the test matrices here).
    pub(crate) fn frame(line: u32) -> Frame {
        Frame {
            function: "f".into(),
            file: "src/lib.rs".into(),
            line,
        }
    }

    /// Doric's minmax (Landsberg & Barr, Fig. 2): t1..t5 over u1..u4.
    pub(crate) fn doric_minmax() -> Spectra {
        let rows: [(&[u32], Outcome); 5] = [
            (&[1, 2], Outcome::Failed),
            (&[2, 3], Outcome::Failed),
            (&[2], Outcome::Failed),
            (&[0, 3], Outcome::Passed),
            (&[0, 1], Outcome::Passed),
        ];
        let tests = rows
            .iter()
            .enumerate()
            .map(|(i, (_, o))| test(&format!("t{}", i + 1), *o))
            .collect();
        let units = (1..=4)
            .map(|l| Unit {
                file: "src/lib.rs".into(),
                line: l,
            })
            .collect();
        let covered: Vec<Vec<UnitId>> = rows
            .iter()
            .map(|(c, _)| c.iter().copied().map(UnitId).collect())
            .collect();
        Spectra::from_tests("/ws".into(), tests, units, &covered)
    }

    /// A deterministic xorshift generator for property tests (fixed seeds keep CI reproducible).
    pub(crate) struct Rng(pub(crate) u64);

    impl Rng {
        pub(crate) fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// Functions of `src/lib.rs` spanning lines `start..=end`.
    pub(crate) fn lib_functions(spans: &[(u32, u32)]) -> Vec<FunctionSpan> {
        spans
            .iter()
            .map(|&(start, end)| FunctionSpan {
                file: "src/lib.rs".into(),
                start,
                end,
            })
            .collect()
    }

    /// A matrix from rows of 0/1 (one per unit) ending in `+` (passed) or `-` (failed), as
    /// GZoltar writes them; units are lines 1.. of `src/lib.rs`.
    pub(crate) fn matrix(rows: &[&str]) -> Spectra {
        let width = rows[0].len() - 1;
        let tests = rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let outcome = if r.ends_with('-') {
                    Outcome::Failed
                } else {
                    Outcome::Passed
                };
                test(&format!("t{}", i + 1), outcome)
            })
            .collect();
        let units = (1..=width as u32)
            .map(|line| Unit {
                file: "src/lib.rs".into(),
                line,
            })
            .collect();
        let covered: Vec<Vec<UnitId>> = rows
            .iter()
            .map(|r| {
                (0..width as u32)
                    .filter(|&u| r.as_bytes()[u as usize] == b'1')
                    .map(UnitId)
                    .collect()
            })
            .collect();
        Spectra::from_tests("/ws".into(), tests, units, &covered)
    }

    /// The single-fault-optimal study's 10-test minmax (Landsberg, Sun & Kroening; t5 as its
    /// numbers support), t1..t3 failing.
    pub(crate) fn sfo_minmax() -> Spectra {
        matrix(&[
            "10110-", "10011-", "10010-", "11000+", "10100+", "10001+", "10011+", "10000+", "11001+", "11100+",
        ])
    }

    #[test]
    fn timed_out_tests_are_neither_failing_nor_passing() {
        let mut s = matrix(&["11-", "10-", "01+"]);
        s.tests[1].outcome = Outcome::TimedOut;
        let members = |m: BitSet| (0..3).filter(|&t| m.contains(t)).collect::<Vec<_>>();
        assert_eq!(members(s.failing_mask()), [0]);
        assert_eq!(members(s.passing_mask()), [2]);
        // Unit 1 is run by the failing test and the timed-out one: ef 1, not 2.
        let c = s.counts()[0];
        assert_eq!((c.ef, c.ep, c.nf, c.np), (1.0, 0.0, 0.0, 1.0));
    }

    #[test]
    fn retried_tests_say_how_their_runs_went() {
        let mut t = test("t", Outcome::Failed);
        assert_eq!(t.runs(), None);
        let run = |outcome| Attempt {
            outcome,
            duration_ms: 1,
            message: None,
        };
        t.attempts = vec![run(Outcome::Failed), run(Outcome::TimedOut), run(Outcome::Failed)];
        assert_eq!(t.runs().unwrap(), "did not pass in 3 runs");
        t.attempts = vec![run(Outcome::Failed), run(Outcome::Crashed), run(Outcome::Passed)];
        t.flaky = true;
        assert_eq!(t.runs().unwrap(), "flaky: failed, crashed, then passed on retry 2");
        // Both survive a save and a load.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let s = Spectra::from_tests("/ws".into(), vec![t.clone()], Vec::new(), &[Vec::new()]);
        s.save(&path).unwrap();
        assert_eq!(Spectra::load(&path).unwrap().tests, [t]);
    }

    /// Regression: leaving out the first unit (a file that starts with test code) panicked on
    /// an id computed before it was known to be kept.
    #[test]
    fn retain_units_can_drop_the_first_unit() {
        let s = doric_minmax();
        let kept = s.retain_units(&[false, true, false, true]);
        let lines: Vec<u32> = kept.units.iter().map(|u| u.line).collect();
        assert_eq!(lines, [2, 4]);
        assert_eq!(kept.coverage[0], s.coverage[1]);
        assert_eq!(kept.coverage[1], s.coverage[3]);
    }

    #[test]
    fn counts_follow_the_matrix() {
        let s = doric_minmax();
        let c = s.counts();
        assert_eq!(c[2], Counts::new(3, 0, 0, 2));
        assert_eq!(c[0], Counts::new(0, 2, 3, 0));
        assert_eq!(c[3], Counts::new(1, 1, 2, 1));
    }

    #[test]
    fn saved_spectra_round_trip() {
        let s = doric_minmax();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        s.save(&path).unwrap();
        let back = Spectra::load(&path).unwrap();
        assert_eq!(back.tests, s.tests);
        assert_eq!(back.units, s.units);
        assert_eq!(back.coverage, s.coverage);
    }

    #[test]
    fn edge_profiles_are_saved_deflated_read_on_demand_and_v1_still_loads() {
        use super::edges::{Block, Edge, EdgeSpectra};
        let mut s = doric_minmax();
        let blocks = vec![Block {
            function: "minmax".into(),
            index: 0,
            lines: vec![UnitId(0)],
        }];
        let entry = Edge {
            from: None,
            to: super::edges::BlockId(0),
        };
        let traversed: Vec<Vec<Edge>> = (0..s.tests.len()).map(|_| vec![entry]).collect();
        s.edges = Some(EdgeSpectra::from_tests(blocks, s.tests.len(), &traversed));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        s.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"schema\":\"cargo-sfl-spectra/v3\"") && text.contains("\"edges_deflated\":\""));
        assert_eq!(Spectra::load(&path).unwrap().edges, s.edges);
        assert_eq!(Spectra::load_with(&path, EdgeProfiles::Skip).unwrap().edges, None);
        // Skipped edges are not even inflated: garbage there does not matter, until asked for.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let mut garbage = v.clone();
        garbage["edges_deflated"] = "!!".into();
        let garbage = serde_json::to_vec(&garbage).unwrap();
        assert!(Spectra::parse_with(&garbage, EdgeProfiles::Skip).is_ok());
        assert!(Spectra::parse(&garbage).unwrap_err().to_string().contains("not base64"));
        // Schema v1 (edges as plain JSON) still loads.
        let mut v1 = v;
        v1["schema"] = SCHEMA_V1.into();
        v1["edges"] = serde_json::to_value(s.edges.as_ref().unwrap().to_saved()).unwrap();
        v1.as_object_mut().unwrap().remove("edges_deflated");
        assert_eq!(
            Spectra::parse(&serde_json::to_vec(&v1).unwrap()).unwrap().edges,
            s.edges
        );
    }

    #[test]
    fn a_test_in_two_shards_is_refused_naming_both_files() {
        let e = Spectra::merge(vec![doric_minmax(), doric_minmax()]).unwrap_err();
        assert!(
            matches!(
                e,
                SpectraError::InTwoShards {
                    first: 1,
                    second: 2,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.shard(), Some(1));
    }

    #[test]
    fn foreign_or_corrupt_spectra_are_refused_with_a_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, b"{\"schema\":\"other/v9\"}").unwrap();
        let err = |path: &Path| Spectra::load(path).unwrap_err().to_string();
        assert!(err(&path).contains("other/v9"));
        std::fs::write(&path, b"\x00\x01").unwrap();
        assert!(err(&path).contains("not JSON"));
        doric_minmax().save(&path).unwrap();
        // u3 is covered by t1..t3 (0x07); 0xff would name tests that do not exist.
        let text = std::fs::read_to_string(&path).unwrap().replace("\"07\"", "\"ff\"");
        std::fs::write(&path, text).unwrap();
        assert!(err(&path).contains("bitset"));
    }

    #[test]
    fn spectra_naming_files_outside_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let with_unit = |file: &str, line: u32| {
            let mut s = doric_minmax();
            s.units[1] = Unit {
                file: file.into(),
                line,
            };
            s.save(&path).unwrap();
            Spectra::load(&path)
        };
        for bad in ["/etc/shadow", "../../x", "src/../../x", "\\\\server\\share"] {
            let err = with_unit(bad, 3).unwrap_err().to_string();
            assert!(
                err.contains("not a path inside the workspace") && err.contains(&format!("{bad:?}")),
                "{err}"
            );
        }
        // Imported units are names, not files.
        assert!(with_unit("/etc/shadow", 0).is_ok());
        assert!(with_unit("./src/lib.rs", 3).is_ok());
        let mut s = doric_minmax();
        s.tests[0].stack.push(Frame {
            file: "/root/.ssh/id_rsa".into(),
            ..frame(1)
        });
        s.save(&path).unwrap();
        assert!(Spectra::load(&path).unwrap_err().to_string().contains("stack frame"));
        let mut s = doric_minmax();
        s.set_functions(vec![FunctionSpan {
            file: "../lib.rs".into(),
            start: 1,
            end: 2,
        }]);
        s.save(&path).unwrap();
        assert!(Spectra::load(&path).unwrap_err().to_string().contains("function"));
    }
}
