//! Where in its source a merged doctest panicked. A merged doctest's code is compiled from the
//! bundle rustdoc writes (`…/merged_doctest_2021_0/doctest_bundle_2021.rs`), so its panics name
//! a line of that generated file (as under `cargo test` in edition 2024, whose bundle is gone
//! once it ends), where a doctest built alone names a line of the documentation comment
//! (rustdoc's mapping: the code block's fence for its first line). The bundle keeps each doctest's lines in
//! order inside `pub mod __doctest_N {`, behind rustdoc's `fn main()  {` when it wraps them, so
//! a bundle line maps to the comment line as far from the code block's fence; the mapping is
//! kept only when the two lines read alike.

use std::path::Path;

/// `message` with a panic location in a merged doctest's bundle replaced by the location in the
/// source of the doctest `name` (`src/lib.rs - item (line 5)`: the fence's line), whose package
/// is in `package_dir` (the name's path is relative to it or to a directory above it).
/// Unchanged when the panic is elsewhere or the lines do not match.
pub fn in_source(message: &str, name: &str, package_dir: &Path) -> String {
    rewrite(message, name, package_dir).unwrap_or_else(|| message.to_string())
}

fn rewrite(message: &str, name: &str, package_dir: &Path) -> Option<String> {
    let (before, rest) = message.split_once("panicked at ")?;
    let site = rest.lines().next()?.trim_end_matches(':');
    // `PATH:LINE:COLUMN`, the path possibly holding colons.
    let mut parts = site.rsplitn(3, ':');
    let (column, line, bundle) = (parts.next()?, parts.next()?.parse::<usize>().ok()?, parts.next()?);
    let file_name = Path::new(bundle).file_name()?.to_str()?;
    if !(file_name.starts_with("doctest_bundle_") && file_name.ends_with(".rs")) {
        return None;
    }
    let (file, fence) = parse_name(name)?;
    let bundle_text = std::fs::read_to_string(bundle).ok()?;
    // The name's path is the package's, or the workspace's for a member rustdoc ran from the
    // workspace's root.
    let source_text = package_dir
        .ancestors()
        .find_map(|d| std::fs::read_to_string(d.join(file)).ok())?;
    let source_line = map_line(&bundle_text, &source_text, line, fence)?;
    Some(format!(
        "{before}panicked at {file}:{source_line}:{column}{}",
        &rest[site.len()..]
    ))
}

/// A doctest's file and fence line from its name, `FILE - ITEM (line N)`.
fn parse_name(name: &str) -> Option<(&str, usize)> {
    let (file, rest) = name.split_once(" - ")?;
    let line = rest.rsplit_once("(line ")?.1.strip_suffix(')')?.parse().ok()?;
    Some((file, line))
}

/// The comment line (1-based) of bundle line `line` (1-based), whose doctest's fence is at
/// `fence` in `source`; `None` unless the two lines read alike.
fn map_line(bundle: &str, source: &str, line: usize, fence: usize) -> Option<usize> {
    let lines: Vec<&str> = bundle.lines().collect();
    let at = line.checked_sub(1)?;
    let module = (0..=at)
        .rev()
        .find(|&i| lines.get(i).is_some_and(|l| l.starts_with("pub mod __doctest_")))?;
    // A blank line after the module's opening, then rustdoc's wrapper when it added one.
    let mut first = module + 2;
    if lines.get(first).is_some_and(|l| l.trim_end() == "fn main()  {") {
        first += 1;
    }
    let offset = at.checked_sub(first)?;
    let wanted = lines.get(at)?.trim();
    let source: Vec<&str> = source.lines().collect();
    let reads_alike = |n: usize| {
        source
            .get(n.checked_sub(1)?)
            .map(|l| comment_code(l) == wanted)
            .filter(|&same| same)
            .map(|_| n)
    };
    let guess = fence + 1 + offset;
    // Lines rustdoc moved out of the body (crate attributes) shift the rest a little.
    (0..=3).find_map(|d| reads_alike(guess + d).or_else(|| guess.checked_sub(d).and_then(reads_alike)))
}

/// A documentation comment's line as code: without the `///` or `//!` and a hidden line's `# `.
fn comment_code(line: &str) -> &str {
    let t = line.trim_start();
    let t = t
        .strip_prefix("///")
        .or_else(|| t.strip_prefix("//!"))
        .unwrap_or(t)
        .trim_start();
    t.strip_prefix("# ").unwrap_or(t).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "//! A crate.\n\
        /// Halves.\n\
        ///\n\
        /// ```\n\
        /// # use m::half;\n\
        /// let x = half(4);\n\
        /// assert_eq!(x, 3);\n\
        /// ```\n\
        pub fn half(n: u32) -> u32 { n / 2 }\n";

    const BUNDLE: &str = "\n#![allow(unused)]\npub mod __doctest_0 {\n\nfn main()  {\nuse m::half;\nlet x = half(4);\nassert_eq!(x, 3);\n}\npub fn __main_fn() -> impl std::process::Termination { main() } \n}\n";

    #[test]
    fn a_bundle_line_maps_to_the_comment_line_that_reads_alike() {
        // Bundle line 8, `assert_eq!(x, 3);`, is source line 7.
        assert_eq!(map_line(BUNDLE, SOURCE, 8, 4), Some(7));
        assert_eq!(map_line(BUNDLE, SOURCE, 6, 4), Some(5));
        // Outside every doctest's module, or a line that reads otherwise: no mapping.
        assert_eq!(map_line(BUNDLE, SOURCE, 2, 4), None);
        assert_eq!(map_line(BUNDLE, "/// other\n/// lines\n", 8, 1), None);
        assert_eq!(parse_name("src/lib.rs - half (line 4)"), Some(("src/lib.rs", 4)));
    }

    #[test]
    fn a_panic_in_the_bundle_is_named_in_the_source() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/lib.rs"), SOURCE).unwrap();
        let bundle = dir.path().join("merged_doctest_2021_0/doctest_bundle_2021.rs");
        std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
        std::fs::write(&bundle, BUNDLE).unwrap();
        let message = format!(
            "panicked at {}:8:1:\nassertion `left == right` failed",
            bundle.display()
        );
        assert_eq!(
            in_source(&message, "src/lib.rs - half (line 4)", dir.path()),
            "panicked at src/lib.rs:7:1:\nassertion `left == right` failed"
        );
        // A panic in the library's own code stays where it is.
        let elsewhere = "panicked at src/lib.rs:9:30:\nattempt to divide by zero";
        assert_eq!(
            in_source(elsewhere, "src/lib.rs - half (line 4)", dir.path()),
            elsewhere
        );
    }
}
