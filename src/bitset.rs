//! A fixed-size set of small integers (test indices), stored as 64-bit words: the columns of
//! the coverage matrix and of the edge profiles; and the hex form rows and digests are saved in.

/// Bytes as lowercase hex, two digits each.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 * bytes.len());
    for &b in bytes {
        s.push(char::from(DIGITS[usize::from(b >> 4)]));
        s.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    s
}

/// The value of one lowercase or uppercase hex digit (no signs, no spaces).
fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
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
            let byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
            set.words[i / 8] |= u64::from(byte) << (8 * (i % 8));
        }
        // No bit may name a test that does not exist.
        let past_end = match len % 64 {
            0 => 0,
            used => !0u64 << used,
        };
        set.words.last().is_none_or(|&w| w & past_end == 0).then_some(set)
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
