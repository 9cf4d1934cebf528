//! The inputs the workspace's build scripts declared (`cargo:rerun-if-changed=PATH`) beyond
//! the files the walk compares ([`script_inputs`]): a file outside the packages, or one git
//! ignores, from which a build script generates code. cargo runs the script again when one
//! changes, so the code the tests run changes with no source of the workspace changed; the
//! next run compares them before it builds ([`changed_input`]) and runs every test when one
//! changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::spectra::{FileState, Snapshot};

/// Directories declared as inputs are read whole up to this many files (cargo looks at every
/// file under one); past it the directory counts by its listing alone.
const DIRECTORY_FILES: usize = 10_000;

/// The paths the build scripts of `members` declared in their last output under `build_dir`
/// that `files` (the walk's) does not hold, each with its state now: relative to `root` when
/// under it, else absolute.
pub fn script_inputs(
    members: &[cargo_metadata::Package],
    build_dir: &Path,
    root: &Path,
    files: &BTreeMap<String, FileState>,
) -> BTreeMap<String, FileState> {
    let mut out = BTreeMap::new();
    let has_script = |p: &cargo_metadata::Package| p.targets.iter().any(cargo_metadata::Target::is_custom_build);
    for output in super::snapshot::script_outputs(build_dir) {
        let Some(dir) = output
            .parent()
            .and_then(|d| d.file_name())
            .map(|d| d.to_string_lossy().into_owned())
        else {
            continue;
        };
        // `build/<package>-<hash>/output`.
        let Some((package, _)) = dir.rsplit_once('-') else {
            continue;
        };
        // A package whose build script is gone left its last output behind: not an input now.
        let Some(package_dir) = members
            .iter()
            .find(|p| p.name.as_str() == package && has_script(p))
            .and_then(|p| p.manifest_path.parent())
        else {
            continue;
        };
        let Ok(text) = std::fs::read_to_string(&output) else {
            continue;
        };
        for line in text.lines() {
            let line = line.strip_prefix("cargo::").or_else(|| line.strip_prefix("cargo:"));
            let Some(path) = line.and_then(|l| l.strip_prefix("rerun-if-changed=")) else {
                continue;
            };
            let path = package_dir.as_std_path().join(path.trim());
            let key = super::snapshot::key_of(root, &path);
            if files.contains_key(&key) || path.starts_with(build_dir) {
                continue;
            }
            out.entry(key).or_insert_with(|| input_state(&path));
        }
    }
    out
}

/// The first input a build script declared in the last run (`then`) whose state is not the
/// same now, and why every test runs, in words.
pub(super) fn changed_input(then: &Snapshot, root: &Path) -> Option<String> {
    then.script_inputs.iter().find_map(|(key, old)| {
        let path = if Path::new(key).is_absolute() {
            PathBuf::from(key)
        } else {
            root.join(key)
        };
        (input_state(&path) != *old).then(|| format!("{key}, which a build script reads (rerun-if-changed), changed"))
    })
}

/// A file's digest; a directory's, over its files' paths and digests; a path that is not
/// there, the digest of nothing with a mark no file's contents give.
fn input_state(path: &Path) -> FileState {
    if path.is_dir() {
        let mut listing = String::new();
        let mut files = 0;
        for entry in walk(path) {
            files += 1;
            let rel = entry
                .strip_prefix(path)
                .unwrap_or(&entry)
                .to_string_lossy()
                .into_owned();
            let digest = if files <= DIRECTORY_FILES {
                std::fs::read(&entry)
                    .map(|b| crate::spectra::file_digest(&b))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            listing.push_str(&format!("{rel}\t{digest}\n"));
        }
        return FileState::digest(format!("dir\n{listing}").as_bytes());
    }
    match std::fs::read(path) {
        Ok(bytes) => FileState::digest(&bytes),
        Err(_) => FileState::Digest("absent".into()),
    }
}

/// The files under `dir`, every one (as cargo looks at a declared directory: ignored and hidden
/// files too), sorted.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let walk = ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .sort_by_file_path(|a, b| a.cmp(b))
        .build();
    walk.flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(ignore::DirEntry::into_path)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_declared_input_outside_the_walk_is_compared_again() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("ws");
        let build = root.join("target/sfl/debug/build");
        let script = build.join("gen-0123456789abcdef");
        let other = build.join("serde-0123456789abcdef");
        for d in [&script, &other, &tmp.path().join("data/dir")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(tmp.path().join("data/n.txt"), "1").unwrap();
        std::fs::write(tmp.path().join("data/dir/a"), "a").unwrap();
        std::fs::write(root.join("local.txt"), "x").unwrap();
        std::fs::write(
            script.join("output"),
            "cargo:rerun-if-changed=build.rs\ncargo::rerun-if-changed=../data/n.txt\n\
             cargo:rerun-if-changed=local.txt\ncargo:rerun-if-changed=../data/dir\n",
        )
        .unwrap();
        // A dependency's script: not a member's.
        std::fs::write(other.join("output"), "cargo:rerun-if-changed=../data/n.txt\n").unwrap();
        // The last output of a member whose build script was removed since.
        let gone = build.join("old-0123456789abcdef");
        std::fs::create_dir_all(&gone).unwrap();
        std::fs::write(gone.join("output"), "cargo:rerun-if-changed=../data/gone.txt\n").unwrap();
        let script_target = serde_json::json!({
            "name": "build-script-build", "kind": ["custom-build"], "crate_types": ["bin"],
            "src_path": root.join("build.rs"), "edition": "2021", "doctest": false, "test": false, "doc": false,
        });
        let member = |name: &str, targets: serde_json::Value| -> cargo_metadata::Package {
            serde_json::from_value(serde_json::json!({
                "name": name, "version": "0.1.0", "id": format!("path+file:///ws/{name}#0.1.0"), "source": null,
                "dependencies": [], "features": {}, "targets": targets,
                "manifest_path": root.join("Cargo.toml"),
            }))
            .unwrap()
        };
        let members = vec![
            member("gen", serde_json::json!([script_target])),
            member("old", serde_json::json!([])),
        ];
        let files: BTreeMap<String, FileState> = [("build.rs".to_string(), FileState::digest(b""))].into();
        let inputs = script_inputs(&members, &root.join("target/sfl"), &root, &files);
        let outside = "../data/n.txt";
        let keys: Vec<&String> = inputs.keys().collect();
        assert_eq!(keys.len(), 3, "{keys:?}");
        assert!(
            inputs.contains_key("local.txt") && inputs.contains_key(outside),
            "{keys:?}"
        );
        let then = Snapshot {
            script_inputs: inputs,
            ..Snapshot::default()
        };
        assert_eq!(changed_input(&then, &root), None);
        std::fs::write(tmp.path().join("data/dir/b"), "b").unwrap();
        assert!(changed_input(&then, &root).is_some_and(|why| why.contains("data/dir")));
        std::fs::remove_file(tmp.path().join("data/dir/b")).unwrap();
        std::fs::write(tmp.path().join("data/n.txt"), "2").unwrap();
        assert_eq!(
            changed_input(&then, &root),
            Some(format!(
                "{outside}, which a build script reads (rerun-if-changed), changed"
            ))
        );
    }
}
