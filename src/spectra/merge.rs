//! Merging shards' spectra into exactly the unsharded matrix.

use super::edges::{Block, BlockId, Edge, EdgeSpectra};
use super::error::SpectraError;
use super::facts::SourceFacts;
use super::matrix::{Outcome, Spectra, TestRecord, test_order};
use super::unit::{Unit, UnitId};

/// A test while merging: its record, the units it covered, the edges it traversed and its
/// shard (1-based).
type Row = (TestRecord, Vec<UnitId>, Vec<Edge>, usize);

impl Spectra {
    /// Combines shards (from `--partition`) into one matrix. Refuses shards built from
    /// different sources or toolchains, and a test that two shards both ran.
    pub fn merge(shards: Vec<Spectra>) -> Result<Spectra, SpectraError> {
        let first = shards.first().ok_or(SpectraError::NoShards)?;
        same_build(&shards)?;
        // Union of units in code order.
        let mut units: Vec<Unit> = shards.iter().flat_map(|s| s.units.iter().cloned()).collect();
        units.sort();
        units.dedup();
        let index: std::collections::HashMap<&Unit, UnitId> =
            units.iter().enumerate().map(|(i, u)| (u, UnitId(i as u32))).collect();
        let (blocks, shard_edges) = merge_blocks(&shards, &index)?;
        // Tests in canonical order, each with its covered units and traversed edges.
        let mut rows: Vec<Row> = Vec::new();
        for (k, s) in shards.iter().enumerate() {
            rows.extend(shard_rows(s, k + 1, &index, shard_edges.get(k)));
        }
        rows.sort_by(|a, b| test_order(&a.0, &b.0));
        let kept = once_each(rows)?;
        let mut tests = Vec::with_capacity(kept.len());
        let mut covered = Vec::with_capacity(kept.len());
        let mut traversed = Vec::with_capacity(kept.len());
        for (r, c, e, _) in kept {
            tests.push(r);
            covered.push(c);
            traversed.push(e);
        }
        let n = tests.len();
        let facts = merged_facts(&shards, &index);
        let mut merged = Spectra::from_tests(first.workspace_root.clone(), tests, units, &covered);
        merged.build = first.build.clone();
        merged.set_functions(shards.iter().flat_map(|s| s.functions.iter().cloned()).collect());
        merged.edges = blocks.map(|b| EdgeSpectra::from_tests(b, n, &traversed));
        merged.facts = facts;
        Ok(merged)
    }
}

/// Refuses shards built from different sources or toolchains than the first.
fn same_build(shards: &[Spectra]) -> Result<(), SpectraError> {
    let Some(first) = shards.first() else {
        return Ok(());
    };
    for (i, s) in shards.iter().enumerate().skip(1) {
        if s.build != first.build {
            let what = match (&s.build, &first.build) {
                (Some(a), Some(b)) if a.rustc != b.rustc => "a different toolchain",
                (Some(_), Some(_)) => "different sources",
                _ => "a different kind of run (one has no build information)",
            };
            return Err(SpectraError::OtherBuild { shard: i + 1, what });
        }
    }
    Ok(())
}

/// Shard `s`'s tests (it is shard number `shard`), in the merged units' ids (`index`) and, with
/// `blocks` (where each of its blocks went), the merged blocks.
fn shard_rows(
    s: &Spectra,
    shard: usize,
    index: &std::collections::HashMap<&Unit, UnitId>,
    blocks: Option<&Vec<BlockId>>,
) -> Vec<Row> {
    let mut covered = vec![Vec::new(); s.tests.len()];
    for (u, col) in s.coverage.iter().enumerate() {
        for t in col.ones_and(col) {
            covered[t].push(index[&s.units[u]]);
        }
    }
    let mut traversed = vec![Vec::new(); s.tests.len()];
    if let (Some(e), Some(map)) = (&s.edges, blocks) {
        for (edge, col) in e.edges.iter().zip(&e.coverage) {
            let merged = edge.map(|b| map[b.index()]);
            for t in col.ones_and(col) {
                traversed[t].push(merged);
            }
        }
    }
    s.tests
        .iter()
        .cloned()
        .zip(covered)
        .zip(traversed)
        .map(|((r, c), e)| (r, c, e, shard))
        .collect()
}

/// The rows (in test order) with every test once: ignored tests are recorded by every shard; a
/// test that ran in two shards is an error.
fn once_each(rows: Vec<Row>) -> Result<Vec<Row>, SpectraError> {
    let mut kept: Vec<Row> = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(last) = kept.last()
            && last.0.binary == row.0.binary
            && last.0.name == row.0.name
        {
            if row.0.outcome == Outcome::Ignored && last.0.outcome == Outcome::Ignored {
                continue;
            }
            let (first, second) = (last.3.min(row.3), last.3.max(row.3));
            return Err(SpectraError::InTwoShards {
                binary: row.0.binary,
                name: row.0.name,
                first,
                second,
            });
        }
        kept.push(row);
    }
    Ok(kept)
}

/// The union of the shards' blocks (their lines renumbered to the merged units) and, per
/// shard, where each of its blocks went. `None` when no shard has edges; an error when only
/// some have.
#[allow(clippy::type_complexity)]
fn merge_blocks(
    shards: &[Spectra],
    units: &std::collections::HashMap<&Unit, UnitId>,
) -> Result<(Option<Vec<Block>>, Vec<Vec<BlockId>>), SpectraError> {
    let with = shards.iter().filter(|s| s.edges.is_some()).count();
    if with == 0 {
        return Ok((None, Vec::new()));
    }
    if with < shards.len() {
        return Err(SpectraError::SomeWithoutEdges);
    }
    let mut blocks: Vec<Block> = Vec::new();
    let mut ids: std::collections::HashMap<(String, u32), BlockId> = std::collections::HashMap::new();
    let mut maps = Vec::new();
    for s in shards {
        let e = s.edges.as_ref().expect("checked");
        let map = e
            .blocks
            .iter()
            .map(|b| {
                *ids.entry((b.function.clone(), b.index)).or_insert_with(|| {
                    let lines = b.lines.iter().map(|&u| units[&s.units[u.index()]]).collect();
                    blocks.push(Block {
                        function: b.function.clone(),
                        index: b.index,
                        lines,
                    });
                    BlockId((blocks.len() - 1) as u32)
                })
            })
            .collect();
        maps.push(map);
    }
    Ok((Some(blocks), maps))
}

/// The shards' facts over the merged `units`; `None` unless every shard has them.
fn merged_facts(shards: &[Spectra], units: &std::collections::HashMap<&Unit, UnitId>) -> Option<SourceFacts> {
    let mut out = SourceFacts::new(units.len());
    for s in shards {
        let facts = s.facts.as_ref()?;
        for (u, unit) in s.units.iter().enumerate() {
            out.copy_unit(units[unit].index(), facts, u);
        }
        out.function_names.extend(facts.function_names.clone());
        out.digests.extend(facts.digests.clone());
    }
    Some(out)
}
