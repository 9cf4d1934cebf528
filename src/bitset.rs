//! A fixed-size set of small integers (test indices), stored as 64-bit words: the columns of
//! the coverage matrix and of the edge profiles; and the hex form rows and digests are saved in.

/// Bytes as lowercase hex, two digits each.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A fixed-size set of test indices.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BitSet {
    words: Vec<u64>,
}

impl BitSet {
    pub fn new(len: usize) -> Self {
        BitSet {
            words: vec![0; len.div_ceil(64)],
        }
    }
    pub fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }
    pub fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1u64 << (i % 64));
    }

    pub fn contains(&self, i: usize) -> bool {
        self.words.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
    /// Number of members also in `mask`.
    pub fn count_and(&self, mask: &BitSet) -> u32 {
        self.words
            .iter()
            .zip(&mask.words)
            .map(|(a, b)| (a & b).count_ones())
            .sum()
    }
    /// Adds every member of `other` (a set over the same members).
    pub fn union_with(&mut self, other: &BitSet) {
        for (w, x) in self.words.iter_mut().zip(&other.words) {
            *w |= x;
        }
    }
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    /// A set over `len` members from raw words (bits at or past `len` must be clear).
    pub fn from_words(len: usize, words: Vec<u64>) -> Self {
        assert_eq!(words.len(), len.div_ceil(64), "word count does not match the length");
        BitSet { words }
    }
    /// The raw 64-bit words (bit i of word j = member 64j + i).
    pub fn words(&self) -> &[u64] {
        &self.words
    }
    /// Members that are also in `mask`, in increasing order.
    pub fn ones_and<'a>(&'a self, mask: &'a BitSet) -> impl Iterator<Item = usize> + 'a {
        self.words.iter().zip(&mask.words).enumerate().flat_map(|(j, (a, b))| {
            let mut w = a & b;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let bit = w.trailing_zeros() as usize;
                    w &= w - 1;
                    64 * j + bit
                })
            })
        })
    }
    /// Members, in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.ones_and(self)
    }
    /// Little-endian bytes as lowercase hex, trailing zero bytes dropped.
    pub(crate) fn to_hex(&self) -> String {
        let mut bytes: Vec<u8> = self.words.iter().flat_map(|w| w.to_le_bytes()).collect();
        while bytes.last() == Some(&0) {
            bytes.pop();
        }
        hex(&bytes)
    }
    pub(crate) fn from_hex(s: &str, len: usize) -> Option<Self> {
        if !s.len().is_multiple_of(2) || s.len() / 2 > len.div_ceil(64) * 8 {
            return None;
        }
        let mut set = BitSet::new(len);
        for (i, pair) in s.as_bytes().chunks(2).enumerate() {
            // `from_str_radix` alone would take "+1" for 01.
            if !pair.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            let byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
            set.words[i / 8] |= u64::from(byte) << (8 * (i % 8));
        }
        // No bit may name a test that does not exist.
        (0..len.div_ceil(64) * 64)
            .filter(|&i| i >= len)
            .all(|i| !set.contains(i))
            .then_some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitsets_count_intersections_across_words() {
        let mut a = BitSet::new(130);
        let mut m = BitSet::new(130);
        for i in [0, 63, 64, 129] {
            a.insert(i);
        }
        for i in [63, 129, 5] {
            m.insert(i);
        }
        assert_eq!(a.count_and(&m), 2);
        assert!(a.contains(129) && !a.contains(128));
    }

    #[test]
    fn hex_round_trips_and_refuses_members_past_the_end() {
        let mut a = BitSet::new(70);
        a.insert(3);
        a.insert(69);
        let mut b = BitSet::new(70);
        b.union_with(&a);
        assert_eq!(BitSet::from_hex(&b.to_hex(), 70), Some(a));
        assert_eq!(BitSet::from_hex("ff", 3), None);
    }

    /// Found reviewing the spectra decoder for the fuzzer (not a panic, so the fuzzer cannot
    /// see it): a sign is not a hex digit.
    #[test]
    fn hex_with_signs_is_refused() {
        assert_eq!(BitSet::from_hex("+1", 8), None);
        assert_eq!(BitSet::from_hex("0+", 8), None);
        assert_eq!(BitSet::from_hex("01", 8).map(|b| b.contains(0)), Some(true));
    }
}
