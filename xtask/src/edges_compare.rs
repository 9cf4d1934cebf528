//! `cargo xtask bench edges --against OTHER`: the edges each test took as this build of cargo
//! sfl records them against another build's (e.g. one with an earlier recorder), per crate:
//! the traversals `(test, from block, to block)` both found, and those only one did. Blocks are
//! compared by name `(function, index)`; functions only one build names as the workspace's are
//! counted apart, since the block-to-line map, not the recorder, decides that.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{Context, Result};
use cargo_sfl::spectra::Spectra;

/// `(binary, test)`, then the two blocks' `(function, index)` (None: the entry edge).
type Traversal = ((String, String), Option<(String, u32)>, (String, u32));

pub struct Comparison {
    pub name: String,
    pub both: usize,
    pub only_ours: usize,
    pub only_theirs: usize,
    /// Functions (and their traversals) only one build has.
    pub functions_only_ours: (usize, usize),
    pub functions_only_theirs: (usize, usize),
}

/// Runs `other` (a cargo-sfl binary) on `manifest` into a target directory of its own and
/// compares its edges with `ours` (the spectra this build saved).
pub fn compare(name: &str, other: &Path, manifest: &Path, ours: &Spectra) -> Result<Comparison> {
    let dir = manifest.parent().context("manifest dir")?.join("target/sfl-against");
    let out = std::process::Command::new(other)
        .args(["sfl", "-q", "--format", "json", "--test-timeout", "600", "--target-dir"])
        .arg(&dir)
        .arg("--manifest-path")
        .arg(manifest)
        .output()?;
    anyhow::ensure!(
        matches!(out.status.code(), Some(0 | 3)),
        "{} failed on {name}:\n{}",
        other.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = Spectra::load(&dir.join("spectra.json")).map_err(anyhow::Error::msg)?;
    Ok(diff(name, &traversals(ours)?, &traversals(&theirs)?))
}

fn traversals(s: &Spectra) -> Result<BTreeSet<Traversal>> {
    let e = s.edges.as_ref().context("no edges saved")?;
    let block = |b: cargo_sfl::edges::BlockId| {
        let b = &e.blocks[b.index()];
        (b.function.clone(), b.index)
    };
    let mut out = BTreeSet::new();
    for (edge, tests) in e.edges.iter().zip(&e.coverage) {
        for t in (0..s.tests.len()).filter(|&t| tests.contains(t)) {
            let test = &s.tests[t];
            out.insert((
                (test.binary.clone(), test.name.clone()),
                edge.from.map(block),
                block(edge.to),
            ));
        }
    }
    Ok(out)
}

fn diff(name: &str, ours: &BTreeSet<Traversal>, theirs: &BTreeSet<Traversal>) -> Comparison {
    let functions = |t: &BTreeSet<Traversal>| t.iter().map(|x| x.2.0.clone()).collect::<BTreeSet<_>>();
    let (fo, ft) = (functions(ours), functions(theirs));
    let apart = |set: &BTreeSet<Traversal>, only: &BTreeSet<&String>| {
        (only.len(), set.iter().filter(|x| only.contains(&x.2.0)).count())
    };
    let only_o: BTreeSet<&String> = fo.difference(&ft).collect();
    let only_t: BTreeSet<&String> = ft.difference(&fo).collect();
    let shared = |set: &BTreeSet<Traversal>| -> BTreeSet<Traversal> {
        set.iter()
            .filter(|x| fo.contains(&x.2.0) && ft.contains(&x.2.0))
            .cloned()
            .collect()
    };
    let (so, st) = (shared(ours), shared(theirs));
    Comparison {
        name: name.to_string(),
        both: so.intersection(&st).count(),
        only_ours: so.difference(&st).count(),
        only_theirs: st.difference(&so).count(),
        functions_only_ours: apart(ours, &only_o),
        functions_only_theirs: apart(theirs, &only_t),
    }
}

pub fn render(rows: &[Comparison], other: &Path) -> String {
    let mut s = format!(
        "\n## Edges against another build\n\nEach test's edges `(test, from block, to block)` as this build records them \
         against `{}`, on the same crates. Traversals of functions both builds name as the workspace's, then the \
         functions only one of them names (and their traversals).\n\n\
         | crate | both | only this build | only the other | functions only this build | functions only the other |\n\
         |---|---:|---:|---:|---:|---:|\n",
        other.display()
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} ({} traversals) | {} ({} traversals) |\n",
            r.name,
            r.both,
            r.only_ours,
            r.only_theirs,
            r.functions_only_ours.0,
            r.functions_only_ours.1,
            r.functions_only_theirs.0,
            r.functions_only_theirs.1
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(test: &str, from: Option<(&str, u32)>, to: (&str, u32)) -> Traversal {
        (
            ("b".into(), test.into()),
            from.map(|(f, i)| (f.to_string(), i)),
            (to.0.to_string(), to.1),
        )
    }

    #[test]
    fn shared_functions_are_compared_and_the_rest_counted_apart() {
        let ours: BTreeSet<_> = [t("a", None, ("f", 0)), t("a", Some(("f", 0)), ("f", 1))].into();
        let theirs: BTreeSet<_> = [t("a", None, ("f", 0)), t("b", None, ("f", 0)), t("a", None, ("g", 0))].into();
        let c = diff("x", &ours, &theirs);
        assert_eq!((c.both, c.only_ours, c.only_theirs), (1, 1, 1));
        assert_eq!((c.functions_only_ours, c.functions_only_theirs), ((0, 0), (1, 1)));
    }
}
