//! Decoding helpers: each binary's coverage map prepared once, units interned across
//! binaries, and one test's profiles and edge files decoded into covered units and edges.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::build::{Built, Workspace};
use crate::decode::{BinaryCoverage, hex};
use crate::profraw::RawProfile;
use crate::spectra::{FunctionSpan, Unit};

/// A binary's coverage map plus, per file, the unit id of each line.
pub(crate) struct Prepared {
    cov: BinaryCoverage,
    /// `line_units[file][line]` = unit id, or `u32::MAX` (not a unit).
    line_units: Vec<Vec<u32>>,
    /// Workspace-relative path per file (None: not the workspace's code).
    rel: Vec<Option<String>>,
}

#[derive(Default)]
pub(crate) struct Interner {
    ids: HashMap<Unit, u32>,
    pub(crate) units: Vec<Unit>,
    /// Functions of the workspace's files, from every coverage map.
    pub(crate) functions: std::collections::HashSet<FunctionSpan>,
}

impl Interner {
    pub(crate) fn intern(&mut self, file: &str, line: u32) -> u32 {
        let unit = Unit {
            file: file.to_string(),
            line,
        };
        if let Some(&id) = self.ids.get(&unit) {
            return id;
        }
        let id = self.units.len() as u32;
        self.units.push(unit.clone());
        self.ids.insert(unit, id);
        id
    }
}

/// All executables whose profiles we may meet, prepared lazily and once.
pub(crate) struct Coverage<'a> {
    ws: &'a Workspace,
    pub(crate) paths: Vec<PathBuf>,
    prepared: Vec<OnceLock<Result<Prepared, String>>>,
    pub(crate) units: Mutex<Interner>,
}

impl<'a> Coverage<'a> {
    pub(crate) fn new(ws: &'a Workspace, built: &Built) -> Self {
        let paths: Vec<PathBuf> = built
            .tests
            .iter()
            .map(|t| t.path.clone())
            .chain(built.others.iter().cloned())
            .collect();
        let prepared = paths.iter().map(|_| OnceLock::new()).collect();
        Coverage {
            ws,
            paths,
            prepared,
            units: Mutex::new(Interner::default()),
        }
    }

    pub(crate) fn get(&self, i: usize) -> &Result<Prepared, String> {
        self.prepared[i].get_or_init(|| {
            let cov = BinaryCoverage::open(&self.paths[i]).map_err(|e| format!("{}: {e}", self.paths[i].display()))?;
            let rel: Vec<Option<String>> = cov.map.files.iter().map(|f| self.ws.relative(f)).collect();
            let mut line_units = vec![Vec::new(); cov.map.files.len()];
            let mapped = cov.mapped_lines();
            let mut interner = self.units.lock().unwrap();
            for (file, lines) in mapped {
                let Some(path) = &rel[file as usize] else { continue };
                let max = lines.iter().map(|l| l.0).max().unwrap_or(0) as usize;
                let table = &mut line_units[file as usize];
                table.resize(max + 1, u32::MAX);
                for (line, _) in lines {
                    table[line as usize] = interner.intern(path, line);
                }
            }
            for f in cov.map.functions.iter().filter(|f| !f.dummy) {
                let own = f.regions.iter().filter(|r| r.file_id == 0);
                let (Some(start), Some(end)) = (own.clone().map(|r| r.line_start).min(), own.map(|r| r.line_end).max())
                else {
                    continue;
                };
                if let Some(Some(path)) = f.files.first().map(|&i| &rel[i as usize]) {
                    interner.functions.insert(FunctionSpan {
                        file: path.clone(),
                        start,
                        end,
                    });
                }
            }
            Ok(Prepared { cov, line_units, rel })
        })
    }

    /// Decodes one profile written by a process of test binary `own`; returns covered units.
    pub(crate) fn decode(&self, own: usize, path: &Path, covered: &mut Vec<u32>) -> Result<(), String> {
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read profile {}: {e}", path.display()))?;
        let profile = RawProfile::parse(&bytes).map_err(|e| format!("profile {}: {e}", file_name(path)))?;
        let ids = &profile.binary_ids;
        let matches = |i: usize| match self.get(i) {
            Ok(p) => p.cov.build_id.as_ref().is_some_and(|b| ids.contains(&b.as_slice())),
            Err(_) => false,
        };
        let which = if matches(own) {
            Some(own)
        } else {
            (0..self.paths.len()).find(|&i| i != own && matches(i))
        };
        let Some(which) = which else {
            if let Err(e) = self.get(own) {
                return Err(e.clone());
            }
            return Err(format!(
                "profile {} belongs to no binary of this build (build-id {}); ignored",
                file_name(path),
                ids.first().map_or("none".into(), |i| hex(i))
            ));
        };
        let p = self.get(which).as_ref().map_err(Clone::clone)?;
        let lines = p
            .cov
            .decode_parsed(&profile, true)
            .map_err(|e| format!("profile {}: {e}", file_name(path)))?;
        let mut missing = Vec::new();
        for (file, ls) in lines {
            let table = &p.line_units[file as usize];
            for (line, _) in ls {
                match table.get(line as usize) {
                    Some(&u) if u != u32::MAX => covered.push(u),
                    _ => {
                        if p.rel[file as usize].is_some() {
                            missing.push((file, line));
                        }
                    }
                }
            }
        }
        if !missing.is_empty() {
            let mut interner = self.units.lock().unwrap();
            for (file, line) in missing {
                covered.push(interner.intern(p.rel[file as usize].as_ref().unwrap(), line));
            }
        }
        Ok(())
    }
}

/// Decodes one test's edge files, turning every problem into a warning on that test.
pub(crate) fn decode_edges(
    collector: &crate::edges::Collector,
    files: &[PathBuf],
    out: &mut crate::edges::Traversed,
    warnings: &mut Vec<String>,
) {
    if files.is_empty() {
        warnings.push("the test wrote no edge file; it contributes no edges to CP".into());
    }
    for f in files {
        if let Err(w) = collector.decode(f, out) {
            warnings.push(w);
        }
    }
    if out.dropped > 0 {
        warnings.push(format!(
            "the edge recorder lost {} block transitions (recursion deeper than it tracks, or its table was full)",
            out.dropped
        ));
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
