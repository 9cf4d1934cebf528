//! nextest's filterset language over our test binaries: `-E` expressions, a profile's
//! `default-filter` and overrides' `filter`, compiled by `nextest-filtering` against the
//! workspace's package graph and matched the way `cargo nextest` matches them.

use guppy::PackageId;
use guppy::graph::PackageGraph;
use guppy::graph::cargo::BuildPlatform;
use miette::Diagnostic;
use nextest_filtering::{BinaryQuery, CompiledExpr, EvalContext, Filterset, FiltersetKind, ParseContext, TestQuery};
use nextest_metadata::{RustBinaryId, RustTestBinaryKind};

use crate::error::NextestError;
use crate::workspace::{TestBinary, Workspace};

/// The workspace's package graph (with dependencies, for `deps()`/`rdeps()`), built once and
/// only when some filterset needs compiling.
pub struct Graph {
    graph: PackageGraph,
}

impl Graph {
    /// Runs `cargo metadata` (with dependencies) for the workspace.
    pub fn load(ws: &Workspace) -> Result<Self, NextestError> {
        let mut cmd = guppy::MetadataCommand::new();
        cmd.manifest_path(ws.root.join("Cargo.toml"))
            .other_options(ws.cargo_flags.clone());
        let graph = cmd.build_graph().map_err(|e| NextestError::Graph(e.to_string()))?;
        Ok(Graph { graph })
    }

    /// Compiles one filterset; `origin` says where it came from, for the error.
    pub fn compile(&self, input: &str, kind: FiltersetKind, origin: &str) -> Result<CompiledExpr, NextestError> {
        let cx = ParseContext::new(&self.graph);
        Filterset::parse(input.to_string(), &cx, kind)
            .map(|f| f.compiled)
            .map_err(|e| NextestError::Filterset {
                origin: origin.to_string(),
                input: input.to_string(),
                why: describe(&e.errors),
            })
    }
}

/// The parse errors in words, each with the part of the expression it is about.
fn describe(errors: &[nextest_filtering::errors::ParseSingleError]) -> String {
    errors
        .iter()
        .map(|e| {
            let labels: Vec<String> = e
                .labels()
                .into_iter()
                .flatten()
                .map(|l| match l.label() {
                    Some(text) => format!("{text} at column {}", l.offset() + 1),
                    None => format!("at column {}", l.offset() + 1),
                })
                .collect();
            if labels.is_empty() {
                e.to_string()
            } else {
                format!("{e} ({})", labels.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What nextest knows of a test binary, for its binary and test queries.
pub struct BinaryInfo {
    package_id: PackageId,
    binary_id: RustBinaryId,
    name: String,
    kind: RustTestBinaryKind,
    platform: BuildPlatform,
    /// A library's doctests: no nextest test at all.
    doctest: bool,
}

impl BinaryInfo {
    pub fn new(ws: &Workspace, bin: &TestBinary) -> Self {
        let kind = RustTestBinaryKind::new(bin.kind.clone());
        BinaryInfo {
            package_id: PackageId::new(ws.members[bin.package].id.repr.clone()),
            binary_id: RustBinaryId::new(&bin.id),
            name: bin.target.clone(),
            // nextest builds proc-macro tests for the host, everything else for the target.
            platform: if kind == RustTestBinaryKind::PROC_MACRO {
                BuildPlatform::Host
            } else {
                BuildPlatform::Target
            },
            kind,
            doctest: bin.kind == "doctest",
        }
    }

    fn query(&self) -> BinaryQuery<'_> {
        BinaryQuery {
            package_id: &self.package_id,
            binary_id: &self.binary_id,
            binary_name: &self.name,
            kind: &self.kind,
            platform: self.platform,
        }
    }

    /// Whether `expr` takes test `name` of this binary; `default` is what `default()` means.
    pub fn matches(&self, expr: &CompiledExpr, default: &CompiledExpr, name: &str) -> bool {
        let query = TestQuery {
            binary_query: self.query(),
            test_name: name,
        };
        expr.matches_test(
            &query,
            &EvalContext {
                default_filter: default,
            },
        )
    }
}

/// Which tests run: `-E` expressions (any of them) within the profile's `default-filter`.
#[derive(Default)]
pub struct Selector {
    /// `-E`: a test runs if any matches (none given: every test).
    pub exprs: Vec<CompiledExpr>,
    /// The profile's `default-filter` (none: every test).
    pub default: Option<CompiledExpr>,
}

impl Selector {
    /// Whether test `name` of `bin` is selected. Doctests are not nextest tests: no filterset
    /// describes them, so `-E` leaves them out and `default-filter` leaves them in.
    pub fn selects(&self, bin: &BinaryInfo, name: &str) -> bool {
        if bin.doctest {
            return self.exprs.is_empty();
        }
        let all = CompiledExpr::ALL;
        let default = self.default.as_ref().unwrap_or(&all);
        let any = self.exprs.is_empty() || self.exprs.iter().any(|e| bin.matches(e, default, name));
        any && bin.matches(default, default, name)
    }

    /// Whether this selector leaves any test out.
    pub fn is_active(&self) -> bool {
        !self.exprs.is_empty() || self.default.is_some()
    }
}
