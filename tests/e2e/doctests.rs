//! Doctests: a crate whose only failing test is a doctest is localised from the doctests'
//! coverage, whether its doctests are merged into one executable (the default from five
//! doctests, in every edition; `--merged-doctests` always) or built one executable each (fewer,
//! or `--standalone-doctests`), and each runs in its own
//! process; `--no-doctests` leaves them out, `--doc` runs only them, and a rustdoc that cannot
//! keep its doctests still has them run and reported, without coverage.

use libtest_mimic::Trial;
use serde_json::Value;

use crate::support::{Result, check, check_exit, copy_fixture, faults, lib_crate, sfl, sfl_command, show};

pub fn trials() -> Vec<Trial> {
    let mut trials = Vec::new();
    for (edition, standalone) in [("2021", false), ("2024", false), ("2021", true), ("2024", true)] {
        let suffix = if standalone { "_standalone" } else { "" };
        trials.push(Trial::test(
            format!("doctests::only_a_doctest_fails_{edition}{suffix}"),
            move || only_a_doctest_fails(edition, standalone),
        ));
    }
    trials.extend([
        Trial::test("doctests::no_doctests_finds_no_failing_test", no_doctests),
        Trial::test("doctests::doc_runs_only_doctests", doc_only),
        Trial::test("doctests::without_coverage_still_reported", plain_fallback),
        Trial::test("doctests::kept_until_their_sources_change", kept_until_changed),
        Trial::test("doctests::quiet_runs_find_them_too", quiet_run),
        Trial::test("doctests::of_a_cdylib_and_rlib_library", cdylib_library),
        Trial::test("doctests::none_for_a_cdylib_only_member", cdylib_only_member),
        Trial::test("doctests::few_alone_or_all_merged_into_one_executable", all_merged),
        Trial::test("doctests::built_while_the_other_tests_run", built_meanwhile),
        Trial::test("doctests::built_ahead_once_the_library_is", built_ahead),
        Trial::test(
            "doctests::one_block_on_several_items_runs_for_each",
            one_block_several_items,
        ),
        Trial::test(
            "doctests::one_that_does_not_build_is_listed_not_ranked",
            unbuilt_not_ranked,
        ),
        Trial::test("doctests::a_library_with_doctest_false_has_none", doctest_false),
    ]);
    trials
}

fn json(out: &std::process::Output) -> Result<Value> {
    serde_json::from_slice(&out.stdout).map_err(|e| format!("bad JSON: {e}\n{}", show(out)).into())
}

/// (binary, name, outcome) of every test of a report.
fn tests(report: &Value) -> Vec<(String, String, String)> {
    report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            (s("binary"), s("name"), s("outcome"))
        })
        .collect()
}

fn only_a_doctest_fails(edition: &str, standalone: bool) -> Result {
    let tmp = copy_fixture(&format!("doctest-{edition}"));
    let dir = tmp.path();
    let mut args = vec!["--format", "json", "-m", "ochiai"];
    if standalone {
        args.push("--standalone-doctests");
    }
    let out = sfl(&args, dir);
    check(out.status.code() == Some(0), || show(&out))?;
    // Merged: one executable for the doctests that run (compile_fail ones are built alone).
    let kept = dir.join(format!("target/sfl/doctests/fixture_doctest_{edition}"));
    let merged = kept.join(format!("merged_doctest_{edition}_0/rust_out")).is_file();
    let alone = kept.join("src_lib_rs_5_0/rust_out").is_file();
    check(merged != standalone && alone == standalone, || {
        format!("standalone {standalone}: merged executable {merged}, the failing doctest's own {alone}")
    })?;
    let report = json(&out)?;
    let binary = format!("fixture-doctest-{edition}::doctest/fixture_doctest_{edition}");
    let all = tests(&report);
    let outcome = |name: &str| all.iter().find(|t| t.0 == binary && t.1 == name).map(|t| t.2.clone());
    // The one failing test is the doctest; a should_panic doctest that panics passes.
    let failing: Vec<_> = all.iter().filter(|t| t.2 == "failed").collect();
    check(failing.len() == 1, || format!("failing: {failing:?}\n{}", show(&out)))?;
    check(
        outcome("src/lib.rs - percent (line 5)").as_deref() == Some("failed"),
        || format!("{all:?}"),
    )?;
    // Its panic names the line of the documentation: merged, the assertion's line (before, the
    // generated bundle's line, as `cargo test` names it for edition 2024: a file under /tmp that
    // is gone once it ends); standalone, the line rustdoc's own mapping gives, the code block's
    // fence (as under `cargo test`).
    let site = if standalone {
        "src/lib.rs:5:1:"
    } else {
        "src/lib.rs:6:1:"
    };
    let message = report["tests"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["outcome"] == "failed")
        .and_then(|t| t["message"].as_str())
        .unwrap_or_default();
    check(message.starts_with(&format!("panicked at {site}")), || {
        format!("the failing doctest's message: {message}")
    })?;
    for passing in [
        "src/lib.rs - half (line 18)",
        "src/lib.rs - half (line 22)",
        "src/lib.rs - double (line 37)",
    ] {
        check(outcome(passing).as_deref() == Some("passed"), || {
            format!("{passing}: {all:?}")
        })?;
    }
    check(
        outcome("src/lib.rs - double (line 49)").as_deref() == Some("ignored"),
        || format!("{all:?}"),
    )?;
    // no_run and compile_fail doctests run nothing: they are compile checks, not rows.
    check(outcome("src/lib.rs - double (line 41)").is_none(), || {
        format!("{all:?}")
    })?;
    check(all.iter().any(|t| t.1 == "tests::halves" && t.2 == "passed"), || {
        format!("{all:?}")
    })?;

    // The faulty library line is the top entry; no line of a doc comment is ranked.
    let fault = &faults(dir)[0];
    let units = report["rankings"][0]["units"].as_array().unwrap();
    let lines = |u: &Value| -> Vec<u64> {
        std::iter::once(u)
            .chain(u["members"].as_array().into_iter().flatten())
            .map(|m| m["line"].as_u64().unwrap())
            .collect()
    };
    check(lines(&units[0]).contains(&(fault.1 as u64)), || {
        format!("top entry {:#}", units[0])
    })?;
    check(units[0]["rank"] == 1.0, || format!("top entry {:#}", units[0]))?;
    let source = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    let text = |l: u64| source.lines().nth(l as usize - 1).unwrap_or_default().trim_start();
    for u in units {
        for l in lines(u) {
            check(!text(l).starts_with("///"), || {
                format!("doc comment line {l} ranked: {u}")
            })?;
        }
    }

    // A passing doctest contributes coverage: `double`'s body runs only in its doctest.
    let spectra: Value = serde_json::from_slice(&std::fs::read(dir.join("target/sfl/spectra.json")).unwrap()).unwrap();
    let body = source.lines().position(|l| l.trim() == "x * 2").unwrap() as u64 + 1;
    let unit = spectra["units"]
        .as_array()
        .unwrap()
        .iter()
        .position(|u| u[0] == "src/lib.rs" && u[1] == body)
        .ok_or_else(|| format!("line {body} is no unit"))?;
    let test = spectra["tests"]
        .as_array()
        .unwrap()
        .iter()
        .position(|t| t["binary"] == binary.as_str() && t["name"] == "src/lib.rs - double (line 37)")
        .unwrap();
    let hex = spectra["coverage"][unit].as_str().unwrap();
    let byte = hex
        .get(2 * (test / 8)..2 * (test / 8) + 2)
        .map_or(0, |b| u8::from_str_radix(b, 16).unwrap());
    check(byte & (1 << (test % 8)) != 0, || {
        format!("the doctest of double did not cover line {body}: {hex}")
    })
}

fn no_doctests() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let out = sfl(&["--no-doctests"], tmp.path());
    check_exit(&out, 3, &out.stdout, &["No failing tests"])?;
    check(!String::from_utf8_lossy(&out.stderr).contains("Doc-tests"), || {
        show(&out)
    })
}

fn doc_only() -> Result {
    let tmp = copy_fixture("doctest-2024");
    let out = sfl(&["--doc", "--format", "json"], tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let all = tests(&json(&out)?);
    check(all.iter().all(|t| t.0.contains("::doctest/")), || format!("{all:?}"))?;
    check(all.iter().any(|t| t.2 == "failed"), || format!("{all:?}"))?;
    let clash = sfl(&["--doc", "--lib"], tmp.path());
    check_exit(&clash, 2, &clash.stderr, &["--doc"])?;
    // As `cargo test NAME` (cargo issue 6981): a name filter runs no doctest, `--doc NAME` does.
    let named = sfl(&["percent", "--format", "json"], tmp.path());
    let ran = tests(&json(&named)?);
    check(
        !ran.is_empty()
            && ran
                .iter()
                .all(|t| !t.0.contains("::doctest/") && t.1.contains("percent")),
        || format!("{ran:?}\n{}", show(&named)),
    )?;
    let doc_named = sfl(&["--doc", "percent", "--format", "json"], tmp.path());
    let ran = tests(&json(&doc_named)?);
    check(
        !ran.is_empty()
            && ran
                .iter()
                .all(|t| t.0.contains("::doctest/") && t.1.contains("percent")),
        || format!("{ran:?}\n{}", show(&doc_named)),
    )
}

/// A rustdoc that refuses `--persist-doctests` (as one without it would): the doctests run
/// plainly and the failing one is reported, without coverage, and not as "no failing tests".
fn plain_fallback() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let fake = dir.join("old-rustdoc");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = --persist-doctests ]; then\n    \
         echo 'error: Unrecognized option: persist-doctests' >&2; exit 1\n  fi\ndone\nexec rustdoc \"$@\"\n",
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let out = sfl_command(dir)
        .args(["--format", "json"])
        .env("RUSTDOC", &fake)
        .output()
        .unwrap();
    // Only the doctest fails, and it ran without coverage: nothing to rank, said plainly.
    check(out.status.code() == Some(7), || show(&out))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    check(stderr.contains("without coverage"), || show(&out))?;
    check(
        stderr.contains("the failing tests have no coverage (run plainly by `cargo test --doc`"),
        || show(&out),
    )?;
    let report = json(&out)?;
    let failing: Vec<&Value> = report["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["outcome"] == "failed")
        .collect();
    check(failing.len() == 1, || show(&out))?;
    check(failing[0]["name"] == "src/lib.rs - percent (line 5)", || show(&out))?;
    check(
        failing[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("no coverage") && m.contains("left: 150")),
        || format!("{:#}", failing[0]),
    )
}

/// rustdoc recompiles every doctest on each run; cargo sfl keeps the built doctests while
/// nothing they are built from changes (the executables are not rebuilt), and builds them
/// again when a doctest changes (its new result is what is reported).
fn kept_until_changed() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let first = sfl(&["--doc", "--no-edges"], dir);
    check(first.status.code() == Some(0), || show(&first))?;
    let kept = dir.join("target/sfl/lines-only/doctests/fixture_doctest_2021");
    let exe = kept.join("merged_doctest_2021_0/rust_out");
    let built = std::fs::metadata(&exe).and_then(|m| m.modified());
    check(built.is_ok(), || format!("no {}", exe.display()))?;
    let again = sfl(&["--doc", "--no-edges"], dir);
    check(again.status.code() == Some(0), || show(&again))?;
    check(
        std::fs::metadata(&exe).and_then(|m| m.modified()).ok() == built.ok(),
        || "an unchanged doctest was rebuilt".to_string(),
    )?;
    // Asked for one executable per doctest, they are built again that way.
    let alone = sfl(&["--doc", "--no-edges", "--standalone-doctests"], dir);
    check(alone.status.code() == Some(0), || show(&alone))?;
    check(kept.join("src_lib_rs_5_0/rust_out").is_file() && !exe.exists(), || {
        format!("--standalone-doctests kept the merged build\n{}", show(&alone))
    })?;
    // The failing doctest now expects what the code returns: the run has no failing test.
    let lib = dir.join("src/lib.rs");
    let text = std::fs::read_to_string(&lib)?;
    std::fs::write(&lib, text.replace("percent(150), 100)", "percent(150), 150)"))?;
    let fixed = sfl(&["--doc", "--no-edges"], dir);
    check_exit(&fixed, 3, &fixed.stdout, &["No failing tests"])
}

/// `-q` reaches cargo, whose `--quiet` makes libtest print dots instead of names; the doctests
/// must still be found and run (here: the only failing test is one).
fn quiet_run() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let out = sfl(&["-q", "--no-edges", "--format", "json", "-m", "ochiai"], tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let failing: Vec<_> = tests(&json(&out)?).into_iter().filter(|t| t.2 == "failed").collect();
    check(
        failing.len() == 1 && failing[0].1 == "src/lib.rs - percent (line 5)",
        || format!("failing: {failing:?}\n{}", show(&out)),
    )
}

/// A library built as both `cdylib` and `rlib`: the shared library stays position-independent
/// while the test executables are not (edge instrumentation links them statically), and its
/// doctests are the library's (they were once skipped as belonging to no member).
/// rustc-demangle's shape: a C API member whose library, of crate types `cdylib` and
/// `staticlib` only, has the name of the root package's. cargo runs no doctests for it
/// ("doc tests are not supported"): `-p capi` ran its tests, then exit 101 ("no library targets
/// found", blamed on an old toolchain); the whole workspace's doctests were labelled with the
/// C API's package, the first library of their crate name.
fn cdylib_only_member() -> Result {
    let tmp = lib_crate(
        "demangle",
        "",
        "/// ```\n/// assert_eq!(demangle::twice(5), 10);\n/// ```\n///\n/// ```no_run\n/// demangle::twice(1);\n/// ```\n\
         pub fn twice(x: i32) -> i32 {\n    x * 2\n}\n",
    )?;
    let dir = tmp.path();
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml"))?;
    std::fs::write(
        dir.join("Cargo.toml"),
        manifest.replace("[workspace]\n", "[workspace]\nmembers = [\"capi\"]\n"),
    )?;
    std::fs::create_dir_all(dir.join("capi/src"))?;
    std::fs::write(
        dir.join("capi/Cargo.toml"),
        "[package]\nname = \"demangle-capi\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [lib]\nname = \"demangle\"\ncrate-type = [\"staticlib\", \"cdylib\"]\n\n\
         [dependencies]\ndemangle = { path = \"..\", package = \"demangle\" }\n",
    )?;
    std::fs::write(
        dir.join("capi/src/lib.rs"),
        "/// ```\n/// not compiled: no doctests here\n/// ```\n#[no_mangle]\n\
         pub extern \"C\" fn twice_c(x: i32) -> i32 {\n    ::demangle::twice(x)\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn small() {\n        assert_eq!(super::twice_c(2), 4);\n    }\n}\n",
    )?;
    let out = sfl(&["-p", "demangle-capi", "--format", "json"], dir);
    check_exit(&out, 3, &out.stderr, &[])?;
    let names: Vec<String> = tests(&json(&out)?)
        .into_iter()
        .map(|t| format!("{} {}", t.0, t.1))
        .collect();
    check(names == ["demangle-capi tests::small"], || {
        format!("{names:?}\n{}", show(&out))
    })?;
    // The `no_run` doctest, which cargo test counts as passed, is said to be checked by its
    // build (before, it was left out of every count without a word).
    let out = sfl(&["--workspace", "--format", "json"], dir);
    check_exit(&out, 3, &out.stderr, &["Checked 1 doctest: its build is the test"])?;
    let binaries: Vec<String> = tests(&json(&out)?).into_iter().map(|t| t.0).collect();
    check(
        binaries.iter().any(|b| b == "demangle::doctest/demangle")
            && !binaries.iter().any(|b| b.starts_with("demangle-capi::doctest")),
        || format!("{binaries:?}\n{}", show(&out)),
    )
}

fn cdylib_library() -> Result {
    let tmp = lib_crate(
        "shared",
        "[lib]\ncrate-type = [\"cdylib\", \"rlib\"]\n\n",
        "/// ```\n/// assert_eq!(shared::twice(5), 10);\n/// ```\n\
         #[no_mangle]\npub extern \"C\" fn twice(x: i32) -> i32 {\n    if x > 3 {\n        x * 2 + 1\n    } else {\n        x + x\n    }\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn small() {\n        assert_eq!(super::twice(2), 4);\n    }\n}\n",
    )?;
    let dir = tmp.path();
    let out = sfl(&["--format", "json", "-m", "ochiai", "-m", "cp"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let report = json(&out)?;
    let all = tests(&report);
    let doctest = all.iter().find(|t| t.0 == "shared::doctest/shared");
    check(doctest.is_some_and(|t| t.2 == "failed"), || {
        format!("{all:?}\n{}", show(&out))
    })?;
    check(all.iter().any(|t| t.1 == "tests::small" && t.2 == "passed"), || {
        format!("{all:?}")
    })?;
    // The fault (line 7) is among Ochiai's first (alone when the doctest's merged, tied with a
    // line its own executable's code spills onto when not), and CP had edges to work with.
    let ranking = |m: &str| {
        report["rankings"]
            .as_array()
            .and_then(|rs| rs.iter().find(|r| r["measure"] == m))
            .cloned()
            .unwrap_or_default()
    };
    let ochiai = ranking("ochiai");
    let first: Vec<&Value> = ochiai["units"]
        .as_array()
        .map(|u| {
            u.iter()
                .filter(|u| u["rank"].as_f64().is_some_and(|r| r <= 1.5))
                .collect()
        })
        .unwrap_or_default();
    check(first.iter().any(|u| u["line"] == 7), || format!("{ochiai}"))?;
    let cfg = &ranking("cp")["cfg"];
    check(cfg["edges"].as_u64().is_some_and(|e| e > 0), || format!("cp: {cfg}"))?;
    Ok(())
}

/// A library of three doctests: built one executable each by default (too few to repay the
/// merged runner), and with `--merged-doctests` all merged (none is `compile_fail`, which is
/// built alone): rustdoc then reports no "running N tests" of standalone doctests, only its
/// closing summary, and the doctests are still found, run and localised with coverage, the same
/// as when built alone.
fn all_merged() -> Result {
    let tmp = lib_crate(
        "merged",
        "",
        "/// ```\n/// assert_eq!(merged::clamp(150), 100);\n/// ```\n\
         ///\n/// ```\n/// assert_eq!(merged::clamp(40), 40);\n/// ```\n\
         pub fn clamp(x: u32) -> u32 {\n    if x > 100 {\n        return x;\n    }\n    x\n}\n\n\
         /// ```\n/// assert_eq!(merged::clamp(2), 2);\n/// ```\n\
         pub fn twice(x: u32) -> u32 {\n    x * 2\n}\n",
    )?;
    let dir = tmp.path();
    let kept = dir.join("target/sfl/doctests/merged");
    // Three doctests: fewer than merging repays, so by default one executable each.
    let alone = sfl(&["--format", "json", "-m", "ochiai"], dir);
    check(alone.status.code() == Some(0), || show(&alone))?;
    check(
        kept.join("src_lib_rs_1_0/rust_out").is_file() && !kept.join("merged_doctest_2021_0").exists(),
        || format!("not built one executable each\n{}", show(&alone)),
    )?;
    let out = sfl(&["--format", "json", "-m", "ochiai", "--merged-doctests"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    check(
        !String::from_utf8_lossy(&out.stderr).contains("without coverage"),
        || show(&out),
    )?;
    check(kept.join("merged_doctest_2021_0/rust_out").is_file(), || {
        format!("no merged executable\n{}", show(&out))
    })?;
    let report = json(&out)?;
    // Built either way, the doctests run the same library lines: the same tests, the same ranking
    // (a standalone doctest's own code, mapped into the doc comment and past it, is not counted:
    // `twice`'s doctest calls only `clamp`, and nothing may cover `twice`'s first line).
    let standalone = json(&alone)?;
    check(
        tests(&standalone) == tests(&report) && standalone["rankings"] == report["rankings"],
        || format!("standalone {standalone:#}\nmerged {report:#}"),
    )?;
    let all = tests(&report);
    let failing: Vec<_> = all.iter().filter(|t| t.2 == "failed").collect();
    check(
        all.len() == 3 && failing.len() == 1 && failing[0].1 == "src/lib.rs - clamp (line 1)",
        || format!("{all:?}\n{}", show(&out)),
    )?;
    // The faulty `return x;` (line 10) is ranked first from the doctests' coverage.
    let top = &report["rankings"][0]["units"][0];
    let lines: Vec<u64> = std::iter::once(top)
        .chain(top["members"].as_array().into_iter().flatten())
        .filter_map(|m| m["line"].as_u64())
        .collect();
    check(lines.contains(&10), || format!("top entry {top:#}"))
}

/// In a run of every test the doctests build while the other tests run, and run after them
/// (the status lines say both): the outcomes, lines and edges are those of a run that builds
/// them first (`--keep-profiles` plans every test at once).
fn built_meanwhile() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let mut runs = Vec::new();
    for (args, meanwhile) in [
        (&["--rerun", "-v"][..], true),
        (&["--rerun", "-v", "--keep-profiles"], false),
    ] {
        let out = sfl(args, dir);
        check(out.status.code() == Some(0), || show(&out))?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let said = stderr.contains("the doctests build while the other tests run");
        let phases = stderr.matches("     Running ").count();
        check(said == meanwhile && phases == if meanwhile { 2 } else { 1 }, || {
            format!("{args:?}: {}", show(&out))
        })?;
        runs.push(crate::reliability::comparable_spectra(dir)?);
    }
    let is_doctest = |t: &&Value| t["binary"].as_str().is_some_and(|b| b.contains("::doctest/"));
    let doctests = runs[0].0.iter().filter(is_doctest).count();
    check(doctests > 1 && runs[0].0.len() > doctests, || {
        format!("{:#?}", runs[0].0)
    })?;
    check(runs[0] == runs[1], || {
        format!("meanwhile:\n{:#?}\nfirst:\n{:#?}", runs[0].0, runs[1].0)
    })
}

/// After an edit of the library, its doctests start building as soon as the library is built,
/// while the other tests compile, from the invocation saved by the last run: rustdoc builds them
/// once for the edit (cargo's own invocation finds what the head start built), and the spectra
/// are those of doctests built with no head start (nothing saved).
fn built_ahead() -> Result {
    let tmp = copy_fixture("doctest-2021");
    let dir = tmp.path();
    let log = dir.join("rustdoc-tests.log");
    let logged = dir.join("rustdoc-logged");
    std::fs::write(
        &logged,
        format!(
            "#!/bin/sh\ncase \" $* \" in *' --test '*) echo built >> '{}';; esac\nexec rustdoc \"$@\"\n",
            log.display()
        ),
    )?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&logged, std::fs::Permissions::from_mode(0o755))?;
    }
    let builds = || std::fs::read_to_string(&log).map_or(0, |t| t.lines().count());
    let run = || {
        sfl_command(dir)
            .args(["--rerun", "-v"])
            .env("RUSTDOC", &logged)
            .output()
            .unwrap()
    };
    let ahead = "the doctests of fixture_doctest_2021 build while the other tests do";
    let first = run();
    check(first.status.code() == Some(0) && builds() == 1, || show(&first))?;
    crate::support::edit_file(
        &dir.join("src/lib.rs"),
        "let top = 100;",
        "let top = 100;\n    let _ = 0;",
    )?;
    let edited = run();
    check(edited.status.code() == Some(0), || show(&edited))?;
    check(String::from_utf8_lossy(&edited.stderr).contains(ahead), || {
        show(&edited)
    })?;
    check(builds() == 2, || {
        format!("{} rustdoc builds\n{}", builds(), show(&edited))
    })?;
    let with_head_start = crate::reliability::comparable_spectra(dir)?;
    std::fs::remove_dir_all(dir.join("target/sfl/doctests"))?;
    crate::support::edit_file(&dir.join("src/lib.rs"), "let _ = 0;", "let _ = 1;")?;
    let plain = run();
    check(plain.status.code() == Some(0), || show(&plain))?;
    check(!String::from_utf8_lossy(&plain.stderr).contains(ahead), || show(&plain))?;
    check(builds() == 3, || {
        format!("{} rustdoc builds\n{}", builds(), show(&plain))
    })?;
    let without = crate::reliability::comparable_spectra(dir)?;
    check(with_head_start == without, || {
        format!("ahead:\n{:#?}\nafter:\n{:#?}", with_head_start.0, without.0)
    })
}

/// One doc block on a `pub use` of two items is three doctests named with one file and line
/// (`shapes`, `shapes::A`, `shapes::B`), built one executable each in directories told apart
/// only by a counter: the executables run one program, so each doctest runs (they used to be
/// recorded as not run, and the crate's only failing tests with them). Two macro-made doc
/// blocks on one line with different code stay not run, saying why: which executable is
/// whose cannot be known.
fn one_block_several_items() -> Result {
    let tmp = lib_crate(
        "dup",
        "",
        "pub mod inner {\n    pub struct A;\n    pub struct B;\n}\n\n\
         pub mod shapes {\n    /// ```\n    /// assert_eq!(dup::double(2), 4);\n    /// ```\n    pub use crate::inner::{A, B};\n}\n\n\
         pub fn double(x: u32) -> u32 {\n    x * 3\n}\n\n\
         macro_rules! offset {\n    ($name:ident, $by:expr, $want:expr) => {\n        \
         #[doc = concat!(\"```\\nassert_eq!(dup::\", stringify!($name), \"(1), \", stringify!($want), \");\\n```\")]\n        \
         pub fn $name(x: u32) -> u32 {\n            x + $by\n        }\n    };\n}\n\n\
         #[rustfmt::skip]\nmod offsets { offset!(plus_one, 1, 2); offset!(plus_two, 2, 4); }\npub use offsets::*;\n",
    )?;
    let dir = tmp.path();
    let out = sfl(&["--format", "json", "-m", "ochiai"], dir);
    check(out.status.code() == Some(0), || show(&out))?;
    let report = json(&out)?;
    let outcome = |name: &str| -> (String, String) {
        let t = report["tests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["name"] == name);
        let s = |k: &str| t.and_then(|t| t[k].as_str()).unwrap_or_default().to_string();
        (s("outcome"), s("message"))
    };
    for item in ["shapes", "shapes::A", "shapes::B"] {
        let (result, message) = outcome(&format!("src/lib.rs - {item} (line 7)"));
        check(result == "failed" && message.contains("left: 6"), || {
            format!("{item}: {result} {message}\n{}", show(&out))
        })?;
    }
    for item in ["offsets::plus_one", "offsets::plus_two"] {
        let (result, message) = outcome(&format!("src/lib.rs - {item} (line 27)"));
        check(result == "ignored" && message.starts_with("not run"), || {
            format!("{item}: {result} {message}\n{}", show(&out))
        })?;
    }
    // `x * 3` (line 14) is first, from the three doctests' coverage.
    let top = &report["rankings"][0]["units"][0];
    check(top["line"] == 14 && top["ef"] == 3, || format!("top entry {top:#}"))
}

/// A doctest that does not build (proc-macro2's `Ident` example, when its dev-dependency `quote`
/// pulls a second copy of the crate) is listed among the failing tests, as `cargo test` lists it,
/// but has no coverage: before, it still counted as a failing test that ran no line (nf + 1 on
/// every line), so no line was "run by every failing test" and every score of the fault fell.
fn unbuilt_not_ranked() -> Result {
    let tmp = lib_crate(
        "unbuilt",
        "",
        "/// ```\n/// let n: u32 = \"not a number\";\n/// ```\n\
         pub fn at_most(x: i32, max: i32) -> i32 {\n    if x > max + 1 {\n        max\n    } else {\n        x\n    }\n}\n\n\
         pub fn twice(x: i32) -> i32 {\n    x * 2\n}\n\n\
         #[cfg(test)]\nmod tests {\n    #[test]\n    fn clamps() {\n        assert_eq!(super::at_most(5, 4), 4);\n    }\n\
             #[test]\n    fn keeps() {\n        assert_eq!(super::at_most(3, 4), 3);\n    }\n\
             #[test]\n    fn doubles() {\n        assert_eq!(super::twice(3), 6);\n    }\n}\n",
    )?;
    let out = sfl(&["--format", "json"], tmp.path());
    check(out.status.code() == Some(0), || show(&out))?;
    let report = json(&out)?;
    let all = tests(&report);
    check(
        all.iter().any(|t| t.0.contains("::doctest/") && t.2 == "failed")
            && all.iter().any(|t| t.1 == "tests::clamps" && t.2 == "failed"),
        || format!("{all:?}\n{}", show(&out)),
    )?;
    check(
        report["summary"]["failed"] == 2 && report["summary"]["uncovered"] == 1,
        || format!("{:#}", report["summary"]),
    )?;
    // The fault (line 5) is run by the one failing test with coverage: ef 1, nf 0, Ochiai
    // 1/sqrt(1 * (1 + 1)) with `keeps` passing through it.
    let units = report["rankings"][0]["units"].as_array().cloned().unwrap_or_default();
    let fault = units.iter().find(|u| u["line"] == 5);
    check(fault.is_some_and(|f| f["ef"] == 1 && f["nf"] == 0), || {
        format!("{fault:#?}\n{}", show(&out))
    })?;
    check(report["summary"]["all_failing_core"].as_u64() > Some(0), || {
        format!("{:#}", report["summary"])
    })?;
    let human = sfl(&[], tmp.path());
    check_exit(
        &human,
        0,
        &human.stdout,
        &[
            "1 failing test with no coverage, left out of the ranking",
            "are run by every failing test: if there is a single fault, it is one of them\n",
        ],
    )
}

/// `[lib] doctest = false` on a workspace member (rust-url's idna): `cargo test --workspace`
/// runs none of its doctests, and nor does cargo sfl, without a word; before, every run warned
/// that the crate's doctests "belong to no workspace member".
fn doctest_false() -> Result {
    let tmp = tempfile::tempdir()?;
    let dir = tmp.path();
    let files = [
        (
            "Cargo.toml",
            "[workspace]\nmembers = [\"nodoc\", \"app\"]\nresolver = \"2\"\n",
        ),
        (
            "nodoc/Cargo.toml",
            "[package]\nname = \"nodoc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\ndoctest = false\n",
        ),
        (
            "nodoc/src/lib.rs",
            "/// ```\n/// assert_eq!(nodoc::twice(2), 4);\n/// ```\npub fn twice(x: i32) -> i32 {\n    x * 2\n}\n",
        ),
        (
            "app/Cargo.toml",
            "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nnodoc = { path = \"../nodoc\" }\n",
        ),
        (
            "app/src/lib.rs",
            "/// ```\n/// assert_eq!(app::quad(1), 4);\n/// ```\npub fn quad(x: i32) -> i32 {\n    nodoc::twice(nodoc::twice(x))\n}\n",
        ),
    ];
    for (path, text) in files {
        std::fs::create_dir_all(dir.join(path).parent().unwrap())?;
        std::fs::write(dir.join(path), text)?;
    }
    let out = sfl(&["--workspace", "--format", "json"], dir);
    check_exit(&out, 3, &out.stderr, &[])?;
    let binaries: Vec<String> = tests(&json(&out)?).into_iter().map(|t| t.0).collect();
    check(binaries == ["app::doctest/app"], || {
        format!("{binaries:?}\n{}", show(&out))
    })?;
    check(
        !String::from_utf8_lossy(&out.stderr).contains("belong to no workspace member"),
        || show(&out),
    )
}
