//! What the benchmarks share of the leave-one-crate-out fit: the weights fitted without a crate
//! (written by `cargo xtask fit`, read when a benchmark ranks that crate's versions) and how a
//! repository names its crate.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::json;

/// The file (next to combined.md) with each held-out crate's weights.
pub const FOLDS: &str = "combined-folds.json";

/// The weights fitted without `krate` (read from the benchmark results), if the fit held it out.
pub fn fold_weights(out_dir: &Path, krate: &str) -> Option<cargo_sfl::weights::Weights> {
    let text = std::fs::read_to_string(out_dir.join(FOLDS)).ok()?;
    let all: BTreeMap<String, serde_json::Value> = serde_json::from_str(&text).ok()?;
    let w: cargo_sfl::weights::Weights = serde_json::from_value(all.get(krate)?.clone()).ok()?;
    w.check().ok().map(|()| w)
}

/// Writes the weights fitted without `krate` to `dir/weights-<krate>.json`, for `cargo sfl eval
/// --weights`, when the fit held the crate out.
pub fn fold_weights_file(out_dir: &Path, krate: &str, dir: &Path) -> Result<Option<PathBuf>> {
    let Some(w) = fold_weights(out_dir, krate) else {
        return Ok(None);
    };
    let path = dir.join(format!("weights-{krate}.json"));
    std::fs::write(&path, json!({"features": w.features, "weights": w.weights}).to_string())?;
    Ok(Some(path))
}

/// A repository's crate, as the other benchmarks name it: `rapidfuzz/strsim-rs` is `strsim`,
/// `servo/rust-smallvec` is `smallvec`.
pub fn crate_of(repository: &str) -> String {
    let name = repository.rsplit('/').next().unwrap_or(repository);
    let name = name.strip_prefix("rust-").unwrap_or(name);
    name.strip_suffix("-rs").unwrap_or(name).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repositories_are_named_by_their_crates() {
        assert_eq!(crate_of("rapidfuzz/strsim-rs"), "strsim");
        assert_eq!(crate_of("servo/rust-smallvec"), "smallvec");
        assert_eq!(crate_of("BurntSushi/rust-csv"), "csv");
        assert_eq!(crate_of("dtolnay/semver"), "semver");
    }
}
