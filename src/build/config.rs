//! cargo's configuration as cargo reads it: from the current directory (not the workspace's
//! root: `cargo test` run in a member's directory reads that member's `.cargo/config.toml`, and
//! one run with `--manifest-path` from elsewhere reads none of the workspace's), then
//! `$CARGO_HOME`, then `--config`. cargo sfl needs three things of it: the `[env]` its tests
//! get, the target runner they run through, and the rustc wrapper the build goes through; and
//! the files themselves, whose edits make every test run again.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// cargo's configuration files that apply in `cwd`, lowest precedence first:
/// `$CARGO_HOME/config.toml`, then `.cargo/config.toml` (or `.cargo/config`) in every directory
/// from the root of the file system down to `cwd`, then the files among the `--config` values
/// `cli`.
pub fn files(cwd: &Path, cli: &[String]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = cwd
        .ancestors()
        .flat_map(|d| [d.join(".cargo/config.toml"), d.join(".cargo/config")])
        .filter(|f| f.is_file())
        .collect();
    if let Some(home) = cargo_home() {
        for file in [home.join("config.toml"), home.join("config")] {
            if file.is_file() && !files.contains(&file) {
                files.push(file);
            }
        }
    }
    files.reverse();
    files.extend(cli.iter().map(PathBuf::from).filter(|p| p.is_file()));
    files
}

/// `$CARGO_HOME`, or `~/.cargo`.
fn cargo_home() -> Option<PathBuf> {
    std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
}

/// The directory cargo sfl was started in: where cargo finds its configuration.
pub fn current_dir(fallback: &Path) -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| fallback.to_path_buf())
}

/// A configuration file as a TOML table, with the directory its relative paths are resolved
/// against (the one holding its `.cargo`).
fn read_table(file: &Path, cwd: &Path) -> Option<(toml::Table, PathBuf)> {
    let table = std::fs::read_to_string(file).ok()?.parse::<toml::Table>().ok()?;
    Some((table, file.parent().and_then(Path::parent).unwrap_or(cwd).to_path_buf()))
}

/// The `--config` values `cli` as TOML tables (a file, or a `KEY=VALUE` line resolved against
/// `cwd`), lowest precedence first.
fn cli_tables(cwd: &Path, cli: &[String]) -> Vec<(toml::Table, PathBuf)> {
    cli.iter()
        .filter_map(|value| {
            let path = Path::new(value);
            if path.is_file() {
                read_table(path, cwd)
            } else {
                Some((value.parse::<toml::Table>().ok()?, cwd.to_path_buf()))
            }
        })
        .collect()
}

/// Each configuration that applies in `cwd` as a TOML table ([`read_table`]), lowest
/// precedence first: the files ([`files`]), then the `--config` values `cli`.
fn tables(cwd: &Path, cli: &[String]) -> Vec<(toml::Table, PathBuf)> {
    let mut tables: Vec<(toml::Table, PathBuf)> = files(cwd, &[]).iter().filter_map(|f| read_table(f, cwd)).collect();
    tables.extend(cli_tables(cwd, cli));
    tables
}

/// The `[env]` tables of the configuration that applies in `cwd` ([`tables`]), as cargo applies
/// them: a variable the environment already has is kept unless `force = true`; `relative =
/// true` resolves the value against the directory holding `.cargo` (for a `KEY=VALUE` line,
/// the current directory).
pub fn env(cwd: &Path, cli: &[String]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    for (mut table, base) in tables(cwd, cli) {
        let Some(toml::Value::Table(vars)) = table.remove("env") else {
            continue;
        };
        for (key, value) in vars {
            let (value, force, relative) = match value {
                toml::Value::String(v) => (v, false, false),
                toml::Value::Table(t) => (
                    t.get("value").and_then(|v| v.as_str()).unwrap_or_default().to_string(),
                    t.get("force").and_then(toml::Value::as_bool).unwrap_or(false),
                    t.get("relative").and_then(toml::Value::as_bool).unwrap_or(false),
                ),
                _ => continue,
            };
            if !force && std::env::var_os(&key).is_some() {
                continue;
            }
            let value = if relative {
                base.join(&value).to_string_lossy().into_owned()
            } else {
                value
            };
            env.retain(|(k, _)| *k != key);
            env.push((key, value));
        }
    }
    env
}

/// The rustc wrapper `cargo test` would build through (`RUSTC_WRAPPER`, then `--config`, then
/// `CARGO_BUILD_RUSTC_WRAPPER` and `build.rustc-wrapper`; an empty value is none), which cargo
/// sfl, as cargo's wrapper itself, runs rustc through. `None` when there is none.
pub fn rustc_wrapper(cwd: &Path, cli: &[String]) -> Option<PathBuf> {
    if let Some(w) = std::env::var_os("RUSTC_WRAPPER") {
        return (!w.is_empty()).then(|| PathBuf::from(w));
    }
    let from_cli = cli_tables(cwd, cli)
        .into_iter()
        .rev()
        .find_map(|(table, _)| Some(table.get("build")?.get("rustc-wrapper")?.as_str()?.to_string()));
    if let Some(w) = from_cli {
        return (!w.is_empty()).then(|| PathBuf::from(w));
    }
    let config = cargo_config2::Config::load_with_cwd(cwd).ok()?;
    config.build.rustc_wrapper.filter(|w| !w.as_os_str().is_empty())
}

/// The target runner of the host's test binaries (`target.<triple>.runner`, its
/// `CARGO_TARGET_<TRIPLE>_RUNNER` variable or a `target.<cfg>.runner` that matches), as a
/// program and its arguments, before the test executable: `cargo test` runs every test binary
/// and doctest through it. Empty when none is set. `host` is the host's triple (`rustc -vV`;
/// `None`: asked of rustc when a runner may be configured).
pub fn runner(cwd: &Path, cli: &[String], host: Option<&str>) -> Vec<OsString> {
    // Most configurations set no runner: they are not resolved (which may run rustc).
    let in_env = std::env::vars_os().any(|(k, _)| {
        k.to_str()
            .is_some_and(|k| k.starts_with("CARGO_TARGET_") && k.ends_with("_RUNNER"))
    });
    let in_files = files(cwd, cli)
        .iter()
        .any(|f| std::fs::read_to_string(f).is_ok_and(|s| s.contains("runner")));
    let in_cli = cli.iter().any(|c| c.contains("runner"));
    if !(in_env || in_files || in_cli) {
        return Vec::new();
    }
    let mut options = cargo_config2::ResolveOptions::default();
    if let Some(host) = host {
        options = options.host_triple(host);
    }
    let Ok(config) = cargo_config2::Config::load_with_options(cwd, options) else {
        return Vec::new();
    };
    let Some(host) = host
        .map(str::to_string)
        .or_else(|| config.host_triple().ok().map(str::to_string))
    else {
        return Vec::new();
    };
    // A `--config target.<triple>.runner=…` wins over the files and the variable.
    let cli_runner = cli_tables(cwd, cli).into_iter().rev().find_map(|(table, _)| {
        match table.get("target")?.get(&host)?.get("runner")? {
            toml::Value::String(s) => Some(s.split_whitespace().map(OsString::from).collect::<Vec<_>>()),
            toml::Value::Array(a) => a.iter().map(|v| v.as_str().map(OsString::from)).collect(),
            _ => None,
        }
    });
    if let Some(runner) = cli_runner.filter(|r| !r.is_empty()) {
        return runner;
    }
    match config.runner(host.as_str()) {
        Ok(Some(runner)) => std::iter::once(runner.path.into_os_string())
            .chain(runner.args)
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_values_on_the_command_line_win_over_files() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
        std::fs::write(
            ws.path().join(".cargo/config.toml"),
            "[env]\nSFL_T_FILE = 'file'\nSFL_T_BOTH = 'file'\n",
        )
        .unwrap();
        let extra = ws.path().join("extra.toml");
        std::fs::write(&extra, "[env]\nSFL_T_EXTRA = { value = 'x', relative = true }\n").unwrap();
        let cli = [
            "env.SFL_T_BOTH = 'cli'".to_string(),
            extra.to_string_lossy().into_owned(),
            "not toml at all".to_string(),
        ];
        let env = env(ws.path(), &cli);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("SFL_T_FILE").as_deref(), Some("file"));
        assert_eq!(get("SFL_T_BOTH").as_deref(), Some("cli"));
        // A file given to --config resolves like any configuration file: against its
        // directory's parent.
        let parent = ws.path().parent().unwrap().join("x");
        assert_eq!(get("SFL_T_EXTRA"), Some(parent.to_string_lossy().into_owned()));
    }

    #[test]
    fn a_member_directory_s_configuration_applies_there_and_nearer_files_win() {
        let ws = tempfile::tempdir().unwrap();
        let member = ws.path().join("m");
        for dir in [ws.path(), &member] {
            std::fs::create_dir_all(dir.join(".cargo")).unwrap();
        }
        std::fs::write(
            ws.path().join(".cargo/config.toml"),
            "[env]\nSFL_T_A = 'root'\nSFL_T_B = 'root'\n",
        )
        .unwrap();
        std::fs::write(member.join(".cargo/config.toml"), "[env]\nSFL_T_B = 'member'\n").unwrap();
        let found = files(&member, &[]);
        let (root, near) = (ws.path().join(".cargo/config.toml"), member.join(".cargo/config.toml"));
        let at = |f: &Path| found.iter().position(|x| x == f);
        assert!(at(&root) < at(&near), "{found:?}");
        let env = env(&member, &[]);
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("SFL_T_A").as_deref(), Some("root"));
        assert_eq!(get("SFL_T_B").as_deref(), Some("member"));
        assert!(!files(ws.path(), &[]).contains(&near));
    }

    #[test]
    fn a_runner_of_the_host_is_read_from_files_and_the_command_line() {
        let ws = tempfile::tempdir().unwrap();
        let host = "x86_64-unknown-linux-gnu";
        assert!(runner(ws.path(), &[], Some(host)).is_empty());
        std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
        std::fs::write(
            ws.path().join(".cargo/config.toml"),
            format!("[target.{host}]\nrunner = ['/bin/env', 'A=1']\n"),
        )
        .unwrap();
        assert_eq!(runner(ws.path(), &[], Some(host)), ["/bin/env", "A=1"]);
        let cli = vec![format!("target.{host}.runner='/usr/bin/env B=2'")];
        assert_eq!(runner(ws.path(), &cli, Some(host)), ["/usr/bin/env", "B=2"]);
        assert!(runner(ws.path(), &[], Some("aarch64-unknown-linux-gnu")).is_empty());
    }
}
