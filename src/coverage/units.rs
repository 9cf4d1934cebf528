//! Per-test profiles to the units (workspace source lines) they covered, with unit ids shared
//! by every test binary of the run.
//!
//! [`LineDecoder`] prepares each binary once ([`BinaryUnits`]: its coverage map and, per file
//! and line, the unit id) and decodes profiles from any worker; [`UnitTable`] names the units
//! and collects the workspace's functions; [`LineDecoder::finish`] puts the units in code order.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap as HashMap;

use super::decode::{BinaryCoverage, Layouts};
use super::profraw::{RawProfile, TEMPLATE_SUFFIX, Template};
use crate::bitset::hex;
use crate::error::DecodeError;
use crate::per_binary::{BinaryError, PerBinary};
use crate::spectra::{FunctionSpan, Unit, UnitId};

/// Why one profile contributed no coverage (a warning on its test).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("profile {name}: {source}")]
    Decode { name: String, source: DecodeError },
    #[error(transparent)]
    Binary(#[from] BinaryError<DecodeError>),
    #[error("counters {name}: their binary's profile template: {source}")]
    Template { name: String, source: Arc<TemplateError> },
    #[error("profile {name} belongs to no binary of this build (build-id {build_id}); ignored")]
    Foreign { name: String, build_id: String },
}

/// Why a binary's profile template ([`Template`]) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Decode { path: PathBuf, source: DecodeError },
}

/// The units of the run, numbered as first met (any order: see [`LineDecoder::finish`]).
#[derive(Default)]
pub struct UnitTable {
    /// By file (as interned in `files`) and line: looking a line up allocates nothing (a
    /// binary's every mapped line is looked up when it is prepared).
    ids: HashMap<(u32, u32), UnitId>,
    files: HashMap<String, u32>,
    units: Vec<Unit>,
    /// Functions of the workspace's files, from every coverage map.
    functions: Functions,
}

impl UnitTable {
    /// The id of `file:line`, new if it was not seen before.
    pub fn intern(&mut self, file: &str, line: u32) -> UnitId {
        let f = self.file(file);
        self.intern_in(f, file, line)
    }

    /// The number of workspace file `file` in this table.
    fn file(&mut self, file: &str) -> u32 {
        match self.files.get(file) {
            Some(&f) => f,
            None => {
                let f = self.files.len() as u32;
                self.files.insert(file.to_string(), f);
                f
            }
        }
    }

    /// [`UnitTable::intern`] with the file already numbered (`f`, from [`UnitTable::file`]).
    fn intern_in(&mut self, f: u32, file: &str, line: u32) -> UnitId {
        let next = UnitId(self.units.len() as u32);
        let id = *self.ids.entry((f, line)).or_insert(next);
        if id == next {
            self.units.push(Unit {
                file: file.to_string(),
                line,
            });
        }
        id
    }

    /// The units in code order (so output is stable), with where each id went.
    pub fn sorted(self) -> SortedUnits {
        let mut order: Vec<u32> = (0..self.units.len() as u32).collect();
        order.sort_by(|&a, &b| self.units[a as usize].cmp(&self.units[b as usize]));
        let mut new_id = vec![UnitId(0); order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = UnitId(new as u32);
        }
        SortedUnits {
            units: order.iter().map(|&o| self.units[o as usize].clone()).collect(),
            functions: self.functions.joined(),
            new_id,
        }
    }
}

/// The units in code order, and where each id handed out during the run went.
pub struct SortedUnits {
    pub units: Vec<Unit>,
    pub functions: Vec<FunctionSpan>,
    /// `new_id[id]`: the position in `units` of the unit that had id `id`.
    pub new_id: Vec<UnitId>,
}

/// One binary's coverage map with, per file and line, its unit.
pub struct BinaryUnits {
    cov: BinaryCoverage,
    /// The profile its fork server wrote for its forked tests' counters, read on first use.
    template: std::sync::OnceLock<Result<Template, Arc<TemplateError>>>,
    /// `line_units[file][line]`: the unit of that line (None: the map has no region there).
    line_units: Vec<Arc<Vec<Option<UnitId>>>>,
    /// Workspace-relative path per file (None: not the workspace's code).
    rel: Vec<Option<String>>,
}

impl BinaryUnits {
    /// The profile template its fork server wrote (`<exe>.sfl-template.profraw`), read once.
    fn template(&self) -> Result<&Template, &Arc<TemplateError>> {
        let read = || {
            let mut path = self.cov.path.clone().into_os_string();
            path.push(TEMPLATE_SUFFIX);
            let path = PathBuf::from(path);
            let bytes = std::fs::read(&path).map_err(|source| TemplateError::Read {
                path: path.clone(),
                source,
            })?;
            Template::parse(&bytes).map_err(|source| TemplateError::Decode { path, source })
        };
        self.template.get_or_init(|| read().map_err(Arc::new)).as_ref()
    }
}

/// A file of a coverage map in which no file is the workspace's, if so: every executable of the
/// build contains the workspace's code, so such a map comes from a build of another copy (a
/// moved or copied workspace whose target directory came along). Not when a directory the map
/// names holds the executable `exe`: a proc-macro crate's doctests run none of its code, and
/// their map names only the generated sources, relative to that directory.
fn built_elsewhere<'a>(exe: &Path, files: &'a [PathBuf], rel: &[Option<String>]) -> Option<&'a Path> {
    // A doctest runner of a proc-macro crate names only its own generated sources, beside it
    // under the directory it was compiled in: built here.
    if rel.iter().any(Option::is_some) || files.iter().any(|f| f.is_absolute() && exe.starts_with(f)) {
        return None;
    }
    // The map's own sources come first; std's and dependencies' sit under other roots.
    let own = |f: &&PathBuf| {
        f.is_absolute() && !f.starts_with("/rustc") && !f.components().any(|c| c.as_os_str() == ".cargo")
    };
    files.iter().find(own).or(files.first()).map(PathBuf::as_path)
}

/// Decodes the profiles of all executables of a build (test binaries and the binaries they
/// run) into units, preparing each binary once.
pub struct LineDecoder<'a> {
    binaries: PerBinary<BinaryUnits, DecodeError>,
    relative: &'a (dyn Fn(&Path) -> Option<String> + Sync),
    units: Mutex<UnitTable>,
    /// Files laid out once for all binaries (a library's doctest executables share most).
    layouts: Layouts,
    /// Per shared layout (by id): the unit of each of its lines, for the workspace's files.
    layout_units: Mutex<HashMap<usize, Arc<Vec<Option<UnitId>>>>>,
    /// Per executable, its build-id, read on its own when a profile is matched to it.
    build_ids: Vec<std::sync::OnceLock<Option<Vec<u8>>>>,
}

impl<'a> LineDecoder<'a> {
    /// `paths`: every executable whose profiles may turn up; `relative` names the workspace's
    /// files (None: not ours).
    pub fn new(paths: Vec<PathBuf>, relative: &'a (dyn Fn(&Path) -> Option<String> + Sync)) -> Self {
        LineDecoder {
            build_ids: paths.iter().map(|_| std::sync::OnceLock::new()).collect(),
            binaries: PerBinary::new(paths),
            relative,
            units: Mutex::new(UnitTable::default()),
            layouts: Layouts::default(),
            layout_units: Mutex::new(HashMap::default()),
        }
    }

    pub fn paths(&self) -> &[PathBuf] {
        self.binaries.paths()
    }

    /// More executables whose profiles may turn up (the doctests, built while the other tests
    /// ran), after the others.
    pub fn add_binaries(&mut self, more: Vec<PathBuf>) {
        self.build_ids.extend(more.iter().map(|_| std::sync::OnceLock::new()));
        self.binaries.extend(more);
    }

    /// Binary `i`, its coverage map read on first use (e.g. while its tests are listed).
    pub fn binary(&self, i: usize) -> Result<Arc<BinaryUnits>, BinaryError<DecodeError>> {
        self.binaries.get(i, |path| self.prepare(path))
    }

    /// Drops what was read of binary `i` (its tests have finished); read again if needed.
    pub fn evict(&self, i: usize) {
        self.binaries.evict(i);
    }

    fn prepare(&self, path: &Path) -> Result<BinaryUnits, DecodeError> {
        let cov = BinaryCoverage::open_sharing(path, &self.layouts)?;
        let rel: Vec<Option<String>> = cov.map.files.iter().map(|f| (self.relative)(f)).collect();
        if let Some(elsewhere) = built_elsewhere(path, &cov.map.files, &rel) {
            crate::ui::warn(format!(
                "{}: its coverage map names none of this workspace's files (it names {}): it was built \
                 from a copy of the workspace at another path, and cargo reused it because the sources \
                 look unchanged. No line of it can be ranked; delete cargo sfl's target directory \
                 (target/sfl by default) and run again",
                path.display(),
                elsewhere.display()
            ));
        }
        // Each shared layout's lines are interned once, whichever binary met it first.
        let none = Arc::new(Vec::new());
        let mut line_units = vec![none; cov.map.files.len()];
        let mut by_layout = self.layout_units.lock().expect("not poisoned");
        let mut table = self.units.lock().expect("not poisoned");
        for (file, id, lines) in cov.layout_ids() {
            let Some(path) = &rel[file as usize] else { continue };
            let units = by_layout.entry(id).or_insert_with(|| {
                let max = lines.iter().copied().max().unwrap_or(0) as usize;
                let mut of_file = vec![None; if lines.is_empty() { 0 } else { max + 1 }];
                let f = table.file(path);
                for &line in lines {
                    of_file[line as usize] = Some(table.intern_in(f, path, line));
                }
                Arc::new(of_file)
            });
            line_units[file as usize] = units.clone();
        }
        drop(by_layout);
        table.functions.add(&cov.map, &rel);
        Ok(BinaryUnits {
            cov,
            template: std::sync::OnceLock::new(),
            line_units,
            rel,
        })
    }

    /// The binary that wrote `profile`: test binary `own` if the build-ids say so, else the
    /// first other binary of the build that matches.
    fn owner(&self, own: usize, profile: &RawProfile, name: &str) -> Result<Arc<BinaryUnits>, ProfileError> {
        let ids = &profile.binary_ids;
        let matches = |i: usize| {
            self.binary(i)
                .is_ok_and(|b| b.cov.build_id.as_ref().is_some_and(|id| ids.contains(&id.as_slice())))
        };
        // Another executable (a binary the test ran) is looked for by its build-id alone:
        // reading each one's coverage map would name its lines as units, and which ones were
        // read before the match would depend on the order cargo reported them in.
        let has_id = |i: usize| {
            self.build_ids[i]
                .get_or_init(|| crate::coverage::covmap::build_id_of(&self.binaries.paths()[i]))
                .as_ref()
                .is_some_and(|id| ids.contains(&id.as_slice()))
        };
        let which = if matches(own) {
            Some(own)
        } else {
            (0..self.binaries.len()).find(|&i| i != own && has_id(i) && matches(i))
        };
        match which {
            Some(i) => Ok(self.binary(i)?),
            None => {
                self.binary(own)?;
                Err(ProfileError::Foreign {
                    name: name.to_string(),
                    build_id: ids.first().map_or("none".into(), |i| hex(i)),
                })
            }
        }
    }

    /// Decodes one profile written by a process of test binary `own`; appends the units it
    /// covered to `covered`.
    pub fn decode(&self, own: usize, path: &Path, covered: &mut Vec<UnitId>) -> Result<(), ProfileError> {
        let bytes = std::fs::read(path).map_err(|source| ProfileError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let name = file_name(path);
        let failed = |source| ProfileError::Decode {
            name: name.clone(),
            source,
        };
        let own_units;
        let profile = if path.extension().is_some_and(|e| e == "counters") {
            // A forked test's counters alone: its binary's template holds the rest.
            own_units = self.binary(own)?;
            let template = own_units.template().map_err(|source| ProfileError::Template {
                name: name.clone(),
                source: Arc::clone(source),
            })?;
            template.profile(&bytes).map_err(failed)?
        } else {
            RawProfile::parse(&bytes).map_err(failed)?
        };
        let b = self.owner(own, &profile, &name)?;
        let lines = b.cov.decode_parsed(&profile, true).map_err(failed)?;
        // A line the binary's units did not list up front is still a unit when it is the
        // workspace's: it is named now.
        let mut unmapped = Vec::new();
        for (file, ls) in lines {
            let of_file = &b.line_units[file as usize];
            for (line, _) in ls {
                match of_file.get(line as usize).copied().flatten() {
                    Some(u) => covered.push(u),
                    None if b.rel[file as usize].is_some() => unmapped.push((file, line)),
                    None => {}
                }
            }
        }
        if !unmapped.is_empty() {
            let mut table = self.units.lock().expect("not poisoned");
            for (file, line) in unmapped {
                covered.push(table.intern(b.rel[file as usize].as_ref().expect("ours"), line));
            }
        }
        Ok(())
    }

    /// Decodes the profiles one test of test binary `own` wrote, turning every problem into a
    /// warning on that test.
    pub fn decode_test(&self, own: usize, profiles: &[PathBuf], covered: &mut Vec<UnitId>, warnings: &mut Vec<String>) {
        if profiles.is_empty() {
            warnings.push("the test wrote no profile; it contributes no coverage".into());
        }
        for p in profiles {
            if let Err(e) = self.decode(own, p, covered) {
                warnings.push(e.to_string());
            }
        }
    }

    /// The `(file, line)` of each of `ids`: ids are this process's numbering, so what outlives
    /// it (the resume journal) stores lines.
    pub fn lines_of(&self, ids: &[UnitId]) -> Vec<(String, u32)> {
        let mut lines = Vec::with_capacity(ids.len());
        self.each_line_of(ids, |file, line| lines.push((file.to_string(), line)));
        lines
    }

    /// [`LineDecoder::lines_of`] handed to `f` one by one, without a copy of each file's name.
    pub fn each_line_of(&self, ids: &[UnitId], mut f: impl FnMut(&str, u32)) {
        let table = self.units.lock().expect("not poisoned");
        for id in ids {
            let u = &table.units[id.index()];
            f(&u.file, u.line);
        }
    }

    /// The ids of `lines` in this process (interned if not met yet).
    pub fn ids_of<'l>(&self, lines: impl IntoIterator<Item = (&'l str, u32)>) -> Vec<UnitId> {
        let mut table = self.units.lock().expect("not poisoned");
        lines.into_iter().map(|(file, line)| table.intern(file, line)).collect()
    }

    /// The workspace's files that units were met in so far.
    pub fn files(&self) -> Vec<String> {
        let table = self.units.lock().expect("not poisoned");
        table.files.keys().cloned().collect()
    }

    /// The units met in code order (so output is stable) and the workspace's functions.
    pub fn finish(self) -> SortedUnits {
        self.units.into_inner().expect("not poisoned").sorted()
    }
}

/// The workspace's functions in the coverage maps of one or more binaries: each function's
/// lines in its own file, closures too, an async function's body joined to its signature
/// ([`join_bodies`]) once every map is in (a binary may hold the body and not the function
/// callers call: a library's unit tests that never call it).
#[derive(Default)]
pub struct Functions {
    spans: HashSet<FunctionSpan>,
    /// Where each workspace file (relative path) is, as a map names it.
    sources: HashMap<String, PathBuf>,
}

impl Functions {
    /// The functions of a coverage map (`rel`: each of its files' workspace-relative path,
    /// `None` when not ours).
    fn add(&mut self, map: &crate::coverage::covmap::CoverageMap, rel: &[Option<String>]) {
        for f in map.functions.iter().filter(|f| !f.dummy) {
            let own = f.regions.iter().filter(|r| r.file_id == 0);
            let (Some(start), Some(end)) = (own.clone().map(|r| r.line_start).min(), own.map(|r| r.line_end).max())
            else {
                continue;
            };
            let Some(&file) = f.files.first() else { continue };
            let Some(Some(path)) = rel.get(file as usize) else {
                continue;
            };
            if let Some(source) = map.files.get(file as usize) {
                self.sources.entry(path.clone()).or_insert_with(|| source.clone());
            }
            self.spans.insert(FunctionSpan {
                file: path.clone(),
                start,
                end,
            });
        }
    }

    /// The workspace's functions in the coverage map of the executable at `path`, read on
    /// their own (test selection checks an edit against them before the doctests are built).
    pub fn add_binary(&mut self, path: &Path, relative: &dyn Fn(&Path) -> Option<String>) -> Result<(), DecodeError> {
        let file = std::fs::File::open(path).map_err(|source| DecodeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let info = crate::coverage::covmap::read_binary(&object::ReadCache::new(file))?;
        let rel: Vec<Option<String>> = info.map.files.iter().map(|f| relative(f)).collect();
        self.add(&info.map, &rel);
        Ok(())
    }

    /// The functions, sorted, bodies joined.
    pub fn joined(self) -> Vec<FunctionSpan> {
        let Functions { spans, sources } = self;
        let mut texts: HashMap<String, Option<String>> = HashMap::default();
        join_bodies(spans.into_iter().collect(), |file, line| {
            let text = texts
                .entry(file.to_string())
                .or_insert_with(|| sources.get(file).and_then(|p| std::fs::read_to_string(p).ok()));
            text.as_deref()
                .and_then(|t| t.lines().nth(line as usize - 1))
                .is_some_and(|l| l.trim() == "{")
        })
    }
}

/// The functions with each function that starts inside another and ends after it joined to
/// it, and so is one that starts on a line holding only `{` right after another ends
/// (`opens_alone(file, line)` says which lines do). rustc compiles an `async fn` as two: the
/// function a caller calls, whose coverage spans the signature up to the body's `{`, and the
/// body, a closure from that `{` on (`work` at lines 18-20 and `work::{closure}` at 20-23; with
/// a `where` clause, the `{` on a line of its own after it). A reader sees one function, and two
/// would take two of the report's first places, one led by a parameter's line. A closure inside
/// a function ends before it does; two functions side by side share no line unless written on
/// one, and the second starts with its signature. Sorted, without duplicates.
fn join_bodies(mut spans: Vec<FunctionSpan>, mut opens_alone: impl FnMut(&str, u32) -> bool) -> Vec<FunctionSpan> {
    spans.sort();
    spans.dedup();
    let mut out: Vec<FunctionSpan> = Vec::with_capacity(spans.len());
    for f in spans {
        // The function before it in this file that it starts inside, or right after, and
        // outlasts.
        let joined = out.iter_mut().rev().take_while(|g| g.file == f.file).find(|g| {
            g.end < f.end
                && g.start <= f.start
                && (f.start <= g.end || (f.start == g.end + 1 && opens_alone(&f.file, f.start)))
        });
        match joined {
            Some(g) => g.end = f.end,
            None => out.push(f),
        }
    }
    out.sort();
    out.dedup();
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_async_function_s_body_is_joined_to_its_signature() {
        let span = |file: &str, start, end| FunctionSpan {
            file: file.into(),
            start,
            end,
        };
        let joined = join_bodies(
            vec![
                // `async fn work(\n n: u32,\n) -> u32 {` and its body, with a closure inside.
                span("src/lib.rs", 20, 23),
                span("src/lib.rs", 18, 20),
                span("src/lib.rs", 21, 22),
                // A one-line signature: the body starts on it.
                span("src/lib.rs", 30, 30),
                span("src/lib.rs", 30, 33),
                // A function with a closure inside, and the same lines in another file.
                span("src/lib.rs", 40, 50),
                span("src/lib.rs", 42, 44),
                span("src/lib.rs", 42, 44),
                span("src/other.rs", 20, 23),
                // `async fn peek(&mut self)\n where\n T: Unpin,\n {`: the body starts on the
                // next line, alone; a function right after another starts with its signature.
                span("src/lib.rs", 26, 28),
                span("src/lib.rs", 29, 36),
                span("src/other.rs", 24, 26),
            ],
            |file, line| file == "src/lib.rs" && line == 29,
        );
        assert_eq!(
            joined,
            [
                span("src/lib.rs", 18, 23),
                span("src/lib.rs", 21, 22),
                span("src/lib.rs", 26, 36),
                span("src/lib.rs", 30, 33),
                span("src/lib.rs", 40, 50),
                span("src/lib.rs", 42, 44),
                span("src/other.rs", 20, 23),
                span("src/other.rs", 24, 26),
            ]
        );
    }

    #[test]
    fn a_map_naming_no_workspace_file_was_built_elsewhere() {
        let files: Vec<PathBuf> = ["/rustc/abc/library/core/src/option.rs", "/old/copy/src/lib.rs"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let exe = Path::new("/new/place/target/sfl/debug/deps/t-1");
        assert_eq!(
            built_elsewhere(exe, &files, &[None, None]),
            Some(Path::new("/old/copy/src/lib.rs"))
        );
        assert_eq!(built_elsewhere(exe, &files, &[None, Some("src/lib.rs".into())]), None);
        assert_eq!(built_elsewhere(exe, &[], &[]), None);
        // A proc-macro crate's merged doctests: the compilation directory, then the generated
        // sources relative to it.
        let doctests: Vec<PathBuf> = [
            "/ws",
            "target/sfl/doctests/m/merged_doctest_2021_0/doctest_bundle_2021.rs",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let runner = Path::new("/ws/target/sfl/doctests/m/merged_doctest_2021_0/rust_out");
        assert_eq!(built_elsewhere(runner, &doctests, &[None, None]), None);
        assert_eq!(
            built_elsewhere(Path::new("/moved/target/sfl/x"), &doctests, &[None, None]),
            Some(Path::new("/ws"))
        );
    }
}
