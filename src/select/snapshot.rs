//! What a run sees of the workspace before it builds ([`look`]): every file of the packages
//! (Rust sources as a hash per line, other files as a digest) and the context that decides
//! results beyond them (toolchain, selection and flags, environment).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::environment::volatile;
use crate::config::RunConfig;
use crate::spectra::{FileState, Snapshot};
use crate::workspace::Workspace;

/// Bump when what a snapshot records, or how it is compared, changes: an older snapshot then
/// runs every test.
const VERSION: &str = "3";

/// What a run sees of the workspace before it builds: the files of the selected packages
/// ([`files`]) and the context. `rustc` is `rustc -vV`; `packages` names the packages the
/// selection takes ([`Workspace::selected`]: the same flags take another package in another
/// directory, or with another `--manifest-path`), by name.
pub fn look(files: BTreeMap<String, FileState>, cfg: &RunConfig, rustc: &str, packages: &[String]) -> Snapshot {
    let mut context = BTreeMap::new();
    let mut part = |name: String, value: &str| {
        context.insert(name, crate::spectra::file_digest(value.as_bytes()));
    };
    part("cargo-sfl".into(), &format!("{} {VERSION}", env!("CARGO_PKG_VERSION")));
    part("toolchain".into(), rustc);
    let mut selection = cfg.selection.clone();
    // Where the workspace and the build are does not change results (a CI cache is restored
    // at another path).
    selection.manifest_path = None;
    selection.target_dir = None;
    // Where cargo's messages go is not what the run builds.
    selection.cargo_messages = false;
    // Nor whether cargo may touch the lockfile or the network (`--config` may change it: kept).
    (selection.locked, selection.offline, selection.frozen) = (false, false, false);
    let exec = &cfg.execution;
    part(
        "selection".into(),
        &format!(
            "{selection:?} packages={packages:?} filter={:?} expr={:?} ignored={:?} partition={:?} edges={} retries={:?} timeout={:?}",
            cfg.filter,
            cfg.nextest.filtersets,
            exec.ignored,
            exec.partition.map(|p| p.to_string()),
            !exec.no_edges,
            exec.retries,
            exec.test_timeout,
        ),
    );
    // cargo's configuration as this run's cargo reads it (from the current directory up,
    // `$CARGO_HOME`, `--config` files): its `[env]`, runner or flags may change any result, and
    // those outside the workspace are no file of it.
    let cwd = crate::build::config::current_dir(Path::new("."));
    for file in crate::build::config::files(&cwd, &cfg.selection.cargo_config) {
        let text = std::fs::read(&file).unwrap_or_default();
        part(
            format!("cargo configuration {}", file.display()),
            &String::from_utf8_lossy(&text),
        );
    }
    // The target runner the tests run through, and the programs and files it names: a script
    // on `PATH` is no file of the workspace either.
    let host = crate::build::host_triple(rustc);
    let runner = crate::build::config::runner(&cwd, &cfg.selection.cargo_config, host);
    if !runner.is_empty() {
        let mut described = format!("{runner:?}");
        for (i, word) in runner.iter().enumerate() {
            let path = Path::new(word);
            let found = if i == 0 && path.components().count() == 1 {
                on_path(word)
            } else {
                Some(path.to_path_buf())
            };
            if let Some(bytes) = found.and_then(|p| std::fs::read(p).ok()) {
                described.push_str(&format!(" {}", crate::spectra::file_digest(&bytes)));
            }
        }
        part("target runner".into(), &described);
    }
    for (name, value) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if !volatile(&name) {
            part(format!("env:{name}"), &value.to_string_lossy());
        }
    }
    Snapshot {
        taken: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        context,
        files,
        build_env: Vec::new(),
        script_inputs: BTreeMap::new(),
        since_green: None,
        compile_time: BTreeSet::new(),
    }
}

/// Of `files` (relative to the root), those of code that runs while compiling
/// ([`Snapshot::compile_time`]): every member's build script, and the library of a member whose
/// code runs while compiling ([`Workspace::compile_time_members`]; `compile_time_sources`).
/// A file belongs to the member whose directory holds it most nearly.
pub fn compile_time_files<'a>(ws: &Workspace, files: impl Iterator<Item = &'a String>) -> BTreeSet<String> {
    let compile_time: BTreeSet<&cargo_metadata::PackageId> = ws.compile_time_members().iter().map(|m| &m.id).collect();
    // Each member's directory, with the source directories of its compile-time code.
    let members: Vec<(PathBuf, Vec<PathBuf>)> = ws
        .members
        .iter()
        .filter_map(|m| {
            let sources = compile_time_sources(m, compile_time.contains(&m.id));
            Some((m.manifest_path.parent()?.as_std_path().to_path_buf(), sources))
        })
        .collect();
    files
        .filter(|f| {
            let path = ws.root.join(f.as_str());
            members
                .iter()
                .filter(|(d, _)| path.starts_with(d))
                .max_by_key(|(d, _)| d.components().count())
                .is_some_and(|(_, sources)| sources.iter().any(|s| path.starts_with(s)))
        })
        .cloned()
        .collect()
}

/// Where a member's build script is, and with `library` (a member whose code runs while
/// compiling) its library: the directory of each target's root file, or the file alone when it
/// is at the package's root (its tests, examples and benches are beside it).
fn compile_time_sources(m: &cargo_metadata::Package, library: bool) -> Vec<PathBuf> {
    let root = m.manifest_path.parent().map(|d| d.as_std_path());
    m.targets
        .iter()
        .filter(|t| {
            (library && crate::workspace::is_library(t)) || t.kind.contains(&cargo_metadata::TargetKind::CustomBuild)
        })
        .filter_map(|t| {
            let file = t.src_path.as_std_path();
            let dir = file.parent()?;
            Some(if Some(dir) == root { file } else { dir }.to_path_buf())
        })
        .collect()
}

/// The environment variables the build in `build_dir` declared reading: rustc's dependency
/// files (`deps`, [`dep_files`]: `# env-dep:NAME`, from `env!` and `option_env!`) and build
/// scripts' output (`cargo:rerun-if-env-changed=NAME`), sorted.
pub fn build_env(build_dir: &Path, deps: &[String]) -> Vec<String> {
    let mut names = BTreeSet::new();
    for line in deps.iter().flat_map(|text| text.lines()) {
        if let Some(rest) = line.strip_prefix("# env-dep:") {
            names.insert(rest.split('=').next().unwrap_or(rest).to_string());
        }
    }
    for output in script_outputs(build_dir) {
        if let Ok(text) = std::fs::read_to_string(output) {
            for line in text.lines() {
                let line = line.strip_prefix("cargo::").or_else(|| line.strip_prefix("cargo:"));
                if let Some(name) = line.and_then(|l| l.strip_prefix("rerun-if-env-changed=")) {
                    names.insert(name.trim().to_string());
                }
            }
        }
    }
    names.into_iter().collect()
}

/// How a snapshot names `path`: relative to `root` (`/`-separated) when under it, else whole.
pub(super) fn key_of(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

/// The output files of the build scripts run under `build_dir` (`<profile>/build/<package>-<hash>/output`).
pub(super) fn script_outputs(build_dir: &Path) -> Vec<PathBuf> {
    let read_dir = |d: PathBuf| std::fs::read_dir(d).into_iter().flatten().flatten();
    profiles(build_dir)
        .into_iter()
        .flat_map(|profile| read_dir(profile.join("build")))
        .map(|script| script.path().join("output"))
        .filter(|p| p.is_file())
        .collect()
}

/// The files of the selected packages (and the workspace's manifest, lock file, cargo and
/// nextest configuration, path dependencies outside it): Rust sources as a hash per line,
/// others as a digest.
pub fn files(ws: &Workspace) -> BTreeMap<String, FileState> {
    package_files(ws)
        .into_iter()
        .filter_map(|(rel, path)| Some((rel.clone(), state_of(&rel, &path)?)))
        .collect()
}

/// The state of file `rel` read from `path`: a Rust source as a hash per line, another file
/// as a digest; `None` when it cannot be read.
pub(super) fn state_of(rel: &str, path: &Path) -> Option<FileState> {
    let bytes = std::fs::read(path).ok()?;
    Some(if rel.ends_with(".rs") {
        FileState::lines(&bytes)
    } else {
        FileState::digest(&bytes)
    })
}

/// The files under `root` (relative to it, outside `build_dir`) that rustc's dependency files
/// (`deps`, [`dep_files`]) name and that the walk of the packages left out of `files` (a
/// file git ignores that a test `include_str!`s): the build read them, so the next run compares them too.
pub fn also_read(
    deps: &[String],
    build_dir: &Path,
    root: &Path,
    files: &BTreeMap<String, FileState>,
) -> BTreeMap<String, FileState> {
    let mut out = BTreeMap::new();
    for text in deps {
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with(' ')) {
            // The dependency lists' one-path lines, `path:`, spaces escaped.
            let Some(path) = line.strip_suffix(':').filter(|p| !p.contains(": ")) else {
                continue;
            };
            let path = root.join(path.replace("\\ ", " "));
            let Ok(rel) = path.strip_prefix(root) else { continue };
            let rel = rel.to_string_lossy().replace('\\', "/");
            if path.starts_with(build_dir)
                || files.contains_key(&rel)
                || out.contains_key(&rel)
                || rel.starts_with("..")
            {
                continue;
            }
            if let Some(state) = state_of(&rel, &path) {
                out.insert(rel, state);
            }
        }
    }
    out
}

/// Every profile's directory under `build_dir`, under a target triple's directory too
/// (`--target`).
fn profiles(build_dir: &Path) -> Vec<PathBuf> {
    let dirs = |d: &Path| -> Vec<PathBuf> {
        let entries = std::fs::read_dir(d).into_iter().flatten().flatten();
        entries.map(|e| e.path()).filter(|p| p.is_dir()).collect()
    };
    dirs(build_dir)
        .into_iter()
        .flat_map(|d| {
            let inner = dirs(&d);
            std::iter::once(d).chain(inner)
        })
        .collect()
}

/// The texts of rustc's dependency files (`deps/*.d`) of every profile under `build_dir`, read
/// once for [`build_env`] and [`also_read`].
pub fn dep_files(build_dir: &Path) -> Vec<String> {
    profiles(build_dir)
        .into_iter()
        .flat_map(|p| std::fs::read_dir(p.join("deps")).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "d"))
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// The first line of a `CACHEDIR.TAG` file.
pub const CACHE_TAG_SIGNATURE: &str = "Signature: 8a477f597d28d172789f06886806bc55";

/// Whether `dir` is tagged as a cache (the Cache Directory Tagging Specification's
/// `CACHEDIR.TAG`, which cargo writes in every target directory): another build's target
/// directory inside a package, with no `.gitignore` to leave it out, holds no source of ours
/// and may hold gigabytes.
fn is_cache_dir(dir: &Path) -> bool {
    const SIGNATURE: &[u8] = CACHE_TAG_SIGNATURE.as_bytes();
    let mut head = [0u8; SIGNATURE.len()];
    std::fs::File::open(dir.join("CACHEDIR.TAG"))
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| head == SIGNATURE)
}

/// Files and directories that version control, editors and shells keep beside the sources,
/// hidden and never read by a test: `.git` (and other systems' metadata), editors' settings
/// and state (`.idea`, `.vscode`, …), `.direnv`, swap and backup files (`.lib.rs.swp`,
/// `lib.rs~`), emacs' lock links (`.#lib.rs`), macOS's `.DS_Store`, and LLVM's raw profiles
/// (`*.profraw`). Left out of the walk, so that an editor saving its state is not an edit.
fn tool_state(name: &std::ffi::OsStr, is_dir: bool) -> bool {
    let Some(name) = name.to_str() else { return false };
    // A worktree's or submodule's `.git` is a file naming the repository.
    if name == ".git" {
        return true;
    }
    if is_dir {
        return matches!(
            name,
            ".hg" | ".svn" | ".jj" | ".pijul" | ".idea" | ".vscode" | ".fleet" | ".zed" | ".direnv"
        );
    }
    let swap = name.starts_with('.') && [".swp", ".swo", ".swn", ".swx"].iter().any(|s| name.ends_with(s));
    // An instrumented program started with a cleared environment writes its profile where it
    // runs (`default_<hash>_0.profraw`): LLVM's output, no test's input.
    let profile = name.ends_with(".profraw");
    swap || profile || name.ends_with('~') || name.starts_with(".#") || name == ".DS_Store"
}

/// Every file a test's result may depend on outside the toolchain and the registry: the
/// members' directories (as git would see them: ignored files left out, hidden ones kept, a
/// test may read `tests/data/.env` at run time; but not [`tool_state`], and not the target
/// directories, ours and any other tagged as a cache), path dependencies outside the
/// workspace, and the workspace's manifest, lock file, cargo and nextest configuration.
/// Relative to the root where inside it.
fn package_files(ws: &Workspace) -> BTreeMap<String, PathBuf> {
    let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
    for m in &ws.members {
        if let Some(dir) = m.manifest_path.parent() {
            dirs.insert(dir.as_std_path().to_path_buf());
        }
        for d in &m.dependencies {
            if let Some(p) = &d.path {
                dirs.insert(p.as_std_path().to_path_buf());
            }
        }
    }
    let skip: Vec<PathBuf> = [&ws.target_dir, &ws.cargo_target_dir, &ws.build_dir]
        .into_iter()
        .map(|d| d.canonicalize().unwrap_or_else(|_| d.clone()))
        .collect();
    let mut files = BTreeMap::new();
    let name = |path: &Path| key_of(&ws.root, path);
    for dir in dirs {
        let walk = ignore::WalkBuilder::new(&dir)
            .hidden(false)
            .filter_entry({
                let skip = skip.clone();
                move |e| {
                    let ours = skip.iter().any(|s| e.path() == s);
                    let is_dir = e.file_type().is_some_and(|t| t.is_dir());
                    let a_cache = is_dir && is_cache_dir(e.path());
                    !ours && !a_cache && !tool_state(e.file_name(), is_dir)
                }
            })
            .build();
        for entry in walk.flatten() {
            if entry.file_type().is_some_and(|t| t.is_file()) && !for_review(entry.path()) {
                files.insert(name(entry.path()), entry.into_path());
            }
        }
    }
    for extra in [
        "Cargo.toml",
        "Cargo.lock",
        ".cargo/config.toml",
        ".cargo/config",
        ".config/nextest.toml",
    ] {
        let path = ws.root.join(extra);
        if path.is_file() {
            files.insert(extra.to_string(), path);
        }
    }
    files
}

/// The program `name` as `PATH` finds it.
fn on_path(name: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Where proptest may persist a failing case of the tests in the source file `rs` (its default
/// `FileFailurePersistence::SourceParallel("proptest-regressions")`), to replay it first in later
/// runs: for a file under a `src` directory, the same path under a `proptest-regressions`
/// directory beside it with `.txt` for `.rs` (`src/a/b.rs`: `proptest-regressions/a/b.txt`);
/// else beside the file (`tests/t.rs`: `tests/t.proptest-regressions`).
fn proptest_persistence(rs: &str) -> Vec<String> {
    let Some(stem) = rs.strip_suffix(".rs") else {
        return Vec::new();
    };
    let mut out = vec![format!("{stem}.proptest-regressions")];
    let under_src = match stem.rfind("/src/") {
        Some(i) => Some((&stem[..=i], &stem[i + 5..])),
        None => stem.strip_prefix("src/").map(|rest| ("", rest)),
    };
    if let Some((package, rest)) = under_src {
        out.push(format!("{package}proptest-regressions/{rest}.txt"));
    }
    out
}

/// The Rust source whose property tests a proptest persistence file (`tests/t.proptest-regressions`,
/// `proptest-regressions/a/b.txt`) holds failing cases of ([`proptest_persistence`] backwards);
/// `None` for any other file.
pub fn persisted_for(file: &str) -> Option<String> {
    if let Some(stem) = file.strip_suffix(".proptest-regressions") {
        return Some(format!("{stem}.rs"));
    }
    let stem = file.strip_suffix(".txt")?;
    let (package, rest) = match stem.find("/proptest-regressions/") {
        Some(i) => (&stem[..=i], &stem[i + "/proptest-regressions/".len()..]),
        None => ("", stem.strip_prefix("proptest-regressions/")?),
    };
    Some(format!("{package}src/{rest}.rs"))
}

/// The snapshot with the files this run's tests wrote for later runs as they are now, so that
/// the next run does not take them for an edit ("was added since the last run", and every
/// test run again): proptest's persisted failures ([`proptest_persistence`]), written when a
/// property fails. The tests that read them are property tests, which run again after every
/// edit anyway; a later edit of such a file by a person is seen as any other.
pub fn refresh_written_by_tests(snapshot: &mut Snapshot, root: &Path) {
    let candidates: Vec<String> = snapshot
        .files
        .keys()
        .filter(|k| k.ends_with(".rs"))
        .flat_map(|k| proptest_persistence(k))
        .collect();
    for rel in candidates {
        match std::fs::read(root.join(&rel)) {
            Ok(bytes) => {
                snapshot.files.insert(rel, FileState::digest(&bytes));
            }
            Err(_) => {
                snapshot.files.remove(&rel);
            }
        }
    }
}

/// A file a failing test writes for a person to review, which no test reads: insta's new
/// snapshots (`NAME.snap.new`, `.NAME.pending-snap`). A run that wrote one is not an edit: the
/// next run would otherwise run every test because "NAME.snap.new was added" (similar's
/// snapshot tests), and the one after that because it "was removed" once they passed.
fn for_review(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".snap.new") || n.ends_with(".pending-snap"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proptest_persists_failures_beside_a_file_or_under_its_own_directory() {
        assert_eq!(proptest_persistence("tests/t.rs"), ["tests/t.proptest-regressions"]);
        assert_eq!(
            proptest_persistence("crates/x/src/a/b.rs"),
            [
                "crates/x/src/a/b.proptest-regressions",
                "crates/x/proptest-regressions/a/b.txt"
            ]
        );
        assert_eq!(
            proptest_persistence("src/lib.rs"),
            ["src/lib.proptest-regressions", "proptest-regressions/lib.txt"]
        );
        assert!(proptest_persistence("README.md").is_empty());
        for rs in ["tests/t.rs", "crates/x/src/a/b.rs", "src/lib.rs"] {
            for persisted in proptest_persistence(rs) {
                assert_eq!(persisted_for(&persisted).as_deref(), Some(rs), "{persisted}");
            }
        }
        assert_eq!(persisted_for("data/cases.txt"), None);
        assert_eq!(persisted_for("src/lib.rs"), None);
    }

    #[test]
    fn snapshots_written_for_review_are_no_source() {
        assert!(for_review(Path::new(
            "src/snapshots/similar__udiff__unified_diff.snap.new"
        )));
        assert!(for_review(Path::new("src/.lib__tests__inline.pending-snap")));
        assert!(!for_review(Path::new(
            "src/snapshots/similar__udiff__unified_diff.snap"
        )));
        assert!(!for_review(Path::new("tests/test.proptest-regressions")));
    }

    /// A file git ignores that a test `include_str!`s is named by rustc's dependency file: the build read
    /// it, so it is compared; files the walk found, the build's own and outside files are not
    /// read again.
    #[test]
    fn files_the_build_read_that_the_walk_left_out_are_added() {
        let root = tempfile::tempdir().unwrap();
        let build = root.path().join("target/sfl");
        std::fs::create_dir_all(build.join("debug/deps")).unwrap();
        std::fs::create_dir_all(root.path().join("tests/data")).unwrap();
        std::fs::write(root.path().join("tests/data/.expected"), "yes\n").unwrap();
        std::fs::write(root.path().join("tests/data/my file"), "x").unwrap();
        std::fs::write(root.path().join("tests/t.rs"), "").unwrap();
        let out = build.join("debug/deps/t.rs.out");
        std::fs::write(&out, "").unwrap();
        std::fs::write(
            build.join("debug/deps/t-1.d"),
            format!(
                "{o}: tests/t.rs tests/data/.expected\n\ntests/t.rs:\ntests/data/.expected:\ntests/data/my\\ file:\n{o}:\n/usr/lib/x.rs:\n../outside.rs:\n\n# env-dep:HOME=/root\n",
                o = out.display()
            ),
        )
        .unwrap();
        let mut files = BTreeMap::new();
        files.insert("tests/t.rs".to_string(), FileState::lines(b""));
        let read = also_read(&dep_files(&build), &build, root.path(), &files);
        assert_eq!(
            read.keys().collect::<Vec<_>>(),
            ["tests/data/.expected", "tests/data/my file"]
        );
        assert_eq!(read["tests/data/.expected"], FileState::digest(b"yes\n"));
    }

    #[test]
    fn version_control_and_editor_state_is_not_walked() {
        let state = |name: &str, is_dir: bool| tool_state(std::ffi::OsStr::new(name), is_dir);
        for dir in [".git", ".idea", ".vscode", ".direnv", ".jj"] {
            assert!(state(dir, true), "{dir}");
        }
        for file in [
            ".lib.rs.swp",
            ".main.rs.swo",
            "lib.rs~",
            ".#lib.rs",
            ".DS_Store",
            "default_1234_0.profraw",
        ] {
            assert!(state(file, false), "{file}");
        }
        assert!(state(".git", false), "a worktree's .git file");
        // What a test may read: hidden fixtures, configuration.
        for (name, is_dir) in [
            (".env", false),
            (".gitignore", false),
            (".expected", false),
            (".fixtures", true),
            (".cargo", true),
            (".github", true),
            ("swp", false),
        ] {
            assert!(!state(name, is_dir), "{name}");
        }
    }

    #[test]
    fn only_a_tagged_directory_is_a_cache() {
        let dir = tempfile::tempdir().unwrap();
        let tagged = dir.path().join("target");
        std::fs::create_dir(&tagged).unwrap();
        std::fs::write(
            tagged.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag.\n",
        )
        .unwrap();
        assert!(is_cache_dir(&tagged));
        let untagged = dir.path().join("src");
        std::fs::create_dir(&untagged).unwrap();
        assert!(!is_cache_dir(&untagged));
        std::fs::write(untagged.join("CACHEDIR.TAG"), "not the signature").unwrap();
        assert!(!is_cache_dir(&untagged), "a file of that name without the signature");
    }
}
