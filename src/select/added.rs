//! Lines inserted outside every function that no existing test can feel ([`new_names`]): blank
//! lines, plain comments, and whole new free functions (a new `#[test]`, a helper for it), the
//! most common edit of all: writing a test that shows the bug, then running again.
//!
//! The check compares items, not text: the file as it is now is parsed with syn, and so is the
//! same file with the inserted lines taken out (what it was, as far as the insertion goes). They
//! must hold the same items, token for token, in the same modules, but for new `fn` items at
//! module level (never in an `impl` or a trait, where a method can override a default or take a
//! name's place in method resolution) and new inline modules holding only such functions and
//! `use`s. Rust resolves names in ways a file cannot show (glob imports and re-exports, a child
//! module's `use super::*`, macro expansions that call names where they are called), so a new
//! function or module
//! - has a name no Rust source of the packages mentions, raw or not (checked across the files
//!   by the caller, [`mentioned_elsewhere`]), that is not one of the prelude's values;
//! - has a body with no item in it, not even inside a macro's arguments (an `impl` there is
//!   global: an inherent method shadows a trait's in unchanged code), and calls no macro but the
//!   standard library's (another's expansion may define one);
//! - has no code block in its docs, fenced or indented (a doctest nothing would build);
//! - has only the attributes of a test (`#[test]`, `#[tokio::test]`, `#[async_std::test]`,
//!   `#[ignore]`, `#[should_panic]`), `#[cfg]`, lint levels, inlining hints and docs.
//!
//! A file that imports a glob and uses a macro of its own (a call, an attribute, a derive) gets
//! no exception: the expansion may call, by a name no source holds, what the glob brought.

use std::collections::HashSet;
use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::visit::Visit;

/// The names of the new functions and modules, when inserting the lines `ranges` (1-based,
/// inclusive, in `text`, the file as it is now) left every item that was there unchanged and
/// added only blank lines, comments and such functions and modules; `None` otherwise. The
/// names must then be [`mentioned_elsewhere`] nowhere.
pub(super) fn new_names(text: &str, ranges: &[(u32, u32)]) -> Option<Vec<String>> {
    let inserted = |n: usize| ranges.iter().any(|&(a, b)| a as usize <= n && n <= b as usize);
    let before: String = text
        .lines()
        .enumerate()
        .filter(|(i, _)| !inserted(i + 1))
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    let (Ok(now), Ok(then)) = (syn::parse_file(text), syn::parse_file(&before)) else {
        return None;
    };
    if tokens(&now.attrs) != tokens(&then.attrs) {
        return None;
    }
    let mut scan = Scan::default();
    scan.visit_file(&then);
    if scan.glob && scan.own_macro {
        return None;
    }
    let mut old_names = HashSet::new();
    idents(then.to_token_stream(), &mut old_names);
    let mut names = Vec::new();
    only_new_functions(&now.items, &then.items, &old_names, &mut names).then_some(names)
}

/// Whether another Rust source of `files` (paths relative to `root`) mentions one of `names` as
/// a word (code, comment or string: a macro may make a name of a string), or `include!`s `file`
/// (its items then live in that file's module).
pub(super) fn mentioned_elsewhere<'a>(
    root: &Path,
    file: &str,
    names: &[String],
    mut files: impl Iterator<Item = &'a String>,
) -> bool {
    let Some(base) = Path::new(file).file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    files.any(|f| {
        f != file
            && f.ends_with(".rs")
            && std::fs::read_to_string(root.join(f))
                .is_ok_and(|t| (t.contains("include!") && t.contains(base)) || names.iter().any(|n| mentions(&t, n)))
    })
}

/// Whether `text` holds `word` as a word (not inside a longer identifier).
fn mentions(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident) && !text[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// What a file holds that makes new functions in it unsafe to take as new tests: a glob
/// import, and a macro that is not the standard library's (called, or an attribute or derive).
#[derive(Default)]
struct Scan {
    glob: bool,
    own_macro: bool,
}

/// The standard library's macros: their expansions call no name of the crate and define no item.
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
];

/// Attributes the compiler itself reads (no expansion of a crate's).
const BUILTIN_ATTRIBUTES: &[&str] = &[
    "test",
    "ignore",
    "should_panic",
    "cfg",
    "cfg_attr",
    "allow",
    "warn",
    "deny",
    "forbid",
    "expect",
    "inline",
    "must_use",
    "track_caller",
    "cold",
    "doc",
    "derive",
    "repr",
    "non_exhaustive",
    "deprecated",
    "path",
    "macro_export",
    "macro_use",
    "automatically_derived",
    "no_mangle",
    "export_name",
    "link",
    "link_name",
    "link_section",
    "used",
    "target_feature",
    "unsafe",
    "global_allocator",
    "panic_handler",
    "recursion_limit",
];

/// Derives the standard library provides.
const BUILTIN_DERIVES: &[&str] = &[
    "Debug",
    "Clone",
    "Copy",
    "PartialEq",
    "Eq",
    "PartialOrd",
    "Ord",
    "Hash",
    "Default",
];

/// Keywords that begin an item: none may appear in a new function's body.
const ITEM_KEYWORDS: &[&str] = &[
    "impl",
    "struct",
    "enum",
    "union",
    "trait",
    "static",
    "extern",
    "mod",
    "macro_rules",
    "fn",
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
    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        let path: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        let builtin = match path.as_slice() {
            [one] => BUILTIN_ATTRIBUTES.contains(&one.as_str()),
            [tool, ..] => matches!(tool.as_str(), "rustfmt" | "clippy" | "diagnostic"),
            [] => false,
        };
        if !builtin {
            self.own_macro = true;
        } else if path == ["derive"] {
            let mut derives = HashSet::new();
            if let syn::Meta::List(list) = &a.meta {
                idents(list.tokens.clone(), &mut derives);
            }
            if derives.iter().any(|d| !BUILTIN_DERIVES.contains(&d.as_str())) {
                self.own_macro = true;
            }
        }
    }
}

/// Whether `now` is `then` with new free functions (and new modules of them) added, whose
/// names go to `names`.
fn only_new_functions(
    now: &[syn::Item],
    then: &[syn::Item],
    old_names: &HashSet<String>,
    names: &mut Vec<String>,
) -> bool {
    let mut old = then.iter().peekable();
    for item in now {
        match old.peek() {
            Some(o) if same_item(item, o, old_names, names) => {
                old.next();
            }
            _ if new_item(item, old_names, names) => {}
            _ => return false,
        }
    }
    old.next().is_none()
}

/// The same item, or the same inline module whose items differ by new functions alone.
fn same_item(now: &syn::Item, then: &syn::Item, old_names: &HashSet<String>, names: &mut Vec<String>) -> bool {
    match (now, then) {
        (syn::Item::Mod(a), syn::Item::Mod(b)) if a.ident == b.ident && tokens(&a.attrs) == tokens(&b.attrs) => {
            match (&a.content, &b.content) {
                (Some((_, x)), Some((_, y))) => only_new_functions(x, y, old_names, names),
                (None, None) => true,
                _ => false,
            }
        }
        _ => now.to_token_stream().to_string() == then.to_token_stream().to_string(),
    }
}

/// A new item that changes no existing code: a free function whose name the file did not use,
/// whose body holds no item and calls no macro of a crate's, whose attributes are harmless; or a
/// new inline module of such functions and `use`s. Its name goes to `names`.
fn new_item(item: &syn::Item, old_names: &HashSet<String>, names: &mut Vec<String>) -> bool {
    let (ident, attrs, ok) = match item {
        syn::Item::Fn(f) => (&f.sig.ident, &f.attrs, plain_body(f.block.to_token_stream())),
        syn::Item::Mod(m) => {
            let ok = m.content.as_ref().is_some_and(|(_, items)| {
                items
                    .iter()
                    .all(|i| matches!(i, syn::Item::Use(_)) || new_item(i, old_names, names))
            });
            (&m.ident, &m.attrs, ok)
        }
        _ => return false,
    };
    let name = ident.unraw().to_string();
    let fresh = !old_names.contains(&name) && !PRELUDE.contains(&name.as_str());
    names.push(name);
    ok && fresh && attrs.iter().all(harmless_attribute)
}

/// A function body with no item in it (an `impl` anywhere, even in a macro's arguments, is
/// global) and no macro call but the standard library's.
fn plain_body(stream: TokenStream) -> bool {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    tokens.iter().enumerate().all(|(i, t)| match t {
        TokenTree::Ident(id) => {
            let word = id.to_string();
            let called = matches!(
                (tokens.get(i + 1), tokens.get(i + 2)),
                (Some(TokenTree::Punct(p)), Some(TokenTree::Group(_))) if p.as_char() == '!'
            );
            !ITEM_KEYWORDS.contains(&word.as_str()) && (!called || STD_MACROS.contains(&word.as_str()))
        }
        TokenTree::Group(g) => plain_body(g.stream()),
        _ => true,
    })
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

/// An attribute that makes a function a test (`#[test]`, `#[tokio::test]`, `#[async_std::test]`,
/// `#[ignore]`, `#[should_panic]`), documents it with no code block, or tunes lints, inlining
/// and `cfg`.
fn harmless_attribute(attr: &syn::Attribute) -> bool {
    let path: Vec<String> = attr.path().segments.iter().map(|s| s.ident.to_string()).collect();
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    match path.as_slice() {
        ["doc"] => match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(text),
                        ..
                    }),
                ..
            }) => !has_code_block(&text.value()),
            _ => false,
        },
        ["tokio" | "async_std", "test"] => true,
        [one] => matches!(
            *one,
            "test"
                | "ignore"
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
        ),
        _ => false,
    }
}

/// Whether a line of doc text opens a code block: a fence, or a line indented four spaces (or
/// a tab) past the one space after `///`.
fn has_code_block(doc: &str) -> bool {
    doc.contains("```")
        || doc.contains("~~~")
        || doc.lines().any(|l| {
            let l = l.strip_prefix(' ').unwrap_or(l);
            (l.starts_with("    ") || l.starts_with('\t')) && !l.trim().is_empty()
        })
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
    use super::{mentions, new_names};

    fn harmless(text: &str, ranges: &[(u32, u32)]) -> bool {
        new_names(text, ranges).is_some()
    }

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

    /// The names go to the caller, which looks for them in every other source.
    #[test]
    fn names_are_words_of_other_files() {
        let (text, range) = insert(10, "#[test]\nfn new_case() {}\nmod more {\n    fn inner() {}\n}\n");
        assert_eq!(
            new_names(&text, &[range]),
            Some(vec!["new_case".to_string(), "inner".to_string(), "more".to_string()])
        );
        assert!(mentions("facade::value()", "value"));
        assert!(mentions("let s = \"value\";", "value"));
        assert!(!mentions("values(); value_of(); my_value", "value"));
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
        // Items inside a macro's arguments, a crate's macro (its expansion may define one), an
        // attribute of a crate's, an indented code block (a doctest).
        for (after, lines) in [
            (
                10,
                "fn later() {\n    assert!({ impl Clone for Marker { fn clone(&self) -> Self { Marker } } true });\n}\n",
            ),
            (10, "#[test]\nfn later() {\n    crate::setup!();\n}\n"),
            (10, "#[pm::test]\nfn later() {}\n"),
            (10, "#[rstest]\nfn later() {}\n"),
            (10, "/// Checks.\n///\n///     assert!(false);\npub fn later() {}\n"),
        ] {
            let (text, range) = insert(after, lines);
            assert!(!harmless(&text, &[range]), "{text}");
        }
        // A glob and an attribute or derive of a crate's: as a macro call.
        let text = "use super::*;\n\n#[pm::greeting_test]\nfn greets() {}\n\nfn greeting() -> i32 {\n    2\n}\n";
        assert!(!harmless(text, &[(5, 8)]));
        let text = "use super::*;\n\n#[derive(pm::Greets)]\nstruct P;\n\nfn greeting() -> i32 {\n    2\n}\n";
        assert!(!harmless(text, &[(5, 8)]));
        let text = "use super::*;\n\n#[derive(Debug, Clone)]\nstruct P;\n\nfn greeting() -> i32 {\n    2\n}\n";
        assert_eq!(new_names(text, &[(5, 8)]), Some(vec!["greeting".to_string()]));
        // A string literal that spans lines: a line inserted into it changes its value.
        let text = "const S: &str = \"a\n// b\nc\";\n";
        assert!(!harmless(text, &[(2, 2)]));
        // A file syn cannot parse.
        assert!(!harmless("fn x( {\n\nfn y() {}\n", &[(3, 3)]));
    }
}
