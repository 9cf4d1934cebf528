//! `cargo xtask bench mutate`: what `cargo sfl --mutate` gains and costs, on a sample of the
//! injected faults (`bench faults`' cached versions) and on the Panic4R bugs that `bench
//! panic4r` reproduced. Each version runs `cargo sfl --mutate` (JSON) and `cargo sfl report`
//! on the same spectra (the ranking before mutation); the fault's first line is looked up in
//! the default ranking of both, and the run's cost is recorded. Results are cached under
//! target/bench/mutate; bench-results/mutate.md and mutate.json summarise them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Single-fault versions per crate of the faults benchmark (spread over its cached ones).
    #[arg(long, default_value_t = 3)]
    pub per_crate: usize,
    /// Only these crates of the faults benchmark (by name).
    #[arg(long = "crate")]
    pub crates: Vec<String>,
    /// Panic4R bugs to run (names such as idna-1; comma-separated); `all` for every reproduced
    /// bug; none by default.
    #[arg(long, value_delimiter = ',')]
    pub panic4r: Vec<String>,
    /// The Panic4R checkout, needed with --panic4r.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Lines of the ranking mutated (`--mutate-lines`).
    #[arg(long, default_value_t = 10)]
    pub lines: usize,
    /// Kill a version's runs after this many seconds.
    #[arg(long, default_value_t = 900)]
    pub timeout: u64,
    /// Only summarise what is cached.
    #[arg(long)]
    pub eval_only: bool,
    #[arg(long, default_value = "bench-results")]
    pub output_dir: PathBuf,
}

/// One version's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Outcome {
    benchmark: String,
    krate: String,
    id: String,
    /// The fault's first line's position in the default ranking, before and after; `None`:
    /// not ranked (or the run failed).
    before: Option<usize>,
    after: Option<usize>,
    /// Whether a fault line was among the mutated lines, and had a viable mutant.
    fault_mutated: bool,
    builds: u64,
    runs: u64,
    mutate_seconds: f64,
    total_seconds: f64,
    error: String,
}

pub fn run(args: &Args) -> Result<()> {
    let root = crate::root();
    let cache = root.join("target/bench/mutate");
    let sfl = crate::build_sfl()?;
    let mut all = Vec::new();
    for (name, _) in crate::faults_bench::CRATES {
        if !args.crates.is_empty() && !args.crates.iter().any(|c| c == name) {
            continue;
        }
        let dir = root.join("target/bench/faults").join(name);
        let records: Vec<_> = crate::faults_bench::cached_records(&dir)
            .into_iter()
            .filter(|r| r.id.starts_with("single-") && r.status == "failing")
            .collect();
        for r in crate::faults_bench::spread(&records, args.per_crate) {
            let path = cache.join("faults").join(name).join(format!("{}.json", r.id));
            let o = match cached(&path) {
                Some(o) => o,
                None if args.eval_only => continue,
                None => {
                    let (pristine, work) =
                        crate::faults_bench::dirs(&root.join("target/bench"), name, version_of(name))?;
                    // The path the cached builds were made under (target/bench may be a link).
                    let work = work.canonicalize()?;
                    let muts: Vec<&crate::faults_bench::Mutation> = r.mutations.iter().collect();
                    let faults = crate::faults_bench::mutate(&pristine, &work, &muts)?.unwrap_or_default();
                    let lines: Vec<(String, u32)> = faults
                        .iter()
                        .flat_map(|f| f.lines.iter().map(|&l| (f.file.clone(), l)))
                        .collect();
                    let cmd = crate::faults_bench::sfl_command(&sfl, &work);
                    let o = measure(
                        ("faults", name, &r.id),
                        (&sfl, cmd),
                        &work.join("Cargo.toml"),
                        &lines,
                        args,
                    )?;
                    crate::faults_bench::restore(&pristine, &work, &muts)?;
                    save(&path, &o)?;
                    o
                }
            };
            eprintln!(
                "   {:<10} {} before {:?} after {:?} ({:.0}s)",
                name, o.id, o.before, o.after, o.total_seconds
            );
            all.push(o);
        }
    }
    if !args.panic4r.is_empty() {
        all.extend(panic4r(args, &sfl, &cache)?);
    }
    let out = root.join(&args.output_dir);
    std::fs::create_dir_all(&out)?;
    let (md, json) = summary(&all, args);
    std::fs::write(out.join("mutate.md"), md)?;
    std::fs::write(out.join("mutate.json"), serde_json::to_string_pretty(&json)? + "\n")?;
    eprintln!("wrote {}", out.join("mutate.md").display());
    Ok(())
}

fn version_of(name: &str) -> &'static str {
    crate::faults_bench::CRATES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .expect("a crate of the benchmark")
}

fn cached(path: &Path) -> Option<Outcome> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

fn save(path: &Path, o: &Outcome) -> Result<()> {
    std::fs::create_dir_all(path.parent().expect("a file"))?;
    std::fs::write(path, serde_json::to_vec_pretty(o)?)?;
    Ok(())
}

/// Runs `cmd` (a `cargo sfl` run with its JSON report on stdout) with `--mutate`, then
/// `cargo sfl report` on the spectra it saved; where the fault `lines` rank in each.
fn measure(
    (benchmark, krate, id): (&str, &str, &str),
    (sfl, mut cmd): (&Path, Command),
    manifest: &Path,
    lines: &[(String, u32)],
    args: &Args,
) -> Result<Outcome> {
    let started = Instant::now();
    let mut o = Outcome {
        benchmark: benchmark.into(),
        krate: krate.into(),
        id: id.into(),
        before: None,
        after: None,
        fault_mutated: false,
        builds: 0,
        runs: 0,
        mutate_seconds: 0.0,
        total_seconds: 0.0,
        error: String::new(),
    };
    // The run's spectra, for the ranking before mutation (`report --spectra`): a run with its
    // own --target-dir keeps its default file there.
    let spectra = std::env::temp_dir().join(format!("sfl-mutate-bench-{}.spectra.json", std::process::id()));
    cmd.arg("--mutate")
        .arg("--mutate-lines")
        .arg(args.lines.to_string())
        .arg("--save-spectra")
        .arg(&spectra);
    let log = crate::root()
        .join("target/bench/mutate/logs")
        .join(format!("{benchmark}-{krate}-{id}.log"));
    std::fs::create_dir_all(log.parent().expect("a file"))?;
    cmd.stderr(std::fs::File::create(&log)?);
    let after = json_of(cmd, Duration::from_secs(args.timeout));
    let before = {
        let mut c = Command::new(sfl);
        c.stderr(Stdio::null());
        c.args([
            "sfl",
            "report",
            "--format",
            "json",
            "--color",
            "never",
            "--manifest-path",
        ])
        .arg(manifest)
        .arg("--spectra")
        .arg(&spectra);
        json_of(c, Duration::from_secs(120))
    };
    let _ = std::fs::remove_file(&spectra);
    o.total_seconds = started.elapsed().as_secs_f64();
    match (after, before) {
        (Ok(a), Ok(b)) => {
            o.after = position(&a, lines);
            o.before = position(&b, lines);
            let m = &a["mutation"];
            o.builds = m["builds"].as_u64().unwrap_or(0);
            o.runs = m["runs"].as_u64().unwrap_or(0);
            o.mutate_seconds = m["seconds"].as_f64().unwrap_or(0.0);
            o.fault_mutated = m["lines"].as_array().into_iter().flatten().any(|l| {
                l["score"].is_number()
                    && lines
                        .iter()
                        .any(|(f, n)| l["file"].as_str() == Some(f) && l["line"].as_u64() == Some(u64::from(*n)))
            });
        }
        (Err(e), _) | (_, Err(e)) => o.error = format!("{e:#}"),
    }
    Ok(o)
}

/// The JSON report a command prints, with a time limit.
fn json_of(mut cmd: Command, limit: Duration) -> Result<Value> {
    use std::os::unix::process::CommandExt;
    let out_path = std::env::temp_dir().join(format!("sfl-mutate-bench-{}.json", std::process::id()));
    cmd.stdout(std::fs::File::create(&out_path)?);
    let mut child = cmd.process_group(0).spawn()?;
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if started.elapsed() > limit {
            crate::kill_group(&mut child);
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let text = std::fs::read_to_string(&out_path).unwrap_or_default();
    let _ = std::fs::remove_file(&out_path);
    match status {
        None => anyhow::bail!("killed after {} s", limit.as_secs()),
        Some(_) => Ok(serde_json::from_str(&text)?),
    }
}

/// The 1-based position of the first fault line in the first ranking, counting every line
/// of the entries before it and the lines before it in its own entry.
fn position(report: &Value, lines: &[(String, u32)]) -> Option<usize> {
    let units = report["rankings"][0]["units"].as_array()?;
    let mut n = 0;
    for e in units {
        let members: Vec<&Value> = match e["members"].as_array() {
            Some(m) if !m.is_empty() => m.iter().collect(),
            _ => vec![e],
        };
        for m in members {
            n += 1;
            let hit = lines
                .iter()
                .any(|(f, l)| m["file"].as_str() == Some(f) && m["line"].as_u64() == Some(u64::from(*l)));
            if hit {
                return Some(n);
            }
        }
    }
    None
}

/// The reproduced Panic4R bugs asked for, prepared again and run with `--mutate`.
fn panic4r(args: &Args, sfl: &Path, cache: &Path) -> Result<Vec<Outcome>> {
    let bench = crate::root().join("target/bench/panic4r").canonicalize()?;
    let mut out = Vec::new();
    let mut bugs: Vec<String> = std::fs::read_dir(&bench)?
        .flatten()
        .filter(|e| e.path().join("record.json").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|b| args.panic4r.iter().any(|a| a == "all" || a == b))
        .collect();
    bugs.sort();
    for bug in bugs {
        let dir = bench.join(&bug);
        let Some(record) = crate::panic4r_bench::cached_record(&dir).filter(|r| r.reproduced) else {
            continue;
        };
        let path = cache.join("panic4r").join(format!("{bug}.json"));
        let o = match cached(&path) {
            Some(o) => o,
            None if args.eval_only => continue,
            None => {
                let data = args
                    .data
                    .as_deref()
                    .ok_or_else(|| anyhow::anyhow!("--panic4r needs --data"))?;
                let o = crate::panic4r_bench::mutate_bug(sfl, data, &record, &dir, |cmd, manifest, lines| {
                    measure(("panic4r", &record.krate, &bug), (sfl, cmd), manifest, lines, args)
                })?;
                save(&path, &o)?;
                o
            }
        };
        eprintln!(
            "   {bug:<22} before {:?} after {:?} ({:.0}s) {}",
            o.before, o.after, o.total_seconds, o.error
        );
        out.push(o);
    }
    Ok(out)
}

/// The Markdown page and the JSON.
fn summary(all: &[Outcome], args: &Args) -> (String, Value) {
    use std::fmt::Write as _;
    let mut md = String::from("# `cargo sfl --mutate`: gain and cost\n\n");
    let _ = writeln!(
        md,
        "Generated by `cargo xtask bench mutate` (cached runs under target/bench/mutate). Each version ran \
         `cargo sfl --mutate --mutate-lines {}`; *before* is `cargo sfl report` on the spectra of the same run. \
         Positions count every line of the entries above the fault's first line and the lines before it in its \
         own entry (ties in reported order), in the default ranking.\n",
        args.lines
    );
    md.push_str("| benchmark | versions | before top-1 | after top-1 | before top-3 | after top-3 | before top-5 | after top-5 | before top-10 | after top-10 | fault mutated | median builds | median test runs | median --mutate s | median whole run s |\n");
    md.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    let mut json = serde_json::Map::new();
    for bench in ["faults", "panic4r"] {
        let v: Vec<&Outcome> = all
            .iter()
            .filter(|o| o.benchmark == bench && o.error.is_empty())
            .collect();
        if v.is_empty() {
            continue;
        }
        let share = |n: usize, f: &dyn Fn(&Outcome) -> Option<usize>| {
            v.iter().filter(|o| f(o).is_some_and(|p| p <= n)).count() as f64 / v.len() as f64
        };
        let median = |f: &dyn Fn(&Outcome) -> f64| {
            let mut x: Vec<f64> = v.iter().map(|o| f(o)).collect();
            x.sort_by(f64::total_cmp);
            x[x.len() / 2]
        };
        let mut row = format!("| {bench} | {} ", v.len());
        let mut tops = serde_json::Map::new();
        for n in [1, 3, 5, 10] {
            let (b, a) = (share(n, &|o| o.before), share(n, &|o| o.after));
            let _ = write!(row, "| {:.0}% | {:.0}% ", b * 100.0, a * 100.0);
            tops.insert(format!("before_top{n}"), b.into());
            tops.insert(format!("after_top{n}"), a.into());
        }
        let mutated = v.iter().filter(|o| o.fault_mutated).count();
        let (builds, runs, ms, total) = (
            median(&|o| o.builds as f64),
            median(&|o| o.runs as f64),
            median(&|o| o.mutate_seconds),
            median(&|o| o.total_seconds),
        );
        let _ = writeln!(row, "| {mutated} | {builds:.0} | {runs:.0} | {ms:.1} | {total:.1} |");
        md.push_str(&row);
        tops.insert("versions".into(), v.len().into());
        tops.insert("fault_mutated".into(), mutated.into());
        tops.insert("median_builds".into(), builds.into());
        tops.insert("median_runs".into(), runs.into());
        tops.insert("median_mutate_seconds".into(), ms.into());
        tops.insert("median_total_seconds".into(), total.into());
        json.insert(bench.into(), tops.into());
    }
    let failed: Vec<&Outcome> = all.iter().filter(|o| !o.error.is_empty()).collect();
    if !failed.is_empty() {
        md.push_str("\nRuns that did not finish:\n\n");
        for o in &failed {
            let _ = writeln!(md, "- {} {}: {}", o.krate, o.id, o.error);
        }
    }
    md.push_str("\n## Versions\n\n| benchmark | crate | version | before | after | fault mutated | builds | runs | --mutate s |\n|---|---|---|---:|---:|---|---:|---:|---:|\n");
    for o in all.iter().filter(|o| o.error.is_empty()) {
        let p = |x: Option<usize>| x.map_or("–".to_string(), |n| n.to_string());
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            o.benchmark,
            o.krate,
            o.id,
            p(o.before),
            p(o.after),
            if o.fault_mutated { "yes" } else { "no" },
            o.builds,
            o.runs,
            o.mutate_seconds
        );
    }
    json.insert("versions".into(), serde_json::to_value(all).expect("serialises"));
    (md, Value::Object(json))
}
