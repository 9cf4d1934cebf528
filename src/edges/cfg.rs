//! A binary's static control-flow graph over its instrumented blocks, read from
//! SanitizerCoverage's control-flow table, and the edges a test took worked out from the
//! blocks it ran.
//!
//! **The table** (`-sanitizer-coverage-control-flow`, written before the flags are inlined,
//! so it is the graph with critical edges already split): for each basic block, its address
//! (the function's for the entry block), the addresses of its successors, a null, the
//! addresses of the functions it calls (`-1` for an indirect call), a null. Blocks that are
//! not instrumented (those that start with `unreachable`) have no flag; edges into them are
//! never taken by a test that goes on running, and are left out.
//!
//! **Edges from blocks.** A test's flags say which blocks ran, not in which order. With
//! critical edges split, an edge `A → B` is the only way into `B` (B has one predecessor) or
//! the only way out of `A` (A has one successor), so:
//! - `B` has one predecessor: taken iff `B` ran.
//! - `A` has one successor: taken iff `A` and `B` both ran. Requiring `B` keeps the block a
//!   test panicked in out: a call inside `A` that unwound out of the function never reached
//!   `A`'s end, and if `B` did not run either, no edge is counted. (If `B` ran by another way
//!   in, the edge is counted though `A` never finished: the one case this cannot tell.)
//! - Neither: LLVM cannot split an edge into an exception landing pad, so an `invoke`'s
//!   unwind edge into a pad that several calls share stays critical. It is taken iff both
//!   ran and `A` left by no other successor (its call unwound rather than returned); when no
//!   such `A` explains a pad that ran, every predecessor that ran is counted.
//! - The virtual edge into a function's entry block (CP's e1): taken iff the entry ran.

use std::collections::HashMap;

/// The address LLVM gives a block it deleted after taking its address (`blockaddress` of a
/// deleted block becomes `inttoptr 1`): such a block never runs and has no record.
pub const DELETED: u64 = 1;

/// Successor lists in compressed rows: block `b`'s successors are
/// `targets[start[b]..start[b + 1]]` (block = index in the PC table).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Cfg {
    start: Vec<u32>,
    targets: Vec<u32>,
    preds: Vec<u32>,
}

/// What is wrong with a control-flow table.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CfgError {
    #[error("the control-flow table ends inside a block's record")]
    Truncated,
    #[error("{0} of the PC table's blocks have no record in the control-flow table")]
    Missing(usize),
}

impl Cfg {
    /// Reads the table (`words`, with `relocated` marking words the loader fills in, which are
    /// never the null that ends a list) for blocks at `pcs` (the PC table's addresses, in
    /// order).
    pub fn parse(words: &[u64], relocated: &[bool], pcs: &[u64]) -> Result<Cfg, CfgError> {
        // Blocks by address. In an optimised build two blocks can end up at one address (the
        // code of one was merged away); their records come in the PC table's order, and a
        // successor at such an address is taken to be the first of them.
        let mut index: HashMap<u64, Vec<u32>> = HashMap::new();
        for (i, &pc) in pcs.iter().enumerate().filter(|(_, pc)| **pc != DELETED) {
            index.entry(pc).or_default().push(i as u32);
        }
        let mut seen: HashMap<u64, usize> = HashMap::new();
        let is_end = |i: usize| words[i] == 0 && !relocated.get(i).copied().unwrap_or(false);
        let mut lists: Vec<Option<Vec<u32>>> = vec![None; pcs.len()];
        let mut i = 0;
        while i < words.len() {
            let block = index.get(&words[i]).and_then(|at| {
                let k = seen.entry(words[i]).or_default();
                *k += 1;
                at.get(*k - 1).copied()
            });
            i += 1;
            let mut succs = Vec::new();
            while i < words.len() && !is_end(i) {
                if let Some(at) = index.get(&words[i]) {
                    succs.push(at[0]);
                }
                i += 1;
            }
            // The successors' null, the callees (not needed), and theirs.
            i += 1;
            while i < words.len() && !is_end(i) {
                i += 1;
            }
            if i >= words.len() {
                return Err(CfgError::Truncated);
            }
            i += 1;
            if let Some(b) = block {
                succs.sort_unstable();
                succs.dedup();
                lists[b as usize].get_or_insert(succs);
            }
        }
        let missing = lists
            .iter()
            .zip(pcs)
            .filter(|(l, pc)| l.is_none() && **pc != DELETED)
            .count();
        if missing > 0 {
            return Err(CfgError::Missing(missing));
        }
        Ok(Cfg::from_lists(lists.into_iter().map(Option::unwrap_or_default)))
    }

    /// From each block's successors.
    pub fn from_lists(lists: impl IntoIterator<Item = Vec<u32>>) -> Cfg {
        let mut cfg = Cfg {
            start: vec![0],
            ..Cfg::default()
        };
        for l in lists {
            cfg.targets.extend(l);
            cfg.start.push(cfg.targets.len() as u32);
        }
        cfg.preds = vec![0; cfg.blocks()];
        for &t in &cfg.targets {
            if let Some(p) = cfg.preds.get_mut(t as usize) {
                *p += 1;
            }
        }
        cfg
    }

    pub fn blocks(&self) -> usize {
        self.start.len() - 1
    }

    pub fn successors(&self, b: u32) -> &[u32] {
        &self.targets[self.start[b as usize] as usize..self.start[b as usize + 1] as usize]
    }

    /// The edges a test took, given which blocks ran (`ran[b]`) and which start a function:
    /// `(None, entry)` for the virtual edge into an entry, `(Some(a), b)` otherwise, in order.
    pub fn taken(&self, ran: &[bool], entry: impl Fn(u32) -> bool) -> Vec<(Option<u32>, u32)> {
        let mut out = Vec::new();
        // Unwind edges into a landing pad that ran, not yet explained: (pad, from).
        let mut unsure: Vec<(u32, u32)> = Vec::new();
        let mut explained: Vec<u32> = Vec::new();
        for a in (0..self.blocks() as u32).filter(|&a| ran[a as usize]) {
            if entry(a) {
                out.push((None, a));
            }
            let succs = self.successors(a);
            for &b in succs.iter().filter(|&&b| ran[b as usize]) {
                let left_only_here = succs.iter().all(|&o| o == b || !ran[o as usize]);
                if self.preds[b as usize] == 1 || succs.len() == 1 || left_only_here {
                    out.push((Some(a), b));
                    explained.push(b);
                } else {
                    unsure.push((b, a));
                }
            }
        }
        explained.sort_unstable();
        for (b, a) in unsure {
            if explained.binary_search(&b).is_err() {
                out.push((Some(a), b));
            }
        }
        out.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `if c { x } else { y }; z` with the else edge split: 0 → {1, 2}, 1 → 3, 2 → 3.
    fn diamond() -> Cfg {
        Cfg::from_lists([vec![1, 2], vec![3], vec![3], vec![]])
    }

    fn ran(n: usize, blocks: &[u32]) -> Vec<bool> {
        let mut r = vec![false; n];
        for &b in blocks {
            r[b as usize] = true;
        }
        r
    }

    #[test]
    fn a_path_through_a_diamond() {
        let got = diamond().taken(&ran(4, &[0, 2, 3]), |b| b == 0);
        assert_eq!(got, vec![(None, 0), (Some(0), 2), (Some(2), 3)]);
    }

    #[test]
    fn a_block_that_panicked_midway_leaves_no_edge_to_its_successor() {
        // Block 1 ran but its call unwound out of the function: 3 never ran.
        let got = diamond().taken(&ran(4, &[0, 1]), |b| b == 0);
        assert_eq!(got, vec![(None, 0), (Some(0), 1)]);
    }

    #[test]
    fn unwind_edges_into_a_shared_landing_pad() {
        // Two invokes 0 and 1 (normal successors 2 and 3) share the pad 4.
        let cfg = Cfg::from_lists([vec![2, 4], vec![3, 4], vec![1], vec![5], vec![], vec![]]);
        // 0 returned, 1 unwound: only 1 → 4.
        let got = cfg.taken(&ran(6, &[0, 2, 1, 4]), |b| b == 0);
        assert_eq!(got, vec![(None, 0), (Some(0), 2), (Some(1), 4), (Some(2), 1)]);
        // Both returned at some point and the pad ran: which call unwound is unknown, so both.
        let got = cfg.taken(&ran(6, &[0, 2, 1, 3, 4, 5]), |b| b == 0);
        assert!(got.contains(&(Some(0), 4)) && got.contains(&(Some(1), 4)), "{got:?}");
    }

    #[test]
    fn reads_the_table_with_entries_the_loader_fills_in() {
        // Blocks at 0x10 (entry), 0x20, 0x30; 0x10 calls a library function (0, relocated).
        let pcs = [0x10, 0x20, 0x30];
        let words = [0x10, 0x20, 0x30, 0, 0, 0, 0x20, 0x30, 0, 0, 0x30, 0, 0x10, 0];
        let mut relocated = [false; 14];
        relocated[4] = true;
        let cfg = Cfg::parse(&words, &relocated, &pcs).unwrap();
        assert_eq!(cfg.successors(0), &[1, 2]);
        assert_eq!(cfg.successors(1), &[2]);
        assert!(cfg.successors(2).is_empty());
        assert_eq!(cfg.preds, vec![0, 1, 2]);
        // Without the mark, the callee's zero ends the record early and the table is garbled.
        assert!(Cfg::parse(&words, &[false; 14], &pcs).is_err());
    }

    #[test]
    fn blocks_at_one_address_take_their_records_in_order() {
        // Blocks 1 and 2 both at 0x20: the first record at 0x20 is block 1's, the second block 2's.
        let pcs = [0x10, 0x20, 0x20];
        let words = [0x10, 0x20, 0, 0, 0x20, 0, 0, 0x20, 0x10, 0, 0];
        let cfg = Cfg::parse(&words, &[], &pcs).unwrap();
        assert_eq!(cfg.successors(0), &[1]);
        assert!(cfg.successors(1).is_empty());
        assert_eq!(cfg.successors(2), &[0]);
    }

    #[test]
    fn a_deleted_block_needs_no_record() {
        let cfg = Cfg::parse(&[0x10, 0, 0], &[], &[0x10, DELETED]).unwrap();
        assert!(cfg.successors(1).is_empty());
    }

    #[test]
    fn refuses_truncated_tables_and_blocks_without_records() {
        assert_eq!(Cfg::parse(&[0x10, 0x20], &[], &[0x10, 0x20]), Err(CfgError::Truncated));
        assert_eq!(Cfg::parse(&[0x10, 0, 0], &[], &[0x10, 0x20]), Err(CfgError::Missing(1)));
    }
}
