//! The README and the user guide under docs/: the README's sample report is what its demo command
//! prints, every relative link in the README and under docs/ resolves (to a file, and for an
//! `#anchor` into Markdown to a heading), and the README stays within 150 lines.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use libtest_mimic::Trial;

use crate::fixtures::saved;
use crate::support::{Result, check, report, root, show};

/// The marker lines around the README's sample report (xtask/src/readme.rs writes between them).
const BEGIN: &str = "<!-- sample-report:begin -->";
const END: &str = "<!-- sample-report:end -->";
/// How to bring the sample back in line with the demo.
const REGENERATE: &str = "regenerate it with `cargo xtask readme` (then review and commit README.md)";
/// The guide page that quotes parts of the sample report.
const QUOTING_PAGE: &str = "docs/guide/reading-the-report.md";

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("docs::sample_report", sample_report),
        Trial::test("docs::links", links),
        Trial::test("docs::readme_length", readme_length),
        Trial::test("docs::markdown_parsing", markdown_parsing),
    ]
}

/// The README's demo, `cargo sfl --manifest-path fixtures/minmax/Cargo.toml`, on the copy of
/// minmax whose manifest is `manifest`, in plain text (as the sample is).
pub(crate) fn demo(manifest: &str) -> [&str; 4] {
    ["--color", "never", "--manifest-path", manifest]
}

/// The README's demo prints exactly the README's sample report on stdout (here: its report
/// made from minmax's shared run; `report::rereads_saved_spectra` checks that the demo prints
/// just that); the lines the guide quotes from it are still lines of it.
fn sample_report() -> Result {
    let readme = std::fs::read_to_string(root().join("README.md"))?;
    let sample = sample_block(&readme)?;

    let dir = saved("minmax")?.dir();
    let manifest = dir.join("Cargo.toml");
    let out = report(&demo(manifest.to_str().unwrap()), dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let printed = normalise(&String::from_utf8_lossy(&out.stdout));

    if sample != printed {
        let (have, want): (Vec<&str>, Vec<&str>) = (sample.lines().collect(), printed.lines().collect());
        let at = have
            .iter()
            .zip(&want)
            .position(|(a, b)| a != b)
            .unwrap_or(have.len().min(want.len()));
        return Err(format!(
            "README.md's sample report (between {BEGIN} and {END}) is not what the demo prints; \
             {REGENERATE}.\nFirst difference at line {} of the sample:\n  README: {:?}\n  demo:   {:?}\n\
             --- the demo's stdout\n{printed}",
            at + 1,
            have.get(at).copied().unwrap_or("(end)"),
            want.get(at).copied().unwrap_or("(end)"),
        )
        .into());
    }

    // The guide quotes the report in ```text blocks; a line with `…` is abridged on purpose.
    let page = std::fs::read_to_string(root().join(QUOTING_PAGE))?;
    let lines: BTreeSet<&str> = printed.lines().collect();
    let stale: Vec<String> = text_blocks(&page)
        .into_iter()
        .flatten()
        .filter(|l| !l.contains('…') && !lines.contains(l.as_str()))
        .collect();
    check(stale.is_empty(), || {
        format!(
            "{QUOTING_PAGE} quotes lines the demo no longer prints (update the excerpts from README.md's sample):\n{}",
            stale.join("\n")
        )
    })
}

/// The lines of the fenced block between the README's sample markers, normalised.
fn sample_block(readme: &str) -> Result<String> {
    let begin = readme
        .find(BEGIN)
        .ok_or(format!("README.md has no {BEGIN} line; {REGENERATE}"))?;
    let rest = &readme[begin + BEGIN.len()..];
    let end = rest
        .find(END)
        .ok_or(format!("README.md has no {END} line after {BEGIN}"))?;
    let blocks = text_blocks(&rest[..end]);
    check(blocks.len() == 1, || {
        format!(
            "README.md: expected one ```text block between {BEGIN} and {END}, found {}; {REGENERATE}",
            blocks.len()
        )
    })?;
    Ok(normalise(&blocks[0].join("\n")))
}

/// The contents of the ```text fenced blocks of a Markdown text.
fn text_blocks(markdown: &str) -> Vec<Vec<String>> {
    let mut blocks = Vec::new();
    let mut open: Option<Vec<String>> = None;
    for line in markdown.lines() {
        match open.as_mut() {
            None if line.trim() == "```text" => open = Some(Vec::new()),
            None => {}
            Some(_) if line.trim() == "```" => blocks.extend(open.take()),
            Some(block) => block.push(line.trim_end().to_string()),
        }
    }
    blocks
}

/// No trailing whitespace on any line, no blank lines at the end.
fn normalise(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let end = lines.iter().rposition(|l| !l.is_empty()).map_or(0, |i| i + 1);
    lines[..end].join("\n")
}

/// Every relative link in README.md and docs/**/*.md names an existing file or directory, and an
/// `#anchor` into a Markdown file names one of its headings (GitHub's slugs).
fn links() -> Result {
    let root = root();
    let mut pages = vec![root.join("README.md")];
    markdown_files(&root.join("docs"), &mut pages)?;
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in &pages {
        let text = std::fs::read_to_string(page)?;
        let name = page.strip_prefix(&root).unwrap_or(page).display().to_string();
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!("{name}:{line}: {target}: no such file"));
                continue;
            }
            let Some(anchor) = anchor else { continue };
            if file.extension().is_some_and(|e| e == "md") {
                let slugs = heading_slugs(&std::fs::read_to_string(&file)?);
                if !slugs.contains(anchor) {
                    broken.push(format!(
                        "{name}:{line}: {target}: no heading with that anchor (it has: {})",
                        slugs.into_iter().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    check(checked > 0 && broken.is_empty(), || {
        format!(
            "{} broken links in README.md and docs/ ({checked} checked in {} files):\n{}",
            broken.len(),
            pages.len(),
            broken.join("\n")
        )
    })
}

/// The README is the short way in: at most 150 lines; the rest belongs in docs/guide/.
fn readme_length() -> Result {
    let readme = std::fs::read_to_string(root().join("README.md"))?;
    let lines = readme.lines().count();
    check(lines <= 150, || {
        format!("README.md has {lines} lines, more than 150: move the detail into a page of docs/guide/")
    })
}

/// The Markdown files under `dir`, recursively.
fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_files(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// The lines of a Markdown text outside fenced code blocks, numbered from 1.
fn prose_lines(markdown: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut out = Vec::new();
    for (i, line) in markdown.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some(m),
            (Some(open), Some(m)) if open == m && trimmed.trim_end() == m => fence = None,
            (None, None) => out.push((i + 1, line)),
            _ => {}
        }
    }
    out
}

/// The targets of the inline links and images (`[text](target "title")`) and of the link
/// reference definitions (`[label]: target`) of a Markdown text, with their line numbers.
fn link_targets(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in prose_lines(markdown) {
        // Inline code spans are not links.
        let line: String = line.split('`').step_by(2).collect();
        let definition = line
            .trim_start()
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]: "));
        if let Some((_, target)) = definition {
            out.extend(target.split_whitespace().next().map(|t| (n, t.to_string())));
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            // The target ends at the `)` that closes the `(` (targets may hold balanced parens).
            let mut depth = 0;
            let end = rest
                .char_indices()
                .find(|&(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' if depth == 0 => return true,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    false
                })
                .map_or(rest.len(), |(i, _)| i);
            let inner = rest[..end].trim();
            let target = match inner.strip_prefix('<') {
                Some(angled) => angled.split('>').next().unwrap_or(""),
                None => inner.split_whitespace().next().unwrap_or(""),
            };
            out.push((n, target.to_string()));
            rest = &rest[end..];
        }
    }
    out
}

/// The anchors GitHub gives a Markdown file's headings: the heading's text, lower-cased, without
/// punctuation but `-` and `_`, spaces made `-`; a repeated slug gets `-1`, `-2`, ….
fn heading_slugs(markdown: &str) -> BTreeSet<String> {
    let mut slugs = BTreeSet::new();
    for (_, line) in prose_lines(markdown) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#').trim().replace('`', "");
        let base = slug(&link_texts(&text));
        let mut candidate = base.clone();
        let mut n = 0;
        while slugs.contains(&candidate) {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        slugs.insert(candidate);
    }
    slugs
}

/// `text` with each `[label](target)` reduced to its label.
fn link_texts(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("](") {
        out.push_str(&rest[..at]);
        rest = &rest[at + 2..];
        rest = rest.find(')').map_or("", |end| &rest[end + 1..]);
    }
    out.push_str(rest);
    out.replace('[', "")
}

/// GitHub's slug of a heading's text (inline code and links already reduced to their text).
fn slug(text: &str) -> String {
    text.to_lowercase()
        .chars()
        .filter(|&c| c.is_alphanumeric() || c == '-' || c == '_' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The link and heading readers on known Markdown: GitHub's slugs (code, punctuation, repeats),
/// and link targets outside code only.
fn markdown_parsing() -> Result {
    let page = "# Eval and the benchmarks\n## Evaluating measures (`cargo sfl eval`)\n## HT_Rank\n\
                ```\n# not a heading\n```\n## Ordering the lines of one entry (`--tie-break`)\n\
                ## See [the FAQ](faq.md)\n## FAQ\n## FAQ\n";
    let slugs = heading_slugs(page);
    for want in [
        "eval-and-the-benchmarks",
        "evaluating-measures-cargo-sfl-eval",
        "ht_rank",
        "ordering-the-lines-of-one-entry---tie-break",
        "see-the-faq",
        "faq",
        "faq-1",
    ] {
        check(slugs.contains(want), || format!("{want} not in {slugs:?}"))?;
    }
    check(!slugs.contains("not-a-heading"), || {
        format!("a heading read inside a code block: {slugs:?}")
    })?;

    let page =
        "See [a](a.md#x) and `[b](b.md)`, ![c](img/c.png \"title\") [f](<f g.md>).\n```\n[d](d.md)\n```\n[e]: e.md\n";
    let targets: Vec<String> = link_targets(page).into_iter().map(|(_, t)| t).collect();
    check(targets == ["a.md#x", "img/c.png", "f g.md", "e.md"], || {
        format!("{targets:?}")
    })
}
