//! `cargo xtask readme`: regenerates the README's sample report, the standard output of the
//! README's demo command (`cargo run --release -- sfl --manifest-path fixtures/minmax/Cargo.toml`),
//! between the `sample-report` marker comments. The end-to-end trial `docs::sample_report` fails
//! when the README and the demo disagree, and names this chore.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The line before the sample's fenced block.
pub const BEGIN: &str = "<!-- sample-report:begin -->";
/// The line after it.
pub const END: &str = "<!-- sample-report:end -->";

pub fn run(check: bool) -> Result<()> {
    let root = crate::root();
    let sfl = crate::build_sfl()?;
    // A copy of the fixture, so that the run leaves no target directory under fixtures/.
    let dir = root.join("target/readme/minmax");
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    crate::copy_tree(&root.join("fixtures/minmax"), &dir)?;
    let report = demo(&sfl, &dir)?;

    let path = root.join("README.md");
    let readme = std::fs::read_to_string(&path)?;
    let updated = splice(&readme, &report)?;
    if updated == readme {
        println!("README.md: the sample report is up to date");
    } else if check {
        bail!("README.md: the sample report differs from the demo's output; run `cargo xtask readme`");
    } else {
        std::fs::write(&path, updated)?;
        println!("README.md: sample report regenerated");
    }
    Ok(())
}

/// The demo's standard output on the fixture copy in `dir`, normalised.
fn demo(sfl: &Path, dir: &Path) -> Result<String> {
    let out = Command::new(sfl)
        .args(["sfl", "--color", "never", "--manifest-path"])
        .arg(dir.join("Cargo.toml"))
        .current_dir(dir)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", sfl.display()))?;
    if out.status.code() != Some(0) {
        bail!("the demo exited with {} (expected 0: a report)", out.status);
    }
    Ok(normalise(&String::from_utf8(out.stdout)?))
}

/// Text as the README keeps it: no trailing whitespace on any line, no blank lines at the end.
pub fn normalise(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

/// `readme` with the lines between the marker comments replaced by `report` in a `text` block.
pub fn splice(readme: &str, report: &str) -> Result<String> {
    let begin = readme
        .find(BEGIN)
        .with_context(|| format!("README.md has no {BEGIN} line"))?;
    let after_begin = begin + BEGIN.len();
    let end = readme[after_begin..]
        .find(END)
        .map(|i| after_begin + i)
        .with_context(|| format!("README.md has no {END} line after {BEGIN}"))?;
    Ok(format!(
        "{}\n```text\n{}\n```\n{}",
        &readme[..after_begin],
        normalise(report),
        &readme[end..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_replaces_only_the_block_between_the_markers() {
        let readme = format!("intro\n{BEGIN}\n```text\nold\n```\n{END}\nrest\n");
        let got = splice(&readme, "new  \nreport\n\n").unwrap();
        assert_eq!(got, format!("intro\n{BEGIN}\n```text\nnew\nreport\n```\n{END}\nrest\n"));
        // Splicing the same report again changes nothing.
        assert_eq!(splice(&got, "new\nreport").unwrap(), got);
    }

    #[test]
    fn splice_needs_both_markers_in_order() {
        assert!(splice("no markers", "x").is_err());
        assert!(splice(&format!("{END}\n{BEGIN}\n"), "x").is_err());
    }

    #[test]
    fn normalise_trims_line_ends_and_trailing_blank_lines() {
        assert_eq!(normalise("a \n b\t\n\n\n"), "a\n b");
        assert_eq!(normalise("\n\n"), "");
    }
}
