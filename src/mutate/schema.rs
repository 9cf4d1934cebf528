//! Mutation schemata: many mutants compiled into one build, each chosen at run time by its
//! number in `CARGO_SFL_MUTANT` (0, or unset: the original program). One build replaces one
//! build per mutant. Mutants whose ranges overlap cannot share a build: they go into later
//! rounds. A mutant the compiler rejects (a swapped operator the type does not implement, a
//! deleted statement a later line needed) is dropped by the error's position and the round
//! rebuilt.

use super::sites::{Mutant, line_starts};

/// The variable whose value selects the mutant a test process runs.
pub const MUTANT_ENV: &str = "CARGO_SFL_MUTANT";

/// The name crate roots give std ([`name_std`]): `#![no_std]` crates have none of their own.
const STD: &str = "__sfl_std";

/// The expression that reads the selected mutant's number once per site (cached).
fn switch() -> String {
    format!(
        "({{ static __SFL_MUTANT: ::{STD}::sync::OnceLock<u32> = ::{STD}::sync::OnceLock::new(); \
         *__SFL_MUTANT.get_or_init(|| ::{STD}::env::var(\"{MUTANT_ENV}\").ok().and_then(|v| v.parse().ok()).unwrap_or(0)) }})"
    )
}

/// A crate root's text with `extern crate std as __sfl_std;` after its last line: no line
/// moves. Tests link std, `#![no_std]` or not.
pub fn name_std(text: &str) -> String {
    let newline = if text.ends_with('\n') || text.is_empty() {
        ""
    } else {
        "\n"
    };
    format!("{text}{newline}#[allow(unused_extern_crates)] extern crate std as {STD};\n")
}

/// Mutants that replace the same range: one `match` on the switch.
#[derive(Clone, Debug)]
pub struct Site {
    pub file: usize,
    pub start: usize,
    pub end: usize,
    /// (mutant number, index into the mutant list).
    pub mutants: Vec<(u32, usize)>,
}

/// Groups mutants (numbered from 1 in list order) into sites, and sites into rounds whose
/// sites do not overlap. `mutants[i] = (file, mutant)`.
pub fn rounds(mutants: &[(usize, Mutant)]) -> Vec<Vec<Site>> {
    let mut sites: Vec<Site> = Vec::new();
    for (i, (file, m)) in mutants.iter().enumerate() {
        let id = i as u32 + 1;
        match sites
            .iter_mut()
            .find(|s| s.file == *file && s.start == m.start && s.end == m.end)
        {
            Some(s) => s.mutants.push((id, i)),
            None => sites.push(Site {
                file: *file,
                start: m.start,
                end: m.end,
                mutants: vec![(id, i)],
            }),
        }
    }
    let mut rounds: Vec<Vec<Site>> = Vec::new();
    for s in sites {
        let overlaps = |r: &Vec<Site>| r.iter().any(|o| o.file == s.file && o.start < s.end && s.start < o.end);
        match rounds.iter_mut().find(|r| !overlaps(r)) {
            Some(r) => r.push(s),
            None => rounds.push(vec![s]),
        }
    }
    rounds
}

/// The text of a file with `sites` (all of this file) in place, and each site's byte range in
/// the new text.
pub fn apply(text: &str, sites: &[&Site], mutants: &[(usize, Mutant)]) -> (String, Vec<(usize, usize)>) {
    let mut order: Vec<usize> = (0..sites.len()).collect();
    order.sort_by_key(|&i| sites[i].start);
    let switch = switch();
    let mut out = String::with_capacity(text.len() + sites.len() * 200);
    let mut ranges = vec![(0, 0); sites.len()];
    let mut at = 0;
    for i in order {
        let s = sites[i];
        out.push_str(&text[at..s.start]);
        let begin = out.len();
        let original = &text[s.start..s.end];
        let deletes = s.mutants.iter().any(|&(_, k)| mutants[k].1.deletes_statement);
        out.push_str(&format!("match {switch} {{ "));
        for &(id, k) in &s.mutants {
            let m = &mutants[k].1;
            if deletes {
                out.push_str(&format!("{id} => {{}} "));
            } else {
                out.push_str(&format!("{id} => ({}), ", m.replacement));
            }
        }
        if deletes {
            out.push_str(&format!("_ => {{ {original} }} }}"));
        } else {
            out.push_str(&format!("_ => ({original}) }}"));
            // In expression position the match is one parenthesised expression.
            out.insert(begin, '(');
            out.push(')');
        }
        ranges[i] = (begin, out.len());
        at = s.end;
    }
    out.push_str(&text[at..]);
    (out, ranges)
}

/// The byte offset in `text` of a compiler position (1-based line, 1-based column counting
/// characters).
pub fn offset(text: &str, line: usize, column: usize) -> Option<usize> {
    let starts = line_starts(text);
    let start = *starts.get(line.checked_sub(1)?)?;
    let rest = &text[start..];
    let the_line = &rest[..rest.find('\n').unwrap_or(rest.len())];
    let col = column.saturating_sub(1);
    Some(start + the_line.char_indices().nth(col).map_or(the_line.len(), |(b, _)| b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: usize, end: usize, replacement: &str, deletes_statement: bool) -> Mutant {
        Mutant {
            line: 1,
            start,
            end,
            replacement: replacement.into(),
            deletes_statement,
            operator: String::new(),
        }
    }

    #[test]
    fn overlapping_mutants_go_to_later_rounds_and_same_ranges_share_a_site() {
        // `a + b < c`: `+` (0..5) twice, `<` (0..9), and a literal elsewhere.
        let ms = vec![
            (0, m(0, 5, "a - b", false)),
            (0, m(0, 5, "a * b", false)),
            (0, m(0, 9, "a + b <= c", false)),
            (0, m(20, 21, "2", false)),
            (1, m(0, 9, "x", false)),
        ];
        let r = rounds(&ms);
        assert_eq!(r.len(), 2);
        let ids = |round: &Vec<Site>| {
            round
                .iter()
                .map(|s| s.mutants.iter().map(|x| x.0).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&r[0]), vec![vec![1, 2], vec![4], vec![5]]);
        assert_eq!(ids(&r[1]), vec![vec![3]]);
    }

    #[test]
    fn sites_keep_the_line_and_select_by_number() {
        let text = "let x = a + b;\nf(x);\n";
        let ms = vec![(0, m(8, 13, "a - b", false)), (0, m(15, 20, "", true))];
        let r = rounds(&ms);
        let sites: Vec<&Site> = r[0].iter().collect();
        let (out, ranges) = apply(text, &sites, &ms);
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(out.starts_with("let x = (match ({ static __SFL_MUTANT"), "{out}");
        assert!(out.contains("{ 1 => (a - b), _ => (a + b) });\n"), "{out}");
        assert!(out.contains("{ 2 => {} _ => { f(x); } }\n"), "{out}");
        assert_eq!(&out[ranges[0].0..ranges[0].0 + 7], "(match ");
        assert!(out[ranges[1].0..ranges[1].1].ends_with("f(x); } }"));
    }

    #[test]
    fn crate_roots_name_std_without_moving_a_line() {
        let root = "#![no_std]\n//! Docs.\n\npub fn f() {}";
        let named = name_std(root);
        assert_eq!(
            named,
            "#![no_std]\n//! Docs.\n\npub fn f() {}\n#[allow(unused_extern_crates)] extern crate std as __sfl_std;\n"
        );
    }

    #[test]
    fn compiler_columns_count_characters() {
        let text = "ab\n«é» + 1\n";
        assert_eq!(offset(text, 2, 1), Some(3));
        // Column 5 is `+`, after three two-byte characters and a space.
        assert_eq!(&text[offset(text, 2, 5).unwrap()..][..1], "+");
        assert_eq!(offset(text, 9, 1), None);
    }
}
