//! Lines inserted outside every function that no existing test can feel ([`harmless`]): blank
//! lines, plain comments, and whole new free functions (a new `#[test]`, a helper for it), the
//! most common edit of all: writing a test that shows the bug, then running again.
//!
//! The check compares items, not text: the file as it is now is parsed with syn, and so is the
//! same file with the inserted lines taken out (what it was, as far as the insertion goes). They
//! must hold the same items, token for token, in the same modules, but for new `fn` items at
//! module level (never in an `impl` or a trait, where a method can override a default or take a
//! name's place in method resolution) and new inline modules holding only such functions and
//! `use`s. A new function
//! - has a name the rest of the file does not use, raw or not (it could shadow a name a glob
//!   import brought in, changing what unchanged code calls), that is not one of the prelude's
//!   values (another file's glob import of the module would take it instead);
//! - holds no item in its body (an `impl` there is global: an inherent method shadows a trait's
//!   in unchanged code) and no doctest (no code block in its docs, no `#[doc = include_str!]`:
//!   the doctests would not be built);
//! - has attributes that only make it a test or tune lints and inlining (`#[no_mangle]`, say,
//!   could replace a symbol other code links);
//! - is not added to a file that both imports a glob and calls a macro of its own: a
//!   `macro_rules!` expansion resolves the names it calls where it is called, so a new function
//!   there can take the place of what the glob brought, with no token of the file naming it.
//!
//! What it cannot see: the expansion of a macro a new function calls (one that defines an
//! `impl` in a function body), and a file `include!`d into another module
//! ([`included_elsewhere`] leaves those to a full run).

use std::collections::HashSet;
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::visit::Visit;

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
    let mut scan = Scan::default();
    scan.visit_file(&then);
    if scan.glob && scan.own_macro {
        return false;
    }
    let mut old_names = HashSet::new();
    idents(then.to_token_stream(), &mut old_names);
    only_new_functions(&now.items, &then.items, &old_names)
}

/// Whether another Rust source of `files` (paths relative to `root`) `include!`s `file`: its
/// items then live in that file's module, whose names [`harmless`] does not see.
pub(super) fn included_elsewhere<'a>(root: &Path, file: &str, mut files: impl Iterator<Item = &'a String>) -> bool {
    let Some(name) = Path::new(file).file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    files.any(|f| {
        f != file
            && f.ends_with(".rs")
            && std::fs::read_to_string(root.join(f)).is_ok_and(|t| t.contains("include!") && t.contains(name))
    })
}

/// What a file holds that makes new functions in it unsafe to take as new tests: a glob
/// import, a call of a macro that is not the standard library's, an item (in a function's
/// body, when scanning one).
#[derive(Default)]
struct Scan {
    glob: bool,
    own_macro: bool,
    items: usize,
}

/// The standard library's macros: their expansions call no name of the crate.
const STD_MACROS: &[&str] = &[
    "assert",
    "assert_eq",
    "assert_ne",
    "debug_assert",
    "debug_assert_eq",
    "debug_assert_ne",
    "matches",
    "panic",
    "unreachable",
    "todo",
    "unimplemented",
    "println",
    "eprintln",
    "print",
    "eprint",
    "format",
    "format_args",
    "write",
    "writeln",
    "vec",
    "dbg",
    "concat",
    "stringify",
    "include_str",
    "include_bytes",
    "env",
    "option_env",
    "cfg",
    "line",
    "column",
    "file",
    "module_path",
    "compile_error",
    "thread_local",
];

impl<'ast> Visit<'ast> for Scan {
    fn visit_use_glob(&mut self, _: &'ast syn::UseGlob) {
        self.glob = true;
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let name = m.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        if !STD_MACROS.contains(&name.as_str()) {
            self.own_macro = true;
        }
        syn::visit::visit_macro(self, m);
    }
    fn visit_item(&mut self, i: &'ast syn::Item) {
        self.items += 1;
        syn::visit::visit_item(self, i);
    }
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
            let name = f.sig.ident.unraw().to_string();
            let mut body = Scan::default();
            body.visit_block(&f.block);
            !old_names.contains(&name)
                && !PRELUDE.contains(&name.as_str())
                && body.items == 0
                && f.attrs.iter().all(harmless_attribute)
        }
        syn::Item::Mod(m) => {
            !old_names.contains(&m.ident.unraw().to_string())
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
    if name == "doc" {
        // A doc comment is a string; a code block in it is a doctest nothing would build.
        return match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => !text.value().contains("```") && !text.value().contains("~~~"),
            _ => false,
        };
    }
    name == "test"
        || name.ends_with("_test")
        || matches!(
            name.as_str(),
            "ignore"
                | "should_panic"
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

/// Every identifier in `stream`, groups included, raw ones without their `r#`.
fn idents(stream: TokenStream, out: &mut HashSet<String>) {
    for tree in stream {
        match tree {
            TokenTree::Ident(i) => {
                out.insert(i.unraw().to_string());
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
            // The same name, raw.
            (10, "fn r#helper() -> u32 {\n    2\n}\n"),
            // An impl in the new function's body: global, an inherent method wins over a trait's.
            (
                10,
                "fn later() {\n    impl Clone for Marker {\n        fn clone(&self) -> Self { Marker }\n    }\n}\n",
            ),
            // A doctest nothing would build, or docs read from a file.
            (10, "/// ```\n/// assert!(true);\n/// ```\npub fn documented() {}\n"),
            (10, "#[doc = include_str!(\"../README.md\")]\npub fn from_readme() {}\n"),
        ] {
            let (text, range) = insert(after, lines);
            assert!(!harmless(&text, &[range]), "{text}");
        }
        // Shadowing: `helper` came from the glob import, a new local one takes its place.
        let text = "use other::*;\n\nfn helper() {}\n\n#[test]\nfn t() {\n    helper();\n}\n";
        assert!(!harmless(text, &[(2, 3)]));
        // A file with a glob import that calls its own macro: the expansion resolves the names
        // it calls here, and a new function may take the place of what the glob brought.
        let text = "use super::*;\n\n#[test]\nfn two() {\n    check_len!(v, 2);\n}\n\nfn len_of(_: &[u8]) -> usize {\n    0\n}\n";
        assert!(!harmless(text, &[(7, 10)]));
        assert!(harmless(
            &text.replace("check_len!(v, 2)", "assert_eq!(v.len(), 2)"),
            &[(7, 10)]
        ));
        // A string literal that spans lines: a line inserted into it changes its value.
        let text = "const S: &str = \"a\n// b\nc\";\n";
        assert!(!harmless(text, &[(2, 2)]));
        // A file syn cannot parse.
        assert!(!harmless("fn x( {\n\nfn y() {}\n", &[(3, 3)]));
    }
}
