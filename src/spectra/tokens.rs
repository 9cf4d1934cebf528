//! A Rust source line by line as the compiler's lexer sees it: each line's tokens with the
//! comments and the whitespace between tokens left out, so that an edit of comments, blank
//! lines or indentation leaves every line's text, and the lines' order, as it was
//! ([`token_lines`]). The snapshot hashes these lines ([`super::line_hashes`]); test
//! selection reads two sources whose non-blank token lines are equal as the same program.

/// Starts a line that begins inside a string literal or a block doc comment: its text is the
/// literal's, kept byte for byte, and never blank (a blank line inside a string is part of
/// the string).
const INSIDE: u8 = 0x01;

/// Where the lexer is.
#[derive(Clone, Copy)]
enum State {
    Code,
    /// A string literal (`"…"`, `b"…"`, `c"…"`), where `\` escapes the next byte.
    Str,
    /// A raw string literal closed by `"` and this many `#`.
    Raw(usize),
    /// A comment `/* … */` at this depth (they nest).
    Block(usize),
    /// A doc comment `/** … */` or `/*! … */` at this depth: a token, kept byte for byte.
    DocBlock(usize),
}

/// The lines of `text` (split as [`str::lines`] splits them) as token text: in code, comments
/// are whitespace, a run of whitespace is one space, and a line's leading and trailing
/// whitespace is dropped; string and character literals and doc comments are kept byte for
/// byte. Joined with newlines (and a leading [`INSIDE`] dropped), the lines lex to the same
/// tokens as `text`, so two sources whose lines are equal but for blank ones are the same
/// tokens.
pub fn token_lines(text: &[u8]) -> Vec<Vec<u8>> {
    Lexer::default().run(text)
}

#[derive(Default)]
struct Lexer {
    lines: Vec<Vec<u8>>,
    line: Vec<u8>,
    /// Whitespace (or a comment) since the last token byte on this line.
    space: bool,
}

impl Lexer {
    /// A byte of a token in code: after one space when whitespace came before it on the line.
    fn code(&mut self, b: u8) {
        if std::mem::take(&mut self.space) && !self.line.is_empty() {
            self.line.push(b' ');
        }
        self.line.push(b);
    }

    /// Ends the line; the next begins in `state`.
    fn newline(&mut self, state: State) {
        let inside = matches!(state, State::Str | State::Raw(_) | State::DocBlock(_));
        if inside && self.line.last() == Some(&b'\r') {
            self.line.pop();
        }
        self.lines.push(std::mem::take(&mut self.line));
        self.space = false;
        if inside {
            self.line.push(INSIDE);
        }
    }

    fn run(mut self, text: &[u8]) -> Vec<Vec<u8>> {
        let mut state = State::Code;
        let mut i = 0;
        while i < text.len() {
            if text[i] == b'\n' {
                self.newline(state);
                i += 1;
                continue;
            }
            (i, state) = match state {
                State::Code => self.in_code(text, i),
                State::Str => self.in_string(text, i),
                State::Raw(hashes) => self.in_raw_string(text, i, hashes),
                State::Block(depth) => self.in_comment(text, i, depth, false),
                State::DocBlock(depth) => self.in_comment(text, i, depth, true),
            };
        }
        self.lines.push(std::mem::take(&mut self.line));
        // As `str::lines`: no line after a last newline, none at all in an empty text.
        if text.is_empty() || text.ends_with(b"\n") {
            self.lines.pop();
        }
        self.lines
    }

    /// Code at `i` (not a newline): what it takes, the index after it and the state then.
    fn in_code(&mut self, text: &[u8], i: usize) -> (usize, State) {
        let at = |i: usize| text.get(i).copied().unwrap_or(0);
        let b = text[i];
        match b {
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                self.space = true;
                (i + 1, State::Code)
            }
            b'/' if at(i + 1) == b'/' => {
                let end = text[i..].iter().position(|&c| c == b'\n').map_or(text.len(), |p| i + p);
                if matches!(at(i + 2), b'/' | b'!') {
                    // A doc comment is a token: kept whole.
                    self.code(b'/');
                    let kept = &text[i + 1..end];
                    self.line.extend_from_slice(kept.strip_suffix(b"\r").unwrap_or(kept));
                } else {
                    self.space = true;
                }
                (end, State::Code)
            }
            b'/' if at(i + 1) == b'*' => {
                if text[i..].starts_with(b"/**/") {
                    // An empty comment, not a doc comment.
                    self.space = true;
                    (i + 4, State::Code)
                } else if matches!(at(i + 2), b'*' | b'!') {
                    self.code(b'/');
                    self.line.extend_from_slice(&text[i + 1..i + 3]);
                    (i + 3, State::DocBlock(1))
                } else {
                    self.space = true;
                    (i + 2, State::Block(1))
                }
            }
            b'"' => {
                self.code(b);
                (i + 1, State::Str)
            }
            b'\'' => (self.quote(text, i), State::Code),
            _ if b == b'_' || b.is_ascii_alphanumeric() || b >= 0x80 => {
                let end = text[i..]
                    .iter()
                    .position(|&c| !(c == b'_' || c.is_ascii_alphanumeric() || c >= 0x80))
                    .map_or(text.len(), |p| i + p);
                self.code(b);
                self.line.extend_from_slice(&text[i + 1..end]);
                // A raw string: `r`, `br` or `cr`, then `#`s and a `"`.
                if matches!(&text[i..end], b"r" | b"br" | b"cr") {
                    let hashes = text[end..].iter().take_while(|&&c| c == b'#').count();
                    if at(end + hashes) == b'"' {
                        self.line.extend_from_slice(&text[end..=end + hashes]);
                        return (end + hashes + 1, State::Raw(hashes));
                    }
                }
                (end, State::Code)
            }
            _ => {
                self.code(b);
                (i + 1, State::Code)
            }
        }
    }

    /// A string literal's byte at `i` (not a newline), kept.
    fn in_string(&mut self, text: &[u8], i: usize) -> (usize, State) {
        let b = text[i];
        self.line.push(b);
        match b {
            b'"' => (i + 1, State::Code),
            // The escaped byte (a newline ends the line as any other).
            b'\\' if text.get(i + 1).is_some_and(|&c| c != b'\n') => {
                self.line.push(text[i + 1]);
                (i + 2, State::Str)
            }
            _ => (i + 1, State::Str),
        }
    }

    /// A raw string literal's byte at `i` (not a newline), kept; `"` and `hashes` `#` end it.
    fn in_raw_string(&mut self, text: &[u8], i: usize, hashes: usize) -> (usize, State) {
        let closes = text[i] == b'"'
            && text
                .get(i + 1..i + 1 + hashes)
                .is_some_and(|h| h.iter().all(|&c| c == b'#'));
        if closes {
            self.line.extend_from_slice(&text[i..=i + hashes]);
            (i + hashes + 1, State::Code)
        } else {
            self.line.push(text[i]);
            (i + 1, State::Raw(hashes))
        }
    }

    /// A block comment's byte at `i` (not a newline), at `depth`: kept in a doc comment,
    /// whitespace in another.
    fn in_comment(&mut self, text: &[u8], i: usize, depth: usize, doc: bool) -> (usize, State) {
        let next = text.get(i + 1).copied().unwrap_or(0);
        let step = match (text[i], next) {
            (b'/', b'*') => Some(depth + 1),
            (b'*', b'/') => Some(depth - 1),
            _ => None,
        };
        let width = if step.is_some() { 2 } else { 1 };
        if doc {
            self.line.extend_from_slice(&text[i..i + width]);
        }
        let state = match step.unwrap_or(depth) {
            0 => {
                self.space = !doc;
                State::Code
            }
            d if doc => State::DocBlock(d),
            d => State::Block(d),
        };
        (i + width, state)
    }

    /// A `'` in code at `i`: a character literal (`'x'`, `'\n'`, `'\u{1F600}'`, `b'x'`) kept
    /// whole, or a lifetime or label's quote. The index after what it took.
    fn quote(&mut self, text: &[u8], i: usize) -> usize {
        let at = |i: usize| text.get(i).copied().unwrap_or(0);
        let end = if at(i + 1) == b'\\' {
            // An escape: up to the closing quote, on this line.
            let from = (i + 3).min(text.len());
            text[from..]
                .iter()
                .position(|&c| c == b'\'' || c == b'\n')
                .map(|p| from + p)
                .filter(|&e| at(e) == b'\'')
        } else {
            // One character (of one to four bytes), then the closing quote.
            let len = match at(i + 1) {
                0xf0..=0xff => 4,
                0xe0..=0xef => 3,
                0xc0..=0xdf => 2,
                _ => 1,
            };
            Some(i + 1 + len).filter(|&e| at(e) == b'\'' && at(i + 1) != b'\n')
        };
        self.code(b'\'');
        match end {
            Some(end) => {
                self.line.extend_from_slice(&text[i + 1..=end]);
                end + 1
            }
            None => i + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        token_lines(text.as_bytes())
            .into_iter()
            .map(|l| String::from_utf8(l).unwrap().replace(INSIDE as char, "|"))
            .collect()
    }

    /// The tokens of `text` as proc-macro2 lexes them, printed.
    fn tokens(text: &str) -> String {
        text.parse::<proc_macro2::TokenStream>()
            .unwrap_or_else(|e| panic!("{e}: {text}"))
            .to_string()
    }

    /// The token lines joined back into a source.
    fn joined(text: &str) -> String {
        let lines: Vec<String> = token_lines(text.as_bytes())
            .into_iter()
            .map(|l| String::from_utf8(l.strip_prefix(&[INSIDE]).unwrap_or(&l).to_vec()).unwrap())
            .collect();
        lines.join("\n")
    }

    #[test]
    fn comments_and_whitespace_between_tokens_are_left_out() {
        let text = "fn a() {   // one\n\tlet  x = 1 /* two */ + 2;\n    /* three\n    four */\n}\n";
        assert_eq!(lines(text), ["fn a() {", "let x = 1 + 2;", "", "", "}"]);
        assert_eq!(lines("a/**/b"), ["a b"], "a comment separates tokens as a space does");
        assert_eq!(lines("/* a /* nested */ still */ b"), ["b"]);
        assert_eq!(lines("x\r\n  y\r\n"), ["x", "y"]);
        assert!(lines("").is_empty());
        assert_eq!(lines("\n").len(), 1);
    }

    #[test]
    fn literals_and_doc_comments_are_kept_byte_for_byte() {
        assert_eq!(lines(r#"let s = "a  // b";"#), [r#"let s = "a  // b";"#]);
        assert_eq!(lines("let s = \"one\n\n  two\";"), ["let s = \"one", "|", "|  two\";"]);
        assert_eq!(lines("let s = \"a\\\n   b\";"), ["let s = \"a\\", "|   b\";"]);
        assert_eq!(lines("let s = \"\\\"  \\\\\"; // c"), ["let s = \"\\\"  \\\\\";"]);
        assert_eq!(lines("r#\"a \" /* b\"#  // c"), ["r#\"a \" /* b\"#"]);
        assert_eq!(lines("br\"x  y\" r#type"), ["br\"x  y\" r#type"]);
        assert_eq!(
            lines("'\"'  '\\''  b' '  'a: loop {} /**/ x // '"),
            ["'\"' '\\'' b' ' 'a: loop {} x"]
        );
        assert_eq!(
            lines("fn f<'a>(x: &'a str) -> char { 'é' }"),
            ["fn f<'a>(x: &'a str) -> char { 'é' }"]
        );
        assert_eq!(
            lines("///  doc  text\n//!  inner\n/**  a\n\n b */ x"),
            ["///  doc  text", "//!  inner", "/**  a", "|", "| b */ x"]
        );
    }

    #[test]
    fn a_comment_or_whitespace_edit_leaves_the_lines_as_they_were() {
        let before = "fn a(x: u32) -> u32 {\n    // double it\n    x * 2 // fast\n}\n";
        let after = "fn a(x: u32) -> u32 {\n        // twice\n\n    x  *  2 /* still fast */\n}\n";
        let non_blank = |t: &str| lines(t).into_iter().filter(|l| !l.is_empty()).collect::<Vec<_>>();
        assert_eq!(non_blank(before), non_blank(after));
        for changed in [
            "fn a(x: u32) -> u32 {\n    x * 3\n}\n",
            "fn a(x: u32) -> u32 {\n    x *2\n}\n",
            "/// doc\nfn a(x: u32) -> u32 {\n    x * 2\n}\n",
        ] {
            assert_ne!(non_blank(before), non_blank(changed), "{changed}");
        }
        let string = |inner: &str| format!("const S: &str = \"a\n{inner}\nb\";\n");
        assert_ne!(
            lines(&string("")),
            lines(&string("  ")),
            "whitespace inside a string is text"
        );
    }

    #[test]
    fn tricky_sources_lex_to_the_same_tokens_once_joined() {
        for text in [
            "fn a() { let s = r##\"x\"# \"## ; let t = '\\u{1F600}'; } // c",
            "impl<'a> X<'a> { fn f(&'a self) -> &'a str { \"it's\" } }",
            "let x = 1. + 2.0e10 - 0x_ff as f64; let y = x.0 .1;",
            "/// a\n/** b\n c */\n#[doc = \"d\"]\nstruct S; //! e is not inner here",
            "let c = b'\\''; let d = c\"c str\"; let e = cr#\"raw\"#;",
            "match x { 'a'..='z' => {} _ => {} }",
        ] {
            assert_eq!(tokens(&joined(text)), tokens(text), "{text}");
        }
    }

    /// Every Rust source of this crate: its token lines, joined back, are the same tokens.
    #[test]
    fn this_crates_sources_lex_to_the_same_tokens_once_joined() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut dirs: Vec<std::path::PathBuf> = ["src", "tests", "xtask/src"].iter().map(|d| root.join(d)).collect();
        let mut seen = 0;
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    assert_eq!(tokens(&joined(&text)), tokens(&text), "{}", path.display());
                    assert_eq!(token_lines(text.as_bytes()).len(), text.lines().count());
                    seen += 1;
                }
            }
        }
        assert!(seen > 100, "{seen} sources");
    }
}
