//! The test harness's arguments after `--`, as `cargo test -- ARGS` passes them to libtest:
//! the ones that say which tests run are honoured, and `--nocapture` (each test's output left
//! to its process, so a crashed or killed test's output is kept); the others about libtest's
//! own output have no effect (cargo sfl reads every test's output itself), and any other is
//! refused.

use crate::config::Ignored;

/// What `cargo test -- ARGS` would have libtest do that cargo sfl does too.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct HarnessArgs {
    /// Name filters: a test runs when its name contains one of them.
    pub patterns: Vec<String>,
    /// `--exact`.
    pub exact: bool,
    /// `--skip NAME` (repeatable).
    pub skip: Vec<String>,
    /// `--ignored` ([`Ignored::Only`]) or `--include-ignored` ([`Ignored::Include`]).
    pub ignored: Option<Ignored>,
    /// `--test-threads N`: tests at once, as `-j N`.
    pub test_threads: Option<usize>,
    /// `--nocapture` (or `--no-capture`).
    pub nocapture: bool,
    /// Options about libtest's own output, which have no effect here.
    pub no_effect: Vec<String>,
}

/// libtest's options about its own output: accepted, with no effect.
const OUTPUT_FLAGS: [&str; 4] = ["--show-output", "--quiet", "-q", "--report-time"];
const OUTPUT_OPTIONS: [&str; 2] = ["--color", "--format"];

/// Reads `args` (what follows `--`); an error names the argument and says what is supported.
pub fn parse(args: &[String]) -> Result<HarnessArgs, String> {
    let mut out = HarnessArgs::default();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next().cloned())
                .ok_or_else(|| format!("`{name}` after `--` needs {what}"))
        };
        match name {
            "--exact" => out.exact = true,
            "--nocapture" | "--no-capture" => out.nocapture = true,
            "--skip" => out.skip.push(value("a name")?),
            "--ignored" | "--include-ignored" => {
                let asked = if name == "--ignored" {
                    Ignored::Only
                } else {
                    Ignored::Include
                };
                if out.ignored.is_some_and(|i| i != asked) {
                    return Err("`--ignored` and `--include-ignored` after `--` exclude each other".into());
                }
                out.ignored = Some(asked);
            }
            "--test-threads" => {
                let n = value("a number")?;
                out.test_threads = Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| format!("`--test-threads {n}` after `--`: expected a number of at least 1"))?,
                );
            }
            _ if OUTPUT_FLAGS.contains(&name) => out.no_effect.push(arg.clone()),
            _ if OUTPUT_OPTIONS.contains(&name) => {
                let v = value("a value")?;
                out.no_effect.push(format!("{name} {v}"));
            }
            _ if name.starts_with('-') => {
                return Err(format!(
                    "`{arg}` after `--` is not supported: cargo sfl runs each test itself and takes \
                     the test harness's name filters, `--exact`, `--skip NAME`, `--ignored`, \
                     `--include-ignored`, `--test-threads N` and `--nocapture` (its other output options \
                     have no effect)"
                ));
            }
            _ => out.patterns.push(arg.clone()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn selection_options_are_read_as_libtest_reads_them() {
        let h = parse(&args(&[
            "parse",
            "--exact",
            "--skip",
            "slow",
            "--skip=flaky",
            "lex",
            "--include-ignored",
            "--test-threads=3",
        ]))
        .unwrap();
        assert_eq!(h.patterns, ["parse", "lex"]);
        assert!(h.exact);
        assert_eq!(h.skip, ["slow", "flaky"]);
        assert_eq!(h.ignored, Some(Ignored::Include));
        assert_eq!(h.test_threads, Some(3));
        assert!(h.no_effect.is_empty());
        assert_eq!(parse(&args(&["--ignored"])).unwrap().ignored, Some(Ignored::Only));
        assert_eq!(parse(&args(&["--test-threads", "1"])).unwrap().test_threads, Some(1));
    }

    #[test]
    fn output_options_have_no_effect_and_others_are_refused() {
        let h = parse(&args(&["--nocapture", "--color", "always", "--format=terse", "t"])).unwrap();
        assert_eq!(h.no_effect, ["--color always", "--format terse"]);
        assert!(h.nocapture);
        assert_eq!(h.patterns, ["t"]);
        for bad in [
            &["--list"][..],
            &["--shuffle"],
            &["--skip"],
            &["--test-threads", "0"],
            &["--test-threads=x"],
            &["--ignored", "--include-ignored"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?} was accepted");
        }
        let why = parse(&args(&["--list"])).unwrap_err();
        assert!(why.contains("`--list` after `--` is not supported"), "{why}");
    }
}
