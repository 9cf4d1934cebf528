//! What syn tells about a workspace's source files, in one pass per file: the test code
//! ([`crate::testcode`] decides from it what to leave out) and every function's name
//! (`--granularity function` names its units by it).
//!
//! Function names are qualified within their file, as rustc's demangled symbols spell them
//! after the crate and module path: `module::Type::method`, `<Type as Trait>::method`,
//! `outer::inner` for a function nested in another, `f::{closure}` for a closure (and an
//! async block, which rustc compiles as one). A function the coverage map places inside a
//! `macro_rules!` definition or invocation is `<fn from macro name!>`; one syn cannot find
//! is `<fn at line N>`.

use std::collections::HashMap;
use std::path::Path;

use syn::spanned::Spanned;
use syn::visit::Visit;

use crate::spectra::FunctionSpan;

/// One file's syntax facts.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct FileSyntax {
    /// Lines of `#[test]`-like functions, `#[cfg(test)]` items and doc comments (doctests).
    pub test_ranges: Vec<(u32, u32)>,
    /// `#[cfg(test)] mod name;`: test modules whose body is in another file (and every
    /// `mod name;` of a file that is test code as a whole).
    pub test_modules: Vec<String>,
    /// The file opens with `#![cfg(test)]`: all of it is test code, whoever declares it
    /// (a plain `mod test;` whose file says it is a test module).
    pub test_file: bool,
    /// Functions, closures and macros, in source order.
    pub items: Vec<Named>,
}

/// A function, closure or macro and where it is.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Named {
    pub kind: NamedKind,
    /// First line of its declaration (attributes included) and the line its signature starts
    /// on: the coverage map starts a function on one of them.
    pub head: (u32, u32),
    pub end: u32,
    pub name: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum NamedKind {
    Function,
    Closure,
    Macro,
}

impl FileSyntax {
    /// Parses one file; `None` when syn cannot.
    pub fn parse(text: &str) -> Option<FileSyntax> {
        let file = syn::parse_file(text).ok()?;
        let mut v = Visitor::default();
        v.visit_file(&file);
        if file.attrs.iter().any(is_cfg_test) {
            v.out.test_file = true;
            v.out
                .test_modules
                .extend(file.items.iter().filter_map(|item| match item {
                    syn::Item::Mod(m) if m.content.is_none() => Some(m.ident.to_string()),
                    _ => None,
                }));
        }
        Some(v.out)
    }

    /// The name of the function the coverage map spans `start..=end` (see the module doc).
    pub fn function_name(&self, start: u32, end: u32) -> String {
        let extent = |n: &Named| n.end - n.head.0;
        // A function or closure that starts where the span does: the one ending where it does
        // first, then functions before closures on the same line, then the innermost.
        let starting = self
            .items
            .iter()
            .filter(|n| n.kind != NamedKind::Macro && n.head.0 <= start && start <= n.head.1)
            .min_by_key(|n| (n.end != end, n.kind, extent(n)));
        if let Some(n) = starting {
            return n.name.clone();
        }
        let within = self
            .items
            .iter()
            .filter(|n| n.head.0 <= start && start <= n.end)
            .min_by_key(|n| extent(n));
        match within {
            Some(n) if n.kind == NamedKind::Macro => format!("<fn from macro {}>", n.name),
            Some(n) => format!("{}::{{closure}}", n.name),
            None => format!("<fn at line {start}>"),
        }
    }
}

/// Parsed files of one workspace, each read and parsed once, on first use.
pub struct Parsed<'a> {
    root: &'a Path,
    files: HashMap<String, Option<FileSyntax>>,
}

impl<'a> Parsed<'a> {
    pub fn new(root: &'a Path) -> Self {
        Parsed {
            root,
            files: HashMap::new(),
        }
    }

    pub fn root(&self) -> &Path {
        self.root
    }

    /// The file at `rel` (relative to the root); `None` when it cannot be read or parsed.
    pub fn file(&mut self, rel: &str) -> Option<&FileSyntax> {
        let root = self.root;
        self.files
            .entry(rel.to_string())
            .or_insert_with(|| FileSyntax::parse(&std::fs::read_to_string(root.join(rel)).ok()?))
            .as_ref()
    }

    /// Takes in what a [`Prefetch`] parsed (waiting for it if it is still at work).
    pub fn absorb(&mut self, prefetch: Prefetch) {
        if let Some(files) = prefetch.0.and_then(|t| t.join().ok()) {
            self.files.extend(files);
        }
    }

    /// Reads and parses the files of `rels` not parsed yet, on all cores (a crate's sources are
    /// parsed after every run: one file after another, that was ~50 ms on regex-syntax).
    pub fn prefetch(&mut self, rels: &[&str]) {
        let todo: Vec<&str> = rels.iter().copied().filter(|r| !self.files.contains_key(*r)).collect();
        let threads = crate::platform::cpus().min(todo.len());
        if threads < 2 {
            return;
        }
        let root = self.root;
        let next = std::sync::atomic::AtomicUsize::new(0);
        let parsed: Vec<(String, Option<FileSyntax>)> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(rel) = todo.get(i) else { break out };
                            let text = std::fs::read_to_string(root.join(rel)).ok();
                            out.push((rel.to_string(), text.and_then(|t| FileSyntax::parse(&t))));
                        }
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().expect("parsing thread"))
                .collect()
        });
        self.files.extend(parsed);
    }

    /// The name of each function.
    pub fn function_names(&mut self, functions: &[FunctionSpan]) -> Vec<String> {
        functions
            .iter()
            .map(|f| match self.file(&f.file) {
                Some(s) => s.function_name(f.start, f.end),
                None => format!("<fn at line {}>", f.start),
            })
            .collect()
    }
}

/// Files (relative to a root) parsed on a thread of their own, one after another: started
/// while the tests run, which leave a core idle at times (process starts and ends, the last
/// tests), so the report finds them parsed ([`Parsed::absorb`]).
#[derive(Default)]
pub struct Prefetch(Option<std::thread::JoinHandle<Vec<Source>>>);

/// A file (relative to the root) and its syntax (`None`: it cannot be read or parsed).
type Source = (String, Option<FileSyntax>);

impl Prefetch {
    /// Starts parsing `rels` under `root`. With `cache` (a file), the facts of a file whose
    /// text is the same as when the cache was written are read from it, not parsed again
    /// (syn took a tenth of a run's own work on pulldown-cmark), and the cache is rewritten
    /// with this run's files.
    pub fn start(root: std::path::PathBuf, rels: Vec<String>, cache: Option<std::path::PathBuf>) -> Prefetch {
        Prefetch(Some(std::thread::spawn(move || {
            use md5::{Digest, Md5};
            let mut known = cache.as_deref().map(SyntaxCache::read).unwrap_or_default();
            let mut keep = SyntaxCache::default();
            let mut parsed = 0;
            let out = rels
                .into_iter()
                .map(|rel| {
                    let text = std::fs::read_to_string(root.join(&rel)).ok();
                    let syntax = text.and_then(|t| {
                        let key = crate::bitset::hex(&Md5::digest(t.as_bytes()));
                        let syntax = match known.files.remove(&key) {
                            Some(s) => s,
                            None => {
                                parsed += 1;
                                FileSyntax::parse(&t)?
                            }
                        };
                        keep.files.insert(key, syntax.clone());
                        Some(syntax)
                    });
                    (rel, syntax)
                })
                .collect();
            // Rewritten when a file was parsed, or one it held is gone or changed.
            if let Some(path) = cache
                && (parsed > 0 || !known.files.is_empty())
            {
                keep.write(&path);
            }
            out
        })))
    }
}

/// The syntax facts of files by the MD5 of their text, kept between runs. Written by one
/// build of cargo sfl and read only by the same (its executable's size and time stamp): facts
/// from another version's visitor could differ.
#[derive(Default, serde::Serialize, serde::Deserialize)]
struct SyntaxCache {
    by: String,
    files: HashMap<String, FileSyntax>,
}

impl SyntaxCache {
    /// This executable, as the cache names it.
    fn this_build() -> String {
        let meta = std::env::current_exe().and_then(std::fs::metadata).ok();
        let modified = meta.as_ref().and_then(|m| m.modified().ok());
        format!(
            "cargo-sfl {} {:?} {:?}",
            env!("CARGO_PKG_VERSION"),
            meta.map(|m| m.len()),
            modified
        )
    }

    /// The cache at `path`, empty when it is missing, unreadable or another build's.
    fn read(path: &Path) -> SyntaxCache {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice::<SyntaxCache>(&b).ok())
            .filter(|c| c.by == Self::this_build())
            .unwrap_or_default()
    }

    /// Writes the cache (best effort: without it the next run parses again).
    fn write(mut self, path: &Path) {
        self.by = Self::this_build();
        let tmp = path.with_extension("json.tmp");
        let written = serde_json::to_vec(&self)
            .ok()
            .is_some_and(|bytes| std::fs::write(&tmp, bytes).is_ok());
        if written {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// The innermost statement of `source` (a Rust file) that spans several lines and contains
/// line `at`: its first and last lines. A line inside a multi-line statement (a macro call's
/// format string, a chained call) often has no coverage of its own: the compiler records the
/// statement's on another of its lines.
pub fn statement_around(source: &str, at: u32) -> Option<(u32, u32)> {
    struct Around {
        at: u32,
        best: Option<(u32, u32)>,
    }
    impl<'ast> Visit<'ast> for Around {
        fn visit_stmt(&mut self, stmt: &'ast syn::Stmt) {
            let span = stmt.span();
            let (a, b) = (line(span), end_line(span));
            if a <= self.at && self.at <= b && a < b && self.best.is_none_or(|(x, y)| b - a < y - x) {
                self.best = Some((a, b));
            }
            syn::visit::visit_stmt(self, stmt);
        }
    }
    let file = syn::parse_file(source).ok()?;
    let mut v = Around { at, best: None };
    v.visit_file(&file);
    v.best
}

#[derive(Default)]
struct Visitor {
    out: FileSyntax,
    /// Inside an item already marked as test code (nested tests are not marked again).
    in_test: bool,
    /// Modules, types and functions around the current item.
    path: Vec<String>,
}

fn line(span: proc_macro2::Span) -> u32 {
    span.start().line as u32
}

fn end_line(span: proc_macro2::Span) -> u32 {
    span.end().line as u32
}

impl Visitor {
    fn mark(&mut self, span: proc_macro2::Span) {
        let (a, b) = (line(span), end_line(span));
        if a > 0 {
            self.out.test_ranges.push((a, b));
        }
    }

    fn qualified(&self, name: &str) -> String {
        let mut parts = self.path.clone();
        parts.push(name.to_string());
        parts.join("::")
    }

    fn named(&mut self, kind: NamedKind, head: (u32, u32), end: u32, name: String) {
        if head.0 > 0 {
            self.out.items.push(Named { kind, head, end, name });
        }
    }

    /// Records a function (declared over `span`, signature `sig`), then visits its body with
    /// its name on the path.
    fn function(&mut self, span: proc_macro2::Span, sig: &syn::Signature, visit: impl FnOnce(&mut Self)) {
        let name = sig.ident.to_string();
        self.named(
            NamedKind::Function,
            (line(span), line(sig.span())),
            end_line(span),
            self.qualified(&name),
        );
        self.nested(name, visit);
    }

    fn nested(&mut self, segment: String, visit: impl FnOnce(&mut Self)) {
        self.path.push(segment);
        visit(self);
        self.path.pop();
    }

    /// Marks a test item and visits it with `in_test` set, or just visits it.
    fn test_item(&mut self, test: bool, span: proc_macro2::Span, visit: impl FnOnce(&mut Self)) {
        if !test || self.in_test {
            return visit(self);
        }
        self.mark(span);
        self.in_test = true;
        visit(self);
        self.in_test = false;
    }
}

/// `#[test]`-like: an attribute whose path ends in `test`.
fn is_test_attr(attr: &syn::Attribute) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == "test")
}

/// `#[cfg(test)]`, or `test` required by an `all(…)` inside it.
fn is_cfg_test(attr: &syn::Attribute) -> bool {
    if !attr.path().is_ident("cfg") {
        return false;
    }
    let Ok(meta) = attr.parse_args::<syn::Meta>() else {
        return false;
    };
    requires_test(&meta)
}

fn requires_test(meta: &syn::Meta) -> bool {
    match meta {
        syn::Meta::Path(p) => p.is_ident("test"),
        syn::Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(syn::punctuated::Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated)
            .is_ok_and(|items| items.iter().any(requires_test)),
        _ => false,
    }
}

/// How an `impl` block's functions are qualified: `Type`, or `<Type as Trait>`.
fn impl_segment(i: &syn::ItemImpl) -> String {
    let ty = type_name(&i.self_ty);
    match &i.trait_ {
        Some((_, path, _)) => {
            let tr = path
                .segments
                .last()
                .map_or_else(|| "_".to_string(), |s| s.ident.to_string());
            format!("<{ty} as {tr}>")
        }
        None => ty,
    }
}

/// A type's last path segment (through references, pointers, slices and groups).
fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map_or_else(|| "_".to_string(), |s| s.ident.to_string()),
        syn::Type::Reference(r) => type_name(&r.elem),
        syn::Type::Ptr(p) => type_name(&p.elem),
        syn::Type::Slice(s) => format!("[{}]", type_name(&s.elem)),
        syn::Type::Group(g) => type_name(&g.elem),
        syn::Type::Paren(p) => type_name(&p.elem),
        _ => "_".to_string(),
    }
}

impl<'ast> Visit<'ast> for Visitor {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs: &[syn::Attribute] = match item {
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Static(s) => &s.attrs,
            syn::Item::Struct(s) => &s.attrs,
            syn::Item::Enum(e) => &e.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Macro(m) => &m.attrs,
            syn::Item::Trait(t) => &t.attrs,
            _ => &[],
        };
        let cfg_test = attrs.iter().any(is_cfg_test);
        let test_fn = matches!(item, syn::Item::Fn(_)) && attrs.iter().any(is_test_attr);
        if (cfg_test || test_fn)
            && !self.in_test
            && let syn::Item::Mod(m) = item
            && m.content.is_none()
        {
            self.out.test_modules.push(m.ident.to_string());
        }
        self.test_item(cfg_test || test_fn, item.span(), |v| syn::visit::visit_item(v, item));
    }

    fn visit_attribute(&mut self, a: &'ast syn::Attribute) {
        // Doc comments (`///`, `//!`, `#[doc = …]`) run only as doctests: rustdoc maps a
        // standalone doctest's code to its lines in the comment, so they are test code.
        if a.path().is_ident("doc") && matches!(a.meta, syn::Meta::NameValue(_)) {
            self.mark(a.span());
        }
        syn::visit::visit_attribute(self, a);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(f.span(), &f.sig, |v| syn::visit::visit_item_fn(v, f));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let test = f.attrs.iter().any(|a| is_cfg_test(a) || is_test_attr(a));
        self.test_item(test, f.span(), |v| {
            v.function(f.span(), &f.sig, |v| syn::visit::visit_impl_item_fn(v, f));
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if f.default.is_some() {
            self.function(f.span(), &f.sig, |v| syn::visit::visit_trait_item_fn(v, f));
        }
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.nested(m.ident.to_string(), |v| syn::visit::visit_item_mod(v, m));
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        self.nested(impl_segment(i), |v| syn::visit::visit_item_impl(v, i));
    }

    fn visit_item_trait(&mut self, t: &'ast syn::ItemTrait) {
        self.nested(t.ident.to_string(), |v| syn::visit::visit_item_trait(v, t));
    }

    fn visit_expr_closure(&mut self, c: &'ast syn::ExprClosure) {
        let span = c.span();
        let name = self.qualified("{closure}");
        self.named(NamedKind::Closure, (line(span), line(span)), end_line(span), name);
        self.nested("{closure}".into(), |v| syn::visit::visit_expr_closure(v, c));
    }

    fn visit_item_macro(&mut self, m: &'ast syn::ItemMacro) {
        // `macro_rules! name { … }` defines `name`; `name!(…)` at item level invokes it.
        let name = m
            .ident
            .as_ref()
            .or_else(|| m.mac.path.segments.last().map(|s| &s.ident));
        if let Some(name) = name {
            let span = m.span();
            self.named(
                NamedKind::Macro,
                (line(span), line(span)),
                end_line(span),
                format!("{name}!"),
            );
        }
        syn::visit::visit_item_macro(self, m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file whose text did not change is read from the cache, not parsed (the test plants a
    /// fact syn would not find to tell them apart); a changed file is parsed again.
    #[test]
    fn unchanged_files_come_from_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("syntax.json");
        std::fs::write(dir.path().join("a.rs"), "fn f() {}\n").unwrap();
        let run = || {
            let p = Prefetch::start(dir.path().to_path_buf(), vec!["a.rs".into()], Some(cache.clone()));
            p.0.unwrap().join().unwrap().remove(0).1.unwrap()
        };
        assert!(!run().test_file);
        let mut saved = SyntaxCache::read(&cache);
        assert_eq!(saved.files.len(), 1, "the first run wrote the cache");
        saved.files.values_mut().for_each(|f| f.test_file = true);
        saved.write(&cache);
        assert!(run().test_file, "read from the cache");
        std::fs::write(dir.path().join("a.rs"), "fn g() {}\n").unwrap();
        let fresh = run();
        assert!(!fresh.test_file && fresh.items[0].name == "g", "parsed again");
        assert_eq!(
            SyntaxCache::read(&cache).files.len(),
            1,
            "the old text's entry is dropped"
        );
    }

    const SOURCE: &str = "\
mod outer {
    pub struct Queue;
    impl Queue {
        #[inline]
        pub fn push(&mut self) {
            let f = |x: u32| x + 1;
            f(1);
        }
    }
    impl Default for Queue {
        fn default() -> Self { Queue }
    }
}
pub fn top() -> impl Fn() -> u32 { || 1 }
macro_rules! make {
    ($name:ident) => {
        pub fn $name() {}
    };
}
make!(generated);
";

    #[test]
    fn functions_are_named_by_module_type_and_closure() {
        let s = FileSyntax::parse(SOURCE).unwrap();
        // The coverage map starts `push` at its signature, after its attribute.
        assert_eq!(s.function_name(5, 8), "outer::Queue::push");
        assert_eq!(s.function_name(6, 6), "outer::Queue::push::{closure}");
        assert_eq!(s.function_name(11, 11), "outer::<Queue as Default>::default");
        // A function and its closure on one line: the span's end tells them apart.
        assert_eq!(s.function_name(14, 14), "top");
        assert_eq!(s.function_name(17, 17), "<fn from macro make!>");
        assert_eq!(s.function_name(20, 20), "<fn from macro make!>");
        assert_eq!(s.function_name(21, 21), "<fn at line 21>");
    }

    #[test]
    fn a_line_inside_a_multi_line_statement_is_placed_in_it() {
        let src =
            "fn f(w: &mut String) {\n    let x = 1;\n    write!(\n        w,\n        \"{}\",\n        x\n    );\n}\n";
        assert_eq!(statement_around(src, 5), Some((3, 7)));
        assert_eq!(statement_around(src, 2), None, "a one-line statement");
        assert_eq!(statement_around(src, 9), None);
    }

    #[test]
    fn doc_comments_are_test_code() {
        let src = "//! Crate docs.\n/// Adds.\n///\n/// ```\n/// assert_eq!(k::add(1, 2), 3);\n/// ```\npub fn add(a: u8, b: u8) -> u8 {\n    a + b\n}\n#[doc = \"x\"]\npub struct S;\n";
        let s = FileSyntax::parse(src).unwrap();
        let marked = |l: u32| s.test_ranges.iter().any(|&(a, b)| a <= l && l <= b);
        assert!((1..=6).all(marked), "{:?}", s.test_ranges);
        assert!(marked(10));
        assert!(!marked(7) && !marked(8) && !marked(11));
    }
}
