use super::*;

/// The profile `name` of a configuration text with no filtersets to compile.
fn profile(text: &str, name: &str) -> Result<Nextest, NextestError> {
    let file: File = toml::from_str(text).unwrap();
    let mut nx = Nextest::default();
    let mut compile = |e: &str, _, _: &str| -> Result<CompiledExpr, NextestError> { panic!("no filterset here: {e}") };
    nx.apply(
        &file,
        PathBuf::from("/ws/.config/nextest.toml"),
        name.into(),
        &mut compile,
    )?;
    Ok(nx)
}

const CONFIG: &str = r#"
[test-groups]
serial = { max-threads = 1 }

[profile.default]
retries = 1
test-threads = 3
slow-timeout = { period = "10s", terminate-after = 3 }
fail-fast = false

[[profile.default.overrides]]
platform = "cfg(windows)"
retries = 7

[[profile.default.overrides]]
platform = "cfg(unix)"
test-group = "serial"
leak-timeout = { period = "250ms", result = "fail" }

[profile.ci]
retries = 4
junit = { path = "junit.xml" }

[[profile.ci.overrides]]
platform = "cfg(unix)"
slow-timeout = { period = "1s", terminate-after = 2 }
"#;

#[test]
fn a_profile_inherits_from_default_and_its_overrides_come_first() {
    let nx = profile(CONFIG, "ci").unwrap();
    assert_eq!(nx.retries, Some(4));
    assert_eq!(nx.test_threads, Some(3), "inherited from default");
    assert_eq!(nx.timeout, Some(Duration::from_secs(30)));
    assert_eq!(nx.groups, [("serial".to_string(), 1)]);
    // Unix: ci's own override sets the timeout; default's second override the group and leak.
    let s = nx.settings_matching(&|_| unreachable!("no override here has a filter"), 3);
    assert_eq!(s.timeout, Some(Duration::from_secs(2)));
    assert_eq!(s.group, Some(0));
    assert_eq!(s.retries, Some(4), "the windows override does not apply here");
    assert_eq!(
        s.leak,
        Some(Leak {
            period: Duration::from_millis(250),
            fail: true
        })
    );
    // The JUnit report is written where the profile says (`--junit` writes one too).
    assert!(
        !nx.ignored.iter().any(|k| k.starts_with("profile.ci.junit")),
        "{:?}",
        nx.ignored
    );
    let file: File = toml::from_str(CONFIG).unwrap();
    let path = Path::new("/ws/.config/nextest.toml");
    assert_eq!(junit_of(&file, "ci", path).unwrap().as_deref(), Some("junit.xml"));
    assert_eq!(junit_of(&file, "default", path).unwrap(), None);
    let inheriting: File = toml::from_str(&format!("{CONFIG}\n[profile.nightly]\ninherits = \"ci\"\n")).unwrap();
    assert_eq!(
        junit_of(&inheriting, "nightly", path).unwrap().as_deref(),
        Some("junit.xml")
    );
    assert!(
        nx.ignored.iter().any(|k| k.starts_with("profile.default.fail-fast")),
        "{:?}",
        nx.ignored
    );
}

#[test]
fn flags_win_over_the_profile_and_the_status_line_says_so() {
    let nx = profile(CONFIG, "default").unwrap();
    let flags = Flags {
        jobs: Some(2),
        retries: None,
        timeout: None,
    };
    assert_eq!(nx.jobs(&flags), 2);
    let line = nx.describe(Path::new("/ws"), &flags).unwrap();
    assert_eq!(
        line,
        "profile default from .config/nextest.toml: test-threads 3 (ignored: -j 2 given), retries 1, \
         timeout 30s, 1 test group, 2 overrides"
    );
    assert_eq!(nx.jobs(&Flags::default()), 3);
}

#[test]
fn unknown_profiles_and_groups_and_cycles_are_errors_naming_them() {
    let e = profile(CONFIG, "nightly").err().unwrap().to_string();
    assert!(
        e.contains("no nextest profile `nightly`") && e.contains("ci, default"),
        "{e}"
    );
    let e = profile(
        "[[profile.default.overrides]]\nplatform = \"cfg(unix)\"\ntest-group = \"db\"\n",
        "default",
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("test-group `db` is not defined"), "{e}");
    let e = profile("[profile.a]\ninherits = \"b\"\n[profile.b]\ninherits = \"a\"\n", "a")
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("inherits from itself"), "{e}");
}
