//! `cargo xtask house`: the library's shape, checked from its sources. The library's files
//! import each other one way (no circle of files, `use` or inline `crate::`/`super::` paths
//! alike); only the binary (`src/main.rs` and the modules it declares) ends the process; no
//! function outside tests is longer than [`MAX_FN_LINES`] lines and no file has more than
//! [`MAX_FILE_LINES`] lines outside its tests; errors are typed (`Result<_, String>` only in
//! clap value parsers).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use syn::spanned::Spanned;
use syn::visit::Visit;

pub const MAX_FN_LINES: usize = 80;
pub const MAX_FILE_LINES: usize = 600;

/// What breaks the library's shape; empty when it keeps it.
#[derive(Debug, Default)]
pub struct Findings {
    /// Each circle of files, with the imports that tie it (`a.rs -> b.rs: Name, Other`).
    pub circles: Vec<Vec<String>>,
    pub exits: Vec<String>,
    pub long_functions: Vec<String>,
    pub long_files: Vec<String>,
    pub string_errors: Vec<String>,
    /// Library files read, and imports between two of them.
    pub files: usize,
    pub imports: usize,
}

impl Findings {
    pub fn is_clean(&self) -> bool {
        self.circles.is_empty()
            && self.exits.is_empty()
            && self.long_functions.is_empty()
            && self.long_files.is_empty()
            && self.string_errors.is_empty()
    }

    /// The findings as a report, one finding a line under a heading per kind.
    pub fn render(&self) -> String {
        let mut out = format!("{} library files, {} imports between them\n", self.files, self.imports);
        for (i, c) in self.circles.iter().enumerate() {
            out.push_str(&format!("circle {}:\n", i + 1));
            for edge in c {
                out.push_str(&format!("  {edge}\n"));
            }
        }
        for (title, list) in [
            ("process exits outside the binary", &self.exits),
            (&*format!("functions over {MAX_FN_LINES} lines"), &self.long_functions),
            (
                &*format!("files over {MAX_FILE_LINES} lines outside tests"),
                &self.long_files,
            ),
            ("Result<_, String> outside clap value parsers", &self.string_errors),
        ] {
            if !list.is_empty() {
                out.push_str(&format!("{title}:\n"));
                for f in list {
                    out.push_str(&format!("  {f}\n"));
                }
            }
        }
        if self.is_clean() {
            out.push_str("no circle, no exit outside the binary, no long function or file, no string error\n");
        }
        out
    }
}

/// One source file of a crate: where it is and the module path it defines.
struct File {
    rel: String,
    module: Vec<String>,
    syntax: syn::File,
    text: String,
}

/// Checks the package whose `src/` is under `root`.
pub fn check(root: &Path) -> Result<Findings> {
    let src = root.join("src");
    let mut lib = Vec::new();
    collect_modules(&src, &src.join("lib.rs"), vec![], true, &mut lib)?;
    let mut bin = Vec::new();
    if src.join("main.rs").exists() {
        collect_modules(&src, &src.join("main.rs"), vec![], true, &mut bin)?;
    }
    // A file both crates declare (`#[path]`) is the library's.
    let lib_files: BTreeSet<&str> = lib.iter().map(|f| f.rel.as_str()).collect();
    bin.retain(|f| !lib_files.contains(f.rel.as_str()));

    let mut findings = Findings {
        files: lib.len(),
        ..Findings::default()
    };
    let parsers: BTreeSet<String> = lib.iter().flat_map(|f| value_parsers(&f.text)).collect();
    let edges = imports(&lib, &parsers, |f, v| {
        findings.exits.extend(std::mem::take(&mut v.exits));
        findings.long_functions.extend(std::mem::take(&mut v.long_functions));
        findings.string_errors.extend(std::mem::take(&mut v.string_errors));
        let outside_tests = f.text.lines().count() - v.test_lines;
        if outside_tests > MAX_FILE_LINES {
            findings
                .long_files
                .push(format!("{}: {outside_tests} lines outside tests", f.rel));
        }
    });
    findings.imports = edges.len();
    findings.circles = named_circles(&lib, &edges);
    Ok(findings)
}

/// The circles of files among the modules of the binary crate whose root is `src/main.rs`
/// under `root` (the xtask's, which may end the process and hold long benchmark files, but
/// imports one way like the library).
pub fn binary_circles(root: &Path) -> Result<Vec<Vec<String>>> {
    let src = root.join("src");
    let mut bin = Vec::new();
    collect_modules(&src, &src.join("main.rs"), vec![], true, &mut bin)?;
    let edges = imports(&bin, &BTreeSet::new(), |_, _| {});
    Ok(named_circles(&bin, &edges))
}

/// Which file of `files` imports which (by index), with the names it takes; `each` sees every
/// file's visitor once it has read the file.
fn imports(
    files: &[File],
    parsers: &BTreeSet<String>,
    mut each: impl FnMut(&File, &mut Visitor),
) -> BTreeMap<(usize, usize), BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .flat_map(|(i, f)| inline_modules(f).into_iter().map(move |m| (m, i)))
        .collect();
    let mut edges: BTreeMap<(usize, usize), BTreeSet<String>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let mut v = Visitor::new(f, parsers, &modules);
        v.visit_file(&f.syntax);
        for (path, name) in std::mem::take(&mut v.paths) {
            if let Some(j) = resolve(&modules, &path)
                && j != i
            {
                edges.entry((i, j)).or_default().insert(name);
            }
        }
        each(f, &mut v);
    }
    edges
}

/// Each circle of `edges`, as the imports that tie it (`a.rs -> b.rs: Name, Other`).
fn named_circles(files: &[File], edges: &BTreeMap<(usize, usize), BTreeSet<String>>) -> Vec<Vec<String>> {
    circles(files.len(), edges)
        .into_iter()
        .map(|members| {
            edges
                .iter()
                .filter(|((a, b), _)| members.contains(a) && members.contains(b))
                .map(|((a, b), names)| {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    format!("{} -> {}: {}", files[*a].rel, files[*b].rel, names.join(", "))
                })
                .collect()
        })
        .collect()
}

/// Reads `file` (module `module`) and every file its `mod name;` items declare, outside tests.
fn collect_modules(src: &Path, file: &Path, module: Vec<String>, owns_dir: bool, out: &mut Vec<File>) -> Result<()> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let syntax = syn::parse_file(&text).with_context(|| format!("parsing {}", file.display()))?;
    // `a.rs`'s children live in `a/`; `mod.rs`', `lib.rs`' and `main.rs`' beside them.
    let dir = if owns_dir {
        file.parent().unwrap().to_path_buf()
    } else {
        file.with_extension("")
    };
    let mut children = Vec::new();
    declared(&syntax.items, &dir, &module, &mut children);
    out.push(File {
        rel: file
            .strip_prefix(src.parent().unwrap())
            .unwrap_or(file)
            .display()
            .to_string(),
        module,
        syntax,
        text,
    });
    for (path, module, owns_dir) in children {
        collect_modules(src, &path, module, owns_dir, out)?;
    }
    Ok(())
}

/// The files of the `mod name;` items among `items` (inline modules' too), with their module
/// paths and whether each owns its directory (`mod.rs`, a `#[path]`).
fn declared(items: &[syn::Item], dir: &Path, module: &[String], out: &mut Vec<(PathBuf, Vec<String>, bool)>) {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if is_test(&m.attrs) {
            continue;
        }
        let mut path = module.to_vec();
        path.push(m.ident.to_string());
        if let Some((_, inner)) = &m.content {
            declared(inner, &dir.join(m.ident.to_string()), &path, out);
            continue;
        }
        if let Some(p) = path_attr(&m.attrs) {
            out.push((dir.join(p), path, true));
            continue;
        }
        let flat = dir.join(format!("{}.rs", m.ident));
        if flat.exists() {
            out.push((flat, path, false));
        } else {
            out.push((dir.join(m.ident.to_string()).join("mod.rs"), path, true));
        }
    }
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs
        .iter()
        .find(|a| a.path().is_ident("path"))
        .and_then(|a| match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s), ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        })
}

/// `#[cfg(test)]` or `#[test]`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || (a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string() == "test"))
    })
}

/// The module paths a file defines: its own and its inline modules'.
fn inline_modules(f: &File) -> Vec<Vec<String>> {
    fn walk(items: &[syn::Item], at: &[String], out: &mut Vec<Vec<String>>) {
        for item in items {
            if let syn::Item::Mod(m) = item
                && let Some((_, inner)) = &m.content
                && !is_test(&m.attrs)
            {
                let mut path = at.to_vec();
                path.push(m.ident.to_string());
                out.push(path.clone());
                walk(inner, &path, out);
            }
        }
    }
    let mut out = vec![f.module.clone()];
    walk(&f.syntax.items, &f.module, &mut out);
    out
}

/// The file that defines the longest module prefix of `path`.
fn resolve(modules: &BTreeMap<Vec<String>, usize>, path: &[String]) -> Option<usize> {
    (1..=path.len()).rev().find_map(|n| modules.get(&path[..n]).copied())
}

/// Functions named as clap value parsers (`value_parser = name`): they may return
/// `Result<_, String>`, as clap asks.
fn value_parsers(text: &str) -> Vec<String> {
    text.match_indices("value_parser")
        .filter_map(|(at, _)| {
            let rest = text[at + "value_parser".len()..].trim_start();
            let rest = rest.strip_prefix('=').or_else(|| rest.strip_prefix('('))?.trim_start();
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            name.rsplit("::").next().filter(|n| !n.is_empty()).map(str::to_string)
        })
        .collect()
}

/// Every strongly connected set of more than one file, as the files in it.
fn circles(n: usize, edges: &BTreeMap<(usize, usize), BTreeSet<String>>) -> Vec<BTreeSet<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(a, b) in edges.keys() {
        next[a].push(b);
    }
    let reach = |from: usize| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            for &y in &next[x] {
                if seen.insert(y) {
                    stack.push(y);
                }
            }
        }
        seen
    };
    let reaches: Vec<BTreeSet<usize>> = (0..n).map(reach).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for a in 0..n {
        if done.contains(&a) || !reaches[a].contains(&a) {
            continue;
        }
        let members: BTreeSet<usize> = (0..n)
            .filter(|&b| reaches[a].contains(&b) && reaches[b].contains(&a))
            .collect();
        done.extend(members.iter().copied());
        out.push(members);
    }
    out
}

/// One library file's imports, exits, long functions and string errors, outside its tests.
struct Visitor<'a> {
    file: &'a File,
    parsers: &'a BTreeSet<String>,
    /// The library's modules: a path may start at a child module's name.
    modules: &'a BTreeMap<Vec<String>, usize>,
    /// The module the visitor stands in (a file's inline modules nest it).
    at: Vec<String>,
    /// Absolute paths the file names, each with the name it takes (the path's last segment).
    paths: Vec<(Vec<String>, String)>,
    function: Option<String>,
    exits: Vec<String>,
    long_functions: Vec<String>,
    string_errors: Vec<String>,
    test_lines: usize,
}

impl<'a> Visitor<'a> {
    fn new(file: &'a File, parsers: &'a BTreeSet<String>, modules: &'a BTreeMap<Vec<String>, usize>) -> Self {
        Visitor {
            file,
            parsers,
            modules,
            at: file.module.clone(),
            paths: Vec::new(),
            function: None,
            exits: Vec::new(),
            long_functions: Vec::new(),
            string_errors: Vec::new(),
            test_lines: 0,
        }
    }

    /// `segments` made absolute from the module the visitor stands in, when it starts at
    /// `crate`, `super`, `self` or a child module's name.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut at = match first.as_str() {
            "crate" => Vec::new(),
            "super" | "self" => self.at.clone(),
            _ => {
                let mut child = self.at.clone();
                child.push(first.clone());
                if !self.modules.contains_key(&child) {
                    return None;
                }
                self.at.clone()
            }
        };
        let mut rest = if segments[0] == "crate" {
            &segments[1..]
        } else {
            segments
        };
        while let Some(first) = rest.first() {
            match first.as_str() {
                "super" => {
                    at.pop();
                }
                "self" => {}
                _ => break,
            }
            rest = &rest[1..];
        }
        at.extend(rest.iter().cloned());
        Some(at)
    }

    fn record(&mut self, segments: Vec<String>) {
        if let Some(path) = self.absolute(&segments) {
            let name = segments.last().cloned().unwrap_or_default();
            self.paths.push((path, name));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                self.record(path);
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                self.record(path);
            }
            syn::UseTree::Glob(_) => {
                let mut path = prefix.clone();
                path.push("*".into());
                self.record(path);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn function(
        &mut self,
        name: String,
        attrs: &[syn::Attribute],
        span: proc_macro2::Span,
        body: impl FnOnce(&mut Self),
    ) {
        if is_test(attrs) {
            self.test_lines += lines(span);
            return;
        }
        let n = lines(span);
        if n > MAX_FN_LINES {
            self.long_functions
                .push(format!("{}:{} {name}: {n} lines", self.file.rel, span.start().line));
        }
        let outer = self.function.replace(name);
        body(self);
        self.function = outer;
    }
}

fn lines(span: proc_macro2::Span) -> usize {
    span.end().line + 1 - span.start().line
}

impl<'ast> Visit<'ast> for Visitor<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test(&m.attrs) {
            self.test_lines += lines(m.span());
            return;
        }
        if m.content.is_some() {
            self.at.push(m.ident.to_string());
            syn::visit::visit_item_mod(self, m);
            self.at.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if is_test(&u.attrs) {
            return;
        }
        self.use_tree(&mut Vec::new(), &u.tree);
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if is_test(&i.attrs) {
            self.test_lines += lines(i.span());
            return;
        }
        syn::visit::visit_item_impl(self, i);
    }

    /// `pub(in crate::a)` says who may see an item, not what it uses.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.record(segments.clone());
        }
        if segments.ends_with(&["process".to_string(), "exit".to_string()]) {
            self.exits.push(format!(
                "{}:{} {}",
                self.file.rel,
                p.span().start().line,
                segments.join("::")
            ));
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_type_path(&mut self, t: &'ast syn::TypePath) {
        if let Some(last) = t.path.segments.last()
            && last.ident == "Result"
            && let syn::PathArguments::AngleBracketed(args) = &last.arguments
            && args.args.len() == 2
            && matches!(&args.args[1], syn::GenericArgument::Type(syn::Type::Path(e)) if e.path.is_ident("String"))
            && !self.function.as_ref().is_some_and(|f| self.parsers.contains(f))
        {
            self.string_errors.push(format!(
                "{}:{} in {}",
                self.file.rel,
                t.span().start().line,
                self.function.as_deref().unwrap_or("an item")
            ));
        }
        syn::visit::visit_type_path(self, t);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(f.sig.ident.to_string(), &f.attrs, f.span(), |v| {
            syn::visit::visit_item_fn(v, f)
        });
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(f.sig.ident.to_string(), &f.attrs, f.span(), |v| {
            syn::visit::visit_impl_item_fn(v, f)
        });
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.function(f.sig.ident.to_string(), &f.attrs, f.span(), |v| {
            syn::visit::visit_trait_item_fn(v, f)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn package(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_circle_through_a_use_and_an_inline_path() {
        let dir = package(&[
            ("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
            ("src/b.rs", "pub struct B;\npub fn f() -> crate::a::A { crate::a::A }\n"),
            ("src/c.rs", "use crate::{a::A, b};\n"),
        ]);
        let f = check(dir.path()).unwrap();
        assert_eq!(
            f.circles,
            vec![vec!["src/a.rs -> src/b.rs: B", "src/b.rs -> src/a.rs: A"]]
        );
        assert_eq!(f.imports, 4);
        assert!(!f.is_clean());
    }

    #[test]
    fn a_circle_among_a_binarys_modules_is_found() {
        let dir = package(&[
            ("src/main.rs", "mod a;\nmod b;\nfn main() { std::process::exit(0) }\n"),
            ("src/a.rs", "pub fn f() { crate::b::g() }\n"),
            ("src/b.rs", "use crate::a::f;\npub fn g() {}\npub fn h() { f() }\n"),
        ]);
        assert_eq!(
            binary_circles(dir.path()).unwrap(),
            vec![vec!["src/a.rs -> src/b.rs: g", "src/b.rs -> src/a.rs: f"]]
        );
        std::fs::write(dir.path().join("src/b.rs"), "pub fn g() {}\n").unwrap();
        assert!(binary_circles(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_child_that_imports_its_parent_closes_a_circle() {
        let dir = package(&[
            ("src/lib.rs", "pub mod p;\n"),
            (
                "src/p/mod.rs",
                "mod child;\npub struct Shared;\npub fn run() { child::go() }\n",
            ),
            (
                "src/p/child.rs",
                "use super::Shared;\npub fn go() { let _ = Shared; }\n",
            ),
        ]);
        let f = check(dir.path()).unwrap();
        assert_eq!(f.circles.len(), 1, "{}", f.render());
    }

    #[test]
    fn one_way_imports_tests_and_the_binary_are_clean() {
        let long_test: String = (0..100).map(|i| format!("    let _x{i} = {i};\n")).collect();
        let dir = package(&[
            ("src/lib.rs", "pub mod a;\npub mod b;\n"),
            (
                "src/a.rs",
                "pub struct A;\npub(in crate::b) fn f() {}\n#[cfg(test)]\nmod tests { use crate::b::B; }\n",
            ),
            (
                "src/b.rs",
                &format!("use crate::a::A;\npub struct B(A);\n#[test]\nfn long() {{\n{long_test}}}\n"),
            ),
            ("src/main.rs", "mod wrapper;\nfn main() { wrapper::run() }\n"),
            ("src/wrapper.rs", "pub fn run() { std::process::exit(0) }\n"),
        ]);
        let f = check(dir.path()).unwrap();
        assert!(f.is_clean(), "{}", f.render());
        assert_eq!((f.files, f.imports), (3, 1));
    }

    #[test]
    fn exits_long_functions_long_files_and_string_errors() {
        let body: String = (0..85).map(|i| format!("    let _x{i} = {i};\n")).collect();
        let filler: String = (0..600).map(|i| format!("pub const C{i}: u32 = {i};\n")).collect();
        let dir = package(&[
            ("src/lib.rs", "pub mod a;\npub mod big;\n"),
            (
                "src/a.rs",
                &format!(
                    "pub fn quit() {{ std::process::exit(1) }}\npub fn long() {{\n{body}}}\n\
                     pub fn parse(s: &str) -> Result<u32, String> {{ s.parse().map_err(|_| s.to_string()) }}\n\
                     #[derive(clap::Args)]\npub struct Args {{ #[arg(value_parser = parse_ok)] n: u32 }}\n\
                     fn parse_ok(s: &str) -> Result<u32, String> {{ parse(s) }}\n"
                ),
            ),
            ("src/big.rs", &filler),
        ]);
        let f = check(dir.path()).unwrap();
        assert_eq!(f.exits, vec!["src/a.rs:1 std::process::exit"]);
        assert_eq!(f.long_functions, vec!["src/a.rs:2 long: 87 lines"]);
        assert!(
            f.long_files.is_empty(),
            "600 lines are within the limit: {:?}",
            f.long_files
        );
        assert_eq!(f.string_errors, vec!["src/a.rs:89 in parse"]);
    }

    /// The project's own library keeps the shape `cargo xtask house` checks.
    #[test]
    fn the_library_keeps_its_shape() {
        let f = check(&crate::root()).unwrap();
        assert!(f.is_clean(), "{}", f.render());
        assert!(f.files > 100, "read the whole library: {}", f.render());
    }

    #[test]
    fn a_file_over_the_limit() {
        let filler: String = (0..601).map(|i| format!("pub const C{i}: u32 = {i};\n")).collect();
        let dir = package(&[("src/lib.rs", "pub mod big;\n"), ("src/big.rs", &filler)]);
        let f = check(dir.path()).unwrap();
        assert_eq!(f.long_files, vec!["src/big.rs: 601 lines outside tests"]);
    }
}
