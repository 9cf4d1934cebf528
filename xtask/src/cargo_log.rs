//! Reading cargo's logs.

/// The first line of a cargo log that says what went wrong (`error[E…]`, `error: …`), skipping
/// cargo's summaries ("could not compile").
pub fn first_error(log: &str) -> String {
    let errors = || log.lines().map(str::trim).filter(|l| l.starts_with("error"));
    errors()
        .find(|l| !l.contains("could not compile") && !l.starts_with("error: build failed"))
        .or_else(|| errors().next())
        .or_else(|| log.lines().rev().find(|l| !l.trim().is_empty()))
        .unwrap_or("(no output)")
        .chars()
        .take(300)
        .collect()
}
