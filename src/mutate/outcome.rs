//! What `--mutate` found: each mutated line's score and each mutant's kills, as the reports
//! show them.

use serde::Serialize;

/// What one mutant did.
#[derive(Clone, Debug, Serialize)]
pub struct MutantResult {
    pub file: String,
    pub line: u32,
    pub operator: String,
    /// Failing tests whose failure changed (or that passed).
    pub failing_changed: u32,
    /// Passing tests that failed.
    pub passing_broken: u32,
    /// Tests run (failing and passing).
    pub tests: u32,
}

/// A mutated line's result.
#[derive(Clone, Debug, Serialize)]
pub struct LineScore {
    pub file: String,
    pub line: u32,
    /// Mutants generated on the line.
    pub mutants: u32,
    /// Those that compiled and ran.
    pub viable: u32,
    /// The best viable mutant's Ochiai score over its kills (`None`: no viable mutant).
    pub score: Option<f64>,
}

/// What `--mutate` found and what it cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Mutation {
    pub lines: Vec<LineScore>,
    pub mutants: Vec<MutantResult>,
    /// Failing tests compared (those the plain build runs and that fail there too).
    pub failing_tests: u32,
    /// cargo builds (rounds and their rebuilds).
    pub builds: u32,
    /// Test processes run.
    pub runs: u32,
    pub seconds: f64,
}

impl Mutation {
    /// The score of `file:line`, when it was mutated and had a viable mutant.
    pub fn score(&self, file: &str, line: u32) -> Option<f64> {
        self.lines
            .iter()
            .find(|l| l.file == file && l.line == line)
            .and_then(|l| l.score)
    }

    /// One line for the terminal: what ran and what it cost.
    pub fn summary(&self) -> String {
        let viable: u32 = self.lines.iter().map(|l| l.viable).sum();
        let generated: u32 = self.lines.iter().map(|l| l.mutants).sum();
        let scored = self.lines.iter().filter(|l| l.score.is_some()).count();
        format!(
            "{} of {} lines by {viable} of {generated} mutants that compiled ({} builds, {} test runs, {:.1}s); \
             mutated lines are re-ordered among their places by how their mutants change the failures",
            scored,
            self.lines.len(),
            self.builds,
            self.runs,
            self.seconds
        )
    }
}

/// Metallaxis-FL's score of one mutant: Ochiai over kills, `changed` of `failing` failing
/// tests and `broken` passing ones.
pub fn metallaxis(changed: u32, broken: u32, failing: u32) -> f64 {
    if changed == 0 || failing == 0 {
        return 0.0;
    }
    let (c, b, f) = (f64::from(changed), f64::from(broken), f64::from(failing));
    c / (f * (c + b)).sqrt()
}

/// The asked-for lines that got no mutant, listed too (no score).
pub(super) fn without_mutants(asked: &[(String, u32)], scored: &[LineScore]) -> Vec<LineScore> {
    asked
        .iter()
        .filter(|(f, l)| !scored.iter().any(|x| x.file == *f && x.line == *l))
        .map(|(f, l)| LineScore {
            file: f.clone(),
            line: *l,
            mutants: 0,
            viable: 0,
            score: None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_without_mutants_in_two_files_are_both_listed() {
        let scored = [LineScore {
            file: "src/a.rs".into(),
            line: 3,
            mutants: 2,
            viable: 1,
            score: Some(0.5),
        }];
        let asked = [
            ("src/a.rs".to_string(), 3),
            ("src/a.rs".to_string(), 7),
            ("src/b.rs".to_string(), 7),
        ];
        let listed: Vec<(String, u32)> = without_mutants(&asked, &scored)
            .into_iter()
            .map(|l| (l.file, l.line))
            .collect();
        assert_eq!(listed, [("src/a.rs".to_string(), 7), ("src/b.rs".to_string(), 7)]);
    }

    #[test]
    fn metallaxis_is_ochiai_over_kills() {
        assert_eq!(metallaxis(0, 3, 2), 0.0);
        assert_eq!(metallaxis(2, 0, 2), 1.0);
        // 1 of 4 failing changed, 3 passing broken: 1 / sqrt(4 · 4).
        assert!((metallaxis(1, 3, 4) - 0.25).abs() < 1e-12);
    }
}
