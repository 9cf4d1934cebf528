//! Lines inserted outside every function that no existing test can feel ([`harmless`]): blank
//! lines, plain comments, and whole new free functions (a new `#[test]`, a helper for it), the
//! most common edit of all: writing a test that shows the bug, then running again.
//!
//! The check compares items, not text: the file as it is now is parsed with syn, and so is the
//! same file with the inserted lines taken out (what it was, as far as the insertion goes). They
//! must hold the same items, token for token, in the same modules, but for new `fn` items at
//! module level (never in an `impl` or a trait, where a method can override a default or take a
//! name's place in method resolution) and new inline modules holding only such functions and
//! `use`s. A new function's name must not appear in the rest of the file (it could shadow a
//! name a glob import brought in, changing what unchanged code calls; nor may it be one of the
//! prelude's, which another file's glob import of the module would shadow), and its attributes must
//! be ones that only make it a test or tune lints and inlining (`#[no_mangle]`, say, could
//! replace a symbol other code links).

use std::collections::HashSet;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;

/// Whether inserting the lines `ranges` (1-based, inclusive, in `text`, the file as it is now)
/// left every item that was there unchanged and added only blank lines, comments and new free
/// functions: then no test of the last run can have changed, and the new functions are new
/// tests or code only new tests call.
pub(super) fn harmless(text: &str, ranges: &[(u32, u32)]) -> bool {
    let inserted = |n: usize| ranges.iter().any(|&(a, b)| a as usize <= n && n <= b as usize);
    let before: String = text
        .lines()
        .enumerate()
        .filter(|(i, _)| !inserted(i + 1))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let (Ok(now), Ok(then)) = (syn::parse_file(text), syn::parse_file(&before)) else {
        return false;
    };
    if tokens(&now.attrs) != tokens(&then.attrs) {
        return false;
    }
    let mut old_names = HashSet::new();
    idents(then.to_token_stream(), &mut old_names);
    only_new_functions(&now.items, &then.items, &old_names)
}

/// Whether `now` is `then` with new free functions (and new modules of them) added.
fn only_new_functions(now: &[syn::Item], then: &[syn::Item], old_names: &HashSet<String>) -> bool {
    let mut old = then.iter().peekable();
    for item in now {
        match old.peek() {
            Some(o) if same_item(item, o, old_names) => {
                old.next();
            }
            _ if new_item(item, old_names) => {}
            _ => return false,
        }
    }
    old.next().is_none()
}

/// The same item, or the same inline module whose items differ by new functions alone.
fn same_item(now: &syn::Item, then: &syn::Item, old_names: &HashSet<String>) -> bool {
    match (now, then) {
        (syn::Item::Mod(a), syn::Item::Mod(b)) if a.ident == b.ident && tokens(&a.attrs) == tokens(&b.attrs) => {
            match (&a.content, &b.content) {
                (Some((_, x)), Some((_, y))) => only_new_functions(x, y, old_names),
                (None, None) => true,
                _ => false,
            }
        }
        _ => now.to_token_stream().to_string() == then.to_token_stream().to_string(),
    }
}

/// A new item that changes no existing code: a free function whose name the file did not use
/// and whose attributes are harmless, or a new inline module of such functions and `use`s.
fn new_item(item: &syn::Item, old_names: &HashSet<String>) -> bool {
    match item {
        syn::Item::Fn(f) => {
            let name = f.sig.ident.to_string();
            !old_names.contains(&name) && !PRELUDE.contains(&name.as_str()) && f.attrs.iter().all(harmless_attribute)
        }
        syn::Item::Mod(m) => {
            !old_names.contains(&m.ident.to_string())
                && m.attrs.iter().all(harmless_attribute)
                && m.content.as_ref().is_some_and(|(_, items)| {
                    items
                        .iter()
                        .all(|i| matches!(i, syn::Item::Use(_)) || new_item(i, old_names))
                })
        }
        _ => false,
    }
}

/// The standard prelude's values: a glob import of a module that gains a function of one of
/// these names shadows it in every file that imports the module so, unseen by a check of the
/// file it was added to.
const PRELUDE: &[&str] = &[
    "drop",
    "size_of",
    "size_of_val",
    "align_of",
    "align_of_val",
    "Some",
    "None",
    "Ok",
    "Err",
];

/// An attribute that makes a function a test (`#[test]`, `#[tokio::test]`, `#[ignore]`,
/// `#[should_panic]`), documents it, or tunes lints, inlining and `cfg`.
fn harmless_attribute(attr: &syn::Attribute) -> bool {
    let Some(last) = attr.path().segments.last() else {
        return false;
    };
    let name = last.ident.to_string();
    name == "test"
        || name.ends_with("_test")
        || matches!(
            name.as_str(),
            "ignore"
                | "should_panic"
                | "doc"
                | "cfg"
                | "allow"
                | "warn"
                | "deny"
                | "forbid"
                | "expect"
                | "inline"
                | "must_use"
                | "track_caller"
                | "cold"
                | "rstest"
                | "case"
                | "test_case"
                | "quickcheck"
                | "proptest"
        )
}

/// The attributes as one string of tokens.
fn tokens(attrs: &[syn::Attribute]) -> String {
    attrs
        .iter()
        .map(|a| a.to_token_stream().to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Every identifier in `stream`, groups included.
fn idents(stream: TokenStream, out: &mut HashSet<String>) {
    for tree in stream {
        match tree {
            TokenTree::Ident(i) => {
                out.insert(i.to_string());
            }
            TokenTree::Group(g) => idents(g.stream(), out),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::harmless;

    const FILE: &str =
        "use super::*;\n\nfn helper() -> u32 {\n    1\n}\n\n#[test]\nfn old() {\n    assert_eq!(helper(), 1);\n}\n";

    /// `FILE` with `lines` inserted after line `after`, and the inserted range.
    fn insert(after: usize, lines: &str) -> (String, (u32, u32)) {
        let mut all: Vec<&str> = FILE.lines().collect();
        let new: Vec<&str> = lines.lines().collect();
        let n = new.len() as u32;
        all.splice(after..after, new);
        (all.join("\n") + "\n", (after as u32 + 1, after as u32 + n))
    }

    #[test]
    fn blank_lines_comments_and_new_tests_are_harmless() {
        for (after, lines) in [
            (10, "\n// a note\n"),
            (10, "\n#[test]\nfn new_case() {\n    assert_eq!(helper(), 2);\n}\n"),
            (5, "\n#[tokio::test]\n#[ignore = \"slow\"]\nasync fn later() {}\n"),
            (
                10,
                "\n#[cfg(test)]\nmod more {\n    use super::*;\n    #[test]\n    fn inner() {\n        helper();\n    }\n}\n",
            ),
            (10, "/// Documented.\nfn only_new_tests_call_it() -> u8 {\n    3\n}\n"),
        ] {
            let (text, range) = insert(after, lines);
            assert!(harmless(&text, &[range]), "{text}");
        }
    }

    #[test]
    fn anything_existing_code_could_feel_is_not() {
        for (after, lines) in [
            // A function whose name the file already uses: it would shadow what a glob import
            // brought in, or clash.
            (2, "fn helper() -> u32 {\n    2\n}\n"),
            (10, "fn old() {}\n"),
            // An item other than a function, a method, a symbol others may link.
            (10, "static LIMIT: u32 = 3;\n"),
            (10, "struct S;\nimpl Drop for S {\n    fn drop(&mut self) {}\n}\n"),
            (10, "#[no_mangle]\nfn exported() {}\n"),
            (0, "#![allow(dead_code)]\n"),
            (10, "some_macro!(x);\n"),
            (10, "mod more {\n    static N: u8 = 1;\n}\n"),
            // A prelude function's name: another file's glob import of this module would take it.
            (10, "pub fn drop<T>(_: T) {}\n"),
        ] {
            let (text, range) = insert(after, lines);
            assert!(!harmless(&text, &[range]), "{text}");
        }
        // Shadowing: `helper` came from the glob import, a new local one takes its place.
        let text = "use other::*;\n\nfn helper() {}\n\n#[test]\nfn t() {\n    helper();\n}\n";
        assert!(!harmless(text, &[(2, 3)]));
        // A string literal that spans lines: a line inserted into it changes its value.
        let text = "const S: &str = \"a\n// b\nc\";\n";
        assert!(!harmless(text, &[(2, 2)]));
        // A file syn cannot parse.
        assert!(!harmless("fn x( {\n\nfn y() {}\n", &[(3, 3)]));
    }
}
