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
/// `cli`; each after the files it `include`s.
pub fn files(cwd: &Path, cli: &[String]) -> Vec<PathBuf> {
    layers(cwd, cli).into_iter().filter_map(|l| l.file).collect()
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

/// One layer of the configuration: a file's table, or a `--config KEY=VALUE` line's.
struct Layer {
    table: toml::Table,
    /// The file (`None`: a `KEY=VALUE` line).
    file: Option<PathBuf>,
    /// What a relative path in it (a program's with a slash, a `relative` variable's) is resolved
    /// against: the directory holding the file's `.cargo` (for a `--config` file, the directory
    /// above its own, as given: `../c/x.toml` from `/w` is `/w/../c/..`); for a `KEY=VALUE`
    /// line, the current directory.
    base: PathBuf,
    /// Given on the command line (`--config`), which wins over the environment's variables.
    cli: bool,
}

impl Layer {
    /// The program path `value` as cargo resolves it: with a slash, against [`Layer::base`];
    /// a bare name is looked up in `PATH` when run.
    fn program(&self, value: &str) -> PathBuf {
        if value.contains('/') {
            self.base.join(value)
        } else {
            PathBuf::from(value)
        }
    }
}

/// The configuration file `file` and the files it includes (`include = "a.toml"` or a list of
/// paths or `{ path, optional }` tables, relative to its directory), included ones first.
fn with_includes(file: &Path, cwd: &Path, cli: bool, out: &mut Vec<Layer>, depth: usize) {
    let Some(table) = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| t.parse::<toml::Table>().ok())
    else {
        return;
    };
    let dir = file.parent().unwrap_or(cwd);
    if depth < 8 {
        let paths: Vec<String> = match table.get("include") {
            Some(toml::Value::String(p)) => vec![p.clone()],
            Some(toml::Value::Array(items)) => items
                .iter()
                .filter_map(|i| match i {
                    toml::Value::String(p) => Some(p.clone()),
                    toml::Value::Table(t) => t.get("path").and_then(toml::Value::as_str).map(str::to_string),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for p in paths {
            with_includes(&dir.join(p), cwd, cli, out, depth + 1);
        }
    }
    let base = dir.parent().unwrap_or(cwd).to_path_buf();
    out.push(Layer {
        table,
        file: Some(file.to_path_buf()),
        base,
        cli,
    });
}

/// The configuration that applies in `cwd`, lowest precedence first: the files from
/// `$CARGO_HOME` and from the root of the file system down to `cwd`, then the `--config`
/// values `cli` (files, absolute or relative to `cwd`, and `KEY=VALUE` lines).
fn layers(cwd: &Path, cli: &[String]) -> Vec<Layer> {
    let mut found: Vec<PathBuf> = cwd
        .ancestors()
        .flat_map(|d| [d.join(".cargo/config.toml"), d.join(".cargo/config")])
        .filter(|f| f.is_file())
        .collect();
    if let Some(home) = cargo_home() {
        for file in [home.join("config.toml"), home.join("config")] {
            if file.is_file() && !found.contains(&file) {
                found.push(file);
            }
        }
    }
    let mut layers = Vec::new();
    for file in found.iter().rev() {
        with_includes(file, cwd, false, &mut layers, 0);
    }
    for value in cli {
        let path = cwd.join(value);
        if path.is_file() {
            with_includes(&path, cwd, true, &mut layers, 0);
        } else if let Ok(table) = value.parse::<toml::Table>() {
            layers.push(Layer {
                table,
                file: None,
                base: cwd.to_path_buf(),
                cli: true,
            });
        }
    }
    layers
}

/// The `[env]` tables of the configuration that applies in `cwd` ([`layers`]), as cargo applies
/// them: a variable the environment already has is kept unless `force = true`; `relative =
/// true` resolves the value against [`Layer::base`].
pub fn env(cwd: &Path, cli: &[String]) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = Vec::new();
    for mut layer in layers(cwd, cli) {
        let Some(toml::Value::Table(vars)) = layer.table.remove("env") else {
            continue;
        };
        let base = layer.base.as_path();
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

/// The value at `keys` of the highest-precedence layer among `layers` that has it, with the
/// layer.
fn lookup<'a>(layers: &'a [Layer], keys: &[&str]) -> Option<(&'a toml::Value, &'a Layer)> {
    layers.iter().rev().find_map(|layer| {
        let mut value = layer.table.get(keys[0])?;
        for k in &keys[1..] {
            value = value.get(k)?;
        }
        Some((value, layer))
    })
}

/// A program path from an environment variable: relative ones (with a slash) against `cwd`.
fn program_from_env(value: OsString, cwd: &Path) -> PathBuf {
    let path = PathBuf::from(value);
    if path.is_relative() && path.components().count() > 1 {
        cwd.join(path)
    } else {
        path
    }
}

/// The rustc wrapper `cargo test` would build through (`RUSTC_WRAPPER`, then `--config`, then
/// `CARGO_BUILD_RUSTC_WRAPPER`, then `build.rustc-wrapper` in the files; an empty value is
/// none), which cargo sfl, as cargo's wrapper itself, runs rustc through. `None` when there
/// is none.
pub fn rustc_wrapper(cwd: &Path, cli: &[String]) -> Option<PathBuf> {
    wrapper_of(&layers(cwd, cli), cwd, &|name| std::env::var_os(name))
}

/// [`rustc_wrapper`] of the configuration `layers` and the environment `var`.
fn wrapper_of(layers: &[Layer], cwd: &Path, var: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(w) = var("RUSTC_WRAPPER") {
        return (!w.is_empty()).then(|| program_from_env(w, cwd));
    }
    let configured = |cli: bool| {
        let layers: Vec<&Layer> = layers.iter().filter(|l| l.cli == cli).collect();
        layers.iter().rev().find_map(|layer| {
            let value = layer.table.get("build")?.get("rustc-wrapper")?.as_str()?;
            Some((value.is_empty(), layer.program(value)))
        })
    };
    if let Some((empty, path)) = configured(true) {
        return (!empty).then_some(path);
    }
    if let Some(w) = var("CARGO_BUILD_RUSTC_WRAPPER") {
        return (!w.is_empty()).then(|| program_from_env(w, cwd));
    }
    configured(false).and_then(|(empty, path)| (!empty).then_some(path))
}

/// A runner's value (a string of words or a list) as a program and its arguments.
fn runner_words(value: &toml::Value, layer: &Layer) -> Option<Vec<OsString>> {
    let words: Vec<String> = match value {
        toml::Value::String(s) => s.split_whitespace().map(str::to_string).collect(),
        toml::Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map(str::to_string))
            .collect::<Option<_>>()?,
        _ => return None,
    };
    let (program, args) = words.split_first()?;
    Some(
        std::iter::once(layer.program(program).into_os_string())
            .chain(args.iter().map(OsString::from))
            .collect(),
    )
}

/// The target runner of the host's test binaries (`target.<triple>.runner`, its
/// `CARGO_TARGET_<TRIPLE>_RUNNER` variable or a `target.<cfg>.runner` that matches), as a
/// program and its arguments, before the test executable: `cargo test` runs every test binary
/// and doctest through it. Empty when none is set. `host` is the host's triple (`rustc -vV`;
/// `None`: asked of rustc when a runner may be configured).
pub fn runner(cwd: &Path, cli: &[String], host: Option<&str>) -> Vec<OsString> {
    let layers = layers(cwd, cli);
    // Most configurations set no runner: they are not resolved (which may run rustc).
    let in_env = std::env::vars_os().any(|(k, _)| {
        k.to_str()
            .is_some_and(|k| k.starts_with("CARGO_TARGET_") && k.ends_with("_RUNNER"))
    });
    let in_layers = layers.iter().any(|l| {
        l.table
            .get("target")
            .and_then(toml::Value::as_table)
            .is_some_and(|t| t.values().any(|v| v.get("runner").is_some()))
    });
    if !(in_env || in_layers) {
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
    let (cli_layers, file_layers): (Vec<Layer>, Vec<Layer>) = layers.into_iter().partition(|l| l.cli);
    let named = |layers: &[Layer]| {
        lookup(layers, &["target", &host, "runner"]).and_then(|(value, layer)| runner_words(value, layer))
    };
    // `--config` wins over the variable, which wins over the files (cargo-config2 reads the
    // variable and the files, but neither `--config` nor `include`).
    if let Some(runner) = named(&cli_layers) {
        return runner;
    }
    let variable = format!("CARGO_TARGET_{}_RUNNER", host.to_uppercase().replace(['-', '.'], "_"));
    if std::env::var_os(&variable).is_none()
        && let Some(runner) = named(&file_layers)
    {
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
    fn included_files_come_before_the_file_that_includes_them() {
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
        std::fs::write(
            ws.path().join(".cargo/config.toml"),
            "include = ['extra.toml']\n[env]\nSFL_T_I = 'main'\n",
        )
        .unwrap();
        std::fs::write(
            ws.path().join(".cargo/extra.toml"),
            "[env]\nSFL_T_I = 'extra'\nSFL_T_J = 'extra'\n\
             [target.x86_64-unknown-linux-gnu]\nrunner = 'tools/r.sh --flag'\n",
        )
        .unwrap();
        let found = files(ws.path(), &[]);
        let at = |name: &str| found.iter().position(|f| f.ends_with(name));
        assert!(at("extra.toml") < at("config.toml"), "{found:?}");
        let env = env(ws.path(), &[]);
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(get("SFL_T_I").as_deref(), Some("main"));
        assert_eq!(get("SFL_T_J").as_deref(), Some("extra"));
        let runner = runner(ws.path(), &[], Some("x86_64-unknown-linux-gnu"));
        assert_eq!(runner, [ws.path().join("tools/r.sh").into_os_string(), "--flag".into()]);
    }

    #[test]
    fn a_relative_wrapper_is_resolved_where_cargo_resolves_it() {
        let ws = tempfile::tempdir().unwrap();
        let member = ws.path().join("m");
        std::fs::create_dir_all(member.join("src")).unwrap();
        std::fs::create_dir_all(ws.path().join(".cargo")).unwrap();
        std::fs::write(
            ws.path().join(".cargo/config.toml"),
            "[build]\nrustc-wrapper = 'tools/w.sh'\n",
        )
        .unwrap();
        let cwd = member.join("src");
        let none = |_: &str| None;
        let layers = layers(&cwd, &[]);
        // A file's path against the directory holding its `.cargo`.
        assert_eq!(wrapper_of(&layers, &cwd, &none), Some(ws.path().join("tools/w.sh")));
        // A variable's against the current directory, and it wins over the file.
        let var = |n: &str| (n == "RUSTC_WRAPPER").then(|| OsString::from("../w.sh"));
        assert_eq!(wrapper_of(&layers, &cwd, &var), Some(cwd.join("../w.sh")));
        // `--config KEY=VALUE` against the current directory; a bare name is left to `PATH`.
        let cli = layers_with(&cwd, "build.rustc-wrapper='x/w.sh'");
        assert_eq!(wrapper_of(&cli, &cwd, &none), Some(cwd.join("x/w.sh")));
        let cli = layers_with(&cwd, "build.rustc-wrapper='sccache'");
        assert_eq!(wrapper_of(&cli, &cwd, &none), Some(PathBuf::from("sccache")));
        // An empty value means none.
        let cli = layers_with(&cwd, "build.rustc-wrapper=''");
        assert_eq!(wrapper_of(&cli, &cwd, &none), None);
    }

    fn layers_with(cwd: &Path, value: &str) -> Vec<Layer> {
        layers(cwd, &[value.to_string()])
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
