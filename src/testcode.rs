//! Which lines are test code: `#[test]` functions (any attribute whose last segment is `test`,
//! e.g. `#[tokio::test]`), items under `#[cfg(test)]` (also `cfg(all(test, …))`), modules
//! such items declare in other files, files of integration tests, benches and examples (under
//! a `tests/`, `benches/` or `examples/` directory), and every file of a workspace member that
//! only other members' tests use (a dev-dependency, never a normal or build one). Parsed with
//! syn by [`crate::syntax`]; a file that does not parse is left as it is (none of its lines are
//! called test code).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::spectra::Spectra;
use crate::syntax::Parsed;

/// Test code per workspace-relative file: whole files, and line ranges of the others.
#[derive(Debug, Default, PartialEq)]
pub struct TestCode {
    pub whole_files: BTreeSet<String>,
    pub ranges: BTreeMap<String, Vec<(u32, u32)>>,
}

impl TestCode {
    /// Reads the given files (paths relative to `root`, `/`-separated).
    pub fn find(root: &Path, files: &[&str]) -> TestCode {
        Self::find_in(&mut Parsed::new(root), files, &test_support_dirs(root))
    }

    /// Like `find`, with files parsed once for every other use of their syntax, and the
    /// workspace's test-support directories ([`support_dirs`]) known.
    pub fn find_in(parsed: &mut Parsed, files: &[&str], support: &[String]) -> TestCode {
        let root = parsed.root().to_path_buf();
        let mut out = TestCode::default();
        let mut test_modules: BTreeSet<PathBuf> = BTreeSet::new();
        let sources: Vec<&str> = files
            .iter()
            .copied()
            .filter(|rel| !is_test_path(rel) && !support.iter().any(|d| rel.starts_with(d.as_str())))
            .collect();
        parsed.prefetch(&sources);
        for &rel in files {
            if is_test_path(rel) || support.iter().any(|d| rel.starts_with(d.as_str())) {
                out.whole_files.insert(rel.to_string());
                continue;
            }
            let Some(syntax) = parsed.file(rel) else { continue };
            if syntax.test_file {
                out.whole_files.insert(rel.to_string());
            } else if !syntax.test_ranges.is_empty() {
                out.ranges.insert(rel.to_string(), syntax.test_ranges.clone());
            }
            test_modules.extend(declared_test_modules(&root, rel, &syntax.test_modules));
        }
        // A module's declaring file may hold no code of its own (a `lib.rs` or `mod.rs` of
        // `mod` and `pub use` lines only), so no coverage names it: read those too (base64's
        // `#[cfg(test)] mod tests;` in a lib.rs of declarations ranked src/tests.rs).
        let listed: BTreeSet<&str> = files.iter().copied().collect();
        let parents: BTreeSet<String> = sources
            .iter()
            .flat_map(|rel| declaring_files(rel))
            .filter(|p| !listed.contains(p.as_str()) && root.join(p).is_file())
            .collect();
        for rel in &parents {
            let Some(syntax) = parsed.file(rel) else { continue };
            test_modules.extend(declared_test_modules(&root, rel, &syntax.test_modules));
        }
        // Modules declared `#[cfg(test)] mod name;` are test code wherever they live.
        for &rel in files {
            if test_modules.iter().any(|m| m.ends_with(rel) && m.starts_with(&root)) {
                out.whole_files.insert(rel.to_string());
                out.ranges.remove(rel);
            }
        }
        out
    }

    pub fn contains(&self, file: &str, line: u32) -> bool {
        self.whole_files.contains(file)
            || self
                .ranges
                .get(file)
                .is_some_and(|r| r.iter().any(|&(a, b)| a <= line && line <= b))
    }
}

/// [`support_dirs`] of the workspace at `root`, asking cargo for its members. Empty when
/// `root` is not a cargo workspace (an imported matrix) or cargo cannot read it.
fn test_support_dirs(root: &Path) -> Vec<String> {
    let Ok(meta) = cargo_metadata::MetadataCommand::new()
        .manifest_path(root.join("Cargo.toml"))
        .no_deps()
        .exec()
    else {
        return Vec::new();
    };
    support_dirs(meta.workspace_root.as_std_path(), &meta.workspace_packages())
}

/// Directories (relative to `workspace_root`, ending in `/`) of the `members` that only tests
/// use: some member has them as a dev-dependency and none as a normal or build dependency.
pub fn support_dirs(workspace_root: &Path, members: &[&cargo_metadata::Package]) -> Vec<String> {
    use cargo_metadata::DependencyKind;
    let used_as = |name: &str, dev: bool| {
        members.iter().any(|m| {
            m.dependencies
                .iter()
                .any(|d| d.name == name && d.path.is_some() && (d.kind == DependencyKind::Development) == dev)
        })
    };
    members
        .iter()
        .filter(|m| used_as(&m.name, true) && !used_as(&m.name, false))
        .filter_map(|m| {
            let dir = m
                .manifest_path
                .parent()?
                .as_std_path()
                .strip_prefix(workspace_root)
                .ok()?;
            let rel: Vec<String> = dir
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            // The root package is never test support: everything would be test code.
            (!rel.is_empty()).then(|| format!("{}/", rel.join("/")))
        })
        .collect()
}

/// Files of integration tests, benches and examples.
pub(crate) fn is_test_path(rel: &str) -> bool {
    let parts: Vec<&str> = rel.split('/').collect();
    parts[..parts.len().saturating_sub(1)]
        .iter()
        .any(|p| matches!(*p, "tests" | "benches" | "examples"))
}

/// The files that can declare the module in `rel` (`src/a/b.rs` or `src/a/b/mod.rs`):
/// `src/a/mod.rs`, `src/a.rs`, and a crate root in `src/a/` (`lib.rs`, `main.rs`).
fn declaring_files(rel: &str) -> Vec<String> {
    let path = Path::new(rel);
    let module_dir = match path.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs") => path.parent().and_then(Path::parent),
        _ => path.parent(),
    };
    let Some(dir) = module_dir else { return Vec::new() };
    let mut out: Vec<String> = ["mod.rs", "lib.rs", "main.rs"]
        .iter()
        .map(|f| dir.join(f).to_string_lossy().replace('\\', "/"))
        .collect();
    if let (Some(up), Some(stem)) = (dir.parent(), dir.file_name()) {
        out.push(
            up.join(format!("{}.rs", stem.to_string_lossy()))
                .to_string_lossy()
                .replace('\\', "/"),
        );
    }
    out.retain(|p| p != rel);
    out
}

/// Where the modules `names`, declared `#[cfg(test)] mod name;` in `rel`, can live.
fn declared_test_modules(root: &Path, rel: &str, names: &[String]) -> Vec<PathBuf> {
    names
        .iter()
        .flat_map(|name| module_files(&root.join(rel), name))
        .collect()
}

/// Where `mod name;` declared in `file` can live.
fn module_files(file: &Path, name: &str) -> Vec<PathBuf> {
    let Some(dir) = file.parent() else { return Vec::new() };
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
    let base = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    vec![base.join(format!("{name}.rs")), base.join(name).join("mod.rs")]
}

/// Per unit of `spectra`, whether it is test code, found in the sources read through `parsed`
/// (rooted at the workspace): what the collect saves with the spectra (`SourceFacts`).
pub fn test_units(spectra: &Spectra, parsed: &mut Parsed, support: &[String]) -> Vec<bool> {
    let mut files: Vec<&str> = spectra.units.iter().map(|u| u.file.as_str()).collect();
    files.dedup();
    let tests = TestCode::find_in(parsed, &files, support);
    spectra.units.iter().map(|u| tests.contains(&u.file, u.line)).collect()
}

/// The matrix without the lines that are test code (how every report ranks by default), and
/// how many lines were left out: as the spectra's saved facts say, or (spectra saved without
/// them) as the sources read through `parsed` say.
pub fn without_test_code(spectra: &Spectra, parsed: &mut Parsed) -> (Spectra, usize) {
    let keep: Vec<bool> = match &spectra.facts {
        Some(f) => (0..spectra.units.len()).map(|u| !f.test_code.contains(u)).collect(),
        None => {
            let support = test_support_dirs(parsed.root());
            test_units(spectra, parsed, &support).into_iter().map(|t| !t).collect()
        }
    };
    let left_out = keep.iter().filter(|k| !**k).count();
    (spectra.retain_units(&keep), left_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member only other members' tests depend on is test support: all of it is test code.
    #[test]
    fn members_only_tests_use_are_test_code() {
        let dir = tempfile::tempdir().unwrap();
        let write = |rel: &str, text: &str| {
            let p = dir.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"app\", \"core\", \"testkit\"]\nresolver = \"2\"\n",
        );
        let pkg = |name: &str, deps: &str| {
            format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n{deps}")
        };
        write(
            "app/Cargo.toml",
            &pkg("app", "[dependencies]\ncore = { path = \"../core\" }\n"),
        );
        write(
            "core/Cargo.toml",
            &pkg("core", "[dev-dependencies]\ntestkit = { path = \"../testkit\" }\n"),
        );
        write("testkit/Cargo.toml", &pkg("testkit", ""));
        for m in ["app", "core", "testkit"] {
            write(&format!("{m}/src/lib.rs"), "pub fn f() {}\n");
        }
        assert_eq!(test_support_dirs(dir.path()), ["testkit/"]);
        let files = ["app/src/lib.rs", "core/src/lib.rs", "testkit/src/lib.rs"];
        let t = TestCode::find(dir.path(), &files);
        assert!(t.contains("testkit/src/lib.rs", 1));
        assert!(!t.contains("core/src/lib.rs", 1) && !t.contains("app/src/lib.rs", 1));
        assert!(test_support_dirs(&dir.path().join("no-such-dir")).is_empty());
    }

    /// A `#[cfg(test)] mod tests;` in a crate root or `mod.rs` that holds no code of its own
    /// (so no coverage lists it) still makes the module's file test code (base64's
    /// src/tests.rs and src/write/encoder_tests.rs were ranked).
    #[test]
    fn a_test_module_declared_in_a_file_without_code_is_test_code() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("write")).unwrap();
        std::fs::write(src.join("lib.rs"), "pub mod write;\n#[cfg(test)]\nmod tests;\n").unwrap();
        std::fs::write(src.join("tests.rs"), "pub fn random_alphabet() -> u8 {\n    1\n}\n").unwrap();
        std::fs::write(
            src.join("write/mod.rs"),
            "mod encoder;\n#[cfg(test)]\nmod encoder_tests;\n",
        )
        .unwrap();
        std::fs::write(src.join("write/encoder.rs"), "pub fn encode() {}\n").unwrap();
        std::fs::write(src.join("write/encoder_tests.rs"), "fn helper() {}\n").unwrap();
        // Coverage names only the files with code.
        let found = TestCode::find(
            dir.path(),
            &["src/tests.rs", "src/write/encoder.rs", "src/write/encoder_tests.rs"],
        );
        assert!(found.contains("src/tests.rs", 1), "{found:?}");
        assert!(found.contains("src/write/encoder_tests.rs", 1), "{found:?}");
        assert!(!found.contains("src/write/encoder.rs", 1), "{found:?}");
        assert_eq!(
            super::declaring_files("src/write/encoder.rs"),
            [
                "src/write/mod.rs",
                "src/write/lib.rs",
                "src/write/main.rs",
                "src/write.rs"
            ]
        );
    }

    /// A module file that opens with `#![cfg(test)]` is test code though its parent declares
    /// it with a plain `mod test;`, and so are the module files it declares.
    #[test]
    fn a_file_that_says_cfg_test_is_test_code() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("pool/test")).unwrap();
        std::fs::write(src.join("lib.rs"), "mod pool;\n").unwrap();
        std::fs::write(src.join("pool/mod.rs"), "mod test;\npub fn run() {}\n").unwrap();
        std::fs::write(src.join("pool/test.rs"), "#![cfg(test)]\nmod helpers;\nfn spawn() {}\n").unwrap();
        std::fs::write(src.join("pool/test/helpers.rs"), "pub fn wait() {}\n").unwrap();
        let files = [
            "src/lib.rs",
            "src/pool/mod.rs",
            "src/pool/test.rs",
            "src/pool/test/helpers.rs",
        ];
        let t = TestCode::find(dir.path(), &files);
        assert!(t.contains("src/pool/test.rs", 3) && t.contains("src/pool/test/helpers.rs", 1));
        assert!(!t.contains("src/pool/mod.rs", 2) && !t.contains("src/lib.rs", 1));
    }

    #[test]
    fn finds_test_functions_modules_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("deep")).unwrap();
        std::fs::write(
            src.join("lib.rs"),
            "pub fn f() -> u32 {\n    1\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {}\n}\n\
             #[tokio::test]\nasync fn g() {}\n#[cfg(all(test, unix))]\nfn h() {}\n#[cfg(not(test))]\nfn k() {}\n\
             #[cfg(test)]\nmod deep;\nmod other;\n",
        )
        .unwrap();
        std::fs::write(src.join("deep.rs"), "fn helper() {}\n").unwrap();
        std::fs::write(src.join("other.rs"), "pub fn o() {}\n#[test]\nfn ot() {}\n").unwrap();
        let files = [
            "src/lib.rs",
            "src/deep.rs",
            "src/other.rs",
            "tests/it.rs",
            "examples/demo.rs",
        ];
        let t = TestCode::find(dir.path(), &files);
        assert_eq!(t.ranges["src/lib.rs"], vec![(5, 9), (10, 11), (12, 13), (16, 17)]);
        assert!(!t.contains("src/lib.rs", 2) && !t.contains("src/lib.rs", 15));
        assert!(t.contains("src/lib.rs", 8));
        assert!(t.contains("src/deep.rs", 1) && t.whole_files.contains("tests/it.rs"));
        assert!(t.whole_files.contains("examples/demo.rs"));
        assert_eq!(t.ranges["src/other.rs"], vec![(2, 3)]);
        assert!(!t.contains("src/other.rs", 1));
    }
}
