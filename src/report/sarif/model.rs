//! The subset of the SARIF 2.1.0 object model the log uses, as typed serde structs.

use serde::Serialize;

use crate::report::view::Conventions;

// Field order is the order of the keys in the output; absent optional fields are left out.

#[derive(Serialize)]
pub(super) struct Log<'a> {
    #[serde(rename = "$schema")]
    pub(super) schema: &'static str,
    pub(super) version: &'static str,
    pub(super) runs: Vec<Run<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Run<'a> {
    pub(super) tool: Tool,
    pub(super) original_uri_base_ids: BaseUris,
    pub(super) invocations: Vec<Invocation>,
    pub(super) properties: RunProperties<'a>,
    pub(super) results: Vec<SarifResult>,
}

#[derive(Serialize)]
pub(super) struct Tool {
    pub(super) driver: Driver,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Driver {
    pub(super) name: &'static str,
    pub(super) version: &'static str,
    pub(super) semantic_version: &'static str,
    pub(super) rules: Vec<Rule>,
}

#[derive(Serialize)]
pub(super) struct BaseUris {
    #[serde(rename = "SRCROOT")]
    pub(super) srcroot: BaseUri,
}

#[derive(Serialize)]
pub(super) struct BaseUri {
    pub(super) uri: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Invocation {
    pub(super) execution_successful: bool,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RunProperties<'a> {
    pub(super) tests: usize,
    pub(super) failing_tests: usize,
    /// Failing tests that passed on a retry (`--retries`); each is named in its location.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) flaky_tests: Vec<String>,
    pub(super) all_failing_core: usize,
    pub(super) conventions: Conventions,
    pub(super) diff_base: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Rule {
    pub(super) id: String,
    pub(super) name: &'static str,
    pub(super) short_description: Message,
    pub(super) full_description: Message,
    pub(super) help: Message,
    pub(super) default_configuration: Configuration,
    pub(super) properties: RuleProperties,
}

#[derive(Serialize)]
pub(super) struct Configuration {
    pub(super) level: &'static str,
}

#[derive(Serialize)]
pub(super) struct RuleProperties {
    pub(super) formula: &'static str,
    pub(super) citation: &'static str,
    pub(super) probability: bool,
}

/// A message, or a multiformat message string (the same keys in SARIF).
#[derive(Serialize, Clone, Debug)]
pub(super) struct Message {
    pub(super) text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) markdown: Option<String>,
}

impl Message {
    pub(super) fn text(text: impl Into<String>) -> Self {
        Message {
            text: text.into(),
            markdown: None,
        }
    }
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct SarifResult {
    pub(super) rule_id: String,
    pub(super) rule_index: usize,
    pub(super) level: &'static str,
    pub(super) message: Message,
    pub(super) locations: Vec<Location>,
    pub(super) related_locations: Vec<Location>,
    /// The panic backtraces of the failing tests that pass through this entry.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) code_flows: Vec<CodeFlow>,
    pub(super) partial_fingerprints: Fingerprints,
    pub(super) properties: ResultProperties,
}

/// One failing test's panic backtrace, in call order (outermost frame first), as SARIF shows a
/// path through the code.
#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct CodeFlow {
    pub(super) message: Message,
    pub(super) thread_flows: Vec<ThreadFlow>,
}

#[derive(Serialize, Debug)]
pub(super) struct ThreadFlow {
    pub(super) locations: Vec<ThreadFlowLocation>,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThreadFlowLocation {
    pub(super) location: Location,
    pub(super) nesting_level: usize,
}

#[derive(Serialize, Debug)]
pub(super) struct Fingerprints {
    #[serde(rename = "cargoSflLines/v1")]
    pub(super) lines: String,
}

#[derive(Serialize, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResultProperties {
    pub(super) measure: &'static str,
    /// `null` (with `unscored`) when the measure could not score the entry.
    pub(super) score: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) unscored: bool,
    pub(super) rank: f64,
    pub(super) line_rank: f64,
    pub(super) ef: f64,
    pub(super) ep: f64,
    pub(super) nf: f64,
    pub(super) np: f64,
    pub(super) lines: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) probability: Option<f64>,
    /// Present for probabilities; `null` when the measure has no log10.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) log10_probability: Option<Option<f64>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) certain: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(super) changed: bool,
}

#[derive(Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Location {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message: Option<Message>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) logical_locations: Vec<LogicalLocation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) physical_location: Option<PhysicalLocation>,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct LogicalLocation {
    pub(super) fully_qualified_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) kind: Option<&'static str>,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct PhysicalLocation {
    pub(super) artifact_location: ArtifactLocation,
    pub(super) region: Region,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct ArtifactLocation {
    pub(super) uri: String,
    pub(super) uri_base_id: &'static str,
}

#[derive(Serialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct Region {
    pub(super) start_line: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) start_column: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) end_line: Option<u32>,
}
