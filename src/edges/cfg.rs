//! A binary's static control-flow graph over its instrumented blocks, read from
//! SanitizerCoverage's control-flow table, and the edges a test took worked out from the
//! blocks it ran.
//!
//! **The table** (`-sanitizer-coverage-control-flow`, written before the flags are inlined,
//! so it is the graph with critical edges already split): for each basic block, its address
//! (the function's for the entry block), the addresses of its successors, a null, the
//! addresses of the functions it calls (`-1` for an indirect call), a null. It lists every
//! block; the PC table only those with a flag. [`Blocks`] numbers them and infers the runs of
//! the blocks pruning left without a flag; a block that starts with `unreachable` has no flag
//! either, never runs, and edges into it are left out.
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

use rustc_hash::FxHashMap as HashMap;

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

/// A control-flow record: a flagged block (its PC-table index) or a pruned one (its index among
/// the pruned).
#[derive(Clone, Copy)]
enum Record {
    Flagged(u32),
    Pruned(usize),
}

/// A binary's blocks as the control-flow table lists them: the PC table's, each with its flag,
/// and the blocks SanitizerCoverage's pruning left without one (a block that dominates all its
/// successors, or that post-dominates all of several predecessors), whose runs are inferred
/// from the graph ([`Blocks::ran`]). A function's blocks are contiguous and in the function's
/// block order (the table's), so a build without pruning numbers them alike.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Blocks {
    pub cfg: Cfg,
    /// Per block, its address.
    pub address: Vec<u64>,
    /// Per block, its flag (index in the PC table); `None` for a pruned block.
    pub flag: Vec<Option<u32>>,
    /// Per function, in PC-table order: its blocks `first..first + count`.
    pub functions: Vec<(u32, u32)>,
    /// Per block, its immediate dominator within its function (`u32::MAX`: an entry, or not
    /// reachable from one). Only computed when some block is pruned.
    idom: Vec<u32>,
}

impl Blocks {
    /// Reads the control-flow table (`words`, with `relocated` marking words the loader fills
    /// in) for the PC table's blocks at `pcs`, `entry[i]` marking a function's first block.
    pub fn parse(words: &[u64], relocated: &[bool], pcs: &[u64], entry: &[bool]) -> Result<Blocks, CfgError> {
        let n = pcs.len();
        // The PC table's functions: each entry starts one.
        let mut function_of = vec![0u32; n];
        let mut starts: Vec<u32> = Vec::new();
        for (i, f) in function_of.iter_mut().enumerate() {
            if entry.get(i).copied().unwrap_or(false) || starts.is_empty() {
                starts.push(i as u32);
            }
            *f = starts.len() as u32 - 1;
        }
        // Flagged blocks by address. In an optimised build two blocks can end up at one address
        // (the code of one was merged away); their records come in the PC table's order, and a
        // successor at such an address is taken to be the first of them.
        let mut index: HashMap<u64, Vec<u32>> = HashMap::default();
        for (i, &pc) in pcs.iter().enumerate().filter(|(_, pc)| **pc != DELETED) {
            index.entry(pc).or_default().push(i as u32);
        }
        let mut seen: HashMap<u64, usize> = HashMap::default();
        let is_end = |i: usize| words[i] == 0 && !relocated.get(i).copied().unwrap_or(false);
        let mut flagged: Vec<Option<Vec<u64>>> = vec![None; n];
        // Unflagged blocks: (function, address, successors' addresses).
        let mut pruned: Vec<(u32, u64, Vec<u64>)> = Vec::new();
        // Per function, its records in the table's order (the function's block order).
        let mut records: Vec<Vec<Record>> = vec![Vec::new(); starts.len()];
        // The records: (address, successors' addresses).
        let mut table: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let address = words[i];
            i += 1;
            let mut succs = Vec::new();
            while i < words.len() && !is_end(i) {
                succs.push(words[i]);
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
            table.push((address, succs));
        }
        // A pruned block with no code of its own (it only falls through) shares its address
        // with the block after it. Where an address has more records than flagged blocks, such a
        // record (its only successor is its own address) is the pruned one.
        let mut surplus: HashMap<u64, usize> = HashMap::default();
        for (address, _) in &table {
            *surplus.entry(*address).or_default() += 1;
        }
        for (address, extra) in surplus.iter_mut() {
            *extra = extra.saturating_sub(index.get(address).map_or(0, Vec::len));
        }
        // Per function, its deleted flagged blocks (no address, no record of their own but a
        // record at the deleted address, in order).
        let mut deleted_of: Vec<std::collections::VecDeque<u32>> = vec![Default::default(); starts.len()];
        for (b, &pc) in pcs.iter().enumerate() {
            if pc == DELETED {
                deleted_of[function_of[b] as usize].push_back(b as u32);
            }
        }
        let mut current: Option<u32> = None;
        // Per address, its records in the table's order.
        let mut at_address: HashMap<u64, Vec<Record>> = HashMap::default();
        for (address, succs) in table {
            let falls_through = succs.as_slice() == [address];
            if address == DELETED {
                // A deleted flagged block keeps its place in the function (the function's
                // deleted blocks in order); a deleted block without a flag is no block.
                if let Some(b) = current.and_then(|f| deleted_of[f as usize].pop_front()) {
                    flagged[b as usize] = Some(Vec::new());
                    records[function_of[b as usize] as usize].push(Record::Flagged(b));
                }
                continue;
            }
            let block = match surplus.get_mut(&address) {
                Some(extra) if *extra > 0 && falls_through => {
                    *extra -= 1;
                    None
                }
                _ => index.get(&address).and_then(|at| {
                    let k = seen.entry(address).or_default();
                    *k += 1;
                    at.get(*k - 1).copied()
                }),
            };
            match block {
                Some(b) => {
                    // A function's records are contiguous: the flagged ones say whose they are.
                    let f = function_of[b as usize];
                    current = Some(f);
                    if flagged[b as usize].is_none() {
                        flagged[b as usize] = Some(succs);
                        records[f as usize].push(Record::Flagged(b));
                        at_address.entry(address).or_default().push(Record::Flagged(b));
                    }
                }
                None if address != DELETED => {
                    if let Some(f) = current {
                        records[f as usize].push(Record::Pruned(pruned.len()));
                        at_address
                            .entry(address)
                            .or_default()
                            .push(Record::Pruned(pruned.len()));
                        pruned.push((f, address, succs));
                    }
                }
                None => {}
            }
        }
        let missing = flagged
            .iter()
            .zip(pcs)
            .filter(|(l, pc)| l.is_none() && **pc != DELETED)
            .count();
        if missing > 0 {
            return Err(CfgError::Missing(missing));
        }
        // An unflagged block with no successor that is no block's only successor was not
        // pruned: it starts with `unreachable` and never runs (and without pruning it is no
        // block either). Edges into it are left out.
        let only_successor: std::collections::HashSet<u64> = flagged
            .iter()
            .flatten()
            .chain(pruned.iter().map(|p| &p.2))
            .filter(|l| l.len() == 1)
            .map(|l| l[0])
            .collect();
        let keep = |k: usize| !pruned[k].2.is_empty() || only_successor.contains(&pruned[k].1);
        // Number the blocks function by function in the function's block order, so a build
        // without pruning numbers its blocks the same. Deleted blocks (no record) keep their
        // place in the PC table's order.
        let mut out = Blocks::default();
        let mut block_of_flag = vec![u32::MAX; n];
        let mut block_of_pruned = vec![u32::MAX; pruned.len()];
        for (f, &first) in starts.iter().enumerate() {
            let end = starts.get(f + 1).map_or(n as u32, |&e| e);
            let begin = out.address.len() as u32;
            let mut next = first;
            let mut flag_upto = |out: &mut Blocks, upto: u32, block_of_flag: &mut Vec<u32>| {
                while next < upto {
                    if block_of_flag[next as usize] == u32::MAX {
                        block_of_flag[next as usize] = out.address.len() as u32;
                        out.address.push(pcs[next as usize]);
                        out.flag.push(Some(next));
                    }
                    next += 1;
                }
            };
            for r in &records[f] {
                match *r {
                    Record::Flagged(b) => flag_upto(&mut out, b + 1, &mut block_of_flag),
                    Record::Pruned(k) if keep(k) => {
                        block_of_pruned[k] = out.address.len() as u32;
                        out.address.push(pruned[k].1);
                        out.flag.push(None);
                    }
                    Record::Pruned(_) => {}
                }
            }
            flag_upto(&mut out, end, &mut block_of_flag);
            out.functions.push((begin, out.address.len() as u32 - begin));
        }
        // A successor's address is the first block there in layout order (one with no code of
        // its own falls through to the next), other than the block itself when it is one of them.
        let block_of = |r: &Record| match *r {
            Record::Flagged(b) => Some(block_of_flag[b as usize]),
            Record::Pruned(k) => keep(k).then_some(block_of_pruned[k]),
        };
        let resolve = |from: u32, succs: &[u64]| {
            let mut l: Vec<u32> = succs
                .iter()
                .filter_map(|a| {
                    let at: Vec<u32> = at_address.get(a)?.iter().filter_map(block_of).collect();
                    at.iter().copied().find(|&b| b != from).or(at.first().copied())
                })
                .collect();
            l.sort_unstable();
            l.dedup();
            l
        };
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); out.address.len()];
        for (pc, succs) in flagged.iter().enumerate() {
            if let Some(succs) = succs {
                let b = block_of_flag[pc];
                lists[b as usize] = resolve(b, succs);
            }
        }
        for (k, p) in pruned.iter().enumerate().filter(|(k, _)| keep(*k)) {
            let b = block_of_pruned[k];
            lists[b as usize] = resolve(b, &p.2);
        }
        out.cfg = Cfg::from_lists(lists);
        if out.flag.iter().any(Option::is_none) {
            out.idom = out.dominators();
        }
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.address.len()
    }

    pub fn is_empty(&self) -> bool {
        self.address.is_empty()
    }

    /// Each block's immediate dominator within its function (Cooper, Harvey and Kennedy's
    /// iterative algorithm over reverse postorder).
    fn dominators(&self) -> Vec<u32> {
        const NONE: u32 = u32::MAX;
        let mut idom = vec![NONE; self.len()];
        let mut rpo_index = vec![NONE; self.len()];
        let mut preds: Vec<Vec<u32>> = vec![Vec::new(); self.len()];
        for b in 0..self.len() as u32 {
            for &s in self.cfg.successors(b) {
                preds[s as usize].push(b);
            }
        }
        for &(first, count) in &self.functions {
            if count == 0 {
                continue;
            }
            let inside = |b: u32| b >= first && b < first + count;
            // Postorder by an explicit DFS from the entry.
            let mut post = Vec::new();
            let mut visited = vec![false; count as usize];
            let mut stack: Vec<(u32, usize)> = vec![(first, 0)];
            visited[0] = true;
            while let Some(&mut (b, ref mut next)) = stack.last_mut() {
                let succs = self.cfg.successors(b);
                if let Some(&s) = succs.get(*next) {
                    *next += 1;
                    if inside(s) && !visited[(s - first) as usize] {
                        visited[(s - first) as usize] = true;
                        stack.push((s, 0));
                    }
                } else {
                    post.push(b);
                    stack.pop();
                }
            }
            let rpo: Vec<u32> = post.iter().rev().copied().collect();
            for (k, &b) in rpo.iter().enumerate() {
                rpo_index[b as usize] = k as u32;
            }
            idom[first as usize] = first;
            let intersect = |idom: &[u32], mut a: u32, mut b: u32| {
                while a != b {
                    while rpo_index[a as usize] > rpo_index[b as usize] {
                        a = idom[a as usize];
                    }
                    while rpo_index[b as usize] > rpo_index[a as usize] {
                        b = idom[b as usize];
                    }
                }
                a
            };
            let mut changed = true;
            while changed {
                changed = false;
                for &b in rpo.iter().skip(1) {
                    let mut new = NONE;
                    for &p in &preds[b as usize] {
                        if !inside(p) || idom[p as usize] == NONE {
                            continue;
                        }
                        new = if new == NONE { p } else { intersect(&idom, p, new) };
                    }
                    if new != NONE && idom[b as usize] != new {
                        idom[b as usize] = new;
                        changed = true;
                    }
                }
            }
            idom[first as usize] = NONE;
        }
        idom
    }

    /// Which blocks ran, from the flags that were set (`flags[i]`: the PC table's block `i`).
    /// A pruned block ran when a block it dominates ran, or when a block whose only successor
    /// it is ran. Both hold exactly for a run that left every block it entered by its end;
    /// the one case they miss is the block a panic or an exit left mid-way, on a failing
    /// test's stack: a pruned dominator that panicked counts as not run, and a pruned join
    /// after a predecessor that panicked in a call without cleanup counts as run.
    pub fn ran(&self, flags: &[bool]) -> Vec<bool> {
        let mut ran: Vec<bool> = self
            .flag
            .iter()
            .map(|f| f.is_some_and(|i| flags.get(i as usize).copied().unwrap_or(false)))
            .collect();
        if self.idom.is_empty() {
            return ran;
        }
        let mut work: Vec<u32> = (0..self.len() as u32).filter(|&b| ran[b as usize]).collect();
        let mut walked = vec![false; self.len()];
        while let Some(b) = work.pop() {
            // Every dominator of a block that ran ran too.
            let mut d = b;
            while !walked[d as usize] {
                walked[d as usize] = true;
                if !ran[d as usize] {
                    ran[d as usize] = true;
                    work.push(d);
                }
                match self.idom[d as usize] {
                    u32::MAX => break,
                    up => d = up,
                }
            }
            // A pruned only successor ran after it.
            if let [s] = self.cfg.successors(b)
                && self.flag[*s as usize].is_none()
                && !ran[*s as usize]
            {
                ran[*s as usize] = true;
                work.push(*s);
            }
        }
        ran
    }
}

impl Cfg {
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

    /// The graph of a table whose PC table starts one function.
    fn parse(words: &[u64], relocated: &[bool], pcs: &[u64]) -> Result<Cfg, CfgError> {
        let entry: Vec<bool> = (0..pcs.len()).map(|i| i == 0).collect();
        Blocks::parse(words, relocated, pcs, &entry).map(|b| b.cfg)
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
        let cfg = parse(&words, &relocated, &pcs).unwrap();
        assert_eq!(cfg.successors(0), &[1, 2]);
        assert_eq!(cfg.successors(1), &[2]);
        assert!(cfg.successors(2).is_empty());
        assert_eq!(cfg.preds, vec![0, 1, 2]);
        // Without the mark, the callee's zero ends the record early and the table is garbled.
        assert!(parse(&words, &[false; 14], &pcs).is_err());
    }

    #[test]
    fn blocks_at_one_address_take_their_records_in_order() {
        // Blocks 1 and 2 both at 0x20: the first record at 0x20 is block 1's, the second block 2's.
        let pcs = [0x10, 0x20, 0x20];
        let words = [0x10, 0x20, 0, 0, 0x20, 0, 0, 0x20, 0x10, 0, 0];
        let cfg = parse(&words, &[], &pcs).unwrap();
        assert_eq!(cfg.successors(0), &[1]);
        assert!(cfg.successors(1).is_empty());
        assert_eq!(cfg.successors(2), &[0]);
    }

    /// `E → D`, `D → {A, B, U}`, `A → J`, `B → J`: pruning left D (it dominates A and B) and
    /// J (it post-dominates A and B) without a flag; U starts with `unreachable` (no flag, no
    /// successor, nobody's only successor).
    fn pruned() -> Blocks {
        let words = [
            0x10, 0x20, 0, 0, // E
            0x20, 0x30, 0x40, 0x60, 0, 0, // D
            0x30, 0x50, 0, 0, // A
            0x40, 0x50, 0, 0, // B
            0x50, 0, 0, // J
            0x60, 0, 0, // U
        ];
        Blocks::parse(&words, &[], &[0x10, 0x30, 0x40], &[true, false, false]).unwrap()
    }

    #[test]
    fn pruned_blocks_take_their_place_in_the_function() {
        let b = pruned();
        assert_eq!(b.address, [0x10, 0x20, 0x30, 0x40, 0x50]);
        assert_eq!(b.flag, [Some(0), None, Some(1), Some(2), None]);
        assert_eq!(b.functions, [(0, 5)]);
        assert_eq!(b.cfg.successors(1), &[2, 3]);
        assert_eq!(b.idom, [u32::MAX, 0, 1, 1, 1]);
    }

    #[test]
    fn pruned_blocks_ran_when_a_block_they_dominate_or_their_only_predecessor_ran() {
        let b = pruned();
        // E and A flagged: D dominates A, J is A's only successor.
        let ran = b.ran(&[true, true, false]);
        assert_eq!(ran, [true, true, true, false, true]);
        assert_eq!(
            b.cfg.taken(&ran, |x| x == 0),
            vec![(None, 0), (Some(0), 1), (Some(1), 2), (Some(2), 4)]
        );
        // Only E: a panic stopped the run in E or in D. D, E's only successor, counts as run;
        // A, B and J did not run.
        assert_eq!(b.ran(&[true, false, false]), [true, true, false, false, false]);
        // A test that panicked inside A (a call without cleanup) gets J too: the case the
        // inference cannot tell.
    }

    #[test]
    fn without_pruning_blocks_are_the_pc_tables() {
        let words = [0x10, 0x20, 0, 0, 0x20, 0, 0];
        let b = Blocks::parse(&words, &[], &[0x10, 0x20], &[true, false]).unwrap();
        assert_eq!(b.flag, [Some(0), Some(1)]);
        assert!(b.idom.is_empty(), "no dominators needed");
        assert_eq!(b.ran(&[true, false]), [true, false]);
    }

    #[test]
    fn a_deleted_block_needs_no_record() {
        let cfg = parse(&[0x10, 0, 0], &[], &[0x10, DELETED]).unwrap();
        assert!(cfg.successors(1).is_empty());
    }

    #[test]
    fn refuses_truncated_tables_and_blocks_without_records() {
        assert_eq!(parse(&[0x10, 0x20], &[], &[0x10, 0x20]), Err(CfgError::Truncated));
        assert_eq!(parse(&[0x10, 0, 0], &[], &[0x10, 0x20]), Err(CfgError::Missing(1)));
    }
}
