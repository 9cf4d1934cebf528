//! How many doctests a library has, counted from its sources before rustdoc runs, to decide
//! whether merging them into one executable pays.
//!
//! Merged doctests cost a fixed compile and link of rustdoc's runner (a generated `main` with
//! process handling, ~0.4 s on two cores, built after the doctests' own crate), which only many
//! doctests repay; a few are built faster one executable each, in parallel, as `cargo test --doc`
//! builds them before edition 2024 (itoa's two doctests: a first run 0.85 s merged against 0.5 s
//! standalone; semver's four: 1.34 against 1.14 s; env_logger's 31: 1.8 against 7.1 s).

use std::path::{Path, PathBuf};

/// Merged from this many doctests that compile; fewer are built one executable each.
pub const MERGE_FROM: usize = 5;

/// The source files a dependency-info file (rustc's `--emit dep-info`, `name-HASH.d`) lists:
/// every file of the crate, and the files it includes (`include_str!`, a README read as the
/// crate's documentation).
pub fn sources(dep_info: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for line in dep_info.lines().filter(|l| !l.starts_with('#')) {
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        // Paths are separated by spaces; a space inside a path is escaped (`\ `).
        let mut path = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => path.push(chars.next().unwrap_or(' ')),
                ' ' => {
                    if !path.is_empty() {
                        files.push(PathBuf::from(std::mem::take(&mut path)));
                    }
                }
                c => path.push(c),
            }
        }
        if !path.is_empty() {
            files.push(PathBuf::from(path));
        }
    }
    files.sort();
    files.dedup();
    files
}

/// The code blocks in `text` that rustdoc compiles as doctests: in the doc comments (`///`,
/// `//!`) of a Rust file, or anywhere in a Markdown file (`markdown`, included as
/// documentation). A block is Rust when its fence names no other language; `ignore`d blocks
/// are not compiled. An estimate: `#[doc = "…"]` attributes and `/** */` comments are not read.
pub fn code_blocks(text: &str, markdown: bool) -> usize {
    let mut count = 0;
    // The open fence (its characters), and whether its block counts.
    let mut open: Option<(&str, bool)> = None;
    for line in text.lines() {
        let line = line.trim_start();
        let content = if markdown {
            line
        } else if let Some(rest) = line.strip_prefix("///").or_else(|| line.strip_prefix("//!")) {
            rest.trim_start()
        } else {
            continue;
        };
        let fence = ["```", "~~~"].into_iter().find(|f| content.starts_with(f));
        match (open, fence) {
            (None, Some(f)) => {
                let info = content.trim_start_matches(f.chars().next().unwrap_or('`'));
                open = Some((f, compiled(info)));
            }
            (Some((f, counts)), Some(g)) if f == g => {
                count += usize::from(counts);
                open = None;
            }
            _ => {}
        }
    }
    count
}

/// Whether a fence's info string (`rust,no_run`, `text`, `ignore`, empty) makes its block a
/// doctest that compiles: rustdoc takes a block as Rust unless it names something that is not
/// one of its own attributes (and not `rust`).
fn compiled(info: &str) -> bool {
    let mut rust = false;
    let mut other = false;
    for token in info
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|t| !t.is_empty())
    {
        let token = token.trim_matches(|c| c == '{' || c == '}' || c == '.');
        match token {
            "rust" => rust = true,
            "ignore" => return false,
            t if t.starts_with("ignore-") => return false,
            "should_panic" | "no_run" | "compile_fail" | "test_harness" | "standalone_crate" | "allow_fail" => {}
            t if t.starts_with("edition") => {}
            t if t.len() == 5 && t.starts_with('E') && t[1..].bytes().all(|b| b.is_ascii_digit()) => {}
            _ => other = true,
        }
    }
    rust || !other
}

/// The doctests of a library whose build wrote `dep_info`, counted over the Rust and Markdown
/// files it lists (paths relative to `dir`, the package, where rustc ran). `None` when the file
/// cannot be read.
pub fn in_library(dep_info: &Path, dir: &Path) -> Option<usize> {
    let text = std::fs::read_to_string(dep_info).ok()?;
    let mut count = 0;
    for file in sources(&text) {
        let markdown = match file.extension().and_then(|e| e.to_str()) {
            Some("rs") => false,
            Some("md" | "markdown") => true,
            _ => continue,
        };
        if let Ok(text) = std::fs::read_to_string(dir.join(&file)) {
            count += code_blocks(&text, markdown);
        }
    }
    Some(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dep_info_file_lists_the_crates_sources_once() {
        let d = "/t/deps/libx-1.rlib: src/lib.rs src/a\\ b.rs ../README.md\n\
                 /t/deps/x-1.d: src/lib.rs src/a\\ b.rs ../README.md\n\n\
                 src/lib.rs:\nsrc/a\\ b.rs:\n\n# env-dep:CARGO_PKG_NAME=x\n";
        assert_eq!(
            sources(d),
            [
                PathBuf::from("../README.md"),
                PathBuf::from("src/a b.rs"),
                PathBuf::from("src/lib.rs")
            ]
        );
    }

    #[test]
    fn doc_comment_blocks_count_unless_another_language_or_ignored() {
        let rs = "//! ```\n//! let a = 1;\n//! ```\n\
                  /// ```rust,no_run\n/// f();\n/// ```\n\
                  /// ```text\n/// not rust\n/// ```\n\
                  /// ```ignore\n/// g();\n/// ```\n\
                  /// ```compile_fail,E0308\n/// let x: u8 = \"\";\n/// ```\n\
                  /// ~~~should_panic\n/// panic!();\n/// ~~~\n\
                  // ```\n// a plain comment is no documentation\n// ```\n\
                  fn f() {}\n";
        assert_eq!(code_blocks(rs, false), 4);
        // An unclosed block is not counted; a fence of the other kind does not close one.
        assert_eq!(code_blocks("/// ```\n/// ~~~\n/// x\n", false), 0);
    }

    #[test]
    fn markdown_blocks_count_anywhere() {
        let md = "# x\n\n```rust\nlet a = 1;\n```\n\n```toml\n[dependencies]\n```\n\n```\nb();\n```\n";
        assert_eq!(code_blocks(md, true), 2);
        assert_eq!(code_blocks(md, false), 0);
    }
}
