//! SanitizerCoverage's control-flow table, read for one binary: its records ([`Table`]), their
//! addresses interned ([`Interned`]), and each record matched to the block it describes
//! ([`Matched`]): a flagged block of the PC table, or a block pruning left without a flag.
//! [`super::cfg::Blocks`] numbers the blocks from them.

use rustc_hash::FxHashMap as HashMap;

/// The address LLVM gives a block it deleted after taking its address (`blockaddress` of a
/// deleted block becomes `inttoptr 1`): such a block never runs and has no record.
pub const DELETED: u64 = 1;

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
pub(super) enum Record {
    Flagged(u32),
    Pruned(u32),
}

/// No such record or block.
pub(super) const NO: u32 = u32::MAX;
/// A deleted flagged block's record: it has no successors.
pub(super) const EMPTY: u32 = u32::MAX - 1;

impl Record {
    /// The high bit marks a pruned record in [`Rows`], which hold plain `u32`s.
    const PRUNED: u32 = 1 << 31;

    fn flagged(b: u32) -> u32 {
        b
    }

    fn pruned(k: u32) -> u32 {
        k | Record::PRUNED
    }

    pub(super) fn of(v: u32) -> Record {
        if v & Record::PRUNED != 0 {
            Record::Pruned(v & !Record::PRUNED)
        } else {
            Record::Flagged(v)
        }
    }
}

/// Values grouped by a dense key in compressed rows: key `k`'s values are
/// `values[start[k]..start[k + 1]]`, in the order they were given.
pub(super) struct Rows {
    start: Vec<u32>,
    values: Vec<u32>,
}

impl Rows {
    /// Groups `(key, value)` pairs (keys below `keys`), keeping each key's values in order.
    pub(super) fn group(keys: usize, pairs: impl Iterator<Item = (u32, u32)> + Clone) -> Rows {
        let mut start = vec![0u32; keys + 1];
        for (k, _) in pairs.clone() {
            start[k as usize + 1] += 1;
        }
        for k in 0..keys {
            start[k + 1] += start[k];
        }
        let mut fill = start.clone();
        let mut values = vec![0u32; start[keys] as usize];
        for (k, v) in pairs {
            values[fill[k as usize] as usize] = v;
            fill[k as usize] += 1;
        }
        Rows { start, values }
    }

    pub(super) fn get(&self, k: usize) -> &[u32] {
        &self.values[self.start[k] as usize..self.start[k + 1] as usize]
    }
}

/// The PC table's functions: each entry starts one.
pub(super) struct PcFunctions {
    /// Per PC-table block, its function.
    function_of: Vec<u32>,
    /// Per function, its first PC-table block.
    pub(super) starts: Vec<u32>,
}

impl PcFunctions {
    /// The functions of `n` blocks, `entry[i]` marking a function's first block (the first
    /// block starts one in any case).
    pub(super) fn of(n: usize, entry: &[bool]) -> PcFunctions {
        let mut function_of = vec![0u32; n];
        let mut starts: Vec<u32> = Vec::new();
        for (i, f) in function_of.iter_mut().enumerate() {
            if entry.get(i).copied().unwrap_or(false) || starts.is_empty() {
                starts.push(i as u32);
            }
            *f = starts.len() as u32 - 1;
        }
        PcFunctions { function_of, starts }
    }
}

/// The control-flow table's records: record `r` is at `address[r]`, its successors' addresses
/// are `succ[succ_start[r]..succ_start[r + 1]]`, and likewise the callees' addresses are
/// `callee[callee_start[r]..callee_start[r + 1]]`.
pub(super) struct Table {
    pub(super) address: Vec<u64>,
    succ_start: Vec<u32>,
    succ: Vec<u64>,
    callee_start: Vec<u32>,
    callee: Vec<u64>,
}

impl Table {
    /// Splits the table's words into records (`relocated` marks the words the loader fills in,
    /// which are never a record's null).
    pub(super) fn read(words: &[u64], relocated: &[bool]) -> Result<Table, CfgError> {
        let is_end = |i: usize| words[i] == 0 && !relocated.get(i).copied().unwrap_or(false);
        let mut table = Table {
            address: Vec::new(),
            succ_start: vec![0],
            succ: Vec::new(),
            callee_start: vec![0],
            callee: Vec::new(),
        };
        let mut i = 0;
        while i < words.len() {
            table.address.push(words[i]);
            i += 1;
            while i < words.len() && !is_end(i) {
                table.succ.push(words[i]);
                i += 1;
            }
            // The successors' null, the callees, and theirs.
            i += 1;
            while i < words.len() && !is_end(i) {
                table.callee.push(words[i]);
                i += 1;
            }
            if i >= words.len() {
                return Err(CfgError::Truncated);
            }
            i += 1;
            table.succ_start.push(table.succ.len() as u32);
            table.callee_start.push(table.callee.len() as u32);
        }
        Ok(table)
    }

    pub(super) fn len(&self) -> usize {
        self.address.len()
    }

    /// Record `r`'s successors' addresses. `NO` and `EMPTY` (no record, a deleted block) have
    /// no successors.
    pub(super) fn successors(&self, r: u32) -> &[u64] {
        match r {
            NO | EMPTY => &[][..],
            r => &self.succ[self.succ_start[r as usize] as usize..self.succ_start[r as usize + 1] as usize],
        }
    }

    /// Record `r`'s callees' addresses. `NO` and `EMPTY` call nothing.
    pub(super) fn callees(&self, r: u32) -> &[u64] {
        match r {
            NO | EMPTY => &[][..],
            r => &self.callee[self.callee_start[r as usize] as usize..self.callee_start[r as usize + 1] as usize],
        }
    }
}

/// Addresses interned: the records' and the flagged blocks'.
pub(super) struct Interned {
    pub(super) ids: HashMap<u64, u32>,
    /// Per record, its address's id.
    record: Vec<u32>,
    /// Per PC-table block, its address's id (`NO` for a deleted block).
    pc: Vec<u32>,
}

impl Interned {
    pub(super) fn new(table: &Table, pcs: &[u64]) -> Interned {
        let mut ids: HashMap<u64, u32> = HashMap::default();
        ids.reserve(table.len());
        let mut intern = |a: u64| {
            let next = ids.len() as u32;
            *ids.entry(a).or_insert(next)
        };
        let record: Vec<u32> = table.address.iter().map(|&a| intern(a)).collect();
        let pc: Vec<u32> = pcs
            .iter()
            .map(|&pc| if pc == DELETED { NO } else { intern(pc) })
            .collect();
        Interned { ids, record, pc }
    }

    /// Number of distinct addresses.
    pub(super) fn count(&self) -> usize {
        self.ids.len()
    }
}

/// The records matched to the blocks they describe.
pub(super) struct Matched {
    /// Per flagged block, its record (`NO`: none; `EMPTY`: deleted, no successors).
    pub(super) flagged: Vec<u32>,
    /// Unflagged blocks: their records.
    pub(super) pruned: Vec<u32>,
    /// Records as `(function, record)` in the table's order ([`Record`] encoded).
    pub(super) of_function: Vec<(u32, u32)>,
    /// Records as `(address, record)` in the table's order.
    pub(super) of_address: Vec<(u32, u32)>,
}

impl Matched {
    /// Matches each record to a flagged block at its address, or takes it for a pruned block;
    /// every flagged block that is not deleted must get one (`CfgError::Missing`).
    pub(super) fn new(
        table: &Table,
        ids: &Interned,
        functions: &PcFunctions,
        pcs: &[u64],
    ) -> Result<Matched, CfgError> {
        let n = pcs.len();
        let function_of = &functions.function_of;
        let at_pc = flagged_by_address(ids);
        let mut surplus = surplus_records(ids, &at_pc);
        let deleted = deleted_by_function(functions, pcs);
        // Per function, how many of its deleted flagged blocks are placed.
        let mut taken_deleted = vec![0u32; functions.starts.len()];
        // Per address, how many of its flagged blocks have a record.
        let mut seen = vec![0u32; ids.count()];
        let mut m = Matched {
            flagged: vec![NO; n],
            pruned: Vec::new(),
            of_function: Vec::new(),
            of_address: Vec::new(),
        };
        let mut current: Option<u32> = None;
        for r in 0..table.len() as u32 {
            let address = table.address[r as usize];
            if address == DELETED {
                // A deleted flagged block keeps its place in the function (the function's
                // deleted blocks in order); a deleted block without a flag is no block.
                if let Some(f) = current
                    && let Some(&b) = deleted.get(f as usize).get(taken_deleted[f as usize] as usize)
                {
                    taken_deleted[f as usize] += 1;
                    m.flagged[b as usize] = EMPTY;
                    m.of_function.push((f, Record::flagged(b)));
                }
                continue;
            }
            let id = ids.record[r as usize];
            let falls_through = table.successors(r) == [address];
            let block = if surplus[id as usize] > 0 && falls_through {
                surplus[id as usize] -= 1;
                None
            } else {
                seen[id as usize] += 1;
                at_pc.get(id as usize).get(seen[id as usize] as usize - 1).copied()
            };
            match block {
                Some(b) => {
                    // A function's records are contiguous: the flagged ones say whose they are.
                    let f = function_of[b as usize];
                    current = Some(f);
                    if m.flagged[b as usize] == NO {
                        m.flagged[b as usize] = r;
                        m.of_function.push((f, Record::flagged(b)));
                        m.of_address.push((id, Record::flagged(b)));
                    }
                }
                None => {
                    if let Some(f) = current {
                        let k = Record::pruned(m.pruned.len() as u32);
                        m.of_function.push((f, k));
                        m.of_address.push((id, k));
                        m.pruned.push(r);
                    }
                }
            }
        }
        m.all_flagged_matched(pcs)?;
        Ok(m)
    }

    /// Every flagged block that is not deleted has a record.
    fn all_flagged_matched(&self, pcs: &[u64]) -> Result<(), CfgError> {
        let missing = self
            .flagged
            .iter()
            .zip(pcs)
            .filter(|(r, pc)| **r == NO && **pc != DELETED)
            .count();
        match missing {
            0 => Ok(()),
            missing => Err(CfgError::Missing(missing)),
        }
    }

    /// Per pruned record, whether it is a block. An unflagged block with no successor that is
    /// no block's only successor was not pruned: it starts with `unreachable` and never runs
    /// (and without pruning it is no block either). Edges into it are left out.
    pub(super) fn kept_pruned(&self, table: &Table, ids: &Interned) -> Vec<bool> {
        let mut only_successor = vec![false; ids.count()];
        for &r in self.flagged.iter().chain(&self.pruned) {
            if let [a] = table.successors(r)
                && let Some(&id) = ids.ids.get(a)
            {
                only_successor[id as usize] = true;
            }
        }
        self.pruned
            .iter()
            .map(|&r| !table.successors(r).is_empty() || only_successor[ids.record[r as usize] as usize])
            .collect()
    }
}

/// Flagged blocks by address. In an optimised build two blocks can end up at one address (the
/// code of one was merged away); their records come in the PC table's order, and a successor at
/// such an address is taken to be the first of them.
fn flagged_by_address(ids: &Interned) -> Rows {
    Rows::group(
        ids.count(),
        ids.pc
            .iter()
            .enumerate()
            .filter(|(_, id)| **id != NO)
            .map(|(b, &id)| (id, b as u32)),
    )
}

/// Per address, how many more records it has than flagged blocks (`at_pc`). A pruned block
/// with no code of its own (it only falls through) shares its address with the block after it.
/// Where an address has more records than flagged blocks, such a record (its only successor is
/// its own address) is the pruned one.
fn surplus_records(ids: &Interned, at_pc: &Rows) -> Vec<u32> {
    let mut surplus = vec![0u32; ids.count()];
    for &id in &ids.record {
        surplus[id as usize] += 1;
    }
    for (id, extra) in surplus.iter_mut().enumerate() {
        *extra = extra.saturating_sub(at_pc.get(id).len() as u32);
    }
    surplus
}

/// Per function, its deleted flagged blocks (no address, no record of their own but a record at
/// the deleted address, in order).
fn deleted_by_function(functions: &PcFunctions, pcs: &[u64]) -> Rows {
    Rows::group(
        functions.starts.len(),
        (0..pcs.len() as u32)
            .filter(|&b| pcs[b as usize] == DELETED)
            .map(|b| (functions.function_of[b as usize], b)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_keep_each_keys_values_in_the_order_given() {
        let r = Rows::group(3, [(2, 7), (0, 1), (2, 5), (0, 4)].into_iter());
        assert_eq!(r.get(0), &[1, 4]);
        assert!(r.get(1).is_empty());
        assert_eq!(r.get(2), &[7, 5]);
    }
}
