//! `cargo xtask bench edges`: what edge recording costs and how fast CP solves.
//!
//! Per crate, the test-run phase of `cargo sfl` (every test in its own process, profiles
//! decoded as they finish; the build excluded) with edges on and with `--no-edges`, each on
//! its own warm build, median of `runs`, as a ratio. Then CP's solve time on the CFG each
//! crate's tests traversed, and on synthetic CFGs up to `blocks` blocks, each against the time
//! to build the same system's edges list in the same process (the baseline).

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use cargo_sfl::spectra::Spectra;

use crate::{bench_crates, median, sfl_run};

struct CrateRow {
    name: String,
    tests: usize,
    lines_only: f64,
    edges: f64,
    blocks: usize,
    edge_count: usize,
    solve_ms: f64,
    method: String,
}

pub fn run_bench(
    runs: usize,
    blocks: usize,
    fixtures_only: bool,
    against: Option<&Path>,
    output: Option<&Path>,
) -> Result<()> {
    let (sfl, crates) = bench_crates(fixtures_only)?;
    let mut rows = Vec::new();
    let mut compared = Vec::new();
    for (name, dir) in &crates {
        eprintln!("== {name}");
        let manifest = dir.join("Cargo.toml");
        // Warm-ups build each kind once. One job at a time, so the ratio is per test.
        let (lines_args, edges_args) = (["-j", "1", "--no-edges"], ["-j", "1"]);
        let tests = sfl_run(&sfl, &manifest, &lines_args)?.tests;
        sfl_run(&sfl, &manifest, &edges_args)?;
        let lines_only = median(runs, || Ok(sfl_run(&sfl, &manifest, &lines_args)?.run_secs))?;
        let edges = median(runs, || Ok(sfl_run(&sfl, &manifest, &edges_args)?.run_secs))?;
        let spectra = Spectra::load(&dir.join("target/sfl/spectra.json")).map_err(anyhow::Error::msg)?;
        if let Some(other) = against {
            compared.push(crate::edges_compare::compare(name, other, &manifest, &spectra)?);
        }
        let e = spectra.edges.as_ref().context("no edges saved")?;
        let (fail, pass) = (spectra.failing_mask(), spectra.passing_mask());
        let t = Instant::now();
        let sol = cargo_sfl::cp::solve_edges(e, &fail, &pass, cargo_sfl::cp::CpVariant::PAPER);
        let solve_ms = t.elapsed().as_secs_f64() * 1e3;
        rows.push(CrateRow {
            name: name.clone(),
            tests,
            lines_only,
            edges,
            blocks: e.blocks.len(),
            edge_count: e.edges.len(),
            solve_ms,
            method: method(&sol.method),
        });
    }
    let mut synthetic = Vec::new();
    let mut size = 1000;
    while size <= blocks {
        let t = Instant::now();
        let (edges, f, p) = cargo_sfl::cp::synthetic(size, 7);
        let build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let sol = cargo_sfl::cp::solve(size, &edges, f, p, cargo_sfl::cp::Damping::Whole);
        let solve = t.elapsed().as_secs_f64();
        synthetic.push((size, edges.len(), build, solve, method(&sol.method), sol.residual));
        size *= 10;
    }
    let mut table = render(&rows, &synthetic, runs);
    if let Some(other) = against {
        table.push_str(&crate::edges_compare::render(&compared, other));
    }
    print!("{table}");
    if let Some(p) = output {
        std::fs::write(p, &table)?;
    }
    Ok(())
}

fn method(m: &cargo_sfl::cp::CpMethod) -> String {
    match m {
        cargo_sfl::cp::CpMethod::Exact => "exact".into(),
        cargo_sfl::cp::CpMethod::Damped { factor, .. } => format!("damped {factor:e}"),
    }
}

#[allow(clippy::type_complexity)]
fn render(rows: &[CrateRow], synthetic: &[(usize, usize, f64, f64, String, f64)], runs: usize) -> String {
    let mut s = format!(
        "## Edge recording\n\nTest-run phase of `cargo sfl` (every test in its own process and its profiles decoded; \
         build excluded), one job at a time, median of {runs}, each kind on its own warm build.\n\n\
         | crate | tests | --no-edges (s) | edges (s) | edges / no-edges | blocks | edges traversed | CP solve |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|\n"
    );
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {:.3} | {:.3} | {:.2}× | {} | {} | {:.2} ms ({}) |\n",
            r.name,
            r.tests,
            r.lines_only,
            r.edges,
            r.edges / r.lines_only,
            r.blocks,
            r.edge_count,
            r.solve_ms,
            r.method
        ));
    }
    s.push_str(
        "\n## CP solve on synthetic CFGs\n\nFunctions of 5–60 blocks with branches, loops and exits (`cp::synthetic`); \
         the baseline is generating the same system's edges in the same process.\n\n\
         | blocks | edges | generate (s) | solve (s) | solve / generate | method | residual |\n|---:|---:|---:|---:|---:|---|---:|\n",
    );
    for (n, e, build, solve, m, res) in synthetic {
        s.push_str(&format!(
            "| {n} | {e} | {build:.4} | {solve:.4} | {:.1}× | {m} | {res:.1e} |\n",
            solve / build
        ));
    }
    s
}
