//! Tests whose rows are samples, not facts: a property test draws new inputs on every run, so
//! the lines its last run took say nothing about the next one. Such a test is not reused.
//!
//! Two signs, both cheap: the test's own coverage of unchanged code changed between two runs
//! ([`crate::select::Reuse::varied`]), which marks it for good; or the test binary links a crate
//! that makes random inputs and that the package asks for only to test with (a dev-dependency:
//! quickcheck, proptest and the like), which marks its tests until two runs of one cover the
//! same lines (a test that links `rand` only to make its data goes where it went).

use std::path::Path;

use object::{Object, ObjectSymbol};

/// Crates whose presence in a test binary, as a dev-dependency, means its tests may draw
/// random inputs.
const RANDOMISED: &[&str] = &[
    "quickcheck",
    "proptest",
    "bolero",
    "arbtest",
    "rand",
    "fastrand",
    "oorandom",
    "nanorand",
    "proptest_arbitrary_interop",
];

/// The randomised-input crates among a package's dev-dependencies that are not also required
/// dependencies (a library that uses `rand` itself is no sign about its tests; an optional one,
/// such as indexmap's `quickcheck` feature for `Arbitrary` impls, is), by crate name.
pub fn candidates(package: &cargo_metadata::Package) -> Vec<String> {
    let normal = |name: &str| {
        package.dependencies.iter().any(|d| {
            d.kind == cargo_metadata::DependencyKind::Normal && !d.optional && d.name.replace('-', "_") == name
        })
    };
    let mut found: Vec<String> = package
        .dependencies
        .iter()
        .filter(|d| d.kind == cargo_metadata::DependencyKind::Development)
        .map(|d| d.name.replace('-', "_"))
        .filter(|n| RANDOMISED.contains(&n.as_str()) && !normal(n))
        .collect();
    found.sort();
    found.dedup();
    found
}

/// The first of `crates` that the executable at `exe` links (a function of the crate, or one
/// of its generic functions instantiated there), read from its symbol table.
pub fn linked(exe: &Path, crates: &[String]) -> Option<String> {
    if crates.is_empty() {
        return None;
    }
    let data = std::fs::read(exe).ok()?;
    let file = object::File::parse(&*data).ok()?;
    // The crate's name as both manglings spell a path's first segment (`10quickcheck`).
    let marks: Vec<(String, &String)> = crates.iter().map(|c| (format!("{}{c}", c.len()), c)).collect();
    for sym in file.symbols() {
        let Ok(name) = sym.name() else { continue };
        for (mark, krate) in &marks {
            if !name.contains(mark.as_str()) {
                continue;
            }
            let shown = format!("{:#}", rustc_demangle::demangle(name));
            let own = shown.starts_with(&format!("{krate}::"))
                || shown.contains(&format!("<{krate}::"))
                || shown.contains(&format!(" as {krate}::"));
            if own {
                return Some((*krate).clone());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_is_read_for_the_crates_it_links() {
        // This test binary links serde_json (a dependency) and not quickcheck.
        let me = std::env::current_exe().unwrap();
        let asked = vec!["quickcheck".to_string(), "serde_json".to_string()];
        assert_eq!(linked(&me, &asked).as_deref(), Some("serde_json"));
        assert_eq!(linked(&me, &asked[..1]), None);
        assert_eq!(linked(&me, &[]), None);
    }
}
