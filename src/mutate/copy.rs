//! The workspace's copy the mutants are written into: kept in step with the workspace's
//! sources, each round's files written over it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::schema;
use super::sites::Mutant;
use crate::error::SflError;
use crate::workspace::Workspace;

/// The copy of the workspace under the build directory, and where it is built.
pub(super) struct WorkspaceCopy {
    /// `<build dir>/mutate`: the copy's sources, its build, and the mutants' test runs.
    pub base: PathBuf,
    /// The copy's sources (`base/src`).
    pub src: PathBuf,
    /// The copy's manifest: the one asked for (or the workspace root's), at the same place.
    pub manifest: PathBuf,
    /// The copy's target directory (`base/target`).
    pub target: PathBuf,
    /// The copy, as cargo sees it.
    pub ws: Workspace,
}

impl WorkspaceCopy {
    /// The copy of `ws` in `base` (its sources already synchronised), for the manifest `asked`.
    pub fn load(ws: &Workspace, asked: Option<&Path>, base: PathBuf) -> Result<Self, SflError> {
        let src = base.join("src");
        let manifest = copy_manifest(ws, asked, &src)?;
        let target = base.join("target");
        let copy_ws = Workspace::load(Some(&manifest), Some(&target), ws.cargo_flags.clone())?;
        Ok(WorkspaceCopy {
            base,
            src,
            manifest,
            target,
            ws: copy_ws,
        })
    }
}

/// The crate roots of `ws`, each naming std as `__sfl_std` (the switch's path), so that
/// `#![no_std]` crates can read the variable too; after its last line, so no line moves.
pub(super) fn roots_naming_std(ws: &Workspace) -> BTreeMap<String, String> {
    let mut based: BTreeMap<String, String> = BTreeMap::new();
    for rel in &crate_roots(ws) {
        if let Ok(text) = std::fs::read_to_string(ws.root.join(rel)) {
            based.insert(rel.clone(), schema::name_std(&text));
        }
    }
    based
}

/// The workspace-relative source files of the members' library and binary targets.
fn crate_roots(ws: &Workspace) -> Vec<String> {
    let mut out: Vec<String> = ws
        .members
        .iter()
        .flat_map(|m| &m.targets)
        .filter(|t| {
            t.kind.iter().any(|k| {
                matches!(
                    k,
                    cargo_metadata::TargetKind::Lib
                        | cargo_metadata::TargetKind::RLib
                        | cargo_metadata::TargetKind::ProcMacro
                        | cargo_metadata::TargetKind::Bin
                )
            })
        })
        .filter_map(|t| ws.relative(t.src_path.as_std_path()))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The copy's manifest: the one asked for (or the workspace root's), at the same place in the
/// copy.
fn copy_manifest(ws: &Workspace, asked: Option<&Path>, copy: &Path) -> Result<PathBuf, SflError> {
    let original = match asked {
        Some(p) => std::path::absolute(p).map_err(|why| SflError::BadPath {
            flag: "--manifest-path",
            why,
        })?,
        None => ws.root.join("Cargo.toml"),
    };
    let rel = original
        .strip_prefix(&ws.root)
        .map_err(|_| SflError::MutateManifestOutside {
            manifest: original.clone(),
            root: ws.root.clone(),
        })?;
    Ok(copy.join(rel))
}

/// A round's files as written: each file's text, and each live site's range in it (in the
/// order of the live sites).
pub(super) struct Written {
    pub texts: Vec<String>,
    pub ranges: Vec<(usize, usize)>,
}

/// Writes every file of the round: the schema's text where it has sites, the original
/// elsewhere.
pub(super) fn write_round(
    copy: &Path,
    files: &[(String, String)],
    alive: &[&schema::Site],
    mutants: &[(usize, Mutant)],
) -> Result<Written, SflError> {
    let mut written = Written {
        texts: Vec::with_capacity(files.len()),
        ranges: vec![(0, 0); alive.len()],
    };
    for (k, (rel, text)) in files.iter().enumerate() {
        let here: Vec<usize> = (0..alive.len()).filter(|&i| alive[i].file == k).collect();
        let sites: Vec<&schema::Site> = here.iter().map(|&i| alive[i]).collect();
        let (new, r) = schema::apply(text, &sites, mutants);
        for (&i, range) in here.iter().zip(r) {
            written.ranges[i] = range;
        }
        let path = copy.join(rel);
        write_if_changed(&path, &new).map_err(|why| SflError::CannotWrite { path, why })?;
        written.texts.push(new);
    }
    Ok(written)
}

/// Makes `to` a copy of the source tree `from` (no `.git`, no target directories, nothing
/// under `skip`), writing only files whose content differs (unchanged files keep their times,
/// so cargo's incremental build sees only what changed).
pub(super) fn sync_tree(from: &Path, to: &Path, skip: &[&Path]) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let name = entry.file_name();
        let kind = entry.file_type()?;
        if name == ".git" || skip.iter().any(|s| path.starts_with(s)) {
            continue;
        }
        if kind.is_dir() {
            // A target directory (cargo marks its own) is no source.
            if path.join("CACHEDIR.TAG").exists() || path.join(".rustc_info.json").exists() {
                continue;
            }
            sync_tree(&path, &to.join(&name), skip)?;
        } else if kind.is_file() {
            let bytes = std::fs::read(&path)?;
            let dest = to.join(&name);
            if std::fs::read(&dest).ok().as_deref() != Some(&bytes[..]) {
                std::fs::write(&dest, &bytes)?;
            }
        }
    }
    Ok(())
}

pub(super) fn write_if_changed(path: &Path, text: &str) -> std::io::Result<()> {
    if std::fs::read(path).ok().as_deref() != Some(text.as_bytes()) {
        std::fs::write(path, text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_copy_leaves_out_git_and_target_directories_and_rewrites_only_changes() {
        let src = tempfile::tempdir().unwrap();
        let dst = tempfile::tempdir().unwrap();
        let w = |p: &str, t: &str| {
            let p = src.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        w("src/lib.rs", "fn a() {}");
        w(".git/HEAD", "x");
        w("target/CACHEDIR.TAG", "x");
        w("src/target/mod.rs", "// a module named target");
        sync_tree(src.path(), dst.path(), &[]).unwrap();
        assert!(dst.path().join("src/lib.rs").is_file());
        assert!(dst.path().join("src/target/mod.rs").is_file());
        assert!(!dst.path().join(".git").exists());
        assert!(!dst.path().join("target").exists());
        let before = std::fs::metadata(dst.path().join("src/lib.rs"))
            .unwrap()
            .modified()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        sync_tree(src.path(), dst.path(), &[]).unwrap();
        let after = std::fs::metadata(dst.path().join("src/lib.rs"))
            .unwrap()
            .modified()
            .unwrap();
        assert_eq!(before, after, "an unchanged file is not rewritten");
    }
}
