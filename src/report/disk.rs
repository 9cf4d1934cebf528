//! What the reports show of the checkout they were made in, read before rendering (the
//! renderers read no file and run no command): source lines, where the repository is, which
//! files failing tests panicked in, the current directory.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// The checkout as the reports show it.
#[derive(Debug, Default)]
pub struct Disk {
    /// Source lines of the files a report shows.
    pub sources: Sources,
    /// Where SARIF's paths are relative to; `None`: the workspace root.
    pub repository: Option<Repository>,
    /// The current directory: `--format short` prints paths relative to it when inside it.
    pub here: Option<PathBuf>,
    /// Files of the workspace (relative to its root) that failing tests' panic sites name.
    pub panic_files: HashSet<String>,
    /// The workspace's members, for cargo's JSON messages (`--message-format json`).
    pub packages: Vec<Package>,
    /// When the shown functions' lines last changed, from `git blame` (empty outside git).
    pub history: History,
}

/// The commits that last changed each line of some files (`git blame`), and when it was read.
#[derive(Debug, Default)]
pub struct History {
    /// Seconds since the epoch when it was read (ages count to it).
    pub now: i64,
    pub commits: Vec<Commit>,
    /// Per file (relative to the workspace root), per line (0-based) an index into `commits`.
    pub lines: HashMap<String, Vec<u32>>,
}

/// The blamed lines of a `git blame --porcelain` output, added to `history` as `file`'s.
impl History {
    pub fn add_blame(&mut self, file: &str, porcelain: &str) {
        let mut by_hash: HashMap<&str, u32> = HashMap::new();
        let mut lines: Vec<u32> = Vec::new();
        let mut current: Option<u32> = None;
        for line in porcelain.lines() {
            if line.starts_with('\t') {
                continue;
            }
            let mut words = line.split(' ');
            let first = words.next().unwrap_or_default();
            if first.len() == 40 && first.bytes().all(|b| b.is_ascii_hexdigit()) {
                let Some(at) = words.nth(1).and_then(|w| w.parse::<usize>().ok()) else {
                    continue;
                };
                let index = *by_hash.entry(first).or_insert_with(|| {
                    let uncommitted = first.bytes().all(|b| b == b'0');
                    self.commits.push(Commit {
                        short: (!uncommitted).then(|| first[..7].to_string()),
                        time: self.now,
                        summary: String::new(),
                    });
                    (self.commits.len() - 1) as u32
                });
                if lines.len() < at {
                    lines.resize(at, index);
                }
                lines[at - 1] = index;
                current = Some(index);
                continue;
            }
            let Some(c) = current
                .map(|c| &mut self.commits[c as usize])
                .filter(|c| c.short.is_some())
            else {
                continue;
            };
            let rest = line[first.len()..].trim_start();
            match first {
                "committer-time" => c.time = rest.parse().unwrap_or(c.time),
                "summary" => c.summary = rest.to_string(),
                _ => {}
            }
        }
        if !lines.is_empty() {
            self.lines.insert(file.to_string(), lines);
        }
    }
}

/// A commit as the report names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its abbreviated hash; `None`: lines not committed yet.
    pub short: Option<String>,
    /// Its committer time (seconds since the epoch; `now` for uncommitted lines).
    pub time: i64,
    /// Its subject line.
    pub summary: String,
}

impl History {
    /// The most recent change among lines `start..=end` of `file`: uncommitted lines first, then
    /// the newest commit (`None` when the file was not read).
    pub fn last_change(&self, file: &str, start: u32, end: u32) -> Option<&Commit> {
        let lines = self.lines.get(file)?;
        let range = start.saturating_sub(1) as usize..(end as usize).min(lines.len());
        lines
            .get(range)?
            .iter()
            .map(|&c| &self.commits[c as usize])
            .max_by_key(|c| (c.short.is_none(), c.time))
    }

    /// `last changed 3 days ago in 1a2b3c4 "subject"`, or that it has uncommitted changes.
    pub fn describe(&self, c: &Commit) -> String {
        match &c.short {
            None => "changed since the last commit (not committed yet)".into(),
            Some(short) => format!(
                "last changed {} in {short} \"{}\"",
                ago(self.now - c.time),
                cut(&c.summary, 60)
            ),
        }
    }
}

/// `text`, cut to `max` characters with an ellipsis.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    text.chars().take(max - 1).chain(['…']).collect()
}

/// `just now`, `5 minutes ago`, `3 days ago`, `2 years ago`.
fn ago(secs: i64) -> String {
    let (n, unit) = match secs.max(0) {
        s if s < 60 => return "just now".into(),
        s if s < 3600 => (s / 60, "minute"),
        s if s < 86_400 => (s / 3600, "hour"),
        s if s < 86_400 * 60 => (s / 86_400, "day"),
        s if s < 86_400 * 730 => (s / (86_400 * 30), "month"),
        s => (s / (86_400 * 365), "year"),
    };
    crate::ui::counted(n as usize, unit, &format!("{unit}s")) + " ago"
}

/// A workspace member as cargo's messages name it.
#[derive(Debug)]
pub struct Package {
    pub id: cargo_metadata::PackageId,
    pub manifest_path: String,
    pub targets: Vec<cargo_metadata::Target>,
}

/// The repository a workspace is in.
#[derive(Debug, PartialEq, Eq)]
pub struct Repository {
    /// Its top level.
    pub root: PathBuf,
    /// The workspace's path inside it, with a trailing `/` (empty at the top level).
    pub prefix: String,
}

/// Source lines by file (relative to the workspace root), only of files a report may show
/// (`Spectra::may_show`: a loaded file's sources only where they match their recorded digest).
#[derive(Debug, Default)]
pub struct Sources {
    files: HashMap<String, Vec<String>>,
}

impl Sources {
    /// Adds `file`'s text.
    pub fn insert(&mut self, file: &str, text: &str) {
        self.files
            .insert(file.to_string(), text.lines().map(str::to_string).collect());
    }

    /// Line `line` (1-based) of `file`, when its text was read.
    pub fn line(&self, file: &str, line: u32) -> Option<&str> {
        self.files
            .get(file)?
            .get(line.checked_sub(1)? as usize)
            .map(String::as_str)
    }

    /// Every line of `file` (none when its text was not read).
    pub fn lines(&self, file: &str) -> &[String] {
        self.files.get(file).map_or(&[], Vec::as_slice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "1111111111111111111111111111111111111111";
    const B: &str = "2222222222222222222222222222222222222222";
    const NONE: &str = "0000000000000000000000000000000000000000";

    /// Lines 1-2 from an old commit, 3 from a newer one, 4 not committed; a commit's details
    /// come once, at its first line.
    fn blamed() -> History {
        let porcelain = format!(
            "{A} 1 1 2\nauthor X\ncommitter-time 1000\nsummary old work\nfilename src/lib.rs\n\tfn a() {{\n\
             {A} 2 2\n\t}}\n\
             {B} 5 3 1\nauthor Y\ncommitter-time 500000\nsummary fix: the parser's off-by-one\nfilename src/lib.rs\n\t  x + 1\n\
             {NONE} 4 4 1\nauthor Not Committed Yet\ncommitter-time 900000\nsummary Version of src/lib.rs from src/lib.rs\n\t  y\n"
        );
        let mut h = History {
            now: 1_000_000,
            ..History::default()
        };
        h.add_blame("src/lib.rs", &porcelain);
        h
    }

    #[test]
    fn a_span_is_as_new_as_its_newest_line() {
        let h = blamed();
        assert_eq!(h.lines["src/lib.rs"], [0, 0, 1, 2]);
        let old = h.last_change("src/lib.rs", 1, 2).unwrap();
        assert_eq!((old.short.as_deref(), old.time), (Some("1111111"), 1000));
        let newer = h.last_change("src/lib.rs", 1, 3).unwrap();
        assert_eq!(newer.summary, "fix: the parser's off-by-one");
        assert_eq!(
            h.describe(newer),
            "last changed 5 days ago in 2222222 \"fix: the parser's off-by-one\""
        );
        let open = h.last_change("src/lib.rs", 2, 9).unwrap();
        assert_eq!(open.short, None, "uncommitted lines are the newest");
        assert!(h.describe(open).starts_with("changed since the last commit"));
        assert!(h.last_change("src/other.rs", 1, 3).is_none());
        assert!(h.last_change("src/lib.rs", 7, 9).is_none(), "past the blamed lines");
    }

    #[test]
    fn ages_and_long_subjects_read_short() {
        assert_eq!(ago(59), "just now");
        assert_eq!(ago(61), "1 minute ago");
        assert_eq!(ago(7200), "2 hours ago");
        assert_eq!(ago(86_400), "1 day ago");
        assert_eq!(ago(86_400 * 90), "3 months ago");
        assert_eq!(ago(86_400 * 800), "2 years ago");
        assert_eq!(cut(&"x".repeat(80), 10), format!("{}…", "x".repeat(9)));
    }
}
