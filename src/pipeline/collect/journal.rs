//! The resume journal: every finished test's record and coverage, appended as it finishes,
//! so an interrupted run keeps its results and the next run on the same build runs only the
//! tests that had not finished.
//!
//! A journal is keyed by a fingerprint of what decides the results: the test binaries (path,
//! size, modification time), the tests selected, and the flags that change outcomes
//! (`--no-edges`, `--retries`, the timeout, `--release`). One JSON line per test. Lines and
//! blocks are written as this process's ids, each named (`(file, line)`, `(function, index)`)
//! by the first line that uses it, so a test costs a few numbers per line it ran, not a name:
//! writing the journal was a sixth of the run's own work on a crate of a thousand small tests.
//! Ids are another process's after a resume: a `segment` line starts a new numbering. A
//! completed run deletes its journal. The first seconds of a run are held back ([`HOLD`]) and
//! written when they have passed, on Ctrl-C, or when the run ends in an error: a run of a few
//! seconds writes no journal at all.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::outcome::JobOutcome;
use crate::coverage::LineDecoder;
use crate::edges::{Collector, Edge};
use crate::run::Job;
use crate::spectra::{BlockId, TestRecord, UnitId};
use crate::workspace::Built;

/// Tag of a journal's first line; bump on any incompatible change (an old journal is dropped).
const SCHEMA: &str = "cargo-sfl-journal/v2";

/// The first line of a journal.
#[derive(Serialize, Deserialize)]
struct Header {
    schema: String,
    fingerprint: String,
    /// When the run started, in seconds since the Unix epoch.
    started: u64,
}

/// One line after the header: a finished test, with the names of the ids it uses first.
#[derive(Serialize, Deserialize, Default)]
struct Line {
    /// The ids of the lines from here on are another process's (a resumed run's).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    segment: bool,
    /// New files: `[file id, path]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    files: Vec<(u32, String)>,
    /// New lines: `[unit id, file id, line]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    units: Vec<(u32, u32, u32)>,
    /// New functions: `[function id, name]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    functions: Vec<(u32, String)>,
    /// New blocks: `[block id, function id, index]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    blocks: Vec<(u32, u32, u32)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    record: Option<TestRecord>,
    /// The unit ids of the covered lines, in the outcome's order (ascending), each as its
    /// difference from the last (wrapping).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    lines: Vec<u32>,
    /// The edges as pairs `from + 1` (0: entry into `to`), `to`, in order; `from + 1` as its
    /// difference from the last pair's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    edges: Vec<u32>,
}

/// A line of a file, or a block of a function, by its name.
type Named = (Arc<str>, u32);

/// A finished test of an earlier run, its lines and blocks named.
struct Entry {
    record: TestRecord,
    lines: Vec<Named>,
    edges: Vec<(Option<Named>, Named)>,
}

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
        let mut by_key: std::collections::HashMap<(String, String), Entry> = self
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
    state: Arc<std::sync::Mutex<Writer>>,
    path: PathBuf,
    /// A write failed (said once): the run goes on without a journal.
    broken: std::sync::atomic::AtomicBool,
    /// Its directory is its own, removed with it ([`Journal::in_own_dir`]).
    own_dir: bool,
}

/// The journal's file and which ids of this process it has named.
struct Writer {
    file: File,
    /// When the journal was opened: lines are held back for the run's first [`HOLD`].
    opened: std::time::Instant,
    /// Finished tests not written yet, in order.
    held: Vec<Line>,
    units: Vec<bool>,
    blocks: Vec<bool>,
    files: FxHashMap<Arc<str>, u32>,
    functions: FxHashMap<Arc<str>, u32>,
}

impl Writer {
    fn new(file: File) -> Writer {
        Writer {
            file,
            opened: std::time::Instant::now(),
            held: Vec::new(),
            units: Vec::new(),
            blocks: Vec::new(),
            files: FxHashMap::default(),
            functions: FxHashMap::default(),
        }
    }
}

impl Writer {
    /// Writes the held lines (one write, so an interrupt leaves whole lines or a cut last one).
    fn write_held(&mut self) -> std::io::Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mut text = Vec::new();
        for line in self.held.drain(..) {
            serde_json::to_writer(&mut text, &line)?;
            text.push(b'\n');
        }
        self.file.write_all(&text)
    }
}

/// How long a run's finished tests are held back before the journal is written: a run whose
/// tests end within it writes nothing (writing the lines was a tenth of cargo sfl's own work on
/// a crate of a thousand small tests), and only a crash of cargo sfl itself within it loses
/// them (an interrupt, or a run that ends in an error, writes them first).
const HOLD: Duration = Duration::from_secs(5);

/// Marks `id` named in `seen`: whether it was new.
fn first_use(seen: &mut Vec<bool>, id: usize) -> bool {
    if seen.len() <= id {
        seen.resize(id + 1, false);
    }
    !std::mem::replace(&mut seen[id], true)
}

/// The id of `name` in `ids`, adding it to `new` when first met.
fn name_id(ids: &mut FxHashMap<Arc<str>, u32>, name: &str, new: &mut Vec<(u32, String)>) -> u32 {
    if let Some(&i) = ids.get(name) {
        return i;
    }
    let i = ids.len() as u32;
    ids.insert(Arc::from(name), i);
    new.push((i, name.to_string()));
    i
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
    // In a fixed order: cargo reports the artifacts of a build in the order they finish.
    let mut paths: Vec<&PathBuf> = built.tests.iter().map(|t| &t.path).chain(&built.others).collect();
    paths.sort();
    for path in paths {
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
        let earlier = earlier.filter(|_| !rerun);
        let file = match &earlier {
            Some((header, lines)) => {
                // Rewritten whole, then put in place: a line cut short by the interrupt must not
                // swallow the next one, and a crash while rewriting must not lose the earlier
                // run's tests.
                let tmp = path.with_extension("jsonl.tmp");
                let mut file = File::create(&tmp)?;
                writeln!(file, "{}", serde_json::to_string(header)?)?;
                for (text, _) in lines {
                    writeln!(file, "{text}")?;
                }
                // This process numbers lines and blocks afresh.
                let segment = Line {
                    segment: true,
                    ..Line::default()
                };
                writeln!(file, "{}", serde_json::to_string(&segment)?)?;
                file.sync_data()?;
                std::fs::rename(&tmp, &path)?;
                std::fs::OpenOptions::new().append(true).open(&path)?
            }
            // A new journal holds nothing to lose: no sync (on a busy disk it held up the first
            // test by 50-100 ms), and a header cut short is a journal no run reads.
            None => {
                let header = Header {
                    schema: SCHEMA.into(),
                    fingerprint: fingerprint.into(),
                    started: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
                };
                let mut file = std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .open(&path)?;
                file.write_all(format!("{}\n", serde_json::to_string(&header)?).as_bytes())?;
                file
            }
        };
        let earlier = earlier.map(|(header, lines)| Earlier {
            started: UNIX_EPOCH + Duration::from_secs(header.started),
            entries: entries(lines.into_iter().map(|(_, line)| line)),
        });
        let state = Arc::new(std::sync::Mutex::new(Writer::new(file)));
        let held = Arc::clone(&state);
        // Ctrl-C ends the process from its handler: what is held back is written first.
        crate::process::on_interrupt_keep(Box::new(move || {
            let _ = lock(&held).write_held();
        }));
        Ok((
            Journal {
                state,
                path,
                broken: Default::default(),
                own_dir: false,
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
    /// Names are marked written under the same lock as the line is written, so a line that
    /// names an id comes before every line that uses it.
    /// For the first [`HOLD`] of a run the lines are held back and written at once when that
    /// has passed, or when the run ends without saving its spectra (an error, or Ctrl-C).
    fn append(&self, o: &JobOutcome, coverage: &LineDecoder, edges: Option<&Collector>) -> std::io::Result<()> {
        let mut w = lock(&self.state);
        let line = encode(&mut w, o, coverage, edges);
        w.held.push(line);
        if w.opened.elapsed() >= HOLD {
            w.write_held()?;
        }
        Ok(())
    }

    /// The journal's directory holds it alone (the doctests' journal, beside the other tests'
    /// one): finishing removes the directory too.
    pub fn in_own_dir(mut self) -> Self {
        self.own_dir = true;
        self
    }

    /// Writes what is held back (before another journal of the run takes over the interrupt).
    pub fn flush(&self) {
        let _ = lock(&self.state).write_held();
    }

    /// The run completed and its spectra are saved: the journal is no longer needed.
    pub fn finish(self) {
        crate::process::on_interrupt_keep(Box::new(|| {}));
        lock(&self.state).held.clear();
        let _ = std::fs::remove_file(&self.path);
        if self.own_dir
            && let Some(dir) = self.path.parent()
        {
            let _ = std::fs::remove_dir(dir);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// A run that ends without saving its spectra keeps what it finished.
impl Drop for Journal {
    fn drop(&mut self) {
        let _ = lock(&self.state).write_held();
    }
}

fn lock(state: &std::sync::Mutex<Writer>) -> std::sync::MutexGuard<'_, Writer> {
    state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The header and the whole lines of the journal at `path` (as written and as read), if it is
/// one of `fingerprint`.
fn read(path: &Path, fingerprint: &str) -> Option<(Header, Vec<(String, Line)>)> {
    let mut lines = BufReader::new(File::open(path).ok()?).lines().map_while(Result::ok);
    let header: Header = serde_json::from_str(&lines.next()?).ok()?;
    if header.schema != SCHEMA || header.fingerprint != fingerprint {
        return None;
    }
    // Only whole lines: the last one may have been cut by the interrupt (and a cut line names
    // nothing a later line uses: none follows it).
    let lines = lines
        .filter_map(|text| {
            let line = serde_json::from_str::<Line>(&text).ok()?;
            Some((text, line))
        })
        .collect();
    Some((header, lines))
}

/// The finished tests of a journal's lines, their ids named.
fn entries(lines: impl IntoIterator<Item = Line>) -> Vec<Entry> {
    let mut files: FxHashMap<u32, Arc<str>> = FxHashMap::default();
    let mut units: FxHashMap<u32, Named> = FxHashMap::default();
    let mut functions: FxHashMap<u32, Arc<str>> = FxHashMap::default();
    let mut blocks: FxHashMap<u32, Named> = FxHashMap::default();
    let mut out = Vec::new();
    for line in lines {
        if line.segment {
            files.clear();
            units.clear();
            functions.clear();
            blocks.clear();
        }
        files.extend(line.files.into_iter().map(|(i, f)| (i, Arc::from(f))));
        functions.extend(line.functions.into_iter().map(|(i, f)| (i, Arc::from(f))));
        for (u, f, l) in line.units {
            if let Some(f) = files.get(&f) {
                units.insert(u, (f.clone(), l));
            }
        }
        for (b, f, k) in line.blocks {
            if let Some(f) = functions.get(&f) {
                blocks.insert(b, (f.clone(), k));
            }
        }
        let Some(record) = line.record else { continue };
        // An id no line named: the entry is dropped and its test run again.
        let mut unit = 0u32;
        let named_lines: Option<Vec<Named>> = line
            .lines
            .iter()
            .map(|&d| {
                unit = unit.wrapping_add(d);
                units.get(&unit).cloned()
            })
            .collect();
        let mut from = 0u32;
        let named_edges: Option<Vec<(Option<Named>, Named)>> = line
            .edges
            .chunks(2)
            .map(|pair| {
                let [d, to] = *pair else { return None };
                from = from.wrapping_add(d);
                let source = match from {
                    0 => None,
                    b => Some(blocks.get(&(b - 1))?.clone()),
                };
                Some((source, blocks.get(&to)?.clone()))
            })
            .collect();
        if let (Some(lines), Some(edges)) = (named_lines, named_edges) {
            out.push(Entry { record, lines, edges });
        }
    }
    out
}

impl Entry {
    /// The outcome with this process's ids; `None` when a block it took is unknown to this
    /// build (then the test is run again).
    fn decode(self, coverage: &LineDecoder, edges: Option<&Collector>) -> Option<JobOutcome> {
        let mut covered = coverage.ids_of(self.lines.iter().map(|(f, l)| (&**f, *l)));
        covered.sort_unstable();
        let mut traversed = Vec::with_capacity(self.edges.len());
        if let Some(collector) = edges {
            let block = |(f, k): &Named| collector.block_id(f, *k);
            for (from, to) in &self.edges {
                let from = match from {
                    Some(b) => Some(block(b)?),
                    None => None,
                };
                traversed.push(Edge { from, to: block(to)? });
            }
            traversed.sort_unstable();
        }
        Some(JobOutcome {
            record: self.record,
            covered,
            profiles: Vec::new(),
            edges: traversed,
            not_run: None,
        })
    }
}

/// A finished test as a journal line: its ids, with the names of those `w` has not written.
fn encode(w: &mut Writer, o: &JobOutcome, coverage: &LineDecoder, edges: Option<&Collector>) -> Line {
    let mut line = Line {
        record: Some(o.record.clone()),
        ..Line::default()
    };
    let new: Vec<UnitId> = o
        .covered
        .iter()
        .copied()
        .filter(|u| first_use(&mut w.units, u.index()))
        .collect();
    let mut k = 0;
    coverage.each_line_of(&new, |f, l| {
        let file = name_id(&mut w.files, f, &mut line.files);
        line.units.push((new[k].0, file, l));
        k += 1;
    });
    let mut last = 0u32;
    line.lines = o
        .covered
        .iter()
        .map(|u| {
            let d = u.0.wrapping_sub(last);
            last = u.0;
            d
        })
        .collect();
    if let Some(collector) = edges {
        let used = o.edges.iter().flat_map(|e| e.from.into_iter().chain([e.to]));
        let new: Vec<BlockId> = used.filter(|b| first_use(&mut w.blocks, b.index())).collect();
        let mut k = 0;
        collector.each_block_name(new.iter().copied(), |f, index| {
            let function = name_id(&mut w.functions, f, &mut line.functions);
            line.blocks.push((new[k].0, function, index));
            k += 1;
        });
        let mut last = 0u32;
        for e in &o.edges {
            let from = e.from.map_or(0, |b| b.0 + 1);
            line.edges.push(from.wrapping_sub(last));
            line.edges.push(e.to.0);
            last = from;
        }
    }
    line
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

    /// Cargo reports a build's executables in the order they finish: a run resumed after a
    /// build that reported them in another order is the same build.
    #[test]
    fn the_fingerprint_does_not_depend_on_the_order_executables_were_reported_in() {
        let dir = tempfile::tempdir().unwrap();
        let exes: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| dir.path().join(n)).collect();
        for (k, e) in exes.iter().enumerate() {
            std::fs::write(e, vec![0u8; k + 1]).unwrap();
        }
        let built = |order: &[usize]| Built {
            tests: Vec::new(),
            others: order.iter().map(|&i| exes[i].clone()).collect(),
        };
        let fp = |b: &Built| fingerprint(b, &["b"], &[job("t1")], "");
        assert_eq!(fp(&built(&[0, 1, 2])), fp(&built(&[2, 0, 1])));
        assert_ne!(fp(&built(&[0, 1, 2])), fp(&built(&[0, 1])));
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
        let path = journal.path().to_path_buf();
        // Held back for the run's first seconds: only the header is written yet.
        assert_eq!(std::fs::read_to_string(&path).unwrap().lines().count(), 1);
        let mut w = lock(&journal.state);
        w.write_held().unwrap();
        // The interrupt cut the third line short.
        w.file.write_all(b"{\"record\":{\"binary\":\"b\",\"na").unwrap();
        drop(w);
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
    fn a_resumed_run_numbers_lines_and_blocks_afresh() {
        let dir = tempfile::tempdir().unwrap();
        let relative = |_: &Path| None;
        let with_edges = |o: JobOutcome, edges: Vec<Edge>| JobOutcome { edges, ..o };
        // The first process: unit 0 is a.rs:1, block 0 is f#0, block 1 is g#2.
        let first = LineDecoder::new(Vec::new(), &relative);
        let blocks = Collector::new(&[], &relative);
        let ids = first.ids_of([("src/a.rs", 1), ("src/b.rs", 2)]);
        let (f0, g2) = (blocks.adopt("f", 0, &[]), blocks.adopt("g", 2, &[]));
        let (journal, _) = Journal::open(dir.path(), "fp", false).unwrap();
        let taken = vec![Edge { from: None, to: f0 }, Edge { from: Some(f0), to: g2 }];
        let t1 = with_edges(outcome("t1", Outcome::Failed, ids.clone()), taken);
        journal.keep(&t1, &first, Some(&blocks));
        drop(journal);

        // The second process resumes and numbers the other way round: its unit 0 is b.rs:2.
        let second = LineDecoder::new(Vec::new(), &relative);
        let blocks2 = Collector::new(&[], &relative);
        let ids2 = second.ids_of([("src/b.rs", 2), ("src/a.rs", 1)]);
        let (g2b, f0b) = (blocks2.adopt("g", 2, &[]), blocks2.adopt("f", 0, &[]));
        let (journal, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        let jobs = [job("t1"), job("t2")];
        let done = earlier.unwrap().outcomes(&jobs, &["b"], &second, Some(&blocks2));
        let t1_again = done[0].as_ref().expect("t1 finished");
        let sorted = |mut v: Vec<(String, u32)>| {
            v.sort();
            v
        };
        assert_eq!(sorted(second.lines_of(&t1_again.covered)), sorted(first.lines_of(&ids)));
        assert_eq!(
            t1_again.edges,
            [
                Edge { from: None, to: f0b },
                Edge {
                    from: Some(f0b),
                    to: g2b
                }
            ]
        );
        // t2 ran only b.rs:2 and g#2: id 0 in this process, named anew after the segment.
        let t2 = with_edges(
            outcome("t2", Outcome::Passed, vec![ids2[0]]),
            vec![Edge { from: None, to: g2b }],
        );
        journal.keep(&t2, &second, Some(&blocks2));
        drop(journal);

        let third = LineDecoder::new(Vec::new(), &relative);
        let (_, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        // Blocks this process's build does not have: the tests run again.
        let unknown = Collector::new(&[], &relative);
        let done = earlier.unwrap().outcomes(&jobs, &["b"], &third, Some(&unknown));
        assert!(done.iter().all(Option::is_none));
        let (_, earlier) = Journal::open(dir.path(), "fp", false).unwrap();
        let blocks3 = Collector::new(&[], &relative);
        let g2c = blocks3.adopt("g", 2, &[]);
        blocks3.adopt("f", 0, &[]);
        let done = earlier.unwrap().outcomes(&jobs, &["b"], &third, Some(&blocks3));
        let lines = |o: &Option<JobOutcome>| sorted(third.lines_of(&o.as_ref().unwrap().covered));
        assert_eq!(
            lines(&done[0]),
            [("src/a.rs".to_string(), 1), ("src/b.rs".to_string(), 2)]
        );
        assert_eq!(lines(&done[1]), [("src/b.rs".to_string(), 2)]);
        assert_eq!(done[1].as_ref().unwrap().edges, [Edge { from: None, to: g2c }]);
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
