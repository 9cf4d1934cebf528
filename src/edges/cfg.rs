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

pub use super::table::{CfgError, DELETED};
use super::table::{Interned, Matched, NO, PcFunctions, Record, Rows, Table};

/// Successor lists in compressed rows: block `b`'s successors are
/// `targets[start[b]..start[b + 1]]` (block = index in the PC table).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Cfg {
    start: Vec<u32>,
    targets: Vec<u32>,
    preds: Vec<u32>,
}

/// A binary's blocks as the control-flow table lists them: the PC table's, each with its flag,
/// and the blocks SanitizerCoverage's pruning left without one (a block that dominates all its
/// successors, or that post-dominates all of several predecessors), whose runs are inferred
/// from the graph ([`Blocks::ran`]). A function's blocks are contiguous and in the function's
/// block order (the table's), so a build without pruning numbers them alike.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Blocks {
    pub cfg: Cfg,
    /// Per block, the entry blocks of the functions it calls directly (indirect calls and
    /// functions of other objects have none), as rows of a [`Cfg`].
    pub calls: Cfg,
    /// Per block, its address.
    pub address: Vec<u64>,
    /// Per block, its flag (index in the PC table); `None` for a pruned block.
    pub flag: Vec<Option<u32>>,
    /// Per function, in PC-table order: its blocks `first..first + count`.
    pub functions: Vec<(u32, u32)>,
    /// Per block, its immediate dominator within its function (`u32::MAX`: an entry, or not
    /// reachable from one). Only computed when some block is pruned.
    idom: Vec<u32>,
    /// Per flag (PC-table index), its block ([`NO`] if none): what a test ran is read from
    /// the flags it set, not from every block.
    by_flag: Vec<u32>,
}

impl Blocks {
    /// Reads the control-flow table (`words`, with `relocated` marking words the loader fills
    /// in) for the PC table's blocks at `pcs`, `entry[i]` marking a function's first block.
    ///
    /// Per-address and per-function lists are compressed rows ([`Rows`]) over interned
    /// addresses: a doctest executable has 15,000 blocks and a test binary 50,000, and a list
    /// (or a hash-map entry) per block made this most of reading a binary's blocks.
    pub fn parse(words: &[u64], relocated: &[bool], pcs: &[u64], entry: &[bool]) -> Result<Blocks, CfgError> {
        let functions = PcFunctions::of(pcs.len(), entry);
        let table = Table::read(words, relocated)?;
        let ids = Interned::new(&table, pcs);
        let matched = Matched::new(&table, &ids, &functions, pcs)?;
        let keep = matched.kept_pruned(&table, &ids);
        let (mut out, numbered) = Blocks::number(&functions, &matched, &keep, &table, pcs);
        out.by_flag = numbered.block_of_flag.clone();
        out.cfg = numbered.successors(&table, &ids, &matched, &keep);
        out.calls = out.calls_by_address(&table, &numbered.source);
        if out.flag.iter().any(Option::is_none) {
            out.idom = out.dominators();
        }
        Ok(out)
    }

    /// Numbers the blocks function by function in the function's block order, so a build
    /// without pruning numbers its blocks the same: a function's flagged blocks in PC-table
    /// order, each pruned block it keeps (`keep`) where its record lies among them. Deleted
    /// blocks (no record) keep their place in the PC table's order. Fills in each block's
    /// address and flag, and the functions.
    fn number(
        functions: &PcFunctions,
        matched: &Matched,
        keep: &[bool],
        table: &Table,
        pcs: &[u64],
    ) -> (Blocks, Numbered) {
        let n = pcs.len();
        let starts = &functions.starts;
        let by_function = Rows::group(starts.len(), matched.of_function.iter().copied());
        let mut out = Blocks::default();
        let mut block_of_flag = vec![NO; n];
        let mut block_of_pruned = vec![NO; matched.pruned.len()];
        // Per block, its record (`NO` or `EMPTY`: no successors).
        let mut source: Vec<u32> = Vec::with_capacity(n);
        for (f, &first) in starts.iter().enumerate() {
            let end = starts.get(f + 1).map_or(n as u32, |&e| e);
            let begin = out.address.len() as u32;
            let mut next = first;
            let mut flag_upto = |out: &mut Blocks, source: &mut Vec<u32>, upto: u32| {
                while next < upto {
                    if block_of_flag[next as usize] == NO {
                        block_of_flag[next as usize] = out.address.len() as u32;
                        out.address.push(pcs[next as usize]);
                        out.flag.push(Some(next));
                        source.push(matched.flagged[next as usize]);
                    }
                    next += 1;
                }
            };
            for &rec in by_function.get(f) {
                match Record::of(rec) {
                    Record::Flagged(b) => flag_upto(&mut out, &mut source, b + 1),
                    Record::Pruned(k) if keep[k as usize] => {
                        let r = matched.pruned[k as usize];
                        block_of_pruned[k as usize] = out.address.len() as u32;
                        out.address.push(table.address[r as usize]);
                        out.flag.push(None);
                        source.push(r);
                    }
                    Record::Pruned(_) => {}
                }
            }
            flag_upto(&mut out, &mut source, end);
            out.functions.push((begin, out.address.len() as u32 - begin));
        }
        let numbered = Numbered {
            block_of_flag,
            block_of_pruned,
            source,
        };
        (out, numbered)
    }

    /// Per block, the entry blocks of the functions its record calls. A callee is named by its
    /// function's address, which is its entry block's.
    fn calls_by_address(&self, table: &Table, source: &[u32]) -> Cfg {
        let entry_at: HashMap<u64, u32> = self
            .functions
            .iter()
            .filter(|&&(_, count)| count > 0)
            .map(|&(first, _)| (self.address[first as usize], first))
            .filter(|&(address, _)| address != DELETED)
            .collect();
        Cfg::sorted_rows(source.len(), |b, row| {
            row.extend(
                table
                    .callees(source[b as usize])
                    .iter()
                    .filter_map(|a| entry_at.get(a).copied()),
            );
        })
    }

    /// The calls a test made, given which blocks ran: `(a, entry)` when block `a` calls the
    /// function starting at `entry` and both ran, in order. Which call reached the callee is not
    /// recorded, so a function called from several blocks that ran counts as called by each.
    pub fn calls_taken<'a>(&'a self, ran: &'a RanBlocks) -> impl Iterator<Item = (u32, u32)> + 'a {
        ran.list.iter().flat_map(move |&a| {
            self.calls
                .successors(a)
                .iter()
                .filter(|&&c| ran.flags[c as usize])
                .map(move |&c| (a, c))
        })
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
        let preds = Rows::group(
            self.len(),
            (0..self.len() as u32).flat_map(|b| self.cfg.successors(b).iter().map(move |&s| (s, b))),
        );
        let mut visited = vec![false; self.len()];
        let (mut post, mut stack): (Vec<u32>, Vec<(u32, usize)>) = (Vec::new(), Vec::new());
        for &(first, count) in &self.functions {
            if count == 0 {
                continue;
            }
            let inside = |b: u32| b >= first && b < first + count;
            // Postorder by an explicit DFS from the entry.
            post.clear();
            stack.push((first, 0));
            visited[first as usize] = true;
            while let Some(&mut (b, ref mut next)) = stack.last_mut() {
                let succs = self.cfg.successors(b);
                if let Some(&s) = succs.get(*next) {
                    *next += 1;
                    if inside(s) && !visited[s as usize] {
                        visited[s as usize] = true;
                        stack.push((s, 0));
                    }
                } else {
                    post.push(b);
                    stack.pop();
                }
            }
            post.reverse();
            let rpo = &post;
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
                    for &p in preds.get(b as usize) {
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
        self.ran_set(flags).flags
    }

    /// [`Blocks::ran`], with the blocks that ran also listed (in no particular order): what a
    /// test ran is a small part of a binary, and walking the list instead of every block keeps
    /// decoding a test's edges proportional to what it ran.
    pub fn ran_set(&self, flags: &[bool]) -> RanBlocks {
        let mut ran = vec![false; self.len()];
        let mut list: Vec<u32> = Vec::new();
        let mut work: Vec<u32> = Vec::new();
        for i in set_flags(flags) {
            if let Some(&b) = self.by_flag.get(i).filter(|&&b| b != NO)
                && !ran[b as usize]
            {
                ran[b as usize] = true;
                list.push(b);
                work.push(b);
            }
        }
        if !self.idom.is_empty() {
            let mut walked = vec![false; self.len()];
            while let Some(b) = work.pop() {
                // Every dominator of a block that ran ran too.
                let mut d = b;
                while !walked[d as usize] {
                    walked[d as usize] = true;
                    if !ran[d as usize] {
                        ran[d as usize] = true;
                        list.push(d);
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
                    list.push(*s);
                    work.push(*s);
                }
            }
        }
        RanBlocks { flags: ran, list }
    }
}

/// The blocks one process ran ([`Blocks::ran_set`]).
pub struct RanBlocks {
    /// Per block, whether it ran.
    pub flags: Vec<bool>,
    /// The blocks that ran, in no particular order.
    pub list: Vec<u32>,
}

/// The indices of the set flags, eight at a time past runs of clear ones: a test sets a few
/// hundred of a binary's tens of thousands of flags.
fn set_flags(flags: &[bool]) -> impl Iterator<Item = usize> + '_ {
    flags.chunks(8).enumerate().flat_map(|(k, chunk)| {
        let any = match <[bool; 8]>::try_from(chunk) {
            Ok(eight) => u64::from_ne_bytes(eight.map(u8::from)) != 0,
            Err(_) => chunk.contains(&true),
        };
        chunk
            .iter()
            .enumerate()
            .filter(move |(_, set)| any && **set)
            .map(move |(i, _)| 8 * k + i)
    })
}

/// The blocks as [`Blocks::number`] numbered them.
struct Numbered {
    /// Per flagged block (PC-table index), its block.
    block_of_flag: Vec<u32>,
    /// Per pruned record, its block (`NO`: not kept).
    block_of_pruned: Vec<u32>,
    /// Per block, its record (`NO` or `EMPTY`: no successors).
    source: Vec<u32>,
}

impl Numbered {
    /// Each block's successors. A successor's address is the first block there in layout
    /// order (one with no code of its own falls through to the next), other than the block
    /// itself when it is one of them.
    fn successors(&self, table: &Table, ids: &Interned, matched: &Matched, keep: &[bool]) -> Cfg {
        let at_address = Rows::group(ids.count(), matched.of_address.iter().copied());
        let block_of = |rec: u32| match Record::of(rec) {
            Record::Flagged(b) => Some(self.block_of_flag[b as usize]),
            Record::Pruned(k) => keep[k as usize].then_some(self.block_of_pruned[k as usize]),
        };
        Cfg::sorted_rows(self.source.len(), |from, row| {
            for a in table.successors(self.source[from as usize]) {
                let Some(&id) = ids.ids.get(a) else { continue };
                let mut there = at_address.get(id as usize).iter().filter_map(|&rec| block_of(rec));
                let Some(head) = there.next() else { continue };
                row.push(if head == from {
                    there.next().unwrap_or(head)
                } else {
                    head
                });
            }
        })
    }
}

impl Cfg {
    /// From each block's successors.
    pub fn from_lists(lists: impl IntoIterator<Item = Vec<u32>>) -> Cfg {
        let (mut start, mut targets) = (vec![0], Vec::new());
        for l in lists {
            targets.extend(l);
            start.push(targets.len() as u32);
        }
        Cfg::from_rows(start, targets)
    }

    /// `blocks` rows, each filled by `fill(block, row)`, then sorted and deduplicated.
    fn sorted_rows(blocks: usize, mut fill: impl FnMut(u32, &mut Vec<u32>)) -> Cfg {
        let (mut start, mut targets) = (Vec::with_capacity(blocks + 1), Vec::new());
        start.push(0);
        // One block's row, reused from block to block.
        let mut row: Vec<u32> = Vec::new();
        for b in 0..blocks as u32 {
            row.clear();
            fill(b, &mut row);
            row.sort_unstable();
            row.dedup();
            targets.extend_from_slice(&row);
            start.push(targets.len() as u32);
        }
        Cfg::from_rows(start, targets)
    }

    /// From compressed rows: block `b`'s successors are `targets[start[b]..start[b + 1]]`.
    fn from_rows(start: Vec<u32>, targets: Vec<u32>) -> Cfg {
        let mut cfg = Cfg {
            start,
            targets,
            preds: Vec::new(),
        };
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
    /// `(None, entry)` for the virtual edge into an entry, `(Some(a), b)` otherwise, in order
    /// ([`Cfg::taken_from`] sorted, for the tests).
    #[cfg(test)]
    pub fn taken(&self, ran: &[bool], entry: impl Fn(u32) -> bool) -> Vec<(Option<u32>, u32)> {
        let list: Vec<u32> = (0..self.blocks() as u32).filter(|&a| ran[a as usize]).collect();
        let mut out = self.taken_from(ran, &list, entry);
        out.sort_unstable();
        out
    }

    /// The edges a test took, given which blocks ran (`ran[b]`, and `list`, in any order) and
    /// which start a function: `(None, entry)` for the virtual edge into an entry, `(Some(a), b)`
    /// otherwise, in no particular order (a caller that renumbers the blocks sorts once, after).
    pub fn taken_from(&self, ran: &[bool], list: &[u32], entry: impl Fn(u32) -> bool) -> Vec<(Option<u32>, u32)> {
        let mut out = Vec::new();
        // Unwind edges into a landing pad that ran, not yet explained: (pad, from).
        let mut unsure: Vec<(u32, u32)> = Vec::new();
        let mut explained: Vec<u32> = Vec::new();
        for &a in list {
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
    fn calls_lead_to_the_callees_entry_blocks() {
        // f: 0x10 → 0x20; g: 0x40. f's 0x10 calls g, itself, an indirect target (-1) and a
        // library function (0, relocated); g's 0x40 calls f.
        let pcs = [0x10, 0x20, 0x40];
        // One record per block: its address, successors, 0, callees, 0.
        let words: Vec<u64> = [
            &[0x10, 0x20, 0, 0x40, 0x10, u64::MAX, 0, 0][..],
            &[0x20, 0, 0],
            &[0x40, 0, 0x10, 0],
        ]
        .concat();
        let mut relocated = [false; 15];
        relocated[6] = true;
        let b = Blocks::parse(&words, &relocated, &pcs, &[true, false, true]).unwrap();
        assert_eq!(b.calls.successors(0), &[0, 2]);
        assert!(b.calls.successors(1).is_empty());
        assert_eq!(b.calls.successors(2), &[0]);
        // A call counts when the caller and the callee's entry both ran.
        let taken = |flags: &[bool]| {
            let mut calls = b.calls_taken(&b.ran_set(flags)).collect::<Vec<_>>();
            calls.sort_unstable();
            calls
        };
        assert_eq!(taken(&[true, true, true]), vec![(0, 0), (0, 2), (2, 0)]);
        assert_eq!(taken(&[true, true, false]), vec![(0, 0)]);
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
    fn the_list_of_blocks_that_ran_is_the_flags_in_order() {
        let b = pruned();
        for flags in [
            [true, true, false],
            [true, false, false],
            [false, false, true],
            [false; 3],
        ] {
            let mut ran = b.ran_set(&flags);
            let listed: Vec<u32> = (0..5).filter(|&i| ran.flags[i as usize]).collect();
            ran.list.sort_unstable();
            assert_eq!(ran.list, listed, "flags {flags:?}");
        }
    }

    #[test]
    fn set_flags_are_found_past_runs_of_clear_ones() {
        let mut flags = vec![false; 70];
        for i in [0, 7, 8, 63, 64, 69] {
            flags[i] = true;
        }
        assert_eq!(set_flags(&flags).collect::<Vec<_>>(), [0, 7, 8, 63, 64, 69]);
        assert_eq!(set_flags(&[false; 13]).count(), 0);
        assert_eq!(set_flags(&[]).count(), 0);
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
