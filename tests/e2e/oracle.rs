//! The decoder oracle, run by every fixture trial: for every test and every profile, our
//! in-process line counts must equal `llvm-cov export -format=lcov` on the same profile, and
//! the saved matrix must hold exactly the lines llvm-cov says ran.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use cargo_sfl::coverage::BinaryCoverage;
use cargo_sfl::pipeline::KeptProfile;
use cargo_sfl::spectra::Spectra;

use crate::support::{Result, check, llvm_tool, show};

/// Per file, `(line, count)` as `llvm-cov export -format=lcov` prints them.
pub fn llvm_cov_lines(binary: &Path, profile: &Path, work: &Path) -> Result<BTreeMap<PathBuf, Vec<(u32, u64)>>> {
    let profdata = work.join("oracle.profdata");
    let merge = Command::new(llvm_tool("llvm-profdata")?)
        .args(["merge", "-sparse"])
        .arg(profile)
        .arg("-o")
        .arg(&profdata)
        .output()?;
    check(merge.status.success(), || show(&merge))?;
    let export = Command::new(llvm_tool("llvm-cov")?)
        .args(["export", "-format=lcov", "-instr-profile"])
        .arg(&profdata)
        .arg(binary)
        .output()?;
    check(export.status.success(), || show(&export))?;
    let mut files = BTreeMap::new();
    let mut current: Option<PathBuf> = None;
    for line in String::from_utf8_lossy(&export.stdout).lines() {
        if let Some(f) = line.strip_prefix("SF:") {
            current = Some(PathBuf::from(f));
        } else if let Some(da) = line.strip_prefix("DA:") {
            let (l, c) = da.split_once(',').unwrap();
            files
                .entry(current.clone().unwrap())
                .or_insert_with(Vec::new)
                .push((l.parse().unwrap(), c.parse().unwrap()));
        }
    }
    Ok(files)
}

/// For every test and profile kept in `dir`'s last run, our line counts equal llvm-cov's, and
/// the saved matrix holds exactly the lines llvm-cov says the test ran.
pub fn decoder_matches_llvm_cov(dir: &Path) -> Result {
    let target = dir.join("target/sfl");
    let index: Vec<KeptProfile> = serde_json::from_slice(&std::fs::read(target.join("profiles/index.json"))?)?;
    let spectra = Spectra::load(&target.join("spectra.json"))?;
    // llvm-profdata's output goes beside the run, not into it: the run may be shared.
    let work = tempfile::tempdir()?;
    let mut binaries: BTreeMap<PathBuf, BinaryCoverage> = BTreeMap::new();
    let mut compared = 0usize;
    for (t, kept) in index.iter().enumerate() {
        check(!kept.profiles.is_empty(), || {
            format!("{} {}: no profile kept", kept.binary, kept.name)
        })?;
        let mut ran_lines = BTreeSet::new();
        for profile in &kept.profiles {
            // A test that runs another executable of the build (`CARGO_BIN_EXE_*`) leaves a
            // profile of that executable too: each profile is read against its own binary.
            let bytes = std::fs::read(profile)?;
            let mut owner = None;
            for exe in std::iter::once(kept.binary_path.clone()).chain(executables(&target.join("debug"))) {
                let cov = match binaries.entry(exe.clone()) {
                    std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::btree_map::Entry::Vacant(v) => match BinaryCoverage::open(&exe) {
                        Ok(c) => v.insert(c),
                        Err(_) => continue,
                    },
                };
                if let Ok(decoded) = cov.decode(&bytes, false) {
                    owner = Some((exe, decoded));
                    break;
                }
            }
            let Some((exe, decoded)) = owner else {
                return Err(format!(
                    "{} {}: no binary of the build owns {}",
                    kept.binary,
                    kept.name,
                    profile.display()
                )
                .into());
            };
            let cov = &binaries[&exe];
            let ours: BTreeMap<PathBuf, Vec<(u32, u64)>> = decoded
                .into_iter()
                .map(|(f, l)| (cov.map.files[f as usize].clone(), l))
                .collect();
            let theirs = llvm_cov_lines(&exe, profile, work.path())?;
            check(ours == theirs, || {
                format!(
                    "{} {}: decoder differs from llvm-cov\nours:   {ours:?}\ntheirs: {theirs:?}",
                    kept.binary, kept.name
                )
            })?;
            compared += theirs.values().map(Vec::len).sum::<usize>();
            for (file, lines) in theirs {
                let Ok(rel) = file.strip_prefix(dir) else { continue };
                let rel = rel.to_string_lossy().replace('\\', "/");
                ran_lines.extend(lines.iter().filter(|(_, c)| *c > 0).map(|(l, _)| (rel.clone(), *l)));
            }
        }
        // The saved matrix holds the same lines for this test.
        let test_index = spectra
            .tests
            .iter()
            .position(|r| r.binary == kept.binary && r.name == kept.name)
            .unwrap();
        let in_matrix: BTreeSet<(String, u32)> = spectra
            .units
            .iter()
            .zip(&spectra.coverage)
            .filter(|(_, c)| c.contains(test_index))
            .map(|(u, _)| (u.file.clone(), u.line))
            .collect();
        check(in_matrix == ran_lines, || {
            format!("test {t} {}: matrix {in_matrix:?} vs llvm-cov {ran_lines:?}", kept.name)
        })?;
    }
    check(compared > 0, || "no lines compared".into())
}

/// The executables directly in `dir` (cargo's uplifted binaries: what `CARGO_BIN_EXE_*` names).
fn executables(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.metadata().is_ok_and(|m| m.permissions().mode() & 0o111 != 0))
        .collect();
    out.sort();
    out
}
