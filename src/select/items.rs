//! What an edit inside a function can change outside it. Coverage ties a test to the
//! functions it ran, which is right for an edit of what a function does; but a function's body
//! may hold items that other code sees (an `impl` block, whose methods and constants any code
//! may use; an exported `macro_rules!`), and its signature decides types at its callers (a
//! literal's type inferred from the return type, on a branch that never calls it). Such an edit
//! is not one of the body alone, and every test runs again.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::spectra::FunctionSpan;

/// The functions of a source file as it is now, as the syntax shows them (those the last
/// run's coverage did not know too: compiled out by a `cfg`, a generic no test instantiated),
/// read once per edited file.
pub(super) struct FunctionsNow {
    functions: Vec<FunctionNow>,
}

/// One function of [`FunctionsNow`], nested ones too.
struct FunctionNow {
    /// Its first and last line (attributes included).
    first: u32,
    last: u32,
    /// The line its body's `{` is on.
    brace: u32,
    /// The last line of its signature: the brace's when nothing follows the `{` on it (as
    /// rustfmt writes a function), else the line before (a one-line function's line is its
    /// body's).
    signature_end: u32,
    /// An item in its body that code outside it sees, in words.
    global: Option<&'static str>,
    /// A test (`#[test]`, `#[tokio::test]`, …): the harness calls it, no code does, so a
    /// change of its signature (a test renamed) reaches no caller.
    test: bool,
    /// The lines of its doc comments (`///`, `/** */`, `#[doc = …]`), first and last of each.
    docs: Vec<(u32, u32)>,
}

impl FunctionsNow {
    /// The functions of `file` under `root` now; `None` when it does not parse (the build says
    /// why).
    #[cfg(test)]
    pub(super) fn read(root: &std::path::Path, file: &str) -> Option<FunctionsNow> {
        FunctionsNow::parse(&std::fs::read_to_string(root.join(file)).ok()?)
    }

    /// The functions of a source whose text is `text` now; `None` when it does not parse (the
    /// build says why).
    pub(super) fn parse(text: &str) -> Option<FunctionsNow> {
        let parsed = syn::parse_file(text).ok()?;
        let mut found = Functions::default();
        found.visit_file(&parsed);
        let lines: Vec<&str> = text.lines().collect();
        let functions = found
            .all
            .iter()
            .map(|(span, block, test, docs)| {
                let (span, block, test) = (*span, *block, *test);
                let open = block.brace_token.span.open().start();
                let after_brace = lines
                    .get(open.line.saturating_sub(1))
                    .and_then(|l| l.get(l.char_indices().nth(open.column + 1).map_or(l.len(), |(i, _)| i)..))
                    .unwrap_or("")
                    .trim();
                let brace = open.line as u32;
                let mut local = LocalTypes::default();
                local.visit_block(block);
                let mut items = GlobalItems {
                    local: local.names,
                    found: None,
                };
                items.visit_block(block);
                FunctionNow {
                    first: span.start().line as u32,
                    last: span.end().line as u32,
                    brace,
                    signature_end: if after_brace.is_empty() || after_brace.starts_with("//") {
                        brace
                    } else {
                        brace - 1
                    },
                    global: items.found,
                    test,
                    docs: docs.clone(),
                }
            })
            .collect();
        Some(FunctionsNow { functions })
    }

    /// Why the edit of the function `f` (its span in the last run's lines; `moved`: where each
    /// of the file's old lines is now, `None` where it changed) reaches beyond its body: its
    /// body holds an item other code sees, or its signature changed. `None` when it does not.
    pub(super) fn reaches_beyond(&self, f: &FunctionSpan, moved: &[Option<u32>]) -> Option<String> {
        // Where the function starts now: where the last unchanged line at or before its start
        // went.
        let start = (1..=f.start)
            .rev()
            .find_map(|l| moved.get(l as usize - 1).copied().flatten().map(|n| n + f.start - l))
            .unwrap_or(f.start);
        let now = self
            .functions
            .iter()
            .filter(|g| g.first <= start + 1 && start <= g.last)
            .min_by_key(|g| g.last - g.first)?;
        if let Some(what) = now.global {
            return Some(format!(
                "the function at {}:{start}, whose body holds {what} that code outside it sees, changed",
                f.file
            ));
        }
        let unchanged: std::collections::HashSet<u32> = moved.iter().flatten().copied().collect();
        // A new or changed line of the signature, or one removed from it (an old line between
        // the function's start and the line its brace is on now, if that line was kept).
        let changed: Vec<u32> = (now.first..=now.signature_end)
            .filter(|l| !unchanged.contains(l))
            .collect();
        let old_brace = moved.iter().position(|&n| n == Some(now.brace)).map(|i| i as u32 + 1);
        let removed = old_brace.map_or(0, |b| {
            (f.start..b)
                .filter(|l| moved.get(*l as usize - 1) == Some(&None))
                .count()
        });
        if now.test || (changed.is_empty() && removed == 0) {
            return None;
        }
        // A doc comment's text is no code, but a doctest's is, and an attribute macro may read
        // it. Old lines changed as many as new ones, the new ones all in the doc comment.
        let in_docs = |l: &u32| now.docs.iter().any(|&(a, b)| a <= *l && *l <= b);
        Some(
            if !changed.is_empty() && removed <= changed.len() && changed.iter().all(in_docs) {
                // Named by the lines of the doc comment, which is where the edit is.
                let (a, b) = now
                    .docs
                    .iter()
                    .copied()
                    .find(|&(a, b)| a <= changed[0] && changed[0] <= b)
                    .unwrap_or((now.first, now.first));
                format!(
                    "the doc comment at {}:{a}-{b} of the function below it (its doctests, which attribute macros may read too) changed",
                    f.file
                )
            } else {
                format!(
                    "the signature of the function at {}:{}, which its callers' types may follow, changed",
                    f.file, now.first
                )
            },
        )
    }

    /// The innermost function holding the new lines `new` (first, last), as a span in the last
    /// run's lines of `file`: the old lines that went into it (`moved`), and `old` (first, last),
    /// the changed old lines. `None` when no function holds them, or its first line is new.
    pub(super) fn enclosing(
        &self,
        file: &str,
        new: (u32, u32),
        old: (u32, u32),
        moved: &[Option<u32>],
    ) -> Option<FunctionSpan> {
        let (first, last) = self
            .functions
            .iter()
            .filter(|g| g.first <= new.0 && new.1 <= g.last)
            .min_by_key(|g| g.last - g.first)
            .map(|g| (g.first, g.last))?;
        // A function that was there before: its first line is an old one (a new function,
        // whatever the diff aligned inside it, is for `select::added` to judge).
        if !moved.contains(&Some(first)) {
            return None;
        }
        let kept = moved
            .iter()
            .enumerate()
            .filter(|(_, n)| n.is_some_and(|n| first <= n && n <= last))
            .map(|(i, _)| i as u32 + 1);
        let (lo, hi) = kept.fold((None::<u32>, None::<u32>), |(lo, hi), l| {
            (Some(lo.map_or(l, |x| x.min(l))), Some(hi.map_or(l, |x| x.max(l))))
        });
        Some(FunctionSpan {
            file: file.to_string(),
            start: lo?.min(old.0),
            end: hi?.max(old.1),
        })
    }
}

/// Every function of a file with a body, nested ones too: its span and its body.
#[derive(Default)]
struct Functions<'ast> {
    all: Vec<FoundFn<'ast>>,
}

/// A function [`Functions`] found: its span, its body, whether it is a test ([`is_test`]), and
/// its doc comment's line spans.
type FoundFn<'ast> = (Span, &'ast syn::Block, bool, Vec<(u32, u32)>);

/// The line spans (first, last) of the doc comments among `attrs`: each `///` line is a doc
/// attribute of its own, and adjacent ones are one comment.
fn doc_lines(attrs: &[syn::Attribute]) -> Vec<(u32, u32)> {
    let mut spans: Vec<(u32, u32)> = Vec::new();
    for a in attrs.iter().filter(|a| a.path().is_ident("doc")) {
        let (first, last) = (a.span().start().line as u32, a.span().end().line as u32);
        match spans.last_mut() {
            Some(run) if first <= run.1 + 1 => run.1 = run.1.max(last),
            _ => spans.push((first, last)),
        }
    }
    spans
}

/// Whether attributes `attrs` make a function a test: one whose path ends in `test`
/// (`#[test]`, `#[tokio::test]`, `#[async_std::test]`).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().segments.last().is_some_and(|s| s.ident == "test"))
}

impl<'ast> Visit<'ast> for Functions<'ast> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.all
            .push((f.span(), &f.block, is_test(&f.attrs), doc_lines(&f.attrs)));
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.all.push((f.span(), &f.block, false, doc_lines(&f.attrs)));
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.all.push((f.span(), block, false, doc_lines(&f.attrs)));
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The types a body declares: code outside it cannot name them.
#[derive(Default)]
struct LocalTypes {
    names: Vec<String>,
}

impl<'ast> Visit<'ast> for LocalTypes {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        match i {
            syn::Item::Struct(s) => self.names.push(s.ident.to_string()),
            syn::Item::Enum(e) => self.names.push(e.ident.to_string()),
            syn::Item::Union(u) => self.names.push(u.ident.to_string()),
            _ => {}
        }
        syn::visit::visit_item(self, i);
    }
}

/// The first item in a body that code outside it sees, in words: an `impl` of a type the body
/// does not declare (`local`; a test's own struct and its impls are the test's), an exported
/// macro, a function exported by symbol name.
struct GlobalItems {
    local: Vec<String>,
    found: Option<&'static str>,
}

impl<'ast> Visit<'ast> for GlobalItems {
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let local = match &*i.self_ty {
            syn::Type::Path(p) => p
                .path
                .segments
                .last()
                .is_some_and(|s| self.local.iter().any(|n| s.ident == n)),
            _ => false,
        };
        if !local {
            self.found.get_or_insert("an impl block");
        }
        syn::visit::visit_item_impl(self, i);
    }

    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) {
            self.found.get_or_insert("an exported macro");
        }
        syn::visit::visit_item_macro(self, m);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        let exported = f
            .attrs
            .iter()
            .any(|a| a.path().is_ident("no_mangle") || a.path().is_ident("export_name") || is_unsafe_attr(a));
        if exported {
            self.found.get_or_insert("a function exported by symbol name");
        }
        syn::visit::visit_item_fn(self, f);
    }
}

/// `#[unsafe(no_mangle)]` or `#[unsafe(export_name = …)]`.
fn is_unsafe_attr(a: &syn::Attribute) -> bool {
    a.path().is_ident("unsafe")
        && a.meta.require_list().is_ok_and(|l| {
            let inner = l.tokens.to_string();
            inner.starts_with("no_mangle") || inner.starts_with("export_name")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `old` and `new` in a temporary root as `src/lib.rs`; what [`reaches_beyond`] says of the
    /// edit of the function spanning old lines `start..=end`.
    fn judge(old: &str, new: &str, start: u32, end: u32) -> Option<String> {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), new).unwrap();
        let hash = |t: &str| crate::spectra::line_hashes(t.as_bytes());
        let f = FunctionSpan {
            file: "src/lib.rs".into(),
            start,
            end,
        };
        let functions = [&f];
        let at = super::super::locate::locate(&hash(old), &hash(new), &functions);
        FunctionsNow::read(root.path(), "src/lib.rs")?.reaches_beyond(&f, &at.lines)
    }

    #[test]
    fn a_change_in_a_function_the_last_run_did_not_know_is_placed_in_it() {
        let old = "#[cfg(feature = \"x\")]\npub fn gated() -> u8 {\n    7\n}\n\npub fn known() {}\n";
        let new = "#[cfg(feature = \"x\")]\npub fn gated() -> u8 {\n    let _ = 0;\n    7\n}\n\npub fn known() {}\n";
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("src")).unwrap();
        std::fs::write(root.path().join("src/lib.rs"), new).unwrap();
        let known = FunctionSpan {
            file: "src/lib.rs".into(),
            start: 6,
            end: 6,
        };
        let hash = |t: &str| crate::spectra::line_hashes(t.as_bytes());
        let at = super::super::locate::locate(&hash(old), &hash(new), &[&known]);
        let (after, lines) = at.outside[0];
        let now = FunctionsNow::read(root.path(), "src/lib.rs").unwrap();
        let span = now.enclosing("src/lib.rs", lines, (after, after), &at.lines).unwrap();
        assert_eq!((span.start, span.end), (1, 4));
        // A new function is not an old one's.
        let added = "#[cfg(feature = \"x\")]\npub fn gated() -> u8 {\n    7\n}\n\nfn fresh() {\n    1;\n}\n\npub fn known() {}\n";
        std::fs::write(root.path().join("src/lib.rs"), added).unwrap();
        let at = super::super::locate::locate(&hash(old), &hash(added), &[&known]);
        let now = FunctionsNow::read(root.path(), "src/lib.rs").unwrap();
        assert!(
            at.outside
                .iter()
                .all(|&(after, lines)| now.enclosing("src/lib.rs", lines, (after, after), &at.lines).is_none())
        );
    }

    #[test]
    fn a_body_edit_stays_in_the_body() {
        let old = "pub fn width() -> u8 {\n    7\n}\n";
        let new = "pub fn width() -> u8 {\n    8\n}\n";
        assert_eq!(judge(old, new, 1, 3), None);
    }

    #[test]
    fn a_signature_edit_reaches_the_callers() {
        let old = "pub fn width() -> u8 {\n    7\n}\n";
        let new = "pub fn width() -> u32 {\n    7\n}\n";
        assert!(judge(old, new, 1, 3).is_some_and(|w| w.contains("signature")));
        let old = "pub fn f<T>(x: T)\nwhere\n    T: Copy,\n{\n    drop(x)\n}\n";
        let new = "pub fn f<T>(x: T)\n{\n    drop(x)\n}\n";
        assert!(judge(old, new, 1, 6).is_some_and(|w| w.contains("signature")));
        // A doctest's line changed: said as the doc comment's change, not the signature's; with
        // a signature line changed too, the signature's.
        let old = "/// Two.\n///\n/// ```\n/// assert_eq!(f(), 2);\n/// ```\npub fn f() -> u8 {\n    2\n}\n";
        let doc = old.replace("f(), 2", "f(), 3");
        assert!(
            judge(old, &doc, 1, 8)
                .is_some_and(|w| w.starts_with("the doc comment at src/lib.rs:1-5 of the function below it"))
        );
        let both = doc.replace("-> u8", "-> u16");
        assert!(judge(old, &both, 1, 8).is_some_and(|w| w.contains("signature")));
    }

    /// A test deleted or renamed: no code calls it, so every test need not run (the lines of
    /// the function after a deleted one are not its signature).
    #[test]
    fn a_test_deleted_or_renamed_reaches_nothing() {
        let old =
            "#[test]\nfn a() {\n    f(1);\n}\n\n#[test]\nfn b() {\n    f(2);\n}\n\n#[test]\nfn c() {\n    f(3);\n}\n";
        let deleted = "#[test]\nfn a() {\n    f(1);\n}\n\n#[test]\nfn c() {\n    f(3);\n}\n";
        assert_eq!(judge(old, deleted, 6, 9), None);
        let renamed = old.replace("fn b()", "fn b2()");
        assert_eq!(judge(old, &renamed, 6, 9), None);
        let async_renamed = old.replace("#[test]\nfn b()", "#[tokio::test]\nasync fn b2()");
        assert_eq!(judge(old, &async_renamed, 6, 9), None);
        // A helper of the tests renamed: its callers changed with it, and its signature reaches them.
        let helper = old.replace("#[test]\nfn b()", "fn b()");
        let helper_renamed = helper.replace("fn b()", "fn b2()");
        assert!(judge(&helper, &helper_renamed, 6, 9).is_some_and(|w| w.contains("signature")));
    }

    #[test]
    fn an_impl_or_an_exported_macro_in_a_body_reaches_everything() {
        let old =
            "pub fn host() -> u64 {\n    impl S {\n        pub const LUCKY: u64 = 7;\n    }\n    0\n}\npub struct S;\n";
        let new = old.replace("= 7", "= 8");
        assert!(judge(old, &new, 1, 6).is_some_and(|w| w.contains("an impl block")));
        let old = "pub fn host() {\n    #[macro_export]\n    macro_rules! triple { ($e:expr) => { $e * 3 } }\n}\n";
        let new = old.replace("* 3", "* 4");
        assert!(judge(old, &new, 1, 4).is_some_and(|w| w.contains("exported macro")));
        // A type of the body's own, with its impls, is the body's; so is a macro of its own.
        let old = "#[test]\nfn t() {\n    struct L;\n    impl Drop for L {\n        fn drop(&mut self) {}\n    }\n    let _l = L;\n}\n";
        let new = old.replace("let _l = L;", "let _l = L;\n    let _m = L;");
        assert_eq!(judge(old, &new, 1, 8), None);
        let old = "pub fn host() -> u32 {\n    macro_rules! two { () => { 2 } }\n    two!()\n}\n";
        let new = old.replace("{ 2 }", "{ 3 }");
        assert_eq!(judge(old, &new, 1, 4), None);
    }
}
