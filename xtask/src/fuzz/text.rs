//! The fuzz targets whose inputs are text: saved spectra (JSON), GZoltar's files and faults
//! files (TOML), mutated mostly as values and lines so that inputs stay parseable and reach the
//! checks behind the syntax.

use cargo_sfl::spectra::{Spectra, SpectraError};

use super::mutate::{self, Rng};
use super::seeds::Seeds;
use super::targets::{Target, Verdict, generic, join, mutate_part, split};

/// The targets of text formats (spectra, GZoltar's files, fault lists), with their shares of a
/// run's inputs.
pub(super) fn all(seeds: &Seeds) -> Vec<(Box<dyn Target>, u64)> {
    vec![
        (Box::new(SpectraTarget(seeds.spectra.clone())) as Box<dyn Target>, 8),
        (
            Box::new(Gzoltar(vec![join(&[
                &[0],
                &seeds.gzoltar[0],
                &seeds.gzoltar[1],
                &seeds.gzoltar[2],
            ])])),
            8,
        ),
        (Box::new(Faults(seeds.faults.clone())), 8),
    ]
}

/// A JSON value mutation of the document (mostly keeping its `schema`, so that inputs get
/// past the schema check), or a byte mutation of its text.
fn mutate_json(rng: &mut Rng, input: &mut Vec<u8>, corpus: &[Vec<u8>]) {
    if !rng.one_in(10)
        && let Ok(mut v) = serde_json::from_slice::<serde_json::Value>(input)
    {
        let schema = v.get("schema").cloned();
        mutate::json_value(rng, &mut v);
        if let (Some(schema), Some(o)) = (schema, v.as_object_mut())
            && !rng.one_in(8)
        {
            o.insert("schema".into(), schema);
        }
        *input = serde_json::to_vec(&v).expect("a Value serializes");
        return;
    }
    generic(rng, input, corpus);
}

/// Saved spectra (a CI artifact, a shard), and what the pipeline first does with them.
pub(super) struct SpectraTarget(pub(super) Vec<Vec<u8>>);

impl Target for SpectraTarget {
    fn name(&self) -> &'static str {
        "spectra"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_json(rng, input, &self.0);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        match Spectra::parse(input) {
            Ok(s) => {
                let keep: Vec<bool> = (0..s.units.len())
                    .map(|u| s.facts.as_ref().is_none_or(|f| !f.test_code.contains(u)))
                    .collect();
                std::hint::black_box((s.counts(), s.by_function(), s.retain_units(&keep)));
                Verdict::Decoded
            }
            Err(e) => {
                let early = matches!(
                    e,
                    SpectraError::NotJson(_) | SpectraError::NoSchema | SpectraError::OtherSchema(_)
                );
                Verdict::refused(&e, early)
            }
        }
    }
}

/// GZoltar's `spectra.csv`, `matrix.txt` and `tests.csv` (part 0 is a flags byte: bit 0 the
/// older file names, bit 1 no `tests.csv`).
pub(super) struct Gzoltar(pub(super) Vec<Vec<u8>>);

impl Target for Gzoltar {
    fn name(&self) -> &'static str {
        "gzoltar"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        mutate_part(rng, input, |rng, i, parts| {
            if i == 0 {
                parts[0] = vec![rng.below(4) as u8];
            } else if rng.one_in(4) {
                mutate::bytes(rng, &mut parts[i], &[]);
            } else {
                mutate::lines(rng, &mut parts[i]);
            }
        });
    }
    fn run(&self, input: &[u8]) -> Verdict {
        let parts = split(input);
        let text = |i: usize| String::from_utf8_lossy(parts.get(i).map_or(&[][..], Vec::as_slice)).into_owned();
        let flags = parts.first().and_then(|p| p.first()).copied().unwrap_or(0);
        let (spectra, matrix, tests) = (text(1), text(2), text(3));
        let old = flags & 1 != 0;
        let texts = cargo_sfl::gzoltar::Texts {
            spectra: (if old { "spectra" } else { "spectra.csv" }, &spectra),
            matrix: (if old { "matrix" } else { "matrix.txt" }, &matrix),
            tests: (flags & 2 == 0).then_some(tests.as_str()),
        };
        match cargo_sfl::gzoltar::parse("gzoltar".into(), &texts) {
            Ok(s) => {
                std::hint::black_box(s.counts());
                Verdict::Decoded
            }
            Err(e) => {
                let early = e.to_string().contains("names no units");
                Verdict::refused(&e, early)
            }
        }
    }
}

/// A faults file for `cargo sfl eval`.
pub(super) struct Faults(pub(super) Vec<Vec<u8>>);

impl Target for Faults {
    fn name(&self) -> &'static str {
        "faults"
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.0
    }
    fn mutate(&self, rng: &mut Rng, input: &mut Vec<u8>) {
        match rng.below(8) {
            0..=5 => {
                // A value mutation through JSON (TOML has no null: such a mutation falls back).
                let parsed = std::str::from_utf8(input)
                    .ok()
                    .and_then(|s| toml::from_str::<serde_json::Value>(s).ok());
                if let Some(mut v) = parsed {
                    mutate::json_value(rng, &mut v);
                    if let Ok(text) = toml::to_string(&v) {
                        *input = text.into_bytes();
                        return;
                    }
                }
                mutate::lines(rng, input);
            }
            6 => mutate::lines(rng, input),
            _ => generic(rng, input, &self.0),
        }
    }
    fn run(&self, input: &[u8]) -> Verdict {
        // `faults::load` refuses a file that is not UTF-8 before parsing.
        let Ok(text) = std::str::from_utf8(input) else {
            return Verdict::refused(&"not UTF-8", true);
        };
        match cargo_sfl::faults::parse(text) {
            Ok(f) => {
                std::hint::black_box(f);
                Verdict::Decoded
            }
            Err(e) => {
                // Past the first check: valid TOML that is not a valid faults file.
                let early = text.parse::<toml::Table>().is_err();
                Verdict::refused(&e, early)
            }
        }
    }
}
