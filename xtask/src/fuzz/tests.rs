//! The short run in the test suite, and checks that the harness itself catches what it must.

use super::*;

fn plan(inputs: u64, dir: &Path) -> Plan {
    Plan {
        seed: DEFAULT_SEED,
        inputs,
        deadline: None,
        input_timeout: Duration::from_secs(20),
        crash_dir: dir.to_path_buf(),
    }
}

/// Every target for a few thousand inputs: no panic, no hang, and a good share of the inputs
/// got past the decoder's first check (a mutator whose inputs all fail the magic number would
/// test nothing).
#[test]
fn every_decoder_survives_a_short_run() {
    let seeds = Seeds::load(&crate::root()).unwrap();
    let dir = std::env::temp_dir().join(format!("sfl-fuzz-test-{}", std::process::id()));
    let mut report = Vec::new();
    for (target, weight) in all(&seeds) {
        let stats = run_target(Arc::from(target), &plan(250 * weight, &dir));
        report.push(summary_line(&stats));
        assert!(
            stats.panics.is_empty(),
            "{}: {} panics, first {:?}",
            stats.target,
            stats.panics.len(),
            &stats.panics[..stats.panics.len().min(3)]
        );
        assert!(stats.hangs.is_empty(), "{}: hang at {:?}", stats.target, stats.hangs);
        assert_eq!(stats.inputs, 250 * weight);
        assert!(
            stats.past_first_check() > 0.5,
            "{}: only {:.1}% past the first check",
            stats.target,
            100.0 * stats.past_first_check()
        );
        assert!(
            stats.kinds.len() >= 3,
            "{}: error kinds {:?}",
            stats.target,
            stats.kinds
        );
        assert!(stats.decoded > 0, "{}: nothing decoded", stats.target);
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn inputs_depend_only_on_seed_target_and_iteration() {
    let seeds = Seeds::load(&crate::root()).unwrap();
    let targets = all(&seeds);
    let t = targets[0].0.as_ref();
    assert_eq!(input_for(t, 1, 42), input_for(t, 1, 42));
    let distinct: std::collections::HashSet<Vec<u8>> = (0..50).map(|i| input_for(t, 1, i)).collect();
    assert!(distinct.len() > 40, "only {} distinct inputs of 50", distinct.len());
    assert!((0..50).any(|i| input_for(t, 2, i) != input_for(t, 1, i)));
}

/// A decoder that panics on some inputs and hangs on one, to check the harness.
struct Faulty {
    corpus: Vec<Vec<u8>>,
    hang: bool,
}

impl Target for Faulty {
    fn name(&self) -> &'static str {
        if self.hang { "faulty-hang" } else { "faulty-panic" }
    }
    fn corpus(&self) -> &[Vec<u8>] {
        &self.corpus
    }
    fn mutate(&self, rng: &mut mutate::Rng, input: &mut Vec<u8>) {
        input.push(rng.below(4) as u8);
    }
    fn run(&self, input: &[u8]) -> Verdict {
        if input.last() == Some(&3) {
            if self.hang {
                std::thread::sleep(Duration::from_secs(3600));
            }
            let _ = input[input.len() + 1];
        }
        Verdict::Decoded
    }
}

#[test]
fn panics_and_hangs_are_caught_and_saved() {
    let dir = std::env::temp_dir().join(format!("sfl-fuzz-faulty-{}", std::process::id()));
    let panicky = Arc::new(Faulty {
        corpus: vec![vec![0]],
        hang: false,
    });
    let stats = run_target(panicky, &plan(200, &dir));
    assert_eq!(stats.inputs, 200);
    assert!(!stats.panics.is_empty());
    let (iter, msg) = &stats.panics[0];
    assert!(msg.contains("index out of bounds") && msg.contains("tests.rs"), "{msg}");
    let saved = dir.join(format!("faulty-panic/seed-{DEFAULT_SEED}-iter-{iter}"));
    assert_eq!(std::fs::read(saved.with_extension("bin")).unwrap().last(), Some(&3));
    assert!(
        std::fs::read_to_string(saved.with_extension("txt"))
            .unwrap()
            .contains("--replay")
    );

    let hanging = Arc::new(Faulty {
        corpus: vec![vec![0]],
        hang: true,
    });
    let mut p = plan(200, &dir);
    p.input_timeout = Duration::from_millis(300);
    let stats = run_target(hanging, &p);
    assert_eq!(stats.hangs.len(), 1);
    let saved = dir.join(format!("faulty-hang/seed-{DEFAULT_SEED}-iter-{}.bin", stats.hangs[0]));
    assert_eq!(std::fs::read(saved).unwrap().last(), Some(&3));
    let _ = std::fs::remove_dir_all(&dir);
}
