//! The edge profiles as the rest of cargo sfl sees them: blocks named across binaries, the
//! edges between them, and per edge the tests that traversed it; and how they are saved in
//! `spectra.json`.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::unit::UnitId;
use crate::bitset::BitSet;

/// A block's position in [`EdgeSpectra::blocks`] (or, while collecting, in the order blocks
/// were first met).
/// Saved as the bare number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct BlockId(pub u32);

impl BlockId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A control-flow edge of the dynamic CFG, or a call ([`EdgeSpectra::is_call`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Edge {
    /// `None`: the virtual edge into a function's entry block.
    pub from: Option<BlockId>,
    pub to: BlockId,
}

impl Edge {
    /// The edge with both ends renamed by `rename`.
    pub fn map(self, mut rename: impl FnMut(BlockId) -> BlockId) -> Edge {
        Edge {
            from: self.from.map(&mut rename),
            to: rename(self.to),
        }
    }

    /// Whether this is the virtual edge into an entry block.
    pub fn is_entry(self) -> bool {
        self.from.is_none()
    }
}

/// A block of the dynamic CFG: the `index`-th instrumented block of `function`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Block {
    /// Demangled name without hash (closures and monomorphised generics have their own).
    pub function: String,
    pub index: u32,
    /// The units (`Spectra::units` indices) of its source lines in address order, repeats in a
    /// row merged (the order the lines run in, within the block).
    pub lines: Vec<UnitId>,
}

/// Edge profiles over the same tests as the line matrix.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EdgeSpectra {
    /// Blocks sorted by (function, index).
    pub blocks: Vec<Block>,
    /// Sorted (entry edges first, then by `from`, then by `to`).
    pub edges: Vec<Edge>,
    /// Per edge, the tests that traversed it.
    pub coverage: Vec<BitSet>,
}

/// How edges are saved inside `spectra.json`.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedEdges {
    /// `[function, index, [unit…]]`.
    blocks: Vec<(String, u32, Vec<UnitId>)>,
    /// `[from or null, to, hex bitset over tests]`.
    edges: Vec<(Option<BlockId>, BlockId, String)>,
}

/// What is wrong with saved edges.
#[derive(Debug, thiserror::Error)]
pub enum SavedEdgesError {
    #[error("block {index} of {function} names a unit that does not exist")]
    UnknownUnit { function: String, index: u32 },
    #[error("edge {edge} joins blocks that do not exist")]
    UnknownBlock { edge: usize },
    #[error("edge {edge} is not a bitset over {tests} tests")]
    NotABitset { edge: usize, tests: usize },
    #[error("block {block} names a function or line list that is not in the file's tables")]
    NoSuchTableEntry { block: usize },
    #[error("edges_deflated is not base64: {0}")]
    NotBase64(base64::DecodeError),
    #[error("edges_deflated does not inflate: {0}")]
    NotDeflated(std::io::Error),
    #[error("edges_deflated inflates to more than {MAX_INFLATED} bytes")]
    TooLarge,
    #[error("edges_deflated is malformed: {0}")]
    Malformed(serde_json::Error),
}

/// The most a saved file's deflated edge profiles may inflate to (a file from elsewhere must
/// not make us allocate without bound).
pub const MAX_INFLATED: u64 = 4 << 30;

/// Edge profiles as schema v2 deflates them: each function name and each block's line list
/// once (monomorphised copies of a function share their blocks' lines; on regex-syntax 9,045
/// distinct lists serve 36,958 blocks), blocks pointing into the two tables.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompactEdges {
    functions: Vec<String>,
    lines: Vec<Vec<UnitId>>,
    /// `[function, index, lines]`, the first and last indices into the tables.
    blocks: Vec<(u32, u32, u32)>,
    edges: Vec<(Option<BlockId>, BlockId, String)>,
}

/// [`CompactEdges`] borrowed from the profiles, as it is written: nothing is copied but the
/// tables' indices, and each edge's hex bitset is made as it is written.
#[derive(Serialize)]
struct CompactEdgesOf<'a> {
    functions: Vec<&'a str>,
    lines: Vec<&'a [UnitId]>,
    blocks: Vec<(u32, u32, u32)>,
    edges: EdgeRows<'a>,
}

/// The `edges` of [`CompactEdges`]: `[from or null, to, hex bitset]` per edge.
struct EdgeRows<'a>(&'a EdgeSpectra);

impl Serialize for EdgeRows<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        s.collect_seq(e.edges.iter().zip(&e.coverage).map(|(e, c)| (e.from, e.to, c.to_hex())))
    }
}

impl<'a> CompactEdgesOf<'a> {
    fn of(e: &'a EdgeSpectra) -> Self {
        let (mut functions, mut function_ids) = (Vec::new(), HashMap::new());
        let (mut lines, mut line_ids) = (Vec::new(), HashMap::new());
        let blocks = e
            .blocks
            .iter()
            .map(|b| {
                let f = b.function.as_str();
                let f_id = intern(&mut functions, &mut function_ids, f, || f);
                let l = b.lines.as_slice();
                let l_id = intern(&mut lines, &mut line_ids, l, || l);
                (f_id, b.index, l_id)
            })
            .collect();
        CompactEdgesOf {
            functions,
            lines,
            blocks,
            edges: EdgeRows(e),
        }
    }
}

impl CompactEdges {
    fn expand(self) -> Result<SavedEdges, SavedEdgesError> {
        let blocks = self
            .blocks
            .iter()
            .enumerate()
            .map(|(b, &(f, index, l))| {
                let function = self.functions.get(f as usize);
                let lines = self.lines.get(l as usize);
                match (function, lines) {
                    (Some(function), Some(lines)) => Ok((function.clone(), index, lines.clone())),
                    _ => Err(SavedEdgesError::NoSuchTableEntry { block: b }),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(SavedEdges {
            blocks,
            edges: self.edges,
        })
    }
}

/// `key`'s index in `table`, adding `value()` when it is new.
fn intern<'a, K: std::hash::Hash + Eq + ?Sized, V>(
    table: &mut Vec<V>,
    ids: &mut HashMap<&'a K, u32>,
    key: &'a K,
    value: impl FnOnce() -> V,
) -> u32 {
    *ids.entry(key).or_insert_with(|| {
        table.push(value());
        table.len() as u32 - 1
    })
}

/// The edge profiles as schema v2 keeps them: [`CompactEdges`] as JSON, deflated, in base64.
/// Written from the profiles as they are: no saved copy of them is made, since such a copy, its
/// hex bitsets twice over, would be most of a run's peak memory.
pub fn deflate_saved(edges: &EdgeSpectra) -> String {
    use base64::Engine;
    use std::io::Write;
    // The fast level: a little larger than the default level's output, made in about half the
    // time.
    let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    // Streamed into the encoder: only the deflated bytes are whole in memory.
    let mut json = std::io::BufWriter::new(&mut z);
    serde_json::to_writer(&mut json, &CompactEdgesOf::of(edges)).expect("saved edges serialise");
    json.flush().expect("writing to memory");
    drop(json);
    base64::engine::general_purpose::STANDARD.encode(z.finish().expect("deflating in memory"))
}

/// The inverse of [`deflate_saved`], checked at each step.
pub fn inflate_saved(text: &str) -> Result<SavedEdges, SavedEdgesError> {
    use base64::Engine;
    use std::io::Read;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(SavedEdgesError::NotBase64)?;
    let mut json = Vec::new();
    flate2::read::DeflateDecoder::new(bytes.as_slice())
        .take(MAX_INFLATED + 1)
        .read_to_end(&mut json)
        .map_err(SavedEdgesError::NotDeflated)?;
    if json.len() as u64 > MAX_INFLATED {
        return Err(SavedEdgesError::TooLarge);
    }
    serde_json::from_slice::<CompactEdges>(&json)
        .map_err(SavedEdgesError::Malformed)?
        .expand()
}

impl EdgeSpectra {
    /// Builds the profiles from per-test edges over blocks in any order, putting blocks in
    /// their canonical order.
    pub fn from_tests(blocks: Vec<Block>, tests: usize, traversed: &[Vec<Edge>]) -> Self {
        // Sorted by moving, not copying, each block.
        let mut order: Vec<(Block, u32)> = blocks.into_iter().zip(0..).collect();
        order.sort_by(|a, b| a.0.cmp(&b.0));
        let mut new_id = vec![BlockId(0); order.len()];
        for (new, (_, old)) in order.iter().enumerate() {
            new_id[*old as usize] = BlockId(new as u32);
        }
        // A hash map, sorted once at the end: a thousand tests take a million edges.
        let mut slot: rustc_hash::FxHashMap<Edge, u32> = rustc_hash::FxHashMap::default();
        let mut keys: Vec<Edge> = Vec::new();
        let mut columns: Vec<BitSet> = Vec::new();
        for (t, edges) in traversed.iter().enumerate() {
            for e in edges {
                let key = e.map(|b| new_id[b.index()]);
                let i = *slot.entry(key).or_insert_with(|| {
                    keys.push(key);
                    columns.push(BitSet::new(tests));
                    keys.len() as u32 - 1
                });
                columns[i as usize].insert(t);
            }
        }
        let mut by_edge: Vec<u32> = (0..keys.len() as u32).collect();
        by_edge.sort_unstable_by_key(|&i| keys[i as usize]);
        let edges = by_edge.iter().map(|&i| keys[i as usize]).collect();
        let coverage = by_edge
            .iter()
            .map(|&i| std::mem::take(&mut columns[i as usize]))
            .collect();
        EdgeSpectra {
            blocks: order.into_iter().map(|(b, _)| b).collect(),
            edges,
            coverage,
        }
    }

    pub fn to_saved(&self) -> SavedEdges {
        SavedEdges {
            blocks: self
                .blocks
                .iter()
                .map(|b| (b.function.clone(), b.index, b.lines.clone()))
                .collect(),
            edges: self
                .edges
                .iter()
                .zip(&self.coverage)
                .map(|(e, c)| (e.from, e.to, c.to_hex()))
                .collect(),
        }
    }

    /// Checks and reads saved edges for `tests` tests and `units` units.
    pub fn from_saved(saved: SavedEdges, tests: usize, units: usize) -> Result<Self, SavedEdgesError> {
        let n = saved.blocks.len();
        let mut blocks = Vec::with_capacity(saved.blocks.len());
        for (function, index, lines) in saved.blocks {
            if lines.iter().any(|&u| u.index() >= units) {
                return Err(SavedEdgesError::UnknownUnit { function, index });
            }
            blocks.push(Block { function, index, lines });
        }
        let mut edges = Vec::with_capacity(saved.edges.len());
        let mut coverage = Vec::with_capacity(saved.edges.len());
        for (i, (from, to, hex)) in saved.edges.into_iter().enumerate() {
            if to.index() >= n || from.is_some_and(|f| f.index() >= n) {
                return Err(SavedEdgesError::UnknownBlock { edge: i });
            }
            edges.push(Edge { from, to });
            coverage.push(BitSet::from_hex(&hex, tests).ok_or(SavedEdgesError::NotABitset { edge: i, tests })?);
        }
        Ok(EdgeSpectra {
            blocks,
            edges,
            coverage,
        })
    }

    /// The same profiles with every block's lines mapped through `unit_map` (lines to
    /// functions, or to the units kept); units mapped to `None` are dropped, the order stays
    /// (repeats in a row merged).
    pub fn map_units(&self, unit_map: impl Fn(UnitId) -> Option<UnitId>) -> Self {
        let mut out = self.clone();
        for b in &mut out.blocks {
            b.lines = b.lines.iter().filter_map(|&u| unit_map(u)).collect();
            b.lines.dedup();
        }
        out
    }

    /// The functions (names, sorted, once each) of the given blocks.
    pub fn function_names(&self, blocks: &[usize]) -> Vec<&str> {
        let mut names: Vec<&str> = blocks.iter().map(|&b| self.blocks[b].function.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// Whether `edge` is a call: it enters a function's entry block (index 0) from a block,
    /// which no edge within a function does (an entry block has no predecessor). A call from
    /// block `a` to function `f` is counted for a test that ran both `a` and `f`'s entry.
    pub fn is_call(&self, edge: Edge) -> bool {
        edge.from.is_some() && self.blocks[edge.to.index()].index == 0
    }

    /// How many of the edges are calls ([`EdgeSpectra::is_call`]).
    pub fn calls(&self) -> usize {
        self.edges.iter().filter(|&&e| self.is_call(e)).count()
    }

    /// The block an edge comes from (`None` for an entry edge) and the block it leads to.
    pub fn ends(&self, edge: Edge) -> (Option<&Block>, &Block) {
        (
            edge.from.map(|f| &self.blocks[f.index()]),
            &self.blocks[edge.to.index()],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(function: &str, index: u32, lines: &[u32]) -> Block {
        Block {
            function: function.into(),
            index,
            lines: lines.iter().copied().map(UnitId).collect(),
        }
    }

    fn edge(from: Option<u32>, to: u32) -> Edge {
        Edge {
            from: from.map(BlockId),
            to: BlockId(to),
        }
    }

    #[test]
    fn entry_edges_sort_first_then_by_from_then_to() {
        // The order saved files were always written in (as `(from or null, to)` pairs): the
        // derived order of `Edge` must keep it, or re-saved spectra would change.
        let mut edges = [edge(Some(0), 1), edge(None, 2), edge(Some(0), 0), edge(None, 0)];
        edges.sort();
        assert_eq!(
            edges,
            [edge(None, 0), edge(None, 2), edge(Some(0), 0), edge(Some(0), 1)]
        );
        assert!(edges[0].is_entry() && !edges[2].is_entry());
        assert_eq!(edge(Some(1), 2).map(|b| BlockId(b.0 + 10)), edge(Some(11), 12));
    }

    #[test]
    fn from_tests_puts_blocks_in_order_and_renames_edges() {
        // Met as g#0, f#1, f#0; canonical order f#0, f#1, g#0.
        let blocks = vec![block("g", 0, &[5]), block("f", 1, &[2]), block("f", 0, &[1])];
        let traversed = vec![
            vec![edge(None, 2), edge(Some(2), 1)],
            vec![edge(None, 2), edge(None, 0)],
        ];
        let e = EdgeSpectra::from_tests(blocks, 2, &traversed);
        let names: Vec<(&str, u32)> = e.blocks.iter().map(|b| (b.function.as_str(), b.index)).collect();
        assert_eq!(names, vec![("f", 0), ("f", 1), ("g", 0)]);
        assert_eq!(e.edges, vec![edge(None, 0), edge(None, 2), edge(Some(0), 1)]);
        let tests: Vec<Vec<bool>> = e.coverage.iter().map(|c| vec![c.contains(0), c.contains(1)]).collect();
        assert_eq!(tests, vec![vec![true, true], vec![false, true], vec![true, false]]);
        let (from, to) = e.ends(e.edges[2]);
        assert_eq!((from.map(|b| b.index), to.index), (Some(0), 1));
    }

    #[test]
    fn saved_edges_round_trip_and_are_checked() {
        let blocks = vec![block("f", 0, &[0]), block("f", 1, &[1, 0])];
        let e = EdgeSpectra::from_tests(blocks, 3, &[vec![edge(None, 0)], vec![edge(Some(0), 1)], vec![]]);
        let json = serde_json::to_string(&e.to_saved()).unwrap();
        assert_eq!(
            json,
            r#"{"blocks":[["f",0,[0]],["f",1,[1,0]]],"edges":[[null,0,"01"],[0,1,"02"]]}"#
        );
        let back = EdgeSpectra::from_saved(serde_json::from_str(&json).unwrap(), 3, 2).unwrap();
        assert_eq!(back, e);
        let err = |json: &str, units| {
            EdgeSpectra::from_saved(serde_json::from_str(json).unwrap(), 3, units)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(err(&json, 1), "block 1 of f names a unit that does not exist");
        assert_eq!(
            err(r#"{"blocks":[],"edges":[[null,0,"01"]]}"#, 2),
            "edge 0 joins blocks that do not exist"
        );
        assert_eq!(
            err(r#"{"blocks":[["f",0,[]]],"edges":[[null,0,"ff"]]}"#, 2),
            "edge 0 is not a bitset over 3 tests"
        );
    }

    #[test]
    fn deflated_edges_round_trip_and_refuse_garbage() {
        let blocks = vec![block("f", 0, &[0]), block("f", 1, &[1, 0])];
        let e = EdgeSpectra::from_tests(blocks, 3, &[vec![edge(None, 0)], vec![edge(Some(0), 1)], vec![]]);
        let text = deflate_saved(&e);
        let back = EdgeSpectra::from_saved(inflate_saved(&text).unwrap(), 3, 2).unwrap();
        assert_eq!(back, e);
        let err = |t: &str| inflate_saved(t).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err("not base64!").starts_with("edges_deflated is not base64"));
        assert!(err("AAAA").starts_with("edges_deflated does not inflate"));
        let deflate = |json: &[u8]| {
            use base64::Engine;
            use std::io::Write;
            let mut z = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            z.write_all(json).unwrap();
            base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap())
        };
        assert!(err(&deflate(b"[1,")).starts_with("edges_deflated is malformed"));
        let dangling = deflate(br#"{"functions":["f"],"lines":[],"blocks":[[0,0,0]],"edges":[]}"#);
        assert_eq!(
            err(&dangling),
            "block 0 names a function or line list that is not in the file's tables"
        );
    }
}
