//! Where a line can be mutated: the classic operators of mutation testing (as Metallaxis-FL
//! and MUSE use them), found with syn in the bodies of functions, each as a byte range of the
//! file and the text that replaces it.
//!
//! Only single-line expressions are mutated (line numbers of the mutated file stay those of
//! the original, so the compiler's errors and the tests' panics still name the right lines),
//! and never in const contexts (`const fn`, `const` items, array lengths, patterns), where the
//! run-time switch that selects a mutant cannot be evaluated.

use proc_macro2::{LineColumn, Span};
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{BinOp, Expr, ExprBinary, Lit, RangeLimits, Stmt, UnOp};

/// One mutant: replace `text[start..end]` by `replacement`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mutant {
    /// 1-based line of the mutated range.
    pub line: u32,
    pub start: usize,
    pub end: usize,
    pub replacement: String,
    /// Replaces a whole statement by nothing: the switch goes around the statement rather
    /// than inside an expression.
    pub deletes_statement: bool,
    /// What was done, for the report (`< → <=`, `delete statement`).
    pub operator: String,
}

/// The mutants of `text` on `lines` (1-based), in source order. `None` when syn cannot parse
/// the file.
pub fn mutants(text: &str, lines: &[u32]) -> Option<Vec<Mutant>> {
    let file = syn::parse_file(text).ok()?;
    let mut v = Finder {
        text,
        starts: line_starts(text),
        lines,
        out: Vec::new(),
        depth_const: 0,
        in_fn: 0,
    };
    v.visit_file(&file);
    let mut out = v.out;
    out.sort_by_key(|m| (m.start, std::cmp::Reverse(m.end), m.replacement.clone()));
    out.dedup_by(|a, b| a.start == b.start && a.end == b.end && a.replacement == b.replacement);
    Some(out)
}

/// Byte offset of the start of each line (index 0 = line 1).
pub(super) fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

struct Finder<'a> {
    text: &'a str,
    starts: Vec<usize>,
    lines: &'a [u32],
    out: Vec<Mutant>,
    /// Inside a const context (nothing is mutated there).
    depth_const: u32,
    /// Inside a function body.
    in_fn: u32,
}

impl Finder<'_> {
    /// The byte offset of a span position, when it lies in the text.
    fn offset(&self, at: LineColumn) -> Option<usize> {
        let start = *self.starts.get(at.line.checked_sub(1)?)?;
        let rest = &self.text[start..];
        let line_end = rest.find('\n').unwrap_or(rest.len());
        let line = &rest[..line_end];
        // Columns count characters.
        let byte = line.char_indices().nth(at.column).map_or(line.len(), |(b, _)| b);
        Some(start + byte)
    }

    /// The byte range of a single-line span on one of the asked lines.
    fn range(&self, span: Span) -> Option<(u32, usize, usize)> {
        let (a, b) = (span.start(), span.end());
        if a.line != b.line || !self.lines.contains(&(a.line as u32)) {
            return None;
        }
        Some((a.line as u32, self.offset(a)?, self.offset(b)?))
    }

    /// Visits a function body (`const`: a const context).
    fn function(&mut self, constness: bool, visit: impl FnOnce(&mut Self)) {
        self.in_fn += 1;
        if constness {
            self.constant(visit);
        } else {
            visit(self);
        }
        self.in_fn -= 1;
    }

    /// Visits a const context.
    fn constant(&mut self, visit: impl FnOnce(&mut Self)) {
        self.depth_const += 1;
        visit(self);
        self.depth_const -= 1;
    }

    fn active(&self) -> bool {
        self.in_fn > 0 && self.depth_const == 0
    }

    fn push(&mut self, span: Span, replacement: String, deletes_statement: bool, operator: String) {
        let Some((line, start, end)) = self.range(span) else {
            return;
        };
        if start >= end || self.text[start..end] == replacement {
            return;
        }
        self.out.push(Mutant {
            line,
            start,
            end,
            replacement,
            deletes_statement,
            operator,
        });
    }

    /// Mutants that swap a binary operator, the operands' text kept.
    fn binary(&mut self, e: &ExprBinary) {
        let Some((_, start, end)) = self.range(e.span()) else {
            return;
        };
        let Some((_, op_start, op_end)) = self.range(e.op.span()) else {
            return;
        };
        let op = &self.text[op_start..op_end];
        for &to in replacements(&e.op) {
            let text = format!("{}{to}{}", &self.text[start..op_start], &self.text[op_end..end]);
            self.push(e.span(), text, false, format!("{op} → {to}"));
        }
    }

    /// Negate a condition (`if c` → `if !(c)`), unless it is already a negation or a `let`.
    fn negate(&mut self, cond: &Expr) {
        if matches!(
            cond,
            Expr::Let(_) | Expr::Unary(syn::ExprUnary { op: UnOp::Not(_), .. })
        ) {
            return;
        }
        let Some((_, start, end)) = self.range(cond.span()) else {
            return;
        };
        let text = format!("!({})", &self.text[start..end]);
        self.push(cond.span(), text, false, "negate condition".into());
    }
}

/// What a binary operator is replaced by.
fn replacements(op: &BinOp) -> &'static [&'static str] {
    match op {
        BinOp::Add(_) => &["-", "*"],
        BinOp::Sub(_) => &["+", "/"],
        BinOp::Mul(_) => &["/", "+"],
        BinOp::Div(_) => &["*", "%"],
        BinOp::Rem(_) => &["/", "+"],
        BinOp::And(_) => &["||"],
        BinOp::Or(_) => &["&&"],
        BinOp::BitAnd(_) => &["|", "^"],
        BinOp::BitOr(_) => &["&", "^"],
        BinOp::BitXor(_) => &["&", "|"],
        BinOp::Shl(_) => &[">>"],
        BinOp::Shr(_) => &["<<"],
        BinOp::Eq(_) => &["!="],
        BinOp::Ne(_) => &["=="],
        BinOp::Lt(_) => &["<=", ">="],
        BinOp::Le(_) => &["<", ">"],
        BinOp::Gt(_) => &[">=", "<="],
        BinOp::Ge(_) => &[">", "<"],
        BinOp::AddAssign(_) => &["-=", "*="],
        BinOp::SubAssign(_) => &["+=", "/="],
        BinOp::MulAssign(_) => &["/=", "+="],
        BinOp::DivAssign(_) => &["*="],
        BinOp::RemAssign(_) => &["/="],
        BinOp::BitAndAssign(_) => &["|="],
        BinOp::BitOrAssign(_) => &["&="],
        BinOp::BitXorAssign(_) => &["|="],
        BinOp::ShlAssign(_) => &[">>="],
        BinOp::ShrAssign(_) => &["<<="],
        _ => &[],
    }
}

/// An integer literal's neighbours (`n + 1`, `n - 1`), its suffix kept.
fn integer_neighbours(lit: &syn::LitInt) -> Vec<String> {
    let Ok(n) = lit.base10_parse::<u128>() else {
        return Vec::new();
    };
    let suffix = lit.suffix();
    let mut out = Vec::new();
    if let Some(up) = n.checked_add(1) {
        out.push(format!("{up}{suffix}"));
    }
    if n > 0 {
        out.push(format!("{}{suffix}", n - 1));
    }
    out
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(f.sig.constness.is_some(), |v| syn::visit::visit_item_fn(v, f));
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.function(f.sig.constness.is_some(), |v| syn::visit::visit_impl_item_fn(v, f));
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        self.function(f.sig.constness.is_some(), |v| syn::visit::visit_trait_item_fn(v, f));
    }

    fn visit_item_const(&mut self, i: &'ast syn::ItemConst) {
        self.constant(|v| syn::visit::visit_item_const(v, i));
    }

    fn visit_item_static(&mut self, i: &'ast syn::ItemStatic) {
        self.constant(|v| syn::visit::visit_item_static(v, i));
    }

    fn visit_impl_item_const(&mut self, i: &'ast syn::ImplItemConst) {
        self.constant(|v| syn::visit::visit_impl_item_const(v, i));
    }

    fn visit_expr_const(&mut self, e: &'ast syn::ExprConst) {
        self.constant(|v| syn::visit::visit_expr_const(v, e));
    }

    fn visit_expr_repeat(&mut self, e: &'ast syn::ExprRepeat) {
        self.visit_expr(&e.expr);
        // The length is a const context.
        self.constant(|v| v.visit_expr(&e.len));
    }

    fn visit_type(&mut self, _: &'ast syn::Type) {
        // Array lengths and const generic arguments.
    }

    fn visit_generic_argument(&mut self, _: &'ast syn::GenericArgument) {}

    fn visit_pat(&mut self, _: &'ast syn::Pat) {
        // Literals and ranges in patterns are patterns, not expressions.
    }

    fn visit_stmt(&mut self, s: &'ast Stmt) {
        if self.active()
            && let Stmt::Expr(e, Some(_)) = s
            && matches!(e, Expr::Call(_) | Expr::MethodCall(_) | Expr::Assign(_))
        {
            self.push(s.span(), String::new(), true, "delete statement".into());
        }
        syn::visit::visit_stmt(self, s);
    }

    fn visit_expr(&mut self, e: &'ast Expr) {
        if self.active() {
            match e {
                Expr::Binary(b) => self.binary(b),
                Expr::Unary(u) if matches!(u.op, UnOp::Not(_) | UnOp::Neg(_)) => {
                    if let Some((_, start, end)) = self.range(u.expr.span()) {
                        let what = if matches!(u.op, UnOp::Not(_)) { "!" } else { "-" };
                        let text = self.text[start..end].to_string();
                        self.push(e.span(), text, false, format!("remove {what}"));
                    }
                }
                Expr::Lit(l) => match &l.lit {
                    Lit::Int(i) => {
                        for n in integer_neighbours(i) {
                            let op = format!("{} → {n}", i.token());
                            self.push(e.span(), n, false, op);
                        }
                    }
                    Lit::Bool(b) => {
                        let flipped = (!b.value).to_string();
                        self.push(e.span(), flipped.clone(), false, format!("{} → {flipped}", b.value));
                    }
                    _ => {}
                },
                Expr::Range(r) if r.start.is_some() && r.end.is_some() => {
                    if let (Some((_, start, end)), Some((_, op_start, op_end))) =
                        (self.range(r.span()), self.range(r.limits.span()))
                    {
                        let to = match r.limits {
                            RangeLimits::HalfOpen(_) => "..=",
                            RangeLimits::Closed(_) => "..",
                        };
                        let op = &self.text[op_start..op_end];
                        let text = format!("{}{to}{}", &self.text[start..op_start], &self.text[op_end..end]);
                        self.push(r.span(), text, false, format!("{op} → {to}"));
                    }
                }
                Expr::If(i) => self.negate(&i.cond),
                Expr::While(w) => self.negate(&w.cond),
                _ => {}
            }
        }
        syn::visit::visit_expr(self, e);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(text: &str, lines: &[u32]) -> Vec<(u32, String, String)> {
        mutants(text, lines)
            .unwrap()
            .into_iter()
            .map(|m| (m.line, m.operator, m.replacement))
            .collect()
    }

    #[test]
    fn operators_conditions_and_literals_on_the_asked_lines() {
        let text = "fn f(a: u32, b: u32) -> bool {\n    if a < b + 1 {\n        return true;\n    }\n    a == b\n}\n";
        let got = ops(text, &[2]);
        assert!(
            got.contains(&(2, "negate condition".into(), "!(a < b + 1)".into())),
            "{got:?}"
        );
        assert!(got.contains(&(2, "< → <=".into(), "a <= b + 1".into())), "{got:?}");
        assert!(got.contains(&(2, "+ → -".into(), "b - 1".into())), "{got:?}");
        assert!(got.contains(&(2, "1 → 2".into(), "2".into())), "{got:?}");
        assert!(got.contains(&(2, "1 → 0".into(), "0".into())), "{got:?}");
        assert!(got.iter().all(|(l, _, _)| *l == 2), "only line 2: {got:?}");
        assert_eq!(ops(text, &[5]), vec![(5, "== → !=".into(), "a != b".into())]);
    }

    #[test]
    fn statements_ranges_and_unary_operators() {
        let text = "fn g(v: &mut Vec<i32>, n: usize) {\n    v.push(-1);\n    for i in 0..n { v.push(i as i32); }\n    let ok = !v.is_empty();\n}\n";
        let got = ops(text, &[2, 3, 4]);
        assert!(got.contains(&(2, "delete statement".into(), String::new())), "{got:?}");
        assert!(got.contains(&(2, "remove -".into(), "1".into())), "{got:?}");
        assert!(got.contains(&(3, ".. → ..=".into(), "0..=n".into())), "{got:?}");
        assert!(got.contains(&(4, "remove !".into(), "v.is_empty()".into())), "{got:?}");
    }

    #[test]
    fn const_contexts_multi_line_expressions_and_patterns_are_left_alone() {
        let text = "const N: usize = 1 + 2;\nconst fn h(x: u8) -> u8 { x + 1 }\nfn k(x: u8) -> [u8; 2 + 1] {\n    match x { 1..=3 => [0; 1 + 2], _ => [x\n        + 1; 3] }\n}\n";
        let got = ops(text, &[1, 2, 3, 4, 5]);
        // The repeat's value `0` (an expression) on line 4 and the literal of the two-line
        // `x + 1` on line 5; not `1 + 2` (an array length), not the pattern, not the two-line `+`.
        assert_eq!(
            got,
            vec![
                (4, "0 → 1".into(), "1".into()),
                (5, "1 → 0".into(), "0".into()),
                (5, "1 → 2".into(), "2".into())
            ]
        );
    }

    #[test]
    fn a_file_syn_cannot_parse_has_no_mutants() {
        assert!(mutants("fn (", &[1]).is_none());
    }
}
