//! Which tests run by name and whether `#[ignore]`d ones do, as libtest's arguments say it.

/// Which tests run by name, as libtest's arguments say it: `cargo test NAME -- NAMES --exact
/// --skip SKIP`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NameFilter {
    /// A test runs when its name contains one of these (is one, with `exact`); none: any test.
    pub patterns: Vec<String>,
    /// `--exact`: names must equal a pattern or a skip, not contain it.
    pub exact: bool,
    /// `--skip`: a test whose name contains one of these (is one, with `exact`) does not run.
    pub skip: Vec<String>,
}

impl NameFilter {
    /// A filter of one substring (`TESTNAME_FILTER`), or of none.
    pub fn substring(pattern: Option<String>) -> Self {
        NameFilter {
            patterns: pattern.into_iter().collect(),
            ..NameFilter::default()
        }
    }

    /// Whether the test named `name` runs, as libtest decides it.
    pub fn matches(&self, name: &str) -> bool {
        let hit = |p: &String| {
            if self.exact {
                name == p
            } else {
                name.contains(p.as_str())
            }
        };
        (self.patterns.is_empty() || self.patterns.iter().any(hit)) && !self.skip.iter().any(hit)
    }

    /// Whether it takes every test.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty() && self.skip.is_empty()
    }
}

impl std::fmt::Display for NameFilter {
    /// `` `a` or `b` (exact names), skipping `c` ``, for messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let quoted = |v: &[String]| v.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(" or ");
        let mut parts = Vec::new();
        if !self.patterns.is_empty() {
            parts.push(quoted(&self.patterns));
        }
        if !self.skip.is_empty() {
            parts.push(format!("skipping {}", quoted(&self.skip)));
        }
        write!(f, "{}", parts.join(", "))?;
        if self.exact {
            write!(f, " (exact names)")?;
        }
        Ok(())
    }
}

/// What becomes of `#[ignore]`d tests, as libtest's `--include-ignored` and `--ignored` say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Ignored {
    /// Recorded as ignored, not run (the default).
    #[default]
    Skip,
    /// Run with the others.
    Include,
    /// Only they run.
    Only,
}
