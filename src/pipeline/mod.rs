//! The subcommands, each a few steps over the stages: [`collect`] (build → list → run and
//! decode → matrix → save), then [`emit`] (rank → report → exit code), or an evaluation.
//! Every result already computed is kept when a later step fails.

mod collect;
mod emit;
mod evaluate;
mod progress;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use collect::{Collected, KeptProfile, collect};
pub use emit::emit;

use crate::config::{EvalConfig, Format, ListFormat, ReportConfig, RunConfig};
use crate::error::{SflError, exit};
use crate::spectra::{EdgeProfiles, Spectra};
use crate::ui;
use crate::workspace::Workspace;

/// `cargo sfl [OPTIONS] [FILTER]`.
pub fn run(cfg: &RunConfig) -> anyhow::Result<i32> {
    // Before building: the run would end in these errors anyway.
    emit::check_output(&cfg.report)?;
    if cfg.execution.no_edges {
        emit::refuse_edge_measures(&cfg.report.measures)?;
    }
    let Collected { spectra, saving } = collect(cfg)?;
    write_junit(cfg, &spectra)?;
    let reported = match cfg.execution.mutate {
        Some(lines) => {
            let mutator = |asked: &[(String, u32)]| crate::mutate::mutate(cfg, &spectra, asked);
            emit::emit_mutated(&spectra, &cfg.report, lines, &mutator)
        }
        None => emit(&spectra, &cfg.report),
    };
    saving.wait()?;
    reported
}

/// `--junit FILE`, else the nextest profile's `junit.path`: the run as JUnit XML.
fn write_junit(cfg: &RunConfig, spectra: &Spectra) -> anyhow::Result<()> {
    let path = match &cfg.execution.junit {
        Some(p) => p.clone(),
        // Only a nextest configuration can ask for one: without one, no `cargo metadata` again.
        None if cfg.nextest.config.is_none()
            && !Path::new(&spectra.workspace_root)
                .join(crate::nextest::CONFIG_PATH)
                .is_file() =>
        {
            return Ok(());
        }
        None => {
            let ws = Workspace::load(
                cfg.selection.manifest_path.as_deref(),
                cfg.selection.target_dir.as_deref(),
                cfg.selection.cargo_flags(),
            )?;
            match crate::nextest::Nextest::junit_path(&ws, &cfg.nextest)? {
                Some(p) => p,
                None => return Ok(()),
            }
        }
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, crate::report::junit(spectra)).with_context(|| format!("cannot write {}", path.display()))?;
    ui::status("Wrote", format!("the test run as JUnit XML to {}", path.display()));
    Ok(())
}

/// `cargo sfl report`: re-rank saved spectra (`spectra`, or the workspace's last run).
pub fn report(spectra: Option<&Path>, manifest_path: Option<&Path>, cfg: &ReportConfig) -> anyhow::Result<i32> {
    emit(&load_saved(spectra, manifest_path, &cfg.measures)?, cfg)
}

/// The measures `explain` shows when none is asked for: the default and a few classic ones.
const EXPLAIN_MEASURES: &[&str] = &[
    crate::measures::DEFAULT,
    "stack-combined",
    "ochiai",
    "tarantula",
    "dstar2",
    "cl",
];

/// `cargo sfl explain FILE:LINE`: why a line of the saved spectra ranks where it does.
pub fn explain(
    location: &(String, u32),
    spectra: Option<&Path>,
    manifest_path: Option<&Path>,
    measures_asked: bool,
    cfg: &ReportConfig,
) -> anyhow::Result<i32> {
    if !matches!(cfg.format, Format::Human | Format::Json) {
        return Err(SflError::Usage("cargo sfl explain writes --format human or json".into()).into());
    }
    let mut cfg = cfg.clone();
    if !measures_asked {
        cfg.measures = EXPLAIN_MEASURES
            .iter()
            .map(|m| crate::measures::find(m).expect("a measure of the catalogue"))
            .collect();
    }
    cfg.granularity = crate::config::Granularity::Line;
    let whole = load_saved(spectra, manifest_path, &cfg.measures)?;
    if cfg.measures.iter().any(|m| m.needs_edges()) && whole.edges.is_none() {
        cfg.measures.retain(|m| !m.needs_edges());
    }
    let mut converted = Default::default();
    let prepared = emit::at_granularity(&whole, &cfg, &mut converted)?;
    let (file, line) = locate(&whole, location)?;
    let mut e = emit::explanation(&whole, prepared.spectra, &cfg, &file, line);
    if let Some(why) = statement_hint(&whole, &file, line) {
        e.not_ranked = Some(why);
    }
    let history = emit::history(Path::new(&whole.workspace_root), std::iter::once(&file));
    e.last_changed = history
        .last_change(&file, line, line)
        .map(|c| crate::explain::LastChanged {
            commit: c.short.clone(),
            time: c.time,
            summary: c.summary.clone(),
            said: history.describe(c),
        });
    let text = match cfg.format {
        Format::Json => crate::explain::json(&e),
        _ => crate::explain::human(&e),
    };
    emit::write_output(cfg.output.as_deref(), &text)?;
    Ok(if e.not_ranked.is_some() {
        exit::UNLOCALISABLE
    } else {
        exit::REPORTED
    })
}

/// Saved spectra (`spectra`, or the workspace's last run), their edge profiles only when one of
/// `measures` needs them, their code read from the local workspace ([`read_here`]).
fn load_saved(
    spectra: Option<&Path>,
    manifest_path: Option<&Path>,
    measures: &[&crate::measures::Measure],
) -> anyhow::Result<Spectra> {
    let (path, root) = match spectra {
        Some(p) => (p.to_path_buf(), local_root(manifest_path)?),
        None => {
            let ws = Workspace::load(manifest_path, None, Vec::new())?;
            (ws.spectra_path(), ws.root)
        }
    };
    if !path.exists() {
        return Err(SflError::BadSpectra {
            path,
            reason: "no such file; run `cargo sfl` first".into(),
        }
        .into());
    }
    // Edge profiles are most of a saved file and only CP reads them.
    let edges = if measures.iter().any(|m| m.needs_edges()) {
        EdgeProfiles::Load
    } else {
        EdgeProfiles::Skip
    };
    Ok(read_here(load_with(&path, edges)?, &root, &path))
}

/// `FILE:LINE` as the saved spectra name it (relative to the workspace root), given relative to
/// the workspace root, to the current directory (a member's, say) or absolute. A file that is
/// not there, outside the workspace, or a line past its end is a usage error.
fn locate(whole: &Spectra, (file, line): &(String, u32)) -> Result<(String, u32), SflError> {
    let root = Path::new(&whole.workspace_root);
    let canonical_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let within = |p: &Path| -> Option<String> {
        let p = p.canonicalize().ok()?;
        let rel = p.strip_prefix(&canonical_root).ok()?;
        Some(rel.to_string_lossy().replace('\\', "/"))
    };
    let given = Path::new(file);
    let mut candidates = Vec::new();
    if given.is_absolute() {
        candidates.extend(within(given));
        if candidates.is_empty() && given.is_file() {
            return Err(SflError::Usage(format!(
                "{file} is outside the workspace ({})",
                root.display()
            )));
        }
    } else {
        candidates.push(file.clone());
        if let Ok(cwd) = std::env::current_dir() {
            candidates.extend(within(&cwd.join(given)));
        }
    }
    let known = |f: &str| whole.units.iter().any(|u| u.file == f);
    let rel = candidates
        .iter()
        .find(|f| known(f))
        .or_else(|| candidates.iter().find(|f| root.join(f).is_file()))
        .cloned()
        .ok_or_else(|| {
            SflError::Usage(format!(
                "no such file: {file} (give a path relative to the current directory or to the workspace root, {})",
                root.display()
            ))
        })?;
    if let Ok(text) = std::fs::read_to_string(root.join(&rel)) {
        let n = text.lines().count();
        if *line as usize > n {
            return Err(SflError::Usage(format!(
                "{rel} has {}: there is no line {line}",
                ui::counted(n, "line", "lines")
            )));
        }
    }
    Ok((rel, *line))
}

/// Why a line no coverage map has is not ranked, when it is inside a statement of several
/// lines whose coverage the compiler records on another of them (a macro call's format string,
/// a chained call): which line to ask about instead.
fn statement_hint(whole: &Spectra, file: &str, line: u32) -> Option<String> {
    let index = whole.unit_index();
    if index.contains_key(&(file, line)) {
        return None;
    }
    let text = std::fs::read_to_string(Path::new(&whole.workspace_root).join(file)).ok()?;
    let (a, b) = crate::syntax::statement_around(&text, line)?;
    let covered: Vec<String> = (a..=b)
        .filter(|l| index.contains_key(&(file, *l)))
        .map(|l| l.to_string())
        .collect();
    let first = covered.first()?;
    Some(format!(
        "{file}:{line} has no coverage of its own: it is part of the statement at lines {a}-{b}, whose coverage \
         the compiler records on {} {}; run `cargo sfl explain {file}:{first}`",
        if covered.len() == 1 { "line" } else { "lines" },
        covered.join(", ")
    ))
}

/// `cargo sfl analyze --gzoltar DIR`: rank an imported matrix.
pub fn analyze(gzoltar: &Path, cfg: &ReportConfig) -> anyhow::Result<i32> {
    let spectra = crate::gzoltar::load(gzoltar).map_err(|e| SflError::BadSpectra {
        path: gzoltar.to_path_buf(),
        reason: e.to_string(),
    })?;
    emit(&spectra, cfg)
}

/// `cargo sfl measures`: the catalogue.
pub fn measures(format: ListFormat) -> anyhow::Result<i32> {
    let text = match format {
        ListFormat::Human => crate::report::catalogue::human(),
        ListFormat::Json => crate::report::catalogue::json(),
    };
    emit::write_output(None, &text)?;
    Ok(exit::REPORTED)
}

/// `cargo sfl merge`: combine shards and report on the whole.
pub fn merge(
    files: &[PathBuf],
    save_spectra: Option<&Path>,
    allow_partial: bool,
    cfg: &ReportConfig,
) -> anyhow::Result<i32> {
    let what = match files {
        [one] => one.clone(),
        _ => PathBuf::from("the merged shards"),
    };
    let merged = read_here(merge_shards(files, allow_partial)?, &local_root(None)?, &what);
    if let Some(out) = save_spectra {
        merged.save(out).map_err(|source| SflError::Output {
            what: "the spectra",
            path: out.to_path_buf(),
            source,
        })?;
    }
    emit(&merged, cfg)
}

/// `cargo sfl eval`: how well every measure localises the known faults.
pub fn eval(cfg: &EvalConfig) -> anyhow::Result<i32> {
    let faults = crate::faults::load(&cfg.faults).map_err(|e| SflError::Usage(e.to_string()))?;
    if matches!(cfg.run.report.format, Format::Sarif | Format::Html | Format::Short) {
        return Err(SflError::Usage("cargo sfl eval writes --format human or json".into()).into());
    }
    // Checked before anything runs: a mistyped fault must not cost a whole run.
    let root = local_root(cfg.run.selection.manifest_path.as_deref())?;
    crate::faults::check_against(&faults, &root)
        .map_err(|e| SflError::Usage(format!("{}: {e}", cfg.faults.display())))?;
    let spectra = match &cfg.spectra {
        Some(path) => std::sync::Arc::new(read_here(load(path)?, &root, path)),
        None => {
            let collected = collect(&cfg.run)?;
            collected.saving.wait()?;
            collected.spectra
        }
    };
    evaluate::evaluate(&spectra, faults, cfg)
}

/// Reads saved spectra (their edge profiles too).
fn load(path: &Path) -> Result<Spectra, SflError> {
    load_with(path, EdgeProfiles::Load)
}

/// Reads saved spectra, their edge profiles only if `edges` says so.
fn load_with(path: &Path, edges: EdgeProfiles) -> Result<Spectra, SflError> {
    Spectra::load_with(path, edges).map_err(|reason| SflError::BadSpectra {
        path: path.to_path_buf(),
        reason: reason.to_string(),
    })
}

/// Where the sources of saved spectra are read: the workspace of `--manifest-path`, else the
/// one around the current directory, else the current directory itself. Never the root the
/// file names: a saved file may come from elsewhere (a CI artifact, whose runner's paths do
/// not exist here), and a root of `/` would let its units name any file on the machine.
fn local_root(manifest_path: Option<&Path>) -> Result<PathBuf, SflError> {
    match Workspace::load(manifest_path, None, Vec::new()) {
        Ok(ws) => Ok(ws.root),
        Err(e) if manifest_path.is_some() => Err(e),
        Err(_) => {
            std::env::current_dir().map_err(|e| SflError::Setup(format!("cannot read the current directory: {e}")))
        }
    }
}

/// Saved spectra (from `file`), their code shown from `root` (see [`local_root`]) where it is
/// the code they were recorded from ([`Spectra::check_sources`]); says so when the file was
/// recorded under another root, when code is not shown and why, and when the file predates the
/// saved source facts (then the ranking reads test code and line evidence from `root`).
fn read_here(mut spectra: Spectra, root: &Path, file: &Path) -> Spectra {
    if Path::new(&spectra.workspace_root) != root {
        ui::note(format!(
            "the spectra were recorded in {}; reading source lines from {}",
            spectra.workspace_root,
            root.display()
        ));
        spectra.workspace_root = root.to_string_lossy().into_owned();
    }
    if spectra.facts.is_none() {
        ui::note(format!(
            "{} was saved by an older cargo sfl (schema {} or {}) and lacks the source facts of {} \
             (test code, line kinds and operators, function names, per-file digests): they are read \
             from the sources in {}, so the ranking may depend on the directory it is made in; run \
             `cargo sfl` again to save them",
            file.display(),
            crate::spectra::SCHEMA_V2,
            crate::spectra::SCHEMA_V1,
            crate::spectra::SCHEMA,
            root.display()
        ));
    }
    let hidden = spectra.check_sources(root);
    if !hidden.is_empty() {
        ui::note(hidden_note(&hidden, root, spectra.facts.is_some()));
    }
    spectra
}

/// Why some files' code is not shown.
fn hidden_note(hidden: &crate::spectra::Hidden, root: &Path, ranked_from_facts: bool) -> String {
    let list = |files: &[String]| {
        let shown: Vec<&str> = files.iter().take(3).map(String::as_str).collect();
        match files.len() {
            n @ 4.. => format!("{} and {} more", shown.join(", "), n - 3),
            _ => shown.join(", "),
        }
    };
    let mut why = Vec::new();
    if hidden.unrecorded {
        why.push("the spectra record no digest of their sources to check them against".to_string());
    } else {
        if !hidden.missing.is_empty() {
            why.push(format!("{} not in {}", list(&hidden.missing), root.display()));
        }
        if !hidden.changed.is_empty() {
            why.push(format!(
                "{} in {} differ from the sources the spectra were recorded from (their digest does not match)",
                list(&hidden.changed),
                root.display()
            ));
        }
    }
    format!(
        "code text is not shown for {} source file{}: {}{}",
        hidden.missing.len() + hidden.changed.len(),
        if hidden.missing.len() + hidden.changed.len() == 1 {
            ""
        } else {
            "s"
        },
        why.join("; "),
        if ranked_from_facts {
            "; the ranking does not depend on it (it uses the facts saved with the spectra)"
        } else {
            ""
        }
    )
}

/// The shards' spectra merged into one matrix, saying which shards they were.
fn merge_shards(files: &[PathBuf], allow_partial: bool) -> anyhow::Result<Spectra> {
    let shards = files.iter().map(|p| load(p)).collect::<Result<Vec<_>, _>>()?;
    let numbered = || {
        let names: Vec<String> = files
            .iter()
            .enumerate()
            .map(|(i, f)| format!("{} = {}", i + 1, f.display()))
            .collect();
        names.join(", ")
    };
    let recorded: Vec<Option<&str>> = shards.iter().map(|s| s.partition.as_deref()).collect();
    if let Err(e) = crate::config::check_shard_set(&recorded) {
        if !allow_partial {
            return Err(SflError::BadSpectra {
                path: files[e.file()].clone(),
                reason: format!(
                    "{e}: the files are not one complete partition (files: {}); merge every shard, or pass --allow-partial",
                    numbered()
                ),
            }
            .into());
        }
        ui::warn(format!(
            "--allow-partial: {e}; the ranking covers only the tests these files ran"
        ));
    }
    let mut seen: Vec<String> = recorded.iter().flatten().map(|s| s.to_string()).collect();
    seen.sort();
    let merged = Spectra::merge(shards).map_err(|reason| SflError::BadSpectra {
        path: files[reason.shard().unwrap_or(0)].clone(),
        reason: format!("{reason} (files: {})", numbered()),
    })?;
    ui::status(
        "Merged",
        format!(
            "{} shards ({}): {} tests, {} lines",
            files.len(),
            if seen.is_empty() {
                "no partition recorded".to_string()
            } else {
                seen.join(", ")
            },
            merged.tests.len(),
            merged.units.len()
        ),
    );
    Ok(merged)
}
