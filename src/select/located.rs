//! Functions that know their own line: an edit above one moves it without changing it, yet a
//! test may see the line numbers it reports (`line!()`, `Location::caller()`, the caller's
//! place that a `#[track_caller]` function reports: an error type that records where it was
//! made, a snapshot of a message with `src/lib.rs:582` in it). Such a function, moved, is
//! edited as far as the tests that ran it are concerned.

use crate::spectra::FunctionSpan;

/// The functions of a file (`text`: as read now) among `functions` that the edit moved
/// (`lines`: where each old line went) and that name their place: their text now holds
/// `line!(`, `column!(`, `Location::caller`, or a call of a `#[track_caller]` function of the
/// file.
pub(super) fn moved_and_located<'f>(
    text: Option<&str>,
    functions: &[&'f FunctionSpan],
    lines: &[Option<u32>],
) -> Vec<&'f FunctionSpan> {
    let moved: Vec<(&FunctionSpan, u32)> = functions
        .iter()
        .filter_map(|f| {
            let now = lines.get(f.start as usize - 1).copied().flatten()?;
            (now != f.start).then_some((*f, now))
        })
        .collect();
    if moved.is_empty() {
        return Vec::new();
    }
    let Some(text) = text else { return Vec::new() };
    let text_lines: Vec<&str> = text.lines().collect();
    let tracked = track_caller_names(&text_lines);
    moved
        .into_iter()
        .filter(|(f, now)| {
            let first = *now as usize - 1;
            let last = (first + (f.end - f.start) as usize).min(text_lines.len().saturating_sub(1));
            let body = text_lines.get(first..=last).unwrap_or_default();
            body.iter().any(|l| {
                l.contains("line!(")
                    || l.contains("column!(")
                    || l.contains("Location::caller")
                    || tracked.iter().any(|name| calls(l, name))
            })
        })
        .map(|(f, _)| f)
        .collect()
}

/// The names of the functions of `lines` marked `#[track_caller]` (on the function's line or
/// within the three lines above it).
fn track_caller_names(lines: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if !l.contains("#[track_caller]") {
            continue;
        }
        let name = lines[i..lines.len().min(i + 4)].iter().find_map(|l| {
            let (_, after) = l.split_once("fn ")?;
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            (!name.is_empty()).then_some(name)
        });
        names.extend(name);
    }
    names
}

/// Whether `line` calls `name` (`name(` not preceded by a letter, digit or `_`).
fn calls(line: &str, name: &str) -> bool {
    let pattern = format!("{name}(");
    line.match_indices(&pattern).any(|(i, _)| {
        !line[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_function_that_reports_its_place_is_edited() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src")).unwrap();
        let old = "fn a() {\n    1;\n}\n#[track_caller]\nfn origin() -> u32 {\n    std::panic::Location::caller().line()\n}\nfn describe() -> u32 {\n    origin()\n}\nfn plain() -> u32 {\n    reorigin()\n}\n";
        let new = old.replace("    1;\n", "    1;\n    2;\n");
        std::fs::write(root.path().join("src/lib.rs"), &new).unwrap();
        let span = |start, end| FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        };
        let spans = [span(1, 3), span(5, 7), span(8, 10), span(11, 13)];
        let refs: Vec<&FunctionSpan> = spans.iter().collect();
        let hash = |t: &str| crate::spectra::line_hashes(t.as_bytes());
        let at = super::super::locate::locate(&hash(old), &hash(&new), &refs);
        let found = moved_and_located(Some(&new), &refs, &at.lines);
        // `a` changed (not moved); `origin` names `Location::caller`, `describe` calls it;
        // `plain` calls another name that ends like it.
        assert_eq!(found.iter().map(|f| f.start).collect::<Vec<_>>(), [5, 8]);
        assert!(calls("    origin()", "origin") && !calls("reorigin()", "origin"));
    }
}
