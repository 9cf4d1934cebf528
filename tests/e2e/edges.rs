//! Edge profiles and CP, end to end: recorded edges against a hand-written list, CP on the
//! paper's `schedule` example, re-ranking saved edges, and `--no-edges`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use cargo_sfl::spectra::{Spectra, UnitId};
use libtest_mimic::Trial;
use serde_json::Value;

use crate::fixtures::saved;
use crate::support::shared;
use crate::support::{Result, check, check_exit, copy_fixture, faults, lib_crate, root, sfl, sfl_command, show};

pub fn trials() -> Vec<Trial> {
    vec![
        Trial::test("edges::recorded_exactly", recorded_exactly),
        Trial::test("edges::no_edges", no_edges),
        Trial::test("cp::schedule", schedule),
        Trial::test("cp::leaves_other_measures_alone", leaves_other_measures_alone),
        Trial::test("edges::counts_exact_with_threads", counts_exact_with_threads),
        Trial::test("edges::one_test_executables_read_for_their_test", one_test_executables),
        Trial::test(
            "edges::line_tables_read_by_unit_as_addr2line_reads_them",
            line_tables_by_unit,
        ),
    ]
}

/// Line-level transitions of the recorded edges: within a block, each line to the next in
/// address order; across an edge, the last line of one block to the first line of the next
/// (blocks with no line of their own are passed through). Keyed by function; a function's
/// first line is `start -> line`. Calls between non-test functions are `calls: f -> g`.
fn transitions(spectra: &Spectra, file: &str) -> BTreeSet<String> {
    let e = spectra.edges.as_ref().expect("edges recorded");
    let line = |u: UnitId| {
        let unit = &spectra.units[u.index()];
        (unit.file == file).then_some(unit.line)
    };
    let lines: Vec<Vec<u32>> = e
        .blocks
        .iter()
        .map(|b| b.lines.iter().filter_map(|&u| line(u)).collect())
        .collect();
    let mut succ: HashMap<Option<u32>, Vec<u32>> = HashMap::new();
    for edge in e.edges.iter().filter(|&&edge| !e.is_call(edge)) {
        succ.entry(edge.from.map(|f| f.0)).or_default().push(edge.to.0);
    }
    // The first lines reached from block `b`'s exit, through blocks with no lines.
    let reached = |from: Option<u32>| -> BTreeSet<u32> {
        let mut out = BTreeSet::new();
        let mut stack: Vec<u32> = succ.get(&from).cloned().unwrap_or_default();
        let mut seen = BTreeSet::new();
        while let Some(b) = stack.pop() {
            if !seen.insert(b) {
                continue;
            }
            match lines[b as usize].first() {
                Some(&l) => {
                    out.insert(l);
                }
                None => stack.extend(succ.get(&Some(b)).cloned().unwrap_or_default()),
            }
        }
        out
    };
    let name = |b: usize| {
        let f = &e.blocks[b].function;
        f.strip_prefix("fixture_edges::").unwrap_or(f).to_string()
    };
    let mut out = BTreeSet::new();
    let ours =
        |b: usize| e.blocks[b].function.starts_with("fixture_edges::") && !e.blocks[b].function.contains("tests::");
    for &edge in e.edges.iter().filter(|&&edge| e.is_call(edge)) {
        let from = edge.from.expect("a call has a caller").index();
        if ours(from) && ours(edge.to.index()) {
            out.insert(format!("calls: {} -> {}", name(from), name(edge.to.index())));
        }
    }
    for (b, ls) in lines.iter().enumerate() {
        if !e.blocks[b].function.starts_with("fixture_edges::") || e.blocks[b].function.contains("tests::") {
            continue;
        }
        for w in ls.windows(2) {
            if w[0] != w[1] {
                out.insert(format!("{}: {} -> {}", name(b), w[0], w[1]));
            }
        }
        if let Some(&last) = ls.last() {
            for to in reached(Some(b as u32)) {
                if to != last {
                    out.insert(format!("{}: {last} -> {to}", name(b)));
                }
            }
        }
        let is_entry = e.edges.iter().any(|edge| edge.is_entry() && edge.to.index() == b);
        if is_entry {
            let first = ls.first().copied().or_else(|| reached(Some(b as u32)).first().copied());
            if let Some(first) = first {
                out.insert(format!("{}: start -> {first}", name(b)));
            }
        }
    }
    out
}

/// Every edge the tests of `fixtures/edges` took, and only those: the hand-written list in
/// `tests/edges.expected`, and no edge between two functions but calls.
fn recorded_exactly() -> Result {
    let tmp = copy_fixture("edges");
    let out = sfl(&["--format", "json"], tmp.path());
    check(out.status.code() == Some(3), || show(&out))?;
    let spectra = Spectra::load(&tmp.path().join("target/sfl/spectra.json"))?;
    let e = spectra.edges.as_ref().ok_or("no edges saved")?;
    check_calls(e)?;
    let got = transitions(&spectra, "src/lib.rs");
    let text = std::fs::read_to_string(root().join("tests/edges.expected"))?;
    let want: BTreeSet<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    check(missing.is_empty() && extra.is_empty(), || {
        format!("missing (expected, not recorded): {missing:#?}\nextra (recorded, not expected): {extra:#?}")
    })
}

/// Every test that ran, crashed and timed-out ones included, has its edges recorded, and every
/// edge stays within one function or is a call.
pub fn cover_every_test(dir: &Path) -> Result {
    let spectra = Spectra::load(&dir.join("target/sfl/spectra.json"))?;
    let e = spectra.edges.as_ref().ok_or("no edges saved")?;
    for (t, test) in spectra.tests.iter().enumerate() {
        if test.outcome == cargo_sfl::spectra::Outcome::Ignored {
            continue;
        }
        check(e.coverage.iter().any(|c| c.contains(t)), || {
            format!("{} {} ({:?}) has no edges", test.binary, test.name, test.outcome)
        })?;
    }
    check_calls(e)
}

/// Every edge stays within one function, but calls, which enter a function's entry block.
fn check_calls(e: &cargo_sfl::edges::EdgeSpectra) -> Result {
    let entries: BTreeSet<usize> = e.edges.iter().filter(|x| x.is_entry()).map(|x| x.to.index()).collect();
    for &edge in &e.edges {
        if let (Some(a), b) = e.ends(edge) {
            if e.is_call(edge) {
                check(entries.contains(&edge.to.index()), || {
                    format!("call {} -> {} #{}, not its entry", a.function, b.function, b.index)
                })?;
            } else {
                check(a.function == b.function, || {
                    format!(
                        "edge between functions: {} #{} -> {} #{}",
                        a.function, a.index, b.function, b.index
                    )
                })?;
            }
        }
    }
    Ok(())
}

/// The best (lowest) line rank of `line` in `measure`'s ranking of a JSON report.
fn line_rank(report: &Value, measure: &str, file: &str, line: u64) -> Option<f64> {
    let ranking = report["rankings"]
        .as_array()?
        .iter()
        .find(|r| r["measure"] == measure)?;
    ranking["units"].as_array()?.iter().find_map(|e| {
        let lines = e["members"].as_array().cloned().unwrap_or_else(|| vec![e.clone()]);
        lines
            .iter()
            .any(|m| m["file"] == file && m["line"] == line)
            .then(|| e["line_rank"].as_f64())
            .flatten()
    })
}

/// The paper's motivating example: CP ranks the faulty line strictly better than Tarantula
/// and Ochiai with default flags (test code is left out, as the paper ranks only the program);
/// `report` re-runs CP from the saved edges with the same result.
/// Asking for CP (which splits its own entries by its scores) changes no other measure's
/// entries, in the report or in `eval`: each measure's groups are its own.
fn leaves_other_measures_alone() -> Result {
    for fixture in ["minmax", "schedule"] {
        let dir = saved(fixture)?.dir();
        let ranking = |extra: &[&str]| -> Result<Value> {
            let mut args = vec!["report", "--format", "json", "--top", "500", "-m", "ochiai"];
            args.extend(extra);
            let out = sfl(&args, dir);
            check(out.status.code() == Some(0), || show(&out))?;
            let report: Value = serde_json::from_slice(&out.stdout)?;
            Ok(report["rankings"][0].clone())
        };
        let alone = ranking(&[])?;
        check(alone["measure"] == "ochiai", || format!("{alone}"))?;
        for cp in ["cp", "cp-calls"] {
            let with = ranking(&["-m", cp])?;
            check(with == alone, || {
                format!(
                    "{fixture}: ochiai's entries change with -m {cp}:
alone {alone:#}
with  {with:#}"
                )
            })?;
        }
        let eval = |extra: &[&str]| -> Result<Value> {
            let spectra = dir.join("target/sfl/spectra.json");
            let faults = dir.join("faults.toml");
            let mut args = vec!["eval", "--format", "json", "--no-ht", "-m", "ochiai"];
            args.extend(extra);
            args.extend([
                "--faults",
                faults.to_str().unwrap(),
                "--spectra",
                spectra.to_str().unwrap(),
            ]);
            let out = sfl(&args, dir);
            check(out.status.code() == Some(0), || show(&out))?;
            let report: Value = serde_json::from_slice(&out.stdout)?;
            Ok(report["measures"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["measure"] == "ochiai"))
                .cloned()
                .unwrap_or_default())
        };
        let alone = eval(&[])?;
        let with = eval(&["-m", "cp"])?;
        check(alone.is_object() && with == alone, || {
            format!(
                "{fixture}: ochiai's eval changes with -m cp:
alone {alone:#}
with  {with:#}"
            )
        })?;
    }
    Ok(())
}

fn schedule() -> Result {
    let tmp = copy_fixture("schedule");
    let args = [
        "-m",
        "cp",
        "-m",
        "tarantula",
        "-m",
        "ochiai",
        "--top",
        "200",
        "--format",
        "json",
    ];
    let out = sfl(&args, tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let report: Value = serde_json::from_slice(&out.stdout)?;
    let (file, line) = faults(tmp.path()).into_iter().next().ok_or("no fault")?;
    let line = u64::from(line);
    let rank = |m: &str| line_rank(&report, m, &file, line).ok_or_else(|| format!("{m} does not rank {file}:{line}"));
    let (cp, tarantula, ochiai) = (rank("cp")?, rank("tarantula")?, rank("ochiai")?);
    eprintln!("schedule: fault {file}:{line} ranks cp {cp}, tarantula {tarantula}, ochiai {ochiai}");
    let cfg = report["rankings"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["measure"] == "cp"))
        .map(|r| r["cfg"].clone())
        .unwrap_or_default();
    check(
        cfg["blocks"].as_u64().is_some_and(|b| b > 0) && cfg["method"].is_string(),
        || format!("cp ranking without its CFG: {cfg}"),
    )?;
    check(cp < tarantula && cp < ochiai, || {
        format!(
            "cp {cp} is not better than tarantula {tarantula} and ochiai {ochiai}\n{}",
            show(&out)
        )
    })?;
    check(cfg["calls"] == 0, || format!("cp propagates along calls: {cfg}"))?;
    let mut report_args = vec!["report"];
    report_args.extend(args);
    let again = sfl(&report_args, tmp.path());
    check(again.stdout == out.stdout, || {
        format!("report differs:\n{}", show(&again))
    })?;
    // cp-calls: the tests' calls into the program are edges of its system too.
    let calls = sfl(&["report", "-m", "cp-calls", "--format", "json"], tmp.path());
    check(calls.status.code() == Some(0), || show(&calls))?;
    let report: Value = serde_json::from_slice(&calls.stdout)?;
    let cfg = &report["rankings"][0]["cfg"];
    check(cfg["calls"].as_u64().is_some_and(|c| c > 0), || {
        format!("cp-calls without calls: {cfg}")
    })?;
    check(line_rank(&report, "cp-calls", &file, line).is_some(), || {
        format!("cp-calls does not rank {file}:{line}")
    })?;
    // Spectra saved before calls were recorded: cp-calls says it has none to propagate along.
    let path = tmp.path().join("target/sfl/spectra.json");
    let mut old = Spectra::load(&path)?;
    let e = old.edges.as_mut().ok_or("no edges saved")?;
    let (edges, coverage) = e
        .edges
        .iter()
        .zip(&e.coverage)
        .filter(|(x, _)| !e.is_call(**x))
        .map(|(x, c)| (*x, c.clone()))
        .unzip();
    (e.edges, e.coverage) = (edges, coverage);
    let saved = tmp.path().join("old-spectra.json");
    old.save(&saved)?;
    let saved = saved.to_string_lossy();
    let without = sfl(&["report", "-m", "cp-calls", "--spectra", &saved], tmp.path());
    check_exit(
        &without,
        0,
        &without.stderr,
        &["cp-calls: the edge profiles hold no calls"],
    )
}

/// `--no-edges` builds without edge instrumentation, saves no edges, and then `-m cp` is a
/// usage error that says why.
fn no_edges() -> Result {
    let tmp = copy_fixture("minmax");
    let out = sfl(&["--no-edges", "--format", "json"], tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let spectra = Spectra::load(&tmp.path().join("target/sfl/spectra.json"))?;
    check(spectra.edges.is_none(), || "edges saved with --no-edges".into())?;
    check(tmp.path().join("target/sfl/lines-only").is_dir(), || {
        "no separate build".into()
    })?;
    let cp = sfl(&["report", "-m", "cp"], tmp.path());
    check_exit(&cp, 2, &cp.stderr, &["--no-edges"])?;
    // Without a C compiler the recorder cannot be built: a setup error that names the way out.
    let no_cc = sfl_command(tmp.path()).env("CC", "/nonexistent/cc").output()?;
    check_exit(&no_cc, 96, &no_cc.stderr, &["C compiler", "--no-edges"])
}

/// The counter updates are made plain while a test runs on one thread and atomic again before
/// a second thread starts, with edge profiles and without: two threads that step through the
/// same code 300,000 times each leave exact counts (plain updates racing on two cores lose
/// some), and a one-thread test's counts are exact too.
fn counts_exact_with_threads() -> Result {
    const N: u64 = 300_000;
    let lib = format!(
        "pub fn step(x: u64) -> u64 {{\n\
         \x20   if x % 3 == 0 {{\n\
         \x20       x / 3\n\
         \x20   }} else {{\n\
         \x20       x + 1\n\
         \x20   }}\n\
         }}\n\
         /// ```\n\
         /// let run = || (0..{N}u64).map(threads::step).sum::<u64>();\n\
         /// let (a, b) = (std::thread::spawn(run), std::thread::spawn(run));\n\
         /// assert_eq!(a.join().unwrap(), b.join().unwrap());\n\
         /// ```\n\
         ///\n\
         /// ```\n\
         /// assert!((0..{N}u64).map(threads::step).sum::<u64>() > 0);\n\
         /// ```\n\
         pub fn steps() {{}}\n\
         #[cfg(test)]\n\
         mod tests {{\n\
         \x20   fn run() -> u64 {{ (0..{N}u64).map(super::step).sum() }}\n\
         \x20   #[test]\n\
         \x20   fn two_threads() {{\n\
         \x20       let a = std::thread::spawn(run);\n\
         \x20       let b = std::thread::spawn(run);\n\
         \x20       assert_eq!(a.join().unwrap(), b.join().unwrap());\n\
         \x20   }}\n\
         \x20   #[test]\n\
         \x20   fn one_thread() {{ assert!(run() > 0); }}\n\
         \x20   #[test]\n\
         \x20   fn fails() {{ assert_eq!(super::step(1), 3); }}\n\
         }}\n"
    );
    let dir = lib_crate("threads", "", &lib)?;
    let d = dir.path();
    // Both builds link the runtime: with edge profiles (the default) and without. The
    // doctests run from their merged runner, on its main thread (one of them spawns two more);
    // two doctests are merged only when asked (standalone ones are left atomic).
    for extra in [
        &["--no-doctests"][..],
        &["--no-doctests", "--no-edges"][..],
        &["--merged-doctests"][..],
    ] {
        let mut args = vec!["--keep-profiles"];
        args.extend_from_slice(extra);
        let out = sfl(&args, d);
        check(out.status.code() == Some(1) || out.status.success(), || show(&out))?;
        let doctests = !extra.contains(&"--no-doctests");
        exact_counts(d, N, doctests).map_err(|e| format!("{args:?}: {e:?}"))?;
    }
    Ok(())
}

/// The kept profiles of `two_threads` and `one_thread` (and with `doctests`, of the two
/// doctests of `steps`, on lines 8 and 14) count every one of the `n` steps per thread, and
/// their executable's counter updates were relaxed.
fn exact_counts(d: &Path, n: u64, doctests: bool) -> Result {
    let target = d.join("target/sfl");
    let index: Vec<cargo_sfl::pipeline::KeptProfile> =
        serde_json::from_slice(&std::fs::read(target.join("profiles/index.json"))?)?;
    let mut checked = 0;
    for kept in &index {
        let runs = match kept.name.as_str() {
            "tests::two_threads" | "src/lib.rs - steps (line 8)" => 2 * n,
            "tests::one_thread" | "src/lib.rs - steps (line 14)" => n,
            _ => continue,
        };
        let sites = std::fs::read(cargo_sfl::edges::relax::sites_path(&kept.binary_path))?;
        check(sites.len() > 16, || {
            format!("{}: no counter update was relaxed", kept.binary_path.display())
        })?;
        let lines = crate::oracle::llvm_cov_lines(&kept.binary_path, &kept.profiles[0], d)?;
        let lib = lines
            .iter()
            .find(|(f, _)| f.ends_with("src/lib.rs"))
            .map(|(_, l)| l.clone())
            .unwrap_or_default();
        let count = |line: u32| lib.iter().find(|(l, _)| *l == line).map(|(_, c)| *c);
        let (thirds, others) = (n.div_ceil(3), n - n.div_ceil(3));
        let want = [(2, runs), (3, runs / n * thirds), (5, runs / n * others)];
        for (line, c) in want {
            check(count(line) == Some(c), || {
                format!(
                    "{}: src/lib.rs:{line} counted {:?}, ran {c} times",
                    kept.name,
                    count(line)
                )
            })?;
        }
        checked += 1;
    }
    let want = if doctests { 4 } else { 2 };
    check(checked == want, || {
        format!("{checked} of {want} tests' profiles were kept")
    })
}

/// The profiles `--keep-profiles` kept in `d`, and the test binaries that wrote them.
fn kept_binaries(d: &Path) -> Result<(Vec<cargo_sfl::pipeline::KeptProfile>, Vec<PathBuf>)> {
    let index: Vec<cargo_sfl::pipeline::KeptProfile> =
        serde_json::from_slice(&std::fs::read(d.join("target/sfl/profiles/index.json"))?)?;
    let paths = index
        .iter()
        .map(|k| k.binary_path.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok((index, paths))
}

/// The fixture at `d`'s own files, relative to it (as cargo sfl names them).
fn fixture_files(d: &Path) -> impl Fn(&Path) -> Option<String> + Sync + '_ {
    move |p: &Path| -> Option<String> {
        let rel = if p.is_absolute() { p.strip_prefix(d).ok()? } else { p };
        rel.starts_with("src").then(|| rel.to_string_lossy().into_owned())
    }
}

/// Runs that keep their profiles, with one executable per doctest (more binaries, each
/// linking the whole library, each read for its one test); the debug build's run of
/// doctest-2021 is shared.
const KEPT_STANDALONE: &[&str] = &[
    "--keep-profiles",
    "--standalone-doctests",
    "--format",
    "json",
    "-m",
    "ochiai",
];

/// The line tables read from only the compilation units that hold the code (what cargo sfl
/// does) give every block of every test binary, doctests included, the lines addr2line gives
/// reading the whole DWARF, inlined frames included: in a debug build, and in a release build
/// (`--release`), where the fixture's code is inlined.
fn line_tables_by_unit() -> Result {
    same_lines_by_unit(shared::run("doctest-2021", KEPT_STANDALONE)?.dir())?;
    let tmp = copy_fixture("doctest-2021");
    let d = tmp.path();
    let out = sfl(&[KEPT_STANDALONE, &["--release"]].concat(), d);
    check(out.status.code() == Some(0), || show(&out))?;
    same_lines_by_unit(d)
}

/// [`line_tables_by_unit`] on the binaries of the last run in `d`.
fn same_lines_by_unit(d: &Path) -> Result {
    use cargo_sfl::edges::map::{EdgeMap, LineReader};
    let (_, paths) = kept_binaries(d)?;
    let relative = fixture_files(d);
    let (mut lines, mut ours) = (0, 0);
    for path in &paths {
        let by_unit = EdgeMap::open_reading(path, &relative, None, LineReader::Units)?;
        let whole = EdgeMap::open_reading(path, &relative, None, LineReader::Addr2line)?;
        // Per function: its name, whether it is the fixture's, and each block's lines.
        type Named = Vec<(String, bool, Vec<Vec<(String, u32)>>)>;
        let named = |m: &EdgeMap| -> Named {
            m.functions
                .iter()
                .map(|f| {
                    let blocks = (f.first..f.first + f.blocks)
                        .map(|b| {
                            m.lines[b as usize]
                                .iter()
                                .map(|&(file, line)| (m.files[file as usize].clone(), line))
                                .collect()
                        })
                        .collect();
                    (f.name.clone(), f.ours, blocks)
                })
                .collect()
        };
        let (a, b) = (named(&by_unit), named(&whole));
        check(a == b, || {
            let first = a.iter().zip(&b).find(|(x, y)| x != y);
            format!("{}: the readers differ, first at {first:#?}", path.display())
        })?;
        lines += by_unit.lines.iter().map(Vec::len).sum::<usize>();
        ours += by_unit.functions.iter().filter(|f| f.ours).count();
    }
    check(paths.len() >= 4 && ours > 0 && lines > 0, || {
        format!(
            "{} binaries, {ours} functions of the fixture, {lines} block lines",
            paths.len()
        )
    })
}

/// An executable that runs one test (each doctest is its own) is read only for the functions
/// that test ran: the edges it gives are the ones reading the whole executable gives, for every
/// test of `fixtures/doctest-2021`, doctests and unit tests alike.
fn one_test_executables() -> Result {
    let d = shared::run("doctest-2021", KEPT_STANDALONE)?.dir();
    let (index, paths) = kept_binaries(d)?;
    let relative = fixture_files(d);
    let (whole, alone) = (
        cargo_sfl::edges::Collector::new(&paths, &relative),
        cargo_sfl::edges::Collector::new(&paths, &relative),
    );
    let named = |c: &cargo_sfl::edges::Collector, edges: &[cargo_sfl::edges::Edge]| -> BTreeSet<_> {
        edges
            .iter()
            .map(|e| (e.from.map(|f| c.block_name(f)), c.block_name(e.to)))
            .collect()
    };
    let (mut doctests, mut traversed) = (0, 0);
    for kept in &index {
        let which = paths.iter().position(|p| *p == kept.binary_path);
        let dir = kept
            .profiles
            .first()
            .and_then(|p| p.parent())
            .ok_or("no profile kept")?;
        for file in std::fs::read_dir(dir)?.flatten().map(|e| e.path()) {
            if file.extension().is_none_or(|x| x != "edges") {
                continue;
            }
            let (mut a, mut b) = (Vec::new(), Vec::new());
            whole.decode(&file, &mut a, None)?;
            alone.decode(&file, &mut b, which)?;
            let (a, b) = (named(&whole, &a), named(&alone, &b));
            check(a == b, || format!("{}: whole {a:#?}\nalone {b:#?}", kept.name))?;
            doctests += usize::from(kept.name.starts_with("src/lib.rs - "));
            traversed += a.len();
        }
    }
    check(doctests >= 3 && traversed > 0, || {
        format!("{doctests} doctests compared, {traversed} edges")
    })
}
