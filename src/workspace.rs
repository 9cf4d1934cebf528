//! The workspace under analysis and what its test build produced: the members and their
//! directories, the selected packages, and the test binaries with everything needed to run
//! them. The build ([`crate::build`]), the test runner, nextest's filters and `--mutate` share
//! these.

use std::path::{Path, PathBuf};

use cargo_metadata::{MetadataCommand, Package};

use crate::config::Selection;
use crate::error::SflError;

/// Whether `t` is a package's library, of whatever crate types (`lib`, or e.g. `cdylib` and
/// `rlib` together, whose doctests cargo runs too).
pub fn is_library(t: &cargo_metadata::Target) -> bool {
    use cargo_metadata::TargetKind as K;
    t.kind
        .iter()
        .any(|k| matches!(k, K::Lib | K::RLib | K::DyLib | K::CDyLib | K::StaticLib | K::ProcMacro))
}

/// Whether cargo runs `t`'s doctests: a library that rustdoc can link them to (of crate type
/// `lib`, `rlib` or `proc-macro`; a `cdylib`- or `staticlib`-only library has none, cargo says
/// "doc tests are not supported") and that does not set `doctest = false`.
pub fn has_doctests(t: &cargo_metadata::Target) -> bool {
    use cargo_metadata::TargetKind as K;
    t.doctest && t.kind.iter().any(|k| matches!(k, K::Lib | K::RLib | K::ProcMacro))
}

/// The workspace being analysed.
#[derive(Debug)]
pub struct Workspace {
    pub root: PathBuf,
    /// `root` with symbolic links resolved.
    root_real: PathBuf,
    /// Where the instrumented build, profiles and spectra go.
    pub target_dir: PathBuf,
    /// cargo's own target directory (generated sources there are not the user's code).
    pub cargo_target_dir: PathBuf,
    /// Where cargo builds the instrumented tests: `target_dir`, or a directory of its own for
    /// a build without edge instrumentation (cargo cannot see the flags our wrapper adds, so
    /// the two kinds of build must not share one).
    pub build_dir: PathBuf,
    pub members: Vec<Package>,
    /// cargo's own options for every cargo command on it (`--locked`, `--offline`, `--frozen`,
    /// `--config`: [`Selection::cargo_flags`]).
    pub cargo_flags: Vec<String>,
    /// The members a plain `cargo test` in a virtual workspace tests (`default-members`, or
    /// every member).
    default_members: Vec<cargo_metadata::PackageId>,
    /// [`Workspace::real_path`]'s answers: every binary's debug information names the same
    /// files, and each answer is a `realpath` of its own (each map read asked them again).
    real_paths: std::sync::Mutex<std::collections::HashMap<PathBuf, Option<PathBuf>>>,
}

impl Workspace {
    /// Runs `cargo metadata` for the selection's manifest, with cargo's own options
    /// `cargo_flags` ([`Selection::cargo_flags`]).
    pub fn load(
        manifest_path: Option<&Path>,
        target_dir: Option<&Path>,
        cargo_flags: Vec<String>,
    ) -> Result<Self, SflError> {
        let mut cmd = MetadataCommand::new();
        cmd.no_deps().other_options(cargo_flags.clone());
        if let Some(p) = manifest_path {
            // Through a symbolic link, the manifest's path is not the one the compiler records
            // (it runs in the package's directory, whose path the system gives resolved):
            // every path of the workspace is taken resolved, so the coverage maps' files are
            // recognised as its own.
            cmd.manifest_path(p.canonicalize().unwrap_or_else(|_| p.to_path_buf()));
        }
        let meta = cmd.exec().map_err(|e| SflError::Metadata(e.to_string()))?;
        let members: Vec<Package> = meta.workspace_packages().into_iter().cloned().collect();
        let default_members = if meta.workspace_default_members.is_available() {
            meta.workspace_default_members.iter().cloned().collect()
        } else {
            members.iter().map(|m| m.id.clone()).collect()
        };
        let target_dir = match target_dir {
            Some(d) => std::path::absolute(d).map_err(|why| SflError::BadPath {
                flag: "--target-dir",
                why,
            })?,
            None => {
                let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
                state_dir(
                    meta.target_directory.as_std_path(),
                    meta.workspace_root.as_std_path(),
                    names,
                )
            }
        };
        let root = meta.workspace_root.into_std_path_buf();
        Ok(Workspace {
            root_real: std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone()),
            root,
            build_dir: target_dir.clone(),
            target_dir,
            cargo_target_dir: meta.target_directory.into_std_path_buf(),
            members,
            cargo_flags,
            default_members,
            real_paths: Default::default(),
        })
    }

    /// The spec to give cargo for a `--package` spec: a member's name (or `name@version`)
    /// becomes its package ID (`path+file:///…#name@version`), since a bare name is ambiguous
    /// to cargo wherever another version of the package is in the dependency graph (a
    /// dev-dependency that depends on the crate under test); other specs are cargo's to read.
    pub fn package_spec<'a>(&'a self, spec: &'a str) -> &'a str {
        let (name, version) = spec.split_once('@').unwrap_or((spec, ""));
        let mut matching = self
            .members
            .iter()
            .filter(|m| m.name.as_str() == name && (version.is_empty() || m.version.to_string() == version));
        match (matching.next(), matching.next()) {
            (Some(m), None) if !spec.contains(['/', '#', ':']) => m.id.repr.as_str(),
            _ => spec,
        }
    }

    /// The members cargo selects for `select`, as cargo does: `--package` names (a spec's name
    /// part, globs left to cargo and taken as matching), `--workspace` less `--exclude`, else
    /// the package whose manifest is the one given (or the one above the current directory),
    /// else the default members.
    pub fn selected(&self, select: &Selection) -> Vec<&Package> {
        if !select.package.is_empty() {
            let named = |m: &&Package| select.package.iter().any(|spec| spec_matches(spec, m));
            return self.members.iter().filter(named).collect();
        }
        if select.workspace {
            return self
                .members
                .iter()
                .filter(|m| !select.exclude.iter().any(|e| e == m.name.as_str()))
                .collect();
        }
        let manifest = match &select.manifest_path {
            Some(p) => std::path::absolute(p).ok(),
            None => std::env::current_dir()
                .ok()
                .and_then(|d| d.ancestors().map(|a| a.join("Cargo.toml")).find(|m| m.is_file())),
        };
        let same =
            |a: &Path, b: &Path| a == b || a.canonicalize().ok().is_some_and(|a| b.canonicalize().ok() == Some(a));
        if let Some(m) = manifest
            && let Some(p) = self.members.iter().find(|p| same(p.manifest_path.as_std_path(), &m))
        {
            return vec![p];
        }
        self.members
            .iter()
            .filter(|m| self.default_members.contains(&m.id))
            .collect()
    }

    /// The path of `file` relative to the workspace root, if it belongs to a member package:
    /// one of its files, or a file its build script generated (into its `OUT_DIR`);
    /// not another file of a target directory (a dependency's generated code).
    pub fn relative(&self, file: &Path) -> Option<String> {
        // `tests/../src/x.rs` (a `#[path]` module, a macro's `include!`) is `src/x.rs`: one
        // line is one unit whichever way the compiler reached it, and a saved file names no `..`.
        let normal = lexically_normal(file);
        let file = normal.as_path();
        let in_target = file.starts_with(&self.target_dir) || file.starts_with(&self.cargo_target_dir);
        let in_member = || {
            self.members
                .iter()
                .any(|m| m.manifest_path.parent().is_some_and(|d| file.starts_with(d)))
        };
        if (in_target && !self.generated_by_member(file)) || (!in_target && !in_member()) {
            return None;
        }
        // A file reached through a symbolic link (serde_derive_internals/src is a link to
        // serde_derive/src/internals) is one file, named by its real path when a member holds
        // that too: its lines are one unit each, whichever package's build ran them.
        let real = (!in_target).then(|| self.real_path(file)).flatten();
        let file = real.as_deref().unwrap_or(file);
        let rel = file.strip_prefix(&self.root).ok()?;
        Some(
            rel.components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/"),
        )
    }

    /// `file` (in a member) with symbolic links resolved, in terms of `root`, when that differs
    /// and is in a member too; asked of the file system once per file and run.
    fn real_path(&self, file: &Path) -> Option<PathBuf> {
        let known = || {
            self.real_paths
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some(real) = known().get(file) {
            return real.clone();
        }
        let real = self.resolve(file);
        known().insert(file.to_path_buf(), real.clone());
        real
    }

    fn resolve(&self, file: &Path) -> Option<PathBuf> {
        let real = std::fs::canonicalize(file).ok()?;
        let real = match real.strip_prefix(&self.root_real) {
            Ok(rest) => self.root.join(rest),
            Err(_) => real,
        };
        let in_member = self
            .members
            .iter()
            .any(|m| m.manifest_path.parent().is_some_and(|d| real.starts_with(d)));
        (real != file && in_member).then_some(real)
    }

    /// Whether `file` (in a target directory) is in the `OUT_DIR` of a member's build script,
    /// `…/build/NAME-HASH/out/…` with NAME a member's: code the member generates and includes
    /// (`include!(concat!(env!("OUT_DIR"), "/host.rs"))`, target-lexicon), whose lines its tests
    /// run. A dependency of the member's own name (a dev-dependency that pulls another version
    /// of it) has such a directory too, told apart only by its hash: its generated lines, if
    /// any, are ranked under their own path.
    fn generated_by_member(&self, file: &Path) -> bool {
        let parts: Vec<String> = file
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        parts.windows(3).any(|w| {
            w[0] == "build"
                && w[2] == "out"
                && w[1].rsplit_once('-').is_some_and(|(name, hash)| {
                    hash.len() == 16
                        && hash.bytes().all(|b| b.is_ascii_hexdigit())
                        && self.members.iter().any(|m| m.name.as_str() == name)
                })
        })
    }

    /// The members whose code runs while compiling: proc-macro crates, the members any member's
    /// build script depends on, and the members those depend on (normal and build dependencies
    /// within the workspace).
    pub fn compile_time_members(&self) -> Vec<&Package> {
        use cargo_metadata::{DependencyKind, TargetKind};
        let member_at = |p: &cargo_metadata::camino::Utf8Path| {
            self.members.iter().position(|m| m.manifest_path.parent() == Some(p))
        };
        let mut todo: Vec<usize> = Vec::new();
        for (i, m) in self.members.iter().enumerate() {
            if m.targets.iter().any(|t| t.kind.contains(&TargetKind::ProcMacro)) {
                todo.push(i);
            }
            todo.extend(
                m.dependencies
                    .iter()
                    .filter(|d| d.kind == DependencyKind::Build)
                    .filter_map(|d| member_at(d.path.as_deref()?)),
            );
        }
        let mut compile_time = vec![false; self.members.len()];
        while let Some(i) = todo.pop() {
            if std::mem::replace(&mut compile_time[i], true) {
                continue;
            }
            todo.extend(
                self.members[i]
                    .dependencies
                    .iter()
                    .filter(|d| d.kind != DependencyKind::Development)
                    .filter_map(|d| member_at(d.path.as_deref()?)),
            );
        }
        self.members
            .iter()
            .zip(compile_time)
            .filter_map(|(m, c)| c.then_some(m))
            .collect()
    }

    pub fn spectra_path(&self) -> PathBuf {
        self.target_dir.join("spectra.json")
    }
}

/// Where cargo sfl keeps its builds and runs without `--target-dir`: `TARGET/sfl` when cargo's
/// target directory is the workspace's own (inside it); in a target directory outside the
/// workspace, which other workspaces may share (`CARGO_TARGET_DIR`, a global
/// `build.target-dir`), a directory per workspace, `TARGET/sfl/NAME-HASH` (NAME: the first of the
/// members' names in order, HASH: of the workspace's root and all the names), so that one
/// workspace's run neither replaces nor answers for another's: two worktrees of one repository
/// keep a run each, as they would in their own `target/`.
fn state_dir(target: &Path, root: &Path, mut names: Vec<&str>) -> PathBuf {
    let sfl = target.join("sfl");
    if target.starts_with(root) {
        return sfl;
    }
    use md5::{Digest, Md5};
    names.sort_unstable();
    let mut md5 = Md5::new();
    md5.update(root.as_os_str().as_encoded_bytes());
    md5.update(format!("\n{}", names.join("\n")));
    let digest = md5.finalize();
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let first = names.first().copied().unwrap_or("workspace");
    sfl.join(format!("{first}-{hash}"))
}

/// `path` with `.` and `..` components resolved lexically (no symbolic link is followed: the
/// compiler named the file this way, and the workspace's paths are compared as names).
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(".."),
            },
            other => out.push(other),
        }
    }
    out
}

/// One test executable produced by the build.
#[derive(Debug, Clone)]
pub struct TestBinary {
    /// nextest-style id: `pkg` (lib), `pkg::bin/name`, `pkg::name` (integration test),
    /// `pkg::doctest/lib` (a library's doctests).
    pub id: String,
    /// nextest's binary kind (`lib`, `proc-macro`, `test`, `bench`, `bin`, `example`), or
    /// `doctest`, which is no nextest kind.
    pub kind: String,
    /// The cargo target's name (nextest's binary name; the library's for doctests).
    pub target: String,
    pub path: PathBuf,
    /// Index into `Workspace::members`.
    pub package: usize,
    /// `harness = false` in the manifest.
    pub custom_harness: bool,
    /// Environment `cargo test` gives this binary's tests beyond the package's own variables:
    /// `[env]` of cargo's configuration and its build script's `cargo::rustc-env`; and insta's
    /// workspace root (`INSTA_WORKSPACE_ROOT`, the answer insta would ask cargo for per process).
    pub env: Vec<(String, String)>,
    /// The target runner `cargo test` runs its tests through (`target.<triple>.runner`): a
    /// program and its arguments, before the executable. Empty: none.
    pub runner: Vec<std::ffi::OsString>,
    /// A library's doctests (`pkg::doctest/<lib>`): several executables, each test found by
    /// name here; `path` is the first of them.
    pub doctests: Option<crate::doctest::DocSuite>,
}

impl TestBinary {
    /// The executable that runs test `name` (a doctest's own; otherwise the binary's).
    pub fn exe_for(&self, name: Option<&str>) -> &Path {
        match (&self.doctests, name) {
            (Some(suite), Some(name)) => suite.test(name).map_or(&self.path, |t| &t.exe),
            _ => &self.path,
        }
    }

    /// A command that runs `exe` (this binary or one of its doctests) as `cargo test` does:
    /// through the target runner when one is set.
    pub fn command(&self, exe: &Path) -> std::process::Command {
        match self.runner.split_first() {
            Some((program, args)) => {
                let mut cmd = std::process::Command::new(program);
                cmd.args(args).arg(exe);
                cmd
            }
            None => std::process::Command::new(exe),
        }
    }
}

/// The package name a `-p` spec names: `name`, `name@version`, `name:version`, or a package ID
/// URL (`path+file:///ws/crates/strsim#0.11.1`, `…#strsim@0.11.1`, `…/dir#name`), whose name
/// is its fragment's, else its path's last part.
pub fn spec_name(spec: &str) -> &str {
    let Some((_, rest)) = spec.split_once("://") else {
        return spec.split(['@', ':']).next().unwrap_or(spec);
    };
    let (url, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let last = url.trim_end_matches('/').rsplit('/').next().unwrap_or(url);
    match fragment.split_once('@') {
        Some((name, _)) => name,
        None if fragment.is_empty() || fragment.starts_with(|c: char| c.is_ascii_digit()) => last,
        None => fragment,
    }
}

/// Whether the `-p` spec `spec` selects the member `m`: by name (a glob matches every member,
/// cargo narrowing them), or for a package ID URL of a path package by its directory, and the
/// name and version its fragment gives.
pub fn spec_matches(spec: &str, m: &Package) -> bool {
    let Some((_, rest)) = spec.split_once("://") else {
        let name = spec_name(spec);
        return name.contains(['*', '?', '[']) || name == m.name.as_str();
    };
    let (url, fragment) = rest.split_once('#').unwrap_or((rest, ""));
    let version = fragment
        .rsplit_once('@')
        .map(|(_, v)| v)
        .or_else(|| fragment.starts_with(|c: char| c.is_ascii_digit()).then_some(fragment));
    let dir_matches = spec.starts_with("file://") || spec.starts_with("path+file://");
    let same_dir = m
        .manifest_path
        .parent()
        .is_some_and(|d| Path::new(url.trim_end_matches('/')) == d.as_std_path());
    let named = fragment.is_empty() || version == Some(fragment) || spec_name(spec) == m.name.as_str();
    (if dir_matches {
        same_dir
    } else {
        spec_name(spec) == m.name.as_str()
    }) && named
        && version.is_none_or(|v| v == m.version.to_string())
}

/// What the build produced.
#[derive(Debug, Default)]
pub struct Built {
    pub tests: Vec<TestBinary>,
    /// Other instrumented executables (bins that integration tests may run).
    pub others: Vec<PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_spec_names_its_package_in_every_form() {
        for (spec, name) in [
            ("strsim", "strsim"),
            ("strsim@0.11.1", "strsim"),
            ("strsim:0.11.1", "strsim"),
            ("path+file:///tmp/ws/crates/strsim#0.11.1", "strsim"),
            ("path+file:///tmp/ws/crates/strsim#strsim@0.11.1", "strsim"),
            ("path+file:///tmp/ws/crates/dir#app", "app"),
            ("path+file:///tmp/ws/crates/app/", "app"),
            ("https://github.com/rust-lang/cargo#cargo-util@0.2.0", "cargo-util"),
        ] {
            assert_eq!(spec_name(spec), name, "{spec}");
        }
    }

    /// ryu's tests include the library's modules with `#[path = "../src/…"]`: the coverage map
    /// names `tests/../src/d2s.rs`, which is `src/d2s.rs`.
    #[test]
    fn paths_are_made_relative_after_resolving_dot_dot() {
        assert_eq!(
            lexically_normal(Path::new("/w/tests/../src/d2s.rs")),
            Path::new("/w/src/d2s.rs")
        );
        assert_eq!(lexically_normal(Path::new("/w/./a/b/../../c.rs")), Path::new("/w/c.rs"));
        assert_eq!(lexically_normal(Path::new("../x.rs")), Path::new("../x.rs"));
        assert_eq!(lexically_normal(Path::new("/../x.rs")), Path::new("/x.rs"));
    }

    /// The workspace's own target directory holds one `sfl`; a target directory outside it, one
    /// per workspace (its root and members, whatever their order).
    #[test]
    fn a_shared_target_directory_keeps_a_directory_per_workspace() {
        let own = state_dir(Path::new("/w/target"), Path::new("/w"), vec!["a"]);
        assert_eq!(own, Path::new("/w/target/sfl"));
        let shared = Path::new("/cache/target");
        let a = state_dir(shared, Path::new("/w"), vec!["b", "a"]);
        assert!(a.starts_with("/cache/target/sfl") && a.file_name().unwrap().to_string_lossy().starts_with("a-"));
        assert_eq!(a, state_dir(shared, Path::new("/w"), vec!["a", "b"]));
        assert_ne!(a, state_dir(shared, Path::new("/worktree/of/w"), vec!["a", "b"]));
        assert_ne!(a, state_dir(shared, Path::new("/w"), vec!["a"]));
        assert_ne!(
            state_dir(shared, Path::new("/v"), vec!["c"]),
            state_dir(shared, Path::new("/u"), vec!["d"])
        );
    }
}
