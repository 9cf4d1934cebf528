//! The HT_Rank model of one analysis: its locations (executed lines), report entries and jumps,
//! shared by every measure that ranks the analysis (`cargo sfl eval`'s HT_Rank, `--order ht`).

use std::collections::{HashMap, HashSet};

use super::chain::{Chain, ChainSpec, Method, hitting_times};
use crate::analysis::Analysis;
use crate::score::{Key, Scored};
use crate::spectra::{Spectra, UnitId};

/// The HT_Rank debugging model's fixed parts: locations (executed lines), report entries
/// (ambiguity groups, then each executed line no failing test ran) and jumps (lines of the same
/// function). Only the entries' keys differ between measures.
pub struct HtModel {
    /// Unit index of each location.
    pub executed: Vec<usize>,
    /// Location of each executed unit.
    pub loc: HashMap<usize, usize>,
    pub entries: Vec<Vec<usize>>,
    pub jumps: Vec<Vec<usize>>,
}

impl HtModel {
    pub fn new(spectra: &Spectra, analysis: &Analysis) -> Self {
        let executed: Vec<usize> = (0..spectra.units.len())
            .filter(|&u| !spectra.coverage[u].is_empty())
            .collect();
        let loc: HashMap<usize, usize> = executed.iter().enumerate().map(|(i, &u)| (u, i)).collect();
        let mut entries: Vec<Vec<usize>> = analysis
            .groups
            .iter()
            .map(|g| g.units.iter().map(|u| loc[u]).collect())
            .collect();
        let candidate: HashSet<usize> = analysis.groups.iter().flat_map(|g| g.units.iter().copied()).collect();
        entries.extend(executed.iter().filter(|u| !candidate.contains(u)).map(|u| vec![loc[u]]));
        let mut by_function: HashMap<u32, Vec<usize>> = HashMap::new();
        for (i, &u) in executed.iter().enumerate() {
            if let Some(Some(f)) = spectra.unit_function.get(u) {
                by_function.entry(*f).or_default().push(i);
            }
        }
        let mut jumps = vec![Vec::new(); executed.len()];
        for lines in by_function.values() {
            for &l in lines {
                jumps[l] = lines.iter().copied().filter(|&j| j != l).collect();
            }
        }
        // Def. 26: lines adjacent in the dynamic CFG (consecutive in a block, or the end of one
        // block and the start of the next) also jump to each other.
        if let Some(e) = &spectra.edges {
            let mut link = |a: UnitId, b: UnitId| {
                if let (Some(&x), Some(&y)) = (loc.get(&a.index()), loc.get(&b.index()))
                    && x != y
                {
                    jumps[x].push(y);
                    jumps[y].push(x);
                }
            };
            for b in &e.blocks {
                for w in b.lines.windows(2) {
                    link(w[0], w[1]);
                }
            }
            for &edge in e.edges.iter().filter(|&&edge| !e.is_call(edge)) {
                let (Some(from), to) = e.ends(edge) else {
                    continue;
                };
                if let (Some(&a), Some(&b)) = (from.lines.last(), to.lines.first()) {
                    link(a, b);
                }
            }
            for j in &mut jumps {
                j.sort_unstable();
                j.dedup();
            }
        }
        HtModel {
            executed,
            loc,
            entries,
            jumps,
        }
    }

    /// Every entry's key under a measure's scores (one per group of the analysis; the other
    /// entries sit at the bottom).
    pub fn entry_keys(&self, scored: &[Scored]) -> Vec<Key> {
        (0..self.entries.len())
            .map(|e| scored.get(e).map_or(Key::UNRANKED, |s| s.key))
            .collect()
    }

    /// `ln` of the expected hitting time of every location under a measure's scores (one per
    /// group of the analysis; the other entries sit at the bottom).
    pub fn times(&self, scored: &[Scored], p_jump: f64, exact_limit: usize, walks: usize) -> (Vec<f64>, Method) {
        let keys = self.entry_keys(scored);
        let chain = Chain::build(&ChainSpec {
            entries: &self.entries,
            keys: &keys,
            locations: self.executed.len(),
            jumps: &self.jumps,
            p_jump,
        });
        hitting_times(&chain, exact_limit, walks)
    }
}
