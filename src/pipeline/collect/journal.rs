//! The resume journal: every finished test's record and coverage, appended as it finishes,
//! so an interrupted run keeps its results and the next run on the same build runs only the
//! tests that had not finished.
//!
//! A journal is keyed by a fingerprint of what decides the results: the test binaries (path,
//! size, modification time), the tests selected, and the flags that change outcomes
//! (`--no-edges`, `--retries`, the timeout, `--release`). One JSON line per test; unit ids and
//! block ids are numbered per process, so lines store `(file, line)` and blocks their
//! `(function, index)` names. A completed run deletes its journal.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::outcome::JobOutcome;
use crate::coverage::LineDecoder;
use crate::edges::{Collector, Edge};
use crate::run::Job;
use crate::spectra::TestRecord;
use crate::workspace::Built;

/// Tag of a journal's first line; bump on any incompatible change (an old journal is dropped).
const SCHEMA: &str = "cargo-sfl-journal/v1";

/// The first line of a journal.
#[derive(Serialize, Deserialize)]
struct Header {
    schema: String,
    fingerprint: String,
    /// When the run started, in seconds since the Unix epoch.
    started: u64,
}

/// One finished test. Files and functions are listed once per entry and referred to by index.
#[derive(Serialize, Deserialize)]
struct Entry {
    record: TestRecord,
    files: Vec<String>,
    /// `[file index, line]` of every covered line.
    lines: Vec<(u32, u32)>,
    functions: Vec<String>,
    /// `[from, to]` (`from` null: entry into `to`).
    edges: Vec<(Option<BlockName>, BlockName)>,
}

/// A block as `[function index, block index]`.
type BlockName = (u32, u32);

/// What an earlier, interrupted run of the same build finished.
pub struct Earlier {
    pub started: SystemTime,
    entries: Vec<Entry>,
}

impl Earlier {
    /// Per job (`binary_ids[job.binary]` names its binary), its outcome if the earlier run
    /// finished it, with this process's ids.
    pub fn outcomes(
        self,
        jobs: &[Job],
        binary_ids: &[&str],
        coverage: &LineDecoder,
        edges: Option<&Collector>,
    ) -> Vec<Option<JobOutcome>> {
        let mut by_key: HashMap<(String, String), Entry> = self
            .entries
            .into_iter()
            .map(|e| ((e.record.binary.clone(), e.record.name.clone()), e))
            .collect();
        jobs.iter()
            .map(|job| {
                let key = (
                    binary_ids[job.binary].to_string(),
                    job.name.clone().unwrap_or_else(|| "main".into()),
                );
                by_key.remove(&key)?.decode(coverage, edges)
            })
            .collect()
    }
}

/// The open journal of this run; tests are kept from the workers that ran them.
pub struct Journal {
    file: std::sync::Mutex<File>,
    path: PathBuf,
    /// A write failed (said once): the run goes on without a journal.
    broken: std::sync::atomic::AtomicBool,
}

/// The fingerprint of a run's build, selection and result-changing flags.
pub fn fingerprint(built: &Built, binary_ids: &[&str], jobs: &[Job], flags: &str) -> String {
    use md5::{Digest, Md5};
    let mut md5 = Md5::new();
    let mut add = |s: &str| {
        md5.update(s.as_bytes());
        md5.update([0]);
    };
    add(SCHEMA);
    add(flags);
    for path in built.tests.iter().map(|t| &t.path).chain(&built.others) {
        add(&path.to_string_lossy());
        let meta = std::fs::metadata(path).ok();
        let modified = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok());
        add(&format!("{:?} {:?}", meta.map(|m| m.len()), modified));
    }
    for job in jobs {
        add(&format!("{} {:?} {}", binary_ids[job.binary], job.name, job.ignored));
    }
    crate::bitset::hex(&md5.finalize())
}

impl Journal {
    /// Opens the journal of `fingerprint` in `dir`: the tests an interrupted run of it
    /// finished (unless `rerun`), matched to `jobs`; any other journal there is stale and removed.
    pub fn open(dir: &Path, fingerprint: &str, rerun: bool) -> std::io::Result<(Journal, Option<Earlier>)> {
        let path = dir.join(format!("{fingerprint}.jsonl"));
        std::fs::create_dir_all(dir)?;
        for e in std::fs::read_dir(dir)?.flatten() {
            if e.path() != path || rerun {
                let _ = std::fs::remove_file(e.path());
            }
        }
        let earlier = read(&path, fingerprint);
        // Rewritten whole: a line cut short by the interrupt must not swallow the next one.
        let tmp = path.with_extension("jsonl.tmp");
        let mut file = File::create(&tmp)?;
        let earlier = match earlier.filter(|_| !rerun) {
            Some((header, lines)) => {
                writeln!(file, "{}", serde_json::to_string(&header)?)?;
                for l in &lines {
                    writeln!(file, "{l}")?;
                }
                Some(Earlier {
                    started: UNIX_EPOCH + Duration::from_secs(header.started),
                    entries: lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect(),
                })
            }
            None => {
                let header = Header {
                    schema: SCHEMA.into(),
                    fingerprint: fingerprint.into(),
                    started: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
                };
                writeln!(file, "{}", serde_json::to_string(&header)?)?;
                None
            }
        };
        file.sync_data()?;
        std::fs::rename(&tmp, &path)?;
        let file = std::fs::OpenOptions::new().append(true).open(&path)?;
        Ok((
            Journal {
                file: std::sync::Mutex::new(file),
                path,
                broken: Default::default(),
            },
            earlier,
        ))
    }

    /// Keeps a finished test, unless it is no result: killed by the interrupt, or not started
    /// at all (then the run stops with an error). A journal that cannot be written is warned
    /// about once; the run itself goes on.
    pub fn keep(&self, o: &JobOutcome, coverage: &LineDecoder, edges: Option<&Collector>) {
        use std::sync::atomic::Ordering;
        if o.not_run.is_some() || crate::process::interrupted() || self.broken.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = self.append(o, coverage, edges)
            && !self.broken.swap(true, Ordering::Relaxed)
        {
            crate::ui::warn(format!(
                "cannot write the resume journal {}: {e}; an interrupted run will start afresh",
                self.path.display()
            ));
        }
    }

    /// Appends a finished test (one write, so an interrupt leaves whole lines or a cut last one).
    fn append(&self, o: &JobOutcome, coverage: &LineDecoder, edges: Option<&Collector>) -> std::io::Result<()> {
        let mut line = serde_json::to_string(&encode(o, coverage, edges))?;
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        file.write_all(line.as_bytes())
    }

    /// The run completed and its spectra are saved: the journal is no longer needed.
    pub fn finish(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The header and entry lines of the journal at `path`, if it is one of `fingerprint`.
fn read(path: &Path, fingerprint: &str) -> Option<(Header, Vec<String>)> {
    let mut lines = BufReader::new(File::open(path).ok()?).lines().map_while(Result::ok);
    let header: Header = serde_json::from_str(&lines.next()?).ok()?;
    if header.schema != SCHEMA || header.fingerprint != fingerprint {
        return None;
    }
    // Only whole entries: the last line may have been cut by the interrupt.
    let entries = lines.filter(|l| serde_json::from_str::<Entry>(l).is_ok()).collect();
    Some((header, entries))
}

impl Entry {
    /// The outcome with this process's ids; `None` when a block it took is unknown to this
    /// build (then the test is run again).
    fn decode(self, coverage: &LineDecoder, edges: Option<&Collector>) -> Option<JobOutcome> {
        let e = self;
        let file = |i: u32| e.files.get(i as usize).map(String::as_str);
        let lines: Option<Vec<(&str, u32)>> = e.lines.iter().map(|&(f, l)| Some((file(f)?, l))).collect();
        let mut covered = coverage.ids_of(lines?);
        covered.sort_unstable();
        let mut traversed = Vec::with_capacity(e.edges.len());
        if let Some(collector) = edges {
            let block = |(f, k): (u32, u32)| collector.block_id(e.functions.get(f as usize)?, k);
            for &(from, to) in &e.edges {
                let from = match from {
                    Some(b) => Some(block(b)?),
                    None => None,
                };
                traversed.push(Edge { from, to: block(to)? });
            }
            traversed.sort_unstable();
        }
        Some(JobOutcome {
            record: e.record,
            covered,
            profiles: Vec::new(),
            edges: traversed,
            not_run: None,
        })
    }
}

/// A finished test with its lines and blocks named.
fn encode(o: &JobOutcome, coverage: &LineDecoder, edges: Option<&Collector>) -> Entry {
    let mut files = Interner::default();
    let mut lines = Vec::with_capacity(o.covered.len());
    coverage.each_line_of(&o.covered, |f, l| lines.push((files.index(f), l)));
    // A function's name is one shared string in the collector: known by its address here.
    let mut functions = Interner::default();
    let mut seen: HashMap<usize, u32> = HashMap::new();
    let mut blocks = Vec::new();
    if let Some(collector) = edges {
        let ids = o.edges.iter().flat_map(|e| e.from.into_iter().chain([e.to]));
        collector.each_block_name(ids, |f, k| {
            let i = *seen.entry(f.as_ptr() as usize).or_insert_with(|| functions.index(f));
            blocks.push((i, k));
        });
    }
    let mut named = blocks.into_iter();
    let edges = o
        .edges
        .iter()
        .map_while(|e| {
            let from = match e.from {
                Some(_) => Some(named.next()?),
                None => None,
            };
            Some((from, named.next()?))
        })
        .collect();
    Entry {
        record: o.record.clone(),
        files: files.names,
        lines,
        functions: functions.names,
        edges,
    }
}

/// Names numbered in the order first met.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Interner {
    fn index(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.ids.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.ids.insert(name.to_string(), i);
        self.names.push(name.to_string());
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spectra::{Outcome, UnitId};

    fn outcome(name: &str, outcome: Outcome, covered: Vec<UnitId>) -> JobOutcome {
        JobOutcome {
            record: TestRecord::new("b", name, outcome),
            covered,
            profiles: Vec::new(),
            edges: Vec::new(),
            not_run: None,
        }
    }

    fn job(name: &str) -> Job {
        Job {
            binary: 0,
            name: Some(name.into()),
            ignored: false,
        }
    }

    #[test]
    fn the_fingerprint_changes_with_the_selection_and_the_flags() {
        let built = Built::default();
        let fp = |jobs: &[Job], flags: &str| fingerprint(&built, &["b"], jobs, flags);
        let base = fp(&[job("t1"), job("t2")], "retries=0");
        assert_eq!(base, fp(&[job("t1"), job("t2")], "retries=0"));
        assert_ne!(base, fp(&[job("t1")], "retries=0"));
        assert_ne!(base, fp(&[job("t1"), job("t2")], "retries=1"));
    }

    #[test]
    fn finished_tests_survive_a_cut_line_and_come_back_with_this_process_ids() {
        let dir = tempfile::tempdir().unwrap();
        let relative = |_: &Path| None;
        let coverage = LineDecoder::new(Vec::new(), &relative);
        let ids = coverage.ids_of([("src/a.rs", 3), ("src/b.rs", 1)]);
        let (journal, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        assert!(earlier.is_none(), "a new journal");
        journal
            .append(&outcome("t1", Outcome::Failed, ids.clone()), &coverage, None)
            .unwrap();
        journal
            .append(&outcome("t2", Outcome::Failed, vec![ids[1]]), &coverage, None)
            .unwrap();
        // The interrupt cut the third line short.
        journal
            .file
            .lock()
            .unwrap()
            .write_all(b"{\"record\":{\"binary\":\"b\",\"na")
            .unwrap();
        let path = journal.path().to_path_buf();
        drop(journal);

        // Another process numbers units in another order.
        let later = LineDecoder::new(Vec::new(), &relative);
        let b1 = later.ids_of([("src/b.rs", 1)])[0];
        let (journal, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        let jobs = [job("t2"), job("t3"), job("t1")];
        let done = earlier.unwrap().outcomes(&jobs, &["b"], &later, None);
        assert!(done[1].is_none(), "t3 never finished");
        let lines = |o: &Option<JobOutcome>| later.lines_of(&o.as_ref().unwrap().covered);
        assert_eq!(lines(&done[0]), [("src/b.rs".to_string(), 1)]);
        assert_eq!(done[0].as_ref().unwrap().covered, [b1]);
        assert_eq!(lines(&done[2]).len(), 2);
        // The cut line is gone, so the next append starts a whole line.
        assert!(std::fs::read_to_string(&path).unwrap().ends_with("}\n"));
        journal.finish();
        assert!(!path.exists());
    }

    #[test]
    fn rerun_and_another_fingerprint_start_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let relative = |_: &Path| None;
        let coverage = LineDecoder::new(Vec::new(), &relative);
        let (journal, _) = Journal::open(dir.path(), "fp", false).unwrap();
        let o = outcome("t1", Outcome::Passed, Vec::new());
        journal.keep(&o, &coverage, None);
        // A test that could not start is no result: not kept.
        let broken = JobOutcome {
            not_run: Some("No such file or directory".into()),
            ..outcome("t2", Outcome::Failed, Vec::new())
        };
        journal.keep(&broken, &coverage, None);
        drop(journal);
        let (journal, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        let kept: Vec<String> = earlier.unwrap().entries.into_iter().map(|e| e.record.name).collect();
        assert_eq!(kept, ["t1"]);
        drop(journal);
        let (_, earlier) = Journal::open(dir.path(), "other", false).unwrap();
        assert!(earlier.is_none());
        assert!(!dir.path().join("fp.jsonl").exists(), "a stale journal is removed");
        let (journal, _) = Journal::open(dir.path(), "fp", false).unwrap();
        journal.append(&o, &coverage, None).unwrap();
        drop(journal);
        let (_, earlier) = Journal::open(dir.path(), "fp", true).unwrap();
        assert!(earlier.is_none(), "--rerun");
        let (_, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        assert_eq!(earlier.unwrap().entries.len(), 0, "--rerun emptied the journal");
    }
}
