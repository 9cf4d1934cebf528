//! The JSON lines of cargo's `--message-format json` that cargo sfl writes: a
//! `compiler-message` carrying a rustc diagnostic, in the shape cargo prints and
//! `cargo_metadata::Message` reads (field order = key order).

use serde::Serialize;

/// `{"reason": "compiler-message", …}`.
#[derive(Serialize)]
pub(super) struct CompilerMessage<'a> {
    pub reason: &'static str,
    pub package_id: &'a cargo_metadata::PackageId,
    pub manifest_path: &'a str,
    pub target: &'a cargo_metadata::Target,
    pub message: Diagnostic,
}

/// A rustc diagnostic.
#[derive(Serialize)]
pub(super) struct Diagnostic {
    /// `diagnostic` on the outermost one, as rustc marks it (its children have none).
    #[serde(rename = "$message_type", skip_serializing_if = "Option::is_none")]
    pub message_type: Option<&'static str>,
    pub message: String,
    pub code: Option<Code>,
    /// `warning`, `note`, …
    pub level: &'static str,
    pub spans: Vec<Span>,
    pub children: Vec<Diagnostic>,
    pub rendered: Option<String>,
}

#[derive(Serialize)]
pub(super) struct Code {
    pub code: String,
    pub explanation: Option<String>,
}

/// A span of source: 1-based lines and columns (characters), 0-based byte offsets.
#[derive(Serialize)]
pub(super) struct Span {
    pub file_name: String,
    pub byte_start: u32,
    pub byte_end: u32,
    pub line_start: usize,
    pub line_end: usize,
    pub column_start: usize,
    pub column_end: usize,
    pub is_primary: bool,
    pub text: Vec<SpanLine>,
    pub label: Option<String>,
    pub suggested_replacement: Option<String>,
    pub suggestion_applicability: Option<String>,
    pub expansion: Option<()>,
}

/// A line of a span's source, with the highlighted columns (1-based, end exclusive).
#[derive(Serialize)]
pub(super) struct SpanLine {
    pub text: String,
    pub highlight_start: usize,
    pub highlight_end: usize,
}
