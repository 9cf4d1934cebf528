//! Test binary ids as the build names them ([`BinaryKey`]), read back in one place.

/// A test binary's id, taken apart: `pkg` (a library's unit tests), `pkg::NAME` (an integration
/// test) or `pkg::KIND/NAME` (`bin`, `example`, `bench`, `doctest`: a library's doctests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinaryKey<'a> {
    pub package: &'a str,
    /// The target's kind and name; `None`: the library. An integration test's kind is `test`.
    pub target: Option<(&'a str, &'a str)>,
}

impl<'a> BinaryKey<'a> {
    /// Reads a binary id.
    pub fn parse(id: &'a str) -> Self {
        let (package, target) = id.split_once("::").map_or((id, None), |(p, t)| (p, Some(t)));
        BinaryKey {
            package,
            target: target.map(|t| t.split_once('/').unwrap_or(("test", t))),
        }
    }

    /// Whether the binary is a library's doctests.
    pub fn is_doctest(&self) -> bool {
        matches!(self.target, Some(("doctest", _)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_id_is_taken_apart() {
        let key = |package, target| BinaryKey { package, target };
        assert_eq!(BinaryKey::parse("p"), key("p", None));
        assert_eq!(
            BinaryKey::parse("p::integration"),
            key("p", Some(("test", "integration")))
        );
        assert_eq!(BinaryKey::parse("q::bin/cli"), key("q", Some(("bin", "cli"))));
        assert_eq!(BinaryKey::parse("q::example/e"), key("q", Some(("example", "e"))));
        assert_eq!(BinaryKey::parse("p::doctest/p"), key("p", Some(("doctest", "p"))));
        assert!(BinaryKey::parse("p::doctest/p").is_doctest());
        assert!(
            !BinaryKey::parse("p::doctest").is_doctest(),
            "an integration test named doctest"
        );
        assert!(!BinaryKey::parse("p").is_doctest());
    }
}
