//! The mutations the fuzzer applies to seed inputs: generic byte-level ones (bit flips, byte
//! insert/delete/duplicate, splices, interesting integers at aligned offsets, truncation) and
//! the format-aware building blocks the targets combine (LEB128 fields, JSON and TOML values,
//! text lines and cells), all driven by one seeded generator so a run is reproducible.

/// SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): tiny, fast, and good enough to pick mutations; never used for anything secret.
#[derive(Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`); the modulo bias is irrelevant here.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Values that sit on the edges decoders get wrong: zero, one, sign and width boundaries, and
/// sizes large enough that trusting them would allocate or index far past any input.
const INTERESTING: &[u64] = &[
    0,
    1,
    2,
    7,
    8,
    0x7f,
    0x80,
    0xff,
    0x100,
    0x7fff,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x1_0000_0000,
    1 << 40,
    1 << 60,
    i64::MAX as u64,
    1 << 63,
    u64::MAX - 7,
    u64::MAX,
];

/// An interesting value, or one near `near` (a length or count of the input itself).
pub fn interesting(rng: &mut Rng, near: u64) -> u64 {
    match rng.below(4) {
        0 => near.wrapping_add(rng.below(17) as u64).wrapping_sub(8),
        1 => rng.next() >> rng.below(64),
        _ => *rng.pick(INTERESTING),
    }
}

/// Reads a little-endian u64 at `at` (`None` past the end).
pub fn read_u64(data: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(data.get(at..at.checked_add(8)?)?.try_into().ok()?))
}

/// Writes the low `width` bytes of `v` little-endian at `at`, if they fit.
pub fn write_le(data: &mut [u8], at: usize, width: usize, v: u64) {
    if let Some(dst) = at.checked_add(width).and_then(|end| data.get_mut(at..end)) {
        dst.copy_from_slice(&v.to_le_bytes()[..width]);
    }
}

/// One generic byte-level mutation of `data`; `other` is another input to splice from.
pub fn bytes(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    let len = data.len();
    match rng.below(11) {
        0 if len > 0 => {
            let i = rng.below(len);
            data[i] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let i = rng.below(len);
            data[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff, b'0', b'"', b'\n', b' ']);
        }
        2 | 3 if len >= 4 => {
            // An interesting integer at an aligned offset: where headers keep their fields.
            let width = *rng.pick(&[4usize, 8]);
            let at = rng.below(len / width) * width;
            let v = interesting(rng, len as u64);
            write_le(data, at, width, v);
        }
        4 if len >= 4 => {
            let width = *rng.pick(&[4usize, 8]);
            let at = rng.below(len / width) * width;
            let mut buf = [0u8; 8];
            buf[..width.min(len - at)].copy_from_slice(&data[at..(at + width).min(len)]);
            let delta = rng.below(33) as u64;
            let v = if rng.one_in(2) {
                u64::from_le_bytes(buf).wrapping_add(delta)
            } else {
                u64::from_le_bytes(buf).wrapping_sub(delta)
            };
            write_le(data, at, width, v);
        }
        5 => {
            let at = rng.below(len + 1);
            let n = 1 + rng.below(16);
            let fill: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            data.splice(at..at, fill);
        }
        6 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(64));
            data.drain(at..at + n);
        }
        7 if len > 0 => {
            // Duplicate a range (repeated records, repeated fields).
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(128));
            let copy = data[at..at + n].to_vec();
            let to = rng.below(len + 1);
            data.splice(to..to, copy);
        }
        8 if !other.is_empty() => {
            let from = rng.below(other.len());
            let n = 1 + rng.below((other.len() - from).min(256));
            let at = rng.below(len + 1);
            let end = (at + n).min(len);
            data.splice(at..end, other[from..from + n].iter().copied());
        }
        9 if len > 0 => data.truncate(rng.below(len)),
        _ => {
            if len > 0 {
                let i = rng.below(len);
                data[i] = data[i].wrapping_add(1);
            }
        }
    }
}

/// Encodes `v` as unsigned LEB128.
pub fn uleb(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// Replaces one LEB128 number in `data` (a byte that starts one: the first, or one after a
/// byte without the continuation bit) with another value, changing its length as needed.
pub fn leb_field(rng: &mut Rng, data: &mut Vec<u8>) {
    if data.is_empty() {
        return;
    }
    let starts: Vec<usize> = (0..data.len()).filter(|&i| i == 0 || data[i - 1] & 0x80 == 0).collect();
    let at = *rng.pick(&starts);
    let mut end = at;
    while end < data.len() && data[end] & 0x80 != 0 {
        end += 1;
    }
    let end = (end + 1).min(data.len());
    let mut old = 0u64;
    for (k, b) in data[at..end].iter().enumerate().take(9) {
        old |= u64::from(b & 0x7f) << (7 * k);
    }
    let v = match rng.below(3) {
        0 => old ^ (1 << rng.below(8)),
        1 => old.wrapping_add(rng.below(5) as u64).wrapping_sub(2),
        _ => interesting(rng, old),
    };
    let mut enc = Vec::new();
    uleb(v, &mut enc);
    data.splice(at..end, enc);
}

/// One mutation of a JSON document: a value somewhere in it (never the whole document)
/// replaced, removed or repeated.
pub fn json_value(rng: &mut Rng, doc: &mut serde_json::Value) {
    json_at(rng, doc, 0);
}

fn json_at(rng: &mut Rng, node: &mut serde_json::Value, depth: usize) {
    use serde_json::Value;
    // Walk to a random node, preferring to go deeper.
    let go_deeper = depth == 0 || !rng.one_in(4);
    match node {
        Value::Array(a) if go_deeper && !a.is_empty() => {
            let i = rng.below(a.len());
            match rng.below(8) {
                0 => {
                    a.remove(i);
                }
                1 => {
                    let copy = a[i].clone();
                    a.insert(rng.below(a.len() + 1), copy);
                }
                _ => json_at(rng, &mut a[i], depth + 1),
            }
            return;
        }
        Value::Object(o) if go_deeper && !o.is_empty() => {
            let key = o.keys().nth(rng.below(o.len())).cloned().unwrap_or_default();
            if rng.one_in(8) {
                o.remove(&key);
            } else if let Some(v) = o.get_mut(&key) {
                json_at(rng, v, depth + 1);
            }
            return;
        }
        _ => {}
    }
    *node = match node {
        Value::Number(n) => {
            let near = n.as_u64().unwrap_or(1);
            match rng.below(6) {
                0 => Value::from(-(rng.below(3) as i64) - 1),
                1 => serde_json::Number::from_f64(*rng.pick(&[0.5, 1e300, -0.0, 4294967296.5]))
                    .map_or(Value::Null, Value::Number),
                _ => Value::from(interesting(rng, near)),
            }
        }
        Value::String(s) => Value::String(string_variant(rng, s)),
        Value::Array(_) => Value::Array(Vec::new()),
        _ => rng
            .pick(&[
                Value::Null,
                Value::Bool(true),
                Value::from(0),
                Value::from(""),
                Value::Array(vec![]),
            ])
            .clone(),
    };
}

/// A string a decoder may not expect where `s` was: other lengths, hex digits, path tricks.
pub fn string_variant(rng: &mut Rng, s: &str) -> String {
    match rng.below(9) {
        0 => String::new(),
        1 => format!("{s}{s}"),
        2 => s.chars().take(rng.below(s.chars().count() + 1)).collect(),
        3 => "../../etc/passwd".into(),
        4 => "/etc/shadow".into(),
        5 => format!("{s}0"),
        6 => "ff".repeat(1 + rng.below(40)),
        7 => "+1-f\u{e9}\u{0}".into(),
        _ => {
            let mut b = s.as_bytes().to_vec();
            if !b.is_empty() {
                let i = rng.below(b.len());
                b[i] = *rng.pick(b"0fgz/.:\n");
            }
            String::from_utf8_lossy(&b).into_owned()
        }
    }
}

/// One mutation of a line-oriented text: a line removed, repeated, swapped or edited (a cell
/// changed, added or removed).
pub fn lines(rng: &mut Rng, text: &mut Vec<u8>) {
    let s = String::from_utf8_lossy(text).into_owned();
    let mut lines: Vec<String> = s.lines().map(String::from).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    let i = rng.below(lines.len());
    match rng.below(6) {
        0 => {
            lines.remove(i);
        }
        1 => {
            let copy = lines[i].clone();
            lines.insert(rng.below(lines.len() + 1), copy);
        }
        2 => {
            let j = rng.below(lines.len());
            lines.swap(i, j);
        }
        _ => {
            let sep = if lines[i].contains(',') { ',' } else { ' ' };
            let mut cells: Vec<String> = lines[i].split(sep).map(String::from).collect();
            let c = rng.below(cells.len());
            match rng.below(4) {
                0 => {
                    cells.remove(c);
                }
                1 => cells.insert(c, rng.pick(&["0", "1", "+", "-", "", "2"]).to_string()),
                _ => {
                    cells[c] = rng
                        .pick(&["0", "1", "+", "-", "x", "", "name", "\u{feff}1", "01"])
                        .to_string()
                }
            }
            lines[i] = cells.join(&sep.to_string());
        }
    }
    let mut out = lines.join("\n");
    if !rng.one_in(4) {
        out.push('\n');
    }
    *text = out.into_bytes();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_is_deterministic_and_spread() {
        let a: Vec<u64> = (0..4).scan(Rng::new(7), |r, _| Some(r.next())).collect();
        let b: Vec<u64> = (0..4).scan(Rng::new(7), |r, _| Some(r.next())).collect();
        assert_eq!(a, b);
        let mut r = Rng::new(1);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            seen[r.below(10)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }

    #[test]
    fn leb_fields_are_replaced_whole() {
        let mut enc = Vec::new();
        uleb(624_485, &mut enc);
        assert_eq!(enc, [0xe5, 0x8e, 0x26]);
        // A buffer of one-byte LEBs stays a sequence of complete LEBs after a replacement.
        let mut data = vec![1, 2, 3, 4];
        let mut rng = Rng::new(3);
        for _ in 0..50 {
            leb_field(&mut rng, &mut data);
            assert_eq!(data.last().map(|b| b & 0x80), Some(0), "{data:?}");
        }
    }

    #[test]
    fn line_mutations_keep_text_and_change_it() {
        let mut rng = Rng::new(5);
        let orig = b"1 0 -\n0 1 +\n".to_vec();
        let changed = (0..20).any(|_| {
            let mut t = orig.clone();
            lines(&mut rng, &mut t);
            t != orig
        });
        assert!(changed);
    }
}
