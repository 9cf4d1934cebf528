//! The fuzzer's seed inputs: real files cargo sfl read or wrote for `fixtures/minmax`, committed
//! under `xtask/fuzz-seeds/` (a few KiB) so the short run in the test suite needs no build, and
//! remade from the fixture by `cargo xtask fuzz --refresh-seeds`.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// Every seed, by the decoder it feeds.
pub struct Seeds {
    /// Raw profiles of a passing and a failing test.
    pub profraw: Vec<Vec<u8>>,
    /// `__llvm_covmap` and `__llvm_covfun` of the test binary that wrote them.
    pub covmap: Vec<u8>,
    pub covfun: Vec<u8>,
    /// That binary cut down to its build-id, coverage and SanitizerCoverage sections, with
    /// its PC table already relocated (so the edge map reads it without the loader's tables).
    pub elf: Vec<u8>,
    /// Edge files of a passing and a failing test.
    pub edges: Vec<Vec<u8>>,
    pub spectra: Vec<Vec<u8>>,
    /// `spectra.csv`, `matrix.txt`, `tests.csv` of `fixtures/gzoltar-minmax`.
    pub gzoltar: [Vec<u8>; 3],
    /// Every fixture's `faults.toml`.
    pub faults: Vec<Vec<u8>>,
}

pub fn dir(root: &Path) -> PathBuf {
    root.join("xtask/fuzz-seeds")
}

const PROFILES: [&str; 2] = ["minmax-pass.profraw", "minmax-fail.profraw"];
const EDGES: [&str; 2] = ["minmax-pass.edges", "minmax-fail.edges"];

impl Seeds {
    /// Reads the committed seeds and the fixtures' GZoltar and faults files.
    pub fn load(root: &Path) -> Result<Seeds> {
        let d = dir(root);
        let read = |p: PathBuf| std::fs::read(&p).with_context(|| format!("seed {}", p.display()));
        let gz = root.join("fixtures/gzoltar-minmax");
        let mut faults = Vec::new();
        for e in std::fs::read_dir(root.join("fixtures"))?.flatten() {
            let f = e.path().join("faults.toml");
            if f.is_file() {
                faults.push(read(f)?);
            }
        }
        faults.sort();
        Ok(Seeds {
            profraw: PROFILES.iter().map(|n| read(d.join(n))).collect::<Result<_>>()?,
            covmap: read(d.join("minmax.covmap"))?,
            covfun: read(d.join("minmax.covfun"))?,
            elf: read(d.join("minmax.elf"))?,
            edges: EDGES.iter().map(|n| read(d.join(n))).collect::<Result<_>>()?,
            spectra: {
                // The committed seed (an older schema: no source facts), the same spectra as
                // saved today, and with source facts (v3), so every path is fuzzed.
                let old = read(d.join("minmax.spectra.json"))?;
                let mut spectra = cargo_sfl::spectra::Spectra::parse(&old).map_err(anyhow::Error::msg)?;
                let now = spectra.to_bytes();
                spectra.facts = Some(seed_facts(&spectra));
                vec![old, now, spectra.to_bytes()]
            },
            gzoltar: [
                read(gz.join("spectra.csv"))?,
                read(gz.join("matrix.txt"))?,
                read(gz.join("tests.csv"))?,
            ],
            faults,
        })
    }
}

/// Remakes the committed seeds: runs cargo sfl (debug build) with `--keep-profiles` on a copy
/// of `fixtures/minmax`, takes a passing and a failing test's profile and edge file and the
/// saved spectra, and cuts the test binary down with `objcopy` (`$OBJCOPY` overrides).
pub fn refresh(root: &Path) -> Result<()> {
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "cargo-sfl"])
        .current_dir(root)
        .status()?;
    if !status.success() {
        bail!("building cargo-sfl failed");
    }
    let work = root.join("target/fuzz/seed-work");
    let _ = std::fs::remove_dir_all(&work);
    crate::copy_tree(&root.join("fixtures/minmax"), &work)?;
    let out = Command::new(root.join("target/debug/cargo-sfl"))
        .args(["sfl", "--keep-profiles", "-q", "--format", "json", "--manifest-path"])
        .arg(work.join("Cargo.toml"))
        .output()?;
    if out.status.code() != Some(0) {
        bail!(
            "cargo sfl on fixtures/minmax failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let sfl = work.join("target/sfl");
    let index: serde_json::Value = serde_json::from_slice(&std::fs::read(sfl.join("profiles/index.json"))?)?;
    let spectra = cargo_sfl::spectra::Spectra::load(&sfl.join("spectra.json")).map_err(anyhow::Error::msg)?;
    let failing = |name: &str| spectra.tests.iter().any(|t| t.name == name && t.outcome.is_failing());
    let jobs = index.as_array().context("index.json")?;
    let pick = |fail: bool| {
        jobs.iter()
            .find(|j| j["name"].as_str().is_some_and(|n| failing(n) == fail))
            .with_context(|| {
                format!(
                    "no {} test in fixtures/minmax",
                    if fail { "failing" } else { "passing" }
                )
            })
    };
    let d = dir(root);
    std::fs::create_dir_all(&d)?;
    let mut binary = PathBuf::new();
    for (k, fail) in [false, true].into_iter().enumerate() {
        let job = pick(fail)?;
        binary = PathBuf::from(job["binary_path"].as_str().context("binary_path")?);
        let profile = PathBuf::from(job["profiles"][0].as_str().context("profiles")?);
        std::fs::copy(&profile, d.join(PROFILES[k]))?;
        std::fs::copy(profile.with_extension("edges"), d.join(EDGES[k]))?;
    }
    std::fs::copy(sfl.join("spectra.json"), d.join("minmax.spectra.json"))?;
    cut_binary(&binary, &d, &work)
}

/// Writes the coverage sections and the cut-down binary.
fn cut_binary(binary: &Path, d: &Path, work: &Path) -> Result<()> {
    use cargo_sfl::platform::{self, Section};
    let data = std::fs::read(binary)?;
    let obj = object::File::parse(&*data)?;
    for (which, file) in [
        (Section::CoverageMap, "minmax.covmap"),
        (Section::CoverageFunctions, "minmax.covfun"),
    ] {
        let bytes = platform::section_data(&obj, which)?.context("no coverage section")?;
        std::fs::write(d.join(file), &bytes)?;
    }
    // Without the dynamic relocations, the tables must hold what the loader would write; an
    // address it fills in from a library (a callee) becomes LLVM's "indirect call" marker, so
    // it still reads as not null.
    let mut updates = Vec::new();
    for (which, name) in [
        (Section::SancovPcs, "__sancov_pcs"),
        (Section::SancovControlFlow, "__sancov_cfs"),
    ] {
        let words = platform::relocated_words(&obj, which)?.with_context(|| format!("no {name}"))?;
        let file = work.join(format!("{name}.bin"));
        let bytes: Vec<u8> = words
            .values
            .iter()
            .zip(&words.relocated)
            .flat_map(|(&w, &r)| if w == 0 && r { u64::MAX } else { w }.to_le_bytes())
            .collect();
        std::fs::write(&file, bytes)?;
        updates.push(format!("--update-section={name}={}", file.display()));
    }
    let objcopy = std::env::var_os("OBJCOPY").unwrap_or_else(|| "objcopy".into());
    let mut cmd = Command::new(objcopy);
    for s in [
        ".note.gnu.build-id",
        "__llvm_covmap",
        "__llvm_covfun",
        "__sancov_bools",
        "__sancov_pcs",
        "__sancov_cfs",
    ] {
        cmd.arg(format!("--only-section={s}"));
    }
    let out = cmd
        .args(&updates)
        .arg(binary)
        .arg(d.join("minmax.elf"))
        .output()
        .context("running objcopy (set $OBJCOPY to another one)")?;
    if !out.status.success() {
        bail!("objcopy failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Source facts over a seed's units and functions: some units test code, structural or
/// operating, every function named, every file with a digest.
fn seed_facts(s: &cargo_sfl::spectra::Spectra) -> cargo_sfl::spectra::SourceFacts {
    use cargo_sfl::spectra::{SourceFacts, file_digest};
    let mut facts = SourceFacts::new(s.units.len());
    for u in 0..s.units.len() {
        match u % 3 {
            0 => facts.test_code.insert(u),
            1 => facts.structural.insert(u),
            _ => facts.operates.insert(u),
        }
    }
    facts.function_names = s
        .functions
        .iter()
        .map(|f| (f.clone(), format!("f{}", f.start)))
        .collect();
    facts.digests = s
        .source_files()
        .into_iter()
        .map(|f| (f.to_string(), file_digest(f.as_bytes())))
        .collect();
    facts
}
