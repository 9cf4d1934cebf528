//! One line's evidence: what its text says (its kind, whether it operates) and the record that
//! orders the lines of one ambiguity group ([`LineEvidence`]). Nothing here reads the matrix.

/// How the lines of one entry are ordered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TieBreak {
    /// They tie (every spectrum measure's own order).
    Code,
    /// By [`LineEvidence`]: stack evidence, nearness above an operation panic, line kind, the size of the
    /// line's function, then whether the line operates. The default; `bench-results/` has what
    /// each part gained.
    #[default]
    Evidence,
}

/// Whether a line can hold a fault of its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LineKind {
    /// Opens or closes a block, declares an item, or is an attribute or comment.
    Structural,
    /// Anything else: it computes, decides, calls, assigns or returns. Also lines whose
    /// source cannot be read (no evidence either way).
    #[default]
    Behavioural,
}

/// What orders lines of one ambiguity group: compared field by field, higher first.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct LineEvidence {
    /// Σ over failing tests of `1 / (1 + depth)` of this line on the test's backtrace.
    pub stack: f64,
    /// `1 / (1 + d)` for a line `d` lines above an operation panic in its function, run by the
    /// test that panicked (`operation_panic_reach`); 0 for the others.
    pub near: f64,
    pub kind: LineKind,
    /// `1 / n` for a line of a function with `n` ranked lines (each function equally likely
    /// to hold the fault); 0 for a line in no known function.
    pub prior: f64,
    /// The line compares, computes, indexes or assigns with an operator ([`operates`]).
    pub operates: bool,
}

impl LineEvidence {
    /// No evidence: what every entry's key carries (only lines' keys carry their own).
    pub const NONE: LineEvidence = LineEvidence {
        stack: 0.0,
        near: 0.0,
        kind: LineKind::Behavioural,
        prior: 0.0,
        operates: false,
    };

    /// A total order, most evidence first: stack weight, nearness above an operation panic,
    /// kind, prior, then operates.
    pub fn cmp_descending(&self, other: &LineEvidence) -> std::cmp::Ordering {
        other
            .stack
            .total_cmp(&self.stack)
            .then_with(|| other.near.total_cmp(&self.near))
            .then_with(|| other.kind.cmp(&self.kind))
            .then_with(|| other.prior.total_cmp(&self.prior))
            .then_with(|| other.operates.cmp(&self.operates))
    }
}

/// Classifies one line of Rust source by its text.
pub fn line_kind(text: &str) -> LineKind {
    let t = text.trim();
    let code = t.split("//").next().unwrap_or("").trim();
    if code.is_empty() || code.starts_with("#[") || code.starts_with("#![") {
        return LineKind::Structural;
    }
    // Only punctuation: `}`, `{`, `});`, `} else {`, `]`, `),`.
    let without_else = code.replace("else", "");
    if without_else
        .chars()
        .all(|c| c.is_whitespace() || "{}()[];,".contains(c))
    {
        return LineKind::Structural;
    }
    let declaration = code
        .split_whitespace()
        .find(|w| {
            !(matches!(*w, "pub" | "const" | "async" | "unsafe" | "extern" | "default")
                || w.starts_with("pub(")
                || w.starts_with('"'))
        })
        .map(|w| w.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or(""))
        .is_some_and(|w| matches!(w, "fn" | "impl" | "mod" | "struct" | "enum" | "trait" | "use" | "where"));
    // A declaration with its body on the same line (`fn f() -> u8 { 0 }`, as cargo-mutants
    // writes a replaced body) computes something.
    let body_inline = code
        .split_once('{')
        .is_some_and(|(_, rest)| rest.chars().any(|c| !c.is_whitespace() && c != '}'));
    if declaration && !body_inline {
        LineKind::Structural
    } else {
        LineKind::Behavioural
    }
}

/// Whether one line of Rust source operates: a comparison (`==`, `<=`, ` < `), a logical,
/// arithmetic, shift or bitwise operator between operands, a compound assignment (`+=`), a
/// negation (`!x`, `-x`) or an index (`v[i]`). Comments, string and char literals, arrows
/// (`->`, `=>`), references (`&x`), derefs (`*x`), generics (`Vec<u8>`), slice types (`&[u8]`),
/// macros (`vec![…]`, `assert!(…)`) and closures' bars do not count.
pub fn operates(text: &str) -> bool {
    let code = without_literals(text);
    let b = code.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(b' ');
    let operand = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b')' || c == b']';
    // Between operands: `a && b`, not `&&str` or a closure's `|| x` (after `(`, `,` or `move`).
    let infix =
        |i: usize| at(i.wrapping_sub(1)) == b' ' && operand(at(i.wrapping_sub(2))) && !code[..i].ends_with("move ");
    (0..b.len()).any(|i| {
        let prev = if i == 0 { b' ' } else { b[i - 1] };
        match [b[i], at(i + 1)] {
            [b'=' | b'!' | b'<' | b'>', b'='] => true,
            [b'&', b'&'] | [b'|', b'|'] | [b'<', b'<'] | [b'>', b'>'] => infix(i),
            // A compound assignment: `+=`, `-=`, `*=`, `/=`, `%=`, `&=`, `|=`, `^=`.
            [b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^', b'='] => true,
            // A binary operator between spaces: `a + b`, `x < y`, `m & MASK`.
            [
                b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^' | b'<' | b'>',
                b' ',
            ] => prev == b' ',
            // A negation: `!x`, `!(…)`, `-x`, `-(…)` where an operand starts (not `name!(…)`).
            [b'!' | b'-', n] => {
                let starts_operand = matches!(prev, b'(' | b'=' | b',' | b'[' | b' ' | b'{') && !operand(prev);
                let before = code[..i].trim_end();
                let word = before
                    .rsplit(|c: char| !c.is_alphanumeric() && c != '_')
                    .next()
                    .unwrap_or("");
                (n.is_ascii_alphanumeric() || n == b'(' || n == b'_')
                    && starts_operand
                    && (!before.bytes().last().is_some_and(operand)
                        || matches!(word, "if" | "while" | "return" | "match" | "in" | "else"))
            }
            // An index: `v[i]`, `f()[0]`, `m[i][j]`; not `&[u8]`, `vec![…]` or `#[attr]`.
            [b'[', _] => operand(prev),
            _ => false,
        }
    })
}

/// The code of one line: no comment, string literals emptied (`""`), char literals `' '`.
fn without_literals(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'/') => break,
            '"' => {
                out.push_str("\"\"");
                let mut escaped = false;
                for d in chars.by_ref() {
                    if d == '"' && !escaped {
                        break;
                    }
                    escaped = d == '\\' && !escaped;
                }
            }
            // A char literal ('x', '\n', '\''), not a lifetime ('a).
            '\'' => {
                let rest: String = chars.clone().take(4).collect();
                let len = if rest.starts_with('\\') {
                    rest.find('\'').filter(|&k| k >= 2).map(|k| k + 1)
                } else {
                    (rest.chars().nth(1) == Some('\'')).then(|| rest.chars().next().map_or(1, char::len_utf8) + 1)
                };
                match len {
                    Some(n) => {
                        out.push_str("' '");
                        for _ in 0..rest[..n].chars().count() {
                            chars.next();
                        }
                    }
                    None => out.push(c),
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// What a line's text says about it: its kind and whether it operates. A line without text
/// (an unreadable file, an imported unit) is behavioural and does not operate.
pub fn read_line(text: Option<&str>) -> (LineKind, bool) {
    (
        text.map_or(LineKind::Behavioural, line_kind),
        text.is_some_and(operates),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_without_behaviour_of_their_own_are_structural() {
        for s in [
            "pub fn minmax(in1: i32, in2: i32, in3: i32) -> (i32, i32) {",
            "    }",
            "    } else {",
            "});",
            "#[inline]",
            "// a comment",
            "impl<T> Foo for Bar<T> {",
            "pub(crate) async fn f() {",
            "    where T: Clone,",
            "",
        ] {
            assert_eq!(line_kind(s), LineKind::Structural, "{s:?}");
        }
        for s in [
            "    if least > in2 {",
            "        most = in2; // FAULT",
            "    (least, most)",
            "    let x = v[i] + 1;",
            "    return Err(e);",
            "    } else if x > 0 {",
            "    f(x)?;",
            "    fn f() -> u8 { 0 }",
            "pub fn g(&self) -> bool { self.x > 0 }",
        ] {
            assert_eq!(line_kind(s), LineKind::Behavioural, "{s:?}");
        }
    }

    #[test]
    fn lines_that_operate_are_told_from_the_rest() {
        for s in [
            "    if least > in2 {",
            "        if value == 0 && len >= 0 {",
            "    let m = x_lo as u128 / y_hi as u128 + carry;",
            "            i = (i * 5 + perturb as usize + 1) ^ self.mask as usize;",
            "        self.fill += 1;",
            "    let x = v[i];",
            "        &s[1..]",
            "    if !self.is_empty() {",
            "    return -x;",
            "    let n = f(-1);",
            "    (x >> 64) as u64",
            "    a || b",
            "        Op::LessEq => matches_exact(cmp, ver) && matches_less(cmp, ver),",
        ] {
            assert!(operates(s), "{s:?}");
        }
        for s in [
            "    let mut len = 0;",
            "        return Err(Error::new(ErrorKind::LeadingZero(pos)));",
            "fn f(a: &[u8], b: &&str) -> Vec<Vec<u8>> {",
            "    let v = vec![0; 8];",
            "    assert!(x.is_some(), \"a == b\");",
            "    #[cfg(test)]",
            "    x.map(|y| y.len()).unwrap_or_else(|| 0)",
            "    let c = '<'; // a < b",
            "    match x { Some(y) => y, None => *z }",
            "    let r = &mut self.buf;",
            "    move || run()",
            "impl<'a, T: AsRef<[u8]>> Foo<'a> for T {",
        ] {
            assert!(!operates(s), "{s:?}");
        }
    }
}
